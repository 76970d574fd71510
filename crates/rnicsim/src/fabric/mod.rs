//! The datacenter fabric: packets, ports, links, switch buffers with ECN and PFC, load balancing,
//! routing and topologies. Each piece is plain state with methods that take `now` as an
//! argument; `crate::world` wires them to the event loop.

pub mod buffer;
pub mod ecn;
pub mod lb;
pub mod link;
pub mod port;
pub mod routing;
pub mod topology;
