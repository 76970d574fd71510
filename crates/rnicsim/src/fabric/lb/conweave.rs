//! ConWeave (Song et al., SIGCOMM 2023, §4), as its authors' ns-3 fork runs it: the source ToR
//! moves a flow to another path when the current one is slow, and the destination ToR puts
//! the packets of the two paths back in order before they reach the host.
//!
//! - **Source ToR** (a data packet from a host, §4.2). A flow's packets form epochs. A new
//!   epoch starts when the flow was idle longer than `tx_expiry` (it may take a new path then),
//!   or when the previous reroute is settled. Its first packet is an RTT_REQUEST (`init`). If
//!   no RTT_REPLY has come back within the ToR-to-ToR base round trip plus
//!   `reply_timeout_extra`, the path is judged slow. The next packet is then the epoch's TAIL,
//!   the last one on the old path. The flow moves to a new path (phase 1, REROUTED) if one of
//!   two sampled paths is not paused. A path is paused for `path_pause` after a NOTIFY says an
//!   ECN-marked packet crossed it. A CLEAR for the TAIL, or a timely RTT_REPLY, settles the
//!   epoch.
//! - **Destination ToR** (§4.3). It answers RTT_REQUESTs and TAILs, and NOTIFYs the source of
//!   ECN-marked packets. A rerouted packet that arrives before its epoch's TAIL is held in the
//!   flow's reorder queue. The queue is released when the TAIL arrives, or at the time the
//!   TAIL is expected: the old path's arrival time plus the gap at the source between its
//!   first packet and the TAIL, plus `extra_voq_flush`. With no sample of the old path, the
//!   wait is `default_voq_waiting`. A packet of an older epoch passes straight through.
//! - Paths are labels ([`super::path_labels`]). Switches between the ToRs follow the label.
//!   Control packets (64 bytes, class 0) and ACKs go by the flow hash. Flows between hosts of
//!   one ToR are not balanced.
//!
//! The defaults are the fork's for a two-tier leaf-spine: base round trip from the links'
//! delays, 4 µs extra reply deadline, 16 µs path pause, 300 µs expiry, 16 µs extra flush
//! time, 200 µs default wait. A `config.txt` sets them with its CONWEAVE_* keys.

use super::{follow_label, path_labels, LbAction, LbContext, LbDecision, LbStats, LoadBalancer};
use crate::sim::rng::{mix64, Rng};
use crate::units::Time;
use crate::wire::packet::{ConWeaveHeader, ConWeaveKind, LbTag, Packet, PacketKind, ECN_CE, ECN_NOT_ECT, TTL};
use rand::Rng as _;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};

/// ConWeave's parameters (`[switch.conweave]`); a key left out keeps its default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConWeaveSpec {
    /// A flow idle this long starts a new epoch (and may take a new path).
    pub tx_expiry: Time,
    /// Added to the base round trip to get the RTT_REPLY deadline.
    pub reply_timeout_extra: Time,
    /// How long a path stays out of the choice after a NOTIFY.
    pub path_pause: Time,
    /// Added to the predicted TAIL arrival before a reorder queue is released anyway.
    pub extra_voq_flush: Time,
    /// The wait of a reorder queue when the old path's timing is unknown.
    pub default_voq_waiting: Time,
}

impl Default for ConWeaveSpec {
    fn default() -> Self {
        ConWeaveSpec {
            tx_expiry: Time::from_us(300),
            reply_timeout_extra: Time::from_us(4),
            path_pause: Time::from_us(16),
            extra_voq_flush: Time::from_us(16),
            default_voq_waiting: Time::from_us(200),
        }
    }
}

impl ConWeaveSpec {
    /// The parameters that cannot work, with why: an epoch that ends at once makes every
    /// packet a reroute with nothing to reorder against (4,415 reroutes and 2,815 resends
    /// where 300 µs made 7 and none).
    pub fn check(&self) -> Vec<(&'static str, String)> {
        let mut bad = Vec::new();
        if self.tx_expiry == Time::ZERO {
            bad.push(("tx_expiry", "must be positive: a flow idle this long starts a new epoch, and 0 starts one at every packet".into()));
        }
        bad
    }
}

/// Wire bytes of a control packet.
const CONTROL_BYTES: u32 = 64;

/// A flow at its source ToR.
#[derive(Clone, Copy, Debug)]
struct TxFlow {
    active: Time,
    stabilized: bool,
    /// The RTT_REPLY deadline (`Time::MAX`: none pending).
    reply_by: Time,
    epoch: u32,
    phase: u8,
    path: u32,
    tail_at: Time,
}

/// A flow at its destination ToR.
#[derive(Clone, Copy, Debug)]
struct RxFlow {
    epoch: u32,
    phase: u8,
    /// Send and arrival time of the latest phase-0 packet of the epoch.
    phase0_tx: Time,
    phase0_rx: Time,
    /// Whether a phase-0 packet of the epoch has arrived.
    phase0_seen: bool,
    tail_at: Time,
    /// Whether rerouted packets are being held.
    reordering: bool,
    /// When the reorder queue is released (soon after the TAIL, once it came).
    flush_at: Time,
    tail_came: bool,
}

impl Default for RxFlow {
    fn default() -> Self {
        RxFlow { epoch: 1, phase: 0, phase0_tx: Time::ZERO, phase0_rx: Time::ZERO, phase0_seen: false, tail_at: Time::ZERO, reordering: false, flush_at: Time::MAX, tail_came: false }
    }
}

pub struct ConWeave {
    spec: ConWeaveSpec,
    rng: Rng,
    ecmp: super::EcmpHasher,
    tx: HashMap<u64, TxFlow>,
    rx: HashMap<u64, RxFlow>,
    /// (destination switch, path label) → paused until.
    paused: HashMap<(u32, u32), Time>,
    /// Reorder queues by release deadline.
    deadlines: BTreeSet<(Time, u64)>,
    actions: Vec<LbAction>,
    stats: LbStats,
}

/// A flow's key from its addresses and ports (the same at both ToRs).
fn flow_key(src: u32, dst: u32, sport: u16, dport: u16) -> u64 {
    mix64((src as u64) << 32 | dst as u64) ^ ((sport as u64) << 16 | dport as u64)
}

impl ConWeave {
    pub fn new(spec: ConWeaveSpec, rng: Rng, ecmp: super::EcmpHasher) -> ConWeave {
        ConWeave {
            spec,
            rng,
            ecmp,
            tx: HashMap::new(),
            rx: HashMap::new(),
            paused: HashMap::new(),
            deadlines: BTreeSet::new(),
            actions: Vec::new(),
            stats: LbStats::default(),
        }
    }

    fn hashed(&self, pkt: &Packet, ctx: &LbContext) -> u32 {
        self.ecmp.pick(pkt, ctx)
    }

    /// Two random paths: the first unless it is paused, else the second unless it is paused
    /// (with `true`), else the first (with `false`).
    fn sample_path(&mut self, dst_switch: u32, labels: u32, now: Time) -> (u32, bool) {
        let a = self.rng.random_range(0..labels);
        let b = self.rng.random_range(0..labels);
        let free = |p: u32| self.paused.get(&(dst_switch, p)).is_none_or(|&until| until <= now);
        if free(a) {
            (a, true)
        } else if free(b) {
            (b, true)
        } else {
            (a, false)
        }
    }

    /// The source ToR: the flow's epoch, phase and path for this data packet (§4.2).
    fn at_source(&mut self, pkt: &Packet, ctx: &LbContext) -> Option<ConWeaveHeader> {
        let now = ctx.now();
        let (dst_switch, labels, base_rtt) = path_labels(ctx, pkt.dst_host)?;
        let key = flow_key(pkt.src, pkt.dst, pkt.udp_sport, pkt.udp_dport);
        let (good, found) = self.sample_path(dst_switch, labels, now);
        let new = !self.tx.contains_key(&key);
        let f = self.tx.entry(key).or_insert(TxFlow { active: Time::ZERO, stabilized: true, reply_by: Time::ZERO, epoch: 0, phase: 0, path: good, tail_at: Time::ZERO });
        // A new epoch when the flow was idle too long (expired) or its last reroute settled.
        let expired = new || f.active + self.spec.tx_expiry < now;
        let settled = !expired && f.stabilized;
        f.stabilized = false;
        f.active = now;
        let mut timed_out = false;
        if expired || settled {
            f.reply_by = now + base_rtt + self.spec.reply_timeout_extra;
            f.epoch += 1;
            f.phase = 0;
        } else if f.reply_by < now {
            // No RTT_REPLY in time: this packet is the TAIL, the next ones are rerouted.
            f.reply_by = Time::MAX;
            f.phase = 1;
            timed_out = true;
        }
        let phase = if timed_out { 0 } else { f.phase };
        let old = f.path;
        if (expired || timed_out) && found {
            // Counted as the fork's `m_nReRoute`: every such choice of an existing flow, also
            // one that falls on the path in use.
            if !new {
                self.stats.reroutes += 1;
            }
            f.path = good;
        }
        // An expired flow moves at once; the TAIL still takes the old path.
        let path = (if timed_out { old } else { f.path }) % labels;
        if expired || settled {
            f.tail_at = Time::ZERO;
        } else if timed_out {
            f.tail_at = now;
        }
        let kind = ConWeaveKind::Data { init: expired || settled, tail: timed_out };
        Some(ConWeaveHeader { kind, path, rest: path, epoch: f.epoch, phase, tx_at: now, tail_at: f.tail_at, src_switch: ctx.switch })
    }

    /// The destination ToR's handling of a data packet; true if it is held (§4.3).
    fn at_destination(&mut self, pkt: &Packet, h: &ConWeaveHeader, ctx: &LbContext) -> bool {
        let now = ctx.now();
        let ConWeaveKind::Data { init, tail } = h.kind else { return false };
        let key = flow_key(pkt.src, pkt.dst, pkt.udp_sport, pkt.udp_dport);
        let r = self.rx.entry(key).or_default();
        if r.epoch > h.epoch {
            return false;
        }
        let new_epoch = r.epoch < h.epoch;
        r.epoch = h.epoch;
        if h.phase == 0 {
            (r.phase0_tx, r.phase0_rx) = (h.tx_at, now);
        }
        let mut out_of_order = false;
        if new_epoch {
            r.phase = tail as u8;
            out_of_order = h.phase > r.phase;
            r.phase0_seen = h.phase == 0;
        } else {
            if tail {
                if !r.reordering {
                    r.phase = 1;
                }
            } else if r.phase < h.phase {
                out_of_order = true;
            }
            r.phase0_seen |= h.phase == 0;
        }
        if tail || h.phase == 1 {
            r.tail_at = h.tail_at;
        }
        let gap = if r.phase0_seen { Time(r.tail_at.0.saturating_sub(r.phase0_tx.0)) } else { self.spec.default_voq_waiting };
        let flush_at = if h.phase == 1 {
            let from = if r.phase0_seen { r.phase0_rx } else { now };
            from + gap + self.spec.extra_voq_flush
        } else if tail {
            now + Time::from_ns(1)
        } else {
            now + gap + self.spec.extra_voq_flush
        };
        let mut hold = false;
        if h.phase == 0 {
            if r.reordering {
                self.deadlines.remove(&(r.flush_at, key));
                r.flush_at = flush_at.max(now);
                self.deadlines.insert((r.flush_at, key));
                r.tail_came |= tail;
            }
        } else if out_of_order {
            hold = true;
            if !r.reordering {
                r.reordering = true;
                r.flush_at = flush_at.max(now);
                self.deadlines.insert((r.flush_at, key));
            }
        }
        // NOTIFY of an ECN mark, and the replies asked for, back to the source ToR.
        if pkt.ecn == ECN_CE {
            self.control(pkt, ctx, ConWeaveHeader { kind: ConWeaveKind::Notify, ..*h });
        }
        if init || tail {
            self.control(pkt, ctx, ConWeaveHeader { kind: ConWeaveKind::Reply { clear: tail }, phase: tail as u8, ..*h });
        }
        if hold {
            self.stats.held_packets += 1;
        }
        hold
    }

    /// Sends a control packet for `pkt`'s flow back to its source host's ToR.
    fn control(&mut self, pkt: &Packet, ctx: &LbContext, mut h: ConWeaveHeader) {
        h.src_switch = ctx.switch;
        let back = Packet {
            kind: PacketKind::Roce,
            src: pkt.dst,
            dst: pkt.src,
            // The switch fills in the source host's index when it sends the packet.
            dst_host: u32::MAX,
            size: CONTROL_BYTES,
            priority: 0,
            ecn: ECN_NOT_ECT,
            udp_sport: pkt.udp_dport,
            udp_dport: pkt.udp_sport,
            flow_hash: pkt.flow_hash.rotate_left(16),
            flow: crate::wire::packet::SWITCH_CONTROL_FLOW,
            seq: 0,
            sent_at: ctx.now(),
            ingress_port: u32::MAX,
            ttl: TTL,
            roce: Default::default(),
        };
        self.stats.control_packets += 1;
        self.actions.push(LbAction::Emit { pkt: back, tag: LbTag::ConWeave(h), ingress: ctx.ingress });
    }

    /// A control packet at the ToR of the host it is addressed to.
    fn at_source_control(&mut self, pkt: &Packet, h: &ConWeaveHeader, now: Time) {
        match h.kind {
            ConWeaveKind::Reply { clear } => {
                let key = flow_key(pkt.dst, pkt.src, pkt.udp_dport, pkt.udp_sport);
                let Some(f) = self.tx.get_mut(&key) else { return };
                if h.epoch == f.epoch && h.phase == f.phase && (clear || (now < f.reply_by && f.reply_by != Time::MAX)) {
                    f.stabilized = true;
                    f.reply_by = Time::MAX;
                }
            }
            ConWeaveKind::Notify => {
                self.paused.insert((h.src_switch, h.path), now + self.spec.path_pause);
            }
            ConWeaveKind::Data { .. } => {}
        }
    }
}

impl LoadBalancer for ConWeave {
    /// Without a header (a caller that does not carry them): the flow hash.
    fn choose(&mut self, pkt: &Packet, ctx: &LbContext) -> u32 {
        self.hashed(pkt, ctx)
    }

    fn decide(&mut self, pkt: &Packet, tag: &mut LbTag, ctx: &LbContext) -> LbDecision {
        let to_host = !ctx.faces_switch(ctx.candidates[0]);
        match *tag {
            LbTag::ConWeave(h) if to_host => {
                *tag = LbTag::None;
                if matches!(h.kind, ConWeaveKind::Data { .. }) {
                    let key = flow_key(pkt.src, pkt.dst, pkt.udp_sport, pkt.udp_dport);
                    if self.at_destination(pkt, &h, ctx) {
                        return LbDecision::Hold { key, port: ctx.candidates[0] };
                    }
                    LbDecision::Port(ctx.candidates[0])
                } else {
                    self.at_source_control(pkt, &h, ctx.now());
                    LbDecision::Consume
                }
            }
            LbTag::ConWeave(ConWeaveHeader { kind: ConWeaveKind::Data { .. }, .. }) => {
                let LbTag::ConWeave(h) = tag else { unreachable!() };
                LbDecision::Port(follow_label(ctx, &mut h.rest))
            }
            LbTag::None if pkt.carries_data() && !to_host && !ctx.faces_switch(ctx.ingress) => match self.at_source(pkt, ctx) {
                Some(mut h) => {
                    let out = follow_label(ctx, &mut h.rest);
                    *tag = LbTag::ConWeave(h);
                    LbDecision::Port(out)
                }
                None => LbDecision::Port(self.hashed(pkt, ctx)),
            },
            _ => LbDecision::Port(self.hashed(pkt, ctx)),
        }
    }

    fn uses_tags(&self) -> bool {
        true
    }

    fn sees_single_paths(&self) -> bool {
        true
    }

    fn uses_timer(&self) -> bool {
        true
    }

    fn next_timer(&self) -> Option<Time> {
        self.deadlines.first().map(|&(t, _)| t)
    }

    /// Releases the reorder queues whose deadline has come: the old path's packets are taken
    /// to have arrived.
    fn on_timer(&mut self, now: Time) {
        while let Some(&(t, key)) = self.deadlines.first() {
            if t > now {
                break;
            }
            self.deadlines.pop_first();
            if let Some(r) = self.rx.get_mut(&key) {
                if std::mem::take(&mut r.tail_came) {
                    self.stats.released_by_tail += 1;
                } else {
                    self.stats.released_by_timeout += 1;
                }
                r.reordering = false;
                r.phase = 1;
                r.flush_at = Time::MAX;
            }
            self.actions.push(LbAction::Release { key });
        }
    }

    fn actions(&mut self, out: &mut Vec<LbAction>) {
        out.append(&mut self.actions);
    }

    fn stats(&self) -> LbStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::routing::Routes;
    use crate::fabric::switch::FabricView;
    use crate::sim::rng;

    /// Data of flow 0 → 9 (ports 100 → 200) in `epoch`, `phase`, sent at `tx_us`.
    fn data(epoch: u32, phase: u8, tx_us: u64, tail_us: u64, init: bool, tail: bool) -> (Packet, ConWeaveHeader) {
        let pkt = Packet { kind: PacketKind::Roce, src: 0, dst: 9, udp_sport: 100, udp_dport: 200, ..Packet::pause(0, 0, 1000) };
        let h = ConWeaveHeader { kind: ConWeaveKind::Data { init, tail }, path: 3, rest: 0, epoch, phase, tx_at: Time::from_us(tx_us), tail_at: Time::from_us(tail_us), src_switch: 4 };
        (pkt, h)
    }

    /// The destination ToR's verdict at `at_us`: held or not.
    fn arrive(cw: &mut ConWeave, at_us: u64, (pkt, h): (Packet, ConWeaveHeader)) -> bool {
        let routes = Routes::compute(&[], &[], &[], |_| true);
        let view = FabricView { now: Time::from_us(at_us), ports: &[], links: &[], is_host: &[], routes: &routes };
        let ctx = LbContext { switch: 5, ingress: 1, candidates: &[0], routed: &[0], first_port: 0, port_count: 2, view: &view };
        cw.at_destination(&pkt, &h, &ctx)
    }

    fn replies(cw: &mut ConWeave) -> Vec<ConWeaveKind> {
        let mut out = Vec::new();
        cw.actions(&mut out);
        out.iter()
            .filter_map(|a| match a {
                LbAction::Emit { tag: LbTag::ConWeave(h), .. } => Some(h.kind),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn rerouted_packets_wait_for_the_tail_then_go_in_order() {
        let mut cw = ConWeave::new(ConWeaveSpec::default(), rng::stream(1, "cw", 0), super::super::EcmpHasher { kind: super::super::EcmpHash::Seeded, seed: 0 });
        // Epoch 1 starts with an RTT_REQUEST sent at 10 µs, arriving at 14 µs: answered.
        assert!(!arrive(&mut cw, 14, data(1, 0, 10, 0, true, false)));
        assert_eq!(replies(&mut cw), vec![ConWeaveKind::Reply { clear: false }]);
        assert!(!arrive(&mut cw, 15, data(1, 0, 11, 0, false, false)));
        // The source timed out at 20 µs: TAIL sent then on the old path, the rest rerouted on a
        // faster one. The rerouted packets arrive first and wait.
        assert!(arrive(&mut cw, 22, data(1, 1, 21, 20, false, false)));
        assert!(arrive(&mut cw, 23, data(1, 1, 22, 20, false, false)));
        // Released, if the TAIL never came, at the old path's last arrival (15 µs) plus the gap
        // the source put between that packet and the TAIL (20 - 11 = 9 µs) plus 16 µs.
        assert_eq!(cw.next_timer(), Some(Time::from_us(15 + 9 + 16)));
        // The TAIL arrives at 26 µs: it goes through, a CLEAR goes back, and the queue follows
        // it 1 ns later.
        assert!(!arrive(&mut cw, 26, data(1, 0, 20, 20, false, true)));
        assert_eq!(replies(&mut cw), vec![ConWeaveKind::Reply { clear: true }]);
        assert_eq!(cw.next_timer(), Some(Time::from_us(26) + Time::from_ns(1)));
        cw.on_timer(Time::from_us(26) + Time::from_ns(1));
        let mut out = Vec::new();
        cw.actions(&mut out);
        assert!(matches!(out[..], [LbAction::Release { .. }]));
        assert_eq!((cw.stats.held_packets, cw.stats.released_by_tail, cw.stats.released_by_timeout), (2, 1, 0));
        // The epoch is in phase 1 now: later rerouted packets pass.
        assert!(!arrive(&mut cw, 27, data(1, 1, 24, 20, false, false)));
        // A packet of an older epoch passes too, and nothing is asked of the source.
        assert!(!arrive(&mut cw, 28, data(0, 0, 1, 0, true, false)));
        assert!(replies(&mut cw).is_empty());
    }

    #[test]
    fn a_lost_tail_is_waited_for_until_its_predicted_arrival_and_marks_notify_the_source() {
        let mut cw = ConWeave::new(ConWeaveSpec::default(), rng::stream(1, "cw", 0), super::super::EcmpHasher { kind: super::super::EcmpHash::Seeded, seed: 0 });
        assert!(!arrive(&mut cw, 14, data(1, 0, 10, 0, true, false)));
        let (mut pkt, h) = data(1, 0, 12, 0, false, false);
        pkt.ecn = ECN_CE;
        assert!(!arrive(&mut cw, 16, (pkt, h)));
        assert_eq!(replies(&mut cw), vec![ConWeaveKind::Reply { clear: false }, ConWeaveKind::Notify]);
        // A rerouted packet, TAIL sent at 30 µs: wait until 16 + (30 - 12) + 16 = 50 µs.
        assert!(arrive(&mut cw, 31, data(1, 1, 31, 30, false, false)));
        assert_eq!(cw.next_timer(), Some(Time::from_us(50)));
        cw.on_timer(Time::from_us(49));
        assert_eq!(cw.stats.released_by_timeout, 0);
        cw.on_timer(Time::from_us(50));
        assert_eq!((cw.stats.released_by_tail, cw.stats.released_by_timeout), (0, 1));
        assert_eq!(cw.next_timer(), None);
    }
}
