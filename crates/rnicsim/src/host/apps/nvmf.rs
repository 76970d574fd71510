//! NVMe over Fabrics on RDMA (`[[nvmf]]`, SCR A.9 Fig. 21b): tenants on an initiator host write
//! to a target whose namespace is a null device (it completes every command at once, so the
//! network is the only bottleneck).
//!
//! Each tenant is one I/O queue: one queue pair, `depth` commands outstanding. A write of `io`
//! bytes is a 64-byte command capsule SENT to the target; data up to `in_capsule` bytes rides
//! in the capsule (SPDK's in-capsule data, 4 KiB by default), a larger write's data is pulled
//! by the target with an RDMA READ of the initiator's buffer. The target then SENDs a 16-byte
//! response capsule, and the initiator issues its next write when the response lands. Both
//! ends keep `depth` receive WQEs posted for capsules. A tenant's bandwidth is `io` bytes per
//! completed write over the measurement window; its latency is from issue to response.

use super::{Application, Owner, NVMF};
use crate::nic::verbs::{Completion, CompletionKind, RecvWr, SendWr, Status, Verb};
use crate::scenario::LoadedScenario;
use crate::units::{Bytes, Time};
use crate::world::World;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Bytes of an NVMe-oF command capsule (its submission queue entry) and response capsule.
pub const COMMAND_BYTES: u64 = 64;
pub const RESPONSE_BYTES: u64 = 16;

/// One `[[nvmf]]` entry: a tenant's I/O queue from an initiator to a target.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NvmfSpec {
    /// Label in outputs (default `nvmf <index>`).
    #[serde(default)]
    pub name: String,
    pub initiator: u32,
    pub target: u32,
    /// Bytes per write.
    #[serde(default = "default_io")]
    pub io: Bytes,
    /// Writes outstanding (the I/O queue depth).
    #[serde(default = "default_depth")]
    pub depth: u32,
    /// Writes up to this size carry their data in the command capsule; larger ones are READ by
    /// the target.
    #[serde(default = "default_io")]
    pub in_capsule: Bytes,
    #[serde(default)]
    pub start: Time,
    /// Writes completed before `start + warmup` are not measured.
    #[serde(default)]
    pub warmup: Time,
}

fn default_io() -> Bytes {
    Bytes(4096)
}
fn default_depth() -> u32 {
    32
}

impl NvmfSpec {
    /// Keys whose values cannot work, with why: `sq_depth`, `rq_depth` and `memory` are the
    /// NIC's queue depths and each host's registered memory (`nic.memory_size`).
    pub fn check(&self, sq_depth: u32, rq_depth: u32, memory: Bytes) -> Vec<(&'static str, String)> {
        let mut bad = Vec::new();
        if self.initiator == self.target {
            bad.push(("target", "initiator and target must be different hosts".into()));
        }
        let most = sq_depth.min(rq_depth);
        if self.depth == 0 || self.depth > most {
            let default = if self.depth == default_depth() { " (the default)" } else { "" };
            bad.push(("depth", format!("expected 1 to the smaller of nic.sq_depth and nic.rq_depth ({most}), got {}{default}", self.depth)));
        }
        if self.io.0 == 0 || self.io.0 > 1 << 30 {
            bad.push(("io", format!("expected 1 B to 1 GiB, got {}", self.io)));
        } else if self.io.0 > memory.0 {
            bad.push(("io", format!("{} is larger than nic.memory_size ({memory}): the data could not be read from the initiator's memory", self.io)));
        }
        if self.in_capsule.0 > 1 << 20 {
            bad.push(("in_capsule", format!("expected at most 1 MiB, got {}", self.in_capsule)));
        } else if COMMAND_BYTES + self.in_capsule.0 > memory.0 {
            bad.push(("in_capsule", format!("a command capsule of {COMMAND_BYTES} B + {} does not fit nic.memory_size ({memory}): the target could not post its receive buffer", self.in_capsule)));
        }
        bad
    }

    fn data_in_capsule(&self) -> bool {
        self.io.0 <= self.in_capsule.0
    }
}

struct Tenant {
    spec: NvmfSpec,
    /// The initiator's and the target's queue pair.
    qi: u32,
    qt: u32,
    /// When each outstanding write was issued, oldest first (responses come back in order:
    /// one queue pair, a null device).
    issued: VecDeque<Time>,
    measure_from: Time,
    ios: u64,
    latencies: Vec<Time>,
    errors: u64,
}

/// The `[[nvmf]]` tenants of a run.
#[derive(Default)]
pub struct Nvmf {
    tenants: Vec<Tenant>,
}

/// Tags: the tenant, and whether the event is the target's.
fn tag(i: usize, target: bool) -> u32 {
    ((i as u32) << 1) | target as u32
}

/// A READ the target posts carries this work-request id (responses and capsules carry 0).
const DATA_READ: u64 = 1;

impl Nvmf {
    pub fn build(w: &mut World, loaded: &LoadedScenario) -> Nvmf {
        let mut n = Nvmf::default();
        for (i, spec) in loaded.scenario.nvmf.iter().enumerate() {
            let mut spec = spec.clone();
            if spec.name.is_empty() {
                spec.name = super::default_name("nvmf", i);
            }
            let (qi, qt) = w.connect_app(spec.initiator, spec.target, Owner { app: NVMF, tag: tag(i, false) }, Owner { app: NVMF, tag: tag(i, true) }).expect("validated hosts");
            let start = w.add_app_timer(NVMF, tag(i, false));
            w.arm(start, spec.start);
            let measure_from = spec.start + spec.warmup;
            n.tenants.push(Tenant { spec, qi, qt, issued: VecDeque::new(), measure_from, ios: 0, latencies: Vec::new(), errors: 0 });
            for _ in 0..n.tenants[i].spec.depth {
                n.post_recv(w, i, true);
                n.post_recv(w, i, false);
            }
        }
        n
    }

    /// A receive WQE for a command capsule (target) or a response capsule (initiator).
    fn post_recv(&mut self, w: &mut World, i: usize, target: bool) {
        let t = &self.tenants[i];
        let (q, node, len) = if target { (t.qt, t.spec.target, COMMAND_BYTES + t.spec.in_capsule.0) } else { (t.qi, t.spec.initiator, RESPONSE_BYTES) };
        let (lkey, _) = w.app_keys(node);
        if w.post_recv(q, RecvWr { id: 0, addr: 0, len, lkey }).is_err() {
            self.tenants[i].errors += 1;
        }
    }

    /// Tenant `i` posts `wr` on its queue pair `q` at `t`, counting a refusal as an error.
    fn post(&mut self, w: &mut World, i: usize, q: u32, wr: SendWr, t: Time) {
        if w.post_send_at(q, wr, t).is_err() {
            self.tenants[i].errors += 1;
        }
    }

    /// Tenant `i` issues a write at `t`.
    fn issue(&mut self, w: &mut World, i: usize, t: Time) {
        let s = &self.tenants[i].spec;
        let len = if s.data_in_capsule() { COMMAND_BYTES + s.io.0 } else { COMMAND_BYTES };
        let (lkey, _) = w.app_keys(s.initiator);
        let q = self.tenants[i].qi;
        self.tenants[i].issued.push_back(t);
        self.post(w, i, q, SendWr { id: 0, verb: Verb::Send, local_addr: 0, len, lkey, remote_addr: 0, rkey: 0 }, t);
    }

    /// The target answers tenant `i`'s oldest command at `t` (its data is in: the null device
    /// is done).
    fn respond(&mut self, w: &mut World, i: usize, t: Time) {
        let (lkey, _) = w.app_keys(self.tenants[i].spec.target);
        let q = self.tenants[i].qt;
        self.post(w, i, q, SendWr { id: 0, verb: Verb::Send, local_addr: 0, len: RESPONSE_BYTES, lkey, remote_addr: 0, rkey: 0 }, t);
    }

    /// What the summary reports, per tenant.
    pub fn summary(&self, w: &World) -> Vec<NvmfSummary> {
        self.tenants
            .iter()
            .map(|t| {
                let secs = w.end.saturating_sub(t.measure_from).as_secs_f64();
                let per_s = |x: f64| if secs > 0.0 { x / secs } else { 0.0 };
                NvmfSummary {
                    name: t.spec.name.clone(),
                    initiator: t.spec.initiator,
                    target: t.spec.target,
                    io_bytes: t.spec.io.0,
                    depth: t.spec.depth,
                    ios: t.ios,
                    kiops: per_s(t.ios as f64) / 1e3,
                    gbps: per_s(t.ios as f64 * t.spec.io.0 as f64 * 8.0) / 1e9,
                    latency_mean_us: (!t.latencies.is_empty()).then(|| crate::output::summary::mean(&t.latencies) / 1e6),
                    latency_p99_us: (!t.latencies.is_empty()).then(|| crate::output::summary::percentile(&t.latencies, 0.99) / 1e6),
                    errors: t.errors,
                }
            })
            .collect()
    }
}

/// Per initiator host of `tenants`: its tenants' total bandwidth and Jain's index over them.
pub fn hosts(tenants: &[NvmfSummary]) -> Vec<NvmfHost> {
    let mut hosts: Vec<u32> = tenants.iter().map(|t| t.initiator).collect();
    hosts.sort_unstable();
    hosts.dedup();
    hosts
        .into_iter()
        .map(|h| {
            let g: Vec<f64> = tenants.iter().filter(|t| t.initiator == h).map(|t| t.gbps).collect();
            NvmfHost { name: format!("host {h}"), tenants: g.len() as u32, gbps: g.iter().sum(), jain: crate::nic::scr::stats::jain_reported(&g) }
        })
        .collect()
}

impl Application for Nvmf {
    fn on_timer(&mut self, w: &mut World, t: u32) {
        let i = (t >> 1) as usize;
        let now = w.now;
        for _ in 0..self.tenants[i].spec.depth {
            self.issue(w, i, now);
        }
    }

    fn on_completion(&mut self, w: &mut World, t: u32, done: Completion) {
        let (i, target) = ((t >> 1) as usize, t & 1 == 1);
        if done.status != Status::Success {
            self.tenants[i].errors += 1;
            return;
        }
        match (target, done.kind) {
            // A command capsule at the target: its data is in it, or is pulled with a READ.
            (true, CompletionKind::Recv) => {
                self.post_recv(w, i, true);
                let s = &self.tenants[i].spec;
                if s.data_in_capsule() {
                    self.respond(w, i, done.at);
                } else {
                    let ((lkey, _), (_, rkey)) = (w.app_keys(s.target), w.app_keys(s.initiator));
                    let wr = SendWr { id: DATA_READ, verb: Verb::Read, local_addr: 0, len: s.io.0, lkey, remote_addr: 0, rkey };
                    let q = self.tenants[i].qt;
                    self.post(w, i, q, wr, done.at);
                }
            }
            (true, CompletionKind::Read) if done.wr_id == DATA_READ => self.respond(w, i, done.at),
            // A response capsule at the initiator: the write is done; the next one goes.
            (false, CompletionKind::Recv) => {
                self.post_recv(w, i, false);
                let tn = &mut self.tenants[i];
                let issued = tn.issued.pop_front().unwrap_or(done.at);
                if done.at >= tn.measure_from {
                    tn.ios += 1;
                    tn.latencies.push(done.at - issued);
                }
                self.issue(w, i, done.at);
            }
            _ => {}
        }
    }
}

/// One tenant in `summary.json` (`nvmf`).
#[derive(Clone, Debug, Serialize)]
pub struct NvmfSummary {
    pub name: String,
    pub initiator: u32,
    pub target: u32,
    pub io_bytes: u64,
    pub depth: u32,
    /// Writes completed in the measurement window, thousands per second, and their data rate.
    pub ios: u64,
    pub kiops: f64,
    pub gbps: f64,
    /// Over the writes completed in the window; null if none did.
    pub latency_mean_us: Option<f64>,
    pub latency_p99_us: Option<f64>,
    pub errors: u64,
}

/// One initiator host's tenants together (`nvmf_hosts`).
#[derive(Clone, Debug, Serialize)]
pub struct NvmfHost {
    pub name: String,
    pub tenants: u32,
    pub gbps: f64,
    /// Jain's index over its tenants' bandwidth; null if none wrote anything.
    pub jain: Option<f64>,
}
