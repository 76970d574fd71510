//! The RDMA NIC: verbs interface ([`verbs`]), host memory ([`memory`]), PCIe and DMA ([`pcie`]),
//! queue pairs and their state ([`qp`]) in the connection table ([`qp_table`]), the on-chip
//! connection-state cache ([`state_cache`]), the receive buffer PCIe drains ([`rx_buffer`]),
//! the StaR stack for stateless connections
//! ([`star`]), the RoCEv2
//! reliable-connection transport with its loss recovery ([`transport`]), the event tap its
//! events go through ([`events`]), the QP scheduler ([`sched`]) and congestion control ([`cc`]).
//! `world/nic.rs` only wires these to the event loop and the host port.

pub mod cc;
pub mod events;
pub mod memory;
pub mod offload;
pub mod paused_qps;
pub mod payload_wait;
pub mod pcie;
pub mod qp;
pub mod qp_table;
pub mod rx_buffer;
pub mod sched;
pub mod scr;
pub mod stage;
pub mod star;
pub mod ordering;
pub mod state_cache;
pub mod transport;
pub mod verbs;

use crate::units::{Bytes, Time};
use cc::CcSpec;
use memory::HostMemory;
use pcie::{Pcie, PcieSpec};
use sched::{Scheduler, SchedulerSpec};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use verbs::Completion;

pub use transport::recovery::Recovery;

/// Whether host memory holds real bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryMode {
    SizeOnly,
    Bytes,
}

/// The scenario's `[nic]` table: one configuration for every host's NIC.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NicSpec {
    /// Which NIC the unset keys describe: the measured commodity NIC, or ns-3's RDMA NIC
    /// (see [`NicProfile`]). Keys set in the scenario always win.
    #[serde(default)]
    pub profile: NicProfile,
    /// Payload bytes per packet (the path MTU less headers; HPCC's PACKET_PAYLOAD_SIZE).
    #[serde(default = "default_mtu")]
    pub mtu: u32,
    /// Traffic class of RDMA packets: 3 by default, the class `[switch.pfc]` makes lossless by
    /// default, as RoCE deployments configure it (NVIDIA's RoCE guides map RoCE to priority 3
    /// with PFC on priority 3; HPCC's and ConWeave's ns-3 flow files put data in class 3).
    #[serde(default = "default_priority")]
    pub priority: u8,
    /// Traffic class of ACKs, NAKs and CNPs (default, or `"data"`: each queue pair's data class).
    #[serde(default, deserialize_with = "class_or_data", serialize_with = "class_or_data_out")]
    pub ack_priority: Option<u8>,
    /// ACKs, NAKs and CNPs leave the host ahead of everything queued and are never held by a
    /// PAUSE of their class (HPCC's NIC with ACK_HIGH_PRIO 1: its ACK queue waits only on
    /// class 0's pause, which its switches never send, while they travel in the data's class).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ack_unpaused: bool,
    /// How the NIC's port serves its traffic classes: unset, strict priority (class 0 first);
    /// set, deficit round robin by these per-class weights (ETS, as a NIC's per-class
    /// bandwidth shares are configured), each quantum weight × 1500 B.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "crate::scenario::exact::option_array")]
    pub weights: Option<[u32; 8]>,
    /// The receiver acknowledges every this many packets (and always a message's last).
    #[serde(default = "default_ack_interval")]
    pub ack_interval: u32,
    /// Bytes of in-band telemetry every data packet and every ACK or NAK carries on the wire
    /// (ns-3's `IntHeader`: 42 under HPCC, 8, a timestamp, under TIMELY; `config.txt` runs set
    /// it). The telemetry itself travels beside the packet whatever this says; the ideal FCT
    /// leaves these bytes out, as ns-3's `qp_finish` does.
    #[serde(default)]
    pub telemetry_bytes: u32,
    /// The bytes of headers each packet carries on the wire: RoCEv2's (the default), or those
    /// of the packets of HPCC's or ConWeave's ns-3 (see [`Headers`]). The `ns3` profile sets
    /// `"ns3_hpcc"`; `config.txt` runs set the one of the simulator they come from.
    #[serde(default, skip_serializing_if = "Headers::is_rocev2")]
    pub headers: Headers,
    #[serde(default = "default_recovery")]
    pub recovery: Recovery,
    /// Retransmission timeout and the retries before a retry-exceeded error.
    #[serde(default = "default_rto")]
    pub rto: Time,
    /// IRN's RTO_low (§3.1): with at most `packets` in flight, the timeout is `rto`, shorter,
    /// since a tail loss then has no later packet to reveal it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rto_few: Option<RtoFew>,
    /// A retransmission timeout that expires does nothing (the next send or ACK arms it again):
    /// ns-3's IRN with PFC on (`RdmaHw::HandleTimeout` returns when the NIC's `QbbEnabled` is
    /// set). The `ns3` profile sets it under selective repeat with PFC when `nic.rto` is left
    /// unset; written out (a run folder's `scenario.toml`) only when set.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rto_inert: bool,
    #[serde(default = "default_retry")]
    pub retry_count: u32,
    /// How long a sender waits after an RNR NAK (a SEND that found no receive posted).
    #[serde(default = "default_rnr_timer")]
    pub rnr_timer: Time,
    /// RNR NAKs retried before an RNR-retry-exceeded error: 0 to 7, the InfiniBand QP attribute,
    /// where 7 ([`RNR_RETRY_FOREVER`], PerfTest's and the default) retries until the receiver
    /// posts a buffer. An RNR NAK spends none of the `retry_count` timeouts.
    #[serde(default = "default_retry")]
    pub rnr_retry: u32,
    /// The receiver sends at most one CNP per queue pair per this interval (default 4 µs,
    /// ConnectX firmware's `MIN_TIME_BETWEEN_CNPS`, matching its reaction point's 4 µs
    /// `rate_reduce_monitor_period`; the DCQCN paper used 50 µs).
    #[serde(default = "default_cnp_interval")]
    pub cnp_interval: Time,
    /// Go-back-N: a responder still waiting for the same PSN NAKs it again once this long has
    /// passed since its last NAK (ns-3's NIC, `RdmaHw::ReceiverCheckSeq` with its 4 µs
    /// `NACK Generation Interval`). Unset (the default): one NAK per gap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nak_interval: Option<Time>,
    /// How the receiver tells the sender of ECN marks: CNP packets (RoCEv2), or a flag on the
    /// ACK or NAK of every marked packet (HPCC's and ConWeave's ns-3 NIC).
    #[serde(default)]
    pub cnp: CnpMode,
    /// What a rate change does to the wait a paced queue pair's last packet opened.
    #[serde(default)]
    pub pace_retime: PaceRetime,
    /// How far a paced queue pair's rate limiter may bank the time it waited, data and tokens
    /// ready, for the scheduler to pick it (a token bucket's depth, in bytes at its rate): a
    /// queue pair that waited out another's turn catches up with back-to-back packets instead
    /// of losing the turn's time on every packet. Time with nothing to send is never banked.
    /// 0 (the default): the next gap runs from the send, as ns-3's `m_nextAvail` does and as
    /// SCR Fig. 10b's one packet per event at 1024 rate-limited queue pairs suggests BlueField-3
    /// does (a bank lets oversubscribed limits send their turns in bursts).
    #[serde(default)]
    pub pace_burst: Bytes,
    /// Send queue, receive queue and completion queue depths.
    #[serde(default = "default_depth")]
    pub sq_depth: u32,
    #[serde(default = "default_depth")]
    pub rq_depth: u32,
    /// Bytes of NIC-side connection context per queue pair (StaR's concern).
    #[serde(default = "default_qp_context")]
    pub qp_context_bytes: u32,
    #[serde(default)]
    pub scheduler: SchedulerSpec,
    #[serde(default)]
    pub cc: CcSpec,
    #[serde(default)]
    pub pcie: PcieSpec,
    /// The receive packet buffer: payload waits in it until its PCIe (or GPU) write is through,
    /// so a receiver whose write channel is slower than its link fills it ([`rx_buffer`]).
    #[serde(default = "default_rx_buffer")]
    pub rx_buffer: Bytes,
    /// What a full receive buffer does: `"pause"` sends PFC PAUSE for the data's class,
    /// `"drop"` drops the arrival. Unset: pause where the switches run PFC for `nic.priority`,
    /// drop elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_when_full: Option<state_cache::WhenFull>,
    /// A GPU beside the NIC (`[nic.gpu]`, SCR A.9's GPUDirect RDMA): queue pairs whose buffers
    /// are in its memory move their payload over this peer-to-peer PCIe path instead of the
    /// host's; WQEs and CQEs stay in host memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<PcieSpec>,
    /// Host memory per host, and whether it holds real bytes.
    #[serde(default = "default_memory_size")]
    pub memory_size: Bytes,
    #[serde(default = "default_memory_mode")]
    pub memory: MemoryMode,
    /// Data bytes the NIC commits to its transmit pipeline ahead of the wire (at least one
    /// packet). The scheduler decides at the pipeline's entry, so a new message waits behind
    /// this much; 64 KiB reproduces SCR Table 2's latency under a bandwidth-hungry QP. `"0B"`:
    /// no pipeline, the scheduler picks each packet when the port frees (ns-3's NIC).
    #[serde(default = "default_tx_pipeline")]
    pub tx_pipeline: Bytes,
    /// Messages up to this size are copied into the WQE by the host (inline), saving the
    /// payload DMA read (perftest inlines small messages).
    #[serde(default)]
    pub inline_bytes: u32,
    /// Bytes in flight allowed under selective repeat (default: one bandwidth-delay product,
    /// the queue pair's own path's; under the `ns3` profile the fabric's largest, ns-3's
    /// `IrnBdp` = maxBdp).
    #[serde(default)]
    pub window: Option<Bytes>,
    /// A window on every queue pair's bytes in flight, beside its congestion control (HPCC's
    /// and ConWeave's ns-3 HAS_WIN and VAR_WIN); none unless set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cc_window: Option<CcWindow>,
    /// SCR on the NIC's cores (`[nic.scr]`; off if absent): event collectors, coalescing
    /// queues, threads and a policy that sets queue pairs' dequeue rates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scr: Option<scr::ScrSpec>,
    /// A limit on the connection state the NIC holds on chip (`[nic.state_cache]`; off if
    /// absent: every connection's state is on the NIC). See [`state_cache`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_cache: Option<state_cache::StateCacheSpec>,
    /// A receiver ordering layer (`[nic.ordering]`; off if absent): out-of-order data is
    /// tracked in a bitmap and answered with SACKs. See [`ordering`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordering: Option<ordering::OrderingSpec>,
    /// The StaR stack's timers, negotiation and security check (`[nic.star]`; defaults if
    /// absent). See [`star`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub star: Option<star::StarSpec>,
}

/// A coherent set of NIC behaviours, applied to the `[nic]` keys a scenario leaves unset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NicProfile {
    /// The commodity RDMA NIC this project measures against (SCR Table 2, Tassel Fig. 14):
    /// whole-WQE round robin, a 64 KiB transmit pipeline, PCIe costs, CNP packets.
    #[default]
    Commodity,
    /// The RDMA NIC of HPCC's and ConWeave's ns-3 simulators (`docs/rdma.md` cites each rule):
    /// per-packet round robin with no decision cost, no transmit pipeline, no PCIe, ACKs in
    /// class 0 ahead of data, CNP flags on ACKs, DCQCN's polled rate decrease, and ns-3's ideal
    /// FCT (base RTT plus the message's wire bytes at the path's rate). `config.txt` runs use it.
    Ns3,
}

/// Which packets' header bytes the NIC's frames carry (`nic.headers`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Headers {
    /// RoCEv2's (`wire::roce`): Ethernet, IPv4, UDP, BTH, ICRC and FCS, 62 B, with a RETH,
    /// AETH or ImmDt where the opcode carries one.
    #[default]
    Rocev2,
    /// The packets of HPCC's ns-3: a data packet is its payload and 48 B (PPP 14, IPv4 20,
    /// UDP 8, `SeqTsHeader` 6: `RdmaHw::GetNxtPacket`), whatever its verb or position; an ACK
    /// or NAK is PPP, IPv4 and a 12 B `qbbHeader`, padded to 60 B (`RdmaHw::ReceiveUdp`). The
    /// telemetry (`telemetry_bytes`, the `IntHeader`) rides on both, an ACK's before padding.
    Ns3Hpcc,
    /// ConWeave's fork of it: the same, but its `qbbHeader` has 6 B more for IRN (18 B), which
    /// shows once an ACK carries HPCC's telemetry (94 B against 88).
    Ns3Conweave,
}

impl Headers {
    fn is_rocev2(&self) -> bool {
        *self == Headers::Rocev2
    }

    /// Bytes beyond the payload of a packet of opcode `op` without the telemetry or an
    /// ordering layer's header; `extra`, those bytes, which an ns-3 ACK's padding absorbs.
    /// ns-3 has no READ and no CNP packet: a READ's request and responses are sized as its
    /// data packets, a CNP as its ACK; out-of-band signals and probes keep RoCEv2's sizes.
    #[inline]
    pub fn bytes(self, op: crate::wire::roce::Opcode, extra: u32) -> u32 {
        use crate::wire::roce::Family;
        const NS3_DATA: u32 = 48;
        const NS3_MIN_FRAME: u32 = 60;
        let ack_base = match self {
            Headers::Rocev2 => return op.header_bytes() + extra,
            Headers::Ns3Hpcc => 14 + 20 + 12,
            Headers::Ns3Conweave => 14 + 20 + 18,
        };
        match op.family() {
            Family::Write | Family::Send | Family::ReadRequest | Family::ReadResponse => NS3_DATA + extra,
            Family::Ack | Family::Cnp => (ack_base + extra).max(NS3_MIN_FRAME),
            Family::OutOfBand => op.header_bytes() + extra,
        }
    }
}

/// What a rate change does to the pacing wait already under way (`nic.pace_retime`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PaceRetime {
    /// A rate limiter's token bucket: the part of the wait still to run is paid at the new rate
    /// (a wait of 10 µs with 4 µs left, the rate doubled, ends 2 µs from now).
    #[default]
    Remaining,
    /// The whole gap is re-timed as if the last packet had left at the new rate: it ends its
    /// size over the new rate after it started (`RdmaHw::ChangeRate` in HPCC's and ConWeave's
    /// ns-3 NIC, which only HPCC's rate updates call).
    WholeGap,
    /// The wait runs out at the rate in force when the packet left (ns-3's DCQCN, DCTCP and
    /// TIMELY, which set `m_rate` directly).
    None,
}

/// What the `ns3` profile puts for PCIe: no latency and a bandwidth so large that every
/// transfer takes a picosecond (ns-3's NIC reads and writes host memory for free).
pub const UNBOUNDED_PCIE: crate::units::BitsPerSec = crate::units::BitsPerSec(1_000_000_000_000_000_000);

/// How congestion notifications travel from the receiver (notification point) to the sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CnpMode {
    /// A CNP packet per queue pair at most once per `nic.cnp_interval` (RoCEv2 Annex A17).
    #[default]
    Packet,
    /// No CNP packets: the ACK or NAK answering a CE-marked packet, or an out-of-order one,
    /// carries a CNP flag and the sender's congestion control takes it as a CNP
    /// (`RdmaHw::ReceiveUdp` sets `qbbHeader::SetCnp`, `RdmaHw::ReceiveAck` calls
    /// `cnp_received_mlx`).
    AckFlag,
}

/// `[nic.cc_window]`: the in-flight cap ns-3's RDMA NIC applies when HAS_WIN is 1
/// (`RdmaQueuePair::GetWin` and `IsWinBound` in HPCC's and ConWeave's simulators).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CcWindow {
    /// The window; unset, the largest bandwidth-delay product between any two hosts (the
    /// pair's RTT times its path's slowest link), as ns-3's `maxBdp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<Bytes>,
    /// Scale the window by the queue pair's current rate over its line rate (VAR_WIN 1).
    #[serde(default)]
    pub with_rate: bool,
    /// Each queue pair's window is its own path's bandwidth-delay product (its RTT times the
    /// path's slowest link: ns-3's GLOBAL_T 0, `pairBdp`) rather than `bytes`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub per_pair: bool,
}

fn default_rx_buffer() -> Bytes {
    rx_buffer::DEFAULT_BYTES
}
fn default_tx_pipeline() -> Bytes {
    Bytes(64 * 1024)
}
fn default_mtu() -> u32 {
    1000
}
fn default_ack_interval() -> u32 {
    1
}
fn default_recovery() -> Recovery {
    Recovery::GoBackN
}
/// The InfiniBand local ACK timeout 4.096 µs × 2^`timeout` at `timeout` = 14 (67.108864 ms):
/// PerfTest's default QP attribute, and the order of what RoCE deployments configure (14–18,
/// 67 ms to 1 s). A millisecond-scale timer fires while READs merely wait for a busy responder.
fn default_rto() -> Time {
    Time(4_096_000 << 14)
}
/// `nic.rto_few`: the timeout of a queue pair with few packets in flight.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RtoFew {
    pub rto: Time,
    pub packets: u32,
}

impl NicSpec {
    /// Bytes a packet of `family` carries beyond its RoCE headers: the ordering layer's header
    /// on the data it orders (WRITEs, SENDs, READ requests and responses), and the telemetry
    /// on those and on acknowledgements.
    #[inline]
    pub fn extra_header_bytes(&self, family: crate::wire::roce::Family) -> u32 {
        use crate::wire::roce::Family;
        match family {
            Family::Write | Family::Send | Family::ReadRequest | Family::ReadResponse => self.ordering.as_ref().map_or(0, |o| o.header_bytes()) + self.telemetry_bytes,
            Family::Ack => self.telemetry_bytes,
            Family::Cnp | Family::OutOfBand => 0,
        }
    }

    /// Bytes a packet of opcode `op` carries on the wire beyond its payload: its headers in
    /// the NIC's format (`headers`) and [`NicSpec::extra_header_bytes`].
    #[inline]
    pub fn header_bytes(&self, op: crate::wire::roce::Opcode) -> u32 {
        self.headers.bytes(op, self.extra_header_bytes(op.family()))
    }

    /// The retransmission timeout of a queue pair with `in_flight` packets outstanding.
    #[inline]
    pub fn rto_for(&self, in_flight: u64) -> Time {
        match self.rto_few {
            Some(f) if in_flight <= f.packets as u64 => f.rto,
            _ => self.rto,
        }
    }
}

/// The `rnr_retry` value that never gives up (InfiniBand: "7 indicates infinite retry").
pub const RNR_RETRY_FOREVER: u32 = 7;

fn default_retry() -> u32 {
    7
}
fn default_rnr_timer() -> Time {
    Time::from_us(10)
}
fn default_priority() -> u8 {
    3
}
fn default_cnp_interval() -> Time {
    Time::from_us(4)
}
fn default_depth() -> u32 {
    1024
}
fn default_qp_context() -> u32 {
    256
}
pub fn default_memory_size() -> Bytes {
    Bytes(1 << 40)
}
fn default_memory_mode() -> MemoryMode {
    MemoryMode::SizeOnly
}

/// `nic.ack_priority`: a class, or `"data"` for each queue pair's own data class (`None`), which
/// a profile that sets another class (`ns3`: 0) then leaves alone.
fn class_or_data<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u8>, D::Error> {
    struct ClassOrData;
    impl serde::de::Visitor<'_> for ClassOrData {
        type Value = Option<u8>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a class 0-7 or \"data\" (each queue pair's own data class)")
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Option<u8>, E> {
            u8::try_from(v).map(Some).map_err(|_| E::custom(format!("expected a class 0-7 or \"data\", got {v}")))
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Option<u8>, E> {
            u8::try_from(v).map(Some).map_err(|_| E::custom(format!("expected a class 0-7 or \"data\", got {v}")))
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Option<u8>, E> {
            if v == "data" {
                Ok(None)
            } else {
                Err(E::custom(format!("expected a class 0-7 or \"data\" (each queue pair's own data class), got \"{v}\"")))
            }
        }
    }
    d.deserialize_any(ClassOrData)
}

fn class_or_data_out<S: serde::Serializer>(c: &Option<u8>, s: S) -> Result<S::Ok, S::Error> {
    match c {
        Some(c) => s.serialize_u8(*c),
        None => s.serialize_str("data"),
    }
}

impl Default for NicSpec {
    fn default() -> Self {
        toml::from_str("").expect("every [nic] key has a default")
    }
}

impl NicSpec {
    /// Gives the keys of `[nic]` that the scenario did not set (`set`: its `[nic]` table) the
    /// values of the profile; `pfc`: whether the switches run PFC (`switch.pfc.enabled`, ns-3's
    /// ENABLE_PFC, which also sets its NICs' `QbbEnabled`).
    pub fn apply_profile(&mut self, set: Option<&toml::Table>, pfc: bool) {
        if self.profile != NicProfile::Ns3 {
            return;
        }
        // Whether the scenario set the key at `path` (tables, then the key).
        let has = |path: &[&str]| {
            let (key, tables) = path.split_last().expect("a key");
            tables.iter().fold(set, |t, k| t.and_then(|t| t.get(*k)).and_then(toml::Value::as_table)).is_some_and(|t| t.contains_key(*key))
        };
        if !has(&["scheduler"]) {
            self.scheduler = SchedulerSpec::PacketRoundRobin {};
        }
        if !has(&["tx_pipeline"]) {
            self.tx_pipeline = Bytes(0);
        }
        if !has(&["cnp"]) {
            self.cnp = CnpMode::AckFlag;
        }
        if !has(&["headers"]) {
            self.headers = Headers::Ns3Hpcc;
        }
        if !has(&["pace_retime"]) {
            self.pace_retime = if matches!(self.cc, CcSpec::Hpcc(_)) { PaceRetime::WholeGap } else { PaceRetime::None };
        }
        if !has(&["nak_interval"]) {
            self.nak_interval = Some(Time::from_us(4));
        }
        if !has(&["rto"]) {
            // ConWeave's fork: go-back-N times out after 4 ms (`m_timeout`, armed on every
            // ACK); IRN after 320 µs, or 100 µs with at most 4 packets in flight (its RTO_high
            // and RTO_low: `RdmaQueuePair::GetRto` takes RTO_high once `m_max_seq -
            // m_highest_ack`, from the cumulative ACK to the start of the last packet sent,
            // exceeds 3 MTUs, i.e. from the 5th packet out).
            let irn = self.recovery == Recovery::SelectiveRepeat;
            self.rto = if irn { Time::from_us(320) } else { Time::from_ms(4) };
            if irn && !has(&["rto_few"]) {
                self.rto_few = Some(RtoFew { rto: Time::from_us(100), packets: 4 });
            }
            // With PFC on, IRN's timeouts do nothing (`RdmaHw::HandleTimeout`: "disable
            // timeouts when PFC is enabled to prevent spurious retransmissions").
            if !has(&["rto_inert"]) {
                self.rto_inert = irn && pfc;
            }
        }
        if !has(&["ack_priority"]) {
            self.ack_priority = Some(0);
        }
        if !has(&["pcie", "latency"]) {
            self.pcie.latency = Time::ZERO;
        }
        if !has(&["pcie", "bandwidth"]) {
            self.pcie.bandwidth = UNBOUNDED_PCIE;
        }
        if let CcSpec::Dcqcn(p) = &mut self.cc {
            if !has(&["cc", "dcqcn", "reaction"]) {
                p.reaction = cc::dcqcn::Reaction::Polled;
            }
        }
    }

    /// The class of the ACKs, NAKs, CNPs and other control packets of a queue pair whose data
    /// goes in class `data`: `ack_priority` if set, else the data's own class (a flow file's
    /// class, or `priority`), so a lossless flow's control packets are lossless too.
    pub fn ack_class(&self, data: u8) -> u8 {
        self.ack_priority.unwrap_or(data)
    }
}

/// One host's NIC.
pub struct Nic {
    pub host: u32,
    pub node: u32,
    /// The host's egress port and its rate.
    pub port: u32,
    pub line_rate: crate::units::BitsPerSec,
    /// How the host's port times a frame, which the pacing of its queue pairs follows
    /// (`links.serialization`).
    pub serialization: crate::units::Serialization,
    pub sched: Scheduler,
    /// The scheduler's decision circuit (its hardware cost model: one decision per
    /// `decision_time`).
    pub sched_stage: stage::Stage,
    /// Whether the scheduler was told the data class is paused.
    pub sched_paused: bool,
    pub pcie: Pcie,
    /// The GPU's peer-to-peer path (`[nic.gpu]`).
    pub gpu: Option<Pcie>,
    pub memory: HostMemory,
    /// Queue pairs held back because their class is paused by PFC, per class.
    pub parked: paused_qps::PausedQps,
    /// Completions not yet taken by the host (tests and the verbs API read these).
    pub cq: VecDeque<Completion>,
    pub active_qps: u32,
    pub peak_qps: u32,
    /// Retransmitted packets and timeouts, for the summary.
    pub retransmits: u64,
    pub timeouts: u64,
    /// SENDs (and WRITEs with immediate) this NIC refused for want of a posted receive (RNR NAKs).
    pub rnr_naks: u64,
    /// Scheduler decisions for queue pairs that had nothing to send.
    pub wasted_picks: u64,
    /// Fetched-and-dropped packets already charged to PCIe.
    pub dropped_seen: u64,
    /// Reused buffer for payload DMA reads (real-bytes memory).
    pub scratch: Vec<u8>,
    /// The receive packet buffer the PCIe write channel drains (`nic.rx_buffer`).
    pub rx: rx_buffer::RxBuffer,
    /// Since when the NIC has held its link partner paused (for its receive buffer or its
    /// state cache's), if it does.
    pub pfc_since: Option<Time>,
    /// The traffic classes it pauses then, one bit each ([`rx_buffer::pause_classes`]).
    pub pfc_classes: u8,
    /// Scheduled packets waiting for their payload read before the wire (PCIe or the GPU
    /// path slower than the port), and the queue pairs parked while their path's wait is full.
    pub payload_wait: payload_wait::PayloadWait,
    /// The connection-state cache and the packets waiting for it (`[nic.state_cache]`).
    pub state: Option<state_cache::NicStateCache>,
    /// The receiver ordering layer (`[nic.ordering]`).
    pub ordering: Option<ordering::NicOrdering>,
    /// The StaR stack beside the RoCE one.
    pub star: star::NicStar,
    /// The host library's record of each region's protection domain (by lkey; 0 if absent).
    pub star_region_pd: std::collections::BTreeMap<u32, u32>,
}

impl Nic {
    /// A data packet came again (below its stream's expected PSN, or answering a READ already
    /// complete): counted by the ordering layer, if the NIC has one.
    pub fn note_duplicate(&mut self) {
        if let Some(o) = self.ordering.as_mut() {
            o.note_duplicate();
        }
    }

    /// The index of the payload path a queue pair uses (0 the host's PCIe, 1 the GPU's).
    pub fn path_index(&self, gpu: bool) -> usize {
        (gpu && self.gpu.is_some()) as usize
    }

    /// The PCIe path a queue pair's payload takes: the GPU's if its buffers are there.
    #[inline]
    pub fn payload_path(&mut self, gpu: bool) -> &mut Pcie {
        match (&mut self.gpu, gpu) {
            (Some(g), true) => g,
            _ => &mut self.pcie,
        }
    }

    pub fn new(host: u32, node: u32, port: u32, spec: &NicSpec, link: crate::units::BitsPerSec) -> Nic {
        Nic {
            host,
            node,
            port,
            line_rate: link,
            serialization: Default::default(),
            sched: spec.scheduler.build(link),
            sched_stage: stage::Stage::default(),
            sched_paused: false,
            pcie: Pcie::new(spec.pcie),
            gpu: spec.gpu.map(Pcie::new),
            memory: HostMemory::new(spec.memory_size.0, spec.memory == MemoryMode::Bytes),
            parked: Default::default(),
            cq: VecDeque::new(),
            active_qps: 0,
            peak_qps: 0,
            retransmits: 0,
            timeouts: 0,
            rnr_naks: 0,
            wasted_picks: 0,
            dropped_seen: 0,
            scratch: Vec::new(),
            // Drop mode until the world knows whether its fabric is lossless (`World::build`).
            rx: rx_buffer::RxBuffer::new(spec.rx_buffer, state_cache::WhenFull::Drop, None),
            pfc_since: None,
            pfc_classes: 1 << spec.priority,
            payload_wait: Default::default(),
            state: None,
            ordering: spec.ordering.as_ref().map(ordering::NicOrdering::new),
            star: star::NicStar::default(),
            star_region_pd: Default::default(),
        }
    }
}
