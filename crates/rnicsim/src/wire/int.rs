//! In-band network telemetry (HPCC, SIGCOMM 2019, §3.2): each switch hop a data packet crosses
//! stamps its egress queue length, transmitted bytes, time and rate; the receiver echoes the
//! stack in the ACK. Kept in a pool-side slot of the packet ([`super::packet::PacketPool::int_mut`])
//! only when the congestion control needs it.

use crate::units::{BitsPerSec, Time};

/// Telemetry one switch hop stamps into a data packet (HPCC's INT), echoed in the ACK.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntHop {
    /// Egress queue length in bytes when the packet left.
    pub qlen: u64,
    /// The port's cumulative transmitted bytes.
    pub tx_bytes: u64,
    pub ts: Time,
    pub rate: BitsPerSec,
    /// Which port stamped it (the fabric's port index; real INT carries switch and port
    /// ids): a sender compares a hop only with the same port's last stamp.
    pub port: u32,
}

/// Up to [`MAX_INT_HOPS`] hops of telemetry.
pub const MAX_INT_HOPS: usize = 5;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntStack {
    pub hops: [IntHop; MAX_INT_HOPS],
    pub n: u8,
}

impl IntStack {
    pub fn push(&mut self, hop: IntHop) {
        if (self.n as usize) < MAX_INT_HOPS {
            self.hops[self.n as usize] = hop;
            self.n += 1;
        }
    }
    pub fn hops(&self) -> &[IntHop] {
        &self.hops[..self.n as usize]
    }
}

