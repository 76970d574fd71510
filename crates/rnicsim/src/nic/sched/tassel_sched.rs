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

pub struct TasselSched {
    inner: Tassel,
    pending: Pending,
    cost: Time,
}

impl TasselSched {
    pub fn new(cfg: tassel::Config, cost: Time) -> TasselSched {
        TasselSched { inner: Tassel::new(cfg, 0), pending: Pending::default(), cost }
    }
}

impl QpScheduler for TasselSched {
    fn push(&mut self, qp: u32, at: Time, now: Time) {
        self.inner.ensure_flows(qp as usize + 1);
        if at <= now {
            self.inner.wake(qp, now.0);
        } else {
            self.pending.push(qp, at);
        }
    }

    fn pop(&mut self, now: Time, mut src: &mut dyn WqeSource) -> Pick {
        while let Some(qp) = self.pending.pop_due(now) {
            self.inner.wake(qp, now.0);
        }
        match self.inner.poll(now.0, &mut src) {
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
        (self.inner.fetches, self.inner.dropped_fetches)
    }

    fn state_bytes(&self) -> u64 {
        (self.inner.flow_capacity() * Tassel::STATE_BYTES_PER_FLOW) as u64
    }
}

pub struct SePieoSched {
    inner: Monolithic,
    pending: Pending,
    /// Queue pairs woken since the last pop (SE-PIEO fetches a head packet when woken).
    woken: Vec<u32>,
    cost: Time,
}

impl SePieoSched {
    pub fn new(cfg: tassel::Config, cost: Time) -> SePieoSched {
        SePieoSched { inner: Monolithic::new(cfg, 0), pending: Pending::default(), woken: Vec::new(), cost }
    }
}

impl QpScheduler for SePieoSched {
    fn push(&mut self, qp: u32, at: Time, now: Time) {
        self.inner.ensure_flows(qp as usize + 1);
        if at <= now {
            self.woken.push(qp);
        } else {
            self.pending.push(qp, at);
        }
    }

    fn pop(&mut self, now: Time, mut src: &mut dyn WqeSource) -> Pick {
        while let Some(qp) = self.pending.pop_due(now) {
            self.woken.push(qp);
        }
        for qp in std::mem::take(&mut self.woken) {
            self.inner.wake(qp, now.0, &mut src);
        }
        match self.inner.poll(now.0, &mut src) {
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
}
