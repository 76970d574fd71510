//! The NIC's receive packet buffer, drained by the PCIe write channel.
//!
//! Received payload waits in the NIC until its DMA write to host (or GPU) memory is through,
//! so what the buffer holds at any instant is the work queued on the write channels
//! ([`super::pcie`]): each channel is a busy-until server, and the bytes it still has to carry
//! at `now` are its rate times the time until it is free. A receiver whose PCIe is slower than
//! its link fills the buffer; a full buffer drops an arriving packet with payload or, in pause
//! mode, the NIC sends PFC PAUSE for the lossless classes to its switch while the buffer is above
//! half, and RESUME once it drains below a quarter (the marks the connection-state cache's
//! buffer uses, StaR §II-B; a ConnectX NIC reports the drops as `rx_out_of_buffer` and pauses
//! its link partner under PFC). Without it, a slow receiver would take its link's rate
//! and queue the excess without bound. PAUSE goes out for every class the switches keep
//! lossless ([`pause_classes`]). Packets the connection-state cache holds for their state wait
//! in that cache's own buffer (`nic.state_cache.rx_buffer`), not counted here.
//!
//! ACKs, NAKs, CNPs, READ requests and StaR GDs carry nothing to host memory and are taken at
//! once.

use super::pcie::Pcie;
use super::state_cache::WhenFull;
use crate::sim::TimerId;
use crate::units::{Bytes, Time};

/// Bytes of the buffer by default: a ConnectX port's receive buffer is a few hundred KB
/// (`mlnx_qos --buffer_size`), and the state cache's buffer defaults to the same.
pub const DEFAULT_BYTES: Bytes = Bytes(256 * 1024);

/// One NIC's receive buffer.
#[derive(Clone, Debug)]
pub struct RxBuffer {
    pub capacity: u64,
    pub mode: WhenFull,
    /// Pause mode: until when the NIC's last PAUSE holds its link partner, if one is asserted.
    pub paused_until: Option<Time>,
    pub pauses_sent: u64,
    /// Arrivals with payload dropped because they did not fit.
    pub drops: u64,
    /// The most the buffer held after an arrival.
    pub peak: u64,
    /// Pause mode's timer: the buffer drains below the resume mark, or a PAUSE needs a refresh.
    pub timer: Option<TimerId>,
}

/// The traffic classes a NIC pauses when its receive buffer (or its state cache's) fills, one
/// bit each: every class the switches' PFC makes lossless, or `priority` when none is.
pub fn pause_classes(pfc_enabled: bool, lossless: &[u8], priority: u8) -> u8 {
    let mask = if pfc_enabled { lossless.iter().fold(0u8, |m, &c| m | 1 << c) } else { 0 };
    if mask == 0 {
        1 << priority
    } else {
        mask
    }
}

/// What a NIC's full receive buffer does: `asked` (`nic.rx_when_full`), or unset, pause where
/// the switches' PFC makes the data's class `priority` lossless and drop elsewhere.
pub fn when_full(asked: Option<WhenFull>, pfc_enabled: bool, lossless: &[u8], priority: u8) -> WhenFull {
    asked.unwrap_or(if pfc_enabled && lossless.contains(&priority) { WhenFull::Pause } else { WhenFull::Drop })
}

/// A pausing buffer's next frame (the receive buffer's and the state cache's): `Some(quanta)`
/// for a PAUSE (`quanta > 0`: the buffer reached `high`, or a pause is held above `low` and half
/// of it, `full`, has run out) or a RESUME (`Some(0)`: at or below `low`); `None` to send nothing.
pub fn pause_frame(paused_until: Option<Time>, bytes: u64, (high, low): (u64, u64), now: Time, full: Time, quanta: u16) -> Option<u16> {
    match paused_until {
        None if bytes >= high => Some(quanta),
        // Refresh once half the pause has run out.
        Some(until) if bytes > low => (now + Time(full.0 / 2) >= until).then_some(quanta),
        Some(_) => Some(0),
        None => None,
    }
}

impl RxBuffer {
    pub fn new(capacity: Bytes, mode: WhenFull, timer: Option<TimerId>) -> RxBuffer {
        RxBuffer { capacity: capacity.0, mode, paused_until: None, pauses_sent: 0, drops: 0, peak: 0, timer }
    }

    /// Pause mode's marks: PAUSE above half the buffer (the rest takes what the switch sends
    /// before it stops), RESUME below a quarter.
    pub fn pause_marks(&self) -> (u64, u64) {
        (self.capacity / 2, self.capacity / 4)
    }
}

/// Whether the write channels of `pcie` (and the GPU path's) have nothing left to carry at
/// `now`: the buffer is empty.
#[inline]
pub fn idle(pcie: &Pcie, gpu: Option<&Pcie>, now: Time) -> bool {
    pcie.write.is_free(now) && gpu.is_none_or(|g| g.write.is_free(now))
}

/// Bytes waiting in the NIC for the write channels of `pcie` (and the GPU path's) at `now`. A
/// channel as fast as the `ns3` profile's ([`super::UNBOUNDED_PCIE`]: ns-3's NIC writes host
/// memory for free) holds nothing: its transfers take a picosecond only by rounding.
#[inline]
pub fn held(pcie: &Pcie, gpu: Option<&Pcie>, now: Time) -> u64 {
    let one = |p: &Pcie| if p.write.rate >= super::UNBOUNDED_PCIE { 0 } else { p.write.rate.bytes_in(p.write.free_at().saturating_sub(now)) };
    one(pcie) + gpu.map_or(0, one)
}

/// The earliest time no earlier than `now` at which the write channels of `pcie` (and the GPU
/// path's) hold at most `bytes`: every channel drains at its rate until it is free, so their
/// sum falls linearly while all drain, and more slowly once one has emptied.
pub fn drained_to(pcie: &Pcie, gpu: Option<&Pcie>, now: Time, bytes: u64) -> Time {
    // (rate in bit/s, free at in ps) of each channel still busy, the one free first first.
    let busy = |p: &Pcie| (p.write.free_at() > now && p.write.rate < super::UNBOUNDED_PCIE).then(|| (p.write.rate.0 as u128, p.write.free_at().0 as u128));
    let mut chans = [busy(pcie), gpu.and_then(busy)];
    if let [Some(a), Some(b)] = chans {
        if b.1 < a.1 {
            chans = [Some(b), Some(a)];
        }
    }
    let target = bytes as u128 * 8 * crate::units::PS_PER_S as u128;
    let mut from = 0;
    loop {
        let live = chans[from..].iter().flatten();
        // All busy channels draining: Σ rᵢ (fᵢ − t) = target bits·ps, so t = (Σ rᵢ fᵢ − target) / Σ rᵢ.
        let (sr, srf) = live.fold((0u128, 0u128), |(a, b), &(r, f)| (a + r, b + r * f));
        if sr == 0 {
            return now;
        }
        let first = chans[from..].iter().flatten().next().expect("a busy channel").1;
        let t = srf.saturating_sub(target).div_ceil(sr);
        if t <= first || from == 1 {
            return Time(t as u64).max(now);
        }
        // The channel that empties first does so before the sum gets there.
        from += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nic::pcie::PcieSpec;
    use crate::units::BitsPerSec;

    fn pcie(gbps: u64) -> Pcie {
        Pcie::new(PcieSpec { latency: Time::from_ns(500), bandwidth: BitsPerSec::gbps(gbps) })
    }

    #[test]
    fn the_buffer_holds_what_the_write_channel_has_still_to_carry() {
        let mut p = pcie(25);
        let t = Time::from_us(10);
        assert_eq!(held(&p, None, t), 0);
        // Eight 1000-byte payloads at once: 25 Gbps writes one in 320 ns.
        for _ in 0..8 {
            p.write_payload(t, 1000);
        }
        assert_eq!(held(&p, None, t), 8000);
        assert_eq!(held(&p, None, t + Time::from_ns(640)), 6000);
        assert_eq!(held(&p, None, t + Time::from_ns(2560)), 0);
        // Down to 2000 bytes at 1920 ns, to nothing at 2560 ns.
        assert_eq!(drained_to(&p, None, t, 2000), t + Time::from_ns(1920));
        assert_eq!(drained_to(&p, None, t, 0), t + Time::from_ns(2560));
        assert_eq!(drained_to(&p, None, t, 9000), t, "already below");
    }

    #[test]
    fn a_pausing_buffer_pauses_at_high_refreshes_at_half_time_and_resumes_at_low() {
        let (marks, full, q) = ((100, 50), Time::from_us(10), 7);
        let t = Time::from_us(100);
        assert_eq!(pause_frame(None, 99, marks, t, full, q), None);
        assert_eq!(pause_frame(None, 100, marks, t, full, q), Some(q));
        // Held until t + 10 µs: nothing until half of it has run out, then a refresh.
        let until = Some(t + full);
        assert_eq!(pause_frame(until, 80, marks, t + Time::from_ns(4_999), full, q), None);
        assert_eq!(pause_frame(until, 80, marks, t + Time::from_us(5), full, q), Some(q));
        assert_eq!(pause_frame(until, 50, marks, t, full, q), Some(0), "resume at the low mark");
    }

    #[test]
    fn two_channels_drain_together_then_one_alone() {
        let (mut p, mut g) = (pcie(25), pcie(50));
        let t = Time::from_us(10);
        p.write_payload(t, 10_000); // 3.2 µs at 25 Gbps
        g.write_payload(t, 5_000); // 0.8 µs at 50 Gbps
        assert_eq!(held(&p, Some(&g), t), 15_000);
        // Both drain (9.375 bytes/ns together) for 0.8 µs: 15 000 − 7 500 = 7 500 left, all on
        // the host channel, which then drains 3.125 bytes/ns alone.
        assert_eq!(held(&p, Some(&g), t + Time::from_ns(800)), 7_500);
        // 9 375 bytes (5 625 drained together) take 600 ns; 2 500 take 0.8 µs more then 1.6 µs.
        assert_eq!(drained_to(&p, Some(&g), t, 9_375), t + Time::from_ns(600));
        assert_eq!(drained_to(&p, Some(&g), t, 2_500), t + Time::from_ns(2400));
        assert_eq!(held(&p, Some(&g), t + Time::from_ns(2400)), 2_500);
    }
}
