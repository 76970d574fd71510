//! The NIC's connection table: every queue pair's state, reached only through this type.
//!
//! Opening takes a free slot (a destroyed queue pair's slot after a quarantine, so stray packets
//! of the old connection find it free) or a new one; closing quarantines it. The transport looks
//! a connection up for every packet it sends ([`QpTable::access`]) and receives
//! ([`QpTable::lookup_rx`]); each lookup goes through a [`StateCache`], the hook where a
//! connection-state cache (StaR §II-B: on-chip state for a few hundred connections, the rest
//! fetched over PCIe on a miss) charges its miss: the returned time is when the state is on the
//! NIC. The default cache holds every connection.

use super::qp::{Qp, QpState};
use crate::sim::TimerId;
use crate::units::Time;
use std::collections::VecDeque;

/// How long a destroyed queue pair's slot waits before reuse.
pub const QP_QUARANTINE: Time = Time::from_ms(2);

/// Where a NIC keeps connection state, as the transport sees it: each access says when the
/// state is available (`now` on a hit).
pub trait StateCache {
    fn access(&mut self, host: u32, qp: u32, now: Time) -> Time;
}

/// All connection state on the NIC: every access hits.
#[derive(Clone, Debug, Default)]
pub struct Unlimited;

impl StateCache for Unlimited {
    #[inline]
    fn access(&mut self, _: u32, _: u32, now: Time) -> Time {
        now
    }
}

/// The cache models a NIC can have, dispatched without trait objects.
#[derive(Clone, Debug, Default)]
pub enum CacheModel {
    #[default]
    Unlimited,
}

impl StateCache for CacheModel {
    #[inline]
    fn access(&mut self, host: u32, qp: u32, now: Time) -> Time {
        match self {
            CacheModel::Unlimited => Unlimited.access(host, qp, now),
        }
    }
}

/// Connection-table counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableStats {
    pub lookups: u64,
    /// Lookups whose state was not on the NIC at once.
    pub misses: u64,
}

pub struct QpTable {
    slots: Vec<Qp>,
    /// Closed slots and when each may be reused, oldest first.
    free: VecDeque<(Time, u32)>,
    /// Connections opened so far (seeds each new connection's UDP source port).
    opened: u64,
    pub cache: CacheModel,
    pub stats: TableStats,
}

impl Default for QpTable {
    fn default() -> Self {
        QpTable { slots: Vec::new(), free: VecDeque::new(), opened: 0, cache: CacheModel::default(), stats: TableStats::default() }
    }
}

impl QpTable {
    /// A slot for a new connection at `now`: a quarantined slot whose time is up, or a new one
    /// (made by `new_slot` with its index). Returns the index and how many were opened before.
    pub fn open(&mut self, now: Time, new_slot: impl FnOnce(u32) -> Qp) -> (u32, u64) {
        let q = match self.free.front() {
            Some(&(t, q)) if t <= now => {
                self.free.pop_front();
                q
            }
            _ => {
                let q = self.slots.len() as u32;
                self.slots.push(new_slot(q));
                q
            }
        };
        let serial = self.opened;
        self.opened += 1;
        (q, serial)
    }

    /// Marks `q` free; its slot is reused after [`QP_QUARANTINE`]. Returns its timer and host
    /// if it was open.
    pub fn close(&mut self, q: u32, now: Time) -> Option<(TimerId, u32)> {
        let qp = self.slots.get_mut(q as usize)?;
        if qp.state == QpState::Free {
            return None;
        }
        qp.state = QpState::Free;
        qp.sq.clear();
        qp.rq.clear();
        qp.reads.clear();
        qp.resend.clear();
        qp.reads_posted = 0;
        self.free.push_back((now + QP_QUARANTINE, q));
        Some((qp.timer, qp.host))
    }

    #[inline]
    pub fn get(&self, q: u32) -> &Qp {
        &self.slots[q as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, q: u32) -> &mut Qp {
        &mut self.slots[q as usize]
    }

    /// The queue pair if `q` names an open one (the verbs API checks user-given numbers).
    pub fn find(&self, q: u32) -> Option<&Qp> {
        self.slots.get(q as usize).filter(|qp| qp.state != QpState::Free)
    }

    /// The sender of a packet (a queue pair of host `host`) looks its connection up; returns
    /// when the state is available.
    #[inline]
    pub fn access(&mut self, q: u32, now: Time) -> Time {
        let host = self.slots[q as usize].host;
        self.charge(host, q, now)
    }

    /// A packet for queue pair `q` from node `src` reached host `host`: the connection, if it
    /// is open there and connected to `src`, and when its state is available.
    #[inline]
    pub fn lookup_rx(&mut self, q: u32, host: u32, src: u32, now: Time) -> Option<Time> {
        let qp = self.slots.get(q as usize)?;
        if qp.state == QpState::Free || qp.host != host || qp.peer_node != src {
            return None;
        }
        Some(self.charge(host, q, now))
    }

    #[inline]
    fn charge(&mut self, host: u32, q: u32, now: Time) -> Time {
        self.stats.lookups += 1;
        let at = self.cache.access(host, q, now);
        if at > now {
            self.stats.misses += 1;
        }
        at
    }

    /// Every slot, open or not, with its index (outputs and samplers).
    pub fn iter(&self) -> impl Iterator<Item = (u32, &Qp)> {
        self.slots.iter().enumerate().map(|(i, q)| (i as u32, q))
    }

    /// Slots allocated.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}
