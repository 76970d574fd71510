//! Hosts before the RDMA transport: plain packet sources and a sink that records per-flow
//! delivery. A source paces packets at a fraction of its link rate (evenly or as a Poisson
//! process) and backs off while its NIC queue is full, as a NIC would when the fabric pauses it.

use crate::sim::rng::Rng;
use crate::sim::TimerId;
use crate::units::Time;
use rand::Rng as _;

/// How many packets of one class a host NIC queue holds before its sources wait.
pub const NIC_QUEUE_PACKETS: usize = 8;

/// One sender of a traffic entry (a flow from `src` to `dst`).
pub struct Source {
    pub traffic: u32,
    pub src: u32,
    pub dst: u32,
    pub dst_host: u32,
    /// The host's egress port.
    pub port: u32,
    pub size: u32,
    pub priority: u8,
    pub ecn: u8,
    pub udp_sport: u16,
    pub flow_hash: u32,
    /// Mean gap between packets.
    pub gap: Time,
    pub poisson: bool,
    pub rng: Rng,
    pub stop: Time,
    pub byte_limit: u64,
    pub timer: TimerId,
    pub blocked: bool,
    pub done: bool,
    pub sent_packets: u64,
    pub sent_bytes: u64,
}

impl Source {
    /// The gap to the next packet.
    pub fn next_gap(&mut self) -> Time {
        if !self.poisson {
            return self.gap;
        }
        let u: f64 = 1.0 - self.rng.random::<f64>(); // (0, 1]
        Time((self.gap.0 as f64 * -det_ln(u)).round() as u64)
    }
}

/// What a sink saw of one flow.
#[derive(Clone, Copy, Debug)]
pub struct FlowStats {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub first_rx: Time,
    pub last_rx: Time,
    pub latency_sum: u128,
    pub latency_min: Time,
    pub latency_max: Time,
    pub ecn_ce: u64,
}

impl Default for FlowStats {
    fn default() -> Self {
        FlowStats { rx_packets: 0, rx_bytes: 0, first_rx: Time::ZERO, last_rx: Time::ZERO, latency_sum: 0, latency_min: Time::MAX, latency_max: Time::ZERO, ecn_ce: 0 }
    }
}

impl FlowStats {
    pub fn record(&mut self, now: Time, sent_at: Time, bytes: u32, ce: bool) {
        if self.rx_packets == 0 {
            self.first_rx = now;
        }
        self.rx_packets += 1;
        self.rx_bytes += bytes as u64;
        self.last_rx = now;
        let lat = now - sent_at;
        self.latency_sum += lat.0 as u128;
        self.latency_min = self.latency_min.min(lat);
        self.latency_max = self.latency_max.max(lat);
        self.ecn_ce += ce as u64;
    }
}

/// Natural logarithm from IEEE-754 basic operations only (no platform `libm`), so sampled times
/// are identical on every machine. Accurate to a few ulps for positive finite `x`.
pub fn det_ln(x: f64) -> f64 {
    debug_assert!(x > 0.0 && x.is_finite());
    const LN2: f64 = std::f64::consts::LN_2;
    const SQRT2: f64 = std::f64::consts::SQRT_2;
    let bits = x.to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mut m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    if e == -1023 {
        // Subnormal: scale up first.
        return det_ln(x * 2f64.powi(64)) - 64.0 * LN2;
    }
    if m > SQRT2 {
        m /= 2.0;
        e += 1;
    }
    // ln m = 2 atanh(s) = 2 (s + s³/3 + s⁵/5 + …), s = (m-1)/(m+1), |s| < 0.172, so s² < 0.03
    // and 13 terms reach full precision. Horner form, constant reciprocals.
    const C: [f64; 13] = [1.0, 1.0 / 3.0, 1.0 / 5.0, 1.0 / 7.0, 1.0 / 9.0, 1.0 / 11.0, 1.0 / 13.0, 1.0 / 15.0, 1.0 / 17.0, 1.0 / 19.0, 1.0 / 21.0, 1.0 / 23.0, 1.0 / 25.0];
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let mut p = 0.0;
    for c in C.iter().rev() {
        p = p * s2 + c;
    }
    2.0 * s * p + e as f64 * LN2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn det_ln_matches_std() {
        for &x in &[1e-300, 1e-9, 0.001, 0.1, 0.5, 0.7071, 1.0, 1.5, 2.0, 10.0, 12345.678, 1e300] {
            let (a, b) = (det_ln(x), x.ln());
            assert!((a - b).abs() <= 4.0 * f64::EPSILON * b.abs().max(1.0), "ln({x}): {a} vs {b}");
        }
    }

    #[test]
    fn flow_stats_latency() {
        let mut f = FlowStats::default();
        f.record(Time(100), Time(40), 1000, false);
        f.record(Time(200), Time(100), 1000, true);
        assert_eq!((f.rx_packets, f.rx_bytes, f.ecn_ce), (2, 2000, 1));
        assert_eq!((f.latency_min, f.latency_max, f.latency_sum), (Time(60), Time(100), 160));
        assert_eq!((f.first_rx, f.last_rx), (Time(100), Time(200)));
    }
}
