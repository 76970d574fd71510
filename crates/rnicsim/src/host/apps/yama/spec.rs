//! `[yama]`: offload engines, the chains that steer work through them, the entities that use
//! them from client hosts, and libYama's parameters (or `isolation = false` for the vanilla
//! baseline: every queue posts as fast as its depth allows, and the engines serve first come
//! first served).

use crate::nic::offload::EngineSpec;
use crate::units::{BitsPerSec, Bytes, Time};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct YamaSpec {
    /// libYama paces every queue pair (true) or the vanilla baseline (false).
    #[serde(default = "yes")]
    pub isolation: bool,
    /// Oversubscription factor β of the feedback loop (Algorithm 1, line 7).
    #[serde(default = "default_beta")]
    pub beta: f64,
    /// Periods in the feedback loop's sliding window.
    #[serde(default = "default_window")]
    pub window: u32,
    /// Dummy work at most this fraction of the applications' posted work per period.
    #[serde(default = "default_backfill_cap")]
    pub backfill_cap: f64,
    /// The estimate every chain starts from.
    #[serde(default = "default_initial")]
    pub initial: BitsPerSec,
    /// Feedback loop period; default 1.25 × the base RTT between a chain's first client and
    /// its server (§7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<Time>,
    /// An estimate older than this starts a leader election; default 4 periods, at least 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale_after: Option<Time>,
    /// Each queue pair's token bucket holds at most this much work.
    #[serde(default = "default_burst")]
    pub burst: Bytes,
    /// CPU time of libYama's routines per operation posted (scavenged from the application's
    /// polling; it shows up in the operation's latency).
    #[serde(default = "default_routine")]
    pub routine: Time,
    /// Throughput and latency are measured from this time on.
    #[serde(default)]
    pub warmup: Time,
    /// Interval of the per-entity throughput timeline.
    #[serde(default = "default_sample")]
    pub sample: Time,
    /// A join or leave has converged once every active entity stays within this fraction of
    /// its fair share for three samples in a row.
    #[serde(default = "default_tolerance")]
    pub tolerance: f64,
    #[serde(default)]
    pub engine: Vec<EngineSpec>,
    #[serde(default)]
    pub chain: Vec<ChainSpec>,
    #[serde(default)]
    pub entity: Vec<EntitySpec>,
}

/// What a chain's work is (the adaptor that turns an application's operation into generic
/// work and makes dummy work like it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Workload {
    /// IP packets of the `packet_sizes`, chosen uniformly (two-sided).
    Nat,
    /// Byte chunks of `chunk` bytes (two-sided).
    Aes,
    /// Key-value RPCs: 32-byte keys, 64-byte values, `get` fraction of GETs, uniform over `keys`
    /// (one-sided: a GET is answered with its value).
    Kv,
    /// RDMA READ and WRITE of 64 bytes, `read` fraction of READs (one-sided).
    Rdma,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainSpec {
    pub name: String,
    /// Engine names in the order work passes them; all on one host (the chain's server).
    /// Empty, with a `server`: the chain is that host NIC's own RDMA engine (see `server`).
    #[serde(default)]
    pub engines: Vec<String>,
    /// With no `engines`: the host whose NIC's RDMA transport is the offload (workload `rdma`
    /// only). Operations are then real RDMA READs and WRITEs from the clients' queue pairs to
    /// this host, and the chain's throughput is whatever its NIC delivers: with
    /// `[nic.state_cache]`, falling as the connections outgrow the cache (§2, §6.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<u32>,
    pub workload: Workload,
    /// Overrides `yama.isolation` for this chain (one run can hold Yama and vanilla chains).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<bool>,
    /// Whether completions are counted at the target (NAT, AES) or at the initiator (KV,
    /// RDMA); default by workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub two_sided: Option<bool>,
    #[serde(default = "default_packet_sizes")]
    pub packet_sizes: Vec<u64>,
    #[serde(default = "default_chunk")]
    pub chunk: Bytes,
    #[serde(default = "default_keys")]
    pub keys: u32,
    #[serde(default = "default_get")]
    pub get: f64,
    #[serde(default = "default_read")]
    pub read: f64,
}

impl ChainSpec {
    /// Whether the chain is a NIC's own RDMA engine (no modeled engines).
    pub fn is_nic_rdma(&self) -> bool {
        self.engines.is_empty() && self.server.is_some()
    }

    /// The chain's server: `server`, or the host of its first engine.
    pub fn server_of(&self, engines: &[EngineSpec]) -> Option<u32> {
        self.server.or_else(|| self.engines_host(engines))
    }

    /// The host of its first engine, if that engine exists.
    fn engines_host(&self, engines: &[EngineSpec]) -> Option<u32> {
        self.engines.first().and_then(|n| engines.iter().find(|e| &e.name == n)).map(|e| e.host)
    }

    /// Bytes of work in a mean piece of the chain's workload.
    pub fn mean_work(&self) -> u64 {
        match self.workload {
            Workload::Nat => self.packet_sizes.iter().sum::<u64>() / self.packet_sizes.len().max(1) as u64,
            Workload::Aes => self.chunk.0,
            Workload::Kv => super::KV_WORK,
            Workload::Rdma => super::RDMA_WORK,
        }
    }

    pub fn is_two_sided(&self) -> bool {
        self.two_sided.unwrap_or(matches!(self.workload, Workload::Nat | Workload::Aes))
    }
}

/// An entity (tenant): its operator weight, the chain it uses, and its workload generators.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EntitySpec {
    pub name: String,
    pub weight: f64,
    pub chain: String,
    /// Client hosts; generator instances go round-robin over them.
    pub nodes: Vec<u32>,
    /// The entity's per-node weights, one per entry of `nodes` (relative; default equal).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_weights: Vec<f64>,
    #[serde(default = "one")]
    pub instances: u32,
    /// Queue pairs per instance.
    #[serde(default = "one")]
    pub queues: u32,
    /// Operations each queue pair keeps outstanding.
    #[serde(default = "default_depth")]
    pub depth: u32,
    #[serde(default)]
    pub start: Time,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Time>,
    /// Open loop: the entity offers this much work in all (Poisson arrivals, split evenly over
    /// its queue pairs) instead of keeping every queue pair saturated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<BitsPerSec>,
    /// Another entity (say the same workload without libYama) whose latency this one's is
    /// compared with: the summary gives the difference (libYama's overhead, Fig. 9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
}

impl EntitySpec {
    /// Whether it is on (between `start` and `stop`) for all of `from..to`.
    pub fn on_between(&self, from: Time, to: Time) -> bool {
        self.start <= from && self.stop.is_none_or(|stop| stop >= to)
    }
}

/// The most queue pairs one entity may open.
const MAX_QUEUES: u64 = 1 << 16;
/// The most operations an entity may keep outstanding (over all its queue pairs).
const MAX_OUTSTANDING: u64 = 1 << 22;

fn yes() -> bool {
    true
}
fn one() -> u32 {
    1
}
fn default_beta() -> f64 {
    0.05
}
fn default_window() -> u32 {
    4
}
fn default_backfill_cap() -> f64 {
    0.5
}
fn default_initial() -> BitsPerSec {
    BitsPerSec::gbps(10)
}
fn default_burst() -> Bytes {
    Bytes(4096)
}
fn default_routine() -> Time {
    Time::from_ns(100)
}
fn default_sample() -> Time {
    Time::from_us(20)
}
fn default_tolerance() -> f64 {
    0.2
}
fn default_packet_sizes() -> Vec<u64> {
    vec![40, 1500]
}
fn default_chunk() -> Bytes {
    Bytes(1024)
}
fn default_keys() -> u32 {
    10_000
}
fn default_get() -> f64 {
    0.95
}
fn default_read() -> f64 {
    0.5
}
fn default_depth() -> u32 {
    8
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::Nat => "nat",
            Workload::Aes => "aes",
            Workload::Kv => "kv",
            Workload::Rdma => "rdma",
        }
    }
}

impl YamaSpec {
    /// Problems as (key under `yama.`, what was expected).
    pub fn check(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut bad = |k: String, why: String| out.push((k, why));
        if !(self.beta >= 0.0 && self.beta < 10.0) {
            bad("beta".into(), format!("expected an oversubscription factor in [0, 10), got {}", self.beta));
        }
        if self.window == 0 {
            bad("window".into(), "expected at least one period".into());
        }
        if !(self.backfill_cap >= 0.0 && self.backfill_cap.is_finite()) {
            bad("backfill_cap".into(), format!("expected a non-negative fraction, got {}", self.backfill_cap));
        }
        if self.initial.0 == 0 {
            bad("initial".into(), "expected a positive rate such as \"10Gbps\", got 0".into());
        }
        if self.burst.0 == 0 {
            bad("burst".into(), "expected a positive size".into());
        }
        if self.sample < Time::from_us(1) {
            bad("sample".into(), format!("expected at least 1us, got {}", self.sample));
        }
        if self.period.is_some_and(|p| p < Time::from_ns(10)) {
            bad("period".into(), "expected at least 10ns".into());
        }
        if let (Some(p), Some(st)) = (self.period, self.stale_after) {
            if st < Time(p.0.saturating_mul(2)) {
                bad("stale_after".into(), format!("expected at least two periods ({}): an estimate is read up to a period after it was stamped, so every one would be stale", Time(p.0.saturating_mul(2))));
            }
        }
        if !(self.tolerance > 0.0 && self.tolerance < 1.0) {
            bad("tolerance".into(), format!("expected a fraction in (0, 1), got {}", self.tolerance));
        }
        for (i, e) in self.engine.iter().enumerate() {
            for (k, why) in e.check() {
                bad(format!("engine[{i}].{k}"), why);
            }
            if self.engine[..i].iter().any(|x| x.name == e.name) {
                bad(format!("engine[{i}].name"), format!("engine \"{}\" is defined twice", e.name));
            }
        }
        for (i, c) in self.chain.iter().enumerate() {
            if c.engines.is_empty() && c.server.is_none() {
                bad(format!("chain[{i}].engines"), "a chain needs at least one engine, or none and a `server` whose NIC's RDMA engine it is".into());
            }
            if c.is_nic_rdma() && c.workload != Workload::Rdma {
                bad(format!("chain[{i}].workload"), format!("a NIC's own RDMA engine (no `engines`) serves workload \"rdma\" only, got \"{}\"", c.workload.name()));
            }
            if c.is_nic_rdma() && c.two_sided == Some(true) {
                bad(format!("chain[{i}].two_sided"), "RDMA READs and WRITEs complete at the initiator: a NIC's own RDMA engine is one-sided".into());
            }
            if let (Some(s), Some(h)) = (c.server, c.engines_host(&self.engine)) {
                if s != h {
                    bad(format!("chain[{i}].server"), format!("the chain's engines are on host {h}, not {s} (with engines, `server` may be left out)"));
                }
            }
            let hosts: Vec<u32> = c.engines.iter().filter_map(|n| self.engine.iter().find(|e| &e.name == n).map(|e| e.host)).collect();
            for (k, n) in c.engines.iter().enumerate() {
                if !self.engine.iter().any(|e| &e.name == n) {
                    bad(format!("chain[{i}].engines"), format!("no engine is named \"{n}\""));
                }
                // A piece passes each engine of a chain once: twice would charge it twice at
                // one engine, and the chain's probing would measure neither pass.
                if c.engines[..k].contains(n) {
                    bad(format!("chain[{i}].engines"), format!("engine \"{n}\" is listed twice: a chain passes each engine once (to model two passes, define a second engine)"));
                }
            }
            if hosts.windows(2).any(|w| w[0] != w[1]) {
                bad(format!("chain[{i}].engines"), "a chain's engines must all be on one host".into());
            }
            if self.chain[..i].iter().any(|x| x.name == c.name) {
                bad(format!("chain[{i}].name"), format!("chain \"{}\" is defined twice", c.name));
            }
            if c.packet_sizes.is_empty() || c.packet_sizes.iter().any(|&p| p == 0 || p > 65_536) {
                bad(format!("chain[{i}].packet_sizes"), "expected packet sizes of 1 to 65536 bytes".into());
            }
            if c.chunk.0 == 0 || c.chunk.0 > 1 << 20 {
                bad(format!("chain[{i}].chunk"), "expected 1 byte to 1MiB".into());
            }
            if c.keys == 0 {
                bad(format!("chain[{i}].keys"), "expected at least one key".into());
            }
            for (k, v) in [("get", c.get), ("read", c.read)] {
                if !(0.0..=1.0).contains(&v) {
                    bad(format!("chain[{i}].{k}"), format!("expected a fraction in [0, 1], got {v}"));
                }
            }
        }
        // Weights are normalized over a chain's entities: their sum must be a number too.
        for c in &self.chain {
            let sum: f64 = self.entity.iter().filter(|e| e.chain == c.name && e.weight.is_finite()).map(|e| e.weight).sum();
            if sum.is_infinite() {
                let i = self.entity.iter().position(|e| e.chain == c.name).expect("a sum over none is 0");
                bad(format!("entity[{i}].weight"), format!("the weights of chain \"{}\"'s entities add up past the largest number; they are relative, so scale them down", c.name));
            }
        }
        for (i, e) in self.entity.iter().enumerate() {
            if self.entity[..i].iter().any(|x| x.name == e.name) {
                bad(format!("entity[{i}].name"), format!("entity \"{}\" is defined twice (its metrics are named by it)", e.name));
            }
            if !(e.weight > 0.0 && e.weight.is_finite()) {
                bad(format!("entity[{i}].weight"), format!("expected a positive weight, got {}", e.weight));
            }
            if !self.chain.iter().any(|c| c.name == e.chain) {
                bad(format!("entity[{i}].chain"), format!("no chain is named \"{}\"", e.chain));
            }
            if !e.node_weights.is_empty() && (e.node_weights.len() != e.nodes.len() || e.node_weights.iter().any(|w| !(*w > 0.0 && w.is_finite()))) {
                bad(format!("entity[{i}].node_weights"), format!("expected one positive weight per node ({}), got {:?}", e.nodes.len(), e.node_weights));
            }
            if let Some(n) = e.nodes.iter().enumerate().find_map(|(j, n)| e.nodes[..j].contains(n).then_some(n)) {
                bad(format!("entity[{i}].nodes"), format!("host {n} is listed twice (a node's weight is one entry of node_weights)"));
            }
            if e.nodes.is_empty() {
                bad(format!("entity[{i}].nodes"), "expected at least one client host".into());
            } else if (e.instances as usize) < e.nodes.len() {
                // Instances go round robin over the nodes: the last ones would run nothing (and
                // their node_weights would weigh nothing).
                let idle: Vec<String> = e.nodes[e.instances as usize..].iter().map(|n| n.to_string()).collect();
                bad(format!("entity[{i}].instances"), format!("{} instance(s) for {} nodes: host(s) {} would run no generator; set instances to at least {}", e.instances, e.nodes.len(), idle.join(", "), e.nodes.len()));
            }
            for (k, v) in [("instances", e.instances), ("queues", e.queues), ("depth", e.depth)] {
                if v == 0 {
                    bad(format!("entity[{i}].{k}"), "expected at least 1".into());
                }
            }
            if (e.instances as u64) * (e.queues as u64) > MAX_QUEUES {
                bad(format!("entity[{i}].queues"), format!("instances × queues is {}, at most {MAX_QUEUES}", e.instances as u64 * e.queues as u64));
            } else if (e.instances as u64) * (e.queues as u64) * (e.depth as u64) > MAX_OUTSTANDING {
                // Every outstanding operation is posted at the start and kept until it completes.
                bad(format!("entity[{i}].depth"), format!("instances × queues × depth is {} operations outstanding, at most {MAX_OUTSTANDING}", e.instances as u64 * e.queues as u64 * e.depth as u64));
            }
            if e.baseline.as_ref().is_some_and(|b| b == &e.name) {
                bad(format!("entity[{i}].baseline"), "an entity is its own baseline: its overheads would be 0 by construction; name the entity it is compared with".into());
            } else if e.baseline.as_ref().is_some_and(|b| !self.entity.iter().any(|x| &x.name == b)) {
                bad(format!("entity[{i}].baseline"), format!("no entity is named \"{}\"", e.baseline.as_deref().unwrap_or("")));
            }
            if e.load.is_some_and(|l| l.0 < 1000 || l.0 > 10_000_000_000_000) {
                bad(format!("entity[{i}].load"), "expected between 1Kbps and 10Tbps".into());
            }
            if e.stop.is_some_and(|s| s <= e.start) {
                bad(format!("entity[{i}].stop"), "expected a stop after the start".into());
            }
        }
        if self.entity.is_empty() {
            bad("entity".into(), "expected at least one [[yama.entity]]".into());
        }
        out
    }
}
