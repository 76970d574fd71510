//! NIC handlers: the verbs calls, the host port pulling packets from the QP scheduler, the
//! requester and responder sides of the RoCEv2 reliable connection, and the per-QP timer.
//!
//! Transmit: when the host port is idle it first sends queued control packets (ACK, NAK, CNP),
//! then asks the scheduler for a queue pair and builds that queue pair's next packet:
//! a resend (selective repeat), a READ response, or new data at `snd_nxt`.
//! Receive: data goes to the responder side (PSN check, placement by DMA, ACK coalescing, CNP on
//! ECN marks); ACKs, NAKs, CNPs and READ responses go to the requester side.

use super::{NodeRole, Wake, World};
use crate::wire::packet::{Packet, PacketId, PacketKind, RoceHeader, ECN_CE, ECN_ECT0};
use crate::nic::cc::{Ack, CongestionControl, FlowParams};
use crate::nic::qp::{opcode_at, packets_for, payload_at, Owner, PsnBitmap, Qp, QpState, ReadJob, SqEntry};
use crate::nic::sched::{Pick, QpScheduler};
use crate::nic::verbs::{Access, Completion, CompletionKind, MemoryRegion, PostError, RecvWr, SendWr, Status, Verb};
use crate::nic::Recovery;
use crate::units::Time;
use crate::wire::roce::{Family, Opcode, Syndrome, ROCE_UDP_PORT};
use std::collections::VecDeque;

/// How long a destroyed queue pair's slot waits before reuse, so stray packets find it free.
const QP_QUARANTINE: Time = Time::from_ms(2);

/// The queue pairs' upcoming packets, as schedulers that time packets themselves see them.
/// A scheduler may consume a packet and fetch that flow's next within one decision, before the
/// NIC has built the consumed packet: `consumed` counts those so the fetch skips them.
struct UpcomingPackets<'a> {
    qps: &'a [Qp],
    mtu: u32,
    now: Time,
    consumed: Option<(u32, u32)>,
}

impl tassel::WqeSource for UpcomingPackets<'_> {
    fn fetch(&mut self, flow: u32, skip: u32, max: u32, out: &mut Vec<u32>) {
        if let Some(qp) = self.qps.get(flow as usize) {
            let w = qp.cc.window().map(|b| b.div_ceil(self.mtu as u64).max(1));
            let gone = match self.consumed {
                Some((f, n)) if f == flow => n,
                _ => 0,
            };
            qp.upcoming(self.mtu, self.now, w, skip + gone, max, out);
        }
    }
    fn consume(&mut self, flow: u32) {
        self.consumed = match self.consumed {
            Some((f, n)) if f == flow => Some((f, n + 1)),
            _ => Some((flow, 1)),
        };
    }
}

impl World {
    pub(crate) fn host_index(&self, node: u32) -> u32 {
        match self.roles[node as usize] {
            NodeRole::Host(h) => h,
            NodeRole::Switch(_) => panic!("node {node} is a switch, not a host"),
        }
    }

    // ------------------------------------------------------------------ verbs

    /// Registers `[addr, addr + len)` of host `node`'s memory.
    pub fn register_mr(&mut self, node: u32, addr: u64, len: u64, access: Access) -> Option<MemoryRegion> {
        let h = self.host_index(node);
        self.nics[h as usize].memory.register(h, addr, len, access)
    }

    /// Writes bytes into a host's memory directly (what the application does before posting).
    pub fn fill_memory(&mut self, node: u32, addr: u64, data: &[u8]) {
        let h = self.host_index(node);
        self.nics[h as usize].memory.write(addr, data);
    }

    /// Reads a host's memory (empty in size-only mode).
    pub fn memory(&self, node: u32, addr: u64, len: u64) -> &[u8] {
        let h = self.host_index(node);
        self.nics[h as usize].memory.slice(addr, len)
    }

    /// Creates a connected pair of RC queue pairs between hosts `a` and `b` (node ids).
    pub fn connect(&mut self, a: u32, b: u32) -> (u32, u32) {
        self.connect_owned(a, b, Owner::Host, Owner::Host)
    }

    pub(crate) fn connect_owned(&mut self, a: u32, b: u32, owner_a: Owner, owner_b: Owner) -> (u32, u32) {
        let qa = self.alloc_qp(a, owner_a);
        let qb = self.alloc_qp(b, owner_b);
        for (q, peer) in [(qa, qb), (qb, qa)] {
            let (pn, ph) = (self.qps[peer as usize].node, self.qps[peer as usize].host);
            let node = self.qps[q as usize].node;
            let base_rtt = self.base_rtt(node, pn);
            let line_rate = self.ports[self.nics[self.qps[q as usize].host as usize].port as usize].rate;
            let mtu = self.nic_spec.mtu + Opcode::WriteMiddle.header_bytes();
            let now = self.now;
            let qp = &mut self.qps[q as usize];
            qp.peer = peer;
            qp.peer_node = pn;
            qp.peer_host = ph;
            qp.cc = self.nic_spec.cc.build(FlowParams { line_rate, base_rtt, mtu }, now);
            qp.flow_hash = crate::fabric::lb::flow_hash(node, pn, qp.udp_sport, ROCE_UDP_PORT);
            self.sync_rate(q);
        }
        (qa, qb)
    }

    fn alloc_qp(&mut self, node: u32, owner: Owner) -> u32 {
        let h = self.host_index(node);
        let now = self.now;
        let spec = &self.nic_spec;
        let q = match self.qp_free.front() {
            Some(&(t, q)) if t <= now => {
                self.qp_free.pop_front();
                q
            }
            _ => {
                let q = self.qps.len() as u32;
                let timer = self.timers.add_timer(Wake::Qp(q));
                self.qps.push(Qp::new_slot(timer, &self.nic_spec));
                q
            }
        };
        let sport = 49152 + (crate::sim::rng::mix64(self.seed ^ ((q as u64) << 20) ^ self.qp_serial) % 16384) as u16;
        self.qp_serial += 1;
        let qp = &mut self.qps[q as usize];
        qp.reset(spec);
        qp.state = QpState::Ready;
        qp.host = h;
        qp.node = node;
        qp.owner = owner;
        qp.priority = spec.priority;
        qp.udp_sport = sport;
        let nic = &mut self.nics[h as usize];
        nic.active_qps += 1;
        nic.peak_qps = nic.peak_qps.max(nic.active_qps);
        q
    }

    /// Destroys a queue pair; its slot is reused after a quarantine.
    pub fn destroy_qp(&mut self, q: u32) {
        let qp = &mut self.qps[q as usize];
        if qp.state == QpState::Free {
            return;
        }
        qp.state = QpState::Free;
        qp.sq.clear();
        qp.rq.clear();
        qp.reads.clear();
        qp.resend.clear();
        self.timers.cancel(qp.timer);
        let h = qp.host as usize;
        self.nics[h].active_qps -= 1;
        self.nics[h].sched.remove(q);
        self.qp_free.push_back((self.now + QP_QUARANTINE, q));
    }

    /// Changes a queue pair's UDP source port (steers ECMP onto another path).
    pub fn set_udp_sport(&mut self, q: u32, sport: u16) {
        let qp = &mut self.qps[q as usize];
        qp.udp_sport = sport;
        qp.flow_hash = crate::fabric::lb::flow_hash(qp.node, qp.peer_node, sport, ROCE_UDP_PORT);
    }

    /// Posts a send WQE now. Local-buffer errors complete with an error, as verbs do.
    pub fn post_send(&mut self, q: u32, wr: SendWr) -> Result<(), PostError> {
        self.post_send_at(q, wr, self.now)
    }

    /// Posts a send WQE at time `t ≥ now` (the host's doorbell time).
    pub(crate) fn post_send_at(&mut self, q: u32, wr: SendWr, t: Time) -> Result<(), PostError> {
        let qp = &self.qps[q as usize];
        if qp.state != QpState::Ready {
            return Err(PostError::BadState);
        }
        if qp.sq.len() >= self.nic_spec.sq_depth as usize {
            return Err(PostError::QueueFull);
        }
        let h = qp.host as usize;
        let local_ok = wr.len == 0 || self.nics[h].memory.check_local(wr.lkey, wr.local_addr, wr.len);
        let mtu = self.nic_spec.mtu;
        let ready = {
            let pcie = &mut self.nics[h].pcie;
            let fetched = pcie.doorbell_and_fetch(t);
            // READs carry no payload out; small messages ride inline in the WQE.
            if wr.verb == Verb::Read || wr.len <= self.nic_spec.inline_bytes as u64 { fetched } else { pcie.first_payload(fetched) }
        };
        let qp = &mut self.qps[q as usize];
        let npkts = packets_for(wr.len, mtu);
        let entry = SqEntry { wr, first_psn: qp.next_psn, npkts, ready_at: ready, msg: qp.messages, read_next: 0 };
        qp.next_psn += npkts as u64;
        if matches!(wr.verb, Verb::Send | Verb::SendImm(_)) {
            qp.messages += 1;
        }
        qp.sq.push_back(entry);
        if !local_ok {
            self.qp_error(q, qp_entry_index_last(&self.qps[q as usize]), Status::LocalProtection, t);
            return Ok(());
        }
        self.qp_requeue(q);
        self.kick_host_port(h as u32);
        Ok(())
    }

    /// Posts a receive WQE.
    pub fn post_recv(&mut self, q: u32, wr: RecvWr) -> Result<(), PostError> {
        let qp = &mut self.qps[q as usize];
        if qp.state != QpState::Ready {
            return Err(PostError::BadState);
        }
        if qp.rq.len() >= self.nic_spec.rq_depth as usize {
            return Err(PostError::QueueFull);
        }
        qp.rq.push_back(wr);
        Ok(())
    }

    /// Takes the completions of host `node` that are visible by now (for `Owner::Host` QPs).
    pub fn poll_cq(&mut self, node: u32) -> Vec<Completion> {
        let h = self.host_index(node) as usize;
        let now = self.now;
        let n = self.nics[h].cq.iter().take_while(|c| c.at <= now).count();
        self.nics[h].cq.drain(..n).collect()
    }

    /// Runs until `t` (or the scenario's end), for tests and the API.
    pub fn run_until(&mut self, t: Time) {
        let end = self.end;
        self.end = t.min(end);
        while let Some((at, wake)) = self.timers.pop_until(self.end) {
            self.now = at;
            self.dispatch(wake);
            self.stats.events += 1;
        }
        self.now = self.end;
        self.end = end;
    }

    // ------------------------------------------------------------------ transmit

    /// Makes sure the host port looks for work as soon as it is free.
    pub(crate) fn kick_host_port(&mut self, h: u32) {
        let p = self.nics[h as usize].port;
        let port = &self.ports[p as usize];
        let at = port.busy_until.max(self.now);
        self.timers.arm_if_later(port.timer, at);
    }

    /// A host port is free: top up the NIC's transmit pipeline (the port's class queues) from
    /// the QP scheduler, then send the head packet. ACKs and CNPs enter at the head of their
    /// class, data at the tail; the pipeline holds up to `nic.tx_pipeline` bytes of data (at
    /// least one packet), so a newly scheduled message waits behind what is already committed.
    pub(super) fn host_port_start(&mut self, p: u32, h: u32) {
        let now = self.now;
        // Scheduler decisions run ahead of the wire: the pipeline is topped up whenever the
        // scheduler is free, even while a packet is being serialized.
        let next = self.fill_pipeline(p, h);
        let port = &mut self.ports[p as usize];
        if !port.is_idle(now) {
            let t = next.map_or(port.busy_until, |n| n.max(now).min(port.busy_until));
            self.timers.arm_if_later(port.timer, t);
            return;
        }
        let pool = &self.pool;
        let Some((id, class)) = port.dequeue(now, |id| pool.get(id).size) else {
            let t = match (next, port.next_unpause(now)) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if let Some(t) = t {
                self.timers.arm(port.timer, t.max(now));
            }
            return;
        };
        let pkt = self.pool.get_mut(id);
        // RTT samples start when a packet leaves the NIC (hardware timestamps), not when it
        // entered the transmit pipeline; ACKs keep the timestamp they echo.
        if pkt.kind == PacketKind::Roce && pkt.roce.opcode != Opcode::Acknowledge && pkt.roce.opcode != Opcode::Cnp {
            pkt.roce.ts = now;
        }
        let done = port.start_tx(now, pkt.size);
        // Wake when the next packet can start (something is queued) or when the scheduler can
        // decide again, whichever is first; not at all if nothing waits.
        let queued = port.has_queued().then_some(done);
        let t = match (queued, next) {
            (Some(a), Some(b)) => Some(a.min(b.max(now))),
            (a, b) => a.or(b.map(|b| b.max(now))),
        };
        if let Some(t) = t {
            self.timers.arm(port.timer, t);
        }
        if class.is_some() {
            self.host_dequeued(h);
        }
        self.capture(p, id);
        self.link_send(p, id, done);
    }

    /// Pulls data packets from the scheduler into the port's class queues until the pipeline
    /// holds `nic.tx_pipeline` bytes (at least one packet); returns when to try again if the
    /// scheduler stopped it (nothing eligible yet, or its decision time not over).
    fn fill_pipeline(&mut self, p: u32, h: u32) -> Option<Time> {
        let pipeline = self.nic_spec.tx_pipeline.0;
        while self.ports[p as usize].total_bytes() == 0 || self.ports[p as usize].total_bytes() < pipeline {
            match self.nic_next_packet(h) {
                Ok(id) => {
                    let pkt = self.pool.get(id);
                    let (class, size) = (pkt.priority, pkt.size);
                    self.ports[p as usize].enqueue(class, id, size);
                }
                Err(t) => return t,
            }
        }
        None
    }

    /// The next data packet of host `h`'s NIC, or the time something becomes eligible.
    fn nic_next_packet(&mut self, h: u32) -> Result<PacketId, Option<Time>> {
        let now = self.now;
        let p = self.nics[h as usize].port;
        for c in 0..8 {
            if !self.nics[h as usize].parked[c].is_empty() && !self.ports[p as usize].is_paused(c, now) {
                let parked = std::mem::take(&mut self.nics[h as usize].parked[c]);
                for &q in &parked {
                    self.qps[q as usize].in_sched = false;
                    self.qp_requeue(q);
                }
            }
        }
        // PFC freezes a self-timing scheduler (Tassel §3.5).
        let paused = self.ports[p as usize].is_paused(self.nic_spec.priority as usize, now);
        if paused != self.nics[h as usize].sched_paused {
            self.nics[h as usize].sched_paused = paused;
            self.nics[h as usize].sched.set_paused(paused, now);
        }
        loop {
            // Hardware cost model: one decision per `decision_time`.
            let free = self.nics[h as usize].sched_free_at;
            if free > now {
                return Err(Some(free));
            }
            let mut src = UpcomingPackets { qps: &self.qps, mtu: self.nic_spec.mtu, now, consumed: None };
            let nic = &mut self.nics[h as usize];
            let q = match nic.sched.pop(now, &mut src) {
                Pick::Qp(q) => q,
                Pick::Idle(t) => return Err(t),
            };
            nic.sched_free_at = now + nic.sched.decision_time();
            // Fetch-and-drop (Tassel §3.5): WQEs fetched and discarded by the filter cost PCIe reads.
            let dropped = nic.sched.fetch_stats().1;
            if dropped > nic.dropped_seen {
                nic.pcie.bytes_read += (dropped - nic.dropped_seen) * crate::nic::pcie::DESCRIPTOR_BYTES;
                nic.dropped_seen = dropped;
            }
            let qp = &mut self.qps[q as usize];
            qp.in_sched = false;
            if qp.state != QpState::Ready {
                continue;
            }
            if self.ports[p as usize].is_paused(qp.priority as usize, now) {
                qp.in_sched = true;
                self.nics[h as usize].parked[qp.priority as usize].push(q);
                continue;
            }
            match self.qp_next_packet(q) {
                Some((id, end)) => {
                    let bytes = self.pool.get(id).roce.payload;
                    self.nics[h as usize].sched.sent(q, bytes, end);
                    self.qp_requeue(q);
                    return Ok(id);
                }
                None => {
                    // The scheduler chose a queue pair with nothing to send now: the decision
                    // (and, for self-timing schedulers, the link slot) is lost.
                    self.nics[h as usize].wasted_picks += 1;
                    self.qp_requeue(q);
                }
            }
        }
    }

    /// When queue pair `q` can send next, if it has anything to send.
    fn qp_eligible_at(&self, q: u32) -> Option<Time> {
        let qp = &self.qps[q as usize];
        if qp.state != QpState::Ready {
            return None;
        }
        let pace = qp.next_send.max(qp.rnr_until);
        if !qp.reads.is_empty() || !qp.resend.is_empty() {
            return Some(pace);
        }
        if qp.snd_nxt >= qp.next_psn {
            return None;
        }
        if let Some(w) = self.window_packets(qp) {
            if qp.inflight_packets() >= w {
                return None;
            }
        }
        let e = &qp.sq[qp.entry_of(qp.snd_nxt)?];
        Some(pace.max(e.ready_at))
    }

    fn window_packets(&self, qp: &Qp) -> Option<u64> {
        let mtu = self.nic_spec.mtu as u64;
        let cc = qp.cc.window().map(|w| w.div_ceil(mtu).max(1));
        let irn = (self.nic_spec.recovery == Recovery::SelectiveRepeat).then(|| {
            let w = self.nic_spec.window.map(|b| b.0).unwrap_or_else(|| self.bdp_bytes(qp));
            w.div_ceil(mtu).max(1)
        });
        match (cc, irn) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn bdp_bytes(&self, qp: &Qp) -> u64 {
        let rate = self.ports[self.nics[qp.host as usize].port as usize].rate;
        rate.bytes_in(self.base_rtt_cached(qp.node, qp.peer_node))
    }

    /// Puts `q` into its NIC's scheduler if it has something to send and is not there yet.
    pub(crate) fn qp_requeue(&mut self, q: u32) {
        if self.qps[q as usize].in_sched {
            return;
        }
        if let Some(at) = self.qp_eligible_at(q) {
            let now = self.now;
            let qp = &mut self.qps[q as usize];
            qp.in_sched = true;
            let h = qp.host;
            self.nics[h as usize].sched.push(q, at, now);
            self.kick_host_port(h);
        }
    }

    /// Builds `q`'s next packet; returns it and whether it ends a message.
    fn qp_next_packet(&mut self, q: u32) -> Option<(PacketId, bool)> {
        let now = self.now;
        if self.qps[q as usize].next_send.max(self.qps[q as usize].rnr_until) > now {
            return None;
        }
        let mtu = self.nic_spec.mtu;
        let qp = &mut self.qps[q as usize];
        // READ responses first, then resends, then new data.
        let (hdr, psn, retransmit) = if let Some(job) = qp.reads.front_mut() {
            let idx = job.next;
            let payload = payload_at(job.len, mtu, idx);
            let op = opcode_at(Family::ReadResponse, idx, job.npkts, false);
            let hdr = RoceHeader { opcode: op, payload, va: job.va + idx as u64 * mtu as u64, msn: qp.msn, ..Default::default() };
            let psn = job.first_psn + idx as u64;
            job.next += 1;
            if job.next == job.npkts {
                qp.reads.pop_front();
            }
            (hdr, psn, false)
        } else {
            let (psn, retransmit) = match qp.resend.pop_front() {
                Some(psn) => (psn, true),
                None => (qp.snd_nxt, qp.snd_nxt < qp.tx_high),
            };
            let i = qp.entry_of(psn)?;
            let e = qp.sq[i];
            if e.ready_at > now {
                return None;
            }
            let idx = (psn - e.first_psn) as u32;
            let hdr = if e.is_read() {
                let off = idx as u64 * mtu as u64;
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
                if psn >= qp.snd_nxt {
                    qp.snd_nxt = psn + 1;
                }
                let family = e.family();
                let off = idx as u64 * mtu as u64;
                let op = opcode_at(family, idx, e.npkts, e.wr.verb.imm().is_some());
                RoceHeader {
                    opcode: op,
                    payload: payload_at(e.wr.len, mtu, idx),
                    va: if family == Family::Write { e.wr.remote_addr } else { 0 },
                    offset: off as u32,
                    rkey: e.wr.rkey,
                    dma_len: e.wr.len as u32,
                    imm: e.wr.verb.imm().unwrap_or(0),
                    msg: e.msg,
                    ack_req: op.is_last() || qp.probe,
                    ..Default::default()
                }
            };
            qp.probe = false;
            qp.tx_high = qp.tx_high.max(psn + 1);
            (hdr, psn, retransmit)
        };
        let op = hdr.opcode;
        let size = hdr.payload + op.header_bytes();
        let h = qp.host as usize;
        // Payload DMA: bytes mode copies the source bytes into the packet's payload slot (the
        // source address is looked up only then; size-only runs skip it on this hot path).
        let src_addr = match op.family() {
            _ if !self.nics[h].memory.has_bytes() || hdr.payload == 0 => None,
            Family::ReadResponse => Some(hdr.va),
            Family::Write | Family::Send => qp.entry_of(psn).map(|i| qp.sq[i].wr.local_addr + (psn - qp.sq[i].first_psn) * mtu as u64),
            _ => None,
        };
        let pkt = Packet {
            kind: PacketKind::Roce,
            src: qp.node,
            dst: qp.peer_node,
            dst_host: qp.peer_host,
            size,
            priority: qp.priority,
            ecn: ECN_ECT0,
            udp_sport: qp.udp_sport,
            udp_dport: ROCE_UDP_PORT,
            flow_hash: qp.flow_hash,
            flow: qp.peer,
            seq: psn,
            sent_at: now,
            ingress_port: u32::MAX,
            roce: RoceHeader { ts: now, ..hdr },
        };
        let end = op.is_last() || op == Opcode::ReadRequest;
        let id = self.pool.alloc(pkt);
        if hdr.payload > 0 {
            let inline = op.family() != Family::ReadResponse && hdr.dma_len <= self.nic_spec.inline_bytes;
            let nic = &mut self.nics[h];
            let at = if inline { now } else { nic.pcie.read_payload(now, hdr.payload as u64) };
            if let Some(a) = src_addr {
                let mut buf = std::mem::take(&mut nic.scratch);
                nic.memory.read(a, &mut buf, hdr.payload as usize);
                self.pool.set_payload(id, &buf);
                self.nics[h].scratch = buf;
            }
            let qp = &mut self.qps[q as usize];
            qp.next_send = qp.next_send.max(at);
        }
        if self.int_enabled {
            self.pool.int_mut(id).n = 0;
        }
        let line = self.ports[self.nics[h].port as usize].rate;
        let qp = &mut self.qps[q as usize];
        qp.tx_packets += 1;
        qp.tx_bytes += size as u64;
        qp.bytes_sent += hdr.payload as u64;
        if retransmit {
            qp.retransmits += 1;
            self.nics[h].retransmits += 1;
        }
        qp.cc.on_tx(now, size as u64, 1);
        if qp.cc.wants_rtt_probe() {
            qp.probe = true;
        }
        let rate = qp.cc.rate().0.min(qp.rate_limit);
        if rate < line.0 && rate > 0 && !self.nics[h].sched.rate_limits() {
            qp.next_send = qp.next_send.max(now) + crate::units::BitsPerSec(rate).tx_time(size as u64);
        }
        self.sync_rate(q);
        let qp = &mut self.qps[q as usize];
        if qp.rto_at == Time::MAX && op.family() != Family::ReadResponse {
            qp.rto_at = now + self.nic_spec.rto;
        }
        self.arm_qp_timer(q);
        self.stats.packets_sent += 1;
        Some((id, end))
    }

    /// Sends an ACK, NAK or CNP from queue pair `q` to its peer through the host port's queue.
    fn send_control(&mut self, q: u32, op: Opcode, syndrome: Syndrome, psn: u64, echo: &Packet, echo_id: Option<PacketId>) {
        let qp = &mut self.qps[q as usize];
        let ece = std::mem::take(&mut qp.ecn_seen);
        let hdr = RoceHeader {
            opcode: op,
            syndrome,
            msn: if op == Opcode::Cnp { 0 } else { qp.msn },
            va: echo.seq, // selective NAK: the PSN that arrived
            ts: echo.roce.ts,
            imm: ece as u32,
            ..Default::default()
        };
        let pkt = Packet {
            kind: PacketKind::Roce,
            src: qp.node,
            dst: qp.peer_node,
            dst_host: qp.peer_host,
            size: op.header_bytes(),
            priority: self.nic_spec.ack_class(),
            ecn: crate::wire::packet::ECN_NOT_ECT,
            udp_sport: qp.udp_sport,
            udp_dport: ROCE_UDP_PORT,
            flow_hash: qp.flow_hash,
            flow: qp.peer,
            seq: psn,
            sent_at: self.now,
            ingress_port: u32::MAX,
            roce: hdr,
        };
        let h = qp.host;
        let id = self.pool.alloc(pkt);
        if self.int_enabled {
            let int = echo_id.map(|e| self.pool.int(e)).unwrap_or_default();
            *self.pool.int_mut(id) = int;
        }
        let p = self.nics[h as usize].port;
        self.ports[p as usize].enqueue_front(pkt.priority, id, pkt.size);
        self.kick_host_port(h);
    }

    // ------------------------------------------------------------------ receive

    /// A RoCE packet reaches host `h`.
    pub(super) fn nic_receive(&mut self, h: u32, id: PacketId) {
        let pkt = *self.pool.get(id);
        self.stats.packets_delivered += 1;
        let q = pkt.flow;
        let valid = (q as usize) < self.qps.len() && {
            let qp = &self.qps[q as usize];
            qp.state != QpState::Free && qp.host == h && qp.peer_node == pkt.src
        };
        if valid {
            let op = pkt.roce.opcode;
            match op.family() {
                Family::Write | Family::Send | Family::ReadRequest => self.responder_receive(q, op, &pkt, id),
                Family::Ack => self.requester_ack(q, &pkt, id),
                Family::Cnp => {
                    let now = self.now;
                    self.qps[q as usize].cc.on_cnp(now);
                    self.sync_rate(q);
                    self.arm_qp_timer(q);
                }
                Family::ReadResponse => self.requester_read_response(q, &pkt, id),
            }
        }
        self.pool.free(id);
    }

    fn responder_receive(&mut self, q: u32, op: Opcode, pkt: &Packet, id: PacketId) {
        let now = self.now;
        let spec_cnp = self.nic_spec.cnp_interval;
        let selective = self.nic_spec.recovery == Recovery::SelectiveRepeat;
        {
            let qp = &mut self.qps[q as usize];
            if pkt.ecn == ECN_CE {
                qp.ecn_seen = true;
                if qp.last_cnp.is_none_or(|t| now >= t + spec_cnp) {
                    qp.last_cnp = Some(now);
                    self.send_control(q, Opcode::Cnp, Syndrome::Ack, 0, pkt, None);
                }
            }
        }
        let qp = &mut self.qps[q as usize];
        if qp.state != QpState::Ready {
            return;
        }
        let psn = pkt.seq;
        if psn < qp.epsn {
            // Duplicate: a READ is answered again (from that PSN); anything else is re-ACKed.
            if op == Opcode::ReadRequest {
                self.start_read(q, pkt);
            } else {
                let e = qp.epsn - 1;
                self.send_control(q, Opcode::Acknowledge, Syndrome::Ack, e, pkt, Some(id));
            }
            return;
        }
        if psn > qp.epsn {
            let ep = qp.epsn;
            if selective {
                // Keep plain WRITE data that lands in range; NAK with the PSN that arrived.
                if op.family() == Family::Write && !op.has_imm() && psn - ep < crate::nic::qp::SACK_RANGE
                    && self.check_write(q, pkt) {
                        self.place(q, pkt, id, pkt.roce.va + pkt.roce.offset as u64);
                        self.qps[q as usize].ooo.set(psn);
                    }
                self.send_control(q, Opcode::Acknowledge, Syndrome::NakSequence, ep, pkt, Some(id));
            } else if !qp.nak_sent {
                qp.nak_sent = true;
                self.send_control(q, Opcode::Acknowledge, Syndrome::NakSequence, ep, pkt, Some(id));
            }
            return;
        }
        // In order.
        match op.family() {
            Family::Write => {
                if !self.check_write(q, pkt) {
                    self.responder_fail(q, pkt, Syndrome::NakRemoteAccess);
                    return;
                }
                if op.has_imm() && self.qps[q as usize].rq.is_empty() {
                    self.rnr(q, pkt);
                    return;
                }
                let placed = self.place(q, pkt, id, pkt.roce.va + pkt.roce.offset as u64);
                if op.is_last() {
                    let qp = &mut self.qps[q as usize];
                    qp.msn += 1;
                    if op.has_imm() {
                        let rwr = qp.rq.pop_front().expect("checked above");
                        self.deliver_recv(q, rwr.id, pkt.roce.dma_len as u64, Some(pkt.roce.imm), Status::Success, placed);
                    }
                    self.message_arrived(q, placed);
                }
            }
            Family::Send => {
                let qp = &mut self.qps[q as usize];
                if op.is_first() {
                    let Some(rwr) = qp.rq.pop_front() else {
                        self.rnr(q, pkt);
                        return;
                    };
                    if rwr.len < pkt.roce.dma_len as u64 {
                        self.deliver_recv(q, rwr.id, 0, None, Status::LocalLength, now);
                        self.responder_fail(q, pkt, Syndrome::NakInvalidRequest);
                        return;
                    }
                    qp.recv_cur = Some(rwr);
                }
                let Some(rwr) = qp.recv_cur else {
                    self.responder_fail(q, pkt, Syndrome::NakInvalidRequest);
                    return;
                };
                let placed = self.place(q, pkt, id, rwr.addr + pkt.roce.offset as u64);
                if op.is_last() {
                    let qp = &mut self.qps[q as usize];
                    qp.recv_cur = None;
                    qp.msn += 1;
                    let imm = op.has_imm().then_some(pkt.roce.imm);
                    self.deliver_recv(q, rwr.id, pkt.roce.dma_len as u64, imm, Status::Success, placed);
                    self.message_arrived(q, placed);
                }
            }
            Family::ReadRequest => {
                let h = self.qps[q as usize].host as usize;
                if !self.nics[h].memory.check_remote(pkt.roce.rkey, pkt.roce.va, pkt.roce.dma_len as u64, Access::REMOTE_READ) {
                    self.responder_fail(q, pkt, Syndrome::NakRemoteAccess);
                    return;
                }
                self.start_read(q, pkt);
                let qp = &mut self.qps[q as usize];
                qp.msn += 1;
                qp.epsn = psn + packets_for(pkt.roce.dma_len as u64, self.nic_spec.mtu) as u64;
                qp.nak_sent = false;
                qp.ooo.reset(qp.epsn);
                return;
            }
            _ => unreachable!("responder gets requests only"),
        }
        let interval = self.nic_spec.ack_interval;
        let qp = &mut self.qps[q as usize];
        qp.epsn = psn + 1;
        qp.nak_sent = false;
        if selective {
            qp.ooo.advance_to(qp.epsn);
            qp.epsn = qp.ooo.advance_over_set();
        }
        qp.unacked += 1;
        if qp.unacked >= interval || op.is_last() || pkt.roce.ack_req || qp.epsn != psn + 1 {
            qp.unacked = 0;
            let e = qp.epsn - 1;
            self.send_control(q, Opcode::Acknowledge, Syndrome::Ack, e, pkt, Some(id));
        }
    }

    /// Whether a WRITE's rkey, whole range and right check out at the responder.
    fn check_write(&self, q: u32, pkt: &Packet) -> bool {
        let h = self.qps[q as usize].host as usize;
        let mem = &self.nics[h].memory;
        let r = &pkt.roce;
        r.offset as u64 + r.payload as u64 <= r.dma_len as u64 && mem.check_remote(r.rkey, r.va, r.dma_len as u64, Access::REMOTE_WRITE)
    }

    /// DMA-writes a packet's payload to `addr`; returns when it is in host memory.
    fn place(&mut self, q: u32, pkt: &Packet, id: PacketId, addr: u64) -> Time {
        let h = self.qps[q as usize].host as usize;
        let now = self.now;
        let nic = &mut self.nics[h];
        let done = nic.pcie.write_payload(now, pkt.roce.payload as u64);
        if nic.memory.has_bytes() && pkt.roce.payload > 0 {
            let data = self.pool.payload(id);
            let end = (addr + data.len() as u64).min(nic.memory.size());
            if addr < end {
                nic.memory.write(addr, &data[..(end - addr) as usize]);
            }
        }
        done
    }

    fn rnr(&mut self, q: u32, pkt: &Packet) {
        let e = self.qps[q as usize].epsn;
        self.send_control(q, Opcode::Acknowledge, Syndrome::RnrNak, e, pkt, None);
    }

    /// The responder rejects a request: NAK with `syndrome`, and its queue pair fails.
    fn responder_fail(&mut self, q: u32, pkt: &Packet, syndrome: Syndrome) {
        let e = pkt.seq;
        self.send_control(q, Opcode::Acknowledge, syndrome, e, pkt, None);
        let now = self.now;
        self.qp_error(q, None, Status::Flushed, now);
    }

    fn start_read(&mut self, q: u32, pkt: &Packet) {
        let mtu = self.nic_spec.mtu;
        let len = pkt.roce.dma_len as u64;
        let qp = &mut self.qps[q as usize];
        // A repeated request supersedes what was being answered from that PSN on.
        qp.reads.retain(|j| j.first_psn + (j.npkts as u64) <= pkt.seq);
        qp.reads.push_back(ReadJob { first_psn: pkt.seq, npkts: packets_for(len, mtu), next: 0, va: pkt.roce.va, len });
        self.qp_requeue(q);
    }

    /// Requester: an ACK or NAK for queue pair `q`.
    fn requester_ack(&mut self, q: u32, pkt: &Packet, id: PacketId) {
        let now = self.now;
        let syn = pkt.roce.syndrome;
        let psn = pkt.seq;
        if self.qps[q as usize].state != QpState::Ready {
            return;
        }
        if syn == Syndrome::Ack {
            self.ack_upto(q, psn + 1, pkt, id);
        } else if syn == Syndrome::NakSequence {
            self.ack_upto(q, psn, pkt, id);
            let selective = self.nic_spec.recovery == Recovery::SelectiveRepeat;
            let qp = &mut self.qps[q as usize];
            qp.cc.on_nack(now);
            if selective {
                let sack = pkt.roce.va;
                qp.sacked.set(sack);
                let from = qp.resend_high.max(qp.snd_una);
                for p in from..sack.min(qp.snd_nxt) {
                    if !qp.sacked.get(p) {
                        qp.resend.push_back(p);
                    }
                }
                qp.resend_high = qp.resend_high.max(sack + 1);
            } else if psn >= qp.snd_una && psn < qp.snd_nxt {
                qp.snd_nxt = psn;
            }
            self.qp_requeue(q);
        } else if syn == Syndrome::RnrNak {
            self.ack_upto(q, psn, pkt, id);
            let qp = &mut self.qps[q as usize];
            if qp.rnr_left == 0 {
                let i = qp.entry_of(psn);
                self.qp_error(q, i, Status::RnrRetryExceeded, now);
                return;
            }
            qp.rnr_left -= 1;
            qp.snd_nxt = psn;
            qp.resend.clear();
            qp.rnr_until = now + self.nic_spec.rnr_timer;
            self.qp_requeue(q);
        } else {
            let status = if syn == Syndrome::NakRemoteAccess { Status::RemoteAccess } else { Status::RemoteInvalidRequest };
            let i = self.qps[q as usize].entry_of(psn);
            self.qp_error(q, i, status, now);
        }
    }

    /// Cumulative acknowledgement of every PSN below `upto`.
    fn ack_upto(&mut self, q: u32, upto: u64, pkt: &Packet, id: PacketId) {
        let now = self.now;
        let mtu = self.nic_spec.mtu as u64;
        let qp = &mut self.qps[q as usize];
        // A READ is acknowledged only by its own responses.
        let mut limit = upto.min(qp.snd_nxt.max(qp.snd_una));
        if let Some(r) = qp.sq.iter().find(|e| e.is_read() && e.read_next < e.npkts && e.first_psn < limit) {
            limit = limit.min(r.first_psn + r.read_next as u64);
        }
        if limit > qp.snd_una {
            let newly = limit - qp.snd_una;
            qp.snd_una = limit;
            qp.bytes_acked = (qp.bytes_acked + newly * mtu).min(qp.bytes_sent);
            qp.retry_left = self.nic_spec.retry_count;
            qp.rnr_left = self.nic_spec.rnr_retry;
            qp.sacked.advance_to(limit);
            qp.resend.retain(|&p| p >= limit);
            if qp.snd_nxt < limit {
                qp.snd_nxt = limit;
            }
            let int = if self.int_enabled { Some(self.pool.int(id)) } else { None };
            let qp = &mut self.qps[q as usize];
            let ack = Ack {
                acked_bytes: newly * mtu,
                acked_seq: qp.bytes_acked,
                next_seq: qp.bytes_sent,
                rtt: now.saturating_sub(pkt.roce.ts),
                ecn_echo: pkt.roce.imm != 0,
                int: int.as_ref(),
            };
            qp.cc.on_ack(now, &ack);
            let qp = &mut self.qps[q as usize];
            qp.rto_at = if qp.snd_una < qp.snd_nxt || qp.sq.iter().any(|e| e.is_read()) { now + self.nic_spec.rto } else { Time::MAX };
            self.sync_rate(q);
            self.complete_done(q);
            self.arm_qp_timer(q);
            self.qp_requeue(q);
        }
    }

    fn requester_read_response(&mut self, q: u32, pkt: &Packet, id: PacketId) {
        let now = self.now;
        let mtu = self.nic_spec.mtu as u64;
        let qp = &mut self.qps[q as usize];
        if qp.state != QpState::Ready {
            return;
        }
        let Some(i) = qp.entry_of(pkt.seq) else { return };
        let e = qp.sq[i];
        if !e.is_read() {
            return;
        }
        let expected = e.first_psn + e.read_next as u64;
        if pkt.seq > expected {
            // Gap: re-issue the READ from the missing PSN, once per gap.
            if qp.read_rewound != Some(expected) {
                qp.read_rewound = Some(expected);
                qp.snd_nxt = expected;
                qp.cc.on_nack(now);
                self.qp_requeue(q);
            }
            return;
        }
        if pkt.seq < expected {
            return;
        }
        let idx = pkt.seq - e.first_psn;
        let addr = e.wr.local_addr + idx * mtu;
        self.place(q, pkt, id, addr);
        let qp = &mut self.qps[q as usize];
        qp.sq[i].read_next += 1;
        qp.read_rewound = None;
        // In-order responses acknowledge the READ's PSNs and everything before them.
        let upto = pkt.seq + 1;
        let newly = upto.saturating_sub(qp.snd_una);
        if newly > 0 {
            qp.snd_una = upto;
            qp.retry_left = self.nic_spec.retry_count;
            qp.bytes_acked += newly * mtu;
        }
        qp.rto_at = now + self.nic_spec.rto;
        self.complete_done(q);
        self.arm_qp_timer(q);
        self.qp_requeue(q);
    }

    /// Completes finished WQEs at the head of `q`'s send queue, in order.
    fn complete_done(&mut self, q: u32) {
        let now = self.now;
        loop {
            let qp = &mut self.qps[q as usize];
            let Some(e) = qp.sq.front().copied() else { break };
            let done = if e.is_read() { e.read_next >= e.npkts } else { e.end_psn() <= qp.snd_una };
            if !done {
                break;
            }
            qp.sq.pop_front();
            let kind = match e.wr.verb {
                Verb::Write | Verb::WriteImm(_) => CompletionKind::Write,
                Verb::Read => CompletionKind::Read,
                Verb::Send | Verb::SendImm(_) => CompletionKind::Send,
            };
            let h = qp.host as usize;
            let at = self.nics[h].pcie.write_cqe(now);
            let c = Completion { wr_id: e.wr.id, qp: q, kind, status: Status::Success, bytes: e.wr.len, imm: None, at };
            self.deliver(q, c);
        }
        let qp = &mut self.qps[q as usize];
        if qp.sq.is_empty() {
            qp.rto_at = Time::MAX;
        }
    }

    fn deliver_recv(&mut self, q: u32, wr_id: u64, bytes: u64, imm: Option<u32>, status: Status, placed: Time) {
        let h = self.qps[q as usize].host as usize;
        let at = self.nics[h].pcie.write_cqe(placed.max(self.now));
        self.deliver(q, Completion { wr_id, qp: q, kind: CompletionKind::Recv, status, bytes, imm, at });
    }

    /// Hands a completion to the queue pair's owner.
    fn deliver(&mut self, q: u32, c: Completion) {
        match self.qps[q as usize].owner {
            Owner::Host => {
                let h = self.qps[q as usize].host as usize;
                let cq = &mut self.nics[h].cq;
                // Keep the CQ in visibility order.
                let pos = cq.partition_point(|x| x.at <= c.at);
                cq.insert(pos, c);
            }
            owner => self.app_completion(owner, c),
        }
    }

    /// A whole message is in the responder's memory at `placed` (applications polling memory).
    fn message_arrived(&mut self, q: u32, placed: Time) {
        let owner = self.qps[q as usize].owner;
        if owner != Owner::Host {
            self.app_message(owner, placed);
        }
    }

    /// Queue pair `q` fails: the WQE at `index` completes with `status`, the rest are flushed.
    fn qp_error(&mut self, q: u32, index: Option<usize>, status: Status, t: Time) {
        let qp = &mut self.qps[q as usize];
        if qp.state == QpState::Free {
            return;
        }
        qp.state = QpState::Error;
        let entries: Vec<SqEntry> = qp.sq.drain(..).collect();
        let recvs: Vec<RecvWr> = qp.rq.drain(..).collect();
        qp.reads.clear();
        qp.resend.clear();
        let h = qp.host as usize;
        self.timers.cancel(qp.timer);
        for (i, e) in entries.into_iter().enumerate() {
            let st = if Some(i) == index { status } else { Status::Flushed };
            let kind = match e.wr.verb {
                Verb::Write | Verb::WriteImm(_) => CompletionKind::Write,
                Verb::Read => CompletionKind::Read,
                _ => CompletionKind::Send,
            };
            let at = self.nics[h].pcie.write_cqe(t.max(self.now));
            self.deliver(q, Completion { wr_id: e.wr.id, qp: q, kind, status: st, bytes: 0, imm: None, at });
        }
        for r in recvs {
            let at = self.nics[h].pcie.write_cqe(t.max(self.now));
            self.deliver(q, Completion { wr_id: r.id, qp: q, kind: CompletionKind::Recv, status: Status::Flushed, bytes: 0, imm: None, at });
        }
    }

    // ------------------------------------------------------------------ timers

    /// Makes `q`'s timer fire no later than the earliest of its retransmission timeout and CC
    /// timer. Deadlines only move later on ACKs, so the timer is left where it is when it would
    /// fire earlier; the handler then finds nothing due and re-arms (one event per timeout
    /// period instead of one re-arm per ACK).
    #[inline]
    fn arm_qp_timer(&mut self, q: u32) {
        let qp = &self.qps[q as usize];
        let t = qp.cc.next_timer().unwrap_or(Time::MAX).min(qp.rto_at);
        if t != Time::MAX {
            self.timers.arm_if_later(qp.timer, t.max(self.now));
        }
    }

    /// Queue pair `q`'s timer: congestion-control timers and the retransmission timeout.
    pub(super) fn qp_timer(&mut self, q: u32) {
        let now = self.now;
        let selective = self.nic_spec.recovery == Recovery::SelectiveRepeat;
        let qp = &mut self.qps[q as usize];
        if qp.state != QpState::Ready {
            return;
        }
        if qp.cc.next_timer().is_some_and(|t| t <= now) {
            qp.cc.on_timer(now);
        }
        if qp.rto_at <= now {
            let outstanding = qp.snd_una < qp.snd_nxt || qp.sq.iter().any(|e| e.is_read() && e.read_next < e.npkts);
            if !outstanding {
                qp.rto_at = Time::MAX;
            } else if qp.retry_left == 0 {
                let i = qp.entry_of(qp.snd_una).or(Some(0));
                self.qp_error(q, i, Status::RetryExceeded, now);
                return;
            } else {
                qp.retry_left -= 1;
                let h = qp.host as usize;
                self.nics[h].timeouts += 1;
                let qp = &mut self.qps[q as usize];
                qp.cc.on_nack(now);
                // Resume from the oldest unacknowledged PSN (a READ from its first missing response).
                let mut from = qp.snd_una;
                if let Some(r) = qp.sq.iter().find(|e| e.is_read() && e.read_next < e.npkts) {
                    from = from.min(r.first_psn + r.read_next as u64).max(qp.snd_una);
                }
                if selective {
                    qp.resend.clear();
                    let end = qp.snd_nxt;
                    for p in from..end {
                        if !qp.sacked.get(p) {
                            qp.resend.push_back(p);
                        }
                    }
                    qp.resend_high = end;
                } else {
                    qp.snd_nxt = from;
                }
                qp.read_rewound = None;
                qp.rto_at = now + self.nic_spec.rto;
            }
        }
        self.sync_rate(q);
        let qp = &self.qps[q as usize];
        let t = qp.cc.next_timer().unwrap_or(Time::MAX).min(qp.rto_at);
        if t != Time::MAX {
            self.timers.arm(qp.timer, t.max(now));
        }
        self.qp_requeue(q);
    }

    // ------------------------------------------------------------------ helpers

    /// Tells the scheduler `q`'s rate limit (congestion-control rate capped by any configured
    /// limit) when it changed.
    #[inline]
    pub(crate) fn sync_rate(&mut self, q: u32) {
        let qp = &mut self.qps[q as usize];
        let rate = qp.cc.rate().0.min(qp.rate_limit);
        if rate != qp.sched_rate {
            qp.sched_rate = rate;
            let now = self.now;
            self.nics[qp.host as usize].sched.set_rate(q, rate, now);
        }
    }

    /// Caps queue pair `q`'s rate at `bps` (e.g. perftest's per-QP limit); `u64::MAX` removes it.
    pub fn set_rate_limit(&mut self, q: u32, bps: u64) {
        self.qps[q as usize].rate_limit = bps;
        self.sync_rate(q);
    }

    /// Base RTT between two hosts: propagation both ways plus one full packet's serialization
    /// per hop out and one ACK's per hop back, along the first shortest path.
    pub fn base_rtt(&mut self, a: u32, b: u32) -> Time {
        if let Some(&t) = self.rtt_cache.get(&(a, b)) {
            return t;
        }
        let full = self.nic_spec.mtu as u64 + Opcode::WriteMiddle.header_bytes() as u64;
        let ack = Opcode::Acknowledge.header_bytes() as u64;
        let t = self.path_time(a, b, full) + self.path_time(b, a, ack);
        self.rtt_cache.insert((a, b), t);
        t
    }

    fn base_rtt_cached(&self, a: u32, b: u32) -> Time {
        self.rtt_cache.get(&(a, b)).copied().unwrap_or(Time::from_us(10))
    }

    /// One-way time of a `bytes` packet from host `a` to host `b` on an idle path.
    pub fn path_time(&self, a: u32, b: u32, bytes: u64) -> Time {
        let NodeRole::Host(dst_host) = self.roles[b as usize] else { return Time::ZERO };
        let mut node = a;
        let mut t = Time::ZERO;
        let mut hops = 0;
        while node != b && hops < 64 {
            let port = if self.is_host[node as usize] {
                match self.adjacency[node as usize].first() {
                    Some(adj) => adj.port,
                    None => return t,
                }
            } else {
                match self.routes.candidates(node, dst_host).first() {
                    Some(&p) => p,
                    None => return t,
                }
            };
            t = t + self.ports[port as usize].rate.tx_time(bytes) + self.links[port as usize].delay;
            node = self.ports[self.ports[port as usize].peer as usize].node;
            hops += 1;
        }
        t
    }
}

fn qp_entry_index_last(qp: &Qp) -> Option<usize> {
    qp.sq.len().checked_sub(1)
}

impl Qp {
    /// A fresh slot (state Free) with its timer.
    pub(crate) fn new_slot(timer: crate::sim::TimerId, spec: &crate::nic::NicSpec) -> Qp {
        let cc = crate::nic::cc::CcSpec::None {}.build(
            FlowParams { line_rate: crate::units::BitsPerSec(1), base_rtt: Time(1), mtu: spec.mtu },
            Time::ZERO,
        );
        Qp {
            state: QpState::Free,
            host: 0,
            node: 0,
            peer: 0,
            peer_node: 0,
            peer_host: 0,
            priority: 0,
            udp_sport: 0,
            flow_hash: 0,
            owner: Owner::Host,
            timer,
            cc,
            sq: VecDeque::new(),
            next_psn: 0,
            snd_nxt: 0,
            snd_una: 0,
            messages: 0,
            retry_left: 0,
            rnr_left: 0,
            rto_at: Time::MAX,
            rnr_until: Time::ZERO,
            next_send: Time::ZERO,
            in_sched: false,
            bytes_sent: 0,
            bytes_acked: 0,
            sacked: PsnBitmap::default(),
            resend: VecDeque::new(),
            resend_high: 0,
            read_rewound: None,
            tx_high: 0,
            probe: false,
            epsn: 0,
            msn: 0,
            unacked: 0,
            nak_sent: false,
            last_cnp: None,
            ecn_seen: false,
            rq: VecDeque::new(),
            recv_cur: None,
            ooo: PsnBitmap::default(),
            reads: VecDeque::new(),
            tx_packets: 0,
            tx_bytes: 0,
            retransmits: 0,
            rate_limit: u64::MAX,
            sched_rate: 0,
        }
    }

    /// Clears a slot for a new connection (keeps its timer and buffers' capacity).
    pub(crate) fn reset(&mut self, spec: &crate::nic::NicSpec) {
        self.sq.clear();
        self.rq.clear();
        self.reads.clear();
        self.resend.clear();
        self.next_psn = 0;
        self.snd_nxt = 0;
        self.snd_una = 0;
        self.messages = 0;
        self.retry_left = spec.retry_count;
        self.rnr_left = spec.rnr_retry;
        self.rto_at = Time::MAX;
        self.rnr_until = Time::ZERO;
        self.next_send = Time::ZERO;
        self.in_sched = false;
        self.bytes_sent = 0;
        self.bytes_acked = 0;
        self.sacked.reset(0);
        self.resend_high = 0;
        self.read_rewound = None;
        self.tx_high = 0;
        self.probe = false;
        self.epsn = 0;
        self.msn = 0;
        self.unacked = 0;
        self.nak_sent = false;
        self.last_cnp = None;
        self.ecn_seen = false;
        self.recv_cur = None;
        self.ooo.reset(0);
        self.tx_packets = 0;
        self.tx_bytes = 0;
        self.retransmits = 0;
        self.rate_limit = u64::MAX;
        self.sched_rate = 0;
    }
}
