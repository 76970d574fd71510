//! The flow-level timeline: each active flow's scheduling time, kept coarsely.
//!
//! Flows are scheduled one scheduling latency ahead of their head packet and the packet tier's
//! WF²Q+ times are exact, so the flow tier needs only coarse order (in hardware a pipelined heap,
//! Tassel §3.3.3). In software a timing wheel does it in O(1): slots of `latency / 16`, 4096 of
//! them, and a heap for flows due beyond the wheel (slow flows), moved in as the wheel turns.
//! Flows in one slot come out together, in a fixed order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

const SLOTS: usize = 4096;

pub struct FlowWheel {
    slot_ps: u64,
    slots: Vec<Vec<u32>>,
    occupied: Vec<u64>,
    /// Every slot before this absolute index is empty.
    cursor: u64,
    far: BinaryHeap<Reverse<(u64, u32)>>,
    /// The slot being handed out.
    current: Vec<u32>,
}

impl FlowWheel {
    pub fn new(slot_ps: u64) -> FlowWheel {
        FlowWheel { slot_ps: slot_ps.max(1), slots: vec![Vec::new(); SLOTS], occupied: vec![0; SLOTS / 64], cursor: 0, far: BinaryHeap::new(), current: Vec::new() }
    }

    /// The width of one slot (ps).
    pub fn slot_ps(&self) -> u64 {
        self.slot_ps
    }

    /// Schedules `flow` at time `at` (a time already passed means due now).
    #[inline]
    pub fn push(&mut self, at: u64, flow: u32) {
        let abs = (at / self.slot_ps).max(self.cursor);
        if abs - self.cursor < SLOTS as u64 {
            let s = abs as usize % SLOTS;
            self.slots[s].push(flow);
            self.occupied[s / 64] |= 1 << (s % 64);
        } else {
            self.far.push(Reverse((at, flow)));
        }
    }

    /// A flow due at or before `due`, if any.
    #[inline]
    pub fn pop_due(&mut self, due: u64) -> Option<u32> {
        loop {
            if let Some(f) = self.current.pop() {
                return Some(f);
            }
            self.pull_far();
            let limit = due / self.slot_ps;
            let abs = match self.first_occupied() {
                Some(abs) if abs <= limit => abs,
                next => {
                    // Nothing due in the wheel; a far flow may be due already.
                    if let Some(&Reverse((at, flow))) = self.far.peek() {
                        if at <= due {
                            self.far.pop();
                            return Some(flow);
                        }
                    }
                    self.cursor = self.cursor.max(next.map_or(limit, |n| n.min(limit)));
                    return None;
                }
            };
            let s = abs as usize % SLOTS;
            std::mem::swap(&mut self.current, &mut self.slots[s]);
            self.occupied[s / 64] &= !(1 << (s % 64));
            self.cursor = abs;
            // Hand out in arrival order.
            self.current.reverse();
        }
    }

    /// The earliest scheduling time held (a slot's start for wheel entries).
    pub fn next_due(&self) -> Option<u64> {
        if !self.current.is_empty() {
            return Some(self.cursor * self.slot_ps);
        }
        let wheel = self.first_occupied().map(|a| a * self.slot_ps);
        let far = self.far.peek().map(|&Reverse((t, _))| t);
        match (wheel, far) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Moves far flows that now fit in the wheel.
    fn pull_far(&mut self) {
        while let Some(&Reverse((at, flow))) = self.far.peek() {
            if (at / self.slot_ps).max(self.cursor) - self.cursor >= SLOTS as u64 {
                break;
            }
            self.far.pop();
            self.push(at, flow);
        }
    }

    /// The first non-empty slot at or after the cursor.
    fn first_occupied(&self) -> Option<u64> {
        crate::timeline::first_set(&self.occupied, self.cursor, self.cursor + SLOTS as u64 - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_flows_come_out_in_slot_then_arrival_order() {
        let mut w = FlowWheel::new(100);
        w.push(250, 1);
        w.push(120, 2);
        w.push(199, 3);
        w.push(10_000_000, 4); // beyond the wheel
        assert_eq!(w.pop_due(99), None);
        assert_eq!(w.next_due(), Some(100));
        assert_eq!((w.pop_due(150), w.pop_due(150), w.pop_due(150)), (Some(2), Some(3), None));
        assert_eq!(w.pop_due(300), Some(1));
        assert_eq!(w.next_due(), Some(10_000_000));
        assert_eq!(w.pop_due(9_999_999), None);
        assert_eq!(w.pop_due(10_000_000), Some(4));
        w.push(5, 5); // in the past: due at once
        assert_eq!(w.pop_due(10_000_000), Some(5));
    }
}
