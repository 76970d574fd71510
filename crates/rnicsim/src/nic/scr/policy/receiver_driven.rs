//! Receiver-driven control on SCR (paper A.8): the receiver's NIC tells each sender what to
//! send, in out-of-band peer-domain signals (128-byte packets by default), and the sender's NIC
//! sets its dequeue rate from them. Both ends run this policy; a NIC acts as receiver for the
//! queue pairs it receives on (RX events) and as sender for those it gets signals on.
//!
//! - **Credits** (`mode = "credits"`, after Homa's grants, rate-based as A.8 adapts them): the
//!   receiver meters its port's RX bandwidth and each flow's, in windows of `meter`; every
//!   `interval` it grants each flow a credit (never below `min_rate`). The sender sets its
//!   dequeue rate to the credit and keeps it until the next one (optimistic between credits),
//!   and answers its first credit (and one every [`REANSWER`] after, in case an answer was
//!   lost) with a signal of its own, [`CREDITED`], so that the receiver knows which of its
//!   flows follow credits (as a Homa sender announces its messages) and which are traffic it
//!   does not control. The headroom is `utilization` × line rate less the uncontrolled flows'
//!   RX rate. A.8's case, one credited flow, gets the whole headroom; several share it
//!   max-min: each credited flow's latest meter reading counts for [`TALLY_WINDOWS`] windows,
//!   as hungry (at least [`HUNGRY_PERMILLE`] of its last credit) or limited by its own demand.
//!   A flow is granted what it would get were it hungry, (headroom − the limited flows' rate)
//!   / hungry flows, and never less than headroom / credited flows. A flow not yet known to
//!   follow credits is granted the headroom its traffic would find alone: `utilization` × line
//!   rate less the rest of the port's RX rate. A.8 hands out the whole headroom
//!   (`utilization_permille = 1000`, the default); a queue built before the first credits
//!   arrived then never drains, and a lower share leaves room for it to.
//! - **Backpressure** (`mode = "backpressure"`, A.8's receiver-initiated ECN-like signal): while
//!   the receiver's port RX rate is at or above `backpressure` × line rate, or the flow's
//!   packets arrive ECN-marked, it signals the sender at most once per `interval`; the sender
//!   cuts its rate multiplicatively (`md`) and adds `ai` every `ai_interval` (paced by its TX
//!   events) until the line rate.
//!
//! When the receiver signals (`signal_on`, the three ways the paper's Table 3 lists for peer
//! signals): `"interval"` (periodically, at most once per `interval`, the default),
//! `"bytes"` (by sampling: each time the flow has brought `every_bytes` of wire bytes since its
//! last signal) or `"anomaly"` (only when something changed: in credit mode a credit that moved
//! by more than `anomaly_permille` of the last one sent; in backpressure mode the first busy
//! reading after a calm one). In credit mode a flow's first RX event always signals; in
//! backpressure mode it makes a signal due, sent only if the port reads busy or a packet is marked.
//!
//! RX bandwidth counts wire bytes: each RX event's payload plus the RoCEv2 headers of the
//! packets it stands for, so credits are in the same units as the sender's dequeue rate.
//! Integer arithmetic only.

use super::{bps, mbps, Action, Env, Policy, Verdict};
use crate::nic::scr::event::{Kind, ScrEvent};
use crate::units::{BitsPerSec, Bytes, Time};
use crate::wire::roce::BASE_HEADER_BYTES;
use serde::{Deserialize, Serialize};

/// Which receiver-driven loop runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    #[default]
    Credits,
    Backpressure,
}

/// What makes the receiver signal a flow's sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignalOn {
    /// At most once per `interval` (per RTT, periodically).
    #[default]
    Interval,
    /// Every `every_bytes` of the flow's RX wire bytes (sampling).
    Bytes,
    /// When the value to send changed (on anomaly).
    Anomaly,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReceiverDrivenParams {
    #[serde(default)]
    pub mode: Mode,
    /// When the receiver signals.
    #[serde(default)]
    pub signal_on: SignalOn,
    /// How often the receiver signals each flow (at most), with `signal_on = "interval"`.
    #[serde(default = "default_interval")]
    pub interval: Time,
    /// `signal_on = "bytes"`: the flow's RX wire bytes between two signals.
    #[serde(default = "default_every_bytes")]
    pub every_bytes: Bytes,
    /// `signal_on = "anomaly"`, credits: how far (per mille of the last credit sent) a new
    /// credit must move to be sent.
    #[serde(default = "default_anomaly")]
    pub anomaly_permille: u32,
    /// The RX meter's window.
    #[serde(default = "default_meter")]
    pub meter: Time,
    /// Credits: the share of the line rate the receiver hands out (per mille).
    #[serde(default = "default_utilization")]
    pub utilization_permille: u32,
    /// The smallest credit, and the smallest rate backpressure cuts to.
    #[serde(default = "default_min_rate")]
    pub min_rate: BitsPerSec,
    /// Bytes of a signal packet's payload (A.8's 128-byte out-of-band packets).
    #[serde(default = "default_signal_bytes")]
    pub signal_bytes: Bytes,
    /// Backpressure: the port RX share of line rate (per mille) at which the receiver signals.
    #[serde(default = "default_backpressure")]
    pub backpressure_permille: u32,
    /// Backpressure: the sender's cut per signal (per mille of its rate).
    #[serde(default = "default_md")]
    pub md_permille: u32,
    /// Backpressure: the sender's additive increase, and how often.
    #[serde(default = "default_ai")]
    pub ai: BitsPerSec,
    #[serde(default = "default_ai_interval")]
    pub ai_interval: Time,
    /// Core cycles per handled event.
    #[serde(default = "default_cycles")]
    pub cycles: u32,
}

fn default_interval() -> Time {
    Time::from_us(10)
}
fn default_every_bytes() -> Bytes {
    Bytes(64 * 1024)
}
fn default_anomaly() -> u32 {
    100
}
fn default_meter() -> Time {
    Time::from_us(10)
}
fn default_utilization() -> u32 {
    1000
}
fn default_min_rate() -> BitsPerSec {
    BitsPerSec::gbps(1)
}
fn default_signal_bytes() -> Bytes {
    Bytes(128)
}
fn default_backpressure() -> u32 {
    900
}
fn default_md() -> u32 {
    500
}
fn default_ai() -> BitsPerSec {
    BitsPerSec::gbps(1)
}
fn default_ai_interval() -> Time {
    Time::from_us(10)
}
fn default_cycles() -> u32 {
    300
}

impl Default for ReceiverDrivenParams {
    fn default() -> Self {
        ReceiverDrivenParams {
            mode: Mode::default(),
            signal_on: SignalOn::default(),
            interval: default_interval(),
            every_bytes: default_every_bytes(),
            anomaly_permille: default_anomaly(),
            meter: default_meter(),
            utilization_permille: default_utilization(),
            min_rate: default_min_rate(),
            signal_bytes: default_signal_bytes(),
            backpressure_permille: default_backpressure(),
            md_permille: default_md(),
            ai: default_ai(),
            ai_interval: default_ai_interval(),
            cycles: default_cycles(),
        }
    }
}

impl ReceiverDrivenParams {
    /// What is wrong with the parameters, if anything (key, why).
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if self.meter < Time::from_ns(100) {
            return Err(("meter", format!("the RX meter needs a window of at least 100 ns, got {}", self.meter)));
        }
        if self.signal_on == SignalOn::Bytes && (self.every_bytes.0 == 0 || self.every_bytes.0 > u32::MAX as u64) {
            return Err(("every_bytes", format!("expected 1 B to 4 GiB between signals, got {}", self.every_bytes.0)));
        }
        if self.utilization_permille == 0 || self.utilization_permille > 1000 {
            return Err(("utilization_permille", format!("expected 1 to 1000, got {}", self.utilization_permille)));
        }
        if self.md_permille == 0 || self.md_permille > 1000 {
            return Err(("md_permille", format!("expected 1 to 1000 (0 would never cut), got {}", self.md_permille)));
        }
        if self.backpressure_permille > 1000 {
            return Err(("backpressure_permille", format!("expected at most 1000, got {}", self.backpressure_permille)));
        }
        if self.signal_bytes.0 > crate::nic::scr::MAX_SIGNAL_BYTES as u64 {
            return Err(("signal_bytes", format!("a signal is one packet; at most {} B, got {}", crate::nic::scr::MAX_SIGNAL_BYTES, self.signal_bytes.0)));
        }
        Ok(())
    }
}

/// The signal value that means "back off" (credits are Mbps, far below it).
pub const BACKPRESSURE: u32 = u32::MAX;
/// The signal value a sender answers a credit with: this flow follows credits.
pub const CREDITED: u32 = u32::MAX - 1;

/// A bandwidth meter that reads at most once per window of `meter`: the first event in a new
/// window takes a reading of the bytes since the last reading's event, its own included, over
/// the exact time between the two events, averaged half and half with the previous reading.
/// An event stands for the packets since the flow's last one up to its own time (coalesced or
/// not), so the intervals between readings hold exactly their packets and a steady flow reads
/// its rate at every reading. (Read as bytes per whole window at the first event of the next,
/// a flow of 1.47 packets per window read 4.43 and 5.54 Gbps by turns and held each reading
/// until the next window's first packet: low readings, after a light window, were held longer,
/// and other flows' credits, sampling them at their own times, saw 3.7% less than the flow
/// sent, which they were granted on top of the line.)
/// (16 bytes: the window index is 32 bits, which at the smallest window of 100 ns covers 429 s.)
#[derive(Clone, Copy, Debug, Default)]
pub struct Meter {
    window: u32,
    bytes: u32,
    pub mbps: u32,
    /// Where in its window the last reading's event fell, in 1/65536 of a window.
    frac: u16,
    /// Readings so far (0: the first reading is taken as it is, not averaged; saturating).
    readings: u16,
}

/// The window of length `meter` that time `at` falls in.
fn window_of(at: Time, meter: Time) -> u32 {
    (at.0 / meter.0.max(1)).min(u32::MAX as u64) as u32
}

impl Meter {
    /// Nothing metered yet.
    fn is_fresh(&self) -> bool {
        self.readings == 0 && self.bytes == 0
    }

    /// Whether bytes in window `w` make it take a reading (of the window it has been filling).
    fn takes_reading(&self, w: u32) -> bool {
        !self.is_fresh() && w > self.window
    }

    fn add(&mut self, at: Time, bytes: u64, meter: Time) {
        let m = meter.0.max(1);
        let w = window_of(at, meter);
        let frac = ((at.0 % m) * 65536 / m) as u16;
        if self.is_fresh() {
            // The first bytes: metering starts at them (they count in the first reading).
            (self.window, self.frac) = (w, frac);
        }
        self.bytes = self.bytes.saturating_add(bytes.min(u32::MAX as u64) as u32);
        if w > self.window {
            let since = |window: u32, frac: u16| window as u64 * m + frac as u64 * m / 65536;
            let span_ps = since(w, frac).saturating_sub(since(self.window, self.frac)).max(1);
            let sample = (self.bytes as u64 * 8 * 1_000_000 / span_ps).min(u32::MAX as u64);
            self.mbps = if self.readings == 0 { sample as u32 } else { (self.mbps as u64 + sample).div_ceil(2) as u32 };
            self.readings = self.readings.saturating_add(1);
            (self.window, self.frac) = (w, frac);
            self.bytes = 0;
        }
    }
}

pub struct ReceiverDriven {
    p: ReceiverDrivenParams,
    /// The port's RX meter, and the RX meter of the flows known to follow credits (node-level
    /// state).
    port: Meter,
    credited: Meter,
    /// Each credited flow's latest reading, in the tally of the window it was taken in, for the
    /// last [`TALLY_WINDOWS`] windows (a ring indexed by window number).
    tally: [Tally; TALLY_WINDOWS],
    signals: u64,
    /// Sender: credits answered with [`CREDITED`].
    answers: u64,
    last_credit_mbps: u32,
}

/// The credited flows whose latest meter reading was taken in one window: how many, how many
/// used at least [`HUNGRY_PERMILLE`] of their last credit (hungry), and the rate of the others
/// (limited by their own demand).
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    window: u32,
    flows: u32,
    hungry: u32,
    limited_mbps: u64,
}

impl Tally {
    /// Counts a flow in: hungry, or limited at `mbps`.
    fn count(&mut self, class: Tallied, mbps: u64) {
        self.flows += 1;
        match class {
            Tallied::Hungry => self.hungry += 1,
            Tallied::Limited => self.limited_mbps += mbps,
            Tallied::No => unreachable!("a reading is counted hungry or limited"),
        }
    }

    /// Counts out a flow [`Self::count`] counted in.
    fn uncount(&mut self, class: Tallied, mbps: u64) {
        self.flows -= 1;
        match class {
            Tallied::Hungry => self.hungry -= 1,
            Tallied::Limited => self.limited_mbps -= mbps,
            Tallied::No => unreachable!("a reading is counted hungry or limited"),
        }
    }
}

/// A credited flow reading at least this share (per mille) of its last credit is hungry: it
/// would take more. Below it, its demand (or its path) limits it, and the rest of its share goes
/// to the others. (Room for a meter's noise and for a rate still climbing to a raised credit; a
/// flow whose demand lies between this and its whole share keeps its share unused.)
pub const HUNGRY_PERMILLE: u64 = 900;

/// Meter windows a credited flow's latest reading counts for: a flow that brought no bytes for
/// this long is no longer among those sharing the headroom.
pub const TALLY_WINDOWS: usize = 16;

/// How often a sender answers credits after the first (in case that answer was lost).
pub const REANSWER: Time = Time::from_ms(1);

/// Where a credited flow's latest reading is counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Tallied {
    #[default]
    No,
    Hungry,
    Limited,
}
/// The per-flow context (48 bytes, the whole of DOCA PCC's).
#[derive(Clone, Copy, Debug, Default)]
pub struct RdFlow {
    /// Receiver: the flow's RX meter, when it was last signalled, the wire bytes it brought
    /// since, and the value last sent.
    pub rx: Meter,
    pub last_signal: Time,
    pub since_signal: u32,
    pub last_value: u32,
    /// Sender: the dequeue rate set (Mbps; 0: none yet) and the last additive increase.
    pub rate_mbps: u32,
    pub last_ai: Time,
    /// Receiver: the sender answered a credit with [`CREDITED`] (the flow follows credits), and
    /// how its latest reading is counted (in the tally of window `rx.window`).
    pub credited: bool,
    pub tallied: Tallied,
}

impl RdFlow {
    /// Receiver: the flow's meter reads at least [`HUNGRY_PERMILLE`] of its last credit.
    fn hungry(&self) -> bool {
        self.rx.mbps as u64 * 1000 >= self.last_value as u64 * HUNGRY_PERMILLE
    }
}

impl ReceiverDriven {
    pub fn new(p: ReceiverDrivenParams) -> ReceiverDriven {
        ReceiverDriven { p, port: Meter::default(), credited: Meter::default(), tally: [Tally::default(); TALLY_WINDOWS], signals: 0, answers: 0, last_credit_mbps: 0 }
    }

    fn signal(&mut self, f: &mut RdFlow, flow: u32, value: u32, env: &mut Env) {
        f.last_signal = env.now;
        f.since_signal = 0;
        f.last_value = value;
        self.signals += 1;
        env.actions.push(Action::Signal { flow, value, bytes: self.p.signal_bytes.0 as u32 });
    }

    /// The tally of window `w`, emptied first if it held an older window; `None` for a window
    /// the ring has moved past.
    fn tally_of(&mut self, w: u32) -> Option<&mut Tally> {
        let t = &mut self.tally[w as usize % TALLY_WINDOWS];
        if t.window < w || (t.flows == 0 && t.window != w) {
            *t = Tally { window: w, ..Tally::default() };
        }
        (t.window == w).then_some(t)
    }

    /// Takes flow `f`'s latest reading out of the tallies (its meter's window and rate are still
    /// those of that reading).
    fn untally(&mut self, f: &mut RdFlow) {
        let (class, mbps) = (f.tallied, f.rx.mbps as u64);
        f.tallied = Tallied::No;
        let t = &mut self.tally[f.rx.window as usize % TALLY_WINDOWS];
        if class != Tallied::No && t.window == f.rx.window {
            t.uncount(class, mbps);
        }
    }

    /// Counts credited flow `f`'s new reading (taken in window `rx.window`).
    fn tally(&mut self, f: &mut RdFlow) {
        let class = if f.hungry() { Tallied::Hungry } else { Tallied::Limited };
        let mbps = f.rx.mbps as u64;
        if let Some(t) = self.tally_of(f.rx.window) {
            t.count(class, mbps);
            f.tallied = class;
        }
    }

    /// The windows whose tallies count: the last [`TALLY_WINDOWS`] up to `w`, or up to the
    /// newest window counted if later (events reach the cores out of time order across
    /// threads).
    fn live_windows(&self, w: u32) -> std::ops::RangeInclusive<u32> {
        let newest = self.tally.iter().map(|t| t.window).max().unwrap_or(0).max(w);
        newest.saturating_sub(TALLY_WINDOWS as u32 - 1)..=newest
    }

    /// The credited flows counted in the live windows up to `w`, with `f` among them as
    /// hungry whatever its own reading: what `f` would be granted were it hungry.
    fn live(&self, w: u32, f: &RdFlow) -> Tally {
        let live = self.live_windows(w);
        let mut sum = Tally::default();
        for t in self.tally.iter().filter(|t| live.contains(&t.window)) {
            sum.flows += t.flows;
            sum.hungry += t.hungry;
            sum.limited_mbps += t.limited_mbps;
        }
        if f.tallied != Tallied::No && live.contains(&f.rx.window) && self.tally[f.rx.window as usize % TALLY_WINDOWS].window == f.rx.window {
            sum.uncount(f.tallied, f.rx.mbps as u64);
        }
        sum.count(Tallied::Hungry, 0);
        sum
    }

    /// Credited flows counted in the live windows.
    fn live_flows(&self) -> u32 {
        let live = self.live_windows(0);
        self.tally.iter().filter(|t| live.contains(&t.window)).map(|t| t.flows).sum()
    }

    fn set(&self, f: &mut RdFlow, flow: u32, mbps: u32, env: &mut Env) {
        if mbps != f.rate_mbps {
            f.rate_mbps = mbps;
            env.actions.push(Action::SetRate { flow, bps: bps(mbps) });
        }
    }
}

impl Policy for ReceiverDriven {
    type Flow = RdFlow;
    fn name(&self) -> &'static str {
        "receiver_driven"
    }
    fn subscribes(&self, kind: Kind) -> bool {
        matches!(kind, Kind::Rx | Kind::Peer) || (kind == Kind::Tx && self.p.mode == Mode::Backpressure)
    }
    fn cycles(&self, _ev: &ScrEvent) -> u32 {
        self.p.cycles
    }
    fn on_event(&mut self, ev: &ScrEvent, f: &mut RdFlow, env: &mut Env) -> Verdict {
        let line = mbps(env.line_rate);
        let floor = mbps(self.p.min_rate).max(1).min(line);
        match ev.kind {
            Kind::Rx => {
                let wire = ev.bytes + ev.count as u64 * BASE_HEADER_BYTES as u64;
                let window = window_of(ev.at, self.p.meter);
                if f.credited && f.rx.takes_reading(window) {
                    self.untally(f);
                    f.rx.add(ev.at, wire, self.p.meter);
                    self.tally(f);
                } else {
                    f.rx.add(ev.at, wire, self.p.meter);
                }
                self.port.add(ev.at, wire, self.p.meter);
                if f.credited {
                    self.credited.add(ev.at, wire, self.p.meter);
                }
                f.since_signal = f.since_signal.saturating_add(wire.min(u32::MAX as u64) as u32);
                let first = f.last_signal == Time::ZERO;
                let due = first
                    || match self.p.signal_on {
                        SignalOn::Interval => env.now.saturating_sub(f.last_signal) >= self.p.interval,
                        SignalOn::Bytes => f.since_signal as u64 >= self.p.every_bytes.0,
                        // Decided below, once the value is known.
                        SignalOn::Anomaly => true,
                    };
                match self.p.mode {
                    Mode::Credits if due => {
                        let share = line as i64 * self.p.utilization_permille as i64 / 1000;
                        let (port, own, credited) = (self.port.mbps as i64, f.rx.mbps as i64, self.credited.mbps as i64);
                        let credit = if f.credited {
                            // Max-min among the credited flows: the headroom the uncontrolled
                            // traffic leaves, less what the limited flows use, split among the
                            // hungry ones (at least an even split among all).
                            let headroom = (share - (port - credited).max(0)).max(0);
                            // (A limited flow is granted what it would get were it hungry.)
                            let t = self.live(window, f);
                            let (n, hungry, limited) = (t.flows as i64, t.hungry as i64, t.limited_mbps as i64);
                            (headroom / n).max((headroom - limited).max(0) / hungry).min(headroom)
                        } else {
                            share - (port - own).max(0)
                        };
                        let credit = credit.clamp(floor as i64, u32::MAX as i64 - 2) as u32;
                        let moved = credit.abs_diff(f.last_value) as u64 * 1000 > f.last_value as u64 * self.p.anomaly_permille as u64;
                        if first || self.p.signal_on != SignalOn::Anomaly || moved {
                            self.last_credit_mbps = credit;
                            self.signal(f, ev.flow, credit, env);
                        }
                    }
                    Mode::Backpressure if due => {
                        let busy = self.port.mbps as u64 * 1000 >= line as u64 * self.p.backpressure_permille as u64 || ev.value > 0;
                        // On anomaly: only a busy reading after a calm one (`last_value` holds
                        // the state the last RX event saw).
                        let send = busy && (self.p.signal_on != SignalOn::Anomaly || f.last_value != BACKPRESSURE);
                        if send {
                            self.signal(f, ev.flow, BACKPRESSURE, env);
                        } else if self.p.signal_on == SignalOn::Anomaly && !busy {
                            f.last_value = 0;
                        }
                    }
                    _ => {}
                }
            }
            Kind::Peer if ev.value == CREDITED && !f.credited => {
                f.credited = true;
                // The credited meter takes over what the flow's own meter has seen: all of it
                // when it is the first credited flow (so that, alone, its credits are exactly
                // A.8's), else its bytes of the current window.
                if self.credited.is_fresh() {
                    self.credited = f.rx;
                } else if self.credited.window == f.rx.window {
                    self.credited.bytes = self.credited.bytes.saturating_add(f.rx.bytes);
                }
            }
            Kind::Peer if ev.value == CREDITED => {}
            Kind::Peer => {
                if ev.value != BACKPRESSURE && (f.rate_mbps == 0 || env.now.saturating_sub(f.last_ai) >= REANSWER) {
                    // A credit, the first (or the first for a while): answer it, so the receiver
                    // counts this flow among the credited. (`last_ai` is backpressure's; credits
                    // keep the time of the last answer in it.)
                    f.last_ai = env.now;
                    self.answers += 1;
                    env.actions.push(Action::Signal { flow: ev.flow, value: CREDITED, bytes: self.p.signal_bytes.0 as u32 });
                }
                let to = if ev.value == BACKPRESSURE {
                    let cur = if f.rate_mbps == 0 { line } else { f.rate_mbps };
                    f.last_ai = env.now;
                    ((cur as u64 * (1000 - self.p.md_permille.min(1000)) as u64 / 1000) as u32).max(floor)
                } else {
                    ev.value.clamp(floor, line)
                };
                self.set(f, ev.flow, to, env);
            }
            Kind::Tx if f.rate_mbps != 0 && f.rate_mbps < line && env.now.saturating_sub(f.last_ai) >= self.p.ai_interval => {
                f.last_ai = env.now;
                let to = (f.rate_mbps + mbps(self.p.ai).max(1)).min(line);
                self.set(f, ev.flow, to, env);
            }
            _ => {}
        }
        Verdict::Adjusting
    }
    fn on_leave(&mut self, slot: usize, flows: &mut [super::FlowEntry<RdFlow>], _env: &mut Env) -> u32 {
        self.untally(&mut flows[slot].ctx);
        0
    }
    fn report(&self, flows: &[super::FlowEntry<RdFlow>]) -> Vec<(&'static str, f64)> {
        let senders: Vec<_> = flows.iter().filter(|f| !f.left && f.ctx.rate_mbps > 0).collect();
        vec![
            ("signals", self.signals as f64),
            ("credit_answers", self.answers as f64),
            ("credited_flows", self.live_flows() as f64),
            ("port_rx_gbps", self.port.mbps as f64 / 1e3),
            ("last_credit_gbps", self.last_credit_mbps as f64 / 1e3),
            ("sender_flows", senders.len() as f64),
            ("sender_rate_gbps", senders.iter().map(|f| f.ctx.rate_mbps as f64 / 1e3).sum::<f64>() + 0.0),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(kind: Kind, flow: u32, at_us: u64, bytes: u64, count: u32, value: u32) -> ScrEvent {
        let at = Time::from_us(at_us);
        ScrEvent { kind, flow, at, first_at: at, bytes, count, rtt: Time::ZERO, value, aux: 0 }
    }

    fn env(now_us: u64, actions: &mut Vec<Action>) -> Env<'_> {
        super::super::test_env(Time::from_us(now_us), actions)
    }

    #[test]
    fn a_steady_flow_reads_its_rate_at_every_reading_whatever_its_packets_per_window() {
        // 1,062 wire bytes every 6.25 µs (1,359.36 Mbps) into 10 µs windows, which hold 2, 2,
        // 1, 2, 1 packets by turns. Read per whole window at the next window's first packet,
        // the meter swung between 1,150 and 1,452 Mbps and, held until each next reading, read
        // 2.8% low on average over time.
        let w = Time::from_us(10);
        let gap = Time::from_ns(6250);
        let mut m = Meter::default();
        let mut readings = Vec::new();
        for i in 0..200u64 {
            m.add(Time(gap.0 * i), 1062, w);
            if i > 40 {
                readings.push(m.mbps);
            }
        }
        assert!(readings.iter().all(|&r| r.abs_diff(1359) <= 1), "{:?}", &readings[..20]);
        // The same packets as events of one and three packets by turns, each at its last
        // packet's time (coalesced): the same reading (the per-window reading averaged 29%
        // high).
        let mut m = Meter::default();
        let mut readings = Vec::new();
        let mut i = 0u64;
        while i < 200 {
            let n = if (i / 2) % 2 == 0 { 1 } else { 3 };
            m.add(Time(gap.0 * (i + n - 1)), 1062 * n, w);
            i += n;
            if i > 40 {
                readings.push(m.mbps);
            }
        }
        assert!(readings.iter().all(|&r| r.abs_diff(1359) <= 1), "{:?}", &readings[..20]);
    }

    #[test]
    fn a_meter_that_starts_late_reads_its_first_window_whole() {
        let mut m = Meter::default();
        let w = Time::from_us(10);
        m.add(Time::from_us(71), 62_500, w);
        m.add(Time::from_us(81), 0, w);
        assert_eq!(m.mbps, 50_000);
    }

    #[test]
    fn the_meter_reads_the_last_window_and_spreads_idle_gaps() {
        let mut m = Meter::default();
        let w = Time::from_us(10);
        // 62,500 B at 1 µs, read by the first event of window 1, at 12 µs, with its 1,000 B:
        // 63,500 B over the 11 µs between the two, 46,181 Mbps.
        m.add(Time::from_us(1), 62_500, w);
        assert_eq!(m.mbps, 0);
        m.add(Time::from_us(12), 1000, w);
        assert_eq!(m.mbps as u64, 63_500u64 * 8 * 1_000_000 / 11_000_000);
        // Nothing more until 45 µs: 0 B over 33 µs, averaged with the last reading.
        m.add(Time::from_us(45), 0, w);
        assert_eq!(m.mbps, (46_181 + 1) / 2);
    }

    #[test]
    fn the_receiver_grants_the_headroom_the_other_flows_leave_and_the_sender_takes_it() {
        let mut p = ReceiverDriven::new(ReceiverDrivenParams { utilization_permille: 950, ..Default::default() });
        let mut a = Vec::new();
        let (mut credited, mut background) = (RdFlow::default(), RdFlow::default());
        // Window 0: the background flow brings 30 Gbps of wire bytes (37,500 B in 10 µs),
        // the credited one 50 Gbps, both in 1,000-B-payload packets.
        let hdr = BASE_HEADER_BYTES as u64;
        let pkts = |wire: u64| (wire / (1000 + hdr)) as u32;
        let (bg, cr) = (pkts(37_500), pkts(62_500));
        p.on_event(&ev(Kind::Rx, 2, 5, bg as u64 * 1000, bg, 0), &mut background, &mut env(5, &mut a));
        p.on_event(&ev(Kind::Rx, 1, 5, cr as u64 * 1000, cr, 0), &mut credited, &mut env(5, &mut a));
        a.clear();
        // Window 1: the first RX events in it take readings: the port's, at 15 µs, of all the
        // bytes since 5 µs, its own packet's included, over 10 µs; the credited flow's, at 16
        // µs, of its bytes since 5 µs over 11 µs. Its credit is 95 Gbps (the receiver hands
        // out 95% of the line here) less what the rest of the port brought.
        p.on_event(&ev(Kind::Rx, 2, 15, 1000, 1, 0), &mut background, &mut env(15, &mut a));
        p.on_event(&ev(Kind::Rx, 1, 16, 1000, 1, 0), &mut credited, &mut env(16, &mut a));
        let port_mbps = (((bg + cr) as u64 + 1) * (1000 + hdr) * 8 / 10) as u32;
        let own_mbps = ((cr as u64 + 1) * (1000 + hdr) * 8 / 11) as u32;
        assert_eq!(p.port.mbps, port_mbps);
        let want = 95_000 - (port_mbps - own_mbps);
        assert_eq!(a.last(), Some(&Action::Signal { flow: 1, value: want, bytes: 128 }));
        // Not again within the interval.
        a.clear();
        p.on_event(&ev(Kind::Rx, 1, 20, 1000, 1, 0), &mut credited, &mut env(20, &mut a));
        assert!(a.is_empty());
        // The sender's NIC sets its dequeue rate to the credit (clamped to the line rate).
        let mut sender = RdFlow::default();
        p.on_event(&ev(Kind::Peer, 9, 30, 128, 1, want), &mut sender, &mut env(30, &mut a));
        assert_eq!(a.last(), Some(&Action::SetRate { flow: 9, bps: bps(want) }));
        p.on_event(&ev(Kind::Peer, 9, 40, 128, 1, 400_000), &mut sender, &mut env(40, &mut a));
        assert_eq!(sender.rate_mbps, 100_000);
        // A credit below the floor is raised to it.
        p.on_event(&ev(Kind::Peer, 9, 50, 128, 1, 10), &mut sender, &mut env(50, &mut a));
        assert_eq!(sender.rate_mbps, 1000);
    }

    /// Flows that each bring, in every 10 µs meter window, one RX event of the rate they run at:
    /// their last credit (capped by their demand, Mbps) if they follow credits, else their
    /// demand. Runs windows `from..to` and keeps each flow's last credit in `credits`.
    /// Flow `flow` brings `wire` bytes in one RX event at `t_us` (an event for no packets:
    /// count 0); a credit the receiver signals for it lands in `credit`.
    fn rx_and_credit(p: &mut ReceiverDriven, f: &mut RdFlow, flow: usize, t_us: u64, wire: u64, credit: &mut u32) {
        let mut a = Vec::new();
        p.on_event(&ev(Kind::Rx, flow as u32, t_us, wire, 0, 0), f, &mut env(t_us, &mut a));
        for x in a {
            if let Action::Signal { value, .. } = x {
                *credit = value;
            }
        }
    }

    /// Flows `which` answered a credit: they follow credits.
    fn mark_credited(p: &mut ReceiverDriven, flows: &mut [RdFlow], which: std::ops::Range<usize>) {
        for i in which {
            p.on_event(&ev(Kind::Peer, i as u32, 0, 128, 1, CREDITED), &mut flows[i], &mut env(0, &mut Vec::new()));
            assert!(flows[i].credited);
        }
    }

    fn run_windows(p: &mut ReceiverDriven, flows: &mut [RdFlow], credits: &mut [u32], demand: &[(bool, Option<u32>)], windows: std::ops::Range<u64>) {
        for w in windows {
            for (i, f) in flows.iter_mut().enumerate() {
                let t = w * 10 + 1 + i as u64;
                let rate = match demand[i] {
                    (true, d) => d.map_or(credits[i], |d| d.min(credits[i])),
                    (false, d) => d.expect("a flow that ignores credits sends its demand"),
                };
                // Wire bytes of `rate` Mbps over 10 µs.
                rx_and_credit(p, f, i, t, rate as u64 * 10 / 8, &mut credits[i]);
            }
        }
    }

    #[test]
    fn credited_flows_share_the_headroom_max_min() {
        let mut p = ReceiverDriven::new(ReceiverDrivenParams::default());
        let mut flows = [RdFlow::default(); 3];
        // The three senders answered a credit: they follow credits.
        mark_credited(&mut p, &mut flows, 0..3);
        // Flow 2 wants 5 Gbps: the two others share the other 95 (47.5 each), and flow 2 is
        // granted what it would get were it hungry (a third), room to grow.
        let mut credits = [100_000; 3];
        let mut demand = [(true, None), (true, None), (true, Some(5_000))];
        // (Within the meters' integer rounding: a reading's bytes over the picoseconds since
        // the last, halved with the reading before.)
        let close = |got: &[u32], want: &[u32]| got.iter().zip(want).all(|(g, w)| g.abs_diff(*w) <= 2);
        run_windows(&mut p, &mut flows, &mut credits, &demand, 0..20);
        assert!(close(&credits, &[47_500, 47_500, 33_333]), "{credits:?}");
        // Flow 2 now takes all it is granted: it is hungry too, and all three get a third.
        demand[2].1 = None;
        run_windows(&mut p, &mut flows, &mut credits, &demand, 20..40);
        assert!(close(&credits, &[33_333; 3]), "{credits:?}");

        // Beside a flow at 30 Gbps that ignores credits (it never answered one), two credited
        // flows share the 70 Gbps it leaves.
        let mut p = ReceiverDriven::new(ReceiverDrivenParams::default());
        let mut flows = [RdFlow::default(); 3];
        mark_credited(&mut p, &mut flows, 1..3);
        let mut credits = [100_000; 3];
        run_windows(&mut p, &mut flows, &mut credits, &[(false, Some(30_000)), (true, None), (true, None)], 0..20);
        assert!(close(&credits[1..], &[35_000, 35_000]), "{credits:?}");
        // (The one that ignores credits is granted what the rest leave it, A.8's formula, to
        // within the meters' integer rounding.)
        assert!(credits[0].abs_diff(30_000) <= 1, "{}", credits[0]);
    }

    #[test]
    fn flows_that_read_only_every_few_windows_still_share_the_headroom() {
        // Eight credited flows, each bringing one RX event every fourth meter window (40 µs of
        // bytes at its credit), staggered so that a window sees two of them take a reading.
        // All eight share the line: 12.5 Gbps each (counting only the flows that read in the
        // last window gave each a quarter of it).
        let mut p = ReceiverDriven::new(ReceiverDrivenParams::default());
        let mut flows = [RdFlow::default(); 8];
        mark_credited(&mut p, &mut flows, 0..8);
        let mut credits = [100_000u32; 8];
        for w in 0..80u64 {
            for (i, f) in flows.iter_mut().enumerate().filter(|(i, _)| (w + *i as u64) % 4 == 0) {
                let t = w * 10 + 1 + i as u64;
                rx_and_credit(&mut p, f, i, t, credits[i] as u64 * 40 / 8, &mut credits[i]);
            }
        }
        assert_eq!(credits, [12_500; 8]);
        assert_eq!(p.live_flows(), 8);
    }

    #[test]
    fn a_sender_answers_its_first_credit_and_one_a_millisecond_and_the_receiver_marks_the_flow() {
        let mut p = ReceiverDriven::new(ReceiverDrivenParams::default());
        let mut a = Vec::new();
        let mut sender = RdFlow::default();
        p.on_event(&ev(Kind::Peer, 4, 10, 128, 1, 30_000), &mut sender, &mut env(10, &mut a));
        assert_eq!(a, vec![Action::Signal { flow: 4, value: CREDITED, bytes: 128 }, Action::SetRate { flow: 4, bps: bps(30_000) }]);
        // The next credits within the millisecond are not answered (the answers cross the
        // receiver's own congested link); one a millisecond later is, in case the first was lost.
        a.clear();
        p.on_event(&ev(Kind::Peer, 4, 20, 128, 1, 25_000), &mut sender, &mut env(20, &mut a));
        assert_eq!(a, vec![Action::SetRate { flow: 4, bps: bps(25_000) }]);
        a.clear();
        p.on_event(&ev(Kind::Peer, 4, 1010, 128, 1, 20_000), &mut sender, &mut env(1010, &mut a));
        assert_eq!(a, vec![Action::Signal { flow: 4, value: CREDITED, bytes: 128 }, Action::SetRate { flow: 4, bps: bps(20_000) }]);
        // Backpressure is not a credit: not answered.
        a.clear();
        p.on_event(&ev(Kind::Peer, 4, 3000, 128, 1, BACKPRESSURE), &mut sender, &mut env(3000, &mut a));
        assert_eq!(a, vec![Action::SetRate { flow: 4, bps: bps(10_000) }]);
        assert_eq!(p.answers, 2);
        let mut receiver = RdFlow::default();
        p.on_event(&ev(Kind::Peer, 7, 30, 128, 1, CREDITED), &mut receiver, &mut env(30, &mut a));
        assert!(receiver.credited && sender.rate_mbps == 10_000);
    }

    #[test]
    fn the_flow_context_stays_within_48_bytes() {
        assert_eq!(std::mem::size_of::<RdFlow>(), 48);
    }

    /// Credits for flow 1 alone on the port, one RX event per `(µs, payload bytes)` of
    /// `events` (1,000-byte packets); returns the times (µs) at which the receiver signalled
    /// and the values.
    fn credits_signalled(params: ReceiverDrivenParams, events: &[(u64, u64)]) -> Vec<(u64, u32)> {
        let mut p = ReceiverDriven::new(params);
        let mut f = RdFlow::default();
        let mut out = Vec::new();
        for &(t, bytes) in events {
            let mut a = Vec::new();
            p.on_event(&ev(Kind::Rx, 1, t, bytes, (bytes / 1000) as u32, 0), &mut f, &mut env(t, &mut a));
            out.extend(a.iter().filter_map(|x| match x {
                Action::Signal { value, .. } => Some((t, *value)),
                _ => None,
            }));
        }
        out
    }

    #[test]
    fn signals_go_per_interval_per_n_bytes_or_on_a_changed_credit() {
        // 10,000 B of payload (10 packets, 10,480 wire bytes) every µs for 60 µs.
        let steady: Vec<(u64, u64)> = (1..=60).map(|t| (t, 10_000)).collect();
        // Per interval (10 µs): at the first event, then every 10 µs.
        let per_interval = credits_signalled(ReceiverDrivenParams::default(), &steady);
        assert_eq!(per_interval.iter().map(|s| s.0).collect::<Vec<_>>(), vec![1, 11, 21, 31, 41, 51]);
        // Per 64 KiB of wire bytes: the first event, then every ceil(65,536 / 10,480) = 7 events.
        let per_bytes = credits_signalled(ReceiverDrivenParams { signal_on: SignalOn::Bytes, ..Default::default() }, &steady);
        assert_eq!(per_bytes.iter().map(|s| s.0).collect::<Vec<_>>(), vec![1, 8, 15, 22, 29, 36, 43, 50, 57]);
        // On anomaly: a flow alone gets the whole line whatever its own rate, so after the first
        // credit nothing changes and nothing more is sent.
        let anomaly = credits_signalled(ReceiverDrivenParams { signal_on: SignalOn::Anomaly, ..Default::default() }, &steady);
        assert_eq!(anomaly, vec![(1, 100_000)]);
    }

    #[test]
    fn on_anomaly_a_credit_is_sent_when_the_other_flows_change_it() {
        let mut p = ReceiverDriven::new(ReceiverDrivenParams { signal_on: SignalOn::Anomaly, ..Default::default() });
        let (mut f, mut other) = (RdFlow::default(), RdFlow::default());
        let mut a = Vec::new();
        let signals = |a: &Vec<Action>| a.iter().filter(|x| matches!(x, Action::Signal { flow: 1, .. })).count();
        p.on_event(&ev(Kind::Rx, 1, 1, 1000, 1, 0), &mut f, &mut env(1, &mut a));
        assert_eq!(signals(&a), 1, "the first event signals");
        // Another flow brings 50 Gbps for two windows: flow 1's credit halves, more than 10%
        // (and moves again as the port's readings settle).
        for t in [5u64, 15, 25] {
            p.on_event(&ev(Kind::Rx, 2, t, 62_500, 0, 0), &mut other, &mut env(t, &mut a));
            p.on_event(&ev(Kind::Rx, 1, t + 1, 1000, 1, 0), &mut f, &mut env(t + 1, &mut a));
        }
        let n = signals(&a);
        assert!(n >= 2, "{a:?}");
        assert!(f.last_value < 60_000, "{}", f.last_value);
        // The same load again: no new signal.
        p.on_event(&ev(Kind::Rx, 1, 27, 1000, 1, 0), &mut f, &mut env(27, &mut a));
        assert_eq!(signals(&a), n);
    }

    #[test]
    fn backpressure_on_anomaly_signals_once_per_busy_spell() {
        let mut p = ReceiverDriven::new(ReceiverDrivenParams { mode: Mode::Backpressure, signal_on: SignalOn::Anomaly, ..Default::default() });
        let mut f = RdFlow::default();
        let mut a = Vec::new();
        // ECN-marked packets are busy readings: one signal for the spell, not one per packet.
        for t in 1..=5 {
            p.on_event(&ev(Kind::Rx, 1, t, 1000, 1, 1), &mut f, &mut env(t, &mut a));
        }
        assert_eq!(a.len(), 1);
        // A calm (unmarked, idle port) reading, then busy again: a second signal.
        p.on_event(&ev(Kind::Rx, 1, 6, 1000, 1, 0), &mut f, &mut env(6, &mut a));
        p.on_event(&ev(Kind::Rx, 1, 7, 1000, 1, 1), &mut f, &mut env(7, &mut a));
        assert_eq!(a.len(), 2);
    }

    #[test]
    fn backpressure_cuts_multiplicatively_then_climbs_additively() {
        let params = ReceiverDrivenParams { mode: Mode::Backpressure, ..Default::default() };
        let mut p = ReceiverDriven::new(params);
        let mut a = Vec::new();
        // Receiver: a port at 96 Gbps (≥ 90%) signals; at 50 Gbps and unmarked it does not.
        let mut rx = RdFlow::default();
        p.on_event(&ev(Kind::Rx, 1, 5, 120_000, 0, 0), &mut rx, &mut env(5, &mut a));
        p.on_event(&ev(Kind::Rx, 1, 15, 0, 0, 0), &mut rx, &mut env(15, &mut a));
        assert_eq!(p.port.mbps, 96_000);
        assert_eq!(a, vec![Action::Signal { flow: 1, value: BACKPRESSURE, bytes: 128 }]);
        a.clear();
        p.on_event(&ev(Kind::Rx, 1, 25, 0, 0, 0), &mut rx, &mut env(26, &mut a));
        assert!(a.is_empty(), "port idle in window 1");
        // An ECN-marked packet signals whatever the port rate.
        p.on_event(&ev(Kind::Rx, 1, 37, 1000, 1, 1), &mut rx, &mut env(37, &mut a));
        assert_eq!(a.len(), 1);
        // Sender: 100 → 50 Gbps at the signal, then +1 Gbps per 10 µs of TX events.
        let mut s = RdFlow::default();
        a.clear();
        p.on_event(&ev(Kind::Peer, 4, 100, 128, 1, BACKPRESSURE), &mut s, &mut env(100, &mut a));
        assert_eq!(s.rate_mbps, 50_000);
        for t in (102..=130).step_by(2) {
            p.on_event(&ev(Kind::Tx, 4, t, 1000, 1, 0), &mut s, &mut env(t, &mut a));
        }
        assert_eq!(s.rate_mbps, 53_000, "three increases in 30 µs");
        p.on_event(&ev(Kind::Peer, 4, 131, 128, 1, BACKPRESSURE), &mut s, &mut env(131, &mut a));
        assert_eq!(s.rate_mbps, 26_500);
    }
}
