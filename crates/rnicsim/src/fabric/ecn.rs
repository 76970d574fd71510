//! RED-style ECN marking as configured for DCQCN (Zhu et al., SIGCOMM 2015, §3.1; the curve
//! HPCC's simulator uses): below `kmin` nothing is marked, above `kmax` everything is, and in
//! between the probability rises linearly from 0 to `pmax`. The queue length is that of the
//! egress queue the packet leaves, measured as it leaves.

use crate::units::Bytes;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EcnCurve {
    pub kmin: Bytes,
    pub kmax: Bytes,
    pub pmax: f64,
}

impl EcnCurve {
    /// Marking probability for an egress queue holding `queue` bytes.
    pub fn probability(&self, queue: u64) -> f64 {
        if queue <= self.kmin.0 {
            0.0
        } else if queue > self.kmax.0 {
            1.0
        } else {
            self.pmax * (queue - self.kmin.0) as f64 / (self.kmax.0 - self.kmin.0).max(1) as f64
        }
    }

    /// Marking decision given a uniform draw `u` in [0, 1).
    #[inline]
    pub fn should_mark(&self, queue: u64, u: f64) -> bool {
        queue > self.kmin.0 && (queue > self.kmax.0 || u < self.probability(queue))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::rng;
    use rand::Rng;

    #[test]
    fn curve_matches_definition() {
        let c = EcnCurve { kmin: Bytes(100_000), kmax: Bytes(400_000), pmax: 0.2 };
        assert_eq!(c.probability(50_000), 0.0);
        assert_eq!(c.probability(100_000), 0.0);
        assert!((c.probability(250_000) - 0.1).abs() < 1e-12);
        assert!((c.probability(400_000) - 0.2).abs() < 1e-12);
        assert_eq!(c.probability(400_001), 1.0);
    }

    #[test]
    fn marking_frequency_follows_curve() {
        let c = EcnCurve { kmin: Bytes(10_000), kmax: Bytes(50_000), pmax: 0.5 };
        let mut r = rng::stream(3, "ecn-test", 0);
        for q in [5_000u64, 20_000, 30_000, 45_000, 60_000] {
            let n = 200_000;
            let marks = (0..n).filter(|_| c.should_mark(q, r.random())).count();
            let p = c.probability(q);
            let sd = (p * (1.0 - p) / n as f64).sqrt();
            let got = marks as f64 / n as f64;
            assert!((got - p).abs() <= 5.0 * sd + 1e-9, "q={q}: marked {got}, curve says {p}");
        }
    }
}
