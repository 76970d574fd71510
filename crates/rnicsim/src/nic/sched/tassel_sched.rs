//! Tassel and SE-PIEO as NIC schedulers (Tassel §3, §2.3), adapting the `tassel` crate: the NIC
//! wakes a queue pair when it has packets (once its WQE is fetched), the scheduler fetches their
//! lengths through [`WqeSource`], times them against the queue pair's rate limit and says which
//! goes when. Both enforce rate limits themselves, so the NIC does not pace.

use super::{Pick, QpScheduler};
use crate::units::Time;
use std::cmp::Reverse;
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
}

/// A self-timing scheduler behind the NIC's trait: wakes are applied at the next decision
/// (SE-PIEO needs the packet source to fetch a head), and every decision costs `cost`.
pub struct SelfTimed<T: SelfTiming> {
    inner: T,
    pending: Pending,
    woken: Vec<u32>,
    cost: Time,
}

pub type TasselSched = SelfTimed<Tassel>;
pub type SePieoSched = SelfTimed<Monolithic>;

impl<T: SelfTiming> SelfTimed<T> {
    pub fn new(inner: T, cost: Time) -> Self {
        SelfTimed { inner, pending: Pending::default(), woken: Vec::new(), cost }
    }
}

impl<T: SelfTiming> QpScheduler for SelfTimed<T> {
    fn push(&mut self, qp: u32, at: Time, now: Time) {
        self.inner.ensure_flows(qp as usize + 1);
        if at <= now {
            self.woken.push(qp);
        } else {
            self.pending.push(qp, at);
        }
    }

    fn pop(&mut self, now: Time, src: &mut dyn WqeSource) -> Pick {
        while let Some(qp) = self.pending.pop_due(now) {
            self.woken.push(qp);
        }
        for qp in std::mem::take(&mut self.woken) {
            self.inner.wake(qp, now.0, src);
        }
        match self.inner.poll(now.0, src) {
            Decision::Send { flow, .. } => Pick::Qp(flow),
            Decision::Idle { until } => idle(until, &self.pending),
        }
    }

    fn sent(&mut self, _qp: u32, _bytes: u32, _message_end: bool) {}

    fn set_rate(&mut self, qp: u32, bps: u64, now: Time) {
        self.inner.ensure_flows(qp as usize + 1);
        self.inner.set_rate(qp, bps, now.0);
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
