//! The event queue: an indexed 4-ary heap of timer slots ordered by `(time, arm sequence)`.
//!
//! Every component that needs waking owns one or a few timer slots, allocated when the world is
//! built. A slot is either idle or armed at one deadline; arming an armed slot moves it, cancelling
//! removes it, so no dead entries ever sit in the heap (the heap holds at most one entry per slot,
//! and its size is bounded by the number of components, not of packets in flight).
//!
//! Equal deadlines fire in the order they were armed: each arm takes the next value of a global
//! sequence counter, which is the second half of the key. This makes runs independent of heap
//! layout and therefore reproducible.
//!
//! The run loop fires the earliest slot in place ([`TimerQueue::begin_fire`]); a handler that re-arms
//! its own slot (the common case: a port starting its next packet) costs one sift-down, and one that
//! does not is removed afterwards ([`TimerQueue::end_fire`]).

use crate::units::Time;

const NONE: u32 = u32::MAX;
const ARITY: usize = 4;

/// A handle to one timer slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimerId(pub u32);

#[derive(Clone, Copy)]
struct Entry {
    time: u64,
    seq: u64,
    slot: u32,
}

impl Entry {
    #[inline(always)]
    fn before(&self, other: &Entry) -> bool {
        (self.time, self.seq) < (other.time, other.seq)
    }
}

struct Slot<W> {
    /// Index in `heap`, or `NONE` when idle.
    pos: u32,
    owner: W,
}

/// Timer slots, each owned by a component identified by a small `Copy` tag `W`.
pub struct TimerQueue<W> {
    heap: Vec<Entry>,
    slots: Vec<Slot<W>>,
    seq: u64,
    /// The slot being fired and the sequence number it fired with.
    firing: Option<(u32, u64)>,
}

impl<W: Copy> Default for TimerQueue<W> {
    fn default() -> Self {
        Self::new()
    }
}

impl<W: Copy> TimerQueue<W> {
    pub fn new() -> Self {
        TimerQueue { heap: Vec::new(), slots: Vec::new(), seq: 0, firing: None }
    }

    /// Allocates an idle timer slot woken as `owner`.
    pub fn add_timer(&mut self, owner: W) -> TimerId {
        self.slots.push(Slot { pos: NONE, owner });
        TimerId((self.slots.len() - 1) as u32)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Total number of arms so far (a cheap count of scheduled events).
    pub fn arms(&self) -> u64 {
        self.seq
    }

    /// Whether the slot is waiting to fire (a slot being fired right now counts as idle).
    #[inline]
    pub fn is_armed(&self, id: TimerId) -> bool {
        let pos = self.slots[id.0 as usize].pos;
        pos != NONE && self.firing != Some((id.0, self.heap[pos as usize].seq))
    }

    /// The deadline of an armed slot.
    pub fn deadline(&self, id: TimerId) -> Option<Time> {
        if !self.is_armed(id) {
            return None;
        }
        Some(Time(self.heap[self.slots[id.0 as usize].pos as usize].time))
    }

    /// Arms the slot at `at`, moving it if it was already armed.
    #[inline]
    pub fn arm(&mut self, id: TimerId, at: Time) {
        let seq = self.seq;
        self.seq += 1;
        let entry = Entry { time: at.0, seq, slot: id.0 };
        let pos = self.slots[id.0 as usize].pos;
        if pos == NONE {
            self.heap.push(entry);
            let i = self.heap.len() - 1;
            self.sift_up(i, entry);
        } else {
            let i = pos as usize;
            if entry.before(&self.heap[i]) {
                self.sift_up(i, entry);
            } else {
                self.sift_down(i, entry);
            }
        }
    }

    /// Arms the slot at `at` unless it is already armed for an earlier or equal time.
    #[inline]
    pub fn arm_if_later(&mut self, id: TimerId, at: Time) {
        match self.deadline(id) {
            Some(d) if d <= at => {}
            _ => self.arm(id, at),
        }
    }

    /// Makes the slot idle.
    pub fn cancel(&mut self, id: TimerId) {
        let pos = self.slots[id.0 as usize].pos;
        if pos != NONE {
            self.remove_at(pos as usize);
        }
    }

    /// The earliest armed slot: its deadline, handle and owner.
    #[inline]
    pub fn peek(&self) -> Option<(Time, TimerId, W)> {
        self.heap.first().map(|e| (Time(e.time), TimerId(e.slot), self.slots[e.slot as usize].owner))
    }

    /// Starts firing the earliest slot; it stays in place until [`Self::end_fire`].
    #[inline]
    pub fn begin_fire(&mut self) -> Option<(Time, W)> {
        let e = *self.heap.first()?;
        self.firing = Some((e.slot, e.seq));
        Some((Time(e.time), self.slots[e.slot as usize].owner))
    }

    /// Ends firing: removes the fired slot unless its handler re-armed or cancelled it.
    #[inline]
    pub fn end_fire(&mut self) {
        if let Some((slot, seq)) = self.firing.take() {
            let pos = self.slots[slot as usize].pos;
            if pos != NONE && self.heap[pos as usize].seq == seq {
                self.remove_at(pos as usize);
            }
        }
    }

    /// Removes and returns the earliest slot (for callers that do not need in-place firing).
    pub fn pop(&mut self) -> Option<(Time, W)> {
        let r = self.begin_fire()?;
        self.end_fire();
        Some(r)
    }

    fn remove_at(&mut self, i: usize) {
        let removed = self.heap[i].slot;
        self.slots[removed as usize].pos = NONE;
        let last = self.heap.pop().expect("remove from a non-empty heap");
        if i < self.heap.len() {
            if i > 0 && last.before(&self.heap[(i - 1) / ARITY]) {
                self.sift_up(i, last);
            } else {
                self.sift_down(i, last);
            }
        }
    }

    #[inline]
    fn place(&mut self, i: usize, e: Entry) {
        self.heap[i] = e;
        self.slots[e.slot as usize].pos = i as u32;
    }

    #[inline]
    fn sift_up(&mut self, mut i: usize, e: Entry) {
        while i > 0 {
            let parent = (i - 1) / ARITY;
            let p = self.heap[parent];
            if !e.before(&p) {
                break;
            }
            self.place(i, p);
            i = parent;
        }
        self.place(i, e);
    }

    #[inline]
    fn sift_down(&mut self, mut i: usize, e: Entry) {
        let n = self.heap.len();
        loop {
            let first = i * ARITY + 1;
            if first >= n {
                break;
            }
            let end = (first + ARITY).min(n);
            let mut best = first;
            for c in first + 1..end {
                if self.heap[c].before(&self.heap[best]) {
                    best = c;
                }
            }
            if !self.heap[best].before(&e) {
                break;
            }
            let b = self.heap[best];
            self.place(i, b);
            i = best;
        }
        self.place(i, e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn equal_times_fire_in_arm_order() {
        let mut q = TimerQueue::new();
        let ids: Vec<_> = (0..5).map(|i| q.add_timer(i)).collect();
        for &id in ids.iter().rev() {
            q.arm(id, Time(10));
        }
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, w)| w)).collect();
        assert_eq!(order, vec![4, 3, 2, 1, 0]);
    }

    #[test]
    fn rearm_and_cancel_leave_no_dead_entries() {
        let mut q = TimerQueue::new();
        let a = q.add_timer('a');
        let b = q.add_timer('b');
        q.arm(a, Time(5));
        q.arm(b, Time(7));
        q.arm(a, Time(9)); // moves, does not duplicate
        assert_eq!(q.len(), 2);
        q.cancel(b);
        assert_eq!(q.len(), 1);
        assert_eq!(q.pop(), Some((Time(9), 'a')));
        assert!(q.pop().is_none());
    }

    #[test]
    fn firing_slot_rearmed_in_place() {
        let mut q = TimerQueue::new();
        let a = q.add_timer(0);
        let b = q.add_timer(1);
        q.arm(a, Time(1));
        q.arm(b, Time(2));
        assert_eq!(q.begin_fire(), Some((Time(1), 0)));
        assert!(!q.is_armed(a));
        q.arm(a, Time(3));
        q.end_fire();
        assert_eq!(q.pop(), Some((Time(2), 1)));
        assert_eq!(q.pop(), Some((Time(3), 0)));
    }

    proptest! {
        /// Against a simple model (a sorted list of live deadlines), random arms, cancels and pops
        /// always yield the earliest (time, arm order) entry.
        #[test]
        fn matches_sorted_model(ops in proptest::collection::vec((0u8..3, 0usize..16, 0u64..50), 1..400)) {
            let mut q = TimerQueue::new();
            let ids: Vec<_> = (0..16).map(|i| q.add_timer(i)).collect();
            let mut model: Vec<Option<(u64, u64)>> = vec![None; 16];
            let mut seq = 0u64;
            for (op, slot, t) in ops {
                match op {
                    0 => { q.arm(ids[slot], Time(t)); model[slot] = Some((t, seq)); seq += 1; }
                    1 => { q.cancel(ids[slot]); model[slot] = None; }
                    _ => {
                        let want = model.iter().enumerate().filter_map(|(i, m)| m.map(|k| (k, i))).min();
                        let got = q.pop();
                        match want {
                            None => prop_assert!(got.is_none()),
                            Some(((t, _), i)) => { prop_assert_eq!(got, Some((Time(t), i))); model[i] = None; }
                        }
                    }
                }
                prop_assert_eq!(q.len(), model.iter().filter(|m| m.is_some()).count());
            }
        }
    }
}
