//! perftest-like benchmarks (`[[perftest]]`): write, read and send bandwidth with a message size,
//! queue depth and number of queue pairs (and each message's latency, post to completion), and
//! write ping-pong latency. Bandwidth is read from the
//! queue pairs' transmit counters over the measurement window, as mlnx_perf reads port counters.

use super::{Application, Owner, PERFTEST};
use crate::nic::verbs::{Completion, CompletionKind, RecvWr, SendWr, Status, Verb};
use crate::scenario::schema::{PerftestKind, PerftestSpec};
use crate::scenario::LoadedScenario;
use crate::sim::TimerId;
use crate::units::Time;
use crate::world::World;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A running perftest.
pub struct Perftest {
    pub spec: PerftestSpec,
    /// (client, server) queue pairs, and each one's message size.
    pub qps: Vec<(u32, u32)>,
    pub messages: Vec<u64>,
    pub timer: TimerId,
    /// Payload bytes and messages completed per queue pair since the measurement began.
    pub bytes: Vec<u64>,
    pub ops: Vec<u64>,
    /// Wire bytes and packets the data-sending queue pairs transmitted (port-counter style, as
    /// mlnx_perf reads: retransmissions included), and the payload the client's queue pairs had
    /// acknowledged (each byte once), at the start of the measurement and at the end of the run.
    pub tx_start: Vec<[u64; 3]>,
    pub tx_end: Vec<[u64; 3]>,
    pub measure_from: Time,
    /// Latency test: when the current ping was posted, and the half round trips measured.
    /// Bandwidth tests: each message's latency, from its post to its completion (SCR Fig. 13).
    /// Per queue pair.
    pub ping_at: Time,
    pub latencies: Vec<Vec<Time>>,
    pub errors: u64,
}

impl Perftest {
    /// Every latency sample of the test, all queue pairs together.
    pub fn all_latencies(&self) -> Vec<Time> {
        self.latencies.concat()
    }

    /// Aggregate goodput in Gbps over the measurement window ending at `end`: payload
    /// acknowledged, each byte once (from the queue pairs' counters, so large messages do not
    /// quantize it; retransmissions and bytes never acknowledged do not count).
    pub fn gbps(&self, end: Time) -> f64 {
        self.tx_window(end, 2).map_or(0.0, |(d, s)| d * 8.0 / s / 1e9)
    }

    /// Aggregate payload of completed messages in Gbps (perftest's own measure).
    pub fn completed_gbps(&self, end: Time) -> f64 {
        self.per_window_second(end, self.bytes.iter().sum::<u64>() as f64 * 8.0) / 1e9
    }

    /// Messages completed in the measurement window, in millions per second.
    pub fn mops(&self, end: Time) -> f64 {
        self.per_window_second(end, self.ops.iter().sum::<u64>() as f64) / 1e6
    }

    /// `count` per second of the measurement window ending at `end` (0 for an empty window).
    fn per_window_second(&self, end: Time, count: f64) -> f64 {
        let s = self.window_secs(end);
        if s <= 0.0 {
            return 0.0;
        }
        count / s
    }

    fn window_secs(&self, end: Time) -> f64 {
        end.saturating_sub(self.measure_from).as_secs_f64()
    }

    /// Counter `k` (0 wire bytes, 1 packets, 2 payload bytes acknowledged) gained over the measurement
    /// window ending at `end`, and the window in seconds; `None` before the window has closed
    /// on both ends or when it is empty.
    fn tx_window(&self, end: Time, k: usize) -> Option<(f64, f64)> {
        let s = self.window_secs(end);
        if s <= 0.0 || self.tx_end.len() != self.tx_start.len() {
            return None;
        }
        let d: u64 = self.tx_end.iter().zip(&self.tx_start).map(|(e, s)| e[k] - s[k]).sum();
        Some((d as f64, s))
    }

    /// Aggregate rate on the wire (headers included, data direction) in Gbps.
    pub fn wire_gbps(&self, end: Time) -> f64 {
        self.tx_window(end, 0).map_or(0.0, |(d, s)| d * 8.0 / s / 1e9)
    }

    /// Aggregate data-direction packets per second, in millions.
    pub fn mpps(&self, end: Time) -> f64 {
        self.tx_window(end, 1).map_or(0.0, |(d, s)| d / s / 1e6)
    }

    /// Each queue pair's goodput in Gbps over the measurement window (payload acknowledged).
    pub fn qp_goodput_gbps(&self, end: Time) -> Vec<f64> {
        let s = self.window_secs(end);
        if s <= 0.0 || self.tx_end.len() != self.tx_start.len() {
            return Vec::new();
        }
        self.tx_end.iter().zip(&self.tx_start).map(|(e, b)| (e[2] - b[2]) as f64 * 8.0 / s / 1e9).collect()
    }

    pub fn qp_gbps(&self, i: usize, end: Time) -> f64 {
        let secs = self.window_secs(end);
        if secs <= 0.0 {
            return 0.0;
        }
        self.bytes[i] as f64 * 8.0 / secs / 1e9
    }
}


/// Where perftests read and write: every host registers its whole memory once.
const APP_BUFFER: u64 = 0;

/// The perftest entries of a scenario. A queue pair's owner tag indexes `conns`.
#[derive(Default)]
pub struct Perftests {
    pub tests: Vec<Perftest>,
    /// Per owner tag: (test, queue pair index in it, server side).
    conns: Vec<(u32, u32, bool)>,
    /// `send_bw` servers: receives to post again when their completion is seen (time, arm
    /// order, test, queue pair), and the timer that posts them.
    reposts: BinaryHeap<Reverse<(Time, u64, u32, u32)>>,
    reposted: u64,
    repost_timer: Option<TimerId>,
}

/// The owner tag of the timer that posts `send_bw` servers' receives again.
const REPOST: u32 = u32::MAX;

impl Perftests {
    /// Arms every `[[perftest]]` entry's start.
    pub fn build(w: &mut World, loaded: &LoadedScenario) -> Perftests {
        let mut p = Perftests::default();
        for (i, spec) in loaded.scenario.perftest.iter().enumerate() {
            let timer = w.add_app_timer(PERFTEST, i as u32);
            w.arm(timer, spec.start);
            p.tests.push(Perftest {
                spec: spec.clone(),
                qps: Vec::new(),
                timer,
                messages: Vec::new(),
                bytes: Vec::new(),
                ops: Vec::new(),
                tx_start: Vec::new(),
                tx_end: Vec::new(),
                measure_from: spec.start + spec.warmup,
                ping_at: spec.start,
                latencies: Vec::new(),
                errors: 0,
            });
        }
        if loaded.scenario.perftest.iter().any(|t| t.test == PerftestKind::SendBw) {
            p.repost_timer = Some(w.add_app_timer(PERFTEST, REPOST));
        }
        p
    }

    /// Wire bytes and packets sent so far by each data-sending queue pair of test `t`, and the
    /// payload its client queue pair has had acknowledged.
    fn tx_counters(&self, w: &World, t: u32) -> Vec<[u64; 3]> {
        let p = &self.tests[t as usize];
        let read = p.spec.test == PerftestKind::ReadBw;
        let counters = |&(c, s): &(u32, u32)| {
            let [wire, packets, _] = w.qp_tx_counters(if read { s } else { c });
            [wire, packets, w.qps.get(c).payload_acked]
        };
        p.qps.iter().map(counters).collect()
    }

    /// A test starts: connect its queue pairs and fill their queues.
    fn start(&mut self, w: &mut World, t: u32) {
        let spec = self.tests[t as usize].spec.clone();
        let n = if spec.test == PerftestKind::WriteLat { 1 } else { spec.qps };
        let mut sizes = crate::sim::rng::stream(w.seed, "perftest", t as u64);
        for i in 0..n {
            let tag = self.conns.len() as u32;
            self.conns.push((t, i, false));
            self.conns.push((t, i, true));
            let (c, s) = w.connect_app(spec.client, spec.server, Owner { app: PERFTEST, tag }, Owner { app: PERFTEST, tag: tag + 1 }).expect("perftest runs between hosts");
            let p = &mut self.tests[t as usize];
            p.qps.push((c, s));
            p.messages.push(match spec.message_max {
                Some(max) if max.0 > spec.message.0 => rand::Rng::random_range(&mut sizes, spec.message.0..=max.0),
                _ => spec.message.0,
            });
            p.bytes.push(0);
            p.ops.push(0);
            p.latencies.push(Vec::new());
            // The rate limit and the hint go to the queue pair that sends the data: a READ's
            // responder, whose NIC schedules the responses.
            let data = if spec.test == PerftestKind::ReadBw { s } else { c };
            if let Some(r) = spec.rate_limit {
                w.set_rate_limit(data, r.0).expect("the perftest's queue pair is open");
            }
            if let Some(h) = spec.hint {
                w.write_hint(data, h).expect("the perftest's queue pair is open");
            }
            if spec.memory == crate::scenario::schema::BufferMemory::Gpu {
                for q in [c, s] {
                    w.use_gpu_memory(q).expect("validation checked [nic.gpu]");
                }
            }
        }
        let now = w.now;
        self.tests[t as usize].measure_from = now + spec.warmup;
        w.arm(self.tests[t as usize].timer, now + spec.warmup);
        match spec.test {
            PerftestKind::WriteLat => {
                self.tests[t as usize].ping_at = now;
                self.post(w, t, 0, false, now);
            }
            _ => {
                for i in 0..n as usize {
                    let s = self.tests[t as usize].qps[i].1;
                    if spec.test == PerftestKind::SendBw {
                        for _ in 0..spec.depth {
                            self.post_recv(w, t, s);
                        }
                    }
                    for _ in 0..spec.depth {
                        self.post(w, t, i, false, now);
                    }
                }
            }
        }
    }

    fn post_recv(&self, w: &mut World, t: u32, s: u32) {
        let spec = &self.tests[t as usize].spec;
        let len = spec.message_max.map_or(spec.message.0, |m| m.0.max(spec.message.0));
        let node = w.qp_node(s);
        let (lkey, _) = w.app_keys(node);
        let _ = w.post_recv(s, RecvWr { id: 0, addr: APP_BUFFER, len, lkey });
    }

    /// Posts one message of test `t` on its `i`-th queue pair (the server's side if `server`)
    /// at time `at`.
    fn post(&mut self, w: &mut World, t: u32, i: usize, server: bool, at: Time) {
        let test = &self.tests[t as usize];
        let (spec, len) = (&test.spec, test.messages[i]);
        let q = if server { test.qps[i].1 } else { test.qps[i].0 };
        let (from, to) = if server { (spec.server, spec.client) } else { (spec.client, spec.server) };
        let (lkey, _) = w.app_keys(from);
        let (_, rkey) = w.app_keys(to);
        let verb = match spec.test {
            PerftestKind::WriteBw | PerftestKind::WriteLat => Verb::Write,
            PerftestKind::ReadBw => Verb::Read,
            PerftestKind::SendBw => Verb::Send,
        };
        // The work request carries its post time, so the completion gives the message's latency.
        let wr = SendWr { id: at.0, verb, local_addr: APP_BUFFER, len, lkey, remote_addr: APP_BUFFER, rkey };
        if w.post_send_at(q, wr, at).is_err() {
            self.tests[t as usize].errors += 1;
        }
    }
}

impl Application for Perftests {
    /// The test's timer: it starts, or (the second time) its measurement window opens.
    fn on_timer(&mut self, w: &mut World, t: u32) {
        if t == REPOST {
            while let Some(&Reverse((at, _, test, s))) = self.reposts.peek() {
                if at > w.now {
                    break;
                }
                self.reposts.pop();
                self.post_recv(w, test, s);
            }
            if let (Some(&Reverse((at, ..))), Some(timer)) = (self.reposts.peek(), self.repost_timer) {
                w.arm(timer, at);
            }
            return;
        }
        if self.tests[t as usize].qps.is_empty() {
            self.start(w, t);
        } else {
            self.tests[t as usize].tx_start = self.tx_counters(w, t);
        }
    }

    fn on_completion(&mut self, w: &mut World, tag: u32, c: Completion) {
        let (test, qp, server) = self.conns[tag as usize];
        let p = &mut self.tests[test as usize];
        if c.status != Status::Success {
            p.errors += 1;
            return;
        }
        if p.spec.test == PerftestKind::WriteLat {
            return;
        }
        if server {
            if c.kind == CompletionKind::Recv {
                // The server posts the receive again once it sees the completion, at `c.at`:
                // until then the receive queue holds one receive fewer.
                let s = p.qps[qp as usize].1;
                self.reposted += 1;
                self.reposts.push(Reverse((c.at, self.reposted, test, s)));
                let timer = self.repost_timer.expect("a send_bw test has its repost timer");
                if self.reposts.peek().is_some_and(|r| r.0 .0 == c.at) {
                    w.arm(timer, c.at.max(w.now));
                }
            }
            return;
        }
        if c.at >= p.measure_from && c.at <= w.end {
            p.bytes[qp as usize] += c.bytes;
            p.ops[qp as usize] += 1;
            p.latencies[qp as usize].push(c.at.saturating_sub(Time(c.wr_id)));
        }
        self.post(w, test, qp as usize, false, c.at);
    }

    /// Ping-pong: each side answers as soon as it sees the other's message in its memory.
    fn on_message(&mut self, w: &mut World, tag: u32, placed: Time) {
        let (test, qp, server) = self.conns[tag as usize];
        let p = &mut self.tests[test as usize];
        if p.spec.test != PerftestKind::WriteLat {
            return;
        }
        if server {
            self.post(w, test, qp as usize, true, placed);
        } else {
            // A round trip completes one message each way; the client counts the server's
            // answer, as ib_write_lat counts its iterations.
            if placed >= p.measure_from && placed <= w.end {
                p.latencies[qp as usize].push(Time((placed - p.ping_at).0 / 2));
                p.bytes[qp as usize] += p.messages[qp as usize];
                p.ops[qp as usize] += 1;
            }
            p.ping_at = placed;
            self.post(w, test, qp as usize, false, placed);
        }
    }

    /// The measurement window closes at the end of the run.
    fn on_end(&mut self, w: &World) {
        for t in 0..self.tests.len() as u32 {
            self.tests[t as usize].tx_end = self.tx_counters(w, t);
        }
    }
}
