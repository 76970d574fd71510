//! StaR: stateless RDMA connections (StaR §III).
//!
//! A StaR connection has a stateful side and a stateless side. The stateless side's NIC keeps
//! nothing about the connection: it acts only on what arriving packets carry
//! ([`stateless::react`]), and the little the host needs (the WQEs it posted and their
//! timeouts) lives in the host library ([`library::StarLib`], host memory, §III-C2). The
//! stateful side keeps both sides' transmission state ([`conn::StarConn`]): it runs the
//! stateless side's WQEs (which arrive as WQEPs) as well as its own, moving data with RD/RDA
//! (towards the stateless side) and GD/GDA (from it), and tells the stateless side of
//! completions with CQEPs (§III-C3, §III-C4). Every packet the stateful side sends towards a
//! stateless peer passes its security module ([`whitelist::Whitelist`], §III-D).
//!
//! Roles are chosen per connection at setup (§III-C1): explicitly, or by auto-negotiation on the
//! connections each NIC holds; the stateless side then migrates the connection's initial state
//! to the stateful side in a WQEP with the M bit, acknowledged by an EA.
//!
//! `world/star.rs` wires this to the event loop, the ports, PCIe and the applications.

pub mod conn;
pub mod library;
pub mod stateless;
pub mod whitelist;

use crate::units::Time;
use serde::{Deserialize, Serialize};

/// Handles of StaR connections carry this bit, so the verbs calls (`post_send`, `post_recv`,
/// `destroy_qp`) tell them from RoCE queue pairs.
pub const STAR_HANDLE: u32 = 1 << 31;

/// `[nic.star]`: the StaR stack's timers and negotiation (defaults without the table).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StarSpec {
    /// The stateless side's library re-posts a WQEP not acknowledged (EA) within this.
    #[serde(default = "default_wqep_timeout")]
    pub wqep_timeout: Time,
    /// Re-posts before the library completes the WQE with an error.
    #[serde(default = "default_retries")]
    pub wqep_retries: u32,
    /// The stateful side resends an RD, GD or CQEP not acknowledged within this.
    #[serde(default = "default_rto")]
    pub rto: Time,
    /// Resends of one packet before its operation fails (`RetryExceeded`).
    #[serde(default = "default_retries")]
    pub retry_count: u32,
    /// Chunks (RDs and GDs) a connection's stateful side keeps unacknowledged, in bytes.
    #[serde(default = "default_window")]
    pub window: crate::units::Bytes,
    /// Auto-negotiation: once either side holds at least this many stateful connections, the
    /// side with fewer becomes the new connection's stateful side (below it, a normal RDMA
    /// connection is made).
    #[serde(default = "default_threshold")]
    pub negotiate_threshold: u32,
    /// The security check on the stateful side (§III-D); off only to measure its cost (Fig. 12).
    #[serde(default = "default_true")]
    pub security: bool,
}

fn default_wqep_timeout() -> Time {
    Time::from_us(1000)
}
fn default_rto() -> Time {
    Time::from_us(1000)
}
fn default_retries() -> u32 {
    7
}
fn default_window() -> crate::units::Bytes {
    crate::units::Bytes(64 * 1024)
}
fn default_threshold() -> u32 {
    200
}
fn default_true() -> bool {
    true
}

impl StarSpec {
    /// How long the library waits for a confirmed send-queue WQE to complete before probing
    /// the stateful side with its WQEP again: that side's whole resend budget for one packet,
    /// `rto × (retry_count + 1)`, after which it has either delivered or given up.
    pub fn probe_after(&self) -> Time {
        Time(self.rto.0.saturating_mul(self.retry_count as u64 + 1))
    }
}

impl Default for StarSpec {
    fn default() -> Self {
        toml::from_str("").expect("every [nic.star] key has a default")
    }
}

impl StarSpec {
    /// Keys whose values cannot work, with why.
    pub fn check(&self) -> Vec<(&'static str, String)> {
        let mut bad = Vec::new();
        if self.wqep_timeout == Time::ZERO {
            bad.push(("wqep_timeout", "must be positive".to_string()));
        }
        if self.window.0 == 0 {
            bad.push(("window", "must hold at least one packet".to_string()));
        }
        if self.rto == Time::ZERO {
            bad.push(("rto", "must be positive".to_string()));
        }
        bad
    }
}

/// Which side of a new connection keeps no state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StarRole {
    /// The first node named is stateless (explicit mode, the flag at QP creation).
    FirstStateless,
    /// The second node named is stateless.
    SecondStateless,
    /// The NICs negotiate (§III-C1).
    Auto,
}

/// Counters of one NIC's StaR stack.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StarCounters {
    /// StaR packets sent and received, by the side that handled them.
    pub stateless_rx: u64,
    pub stateless_tx: u64,
    pub stateful_rx: u64,
    pub stateful_tx: u64,
    /// Packets the security module checked and dropped (no whitelist rule allows them).
    pub checked: u64,
    pub refused: u64,
    /// Packets the stateful side sent again after its timeout, and WQEPs the library re-posted.
    pub resent: u64,
    pub wqep_reposts: u64,
    /// Packets that arrived for no connection or of a type the side does not take.
    pub dropped: u64,
    /// Completions the library discarded as repeats (a CQEP resent after its EA was lost).
    pub duplicate_cqes: u64,
}

impl StarCounters {
    pub fn add(&mut self, o: &StarCounters) {
        self.stateless_rx += o.stateless_rx;
        self.stateless_tx += o.stateless_tx;
        self.stateful_rx += o.stateful_rx;
        self.stateful_tx += o.stateful_tx;
        self.checked += o.checked;
        self.refused += o.refused;
        self.resent += o.resent;
        self.wqep_reposts += o.wqep_reposts;
        self.dropped += o.dropped;
        self.duplicate_cqes += o.duplicate_cqes;
    }
}

/// One NIC's StaR stack: the send event queue (packets ready at a time, §IV-B2), the security
/// registry table, and counters. The per-connection state of the connections it is stateful
/// for is in [`StarEndpoints`] (and counted in `stateful`); for the connections it is stateless
/// for, it has none.
#[derive(Clone, Debug, Default)]
pub struct NicStar {
    pub tx: crate::nic::state_cache::Held,
    pub whitelist: whitelist::Whitelist,
    pub counters: StarCounters,
    /// Connections this NIC keeps state for as their stateful side.
    pub stateful: u32,
    pub peak_stateful: u32,
    /// Connections this NIC serves as their stateless side (their state is elsewhere).
    pub stateless: u32,
    /// The security module is removed from this NIC (to measure its cost, StaR Fig. 12).
    pub unchecked: bool,
}

/// One end of a StaR connection.
#[derive(Clone, Debug)]
pub enum Endpoint {
    /// The stateful side: state on its NIC.
    Stateful(conn::StarConn),
    /// The stateless side: its library, in host memory.
    Stateless(library::StarLib),
    Closed,
}

/// Every StaR connection end of the world, by handle (without [`STAR_HANDLE`]).
#[derive(Clone, Debug, Default)]
pub struct StarEndpoints {
    pub eps: Vec<Endpoint>,
}

impl StarEndpoints {
    pub fn conn_mut(&mut self, ep: u32) -> Option<&mut conn::StarConn> {
        match self.eps.get_mut(ep as usize) {
            Some(Endpoint::Stateful(c)) => Some(c),
            _ => None,
        }
    }

    pub fn lib_mut(&mut self, ep: u32) -> Option<&mut library::StarLib> {
        match self.eps.get_mut(ep as usize) {
            Some(Endpoint::Stateless(l)) => Some(l),
            _ => None,
        }
    }

    /// Connection ends with work under way: a stateless end's posted sends (its receives may
    /// wait for ever, as an RC receive queue's do), a stateful end's unfinished operations or
    /// packets not yet acknowledged. The stall detector counts them as it counts queue pairs.
    pub fn waiting(&self) -> usize {
        self.eps
            .iter()
            .filter(|e| match e {
                Endpoint::Stateless(l) => !l.failed && l.outstanding_in(false) > 0,
                Endpoint::Stateful(c) => !c.unacked.is_empty() || c.ops.iter().any(|o| !o.finished),
                Endpoint::Closed => false,
            })
            .count()
    }
}

/// One NIC's StaR figures in the summary.
#[derive(Clone, Debug, Serialize)]
pub struct NicStarSummary {
    pub name: String,
    /// Connections it is stateful for (now and at most), and stateless for.
    pub stateful: u32,
    pub peak_stateful: u32,
    pub stateless: u32,
    /// Rules in its security registry table at the end; absent on a NIC whose security module
    /// is removed (`nic.star.security = false`: there is no table to check against).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub whitelist_rules: Option<usize>,
    #[serde(flatten)]
    pub counters: StarCounters,
}

/// `summary.json` `star`: totals and each NIC that took part in a StaR connection.
#[derive(Clone, Debug, Serialize)]
pub struct StarSummary {
    pub total: StarCounters,
    pub per_nic: Vec<NicStarSummary>,
}

impl StarSummary {
    /// `None` when no StaR connection was ever made. `security`: the fabric's
    /// `nic.star.security` (a NIC may also have had its module removed on its own).
    pub fn of(nics: &[crate::nic::Nic], security: bool) -> Option<StarSummary> {
        let mut total = StarCounters::default();
        let mut per_nic = Vec::new();
        for n in nics {
            let s = &n.star;
            if s.peak_stateful == 0 && s.stateless == 0 && s.counters == StarCounters::default() {
                continue;
            }
            total.add(&s.counters);
            per_nic.push(NicStarSummary { name: format!("host {}", n.node), stateful: s.stateful, peak_stateful: s.peak_stateful, stateless: s.stateless, whitelist_rules: (security && !s.unchecked).then(|| s.whitelist.rules()), counters: s.counters });
        }
        (!per_nic.is_empty()).then_some(StarSummary { total, per_nic })
    }
}
