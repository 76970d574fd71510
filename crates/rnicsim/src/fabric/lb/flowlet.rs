//! Flowlet switching as LetFlow does it (Vanini et al., NSDI 2017, §3): a switch keeps a table
//! of flowlets indexed by the flow's hash; a packet that arrives more than `gap` after the
//! previous packet of its entry starts a new flowlet on a candidate picked at random, and the
//! others follow their flowlet's port. Like the hardware table, entries are hashed, not exact:
//! two flows that share an entry share its flowlets.

use super::{LbContext, LoadBalancer};
use crate::sim::rng::Rng;
use crate::units::Time;
use crate::wire::packet::Packet;
use rand::Rng as _;

/// Entries in a switch's flowlet table (LetFlow's prototype uses a 64K-entry table).
pub const FLOWLET_ENTRIES: usize = 1 << 16;

pub struct Flowlet {
    gap: Time,
    rng: Rng,
    /// Per entry: when its last packet passed and the port it took (`u32::MAX`: never used).
    table: Vec<(Time, u32)>,
}

impl Flowlet {
    pub fn new(gap: Time, rng: Rng) -> Flowlet {
        Flowlet { gap, rng, table: Vec::new() }
    }
}

impl LoadBalancer for Flowlet {
    fn choose(&mut self, pkt: &Packet, ctx: &LbContext) -> u32 {
        if self.table.is_empty() {
            self.table = vec![(Time::ZERO, u32::MAX); FLOWLET_ENTRIES];
        }
        let e = &mut self.table[pkt.flow_hash as usize % FLOWLET_ENTRIES];
        let now = ctx.now();
        let idle = now.saturating_sub(e.0);
        // A flowlet keeps its port while the port is still a way to the destination.
        if e.1 == u32::MAX || idle > self.gap || !ctx.candidates.contains(&e.1) {
            e.1 = ctx.candidates[self.rng.random_range(0..ctx.candidates.len())];
        }
        e.0 = now;
        e.1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::switch::FabricView;
    use crate::sim::rng;
    use crate::wire::packet::Packet;

    fn pick(f: &mut Flowlet, hash: u32, at_ns: u64) -> u32 {
        let pkt = Packet { flow_hash: hash, ..Packet::pause(0, 0, 64) };
        let routes = crate::fabric::routing::Routes::compute(&[], &[], &[], |_| true);
        let view = FabricView { now: Time::from_ns(at_ns), ports: &[], links: &[], is_host: &[], routes: &routes };
        let ctx = LbContext { switch: 0, ingress: 0, candidates: &[10, 11, 12, 13], routed: &[10, 11, 12, 13], first_port: 10, port_count: 4, view: &view };
        f.choose(&pkt, &ctx)
    }

    #[test]
    fn packets_closer_than_the_gap_stay_on_their_flowlet() {
        let mut f = Flowlet::new(Time::from_us(1), rng::stream(1, "flowlet", 0));
        let first = pick(&mut f, 7, 0);
        // 999 ns apart, a thousand times: never idle longer than the gap.
        for i in 1..1000 {
            assert_eq!(pick(&mut f, 7, i * 999), first);
        }
    }

    #[test]
    fn a_gap_starts_a_new_flowlet_on_a_random_candidate() {
        let mut f = Flowlet::new(Time::from_us(1), rng::stream(1, "flowlet", 0));
        // 2 µs apart: every packet is a new flowlet; over 400 of them every candidate is used
        // about a quarter of the time.
        let mut counts = [0u32; 4];
        for i in 0..400 {
            counts[(pick(&mut f, 7, i * 2000) - 10) as usize] += 1;
        }
        assert!(counts.iter().all(|&c| (60..=140).contains(&c)), "{counts:?}");
    }

    #[test]
    fn flowlets_of_other_flows_are_kept_apart() {
        let mut f = Flowlet::new(Time::from_us(1), rng::stream(2, "flowlet", 0));
        let a = pick(&mut f, 1, 0);
        // Flow 1 sends every 500 ns; flow 2 every 5 µs, so each of its packets starts a new
        // flowlet. Flow 1's flowlet does not move.
        let mut seen2 = std::collections::BTreeSet::new();
        for i in 1..400 {
            if i % 10 == 0 {
                seen2.insert(pick(&mut f, 2, i * 500 - 250));
            }
            assert_eq!(pick(&mut f, 1, i * 500), a);
        }
        assert!(seen2.len() > 1, "flow 2 moved between flowlets");
    }
}
