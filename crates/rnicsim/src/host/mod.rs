//! Hosts: traffic sources and sinks, and the workload inputs that drive them.

pub mod cdf;
pub mod flow_file;
mod source;

pub use source::*;
