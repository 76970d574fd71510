//! StaR's two application workloads (StaR §V-A3), `[[rpc]]`: clients spread many connections
//! to one server. In **simple RPC**, each connection's client SENDs `requests` messages (a
//! remote call) and the server, once all of them arrived, SENDs one reply (the return value);
//! the client calls again when the reply lands. In **parameter server** (synchronous ML), the
//! server replies to every connection only after every connection's requests arrived.
//!
//! The connections run over normal RDMA, over StaR with the server stateless (or roles
//! negotiated), or over ScalaRDMA (normal RDMA behind a middleware that splits the server's
//! connections into groups of `group_size` and lets one group start operations at a time, in
//! turns of `timeslot` that each begin with a group switch costing `switch_cost`; §II-C and
//! §V-A2 of StaR, after ScalaRDMA, EuroSys '19).

use super::{Application, Owner, RPC};
use crate::nic::star::StarRole;
use crate::nic::verbs::{Completion, CompletionKind, RecvWr, SendWr, Status, Verb};
use crate::scenario::LoadedScenario;
use crate::units::{Bytes, Time};
use crate::world::World;
use serde::{Deserialize, Serialize};

/// Which stack the connections use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RpcStack {
    /// Normal RDMA: both sides keep state (and miss in their caches).
    #[default]
    Rdma,
    /// StaR with the server stateless and the clients stateful (explicit roles).
    Star,
    /// StaR roles by auto-negotiation (`nic.star.negotiate_threshold`).
    StarAuto,
    /// Normal RDMA behind ScalaRDMA's connection groups.
    Scalardma,
}

impl RpcStack {
    /// A StaR stack, whose clients' NICs check a whitelist.
    pub fn is_star(self) -> bool {
        matches!(self, RpcStack::Star | RpcStack::StarAuto)
    }
}

/// Which application pattern.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RpcWorkload {
    #[default]
    Rpc,
    ParameterServer,
}

/// One `[[rpc]]` entry: a server, its clients and their connections.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RpcSpec {
    /// Label in outputs (default `rpc <index>`).
    #[serde(default)]
    pub name: String,
    pub server: u32,
    pub clients: Vec<u32>,
    /// Connections, given to the clients in turn.
    pub connections: u32,
    #[serde(default)]
    pub stack: RpcStack,
    #[serde(default)]
    pub workload: RpcWorkload,
    /// SENDs per call, and their size; the reply's size.
    #[serde(default = "default_requests")]
    pub requests: u32,
    #[serde(default = "default_message")]
    pub request: Bytes,
    #[serde(default = "default_message")]
    pub reply: Bytes,
    /// Calls that end before this are not measured.
    #[serde(default = "default_warmup")]
    pub warmup: Time,
    /// Each connection's first call starts at a time drawn uniformly below this (seeded stream
    /// "rpc", per entry); unset, half the warmup. 0: every connection at once, which closed
    /// loops of equal service times keep in lock step for the whole run.
    #[serde(default)]
    pub start_spread: Option<Time>,
    /// ScalaRDMA: connections per group, the turn of each group, and the cost of switching.
    #[serde(default = "default_group")]
    pub group_size: u32,
    #[serde(default = "default_timeslot")]
    pub timeslot: Time,
    #[serde(default = "default_switch")]
    pub switch_cost: Time,
    /// StaR: the security check on the clients' NICs (off only to measure its cost, Fig. 12).
    #[serde(default = "default_true")]
    pub security: bool,
}

fn default_requests() -> u32 {
    3
}
fn default_message() -> Bytes {
    Bytes(32)
}
fn default_warmup() -> Time {
    Time::from_us(100)
}
pub(crate) fn default_group() -> u32 {
    240
}
pub(crate) fn default_timeslot() -> Time {
    Time::from_us(20)
}
pub(crate) fn default_switch() -> Time {
    Time::from_us(1)
}
fn default_true() -> bool {
    true
}

impl RpcSpec {
    /// `start_spread`, or half the warmup.
    pub fn first_call_spread(&self) -> Time {
        self.start_spread.unwrap_or(Time(self.warmup.0 / 2))
    }

    /// Keys whose values cannot work, with why.
    /// What is wrong with the entry, by key, on NICs with these send and receive queue depths
    /// (a client posts a call's `requests` SENDs at once, the server as many receives).
    pub fn check(&self, sq_depth: u32, rq_depth: u32) -> Vec<(&'static str, String)> {
        let mut bad = Vec::new();
        if self.clients.is_empty() {
            bad.push(("clients", "needs at least one client".into()));
        }
        if self.clients.contains(&self.server) {
            bad.push(("clients", format!("node {} is the server", self.server)));
        }
        if self.connections == 0 || self.connections > 500_000 {
            bad.push(("connections", "must be between 1 and 500000".into()));
        }
        if self.requests == 0 || self.requests > 64 {
            bad.push(("requests", "must be between 1 and 64".into()));
        } else if self.requests > sq_depth.min(rq_depth) {
            bad.push(("requests", format!("a call's {} requests are posted at once and must fit nic.sq_depth ({sq_depth}) and nic.rq_depth ({rq_depth})", self.requests)));
        }
        for (k, b) in [("request", self.request), ("reply", self.reply)] {
            if b.0 == 0 || b.0 > 1 << 30 {
                bad.push((k, "must be between 1 B and 1 GiB".into()));
            }
        }
        if self.group_size == 0 {
            bad.push(("group_size", "must be at least 1".into()));
        }
        if self.timeslot <= self.switch_cost {
            // Named at the key that moved off its default the way that broke it.
            let key = if self.timeslot < default_timeslot() { "timeslot" } else { "switch_cost" };
            bad.push((key, format!("the timeslot ({}) must be longer than switch_cost ({})", self.timeslot, self.switch_cost)));
        }
        bad
    }
}

/// One connection of a group.
#[derive(Clone, Copy, Debug)]
struct Conn {
    client: u32,
    qc: u32,
    qs: u32,
    /// ScalaRDMA: the client's and the server's timers for work held until the group's turn.
    timers: Option<[crate::sim::TimerId; 2]>,
    /// When the application wanted its current call to start.
    call_at: Time,
    /// Requests of the current call the server has.
    received: u32,
}

/// One running `[[rpc]]` entry.
pub struct RpcGroup {
    pub spec: RpcSpec,
    conns: Vec<Conn>,
    /// Parameter server: connections whose requests all arrived this round.
    ready: u32,
    /// Bytes the server's link had carried out of and into the server when the window opened.
    link_start: [u64; 2],
    /// Calls finished in the window, their latencies (ps), and verbs errors.
    pub calls: u64,
    pub latencies: Vec<u64>,
    pub errors: u64,
}

/// The `[[rpc]]` entries of a run.
#[derive(Default)]
pub struct Rpcs {
    pub groups: Vec<RpcGroup>,
}

/// Tags: group (11 bits), connection (19 bits), and whether the event is the server's.
fn tag(g: usize, c: usize, server: bool) -> u32 {
    ((g as u32) << 20) | ((c as u32) << 1) | server as u32
}

/// The connection number of a group's window timer.
const WINDOW: usize = 0x7_ffff;

/// Bytes the server's link has carried out of the server and into it by now: a packet counts
/// as far as it is serialized (counted whole when it started, a window could see more bytes
/// than its time can carry: a wire load above 1).
fn link_bytes(w: &World, server: u32) -> [u64; 2] {
    let Some(p) = w.host_port(server) else { return [0; 2] };
    let peer = w.ports[p as usize].peer as usize;
    [w.ports[p as usize].tx_bytes_by(w.now), w.ports[peer].tx_bytes_by(w.now)]
}

fn untag(t: u32) -> (usize, usize, bool) {
    ((t >> 20) as usize, ((t >> 1) & 0x7_ffff) as usize, t & 1 == 1)
}

impl Rpcs {
    pub fn build(w: &mut World, loaded: &LoadedScenario) -> Rpcs {
        let mut r = Rpcs::default();
        for (g, spec) in loaded.scenario.rpc.iter().enumerate() {
            let mut spec = spec.clone();
            if spec.name.is_empty() {
                spec.name = super::default_name("rpc", g);
            }
            // The clients' whitelist check is StaR's: only a StaR entry turns it off.
            if !spec.security && spec.stack.is_star() {
                for &c in &spec.clients {
                    let h = w.host_index(c);
                    w.nics[h as usize].star.unchecked = true;
                }
            }
            let mut conns = Vec::with_capacity(spec.connections as usize);
            for i in 0..spec.connections as usize {
                let client = spec.clients[i % spec.clients.len()];
                let (oc, os) = (Owner { app: RPC, tag: tag(g, i, false) }, Owner { app: RPC, tag: tag(g, i, true) });
                let (qc, qs) = match spec.stack {
                    RpcStack::Rdma | RpcStack::Scalardma => w.connect_app(client, spec.server, oc, os),
                    RpcStack::Star => w.connect_star(client, spec.server, oc, os, StarRole::SecondStateless),
                    RpcStack::StarAuto => w.connect_star(client, spec.server, oc, os, StarRole::Auto),
                }
                .expect("validated hosts");
                let timers = (spec.stack == RpcStack::Scalardma || spec.first_call_spread() > Time::ZERO).then(|| [w.add_app_timer(RPC, tag(g, i, false)), w.add_app_timer(RPC, tag(g, i, true))]);
                conns.push(Conn { client, qc, qs, timers, call_at: Time::ZERO, received: 0 });
            }
            let window = w.add_app_timer(RPC, tag(g, WINDOW, false));
            w.arm(window, spec.warmup);
            r.groups.push(RpcGroup { spec, conns, ready: 0, link_start: [0; 2], calls: 0, latencies: Vec::new(), errors: 0 });
            let mut starts = crate::sim::rng::stream(w.seed, "rpc", g as u64);
            for i in 0..r.groups[g].conns.len() {
                let Conn { qc, qs, client, .. } = r.groups[g].conns[i];
                let server = r.groups[g].spec.server;
                for _ in 0..r.groups[g].spec.requests {
                    r.post_recv(w, g, qs, server, w.now);
                }
                r.post_recv(w, g, qc, client, w.now);
                match r.groups[g].spec.first_call_spread().0 {
                    0 => r.start_call(w, g, i, Time::ZERO),
                    spread => {
                        let at = Time(rand::Rng::random_range(&mut starts, 0..spread));
                        let conn = &mut r.groups[g].conns[i];
                        conn.call_at = at;
                        w.arm(conn.timers.expect("a spread start has timers")[0], at);
                    }
                }
            }
        }
        r
    }

    /// Posts a receive on `q` at `t` (when the application sees the completion it answers).
    fn post_recv(&mut self, w: &mut World, g: usize, q: u32, node: u32, t: Time) {
        let spec = &self.groups[g].spec;
        let len = spec.request.0.max(spec.reply.0);
        let (lkey, _) = w.app_keys(node);
        if w.post_recv_at(q, RecvWr { id: 0, addr: 0, len, lkey }, t).is_err() {
            self.groups[g].errors += 1;
        }
    }

    /// ScalaRDMA: the earliest time from `t` at which connection `c`'s group may start work.
    fn allowed(&self, g: usize, c: usize, t: Time) -> Time {
        let s = &self.groups[g].spec;
        let groups = s.connections.div_ceil(s.group_size) as u64;
        if s.stack != RpcStack::Scalardma || groups <= 1 {
            return t;
        }
        let mine = (c as u64) / s.group_size as u64;
        let slot = s.timeslot.0;
        let k = t.0 / slot;
        let open = |k: u64| Time(k * slot) + s.switch_cost;
        if k % groups == mine && t >= open(k) {
            return t;
        }
        let ahead = (mine + groups - k % groups) % groups;
        let k2 = if ahead == 0 && t < open(k) { k } else { k + if ahead == 0 { groups } else { ahead } };
        open(k2)
    }

    /// Connection `c`'s client starts a call.
    fn start_call(&mut self, w: &mut World, g: usize, c: usize, t: Time) {
        self.groups[g].conns[c].call_at = t;
        self.act(w, g, c, false, t);
    }

    /// Connection `c`'s client sends its requests, or its server its reply (`server`), at `t`
    /// or, under ScalaRDMA, when its group's turn comes.
    fn act(&mut self, w: &mut World, g: usize, c: usize, server: bool, t: Time) {
        let at = self.allowed(g, c, t);
        if at > t.max(w.now) {
            let timers = self.groups[g].conns[c].timers.expect("ScalaRDMA connections have timers (allowed() holds no other back)");
            w.arm(timers[server as usize], at);
            return;
        }
        self.send(w, g, c, server, t.max(w.now));
    }

    fn send(&mut self, w: &mut World, g: usize, c: usize, server: bool, t: Time) {
        let (conn, spec) = (self.groups[g].conns[c], &self.groups[g].spec);
        let (node, q, len, n) = if server { (spec.server, conn.qs, spec.reply.0, 1) } else { (conn.client, conn.qc, spec.request.0, spec.requests) };
        let (lkey, _) = w.app_keys(node);
        let wr = SendWr { id: server as u64, verb: Verb::Send, local_addr: 0, len, lkey, remote_addr: 0, rkey: 0 };
        for _ in 0..n {
            if w.post_send_at(q, wr, t).is_err() {
                self.groups[g].errors += 1;
            }
        }
    }

    /// Per group: what the summary reports.
    pub fn summary(&self, w: &World) -> Vec<RpcSummary> {
        self.groups.iter().map(|g| g.summary(w)).collect()
    }
}

impl Application for Rpcs {
    fn on_timer(&mut self, w: &mut World, t: u32) {
        let (g, c, server) = untag(t);
        let now = w.now;
        if c == WINDOW {
            self.groups[g].link_start = link_bytes(w, self.groups[g].spec.server);
            return;
        }
        self.act(w, g, c, server, now);
    }

    fn on_completion(&mut self, w: &mut World, t: u32, done: Completion) {
        let (g, c, server) = untag(t);
        if done.status != Status::Success {
            self.groups[g].errors += 1;
            return;
        }
        if done.kind != CompletionKind::Recv {
            return;
        }
        let conn = self.groups[g].conns[c];
        if server {
            let node = self.groups[g].spec.server;
            self.post_recv(w, g, conn.qs, node, done.at);
            let grp = &mut self.groups[g];
            grp.conns[c].received += 1;
            if grp.conns[c].received < grp.spec.requests {
                return;
            }
            grp.conns[c].received = 0;
            match grp.spec.workload {
                RpcWorkload::Rpc => self.act(w, g, c, true, done.at),
                RpcWorkload::ParameterServer => {
                    grp.ready += 1;
                    if grp.ready as usize == grp.conns.len() {
                        grp.ready = 0;
                        for i in 0..self.groups[g].conns.len() {
                            self.act(w, g, i, true, done.at);
                        }
                    }
                }
            }
        } else {
            let grp = &mut self.groups[g];
            if done.at >= grp.spec.warmup {
                grp.calls += 1;
                grp.latencies.push((done.at - conn.call_at).0);
            }
            self.post_recv(w, g, conn.qc, conn.client, done.at);
            self.start_call(w, g, c, done.at);
        }
    }
}

/// One `[[rpc]]` entry's results (`summary.json` `rpc`).
#[derive(Clone, Debug, Serialize)]
pub struct RpcSummary {
    pub name: String,
    pub stack: RpcStack,
    pub workload: RpcWorkload,
    pub connections: u32,
    /// Calls finished in the measurement window, and per second (millions).
    pub calls: u64,
    pub mcalls: f64,
    /// Throughput normalized to the server's link: the calls' request messages, as the bytes
    /// RoCE SENDs of them take on the wire, over the link's rate (the busier direction for
    /// requests at least as large as replies).
    pub load: f64,
    /// The server link's utilization in its busier direction over the window: every byte on
    /// the wire, StaR's WQEPs, CQEPs and acknowledgements included (a port counter's view).
    pub wire_load: f64,
    /// Over the calls finished in the window; null if none did.
    pub latency_mean_us: Option<f64>,
    pub latency_p50_us: Option<f64>,
    pub latency_p99_us: Option<f64>,
    pub errors: u64,
}

impl RpcSummary {
    /// Why the window held too few calls per connection for its figures, if it did: calls,
    /// `load` and latency count whole calls finished in it, so the call each connection has in
    /// flight at its start counts whole (8 StaR connections of 2.2 ms calls over an 8 ms window
    /// read a `load` of 1.02, above the link).
    pub fn window_warning(&self) -> Option<String> {
        const FEWEST: f64 = 10.0;
        let per_conn = self.calls as f64 / self.connections.max(1) as f64;
        (self.connections > 0 && per_conn < FEWEST).then(|| {
            format!(
                "rpc `{}`: the measurement window held {per_conn:.1} calls per connection; calls, load ({:.3}) and latency count whole calls finished in it, so the call each connection has in flight at its start counts whole, up to {:.0}% of each figure: lengthen the run past warmup (to {FEWEST} calls per connection or more)",
                self.name,
                self.load,
                100.0 / per_conn.max(1.0)
            )
        })
    }
}

impl RpcGroup {
    fn summary(&self, w: &World) -> RpcSummary {
        let s = &self.spec;
        let window = w.end.saturating_sub(s.warmup).as_secs_f64();
        let per_s = if window > 0.0 { self.calls as f64 / window } else { 0.0 };
        let hdr = crate::wire::roce::Opcode::SendOnly.header_bytes() as u64;
        let rate = w.host_link_rate(s.server).0 as f64;
        // Each request is a SEND of one or more MTU-sized packets, every one with its header.
        let packets = crate::nic::qp::packets_for(s.request.0, w.nic_spec.mtu) as u64;
        let load = per_s * s.requests as f64 * (s.request.0 + packets * hdr) as f64 * 8.0 / rate;
        let end = link_bytes(w, s.server);
        let busier = (end[0] - self.link_start[0]).max(end[1] - self.link_start[1]);
        let wire_load = if window > 0.0 { busier as f64 * 8.0 / window / rate } else { 0.0 };
        let mut l = self.latencies.clone();
        l.sort_unstable();
        let q = |p: f64| (!l.is_empty()).then(|| l[((l.len() - 1) as f64 * p).round() as usize] as f64 / 1e6);
        let mean = (!l.is_empty()).then(|| l.iter().map(|&x| x as f64).sum::<f64>() / l.len() as f64 / 1e6);
        RpcSummary { name: s.name.clone(), stack: s.stack, workload: s.workload, connections: s.connections, calls: self.calls, mcalls: per_s / 1e6, load, wire_load, latency_mean_us: mean, latency_p50_us: q(0.5), latency_p99_us: q(0.99), errors: self.errors }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(connections: u32, stack: RpcStack) -> Rpcs {
        let spec = RpcSpec {
            name: "t".into(),
            server: 0,
            clients: vec![1],
            connections,
            stack,
            workload: RpcWorkload::Rpc,
            requests: 3,
            request: Bytes(32),
            reply: Bytes(32),
            warmup: Time::ZERO,
            start_spread: None,
            group_size: 240,
            timeslot: Time::from_us(20),
            switch_cost: Time::from_us(1),
            security: true,
        };
        Rpcs { groups: vec![RpcGroup { spec, conns: Vec::new(), ready: 0, link_start: [0; 2], calls: 0, latencies: Vec::new(), errors: 0 }] }
    }

    #[test]
    fn scalardma_turns_rotate_over_the_groups_after_each_switch() {
        let us = Time::from_us;
        // 500 connections: groups 0..240, 240..480, 480..500, turns of 20 µs.
        let r = group(500, RpcStack::Scalardma);
        assert_eq!(r.allowed(0, 0, us(0)), us(1), "the first turn starts with a switch");
        assert_eq!(r.allowed(0, 0, us(5)), us(5));
        assert_eq!(r.allowed(0, 300, us(5)), us(21));
        assert_eq!(r.allowed(0, 499, us(5)), us(41));
        assert_eq!(r.allowed(0, 0, us(25)), us(61), "group 0's next turn");
        assert_eq!(r.allowed(0, 300, us(20)), us(21), "inside the switch");
        // One group: no middleware at all; plain RDMA: never held.
        assert_eq!(group(240, RpcStack::Scalardma).allowed(0, 239, us(3)), us(3));
        assert_eq!(group(500, RpcStack::Rdma).allowed(0, 499, us(3)), us(3));
    }

    #[test]
    fn tags_round_trip() {
        assert_eq!(untag(tag(2047, 524_287, true)), (2047, 524_287, true));
        assert_eq!(untag(tag(3, 0, false)), (3, 0, false));
    }
}
