//! SCR's measurements (paper §6.1's definitions): events collected and handled per kind, the
//! coalescing granularity (bytes per handled event), the event rate and the processing rate
//! (event rate × granularity), queue overflows, and how busy the threads were.

use super::event::Kind;
use super::telemetry::{TelemetryStats, TelemetrySummary};
use crate::units::Time;
use serde::Serialize;

/// Counters of one NIC's processor.
#[derive(Clone, Debug, Default)]
pub struct ScrStats {
    pub flows: u64,
    /// Events the collectors raised, per kind.
    pub collected: [u64; Kind::COUNT],
    /// Events a thread ran the policy on (after coalescing), their bytes and how many collected
    /// events they stood for.
    pub handled: [u64; Kind::COUNT],
    pub handled_bytes: [u64; Kind::COUNT],
    pub coalesced: [u64; Kind::COUNT],
    /// Hand-offs a thread cut short (threshold strategy, stable flow).
    pub parked: [u64; Kind::COUNT],
    /// Events lost to full software rings.
    pub dropped: [u64; Kind::COUNT],
    /// Events still queued when their flow left, never handed to the policy.
    pub discarded: [u64; Kind::COUNT],
    /// Thread time spent (summed over threads).
    pub busy_ps: u64,
    pub rate_sets: u64,
    pub last_rate_set: Time,
    /// The host-domain telemetry's samples (`nic.scr.telemetry`).
    pub telemetry: TelemetryStats,
}

impl ScrStats {
    pub fn add(&mut self, o: &ScrStats) {
        self.flows += o.flows;
        for k in 0..Kind::COUNT {
            self.collected[k] += o.collected[k];
            self.handled[k] += o.handled[k];
            self.handled_bytes[k] += o.handled_bytes[k];
            self.coalesced[k] += o.coalesced[k];
            self.parked[k] += o.parked[k];
            self.dropped[k] += o.dropped[k];
            self.discarded[k] += o.discarded[k];
        }
        self.busy_ps += o.busy_ps;
        self.rate_sets += o.rate_sets;
        self.last_rate_set = self.last_rate_set.max(o.last_rate_set);
        self.telemetry.add(&o.telemetry);
    }

    /// The counts since `base` (an earlier reading of the same processor): the event counts,
    /// thread time and rate sets of the window after it. The flows, the last rate set and the
    /// telemetry stay whole-run figures.
    pub fn since(&self, base: &ScrStats) -> ScrStats {
        let d = |a: &[u64; Kind::COUNT], b: &[u64; Kind::COUNT]| std::array::from_fn(|k| a[k] - b[k]);
        ScrStats {
            flows: self.flows,
            collected: d(&self.collected, &base.collected),
            handled: d(&self.handled, &base.handled),
            handled_bytes: d(&self.handled_bytes, &base.handled_bytes),
            coalesced: d(&self.coalesced, &base.coalesced),
            parked: d(&self.parked, &base.parked),
            dropped: d(&self.dropped, &base.dropped),
            discarded: d(&self.discarded, &base.discarded),
            busy_ps: self.busy_ps - base.busy_ps,
            rate_sets: self.rate_sets - base.rate_sets,
            last_rate_set: self.last_rate_set,
            telemetry: self.telemetry,
        }
    }
}

/// One event kind's line in `summary.json`.
#[derive(Clone, Debug, Serialize)]
pub struct KindSummary {
    pub name: String,
    pub collected: u64,
    pub handled: u64,
    /// Thread hand-offs, handled or parked, per second (the paper's event rate), millions.
    pub event_rate_m: f64,
    /// Bytes per handled event (coalescing granularity).
    pub granularity_bytes: f64,
    /// Collected events per handled event.
    pub events_per_handled: f64,
    /// Bytes of the handled events per second, Gbps (for TX: the bytes the processor kept up
    /// with); event rate × granularity when nothing was parked.
    pub processing_gbps: f64,
    pub parked: u64,
    pub dropped: u64,
    /// Events still queued when their flow left (never handed to the policy).
    pub discarded: u64,
}

/// The `scr` section of `summary.json` (all NICs with SCR summed).
#[derive(Clone, Debug, Serialize)]
pub struct ScrSummary {
    pub policy: String,
    pub nics: u32,
    pub threads: u32,
    pub flows: u64,
    /// Bytes of per-flow context the policy keeps, and the NIC's limit.
    pub context_bytes: u32,
    pub context_limit_bytes: u32,
    pub kinds: Vec<KindSummary>,
    /// Mean busy share of every thread (the per-flow ones and the per-node pool's) over the
    /// measurement window, counting only the part of each run inside it.
    pub thread_utilization: f64,
    pub rate_sets: u64,
    /// When the last rate set took effect, µs (after it, every flow's rate was stable).
    pub last_rate_set_us: f64,
    /// Each NIC whose processor saw events, on its own.
    pub per_nic: Vec<NicScrSummary>,
    /// Largest over smallest TX coalescing granularity among the NICs with at least as many
    /// flows as threads (§4.3.3's granularity invariance: 1.0); absent with fewer than two.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub granularity_spread: Option<f64>,
}

/// One NIC's processor: its flows and its TX events (§6.1's Fig. 10 per NIC).
#[derive(Clone, Debug, Serialize)]
pub struct NicScrSummary {
    /// `host <node>`.
    pub name: String,
    pub flows: u64,
    pub tx_handled: u64,
    pub tx_event_rate_m: f64,
    pub tx_granularity_bytes: f64,
    pub tx_processing_gbps: f64,
    pub dropped: u64,
    pub last_rate_set_us: f64,
    /// The policy's own figures at the end of the run (Swift: rates and target delays).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub policy: std::collections::BTreeMap<String, f64>,
    /// Its host-domain telemetry (`nic.scr.telemetry`), means over the samples.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<TelemetrySummary>,
    /// The RTT probe answers it collected, per UDP source port (path), in port order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rtt_probes: Vec<PathRtt>,
}

/// One path's RTT probe answers over the run (paper A.7, Fig. 19).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PathRtt {
    /// `port <sport>`.
    pub name: String,
    pub samples: u64,
    pub min_us: f64,
    pub mean_us: f64,
    pub max_us: f64,
    /// The last answer's.
    pub last_us: f64,
}

impl PathRtt {
    /// Per NIC (host node) and source port, the answers `(node, sport, rtt)` of a log in time
    /// order, in one pass.
    pub fn per_node(samples: impl Iterator<Item = (u32, u16, crate::units::Time)>) -> std::collections::BTreeMap<u32, Vec<PathRtt>> {
        struct Acc {
            n: u64,
            min: u64,
            max: u64,
            sum: u128,
            last: u64,
        }
        let mut by_path: std::collections::BTreeMap<(u32, u16), Acc> = std::collections::BTreeMap::new();
        for (node, sport, rtt) in samples {
            let a = by_path.entry((node, sport)).or_insert(Acc { n: 0, min: u64::MAX, max: 0, sum: 0, last: 0 });
            a.n += 1;
            a.min = a.min.min(rtt.0);
            a.max = a.max.max(rtt.0);
            a.sum += rtt.0 as u128;
            a.last = rtt.0;
        }
        let us = |ps: u64| ps as f64 / 1e6;
        let mut out: std::collections::BTreeMap<u32, Vec<PathRtt>> = std::collections::BTreeMap::new();
        for ((node, sport), a) in by_path {
            let mean_us = a.sum as f64 / a.n as f64 / 1e6;
            out.entry(node).or_default().push(PathRtt { name: format!("port {sport}"), samples: a.n, min_us: us(a.min), mean_us, max_us: us(a.max), last_us: us(a.last) });
        }
        out
    }
}

impl NicScrSummary {
    pub fn new(name: String, s: &ScrStats, secs: f64, policy: Vec<(&'static str, f64)>) -> NicScrSummary {
        let i = Kind::Tx.index();
        let per_s = |x: f64| if secs > 0.0 { x / secs } else { 0.0 };
        NicScrSummary {
            name,
            flows: s.flows,
            tx_handled: s.handled[i],
            tx_event_rate_m: per_s((s.handled[i] + s.parked[i]) as f64) / 1e6,
            tx_granularity_bytes: if s.handled[i] == 0 { 0.0 } else { s.handled_bytes[i] as f64 / s.handled[i] as f64 },
            tx_processing_gbps: per_s(s.handled_bytes[i] as f64 * 8.0) / 1e9,
            dropped: s.dropped.iter().sum(),
            last_rate_set_us: s.last_rate_set.0 as f64 / 1e6,
            policy: policy.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            telemetry: TelemetrySummary::new(&s.telemetry),
            rtt_probes: Vec::new(),
        }
    }
}

impl ScrSummary {
    /// Summarizes `stats` of `nics` processors of `threads` threads each over `secs` seconds.
    /// `threads` per-flow threads per NIC, `all_threads` with the per-node pool's.
    #[allow(clippy::too_many_arguments)]
    pub fn new(policy: &str, nics: u32, threads: u32, all_threads: u32, context_bytes: usize, stats: &ScrStats, secs: f64, per_nic: Vec<NicScrSummary>) -> ScrSummary {
        let kinds = Kind::ALL
            .iter()
            .filter(|k| stats.collected[k.index()] > 0)
            .map(|&k| {
                let i = k.index();
                let h = stats.handled[i];
                let per = |x: f64| if h == 0 { 0.0 } else { x / h as f64 };
                let rate = if secs > 0.0 { (h + stats.parked[i]) as f64 / secs } else { 0.0 };
                KindSummary {
                    name: k.name().to_string(),
                    collected: stats.collected[i],
                    handled: h,
                    event_rate_m: rate / 1e6,
                    granularity_bytes: per(stats.handled_bytes[i] as f64),
                    events_per_handled: per(stats.coalesced[i] as f64),
                    processing_gbps: if secs > 0.0 { stats.handled_bytes[i] as f64 * 8.0 / secs / 1e9 } else { 0.0 },
                    parked: stats.parked[i],
                    dropped: stats.dropped[i],
                    discarded: stats.discarded[i],
                }
            })
            .collect();
        let total = nics as f64 * all_threads as f64 * secs * 1e12;
        ScrSummary {
            policy: policy.to_string(),
            nics,
            threads,
            flows: stats.flows,
            context_bytes: context_bytes as u32,
            context_limit_bytes: super::policy::FLOW_CONTEXT_BYTES as u32,
            kinds,
            thread_utilization: if total > 0.0 { stats.busy_ps as f64 / total } else { 0.0 },
            rate_sets: stats.rate_sets,
            last_rate_set_us: stats.last_rate_set.0 as f64 / 1e6,
            granularity_spread: {
                let g: Vec<f64> = per_nic.iter().filter(|n| n.flows >= threads as u64 && n.tx_handled > 0).map(|n| n.tx_granularity_bytes).collect();
                (g.len() >= 2).then(|| g.iter().cloned().fold(0.0, f64::max) / g.iter().cloned().fold(f64::MAX, f64::min))
            },
            per_nic,
        }
    }
}

/// Jain's index of `x` as a summary reports it: none where there is nothing to share (no
/// values, or every one 0), where [`jain`]'s 1 would read as a perfectly fair split.
pub fn jain_reported(x: &[f64]) -> Option<f64> {
    x.iter().any(|&v| v != 0.0).then(|| jain(x))
}

/// Jain's fairness index of `x`: (Σx)² / (n·Σx²); 1 when all are equal, 1/n when one has all.
/// It is at most 1 (Cauchy-Schwarz); rounding can put an equal split a unit in the last place
/// above it, which is taken back (a claim `jain <= 1` failed on 1.0000000000000004).
pub fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    if x.is_empty() || s2 == 0.0 {
        return 1.0;
    }
    let j = s * s / (x.len() as f64 * s2);
    // (Not `min`, which would turn a NaN into 1.)
    if j > 1.0 { 1.0 } else { j }
}

#[cfg(test)]
mod tests {
    use super::jain;

    #[test]
    fn jains_index_of_known_splits() {
        assert_eq!(jain(&[5.0, 5.0, 5.0, 5.0]), 1.0);
        assert!((jain(&[1.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
        // 30/70: 100² / (2 · (900 + 4900)) = 10000 / 11600.
        assert!((jain(&[30.0, 70.0]) - 10000.0 / 11600.0).abs() < 1e-12);
        // Equal splits whose rounding gave 1 + 2^-52.
        assert_eq!(jain(&[0.7; 5]), 1.0);
        assert_eq!(jain(&[9.87; 3]), 1.0);
        // Not a number stays one (taking the lower of it and 1 made it a perfect split).
        assert!(jain(&[f64::NAN, 1.0]).is_nan());
    }
}
