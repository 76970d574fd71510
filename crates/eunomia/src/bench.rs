//! Packet arrivals processed per second on the real CPU by the ordering layer, for many
//! concurrent connections with a given fraction of packets reordered (the component
//! benchmark), and the bytes the bitmaps take meanwhile.

use crate::memory::NULL;
use crate::reorder::{displaced_order, SplitMix};
use crate::{Arrival, Config, OrderingLayer};
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct BenchResult {
    pub connections: u32,
    pub arrivals: u64,
    pub elapsed: Duration,
    /// Arrivals that found an earlier sequence of their connection still missing.
    pub out_of_order_fraction: f64,
    /// Mean over samples (every 1/64 of the run) of bytes in use per connection.
    pub mean_bytes_per_connection: f64,
    /// Mean over samples of bytes per connection holding a bitmap.
    pub mean_bytes_per_reordering_connection: f64,
    pub peak_bytes: u64,
    pub refused: u64,
    /// Every arrival went in order, in the end, and every block was freed at the last packet.
    pub all_delivered: bool,
}

impl BenchResult {
    pub fn arrivals_per_sec(&self) -> f64 {
        self.arrivals as f64 / self.elapsed.as_secs_f64()
    }
}

/// `connections` connections each receive `rounds` messages of `packets` packets; in every
/// message, a fraction `displaced` of the packets is overtaken by up to `max_shift` later
/// ones (so about `displaced × (max_shift + 1) / 2` of the arrivals are out of order); the arrivals of all connections interleave at random. The last packet of each message
/// carries the last-packet bit, so bitmaps are created, grown, merged and released throughout.
pub fn run(cfg: Config, connections: u32, packets: u32, rounds: u32, displaced: f64, max_shift: u32, seed: u64) -> BenchResult {
    let mut rng = SplitMix(seed);
    // One message's arrivals for every connection, interleaved: (connection, offset).
    let orders: Vec<Vec<u32>> = (0..connections).map(|_| displaced_order(packets, displaced, max_shift, &mut rng)).collect();
    let late: usize = orders.iter().map(|o| crate::reorder::out_of_order(o)).sum();
    let mut cursor = vec![0u32; connections as usize];
    let mut left: Vec<u32> = (0..connections).collect();
    let mut trace: Vec<(u32, u32)> = Vec::with_capacity(connections as usize * packets as usize);
    while !left.is_empty() {
        let k = rng.below(left.len() as u64) as usize;
        let c = left[k];
        trace.push((c, orders[c as usize][cursor[c as usize] as usize]));
        cursor[c as usize] += 1;
        if cursor[c as usize] == packets {
            left.swap_remove(k);
        }
    }
    let mut layer = OrderingLayer::new(cfg);
    // Each connection's context holds its expected sequence and its DBA side by side.
    let mut ctx: Vec<(u32, u32)> = vec![(0, NULL); connections as usize];
    let sample_every = (trace.len() / 64).max(1);
    let (mut bytes_sum, mut per_active_sum, mut samples, mut active_samples) = (0f64, 0f64, 0u32, 0u32);
    // What a datapath sees of its next packets: the connection of the arrival `AHEAD` on,
    // whose bitmap metadata it fetches meanwhile (3 ran fastest here; 6 and more, slower).
    const AHEAD: usize = 3;
    let upcoming: Vec<u32> = trace.iter().skip(AHEAD).map(|&(c, _)| c).chain(std::iter::repeat_n(trace.first().map_or(0, |t| t.0), AHEAD.min(trace.len()))).collect();
    let start = Instant::now();
    for r in 0..rounds {
        let base = r.wrapping_mul(packets);
        for (arrivals, ahead) in trace.chunks(sample_every).zip(upcoming.chunks(sample_every)) {
            let bytes = layer.memory().bytes_in_use() as f64;
            bytes_sum += bytes / connections as f64;
            if layer.active() > 0 {
                per_active_sum += bytes / layer.active() as f64;
                active_samples += 1;
            }
            samples += 1;
            for (&(c, off), &f) in arrivals.iter().zip(ahead) {
                layer.prefetch_metadata(ctx[f as usize].1);
                let psn = base.wrapping_add(off);
                let (expected, dba) = &mut ctx[c as usize];
                if let Arrival::InOrder { next } = layer.arrive(dba, *expected, psn, off == packets - 1) {
                    *expected = next;
                }
            }
        }
    }
    let elapsed = start.elapsed();
    let stats = *layer.stats();
    let all_delivered = ctx.iter().all(|&(e, _)| e == rounds.wrapping_mul(packets)) && layer.memory().bytes_in_use() == 0;
    BenchResult {
        connections,
        arrivals: trace.len() as u64 * rounds as u64,
        elapsed,
        out_of_order_fraction: late as f64 / trace.len() as f64,
        mean_bytes_per_connection: bytes_sum / samples as f64,
        mean_bytes_per_reordering_connection: per_active_sum / active_samples.max(1) as f64,
        peak_bytes: layer.memory().peak_bytes(),
        refused: stats.refused_cap + stats.refused_memory,
        all_delivered,
    }
}
