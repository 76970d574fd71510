//! Scheduled packets waiting on the NIC for their payload read, one queue per payload path (the
//! host's PCIe and the GPU's), and the queue pairs set aside while their path's queue is full.
//!
//! A packet starts on the wire once the rest of its payload arrives in time for the wire
//! ([`super::pcie`]): when PCIe, or the GPU path, is slower than the port, the packet waits here
//! after the scheduler picked it, and the scheduler goes on to other queue pairs. Each path holds
//! a bounded number of bytes; a queue pair picked while its path is full is parked until the
//! path drains below the bound, so a slow GPU path never holds up queue pairs whose payload is
//! in host memory.

use crate::units::Time;
use crate::wire::packet::PacketId;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// A held packet: when it may start, its arrival order, the packet, its queue pair and bytes.
type Entry = Reverse<(Time, u64, PacketId, u32, u32)>;

#[derive(Clone, Debug, Default)]
pub struct PayloadWait {
    held: [BinaryHeap<Entry>; 2],
    seq: u64,
    /// Bytes held per path now, and the most ever held on both.
    pub bytes: [u64; 2],
    pub peak_bytes: u64,
    /// Queue pairs picked while their path was full, per path, first parked first.
    parked: [VecDeque<u32>; 2],
}

impl PayloadWait {
    /// Holds packet `id` of queue pair `q` (`bytes` on the wire) on `path` until `start`.
    pub fn push(&mut self, path: usize, start: Time, id: PacketId, q: u32, bytes: u32) {
        self.held[path].push(Reverse((start, self.seq, id, q, bytes)));
        self.seq += 1;
        self.bytes[path] += bytes as u64;
        self.peak_bytes = self.peak_bytes.max(self.bytes[0] + self.bytes[1]);
    }

    /// When the first held packet may start.
    pub fn next_ready(&self) -> Option<Time> {
        self.head().map(|(_, t)| t)
    }

    /// The path whose head packet starts first (the host's on a tie), and when.
    fn head(&self) -> Option<(usize, Time)> {
        let start = |p: usize| self.held[p].peek().map(|Reverse((t, ..))| *t);
        match (start(0), start(1)) {
            (Some(a), Some(b)) if b < a => Some((1, b)),
            (Some(a), _) => Some((0, a)),
            (None, Some(b)) => Some((1, b)),
            (None, None) => None,
        }
    }

    /// The first held packet if it may start at `now`, and its queue pair.
    #[inline]
    pub fn pop_ready(&mut self, now: Time) -> Option<(PacketId, u32)> {
        let (path, start) = self.head()?;
        if start > now {
            return None;
        }
        let Reverse((_, _, id, q, bytes)) = self.held[path].pop()?;
        self.bytes[path] -= bytes as u64;
        Some((id, q))
    }

    /// Whether `path` holds `limit` bytes or more.
    pub fn is_full(&self, path: usize, limit: u64) -> bool {
        self.bytes[path] >= limit
    }

    /// Sets queue pair `q` aside until `path` has room.
    pub fn park(&mut self, path: usize, q: u32) {
        self.parked[path].push_back(q);
    }

    /// The queue pairs to go back to the scheduler from paths that hold fewer than `limit`
    /// bytes now: as many as the room holds packets of `packet` bytes, first parked first (the
    /// host path's first), so that a packet leaving wakes a few queue pairs, not every one
    /// parked only for most to be parked again. A path that holds nothing lets every queue pair
    /// back: no packet is left to leave it and wake the rest, should the few let back have
    /// nothing to send.
    pub fn unpark(&mut self, limit: u64, packet: u64) -> Vec<u32> {
        let mut out = Vec::new();
        for path in 0..2 {
            if self.parked[path].is_empty() || self.bytes[path] >= limit {
                continue;
            }
            let room = (limit - self.bytes[path]).div_ceil(packet.max(1)) as usize;
            let n = if self.bytes[path] == 0 { self.parked[path].len() } else { room.min(self.parked[path].len()) };
            out.extend(self.parked[path].drain(..n));
        }
        out
    }

    /// The packets held, in no particular order.
    pub fn ids(&self) -> impl Iterator<Item = PacketId> + '_ {
        self.held.iter().flat_map(|h| h.iter().map(|Reverse((_, _, id, ..))| *id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_leave_in_start_order_across_paths_and_parked_pairs_return_once_there_is_room() {
        let mut w = PayloadWait::default();
        let t = Time::from_us;
        w.push(1, t(3), PacketId(7), 1, 1000);
        w.push(0, t(2), PacketId(8), 2, 1000);
        w.push(1, t(3), PacketId(9), 1, 1000);
        assert_eq!((w.bytes, w.peak_bytes, w.next_ready()), ([1000, 2000], 3000, Some(t(2))));
        assert_eq!(w.pop_ready(t(1)), None);
        assert_eq!(w.pop_ready(t(2)), Some((PacketId(8), 2)));
        // Ties keep the order they came in.
        assert_eq!(w.pop_ready(t(5)), Some((PacketId(7), 1)));
        w.park(1, 4);
        w.park(0, 5);
        assert!(w.is_full(1, 1000) && !w.is_full(0, 1000));
        // The host path has room; the GPU path's pair waits for its last packet to go.
        assert_eq!(w.unpark(1000, 500), vec![5]);
        assert_eq!(w.pop_ready(t(5)), Some((PacketId(9), 1)));
        // Room for two packets of 500 B behind one of 300 B: two of the three parked go
        // back, first parked first.
        w.push(1, t(6), PacketId(10), 1, 300);
        w.park(1, 6);
        w.park(1, 7);
        assert_eq!(w.unpark(1000, 500), vec![4, 6]);
        assert_eq!(w.unpark(1000, 500), vec![7]);
        // A path that holds nothing lets all its parked pairs back, however many.
        assert_eq!(w.pop_ready(t(6)), Some((PacketId(10), 1)));
        for q in 11..15 {
            w.park(1, q);
        }
        assert_eq!(w.unpark(1000, 500), vec![11, 12, 13, 14]);
        assert_eq!((w.bytes, w.next_ready(), w.ids().count()), ([0, 0], None, 0));
    }
}
