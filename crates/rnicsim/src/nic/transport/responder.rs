//! The receive side of a NIC: dispatch of an arriving RoCE packet to its connection, and the
//! responder of the reliable connection (IBA 9.7.4–9.7.5): CNPs on ECN marks (DCQCN's
//! notification point, at most one per `nic.cnp_interval`), the PSN check, access checks on the
//! whole RETH range, placement by DMA, receive WQEs for SEND and WRITE-with-immediate, READ jobs,
//! and ACK coalescing (every `nic.ack_interval` packets and at every message end).

use super::recovery::{Recovery, RecoveryScheme, NO_SACK};
use super::{emit, requester, Action, Ctx};
use crate::nic::cc::CongestionControl as _;
use crate::nic::events::NicEvent;
use crate::nic::qp::{packets_for, HeldEnd, HeldRead, Owner, QpState, ReadJob};
use crate::nic::verbs::{Access, CompletionKind, RecvWr, Status};
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
            Family::OutOfBand => match op {
                Opcode::ProbeRequest => ctx.answer_probe(q, &pkt),
                // The probe's send time, echoed (the response's own `ts` is its send time).
                Opcode::ProbeResponse => emit(ctx, q, NicEvent::RttProbe { rtt: ctx.now.saturating_sub(Time(pkt.roce.va)), sport: pkt.roce.imm as u16 }),
                _ => emit(ctx, q, NicEvent::Signal { value: pkt.roce.imm, bytes: pkt.roce.payload }),
            },
        }
    }
    ctx.pool.free(id);
}

/// A data packet of queue pair `q` reached it (a request its responder, a READ response its
/// requester): its RX event, and the DCQCN notification point (RoCEv2 Annex A17): a CE-marked
/// one asks its sender to slow down, by a CNP at most once per `cnp_interval`, or (`cnp =
/// "ack_flag"`) by a flag on the ACK that answers it. `acked`: an ACK of ours answers it (a
/// request); READ responses are answered by none, so they always take a CNP: their sender, the
/// responder, is rate controlled as any sender is.
pub(super) fn data_arrived(ctx: &mut Ctx, q: u32, pkt: &Packet, acked: bool) {
    let marked = pkt.ecn == ECN_CE;
    emit(ctx, q, NicEvent::Rx { bytes: pkt.roce.payload as u64, ecn: marked });
    if !marked {
        return;
    }
    let now = ctx.now;
    let qp = ctx.qps.get_mut(q);
    // What the next ACK owes its sender (a CNP leaves it owed); a READ response is answered by
    // no ACK, so its mark is not owed to one.
    let owed = qp.ecn_seen;
    qp.ecn_seen = true;
    if (ctx.spec.cnp == CnpMode::Packet || !acked) && qp.last_cnp.is_none_or(|t| now >= t + ctx.spec.cnp_interval) {
        qp.last_cnp = Some(now);
        ctx.send_control(q, Opcode::Cnp, Syndrome::Ack, 0, pkt, None);
    }
    if !acked {
        ctx.qps.get_mut(q).ecn_seen = owed;
    }
}

/// A request (WRITE, SEND or READ packet) for responder queue pair `q`.
fn on_request(ctx: &mut Ctx, q: u32, op: Opcode, pkt: &Packet, id: PacketId) {
    // A READ request draws responses, not an ACK: its mark is not owed to the next ACK.
    data_arrived(ctx, q, pkt, op != Opcode::ReadRequest);
    let now = ctx.now;
    let qp = ctx.qps.get_mut(q);
    if qp.state != QpState::Ready {
        return;
    }
    let psn = pkt.seq;
    if psn < qp.epsn {
        ctx.nics[qp.host as usize].note_duplicate();
        // Duplicate: a READ is answered again (from that PSN); anything else is re-ACKed.
        if op == Opcode::ReadRequest {
            start_read(ctx, q, pkt);
        } else {
            let e = qp.epsn - 1;
            ctx.send_control(q, Opcode::Acknowledge, Syndrome::Ack, e, pkt, Some(id));
        }
        return;
    }
    if psn > qp.epsn && ctx.nics[qp.host as usize].ordering.is_some() {
        out_of_order_layer(ctx, q, op, pkt, id);
        return;
    }
    if psn > qp.epsn {
        let expected = qp.epsn;
        let recovery = ctx.spec.recovery;
        let action = recovery.on_out_of_order(qp, psn, op, now, ctx.spec.nak_interval);
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
    // In order. `placed_at`: when this packet's payload is in host memory.
    let mut placed_at = now;
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
            placed_at = placed;
            if op.is_last() {
                let qp = ctx.qps.get_mut(q);
                qp.msn += 1;
                if op.has_imm() {
                    let rwr = qp.rq.pop_front().expect("checked above");
                    qp.recv_taken += 1;
                    ctx.complete(q, rwr.id, CompletionKind::Recv, Status::Success, pkt.roce.dma_len as u64, Some(pkt.roce.imm), placed);
                }
                message_arrived(ctx, q, placed);
            }
        }
        Family::Send if ctx.nics[ctx.qps.get(q).host as usize].ordering.is_some() => {
            // With an ordering layer a SEND finds its receive WQE by its message number, as
            // its packets may come in any order (IRN's recv WQE SN).
            let rwr = match posted_recv(ctx, q, pkt) {
                None => {
                    rnr(ctx, q, pkt);
                    return;
                }
                Some(small) if !fits(&small, pkt) => {
                    // Taken out of the receive queue first, as the in-order path pops it: the
                    // error then flushes only the others (it completed twice, LocalLength and
                    // then Flushed).
                    let qp = ctx.qps.get_mut(q);
                    let slot = recv_slot(qp, pkt);
                    qp.rq.remove(slot);
                    ctx.complete(q, small.id, CompletionKind::Recv, Status::LocalLength, 0, None, now);
                    fail(ctx, q, pkt, Syndrome::NakInvalidRequest);
                    return;
                }
                Some(rwr) => rwr,
            };
            let placed = place(ctx, q, pkt, id, rwr.addr + pkt.roce.offset as u64);
            placed_at = placed;
            if op.is_last() {
                let imm = op.has_imm().then_some(pkt.roce.imm);
                complete_recv(ctx, q, pkt.roce.dma_len as u64, imm, placed);
            }
        }
        Family::Send => {
            let qp = ctx.qps.get_mut(q);
            if op.is_first() {
                let Some(rwr) = qp.rq.pop_front() else {
                    rnr(ctx, q, pkt);
                    return;
                };
                if !fits(&rwr, pkt) {
                    ctx.complete(q, rwr.id, CompletionKind::Recv, Status::LocalLength, 0, None, now);
                    fail(ctx, q, pkt, Syndrome::NakInvalidRequest);
                    return;
                }
                qp.recv_cur = Some(rwr);
                qp.recv_taken += 1;
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
            let npkts = packets_for(pkt.roce.dma_len as u64, ctx.spec.mtu) as u64;
            let qp = ctx.qps.get_mut(q);
            qp.msn += 1;
            qp.nak_sent = false;
            if ctx.nics[qp.host as usize].ordering.is_some() {
                // The request takes `npkts` PSNs: each moves the ordering layer on in turn.
                for p in psn..psn + npkts {
                    if ctx.qps.get(q).epsn == p {
                        advance_in_order(ctx, q, p, pkt.roce.last && p + 1 == psn + npkts, now, p == psn);
                    }
                }
                nak_refused_hole(ctx, q, pkt, id);
                return;
            }
            qp.epsn = psn + npkts;
            qp.ooo.reset(qp.epsn);
            return;
        }
        _ => unreachable!("responder gets requests only"),
    }
    let qp = ctx.qps.get_mut(q);
    if ctx.nics[qp.host as usize].ordering.is_some() {
        advance_in_order(ctx, q, psn, pkt.roce.last, placed_at, true);
    } else {
        qp.epsn = psn + 1;
        ctx.spec.recovery.on_in_order(qp);
    }
    let qp = ctx.qps.get_mut(q);
    qp.nak_sent = false;
    if nak_refused_hole(ctx, q, pkt, id) {
        // The NACK acknowledges everything below the expected PSN, as the ACK would have.
        ctx.qps.get_mut(q).unacked = 0;
        return;
    }
    let qp = ctx.qps.get_mut(q);
    qp.unacked += 1;
    if qp.unacked >= ctx.spec.ack_interval || qp.cc.acks_every_packet() || op.is_last() || pkt.roce.ack_req || qp.epsn != psn + 1 {
        qp.unacked = 0;
        let e = qp.epsn - 1;
        ctx.send_control(q, Opcode::Acknowledge, Syndrome::Ack, e, pkt, Some(id));
    }
}

/// A data packet ahead of the expected PSN, on a NIC with an ordering layer (Eunomia §3.5):
/// tracked (placed, SACK), a duplicate of a tracked one (SACK again), or refused (dropped,
/// NACK once per gap).
fn out_of_order_layer(ctx: &mut Ctx, q: u32, op: Opcode, pkt: &Packet, id: PacketId) {
    use crate::nic::ordering::{Stream, Verdict};
    let now = ctx.now;
    // A WRITE is placed at its address, a SEND in the receive WQE its message number names.
    let target = match op.family() {
        // A WRITE with immediate's last packet also needs the receive WQE it will complete.
        Family::Write if check_write(ctx, q, pkt) && !(op.has_imm() && op.is_last() && posted_recv(ctx, q, pkt).is_none()) => Some(pkt.roce.va + pkt.roce.offset as u64),
        Family::Send => posted_recv(ctx, q, pkt).filter(|r| fits(r, pkt)).map(|r| r.addr + pkt.roce.offset as u64),
        _ => None,
    };
    if op == Opcode::ReadRequest {
        return read_out_of_order(ctx, q, pkt, id);
    }
    let placeable = target.is_some();
    let qp = ctx.qps.get_mut(q);
    let h = qp.host as usize;
    let expected = qp.epsn;
    let ordering = ctx.nics[h].ordering.as_mut().expect("checked by the caller");
    match ordering.arrive(now, qp, Stream::Requests, pkt.seq, pkt.roce.last, placeable) {
        Verdict::Tracked => {
            let placed = place(ctx, q, pkt, id, target.expect("tracked only if placeable"));
            if op.is_last() {
                let recv = (op.family() == Family::Send || op.has_imm()).then(|| (pkt.roce.dma_len as u64, op.has_imm().then_some(pkt.roce.imm)));
                let ends = &mut ctx.qps.get_mut(q).held_ends;
                let at = ends.partition_point(|e| e.psn < pkt.seq);
                ends.insert(at, HeldEnd { psn: pkt.seq, placed, recv });
            }
            ctx.send_control(q, Opcode::Acknowledge, Syndrome::NakSequence, expected, pkt, Some(id));
        }
        Verdict::Duplicate => ctx.send_control(q, Opcode::Acknowledge, Syndrome::NakSequence, expected, pkt, Some(id)),
        Verdict::Refused => refused(ctx, q, pkt, id),
        Verdict::InOrder { .. } => unreachable!("the packet is ahead of the expected PSN"),
    }
}

/// The layer refused packet `pkt`: NACK it, or, if a NACK for the expected PSN is out already,
/// remember it. The sender's answer to that NACK resends from there, but this packet may be
/// that answer (see [`nak_refused_hole`]). A refusal past the NACKed one, sent after that NACK
/// should have reached the sender, shows the NACK was lost (no resend began): NACK again (§3.5.1
/// NACKs every refused packet; one NACK per gap stands for them only while it arrives).
fn refused(ctx: &mut Ctx, q: u32, pkt: &Packet, id: PacketId) {
    let eunomia = ctx.spec.ordering.is_some_and(|o| o.layer == crate::nic::ordering::Layer::Eunomia);
    let qp = ctx.qps.get_mut(q);
    if !qp.nak_sent {
        nak_refused(ctx, q, pkt, id, true);
    } else if eunomia && pkt.seq > qp.nak_refused_psn && pkt.roce.ts >= qp.nak_lost_from {
        // The repeat stands for this refusal only if the first NACK was lost; if it arrived,
        // the sender ignores the repeat, and this refusal, as a quiet one, needs the hole's NACK.
        crate::nic::qp::note_refusal(&mut qp.refused_quiet, pkt.seq, pkt.roce.ts);
        nak_refused(ctx, q, pkt, id, false);
    } else {
        crate::nic::qp::note_refusal(&mut qp.refused_quiet, pkt.seq, pkt.roce.ts);
    }
}

/// A READ request ahead of the expected PSN, on a NIC with an ordering layer. Its responses need
/// no order (the requester's layer orders them), so it is answered at once; the layer tracks its
/// first PSN, and the PSNs after it, which no packet carries, are passed over when the expected
/// PSN reaches it ([`advance_in_order`]). A request that fails its access check is refused here
/// and fails the queue pair once it comes in order.
fn read_out_of_order(ctx: &mut Ctx, q: u32, pkt: &Packet, id: PacketId) {
    use crate::nic::ordering::{Stream, Verdict};
    let h = ctx.qps.get(q).host as usize;
    let placeable = ctx.nics[h].memory.check_remote(pkt.roce.rkey, pkt.roce.va, pkt.roce.dma_len as u64, Access::REMOTE_READ);
    let qp = ctx.qps.get_mut(q);
    let expected = qp.epsn;
    let npkts = packets_for(pkt.roce.dma_len as u64, ctx.spec.mtu) as u64;
    // The rest of a READ taken early, asked for again, is a repeat: its PSNs are held already.
    let verdict = if placeable && qp.held_reads.iter().any(|r| r.first <= pkt.seq && pkt.seq < r.end) {
        Verdict::Duplicate
    } else {
        let ordering = ctx.nics[h].ordering.as_mut().expect("checked by the caller");
        ordering.arrive(ctx.now, qp, Stream::Requests, pkt.seq, pkt.roce.last && npkts == 1, placeable)
    };
    match verdict {
        Verdict::Refused => return refused(ctx, q, pkt, id),
        Verdict::Tracked => {
            let held = &mut ctx.qps.get_mut(q).held_reads;
            let at = held.partition_point(|r| r.first < pkt.seq);
            held.insert(at, HeldRead { first: pkt.seq, end: pkt.seq + npkts, last: pkt.roce.last });
        }
        // The request again (the requester re-issued it): answered again.
        Verdict::Duplicate => {}
        Verdict::InOrder { .. } => unreachable!("the packet is ahead of the expected PSN"),
    }
    start_read(ctx, q, pkt);
    ctx.send_control(q, Opcode::Acknowledge, Syndrome::NakSequence, expected, pkt, Some(id));
}

/// The layer refused a packet: NACK the expected PSN (everything below it is acknowledged; the
/// NACK reports no SACK). The sender's recovery resends from the expected PSN on, which covers
/// every refusal so far, so they are forgotten. The NACK should reach the sender one way after
/// now; a packet the sender sends later than twice the one way `pkt` took (a margin for a
/// slower reverse path or a queue) would be part of its answer. A repeat (not `fresh`) of a
/// NACK presumed lost keeps the refusals remembered since the first (if the first did arrive,
/// the sender ignores the repeat and those refusals still need the hole's NACK) and is no new
/// congestion signal.
fn nak_refused(ctx: &mut Ctx, q: u32, pkt: &Packet, id: PacketId, fresh: bool) {
    let now = ctx.now;
    let qp = ctx.qps.get_mut(q);
    if let Some(o) = ctx.nics[qp.host as usize].ordering.as_mut() {
        o.note_nack_sent();
    }
    qp.nak_sent = true;
    qp.nak_refused_psn = pkt.seq;
    qp.nak_lost_from = crate::nic::qp::answer_lost_from(now, pkt.roce.ts);
    if fresh {
        qp.refused_quiet = None;
        // The NACK's way back at its least (half the base round trip): the way the refused
        // packet took can be far longer (queued behind a congested path), and a refusal sent
        // after the answer began but taken as covered waits for the timeout.
        qp.nak_answered_from = Time(now.0 + qp.base_rtt.0 / 2);
        if ctx.spec.cnp == CnpMode::AckFlag {
            qp.ecn_seen = true;
        }
    }
    let expected = qp.epsn;
    let echo = Packet { seq: NO_SACK, ..*pkt };
    ctx.send_control(q, Opcode::Acknowledge, Syndrome::NakSequence, expected, &echo, Some(id));
}

/// With an ordering layer, after packet `pkt` moved the expected PSN: NACKs a hole left by
/// refusals whose NACK was held back, and returns whether it did.
///
/// Eunomia NACKs every packet it refuses (§3.5.1). Here one NACK per gap stands for all the
/// refusals after it, because the sender's answer (go-back-N from the expected PSN, or selective
/// repeat from it) resends them. That holds only for packets sent before that answer: a packet
/// of the answer itself, refused (the memory still full, a later PSN overtaking it on a faster
/// path), would wait for the retransmission timeout, since the SACKs that follow never trigger
/// recovery (§3.2.2). So the responder remembers such refusals (their span and latest send
/// time) and sends the NACK they were owed once the expected PSN reaches the span, the first
/// moment it names the hole, unless the packet that moved it was sent after every one of them
/// (then a go-back-N resend that started before them is already under way and covers them),
/// or, under selective repeat, all were sent before the last NACK reached the sender (its
/// answer resends them; [`crate::nic::qp::refusal_hole_due`]). The send times compared are
/// the sender's (`ts`), as a NIC timestamp would be.
fn nak_refused_hole(ctx: &mut Ctx, q: u32, pkt: &Packet, id: PacketId) -> bool {
    let go_back_n = ctx.spec.recovery == Recovery::GoBackN;
    let qp = ctx.qps.get_mut(q);
    let covered = if go_back_n { pkt.roce.ts } else { qp.nak_answered_from };
    if !crate::nic::qp::refusal_hole_due(&mut qp.refused_quiet, qp.epsn, covered) {
        return false;
    }
    nak_refused(ctx, q, pkt, id, true);
    true
}

/// The expected packet `psn` arrived on a NIC with an ordering layer (its payload in memory at
/// `placed`): the layer moves the expected PSN past it and past every packet it had tracked
/// beyond, and messages whose last packet came early are now whole in order (§3.5.2), no
/// sooner than this packet is placed. `packet`: a packet carries `psn` (not so for a READ
/// request's PSNs after its first, which the layer passes without counting).
fn advance_in_order(ctx: &mut Ctx, q: u32, psn: u64, last: bool, placed: Time, mut packet: bool) {
    use crate::nic::ordering::{Stream, Verdict};
    let now = ctx.now;
    let qp = ctx.qps.get_mut(q);
    let h = qp.host as usize;
    let ordering = ctx.nics[h].ordering.as_mut().expect("checked by the caller");
    let mut step = (psn, last);
    loop {
        let next = if packet {
            let Verdict::InOrder { next } = ordering.arrive(now, qp, Stream::Requests, step.0, step.1, true) else { unreachable!("the expected PSN is in order") };
            next
        } else {
            ordering.pass(now, qp, step.0, step.1)
        };
        packet = false;
        qp.epsn = next;
        // READ requests taken early that the layer has now passed are done with; one it has
        // reached but not passed takes PSNs no packet carries, which are stepped over in order.
        while qp.held_reads.first().is_some_and(|r| r.end <= next) {
            qp.held_reads.remove(0);
            qp.msn += 1;
        }
        match qp.held_reads.first() {
            Some(r) if r.first < next => step = (next, r.last && next + 1 == r.end),
            _ => break,
        }
    }
    let next = qp.epsn;
    while let Some(&end) = ctx.qps.get(q).held_ends.first() {
        if end.psn >= next {
            break;
        }
        ctx.qps.get_mut(q).held_ends.remove(0);
        let whole = end.placed.max(placed);
        match end.recv {
            Some((len, imm)) => complete_recv(ctx, q, len, imm, whole),
            None => {
                ctx.qps.get_mut(q).msn += 1;
                message_arrived(ctx, q, whole);
            }
        }
    }
}

/// Where in `qp.rq` the receive WQE of packet `pkt`'s message is (with an ordering layer; its
/// message number counts the peer's receive-consuming messages).
fn recv_slot(qp: &crate::nic::qp::Qp, pkt: &Packet) -> usize {
    pkt.roce.msg.wrapping_sub(qp.recv_taken) as usize
}

/// With an ordering layer: the receive WQE packet `pkt`'s message will consume, if posted.
fn posted_recv(ctx: &Ctx, q: u32, pkt: &Packet) -> Option<RecvWr> {
    let qp = ctx.qps.get(q);
    qp.rq.get(recv_slot(qp, pkt)).copied()
}

/// Whether receive WQE `rwr` holds packet `pkt`'s whole message.
fn fits(rwr: &RecvWr, pkt: &Packet) -> bool {
    rwr.len >= pkt.roce.dma_len as u64
}

/// A SEND or WRITE with immediate is whole in order: its receive WQE (the oldest) completes.
fn complete_recv(ctx: &mut Ctx, q: u32, len: u64, imm: Option<u32>, placed: Time) {
    let qp = ctx.qps.get_mut(q);
    let rwr = qp.rq.pop_front().expect("the receive WQE was found when its packets were placed");
    qp.recv_taken += 1;
    qp.msn += 1;
    ctx.complete(q, rwr.id, CompletionKind::Recv, Status::Success, len, imm, placed);
    message_arrived(ctx, q, placed);
}

/// Whether a WRITE's rkey, whole range and right check out at the responder.
fn check_write(ctx: &Ctx, q: u32, pkt: &Packet) -> bool {
    let mem = &ctx.nics[ctx.qps.get(q).host as usize].memory;
    let r = &pkt.roce;
    r.offset as u64 + r.payload as u64 <= r.dma_len as u64 && mem.check_remote(r.rkey, r.va, r.dma_len as u64, Access::REMOTE_WRITE)
}

/// DMA-writes a packet's payload to `addr`; returns when it is in host (or GPU) memory.
pub(super) fn place(ctx: &mut Ctx, q: u32, pkt: &Packet, id: PacketId, addr: u64) -> Time {
    let qp = ctx.qps.get(q);
    let nic = &mut ctx.nics[qp.host as usize];
    let done = nic.payload_path(qp.gpu_memory).write_payload(ctx.now, pkt.roce.payload as u64);
    let qp = ctx.qps.get_mut(q);
    qp.placed_until = qp.placed_until.max(done);
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
    let qp = ctx.qps.get(q);
    let e = qp.epsn;
    ctx.nics[qp.host as usize].rnr_naks += 1;
    ctx.send_control(q, Opcode::Acknowledge, Syndrome::RnrNak, e, pkt, None);
}

/// The responder rejects a request: NAK with `syndrome`, and its queue pair fails.
fn fail(ctx: &mut Ctx, q: u32, pkt: &Packet, syndrome: Syndrome) {
    ctx.send_control(q, Opcode::Acknowledge, syndrome, pkt.seq, pkt, None);
    ctx.qp_error(q, None, Status::Flushed, ctx.now);
}

/// Queues the READ responses a request asks for (again, if the requester sent it before: those
/// sent before are then retransmissions, `Qp::read_sent`).
fn start_read(ctx: &mut Ctx, q: u32, pkt: &Packet) {
    let len = pkt.roce.dma_len as u64;
    let npkts = packets_for(len, ctx.spec.mtu);
    let qp = ctx.qps.get_mut(q);
    let end = pkt.seq + npkts as u64;
    if ctx.nics[qp.host as usize].ordering.is_some() {
        // Requests may arrive in any order: a request supersedes only the answers it repeats
        // (those ending within its PSNs; what the requester has below them it keeps).
        let mtu = ctx.spec.mtu as u64;
        qp.reads.retain_mut(|j| {
            let j_end = j.first_psn + j.npkts as u64;
            if j_end <= pkt.seq || j_end > end {
                return true;
            }
            // Its responses below the new request's first PSN that have not gone out are not
            // repeated by it: they stay queued (`j` ends at `pkt.seq`; they were dropped, and
            // the requester fetched everything again from the gap they left).
            if j.first_psn < pkt.seq && j.first_psn + (j.next as u64) < pkt.seq {
                j.npkts = (pkt.seq - j.first_psn) as u32;
                j.len = j.npkts as u64 * mtu;
                return true;
            }
            false
        });
    } else {
        // A repeated request supersedes what was being answered from that PSN on.
        qp.reads.retain(|j| j.first_psn + (j.npkts as u64) <= pkt.seq);
    }
    // Answered in PSN order: a request that arrived late goes before later ones already queued.
    let at = qp.reads.partition_point(|j| j.first_psn < pkt.seq);
    let (h, gpu) = (qp.host as usize, qp.gpu_memory);
    let now = ctx.now;
    // The payload is read from host (or GPU) memory: the first byte is on the NIC one read
    // round trip after the request arrived.
    let ready_at = if len > 0 { ctx.nics[h].payload_path(gpu).first_payload(now) } else { now };
    ctx.qps.get_mut(q).reads.insert(at, ReadJob { first_psn: pkt.seq, npkts, next: 0, va: pkt.roce.va, len, ready_at });
    ctx.requeue(q);
}
