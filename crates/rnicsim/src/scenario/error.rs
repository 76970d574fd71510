//! Errors a user can cause with a scenario, pointing at the file, line and key.

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file at fault (the scenario, or a file it names).
    pub file: String,
    /// 1-based line and column, when known.
    pub line: Option<usize>,
    pub column: Option<usize>,
    /// The dotted key path, e.g. `traffic[0].load`.
    pub key: Option<String>,
    /// What was wrong and what was expected.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
            if let Some(c) = self.column {
                write!(f, ":{c}")?;
            }
        }
        write!(f, ": ")?;
        if let Some(k) = &self.key {
            write!(f, "key `{k}`: ")?;
        }
        write!(f, "{}", self.message)
    }
}

impl std::error::Error for ScenarioError {}

impl ScenarioError {
    /// An error at `line` of a file a scenario names (a topology, flow or CDF file).
    pub fn at_line(file: &std::path::Path, line: usize, message: impl Into<String>) -> ScenarioError {
        ScenarioError { file: file.display().to_string(), line: Some(line), column: None, key: None, message: message.into() }
    }

    /// An error at `key` of something that has no lines to point at (a `--set` or `.set()`
    /// override, a key a translated config lacks).
    pub fn at_key(file: impl Into<String>, key: impl Into<String>, message: impl Into<String>) -> ScenarioError {
        ScenarioError { file: file.into(), line: None, column: None, key: Some(key.into()), message: message.into() }
    }

    /// A line-oriented parser's error, in `file`.
    pub fn in_file(file: &std::path::Path, e: crate::input::LineError) -> ScenarioError {
        ScenarioError::at_line(file, e.line, e.message)
    }
}

/// One segment of a key path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// Parses a key path a user wrote (`--set`, a baseline's or a sweep's keys, Python's `set`):
/// keys joined by dots, a key bare (letters, digits, `_`, `-`) or quoted (`per_rate."25Gbps"`),
/// each followed by any number of `[n]` indices; a bare whole number after the first key is an
/// index too (`flows.0.load`, Python's spelling). Anything else is refused with what is wrong
/// and where (a malformed path was read leniently, and `flows[0]junk.load` set `flows[0].load`).
pub fn parse_key_path(path: &str) -> Result<Vec<Seg>, String> {
    let bad = |at: usize, what: &str| Err(format!("`{path}` is not a key path: {what} at character {}", at + 1));
    if path.is_empty() {
        return Err("expected a key path (like `nic.mtu` or `flows[0].load`), got nothing".into());
    }
    let b = path.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        // A key.
        if b.get(i) == Some(&b'"') {
            let Some(len) = path[i + 1..].find('"') else { return bad(i, "a quote that is not closed") };
            out.push(Seg::Key(path[i + 1..i + 1 + len].to_string()));
            i += len + 2;
        } else {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'-') {
                i += 1;
            }
            if i == start {
                return bad(i, if i == b.len() { "a key missing at the end" } else { "a key missing" });
            }
            let word = &path[start..i];
            match word.parse::<usize>() {
                Ok(n) if !out.is_empty() && word.bytes().all(|c| c.is_ascii_digit()) => out.push(Seg::Index(n)),
                _ => out.push(Seg::Key(word.to_string())),
            }
        }
        // Its indices.
        while b.get(i) == Some(&b'[') {
            let Some(len) = path[i + 1..].find(']') else { return bad(i, "a `[` that is not closed") };
            let Ok(n) = path[i + 1..i + 1 + len].parse::<usize>() else { return bad(i + 1, "an index that is not a whole number from 0") };
            out.push(Seg::Index(n));
            i += len + 2;
        }
        match b.get(i) {
            None => return Ok(out),
            Some(b'.') => i += 1,
            Some(_) => return bad(i, "a `.` or `[` expected"),
        }
    }
}

/// Parses `traffic[0].pattern.incast` into segments ([`parse_key_path`]'s reading, or, for a
/// path it refuses, what can be made of it: error paths are named this way too).
pub fn parse_path(path: &str) -> Vec<Seg> {
    if let Ok(segs) = parse_key_path(path) {
        return segs;
    }
    let mut out = Vec::new();
    for part in path.split('.').filter(|p| !p.is_empty()) {
        // `flows.0.load` is `flows[0].load` (Python's and sweep files' spelling).
        if !out.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) {
            if let Ok(n) = part.parse() {
                out.push(Seg::Index(n));
                continue;
            }
        }
        let mut rest = part;
        if let Some(i) = rest.find('[') {
            out.push(Seg::Key(rest[..i].to_string()));
            rest = &rest[i..];
            while let Some(stripped) = rest.strip_prefix('[') {
                let close = stripped.find(']').unwrap_or(stripped.len());
                if let Ok(n) = stripped[..close].parse() {
                    out.push(Seg::Index(n));
                }
                rest = stripped.get(close + 1..).unwrap_or("");
            }
        } else {
            out.push(Seg::Key(rest.to_string()));
        }
    }
    out
}

pub fn format_path(segs: &[Seg]) -> String {
    let mut s = String::new();
    for seg in segs {
        match seg {
            Seg::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Seg::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

/// Byte offset to 1-based (line, column).
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..text.floor_char_boundary(offset)];
    let line = before.matches('\n').count() + 1;
    let col = before.rfind('\n').map_or(before.chars().count(), |i| before[i + 1..].chars().count()) + 1;
    (line, col)
}

/// The span of the deepest part of `segs` present in the TOML `text` (the key for table entries,
/// the element for array items).
pub fn locate(text: &str, segs: &[Seg]) -> Option<std::ops::Range<usize>> {
    use toml::de::{DeTable, DeValue};
    let root = DeTable::parse(text).ok()?;
    let mut best = None;
    let mut table: Option<&DeTable> = Some(root.get_ref());
    let mut array: Option<&toml::de::DeArray> = None;
    for seg in segs {
        let value = match (seg, table, array) {
            (Seg::Key(k), Some(t), _) => {
                let (key, value) = t.iter().find(|(key, _)| key.get_ref().as_ref() == k.as_str())?;
                best = Some(key.span());
                value
            }
            (Seg::Index(i), _, Some(a)) => {
                let v = a.get(*i)?;
                best = Some(v.span());
                v
            }
            _ => break,
        };
        table = None;
        array = None;
        match value.get_ref() {
            DeValue::Table(t) => table = Some(t),
            DeValue::Array(a) => array = Some(a),
            _ => {}
        }
    }
    best
}
