//! How fast libYama's scheduler decides, on the real CPU: `qps` queue pairs of one chain with
//! weights 1, 2, 3, 4 (repeating), all with work, each submitting `size`-byte pieces as soon as
//! its tokens allow; `decisions` calls of [`ChainScheduler::try_send`] are timed, and the bytes
//! each queue pair got are compared with its weighted share.

use crate::ChainScheduler;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

pub struct Report {
    pub decisions: u64,
    pub sent: u64,
    pub elapsed: Duration,
    /// Largest |got − share| / share over the queue pairs.
    pub worst_share_error: f64,
}

impl Report {
    pub fn decisions_per_sec(&self) -> f64 {
        self.decisions as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

pub fn run(qps: usize, decisions: u64, size: u64) -> Report {
    assert!(qps > 0 && size > 0);
    let estimate = 12.5e9; // 100 Gbps
    let mut s = ChainScheduler::new(estimate, 4096.0);
    let weights: Vec<f64> = (0..qps).map(|i| (i % 4 + 1) as f64).collect();
    let total: f64 = weights.iter().sum();
    for (q, w) in weights.iter().enumerate() {
        s.add_qp(w / total, 0);
        s.set_busy(q, true, 0);
    }
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = (0..qps).map(|q| Reverse((0, q))).collect();
    let mut got = vec![0u64; qps];
    let (mut n, mut sent, mut now) = (0u64, 0u64, 0u64);
    let start = Instant::now();
    while n < decisions {
        let Reverse((t, q)) = heap.pop().expect("queue pairs");
        now = now.max(t);
        n += 1;
        match s.try_send(q, size, now) {
            Ok(()) => {
                got[q] += size;
                sent += 1;
                heap.push(Reverse((now, q)));
            }
            Err(at) => heap.push(Reverse((at, q))),
        }
    }
    let elapsed = start.elapsed();
    let all: u64 = got.iter().sum();
    let worst = got.iter().zip(&weights).map(|(&g, w)| ((g as f64 - all as f64 * w / total) / (all as f64 * w / total)).abs()).fold(0.0, f64::max);
    Report { decisions: n, sent, elapsed, worst_share_error: worst }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_bench_splits_by_weight() {
        let r = super::run(16, 200_000, 1000);
        assert!(r.sent > 0 && r.worst_share_error < 0.05, "{}", r.worst_share_error);
    }
}
