//! A reliable-connection queue pair (IBA chapter 9; RoCEv2): the requester's send queue with
//! PSN accounting, the responder's receive queue and expected PSN, and the per-QP congestion
//! controller and rate limit. The packet-level behavior is in [`super::transport`]; this file
//! holds the state and the pure helpers (which WQE a PSN belongs to, how a message is packetized).

use super::cc::Cc;
use super::verbs::{RecvWr, SendWr, Verb};
use crate::sim::TimerId;
use crate::units::Time;
use crate::wire::roce::{Family, Opcode, Position};
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpState {
    /// Unused slot (or destroyed and quarantined).
    Free,
    /// Ready to send and receive (RTS).
    Ready,
    /// Failed: new work is refused, outstanding work was flushed.
    Error,
}

/// Who is told about this queue pair's completions and messages: an application (its id) and
/// the application's own tag for the connection. Opaque to the NIC, which only hands it back
/// ([`crate::host::apps`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Owner {
    pub app: u8,
    pub tag: u32,
}

impl Owner {
    /// No application: completions stay in the NIC's CQ for the verbs user to poll.
    pub const HOST: Owner = Owner { app: u8::MAX, tag: 0 };
}

/// A posted send WQE and its place in the PSN space.
#[derive(Clone, Copy, Debug)]
pub struct SqEntry {
    pub wr: SendWr,
    pub first_psn: u64,
    /// Packets of the message (READ: response packets, which the PSN range covers).
    pub npkts: u32,
    /// When the NIC has fetched the WQE and its first payload bytes.
    pub ready_at: Time,
    /// Index of the message among this queue pair's messages.
    pub msg: u32,
    /// READ: responses received in order so far.
    pub read_next: u32,
}

impl SqEntry {
    pub fn end_psn(&self) -> u64 {
        self.first_psn + self.npkts as u64
    }
    pub fn is_read(&self) -> bool {
        self.wr.verb == Verb::Read
    }
    pub fn family(&self) -> Family {
        match self.wr.verb {
            Verb::Write | Verb::WriteImm(_) => Family::Write,
            Verb::Send | Verb::SendImm(_) => Family::Send,
            Verb::Read => Family::ReadRequest,
        }
    }
}

/// A READ the responder is answering.
#[derive(Clone, Copy, Debug)]
pub struct ReadJob {
    pub first_psn: u64,
    pub npkts: u32,
    pub next: u32,
    pub va: u64,
    pub len: u64,
    /// When the first payload is on the NIC: the responder reads it from host memory, one
    /// PCIe round trip after the request arrived (later packets stream behind it).
    pub ready_at: Time,
}

/// The most ranges of READ response PSNs a queue pair remembers ([`SentPsns`]).
pub const READ_SENT_RANGES: usize = 64;

/// The READ response PSNs a responder sent, as sorted disjoint half-open ranges (one per READ
/// answered in order, more when a repeated request superseded an answer before it caught up),
/// at most [`READ_SENT_RANGES`]; the PSNs below the oldest range kept (`floor`) count as sent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SentPsns {
    ranges: Vec<(u64, u64)>,
    floor: u64,
}

impl SentPsns {
    /// Records `psn` as sent; returns whether it had been sent before.
    pub fn note(&mut self, psn: u64) -> bool {
        if psn < self.floor {
            return true;
        }
        if self.ranges.len() >= READ_SENT_RANGES {
            self.floor = self.ranges.remove(0).1;
            if psn < self.floor {
                return true;
            }
        }
        let ranges = &mut self.ranges;
        // The range starting at or before `psn`, if any.
        let i = ranges.partition_point(|r| r.0 <= psn);
        if i > 0 && psn < ranges[i - 1].1 {
            return true;
        }
        let joins_prev = i > 0 && ranges[i - 1].1 == psn;
        let joins_next = i < ranges.len() && ranges[i].0 == psn + 1;
        match (joins_prev, joins_next) {
            (true, true) => {
                ranges[i - 1].1 = ranges[i].1;
                ranges.remove(i);
            }
            (true, false) => ranges[i - 1].1 = psn + 1,
            (false, true) => ranges[i].0 = psn,
            (false, false) => ranges.insert(i, (psn, psn + 1)),
        }
        false
    }
}

/// Packets needed for `len` payload bytes at `mtu` (a zero-length message is one packet).
pub fn packets_for(len: u64, mtu: u32) -> u32 {
    len.div_ceil(mtu as u64).max(1) as u32
}

/// The opcode of packet `idx` of an `n`-packet message.
pub fn opcode_at(family: Family, idx: u32, n: u32, imm: bool) -> Opcode {
    let pos = match (idx, n) {
        (_, 1) => Position::Only,
        (0, _) => Position::First,
        (i, n) if i + 1 == n => Position::Last,
        _ => Position::Middle,
    };
    Opcode::data(family, pos, imm)
}

/// Payload bytes of packet `idx` of a `len`-byte message.
pub fn payload_at(len: u64, mtu: u32, idx: u32) -> u32 {
    let off = idx as u64 * mtu as u64;
    len.saturating_sub(off).min(mtu as u64) as u32
}

/// A fixed-size ring of bits for PSNs at or after a base (selective-repeat bookkeeping).
#[derive(Clone, Debug, Default)]
pub struct PsnBitmap {
    base: u64,
    bits: VecDeque<bool>,
}

/// How far beyond the cumulative point a selective-repeat endpoint tracks PSNs.
pub const SACK_RANGE: u64 = 1 << 16;

/// The last packet of a message that an ordering layer placed ahead of the expected PSN: the
/// message is whole, and delivered, when the expected PSN passes it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HeldEnd {
    pub psn: u64,
    /// When its payload was in host memory.
    pub placed: Time,
    /// A SEND or a WRITE with immediate: it completes a receive WQE, with this length and
    /// immediate value.
    pub recv: Option<(u64, Option<u32>)>,
}

impl PsnBitmap {
    pub fn set(&mut self, psn: u64) {
        if psn < self.base || psn - self.base >= SACK_RANGE {
            return;
        }
        let i = (psn - self.base) as usize;
        if self.bits.len() <= i {
            self.bits.resize(i + 1, false);
        }
        self.bits[i] = true;
    }
    pub fn get(&self, psn: u64) -> bool {
        psn >= self.base && self.bits.get((psn - self.base) as usize).copied().unwrap_or(false)
    }
    /// Moves the base forward to `psn`, forgetting bits below it.
    pub fn advance_to(&mut self, psn: u64) {
        while self.base < psn {
            self.bits.pop_front();
            self.base += 1;
            if self.bits.is_empty() {
                self.base = psn;
            }
        }
    }
    /// Advances the base over consecutive set bits starting at it; returns the new base.
    pub fn advance_over_set(&mut self) -> u64 {
        while self.bits.front() == Some(&true) {
            self.bits.pop_front();
            self.base += 1;
        }
        self.base
    }
    pub fn reset(&mut self, base: u64) {
        self.base = base;
        self.bits.clear();
    }
}

/// Adds a refused packet (PSN and send time) to a remembered span of refusals: lowest and
/// highest PSN, latest send time.
pub fn note_refusal(span: &mut Option<(u64, u64, Time)>, psn: u64, ts: Time) {
    *span = Some(span.map_or((psn, psn, ts), |(lo, hi, t)| (lo.min(psn), hi.max(psn), t.max(ts))));
}

/// `now` plus twice the one way a packet sent at `ts` took to arrive now (a margin for a slower
/// path or a queue): the peer's send time from which on its packets are late for what began
/// now. After a refusal NACK drawn by that packet, which reaches the sender one way later, a
/// packet sent from then on was sent after the sender's answer began; when that packet is the
/// first of a re-issued READ's answer to arrive, the answer's response at the gap, sent no
/// later, should arrive before any response sent from then on. A refusal of such a packet,
/// past the one that drew the request, shows the request or that response was lost.
pub fn answer_lost_from(now: Time, ts: Time) -> Time {
    Time(now.0 + 2 * now.0.saturating_sub(ts.0))
}

/// After the expected PSN moved to `expected`: whether the remembered refusals now leave a hole
/// there that only asking again fills. Not yet while `expected` is below them; never (and they
/// are forgotten) once it is past them, or when every one of them was sent before `covered`,
/// the send time up to which the sender's answer under way resends what it had sent: for
/// go-back-N (and a re-issued READ), which sends everything after its start again, the send
/// time of the packet that moved the expected PSN (that answer started before it); for
/// selective repeat, which resends only what was sent before the NACK reached the sender, when
/// it did ([`Qp::nak_answered_from`]).
pub fn refusal_hole_due(span: &mut Option<(u64, u64, Time)>, expected: u64, covered: Time) -> bool {
    let Some((lo, hi, latest)) = *span else { return false };
    if expected < lo {
        return false;
    }
    if expected > hi || latest <= covered {
        *span = None;
        return false;
    }
    true
}

/// A requester's ordering state for the READ responses it receives (with `[nic.ordering]`).
#[derive(Clone, Debug)]
pub struct ResponseOrder {
    /// The next response PSN the layer expects: every PSN below it is either an arrived
    /// response or a PSN of a request that has no response (a WRITE or SEND).
    pub epsn: u64,
    /// The Eunomia bitmap's Dynamic BM Address, and the static or ideal layer's bitmap.
    pub dba: u32,
    pub ooo: PsnBitmap,
    /// Responses refused while a re-issued READ was out for the gap (`Qp::read_rewound`): their
    /// lowest and highest PSN and latest send time (as the responder's `refused_quiet`).
    pub refused_quiet: Option<(u64, u64, Time)>,
    /// The latest send time of a response received, and that response's PSN: where the
    /// responder's stream of responses was, as far as the requester knows.
    pub front: (Time, u64),
    /// After a re-issue (`Qp::read_rewound`): the response PSN that drew it, when it was made,
    /// and `front`'s PSN then. A response of its answer (sent after it, at or past the gap and
    /// not past that PSN: the stream went back) sets `rewound_lost_from`, the send time from
    /// which on a response was sent after the answer's first should have arrived
    /// ([`answer_lost_from`]; `Time::MAX` until one arrives). A refusal past the PSN that drew
    /// the re-issue sent from then on shows the answer's response at the gap was lost (as the
    /// responder's `nak_refused_psn` and `nak_lost_from`).
    pub rewound_psn: u64,
    pub rewound_at: Time,
    pub rewound_front: u64,
    pub rewound_lost_from: Time,
}

impl Default for ResponseOrder {
    fn default() -> ResponseOrder {
        ResponseOrder { epsn: 0, dba: super::ordering::NO_BITMAP, ooo: PsnBitmap::default(), refused_quiet: None, front: (Time::ZERO, 0), rewound_psn: 0, rewound_at: Time::ZERO, rewound_front: 0, rewound_lost_from: Time::MAX }
    }
}

/// A READ request an ordering layer took ahead of the expected PSN: it takes PSNs `first..end`,
/// and `last` is the sender's last-packet bit it carried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeldRead {
    pub first: u64,
    pub end: u64,
    pub last: bool,
}

/// The pacing gap a queue pair's last packet opened ([`Qp::pace`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pace {
    pub from: Time,
    pub bytes: u32,
    /// The wait, from `from`, and the rate it is timed at (0: none). The rate is kept, not
    /// read back from `Qp::sched_rate`: a rate that changed since the last sync would time the
    /// gap at one rate and record another.
    pub gap: Time,
    pub rate: u64,
}

pub struct Qp {
    pub state: QpState,
    /// Index of the NIC (host) this queue pair is on, and its node.
    pub host: u32,
    pub node: u32,
    /// The connected queue pair and where it is.
    pub peer: u32,
    pub peer_node: u32,
    pub peer_host: u32,
    pub priority: u8,
    pub udp_sport: u16,
    /// The UDP destination port of its packets: RoCEv2's 4791, or the peer's own port where
    /// ports are numbered as ns-3 numbers them (`flows.ports = "ns3"`).
    pub udp_dport: u16,
    pub flow_hash: u32,
    /// The path its packets carry ([`crate::fabric::paths`]), or `NO_PATH` to follow the routes.
    pub path: u32,
    pub owner: Owner,
    /// The path's base RTT (set at connect; IRN's BDP cap uses it).
    pub base_rtt: Time,
    /// The path's bandwidth-delay product in bytes, at its slowest link (set at connect; the
    /// per-pair `cc_window`, ns-3's GLOBAL_T 0 `pairBdp`, uses it).
    pub pair_bdp: u64,
    /// One timer for the retransmission timeout, RNR wait and congestion-control timers.
    pub timer: TimerId,
    pub cc: Cc,
    // ---- requester ----
    pub sq: VecDeque<SqEntry>,
    /// The next PSN to assign to a posted WQE, the next to send, the oldest unacknowledged.
    pub next_psn: u64,
    pub snd_nxt: u64,
    pub snd_una: u64,
    pub messages: u32,
    /// READ WQEs in the send queue (so ACKs look for unanswered READs only when there are some).
    pub reads_posted: u32,
    pub retry_left: u32,
    pub rnr_left: u32,
    pub rto_at: Time,
    /// When the last packet that waited on the NIC for its payload read starts on the wire: the
    /// queue pair's later packets start no earlier, and a timeout re-armed by an ACK runs from
    /// no earlier than that ([`Qp::rto_from`]).
    pub held_start: Time,
    pub rnr_until: Time,
    /// Rate limit: the next packet may not leave before this.
    pub next_send: Time,
    /// Since when the queue pair has had a packet ready, as of its last hand-over to the
    /// scheduler ([`Qp::ready_since`]): what it waits from there is what `nic.pace_burst` may bank.
    pub eligible_since: Time,
    /// The gap the last packet opened: from when (its send, less the wait `nic.pace_burst` banked), for
    /// how many bytes, and how long at the rate then in force. A rate change re-times the gap
    /// at the new rate ([`crate::nic::transport::Ctx::sync_rate`]).
    pub pace: Pace,
    /// Whether the queue pair is in the NIC's scheduler now.
    pub in_sched: bool,
    /// Payload bytes sent, retransmissions included.
    pub bytes_sent: u64,
    /// Selective repeat: PSNs the receiver reported, PSNs to resend, highest PSN queued for resend.
    pub sacked: PsnBitmap,
    pub resend: VecDeque<u64>,
    pub resend_high: u64,
    /// The PSN of the last NACK without a SACK (with an ordering layer: a refusal) that the
    /// sender resent from (selective repeat with an ordering layer: the PSN the NACK named,
    /// before it was raised to the oldest unacknowledged one). Selective repeat resends a range
    /// once per such PSN; go-back-N takes the same NACK again before its resend has caught up
    /// (`snd_nxt` below `tx_high`) as one the responder repeated, presuming it lost, for a
    /// packet the resend covers.
    pub refusal_resent: Option<u64>,
    /// GBN READ: the PSN a re-issued read request started from, to re-issue once per gap.
    pub read_rewound: Option<u64>,
    /// One past the highest PSN ever sent (PSNs below it that go again are retransmissions).
    pub tx_high: u64,
    pub probe: bool,
    /// The PSN of the last packet sent with an RTT probe request, until it is acknowledged.
    pub probe_psn: Option<u64>,
    // ---- responder ----
    pub epsn: u64,
    pub msn: u32,
    pub unacked: u32,
    pub nak_sent: bool,
    /// With an ordering layer: the lowest and highest PSN refused while `nak_sent` held their
    /// NACK back, and the latest send time among them, so that the responder can NACK the hole
    /// once the expected PSN reaches it.
    pub refused_quiet: Option<(u64, u64, Time)>,
    /// When the responder may NAK the same expected PSN again (`nic.nak_interval`).
    pub nak_again_at: Time,
    /// With an ordering layer, after a refusal's NACK: the refused PSN it answered, and the
    /// sender's send time from which on a packet was sent after that NACK should have reached
    /// the sender. A later refusal past that PSN sent from then on means the NACK was lost.
    pub nak_refused_psn: u64,
    pub nak_lost_from: Time,
    /// The sender's send time from which on its answer to the last fresh refusal NACK runs, at
    /// the earliest (the NACK's time plus half the base round trip): a selective-repeat answer
    /// resends what was sent before then, and nothing sent later.
    pub nak_answered_from: Time,
    pub last_cnp: Option<Time>,
    pub ecn_seen: bool,
    /// When the latest payload this queue pair received (a request's or a READ response's) is
    /// in memory: a READ's completion is visible no earlier.
    pub placed_until: Time,
    pub rq: VecDeque<RecvWr>,
    /// The receive WQE a multi-packet SEND is filling.
    pub recv_cur: Option<RecvWr>,
    pub ooo: PsnBitmap,
    /// Receive WQEs consumed so far (completed by a SEND or a WRITE with immediate): with an
    /// ordering layer, message `msg` of the peer (its receive WQE sequence number) finds its
    /// receive WQE at `rq[msg - recv_taken]`.
    pub recv_taken: u32,
    /// Ordering layer (`[nic.ordering]`): the Dynamic BM Address of this connection's Eunomia
    /// bitmap ([`super::ordering::NO_BITMAP`] without one), and the last packets of messages
    /// placed out of order, for when the expected PSN passes them.
    pub dba: u32,
    pub held_ends: Vec<HeldEnd>,
    /// READ requests an ordering layer accepted ahead of the expected PSN (answered at once):
    /// the PSNs they take, which no packet carries, for when the expected PSN reaches them.
    pub held_reads: Vec<HeldRead>,
    /// Ordering layer, this queue pair as requester: the READ responses it receives number its
    /// own PSNs, so they keep their own expected PSN and bitmaps.
    pub rsp: ResponseOrder,
    pub reads: VecDeque<ReadJob>,
    /// Whether its own requests (resends, new data) go before the READ responses it owes when
    /// both are ready: the two take turns packet by packet (under a NIC scheduler that leaves
    /// the timing to the NIC; see `requester::build_next`).
    pub request_turn: bool,
    /// READ response PSNs sent: a response among them is a retransmission.
    pub read_sent: SentPsns,
    /// Its buffers are in the GPU's memory (`World::use_gpu_memory`): payload DMA takes the
    /// NIC's GPU path.
    pub gpu_memory: bool,
    // ---- counters ----
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub retransmits: u64,
    /// Payload of this queue pair's requests the peer has acknowledged (WRITE, SEND) or answered
    /// in order (READ), each byte once however often it was sent: the goodput counter.
    pub payload_acked: u64,
    /// A configured rate limit (bps; `u64::MAX` for none: the application's, e.g. perftest's),
    /// the dequeue rate a control policy set (SCR's knob, §4.4; `u64::MAX` for none), and the
    /// limit last given to the scheduler (the lowest of them and the congestion-control rate).
    pub rate_limit: u64,
    pub dequeue_rate: u64,
    pub sched_rate: u64,
}

impl Qp {
    /// Since when a queue pair eligible at `at` has had a packet ready: when its rate limiter's
    /// last gap ended if only that gap (or its last payload's DMA) held it, so a backlogged queue
    /// pair banks from there; `at` itself if it waited for a WQE or an RNR timer. (A queue pair
    /// handed back to the scheduler other than right after a send, e.g. when its window opens,
    /// banks from no earlier than then: [`crate::nic::transport::Ctx::requeue_after_send`].)
    #[inline]
    pub fn ready_since(&self, at: Time) -> Time {
        if at <= self.next_send {
            self.pace.from + self.pace.gap
        } else {
            at
        }
    }

    /// The rate the queue pair is held to: its congestion control's, capped by any limit set
    /// and by a control policy's dequeue rate.
    #[inline]
    pub fn rate_in_force(&self) -> u64 {
        crate::nic::cc::CongestionControl::rate(&self.cc).0.min(self.rate_limit).min(self.dequeue_rate)
    }

    /// The send-queue entry whose PSN range holds `psn`.
    pub fn entry_of(&self, psn: u64) -> Option<usize> {
        let i = self.sq.partition_point(|e| e.end_psn() <= psn);
        (i < self.sq.len() && self.sq[i].first_psn <= psn).then_some(i)
    }

    /// Payload the WRITE and SEND packets among PSNs `from..to` carry (a READ's responses are
    /// counted one by one as they arrive in order: its PSNs can be passed while it has a gap).
    pub fn payload_between(&self, from: u64, to: u64, mtu: u32) -> u64 {
        let mtu = mtu as u64;
        let first = self.sq.partition_point(|e| e.end_psn() <= from);
        let mut sum = 0;
        for e in self.sq.range(first..).take_while(|e| e.first_psn < to).filter(|e| !e.is_read()) {
            let (i0, i1) = (from.max(e.first_psn) - e.first_psn, to.min(e.end_psn()) - e.first_psn);
            sum += (i1 * mtu).min(e.wr.len) - (i0 * mtu).min(e.wr.len);
        }
        sum
    }

    /// Wire bytes of packet `psn` of send-queue entry `e` (a READ's request for its first PSN),
    /// with the headers `spec` gives it.
    pub fn packet_bytes(e: &SqEntry, psn: u64, spec: &super::NicSpec) -> u32 {
        if e.is_read() {
            return spec.header_bytes(Opcode::ReadRequest);
        }
        let idx = (psn - e.first_psn) as u32;
        spec.header_bytes(opcode_at(e.family(), idx, e.npkts, e.wr.verb.imm().is_some())) + payload_at(e.wr.len, spec.mtu, idx)
    }

    /// Whether packet `psn` is the last of multi-packet WRITE `e` with earlier packets still
    /// unacknowledged (what an ordering layer's `hold_last_write` holds back).
    pub fn write_end_waits(&self, e: &SqEntry, psn: u64) -> bool {
        e.family() == Family::Write && e.npkts > 1 && psn + 1 == e.end_psn() && self.snd_una < psn
    }

    /// Appends the wire lengths of up to `max` upcoming packets after the first `skip`, in the
    /// order the NIC sends them under a self-timing scheduler, which alone asks (READ responses,
    /// resends, new data whose WQE is fetched by `now`: see `requester::build_next`),
    /// at most `window` new packets in flight, stopping at a WRITE's held last packet when
    /// `hold_last_write`. Returns whether it stopped short of `max` at packets posted but held
    /// back now (READ responses not yet read from memory, the window, a held WRITE end) rather
    /// than because nothing more is ready.
    #[allow(clippy::too_many_arguments)]
    pub fn upcoming(&self, spec: &super::NicSpec, now: Time, window: Option<u64>, hold_last_write: bool, skip: u32, max: u32, out: &mut Vec<u32>) -> bool {
        if self.state != QpState::Ready {
            return false;
        }
        let mut k = 0u32;
        let mut emit = |len: u32, out: &mut Vec<u32>| -> bool {
            if k >= skip {
                out.push(len);
            }
            k += 1;
            out.len() as u32 >= max
        };
        let mut held_back = false;
        for job in &self.reads {
            if job.ready_at > now {
                held_back = true;
                break;
            }
            for i in job.next..job.npkts {
                let len = spec.header_bytes(opcode_at(Family::ReadResponse, i, job.npkts, false)) + payload_at(job.len, spec.mtu, i);
                if emit(len, out) {
                    return false;
                }
            }
        }
        for &psn in &self.resend {
            if let Some(i) = self.entry_of(psn) {
                if emit(Self::packet_bytes(&self.sq[i], psn, spec), out) {
                    return false;
                }
            }
        }
        let mut psn = self.snd_nxt;
        let limit = window.map_or(u64::MAX, |w| self.snd_una + w);
        while psn < self.next_psn {
            let Some(i) = self.entry_of(psn) else { return held_back };
            let e = &self.sq[i];
            if e.ready_at > now {
                // Its WQE is not on the NIC yet: as if not posted (a self-timing scheduler's
                // fetch is what reads it).
                return held_back;
            }
            if psn >= limit || (hold_last_write && self.write_end_waits(e, psn)) {
                return true;
            }
            if emit(Self::packet_bytes(e, psn, spec), out) {
                return false;
            }
            psn = if e.is_read() { e.end_psn() } else { psn + 1 };
        }
        held_back
    }

    /// Bytes in flight by PSN count (an upper bound: full packets).
    pub fn inflight_packets(&self) -> u64 {
        self.snd_nxt.saturating_sub(self.snd_una)
    }
}

impl Qp {
    /// A fresh slot (state Free) with its timer.
    pub fn new_slot(timer: TimerId, spec: &super::NicSpec) -> Qp {
        let cc = super::cc::CcSpec::None {}.build(
            super::cc::FlowParams { line_rate: crate::units::BitsPerSec(1), base_rtt: Time(1), mtu: spec.mtu, payload: spec.mtu, seed: 0 },
            Time::ZERO,
        );
        Qp {
            state: QpState::Free,
            host: 0,
            node: 0,
            peer: 0,
            peer_node: 0,
            peer_host: 0,
            priority: 0,
            udp_sport: 0,
            udp_dport: crate::wire::roce::ROCE_UDP_PORT,
            flow_hash: 0,
            path: crate::fabric::paths::NO_PATH,
            owner: Owner::HOST,
            base_rtt: Time::ZERO,
            pair_bdp: 0,
            timer,
            cc,
            sq: VecDeque::new(),
            next_psn: 0,
            snd_nxt: 0,
            snd_una: 0,
            messages: 0,
            reads_posted: 0,
            retry_left: 0,
            rnr_left: 0,
            rto_at: Time::MAX,
            held_start: Time::ZERO,
            rnr_until: Time::ZERO,
            next_send: Time::ZERO,
            eligible_since: Time::ZERO,
            pace: Pace::default(),
            in_sched: false,
            bytes_sent: 0,
            payload_acked: 0,
            gpu_memory: false,
            sacked: PsnBitmap::default(),
            resend: VecDeque::new(),
            resend_high: 0,
            refusal_resent: None,
            read_rewound: None,
            tx_high: 0,
            probe: false,
            probe_psn: None,
            epsn: 0,
            msn: 0,
            unacked: 0,
            nak_sent: false,
            refused_quiet: None,
            nak_again_at: Time::ZERO,
            nak_refused_psn: 0,
            nak_lost_from: Time::ZERO,
            nak_answered_from: Time::ZERO,
            last_cnp: None,
            ecn_seen: false,
            placed_until: Time::ZERO,
            rq: VecDeque::new(),
            recv_cur: None,
            ooo: PsnBitmap::default(),
            dba: super::ordering::NO_BITMAP,
            rsp: ResponseOrder::default(),
            recv_taken: 0,
            held_ends: Vec::new(),
            held_reads: Vec::new(),
            reads: VecDeque::new(),
            request_turn: false,
            read_sent: SentPsns::default(),
            tx_packets: 0,
            tx_bytes: 0,
            retransmits: 0,
            rate_limit: u64::MAX,
            dequeue_rate: u64::MAX,
            sched_rate: 0,
        }
    }

    /// Opens this slot as a ready queue pair of host `host` (node `node`) owned by `owner`.
    pub fn start(&mut self, spec: &super::NicSpec, host: u32, node: u32, owner: Owner, udp_sport: u16) {
        self.reset(spec);
        self.state = QpState::Ready;
        self.host = host;
        self.node = node;
        self.owner = owner;
        self.priority = spec.priority;
        self.udp_sport = udp_sport;
        self.udp_dport = crate::wire::roce::ROCE_UDP_PORT;
        self.path = crate::fabric::paths::NO_PATH;
    }

    /// Clears a slot for a new connection (keeps its timer and buffers' capacity).
    pub fn reset(&mut self, spec: &super::NicSpec) {
        self.sq.clear();
        self.rq.clear();
        self.reads.clear();
        self.read_sent = SentPsns::default();
        self.resend.clear();
        self.next_psn = 0;
        self.snd_nxt = 0;
        self.snd_una = 0;
        self.messages = 0;
        self.reads_posted = 0;
        self.retry_left = spec.retry_count;
        self.rnr_left = spec.rnr_retry;
        self.rto_at = Time::MAX;
        self.held_start = Time::ZERO;
        self.rnr_until = Time::ZERO;
        self.next_send = Time::ZERO;
        self.eligible_since = Time::ZERO;
        self.pace = Pace::default();
        self.in_sched = false;
        self.bytes_sent = 0;
        self.payload_acked = 0;
        self.sacked.reset(0);
        self.resend_high = 0;
        self.refusal_resent = None;
        self.read_rewound = None;
        self.tx_high = 0;
        self.probe = false;
        self.probe_psn = None;
        self.epsn = 0;
        self.msn = 0;
        self.unacked = 0;
        self.nak_sent = false;
        self.refused_quiet = None;
        self.nak_again_at = Time::ZERO;
        self.nak_refused_psn = 0;
        self.nak_lost_from = Time::ZERO;
        self.nak_answered_from = Time::ZERO;
        self.last_cnp = None;
        self.ecn_seen = false;
        self.placed_until = Time::ZERO;
        self.recv_cur = None;
        self.ooo.reset(0);
        debug_assert_eq!(self.dba, super::ordering::NO_BITMAP, "a closed connection released its bitmap");
        debug_assert_eq!(self.rsp.dba, super::ordering::NO_BITMAP, "a closed connection released its bitmap");
        self.rsp = ResponseOrder::default();
        self.held_ends.clear();
        self.held_reads.clear();
        self.recv_taken = 0;
        self.tx_packets = 0;
        self.tx_bytes = 0;
        self.retransmits = 0;
        self.rate_limit = u64::MAX;
        self.dequeue_rate = u64::MAX;
        self.sched_rate = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sent_read_responses_merge_into_ranges_and_old_ones_fall_below_the_floor() {
        let mut sent = SentPsns::default();
        // 10..13 and 20..22 sent, then 13..20 joins them into one range.
        for psn in [10, 11, 12, 20, 21] {
            assert!(!sent.note(psn));
        }
        assert_eq!(sent.ranges, vec![(10, 13), (20, 22)]);
        assert!(sent.note(11) && sent.note(20));
        for psn in 13..20 {
            assert!(!sent.note(psn));
        }
        assert_eq!(sent.ranges, vec![(10, 22)]);
        // Far more separate READs than are kept: the oldest fall below the floor.
        for k in 0..(READ_SENT_RANGES as u64 + 5) {
            sent.note(100 + 2 * k);
        }
        assert!(sent.ranges.len() <= READ_SENT_RANGES && sent.floor > 22);
        assert!(sent.note(15), "below the floor counts as sent");
    }

    #[test]
    fn packetization() {
        assert_eq!(packets_for(0, 1000), 1);
        assert_eq!(packets_for(1000, 1000), 1);
        assert_eq!(packets_for(1001, 1000), 2);
        assert_eq!(payload_at(2500, 1000, 2), 500);
        assert_eq!(payload_at(0, 1000, 0), 0);
        assert_eq!(opcode_at(Family::Write, 0, 1, false), Opcode::WriteOnly);
        assert_eq!(opcode_at(Family::Write, 0, 3, false), Opcode::WriteFirst);
        assert_eq!(opcode_at(Family::Write, 1, 3, false), Opcode::WriteMiddle);
        assert_eq!(opcode_at(Family::Send, 2, 3, true), Opcode::SendLastImm);
    }

    #[test]
    fn bitmap_advances_over_runs() {
        let mut b = PsnBitmap::default();
        b.reset(10);
        b.set(11);
        b.set(12);
        assert_eq!(b.advance_over_set(), 10);
        b.set(10);
        assert_eq!(b.advance_over_set(), 13);
        b.set(20);
        b.advance_to(15);
        assert!(b.get(20) && !b.get(16));
    }
}
