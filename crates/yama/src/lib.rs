//! libYama (Yama, §3.4–§4): weighted throughput isolation of entities that share black-box
//! offload engines and chains of them, with nothing read from the engines: only the work an
//! application posts and sees completed. Plain numbers in, decisions out; no simulator inside,
//! so a software datapath can embed it.
//!
//! - [`policy`]: operator weights per entity normalized per chain, per-node and per-queue-pair
//!   weights (§4.1), and the ideal shares of Table 1 (weighted max-min over engines).
//! - [`bucket`]: a token bucket with a burst limit.
//! - [`scheduler`]: a node's scheduler for one chain: a bucket per queue pair filled at its
//!   weight × the probed throughput, surplus of idle queue pairs handed to busy ones (§4.2).
//! - [`prober`]: the feedback loop of Algorithm 1: sliding-window estimate of completed
//!   application and dummy work, oversubscription by β, backfilled dummy work capped to a
//!   fraction of the application's, no update when applications cannot fill the estimate.
//! - [`overlay`]: the coordinating overlay (§4.3): one leader per chain publishes a timestamped
//!   estimate; the first instance to read it stale proposes itself and runs the loop at once.
//!
//! [`bench`] times the scheduler's decisions on the real CPU (`rnicsim bench yama`).
//!
//! Work is counted in bytes, time in picoseconds, throughput in bytes per second.

pub mod bench;
pub mod bucket;
pub mod overlay;
pub mod policy;
pub mod prober;
pub mod scheduler;

pub use bucket::TokenBucket;
pub use overlay::{Overlay, ReadOutcome};
pub use policy::{ideal_shares, ideal_shares_by_load, Demand, Policy};
pub use prober::{Counts, Prober, ProberConfig, Step};
pub use scheduler::ChainScheduler;

/// Picoseconds per second.
pub const PS_PER_S: f64 = 1e12;
