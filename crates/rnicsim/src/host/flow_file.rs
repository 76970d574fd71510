//! HPCC-style flow files: the first line is the number of flows, then one flow per line,
//! `src dst priority dport size start_seconds` (HPCC) or `src dst priority size start_seconds`
//! (ConWeave). Every malformed input is an error naming the line.

use crate::input::LineError;
use crate::scenario::schema::{EmptyFlows, StartTimes};
use crate::units::{ns3_seconds, Time};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowSpec {
    pub src: u32,
    pub dst: u32,
    pub priority: u8,
    pub dport: Option<u16>,
    pub size: u64,
    pub start: Time,
    /// The line of the file it was read from.
    pub line: u32,
}

/// The classes the flow file at `path` puts flows in: per class 0–7, the first line that does.
/// None if the file cannot be read or parsed (the world's build reports that, naming the line).
pub fn first_line_per_class(path: &std::path::Path) -> Option<[Option<u32>; 8]> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(first_line_of_each_class(&parse_flow_file(&text).ok()?))
}

/// Per class 0–7, the first line of `flows` that puts a flow in it.
pub fn first_line_of_each_class(flows: &[FlowSpec]) -> [Option<u32>; 8] {
    let mut first = [None; 8];
    for f in flows {
        first[f.priority as usize].get_or_insert(f.line);
    }
    first
}

/// The flows of `text`, their start times to the picosecond.
pub fn parse_flow_file(text: &str) -> Result<Vec<FlowSpec>, LineError> {
    parse_flow_file_with_rest(text, StartTimes::Exact, EmptyFlows::Refuse).map(|(flows, _)| flows)
}

/// The flows of `text`, their start times read as `starts` says and rows of 0 bytes as `empty`
/// says, and the line of the first row past the count the first line declares (ignored, as
/// ns-3 ignores it), if any.
pub fn parse_flow_file_with_rest(text: &str, starts: StartTimes, empty: EmptyFlows) -> Result<(Vec<FlowSpec>, Option<usize>), LineError> {
    let text = crate::input::strip_bom(text);
    let err = |line: usize, message: String| LineError { line, message };
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())).filter(|(_, l)| !l.is_empty());
    let Some((ln, first)) = lines.next() else { return Err(err(1, "empty flow file; expected the number of flows".into())) };
    let count: usize = first.parse().map_err(|_| err(ln, format!("expected the number of flows, got \"{first}\"")))?;
    let mut flows = Vec::with_capacity(count.min(1 << 20));
    let mut last = ln;
    let mut rest = None;
    for (ln, l) in lines {
        if flows.len() == count {
            rest = Some(ln);
            break;
        }
        last = ln;
        let f: Vec<&str> = l.split_whitespace().collect();
        let (dport, size_at) = match f.len() {
            6 => (Some(f[3]), 4),
            5 => (None, 3),
            n => return Err(err(ln, format!("expected `src dst priority dport size start` or `src dst priority size start`, found {n} fields"))),
        };
        let int = |s: &str, what: &str| s.parse::<u64>().map_err(|_| err(ln, format!("{what}: expected a whole number, got \"{s}\"")));
        let src = int(f[0], "src")?;
        let dst = int(f[1], "dst")?;
        let priority = int(f[2], "priority")?;
        if src > u32::MAX as u64 || dst > u32::MAX as u64 {
            return Err(err(ln, "node id out of range".into()));
        }
        if priority > 7 {
            return Err(err(ln, format!("priority: expected 0-7, got {priority}")));
        }
        let dport = match dport {
            Some(p) => Some(u16::try_from(int(p, "dport")?).map_err(|_| err(ln, format!("dport: expected 0-65535, got {p}")))?),
            None => None,
        };
        let size = int(f[size_at], "size").map_err(|e| {
            // Six fields whose size reads as seconds: a five-field (ConWeave) line with one more
            // field at its end, far likelier than a fractional size.
            if f.len() == 6 && f[size_at].contains('.') && f[size_at].parse::<f64>().is_ok() {
                err(ln, format!("size: expected a whole number, got \"{}\", which looks like the start time: six fields read as `src dst priority dport size start` (HPCC's); a five-field line (`src dst priority size start`, ConWeave's) with one more field at its end reads so", f[size_at]))
            } else {
                e
            }
        })?;
        let size = match (size, empty) {
            (0, EmptyFlows::Refuse) => return Err(err(ln, "size: a flow needs at least one byte (flows[].empty = \"one_byte\" runs it as 1 byte, as ConWeave's ns-3 does)".into())),
            (0, EmptyFlows::OneByte) => 1,
            (size, _) => size,
        };
        let secs = f[size_at + 1];
        // Plain seconds, as ns-3 writes them: no unit of its own ("20u" is not 20 µs).
        let plain = secs.chars().all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-')) && secs.parse::<f64>().is_ok();
        // Rounded to the picosecond: a generator's float may carry more digits than that
        // (0.0000012345678913 s), which a scenario's own durations refuse.
        let start = secs
            .parse::<f64>()
            .ok()
            .filter(|s| plain && s.is_finite() && *s >= 0.0 && *s * 1e12 < u64::MAX as f64)
            .map(|s| match starts {
                StartTimes::Exact => Time((s * 1e12).round() as u64),
                StartTimes::Ns3 => ns3_seconds(s),
            })
            .ok_or_else(|| err(ln, format!("start: expected a time in seconds such as 2.000001, got \"{secs}\"")))?;
        if src == dst {
            return Err(err(ln, format!("node {src} sends to itself")));
        }
        flows.push(FlowSpec { src: src as u32, dst: dst as u32, priority: priority as u8, dport, size, start, line: ln as u32 });
    }
    if flows.len() != count {
        return Err(err(last + 1, format!("expected {count} flows, found {}", flows.len())));
    }
    Ok((flows, rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const HPCC: &str = "2\n0 5 3 100 20000 2.000001\n3 1 3 100 1000 2.0000015\n";

    #[test]
    fn parses_both_formats() {
        let f = parse_flow_file(HPCC).unwrap();
        assert_eq!(f[0], FlowSpec { src: 0, dst: 5, priority: 3, dport: Some(100), size: 20000, start: Time::from_ns(2_000_001_000), line: 2 });
        assert_eq!(f[1].start, Time(2_000_001_500_000));
        // Blank lines are skipped, and each flow keeps the line it came from.
        let spaced = parse_flow_file("\u{feff}2\n\n0 5 3 100 20000 2.000001\n\n\n3 1 3 100 1000 2.0000015\n").unwrap();
        assert_eq!((spaced[0].line, spaced[1].line), (3, 6));
        let c = parse_flow_file("1\n4 2 3 9000 0.5\n").unwrap();
        assert_eq!((c[0].dport, c[0].size, c[0].start), (None, 9000, Time::from_ms(500)));
    }

    #[test]
    fn errors_name_the_line() {
        assert_eq!(parse_flow_file("2\n0 5 3 100 20000 2.0\n").unwrap_err().line, 3);
        assert_eq!(parse_flow_file("1\n0 5 9 100 20000 2.0\n").unwrap_err().line, 2);
        assert_eq!(parse_flow_file("1\n0 5 3 100 0 2.0\n").unwrap_err().line, 2);
        // ConWeave's fork runs a row of 0 bytes as 1 byte.
        let one = parse_flow_file_with_rest("1\n0 5 3 0 2.0\n", StartTimes::Exact, EmptyFlows::OneByte).unwrap().0;
        assert_eq!(one[0].size, 1);
        assert_eq!(parse_flow_file("1\n0 5 3 100 10 -2.0\n").unwrap_err().line, 2);
        assert_eq!(parse_flow_file("x\n").unwrap_err().line, 1);
        // The start is plain seconds: a unit suffix is refused, and the message shows what was written.
        for bad in ["20u", "1m", "abc", "inf"] {
            let e = parse_flow_file(&format!("1\n0 5 3 100 20000 {bad}\n")).unwrap_err();
            assert!(e.line == 2 && e.message.contains(&format!("got \"{bad}\"")) && e.message.contains("seconds"), "{bad}: {e:?}");
        }
        assert_eq!(parse_flow_file("1\n0 5 3 100 20000 2e-6\n").unwrap()[0].start, Time::from_us(2));
        // As ns-3 takes them: the double, cut to whole ns (2.000001 is 2.00000100000000013…,
        // 2.000000171 is 2.00000017099999990…; 0.1 is 0.100000000000000005…).
        let ns3 = |s: &str| parse_flow_file_with_rest(&format!("1\n0 5 3 100 20000 {s}\n"), StartTimes::Ns3, EmptyFlows::Refuse).unwrap().0[0].start;
        assert_eq!((ns3("2.000001"), ns3("2.000000171"), ns3("0.1")), (Time::from_ns(2_000_001_000), Time::from_ns(2_000_000_170), Time::from_ms(100)));
        assert_eq!((ns3("0"), ns3("1e-10"), ns3("0.0000012345678913")), (Time(0), Time(0), Time::from_ns(1_234)));
        assert_eq!(ns3_seconds(f64::MAX), Time(u64::MAX));
        // More digits than a picosecond (a Python float's repr) round to it.
        assert_eq!(parse_flow_file("1\n0 5 3 100 20000 0.0000012345678913\n").unwrap()[0].start, Time(1_234_568));
        // A ConWeave line with a stray field at its end reads as HPCC's six: the message says so.
        let e = parse_flow_file("1\n106 13 3 314 2.000000159 7\n").unwrap_err();
        assert!(e.line == 2 && e.message.contains("looks like the start time") && e.message.contains("five-field"), "{e:?}");
    }

    proptest! {
        #[test]
        fn arbitrary_and_mutated_input_never_panics(s in "\\PC{0,160}", pos in 0usize..50, ch in proptest::char::any()) {
            let _ = parse_flow_file(&s);
            let mut m: Vec<char> = HPCC.chars().collect();
            let i = pos % m.len();
            m[i] = ch;
            if let Err(e) = parse_flow_file(&m.into_iter().collect::<String>()) {
                prop_assert!(e.line >= 1 && !e.message.is_empty());
            }
        }
    }
}
