//! Go-back-N (IBA 9.7.5.1.4; RoCE NICs): the responder accepts only the expected PSN and NAKs
//! the first gap once; the requester rewinds to the NAKed PSN, or to the oldest unacknowledged
//! one on a timeout, and sends everything from there again.

use super::{OutOfOrder, RecoveryScheme, NO_SACK};
use crate::nic::qp::Qp;
use crate::units::Time;
use crate::wire::roce::Opcode;

pub struct GoBackN;

impl RecoveryScheme for GoBackN {
    fn on_nak(&self, qp: &mut Qp, psn: u64, sack: u64) {
        if sack == NO_SACK {
            qp.refusal_resent = Some(psn);
        }
        if psn >= qp.snd_una && psn < qp.snd_nxt {
            qp.snd_nxt = psn;
        }
    }

    fn on_timeout(&self, qp: &mut Qp, from: u64) {
        qp.snd_nxt = from;
    }

    /// One NAK per gap; with a NAK interval (ns-3's NIC, `RdmaHw::ReceiverCheckSeq`), the same
    /// gap is NAKed again once the interval has passed since the last NAK.
    fn on_out_of_order(&self, qp: &mut Qp, _psn: u64, _op: Opcode, now: Time, nak_interval: Option<Time>) -> OutOfOrder {
        let nak = !qp.nak_sent || nak_interval.is_some_and(|_| now >= qp.nak_again_at);
        qp.nak_sent = true;
        if let (true, Some(again)) = (nak, nak_interval) {
            qp.nak_again_at = now + again;
        }
        OutOfOrder { keep: false, nak }
    }
}
