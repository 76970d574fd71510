//! Periodic link failures (`[failures]`, the Eunomia paper's §2.3 and §5.6): every `interval`,
//! from `start`, a fresh random `fraction` of the links between switches fails, and the set that
//! failed one interval earlier comes back up at the same instant. The failures are ordinary
//! link events: a failed link's queued and in-flight packets are lost, and routes are recomputed
//! `routing.recompute_delay` later.

use crate::fabric::topology::{NodeKind, Topology};
use crate::scenario::schema::{LinkEventSpec, LinkState};
use crate::sim::rng;
use crate::units::Time;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailureSpec {
    /// The share of switch-to-switch links down during each interval (at least one link).
    pub fraction: f64,
    /// How long each set of failed links stays down before the next set fails.
    pub interval: Time,
    /// When the first set fails.
    #[serde(default)]
    pub start: Time,
    /// No new set fails from this time on (default: the end of the run).
    #[serde(default)]
    pub stop: Option<Time>,
}

impl FailureSpec {
    /// The switch-to-switch node pairs that may fail, each once however many parallel links
    /// join it, in topology order.
    pub fn candidates(topo: &Topology) -> Vec<[u32; 2]> {
        let sw = |n: u32| topo.kinds[n as usize] == NodeKind::Switch;
        let mut pairs: Vec<[u32; 2]> = Vec::new();
        for l in &topo.links {
            let p = [l.a.min(l.b), l.a.max(l.b)];
            if sw(l.a) && sw(l.b) && !pairs.contains(&p) {
                pairs.push(p);
            }
        }
        pairs
    }

    /// How many links fail at once out of `links`.
    pub fn per_interval(&self, links: usize) -> usize {
        ((self.fraction * links as f64).round() as usize).clamp(1, links)
    }

    /// The link events of a run of length `duration`, in time order; at each instant the
    /// previous set comes up before the next set goes down.
    pub fn events(&self, topo: &Topology, duration: Time, seed: u64) -> Vec<LinkEventSpec> {
        let pairs = Self::candidates(topo);
        if pairs.is_empty() || self.interval.0 == 0 {
            return Vec::new();
        }
        let n = self.per_interval(pairs.len());
        let stop = self.stop.unwrap_or(duration).min(duration);
        let mut out = Vec::new();
        let mut down: Vec<[u32; 2]> = Vec::new();
        let mut at = self.start;
        let mut round = 0u64;
        while at < duration {
            let ev = |between, state| LinkEventSpec { at, between, state, generated: true };
            out.extend(down.drain(..).map(|b| ev(b, LinkState::Up)));
            if at < stop {
                // `n` random pairs, failed in topology order.
                let mut idx: Vec<usize> = (0..pairs.len()).collect();
                rng::choose_front(&mut idx, n, &mut rng::stream(seed, "failures", round));
                let mut picked = idx[..n].to_vec();
                picked.sort_unstable();
                down = picked.into_iter().map(|i| pairs[i]).collect();
                out.extend(down.iter().map(|&b| ev(b, LinkState::Down)));
            }
            // (An interval past the largest time wrapped around to earlier times.)
            let Some(next) = at.0.checked_add(self.interval.0) else { break };
            at = Time(next);
            round += 1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::topology::{leaf_spine, LinkParams};
    use crate::units::BitsPerSec;

    fn fabric() -> Topology {
        // 4 leaves × 4 spines: 16 switch-to-switch links.
        let l = LinkParams { rate: BitsPerSec::gbps(100), delay: Time::from_us(1) };
        leaf_spine(4, 4, 2, l, l)
    }

    #[test]
    fn an_interval_past_the_largest_time_ends_the_rounds() {
        // It wrapped around: a million rounds at ever earlier times (found by a helper).
        let f = FailureSpec { fraction: 0.125, interval: Time(u64::MAX), start: Time::from_us(1), stop: None };
        let ev = f.events(&fabric(), Time::from_us(20), 7);
        assert_eq!(ev.len(), 2, "one set down at 1 us, never restored within the run");
        assert!(ev.iter().all(|e| e.at == Time::from_us(1) && e.state == LinkState::Down));
    }

    #[test]
    fn each_interval_fails_a_fresh_fraction_and_restores_the_last() {
        let topo = fabric();
        assert_eq!(FailureSpec::candidates(&topo).len(), 16);
        let f = FailureSpec { fraction: 0.125, interval: Time::from_us(100), start: Time::from_us(50), stop: None };
        let ev = f.events(&topo, Time::from_us(400), 7);
        // Sets fail at 50, 150, 250, 350 µs, two links each; each is restored 100 µs later, and
        // the last set (at 350 µs) is still down when the run ends at 400 µs.
        let downs: Vec<_> = ev.iter().filter(|e| e.state == LinkState::Down).collect();
        let ups: Vec<_> = ev.iter().filter(|e| e.state == LinkState::Up).collect();
        assert_eq!((downs.len(), ups.len()), (8, 6));
        for (k, chunk) in downs.chunks(2).enumerate() {
            assert!(chunk.iter().all(|e| e.at == Time::from_us(50 + 100 * k as u64)));
            assert_ne!(chunk[0].between, chunk[1].between);
        }
        for (k, chunk) in ups.chunks(2).enumerate() {
            assert!(chunk.iter().all(|e| e.at == Time::from_us(150 + 100 * k as u64)));
            assert_eq!(chunk.iter().map(|e| e.between).collect::<Vec<_>>(), downs[2 * k..2 * k + 2].iter().map(|e| e.between).collect::<Vec<_>>());
        }
        // Time order, and at one instant the ups come first.
        assert!(ev.windows(2).all(|w| w[0].at < w[1].at || (w[0].at == w[1].at && !(w[0].state == LinkState::Down && w[1].state == LinkState::Up))));
        // Over many rounds every candidate fails at some point, and the draw depends on the seed.
        let many = FailureSpec { interval: Time::from_us(1), start: Time::ZERO, ..f.clone() }.events(&topo, Time::from_us(200), 7);
        let hit: std::collections::BTreeSet<_> = many.iter().map(|e| e.between).collect();
        assert_eq!(hit.len(), 16);
        assert_ne!(f.events(&topo, Time::from_us(400), 8).iter().map(|e| e.between).collect::<Vec<_>>(), ev.iter().map(|e| e.between).collect::<Vec<_>>());
    }

    #[test]
    fn at_least_one_link_fails_and_stop_ends_the_failures() {
        let topo = fabric();
        let f = FailureSpec { fraction: 0.01, interval: Time::from_us(100), start: Time::ZERO, stop: Some(Time::from_us(150)) };
        assert_eq!(f.per_interval(16), 1);
        let ev = f.events(&topo, Time::from_us(1000), 1);
        // Down at 0 and 100 µs; the second set comes back at 200 µs and nothing fails after.
        let times: Vec<_> = ev.iter().map(|e| (e.at.as_ns(), e.state == LinkState::Down)).collect();
        assert_eq!(times, vec![(0, true), (100_000, false), (100_000, true), (200_000, false)]);
    }
}
