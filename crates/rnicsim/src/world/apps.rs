//! Host applications driving the NIC: flow workloads (a connection per flow carrying one
//! message, from a flow-size CDF with Poisson arrivals or from a flow file) and perftest-like
//! bandwidth and latency benchmarks. They post work requests and react to completions; a
//! reaction happens at the completion's visibility time, so it costs no extra event.

use super::{Wake, World};
use crate::host::cdf::FlowSizeCdf;
use crate::host::flow_file::FlowSpec;
use crate::host::det_ln;
use crate::nic::pcie::DESCRIPTOR_BYTES;
use crate::nic::qp::{packets_for, Owner};
use crate::nic::verbs::{Completion, CompletionKind, RecvWr, SendWr, Status, Verb};
use crate::scenario::schema::{FlowVerb, PerftestKind, PerftestSpec};
use crate::sim::rng::Rng;
use crate::sim::TimerId;
use crate::units::Time;
use crate::wire::roce::Opcode;
use rand::Rng as _;

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
}

impl FlowRecord {
    pub fn fct(&self) -> Option<Time> {
        (self.finish != Time::MAX).then(|| self.finish - self.start)
    }
}

/// Poisson flow arrivals of one sender of a CDF workload.
pub struct FlowGen {
    pub workload: u32,
    pub src: u32,
    /// Fixed destination (permutation, incast), or drawn per flow among `others`.
    pub dst: Option<u32>,
    pub mean_gap_ps: f64,
    pub cdf: u32,
    pub rng: Rng,
    pub stop: Time,
    pub timer: TimerId,
    pub verb: FlowVerb,
}

/// A flow file's flows, started in time order.
pub struct FlowList {
    pub workload: u32,
    pub flows: Vec<FlowSpec>,
    pub next: usize,
    pub timer: TimerId,
    pub verb: FlowVerb,
}

/// A running perftest.
pub struct Perftest {
    pub spec: PerftestSpec,
    /// (client, server) queue pairs.
    pub qps: Vec<(u32, u32)>,
    pub timer: TimerId,
    /// Payload bytes completed per queue pair since the measurement began.
    pub bytes: Vec<u64>,
    /// Wire bytes and packets the data-sending queue pairs transmitted, at the start of the
    /// measurement and at the end of the run (port-counter style, as mlnx_perf reads).
    pub tx_start: Vec<[u64; 3]>,
    pub tx_end: Vec<[u64; 3]>,
    pub measure_from: Time,
    /// Latency test: when the current ping was posted, and the half round trips measured.
    pub ping_at: Time,
    pub latencies: Vec<Time>,
    pub errors: u64,
}

impl Perftest {
    /// Aggregate payload sent in Gbps over the measurement window ending at `end` (from the
    /// queue pairs' counters, so large messages do not quantize it).
    pub fn gbps(&self, end: Time) -> f64 {
        let s = self.window_secs(end);
        if s <= 0.0 || self.tx_end.len() != self.tx_start.len() {
            return 0.0;
        }
        self.tx_delta(2) as f64 * 8.0 / s / 1e9
    }

    /// Aggregate payload of completed messages in Gbps (perftest's own measure).
    pub fn completed_gbps(&self, end: Time) -> f64 {
        let s = self.window_secs(end);
        if s <= 0.0 {
            return 0.0;
        }
        self.bytes.iter().sum::<u64>() as f64 * 8.0 / s / 1e9
    }

    fn window_secs(&self, end: Time) -> f64 {
        end.saturating_sub(self.measure_from).as_secs_f64()
    }

    fn tx_delta(&self, k: usize) -> u64 {
        self.tx_end.iter().zip(&self.tx_start).map(|(e, s)| e[k] - s[k]).sum()
    }

    /// Aggregate rate on the wire (headers included, data direction) in Gbps.
    pub fn wire_gbps(&self, end: Time) -> f64 {
        let s = self.window_secs(end);
        if s <= 0.0 || self.tx_end.len() != self.tx_start.len() {
            return 0.0;
        }
        self.tx_delta(0) as f64 * 8.0 / s / 1e9
    }

    /// Aggregate data-direction packets per second, in millions.
    pub fn mpps(&self, end: Time) -> f64 {
        let s = self.window_secs(end);
        if s <= 0.0 || self.tx_end.len() != self.tx_start.len() {
            return 0.0;
        }
        self.tx_delta(1) as f64 / s / 1e6
    }

    pub fn qp_gbps(&self, i: usize, end: Time) -> f64 {
        let secs = (end.saturating_sub(self.measure_from)).as_secs_f64();
        if secs <= 0.0 {
            return 0.0;
        }
        self.bytes[i] as f64 * 8.0 / secs / 1e9
    }
}

/// Where flows read and write: every host registers its whole memory once.
const APP_BUFFER: u64 = 0;

impl World {
    /// The application memory region of host `node` (registered at build).
    fn app_keys(&self, node: u32) -> (u32, u32) {
        self.app_mr[self.host_index(node) as usize]
    }

    /// A Poisson generator fires: start a flow and draw the next arrival.
    pub(super) fn flow_gen_fire(&mut self, g: u32) {
        let now = self.now;
        let gen = &mut self.flow_gens[g as usize];
        if now >= gen.stop {
            return;
        }
        let cdf = &self.cdfs[gen.cdf as usize];
        let size = cdf.sample(gen.rng.random::<f64>()).max(1);
        let dst = match gen.dst {
            Some(d) => d,
            None => {
                let n = self.host_nodes.len() as u32;
                let mut i = gen.rng.random_range(0..n - 1);
                let src_idx = self.host_nodes.iter().position(|&x| x == gen.src).expect("sender is a host") as u32;
                if i >= src_idx {
                    i += 1;
                }
                self.host_nodes[i as usize]
            }
        };
        let (src, workload, verb) = (gen.src, gen.workload, gen.verb);
        let u: f64 = 1.0 - gen.rng.random::<f64>();
        let next = now + Time((gen.mean_gap_ps * -det_ln(u)).round().max(1.0) as u64);
        if next < gen.stop {
            self.timers.arm(gen.timer, next);
        }
        let prio = self.nic_spec.priority;
        self.start_flow(workload, src, dst, size, prio, None, verb);
    }

    /// A flow list's timer: start every flow due now.
    pub(super) fn flow_list_fire(&mut self, l: u32) {
        let now = self.now;
        loop {
            let list = &mut self.flow_lists[l as usize];
            let Some(f) = list.flows.get(list.next).copied() else { return };
            if f.start > now {
                self.timers.arm(list.timer, f.start);
                return;
            }
            list.next += 1;
            let (workload, verb) = (list.workload, list.verb);
            self.start_flow(workload, f.src, f.dst, f.size, f.priority, f.dport, verb);
        }
    }

    /// Opens a connection from `src` to `dst` and posts one message of `size` bytes.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start_flow(&mut self, workload: u32, src: u32, dst: u32, size: u64, priority: u8, dport: Option<u16>, verb: FlowVerb) {
        let id = self.flow_records.len() as u32;
        let (qa, qb) = self.connect_owned(src, dst, Owner::Flow(id), Owner::Host);
        self.qps.get_mut(qb).owner = Owner::Flow(id);
        self.qps.get_mut(qa).priority = priority;
        self.qps.get_mut(qb).priority = priority;
        if let Some(d) = dport {
            // The flow file's destination port steers ECMP like the UDP source port does.
            let sport = self.qps.get(qa).udp_sport ^ d;
            self.set_udp_sport(qa, sport).expect("the flow's queue pair is open");
        }
        let ideal = self.ideal_fct(src, dst, size);
        self.flow_records.push(FlowRecord {
            id,
            workload,
            src,
            dst,
            size,
            priority,
            udp_sport: self.qps.get(qa).udp_sport,
            udp_dport: dport.unwrap_or(crate::wire::roce::ROCE_UDP_PORT),
            start: self.now,
            finish: Time::MAX,
            ideal,
            status: None,
            qps: (qa, qb),
        });
        let (lkey, _) = self.app_keys(src);
        let (dlkey, rkey) = self.app_keys(dst);
        let wr = match verb {
            FlowVerb::Write => SendWr { id: id as u64, verb: Verb::Write, local_addr: APP_BUFFER, len: size, lkey, remote_addr: APP_BUFFER, rkey },
            FlowVerb::Read => SendWr { id: id as u64, verb: Verb::Read, local_addr: APP_BUFFER, len: size, lkey, remote_addr: APP_BUFFER, rkey },
            FlowVerb::Send => {
                let _ = self.post_recv(qb, RecvWr { id: id as u64, addr: APP_BUFFER, len: size, lkey: dlkey });
                SendWr { id: id as u64, verb: Verb::Send, local_addr: APP_BUFFER, len: size, lkey, remote_addr: 0, rkey: 0 }
            }
        };
        self.post_send(qa, wr).expect("a new queue pair accepts work");
    }

    /// A flow's completion time alone on an idle network: the NIC's fixed costs (doorbell, WQE
    /// fetch, first payload read, CQE write), one packet and its ACK across the path, and the
    /// rest of the message's wire bytes at the sender's link rate (HPCC's "standalone FCT" plus
    /// the PCIe terms this NIC model has).
    pub fn ideal_fct(&mut self, src: u32, dst: u32, size: u64) -> Time {
        let mtu = self.nic_spec.mtu as u64;
        let n = packets_for(size, self.nic_spec.mtu) as u64;
        let hdr = Opcode::WriteMiddle.header_bytes() as u64;
        let wire = size + n * hdr + (Opcode::WriteFirst.header_bytes() as u64 - hdr);
        let first = size.min(mtu) + Opcode::WriteFirst.header_bytes() as u64;
        let rate = self.ports[self.hosts[self.host_index(src) as usize].port as usize].rate;
        let l = self.nic_spec.pcie.latency;
        let bw = self.nic_spec.pcie.bandwidth;
        let payload_read = if size <= self.nic_spec.inline_bytes as u64 { Time::ZERO } else { l + l };
        let fixed = l + l + l + bw.tx_time(DESCRIPTOR_BYTES) + payload_read + bw.tx_time(DESCRIPTOR_BYTES) + l;
        let path = self.path_time(src, dst, first) + self.path_time(dst, src, Opcode::Acknowledge.header_bytes() as u64);
        fixed + path + rate.tx_time(wire - first)
    }

    /// A perftest's timer: it starts, or (the second time) its measurement window opens.
    pub(super) fn perftest_timer(&mut self, t: u32) {
        if self.perftests[t as usize].qps.is_empty() {
            self.perftest_start(t);
        } else {
            self.perftests[t as usize].tx_start = self.perftest_tx(t);
        }
    }

    /// Wire bytes, packets and payload bytes sent so far by each data-sending queue pair of
    /// perftest `t`.
    pub(crate) fn perftest_tx(&self, t: u32) -> Vec<[u64; 3]> {
        let p = &self.perftests[t as usize];
        let read = p.spec.test == PerftestKind::ReadBw;
        p.qps.iter().map(|&(c, s)| if read { s } else { c }).map(|q| [self.qps.get(q).tx_bytes, self.qps.get(q).tx_packets, self.qps.get(q).bytes_sent]).collect()
    }

    /// A perftest starts: connect its queue pairs and fill their queues.
    fn perftest_start(&mut self, t: u32) {
        let spec = self.perftests[t as usize].spec.clone();
        let n = if spec.test == PerftestKind::WriteLat { 1 } else { spec.qps };
        for i in 0..n {
            let (c, s) = self.connect_owned(
                spec.client,
                spec.server,
                Owner::Perftest { test: t, qp: i, server: false },
                Owner::Perftest { test: t, qp: i, server: true },
            );
            let p = &mut self.perftests[t as usize];
            p.qps.push((c, s));
            p.bytes.push(0);
            if let Some(r) = spec.rate_limit {
                self.set_rate_limit(c, r.0).expect("the perftest's queue pair is open");
            }
        }
        self.perftests[t as usize].measure_from = self.now + spec.warmup;
        let now = self.now;
        let timer = self.perftests[t as usize].timer;
        self.timers.arm(timer, now + spec.warmup);
        match spec.test {
            PerftestKind::WriteLat => {
                self.perftests[t as usize].ping_at = now;
                let (c, _) = self.perftests[t as usize].qps[0];
                self.perftest_post(t, c, false, now);
            }
            _ => {
                for i in 0..n as usize {
                    let (c, s) = self.perftests[t as usize].qps[i];
                    if spec.test == PerftestKind::SendBw {
                        for _ in 0..spec.depth {
                            self.perftest_post_recv(t, s);
                        }
                    }
                    for _ in 0..spec.depth {
                        self.perftest_post(t, c, false, now);
                    }
                }
            }
        }
    }

    fn perftest_post_recv(&mut self, t: u32, s: u32) {
        let len = self.perftests[t as usize].spec.message.0;
        let node = self.qps.get(s).node;
        let (lkey, _) = self.app_keys(node);
        let _ = self.post_recv(s, RecvWr { id: 0, addr: APP_BUFFER, len, lkey });
    }

    /// Posts one message of perftest `t` on queue pair `q` at time `at`.
    fn perftest_post(&mut self, t: u32, q: u32, server: bool, at: Time) {
        let spec = &self.perftests[t as usize].spec;
        let (from, to) = if server { (spec.server, spec.client) } else { (spec.client, spec.server) };
        let (lkey, _) = self.app_keys(from);
        let (_, rkey) = self.app_keys(to);
        let verb = match spec.test {
            PerftestKind::WriteBw | PerftestKind::WriteLat => Verb::Write,
            PerftestKind::ReadBw => Verb::Read,
            PerftestKind::SendBw => Verb::Send,
        };
        let wr = SendWr { id: 0, verb, local_addr: APP_BUFFER, len: spec.message.0, lkey, remote_addr: APP_BUFFER, rkey };
        if self.post_send_at(q, wr, at).is_err() {
            self.perftests[t as usize].errors += 1;
        }
    }

    /// A completion for an application-owned queue pair.
    pub(super) fn app_completion(&mut self, owner: Owner, c: Completion) {
        match owner {
            Owner::Flow(f) => {
                if c.kind == CompletionKind::Recv {
                    return;
                }
                let rec = &mut self.flow_records[f as usize];
                if rec.finish != Time::MAX || rec.status.is_some() {
                    return;
                }
                rec.status = Some(c.status);
                if c.status == Status::Success {
                    rec.finish = c.at;
                    self.stats.flows_completed += 1;
                } else {
                    self.stats.flows_failed += 1;
                }
                let (qa, qb) = rec.qps;
                self.destroy_qp(qa);
                self.destroy_qp(qb);
            }
            Owner::Perftest { test, qp, server } => {
                let p = &mut self.perftests[test as usize];
                if c.status != Status::Success {
                    p.errors += 1;
                    return;
                }
                if p.spec.test == PerftestKind::WriteLat {
                    return;
                }
                if server {
                    if c.kind == CompletionKind::Recv {
                        let s = p.qps[qp as usize].1;
                        self.perftest_post_recv(test, s);
                    }
                    return;
                }
                if c.at >= p.measure_from && c.at <= self.end {
                    p.bytes[qp as usize] += c.bytes;
                }
                let cq = p.qps[qp as usize].0;
                self.perftest_post(test, cq, false, c.at);
            }
            Owner::Host => unreachable!("host completions stay in the CQ"),
        }
    }

    /// A whole message landed in an application's memory at `placed`.
    pub(super) fn app_message(&mut self, owner: Owner, placed: Time) {
        let Owner::Perftest { test, qp, server } = owner else { return };
        let p = &mut self.perftests[test as usize];
        if p.spec.test != PerftestKind::WriteLat {
            return;
        }
        let (c, s) = p.qps[qp as usize];
        if server {
            // Pong: the server answers as soon as it sees the ping in memory.
            self.perftest_post(test, s, true, placed);
        } else {
            if placed >= p.measure_from && placed <= self.end {
                p.latencies.push(Time((placed - p.ping_at).0 / 2));
            }
            p.ping_at = placed;
            self.perftest_post(test, c, false, placed);
        }
    }

    /// Poisson flow generators (one per sender of each CDF workload).
    pub fn flow_generators(&self) -> usize {
        self.flow_gens.len()
    }

    /// Flows read from flow files.
    pub fn listed_flows(&self) -> usize {
        self.flow_lists.iter().map(|l| l.flows.len()).sum()
    }

    /// Loaded CDFs, for generators.
    pub(crate) fn add_cdf(&mut self, cdf: FlowSizeCdf) -> u32 {
        self.cdfs.push(cdf);
        (self.cdfs.len() - 1) as u32
    }

    pub(super) fn add_flow_gen_timer(&mut self, i: u32) -> TimerId {
        self.timers.add_timer(Wake::FlowGen(i))
    }
}
