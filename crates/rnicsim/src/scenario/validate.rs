//! Checks of values a scenario can get wrong, each returning `(key path, what was expected)`.

use super::schema::*;
use crate::fabric::topology::{NodeKind, Topology};
use crate::units::{BitsPerSec, Time};
use crate::nic::state_cache::WhenFull;

type Problems = Vec<(String, String)>;

/// The most hosts (or switches) a generated topology may have.
const MAX_NODES: usize = 1 << 20;

fn positive_rate(out: &mut Problems, path: &str, r: BitsPerSec) {
    if r.0 == 0 {
        out.push((path.into(), "expected a positive rate such as \"100Gbps\", got 0".into()));
    }
}

fn at_least(out: &mut Problems, path: &str, v: usize, min: usize) {
    if v < min {
        out.push((path.into(), format!("expected at least {min}, got {v}")));
    } else if v > MAX_NODES {
        out.push((path.into(), format!("expected at most {MAX_NODES}, got {v}")));
    }
}

/// The most rows the samplers may write (queue samples; rate samples per queue pair / 100).
const MAX_SAMPLE_ROWS: u64 = 100_000_000;

/// The most queue pairs one perftest entry may open (Tassel's Fig. 14 goes to 16K).
const MAX_PERFTEST_QPS: u32 = 1 << 20;

/// The routing table holds one entry per (switch, destination group) (see
/// [`crate::fabric::routing`]); this bounds its size (256 MB).
const MAX_ROUTE_ENTRIES: u128 = 1 << 26;

/// Switches, destination groups and links a generated topology would have (None for files,
/// known after reading).
fn scale(t: &TopologySpec) -> Option<(u128, u128, u128)> {
    let u = |x: usize| x as u128;
    let m = |a: u128, b: u128| a.saturating_mul(b);
    Some(match *t {
        TopologySpec::BackToBack {} => (0, 2, 1),
        TopologySpec::Star { hosts } => (1, 1, u(hosts)),
        TopologySpec::Dumbbell { left, right, .. } => (2, 2, u(left) + u(right) + 1),
        TopologySpec::LeafSpine { leaves, spines, hosts_per_leaf, .. } => {
            let hosts = m(u(leaves), u(hosts_per_leaf));
            (u(leaves) + u(spines), u(leaves), hosts.saturating_add(m(u(leaves), u(spines))))
        }
        TopologySpec::FatTree { k, hosts_per_edge } => {
            let (k, h) = (u(k), u(hosts_per_edge.unwrap_or(k / 2)));
            let hosts = m(m(k, k) / 2, h);
            let k2 = m(k, k);
            (k2.saturating_add(k2 / 4), k2 / 2, hosts.saturating_add(m(k2, k) / 2))
        }
        TopologySpec::Jellyfish { switches, degree, hosts_per_switch } => {
            let hosts = m(u(switches), u(hosts_per_switch));
            (u(switches), u(switches), hosts.saturating_add(m(u(switches), u(degree)) / 2))
        }
        TopologySpec::File { .. } => return None,
    })
}

/// Whether a topology of this size fits the simulator's routing table.
pub fn too_large(switches: u128, groups: u128) -> Option<String> {
    (switches.saturating_mul(groups) > MAX_ROUTE_ENTRIES).then(|| {
        format!("the topology is too large: {switches} switches × {groups} host attachment groups exceeds the routing table limit of {MAX_ROUTE_ENTRIES} entries")
    })
}

/// Checks that need nothing but the scenario itself.
pub fn fields(s: &Scenario) -> Problems {
    let mut out = Problems::new();
    if let Some((switches, groups, links)) = scale(&s.topology) {
        if let Some(m) = too_large(switches, groups) {
            out.push(("topology".into(), m));
        } else if links > 1 << 24 {
            out.push(("topology".into(), format!("the topology is too large: {links} links (at most {})", 1 << 24)));
        }
    }
    if s.duration.0 == 0 {
        out.push(("duration".into(), "expected a positive duration such as \"1ms\"".into()));
    }
    positive_rate(&mut out, "links.rate", s.links.rate);
    match &s.topology {
        TopologySpec::BackToBack {} | TopologySpec::File { .. } => {}
        TopologySpec::Star { hosts } => at_least(&mut out, "topology.star.hosts", *hosts, 2),
        TopologySpec::Dumbbell { left, right, bottleneck_rate } => {
            at_least(&mut out, "topology.dumbbell.left", *left, 1);
            at_least(&mut out, "topology.dumbbell.right", *right, 1);
            if let Some(r) = bottleneck_rate {
                positive_rate(&mut out, "topology.dumbbell.bottleneck_rate", *r);
            }
        }
        TopologySpec::LeafSpine { leaves, spines, hosts_per_leaf, uplink_rate } => {
            at_least(&mut out, "topology.leaf_spine.leaves", *leaves, 1);
            at_least(&mut out, "topology.leaf_spine.spines", *spines, 1);
            at_least(&mut out, "topology.leaf_spine.hosts_per_leaf", *hosts_per_leaf, 1);
            if leaves.saturating_mul(*hosts_per_leaf) > MAX_NODES {
                out.push(("topology.leaf_spine.hosts_per_leaf".into(), format!("leaves × hosts_per_leaf must be at most {MAX_NODES}")));
            }
            if let Some(r) = uplink_rate {
                positive_rate(&mut out, "topology.leaf_spine.uplink_rate", *r);
            }
        }
        TopologySpec::FatTree { k, hosts_per_edge } => {
            if *k < 2 || k % 2 == 1 || *k > 128 {
                out.push(("topology.fat_tree.k".into(), format!("expected an even k between 2 and 128, got {k}")));
            }
            if let Some(h) = hosts_per_edge {
                at_least(&mut out, "topology.fat_tree.hosts_per_edge", *h, 1);
                if h.saturating_mul(k * k / 2) > MAX_NODES {
                    out.push(("topology.fat_tree.hosts_per_edge".into(), format!("the tree would have more than {MAX_NODES} hosts")));
                }
            }
        }
        TopologySpec::Jellyfish { switches, degree, hosts_per_switch } => {
            at_least(&mut out, "topology.jellyfish.switches", *switches, 2);
            at_least(&mut out, "topology.jellyfish.hosts_per_switch", *hosts_per_switch, 1);
            if *degree == 0 || degree >= switches {
                out.push(("topology.jellyfish.degree".into(), format!("expected a degree between 1 and switches − 1 ({}), got {degree}", switches.saturating_sub(1))));
            }
            if switches.saturating_mul(*hosts_per_switch) > MAX_NODES || *switches > 4096 {
                out.push(("topology.jellyfish.switches".into(), "expected at most 4096 switches and 2^20 hosts".into()));
            }
        }
    }
    let sw = &s.switch;
    if sw.buffer.0 == 0 {
        out.push(("switch.buffer".into(), "expected a positive buffer size such as \"9MB\"".into()));
    }
    if !(sw.dt_alpha > 0.0 && sw.dt_alpha.is_finite()) {
        out.push(("switch.dt_alpha".into(), format!("expected a positive number, got {}", sw.dt_alpha)));
    }
    if sw.service == ServiceKind::Weighted && sw.weights.contains(&0) {
        out.push(("switch.weights".into(), "expected eight positive weights".into()));
    }
    let curve_checks = |out: &mut Problems, path: &str, kmin: u64, kmax: u64, pmax: f64| {
        if kmin > kmax {
            out.push((format!("{path}kmin"), format!("kmin ({kmin} B) must not exceed kmax ({kmax} B)")));
        }
        if !(0.0..=1.0).contains(&pmax) {
            out.push((format!("{path}pmax"), format!("expected a probability between 0 and 1, got {pmax}")));
        }
    };
    curve_checks(&mut out, "switch.ecn.", sw.ecn.kmin.0, sw.ecn.kmax.0, sw.ecn.pmax);
    let mut rates_seen: Vec<(BitsPerSec, &str)> = Vec::new();
    for (rate, c) in &sw.ecn.per_rate {
        let path = format!("switch.ecn.per_rate.{rate}");
        match rate.parse::<BitsPerSec>() {
            // Two spellings of one rate ("100Gbps", "100000Mbps"): one of them was used and the
            // other dropped without a word.
            Ok(r) if r.0 > 0 => match rates_seen.iter().find(|(seen, _)| *seen == r) {
                Some((_, other)) => out.push((path, format!("\"{rate}\" is the rate \"{other}\" names already: give each rate one curve"))),
                None => {
                    rates_seen.push((r, rate.as_str()));
                    curve_checks(&mut out, &format!("{path}."), c.kmin.0, c.kmax.0, c.pmax)
                }
            },
            Ok(_) => out.push((path, "expected a positive rate as the key".into())),
            Err(e) => out.push((path, format!("the key must be a rate: {e}"))),
        }
    }
    let pfc = &sw.pfc;
    // The classes say which are lossless with PFC off too (the switch drops as it would), and
    // the pause time is the NIC's too (`nic.rx_when_full = "pause"`): checked either way.
    if let Some(c) = pfc.classes.iter().find(|&&c| c > 7) {
        out.push(("switch.pfc.classes".into(), format!("expected classes 0-7, got {c}")));
    }
    if let Some(c) = pfc.classes.iter().enumerate().find(|(i, c)| pfc.classes[..*i].contains(c)).map(|(_, c)| c) {
        out.push(("switch.pfc.classes".into(), format!("class {c} is listed twice")));
    }
    if pfc.quanta == 0 {
        out.push(("switch.pfc.quanta".into(), "expected a positive pause time in quanta".into()));
    }
    if pfc.pause_time.is_some_and(|t| t.0 == 0) {
        out.push(("switch.pfc.pause_time".into(), "expected a positive pause time (a zero one makes every PAUSE a resume)".into()));
    }
    if pfc.enabled {
        if pfc.classes.is_empty() {
            out.push(("switch.pfc.classes".into(), "expected at least one lossless class (0-7) when PFC is enabled".into()));
        }
        if !(pfc.alpha > 0.0 && pfc.alpha.is_finite()) {
            out.push(("switch.pfc.alpha".into(), format!("expected a positive number, got {}", pfc.alpha)));
        }
        if let Some(x) = pfc.xoff {
            if x.0 == 0 {
                out.push(("switch.pfc.xoff".into(), "expected a positive threshold".into()));
            } else if pfc.xon_offset.0 >= x.0 {
                out.push(("switch.pfc.xon_offset".into(), format!("expected an XON offset below xoff ({x}), got {}: RESUME could never be sent", pfc.xon_offset)));
            }
        }
    }
    // A zero `routing.recompute_delay` is allowed: routes follow a link change at once.
    if s.routing.path_choice != crate::scenario::schema::PathChoice::Connection && s.routing.k_shortest_paths.is_none() {
        out.push(("routing.path_choice".into(), "chooses among carried paths: set routing.k_shortest_paths too".into()));
    }
    if let Some(k) = s.routing.k_shortest_paths {
        if !(1..=64).contains(&k) {
            out.push(("routing.k_shortest_paths".into(), format!("expected 1 to 64 paths per switch pair, got {k}")));
        }
    }
    if s.switch.flowlet_gap.0 == 0 {
        out.push(("switch.flowlet_gap".into(), "expected a positive idle gap".into()));
    }
    if let Some(f) = &s.failures {
        if !(f.fraction > 0.0 && f.fraction <= 1.0) {
            out.push(("failures.fraction".into(), format!("expected a share of the switch-to-switch links in (0, 1], got {}", f.fraction)));
        }
        if f.interval.0 == 0 {
            out.push(("failures.interval".into(), "expected a positive interval".into()));
        }
        if f.stop.is_some_and(|stop| stop <= f.start) {
            out.push(("failures.stop".into(), format!("expected a time after failures.start ({})", f.start)));
        }
    }
    let b = &s.outputs.fct_by_size;
    if b.first().is_some_and(|x| x.0 == 0) || b.windows(2).any(|w| w[0] >= w[1]) {
        out.push(("outputs.fct_by_size".into(), "expected positive flow sizes in increasing order".into()));
    }
    let max = crate::fabric::lb::drill::DRILL_MAX as u32;
    if !(1..=max).contains(&s.switch.drill.samples) {
        out.push(("switch.drill.samples".into(), format!("expected 1 to {max} random candidates per packet, got {}", s.switch.drill.samples)));
    }
    if s.switch.drill.memory > max {
        out.push(("switch.drill.memory".into(), format!("expected at most {max} remembered ports, got {}", s.switch.drill.memory)));
    }
    for (key, why) in s.switch.conga.check() {
        out.push((format!("switch.conga.{key}"), why));
    }
    for (key, why) in s.switch.conweave.check() {
        out.push((format!("switch.conweave.{key}"), why));
    }
    for (i, t) in s.traffic.iter().enumerate() {
        let p = |k: &str| format!("traffic[{i}].{k}");
        if !(t.load > 0.0 && t.load <= 1.0) {
            out.push((p("load"), format!("expected a fraction of the link rate in (0, 1], got {}", t.load)));
        }
        if !(64..=9216).contains(&t.packet_size.0) {
            out.push((p("packet_size"), format!("expected 64 B to 9216 B, got {}", t.packet_size)));
        }
        if t.priority > 7 {
            out.push((p("priority"), format!("expected a class 0-7, got {}", t.priority)));
        }
        if let Some(stop) = t.stop {
            if stop <= t.start {
                out.push((p("stop"), format!("expected a stop after start ({})", t.start)));
            }
        }
        if t.bytes.is_some_and(|b| b.0 == 0) {
            out.push((p("bytes"), "expected a positive size".into()));
        }
    }
    if !(0.0..1.0).contains(&s.links.loss) {
        out.push(("links.loss".into(), format!("expected a probability in [0, 1), got {}", s.links.loss)));
    }
    nic(&mut out, s);
    figures(&mut out, s);
    for (i, f) in s.flows.iter().enumerate() {
        let p = |k: &str| format!("flows[{i}].{k}");
        match (&f.cdf, &f.file) {
            (Some(_), Some(_)) => out.push((p("file"), "give either `cdf` or `file`, not both".into())),
            (None, None) => out.push((format!("flows[{i}]"), "expected `cdf` (with `load`) or `file`".into())),
            (Some(_), None) => match f.load {
                None => out.push((format!("flows[{i}]"), "a CDF workload needs `load`".into())),
                Some(l) if !(l > 0.0 && l <= 1.0) => out.push((p("load"), format!("expected a fraction of the host link in (0, 1], got {l}"))),
                _ => {}
            },
            (None, Some(_)) => {
                if f.load.is_some() || f.pattern.is_some() {
                    out.push((p(if f.load.is_some() { "load" } else { "pattern" }), "a flow file fixes sources, sizes and times; `load` and `pattern` apply to CDF workloads".into()));
                }
            }
        }
        if f.stop.is_some_and(|t| t <= f.start) {
            out.push((p("stop"), format!("expected a stop after start ({})", f.start)));
        }
    }
    for (i, t) in s.perftest.iter().enumerate() {
        let p = |k: &str| format!("perftest[{i}].{k}");
        if t.client == t.server {
            out.push((p("server"), "client and server must be different hosts".into()));
        }
        if t.rate_limit.is_some_and(|r| r.0 < 1000) {
            out.push((p("rate_limit"), "expected at least 1 Kbps".into()));
        }
        if t.qps == 0 || t.qps > MAX_PERFTEST_QPS {
            out.push((p("qps"), format!("expected 1 to {MAX_PERFTEST_QPS} queue pairs, got {}", t.qps)));
        }
        // A latency test keeps one message outstanding whatever `depth` says (its default,
        // 128, was refused beside a small nic.sq_depth).
        if t.test != PerftestKind::WriteLat && (t.depth == 0 || t.depth > s.nic.sq_depth) {
            let default = if t.depth == default_tx_depth() { " (the default)" } else { "" };
            out.push((p("depth"), format!("expected 1 to nic.sq_depth ({}), got {}{default}", s.nic.sq_depth, t.depth)));
        }
        // Each size a queue pair may draw, `message_max` as much as `message` (8 GiB WRITEs ran,
        // and messages past the memory failed every post with no word why).
        for (key, size) in [("message", Some(t.message)), ("message_max", t.message_max)] {
            let Some(size) = size else { continue };
            if size.0 > u32::MAX as u64 {
                out.push((p(key), format!("expected at most 4 GiB − 1 B (4294967295 B: the RETH DMA length is 32 bits), got {size}")));
            } else if size.0 > s.nic.memory_size.0 {
                out.push((p(key), format!("larger than nic.memory_size ({})", s.nic.memory_size)));
            }
        }
        if t.message_max.is_some_and(|m| m.0 < t.message.0) {
            out.push((p("message_max"), format!("expected at least message ({})", t.message)));
        }
        if t.memory == crate::scenario::schema::BufferMemory::Gpu && s.nic.gpu.is_none() {
            out.push((p("memory"), "GPU memory needs a GPU beside the NICs: set [nic.gpu]".into()));
        }
        // Water filling keeps a flow's weight in 16 bits of its 48-byte context (a larger hint
        // was clamped to 65,535 without a word: 131,072 against 65,536 split 1:1).
        // (Where the data's sender runs it: elsewhere the hint has no effect, and is warned.)
        let water_filling = s.nic.scr.as_ref().is_some_and(|c| matches!(c.policy, crate::nic::scr::PolicySpec::WaterFilling(_)) && c.hosts.as_ref().is_none_or(|h| h.contains(&t.data_sender())));
        if let Some(h) = t.hint.filter(|&h| water_filling && !(1..=u16::MAX as u32).contains(&h)) {
            let fix = if h == 0 { "a weight of 0 would never fill: leave the hint out for weight 1" } else { "weights are relative, so scale them down" };
            out.push((p("hint"), format!("water_filling takes the hint as the queue pair's weight, 1 to 65535 (16 bits of its per-flow context), got {h}; {fix}")));
        }
    }
    if s.outputs.rate_interval.is_some_and(|t| t.0 == 0) {
        out.push(("outputs.rate_interval".into(), "expected a positive interval".into()));
    }
    if s.outputs.queue_interval.is_some_and(|t| t.0 == 0) {
        out.push(("outputs.queue_interval".into(), "expected a positive interval".into()));
    }
    // Metrics, figures and baselines name their runs: a name given twice would be read as the
    // first of them.
    unique_names(&mut out, "perftest", s.perftest.iter().map(|p| p.name.as_str()), false);
    unique_names(&mut out, "rpc", s.rpc.iter().map(|r| r.name.as_str()), true);
    unique_names(&mut out, "nvmf", s.nvmf.iter().map(|n| n.name.as_str()), true);
    unique_names(&mut out, "baseline", s.baseline.iter().map(|b| b.name.as_str()), false);
    // A baseline is read only by its name (`baselines/NAME/...`).
    for (i, b) in s.baseline.iter().enumerate() {
        if b.name.trim().is_empty() {
            out.push((format!("baseline[{i}].name"), "expected a name: claims and figures read a baseline as baselines/NAME/...".into()));
        }
    }
    // [[rpc]] and [[nvmf]] values (their hosts are checked against the topology).
    if s.rpc.len() > 2047 {
        out.push(("rpc".into(), format!("at most 2047 [[rpc]] entries, got {}", s.rpc.len())));
    }
    for (i, r) in s.rpc.iter().enumerate() {
        for (k, why) in r.check(s.nic.sq_depth, s.nic.rq_depth) {
            out.push((format!("rpc[{i}].{k}"), why));
        }
        // Each message is posted from one buffer in the hosts' memory (a first call posted as
        // the world was built failed there, and the failure panicked).
        for (k, b) in [("request", r.request), ("reply", r.reply)] {
            if b.0 <= 1 << 30 && b.0 > s.nic.memory_size.0 {
                out.push((format!("rpc[{i}].{k}"), format!("larger than nic.memory_size ({})", s.nic.memory_size)));
            }
        }
        // StaR's whitelist check is its NIC's, for all of a host's connections or none: an
        // entry turning it off on a client host also turned it off for another asking for it.
        if r.stack.is_star() && !r.security {
            if let Some((j, c)) = s.rpc.iter().enumerate().filter(|(_, o)| o.stack.is_star() && o.security).find_map(|(j, o)| o.clients.iter().find(|c| r.clients.contains(c)).map(|&c| (j, c))) {
                out.push((
                    format!("rpc[{i}].security"),
                    format!("turns StaR's whitelist check off on host {c}'s NIC, which rpc[{j}] (security = true) has clients on too: the check is its NIC's, for all its connections or none; give both entries the same security or other client hosts"),
                ));
            }
        }
    }
    for (i, n) in s.nvmf.iter().enumerate() {
        for (k, why) in n.check(s.nic.sq_depth, s.nic.rq_depth, s.nic.memory_size) {
            out.push((format!("nvmf[{i}].{k}"), why));
        }
    }
    out
}

/// Each name given in `table` (`[[table]]` entries; unnamed ones aside) is given once.
/// `defaulted`: an entry without a name goes by its default name (rpc, nvmf), so an explicit
/// name can collide with another entry's default one.
fn unique_names<'a>(out: &mut Problems, table: &str, names: impl Iterator<Item = &'a str>, defaulted: bool) {
    // Where metric paths find the entries: `baselines/NAME/...` for `[[baseline]]`.
    let metric = if table == "baseline" { "baselines" } else { table };
    let mut seen: Vec<(String, bool)> = Vec::new();
    for (i, name) in names.enumerate() {
        // A `/` splits a metric path: such an entry could never be named in one.
        if name.contains('/') {
            out.push((format!("{table}[{i}].name"), format!("\"{name}\" holds a `/`, which separates the segments of a metric path ({metric}/NAME/...): no claim or figure could name this entry")));
        }
        let default = name.is_empty() && defaulted;
        let name = if default { crate::host::apps::default_name(table, i) } else { name.to_string() };
        if let Some(first) = seen.iter().position(|(n, _)| !name.is_empty() && *n == name) {
            if default {
                // The clash is the explicit name on the earlier entry: the key in the file.
                out.push((format!("{table}[{first}].name"), format!("\"{name}\" is the default name of {table}[{i}], which has none: metrics such as {metric}/{name}/... would read only the first")));
            } else {
                let whose = if seen[first].1 { " (its default name)" } else { "" };
                out.push((format!("{table}[{i}].name"), format!("\"{name}\" names {table}[{first}] already{whose}: metrics such as {metric}/{name}/... would read only the first")));
            }
        }
        seen.push((name, default));
    }
}

/// Settings that run but are unlikely to be what the user meant (a measurement window with
/// nothing in it, which a quick shortened look at a scenario legitimately gives): reported as warnings
/// (`summary.json`'s `warnings`, the command line's stderr, Python's `ScenarioWarning`).
/// What a switch can still send a NIC after the NIC's PAUSE: a round trip of the link at its
/// rate, and a full packet on the wire either way. Returns the round trip and the bytes.
fn sent_before_pause(s: &Scenario) -> (Time, u64) {
    let round_trip = Time(2 * s.links.delay.0);
    (round_trip, s.links.rate.bytes_in(round_trip) + 2 * crate::wire::roce::full_packet_bytes(s.nic.mtu))
}

/// Eunomia's cap reaching fewer PSNs past the expected one than a bandwidth-delay product of
/// packets holds, with why. The reorder depth of per-packet load balancing grows with the
/// packets a path's extra delay holds, so a cap the paper sized at 100 Gbps with 1 KB packets
/// (256 bits ≈ 2.7 BDPs of its 8 µs round trip, §3.4 and Table 2) refuses and resends packets at
/// higher rates or with smaller packets. The base round trip is that of the topology's longest
/// shortest host path at `links.delay` per link (leaf-spine and fat-tree under a per-packet
/// balancer or path choice; file and Jellyfish topologies are not estimated).
fn eunomia_cap_below_bdp(s: &Scenario) -> Option<String> {
    let (o, reach) = eunomia_reach(s)?;
    let links = links_between_farthest_hosts(s)?;
    let rtt = Time(2 * links * s.links.delay.0);
    let bdp = s.links.rate.bytes_in(rtt) / crate::wire::roce::full_packet_bytes(s.nic.mtu);
    (reach < bdp).then(|| {
        format!(
            "{} bits reach about {reach} packets past the expected one, fewer than the {bdp} packets of {} B a {} link carries in a base round trip of {} ({links} links each way): packets a per-packet load balancer reorders further are refused and resent; the paper's 256 bits hold about 2.7 of them at 100 Gbps with 1 KB packets and an 8 µs round trip, so scale cap_bits with the rate × round trip ÷ packet size",
            o.cap_bits,
            crate::wire::roce::full_packet_bytes(s.nic.mtu),
            s.links.rate,
            rtt
        )
    })
}

/// Links each way between the farthest hosts of a generated topology (`None` for file and
/// Jellyfish topologies, which are not estimated).
fn links_between_farthest_hosts(s: &Scenario) -> Option<u64> {
    match &s.topology {
        TopologySpec::BackToBack {} => Some(1),
        TopologySpec::Star { .. } => Some(2),
        TopologySpec::LeafSpine { .. } => Some(4),
        TopologySpec::FatTree { .. } => Some(6),
        _ => None,
    }
}

/// Why the SCR policy on `responder`'s NIC (any NIC's, for `None`) never acts on READ
/// responses: Swift and multipath read the round trips ACKs bring back (`Kind::Ack`, `Kind::Rtt`),
/// and a READ's responses are not acknowledged, so the responder's policy sees no event of them
/// and leaves their rate alone.
fn policy_blind_to_reads(s: &Scenario, responder: Option<u32>) -> Option<String> {
    use crate::nic::scr::PolicySpec;
    let scr = s.nic.scr.as_ref()?;
    let name = match scr.policy {
        PolicySpec::Swift(_) => "swift",
        PolicySpec::Multipath(_) => "multipath",
        _ => return None,
    };
    if let (Some(h), Some(hosts)) = (responder, scr.hosts.as_ref()) {
        if !hosts.contains(&h) {
            return None;
        }
    }
    Some(format!("{name} acts on the round trips that ACKs bring back, and READ responses are not acknowledged: the policy sees no event of them and never sets their rate or path (water_filling, static and receiver_driven act on READs)"))
}

/// Swift's target delay (`base_target` + `hops` × `per_hop`, plus flow scaling's `fs_range` at
/// low rates) not above the propagation round trip between the farthest hosts of a generated
/// topology: a flow whose target is below it reads every RTT sample as congestion, so flows
/// cannot reach the rates where the target is that low, and with the largest target below it
/// they fall to `min_rate` (100 Gbps star links of 2 µs: a base RTT of 8 µs against A.6's target
/// of at most 5 µs, 0.1 Gbps; of 1 µs: 4 µs, a lone flow settles at 44 Gbps).
fn swift_target_below_base_rtt(s: &Scenario) -> Option<String> {
    let crate::nic::scr::PolicySpec::Swift(p) = &s.nic.scr.as_ref()?.policy else { return None };
    let links = links_between_farthest_hosts(s)?;
    let rtt = Time(2 * links * s.links.delay.0);
    let fixed = Time(p.base_target.0 + u64::from(p.hops) * p.per_hop.0);
    let most = Time(fixed.0 + p.fs_range.0);
    (fixed <= rtt).then(|| {
        let what = if most <= rtt { "at every rate: flows fall to min_rate".to_string() } else { format!("at the rates where flow scaling leaves it below (towards {}): flows cannot reach them", p.fs_max_rate) };
        format!(
            "Swift's target delay is {fixed} to {most} (base_target + hops × per_hop, plus up to fs_range at low rates), not above the base round trip of {rtt} ({links} links each way at {}) {what}, every RTT sample reading as congestion; raise base_target past the round trip",
            s.links.delay
        )
    })
}

/// A multipath probe's `timeout` no longer than its answer takes at the least: the install
/// latency for the probe to go out, the propagation round trip between the farthest hosts of a
/// generated topology, and the trigger latency for the answer to reach a thread. Every probe
/// times out first, and every path reads as failed and recovered in turn (1 ns: 147 failures in
/// Fig. 19's run, and the slow path missing from its report).
fn multipath_timeout_below_an_answer(s: &Scenario) -> Option<String> {
    let scr = s.nic.scr.as_ref()?;
    let crate::nic::scr::PolicySpec::Multipath(p) = &scr.policy else { return None };
    let links = links_between_farthest_hosts(s)?;
    let rtt = Time(2 * links * s.links.delay.0);
    let least = scr.install_latency + rtt + scr.trigger_latency;
    (p.timeout <= least).then(|| {
        format!(
            "a probe's answer takes at least {least} (install_latency {} to send it, the base round trip of {rtt} over {links} links each way, trigger_latency {} to see it), so a timeout of {} expires first: every path reads as failed; A.7 uses 100us",
            scr.install_latency, scr.trigger_latency, p.timeout
        )
    })
}

/// Static 1/n counts every queue pair that sends on a NIC, and a READ's requester sends its
/// requests: where perftest `i` is a `read_bw` whose client also sends data of another test,
/// its queue pairs take shares that the data could use (two WRITE and two READ queue pairs on
/// one client: the WRITEs held to 50 Gbps of 100).
fn static_share_counts_read_requests(s: &Scenario, i: usize) -> Option<String> {
    use crate::nic::scr::PolicySpec;
    let scr = s.nic.scr.as_ref().filter(|c| matches!(c.policy, PolicySpec::Static(_)))?;
    let t = &s.perftest[i];
    let client = t.client;
    if t.test != crate::scenario::schema::PerftestKind::ReadBw || scr.hosts.as_ref().is_some_and(|h| !h.contains(&client)) {
        return None;
    }
    let (j, other) = s.perftest.iter().enumerate().find(|(j, o)| *j != i && o.data_sender() == client)?;
    Some(format!(
        "static gives each queue pair on host {client} an equal share of its line, and this test's {} READ queue pairs there send only requests, yet take shares: the data perftest[{j}] (\"{}\") sends from that host is held to its queue pairs' shares (two WRITE beside two READ queue pairs: 50 of 100 Gbps); water_filling gives unused shares to the others",
        t.qps, other.name
    ))
}

/// Why the SCR policy cannot act on perftest `t`'s data when `nic.scr.hosts` leaves out the
/// end it acts at: a sender-side policy (static, water filling, Swift, multipath) only on its
/// receiver, or receiver-driven credits only on its sender (the receiver computes them).
fn scr_on_the_wrong_end(s: &Scenario, t: &PerftestSpec) -> Option<String> {
    use crate::nic::scr::PolicySpec;
    let scr = s.nic.scr.as_ref()?;
    let hosts = scr.hosts.as_ref()?;
    let (sender, receiver) = (t.data_sender(), t.data_receiver());
    let (on, off, name, what) = match &scr.policy {
        PolicySpec::Passive(_) | PolicySpec::External(_) => return None,
        PolicySpec::ReceiverDriven(_) => (sender, receiver, "receiver_driven", "the receiver's NIC computes the credits (or backpressure) the sender's follows"),
        PolicySpec::Static(_) => (receiver, sender, "static", "it sets the dequeue rates of the NIC that sends the data"),
        PolicySpec::WaterFilling(_) => (receiver, sender, "water_filling", "it sets the dequeue rates of the NIC that sends the data"),
        PolicySpec::Swift(_) => (receiver, sender, "swift", "it paces the NIC that sends the data, from the round trips its ACKs bring back"),
        PolicySpec::Multipath(_) => (receiver, sender, "multipath", "it probes paths and moves the data from the NIC that sends it"),
    };
    // Both ends take part: a receiver none of whose senders runs SCR sends signals no NIC
    // follows (a helper found 570 credit signals ignored, and no warning). Plain senders beside
    // a credited one are background traffic the receiver meters (Fig. 20b), and are not warned.
    if matches!(scr.policy, PolicySpec::ReceiverDriven(_)) && hosts.contains(&receiver) && !s.perftest.iter().any(|o| o.data_receiver() == receiver && hosts.contains(&o.data_sender())) {
        return Some(format!("nic.scr.hosts has host {receiver} and none of the hosts that send it data, such as host {sender}: receiver_driven does nothing for this test's data, since the receiver's credits (or backpressure) reach sender NICs that run no SCR to follow them"));
    }
    (hosts.contains(&on) && !hosts.contains(&off)).then(|| format!("nic.scr.hosts has host {on} and not host {off}, which {}: {name} does nothing for this test's data, since {what}", if off == sender { "sends its data" } else { "receives its data" }))
}

/// Eunomia's layer where packets of one connection take several paths (a balancer or a path
/// choice per packet, over a topology with more than one path), and how many PSNs past the
/// expected one its bitmap reaches.
fn eunomia_reach(s: &Scenario) -> Option<(&crate::nic::ordering::OrderingSpec, u64)> {
    let o = s.nic.ordering.as_ref().filter(|o| o.layer == crate::nic::ordering::Layer::Eunomia)?;
    use crate::fabric::lb::LbKind;
    let per_packet = matches!(s.switch.load_balancer, LbKind::Spray | LbKind::RoundRobin | LbKind::Drill | LbKind::PowerOfTwo) || s.routing.path_choice != PathChoice::Connection;
    let one_path = matches!(s.topology, TopologySpec::BackToBack {} | TopologySpec::Star { .. });
    if !per_packet || one_path {
        return None;
    }
    // The linear rows start past Tail: until they merge, the bitmap reaches a row short of its
    // cap. A bitmap of one row has no linear rows: its circular row moves with Head and always
    // reaches the row less the expected packet.
    let reach = if o.cap_bits > o.block_bits { o.cap_bits - o.block_bits } else { o.block_bits.saturating_sub(1) } as u64;
    Some((o, reach))
}

/// `read_bw` tests whose READs in flight span more PSNs than Eunomia's bitmap reaches: a READ
/// request is one packet but takes a PSN per response, so a request that overtakes the ones
/// before it lands up to `depth × packets per READ` PSNs ahead (docs/eunomia.md, READs), and is
/// refused and asked again.
fn eunomia_cap_below_reads(s: &Scenario, out: &mut Problems) {
    let Some((o, reach)) = eunomia_reach(s) else { return };
    for (i, t) in s.perftest.iter().enumerate() {
        if t.test != PerftestKind::ReadBw {
            continue;
        }
        let per_read = t.message_max.unwrap_or(t.message).0.max(1).div_ceil(u64::from(s.nic.mtu.max(1)));
        let span = u64::from(t.depth) * per_read;
        if reach < span {
            out.push((
                format!("perftest[{i}].depth"),
                format!(
                    "{} READs of up to {} packets in flight span {span} PSNs, more than the {reach} past the expected one that nic.ordering's {} bits reach: requests a per-packet load balancer reorders further are refused and asked again; size cap_bits at about depth × packets per READ plus the reorder depth and a row ({})",
                    t.depth,
                    per_read,
                    o.cap_bits,
                    span + u64::from(o.block_bits)
                ),
            ));
        }
    }
}

/// A token bucket that holds a large part of the measured span at its queue pair's rate lets the
/// queue pair run ahead of its share for that long (Yama §4.2 paces by the buckets' rates; the
/// burst only absorbs jitter). Checked for the queue pairs of the lightest share on chains
/// whose engines state their throughput (`gbps`, `mops` or both, whose costs add, at the
/// workload's mean piece): a 4 KiB bucket of a weight-1/6 queue pair among 8 on a 2 Gbps engine
/// holds 786 µs, and 1:2:3 came out 1.16 / 1.19 / 0.82 of fair over 1 ms. (Where round robin
/// serves a queue pair little faster than its tokens come, a bucket that starts full takes far
/// longer than that to drain, but it gives the same bytes beyond the share, spread thinner.)
fn yama_burst_too_long(y: &crate::host::apps::yama::spec::YamaSpec, duration: Time) -> Option<String> {
    let span = duration.saturating_sub(y.warmup);
    if span == Time::ZERO {
        return None;
    }
    let mut worst: Option<(Time, &str, BitsPerSec)> = None;
    for c in &y.chain {
        let piece = c.mean_work().max(1);
        // The engine's rate at the mean piece, in bits per second (its nominal cost of one).
        let engine_rate = |e: &crate::nic::offload::EngineSpec| -> Option<f64> {
            let ps = e.nominal_cost(piece);
            (ps > 0.0).then(|| piece as f64 * 8.0 * 1e12 / ps)
        };
        let rates: Option<Vec<f64>> = c.engines.iter().map(|n| y.engine.iter().find(|e| &e.name == n).and_then(engine_rate)).collect();
        let Some(cap) = rates.and_then(|r| r.into_iter().reduce(f64::min)) else { continue };
        let members: Vec<_> = y.entity.iter().filter(|e| e.chain == c.name).collect();
        let total: f64 = members.iter().map(|e| e.weight).sum();
        for e in &members {
            let qps = (e.instances as f64 * e.queues as f64).max(1.0);
            let rate = BitsPerSec((cap * e.weight / total / qps) as u64);
            if rate.0 == 0 {
                continue;
            }
            let holds = rate.tx_time(y.burst.0);
            if worst.is_none_or(|w| holds > w.0) {
                worst = Some((holds, &e.name, rate));
            }
        }
    }
    let (holds, name, rate) = worst?;
    (holds.0.saturating_mul(4) > span.0).then(|| {
        format!(
            "a burst of {} holds {holds} of entity \"{name}\"'s queue pairs' share (about {rate} each at the engine's rate), more than a quarter of the {span} measured: a queue pair may run that far ahead of its share and the split drifts from the weights; a burst of a few pieces of work keeps it closer",
            y.burst
        )
    })
}

/// `[switch]` keys written in the scenario text (`doc`) that the switch never reads with the
/// rest of the scenario: another load balancer's parameters, the ECN or PFC curve of a
/// mechanism switched off, `pfc.alpha` beside a static `xoff`. They have defaults, so only the
/// text tells them apart from unset (eunomia.md's ordering keys are checked so too).
pub fn switch_keys_unused(doc: &toml::Table, s: &Scenario) -> Problems {
    use crate::fabric::lb::LbKind;
    let mut out = Problems::new();
    if s.routing.k_shortest_paths.is_some() && !s.traffic.is_empty() {
        out.push((
            "routing.k_shortest_paths".into(),
            "routes queue pairs only: the packets of [[traffic]] sources take the switches' own shortest paths (their load balancer's choice among them)".into(),
        ));
    }
    let Some(sw) = doc.get("switch").and_then(toml::Value::as_table) else { return out };
    let lb = s.switch.load_balancer;
    let by_lb: [(&str, &[LbKind]); 5] = [
        ("flowlet_gap", &[LbKind::Flowlet, LbKind::Conga]),
        ("drill", &[LbKind::Drill]),
        ("conga", &[LbKind::Conga]),
        ("conweave", &[LbKind::ConWeave]),
        ("ecmp_hash", &[LbKind::Ecmp, LbKind::Conga, LbKind::ConWeave]),
    ];
    for (key, readers) in by_lb {
        let read = readers.contains(&lb) || (key == "ecmp_hash" && s.switch.control_by_hash);
        if sw.contains_key(key) && !read {
            let who: Vec<String> = readers.iter().map(|&k| lb_name(k)).collect();
            out.push((format!("switch.{key}"), format!("has no effect with load_balancer = \"{}\": it is read by {} only", lb_name(lb), who.join(" and "))));
        }
    }
    for (table, on) in [("ecn", s.switch.ecn.enabled), ("pfc", s.switch.pfc.enabled)] {
        let Some(t) = sw.get(table).and_then(toml::Value::as_table) else { continue };
        if !on {
            for key in t.keys().filter(|k| k.as_str() != "enabled") {
                out.push((format!("switch.{table}.{key}"), format!("has no effect: switch.{table}.enabled is false")));
            }
        } else if table == "pfc" && t.contains_key("alpha") && s.switch.pfc.xoff.is_some() {
            out.push(("switch.pfc.alpha".into(), "has no effect: a static switch.pfc.xoff is set, and alpha sets the dynamic one".into()));
        }
    }
    out
}

/// Keys of `[[yama.chain]]` and `[[yama.engine]]` written in the scenario text (`doc`) that the
/// chain's workload never reads (a KV chain's `chunk`, an AES chain's `get`; a cache on an
/// engine no KV chain uses): they have defaults, so only the text tells them apart from unset.
pub fn yama_keys_unused(doc: &toml::Table, s: &Scenario) -> Problems {
    use crate::host::apps::yama::spec::Workload;
    let mut out = Problems::new();
    let Some(y) = &s.yama else { return out };
    // The feedback loop's keys, when no chain runs the loop (every chain vanilla).
    if !y.chain.is_empty() && y.chain.iter().all(|c| !c.isolation.unwrap_or(y.isolation)) {
        let top = doc.get("yama").and_then(toml::Value::as_table);
        for key in ["beta", "window", "backfill_cap", "initial", "period", "stale_after", "burst"] {
            if top.is_some_and(|t| t.contains_key(key)) {
                out.push((format!("yama.{key}"), "has no effect: every chain is vanilla (isolation = false), and it sets libYama's feedback loop or pacing".into()));
            }
        }
    }
    let written = |table: &str, i: usize, key: &str| {
        doc.get("yama").and_then(|y| y.get(table)).and_then(|t| t.get(i)).and_then(|e| e.get(key)).is_some()
    };
    let reads = |w: Workload| -> &'static [&'static str] {
        match w {
            Workload::Nat => &["packet_sizes"],
            Workload::Aes => &["chunk"],
            Workload::Kv => &["keys", "get"],
            Workload::Rdma => &["read"],
        }
    };
    for (i, c) in y.chain.iter().enumerate() {
        for key in ["packet_sizes", "chunk", "keys", "get", "read"] {
            if !reads(c.workload).contains(&key) && written("chain", i, key) {
                let w = format!("{:?}", c.workload).to_lowercase();
                out.push((format!("yama.chain[{i}].{key}"), format!("has no effect: a chain of workload `{w}` does not read it (it is for {} chains)", workload_of(key))));
            }
        }
    }
    for (i, c) in y.chain.iter().enumerate() {
        // A chain nobody posts to reported an estimate of 0 and a loop period of 1 ps.
        if !y.entity.iter().any(|e| e.chain == c.name) {
            out.push((format!("yama.chain[{i}].name"), format!("no entity uses chain `{}`: it carries nothing, and its summary figures mean nothing", c.name)));
        }
    }
    for (i, e) in y.entity.iter().enumerate() {
        let vanilla = y.chain.iter().find(|c| c.name == e.chain).is_some_and(|c| !c.isolation.unwrap_or(y.isolation));
        if vanilla && written("entity", i, "node_weights") {
            out.push((format!("yama.entity[{i}].node_weights"), format!("has no effect: chain `{}` runs without isolation (vanilla), where nothing paces by weight", e.chain)));
        }
    }
    for (i, e) in y.engine.iter().enumerate() {
        let kv = y.chain.iter().any(|c| c.workload == Workload::Kv && c.engines.contains(&e.name));
        for key in ["cached_keys", "host_time"] {
            if !kv && written("engine", i, key) {
                out.push((format!("yama.engine[{i}].{key}"), "has no effect: it makes the engine a key-value cache, and no `kv` chain uses this engine".to_string()));
            }
        }
    }
    out
}

/// Keys of `[nic.scr]` written in the scenario text (`doc`) that the run never reads, since
/// they have defaults (only the text tells them apart from unset): a multipath policy's `paths`
/// beside its `sports`; a receiver's `every_bytes` unless it signals on bytes, `interval` when it
/// signals on anything else, and the other mode's keys; `threshold` and `park_cycles` when no
/// event kind has the threshold strategy.
pub fn scr_keys_unused(doc: &toml::Table, s: &Scenario) -> Problems {
    use crate::nic::scr::policy::receiver_driven::{Mode, SignalOn};
    use crate::nic::scr::queue::Strategy;
    use crate::nic::scr::PolicySpec;
    let mut out = Problems::new();
    let Some(scr) = &s.nic.scr else { return out };
    let Some(t) = doc.get("nic").and_then(|n| n.get("scr")).and_then(toml::Value::as_table) else { return out };
    let written = |path: &[&str]| {
        let (last, tables) = path.split_last().expect("a key");
        tables.iter().try_fold(t, |t, k| t.get(*k).and_then(toml::Value::as_table)).is_some_and(|t| t.contains_key(*last))
    };
    let st = &scr.strategy;
    let kinds = [st.tx, st.rx, st.ack, st.nack, st.cnp, st.rtt, st.peer, st.timer, st.host, st.pcie, st.port];
    if !kinds.contains(&Strategy::Threshold) {
        for key in ["threshold", "park_cycles"] {
            if written(&[key]) {
                out.push((format!("nic.scr.{key}"), "has no effect: no event kind has strategy \"threshold\" (nic.scr.strategy), which is what it sets".into()));
            }
        }
    } else if matches!(scr.policy, PolicySpec::External(_)) {
        // An outside policy cannot call a flow stable, which is when the threshold parks.
        out.push(("nic.scr.strategy".into(), "\"threshold\" parks a flow's events once its policy calls the flow stable, which an external policy cannot: every event runs the policy, as under \"accumulate\"".into()));
    }
    // A kind the policy takes no events of has no queue to fold (wake-ups aside: a policy that
    // sets none gets none, and one that does has their queue whatever it subscribes to).
    let core = scr.build(crate::units::BitsPerSec::gbps(100));
    for kind in crate::nic::scr::event::Kind::ALL.into_iter().filter(|&k| k != crate::nic::scr::event::Kind::Timer) {
        if written(&["strategy", kind.name()]) && !core.subscribes(kind) {
            out.push((format!("nic.scr.strategy.{}", kind.name()), format!("has no effect: the {} policy takes no {} events", core.policy_name(), kind.name())));
        }
    }
    match &scr.policy {
        PolicySpec::Multipath(m) if !m.sports.is_empty() && written(&["policy", "multipath", "paths"]) => {
            out.push(("nic.scr.policy.multipath.paths".into(), format!("has no effect: `sports` lists the {} ports probed; `paths` counts ports drawn when `sports` is empty", m.sports.len())));
        }
        PolicySpec::ReceiverDriven(r) => {
            let on = |k: &str| written(&["policy", "receiver_driven", k]);
            let key = |k: &str| format!("nic.scr.policy.receiver_driven.{k}");
            if r.signal_on != SignalOn::Bytes && on("every_bytes") {
                out.push((key("every_bytes"), "has no effect: it is read with signal_on = \"bytes\" only".into()));
            }
            if r.signal_on != SignalOn::Interval && on("interval") {
                out.push((key("interval"), "has no effect: it is read with signal_on = \"interval\" only".into()));
            }
            let (other, keys): (&str, &[&str]) = match r.mode {
                Mode::Credits => ("backpressure", &["backpressure_permille", "md_permille", "ai", "ai_interval"]),
                Mode::Backpressure => ("credits", &["utilization_permille", "anomaly_permille"]),
            };
            if r.mode == Mode::Credits && r.signal_on != SignalOn::Anomaly && on("anomaly_permille") {
                out.push((key("anomaly_permille"), "has no effect: it is read with signal_on = \"anomaly\" only".into()));
            }
            for k in keys.iter().filter(|k| on(k)) {
                out.push((key(k), format!("has no effect: it is read in mode = \"{other}\" only")));
            }
        }
        _ => {}
    }
    out
}

/// The scenario's own name for a load balancer (`"power_of_two"`).
fn lb_name(lb: crate::fabric::lb::LbKind) -> String {
    toml::Value::try_from(lb).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

/// The workload a chain key is for.
fn workload_of(key: &str) -> &'static str {
    match key {
        "packet_sizes" => "`nat`",
        "chunk" => "`aes`",
        "keys" | "get" => "`kv`",
        _ => "`rdma`",
    }
}

/// How an `[[rpc]]` entry's connections are made: plain RoCE ones, and StaR ones whose stateless
/// side is the server.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct RpcRoles {
    roce: u64,
    server_stateless: u64,
}

/// The roles of every `[[rpc]]` entry's connections, as the world will make them: `star_auto`'s
/// negotiation (§III-C1, `World::connect_star_in`) replayed on the counts of connections each
/// host holds, entry after entry in file order; the queue pairs other workloads open are not
/// counted, so it is an estimate where they share hosts.
fn rpc_roles(s: &Scenario) -> Vec<RpcRoles> {
    use crate::host::apps::rpc::RpcStack;
    let threshold = s.nic.star.unwrap_or_default().negotiate_threshold as u64;
    // Per host: its RoCE queue pairs plus the StaR connections whose state it keeps.
    let mut held: std::collections::BTreeMap<u32, u64> = std::collections::BTreeMap::new();
    let mut roles = Vec::with_capacity(s.rpc.len());
    for r in &s.rpc {
        let mut out = RpcRoles::default();
        for i in 0..r.connections as usize {
            // (Clients are at least one: checked with the entry's fields before this.)
            let Some(&client) = r.clients.get(i % r.clients.len().max(1)) else { break };
            let server = r.server;
            match r.stack {
                RpcStack::Rdma | RpcStack::Scalardma => out.roce += 1,
                RpcStack::Star => out.server_stateless += 1,
                RpcStack::StarAuto => {
                    let (na, nb) = (held.get(&client).copied().unwrap_or(0), held.get(&server).copied().unwrap_or(0));
                    if na.max(nb) < threshold {
                        out.roce += 1;
                        *held.entry(client).or_default() += 1;
                        *held.entry(server).or_default() += 1;
                    } else if na > nb {
                        *held.entry(server).or_default() += 1;
                    } else {
                        out.server_stateless += 1;
                        *held.entry(client).or_default() += 1;
                    }
                }
            }
        }
        roles.push(out);
    }
    roles
}

/// The host links' rates where the topology sets them itself (a topology file, whose links
/// ignore `links.rate`).
pub struct HostRates {
    pub slowest: BitsPerSec,
    pub fastest: BitsPerSec,
    /// The fastest link of the topology, host or fabric.
    pub fastest_link: BitsPerSec,
    /// By node id: a host's link rate (its first link's), `None` for a switch.
    by_node: Vec<Option<BitsPerSec>>,
}

impl HostRates {
    /// A topology's host links; `None` when it has none.
    pub fn of(t: &Topology) -> Option<HostRates> {
        let (slowest, fastest) = t.host_link_rates()?;
        let mut by_node = vec![None; t.nodes()];
        for l in &t.links {
            for n in [l.a, l.b] {
                if t.kinds[n as usize] == NodeKind::Host {
                    by_node[n as usize].get_or_insert(l.rate);
                }
            }
        }
        let fastest_link = t.links.iter().map(|l| l.rate).max().unwrap_or(fastest);
        Some(HostRates { slowest, fastest, fastest_link, by_node })
    }
}

/// Host `node`'s link rate: its own where a topology file sets it, else `links.rate`.
fn host_rate(s: &Scenario, rates: Option<&HostRates>, node: u32) -> BitsPerSec {
    rates.and_then(|r| r.by_node.get(node as usize).copied().flatten()).unwrap_or(s.links.rate)
}

/// Warnings of settings that run but are unlikely to be meant. `host_rates` are the host
/// links where the topology sets them itself (a topology file, whose links ignore
/// `links.rate`); otherwise `links.rate` is every host's.
pub fn advisories(s: &Scenario, host_rates: Option<&HostRates>) -> Problems {
    let mut out = Problems::new();
    let (slowest, fastest) = host_rates.map_or((s.links.rate, s.links.rate), |r| (r.slowest, r.fastest));
    let links = |r: BitsPerSec| if slowest == fastest { format!("the links' {r}") } else { format!("the {r} host links") };
    let rpc_roles = rpc_roles(s);
    // A rate floor above the line leaves every cut without effect (the run is one without
    // congestion control), which no error says. (A warning, not an error: on slow links the
    // default floor may pass the line, where the floor is the line.)
    use crate::nic::cc::CcSpec;
    let floor = match &s.nic.cc {
        CcSpec::Dcqcn(d) => Some(("nic.cc.dcqcn.min_rate", d.min_rate)),
        CcSpec::Dctcp(d) => Some(("nic.cc.dctcp.min_rate", d.min_rate)),
        CcSpec::Timely(t) => Some(("nic.cc.timely.min_rate", t.min_rate)),
        _ => None,
    };
    if let Some((key, rate)) = floor.filter(|(_, r)| *r > slowest) {
        out.push((key.into(), format!("a rate floor of {rate} is above {}: the congestion control's cuts have no effect there", links(slowest))));
    }
    // DCQCN's and DCTCP's additive increase: 0 never raises a cut rate (DCQCN: its target,
    // unless hyper increase does), and one past the line puts the rate back at the line with
    // the first increase after a cut. Both run; neither is likely meant (HPCC, whose increase
    // is the whole rule, refuses them).
    let increase = match &s.nic.cc {
        CcSpec::Dcqcn(d) if d.rate_hai.0 == 0 || d.rate_ai.0 > 0 => Some(("nic.cc.dcqcn.rate_ai", d.rate_ai, "with no hyper increase either (rate_hai 0), a cut rate's target is never raised again, so the rate recovers at most to the target it was cut from")),
        CcSpec::Dctcp(d) => Some(("nic.cc.dctcp.rate_ai", d.rate_ai, "a cut rate never rises again")),
        _ => None,
    };
    if let Some((key, rate, zero)) = increase {
        if rate.0 == 0 {
            out.push((key.into(), format!("an additive increase of 0: {zero}")));
        } else if rate > slowest {
            out.push((key.into(), format!("an additive increase of {rate} is above {}: the first increase after a cut puts the rate back at the line", links(slowest))));
        }
    }
    // PCIe slower than the link caps every NIC's transfers to and from host memory below the
    // line rate (a 5-to-1 incast at 400 Gbps behind the default 200 Gbps PCIe carried 52% of
    // the link). Said once, since it may be what the scenario studies.
    // Workloads whose queue pairs are RoCE queue pairs in class `nic.priority`.
    let roce_apps = !s.perftest.is_empty() || !s.nvmf.is_empty() || s.yama.is_some();
    if (roce_apps || !s.flows.is_empty() || !s.rpc.is_empty()) && s.nic.pcie.bandwidth < fastest {
        out.push((
            "nic.pcie.bandwidth".into(),
            format!(
                "{} is below {}: a NIC reads and writes host memory at most at that rate, so its RDMA traffic cannot fill the link (raise nic.pcie.bandwidth to model a host interface as fast as the link)",
                s.nic.pcie.bandwidth,
                links(fastest)
            ),
        ));
    }
    // A receiver whose write channel is slower than its link fills its receive buffer. In pause
    // mode PAUSE goes out at half of it; what the switch sends before it stops (a round trip of
    // the link at its rate, and the packets on the wire either way), less what the channel
    // writes meanwhile, must fit in the other half.
    let write = [Some(s.nic.pcie.bandwidth), s.nic.gpu.map(|g| g.bandwidth)].into_iter().flatten().min().unwrap_or(s.links.rate);
    let pfc = &s.switch.pfc;
    let pauses = crate::nic::rx_buffer::when_full(s.nic.rx_when_full, pfc.enabled, &pfc.classes, s.nic.priority) == WhenFull::Pause;
    if pauses && write < s.links.rate {
        let (round_trip, sent) = sent_before_pause(s);
        let in_flight = sent - write.bytes_in(s.links.rate.tx_time(sent)).min(sent);
        if s.nic.rx_buffer.0 / 2 < in_flight {
            out.push((
                "nic.rx_buffer".into(),
                format!(
                    "{} leaves {} B above the PAUSE mark, less than the {} B the switch can send before it stops (a {} round trip at {} and two packets, less what PCIe at {write} writes meanwhile): arrivals will be dropped",
                    s.nic.rx_buffer,
                    s.nic.rx_buffer.0 / 2,
                    in_flight,
                    round_trip,
                    s.links.rate
                ),
            ));
        }
    }
    // The ordering layer takes every packet out of order, and NACKs by its own rules.
    // (The ns3 profile's own 4 µs is not the user's.)
    let profiles = s.nic.profile == crate::nic::NicProfile::Ns3 && s.nic.nak_interval == Some(Time::from_us(4));
    if s.nic.nak_interval.is_some() && !profiles && s.nic.ordering.is_some() {
        out.push(("nic.nak_interval".into(), "has no effect with [nic.ordering]: the ordering layer answers packets out of order by its own rules (docs/eunomia.md), never go-back-N's repeated NAK".into()));
    }
    // Start times read ns-3's way are a flow file's: a drawn workload has none.
    for (i, f) in s.flows.iter().enumerate() {
        if f.start_times != crate::scenario::schema::StartTimes::Exact && f.file.is_none() {
            out.push((format!("flows[{i}].start_times"), "has no effect: it says how a flow file's start times are read, and this workload has no file (its flows arrive as it draws them)".into()));
        }
        if f.empty != crate::scenario::schema::EmptyFlows::Refuse && f.file.is_none() {
            out.push((format!("flows[{i}].empty"), "has no effect: it says what a flow file's rows of 0 bytes become, and this workload has no file".into()));
        }
    }
    // A self-timing scheduler paces every queue pair itself; the NIC's bank is never used.
    if s.nic.pace_burst.0 > 0 && s.nic.scheduler.times_packets() {
        out.push(("nic.pace_burst".into(), "has no effect: the scheduler (Tassel, SE-PIEO) times every queue pair's packets itself, and the NIC's own pacing, whose bank this is, is off (docs/tassel.md)".into()));
    }
    // A RESUME lost to a lossy link leaves a pause held to it in place for good.
    if pfc.enabled && pfc.resend == crate::scenario::schema::PfcResend::UntilResume && s.links.loss > 0.0 {
        // Named at the loss (an ns-3 config's ERROR_RATE_PER_LINK line: its resend rule is
        // implied, not written).
        out.push((
            "links.loss".into(),
            format!("a loss rate of {} with switch.pfc.resend = \"until_resume\" (HPCC's rule): a RESUME the link loses leaves its upstream paused for the rest of the run (as in HPCC's ns-3, whose NIC does the same), and the flows behind it stall; switch.pfc.resend = \"refresh\" (in a TOML scenario, or with --set) recovers from it", s.links.loss),
        ));
    }
    // Headroom given two ways: the bytes win for every port.
    if let (true, Some(bytes), Some(_)) = (pfc.enabled, pfc.headroom, pfc.headroom_bdps) {
        out.push(("switch.pfc.headroom_bdps".into(), format!("has no effect: switch.pfc.headroom = {bytes} is set, and every port takes it")));
    }
    // The headroom apart and none of it: what is in flight when PAUSE goes out is all dropped.
    let no_headroom = pfc.headroom.map_or(pfc.headroom_bdps == Some(0), |h| h.0 == 0);
    if pfc.enabled && pfc.headroom_apart && no_headroom {
        out.push((
            "switch.pfc.headroom_apart".into(),
            "with no headroom (switch.pfc.headroom or headroom_bdps is 0), every lossless packet an ingress admits past XOFF is dropped: the bytes in flight when PAUSE goes out have nowhere to go".into(),
        ));
    }
    // Weights that nothing reads.
    if s.switch.service == ServiceKind::Strict && s.switch.weights != [1; 8] {
        out.push(("switch.weights".into(), "weights are read with service = \"weighted\" only: under \"strict\" class 0 goes first, whatever the weights".into()));
    }
    // A PAUSE frame carries 1 to 65535 quanta of 512 bit times: a pause time outside them at the
    // links' rate is cut to fit.
    if let Some(t) = pfc.pause_time {
        use crate::fabric::switch::{pause_time, quanta_in};
        let (q, quantum, most) = (quanta_in(t, s.links.rate.0), pause_time(1, s.links.rate.0), pause_time(u16::MAX, s.links.rate.0));
        if q > u16::MAX as u128 {
            out.push(("switch.pfc.pause_time".into(), format!("{t} is {q} quanta of 512 bit times at {}; a PAUSE frame carries at most 65535: it pauses {most}", s.links.rate)));
        } else if q == 0 {
            out.push(("switch.pfc.pause_time".into(), format!("{t} is less than one quantum of 512 bit times at {} ({quantum}): it pauses one quantum", s.links.rate)));
        }
    }
    // A PAUSE frame (64 B) takes one quantum to send, and a pause is refreshed at half its
    // time: with few quanta the refreshes alone take much of the link while an ingress stays
    // over XOFF (a helper found switch ports 61-67% busy with them at 1 quantum).
    if pfc.enabled && pfc.resend == crate::scenario::schema::PfcResend::Refresh {
        let (key, q) = match pfc.pause_time {
            Some(t) => ("switch.pfc.pause_time", crate::fabric::switch::pause_quanta(t, s.links.rate.0) as u64),
            None => ("switch.pfc.quanta", pfc.quanta.max(1) as u64),
        };
        if q < 32 {
            out.push((key.into(), format!("a pause of {q} quant{} is refreshed every {:.1} quanta while an ingress stays over XOFF, and each PAUSE frame takes one quantum of the link: the refreshes alone take {:.0}% of it (past 100%, they queue); use 32 quanta or more", if q == 1 { "um" } else { "a" }, q as f64 / 2.0, 200.0 / q as f64)));
        }
    }
    // A NIC's PAUSE is obeyed by its switch even with PFC off there (it has no lossless class
    // to hold the traffic in, so its queue grows until it drops).
    if !pfc.enabled {
        let asked = [("nic.rx_when_full", s.nic.rx_when_full == Some(WhenFull::Pause)), ("nic.state_cache.when_full", s.nic.state_cache.as_ref().is_some_and(|c| c.when_full == WhenFull::Pause))];
        for (key, _) in asked.into_iter().filter(|(_, on)| *on) {
            out.push((key.into(), "\"pause\" sends PFC PAUSE to switches that run no PFC (switch.pfc.enabled = false): they hold the traffic in lossy queues that drop when full; enable switch.pfc or use \"drop\"".into()));
        }
    }
    // SRPT ranks a message's later packets ahead of its earlier ones (fewer bytes left): the
    // reordering Eunomia §5.4 needs its layer for. Without one, each is a gap to the receiver.
    {
        use crate::fabric::lb::LbKind;
        let lb = s.switch.load_balancer;
        let rdma = !s.flows.is_empty() || !s.perftest.is_empty() || !s.nvmf.is_empty() || !s.rpc.is_empty();
        // Queue pairs on k shortest paths follow the path their packets carry; the balancer
        // only places what carries none (ACKs, [[traffic]]): a comparison of balancers with
        // k_shortest_paths on gave five identical runs. (Where the source switch picks a path
        // per packet, `routing.path_choice` is plainly the balancing asked for.)
        let per_connection = s.routing.path_choice == crate::scenario::schema::PathChoice::Connection;
        if s.routing.k_shortest_paths.is_some() && per_connection && lb != LbKind::Ecmp && rdma {
            out.push((
                "switch.load_balancer".into(),
                format!("queue pairs under routing.k_shortest_paths follow the path their packets carry (routing.path_choice picks it), so {} places only ACKs and [[traffic]] packets; compare balancers without k_shortest_paths", lb_name(lb)),
            ));
        }
        // Per-packet balancers split a message over paths of different queues, as SRPT below
        // (where there is more than one path: a star or a dumbbell has one).
        let per_packet = matches!(lb, LbKind::Spray | LbKind::RoundRobin | LbKind::Drill | LbKind::PowerOfTwo);
        let one_path = matches!(s.topology, TopologySpec::BackToBack {} | TopologySpec::Star { .. } | TopologySpec::Dumbbell { .. });
        if per_packet && rdma && s.nic.ordering.is_none() && s.routing.k_shortest_paths.is_none() && !one_path {
            out.push((
                "switch.load_balancer".into(),
                "sends a message's packets over different paths, and without [nic.ordering] the receiver takes each overtaken packet for a loss (go-back-N resends from every gap: two 100 Gbps WRITE streams sprayed over two spines delivered 5 Gbps each); add [nic.ordering] (docs/eunomia.md) unless the collapse is what the run studies".into(),
            ));
        }
    }
    // One switch has no port facing another to deflect to (it passed without a word).
    if s.switch.deflection && matches!(s.topology, TopologySpec::BackToBack {} | TopologySpec::Star { .. }) {
        out.push(("switch.deflection".into(), "this topology has no switch with a port facing another switch, so nothing can be deflected: a packet a buffer refuses is dropped".into()));
    }
    if s.switch.queue_order == crate::fabric::port::QueueOrder::Srpt && s.nic.ordering.is_none() {
        out.push(("switch.queue_order".into(), "SRPT sends a message's later packets before its earlier ones, and without [nic.ordering] the receiver takes each overtaken packet for a loss (go-back-N resends from every gap; a lone message may wait for its retransmission timeout)".into()));
    }
    // With a bitmap of a few hundred bits, a long message whose packets queued behind shorter
    // ones comes back newest first, past the cap: the refusals and go-back-N's rewinds loop (a
    // 1 MB WRITE beside a 100 KB and a 10 KB one took 1,391 us, 102 uncapped; found by a
    // helper). The paper runs SRPT with the bitmap uncapped (§5.4).
    if let (crate::fabric::port::QueueOrder::Srpt, Some(o)) = (s.switch.queue_order, s.nic.ordering.as_ref()) {
        use crate::nic::ordering::Layer;
        let most = eunomia::bitmap::MAX_ROWS * o.block_bits;
        let found = match o.layer {
            Layer::Eunomia if o.cap_bits < most.min(2032) => Some(("nic.ordering.cap_bits", o.cap_bits, format!("cap_bits = {most} (the most at {}-bit blocks) with a memory to match, as scenarios/eunomia/fig15_srpt.toml", o.block_bits))),
            Layer::Static if o.bits < 2032 => Some(("nic.ordering.bits", o.bits, "bits = 2032 or more".to_string())),
            _ => None,
        };
        if let Some((key, bits, fix)) = found {
            out.push((key.into(), format!("SRPT sends a long message's queued packets newest first, so they come back in reverse order, past a {bits}-bit bitmap: the layer refuses them and the sender rewinds again and again (a 1 MB WRITE beside two short ones took 14x its time). The Eunomia paper runs SRPT with the bitmap uncapped (§5.4): {fix}")));
        }
    }
    for (i, t) in s.perftest.iter().enumerate() {
        if t.test == crate::scenario::schema::PerftestKind::SendBw && t.depth > s.nic.rq_depth {
            out.push((
                format!("perftest[{i}].depth"),
                format!("a send_bw server posts at most nic.rq_depth ({}) receives per queue pair, fewer than the {} SENDs kept in flight: a SEND that arrives before a receive is posted again draws an RNR NAK", s.nic.rq_depth, t.depth),
            ));
        }
        if t.test == crate::scenario::schema::PerftestKind::ReadBw {
            if let Some(policy) = policy_blind_to_reads(s, Some(t.server)) {
                out.push((format!("perftest[{i}].test"), policy));
            }
        }
        if t.hint.is_some() {
            // The hint is written on the queue pair that sends the data; only a policy that
            // reads hints on that host's NIC makes anything of it.
            use crate::nic::scr::PolicySpec;
            let sender = t.data_sender();
            let why = match s.nic.scr.as_ref() {
                None => Some("there is no [nic.scr]: no policy reads it".to_string()),
                Some(c) if !matches!(c.policy, PolicySpec::WaterFilling(_) | PolicySpec::External(_)) => {
                    Some("the SCR policy does not read hints (water_filling takes them as weights; an external policy sees them as host events)".to_string())
                }
                Some(c) if c.hosts.as_ref().is_some_and(|h| !h.contains(&sender)) => {
                    Some(format!("host {sender}, which sends the data, is not in nic.scr.hosts: its NIC runs no policy"))
                }
                _ => None,
            };
            if let Some(why) = why {
                out.push((format!("perftest[{i}].hint"), format!("the hint has no effect: {why}")));
            }
        }
        if let Some(why) = scr_on_the_wrong_end(s, t) {
            out.push((format!("perftest[{i}]"), why));
        }
        if let Some(why) = static_share_counts_read_requests(s, i) {
            out.push((format!("perftest[{i}].test"), why));
        }
        if t.start.0.saturating_add(t.warmup.0) >= s.duration.0 {
            out.push((
                format!("perftest[{i}].warmup"),
                format!("start + warmup ({} + {}) leaves nothing of the {} run to measure: its rates will be 0", t.start, t.warmup, s.duration),
            ));
        }
    }
    for (i, _) in s.flows.iter().enumerate().filter(|(_, f)| f.verb == crate::scenario::schema::FlowVerb::Read) {
        if let Some(policy) = policy_blind_to_reads(s, None) {
            out.push((format!("flows[{i}].verb"), policy));
        }
    }
    if let Some(why) = swift_target_below_base_rtt(s) {
        out.push(("nic.scr.policy.swift.base_target".into(), why));
    }
    if let Some(why) = multipath_timeout_below_an_answer(s) {
        out.push(("nic.scr.policy.multipath.timeout".into(), why));
    }
    if let Some(period) = s.nic.scr.as_ref().and_then(|c| c.telemetry).filter(|&p| p > s.duration) {
        out.push(("nic.scr.telemetry".into(), format!("a period of {period} is longer than the {} run: no sample is taken", s.duration)));
    }
    if let Some(scr) = s.nic.scr.as_ref().filter(|c| c.warmup >= s.duration && c.warmup > crate::units::Time::ZERO) {
        out.push(("nic.scr.warmup".into(), format!("a warmup of {} leaves nothing of the {} run to measure: events handled and their cycles will be 0 (events still waiting at its end are counted as collected)", scr.warmup, s.duration)));
    }
    if s.nic.star.is_some() && !s.rpc.iter().any(|r| r.stack.is_star()) {
        out.push(("nic.star".into(), "has no effect: no [[rpc]] entry runs stack = \"star\" or \"star_auto\", so no connection is stateless".into()));
    } else if let Some(star) = s.nic.star.as_ref().filter(|c| c.window.0 > 0 && c.window.0 < s.nic.mtu as u64) {
        out.push(("nic.star.window".into(), format!("{} is less than one packet ({} bytes, the MTU): a connection keeps one chunk unacknowledged", star.window, s.nic.mtu)));
    }
    if let Some(y) = s.yama.as_ref().filter(|y| y.warmup >= s.duration) {
        out.push(("yama.warmup".into(), format!("a warmup of {} leaves nothing of the {} run to measure: every throughput will be 0", y.warmup, s.duration)));
    }
    if let Some(why) = s.yama.as_ref().and_then(|y| yama_burst_too_long(y, s.duration)) {
        out.push(("yama.burst".into(), why));
    }
    for (i, e) in s.yama.iter().flat_map(|y| y.engine.iter()).enumerate() {
        if let Some(step) = e.schedule.iter().find(|c| c.at >= s.duration) {
            out.push((format!("yama.engine[{i}].schedule"), format!("a step at {} is not before the end of the {} run: the engine's capacity never takes it", step.at, s.duration)));
        }
    }
    for (i, e) in s.yama.iter().flat_map(|y| y.entity.iter()).enumerate() {
        if e.depth > s.nic.sq_depth {
            out.push((format!("yama.entity[{i}].depth"), format!("{} operations outstanding per queue pair, more than nic.sq_depth ({}) holds: the posts past it are refused (post_errors) and the queue pair waits for one to come back", e.depth, s.nic.sq_depth)));
        }
        if e.start >= s.duration {
            out.push((format!("yama.entity[{i}].start"), format!("{} is not before the end of the {} run: this entity never runs", e.start, s.duration)));
        }
    }
    // Generated workloads that start at or after the run's end send nothing (a stop before
    // the start is an error; a flow file's lines are checked one by one in `flow_files`).
    for (i, t) in s.traffic.iter().enumerate().filter(|(_, t)| t.start >= s.duration) {
        out.push((format!("traffic[{i}].start"), format!("{} is not before the end of the {} run: this traffic never sends", t.start, s.duration)));
    }
    for (i, f) in s.flows.iter().enumerate().filter(|(_, f)| f.file.is_none() && f.start >= s.duration) {
        out.push((format!("flows[{i}].start"), format!("{} is not before the end of the {} run: no flow starts", f.start, s.duration)));
    }
    for (i, n) in s.nvmf.iter().enumerate() {
        if n.start.0.saturating_add(n.warmup.0) >= s.duration.0 {
            out.push((format!("nvmf[{i}].warmup"), format!("start + warmup ({} + {}) leaves nothing of the {} run to measure: its rates will be 0", n.start, n.warmup, s.duration)));
        }
    }
    for (i, r) in s.rpc.iter().enumerate() {
        if r.warmup >= s.duration {
            out.push((format!("rpc[{i}].warmup"), format!("a warmup of {} leaves nothing of the {} run to measure: its call rates will be 0", r.warmup, s.duration)));
        }
        // Keys of another stack than the entry's do nothing.
        use crate::host::apps::rpc::{default_group, default_switch, default_timeslot, RpcStack};
        if r.stack != RpcStack::Scalardma {
            for (key, set) in [("group_size", r.group_size != default_group()), ("timeslot", r.timeslot != default_timeslot()), ("switch_cost", r.switch_cost != default_switch())] {
                if set {
                    out.push((format!("rpc[{i}].{key}"), format!("{key} is ScalaRDMA's; this entry's stack has no connection groups, so it does nothing")));
                }
            }
        }
        if !r.security && !r.stack.is_star() {
            out.push((format!("rpc[{i}].security"), "the security check is StaR's; this entry's stack keeps no whitelist, so turning it off does nothing".into()));
        }
        if (r.connections as usize) < r.clients.len() {
            out.push((format!("rpc[{i}].clients"), format!("{} clients for {} connections (dealt to the clients in turn): the last {} have none", r.clients.len(), r.connections, r.clients.len() - r.connections as usize)));
        }
        if r.first_call_spread() > r.warmup {
            out.push((format!("rpc[{i}].start_spread"), format!("{} is longer than the warmup ({}): connections still starting are measured", r.first_call_spread(), r.warmup)));
        }
    }
    // A stateless server sets up all its connections at once, every entry's to it together:
    // per connection its state in a WQEP and a WQEP per receive posted, queued on its link
    // (told once per server, at the last entry with stateless connections to it).
    let mut star_setup = std::collections::BTreeMap::<u32, (u32, usize, u64, u64)>::new();
    for (i, (r, roles)) in s.rpc.iter().zip(&rpc_roles).enumerate().filter(|(_, (_, roles))| roles.server_stateless > 0) {
        use crate::wire::star::{DESCRIPTOR_BYTES, FRAME_OVERHEAD};
        let per_conn = (s.nic.qp_context_bytes + FRAME_OVERHEAD) as u64 + r.requests as u64 * (DESCRIPTOR_BYTES + FRAME_OVERHEAD) as u64;
        let e = star_setup.entry(r.server).or_default();
        *e = (e.0 + 1, i, e.2 + roles.server_stateless, e.3 + per_conn * roles.server_stateless);
    }
    let star = s.nic.star.unwrap_or_default();
    for (server, (entries, last, connections, bytes)) in star_setup {
        let (r, stateless) = (&s.rpc[last], rpc_roles[last].server_stateless);
        let line = host_rate(s, host_rates, server);
        let setup = line.tx_time(bytes);
        // Past the WQEP timeout the library posts WQEPs again before they leave; past the StaR
        // timeout the stateful side's packets, queued behind them, are resent (either can come
        // first: 5,000 connections at 100 Gbps re-posted 88,263 WQEPs with a 100 us
        // wqep_timeout and a 10 ms rto, and resent 138,833 packets the other way round).
        let mut effects = Vec::new();
        if setup > star.wqep_timeout {
            effects.push(format!("longer than nic.star.wqep_timeout ({}): WQEPs are posted again before they leave", star.wqep_timeout));
        }
        if setup > star.rto {
            effects.push(format!("longer than nic.star.rto ({}): the stateful side's packets wait behind them and are resent", star.rto));
        }
        if effects.is_empty() {
            continue;
        }
        let mut which = if r.stack == crate::host::apps::rpc::RpcStack::StarAuto { format!("{stateless} StaR connections (of the {} this entry negotiates, by nic.star.negotiate_threshold)", r.connections) } else { format!("{stateless} StaR connections") };
        if entries > 1 {
            let earlier = if entries == 2 { "the earlier entry's".to_string() } else { format!("the {} earlier entries'", entries - 1) };
            which += &format!(" and {earlier} to server {server} ({connections} in all)");
        }
        out.push((
            format!("rpc[{last}].connections"),
            format!("setting up {which} queues {setup} of WQEPs on the stateless server's {line} link, {}; raise nic.star.wqep_timeout and nic.star.rto", effects.join("; and ")),
        ));
    }
    if let Some(c) = s.nic.state_cache.as_ref().filter(|c| c.when_full == WhenFull::Pause) {
        // PAUSE goes out at half the buffer; what the switch has sent before it stops (a round
        // trip of the link at its rate) and the packets on the wire either way must fit in the
        // other half, or the buffer drops.
        let (_, in_flight) = sent_before_pause(s);
        if c.rx_buffer.0 / 2 < in_flight {
            out.push((
                "nic.state_cache.rx_buffer".into(),
                format!(
                    "{} leaves {} B above the PAUSE mark, less than the {} B the switch can send before it stops (a {} round trip at {} and two packets): pause mode can drop when the buffer does not drain meanwhile",
                    c.rx_buffer,
                    c.rx_buffer.0 / 2,
                    in_flight,
                    Time(2 * s.links.delay.0),
                    s.links.rate
                ),
            ));
        }
    }
    for (i, e) in s.link_events.iter().enumerate() {
        if e.at >= s.duration {
            out.push((format!("link_events[{i}].at"), format!("{} is not before the end of the {} run: the link never changes", e.at, s.duration)));
        }
    }
    for (key, why) in s.nic.ordering.iter().flat_map(|o| o.one_bit()) {
        out.push((format!("nic.ordering.{key}"), why));
    }
    for (key, why) in s.nic.ordering.iter().flat_map(|o| o.unused_keys()) {
        out.push((format!("nic.ordering.{key}"), why));
    }
    if let Some(why) = eunomia_cap_below_bdp(s) {
        out.push(("nic.ordering.cap_bits".into(), why));
    }
    eunomia_cap_below_reads(s, &mut out);
    if let TopologySpec::Jellyfish { switches, degree, .. } = &s.topology {
        if (*switches as u64 * *degree as u64) % 2 == 1 {
            out.push(("topology.jellyfish.degree".into(), format!("{switches} switches of odd degree {degree} cannot all use every port (switches × degree is odd): one switch keeps a port unconnected")));
        }
    }
    // A sender or pair listed twice doubles its traffic.
    let repeats = |out: &mut Problems, key: &dyn Fn(usize) -> String, what: &str, items: &[String]| {
        for (j, x) in items.iter().enumerate() {
            if let Some(k) = items[..j].iter().position(|y| y == x) {
                out.push((key(j), format!("{what} {x} is listed already (entry {k}): it sends twice as much")));
            }
        }
    };
    for (i, t) in s.traffic.iter().enumerate() {
        match &t.pattern {
            Pattern::Pairs { pairs } => repeats(&mut out, &|j| format!("traffic[{i}].pattern.pairs.pairs[{j}]"), "pair", &pairs.iter().map(|p| format!("{p:?}")).collect::<Vec<_>>()),
            Pattern::Incast { senders: Some(v), .. } => repeats(&mut out, &|j| format!("traffic[{i}].pattern.incast.senders[{j}]"), "sender", &v.iter().map(|h| h.to_string()).collect::<Vec<_>>()),
            _ => {}
        }
    }
    for (i, r) in s.rpc.iter().enumerate() {
        repeats(&mut out, &|j| format!("rpc[{i}].clients[{j}]"), "client", &r.clients.iter().map(|h| h.to_string()).collect::<Vec<_>>());
    }
    for (i, f) in s.flows.iter().enumerate() {
        if let Some(FlowPattern::Incast { senders: Some(v), .. }) = &f.pattern {
            repeats(&mut out, &|j| format!("flows[{i}].pattern.incast.senders[{j}]"), "sender", &v.iter().map(|h| h.to_string()).collect::<Vec<_>>());
        }
    }
    {
        use crate::nic::scr::PolicySpec;
        let floor = match s.nic.scr.as_ref().map(|c| &c.policy) {
            Some(PolicySpec::Static(p)) => Some(("static", p.min_rate)),
            // Swift never cut (two flows left a 1.8 MB queue), credits never throttled.
            Some(PolicySpec::Swift(p)) => Some(("swift", p.min_rate)),
            Some(PolicySpec::ReceiverDriven(p)) => Some(("receiver_driven", p.min_rate)),
            // Every flow is set at least to the floor (clamped to the line): no share binds.
            Some(PolicySpec::WaterFilling(p)) => Some(("water_filling", p.min_rate)),
            _ => None,
        };
        if let Some((name, rate)) = floor.filter(|(_, r)| *r >= slowest) {
            out.push((format!("nic.scr.policy.{name}.min_rate"), format!("a floor of {rate} is at or above {}: every flow there is set to it or more, so the policy limits nothing", links(slowest))));
        }
        // Water filling starts flows at the line at most and steps them by at most the line: a
        // start or a step above it is the line (it ran without a word).
        if let Some(PolicySpec::WaterFilling(p)) = s.nic.scr.as_ref().map(|c| &c.policy) {
            for (key, rate, what) in [("start_rate", p.start_rate, "every flow starts at the line rate"), ("step", p.step, "one step fills a flow to the line rate")] {
                if rate > fastest {
                    out.push((format!("nic.scr.policy.water_filling.{key}"), format!("{rate} is above {}: {what}, and there is no filling", links(fastest))));
                }
            }
        }
        if let Some(PolicySpec::ReceiverDriven(p)) = s.nic.scr.as_ref().map(|c| &c.policy) {
            if p.interval == Time::ZERO && p.signal_on == crate::nic::scr::policy::receiver_driven::SignalOn::Interval {
                out.push(("nic.scr.policy.receiver_driven.interval".into(), "0ns signals on every RX event of every flow: a 128-byte signal per packet received, each one handled by the sender's cores".into()));
            }
        }
    }
    // RDMA traffic outside the lossless classes gets no PFC: full buffers drop it. Flows from a
    // file take each line's class instead ([`flow_files`]).
    let pfc = &s.switch.pfc;
    let rdma = roce_apps || s.flows.iter().any(|f| f.file.is_none()) || !s.rpc.is_empty();
    if pfc.enabled && rdma && !pfc.classes.contains(&s.nic.priority) {
        out.push(("nic.priority".into(), unprotected(s.nic.priority, &pfc.classes, "RDMA traffic goes")));
    }
    tassel_batches(&mut out, s, host_rates);
    rate_limits_past_pcie(&mut out, s, host_rates);
    limits_starved_by_turns(&mut out, s, host_rates);
    // A static XOFF the buffer cannot reach never pauses: the lossless classes then drop.
    // (XOFF counts an ingress's bytes past its `ingress_reserve`.)
    let reachable = s.switch.buffer.0.saturating_sub(s.switch.pfc.ingress_reserve.0);
    if let Some(x) = s.switch.pfc.xoff.filter(|x| s.switch.pfc.enabled && x.0 >= reachable) {
        out.push(("switch.pfc.xoff".into(), format!("{x} is not below the {} buffer (less the ingress_reserve of {}): no ingress reaches it, PAUSE is never sent, and the lossless classes drop when the buffer fills", s.switch.buffer, s.switch.pfc.ingress_reserve)));
    }
    if let Some(f) = &s.failures {
        let rtt = s.links.delay.0.saturating_mul(2);
        if f.interval.0 > 0 && f.interval.0 < rtt {
            out.push(("failures.interval".into(), format!("links fail and recover every {}, within one link round trip ({}): a packet barely crosses before its path changes, and every change recomputes routes, which makes the run crawl", f.interval, Time(rtt))));
        }
        if f.start >= s.duration {
            out.push(("failures.start".into(), format!("{} is not before the end of the {} run: no link ever fails", f.start, s.duration)));
        }
    }
    // A lost packet is resent when a later one's arrival is NAKed; a message's lost tail waits
    // for the retransmission timeout, and so does a stream whose NAK was lost too (a link
    // that goes down takes what is on it, in both directions, until routes move: a 10 MB WRITE
    // lost its only NAK and stalled for the rest of the run). Warned for random loss, periodic
    // failures and a scripted link failure that lasts to the end of the run.
    let same_link = |a: [u32; 2], b: [u32; 2]| a == b || a == [b[1], b[0]];
    let link_down = s.link_events.iter().find(|e| {
        e.state == LinkState::Down && e.at < s.duration && !s.link_events.iter().any(|u| u.state == LinkState::Up && u.at > e.at && u.at < s.duration && same_link(u.between, e.between))
    });
    // (Periodic failures that start at or after the end fail nothing: warned as such alone.)
    let fails = s.failures.as_ref().is_some_and(|f| f.start < s.duration);
    let loses = s.links.loss > 0.0 || fails || link_down.is_some();
    // StaR's calls time out on `nic.star.rto` instead.
    let roce = roce_apps || !s.flows.is_empty() || rpc_roles.iter().any(|r| r.roce > 0);
    // `nic.window` is selective repeat's (IRN's) cap; go-back-N's sender has none of its own.
    if s.nic.window.is_some() && s.nic.recovery != crate::nic::Recovery::SelectiveRepeat {
        out.push(("nic.window".into(), "caps the bytes in flight under selective repeat only (IRN's window); this run's go-back-N ignores it: set nic.recovery = \"selective_repeat\", or cap every sender with [nic.cc_window]".into()));
    }
    // A latency test's keys that only a bandwidth test reads, or that pace its pings.
    for (i, t) in s.perftest.iter().enumerate().filter(|(_, t)| t.test == crate::scenario::schema::PerftestKind::WriteLat) {
        if t.qps > 1 {
            out.push((format!("perftest[{i}].qps"), format!("a latency test runs one queue pair (a ping-pong); qps = {} is not used", t.qps)));
        }
        // (Its default, 128, is a bandwidth test's: only another value was meant for it.)
        if t.depth != default_tx_depth() {
            out.push((format!("perftest[{i}].depth"), format!("a latency test keeps one message outstanding (a ping-pong); depth = {} is not used", t.depth)));
        }
        if let Some(r) = t.rate_limit {
            // A ping waits for the limiter's tokens: one message's bytes at the limit apart.
            let gap = r.tx_time(t.message.0);
            let none = if gap >= s.duration { format!("; no ping completes in the {} run", s.duration) } else { String::new() };
            out.push((format!("perftest[{i}].rate_limit"), format!("paces a latency test: each {} ping waits for the limiter ({gap} apart at {r}), so its latency measures the pacing{none}", t.message)));
        }
    }
    // Without PFC a full switch buffer drops packets (an incast, deflection), which is loss too.
    let drops = !s.switch.pfc.enabled;
    if (loses || drops) && roce && s.nic.rto >= s.duration {
        let cause = if !loses {
            "switch.pfc.enabled = false: a full switch buffer drops packets".to_string()
        } else if s.links.loss > 0.0 {
            "links.loss".to_string()
        } else if fails {
            "failures".to_string()
        } else {
            format!("a link goes down for good at {}, link_events", link_down.map_or(Time::ZERO, |e| e.at))
        };
        out.push((
            "nic.rto".into(),
            format!("packets {} lost in this run ({cause}), but a message whose last packets, or the NAK asking for a lost one, are lost is resent only after the {} timeout, which the {} run never reaches: set nic.rto shorter (InfiniBand's timeouts are 4.096 µs × 2^n)", if loses { "are" } else { "can be" }, s.nic.rto, s.duration),
        ));
    }
    if let Some(message) = frames_of_no_time(s, host_rates) {
        out.push(("links.serialization".into(), message));
    }
    out
}

/// Under ns-3's rule a frame's time is cut down to whole nanoseconds, so on a link fast enough
/// a full data frame takes no time at all and the link has no capacity limit (ns-3 does the
/// same); a message naming the fastest such link, or `None`.
fn frames_of_no_time(s: &Scenario, host_rates: Option<&HostRates>) -> Option<String> {
    use crate::units::Serialization;
    if s.links.serialization != Serialization::Ns3 {
        return None;
    }
    let generated = match &s.topology {
        TopologySpec::Dumbbell { bottleneck_rate, .. } => *bottleneck_rate,
        TopologySpec::LeafSpine { uplink_rate, .. } => *uplink_rate,
        _ => None,
    };
    let fastest = host_rates.map_or(s.links.rate, |r| r.fastest_link).max(generated.unwrap_or(BitsPerSec(0)));
    let frame = u64::from(s.nic.mtu) + u64::from(s.nic.header_bytes(crate::wire::roce::Opcode::WriteMiddle));
    (fastest.0 > 0 && Serialization::Ns3.tx_time(fastest, frame) == Time::ZERO).then(|| {
        format!("a full {frame}-byte data frame takes 0 ns on the {fastest} links under ns-3's rule (whole nanoseconds, cut down), so those links never hold a packet back: use \"exact\", or links under {}", BitsPerSec(frame * 8 * 1_000_000_000))
    })
}

/// The warning for RDMA traffic in a class that PFC does not protect.
fn unprotected(class: u8, classes: &[u8], what: &str) -> String {
    format!("{what} in class {class}, which switch.pfc.classes {classes:?} does not make lossless: PFC never pauses it, and a full switch buffer drops it")
}

/// What each flow file holds that will not run as meant, one warning each, naming the first
/// such line (each file read and parsed once; one that cannot be is left to the world's build,
/// which reports it):
/// - flows in a class PFC does not protect, while PFC is on (per class);
/// - flows that start at or after their workload's stop (the run's end, or `stop`): they never
///   run (an HPCC row that lost its start reads as ConWeave's five columns, its port as the
///   size and its size as the start in seconds, far past the end, so it lands here);
/// - rows past the count the first line declares (ignored, as ns-3 ignores them);
/// - rows of both layouts, HPCC's six fields and ConWeave's five;
/// - a row that starts before the row above it.
///
/// And rows past a topology file's declared links.
pub fn flow_files(s: &Scenario, base_dir: &std::path::Path) -> Problems {
    let pfc = &s.switch.pfc;
    let mut out = Problems::new();
    for (i, f) in s.flows.iter().enumerate() {
        let Some(path) = &f.file else { continue };
        let Ok(text) = std::fs::read_to_string(base_dir.join(path)) else { continue };
        let Ok((list, rest)) = crate::host::flow_file::parse_flow_file_with_rest(&text, f.start_times, f.empty) else { continue };
        if pfc.enabled {
            for (class, line) in crate::host::flow_file::first_line_of_each_class(&list).iter().enumerate() {
                if let (Some(line), false) = (line, pfc.classes.contains(&(class as u8))) {
                    out.push((format!("flows[{i}].file"), unprotected(class as u8, &pfc.classes, &format!("{} puts flows (line {line} the first)", path.display()))));
                }
            }
        }
        let stop = f.stop.unwrap_or(s.duration).min(s.duration);
        let mut late = list.iter().filter(|fl| fl.start.0.saturating_add(f.start.0) >= stop.0);
        if let Some(first) = late.next() {
            let n = 1 + late.count();
            out.push((
                format!("flows[{i}].file"),
                format!("{n} of the {} flows of {} start at or after the workload's end ({stop}), line {} the first: they never run", list.len(), path.display(), first.line),
            ));
        }
        if let Some(line) = rest {
            out.push((format!("flows[{i}].file"), format!("{} declares {} flows on its first line; the rows from line {line} on are ignored", path.display(), list.len())));
        }
        // Each row is read by its own count of fields; ns-3's reader takes one layout for the
        // whole file, and misreads every row of the other.
        let (six, five) = (list.iter().find(|fl| fl.dport.is_some()), list.iter().find(|fl| fl.dport.is_none()));
        if let (Some(six), Some(five)) = (six, five) {
            out.push((
                format!("flows[{i}].file"),
                format!("{} mixes HPCC's six-field rows (line {} the first) and ConWeave's five-field rows (line {} the first): each runs as its own fields say, but either ns-3 program reads every row one way and would misread the others", path.display(), six.line, five.line),
            ));
        }
        // Flows start at their own times here, whatever the rows' order; ns-3's program reads
        // the next row only once the one above it has started, and schedules it from then.
        if let Some(w) = list.windows(2).find(|w| w[1].start < w[0].start) {
            out.push((
                format!("flows[{i}].file"),
                format!("{}: line {} starts at {}, before line {} above it ({}): every flow here starts at its own time, but ns-3 reads the rows in order and would schedule this one in the past (a negative delay, refused by a debug build); sort the rows by start time to compare with it", path.display(), w[1].line, w[1].start, w[0].line, w[0].start),
            ));
        }
    }
    if let TopologySpec::File { path } = &s.topology {
        let text = std::fs::read_to_string(base_dir.join(path)).unwrap_or_default();
        if let Some((line, declared)) = crate::fabric::topology::link_row_past_count(&text) {
            out.push(("topology.file.path".into(), format!("{} declares {declared} links on its first line; line {line} past them reads as one more link, and is ignored (as ns-3 ignores it)", path.display())));
        }
    }
    out
}

/// A bandwidth test's messages on the wire: the message's bytes, its packets' headers in all,
/// and their mean size (a short last packet included; rounded down, so warnings err towards
/// speaking). The packets are the data sender's: a READ's are the server's responses. None for
/// a latency test.
fn packet_shape(s: &Scenario, t: &PerftestSpec) -> Option<(u64, u64, u32)> {
    use crate::wire::roce::Family;
    let family = match t.test {
        PerftestKind::WriteBw => Family::Write,
        PerftestKind::SendBw => Family::Send,
        PerftestKind::ReadBw => Family::ReadResponse,
        PerftestKind::WriteLat => return None,
    };
    let extra = s.nic.extra_header_bytes(Family::Write);
    let len = t.message.0.max(1);
    let k = crate::nic::qp::packets_for(len, s.nic.mtu);
    let headers: u64 = (0..k).map(|j| crate::nic::qp::opcode_at(family, j, k, false).header_bytes() as u64 + extra as u64).sum();
    Some((len, headers, ((len + headers) / k as u64) as u32))
}

/// Rate limits whose payload, read from host memory, is more than the sending host's PCIe
/// carries (where the link, after them, is not shorter): the queue pairs share PCIe's reads
/// as they come, so each falls below its limit and the limits' proportions do not hold. (A
/// scheduler keeps them when the link is short: Tassel's oversubscription, §3.4.) Warned once
/// per host, at its first limited entry.
fn rate_limits_past_pcie(out: &mut Problems, s: &Scenario, host_rates: Option<&HostRates>) {
    // Per sending host: its first limited entry, wire bits per second asked, payload of them.
    let mut hosts = std::collections::BTreeMap::<u32, (usize, f64, f64)>::new();
    for (i, t) in s.perftest.iter().enumerate() {
        let (Some(r), Some((len, headers, _))) = (t.rate_limit, packet_shape(s, t)) else { continue };
        if t.memory == crate::scenario::schema::BufferMemory::Gpu && s.nic.gpu.is_some() {
            continue; // (its payload is read from the GPU's memory, not over the host's PCIe)
        }
        let line = host_rate(s, host_rates, t.data_sender()).0;
        let wire = r.0.min(line) as f64 * t.qps.max(1) as f64;
        let e = hosts.entry(t.data_sender()).or_insert((i, 0.0, 0.0));
        e.1 += wire;
        e.2 += wire * len as f64 / (len + headers) as f64;
    }
    let pcie = s.nic.pcie.bandwidth;
    for (h, (i, wire, payload)) in hosts {
        // What the link lets through of them, as payload.
        let asked = payload * (host_rate(s, host_rates, h).0 as f64 / wire).min(1.0);
        if asked > pcie.0 as f64 * 1.001 {
            out.push((
                format!("perftest[{i}].rate_limit"),
                format!(
                    "host {h}'s rate-limited queue pairs ask for {:.1} Gbps of payload from host memory, more than its {pcie} PCIe carries (nic.pcie.bandwidth): they share PCIe's reads as they come, so each gets less than its limit and the limits' proportions do not hold; keep their payload within {pcie} in all, or raise nic.pcie.bandwidth",
                    asked / 1e9
                ),
            ));
        }
    }
}

/// Rate limits the commodity scheduler's turns keep far below: with `nic.pace_burst = 0` a
/// paced queue pair's gap runs from each of its sends, so it loses its turn after every packet,
/// while an unlimited queue pair on the same host keeps whole turns (at least `turn_bytes`,
/// whole messages) as long as it has them posted. Each limited queue pair then gets one packet
/// per round of the others' turns: `line × its packet / the round`, when its gap is shorter than
/// the round. An unlimited queue pair counts in the round only if its posted work (`depth` ×
/// message) covers its turn and what the loop that reposts it holds past the others' turns: the
/// NIC's `tx_pipeline`, and a base round trip of the fabric (its farthest hosts, `links.delay`
/// per link) and six PCIe latencies (completion, doorbell, the WQE's and the payload's round
/// trips) at line rate; one that runs dry between its turns leaves the link to the limited
/// ones. Warned per limited entry when the estimate is under 90% of what it could have (its
/// limit, or the host's link split evenly over its queue pairs, whichever is less); not
/// estimated on file and Jellyfish topologies, nor under an SCR policy that sets rates, which
/// paces the others.
fn limits_starved_by_turns(out: &mut Problems, s: &Scenario, host_rates: Option<&HostRates>) {
    use crate::nic::sched::SchedulerSpec;
    let SchedulerSpec::Commodity { turn_bytes, max_turn_bytes, .. } = &s.nic.scheduler else { return };
    // (SCR's policies but the passive one pace the other queue pairs with dequeue rates of
    // their own: not estimated.)
    let paced_by_scr = s.nic.scr.as_ref().is_some_and(|c| !matches!(c.policy, crate::nic::scr::PolicySpec::Passive(_)));
    if s.nic.pace_burst.0 > 0 || paced_by_scr {
        return;
    }
    let Some(links) = links_between_farthest_hosts(s) else { return };
    let repost = Time(2 * links * s.links.delay.0 + 6 * s.nic.pcie.latency.0);
    let mtu = s.nic.mtu as u64;
    // Per sending host: (entry, its packet on the wire, limit) of the limited entries, the
    // unlimited ones' (posted bytes, wire bytes of a turn) per queue pair and their counts, the
    // limited packets of a round, and the host's count of queue pairs.
    #[derive(Default)]
    struct Host {
        limited: Vec<(usize, f64, u64)>,
        unlimited: Vec<(u64, f64, u64)>,
        packets: f64,
        qps: u64,
    }
    let mut hosts = std::collections::BTreeMap::<u32, Host>::new();
    for (i, t) in s.perftest.iter().enumerate() {
        let Some((len, headers, packet)) = packet_shape(s, t) else { continue };
        let line = host_rate(s, host_rates, t.data_sender()).0;
        let qps = t.qps.max(1) as u64;
        let e = hosts.entry(t.data_sender()).or_default();
        e.qps += qps;
        match t.rate_limit.filter(|r| r.0 < line) {
            Some(r) => {
                e.limited.push((i, packet as f64, r.0));
                e.packets += qps as f64 * packet as f64;
            }
            None => {
                // Its turn: whole messages until `turn_bytes` of payload, or cut at
                // `max_turn_bytes` (a whole packet's worth past it).
                let whole = turn_bytes.0.max(1).div_ceil(len) * len;
                let payload = max_turn_bytes.map_or(whole, |m| whole.min(m.0.div_ceil(mtu) * mtu));
                e.unlimited.push((t.depth as u64 * len, payload as f64 * (len + headers) as f64 / len as f64, qps));
            }
        }
    }
    for (h, host) in hosts {
        let line_rate = host_rate(s, host_rates, h);
        let line = line_rate.0 as f64;
        let all_turns: f64 = host.unlimited.iter().map(|&(_, turn, q)| q as f64 * turn).sum();
        let round_bound = host.packets + all_turns;
        let in_flight = (line_rate.bytes_in(repost) + s.nic.tx_pipeline.0) as f64;
        // The unlimited queue pairs that stay backlogged: what one sent in its turn is reposted
        // a repost loop later, so at its next turn, one round on, it has a whole turn posted if
        // its posted work covers the turn and what the loop holds past the others' turns.
        let backlogged = |posted: u64, turn: f64| posted as f64 >= turn + (in_flight - (round_bound - turn)).max(0.0);
        let round = host.packets + host.unlimited.iter().filter(|&&(posted, turn, _)| backlogged(posted, turn)).map(|&(_, turn, q)| q as f64 * turn).sum::<f64>();
        for &(i, packet, limit) in &host.limited {
            let gets = line * packet / round;
            let could = (limit as f64).min(line / host.qps as f64);
            // (Its gap, packet / limit, is longer than the round when `gets` is below the limit.)
            if gets < 0.9 * could {
                out.push((
                    format!("perftest[{i}].rate_limit"),
                    format!(
                        "each of its queue pairs gets about {:.2} Gbps, not {}: under the commodity scheduler with nic.pace_burst = 0 a paced queue pair loses its turn after each packet, and waits out the whole-message turns of host {h}'s unlimited queue pairs, whose posted work keeps them backlogged (a round of {:.0} bytes on the wire); set nic.pace_burst (\"32KiB\" lets it bank that wait) or a scheduler that times rates (nic.scheduler.tassel)",
                        gets / 1e9,
                        BitsPerSec(limit),
                        round
                    ),
                ));
            }
        }
    }
}

/// Tassel fetches a queue pair's packets in batches of `N = ⌈limit × latency / typical_packet⌉`
/// (at most `max_batch`) once per scheduling latency (§3.2.1): a queue pair whose packets are
/// much smaller than `typical_packet` cannot reach its limit. Warned per bandwidth test.
fn tassel_batches(out: &mut Problems, s: &Scenario, host_rates: Option<&HostRates>) {
    use crate::nic::sched::SchedulerSpec;
    // The NIC takes the lower of a limit and its link: above the link, a limit runs as the
    // link rate, and weighs as much when limits oversubscribe the link (Tassel's Φ). The link
    // is the sending host's (a topology file gives each its own rate).
    let line = |t: &PerftestSpec| host_rate(s, host_rates, t.data_sender());
    for (i, t) in s.perftest.iter().enumerate() {
        let h = line(t);
        if let Some(r) = t.rate_limit.filter(|r| r.0 > h.0) {
            out.push((format!("perftest[{i}].rate_limit"), format!("{r} is above the {h} link of its sender (host {}): it runs as {h}, and weighs as that when limits share the link", t.data_sender())));
        }
    }
    if s.nic.scheduler.keeps_rates_in_kbps() {
        for (i, t) in s.perftest.iter().enumerate() {
            // A limit above the link runs as the link rate (warned above): that is what is kept.
            let Some(r) = t.rate_limit.map(|r| BitsPerSec(r.0.min(line(t).0))) else { continue };
            let kept = tassel::to_kbps(r.0) as u64 * 1000;
            if kept.abs_diff(r.0) * 1000 > r.0 {
                out.push((format!("perftest[{i}].rate_limit"), format!("the scheduler keeps limits in whole Kbps: {r} runs as {}", BitsPerSec(kept))));
            }
        }
    }
    if let SchedulerSpec::SePieo { flows, .. } = &s.nic.scheduler {
        // SE-PIEO is built for `flows` flows (its clock falls with them): a NIC with more queue
        // pairs than that could not hold them, and would run slower than the clock modelled.
        let mut per_host = std::collections::BTreeMap::<u32, u64>::new();
        for t in &s.perftest {
            if t.test == PerftestKind::WriteLat {
                // A ping-pong: both ends write, each on its one queue pair.
                *per_host.entry(t.client).or_default() += 1;
                *per_host.entry(t.server).or_default() += 1;
            } else {
                *per_host.entry(t.data_sender()).or_default() += t.qps.max(1) as u64;
            }
        }
        if let Some((h, n)) = per_host.into_iter().find(|&(_, n)| n > *flows as u64) {
            out.push(("nic.scheduler.se_pieo.flows".into(), format!("host {h} sends on {n} queue pairs, more than the {flows} flows this SE-PIEO is built (and clocked) for: set flows to at least {n}")));
        }
    }
    let SchedulerSpec::Tassel { latency, typical_packet, max_batch, .. } = &s.nic.scheduler else { return };
    if latency.0 == 0 {
        return;
    }
    for (i, t) in s.perftest.iter().enumerate() {
        let Some((len, headers, wire)) = packet_shape(s, t) else { continue };
        let limit = t.rate_limit.map_or(line(t).0, |r| r.0.min(line(t).0));
        let n = tassel::adaptive_batch(limit, latency.0, typical_packet.0 as u32, *max_batch);
        let ceiling = n as f64 * wire as f64 * 8.0 * 1e12 / latency.0 as f64;
        let qps = t.qps.max(1) as f64;
        let short = if t.rate_limit.is_some() { ceiling < 0.99 * limit as f64 } else { qps * ceiling < 0.99 * limit as f64 };
        if short {
            let fix = if n >= *max_batch { "raise nic.scheduler.tassel.max_batch or lower latency".to_string() } else { format!("set nic.scheduler.tassel.typical_packet near {wire}B") };
            out.push((
                format!("perftest[{i}].message"),
                format!(
                    "its packets average {wire} B on the wire and Tassel fetches {n} per {latency} scheduling latency for {} (typical_packet = {}B, max_batch = {max_batch}): a queue pair sends at most {}; {fix}",
                    if t.rate_limit.is_some() { format!("a {} limit", BitsPerSec(limit)) } else { format!("a queue pair without a limit (at the {} line rate)", BitsPerSec(limit)) },
                    typical_packet.0,
                    BitsPerSec(ceiling as u64)
                ),
            ));
        }
        // The other way round: packets much larger than `typical_packet` make each batch more
        // than starts within a latency, and the filter drops the rest after fetching their
        // WQEs (§3.5), 64 B of PCIe reads each. Warned when that and the payload read from the
        // host pass the host's PCIe, which then holds the queue pairs below their limits. (A
        // rate-limited queue pair is fetched for once per latency; unlimited ones sharing the
        // link are fetched for only as their turns come, which this does not model.)
        if t.rate_limit.is_none() || wire <= typical_packet.0 as u32 {
            continue;
        }
        let latency_s = latency.0 as f64 * 1e-12;
        let starts = limit as f64 * latency_s / (wire as f64 * 8.0);
        let dropped = (n as f64 - starts.ceil()).max(0.0);
        let drop_bps = qps * dropped * crate::nic::pcie::DESCRIPTOR_BYTES as f64 * 8.0 / latency_s;
        let sent = (limit as f64 * qps).min(s.links.rate.0 as f64);
        let payload_bps = if t.memory == BufferMemory::Gpu && s.nic.gpu.is_some() { 0.0 } else { sent * len as f64 / (len + headers) as f64 };
        let pcie = s.nic.pcie.bandwidth.0 as f64;
        if drop_bps > 0.01 * pcie && payload_bps + drop_bps > pcie {
            out.push((
                format!("perftest[{i}].message"),
                format!(
                    "its packets average {wire} B on the wire, far above typical_packet = {}B: Tassel fetches {n} per {latency} scheduling latency where about {} start, and the WQEs it drops cost {} of PCIe reads, which with the payload pass the {} PCIe; set nic.scheduler.tassel.typical_packet near {wire}B",
                    typical_packet.0,
                    starts.ceil() as u64,
                    BitsPerSec(drop_bps as u64),
                    s.nic.pcie.bandwidth
                ),
            ));
        }
    }
}

fn figures(out: &mut Problems, s: &Scenario) {
    for (i, f) in s.figure.iter().enumerate() {
        for (key, why) in f.check() {
            out.push((format!("figure[{i}].{key}"), why));
        }
        match f.trace {
            Some(crate::output::paper::Trace::ScrRates) if s.nic.scr.is_none() => {
                out.push((format!("figure[{i}].trace"), "\"scr_rates\" traces the dequeue rates SCR sets: the scenario needs [nic.scr]".into()));
            }
            Some(crate::output::paper::Trace::ScrRtt) if s.nic.scr.is_none() => {
                out.push((format!("figure[{i}].trace"), "\"scr_rtt\" traces the RTT probes SCR collects: the scenario needs [nic.scr]".into()));
            }
            Some(crate::output::paper::Trace::YamaTimeline) if s.yama.is_none() => {
                out.push((format!("figure[{i}].trace"), "\"yama_timeline\" traces the entities' throughput: the scenario needs [yama]".into()));
            }
            _ => {}
        }
    }
    for (i, p) in s.paper.iter().enumerate() {
        for (key, why) in p.check() {
            out.push((format!("paper[{i}].{key}"), why));
        }
    }
}

fn nic(out: &mut Problems, s: &Scenario) {
    let n = &s.nic;
    let p = |k: &str| format!("nic.{k}");
    if !(64..=9000).contains(&n.mtu) {
        out.push((p("mtu"), format!("expected a payload of 64 to 9000 bytes, got {}", n.mtu)));
    }
    if n.priority > 7 {
        out.push((p("priority"), format!("expected a class 0-7, got {}", n.priority)));
    }
    if n.ack_priority.is_some_and(|c| c > 7) {
        out.push((p("ack_priority"), "expected a class 0-7".into()));
    }
    if n.weights.is_some_and(|w| w.contains(&0)) {
        out.push((p("weights"), "expected eight positive weights".into()));
    }
    if n.ack_interval == 0 {
        out.push((p("ack_interval"), "expected at least 1 packet".into()));
    }
    if n.rto.0 == 0 {
        out.push((p("rto"), "expected a positive timeout".into()));
    }
    if n.window.is_some_and(|w| w.0 == 0) {
        // (It ran as one packet per round trip.)
        out.push((p("window"), "expected a positive in-flight cap such as \"64KB\" (leave it out for one BDP)".into()));
    }
    if let Some(f) = n.rto_few {
        if f.rto.0 == 0 || f.rto > n.rto {
            out.push((p("rto_few.rto"), format!("expected a positive timeout no longer than nic.rto ({}), got {}", n.rto, f.rto)));
        }
    }
    if n.pace_burst.0 > 1 << 20 {
        out.push((p("pace_burst"), format!("expected at most 1MiB (a rate limiter's bucket, not a buffer), got {}", n.pace_burst)));
    }
    if n.rnr_retry > crate::nic::RNR_RETRY_FOREVER {
        out.push((p("rnr_retry"), format!("expected 0 to 7 (InfiniBand's field; 7 retries until a receive is posted), got {}", n.rnr_retry)));
    }
    if let crate::nic::cc::CcSpec::Mprdma(m) = &n.cc {
        if m.delta == 0 {
            out.push((p("cc.mprdma.delta"), "expected at least 1 packet".into()));
        }
        if !(0.0..=1.0).contains(&m.explore) {
            out.push((p("cc.mprdma.explore"), format!("expected a probability in [0, 1], got {}", m.explore)));
        }
        if n.ordering.is_none() {
            out.push((
                p("cc.mprdma"),
                "MP-RDMA's receiver keeps out-of-order packets in a bitmap: add [nic.ordering] with layer = \"static\" and bits = delta".into(),
            ));
        }
    }
    // IRN's sender is selective repeat: under go-back-N every SACK would rewind the window.
    if n.ordering.is_some_and(|o| o.recover_on_sack) && n.recovery != crate::nic::Recovery::SelectiveRepeat {
        out.push((p("ordering.recover_on_sack"), "IRN's sender resends the holes below a SACK: it needs nic.recovery = \"selective_repeat\"".into()));
    }
    for (key, why) in n.scheduler.check() {
        out.push((p(&format!("scheduler.{key}")), why));
    }
    // Tassel and SE-PIEO keep rates, the link's among them, in whole Kbps in 32 bits: a faster
    // link would be scheduled as if it ran at 4.29 Tbps.
    // (A topology file's own host links are checked against it when it is read.)
    let generated = !matches!(s.topology, TopologySpec::File { .. });
    if n.scheduler.keeps_rates_in_kbps() && generated && s.links.rate > TASSEL_MOST {
        out.push(("links.rate".into(), tassel_too_fast(s.links.rate, "the link rate")));
    }
    if n.qp_context_bytes == 0 {
        out.push((p("qp_context_bytes"), "expected a positive size: a connection's state takes room".into()));
    }
    // StaR's stateless side migrates a connection's state in one WQEP (§III-C1).
    let star_used = n.star.is_some() || s.rpc.iter().any(|r| matches!(r.stack, crate::host::apps::rpc::RpcStack::Star | crate::host::apps::rpc::RpcStack::StarAuto));
    if star_used && n.qp_context_bytes > n.mtu {
        out.push((p("qp_context_bytes"), format!("StaR sends a connection's state in one WQEP: at most nic.mtu ({}) bytes, got {}", n.mtu, n.qp_context_bytes)));
    }
    if n.sq_depth == 0 || n.rq_depth == 0 {
        out.push((p(if n.sq_depth == 0 { "sq_depth" } else { "rq_depth" }), "expected a positive depth".into()));
    }
    if n.gpu.is_some_and(|g| g.bandwidth.0 == 0) {
        out.push((p("gpu.bandwidth"), "expected a positive bandwidth".into()));
    }
    if n.pcie.bandwidth.0 == 0 {
        out.push((p("pcie.bandwidth"), "expected a positive bandwidth".into()));
    }
    if n.rx_buffer.0 < n.mtu as u64 {
        out.push((p("rx_buffer"), format!("must hold at least one packet's payload (nic.mtu, {} bytes), got {}", n.mtu, n.rx_buffer)));
    }
    if n.memory == crate::nic::MemoryMode::Bytes && n.memory_size.0 > (1 << 30) {
        if n.memory_size == crate::nic::default_memory_size() {
            // Left at its default, sized for address-only memory: the key to fix is not written.
            out.push((p("memory"), format!("real-bytes memory is limited to 1 GiB per host, and nic.memory_size is left at its default of {} (for address-only memory): set nic.memory_size as well, e.g. \"64MiB\"", n.memory_size)));
        } else {
            out.push((p("memory_size"), format!("real-bytes memory is limited to 1 GiB per host, got {}", n.memory_size)));
        }
    }
    if n.memory_size.0 == 0 {
        out.push((p("memory_size"), "expected a positive size".into()));
    }
    if let Some(Err((key, why))) = n.scr.as_ref().map(|s| s.check()) {
        out.push((key, why));
    }
    for (key, why) in n.star.iter().flat_map(|c| c.check()) {
        out.push((p(&format!("star.{key}")), why));
    }
    // The largest packet: a full payload behind the largest RoCE header (and Eunomia's).
    let packet = n.mtu as u64 + crate::wire::roce::Opcode::WriteOnlyImm.header_bytes() as u64 + n.extra_header_bytes(crate::wire::roce::Family::Write) as u64;
    for (key, why) in n.state_cache.iter().flat_map(|c| c.check(packet, n.qp_context_bytes)) {
        out.push((p(&format!("state_cache.{key}")), why));
    }
    for (key, why) in n.ordering.iter().flat_map(|c| c.check()) {
        out.push((p(&format!("ordering.{key}")), why));
    }
    use crate::nic::cc::CcSpec;
    match &n.cc {
        CcSpec::Dcqcn(d) => {
            if !(d.g > 0.0 && d.g <= 1.0) {
                out.push((p("cc.dcqcn.g"), format!("expected a gain in (0, 1], got {}", d.g)));
            }
            for (k, t) in [("alpha_interval", d.alpha_interval), ("rate_decrease_interval", d.rate_decrease_interval), ("increase_timer", d.increase_timer)] {
                if t.0 == 0 {
                    out.push((p(&format!("cc.dcqcn.{k}")), "expected a positive interval".into()));
                }
            }
            if d.min_rate.0 == 0 {
                out.push((p("cc.dcqcn.min_rate"), "expected a rate above 0 (cuts halving towards 0 reach a rate the NIC reads as no limit)".into()));
            }
        }
        CcSpec::Dctcp(d) => {
            if !(d.g > 0.0 && d.g <= 1.0) {
                out.push((p("cc.dctcp.g"), format!("expected a gain in (0, 1], got {}", d.g)));
            }
            if d.min_rate.0 == 0 {
                out.push((p("cc.dctcp.min_rate"), "expected a rate above 0 (cuts halving towards 0 reach a rate the NIC reads as no limit)".into()));
            }
        }
        CcSpec::Timely(t) => {
            // Each key named for itself, at its own line.
            if !(t.ewma > 0.0 && t.ewma <= 1.0) {
                out.push((p("cc.timely.ewma"), format!("expected a gain in (0, 1], got {}", t.ewma)));
            }
            if !(t.beta > 0.0 && t.beta < 1.0) {
                out.push((p("cc.timely.beta"), format!("expected a decrease factor in (0, 1), got {}", t.beta)));
            }
            if t.t_low >= t.t_high {
                out.push((p("cc.timely.t_high"), format!("expected above t_low ({}), got {}", t.t_low, t.t_high)));
            }
            if t.delta.0 == 0 {
                out.push((p("cc.timely.delta"), "expected an additive increase above 0".into()));
            }
            if t.min_rate.0 == 0 {
                // A rate cut to 0 is no rate limit to the NIC: the queue pair sent at line rate.
                out.push((p("cc.timely.min_rate"), "expected a rate above 0 (a cut to 0 would leave the queue pair unpaced)".into()));
            }
            if t.hai_n == 0 {
                out.push((p("cc.timely.hai_n"), "expected at least 1 (the increases in a row before hyperactive increase; 0 makes every increase 0)".into()));
            }
            if t.segment.0 == 0 {
                out.push((p("cc.timely.segment"), "expected a segment above 0 B (the rate is updated once per segment acknowledged)".into()));
            }
        }
        CcSpec::Hpcc(h) => {
            if !(h.eta > 0.0 && h.eta <= 1.0) {
                out.push((p("cc.hpcc.eta"), format!("expected a target utilization in (0, 1], got {}", h.eta)));
            }
            if h.base_rtt.is_some_and(|t| t.0 == 0) {
                out.push((p("cc.hpcc.base_rtt"), "expected a positive RTT".into()));
            }
            // A topology file's links set their own rates: checked against them when the
            // scenario is loaded ([`against_host_rates`]).
            let line = (!matches!(s.topology, TopologySpec::File { .. })).then_some(s.links.rate);
            if h.rate_ai.0 == 0 || line.is_some_and(|l| h.rate_ai > l) {
                out.push((p("cc.hpcc.rate_ai"), hpcc_rate_ai_message(s.links.rate, h.rate_ai)));
            }
            if h.min_rate.is_some_and(|r| r.0 == 0 || line.is_some_and(|l| r > l)) {
                out.push((p("cc.hpcc.min_rate"), hpcc_min_rate_message(s.links.rate)));
            }
            if h.int_multi.is_some_and(|m| m == 0 || m > 1 << 20) {
                out.push((p("cc.hpcc.int_multi"), format!("expected ns-3's INT_MULTI, 1 to 1048576, got {}", h.int_multi.unwrap_or(0))));
            }
        }
        _ => {}
    }
}

/// The fastest link Tassel and SE-PIEO can pace: they keep rates in whole Kbps in 32 bits.
const TASSEL_MOST: BitsPerSec = BitsPerSec(u32::MAX as u64 * 1000);

fn tassel_too_fast(rate: BitsPerSec, what: &str) -> String {
    format!("{rate} ({what}) is above the {TASSEL_MOST} the Tassel and SE-PIEO schedulers can pace (rates in whole Kbps, 32 bits): they would schedule it as {TASSEL_MOST}; use the commodity scheduler")
}

/// Checks that need the topology: host ids, link endpoints.
fn hpcc_rate_ai_message(line: BitsPerSec, got: BitsPerSec) -> String {
    format!("expected an additive increase above 0 and at most the link rate ({line}), got {got}")
}

fn hpcc_min_rate_message(line: BitsPerSec) -> String {
    format!("expected a rate above 0 and at most the link rate ({line})")
}

/// Errors of settings against a topology file's own host links (`(slowest, fastest)`), which
/// ignore `links.rate`: HPCC's increase beyond the fastest host's line, or its floor above a
/// host's line (that host's HPCC would never cut).
pub fn against_host_rates(s: &Scenario, rates: &HostRates) -> Problems {
    let (slowest, fastest) = (rates.slowest, rates.fastest);
    let mut out = Problems::new();
    if s.nic.scheduler.keeps_rates_in_kbps() && fastest > TASSEL_MOST {
        out.push(("topology.file.path".into(), tassel_too_fast(fastest, "a host link of the topology file")));
    }
    if let (crate::nic::cc::CcSpec::Hpcc(h), TopologySpec::File { .. }) = (&s.nic.cc, &s.topology) {
        if h.rate_ai > fastest {
            out.push(("nic.cc.hpcc.rate_ai".into(), hpcc_rate_ai_message(fastest, h.rate_ai)));
        }
        if h.min_rate.is_some_and(|r| r > slowest) {
            out.push(("nic.cc.hpcc.min_rate".into(), format!("{} (the slowest host link of the topology file)", hpcc_min_rate_message(slowest))));
        }
    }
    out
}

pub fn against_topology(s: &Scenario, t: &Topology) -> Problems {
    let mut out = Problems::new();
    if let Some(m) = too_large(t.switch_count() as u128, t.host_groups() as u128) {
        out.push(("topology".into(), m));
        return out;
    }
    // With ns-3's NIC (a config.txt run), ECN curves by port rate cover every switch port's
    // rate, as ns-3 demands ("must set kmin for each link speed"); elsewhere a rate without
    // one takes kmin/kmax/pmax.
    let ecn = &s.switch.ecn;
    if ecn.enabled && !ecn.per_rate.is_empty() && s.nic.profile == crate::nic::NicProfile::Ns3 {
        let listed: Vec<BitsPerSec> = ecn.per_rate.keys().filter_map(|k| k.parse().ok()).collect();
        let switch_link = |l: &&crate::fabric::topology::LinkSpec| t.kinds[l.a as usize] == NodeKind::Switch || t.kinds[l.b as usize] == NodeKind::Switch;
        if let Some(l) = t.links.iter().filter(switch_link).find(|l| !listed.contains(&l.rate)) {
            out.push((
                "switch.ecn.per_rate".into(),
                format!("no ECN curve for the {} links of the topology (link {}-{}): ns-3 needs one for every link speed", l.rate, l.a, l.b),
            ));
        }
    }
    let n = t.nodes() as u32;
    let mut linked = vec![false; n as usize];
    for l in &t.links {
        linked[l.a as usize] = true;
        linked[l.b as usize] = true;
    }
    let host_check = |out: &mut Problems, path: String, id: u32| {
        if id >= n {
            out.push((path, format!("node {id} is out of range: the topology has nodes 0-{}", n.saturating_sub(1))));
        } else if t.kinds[id as usize] != NodeKind::Host {
            out.push((path, format!("node {id} is a switch, not a host")));
        } else if !linked[id as usize] {
            out.push((path, format!("host {id} has no link")));
        }
    };
    // Workloads over every host need every host linked.
    let unlinked = t.hosts().into_iter().find(|&h| !linked[h as usize]);
    let every_host = |out: &mut Problems, path: String| {
        if let Some(h) = unlinked {
            out.push((path, format!("host {h} has no link, and this pattern uses every host")));
        }
    };
    // An incast's listed senders (under `pattern`, e.g. `traffic[0].pattern`): at least one, each
    // a linked host and not the receiver.
    let incast_senders = |out: &mut Problems, pattern: &str, receiver: u32, senders: &Option<Vec<u32>>| {
        if senders.as_ref().is_some_and(|v| v.is_empty()) {
            out.push((format!("{pattern}.incast.senders"), "expected at least one sender (leave the key out for every other host)".into()));
        }
        for (j, &h) in senders.iter().flatten().enumerate() {
            host_check(out, format!("{pattern}.incast.senders[{j}]"), h);
            if h == receiver {
                out.push((format!("{pattern}.incast.senders[{j}]"), format!("host {h} is the receiver")));
            }
        }
    };
    for (i, tr) in s.traffic.iter().enumerate() {
        match &tr.pattern {
            Pattern::Permutation => {
                if t.hosts().len() < 2 {
                    out.push((format!("traffic[{i}].pattern"), "a permutation needs at least two hosts".into()));
                }
                every_host(&mut out, format!("traffic[{i}].pattern"));
            }
            Pattern::Incast { receiver, senders } => {
                if senders.is_none() {
                    every_host(&mut out, format!("traffic[{i}].pattern"));
                }
                host_check(&mut out, format!("traffic[{i}].pattern.incast.receiver"), *receiver);
                incast_senders(&mut out, &format!("traffic[{i}].pattern"), *receiver, senders);
            }
            Pattern::Pairs { pairs } => {
                if pairs.is_empty() {
                    out.push((format!("traffic[{i}].pattern.pairs.pairs"), "expected at least one pair".into()));
                }
                for (j, [a, b]) in pairs.iter().enumerate() {
                    let path = format!("traffic[{i}].pattern.pairs.pairs[{j}]");
                    host_check(&mut out, path.clone(), *a);
                    host_check(&mut out, path.clone(), *b);
                    if a == b {
                        out.push((path, format!("host {a} sends to itself")));
                    }
                }
            }
        }
    }
    for (i, f) in s.flows.iter().enumerate() {
        match &f.pattern {
            Some(FlowPattern::Incast { receiver, senders }) => {
                host_check(&mut out, format!("flows[{i}].pattern.incast.receiver"), *receiver);
                if senders.is_none() {
                    every_host(&mut out, format!("flows[{i}].pattern"));
                }
                incast_senders(&mut out, &format!("flows[{i}].pattern"), *receiver, senders);
            }
            _ if f.cdf.is_some() => every_host(&mut out, format!("flows[{i}].pattern")),
            _ => {}
        }
        if f.cdf.is_some() && t.hosts().len() < 2 {
            out.push((format!("flows[{i}].cdf"), "flows need at least two hosts".into()));
        }
    }
    for (j, &h) in s.nic.scr.iter().flat_map(|c| c.hosts.iter().flatten()).enumerate() {
        host_check(&mut out, format!("nic.scr.hosts[{j}]"), h);
    }
    for (i, p) in s.perftest.iter().enumerate() {
        host_check(&mut out, format!("perftest[{i}].client"), p.client);
        host_check(&mut out, format!("perftest[{i}].server"), p.server);
    }
    for (i, r) in s.rpc.iter().enumerate() {
        host_check(&mut out, format!("rpc[{i}].server"), r.server);
        for &c in &r.clients {
            host_check(&mut out, format!("rpc[{i}].clients"), c);
        }
    }
    for (i, n) in s.nvmf.iter().enumerate() {
        host_check(&mut out, format!("nvmf[{i}].initiator"), n.initiator);
        host_check(&mut out, format!("nvmf[{i}].target"), n.target);
    }
    if let Some(y) = &s.yama {
        for (k, why) in y.check() {
            out.push((format!("yama.{k}"), why));
        }
        for (i, e) in y.engine.iter().enumerate() {
            host_check(&mut out, format!("yama.engine[{i}].host"), e.host);
        }
        for (i, c) in y.chain.iter().enumerate() {
            if let Some(s) = c.server {
                host_check(&mut out, format!("yama.chain[{i}].server"), s);
            }
        }
        for (i, e) in y.entity.iter().enumerate() {
            for &n in &e.nodes {
                host_check(&mut out, format!("yama.entity[{i}].nodes"), n);
            }
            let server = y.chain.iter().find(|c| c.name == e.chain).and_then(|c| c.server_of(&y.engine));
            if server.is_some_and(|s| e.nodes.contains(&s)) {
                out.push((format!("yama.entity[{i}].nodes"), "a client host cannot be its chain's server".into()));
            }
        }
    }
    // Sampling every port every interval: refuse what no disk or memory would hold.
    if let Some(iv) = s.outputs.queue_interval.filter(|t| t.0 > 0) {
        let rows = (s.duration.0 / iv.0).saturating_add(1).saturating_mul(2 * t.links.len() as u64);
        if rows > MAX_SAMPLE_ROWS {
            out.push(("outputs.queue_interval".into(), format!("sampling {} ports every {iv} for {} makes {rows} rows (at most {MAX_SAMPLE_ROWS}); sample less often", 2 * t.links.len(), s.duration)));
        }
    }
    if let Some(iv) = s.outputs.rate_interval.filter(|t| t.0 > 0) {
        let samples = s.duration.0 / iv.0;
        if samples > MAX_SAMPLE_ROWS / 100 {
            out.push(("outputs.rate_interval".into(), format!("{samples} samples of every queue pair over {} (at most {}); sample less often", s.duration, MAX_SAMPLE_ROWS / 100)));
        }
    }
    if s.failures.is_some() && crate::fabric::failures::FailureSpec::candidates(t).is_empty() {
        out.push(("failures".into(), "the topology has no link between two switches to fail".into()));
    }
    for (i, e) in s.link_events.iter().enumerate() {
        let [a, b] = e.between;
        if !t.links.iter().any(|l| (l.a, l.b) == (a, b) || (l.a, l.b) == (b, a)) {
            out.push((format!("link_events[{i}].between"), format!("no link joins nodes {a} and {b}")));
        }
    }
    out
}
