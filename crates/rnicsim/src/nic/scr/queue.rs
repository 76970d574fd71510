//! SCR's event queues and coalescing (paper §4.3.2).
//!
//! One queue per flow and event kind, single producer (the collector) and single consumer (the
//! thread the flow is steered to). Events that arrive while the queue waits for its thread are
//! folded into one by the queue's strategy, so the thread handles one event for all of them:
//! - *accumulate*: sums bytes and counts (the only strategy the ASIC offers);
//! - *keep-latest* / *keep-oldest*: the newest or the first event stands for all;
//! - *threshold*: accumulates, and once the policy reports the flow's rate stable, the thread
//!   only parks the events (a few cycles) until `nic.scr.threshold` bytes have accumulated, then
//!   runs the policy once for all of them.
//!
//! A hardware queue is a counter in the ASIC and never overflows. A software queue is a ring of
//! `depth` entries in the cores' memory: an event that finds it full is dropped and counted.

use super::event::{Kind, ScrEvent};
use serde::{Deserialize, Serialize};

/// How a queue folds the events waiting in it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    #[default]
    Accumulate,
    KeepLatest,
    KeepOldest,
    /// Accumulate; once the flow is stable, run the policy only per threshold of bytes.
    Threshold,
}

impl Strategy {
    /// The name a scenario gives it.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Accumulate => "accumulate",
            Strategy::KeepLatest => "keep_latest",
            Strategy::KeepOldest => "keep_oldest",
            Strategy::Threshold => "threshold",
        }
    }
}

/// One flow's queue of one event kind: one cache line (the folded event and its count), so a
/// collector's push and a thread's take touch one line each.
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
pub struct EventQueue {
    /// The waiting events folded into one (meaningful while `entries > 0`).
    folded: ScrEvent,
    /// Collected events waiting (software: ring entries in use).
    pub entries: u32,
    /// Whether the queue is on its thread's ready list.
    pub ready: bool,
}

impl Default for EventQueue {
    fn default() -> EventQueue {
        let zero = crate::units::Time::ZERO;
        let folded = ScrEvent { kind: super::event::Kind::Tx, flow: 0, at: zero, first_at: zero, bytes: 0, count: 0, rtt: zero, value: 0, aux: 0 };
        EventQueue { folded, entries: 0, ready: false }
    }
}

impl EventQueue {
    /// Adds an event; false if the ring (of `depth` entries; `None`: a hardware counter) was
    /// full and the event was dropped (the caller counts it).
    #[inline]
    pub fn push(&mut self, ev: ScrEvent, strategy: Strategy, depth: Option<u32>) -> bool {
        if depth.is_some_and(|d| self.entries >= d) {
            return false;
        }
        self.folded = if self.entries == 0 { ev } else { fold(self.folded, ev, strategy) };
        self.entries += 1;
        true
    }

    /// Takes the folded event, emptying the queue.
    #[inline]
    pub fn take(&mut self) -> Option<ScrEvent> {
        let had = self.entries > 0;
        self.entries = 0;
        had.then_some(self.folded)
    }

    /// The kind and number of the events waiting (folded into one), if any.
    pub fn waiting(&self) -> Option<(Kind, u64)> {
        (self.entries > 0).then_some((self.folded.kind, self.folded.count as u64))
    }

    /// Bytes waiting.
    pub fn bytes(&self) -> u64 {
        if self.entries > 0 {
            self.folded.bytes
        } else {
            0
        }
    }
}

/// Folds a newer event into an older one of the same flow and kind.
#[inline]
pub fn fold(old: ScrEvent, new: ScrEvent, strategy: Strategy) -> ScrEvent {
    let count = old.count + new.count;
    match strategy {
        Strategy::Accumulate | Strategy::Threshold => ScrEvent {
            at: new.at,
            first_at: old.first_at,
            bytes: old.bytes + new.bytes,
            count,
            // The newest RTT sample and signal value (and telemetry reading); RX counts the
            // ECN-marked packets, so a mark folded under an unmarked packet is not lost.
            rtt: new.rtt,
            value: if old.kind == Kind::Rx { old.value.saturating_add(new.value) } else { new.value },
            aux: new.aux,
            ..old
        },
        Strategy::KeepLatest => ScrEvent { first_at: old.first_at, count, ..new },
        Strategy::KeepOldest => ScrEvent { at: new.at, count, ..old },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Time;

    fn ev(at_ns: u64, bytes: u64, rtt_ns: u64, value: u32) -> ScrEvent {
        let at = Time::from_ns(at_ns);
        ScrEvent { kind: Kind::Tx, flow: 3, at, first_at: at, bytes, count: 1, rtt: Time::from_ns(rtt_ns), value, aux: 0 }
    }

    fn run(strategy: Strategy, depth: Option<u32>) -> (Option<ScrEvent>, u64) {
        let mut q = EventQueue::default();
        let mut dropped = 0;
        for (i, b) in [1000u64, 2000, 4000, 8000].iter().enumerate() {
            dropped += !q.push(ev(10 * (i as u64 + 1), *b, 100 + i as u64, i as u32), strategy, depth) as u64;
        }
        (q.take(), dropped)
    }

    #[test]
    fn accumulate_sums_bytes_and_keeps_the_span_and_newest_sample() {
        let (e, dropped) = run(Strategy::Accumulate, None);
        let e = e.unwrap();
        assert_eq!((e.bytes, e.count, dropped), (15_000, 4, 0));
        assert_eq!((e.first_at, e.at), (Time::from_ns(10), Time::from_ns(40)));
        assert_eq!((e.rtt, e.value), (Time::from_ns(103), 3));
    }

    #[test]
    fn folded_rx_events_count_their_ecn_marked_packets() {
        // Marked, unmarked, marked, unmarked: the batch stands for two marked packets.
        let mut q = EventQueue::default();
        for (i, marked) in [1, 0, 1, 0].into_iter().enumerate() {
            let e = ScrEvent { kind: Kind::Rx, ..ev(10 * (i as u64 + 1), 1000, 0, marked) };
            assert!(q.push(e, Strategy::Accumulate, None));
        }
        let e = q.take().unwrap();
        assert_eq!((e.count, e.bytes, e.value), (4, 4000, 2));
    }

    #[test]
    fn keep_latest_and_keep_oldest_keep_one_event_and_count_all() {
        let latest = run(Strategy::KeepLatest, None).0.unwrap();
        assert_eq!((latest.bytes, latest.rtt, latest.value, latest.count), (8000, Time::from_ns(103), 3, 4));
        assert_eq!((latest.first_at, latest.at), (Time::from_ns(10), Time::from_ns(40)));
        let oldest = run(Strategy::KeepOldest, None).0.unwrap();
        assert_eq!((oldest.bytes, oldest.rtt, oldest.value, oldest.count), (1000, Time::from_ns(100), 0, 4));
        assert_eq!((oldest.first_at, oldest.at), (Time::from_ns(10), Time::from_ns(40)));
    }

    #[test]
    fn a_full_ring_drops_and_counts_what_it_cannot_hold() {
        // A ring of two: the third and fourth events are lost, bytes and all.
        let (e, dropped) = run(Strategy::Accumulate, Some(2));
        let e = e.unwrap();
        assert_eq!((e.bytes, e.count, dropped), (3000, 2, 2));
        // Keep-latest with a full ring keeps the newest event it could hold, not the newest sent.
        let (e, _) = run(Strategy::KeepLatest, Some(2));
        assert_eq!(e.unwrap().bytes, 2000);
        // Taking empties the ring; it accepts events again.
        let mut q = EventQueue::default();
        q.push(ev(1, 1, 0, 0), Strategy::Accumulate, Some(1));
        assert!(!q.push(ev(2, 1, 0, 0), Strategy::Accumulate, Some(1)));
        assert_eq!(q.take().unwrap().count, 1);
        assert!(q.push(ev(3, 5, 0, 0), Strategy::Accumulate, Some(1)));
        assert_eq!(q.bytes(), 5);
    }
}
