//! CONGA (Alizadeh et al., SIGCOMM 2014, §3), as ConWeave's ns-3 fork models it: the source
//! switch (a ToR, where a packet comes in from a host) sends each flowlet on the path to the
//! destination switch whose congestion is least, judging a path by the larger of its first
//! link's load and the congestion the destination switch last fed back for it.
//!
//! - **Paths** are labels ([`super::path_labels`]): each switch on the way decodes its own
//!   candidate from the label, so a label names one path of a Clos.
//! - **Load** of a port is a discounting rate estimator (DRE, §3.3): the bytes sent, times
//!   `1 - alpha` every `dre_time`. Quantized to `quantize_bits` bits against the bytes the
//!   link's full rate would leave in it, `rate × dre_time / alpha`.
//! - **Congestion** (CE) rides in the packet's header ([`CongaHeader`]): each switch on the path raises it to
//!   its own port's quantized load. The destination switch records it per (source switch,
//!   path) in its congestion-from-leaf table, and every packet it later sends that source
//!   switch's way carries one of those entries back, chosen at random. The source switch keeps
//!   the feedback in its congestion-to-leaf table. Entries older than `aging` count as 0
//!   (to-leaf) or are not fed back (from-leaf).
//! - **Choice**: a new flowlet (no packet of the flow for `switch.flowlet_gap`) looks at
//!   `samples` consecutive labels from a random start and takes the least congested, with ties
//!   broken at random. A flowlet keeps its path.
//!
//! Only data packets are balanced. ACKs, NAKs, CNPs and READ requests go by the switch's flow
//! hash, as the fork sends control packets. Hosts on the same switch need no path. The
//! defaults are the fork's: DRE every 50 µs, alpha 0.2, 3 bits, ageing after 500 µs, four
//! samples, and a 100 µs flowlet gap.

use super::{follow_label, path_labels, LbContext, LbDecision, LoadBalancer};
use crate::sim::rng::{mix64, Rng};
use crate::units::Time;
use crate::wire::packet::{CongaHeader, LbTag, Packet};
use rand::Rng as _;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// CONGA's parameters (`[switch.conga]`); a key left out keeps its default.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CongaSpec {
    /// How often each port's load estimate decays by `alpha`.
    pub dre_time: Time,
    /// The decay factor of the load estimate.
    pub alpha: f64,
    /// Bits a congestion value is quantized to.
    pub quantize_bits: u32,
    /// After this long without news, a path's fed-back congestion counts as 0.
    pub aging: Time,
    /// Paths compared per new flowlet.
    pub samples: u32,
}

impl Default for CongaSpec {
    fn default() -> Self {
        CongaSpec { dre_time: Time::from_us(50), alpha: 0.2, quantize_bits: 3, aging: Time::from_us(500), samples: 4 }
    }
}

impl CongaSpec {
    /// Keys out of range, with why.
    pub fn check(&self) -> Vec<(&'static str, String)> {
        let mut bad = Vec::new();
        if self.dre_time == Time::ZERO {
            bad.push(("dre_time", "must be positive".into()));
        }
        if !(self.alpha > 0.0 && self.alpha < 1.0) {
            bad.push(("alpha", format!("must be in (0, 1), got {}", self.alpha)));
        }
        if !(1..=15).contains(&self.quantize_bits) {
            bad.push(("quantize_bits", format!("must be 1-15, got {}", self.quantize_bits)));
        }
        if self.samples == 0 {
            bad.push(("samples", "must be at least 1".into()));
        }
        bad
    }
}

/// A congestion value with the time it was heard.
#[derive(Clone, Copy, Debug)]
struct Heard {
    path: u32,
    ce: u16,
    at: Time,
}

pub struct Conga {
    spec: CongaSpec,
    flowlet_gap: Time,
    rng: Rng,
    ecmp: super::EcmpHasher,
    /// Per local port: (bytes in the estimate, the DRE period it was last brought up to).
    dre: Vec<(u64, u64)>,
    /// Flowlets by flow: (path label, last packet, labels to its destination then).
    flowlets: HashMap<u64, (u32, Time, u32)>,
    /// Per destination switch, how many labels its paths had when last seen: a route
    /// recompute that changes them renumbers the paths, and what was heard per label is void.
    label_space: HashMap<u32, u32>,
    /// When stale flowlets were last swept out.
    swept: Time,
    /// Congestion-to-leaf: per destination switch, what it fed back per path.
    to_leaf: HashMap<u32, Vec<Heard>>,
    /// Congestion-from-leaf: per source switch, the congestion its packets met per path.
    from_leaf: HashMap<u32, Vec<Heard>>,
}

impl Conga {
    pub fn new(spec: CongaSpec, flowlet_gap: Time, rng: Rng, ecmp: super::EcmpHasher) -> Conga {
        Conga {
            spec,
            flowlet_gap,
            rng,
            ecmp,
            dre: Vec::new(),
            flowlets: HashMap::new(),
            label_space: HashMap::new(),
            swept: Time::ZERO,
            to_leaf: HashMap::new(),
            from_leaf: HashMap::new(),
        }
    }

    /// Port `p`'s load estimate at `now`, decayed for every DRE period since it was last seen.
    fn dre_bytes(&mut self, ctx: &LbContext, p: u32) -> &mut u64 {
        let i = (p - ctx.first_port) as usize;
        if self.dre.len() < ctx.port_count as usize {
            self.dre.resize(ctx.port_count as usize, (0, 0));
        }
        let period = ctx.now().0 / self.spec.dre_time.0;
        let (x, seen) = &mut self.dre[i];
        if *seen < period {
            if period - *seen > 64 {
                *x = 0;
            } else {
                for _ in *seen..period {
                    *x = (*x as f64 * (1.0 - self.spec.alpha)) as u64;
                }
            }
            *seen = period;
        }
        x
    }

    /// Port `p`'s load quantized: the estimate against what the link's full rate leaves in it.
    fn quantized(&mut self, ctx: &LbContext, p: u32) -> u16 {
        let x = *self.dre_bytes(ctx, p);
        self.quantize(ctx, p, x)
    }

    fn quantize(&self, ctx: &LbContext, p: u32, bytes: u64) -> u16 {
        let rate = ctx.view.ports[p as usize].rate.0 as f64;
        let full = rate / 8.0 * self.spec.dre_time.as_secs_f64() / self.spec.alpha;
        let q = bytes as f64 / full * (1u64 << self.spec.quantize_bits) as f64;
        q.min(u16::MAX as f64) as u16
    }

    /// Adds a packet's bytes to port `p`'s estimate; returns its quantized load.
    fn send_on(&mut self, ctx: &LbContext, p: u32, size: u32) -> u16 {
        let x = self.dre_bytes(ctx, p);
        *x += size as u64;
        let x = *x;
        self.quantize(ctx, p, x)
    }

    /// The least congested of `samples` consecutive labels from a random start (§3.4); a label
    /// whose first port local failover has taken out only when every sampled one is.
    fn best_path(&mut self, ctx: &LbContext, dst_switch: u32, labels: u32) -> u32 {
        let samples = self.spec.samples.min(labels);
        let start = self.rng.random_range(0..=labels - samples);
        let now = ctx.now();
        let mut best = [0u32; 16];
        let (mut n_best, mut least) = (0usize, u16::MAX);
        for label in start..start + samples {
            let first = super::label_port(ctx, label);
            if !ctx.candidates.contains(&first) {
                continue;
            }
            let local = self.quantized(ctx, first);
            let remote = self
                .to_leaf
                .get(&dst_switch)
                .and_then(|v| v.iter().find(|h| h.path == label))
                .filter(|h| now.saturating_sub(h.at) <= self.spec.aging)
                .map_or(0, |h| h.ce);
            let ce = local.max(remote);
            if ce < least {
                (least, n_best) = (ce, 0);
            }
            if ce == least && n_best < best.len() {
                best[n_best] = label;
                n_best += 1;
            }
        }
        if n_best == 0 {
            return start;
        }
        best[self.rng.random_range(0..n_best)]
    }

    /// Records `ce` for `path` in `table`'s list for `switch`.
    fn hear(table: &mut HashMap<u32, Vec<Heard>>, switch: u32, path: u32, ce: u16, at: Time) {
        let list = table.entry(switch).or_default();
        match list.iter_mut().find(|h| h.path == path) {
            Some(h) => (h.ce, h.at) = (ce, at),
            None => list.push(Heard { path, ce, at }),
        }
    }

    /// A random fresh congestion-from-leaf entry for `switch`, to feed back.
    fn feedback_for(&mut self, switch: u32, now: Time) -> Option<(u32, u16)> {
        let aging = self.spec.aging;
        let list = self.from_leaf.get_mut(&switch)?;
        list.retain(|h| now.saturating_sub(h.at) <= aging);
        if list.is_empty() {
            return None;
        }
        let h = list[self.rng.random_range(0..list.len())];
        Some((h.path, h.ce))
    }

    /// The flowlet's path label for a data packet leaving source switch `ctx.switch`.
    /// A flowlet keeps its path while its first port is up and the labels keep their meaning.
    fn flowlet_path(&mut self, pkt: &Packet, ctx: &LbContext, dst_switch: u32, labels: u32) -> u32 {
        let now = ctx.now();
        if self.label_space.insert(dst_switch, labels).is_some_and(|before| before != labels) {
            self.to_leaf.remove(&dst_switch);
        }
        let key = flowlet_key(pkt);
        if let Some(&(path, last, space)) = self.flowlets.get(&key) {
            let first_up = || ctx.candidates.contains(&super::label_port(ctx, path));
            if now.saturating_sub(last) <= self.flowlet_gap && space == labels && first_up() {
                self.flowlets.insert(key, (path, now, labels));
                return path;
            }
        }
        let path = self.best_path(ctx, dst_switch, labels);
        self.flowlets.insert(key, (path, now, labels));
        if self.flowlets.len() > 4096 && now.saturating_sub(self.swept) > self.spec.aging {
            let gap = self.flowlet_gap;
            self.flowlets.retain(|_, f| now.saturating_sub(f.1) <= gap);
            self.swept = now;
        }
        path
    }

    /// The flow-hash choice, for control packets and traffic CONGA does not balance.
    fn hashed(&self, pkt: &Packet, ctx: &LbContext) -> u32 {
        self.ecmp.pick(pkt, ctx)
    }
}

impl LoadBalancer for Conga {
    /// Without a header (a caller that does not carry them): the flow hash.
    fn choose(&mut self, pkt: &Packet, ctx: &LbContext) -> u32 {
        self.hashed(pkt, ctx)
    }

    fn decide(&mut self, pkt: &Packet, tag: &mut LbTag, ctx: &LbContext) -> LbDecision {
        if !pkt.carries_data() {
            return LbDecision::Port(self.hashed(pkt, ctx));
        }
        let now = ctx.now();
        if !ctx.faces_switch(ctx.candidates[0]) {
            // The destination switch: take the header off and learn from it.
            if let LbTag::Conga(h) = *tag {
                if let Some((path, ce)) = h.fb {
                    Self::hear(&mut self.to_leaf, h.src_switch, path, ce, now);
                }
                Self::hear(&mut self.from_leaf, h.src_switch, h.path, h.ce, now);
                *tag = LbTag::None;
            }
            return LbDecision::Port(ctx.candidates[0]);
        }
        if !matches!(tag, LbTag::Conga(_)) {
            if ctx.faces_switch(ctx.ingress) {
                // Came in from another switch without a header: not ours to steer.
                return LbDecision::Port(self.hashed(pkt, ctx));
            }
            let Some((dst_switch, labels, _)) = path_labels(ctx, pkt.dst_host) else { return LbDecision::Port(self.hashed(pkt, ctx)) };
            let path = self.flowlet_path(pkt, ctx, dst_switch, labels);
            let fb = self.feedback_for(dst_switch, now);
            *tag = LbTag::Conga(CongaHeader { path, rest: path, src_switch: ctx.switch, ce: 0, fb });
        }
        let LbTag::Conga(h) = tag else { unreachable!("a CONGA header was just put on") };
        let out = follow_label(ctx, &mut h.rest);
        let ce = self.send_on(ctx, out, pkt.size);
        h.ce = h.ce.max(ce);
        LbDecision::Port(out)
    }

    fn uses_tags(&self) -> bool {
        true
    }

    fn sees_single_paths(&self) -> bool {
        true
    }
}

/// A flowlet's key: the whole five-tuple and the priority. HPCC-style source ports count from
/// 10000 per host pair, so two hosts' first flows to one destination share their ports and
/// differ only in their source.
fn flowlet_key(pkt: &Packet) -> u64 {
    mix64((pkt.dst as u64) << 32 | (pkt.udp_sport as u64) << 16 | pkt.udp_dport as u64) ^ mix64(pkt.src as u64 | (pkt.priority as u64) << 32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::link::Link;
    use crate::fabric::port::{ClassService, Port};
    use crate::fabric::routing::Routes;
    use crate::fabric::switch::FabricView;
    use crate::sim::{rng, TimerId};
    use crate::units::BitsPerSec;

    fn conga() -> Conga {
        Conga::new(CongaSpec::default(), Time::from_us(100), rng::stream(1, "conga", 0), super::super::EcmpHasher { kind: super::super::EcmpHash::Seeded, seed: 7 })
    }

    /// Four 100 Gbps ports (ids 0-3) of switch 0, each to a switch.
    fn ports() -> Vec<Port> {
        (0..8).map(|i| Port::new(if i < 4 { 0 } else { 1 }, i % 4, (i + 4) % 8, BitsPerSec::gbps(100), TimerId(0), ClassService::Strict)).collect()
    }

    #[test]
    fn two_sources_with_the_same_ports_to_one_destination_are_two_flowlets() {
        let mut a = Packet::pause(0, 9, 100);
        (a.udp_sport, a.udp_dport) = (10000, 100);
        let b = Packet { src: 1, ..a };
        assert_ne!(flowlet_key(&a), flowlet_key(&b));
        assert_eq!(flowlet_key(&a), flowlet_key(&Packet { ..a }));
        assert_ne!(flowlet_key(&a), flowlet_key(&Packet { priority: 3, ..a }));
    }

    #[test]
    fn the_load_estimate_decays_by_alpha_each_period_and_quantizes_against_the_line_rate() {
        let mut c = conga();
        let p = ports();
        let links: Vec<Link> = (0..8).map(|_| Link::new(Time::ZERO, 0.0)).collect();
        let routes = Routes::compute(&[], &[], &[], |_| true);
        let is_host = vec![false; 2];
        let at = |t: Time| FabricView { now: t, ports: &p, links: &links, is_host: &is_host, routes: &routes };
        let view = at(Time::ZERO);
        let ctx = LbContext { switch: 0, ingress: 0, candidates: &[0, 1, 2, 3], routed: &[0, 1, 2, 3], first_port: 0, port_count: 4, view: &view };
        // 100 Gbps for 50 µs over alpha 0.2 is 3,125,000 bytes: that is 8 (three bits) and
        // every 390,625 bytes is one step.
        assert_eq!(c.send_on(&ctx, 1, 390_624), 0);
        assert_eq!(c.send_on(&ctx, 1, 1), 1);
        assert_eq!(c.send_on(&ctx, 1, 3 * 390_625), 4);
        assert_eq!(c.quantized(&ctx, 2), 0);
        // Two periods later: 1,562,500 × 0.8 × 0.8 = 1,000,000 bytes, step 2.
        let view = at(Time::from_us(100));
        let ctx = LbContext { view: &view, ..ctx };
        assert_eq!(*c.dre_bytes(&ctx, 1), 1_000_000);
        assert_eq!(c.quantized(&ctx, 1), 2);
        let view = at(Time::from_ms(10));
        let ctx = LbContext { view: &view, ..ctx };
        assert_eq!(c.quantized(&ctx, 1), 0);
    }

    #[test]
    fn a_new_flowlet_takes_the_least_congested_sampled_path() {
        let mut c = Conga { spec: CongaSpec { samples: 4, ..CongaSpec::default() }, ..conga() };
        let p = ports();
        let links: Vec<Link> = (0..8).map(|_| Link::new(Time::ZERO, 0.0)).collect();
        let routes = Routes::compute(&[], &[], &[], |_| true);
        let is_host = vec![false; 2];
        let view = FabricView { now: Time::from_us(10), ports: &p, links: &links, is_host: &is_host, routes: &routes };
        let ctx = LbContext { switch: 0, ingress: 0, candidates: &[0, 1, 2, 3], routed: &[0, 1, 2, 3], first_port: 0, port_count: 4, view: &view };
        // Local load on ports 0 and 1; the far switch 9 reported path 2 congested: only path
        // 3 is clear, whatever the start of the window (four labels, four samples).
        c.send_on(&ctx, 0, 800_000);
        c.send_on(&ctx, 1, 400_000);
        Conga::hear(&mut c.to_leaf, 9, 2, 5, Time::from_us(5));
        for _ in 0..20 {
            assert_eq!(c.best_path(&ctx, 9, 4), 3);
        }
        // Feedback older than the ageing time counts as clear: paths 2 and 3 tie.
        let view = FabricView { now: Time::from_us(600), ..view };
        let ctx = LbContext { view: &view, ..ctx };
        c.send_on(&ctx, 0, 800_000);
        c.send_on(&ctx, 1, 400_000);
        let mut seen = [0u32; 4];
        for _ in 0..200 {
            seen[c.best_path(&ctx, 9, 4) as usize] += 1;
        }
        assert!(seen[0] + seen[1] == 0 && seen[2] > 60 && seen[3] > 60, "{seen:?}");
    }

    #[test]
    fn a_label_names_one_port_through_a_failure_and_a_flowlet_on_the_dead_one_moves() {
        // Switch 0's four uplinks are the routes' candidates; port 0's link fails and local
        // failover takes it out (candidates 1-3). Labels keep counting all four: label 2 still
        // leaves by port 2 (counted among the three live ports it left by port 3, so every
        // flowlet moved), and a label naming port 0 leaves by a live port.
        let mut c = conga();
        let p = ports();
        let links: Vec<Link> = (0..8).map(|_| Link::new(Time::ZERO, 0.0)).collect();
        let routes = Routes::compute(&[], &[], &[], |_| true);
        let is_host = vec![false; 2];
        let view = FabricView { now: Time::from_us(10), ports: &p, links: &links, is_host: &is_host, routes: &routes };
        let ctx = LbContext { switch: 0, ingress: 0, candidates: &[1, 2, 3], routed: &[0, 1, 2, 3], first_port: 0, port_count: 4, view: &view };
        for (label, port) in [(1, 1), (2, 2), (3, 3), (6, 2)] {
            let mut rest = label;
            assert_eq!(follow_label(&ctx, &mut rest), port, "label {label}");
            assert_eq!(rest, label / 4);
        }
        let mut rest = 4;
        assert!(follow_label(&ctx, &mut rest) != 0);
        // A flowlet on label 2 keeps it; one on label 0 (the dead port) takes a live one.
        let pkt = |sport: u16| Packet { kind: crate::wire::packet::PacketKind::Data, dst: 9, udp_sport: sport, ..Packet::pause(0, 0, 1000) };
        let key = |sport: u16| flowlet_key(&pkt(sport));
        c.flowlets.insert(key(1), (2, Time::from_us(9), 4));
        c.flowlets.insert(key(2), (0, Time::from_us(9), 4));
        c.label_space.insert(7, 4);
        assert_eq!(c.flowlet_path(&pkt(1), &ctx, 7, 4), 2);
        for _ in 0..20 {
            c.flowlets.insert(key(2), (0, Time::from_us(9), 4));
            assert!(c.flowlet_path(&pkt(2), &ctx, 7, 4) % 4 != 0);
        }
        // Routes recomputed: three labels now name other paths. The flowlet chooses again, and
        // what switch 7 fed back per label no longer counts.
        Conga::hear(&mut c.to_leaf, 7, 1, 5, Time::from_us(9));
        let ctx = LbContext { candidates: &[1, 2, 3], routed: &[1, 2, 3], ..ctx };
        c.flowlet_path(&pkt(1), &ctx, 7, 3);
        assert!(!c.to_leaf.contains_key(&7));
        assert_eq!(c.flowlets[&key(1)].2, 3);
    }
}
