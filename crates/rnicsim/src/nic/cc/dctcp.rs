//! DCTCP-style rate control for RDMA (Alizadeh et al., SIGCOMM 2010, §3, applied to rates as in
//! HPCC's simulator): the receiver echoes ECN marks in ACKs; once per window of data (about one
//! RTT) the sender updates α ← (1 − g)α + g·F with F the marked fraction, then cuts the rate by
//! α/2 if anything was marked or adds `rate_ai` otherwise.
//!
//! `rules = "ns3"` follows the ns-3 simulators' DCTCP instead (`RdmaHw::HandleAckDctcp` in HPCC's
//! and ConWeave's `rdma-hw.cc`), which cuts as TCP's does: on the first marked ACK, by α/2, then
//! not again until an ACK passes what had been sent at the cut (congestion window reduced); α is
//! updated when an ACK passes the byte that was next to send at the last update, F being the
//! marked ACKs over the packets that window held; `rate_ai` is added at each such update while
//! not reduced.

use super::{Ack, CongestionControl, FlowParams};
use crate::units::{BitsPerSec, Time};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DctcpParams {
    pub g: f64,
    pub rate_ai: BitsPerSec,
    pub min_rate: BitsPerSec,
    pub rules: DctcpRules,
}

/// Which DCTCP: a cut at the end of a window with marks, or ns-3's (module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DctcpRules {
    #[default]
    WindowEnd,
    Ns3,
}

impl Default for DctcpParams {
    fn default() -> Self {
        DctcpParams { g: 1.0 / 16.0, rate_ai: BitsPerSec(1_000_000_000), min_rate: BitsPerSec(100_000_000), rules: DctcpRules::WindowEnd }
    }
}

/// The ns-3 rules' state (`RdmaQueuePair::dctcp`).
#[derive(Clone, Copy, Debug, Default)]
struct Ns3State {
    /// The byte next to send at the last α update (0: none yet).
    last_update_seq: u64,
    /// Packets in the window α is being measured over, and the marked ACKs seen in it.
    batch: u64,
    marked_acks: u64,
    /// Rate reduced, until an ACK passes `high_seq` (the byte next to send at the cut).
    reduced: bool,
    high_seq: u64,
}

#[derive(Clone, Debug)]
pub struct Dctcp {
    line: u64,
    rate: u64,
    alpha: f64,
    g: f64,
    rai: u64,
    min_rate: u64,
    /// The window ends when data up to this sequence is acknowledged.
    window_end: u64,
    acked: u64,
    marked: u64,
    /// `Some` under the ns-3 rules, with the packet payload size they count packets by.
    ns3: Option<(Ns3State, u64)>,
}

impl Dctcp {
    pub fn new(p: &DctcpParams, flow: FlowParams) -> Dctcp {
        let line = flow.line_rate.0;
        let ns3 = (p.rules == DctcpRules::Ns3).then(|| (Ns3State::default(), flow.payload.max(1) as u64));
        Dctcp { line, rate: line, alpha: 1.0, g: p.g, rai: p.rate_ai.0, min_rate: p.min_rate.0.min(line), window_end: 0, acked: 0, marked: 0, ns3 }
    }

    /// One ACK under the ns-3 rules (`RdmaHw::HandleAckDctcp`, step by step).
    fn on_ack_ns3(&mut self, ack: &Ack) {
        let Some((s, mtu)) = self.ns3.as_mut() else { return };
        let (seq, next) = (ack.acked_seq, ack.next_seq);
        s.marked_acks += ack.ecn_echo as u64;
        let new_batch = seq > s.last_update_seq;
        if new_batch {
            if s.last_update_seq > 0 {
                let f = (s.marked_acks as f64 / s.batch.max(1) as f64).min(1.0);
                self.alpha = (1.0 - self.g) * self.alpha + self.g * f;
                s.marked_acks = 0;
            }
            s.batch = next.saturating_sub(if s.last_update_seq > 0 { seq } else { 0 }) / *mtu + 1;
            s.last_update_seq = next;
        }
        if s.reduced && seq > s.high_seq {
            s.reduced = false;
        }
        if ack.ecn_echo && !s.reduced {
            self.rate = ((self.rate as f64 * (1.0 - self.alpha / 2.0)) as u64).max(self.min_rate);
            s.reduced = true;
            s.high_seq = next;
        }
        if !s.reduced && new_batch {
            self.rate = (self.rate + self.rai).min(self.line);
        }
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }
}

impl CongestionControl for Dctcp {
    fn on_ack(&mut self, _now: Time, ack: &Ack) {
        if self.ns3.is_some() {
            return self.on_ack_ns3(ack);
        }
        self.acked += ack.acked_bytes;
        if ack.ecn_echo {
            self.marked += ack.acked_bytes;
        }
        if ack.acked_seq < self.window_end {
            return;
        }
        let f = if self.acked == 0 { 0.0 } else { self.marked as f64 / self.acked as f64 };
        self.alpha = (1.0 - self.g) * self.alpha + self.g * f;
        if self.marked > 0 {
            let cut = (self.rate as f64 * self.alpha / 2.0) as u64;
            self.rate = (self.rate - cut.min(self.rate)).max(self.min_rate);
        } else {
            self.rate = (self.rate + self.rai).min(self.line);
        }
        self.acked = 0;
        self.marked = 0;
        self.window_end = ack.next_seq;
    }

    fn rate(&self) -> BitsPerSec {
        BitsPerSec(self.rate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(seq: u64, next: u64, ecn: bool) -> Ack<'static> {
        Ack { acked_bytes: 1000, acked_seq: seq, next_seq: next, rtt: Time::from_us(10), ecn_echo: ecn, int: None, una: 0, psn: 0, path: 0, sack: false }
    }

    #[test]
    fn cuts_once_per_window_by_half_alpha() {
        let flow = FlowParams { line_rate: BitsPerSec(100_000_000_000), base_rtt: Time::from_us(10), mtu: 1000, payload: 1000, seed: 0 };
        let mut d = Dctcp::new(&DctcpParams { g: 0.5, ..Default::default() }, flow);
        // First window: every byte marked → α = 0.5·1 + 0.5·1 = 1, rate halves.
        d.on_ack(Time::ZERO, &ack(1000, 10_000, true));
        assert_eq!(d.rate().0, 50_000_000_000);
        // Inside the window: no further cut.
        d.on_ack(Time::ZERO, &ack(5000, 12_000, true));
        assert_eq!(d.rate().0, 50_000_000_000);
        // Window end, half the bytes marked (this ACK unmarked): F = 0.5, α = 0.75, cut 37.5 %.
        d.on_ack(Time::ZERO, &ack(10_000, 20_000, false));
        assert!((d.alpha() - 0.75).abs() < 1e-12);
        assert_eq!(d.rate().0, 31_250_000_000);
        // An unmarked window adds rate_ai.
        d.on_ack(Time::ZERO, &ack(20_000, 30_000, false));
        assert_eq!(d.rate().0, 32_250_000_000);
    }

    #[test]
    fn ns3_rules_cut_at_the_first_mark_and_hold_until_what_was_sent_then_is_acknowledged() {
        // Sequences count payload bytes, so the batch is counted in payloads (ns-3's m_mtu),
        // not in wire packets: by 1,062 B packets the first window would be 10 packets.
        let flow = FlowParams { line_rate: BitsPerSec(100_000_000_000), base_rtt: Time::from_us(10), mtu: 1062, payload: 1000, seed: 0 };
        let mut d = Dctcp::new(&DctcpParams { g: 0.5, rules: DctcpRules::Ns3, ..Default::default() }, flow);
        // The first ACK opens the first window (10,000 B sent: 11 packets), α stays 1; it is
        // marked, so the rate halves at once, until 10,000 B are acknowledged.
        d.on_ack(Time::ZERO, &ack(1000, 10_000, true));
        assert_eq!((d.rate().0, d.alpha()), (50_000_000_000, 1.0));
        // Marks within the reduced window do not cut again (the window-end rules would have).
        d.on_ack(Time::ZERO, &ack(5000, 12_000, true));
        assert_eq!(d.rate().0, 50_000_000_000);
        // Past 10,000: α from 2 marked ACKs of 11 packets, F = 2/11; reduced ends, and the
        // ACK is unmarked, so the new window adds rate_ai.
        d.on_ack(Time::ZERO, &ack(10_001, 20_000, false));
        let alpha = 0.5 + 0.5 * 2.0 / 11.0;
        assert!((d.alpha() - alpha).abs() < 1e-12, "{}", d.alpha());
        assert_eq!(d.rate().0, 51_000_000_000);
        // A mark now cuts by the new α/2 at once, without waiting for the window's end.
        d.on_ack(Time::ZERO, &ack(11_000, 21_000, true));
        assert_eq!(d.rate().0, (51e9 * (1.0 - alpha / 2.0)) as u64);
    }
}
