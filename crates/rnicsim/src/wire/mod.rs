//! What travels on the wire. The simulation moves the compact [`packet::Packet`] struct (header
//! fields, no bytes) from a [`packet::PacketPool`]; per-packet extensions that only some runs need
//! (the INT stack HPCC's switches stamp, [`int`]; real payload bytes) live in pool-side slots.
//! [`roce`] holds RoCEv2 opcodes and header sizes, [`star`] StaR's seven packet types and header; [`pcap`] encodes whole frames as bytes, only
//! where a capture asks.

pub mod int;
pub mod packet;
pub mod pcap;
pub mod roce;
pub mod star;
