//! DCQCN reaction point (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
//! SIGCOMM 2015, §3 and Fig. 7), in integer arithmetic.
//!
//! - On a CNP (at most one reaction per `rate_decrease_interval`): the target rate takes the
//!   current rate, the current rate is cut by α/2, α rises by g, and the increase stages reset.
//! - Every `alpha_interval` without a CNP, α decays by a factor (1 − g).
//! - Rate increase events come from a timer (`increase_timer`) and from a byte counter
//!   (`byte_counter` bytes sent). With T and BC the counts of each since the last cut:
//!   - while max(T, BC) < F (counted after the event): fast recovery, Rc = (Rc + Rt)/2;
//!   - while min(T, BC) > F: hyper increase, Rt += R_HAI, then Rc = (Rc + Rt)/2;
//!   - otherwise: additive increase, Rt += R_AI, then Rc = (Rc + Rt)/2.
//!
//! α is kept in 1/2^20 units; rates in bits per second.

use super::{CongestionControl, FlowParams};
use crate::units::{BitsPerSec, Bytes, Time};
use serde::{Deserialize, Serialize};

const ALPHA_ONE: u64 = 1 << 20;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DcqcnParams {
    /// EWMA gain g of α.
    pub g: f64,
    pub alpha_interval: Time,
    pub rate_decrease_interval: Time,
    pub increase_timer: Time,
    pub byte_counter: Bytes,
    /// Fast-recovery stages F.
    pub fast_recovery: u32,
    pub rate_ai: BitsPerSec,
    pub rate_hai: BitsPerSec,
    pub min_rate: BitsPerSec,
    /// Also lower the target rate on a cut taken during fast recovery.
    pub clamp_target: bool,
}

impl Default for DcqcnParams {
    fn default() -> Self {
        DcqcnParams {
            g: 1.0 / 256.0,
            alpha_interval: Time::from_us(55),
            rate_decrease_interval: Time::from_us(50),
            increase_timer: Time::from_us(55),
            byte_counter: Bytes(10 * 1024 * 1024),
            fast_recovery: 5,
            rate_ai: BitsPerSec(40_000_000),
            rate_hai: BitsPerSec(200_000_000),
            min_rate: BitsPerSec(100_000_000),
            clamp_target: true,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Dcqcn {
    line: u64,
    rc: u64,
    rt: u64,
    alpha: u64,
    g: u64,
    min_rate: u64,
    rai: u64,
    rhai: u64,
    f: u32,
    clamp: bool,
    byte_counter: u64,
    alpha_interval: Time,
    decrease_interval: Time,
    increase_interval: Time,
    /// Whether a CNP arrived since the last α update.
    cnp_since_alpha: bool,
    last_cut: Option<Time>,
    /// Timer (T) and byte-counter (BC) stages since the last cut.
    t_stage: u32,
    bc_stage: u32,
    bytes: u64,
    next_alpha: Time,
    next_increase: Time,
    /// Until the first CNP the flow runs at line rate with no timers.
    active: bool,
}

impl Dcqcn {
    pub fn new(p: &DcqcnParams, flow: FlowParams) -> Dcqcn {
        let line = flow.line_rate.0;
        Dcqcn {
            line,
            rc: line,
            rt: line,
            alpha: ALPHA_ONE,
            g: ((p.g * ALPHA_ONE as f64).round() as u64).clamp(1, ALPHA_ONE),
            min_rate: p.min_rate.0.min(line),
            rai: p.rate_ai.0,
            rhai: p.rate_hai.0,
            f: p.fast_recovery,
            clamp: p.clamp_target,
            byte_counter: p.byte_counter.0.max(1),
            alpha_interval: p.alpha_interval,
            decrease_interval: p.rate_decrease_interval,
            increase_interval: p.increase_timer,
            cnp_since_alpha: false,
            last_cut: None,
            t_stage: 0,
            bc_stage: 0,
            bytes: 0,
            next_alpha: Time::MAX,
            next_increase: Time::MAX,
            active: false,
        }
    }

    /// α as a fraction (for reports and tests).
    pub fn alpha(&self) -> f64 {
        self.alpha as f64 / ALPHA_ONE as f64
    }

    pub fn target(&self) -> BitsPerSec {
        BitsPerSec(self.rt)
    }

    fn increase(&mut self) {
        let (lo, hi) = (self.t_stage.min(self.bc_stage), self.t_stage.max(self.bc_stage));
        if hi < self.f {
            // fast recovery
        } else if lo > self.f {
            self.rt = (self.rt + self.rhai).min(self.line);
        } else {
            self.rt = (self.rt + self.rai).min(self.line);
        }
        self.rc = (self.rc + self.rt) / 2;
    }
}

impl CongestionControl for Dcqcn {
    fn on_tx(&mut self, _now: Time, bytes: u64, _packets: u32) {
        if !self.active {
            return;
        }
        self.bytes += bytes;
        while self.bytes >= self.byte_counter {
            self.bytes -= self.byte_counter;
            self.bc_stage += 1;
            self.increase();
        }
    }

    fn on_cnp(&mut self, now: Time) {
        self.cnp_since_alpha = true;
        if !self.active {
            self.active = true;
            self.next_alpha = now + self.alpha_interval;
        }
        if self.last_cut.is_some_and(|t| now < t + self.decrease_interval) {
            return;
        }
        self.last_cut = Some(now);
        if self.clamp || self.t_stage.max(self.bc_stage) >= self.f || self.rt == self.line {
            self.rt = self.rc;
        }
        let cut = (self.rc as u128 * self.alpha as u128 / (2 * ALPHA_ONE as u128)) as u64;
        self.rc = (self.rc - cut).max(self.min_rate);
        self.alpha = self.alpha - ((self.alpha * self.g) >> 20) + self.g;
        self.cnp_since_alpha = false;
        self.t_stage = 0;
        self.bc_stage = 0;
        self.bytes = 0;
        self.next_alpha = now + self.alpha_interval;
        self.next_increase = now + self.increase_interval;
    }

    fn on_timer(&mut self, now: Time) {
        if now >= self.next_alpha {
            if self.cnp_since_alpha {
                self.alpha = self.alpha - ((self.alpha * self.g) >> 20) + self.g;
            } else {
                self.alpha -= (self.alpha * self.g) >> 20;
            }
            self.cnp_since_alpha = false;
            self.next_alpha = now + self.alpha_interval;
        }
        if now >= self.next_increase {
            self.t_stage += 1;
            self.increase();
            self.next_increase = now + self.increase_interval;
        }
        if self.rc >= self.line && self.rt >= self.line && !self.cnp_since_alpha && self.alpha < self.g {
            // Fully recovered: stop the timers until the next CNP.
            self.active = false;
            self.next_alpha = Time::MAX;
            self.next_increase = Time::MAX;
        }
    }

    fn next_timer(&self) -> Option<Time> {
        let t = self.next_alpha.min(self.next_increase);
        (t != Time::MAX).then_some(t)
    }

    fn rate(&self) -> BitsPerSec {
        BitsPerSec(self.rc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow() -> FlowParams {
        FlowParams { line_rate: BitsPerSec(100_000_000_000), base_rtt: Time::from_us(8), mtu: 1062 }
    }

    #[test]
    fn first_cnp_halves_the_rate() {
        let mut d = Dcqcn::new(&DcqcnParams::default(), flow());
        assert_eq!(d.rate().0, 100_000_000_000);
        d.on_cnp(Time::from_us(1));
        // α starts at 1: Rc × (1 − 1/2).
        assert_eq!(d.rate().0, 50_000_000_000);
        assert_eq!(d.target().0, 100_000_000_000);
        // A second CNP within the decrease interval is ignored.
        d.on_cnp(Time::from_us(2));
        assert_eq!(d.rate().0, 50_000_000_000);
    }

    #[test]
    fn fast_recovery_halves_the_gap_each_timer() {
        let p = DcqcnParams { byte_counter: Bytes(u64::MAX), ..Default::default() };
        let mut d = Dcqcn::new(&p, flow());
        d.on_cnp(Time::ZERO);
        let (rt, mut rc) = (d.target().0, d.rate().0);
        for k in 1..=5u64 {
            d.on_timer(Time::from_us(55 * k));
            let expect = (rc + rt) / 2;
            assert_eq!(d.rate().0, expect);
            rc = expect;
        }
    }

    #[test]
    fn alpha_decays_without_cnps() {
        let mut d = Dcqcn::new(&DcqcnParams::default(), flow());
        d.on_cnp(Time::ZERO);
        let a0 = d.alpha();
        d.on_timer(Time::from_us(55));
        let a1 = d.alpha();
        assert!((a1 - a0 * (1.0 - 1.0 / 256.0)).abs() < 1e-5, "{a0} {a1}");
    }

    #[test]
    fn additive_increase_after_fast_recovery() {
        let p = DcqcnParams { byte_counter: Bytes(u64::MAX), ..Default::default() };
        let mut d = Dcqcn::new(&p, flow());
        d.on_cnp(Time::ZERO);
        d.on_cnp(Time::from_us(60)); // target := 50 Gbps, rate cut again
        let rt0 = d.target().0;
        assert_eq!(rt0, 50_000_000_000);
        let mut t = Time::from_us(60);
        // Events 1..F−1 are fast recovery (HPCC's simulator counts the same way).
        for _ in 0..4 {
            t = t + Time::from_us(55);
            d.on_timer(t);
            assert_eq!(d.target().0, rt0, "fast recovery keeps the target");
        }
        t = t + Time::from_us(55);
        d.on_timer(t);
        assert_eq!(d.target().0, rt0 + 40_000_000, "additive increase by R_AI");
    }
}
