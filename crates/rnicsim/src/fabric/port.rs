//! An egress port: eight class queues plus a control queue, a class scheduler (strict priority
//! or deficit-weighted round robin), and the PFC pause state its peer imposes on it.
//!
//! Within a class, packets leave first in, first out, or, on a switch with
//! `switch.queue_order = "srpt"`, shortest remaining first: the packet whose message has the
//! fewest bytes left to send at the time it was sent goes first, ties in arrival order (pFabric's
//! per-packet priority, Alizadeh et al., SIGCOMM 2013, §4.1, as the Eunomia paper's §5.4 uses it:
//! the later packets of a long message overtake its earlier ones, so SRPT reorders).
//!
//! The port serializes one packet at a time. A packet goes onto the link as its serialization
//! starts (its arrival at the far end is then known); the port's single timer is armed for the
//! end of serialization only when another packet is waiting, so an idle port costs no event.

use crate::wire::packet::{Packet, PacketFifo, PacketId, PacketKind, PacketPool};
use crate::sim::TimerId;
use crate::units::{BitsPerSec, Serialization, Time};
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

pub const CLASSES: usize = 8;

/// How the port chooses among its non-empty, unpaused classes.
#[derive(Clone, Debug, PartialEq)]
pub enum ClassService {
    /// Class 0 first, then 1, and so on.
    Strict,
    /// Deficit round robin; each class's quantum is its weight times `quantum` bytes.
    Weighted { weights: [u32; CLASSES], quantum: u32 },
    /// Class 0 first, then classes 1 to 7 a packet each in turn, skipping those paused or
    /// empty: the switch queues of HPCC's and ConWeave's ns-3 (`BEgressQueue::DoDequeueRR`).
    ZeroThenRoundRobin,
}

/// The order packets of one class leave a switch port in (`switch.queue_order`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueOrder {
    #[default]
    Fifo,
    /// Shortest remaining message first ([`srpt_rank`]).
    Srpt,
}

/// A packet's SRPT rank: the bytes its message had left to send from this packet on (a RoCE
/// data packet or READ response), 0 for transport control (ACKs, NAKs, READ requests, StaR
/// packets) so that it is never stuck behind data, and the largest rank for raw traffic, whose
/// flows have no size.
#[inline]
pub fn srpt_rank(pkt: &Packet) -> u32 {
    match pkt.kind {
        PacketKind::Data => u32::MAX,
        _ if pkt.carries_data() => pkt.roce.dma_len.saturating_sub(pkt.roce.offset).max(1),
        _ => 0,
    }
}

/// The class queues of an SRPT port: a heap per class on (rank, arrival number).
#[derive(Default)]
struct RankedQueues {
    heaps: [BinaryHeap<Reverse<(u32, u64, PacketId)>>; CLASSES],
    arrivals: u64,
}

/// Per-port counters, reported in `counters.parquet`.
#[derive(Clone, Copy, Debug, Default)]
pub struct PortCounters {
    pub tx_packets: u64,
    pub tx_bytes: u64,
    /// Data packets dropped at admission (buffer full or over the dynamic threshold).
    pub drops_buffer: u64,
    /// Packets dropped because the link was down or failed under them.
    pub drops_link_down: u64,
    /// Packets lost to the link's random error rate.
    pub drops_corrupt: u64,
    pub ecn_marks: u64,
    pub pause_tx: u64,
    pub resume_tx: u64,
    pub pause_rx: u64,
    pub resume_rx: u64,
    /// Time this port was paused by its peer, summed over priorities (ps).
    pub paused_rx_ps: u64,
    /// Time this port's node asserted PAUSE towards the peer, summed over priorities (ps).
    pub paused_tx_ps: u64,
    pub max_queue_bytes: u64,
}

pub struct Port {
    /// The node this port belongs to and its interface index there.
    pub node: u32,
    pub iface: u32,
    /// The port at the other end of the link (the reverse direction).
    pub peer: u32,
    pub rate: BitsPerSec,
    pub timer: TimerId,
    /// The class queues, linked through the packet pool: a port holds no packet memory.
    queues: [PacketFifo; CLASSES],
    /// On an SRPT port, the class queues in rank order instead (`queues` then stay empty).
    ranked: Option<Box<RankedQueues>>,
    queue_bytes: [u64; CLASSES],
    total_bytes: u64,
    control: PacketFifo,
    /// When the packet being serialized (if any) is done.
    pub busy_until: Time,
    /// The last packet size serialized and its serialization time (sizes repeat; saves a division).
    last_tx: (u32, Time),
    /// How a frame's bytes become its serialization time (`links.serialization`).
    serialization: Serialization,
    /// Per class: paused by the peer until this time.
    paused_until: [Time; CLASSES],
    service: ClassService,
    deficit: [u64; CLASSES],
    rr_next: usize,
    pub counters: PortCounters,
}

impl RankedQueues {
    #[inline]
    fn push(&mut self, class: u8, rank: u32, id: PacketId) {
        self.arrivals += 1;
        self.heaps[class as usize].push(Reverse((rank, self.arrivals, id)));
    }
}

impl Port {
    pub fn new(node: u32, iface: u32, peer: u32, rate: BitsPerSec, timer: TimerId, service: ClassService) -> Port {
        Port {
            node,
            iface,
            peer,
            rate,
            timer,
            queues: Default::default(),
            ranked: None,
            queue_bytes: [0; CLASSES],
            total_bytes: 0,
            control: PacketFifo::default(),
            busy_until: Time::ZERO,
            last_tx: (0, Time::ZERO),
            serialization: Serialization::Exact,
            paused_until: [Time::ZERO; CLASSES],
            service,
            deficit: [0; CLASSES],
            rr_next: 0,
            counters: PortCounters::default(),
        }
    }

    /// Serves each class in `order` from now on (set while the port is empty).
    pub fn set_order(&mut self, order: QueueOrder) {
        debug_assert!(self.total_bytes == 0);
        self.ranked = (order == QueueOrder::Srpt).then(Box::default);
    }

    #[inline]
    pub fn enqueue(&mut self, class: u8, id: PacketId, size: u32, pool: &mut PacketPool) {
        match self.ranked {
            None => self.queues[class as usize].push_back(pool, id),
            Some(_) => self.enqueue_ranked(class, id, pool),
        }
        self.count_queued(class, size);
    }

    /// An SRPT port's enqueue, out of the FIFO ports' way.
    #[cold]
    #[inline(never)]
    fn enqueue_ranked(&mut self, class: u8, id: PacketId, pool: &PacketPool) {
        if let Some(r) = &mut self.ranked {
            r.push(class, srpt_rank(pool.get(id)), id);
        }
    }

    /// Byte accounting of a packet joining class `class`.
    #[inline]
    fn count_queued(&mut self, class: u8, size: u32) {
        self.queue_bytes[class as usize] += size as u64;
        self.total_bytes += size as u64;
        if self.total_bytes > self.counters.max_queue_bytes {
            self.counters.max_queue_bytes = self.total_bytes;
        }
    }

    /// Queues a packet at the head of its class (a NIC's ACKs bypass its transmit pipeline).
    /// On an SRPT port it takes rank 0.
    pub fn enqueue_front(&mut self, class: u8, id: PacketId, size: u32, pool: &mut PacketPool) {
        match &mut self.ranked {
            None => self.queues[class as usize].push_front(pool, id),
            Some(r) => r.push(class, 0, id),
        }
        self.count_queued(class, size);
    }

    /// Control frames (PFC) bypass the class queues and are never paused.
    pub fn enqueue_control(&mut self, id: PacketId, pool: &mut PacketPool) {
        self.control.push_back(pool, id);
    }

    /// How this port times a frame (`links.serialization`).
    pub fn serialization(&self) -> Serialization {
        self.serialization
    }

    /// Times frames by `rule` from now on.
    pub fn set_serialization(&mut self, rule: Serialization) {
        self.serialization = rule;
        self.last_tx = (0, Time::ZERO);
    }

    /// Time to serialize `size` bytes at this port's rate.
    #[inline]
    pub fn tx_time(&mut self, size: u32) -> Time {
        if self.last_tx.0 != size {
            self.last_tx = (size, self.serialization.tx_time(self.rate, size as u64));
        }
        self.last_tx.1
    }

    /// Starts serializing a `size`-byte packet at `now`: the port is busy until the returned time.
    #[inline]
    pub fn start_tx(&mut self, now: Time, size: u32) -> Time {
        let done = now + self.tx_time(size);
        self.busy_until = done;
        self.counters.tx_packets += 1;
        self.counters.tx_bytes += size as u64;
        done
    }

    /// Bytes sent by `now`: the packet on the wire counts by the part already serialized.
    pub fn tx_bytes_by(&self, now: Time) -> u64 {
        self.counters.tx_bytes.saturating_sub(self.rate.bytes_in(self.busy_until.saturating_sub(now)))
    }

    /// Whether the port can start a packet at `now`.
    #[inline]
    pub fn is_idle(&self, now: Time) -> bool {
        self.busy_until <= now
    }

    /// Whether anything (data or control) is queued.
    #[inline]
    pub fn has_queued(&self) -> bool {
        self.total_bytes > 0 || !self.control.is_empty()
    }

    pub fn queue_bytes(&self, class: u8) -> u64 {
        self.queue_bytes[class as usize]
    }

    /// Every packet waiting in the class queues (not the control queue), class by class.
    /// On an SRPT port, each class's packets in rank order.
    pub fn queued<'a>(&'a self, pool: &'a PacketPool) -> Box<dyn Iterator<Item = PacketId> + 'a> {
        match &self.ranked {
            None => Box::new(self.queues.iter().flat_map(move |q| q.iter(pool))),
            Some(r) => Box::new(r.heaps.iter().flat_map(|h| {
                let mut keys: Vec<_> = h.iter().map(|k| k.0).collect();
                keys.sort_unstable();
                keys.into_iter().map(|k| k.2)
            })),
        }
    }

    pub fn queue_packets(&self, class: u8) -> usize {
        match &self.ranked {
            None => self.queues[class as usize].len(),
            Some(r) => r.heaps[class as usize].len(),
        }
    }

    /// Whether class `c` holds a packet (every packet has a size).
    #[inline]
    fn holds(&self, c: usize) -> bool {
        self.queue_bytes[c] > 0
    }

    /// The packet class `c` would send next.
    #[inline]
    fn head(&self, c: usize) -> Option<PacketId> {
        match &self.ranked {
            None => self.queues[c].front(),
            Some(r) => r.heaps[c].peek().map(|k| k.0 .2),
        }
    }

    #[inline]
    fn pop(&mut self, c: usize, pool: &PacketPool) -> Option<PacketId> {
        match &mut self.ranked {
            None => self.queues[c].pop_front(pool),
            Some(r) => r.heaps[c].pop().map(|k| k.0 .2),
        }
    }

    /// Bytes waiting in all class queues (not counting the packet being serialized).
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    #[inline]
    pub fn is_paused(&self, class: usize, now: Time) -> bool {
        self.paused_until[class] > now
    }

    /// The earliest time a paused, non-empty class becomes sendable again.
    /// Until when `class` is paused by the peer (in the past if it is not).
    pub fn paused_until(&self, class: usize) -> Time {
        self.paused_until[class]
    }

    pub fn next_unpause(&self, now: Time) -> Option<Time> {
        (0..CLASSES).filter(|&c| self.holds(c) && self.is_paused(c, now)).map(|c| self.paused_until[c]).min()
    }

    /// Applies a received PFC frame for `class` that pauses until `until` (`until <= now` resumes).
    /// Returns the change in projected paused time, for the counters.
    pub fn apply_pause(&mut self, class: u8, now: Time, until: Time) {
        let c = class as usize;
        let old = self.paused_until[c].max(now);
        let new = until.max(now);
        // Paused time is accounted as projected; a resume or a shorter pause takes the rest back.
        self.counters.paused_rx_ps = (self.counters.paused_rx_ps + new.0).saturating_sub(old.0);
        self.paused_until[c] = until;
    }

    /// Pause time projected beyond `end` (removed from the counters when a run stops).
    pub fn paused_beyond(&self, end: Time) -> u64 {
        self.paused_until.iter().map(|t| t.0.saturating_sub(end.0)).sum()
    }

    /// Removes and returns the next packet to send with its class (`None` for control), or `None`
    /// if every non-empty class is paused.
    #[inline]
    pub fn dequeue(&mut self, now: Time, pool: &PacketPool) -> Option<(PacketId, Option<u8>)> {
        if let Some(id) = self.control.pop_front(pool) {
            return Some((id, None));
        }
        if self.total_bytes == 0 {
            return None;
        }
        let c = match &self.service {
            ClassService::Strict => (0..CLASSES).find(|&c| self.holds(c) && !self.is_paused(c, now))?,
            ClassService::ZeroThenRoundRobin => {
                if self.holds(0) && !self.is_paused(0, now) {
                    0
                } else {
                    // From the class after the last one served, round classes 1..7.
                    let start = self.rr_next.max(1);
                    let c = (0..CLASSES - 1).map(|i| 1 + (start - 1 + i) % (CLASSES - 1)).find(|&c| self.holds(c) && !self.is_paused(c, now))?;
                    self.rr_next = 1 + c % (CLASSES - 1);
                    c
                }
            }
            ClassService::Weighted { weights, quantum } => {
                let (weights, quantum) = (*weights, *quantum as u64);
                if !(0..CLASSES).any(|c| self.holds(c) && !self.is_paused(c, now)) {
                    return None;
                }
                loop {
                    let c = self.rr_next;
                    match self.head(c) {
                        Some(head) if !self.is_paused(c, now) => {
                            let need = pool.get(head).size as u64;
                            if self.deficit[c] >= need {
                                self.deficit[c] -= need;
                                break c;
                            }
                            self.deficit[c] += weights[c].max(1) as u64 * quantum;
                        }
                        Some(_) => {}
                        None => self.deficit[c] = 0,
                    }
                    self.rr_next = (c + 1) % CLASSES;
                }
            }
        };
        let id = self.pop(c, pool).expect("class chosen non-empty");
        if let Some(next) = self.head(c) {
            pool.prefetch(next);
        }
        let s = pool.get(id).size as u64;
        self.queue_bytes[c] -= s;
        self.total_bytes -= s;
        Some((id, Some(c as u8)))
    }

    /// Removes every queued data packet (a link going down flushes its port).
    pub fn drain_all(&mut self, pool: &PacketPool) -> Vec<(PacketId, u8)> {
        let mut out = Vec::new();
        for c in 0..CLASSES {
            if let Some(r) = &mut self.ranked {
                out.extend(std::mem::take(&mut r.heaps[c]).into_sorted_vec().into_iter().rev().map(|k| (k.0 .2, c as u8)));
            }
            while let Some(id) = self.queues[c].pop_front(pool) {
                out.push((id, c as u8));
            }
            self.queue_bytes[c] = 0;
        }
        self.total_bytes = 0;
        out
    }

    pub fn drain_control(&mut self, pool: &PacketPool) -> Vec<PacketId> {
        std::iter::from_fn(|| self.control.pop_front(pool)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port(service: ClassService) -> Port {
        Port::new(0, 0, 1, BitsPerSec::gbps(100), TimerId(0), service)
    }

    /// A pool holding `n` packets of `size` bytes, ids 0..n.
    fn pool(n: u32, size: u32) -> PacketPool {
        let mut pool = PacketPool::default();
        for _ in 0..n {
            pool.alloc(crate::wire::packet::Packet::pause(0, 1, size));
        }
        pool
    }

    #[test]
    fn strict_priority_serves_lowest_class_and_skips_paused() {
        let mut p = port(ClassService::Strict);
        let mut pool = pool(40, 100);
        p.enqueue(3, PacketId(30), 100, &mut pool);
        p.enqueue(1, PacketId(10), 100, &mut pool);
        p.enqueue(1, PacketId(11), 100, &mut pool);
        assert_eq!(p.dequeue(Time(0), &pool), Some((PacketId(10), Some(1))));
        p.apply_pause(1, Time(0), Time(1000));
        assert_eq!(p.dequeue(Time(5), &pool), Some((PacketId(30), Some(3))));
        assert_eq!(p.dequeue(Time(5), &pool), None);
        assert_eq!(p.next_unpause(Time(5)), Some(Time(1000)));
        assert_eq!(p.dequeue(Time(1000), &pool), Some((PacketId(11), Some(1))));
        assert_eq!(p.counters.paused_rx_ps, 1000);
    }

    #[test]
    fn resume_takes_back_projected_pause_time() {
        let mut p = port(ClassService::Strict);
        p.apply_pause(3, Time(100), Time(10_000));
        p.apply_pause(3, Time(400), Time(400));
        assert_eq!(p.counters.paused_rx_ps, 300);
    }

    #[test]
    fn weighted_service_splits_by_weight() {
        let mut weights = [1; CLASSES];
        weights[0] = 3;
        let mut p = port(ClassService::Weighted { weights, quantum: 1000 });
        let mut pool = pool(1400, 1000);
        for i in 0..400 {
            p.enqueue(0, PacketId(i), 1000, &mut pool);
            p.enqueue(1, PacketId(1000 + i), 1000, &mut pool);
        }
        let mut served = [0; 2];
        for _ in 0..400 {
            let (_, c) = p.dequeue(Time(0), &pool).unwrap();
            served[c.unwrap() as usize] += 1;
        }
        assert_eq!(served, [300, 100]);
    }

    #[test]
    fn zero_then_round_robin_serves_class_zero_first_then_the_others_a_packet_each() {
        // Two packets in class 0, three each in classes 1 and 3: 0, 0, then 1, 3, 1, 3, 1, 3
        // (strict priority would send all of class 1 first); a paused class is skipped.
        let mut p = port(ClassService::ZeroThenRoundRobin);
        let mut pkts = pool(8, 1000);
        for (i, c) in [(0, 0), (1, 0), (2, 1), (3, 1), (4, 1), (5, 3), (6, 3), (7, 3)] {
            p.enqueue(c, PacketId(i), 1000, &mut pkts);
        }
        let order: Vec<u8> = std::iter::from_fn(|| p.dequeue(Time(0), &pkts).map(|(_, c)| c.unwrap())).collect();
        assert_eq!(order, [0, 0, 1, 3, 1, 3, 1, 3]);
        let mut p = port(ClassService::ZeroThenRoundRobin);
        let mut pkts = pool(4, 1000);
        for (i, c) in [(0, 1), (1, 3), (2, 1), (3, 3)] {
            p.enqueue(c, PacketId(i), 1000, &mut pkts);
        }
        p.apply_pause(3, Time(0), Time(1000));
        let order: Vec<u8> = std::iter::from_fn(|| p.dequeue(Time(10), &pkts).map(|(_, c)| c.unwrap())).collect();
        assert_eq!(order, [1, 1]);
    }

    #[test]
    fn srpt_serves_the_fewest_bytes_left_first_and_ties_in_arrival_order() {
        let mut p = port(ClassService::Strict);
        p.set_order(QueueOrder::Srpt);
        let mut pool = PacketPool::default();
        // (bytes of the message left from this packet on, class)
        let left = [(50_000, 3), (2_000, 3), (49_000, 3), (2_000, 3), (0, 0), (7_000, 3)];
        for &(rest, class) in &left {
            let mut pkt = crate::wire::packet::Packet::pause(0, 1, 1000);
            pkt.kind = PacketKind::Roce;
            pkt.priority = class;
            pkt.roce.payload = if rest > 0 { 1000 } else { 0 };
            pkt.roce.dma_len = 60_000;
            pkt.roce.offset = 60_000 - rest;
            let id = pool.alloc(pkt);
            p.enqueue(class, id, 1000, &mut pool);
        }
        assert_eq!(p.queue_packets(3), 5);
        assert_eq!(p.queued(&pool).collect::<Vec<_>>(), [4, 1, 3, 5, 2, 0].map(PacketId));
        let order: Vec<u32> = std::iter::from_fn(|| p.dequeue(Time(0), &pool)).map(|(id, _)| id.0).collect();
        // Class 0 (an ACK) first under strict priority, then by bytes left, equal ranks FIFO.
        assert_eq!(order, [4, 1, 3, 5, 2, 0]);
        assert_eq!(srpt_rank(&crate::wire::packet::Packet::pause(0, 1, 64)), 0);
    }

    #[test]
    fn control_frames_go_first_and_a_flush_empties_every_queue() {
        let mut p = port(ClassService::Strict);
        let mut pool = pool(8, 100);
        p.enqueue(2, PacketId(0), 100, &mut pool);
        p.enqueue_front(2, PacketId(1), 100, &mut pool);
        p.enqueue(5, PacketId(2), 100, &mut pool);
        p.enqueue_control(PacketId(3), &mut pool);
        assert_eq!(p.queued(&pool).collect::<Vec<_>>(), vec![PacketId(1), PacketId(0), PacketId(2)]);
        assert_eq!((p.queue_packets(2), p.total_bytes()), (2, 300));
        assert_eq!(p.dequeue(Time(0), &pool), Some((PacketId(3), None)));
        assert_eq!(p.dequeue(Time(0), &pool), Some((PacketId(1), Some(2))));
        p.enqueue_control(PacketId(4), &mut pool);
        assert_eq!(p.drain_control(&pool), vec![PacketId(4)]);
        assert_eq!(p.drain_all(&pool), vec![(PacketId(0), 2), (PacketId(2), 5)]);
        assert!(!p.has_queued() && p.dequeue(Time(0), &pool).is_none());
    }
}
