//! The NIC event tap: every transport event a vendor's programmable NIC exposes to software
//! (NVIDIA DOCA PCC on BlueField-3, SCR §4.1 Table 3: TX, ACK with RTT, NACK, CNP, RTT-probe
//! response, timer; plus data RX) goes through one typed [`NicEvent`] and one `emit` in the transport.
//!
//! Subscribers: the queue pair's congestion controller always (it is the reason the events
//! exist); and, only when asked for, the [`EventLog`] recorder (`outputs.nic_events`), which
//! keeps every event for `nic_events.parquet`; and SCR's collectors ([`crate::nic::scr`]) when
//! `[nic.scr]` is set. With neither the tap costs two branches per event.

use super::cc::Ack;
use crate::units::Time;

/// One transport event of queue pair `qp`.
#[derive(Clone, Copy, Debug)]
pub enum NicEvent<'a> {
    /// Data left the NIC: `bytes` on the wire in `packets` packets (first sends and resends).
    Tx { bytes: u64, packets: u32 },
    /// Data reached its receiver (a request its responder, a READ response its requester):
    /// payload bytes, and whether it was ECN-marked.
    Rx { bytes: u64, ecn: bool },
    /// An ACK (or the cumulative part of a NAK) acknowledged data; carries the RTT sample.
    Ack(&'a Ack<'a>),
    /// The peer reported a gap (sequence NAK, or a READ response gap), or the sender timed out.
    Nack,
    /// The ACK of a packet sent with an RTT probe request (the congestion controller's
    /// `wants_rtt_probe`, or [`crate::nic::transport::Ctx::request_rtt_probe`]) arrived.
    /// `sport`: the UDP source port the probe took (a path probe's, or the queue pair's own).
    RttProbe { rtt: Time, sport: u16 },
    /// A congestion notification packet arrived.
    Cnp,
    /// The peer's out-of-band signal arrived ([`crate::nic::transport::Ctx::send_signal`]):
    /// its value and the bytes it carried.
    Signal { value: u32, bytes: u32 },
    /// The application wrote a hint for the queue pair into the region it shares with the NIC
    /// (SCR Table 3's host domain: an application hint, e.g. its weight).
    Hint { value: u32 },
    /// The congestion controller's own timer is due.
    Timer,
}

impl NicEvent<'_> {
    /// The event's name in outputs.
    pub fn kind(&self) -> &'static str {
        match self {
            NicEvent::Tx { .. } => "tx",
            NicEvent::Rx { .. } => "rx",
            NicEvent::Ack(_) => "ack",
            NicEvent::Nack => "nack",
            NicEvent::RttProbe { .. } => "rtt_probe",
            NicEvent::Cnp => "cnp",
            NicEvent::Signal { .. } => "signal",
            NicEvent::Hint { .. } => "hint",
            NicEvent::Timer => "timer",
        }
    }
}

/// One recorded event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventRecord {
    pub at: Time,
    pub host: u32,
    pub qp: u32,
    pub kind: &'static str,
    /// TX: wire bytes; RX: payload bytes; ACK: newly acknowledged bytes; a hint: its value.
    pub bytes: u64,
    /// ACK: the RTT sample; otherwise zero.
    pub rtt: Time,
}

/// The recorder subscriber.
#[derive(Clone, Debug, Default)]
pub struct EventLog {
    pub records: Vec<EventRecord>,
}

impl EventLog {
    pub fn record(&mut self, at: Time, host: u32, qp: u32, ev: &NicEvent) {
        let (bytes, rtt) = match ev {
            NicEvent::Tx { bytes, .. } | NicEvent::Rx { bytes, .. } => (*bytes, Time::ZERO),
            NicEvent::Ack(a) => (a.acked_bytes, a.rtt),
            NicEvent::RttProbe { rtt, .. } => (0, *rtt),
            NicEvent::Signal { bytes, .. } => (*bytes as u64, Time::ZERO),
            // The hint's value rides in `bytes` (it was dropped).
            NicEvent::Hint { value } => (*value as u64, Time::ZERO),
            _ => (0, Time::ZERO),
        };
        self.records.push(EventRecord { at, host, qp, kind: ev.kind(), bytes, rtt });
    }
}

/// The subscribers besides congestion control.
#[derive(Default)]
pub struct EventTap {
    pub log: Option<EventLog>,
    pub scr: Option<crate::nic::scr::Scr>,
}

impl EventTap {
    /// A tap that records every event.
    pub fn recording() -> EventTap {
        EventTap { log: Some(EventLog::default()), scr: None }
    }

    /// Hands the event to the subscribers; returns SCR's timer to arm (if later), and when.
    #[inline]
    pub fn publish(&mut self, at: Time, host: u32, qp: u32, ev: &NicEvent) -> Option<(crate::sim::TimerId, Time)> {
        if let Some(log) = &mut self.log {
            log.record(at, host, qp, ev);
        }
        let scr = self.scr.as_mut()?;
        let core = scr.cores[host as usize].as_mut()?;
        if let NicEvent::RttProbe { rtt, sport } = *ev {
            scr.rtt_log.push(at, crate::nic::scr::RttSample { time: at, node: scr.nodes[host as usize], qp, sport, rtt });
        }
        let due = core.collect(at, qp, ev)?;
        Some((scr.timers[host as usize], due))
    }

    /// Queue pair `qp` of host `host` closed. Returns SCR's timer to arm (if later), and when,
    /// if the flow's leave left decisions to carry out (the other flows' rates, say).
    pub fn closed(&mut self, at: Time, host: u32, qp: u32) -> Option<(crate::sim::TimerId, Time)> {
        let scr = self.scr.as_mut()?;
        let core = scr.cores[host as usize].as_mut()?;
        let due = core.leave(at, qp)?;
        Some((scr.timers[host as usize], due))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hint_is_recorded_with_its_value() {
        // Its value fell to `_` and was written as 0 bytes (found by a helper).
        let mut log = EventLog::default();
        log.record(Time(7), 1, 2, &NicEvent::Hint { value: 5 });
        let r = &log.records[0];
        assert_eq!((r.at, r.host, r.qp, r.kind, r.bytes, r.rtt), (Time(7), 1, 2, "hint", 5, Time::ZERO));
    }
}
