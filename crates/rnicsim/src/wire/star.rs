//! StaR's packets (StaR §III-B, Table I; format §IV-A, Figs. 7 and 8).
//!
//! Seven packet types travel between a connection's stateful and stateless sides, in UDP on two
//! dedicated ports: one for packets bound to stateless processing, one for packets bound to
//! stateful processing, so a NIC classifies them by port alone. The 20-byte StaR header follows
//! the UDP header:
//!
//! ```text
//!  0      4    6 7 8                                 31
//! +------+----+-+-+----------------------------------+
//! |PTYPE | OPT|M|A|              QPN (24)            |
//! +------+----+-+-+----------------------------------+
//! |   rsvd (8)    |              PSN (24)            |
//! +---------------+----------------------------------+
//! |                    ADDR_H (32)                   |
//! |                    ADDR_L (32)                   |
//! +-------------------------+------------------------+
//! |        LEN (16)         |     CHECKSUM (16)      |
//! +-------------------------+------------------------+
//! ```
//!
//! Fig. 8 draws the QPN and PSN rows with reserved bits beside them; we pack the flags with the
//! QPN so the header is the 20 bytes Fig. 7 gives it. The simulation carries the decoded
//! [`StarHeader`] (and the WQE or CQE a WQEP or CQEP carries) in a packet-pool slot;
//! [`StarHeader::encode`] produces the bytes a capture shows.

use crate::nic::verbs::{CompletionKind, Status, Verb};

/// UDP destination port of packets for a NIC's stateless processing.
pub const STATELESS_PORT: u16 = 4793;
/// UDP destination port of packets for a NIC's stateful processing.
pub const STATEFUL_PORT: u16 = 4794;
/// Bytes of the StaR header.
pub const HEADER_BYTES: u32 = 20;
/// Bytes a StaR packet adds to its payload (Fig. 7): Ethernet 14, IPv4 20, UDP 8, StaR 20,
/// ICRC 4, FCS 4.
pub const FRAME_OVERHEAD: u32 = 14 + 20 + 8 + HEADER_BYTES + 4 + 4;
/// Bytes of a WQE in a WQEP's payload and of a CQE in a CQEP's.
pub const DESCRIPTOR_BYTES: u32 = 64;

/// The seven packet types (Table I).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum StarType {
    /// Stateless → stateful: a posted WQE (or, with M set, the connection's initial state).
    #[default]
    Wqep = 1,
    /// Stateful → stateless: a completion for a WQE the stateless side posted.
    Cqep = 2,
    /// Stateful → stateless: acknowledges a WQEP; stateless → stateful: acknowledges a CQEP.
    Ea = 3,
    /// Stateful → stateless: data for the stateless side's memory.
    Rd = 4,
    /// Stateless → stateful: acknowledges RDs.
    Rda = 5,
    /// Stateful → stateless: asks for data from the stateless side's memory.
    Gd = 6,
    /// Stateless → stateful: the data a GD asked for.
    Gda = 7,
}

impl StarType {
    pub fn from_bits(b: u8) -> Option<StarType> {
        Some(match b {
            1 => StarType::Wqep,
            2 => StarType::Cqep,
            3 => StarType::Ea,
            4 => StarType::Rd,
            5 => StarType::Rda,
            6 => StarType::Gd,
            7 => StarType::Gda,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            StarType::Wqep => "WQEP",
            StarType::Cqep => "CQEP",
            StarType::Ea => "EA",
            StarType::Rd => "RD",
            StarType::Rda => "RDA",
            StarType::Gd => "GD",
            StarType::Gda => "GDA",
        }
    }
}

/// The OPT field: the operation a packet belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum StarOp {
    #[default]
    Send = 0,
    Recv = 1,
    Write = 2,
    Read = 3,
}

impl StarOp {
    pub fn of(v: Verb) -> StarOp {
        match v {
            Verb::Send | Verb::SendImm(_) => StarOp::Send,
            Verb::Write | Verb::WriteImm(_) => StarOp::Write,
            Verb::Read => StarOp::Read,
        }
    }
}

/// The StaR header (Fig. 8), decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct StarHeader {
    pub ptype: StarType,
    pub opt: StarOp,
    /// State migration (only from the stateless side, during connection setup).
    pub migrate: bool,
    /// The receiver must answer with an acknowledgement (RDA for an RD).
    pub ack: bool,
    /// The connection's queue pair on its stateful side (24 bits): the only QPN either side
    /// needs, so an answer carries the header it answers with only the type changed (§III-C3).
    /// The stateless side's own handle, which its library needs, rides in the CQE of a CQEP and
    /// in the ADDR field of an EA (unused there).
    pub qpn: u32,
    /// Packet sequence number (24 bits on the wire).
    pub psn: u32,
    /// Memory address of the data (RD, RDA, GD, GDA); unused in WQEP, CQEP and EA.
    pub addr: u64,
    /// Payload bytes.
    pub len: u16,
    pub checksum: u16,
}

/// Why header bytes do not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("PTYPE {0} is not a StaR packet type")]
    BadType(u8),
    #[error("checksum {found:#06x} does not match {expected:#06x}")]
    BadChecksum { found: u16, expected: u16 },
}

impl StarHeader {
    /// The 20 header bytes, with the checksum computed over the other 18.
    pub fn encode(&self) -> [u8; 20] {
        let mut b = self.encode_raw(0);
        let c = checksum(&b);
        b[18..20].copy_from_slice(&c.to_be_bytes());
        b
    }

    fn encode_raw(&self, checksum: u16) -> [u8; 20] {
        let mut b = [0u8; 20];
        let flags = (self.ptype as u8) << 4 | (self.opt as u8) << 2 | (self.migrate as u8) << 1 | self.ack as u8;
        b[0] = flags;
        b[1..4].copy_from_slice(&(self.qpn & 0xff_ffff).to_be_bytes()[1..]);
        b[5..8].copy_from_slice(&(self.psn & 0xff_ffff).to_be_bytes()[1..]);
        b[8..16].copy_from_slice(&self.addr.to_be_bytes());
        b[16..18].copy_from_slice(&self.len.to_be_bytes());
        b[18..20].copy_from_slice(&checksum.to_be_bytes());
        b
    }

    /// Decodes and verifies header bytes.
    pub fn decode(b: &[u8; 20]) -> Result<StarHeader, HeaderError> {
        let t = b[0] >> 4;
        let ptype = StarType::from_bits(t).ok_or(HeaderError::BadType(t))?;
        let opt = match (b[0] >> 2) & 3 {
            0 => StarOp::Send,
            1 => StarOp::Recv,
            2 => StarOp::Write,
            _ => StarOp::Read,
        };
        let found = u16::from_be_bytes([b[18], b[19]]);
        let mut zeroed = *b;
        zeroed[18] = 0;
        zeroed[19] = 0;
        let expected = checksum(&zeroed);
        if found != expected {
            return Err(HeaderError::BadChecksum { found, expected });
        }
        Ok(StarHeader {
            ptype,
            opt,
            migrate: b[0] & 2 != 0,
            ack: b[0] & 1 != 0,
            qpn: u32::from_be_bytes([0, b[1], b[2], b[3]]),
            psn: u32::from_be_bytes([0, b[5], b[6], b[7]]),
            addr: u64::from_be_bytes(b[8..16].try_into().expect("8 bytes")),
            len: u16::from_be_bytes([b[16], b[17]]),
            checksum: found,
        })
    }
}

/// The Internet checksum (RFC 1071) of the header with its checksum field zero.
fn checksum(b: &[u8; 20]) -> u16 {
    let mut sum: u32 = 0;
    for pair in b.chunks(2) {
        sum += u16::from_be_bytes([pair[0], pair[1]]) as u32;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// A WQE as a WQEP carries it: everything the stateful side needs to run the operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StarWqe {
    /// The WQE's index in the stateless side's library (its completions name it).
    pub index: u32,
    /// `None`: a receive WQE.
    pub verb: Option<Verb>,
    pub local_addr: u64,
    pub len: u64,
    pub lkey: u32,
    pub remote_addr: u64,
    pub rkey: u32,
}

/// A CQE as a CQEP carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StarCqe {
    /// The stateless side's queue pair (its library's handle), as a CQE names its QP.
    pub qp: u32,
    pub index: u32,
    pub kind: CompletionKind,
    pub status: Status,
    pub bytes: u64,
    pub imm: Option<u32>,
}

/// What a StaR packet's payload holds besides data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum StarBody {
    #[default]
    None,
    Wqe(StarWqe),
    Cqe(StarCqe),
}

/// A StaR packet's header and descriptor, kept in the packet pool beside the packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct StarMeta {
    pub header: StarHeader,
    pub body: StarBody,
}

impl StarMeta {
    /// The UDP payload as it is on the wire: the header (LEN = `payload`), then the WQE or CQE
    /// of a WQEP or CQEP as a 64-byte descriptor, or the data (`data`, zero-filled to `payload`
    /// bytes when host memory holds no bytes).
    pub fn udp_payload(&self, data: &[u8], payload: u32) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_BYTES as usize + payload as usize);
        out.extend_from_slice(&self.header.encode());
        let start = out.len();
        match self.body {
            StarBody::Wqe(w) => {
                let op = w.verb.map_or(StarOp::Recv, StarOp::of) as u32;
                for v in [w.index, op, w.lkey, w.rkey] {
                    out.extend_from_slice(&v.to_be_bytes());
                }
                for v in [w.local_addr, w.len, w.remote_addr] {
                    out.extend_from_slice(&v.to_be_bytes());
                }
            }
            StarBody::Cqe(c) => {
                for v in [c.qp, c.index, c.kind as u32, c.status as u32, c.imm.unwrap_or(0)] {
                    out.extend_from_slice(&v.to_be_bytes());
                }
                out.extend_from_slice(&c.bytes.to_be_bytes());
            }
            StarBody::None => out.extend_from_slice(&data[..data.len().min(payload as usize)]),
        }
        out.resize(start + payload as usize, 0);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn header_is_twenty_bytes_in_figure_eight_order() {
        let h = StarHeader { ptype: StarType::Gd, opt: StarOp::Read, migrate: false, ack: true, qpn: 0x123456, psn: 0xabcdef, addr: 0x1122_3344_5566_7788, len: 32, checksum: 0 };
        let b = h.encode();
        assert_eq!(b[0], 0x6d); // 0110 11 0 1
        assert_eq!(&b[1..4], &[0x12, 0x34, 0x56]);
        assert_eq!(&b[5..8], &[0xab, 0xcd, 0xef]);
        assert_eq!(&b[8..16], &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]);
        assert_eq!(&b[16..18], &[0, 32]);
        assert_eq!(FRAME_OVERHEAD, 70);
    }

    #[test]
    fn corrupted_header_fails_its_checksum() {
        let h = StarHeader { ptype: StarType::Rd, qpn: 7, psn: 9, addr: 4096, len: 1000, ..Default::default() };
        let mut b = h.encode();
        b[9] ^= 0x40;
        assert!(matches!(StarHeader::decode(&b), Err(HeaderError::BadChecksum { .. })));
        let mut b = h.encode();
        b[0] &= 0x0f;
        assert_eq!(StarHeader::decode(&b), Err(HeaderError::BadType(0)));
    }

    proptest! {
        #[test]
        fn encode_then_decode_is_identity(t in 1u8..=7, opt in 0u8..4, m: bool, a: bool, qpn in 0u32..1 << 24, psn in 0u32..1 << 24, addr: u64, len: u16) {
            let opt = [StarOp::Send, StarOp::Recv, StarOp::Write, StarOp::Read][opt as usize];
            let h = StarHeader { ptype: StarType::from_bits(t).unwrap(), opt, migrate: m, ack: a, qpn, psn, addr, len, checksum: 0 };
            let b = h.encode();
            let d = StarHeader::decode(&b).unwrap();
            prop_assert_eq!(StarHeader { checksum: 0, ..d }, h);
        }
    }
}
