//! Wiring of the StaR stack ([`crate::nic::star`]) to the event loop: connections and their
//! roles, the verbs calls on StaR handles, the packets each side sends (through the NIC's send
//! event queue into the host port, after the stateful side's security check and, on a NIC with
//! a limited state cache, its state lookup), what each side does with an arriving packet, and
//! the timers (the stateful side's retransmission, the library's WQEP timeout).

use super::{Wake, World};
use crate::host::apps::AppEvent;
use crate::nic::qp::Owner;
use crate::nic::star::conn::{Dir, Finished, HeldRecv, Op, Side, StarConn, Unacked, PROBE_CHUNK};
use crate::nic::star::library::{LibActions, StarLib};
use crate::nic::star::stateless::{react, Reaction};
use crate::nic::star::whitelist::{MemoryUse, RegionRule};
use crate::nic::star::{Endpoint, StarRole, StarSpec, STAR_HANDLE};
use crate::nic::verbs::{Access, Completion, CompletionKind, MemoryRegion, MemoryWindow, PostError, RecvWr, SendWr, Status, Verb, VerbsError};
use crate::units::Time;
use crate::wire::packet::{Packet, PacketId, PacketKind, RoceHeader, ECN_NOT_ECT, TTL};
use crate::wire::star::{StarBody, StarCqe, StarHeader, StarMeta, StarOp, StarType, StarWqe, DESCRIPTOR_BYTES, FRAME_OVERHEAD, STATEFUL_PORT, STATELESS_PORT};

/// Source and destination of a StaR packet.
#[derive(Clone, Copy)]
struct Route {
    src: u32,
    dst: u32,
    sport: u16,
    dport: u16,
    hash: u32,
}

/// The route of stateful end `conn`'s packets to its stateless peer.
fn to_stateless(conn: &StarConn) -> Route {
    Route { src: conn.node, dst: conn.peer_node, sport: conn.udp_sport, dport: STATELESS_PORT, hash: conn.flow_hash }
}

impl World {
    fn star_spec(&self) -> StarSpec {
        self.nic_spec.star.unwrap_or_default()
    }

    /// Connects hosts `a` and `b` (node ids) with a StaR connection whose stateless side is
    /// chosen by `role`; returns the two handles (which the verbs calls take like queue-pair
    /// numbers). With [`StarRole::Auto`], below the negotiation threshold on both sides this
    /// makes a normal RDMA connection and returns its queue pairs. The stateless side's queue
    /// pair is in protection domain 0.
    pub fn connect_star(&mut self, a: u32, b: u32, owner_a: Owner, owner_b: Owner, role: StarRole) -> Result<(u32, u32), VerbsError> {
        self.connect_star_in(a, b, owner_a, owner_b, role, 0)
    }

    /// [`World::connect_star`] with the stateless side's queue pair in protection domain `pd`.
    pub fn connect_star_in(&mut self, a: u32, b: u32, owner_a: Owner, owner_b: Owner, role: StarRole, pd: u32) -> Result<(u32, u32), VerbsError> {
        let ha = self.host_of(a)?;
        let hb = self.host_of(b)?;
        let first_stateless = match role {
            StarRole::FirstStateless => true,
            StarRole::SecondStateless => false,
            StarRole::Auto => {
                // Each side announces the stateful connections it holds (§III-C1).
                let held = |h: u32| self.nics[h as usize].active_qps + self.nics[h as usize].star.stateful;
                let (na, nb) = (held(ha), held(hb));
                if na.max(nb) < self.star_spec().negotiate_threshold {
                    return Ok(self.connect_owned(a, b, owner_a, owner_b));
                }
                na > nb
            }
        };
        Ok(if first_stateless {
            self.star_open(a, b, owner_a, owner_b, pd)
        } else {
            let (l, f) = self.star_open(b, a, owner_b, owner_a, pd);
            (f, l)
        })
    }

    /// Opens a StaR connection: the library on `less` and the state on `ful`'s NIC; installs
    /// the whitelist rules on `ful`'s NIC and starts the state migration. Returns the stateless
    /// and stateful handles.
    fn star_open(&mut self, less: u32, ful: u32, owner_less: Owner, owner_ful: Owner, pd: u32) -> (u32, u32) {
        let (hl, hf) = (self.host_index(less), self.host_index(ful));
        let l_ep = self.star.eps.len() as u32;
        let f_ep = l_ep + 1;
        let mix = crate::sim::rng::mix64(self.seed ^ 0x57a2_0000_0000 ^ ((l_ep as u64) << 8));
        let sport = 49152 + (mix % 16384) as u16;
        let hash = (mix >> 32) as u32;
        let tl = self.timers.add_timer(Wake::Star(l_ep));
        let tf = self.timers.add_timer(Wake::Star(f_ep));
        self.star.eps.push(Endpoint::Stateless(StarLib::new(less, hl, owner_less, pd, f_ep, ful, sport, tl)));
        self.star.eps.push(Endpoint::Stateful(StarConn::new(ful, hf, owner_ful, less, l_ep, sport, hash, tf)));
        let s = &mut self.nics[hf as usize].star;
        s.stateful += 1;
        s.peak_stateful = s.peak_stateful.max(s.stateful);
        self.nics[hl as usize].star.stateless += 1;
        // The library installs the connection's rule, and the domain's regions, on the
        // stateful side's NIC (§III-D1).
        let mem = &self.nics[hl as usize].memory;
        let mut rules: Vec<RegionRule> = mem.regions().iter().filter(|r| self.region_pd(hl, r.lkey) == pd).map(rule_of).collect();
        rules.extend(mem.windows().filter(|w| self.region_pd(hl, w.region) == pd).map(window_rule));
        let wl = &mut self.nics[hf as usize].star.whitelist;
        wl.allow_connection(less, f_ep, pd);
        for r in rules {
            wl.allow_region(less, pd, r);
        }
        let timeout = self.star_spec().wqep_timeout;
        let now = self.now;
        let a = self.star.lib_mut(l_ep).expect("just made").start(now, timeout);
        self.star_lib_actions(l_ep, a, now);
        (STAR_HANDLE | l_ep, STAR_HANDLE | f_ep)
    }

    fn region_pd(&self, h: u32, lkey: u32) -> u32 {
        self.nics[h as usize].star_region_pd.get(&lkey).copied().unwrap_or(0)
    }

    /// Registers `[addr, addr + len)` of host `node`'s memory in protection domain `pd`. A
    /// region of a host that is the stateless side of StaR connections in that domain is
    /// added to the whitelists of their stateful sides (§III-D1).
    pub fn register_mr_in(&mut self, node: u32, pd: u32, addr: u64, len: u64, access: Access) -> Result<MemoryRegion, VerbsError> {
        let h = self.host_of(node)?;
        let mr = self.nics[h as usize].memory.register(h, addr, len, access).ok_or(VerbsError::BadRegion { addr, len })?;
        if pd != 0 {
            self.nics[h as usize].star_region_pd.insert(mr.lkey, pd);
        }
        self.star_rule_pushed(node, pd, rule_of(&mr));
        Ok(mr)
    }

    /// The library pushes a memory rule of host `node`'s domain `pd` to every NIC whose
    /// whitelist has that host and domain (§III-D1).
    fn star_rule_pushed(&mut self, node: u32, pd: u32, rule: RegionRule) {
        for nic in &mut self.nics {
            if nic.star.whitelist.knows(node, pd) {
                nic.star.whitelist.allow_region(node, pd, rule);
            }
        }
    }

    /// Binds a memory window over `[addr, addr + len)` of host `node`'s region `lkey` (registered
    /// with [`Access::MW_BIND`]), granting `access` (remote read and/or write, within the
    /// region's) under a new rkey, in the region's protection domain. Remote READs and WRITEs
    /// may name it like a region's rkey; a StaR stateless host's window goes into its peers'
    /// whitelists as a memory rule of the domain (§III-D1).
    pub fn bind_mw(&mut self, node: u32, lkey: u32, addr: u64, len: u64, access: Access) -> Result<MemoryWindow, VerbsError> {
        let h = self.host_of(node)?;
        let w = self.nics[h as usize].memory.bind_window(h, lkey, addr, len, access).map_err(|why| VerbsError::BadWindow { addr, len, why })?;
        let pd = self.region_pd(h, lkey);
        self.star_rule_pushed(node, pd, window_rule(&w));
        Ok(w)
    }

    /// Invalidates host `node`'s memory window `rkey`: from now on no remote access may name
    /// it, and every whitelist drops its rule.
    pub fn invalidate_mw(&mut self, node: u32, rkey: u32) -> Result<(), VerbsError> {
        let h = self.host_of(node)?;
        self.nics[h as usize].memory.invalidate_window(rkey).ok_or(VerbsError::UnknownWindow(rkey))?;
        for nic in &mut self.nics {
            nic.star.whitelist.remove_rkey(node, rkey);
        }
        Ok(())
    }

    // ------------------------------------------------------------------ verbs

    /// Posts a send WQE on a StaR handle at `t`.
    pub(super) fn star_post_send(&mut self, handle: u32, wr: SendWr, t: Time) -> Result<(), PostError> {
        let ep = handle & !STAR_HANDLE;
        let spec = self.star_spec();
        match self.star.eps.get_mut(ep as usize) {
            Some(Endpoint::Stateless(lib)) => {
                let wqe = StarWqe { index: 0, verb: Some(wr.verb), local_addr: wr.local_addr, len: wr.len, lkey: wr.lkey, remote_addr: wr.remote_addr, rkey: wr.rkey };
                if lib.failed {
                    return Err(PostError::BadState);
                }
                if lib.outstanding_in(false) >= self.nic_spec.sq_depth as usize {
                    return Err(PostError::QueueFull);
                }
                // The library checks its own buffer against the host's regions (host memory).
                let (h, owner) = (lib.host, lib.owner);
                if wr.len > 0 && !self.nics[h as usize].memory.check_local(wr.lkey, wr.local_addr, wr.len) {
                    let at = self.nics[h as usize].pcie.write_cqe(self.now, t);
                    self.star_deliver(h, owner, Completion { wr_id: wr.id, qp: handle, kind: wr.verb.completion_kind(), status: Status::LocalProtection, bytes: 0, imm: None, at });
                    return Ok(());
                }
                let Some(Endpoint::Stateless(lib)) = self.star.eps.get_mut(ep as usize) else { unreachable!("matched above") };
                let a = lib.post(wqe, wr.id, wr.verb.completion_kind(), t, spec.wqep_timeout);
                self.star_lib_actions(ep, a, t);
                Ok(())
            }
            Some(Endpoint::Stateful(conn)) => {
                if conn.failed {
                    return Err(PostError::BadState);
                }
                if conn.ops.iter().filter(|o| o.side == Side::Local).count() >= self.nic_spec.sq_depth as usize {
                    return Err(PostError::QueueFull);
                }
                let h = conn.host;
                let ready = self.nics[h as usize].pcie.doorbell_and_fetch(self.now, t, crate::nic::pcie::DESCRIPTOR_BYTES);
                self.star.conn_mut(ep).expect("matched").post_local(wr, ready);
                self.star_pump(ep, ready);
                Ok(())
            }
            _ => Err(PostError::UnknownQp),
        }
    }

    /// Posts a receive WQE on a StaR handle.
    pub(super) fn star_post_recv(&mut self, handle: u32, wr: RecvWr, at: Time) -> Result<(), PostError> {
        let ep = handle & !STAR_HANDLE;
        let (spec, now, depth) = (self.star_spec(), self.now, self.nic_spec.rq_depth as usize);
        match self.star.eps.get_mut(ep as usize) {
            Some(Endpoint::Stateless(lib)) => {
                if lib.failed {
                    return Err(PostError::BadState);
                }
                if lib.outstanding_in(true) >= depth {
                    return Err(PostError::QueueFull);
                }
                let wqe = StarWqe { index: 0, verb: None, local_addr: wr.addr, len: wr.len, lkey: wr.lkey, remote_addr: 0, rkey: 0 };
                // The library packs the WQE when the application posts it (`at`, no earlier
                // than now): a receive posted on seeing a completion goes when the host sees it.
                let at = at.max(now);
                let a = lib.post(wqe, wr.id, CompletionKind::Recv, at, spec.wqep_timeout);
                self.star_lib_actions(ep, a, at);
                Ok(())
            }
            Some(Endpoint::Stateful(conn)) => {
                if conn.failed {
                    return Err(PostError::BadState);
                }
                if conn.local_rq.len() >= depth {
                    return Err(PostError::QueueFull);
                }
                conn.local_rq.push_back(wr);
                self.star_pump(ep, now);
                Ok(())
            }
            _ => Err(PostError::UnknownQp),
        }
    }

    /// Destroys one end of a StaR connection: its outstanding work is flushed, its rules and
    /// state leave its NIC. Packets for it are dropped from then on.
    pub(super) fn star_destroy(&mut self, handle: u32) {
        let ep = handle & !STAR_HANDLE;
        let Some(slot) = self.star.eps.get_mut(ep as usize) else { return };
        match std::mem::replace(slot, Endpoint::Closed) {
            Endpoint::Stateless(mut lib) => {
                self.timers.cancel(lib.timer);
                self.nics[lib.host as usize].star.stateless -= 1;
                // The library takes its rule off the stateful side's NIC (§III-D1).
                let peer = self.host_index(lib.peer_node);
                self.nics[peer as usize].star.whitelist.remove_connection(lib.node, lib.conn);
                self.star_flush(lib.host, lib.owner, handle, lib.drain());
            }
            Endpoint::Stateful(conn) => {
                self.timers.cancel(conn.timer);
                let nic = &mut self.nics[conn.host as usize];
                nic.star.stateful -= 1;
                nic.star.whitelist.remove_connection(conn.peer_node, ep);
                if let Some(st) = &mut nic.state {
                    st.cache.forget(STAR_HANDLE | ep);
                }
                let mut flushed: Vec<(u64, CompletionKind)> = conn.ops.iter().filter_map(|o| o.local_wr.map(|w| (w.id, w.verb.completion_kind()))).collect();
                // Receive completions held for an EA, then the receive WQEs no message reached.
                flushed.extend(conn.held.iter().map(|r| (r.wr_id, CompletionKind::Recv)));
                flushed.extend(conn.local_rq.iter().map(|r| (r.id, CompletionKind::Recv)));
                self.star_flush(conn.host, conn.owner, handle, flushed);
            }
            Endpoint::Closed => {}
        }
    }

    /// Whether `handle` names an open StaR connection end.
    pub fn is_star(&self, handle: u32) -> bool {
        handle & STAR_HANDLE != 0 && matches!(self.star.eps.get((handle & !STAR_HANDLE) as usize), Some(Endpoint::Stateful(_) | Endpoint::Stateless(_)))
    }

    /// Whether `handle` is the stateless end of a StaR connection.
    pub fn is_stateless(&self, handle: u32) -> bool {
        handle & STAR_HANDLE != 0 && matches!(self.star.eps.get((handle & !STAR_HANDLE) as usize), Some(Endpoint::Stateless(_)))
    }

    /// Completes work requests `flushed` (wr id, kind) of end `handle` with `Flushed` now.
    fn star_flush(&mut self, host: u32, owner: Owner, handle: u32, flushed: impl IntoIterator<Item = (u64, CompletionKind)>) {
        let now = self.now;
        for (wr_id, kind) in flushed {
            let at = self.nics[host as usize].pcie.write_cqe(now, now);
            self.star_deliver(host, owner, Completion { wr_id, qp: handle, kind, status: Status::Flushed, bytes: 0, imm: None, at });
        }
    }

    /// Hands a completion to its owner (the host's CQ or an application); a successful receive
    /// completion also tells an application that its message landed.
    fn star_deliver(&mut self, host: u32, owner: Owner, c: Completion) {
        if owner == Owner::HOST {
            let cq = &mut self.nics[host as usize].cq;
            let pos = cq.partition_point(|x| x.at <= c.at);
            cq.insert(pos, c);
            return;
        }
        self.app_event(owner.app, AppEvent::Completion(owner.tag, c));
        if c.kind == CompletionKind::Recv && c.status == Status::Success {
            self.app_event(owner.app, AppEvent::Message(owner.tag, c.at));
        }
    }

    // ------------------------------------------------------------------ the stateless side

    /// Carries out what the library of stateless end `ep` asked (WQEPs go out after the
    /// doorbell and the WQE fetch at `t`; failed WQEs complete with an error).
    fn star_lib_actions(&mut self, ep: u32, a: LibActions, t: Time) {
        let Some(lib) = self.star.lib_mut(ep) else { return };
        let (host, node, owner, conn, peer, sport, timer) = (lib.host, lib.node, lib.owner, lib.conn, lib.peer_node, lib.udp_sport, lib.timer);
        let route = Route { src: node, dst: peer, sport, dport: STATEFUL_PORT, hash: crate::sim::rng::mix64(sport as u64 ^ ((conn as u64) << 16)) as u32 };
        if a.migrate {
            let ready = self.nics[host as usize].pcie.doorbell_and_fetch(self.now, t, crate::nic::pcie::DESCRIPTOR_BYTES);
            let bytes = self.nic_spec.qp_context_bytes;
            let header = StarHeader { ptype: StarType::Wqep, migrate: true, qpn: conn, psn: 0, addr: ep as u64, len: bytes.min(u16::MAX as u32) as u16, ..Default::default() };
            self.star_emit(host, route, StarMeta { header, body: StarBody::None }, bytes, None, ready, None);
            self.nics[host as usize].star.counters.stateless_tx += 1;
        }
        for w in &a.send {
            let ready = self.nics[host as usize].pcie.doorbell_and_fetch(self.now, t, crate::nic::pcie::DESCRIPTOR_BYTES);
            let opt = w.verb.map_or(StarOp::Recv, StarOp::of);
            let header = StarHeader { ptype: StarType::Wqep, opt, qpn: conn, psn: w.index, addr: ep as u64, len: DESCRIPTOR_BYTES as u16, ..Default::default() };
            self.star_emit(host, route, StarMeta { header, body: StarBody::Wqe(*w) }, DESCRIPTOR_BYTES, None, ready, None);
            self.nics[host as usize].star.counters.stateless_tx += 1;
        }
        for &(wr_id, kind, status) in &a.failed {
            let at = self.nics[host as usize].pcie.write_cqe(self.now, t);
            self.star_deliver(host, owner, Completion { wr_id, qp: STAR_HANDLE | ep, kind, status, bytes: 0, imm: None, at });
        }
        if let Some(lib) = self.star.lib_mut(ep) {
            match lib.next_deadline() {
                Some(d) => self.timers.arm(timer, d.max(self.now)),
                None => self.timers.cancel(timer),
            }
        }
    }

    /// A packet for host `h`'s stateless processing: handled from its own header alone.
    fn star_stateless_rx(&mut self, h: u32, id: PacketId) {
        let pkt = *self.pool.get(id);
        let meta = self.pool.star(id);
        let now = self.now;
        self.nics[h as usize].star.counters.stateless_rx += 1;
        let back = Route { src: pkt.dst, dst: pkt.src, sport: pkt.udp_sport, dport: STATEFUL_PORT, hash: pkt.flow_hash };
        match react(&meta) {
            Reaction::Store { addr, len, reply } => {
                let nic = &mut self.nics[h as usize];
                let done = nic.pcie.write_payload(now, len as u64);
                if nic.memory.has_bytes() && len > 0 {
                    let data = self.pool.payload(id);
                    let end = (addr.saturating_add(data.len() as u64)).min(nic.memory.size());
                    if addr < end {
                        nic.memory.write(addr, &data[..(end - addr) as usize]);
                    }
                }
                if let Some(r) = reply {
                    self.star_emit(h, back, StarMeta { header: r, body: StarBody::None }, 0, None, done, None);
                    self.nics[h as usize].star.counters.stateless_tx += 1;
                }
            }
            Reaction::Fetch { addr, len, reply } => {
                let ready = self.nics[h as usize].pcie.read_now(now, now, len as u64);
                self.star_emit(h, back, StarMeta { header: reply, body: StarBody::None }, len, Some((h, addr)), ready, None);
                self.nics[h as usize].star.counters.stateless_tx += 1;
            }
            Reaction::Complete { cqe, reply } => {
                let at = self.nics[h as usize].pcie.write_cqe(now, now);
                self.star_emit(h, back, StarMeta { header: reply, body: StarBody::None }, 0, None, at, None);
                self.nics[h as usize].star.counters.stateless_tx += 1;
                self.star_lib_cqe(h, cqe, at);
            }
            Reaction::Acknowledged { qp, index, migrate } => {
                let spec = self.star_spec();
                match self.star.lib_mut(qp).filter(|l| l.host == h) {
                    Some(lib) => {
                        let a = lib.on_ea(index, migrate, now, spec.wqep_timeout, spec.probe_after());
                        self.star_lib_actions(qp, a, now);
                    }
                    None => self.nics[h as usize].star.counters.dropped += 1,
                }
            }
            Reaction::Refuse => self.nics[h as usize].star.counters.dropped += 1,
        }
        self.pool.free(id);
    }

    /// The library of host `h` polls a CQE the NIC wrote at `at`.
    fn star_lib_cqe(&mut self, h: u32, cqe: StarCqe, at: Time) {
        let Some(lib) = self.star.lib_mut(cqe.qp).filter(|l| l.host == h) else {
            self.nics[h as usize].star.counters.dropped += 1;
            return;
        };
        let owner = lib.owner;
        match lib.on_cqe(cqe) {
            Some(due) => {
                for (wr_id, kind, c) in due {
                    let c = Completion { wr_id, qp: STAR_HANDLE | c.qp, kind, status: c.status, bytes: c.bytes, imm: c.imm, at };
                    self.star_deliver(h, owner, c);
                }
            }
            None => self.nics[h as usize].star.counters.duplicate_cqes += 1,
        }
    }

    // ------------------------------------------------------------------ the stateful side

    /// Starts what stateful end `ep` can start and sends its packets (ready no earlier than
    /// `t`); delivers what finished.
    fn star_pump(&mut self, ep: u32, t: Time) {
        let mtu = self.nic_spec.mtu;
        let Some(conn) = self.star.conn_mut(ep) else { return };
        let started = if conn.migrated && !conn.failed { conn.start_ready(mtu) } else { Vec::new() };
        // An own operation waiting for the peer (its state, or its receive WQE): from when
        // (the probe's clock). A probe out for an operation that no longer waits is moot.
        let waiting = conn.waiting_for_peer().filter(|_| !conn.failed);
        if waiting.is_some() {
            conn.waiting_since.get_or_insert(t);
        } else {
            conn.waiting_since = None;
        }
        if conn.probing && conn.unacked.iter().any(|u| u.chunk == PROBE_CHUNK && Some(u.op) != waiting) {
            conn.unacked.retain(|u| u.chunk != PROBE_CHUNK);
            conn.probing = false;
        }
        if !conn.migrated || conn.failed {
            self.star_rearm(ep);
            return;
        }
        let h = conn.host;
        for id in started {
            let op = *self.star.conn_mut(ep).expect("open").find(id).expect("started");
            let status = self.star_check_here(h, &op);
            if status != Status::Success || op.status != Status::Success {
                self.star.conn_mut(ep).expect("open").finish(id, status);
            }
        }
        // Chunks go out in operation order while the send window has room; acknowledgements
        // call this again for the rest.
        let window = (self.star_spec().window.0 / mtu as u64).max(1) as usize;
        loop {
            let conn = self.star.conn_mut(ep).expect("open");
            if conn.unacked.iter().filter(|u| u.ptype != StarType::Cqep && u.chunk != PROBE_CHUNK).count() >= window {
                break;
            }
            let Some(op) = conn.ops.iter_mut().find(|o| o.started && !o.finished && o.sent < o.chunks) else { break };
            let (k, op) = (op.sent, {
                op.sent += 1;
                *op
            });
            let psn = conn.psn();
            let Some(at) = self.star_send_chunk(ep, &op, k, psn, t.max(op.ready_at)) else {
                self.star.conn_mut(ep).expect("open").finish(op.id, Status::RemoteAccess);
                continue;
            };
            let ptype = if op.dir == Dir::Push { StarType::Rd } else { StarType::Gd };
            self.star.conn_mut(ep).expect("open").unacked.push_back(Unacked { psn, ptype, op: op.id, chunk: k, cqe: None, sent_at: at, tries: 0 });
        }
        self.star_finish(ep);
    }

    /// The stateful side's own checks before an operation starts: its own buffer of a local
    /// WQE (lkey), or the stateless side's rights on its memory (rkey, as any responder).
    fn star_check_here(&self, h: u32, op: &Op) -> Status {
        let mem = &self.nics[h as usize].memory;
        if let Some(wr) = op.local_wr {
            if wr.len > 0 && !mem.check_local(wr.lkey, wr.local_addr, wr.len) {
                return Status::LocalProtection;
            }
        }
        if let Some(w) = op.remote_wqe {
            let right = match w.verb {
                Some(Verb::Write | Verb::WriteImm(_)) => Some(Access::REMOTE_WRITE),
                Some(Verb::Read) => Some(Access::REMOTE_READ),
                _ => None,
            };
            if let Some(r) = right {
                if w.len > 0 && !mem.check_remote(w.rkey, w.remote_addr, w.len, r) {
                    return Status::RemoteAccess;
                }
            }
        }
        Status::Success
    }

    /// Sends chunk `k` of operation `op` of stateful end `ep` (an RD with its data, or a GD)
    /// with `psn`, no earlier than `t`. Returns when it is queued to leave, or `None` if the
    /// security module refused it.
    fn star_send_chunk(&mut self, ep: u32, op: &Op, k: u32, psn: u32, t: Time) -> Option<Time> {
        let mtu = self.nic_spec.mtu as u64;
        let conn = self.star.conn_mut(ep).expect("open");
        let (h, route) = (conn.host, to_stateless(conn));
        let off = k as u64 * mtu;
        let len = op.len.saturating_sub(off).min(mtu) as u32;
        let opt = op.local_wr.map(|w| StarOp::of(w.verb)).or(op.remote_wqe.and_then(|w| w.verb).map(StarOp::of)).unwrap_or_default();
        let (ptype, ready, data, ack) = match op.dir {
            Dir::Push => {
                let now = self.now;
                let ready = self.nics[h as usize].pcie.read_now(now, t, len as u64);
                // Every RD asks for its RDA (the A bit): the stateless side keeps no state to
                // acknowledge several at once.
                (StarType::Rd, ready, Some((h, op.c_addr + off)), true)
            }
            Dir::Pull => (StarType::Gd, t, None, true),
        };
        let header = StarHeader { ptype, opt, ack, qpn: ep, psn, addr: op.s_addr + off, len: len as u16, ..Default::default() };
        // The first packet answers for the whole operation, as an RDMA responder checks a
        // RETH's whole DMA length on it: a range that runs past its region is refused before
        // any of it reaches the stateless host. Later packets are checked for their own bytes.
        let checked_len = if k == 0 { op.len } else { len as u64 };
        let mem = MemoryUse { key: op.s_key, remote: op.s_remote, addr: op.s_addr + off, len: checked_len, write: op.dir == Dir::Push };
        let payload = if op.dir == Dir::Push { len } else { 0 };
        self.star_send_stateful(h, ep, route, StarMeta { header, body: StarBody::None }, payload, data, ready, Some(mem))
    }

    /// A packet from stateful end `ep` towards its stateless peer: the security module checks
    /// it (§III-D2); the state lookup may delay it. Returns when it is ready to leave.
    #[allow(clippy::too_many_arguments)]
    fn star_send_stateful(&mut self, h: u32, ep: u32, route: Route, meta: StarMeta, payload: u32, data: Option<(u32, u64)>, ready: Time, mem: Option<MemoryUse>) -> Option<Time> {
        if self.star_spec().security && !self.nics[h as usize].star.unchecked {
            let s = &mut self.nics[h as usize].star;
            s.counters.checked += 1;
            if !s.whitelist.allows(route.dst, ep, mem) {
                s.counters.refused += 1;
                return None;
            }
        }
        self.nics[h as usize].star.counters.stateful_tx += 1;
        Some(self.star_emit(h, route, meta, payload, data, ready, Some(STAR_HANDLE | ep)))
    }

    /// Delivers, in order, what stateful end `ep` finished: CQEs here, CQEPs to the peer.
    fn star_finish(&mut self, ep: u32) {
        let Some(conn) = self.star.conn_mut(ep) else { return };
        let done = conn.pop_finished();
        let (h, owner, placed) = (conn.host, conn.owner, conn.placed);
        let route = to_stateless(conn);
        let t = self.now.max(placed);
        // A receive completion that waits for the EA of the CQEP that follows it.
        let mut recv = None;
        for f in done {
            match f {
                Finished::Local { wr_id, kind, status, bytes, imm } => {
                    let at = self.nics[h as usize].pcie.write_cqe_behind(self.now, t);
                    self.star_deliver(h, owner, Completion { wr_id, qp: STAR_HANDLE | ep, kind, status, bytes, imm, at });
                }
                Finished::LocalRecv { wr_id, status, bytes, imm } => {
                    recv = Some(HeldRecv { cqep_psn: 0, wr_id, status, bytes, imm, confirmed: false });
                }
                Finished::Remote(cqe) => {
                    let Some(conn) = self.star.conn_mut(ep) else { continue };
                    let (psn, failed) = (conn.psn(), conn.failed);
                    // In the error state, sent once: nothing is resent any more, and a receive
                    // completion does not wait for an EA.
                    let sent = self.star_send_cqep(ep, h, route, cqe, psn, t).filter(|_| !failed);
                    let conn = self.star.conn_mut(ep).expect("open");
                    if let Some(at) = sent {
                        conn.unacked.push_back(Unacked { psn, ptype: StarType::Cqep, op: u64::MAX, chunk: 0, cqe: Some(cqe), sent_at: at, tries: 0 });
                    }
                    if let Some(r) = recv.take() {
                        // Confirmed at once when no EA will come, it still waits for the
                        // receives before it.
                        conn.held.push_back(HeldRecv { cqep_psn: psn, confirmed: sent.is_none(), ..r });
                        for r in conn.take_confirmed() {
                            self.star_deliver_recv(ep, h, owner, r, t);
                        }
                    }
                }
            }
        }
        self.star_rearm(ep);
    }

    /// Delivers a receive completion held for its CQEP's EA.
    fn star_deliver_recv(&mut self, ep: u32, h: u32, owner: Owner, r: HeldRecv, t: Time) {
        let at = self.nics[h as usize].pcie.write_cqe_behind(self.now, t);
        self.star_deliver(h, owner, Completion { wr_id: r.wr_id, qp: STAR_HANDLE | ep, kind: CompletionKind::Recv, status: r.status, bytes: r.bytes, imm: r.imm, at });
    }

    fn star_send_cqep(&mut self, ep: u32, h: u32, route: Route, cqe: StarCqe, psn: u32, t: Time) -> Option<Time> {
        let opt = match cqe.kind {
            CompletionKind::Send => StarOp::Send,
            CompletionKind::Recv => StarOp::Recv,
            CompletionKind::Write => StarOp::Write,
            CompletionKind::Read => StarOp::Read,
        };
        let header = StarHeader { ptype: StarType::Cqep, opt, ack: true, qpn: ep, psn, len: DESCRIPTOR_BYTES as u16, ..Default::default() };
        self.star_send_stateful(h, ep, route, StarMeta { header, body: StarBody::Cqe(cqe) }, DESCRIPTOR_BYTES, None, t, None)
    }

    /// A packet for host `h`'s stateful processing (its state on the NIC by now).
    pub(super) fn star_stateful_rx(&mut self, h: u32, id: PacketId) {
        self.stats.packets_delivered += 1;
        self.stats.last_delivery = self.now;
        let pkt = *self.pool.get(id);
        let meta = self.pool.star(id);
        let now = self.now;
        let ep = meta.header.qpn;
        // A connection in the error state takes nothing more.
        if !self.star_known(ep, h, pkt.src) || self.star.conn_mut(ep).expect("known").failed {
            self.nics[h as usize].star.counters.dropped += 1;
            self.pool.free(id);
            return;
        }
        self.nics[h as usize].star.counters.stateful_rx += 1;
        let conn = self.star.conn_mut(ep).expect("checked");
        let route = to_stateless(conn);
        let peer = conn.peer;
        let hd = meta.header;
        match hd.ptype {
            StarType::Wqep => {
                // Always confirmed (the EA may have been lost); run only once.
                let ea = StarHeader { ptype: StarType::Ea, migrate: hd.migrate, qpn: ep, psn: hd.psn, addr: peer as u64, ..Default::default() };
                self.star_send_stateful(h, ep, route, StarMeta { header: ea, body: StarBody::None }, 0, None, now, None);
                let conn = self.star.conn_mut(ep).expect("checked");
                if hd.migrate {
                    conn.migrated = true;
                } else if let StarBody::Wqe(w) = meta.body {
                    for w in conn.take_wqep(w) {
                        conn.post_remote(w);
                    }
                }
                self.star_pump(ep, now);
            }
            StarType::Rda => {
                // What finished completes first (its CQEP ahead of the next chunks), then the
                // window's room goes to the next chunks.
                if conn.on_rda(hd.psn).is_some() {
                    self.star_finish(ep);
                }
                self.star_pump(ep, now);
            }
            StarType::Gda => {
                if let Some((op, chunk, _last)) = conn.on_gda(hd.psn) {
                    let c_addr = conn.find(op).map_or(0, |o| o.c_addr) + chunk as u64 * self.nic_spec.mtu as u64;
                    let nic = &mut self.nics[h as usize];
                    let done = nic.pcie.write_payload(now, hd.len as u64);
                    if nic.memory.has_bytes() && hd.len > 0 {
                        let data = self.pool.payload(id);
                        let end = c_addr.saturating_add(data.len() as u64).min(nic.memory.size());
                        if c_addr < end {
                            nic.memory.write(c_addr, &data[..(end - c_addr) as usize]);
                        }
                    }
                    let conn = self.star.conn_mut(ep).expect("checked");
                    conn.placed = conn.placed.max(done);
                    self.star_finish(ep);
                }
                self.star_pump(ep, now);
            }
            StarType::Ea => {
                let confirmed = conn.on_ea(hd.psn);
                let owner = conn.owner;
                for r in confirmed {
                    self.star_deliver_recv(ep, h, owner, r, now);
                }
                self.star_rearm(ep);
            }
            _ => self.nics[h as usize].star.counters.dropped += 1,
        }
        self.pool.free(id);
    }

    // ------------------------------------------------------------------ timers and sending

    /// The timer of end `ep`: the library's WQEP timeouts, or the stateful side's resends.
    pub(super) fn star_timer(&mut self, ep: u32) {
        let spec = self.star_spec();
        let now = self.now;
        match self.star.eps.get_mut(ep as usize) {
            Some(Endpoint::Stateless(lib)) => {
                let a = lib.expire(now, spec.wqep_timeout, spec.wqep_retries);
                let h = lib.host;
                self.nics[h as usize].star.counters.wqep_reposts += a.send.len() as u64 + a.migrate as u64;
                self.star_lib_actions(ep, a, now);
            }
            Some(Endpoint::Stateful(conn)) => {
                let due: Vec<Unacked> = conn.unacked.iter().filter(|u| u.sent_at + spec.rto <= now).copied().collect();
                conn.unacked.retain(|u| u.sent_at + spec.rto > now);
                let (h, owner, peer, route) = (conn.host, conn.owner, conn.peer, to_stateless(conn));
                for mut u in due {
                    u.tries += 1;
                    if u.tries > spec.retry_count {
                        // The peer does not answer: the operation fails, and the connection
                        // with it, as an RC queue pair does (its receive WQEs flushed here, its
                        // operations by star_finish; the stateless side is sent a CQEP for each
                        // of its WQEs once, and learns by its probes if those are lost too).
                        let conn = self.star.conn_mut(ep).expect("open");
                        if u.ptype != StarType::Cqep {
                            conn.finish(u.op, Status::RetryExceeded);
                        }
                        let (held, local, remote) = conn.fail();
                        for r in held {
                            self.star_deliver_recv(ep, h, owner, r, now);
                        }
                        // The operations the failure ended complete in order (with the receives
                        // they took) before the receive WQEs no message reached are flushed.
                        self.star_finish(ep);
                        self.star_flush(h, owner, STAR_HANDLE | ep, local.iter().map(|r| (r.id, CompletionKind::Recv)));
                        for r in remote {
                            let psn = self.star.conn_mut(ep).expect("open").psn();
                            let cqe = StarCqe { qp: peer, index: r.index, kind: CompletionKind::Recv, status: Status::Flushed, bytes: 0, imm: None };
                            self.star_send_cqep(ep, h, route, cqe, psn, now);
                        }
                        break;
                    }
                    let at = match u.cqe {
                        Some(cqe) => self.star_send_cqep(ep, h, route, cqe, u.psn, now),
                        None if u.chunk == PROBE_CHUNK => self.star_send_probe(ep, u.psn, now),
                        None => match self.star.conn_mut(ep).expect("open").find(u.op).copied() {
                            Some(op) if !op.finished => {
                                let sent = self.star_send_chunk(ep, &op, u.chunk, u.psn, now);
                                if sent.is_none() {
                                    // The whitelist refuses it now (a window invalidated, a
                                    // region deregistered since the first send): it fails as a
                                    // first send's refusal does (it was dropped, and the
                                    // operation, with all behind it, never completed).
                                    self.star.conn_mut(ep).expect("open").finish(op.id, Status::RemoteAccess);
                                }
                                sent
                            }
                            _ => None,
                        },
                    };
                    match at {
                        Some(at) => {
                            // (A refused resend is counted as refused, not as resent.)
                            self.nics[h as usize].star.counters.resent += 1;
                            u.sent_at = at;
                            self.star.conn_mut(ep).expect("open").unacked.push_back(u);
                        }
                        None if u.chunk == PROBE_CHUNK => self.star.conn_mut(ep).expect("open").probe_refused(u.op),
                        None => {}
                    }
                }
                // An own SEND has waited a whole resend budget for the peer's receive WQE:
                // probe the peer (its answer, or its silence, decides).
                let conn = self.star.conn_mut(ep).expect("open");
                if let (Some(since), Some(op)) = (conn.waiting_since, conn.waiting_for_peer()) {
                    if !conn.failed && !conn.probing && since + spec.probe_after() <= now {
                        let psn = conn.psn();
                        let sent = self.star_send_probe(ep, psn, now);
                        let conn = self.star.conn_mut(ep).expect("open");
                        match sent {
                            Some(at) => {
                                conn.probing = true;
                                conn.unacked.push_back(Unacked { psn, ptype: StarType::Gd, op, chunk: PROBE_CHUNK, cqe: None, sent_at: at, tries: 0 });
                            }
                            None => conn.probe_refused(op),
                        }
                    }
                }
                self.star_finish(ep);
            }
            _ => {}
        }
    }

    /// A probe of stateful end `ep`'s peer: an empty GD (it reads nothing, so it needs only the
    /// connection's rule), answered by an empty GDA.
    fn star_send_probe(&mut self, ep: u32, psn: u32, t: Time) -> Option<Time> {
        let conn = self.star.conn_mut(ep).expect("open");
        let (h, route) = (conn.host, to_stateless(conn));
        let header = StarHeader { ptype: StarType::Gd, ack: true, qpn: ep, psn, ..Default::default() };
        self.star_send_stateful(h, ep, route, StarMeta { header, body: StarBody::None }, 0, None, t, None)
    }

    fn star_rearm(&mut self, ep: u32) {
        let spec = self.star_spec();
        let Some(conn) = self.star.conn_mut(ep) else { return };
        let timer = conn.timer;
        match conn.next_deadline(spec.rto, spec.probe_after()) {
            Some(d) => {
                let d = d.max(self.now);
                if self.timers.deadline(timer) != Some(d) {
                    self.timers.arm(timer, d);
                }
            }
            None => self.timers.cancel(timer),
        }
    }

    /// Queues a StaR packet in host `h`'s send event queue, ready at `ready` (later if its
    /// state must be fetched: `key` names the connection on a stateful side). `data`: where
    /// its payload comes from (host, address). Returns when it is ready.
    #[allow(clippy::too_many_arguments)]
    fn star_emit(&mut self, h: u32, r: Route, meta: StarMeta, payload: u32, data: Option<(u32, u64)>, ready: Time, key: Option<u32>) -> Time {
        let mut ready = ready.max(self.now);
        let now = self.now;
        if let (Some(k), Some(st)) = (key, self.nics[h as usize].state.as_mut()) {
            // Looked up as a RoCE packet is, when the pipeline takes it, not when its payload
            // is read (a lookup at the payload's time held every later packet behind it).
            ready = ready.max(st.tx_lookup(k, now).ready);
        }
        let pkt = Packet {
            kind: PacketKind::Star,
            src: r.src,
            dst: r.dst,
            dst_host: self.host_index(r.dst),
            size: payload + FRAME_OVERHEAD,
            priority: self.nic_spec.priority,
            ecn: ECN_NOT_ECT,
            udp_sport: r.sport,
            udp_dport: r.dport,
            flow_hash: r.hash,
            flow: meta.header.qpn,
            seq: meta.header.psn as u64,
            sent_at: self.now,
            ingress_port: u32::MAX,
            ttl: TTL,
            roce: RoceHeader { payload, ..Default::default() },
        };
        let size = pkt.size;
        let id = self.pool.alloc(pkt);
        self.pool.set_star(id, meta);
        if let Some((dh, addr)) = data {
            let nic = &mut self.nics[dh as usize];
            if nic.memory.has_bytes() && payload > 0 {
                let mut buf = std::mem::take(&mut nic.scratch);
                // A range past the end of memory reads as zeros (what the whitelist lets through
                // is in range; without the check a stateless NIC reads what it is told).
                let end = addr.saturating_add(payload as u64).min(nic.memory.size());
                nic.memory.read(addr.min(end), &mut buf, (end - addr.min(end)) as usize);
                buf.resize(payload as usize, 0);
                self.pool.set_payload(id, &buf);
                self.nics[dh as usize].scratch = buf;
            }
        }
        self.nics[h as usize].star.tx.push(ready, id, size);
        let p = self.nics[h as usize].port;
        let port = &self.ports[p as usize];
        let at = ready.max(port.busy_until).max(self.now);
        self.timers.arm_if_later(port.timer, at);
        ready
    }

    /// A StaR packet of host `h`'s send event queue that may leave now.
    #[inline]
    pub(super) fn star_tx_ready(&mut self, h: u32) -> Option<PacketId> {
        let now = self.now;
        self.nics[h as usize].star.tx.pop_ready(now)
    }

    /// When host `h`'s next StaR packet is ready.
    #[inline]
    pub(super) fn star_tx_next(&self, h: u32) -> Option<Time> {
        self.nics[h as usize].star.tx.next_ready()
    }

    /// A StaR packet reached host `h`: stateless packets are handled at once; stateful ones
    /// first find their connection's state (a NIC with a limited state cache may hold them).
    pub(super) fn star_receive(&mut self, h: u32, id: PacketId) {
        if !self.rx_admit(h, id) {
            return;
        }
        if self.pool.get(id).udp_dport == STATELESS_PORT {
            self.stats.packets_delivered += 1;
            self.stats.last_delivery = self.now;
            self.star_stateless_rx(h, id);
        } else if self.nics[h as usize].state.is_none() || self.state_rx(h, id) {
            self.star_stateful_rx(h, id);
        }
        self.rx_check(h);
    }

    /// Whether stateful end `ep` is on host `h` and talks to node `peer` (its packets need state).
    pub(super) fn star_known(&mut self, ep: u32, h: u32, peer: u32) -> bool {
        self.star.conn_mut(ep).is_some_and(|c| c.host == h && c.peer_node == peer)
    }

    /// Sends a StaR packet with `header` from host `from` to node `to` as if the stateful side
    /// of connection `handle` had built it: it passes `from`'s security module like any other.
    /// For tests of the whitelist: a forged RD or GD names any address, key and length. The
    /// module checks the range the header carries (`addr`, `len`: written by an RD, read by a
    /// GD) under `(key, remote)` (`remote`: a peer's rkey; else the stateless side's own
    /// lkey), so what is checked is what would reach memory. Returns whether the packet left.
    pub fn star_forge(&mut self, from: u32, to: u32, handle: u32, header: StarHeader, (key, remote): (u32, bool), data: Option<u64>) -> Result<bool, VerbsError> {
        let mem = MemoryUse { key, remote, addr: header.addr, len: header.len as u64, write: header.ptype == StarType::Rd };
        let h = self.host_of(from)?;
        self.host_of(to)?;
        let ep = handle & !STAR_HANDLE;
        let route = Route { src: from, dst: to, sport: 50000, dport: STATELESS_PORT, hash: 0 };
        let payload = if header.ptype == StarType::Rd { header.len as u32 } else { 0 };
        let now = self.now;
        Ok(self.star_send_stateful(h, ep, route, StarMeta { header: StarHeader { qpn: ep, ..header }, body: StarBody::None }, payload, data.map(|a| (h, a)), now, Some(mem)).is_some())
    }
}

fn rule_of(mr: &MemoryRegion) -> RegionRule {
    RegionRule { addr: mr.addr, len: mr.len, lkey: Some(mr.lkey), rkey: mr.rkey, access: mr.access }
}

fn window_rule(w: &MemoryWindow) -> RegionRule {
    RegionRule { addr: w.addr, len: w.len, lkey: None, rkey: w.rkey, access: w.access }
}
