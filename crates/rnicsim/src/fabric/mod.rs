//! The datacenter fabric: ports, links, switches (buffers with ECN and PFC), load balancers,
//! routing and carried paths, periodic link failures, and topologies. Each piece is plain state with methods that take `now` as an
//! argument; `crate::world` wires them to the event loop.

pub mod buffer;
pub mod ecn;
pub mod failures;
pub mod lb;
pub mod link;
pub mod port;
pub mod paths;
pub mod routing;
pub mod switch;
pub mod topology;
