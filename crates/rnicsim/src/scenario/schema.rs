//! The scenario file's schema: one struct per TOML table, defaults filled in on load.
//!
//! Every table rejects unknown keys. Field docs here are the reference for `docs/scenario.md`.

use crate::fabric::ecn::EcnCurve;
use crate::fabric::lb::{ConWeaveSpec, CongaSpec, DrillSpec, LbKind};
use crate::fabric::port::QueueOrder;
use crate::units::{BitsPerSec, Bytes, Time};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use super::exact;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// A label for reports.
    #[serde(default)]
    pub name: String,
    /// The one seed every random stream derives from.
    #[serde(default = "one")]
    pub seed: u64,
    /// Simulated time to run.
    pub duration: Time,
    /// End the run as soon as the stall detector sees it stalled (outputs up to then are kept).
    #[serde(default, skip_serializing_if = "is_false")]
    pub stop_on_stall: bool,
    /// End the run as soon as every `[[flows]]` flow has finished (looked at every 100 µs of
    /// simulated time), `duration` at the latest.
    #[serde(default, skip_serializing_if = "is_false")]
    pub stop_when_flows_done: bool,
    pub topology: TopologySpec,
    #[serde(default)]
    pub links: LinkDefaults,
    #[serde(default)]
    pub switch: SwitchSpec,
    #[serde(default)]
    pub routing: RoutingSpec,
    #[serde(default)]
    pub link_events: Vec<LinkEventSpec>,
    /// Periodic random link failures, added to `link_events`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failures: Option<crate::fabric::failures::FailureSpec>,
    #[serde(default)]
    pub traffic: Vec<TrafficSpec>,
    /// The RDMA NIC of every host.
    #[serde(default)]
    pub nic: crate::nic::NicSpec,
    /// RDMA flow workloads (flow-size CDF with Poisson arrivals, or a flow file).
    #[serde(default)]
    pub flows: Vec<FlowsSpec>,
    /// perftest-like benchmarks between host pairs.
    #[serde(default)]
    pub perftest: Vec<PerftestSpec>,
    /// Entities sharing offload engines at a NIC, with libYama's isolation or without (`[yama]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub yama: Option<crate::host::apps::yama::spec::YamaSpec>,
    /// StaR's RPC and parameter-server workloads over RDMA, StaR or ScalaRDMA (`[[rpc]]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rpc: Vec<crate::host::apps::rpc::RpcSpec>,
    /// NVMe-oF tenants writing to a null-device target (`[[nvmf]]`, SCR A.9).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nvmf: Vec<crate::host::apps::nvmf::NvmfSpec>,
    #[serde(default)]
    pub outputs: OutputSpec,
    /// Published values this scenario reproduces, reported beside ours after the run.
    #[serde(default)]
    pub paper: Vec<crate::output::paper::PaperValue>,
    /// Paper figures redrawn on their own axes from this run's values (`rnicsim reproduce`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub figure: Vec<crate::output::paper::FigureSpec>,
    /// Variants of this scenario run after it, so that claims and figures can compare
    /// (`baselines/<name>/...` in `summary.json`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub baseline: Vec<BaselineSpec>,
    /// How large a run may be before it is refused (see [`crate::world::Estimate`]).
    #[serde(default, skip_serializing_if = "LimitsSpec::is_default")]
    pub limits: LimitsSpec,
}

/// `[limits]`: the largest run accepted without being asked; a scenario whose estimate passes
/// one is refused before it starts, naming the key to raise.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsSpec {
    /// Flows the workloads may start (each keeps a record until the run is written).
    #[serde(default = "default_max_flows")]
    pub max_flows: u64,
    /// Data packets the workloads may send (hours of simulation at the default).
    #[serde(default = "default_max_packets")]
    pub max_packets: u64,
}

fn default_max_flows() -> u64 {
    50_000_000
}

fn default_max_packets() -> u64 {
    10_000_000_000
}

impl Default for LimitsSpec {
    fn default() -> Self {
        LimitsSpec { max_flows: default_max_flows(), max_packets: default_max_packets() }
    }
}

impl LimitsSpec {
    fn is_default(&self) -> bool {
        *self == LimitsSpec::default()
    }
}

fn is_false(b: &bool) -> bool {
    !b
}

fn one() -> u64 {
    1
}

/// Exactly one topology kind, e.g. `[topology.leaf_spine]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum TopologySpec {
    /// Two hosts joined by one link.
    BackToBack {},
    /// `hosts` hosts on one switch (N-to-1 incast).
    Star { hosts: usize },
    /// Two switches joined by a bottleneck link, `left` and `right` hosts on them.
    Dumbbell {
        left: usize,
        right: usize,
        #[serde(default)]
        bottleneck_rate: Option<BitsPerSec>,
    },
    /// Two-tier Clos; oversubscription is `hosts_per_leaf × host rate / (spines × uplink rate)`.
    LeafSpine {
        leaves: usize,
        spines: usize,
        hosts_per_leaf: usize,
        #[serde(default)]
        uplink_rate: Option<BitsPerSec>,
    },
    /// k-ary fat-tree; `hosts_per_edge` defaults to k/2 (non-blocking).
    FatTree {
        k: usize,
        #[serde(default)]
        hosts_per_edge: Option<usize>,
    },
    /// Random regular graph of switches (seeded from the scenario seed).
    Jellyfish { switches: usize, degree: usize, hosts_per_switch: usize },
    /// An HPCC-style topology file, relative to the scenario file's folder.
    File { path: PathBuf },
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkDefaults {
    /// Rate of generated topologies' links.
    #[serde(default = "default_rate")]
    pub rate: BitsPerSec,
    /// Propagation delay of generated topologies' links.
    #[serde(default = "default_delay")]
    pub delay: Time,
    /// Probability that a link corrupts (drops) a packet, on every link (at least the
    /// topology file's error rate).
    #[serde(default)]
    pub loss: f64,
    /// How every port times a frame: `"exact"` (bytes over the rate, to the picosecond) or
    /// `"ns3"` (ns-3's nanosecond truncation, [`crate::units::Serialization::Ns3`]; `config.txt`
    /// runs set it). The NICs' pacing follows the same rule.
    #[serde(default, skip_serializing_if = "is_exact")]
    pub serialization: crate::units::Serialization,
}

fn is_exact(s: &crate::units::Serialization) -> bool {
    *s == crate::units::Serialization::Exact
}

fn default_rate() -> BitsPerSec {
    BitsPerSec::gbps(100)
}
fn default_delay() -> Time {
    Time::from_us(1)
}

impl Default for LinkDefaults {
    fn default() -> Self {
        LinkDefaults { rate: default_rate(), delay: default_delay(), loss: 0.0, serialization: Default::default() }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServiceKind {
    /// Class 0 first, then 1, …
    #[default]
    Strict,
    /// Deficit-weighted round robin by `weights`.
    Weighted,
    /// Class 0 first, then the others a packet each in turn (ns-3's `BEgressQueue::DoDequeueRR`).
    RoundRobin,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchSpec {
    /// Shared packet buffer per switch.
    #[serde(default = "default_buffer")]
    pub buffer: Bytes,
    /// Dynamic-threshold factor for lossy classes: a queue may hold `dt_alpha × free buffer`.
    #[serde(default = "one_f")]
    pub dt_alpha: f64,
    #[serde(default)]
    pub service: ServiceKind,
    /// Per-class weights for `service = "weighted"`.
    #[serde(default = "default_weights", deserialize_with = "exact::array")]
    pub weights: [u32; 8],
    /// The order a class's packets leave a switch port in: `fifo`, or `srpt` (the packet whose
    /// message has the fewest bytes left first).
    #[serde(default, skip_serializing_if = "is_fifo")]
    pub queue_order: QueueOrder,
    #[serde(default)]
    pub load_balancer: LbKind,
    /// How flows are hashed onto equal-cost ports (ECMP, and CONGA's and ConWeave's fallback):
    /// `seeded` (a seed per switch from the run's seed) or `ns3` (the ns-3 switch's hash, so
    /// that flows take ns-3's paths; `config.txt` runs use it).
    #[serde(default, skip_serializing_if = "is_seeded_hash")]
    pub ecmp_hash: crate::fabric::lb::EcmpHash,
    /// Transport control packets (ACKs, NAKs, CNPs) follow the flow hash (`ecmp_hash`) whatever
    /// the load balancer, as ns-3's switch sends them; `config.txt` runs set it. Off: the load
    /// balancer places them like data.
    #[serde(default, skip_serializing_if = "is_false")]
    pub control_by_hash: bool,
    /// Idle gap that starts a new flowlet (`load_balancer = "flowlet"`).
    #[serde(default = "default_flowlet_gap", skip_serializing_if = "is_default_flowlet_gap")]
    pub flowlet_gap: Time,
    /// Deflect a packet the buffer refuses to another switch-facing port that takes it (DIBS).
    #[serde(default, skip_serializing_if = "is_false")]
    pub deflection: bool,
    /// DRILL's d and m (`load_balancer = "drill"`).
    #[serde(default, skip_serializing_if = "is_default_drill")]
    pub drill: DrillSpec,
    /// CONGA's parameters (`load_balancer = "conga"`).
    #[serde(default, skip_serializing_if = "is_default_conga")]
    pub conga: CongaSpec,
    /// ConWeave's parameters (`load_balancer = "conweave"`).
    #[serde(default, skip_serializing_if = "is_default_conweave")]
    pub conweave: ConWeaveSpec,
    #[serde(default)]
    pub ecn: EcnSpec,
    #[serde(default)]
    pub pfc: PfcSpec,
}

/// LetFlow's gap for a 10G fabric is 500 µs (NSDI 2017, §5); RDMA fabrics at 100G drain a
/// flowlet far sooner, so the default is one fifth of it.
fn default_flowlet_gap() -> Time {
    Time::from_us(100)
}
fn is_default_flowlet_gap(t: &Time) -> bool {
    *t == default_flowlet_gap()
}
fn is_default_conweave(c: &ConWeaveSpec) -> bool {
    *c == ConWeaveSpec::default()
}
fn is_default_conga(c: &CongaSpec) -> bool {
    *c == CongaSpec::default()
}
fn is_seeded_hash(h: &crate::fabric::lb::EcmpHash) -> bool {
    *h == crate::fabric::lb::EcmpHash::Seeded
}

fn is_fifo(o: &QueueOrder) -> bool {
    *o == QueueOrder::Fifo
}
fn is_default_drill(d: &DrillSpec) -> bool {
    *d == DrillSpec::default()
}
fn default_buffer() -> Bytes {
    Bytes(9_000_000)
}
fn one_f() -> f64 {
    1.0
}
fn default_weights() -> [u32; 8] {
    [1; 8]
}

impl Default for SwitchSpec {
    fn default() -> Self {
        SwitchSpec {
            buffer: default_buffer(),
            dt_alpha: 1.0,
            service: ServiceKind::Strict,
            weights: default_weights(),
            queue_order: QueueOrder::Fifo,
            load_balancer: LbKind::Ecmp,
            ecmp_hash: crate::fabric::lb::EcmpHash::Seeded,
            control_by_hash: false,
            flowlet_gap: default_flowlet_gap(),
            deflection: false,
            drill: DrillSpec::default(),
            conga: CongaSpec::default(),
            conweave: ConWeaveSpec::default(),
            ecn: EcnSpec::default(),
            pfc: PfcSpec::default(),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EcnSpec {
    #[serde(default = "yes")]
    pub enabled: bool,
    /// The curve for ports whose rate has no entry in `per_rate`: no marks at or below `kmin`
    /// bytes of egress queue, all above `kmax`, and a probability rising linearly to `pmax` between.
    #[serde(default = "default_kmin")]
    pub kmin: Bytes,
    #[serde(default = "default_kmax")]
    pub kmax: Bytes,
    #[serde(default = "default_pmax")]
    pub pmax: f64,
    /// Curves by port rate, e.g. `per_rate."25Gbps" = { kmin = "50KB", kmax = "200KB", pmax = 0.2 }`.
    #[serde(default)]
    pub per_rate: std::collections::BTreeMap<String, EcnCurve>,
}

fn is_true(b: &bool) -> bool {
    *b
}

fn yes() -> bool {
    true
}

fn default_kmin() -> Bytes {
    Bytes(100_000)
}
fn default_kmax() -> Bytes {
    Bytes(400_000)
}
fn default_pmax() -> f64 {
    0.2
}

impl Default for EcnSpec {
    fn default() -> Self {
        EcnSpec { enabled: true, kmin: default_kmin(), kmax: default_kmax(), pmax: default_pmax(), per_rate: Default::default() }
    }
}

impl EcnSpec {
    /// The default curve (for rates without a `per_rate` entry).
    pub fn curve(&self) -> EcnCurve {
        EcnCurve { kmin: self.kmin, kmax: self.kmax, pmax: self.pmax }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PfcSpec {
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Lossless classes.
    #[serde(default = "default_lossless")]
    pub classes: Vec<u8>,
    /// Dynamic XOFF: `alpha × free shared buffer`. Ignored when `xoff` is set.
    #[serde(default = "default_pfc_alpha")]
    pub alpha: f64,
    /// A switch port faster than the hosts' NICs (the first host's link) has `alpha` doubled
    /// for each halving that brings its rate down to theirs, up to 1 (HPCC's simulator).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub alpha_by_rate: bool,
    /// A static XOFF threshold per ingress port and class.
    #[serde(default)]
    pub xoff: Option<Bytes>,
    /// RESUME when the ingress count falls this far below XOFF.
    #[serde(default = "default_xon_offset")]
    pub xon_offset: Bytes,
    /// Headroom reserved per port and lossless class; default two link BDPs plus two MTUs.
    #[serde(default)]
    pub headroom: Option<Bytes>,
    /// Headroom per port as this many of its link's one-way bandwidth-delay products, when
    /// `headroom` is not set (HPCC's `third.cc`: 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headroom_bdps: Option<u32>,
    /// Each ingress books what it admits past XOFF in its headroom, apart from its shared
    /// bytes: XOFF and the pool count only shared bytes, RESUME waits for the headroom to drain,
    /// and a full headroom drops (HPCC's `switch-mmu.cc`; `fabric/buffer.rs`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub headroom_apart: bool,
    /// Pause time carried by XOFF frames, in 512-bit-time quanta (refreshed while congested).
    #[serde(default = "default_quanta")]
    pub quanta: u16,
    /// Pause time carried by XOFF frames as a time (each port's quanta at its rate); replaces
    /// `quanta` when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_time: Option<Time>,
    /// When a congested ingress sends PAUSE: `"refresh"`, once when it crosses XOFF and again
    /// before the pause runs out; `"every_packet"`, for every data packet admitted while it is
    /// over XOFF, as ConWeave's ns-3 switch does (the upstream resumes by itself when none
    /// comes); `"until_resume"`, once, and the upstream holds it until the RESUME whatever its
    /// time, as HPCC's ns-3 does.
    #[serde(default, skip_serializing_if = "PfcResend::is_refresh")]
    pub resend: PfcResend,
    /// Buffer set aside for every port, outside the shared pool the dynamic XOFF divides.
    #[serde(default)]
    pub port_reserve: Bytes,
    /// Bytes of each ingress (port, class) that XOFF and XON do not count.
    #[serde(default)]
    pub ingress_reserve: Bytes,
}

/// `switch.pfc.resend`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PfcResend {
    #[default]
    Refresh,
    EveryPacket,
    UntilResume,
}

impl PfcResend {
    fn is_refresh(&self) -> bool {
        *self == PfcResend::Refresh
    }
}

fn default_lossless() -> Vec<u8> {
    vec![3]
}
fn default_pfc_alpha() -> f64 {
    0.125
}
fn default_xon_offset() -> Bytes {
    Bytes(3_000)
}
fn default_quanta() -> u16 {
    0xffff
}

impl Default for PfcSpec {
    fn default() -> Self {
        PfcSpec {
            enabled: true,
            classes: default_lossless(),
            alpha: default_pfc_alpha(),
            alpha_by_rate: false,
            xoff: None,
            xon_offset: default_xon_offset(),
            headroom: None,
            headroom_bdps: None,
            headroom_apart: false,
            quanta: default_quanta(),
            pause_time: None,
            resend: PfcResend::Refresh,
            port_reserve: Bytes(0),
            ingress_reserve: Bytes(0),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutingSpec {
    /// Delay between a link changing state and the routes that reflect it.
    #[serde(default = "default_recompute")]
    pub recompute_delay: Time,
    /// Route every connection over one of the k shortest switch paths between its hosts'
    /// switches (picked by its 5-tuple hash), carried in its packets, instead of per-hop ECMP
    /// (Jellyfish's k-shortest-path routing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k_shortest_paths: Option<u32>,
    /// Who picks among the k shortest paths: the connection once (its 5-tuple hash), or the
    /// source switch for every data packet.
    #[serde(default, skip_serializing_if = "PathChoice::is_connection")]
    pub path_choice: PathChoice,
    /// A switch takes its own ports whose links are down out of its candidate sets at once;
    /// `false` models failures the switch does not notice until the routes change (gray ones).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub local_failover: bool,
}

fn default_recompute() -> Time {
    Time::from_us(100)
}

impl Default for RoutingSpec {
    fn default() -> Self {
        RoutingSpec { recompute_delay: default_recompute(), k_shortest_paths: None, path_choice: PathChoice::Connection, local_failover: true }
    }
}

/// `routing.path_choice`: how a packet gets one of the k shortest paths.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathChoice {
    /// Each connection keeps the path its 5-tuple hash picks (flow-level KSP).
    #[default]
    Connection,
    /// The source switch picks a random path for every data packet.
    Packet,
    /// The source switch picks, for every data packet, the one of two random paths whose first
    /// port has fewer bytes queued (power of two choices over paths).
    PacketPowerOfTwo,
}

impl PathChoice {
    fn is_connection(&self) -> bool {
        *self == PathChoice::Connection
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkState {
    Down,
    Up,
}

/// `[[baseline]]`: this scenario with some keys changed (`set`, dotted keys as for `--set`,
/// TOML values) or taken out (`remove`, e.g. `"nic.ordering"` for a NIC without an ordering
/// layer). Only its summary is kept, under `baselines/<name>`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BaselineSpec {
    pub name: String,
    #[serde(default)]
    pub set: toml::Table,
    #[serde(default)]
    pub remove: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkEventSpec {
    pub at: Time,
    /// The two node ids the link joins.
    #[serde(deserialize_with = "exact::array")]
    pub between: [u32; 2],
    pub state: LinkState,
    /// Made by `[failures]`, not written in the scenario: the two hold a link down apart, and
    /// it comes back only once neither does.
    #[serde(skip)]
    pub generated: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Pattern {
    /// Every host sends to a distinct other host (a seeded random derangement).
    Permutation,
    /// `senders` all send to `receiver`; senders default to every other host.
    Incast {
        receiver: u32,
        #[serde(default)]
        senders: Option<Vec<u32>>,
    },
    /// Explicit `[src, dst]` pairs.
    Pairs { pairs: Vec<[u32; 2]> },
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Evenly spaced packets.
    #[default]
    Cbr,
    /// Exponentially distributed gaps.
    Poisson,
}

/// Plain packet sources (the fabric's own workload, before RDMA transport).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrafficSpec {
    pub pattern: Pattern,
    /// Offered load per sender as a fraction of its link rate.
    pub load: f64,
    #[serde(default = "default_packet")]
    pub packet_size: Bytes,
    #[serde(default)]
    pub arrival: Arrival,
    #[serde(default = "default_class")]
    pub priority: u8,
    #[serde(default)]
    pub start: Time,
    /// Defaults to the end of the run.
    #[serde(default)]
    pub stop: Option<Time>,
    /// Stop each sender after this many bytes.
    #[serde(default)]
    pub bytes: Option<Bytes>,
    /// Mark packets ECN-capable.
    #[serde(default = "yes")]
    pub ecn_capable: bool,
}

fn default_packet() -> Bytes {
    Bytes(1000)
}
fn default_class() -> u8 {
    3
}

/// Who sends flows to whom in a CDF workload.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum FlowPattern {
    /// Each flow goes to a uniformly random other host.
    AllToAll,
    /// Every host sends to one fixed other host (a seeded random derangement).
    Permutation,
    /// `senders` (default: every other host) send to `receiver`.
    Incast {
        receiver: u32,
        #[serde(default)]
        senders: Option<Vec<u32>>,
    },
    /// Queries (partition-aggregate incast): queries arrive at every host as a Poisson process
    /// so that it receives `load` of its link rate; each query starts one flow from each of
    /// `fan_in` distinct random other hosts to it at once, and completes with its last flow.
    Query { fan_in: u32 },
}

/// The verb a flow uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowVerb {
    #[default]
    Write,
    Read,
    Send,
}

/// How a flow workload numbers its connections' UDP ports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PortNumbering {
    /// A source port drawn per queue pair, destination port RoCEv2's 4791 (a flow file's
    /// destination port, when it gives one, is folded into the source port).
    #[default]
    Random,
    /// As ns-3's scratch programs number them: each host's flows take source ports 10000,
    /// 10001, … in the order they start, and the flows to a host destination ports 100, 101, …
    /// (or the flow file's port, in HPCC's format); the receiver's packets swap the two.
    /// ConWeave's fork (`network-load-balance.cc`).
    Ns3,
    /// As [`PortNumbering::Ns3`], but source ports count from 10000 per (source, destination)
    /// pair: HPCC's `third.cc` (`portNumder[src][dst]`).
    Hpcc,
}

/// An RDMA flow workload: every flow is a new connection carrying one message, closed when the
/// message completes (as HPCC's simulator does). Give either `cdf` (with `load` and `pattern`)
/// or `file`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowsSpec {
    /// A flow-size CDF file (HPCC style, percent or fraction), relative to the scenario file.
    #[serde(default)]
    pub cdf: Option<PathBuf>,
    /// An HPCC or ConWeave flow file, relative to the scenario file.
    #[serde(default)]
    pub file: Option<PathBuf>,
    /// Offered load per sender as a fraction of its host link (CDF workloads).
    #[serde(default)]
    pub load: Option<f64>,
    #[serde(default)]
    pub pattern: Option<FlowPattern>,
    #[serde(default)]
    pub verb: FlowVerb,
    #[serde(default)]
    pub start: Time,
    /// No new flows after this (default: the end of the run).
    #[serde(default)]
    pub stop: Option<Time>,
    /// UDP port numbering: `random` or `ns3` (what ns-3 gives, so that ECMP with
    /// `switch.ecmp_hash = "ns3"` puts each flow on ns-3's path).
    #[serde(default, skip_serializing_if = "is_random_ports")]
    pub ports: PortNumbering,
    /// How a flow file's start times in seconds become simulated time: `exact` (to the
    /// picosecond) or `ns3` (to the nanosecond below, as ns-3 takes them).
    #[serde(default, skip_serializing_if = "is_exact_starts")]
    pub start_times: StartTimes,
    /// What a flow file's row of 0 bytes becomes: `refuse` (an error naming its line) or
    /// `one_byte` (ConWeave's fork: `if (target_len == 0) target_len = 1;`).
    #[serde(default, skip_serializing_if = "is_refused_empty")]
    pub empty: EmptyFlows,
}

fn is_refused_empty(e: &EmptyFlows) -> bool {
    *e == EmptyFlows::Refuse
}

fn is_random_ports(p: &PortNumbering) -> bool {
    *p == PortNumbering::Random
}

fn is_exact_starts(s: &StartTimes) -> bool {
    *s == StartTimes::Exact
}

/// What a flow file's row of 0 bytes becomes (`flows[].empty`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EmptyFlows {
    /// An error naming its line: a flow needs at least one byte.
    #[default]
    Refuse,
    /// A flow of 1 byte, as ConWeave's fork runs it (`ScheduleFlowInputs` in
    /// `network-load-balance.cc`). HPCC's `third.cc` would start it and never finish it.
    OneByte,
}

/// How a flow file's start times, in seconds, become simulated time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StartTimes {
    /// The decimal written, rounded to the picosecond.
    #[default]
    Exact,
    /// As ns-3's scratch programs take them (`Seconds(flow_input.start_time)` in `third.cc` and
    /// ConWeave's `network-load-balance.cc`): the double nearest the decimal, cut down to whole
    /// nanoseconds, so that 2.000000171 s, held as 2.00000017099999…, starts at
    /// 2,000,000,170 ns.
    Ns3,
}

/// The perftest benchmark to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PerftestKind {
    WriteBw,
    ReadBw,
    SendBw,
    /// Ping-pong of WRITEs; latency is half the round trip, as `ib_write_lat` reports.
    WriteLat,
}

impl PerftestKind {
    /// The test's name as the scenario writes it (`"write_bw"`), which outputs use too.
    pub fn name(self) -> &'static str {
        match self {
            PerftestKind::WriteBw => "write_bw",
            PerftestKind::ReadBw => "read_bw",
            PerftestKind::SendBw => "send_bw",
            PerftestKind::WriteLat => "write_lat",
        }
    }
}

/// A perftest-like benchmark between a client and a server host.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerftestSpec {
    /// A label for reports.
    #[serde(default)]
    pub name: String,
    pub test: PerftestKind,
    pub client: u32,
    pub server: u32,
    /// Message size.
    pub message: Bytes,
    /// If set, each queue pair's message size is drawn once, uniformly from
    /// [`message`, `message_max`] (SCR Fig. 12), from the test's own random stream.
    #[serde(default)]
    pub message_max: Option<Bytes>,
    /// Queue pairs (bandwidth tests).
    #[serde(default = "one_u32")]
    pub qps: u32,
    /// WQEs kept outstanding per queue pair (bandwidth tests).
    #[serde(default = "default_tx_depth")]
    pub depth: u32,
    #[serde(default)]
    pub start: Time,
    /// Bandwidth and latency are measured from `start + warmup` to the end of the run.
    #[serde(default)]
    pub warmup: Time,
    /// Rate limit of each queue pair that sends the data (the client's; `read_bw`: the
    /// server's, which sends the responses), enforced by the NIC's scheduler beside
    /// congestion control.
    #[serde(default)]
    pub rate_limit: Option<BitsPerSec>,
    /// An application hint written when the test starts for each queue pair that sends the
    /// data, as `rate_limit` (SCR's host domain; `water_filling` takes it as the queue pair's
    /// weight).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<u32>,
    /// Where both ends' buffers are: host memory, or the GPU beside each NIC (perftest's
    /// `--use_cuda`, GPUDirect RDMA; needs `[nic.gpu]`).
    #[serde(default, skip_serializing_if = "BufferMemory::is_host")]
    pub memory: BufferMemory,
}

impl PerftestSpec {
    /// The host whose queue pairs send the data (a READ's server, whose responses carry it):
    /// where `rate_limit` and `hint` take effect.
    pub fn data_sender(&self) -> u32 {
        if self.test == PerftestKind::ReadBw { self.server } else { self.client }
    }

    /// The host whose queue pairs receive the data (a READ's client).
    pub fn data_receiver(&self) -> u32 {
        if self.test == PerftestKind::ReadBw { self.client } else { self.server }
    }
}

/// Where an application's buffers are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BufferMemory {
    #[default]
    Host,
    Gpu,
}

impl BufferMemory {
    fn is_host(&self) -> bool {
        *self == BufferMemory::Host
    }
}

fn one_u32() -> u32 {
    1
}
pub(crate) fn default_tx_depth() -> u32 {
    128
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    /// Sample every port's queue length at this interval into `queues.parquet` (off if unset).
    #[serde(default)]
    pub queue_interval: Option<Time>,
    /// Record every PFC frame received into `pfc.parquet`.
    #[serde(default = "yes")]
    pub pfc_events: bool,
    /// Also write HPCC's `fct.txt` and `pfc.txt` line formats.
    #[serde(default = "yes")]
    pub hpcc_text: bool,
    /// Sample every queue pair's rate and window at this interval into `rates.parquet`.
    #[serde(default)]
    pub rate_interval: Option<Time>,
    /// Capture the packets these ports send (global port ids, or `[node, interface]`) into
    /// `capture.pcap`.
    #[serde(default, deserialize_with = "exact::arrays")]
    pub pcap: Vec<[u32; 2]>,
    /// Also write HPCC's `fct.txt` / `pfc.txt` here (relative to the scenario file), as an ns-3
    /// config's FCT_OUTPUT_FILE and PFC_OUTPUT_FILE ask.
    #[serde(default)]
    pub fct_file: Option<PathBuf>,
    /// The `fct.txt` line format: `"hpcc"` (endpoints as hex IPv4 addresses) or `"conweave"`
    /// (decimal node ids); a ConWeave `config.txt` (one with CONWEAVE_* keys) sets the latter.
    #[serde(default, skip_serializing_if = "crate::output::hpcc_text::FctDialect::is_hpcc")]
    pub fct_dialect: crate::output::hpcc_text::FctDialect,
    #[serde(default)]
    pub pfc_file: Option<PathBuf>,
    /// Record every NIC transport event (TX, RX, ACK, NACK, CNP, CC timer) into
    /// `nic_events.parquet`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub nic_events: bool,
    /// Flow-size buckets for `summary.json`'s `rdma/by_size`: upper bounds in increasing order
    /// (a flow of exactly a bound falls in its bucket); larger flows make a last bucket `more`.
    /// Each bucket is named by its bound as rnicsim prints sizes (`"16KB"`, `"1MB"`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fct_by_size: Vec<Bytes>,
}

impl Default for OutputSpec {
    fn default() -> Self {
        OutputSpec { queue_interval: None, pfc_events: true, hpcc_text: true, rate_interval: None, pcap: Vec::new(), fct_file: None, fct_dialect: Default::default(), pfc_file: None, nic_events: false, fct_by_size: Vec::new() }
    }
}
