//! Wiring of the applications ([`crate::host::apps`]): events are routed to the owning
//! application, and the small API applications use besides the verbs (their timers, host
//! facts, raw packets).
//!
//! An application is taken out of the world while it is called, so it can use the whole world;
//! an event for it raised meanwhile (a completion flushed by its own `destroy_qp`, say) waits
//! and is delivered as soon as the call returns.

use super::{Wake, World};
use crate::host::apps::{AppEvent, AppId, Application, Owner, FIRST_CUSTOM, FLOWS, NVMF, PERFTEST, RPC, SOURCES, YAMA};
use crate::nic::verbs::VerbsError;
use crate::sim::TimerId;
use crate::units::{BitsPerSec, Time};
use crate::wire::packet::Packet;

/// Calls `$field` of the world's applications with `$ev`, taken out of the world meanwhile.
macro_rules! call_taken {
    ($w:expr, $field:ident, $ev:expr) => {{
        let mut app = std::mem::take(&mut $w.apps.$field);
        app.handle($w, $ev);
        $w.apps.$field = app;
    }};
}

impl World {
    /// Delivers `ev` to application `app` (now, or as soon as its current call returns).
    pub(crate) fn app_event(&mut self, app: AppId, ev: AppEvent) {
        if self.apps_busy[app as usize] {
            self.apps_pending.push_back((app, ev));
            return;
        }
        let mut ev = ev;
        loop {
            self.apps_busy[app as usize] = true;
            match app {
                FLOWS => call_taken!(self, flows, ev),
                PERFTEST => call_taken!(self, perftests, ev),
                SOURCES => call_taken!(self, sources, ev),
                YAMA => call_taken!(self, yama, ev),
                RPC => call_taken!(self, rpc, ev),
                NVMF => call_taken!(self, nvmf, ev),
                _ => {
                    let i = (app - FIRST_CUSTOM) as usize;
                    if let Some(mut a) = self.apps.custom.get_mut(i).and_then(Option::take) {
                        a.handle(self, ev);
                        self.apps.custom[i] = Some(a);
                    }
                }
            }
            self.apps_busy[app as usize] = false;
            // Events that arrived for it while it ran, in order, one call each: a loop, not
            // a recursion, since an application may raise one from every call (an error
            // completion it answers by posting again, which fails again).
            match self.apps_pending.iter().position(|&(a, _)| a == app) {
                Some(k) => ev = self.apps_pending.remove(k).expect("found").1,
                None => return,
            }
        }
    }

    /// Adds an application written against the library; returns its id, for [`Owner`]s and
    /// timers. Its events start with whatever it arms or connects.
    pub fn add_application(&mut self, app: Box<dyn Application + Send>) -> AppId {
        self.apps.custom.push(Some(app));
        let id = FIRST_CUSTOM as usize + self.apps.custom.len() - 1;
        assert!(id < AppId::MAX as usize, "too many applications");
        id as AppId
    }

    /// The id the next [`World::add_application`] returns.
    pub fn next_app_id(&self) -> AppId {
        (FIRST_CUSTOM as usize + self.apps.custom.len()) as AppId
    }

    /// A timer that wakes application `app` with `tag`.
    pub fn add_app_timer(&mut self, app: AppId, tag: u32) -> TimerId {
        self.timers.add_timer(Wake::App { app, tag })
    }

    /// Arms (or moves) a timer to fire at `at`.
    pub fn arm(&mut self, timer: TimerId, at: Time) {
        self.timers.arm(timer, at);
    }

    /// Connects hosts `a` and `b` (node ids) with a pair of RC queue pairs whose completions
    /// and messages go to the given owners.
    pub fn connect_app(&mut self, a: u32, b: u32, owner_a: Owner, owner_b: Owner) -> Result<(u32, u32), VerbsError> {
        self.host_of(a)?;
        self.host_of(b)?;
        Ok(self.connect_owned(a, b, owner_a, owner_b))
    }

    /// Sets the traffic class of queue pair `q`'s packets: its data, and its ACKs, NAKs and CNPs
    /// unless `nic.ack_priority` is set. Set both ends of a connection, so the responder's ACKs
    /// go in the requester's class too.
    pub fn set_priority(&mut self, q: u32, priority: u8) -> Result<(), VerbsError> {
        self.qps.find(q).ok_or(VerbsError::UnknownQp(q))?;
        self.qps.get_mut(q).priority = priority;
        Ok(())
    }

    /// Queue pair `q`'s UDP source port.
    pub fn udp_sport(&self, q: u32) -> u16 {
        self.qps.get(q).udp_sport
    }

    /// The node queue pair `q` is on.
    pub fn qp_node(&self, q: u32) -> u32 {
        self.qps.get(q).node
    }

    /// Wire bytes, packets and payload bytes queue pair `q` has put on the wire, as a port
    /// counter sees them: what the NIC has committed to its transmit pipeline but not yet sent
    /// is not counted.
    pub fn qp_tx_counters(&self, q: u32) -> [u64; 3] {
        let qp = self.qps.get(q);
        let mut c = [qp.tx_bytes, qp.tx_packets, qp.bytes_sent];
        let nic = &self.nics[qp.host as usize];
        let held = nic.payload_wait.ids().chain(nic.state.iter().flat_map(|st| st.tx.ids()));
        for id in self.ports[nic.port as usize].queued(&self.pool).chain(held) {
            let p = self.pool.get(id);
            if p.kind == crate::wire::packet::PacketKind::Roce && p.flow == qp.peer && p.src == qp.node {
                c[0] -= p.size as u64;
                c[1] -= 1;
                c[2] -= p.roce.payload as u64;
            }
        }
        c
    }

    /// The (lkey, rkey) of the workload region covering host `node`'s whole memory.
    pub fn app_keys(&self, node: u32) -> (u32, u32) {
        self.app_mr[self.host_index(node) as usize]
    }

    /// Host `node`'s port, if it has a link.
    pub fn host_port(&self, node: u32) -> Option<u32> {
        let h = self.host_of(node).ok()?;
        Some(self.hosts[h as usize].port).filter(|&p| p != u32::MAX)
    }

    /// The node at the other end of host `node`'s link, if it has one.
    pub fn first_hop(&self, node: u32) -> Option<u32> {
        self.host_port(node).map(|p| self.ports[self.ports[p as usize].peer as usize].node)
    }

    /// The rate of host `node`'s link.
    pub fn host_link_rate(&self, node: u32) -> BitsPerSec {
        self.ports[self.hosts[self.host_index(node) as usize].port as usize].rate
    }

    /// Queues a raw (non-RDMA) packet of the packet sources at a host port;
    /// [`World::start_port`] sends it.
    pub(crate) fn enqueue_raw(&mut self, port: u32, pkt: Packet) {
        let (class, size) = (pkt.priority, pkt.size);
        let id = self.pool.alloc(pkt);
        self.stats.packets_sent += 1;
        self.ports[port as usize].enqueue(class, id, size, &mut self.pool);
        let h = self.host_index(self.ports[port as usize].node);
        self.hosts[h as usize].raw_queued[class as usize] += 1;
    }

    /// Whether host port `port` holds `limit` raw packets of class `class` or more beyond the
    /// RDMA packets queued in that class beside them (see [`NIC_QUEUE_PACKETS`]).
    ///
    /// [`NIC_QUEUE_PACKETS`]: crate::host::apps::sources::NIC_QUEUE_PACKETS
    pub fn raw_queue_full(&self, port: u32, class: u8, limit: u32) -> bool {
        let h = self.host_index(self.ports[port as usize].node);
        let raw = self.hosts[h as usize].raw_queued[class as usize];
        let others = self.ports[port as usize].queue_packets(class) as u32 - raw;
        raw >= limit + others
    }

    /// Starts the port sending if it is idle.
    pub fn start_port(&mut self, port: u32) {
        self.port_start(port);
    }

    /// Fires `timer` at once the next time host port `port` sends a packet (room in its queue).
    pub fn wake_on_room(&mut self, port: u32, timer: TimerId) {
        let h = self.host_index(self.ports[port as usize].node);
        self.hosts[h as usize].room_waiters.push(timer);
    }
}
