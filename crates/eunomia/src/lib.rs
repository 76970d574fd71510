//! Eunomia: a receiver ordering layer for RDMA NICs (Eunomia, 2025), as a component that takes
//! plain sequence numbers and knows nothing of any simulator, so it can be benchmarked alone or
//! embedded in a datapath.
//!
//! - [`memory`]: the memory controller (§3.4, §4): a master array of 2-byte blocks with an
//!   allocation bitmap; rows first-fit from the head, metadata runs from the tail.
//! - [`bitmap`]: the hybrid-dynamic reorder bitmap (§3.3): allocated at a connection's first
//!   out-of-order packet, a circular part with a moving head and linear rows added beyond Tail,
//!   merged back once the circular part flushes, capped; released at the last packet (§3.5.3).
//! - [`reorder`]: arrival orders with a known amount of reordering; [`bench`]: arrivals per
//!   second with many connections.
//!
//! The receiver answers what [`OrderingLayer::arrive`] returns: ACK for [`Arrival::InOrder`],
//! SACK for [`Arrival::Tracked`], NACK (and drop) for [`Arrival::Refused`] (§3.5.1).

pub mod bench;
pub mod bitmap;
pub mod memory;
pub mod reorder;

pub use bitmap::{Arrival, Config, ConfigError, OrderingLayer, Refusal, Stats, View};
pub use memory::{MemoryController, BLOCK_BYTES, NULL};

#[cfg(test)]
mod tests;
