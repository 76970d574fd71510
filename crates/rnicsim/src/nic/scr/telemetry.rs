//! SCR's host-domain collectors (paper §4.3.1, Table 3; A.10's telemetry threads): every
//! `nic.scr.telemetry` period the NIC reads its PCIe traffic per direction and its port's, and
//! times a 64-byte ping-pong across PCIe ([`crate::nic::pcie::Pcie::ping_pong`]), which queues
//! behind the DMA traffic and so rises with it. The readings become two node-level events
//! ([`Kind::Pcie`], [`Kind::Port`]) for the per-node thread pool, and their running figures go
//! to `summary.json` (`scr.per_nic[].telemetry`).
//!
//! Utilization is the share of the period a channel was busy, in per mille: for PCIe, each
//! direction's busy time up to the sample (work queued beyond it counts in the next period, and
//! so does busy time a period cannot hold: a prefetched read is dated back, into a period
//! already sampled, and a period is at most all busy); for
//! the port, the bytes serialized in the period (the packet on the wire by the part sent) × 8
//! at the line rate.

use super::event::{Kind, ScrEvent, NODE_FLOW};
use crate::units::{BitsPerSec, Time};
use serde::Serialize;

/// The counters a sample reads: PCIe busy time each way and the port's bytes each way, all up
/// to the sample's time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Readings {
    pub pcie_read_busy: Time,
    pub pcie_write_busy: Time,
    pub port_tx: u64,
    pub port_rx: u64,
}

/// One NIC's collector: the readings at its previous sample, when the next is due, and the
/// PCIe readings whose pong is still on its way back.
#[derive(Clone, Debug, Default)]
pub struct Meter {
    at: Time,
    last: Readings,
    pub next: Time,
    pub pending: std::collections::VecDeque<ScrEvent>,
}

impl Meter {
    /// A collector whose first sample is due at `first`.
    pub fn first_at(first: Time) -> Meter {
        Meter { next: first, ..Meter::default() }
    }
}

/// `bytes` over `dt` at `rate`, per mille (to the nearest).
pub fn permille(bytes: u64, rate: BitsPerSec, dt: Time) -> u32 {
    let cap = rate.0 as u128 * dt.0 as u128; // bits × 10¹² per period
    if cap == 0 {
        return 0;
    }
    // Rounded to the nearest per mille: truncation would bias every sample, and so the means
    // in `summary.json`, low by up to one per mille (a channel always slightly busy read 0).
    ((bytes as u128 * 8 * 1000 * 1_000_000_000_000 + cap / 2) / cap).min(u32::MAX as u128) as u32
}

/// `busy` time over `dt`, per mille (to the nearest). At most 1000: a payload read the NIC
/// prefetched is dated up to the prefetch depth back ([`crate::nic::pcie`]), so a period can be
/// handed busy time from before it that the previous sample, taken while that time was still
/// idle, did not see ([`Meter::sample`] carries what a period cannot hold to the next).
pub fn busy_permille(busy: Time, dt: Time) -> u32 {
    if dt == Time::ZERO {
        return 0;
    }
    ((busy.0 as u128 * 1000 + dt.0 as u128 / 2) / dt.0 as u128).min(1000) as u32
}

impl Meter {
    /// The sample taken at `now` with counters `r`; the ping-pong's round trip is `rtt`
    /// (it came back at `now + rtt`, when the PCIe event is raised). Returns the PCIe and port
    /// events.
    pub fn sample(&mut self, now: Time, r: Readings, rtt: Time, line: BitsPerSec) -> [ScrEvent; 2] {
        let dt = now.saturating_sub(self.at);
        let d = |a: u64, b: u64| a.saturating_sub(b);
        let back = now + rtt;
        let ev = |kind, at, rtt, value, aux| ScrEvent { kind, flow: NODE_FLOW, at, first_at: at, bytes: 0, count: 1, rtt, value, aux };
        // Busy time new since the last sample, a period's worth at most: the rest is handed to
        // the next sample (clipped, a 100 Gbps stream over 200 Gbps PCIe sampled every 100 ns
        // read 0.32 where it is 0.49: reads dated back into sampled periods piled up in one).
        let read = r.pcie_read_busy.saturating_sub(self.last.pcie_read_busy).min(dt);
        let write = r.pcie_write_busy.saturating_sub(self.last.pcie_write_busy).min(dt);
        let out = [
            ev(Kind::Pcie, back, rtt, busy_permille(read, dt), busy_permille(write, dt)),
            ev(Kind::Port, now, Time::ZERO, permille(d(r.port_tx, self.last.port_tx), line, dt), permille(d(r.port_rx, self.last.port_rx), line, dt)),
        ];
        self.at = now;
        self.last = Readings { pcie_read_busy: self.last.pcie_read_busy + read, pcie_write_busy: self.last.pcie_write_busy + write, ..r };
        out
    }
}

/// One sample as `scr_telemetry.parquet` keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    pub at: Time,
    /// The NIC's host node.
    pub node: u32,
    pub pcie_read_permille: u32,
    pub pcie_write_permille: u32,
    pub pcie_rtt: Time,
    pub port_tx_permille: u32,
    pub port_rx_permille: u32,
}

impl Row {
    /// The sample of `node` whose events are `pcie` and `port` (taken at `port.at`).
    pub fn new(node: u32, [pcie, port]: &[ScrEvent; 2]) -> Row {
        Row { at: port.at, node, pcie_read_permille: pcie.value, pcie_write_permille: pcie.aux, pcie_rtt: pcie.rtt, port_tx_permille: port.value, port_rx_permille: port.aux }
    }
}

/// Running figures of one NIC's samples (or several NICs' summed).
#[derive(Clone, Copy, Debug, Default)]
pub struct TelemetryStats {
    /// Readings of each kind (a PCIe reading still on its way back at the end is not counted).
    pub pcie_samples: u64,
    pub port_samples: u64,
    pub pcie_rtt_sum_ps: u64,
    pub pcie_rtt_max_ps: u64,
    pub pcie_read_permille_sum: u64,
    pub pcie_write_permille_sum: u64,
    pub port_tx_permille_sum: u64,
    pub port_rx_permille_sum: u64,
}

impl TelemetryStats {
    /// Adds a sample's event (PCIe or port; others are ignored).
    pub fn record(&mut self, e: &ScrEvent) {
        match e.kind {
            Kind::Pcie => {
                self.pcie_samples += 1;
                self.pcie_rtt_sum_ps += e.rtt.0;
                self.pcie_rtt_max_ps = self.pcie_rtt_max_ps.max(e.rtt.0);
                self.pcie_read_permille_sum += e.value as u64;
                self.pcie_write_permille_sum += e.aux as u64;
            }
            Kind::Port => {
                self.port_samples += 1;
                self.port_tx_permille_sum += e.value as u64;
                self.port_rx_permille_sum += e.aux as u64;
            }
            _ => {}
        }
    }

    pub fn add(&mut self, o: &TelemetryStats) {
        self.pcie_samples += o.pcie_samples;
        self.port_samples += o.port_samples;
        self.pcie_rtt_sum_ps += o.pcie_rtt_sum_ps;
        self.pcie_rtt_max_ps = self.pcie_rtt_max_ps.max(o.pcie_rtt_max_ps);
        self.pcie_read_permille_sum += o.pcie_read_permille_sum;
        self.pcie_write_permille_sum += o.pcie_write_permille_sum;
        self.port_tx_permille_sum += o.port_tx_permille_sum;
        self.port_rx_permille_sum += o.port_rx_permille_sum;
    }
}

/// A NIC's telemetry in `summary.json`: means over its samples (utilizations as fractions).
#[derive(Clone, Debug, Serialize)]
pub struct TelemetrySummary {
    /// Samples taken (each a port reading and a PCIe one; the PCIe figures are over the
    /// ping-pongs that came back before the end).
    pub samples: u64,
    pub pcie_latency_mean_ns: f64,
    pub pcie_latency_max_ns: f64,
    /// Host → NIC (DMA reads: WQEs, payload to send) and NIC → host (payload received, CQEs).
    pub pcie_read_utilization: f64,
    pub pcie_write_utilization: f64,
    pub port_tx_utilization: f64,
    pub port_rx_utilization: f64,
}

impl TelemetrySummary {
    pub fn new(s: &TelemetryStats) -> Option<TelemetrySummary> {
        if s.port_samples == 0 {
            return None;
        }
        let (n, m) = (s.pcie_samples.max(1) as f64, s.port_samples as f64);
        Some(TelemetrySummary {
            samples: s.port_samples,
            pcie_latency_mean_ns: s.pcie_rtt_sum_ps as f64 / n / 1e3,
            pcie_latency_max_ns: s.pcie_rtt_max_ps as f64 / 1e3,
            pcie_read_utilization: s.pcie_read_permille_sum as f64 / n / 1000.0,
            pcie_write_utilization: s.pcie_write_permille_sum as f64 / n / 1000.0,
            port_tx_utilization: s.port_tx_permille_sum as f64 / m / 1000.0,
            port_rx_utilization: s.port_rx_permille_sum as f64 / m / 1000.0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utilization_of_known_byte_counts() {
        // 125,000 bytes in 10 µs is 100 Gbps: 500‰ of 200 Gbps, 1000‰ of 100 Gbps.
        let dt = Time::from_us(10);
        assert_eq!(permille(125_000, BitsPerSec::gbps(200), dt), 500);
        assert_eq!(permille(125_000, BitsPerSec::gbps(100), dt), 1000);
        assert_eq!(permille(0, BitsPerSec::gbps(100), dt), 0);
        assert_eq!(permille(1, BitsPerSec::gbps(100), Time::ZERO), 0);
        assert_eq!(busy_permille(Time::from_us(3), Time::from_us(4)), 750);
        // Busy time backdated into a period (a prefetched read) cannot make it more than busy.
        assert_eq!(busy_permille(Time::from_us(5), Time::from_us(4)), 1000);
        assert_eq!(busy_permille(Time::from_us(5), Time::ZERO), 0);
        // To the nearest per mille, not truncated: 0.6‰ busy reads 1, 0.4‰ reads 0; 62 bytes
        // in 10 µs at 100 Gbps (0.496‰) reads 0, 63 bytes (0.504‰) reads 1.
        assert_eq!(busy_permille(Time::from_ns(6), Time::from_us(10)), 1);
        assert_eq!(busy_permille(Time::from_ns(4), Time::from_us(10)), 0);
        assert_eq!(busy_permille(Time::from_ns(7_496), Time::from_us(10)), 750);
        assert_eq!(permille(62, BitsPerSec::gbps(100), dt), 0);
        assert_eq!(permille(63, BitsPerSec::gbps(100), dt), 1);
    }

    #[test]
    fn a_sample_reads_the_counters_since_the_previous_one() {
        let mut m = Meter::default();
        let l = BitsPerSec::gbps(100);
        // PCIe busy 5 µs reading and 1 µs writing of the first 10 µs.
        let r = Readings { pcie_read_busy: Time::from_us(5), pcie_write_busy: Time::from_us(1), port_tx: 62_500, port_rx: 0 };
        let [pcie, port] = m.sample(Time::from_us(10), r, Time::from_ns(1005), l);
        assert_eq!((pcie.kind, pcie.flow, pcie.value, pcie.aux, pcie.rtt), (Kind::Pcie, NODE_FLOW, 500, 100, Time::from_ns(1005)));
        // The PCIe reading is raised when the pong is back.
        assert_eq!(pcie.at, Time::from_us(10) + Time::from_ns(1005));
        assert_eq!((port.kind, port.value, port.aux, port.at), (Kind::Port, 500, 0, Time::from_us(10)));
        // The next period counts only what moved in it: 20 µs later, 10 µs more reading.
        let r2 = Readings { pcie_read_busy: Time::from_us(15), ..r };
        let [pcie, port] = m.sample(Time::from_us(30), r2, Time::from_ns(1005), l);
        assert_eq!((pcie.value, pcie.aux, port.value), (500, 0, 0));
        let mut s = TelemetryStats::default();
        s.record(&pcie);
        s.record(&port);
        let t = TelemetrySummary::new(&s).unwrap();
        assert_eq!((t.samples, t.pcie_latency_mean_ns, t.pcie_read_utilization), (1, 1005.0, 0.5));
    }

    #[test]
    fn busy_time_a_period_cannot_hold_is_carried_to_the_next_sample() {
        // 100 ns periods; 150 ns of reading dated into the first (a prefetched read), then
        // 20 ns more by the second: 1000‰ and 700‰, 850‰ on average as the channel was busy;
        // clipped, the second read 200‰ and the 50 ns were lost.
        let mut m = Meter::default();
        let l = BitsPerSec::gbps(100);
        let at = |ns: u64, busy: u64| (Time::from_ns(ns), Readings { pcie_read_busy: Time::from_ns(busy), ..Readings::default() });
        let values: Vec<u32> = [at(100, 150), at(200, 170), at(300, 170)].into_iter().map(|(t, r)| m.sample(t, r, Time::ZERO, l)[0].value).collect();
        assert_eq!(values, vec![1000, 700, 0]);
    }
}
