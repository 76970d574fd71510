//! HPCC (Li et al., "HPCC: High Precision Congestion Control", SIGCOMM 2019, Algorithm 1):
//! window control from in-band telemetry. Each ACK echoes, per hop, the queue length, the
//! port's transmitted bytes, a timestamp and the link rate. The sender estimates each link's
//! normalized in-flight bytes
//!
//!   u = min(qlen, qlen_prev) / (B·T) + txRate / B,
//!
//! takes the most loaded hop, smooths it into U over time τ, and sets
//!
//!   W = W_c / (U/η) + W_AI   when U ≥ η or after `max_stage` additive steps,
//!   W = W_c + W_AI           otherwise,
//!
//! updating the reference window W_c once per RTT; the rate is W / T.

use super::{Ack, CongestionControl, FlowParams, IntStack};
use crate::units::{BitsPerSec, Time};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HpccParams {
    /// Target utilization η.
    pub eta: f64,
    pub max_stage: u32,
    /// Additive increase, as a rate (W_AI = rate_ai × T).
    pub rate_ai: BitsPerSec,
    /// T: the base RTT (default: the flow's path).
    pub base_rtt: Option<Time>,
}

impl Default for HpccParams {
    fn default() -> Self {
        HpccParams { eta: 0.95, max_stage: 5, rate_ai: BitsPerSec(50_000_000), base_rtt: None }
    }
}

#[derive(Clone, Debug)]
pub struct Hpcc {
    eta: f64,
    max_stage: u32,
    line: f64,
    /// T in seconds.
    t: f64,
    w_ai: f64,
    w_init: f64,
    wc: f64,
    w: f64,
    u: f64,
    stage: u32,
    last_update_seq: u64,
    last: Option<IntStack>,
}

impl Hpcc {
    pub fn new(p: &HpccParams, flow: FlowParams) -> Hpcc {
        let t = p.base_rtt.unwrap_or(flow.base_rtt).0.max(1) as f64 * 1e-12;
        let line = flow.line_rate.0 as f64;
        let w_init = line * t / 8.0;
        Hpcc {
            eta: p.eta,
            max_stage: p.max_stage,
            line,
            t,
            w_ai: p.rate_ai.0 as f64 * t / 8.0,
            w_init,
            wc: w_init,
            w: w_init,
            u: 0.0,
            stage: 0,
            last_update_seq: 0,
            last: None,
        }
    }

    /// Updates U from a new telemetry stack; false if there was no previous one to compare.
    fn measure(&mut self, int: &IntStack) -> bool {
        let Some(prev) = self.last.replace(*int) else { return false };
        if prev.n != int.n {
            return false;
        }
        let mut u = 0.0f64;
        let mut tau = self.t;
        for (h, p) in int.hops().iter().zip(prev.hops()) {
            let dt = h.ts.0.saturating_sub(p.ts.0) as f64 * 1e-12;
            if dt <= 0.0 {
                continue;
            }
            let b = h.rate.0 as f64 / 8.0; // bytes per second
            let tx_rate = h.tx_bytes.saturating_sub(p.tx_bytes) as f64 / dt;
            let ui = h.qlen.min(p.qlen) as f64 / (b * self.t) + tx_rate / b;
            if ui > u {
                u = ui;
                tau = dt;
            }
        }
        let tau = tau.min(self.t);
        self.u = (1.0 - tau / self.t) * self.u + tau / self.t * u;
        true
    }

    fn compute_window(&mut self, update_wc: bool) {
        let w = if self.u >= self.eta || self.stage >= self.max_stage {
            let w = self.wc / (self.u / self.eta).max(1e-9) + self.w_ai;
            if update_wc {
                self.stage = 0;
                self.wc = w;
            }
            w
        } else {
            let w = self.wc + self.w_ai;
            if update_wc {
                self.stage += 1;
                self.wc = w;
            }
            w
        };
        // The floor is one additive step (at least a byte), never above the BDP cap, whatever
        // the parameters (W_AI above the BDP is refused by validation; this keeps it total).
        self.w = w.clamp(self.w_ai.max(1.0).min(self.w_init), self.w_init);
        self.wc = self.wc.min(self.w_init);
    }

    pub fn utilization(&self) -> f64 {
        self.u
    }
}

impl CongestionControl for Hpcc {
    fn on_ack(&mut self, _now: Time, ack: &Ack) {
        let Some(int) = ack.int else { return };
        if !self.measure(int) {
            return;
        }
        let update = ack.acked_seq > self.last_update_seq;
        if update {
            self.last_update_seq = ack.next_seq;
        }
        self.compute_window(update);
    }

    fn rate(&self) -> BitsPerSec {
        BitsPerSec((self.w * 8.0 / self.t).min(self.line) as u64)
    }

    fn window(&self) -> Option<u64> {
        Some(self.w as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::super::IntHop;
    use super::*;

    fn stack(qlen: u64, tx: u64, ts_ns: u64) -> IntStack {
        let mut s = IntStack::default();
        s.push(IntHop { qlen, tx_bytes: tx, ts: Time::from_ns(ts_ns), rate: BitsPerSec(100_000_000_000) });
        s
    }

    #[test]
    fn overloaded_link_shrinks_the_window_by_u_over_eta() {
        let flow = FlowParams { line_rate: BitsPerSec(100_000_000_000), base_rtt: Time::from_us(10), mtu: 1000, seed: 0 };
        let mut h = Hpcc::new(&HpccParams::default(), flow);
        let bdp = 100e9 * 10e-6 / 8.0; // 125 KB
        assert!((h.window().unwrap() as f64 - bdp).abs() < 2.0, "{:?} vs {bdp}", h.window());
        let ack = |s: &IntStack, seq| Ack { acked_bytes: 1000, acked_seq: seq, next_seq: seq + 200_000, rtt: Time::from_us(10), ecn_echo: false, int: Some(unsafe_static(s)), una: 0, psn: 0, path: 0, sack: false };
        h.on_ack(Time::ZERO, &ack(&stack(125_000, 0, 0), 1));
        // 10 µs later: the link sent at line rate (125 KB) and one BDP stayed queued: u = 2.
        h.on_ack(Time::ZERO, &ack(&stack(125_000, 125_000, 10_000), 2));
        assert!((h.utilization() - 2.0).abs() < 1e-9, "{}", h.utilization());
        let expect = bdp / (2.0 / 0.95) + 50e6 * 10e-6 / 8.0;
        assert!((h.window().unwrap() as f64 - expect).abs() < 2.0, "{} vs {expect}", h.window().unwrap());
    }

    fn unsafe_static(s: &IntStack) -> &'static IntStack {
        Box::leak(Box::new(*s))
    }
}
