//! Real bytes for captured packets: Ethernet / IPv4 / UDP 4791 / BTH (+ RETH, AETH, ImmDt) /
//! payload / ICRC, written as a nanosecond pcap file that Wireshark and tshark dissect as RoCEv2.
//!
//! Addresses follow HPCC's simulator: node `n` is IPv4 `11.0.(n/256).(n%256)` shifted as
//! `0x0b000001 + (n/256)·0x10000 + (n%256)·0x100`, and MAC `02:00:00:00:hi:lo`.
//! The ICRC is the CRC-32 of the IP header onward with the variant fields (TOS, TTL, IP checksum,
//! UDP checksum, BTH FECN/BECN/reserved byte) set to ones, preceded by eight bytes of ones
//! (IBA Annex A17.3.3).

use super::roce::{Family, Opcode, ROCE_UDP_PORT};
use crate::wire::packet::{Packet, PacketKind, SWITCH_CONTROL_FLOW};
use crate::units::Time;
use std::io::Write;

/// A packet as it left a captured port.
#[derive(Clone, Debug)]
pub struct Captured {
    pub at: Time,
    pub port: u32,
    pub packet: Packet,
    /// Payload bytes when host memory holds real bytes (zeros are written otherwise).
    pub payload: Vec<u8>,
}

/// HPCC's IPv4 address of node `n`.
pub fn node_ip(n: u32) -> u32 {
    0x0b00_0001 + (n / 256) * 0x0001_0000 + (n % 256) * 0x0000_0100
}

fn mac(n: u32) -> [u8; 6] {
    [0x02, 0, 0, 0, (n >> 8) as u8, n as u8]
}

/// The MAC address of port `p` (of a switch or a host), the source of the PFC frames it
/// sends: `02:01:` and the port's 32-bit id.
fn port_mac(p: u32) -> [u8; 6] {
    let b = p.to_be_bytes();
    [0x02, 0x01, b[0], b[1], b[2], b[3]]
}

fn ip_checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for c in h.chunks(2) {
        sum += u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The IPv4 header of a UDP packet of `ip_len` bytes: DSCP from the traffic class, the ECN bits,
/// don't fragment, TTL 64, HPCC's addresses, checksum.
fn ipv4_header(p: &Packet, ip_len: usize) -> [u8; 20] {
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[1] = (p.priority << 5) | (p.ecn & 3);
    ip[2..4].copy_from_slice(&(ip_len as u16).to_be_bytes());
    ip[6] = 0x40; // don't fragment
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&node_ip(p.src).to_be_bytes());
    ip[16..20].copy_from_slice(&node_ip(p.dst).to_be_bytes());
    let c = ip_checksum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    ip
}

/// The destination QP number a captured packet carries: its queue pair's id plus this. QP
/// numbers 0 and 1 are InfiniBand's management queue pairs (SMI and GSI), whose packets a
/// dissector reads as MADs, and the simulation numbers queue pairs from 0.
pub const QPN_BASE: u32 = 0x100;

/// The frame bytes of a packet (without the Ethernet FCS).
/// For a StaR packet, `payload` is its UDP payload ([`crate::wire::star::StarMeta::udp_payload`]).
pub fn encode(p: &Packet, payload: &[u8]) -> Option<Vec<u8>> {
    if p.kind == PacketKind::Star {
        return Some(encode_star(p, payload));
    }
    // A switch's own control packets (ConWeave's) are UDP between its ports, not RoCE.
    if p.kind != PacketKind::Roce || p.flow == SWITCH_CONTROL_FLOW {
        return encode_other(p);
    }
    let op = p.roce.opcode;
    let r = &p.roce;
    let pad = (4 - r.payload % 4) % 4;
    let mut l4 = Vec::with_capacity(64 + r.payload as usize);
    // BTH
    l4.push(op as u8);
    l4.push((pad as u8) << 4); // SE=0, M=0, PadCnt, TVer=0
    l4.extend_from_slice(&0xffffu16.to_be_bytes()); // P_Key
    l4.push(0); // FECN, BECN, reserved
    l4.extend_from_slice(&(p.flow.wrapping_add(QPN_BASE) & 0x00ff_ffff).to_be_bytes()[1..]);
    l4.push(if r.ack_req { 0x80 } else { 0 });
    l4.extend_from_slice(&((p.seq & 0x00ff_ffff) as u32).to_be_bytes()[1..]);
    if op == Opcode::Cnp {
        l4.extend_from_slice(&[0; 16]);
    }
    if op.family() == Family::OutOfBand {
        l4.extend_from_slice(&r.imm.to_be_bytes());
    }
    if op == Opcode::ProbeRequest {
        l4.extend_from_slice(&r.ts.0.to_be_bytes());
    }
    if op == Opcode::ProbeResponse {
        l4.extend_from_slice(&r.va.to_be_bytes());
    }
    if op.has_reth() {
        l4.extend_from_slice(&r.va.to_be_bytes());
        l4.extend_from_slice(&r.rkey.to_be_bytes());
        l4.extend_from_slice(&r.dma_len.to_be_bytes());
    }
    if op.has_aeth() {
        l4.push(if op == Opcode::Acknowledge { r.syndrome.to_u8() } else { 0x1f });
        l4.extend_from_slice(&(r.msn & 0x00ff_ffff).to_be_bytes()[1..]);
    }
    if op.has_imm() {
        l4.extend_from_slice(&r.imm.to_be_bytes());
    }
    let n = r.payload as usize;
    if payload.len() >= n {
        l4.extend_from_slice(&payload[..n]);
    } else {
        l4.extend_from_slice(payload);
        l4.resize(l4.len() + n - payload.len(), 0);
    }
    l4.resize(l4.len() + pad as usize, 0);
    let udp_len = 8 + l4.len() + 4;
    let ip_len = 20 + udp_len;
    let ip = ipv4_header(p, ip_len);
    let mut udp = [0u8; 8];
    udp[0..2].copy_from_slice(&p.udp_sport.to_be_bytes());
    udp[2..4].copy_from_slice(&ROCE_UDP_PORT.to_be_bytes());
    udp[4..6].copy_from_slice(&(udp_len as u16).to_be_bytes());
    // ICRC over the masked pseudo-packet.
    let mut h = crc32fast::Hasher::new();
    h.update(&[0xff; 8]);
    let mut mip = ip;
    mip[1] = 0xff;
    mip[8] = 0xff;
    mip[10] = 0xff;
    mip[11] = 0xff;
    h.update(&mip);
    let mut mudp = udp;
    mudp[6] = 0xff;
    mudp[7] = 0xff;
    h.update(&mudp);
    let mut ml4 = l4.clone();
    ml4[4] = 0xff;
    h.update(&ml4);
    let icrc = h.finalize();
    let mut frame = Vec::with_capacity(14 + ip_len);
    frame.extend_from_slice(&mac(p.dst));
    frame.extend_from_slice(&mac(p.src));
    frame.extend_from_slice(&0x0800u16.to_be_bytes());
    frame.extend_from_slice(&ip);
    frame.extend_from_slice(&udp);
    frame.extend_from_slice(&l4);
    frame.extend_from_slice(&icrc.to_le_bytes());
    Some(frame)
}

/// A StaR frame (StaR Fig. 7): Ethernet / IPv4 / UDP to StaR's port / StaR header, descriptor
/// and data / ICRC (CRC-32 of the UDP payload).
fn encode_star(p: &Packet, l4: &[u8]) -> Vec<u8> {
    let mut frame = udp_frame_head(p, 8 + l4.len() + 4);
    frame.extend_from_slice(l4);
    frame.extend_from_slice(&crc32fast::hash(l4).to_le_bytes());
    frame
}

/// Ethernet, IPv4 and UDP headers (the packet's own ports, no checksum) of a datagram of
/// `udp_len` bytes, with room for the rest.
fn udp_frame_head(p: &Packet, udp_len: usize) -> Vec<u8> {
    let ip = ipv4_header(p, 20 + udp_len);
    let mut frame = Vec::with_capacity(14 + 20 + udp_len);
    frame.extend_from_slice(&mac(p.dst));
    frame.extend_from_slice(&mac(p.src));
    frame.extend_from_slice(&0x0800u16.to_be_bytes());
    frame.extend_from_slice(&ip);
    frame.extend_from_slice(&p.udp_sport.to_be_bytes());
    frame.extend_from_slice(&p.udp_dport.to_be_bytes());
    frame.extend_from_slice(&(udp_len as u16).to_be_bytes());
    frame.extend_from_slice(&[0, 0]);
    frame
}

/// PFC frames (MAC control, opcode 0x0101) and raw packets (Ethernet / IPv4 / UDP with a
/// zero-filled payload, the frame as long as the packet's wire size less the FCS).
fn encode_other(p: &Packet) -> Option<Vec<u8>> {
    match p.kind {
        PacketKind::Data | PacketKind::Roce => {
            let udp_len = (p.size as usize).saturating_sub(4 + 14 + 20).max(8);
            let mut f = udp_frame_head(p, udp_len);
            f.resize(14 + 20 + udp_len, 0);
            Some(f)
        }
        PacketKind::Pause { priority, quanta } => {
            let mut f = Vec::with_capacity(60);
            f.extend_from_slice(&[0x01, 0x80, 0xc2, 0, 0, 0x01]);
            // The sending port's own address, set by `write_pcap`, which knows the port.
            f.extend_from_slice(&[0; 6]);
            f.extend_from_slice(&0x8808u16.to_be_bytes());
            f.extend_from_slice(&0x0101u16.to_be_bytes());
            f.extend_from_slice(&(1u16 << priority).to_be_bytes());
            for c in 0..8u8 {
                let q = if c == priority { quanta } else { 0 };
                f.extend_from_slice(&q.to_be_bytes());
            }
            f.resize(60, 0);
            Some(f)
        }
        _ => None,
    }
}

/// Writes captured packets as a nanosecond-resolution pcap file.
pub fn write_pcap(path: &std::path::Path, packets: &[Captured]) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    out.write_all(&0xa1b2_3c4du32.to_le_bytes())?;
    out.write_all(&2u16.to_le_bytes())?;
    out.write_all(&4u16.to_le_bytes())?;
    out.write_all(&0i32.to_le_bytes())?;
    out.write_all(&0u32.to_le_bytes())?;
    out.write_all(&65535u32.to_le_bytes())?;
    out.write_all(&1u32.to_le_bytes())?; // Ethernet
    for c in packets {
        let Some(mut frame) = encode(&c.packet, &c.payload) else { continue };
        if matches!(c.packet.kind, PacketKind::Pause { .. }) {
            frame[6..12].copy_from_slice(&port_mac(c.port));
        }
        let ns = c.at.0 / 1000;
        out.write_all(&((ns / 1_000_000_000) as u32).to_le_bytes())?;
        out.write_all(&((ns % 1_000_000_000) as u32).to_le_bytes())?;
        out.write_all(&(frame.len() as u32).to_le_bytes())?;
        out.write_all(&(frame.len() as u32).to_le_bytes())?;
        out.write_all(&frame)?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::packet::RoceHeader;

    #[test]
    fn a_star_frame_carries_its_header_on_its_port() {
        use crate::wire::star::{StarBody, StarHeader, StarMeta, StarType, FRAME_OVERHEAD, STATELESS_PORT};
        let mut p = Packet::pause(0, 0, 64);
        p.kind = PacketKind::Star;
        (p.src, p.dst) = (3, 4);
        p.udp_dport = STATELESS_PORT;
        let header = StarHeader { ptype: StarType::Rd, qpn: 9, psn: 4, addr: 4096, len: 32, ack: true, ..Default::default() };
        p.size = 32 + FRAME_OVERHEAD;
        let l4 = StarMeta { header, body: StarBody::None }.udp_payload(&[7; 32], 32);
        let f = encode(&p, &l4).unwrap();
        assert_eq!(f.len() as u32, p.size - 4);
        assert_eq!(u16::from_be_bytes([f[36], f[37]]), STATELESS_PORT);
        let h = StarHeader::decode(f[42..62].try_into().unwrap()).unwrap();
        assert_eq!((h.ptype, h.qpn, h.psn, h.addr, h.len), (StarType::Rd, 9, 4, 4096, 32));
        assert_eq!(&f[62..94], &[7; 32]);
    }

    #[test]
    fn frame_length_matches_the_model() {
        let mut p = Packet::pause(0, 0, 64);
        p.kind = PacketKind::Roce;
        (p.src, p.dst, p.flow) = (3, 4, 0);
        p.roce = RoceHeader { opcode: Opcode::WriteFirst, payload: 1000, ..Default::default() };
        p.size = 1000 + Opcode::WriteFirst.header_bytes();
        let f = encode(&p, &[]).unwrap();
        // The model's size counts the FCS, which captures leave out.
        assert_eq!(f.len() as u32, p.size - 4);
        assert_eq!(&f[12..14], &[0x08, 0x00]);
        assert_eq!(u16::from_be_bytes([f[36], f[37]]), 4791);
        assert_eq!(ip_checksum(&f[14..34]), 0, "a correct IP checksum sums to zero");
        assert_eq!(node_ip(257), 0x0b01_0101);
        // The destination QP is the queue pair's number plus QPN_BASE, 24 bits.
        p.flow = 5;
        assert_eq!(&encode(&p, &[]).unwrap()[47..50], &[0, 0x01, 0x05]);
        // A switch's own control packet (ConWeave's) is UDP of its size between its ports, not
        // a RoCE SEND of none: it was written as a 58-byte SendFirst to port 4791.
        (p.flow, p.size, p.udp_sport, p.udp_dport, p.roce) = (SWITCH_CONTROL_FLOW, 64, 4791, 49_152, Default::default());
        let f = encode(&p, &[]).unwrap();
        assert_eq!(f.len(), 60);
        assert_eq!((u16::from_be_bytes([f[34], f[35]]), u16::from_be_bytes([f[36], f[37]])), (4791, 49_152));
    }

    #[test]
    fn a_pfc_frame_comes_from_the_port_that_sent_it() {
        // Every PAUSE carried 02:00:00:00:ff:ff, whichever port sent it.
        let dir = std::env::temp_dir().join(format!("rnicsim-pcap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("pfc.pcap");
        let c = |port| Captured { at: Time::from_us(1), port, packet: Packet::pause(3, 100, 64), payload: Vec::new() };
        write_pcap(&path, &[c(7), c(0x0102_0304)]).unwrap();
        let b = std::fs::read(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        // A 24-byte file header, then per frame a 16-byte record header and the 60-byte frame.
        assert_eq!(&b[40 + 6..40 + 12], &[0x02, 0x01, 0, 0, 0, 7]);
        assert_eq!(&b[116 + 6..116 + 12], &[0x02, 0x01, 1, 2, 3, 4]);
        assert_eq!(&b[40 + 12..40 + 14], &[0x88, 0x08], "MAC control");
    }

    #[test]
    fn a_raw_packet_is_a_udp_frame_of_its_size() {
        // A traffic source's packet was left out of captures (only RoCE and PFC were written).
        let mut p = Packet::pause(0, 0, 64);
        p.kind = PacketKind::Data;
        (p.src, p.dst, p.size, p.udp_sport, p.udp_dport) = (3, 4, 1000, 1234, 5678);
        let f = encode(&p, &[]).expect("a raw packet is captured");
        assert_eq!(f.len(), 996);
        assert_eq!((&f[12..14], f[23]), (&[0x08, 0x00][..], 17), "IPv4, UDP");
        assert_eq!(u16::from_be_bytes([f[16], f[17]]), 996 - 14, "IP total length");
        assert_eq!((u16::from_be_bytes([f[34], f[35]]), u16::from_be_bytes([f[36], f[37]]), u16::from_be_bytes([f[38], f[39]])), (1234, 5678, 996 - 34));
        assert_eq!(ip_checksum(&f[14..34]), 0);
    }
}
