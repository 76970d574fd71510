//! HPCC's text outputs, so existing plotting scripts work unchanged.
//!
//! - `fct.txt`: one line per completed flow, in completion order:
//!   `sip dip sport dport size start_ns fct_ns standalone_fct_ns`, addresses as 8 hex digits
//!   (node `n` → `0x0b000001 + (n/256)·0x10000 + (n%256)·0x100`). Our standalone FCT is
//!   [`crate::world::World::ideal_fct`].
//! - `pfc.txt`: one line per PFC frame received: `time_ns node node_type ifindex type`, node type
//!   0 for hosts and 1 for switches, ns-3 interface index (ours + 1, as index 0 is loopback), and
//!   type 1 for PAUSE, 0 for RESUME.

use crate::host::apps::flows::FlowRecord;
use crate::output::PfcLog;
use crate::wire::pcap::node_ip;
use std::io::{self, Write};

/// One `fct.txt` line: a completed flow.
pub fn fct_line(out: &mut impl Write, r: &FlowRecord) -> io::Result<()> {
    let fct = r.fct().expect("a completed flow").0;
    writeln!(out, "{:08x} {:08x} {} {} {} {} {} {}", node_ip(r.src), node_ip(r.dst), r.udp_sport, r.udp_dport, r.size, r.start.0 / 1000, fct / 1000, r.ideal.0 / 1000)
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
