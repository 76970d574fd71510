//! IRN-style selective repeat (Mittal et al., SIGCOMM 2018, §3.1–3.2): the responder keeps
//! out-of-order WRITE data it can place and answers every out-of-order packet with a NAK that
//! carries the arriving PSN (a SACK); the requester resends only the PSNs not reported, and
//! keeps at most one bandwidth-delay product in flight (`nic.window` overrides it). An
//! out-of-order packet it cannot place (SEND, WRITE with immediate: they need their receive
//! WQE in order) is dropped and its NAK carries no SACK, so the requester resends it too.

use super::{OutOfOrder, RecoveryScheme, NO_SACK};
use crate::nic::qp::{Qp, SACK_RANGE};
use crate::units::{BitsPerSec, Time};
use crate::wire::roce::{Family, Opcode};

pub struct SelectiveRepeat;

impl RecoveryScheme for SelectiveRepeat {
    #[inline]
    fn window_packets(&self, qp: &Qp, mtu: u32, line_rate: BitsPerSec, window: Option<u64>) -> Option<u64> {
        let bytes = window.unwrap_or_else(|| line_rate.bytes_in(qp.base_rtt));
        Some(bytes.div_ceil(mtu as u64).max(1))
    }

    fn on_nak(&self, qp: &mut Qp, psn: u64, sack: u64) {
        // A packet the responder could not keep (an out-of-order SEND, say, or one an ordering
        // layer refused) is a gap, not a SACK: everything sent and not reported received goes
        // again, once.
        let upto = if sack == NO_SACK { qp.snd_nxt } else { sack.min(qp.snd_nxt) };
        if sack != NO_SACK {
            qp.sacked.set(sack);
        }
        let from = qp.resend_high.max(qp.snd_una);
        if sack == NO_SACK && qp.refusal_resent.is_none_or(|r| psn > r) {
            // A refusal NACK for an expected PSN not NACKed so before: the responder dropped
            // a packet at or past `psn`, perhaps one already resent (refused again, past the
            // bitmap's cap or with the memory full). Resend from `psn` even below
            // `resend_high`, once per NACKed PSN (the responder NACKs a PSN once per gap, and
            // a repeated NACK of it resends nothing twice), so no NACK storm loops.
            qp.refusal_resent = Some(psn);
            for p in psn.max(qp.snd_una)..from.min(upto) {
                if !qp.sacked.get(p) && !qp.resend.contains(&p) && !read_request_held(qp, p) {
                    qp.resend.push_back(p);
                }
            }
        }
        // After a refusal, a READ whose request the responder holds is not asked for again.
        let refusal = sack == NO_SACK;
        for p in from..upto {
            let held = refusal && read_request_held(qp, p);
            if !qp.sacked.get(p) && !held {
                qp.resend.push_back(p);
            }
        }
        qp.resend_high = qp.resend_high.max(if sack == NO_SACK { upto } else { sack + 1 });
    }

    fn on_sack(&self, qp: &mut Qp, sack: u64) {
        if sack < qp.snd_nxt {
            qp.sacked.set(sack);
        }
    }

    fn on_timeout(&self, qp: &mut Qp, from: u64) {
        qp.resend.clear();
        let end = qp.snd_nxt;
        for p in from..end {
            if !qp.sacked.get(p) {
                qp.resend.push_back(p);
            }
        }
        qp.resend_high = end;
    }

    fn on_out_of_order(&self, qp: &mut Qp, psn: u64, op: Opcode, _now: Time, _nak_interval: Option<Time>) -> OutOfOrder {
        // Plain WRITE data within the tracked range can be placed where it belongs.
        let keep = op.family() == Family::Write && !op.has_imm() && psn - qp.epsn < SACK_RANGE;
        OutOfOrder { keep, nak: true }
    }

    #[inline]
    fn on_in_order(&self, qp: &mut Qp) {
        qp.ooo.advance_to(qp.epsn);
        qp.epsn = qp.ooo.advance_over_set();
    }
}

/// Whether PSN `p` belongs to a READ whose request the responder reported holding (its first
/// PSN SACKed): a refusal NACK need not ask for it again, the responses' own stream recovers
/// what they lose.
fn read_request_held(qp: &Qp, p: u64) -> bool {
    qp.entry_of(p).map(|i| qp.sq[i]).is_some_and(|e| e.is_read() && qp.sacked.get(e.first_psn))
}
