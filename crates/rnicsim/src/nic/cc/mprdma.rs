//! MP-RDMA (Lu et al., "Multi-Path Transport for RDMA in Datacenters", NSDI 2018, §4): one
//! connection spread over many virtual paths (VPs, UDP source ports that ECMP hashes onto
//! different routes), with one congestion window and no per-path state.
//!
//! - Multi-path ACK clocking (§4.1): the receiver acknowledges every packet, echoing its VP and
//!   its ECN mark. An unmarked ACK grows the window by 1/cwnd and lets the next packet go on the
//!   ACK's VP; a marked ACK shrinks it by 1/2 and the next packet goes on a fresh random VP.
//!   Window growth with no ACK to follow (and the first window) also takes fresh VPs.
//! - Out-of-order aware path selection (§4.2): nothing is sent Δ or more PSNs past the oldest
//!   unacknowledged one, so the receiver's Δ-bit bitmap (`[nic.ordering] layer = "static"`,
//!   `bits = Δ`) holds every packet in flight; an ACK whose PSN lags the highest acknowledged
//!   one by more than `prune_lag` came over a slow path, and its VP is not used again.
//! - Packets acknowledged out of order (SACKed) leave the window: cwnd bounds the packets in
//!   flight that are not yet acknowledged, Δ bounds the span of PSNs.
//!
//! The VP of each packet comes from [`Mprdma::next_path`]; the transport sets the packet's UDP
//! source port and ECMP hash from it. Not modelled: the synchronise mechanism (§4.3; here the
//! ordering layer's `hold_last_write` keeps a WRITE's last packet until the rest are in) and
//! the per-path loss detection of §4.4 (recovery is `nic.recovery`).

use crate::nic::transport::recovery::NO_SACK;
use super::{Ack, CongestionControl, FlowParams};
use crate::sim::rng::Rng;
use crate::units::{BitsPerSec, Bytes, Time};
use rand::{Rng as _, SeedableRng};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// The UDP source ports virtual paths are drawn from (the dynamic range).
const VP_LOW: u16 = 49152;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MprdmaParams {
    /// Δ: the most PSNs a connection may have outstanding past its oldest unacknowledged one
    /// (the receiver bitmap's bits; 64 in the paper's prototype).
    pub delta: u32,
    /// An ACK whose PSN is more than this behind the highest PSN acknowledged so far marks its
    /// VP as slow (the paper's pruning threshold; half of Δ by default).
    pub prune_lag: Option<u32>,
    /// The first window (default: one bandwidth-delay product of the flow's path).
    pub initial_window: Option<Bytes>,
    /// Chance that a packet explores a fresh random VP instead of the one its ACK clocks
    /// (0 in the paper's rule; a knob for experiments).
    pub explore: f64,
}

impl Default for MprdmaParams {
    fn default() -> Self {
        MprdmaParams { delta: 64, prune_lag: None, initial_window: None, explore: 0.0 }
    }
}

/// One connection's MP-RDMA sender state.
#[derive(Clone, Debug)]
pub struct Mprdma {
    line: BitsPerSec,
    mtu: u64,
    /// The window in packets.
    cwnd: f64,
    delta: u64,
    prune_lag: u64,
    explore: f64,
    /// VPs clocked by good ACKs, each to carry one packet, oldest first (at most Δ).
    clocked: VecDeque<u16>,
    /// Packets acknowledged above the oldest unacknowledged PSN (they left the window).
    sacked: u64,
    /// Highest PSN acknowledged, plus one (0: none yet).
    highest: u64,
    /// The cumulative acknowledgement, in packets.
    una: u64,
    pruned: u64,
    rng: Rng,
}

impl Mprdma {
    pub fn new(p: &MprdmaParams, flow: FlowParams) -> Mprdma {
        let mtu = flow.mtu.max(1) as u64;
        let init = p.initial_window.map_or_else(|| flow.line_rate.bytes_in(flow.base_rtt), |b| b.0);
        let delta = p.delta.max(1) as u64;
        Mprdma {
            line: flow.line_rate,
            mtu,
            cwnd: (init as f64 / mtu as f64).max(1.0),
            delta,
            prune_lag: p.prune_lag.map_or(delta / 2, |l| l as u64).max(1),
            explore: p.explore,
            clocked: VecDeque::with_capacity(delta as usize),
            sacked: 0,
            highest: 0,
            una: 0,
            pruned: 0,
            rng: Rng::seed_from_u64(flow.seed),
        }
    }

    /// The window in packets.
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    /// ACKs that arrived over a slow path so far (their VPs were dropped).
    pub fn pruned(&self) -> u64 {
        self.pruned
    }

    fn fresh_vp(&mut self) -> u16 {
        self.rng.random_range(VP_LOW..=u16::MAX)
    }

    fn clock(&mut self, vp: u16) {
        if self.clocked.len() as u64 >= self.delta {
            self.clocked.pop_front();
        }
        self.clocked.push_back(vp);
    }
}

impl CongestionControl for Mprdma {
    fn on_ack(&mut self, _now: Time, ack: &Ack) {
        // Cumulative progress: packets newly covered that were not SACKed before leave `sacked`.
        let una = ack.una;
        if una > self.una {
            let newly = una - self.una;
            let was_sacked = if ack.sack { newly } else { newly.saturating_sub(1) };
            self.sacked = self.sacked.saturating_sub(was_sacked);
            self.una = una;
        }
        if ack.sack {
            self.sacked += 1;
        }
        // A sequence NAK whose packet was not kept reports no arrival (`NO_SACK`): it says
        // nothing of its path's lag.
        let psn = ack.psn;
        let arrived = psn != NO_SACK;
        let slow = arrived && psn.saturating_add(self.prune_lag) < self.highest;
        if arrived {
            self.highest = self.highest.max(psn + 1);
        }
        if self.una >= self.highest {
            // Nothing above the cumulative acknowledgement was reported (a duplicate SACK
            // cannot leave the count behind).
            self.sacked = 0;
        }
        if ack.ecn_echo {
            self.cwnd = (self.cwnd - 0.5).max(1.0);
            let vp = self.fresh_vp();
            self.clock(vp);
        } else {
            self.cwnd += 1.0 / self.cwnd;
            if slow {
                self.pruned += 1;
                let vp = self.fresh_vp();
                self.clock(vp);
            } else {
                self.clock(ack.path);
            }
        }
    }

    fn on_nack(&mut self, _now: Time) {
        // A loss (a NAK or a timeout) halves the window, as TCP does on loss.
        self.cwnd = (self.cwnd / 2.0).max(1.0);
    }

    fn rate(&self) -> BitsPerSec {
        self.line
    }

    fn window(&self) -> Option<u64> {
        self.packet_window().map(|p| p * self.mtu)
    }

    fn packet_window(&self) -> Option<u64> {
        // Packets SACKed leave the window; Δ bounds the whole span of PSNs. In packets: the
        // bytes above are of wire-sized packets, and over the payload MTU they rounded up to
        // Δ + 1, one past what a Δ-bit bitmap holds.
        Some((self.cwnd.floor() as u64 + self.sacked).min(self.delta).max(1))
    }

    fn next_path(&mut self) -> Option<u16> {
        if self.explore > 0.0 && self.rng.random::<f64>() < self.explore {
            return Some(self.fresh_vp());
        }
        match self.clocked.pop_front() {
            Some(vp) => Some(vp),
            None => Some(self.fresh_vp()),
        }
    }

    fn acks_every_packet(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow() -> FlowParams {
        FlowParams { line_rate: BitsPerSec(100_000_000_000), base_rtt: Time::from_us(8), mtu: 1000, payload: 1000, seed: 7 }
    }

    fn ack(psn: u64, una: u64, path: u16, ecn: bool, sack: bool) -> Ack<'static> {
        Ack { acked_bytes: 1000, acked_seq: una * 1000, next_seq: 0, rtt: Time::from_us(8), ecn_echo: ecn, int: None, una, psn, path, sack }
    }

    #[test]
    fn first_window_is_one_bdp_capped_by_delta() {
        // 100 Gbps × 8 µs = 100 KB = 100 packets; Δ = 64 caps it.
        let m = Mprdma::new(&MprdmaParams::default(), flow());
        assert_eq!(m.cwnd(), 100.0);
        assert_eq!(m.window(), Some(64_000));
        let m = Mprdma::new(&MprdmaParams { delta: 256, ..Default::default() }, flow());
        assert_eq!(m.window(), Some(100_000));
    }

    #[test]
    fn additive_increase_per_ack_and_half_packet_decrease_per_mark() {
        let mut m = Mprdma::new(&MprdmaParams { initial_window: Some(Bytes(4000)), ..Default::default() }, flow());
        assert_eq!(m.cwnd(), 4.0);
        // Four unmarked ACKs: +1/cwnd each, about one packet per window.
        for i in 0..4 {
            m.on_ack(Time::ZERO, &ack(i, i + 1, 50_000, false, false));
        }
        // 4 → 4.25 → 4.4853 → 4.7082 → 4.9206
        assert!((m.cwnd() - 4.9206).abs() < 1e-3, "{}", m.cwnd());
        m.on_ack(Time::ZERO, &ack(4, 5, 50_000, true, false));
        m.on_ack(Time::ZERO, &ack(5, 6, 50_000, true, false));
        assert!((m.cwnd() - 3.9206).abs() < 1e-3, "{}", m.cwnd());
    }

    #[test]
    fn good_acks_clock_their_own_path_and_marked_ones_a_fresh_path() {
        let mut m = Mprdma::new(&MprdmaParams::default(), flow());
        m.on_ack(Time::ZERO, &ack(0, 1, 50_001, false, false));
        m.on_ack(Time::ZERO, &ack(1, 2, 50_002, true, false));
        m.on_ack(Time::ZERO, &ack(2, 3, 50_003, false, false));
        assert_eq!(m.next_path(), Some(50_001));
        let fresh = m.next_path().unwrap();
        assert!(fresh != 50_002 && fresh >= VP_LOW);
        assert_eq!(m.next_path(), Some(50_003));
    }

    #[test]
    fn a_late_ack_prunes_its_path() {
        let mut m = Mprdma::new(&MprdmaParams { prune_lag: Some(8), ..Default::default() }, flow());
        // PSN 20 is acknowledged (out of order), then PSN 5 arrives from a path 15 behind.
        m.on_ack(Time::ZERO, &ack(20, 0, 50_020, false, true));
        m.on_ack(Time::ZERO, &ack(5, 0, 50_005, false, true));
        assert_eq!(m.pruned(), 1);
        assert_eq!(m.next_path(), Some(50_020));
        assert_ne!(m.next_path(), Some(50_005));
        // Within the lag, a path is kept.
        m.on_ack(Time::ZERO, &ack(15, 0, 50_015, false, true));
        assert_eq!(m.next_path(), Some(50_015));
    }

    #[test]
    fn a_nak_that_reports_no_arrival_prunes_nothing() {
        // Its PSN is NO_SACK (u64::MAX): adding the lag overflowed (a panic in debug builds,
        // Eunomia Fig. 1's MP-RDMA baseline); wrapped, it read as a late path and pruned it.
        let mut m = Mprdma::new(&MprdmaParams { prune_lag: Some(8), ..Default::default() }, flow());
        m.on_ack(Time::ZERO, &ack(20, 0, 50_020, false, true));
        m.on_ack(Time::ZERO, &ack(NO_SACK, 0, 50_005, false, false));
        assert_eq!(m.pruned(), 0);
        assert_eq!((m.next_path(), m.next_path()), (Some(50_020), Some(50_005)), "its path is kept");
    }

    #[test]
    fn sacked_packets_leave_the_window_until_the_cumulative_ack_covers_them() {
        let mut m = Mprdma::new(&MprdmaParams { initial_window: Some(Bytes(10_000)), delta: 64, ..Default::default() }, flow());
        let base = m.window().unwrap();
        // Three packets above a hole are SACKed: the window opens by three.
        for psn in 1..4 {
            m.on_ack(Time::ZERO, &ack(psn, 0, 50_000, false, true));
        }
        let cw = m.cwnd().floor() as u64;
        assert_eq!(m.window(), Some((cw + 3) * 1000));
        assert!(m.window().unwrap() > base);
        // The hole arrives: the cumulative ACK jumps to 4 and the three leave `sacked`.
        m.on_ack(Time::ZERO, &ack(0, 4, 50_000, false, false));
        assert_eq!(m.window(), Some(m.cwnd().floor() as u64 * 1000));
        // A duplicate SACK (PSN 5 reported twice) is forgotten once the cumulative ACK passes it.
        m.on_ack(Time::ZERO, &ack(5, 4, 50_000, false, true));
        m.on_ack(Time::ZERO, &ack(5, 4, 50_000, false, true));
        assert_eq!(m.window(), Some((m.cwnd().floor() as u64 + 2) * 1000));
        m.on_ack(Time::ZERO, &ack(4, 6, 50_000, false, false));
        assert_eq!(m.window(), Some(m.cwnd().floor() as u64 * 1000));
    }
}
