//! Flow workloads: a connection per flow carrying one message (WRITE, READ or SEND), from a
//! flow-size CDF with Poisson arrivals per sender (all-to-all, permutation or incast) or from an
//! HPCC/ConWeave flow file. A flow's queue pairs are closed when its requester completes.

use super::{Application, Owner, FLOWS};
use crate::host::cdf::FlowSizeCdf;
use crate::host::flow_file::{parse_flow_file_with_rest, FlowSpec};
use crate::nic::verbs::{Completion, CompletionKind, RecvWr, SendWr, Status, Verb};
use crate::scenario::schema::{FlowPattern, FlowVerb, PortNumbering};
use crate::scenario::{LoadedScenario, ScenarioError};
use crate::sim::rng::{self, det_ln, Rng};
use crate::sim::TimerId;
use crate::units::{Bytes, Time};
use crate::output::stream::{nearest_rank, quantile_of, FlowStream};
use crate::world::World;
use rand::Rng as _;
use std::io::Write as _;

/// One flow of a flow workload, from its start to its completion.
#[derive(Clone, Copy, Debug)]
pub struct FlowRecord {
    pub id: u32,
    /// Which `[[flows]]` entry made it.
    pub workload: u32,
    pub src: u32,
    pub dst: u32,
    pub size: u64,
    pub priority: u8,
    pub udp_sport: u16,
    pub udp_dport: u16,
    pub start: Time,
    /// When the requester's completion became visible (`Time::MAX` if unfinished).
    pub finish: Time,
    /// The flow's completion time alone on an idle network (see [`World::ideal_fct`]).
    pub ideal: Time,
    pub status: Option<Status>,
    pub qps: (u32, u32),
    /// The query it belongs to (query workloads: index into the run's queries, in start order).
    pub query: Option<u32>,
}

impl FlowRecord {
    pub fn fct(&self) -> Option<Time> {
        (self.finish != Time::MAX).then(|| self.finish - self.start)
    }

    /// FCT over the ideal FCT, for a completed flow.
    pub fn slowdown(&self) -> Option<f64> {
        self.fct().map(|t| t.0 as f64 / self.ideal.0.max(1) as f64)
    }
}

/// Poisson flow arrivals of one sender of a CDF workload.
pub struct FlowGen {
    pub workload: u32,
    pub src: u32,
    /// Fixed destination (permutation, incast), or drawn per flow among the other hosts.
    pub dst: Option<u32>,
    pub mean_gap_ps: f64,
    pub cdf: u32,
    pub rng: Rng,
    pub stop: Time,
    pub timer: TimerId,
    pub verb: FlowVerb,
    /// A query generator (`pattern = { query = .. }`): `src` is the receiver, and each arrival
    /// starts this many flows to it (0: one flow from `src`).
    pub fan_in: u32,
}

/// One query of a query workload: its flows are the `count` consecutive flow ids from `first`.
#[derive(Clone, Copy, Debug)]
pub struct Query {
    pub first: u32,
    pub count: u32,
    pub start: Time,
    /// Flows still running, and when the last one so far completed.
    pub left: u32,
    pub last: Time,
}

/// What `summary.json`'s `rdma/queries` reports of a query workload: query completion times
/// (start to the completion of its last flow) over the queries whose flows all completed.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct QuerySummary {
    pub queries: u64,
    pub completed: u64,
    pub qct_mean_us: f64,
    pub qct_p99_us: f64,
}

/// A flow file's flows, started in time order.
pub struct FlowList {
    pub workload: u32,
    pub flows: Vec<FlowSpec>,
    pub next: usize,
    pub timer: TimerId,
    pub verb: FlowVerb,
}

/// Why a flow of `size` bytes cannot be one message here: the RETH DMA length is 32 bits, and a
/// flow reads and writes the hosts' memory from address 0.
fn too_big(size: u64, w: &World) -> Option<String> {
    let memory = w.nic_spec.memory_size.0;
    if size > u32::MAX as u64 {
        Some(format!("a flow of {size} B is larger than one RDMA message can be (4 GiB − 1 B, the RETH DMA length)"))
    } else if size > memory {
        Some(format!("a flow of {size} B is larger than the hosts' memory (nic.memory_size = {} B)", memory))
    } else {
        None
    }
}

/// `t` plus a gap of `gap_ps` picoseconds (rounded), or `None` past the largest time.
fn after(t: Time, gap_ps: f64) -> Option<Time> {
    let gap = gap_ps.round();
    if gap.is_nan() || gap >= u64::MAX as f64 {
        return None;
    }
    t.0.checked_add(gap as u64).map(Time)
}

/// Timer tags of flow lists have this bit set; generators' tags are their index.
const LIST: u32 = 1 << 31;

/// Where flows read and write: every host registers its whole memory once.
const APP_BUFFER: u64 = 0;

/// The flow workloads of a scenario (`[[flows]]`) and the record of every flow they started.
#[derive(Default)]
pub struct Flows {
    pub gens: Vec<FlowGen>,
    pub lists: Vec<FlowList>,
    pub cdfs: Vec<FlowSizeCdf>,
    /// The flows not yet written out, in id order (all of them unless streaming).
    pub records: Vec<FlowRecord>,
    /// How many were written out.
    pub written: u32,
    /// Streaming: where finished flows go while the run goes on, and their totals.
    pub stream: Option<FlowStream>,
    pub written_totals: FlowTotals,
    /// By queue pair, when its packets were lost to a failed link or turned off their path
    /// around one (the world records them): spans of such moments, in time order.
    pub failure_hits: FailureHits,
    /// Totals over the written-out flows that a link failure met (see [`met_failure`]).
    pub written_met_failure: FlowTotals,
    /// `outputs.fct_by_size`'s bounds, and per bucket the FCT (ps) and slowdown of every
    /// written-out completed flow (kept only when bounds are given).
    pub size_bounds: Vec<u64>,
    pub written_by_size: Vec<Vec<(u64, f64)>>,
    /// Every query started (query workloads only), in order of their flows, and the
    /// completion times of those done (ps); scratch for drawing a query's senders.
    pub queries: Vec<Query>,
    pub qcts: Vec<u64>,
    senders: Vec<u32>,
    /// Per workload, how its flows number their UDP ports.
    ports: Vec<PortNumbering>,
    /// ns-3's port counters, per node: the next source port of flows from it and the next
    /// destination port of flows to it.
    ns3_ports: Vec<(u16, u16)>,
    /// HPCC's source port counters, per (source, destination) pair that has had a flow.
    pair_ports: std::collections::HashMap<(u32, u32), u16>,
}

/// Completed flows of one size bucket (`rdma/by_size/<name>`): `name` is the bucket's upper
/// bound as rnicsim prints sizes (`16KB`), or `more`. A bucket no flow completed in has no
/// figures (null in `summary.json`, so a claim over the buckets passes it by rather than read
/// a 0).
#[derive(Clone, Debug, serde::Serialize)]
pub struct SizeBucket {
    pub name: String,
    pub flows: u64,
    pub fct_mean_us: Option<f64>,
    pub fct_p99_us: Option<f64>,
    pub slowdown_mean: Option<f64>,
    pub slowdown_p99: Option<f64>,
}

/// Totals over completed flows: how many, and the sums of their FCTs and slowdowns, exact
/// and so independent of the order flows are added in (the slowdowns in units of 2⁻³²).
#[derive(Clone, Copy, Debug, Default)]
pub struct FlowTotals {
    pub done: u64,
    pub fct_sum_ps: u128,
    slowdown_sum: u128,
}

/// The fixed-point unit of summed slowdowns.
const SLOWDOWN_UNIT: f64 = (1u64 << 32) as f64;

impl FlowTotals {
    fn add(&mut self, r: &FlowRecord) -> Option<f64> {
        let fct = r.fct()?;
        let slowdown = r.slowdown()?;
        self.done += 1;
        self.fct_sum_ps += fct.0 as u128;
        self.slowdown_sum += (slowdown * SLOWDOWN_UNIT).round() as u128;
        Some(slowdown)
    }

    /// Mean FCT in ps (0 with no completed flow).
    pub fn fct_mean_ps(&self) -> f64 {
        if self.done == 0 { 0.0 } else { self.fct_sum_ps as f64 / self.done as f64 }
    }

    /// Mean slowdown (0 with no completed flow).
    pub fn slowdown_mean(&self) -> f64 {
        if self.done == 0 { 0.0 } else { self.slowdown_sum as f64 / SLOWDOWN_UNIT / self.done as f64 }
    }
}

/// What the summary reports of the completed flows.
#[derive(Clone, Copy, Debug, Default)]
pub struct FinishedFlows {
    pub totals: FlowTotals,
    /// Over the completed flows that a link failure met while they ran.
    pub met_failure: FlowTotals,
    pub slowdown_p50: f64,
    pub slowdown_p99: f64,
    pub fct_p99_ps: f64,
}

impl Flows {
    /// Builds every `[[flows]]` entry: a generator per sender of a CDF workload, or the list of
    /// a flow file, each with its first start armed.
    pub fn build(w: &mut World, loaded: &LoadedScenario) -> Result<Flows, ScenarioError> {
        let s = &loaded.scenario;
        let mut flows = Flows { size_bounds: s.outputs.fct_by_size.iter().map(|b| b.0).collect(), ..Default::default() };
        if !flows.size_bounds.is_empty() {
            flows.written_by_size = vec![Vec::new(); flows.size_bounds.len() + 1];
        }
        flows.ports = s.flows.iter().map(|f| f.ports).collect();
        for (wi, f) in s.flows.iter().enumerate() {
            let stop = f.stop.unwrap_or(s.duration).min(s.duration);
            if let Some(path) = &f.file {
                let full = loaded.base_dir.join(path);
                let text = std::fs::read_to_string(&full).map_err(|e| loaded.error_at(&format!("flows[{wi}].file"), format!("cannot read {}: {e}", full.display())))?;
                let (mut list, _) = parse_flow_file_with_rest(&text, f.start_times, f.empty).map_err(|e| ScenarioError::in_file(&full, e))?;
                for fl in &list {
                    for (what, n) in [("source", fl.src), ("destination", fl.dst)] {
                        if w.host_of(n).is_err() {
                            return Err(ScenarioError::at_line(&full, fl.line as usize, format!("flow {what} {n} is not a host of the topology")));
                        }
                    }
                    if let Some(m) = too_big(fl.size, w) {
                        return Err(ScenarioError::at_line(&full, fl.line as usize, m));
                    }
                    if !w.reachable(fl.src, fl.dst) || !w.reachable(fl.dst, fl.src) {
                        return Err(ScenarioError::at_line(&full, fl.line as usize, format!("host {} cannot reach host {} without crossing a host (hosts do not forward)", fl.src, fl.dst)));
                    }
                }
                // Start times past the end of time cannot run: refuse them, naming the line.
                if let Some(fl) = list.iter().find(|fl| fl.start.0.checked_add(f.start.0).is_none()) {
                    return Err(ScenarioError::at_line(&full, fl.line as usize, format!("start time {} plus the workload's start {} is past the largest time this simulator holds", fl.start, f.start)));
                }
                list.retain(|fl| fl.start + f.start < stop);
                for fl in &mut list {
                    fl.start += f.start;
                }
                list.sort_by_key(|fl| fl.start);
                let i = flows.lists.len() as u32;
                let timer = w.add_app_timer(FLOWS, LIST | i);
                if let Some(first) = list.first() {
                    w.arm(timer, first.start);
                }
                flows.lists.push(FlowList { workload: wi as u32, flows: list, next: 0, timer, verb: f.verb });
                continue;
            }
            let path = f.cdf.as_ref().expect("validated: cdf or file");
            let full = loaded.base_dir.join(path);
            let text = std::fs::read_to_string(&full).map_err(|e| loaded.error_at(&format!("flows[{wi}].cdf"), format!("cannot read {}: {e}", full.display())))?;
            let cdf = FlowSizeCdf::parse(&text).map_err(|e| ScenarioError::in_file(&full, e))?;
            let mean = cdf.mean();
            if let Some(m) = too_big(cdf.max_size().round() as u64, w) {
                return Err(loaded.error_at(&format!("flows[{wi}].cdf"), format!("{}: {m}", full.display())));
            }
            if mean.is_nan() || mean < 1.0 {
                return Err(loaded.error_at(&format!("flows[{wi}].cdf"), format!("the flow sizes of {} average {mean} B; a workload needs flows of at least 1 B", full.display())));
            }
            flows.cdfs.push(cdf);
            let ci = (flows.cdfs.len() - 1) as u32;
            let load = f.load.expect("validated: a CDF workload has a load");
            let hosts = w.host_nodes().to_vec();
            let mut fan_in = 0;
            let senders: Vec<(u32, Option<u32>)> = match f.pattern.as_ref().unwrap_or(&FlowPattern::AllToAll) {
                FlowPattern::Query { fan_in: k } => {
                    if *k == 0 || *k as usize >= hosts.len() {
                        return Err(loaded.error_at(&format!("flows[{wi}].pattern.query.fan_in"), format!("expected 1 to {} senders per query (the other hosts), got {k}", hosts.len() - 1)));
                    }
                    fan_in = *k;
                    hosts.iter().map(|&h| (h, None)).collect()
                }
                FlowPattern::AllToAll => hosts.iter().map(|&h| (h, None)).collect(),
                FlowPattern::Permutation => {
                    let perm = rng::derangement(&hosts, &mut rng::stream(s.seed, "flow-permutation", wi as u64));
                    hosts.iter().copied().zip(perm.into_iter().map(Some)).collect()
                }
                FlowPattern::Incast { receiver, senders } => match senders {
                    Some(list) => list.iter().map(|&h| (h, Some(*receiver))).collect(),
                    None => hosts.iter().filter(|&&h| h != *receiver).map(|&h| (h, Some(*receiver))).collect(),
                },
            };
            for (src, dst) in senders {
                let rate = w.host_link_rate(src);
                // Flows per second = load × rate / (8 × mean size); the mean gap is its inverse.
                // A query brings `fan_in` flows to its receiver at once.
                let mean_gap_ps = mean * 8.0 * fan_in.max(1) as f64 / (load * rate.0 as f64) * 1e12;
                let g = flows.gens.len() as u32;
                let timer = w.add_app_timer(FLOWS, g);
                let mut r = rng::stream(s.seed, "flow-arrivals", ((wi as u64) << 32) | src as u64);
                let u: f64 = 1.0 - r.random::<f64>();
                if let Some(first) = after(f.start, mean_gap_ps * -det_ln(u)).filter(|&t| t < stop) {
                    w.arm(timer, first);
                }
                flows.gens.push(FlowGen { workload: wi as u32, src, dst, mean_gap_ps, cdf: ci, rng: r, stop, timer, verb: f.verb, fan_in });
            }
        }
        Ok(flows)
    }

    /// Flows read from flow files.
    pub fn listed(&self) -> usize {
        self.lists.iter().map(|l| l.flows.len()).sum()
    }

    /// A Poisson generator fires: start a flow and draw the next arrival.
    fn generate(&mut self, w: &mut World, g: u32) {
        let now = w.now;
        let gen = &mut self.gens[g as usize];
        if now >= gen.stop {
            return;
        }
        if gen.fan_in > 0 {
            return self.generate_query(w, g);
        }
        let size = self.cdfs[gen.cdf as usize].sample(gen.rng.random::<f64>()).max(1);
        let dst = match gen.dst {
            Some(d) => d,
            None => {
                let hosts = w.host_nodes();
                let n = hosts.len() as u32;
                let mut i = gen.rng.random_range(0..n - 1);
                let src_idx = hosts.iter().position(|&x| x == gen.src).expect("sender is a host") as u32;
                if i >= src_idx {
                    i += 1;
                }
                hosts[i as usize]
            }
        };
        let (src, workload, verb) = (gen.src, gen.workload, gen.verb);
        let u: f64 = 1.0 - gen.rng.random::<f64>();
        if let Some(next) = after(now, (gen.mean_gap_ps * -det_ln(u)).max(1.0)).filter(|&t| t < gen.stop) {
            w.arm(gen.timer, next);
        }
        let prio = w.nic_spec.priority;
        self.start_flow(w, workload, src, dst, size, prio, None, verb, None);
    }

    /// A query generator fires: `fan_in` distinct random other hosts each start a flow (its size
    /// drawn from the CDF) to the generator's host, and the next query is drawn.
    fn generate_query(&mut self, w: &mut World, g: u32) {
        let now = w.now;
        let gen = &mut self.gens[g as usize];
        let (receiver, workload, verb, k) = (gen.src, gen.workload, gen.verb, gen.fan_in as usize);
        self.senders.clear();
        self.senders.extend(w.host_nodes().iter().copied().filter(|&h| h != receiver));
        rng::choose_front(&mut self.senders, k, &mut gen.rng);
        let sizes: Vec<u64> = (0..k).map(|_| self.cdfs[gen.cdf as usize].sample(gen.rng.random::<f64>()).max(1)).collect();
        let u: f64 = 1.0 - gen.rng.random::<f64>();
        if let Some(next) = after(now, (gen.mean_gap_ps * -det_ln(u)).max(1.0)).filter(|&t| t < gen.stop) {
            w.arm(gen.timer, next);
        }
        let prio = w.nic_spec.priority;
        self.queries.push(Query { first: self.started() as u32, count: k as u32, start: now, left: k as u32, last: now });
        let query = Some(self.queries.len() as u32 - 1);
        for (i, size) in sizes.into_iter().enumerate() {
            let src = self.senders[i];
            self.start_flow(w, workload, src, receiver, size, prio, None, verb, query);
        }
    }

    /// Query completion times over the queries all of whose flows completed (`None` without
    /// query workloads).
    pub fn query_summary(&self) -> Option<QuerySummary> {
        if !self.gens.iter().any(|g| g.fan_in > 0) {
            return None;
        }
        let n = self.qcts.len();
        let mut sorted = self.qcts.clone();
        sorted.sort_unstable();
        let p99 = if n == 0 { 0 } else { sorted[nearest_rank(n, 0.99)] };
        Some(QuerySummary {
            queries: self.queries.len() as u64,
            completed: n as u64,
            qct_mean_us: if n == 0 { 0.0 } else { sorted.iter().map(|&x| x as f64).sum::<f64>() / n as f64 / 1e6 },
            qct_p99_us: p99 as f64 / 1e6,
        })
    }

    /// A flow of a query completed at `at`: the query completes with its last flow.
    fn query_flow_done(&mut self, flow: u32, at: Time) {
        let i = self.queries.partition_point(|q| q.first <= flow);
        let Some(q) = i.checked_sub(1).map(|i| &mut self.queries[i]) else { return };
        if flow >= q.first + q.count {
            return;
        }
        q.left -= 1;
        q.last = q.last.max(at);
        if q.left == 0 {
            self.qcts.push((q.last - q.start).0);
        }
    }

    /// A flow list's timer: start every flow due now.
    fn start_listed(&mut self, w: &mut World, l: u32) {
        let now = w.now;
        loop {
            let list = &mut self.lists[l as usize];
            let Some(f) = list.flows.get(list.next).copied() else { return };
            if f.start > now {
                w.arm(list.timer, f.start);
                return;
            }
            list.next += 1;
            let (workload, verb) = (list.workload, list.verb);
            self.start_flow(w, workload, f.src, f.dst, f.size, f.priority, f.dport, verb, None);
        }
    }

    /// Opens a connection from `src` to `dst` and posts one message of `size` bytes.
    #[allow(clippy::too_many_arguments)]
    fn start_flow(&mut self, w: &mut World, workload: u32, src: u32, dst: u32, size: u64, priority: u8, dport: Option<u16>, verb: FlowVerb, query: Option<u32>) {
        let id = self.started() as u32;
        let owner = Owner { app: FLOWS, tag: id };
        let (qa, qb) = w.connect_app(src, dst, owner, owner).expect("flows run between hosts");
        w.set_priority(qa, priority).expect("the flow's queue pair is open");
        w.set_priority(qb, priority).expect("the flow's queue pair is open");
        // The destination port of the flow's packets, as its FCT line reports it.
        let udp_dport = match self.ports[workload as usize] {
            numbering @ (PortNumbering::Ns3 | PortNumbering::Hpcc) => {
                // ns-3's numbering (`ScheduleFlowInputs`): per source (ConWeave's fork) or per
                // (source, destination) pair (HPCC's) from 10000, per destination from 100
                // unless the file names the port; replies swap them.
                if self.ns3_ports.is_empty() {
                    self.ns3_ports = vec![(10_000, 100); w.roles.len()];
                }
                let sport = if numbering == PortNumbering::Hpcc {
                    let next = self.pair_ports.entry((src, dst)).or_insert(10_000);
                    std::mem::replace(next, next.wrapping_add(1))
                } else {
                    let sport = self.ns3_ports[src as usize].0;
                    self.ns3_ports[src as usize].0 = sport.wrapping_add(1);
                    sport
                };
                let dport = dport.unwrap_or_else(|| {
                    let d = self.ns3_ports[dst as usize].1;
                    self.ns3_ports[dst as usize].1 = d.wrapping_add(1);
                    d
                });
                w.set_udp_ports(qa, sport, dport).expect("the flow's queue pair is open");
                w.set_udp_ports(qb, dport, sport).expect("the flow's queue pair is open");
                dport
            }
            PortNumbering::Random => {
                if let Some(d) = dport {
                    // The flow file's destination port steers ECMP like the UDP source port does.
                    let sport = w.udp_sport(qa) ^ d;
                    w.set_udp_sport(qa, sport).expect("the flow's queue pair is open");
                }
                dport.unwrap_or(crate::wire::roce::ROCE_UDP_PORT)
            }
        };
        let ideal = w.ideal_fct(src, dst, size, verb);
        self.records.push(FlowRecord {
            id,
            workload,
            src,
            dst,
            size,
            priority,
            udp_sport: w.udp_sport(qa),
            udp_dport,
            start: w.now,
            finish: Time::MAX,
            ideal,
            status: None,
            qps: (qa, qb),
            query,
        });
        let (lkey, _) = w.app_keys(src);
        let (dlkey, rkey) = w.app_keys(dst);
        let wr = match verb {
            FlowVerb::Write => SendWr { id: id as u64, verb: Verb::Write, local_addr: APP_BUFFER, len: size, lkey, remote_addr: APP_BUFFER, rkey },
            FlowVerb::Read => SendWr { id: id as u64, verb: Verb::Read, local_addr: APP_BUFFER, len: size, lkey, remote_addr: APP_BUFFER, rkey },
            FlowVerb::Send => {
                let _ = w.post_recv(qb, RecvWr { id: id as u64, addr: APP_BUFFER, len: size, lkey: dlkey });
                SendWr { id: id as u64, verb: Verb::Send, local_addr: APP_BUFFER, len: size, lkey, remote_addr: 0, rkey: 0 }
            }
        };
        w.post_send(qa, wr).expect("a new queue pair accepts work");
    }
}

impl Application for Flows {
    fn on_timer(&mut self, w: &mut World, tag: u32) {
        if tag & LIST != 0 {
            self.start_listed(w, tag & !LIST)
        } else {
            self.generate(w, tag)
        }
    }

    /// The requester's completion ends the flow and closes both queue pairs.
    fn on_completion(&mut self, w: &mut World, f: u32, c: Completion) {
        if c.kind == CompletionKind::Recv {
            return;
        }
        let Ok(i) = self.records.binary_search_by_key(&f, |r| r.id) else { return };
        let rec = &mut self.records[i];
        if rec.finish != Time::MAX || rec.status.is_some() {
            return;
        }
        if c.at > w.end {
            // Its completion becomes visible after the run: it did not finish within it.
            return;
        }
        rec.status = Some(c.status);
        if c.status == Status::Success {
            rec.finish = c.at;
            w.stats.flows_completed += 1;
        } else {
            w.stats.flows_failed += 1;
        }
        let (qa, qb) = rec.qps;
        let rec = *rec;
        if c.status == Status::Success && !self.queries.is_empty() {
            self.query_flow_done(rec.id, c.at);
        }
        w.destroy_qp(qa);
        w.destroy_qp(qb);
        if let Some(st) = &mut self.stream {
            if rec.fct().is_some() && st.fct.is_some() {
                st.pending.push(rec);
            }
            st.write_completed(w.now);
            if self.records.len() >= st.spill_rows {
                self.spill();
            }
        }
    }
}

impl Flows {
    /// Whether there are flows and all are over: every flow list started, every generator past
    /// its stop, and every flow started has finished.
    pub fn all_done(&self, now: Time) -> bool {
        (!self.lists.is_empty() || !self.gens.is_empty())
            && self.lists.iter().all(|l| l.next == l.flows.len())
            && self.gens.iter().all(|g| g.stop <= now)
            && self.records.iter().all(|r| r.status.is_some())
    }

    /// Flows started so far.
    pub fn started(&self) -> u64 {
        self.written as u64 + self.records.len() as u64
    }

    /// Streaming: writes out the finished flows (in id order among themselves) and keeps the
    /// rest, so memory holds about `spill_rows` flows plus those in progress, however long
    /// some of them take.
    fn spill(&mut self) {
        let Some(st) = &mut self.stream else { return };
        let n = self.records.iter().filter(|r| r.status.is_some()).count();
        if n < st.spill_rows.div_ceil(2) || st.error.is_some() {
            return;
        }
        let finished = self.records.iter().filter(|r| r.status.is_some());
        let mut r = st.table.write(&crate::output::tables::flows_batch(finished.clone()));
        for rec in finished {
            if met_failure(&self.failure_hits, rec) {
                self.written_met_failure.add(rec);
            }
            if let (Some(i), Some(fct), Some(sd)) = (size_bucket(&self.size_bounds, rec.size), rec.fct(), rec.slowdown()) {
                self.written_by_size[i].push((fct.0, sd));
            }
            if let Some(s) = self.written_totals.add(rec) {
                r = r.and_then(|_| st.slowdowns.push(s)).and_then(|_| st.fcts.push(rec.fct().map_or(0.0, |t| t.0 as f64)));
            }
        }
        if let Err(e) = r {
            st.error.get_or_insert(e);
        }
        self.records.retain(|r| r.status.is_none());
        self.written += n as u32;
    }

    /// Streaming: makes everything written so far readable (and reports a failed write).
    pub fn flush_stream(&mut self) -> std::io::Result<()> {
        let Some(st) = &mut self.stream else { return Ok(()) };
        if let Some(e) = st.error.take() {
            return Err(e);
        }
        st.slowdowns.flush()?;
        st.fcts.flush()
    }

    /// Streaming set up only after the run: every completed flow in memory still owes its
    /// `fct.txt` line.
    pub fn queue_completed_for_fct(&mut self) {
        if let Some(st) = self.stream.as_mut().filter(|st| st.fct.is_some()) {
            st.pending.extend(self.records.iter().filter(|r| r.fct().is_some()).copied());
        }
    }

    /// Streaming: writes the flows still in memory and every completion left, and closes the
    /// files (the records stay, for whoever reads the world afterwards).
    pub fn finish_stream(&mut self) -> std::io::Result<()> {
        let Some(mut st) = self.stream.take() else { return Ok(()) };
        st.write_completed(Time::MAX);
        if let Some(e) = st.error.take() {
            return Err(e);
        }
        st.table.finish(&crate::output::tables::flows_batch(self.records.iter()))?;
        if let Some(mut f) = st.fct.take() {
            f.flush()?;
        }
        st.slowdowns.remove();
        st.fcts.remove();
        Ok(())
    }

    /// Per listed workload (`[[flows]]` with a file) whose started flows did not all finish by
    /// the end of the run (`end`), a warning: how many, and the first of them. Each such flow
    /// is absent from the FCT file and has no FCT in `flows.parquet`; a workload drawn from a
    /// CDF is open-loop, and flows in flight at its end are expected, so it is not told.
    /// Each is `(key, message)`, the key the workload's file (`flows[i].file`).
    pub fn unfinished_listed(&self, scenario: &crate::scenario::Scenario, end: Time) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for list in &self.lists {
            let w = list.workload;
            let mut left = self.records.iter().filter(|r| r.workload == w && r.status.is_none());
            let Some(first) = left.next() else { continue };
            let n = 1 + left.count();
            let started = list.next;
            let file = scenario.flows[w as usize].file.as_ref().map_or(String::new(), |f| format!(" of {}", f.display()));
            out.push((
                format!("flows[{w}].file"),
                format!(
                    "{n} of the {started} flows{file} started did not finish by the end of the run at {end}, so they have no line in the FCT file and no fct in flows.parquet; the first is flow {} ({} → {}, {} B, started at {})",
                    first.id, first.src, first.dst, first.size, first.start
                ),
            ));
        }
        out
    }

    /// Totals and slowdown percentiles (nearest rank) over every completed flow, written out
    /// or not.
    pub fn finished(&self) -> std::io::Result<FinishedFlows> {
        let (mut totals, mut met) = (self.written_totals, self.written_met_failure);
        for r in &self.records {
            totals.add(r);
            if met_failure(&self.failure_hits, r) {
                met.add(r);
            }
        }
        let spilled = self.stream.as_ref().map(|s| (&s.slowdowns, &s.fcts));
        let [p50, p99] = crate::output::stream::quantiles(totals.done, [0.5, 0.99], |f| {
            if let Some((s, _)) = spilled {
                s.for_each(&mut *f)?;
            }
            self.records.iter().filter_map(FlowRecord::slowdown).for_each(f);
            Ok(())
        })?;
        let [fct_p99] = crate::output::stream::quantiles(totals.done, [0.99], |f| {
            if let Some((_, t)) = spilled {
                t.for_each(&mut *f)?;
            }
            self.records.iter().filter_map(FlowRecord::fct).for_each(|t| f(t.0 as f64));
            Ok(())
        })?;
        Ok(FinishedFlows { totals, met_failure: met, slowdown_p50: p50, slowdown_p99: p99, fct_p99_ps: fct_p99 })
    }
}

/// The bucket of a flow of `size` bytes under upper bounds `bounds` (the last is `more`).
fn size_bucket(bounds: &[u64], size: u64) -> Option<usize> {
    (!bounds.is_empty()).then(|| bounds.partition_point(|&b| b < size))
}

impl Flows {
    /// Per size bucket (`outputs.fct_by_size`), the completed flows' FCT and slowdown: means and
    /// nearest-rank 99th percentiles. Empty when no bounds are set.
    pub fn by_size(&self) -> Vec<SizeBucket> {
        if self.size_bounds.is_empty() {
            return Vec::new();
        }
        let mut all = self.written_by_size.clone();
        for r in &self.records {
            if let (Some(i), Some(fct), Some(sd)) = (size_bucket(&self.size_bounds, r.size), r.fct(), r.slowdown()) {
                all[i].push((fct.0, sd));
            }
        }
        all.into_iter()
            .enumerate()
            .map(|(i, v)| {
                let n = v.len() as f64;
                let some = |x: f64| (!v.is_empty()).then_some(x);
                SizeBucket {
                    name: self.size_bounds.get(i).map_or_else(|| "more".into(), |&b| Bytes(b).to_string()),
                    flows: v.len() as u64,
                    fct_mean_us: some(v.iter().map(|x| x.0 as f64).sum::<f64>() / n / 1e6),
                    fct_p99_us: some(quantile_of(&mut v.iter().map(|x| x.0 as f64).collect::<Vec<_>>(), 0.99) / 1e6),
                    slowdown_mean: some(v.iter().map(|x| x.1).sum::<f64>() / n),
                    slowdown_p99: some(quantile_of(&mut v.iter().map(|x| x.1).collect::<Vec<_>>(), 0.99)),
                }
            })
            .collect()
    }
}

/// By queue pair: the spans in which a failed link cost it packets (see [`met_failure`]).
pub type FailureHits = std::collections::BTreeMap<u32, Vec<(Time, Time)>>;

/// Failure hits of one queue pair closer than this are one span (a flow that keeps sending
/// into a dead link until routes move loses a packet each serialization time).
const HIT_SPAN_GAP: Time = Time::from_us(1);

/// Records that a packet of queue pair `qp` (its destination's: a flow's data and its ACKs
/// name its two ends) was lost to a failed link at `at`, or left its path around one.
pub fn record_failure_hit(hits: &mut FailureHits, qp: u32, at: Time) {
    let spans = hits.entry(qp).or_default();
    match spans.last_mut() {
        Some(last) if at <= last.1 + HIT_SPAN_GAP => last.1 = last.1.max(at),
        _ => spans.push((at, at)),
    }
}

/// Whether a failure met flow `r` while it ran (the Eunomia paper's flows "that face at least
/// one failure event", §2.3): a failed link lost one of its packets (data, ACK, NAK or READ
/// response: queued on or crossing the link when it failed, or sent into it before routes
/// moved), or turned one off its carried path, at or after its start and before it finished.
/// A queue pair number names one connection at a time (a closed one's waits two milliseconds
/// before reuse), so the spans of an earlier connection on the same number fall outside.
fn met_failure(hits: &FailureHits, r: &FlowRecord) -> bool {
    let hit = |qp: u32| hits.get(&qp).is_some_and(|spans| spans.iter().any(|&(a, b)| a < r.finish && b >= r.start));
    hit(r.qps.0) || hit(r.qps.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(start_us: u64, finish_us: Option<u64>) -> FlowRecord {
        FlowRecord { id: 0, workload: 0, src: 0, dst: 1, size: 1000, priority: 0, udp_sport: 0, udp_dport: 0, start: Time::from_us(start_us), finish: finish_us.map_or(Time::MAX, Time::from_us), ideal: Time::from_us(1), status: None, qps: (0, 0), query: None }
    }

    #[test]
    fn completed_flows_are_reported_by_size_bucket() {
        let mut f = Flows { size_bounds: vec![1000, 10_000], written_by_size: vec![Vec::new(); 3], ..Default::default() };
        // Sizes 1000 (the bound itself: first bucket), 5000 and 10 000 (second), 50 000 (more),
        // and an unfinished 500-byte flow that counts nowhere. Ideal FCT 1 µs each.
        for (size, fct_us) in [(1000, 2), (5000, 3), (10_000, 5), (50_000, 20)] {
            f.records.push(FlowRecord { size, ..flow(0, Some(fct_us)) });
        }
        f.records.push(FlowRecord { size: 500, ..flow(0, None) });
        let b = f.by_size();
        let names: Vec<&str> = b.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(names, ["1KB", "10KB", "more"]);
        assert_eq!(b.iter().map(|x| x.flows).collect::<Vec<_>>(), [1, 2, 1]);
        assert_eq!((b[1].fct_mean_us, b[1].fct_p99_us, b[1].slowdown_mean), (Some(4.0), Some(5.0), Some(4.0)));
        assert_eq!((b[2].fct_mean_us, b[2].slowdown_p99), (Some(20.0), Some(20.0)));
        // Written-out flows count as well.
        f.written_by_size[0].push((4_000_000, 4.0));
        assert_eq!(f.by_size().first().map(|x| (x.flows, x.fct_mean_us)), Some((2, Some(3.0))));
        // A bucket no flow completed in has no figures, not zeros.
        let mut g = Flows { size_bounds: vec![1000, 10_000], written_by_size: vec![Vec::new(); 3], ..Default::default() };
        g.records.push(FlowRecord { size: 5000, ..flow(0, Some(3)) });
        g.records.push(FlowRecord { size: 500, ..flow(0, None) });
        let b = g.by_size();
        assert_eq!((b[0].flows, b[0].fct_mean_us, b[0].fct_p99_us, b[0].slowdown_mean, b[0].slowdown_p99), (0, None, None, None, None));
        assert_eq!(b[1].slowdown_mean, Some(3.0));
        // No bounds, no buckets.
        assert!(Flows::default().by_size().is_empty());
    }

    #[test]
    fn the_fct_p99_is_the_nearest_rank_over_completed_flows() {
        // FCTs 1..=200 µs and two unfinished flows: the 99th percentile by nearest rank is the
        // 198th of 200 (ceil(0.99 × 200)), 198 µs.
        let mut f = Flows::default();
        for fct in (1..=200u64).rev() {
            f.records.push(flow(0, Some(fct)));
        }
        f.records.push(flow(5, None));
        f.records.push(flow(7, None));
        let done = f.finished().unwrap();
        assert_eq!((done.totals.done, done.fct_p99_ps), (200, 198e6));
    }

    #[test]
    fn a_failure_meets_the_flows_whose_packets_it_cost_while_they_ran() {
        // Queue pair 7 lost packets at 100 µs and from 300 to 300.5 µs (one span: hits under a
        // microsecond apart), queue pair 9 at 200 µs. A flow is met through either of its ends.
        let mut hits = FailureHits::new();
        for (qp, ns) in [(7, 100_000), (9, 200_000), (7, 300_000), (7, 300_500)] {
            record_failure_hit(&mut hits, qp, Time::from_ns(ns));
        }
        assert_eq!(hits[&7], [(Time::from_us(100), Time::from_us(100)), (Time::from_us(300), Time::from_ns(300_500))]);
        let on = |qps: (u32, u32), start, finish| FlowRecord { qps, ..flow(start, finish) };
        // Running across a hit of one of its queue pairs: met. Starting exactly at one: met;
        // finishing exactly at one: not (it was done). A hit between two of its own is no hit.
        for (start, finish, met) in [(50, 150, true), (250, 350, true), (100, 120, true), (50, 100, false), (150, 250, false), (301, 400, false), (0, 1000, true)] {
            assert_eq!(met_failure(&hits, &on((7, 8), start, Some(finish))), met, "{start}..{finish}");
            assert_eq!(met_failure(&hits, &on((8, 7), start, Some(finish))), met, "responder's end, {start}..{finish}");
        }
        // Another queue pair's hit is not this flow's failure, though it ran across it.
        assert!(!met_failure(&hits, &on((1, 2), 0, Some(1000))));
        assert!(met_failure(&hits, &on((9, 2), 150, Some(250))));
        // An unfinished flow that started before a hit was met by it; none without hits.
        assert!(met_failure(&hits, &on((7, 8), 250, None)));
        assert!(!met_failure(&FailureHits::new(), &on((7, 8), 0, Some(10))));
    }
}
