//! Go-back-N (IBA 9.7.5.1.4; RoCE NICs): the responder accepts only the expected PSN and NAKs
//! the first gap once; the requester rewinds to the NAKed PSN, or to the oldest unacknowledged
//! one on a timeout, and sends everything from there again.

use super::{OutOfOrder, RecoveryScheme};
use crate::nic::qp::Qp;
use crate::wire::roce::Opcode;

pub struct GoBackN;

impl RecoveryScheme for GoBackN {
    fn on_nak(&self, qp: &mut Qp, psn: u64, _sack: u64) {
        if psn >= qp.snd_una && psn < qp.snd_nxt {
            qp.snd_nxt = psn;
        }
    }

    fn on_timeout(&self, qp: &mut Qp, from: u64) {
        qp.snd_nxt = from;
    }

    fn on_out_of_order(&self, qp: &mut Qp, _psn: u64, _op: Opcode) -> OutOfOrder {
        let nak = !qp.nak_sent;
        qp.nak_sent = true;
        OutOfOrder { keep: false, nak }
    }
}
