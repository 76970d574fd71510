//! HPCC-style topology files, as used by the HPCC and ConWeave ns-3 simulators:
//!
//! ```text
//! nodes switches links
//! <switch node ids, space separated>
//! src dst rate delay error_rate      (one line per link; rate like 100Gbps, delay like 1000ns)
//! ```
//!
//! Nodes not listed as switches are hosts; lines after the declared links are ignored, as ns-3
//! does. Every malformed input is an error naming the line.

use super::{LinkSpec, NodeKind, Topology};
use crate::input::LineError;
use crate::units::{BitsPerSec, Time};

fn err<T>(line: usize, message: impl Into<String>) -> Result<T, LineError> {
    Err(LineError::new(line, message))
}

fn count(tok: Option<&str>, line: usize, what: &str) -> Result<usize, LineError> {
    match tok.map(str::parse::<usize>) {
        Some(Ok(n)) => Ok(n),
        Some(Err(_)) => err(line, format!("expected the number of {what} as a whole number, got \"{}\"", tok.unwrap_or(""))),
        None => err(line, format!("expected the number of {what}")),
    }
}

pub fn parse_hpcc_topology(text: &str) -> Result<Topology, LineError> {
    parse_hpcc_topology_lines(text).map(|(t, _)| t)
}

/// The first line past the declared links that reads as one more link (`src dst rate delay
/// error_rate` between nodes of the file), if any, with the number of links declared: ns-3
/// ignores it, as it ignores notes there, so a count line that declares too few links cuts
/// the fabric short without a word.
pub fn link_row_past_count(text: &str) -> Option<(usize, usize)> {
    let (topo, lines) = parse_hpcc_topology_lines(text).ok()?;
    let declared = topo.links.len();
    let last = lines.last().copied()?;
    let nodes = topo.kinds.len();
    let text = crate::input::strip_bom(text);
    text.lines().enumerate().skip(last).map(|(i, l)| (i + 1, l)).find_map(|(ln, l)| {
        let f: Vec<&str> = l.split_whitespace().collect();
        let node = |s: &str| s.parse::<usize>().is_ok_and(|n| n < nodes);
        (f.len() == 5 && node(f[0]) && node(f[1]) && f[2].parse::<BitsPerSec>().is_ok() && f[3].parse::<Time>().is_ok()).then_some((ln, declared))
    })
}

/// [`parse_hpcc_topology`], with the line of the file each link was read from (1-based; in
/// the order of `Topology::links`).
pub fn parse_hpcc_topology_lines(text: &str) -> Result<(Topology, Vec<usize>), LineError> {
    let text = crate::input::strip_bom(text);
    // Non-empty lines with their 1-based numbers.
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())).filter(|(_, l)| !l.is_empty());
    let Some((ln, header)) = lines.next() else { return err(1, "empty topology file; expected `nodes switches links`") };
    let mut it = header.split_whitespace();
    let nodes = count(it.next(), ln, "nodes")?;
    let switches = count(it.next(), ln, "switches")?;
    let links = count(it.next(), ln, "links")?;
    if switches > nodes {
        return err(ln, format!("{switches} switches but only {nodes} nodes"));
    }
    const MAX_NODES: usize = 1 << 22;
    if nodes > MAX_NODES {
        return err(ln, format!("{nodes} nodes is more than this simulator supports ({MAX_NODES})"));
    }
    let mut kinds = vec![NodeKind::Host; nodes];
    let mut seen = 0;
    let mut last = ln;
    while seen < switches {
        let Some((ln, l)) = lines.next() else { return err(last + 1, format!("expected {switches} switch ids, found {seen}")) };
        last = ln;
        if l.split_whitespace().count() == 5 && l.split_whitespace().any(|t| t.parse::<usize>().is_err()) {
            return err(ln, format!("expected {switches} switch ids before the link lines, found {seen} before this one"));
        }
        for tok in l.split_whitespace() {
            let id: usize = tok.parse().map_err(|_| LineError::new(ln, format!("expected a switch id, got \"{tok}\"")))?;
            if id >= nodes {
                return err(ln, format!("switch id {id} is out of range (there are {nodes} nodes)"));
            }
            if kinds[id] == NodeKind::Switch {
                return err(ln, format!("switch id {id} is listed twice"));
            }
            kinds[id] = NodeKind::Switch;
            seen += 1;
        }
        if seen > switches {
            return err(ln, format!("more switch ids than the {switches} declared"));
        }
    }
    let mut out = Vec::with_capacity(links.min(1 << 20));
    let mut link_lines = Vec::with_capacity(links.min(1 << 20));
    // The line of each host's link: a host's NIC has one port, and a second link was dropped
    // without a word (and a flow then read as crossing a host).
    let mut host_link = vec![0u32; nodes];
    for (ln, l) in lines {
        last = ln;
        if out.len() == links {
            break; // as in ns-3, anything after the declared links is ignored (files carry notes there)
        }
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() != 5 {
            return err(ln, format!("expected `src dst rate delay error_rate`, found {} fields", f.len()));
        }
        let node = |s: &str| -> Result<u32, LineError> {
            match s.parse::<usize>() {
                Ok(n) if n < nodes => Ok(n as u32),
                Ok(n) => err(ln, format!("node id {n} is out of range (there are {nodes} nodes)")),
                Err(_) => err(ln, format!("expected a node id, got \"{s}\"")),
            }
        };
        let (a, b) = (node(f[0])?, node(f[1])?);
        if a == b {
            return err(ln, format!("link from node {a} to itself"));
        }
        for h in [a, b].into_iter().filter(|&n| kinds[n as usize] == NodeKind::Host) {
            match host_link[h as usize] {
                0 => host_link[h as usize] = ln as u32,
                first => return err(ln, format!("host {h} already has a link (line {first}): a host's NIC has one port; list the node as a switch if it forwards")),
            }
        }
        let rate: BitsPerSec = f[2].parse().map_err(|e| LineError::new(ln, format!("rate: {e}")))?;
        if rate.0 == 0 {
            return err(ln, "rate: a link needs a positive rate");
        }
        let delay: Time = f[3].parse().map_err(|e| LineError::new(ln, format!("delay: {e}")))?;
        let loss: f64 = match f[4].parse() {
            Ok(x) if (0.0..=1.0).contains(&x) => x,
            _ => return err(ln, format!("error_rate: expected a probability between 0 and 1, got \"{}\"", f[4])),
        };
        out.push(LinkSpec { a, b, rate, delay, loss });
        link_lines.push(ln);
    }
    if out.len() != links {
        return err(last + 1, format!("expected {links} link lines, found {}", out.len()));
    }
    Ok((Topology { kinds, links: out }, link_lines))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_few_switch_ids_are_named_before_the_links() {
        let e = parse_hpcc_topology("4 2 2\n3\n0 3 100Gbps 1000ns 0\n1 3 100Gbps 1000ns 0\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("expected 2 switch ids before the link lines, found 1 before this one"), "{}", e.message);
    }
    use proptest::prelude::*;

    const SMALL: &str = "4 1 3\n3\n0 3 100Gbps 1000ns 0\n1 3 100Gbps 1000ns 0\n2 3 25Gbps 0.002ms 0.001\n";

    #[test]
    fn parses_small_file() {
        let t = parse_hpcc_topology(SMALL).unwrap();
        assert_eq!(t.hosts(), vec![0, 1, 2]);
        assert_eq!(t.links[2].rate, BitsPerSec::gbps(25));
        assert_eq!(t.links[2].delay, Time::from_us(2));
        assert_eq!(t.links[2].loss, 0.001);
    }

    #[test]
    fn parses_shipped_leaf_spine() {
        let text = include_str!("../../../../../data/topology/leaf_spine_128_100G_OS2.txt");
        let t = parse_hpcc_topology(text).unwrap();
        assert_eq!(t.hosts().len(), 128);
        assert_eq!(t.switch_count(), 16);
        assert!(t.hosts_connected());
    }

    #[test]
    fn errors_name_the_line() {
        let bad = SMALL.replace("25Gbps", "0Gbps");
        assert_eq!(parse_hpcc_topology(&bad).unwrap_err().line, 5);
        let bad = SMALL.replace("1 3 100", "1 9 100");
        let e = parse_hpcc_topology(&bad).unwrap_err();
        assert_eq!(e.line, 4);
        assert!(e.message.contains("out of range"));
        let e = parse_hpcc_topology("4 1 4\n3\n0 3 100Gbps 1000ns 0\n").unwrap_err();
        assert!(e.message.contains("expected 4 link lines"), "{e}");
        // A second link of a host (here straight to another host) was ignored.
        let e = parse_hpcc_topology(&SMALL.replace("4 1 3", "4 1 4").replace("25Gbps 0.002ms 0.001\n", "25Gbps 0.002ms 0.001\n0 1 100Gbps 1000ns 0\n")).unwrap_err();
        assert_eq!(e.line, 6);
        assert!(e.message.contains("host 0 already has a link (line 3)"), "{e}");
    }

    proptest! {
        #[test]
        fn arbitrary_input_never_panics(s in "\\PC{0,200}") {
            let _ = parse_hpcc_topology(&s);
        }

        #[test]
        fn mutated_input_never_panics(pos in 0usize..SMALL.len(), ch in proptest::char::any(), del in any::<bool>()) {
            let mut s: Vec<char> = SMALL.chars().collect();
            let i = pos.min(s.len() - 1);
            if del { s.remove(i); } else { s[i] = ch; }
            let s: String = s.into_iter().collect();
            if let Err(e) = parse_hpcc_topology(&s) {
                prop_assert!(e.line >= 1 && !e.message.is_empty());
            }
        }
    }
}
