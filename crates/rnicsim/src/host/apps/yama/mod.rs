//! Yama (§3–§4): entities on client hosts post work to offload chains at a server's NIC, through
//! libYama (`crates/yama`) or straight to the engines (the vanilla baseline).
//!
//! Each entity runs generator instances spread over its client hosts; each instance has queue
//! pairs (RC connections to the chain's server) and keeps `depth` operations outstanding. An
//! operation travels as an RDMA WRITE of its request bytes; at the server it passes the chain's
//! engines ([`crate::nic::offload`]) in order and is answered with a WRITE of its reply bytes
//! (the value of a GET, the data of a READ, a tiny acknowledgement otherwise).
//!
//! With isolation, every client host runs one libYama instance per chain it uses: a
//! [`yama::ChainScheduler`] paces each queue pair at its policy weight × the chain's estimate,
//! and the instances form the chain's overlay. Every period each instance writes the work its
//! applications posted and completed into the leader's ring buffer and reads the leader's
//! timestamped estimate (one-way delays of half the base RTT; the overlay runs in a higher
//! priority class, so it does not queue behind application traffic). The leader runs the
//! feedback loop ([`yama::Prober`]) and posts the dummy work it asks for, paced over the next
//! period. Completions of one-sided chains are counted where they were posted; of two-sided
//! chains, at the server, whose libYama reports them to the leader the same way. An instance
//! whose entities all stopped runs nothing (its cycles came from their polling); if it led, the
//! others see the estimate go stale and the first to notice takes over.
//!
//! A chain with no engines and a `server` is that host NIC's own RDMA engine: an operation is a
//! real RDMA READ or WRITE of 64 bytes to the server, complete when its completion reaches the
//! client, and the chain's throughput is whatever the server's NIC gives (its transport, its
//! queue-pair scheduler, with `[nic.state_cache]` its connection-state misses). libYama sees
//! only the completions, as for any other chain.

pub mod spec;
mod summary;

pub use summary::{ChainSummary, EngineSummary, EntitySummary, YamaSummary};

use super::{Application, Owner, YAMA};
use crate::nic::offload::{Arrival, Engine, Work};
use crate::nic::verbs::{Completion, PostError, SendWr, Status, Verb};
use crate::scenario::LoadedScenario;
use crate::sim::rng::{stream, Rng};
use crate::sim::TimerId;
use crate::units::Time;
use crate::world::World;
use rand::Rng as _;
use spec::{Workload, YamaSpec};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use ::yama::{ChainScheduler, Counts, Overlay, Policy, Prober, ProberConfig, ReadOutcome};

/// The member index that stands for a chain's server (reports of two-sided completions).
const SERVER: u16 = u16::MAX;
/// A queue index that marks dummy work.
const DUMMY: u32 = u32::MAX;
/// Work of one key-value request (a 32-byte key and a 64-byte value) and of one RDMA operation.
const KV_WORK: u64 = 96;
const RDMA_WORK: u64 = 64;

/// Internal events, kept in one heap behind one world timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Start,
    /// The engine serving operation `op` is done with it.
    StageDone { op: u32 },
    /// Operation `op` (its request in the server's memory) enters its chain's first engine.
    Enter { op: u32 },
    /// Operation `op` moves on to its next engine (or back to its client).
    Forward { op: u32 },
    /// Queue pair `q` may have tokens now; a stale wake-up (`gen` is not its queue's latest,
    /// another was armed since at a higher rate) does nothing.
    Wake { q: u32, gen: u32 },
    /// Member `m` of chain `c` runs its period routine.
    Period { c: u16, m: u16 },
    /// A report of (app done, app posted, dummy done) reaches member `to` (a leader).
    /// `waiting`: work the chain did not take (tokens the member's queue pairs lost while their
    /// work waited, and work that came back queued to a queue pair with more waiting).
    Report { c: u16, to: u16, app_done: u64, app_posted: u64, dummy_done: u64, waiting: u64 },
    /// Member `m`'s read reaches member `at`; the answer comes back after the same delay.
    ReadAt { c: u16, m: u16, at: u16 },
    /// The estimate (f64 bits) stamped `stamp` reaches member `m`.
    Estimate { c: u16, m: u16, bits: u64, stamp: u64 },
    /// A vote request of `candidate`, term `term`, reaches member `to`.
    Vote { c: u16, to: u16, candidate: u16, term: u32 },
    /// The leader `m` of chain `c` posts its next piece of dummy work.
    Dummy { c: u16, m: u16 },
    /// Open loop: the next operation arrives at queue `q`.
    Arrive { q: u32 },
    /// Entity `e` starts or stops.
    EntityOn { e: u32 },
    EntityOff { e: u32 },
    Sample,
}

/// One operation in flight.
#[derive(Clone, Copy, Debug)]
struct Op {
    /// Its queue, or [`DUMMY`].
    q: u32,
    chain: u16,
    /// For dummy work, the member that posted it.
    member: u16,
    conn: u32,
    stage: u8,
    work: Work,
    req: u64,
    reply: u64,
    /// When the application generated it (latency is measured from here).
    born: Time,
    /// When libYama submitted it to the chain.
    sent: Time,
    /// It was answered through the host (a key-value miss or PUT): a slower kind of answer,
    /// which the application can tell from a hit.
    hosted: bool,
}

/// A connection from a client host to a chain's server, with the operations on the wire each
/// way (RC delivers in order).
struct Conn {
    client: u32,
    server: u32,
    /// Of a chain that is its server NIC's own RDMA engine: operations are the verbs themselves.
    nic_rdma: bool,
    requests: VecDeque<u32>,
    replies: VecDeque<u32>,
    /// What posts on it.
    user: ConnUser,
    /// A queue pair of it is in the error state for good.
    failed: bool,
}

/// What a connection carries: an application queue pair's work, or a member's dummy work.
#[derive(Clone, Copy)]
enum ConnUser {
    Queue(u32),
    Dummy { c: u16, m: u16 },
}

struct Queue {
    entity: u32,
    chain: u16,
    member: u16,
    node: u32,
    /// Its slot in the member's scheduler.
    slot: usize,
    conn: u32,
    active: bool,
    outstanding: u32,
    depth: u32,
    /// Work generated and waiting in libYama's work queue (for tokens or the depth).
    backlog: VecDeque<Op>,
    /// Its last operation came back late (it waited in the chain): while its depth holds it,
    /// the chain is what holds it.
    late: bool,
    /// When its last operation came back, and how long that one took from submission.
    back_at: Time,
    turnaround: Time,
    /// Its connection failed (an operation completed in error, or a post was refused for the
    /// queue pair's state): it posts nothing more and holds no share.
    dead: bool,
    /// Its send queue was full (more outstanding than `nic.sq_depth`): it posts again when an
    /// operation comes back.
    full: bool,
    /// Open loop: mean picoseconds between arrivals (else a saturating generator).
    mean_gap: Option<f64>,
    /// It waits for tokens: a wake-up is armed for `wake_at`, the latest of generation
    /// `wake_gen` (earlier ones are stale).
    wake_armed: bool,
    wake_at: Time,
    wake_gen: u32,
    rng: Rng,
}

struct Member {
    node: u32,
    /// Since when work it sent (its applications' or its dummy work) waits with nothing of
    /// its come back (`None`: something came back since its last send), and how long its
    /// last operation took.
    waiting_since: Option<Time>,
    last_turnaround: Time,
    /// The slowest any of its work has come back: nothing back for twice as long (and four of
    /// its last turnarounds, and a window of periods) is a cut, not a queue.
    slowest: Time,
    /// Nothing of its has come back for a while though it sent work: its host is cut off
    /// from the chain. It runs no loop and reports nothing (a leader cut off posted dummy work
    /// that never came back, and its estimate sank with what the others completed), until
    /// something comes back.
    cut: bool,
    /// Paces at the estimate it read from the leader, or its own while leading.
    sched: ChainScheduler,
    prober: Prober,
    /// What it published while leading: (estimate, stamp).
    published: (f64, Time),
    /// Since its last report: application work completed and posted here, dummy completed.
    app_done: u64,
    app_posted: u64,
    dummy_done: u64,
    /// Reports received while leading, since its last loop iteration.
    inbox: (u64, u64, u64, u64),
    /// The fastest any operation posted here came back (from submission), answered on the
    /// engines and through the host: the chain's unloaded turnarounds as this host sees them.
    fastest: [Time; 2],
    /// Since its last report: work that came back late (queued in the chain) to a queue pair
    /// with more work waiting: the applications offer more than the chain takes.
    held: u64,
    /// The queue pairs posting to the chain from here.
    queues: Vec<u32>,
    dummy_conn: u32,
    dummy_budget: u64,
    dummy_gap: Time,
    dummy_armed: bool,
    rng: Rng,
    delay_to: Vec<Time>,
    delay_to_server: Time,
}

struct ChainRun {
    spec: spec::ChainSpec,
    engines: Vec<usize>,
    server: u32,
    two_sided: bool,
    /// libYama paces this chain (else its entities post straight to the engines).
    isolation: bool,
    /// Its feedback loop's period.
    period: Time,
    members: Vec<Member>,
    overlay: Overlay,
    /// Two-sided: completed at the server since its last report (app, dummy), and the leader
    /// the server reports to.
    target: (u64, u64),
    server_leader: u16,
    /// Bytes completed in the measurement window: application, dummy.
    app_bytes: u64,
    dummy_bytes: u64,
}

/// Per entity, over the measurement window.
#[derive(Default)]
struct EntityRun {
    bytes: u64,
    /// Bytes in the window per entry of the entity's `nodes`.
    by_node: Vec<u64>,
    ops: u64,
    latencies: Vec<Time>,
    interval: u64,
    active: bool,
}

#[derive(Default)]
pub struct Yama {
    pub spec: Option<YamaSpec>,
    timer: Option<TimerId>,
    heap: BinaryHeap<Reverse<(Time, u64, Ev)>>,
    seq: u64,
    engines: Vec<Engine>,
    chains: Vec<ChainRun>,
    queues: Vec<Queue>,
    conns: Vec<Conn>,
    ops: Vec<Op>,
    free: Vec<u32>,
    policy: Policy,
    entities: Vec<EntityRun>,
    /// Per sample: its end and each entity's Gbps in it.
    pub timeline: Vec<(Time, Vec<f64>)>,
    /// When entities joined or left (from the warmup on, not at time 0), and the chain of each.
    changes: Vec<Time>,
    change_chain: Vec<usize>,
    /// At each of those, every chain's application bytes measured so far: the summary's fair
    /// shares take each stretch between them at the chain's own throughput in it.
    change_bytes: Vec<Vec<u64>>,
    end: Time,
    /// WRITEs the NIC refused.
    post_errors: u64,
    /// Operations of a NIC's own RDMA engine that completed in error.
    op_errors: u64,
    /// Operations dropped at an engine's full ring (`ring`).
    ring_drops: u64,
    /// Dummy connections opened afresh after theirs failed.
    dummy_reconnects: u64,
    /// What the build found unlikely to be meant (for the run's warnings): the key, the message.
    pub warnings: Vec<(String, String)>,
}

impl Yama {
    pub fn build(w: &mut World, loaded: &LoadedScenario) -> Yama {
        let Some(spec) = loaded.scenario.yama.clone() else { return Yama::default() };
        let timer = w.add_app_timer(YAMA, 0);
        // An estimate is read up to a period (and a read's trip) after it was stamped, so a
        // shorter limit would find every one stale: at least two periods (said now, so that
        // `validate` says it too).
        let mut warnings = Vec::new();
        for c in &spec.chain {
            let (period, asked) = Self::period_and_stale(w, &spec, c);
            if asked < Time(period.0 * 2) {
                warnings.push((
                    "yama.stale_after".to_string(),
                    format!(
                        "{asked} is less than two of chain \"{}\"'s periods ({period} each, 1.25 x its base round trip): every estimate would be read as stale and start an election; it runs with {}",
                        c.name,
                        Time(period.0 * 2)
                    ),
                ));
            }
        }
        let mut y = Yama { spec: Some(spec), timer: Some(timer), warnings, ..Yama::default() };
        y.at(Time(0), Ev::Start);
        w.arm(timer, Time(0));
        y
    }

    /// Chain `c`'s feedback loop period (`period`, or 1.25 × the base round trip from its first
    /// client to its server) and the `stale_after` asked for (4 periods by default).
    fn period_and_stale(w: &mut World, spec: &YamaSpec, c: &spec::ChainSpec) -> (Time, Time) {
        let server = c.server_of(&spec.engine).expect("validated: engines or a server");
        let first = spec.entity.iter().filter(|e| e.chain == c.name).flat_map(|e| e.nodes.first()).next().copied();
        let period = spec.period.unwrap_or_else(|| Time(w.base_rtt(first.unwrap_or(server), server).0 * 5 / 4).max(Time(1)));
        (period, spec.stale_after.unwrap_or(Time(period.0 * 4)))
    }

    fn spec(&self) -> &YamaSpec {
        self.spec.as_ref().expect("built from a [yama] section")
    }

    fn at(&mut self, t: Time, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((t, self.seq, ev)));
    }

    /// Connects everything at time 0.
    fn start(&mut self, w: &mut World) {
        let spec = self.spec().clone();
        self.end = w.end;
        self.engines = spec.engine.iter().cloned().map(|e| Engine::measured_from(e, spec.warmup)).collect();
        let initial = spec.initial.0 as f64 / 8.0;
        let cfg = ProberConfig { beta: spec.beta, window: spec.window as usize, backfill_cap: spec.backfill_cap, initial };
        let burst = spec.burst.0 as f64;
        for (ci, c) in spec.chain.iter().enumerate() {
            let engines: Vec<usize> = c.engines.iter().map(|n| spec.engine.iter().position(|e| &e.name == n).expect("validated")).collect();
            let server = c.server_of(&spec.engine).expect("validated: engines or a server");
            let nic_rdma = c.is_nic_rdma();
            // Members: every client host of the chain's entities, in order of first mention.
            let mut nodes: Vec<u32> = Vec::new();
            for e in spec.entity.iter().filter(|e| e.chain == c.name) {
                for &n in &e.nodes {
                    if !nodes.contains(&n) {
                        nodes.push(n);
                    }
                }
            }
            let mut members = Vec::new();
            for (mi, &node) in nodes.iter().enumerate() {
                let user = ConnUser::Dummy { c: ci as u16, m: mi as u16 };
                let tag = self.connect(w, node, server, nic_rdma, user);
                members.push(Member {
                    node,
                    waiting_since: None,
                    last_turnaround: Time::ZERO,
                    slowest: Time::ZERO,
                    cut: false,
                    sched: ChainScheduler::new(initial, burst),
                    prober: Prober::new(cfg),
                    published: (initial, Time(0)),
                    app_done: 0,
                    app_posted: 0,
                    dummy_done: 0,
                    inbox: (0, 0, 0, 0),
                    fastest: [Time(u64::MAX); 2],
                    held: 0,
                    queues: Vec::new(),
                    dummy_conn: tag,
                    dummy_budget: 0,
                    dummy_gap: Time(0),
                    dummy_armed: false,
                    rng: stream(w.seed, "yama-dummy", (ci * 65536 + mi) as u64),
                    delay_to: Vec::new(),
                    delay_to_server: Time(w.base_rtt(node, server).0 / 2),
                });
            }
            for mi in 0..members.len() {
                let delays = nodes.iter().map(|&n| if n == nodes[mi] { Time(0) } else { Time(w.base_rtt(nodes[mi], n).0 / 2) }).collect();
                members[mi].delay_to = delays;
            }
            // (Its first client is `nodes[0]`; too short a stale limit was warned at build.)
            let (period, asked) = Self::period_and_stale(w, &spec, c);
            let stale = asked.max(Time(period.0 * 2)).0;
            let n = members.len().max(1);
            self.chains.push(ChainRun {
                spec: c.clone(),
                engines,
                server,
                two_sided: c.is_two_sided(),
                isolation: c.isolation.unwrap_or(spec.isolation),
                period,
                members,
                overlay: Overlay::new(n, 0, stale),
                target: (0, 0),
                server_leader: 0,
                app_bytes: 0,
                dummy_bytes: 0,
            });
        }
        // Entities, their queues and the policy.
        for (ei, e) in spec.entity.iter().enumerate() {
            let ci = spec.chain.iter().position(|c| c.name == e.chain).expect("validated");
            let pe = self.policy.add_entity(e.weight, ci);
            self.policy.set_active(pe, false);
            self.entities.push(EntityRun { by_node: vec![0; e.nodes.len()], ..EntityRun::default() });
            for inst in 0..e.instances {
                let node = e.nodes[inst as usize % e.nodes.len()];
                let m = self.chains[ci].members.iter().position(|x| x.node == node).expect("a member per client host") as u16;
                let server = self.chains[ci].server;
                let nic_rdma = self.chains[ci].spec.is_nic_rdma();
                for k in 0..e.queues {
                    let tag = self.connect(w, node, server, nic_rdma, ConnUser::Queue(self.queues.len() as u32));
                    let slot = self.chains[ci].members[m as usize].sched.add_qp(0.0, 0);
                    self.chains[ci].members[m as usize].queues.push(self.queues.len() as u32);
                    self.queues.push(Queue {
                        entity: ei as u32,
                        chain: ci as u16,
                        member: m,
                        node,
                        slot,
                        conn: tag,
                        active: false,
                        outstanding: 0,
                        depth: e.depth,
                        backlog: VecDeque::new(),
                        late: false,
                        back_at: Time::ZERO,
                        turnaround: Time::ZERO,
                        dead: false,
                        full: false,
                        mean_gap: None,
                        wake_armed: false,
                        wake_at: Time::ZERO,
                        wake_gen: 0,
                        rng: stream(w.seed, "yama-queue", ((ei as u64) << 32) | (inst as u64 * e.queues as u64 + k as u64)),
                    });
                }
            }
            if let Some(load) = e.load {
                let n = (e.instances * e.queues) as f64;
                let ops_per_s = load.0 as f64 / 8.0 / spec.chain[ci].mean_work() as f64 / n;
                let gap = 1e12 / ops_per_s.max(1e-3);
                for q in self.queues.iter_mut().filter(|q| q.entity == ei as u32) {
                    q.mean_gap = Some(gap);
                }
            }
            for (k, &node) in e.nodes.iter().enumerate() {
                let count = self.queues.iter().filter(|q| q.entity == ei as u32 && q.node == node).count() as u32;
                self.policy.set_qps(pe, node, count);
                if let Some(&nw) = e.node_weights.get(k) {
                    self.policy.set_node_weight(pe, node, nw);
                }
            }
            self.at(e.start, Ev::EntityOn { e: ei as u32 });
            if let Some(s) = e.stop {
                self.at(s, Ev::EntityOff { e: ei as u32 });
            }
        }
        for m in 0..self.chains.iter().map(|c| c.members.len()).max().unwrap_or(0) {
            for c in 0..self.chains.len() {
                if m < self.chains[c].members.len() {
                    // Members start inactive; their entities switch them on.
                    self.chains[c].overlay.set_active(m, false);
                    if self.chains[c].isolation {
                        let p = self.chains[c].period;
                        self.at(p, Ev::Period { c: c as u16, m: m as u16 });
                    }
                }
            }
        }
        for c in 0..self.chains.len() {
            // A chain no entity uses has no loop to report to (and no client to time its
            // period by: it came out at 1 ps, an event each picosecond).
            if self.chains[c].isolation && self.chains[c].two_sided && !self.chains[c].members.is_empty() {
                let p = self.chains[c].period;
                self.at(p, Ev::Period { c: c as u16, m: SERVER });
            }
        }
        self.at(spec.sample, Ev::Sample);
    }

    /// Connects client `node` to `server`; returns the connection's index (owner tags 2i at the
    /// client, 2i + 1 at the server).
    fn connect(&mut self, w: &mut World, node: u32, server: u32, nic_rdma: bool, user: ConnUser) -> u32 {
        let i = self.conns.len() as u32;
        let (client, server) = w.connect_app(node, server, Owner { app: YAMA, tag: 2 * i }, Owner { app: YAMA, tag: 2 * i + 1 }).expect("validated: a chain's clients and server are hosts");
        self.conns.push(Conn { client, server, nic_rdma, requests: VecDeque::new(), replies: VecDeque::new(), user, failed: false });
        i
    }

    /// Connection `i` failed: one of its queue pairs is in the error state (an operation on it
    /// completed in error, or a post was refused for its state), for good. The work on the wire
    /// either way is lost. An application's queue pair stops: it posts nothing more and leaves
    /// its share. A member's dummy connection, libYama's own, is destroyed and opened afresh:
    /// the probe must go on (its dummy work refused without end read as a saturated chain, and
    /// the estimate sank to nothing after one spurious timeout with `nic.retry_count = 0`).
    fn conn_failed(&mut self, w: &mut World, i: u32, now: Time) {
        let conn = &mut self.conns[i as usize];
        if conn.failed {
            return;
        }
        conn.failed = true;
        let lost: Vec<u32> = conn.requests.drain(..).chain(conn.replies.drain(..)).collect();
        for id in lost {
            self.lose(id);
        }
        let conn = &self.conns[i as usize];
        let (client, server_qp, nic_rdma) = (conn.client, conn.server, conn.nic_rdma);
        match conn.user {
            ConnUser::Queue(q) => {
                let qu = &mut self.queues[q as usize];
                qu.dead = true;
                qu.late = false;
                let (c, m, slot) = (qu.chain as usize, qu.member as usize, qu.slot);
                self.chains[c].members[m].sched.set_busy(slot, false, now.0);
            }
            ConnUser::Dummy { c, m } => {
                let (node, server) = (self.chains[c as usize].members[m as usize].node, self.chains[c as usize].server);
                let fresh = self.connect(w, node, server, nic_rdma, ConnUser::Dummy { c, m });
                self.chains[c as usize].members[m as usize].dummy_conn = fresh;
                self.dummy_reconnects += 1;
                w.destroy_qp(client);
                w.destroy_qp(server_qp);
            }
        }
    }

    /// Work of the chain's kind, from `rng`.
    fn generate(c: &spec::ChainSpec, rng: &mut Rng) -> (Work, u64, u64) {
        match c.workload {
            Workload::Nat => {
                let size = c.packet_sizes[rng.random_range(0..c.packet_sizes.len())];
                (Work { bytes: size, key: None, put: false }, size, 8)
            }
            Workload::Aes => (Work { bytes: c.chunk.0, key: None, put: false }, c.chunk.0, 8),
            Workload::Kv => {
                let key = rng.random_range(0..c.keys);
                let put = rng.random::<f64>() >= c.get;
                (Work { bytes: KV_WORK, key: Some(key), put }, if put { KV_WORK } else { 32 }, if put { 8 } else { 64 })
            }
            Workload::Rdma => {
                let read = rng.random::<f64>() < c.read;
                (Work { bytes: RDMA_WORK, key: None, put: false }, if read { 16 } else { RDMA_WORK }, if read { RDMA_WORK } else { 8 })
            }
        }
    }

    fn alloc(&mut self, op: Op) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.ops[i as usize] = op;
                i
            }
            None => {
                self.ops.push(op);
                (self.ops.len() - 1) as u32
            }
        }
    }

    /// Posts a WRITE of `len` bytes; the NIC's refusal (a full send queue, or its queue pair in
    /// the error state) goes to [`Self::refused`].
    fn write(&mut self, w: &mut World, qp: u32, from: u32, to: u32, len: u64, at: Time) -> Result<(), PostError> {
        let (lkey, _) = w.app_keys(from);
        let (_, rkey) = w.app_keys(to);
        let wr = SendWr { id: 0, verb: Verb::Write, local_addr: 0, len, lkey, remote_addr: 0, rkey };
        w.post_send_at(qp, wr, at)
    }

    /// Operation `id`'s post on connection `conn` was refused (`e`), counted in `post_errors`:
    /// it is lost. A full send
    /// queue holds the application queue pair until an operation comes back (a full queue is
    /// no failure: taken for one, it stopped every queue pair deeper than `nic.sq_depth`); any
    /// other refusal means the connection has failed.
    fn refused(&mut self, w: &mut World, id: u32, conn: u32, at: Time, e: PostError) {
        self.post_errors += 1;
        self.lose(id);
        if e == PostError::QueueFull {
            if let ConnUser::Queue(q) = self.conns[conn as usize].user {
                self.queues[q as usize].full = true;
            }
            return;
        }
        self.conn_failed(w, conn, at);
    }

    /// Puts `op` on the wire from its client at `at`.
    fn send(&mut self, w: &mut World, mut op: Op, at: Time) {
        op.sent = at;
        let m = if op.q == DUMMY { op.member as usize } else { self.queues[op.q as usize].member as usize };
        let member = &mut self.chains[op.chain as usize].members[m];
        member.waiting_since.get_or_insert(at);
        let conn = op.conn;
        let server = self.chains[op.chain as usize].server;
        let client_node = if op.q == DUMMY { self.chains[op.chain as usize].members[op.member as usize].node } else { self.queues[op.q as usize].node };
        let id = self.alloc(op);
        if self.conns[conn as usize].nic_rdma {
            // The operation is the verb: a READ of the data (`generate` answers a READ with
            // the data), or a WRITE of it.
            let (lkey, _) = w.app_keys(client_node);
            let (_, rkey) = w.app_keys(server);
            let verb = if op.reply == RDMA_WORK { Verb::Read } else { Verb::Write };
            let wr = SendWr { id: id as u64, verb, local_addr: 0, len: RDMA_WORK, lkey, remote_addr: 0, rkey };
            if let Err(e) = w.post_send_at(self.conns[conn as usize].client, wr, at) {
                self.refused(w, id, conn, at, e);
            }
            return;
        }
        self.conns[conn as usize].requests.push_back(id);
        let qp = self.conns[conn as usize].client;
        if let Err(e) = self.write(w, qp, client_node, server, op.req, at) {
            self.conns[conn as usize].requests.pop_back();
            self.refused(w, id, conn, at, e);
        }
    }

    /// Queue `q`'s generator keeps work in libYama's work queue (a saturating application);
    /// libYama submits it while fewer than `depth` operations are outstanding and (with
    /// isolation) the queue pair has tokens.
    fn fill(&mut self, w: &mut World, q: u32, now: Time) {
        let iso = self.chains[self.queues[q as usize].chain as usize].isolation;
        let routine = self.spec().routine;
        loop {
            let qu = &mut self.queues[q as usize];
            if !qu.active || qu.wake_armed || qu.dead || qu.full {
                break;
            }
            let (c, m) = (qu.chain as usize, qu.member as usize);
            if qu.backlog.is_empty() {
                if qu.mean_gap.is_some() {
                    break;
                }
                let (work, req, reply) = Self::generate(&self.chains[c].spec, &mut qu.rng);
                qu.backlog.push_back(Op { q, chain: c as u16, member: m as u16, conn: qu.conn, stage: 0, work, req, reply, born: now, sent: now, hosted: false });
            }
            if qu.outstanding >= qu.depth {
                break;
            }
            let op = *qu.backlog.front().expect("generated");
            let slot = qu.slot;
            let at = if iso {
                let member = &mut self.chains[c].members[m];
                member.sched.set_busy(slot, true, now.0);
                match member.sched.try_send(slot, op.work.bytes, now.0) {
                    Ok(()) => now + routine,
                    Err(t) => {
                        // A queue pair with no rate waits for a reweight to kick it.
                        if t != u64::MAX {
                            self.arm_wake(q, Time(t));
                        }
                        break;
                    }
                }
            } else {
                now
            };
            let qu = &mut self.queues[q as usize];
            qu.backlog.pop_front();
            qu.outstanding += 1;
            self.chains[c].members[m].app_posted += op.work.bytes;
            self.send(w, op, at);
        }
        let qu = &self.queues[q as usize];
        if iso && !qu.wake_armed {
            // Work waits whenever its entity is on, unless its own turnaround holds it: a queue
            // pair at its depth whose work comes back as fast as the chain answers unloaded is
            // idle to the scheduler, so its tokens go to the others (a latency-bound queue pair
            // must not hold its share of the chain). At its depth with work coming back late,
            // the chain holds it, and it keeps its share.
            let busy = qu.active && !qu.dead && !qu.full && !qu.backlog.is_empty() && (qu.outstanding < qu.depth || qu.late);
            let (c, m, slot) = (qu.chain as usize, qu.member as usize, qu.slot);
            self.chains[c].members[m].sched.set_busy(slot, busy, now.0);
        }
    }

    /// Queue pair `q` waits for tokens until `at`: a wake-up of a new generation (any armed
    /// before is stale).
    fn arm_wake(&mut self, q: u32, at: Time) {
        let qu = &mut self.queues[q as usize];
        qu.wake_armed = true;
        qu.wake_at = at;
        qu.wake_gen = qu.wake_gen.wrapping_add(1);
        let gen = qu.wake_gen;
        self.at(at, Ev::Wake { q, gen });
    }

    /// The rates of member `m` of chain `c` may have risen (a new estimate, weight, join or
    /// leave): each of its queue pairs waiting for tokens is woken when its tokens suffice at
    /// the new rate, if that is sooner than the wake-up reckoned at the old one (its banked
    /// tokens are kept, the rest come at the new rate). A later time is left to the wake-up
    /// armed, which finds the tokens short and waits again. Reckoned once, at the rate of the
    /// refusal, a light queue pair (weight 1 of 100) slept 260 µs on an idle 10 Gbps engine
    /// after the heavy one left, and one paced at an `initial` of 1 Mbps never saw the
    /// estimate rise.
    fn rewake(&mut self, c: usize, m: usize, now: Time) {
        for k in 0..self.chains[c].members[m].queues.len() {
            let q = self.chains[c].members[m].queues[k];
            let qu = &self.queues[q as usize];
            if !qu.wake_armed || !qu.active || qu.dead || qu.full || qu.outstanding >= qu.depth {
                continue;
            }
            let Some(op) = qu.backlog.front() else { continue };
            let (slot, bytes, armed) = (qu.slot, op.work.bytes, qu.wake_at);
            let t = self.chains[c].members[m].sched.ready_at(slot, bytes, now.0);
            if t < armed.0 {
                self.arm_wake(q, Time(t.max(now.0)));
            }
        }
    }

    /// Member `m` of chain `c` paces at `est` from `now`; its waiting queue pairs see a rise.
    fn set_estimate(&mut self, c: usize, m: usize, est: f64, now: Time) {
        let sched = &mut self.chains[c].members[m].sched;
        let rose = est > sched.estimate();
        sched.set_estimate(est, now.0);
        if rose {
            self.rewake(c, m, now);
        }
    }

    /// Open loop: an operation arrives at queue `q` (Poisson arrivals while its entity is on).
    fn arrive(&mut self, w: &mut World, q: u32, now: Time) {
        let qu = &mut self.queues[q as usize];
        let Some(mean) = qu.mean_gap else { return };
        if !qu.active {
            return;
        }
        let c = qu.chain as usize;
        let (work, req, reply) = Self::generate(&self.chains[c].spec, &mut qu.rng);
        qu.backlog.push_back(Op { q, chain: c as u16, member: qu.member, conn: qu.conn, stage: 0, work, req, reply, born: now, sent: now, hosted: false });
        let u: f64 = 1.0 - qu.rng.random::<f64>();
        let gap = Time((-mean * crate::sim::rng::det_ln(u)).round().max(1.0) as u64);
        self.at(now + gap, Ev::Arrive { q });
        self.fill(w, q, now);
    }

    /// Entity `e`'s standing in its chain's split: on, with queue pairs on some member that is
    /// not cut off, and each node's queue pairs counted on such members only. An entity whose
    /// every instance is cut off takes no share, as if it had stopped, and a node cut off
    /// passes its share to the entity's other nodes. (Counted on, a cut-off entity of weight 2
    /// held two thirds of a 10 Gbps AES engine that its work never reached: the other, of
    /// weight 1, ran at 1.6 Gbps with the engine three quarters idle.)
    fn place_entity(&mut self, e: usize) {
        let mut reachable = false;
        for k in 0..self.spec().entity[e].nodes.len() {
            let node = self.spec().entity[e].nodes[k];
            let chains = &self.chains;
            let n = self.queues.iter().filter(|q| q.entity as usize == e && q.node == node && !chains[q.chain as usize].members[q.member as usize].cut).count() as u32;
            self.policy.set_qps(e, node, n);
            reachable |= n > 0;
        }
        self.policy.set_active(e, self.entities[e].active && reachable);
    }

    /// A member of chain `c` was found cut off, or came back: the chain's split is redone.
    fn reshare(&mut self, c: usize, now: Time) {
        for e in 0..self.entities.len() {
            if self.policy.chain_of(e) == c {
                self.place_entity(e);
            }
        }
        if self.chains[c].isolation {
            self.reweight(c, now);
            for m in 0..self.chains[c].members.len() {
                self.rewake(c, m, now);
            }
        }
    }

    /// Re-weights every queue pair of chain `c` from the policy (a join or a leave).
    fn reweight(&mut self, c: usize, now: Time) {
        for q in self.queues.iter().filter(|q| q.chain as usize == c) {
            let wgt = if q.active { self.policy.qp_weight(q.entity as usize, q.node) } else { 0.0 };
            self.chains[c].members[q.member as usize].sched.set_weight(q.slot, wgt, now.0);
        }
    }

    fn entity_switch(&mut self, w: &mut World, e: u32, on: bool, now: Time) {
        let c = self.policy.chain_of(e as usize);
        self.entities[e as usize].active = on;
        self.place_entity(e as usize);
        // From the warmup on, as throughput is measured (a change at the warmup itself was
        // lost), but not the entities on from the start of the run: nothing changed then.
        if now >= self.spec().warmup && now > Time::ZERO {
            self.changes.push(now);
            self.change_chain.push(c);
            self.change_bytes.push(self.chains.iter().map(|c| c.app_bytes).collect());
        }
        let qs: Vec<u32> = (0..self.queues.len() as u32).filter(|&q| self.queues[q as usize].entity == e).collect();
        for q in qs {
            self.queues[q as usize].active = on;
            // What its work met before counts no more.
            self.queues[q as usize].late = false;
            if on && self.queues[q as usize].mean_gap.is_some() {
                self.at(now, Ev::Arrive { q });
            }
        }
        // A member is active while any of its queues is (and it is not cut off).
        for m in 0..self.chains[c].members.len() {
            let active = self.member_has_active_queue(c, m) && !self.chains[c].members[m].cut;
            self.set_member_active(c, m, active, now);
        }
        if self.chains[c].isolation {
            self.reweight(c, now);
            // Queue pairs waiting for tokens see their new rates at once.
            for m in 0..self.chains[c].members.len() {
                self.rewake(c, m, now);
            }
        }
        // Every queue pair of the chain sees its new rate.
        let chain_qs: Vec<u32> = (0..self.queues.len() as u32).filter(|&q| self.queues[q as usize].chain as usize == c).collect();
        for q in chain_qs {
            self.fill(w, q, now);
        }
    }

    /// Operation `id` enters engine stage `op.stage` of its chain at `now`. If the engine's
    /// ring is full the operation is lost; its application learns so at once (as of a refused
    /// post) and its queue pair may post again.
    fn enter(&mut self, w: &mut World, id: u32, now: Time) {
        let op = self.ops[id as usize];
        let e = self.chains[op.chain as usize].engines[op.stage as usize];
        match self.engines[e].arrive(now, op.conn, id, op.work) {
            Arrival::Started(done) => self.at(done, Ev::StageDone { op: id }),
            Arrival::Queued => {}
            Arrival::Dropped => {
                self.ring_drops += 1;
                self.lose(id);
                if op.q != DUMMY {
                    self.fill(w, op.q, now);
                }
            }
        }
    }

    /// The engine serving `id` is done with it: the next waiting piece starts, and `id` moves
    /// on (after the host, for a key-value miss or PUT).
    fn stage_done(&mut self, id: u32, now: Time) {
        let op = self.ops[id as usize];
        let e = self.chains[op.chain as usize].engines[op.stage as usize];
        let ((left, _), to_host, next) = self.engines[e].depart(now);
        debug_assert_eq!(left, id);
        if let Some((n, done)) = next {
            self.at(done, Ev::StageDone { op: n });
        }
        if to_host {
            self.ops[id as usize].hosted = true;
            let t = now + self.engines[e].spec.host_time;
            self.at(t, Ev::Forward { op: id });
        } else {
            self.at(now, Ev::Forward { op: id });
        }
    }

    fn forward(&mut self, w: &mut World, id: u32, now: Time) {
        let op = &mut self.ops[id as usize];
        op.stage += 1;
        let op = *op;
        let chain = &mut self.chains[op.chain as usize];
        if (op.stage as usize) < chain.engines.len() {
            self.enter(w, id, now);
            return;
        }
        if chain.two_sided {
            if op.q == DUMMY {
                chain.target.1 += op.work.bytes;
            } else {
                chain.target.0 += op.work.bytes;
            }
        }
        // The answer goes back, unless its connection failed meanwhile.
        let conn = &mut self.conns[op.conn as usize];
        if conn.failed {
            self.lose(id);
            return;
        }
        conn.replies.push_back(id);
        let qp = conn.server;
        let client_node = if op.q == DUMMY { chain.members[op.member as usize].node } else { self.queues[op.q as usize].node };
        let server = chain.server;
        if let Err(e) = self.write(w, qp, server, client_node, op.reply, now) {
            self.conns[op.conn as usize].replies.pop_back();
            self.refused(w, id, op.conn, now, e);
        }
    }

    /// Something member `m` sent came back after `turnaround`: it is not cut off (any more).
    fn back_to_member(&mut self, c: usize, m: usize, turnaround: Time, now: Time) {
        let member = &mut self.chains[c].members[m];
        member.waiting_since = None;
        member.last_turnaround = turnaround;
        member.slowest = member.slowest.max(turnaround);
        if member.cut {
            member.cut = false;
            let active = self.member_has_active_queue(c, m);
            self.set_member_active(c, m, active, now);
            self.reshare(c, now);
        }
    }

    fn member_has_active_queue(&self, c: usize, m: usize) -> bool {
        self.queues.iter().any(|q| q.chain as usize == c && q.member as usize == m && q.active)
    }

    /// Member `m` of chain `c` runs (its applications poll) or not; a leader resuming restarts
    /// its loop from what it last knew.
    fn set_member_active(&mut self, c: usize, m: usize, active: bool, now: Time) {
        let chain = &mut self.chains[c];
        let was = chain.overlay.is_active(m);
        chain.overlay.set_active(m, active);
        if active && !was && chain.overlay.runs_loop(m) {
            let est = chain.members[m].sched.estimate();
            chain.members[m].prober.start(now.0, est);
        }
    }

    /// The answer reached the client: the operation is complete.
    fn complete(&mut self, w: &mut World, id: u32, now: Time) {
        let op = self.ops[id as usize];
        self.free.push(id);
        let measuring = now >= self.spec().warmup && now <= self.end;
        let c = op.chain as usize;
        let m = if op.q == DUMMY { op.member as usize } else { self.queues[op.q as usize].member as usize };
        // Back more than twice as slowly as the fastest: it waited in the chain at least as
        // long as the chain takes unloaded.
        let turnaround = now - op.sent;
        self.back_to_member(c, m, turnaround, now);
        let fastest = &mut self.chains[c].members[m].fastest[op.hosted as usize];
        *fastest = (*fastest).min(turnaround);
        let queued = turnaround.0 > fastest.0.saturating_mul(2);
        // Back an eighth later than the fastest: it waited in the chain's queues.
        let late = turnaround.0 > fastest.0.saturating_add(fastest.0 / 8);
        if op.q == DUMMY {
            let chain = &mut self.chains[c];
            if !chain.two_sided {
                chain.members[op.member as usize].dummy_done += op.work.bytes;
            }
            if measuring {
                chain.dummy_bytes += op.work.bytes;
            }
            return;
        }
        let q = op.q;
        let e = self.queues[q as usize].entity as usize;
        if !self.chains[c].two_sided {
            self.chains[c].members[m].app_done += op.work.bytes;
        }
        let ent = &mut self.entities[e];
        ent.interval += op.work.bytes;
        if measuring {
            let node = self.queues[q as usize].node;
            if let Some(k) = self.spec.as_ref().and_then(|s| s.entity[e].nodes.iter().position(|&n| n == node)) {
                ent.by_node[k] += op.work.bytes;
            }
            ent.bytes += op.work.bytes;
            ent.ops += 1;
            ent.latencies.push(now - op.born);
            self.chains[c].app_bytes += op.work.bytes;
        }
        let qu = &mut self.queues[q as usize];
        qu.outstanding -= 1;
        qu.full = false;
        qu.late = late;
        qu.back_at = now;
        qu.turnaround = turnaround;
        if queued && qu.active && !qu.backlog.is_empty() {
            self.chains[c].members[m].held += op.work.bytes;
        }
        self.fill(w, q, now);
    }

    /// Operation `id` is gone without completing: its slot is freed and its queue stops
    /// counting it.
    fn lose(&mut self, id: u32) {
        let op = self.ops[id as usize];
        self.free.push(id);
        if op.q != DUMMY {
            let qu = &mut self.queues[op.q as usize];
            qu.outstanding -= 1;
            qu.full = false;
        }
    }

    /// Member `m`'s period routine (or the server's report for a two-sided chain).
    fn period(&mut self, c: usize, m: u16, now: Time) {
        let period = self.chains[c].period;
        let window = self.spec().window as u64;
        if m == SERVER && self.chains[c].members.is_empty() {
            return;
        }
        self.at(now + period, Ev::Period { c: c as u16, m });
        let chain = &mut self.chains[c];
        if m == SERVER {
            let (app, dummy) = std::mem::take(&mut chain.target);
            let to = chain.server_leader;
            let d = chain.members[to as usize].delay_to_server;
            self.at(now + d, Ev::Report { c: c as u16, to, app_done: app, app_posted: 0, dummy_done: dummy, waiting: 0 });
            return;
        }
        let mi = m as usize;
        if !chain.overlay.is_active(mi) {
            // No application polls here: libYama has no cycles (and what came back while its
            // entities were stopping is old news when they start again).
            chain.members[mi].held = 0;
            return;
        }
        // A queue pair at its depth whose last work came back late is held by the chain and
        // keeps its share, but only while its work comes back: once nothing has for four of
        // its last turnarounds (and a window of periods), its work is stuck outside the chain
        // (its host's link failed, say), and its tokens go to the others. Counted as held, its
        // unspent tokens read as a saturated chain: the estimate sank to what the others were
        // paced at, and again every window (a 10 Gbps engine ran at 2.9 with one of three
        // client hosts cut off).
        let horizon = Time(period.0.saturating_mul(window));
        let member = &mut chain.members[mi];
        for &q in &member.queues {
            let qu = &mut self.queues[q as usize];
            if qu.late && qu.outstanding >= qu.depth && now.0.saturating_sub(qu.back_at.0) > horizon.0.max(qu.turnaround.0.saturating_mul(4)) {
                qu.late = false;
                member.sched.set_busy(qu.slot, false, now.0);
            }
        }
        // Nothing it sent has come back for as long: it is cut off. A leader stops leading
        // (another takes over once its estimate goes stale), and none reports work that will
        // never complete, until something of it comes back.
        // Before anything of its has come back, the slowest the chain has answered any member
        // stands for its own; before anything has come back at all, nothing is judged (at the
        // start, a slow engine's first answers took longer than a window of periods, and every
        // member but one was cut before its first came back).
        let own = chain.members[mi].slowest;
        let reference = if own > Time::ZERO || chain.members[mi].waiting_since.is_none() { own } else { chain.members.iter().map(|x| x.slowest).max().unwrap_or(Time::ZERO) };
        let member = &mut chain.members[mi];
        let silent = horizon.0.max(member.last_turnaround.0.saturating_mul(4)).max(reference.0.saturating_mul(2));
        if reference > Time::ZERO && member.waiting_since.is_some_and(|since| now.0.saturating_sub(since.0) > silent) {
            member.cut = true;
            member.held = 0;
            chain.overlay.set_active(mi, false);
            self.reshare(c, now);
            return;
        }
        let mem = &mut chain.members[mi];
        // Tokens lost while work waited, and work that came back queued to a queue pair with more
        // waiting: the applications had work the chain did not take.
        let waiting = mem.sched.take_unspent(now.0) + std::mem::take(&mut mem.held);
        let (done, posted, dummy) = (std::mem::take(&mut mem.app_done), std::mem::take(&mut mem.app_posted), std::mem::take(&mut mem.dummy_done));
        if chain.overlay.runs_loop(mi) {
            let (ia, ip, id, iw) = std::mem::take(&mut mem.inbox);
            let step = mem.prober.period(now.0, Counts { app_done: done + ia, dummy_done: dummy + id, app_posted: posted + ip, app_waiting: waiting + iw });
            mem.published = (step.estimate, now);
            let rose = step.estimate > mem.sched.estimate();
            mem.sched.set_estimate(step.estimate, now.0);
            // A budget below one operation is carried to the next period rather than rounded
            // up to a whole one (which broke the cap when the cap allowed less than an
            // operation a period); none is carried once the applications fill the chain.
            let mean = chain.spec.mean_work().max(1);
            mem.dummy_budget = if step.dummy > 0 { step.dummy + mem.dummy_budget.min(mean) } else { 0 };
            if step.dummy > 0 {
                // Spread over the next period, one operation at a time.
                let n = (step.dummy / mean).max(1);
                mem.dummy_gap = Time(period.0 / n);
                if !mem.dummy_armed {
                    mem.dummy_armed = true;
                    self.at(now, Ev::Dummy { c: c as u16, m });
                }
            }
            if rose {
                self.rewake(c, mi, now);
            }
            return;
        }
        let to = chain.overlay.leader_of(mi) as u16;
        let d = mem.delay_to[to as usize];
        self.at(now + d, Ev::Report { c: c as u16, to, app_done: done, app_posted: posted, dummy_done: dummy, waiting });
        self.at(now + d, Ev::ReadAt { c: c as u16, m, at: to });
    }

    fn dummy(&mut self, w: &mut World, c: usize, m: u16, now: Time) {
        let chain = &mut self.chains[c];
        let mem = &mut chain.members[m as usize];
        if !chain.overlay.runs_loop(m as usize) {
            mem.dummy_armed = false;
            mem.dummy_budget = 0;
            return;
        }
        if mem.dummy_budget < chain.spec.mean_work().max(1) {
            // Less than an operation's worth: it waits for the next period's.
            mem.dummy_armed = false;
            return;
        }
        let (work, req, reply) = Self::generate(&chain.spec, &mut mem.rng);
        mem.dummy_budget = mem.dummy_budget.saturating_sub(work.bytes);
        let gap = mem.dummy_gap;
        let op = Op { q: DUMMY, chain: c as u16, member: m, conn: mem.dummy_conn, stage: 0, work, req, reply, born: now, sent: now, hosted: false };
        self.at(now + gap.max(Time(1)), Ev::Dummy { c: c as u16, m });
        self.send(w, op, now);
    }

    fn event(&mut self, w: &mut World, ev: Ev, now: Time) {
        match ev {
            Ev::Start => self.start(w),
            Ev::StageDone { op } => self.stage_done(op, now),
            Ev::Forward { op } => self.forward(w, op, now),
            Ev::Enter { op } => self.enter(w, op, now),
            Ev::Wake { q, gen } => {
                let qu = &mut self.queues[q as usize];
                if qu.wake_armed && qu.wake_gen == gen {
                    qu.wake_armed = false;
                    self.fill(w, q, now);
                }
            }
            Ev::Period { c, m } => self.period(c as usize, m, now),
            Ev::Report { c, to, app_done, app_posted, dummy_done, waiting } => {
                let inbox = &mut self.chains[c as usize].members[to as usize].inbox;
                inbox.0 += app_done;
                inbox.1 += app_posted;
                inbox.2 += dummy_done;
                inbox.3 += waiting;
            }
            Ev::ReadAt { c, m, at } => {
                let chain = &self.chains[c as usize];
                let (est, stamp) = chain.members[at as usize].published;
                let d = chain.members[m as usize].delay_to[at as usize];
                self.at(now + d, Ev::Estimate { c, m, bits: est.to_bits(), stamp: stamp.0 });
            }
            Ev::Estimate { c, m, bits, stamp } => {
                let chain = &mut self.chains[c as usize];
                let mi = m as usize;
                let est = f64::from_bits(bits);
                match chain.overlay.read(mi, stamp, now.0) {
                    ReadOutcome::Fresh => self.set_estimate(c as usize, mi, est, now),
                    ReadOutcome::Propose if !chain.overlay.runs_loop(mi) => {
                        // It leads from now on and runs the loop at once, from the estimate it read.
                        let term = chain.overlay.propose(mi);
                        let mem = &mut chain.members[mi];
                        mem.prober.start(now.0, est);
                        mem.published = (est, now);
                        let delays = mem.delay_to.clone();
                        let to_server = mem.delay_to_server;
                        for (k, d) in delays.into_iter().enumerate() {
                            if k != mi {
                                self.at(now + d, Ev::Vote { c, to: k as u16, candidate: m, term });
                            }
                        }
                        self.at(now + to_server, Ev::Vote { c, to: SERVER, candidate: m, term });
                    }
                    _ => {}
                }
            }
            Ev::Vote { c, to, candidate, term } => {
                let chain = &mut self.chains[c as usize];
                if to == SERVER {
                    chain.server_leader = candidate;
                } else {
                    chain.overlay.vote_request(to as usize, candidate as usize, term);
                }
            }
            Ev::Dummy { c, m } => self.dummy(w, c as usize, m, now),
            Ev::Arrive { q } => self.arrive(w, q, now),
            Ev::EntityOn { e } => self.entity_switch(w, e, true, now),
            Ev::EntityOff { e } => self.entity_switch(w, e, false, now),
            Ev::Sample => {
                let s = self.spec().sample;
                let secs = s.as_secs_f64();
                let row = self.entities.iter_mut().map(|e| std::mem::take(&mut e.interval) as f64 * 8.0 / secs / 1e9).collect();
                self.timeline.push((now, row));
                self.at(now + s, Ev::Sample);
            }
        }
    }

    /// Runs every internal event due by now, then re-arms the world timer at the next.
    fn run_due(&mut self, w: &mut World) {
        let now = w.now;
        while let Some(&Reverse((t, _, ev))) = self.heap.peek() {
            if t > now {
                break;
            }
            self.heap.pop();
            self.event(w, ev, t.max(now));
        }
        if let (Some(timer), Some(&Reverse((t, _, _)))) = (self.timer, self.heap.peek()) {
            w.arm(timer, t);
        }
    }
}

impl Application for Yama {
    fn on_timer(&mut self, w: &mut World, _tag: u32) {
        self.run_due(w);
    }

    fn on_completion(&mut self, w: &mut World, tag: u32, c: Completion) {
        // Only a NIC's own RDMA engine's operations complete through the verbs; elsewhere the
        // WRITEs carrying requests and replies are seen where they land (`on_message`).
        let conn = (tag / 2) as usize;
        let Some(nic_rdma) = self.conns.get(conn).map(|x| x.nic_rdma) else { return };
        let client = tag.is_multiple_of(2);
        if c.status != Status::Success {
            // An operation on a NIC's own RDMA engine is lost (left busy, its queue pair's
            // unspent tokens read as a saturated chain and sank the estimate); elsewhere the
            // WRITEs on the connection are, and the connection fails either way.
            if nic_rdma && client {
                self.op_errors += 1;
                self.lose(c.wr_id as u32);
            }
            self.conn_failed(w, conn as u32, w.now);
        } else if nic_rdma && client {
            self.complete(w, c.wr_id as u32, c.at.max(w.now));
        } else {
            return;
        }
        self.run_due(w);
    }

    fn on_message(&mut self, w: &mut World, tag: u32, placed: Time) {
        let conn = (tag / 2) as usize;
        if self.conns[conn].nic_rdma {
            return;
        }
        if tag % 2 == 1 {
            // At the server: a request.
            if let Some(id) = self.conns[conn].requests.pop_front() {
                self.at(placed.max(w.now), Ev::Enter { op: id });
            }
        } else if let Some(id) = self.conns[conn].replies.pop_front() {
            self.complete(w, id, placed);
        }
        self.run_due(w);
    }

    fn on_end(&mut self, w: &World) {
        self.end = w.end;
    }
}
