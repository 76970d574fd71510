//! Tassel's packet-level timeline (§3.3.3): a timing wheel that holds imminent packets until
//! they are eligible (start ≤ now), and a small array sorted by finish time from which the next
//! packet leaves (ties by finish time, then arrival). Times are virtual picoseconds.
//!
//! The wheel covers the span imminent packets may start in (plus two slots), so each has a slot;
//! a bitmap of non-empty slots finds the next one quickly. The hardware's sorted register array
//! becomes a binary heap keyed by (finish, arrival): the same order, and no quadratic cost when a
//! cold start makes every flow imminent at once.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Clone, Copy, Debug)]
struct Pkt {
    flow: u32,
    len: u32,
    start: u64,
    finish: u64,
}

pub struct Timeline {
    slot_ps: u64,
    slots: Vec<Vec<u32>>,
    /// Earliest start in each non-empty slot.
    slot_min: Vec<u64>,
    occupied: Vec<u64>,
    /// Absolute index of the slot holding the current time after the last release.
    base: u64,
    pkts: Vec<Pkt>,
    free: Vec<u32>,
    /// Eligible packets by (finish, arrival).
    ready: BinaryHeap<Reverse<(u64, u64, u32)>>,
    arrivals: u64,
    waiting: usize,
}

impl Timeline {
    pub fn new(slot_ps: u64, window_ps: u64) -> Timeline {
        let n = (window_ps.div_ceil(slot_ps.max(1)) + 2).next_power_of_two().max(64) as usize;
        Timeline { slot_ps: slot_ps.max(1), slots: vec![Vec::new(); n], slot_min: vec![u64::MAX; n], occupied: vec![0; n / 64], base: 0, pkts: Vec::new(), free: Vec::new(), ready: BinaryHeap::new(), arrivals: 0, waiting: 0 }
    }

    /// Packets held (waiting or eligible).
    pub fn len(&self) -> usize {
        self.waiting + self.ready.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn has_eligible(&self) -> bool {
        !self.ready.is_empty()
    }

    /// Adds an imminent packet (`start` at most one window after `now`).
    #[inline]
    pub fn insert(&mut self, flow: u32, len: u32, start: u64, finish: u64, now: u64) {
        let p = Pkt { flow, len, start, finish };
        let idx = match self.free.pop() {
            Some(i) => {
                self.pkts[i as usize] = p;
                i
            }
            None => {
                self.pkts.push(p);
                (self.pkts.len() - 1) as u32
            }
        };
        if start <= now {
            self.push_ready(idx);
            return;
        }
        let abs = start / self.slot_ps;
        if abs < self.base {
            self.push_ready(idx);
            return;
        }
        if abs - self.base >= self.slots.len() as u64 {
            // The wheel lags `now`: catch up before the slot index wraps.
            self.release_eligible(now);
            if start <= now {
                self.push_ready(idx);
                return;
            }
        }
        debug_assert!(abs - self.base < self.slots.len() as u64, "packet beyond the imminent window");
        let s = (abs as usize) & (self.slots.len() - 1);
        if self.slots[s].is_empty() {
            self.slot_min[s] = start;
        } else {
            self.slot_min[s] = self.slot_min[s].min(start);
        }
        self.slots[s].push(idx);
        self.occupied[s / 64] |= 1 << (s % 64);
        self.waiting += 1;
    }

    #[inline]
    fn push_ready(&mut self, idx: u32) {
        let finish = self.pkts[idx as usize].finish;
        self.ready.push(Reverse((finish, self.arrivals, idx)));
        self.arrivals += 1;
    }

    /// Moves every packet with start ≤ `now` to the eligible array.
    pub fn release_eligible(&mut self, now: u64) {
        let target = now / self.slot_ps;
        if self.waiting == 0 {
            self.base = target;
            return;
        }
        let n = self.slots.len() as u64;
        let last = target.min(self.base + n - 1);
        let mut from = self.base;
        while let Some(abs) = self.next_occupied(from, last) {
            from = abs + 1;
            let s = (abs as usize) & (n as usize - 1);
            let mut list = std::mem::take(&mut self.slots[s]);
            if abs < target {
                for &i in &list {
                    self.push_ready(i);
                }
                self.waiting -= list.len();
                list.clear();
            } else {
                if self.slot_min[s] > now {
                    self.slots[s] = list;
                    continue;
                }
                let before = list.len();
                let mut k = 0;
                let mut min = u64::MAX;
                while k < list.len() {
                    let start = self.pkts[list[k] as usize].start;
                    if start <= now {
                        let i = list.swap_remove(k);
                        self.push_ready(i);
                    } else {
                        min = min.min(start);
                        k += 1;
                    }
                }
                self.slot_min[s] = min;
                self.waiting -= before - list.len();
            }
            if list.is_empty() {
                self.occupied[s / 64] &= !(1 << (s % 64));
            }
            self.slots[s] = list;
        }
        self.base = target;
    }

    /// The first absolute slot in `from..=to` holding packets (at most one wheel turn).
    #[inline]
    fn next_occupied(&self, from: u64, to: u64) -> Option<u64> {
        first_set(&self.occupied, from, to)
    }

    /// The eligible packet with the smallest finish time: (flow, length).
    #[inline]
    pub fn pop_min_finish(&mut self) -> Option<(u32, u32)> {
        let Reverse((_, _, idx)) = self.ready.pop()?;
        self.free.push(idx);
        let p = self.pkts[idx as usize];
        Some((p.flow, p.len))
    }

    /// The earliest start among packets not yet eligible.
    pub fn next_start(&self) -> Option<u64> {
        if self.waiting == 0 {
            return None;
        }
        let n = self.slots.len() as u64;
        let abs = self.next_occupied(self.base, self.base + n - 1)?;
        Some(self.slot_min[(abs % n) as usize])
    }
}

/// The first absolute slot in `from..=to` whose bit is set in a wheel's occupancy bitmap
/// (slot `abs` is bit `abs % (64 × words)`; the range spans at most one turn).
#[inline]
pub(crate) fn first_set(occupied: &[u64], from: u64, to: u64) -> Option<u64> {
    let n = occupied.len() as u64 * 64;
    let mut abs = from;
    while abs <= to {
        let s = (abs % n) as usize;
        let bits = occupied[s / 64] >> (s % 64);
        if bits != 0 {
            let hit = abs + bits.trailing_zeros() as u64;
            return (hit <= to).then_some(hit);
        }
        abs += 64 - (s % 64) as u64;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eligible_in_finish_order_with_arrival_ties() {
        let mut t = Timeline::new(4_000, 1_000_000);
        t.insert(1, 100, 0, 50, 0);
        t.insert(2, 100, 0, 30, 0);
        t.insert(3, 100, 0, 30, 0);
        t.insert(4, 100, 10_000, 20, 0); // smallest finish but not eligible yet
        assert_eq!(t.pop_min_finish(), Some((2, 100)));
        assert_eq!(t.pop_min_finish(), Some((3, 100)));
        assert_eq!(t.next_start(), Some(10_000));
        t.release_eligible(9_999);
        assert_eq!(t.pop_min_finish(), Some((1, 100)));
        assert_eq!(t.pop_min_finish(), None);
        t.release_eligible(10_000);
        assert_eq!(t.pop_min_finish(), Some((4, 100)));
        assert!(t.is_empty());
    }
}
