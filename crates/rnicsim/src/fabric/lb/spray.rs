//! Random packet spraying: every packet picks a shortest-path candidate uniformly, from the
//! switch's own random stream.

use super::{LbContext, LoadBalancer};
use crate::sim::rng::Rng;
use crate::wire::packet::Packet;
use rand::Rng as _;

pub struct Spray {
    pub rng: Rng,
}

impl LoadBalancer for Spray {
    fn choose(&mut self, _: &Packet, ctx: &LbContext) -> u32 {
        ctx.candidates[self.rng.random_range(0..ctx.candidates.len())]
    }
}
