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
//! updating the reference window W_c once per RTT; the rate is W / T. A hop is compared with
//! the last stamp of the same port (INT carries switch and port ids): when packets are sprayed
//! over paths, the hops of two ACKs in a row may be different links.

use super::{Ack, CongestionControl, FlowParams, IntHop, IntStack};
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
    /// T is the largest base RTT between any two hosts for every flow, not its own path's
    /// (ns-3's GLOBAL_T 1, `maxRtt`); `base_rtt`, if set, wins.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub fabric_rtt: bool,
    /// No rate below this (default: none but the additive step; ns-3's `MIN_RATE`).
    pub min_rate: Option<BitsPerSec>,
    /// Whether W also caps the bytes in flight (true), or only sets the rate W / T (false:
    /// ns-3's HPCC under `HAS_WIN 0`, whose `GetWin` is then 0, no window).
    pub window: bool,
    /// Read the telemetry as ns-3 encodes it (`IntHop::Set` in `int-header.h`, INT_MULTI):
    /// byte counters in units of 128 × this, queue lengths in units of 80 × this, times in
    /// whole nanoseconds, each rounded down. Unset: exact. (With 4, a 1,090 B packet reads as
    /// one or two 512 B units, so a busy hop reads 0.94 or 1.41 of its line rate packet by
    /// packet, and the largest of several hops is biased upwards.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub int_multi: Option<u32>,
    /// Whether an ACK within the round trip updates the window from the reference (true), or
    /// only the first ACK past it does, once per round trip, and the ACKs between are not
    /// looked at (false: ns-3's FAST_REACT 0, where `FastReactHp` does nothing).
    pub fast_react: bool,
}

impl Default for HpccParams {
    fn default() -> Self {
        HpccParams { eta: 0.95, max_stage: 5, rate_ai: BitsPerSec(50_000_000), base_rtt: None, fabric_rtt: false, min_rate: None, window: true, int_multi: None, fast_react: true }
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
    /// The smallest window: one additive step, or `min_rate` over T if larger.
    w_min: f64,
    w_init: f64,
    wc: f64,
    w: f64,
    /// Whether W caps the bytes in flight ([`HpccParams::window`]).
    windowed: bool,
    fast_react: bool,
    /// ns-3's telemetry units ([`HpccParams::int_multi`]): bytes, queue bytes and
    /// picoseconds per unit; 1 each when exact.
    units: IntUnits,
    u: f64,
    stage: u32,
    last_update_seq: u64,
    /// The last stamp seen from each port the flow's packets crossed (at most
    /// [`MAX_PORT_REFS`]; the one stamped longest ago makes room). With one path this is the
    /// previous ACK's stack; when packets are sprayed over paths, hop i of two ACKs may come
    /// from two ports, and their byte counters cannot be compared.
    refs: Vec<IntHop>,
}

#[derive(Clone, Copy, Debug)]
struct IntUnits {
    bytes: u64,
    qlen: u64,
    time: u64,
}

impl IntUnits {
    fn of(multi: Option<u32>) -> IntUnits {
        match multi {
            Some(m) => IntUnits { bytes: 128 * m.max(1) as u64, qlen: 80 * m.max(1) as u64, time: 1000 },
            None => IntUnits { bytes: 1, qlen: 1, time: 1 },
        }
    }

    /// A value as the stamp carries it: rounded down to a whole `unit`.
    fn read(v: u64, unit: u64) -> u64 {
        v / unit * unit
    }
}

/// Ports whose last stamp a flow keeps (paths it sprays over, times their hops: 2 × 127 spines
/// and the two ends on a leaf-spine).
const MAX_PORT_REFS: usize = 256;

impl Hpcc {
    pub fn new(p: &HpccParams, flow: FlowParams) -> Hpcc {
        let t = p.base_rtt.unwrap_or(flow.base_rtt).0.max(1) as f64 * 1e-12;
        let line = flow.line_rate.0 as f64;
        let w_init = line * t / 8.0;
        let w_ai = p.rate_ai.0 as f64 * t / 8.0;
        let w_min = w_ai.max(p.min_rate.map_or(0.0, |r| r.0 as f64 * t / 8.0)).max(1.0).min(w_init);
        Hpcc {
            eta: p.eta,
            max_stage: p.max_stage,
            line,
            t,
            w_ai,
            w_min,
            w_init,
            wc: w_init,
            w: w_init,
            windowed: p.window,
            fast_react: p.fast_react,
            units: IntUnits::of(p.int_multi),
            // As ns-3's reference implementation starts it (`RdmaQueuePair`'s `hp.u`): a
            // new flow reads its first measurements as a full link and backs off from there.
            u: 1.0,
            stage: 0,
            last_update_seq: 0,
            refs: Vec::new(),
        }
    }

    /// Updates U from a new telemetry stack, each hop against the last stamp of the same port;
    /// false if no hop had one to compare with.
    fn measure(&mut self, int: &IntStack) -> bool {
        let mut u = 0.0f64;
        let mut tau = self.t;
        let mut compared = false;
        for h in int.hops() {
            let Some(i) = self.refs.iter().position(|r| r.port == h.port) else {
                if self.refs.len() == MAX_PORT_REFS {
                    // The port stamped longest ago makes room (not the first seen: that is
                    // often the last hop, which every ACK crosses).
                    let stale = (0..self.refs.len()).min_by_key(|&j| self.refs[j].ts).expect("full");
                    self.refs.swap_remove(stale);
                }
                self.refs.push(*h);
                continue;
            };
            let p = std::mem::replace(&mut self.refs[i], *h);
            compared = true;
            let IntUnits { bytes, qlen, time } = self.units;
            let read = IntUnits::read;
            let dt = read(h.ts.0, time).saturating_sub(read(p.ts.0, time)) as f64 * 1e-12;
            if dt <= 0.0 {
                continue;
            }
            let b = h.rate.0 as f64 / 8.0; // bytes per second
            let tx_rate = read(h.tx_bytes, bytes).saturating_sub(read(p.tx_bytes, bytes)) as f64 / dt;
            let ui = read(h.qlen, qlen).min(read(p.qlen, qlen)) as f64 / (b * self.t) + tx_rate / b;
            if ui > u {
                u = ui;
                tau = dt;
            }
        }
        if !compared {
            return false;
        }
        let tau = tau.min(self.t);
        self.u = (1.0 - tau / self.t) * self.u + tau / self.t * u;
        true
    }

    fn compute_window(&mut self, update_wc: bool) {
        let w = if self.u >= self.eta || self.stage >= self.max_stage {
            if update_wc {
                self.stage = 0;
            }
            self.wc / (self.u / self.eta).max(1e-9) + self.w_ai
        } else {
            if update_wc {
                self.stage += 1;
            }
            self.wc + self.w_ai
        };
        // The floor is one additive step (at least a byte) or the minimum rate's window, never
        // above the BDP cap, whatever the parameters (W_AI above the BDP is refused by
        // validation; this keeps it total). The reference window is the window as clamped, as
        // ns-3's reference rate is the rate as clamped (`UpdateRateHp`): after a cut below
        // the floor, the next steps start from the floor.
        self.w = w.clamp(self.w_min, self.w_init);
        if update_wc {
            self.wc = self.w;
        }
    }

    pub fn utilization(&self) -> f64 {
        self.u
    }
}

impl CongestionControl for Hpcc {
    fn on_ack(&mut self, _now: Time, ack: &Ack) {
        let Some(int) = ack.int else { return };
        let first = self.refs.is_empty();
        let update = ack.acked_seq > self.last_update_seq;
        if !first && !update && !self.fast_react {
            // Its stamps are not even kept: the next update compares with the last update's.
            return;
        }
        if !self.measure(int) {
            if first {
                // The first telemetry is only the reference; the first full update waits for
                // what was sent by now to be acknowledged, one RTT on.
                self.last_update_seq = ack.next_seq;
            }
            return;
        }
        if update {
            self.last_update_seq = ack.next_seq;
        }
        self.compute_window(update);
    }

    fn rate(&self) -> BitsPerSec {
        BitsPerSec((self.w * 8.0 / self.t).min(self.line) as u64)
    }

    fn window(&self) -> Option<u64> {
        self.windowed.then_some(self.w as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::super::IntHop;
    use super::*;

    fn stack(qlen: u64, tx: u64, ts_ns: u64) -> IntStack {
        let mut s = IntStack::default();
        s.push(IntHop { qlen, tx_bytes: tx, ts: Time::from_ns(ts_ns), rate: BitsPerSec(100_000_000_000), port: 0 });
        s
    }

    #[test]
    fn overloaded_link_shrinks_the_window_by_u_over_eta() {
        let flow = FlowParams { line_rate: BitsPerSec(100_000_000_000), base_rtt: Time::from_us(10), mtu: 1000, payload: 1000, seed: 0 };
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

    fn ack(s: &IntStack, acked_seq: u64, next_seq: u64) -> Ack<'static> {
        Ack { acked_bytes: 1000, acked_seq, next_seq, rtt: Time::from_us(10), ecn_echo: false, int: Some(unsafe_static(s)), una: 0, psn: 0, path: 0, sack: false }
    }

    #[test]
    fn a_new_flow_starts_from_a_full_link_and_its_first_rtt_only_reacts() {
        // As ns-3's reference HPCC: U starts at 1, the first ACK's telemetry is only the
        // reference, and W_c is first committed by an ACK beyond what was sent by then.
        let flow = FlowParams { line_rate: BitsPerSec(100_000_000_000), base_rtt: Time::from_us(10), mtu: 1000, payload: 1000, seed: 0 };
        let mut h = Hpcc::new(&HpccParams { max_stage: 0, ..Default::default() }, flow);
        let (bdp, w_ai) = (125_000.0, 50e6 * 10e-6 / 8.0);
        h.on_ack(Time::ZERO, &ack(&stack(0, 0, 0), 1, 200_001));
        // 1 µs later the link ran at line rate with no queue: u = 1, and U = 0.9 × 1 + 0.1 × 1
        // (from a start at 0 it would be 0.1, and the window would stay at the BDP).
        h.on_ack(Time::ZERO, &ack(&stack(0, 12_500, 1_000), 2, 200_002));
        assert!((h.utilization() - 1.0).abs() < 1e-9, "{}", h.utilization());
        let once = bdp * 0.95 + w_ai;
        assert!((h.window().unwrap() as f64 - once).abs() < 2.0, "{:?} vs {once}", h.window());
        // Still within the first RTT: the window comes from the same W_c again.
        h.on_ack(Time::ZERO, &ack(&stack(0, 25_000, 2_000), 3, 200_003));
        assert!((h.window().unwrap() as f64 - once).abs() < 2.0, "{:?} vs {once}", h.window());
        // Past 200,001: this update commits, and the next one builds on it.
        h.on_ack(Time::ZERO, &ack(&stack(0, 37_500, 3_000), 200_002, 400_000));
        assert!((h.window().unwrap() as f64 - once).abs() < 2.0, "{:?} vs {once}", h.window());
        h.on_ack(Time::ZERO, &ack(&stack(0, 50_000, 4_000), 400_001, 600_000));
        let twice = once * 0.95 + w_ai;
        assert!((h.window().unwrap() as f64 - twice).abs() < 2.0, "{:?} vs {twice}", h.window());
    }

    #[test]
    fn without_fast_reaction_only_the_first_ack_past_the_round_trip_is_looked_at() {
        // ns-3's FAST_REACT 0: the ACKs within the round trip neither move the window nor
        // replace the stamps the next update compares with.
        let flow = FlowParams { line_rate: BitsPerSec(100_000_000_000), base_rtt: Time::from_us(10), mtu: 1000, payload: 1000, seed: 0 };
        let mut h = Hpcc::new(&HpccParams { max_stage: 0, fast_react: false, ..Default::default() }, flow);
        let (bdp, w_ai) = (125_000.0, 50e6 * 10e-6 / 8.0);
        h.on_ack(Time::ZERO, &ack(&stack(0, 0, 0), 1, 200_001));
        // A queue of one BDP in two stamps in a row: u = 2 with fast reaction, unseen here.
        h.on_ack(Time::ZERO, &ack(&stack(125_000, 12_500, 1_000), 2, 200_002));
        h.on_ack(Time::ZERO, &ack(&stack(125_000, 25_000, 2_000), 3, 200_003));
        assert!((h.window().unwrap() as f64 - bdp).abs() < 2.0, "{:?} vs {bdp}", h.window());
        // Past 200,001, against the first ACK's stamp: 37.5 KB in 3 µs, the line rate, and
        // no queue in both stamps (min(0, 0)): u = 1, W = 0.95 W_c + W_AI.
        h.on_ack(Time::ZERO, &ack(&stack(0, 37_500, 3_000), 200_002, 400_000));
        assert!((h.utilization() - 1.0).abs() < 1e-9, "{}", h.utilization());
        let once = bdp * 0.95 + w_ai;
        assert!((h.window().unwrap() as f64 - once).abs() < 2.0, "{:?} vs {once}", h.window());
        h.on_ack(Time::ZERO, &ack(&stack(500_000, 40_000, 3_500), 300_000, 400_001));
        assert!((h.window().unwrap() as f64 - once).abs() < 2.0, "{:?} vs {once}", h.window());
    }

    #[test]
    fn ns3s_telemetry_units_round_each_stamp_down() {
        // One 1,100 B packet a packet time at 100 Gbps (88 ns): exactly the line rate. With
        // INT_MULTI 4 the byte counter moves in 512 B units, so one interval reads 1,024 B and
        // another 1,536 B, and a 300 B queue (under one 320 B unit) reads as none; times are
        // whole nanoseconds (the 400 ps past each is dropped). With an 88 ns base RTT each
        // sample sets U outright.
        let flow = FlowParams { line_rate: BitsPerSec(100_000_000_000), base_rtt: Time::from_ns(88), mtu: 1000, payload: 1000, seed: 0 };
        let hop = |tx: u64, ts: Time| {
            let mut s = IntStack::default();
            s.push(IntHop { qlen: 300, tx_bytes: tx, ts, rate: BitsPerSec(100_000_000_000), port: 0 });
            s
        };
        let u_of = |multi: Option<u32>, from: u64| {
            let mut h = Hpcc::new(&HpccParams { int_multi: multi, ..Default::default() }, flow);
            h.on_ack(Time::ZERO, &ack(&hop(from, Time(1_000_400)), 1, 2));
            h.on_ack(Time::ZERO, &ack(&hop(from + 1_100, Time(1_088_400)), 3, 4));
            h.utilization()
        };
        let exact = 1.0 + 300.0 / 1_100.0;
        assert!((u_of(None, 0) - exact).abs() < 1e-9, "{}", u_of(None, 0));
        assert!((u_of(Some(4), 0) - 1_024.0 / 1_100.0).abs() < 1e-9, "{}", u_of(Some(4), 0));
        assert!((u_of(Some(4), 1_000) - 1_536.0 / 1_100.0).abs() < 1e-9, "{}", u_of(Some(4), 1_000));
        // INT_MULTI 1: 128 B and 80 B units (1,100 B from 0 reads 1,024; 300 B reads 240).
        assert!((u_of(Some(1), 0) - (1_024.0 + 240.0) / 1_100.0).abs() < 1e-9, "{}", u_of(Some(1), 0));
    }

    #[test]
    fn sprayed_packets_measure_each_link_against_its_own_last_stamp() {
        // Two paths taken in turn, one ACK a µs: each link carries half its rate (12,500 B
        // per 2 µs at 100 Gbps) with no queue, so u = 0.5 on both. Their byte counters are far
        // apart (1 MB and 5 MB): compared hop by hop across paths, u came out 320 or 0.
        let flow = FlowParams { line_rate: BitsPerSec(100_000_000_000), base_rtt: Time::from_us(10), mtu: 1000, payload: 1000, seed: 0 };
        let mut h = Hpcc::new(&HpccParams::default(), flow);
        for k in 0..200u64 {
            let (port, base) = if k % 2 == 0 { (7, 1_000_000) } else { (9, 5_000_000) };
            let mut s = IntStack::default();
            s.push(IntHop { qlen: 0, tx_bytes: base + (k / 2) * 12_500, ts: Time::from_us(k), rate: BitsPerSec(100_000_000_000), port });
            h.on_ack(Time::ZERO, &ack(&s, k * 1000, k * 1000 + 100_000));
        }
        assert!((h.utilization() - 0.5).abs() < 1e-6, "{}", h.utilization());
    }

    #[test]
    fn a_flow_sprayed_over_many_spines_measures_every_uplink() {
        // Two hops per ACK, one a µs: the first on one of 100 uplink ports in turn, each busy at
        // its line rate; the last (port 1) at half its rate. U is the busiest hop's, 1. With
        // room for 64 ports, a port seen 100 ACKs ago was always gone: no uplink was ever
        // measured, and U read the last hop's 0.5 (32 spines or more hid their congestion).
        let flow = FlowParams { line_rate: BitsPerSec(100_000_000_000), base_rtt: Time::from_us(10), mtu: 1000, payload: 1000, seed: 0 };
        let mut h = Hpcc::new(&HpccParams::default(), flow);
        for k in 0..300u64 {
            let mut s = IntStack::default();
            s.push(IntHop { qlen: 0, tx_bytes: k * 12_500, ts: Time::from_us(k), rate: BitsPerSec(100_000_000_000), port: 100 + (k % 100) as u32 });
            s.push(IntHop { qlen: 0, tx_bytes: k * 6_250, ts: Time::from_us(k), rate: BitsPerSec(100_000_000_000), port: 1 });
            h.on_ack(Time::ZERO, &ack(&s, k * 1000, k * 1000 + 100_000));
        }
        assert!((h.utilization() - 1.0).abs() < 1e-6, "{}", h.utilization());
    }

    #[test]
    fn the_minimum_rate_bounds_the_window_from_below() {
        let flow = FlowParams { line_rate: BitsPerSec(100_000_000_000), base_rtt: Time::from_us(10), mtu: 1000, payload: 1000, seed: 0 };
        let overload = |h: &mut Hpcc| {
            // A queue of 100 BDPs held for a whole T: u = 101.
            h.on_ack(Time::ZERO, &ack(&stack(12_500_000, 0, 0), 1, 2));
            h.on_ack(Time::ZERO, &ack(&stack(12_500_000, 125_000, 10_000), 3, 4));
        };
        let mut free = Hpcc::new(&HpccParams::default(), flow);
        overload(&mut free);
        // 125 KB / (101 / 0.95) + 62.5 B ≈ 1,238 B: about 1 Gbps.
        assert!((free.window().unwrap() as f64 - (125_000.0 * 0.95 / 101.0 + 62.5)).abs() < 2.0, "{:?}", free.window());
        let mut floored = Hpcc::new(&HpccParams { min_rate: Some(BitsPerSec::gbps(10)), ..Default::default() }, flow);
        overload(&mut floored);
        // 10 Gbps × 10 µs = 12,500 B.
        assert!(floored.window().unwrap().abs_diff(12_500) <= 1, "{:?}", floored.window());
        assert!(floored.rate().0.abs_diff(10_000_000_000) <= 1_000, "{}", floored.rate());
        // The committed reference is the floored window (ns-3 keeps the clamped rate): a light
        // RTT after it (u = 0.1) adds one step to 12,500 B, not to the 1,238 B of the cut.
        floored.on_ack(Time::ZERO, &ack(&stack(0, 137_500, 20_000), 5, 6));
        assert!((floored.window().unwrap() as f64 - 12_562.5).abs() < 2.0, "{:?}", floored.window());
    }

    fn unsafe_static(s: &IntStack) -> &'static IntStack {
        Box::leak(Box::new(*s))
    }
}
