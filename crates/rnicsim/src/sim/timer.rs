//! The event queue: timer slots ordered exactly by `(time, arm sequence)`.
//!
//! Every component that needs waking owns one or a few timer slots, allocated when the world is
//! built. A slot is idle or armed at one deadline; arming an armed slot moves it and cancelling
//! removes it, so no dead entries are left behind and the queue never holds more entries than
//! there are slots (components), however many packets are in flight.
//!
//! Equal deadlines fire in the order they were armed: each arm takes the next value of a global
//! sequence counter, the second half of the key. Runs are therefore independent of layout.
//!
//! Layout (a timing wheel in front of exact ordering; cf. Varghese & Lauck's hashed wheels):
//! - `near`: the slots due in the current bucket (≈1 ns of simulated time), sorted by the full
//!   key in descending order so the next one pops off the end; a bucket is sorted once when it
//!   becomes current (many equal-time events, as in lock-step traffic, cost one sort, not a heap
//!   operation each), and the rare arm into the current bucket is a binary insertion;
//! - `wheel`: 2^14 buckets of 2^10 ps each, every bucket an intrusive doubly-linked list of slots,
//!   with a bitmap of non-empty buckets; covers the next ≈16.8 µs;
//! - `far`: an indexed 4-ary heap for deadlines beyond the wheel.
//!
//! Arming into the wheel and cancelling from it are O(1); when `near` runs dry the next non-empty
//! bucket (or the far heap's head, if earlier) is moved into it. Most events in a network are due
//! a serialization time or a link delay ahead, so `near` stays a handful of entries.

use crate::units::Time;

const NONE: u32 = u32::MAX;
const SHIFT: u32 = 10;
const WHEEL_BITS: u32 = 14;
const WHEEL: u64 = 1 << WHEEL_BITS;
const MASK: u64 = WHEEL - 1;
const ARITY: usize = 4;

/// A handle to one timer slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimerId(pub u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loc {
    Idle,
    Near,
    Wheel,
    Far(u32),
}

#[derive(Clone, Copy)]
struct Slot<W> {
    time: u64,
    seq: u64,
    loc: Loc,
    /// Wheel list links.
    next: u32,
    prev: u32,
    owner: W,
}

impl<W> Slot<W> {
    #[inline(always)]
    fn key(&self) -> (u64, u64) {
        (self.time, self.seq)
    }
}

/// Timer slots, each owned by a component identified by a small `Copy` tag `W`.
pub struct TimerQueue<W> {
    slots: Vec<Slot<W>>,
    near: Vec<u32>,
    far: Vec<u32>,
    heads: Vec<u32>,
    occupied: Vec<u64>,
    /// The current bucket: everything in `near` is due at or before its end.
    cur: u64,
    len: usize,
    seq: u64,
}

impl<W: Copy> Default for TimerQueue<W> {
    fn default() -> Self {
        Self::new()
    }
}

impl<W: Copy> TimerQueue<W> {
    pub fn new() -> Self {
        TimerQueue {
            slots: Vec::new(),
            near: Vec::new(),
            far: Vec::new(),
            heads: vec![NONE; WHEEL as usize],
            occupied: vec![0; (WHEEL / 64) as usize],
            cur: 0,
            len: 0,
            seq: 0,
        }
    }

    /// Allocates an idle timer slot woken as `owner`.
    pub fn add_timer(&mut self, owner: W) -> TimerId {
        self.slots.push(Slot { time: 0, seq: 0, loc: Loc::Idle, next: NONE, prev: NONE, owner });
        TimerId((self.slots.len() - 1) as u32)
    }

    /// Armed slots.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Timer slots allocated.
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Total number of arms so far (a cheap count of scheduled events).
    pub fn arms(&self) -> u64 {
        self.seq
    }

    /// Whether the slot is waiting to fire.
    #[inline]
    pub fn is_armed(&self, id: TimerId) -> bool {
        self.slots[id.0 as usize].loc != Loc::Idle
    }

    /// The deadline of an armed slot.
    pub fn deadline(&self, id: TimerId) -> Option<Time> {
        self.is_armed(id).then(|| Time(self.slots[id.0 as usize].time))
    }

    /// Arms the slot at `at`, moving it if it was already armed.
    #[inline]
    pub fn arm(&mut self, id: TimerId, at: Time) {
        if self.slots[id.0 as usize].loc != Loc::Idle {
            self.detach(id.0);
        }
        let seq = self.seq;
        self.seq += 1;
        let s = &mut self.slots[id.0 as usize];
        s.time = at.0;
        s.seq = seq;
        self.len += 1;
        self.place(id.0);
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
        self.detach(id.0);
    }

    /// The earliest armed slot: its deadline, handle and owner.
    #[inline]
    pub fn peek(&mut self) -> Option<(Time, TimerId, W)> {
        if self.near.is_empty() && !self.advance() {
            return None;
        }
        let id = *self.near.last().expect("advanced");
        let s = &self.slots[id as usize];
        Some((Time(s.time), TimerId(id), s.owner))
    }

    /// Removes the earliest slot (leaving it idle, free to be re-armed) and returns its
    /// deadline and owner.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, W)> {
        self.pop_until(Time::MAX)
    }

    /// Like [`Self::pop`], but only if the earliest deadline is at or before `limit`.
    #[inline]
    pub fn pop_until(&mut self, limit: Time) -> Option<(Time, W)> {
        if self.near.is_empty() && !self.advance() {
            return None;
        }
        let id = *self.near.last().expect("advanced");
        let s = &mut self.slots[id as usize];
        if s.time > limit.0 {
            return None;
        }
        let r = (Time(s.time), s.owner);
        s.loc = Loc::Idle;
        self.len -= 1;
        self.near.pop();
        Some(r)
    }

    /// Puts an armed slot (with its key set) where its deadline belongs.
    #[inline]
    fn place(&mut self, id: u32) {
        let b = self.slots[id as usize].time >> SHIFT;
        if b <= self.cur {
            self.near_insert(id);
        } else if b - self.cur < WHEEL {
            self.wheel_insert(id, b);
        } else {
            self.far_push(id);
        }
    }

    /// Takes a slot out of wherever it is (no-op when idle).
    #[inline(never)]
    fn detach(&mut self, id: u32) {
        match self.slots[id as usize].loc {
            Loc::Idle => return,
            Loc::Near => {
                let pos = self.near.iter().rposition(|&x| x == id).expect("a near slot is in near");
                self.near.remove(pos);
            }
            Loc::Far(pos) => self.far_remove(pos as usize),
            Loc::Wheel => self.wheel_remove(id),
        }
        self.slots[id as usize].loc = Loc::Idle;
        self.len -= 1;
    }

    /// Moves the next due bucket into `near`; false if nothing is armed. Out of line: it runs
    /// once per bucket, and inlined it would make every pop save and restore its registers.
    #[inline(never)]
    fn advance(&mut self) -> bool {
        if self.len == 0 {
            return false;
        }
        let wheel_next = self.next_occupied();
        let far_next = self.far.first().map(|&id| self.slots[id as usize].time >> SHIFT);
        let b = match (wheel_next, far_next) {
            (Some(w), Some(f)) => w.min(f),
            (Some(w), None) => w,
            (None, Some(f)) => f,
            (None, None) => unreachable!("len > 0 but nothing armed"),
        };
        self.cur = b;
        if wheel_next == Some(b) {
            let idx = (b & MASK) as usize;
            let mut id = std::mem::replace(&mut self.heads[idx], NONE);
            self.occupied[idx / 64] &= !(1 << (idx % 64));
            debug_assert!(self.near.is_empty());
            while id != NONE {
                self.slots[id as usize].loc = Loc::Near;
                self.near.push(id);
                id = self.slots[id as usize].next;
            }
            let slots = &self.slots;
            if self.near.len() <= 16 {
                // A bucket holds a handful of slots: an insertion sort, descending.
                for i in 1..self.near.len() {
                    let x = self.near[i];
                    let key = slots[x as usize].key();
                    let mut j = i;
                    while j > 0 && slots[self.near[j - 1] as usize].key() < key {
                        self.near[j] = self.near[j - 1];
                        j -= 1;
                    }
                    self.near[j] = x;
                }
            } else {
                self.near.sort_unstable_by_key(|&i| std::cmp::Reverse(slots[i as usize].key()));
            }
        }
        while let Some(&id) = self.far.first() {
            if self.slots[id as usize].time >> SHIFT > b {
                break;
            }
            self.far_remove(0);
            self.near_insert(id);
        }
        true
    }

    /// The absolute number of the first non-empty wheel bucket after `cur`.
    fn next_occupied(&self) -> Option<u64> {
        let start = (self.cur + 1) & MASK;
        let words = self.occupied.len();
        let (w0, bit0) = ((start / 64) as usize, start % 64);
        let found = |w: usize, bits: u64| {
            let idx = (w as u64) * 64 + bits.trailing_zeros() as u64;
            let ahead = (idx.wrapping_sub(self.cur)) & MASK;
            Some(self.cur + if ahead == 0 { WHEEL } else { ahead })
        };
        // The start word from the start bit, the other words whole, then the start word's
        // bits before the start bit (the wheel wrapped round).
        let bits = self.occupied[w0] & (!0u64 << bit0);
        if bits != 0 {
            return found(w0, bits);
        }
        for k in 1..words {
            let w = (w0 + k) & (words - 1);
            let bits = self.occupied[w];
            if bits != 0 {
                return found(w, bits);
            }
        }
        let bits = self.occupied[w0] & !(!0u64 << bit0);
        if bits != 0 {
            return found(w0, bits);
        }
        None
    }

    /// Inserts into `near`, keeping it in descending key order (rare: an arm into the current
    /// bucket).
    #[inline(never)]
    fn near_insert(&mut self, id: u32) {
        let key = self.slots[id as usize].key();
        let slots = &self.slots;
        let at = self.near.partition_point(|&x| slots[x as usize].key() > key);
        self.near.insert(at, id);
        self.slots[id as usize].loc = Loc::Near;
    }

    #[inline]
    fn wheel_insert(&mut self, id: u32, b: u64) {
        let idx = (b & MASK) as usize;
        let head = self.heads[idx];
        {
            let s = &mut self.slots[id as usize];
            s.next = head;
            s.prev = NONE;
            s.loc = Loc::Wheel;
        }
        if head != NONE {
            self.slots[head as usize].prev = id;
        } else {
            self.occupied[idx / 64] |= 1 << (idx % 64);
        }
        self.heads[idx] = id;
    }

    #[inline]
    fn wheel_remove(&mut self, id: u32) {
        let s = self.slots[id as usize];
        let idx = ((s.time >> SHIFT) & MASK) as usize;
        if s.prev != NONE {
            self.slots[s.prev as usize].next = s.next;
        } else {
            self.heads[idx] = s.next;
            if s.next == NONE {
                self.occupied[idx / 64] &= !(1 << (idx % 64));
            }
        }
        if s.next != NONE {
            self.slots[s.next as usize].prev = s.prev;
        }
    }

    #[inline(always)]
    fn set_far_pos(&mut self, id: u32, pos: usize) {
        self.slots[id as usize].loc = Loc::Far(pos as u32);
    }

    #[inline(always)]
    fn before(&self, a: u32, b: u32) -> bool {
        self.slots[a as usize].key() < self.slots[b as usize].key()
    }

    #[inline(never)]
    fn far_push(&mut self, id: u32) {
        self.far.push(id);
        let pos = self.far.len() - 1;
        self.far_sift_up(pos, id);
    }

    fn far_remove(&mut self, pos: usize) {
        let last = self.far.pop().expect("remove from a non-empty heap");
        if pos < self.far.len() {
            if pos > 0 && self.before(last, self.far[(pos - 1) / ARITY]) {
                self.far_sift_up(pos, last);
            } else {
                self.far_sift_down(pos, last);
            }
        }
    }

    fn far_sift_up(&mut self, mut pos: usize, id: u32) {
        while pos > 0 {
            let parent = (pos - 1) / ARITY;
            let p = self.far[parent];
            if !self.before(id, p) {
                break;
            }
            self.far[pos] = p;
            self.set_far_pos(p, pos);
            pos = parent;
        }
        self.far[pos] = id;
        self.set_far_pos(id, pos);
    }

    fn far_sift_down(&mut self, mut pos: usize, id: u32) {
        let n = self.far.len();
        loop {
            let first = pos * ARITY + 1;
            if first >= n {
                break;
            }
            let mut best = first;
            for c in first + 1..(first + ARITY).min(n) {
                if self.before(self.far[c], self.far[best]) {
                    best = c;
                }
            }
            let b = self.far[best];
            if !self.before(b, id) {
                break;
            }
            self.far[pos] = b;
            self.set_far_pos(b, pos);
            pos = best;
        }
        self.far[pos] = id;
        self.set_far_pos(id, pos);
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
        q.arm(b, Time(7_000_000));
        q.arm(a, Time(90_000_000_000)); // moves into the far heap, does not duplicate
        assert_eq!(q.len(), 2);
        q.cancel(b);
        assert_eq!(q.len(), 1);
        assert_eq!(q.pop(), Some((Time(90_000_000_000), 'a')));
        assert!(q.pop().is_none());
    }

    #[test]
    fn popped_slot_is_idle_and_can_be_rearmed() {
        let mut q = TimerQueue::new();
        let a = q.add_timer(0);
        let b = q.add_timer(1);
        q.arm(a, Time(1));
        q.arm(b, Time(2));
        assert_eq!(q.pop(), Some((Time(1), 0)));
        assert!(!q.is_armed(a));
        q.arm(a, Time(3));
        assert_eq!(q.pop(), Some((Time(2), 1)));
        assert_eq!(q.pop(), Some((Time(3), 0)));
    }

    #[test]
    fn wheel_wraps_around_many_times() {
        let mut q = TimerQueue::new();
        let a = q.add_timer(0);
        let step = (WHEEL << SHIFT) / 3 + 12_345;
        let mut t = 0;
        for _ in 0..100 {
            t += step;
            q.arm(a, Time(t));
            assert_eq!(q.pop(), Some((Time(t), 0)));
        }
    }

    fn time() -> impl Strategy<Value = u64> {
        prop_oneof![0u64..50, 0u64..(1 << 16), 0u64..(1 << 26), 0u64..(1 << 40)]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// Against a simple model (a list of live keys), random arms, cancels and pops at times
        /// spanning the near heap, the wheel and the far heap always yield the earliest
        /// (time, arm order) entry.
        #[test]
        fn matches_sorted_model(ops in proptest::collection::vec((0u8..4, 0usize..16, time()), 1..500)) {
            let mut q = TimerQueue::new();
            let ids: Vec<_> = (0..16).map(|i| q.add_timer(i)).collect();
            let mut model: Vec<Option<(u64, u64)>> = vec![None; 16];
            let mut seq = 0u64;
            let mut now = 0u64;
            for (op, slot, t) in ops {
                match op {
                    // Arm relative to the last popped time, as a simulation does.
                    0 | 3 => { let at = now + t; q.arm(ids[slot], Time(at)); model[slot] = Some((at, seq)); seq += 1; }
                    1 => { q.cancel(ids[slot]); model[slot] = None; }
                    _ => {
                        let want = model.iter().enumerate().filter_map(|(i, m)| m.map(|k| (k, i))).min();
                        let got = q.pop();
                        match want {
                            None => prop_assert!(got.is_none()),
                            Some(((t, _), i)) => { prop_assert_eq!(got, Some((Time(t), i))); model[i] = None; now = t; }
                        }
                    }
                }
                prop_assert_eq!(q.len(), model.iter().filter(|m| m.is_some()).count());
                for (i, m) in model.iter().enumerate() {
                    prop_assert_eq!(q.deadline(ids[i]), m.map(|(t, _)| Time(t)));
                }
            }
        }
    }
}
