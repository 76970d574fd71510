//! Loss recovery behind one seam: what a NAK, a SACK and a timeout do to the requester, what the
//! responder does with an out-of-order packet, and how many packets may be in flight.
//!
//! Shipped: [`gbn`] (go-back-N, what commodity RoCE NICs do) and [`selective`] (IRN-style
//! selective repeat, Mittal et al., SIGCOMM 2018). The recovery state (SACKed PSNs, the resend
//! queue, the responder's out-of-order bitmap, the once-per-gap NAK flag) lives on the queue pair;
//! an implementation only decides how it moves. A new scheme (an ordering layer such as
//! Eunomia's) is a new file and a new [`Recovery`] variant.

pub mod gbn;
pub mod selective;

use crate::nic::qp::Qp;
use crate::units::{BitsPerSec, Time};
use crate::wire::roce::Opcode;
use serde::{Deserialize, Serialize};

/// The SACK field of a sequence NAK whose arriving packet was not kept: it reports a gap, not a
/// PSN received.
pub const NO_SACK: u64 = u64::MAX;

/// What the responder does with a packet beyond the expected PSN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfOrder {
    /// Place its payload now (if the access check passes) and remember its PSN.
    pub keep: bool,
    /// Answer with a sequence NAK carrying the PSN that arrived (as a SACK if it was kept,
    /// [`NO_SACK`] if not).
    pub nak: bool,
}

/// The hook every recovery scheme implements.
pub trait RecoveryScheme {
    /// Requester: packets allowed in flight by recovery itself (`None`: no cap of its own).
    fn window_packets(&self, _qp: &Qp, _mtu: u32, _line_rate: BitsPerSec, _window: Option<u64>) -> Option<u64> {
        None
    }
    /// Requester: a sequence NAK for `psn` (everything below it is acknowledged) reporting
    /// that `sack` arrived.
    fn on_nak(&self, qp: &mut Qp, psn: u64, sack: u64);
    /// Requester: an ordering layer's SACK (`[nic.ordering]`): `sack` arrived and was kept.
    /// It never triggers recovery; a scheme that tracks SACKs marks it (Eunomia §3.2.2).
    fn on_sack(&self, _qp: &mut Qp, _sack: u64) {}
    /// Requester: the retransmission timer fired; `from` is the oldest PSN not acknowledged.
    fn on_timeout(&self, qp: &mut Qp, from: u64);
    /// Responder: packet `psn` arrived at `now` while `qp.epsn` is still expected;
    /// `nak_interval` is `nic.nak_interval`.
    fn on_out_of_order(&self, qp: &mut Qp, psn: u64, op: Opcode, now: Time, nak_interval: Option<Time>) -> OutOfOrder;
    /// Responder: the expected packet arrived and `qp.epsn` moved past it; advance over
    /// packets already kept.
    fn on_in_order(&self, _qp: &mut Qp) {}
}

/// Loss recovery of the reliable connection (the scenario's `nic.recovery`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Recovery {
    /// Go-back-N: the receiver drops out-of-order packets and NAKs the expected PSN once; the
    /// sender rewinds to it (commodity RoCE NICs).
    GoBackN,
    /// Selective repeat in the style of IRN: the receiver keeps out-of-order packets and NAKs
    /// with the PSN that arrived (a SACK); the sender retransmits only the gaps, and its
    /// in-flight bytes are capped at one BDP.
    SelectiveRepeat,
}

macro_rules! dispatch {
    ($self:expr, $r:ident => $e:expr) => {
        match $self {
            Recovery::GoBackN => {
                let $r = gbn::GoBackN;
                $e
            }
            Recovery::SelectiveRepeat => {
                let $r = selective::SelectiveRepeat;
                $e
            }
        }
    };
}

impl RecoveryScheme for Recovery {
    #[inline]
    fn window_packets(&self, qp: &Qp, mtu: u32, line_rate: BitsPerSec, window: Option<u64>) -> Option<u64> {
        dispatch!(self, r => r.window_packets(qp, mtu, line_rate, window))
    }
    fn on_nak(&self, qp: &mut Qp, psn: u64, sack: u64) {
        dispatch!(self, r => r.on_nak(qp, psn, sack))
    }
    fn on_sack(&self, qp: &mut Qp, sack: u64) {
        dispatch!(self, r => r.on_sack(qp, sack))
    }
    fn on_timeout(&self, qp: &mut Qp, from: u64) {
        dispatch!(self, r => r.on_timeout(qp, from))
    }
    fn on_out_of_order(&self, qp: &mut Qp, psn: u64, op: Opcode, now: Time, nak_interval: Option<Time>) -> OutOfOrder {
        dispatch!(self, r => r.on_out_of_order(qp, psn, op, now, nak_interval))
    }
    #[inline]
    fn on_in_order(&self, qp: &mut Qp) {
        dispatch!(self, r => r.on_in_order(qp))
    }
}
