//! The receiver ordering layer (`[nic.ordering]`; Eunomia §3): what a responder does with a
//! data packet that arrives ahead of the expected PSN, and how many bytes of on-chip memory
//! that takes.
//!
//! - `eunomia`: the hybrid-dynamic bitmap and memory controller of `crates/eunomia` (one per
//!   NIC; each queue pair holds only its Dynamic BM Address). A bitmap exists only while a
//!   connection has seen reordering and until its last packet arrives.
//! - `static`: a fixed bitmap of `bits` per connection, allocated for every open connection
//!   (the §4 baseline: 32 + 9 = 41 bytes at 256 bits; IRN and MP-RDMA are of this kind).
//! - `ideal`: no memory accounted, any packet up to 65,535 PSNs past the expected one tracked
//!   (the span a SACK can name; those beyond are refused).
//!
//! Every layer answers ACK for in-order packets, SACK for tracked out-of-order ones and NACK
//! (once per gap) for packets it cannot track, which it drops (§3.5.1). WRITE data is placed
//! out of order at its address, SEND data in the receive WQE its message number names; a message
//! completes (a SEND's or WRITE with immediate's receive WQE) only once whole in order; a SEND
//! whose receive WQE is not posted is refused (NACK). A requester's NIC serves the READ
//! responses it receives the same way (placed at their local address, tracked, the READ moving
//! on once they are whole in order), in a second stream with its own expected PSN and bitmap;
//! a refused response re-issues the READ from the gap. The sender's side (§3.2): a SACK marks its
//! PSN received and never triggers recovery; a NACK or timeout triggers `nic.recovery`; data
//! packets carry 33 bits more header (5 bytes); the last packet of a multi-packet WRITE waits
//! until every earlier packet is acknowledged (§3.5.2, `hold_last_write`). With
//! `recover_on_sack` the sender is IRN's instead: a SACK starts recovery for the holes below it.

use crate::nic::qp::{Qp, SACK_RANGE};
use crate::units::{Bytes, Time};
use eunomia::{Arrival, OrderingLayer, Refusal, NULL};
use serde::{Deserialize, Serialize};

/// Header bytes Eunomia adds to every data packet (the connection's first PSN and a
/// last-packet bit: 33 bits, §3.2.1).
pub const HEADER_BYTES: u32 = 5;
/// Most memory one NIC's Eunomia master array may have: on-chip SRAM (the paper's FPGA design
/// has 2 KiB; 64 MiB is past any NIC's), and every NIC of the fabric allocates its own.
pub const MAX_MEMORY: Bytes = Bytes(64 << 20);
/// A static bitmap's state besides its bits: head and last PSN (4 bytes each) and the head's
/// index (§4).
pub const STATIC_STATE_BYTES: u64 = 9;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    #[default]
    Eunomia,
    Static,
    Ideal,
}

impl Layer {
    /// The layer as the scenario and the summary spell it.
    pub fn name(self) -> &'static str {
        match self {
            Layer::Eunomia => "eunomia",
            Layer::Static => "static",
            Layer::Ideal => "ideal",
        }
    }
}

/// `[nic.ordering]`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrderingSpec {
    #[serde(default)]
    pub layer: Layer,
    /// Eunomia: bits per bitmap block.
    #[serde(default = "default_block_bits")]
    pub block_bits: u32,
    /// Eunomia: most bits one connection's bitmap may reach.
    #[serde(default = "default_cap_bits")]
    pub cap_bits: u32,
    /// Eunomia: the memory controller's master array (2-byte blocks).
    #[serde(default = "default_memory")]
    pub memory: Bytes,
    /// Static: bits of every connection's bitmap.
    #[serde(default = "default_cap_bits")]
    pub bits: u32,
    /// Hold the last packet of a multi-packet WRITE at the sender until every earlier packet
    /// is acknowledged in order, so a receiver polling it never reads a partial message.
    #[serde(default = "default_true")]
    pub hold_last_write: bool,
    /// The sender reacts to a SACK as IRN's does (Mittal et al., SIGCOMM 2018, §3.1): loss
    /// recovery starts at once and resends every unacknowledged PSN below the SACKed one, so a
    /// packet that is only late is sent twice. Off (Eunomia, §3.2.2): a SACK marks its PSN
    /// received and only a NACK or a timeout starts recovery.
    #[serde(default)]
    pub recover_on_sack: bool,
}

fn default_block_bits() -> u32 {
    16
}
fn default_cap_bits() -> u32 {
    256
}
fn default_memory() -> Bytes {
    Bytes(256 * 1024)
}
fn default_true() -> bool {
    true
}

impl OrderingSpec {
    pub fn eunomia_config(&self) -> eunomia::Config {
        eunomia::Config { block_bits: self.block_bits, cap_bits: self.cap_bits, memory_blocks: (self.memory.0.min(MAX_MEMORY.0) / eunomia::BLOCK_BYTES as u64) as u32 }
    }

    /// Keys that are out of range, with why.
    pub fn check(&self) -> Vec<(&'static str, String)> {
        let mut bad = Vec::new();
        match self.layer {
            Layer::Eunomia => {
                if self.memory.0 > MAX_MEMORY.0 {
                    bad.push(("memory", format!("{} B is more than a NIC's on-chip memory: at most {} B (64 MiB), which every NIC allocates", self.memory.0, MAX_MEMORY.0)));
                } else if let Err(e) = self.eunomia_config().check() {
                    // A key left at its default is named with its value's origin, so a block
                    // size that the default cap does not divide says which key to set.
                    let why = if e.key == "cap_bits" && self.cap_bits == default_cap_bits() { format!("{e} (cap_bits is {} unless set)", default_cap_bits()) } else { e.to_string() };
                    bad.push((e.key, why));
                }
            }
            Layer::Static => {
                if self.bits == 0 || self.bits as u64 > SACK_RANGE {
                    bad.push(("bits", format!("must be 1..={SACK_RANGE}")));
                }
            }
            Layer::Ideal => {}
        }
        bad
    }

    /// Keys set away from their defaults that the chosen layer does not read (Eunomia's
    /// `block_bits`, `cap_bits` and `memory`; the static layer's `bits`), with why: a
    /// warning, since the run goes on without them.
    pub fn unused_keys(&self) -> Vec<(&'static str, String)> {
        let layer = self.layer.name();
        let eunomia_keys = [("block_bits", self.block_bits != default_block_bits()), ("cap_bits", self.cap_bits != default_cap_bits()), ("memory", self.memory != default_memory())];
        let mut unused: Vec<&'static str> = Vec::new();
        if self.layer != Layer::Eunomia {
            unused.extend(eunomia_keys.iter().filter(|k| k.1).map(|k| k.0));
        }
        if self.layer != Layer::Static && self.bits != default_cap_bits() {
            unused.push("bits");
        }
        unused.into_iter().map(|k| (k, format!("is not read by layer = \"{layer}\" (it has no effect)"))).collect()
    }

    /// A bitmap of one bit, with why: bit 0 is the expected PSN itself, so the layer holds no
    /// packet out of order and refuses every one (a warning: it runs, as no layer would).
    pub fn one_bit(&self) -> Option<(&'static str, String)> {
        let key = match self.layer {
            Layer::Eunomia if self.cap_bits == 1 => "cap_bits",
            Layer::Static if self.bits == 1 => "bits",
            _ => return None,
        };
        Some((key, "1 bit covers only the expected PSN: every packet out of order is refused, as if there were no ordering layer".into()))
    }

    /// Header bytes the layer adds to each data packet.
    pub fn header_bytes(&self) -> u32 {
        if self.layer == Layer::Eunomia {
            HEADER_BYTES
        } else {
            0
        }
    }
}

/// Which of a queue pair's two incoming streams a packet belongs to: each has its own expected
/// PSN and bitmaps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// WRITE and SEND data from the peer (`qp.epsn`, `qp.dba`, `qp.ooo`).
    Requests,
    /// READ responses to this queue pair's own READs (`qp.rsp`): they number its own PSNs.
    Responses,
}

/// What the responder does with a data packet at or beyond the expected PSN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// In order: everything below `next` has arrived (ACK).
    InOrder { next: u64 },
    /// Out of order, tracked: place it and answer SACK.
    Tracked,
    /// Out of order, already tracked.
    Duplicate,
    /// Out of order and not tracked: drop it and answer NACK.
    Refused,
}

/// Counters of one NIC's ordering layer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct OrderingCounters {
    pub in_order: u64,
    pub sacks: u64,
    /// Packets refused (dropped). Each is answered by a NACK, but while one NACK for a gap is
    /// out the refusals after it are not (see the responder), so NACKs sent may be fewer.
    pub nacks: u64,
    /// NACKs sent for refusals: one per gap, and again when refusals show the last was lost.
    pub nacks_sent: u64,
    /// The refusals by why (they add up to `nacks`): beyond what the bitmap reaches (its cap,
    /// or a static layer's bits), no room in the layer's memory, or a packet that could not be
    /// placed out of order (a SEND with no receive posted, a failed access check). A memory
    /// study tells a cap too small from a memory too small by these.
    pub refused_reach: u64,
    pub refused_memory: u64,
    pub refused_unplaceable: u64,
    /// Packets that arrived again: below the expected PSN, or already held in the bitmap.
    pub duplicates: u64,
    /// Bitmaps created (Eunomia: first out-of-order packet of a connection).
    pub bitmaps_created: u64,
    pub peak_bytes: u64,
    /// Time-average bytes in use over the run: metadata and bitmaps.
    pub mean_bytes: f64,
    /// Time-average bytes of the bitmaps alone.
    pub mean_bitmap_bytes: f64,
    /// Time-average open connections on the NIC: every open queue pair, senders included (see
    /// [`NicOrdering::opened`]).
    pub mean_connections: f64,
    /// `mean_bytes / mean_connections` and `mean_bitmap_bytes / mean_connections` (Eunomia
    /// Fig. 9's average memory per connection; 0 without connections).
    pub mean_bytes_per_connection: f64,
    pub mean_bitmap_bytes_per_connection: f64,
}

impl OrderingCounters {
    /// Adds another NIC's counters (peaks and means add up to the whole fabric's).
    pub fn add(&mut self, o: &OrderingCounters) {
        self.in_order += o.in_order;
        self.sacks += o.sacks;
        self.nacks += o.nacks;
        self.nacks_sent += o.nacks_sent;
        self.refused_reach += o.refused_reach;
        self.refused_memory += o.refused_memory;
        self.refused_unplaceable += o.refused_unplaceable;
        self.duplicates += o.duplicates;
        self.bitmaps_created += o.bitmaps_created;
        self.peak_bytes += o.peak_bytes;
        self.mean_bytes += o.mean_bytes;
        self.mean_bitmap_bytes += o.mean_bitmap_bytes;
        self.mean_connections += o.mean_connections;
        let per = |x: f64| if self.mean_connections > 0.0 { x / self.mean_connections } else { 0.0 };
        self.mean_bytes_per_connection = per(self.mean_bytes);
        self.mean_bitmap_bytes_per_connection = per(self.mean_bitmap_bytes);
    }
}

/// One NIC's ordering layer and its memory accounting.
#[derive(Clone, Debug)]
pub struct NicOrdering {
    spec: OrderingSpec,
    eunomia: Option<OrderingLayer>,
    counters: OrderingCounters,
    /// Open connections (a static bitmap each).
    connections: u64,
    /// Byte-picoseconds of memory and of bitmaps alone, up to `since`.
    area: u128,
    bitmap_area: u128,
    connection_area: u128,
    since: Time,
}

impl NicOrdering {
    pub fn new(spec: &OrderingSpec) -> NicOrdering {
        let eunomia = (spec.layer == Layer::Eunomia).then(|| OrderingLayer::new(spec.eunomia_config()));
        NicOrdering { spec: *spec, eunomia, counters: OrderingCounters::default(), connections: 0, area: 0, bitmap_area: 0, connection_area: 0, since: Time::ZERO }
    }

    /// Bytes in use now: metadata and bitmaps, and the bitmaps alone.
    pub fn bytes(&self) -> (u64, u64) {
        match (&self.eunomia, self.spec.layer) {
            (Some(l), _) => {
                let all = l.memory().bytes_in_use();
                let meta = l.active() as u64 * l.config().metadata_blocks() as u64 * eunomia::BLOCK_BYTES as u64;
                (all, all - meta)
            }
            (None, Layer::Static) => {
                let bits = (self.spec.bits as u64).div_ceil(8);
                (self.connections * (bits + STATIC_STATE_BYTES), self.connections * bits)
            }
            _ => (0, 0),
        }
    }

    /// Integrates memory in use up to `now` (call before anything changes it).
    fn account(&mut self, now: Time) {
        let dt = now.0.saturating_sub(self.since.0) as u128;
        let (all, bitmaps) = self.bytes();
        self.area += all as u128 * dt;
        self.bitmap_area += bitmaps as u128 * dt;
        self.connection_area += self.connections as u128 * dt;
        self.since = self.since.max(now);
    }

    fn note_peak(&mut self) {
        self.counters.peak_bytes = self.counters.peak_bytes.max(self.bytes().0);
    }

    /// A queue pair opened on this NIC: a connection of the layer (any queue pair may receive,
    /// data as responder or READ responses as requester, so a static layer reserves a bitmap
    /// for each, senders included).
    pub fn opened(&mut self, now: Time) {
        self.account(now);
        self.connections += 1;
        self.note_peak();
    }

    /// A connection closed: its bitmaps are released.
    pub fn closed(&mut self, now: Time, qp: &mut Qp) {
        self.account(now);
        self.connections = self.connections.saturating_sub(1);
        if let Some(l) = &mut self.eunomia {
            l.release(&mut qp.dba);
            l.release(&mut qp.rsp.dba);
        }
    }

    /// Packet `psn` of `qp`'s `stream` arrived at or beyond that stream's expected PSN; `last` is
    /// the sender's last-packet bit, `placeable` whether it could be placed out of order (a WRITE
    /// with its access check passed, a SEND with its receive WQE posted, any READ response).
    pub fn arrive(&mut self, now: Time, qp: &mut Qp, stream: Stream, psn: u64, last: bool, placeable: bool) -> Verdict {
        let verdict = self.take(now, qp, stream, psn, last, placeable);
        match verdict {
            Verdict::InOrder { .. } => self.counters.in_order += 1,
            Verdict::Tracked => self.counters.sacks += 1,
            Verdict::Duplicate => self.counters.duplicates += 1,
            Verdict::Refused => self.counters.nacks += 1,
        }
        verdict
    }

    /// Moves `qp`'s request stream past `psn`, its expected PSN, which no packet carries (a PSN
    /// after the first of a READ request): the layer's state moves as for an in-order packet,
    /// and nothing is counted. Returns the new expected PSN.
    pub fn pass(&mut self, now: Time, qp: &mut Qp, psn: u64, last: bool) -> u64 {
        let Verdict::InOrder { next } = self.take(now, qp, Stream::Requests, psn, last, true) else { unreachable!("the expected PSN is in order") };
        next
    }

    /// What the layer does with packet `psn` of `qp`'s `stream`, its state moved accordingly;
    /// [`Self::arrive`] counts it, [`Self::pass`] does not.
    fn take(&mut self, now: Time, qp: &mut Qp, stream: Stream, psn: u64, last: bool, placeable: bool) -> Verdict {
        self.account(now);
        let (expected, dba, ooo) = match stream {
            Stream::Requests => (qp.epsn, &mut qp.dba, &mut qp.ooo),
            Stream::Responses => (qp.rsp.epsn, &mut qp.rsp.dba, &mut qp.rsp.ooo),
        };
        let d = psn - expected;
        let c = &mut self.counters;
        let verdict = if let Some(l) = &mut self.eunomia {
            if d > 0 && !placeable {
                c.refused_unplaceable += 1;
                Verdict::Refused
            } else {
                let created = l.stats().created;
                let v = match l.arrive(dba, expected as u32, psn as u32, last) {
                    Arrival::InOrder { next } => Verdict::InOrder { next: psn + next.wrapping_sub(psn as u32) as u64 },
                    Arrival::Tracked => Verdict::Tracked,
                    Arrival::Duplicate => Verdict::Duplicate,
                    Arrival::Refused(why) => {
                        match why {
                            Refusal::Cap => c.refused_reach += 1,
                            Refusal::Memory => c.refused_memory += 1,
                        }
                        Verdict::Refused
                    }
                };
                self.counters.bitmaps_created += l.stats().created - created;
                v
            }
        } else {
            let range = if self.spec.layer == Layer::Static { self.spec.bits as u64 } else { SACK_RANGE };
            if d == 0 {
                ooo.advance_to(psn + 1);
                Verdict::InOrder { next: ooo.advance_over_set() }
            } else if !placeable {
                c.refused_unplaceable += 1;
                Verdict::Refused
            } else if d >= range {
                c.refused_reach += 1;
                Verdict::Refused
            } else if ooo.get(psn) {
                Verdict::Duplicate
            } else {
                ooo.set(psn);
                Verdict::Tracked
            }
        };
        self.note_peak();
        verdict
    }

    /// Moves `qp`'s READ-response stream on to `to` over PSNs that have no response (those of
    /// WRITEs and SENDs between READs), as if each had arrived in order; nothing is counted.
    /// Returns the stream's expected PSN, past `to` when responses just after it were tracked.
    pub fn skip_responses(&mut self, now: Time, qp: &mut Qp, to: u64) -> u64 {
        if qp.rsp.epsn >= to {
            return qp.rsp.epsn;
        }
        self.account(now);
        let r = &mut qp.rsp;
        match &mut self.eunomia {
            Some(l) => {
                // Nothing the bitmap tracks lies below `to`, so each step moves one PSN.
                while r.epsn < to && r.dba != NULL {
                    let at = r.epsn as u32;
                    let Arrival::InOrder { next } = l.arrive(&mut r.dba, at, at, false) else { unreachable!("the expected PSN is in order") };
                    r.epsn += next.wrapping_sub(at) as u64;
                }
                r.epsn = r.epsn.max(to);
            }
            None => {
                r.ooo.advance_to(to);
                r.epsn = r.ooo.advance_over_set();
            }
        }
        r.epsn
    }

    /// A packet below its stream's expected PSN arrived (a resend of one already in order):
    /// counted with the duplicates the layer itself holds, never passed to it.
    pub fn note_duplicate(&mut self) {
        self.counters.duplicates += 1;
    }

    /// The responder sent a NACK for a refusal.
    pub fn note_nack_sent(&mut self) {
        self.counters.nacks_sent += 1;
    }

    /// The counters, with the time averages taken up to `end`.
    pub fn counters(&self, end: Time) -> OrderingCounters {
        let dt = end.0.saturating_sub(self.since.0) as u128;
        let (all, bitmaps) = self.bytes();
        let span = end.0.max(1) as f64;
        let area = (self.area + all as u128 * dt) as f64;
        let bitmap_area = (self.bitmap_area + bitmaps as u128 * dt) as f64;
        let connection_area = (self.connection_area + self.connections as u128 * dt) as f64;
        let per = |a: f64| if connection_area > 0.0 { a / connection_area } else { 0.0 };
        OrderingCounters {
            mean_bytes: area / span,
            mean_bitmap_bytes: bitmap_area / span,
            mean_connections: connection_area / span,
            mean_bytes_per_connection: per(area),
            mean_bitmap_bytes_per_connection: per(bitmap_area),
            ..self.counters
        }
    }
}

/// A connection with no bitmap (the Dynamic BM Address of a fresh queue pair).
pub const NO_BITMAP: u32 = NULL;

/// Summary of the ordering layers (`summary.json` `ordering`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct OrderingSummary {
    pub layer: String,
    pub total: OrderingCounters,
    /// NICs that received data, by host.
    pub per_nic: Vec<NamedOrdering>,
}

#[derive(Clone, Debug, Serialize)]
pub struct NamedOrdering {
    pub name: String,
    #[serde(flatten)]
    pub counters: OrderingCounters,
}
