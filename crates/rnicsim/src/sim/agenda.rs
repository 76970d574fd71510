//! A component's private timeline: entries ordered by `(time, order made)`, cheap when they
//! are mostly made in time order.
//!
//! A model inside a component (SCR's cores, say) often schedules things a fixed latency after
//! the moment it learns of them, so most entries arrive already in order. Those go to the back
//! of a FIFO ring; the few that would jump ahead of its last entry go to a binary heap. Taking
//! the next entry compares the two heads. The order is exactly that of one heap keyed by
//! `(time, sequence)`: equal times come out in the order they were made.

use crate::units::Time;
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

struct Entry<T> {
    at: Time,
    seq: u64,
    item: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Entry<T> {
    fn cmp(&self, o: &Self) -> Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

/// Entries of type `T` by when they are due.
pub struct Agenda<T> {
    in_order: VecDeque<Entry<T>>,
    ahead: BinaryHeap<Reverse<Entry<T>>>,
    seq: u64,
}

impl<T> Default for Agenda<T> {
    fn default() -> Self {
        Agenda { in_order: VecDeque::new(), ahead: BinaryHeap::new(), seq: 0 }
    }
}

impl<T> Agenda<T> {
    /// Adds `item` due at `at`; returns its sequence number (unique, increasing).
    #[inline]
    pub fn push(&mut self, at: Time, item: T) -> u64 {
        let seq = self.reserve();
        let e = Entry { at, seq, item };
        // The newest number: the FIFO takes it whenever its time is not before the last
        // entry's (the general case is `push_reserved`'s; this, on every SCR event, skips its
        // comparison of numbers).
        if self.in_order.back().is_none_or(|b| b.at <= at) {
            self.in_order.push_back(e);
        } else {
            self.ahead.push(Reverse(e));
        }
        seq
    }

    /// Takes the next sequence number now for an entry pushed later ([`Self::push_reserved`]):
    /// it comes out among equal times in the order reserved, as if pushed now.
    #[inline]
    pub fn reserve(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Adds `item` due at `at` with a sequence number [`Self::reserve`] gave.
    #[inline]
    pub fn push_reserved(&mut self, at: Time, seq: u64, item: T) {
        let e = Entry { at, seq, item };
        if self.in_order.back().is_none_or(|b| (b.at, b.seq) <= (at, seq)) {
            self.in_order.push_back(e);
        } else {
            self.ahead.push(Reverse(e));
        }
    }

    /// Whether the next entry is in the FIFO (else in the heap); `None` when empty.
    #[inline]
    fn next_in_order(&self) -> Option<bool> {
        match (self.in_order.front(), self.ahead.peek()) {
            (None, None) => None,
            (Some(_), None) => Some(true),
            (None, Some(_)) => Some(false),
            (Some(f), Some(Reverse(h))) => Some(f < h),
        }
    }

    /// When the next entry is due.
    #[inline]
    pub fn next_at(&self) -> Option<Time> {
        if self.ahead.is_empty() {
            return self.in_order.front().map(|e| e.at);
        }
        match self.next_in_order()? {
            true => self.in_order.front().map(|e| e.at),
            false => self.ahead.peek().map(|e| e.0.at),
        }
    }

    /// Takes the next entry if it is due by `now`: its time, sequence number and item.
    #[inline]
    pub fn pop_until(&mut self, now: Time) -> Option<(Time, u64, T)> {
        if self.ahead.is_empty() {
            // The usual case: everything was made in time order.
            if self.in_order.front()?.at > now {
                return None;
            }
            let e = self.in_order.pop_front()?;
            return Some((e.at, e.seq, e.item));
        }
        let e = match self.next_in_order()? {
            true if self.in_order.front()?.at <= now => self.in_order.pop_front()?,
            false if self.ahead.peek()?.0.at <= now => self.ahead.pop()?.0,
            _ => return None,
        };
        Some((e.at, e.seq, e.item))
    }

    pub fn len(&self) -> usize {
        self.in_order.len() + self.ahead.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn equal_times_come_out_in_the_order_made_whichever_side_holds_them() {
        let mut a = Agenda::default();
        a.push(Time(10), 'a');
        a.push(Time(30), 'b');
        a.push(Time(10), 'c'); // behind 30: into the heap, after 'a' at 10
        a.push(Time(30), 'd'); // not behind the back (30): into the FIFO, after 'b'
        assert_eq!(a.next_at(), Some(Time(10)));
        assert_eq!(a.pop_until(Time(9)), None);
        let got: Vec<_> = std::iter::from_fn(|| a.pop_until(Time(30)).map(|e| e.2)).collect();
        assert_eq!(got, vec!['a', 'c', 'b', 'd']);
        assert!(a.is_empty());
    }

    proptest! {
        /// Any mix of pushes and pops gives what one heap keyed by (time, sequence) gives.
        #[test]
        fn it_orders_as_one_heap_keyed_by_time_and_sequence(ops in proptest::collection::vec((0u64..50, 0u64..60, any::<bool>()), 1..200)) {
            let mut a = Agenda::default();
            let mut reference = BinaryHeap::new();
            let mut seq = 0;
            let mut now = 0;
            for (i, &(ahead, step, pop)) in ops.iter().enumerate() {
                if pop {
                    now += step;
                    let want = match reference.peek() {
                        Some(&Reverse((at, s, item))) if at <= now => { reference.pop(); Some((Time(at), s, item)) }
                        _ => None,
                    };
                    prop_assert_eq!(a.pop_until(Time(now)), want);
                } else {
                    seq += 1;
                    let at = now + ahead;
                    prop_assert_eq!(a.push(Time(at), i), seq);
                    reference.push(Reverse((at, seq, i)));
                }
                prop_assert_eq!(a.next_at(), reference.peek().map(|r| Time(r.0 .0)));
                prop_assert_eq!(a.len(), reference.len());
            }
        }
    }
}
