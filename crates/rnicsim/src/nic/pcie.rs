//! The PCIe link between host and NIC: a fixed one-way latency and a bandwidth per direction.
//!
//! Every transfer takes its time on the channel of its direction, so neither channel carries
//! more than its bandwidth and utilization is the channel's busy time within the run.
//!
//! - Host → NIC (the `read` channel): the doorbell, an 8-byte MMIO write that reaches the NIC
//!   one latency after the post; the WQE the NIC then fetches (a DMA read: a request one latency
//!   to the host, the WQE one latency back); payload reads; WQEs fetched and dropped by a packet
//!   filter (Tassel §3.5); the host's answer to a telemetry ping.
//! - NIC → host (the `write` channel): received payload, completion entries, telemetry pings.
//!
//! The NIC issues payload reads ahead of the wire, so the host → NIC channel is a token bucket
//! at the PCIe rate, [`PREFETCH`] deep: a transfer waits only when the channel's work exceeds
//! its rate over that window. Every transfer takes its place when it is asked for, also one the
//! host makes later (a post once it sees a completion) or that crosses later (a WQE read): the
//! channel serves in that order, and a place taken for a later time would idle it until then.
//! No payload is read before the NIC knows its message, so the first packet of a message waits
//! for a read round trip ([`Pcie::first_payload`]) and the message's bytes stream in at the
//! PCIe rate from there; later ones are held back only when PCIe is slower than the port, and
//! descriptors crowd the payload out only when there are many of them (a hundred thousand queue
//! pairs posting at once spend 7.2 MB of the channel on doorbells and WQEs). A packet starts on
//! the wire once its payload arrives fast enough for the wire never to run dry: no earlier than
//! its last payload byte is on the NIC less its own serialization time (so a packet waits for
//! the whole of its payload only when PCIe, or a GPU path, is slower than the port).
//!
//! A WQE is 64 bytes; one that carries its payload inline (mlx5's layout: 16 bytes of control,
//! 16 of remote address, 4 of inline header, then the data) is that header and data rounded up
//! to 64-byte blocks.

use super::stage::Stage;
use crate::units::{BitsPerSec, Time};
use serde::{Deserialize, Serialize};

/// Bytes of a WQE (without inline data) or a CQE.
pub const DESCRIPTOR_BYTES: u64 = 64;
/// Bytes of a doorbell, an MMIO write of the queue's producer index.
pub const DOORBELL_BYTES: u64 = 8;
/// Bytes of an inline WQE's segments before its data.
const INLINE_HEADER_BYTES: u64 = 36;
/// How far ahead of the wire payload reads may bring a packet's payload onto the NIC (100 KB
/// at 200 Gbps).
pub const PREFETCH: Time = Time(4_000_000);

/// Bytes of the WQE of a message, `inline` bytes of whose payload ride in it.
pub fn wqe_bytes(inline: u64) -> u64 {
    if inline == 0 {
        DESCRIPTOR_BYTES
    } else {
        (INLINE_HEADER_BYTES + inline).div_ceil(DESCRIPTOR_BYTES) * DESCRIPTOR_BYTES
    }
}

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
    /// When the data of the last [`Pcie::read_now`] left the host, and when that read's
    /// request reached it: the host answers DMA reads in the order their requests reach it,
    /// one after another on the channel.
    reads_end: Time,
    reads_from: Time,
}

impl Pcie {
    pub fn new(spec: PcieSpec) -> Pcie {
        Pcie { spec, read: Stage::new(spec.bandwidth), write: Stage::new(spec.bandwidth), bytes_read: 0, bytes_written: 0, reads_end: Time::ZERO, reads_from: Time::ZERO }
    }

    /// `bytes` for the host → NIC channel, asked for at `now`: they take their place in the
    /// token bucket and are through at the returned time (`now` while the channel keeps up).
    fn host_to_nic(&mut self, now: Time, bytes: u64) -> Time {
        self.bytes_read += bytes;
        self.read.transfer(self.horizon(now), bytes).max(now)
    }

    /// The earliest time work asked for at `now` may take the host → NIC channel: payload read
    /// ahead arrives up to [`PREFETCH`] before the wire wants it. Descriptors share the window,
    /// so that one channel serves both in the order they were asked for without idling.
    fn horizon(&self, now: Time) -> Time {
        now.saturating_sub(PREFETCH)
    }

    /// A WQE of `wqe` bytes (see [`wqe_bytes`]) that the host posts at `at` (no earlier than
    /// `now`, the time it is asked at): the doorbell crosses, the NIC fetches the WQE, and it is
    /// on the NIC and ready to schedule at the returned time.
    ///
    /// Both transfers take their place on the channel now: the channel serves work in the order
    /// it is asked for, so a place taken for a later time (a post the host makes once it sees a
    /// completion, or the WQE's read two latencies on) would leave the channel idle until then
    /// behind it, holding up payload reads asked for meanwhile.
    pub fn doorbell_and_fetch(&mut self, now: Time, at: Time, wqe: u64) -> Time {
        let l = self.spec.latency;
        let bw = self.spec.bandwidth;
        let at = at.max(now);
        let rung = self.host_to_nic(now, DOORBELL_BYTES).max(at + bw.tx_time(DOORBELL_BYTES)) + l;
        // The read request reaches the host one latency after the doorbell rang.
        let at_host = rung + l;
        self.host_to_nic(now, wqe).max(at_host + bw.tx_time(wqe)) + l
    }

    /// `n` WQEs fetched at `now` and dropped (Tassel's fetch-and-drop filter, §3.5): they cost
    /// the host → NIC channel their bytes.
    pub fn fetch_dropped(&mut self, now: Time, n: u64) {
        self.host_to_nic(now, n * DESCRIPTOR_BYTES);
    }

    /// The payload of one packet, read for transmission at `now`: `bytes` that follow
    /// `before` bytes of their message, whose first byte could be on the NIC at `first_byte`
    /// (one read round trip after its WQE or READ request reached the NIC). Its bytes take
    /// their place in the token bucket (read up to [`PREFETCH`] ahead of the wire), and no
    /// byte of a message arrives sooner than the message's first byte and the bytes before it
    /// at the PCIe rate. Returns when the packet's last payload byte is on the NIC, which is
    /// before `now` while the channel keeps up.
    pub fn read_payload(&mut self, now: Time, bytes: u64, first_byte: Time, before: u64) -> Time {
        self.bytes_read += bytes;
        let done = self.read.transfer(self.horizon(now), bytes);
        done.max(first_byte + self.spec.bandwidth.tx_time(before + bytes))
    }

    /// Received payload written to host memory starting at `now`; returns when it is there.
    pub fn write_payload(&mut self, now: Time, bytes: u64) -> Time {
        self.bytes_written += bytes;
        self.write.transfer(now, bytes) + self.spec.latency
    }

    /// A DMA read of `bytes` asked for at `now` and issued no earlier than `at` (not ahead of
    /// the wire: a StaR GD, or an RD's payload once its WQE is fetched); returns when the data
    /// is on the NIC: a request one latency out, the data back behind what the channel holds.
    /// Reads whose requests reach the host together come back in that order, each behind the
    /// one before it: a short read asked after a long one does not overtake it, nor do the two
    /// share the channel's bandwidth twice over. A read whose request reaches the host before
    /// the last one's (asked for later, issued earlier) does not wait behind it.
    pub fn read_now(&mut self, now: Time, at: Time, bytes: u64) -> Time {
        let l = self.spec.latency;
        let at_host = at.max(now) + l;
        let tx = self.spec.bandwidth.tx_time(bytes);
        // Its place on the channel is taken now (see `doorbell_and_fetch`).
        let mut end = self.host_to_nic(now, bytes).max(at_host + tx);
        if at_host >= self.reads_from {
            end = end.max(self.reads_end + tx);
            (self.reads_end, self.reads_from) = (end, at_host);
        }
        end + l
    }

    /// A completion entry the NIC issues at `at` (no earlier than `now`), behind no data (an
    /// error or a flush): visible L after its transfer.
    pub fn write_cqe(&mut self, now: Time, at: Time) -> Time {
        self.bytes_written += DESCRIPTOR_BYTES;
        let tx = self.spec.bandwidth.tx_time(DESCRIPTOR_BYTES);
        self.write.transfer(now, DESCRIPTOR_BYTES).max(at.max(now) + tx) + self.spec.latency
    }

    /// A completion entry behind data that is in memory at `data` (`now` if none): visible to
    /// the host at the returned time. It takes its place on the write channel now, so a CQE due
    /// later never holds up writes issued before it is due (a receiver's payloads behind the CQE
    /// of an earlier message). Posted writes arrive in order, so a CQE behind a payload written
    /// on this channel is visible one transfer after it, not one more latency after it; data
    /// that came another way (the GPU path) holds the CQE until it is there.
    pub fn write_cqe_behind(&mut self, now: Time, data: Time) -> Time {
        self.bytes_written += DESCRIPTOR_BYTES;
        let tx = self.spec.bandwidth.tx_time(DESCRIPTOR_BYTES);
        (self.write.transfer(now, DESCRIPTOR_BYTES) + self.spec.latency).max(data + tx)
    }

    /// A 64-byte ping-pong across PCIe started at `now` (SCR's telemetry, A.10): the ping is a
    /// DMA write to host memory, queued behind the NIC → host traffic; the host answers at once
    /// with a write to the NIC, which waits only if the host → NIC channel is backed up beyond
    /// its prefetch depth. Returns the round trip: two latencies and two transfers when PCIe
    /// is idle.
    pub fn ping_pong(&mut self, now: Time) -> Time {
        self.bytes_written += DESCRIPTOR_BYTES;
        let tx = self.spec.bandwidth.tx_time(DESCRIPTOR_BYTES);
        let at_host = self.write.transfer(now, DESCRIPTOR_BYTES) + self.spec.latency;
        // The pong's place on the host → NIC channel is taken now (see `doorbell_and_fetch`).
        self.host_to_nic(now, DESCRIPTOR_BYTES).max(at_host + tx) + self.spec.latency - now
    }

    /// Read (host → NIC) and write (NIC → host) utilization over `[0, end)`: each channel's
    /// busy time within it, over its length.
    pub fn utilization(&self, end: Time) -> [f64; 2] {
        [self.read.utilization(end), self.write.utilization(end)]
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
    fn reads_asked_for_together_come_back_in_order_one_after_another() {
        // 1000 B then 500 B asked for at 1 µs, to be issued at 2 µs, at 8 Gbps (1 µs and 0.5 µs
        // on the channel): the requests reach the host at 2.5 µs, the first read's data leaves
        // it by 3.5 µs and the second's by 4 µs; each is on the NIC a latency later. (Each
        // alone: 4 and 3.5 µs; the short one came back first.)
        let mut p = Pcie::new(PcieSpec { latency: Time::from_ns(500), bandwidth: BitsPerSec(8_000_000_000) });
        let (now, at) = (Time::from_us(1), Time::from_us(2));
        assert_eq!(p.read_now(now, at, 1000), Time::from_us(4));
        assert_eq!(p.read_now(now, at, 500), Time::from_ns(4500));
        // Asked for once the channel is idle again, a read is one round trip and its transfer.
        assert_eq!(p.read_now(Time::from_us(10), Time::from_us(10), 500), Time::from_ns(11_500));
        // A read issued at once does not wait behind one asked for earlier but issued later
        // (it came back at 32.5 µs, behind a read due at 30 µs; found in review).
        assert_eq!(p.read_now(Time::from_us(20), Time::from_us(30), 1000), Time::from_us(32));
        assert_eq!(p.read_now(Time::from_us(20), Time::from_us(20), 500), Time::from_ns(21_500));
    }

    #[test]
    fn fetch_latency_and_read_pipelining() {
        let mut p = Pcie::new(PcieSpec { latency: Time::from_ns(500), bandwidth: BitsPerSec(64_000_000_000) });
        // Doorbell 8 B at 64 Gbps (1 ns) and 500 ns, read request 500 ns, 64 B WQE (8 ns) and 500 ns.
        assert_eq!(p.doorbell_and_fetch(Time::ZERO, Time::ZERO, DESCRIPTOR_BYTES), Time::from_ns(1509));
        // 100 bytes inline: 36 + 100 bytes take three 64-byte blocks (24 ns).
        assert_eq!(wqe_bytes(100), 192);
        assert_eq!(p.doorbell_and_fetch(Time::from_us(10), Time::from_us(10), wqe_bytes(100)), Time::from_ns(10_000 + 1525));
        // Both went host → NIC; nothing was written to the host.
        assert_eq!((p.bytes_read, p.bytes_written), (8 + 64 + 8 + 192, 0));
        // Reads within the channel's rate are on the NIC before the wire wants them.
        let mut t = Time::from_us(20);
        for _ in 0..10 {
            assert!(p.read_payload(t, 1000, Time::ZERO, 0) <= t);
            t = t + Time::from_ns(125); // 1000 B at 64 Gbps
        }
        // Back-to-back reads faster than PCIe: the first prefetch depth's worth is on the NIC
        // in time, then PCIe sets the pace.
        let mut p = Pcie::new(PcieSpec { latency: Time::from_ns(500), bandwidth: BitsPerSec(8_000_000_000) });
        let t = Time::from_us(10);
        let done: Vec<Time> = (0..100).map(|_| p.read_payload(t, 1000, Time::ZERO, 0)).collect(); // 1 µs each
        assert_eq!(done[0], t - Time::from_us(3));
        assert_eq!(done[3], t);
        assert_eq!(done[4], t + Time::from_us(1));
        assert_eq!(done[99], t + Time::from_us(96));
        assert_eq!(p.bytes_read, 100_000);
        // A new message's payload streams from its first byte at the PCIe rate, however idle
        // the channel was before: its second 1000 B arrive 2 µs after the first byte could.
        let mut q = Pcie::new(p.spec);
        let first = Time::from_us(500);
        assert_eq!(q.read_payload(first, 1000, first, 0), first + Time::from_us(1));
        assert_eq!(q.read_payload(first + Time::from_us(1), 1000, first, 1000), first + Time::from_us(2));
        // Within [0, 50 µs) the channel carried the reads from 6 µs (4 µs ahead of the wire).
        let [read, write] = p.utilization(Time::from_us(50));
        assert!((read - 44.0 / 50.0).abs() < 1e-12 && write == 0.0, "{read} {write}");
        assert!(p.utilization(Time::from_us(20))[0] <= 1.0);
    }

    #[test]
    fn descriptors_take_their_share_of_the_channel() {
        // 100 000 queue pairs post at once on PCIe at 200 Gbps: 72 bytes each (7.2 MB, 288 µs).
        let mut p = Pcie::new(PcieSpec::default());
        let mut last = Time::ZERO;
        for _ in 0..100_000 {
            last = p.doorbell_and_fetch(Time::ZERO, Time::ZERO, DESCRIPTOR_BYTES);
        }
        assert_eq!(p.bytes_read, 7_200_000);
        // The last doorbell's bytes are through 2.56 ns before 288 µs; its WQE is read a
        // round trip later and is on the NIC a latency after that.
        assert_eq!(last, Time::from_us(288) + Time::from_ns(1500));
        let u = p.utilization(Time::from_us(100));
        assert!((u[0] - 1.0).abs() < 1e-12 && u[1] == 0.0, "{u:?}");
        // A payload read behind them waits its turn.
        assert_eq!(p.read_payload(Time::from_us(1), 1000, Time::ZERO, 0), Time::from_us(288) + Time::from_ns(40));
        // Fetch-and-drop's WQEs cost the channel too.
        let mut p = Pcie::new(PcieSpec::default());
        p.fetch_dropped(Time::from_us(10), 1000);
        assert_eq!(p.bytes_read, 64_000);
        assert_eq!(p.read.busy, Time::from_ns(2560));
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
        for _ in 0..7 {
            p.read_payload(t, 1000, Time::ZERO, 0); // 1 µs each, from t - prefetch: the channel is busy to t + 3 µs
        }
        assert_eq!(p.ping_pong(t), Time::from_ns(3_000 + 64 + 500));
    }
}
