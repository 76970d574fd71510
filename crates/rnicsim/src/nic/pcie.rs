//! The PCIe link between host and NIC: a fixed one-way latency and a bandwidth per direction.
//!
//! - A doorbell (MMIO write) reaches the NIC one latency after the post.
//! - The NIC then fetches the WQE: a DMA read round trip (2 × latency) plus 64 bytes of transfer.
//! - Payload DMA reads are pipelined ahead of the wire: the read channel is a token bucket at the
//!   PCIe rate with [`PREFETCH`] of depth, so the first packet of a message waits for a read
//!   round trip and later ones are limited only when PCIe is slower than the port.
//! - Payload writes (receive side) and CQE writes take one latency plus their transfer time on
//!   the write channel.
//!
//! Every transfer is counted, so utilization per direction is `bytes × 8 / (bandwidth × time)`.

use super::stage::Stage;
use crate::units::{BitsPerSec, Time};
use serde::{Deserialize, Serialize};

/// Bytes of a WQE, a CQE or a doorbell record.
pub const DESCRIPTOR_BYTES: u64 = 64;
/// How far the payload read channel may run ahead of the wire.
pub const PREFETCH: Time = Time(2_000_000);

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PcieSpec {
    /// One-way latency host ↔ NIC (a DMA read round trip is twice this).
    #[serde(default = "default_latency")]
    pub latency: Time,
    /// Usable bandwidth per direction (PCIe Gen4 ×16 gives about 200 Gbps after overheads).
    #[serde(default = "default_bandwidth")]
    pub bandwidth: BitsPerSec,
}

fn default_latency() -> Time {
    Time::from_ns(500)
}
fn default_bandwidth() -> BitsPerSec {
    BitsPerSec(200_000_000_000)
}

impl Default for PcieSpec {
    fn default() -> Self {
        PcieSpec { latency: default_latency(), bandwidth: default_bandwidth() }
    }
}

/// One NIC's PCIe state and counters.
#[derive(Clone, Debug)]
pub struct Pcie {
    pub spec: PcieSpec,
    /// The read (NIC ← host) and write (NIC → host) channels.
    pub read: Stage,
    pub write: Stage,
    pub bytes_read: u64,
    pub bytes_written: u64,
}

impl Pcie {
    pub fn new(spec: PcieSpec) -> Pcie {
        Pcie { spec, read: Stage::new(spec.bandwidth), write: Stage::new(spec.bandwidth), bytes_read: 0, bytes_written: 0 }
    }

    /// A WQE posted at `now` is in the NIC and ready to schedule at the returned time.
    pub fn doorbell_and_fetch(&mut self, now: Time) -> Time {
        let l = self.spec.latency;
        self.bytes_written += DESCRIPTOR_BYTES; // the doorbell record
        self.bytes_read += DESCRIPTOR_BYTES;
        now + l + l + l + self.spec.bandwidth.tx_time(DESCRIPTOR_BYTES)
    }

    /// The payload of one packet is read for transmission at `now`; returns when it can leave
    /// (`now` unless PCIe is the bottleneck).
    pub fn read_payload(&mut self, now: Time, bytes: u64) -> Time {
        self.bytes_read += bytes;
        self.read.transfer(now.saturating_sub(PREFETCH), bytes).saturating_sub(PREFETCH).max(now)
    }

    /// Received payload written to host memory starting at `now`; returns when it is there.
    pub fn write_payload(&mut self, now: Time, bytes: u64) -> Time {
        self.bytes_written += bytes;
        self.write.transfer(now, bytes) + self.spec.latency
    }

    /// A DMA read of `bytes` asked for at `now` and issued no earlier than `at` (not ahead of
    /// the wire: a StaR GD, or an RD's payload once its WQE is fetched); returns when the data
    /// is on the NIC. Like [`Pcie::write_cqe`], it takes its channel place now.
    pub fn read_now(&mut self, now: Time, at: Time, bytes: u64) -> Time {
        self.bytes_read += bytes;
        let tx = self.spec.bandwidth.tx_time(bytes);
        self.read.transfer(now, bytes).max(at.max(now) + tx) + self.spec.latency + self.spec.latency
    }

    /// A completion entry issued at `now`, behind data that is in host memory at `after`
    /// (`now` if none): visible to the host at the returned time. It takes its place on the
    /// write channel now, so a CQE due later never holds up writes issued before it is due
    /// (a receiver's payloads behind the CQE of an earlier message).
    pub fn write_cqe(&mut self, now: Time, after: Time) -> Time {
        self.bytes_written += DESCRIPTOR_BYTES;
        let tx = self.spec.bandwidth.tx_time(DESCRIPTOR_BYTES);
        self.write.transfer(now, DESCRIPTOR_BYTES).max(after.max(now) + tx) + self.spec.latency
    }

    /// A 64-byte ping-pong across PCIe started at `now` (SCR's telemetry, A.10): the ping is a
    /// DMA write to host memory, queued behind the NIC → host traffic; the host answers at once
    /// with a write to the NIC, behind the host → NIC data already under way. Returns the round
    /// trip: two latencies and two transfers when PCIe is idle. The pong does not hold up the
    /// payload reads (64 bytes per sample; it is counted but takes no channel place).
    pub fn ping_pong(&mut self, now: Time) -> Time {
        self.bytes_written += DESCRIPTOR_BYTES;
        self.bytes_read += DESCRIPTOR_BYTES;
        let tx = self.spec.bandwidth.tx_time(DESCRIPTOR_BYTES);
        let at_host = self.write.transfer(now, DESCRIPTOR_BYTES) + self.spec.latency;
        at_host.max(self.read.free_at()) + tx + self.spec.latency - now
    }

    /// Read and write utilization over `secs` seconds.
    pub fn utilization(&self, secs: f64) -> [f64; 2] {
        let bw = self.spec.bandwidth.0 as f64;
        [self.bytes_read as f64 * 8.0 / (bw * secs), self.bytes_written as f64 * 8.0 / (bw * secs)]
    }

    /// The first payload byte of a newly fetched WQE arrives one read round trip later.
    pub fn first_payload(&self, ready: Time) -> Time {
        ready + self.spec.latency + self.spec.latency
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fetch_latency_and_read_pipelining() {
        let mut p = Pcie::new(PcieSpec { latency: Time::from_ns(500), bandwidth: BitsPerSec(64_000_000_000) });
        // Doorbell 500 ns + read round trip 1000 ns + 64 B at 64 Gbps (8 ns).
        assert_eq!(p.doorbell_and_fetch(Time::ZERO), Time::from_ns(1508));
        // Reads within the prefetch depth do not delay packets.
        let mut t = Time::ZERO;
        for _ in 0..10 {
            assert_eq!(p.read_payload(t, 1000), t);
            t = t + Time::from_ns(125); // 1000 B at 64 Gbps
        }
        // Back-to-back reads faster than PCIe: after the prefetch is used up, PCIe sets the pace.
        let mut p = Pcie::new(PcieSpec { latency: Time::from_ns(500), bandwidth: BitsPerSec(8_000_000_000) });
        let mut last = Time::ZERO;
        for _ in 0..100 {
            last = p.read_payload(Time::ZERO, 1000); // 1 µs each
        }
        assert_eq!(last, Time::from_ns(100_000 - 2_000));
        assert_eq!(p.bytes_read, 100_000);
    }

    #[test]
    fn ping_pong_is_two_latencies_when_idle_and_waits_behind_traffic() {
        let mut p = Pcie::new(PcieSpec { latency: Time::from_ns(500), bandwidth: BitsPerSec(64_000_000_000) });
        // 500 + 8 (64 B at 64 Gbps) each way.
        assert_eq!(p.ping_pong(Time::from_us(5)), Time::from_ns(1016));
        // 64 KB of received payload just issued to host memory (8.192 µs of the write channel):
        // the ping waits behind it.
        let t = Time::from_us(10);
        p.write_payload(t, 65_536);
        assert_eq!(p.ping_pong(t), Time::from_ns(8_192 + 1016));
        // Reads backed up 3 µs beyond the prefetch depth hold the pong back.
        let mut p = Pcie::new(PcieSpec { latency: Time::from_ns(500), bandwidth: BitsPerSec(8_000_000_000) });
        let t = Time::from_us(100);
        for _ in 0..5 {
            p.read_payload(t, 1000); // 1 µs each, from t - prefetch: the channel is busy to t + 3 µs
        }
        assert_eq!(p.ping_pong(t), Time::from_ns(3_000 + 64 + 500));
    }
}
