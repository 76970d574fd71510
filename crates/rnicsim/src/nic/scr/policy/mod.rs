//! SCR policies (paper §5, Appendix A.6–A.9): what runs on the NIC's cores for each event.
//!
//! A policy is a small trait, one file each, shaped like the programmable congestion control
//! vendors expose on the NIC (NVIDIA DOCA PCC on BlueField-3's DPA): it is handed one (possibly
//! coalesced) event of one flow together with that flow's fixed-size context, and answers with
//! control actions. The context may not exceed [`FLOW_CONTEXT_BYTES`] (DOCA PCC's per-flow
//! context); that is checked when the policy is built and reported in the run's summary.
//! Integer arithmetic only, as on the DPA (no floating-point unit).
//!
//! Shipped: [`passive`] (collect and measure, no control: the default NIC scheduler decides),
//! [`static_share`] (1/n of the line rate each, with a floor), [`water_filling`] (max-min
//! fair progressive filling with §5.1's join handling), [`swift`] (delay-based congestion
//! control, A.6), [`multipath`] (per-path RTT probing and path selection, A.7),
//! [`receiver_driven`] (credits and backpressure from the receiver, A.8); [`external`] hands
//! the decisions to an object from outside the crate (a Python class).

pub mod external;
pub mod multipath;
pub mod passive;
pub mod receiver_driven;
pub mod static_share;
pub mod swift;
pub mod water_filling;

use super::event::{Kind, ScrEvent};
use crate::units::{BitsPerSec, Time};

/// Bytes of per-flow context a policy may keep (DOCA PCC's fixed per-flow context).
pub const FLOW_CONTEXT_BYTES: usize = 48;

/// A control action (§4.2: the dequeue rate is the knob; §4.3.1: probes, paths, signals).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Action {
    /// Set flow's dequeue rate in the QP scheduler (`u64::MAX`: no limit).
    SetRate { flow: u32, bps: u64 },
    /// Have the flow's next packet answered at once (an RTT probe).
    ProbeRtt { flow: u32 },
    /// Move the flow to another UDP source port (another ECMP path).
    SetSport { flow: u32, sport: u16 },
    /// Send a path probe to the flow's peer on UDP source port `sport` (A.7); its answer comes
    /// back as an RTT event whose value is the port.
    ProbePath { flow: u32, sport: u16 },
    /// Send an out-of-band signal to the flow's peer (128-byte UDP packets by default).
    Signal { flow: u32, value: u32, bytes: u32 },
    /// Hand the policy a `Kind::Timer` event of this flow `after` the decision (a timer on the
    /// cores, for deadlines no packet brings: a probe's timeout when the flow's ACKs stopped).
    Wake { flow: u32, after: Time },
}

impl Action {
    /// The queue pair (flow) it is for.
    pub fn flow(&self) -> u32 {
        match *self {
            Action::SetRate { flow, .. } | Action::ProbeRtt { flow } | Action::SetSport { flow, .. } | Action::ProbePath { flow, .. } | Action::Signal { flow, .. } | Action::Wake { flow, .. } => flow,
        }
    }
}

/// What a policy sees of its NIC, and where it writes its actions.
pub struct Env<'a> {
    /// When the policy runs (the event's thread picked it up).
    pub now: Time,
    pub line_rate: BitsPerSec,
    /// How long after the decision a rate set takes effect (the NIC's rate-install latency).
    pub install_latency: Time,
    /// When a decision made in this call takes effect: the thread's processing of this event
    /// (its cycles at the core clock) plus the install latency.
    pub in_force: Time,
    pub actions: &'a mut Vec<Action>,
}

/// An `Env` for policy unit tests: 100 Gbps, decisions in force at once.
#[cfg(test)]
pub(crate) fn test_env(now: Time, actions: &mut Vec<Action>) -> Env<'_> {
    Env { now, line_rate: BitsPerSec::gbps(100), install_latency: Time::ZERO, in_force: now, actions }
}

/// One flow as the policy's node-level work sees it.
#[derive(Clone, Copy, Debug)]
pub struct FlowEntry<F> {
    /// The queue pair.
    pub flow: u32,
    /// Whether it has left (its queue pair closed); a left flow's slot is never handed out again.
    pub left: bool,
    pub ctx: F,
}

/// What the policy concluded about a flow after an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Still adjusting: every event is worth a full run.
    Adjusting,
    /// Its rate is stable: a *threshold* queue may park events until enough bytes accumulate.
    Stable,
}

/// A policy: per-flow work on events, node-level work on joins and leaves.
pub trait Policy {
    /// The per-flow context (at most [`FLOW_CONTEXT_BYTES`]).
    type Flow: Copy + Default;
    /// Its name in outputs.
    fn name(&self) -> &'static str;
    /// Whether events of `kind` are delivered to it (others are not collected).
    fn subscribes(&self, kind: Kind) -> bool;
    /// Core cycles a full run on `ev` costs.
    fn cycles(&self, ev: &ScrEvent) -> u32;
    /// A flow seen for the first time (new-flow detection); `flows` holds every flow of this
    /// NIC, the new one last. Returns the cycles this node-level work costs.
    fn on_join(&mut self, _flows: &mut [FlowEntry<Self::Flow>], _env: &mut Env) -> u32 {
        0
    }
    /// Flow `slot` left; reclaim what it held. Returns the cycles it costs.
    fn on_leave(&mut self, _slot: usize, _flows: &mut [FlowEntry<Self::Flow>], _env: &mut Env) -> u32 {
        0
    }
    /// One event of one flow.
    fn on_event(&mut self, ev: &ScrEvent, flow: &mut Self::Flow, env: &mut Env) -> Verdict;
    /// A node-level event (a telemetry sample: `Kind::Pcie`, `Kind::Port`) the policy
    /// subscribes to, with every flow at hand; it costs [`Policy::cycles`] of the event.
    fn on_node_event(&mut self, _ev: &ScrEvent, _flows: &mut [FlowEntry<Self::Flow>], _env: &mut Env) {}
    /// Named figures of the policy's state at the end of a run, for `summary.json`
    /// (`scr/per_nic/<host>/policy/<name>`).
    fn report(&self, _flows: &[FlowEntry<Self::Flow>]) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
}

/// Mbps from bps, for policies that keep rates in 32-bit integers (100 Gbps = 100,000).
pub fn mbps(r: BitsPerSec) -> u32 {
    (r.0 / 1_000_000).min(u32::MAX as u64) as u32
}

/// Bits per second from Mbps, at least 1 Mbps: a rate rounded or halved down to nothing is the
/// least a policy sets, since a dequeue rate of 0 means no limit at all.
pub fn bps(mbps: u32) -> u64 {
    mbps.max(1) as u64 * 1_000_000
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_rate_of_nothing_is_the_least_rate_not_no_limit() {
        // Water filling halving a 1 Mbps flow on a join (a min_rate under 1 Mbps) asked for
        // 0 bps, which lifts the dequeue rate altogether.
        assert_eq!((super::bps(0), super::bps(1), super::bps(100_000)), (1_000_000, 1_000_000, 100_000_000_000));
    }
}
