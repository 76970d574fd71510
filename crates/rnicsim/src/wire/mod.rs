//! Packet headers as the wire defines them: RoCEv2 opcodes and header sizes ([`roce`]), and the
//! byte encoding of whole frames for pcap export ([`pcap`]). The simulation itself moves the
//! compact [`crate::fabric::packet::Packet`] struct; bytes are made only where a capture asks.

pub mod pcap;
pub mod roce;
