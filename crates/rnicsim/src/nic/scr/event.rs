//! SCR's events (paper §4.3.1, Table 3): what a collector hands to an event queue. One small
//! `Copy` record per event kind, the same record after coalescing (then `count` says how many
//! collected events it stands for, and `first_at`/`at` the span they covered).

use crate::nic::events::NicEvent;
use crate::units::Time;
use serde::{Deserialize, Serialize};

/// The event kinds of SCR's collectors: the fabric domain's in-band TX, RX, ACK, NACK, CNP and
/// RTT-probe response; the peer domain's out-of-band signal (credits, peer utilization); the
/// host domain's application hint (a value the application writes for its queue pair into a
/// region shared with the NIC); a policy's own wake-up (`Action::Wake`: a timer on the
/// cores, for deadlines no packet brings); and the host domain's node-level telemetry, sampled
/// by the NIC's telemetry threads every `nic.scr.telemetry` (A.10): PCIe utilization with a
/// ping-pong latency, and the NIC port's utilization.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Tx,
    Rx,
    Ack,
    Nack,
    Cnp,
    Rtt,
    Peer,
    Timer,
    Host,
    Pcie,
    Port,
}

impl Kind {
    pub const ALL: [Kind; 11] = [Kind::Tx, Kind::Rx, Kind::Ack, Kind::Nack, Kind::Cnp, Kind::Rtt, Kind::Peer, Kind::Timer, Kind::Host, Kind::Pcie, Kind::Port];
    pub const COUNT: usize = 11;
    /// The node-level kinds (no flow: [`NODE_FLOW`]), handled by the per-node thread pool.
    pub const NODE: [Kind; 2] = [Kind::Pcie, Kind::Port];

    pub fn index(self) -> usize {
        self as usize
    }

    /// Whether the NIC's ASIC collects it in its TX/RX pipes (and so can coalesce it in
    /// hardware, §4.3.2); RTT-probe responses and peer signals are out-of-band (A.11) and are
    /// collected by software on the cores, as are the host domain's hints (polled from memory).
    pub fn in_band(self) -> bool {
        !matches!(self, Kind::Rtt | Kind::Peer | Kind::Timer | Kind::Host | Kind::Pcie | Kind::Port)
    }

    /// Whether it is about the whole NIC rather than one flow (the telemetry samples).
    pub fn node_level(self) -> bool {
        matches!(self, Kind::Pcie | Kind::Port)
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Tx => "tx",
            Kind::Rx => "rx",
            Kind::Ack => "ack",
            Kind::Nack => "nack",
            Kind::Cnp => "cnp",
            Kind::Rtt => "rtt",
            Kind::Peer => "peer",
            Kind::Timer => "timer",
            Kind::Host => "host",
            Kind::Pcie => "pcie",
            Kind::Port => "port",
        }
    }
}

/// The `flow` of a node-level event.
pub const NODE_FLOW: u32 = u32::MAX;

/// One event, or several coalesced into one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScrEvent {
    pub kind: Kind,
    /// The queue pair (flow) it belongs to.
    pub flow: u32,
    /// When the (latest) event happened, and the earliest of those coalesced into it.
    pub at: Time,
    pub first_at: Time,
    /// TX: wire bytes sent; RX: payload received; ACK: bytes newly acknowledged; peer: the
    /// signal's padding bytes.
    pub bytes: u64,
    /// Collected events this one stands for.
    pub count: u32,
    /// ACK and RTT: the round-trip sample.
    pub rtt: Time,
    /// Peer: the signal's value (credits, utilization); host: the hint; RX: the ECN-marked
    /// packets among those it stands for (0 or 1 uncoalesced; `keep_latest` and `keep_oldest`
    /// keep the one event's);
    /// RTT: the UDP source port the probe took; PCIe: the host → NIC direction's utilization
    /// over the sampling period, per mille; port: the transmit utilization, per mille.
    pub value: u32,
    /// PCIe: the NIC → host direction's utilization, per mille; port: the receive utilization,
    /// per mille. (PCIe's `rtt` is the ping-pong's round trip.)
    pub aux: u32,
}

impl ScrEvent {
    /// The SCR view of a transport event, if SCR collects that kind.
    pub fn from_nic(at: Time, flow: u32, ev: &NicEvent) -> Option<ScrEvent> {
        let e = |kind, bytes, rtt, value| Some(ScrEvent { kind, flow, at, first_at: at, bytes, count: 1, rtt, value, aux: 0 });
        match *ev {
            NicEvent::Tx { bytes, .. } => e(Kind::Tx, bytes, Time::ZERO, 0),
            NicEvent::Rx { bytes, ecn } => e(Kind::Rx, bytes, Time::ZERO, ecn as u32),
            NicEvent::Ack(a) => e(Kind::Ack, a.acked_bytes, a.rtt, 0),
            NicEvent::Nack => e(Kind::Nack, 0, Time::ZERO, 0),
            NicEvent::Cnp => e(Kind::Cnp, 0, Time::ZERO, 0),
            NicEvent::RttProbe { rtt, sport } => e(Kind::Rtt, 0, rtt, sport as u32),
            NicEvent::Signal { value, bytes } => e(Kind::Peer, bytes as u64, Time::ZERO, value),
            NicEvent::Hint { value } => e(Kind::Host, 0, Time::ZERO, value),
            NicEvent::Timer => None,
        }
    }
}
