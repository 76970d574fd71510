//! DCTCP-style rate control for RDMA (Alizadeh et al., SIGCOMM 2010, §3, applied to rates as in
//! HPCC's simulator): the receiver echoes ECN marks in ACKs; once per window of data (about one
//! RTT) the sender updates α ← (1 − g)α + g·F with F the marked fraction, then cuts the rate by
//! α/2 if anything was marked or adds `rate_ai` otherwise.

use super::{Ack, CongestionControl, FlowParams};
use crate::units::{BitsPerSec, Time};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DctcpParams {
    pub g: f64,
    pub rate_ai: BitsPerSec,
    pub min_rate: BitsPerSec,
}

impl Default for DctcpParams {
    fn default() -> Self {
        DctcpParams { g: 1.0 / 16.0, rate_ai: BitsPerSec(1_000_000_000), min_rate: BitsPerSec(100_000_000) }
    }
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
}

impl Dctcp {
    pub fn new(p: &DctcpParams, flow: FlowParams) -> Dctcp {
        let line = flow.line_rate.0;
        Dctcp { line, rate: line, alpha: 1.0, g: p.g, rai: p.rate_ai.0, min_rate: p.min_rate.0.min(line), window_end: 0, acked: 0, marked: 0 }
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }
}

impl CongestionControl for Dctcp {
    fn on_ack(&mut self, _now: Time, ack: &Ack) {
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
        let flow = FlowParams { line_rate: BitsPerSec(100_000_000_000), base_rtt: Time::from_us(10), mtu: 1000, seed: 0 };
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
}
