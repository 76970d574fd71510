//! The load-balancer hook: how a switch picks one of several equal-cost egress ports.
//!
//! A policy implements [`LoadBalancer`] and is added to [`LbPolicy`]; the switch calls it once per
//! forwarded packet with more than one candidate. Shipped: ECMP over the flow's 5-tuple hash (with
//! a per-switch seed, as real switches use to avoid hash polarization; the UDP source port is part
//! of the tuple, so a sender can steer its path) and random packet spraying.

use crate::wire::packet::Packet;
use crate::sim::rng::{mix64, Rng};
use crate::units::Time;
use rand::Rng as _;
use serde::{Deserialize, Serialize};

/// What a policy may look at besides the packet.
pub struct LbContext<'a> {
    pub now: Time,
    pub switch: u32,
    /// Bytes queued at a port, by global port id (e.g. a candidate).
    pub queued: &'a dyn Fn(u32) -> u64,
}

pub trait LoadBalancer {
    /// Index into `candidates` (global port ids, all with a shortest path to the destination).
    fn choose(&mut self, pkt: &Packet, candidates: &[u32], ctx: &LbContext) -> usize;
}

/// The scenario's name for a policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LbKind {
    #[default]
    Ecmp,
    Spray,
}

/// Hash-based ECMP.
pub struct Ecmp {
    pub seed: u64,
}

impl LoadBalancer for Ecmp {
    #[inline]
    fn choose(&mut self, pkt: &Packet, candidates: &[u32], _: &LbContext) -> usize {
        (mix64(pkt.flow_hash as u64 ^ self.seed) % candidates.len() as u64) as usize
    }
}

/// Random packet spraying: every packet picks a candidate uniformly.
pub struct Spray {
    pub rng: Rng,
}

impl LoadBalancer for Spray {
    fn choose(&mut self, _: &Packet, candidates: &[u32], _: &LbContext) -> usize {
        self.rng.random_range(0..candidates.len())
    }
}

/// The policies a switch can run, dispatched without dynamic allocation.
pub enum LbPolicy {
    Ecmp(Ecmp),
    Spray(Spray),
}

impl LoadBalancer for LbPolicy {
    #[inline]
    fn choose(&mut self, pkt: &Packet, candidates: &[u32], ctx: &LbContext) -> usize {
        match self {
            LbPolicy::Ecmp(p) => p.choose(pkt, candidates, ctx),
            LbPolicy::Spray(p) => p.choose(pkt, candidates, ctx),
        }
    }
}

/// The 5-tuple hash a source stamps on its packets (IPv4 addresses are node ids, protocol UDP).
pub fn flow_hash(src: u32, dst: u32, sport: u16, dport: u16) -> u32 {
    let tuple = (src as u64) << 32 | dst as u64;
    let ports = (sport as u64) << 16 | dport as u64 | 17 << 32;
    (mix64(mix64(tuple) ^ ports) >> 32) as u32
}
