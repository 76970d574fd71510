//! The simulation kernel: the timer queue that orders all events, components' private
//! timelines and the seeded random streams.

pub mod agenda;
pub mod rng;
pub mod timer;

pub use timer::{TimerId, TimerQueue};
