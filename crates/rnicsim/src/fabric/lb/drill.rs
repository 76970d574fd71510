//! DRILL (Ghorbani et al., SIGCOMM 2017, §3.2): per packet, the switch looks at `d` candidates
//! drawn at random and the `m` least-loaded ports it remembers from its previous decision, and
//! sends the packet to the one with the shortest queue (bytes queued, all classes). With
//! `m = 0` and `d = 2` this is the power of two choices (Mitzenmacher), the Eunomia paper's PO2.
//!
//! The `d` samples are distinct from each other but may fall on a remembered port, which is
//! then looked at once (so fewer than `d + m` ports may be compared), as in DRILL's description
//! and ConWeave's ns-3 fork (`SwitchNode::DoLbDrill`: the first `d` of a shuffle of the
//! candidates, beside the remembered port). DRILL's memory belongs to a forwarding engine that always
//! balances over the same uplinks; here one switch may balance over different candidate sets
//! (Jellyfish, or after a failure), so the memory is kept per destination host, as ConWeave's
//! ns-3 fork keeps it, and a remembered port counts only while it is still a candidate. Ties go
//! to the remembered port, then to the earlier sample.

use super::{LbContext, LoadBalancer};
use crate::sim::rng::Rng;
use crate::wire::packet::Packet;
use rand::Rng as _;

/// Most samples or remembered ports a switch can be configured with.
pub const DRILL_MAX: usize = 8;

pub struct Drill {
    samples: usize,
    memory: usize,
    /// Per destination host, `memory` remembered ports, least loaded first (`u32::MAX`: empty).
    remembered: Vec<u32>,
    rng: Rng,
}

impl Drill {
    /// DRILL(`samples`, `memory`); both at most [`DRILL_MAX`], `samples` at least 1.
    pub fn new(samples: usize, memory: usize, rng: Rng) -> Drill {
        assert!((1..=DRILL_MAX).contains(&samples) && memory <= DRILL_MAX, "DRILL({samples}, {memory})");
        Drill { samples, memory, remembered: Vec::new(), rng }
    }
}

impl LoadBalancer for Drill {
    fn choose(&mut self, pkt: &Packet, ctx: &LbContext) -> u32 {
        let c = ctx.candidates;
        let at = pkt.dst_host as usize * self.memory;
        if self.remembered.len() < at + self.memory {
            self.remembered.resize(at + self.memory, u32::MAX);
        }
        let remembered = &mut self.remembered[at..at + self.memory];
        // (queued bytes, port) of everything looked at, remembered ports first.
        let mut seen = [(u64::MAX, u32::MAX); 2 * DRILL_MAX];
        let mut n = 0;
        for &p in remembered.iter() {
            if p != u32::MAX && c.contains(&p) && !seen[..n].iter().any(|s| s.1 == p) {
                seen[n] = (ctx.queued(p), p);
                n += 1;
            }
        }
        let draws = self.samples.min(c.len());
        // Distinct positions in the candidate list (there are always `draws` of them, whatever
        // the list holds), each looked at unless already seen.
        let mut drawn = [usize::MAX; DRILL_MAX];
        let mut k = 0;
        while k < draws {
            let i = self.rng.random_range(0..c.len());
            if drawn[..k].contains(&i) {
                continue;
            }
            drawn[k] = i;
            k += 1;
            let p = c[i];
            if !seen[..n].iter().any(|s| s.1 == p) {
                seen[n] = (ctx.queued(p), p);
                n += 1;
            }
        }
        // A stable sort keeps remembered ports and earlier samples first among equals.
        let looked = &mut seen[..n];
        looked.sort_by_key(|s| s.0);
        for (i, r) in remembered.iter_mut().enumerate() {
            *r = looked.get(i).map_or(u32::MAX, |s| s.1);
        }
        looked[0].1
    }
}

/// Packet spraying in turn: each switch sends the packets for one destination host to its
/// candidates round robin (the Eunomia paper's PS, §2.1).
pub struct RoundRobin {
    next: Vec<u32>,
}

impl RoundRobin {
    pub fn new() -> RoundRobin {
        RoundRobin { next: Vec::new() }
    }
}

impl Default for RoundRobin {
    fn default() -> Self {
        Self::new()
    }
}

impl LoadBalancer for RoundRobin {
    fn choose(&mut self, pkt: &Packet, ctx: &LbContext) -> u32 {
        let d = pkt.dst_host as usize;
        if self.next.len() <= d {
            self.next.resize(d + 1, 0);
        }
        let i = self.next[d] as usize % ctx.candidates.len();
        self.next[d] = (i + 1) as u32;
        ctx.candidates[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::link::Link;
    use crate::fabric::port::{ClassService, Port};
    use crate::fabric::routing::Routes;
    use crate::fabric::switch::FabricView;
    use crate::sim::{rng, TimerId};
    use crate::units::{BitsPerSec, Time};
    use crate::wire::packet::PacketPool;

    /// Ports 0..n of one switch holding `queued[i]` bytes each (1000-byte packets).
    fn ports(queued: &[u64]) -> Vec<Port> {
        let mut pool = PacketPool::default();
        let mut v = Vec::new();
        for (i, &q) in queued.iter().enumerate() {
            let mut p = Port::new(0, i as u32, 0, BitsPerSec::gbps(100), TimerId(0), ClassService::Strict);
            for _ in 0..q / 1000 {
                let id = pool.alloc(Packet::pause(0, 0, 1000));
                p.enqueue(0, id, 1000, &mut pool);
            }
            v.push(p);
        }
        v
    }

    /// Asks `lb` `n` times for a packet to `dst` with candidates `cand` over `ports`; the count
    /// of each port chosen.
    fn tally(lb: &mut dyn LoadBalancer, ports: &[Port], cand: &[u32], dst: u32, n: usize) -> Vec<usize> {
        let links: Vec<Link> = ports.iter().map(|_| Link::new(Time::ZERO, 0.0)).collect();
        let routes = Routes::compute(&[], &[], &[], |_| true);
        let view = FabricView { now: Time::ZERO, ports, links: &links, is_host: &[], routes: &routes };
        let ctx = LbContext { switch: 0, ingress: 0, candidates: cand, routed: cand, first_port: 0, port_count: ports.len() as u32, view: &view };
        let pkt = Packet { dst_host: dst, ..Packet::pause(0, 0, 1000) };
        let mut counts = vec![0; ports.len()];
        for _ in 0..n {
            counts[lb.choose(&pkt, &ctx) as usize] += 1;
        }
        counts
    }

    #[test]
    fn power_of_two_picks_the_shorter_of_two_distinct_samples() {
        // Queues 0 < 5 < 10 < 15 KB. Of the six equally likely pairs, port 0 wins the three it
        // is in, port 1 two, port 2 one, port 3 none: shares 1/2, 1/3, 1/6, 0.
        let p = ports(&[0, 5000, 10_000, 15_000]);
        let mut lb = Drill::new(2, 0, rng::stream(1, "po2", 0));
        let c = tally(&mut lb, &p, &[0, 1, 2, 3], 0, 60_000);
        assert_eq!(c[3], 0);
        for (i, share) in [0.5, 1.0 / 3.0, 1.0 / 6.0].iter().enumerate() {
            let got = c[i] as f64 / 60_000.0;
            assert!((got - share).abs() < 0.01, "port {i}: {got} vs {share}");
        }
    }

    #[test]
    fn drill_remembers_the_least_loaded_port_per_destination() {
        // DRILL(1, 1): one random sample against the remembered port. Once port 2 (the empty
        // one) has been sampled it is remembered and never left, since nothing beats it.
        let p = ports(&[3000, 2000, 0, 1000]);
        let mut lb = Drill::new(1, 1, rng::stream(2, "drill", 0));
        let c = tally(&mut lb, &p, &[0, 1, 2, 3], 7, 1000);
        assert!(c[2] > 980, "{c:?}");
        // Without memory, one sample is a uniformly random port.
        let mut lb = Drill::new(1, 0, rng::stream(2, "drill", 0));
        let c = tally(&mut lb, &p, &[0, 1, 2, 3], 7, 4000);
        assert!(c.iter().all(|&n| (850..=1150).contains(&n)), "{c:?}");
        // The memory of destination 7 does not steer destination 3, and a remembered port that
        // stopped being a candidate (a failed uplink) is not taken.
        let mut lb = Drill::new(1, 1, rng::stream(3, "drill", 0));
        tally(&mut lb, &p, &[0, 1, 2, 3], 7, 200);
        let c = tally(&mut lb, &p, &[0, 1, 3], 7, 1000);
        assert_eq!(c[2], 0);
        assert!(c[3] > 980, "{c:?}");
        let c = tally(&mut lb, &p, &[0, 1], 3, 2000);
        assert!(c[1] > 1980, "{c:?}");
    }

    #[test]
    fn a_sample_may_fall_on_the_remembered_port() {
        // DRILL(1, 1) over two ports. Port 0 is remembered while empty; then it fills and port
        // 1 empties. The next packet samples port 0 or port 1 alike: on port 0 it looks at port
        // 0 alone and stays there (ns-3's DoLbDrill, DRILL's d random samples); on port 1 it
        // moves. Samples kept apart from the memory would move every time.
        let (before, after) = (ports(&[0, 5000]), ports(&[5000, 0]));
        let mut stayed = 0;
        for trial in 0..400 {
            let mut lb = Drill::new(1, 1, rng::stream(trial, "drill", 0));
            // Once sampled, the empty port 0 is remembered and kept.
            assert!(tally(&mut lb, &before, &[0, 1], 9, 50)[0] >= 40);
            stayed += tally(&mut lb, &after, &[0, 1], 9, 1)[0];
        }
        assert!((160..=240).contains(&stayed), "{stayed} of 400 stayed on the remembered port");
    }

    #[test]
    fn drill_with_more_samples_than_candidates_looks_at_each_once() {
        // d = 8 over 3 candidates: all three are looked at every time, so the least loaded wins.
        let p = ports(&[2000, 1000, 3000]);
        let mut lb = Drill::new(8, 2, rng::stream(4, "drill", 0));
        let c = tally(&mut lb, &p, &[0, 1, 2], 0, 100);
        assert_eq!(c, vec![0, 100, 0]);
        // A candidate listed twice is drawn by position: the draws end, and it is looked at once.
        let mut lb = Drill::new(2, 1, rng::stream(4, "drill", 0));
        assert_eq!(tally(&mut lb, &p, &[2, 2], 0, 10), vec![0, 0, 10]);
    }

    #[test]
    fn round_robin_takes_the_candidates_in_turn_per_destination() {
        let p = ports(&[0, 0, 0]);
        let mut lb = RoundRobin::new();
        assert_eq!(tally(&mut lb, &p, &[0, 1, 2], 5, 9), vec![3, 3, 3]);
        // A packet to another destination starts its own turn; 5's turn continues where it was.
        let links: Vec<Link> = p.iter().map(|_| Link::new(Time::ZERO, 0.0)).collect();
        let routes = Routes::compute(&[], &[], &[], |_| true);
        let view = FabricView { now: Time::ZERO, ports: &p, links: &links, is_host: &[], routes: &routes };
        let ctx = LbContext { switch: 0, ingress: 0, candidates: &[0, 1, 2], routed: &[0, 1, 2], first_port: 0, port_count: 3, view: &view };
        let to = |d: u32| Packet { dst_host: d, ..Packet::pause(0, 0, 1000) };
        assert_eq!([lb.choose(&to(9), &ctx), lb.choose(&to(5), &ctx), lb.choose(&to(9), &ctx), lb.choose(&to(5), &ctx)], [0, 0, 1, 1]);
    }
}
