//! Tassel and SE-PIEO as NIC schedulers (Tassel §3, §2.3), adapting the `tassel` crate: the NIC
//! wakes a queue pair when it has packets (once its WQE is fetched), the scheduler fetches their
//! lengths through [`WqeSource`], times them against the queue pair's rate limit and says which
//! goes when. Both enforce rate limits themselves, so the NIC does not pace.

use super::{Pick, QpScheduler};
use crate::units::Time;
use std::cmp::Reverse;
use ahash::AHashMap;
use std::collections::BinaryHeap;
use tassel::{Decision, Monolithic, Tassel, WqeSource};

/// Queue pairs whose WQEs are not fetched yet, by the time they are.
#[derive(Default)]
struct Pending {
    heap: BinaryHeap<Reverse<(Time, u64, u32)>>,
    seq: u64,
}

impl Pending {
    fn push(&mut self, qp: u32, at: Time) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, qp)));
    }
    fn pop_due(&mut self, now: Time) -> Option<u32> {
        match self.heap.peek() {
            Some(&Reverse((t, _, qp))) if t <= now => {
                self.heap.pop();
                Some(qp)
            }
            _ => None,
        }
    }
    fn next(&self) -> Option<Time> {
        self.heap.peek().map(|Reverse((t, _, _))| *t)
    }
}

fn idle(until: Option<u64>, pending: &Pending) -> Pick {
    let t = match (until.map(Time), pending.next()) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    Pick::Idle(t)
}

/// What the two self-timing schedulers offer the adapter.
pub trait SelfTiming {
    fn ensure_flows(&mut self, n: usize);
    /// `qp` has packets (SE-PIEO fetches its head now, Tassel schedules it).
    fn wake(&mut self, qp: u32, now: u64, src: &mut dyn WqeSource);
    fn poll(&mut self, now: u64, src: &mut dyn WqeSource) -> Decision;
    fn set_rate(&mut self, qp: u32, bps: u64, now: u64);
    fn set_paused(&mut self, paused: bool, now: u64);
    fn fetch_stats(&self) -> (u64, u64) {
        (0, 0)
    }
    fn state_bytes(&self) -> u64 {
        0
    }
}

impl SelfTiming for Tassel {
    fn ensure_flows(&mut self, n: usize) {
        Tassel::ensure_flows(self, n)
    }
    fn wake(&mut self, qp: u32, now: u64, _src: &mut dyn WqeSource) {
        Tassel::wake(self, qp, now)
    }
    fn poll(&mut self, now: u64, mut src: &mut dyn WqeSource) -> Decision {
        Tassel::poll(self, now, &mut src)
    }
    fn set_rate(&mut self, qp: u32, bps: u64, now: u64) {
        Tassel::set_rate(self, qp, bps, now)
    }
    fn set_paused(&mut self, paused: bool, now: u64) {
        Tassel::set_paused(self, paused, now)
    }
    fn fetch_stats(&self) -> (u64, u64) {
        (self.fetches, self.dropped_fetches)
    }
    fn state_bytes(&self) -> u64 {
        (self.flow_capacity() * Tassel::STATE_BYTES_PER_FLOW) as u64
    }
}

impl SelfTiming for Monolithic {
    fn ensure_flows(&mut self, n: usize) {
        Monolithic::ensure_flows(self, n)
    }
    fn wake(&mut self, qp: u32, now: u64, mut src: &mut dyn WqeSource) {
        Monolithic::wake(self, qp, now, &mut src)
    }
    fn poll(&mut self, now: u64, mut src: &mut dyn WqeSource) -> Decision {
        Monolithic::poll(self, now, &mut src)
    }
    fn set_rate(&mut self, qp: u32, bps: u64, now: u64) {
        Monolithic::set_rate(self, qp, bps, now)
    }
    fn set_paused(&mut self, paused: bool, now: u64) {
        Monolithic::set_paused(self, paused, now)
    }
    fn fetch_stats(&self) -> (u64, u64) {
        (self.fetches, 0)
    }
    fn state_bytes(&self) -> u64 {
        (self.flow_capacity() * Monolithic::STATE_BYTES_PER_FLOW) as u64
    }
}

/// The NIC's packet source seen through a scheduler's own flow ids (`qp_of[flow]`).
struct ByFlow<'a> {
    src: &'a mut dyn WqeSource,
    qp_of: &'a [u32],
}

impl WqeSource for ByFlow<'_> {
    fn fetch(&mut self, flow: u32, skip: u32, max: u32, out: &mut Vec<u32>) {
        self.src.fetch(self.qp_of[flow as usize], skip, max, out)
    }
    fn held_back(&self) -> bool {
        self.src.held_back()
    }
    fn consume(&mut self, flow: u32) {
        self.src.consume(self.qp_of[flow as usize])
    }
}

/// A self-timing scheduler behind the NIC's trait: wakes are applied at the next decision
/// (SE-PIEO needs the packet source to fetch a head), and every decision costs `cost`.
/// The scheduler numbers the queue pairs of its own NIC from 0 (queue pair ids are the whole
/// simulation's): its state, and `state_bytes`, grow with the NIC's queue pairs, not every
/// NIC's.
pub struct SelfTimed<T: SelfTiming> {
    inner: T,
    pending: Pending,
    woken: Vec<u32>,
    cost: Time,
    /// The scheduler's flow id of each queue pair it has seen, and back (looked up on every
    /// push, so a fast hash; never iterated, so its order cannot reach a result).
    flow_of: AHashMap<u32, u32>,
    qp_of: Vec<u32>,
}

pub type TasselSched = SelfTimed<Tassel>;
pub type SePieoSched = SelfTimed<Monolithic>;

impl<T: SelfTiming> SelfTimed<T> {
    pub fn new(inner: T, cost: Time) -> Self {
        SelfTimed { inner, pending: Pending::default(), woken: Vec::new(), cost, flow_of: AHashMap::new(), qp_of: Vec::new() }
    }

    /// The scheduler's flow id for queue pair `qp` (a new one the first time it is seen).
    fn flow(&mut self, qp: u32) -> u32 {
        let next = self.qp_of.len() as u32;
        let f = *self.flow_of.entry(qp).or_insert(next);
        if f == next {
            self.qp_of.push(qp);
            self.inner.ensure_flows(self.qp_of.len());
        }
        f
    }
}

impl<T: SelfTiming> QpScheduler for SelfTimed<T> {
    fn push(&mut self, qp: u32, at: Time, now: Time) {
        let flow = self.flow(qp);
        if at <= now {
            self.woken.push(flow);
        } else {
            self.pending.push(flow, at);
        }
    }

    fn pop(&mut self, now: Time, src: &mut dyn WqeSource) -> Pick {
        while let Some(qp) = self.pending.pop_due(now) {
            self.woken.push(qp);
        }
        let mut src = ByFlow { src, qp_of: &self.qp_of };
        for flow in std::mem::take(&mut self.woken) {
            self.inner.wake(flow, now.0, &mut src);
        }
        match self.inner.poll(now.0, &mut src) {
            Decision::Send { flow, .. } => Pick::Qp(self.qp_of[flow as usize]),
            Decision::Idle { until } => idle(until, &self.pending),
        }
    }

    fn sent(&mut self, _qp: u32, _bytes: u32, _message_end: bool) {}

    fn set_rate(&mut self, qp: u32, bps: u64, now: Time) {
        let flow = self.flow(qp);
        self.inner.set_rate(flow, bps, now.0);
    }

    fn rate_limits(&self) -> bool {
        true
    }

    fn set_paused(&mut self, paused: bool, now: Time) {
        self.inner.set_paused(paused, now.0);
    }

    fn decision_time(&self) -> Time {
        self.cost
    }

    fn fetch_stats(&self) -> (u64, u64) {
        self.inner.fetch_stats()
    }

    fn state_bytes(&self) -> u64 {
        self.inner.state_bytes()
    }
}
