//! HPCC's and ConWeave's text outputs, so existing plotting scripts work unchanged.
//!
//! - `fct.txt`: one line per completed flow, in completion order:
//!   `src dst sport dport size start_ns fct_ns standalone_fct_ns`. In HPCC's dialect (its
//!   `scratch/third.cc`) the endpoints are IPv4 addresses as 8 hex digits (node `n` →
//!   `0x0b000001 + (n/256)·0x10000 + (n%256)·0x100`); in ConWeave's (its fork's
//!   `scratch/network-load-balance.cc`) they are decimal node ids. Our standalone FCT is
//!   [`crate::world::World::ideal_fct`].
//! - `pfc.txt`: one line per PFC frame received: `time_ns node node_type ifindex type`, node type
//!   0 for hosts and 1 for switches, ns-3 interface index (ours + 1, as index 0 is loopback), and
//!   type 1 for PAUSE, 0 for RESUME.

use crate::host::apps::flows::FlowRecord;
use crate::output::fct_compare::FctLine;
use crate::output::PfcLog;
use crate::wire::pcap::node_ip;
use serde::{Deserialize, Serialize};
use std::io::{self, Write};

/// Which simulator's `fct.txt` line format to write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FctDialect {
    /// HPCC's: endpoints as hex IPv4 addresses.
    #[default]
    Hpcc,
    /// ConWeave's: endpoints as decimal node ids.
    Conweave,
}

impl FctDialect {
    pub fn is_hpcc(&self) -> bool {
        *self == FctDialect::Hpcc
    }
}

/// One `fct.txt` line: a completed flow.
pub fn fct_line(out: &mut impl Write, r: &FlowRecord, dialect: FctDialect) -> io::Result<()> {
    let l = FctLine::of(r).expect("a completed flow");
    let tail = format_args!("{} {} {} {} {} {}", l.sport, l.dport, l.size, l.start_ns, l.fct_ns, l.ideal_ns);
    match dialect {
        FctDialect::Hpcc => writeln!(out, "{:08x} {:08x} {tail}", node_ip(l.src), node_ip(l.dst)),
        FctDialect::Conweave => writeln!(out, "{} {} {tail}", l.src, l.dst),
    }
}

/// `pfc.txt` lines for the frames in `l`; `is_switch` tells a node's type.
pub fn write_pfc(out: &mut impl Write, l: &PfcLog, is_switch: impl Fn(u32) -> bool) -> io::Result<()> {
    for i in 0..l.time.len() {
        let node = l.node[i];
        let kind = if is_switch(node) { 1 } else { 0 };
        let ty = if l.quanta[i] > 0 { 1 } else { 0 };
        writeln!(out, "{} {} {} {} {}", l.time[i] / 1000, node, kind, l.iface[i] + 1, ty)?;
    }
    Ok(())
}
