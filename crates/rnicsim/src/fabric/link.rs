//! A unidirectional link: propagation delay, an optional random loss rate, up/down state, and
//! the packets in flight on it.
//!
//! Serialization happens at the sending port; the link only delays. Packets leave a link in the
//! order they entered, so only the oldest one in flight needs a pending event (htsim's pipe).

use crate::wire::packet::PacketId;
use crate::units::Time;
use std::collections::VecDeque;

pub struct Link {
    pub delay: Time,
    /// Probability that a packet is lost on this link (the HPCC topology file's error rate).
    pub loss_rate: f64,
    pub up: bool,
    /// Packets in flight with their arrival times, oldest first.
    pub in_flight: VecDeque<(Time, PacketId)>,
}

impl Link {
    pub fn new(delay: Time, loss_rate: f64) -> Link {
        Link { delay, loss_rate, up: true, in_flight: VecDeque::new() }
    }
}
