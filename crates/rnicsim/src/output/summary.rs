//! Totals of a finished run, written as `summary.json` and printed by the CLI.

use crate::world::World;
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct TrafficSummary {
    pub index: u32,
    pub senders: u32,
    pub tx_packets: u64,
    pub rx_packets: u64,
    /// Sum over senders of bytes sent × 8 / duration (below the configured load when the
    /// fabric pushes back).
    pub sent_gbps: f64,
    /// Sum over senders of bytes delivered × 8 / duration.
    pub delivered_gbps: f64,
    pub latency_mean_ns: f64,
    pub latency_max_ns: f64,
    /// Fraction of delivered packets that carried an ECN congestion mark.
    pub ecn_ce_fraction: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub name: String,
    pub seed: u64,
    pub duration_ps: u64,
    pub events: u64,
    pub packet_hops: u64,
    pub packets_sent: u64,
    pub packets_delivered: u64,
    pub drops_buffer: u64,
    pub drops_link_down: u64,
    pub drops_corrupt: u64,
    pub drops_unroutable: u64,
    pub ecn_marks: u64,
    pub pfc_pauses_sent: u64,
    pub pfc_frames: u64,
    /// Port-seconds of pause, summed over ports and classes.
    pub paused_seconds: f64,
    pub max_queue_bytes: u64,
    pub peak_packets: u64,
    pub traffic: Vec<TrafficSummary>,
}

impl Summary {
    pub fn of(world: &World, name: &str) -> Summary {
        let sum = |f: fn(&crate::fabric::port::PortCounters) -> u64| world.ports.iter().map(|p| f(&p.counters)).sum::<u64>();
        let secs = world.end.as_secs_f64();
        let n_traffic = world.sources.iter().map(|s| s.traffic + 1).max().unwrap_or(0);
        let traffic = (0..n_traffic)
            .map(|t| {
                let members = || world.sources.iter().zip(&world.flows).filter(move |(s, _)| s.traffic == t);
                let rx_packets: u64 = members().map(|(_, f)| f.rx_packets).sum();
                let lat_sum: u128 = members().map(|(_, f)| f.latency_sum).sum();
                TrafficSummary {
                    index: t,
                    senders: members().count() as u32,
                    tx_packets: members().map(|(s, _)| s.sent_packets).sum(),
                    rx_packets,
                    sent_gbps: members().map(|(s, _)| s.sent_bytes).sum::<u64>() as f64 * 8.0 / secs / 1e9,
                    delivered_gbps: members().map(|(_, f)| f.rx_bytes).sum::<u64>() as f64 * 8.0 / secs / 1e9,
                    latency_mean_ns: if rx_packets == 0 { 0.0 } else { lat_sum as f64 / rx_packets as f64 / 1e3 },
                    latency_max_ns: members().map(|(_, f)| f.latency_max.0).max().unwrap_or(0) as f64 / 1e3,
                    ecn_ce_fraction: if rx_packets == 0 { 0.0 } else { members().map(|(_, f)| f.ecn_ce).sum::<u64>() as f64 / rx_packets as f64 },
                }
            })
            .collect();
        Summary {
            name: name.to_string(),
            seed: world.seed,
            duration_ps: world.end.0,
            events: world.stats.events,
            packet_hops: world.stats.packet_hops,
            packets_sent: world.stats.packets_sent,
            packets_delivered: world.stats.packets_delivered,
            drops_buffer: sum(|c| c.drops_buffer),
            drops_link_down: sum(|c| c.drops_link_down),
            drops_corrupt: sum(|c| c.drops_corrupt),
            drops_unroutable: world.stats.drops_unroutable,
            ecn_marks: sum(|c| c.ecn_marks),
            pfc_pauses_sent: sum(|c| c.pause_tx),
            pfc_frames: world.stats.pfc_frames,
            paused_seconds: sum(|c| c.paused_rx_ps) as f64 / 1e12,
            max_queue_bytes: world.ports.iter().map(|p| p.counters.max_queue_bytes).max().unwrap_or(0),
            peak_packets: world.stats.peak_packets,
            traffic,
        }
    }
}
