//! Units as newtypes: time in integer picoseconds, sizes in bytes, rates in bits per second.
//!
//! Floating point never enters simulated time: conversions between a size and a duration at a
//! rate are done in 128-bit integers and rounded up, so results are identical on every machine.
//! Values are read from scenario strings such as `"100Gbps"`, `"1us"` or `"9MB"`.

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in simulated time or a span of it, in picoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(pub u64);

/// A size in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub u64);

/// A rate in bits per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BitsPerSec(pub u64);

pub const PS_PER_NS: u64 = 1_000;
pub const PS_PER_US: u64 = 1_000_000;
pub const PS_PER_MS: u64 = 1_000_000_000;
pub const PS_PER_S: u64 = 1_000_000_000_000;

impl Time {
    pub const ZERO: Time = Time(0);
    pub const MAX: Time = Time(u64::MAX);
    pub const fn from_ns(ns: u64) -> Time {
        Time(ns * PS_PER_NS)
    }
    pub const fn from_us(us: u64) -> Time {
        Time(us * PS_PER_US)
    }
    pub const fn from_ms(ms: u64) -> Time {
        Time(ms * PS_PER_MS)
    }
    pub const fn ps(self) -> u64 {
        self.0
    }
    /// Whole nanoseconds (truncated), for the integer arithmetic of SCR policies.
    pub const fn as_ns(self) -> u64 {
        self.0 / PS_PER_NS
    }
    /// Seconds, for statistics and display only.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / PS_PER_S as f64
    }
    pub fn saturating_sub(self, other: Time) -> Time {
        Time(self.0.saturating_sub(other.0))
    }
}

impl Add for Time {
    type Output = Time;
    #[inline]
    fn add(self, rhs: Time) -> Time {
        Time(self.0 + rhs.0)
    }
}
impl AddAssign for Time {
    #[inline]
    fn add_assign(&mut self, rhs: Time) {
        self.0 += rhs.0;
    }
}
impl Sub for Time {
    type Output = Time;
    #[inline]
    fn sub(self, rhs: Time) -> Time {
        Time(self.0 - rhs.0)
    }
}

impl Bytes {
    pub const fn kb(k: u64) -> Bytes {
        Bytes(k * 1000)
    }
}

impl Add for Bytes {
    type Output = Bytes;
    fn add(self, rhs: Bytes) -> Bytes {
        Bytes(self.0 + rhs.0)
    }
}

impl BitsPerSec {
    pub const fn gbps(g: u64) -> BitsPerSec {
        BitsPerSec(g * 1_000_000_000)
    }
    /// Time to serialize `bytes` at this rate, rounded up to a whole picosecond.
    #[inline]
    pub fn tx_time(self, bytes: u64) -> Time {
        debug_assert!(self.0 > 0);
        // Packet-sized values fit 64-bit arithmetic, much cheaper than a 128-bit division.
        if bytes < 1 << 21 {
            return Time((bytes * 8 * PS_PER_S).div_ceil(self.0));
        }
        let num = bytes as u128 * 8 * PS_PER_S as u128;
        Time(num.div_ceil(self.0 as u128) as u64)
    }
    /// Bytes that this rate carries in `t`, rounded down.
    #[inline]
    pub fn bytes_in(self, t: Time) -> u64 {
        // The product of a link's rate and a few microseconds fits 64 bits, whose division is
        // several times cheaper than a 128-bit one (a NIC asks this for every packet it takes in).
        match self.0.checked_mul(t.0) {
            Some(bits_ps) => bits_ps / (8 * PS_PER_S),
            None => (self.0 as u128 * t.0 as u128 / (8 * PS_PER_S as u128)) as u64,
        }
    }
    /// This rate scaled by a fraction, for statistics and load targets.
    pub fn scaled(self, f: f64) -> BitsPerSec {
        BitsPerSec((self.0 as f64 * f).round() as u64)
    }
}

/// Splits `"100Gbps"` into `(100.0, "Gbps")`; the number may be fractional or in exponent form.
fn split_number(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || ((c == 'e' || c == 'E') && i > 0 && s[i + 1..].starts_with(|d: char| d.is_ascii_digit() || d == '-'))))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    let n: f64 = s[..end].parse().ok()?;
    Some((n, s[end..].trim()))
}

fn to_integer(v: f64, what: &str, input: &str) -> Result<u64, String> {
    if v.is_nan() || v < 0.0 {
        return Err(format!("{what} must not be negative, got \"{input}\""));
    }
    if v > u64::MAX as f64 {
        return Err(format!("{what} \"{input}\" is too large"));
    }
    // Whole picoseconds, bytes and bits per second: a fraction of one is a mistake, not a value
    // to round silently ("1.5B" ran as 2 B). (Decimal fractions such as 0.1Gbps are whole up to
    // floating-point error.)
    if (v - v.round()).abs() > 1e-6_f64.max(v * 1e-12) {
        return Err(format!("{what} is a whole number of its smallest unit (ps, B, bps), and \"{input}\" is {v} of them"));
    }
    Ok(v.round() as u64)
}

/// Parses `"<number><unit>"` with `units` mapping unit names to scale factors; `what` and
/// `example` word the error.
fn parse_scaled(s: &str, what: &str, example: &str, units: &[(&str, f64)]) -> Result<u64, String> {
    let names = || units.iter().map(|(n, _)| if n.is_empty() { "none" } else { n }).collect::<Vec<_>>().join(", ");
    let (n, unit) = split_number(s).ok_or_else(|| format!("expected {what} such as {example}, got \"{s}\""))?;
    let &(_, scale) = units.iter().find(|(name, _)| *name == unit).ok_or_else(|| format!("expected {what} with a unit of {}, got \"{s}\"", names()))?;
    to_integer(n * scale, what, s)
}

impl std::str::FromStr for Time {
    type Err = String;
    fn from_str(s: &str) -> Result<Time, String> {
        const UNITS: &[(&str, f64)] = &[("ps", 1.0), ("ns", 1e3), ("us", 1e6), ("µs", 1e6), ("ms", 1e9), ("s", 1e12)];
        parse_scaled(s, "a duration", "\"1us\" or \"250ns\"", UNITS).map(Time)
    }
}

impl std::str::FromStr for Bytes {
    type Err = String;
    fn from_str(s: &str) -> Result<Bytes, String> {
        const UNITS: &[(&str, f64)] = &[("B", 1.0), ("", 1.0), ("KB", 1e3), ("kB", 1e3), ("MB", 1e6), ("GB", 1e9), ("KiB", 1024.0), ("MiB", 1048576.0), ("GiB", 1073741824.0)];
        parse_scaled(s, "a size", "\"9MB\" or \"1000B\"", UNITS).map(Bytes)
    }
}

impl std::str::FromStr for BitsPerSec {
    type Err = String;
    fn from_str(s: &str) -> Result<BitsPerSec, String> {
        const UNITS: &[(&str, f64)] = &[("bps", 1.0), ("Kbps", 1e3), ("kbps", 1e3), ("Mbps", 1e6), ("Gbps", 1e9), ("Tbps", 1e12)];
        parse_scaled(s, "a rate", "\"100Gbps\"", UNITS).map(BitsPerSec)
    }
}

/// Prints `v` exactly in the largest unit not above it: `1500000` ps as `1.5us`, `80000` as `80ns`.
fn fmt_scaled(f: &mut fmt::Formatter<'_>, v: u64, units: &[(u64, &str)]) -> fmt::Result {
    let &(scale, name) = units.iter().find(|(s, _)| v >= *s).unwrap_or(units.last().expect("units"));
    let (whole, frac) = (v / scale, v % scale);
    if frac == 0 {
        return write!(f, "{whole}{name}");
    }
    let digits = scale.ilog10() as usize;
    let frac = format!("{frac:0digits$}");
    write!(f, "{whole}.{}{name}", frac.trim_end_matches('0'))
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            return write!(f, "0ns");
        }
        fmt_scaled(f, self.0, &[(PS_PER_S, "s"), (PS_PER_MS, "ms"), (PS_PER_US, "us"), (PS_PER_NS, "ns"), (1, "ps")])
    }
}
impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            return write!(f, "0B");
        }
        fmt_scaled(f, self.0, &[(1_000_000_000, "GB"), (1_000_000, "MB"), (1_000, "KB"), (1, "B")])
    }
}
impl fmt::Display for BitsPerSec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            return write!(f, "0bps");
        }
        fmt_scaled(f, self.0, &[(1_000_000_000_000, "Tbps"), (1_000_000_000, "Gbps"), (1_000_000, "Mbps"), (1_000, "Kbps"), (1, "bps")])
    }
}

macro_rules! string_serde {
    ($t:ty, $expect:literal) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> de::Visitor<'de> for V {
                    type Value = $t;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($expect)
                    }
                    fn visit_str<E: de::Error>(self, s: &str) -> Result<$t, E> {
                        s.parse().map_err(E::custom)
                    }
                }
                d.deserialize_str(V)
            }
        }
    };
}
string_serde!(Time, "a duration string such as \"1us\"");
string_serde!(Bytes, "a size string such as \"9MB\"");
string_serde!(BitsPerSec, "a rate string such as \"100Gbps\"");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!("100Gbps".parse::<BitsPerSec>().unwrap(), BitsPerSec(100_000_000_000));
        assert_eq!("2.5Gbps".parse::<BitsPerSec>().unwrap(), BitsPerSec(2_500_000_000));
        assert_eq!("1us".parse::<Time>().unwrap(), Time(1_000_000));
        assert_eq!("1000ns".parse::<Time>().unwrap(), Time(1_000_000));
        assert_eq!("1e-3s".parse::<Time>().unwrap(), Time(PS_PER_MS));
        assert_eq!("9MB".parse::<Bytes>().unwrap(), Bytes(9_000_000));
        assert_eq!("64KiB".parse::<Bytes>().unwrap(), Bytes(65536));
        assert!("-1us".parse::<Time>().unwrap_err().contains("negative"));
        // Out of range is "too large", whether finite or not.
        assert!("1e400Gbps".parse::<BitsPerSec>().unwrap_err().contains("too large"));
        assert!("1e30s".parse::<Time>().unwrap_err().contains("too large"));
        assert!("100".parse::<BitsPerSec>().is_err());
        assert!("fast".parse::<BitsPerSec>().is_err());
        // A fraction of the smallest unit is refused, not rounded ("1.5B" ran as 2 B); decimal
        // fractions that are whole in it pass, floating-point error and all.
        for bad in ["1.5B", "0.5bps", "2.0004ns"] {
            let e = bad.parse::<Bytes>().map(|_| ()).or_else(|_| bad.parse::<BitsPerSec>().map(|_| ())).or_else(|_| bad.parse::<Time>().map(|_| ()));
            assert!(e.is_err(), "{bad}");
        }
        assert!("1.5B".parse::<Bytes>().unwrap_err().contains("whole number"));
        assert_eq!("0.1Gbps".parse::<BitsPerSec>().unwrap(), BitsPerSec(100_000_000));
        assert_eq!("0.3us".parse::<Time>().unwrap(), Time(300_000));
        assert_eq!("1.1KB".parse::<Bytes>().unwrap(), Bytes(1100));
        assert_eq!("2.003ns".parse::<Time>().unwrap(), Time(2003));
    }

    #[test]
    fn display_round_trips() {
        assert_eq!(Time(16_770_357_671).to_string(), "16.770357671ms");
        assert_eq!(Time::from_ns(1500).to_string(), "1.5us");
        assert_eq!(Time::from_ns(80).to_string(), "80ns");
        assert_eq!(Bytes(1_500).to_string(), "1.5KB");
        for s in ["100Gbps", "25Gbps", "1us", "1500ns", "9MB", "1000B", "0ns", "2.5Gbps", "16.770357671ms", "3ps"] {
            let t: Result<Time, _> = s.parse();
            let b: Result<Bytes, _> = s.parse();
            let r: Result<BitsPerSec, _> = s.parse();
            if let Ok(t) = t {
                assert_eq!(t.to_string().parse::<Time>().unwrap(), t);
            }
            if let Ok(b) = b {
                assert_eq!(b.to_string().parse::<Bytes>().unwrap(), b);
            }
            if let Ok(r) = r {
                assert_eq!(r.to_string().parse::<BitsPerSec>().unwrap(), r);
            }
        }
    }

    #[test]
    fn serialization_time_is_exact_at_common_rates() {
        // 1000 bytes at 100 Gbps is 80 ns; at 25 Gbps 320 ns; at 40 Gbps 200 ns.
        assert_eq!(BitsPerSec::gbps(100).tx_time(1000), Time::from_ns(80));
        assert_eq!(BitsPerSec::gbps(25).tx_time(1000), Time::from_ns(320));
        assert_eq!(BitsPerSec::gbps(40).tx_time(1000), Time::from_ns(200));
        // 1 byte at 3 bps is 8/3 s, rounded up; both arithmetic paths agree.
        assert_eq!(BitsPerSec(3).tx_time(1), Time(2_666_666_666_667));
        let r = BitsPerSec(3_333_333_333);
        assert_eq!(r.tx_time((1 << 21) - 1).0 + r.tx_time(1).0 - 1, r.tx_time(1 << 21).0);
        assert_eq!(BitsPerSec::gbps(100).bytes_in(Time::from_us(1)), 12_500);
    }
}
