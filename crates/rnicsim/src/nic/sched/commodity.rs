//! The commodity RNIC scheduler (SCR §4.2 and Table 2): round robin over the active queue pairs,
//! serving each for a turn of whole WQEs until the turn has carried at least `turn_bytes` (the
//! NIC fetches and executes a QP's WQEs in batches and never splits a message; with
//! `max_turn_bytes` a turn also ends inside a message once it carried that much). A QP posting
//! large messages therefore gets more bandwidth than one posting small ones, and a small message
//! waits behind a large one in progress. With the default 32 KiB, a 4 KB-message QP facing a
//! 64 KB-message QP gets 32/(32+64) of the link, near SCR Table 2's 33 vs 58 Gbps. Queue pairs
//! held back by their rate limit wait in a heap keyed by their eligibility time; a queue pair
//! whose wait a rate change re-timed ([`QpScheduler::reschedule`]) gets a new entry, and the old
//! one is skipped when it comes up. A QP that answers READs while it sends its own requests
//! alternates the two packet by packet (`requester::build_next`); its turn ends at the end of
//! either message, since two streams that never pause together would otherwise keep it forever.
//!
//! [`Commodity::packet_round_robin`] is the same machinery with one packet per turn and no cost:
//! ns-3's NIC.
//!
//! Cost model (Tassel Fig. 1/14): the scheduler keeps `rate_context_cache` rate-limit contexts;
//! with more rate-limited queue pairs, a decision misses with probability `1 − cache / n` and
//! pays `miss_penalty` (the expected cost is charged on every decision, so runs stay
//! deterministic). A decision overlaps the previous packet's transmission, so misses cost
//! throughput only once they exceed a packet time: with the defaults (1024 contexts, 133 ns),
//! 16K rate-limited QPs of 1 KB packets lose about a third of line rate, as BlueField-3 does in
//! Fig. 14.

use super::{Pick, QpScheduler};
use crate::units::{BitsPerSec, Time};
use tassel::WqeSource;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

pub struct Commodity {
    turn_bytes: u64,
    /// A turn ends inside a message once it has carried this much (`u64::MAX`: never).
    max_turn: u64,
    /// Turns of one packet, whatever the message (ns-3's NIC).
    per_packet: bool,
    ready: VecDeque<u32>,
    waiting: BinaryHeap<Reverse<(Time, u64, u32)>>,
    seq: u64,
    /// The sequence number of each waiting queue pair's live entry in `waiting` (a map over
    /// the waiting ones only: queue-pair numbers are global, so a vector would cost every NIC a
    /// slot per queue pair in the fabric).
    live: BTreeMap<u32, u64>,
    /// The queue pair in its turn and the bytes it has sent in that turn.
    current: Option<(u32, u64)>,
    /// The last popped queue pair keeps its turn (goes back to the front) when pushed again.
    keep_turn: Option<u32>,
    link: BitsPerSec,
    /// Which queue pairs have a rate limit below line rate (a bit per queue-pair number, which
    /// is fabric-wide), and how many.
    limited: Vec<u64>,
    limited_count: u32,
    cache: u32,
    miss_penalty: Time,
}

impl Commodity {
    pub fn new(turn_bytes: u64, cache: u32, miss_penalty: Time, link: BitsPerSec) -> Commodity {
        Commodity {
            turn_bytes,
            max_turn: u64::MAX,
            per_packet: false,
            ready: VecDeque::new(),
            waiting: BinaryHeap::new(),
            seq: 0,
            live: BTreeMap::new(),
            current: None,
            keep_turn: None,
            link,
            limited: Vec::new(),
            limited_count: 0,
            cache,
            miss_penalty,
        }
    }

    /// Turns that also end inside a message once they carried `bytes` (`max_turn_bytes`).
    pub fn with_max_turn(self, bytes: u64) -> Commodity {
        Commodity { max_turn: bytes.max(1), ..self }
    }

    /// Per-packet round robin with no decision cost: the queue-pair selection of HPCC's and
    /// ConWeave's ns-3 NIC (`RdmaEgressQueue::GetNextQindex`), where each packet goes to the
    /// next eligible queue pair after the one served last.
    pub fn packet_round_robin(link: BitsPerSec) -> Commodity {
        Commodity { per_packet: true, ..Commodity::new(0, u32::MAX, Time::ZERO, link) }
    }

    fn mark_limited(&mut self, qp: u32, limited: bool) {
        let (word, bit) = (qp as usize / 64, 1u64 << (qp % 64));
        if self.limited.len() <= word {
            if !limited {
                return;
            }
            self.limited.resize(word + 1, 0);
        }
        if (self.limited[word] & bit != 0) != limited {
            self.limited[word] ^= bit;
            if limited {
                self.limited_count += 1;
            } else {
                self.limited_count -= 1;
            }
        }
    }

    pub fn len(&self) -> usize {
        self.ready.len() + self.live.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl QpScheduler for Commodity {
    fn push(&mut self, qp: u32, at: Time, now: Time) {
        if at <= now {
            if self.keep_turn == Some(qp) {
                self.ready.push_front(qp);
            } else {
                self.ready.push_back(qp);
            }
        } else {
            if self.current.is_some_and(|(c, _)| c == qp) {
                self.current = None; // a rate-limited QP loses its turn
            }
            self.seq += 1;
            self.waiting.push(Reverse((at, self.seq, qp)));
            self.live.insert(qp, self.seq);
        }
        self.keep_turn = None;
    }

    fn pop(&mut self, now: Time, _src: &mut dyn WqeSource) -> Pick {
        while let Some(&Reverse((t, seq, qp))) = self.waiting.peek() {
            let live = self.live.get(&qp) == Some(&seq);
            if live && t > now {
                break;
            }
            self.waiting.pop();
            if live {
                self.live.remove(&qp);
                self.ready.push_back(qp);
            }
        }
        match self.ready.pop_front() {
            Some(qp) => {
                if self.current.is_none_or(|(c, _)| c != qp) {
                    self.current = Some((qp, 0));
                }
                Pick::Qp(qp)
            }
            None => Pick::Idle(self.waiting.peek().map(|Reverse((t, _, _))| *t)),
        }
    }

    fn sent(&mut self, qp: u32, bytes: u32, message_end: bool) {
        if self.per_packet {
            self.current = None;
            return;
        }
        let Some((c, served)) = self.current else { return };
        if c != qp {
            return;
        }
        let served = served + bytes as u64;
        if (message_end && served >= self.turn_bytes) || served >= self.max_turn {
            self.current = None;
            return;
        }
        self.current = Some((c, served));
        self.keep_turn = Some(qp);
    }

    fn set_rate(&mut self, qp: u32, bps: u64, _now: Time) {
        self.mark_limited(qp, bps < self.link.0);
    }

    fn remove(&mut self, qp: u32) {
        self.mark_limited(qp, false);
    }

    fn reschedule(&mut self, qp: u32, at: Time, now: Time) {
        // A waiting queue pair's old entry in `waiting` goes stale.
        let waiting = self.live.remove(&qp).is_some();
        if !waiting {
            if at <= now {
                return;
            }
            // Ready, but its gap now ends later: back to waiting (rare: a rate cut while the
            // queue pair waits for the port).
            self.ready.retain(|&x| x != qp);
        }
        self.push(qp, at, now);
    }

    fn decision_time(&self) -> Time {
        let n = self.limited_count as u64;
        if n <= self.cache as u64 {
            return Time::ZERO;
        }
        // Expected penalty: (1 − cache/n) × miss_penalty.
        Time(self.miss_penalty.0 * (n - self.cache as u64) / n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoPackets;
    impl WqeSource for NoPackets {
        fn fetch(&mut self, _: u32, _: u32, _: u32, _: &mut Vec<u32>) {}
        fn consume(&mut self, _: u32) {}
    }

    /// Serves `packets` picks (of 1 byte each) with two always-backlogged QPs whose messages
    /// are `msg[q]` packets.
    fn serve(turn: u64, msg: [u32; 2], packets: usize) -> [usize; 2] {
        serve_split(Commodity::new(turn, 1024, Time::ZERO, BitsPerSec(1)), msg, packets)
    }

    #[test]
    fn a_turn_ends_inside_a_large_message_only_with_max_turn_bytes() {
        // A 1000-packet message beside 4-packet ones, turns of 8: whole messages give the
        // large one 1000 of the first 1008 picks; split at 16 its turns carry 16 and the
        // small one's 8 (two messages), a 2:1 split.
        assert_eq!(serve(8, [1000, 4], 1008), [1000, 8]);
        assert_eq!(serve_split(Commodity::new(8, 1024, Time::ZERO, BitsPerSec(1)).with_max_turn(16), [1000, 4], 1008), [672, 336]);
    }

    fn serve_split(mut s: Commodity, msg: [u32; 2], packets: usize) -> [usize; 2] {
        let mut left = msg;
        let mut count = [0; 2];
        s.push(0, Time::ZERO, Time::ZERO);
        s.push(1, Time::ZERO, Time::ZERO);
        for _ in 0..packets {
            let Pick::Qp(q) = s.pop(Time::ZERO, &mut NoPackets) else { panic!() };
            count[q as usize] += 1;
            left[q as usize] -= 1;
            let end = left[q as usize] == 0;
            if end {
                left[q as usize] = msg[q as usize];
            }
            s.sent(q, 1, end);
            s.push(q, Time::ZERO, Time::ZERO);
        }
        count
    }

    #[test]
    fn whole_wqes_per_turn_favor_large_messages() {
        // One WQE per turn: 1-packet messages against 16-packet ones get 1/17 of the packets.
        assert_eq!(serve(1, [1, 16], 17 * 100), [100, 1600]);
        // Turns of at least 8 bytes: eight 1-byte messages against one 16-byte message.
        assert_eq!(serve(8, [1, 16], 24 * 10), [80, 160]);
        // A turn never splits a message: 3-byte messages with a 4-byte turn send 6 per turn.
        assert_eq!(serve(4, [3, 3], 120), [60, 60]);
        assert_eq!(serve(4, [3, 16], 22 * 5), [30, 80]);
    }

    #[test]
    fn packet_round_robin_alternates_packets_whatever_the_messages() {
        // One packet per turn: 1-packet messages against 16-packet ones share packets evenly.
        let mut s = Commodity::packet_round_robin(BitsPerSec(1));
        let mut left = [1u32, 16];
        let mut order = Vec::new();
        s.push(0, Time::ZERO, Time::ZERO);
        s.push(1, Time::ZERO, Time::ZERO);
        for _ in 0..8 {
            let Pick::Qp(q) = s.pop(Time::ZERO, &mut NoPackets) else { panic!() };
            order.push(q);
            left[q as usize] -= 1;
            let end = left[q as usize] == 0;
            if end {
                left[q as usize] = [1, 16][q as usize];
            }
            s.sent(q, 1000, end);
            s.push(q, Time::ZERO, Time::ZERO);
        }
        assert_eq!(order, [0, 1, 0, 1, 0, 1, 0, 1]);
        assert_eq!(s.decision_time(), Time::ZERO);
    }

    #[test]
    fn rate_limited_qps_wait_for_their_time() {
        let mut s = Commodity::new(1, 1024, Time::ZERO, BitsPerSec(1));
        s.push(7, Time(100), Time::ZERO);
        assert_eq!(s.pop(Time::ZERO, &mut NoPackets), Pick::Idle(Some(Time(100))));
        assert_eq!(s.pop(Time(100), &mut NoPackets), Pick::Qp(7));
        assert_eq!(s.pop(Time(100), &mut NoPackets), Pick::Idle(None));
    }

    #[test]
    fn a_rescheduled_queue_pair_leaves_at_its_new_time_once() {
        let mut s = Commodity::new(1, 1024, Time::ZERO, BitsPerSec(1));
        s.push(7, Time(1000), Time::ZERO);
        s.push(8, Time(500), Time::ZERO);
        // A rate rise brings 7 forward past 8; its old entry is skipped when it comes up.
        s.reschedule(7, Time(200), Time(100));
        assert_eq!(s.len(), 2);
        assert_eq!(s.pop(Time(100), &mut NoPackets), Pick::Idle(Some(Time(200))));
        assert_eq!(s.pop(Time(200), &mut NoPackets), Pick::Qp(7));
        assert_eq!(s.pop(Time(600), &mut NoPackets), Pick::Qp(8));
        assert_eq!(s.pop(Time(1000), &mut NoPackets), Pick::Idle(None));
        // A rate cut moves a ready queue pair back to waiting, and one already due stays ready.
        s.push(9, Time(1000), Time(1000));
        s.push(10, Time(1000), Time(1000));
        s.reschedule(9, Time(3000), Time(1000));
        s.reschedule(10, Time(900), Time(1000));
        assert_eq!(s.pop(Time(1000), &mut NoPackets), Pick::Qp(10));
        assert_eq!(s.pop(Time(1000), &mut NoPackets), Pick::Idle(Some(Time(3000))));
        assert_eq!(s.pop(Time(3000), &mut NoPackets), Pick::Qp(9));
        assert!(s.is_empty());
    }

    #[test]
    fn rate_context_misses_cost_time_beyond_the_cache() {
        let mut s = Commodity::new(1, 1024, Time::from_ns(40), BitsPerSec(100));
        for q in 0..1024 {
            s.set_rate(q, 10, Time::ZERO);
        }
        assert_eq!(s.decision_time(), Time::ZERO, "within the cache");
        for q in 1024..16384 {
            s.set_rate(q, 10, Time::ZERO);
        }
        // 15/16 of decisions miss: 37.5 ns each on average.
        assert_eq!(s.decision_time(), Time(37_500));
        for q in 1024..16384 {
            s.remove(q);
        }
        assert_eq!(s.decision_time(), Time::ZERO);
    }
}
