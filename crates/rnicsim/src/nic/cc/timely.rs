//! TIMELY (Mittal et al., "TIMELY: RTT-based Congestion Control for the Datacenter", SIGCOMM
//! 2015, Algorithm 1): rate updates from the RTT gradient, once per `segment` bytes acknowledged.
//!
//! - new RTT below T_low: additive increase δ;
//! - new RTT above T_high: multiplicative decrease by β(1 − T_high/RTT);
//! - otherwise, with the EWMA of RTT differences normalized by the minimum RTT:
//!   - gradient ≤ 0: increase by δ, or by N·δ after five such updates in a row (HAI);
//!   - gradient > 0: decrease by β·min(gradient, 1).

use super::{Ack, CongestionControl, FlowParams};
use crate::units::{BitsPerSec, Bytes, Time};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TimelyParams {
    /// EWMA weight of a new RTT difference.
    pub ewma: f64,
    pub beta: f64,
    pub delta: BitsPerSec,
    pub t_low: Time,
    pub t_high: Time,
    /// Minimum RTT used to normalize the gradient (the paper's 20 µs; at least the path's base RTT).
    pub min_rtt: Option<Time>,
    /// Bytes acknowledged between rate updates (the paper's completion-event granularity).
    pub segment: Bytes,
    pub hai_n: u32,
    pub min_rate: BitsPerSec,
}

impl Default for TimelyParams {
    fn default() -> Self {
        TimelyParams {
            ewma: 0.875,
            beta: 0.8,
            delta: BitsPerSec(10_000_000),
            t_low: Time::from_us(50),
            t_high: Time::from_us(500),
            min_rtt: Some(Time::from_us(20)),
            segment: Bytes(16 * 1024),
            hai_n: 5,
            min_rate: BitsPerSec(100_000_000),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Timely {
    p: TimelyParams,
    line: f64,
    rate: f64,
    min_rtt: f64,
    prev_rtt: Option<f64>,
    rtt_diff: f64,
    negative_run: u32,
    bytes: u64,
}

impl Timely {
    pub fn new(p: &TimelyParams, flow: FlowParams, _now: Time) -> Timely {
        let line = flow.line_rate.0 as f64;
        Timely {
            p: p.clone(),
            line,
            rate: line,
            min_rtt: p.min_rtt.unwrap_or(flow.base_rtt).max(flow.base_rtt).0.max(1) as f64,
            prev_rtt: None,
            rtt_diff: 0.0,
            negative_run: 0,
            bytes: 0,
        }
    }

    /// One rate update from an RTT sample (ps).
    pub fn update(&mut self, rtt: f64) {
        let Some(prev) = self.prev_rtt.replace(rtt) else { return };
        let new_diff = rtt - prev;
        self.rtt_diff = (1.0 - self.p.ewma) * self.rtt_diff + self.p.ewma * new_diff;
        let gradient = self.rtt_diff / self.min_rtt;
        let delta = self.p.delta.0 as f64;
        if rtt < self.p.t_low.0 as f64 {
            self.rate += delta;
            self.negative_run = 0;
        } else if rtt > self.p.t_high.0 as f64 {
            self.rate *= 1.0 - self.p.beta * (1.0 - self.p.t_high.0 as f64 / rtt);
            self.negative_run = 0;
        } else if gradient <= 0.0 {
            self.negative_run += 1;
            let n = if self.negative_run >= self.p.hai_n { self.p.hai_n as f64 } else { 1.0 };
            self.rate += n * delta;
        } else {
            self.negative_run = 0;
            // A gradient above 1 would drive the rate negative; cap the cut at β.
            self.rate *= 1.0 - self.p.beta * gradient.min(1.0);
        }
        self.rate = self.rate.clamp(self.p.min_rate.0 as f64, self.line);
    }
}

impl CongestionControl for Timely {
    fn on_ack(&mut self, _now: Time, ack: &Ack) {
        self.bytes += ack.acked_bytes;
        if self.bytes < self.p.segment.0 {
            return;
        }
        self.bytes = 0;
        self.update(ack.rtt.0 as f64);
    }

    fn rate(&self) -> BitsPerSec {
        BitsPerSec(self.rate as u64)
    }

    fn wants_rtt_probe(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gradient_rules() {
        let flow = FlowParams { line_rate: BitsPerSec(100_000_000_000), base_rtt: Time::from_us(10), mtu: 1000, seed: 0 };
        let p = TimelyParams { ewma: 1.0, t_low: Time::from_us(5), min_rtt: None, ..Default::default() };
        let mut t = Timely::new(&p, flow, Time::ZERO);
        t.update(20e6);
        assert_eq!(t.rate().0, 100_000_000_000, "first sample only primes");
        // RTT rises 2 µs over a 10 µs min RTT: gradient 0.2, cut by β·0.2 = 16 %.
        t.update(22e6);
        assert_eq!(t.rate().0, 84_000_000_000);
        // Falling RTT: +δ.
        t.update(21e6);
        assert_eq!(t.rate().0, 84_010_000_000);
        // Above T_high: cut by β(1 − T_high/RTT) = 0.8 · 0.5.
        t.update(1000e6);
        assert_eq!(t.rate().0, (84_010_000_000f64 * 0.6) as u64);
    }
}
