//! Errors of line-oriented input files (topology files, flow files, CDFs): the 1-based line at
//! fault and what was expected there.

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    pub line: usize,
    pub message: String,
}

impl LineError {
    pub fn new(line: usize, message: impl Into<String>) -> LineError {
        LineError { line, message: message.into() }
    }
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for LineError {}

/// The text without a leading UTF-8 byte-order mark (editors on Windows write one).
pub fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}
