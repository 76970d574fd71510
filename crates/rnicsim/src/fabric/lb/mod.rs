//! Load balancers: how a switch picks the egress port of a packet that has more than one way on.
//!
//! A policy implements [`LoadBalancer`]. The switch ([`crate::fabric::switch`]) calls it for every
//! packet with more than one shortest-path candidate, and hands it an [`LbContext`]: the time, the
//! switch, the ingress port, the candidates, and a view of every port of the switch (queue
//! lengths, link state, whether it faces a switch). A policy may answer with any egress port of
//! the switch, not only a candidate (deflection), may keep per-flow state, and may ask for a
//! timer ([`LoadBalancer::next_timer`]). Policies are named in a scenario by [`LbKind`] and built by
//! [`LbKind::build`]; a program using the library may install its own with
//! [`crate::world::World::set_load_balancer`].
//!
//! Shipped: [`ecmp`] (5-tuple hash with a per-switch seed), [`spray`] (a random candidate per
//! packet), [`drill`] (DRILL, the power of two choices, and round-robin spraying), [`flowlet`]
//! (LetFlow: a new random candidate after an idle gap), [`conga`] (CONGA: flowlets on the
//! least congested path, with congestion carried in packets and fed back between switches) and
//! [`conweave`] (ConWeave: rerouting at the source ToR when a path is slow, and reordering at
//! the destination ToR).
//!
//! Policies that carry state from switch to switch put a header ([`LbTag`]) on packets and are
//! asked through [`LoadBalancer::decide`], which may also hold a packet back or consume it; they
//! may ask the switch to send control packets of their own and to release held packets
//! ([`LbAction`]). Such policies name paths by labels ([`path_labels`], [`follow_label`]).

pub mod conga;
pub mod conweave;
pub mod drill;
pub mod ecmp;
pub mod flowlet;
pub mod spray;

pub use conga::{Conga, CongaSpec};
pub use conweave::{ConWeave, ConWeaveSpec};
pub use drill::{Drill, RoundRobin};
pub use ecmp::{Ecmp, EcmpHash, EcmpHasher};
pub use flowlet::Flowlet;
pub use spray::Spray;

use crate::fabric::switch::FabricView;
use crate::sim::rng::{self, mix64};
use crate::units::Time;
use crate::wire::packet::{LbTag, Packet};
use serde::{Deserialize, Serialize};

/// What a policy may look at besides the packet.
pub struct LbContext<'a> {
    /// The switch's node id.
    pub switch: u32,
    /// The port the packet came in by (global port id).
    pub ingress: u32,
    /// Egress ports (global ids) on a shortest path to the packet's destination; never empty.
    pub candidates: &'a [u32],
    /// The routes' candidates before local failover took out ports whose links are down
    /// (`candidates` itself when none is): path labels count these, so that a label keeps
    /// naming one port through a failure.
    pub routed: &'a [u32],
    pub(crate) first_port: u32,
    pub(crate) port_count: u32,
    pub(crate) view: &'a FabricView<'a>,
}

impl LbContext<'_> {
    /// The time now.
    #[inline]
    pub fn now(&self) -> Time {
        self.view.now
    }
    /// Every egress port of the switch (global ids).
    pub fn ports(&self) -> std::ops::Range<u32> {
        self.first_port..self.first_port + self.port_count
    }
    /// Bytes queued at port `p` of this switch, all classes.
    pub fn queued(&self, p: u32) -> u64 {
        self.view.ports[p as usize].total_bytes()
    }
    /// Whether port `p`'s link is up.
    pub fn is_up(&self, p: u32) -> bool {
        self.view.links[p as usize].up
    }
    /// Whether port `p` leads to another switch (a host does not forward a deflected packet).
    pub fn faces_switch(&self, p: u32) -> bool {
        let ports = self.view.ports;
        !self.view.is_host[ports[ports[p as usize].peer as usize].node as usize]
    }
}

pub trait LoadBalancer {
    /// The egress port (a global port id of this switch) for `pkt`. Usually one of
    /// `ctx.candidates`; any other port of the switch deflects the packet off its shortest path.
    fn choose(&mut self, pkt: &Packet, ctx: &LbContext) -> u32;
    /// When the policy wants [`LoadBalancer::on_timer`] called next (probes, table ageing).
    /// Asked after every `choose` and `on_timer` of a policy that [`LoadBalancer::uses_timer`].
    fn next_timer(&self) -> Option<Time> {
        None
    }
    fn on_timer(&mut self, _now: Time) {}
    /// Whether the switch should give this policy a timer at all.
    fn uses_timer(&self) -> bool {
        false
    }
    /// Whether the policy is asked also when a packet has a single candidate (to deflect it);
    /// otherwise the switch takes the only candidate without asking.
    fn sees_single_paths(&self) -> bool {
        false
    }
    /// Whether the policy reads and writes packets' load-balancing headers; it is then asked
    /// through [`LoadBalancer::decide`], and for its [`LoadBalancer::actions`] after each
    /// decision and timer.
    fn uses_tags(&self) -> bool {
        false
    }
    /// [`LoadBalancer::choose`] with the packet's load-balancing header, which the policy may
    /// put on, change or take off; it may also keep the packet back or consume it.
    fn decide(&mut self, pkt: &Packet, _tag: &mut LbTag, ctx: &LbContext) -> LbDecision {
        LbDecision::Port(self.choose(pkt, ctx))
    }
    /// Moves what the policy asks the switch to do besides forwarding into `out`.
    fn actions(&mut self, _out: &mut Vec<LbAction>) {}
    /// What the policy has done so far, for `summary.json`.
    fn stats(&self) -> LbStats {
        LbStats::default()
    }
}

/// A tag-carrying policy's verdict on a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LbDecision {
    /// Send it out of this port.
    Port(u32),
    /// Keep it, to the port, until the policy releases `key` ([`LbAction::Release`]).
    Hold { key: u64, port: u32 },
    /// It was for this switch (a control packet of the policy): free it.
    Consume,
}

/// What a policy asks of its switch besides forwarding the packet in hand.
#[derive(Clone, Copy, Debug)]
pub enum LbAction {
    /// Send a packet the switch makes (a control packet) to host node `pkt.dst`, as if it had
    /// come in by global port `ingress`; the switch fills in `pkt.dst_host`.
    Emit { pkt: Packet, tag: LbTag, ingress: u32 },
    /// Forward every packet held under `key`, in the order they were held.
    Release { key: u64 },
}

/// Counters of the tag-carrying policies, summed over switches in `summary.json`'s
/// `load_balancing`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LbStats {
    /// ConWeave's path choices for an existing flow at an epoch's expiry or a reply timeout, counted
    /// as its ns-3 fork counts reroutes (`m_nReRoute`): the choice may fall on the path in use.
    pub reroutes: u64,
    /// Control packets the switches made (ConWeave's RTT_REPLY, CLEAR and NOTIFY).
    pub control_packets: u64,
    /// Packets held back at a destination switch to be put in order (ConWeave's reorder queues).
    pub held_packets: u64,
    /// Reorder queues released by their timer rather than by the old path's last packet.
    pub released_by_timeout: u64,
    pub released_by_tail: u64,
}

impl std::ops::AddAssign for LbStats {
    fn add_assign(&mut self, o: LbStats) {
        self.reroutes += o.reroutes;
        self.control_packets += o.control_packets;
        self.held_packets += o.held_packets;
        self.released_by_timeout += o.released_by_timeout;
        self.released_by_tail += o.released_by_tail;
    }
}

/// The paths from switch `ctx.switch` to host `dst_host`'s switch, as labels: a switch with `c`
/// candidates takes candidate `label % c` and passes `label / c` on, so the labels `0..n`, with
/// `n` the product of the candidate counts along the way, name the paths of a symmetric Clos
/// one to one. Returns the destination switch, `n` (at most 65,536) and the round trip of the
/// links' propagation delays along the first path.
pub fn path_labels(ctx: &LbContext, dst_host: u32) -> Option<(u32, u32, Time)> {
    let ports = ctx.view.ports;
    let mut node = ctx.switch;
    let (mut n, mut delay) = (1u64, Time::ZERO);
    for _ in 0..16 {
        let c = ctx.view.routes.candidates(node, dst_host);
        let first = c.first()?;
        let next = ports[ports[first as usize].peer as usize].node;
        if ctx.view.is_host[next as usize] {
            return Some((node, n as u32, Time(2 * delay.0)));
        }
        n = (n * c.len() as u64).min(1 << 16);
        delay += ctx.view.links[first as usize].delay;
        node = next;
    }
    None
}

/// The port a path label names at this switch. Labels count the routes' candidates
/// (`ctx.routed`), as [`path_labels`] does, so a
/// label names the same port while local failover takes a failed one out of `ctx.candidates`
/// (counted among those, the labels would shift and every flow would move).
#[inline]
pub fn label_port(ctx: &LbContext, rest: u32) -> u32 {
    ctx.routed[(rest % ctx.routed.len() as u32) as usize]
}

/// The candidate a path label takes at this switch ([`label_port`]; another candidate, by the
/// label, when local failover has taken that port out); `rest` becomes what the next switch
/// decodes.
#[inline]
pub fn follow_label(ctx: &LbContext, rest: &mut u32) -> u32 {
    let out = label_port(ctx, *rest);
    let out = if ctx.routed.len() == ctx.candidates.len() || ctx.candidates.contains(&out) { out } else { ctx.candidates[(*rest % ctx.candidates.len() as u32) as usize] };
    *rest /= ctx.routed.len() as u32;
    out
}

/// The scenario's name for a policy (`switch.load_balancer`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LbKind {
    #[default]
    Ecmp,
    /// A random candidate per packet.
    Spray,
    /// The candidates in turn, per destination.
    RoundRobin,
    /// DRILL(d, m) with `switch.drill`'s parameters.
    Drill,
    /// The shorter queue of two random candidates (DRILL(2, 0)).
    PowerOfTwo,
    Flowlet,
    /// CONGA with `switch.conga`'s parameters and `switch.flowlet_gap`.
    Conga,
    /// ConWeave with `switch.conweave`'s parameters.
    #[serde(rename = "conweave")]
    ConWeave,
}

/// DRILL's parameters (`[switch.drill]`); a key left out keeps its default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DrillSpec {
    /// Random candidates looked at per packet (d).
    pub samples: u32,
    /// Least-loaded ports remembered from the previous decision (m).
    pub memory: u32,
}

/// DRILL(2, 1), the configuration DRILL's paper recommends.
impl Default for DrillSpec {
    fn default() -> Self {
        DrillSpec { samples: 2, memory: 1 }
    }
}

impl LbKind {
    /// The policy for switch node `node`, with its own seed or random stream.
    /// `ecmp` is how it hashes flows onto candidates (ECMP itself, and CONGA's and ConWeave's
    /// fallback).
    #[allow(clippy::too_many_arguments)]
    pub fn build(self, seed: u64, node: u32, ecmp: EcmpHash, flowlet_gap: Time, drill: DrillSpec, conga: CongaSpec, conweave: ConWeaveSpec) -> LbPolicy {
        let stream = |name: &str| rng::stream(seed, name, node as u64);
        let hasher = |name: &str| EcmpHasher { kind: ecmp, seed: rng::stream_seed(seed, name, node as u64) };
        match self {
            LbKind::Ecmp => LbPolicy::Ecmp(Ecmp { hasher: hasher("ecmp") }),
            LbKind::Spray => LbPolicy::Spray(Spray { rng: stream("spray") }),
            LbKind::RoundRobin => LbPolicy::RoundRobin(RoundRobin::new()),
            LbKind::Drill => LbPolicy::Drill(Drill::new(drill.samples as usize, drill.memory as usize, stream("drill"))),
            LbKind::PowerOfTwo => LbPolicy::Drill(Drill::new(2, 0, stream("power_of_two"))),
            LbKind::Flowlet => LbPolicy::Flowlet(Flowlet::new(flowlet_gap, stream("flowlet"))),
            LbKind::Conga => LbPolicy::Conga(Box::new(Conga::new(conga, flowlet_gap, stream("conga"), hasher("conga-ecmp")))),
            LbKind::ConWeave => LbPolicy::ConWeave(Box::new(ConWeave::new(conweave, stream("conweave"), hasher("conweave-ecmp")))),
        }
    }
}

/// The policies a switch can run: the shipped ones without dynamic dispatch, or one installed
/// through the library API.
pub enum LbPolicy {
    Ecmp(Ecmp),
    Spray(Spray),
    RoundRobin(RoundRobin),
    Drill(Drill),
    Flowlet(Flowlet),
    Conga(Box<Conga>),
    ConWeave(Box<ConWeave>),
    Custom(Box<dyn LoadBalancer + Send>),
}

impl LoadBalancer for LbPolicy {
    #[inline]
    fn choose(&mut self, pkt: &Packet, ctx: &LbContext) -> u32 {
        match self {
            LbPolicy::Ecmp(p) => p.choose(pkt, ctx),
            LbPolicy::Spray(p) => p.choose(pkt, ctx),
            LbPolicy::RoundRobin(p) => p.choose(pkt, ctx),
            LbPolicy::Drill(p) => p.choose(pkt, ctx),
            LbPolicy::Flowlet(p) => p.choose(pkt, ctx),
            LbPolicy::Conga(p) => p.choose(pkt, ctx),
            LbPolicy::ConWeave(p) => p.choose(pkt, ctx),
            LbPolicy::Custom(p) => p.choose(pkt, ctx),
        }
    }
    #[inline]
    fn decide(&mut self, pkt: &Packet, tag: &mut LbTag, ctx: &LbContext) -> LbDecision {
        match self {
            LbPolicy::Conga(p) => p.decide(pkt, tag, ctx),
            LbPolicy::ConWeave(p) => p.decide(pkt, tag, ctx),
            LbPolicy::Custom(p) => p.decide(pkt, tag, ctx),
            _ => LbDecision::Port(self.choose(pkt, ctx)),
        }
    }
    #[inline]
    fn uses_tags(&self) -> bool {
        match self {
            LbPolicy::Conga(_) | LbPolicy::ConWeave(_) => true,
            LbPolicy::Custom(p) => p.uses_tags(),
            _ => false,
        }
    }
    fn actions(&mut self, out: &mut Vec<LbAction>) {
        match self {
            LbPolicy::ConWeave(p) => p.actions(out),
            LbPolicy::Custom(p) => p.actions(out),
            _ => {}
        }
    }
    fn stats(&self) -> LbStats {
        match self {
            LbPolicy::ConWeave(p) => p.stats(),
            LbPolicy::Custom(p) => p.stats(),
            _ => LbStats::default(),
        }
    }
    fn next_timer(&self) -> Option<Time> {
        match self {
            LbPolicy::ConWeave(p) => p.next_timer(),
            LbPolicy::Custom(p) => p.next_timer(),
            _ => None,
        }
    }
    fn on_timer(&mut self, now: Time) {
        match self {
            LbPolicy::ConWeave(p) => p.on_timer(now),
            LbPolicy::Custom(p) => p.on_timer(now),
            _ => {}
        }
    }
    fn uses_timer(&self) -> bool {
        match self {
            LbPolicy::ConWeave(_) => true,
            LbPolicy::Custom(p) => p.uses_timer(),
            _ => false,
        }
    }
    #[inline]
    fn sees_single_paths(&self) -> bool {
        match self {
            LbPolicy::Conga(_) | LbPolicy::ConWeave(_) => true,
            LbPolicy::Custom(p) => p.sees_single_paths(),
            _ => false,
        }
    }
}

/// The 5-tuple hash a source stamps on its packets (IPv4 addresses are node ids, protocol UDP).
pub fn flow_hash(src: u32, dst: u32, sport: u16, dport: u16) -> u32 {
    let tuple = (src as u64) << 32 | dst as u64;
    let ports = (sport as u64) << 16 | dport as u64 | 17 << 32;
    (mix64(mix64(tuple) ^ ports) >> 32) as u32
}
