//! Tassel's packet-level timeline (§3.3.3): a timing wheel that holds imminent packets until
//! they are eligible (start ≤ now), and a small array sorted by finish time from which the next
//! packet leaves (ties by finish time, then arrival). Times are virtual picoseconds.
//!
//! The wheel covers one imminent window (plus two slots), so every imminent packet has a slot;
//! a bitmap of non-empty slots finds the next one quickly. The hardware's register array becomes
//! a vector kept in descending order, popped from its end.

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
    occupied: Vec<u64>,
    /// Absolute index of the slot holding the current time after the last release.
    base: u64,
    pkts: Vec<Pkt>,
    free: Vec<u32>,
    /// Eligible packets as (finish, arrival, index), in descending order.
    ready: Vec<(u64, u64, u32)>,
    arrivals: u64,
    waiting: usize,
}

impl Timeline {
    pub fn new(slot_ps: u64, window_ps: u64) -> Timeline {
        let n = (window_ps.div_ceil(slot_ps.max(1)) + 2).next_power_of_two().max(64) as usize;
        Timeline { slot_ps: slot_ps.max(1), slots: vec![Vec::new(); n], occupied: vec![0; n / 64], base: 0, pkts: Vec::new(), free: Vec::new(), ready: Vec::new(), arrivals: 0, waiting: 0 }
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
        debug_assert!(abs - self.base < self.slots.len() as u64, "packet beyond the imminent window");
        let s = (abs as usize) & (self.slots.len() - 1);
        self.slots[s].push(idx);
        self.occupied[s / 64] |= 1 << (s % 64);
        self.waiting += 1;
    }

    #[inline]
    fn push_ready(&mut self, idx: u32) {
        let p = self.pkts[idx as usize];
        let key = (p.finish, self.arrivals, idx);
        self.arrivals += 1;
        let at = self.ready.partition_point(|&e| (e.0, e.1) > (key.0, key.1));
        self.ready.insert(at, key);
    }

    /// Moves every packet with start ≤ `now` to the eligible array.
    pub fn release_eligible(&mut self, now: u64) {
        let target = now / self.slot_ps;
        if self.waiting == 0 {
            self.base = target;
            return;
        }
        let n = self.slots.len() as u64;
        let first = self.base;
        let last = target.min(first + n - 1);
        let mut abs = first;
        while abs <= last {
            let s = (abs as usize) & (n as usize - 1);
            // Skip to the next non-empty slot.
            if self.occupied[s / 64] & (1 << (s % 64)) == 0 {
                abs += 1;
                continue;
            }
            let mut list = std::mem::take(&mut self.slots[s]);
            if abs < target {
                for &i in &list {
                    self.push_ready(i);
                }
                self.waiting -= list.len();
                list.clear();
            } else {
                let before = list.len();
                let mut k = 0;
                while k < list.len() {
                    if self.pkts[list[k] as usize].start <= now {
                        let i = list.swap_remove(k);
                        self.push_ready(i);
                    } else {
                        k += 1;
                    }
                }
                self.waiting -= before - list.len();
            }
            if list.is_empty() {
                self.occupied[s / 64] &= !(1 << (s % 64));
            }
            self.slots[s] = list;
            abs += 1;
        }
        self.base = target;
    }

    /// The eligible packet with the smallest finish time: (flow, length).
    #[inline]
    pub fn pop_min_finish(&mut self) -> Option<(u32, u32)> {
        let (_, _, idx) = self.ready.pop()?;
        self.free.push(idx);
        let p = self.pkts[idx as usize];
        Some((p.flow, p.len))
    }

    /// The earliest start among packets not yet eligible.
    pub fn next_start(&self) -> Option<u64> {
        if self.waiting == 0 {
            return None;
        }
        let n = self.slots.len();
        let b = (self.base as usize) & (n - 1);
        for k in 0..n {
            let s = (b + k) & (n - 1);
            if self.occupied[s / 64] & (1 << (s % 64)) != 0 {
                return self.slots[s].iter().map(|&i| self.pkts[i as usize].start).min();
            }
        }
        None
    }
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
