//! Wiring of the NICs to the event loop: the verbs API, the host port's transmit pipeline (which
//! pulls packets from the QP scheduler), packet arrival and the per-QP timer. Mechanism lives in
//! [`crate::nic::transport`]; every call into it is followed by draining its outbox here, in the
//! order the transport asked.

use crate::scenario::schema::PathChoice;
use super::{NodeRole, Wake, World};
use crate::host::apps::AppEvent;
use crate::nic::pcie::DESCRIPTOR_BYTES;
use crate::nic::qp::{packets_for, Owner, Qp, QpState};
use crate::nic::qp_table::QpTable;
use crate::nic::star::STAR_HANDLE;
use crate::nic::sched::{Pick, QpScheduler};
use crate::nic::transport::{requester, responder, Action, Ctx};
use crate::nic::verbs::{Access, Completion, MemoryRegion, PostError, RecvWr, SendWr, VerbsError};
use crate::fabric::paths::{PathId, NO_PATH};
use crate::units::Time;
use crate::wire::packet::{PacketId, PacketKind};
use crate::scenario::schema::FlowVerb;
use crate::wire::roce::{Family, Opcode, Position};

/// The queue pairs' upcoming packets, as schedulers that time packets themselves see them.
/// A scheduler may consume a packet and fetch that flow's next within one decision, before the
/// NIC has built the consumed packet: `consumed` counts those so the fetch skips them.
struct UpcomingPackets<'a> {
    qps: &'a QpTable,
    spec: &'a crate::nic::NicSpec,
    line: crate::units::BitsPerSec,
    now: Time,
    consumed: Option<(u32, u32)>,
    /// The last fetch stopped at packets posted but held back (window, held WRITE end, WQE
    /// not yet read).
    held_back: bool,
}

impl tassel::WqeSource for UpcomingPackets<'_> {
    fn fetch(&mut self, flow: u32, skip: u32, max: u32, out: &mut Vec<u32>) {
        if (flow as usize) < self.qps.len() {
            let qp = self.qps.get(flow);
            let w = crate::nic::transport::window_packets(self.spec, self.line, qp);
            let gone = match self.consumed {
                Some((f, n)) if f == flow => n,
                _ => 0,
            };
            // An ordering layer may hold a WRITE's last packet back, and its header (and the
            // telemetry's bytes) ride on every data packet (requester::build_next).
            let hold = self.spec.ordering.as_ref().is_some_and(|o| o.hold_last_write);
            self.held_back = qp.upcoming(self.spec, self.now, w, hold, skip + gone, max, out);
        }
    }
    fn held_back(&self) -> bool {
        self.held_back
    }
    fn consume(&mut self, flow: u32) {
        self.consumed = match self.consumed {
            Some((f, n)) if f == flow => Some((f, n + 1)),
            _ => Some((flow, 1)),
        };
    }
}

/// What topping up the transmit pipeline came to.
enum Fill {
    /// The pipeline holds what it may.
    Full,
    /// The scheduler had nothing now; when it may have (if known).
    Wait(Option<Time>),
}

impl World {
    /// Lends the transport its context.
    #[inline]
    pub(super) fn transport(&mut self) -> Ctx<'_> {
        Ctx {
            now: self.now,
            spec: &self.nic_spec,
            nics: &mut self.nics,
            qps: &mut self.qps,
            pool: &mut self.pool,
            tap: &mut self.tap,
            out: &mut self.outbox,
            int_enabled: self.int_enabled,
            seed: self.seed,
        }
    }

    /// Carries out what the transport asked for, in order. An application reacting to a
    /// completion may call the transport again; its actions are drained before the rest.
    pub(crate) fn drain_outbox(&mut self) {
        if self.outbox.is_empty() {
            return;
        }
        let spare = self.outbox_spare.pop().unwrap_or_default();
        let mut actions = std::mem::replace(&mut self.outbox.actions, spare);
        for a in actions.drain(..) {
            match a {
                Action::Arm { timer, at } => self.timers.arm(timer, at),
                Action::ArmIfLater { timer, at } => self.timers.arm_if_later(timer, at),
                Action::Cancel(timer) => self.timers.cancel(timer),
                Action::Kick(h) => self.kick_host_port(h),
                Action::Control { host, id } => {
                    let p = self.nics[host as usize].port;
                    let pkt = self.pool.get(id);
                    let (class, size) = (pkt.priority, pkt.size);
                    let ack = || pkt.kind == PacketKind::Roce && matches!(pkt.roce.opcode, Opcode::Acknowledge | Opcode::Cnp);
                    if self.nic_spec.ack_unpaused && ack() {
                        self.ports[p as usize].enqueue_control(id, &mut self.pool);
                    } else {
                        self.ports[p as usize].enqueue_front(class, id, size, &mut self.pool);
                    }
                    self.kick_host_port(host);
                }
                Action::Complete { owner, c } => self.app_event(owner.app, AppEvent::Completion(owner.tag, c)),
                Action::Message { owner, placed } => self.app_event(owner.app, AppEvent::Message(owner.tag, placed)),
            }
        }
        self.outbox_spare.push(actions);
    }

    /// Host index of a node, or an error for a switch or an unknown node.
    pub(crate) fn host_of(&self, node: u32) -> Result<u32, VerbsError> {
        match self.roles.get(node as usize) {
            Some(NodeRole::Host(h)) => Ok(*h),
            _ => Err(VerbsError::NotAHost(node)),
        }
    }

    /// Host index of a node known to be a host (scenario validation checked it).
    pub(crate) fn host_index(&self, node: u32) -> u32 {
        self.host_of(node).unwrap_or_else(|e| panic!("{e}"))
    }

    fn open_qp(&self, q: u32) -> Result<&Qp, VerbsError> {
        self.qps.find(q).ok_or(VerbsError::UnknownQp(q))
    }

    // ------------------------------------------------------------------ verbs

    /// Registers `[addr, addr + len)` of host `node`'s memory.
    /// A region of a StaR stateless side goes into its peers' whitelists (protection domain 0;
    /// [`World::register_mr_in`] names another).
    pub fn register_mr(&mut self, node: u32, addr: u64, len: u64, access: Access) -> Result<MemoryRegion, VerbsError> {
        self.register_mr_in(node, 0, addr, len, access)
    }

    fn check_range(&self, h: u32, addr: u64, len: u64) -> Result<(), VerbsError> {
        let size = self.nics[h as usize].memory.size();
        match addr.checked_add(len) {
            Some(end) if end <= size => Ok(()),
            _ => Err(VerbsError::OutsideMemory { addr, len }),
        }
    }

    /// Writes bytes into a host's memory directly (what the application does before posting).
    pub fn fill_memory(&mut self, node: u32, addr: u64, data: &[u8]) -> Result<(), VerbsError> {
        let h = self.host_of(node)?;
        self.check_range(h, addr, data.len() as u64)?;
        self.nics[h as usize].memory.write(addr, data);
        Ok(())
    }

    /// Reads a host's memory (empty in size-only mode).
    pub fn memory(&self, node: u32, addr: u64, len: u64) -> Result<&[u8], VerbsError> {
        let h = self.host_of(node)?;
        self.check_range(h, addr, len)?;
        Ok(self.nics[h as usize].memory.slice(addr, len))
    }

    /// Creates a connected pair of RC queue pairs between hosts `a` and `b` (node ids).
    pub fn connect(&mut self, a: u32, b: u32) -> Result<(u32, u32), VerbsError> {
        self.host_of(a)?;
        self.host_of(b)?;
        Ok(self.connect_owned(a, b, Owner::HOST, Owner::HOST))
    }

    pub(crate) fn connect_owned(&mut self, a: u32, b: u32, owner_a: Owner, owner_b: Owner) -> (u32, u32) {
        let qa = self.alloc_qp(a, owner_a);
        let qb = self.alloc_qp(b, owner_b);
        for (q, peer) in [(qa, qb), (qb, qa)] {
            let (a, b) = (self.qps.get(q).node, self.qps.get(peer).node);
            let rtt = self.base_rtt(a, b);
            self.transport().connect_to(q, peer, rtt);
            // GLOBAL_T 0's window: the pair's own BDP at its path's slowest link (`pairBdp`);
            // the path is walked only where a window reads it.
            if self.nic_spec.cc_window.is_some_and(|w| w.per_pair) {
                self.qps.get_mut(q).pair_bdp = self.pair_bdp(a, b);
            }
            self.pick_path(q);
        }
        (qa, qb)
    }

    /// With carried paths on, puts queue pair `q` on one of the k shortest paths between its
    /// hosts' switches, chosen by its 5-tuple hash (as ECMP chooses among equal-cost ports).
    fn pick_path(&mut self, q: u32) {
        if self.paths.is_none() {
            return;
        }
        let (a, b, hash) = { let qp = self.qps.get(q); (qp.node, qp.peer_node, qp.flow_hash) };
        let path = self.path_for(a, b, hash);
        self.transport().set_path(q, path);
    }

    /// The carried path from host `a` to `b` that 5-tuple hash `hash` picks (`NO_PATH` when
    /// paths are not carried).
    fn path_for(&mut self, a: u32, b: u32, hash: u32) -> u32 {
        if self.path_choice != PathChoice::Connection {
            return NO_PATH;
        }
        let set = self.live_paths(a, b);
        if set.is_empty() { NO_PATH } else { set[(crate::sim::rng::mix64(hash as u64) % set.len() as u64) as usize] }
    }

    /// The carried paths from host `a` to `b` whose links were all up when routes were last
    /// computed.
    fn live_paths(&mut self, a: u32, b: u32) -> Vec<PathId> {
        let set = self.paths_between(a, b).unwrap_or_default();
        set.into_iter().filter(|&p| self.path_is_up(p)).collect()
    }

    /// Whether every link of `path` was up when routes were last computed.
    fn path_is_up(&self, path: PathId) -> bool {
        self.paths.as_ref().is_none_or(|t| (path as usize) >= t.len() || t.is_up(path, &self.routed_up))
    }

    /// Routes are recomputed after a link changed: every queue pair whose carried path crosses
    /// a link that is down takes another of its k shortest paths that is up (by its hash, as
    /// at connection time), or the switches' routes if none is.
    pub(super) fn repath(&mut self) {
        if self.path_choice != PathChoice::Connection || self.paths.is_none() {
            return;
        }
        let stale: Vec<(u32, u32, u32, u32)> = self
            .qps
            .iter()
            .filter(|(_, qp)| qp.path != NO_PATH && !self.path_is_up(qp.path))
            .map(|(q, qp)| (q, qp.node, qp.peer_node, qp.flow_hash))
            .collect();
        for (q, a, b, hash) in stale {
            let path = self.path_for(a, b, hash);
            if path != self.qps.get(q).path {
                self.transport().set_path(q, path);
            }
        }
    }

    /// The carried paths from host `a` to host `b` (node ids), shortest first: the k shortest
    /// switch paths between their switches (`routing.k_shortest_paths`). Empty when carried
    /// paths are off, the hosts share a switch, or one has no link.
    pub fn paths_between(&mut self, a: u32, b: u32) -> Result<Vec<PathId>, VerbsError> {
        self.host_of(a)?;
        self.host_of(b)?;
        let (Some(sa), Some(sb)) = (self.first_hop(a), self.first_hop(b)) else { return Ok(Vec::new()) };
        let Some(table) = &mut self.paths else { return Ok(Vec::new()) };
        if sa == sb {
            return Ok(Vec::new());
        }
        Ok(table.between(&self.adjacency, &self.is_host, sa, sb).to_vec())
    }

    /// The egress ports of carried path `path`.
    pub fn path_ports(&self, path: PathId) -> &[u32] {
        self.paths.as_ref().map_or(&[], |t| if (path as usize) < t.len() { t.ports(path) } else { &[] })
    }

    /// Makes queue pair `q`'s packets carry `path` ([`NO_PATH`]: follow the switches' routes).
    pub fn set_path(&mut self, q: u32, path: PathId) -> Result<(), VerbsError> {
        self.open_qp(q)?;
        if path != NO_PATH && self.path_ports(path).is_empty() {
            return Err(VerbsError::UnknownPath(path));
        }
        self.transport().set_path(q, path);
        Ok(())
    }

    fn alloc_qp(&mut self, node: u32, owner: Owner) -> u32 {
        let h = self.host_index(node);
        let (timers, spec) = (&mut self.timers, &self.nic_spec);
        let (q, serial) = self.qps.open(self.now, |q| Qp::new_slot(timers.add_timer(Wake::Qp(q)), spec));
        let sport = 49152 + (crate::sim::rng::mix64(self.seed ^ ((q as u64) << 20) ^ serial) % 16384) as u16;
        self.qps.get_mut(q).start(spec, h, node, owner, sport);
        let nic = &mut self.nics[h as usize];
        if let Some(o) = &mut nic.ordering {
            o.opened(self.now);
        }
        nic.active_qps += 1;
        nic.peak_qps = nic.peak_qps.max(nic.active_qps);
        q
    }

    /// Destroys a queue pair; its slot is reused after a quarantine.
    pub fn destroy_qp(&mut self, q: u32) {
        if q & STAR_HANDLE != 0 {
            return self.star_destroy(q);
        }
        self.transport().destroy(q);
        self.drain_outbox();
    }

    /// Changes a queue pair's UDP source port (steers ECMP onto another path).
    /// With carried paths on, the new 5-tuple picks the path again.
    pub fn set_udp_sport(&mut self, q: u32, sport: u16) -> Result<(), VerbsError> {
        let dport = self.open_qp(q)?.udp_dport;
        self.set_udp_ports(q, sport, dport)
    }

    /// Changes both UDP ports of a queue pair's packets (the destination port is RoCEv2's 4791
    /// unless changed; ns-3 numbers both per host, see `flows.ports`).
    pub fn set_udp_ports(&mut self, q: u32, sport: u16, dport: u16) -> Result<(), VerbsError> {
        self.open_qp(q)?;
        self.transport().set_udp_ports(q, sport, dport);
        self.pick_path(q);
        Ok(())
    }

    /// Writes application hint `value` for queue pair `q` into the region its application
    /// shares with the NIC (SCR's host domain): subscribers, SCR's policies among them, see it
    /// as `NicEvent::Hint` (`water_filling` takes it as the queue pair's weight).
    pub fn write_hint(&mut self, q: u32, value: u32) -> Result<(), VerbsError> {
        self.open_qp(q)?;
        self.transport().write_hint(q, value);
        self.drain_outbox();
        Ok(())
    }

    /// Queue pair `q`'s buffers are in the GPU's memory (GPUDirect RDMA, SCR A.9): its payload
    /// is read and written over the NIC's peer-to-peer GPU path (`[nic.gpu]`), not the host's
    /// PCIe link. (Addresses still name the host's registered memory; only the path moves.)
    pub fn use_gpu_memory(&mut self, q: u32) -> Result<(), VerbsError> {
        self.open_qp(q)?;
        let host = self.qps.get(q).host;
        if self.nics[host as usize].gpu.is_none() {
            return Err(VerbsError::NoGpu(self.nics[host as usize].node));
        }
        self.qps.get_mut(q).gpu_memory = true;
        Ok(())
    }

    /// Sends an out-of-band signal (`value`, plus `bytes` of padding) from queue pair `q` to its
    /// peer, where subscribers see it as `NicEvent::Signal`.
    pub fn send_signal(&mut self, q: u32, value: u32, bytes: u32) -> Result<(), VerbsError> {
        self.open_qp(q)?;
        if bytes > crate::nic::scr::MAX_SIGNAL_BYTES {
            return Err(VerbsError::SignalTooLarge(bytes));
        }
        self.transport().send_signal(q, value, bytes);
        self.drain_outbox();
        Ok(())
    }

    /// Sends a path probe from queue pair `q` to its peer on UDP source port `sport`: it takes
    /// the route a packet of `q` with that port would (ECMP hash, or carried path), and its
    /// answer reaches `q`'s subscribers as `NicEvent::RttProbe { rtt, sport }`.
    pub fn send_path_probe(&mut self, q: u32, sport: u16) -> Result<(), VerbsError> {
        self.open_qp(q)?;
        let (a, b) = { let qp = self.qps.get(q); (qp.node, qp.peer_node) };
        let hash = crate::fabric::lb::flow_hash(a, b, sport, crate::wire::roce::ROCE_UDP_PORT);
        let path = self.path_for(a, b, hash);
        self.transport().send_probe(q, sport, hash, path);
        self.drain_outbox();
        Ok(())
    }

    /// Caps queue pair `q`'s rate at `bps` (e.g. perftest's per-QP limit); `u64::MAX` removes it.
    /// A cap of 0 would stop the queue pair for good, and the pacer reads 0 as "not paced":
    /// it is refused.
    pub fn set_rate_limit(&mut self, q: u32, bps: u64) -> Result<(), VerbsError> {
        self.open_qp(q)?;
        if bps == 0 {
            return Err(VerbsError::ZeroRate);
        }
        self.transport().set_rate_limit(q, bps);
        self.drain_outbox();
        Ok(())
    }

    /// Sets queue pair `q`'s dequeue rate, the knob a control policy turns (SCR §4.4); the
    /// application's own limit (`set_rate_limit`) still holds, the lower one in force.
    pub fn set_dequeue_rate(&mut self, q: u32, bps: u64) -> Result<(), VerbsError> {
        self.open_qp(q)?;
        self.transport().set_dequeue_rate(q, bps);
        self.drain_outbox();
        Ok(())
    }

    /// Posts a send WQE now. Local-buffer errors complete with an error, as verbs do.
    pub fn post_send(&mut self, q: u32, wr: SendWr) -> Result<(), PostError> {
        self.post_send_at(q, wr, self.now)
    }

    /// Posts a send WQE at time `t ≥ now` (the host's doorbell time).
    pub fn post_send_at(&mut self, q: u32, wr: SendWr, t: Time) -> Result<(), PostError> {
        if wr.len > crate::nic::verbs::MAX_MESSAGE_BYTES {
            return Err(PostError::TooLong);
        }
        if q & STAR_HANDLE != 0 {
            return self.star_post_send(q, wr, t.max(self.now));
        }
        if self.qps.find(q).is_none() {
            return Err(PostError::UnknownQp);
        }
        let r = requester::post_send(&mut self.transport(), q, wr, t);
        self.drain_outbox();
        r
    }

    /// Posts a receive WQE.
    pub fn post_recv(&mut self, q: u32, wr: RecvWr) -> Result<(), PostError> {
        self.post_recv_at(q, wr, self.now)
    }

    /// Posts a receive WQE at `t` (no earlier than now), as an application does that reacts to
    /// a completion it sees at `t`. A StaR stateless end packs it into its WQEP then; a RoCE
    /// queue pair's receive queue takes it at once (receive posting costs no time in this
    /// model, and nothing arrives for it before the peer hears back).
    pub fn post_recv_at(&mut self, q: u32, wr: RecvWr, t: Time) -> Result<(), PostError> {
        if q & STAR_HANDLE != 0 {
            return self.star_post_recv(q, wr, t);
        }
        let depth = self.nic_spec.rq_depth as usize;
        let qp = match self.qps.find(q) {
            None => return Err(PostError::UnknownQp),
            Some(qp) if qp.state != QpState::Ready => return Err(PostError::BadState),
            Some(qp) if qp.rq.len() >= depth => return Err(PostError::QueueFull),
            Some(_) => self.qps.get_mut(q),
        };
        qp.rq.push_back(wr);
        Ok(())
    }

    /// Takes the completions of host `node` that are visible by now (for `Owner::HOST` QPs).
    pub fn poll_cq(&mut self, node: u32) -> Result<Vec<Completion>, VerbsError> {
        let h = self.host_of(node)? as usize;
        let now = self.now;
        let n = self.nics[h].cq.iter().take_while(|c| c.at <= now).count();
        Ok(self.nics[h].cq.drain(..n).collect())
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
        self.scr_catch_up();
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
    /// With `tx_pipeline = "0B"` there is no pipeline: the scheduler picks each packet when the
    /// port frees, as ns-3's RDMA NIC does (`RdmaEgressQueue::DequeueQindex` on transmit complete).
    /// Either way a packet whose payload is still being read waits apart until it may start
    /// ([`World::nic_next_packet`]).
    pub(super) fn host_port_start(&mut self, p: u32, h: u32) {
        let now = self.now;
        // Scheduler decisions run ahead of the wire: the pipeline is topped up whenever the
        // scheduler is free, even while a packet is being serialized.
        let (next, full) = match self.fill_pipeline(p, h) {
            Fill::Full => (None, true),
            Fill::Wait(t) => (t, false),
        };
        let port = &mut self.ports[p as usize];
        if !port.is_idle(now) {
            let t = next.map_or(port.busy_until, |n| n.max(now).min(port.busy_until));
            self.timers.arm_if_later(port.timer, t);
            return;
        }
        let Some((id, class)) = port.dequeue(now, &self.pool) else {
            let t = [next, port.next_unpause(now)].into_iter().flatten().min();
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
        } else if pkt.kind == PacketKind::Data {
            self.hosts[h as usize].raw_queued[pkt.priority as usize] -= 1;
        }
        let done = port.start_tx(now, pkt.size);
        // Wake when the next packet can start (something is queued, or the pipeline was full and
        // is now empty: a pipeline of at most one packet) or when the scheduler can decide
        // again, whichever is first; not at all if nothing waits.
        let queued = (port.has_queued() || full).then_some(done);
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
    /// holds `nic.tx_pipeline` bytes (at least one packet; with no pipeline, one packet and only
    /// while the port is free); says whether it is full, or when to try again if the scheduler
    /// stopped it (nothing eligible yet, or its decision time not over).
    fn fill_pipeline(&mut self, p: u32, h: u32) -> Fill {
        let pipeline = self.nic_spec.tx_pipeline.0;
        if pipeline == 0 && !self.ports[p as usize].is_idle(self.now) {
            return Fill::Full;
        }
        while self.ports[p as usize].total_bytes() == 0 || self.ports[p as usize].total_bytes() < pipeline {
            match self.nic_next_packet(h) {
                Ok(id) => {
                    let pkt = self.pool.get(id);
                    let (class, size) = (pkt.priority, pkt.size);
                    self.ports[p as usize].enqueue(class, id, size, &mut self.pool);
                    self.stats.packets_sent += 1;
                }
                Err(t) => {
                    // Queue pairs set aside on a paused class are looked at again when the
                    // pause runs out, RESUME or not (a PAUSE lapses after its quanta, and ns-3's
                    // NIC restarts then, `QbbNetDevice::Resume`): the NIC waited for a RESUME,
                    // which a switch whose ingress stays above XON does not send.
                    let (now, port) = (self.now, &self.ports[p as usize]);
                    let parked = &self.nics[h as usize].parked;
                    let lapse = parked.classes().filter(|&c| port.is_paused(c, now)).map(|c| port.paused_until(c)).min();
                    return Fill::Wait([t, lapse].into_iter().flatten().min());
                }
            }
        }
        Fill::Full
    }

    /// PFC freezes a self-timing scheduler (Tassel §3.5): tells host `h`'s scheduler whether
    /// its port is paused for the data class now. Called as a PAUSE or RESUME frame arrives,
    /// so the timer stops with the wire, and whenever the NIC looks for a packet (a pause that
    /// ran out without a RESUME).
    pub(super) fn sync_sched_pause(&mut self, h: u32) {
        // A scheduler that does not time rates itself ignores pauses (its `set_paused` does
        // nothing, and `sched_paused` is read only beside `rate_limits`).
        if !self.nics[h as usize].sched.rate_limits() {
            return;
        }
        let now = self.now;
        let p = self.nics[h as usize].port;
        let paused = self.ports[p as usize].is_paused(self.nic_spec.priority as usize, now);
        if paused != self.nics[h as usize].sched_paused {
            self.nics[h as usize].sched_paused = paused;
            self.nics[h as usize].sched.set_paused(paused, now);
            if paused && self.nics[h as usize].sched.rate_limits() {
                // Thaw it when the pause runs out, if no RESUME comes and nothing wakes the
                // port sooner.
                let (until, timer) = (self.ports[p as usize].paused_until(self.nic_spec.priority as usize), self.ports[p as usize].timer);
                self.timers.arm_if_later(timer, until);
            }
        }
    }

    /// The next data packet of host `h`'s NIC, or the time something becomes eligible: first
    /// a packet whose payload read has caught up, then the scheduler's picks (those whose
    /// payload is still on its way wait, up to [`World::hold_limit`] bytes per payload path).
    fn nic_next_packet(&mut self, h: u32) -> Result<PacketId, Option<Time>> {
        let released = self.nics[h as usize].payload_wait.pop_ready(self.now);
        self.unpark_payload_waits(h);
        if let Some((id, q)) = released {
            // Its TX event is published now, as it leaves (SCR's TX collector, congestion
            // control's byte counters), not when it was built.
            let bytes = self.pool.get(id).size as u64;
            crate::nic::transport::emit(&mut self.transport(), q, crate::nic::events::NicEvent::Tx { bytes, packets: 1 });
            self.drain_outbox();
            if let Some(id) = self.through_state_cache(h, q, id) {
                return Ok(id);
            }
        }
        let picked = self.nic_pick(h);
        let waiting = self.nics[h as usize].payload_wait.next_ready();
        picked.map_err(|t| [t, waiting].into_iter().flatten().min())
    }

    /// Packet `id` of queue pair `q`, ready for the wire: itself, or on a NIC with a
    /// connection-state cache, what the cache lets go now ([`World::state_tx`]).
    fn through_state_cache(&mut self, h: u32, q: u32, id: PacketId) -> Option<PacketId> {
        if self.nics[h as usize].state.is_none() {
            Some(id)
        } else {
            self.state_tx(h, q, id)
        }
    }

    /// Queue pairs parked while their payload path's wait was full go back to the scheduler
    /// once it has room.
    fn unpark_payload_waits(&mut self, h: u32) {
        let (limit, packet) = (self.hold_limit(), self.nic_spec.mtu as u64 + 64);
        for q in self.nics[h as usize].payload_wait.unpark(limit, packet) {
            self.qps.get_mut(q).in_sched = false;
            self.transport().requeue(q);
            self.drain_outbox();
        }
    }

    /// Bytes of scheduled packets a NIC holds before the wire (for their payload, or their
    /// connection state) before its scheduler stops picking.
    pub(super) fn hold_limit(&self) -> u64 {
        self.nic_spec.tx_pipeline.0.max(2 * (self.nic_spec.mtu as u64 + 64))
    }

    /// The scheduler's next packet for host `h`'s NIC, or the time something becomes eligible.
    fn nic_pick(&mut self, h: u32) -> Result<PacketId, Option<Time>> {
        let now = self.now;
        let p = self.nics[h as usize].port;
        let classes = self.nics[h as usize].parked.classes();
        for c in classes {
            if !self.ports[p as usize].is_paused(c, now) {
                let parked = self.nics[h as usize].parked.take(c);
                for &q in &parked {
                    self.qps.get_mut(q).in_sched = false;
                    self.transport().requeue(q);
                    self.drain_outbox();
                }
            }
        }
        // A pause that ran out (no RESUME frame) thaws the scheduler here.
        self.sync_sched_pause(h);
        // Packets that waited for their connection state go first, then StaR's send events.
        if let Some(id) = self.state_tx_ready(h) {
            return Ok(id);
        }
        if let Some(id) = self.star_tx_ready(h) {
            return Ok(id);
        }
        if self.nics[h as usize].sched_paused && self.nics[h as usize].sched.rate_limits() {
            // A self-timing scheduler is frozen and sends nothing until the pause ends.
            let until = self.ports[p as usize].paused_until(self.nic_spec.priority as usize);
            return Err(Some(self.star_tx_next(h).map_or(until, |b| b.min(until))));
        }
        loop {
            if let Some(t) = self.state_tx_blocked(h) {
                return Err(Some(t));
            }
            // Hardware cost model: one decision per `decision_time`.
            let stage = &self.nics[h as usize].sched_stage;
            if !stage.is_free(now) {
                return Err(Some(stage.free_at()));
            }
            let line = self.nics[h as usize].line_rate;
            let mut src = UpcomingPackets { qps: &self.qps, spec: &self.nic_spec, line, now, consumed: None, held_back: false };
            let nic = &mut self.nics[h as usize];
            let q = match nic.sched.pop(now, &mut src) {
                Pick::Qp(q) => q,
                Pick::Idle(t) => {
                    return Err([t, self.star_tx_next(h)].into_iter().flatten().min())
                }
            };
            nic.sched_stage.occupy(now, nic.sched.decision_time());
            // Fetch-and-drop (Tassel §3.5): WQEs fetched and discarded by the filter cost PCIe reads.
            let dropped = nic.sched.fetch_stats().1;
            if dropped > nic.dropped_seen {
                nic.pcie.fetch_dropped(now, dropped - nic.dropped_seen);
                nic.dropped_seen = dropped;
            }
            let qp = self.qps.get_mut(q);
            qp.in_sched = false;
            if qp.state != QpState::Ready {
                continue;
            }
            if self.ports[p as usize].is_paused(qp.priority as usize, now) {
                qp.in_sched = true;
                self.nics[h as usize].parked.park(qp.priority as usize, q);
                continue;
            }
            let path = self.nics[h as usize].path_index(qp.gpu_memory);
            if self.nics[h as usize].payload_wait.is_full(path, self.hold_limit()) {
                self.qps.get_mut(q).in_sched = true;
                self.nics[h as usize].payload_wait.park(path, q);
                continue;
            }
            let picked = requester::next_packet(&mut self.transport(), q);
            self.drain_outbox();
            let Some((id, start)) = picked else { continue };
            if start > now {
                let size = self.pool.get(id).size;
                self.nics[h as usize].payload_wait.push(path, start, id, q, size);
                continue;
            }
            if let Some(id) = self.through_state_cache(h, q, id) {
                return Ok(id);
            }
        }
    }

    // ------------------------------------------------------------------ receive and timers

    /// A RoCE packet reaches host `h`.
    pub(super) fn nic_receive(&mut self, h: u32, id: PacketId) {
        if !self.rx_admit(h, id) {
            return;
        }
        // A packet the state cache holds waits in the receive buffer too.
        if self.nics[h as usize].state.is_none() || self.state_rx(h, id) {
            self.nic_deliver(h, id);
        }
        self.rx_check(h);
    }

    /// A RoCE packet goes to host `h`'s transport (its connection state is on the NIC).
    pub(super) fn nic_deliver(&mut self, h: u32, id: PacketId) {
        if self.pool.get(id).kind == PacketKind::Star {
            self.star_stateful_rx(h, id);
            return;
        }
        // Delivered counts what `packets_sent` counts: requests and READ responses, not the
        // ACKs, NAKs, CNPs and signals they cause.
        let counted = !matches!(self.pool.get(id).roce.opcode.family(), Family::Ack | Family::Cnp | Family::OutOfBand);
        let refused_before = self.nics[h as usize].rnr_naks;
        if counted {
            self.stats.packets_delivered += 1;
        }
        responder::receive(&mut self.transport(), h, id);
        // For the stall detector, a request refused for want of a receive (RNR NAK) has not
        // arrived: a SEND retried forever at a peer that posts none is a stall.
        if counted && self.nics[h as usize].rnr_naks == refused_before {
            self.stats.last_delivery = self.now;
        }
        self.drain_outbox();
    }

    /// Queue pair `q`'s timer: congestion-control timers and the retransmission timeout.
    pub(super) fn qp_timer(&mut self, q: u32) {
        requester::on_timer(&mut self.transport(), q);
        self.drain_outbox();
    }

    // ------------------------------------------------------------------ paths

    /// Base RTT between two hosts: propagation both ways plus one full packet's serialization
    /// per hop out and one ACK's per hop back, along the first shortest path; under the `ns3`
    /// profile ns-3's `pairRtt` ([`World::ns3_pair_rtt`]).
    pub fn base_rtt(&mut self, a: u32, b: u32) -> Time {
        if let Some(&t) = self.rtt_cache.get(&(a, b)) {
            return t;
        }
        let t = if self.nic_spec.profile == crate::nic::NicProfile::Ns3 {
            self.ns3_pair_rtt(a, b)
        } else {
            let full = self.nic_spec.mtu as u64 + self.nic_spec.headers.bytes(Opcode::WriteMiddle, 0) as u64;
            let ack = self.nic_spec.headers.bytes(Opcode::Acknowledge, 0) as u64;
            self.path_time(a, b, full) + self.path_time(b, a, ack)
        };
        self.rtt_cache.insert((a, b), t);
        t
    }

    /// A flow's completion time alone on an idle network, for its verb: the NIC's fixed costs
    /// (doorbell and WQE fetch, the first payload read for WRITE and SEND, the CQE write), the
    /// first packet across the path and the rest of the message's wire bytes at the sending
    /// link's rate, and what closes the message: the ACK back for WRITE and SEND (HPCC's
    /// "standalone FCT" plus the PCIe terms this NIC model has); for READ, the request out and
    /// the responses back, the last one written to memory.
    pub fn ideal_fct(&mut self, src: u32, dst: u32, size: u64, verb: FlowVerb) -> Time {
        let n = packets_for(size, self.nic_spec.mtu) as u64;
        let family = match verb {
            FlowVerb::Write => Family::Write,
            FlowVerb::Send => Family::Send,
            FlowVerb::Read => Family::ReadResponse,
        };
        let headers = self.nic_spec.headers;
        let hdr = |pos| headers.bytes(Opcode::data(family, pos, false), 0) as u64;
        let wire = size
            + match n {
                1 => hdr(Position::Only),
                _ => hdr(Position::First) + hdr(Position::Last) + (n - 2) * hdr(Position::Middle),
            };
        if self.nic_spec.profile == crate::nic::NicProfile::Ns3 {
            return self.ns3_ideal_fct(src, dst, wire);
        }
        let mtu = self.nic_spec.mtu as u64;
        let first = size.min(mtu) + hdr(if n == 1 { Position::Only } else { Position::First });
        let last_payload = size - (n - 1) * mtu;
        let l = self.nic_spec.pcie.latency;
        let bw = self.nic_spec.pcie.bandwidth;
        let inline = verb != FlowVerb::Read && size <= self.nic_spec.inline_bytes as u64;
        let wqe = crate::nic::pcie::wqe_bytes(if inline { size } else { 0 });
        let fetch = bw.tx_time(crate::nic::pcie::DOORBELL_BYTES) + l + l + bw.tx_time(wqe) + l;
        let cqe = bw.tx_time(DESCRIPTOR_BYTES) + l;
        let first_payload = size.min(mtu);
        let last_wire = if n == 1 { first } else { last_payload + hdr(Position::Last) };
        let middle_wire = mtu + hdr(Position::Middle);
        let before_last_wire = if n == 2 { first } else { middle_wire };
        // Frames times as the links time them (`links.serialization`); under ns-3's rule each
        // frame is rounded on its own, so a run of them is timed frame by frame.
        let rule = self.frame_rule();
        // What a link carries after the first packet up to packet `upto` (0, n - 2 or n - 1).
        let behind = |r: crate::units::BitsPerSec, upto: u64| {
            let middles = upto.min(n.saturating_sub(2));
            let last = if upto > 0 && upto == n - 1 { last_wire } else { 0 };
            match rule {
                crate::units::Serialization::Exact => r.tx_time(middles * middle_wire + last),
                crate::units::Serialization::Ns3 => Time(rule.tx_time(r, middle_wire).0 * middles) + if last > 0 { rule.tx_time(r, last) } else { Time::ZERO },
            }
        };
        // The data's walk from host `a` to host `b`: when its first, next-to-last and last
        // packets arrive. A packet arrives no sooner than
        // - every link k has carried the message up to it, from when the first packet reached
        //   k (after its wait for its payload, below), and it has crossed the links after k
        //   (the tightest k is the slowest link, or one after which a smaller packet is
        //   quicker than the first);
        // - its payload is read over PCIe (`nic/payload_wait.rs`: a packet's last byte leaves
        //   no sooner than its payload's last comes over PCIe; a 9000 B payload takes 360 ns at
        //   200 Gbps, its packet 182 ns at 400) and it has crossed the links after the first
        //   (a 400 Gbps link behind the default 200 Gbps PCIe: a lone 1 MB WRITE took a
        //   slowdown of 1.77 when the ideal ran it at the link's rate);
        // - the packet before it has arrived and it has crossed the last link behind it (a
        //   short last packet queues behind a full one at every switch).
        let data = |w: &World, a: u32, b: u32| {
            let (delay, rates) = w.path_links(a, b);
            let pcie = |bytes| if inline { Time::ZERO } else { bw.tx_time(bytes) };
            // When the first packet reaches the start of link k: across the links before it,
            // after it waited for its payload on the NIC.
            let first_at = |k: usize| if k == 0 { Time::ZERO } else { serialization(rule, first, &rates[..k]).max(pcie(first_payload) + serialization(rule, first, &rates[1..k])) };
            let arrive = |payload: u64, upto: u64, pkt: u64| {
                let by_links = (0..rates.len()).map(|k| first_at(k) + rule.tx_time(rates[k], first) + behind(rates[k], upto) + serialization(rule, pkt, &rates[k + 1..])).max().unwrap_or(Time::ZERO);
                delay + by_links.max(pcie(payload) + serialization(rule, pkt, rates.get(1..).unwrap_or(&[])))
            };
            let first_in = arrive(first_payload, 0, first);
            if n == 1 {
                return (first_in, first_in, first_in);
            }
            let before_last_in = arrive(size - last_payload, n - 2, before_last_wire);
            let last_link = rates.last().map_or(Time::ZERO, |&r| rule.tx_time(r, last_wire));
            let last_in = arrive(size, n - 1, last_wire).max(before_last_in + last_link);
            (first_in, before_last_in, last_in)
        };
        // A non-inline payload is read from host memory first, one PCIe round trip.
        let read_round_trip = l + l;
        match verb {
            FlowVerb::Write | FlowVerb::Send => {
                let payload_read = if inline { Time::ZERO } else { read_round_trip };
                let ack = self.path_time(dst, src, headers.bytes(Opcode::Acknowledge, 0) as u64);
                let (_, _, last_in) = data(self, src, dst);
                fetch + payload_read + cqe + last_in + ack
            }
            FlowVerb::Read => {
                let request = self.path_time(src, dst, headers.bytes(Opcode::ReadRequest, 0) as u64);
                // The responder reads the payload from its host's memory.
                let (first_in, before_last_in, last_in) = data(self, dst, src);
                // The requester writes each response's payload to its memory as it arrives, in
                // turn through one PCIe write channel: the writing ends no sooner than the
                // payload from any response on has been written after that response arrived (a
                // 9000 B response and a 1 B one 5 ns apart: 360 ns of writing). The CQE follows.
                let rest_from = |at: Time, payload: u64| at + bw.tx_time(payload);
                let mut written = rest_from(last_in, last_payload).max(rest_from(first_in, size));
                if n > 1 {
                    written = written.max(rest_from(before_last_in, mtu + last_payload));
                }
                fetch + request + read_round_trip + written + cqe
            }
        }
    }

    /// ns-3's ideal FCT (`qp_finish` in HPCC's `third.cc` and ConWeave's
    /// `network-load-balance.cc`): the pair's `pairRtt` ([`World::ns3_pair_rtt`]) plus the
    /// message's `wire` bytes at the path's slowest link, in whole ns rounded down.
    fn ns3_ideal_fct(&mut self, src: u32, dst: u32, wire: u64) -> Time {
        let rtt = self.base_rtt(src, dst);
        let (_, rates) = self.path_links(src, dst);
        rtt + rates.iter().copied().min().map_or(Time::ZERO, |r| whole_ns(wire, r))
    }

    /// ns-3's `pairRtt` from host `a` to host `b` (`CalculateRoute` and the RTT loop in
    /// HPCC's `third.cc` and ConWeave's `network-load-balance.cc`): twice the path's
    /// propagation delay, plus one `mtu`-byte payload's serialization per hop, each in whole ns
    /// rounded down. No headers, and nothing for the ACK's way back.
    fn ns3_pair_rtt(&self, a: u32, b: u32) -> Time {
        let (delay, rates) = self.path_links(a, b);
        let mtu = self.nic_spec.mtu as u64;
        rates.iter().fold(delay + delay, |t, &r| t + whole_ns(mtu, r))
    }

    /// The bandwidth-delay product between hosts `a` and `b` (node ids) as ns-3's scratch
    /// programs size windows with it (`CalculateRoute` and the `pairBdp` loop in HPCC's
    /// `third.cc` and ConWeave's `network-load-balance.cc`): the RTT times the path's slowest
    /// link (`pairBw`, the least rate along the route), not the sender's line rate. The RTT is
    /// [`World::base_rtt`]: ns-3's `pairRtt` under the `ns3` profile.
    pub(super) fn pair_bdp(&mut self, a: u32, b: u32) -> u64 {
        let (_, rates) = self.path_links(a, b);
        let Some(slowest) = rates.iter().copied().min() else { return 0 };
        let rtt = self.base_rtt(a, b);
        slowest.bytes_in(rtt)
    }

    /// Along the first shortest path from host `a` to host `b`: the summed propagation delay,
    /// the summed serialization of a `bytes` packet, and the slowest link's rate.
    fn path_profile(&self, a: u32, b: u32, bytes: u64) -> (Time, Time, Option<crate::units::BitsPerSec>) {
        let (delay, rates) = self.path_links(a, b);
        (delay, serialization(self.frame_rule(), bytes, &rates), rates.iter().copied().min())
    }

    /// Along the first shortest path from host `a` to host `b`: the summed propagation delay and
    /// each link's rate, in order.
    fn path_links(&self, a: u32, b: u32) -> (Time, Vec<crate::units::BitsPerSec>) {
        let Some(NodeRole::Host(dst_host)) = self.roles.get(b as usize).copied() else { return (Time::ZERO, Vec::new()) };
        let (mut delay, mut rates) = (Time::ZERO, Vec::new());
        let mut node = a;
        while node != b && rates.len() < 64 {
            let port = if self.is_host[node as usize] {
                match self.adjacency[node as usize].first() {
                    Some(adj) => adj.port,
                    None => break,
                }
            } else {
                match self.routes.candidates(node, dst_host).first() {
                    Some(p) => p,
                    None => break,
                }
            };
            rates.push(self.ports[port as usize].rate);
            delay += self.links[port as usize].delay;
            node = self.ports[self.ports[port as usize].peer as usize].node;
        }
        (delay, rates)
    }

    /// How the links time a frame (`links.serialization`, the same on every link).
    fn frame_rule(&self) -> crate::units::Serialization {
        self.ports.first().map_or(Default::default(), |p| p.serialization())
    }

    /// One-way time of a `bytes` packet from host `a` to host `b` on an idle path.
    pub fn path_time(&self, a: u32, b: u32, bytes: u64) -> Time {
        let (delay, serialization, _) = self.path_profile(a, b, bytes);
        delay + serialization
    }
}

/// `bytes` at `rate` in whole ns rounded down, as ns-3's scratch programs reckon in integers
/// (`packet_payload_size * 1000000000lu * 8 / bw`).
fn whole_ns(bytes: u64, rate: crate::units::BitsPerSec) -> Time {
    Time::from_ns((bytes as u128 * 8_000_000_000 / rate.0.max(1) as u128) as u64)
}

/// A `bytes` packet's serialization summed over links of `rates`, each timed by `rule`.
fn serialization(rule: crate::units::Serialization, bytes: u64, rates: &[crate::units::BitsPerSec]) -> Time {
    rates.iter().fold(Time::ZERO, |t, &r| t + rule.tx_time(r, bytes))
}
