//! The requester side of the reliable connection (IBA 9.7): posting send WQEs, building the next
//! packet of a queue pair (the READ responses it owes and its own requests, resends then new
//! data at `snd_nxt`, taking turns), and what ACKs, NAKs, RNR NAKs, READ responses and the
//! retransmission timer do.

use super::recovery::{Recovery, RecoveryScheme, NO_SACK};
use super::{emit, Action, Ctx};
use crate::nic::cc::{Ack, CongestionControl};
use crate::nic::events::NicEvent;
use crate::nic::pcie::wqe_bytes;
use crate::nic::qp::{opcode_at, packets_for, payload_at, Pace, QpState, SqEntry};
use crate::nic::sched::QpScheduler;
use crate::nic::verbs::{PostError, SendWr, Status, Verb};
use crate::units::{BitsPerSec, Time};
use crate::wire::packet::{Packet, PacketId, RoceHeader, ECN_ECT0};
use crate::wire::roce::{Family, Opcode, Syndrome};

/// Posts a send WQE at time `t ≥ now` (the host's doorbell time). Local-buffer errors complete
/// with an error, as verbs do.
pub fn post_send(ctx: &mut Ctx, q: u32, wr: SendWr, t: Time) -> Result<(), PostError> {
    let qp = ctx.qps.get(q);
    if qp.state != QpState::Ready {
        return Err(PostError::BadState);
    }
    if qp.sq.len() >= ctx.spec.sq_depth as usize {
        return Err(PostError::QueueFull);
    }
    let h = qp.host as usize;
    let local_ok = wr.len == 0 || ctx.nics[h].memory.check_local(wr.lkey, wr.local_addr, wr.len);
    let gpu = qp.gpu_memory;
    let ready = {
        let nic = &mut ctx.nics[h];
        // READs carry no payload out; small messages ride inline in the WQE, unless their
        // buffer is in GPU memory, which the CPU does not copy into a WQE (perftest refuses
        // inline data with --use_cuda). The WQE comes from the host; the payload over the path
        // its buffer is on (the GPU's, GPUDirect).
        let inline = wr.verb != Verb::Read && wr.len <= ctx.spec.inline_bytes as u64 && !gpu;
        let fetched = nic.pcie.doorbell_and_fetch(ctx.now, t, wqe_bytes(if inline { wr.len } else { 0 }));
        if wr.verb == Verb::Read || inline { fetched } else { nic.payload_path(gpu).first_payload(fetched) }
    };
    let qp = ctx.qps.get_mut(q);
    let npkts = packets_for(wr.len, ctx.spec.mtu);
    let entry = SqEntry { wr, first_psn: qp.next_psn, npkts, ready_at: ready, msg: qp.messages, read_next: 0 };
    qp.next_psn += npkts as u64;
    // `msg` numbers the messages that consume a receive WQE (IRN's recv WQE SN), so that an
    // ordering layer can place a SEND that arrives out of order.
    match wr.verb {
        Verb::Send | Verb::SendImm(_) | Verb::WriteImm(_) => qp.messages += 1,
        Verb::Read => qp.reads_posted += 1,
        _ => {}
    }
    qp.sq.push_back(entry);
    if !local_ok {
        let last = qp.sq.len() - 1;
        ctx.qp_error(q, Some(last), Status::LocalProtection, t);
        return Ok(());
    }
    ctx.requeue(q);
    ctx.out.push(Action::Kick(h as u32));
    Ok(())
}

/// The scheduler picked `q`: build and account its next packet, tell the scheduler, and put
/// the queue pair back if it has more. Returns the packet and the earliest time it may start
/// on the wire (later than now when its payload read is behind: a PCIe or GPU path slower
/// than the port). `None` if it had nothing to send now (a wasted pick).
pub fn next_packet(ctx: &mut Ctx, q: u32) -> Option<(PacketId, Time)> {
    let h = ctx.qps.get(q).host as usize;
    match build_next(ctx, q) {
        Some((id, end, start)) => {
            let bytes = ctx.pool.get(id).roce.payload;
            ctx.nics[h].sched.sent(q, bytes, end);
            ctx.requeue_after_send(q);
            Some((id, start))
        }
        None => {
            // The scheduler chose a queue pair with nothing to send now: the decision (and, for
            // self-timing schedulers, the link slot) is lost.
            ctx.nics[h].wasted_picks += 1;
            ctx.requeue(q);
            None
        }
    }
}

/// Builds `q`'s next packet; returns it, whether it ends a message, and when it may start on
/// the wire.
fn build_next(ctx: &mut Ctx, q: u32) -> Option<(PacketId, bool, Time)> {
    let now = ctx.now;
    let mtu = ctx.spec.mtu;
    // The READ responses it owes and its own requests (resends, then new data) take turns
    // when both are ready, as a NIC's responder and requester engines share the port: a
    // queue pair that answers READs while it has requests to send (an NVMe-oF initiator whose
    // data the target pulls) keeps both moving. A self-timing scheduler (Tassel, SE-PIEO) has
    // timed the packets it fetched in the order `Qp::upcoming` lists them, READ responses
    // first, which a request arriving between them would reshuffle: under it, responses go
    // first.
    let request_ready = {
        let qp = ctx.qps.get(q);
        qp.request_turn && (qp.resend.iter().any(|&p| qp.entry_of(p).is_some()) || ctx.new_data_at(q).is_some_and(|t| t <= now))
    };
    let turns = !ctx.nics[ctx.qps.get(q).host as usize].sched.rate_limits();
    let qp = ctx.qps.get_mut(q);
    if qp.next_send.max(qp.rnr_until) > now {
        return None;
    }
    let answering = qp.reads.len();
    let response = qp.reads.front_mut().filter(|j| j.ready_at <= now && !request_ready);
    qp.request_turn = turns && response.is_some();
    // `first_byte`: when the first byte of the packet's message could be on the NIC (its
    // payload is not read before its WQE, or the READ request it answers, is known).
    let (hdr, psn, retransmit, first_byte) = if let Some(job) = response {
        let idx = job.next;
        let payload = payload_at(job.len, mtu, idx);
        let op = opcode_at(Family::ReadResponse, idx, job.npkts, false);
        let off = idx * mtu;
        // The last response of the last READ being answered carries the last-packet bit, as a
        // WRITE's last packet does when nothing follows it (an ordering layer frees the bitmap).
        let last = idx + 1 == job.npkts && answering == 1;
        let hdr = RoceHeader { opcode: op, payload, va: job.va + off as u64, offset: off, dma_len: job.len as u32, msn: qp.msn, last, ..Default::default() };
        let psn = job.first_psn + idx as u64;
        // A response to a request sent again is a retransmission if it was sent before: a
        // re-issued READ also asks for responses the first never got to.
        let again = qp.read_sent.note(psn);
        let first_byte = job.ready_at;
        job.next += 1;
        if job.next == job.npkts {
            qp.reads.pop_front();
        }
        (hdr, psn, again, first_byte)
    } else {
        let (psn, retransmit) = match next_resend(qp) {
            Some(psn) => (psn, true),
            None => (qp.snd_nxt, qp.snd_nxt < qp.tx_high),
        };
        let i = qp.entry_of(psn)?;
        let e = qp.sq[i];
        if e.ready_at > now {
            return None;
        }
        let idx = (psn - e.first_psn) as u32;
        let off = idx as u64 * mtu as u64;
        let hdr = if e.is_read() {
            if psn >= qp.snd_nxt {
                qp.snd_nxt = e.end_psn();
            }
            RoceHeader {
                opcode: Opcode::ReadRequest,
                va: e.wr.remote_addr + off,
                rkey: e.wr.rkey,
                dma_len: (e.wr.len - off) as u32,
                msg: e.msg,
                ack_req: true,
                ..Default::default()
            }
        } else {
            if hold_last_write(ctx.spec, qp, &e, psn) {
                return None;
            }
            if psn >= qp.snd_nxt {
                qp.snd_nxt = psn + 1;
            }
            let family = e.family();
            let op = opcode_at(family, idx, e.npkts, e.wr.verb.imm().is_some());
            // The packet that fills the window asks for an ACK (BTH AckReq): the sender stops
            // there, and a receiver coalescing `ack_interval` packets would otherwise wait for
            // more than the window lets come (a flow then moved only on timeouts).
            let fills_window = super::window_packets(ctx.spec, ctx.nics[qp.host as usize].line_rate, qp).is_some_and(|w| psn + 1 >= qp.snd_una + w);
            RoceHeader {
                opcode: op,
                payload: payload_at(e.wr.len, mtu, idx),
                va: if family == Family::Write { e.wr.remote_addr } else { 0 },
                offset: off as u32,
                rkey: e.wr.rkey,
                dma_len: e.wr.len as u32,
                imm: e.wr.verb.imm().unwrap_or(0),
                msg: e.msg,
                // A held last packet waits for the ACK of the one before it: ask for it.
                ack_req: op.is_last() || qp.probe || fills_window || (family == Family::Write && psn + 2 == e.end_psn() && ctx.spec.ordering.is_some_and(|o| o.hold_last_write)),
                last: op.is_last() && i + 1 == qp.sq.len(),
                ..Default::default()
            }
        };
        if qp.probe {
            qp.probe_psn = Some(psn);
        }
        qp.probe = false;
        qp.tx_high = qp.tx_high.max(psn + 1);
        // A READ request from inside its READ asks again for responses that went missing.
        (hdr, psn, retransmit || (e.is_read() && psn != e.first_psn), e.ready_at)
    };
    let op = hdr.opcode;
    // Every packet an ordering layer orders carries its header (Head and the last-packet bit):
    // WRITEs and SENDs, and READ requests and responses, which the layer orders here too; and
    // every data packet the telemetry's bytes.
    let size = hdr.payload + ctx.spec.header_bytes(op);
    let h = qp.host as usize;
    // Payload DMA: bytes mode copies the source bytes into the packet's payload slot (the
    // source address is looked up only then; size-only runs skip it on this hot path).
    let src_addr = match op.family() {
        _ if !ctx.nics[h].memory.has_bytes() || hdr.payload == 0 => None,
        Family::ReadResponse => Some(hdr.va),
        Family::Write | Family::Send => qp.entry_of(psn).map(|i| qp.sq[i].wr.local_addr + (psn - qp.sq[i].first_psn) * mtu as u64),
        _ => None,
    };
    let mut pkt = Packet { size, ecn: ECN_ECT0, ..qp.packet_to_peer(psn, now, RoceHeader { ts: now, ..hdr }) };
    // A multipath transport picks each request packet's virtual path (READ responses, which
    // no ACK clocks, keep the queue pair's port).
    if op.family() != Family::ReadResponse {
        if let Some(vp) = qp.cc.next_path() {
            pkt.udp_sport = vp;
            pkt.flow_hash = crate::fabric::lb::flow_hash(pkt.src, pkt.dst, vp, pkt.udp_dport);
        }
    }
    let end = op.is_last() || op == Opcode::ReadRequest;
    let id = ctx.pool.alloc_on_path(pkt, qp.path);
    // When this packet's payload is on the NIC (the next packet waits for it), and when the
    // packet may start: once the rest of its payload arrives no later than the wire needs it,
    // and not before a packet of its queue pair still waiting for its own.
    let mut payload_at = Time::ZERO;
    let mut start = now;
    if hdr.payload > 0 {
        let gpu = ctx.qps.get(q).gpu_memory;
        let inline = op.family() != Family::ReadResponse && hdr.dma_len <= ctx.spec.inline_bytes && !gpu;
        let nic = &mut ctx.nics[h];
        if !inline {
            payload_at = nic.payload_path(gpu).read_payload(now, hdr.payload as u64, first_byte, hdr.offset as u64);
            start = payload_at.saturating_sub(nic.serialization.tx_time(nic.line_rate, size as u64)).max(now);
        }
        if let Some(a) = src_addr {
            let mut buf = std::mem::take(&mut nic.scratch);
            nic.memory.read(a, &mut buf, hdr.payload as usize);
            ctx.pool.set_payload(id, &buf);
            ctx.nics[h].scratch = buf;
        }
        let qp = ctx.qps.get_mut(q);
        qp.next_send = qp.next_send.max(payload_at);
    }
    let qp = ctx.qps.get_mut(q);
    start = start.max(qp.held_start);
    if start > now {
        qp.held_start = start;
    }
    if ctx.int_enabled {
        ctx.pool.int_mut(id).n = 0;
    }
    let line = ctx.nics[h].line_rate;
    let qp = ctx.qps.get_mut(q);
    qp.tx_packets += 1;
    qp.tx_bytes += size as u64;
    qp.bytes_sent += hdr.payload as u64;
    if retransmit {
        qp.retransmits += 1;
        ctx.nics[h].retransmits += 1;
    }
    // A packet that waits on the NIC for its payload is sent, and its TX event published,
    // when it leaves the wait (the world's `nic_next_packet`).
    if start <= now {
        emit(ctx, q, NicEvent::Tx { bytes: size as u64, packets: 1 });
    }
    let qp = ctx.qps.get_mut(q);
    if qp.cc.wants_rtt_probe() {
        qp.probe = true;
    }
    if !ctx.nics[h].sched.rate_limits() {
        let rate = qp.rate_in_force();
        let gap = super::pacing_gap(rate, line, size, ctx.nics[h].serialization);
        // The wait since it became eligible, up to `pace_burst` at its rate, is banked: the
        // gap runs from that much before now (a token bucket that fills only while the queue
        // pair waits, ready, for its turn).
        let mut from = qp.next_send.max(now);
        if gap > Time::ZERO && ctx.spec.pace_burst.0 > 0 {
            let bank = BitsPerSec(super::paced_rate(rate, line)).tx_time(ctx.spec.pace_burst.0);
            from = from.min(qp.eligible_since.max(now.saturating_sub(bank)));
        }
        qp.pace = Pace { from, bytes: size, gap, rate: super::paced_rate(rate, line) };
        if gap > Time::ZERO {
            // (A bank never lets the next packet go before this one's payload is read.)
            qp.next_send = (from + gap).max(payload_at);
        }
    }
    ctx.sync_rate(q);
    let qp = ctx.qps.get_mut(q);
    if op.family() != Family::ReadResponse {
        // The timeout runs from when the packet may start on the wire (a packet waiting for
        // its payload read has not been sent).
        if qp.rto_at == Time::MAX {
            qp.rto_at = start + ctx.spec.rto_for(qp.inflight_packets());
        } else if ctx.spec.rto_few.is_some_and(|f| qp.inflight_packets() > f.packets as u64) {
            // Armed short for a few packets, and now more are out: the long timeout holds
            // from this send on (IRN's RTO_low covers only a nearly empty pipe).
            qp.rto_at = qp.rto_at.max(start + ctx.spec.rto);
        }
    }
    ctx.arm_qp_timer(q);
    Some((id, end, start))
}

/// The next PSN to resend. A READ's PSN stands for the whole READ: it asks again from its
/// first missing response (those before it are in), once for all the READ's PSNs queued, and
/// not at all once every response is in.
fn next_resend(qp: &mut crate::nic::qp::Qp) -> Option<u64> {
    while let Some(psn) = qp.resend.pop_front() {
        let Some(e) = qp.entry_of(psn).map(|i| qp.sq[i]) else { return Some(psn) };
        if !e.is_read() {
            return Some(psn);
        }
        qp.resend.retain(|&p| p < e.first_psn || p >= e.end_psn());
        if e.read_next < e.npkts {
            return Some(e.first_psn + e.read_next as u64);
        }
    }
    None
}

/// Whether packet `psn` of WRITE `e` must wait: with an ordering layer's `hold_last_write`,
/// the last packet of a multi-packet WRITE leaves only once every earlier packet is
/// acknowledged in order, so it cannot reach the receiver's memory before them (Eunomia
/// §3.5.2).
pub(super) fn hold_last_write(spec: &crate::nic::NicSpec, qp: &crate::nic::qp::Qp, e: &SqEntry, psn: u64) -> bool {
    spec.ordering.is_some_and(|o| o.hold_last_write) && qp.write_end_waits(e, psn)
}

/// An ACK, NAK or RNR NAK for queue pair `q`.
pub fn on_ack(ctx: &mut Ctx, q: u32, pkt: &Packet, id: PacketId) {
    if ctx.qps.get(q).state != QpState::Ready {
        return;
    }
    // A CNP carried on the ACK (`nic.cnp = "ack_flag"`) reaches congestion control as a CNP,
    // after the ACK itself (as `RdmaHw::ReceiveAck` handles it).
    let cnp_flag = ctx.spec.cnp == crate::nic::CnpMode::AckFlag && pkt.roce.imm != 0;
    on_ack_syndrome(ctx, q, pkt, id);
    if cnp_flag && ctx.qps.get(q).state == QpState::Ready {
        emit(ctx, q, NicEvent::Cnp);
        ctx.sync_rate(q);
        ctx.arm_qp_timer(q);
    }
}

fn on_ack_syndrome(ctx: &mut Ctx, q: u32, pkt: &Packet, id: PacketId) {
    let now = ctx.now;
    let psn = pkt.seq;
    match pkt.roce.syndrome {
        Syndrome::Ack => ack_upto(ctx, q, psn + 1, pkt, id, false),
        Syndrome::NakSequence if pkt.roce.va != NO_SACK && ctx.spec.ordering.is_some_and(|o| !o.recover_on_sack) => {
            // An ordering layer's SACK: the packet was kept; recovery is not triggered (an IRN
            // sender's, `recover_on_sack`, goes on below: the holes before it are resent).
            ack_upto(ctx, q, psn, pkt, id, true);
            let recovery = ctx.spec.recovery;
            recovery.on_sack(ctx.qps.get_mut(q), pkt.roce.va);
        }
        Syndrome::NakSequence => {
            ack_upto(ctx, q, psn, pkt, id, pkt.roce.va != NO_SACK);
            let recovery = ctx.spec.recovery;
            let qp = ctx.qps.get_mut(q);
            // An ordering layer's NACK says a packet at or past `psn` was refused. If ACKs
            // overtook it (the expected PSN moved on while it was on its way), that packet is
            // still at or past the oldest unacknowledged PSN: recover from there, not nowhere.
            let named = psn;
            let psn = if ctx.spec.ordering.is_some() { psn.max(qp.snd_una) } else { psn };
            // Selective repeat tells a repeat from a new NACK by the PSN the responder named,
            // which a repeat keeps (the expected PSN has not moved) and a new refusal after
            // the expected PSN moved does not, though both may be raised to the same oldest
            // unacknowledged PSN (taken for a repeat, the new one was ignored and its packet
            // waited for the timeout).
            let selective = recovery == Recovery::SelectiveRepeat;
            let refusal = ctx.spec.ordering.is_some() && pkt.roce.va == NO_SACK;
            if refusal {
                // The receiver repeats a refusal NACK it presumes lost; when the first did
                // arrive, the recovery under way covers the repeat: no event, no resend.
                let caught_up = recovery == Recovery::GoBackN && qp.snd_nxt >= qp.tx_high;
                if qp.refusal_resent == Some(if selective { named } else { psn }) && !caught_up {
                    return;
                }
            }
            emit(ctx, q, NicEvent::Nack);
            recovery.on_nak(ctx.qps.get_mut(q), psn, pkt.roce.va);
            if refusal && selective {
                ctx.qps.get_mut(q).refusal_resent = Some(named);
            }
            ctx.requeue(q);
        }
        Syndrome::RnrNak => {
            ack_upto(ctx, q, psn, pkt, id, false);
            let qp = ctx.qps.get_mut(q);
            if ctx.spec.rnr_retry < crate::nic::RNR_RETRY_FOREVER {
                if qp.rnr_left == 0 {
                    let i = qp.entry_of(psn);
                    ctx.qp_error(q, i, Status::RnrRetryExceeded, now);
                    return;
                }
                qp.rnr_left -= 1;
            }
            qp.snd_nxt = psn;
            qp.resend.clear();
            qp.rnr_until = now + ctx.spec.rnr_timer;
            // An RNR NAK is an answer: it spends none of the transport retries, and the
            // retransmission timer starts again with the retry (without this, a queue pair
            // waiting for a receive used up `retry_count` timeouts and failed RetryExceeded).
            qp.retry_left = ctx.spec.retry_count;
            qp.rto_at = Time::MAX;
            ctx.requeue(q);
        }
        syn @ (Syndrome::NakRemoteAccess | Syndrome::NakInvalidRequest) => {
            let status = if syn == Syndrome::NakRemoteAccess { Status::RemoteAccess } else { Status::RemoteInvalidRequest };
            let i = ctx.qps.get(q).entry_of(psn);
            ctx.qp_error(q, i, status, now);
        }
    }
}

/// Cumulative acknowledgement of every PSN below `upto`, by an ACK or NAK that reports the
/// arrival of PSN `pkt.roce.va` (kept ahead of the expected one if `sack`).
fn ack_upto(ctx: &mut Ctx, q: u32, upto: u64, pkt: &Packet, id: PacketId, sack: bool) {
    let now = ctx.now;
    let qp = ctx.qps.get_mut(q);
    // A READ is acknowledged only by its own responses.
    let mut limit = upto.min(qp.snd_nxt.max(qp.snd_una));
    if let Some(r) = qp.pending_read() {
        if r.first_psn < limit {
            limit = limit.min(r.first_psn + r.read_next as u64);
        }
    }
    if limit <= qp.snd_una {
        if sack && qp.cc.acks_every_packet() {
            // A multipath sender is told of every packet that arrived, in order or not.
            report_ack(ctx, q, 0, pkt, id, sack);
            ctx.requeue(q);
        }
        return;
    }
    let newly_bytes = qp.payload_between(qp.snd_una, limit, ctx.spec.mtu);
    qp.payload_acked += newly_bytes;
    qp.snd_una = limit;
    qp.retry_left = ctx.spec.retry_count;
    qp.rnr_left = ctx.spec.rnr_retry;
    qp.sacked.advance_to(limit);
    qp.resend.retain(|&p| p >= limit);
    if qp.snd_nxt < limit {
        qp.snd_nxt = limit;
    }
    let rtt = report_ack(ctx, q, newly_bytes, pkt, id, sack);
    if ctx.qps.get(q).probe_psn.is_some_and(|p| p < limit) {
        ctx.qps.get_mut(q).probe_psn = None;
        let sport = ctx.qps.get(q).udp_sport;
        emit(ctx, q, NicEvent::RttProbe { rtt, sport });
    }
    let qp = ctx.qps.get_mut(q);
    qp.rto_at = if qp.snd_una < qp.snd_nxt || qp.has_read() { qp.rto_from(now) + ctx.spec.rto_for(qp.inflight_packets()) } else { Time::MAX };
    ctx.sync_rate(q);
    complete_done(ctx, q);
    ctx.arm_qp_timer(q);
    ctx.requeue(q);
}

/// Tells `q`'s subscribers of an ACK that newly acknowledged `newly` bytes of payload; returns
/// the RTT it measured.
fn report_ack(ctx: &mut Ctx, q: u32, newly: u64, pkt: &Packet, id: PacketId, sack: bool) -> Time {
    let int = if ctx.int_enabled { Some(ctx.pool.int(id)) } else { None };
    let qp = ctx.qps.get(q);
    // Sequences in PSN × MTU bytes: the next to send is `snd_nxt`, which a go-back-N rewind moves
    // back (ns-3's `snd_nxt`); retransmitted bytes do not move it on. (Counting every byte sent
    // left the acknowledged sequence behind by all the bytes ever resent, and once-per-window
    // updates came once per window and all of those bytes.)
    let mtu = ctx.spec.mtu as u64;
    let ack = Ack {
        acked_bytes: newly,
        acked_seq: qp.snd_una * mtu,
        next_seq: qp.snd_nxt.max(qp.snd_una) * mtu,
        rtt: ctx.now.saturating_sub(pkt.roce.ts),
        ecn_echo: pkt.roce.imm != 0,
        int: int.as_ref(),
        una: qp.snd_una,
        psn: pkt.roce.va,
        path: pkt.roce.path,
        sack,
    };
    emit(ctx, q, NicEvent::Ack(&ack));
    ack.rtt
}

/// A READ response for queue pair `q`.
pub fn on_read_response(ctx: &mut Ctx, q: u32, pkt: &Packet, id: PacketId) {
    let now = ctx.now;
    let mtu = ctx.spec.mtu as u64;
    if ctx.qps.get(q).state != QpState::Ready {
        return;
    }
    // The requester receives a READ's data.
    super::responder::data_arrived(ctx, q, pkt, false);
    let qp = ctx.qps.get_mut(q);
    let e = qp.entry_of(pkt.seq).map(|i| (i, qp.sq[i])).filter(|(_, e)| e.is_read());
    let Some((i, e)) = e else {
        // A response to a READ already completed (a re-issue's answer that came late).
        ctx.nics[qp.host as usize].note_duplicate();
        return;
    };
    if ctx.nics[qp.host as usize].ordering.is_some() {
        return read_response_ordered(ctx, q, pkt, id);
    }
    // Responses come back in PSN order: while an older READ misses one, a later READ's
    // response shows the gap as surely as its own would.
    let older_gap = qp.pending_read().filter(|r| r.first_psn < e.first_psn);
    let expected = older_gap.map_or(e.first_psn + e.read_next as u64, |r| r.first_psn + r.read_next as u64);
    if pkt.seq > expected {
        // Gap: re-issue the READ from the missing PSN, once per gap.
        if qp.read_rewound != Some(expected) {
            qp.read_rewound = Some(expected);
            qp.snd_nxt = expected;
            emit(ctx, q, NicEvent::Nack);
            ctx.requeue(q);
        }
        return;
    }
    if pkt.seq < expected {
        return;
    }
    let idx = pkt.seq - e.first_psn;
    let addr = e.wr.local_addr + idx * mtu;
    super::responder::place(ctx, q, pkt, id, addr);
    let qp = ctx.qps.get_mut(q);
    qp.sq[i].read_next += 1;
    qp.payload_acked += payload_at(e.wr.len, ctx.spec.mtu, idx as u32) as u64;
    qp.read_rewound = None;
    // In-order responses acknowledge the READ's PSNs and everything before them.
    let upto = pkt.seq + 1;
    let newly = upto.saturating_sub(qp.snd_una);
    if newly > 0 {
        qp.payload_acked += qp.payload_between(qp.snd_una, upto, ctx.spec.mtu);
        qp.snd_una = upto;
        qp.retry_left = ctx.spec.retry_count;
    }
    qp.rto_at = qp.rto_from(now) + ctx.spec.rto_for(qp.inflight_packets());
    complete_done(ctx, q);
    ctx.arm_qp_timer(q);
    ctx.requeue(q);
}

/// A READ response on a NIC with an ordering layer: the layer serves the responses a requester
/// receives as it serves the data a responder receives (Eunomia §3.5), so a response ahead of
/// the expected one is placed and tracked instead of re-issuing the READ. READs make progress
/// when the expected response arrives, over every response tracked beyond it; only a refused
/// response re-issues the READ from the gap (once per gap), as a gap does without the layer.
fn read_response_ordered(ctx: &mut Ctx, q: u32, pkt: &Packet, id: PacketId) {
    use crate::nic::ordering::{Stream, Verdict};
    let now = ctx.now;
    settle_responses(ctx, q);
    let qp = ctx.qps.get_mut(q);
    note_answer(qp, now, pkt);
    // A response below the expected one, or with no READ pending, came again.
    let expected = qp.pending_read().map(|r| r.first_psn + r.read_next as u64);
    let Some(expected) = expected.filter(|&e| pkt.seq >= e) else {
        ctx.nics[qp.host as usize].note_duplicate();
        return;
    };
    debug_assert_eq!(qp.rsp.epsn, expected, "settled: the stream expects the oldest missing response");
    let h = qp.host as usize;
    let ordering = ctx.nics[h].ordering.as_mut().expect("checked by the caller");
    match ordering.arrive(now, qp, Stream::Responses, pkt.seq, pkt.roce.last, true) {
        Verdict::Duplicate => {}
        Verdict::Refused => {
            // A re-issue for this gap is out, and this response may be part of its answer;
            // unless its answer has begun to arrive and this response is past the one that drew
            // the re-issue and was sent after the answer's response at the gap should have
            // arrived: then that response was lost (a failed link that routes have not yet
            // avoided), and nothing else would ask again. Re-issue again (the responder's
            // repeated NACK, `responder::refused`; only the layer `eunomia` repeats, as there).
            let eunomia = ctx.spec.ordering.is_some_and(|o| o.layer == crate::nic::ordering::Layer::Eunomia);
            let lost = eunomia && pkt.seq > qp.rsp.rewound_psn && pkt.roce.ts >= qp.rsp.rewound_lost_from;
            if qp.read_rewound != Some(expected) || lost {
                reissue_read(ctx, q, expected, pkt);
            } else {
                crate::nic::qp::note_refusal(&mut qp.rsp.refused_quiet, pkt.seq, pkt.roce.ts);
            }
        }
        Verdict::Tracked => {
            let addr = read_response_addr(ctx, q, pkt.seq);
            super::responder::place(ctx, q, pkt, id, addr);
        }
        Verdict::InOrder { next } => {
            qp.rsp.epsn = next;
            qp.read_rewound = None;
            let addr = read_response_addr(ctx, q, pkt.seq);
            super::responder::place(ctx, q, pkt, id, addr);
            read_responses_arrived(ctx, q, expected, next);
            settle_responses(ctx, q);
            // Responses refused while the re-issue was out, now at the gap: re-issue again
            // (the responder's `nak_refused_hole` reasons the same way).
            let qp = ctx.qps.get_mut(q);
            match qp.pending_read().map(|r| r.first_psn + r.read_next as u64) {
                Some(gap) if crate::nic::qp::refusal_hole_due(&mut qp.rsp.refused_quiet, gap, pkt.roce.ts) => reissue_read(ctx, q, gap, pkt),
                Some(_) => {}
                None => qp.rsp.refused_quiet = None,
            }
        }
    }
}

/// Moves `q`'s response stream on to the oldest missing response, over PSNs that have none
/// (WRITEs and SENDs between READs); responses the layer had tracked just past them are in
/// memory, and their READs move on.
fn settle_responses(ctx: &mut Ctx, q: u32) {
    loop {
        let qp = ctx.qps.get_mut(q);
        let Some(gap) = qp.pending_read().map(|r| r.first_psn + r.read_next as u64) else { return };
        let h = qp.host as usize;
        let head = ctx.nics[h].ordering.as_mut().expect("an ordering layer").skip_responses(ctx.now, qp, gap);
        if head <= gap {
            return;
        }
        read_responses_arrived(ctx, q, gap, head);
    }
}

/// Re-issues the READs from response `from` on (go-back-N over the requests), once per gap
/// unless it seems lost. `pkt`: the response that drew it. The responder answers every
/// re-issue from the gap again, so the answer covers every refusal so far, a repeat's too.
fn reissue_read(ctx: &mut Ctx, q: u32, from: u64, pkt: &Packet) {
    let now = ctx.now;
    let qp = ctx.qps.get_mut(q);
    qp.read_rewound = Some(from);
    qp.rsp.refused_quiet = None;
    qp.rsp.rewound_psn = pkt.seq;
    qp.rsp.rewound_at = now;
    qp.rsp.rewound_front = qp.rsp.front.1;
    qp.rsp.rewound_lost_from = Time::MAX;
    qp.snd_nxt = from;
    emit(ctx, q, NicEvent::Nack);
    ctx.requeue(q);
}

/// A READ response `pkt` arrived: it moves the responder's stream
/// on as far as the requester knows (`front`), and, if it is the first response of a re-issue's
/// answer to arrive, dates that answer. The responder answers a re-issue from the gap only
/// after the responses it had committed to its transmit pipeline, which may leave long after
/// the re-issue should have reached it and be refused; a response of the answer shows that
/// these have gone. It is one sent after the re-issue whose PSN is at or past the gap but not
/// past where the stream was then (anything else sent since would be past it).
fn note_answer(qp: &mut crate::nic::qp::Qp, now: Time, pkt: &Packet) {
    let r = &mut qp.rsp;
    if let Some(gap) = qp.read_rewound {
        if r.rewound_lost_from == Time::MAX && pkt.roce.ts >= r.rewound_at && gap <= pkt.seq && pkt.seq <= r.rewound_front {
            r.rewound_lost_from = crate::nic::qp::answer_lost_from(now, pkt.roce.ts);
        }
    }
    if pkt.roce.ts >= r.front.0 {
        r.front = (pkt.roce.ts, pkt.seq);
    }
}

/// Where READ response `psn`'s payload goes in the requester's memory.
fn read_response_addr(ctx: &Ctx, q: u32, psn: u64) -> u64 {
    let qp = ctx.qps.get(q);
    let e = qp.sq[qp.entry_of(psn).expect("a response of a READ in the send queue")];
    e.wr.local_addr + (psn - e.first_psn) * ctx.spec.mtu as u64
}

/// Every READ response with a PSN in `from..to` is in memory: the READs they belong to move on.
/// They acknowledge the READs' PSNs that follow on from the oldest unacknowledged PSN, but not
/// a WRITE or SEND before them: with an ordering layer the responder answers a READ that
/// overtook them, so a response no longer says they arrived (their ACK does).
fn read_responses_arrived(ctx: &mut Ctx, q: u32, from: u64, to: u64) {
    let mtu = ctx.spec.mtu;
    let qp = ctx.qps.get_mut(q);
    let mut payload = 0;
    for e in qp.sq.iter_mut().filter(|e| e.is_read() && e.first_psn < to && e.end_psn() > from) {
        let reached = (to - e.first_psn).min(e.npkts as u64) as u32;
        for idx in e.read_next..reached {
            payload += payload_at(e.wr.len, mtu, idx) as u64;
        }
        e.read_next = e.read_next.max(reached);
    }
    qp.payload_acked += payload;
    let mut upto = qp.snd_una;
    for e in qp.sq.iter() {
        if e.end_psn() <= upto {
            continue;
        }
        if e.first_psn > upto || !e.is_read() {
            break;
        }
        upto = upto.max(e.first_psn + e.read_next as u64);
        if e.read_next < e.npkts {
            break;
        }
    }
    let newly = upto.saturating_sub(qp.snd_una);
    if newly > 0 {
        qp.payload_acked += qp.payload_between(qp.snd_una, upto, mtu);
        qp.snd_una = upto;
        qp.retry_left = ctx.spec.retry_count;
        // As `ack_upto` does: a re-issue's rewind of `snd_nxt` may lie below what the responses
        // now acknowledge (READs completed and popped), which left nothing ever to send.
        if qp.snd_nxt < upto {
            qp.snd_nxt = upto;
        }
    }
    qp.rto_at = qp.rto_from(ctx.now) + ctx.spec.rto_for(qp.inflight_packets());
    complete_done(ctx, q);
    ctx.arm_qp_timer(q);
    ctx.requeue(q);
}

/// Completes finished WQEs at the head of `q`'s send queue, in order.
fn complete_done(ctx: &mut Ctx, q: u32) {
    let now = ctx.now;
    loop {
        let qp = ctx.qps.get_mut(q);
        let Some(e) = qp.sq.front().copied() else { break };
        let done = if e.is_read() { e.read_next >= e.npkts } else { e.end_psn() <= qp.snd_una };
        if !done {
            break;
        }
        qp.sq.pop_front();
        if e.is_read() {
            qp.reads_posted -= 1;
        }
        // A READ's CQE waits for its data to be in memory (on the GPU path, no write on the
        // host's channel orders the CQE behind it).
        let after = if e.is_read() { now.max(qp.placed_until) } else { now };
        ctx.complete(q, e.wr.id, e.wr.verb.completion_kind(), Status::Success, e.wr.len, None, after);
    }
    let qp = ctx.qps.get_mut(q);
    if qp.sq.is_empty() {
        qp.rto_at = Time::MAX;
    }
}

/// Queue pair `q`'s timer: congestion-control timers and the retransmission timeout.
pub fn on_timer(ctx: &mut Ctx, q: u32) {
    let now = ctx.now;
    let qp = ctx.qps.get(q);
    if qp.state != QpState::Ready {
        return;
    }
    if qp.cc.next_timer().is_some_and(|t| t <= now) {
        emit(ctx, q, NicEvent::Timer);
    }
    let qp = ctx.qps.get_mut(q);
    if qp.rto_at <= now {
        let unanswered_read = qp.pending_read();
        let outstanding = qp.snd_una < qp.snd_nxt || unanswered_read.is_some();
        if !outstanding || ctx.spec.rto_inert {
            // (Inert: ns-3's IRN under PFC returns from its timeout; the next send or ACK
            // arms it again.)
            qp.rto_at = Time::MAX;
        } else if qp.retry_left == 0 {
            let i = qp.entry_of(qp.snd_una).or(Some(0));
            ctx.qp_error(q, i, Status::RetryExceeded, now);
            return;
        } else {
            qp.retry_left -= 1;
            let h = qp.host as usize;
            // Resume from the oldest unacknowledged PSN (a READ from its first missing response).
            let mut from = qp.snd_una;
            if let Some(r) = unanswered_read {
                from = from.min(r.first_psn + r.read_next as u64).max(qp.snd_una);
            }
            ctx.nics[h].timeouts += 1;
            emit(ctx, q, NicEvent::Nack);
            let recovery = ctx.spec.recovery;
            let qp = ctx.qps.get_mut(q);
            recovery.on_timeout(qp, from);
            qp.read_rewound = None;
            qp.rto_at = now + ctx.spec.rto_for(qp.inflight_packets());
        }
    }
    ctx.sync_rate(q);
    let qp = ctx.qps.get(q);
    let t = qp.cc.next_timer().unwrap_or(Time::MAX).min(qp.rto_at);
    if t != Time::MAX {
        ctx.out.push(Action::Arm { timer: qp.timer, at: t.max(now) });
    }
    ctx.requeue(q);
}

impl crate::nic::qp::Qp {
    /// When a retransmission timeout re-armed at `now` by an ACK runs from: now, or later if
    /// the packet last built waits on the NIC for its payload (it has not been sent). Only an
    /// ACK's re-arm waits so; a timeout that fires re-arms from its own time, so a peer that
    /// answers nothing still uses up the retries.
    pub fn rto_from(&self, now: Time) -> Time {
        now.max(self.held_start)
    }

    /// The oldest READ in the send queue still missing responses.
    pub fn pending_read(&self) -> Option<SqEntry> {
        if self.reads_posted == 0 {
            return None;
        }
        self.sq.iter().find(|e| e.is_read() && e.read_next < e.npkts).copied()
    }

    /// Whether any READ is in the send queue.
    pub fn has_read(&self) -> bool {
        self.reads_posted > 0
    }
}
