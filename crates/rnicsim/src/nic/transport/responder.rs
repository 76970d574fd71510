//! The receive side of a NIC: dispatch of an arriving RoCE packet to its connection, and the
//! responder of the reliable connection (IBA 9.7.4–9.7.5): CNPs on ECN marks (DCQCN's
//! notification point, at most one per `nic.cnp_interval`), the PSN check, access checks on the
//! whole RETH range, placement by DMA, receive WQEs for SEND and WRITE-with-immediate, READ jobs,
//! and ACK coalescing (every `nic.ack_interval` packets and at every message end).

use super::recovery::{RecoveryScheme, NO_SACK};
use super::{emit, requester, Action, Ctx};
use crate::nic::events::NicEvent;
use crate::nic::qp::{packets_for, Owner, QpState, ReadJob};
use crate::nic::verbs::{Access, CompletionKind, Status};
use crate::units::Time;
use crate::nic::CnpMode;
use crate::wire::packet::{Packet, PacketId, ECN_CE};
use crate::wire::roce::{Family, Opcode, Syndrome};

/// A RoCE packet reached host `h`: it goes to its queue pair, if that is open there and
/// connected to the sender, and is then freed.
pub fn receive(ctx: &mut Ctx, h: u32, id: PacketId) {
    let pkt = *ctx.pool.get(id);
    let q = pkt.flow;
    if ctx.qps.accepts(q, h, pkt.src) {
        let op = pkt.roce.opcode;
        match op.family() {
            Family::Write | Family::Send | Family::ReadRequest => on_request(ctx, q, op, &pkt, id),
            Family::Ack => requester::on_ack(ctx, q, &pkt, id),
            Family::Cnp => {
                emit(ctx, q, NicEvent::Cnp);
                ctx.sync_rate(q);
                ctx.arm_qp_timer(q);
            }
            Family::ReadResponse => requester::on_read_response(ctx, q, &pkt, id),
            Family::OutOfBand => emit(ctx, q, NicEvent::Signal { value: pkt.roce.imm, bytes: pkt.roce.payload }),
        }
    }
    ctx.pool.free(id);
}

/// A request (WRITE, SEND or READ packet) for responder queue pair `q`.
fn on_request(ctx: &mut Ctx, q: u32, op: Opcode, pkt: &Packet, id: PacketId) {
    let now = ctx.now;
    let marked = pkt.ecn == ECN_CE;
    emit(ctx, q, NicEvent::Rx { bytes: pkt.roce.payload as u64, ecn: marked });
    if marked {
        let qp = ctx.qps.get_mut(q);
        qp.ecn_seen = true;
        if ctx.spec.cnp == CnpMode::Packet && qp.last_cnp.is_none_or(|t| now >= t + ctx.spec.cnp_interval) {
            qp.last_cnp = Some(now);
            ctx.send_control(q, Opcode::Cnp, Syndrome::Ack, 0, pkt, None);
        }
    }
    let qp = ctx.qps.get_mut(q);
    if qp.state != QpState::Ready {
        return;
    }
    let psn = pkt.seq;
    if psn < qp.epsn {
        // Duplicate: a READ is answered again (from that PSN); anything else is re-ACKed.
        if op == Opcode::ReadRequest {
            start_read(ctx, q, pkt);
        } else {
            let e = qp.epsn - 1;
            ctx.send_control(q, Opcode::Acknowledge, Syndrome::Ack, e, pkt, Some(id));
        }
        return;
    }
    if psn > qp.epsn {
        let expected = qp.epsn;
        let recovery = ctx.spec.recovery;
        let action = recovery.on_out_of_order(qp, psn, op);
        if action.keep && check_write(ctx, q, pkt) {
            place(ctx, q, pkt, id, pkt.roce.va + pkt.roce.offset as u64);
            ctx.qps.get_mut(q).ooo.set(psn);
        }
        if action.nak {
            // ns-3's NIC flags a NAK as a CNP too (ConWeave's `cnp_check`).
            if ctx.spec.cnp == CnpMode::AckFlag {
                ctx.qps.get_mut(q).ecn_seen = true;
            }
            // Only a kept packet is reported received (a SACK).
            let echo = if action.keep { *pkt } else { Packet { seq: NO_SACK, ..*pkt } };
            ctx.send_control(q, Opcode::Acknowledge, Syndrome::NakSequence, expected, &echo, Some(id));
        }
        return;
    }
    // In order.
    match op.family() {
        Family::Write => {
            if !check_write(ctx, q, pkt) {
                fail(ctx, q, pkt, Syndrome::NakRemoteAccess);
                return;
            }
            if op.has_imm() && ctx.qps.get(q).rq.is_empty() {
                rnr(ctx, q, pkt);
                return;
            }
            let placed = place(ctx, q, pkt, id, pkt.roce.va + pkt.roce.offset as u64);
            if op.is_last() {
                let qp = ctx.qps.get_mut(q);
                qp.msn += 1;
                if op.has_imm() {
                    let rwr = qp.rq.pop_front().expect("checked above");
                    ctx.complete(q, rwr.id, CompletionKind::Recv, Status::Success, pkt.roce.dma_len as u64, Some(pkt.roce.imm), placed);
                }
                message_arrived(ctx, q, placed);
            }
        }
        Family::Send => {
            let qp = ctx.qps.get_mut(q);
            if op.is_first() {
                let Some(rwr) = qp.rq.pop_front() else {
                    rnr(ctx, q, pkt);
                    return;
                };
                if rwr.len < pkt.roce.dma_len as u64 {
                    ctx.complete(q, rwr.id, CompletionKind::Recv, Status::LocalLength, 0, None, now);
                    fail(ctx, q, pkt, Syndrome::NakInvalidRequest);
                    return;
                }
                qp.recv_cur = Some(rwr);
            }
            let Some(rwr) = ctx.qps.get(q).recv_cur else {
                fail(ctx, q, pkt, Syndrome::NakInvalidRequest);
                return;
            };
            let placed = place(ctx, q, pkt, id, rwr.addr + pkt.roce.offset as u64);
            if op.is_last() {
                let qp = ctx.qps.get_mut(q);
                qp.recv_cur = None;
                qp.msn += 1;
                let imm = op.has_imm().then_some(pkt.roce.imm);
                ctx.complete(q, rwr.id, CompletionKind::Recv, Status::Success, pkt.roce.dma_len as u64, imm, placed);
                message_arrived(ctx, q, placed);
            }
        }
        Family::ReadRequest => {
            let h = ctx.qps.get(q).host as usize;
            if !ctx.nics[h].memory.check_remote(pkt.roce.rkey, pkt.roce.va, pkt.roce.dma_len as u64, Access::REMOTE_READ) {
                fail(ctx, q, pkt, Syndrome::NakRemoteAccess);
                return;
            }
            start_read(ctx, q, pkt);
            let qp = ctx.qps.get_mut(q);
            qp.msn += 1;
            qp.epsn = psn + packets_for(pkt.roce.dma_len as u64, ctx.spec.mtu) as u64;
            qp.nak_sent = false;
            qp.ooo.reset(qp.epsn);
            return;
        }
        _ => unreachable!("responder gets requests only"),
    }
    let qp = ctx.qps.get_mut(q);
    qp.epsn = psn + 1;
    qp.nak_sent = false;
    ctx.spec.recovery.on_in_order(qp);
    qp.unacked += 1;
    if qp.unacked >= ctx.spec.ack_interval || op.is_last() || pkt.roce.ack_req || qp.epsn != psn + 1 {
        qp.unacked = 0;
        let e = qp.epsn - 1;
        ctx.send_control(q, Opcode::Acknowledge, Syndrome::Ack, e, pkt, Some(id));
    }
}

/// Whether a WRITE's rkey, whole range and right check out at the responder.
fn check_write(ctx: &Ctx, q: u32, pkt: &Packet) -> bool {
    let mem = &ctx.nics[ctx.qps.get(q).host as usize].memory;
    let r = &pkt.roce;
    r.offset as u64 + r.payload as u64 <= r.dma_len as u64 && mem.check_remote(r.rkey, r.va, r.dma_len as u64, Access::REMOTE_WRITE)
}

/// DMA-writes a packet's payload to `addr`; returns when it is in host memory.
pub(super) fn place(ctx: &mut Ctx, q: u32, pkt: &Packet, id: PacketId, addr: u64) -> Time {
    let nic = &mut ctx.nics[ctx.qps.get(q).host as usize];
    let done = nic.pcie.write_payload(ctx.now, pkt.roce.payload as u64);
    if nic.memory.has_bytes() && pkt.roce.payload > 0 {
        let data = ctx.pool.payload(id);
        let end = (addr + data.len() as u64).min(nic.memory.size());
        if addr < end {
            nic.memory.write(addr, &data[..(end - addr) as usize]);
        }
    }
    done
}

/// A whole message is in the responder's memory at `placed` (applications polling memory).
fn message_arrived(ctx: &mut Ctx, q: u32, placed: Time) {
    let owner = ctx.qps.get(q).owner;
    if owner != Owner::HOST {
        ctx.out.push(Action::Message { owner, placed });
    }
}

/// No receive WQE for a SEND or WRITE with immediate: RNR NAK.
fn rnr(ctx: &mut Ctx, q: u32, pkt: &Packet) {
    let e = ctx.qps.get(q).epsn;
    ctx.send_control(q, Opcode::Acknowledge, Syndrome::RnrNak, e, pkt, None);
}

/// The responder rejects a request: NAK with `syndrome`, and its queue pair fails.
fn fail(ctx: &mut Ctx, q: u32, pkt: &Packet, syndrome: Syndrome) {
    ctx.send_control(q, Opcode::Acknowledge, syndrome, pkt.seq, pkt, None);
    ctx.qp_error(q, None, Status::Flushed, ctx.now);
}

/// Queues the READ responses a request asks for.
fn start_read(ctx: &mut Ctx, q: u32, pkt: &Packet) {
    let len = pkt.roce.dma_len as u64;
    let npkts = packets_for(len, ctx.spec.mtu);
    let qp = ctx.qps.get_mut(q);
    // A repeated request supersedes what was being answered from that PSN on.
    qp.reads.retain(|j| j.first_psn + (j.npkts as u64) <= pkt.seq);
    qp.reads.push_back(ReadJob { first_psn: pkt.seq, npkts, next: 0, va: pkt.roce.va, len });
    ctx.requeue(q);
}
