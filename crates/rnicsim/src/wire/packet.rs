//! Packets as small plain structs in a pool, referenced by [`PacketId`].
//!
//! The simulation moves header fields, not bytes. A packet is allocated when a host emits it and
//! freed when it is delivered or dropped; the pool's free list makes steady-state operation
//! allocation-free (the pool grows only to the largest number of packets alive at once).
//! Queues of waiting packets ([`PacketFifo`]) are linked through the pool's slots, so a queue
//! costs no memory beyond its packets however long it once grew.

use crate::units::Time;
use crate::fabric::paths::NO_PATH;
use crate::wire::int::IntStack;
use crate::wire::roce::{Opcode, Syndrome};
use crate::wire::star::StarMeta;

/// Index of a packet in the [`PacketPool`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PacketId(pub u32);

/// What a packet is, as far as the fabric cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketKind {
    /// A data packet of a traffic source.
    Data,
    /// An IEEE 802.1Qbb PFC frame for one priority; `quanta == 0` resumes (XON).
    Pause { priority: u8, quanta: u16 },
    /// A RoCEv2 packet of the NIC transport; its headers are in [`Packet::roce`].
    Roce,
    /// A StaR packet ([`crate::wire::star`]); its header and descriptor are in the pool's
    /// StaR slot ([`PacketPool::star`]).
    Star,
}

/// The RoCEv2 transport headers the simulation reads (BTH, RETH, AETH, ImmDt fields).
#[derive(Clone, Copy, Debug, Default)]
pub struct RoceHeader {
    /// BTH opcode.
    pub opcode: Opcode,
    /// BTH ack-request bit.
    pub ack_req: bool,
    /// AETH syndrome, on ACKs and NAKs.
    pub syndrome: Syndrome,
    /// Payload bytes carried.
    pub payload: u32,
    /// AETH message sequence number; on a selective NAK, the PSN that arrived out of order.
    pub msn: u32,
    /// RETH virtual address, rkey and DMA length of the whole message. Carried on every packet
    /// of a message (with the packet's byte offset in it) so that a responder checks every
    /// packet against the whole range and a selective-repeat receiver can place out-of-order
    /// data, as IRN does. A READ response carries the responder's address of its payload.
    pub va: u64,
    pub offset: u32,
    pub rkey: u32,
    pub dma_len: u32,
    pub imm: u32,
    /// Index of the message in its queue pair's send queue (IRN's "recv WQE SN").
    pub msg: u32,
    /// Eunomia's last-packet bit: the last packet of everything the sender has posted.
    pub last: bool,
    /// Timestamp echoed back in ACKs for RTT measurement.
    pub ts: Time,
    /// On an ACK or NAK: the UDP source port (virtual path) of the packet it answers, for a
    /// multipath sender (MP-RDMA §4.1).
    pub path: u16,
}

/// ECN field of the IP header (RFC 3168).
pub const ECN_NOT_ECT: u8 = 0;
pub const ECN_ECT0: u8 = 2;
pub const ECN_CE: u8 = 3;

/// The time to live a source gives its packets.
pub const TTL: u8 = 64;

/// The `flow` of a packet a switch makes for itself (ConWeave's RTT requests and replies,
/// NOTIFY and CLEAR): it belongs to no queue pair.
pub const SWITCH_CONTROL_FLOW: u32 = u32::MAX;

/// The header fields the fabric reads, plus bookkeeping for statistics.
#[derive(Clone, Copy, Debug)]
pub struct Packet {
    pub kind: PacketKind,
    /// Source and destination node ids.
    pub src: u32,
    pub dst: u32,
    /// Destination host index (the routing table's column).
    pub dst_host: u32,
    /// Bytes on the wire.
    pub size: u32,
    /// Traffic class 0..7 (0 is served first under strict priority).
    pub priority: u8,
    pub ecn: u8,
    pub udp_sport: u16,
    pub udp_dport: u16,
    /// Hash of the flow's 5-tuple, computed once at the source; each switch mixes in its own seed.
    pub flow_hash: u32,
    /// Raw traffic: the source (flow) this packet belongs to. RoCE: the destination queue pair.
    pub flow: u32,
    /// Raw traffic: sequence number within the flow. RoCE: the PSN (unwrapped; 24 bits on the wire).
    pub seq: u64,
    /// When the source emitted it.
    pub sent_at: Time,
    /// The switch port it entered through at the current hop (for buffer accounting).
    pub ingress_port: u32,
    /// Switch hops it may still take; a switch drops a packet that arrives with 1 left (IPv4's
    /// time to live, which bounds the detours of deflected packets).
    pub ttl: u8,
    /// Transport headers (zero for raw traffic and PFC).
    pub roce: RoceHeader,
}

impl Packet {
    /// Whether it carries application data: RDMA payload or a raw traffic packet (what the
    /// switches' load balancers steer, and not ACKs, NAKs, READ requests, CNPs or PFC).
    #[inline]
    pub fn carries_data(&self) -> bool {
        match self.kind {
            PacketKind::Roce => self.roce.payload > 0,
            PacketKind::Data => true,
            _ => false,
        }
    }

    pub fn pause(priority: u8, quanta: u16, size: u32) -> Packet {
        Packet {
            kind: PacketKind::Pause { priority, quanta },
            src: u32::MAX,
            dst: u32::MAX,
            dst_host: u32::MAX,
            size,
            priority: 0,
            ecn: ECN_NOT_ECT,
            udp_sport: 0,
            udp_dport: 0,
            flow_hash: 0,
            flow: u32::MAX,
            seq: 0,
            sent_at: Time::ZERO,
            ingress_port: u32::MAX,
            ttl: TTL,
            roce: RoceHeader::default(),
        }
    }
}

/// The load-balancing header a switch policy may put on a packet for the switches after it,
/// kept in the pool's side slot so that runs whose policy carries none pay nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LbTag {
    #[default]
    None,
    Conga(CongaHeader),
    ConWeave(ConWeaveHeader),
}

/// CONGA's overlay header (Alizadeh et al., SIGCOMM 2014, §3.2): the path, its congestion so
/// far, and one piggybacked feedback entry for the reverse direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CongaHeader {
    /// The path: a label the source switch chose among the paths to the destination switch.
    pub path: u32,
    /// What is left of the label for the switches still to come (see [`crate::fabric::lb`]).
    pub rest: u32,
    /// The switch that put the header on.
    pub src_switch: u32,
    /// The largest congestion estimate of the links crossed so far (quantized).
    pub ce: u16,
    /// Feedback for the source switch of the reverse direction: a path label of its and that
    /// path's congestion as this direction's source switch last heard it.
    pub fb: Option<(u32, u16)>,
}

/// What a ConWeave packet is (Song et al., SIGCOMM 2023, §4): data, or one of the control
/// packets the destination ToR sends back to the source ToR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConWeaveKind {
    /// A data packet; `init` asks for an RTT_REPLY, `tail` marks the last packet on the old
    /// path (it asks for a CLEAR).
    Data { init: bool, tail: bool },
    /// RTT_REPLY (`clear` false) or CLEAR (`clear` true) for an epoch.
    Reply { clear: bool },
    /// The path of a data packet that arrived ECN-marked.
    Notify,
}

/// ConWeave's header (§4.1): the path, the epoch and phase (rerouted or not) of the flow's
/// packets at the source ToR, and the timestamps the destination ToR predicts the arrival of
/// the old path's last packet from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConWeaveHeader {
    pub kind: ConWeaveKind,
    /// The path label (data and NOTIFY) and what is left of it for the switches to come.
    pub path: u32,
    pub rest: u32,
    pub epoch: u32,
    /// 0 before the reroute of the epoch, 1 after it.
    pub phase: u8,
    /// When the source ToR sent the packet, and when it sent the epoch's TAIL (if any).
    pub tx_at: Time,
    pub tail_at: Time,
    /// The switch that put the header on.
    pub src_switch: u32,
}

/// A slab of packets with a free list, and the packets' extension slots (indexed like the
/// packets, grown only when a run uses them): the INT stack and real payload bytes.
#[derive(Default)]
pub struct PacketPool {
    slots: Vec<Packet>,
    free: Vec<u32>,
    /// Per slot: the next packet in the [`PacketFifo`] the packet waits in ([`NIL`] at a tail).
    next: Vec<u32>,
    int: Vec<IntStack>,
    payload: Vec<Vec<u8>>,
    /// The path a packet carries ([`crate::fabric::paths`]), when any packet ever carried one.
    path: Vec<u32>,
    /// StaR packets' headers and descriptors, when a run has StaR connections.
    star: Vec<StarMeta>,
    /// Load-balancing headers ([`LbTag`]), when the switches' policy carries them.
    lb: Vec<LbTag>,
}

impl PacketPool {
    #[inline]
    pub fn alloc(&mut self, p: Packet) -> PacketId {
        if let Some(i) = self.free.pop() {
            self.slots[i as usize] = p;
            if let Some(path) = self.path.get_mut(i as usize) {
                *path = NO_PATH;
            }
            if let Some(tag) = self.lb.get_mut(i as usize) {
                *tag = LbTag::None;
            }
            PacketId(i)
        } else {
            self.slots.push(p);
            self.next.push(NIL);
            PacketId((self.slots.len() - 1) as u32)
        }
    }
    #[inline]
    pub fn free(&mut self, id: PacketId) {
        debug_assert!(!self.free.contains(&id.0) || self.free.len() > 4096, "double free of packet {}", id.0);
        self.free.push(id.0);
    }
    #[inline]
    pub fn get(&self, id: PacketId) -> &Packet {
        &self.slots[id.0 as usize]
    }

    /// Hints the CPU to bring packet `id`'s slot into its second-level cache (no effect on any
    /// result). For the packet a queue or a link will hand over next, about a serialization
    /// time from now: with many packets waiting, that slot was last touched when the packet
    /// was queued, long enough ago to have left the caches.
    #[inline]
    pub fn prefetch(&self, id: PacketId) {
        #[cfg(target_arch = "x86_64")]
        if let Some(p) = self.slots.get(id.0 as usize) {
            let at = p as *const Packet as *const i8;
            // A slot is not aligned to a cache line, so one of 112 bytes may touch three lines:
            // fetch the line of every 64th byte and the line of the last.
            // SAFETY: a prefetch reads nothing and writes nothing; every address is inside the slot.
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T1};
                const SIZE: usize = std::mem::size_of::<Packet>();
                let mut off = 0;
                while off < SIZE {
                    _mm_prefetch(at.wrapping_add(off), _MM_HINT_T1);
                    off += 64;
                }
                _mm_prefetch(at.wrapping_add(SIZE - 1), _MM_HINT_T1);
            }
        }
    }
    #[inline]
    pub fn get_mut(&mut self, id: PacketId) -> &mut Packet {
        &mut self.slots[id.0 as usize]
    }
    /// The INT stack slot of packet `id` (HPCC telemetry).
    #[inline]
    pub fn int_mut(&mut self, id: PacketId) -> &mut IntStack {
        let i = id.0 as usize;
        if self.int.len() <= i {
            self.int.resize(i + 1, IntStack::default());
        }
        &mut self.int[i]
    }
    /// A copy of packet `id`'s INT stack (empty if never stamped).
    #[inline]
    pub fn int(&self, id: PacketId) -> IntStack {
        self.int.get(id.0 as usize).copied().unwrap_or_default()
    }
    /// Stores the payload bytes packet `id` carries (real-bytes host memory).
    pub fn set_payload(&mut self, id: PacketId, data: &[u8]) {
        let i = id.0 as usize;
        if self.payload.len() <= i {
            self.payload.resize_with(i + 1, Vec::new);
        }
        self.payload[i].clear();
        self.payload[i].extend_from_slice(data);
    }
    /// The payload bytes packet `id` carries (empty in size-only runs).
    pub fn payload(&self, id: PacketId) -> &[u8] {
        self.payload.get(id.0 as usize).map_or(&[], |v| v.as_slice())
    }
    /// Allocates a packet that carries `path` ([`NO_PATH`]: none, the slot is left alone).
    #[inline]
    pub fn alloc_on_path(&mut self, p: Packet, path: u32) -> PacketId {
        let id = self.alloc(p);
        if path != NO_PATH {
            self.set_path(id, path);
        }
        id
    }
    /// Makes packet `id` carry path `path` (see [`crate::fabric::paths`]).
    pub fn set_path(&mut self, id: PacketId, path: u32) {
        let i = id.0 as usize;
        if self.path.len() <= i {
            self.path.resize(i + 1, NO_PATH);
        }
        self.path[i] = path;
    }
    /// Stores a StaR packet's header and descriptor.
    pub fn set_star(&mut self, id: PacketId, meta: StarMeta) {
        let i = id.0 as usize;
        if self.star.len() <= i {
            self.star.resize(i + 1, StarMeta::default());
        }
        self.star[i] = meta;
    }
    /// A StaR packet's header and descriptor.
    pub fn star(&self, id: PacketId) -> StarMeta {
        self.star.get(id.0 as usize).copied().unwrap_or_default()
    }
    /// Packet `id` and its load-balancing header, both to change.
    #[inline]
    pub fn with_lb_tag(&mut self, id: PacketId) -> (&mut Packet, &mut LbTag) {
        let i = id.0 as usize;
        if self.lb.len() <= i {
            self.lb.resize(self.slots.len().max(i + 1), LbTag::None);
        }
        (&mut self.slots[i], &mut self.lb[i])
    }
    /// Packet `id`'s load-balancing header ([`LbTag::None`] if it carries none).
    pub fn lb_tag(&self, id: PacketId) -> LbTag {
        self.lb.get(id.0 as usize).copied().unwrap_or_default()
    }
    /// The path packet `id` carries, or [`NO_PATH`].
    #[inline]
    pub fn path(&self, id: PacketId) -> u32 {
        self.path.get(id.0 as usize).copied().unwrap_or(NO_PATH)
    }
    /// Packets alive now.
    pub fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }
    /// The most packets ever alive at once (the pool's size).
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }
}

/// No packet: the end of a [`PacketFifo`].
const NIL: u32 = u32::MAX;

/// A first-in first-out queue of packets, linked through their slots in the [`PacketPool`]:
/// three words, whatever it held before. A packet waits in at most one queue at a time.
#[derive(Clone, Copy, Debug)]
pub struct PacketFifo {
    head: u32,
    tail: u32,
    len: u32,
}

impl Default for PacketFifo {
    fn default() -> Self {
        PacketFifo { head: NIL, tail: NIL, len: 0 }
    }
}

impl PacketFifo {
    #[inline]
    pub fn push_back(&mut self, pool: &mut PacketPool, id: PacketId) {
        pool.next[id.0 as usize] = NIL;
        if self.tail == NIL {
            self.head = id.0;
        } else {
            pool.next[self.tail as usize] = id.0;
        }
        self.tail = id.0;
        self.len += 1;
    }
    #[inline]
    pub fn push_front(&mut self, pool: &mut PacketPool, id: PacketId) {
        pool.next[id.0 as usize] = self.head;
        self.head = id.0;
        if self.tail == NIL {
            self.tail = id.0;
        }
        self.len += 1;
    }
    #[inline]
    pub fn pop_front(&mut self, pool: &PacketPool) -> Option<PacketId> {
        if self.head == NIL {
            return None;
        }
        let id = self.head;
        self.head = pool.next[id as usize];
        if self.head == NIL {
            self.tail = NIL;
        }
        self.len -= 1;
        Some(PacketId(id))
    }
    #[inline]
    pub fn front(&self) -> Option<PacketId> {
        (self.head != NIL).then_some(PacketId(self.head))
    }
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.head == NIL
    }
    /// The packets from head to tail.
    pub fn iter<'a>(&self, pool: &'a PacketPool) -> impl Iterator<Item = PacketId> + 'a {
        let mut at = self.head;
        std::iter::from_fn(move || {
            if at == NIL {
                return None;
            }
            let id = at;
            at = pool.next[id as usize];
            Some(PacketId(id))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_keeps_order_through_the_pool_and_reuses_slots() {
        let mut pool = PacketPool::default();
        let mut a = PacketFifo::default();
        let mut b = PacketFifo::default();
        let ids: Vec<PacketId> = (0..6).map(|i| pool.alloc(Packet::pause(0, i, 64))).collect();
        for &id in &ids[..3] {
            a.push_back(&mut pool, id);
        }
        for &id in &ids[3..5] {
            b.push_back(&mut pool, id);
        }
        a.push_front(&mut pool, ids[5]);
        assert_eq!(a.iter(&pool).collect::<Vec<_>>(), vec![ids[5], ids[0], ids[1], ids[2]]);
        assert_eq!(b.iter(&pool).collect::<Vec<_>>(), vec![ids[3], ids[4]]);
        assert_eq!((a.len(), b.len()), (4, 2));
        assert_eq!(a.pop_front(&pool), Some(ids[5]));
        assert_eq!(a.pop_front(&pool), Some(ids[0]));
        pool.free(ids[0]);
        pool.free(ids[5]);
        // A freed slot goes into another queue; the first queue's links are untouched.
        let c = pool.alloc(Packet::pause(0, 9, 64));
        b.push_back(&mut pool, c);
        assert_eq!(a.iter(&pool).collect::<Vec<_>>(), vec![ids[1], ids[2]]);
        assert_eq!(b.iter(&pool).collect::<Vec<_>>(), vec![ids[3], ids[4], c]);
        while a.pop_front(&pool).is_some() {}
        assert!(a.is_empty() && a.front().is_none() && a.len() == 0);
        a.push_front(&mut pool, ids[1]);
        assert_eq!((a.front(), a.len()), (Some(ids[1]), 1));
        assert_eq!(pool.capacity(), 6, "slots reused, none added");
    }

    #[test]
    fn packet_stays_small() {
        // Packets are copied and touched on every hop: keep them within two cache lines.
        assert!(std::mem::size_of::<super::Packet>() <= 128, "{}", std::mem::size_of::<super::Packet>());
        println!("Packet: {} bytes, RoceHeader: {} bytes", std::mem::size_of::<super::Packet>(), std::mem::size_of::<super::RoceHeader>());
    }
}
