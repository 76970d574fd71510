//! SCR's event processor (paper §4.3.2–§4.3.3): the multiplexer that hands queued events to
//! the NIC's hardware threads, the threads themselves with a cost model of the cores, and the
//! latency with which a decision reaches the data path.
//!
//! - **Steering** (deterministic multi-threading): a flow's events all go to one thread, so its
//!   state is never shared. Hardware multiplexing hashes the flow id onto the threads; software
//!   multiplexing deals flows out to threads in turn as they appear (so N ≤ T flows get a
//!   thread each, §6.1).
//! - **Run to completion**: a thread takes the queue at the head of its ready list, folds
//!   everything waiting in it into one event (the queue's coalescing strategy), runs the policy
//!   on it, and is busy for the policy's cycles at the core clock. Events that arrive meanwhile
//!   coalesce in their queues: a slow policy shows up as coarser events (bytes per event) and,
//!   in software rings, as dropped events, never as a stalled NIC.
//! - **Latency** (A.11): an event reaches a thread `trigger_latency` after the NIC raised it
//!   (a policy's own wake-up, a timer on the cores, runs when due);
//!   a rate (or path, or probe request) takes effect `install_latency` after the thread decided.
//! - **New flows** (node-level work): a flow's first collected event makes it join; the
//!   policy's join work (rescaling other flows, say) is charged to the flow's thread, or with
//!   a separate per-node pool (`node_threads`) to one of its threads, as are leaves.
//! - **Node-level events** (the host domain's telemetry, [`super::telemetry`]) queue per kind
//!   and run on the per-node pool (on a flow thread without one), with every flow at hand.
//! - **The agenda**: the threads' runs and the policies' wake-ups are the processor's own
//!   timeline, kept in time order here rather than in the world's event queue. Nothing a run
//!   decides reaches the data path before `install_latency` has passed, so the world needs the
//!   processor only when a decision takes effect or a run might make one
//!   ([`Processor::due`]); in between, runs catch up on their own timeline whenever the NIC
//!   hands over an event ([`Processor::advance`] first, so a queue's state is the one its
//!   thread left at that moment). Runs keep their own times, so results do not depend on
//!   when they are caught up.

use super::event::{Kind, ScrEvent};
use super::policy::{Action, Env, FlowEntry, Policy, Verdict, FLOW_CONTEXT_BYTES};
use super::queue::{EventQueue, Strategy};
use super::stats::ScrStats;
use crate::nic::events::NicEvent;
use crate::units::{BitsPerSec, Time};
use crate::sim::agenda::Agenda;
use std::collections::VecDeque;

/// The processor's fixed configuration (from `[nic.scr]`).
#[derive(Clone, Debug)]
pub struct Config {
    pub threads: u32,
    /// The separate per-node pool's threads (0: node-level work shares the flow threads).
    pub node_threads: u32,
    pub clock_mhz: u32,
    /// In-band events coalesce in the ASIC (accumulate, hash-steered); else all in software.
    pub hardware: bool,
    /// Software ring entries per queue.
    pub depth: u32,
    pub strategies: [Strategy; Kind::COUNT],
    /// Bytes a *threshold* queue gathers before a stable flow is processed again.
    pub threshold: u64,
    /// Cycles a thread spends parking events of a stable flow (threshold strategy).
    pub park_cycles: u32,
    pub trigger_latency: Time,
    pub install_latency: Time,
    pub line_rate: BitsPerSec,
}

impl Config {
    /// Time `cycles` take at the core clock, rounded up.
    pub fn cycles_time(&self, cycles: u64) -> Time {
        Time((cycles * 1_000_000).div_ceil(self.clock_mhz.max(1) as u64))
    }
}

#[derive(Clone, Debug)]
struct Thread {
    busy_until: Time,
    /// Where the work booked up to `busy_until` runs without a break from (work may be
    /// booked to start later than the thread frees: a join or leave after the trigger).
    busy_from: Time,
    /// Queues with events, and when their events reach this thread.
    ready: VecDeque<Ready>,
    /// Its live agenda entry (when, sequence number); `Time::MAX`: none.
    wake: (Time, u64),
}

impl Default for Thread {
    fn default() -> Thread {
        Thread { busy_until: Time::ZERO, busy_from: Time::ZERO, ready: VecDeque::new(), wake: (Time::MAX, 0) }
    }
}

/// A queue on a thread's ready list: flow slot (or [`NODE_QUEUE`] + node-level queue) and
/// lane, and when its events reach the thread.
#[derive(Clone, Copy, Debug)]
struct Ready {
    slot: u32,
    lane: u32,
    at: Time,
}

#[derive(Clone, Copy, Debug, Default)]
struct FlowMeta {
    thread: u32,
    stable: bool,
}

/// A join's or leave's node-level work, decided when the NIC saw it, waiting on its thread's
/// ready list for its turn: its cycles are spent, and its actions take effect, once the thread
/// has run it (after whatever reached the thread before it, booked yet or not).
struct Stashed {
    slot: u32,
    decided: Time,
    cycles: u32,
    /// Each action with the install sequence number taken when it was decided: a rate decided
    /// later (by the flow's own thread while the join waited) is the newer one, and the join's
    /// is dropped when it comes due after it ([`Processor::pop_install`]).
    actions: Vec<(u64, Action)>,
}

/// One NIC's SCR processor running policy `P`.
pub struct Processor<P: Policy> {
    pub cfg: Config,
    pub policy: P,
    flows: Vec<FlowEntry<P::Flow>>,
    meta: Vec<FlowMeta>,
    /// Queue pair → flow slot + 1 (0: none).
    slot_of: Vec<u32>,
    /// Each flow's queues, one per lane: the per-flow kinds the policy subscribes to, and
    /// `Timer` (its wake-ups); `lanes` of them per flow slot, side by side.
    queues: Vec<EventQueue>,
    lanes: usize,
    /// Kind → lane (`NO_LANE`: not collected per flow), and back.
    lane_of: [u8; Kind::COUNT],
    kind_of_lane: [Kind; Kind::COUNT],
    threads: Vec<Thread>,
    /// Decided actions by when they take effect (ties in the order decided).
    installs: Agenda<Action>,
    /// Thread runs due; an entry whose sequence number is no longer its thread's `wake` was
    /// superseded by an earlier one and is skipped.
    agenda: Agenda<u32>,
    /// Policy wake-ups (`Action::Wake`) due, by queue pair.
    wakes: Agenda<u32>,
    /// The earliest moment the entries made since the last hand-over could need the world
    /// (see [`Self::collect`]).
    fresh: Time,
    scratch: Vec<Action>,
    /// Joins and leaves waiting for their threads, in the order decided.
    stashed: Vec<Stashed>,
    next_thread: u32,
    /// The node-level kinds' queues ([`Kind::NODE`] order).
    node_queues: [EventQueue; 2],
    /// The last `cycles_time` conversion (policies charge the same cycles event after event,
    /// and the division is a good part of an event's cost on the real CPU).
    last_cycles: (u64, Time),
    /// By queue pair: the decision number (agenda sequence) of the last rate installed.
    rate_decided: Vec<u64>,
    pub stats: ScrStats,
}

impl<P: Policy> Processor<P> {
    pub fn new(cfg: Config, policy: P) -> Processor<P> {
        let threads = vec![Thread::default(); (cfg.threads.max(1) + cfg.node_threads) as usize];
        let mut lane_of = [NO_LANE; Kind::COUNT];
        let mut kind_of_lane = [Kind::Timer; Kind::COUNT];
        let mut lanes = 0;
        for k in Kind::ALL {
            if !k.node_level() && (k == Kind::Timer || policy.subscribes(k)) {
                lane_of[k.index()] = lanes as u8;
                kind_of_lane[lanes] = k;
                lanes += 1;
            }
        }
        Processor {
            cfg,
            policy,
            flows: Vec::new(),
            meta: Vec::new(),
            slot_of: Vec::new(),
            queues: Vec::new(),
            lanes,
            lane_of,
            kind_of_lane,
            threads,
            installs: Agenda::default(),
            agenda: Agenda::default(),
            wakes: Agenda::default(),
            fresh: Time::MAX,
            scratch: Vec::new(),
            stashed: Vec::new(),
            next_thread: 0,
            node_queues: Default::default(),
            last_cycles: (0, Time::ZERO),
            rate_decided: Vec::new(),
            stats: ScrStats::default(),
        }
    }

    /// Bytes of the policy's per-flow context.
    pub fn context_bytes() -> usize {
        std::mem::size_of::<P::Flow>()
    }

    /// [`Config::cycles_time`], remembering the last answer.
    #[inline]
    fn cycles_time(&mut self, cycles: u64) -> Time {
        if self.last_cycles.0 != cycles {
            self.last_cycles = (cycles, self.cfg.cycles_time(cycles));
        }
        self.last_cycles.1
    }

    /// The per-flow threads (the per-node pool's follow them).
    fn flow_threads(&self) -> u32 {
        self.cfg.threads.max(1)
    }

    /// The per-node pool's thread for node-level work number `n`, if there is a pool.
    fn node_thread(&self, n: usize) -> Option<usize> {
        (self.cfg.node_threads > 0).then(|| (self.flow_threads() + n as u32 % self.cfg.node_threads) as usize)
    }

    /// Thread `t` works `cycles`, starting at `at` or when it is free if later; returns when
    /// it is done.
    #[inline]
    fn occupy(&mut self, t: usize, at: Time, cycles: u64) -> Time {
        let cost = self.cycles_time(cycles);
        let th = &mut self.threads[t];
        if at > th.busy_until {
            th.busy_from = at;
        }
        let done = th.busy_until.max(at) + cost;
        th.busy_until = done;
        self.stats.busy_ps += cost.0;
        done
    }

    fn slot(&self, qp: u32) -> Option<usize> {
        match self.slot_of.get(qp as usize) {
            Some(&s) if s > 0 => Some(s as usize - 1),
            _ => None,
        }
    }

    /// A new flow: its slot, its thread, and the policy's join work (decided now; it runs on
    /// the per-node pool, or else on the flow's thread, in its turn, and its actions take
    /// effect once it has run).
    #[cold]
    #[inline(never)]
    fn join(&mut self, now: Time, qp: u32) -> usize {
        let slot = self.flows.len();
        if self.slot_of.len() <= qp as usize {
            self.slot_of.resize(qp as usize + 1, 0);
        }
        self.slot_of[qp as usize] = slot as u32 + 1;
        let t = self.flow_threads();
        let thread = if self.cfg.hardware { (crate::sim::rng::mix64(qp as u64) % t as u64) as u32 } else { self.next_thread };
        self.next_thread = (self.next_thread + 1) % t;
        self.flows.push(FlowEntry { flow: qp, left: false, ctx: P::Flow::default() });
        self.queues.resize(self.queues.len() + self.lanes, EventQueue::default());
        self.meta.push(FlowMeta { thread, stable: false });
        let at = now + self.cfg.trigger_latency;
        let mut env = Env { now: at, line_rate: self.cfg.line_rate, install_latency: self.cfg.install_latency, in_force: at + self.cfg.install_latency, actions: &mut self.scratch };
        let cycles = self.policy.on_join(&mut self.flows, &mut env);
        self.stats.flows += 1;
        self.stash(slot, at, cycles);
        slot
    }

    /// Puts a join's or leave's work for flow `slot`, decided at `at` (its actions in the
    /// scratch list), on the ready list of the thread that runs it: the per-node pool's, else
    /// the flow's. A thread runs its ready list in the order it was reached, so the work comes
    /// after every queue that reached the thread first, even one whose run is not booked yet
    /// (a join computed from the runs booked so far went ahead of a run already due: on one
    /// thread busy for 2 ms with a costly event, a second flow's join took effect within 5 µs).
    #[cold]
    fn stash(&mut self, slot: usize, at: Time, cycles: u32) {
        let actions = self.scratch.drain(..).map(|a| (self.installs.reserve(), a)).collect();
        self.stashed.push(Stashed { slot: slot as u32, decided: at, cycles, actions });
        let t = self.node_thread(slot).unwrap_or(self.meta[slot].thread as usize);
        self.make_ready(t, Ready { slot: slot as u32, lane: STASHED_LANE, at });
    }

    /// Thread `t`, free at `now`, runs the join or leave of flow `slot` waiting for it;
    /// returns when to wake it again.
    #[cold]
    #[inline(never)]
    fn run_stashed(&mut self, now: Time, t: u32, slot: u32) -> Option<Time> {
        let i = self.stashed.iter().position(|s| s.slot == slot).expect("a stashed entry per ready entry");
        let Stashed { decided, cycles, actions, .. } = self.stashed.remove(i);
        let done = self.occupy(t as usize, now, cycles as u64);
        // Nothing is installed for a queue pair that closed meanwhile (a join run after its
        // flow left).
        let f = &self.flows[slot as usize];
        let gone = f.left.then_some(f.flow);
        for (seq, a) in actions.into_iter().filter(|(_, a)| gone != Some(a.flow())) {
            self.place(decided, done, Some(seq), a);
        }
        self.wake_after(t, done)
    }

    /// Queues the scratch actions of a decision made at `decided` to take effect
    /// `install_latency` after `done`, when the run that made it ends (a wake-up: its own delay
    /// after `decided`, so that a policy's timer keeps its period whatever its runs cost).
    #[inline(always)]
    fn schedule(&mut self, decided: Time, done: Time) {
        if !self.scratch.is_empty() {
            self.schedule_actions(decided, done);
        }
    }

    #[inline(never)]
    fn schedule_actions(&mut self, decided: Time, done: Time) {
        let mut actions = std::mem::take(&mut self.scratch);
        for a in actions.drain(..) {
            self.place(decided, done, None, a);
        }
        self.scratch = actions;
    }

    /// Puts action `a` of a decision made at `decided`, by a run that ends at `done`, where it
    /// takes effect: a wake-up on the cores' own timeline, `after` the decision; anything else
    /// `install_latency` after `done`, in install order `seq` (taken now if `None`).
    #[inline]
    fn place(&mut self, decided: Time, done: Time, seq: Option<u64>, a: Action) {
        let at = match a {
            // A timer on the cores: it stays on the processor's own timeline.
            Action::Wake { flow, after } => {
                self.wakes.push(decided + after, flow);
                decided + after + self.cfg.install_latency
            }
            _ => {
                let seq = seq.unwrap_or_else(|| self.installs.reserve());
                self.installs.push_reserved(done + self.cfg.install_latency, seq, a);
                done + self.cfg.install_latency
            }
        };
        self.fresh = self.fresh.min(at);
    }

    /// The NIC raised an event of queue pair `qp` at `now`: collect it if the policy wants it
    /// (after the runs due by `now`). Returns when the world must hand the processor the time
    /// at the latest, if this call made that earlier ([`Self::due`] without looking at
    /// everything: the world's timer, armed at or before the previous `due`, is moved earlier
    /// if need be).
    #[inline]
    pub fn collect(&mut self, now: Time, qp: u32, ev: &NicEvent) -> Option<Time> {
        let e = ScrEvent::from_nic(now, qp, ev)?;
        if self.lane_of[e.kind.index()] == NO_LANE {
            return None;
        }
        self.fresh = Time::MAX;
        self.advance(now);
        self.enqueue(now, qp, e);
        self.take_fresh()
    }

    /// The earliest moment the entries made since the last call could need the world.
    #[inline]
    fn take_fresh(&mut self) -> Option<Time> {
        let f = std::mem::replace(&mut self.fresh, Time::MAX);
        (f < Time::MAX).then_some(f)
    }

    /// A node-level event (a telemetry sample taken at `e.at`, handed over at `now`): counted
    /// in the telemetry figures, and queued for the per-node pool if the policy wants its kind.
    /// It reaches its thread a trigger latency after it was taken, and not before `now`.
    /// Returns as [`Self::collect`] does.
    pub fn collect_node(&mut self, now: Time, e: ScrEvent) -> Option<Time> {
        debug_assert!(e.kind.node_level());
        self.stats.telemetry.record(&e);
        if !self.policy.subscribes(e.kind) {
            return None;
        }
        self.fresh = Time::MAX;
        self.advance(now);
        let k = e.kind.index();
        self.stats.collected[k] += 1;
        let n = Kind::NODE.iter().position(|&x| x == e.kind).expect("a node-level kind");
        let q = &mut self.node_queues[n];
        if !q.push(e, self.cfg.strategies[k], Some(self.cfg.depth)) {
            self.stats.dropped[k] += 1;
            return self.take_fresh();
        }
        if !q.ready {
            q.ready = true;
            let t = self.node_thread(n).unwrap_or(n % self.flow_threads() as usize);
            let at = (e.at + self.cfg.trigger_latency).max(now);
            self.make_ready(t, Ready { slot: NODE_QUEUE + n as u32, lane: 0, at });
        }
        self.take_fresh()
    }

    /// A policy's wake-up of flow `qp` is due (`Action::Wake`): a `Kind::Timer` event, queued
    /// like any other (a flow that left gets none).
    fn wake(&mut self, now: Time, qp: u32) {
        if self.slot(qp).is_some() {
            let e = ScrEvent { kind: Kind::Timer, flow: qp, at: now, first_at: now, bytes: 0, count: 1, rtt: Time::ZERO, value: 0, aux: 0 };
            self.enqueue(now, qp, e);
        }
    }

    /// A queue joins thread `t`'s ready list; the thread runs when its events arrive, or when
    /// it is free if later.
    #[inline]
    fn make_ready(&mut self, t: usize, r: Ready) {
        let th = &mut self.threads[t];
        // In the order they reach the thread: a wake-up (no trigger latency) can come before
        // events the NIC raised earlier, which the thread would otherwise wait for first.
        if th.ready.back().is_none_or(|b| b.at <= r.at) {
            th.ready.push_back(r);
        } else {
            let at = th.ready.iter().rposition(|x| x.at <= r.at).map_or(0, |i| i + 1);
            th.ready.insert(at, r);
        }
        let when = r.at.max(th.busy_until);
        self.schedule_thread(t, when);
    }

    /// Thread `t` is to run at `at`, unless it already runs earlier.
    #[inline]
    fn schedule_thread(&mut self, t: usize, at: Time) {
        let th = &mut self.threads[t];
        if at < th.wake.0 {
            th.wake = (at, self.agenda.push(at, t as u32));
            self.fresh = self.fresh.min(at + self.cfg.install_latency);
        }
    }

    /// Runs the threads and wake-ups due by `now`, in time order (ties in the order they were
    /// scheduled; a wake-up before a run).
    #[inline]
    pub fn advance(&mut self, now: Time) {
        loop {
            // A wake-up due by now goes first unless a run is due before it (ties: the wake-up).
            if let Some(w) = self.wakes.next_at().filter(|&w| w <= now) {
                if w <= self.agenda.next_at().unwrap_or(Time::MAX) {
                    let (at, _, qp) = self.wakes.pop_until(w).expect("due");
                    self.wake(at, qp);
                    continue;
                }
            }
            let Some((at, seq, t)) = self.agenda.pop_until(now) else { return };
            let th = &mut self.threads[t as usize];
            if th.wake.1 != seq {
                continue;
            }
            th.wake = (Time::MAX, 0);
            if let Some(next) = self.run_thread(at, t) {
                self.schedule_thread(t as usize, next);
            }
        }
    }

    /// When the world must next hand the processor the time ([`Self::advance`], then
    /// [`Self::pop_install`]): a decision takes effect, or a run or wake-up comes due whose
    /// decisions could take effect then (not before `install_latency` after it).
    #[inline]
    pub fn due(&self) -> Option<Time> {
        let run = self.agenda.next_at().unwrap_or(Time::MAX);
        let wake = self.wakes.next_at().unwrap_or(Time::MAX);
        let install = self.installs.next_at().unwrap_or(Time::MAX);
        let at = install.min(Time(run.min(wake).0.saturating_add(self.cfg.install_latency.0)));
        (at < Time::MAX).then_some(at)
    }

    #[inline(always)]
    fn enqueue(&mut self, now: Time, qp: u32, e: ScrEvent) {
        let k = e.kind.index();
        self.stats.collected[k] += 1;
        let slot = match self.slot(qp) {
            Some(s) => s,
            None => self.join(now, qp),
        };
        let lane = self.lane_of[k] as usize;
        let depth = if self.cfg.hardware && e.kind.in_band() { None } else { Some(self.cfg.depth) };
        let q = &mut self.queues[slot * self.lanes + lane];
        if !q.push(e, self.cfg.strategies[k], depth) {
            self.stats.dropped[k] += 1;
            return;
        }
        if q.ready {
            return;
        }
        q.ready = true;
        let t = self.meta[slot].thread as usize;
        // A wake-up is the cores' own timer: no event crosses from the NIC to them.
        let at = if e.kind == Kind::Timer { now } else { now + self.cfg.trigger_latency };
        self.make_ready(t, Ready { slot: slot as u32, lane: lane as u32, at });
    }

    /// Queue pair `qp` closed: its flow leaves (the policy reclaims), its events are dropped.
    /// Returns as [`Self::collect`] does.
    pub fn leave(&mut self, now: Time, qp: u32) -> Option<Time> {
        let slot = self.slot(qp)?;
        self.fresh = Time::MAX;
        self.advance(now);
        self.slot_of[qp as usize] = 0;
        let at = now + self.cfg.trigger_latency;
        let mut env = Env { now: at, line_rate: self.cfg.line_rate, install_latency: self.cfg.install_latency, in_force: at + self.cfg.install_latency, actions: &mut self.scratch };
        self.flows[slot].left = true;
        let cycles = self.policy.on_leave(slot, &mut self.flows, &mut env);
        // Nothing is installed for the closed queue pair itself.
        self.scratch.retain(|a| a.flow() != qp);
        // What its queues still hold is discarded, and counted: collected = coalesced into
        // handled events + dropped + discarded + still waiting.
        for q in &mut self.queues[slot * self.lanes..(slot + 1) * self.lanes] {
            if let Some(ev) = q.take() {
                self.stats.discarded[ev.kind.index()] += ev.count as u64;
            }
        }
        // It runs on the per-node pool, else on the flow's thread, in its turn.
        self.stash(slot, at, cycles);
        self.take_fresh()
    }

    /// Thread `t`'s turn at `now`: if free, it takes the next ready queue. Returns when to run
    /// it again (`None`: when an event next makes one of its queues ready).
    #[inline]
    fn run_thread(&mut self, now: Time, t: u32) -> Option<Time> {
        let th = &mut self.threads[t as usize];
        if th.busy_until > now {
            return Some(th.busy_until);
        }
        let Ready { slot, lane, at } = *th.ready.front()?;
        if at > now {
            return Some(at);
        }
        th.ready.pop_front();
        if lane == STASHED_LANE {
            return self.run_stashed(now, t, slot);
        }
        if slot >= NODE_QUEUE {
            return self.run_node(now, t, (slot - NODE_QUEUE) as usize);
        }
        let (slot, lane) = (slot as usize, lane as usize);
        let k = self.kind_of_lane[lane].index();
        let q = &mut self.queues[slot * self.lanes + lane];
        q.ready = false;
        if self.flows[slot].left || q.entries == 0 {
            return self.threads[t as usize].ready.front().map(|r| r.at.max(now));
        }
        // A stable flow's events are parked until `threshold` bytes have gathered, or until a
        // software ring is full (more could only be dropped: then they are processed).
        let ring_full = !(self.cfg.hardware && self.kind_of_lane[lane].in_band()) && q.entries >= self.cfg.depth;
        let parks = self.cfg.strategies[k] == Strategy::Threshold && self.meta[slot].stable && q.bytes() < self.cfg.threshold && !ring_full;
        let cycles = if parks {
            // The events stay queued; the next event makes the queue ready again.
            self.stats.parked[k] += 1;
            self.cfg.park_cycles
        } else {
            let ev = q.take().expect("a ready queue holds events");
            let cycles = self.policy.cycles(&ev);
            let in_force = now + self.cycles_time(cycles as u64) + self.cfg.install_latency;
            let mut env = Env { now, line_rate: self.cfg.line_rate, install_latency: self.cfg.install_latency, in_force, actions: &mut self.scratch };
            let verdict = self.policy.on_event(&ev, &mut self.flows[slot].ctx, &mut env);
            self.meta[slot].stable = verdict == Verdict::Stable;
            self.stats.handled[k] += 1;
            self.stats.handled_bytes[k] += ev.bytes;
            self.stats.coalesced[k] += ev.count as u64;
            cycles
        };
        let done = self.occupy(t as usize, now, cycles as u64);
        self.schedule(now, done);
        self.wake_after(t, done)
    }

    /// When thread `t`, busy until `done`, must wake again: then if a queue waits for it, else
    /// never (an event that makes a queue ready meanwhile names its own wake-up, and a wake-up
    /// that would find nothing to take is one timer event fewer per handled event).
    #[inline]
    fn wake_after(&self, t: u32, done: Time) -> Option<Time> {
        self.threads[t as usize].ready.front().map(|_| done)
    }

    /// Thread `t`, free at `now`, runs node-level queue `n`; returns when to wake it again.
    fn run_node(&mut self, now: Time, t: u32, n: usize) -> Option<Time> {
        let q = &mut self.node_queues[n];
        q.ready = false;
        let Some(ev) = q.take() else {
            return self.threads[t as usize].ready.front().map(|r| r.at.max(now));
        };
        let k = ev.kind.index();
        let cycles = self.policy.cycles(&ev);
        let in_force = now + self.cycles_time(cycles as u64) + self.cfg.install_latency;
        let mut env = Env { now, line_rate: self.cfg.line_rate, install_latency: self.cfg.install_latency, in_force, actions: &mut self.scratch };
        self.policy.on_node_event(&ev, &mut self.flows, &mut env);
        self.stats.handled[k] += 1;
        self.stats.coalesced[k] += ev.count as u64;
        let done = self.occupy(t as usize, now, cycles as u64);
        self.schedule(now, done);
        self.wake_after(t, done)
    }

    /// When the next decided action takes effect.
    #[cfg(test)]
    fn next_install(&self) -> Option<Time> {
        self.installs.next_at()
    }

    /// The next action due by `now` (with the runs due by then [`Self::advance`]d first).
    /// A rate decided earlier than one already installed for the same queue pair is dropped:
    /// the NIC keeps the later decision, as the policy's books do (a join's rescale takes effect
    /// when the join's run ends, which can be after the flow's own thread decided anew).
    pub fn pop_install(&mut self, now: Time) -> Option<Action> {
        loop {
            let (_, seq, a) = self.installs.pop_until(now)?;
            if let Action::SetRate { flow, .. } = a {
                let q = flow as usize;
                // Only queue pairs this processor has seen join have decisions to order (an
                // outside policy's rate for flow 2^32 - 1, a telemetry event's, grew this
                // table to 32 GB and aborted); the world drops a rate for a queue pair that
                // is not there.
                if q >= self.slot_of.len() {
                    return Some(a);
                }
                if self.rate_decided.len() <= q {
                    self.rate_decided.resize(q + 1, 0);
                }
                if seq < self.rate_decided[q] {
                    continue;
                }
                self.rate_decided[q] = seq;
            }
            return Some(a);
        }
    }

    /// Every live flow's queue pair and context.
    pub fn flows(&self) -> impl Iterator<Item = &FlowEntry<P::Flow>> {
        self.flows.iter().filter(|f| !f.left)
    }
}

/// Ready-list entries from this slot number up are node-level queues.
const NODE_QUEUE: u32 = u32::MAX - 8;
/// `lane_of` for a kind with no per-flow queue.
const NO_LANE: u8 = u8::MAX;
/// The lane of a ready-list entry that is a flow's join or leave ([`Stashed`]).
const STASHED_LANE: u32 = u32::MAX;

/// The processor as the NIC holds it, whatever its policy.
pub trait ScrCore {
    fn collect(&mut self, now: Time, qp: u32, ev: &NicEvent) -> Option<Time>;
    fn collect_node(&mut self, now: Time, ev: ScrEvent) -> Option<Time>;
    fn leave(&mut self, now: Time, qp: u32) -> Option<Time>;
    fn advance(&mut self, now: Time);
    fn due(&self) -> Option<Time>;
    fn pop_install(&mut self, now: Time) -> Option<Action>;
    /// A rate [`Self::pop_install`] gave was put in force at `at` (counted in
    /// [`ScrStats::rate_sets`]; one for a queue pair that closed meanwhile is not).
    fn rate_in_force(&mut self, at: Time);
    fn stats(&self) -> &ScrStats;
    /// Thread time booked past `t` (runs booked whole when they start), summed over every
    /// thread: what [`ScrStats::busy_ps`] counts that has not happened by `t` (at most that; a
    /// second booking after a gap past `t` is not seen).
    fn busy_after(&self, t: Time) -> u64;
    /// Events waiting in the queues, by kind ([`Kind::index`]): collected, not yet handled.
    fn waiting(&self) -> [u64; Kind::COUNT];
    /// Every thread: the per-flow ones and the per-node pool's.
    fn all_threads(&self) -> u32;
    fn policy_name(&self) -> &'static str;
    /// Whether the policy takes events of `kind`.
    fn subscribes(&self, kind: Kind) -> bool;
    fn context_bytes(&self) -> usize;
    /// The per-flow threads.
    fn threads(&self) -> u32;
    /// The policy's own figures (see [`Policy::report`]).
    fn report(&self) -> Vec<(&'static str, f64)>;
    /// For handing an outside policy to a processor built for one (`Processor<External>`).
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any;
    fn as_any(&self) -> &dyn std::any::Any;
}

impl<P: Policy + 'static> ScrCore for Processor<P> {
    fn collect(&mut self, now: Time, qp: u32, ev: &NicEvent) -> Option<Time> {
        Processor::collect(self, now, qp, ev)
    }
    fn collect_node(&mut self, now: Time, ev: ScrEvent) -> Option<Time> {
        Processor::collect_node(self, now, ev)
    }
    fn leave(&mut self, now: Time, qp: u32) -> Option<Time> {
        Processor::leave(self, now, qp)
    }
    fn advance(&mut self, now: Time) {
        Processor::advance(self, now)
    }
    fn due(&self) -> Option<Time> {
        Processor::due(self)
    }
    fn pop_install(&mut self, now: Time) -> Option<Action> {
        Processor::pop_install(self, now)
    }
    fn rate_in_force(&mut self, at: Time) {
        self.stats.rate_sets += 1;
        self.stats.last_rate_set = at;
    }
    fn stats(&self) -> &ScrStats {
        &self.stats
    }
    fn busy_after(&self, t: Time) -> u64 {
        // Only the unbroken run of work up to `busy_until`: an idle stretch before work booked
        // to start later is not busy time (earlier bookings end by `busy_from`).
        self.threads.iter().map(|th| th.busy_until.0.saturating_sub(t.max(th.busy_from).0)).sum()
    }
    fn waiting(&self) -> [u64; Kind::COUNT] {
        let mut n = [0; Kind::COUNT];
        for (kind, count) in self.queues.iter().chain(&self.node_queues).filter_map(EventQueue::waiting) {
            n[kind.index()] += count;
        }
        n
    }
    fn all_threads(&self) -> u32 {
        self.threads.len() as u32
    }
    fn policy_name(&self) -> &'static str {
        self.policy.name()
    }
    fn subscribes(&self, kind: Kind) -> bool {
        self.policy.subscribes(kind)
    }
    fn context_bytes(&self) -> usize {
        Self::context_bytes()
    }
    fn threads(&self) -> u32 {
        self.flow_threads()
    }
    fn report(&self) -> Vec<(&'static str, f64)> {
        self.policy.report(&self.flows)
    }
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Whether policy `P`'s per-flow context fits the NIC's (checked when a processor is built).
pub fn context_fits<P: Policy>() -> Result<(), String> {
    let b = std::mem::size_of::<P::Flow>();
    if b > FLOW_CONTEXT_BYTES {
        return Err(format!("SCR policy per-flow context is {b} bytes; the NIC allows {FLOW_CONTEXT_BYTES}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nic::scr::policy::passive::{Passive, PassiveParams};
    use crate::nic::scr::policy::static_share::{StaticParams, StaticShare};

    fn cfg(threads: u32, hardware: bool) -> Config {
        Config {
            threads,
            node_threads: 0,
            clock_mhz: 500,
            hardware,
            depth: 1024,
            strategies: [Strategy::Accumulate; Kind::COUNT],
            threshold: 64 * 1024,
            park_cycles: 10,
            trigger_latency: Time::from_us(2),
            install_latency: Time::from_us(3),
            line_rate: BitsPerSec::gbps(100),
        }
    }

    /// Feeds `flows` flows sending `pkt`-byte packets in turn at line rate for `until`.
    fn drive<P: Policy + 'static>(mut p: Processor<P>, flows: u32, pkt: u64, until: Time) -> Processor<P> {
        let events = until.0.div_ceil(BitsPerSec::gbps(100).tx_time(pkt).0);
        crate::bench::scr_feed_tx(&mut p, flows, pkt, events);
        p
    }

    fn granularity<P: Policy>(p: &Processor<P>) -> f64 {
        let k = Kind::Tx.index();
        p.stats.handled_bytes[k] as f64 / p.stats.handled[k] as f64
    }

    #[test]
    fn granularity_stays_put_once_flows_outnumber_threads() {
        // 4 threads at 500 MHz, 400 cycles per event: 5 M events/s against 12.2 M packets/s of
        // 1 KB at 100 Gbps, so threads are saturated and events coalesce. §4.3.3: with N ≥ T
        // flows the bytes per event are LineRate / capacity whatever N is.
        let slow = || Passive(PassiveParams { cycles: 400 });
        // (Below 16 flows the 2 µs trigger latency, not the threads, sets each flow's pace.)
        let g: Vec<f64> = [16, 32, 64, 128].iter().map(|&n| granularity(&drive(Processor::new(cfg(4, false), slow()), n, 1024, Time::from_us(2000)))).collect();
        // Analytic: 12.5 GB/s ÷ 5 M events/s = 2,500 bytes per event.
        for x in &g {
            assert!((x / 2500.0 - 1.0).abs() < 0.10, "granularity {g:?}");
        }
        let spread = g.iter().cloned().fold(0.0, f64::max) / g.iter().cloned().fold(f64::MAX, f64::min);
        assert!(spread < 1.10, "{g:?}");
        // With fewer flows than threads, threads idle while each busy one coalesces more
        // (Fig. 10b: granularity is finest once every thread has a flow): 2 flows on 2 of the 4
        // threads get at least 2× coarser events (more still: each waits out the trigger latency).
        let few = granularity(&drive(Processor::new(cfg(4, false), slow()), 2, 1024, Time::from_us(2000)));
        assert!(few > 2.0 * g[0], "{few} vs {g:?}");
    }

    #[test]
    fn a_policy_too_slow_for_the_event_rate_coalesces_and_overflows_instead_of_stalling() {
        // Software rings of 4 entries, one thread, 20,000 cycles (40 µs) per event.
        let mut c = cfg(1, false);
        c.depth = 4;
        let p = drive(Processor::new(c, Passive(PassiveParams { cycles: 20_000 })), 16, 1024, Time::from_us(1000));
        let k = Kind::Tx.index();
        let s = &p.stats;
        assert!(s.dropped[k] > 0, "a full ring drops");
        assert_eq!(s.collected[k], s.coalesced[k] + s.dropped[k] + p.queues.iter().map(|q| q.entries as u64).sum::<u64>());
        // The thread never stopped: ~1 ms at 40 µs per event.
        assert!((22..=26).contains(&s.handled[k]), "handled {}", s.handled[k]);
        assert!(s.coalesced[k] >= 4 * (s.handled[k] - 2));
        // Hardware counters never overflow: nothing dropped, every byte accounted.
        let p = drive(Processor::new(cfg(1, true), Passive(PassiveParams { cycles: 20_000 })), 16, 1024, Time::from_us(1000));
        assert_eq!(p.stats.dropped[k], 0);
        let waiting: u64 = p.queues.iter().map(|q| q.bytes()).sum();
        assert_eq!(p.stats.handled_bytes[k] + waiting, p.stats.collected[k] * 1024);
    }

    #[test]
    fn software_steering_gives_each_of_n_le_t_flows_its_own_thread_and_hardware_hashes() {
        let mut p = Processor::new(cfg(8, false), Passive(PassiveParams::default()));
        for f in 0..8 {
            p.collect(Time::ZERO, f * 3, &NicEvent::Tx { bytes: 1, packets: 1 });
        }
        let mut threads: Vec<u32> = p.meta.iter().map(|m| m.thread).collect();
        threads.sort_unstable();
        assert_eq!(threads, (0..8).collect::<Vec<_>>());
        let mut h = Processor::new(cfg(8, true), Passive(PassiveParams::default()));
        for f in 0..8 {
            h.collect(Time::ZERO, f * 3, &NicEvent::Tx { bytes: 1, packets: 1 });
        }
        for (m, f) in h.meta.iter().zip(0..8u64) {
            assert_eq!(m.thread as u64, crate::sim::rng::mix64(f * 3) % 8);
        }
    }

    /// When thread `t` is next to run, if it is on the agenda.
    fn scheduled<P: Policy>(p: &Processor<P>, t: usize) -> Option<Time> {
        let at = p.threads[t].wake.0;
        (at < Time::MAX).then_some(at)
    }

    #[test]
    fn a_rate_decided_before_one_already_installed_is_dropped() {
        // A join's rescale of flow 1 is decided first but takes effect at 20 µs, when the join's
        // run ends; flow 1's own thread decides anew after it, in force at 10 µs. The NIC must
        // end at the later decision, as the policy's books do.
        let mut p = Processor::new(cfg(2, false), Passive(PassiveParams::default()));
        for flow in [1, 2] {
            p.collect(Time::ZERO, flow, &NicEvent::Tx { bytes: 1000, packets: 1 });
        }
        p.installs.push(Time::from_us(20), Action::SetRate { flow: 1, bps: 10_000_000_000 });
        p.installs.push(Time::from_us(10), Action::SetRate { flow: 1, bps: 20_000_000_000 });
        p.installs.push(Time::from_us(15), Action::SetRate { flow: 2, bps: 30_000_000_000 });
        let got: Vec<Action> = std::iter::from_fn(|| p.pop_install(Time::from_us(30))).collect();
        assert_eq!(got, vec![Action::SetRate { flow: 1, bps: 20_000_000_000 }, Action::SetRate { flow: 2, bps: 30_000_000_000 }]);
    }

    #[test]
    fn a_rate_for_a_flow_the_processor_never_saw_is_handed_on_untracked() {
        // An outside policy echoing a telemetry event's flow (2^32 - 1): the table of decisions
        // grew to 32 GB and aborted the process. The world drops it (no such queue pair).
        let mut p = Processor::new(cfg(2, false), Passive(PassiveParams::default()));
        p.installs.push(Time::from_us(1), Action::SetRate { flow: u32::MAX, bps: 1 });
        assert_eq!(p.pop_install(Time::from_us(2)), Some(Action::SetRate { flow: u32::MAX, bps: 1 }));
        assert!(p.rate_decided.is_empty());
    }

    #[test]
    fn a_decision_takes_effect_after_trigger_processing_and_install_latency() {
        // Static 1/n: the second flow's join halves both. Join work: 2 rate sets × 20 cycles
        // at 500 MHz = 80 ns, run on the flow's thread when the NIC's notice reaches it (the
        // trigger latency, 2 µs); in force 3 µs after it ran.
        let mut p = Processor::new(cfg(2, false), StaticShare(StaticParams::default()));
        let t0 = Time::from_us(10);
        p.collect(t0, 1, &NicEvent::Tx { bytes: 1000, packets: 1 });
        // Decided, but not run yet: nothing is due to take effect.
        assert_eq!(p.next_install(), None);
        p.collect(t0, 2, &NicEvent::Tx { bytes: 1000, packets: 1 });
        let t = p.meta[1].thread as usize;
        let at = t0 + Time::from_us(2);
        assert_eq!(scheduled(&p, t), Some(at));
        // Not before the trigger latency: the thread has nothing to take yet.
        p.advance(at - Time(1));
        assert_eq!((p.stats.handled[Kind::Tx.index()], scheduled(&p, t), p.next_install()), (0, Some(at), None));
        // At the trigger each thread runs its flow's join first (flow 1's: one rate set, 40 ns),
        // then the flow's event.
        p.advance(at);
        assert_eq!(p.next_install(), Some(at + Time::from_ns(40) + Time::from_us(3)));
        let due = t0 + Time::from_us(5) + Time::from_ns(80);
        let mut got = Vec::new();
        while let Some(a) = p.pop_install(due) {
            got.push(a);
        }
        assert_eq!(got, vec![Action::SetRate { flow: 1, bps: 100_000_000_000 }, Action::SetRate { flow: 1, bps: 50_000_000_000 }, Action::SetRate { flow: 2, bps: 50_000_000_000 }]);
        // Flow 2's thread: its join to 80 ns, then 150 cycles (300 ns) for the event. Nothing
        // else waits for the thread, so it is off the agenda.
        p.advance(at + Time::from_ns(80));
        assert_eq!(p.threads[t].busy_until, at + Time::from_ns(380));
        assert_eq!(scheduled(&p, t), None);
        // The flow's next event puts the thread back, a trigger latency after it; nothing it
        // decides can take effect before the install latency after that.
        let later = at + Time::from_ns(100);
        // The collector says so, for the world to move its timer.
        assert_eq!(p.collect(later, 2, &NicEvent::Tx { bytes: 1000, packets: 1 }), Some(later + Time::from_us(5)));
        assert_eq!(scheduled(&p, t), Some(later + Time::from_us(2)));
        assert_eq!(p.due(), Some(later + Time::from_us(5)));
        // An event that only folds into a waiting queue needs nothing earlier.
        assert_eq!(p.collect(later + Time(1), 2, &NicEvent::Tx { bytes: 1000, packets: 1 }), None);
        // Flow 1's first event ran on the other thread at the same time.
        assert_eq!(p.stats.handled[Kind::Tx.index()], 2);
    }

    #[test]
    fn a_thread_with_another_queue_waiting_runs_again_when_it_is_free() {
        // One thread, two flows: the second flow's queue waits while the first's event runs.
        let mut p = Processor::new(cfg(1, false), Passive(PassiveParams { cycles: 500 }));
        let t0 = Time::from_us(10);
        let at = t0 + Time::from_us(2);
        p.collect(t0, 1, &NicEvent::Tx { bytes: 1000, packets: 1 });
        p.collect(t0, 2, &NicEvent::Tx { bytes: 1000, packets: 1 });
        assert_eq!(scheduled(&p, 0), Some(at));
        // 500 cycles at 500 MHz: 1 µs each.
        let done = at + Time::from_us(1);
        p.advance(at);
        assert_eq!((p.stats.handled[Kind::Tx.index()], scheduled(&p, 0)), (1, Some(done)));
        p.advance(done);
        assert_eq!((p.stats.handled[Kind::Tx.index()], scheduled(&p, 0)), (2, None));
        assert_eq!(p.threads[0].busy_until, done + Time::from_us(1));
    }

    #[test]
    fn runs_give_the_same_decisions_whenever_they_catch_up() {
        // Water filling over 24 flows on 4 threads, 200 µs: one processor is handed the time
        // at every event and takes off decisions as they come due (as the world does when its
        // timer fires); the other catches up only as events arrive and once at the end.
        use crate::nic::scr::policy::water_filling::{WaterFilling, WaterFillingParams};
        let make = || Processor::new(cfg(4, true), WaterFilling::new(WaterFillingParams { cycles: 300, ..Default::default() }));
        let (mut eager, mut lazy) = (make(), make());
        let gap = BitsPerSec::gbps(100).tx_time(1082);
        let (mut now, mut taken) = (Time::ZERO, Vec::new());
        for i in 0..(Time::from_us(200).0 / gap.0) {
            // Uneven flows: flow f sends every (f % 3 + 1)-th turn of its own.
            let f = (i % 24) as u32;
            if (i / 24) % (f as u64 % 3 + 1) == 0 {
                eager.collect(now, f, &NicEvent::Tx { bytes: 1082, packets: 1 });
                lazy.collect(now, f, &NicEvent::Tx { bytes: 1082, packets: 1 });
            }
            eager.advance(now);
            while let Some(a) = eager.pop_install(now) {
                taken.push(a);
            }
            now += gap;
        }
        let end = now + Time::from_us(20);
        for p in [&mut eager, &mut lazy] {
            p.advance(end);
        }
        while let Some(a) = eager.pop_install(end) {
            taken.push(a);
        }
        let lazy_taken: Vec<_> = std::iter::from_fn(|| lazy.pop_install(end)).collect();
        assert!(taken.len() > 24, "{} decisions", taken.len());
        assert_eq!(taken, lazy_taken);
        let k = Kind::Tx.index();
        let (e, l) = (&eager.stats, &lazy.stats);
        assert_eq!((e.handled[k], e.coalesced[k], e.busy_ps, e.rate_sets, e.last_rate_set), (l.handled[k], l.coalesced[k], l.busy_ps, l.rate_sets, l.last_rate_set));
    }

    #[test]
    fn a_policy_wake_up_is_a_timer_event_on_the_processors_own_timeline() {
        use crate::nic::scr::policy::external::{External, ExternalParams, ExternalPolicy};
        // On a TX event, ask for a wake-up 5 µs after the decision; log what runs when.
        struct Waker(std::sync::Arc<std::sync::Mutex<Vec<(Kind, Time)>>>);
        impl ExternalPolicy for Waker {
            fn on_event(&mut self, now: Time, _l: u64, ev: &ScrEvent, a: &mut Vec<Action>) {
                self.0.lock().unwrap().push((ev.kind, now));
                if ev.kind == Kind::Tx {
                    a.push(Action::Wake { flow: ev.flow, after: Time::from_us(5) });
                }
            }
        }
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut policy = External::new(ExternalParams { kinds: vec![Kind::Tx, Kind::Timer], cycles: 500, set_cycles: 0 });
        policy.inner = Box::new(Waker(seen.clone()));
        let mut p = Processor::new(cfg(2, false), policy);
        let t0 = Time::from_us(10);
        p.collect(t0, 7, &NicEvent::Tx { bytes: 1000, packets: 1 });
        // The TX event runs at 12 µs and takes 1 µs; the wake-up is due 5 µs after the
        // decision, at 17 µs, whatever the run cost, and its Timer event runs then: the cores'
        // own timer crosses no trigger latency (it did, and counted from the run's end: a
        // multipath policy probing every 10 µs probed every 12.59). Nothing is installed.
        p.advance(Time::from_us(16));
        assert_eq!(p.due(), Some(Time::from_us(17) + Time::from_us(3)));
        p.advance(Time::from_us(100));
        assert_eq!(*seen.lock().unwrap(), vec![(Kind::Tx, Time::from_us(12)), (Kind::Timer, Time::from_us(17))]);
        assert_eq!((p.pop_install(Time::from_us(100)), p.due()), (None, None));
        // A flow that left gets no wake-up.
        p.collect(Time::from_us(200), 7, &NicEvent::Tx { bytes: 1000, packets: 1 });
        p.advance(Time::from_us(203));
        p.leave(Time::from_us(204), 7);
        p.advance(Time::from_us(300));
        assert_eq!(seen.lock().unwrap().len(), 3);
    }

    #[test]
    fn without_a_node_pool_a_join_and_a_leave_wait_for_their_busy_thread() {
        // One thread at 1 MHz (a cycle is 1 µs), 150 cycles per TX event, 20 per rate set.
        let mut c = cfg(1, false);
        c.clock_mhz = 1;
        let install = |p: &mut Processor<StaticShare>, until: Time| {
            p.advance(until);
            let mut n = 0;
            while p.pop_install(until).is_some() {
                n += 1;
            }
            n
        };
        let mut p = Processor::new(c.clone(), StaticShare(StaticParams::default()));
        // Flow 1 joins (one rate set) at 2 µs, then its event runs for 150 cycles.
        p.collect(Time::ZERO, 1, &NicEvent::Tx { bytes: 1000, packets: 1 });
        assert_eq!(install(&mut p, Time::from_us(22)), 0);
        assert_eq!(p.threads[0].busy_until, Time::from_us(172));
        // Flow 2 joins at 100 µs: two rate sets (40 µs) on the same thread, after 172 µs.
        p.collect(Time::from_us(100), 2, &NicEvent::Tx { bytes: 1000, packets: 1 });
        // Drain what is due before then (flow 1's own join, in force at 25 µs): flow 2's join
        // takes effect at 172 + 40 + 3 µs of install latency, not at 100 + 2 + 40 + 3.
        assert_eq!(install(&mut p, Time::from_us(172 + 40 + 3) - Time(1)), 1);
        assert_eq!(install(&mut p, Time::from_us(172 + 40 + 3)), 2, "both flows' new rates at once");
        // A leave of flow 1 at 300 µs, while flow 2's event runs (212 to 362 µs): flow 2's
        // rate (one set, 20 µs) once the thread is free.
        p.advance(Time::from_us(300));
        let free = p.threads[0].busy_until.max(Time::from_us(302));
        assert_eq!(free, Time::from_us(362));
        p.leave(Time::from_us(300), 1);
        assert_eq!(install(&mut p, free + Time::from_us(20 + 3) - Time(1)), 0);
        assert_eq!(install(&mut p, free + Time::from_us(20 + 3)), 1);

        // The same, with flow 2 seen at 1 µs, before flow 1's join and event have run (nothing
        // is booked on the thread yet; they are due at 2 µs): flow 2's join still waits for
        // both, and takes effect at 215 µs. (Computed from the runs booked so far, it took
        // effect at 1 + 2 + 40 + 3 = 46 µs, while flow 1's event had the thread.)
        let mut p = Processor::new(c, StaticShare(StaticParams::default()));
        p.collect(Time::ZERO, 1, &NicEvent::Tx { bytes: 1000, packets: 1 });
        p.collect(Time::from_us(1), 2, &NicEvent::Tx { bytes: 1000, packets: 1 });
        assert_eq!(install(&mut p, Time::from_us(25)), 1, "flow 1's own join");
        assert_eq!(install(&mut p, Time::from_us(215) - Time(1)), 0);
        assert_eq!(install(&mut p, Time::from_us(215)), 2);
        // Then flow 2's event: 212 to 362 µs.
        assert_eq!(p.threads[0].busy_until, Time::from_us(362));
    }

    /// A policy whose joins set every other flow to 1 Gbps and whose events set their own flow
    /// to 7 Gbps; flow 2's events cost 100,000 cycles (200 µs at 500 MHz).
    struct Setter;
    impl Policy for Setter {
        type Flow = ();
        fn name(&self) -> &'static str {
            "setter"
        }
        fn subscribes(&self, kind: Kind) -> bool {
            kind == Kind::Tx
        }
        fn cycles(&self, ev: &ScrEvent) -> u32 {
            if ev.flow == 2 { 100_000 } else { 10 }
        }
        fn on_join(&mut self, flows: &mut [FlowEntry<()>], env: &mut Env) -> u32 {
            let (_, others) = flows.split_last().expect("the joiner");
            for f in others.iter().filter(|f| !f.left) {
                env.actions.push(Action::SetRate { flow: f.flow, bps: 1_000_000_000 });
            }
            10
        }
        fn on_event(&mut self, ev: &ScrEvent, _flow: &mut (), env: &mut Env) -> Verdict {
            env.actions.push(Action::SetRate { flow: ev.flow, bps: 7_000_000_000 });
            Verdict::Adjusting
        }
    }

    #[test]
    fn a_join_that_waited_for_its_thread_does_not_undo_a_rate_decided_after_it() {
        // Two threads: flows 1 and 3 on thread 0, flows 2 and 4 on thread 1, which flow 2's
        // event holds from about 2 to 202 µs. Flow 4 joins at 10 µs (decided then: flow 1 to 1
        // Gbps) and waits behind it; flow 1's own event at 20 µs sets it to 7 Gbps, in force at
        // 25 µs. The join's older decision, run at 202 µs, must not undo the newer one (its
        // install was numbered when it ran, and the NIC ended at 1 Gbps; found in review).
        let mut p = Processor::new(cfg(2, false), Setter);
        let tx = NicEvent::Tx { bytes: 1000, packets: 1 };
        for qp in 1..=3 {
            p.collect(Time::ZERO, qp, &tx);
        }
        p.advance(Time::from_us(10));
        p.collect(Time::from_us(10), 4, &tx);
        assert_eq!(p.meta[3].thread, 1);
        p.advance(Time::from_us(20));
        p.collect(Time::from_us(20), 1, &tx);
        let mut last = None;
        for us in (20..400).step_by(1) {
            let t = Time::from_us(us);
            p.advance(t);
            while let Some(a) = p.pop_install(t) {
                if let Action::SetRate { flow: 1, bps } = a {
                    last = Some((t, bps));
                }
            }
        }
        assert!(p.threads[1].busy_until > Time::from_us(200));
        let (at, bps) = last.expect("flow 1's rate was set");
        assert_eq!(bps, 7_000_000_000, "set to {bps} at {at}");
    }

    #[test]
    fn a_per_node_pool_runs_joins_one_after_another_and_spares_the_flow_threads() {
        let mut c = cfg(2, false);
        c.node_threads = 1;
        let mut p = Processor::new(c, StaticShare(StaticParams::default()));
        let t0 = Time::from_us(10);
        let at = t0 + Time::from_us(2);
        // The first join (one rate set, 40 ns) and the second (two, 80 ns) queue on the one
        // node thread: the second's rates are decided 120 ns after the trigger.
        p.collect(t0, 1, &NicEvent::Tx { bytes: 1000, packets: 1 });
        p.collect(t0, 2, &NicEvent::Tx { bytes: 1000, packets: 1 });
        let t = p.meta[1].thread as usize;
        p.advance(at + Time::from_ns(40));
        assert_eq!(p.threads[2].busy_until, at + Time::from_ns(120));
        let mut got = Vec::new();
        while let Some(a) = p.pop_install(at + Time::from_ns(120) + Time::from_us(3)) {
            got.push(a);
        }
        assert_eq!(got.len(), 3);
        assert_eq!(p.next_install(), None);
        // The flow thread pays only its event's 150 cycles (300 ns), no join.
        p.advance(at);
        assert_eq!(scheduled(&p, t), None);
        assert_eq!(p.threads[t].busy_until, at + Time::from_ns(300));
    }

    #[test]
    fn node_level_events_queue_for_the_node_pool_and_a_newer_reading_replaces_an_unhandled_one() {
        use crate::nic::scr::event::NODE_FLOW;
        use crate::nic::scr::policy::external::{External, ExternalParams, ExternalPolicy};
        struct Log(std::sync::Arc<std::sync::Mutex<Vec<(Kind, u32, Time)>>>);
        impl ExternalPolicy for Log {
            fn on_event(&mut self, now: Time, _l: u64, ev: &ScrEvent, _a: &mut Vec<Action>) {
                self.0.lock().unwrap().push((ev.kind, ev.value, now));
            }
        }
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut c = cfg(4, false);
        c.node_threads = 2;
        c.strategies[Kind::Pcie.index()] = Strategy::KeepLatest;
        let mut policy = External::new(ExternalParams { kinds: vec![Kind::Pcie, Kind::Port], cycles: 500, set_cycles: 0 });
        policy.inner = Box::new(Log(seen.clone()));
        let mut p = Processor::new(c, policy);
        let ev = |kind, at_us: u64, value| ScrEvent { kind, flow: NODE_FLOW, at: Time::from_us(at_us), first_at: Time::from_us(at_us), bytes: 0, count: 1, rtt: Time::from_ns(1005), value, aux: 0 };
        // PCIe on node thread 4, port on node thread 5 (after the 4 flow threads).
        let at = Time::from_us(12);
        p.collect_node(Time::from_us(10), ev(Kind::Pcie, 10, 300));
        p.collect_node(Time::from_us(10), ev(Kind::Port, 10, 900));
        assert_eq!((scheduled(&p, 4), scheduled(&p, 5)), (Some(at), Some(at)));
        // A second PCIe reading before the first is handled folds into it (keep latest).
        p.collect_node(Time::from_us(11), ev(Kind::Pcie, 11, 700));
        p.advance(at);
        assert_eq!((scheduled(&p, 4), scheduled(&p, 5)), (None, None));
        assert_eq!((p.threads[4].busy_until, p.threads[5].busy_until), (at + Time::from_us(1), at + Time::from_us(1)));
        assert_eq!(*seen.lock().unwrap(), vec![(Kind::Pcie, 700, at), (Kind::Port, 900, at)]);
        let k = Kind::Pcie.index();
        assert_eq!((p.stats.collected[k], p.stats.handled[k], p.stats.coalesced[k]), (2, 1, 2));
        // Every reading counts in the telemetry figures, handled or not.
        assert_eq!((p.stats.telemetry.pcie_samples, p.stats.telemetry.port_samples), (2, 1));
        // A reading handed over later than a trigger latency after it was taken reaches its
        // thread when it is handed over, not in the past.
        p.collect_node(Time::from_us(30), ev(Kind::Port, 20, 500));
        assert_eq!(scheduled(&p, 5), Some(Time::from_us(30)));
    }
}
