//! Congestion control behind a small trait whose events mirror what NIC vendors expose to
//! programmable congestion control (NVIDIA's PCC, Broadcom's): a TX burst, an ACK, a NACK, a CNP,
//! an RTT response and a timer. Each algorithm keeps a small fixed per-flow context (its struct)
//! and outputs a rate, optionally a window, and whether it wants an RTT probe.
//!
//! Algorithms, one file each: [`none`] (line rate), [`dcqcn`], [`dctcp`], [`timely`], [`hpcc`],
//! and the multipath transport [`mprdma`], which also picks each packet's virtual path.
//! The NIC calls them through [`Cc`], an enum of the concrete types (no trait objects).

pub mod dcqcn;
pub mod dctcp;
pub mod hpcc;
pub mod mprdma;
pub mod none;
pub mod timely;

use crate::units::{BitsPerSec, Time};
use serde::{Deserialize, Serialize};

pub use crate::wire::int::{IntHop, IntStack, MAX_INT_HOPS};

/// What an ACK tells the sender.
#[derive(Clone, Copy, Debug)]
pub struct Ack<'a> {
    /// Bytes newly acknowledged by this ACK.
    pub acked_bytes: u64,
    /// The acknowledged sequence and the next to send, in PSN × MTU bytes (for once-per-window
    /// logic; a go-back-N rewind moves the next one back).
    pub acked_seq: u64,
    pub next_seq: u64,
    /// RTT measured from the echoed timestamp.
    pub rtt: Time,
    /// The receiver saw an ECN mark (DCTCP-style echo).
    pub ecn_echo: bool,
    /// Switch telemetry (HPCC).
    pub int: Option<&'a IntStack>,
    /// The oldest PSN not yet acknowledged, after this ACK (the cumulative acknowledgement).
    pub una: u64,
    /// The PSN whose arrival this ACK reports (the one that arrived, for per-packet ACKs);
    /// [`crate::nic::transport::recovery::NO_SACK`] for a sequence NAK whose packet was not kept.
    pub psn: u64,
    /// The UDP source port (virtual path) the reported packet was sent on.
    pub path: u16,
    /// The reported packet arrived ahead of the expected one and was kept (a SACK): it is
    /// acknowledged, the cumulative acknowledgement did not move.
    pub sack: bool,
}

/// What every algorithm knows of its flow when created.
#[derive(Clone, Copy, Debug)]
pub struct FlowParams {
    pub line_rate: BitsPerSec,
    /// Base round-trip time of the path (propagation + one packet's serialization per hop).
    pub base_rtt: Time,
    /// Bytes per full packet on the wire.
    pub mtu: u32,
    /// Payload bytes per full packet (`nic.mtu`): the unit of the byte sequences ACKs report.
    pub payload: u32,
    /// The flow's own random stream seed (from the scenario seed and the queue pair).
    pub seed: u64,
}

/// The hook every algorithm implements. `now` is always passed in; none reads a clock.
pub trait CongestionControl {
    /// A burst of `bytes` in `packets` left the NIC.
    fn on_tx(&mut self, _now: Time, _bytes: u64, _packets: u32) {}
    fn on_ack(&mut self, _now: Time, _ack: &Ack) {}
    /// The receiver reported a gap (or the sender timed out).
    fn on_nack(&mut self, _now: Time) {}
    fn on_cnp(&mut self, _now: Time) {}
    /// The time returned by [`CongestionControl::next_timer`] was reached.
    fn on_timer(&mut self, _now: Time) {}
    fn next_timer(&self) -> Option<Time> {
        None
    }
    /// The sending rate.
    fn rate(&self) -> BitsPerSec;
    /// Bytes allowed in flight, if windowed.
    fn window(&self) -> Option<u64> {
        None
    }
    /// Packets allowed in flight, for a control that counts packets rather than bytes (the
    /// transport then takes this, not `window` over the MTU, which rounds up).
    fn packet_window(&self) -> Option<u64> {
        None
    }
    /// Ask the NIC to have the next packet acknowledged at once, for an RTT sample.
    fn wants_rtt_probe(&self) -> bool {
        false
    }
    /// The UDP source port (virtual path) of the next packet, for a multipath transport;
    /// `None` keeps the queue pair's own port.
    fn next_path(&mut self) -> Option<u16> {
        None
    }
    /// Whether the receiver must acknowledge every packet, and the sender report every ACK and
    /// SACK (with the path it answers) here.
    fn acks_every_packet(&self) -> bool {
        false
    }
}

/// Which algorithm, with its parameters (the scenario's `[nic.cc]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum CcSpec {
    None {},
    Dcqcn(dcqcn::DcqcnParams),
    Dctcp(dctcp::DctcpParams),
    Timely(timely::TimelyParams),
    Hpcc(hpcc::HpccParams),
    Mprdma(mprdma::MprdmaParams),
}

impl Default for CcSpec {
    fn default() -> Self {
        CcSpec::Dcqcn(dcqcn::DcqcnParams::default())
    }
}

impl CcSpec {
    pub fn name(&self) -> &'static str {
        match self {
            CcSpec::None {} => "none",
            CcSpec::Dcqcn(_) => "dcqcn",
            CcSpec::Dctcp(_) => "dctcp",
            CcSpec::Timely(_) => "timely",
            CcSpec::Hpcc(_) => "hpcc",
            CcSpec::Mprdma(_) => "mprdma",
        }
    }

    /// Whether switches must stamp INT into data packets.
    pub fn needs_int(&self) -> bool {
        matches!(self, CcSpec::Hpcc(_))
    }

    /// Whether receivers echo ECN marks in ACKs (rather than, or besides, sending CNPs).
    pub fn wants_ecn_echo(&self) -> bool {
        matches!(self, CcSpec::Dctcp(_))
    }

    pub fn build(&self, flow: FlowParams, now: Time) -> Cc {
        match self {
            CcSpec::None {} => Cc::None(none::LineRate::new(flow)),
            CcSpec::Dcqcn(p) => Cc::Dcqcn(dcqcn::Dcqcn::new(p, flow)),
            CcSpec::Dctcp(p) => Cc::Dctcp(dctcp::Dctcp::new(p, flow)),
            CcSpec::Timely(p) => Cc::Timely(timely::Timely::new(p, flow, now)),
            CcSpec::Hpcc(p) => Cc::Hpcc(hpcc::Hpcc::new(p, flow)),
            CcSpec::Mprdma(p) => Cc::Mprdma(mprdma::Mprdma::new(p, flow)),
        }
    }
}

/// One flow's congestion controller.
#[derive(Clone, Debug)]
pub enum Cc {
    None(none::LineRate),
    Dcqcn(dcqcn::Dcqcn),
    Dctcp(dctcp::Dctcp),
    Timely(timely::Timely),
    Hpcc(hpcc::Hpcc),
    Mprdma(mprdma::Mprdma),
}

macro_rules! dispatch {
    ($self:expr, $cc:ident => $e:expr) => {
        match $self {
            Cc::None($cc) => $e,
            Cc::Dcqcn($cc) => $e,
            Cc::Dctcp($cc) => $e,
            Cc::Timely($cc) => $e,
            Cc::Hpcc($cc) => $e,
            Cc::Mprdma($cc) => $e,
        }
    };
}

impl CongestionControl for Cc {
    #[inline]
    fn on_tx(&mut self, now: Time, bytes: u64, packets: u32) {
        dispatch!(self, c => c.on_tx(now, bytes, packets))
    }
    #[inline]
    fn on_ack(&mut self, now: Time, ack: &Ack) {
        dispatch!(self, c => c.on_ack(now, ack))
    }
    fn on_nack(&mut self, now: Time) {
        dispatch!(self, c => c.on_nack(now))
    }
    fn on_cnp(&mut self, now: Time) {
        dispatch!(self, c => c.on_cnp(now))
    }
    fn on_timer(&mut self, now: Time) {
        dispatch!(self, c => c.on_timer(now))
    }
    #[inline]
    fn next_timer(&self) -> Option<Time> {
        dispatch!(self, c => c.next_timer())
    }
    #[inline]
    fn rate(&self) -> BitsPerSec {
        dispatch!(self, c => c.rate())
    }
    #[inline]
    fn window(&self) -> Option<u64> {
        dispatch!(self, c => c.window())
    }
    #[inline]
    fn packet_window(&self) -> Option<u64> {
        dispatch!(self, c => c.packet_window())
    }
    #[inline]
    fn wants_rtt_probe(&self) -> bool {
        dispatch!(self, c => c.wants_rtt_probe())
    }
    #[inline]
    fn next_path(&mut self) -> Option<u16> {
        dispatch!(self, c => c.next_path())
    }
    #[inline]
    fn acks_every_packet(&self) -> bool {
        dispatch!(self, c => c.acks_every_packet())
    }
}
