//! The RoCEv2 reliable-connection transport (IBA chapter 9; RoCEv2 Annex A17) as code over a
//! narrow context, with no event loop: [`Ctx`] lends it the time, the NIC's spec, the NICs
//! (PCIe, memory, scheduler), the connection table and the packet pool, and it writes what it
//! wants done outside the NIC (timer arms, port kicks, control packets to queue, completions for
//! applications) into an [`Outbox`] that the caller drains, in order, right after each call.
//!
//! - [`requester`]: posting, packetization (new data, resends, READ requests), ACK/NAK/RNR and
//!   READ-response handling, completions, the retransmission timer;
//! - [`responder`]: PSN checks, placement by DMA, ACK coalescing, CNPs on ECN marks, READ jobs;
//! - [`recovery`]: go-back-N and IRN-style selective repeat behind one seam.
//!
//! Every congestion-relevant event goes through [`emit`] (the NIC event tap,
//! [`crate::nic::events`]); the control a subscriber may use is [`Ctx::set_rate_limit`],
//! [`Ctx::set_udp_ports`] and [`Ctx::request_rtt_probe`].

pub mod recovery;
pub mod requester;
pub mod responder;

#[cfg(test)]
mod tests;

use super::cc::{CongestionControl, FlowParams};
use super::events::{EventTap, NicEvent};
use super::qp::{Owner, Qp, QpState};
use super::qp_table::QpTable;
use super::verbs::{Completion, CompletionKind, Status, Verb};
use super::{Nic, NicSpec, PaceRetime};
use crate::sim::TimerId;
use crate::units::{BitsPerSec, Serialization, Time};
use crate::wire::packet::{Packet, PacketId, PacketKind, PacketPool, RoceHeader, ECN_NOT_ECT, TTL};
use crate::wire::roce::{Opcode, Syndrome};
use recovery::RecoveryScheme;

/// What the transport asks of the world around the NIC.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Action {
    /// Arm a timer (moving it if armed).
    Arm { timer: TimerId, at: Time },
    /// Arm a timer unless it is armed for an earlier or equal time.
    ArmIfLater { timer: TimerId, at: Time },
    Cancel(TimerId),
    /// Host `h`'s port should look for work as soon as it is free.
    Kick(u32),
    /// A control packet (ACK, NAK, CNP) to queue at the head of its class on host `host`'s port.
    Control { host: u32, id: PacketId },
    /// A completion for the application owning the queue pair.
    Complete { owner: Owner, c: Completion },
    /// A whole message is in the memory of the application owning the responder queue pair.
    Message { owner: Owner, placed: Time },
}

/// Actions in the order the transport asked for them.
#[derive(Default)]
pub struct Outbox {
    pub actions: Vec<Action>,
}

impl Outbox {
    #[inline]
    pub fn push(&mut self, a: Action) {
        self.actions.push(a);
    }
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }
}

/// What the transport works on.
pub struct Ctx<'a> {
    pub now: Time,
    pub spec: &'a NicSpec,
    pub nics: &'a mut [Nic],
    pub qps: &'a mut QpTable,
    pub pool: &'a mut PacketPool,
    pub tap: &'a mut EventTap,
    pub out: &'a mut Outbox,
    /// Whether packets carry an INT stack (HPCC).
    pub int_enabled: bool,
    /// The scenario's seed, for the random streams of congestion controllers.
    pub seed: u64,
}

/// Passes an event of queue pair `q` to its subscribers: the congestion controller, then the tap.
#[inline]
pub fn emit(ctx: &mut Ctx, q: u32, ev: NicEvent) {
    let now = ctx.now;
    let qp = ctx.qps.get_mut(q);
    match ev {
        NicEvent::Tx { bytes, packets } => qp.cc.on_tx(now, bytes, packets),
        NicEvent::Ack(a) => qp.cc.on_ack(now, a),
        NicEvent::Nack => qp.cc.on_nack(now),
        NicEvent::Cnp => qp.cc.on_cnp(now),
        NicEvent::Timer => qp.cc.on_timer(now),
        NicEvent::Rx { .. } | NicEvent::RttProbe { .. } | NicEvent::Signal { .. } | NicEvent::Hint { .. } => {}
    }
    let host = qp.host;
    if let Some((timer, at)) = ctx.tap.publish(now, host, q, &ev) {
        ctx.out.push(Action::ArmIfLater { timer, at });
    }
}

/// The rate a queue pair held to `rate` is paced at: 0 (not paced) at or above the NIC's line
/// rate (the port serializes it) or with no rate.
pub(crate) fn paced_rate(rate: u64, line: BitsPerSec) -> u64 {
    if rate < line.0 {
        rate
    } else {
        0
    }
}

/// The time a queue pair held to `rate` waits after sending `bytes` ([`paced_rate`]), timed
/// by `rule` as the NIC's port times its frames.
pub(crate) fn pacing_gap(rate: u64, line: BitsPerSec, bytes: u32, rule: Serialization) -> Time {
    match paced_rate(rate, line) {
        0 => Time::ZERO,
        r => rule.tx_time(BitsPerSec(r), bytes as u64),
    }
}

impl Ctx<'_> {
    // ------------------------------------------------------------ control interface

    /// Caps queue pair `q`'s rate at `bps` (`u64::MAX` removes the cap).
    pub fn set_rate_limit(&mut self, q: u32, bps: u64) {
        self.qps.get_mut(q).rate_limit = bps;
        self.sync_rate(q);
    }

    /// Sets queue pair `q`'s dequeue rate (a control policy's; `u64::MAX` or 0 removes it). It
    /// holds beside the application's rate limit and congestion control's: the lowest is in
    /// force, so 0 must not be taken as a rate (it read as "unpaced" and lifted the other two).
    pub fn set_dequeue_rate(&mut self, q: u32, bps: u64) {
        self.qps.get_mut(q).dequeue_rate = if bps == 0 { u64::MAX } else { bps };
        self.sync_rate(q);
    }

    /// Moves queue pair `q` to other UDP ports (ECMP then hashes it onto another path).
    pub fn set_udp_ports(&mut self, q: u32, sport: u16, dport: u16) {
        let qp = self.qps.get_mut(q);
        qp.udp_sport = sport;
        qp.udp_dport = dport;
        qp.flow_hash = crate::fabric::lb::flow_hash(qp.node, qp.peer_node, sport, dport);
    }

    /// Sends an out-of-band signal from queue pair `q` to its peer: `value`, padded to `bytes`
    /// extra bytes, in the control class at the head of the port's queue (as ACKs go). It is
    /// outside the PSN space (not acknowledged, not retransmitted) and reaches the peer's
    /// subscribers as [`NicEvent::Signal`].
    pub fn send_signal(&mut self, q: u32, value: u32, bytes: u32) {
        let qp = self.qps.get(q);
        let ack_class = self.spec.ack_class(qp.priority);
        let hdr = RoceHeader { opcode: Opcode::OutOfBand, imm: value, payload: bytes, ..Default::default() };
        let pkt = Packet { size: Opcode::OutOfBand.header_bytes() + bytes, priority: ack_class, ..qp.packet_to_peer(0, self.now, hdr) };
        let (host, path) = (qp.host, qp.path);
        self.push_control(host, pkt, path);
    }

    /// Queues a control packet (outside the PSN space) from `host` on carried path `path`, at
    /// the head of the host port's queue; returns its id.
    fn push_control(&mut self, host: u32, pkt: Packet, path: u32) -> PacketId {
        let id = self.pool.alloc_on_path(pkt, path);
        self.out.push(Action::Control { host, id });
        id
    }

    /// Sends a path probe from queue pair `q` to its peer on UDP source port `sport` (ECMP hash
    /// `hash`, carried path `path`), in the data's class so it queues where the data would
    /// (SCR A.7). Outside the PSN space; the peer answers with [`Opcode::ProbeResponse`], which
    /// reaches this end's subscribers as [`NicEvent::RttProbe`] with the port.
    pub fn send_probe(&mut self, q: u32, sport: u16, hash: u32, path: u32) {
        let qp = self.qps.get(q);
        let hdr = RoceHeader { opcode: Opcode::ProbeRequest, imm: sport as u32, ..Default::default() };
        let pkt = Packet { size: Opcode::ProbeRequest.header_bytes(), udp_sport: sport, flow_hash: hash, ..qp.packet_to_peer(0, self.now, hdr) };
        let host = qp.host;
        self.push_control(host, pkt, path);
    }

    /// Answers a path probe that reached queue pair `q`: its port and send time (the `ts` its NIC
    /// stamped) echoed, the time in the RETH address field, back on
    /// `q`'s own route (so probes on different ports return alike), in the ACK class.
    pub fn answer_probe(&mut self, q: u32, probe: &Packet) {
        let qp = self.qps.get(q);
        let ack_class = self.spec.ack_class(qp.priority);
        // The probe's send time (stamped as it left its NIC) rides back in the response.
        let hdr = RoceHeader { opcode: Opcode::ProbeResponse, imm: probe.roce.imm, va: probe.roce.ts.0, ..Default::default() };
        let pkt = Packet { size: Opcode::ProbeResponse.header_bytes(), priority: ack_class, ..qp.packet_to_peer(0, self.now, hdr) };
        let (host, path) = (qp.host, qp.path);
        self.push_control(host, pkt, path);
    }

    /// Has queue pair `q`'s packets carry path `path` (`NO_PATH`: follow the switches' routes).
    pub fn set_path(&mut self, q: u32, path: u32) {
        self.qps.get_mut(q).path = path;
    }

    /// The application owning queue pair `q` writes `value` into the region it shares with
    /// the NIC: subscribers see it as [`NicEvent::Hint`].
    pub fn write_hint(&mut self, q: u32, value: u32) {
        emit(self, q, NicEvent::Hint { value });
    }

    /// Has queue pair `q`'s next data packet acknowledged at once (an RTT sample).
    pub fn request_rtt_probe(&mut self, q: u32) {
        self.qps.get_mut(q).probe = true;
    }

    // ------------------------------------------------------------ connections

    /// Sets up queue pair `q` (open, on host `host`) as connected to `peer`, with its
    /// congestion controller for a path of `base_rtt` from a port of `line_rate`.
    pub fn connect_to(&mut self, q: u32, peer: u32, base_rtt: Time) {
        let (pn, ph) = (self.qps.get(peer).node, self.qps.get(peer).host);
        let line_rate = self.nics[self.qps.get(q).host as usize].line_rate;
        let mtu = self.spec.mtu + self.spec.headers.bytes(Opcode::WriteMiddle, 0);
        let now = self.now;
        let qp = self.qps.get_mut(q);
        qp.peer = peer;
        qp.peer_node = pn;
        qp.peer_host = ph;
        qp.base_rtt = base_rtt;
        // The world puts the path's own (its slowest link's) once it has connected the pair.
        qp.pair_bdp = line_rate.bytes_in(base_rtt);
        let seed = crate::sim::rng::stream_seed(self.seed, "cc", (q as u64) << 32 | peer as u64);
        qp.cc = self.spec.cc.build(FlowParams { line_rate, base_rtt, mtu, payload: self.spec.mtu, seed }, now);
        qp.flow_hash = crate::fabric::lb::flow_hash(qp.node, pn, qp.udp_sport, qp.udp_dport);
        self.sync_rate(q);
    }

    /// Destroys queue pair `q`; its slot is reused after a quarantine.
    pub fn destroy(&mut self, q: u32) {
        if let Some((timer, h)) = self.qps.close(q, self.now) {
            if let Some((timer, at)) = self.tap.closed(self.now, h, q) {
                self.out.push(Action::ArmIfLater { timer, at });
            }
            self.out.push(Action::Cancel(timer));
            self.nics[h as usize].active_qps -= 1;
            if let Some(st) = &mut self.nics[h as usize].state {
                st.cache.forget(q);
            }
            if let Some(o) = &mut self.nics[h as usize].ordering {
                o.closed(self.now, self.qps.get_mut(q));
            }
            super::sched::QpScheduler::remove(&mut self.nics[h as usize].sched, q);
        }
    }

    // ------------------------------------------------------------ shared machinery

    /// Tells the scheduler `q`'s rate limit (congestion-control rate capped by any configured
    /// limit) when it changed.
    #[inline]
    pub fn sync_rate(&mut self, q: u32) {
        let qp = self.qps.get_mut(q);
        let rate = qp.rate_in_force();
        if rate != qp.sched_rate {
            qp.sched_rate = rate;
            let h = qp.host as usize;
            super::sched::QpScheduler::set_rate(&mut self.nics[h].sched, q, rate, self.now);
            self.retime_gap(q, rate);
        }
    }

    /// A rate change re-times the wait the queue pair's last packet opened (`nic.pace_retime`):
    /// by default as a token bucket would, the part still to run paid at the new rate, so a
    /// queue pair paced at a low rate does not wait out the old, long gap after an increase;
    /// or as ns-3's HPCC does. Nothing moves when something else (a payload DMA) set the send
    /// time since, or the wait is over.
    fn retime_gap(&mut self, q: u32, rate: u64) {
        let now = self.now;
        let qp = self.qps.get(q);
        let h = qp.host as usize;
        let pace = qp.pace;
        if pace.bytes == 0 || qp.next_send != pace.from + pace.gap || super::sched::QpScheduler::rate_limits(&self.nics[h].sched) {
            return;
        }
        let line = self.nics[h].line_rate;
        let next = match self.spec.pace_retime {
            PaceRetime::None => return,
            PaceRetime::WholeGap => pace.from + pacing_gap(rate, line, pace.bytes, self.nics[h].serialization),
            PaceRetime::Remaining => {
                // The wait still to run (a payload DMA still under way is not part of it).
                let start = now.max(pace.from);
                if qp.next_send <= start {
                    return;
                }
                let left = (qp.next_send - start).0 as u128;
                let paid = match paced_rate(rate, line) {
                    0 => 0,
                    r => left * pace.rate as u128 / r as u128,
                };
                start + Time(paid as u64)
            }
        };
        let qp = self.qps.get_mut(q);
        qp.pace.rate = paced_rate(rate, line);
        if next == qp.next_send {
            return;
        }
        qp.pace.gap = next.saturating_sub(pace.from);
        qp.next_send = pace.from + qp.pace.gap;
        if qp.in_sched {
            if let Some(at) = self.eligible_at(q) {
                let qp = self.qps.get_mut(q);
                qp.eligible_since = qp.ready_since(at);
                super::sched::QpScheduler::reschedule(&mut self.nics[h].sched, q, at, now);
                self.out.push(Action::Kick(h as u32));
            }
        }
    }

    /// Makes `q`'s timer fire no later than the earliest of its retransmission timeout and CC
    /// timer. Deadlines only move later on ACKs, so the timer is left where it is when it would
    /// fire earlier; the handler then finds nothing due and re-arms (one event per timeout
    /// period instead of one re-arm per ACK).
    #[inline]
    pub fn arm_qp_timer(&mut self, q: u32) {
        let qp = self.qps.get(q);
        let t = qp.cc.next_timer().unwrap_or(Time::MAX).min(qp.rto_at);
        if t != Time::MAX {
            self.out.push(Action::ArmIfLater { timer: qp.timer, at: t.max(self.now) });
        }
    }

    /// Packets `qp` may have in flight: the tightest of its congestion window, the NIC's
    /// `cc_window` (scaled by rate over line rate if asked) and its recovery scheme's cap.
    pub fn window_packets(&self, qp: &Qp) -> Option<u64> {
        window_packets(self.spec, self.nics[qp.host as usize].line_rate, qp)
    }

    /// When queue pair `q` can send next, if it has anything to send.
    pub fn eligible_at(&self, q: u32) -> Option<Time> {
        let qp = self.qps.get(q);
        if qp.state != QpState::Ready {
            return None;
        }
        let pace = qp.next_send.max(qp.rnr_until);
        if !qp.resend.is_empty() {
            return Some(pace);
        }
        // A READ response once its payload is read from memory, or new data once its WQE is.
        let at = qp.reads.front().map(|j| j.ready_at).into_iter().chain(self.new_data_at(q)).min()?;
        Some(pace.max(at))
    }

    /// When `q`'s next new packet's WQE is on the NIC, if the window and an ordering layer's
    /// hold let it go.
    fn new_data_at(&self, q: u32) -> Option<Time> {
        let qp = self.qps.get(q);
        if qp.snd_nxt >= qp.next_psn {
            return None;
        }
        if let Some(w) = self.window_packets(qp) {
            if qp.inflight_packets() >= w {
                return None;
            }
        }
        let e = &qp.sq[qp.entry_of(qp.snd_nxt)?];
        if requester::hold_last_write(self.spec, qp, e, qp.snd_nxt) {
            // Requeued by the ACK that releases it.
            return None;
        }
        Some(e.ready_at)
    }

    /// Puts `q` into its NIC's scheduler if it has something to send and is not there yet.
    pub fn requeue(&mut self, q: u32) {
        self.requeue_from(q, false);
    }

    /// [`Ctx::requeue`] right after `q` sent a packet: what its rate limiter banked and did not
    /// spend carries over (any other hand-over starts banking no earlier than now: the queue
    /// pair was out of the scheduler, held by its window, a hold or a pause).
    pub fn requeue_after_send(&mut self, q: u32) {
        self.requeue_from(q, true);
    }

    fn requeue_from(&mut self, q: u32, after_send: bool) {
        if self.qps.get(q).in_sched {
            return;
        }
        let now = self.now;
        if let Some(at) = self.eligible_at(q) {
            let qp = self.qps.get_mut(q);
            qp.in_sched = true;
            qp.eligible_since = if after_send { qp.ready_since(at) } else { qp.ready_since(at).max(now) };
            let h = qp.host;
            super::sched::QpScheduler::push(&mut self.nics[h as usize].sched, q, at, self.now);
            self.out.push(Action::Kick(h));
        }
    }

    /// Hands a completion to the queue pair's owner: the host's CQ (kept in visibility order),
    /// or an application.
    pub fn deliver(&mut self, q: u32, c: Completion) {
        let qp = self.qps.get(q);
        match qp.owner {
            Owner::HOST => {
                let cq = &mut self.nics[qp.host as usize].cq;
                let pos = cq.partition_point(|x| x.at <= c.at);
                cq.insert(pos, c);
            }
            owner => self.out.push(Action::Complete { owner, c }),
        }
    }

    /// Writes a CQE for `q` behind its data, in memory at `t` (`now` if none), and delivers it.
    #[allow(clippy::too_many_arguments)]
    pub fn complete(&mut self, q: u32, wr_id: u64, kind: CompletionKind, status: Status, bytes: u64, imm: Option<u32>, t: Time) {
        let h = self.qps.get(q).host as usize;
        let at = self.nics[h].pcie.write_cqe_behind(self.now, t);
        self.deliver(q, Completion { wr_id, qp: q, kind, status, bytes, imm, at });
    }

    /// Writes a CQE for `q` that the NIC issues at `t` with no data before it (an error or a
    /// flush), and delivers it.
    fn complete_issued(&mut self, q: u32, wr_id: u64, kind: CompletionKind, status: Status, t: Time) {
        let h = self.qps.get(q).host as usize;
        let at = self.nics[h].pcie.write_cqe(self.now, t);
        self.deliver(q, Completion { wr_id, qp: q, kind, status, bytes: 0, imm: None, at });
    }

    /// Queue pair `q` fails: the WQE at `index` completes with `status`, the rest are flushed.
    pub fn qp_error(&mut self, q: u32, index: Option<usize>, status: Status, t: Time) {
        let qp = self.qps.get_mut(q);
        if qp.state == QpState::Free {
            return;
        }
        qp.state = QpState::Error;
        let mut entries = std::mem::take(&mut qp.sq);
        let mut recvs = std::mem::take(&mut qp.rq);
        qp.reads_posted = 0;
        qp.reads.clear();
        qp.resend.clear();
        self.out.push(Action::Cancel(qp.timer));
        for (i, e) in entries.drain(..).enumerate() {
            let st = if Some(i) == index { status } else { Status::Flushed };
            self.complete_issued(q, e.wr.id, e.wr.verb.completion_kind(), st, t);
        }
        for r in recvs.drain(..) {
            self.complete_issued(q, r.id, CompletionKind::Recv, Status::Flushed, t);
        }
        // Keep the queues' capacity for the slot's next connection.
        let qp = self.qps.get_mut(q);
        qp.sq = entries;
        qp.rq = recvs;
    }

    /// Sends an ACK, NAK or CNP from queue pair `q` to its peer through the host port's queue.
    pub fn send_control(&mut self, q: u32, op: Opcode, syndrome: Syndrome, psn: u64, echo: &Packet, echo_id: Option<PacketId>) {
        let qp = self.qps.get_mut(q);
        let ack_class = self.spec.ack_class(qp.priority);
        // A CNP tells the sender's DCQCN; it does not settle the ECN echo the next ACK owes
        // (DCTCP and MP-RDMA count marked bytes from ACKs, whatever CNPs went out).
        let ece = if op == Opcode::Cnp { qp.ecn_seen } else { std::mem::take(&mut qp.ecn_seen) };
        let hdr = RoceHeader {
            opcode: op,
            syndrome,
            msn: if op == Opcode::Cnp { 0 } else { qp.msn },
            va: echo.seq, // selective NAK: the PSN that arrived
            ts: echo.roce.ts,
            imm: ece as u32,
            path: echo.udp_sport,
            ..Default::default()
        };
        let pkt = Packet { size: self.spec.header_bytes(op), priority: ack_class, ecn: ECN_NOT_ECT, ..qp.packet_to_peer(psn, self.now, hdr) };
        let (host, path) = (qp.host, qp.path);
        let id = self.push_control(host, pkt, path);
        if self.int_enabled {
            let int = echo_id.map(|e| self.pool.int(e)).unwrap_or_default();
            *self.pool.int_mut(id) = int;
        }
    }
}

impl Qp {
    /// A RoCE packet from this queue pair to its peer, with PSN `psn` and headers `roce`
    /// (size, class and ECN to be set by the caller).
    pub fn packet_to_peer(&self, psn: u64, now: Time, roce: RoceHeader) -> Packet {
        Packet {
            kind: PacketKind::Roce,
            src: self.node,
            dst: self.peer_node,
            dst_host: self.peer_host,
            size: 0,
            priority: self.priority,
            ecn: ECN_NOT_ECT,
            udp_sport: self.udp_sport,
            udp_dport: self.udp_dport,
            flow_hash: self.flow_hash,
            flow: self.peer,
            seq: psn,
            sent_at: now,
            ingress_port: u32::MAX,
            ttl: TTL,
            roce,
        }
    }
}

impl Verb {
    /// The kind of completion a send WQE of this verb produces.
    pub fn completion_kind(self) -> CompletionKind {
        match self {
            Verb::Write | Verb::WriteImm(_) => CompletionKind::Write,
            Verb::Read => CompletionKind::Read,
            Verb::Send | Verb::SendImm(_) => CompletionKind::Send,
        }
    }
}

/// Packets a queue pair of a NIC of line rate `line` may have in flight: the tightest of its
/// congestion window, the NIC's `cc_window` (scaled by rate over line rate if asked) and its
/// recovery scheme's cap. Every scheduler's view of a queue pair (the NIC's, and the upcoming
/// packets a self-timing one is shown) goes by it.
pub fn window_packets(spec: &NicSpec, line: BitsPerSec, qp: &Qp) -> Option<u64> {
    let mtu = spec.mtu as u64;
    let cap = spec.cc_window.and_then(|w| {
        // GLOBAL_T 0: the pair's own BDP (`pairBdp`, at its path's slowest link), else the
        // window given (`maxBdp`).
        let b = if w.per_pair { Some(qp.pair_bdp) } else { w.bytes.map(|b| b.0) }?;
        let b = if w.with_rate { (b as u128 * qp.cc.rate().0 as u128 / line.0.max(1) as u128) as u64 } else { b };
        Some(b.div_ceil(mtu).max(1))
    });
    let cc = qp.cc.packet_window().or_else(|| qp.cc.window().map(|w| w.div_ceil(mtu).max(1)));
    let rec = spec.recovery.window_packets(qp, spec.mtu, line, spec.window.map(|b| b.0));
    [cap, cc, rec].into_iter().flatten().min()
}
