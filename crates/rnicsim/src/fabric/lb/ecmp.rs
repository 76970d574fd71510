//! ECMP: the flow's 5-tuple hash (computed once at the source, UDP source port included, so a
//! sender steers its path by changing the port) mixed with a per-switch seed, as real switches
//! seed their hash to avoid polarization. Every packet of a flow takes the same candidate.

use super::{LbContext, LoadBalancer};
use crate::sim::rng::mix64;
use crate::wire::packet::Packet;

pub struct Ecmp {
    pub seed: u64,
}

impl LoadBalancer for Ecmp {
    #[inline]
    fn choose(&mut self, pkt: &Packet, ctx: &LbContext) -> u32 {
        let c = ctx.candidates;
        c[(mix64(pkt.flow_hash as u64 ^ self.seed) % c.len() as u64) as usize]
    }
}
