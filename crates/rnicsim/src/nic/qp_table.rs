//! The NIC's connection table: every queue pair's state, reached only through this type.
//!
//! Opening takes a free slot (a destroyed queue pair's slot after a quarantine, so stray packets
//! of the old connection find it free) or a new one; closing quarantines it. Whether a
//! connection's state is on the NIC when a packet needs it is the concern of the NIC's
//! connection-state cache ([`super::state_cache`]), which the NIC's receive and transmit
//! pipelines consult before a packet reaches the transport.

use super::qp::{Qp, QpState};
use crate::sim::TimerId;
use crate::units::Time;
use std::collections::VecDeque;

/// How long a destroyed queue pair's slot waits before reuse.
pub const QP_QUARANTINE: Time = Time::from_ms(2);

#[derive(Default)]
pub struct QpTable {
    slots: Vec<Qp>,
    /// Closed slots and when each may be reused, oldest first.
    free: VecDeque<(Time, u32)>,
    /// Connections opened so far (seeds each new connection's UDP source port).
    opened: u64,
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

    /// Whether a packet for queue pair `q` from node `src` that reached host `host` belongs to
    /// an open connection there.
    #[inline]
    pub fn accepts(&self, q: u32, host: u32, src: u32) -> bool {
        self.slots.get(q as usize).is_some_and(|qp| qp.state != QpState::Free && qp.host == host && qp.peer_node == src)
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
