//! A pipeline stage of the NIC: a resource that work passes through one item at a time, each
//! item holding it for a fixed cost or for its bytes at the stage's rate (a busy-until server).
//!
//! PCIe's read and write channels are stages ([`super::pcie`]), and so is the QP scheduler's
//! decision circuit (its hardware cost model, Tassel §5: a decision every few cycles). Offload
//! engines (NAT, AES, a KV cache, the RDMA engine itself) are stages too, which is what lets an
//! isolation layer such as Yama see their throughput only through the work that completes.

use crate::units::{BitsPerSec, Time};

#[derive(Clone, Debug, Default)]
pub struct Stage {
    /// Rate for byte-sized work (`transfer`); zero for stages that charge per operation only.
    pub rate: BitsPerSec,
    free_at: Time,
    /// Work items served, bytes carried and total busy time so far.
    pub ops: u64,
    pub bytes: u64,
    pub busy: Time,
}

impl Stage {
    pub fn new(rate: BitsPerSec) -> Stage {
        Stage { rate, ..Stage::default() }
    }

    /// When the stage can take the next item.
    #[inline]
    pub fn free_at(&self) -> Time {
        self.free_at
    }

    /// Whether an item arriving at `now` would start at once.
    #[inline]
    pub fn is_free(&self, now: Time) -> bool {
        self.free_at <= now
    }

    /// An item that may start no earlier than `at` holds the stage for `cost`; returns when it
    /// is done (items are served in the order they come).
    #[inline]
    pub fn occupy(&mut self, at: Time, cost: Time) -> Time {
        let start = self.free_at.max(at);
        self.free_at = start + cost;
        self.ops += 1;
        self.busy += cost;
        self.free_at
    }

    /// `bytes` that may start no earlier than `at` pass at the stage's rate; returns when the
    /// last byte is through.
    #[inline]
    pub fn transfer(&mut self, at: Time, bytes: u64) -> Time {
        self.bytes += bytes;
        self.occupy(at, self.rate.tx_time(bytes))
    }

    /// Fraction of `[0, over)` the stage was busy, for a span that ends no earlier than any
    /// item's earliest start (the end of a run).
    pub fn utilization(&self, over: Time) -> f64 {
        if over == Time::ZERO {
            return 0.0;
        }
        self.busy_by(over).0 as f64 / over.0 as f64
    }

    /// Busy time within `[0, t)`, for a `t` no earlier than any item's earliest start: items
    /// are served in order, so the stage is busy without a gap from `t` until `free_at` when
    /// that is later, and that work is not within the span.
    pub fn busy_by(&self, t: Time) -> Time {
        self.busy.saturating_sub(self.free_at.saturating_sub(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_queue_behind_each_other() {
        let mut s = Stage::new(BitsPerSec::gbps(100));
        // 1250 bytes at 100 Gbps take 100 ns.
        assert_eq!(s.transfer(Time::ZERO, 1250), Time::from_ns(100));
        assert_eq!(s.transfer(Time::from_ns(20), 1250), Time::from_ns(200), "waits for the first");
        // Over the first 150 ns only the first 150 ns of work count: the stage was busy all along.
        assert!((s.utilization(Time::from_ns(150)) - 1.0).abs() < 1e-12);
        assert_eq!(s.transfer(Time::from_ns(500), 1250), Time::from_ns(600), "idle stage starts at once");
        assert_eq!(s.occupy(Time::from_ns(550), Time::from_ns(8)), Time::from_ns(608));
        assert_eq!((s.ops, s.bytes, s.busy), (4, 3750, Time::from_ns(308)));
        assert!((s.utilization(Time::from_ns(616)) - 0.5).abs() < 1e-12);
        assert!((s.utilization(Time::from_ns(550)) - 250.0 / 550.0).abs() < 1e-12);
        // Half of the item started at 500 ns is done at 550 ns.
        assert_eq!(s.busy_by(Time::from_ns(550)), Time::from_ns(250));
        assert_eq!(s.busy_by(Time::from_ns(5000)), Time::from_ns(308));
        assert!(!s.is_free(Time::from_ns(607)) && s.is_free(Time::from_ns(608)));
    }
}
