//! Swift, delay-based congestion control, on SCR (paper A.6, after Kumar et al., SIGCOMM '20).
//!
//! Each (coalesced) ACK event carries the newest round-trip sample and the bytes it newly
//! acknowledges. Swift controls a window; the NIC only takes a dequeue rate, so the two are
//! translated by the bandwidth-delay product at the sampled round trip (A.6: "the BDP
//! approach"). The window is the state: the control law moves it, and every sample sets the
//! rate to window / RTT. A window sender's rate falls as its queue grows (it is clocked by its
//! ACKs); recomputing the rate from the window at each new RTT gives a rate-paced sender that
//! property, between control steps and before any cut.
//!
//! - **Target delay** = `base_target` + `hops` × `per_hop` + flow scaling, where flow scaling
//!   is `fs_range` at `fs_min_rate` or below, 0 at `fs_max_rate` or above, and between them
//!   proportional to 1/√rate − 1/√`fs_max_rate` (Swift's α/√cwnd + β with the window taken at
//!   the base RTT; the window's RTT factor cancels). A.6's testbed: 1 µs base, 1 hop of 2 µs,
//!   a 2 µs range from 32 to 96 Gbps, so the target falls from 5 µs at 32 Gbps to 3 µs at 96.
//!   Computed with the bitwise inverse square root of [`crate::nic::scr::compact`].
//! - **Below the target**: additive increase, `ai` bytes of window per window acknowledged
//!   (window += ai × acked / window), so about `ai` per round trip however ACKs coalesce. The
//!   window stops at line rate × target delay: more would only be spent as queue once the
//!   flow reached line rate.
//! - **At or above it**: multiplicative decrease by max(1 − β·(delay − target)/delay,
//!   1 − `max_mdf`), at most once per round trip: only on a sample whose packet left after the
//!   last cut was in force (Swift's "once per RTT", with SCR's lag, A.11, added: a cut takes
//!   effect after the thread's processing and the rate install, and samples from before then
//!   would cut again for the same congestion).
//!
//! Rates are clamped to [`min_rate`, line rate]; rates in Mbps and times in ns, integers only.

use super::{bps, mbps, Action, Env, FlowEntry, Policy, Verdict};
use crate::nic::scr::compact::inv_sqrt_q32;
use crate::nic::scr::event::{Kind, ScrEvent};
use crate::units::{BitsPerSec, Bytes, Time};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwiftParams {
    /// The target delay's fixed part (A.6: 1 µs).
    #[serde(default = "default_base_target")]
    pub base_target: Time,
    /// Hops on the path (A.6: 1) and the target added per hop (A.6: 2 µs).
    #[serde(default = "default_hops")]
    pub hops: u32,
    #[serde(default = "default_per_hop")]
    pub per_hop: Time,
    /// The flow-scaling range (A.6: 2 µs) and the rates it spans (A.6's "Min Rate" 32 Gbps and
    /// "Max Rate" 96 Gbps).
    #[serde(default = "default_fs_range")]
    pub fs_range: Time,
    #[serde(default = "default_fs_min")]
    pub fs_min_rate: BitsPerSec,
    #[serde(default = "default_fs_max")]
    pub fs_max_rate: BitsPerSec,
    /// Window added per window acknowledged (Swift: one packet per round trip).
    #[serde(default = "default_ai")]
    pub ai: Bytes,
    /// Multiplicative decrease: β (per mille) and the largest cut (per mille).
    #[serde(default = "default_beta")]
    pub beta_permille: u32,
    #[serde(default = "default_max_mdf")]
    pub max_mdf_permille: u32,
    /// No flow is set below this rate.
    #[serde(default = "default_min_rate")]
    pub min_rate: BitsPerSec,
    /// Core cycles per handled ACK event (A.11: Swift with its bookkeeping takes about 4 µs at
    /// 505 MHz, 2,020 cycles).
    #[serde(default = "default_cycles")]
    pub cycles: u32,
}

fn default_base_target() -> Time {
    Time::from_us(1)
}
fn default_hops() -> u32 {
    1
}
fn default_per_hop() -> Time {
    Time::from_us(2)
}
fn default_fs_range() -> Time {
    Time::from_us(2)
}
fn default_fs_min() -> BitsPerSec {
    BitsPerSec::gbps(32)
}
fn default_fs_max() -> BitsPerSec {
    BitsPerSec::gbps(96)
}
fn default_ai() -> Bytes {
    Bytes(1024)
}
fn default_beta() -> u32 {
    800
}
fn default_max_mdf() -> u32 {
    500
}
fn default_min_rate() -> BitsPerSec {
    BitsPerSec(100_000_000)
}
fn default_cycles() -> u32 {
    2020
}

impl Default for SwiftParams {
    fn default() -> Self {
        SwiftParams {
            base_target: default_base_target(),
            hops: default_hops(),
            per_hop: default_per_hop(),
            fs_range: default_fs_range(),
            fs_min_rate: default_fs_min(),
            fs_max_rate: default_fs_max(),
            ai: default_ai(),
            beta_permille: default_beta(),
            max_mdf_permille: default_max_mdf(),
            min_rate: default_min_rate(),
            cycles: default_cycles(),
        }
    }
}

impl SwiftParams {
    /// What is wrong with the parameters, if anything (key, why).
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if self.fs_min_rate.0 < 1_000_000 {
            return Err(("fs_min_rate", format!("flow scaling starts at 1Mbps or more, got {}", self.fs_min_rate)));
        }
        if self.fs_max_rate <= self.fs_min_rate {
            // Named at the one the user moved: the maximum if it is not the default's.
            let key = if self.fs_max_rate == default_fs_max() { "fs_min_rate" } else { "fs_max_rate" };
            return Err((key, format!("flow scaling needs fs_min_rate < fs_max_rate (got {} and {})", self.fs_min_rate, self.fs_max_rate)));
        }
        if self.beta_permille == 0 || self.beta_permille > 1000 {
            return Err(("beta_permille", format!("expected 1 to 1000 (0 would never cut), got {}", self.beta_permille)));
        }
        if self.max_mdf_permille > 1000 {
            return Err(("max_mdf_permille", format!("expected at most 1000, got {}", self.max_mdf_permille)));
        }
        if self.ai.0 == 0 || self.ai.0 > u32::MAX as u64 / 2 {
            return Err(("ai", format!("the additive increase must be 1 B to 2 GiB (got {} B)", self.ai.0)));
        }
        Ok(())
    }
}

pub struct Swift {
    p: SwiftParams,
    /// 1/√rate (rate in Mbps) at the ends of the flow-scaling range, 32 fractional bits.
    inv_min: u64,
    inv_max: u64,
    decreases: u64,
}

/// The per-flow context (24 bytes).
#[derive(Clone, Copy, Debug, Default)]
pub struct SwiftFlow {
    /// The window (bytes) after the last event.
    pub window: u32,
    /// The smallest RTT sample (ns), kept for reports.
    pub base_rtt_ns: u32,
    /// The dequeue rate last set (Mbps); 0 until the first sample.
    pub rate_mbps: u32,
    /// The target delay at that rate (ns), kept for reports.
    pub target_ns: u32,
    /// When the window was last cut.
    pub last_decrease: Time,
}

impl Swift {
    pub fn new(p: SwiftParams) -> Swift {
        let (inv_min, inv_max) = (inv_sqrt_q32(mbps(p.fs_min_rate) as u64), inv_sqrt_q32(mbps(p.fs_max_rate) as u64));
        Swift { p, inv_min, inv_max, decreases: 0 }
    }

    /// The target delay (ns) of a flow at `rate_mbps`.
    pub fn target_ns(&self, rate_mbps: u32) -> u32 {
        let fixed = self.p.base_target.as_ns() + self.p.hops as u64 * self.p.per_hop.as_ns();
        let range = self.p.fs_range.as_ns();
        let fs = if rate_mbps <= mbps(self.p.fs_min_rate) {
            range
        } else if rate_mbps >= mbps(self.p.fs_max_rate) {
            0
        } else {
            let above = inv_sqrt_q32(rate_mbps as u64).saturating_sub(self.inv_max);
            let span = (self.inv_min - self.inv_max).max(1);
            (range as u128 * above as u128 / span as u128) as u64
        };
        (fixed + fs).min(u32::MAX as u64) as u32
    }
}

/// The bytes `rate_mbps` keeps in flight over `ns` (Mbps × ns / 8,000).
fn window_bytes(rate_mbps: u32, ns: u32) -> u32 {
    (rate_mbps as u64 * ns as u64 / 8000).clamp(1, u32::MAX as u64) as u32
}

impl Policy for Swift {
    type Flow = SwiftFlow;
    fn name(&self) -> &'static str {
        "swift"
    }
    fn subscribes(&self, kind: Kind) -> bool {
        matches!(kind, Kind::Ack | Kind::Rtt)
    }
    fn cycles(&self, _ev: &ScrEvent) -> u32 {
        self.p.cycles
    }
    fn on_event(&mut self, ev: &ScrEvent, f: &mut SwiftFlow, env: &mut Env) -> Verdict {
        let delay = ev.rtt.as_ns().min(u32::MAX as u64) as u32;
        if delay == 0 {
            return Verdict::Adjusting;
        }
        let line = mbps(env.line_rate);
        let floor = mbps(self.p.min_rate).max(1).min(line);
        if f.rate_mbps == 0 {
            // The first sample: the flow has been running unlimited, at line rate, so its
            // window is what line rate keeps in flight over this round trip.
            f.rate_mbps = line;
            f.target_ns = self.target_ns(line);
            f.base_rtt_ns = delay;
            f.window = window_bytes(line, delay);
        }
        f.base_rtt_ns = f.base_rtt_ns.min(delay);
        let target = self.target_ns(f.rate_mbps);
        let mut w = f.window.max(1) as u64;
        if delay < target {
            // Additive increase: ai per window acknowledged, up to line rate at the target.
            let cap = window_bytes(line, target) as u64;
            if w < cap {
                w = (w + self.p.ai.0 * ev.bytes / w).min(cap);
            }
        } else if ev.at.saturating_sub(ev.rtt) >= f.last_decrease {
            // Once per round trip of the cut rate: the sampled packet left after the last cut
            // was in force (`last_decrease` holds when that was: the thread's processing and
            // the NIC's install latency after the decision, A.11); a sample from before says
            // nothing about it.
            let cut = (self.p.beta_permille as u64 * (delay - target) as u64 / delay as u64).min(self.p.max_mdf_permille as u64);
            if cut > 0 {
                // Not below what the rate floor keeps in flight: a window far under it would
                // leap back to line rate on the next acknowledgment.
                w = (w * (1000 - cut) / 1000).max(window_bytes(floor, delay) as u64);
                f.last_decrease = env.in_force;
                self.decreases += 1;
            }
        }
        f.window = w.min(u32::MAX as u64) as u32;
        let rate = ((w * 8000 / delay as u64).min(u32::MAX as u64) as u32).clamp(floor, line);
        if rate != f.rate_mbps {
            f.rate_mbps = rate;
            f.target_ns = self.target_ns(rate);
            env.actions.push(Action::SetRate { flow: ev.flow, bps: bps(rate) });
        }
        Verdict::Adjusting
    }
    fn report(&self, flows: &[FlowEntry<SwiftFlow>]) -> Vec<(&'static str, f64)> {
        let live: Vec<_> = flows.iter().filter(|f| !f.left && f.ctx.rate_mbps > 0).collect();
        let n = live.len().max(1) as f64;
        let mean = |g: &dyn Fn(&SwiftFlow) -> f64| live.iter().map(|f| g(&f.ctx)).sum::<f64>() / n;
        vec![
            ("flows", live.len() as f64),
            ("rate_gbps", mean(&|c| c.rate_mbps as f64 / 1e3)),
            ("target_us", mean(&|c| c.target_ns as f64 / 1e3)),
            ("base_rtt_us", mean(&|c| c.base_rtt_ns as f64 / 1e3)),
            ("decreases", self.decreases as f64),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(at_us: u64, rtt_ns: u64, bytes: u64) -> ScrEvent {
        let at = Time::from_us(at_us);
        ScrEvent { kind: Kind::Ack, flow: 7, at, first_at: at, bytes, count: 1, rtt: Time::from_ns(rtt_ns), value: 0, aux: 0 }
    }

    #[test]
    fn the_target_delay_follows_a6s_parameters() {
        let s = Swift::new(SwiftParams::default());
        // 1 µs base + 1 hop × 2 µs, plus flow scaling: the whole 2 µs at 32 Gbps, none at 96.
        assert_eq!(s.target_ns(32_000), 5000);
        assert_eq!(s.target_ns(10_000), 5000);
        assert_eq!(s.target_ns(96_000), 3000);
        assert_eq!(s.target_ns(100_000), 3000);
        // In between: 2 µs × (1/√r − 1/√96)/(1/√32 − 1/√96), by hand in f64.
        for r in [40_000u32, 50_000, 64_000, 80_000] {
            let f = |x: f64| 1.0 / x.sqrt();
            let want = 3000.0 + 2000.0 * (f(r as f64) - f(96_000.0)) / (f(32_000.0) - f(96_000.0));
            let got = s.target_ns(r) as f64;
            assert!((got - want).abs() <= 1.0, "{r} Mbps: {got} vs {want}");
        }
    }

    fn env(now_us: u64, actions: &mut Vec<Action>) -> Env<'_> {
        super::super::test_env(Time::from_us(now_us), actions)
    }

    #[test]
    fn below_target_the_window_grows_by_ai_per_window_and_above_it_is_cut_once_per_rtt() {
        let mut s = Swift::new(SwiftParams::default());
        let mut actions = Vec::new();
        let mut f = SwiftFlow::default();
        // First sample 2 µs: the flow ran at line rate, so its window is 100 Gbps × 2 µs =
        // 25,000 B. Below the 3 µs target it grows by ai × 1,000 / 25,000 = 40 B: 25,040 B
        // over 2 µs is above line rate, so the rate stays at the line.
        s.on_event(&ack(1, 2000, 1000), &mut f, &mut env(1, &mut actions));
        assert_eq!((f.window, f.base_rtt_ns), (25_040, 2000));
        assert_eq!(f.rate_mbps, 100_000, "clamped to the line rate");
        // 8 µs of delay against a 3 µs target (at 100 Gbps): the window is cut by
        // min(0.8 × 5/8, 0.5) = 0.5 to 12,520 B, and 12,520 B per 8 µs is 12,520 Mbps. Decided
        // at 10 µs, the cut is in force at 15 µs (the thread's processing and the install).
        s.on_event(&ack(10, 8000, 1000), &mut f, &mut Env { in_force: Time::from_us(15), ..env(10, &mut actions) });
        assert_eq!((f.window, f.rate_mbps), (12_520, 12_520));
        // Within the same round trip (8 µs) no second cut: window and rate stay.
        s.on_event(&ack(12, 8000, 0), &mut f, &mut env(12, &mut actions));
        assert_eq!((f.window, f.rate_mbps), (12_520, 12_520));
        // Nor from a packet that left after the decision but before the cut was in force (this
        // one left at 20 − 8 = 12 µs); the queue has grown to 10 µs, and the same window over
        // it is 10,016 Mbps: the rate falls as a window sender's would.
        s.on_event(&ack(20, 10_000, 0), &mut f, &mut env(20, &mut actions));
        assert_eq!((f.window, f.rate_mbps, s.decreases), (12_520, 10_016, 1));
        // Delay exactly at the target (5 µs below 32 Gbps) cuts nothing and counts as no
        // decrease; the window over 5 µs is 20,032 Mbps.
        s.on_event(&ack(21, 5000, 0), &mut f, &mut env(21, &mut actions));
        assert_eq!((f.window, f.rate_mbps, s.decreases), (12_520, 20_032, 1));
        // 4 µs, below the target: the window gains ai × 25,000 / 12,520 = 2,044 B (rounded
        // down): 14,564 B over 4 µs = 29,128 Mbps.
        s.on_event(&ack(30, 4000, 25_000), &mut f, &mut env(30, &mut actions));
        assert_eq!((f.window, f.rate_mbps), (14_564, 29_128));
        // A small overshoot, 5.5 µs against 5, cuts by β·0.5/5.5 = 72.7‰ (72 in integers):
        // 14,564 × 0.928 = 13,515 B over 5.5 µs = 19,658 Mbps.
        s.on_event(&ack(60, 5500, 0), &mut f, &mut env(60, &mut actions));
        assert_eq!((f.window, f.rate_mbps, s.decreases), (13_515, 19_658, 2));
        // Every change of rate was handed to the NIC as a dequeue rate.
        let Action::SetRate { bps: last, .. } = *actions.last().unwrap() else { panic!() };
        assert_eq!(last, bps(f.rate_mbps));
    }

    #[test]
    fn the_window_stops_growing_at_line_rate_over_the_target_delay() {
        // An uncontested flow: 1 µs round trips, always below the 3 µs target at line rate.
        // However many bytes are acknowledged, the window stops at 100 Gbps × 3 µs = 37,500 B,
        // so a queue building later cuts the rate as soon as the delay passes 3 µs.
        let mut s = Swift::new(SwiftParams::default());
        let mut actions = Vec::new();
        let mut f = SwiftFlow::default();
        for t in 1..2000 {
            s.on_event(&ack(t, 1000, 12_500), &mut f, &mut env(t, &mut actions));
        }
        assert_eq!((f.window, f.rate_mbps), (37_500, 100_000));
        assert!(actions.is_empty(), "the rate never left the line: {actions:?}");
        // 6 µs of delay: the window is cut by 0.8 × 3/6 = 0.4 to 22,500 B, over 6 µs 30,000
        // Mbps. Without the cap the window would be far larger and the rate would stay
        // at the line.
        s.on_event(&ack(3000, 6000, 0), &mut f, &mut env(3000, &mut actions));
        assert_eq!((f.window, f.rate_mbps), (22_500, 30_000));
        // Cut after cut at 50 µs (every sample newer than the last cut): the window stops at
        // what the 100 Mbps floor keeps in flight over 50 µs, 625 B, rather than shrinking to
        // a byte.
        for k in 1..40 {
            let t = 3000 + 100 * k;
            s.on_event(&ack(t, 50_000, 0), &mut f, &mut env(t, &mut actions));
        }
        assert_eq!((f.window, f.rate_mbps), (625, 100));
    }
}
