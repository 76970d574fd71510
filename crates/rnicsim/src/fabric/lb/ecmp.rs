//! ECMP: the flow's 5-tuple hash (computed once at the source, UDP source port included, so a
//! sender steers its path by changing the port) mixed with a per-switch seed, as real switches
//! seed their hash to avoid polarization. Every packet of a flow takes the same candidate.
//!
//! `switch.ecmp_hash = "ns3"` hashes as the HPCC/ConWeave ns-3 switch does instead
//! (`SwitchNode::EcmpHash` and `DoLbFlowECMP`/`GetOutDev` in `switch-node.cc`), so that a
//! `config.txt` run puts every flow on the path ns-3 puts it on: MurmurHash3 (x86, 32-bit) of
//! three 32-bit words, the source and destination IPv4 addresses ns-3 gives the nodes
//! (`11.0.0.1` plus the id's high byte in the second octet and low byte in the third) and
//! `sport | dport << 16`, seeded with the switch's node id; the next hop is that hash modulo the
//! candidate count, among the candidates in the order of the node at their far end (ns-3 keeps
//! its neighbours in a map ordered by node, and its breadth-first route search meets them in
//! that order).

use super::{LbContext, LoadBalancer};
use crate::sim::rng::mix64;
use crate::wire::packet::Packet;
use crate::wire::pcap::node_ip;
use serde::{Deserialize, Serialize};

/// How a switch hashes a flow onto one of its candidates (`switch.ecmp_hash`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EcmpHash {
    /// The source's 5-tuple hash mixed with a seed drawn per switch from the run's seed.
    #[default]
    Seeded,
    /// ns-3's: MurmurHash3 of (source IP, destination IP, ports), seeded by the switch's node id.
    Ns3,
}

/// ns-3's ECMP hash of a packet at switch node `switch`.
pub fn ns3_hash(pkt: &Packet, switch: u32) -> u32 {
    let ports = pkt.udp_sport as u32 | (pkt.udp_dport as u32) << 16;
    let mut key = [0u8; 12];
    for (i, w) in [node_ip(pkt.src), node_ip(pkt.dst), ports].into_iter().enumerate() {
        key[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
    }
    murmur3::murmur3_32(&mut &key[..], switch).expect("hashing a byte slice cannot fail")
}

/// The flow-hash choice among a switch's candidates, shared by ECMP and by the policies that
/// fall back to it (CONGA and ConWeave, for control packets and traffic they do not balance).
#[derive(Clone, Copy, Debug)]
pub struct EcmpHasher {
    pub kind: EcmpHash,
    /// The per-switch seed of [`EcmpHash::Seeded`].
    pub seed: u64,
}

impl EcmpHasher {
    #[inline]
    pub fn pick(&self, pkt: &Packet, ctx: &LbContext) -> u32 {
        let c = ctx.candidates;
        match self.kind {
            EcmpHash::Seeded => c[(mix64(pkt.flow_hash as u64 ^ self.seed) % c.len() as u64) as usize],
            EcmpHash::Ns3 => nth_by_far_node(ctx, (ns3_hash(pkt, ctx.switch) % c.len() as u32) as usize),
        }
    }
}

/// The `n`th candidate in the order of the nodes at their far ends (port order among links to
/// the same node).
fn nth_by_far_node(ctx: &LbContext, n: usize) -> u32 {
    let c = ctx.candidates;
    let far = |p: u32| ctx.view.ports[ctx.view.ports[p as usize].peer as usize].node;
    if c.windows(2).all(|w| far(w[0]) <= far(w[1])) {
        return c[n];
    }
    let key = |i: usize| (far(c[i]), i);
    (0..c.len()).find(|&i| (0..c.len()).filter(|&j| key(j) < key(i)).count() == n).map_or(c[n], |i| c[i])
}

pub struct Ecmp {
    pub hasher: EcmpHasher,
}

impl LoadBalancer for Ecmp {
    #[inline]
    fn choose(&mut self, pkt: &Packet, ctx: &LbContext) -> u32 {
        self.hasher.pick(pkt, ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ns3_addresses_and_hash() {
        // ns-3's addresses (`node_id_to_ip`), as our pcap and HPCC FCT files write them.
        assert_eq!(node_ip(0), 0x0b00_0001);
        assert_eq!(node_ip(34), 0x0b00_2201);
        assert_eq!(node_ip(300), 0x0b01_2c01);
        // MurmurHash3 x86_32 reference values (the algorithm's published test vectors).
        assert_eq!(murmur3::murmur3_32(&mut &b""[..], 0).unwrap(), 0);
        assert_eq!(murmur3::murmur3_32(&mut &b""[..], 1).unwrap(), 0x514e_28b7);
        assert_eq!(murmur3::murmur3_32(&mut &[0u8, 0, 0, 0][..], 0).unwrap(), 0x2362_f9de);
        // The words are hashed as little-endian bytes: a packet's hash is that of its key.
        let pkt = Packet { src: 34, dst: 41, udp_sport: 10000, udp_dport: 100, ..Packet::pause(0, 0, 0) };
        let mut key = Vec::new();
        for w in [0x0b00_2201u32, 0x0b00_2901, 10000 | 100 << 16] {
            key.extend_from_slice(&w.to_le_bytes());
        }
        assert_eq!(ns3_hash(&pkt, 129), murmur3::murmur3_32(&mut &key[..], 129).unwrap());
        assert_ne!(ns3_hash(&pkt, 129), ns3_hash(&pkt, 130), "the seed is the switch");
    }

    #[test]
    fn ns3_order_is_that_of_the_far_end_nodes() {
        use crate::fabric::link::Link;
        use crate::fabric::port::{ClassService, Port};
        use crate::fabric::routing::Routes;
        use crate::fabric::switch::FabricView;
        use crate::sim::TimerId;
        use crate::units::{BitsPerSec, Time};
        // Switch 0's ports 0, 1, 2 lead to nodes 3, 1 and 2 (ports 3, 4, 5).
        let far = [3u32, 1, 2];
        let mut ports: Vec<Port> = (0..3).map(|i| Port::new(0, i, 3 + i, BitsPerSec::gbps(100), TimerId(0), ClassService::Strict)).collect();
        ports.extend((0..3).map(|i| Port::new(far[i as usize], 0, i, BitsPerSec::gbps(100), TimerId(0), ClassService::Strict)));
        let links: Vec<Link> = (0..6).map(|_| Link::new(Time::ZERO, 0.0)).collect();
        let routes = Routes::compute(&[], &[], &[], |_| true);
        let is_host = vec![false; 4];
        let view = FabricView { now: Time::ZERO, ports: &ports, links: &links, is_host: &is_host, routes: &routes };
        let ctx = LbContext { switch: 0, ingress: 0, candidates: &[0, 1, 2], routed: &[0, 1, 2], first_port: 0, port_count: 3, view: &view };
        // By far-end node: port 1 (node 1), port 2 (node 2), port 0 (node 3).
        assert_eq!((0..3).map(|n| nth_by_far_node(&ctx, n)).collect::<Vec<_>>(), [1, 2, 0]);
        let sorted = LbContext { candidates: &[1, 2, 0], ..ctx };
        assert_eq!((0..3).map(|n| nth_by_far_node(&sorted, n)).collect::<Vec<_>>(), [1, 2, 0]);
        // The ns-3 hasher takes hash mod 3 in that order.
        let pkt = Packet { src: 34, dst: 41, udp_sport: 10000, udp_dport: 100, ..Packet::pause(0, 0, 0) };
        let hasher = EcmpHasher { kind: EcmpHash::Ns3, seed: 0 };
        assert_eq!(hasher.pick(&pkt, &ctx), [1, 2, 0][(ns3_hash(&pkt, 0) % 3) as usize]);
    }
}
