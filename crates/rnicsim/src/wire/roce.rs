//! RoCEv2 (InfiniBand Architecture Specification, Annex A17) opcodes and header sizes.
//!
//! A RoCEv2 frame is Ethernet / IPv4 / UDP (destination port 4791) / BTH, then RETH on the first
//! packet of a WRITE and on READ requests, AETH on ACKs and on READ responses that carry it,
//! ImmDt on the last packet of a message with immediate data, the payload, and the 4-byte ICRC.

/// UDP destination port of RoCEv2.
pub const ROCE_UDP_PORT: u16 = 4791;

pub const ETH_BYTES: u32 = 14;
pub const IPV4_BYTES: u32 = 20;
pub const UDP_BYTES: u32 = 8;
pub const BTH_BYTES: u32 = 12;
pub const RETH_BYTES: u32 = 16;
pub const AETH_BYTES: u32 = 4;
pub const IMM_BYTES: u32 = 4;
pub const ICRC_BYTES: u32 = 4;
pub const FCS_BYTES: u32 = 4;
/// Ethernet + IPv4 + UDP + BTH + ICRC + FCS: present on every RoCEv2 packet.
pub const BASE_HEADER_BYTES: u32 = ETH_BYTES + IPV4_BYTES + UDP_BYTES + BTH_BYTES + ICRC_BYTES + FCS_BYTES;

/// A full data packet's bytes on the wire at payload `mtu` (a WRITE's first: headers and RETH):
/// the stall detector's unit of patience, and a packet in flight for the pause headroom check.
pub fn full_packet_bytes(mtu: u32) -> u64 {
    (mtu + BASE_HEADER_BYTES + RETH_BYTES) as u64
}

/// A CNP carries 16 reserved bytes after the BTH.
pub const CNP_PAYLOAD_BYTES: u32 = 16;
/// An out-of-band signal carries a 4-byte value after the BTH.
pub const SIGNAL_BYTES: u32 = 4;
/// A path probe also carries its 8-byte send time.
pub const PROBE_TS_BYTES: u32 = 8;

/// Reliable-connection opcodes (BTH opcode field; the top three bits 000 select RC) and the
/// RoCEv2 congestion notification packet.
/// (The default only fills the unused RoCE header of raw and PFC packets.)
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum Opcode {
    #[default]
    SendFirst = 0x00,
    SendMiddle = 0x01,
    SendLast = 0x02,
    SendLastImm = 0x03,
    SendOnly = 0x04,
    SendOnlyImm = 0x05,
    WriteFirst = 0x06,
    WriteMiddle = 0x07,
    WriteLast = 0x08,
    WriteLastImm = 0x09,
    WriteOnly = 0x0a,
    WriteOnlyImm = 0x0b,
    ReadRequest = 0x0c,
    ReadResponseFirst = 0x0d,
    ReadResponseMiddle = 0x0e,
    ReadResponseLast = 0x0f,
    ReadResponseOnly = 0x10,
    Acknowledge = 0x11,
    Cnp = 0x81,
    /// An out-of-band signal between the two ends of a connection (a probe, a credit grant, a
    /// peer's hint): a BTH opcode from the manufacturer-specific range (0xC0–0xFF), a 4-byte
    /// value after the BTH and optional padding bytes. Outside the PSN space.
    OutOfBand = 0xc0,
    /// A path probe (SCR A.7): sent on a chosen UDP source port (so on the ECMP path that port
    /// hashes to), carrying that port as its value and its send time, in the data's class.
    ProbeRequest = 0xc1,
    /// The peer's answer to a probe: the probe's port and send time echoed, in the ACK class.
    ProbeResponse = 0xc2,
}

/// Which verb a data opcode belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Send,
    Write,
    ReadRequest,
    ReadResponse,
    Ack,
    Cnp,
    OutOfBand,
}

/// Where a packet sits in its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Position {
    First,
    Middle,
    Last,
    Only,
}

impl Opcode {
    /// The opcode of a packet of `family` at `pos`, with immediate data on the last one if asked.
    pub fn data(family: Family, pos: Position, imm: bool) -> Opcode {
        use Opcode::*;
        use Position::*;
        match (family, pos, imm) {
            (Family::Send, First, _) => SendFirst,
            (Family::Send, Middle, _) => SendMiddle,
            (Family::Send, Last, false) => SendLast,
            (Family::Send, Last, true) => SendLastImm,
            (Family::Send, Only, false) => SendOnly,
            (Family::Send, Only, true) => SendOnlyImm,
            (Family::Write, First, _) => WriteFirst,
            (Family::Write, Middle, _) => WriteMiddle,
            (Family::Write, Last, false) => WriteLast,
            (Family::Write, Last, true) => WriteLastImm,
            (Family::Write, Only, false) => WriteOnly,
            (Family::Write, Only, true) => WriteOnlyImm,
            (Family::ReadResponse, First, _) => ReadResponseFirst,
            (Family::ReadResponse, Middle, _) => ReadResponseMiddle,
            (Family::ReadResponse, Last, _) => ReadResponseLast,
            (Family::ReadResponse, Only, _) => ReadResponseOnly,
            (Family::ReadRequest, ..) => ReadRequest,
            (Family::Ack, ..) => Acknowledge,
            (Family::Cnp, ..) => Cnp,
            (Family::OutOfBand, ..) => OutOfBand,
        }
    }

    /// A path probe or its answer (SCR A.7), which carry a timestamp after their value.
    pub fn is_probe(self) -> bool {
        matches!(self, Opcode::ProbeRequest | Opcode::ProbeResponse)
    }

    pub fn family(self) -> Family {
        use Opcode::*;
        match self {
            SendFirst | SendMiddle | SendLast | SendLastImm | SendOnly | SendOnlyImm => Family::Send,
            WriteFirst | WriteMiddle | WriteLast | WriteLastImm | WriteOnly | WriteOnlyImm => Family::Write,
            ReadRequest => Family::ReadRequest,
            ReadResponseFirst | ReadResponseMiddle | ReadResponseLast | ReadResponseOnly => Family::ReadResponse,
            Acknowledge => Family::Ack,
            Cnp => Family::Cnp,
            OutOfBand | ProbeRequest | ProbeResponse => Family::OutOfBand,
        }
    }

    pub fn position(self) -> Position {
        use Opcode::*;
        match self {
            SendFirst | WriteFirst | ReadResponseFirst => Position::First,
            SendMiddle | WriteMiddle | ReadResponseMiddle => Position::Middle,
            SendLast | SendLastImm | WriteLast | WriteLastImm | ReadResponseLast => Position::Last,
            _ => Position::Only,
        }
    }

    /// Whether this packet starts a message.
    pub fn is_first(self) -> bool {
        matches!(self.position(), Position::First | Position::Only)
    }

    /// Whether this packet ends a message.
    pub fn is_last(self) -> bool {
        matches!(self.position(), Position::Last | Position::Only)
    }

    pub fn has_imm(self) -> bool {
        matches!(self, Opcode::SendLastImm | Opcode::SendOnlyImm | Opcode::WriteLastImm | Opcode::WriteOnlyImm)
    }

    pub fn has_reth(self) -> bool {
        matches!(self, Opcode::WriteFirst | Opcode::WriteOnly | Opcode::WriteOnlyImm | Opcode::ReadRequest)
    }

    pub fn has_aeth(self) -> bool {
        matches!(self, Opcode::Acknowledge | Opcode::ReadResponseFirst | Opcode::ReadResponseLast | Opcode::ReadResponseOnly)
    }

    /// Header bytes on the wire for a packet with this opcode (payload excluded).
    pub fn header_bytes(self) -> u32 {
        let mut b = BASE_HEADER_BYTES;
        if self.has_reth() {
            b += RETH_BYTES;
        }
        if self.has_aeth() {
            b += AETH_BYTES;
        }
        if self.has_imm() {
            b += IMM_BYTES;
        }
        if self == Opcode::Cnp {
            b += CNP_PAYLOAD_BYTES;
        }
        if self.family() == Family::OutOfBand {
            b += SIGNAL_BYTES;
        }
        if self.is_probe() {
            b += PROBE_TS_BYTES;
        }
        b
    }

    pub fn from_u8(v: u8) -> Option<Opcode> {
        use Opcode::*;
        const ALL: [Opcode; 22] = [
            SendFirst, SendMiddle, SendLast, SendLastImm, SendOnly, SendOnlyImm, WriteFirst, WriteMiddle, WriteLast, WriteLastImm,
            WriteOnly, WriteOnlyImm, ReadRequest, ReadResponseFirst, ReadResponseMiddle, ReadResponseLast, ReadResponseOnly,
            Acknowledge, Cnp, OutOfBand, ProbeRequest, ProbeResponse,
        ];
        ALL.into_iter().find(|o| *o as u8 == v)
    }
}

/// AETH syndrome (IBA 9.7.5.1.1): ACK, RNR NAK or NAK with a code.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Syndrome {
    #[default]
    Ack,
    /// Receiver not ready: no receive WQE for a SEND.
    RnrNak,
    /// Out-of-sequence PSN: go back to the PSN in the packet.
    NakSequence,
    NakInvalidRequest,
    NakRemoteAccess,
}

impl Syndrome {
    /// The 8-bit AETH syndrome value (credit field 0x1f: "no credit count").
    pub fn to_u8(self) -> u8 {
        match self {
            Syndrome::Ack => 0x1f,
            Syndrome::RnrNak => 0x20 | 0x0e, // RNR timer code 14 (≈1.28 ms in the table)
            Syndrome::NakSequence => 0x60,
            Syndrome::NakInvalidRequest => 0x61,
            Syndrome::NakRemoteAccess => 0x62,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_sizes() {
        assert_eq!(BASE_HEADER_BYTES, 62);
        assert_eq!(Opcode::WriteOnly.header_bytes(), 78);
        assert_eq!(Opcode::WriteMiddle.header_bytes(), 62);
        assert_eq!(Opcode::Acknowledge.header_bytes(), 66);
        assert_eq!(Opcode::WriteOnlyImm.header_bytes(), 82);
        assert_eq!(Opcode::OutOfBand.header_bytes(), 66);
        assert_eq!(Opcode::from_u8(0xc0), Some(Opcode::OutOfBand));
        assert_eq!(Opcode::ProbeRequest.header_bytes(), 74);
        assert_eq!(Opcode::from_u8(0xc2), Some(Opcode::ProbeResponse));
    }

    #[test]
    fn opcodes_round_trip() {
        for f in [Family::Send, Family::Write, Family::ReadResponse] {
            for p in [Position::First, Position::Middle, Position::Last, Position::Only] {
                let o = Opcode::data(f, p, false);
                assert_eq!(o.family(), f);
                assert_eq!(o.position(), p);
                assert_eq!(Opcode::from_u8(o as u8), Some(o));
            }
        }
        assert!(Opcode::data(Family::Write, Position::Last, true).has_imm());
    }
}
