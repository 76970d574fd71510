//! Packets as small plain structs in a pool, referenced by [`PacketId`].
//!
//! The simulation moves header fields, not bytes. A packet is allocated when a host emits it and
//! freed when it is delivered or dropped; the pool's free list makes steady-state operation
//! allocation-free (the pool grows only to the largest number of packets alive at once).

use crate::units::Time;

/// Index of a packet in the [`PacketPool`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketId(pub u32);

/// What a packet is, as far as the fabric cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketKind {
    /// A data packet of a traffic source.
    Data,
    /// An IEEE 802.1Qbb PFC frame for one priority; `quanta == 0` resumes (XON).
    Pause { priority: u8, quanta: u16 },
}

/// ECN field of the IP header (RFC 3168).
pub const ECN_NOT_ECT: u8 = 0;
pub const ECN_ECT0: u8 = 2;
pub const ECN_CE: u8 = 3;

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
    /// The traffic source (flow) this packet belongs to.
    pub flow: u32,
    /// Sequence number within the flow.
    pub seq: u64,
    /// When the source emitted it.
    pub sent_at: Time,
    /// The switch port it entered through at the current hop (for buffer accounting).
    pub ingress_port: u32,
}

impl Packet {
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
        }
    }
}

/// A slab of packets with a free list.
#[derive(Default)]
pub struct PacketPool {
    slots: Vec<Packet>,
    free: Vec<u32>,
}

impl PacketPool {
    #[inline]
    pub fn alloc(&mut self, p: Packet) -> PacketId {
        if let Some(i) = self.free.pop() {
            self.slots[i as usize] = p;
            PacketId(i)
        } else {
            self.slots.push(p);
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
    #[inline]
    pub fn get_mut(&mut self, id: PacketId) -> &mut Packet {
        &mut self.slots[id.0 as usize]
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
