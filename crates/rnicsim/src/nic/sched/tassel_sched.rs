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
    let t = [until.map(Time), pending.next()].into_iter().flatten().min();
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
    /// Whether `flow` holds nothing (no packets, not scheduled), and the reset of such a flow
    /// to a new one's state.
    fn flow_idle(&self, flow: u32) -> bool;
    fn reset_flow(&mut self, flow: u32);
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
    fn flow_idle(&self, flow: u32) -> bool {
        Tassel::flow_idle(self, flow)
    }
    fn reset_flow(&mut self, flow: u32) {
        Tassel::reset_flow(self, flow)
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
    fn flow_idle(&self, flow: u32) -> bool {
        Monolithic::flow_idle(self, flow)
    }
    fn reset_flow(&mut self, flow: u32) {
        Monolithic::reset_flow(self, flow)
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
/// simulation's), and a destroyed queue pair's number goes to the next new one once the
/// scheduler holds nothing of it: its state, and `state_bytes`, grow with the most queue
/// pairs the NIC has at once, not with every NIC's nor with every connection it ever had.
pub struct SelfTimed<T: SelfTiming> {
    inner: T,
    pending: Pending,
    woken: Vec<u32>,
    cost: Time,
    /// The scheduler's flow id of each queue pair it has seen, and back (looked up on every
    /// push, so a fast hash; never iterated, so its order cannot reach a result).
    flow_of: AHashMap<u32, u32>,
    qp_of: Vec<u32>,
    /// Flow ids of destroyed queue pairs: free for new ones (reused last freed first), or
    /// still held by the scheduler (a wheel entry that will find nothing, a wake to apply)
    /// and free once it lets them go.
    free: Vec<u32>,
    retiring: Vec<u32>,
}

pub type TasselSched = SelfTimed<Tassel>;
pub type SePieoSched = SelfTimed<Monolithic>;

impl<T: SelfTiming> SelfTimed<T> {
    pub fn new(inner: T, cost: Time) -> Self {
        SelfTimed { inner, pending: Pending::default(), woken: Vec::new(), cost, flow_of: AHashMap::new(), qp_of: Vec::new(), free: Vec::new(), retiring: Vec::new() }
    }

    /// The scheduler's flow id for queue pair `qp` (a new one the first time it is seen).
    fn flow(&mut self, qp: u32) -> u32 {
        if let Some(&f) = self.flow_of.get(&qp) {
            return f;
        }
        if self.free.is_empty() && !self.retiring.is_empty() {
            self.reclaim();
        }
        let f = match self.free.pop() {
            Some(f) => {
                self.inner.reset_flow(f);
                self.qp_of[f as usize] = qp;
                f
            }
            None => {
                self.qp_of.push(qp);
                self.inner.ensure_flows(self.qp_of.len());
                self.qp_of.len() as u32 - 1
            }
        };
        self.flow_of.insert(qp, f);
        f
    }

    /// Whether the scheduler holds nothing of flow `f`: no packets, no wheel entry, no wake.
    fn let_go(&self, f: u32) -> bool {
        self.inner.flow_idle(f) && !self.woken.contains(&f) && !self.pending.heap.iter().any(|Reverse((_, _, x))| *x == f)
    }

    /// Frees the retiring flows the scheduler has let go of since.
    fn reclaim(&mut self) {
        let mut i = 0;
        while i < self.retiring.len() {
            let f = self.retiring[i];
            if self.let_go(f) {
                self.free.push(self.retiring.swap_remove(i));
            } else {
                i += 1;
            }
        }
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
        // Drained in place: the buffer keeps its capacity (a packet sent re-wakes its flow).
        for flow in self.woken.drain(..) {
            self.inner.wake(flow, now.0, &mut src);
        }
        match self.inner.poll(now.0, &mut src) {
            Decision::Send { flow, .. } => Pick::Qp(self.qp_of[flow as usize]),
            Decision::Idle { until } => idle(until, &self.pending),
        }
    }

    fn sent(&mut self, _qp: u32, _bytes: u32, _message_end: bool) {}

    fn remove(&mut self, qp: u32) {
        // A later queue pair with this number is a new flow; this one's id is reused once the
        // scheduler holds nothing of it.
        let Some(f) = self.flow_of.remove(&qp) else { return };
        if self.let_go(f) {
            self.free.push(f);
        } else {
            self.retiring.push(f);
        }
    }

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
