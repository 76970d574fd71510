//! DCQCN reaction point (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
//! SIGCOMM 2015, §3 and Fig. 7), in integer arithmetic.
//!
//! - On a CNP (at most one reaction per `rate_decrease_interval`): the current rate is cut by
//!   α/2, α rises by g, and the increase stages reset. The target rate takes the current rate
//!   first when `clamp_target` is set or a timer stage has passed since the last cut.
//! - α is updated once per `alpha_interval`: up by g (α ← α(1 − g) + g) if a CNP arrived in
//!   that interval, else down (α ← α(1 − g)). The update is computed when α is next needed,
//!   for every interval that passed, so a 1 µs interval costs no events.
//! - Rate increase events come from a timer (`increase_timer`) and from a byte counter
//!   (`byte_counter` bytes sent; `0B` turns it off). With T and BC the counts of each since the
//!   last cut, counted before the event (as `RdmaHw::RateIncEventMlx` in HPCC's ns-3 does; BC
//!   reads as T when the byte counter is off, as that NIC has none):
//!   - while max(T, BC) < F: fast recovery, Rc = (Rc + Rt)/2 (F events of it after a cut);
//!   - while min(T, BC) > F: hyper increase, Rt += R_HAI, then Rc = (Rc + Rt)/2;
//!   - otherwise: additive increase, Rt += R_AI, then Rc = (Rc + Rt)/2.
//!
//! The defaults are the DCQCN of HPCC's and ConWeave's ns-3 simulators with the values of their
//! published experiment configs (`mix/config.txt`: ALPHA_RESUME_INTERVAL 1 µs,
//! RATE_DECREASE_INTERVAL 4 µs, RP_TIMER 300 µs, FAST_RECOVERY_TIMES 1, CLAMP_TARGET_RATE 0,
//! EWMA_GAIN 1/256, RATE_AI 40 Mb/s, RATE_HAI 100 Mb/s, MIN_RATE 100 Mb/s, no byte counter).
//! Those simulators model NVIDIA ConnectX's reaction point, whose firmware defaults share the
//! 1 µs α period, 4 µs `rate_reduce_monitor_period`, 300 µs `rpg_time_reset`, `rpg_threshold`
//! 1 and no clamping (`docs/rdma.md` compares the sets). [`DcqcnParams::sigcomm15`] is the
//! DCQCN paper's set, [`DcqcnParams::connectx`] the firmware's.
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
    /// Bytes sent per byte-counter stage; `"0B"` turns the byte counter off.
    pub byte_counter: Bytes,
    /// Fast-recovery stages F.
    pub fast_recovery: u32,
    pub rate_ai: BitsPerSec,
    pub rate_hai: BitsPerSec,
    pub min_rate: BitsPerSec,
    /// Lower the target to the current rate on every cut (otherwise only on a cut after a
    /// timer stage).
    pub clamp_target: bool,
    /// When a CNP cuts the rate.
    pub reaction: Reaction,
}

/// When DCQCN's reaction point cuts the rate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reaction {
    /// At the CNP itself, at most once per `rate_decrease_interval`; α also rises at the cut
    /// (the DCQCN paper's Fig. 7).
    #[default]
    OnCnp,
    /// At the next tick of a decrease timer that runs every `rate_decrease_interval` from the
    /// first CNP, if a CNP arrived since the last tick; α moves only on its own timer, and the
    /// first CNP sets α = 1 without cutting (HPCC's and ConWeave's ns-3 NIC:
    /// `RdmaHw::cnp_received_mlx`, `CheckRateDecreaseMlx`, `UpdateAlphaMlx`).
    Polled,
}

impl Default for DcqcnParams {
    /// HPCC's and ConWeave's ns-3 experiment values (see the module documentation).
    fn default() -> Self {
        DcqcnParams {
            g: 1.0 / 256.0,
            alpha_interval: Time::from_us(1),
            rate_decrease_interval: Time::from_us(4),
            increase_timer: Time::from_us(300),
            byte_counter: Bytes(0),
            fast_recovery: 1,
            rate_ai: BitsPerSec(40_000_000),
            rate_hai: BitsPerSec(100_000_000),
            min_rate: BitsPerSec(100_000_000),
            clamp_target: false,
            reaction: Reaction::OnCnp,
        }
    }
}

impl DcqcnParams {
    /// NVIDIA ConnectX-4-and-later firmware defaults (NVConfig / `mlxconfig`, documented in
    /// NVIDIA's "DCQCN CC Parameters"): `DCE_TCP_G` 1019 (g = 5/1024), `DCE_TCP_RTT` 1 µs,
    /// `RATE_REDUCE_MONITOR_PERIOD` 4 µs, `RPG_TIME_RESET` 300 µs, `RPG_BYTE_RESET` 32767 B,
    /// `RPG_THRESHOLD` 1, `RPG_AI_RATE` 5 Mb/s, `RPG_HAI_RATE` 50 Mb/s, `RPG_MIN_RATE` 1 Mb/s,
    /// `CLAMP_TGT_RATE` 0 (with `CLAMP_TGT_RATE_AFTER_TIME_INC` 1, the rule this model follows).
    pub fn connectx() -> DcqcnParams {
        DcqcnParams {
            g: 5.0 / 1024.0,
            alpha_interval: Time::from_us(1),
            rate_decrease_interval: Time::from_us(4),
            increase_timer: Time::from_us(300),
            byte_counter: Bytes(32767),
            fast_recovery: 1,
            rate_ai: BitsPerSec(5_000_000),
            rate_hai: BitsPerSec(50_000_000),
            min_rate: BitsPerSec(1_000_000),
            clamp_target: false,
            reaction: Reaction::OnCnp,
        }
    }

    /// The DCQCN paper's parameters (SIGCOMM 2015 §5: g = 1/256, 55 µs timers, a 10 MB byte
    /// counter, F = 5, R_AI 40 Mb/s, the target clamped on every cut) with HPCC's simulator's
    /// R_HAI, minimum rate and a 50 µs decrease interval: rnicsim's defaults until it took the
    /// ns-3 experiments' set.
    pub fn sigcomm15() -> DcqcnParams {
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
            reaction: Reaction::OnCnp,
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
    /// Whether a CNP arrived in the α interval that began at `alpha_epoch`.
    cnp_since_alpha: bool,
    alpha_epoch: Time,
    last_cut: Option<Time>,
    /// Timer (T) and byte-counter (BC) stages since the last cut.
    t_stage: u32,
    bc_stage: u32,
    bytes: u64,
    next_increase: Time,
    /// Until the first CNP the flow runs at line rate with no timers.
    active: bool,
    /// Polled reaction: whether a CNP was ever seen, the decrease timer's first tick (its
    /// period is `decrease_interval`), and the tick at which a cut is due (`Time::MAX`: none).
    polled: bool,
    seen_cnp: bool,
    decrease_origin: Time,
    next_cut: Time,
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
            byte_counter: p.byte_counter.0,
            alpha_interval: p.alpha_interval,
            decrease_interval: p.rate_decrease_interval,
            increase_interval: p.increase_timer,
            cnp_since_alpha: false,
            alpha_epoch: Time::ZERO,
            last_cut: None,
            t_stage: 0,
            bc_stage: 0,
            bytes: 0,
            next_increase: Time::MAX,
            active: false,
            polled: p.reaction == Reaction::Polled,
            seen_cnp: false,
            decrease_origin: Time::ZERO,
            next_cut: Time::MAX,
        }
    }

    /// Polled reaction: a CNP sets the flags the timers read.
    fn on_cnp_polled(&mut self, now: Time) {
        if !self.seen_cnp {
            // The first CNP: α = 1, its flag cleared, and the timers start (the decrease timer
            // 1 ns after the α timer, as ns-3 schedules it, so α is updated first).
            self.seen_cnp = true;
            self.alpha = ALPHA_ONE;
            self.alpha_epoch = now;
            self.cnp_since_alpha = false;
            self.decrease_origin = now + Time::from_ns(1) + self.decrease_interval;
        } else {
            self.advance_alpha(now);
            self.cnp_since_alpha = true;
        }
        self.active = true;
        if self.next_cut == Time::MAX {
            // The decrease timer's first tick after now.
            let iv = self.decrease_interval.0.max(1);
            let ticks = if now < self.decrease_origin { 0 } else { (now.0 - self.decrease_origin.0) / iv + 1 };
            self.next_cut = Time(self.decrease_origin.0 + ticks * iv);
        }
    }

    /// A cut: the target follows the rate if clamping or after a timer stage, the rate falls
    /// by α/2, the increase stages restart.
    fn cut(&mut self, now: Time) {
        if self.clamp || self.t_stage > 0 {
            self.rt = self.rc;
        }
        let cut = (self.rc as u128 * self.alpha as u128 / (2 * ALPHA_ONE as u128)) as u64;
        self.rc = (self.rc - cut).max(self.min_rate);
        self.t_stage = 0;
        self.bc_stage = 0;
        self.bytes = 0;
        self.next_increase = now + self.increase_interval;
    }

    /// α as a fraction (for reports and tests).
    pub fn alpha(&self) -> f64 {
        self.alpha as f64 / ALPHA_ONE as f64
    }

    pub fn target(&self) -> BitsPerSec {
        BitsPerSec(self.rt)
    }

    /// Applies α's updates for every whole interval since `alpha_epoch` up to `now`: the
    /// first counts the CNP flag, the rest are plain decays.
    fn advance_alpha(&mut self, now: Time) {
        let iv = self.alpha_interval.0.max(1);
        if now.0 < self.alpha_epoch.0 + iv {
            return;
        }
        let k = (now.0 - self.alpha_epoch.0) / iv;
        self.alpha -= (self.alpha * self.g) >> 20;
        if self.cnp_since_alpha {
            self.alpha += self.g;
        }
        self.cnp_since_alpha = false;
        self.alpha = decay(self.alpha, self.g, k - 1);
        self.alpha_epoch = Time(self.alpha_epoch.0 + k * iv);
    }

    /// One rate-increase event; the stage counters are those before it.
    fn increase(&mut self) {
        let bc = if self.byte_counter == 0 { self.t_stage } else { self.bc_stage };
        let (lo, hi) = (self.t_stage.min(bc), self.t_stage.max(bc));
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
        if !self.active || self.byte_counter == 0 {
            return;
        }
        self.bytes += bytes;
        while self.bytes >= self.byte_counter {
            self.bytes -= self.byte_counter;
            self.increase();
            self.bc_stage += 1;
        }
    }

    fn on_cnp(&mut self, now: Time) {
        if self.polled {
            self.on_cnp_polled(now);
            return;
        }
        if self.active {
            self.advance_alpha(now);
        } else {
            self.active = true;
            self.alpha_epoch = now;
        }
        self.cnp_since_alpha = true;
        if self.last_cut.is_some_and(|t| now < t + self.decrease_interval) {
            return;
        }
        self.last_cut = Some(now);
        // Without clamping, the target follows the rate only once a timer stage has passed
        // since the last cut (ConnectX's clamp_tgt_rate_after_time_inc; HPCC's ns-3 NIC tests
        // the same time stage). Before the first cut the target is the line rate.
        self.cut(now);
        self.alpha = self.alpha - ((self.alpha * self.g) >> 20) + self.g;
        self.cnp_since_alpha = false;
        self.alpha_epoch = now;
    }

    fn on_timer(&mut self, now: Time) {
        self.advance_alpha(now);
        if now >= self.next_cut {
            self.next_cut = Time::MAX;
            self.cut(now);
        }
        if now >= self.next_increase {
            self.increase();
            self.t_stage += 1;
            self.next_increase = now + self.increase_interval;
        }
        if self.rc >= self.line && self.rt >= self.line && !self.cnp_since_alpha && self.alpha < self.g && self.next_cut == Time::MAX {
            // Fully recovered: stop the timer until the next CNP (α stays where it is).
            self.active = false;
            self.next_increase = Time::MAX;
        }
    }

    fn next_timer(&self) -> Option<Time> {
        let t = self.next_increase.min(self.next_cut);
        (t != Time::MAX).then_some(t)
    }

    fn rate(&self) -> BitsPerSec {
        BitsPerSec(self.rc)
    }
}

/// α × (1 − g)^n in 2^-20 units, by squaring (n can be thousands after a quiet spell).
fn decay(alpha: u64, g: u64, n: u64) -> u64 {
    let (mut factor, mut base, mut e) = (ALPHA_ONE, ALPHA_ONE - g, n);
    while e > 0 && factor > 0 {
        if e & 1 == 1 {
            factor = (factor * base) >> 20;
        }
        base = (base * base) >> 20;
        e >>= 1;
    }
    (alpha * factor) >> 20
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow() -> FlowParams {
        FlowParams { line_rate: BitsPerSec(100_000_000_000), base_rtt: Time::from_us(8), mtu: 1062, payload: 1000, seed: 0 }
    }

    #[test]
    fn first_cnp_halves_the_rate() {
        let mut d = Dcqcn::new(&DcqcnParams::default(), flow());
        assert_eq!(d.rate().0, 100_000_000_000);
        d.on_cnp(Time::from_us(1));
        // α starts at 1: Rc × (1 − 1/2).
        assert_eq!(d.rate().0, 50_000_000_000);
        assert_eq!(d.target().0, 100_000_000_000);
        // A second CNP within the decrease interval (4 µs) is ignored.
        d.on_cnp(Time::from_us(3));
        assert_eq!(d.rate().0, 50_000_000_000);
    }

    /// Drives a DCQCN through its own timer up to `until`.
    fn run_timers(d: &mut Dcqcn, until: Time) {
        while let Some(t) = d.next_timer().filter(|&t| t <= until) {
            d.on_timer(t);
        }
    }

    #[test]
    fn polled_reaction_cuts_at_the_decrease_timer_tick_with_the_alpha_of_that_time() {
        let p = DcqcnParams { reaction: Reaction::Polled, ..DcqcnParams::default() };
        let line = 100_000_000_000f64;
        let mut d = Dcqcn::new(&p, flow());
        // The first CNP cuts nothing: it sets α = 1 and starts the timers.
        d.on_cnp(Time::from_us(1));
        assert_eq!(d.rate().0, 100_000_000_000);
        // First tick: 1 µs + 4 µs + 1 ns. α has decayed at 2, 3, 4 and 5 µs with no CNP in
        // those periods: α = (255/256)^4 and the rate falls by α/2.
        let tick = Time::from_us(5) + Time::from_ns(1);
        assert_eq!(d.next_timer(), Some(tick));
        run_timers(&mut d, tick - Time(1));
        assert_eq!(d.rate().0, 100_000_000_000, "no cut before the tick");
        run_timers(&mut d, tick);
        let alpha = (255.0f64 / 256.0).powi(4);
        let expect = line * (1.0 - alpha / 2.0);
        assert!((d.rate().0 as f64 - expect).abs() < 1e6, "{} vs {expect}", d.rate().0);
        assert!((d.alpha() - alpha).abs() < 1e-4, "α is not raised by the cut: {}", d.alpha());
        // Three CNPs between ticks make one cut, at the tick after them (9.001 µs and
        // 13.001 µs are ticks: the CNPs at 9.5–12 µs are cut at 13.001 µs).
        let before = d.rate().0;
        for t in [9_500, 10_000, 12_000] {
            d.on_cnp(Time::from_ns(t));
        }
        run_timers(&mut d, Time::from_ns(13_000));
        assert_eq!(d.rate().0, before, "nothing until the tick");
        run_timers(&mut d, Time::from_ns(13_001));
        // α at 13.001 µs: decays at 6..=9 µs, then the periods ending at 10, 11 and 13 µs
        // saw CNPs (9.5, 10, 12 µs) and the one ending at 12 µs did not.
        let mut a = alpha;
        let g = 1.0 / 256.0;
        for cnp in [false, false, false, false, true, true, false, true] {
            a = a * (1.0 - g) + if cnp { g } else { 0.0 };
        }
        let expect = before as f64 * (1.0 - a / 2.0);
        assert!((d.rate().0 as f64 - expect).abs() < 1e6, "{} vs {expect}", d.rate().0);
        // No CNP since: the next ticks cut nothing.
        let after = d.rate().0;
        run_timers(&mut d, Time::from_us(100));
        assert_eq!(d.rate().0, after);
    }

    #[test]
    fn fast_recovery_halves_the_gap_each_timer() {
        let p = DcqcnParams { byte_counter: Bytes(u64::MAX), ..DcqcnParams::sigcomm15() };
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

    /// α after `periods` whole intervals, one update per interval as the firmware does it.
    fn alpha_stepwise(mut a: u64, g: u64, cnp_first: bool, periods: u64) -> u64 {
        for k in 0..periods {
            a -= (a * g) >> 20;
            if k == 0 && cnp_first {
                a += g;
            }
        }
        a
    }

    #[test]
    fn alpha_is_updated_once_per_interval_without_timer_events() {
        // ConnectX: g = 5/1024 per 1 µs interval, and only the 300 µs increase timer.
        let mut d = Dcqcn::new(&DcqcnParams::connectx(), flow());
        d.on_cnp(Time::ZERO);
        assert_eq!(d.next_timer(), Some(Time::from_us(300)), "no α timer");
        let (a0, g) = (d.alpha, d.g);
        // A CNP inside the first interval (ignored by the decrease interval) raises α at its end.
        d.on_cnp(Time::from_ns(500));
        d.on_timer(Time::from_us(300));
        let want = alpha_stepwise(a0, g, true, 300);
        assert!(want.abs_diff(d.alpha) <= 300, "{} vs step by step {}", d.alpha, want);
        let expect = a0 as f64 / ALPHA_ONE as f64 * (1.0 - 5.0 / 1024.0f64).powi(300) + 5.0 / 1024.0 * (1.0 - 5.0 / 1024.0f64).powi(299);
        assert!((d.alpha() - expect).abs() < 1e-3, "{} vs {expect}", d.alpha());
        // A partial interval changes nothing.
        let a = d.alpha;
        d.advance_alpha(Time::from_ns(300_999));
        assert_eq!(d.alpha, a);
    }

    #[test]
    fn additive_increase_after_fast_recovery() {
        let p = DcqcnParams { byte_counter: Bytes(u64::MAX), ..DcqcnParams::sigcomm15() };
        let mut d = Dcqcn::new(&p, flow());
        d.on_cnp(Time::ZERO);
        d.on_cnp(Time::from_us(60)); // target := 50 Gbps (clamped), rate cut again
        let rt0 = d.target().0;
        assert_eq!(rt0, 50_000_000_000);
        let mut t = Time::from_us(60);
        // Events 1..F are fast recovery (stages 0..F−1, as HPCC's simulator counts them).
        for _ in 0..5 {
            t = t + Time::from_us(55);
            d.on_timer(t);
            assert_eq!(d.target().0, rt0, "fast recovery keeps the target");
        }
        t = t + Time::from_us(55);
        d.on_timer(t);
        assert_eq!(d.target().0, rt0 + 40_000_000, "additive increase by R_AI");
    }

    #[test]
    fn without_clamping_the_target_holds_until_a_timer_stage_passes() {
        let mut d = Dcqcn::new(&DcqcnParams::connectx(), flow());
        d.on_cnp(Time::ZERO); // first cut: target = line, rate 50 Gbps
        // Byte-counter stages alone (64 KB sent) do not move the target down on the next cut.
        d.on_tx(Time::from_us(5), 65_534, 64);
        d.on_cnp(Time::from_us(50));
        assert_eq!(d.target().0, 100_000_000_000);
        // After the 300 µs timer stage, a cut lowers the target to the current rate.
        d.on_timer(Time::from_us(350));
        let rc = d.rate().0;
        d.on_cnp(Time::from_us(360));
        assert_eq!(d.target().0, rc);
    }

    #[test]
    fn byte_counter_drives_recovery_to_line_rate() {
        // ConnectX: a stage per 32767 B sent, long before the 300 µs timer's first.
        let mut d = Dcqcn::new(&DcqcnParams::connectx(), flow());
        d.on_cnp(Time::ZERO);
        let mut t = Time::ZERO;
        let mut sent = 0u64;
        while d.rate().0 < 99_000_000_000 {
            // Send for 1 µs at the current rate.
            let bytes = d.rate().0 / 8 / 1_000_000;
            t = t + Time::from_us(1);
            d.on_tx(t, bytes, 1);
            sent += bytes;
            if d.next_timer().is_some_and(|n| n <= t) {
                d.on_timer(t);
            }
            assert!(t < Time::from_ms(5), "recovers within 5 ms: {} Gbps at {t}", d.rate().0 / 1_000_000_000);
        }
        assert!(t < Time::from_us(300), "the byte counter, not the timer, brought it back: {t}");
        assert!(sent > 32767, "{sent}");
    }

    #[test]
    fn default_stages_follow_the_timer_alone() {
        // No byte counter, F = 1: after a cut, one fast-recovery event, one additive increase,
        // then hyper increases, one per 300 µs timer event; sending changes nothing.
        let mut d = Dcqcn::new(&DcqcnParams::default(), flow());
        d.on_cnp(Time::ZERO);
        d.on_cnp(Time::from_us(10)); // no timer stage yet: the target stays at line rate
        assert_eq!(d.target().0, 100_000_000_000);
        d.on_timer(Time::from_us(310));
        d.on_cnp(Time::from_us(320)); // a timer stage passed: target := current rate
        let rt = d.target().0;
        assert!(rt < 100_000_000_000);
        d.on_tx(Time::from_us(330), 100 << 20, 100_000);
        assert_eq!(d.target().0, rt, "no byte counter");
        let rc = d.rate().0;
        d.on_timer(Time::from_us(620));
        assert_eq!((d.target().0, d.rate().0), (rt, (rc + rt) / 2), "fast recovery");
        d.on_timer(Time::from_us(920));
        assert_eq!(d.target().0, rt + 40_000_000, "additive increase");
        d.on_timer(Time::from_us(1220));
        assert_eq!(d.target().0, rt + 140_000_000, "hyper increase");
    }
}
