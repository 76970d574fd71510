//! Arrival orders with a known amount of reordering, for benchmarks, tests and the memory
//! experiment of §4 (Fig. 9): a fraction of a connection's packets each arrive after up to a
//! given number of later ones.

/// A small deterministic generator (SplitMix64), so the component needs no dependency.
#[derive(Clone, Debug)]
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64) < p
    }
}

/// The order in which sequences `0..packets` of one connection arrive when each, with
/// probability `fraction`, is overtaken by the next `1..=max_shift` packets (it arrives just
/// after sequence `i + shift`).
pub fn displaced_order(packets: u32, fraction: f64, max_shift: u32, rng: &mut SplitMix) -> Vec<u32> {
    let mut keyed: Vec<(u64, u32)> = (0..packets)
        .map(|i| {
            let key = if max_shift > 0 && rng.chance(fraction) {
                let shift = 1 + rng.below(max_shift as u64);
                (i as u64 + shift) * 2 + 1
            } else {
                i as u64 * 2
            };
            (key, i)
        })
        .collect();
    keyed.sort_unstable();
    keyed.into_iter().map(|(_, i)| i).collect()
}

/// Arrivals that find an earlier sequence still missing: the packets a receiver sees out of
/// order (each displaced packet makes up to `shift` of them).
pub fn out_of_order(order: &[u32]) -> usize {
    let mut next = 0u32;
    let mut seen = std::collections::BTreeSet::new();
    let mut late = 0;
    for &s in order {
        if s != next {
            late += 1;
            seen.insert(s);
        } else {
            next += 1;
            while seen.remove(&next) {
                next += 1;
            }
        }
    }
    late
}
