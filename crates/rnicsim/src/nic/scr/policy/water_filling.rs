//! Water filling (progressive filling to max-min fairness, paper §5.1, Fig. 9, A.4, Table 5).
//!
//! Each flow's bandwidth is measured from its TX events: the bytes of an event (coalesced by
//! accumulation) over the time since the flow's previous event, smoothed by a time-weighted
//! EWMA that its first sample seeds. A span that began before the flow's current rate was in
//! force does not measure that rate (part ran at the old rate; after a join, the joiner's
//! unpaced burst held the flow off the wire), so it may raise the estimate but not lower it
//! or seed it; a flow with no estimate is not judged. Once the flow's last rate change has
//! taken effect (`install_latency` after the decision; judging a rate not yet in force makes
//! the rates run ahead of what is measured and oscillate) and, optionally, been measured for `settle`, each event judges the flow:
//! - it fills its dequeue rate (EWMA ≥ `saturated` × rate: it is *hungry*) and is below the
//!   water level (the line rate less what the other, satisfied, flows use, shared by the hungry
//!   ones): one `step` up, as far as the link has room;
//! - it is hungry, more than a step above the level (it filled while others could not), and
//!   the pool has less than a step left: one `step` down, back to the pool, for the flows
//!   below the level;
//! - it uses far less than its rate (EWMA < `reclaim` × rate): its rate drops to what it uses
//!   plus one step (never below `min_rate`) and the rest returns to the pool;
//! - it uses less than it would fill while some flow is hungry: its rate drops to a step above
//!   the rate its use would fill (EWMA / `saturated`), if that is at least a step lower;
//! - otherwise it is stable.
//!
//! So the hungry flows meet at one level and the others keep what they use: max-min fairness.
//! Weighted, if applications give their queue pairs weights: an application hint (SCR's host
//! domain, `World::write_hint`, perftest's `hint`) is the flow's weight (unhinted flows weigh
//! 1), and a hungry flow's level is the shared level per unit of weight times its own.
//! The rates of all flows never add up to more than the line rate. A joining flow (§5.1,
//! Fig. 9c) scales every other flow to (n−1)/n of its rate and starts at 1/n of the line rate;
//! Fig. 9a/9b's alternatives (halve the others; start the new flow low) and A.4's restart of
//! every flow from `start_rate` are selectable. A leaving flow's rate is shared among the
//! active flows in proportion to their rates, undoing a join's (n−1)/n (§5.1: "reclaim its
//! allocated DequeueRate, making it available for other flows"); `leave = "pool"` returns it
//! to the pool instead, which the hungry flows refill by steps.
//! Rates are integer Mbps, the EWMA integer arithmetic, as a DPA port would have them.

use super::{bps, mbps, Action, Env, FlowEntry, Policy, Verdict};
use crate::nic::scr::event::{Kind, ScrEvent};
use crate::units::{BitsPerSec, Time};
use serde::{Deserialize, Serialize};

/// What happens to a leaving flow's rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeaveStrategy {
    /// The active flows (above `min_rate`, or hungry) take it in proportion to their rates:
    /// the inverse of a join's scaling to (n−1)/n.
    Rescale,
    /// It returns to the pool; hungry flows refill it a `step` per judgement.
    Pool,
}

/// What happens to the rates when a flow joins.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JoinStrategy {
    /// Others scale to (n−1)/n; the new flow starts at 1/n of the line rate (Fig. 9c, SCR's).
    ScaleStartShare,
    /// Others scale to (n−1)/n; the new flow starts at `start_rate` (Fig. 9b).
    ScaleStartLow,
    /// Others halve; the new flow starts at `start_rate` (Fig. 9a).
    HalveStartLow,
    /// Every flow restarts from `start_rate` (A.4, Table 5).
    Restart,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaterFillingParams {
    /// Rate added per filling step (Table 5: 0.02, 0.05 and 0.1 GB/s).
    #[serde(default = "default_step")]
    pub step: BitsPerSec,
    /// No flow is set below this rate (Fig. 12's 1 Gbps bound).
    #[serde(default = "default_min_rate")]
    pub min_rate: BitsPerSec,
    /// Where a flow starts under the `*_start_low` and `restart` join strategies (A.4: 0.5 Gbps).
    #[serde(default = "default_start_rate")]
    pub start_rate: BitsPerSec,
    #[serde(default = "default_join")]
    pub join: JoinStrategy,
    #[serde(default = "default_leave")]
    pub leave: LeaveStrategy,
    /// A flow fills its rate when its EWMA reaches this share of it (per mille).
    #[serde(default = "default_saturated")]
    pub saturated_permille: u32,
    /// A flow gives rate back when its EWMA is below this share of it (per mille).
    #[serde(default = "default_reclaim")]
    pub reclaim_permille: u32,
    /// Time constant of the bandwidth EWMA.
    #[serde(default = "default_tau")]
    pub ewma: Time,
    /// How long a new rate, once in effect, is measured before the flow is judged again.
    #[serde(default = "default_settle")]
    pub settle: Time,
    /// Core cycles per handled TX event, and per rate set in node-level work (joins, leaves).
    #[serde(default = "default_cycles")]
    pub cycles: u32,
    #[serde(default = "default_set_cycles")]
    pub set_cycles: u32,
    /// A flow that has sent nothing for this long uses nothing: its rate returns to the pool
    /// (down to `min_rate`), checked by a wake-up on the cores once per such span while it
    /// sends ("0ns": never; a queue pair that stops sending without closing keeps its rate).
    #[serde(default = "default_idle")]
    pub idle: Time,
}

fn default_step() -> BitsPerSec {
    BitsPerSec(400_000_000)
}
fn default_min_rate() -> BitsPerSec {
    BitsPerSec::gbps(1)
}
fn default_start_rate() -> BitsPerSec {
    BitsPerSec(500_000_000)
}
fn default_join() -> JoinStrategy {
    JoinStrategy::ScaleStartShare
}
fn default_leave() -> LeaveStrategy {
    // Returned to the pool, a leaver's share came back a step per judgement while each
    // join cut the others again: under short flows joining every 10 µs beside a long one, the
    // long one fell to the 1 Gbps floor and held the link 90% idle for 450 µs.
    LeaveStrategy::Rescale
}
fn default_saturated() -> u32 {
    900
}
fn default_reclaim() -> u32 {
    500
}
fn default_tau() -> Time {
    Time::from_us(4)
}
fn default_settle() -> Time {
    Time::ZERO
}
fn default_cycles() -> u32 {
    1000
}
fn default_set_cycles() -> u32 {
    20
}
fn default_idle() -> Time {
    // Longer than any round trip or short retransmission timeout, and at most one wake-up per
    // millisecond per flow: with 1,024 flows each sends a TX event about every 90 µs at 100 Gbps,
    // and wake-ups every 100 µs doubled the cores' events.
    Time::from_ms(1)
}

impl Default for WaterFillingParams {
    fn default() -> Self {
        WaterFillingParams {
            step: default_step(),
            min_rate: default_min_rate(),
            start_rate: default_start_rate(),
            join: default_join(),
            leave: default_leave(),
            saturated_permille: default_saturated(),
            reclaim_permille: default_reclaim(),
            ewma: default_tau(),
            settle: default_settle(),
            cycles: default_cycles(),
            set_cycles: default_set_cycles(),
            idle: default_idle(),
        }
    }
}

/// Per-flow context (40 bytes of the 48 allowed; a test checks the size).
#[derive(Clone, Copy, Debug, Default)]
pub struct WfFlow {
    /// Whether it filled its rate when last judged.
    pub hungry: bool,
    /// Its weight, from the application's hint (0: none given, weighs 1).
    pub weight: u16,
    /// The dequeue rate set, and the measured bandwidth (EWMA), in Mbps.
    pub rate_mbps: u32,
    pub ewma_mbps: u32,
    /// End of the previous TX event (0: none yet).
    pub last_at: Time,
    /// Not judged before this time (the last rate change is in effect and measured).
    pub judge_at: Time,
    /// A wake-up to look for idleness is pending.
    pub wake_armed: bool,
    /// Bytes of its last TX event (the next one is not due sooner than they take at its rate).
    pub last_bytes: u32,
    /// The measured bandwidth averaged over at least [`SLOW_EVENTS`] of the gaps its events
    /// leave at its rate, Mbps: a flow's use is the larger of the two averages.
    pub slow_mbps: u32,
}

/// Gaps between a flow's events (at its rate) that its longer-run average spans at least. With
/// a time constant near one gap (4 KB packets at 8.3 Gbps leave 3.9 µs apart, against the
/// 4 µs default), one packet held behind another queue pair's replaced the average: a flow
/// that filled its rate read as using 60-70% of it and was cut, and three flows sharing 25 Gbps
/// never settled (984 rate changes in 4 ms, 4% of the link idle).
pub const SLOW_EVENTS: u64 = 8;

pub struct WaterFilling {
    pub p: WaterFillingParams,
    /// Sum of the live flows' rates, Mbps (never above the line rate); the hungry flows' weights
    /// (each 1 unless hinted) and the sum of their rates.
    pub allocated_mbps: u64,
    pub hungry_weight: u64,
    pub hungry_mbps: u64,
}

impl WaterFilling {
    pub fn new(p: WaterFillingParams) -> WaterFilling {
        WaterFilling { p, allocated_mbps: 0, hungry_weight: 0, hungry_mbps: 0 }
    }

    fn set(&mut self, f: &mut FlowEntry<WfFlow>, rate: u32, env: &mut Env) {
        self.set_ctx(f.flow, &mut f.ctx, rate, env);
    }

    /// What an idle flow keeps (Mbps): `min_rate`, at most the line and at least 1 Mbps. A flow
    /// holding no more has nothing to return and needs no wake-ups.
    fn idle_floor(&self, line: BitsPerSec) -> u32 {
        mbps(self.p.min_rate).min(mbps(line)).max(1)
    }

    /// The idleness wake-up of a flow: if it has sent nothing for `idle` and holds more than the
    /// floor, it is judged to use nothing (its rate falls to the floor, and it counts as
    /// satisfied); if it sent since, the wake-up is set for `idle` after its last send. A flow at
    /// the floor has nothing to return: it is left alone, so a slow flow whose packets come
    /// more than `idle` apart is still measured (its estimate restarts only after a cut, and
    /// its next span, which straddles the cut, does not seed it).
    fn on_wake(&mut self, ev: &ScrEvent, f: &mut WfFlow, env: &mut Env) -> Verdict {
        // (Adjusting either way: a wake-up does not judge the flow stable, which would park
        // its events under the threshold strategy.)
        f.wake_armed = false;
        let floor = self.idle_floor(env.line_rate);
        if f.last_at == Time::ZERO || f.rate_mbps <= floor {
            return Verdict::Adjusting;
        }
        // Silent for `idle`, and for twice what its last event's bytes take at the floor: a
        // flow paced that slowly is not idle between its packets.
        let gap = Time(mul_div(f.last_bytes as u64 * 8, 1_000_000, floor as u64).saturating_mul(2));
        let quiet_until = f.last_at + self.p.idle.max(gap);
        if ev.at < quiet_until {
            f.wake_armed = true;
            env.actions.push(Action::Wake { flow: ev.flow, after: quiet_until - ev.at });
            return Verdict::Adjusting;
        }
        if f.hungry {
            self.hungry_weight -= weight(f);
            self.hungry_mbps -= f.rate_mbps as u64;
            f.hungry = false;
        }
        self.set_ctx(ev.flow, f, floor, env);
        f.ewma_mbps = 0;
        f.slow_mbps = 0;
        Verdict::Adjusting
    }

    /// Sets queue pair `flow`'s rate (its context `f`), keeping the sums.
    #[inline]
    fn set_ctx(&mut self, flow: u32, f: &mut WfFlow, rate: u32, env: &mut Env) {
        if f.hungry {
            self.hungry_mbps = self.hungry_mbps + rate as u64 - f.rate_mbps as u64;
        }
        self.allocated_mbps = self.allocated_mbps + rate as u64 - f.rate_mbps as u64;
        f.rate_mbps = rate;
        f.judge_at = env.now + env.install_latency + self.p.settle;
        env.actions.push(Action::SetRate { flow, bps: bps(rate) });
    }
}

/// A time-weighted EWMA `e` (Mbps, 0: none yet) after a sample `inst` over a span `dt` (ps),
/// time constant `tau`. A span that `straddles` the flow's last rate change (it began before the
/// rate was in force) does not measure that rate: part of it ran at the old rate, or (after a
/// join) the joiner's unpaced first burst kept this flow off the wire; it may raise the average
/// but not lower it, nor be the first sample.
fn average(e: u32, inst: i64, dt: u64, tau: u64, straddles: bool) -> u32 {
    let inst = if straddles { inst.max(e as i64) } else { inst };
    if e == 0 && straddles {
        0
    } else if dt >= tau || e == 0 {
        // The first sample, or a gap of a whole time constant or more: the sample replaces the
        // average (the weighted step below with w = τ, without its division).
        inst.max(1) as u32
    } else {
        let e = e as i64;
        (e + (inst - e) * dt as i64 / tau as i64).max(0) as u32
    }
}

/// A flow's weight: its hint, 1 if none.
fn weight(f: &WfFlow) -> u64 {
    f.weight.max(1) as u64
}

/// `a × b / c` (c at least 1), in 64-bit arithmetic unless the product needs 128 bits.
#[inline]
fn mul_div(a: u64, b: u64, c: u64) -> u64 {
    let c = c.max(1);
    match a.checked_mul(b) {
        Some(p) => p / c,
        None => (a as u128 * b as u128 / c as u128) as u64,
    }
}

impl Policy for WaterFilling {
    type Flow = WfFlow;
    fn name(&self) -> &'static str {
        "water_filling"
    }
    fn subscribes(&self, kind: Kind) -> bool {
        matches!(kind, Kind::Tx | Kind::Host)
    }
    fn cycles(&self, ev: &ScrEvent) -> u32 {
        match ev.kind {
            // A look at the flow's last send time (and, if idle, one rate set).
            Kind::Timer => self.p.set_cycles,
            _ => self.p.cycles,
        }
    }

    fn on_join(&mut self, flows: &mut [FlowEntry<WfFlow>], env: &mut Env) -> u32 {
        let line = mbps(env.line_rate);
        let floor = mbps(self.p.min_rate).min(line);
        let low = mbps(self.p.start_rate).clamp(1, line);
        let n = flows.iter().filter(|f| !f.left).count() as u64;
        let (new, others) = flows.split_last_mut().expect("the joining flow is in the list");
        let mut sets = 0;
        for f in others.iter_mut().filter(|f| !f.left) {
            let r = match self.p.join {
                JoinStrategy::ScaleStartShare | JoinStrategy::ScaleStartLow => mul_div(f.ctx.rate_mbps as u64, n - 1, n) as u32,
                JoinStrategy::HalveStartLow => f.ctx.rate_mbps / 2,
                JoinStrategy::Restart => low,
            }
            .max(floor);
            if r != f.ctx.rate_mbps {
                self.set(f, r, env);
                sets += 1;
            }
        }
        let start = match self.p.join {
            JoinStrategy::ScaleStartShare => (line as u64 / n) as u32,
            _ => low,
        }
        .max(floor);
        self.set(new, start, env);
        (sets + 1) * self.p.set_cycles
    }

    fn on_leave(&mut self, slot: usize, flows: &mut [FlowEntry<WfFlow>], env: &mut Env) -> u32 {
        let f = &mut flows[slot].ctx;
        let freed = f.rate_mbps as u64;
        self.allocated_mbps -= freed;
        if f.hungry {
            self.hungry_weight -= weight(f);
            self.hungry_mbps -= f.rate_mbps as u64;
        }
        *f = WfFlow::default();
        if self.p.leave == LeaveStrategy::Pool {
            return self.p.set_cycles;
        }
        // The active flows take the freed rate in proportion to theirs (rounded down, so the
        // rates never add up to more than before). A flow at the floor and not hungry was
        // found idle, or uses little: it sends no events to give extra back on.
        let floor = self.idle_floor(env.line_rate);
        let active = |f: &FlowEntry<WfFlow>| !f.left && (f.ctx.rate_mbps > floor || f.ctx.hungry);
        let base: u64 = flows.iter().filter(|f| active(f)).map(|f| f.ctx.rate_mbps as u64).sum();
        let mut sets = 0;
        if base > 0 {
            for f in flows.iter_mut().filter(|f| active(f)) {
                let add = mul_div(freed, f.ctx.rate_mbps as u64, base);
                if add > 0 {
                    let r = f.ctx.rate_mbps + add as u32;
                    self.set(f, r, env);
                    sets += 1;
                }
            }
        }
        (sets + 1) * self.p.set_cycles
    }

    fn on_event(&mut self, ev: &ScrEvent, f: &mut WfFlow, env: &mut Env) -> Verdict {
        if ev.kind == Kind::Host {
            // The application's hint: the flow's new weight.
            let old = weight(f);
            f.weight = ev.value.clamp(1, u16::MAX as u32) as u16;
            if f.hungry {
                self.hungry_weight = self.hungry_weight + weight(f) - old;
            }
            return Verdict::Adjusting;
        }
        if ev.kind == Kind::Timer {
            return self.on_wake(ev, f, env);
        }
        if !f.wake_armed && self.p.idle > Time::ZERO && f.rate_mbps > self.idle_floor(env.line_rate) {
            f.wake_armed = true;
            env.actions.push(Action::Wake { flow: ev.flow, after: self.p.idle });
        }
        // Measure: this event's bytes over the time since the previous event's end.
        if f.last_at != Time::ZERO && ev.at > f.last_at {
            let dt = (ev.at - f.last_at).0;
            let inst = mul_div(ev.bytes * 8, 1_000_000, dt) as i64; // Mbps (bytes·8/ps·1e6)
            let straddles = f.last_at < f.judge_at.saturating_sub(self.p.settle);
            let tau = self.p.ewma.0.max(1);
            f.ewma_mbps = average(f.ewma_mbps, inst, dt, tau, straddles);
            let gap = mul_div(ev.bytes * 8, 1_000_000, f.rate_mbps.max(1) as u64); // ps at its rate
            f.slow_mbps = average(f.slow_mbps, inst, dt, tau.max(gap.saturating_mul(SLOW_EVENTS)), straddles);
        }
        f.last_at = ev.at;
        f.last_bytes = ev.bytes.min(u32::MAX as u64) as u32;
        if env.now < f.judge_at || f.ewma_mbps == 0 {
            // Not in force yet, or nothing measured of it.
            return Verdict::Adjusting;
        }
        let line = mbps(env.line_rate) as u64;
        let step = mbps(self.p.step).max(1) as u64;
        let floor = mbps(self.p.min_rate) as u64;
        // Its use: the larger of the two averages, so that a packet held behind another queue
        // pair's does not read as using less, while a rise shows at the shorter one's pace.
        let (rate, ewma) = (f.rate_mbps as u64, f.ewma_mbps.max(f.slow_mbps) as u64);
        let hungry = ewma * 1000 >= rate * self.p.saturated_permille as u64;
        if hungry != f.hungry {
            if hungry {
                self.hungry_weight += weight(f);
                self.hungry_mbps += rate;
            } else {
                self.hungry_weight -= weight(f);
                self.hungry_mbps -= rate;
            }
            f.hungry = hungry;
        }
        if hungry {
            // The water level: what the satisfied flows leave, shared by the hungry ones in
            // proportion to their weights.
            let satisfied = self.allocated_mbps - self.hungry_mbps;
            let level = mul_div(line.saturating_sub(satisfied), weight(f), self.hungry_weight.max(1));
            let room = line.saturating_sub(self.allocated_mbps);
            if rate + step <= level {
                let add = step.min(room);
                if add > 0 {
                    self.set_ctx(ev.flow, f, (rate + add) as u32, env);
                }
                Verdict::Adjusting
            } else if rate > level && rate > floor && room < step {
                // Above the level, it gives back what it holds above it (a step at most) only
                // when the pool cannot give a step to the flows below it: while the pool has
                // room they take from it, and a flow whose use hovers at its saturation mark
                // (bound by its latency, not its rate) would otherwise pull the others down to
                // its level each time it counts as hungry, leaving the link partly idle. Less
                // than a step above the level counts too: n flows that filled the link while
                // one was satisfied sit (level - its rate) / (n - 1) above the level once it
                // is hungry again, under a step from about 15 flows on, and giving back only
                // from a step above held it below the level for good.
                let to = (rate - (rate - level).min(step)).max(floor);
                self.set_ctx(ev.flow, f, to as u32, env);
                Verdict::Adjusting
            } else if rate < level && room > 0 {
                self.set_ctx(ev.flow, f, (rate + room.min(level - rate)) as u32, env);
                Verdict::Adjusting
            } else {
                Verdict::Stable
            }
        } else if ewma * 1000 < rate * self.p.reclaim_permille as u64 {
            let to = (ewma + step).max(floor).min(rate);
            if to < rate {
                self.set_ctx(ev.flow, f, to as u32, env);
            }
            Verdict::Adjusting
        } else if self.hungry_weight > 0 {
            // It uses much of its rate but does not fill it, while others would take more: it
            // keeps a step above the rate it would fill, and the rest returns to the pool
            // (without this, a flow using 50-90% of its rate held the rest from the others
            // for good, and the link stayed partly idle).
            let to = (mul_div(ewma, 1000, self.p.saturated_permille.max(1) as u64) + step).max(floor);
            if to + step <= rate {
                self.set_ctx(ev.flow, f, to as u32, env);
                Verdict::Adjusting
            } else {
                Verdict::Stable
            }
        } else {
            Verdict::Stable
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tx(flow: u32, at: Time) -> ScrEvent {
        ScrEvent { kind: Kind::Tx, flow, at, first_at: at, bytes: 4096, count: 1, rtt: Time::ZERO, value: 0, aux: 0 }
    }

    /// Flows that each use all of their rate (the EWMA is the rate), judged at `now`.
    fn judge_all(p: &mut WaterFilling, flows: &mut [WfFlow], now: Time) {
        let mut actions = Vec::new();
        for (i, f) in flows.iter_mut().enumerate() {
            f.ewma_mbps = f.rate_mbps;
            f.last_at = Time::ZERO;
            p.on_event(&tx(i as u32, now), f, &mut crate::nic::scr::policy::test_env(now, &mut actions));
        }
    }

    #[test]
    fn a_hungry_flow_below_the_level_climbs_back_when_the_others_sit_less_than_a_step_above_it() {
        // 16 hungry flows on 100 Gbps: 15 at 6.6 Gbps and one cut to 1 Gbps. The level is 6.25
        // Gbps; the 15 sit 0.35 Gbps above it, under the 0.4 Gbps step, and the link is full.
        let mut p = WaterFilling::new(WaterFillingParams::default());
        assert_eq!(mbps(p.p.step), 400);
        let mut flows: Vec<WfFlow> = (0..16).map(|i| WfFlow { hungry: true, rate_mbps: if i == 0 { 1000 } else { 6600 }, ..Default::default() }).collect();
        p.allocated_mbps = flows.iter().map(|f| f.rate_mbps as u64).sum();
        p.hungry_mbps = p.allocated_mbps;
        p.hungry_weight = 16;
        assert_eq!(p.allocated_mbps, 100_000);
        for round in 0..40 {
            judge_all(&mut p, &mut flows, Time::from_us(10 * (round + 1)));
        }
        let rates: Vec<u32> = flows.iter().map(|f| f.rate_mbps).collect();
        assert!(rates.iter().all(|&r| (6000..=6500).contains(&r)), "{rates:?}");
        assert!(p.allocated_mbps <= 100_000);
        assert_eq!(p.allocated_mbps, rates.iter().map(|&r| r as u64).sum::<u64>());
    }

    /// Flows 0 and 1 at 50 Gbps each, then flow 2 joins; returns the policy and the flows.
    fn two_and_a_joiner(leave: LeaveStrategy) -> (WaterFilling, Vec<FlowEntry<WfFlow>>) {
        let mut p = WaterFilling::new(WaterFillingParams { leave, ..Default::default() });
        let mut flows: Vec<FlowEntry<WfFlow>> = (0..2).map(|i| FlowEntry { flow: i, left: false, ctx: WfFlow { hungry: true, rate_mbps: 50_000, ..Default::default() } }).collect();
        (p.allocated_mbps, p.hungry_mbps, p.hungry_weight) = (100_000, 100_000, 2);
        flows.push(FlowEntry { flow: 2, left: false, ctx: WfFlow::default() });
        let mut actions = Vec::new();
        p.on_join(&mut flows, &mut crate::nic::scr::policy::test_env(Time::from_us(10), &mut actions));
        // (n-1)/n of 50 Gbps and 1/n of the line, whole Mbps.
        assert_eq!(flows.iter().map(|f| f.ctx.rate_mbps).collect::<Vec<_>>(), vec![33_333, 33_333, 33_333]);
        (p, flows)
    }

    #[test]
    fn a_leave_undoes_the_joins_scaling_or_returns_the_rate_to_the_pool() {
        let leave = |strategy| {
            let (mut p, mut flows) = two_and_a_joiner(strategy);
            flows[2].left = true;
            let mut actions = Vec::new();
            let cycles = p.on_leave(2, &mut flows, &mut crate::nic::scr::policy::test_env(Time::from_us(20), &mut actions));
            let rates: Vec<u32> = flows[..2].iter().map(|f| f.ctx.rate_mbps).collect();
            assert_eq!(p.allocated_mbps, rates.iter().map(|&r| r as u64).sum::<u64>());
            (rates, actions.len(), cycles)
        };
        // Rescale: 33,333 freed, half each (16,666 rounded down): back to 50 Gbps less 1 Mbps,
        // two rates set, three sets' cycles.
        assert_eq!(leave(LeaveStrategy::Rescale), (vec![49_999, 49_999], 2, 60));
        // Pool: the others keep their rates and refill by steps.
        assert_eq!(leave(LeaveStrategy::Pool), (vec![33_333, 33_333], 0, 20));
    }

    #[test]
    fn a_leave_gives_nothing_to_a_flow_found_idle_at_the_floor() {
        let (mut p, mut flows) = two_and_a_joiner(LeaveStrategy::Rescale);
        // Flow 1 went idle: its wake-up cut it to the 1 Gbps floor and out of the hungry.
        let mut actions = Vec::new();
        let env = &mut crate::nic::scr::policy::test_env(Time::from_us(30), &mut actions);
        flows[1].ctx.hungry = false;
        p.hungry_weight -= 1;
        p.hungry_mbps -= 33_333;
        p.set(&mut flows[1], 1000, env);
        flows[2].left = true;
        p.on_leave(2, &mut flows, env);
        assert_eq!((flows[0].ctx.rate_mbps, flows[1].ctx.rate_mbps), (66_666, 1000));
        assert_eq!(p.allocated_mbps, 67_666);
    }

    #[test]
    fn a_flow_that_stops_sending_returns_its_rate_once_idle_for_the_idle_span() {
        // Two hungry flows at 50 Gbps each; flow 1 sends its last at 10 µs.
        let mut p = WaterFilling::new(WaterFillingParams::default());
        p.p.idle = Time::from_us(100);
        let mut flows: Vec<WfFlow> = (0..2).map(|_| WfFlow { hungry: true, rate_mbps: 50_000, ..Default::default() }).collect();
        p.allocated_mbps = 100_000;
        p.hungry_mbps = 100_000;
        p.hungry_weight = 2;
        let mut actions = Vec::new();
        let send = |p: &mut WaterFilling, f: &mut WfFlow, flow: u32, us: u64, actions: &mut Vec<Action>| {
            // Using all of its rate (no measurement from a previous send).
            (f.ewma_mbps, f.last_at) = (f.rate_mbps, Time::ZERO);
            p.on_event(&tx(flow, Time::from_us(us)), f, &mut crate::nic::scr::policy::test_env(Time::from_us(us), actions));
        };
        send(&mut p, &mut flows[1], 1, 10, &mut actions);
        // Its first send asks for a wake-up an idle span later.
        assert!(actions.iter().any(|a| matches!(a, Action::Wake { flow: 1, after } if *after == Time::from_us(100))), "{actions:?}");
        let wake = |at_us: u64| ScrEvent { kind: Kind::Timer, flow: 1, at: Time::from_us(at_us), first_at: Time::from_us(at_us), bytes: 0, count: 1, rtt: Time::ZERO, value: 0, aux: 0 };
        // Woken before the span has passed since its last send: it waits for the rest of it.
        actions.clear();
        p.on_event(&wake(60), &mut flows[1], &mut crate::nic::scr::policy::test_env(Time::from_us(60), &mut actions));
        assert_eq!(flows[1].rate_mbps, 50_000);
        assert!(actions.iter().any(|a| matches!(a, Action::Wake { flow: 1, after } if *after == Time::from_us(50))), "{actions:?}");
        // At 110 µs it has been idle for 100 µs: down to the 1 Gbps floor, out of the hungry.
        p.on_event(&wake(110), &mut flows[1], &mut crate::nic::scr::policy::test_env(Time::from_us(110), &mut actions));
        assert_eq!(flows[1].rate_mbps, 1000);
        assert!(!flows[1].hungry);
        assert_eq!((p.allocated_mbps, p.hungry_weight, p.hungry_mbps), (51_000, 1, 50_000));
        // The flow still sending fills what is left, a step per judgement.
        for us in 0..200 {
            send(&mut p, &mut flows[0], 0, 120 + us, &mut actions);
        }
        assert_eq!(flows[0].rate_mbps, 99_000);
        assert_eq!(p.allocated_mbps, 100_000);
        // Flow 1 at the floor sends again, slowly: 1 KB every 200 µs (40 Mbps, more than
        // `idle` apart). Wake-ups between its sends leave it alone, so it is measured: it uses
        // far less than its rate and stays at the floor, asking for no wake-ups.
        let mut at = 400;
        for _ in 0..5 {
            let e = ScrEvent { bytes: 1000, ..tx(1, Time::from_us(at)) };
            actions.clear();
            p.on_event(&e, &mut flows[1], &mut crate::nic::scr::policy::test_env(Time::from_us(at), &mut actions));
            assert!(!actions.iter().any(|a| matches!(a, Action::Wake { .. })), "{actions:?}");
            p.on_event(&wake(at + 150), &mut flows[1], &mut crate::nic::scr::policy::test_env(Time::from_us(at + 150), &mut actions));
            at += 200;
        }
        assert_eq!(flows[1].ewma_mbps, 40);
        assert_eq!(flows[1].rate_mbps, 1000);
    }

    #[test]
    fn a_slow_flow_at_the_floor_is_still_measured_and_climbs_when_it_fills_its_rate() {
        // A 50 Mbps floor and a flow paced at it with 4 KB packets: one every 655 µs, more than
        // the 100 µs idle span apart. It fills its rate, so it is hungry and climbs a step.
        let mut p = WaterFilling::new(WaterFillingParams { min_rate: BitsPerSec(50_000_000), idle: Time::from_us(100), ..Default::default() });
        let mut f = WfFlow { rate_mbps: 50, ..Default::default() };
        p.allocated_mbps = 50;
        let mut actions = Vec::new();
        for k in 0..4u64 {
            let at = Time::from_us(1000 + 655 * k) + Time::from_ns(360 * k);
            let e = ScrEvent { bytes: 4096, ..tx(0, at) };
            p.on_event(&e, &mut f, &mut crate::nic::scr::policy::test_env(at, &mut actions));
            let wake = ScrEvent { kind: Kind::Timer, bytes: 0, ..tx(0, at + Time::from_us(300)) };
            p.on_event(&wake, &mut f, &mut crate::nic::scr::policy::test_env(at + Time::from_us(300), &mut actions));
        }
        assert!(f.rate_mbps > 50, "{f:?}");
        assert_eq!(std::mem::size_of::<WfFlow>(), 40);
    }
}
