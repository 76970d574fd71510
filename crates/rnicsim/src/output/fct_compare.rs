//! Comparing two FCT files flow by flow: ns-3's FCT_OUTPUT_FILE beside the one a `config.txt`
//! run writes (or two runs of ours), in either dialect of [`super::hpcc_text`]. Flows are
//! matched by source, destination, size and start (to the nanosecond, ±1 for rounding); the
//! slowdown of a flow is its FCT over its ideal FCT, at least 1, as ns-3's scripts take it.
//! `rnicsim compare-fct` prints the result.

use super::stream::quantile_of;
use crate::host::apps::flows::FlowRecord;
use crate::wire::pcap::node_ip;
use std::collections::HashMap;

/// One line of an FCT file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FctLine {
    /// Node ids (an HPCC file's hex addresses turned back into ids).
    pub src: u32,
    pub dst: u32,
    pub sport: u32,
    pub dport: u32,
    pub size: u64,
    pub start_ns: u64,
    pub fct_ns: u64,
    pub ideal_ns: u64,
}

impl FctLine {
    /// The line `fct.txt` has for flow `r` if it completed (times in whole ns, truncated).
    pub fn of(r: &FlowRecord) -> Option<FctLine> {
        let fct = r.fct()?;
        Some(FctLine {
            src: r.src,
            dst: r.dst,
            sport: r.udp_sport as u32,
            dport: r.udp_dport as u32,
            size: r.size,
            start_ns: r.start.0 / 1000,
            fct_ns: fct.0 / 1000,
            ideal_ns: r.ideal.0 / 1000,
        })
    }

    pub fn slowdown(&self) -> f64 {
        (self.fct_ns as f64 / self.ideal_ns.max(1) as f64).max(1.0)
    }
}

/// An endpoint: 8 hex digits of an IPv4 address in HPCC's file (`0b000101`), else a node id.
fn endpoint(s: &str) -> Option<u32> {
    if s.len() == 8 && s.starts_with('0') {
        let ip = u32::from_str_radix(s, 16).ok()?;
        let n = ((ip >> 16) & 0xff) * 256 + ((ip >> 8) & 0xff);
        return (node_ip(n) == ip).then_some(n);
    }
    s.parse().ok()
}

/// Parses an FCT file; an error names the line (1-based) and what is wrong with it.
pub fn parse_fct(text: &str) -> Result<Vec<FctLine>, (usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.is_empty() {
            continue;
        }
        let bad = |what: &str| (i + 1, format!("{what} in \"{line}\" (expected `src dst sport dport size start_ns fct_ns ideal_ns`)"));
        if f.len() != 8 {
            return Err(bad(&format!("{} fields", f.len())));
        }
        let (Some(src), Some(dst)) = (endpoint(f[0]), endpoint(f[1])) else { return Err(bad("an endpoint that is neither a node id nor an ns-3 address")) };
        let n: Vec<u64> = f[2..].iter().map(|x| x.parse::<u64>()).collect::<Result<_, _>>().map_err(|_| bad("a field that is not a whole number"))?;
        out.push(FctLine { src, dst, sport: n[0] as u32, dport: n[1] as u32, size: n[2], start_ns: n[3], fct_ns: n[4], ideal_ns: n[5] });
    }
    Ok(out)
}

/// The size buckets of the parity tables: below 10 KB, 10–100 KB, 100 KB–1 MB, 1 MB and more.
pub const SIZE_BUCKETS: [(u64, u64); 4] = [(0, 10_000), (10_000, 100_000), (100_000, 1_000_000), (1_000_000, u64::MAX)];

/// Slowdown statistics of a set of flows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlowdownStats {
    pub flows: usize,
    pub mean: f64,
    pub p50: f64,
    pub p99: f64,
    /// Mean per [`SIZE_BUCKETS`] bucket (NaN for an empty bucket).
    pub by_size: [f64; 4],
}

impl SlowdownStats {
    /// Of `(size, slowdown)` pairs; slowdowns below 1 count as 1.
    pub fn of(flows: &[(u64, f64)]) -> SlowdownStats {
        let mut s: Vec<f64> = flows.iter().map(|f| f.1.max(1.0)).collect();
        let mean = |v: &[f64]| if v.is_empty() { f64::NAN } else { v.iter().sum::<f64>() / v.len() as f64 };
        let by_size = SIZE_BUCKETS.map(|(lo, hi)| mean(&flows.iter().filter(|f| f.0 >= lo && f.0 < hi).map(|f| f.1.max(1.0)).collect::<Vec<_>>()));
        let m = mean(&s);
        SlowdownStats { flows: s.len(), mean: m, p50: quantile_of(&mut s, 0.5), p99: quantile_of(&mut s, 0.99), by_size }
    }
}

/// Two FCT files side by side, over the flows both finished.
#[derive(Clone, Debug, PartialEq)]
pub struct FctComparison {
    /// Lines in each file, and flows found in both.
    pub lines: (usize, usize),
    pub matched: usize,
    pub a: SlowdownStats,
    pub b: SlowdownStats,
    /// Share of matched flows whose slowdown in `a` is within 10% of theirs in `b`.
    pub within_10pct: f64,
}

/// Matches `a`'s flows to `b`'s and compares their slowdowns. Flows that share source,
/// destination, size and start (parallel flows of one pair) are told apart by their ports where
/// those agree, else paired in file order; each of `b`'s lines is matched once at most.
pub fn compare(a: &[FctLine], b: &[FctLine]) -> FctComparison {
    let mut index: HashMap<(u32, u32, u64, u64), Vec<usize>> = HashMap::new();
    for (i, l) in b.iter().enumerate() {
        index.entry((l.src, l.dst, l.size, l.start_ns)).or_default().push(i);
    }
    let mut used = vec![false; b.len()];
    let (mut sa, mut sb, mut close) = (Vec::new(), Vec::new(), 0usize);
    for l in a {
        let s = l.start_ns;
        let candidates = || [s, s.wrapping_sub(1), s + 1].into_iter().filter_map(|t| index.get(&(l.src, l.dst, l.size, t))).flatten().copied().filter(|&i| !used[i]);
        let same_ports = candidates().find(|&i| (b[i].sport, b[i].dport) == (l.sport, l.dport));
        let Some(i) = same_ports.or_else(|| candidates().next()) else { continue };
        used[i] = true;
        let (x, y) = (l.slowdown(), b[i].slowdown());
        sa.push((l.size, x));
        sb.push((l.size, y));
        close += usize::from((x / y - 1.0).abs() <= 0.10);
    }
    let matched = sa.len();
    FctComparison { lines: (a.len(), b.len()), matched, a: SlowdownStats::of(&sa), b: SlowdownStats::of(&sb), within_10pct: close as f64 / matched.max(1) as f64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_dialects_parse_and_bad_lines_are_named() {
        let hpcc = "0b000101 0b000201 10000 100 1000 2000000000 3000 2000\n\n";
        let conweave = "1 2 10000 100 1000 2000000000 3000 2000\n";
        assert_eq!(parse_fct(hpcc).unwrap(), parse_fct(conweave).unwrap());
        assert_eq!(parse_fct(conweave).unwrap()[0].slowdown(), 1.5);
        assert_eq!(parse_fct("1 2 3\n").unwrap_err().0, 1);
        assert_eq!(parse_fct("1 2 3 4 5 6 7 8\n1 2 x 4 5 6 7 8\n").unwrap_err().0, 2);
        assert!(parse_fct("0bzz0101 1 3 4 5 6 7 8").is_err());
    }

    #[test]
    fn flows_are_matched_and_compared_by_hand() {
        let line = |src, size, start_ns, fct_ns| FctLine { src, dst: 9, sport: 0, dport: 0, size, start_ns, fct_ns, ideal_ns: 1000 };
        // Slowdowns 1, 2 (a 20 KB flow), 4 (a 2 MB flow) against 1.05, 2.5, 4; one flow each
        // side has no partner; the second start differs by 1 ns (rounding).
        let a = [line(1, 100, 10, 900), line(2, 20_000, 20, 2000), line(3, 2_000_000, 30, 4000), line(4, 5, 40, 1000)];
        let b = [line(1, 100, 10, 1050), line(2, 20_000, 21, 2500), line(3, 2_000_000, 30, 4000), line(5, 5, 40, 1000)];
        let c = compare(&a, &b);
        assert_eq!((c.lines, c.matched), ((4, 4), 3));
        assert!((c.a.mean - 7.0 / 3.0).abs() < 1e-12 && (c.b.mean - 7.55 / 3.0).abs() < 1e-12);
        assert_eq!((c.a.p50, c.a.p99), (2.0, 4.0));
        assert_eq!(c.a.by_size[0], 1.0);
        assert_eq!((c.a.by_size[1], c.b.by_size[1]), (2.0, 2.5));
        assert!(c.a.by_size[2].is_nan());
        assert_eq!(c.a.by_size[3], 4.0);
        assert!((c.within_10pct - 2.0 / 3.0).abs() < 1e-12, "1 vs 1.05 and 4 vs 4 agree, 2 vs 2.5 does not");
    }

    #[test]
    fn parallel_flows_of_one_pair_are_each_matched_once() {
        // Two flows of one pair, same size and start, on different ports: slowdowns 1 and 3.
        // Keyed without the ports, the second overwrote the first and both of `a`'s lines met
        // it (a file against itself read as 50% within 10%).
        let line = |sport, fct_ns| FctLine { src: 1, dst: 2, sport, dport: 100, size: 1000, start_ns: 5, fct_ns, ideal_ns: 1000 };
        let a = [line(10, 1000), line(11, 3000)];
        let c = compare(&a, &a);
        assert_eq!(c.matched, 2);
        assert_eq!((c.a.mean, c.b.mean, c.within_10pct), (2.0, 2.0, 1.0));
        // Ports that differ (one file's flows on ports of its own) pair in file order, once each.
        let b = [line(20, 1000), line(21, 3000)];
        let c = compare(&a, &b);
        assert_eq!((c.matched, c.within_10pct), (2, 1.0));
        // One flow on the other side: matched once.
        let c = compare(&a, &b[..1]);
        assert_eq!((c.matched, c.b.mean), (1, 1.0));
    }
}
