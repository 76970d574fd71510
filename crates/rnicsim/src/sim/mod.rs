//! The simulation kernel: the timer queue that orders all events and the seeded random streams.

pub mod rng;
pub mod timer;

pub use timer::{TimerId, TimerQueue};
