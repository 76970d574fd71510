//! The NIC's QP scheduler: which queue pair sends the next packet (SCR §4.2, Fig. 3).
//!
//! The NIC tells the scheduler when a queue pair has a packet to send and from when (the
//! congestion-control rate limit and the WQE fetch decide the time); the scheduler answers, each
//! time the port can take a packet, which queue pair goes. Per-QP rate limits are enforced
//! through those times. Tassel and SCR's dequeue-rate control plug in here as further
//! [`QpScheduler`] implementations.

mod commodity;

pub use commodity::Commodity;

use crate::units::Time;
use serde::{Deserialize, Serialize};

/// The scheduler's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// Send the next packet of this queue pair now.
    Qp(u32),
    /// Nothing is eligible now; the earliest eligible time if any queue pair is waiting.
    Idle(Option<Time>),
}

pub trait QpScheduler {
    /// Queue pair `qp` has a packet to send, not before `at`. It is not in the scheduler already.
    fn push(&mut self, qp: u32, at: Time, now: Time);
    /// Takes the queue pair to serve at `now` out of the scheduler.
    fn pop(&mut self, now: Time) -> Pick;
    /// The popped queue pair sent a packet of `bytes`; `message_end` if it was its message's last.
    fn sent(&mut self, qp: u32, bytes: u32, message_end: bool);
}

/// Which scheduler a NIC uses (the scenario's `nic.scheduler`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum SchedulerSpec {
    /// Round robin over active queue pairs, whole WQEs per turn until a turn carries
    /// `turn_bytes`.
    Commodity {
        #[serde(default = "default_turn_bytes")]
        turn_bytes: crate::units::Bytes,
    },
}

pub fn default_turn_bytes() -> crate::units::Bytes {
    crate::units::Bytes(32 * 1024)
}

impl Default for SchedulerSpec {
    fn default() -> Self {
        SchedulerSpec::Commodity { turn_bytes: default_turn_bytes() }
    }
}

impl SchedulerSpec {
    pub fn build(&self) -> Scheduler {
        match self {
            SchedulerSpec::Commodity { turn_bytes } => Scheduler::Commodity(Commodity::new(turn_bytes.0)),
        }
    }
}

/// A NIC's scheduler, dispatched by enum.
pub enum Scheduler {
    Commodity(Commodity),
}

impl QpScheduler for Scheduler {
    #[inline]
    fn push(&mut self, qp: u32, at: Time, now: Time) {
        match self {
            Scheduler::Commodity(s) => s.push(qp, at, now),
        }
    }
    #[inline]
    fn pop(&mut self, now: Time) -> Pick {
        match self {
            Scheduler::Commodity(s) => s.pop(now),
        }
    }
    #[inline]
    fn sent(&mut self, qp: u32, bytes: u32, message_end: bool) {
        match self {
            Scheduler::Commodity(s) => s.sent(qp, bytes, message_end),
        }
    }
}
