//! TIMELY (Mittal et al., "TIMELY: RTT-based Congestion Control for the Datacenter", SIGCOMM
//! 2015, Algorithm 1): rate updates from the RTT gradient, once per `segment` bytes acknowledged.
//!
//! - new RTT below T_low: additive increase δ;
//! - new RTT above T_high: multiplicative decrease by β(1 − T_high/RTT);
//! - otherwise, with the EWMA of RTT differences normalized by the minimum RTT:
//!   - gradient ≤ 0: increase by δ, or by N·δ after five such updates in a row (HAI);
//!   - gradient > 0: decrease by β·min(gradient, 1).
//!
//! `rules = "ns3"` follows the HPCC ns-3 simulator's TIMELY instead (`RdmaHw::HandleAckTimely`
//! and `UpdateRateTimely` in `rdma-hw.cc`), which `config.txt` runs with `CC_MODE 7` get: one
//! update per window of data (when an ACK passes the byte that was next to send at the last
//! update; the first such ACK only takes the reference RTT), every increase counting towards
//! HAI (from the sixth increase in a row, `rate_hai` instead of δ), and a gradient cut of
//! β·gradient uncapped, down to `min_rate`.

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
    pub rules: TimelyRules,
    /// The hyper-active increase of the ns-3 rules (ns-3's RATE_HAI); `hai_n` × δ if unset.
    pub rate_hai: Option<BitsPerSec>,
}

/// Which TIMELY: the paper's Algorithm 1 or the HPCC ns-3 simulator's (module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimelyRules {
    #[default]
    Paper,
    Ns3,
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
            rules: TimelyRules::Paper,
            rate_hai: None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Timely {
    p: TimelyParams,
    line: f64,
    /// `min_rate`, at most the line rate (a floor above a slower host's link panicked).
    floor: f64,
    rate: f64,
    min_rtt: f64,
    prev_rtt: Option<f64>,
    rtt_diff: f64,
    negative_run: u32,
    bytes: u64,
    /// ns-3 rules: the byte next to send at the last update (0: none yet), and the increases in
    /// a row.
    last_update_seq: u64,
    inc_stage: u32,
}

impl Timely {
    pub fn new(p: &TimelyParams, flow: FlowParams, _now: Time) -> Timely {
        let line = flow.line_rate.0 as f64;
        Timely {
            p: p.clone(),
            line,
            floor: (p.min_rate.0 as f64).min(line),
            rate: line,
            min_rtt: p.min_rtt.unwrap_or(flow.base_rtt).max(flow.base_rtt).0.max(1) as f64,
            prev_rtt: None,
            rtt_diff: 0.0,
            negative_run: 0,
            bytes: 0,
            last_update_seq: 0,
            inc_stage: 0,
        }
    }

    /// Folds the RTT difference from `prev` into the EWMA and says what the sample calls for
    /// (the branches both rule sets share).
    fn judge(&mut self, rtt: f64, prev: f64) -> Judgement {
        self.rtt_diff = (1.0 - self.p.ewma) * self.rtt_diff + self.p.ewma * (rtt - prev);
        let gradient = self.rtt_diff / self.min_rtt;
        if rtt < self.p.t_low.0 as f64 {
            Judgement::BelowTLow
        } else if rtt > self.p.t_high.0 as f64 {
            Judgement::AboveTHigh(1.0 - self.p.beta * (1.0 - self.p.t_high.0 as f64 / rtt))
        } else if gradient <= 0.0 {
            Judgement::Falling
        } else {
            Judgement::Rising(gradient)
        }
    }

    /// One update under the ns-3 rules, from an RTT sample (ps) against the last one.
    fn update_ns3(&mut self, rtt: f64, last: f64) {
        let cut = match self.judge(rtt, last) {
            Judgement::BelowTLow | Judgement::Falling => None,
            Judgement::AboveTHigh(c) => Some(c),
            Judgement::Rising(gradient) => Some((1.0 - self.p.beta * gradient).max(0.0)),
        };
        match cut {
            None => {
                let hai = self.p.rate_hai.map_or(self.p.hai_n as f64 * self.p.delta.0 as f64, |r| r.0 as f64);
                self.rate = (self.rate + if self.inc_stage < self.p.hai_n { self.p.delta.0 as f64 } else { hai }).min(self.line);
                self.inc_stage += 1;
            }
            Some(c) => {
                self.rate = (self.rate * c).max(self.floor);
                self.inc_stage = 0;
            }
        }
    }

    /// One rate update from an RTT sample (ps).
    pub fn update(&mut self, rtt: f64) {
        let Some(prev) = self.prev_rtt.replace(rtt) else { return };
        let delta = self.p.delta.0 as f64;
        match self.judge(rtt, prev) {
            Judgement::BelowTLow => {
                self.rate += delta;
                self.negative_run = 0;
            }
            Judgement::AboveTHigh(c) => {
                self.rate *= c;
                self.negative_run = 0;
            }
            Judgement::Falling => {
                self.negative_run += 1;
                let n = if self.negative_run >= self.p.hai_n { self.p.hai_n as f64 } else { 1.0 };
                self.rate += n * delta;
            }
            Judgement::Rising(gradient) => {
                self.negative_run = 0;
                // A gradient above 1 would drive the rate negative; cap the cut at β.
                self.rate *= 1.0 - self.p.beta * gradient.min(1.0);
            }
        }
        self.rate = self.rate.clamp(self.floor, self.line);
    }
}

/// What an RTT sample calls for: below T_low, above T_high (with its cut factor), or between
/// them with the RTT falling or rising (with the normalized gradient).
enum Judgement {
    BelowTLow,
    AboveTHigh(f64),
    Falling,
    Rising(f64),
}

impl CongestionControl for Timely {
    fn on_ack(&mut self, _now: Time, ack: &Ack) {
        if self.p.rules == TimelyRules::Ns3 {
            if ack.acked_seq <= self.last_update_seq {
                return;
            }
            let rtt = ack.rtt.0 as f64;
            if self.last_update_seq != 0 {
                let last = self.prev_rtt.unwrap_or(rtt);
                self.update_ns3(rtt, last);
            }
            if ack.next_seq > self.last_update_seq {
                self.last_update_seq = ack.next_seq;
                self.prev_rtt = Some(rtt);
            }
            return;
        }
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
        let flow = FlowParams { line_rate: BitsPerSec(100_000_000_000), base_rtt: Time::from_us(10), mtu: 1000, payload: 1000, seed: 0 };
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

    #[test]
    fn a_rate_floor_above_the_line_is_the_line() {
        // A floor of 50 Gbps on a 10 Gbps host (a topology file's link): clamp(50 G, 10 G)
        // panicked at the first update. Under both rule sets the rate stays the line's.
        let flow = FlowParams { line_rate: BitsPerSec(10_000_000_000), base_rtt: Time::from_us(10), mtu: 1000, payload: 1000, seed: 0 };
        let p = TimelyParams { ewma: 1.0, min_rate: BitsPerSec(50_000_000_000), ..Default::default() };
        let mut t = Timely::new(&p, flow, Time::ZERO);
        t.update(20e6);
        t.update(1000e6);
        assert_eq!(t.rate().0, 10_000_000_000);
        let mut t = Timely::new(&TimelyParams { rules: TimelyRules::Ns3, ..p }, flow, Time::ZERO);
        t.update_ns3(1000e6, 20e6);
        assert_eq!(t.rate().0, 10_000_000_000);
    }

    fn ack(acked_seq: u64, next_seq: u64, rtt_us: u64) -> Ack<'static> {
        Ack { acked_bytes: 1000, acked_seq, next_seq, rtt: Time::from_us(rtt_us), ecn_echo: false, int: None, una: 0, psn: 0, path: 0, sack: false }
    }

    #[test]
    fn ns3_rules_update_once_per_window_count_every_increase_and_do_not_cap_the_cut() {
        let flow = FlowParams { line_rate: BitsPerSec(100_000_000_000), base_rtt: Time::from_us(10), mtu: 1000, payload: 1000, seed: 0 };
        let p = TimelyParams { rules: TimelyRules::Ns3, delta: BitsPerSec(100_000_000), rate_hai: Some(BitsPerSec(500_000_000)), ..Default::default() };
        let mut t = Timely::new(&p, flow, Time::ZERO);
        // The first ACK takes the reference (RTT 60 µs, window up to byte 100,000).
        t.on_ack(Time::ZERO, &ack(1000, 100_000, 60));
        t.rate = 50e9;
        // ACKs inside the window change nothing, whatever their RTT.
        t.on_ack(Time::ZERO, &ack(50_000, 150_000, 400));
        assert_eq!(t.rate().0, 50_000_000_000);
        // Past it: RTT 64 µs against 60, diff EWMA 0.875 · 4 µs = 3.5 µs, gradient 3.5/20:
        // cut by 0.8 · 0.175 = 14%.
        t.on_ack(Time::ZERO, &ack(100_001, 200_000, 64));
        let near = |got: u64, want: u64| got.abs_diff(want) <= 1;
        assert!(near(t.rate().0, 43_000_000_000), "{}", t.rate().0);
        // RTT below T_low six windows running: five increases of δ, then `rate_hai`.
        for (i, seq) in (200_001..).step_by(100_000).take(6).enumerate() {
            t.on_ack(Time::ZERO, &ack(seq, seq + 99_999, 40));
            let want = 43_000_000_000 + 100_000_000 * (i as u64 + 1).min(5) + 500_000_000 * (i as u64).saturating_sub(4);
            assert!(near(t.rate().0, want), "increase {}: {} against {want}", i + 1, t.rate().0);
        }
        // A gradient of more than 1/β: the rate falls to the minimum, not to (1 − β) of itself.
        t.rtt_diff = 0.0;
        t.on_ack(Time::ZERO, &ack(900_000, 1_000_000, 40 + 30));
        assert_eq!(t.rate().0, 100_000_000);
    }
}
