//! Packets released per second on the real CPU, Tassel beside the monolithic baseline, for a
//! number of always-backlogged flows with mixed rate limits summing to the link rate.

use crate::{Config, Decision, Monolithic, Tassel, WqeSource};
use std::time::{Duration, Instant};

/// Every flow always has packets of one size (fetching never consumes host state).
struct Endless {
    len: u32,
}

impl WqeSource for Endless {
    fn fetch(&mut self, _: u32, _: u32, max: u32, out: &mut Vec<u32>) {
        out.extend(std::iter::repeat_n(self.len, max as usize));
    }
    fn consume(&mut self, _: u32) {}
}

#[derive(Clone, Debug)]
pub struct BenchResult {
    pub flows: usize,
    pub packets: u64,
    pub tassel: Duration,
    pub baseline: Duration,
    /// Fetched packets the filter dropped, per packet sent.
    pub dropped_per_sent: f64,
    /// Imminent packets held at the end of the timed run.
    pub imminent_at_end: usize,
}

impl BenchResult {
    pub fn tassel_pps(&self) -> f64 {
        self.packets as f64 / self.tassel.as_secs_f64()
    }
    pub fn baseline_pps(&self) -> f64 {
        self.packets as f64 / self.baseline.as_secs_f64()
    }
}

/// Rate of flow `i` of `flows`: weights 1, 2, 4, 8 in turn, scaled so that they sum to 98% of
/// the link (full load, without a standing queue).
fn rate(i: usize, flows: usize, link_bps: u64) -> u64 {
    let w = [1u64, 2, 4, 8];
    let total: u64 = (0..flows).map(|j| w[j % 4]).sum();
    (link_bps as u128 * 98 * w[i % 4] as u128 / (100 * total as u128)) as u64
}

/// When flow `i` first wakes: spread over one of its packet intervals, so that flows do not all
/// start at once (a fixed hash, the same for both schedulers).
fn first_wake(i: usize, interval_ps: u64) -> u64 {
    let h = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11;
    h % interval_ps.max(1)
}

/// Wakes flows at their times and releases `warmup` packets, then times the next `packets`.
fn time_releases(mut poll: impl FnMut(u64) -> Decision, mut wake: impl FnMut(u32, u64), wakes: &[(u64, u32)], warmup: u64, packets: u64) -> Duration {
    let mut now = 0;
    let mut sent = 0;
    let mut next_wake = 0;
    let mut start = Instant::now();
    while sent < warmup + packets {
        while next_wake < wakes.len() && wakes[next_wake].0 <= now {
            wake(wakes[next_wake].1, now);
            next_wake += 1;
        }
        let pending = wakes.get(next_wake).map(|w| w.0);
        match poll(now) {
            Decision::Send { .. } => {
                sent += 1;
                if sent == warmup {
                    start = Instant::now();
                }
            }
            Decision::Idle { until } => {
                now = match (until, pending) {
                    (Some(t), Some(w)) => t.min(w),
                    (Some(t), None) => t,
                    (None, Some(w)) => w,
                    (None, None) => unreachable!("flows are always backlogged"),
                }
            }
        }
    }
    start.elapsed()
}

pub fn run(flows: usize, packets: u64, packet_bytes: u32) -> BenchResult {
    let cfg = Config { typical_packet_bytes: packet_bytes, ..Config::default() };
    let warmup = flows as u64 * 4 + 100_000;
    let rates: Vec<u64> = (0..flows).map(|f| rate(f, flows, cfg.link_bps)).collect();
    let mut wakes: Vec<(u64, u32)> = (0..flows).map(|f| (first_wake(f, crate::tx_ps(packet_bytes, (rates[f] / 1000) as u32)), f as u32)).collect();
    wakes.sort_unstable();
    let mut src = Endless { len: packet_bytes };

    let mut t = Tassel::new(cfg, flows);
    for (f, &r) in rates.iter().enumerate() {
        t.set_rate(f as u32, r, 0);
    }
    let tassel = {
        let t = std::cell::RefCell::new(&mut t);
        let mut src2 = Endless { len: packet_bytes };
        time_releases(|now| t.borrow_mut().poll(now, &mut src2), |f, now| t.borrow_mut().wake(f, now), &wakes, warmup, packets)
    };
    let imminent_at_end = t.imminent();
    let dropped_per_sent = t.dropped_fetches as f64 / (warmup + packets) as f64;

    let mut m = Monolithic::new(cfg, flows);
    for (f, &r) in rates.iter().enumerate() {
        m.set_rate(f as u32, r, 0);
    }
    let baseline = {
        let m = std::cell::RefCell::new(&mut m);
        let mut src2 = Endless { len: packet_bytes };
        time_releases(|now| m.borrow_mut().poll(now, &mut src2), |f, now| m.borrow_mut().wake(f, now, &mut src), &wakes, warmup, packets)
    };
    BenchResult { flows, packets, tassel, baseline, dropped_per_sent, imminent_at_end }
}
