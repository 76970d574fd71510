//! Flow-size distributions as published CDF files (`size cumulative` per line), sampled the way
//! the HPCC and ConWeave traffic generators do: a uniform draw on the cumulative axis, linearly
//! interpolated between points. The cumulative column is a percentage in some files and a
//! fraction in others; which one is detected from its last value (100 or 1).

use crate::input::LineError;

#[derive(Clone, Debug, PartialEq)]
pub struct FlowSizeCdf {
    /// (size in bytes, cumulative probability in [0, 1]), non-decreasing in both.
    points: Vec<(f64, f64)>,
}

impl FlowSizeCdf {
    pub fn parse(text: &str) -> Result<FlowSizeCdf, LineError> {
        let text = crate::input::strip_bom(text);
        let err = |line: usize, message: String| LineError { line, message };
        let mut raw: Vec<(usize, f64, f64)> = Vec::new();
        for (i, l) in text.lines().enumerate() {
            let l = l.trim();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() != 2 {
                return Err(err(i + 1, format!("expected `size cumulative`, found {} fields", f.len())));
            }
            let num = |s: &str, what: &str| -> Result<f64, LineError> {
                match s.parse::<f64>() {
                    Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
                    _ => Err(err(i + 1, format!("{what}: expected a non-negative number, got \"{s}\""))),
                }
            };
            let (size, cum) = (num(f[0], "size")?, num(f[1], "cumulative")?);
            if let Some(&(_, ps, pc)) = raw.last() {
                if size < ps || cum < pc {
                    return Err(err(i + 1, "sizes and cumulative values must not decrease".into()));
                }
            }
            raw.push((i + 1, size, cum));
        }
        let Some(&(last_line, _, top)) = raw.last() else { return Err(err(1, "no points".into())) };
        if raw.len() < 2 {
            return Err(err(last_line, "a CDF needs at least two points".into()));
        }
        let scale = if (top - 100.0).abs() < 1e-6 {
            100.0
        } else if (top - 1.0).abs() < 1e-9 {
            1.0
        } else {
            return Err(err(last_line, format!("the last cumulative value must be 100 (percent) or 1 (fraction), got {top}")));
        };
        Ok(FlowSizeCdf { points: raw.into_iter().map(|(_, s, c)| (s, c / scale)).collect() })
    }

    /// The size at cumulative probability `u` in [0, 1).
    pub fn quantile(&self, u: f64) -> f64 {
        let p = &self.points;
        // The first point whose cumulative value reaches u.
        let i = p.partition_point(|&(_, c)| c < u).min(p.len() - 1);
        if i == 0 {
            return p[0].0;
        }
        let ((x0, c0), (x1, c1)) = (p[i - 1], p[i]);
        if c1 <= c0 {
            return x1;
        }
        x0 + (x1 - x0) * (u - c0) / (c1 - c0)
    }

    /// A flow size in bytes (at least 1) for a uniform draw `u` in [0, 1).
    /// The largest flow size it can draw, in bytes.
    pub fn max_size(&self) -> f64 {
        self.points.last().map_or(0.0, |p| p.0)
    }

    pub fn sample(&self, u: f64) -> u64 {
        (self.quantile(u).round() as u64).max(1)
    }

    /// The mean of the piecewise-linear distribution.
    pub fn mean(&self) -> f64 {
        let p = &self.points;
        let first = p[0].0 * p[0].1;
        first + p.windows(2).map(|w| (w[0].0 + w[1].0) / 2.0 * (w[1].1 - w[0].1)).sum::<f64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::rng;
    use proptest::prelude::*;
    use rand::Rng;

    fn shipped(name: &str) -> FlowSizeCdf {
        let path = format!("{}/../../data/cdf/{name}", env!("CARGO_MANIFEST_DIR"));
        FlowSizeCdf::parse(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn every_shipped_distribution_parses_in_either_convention() {
        for name in ["AliStorage2019.txt", "FbHdp2015.txt", "FbHdp_distribution.txt", "GoogleRPC2008.txt", "Solar2022.txt", "WebSearch_distribution.txt", "cachefollower_fraction.txt", "mining_fraction.txt", "search_fraction.txt", "webserver_fraction.txt"] {
            let c = shipped(name);
            assert!(c.mean() > 0.0, "{name}");
            assert_eq!(c.points.last().unwrap().1, 1.0, "{name}");
        }
    }

    #[test]
    fn interpolates_and_averages_as_hand_computed() {
        // Uniform on [0, 1000] then a step to 5000: 50% below 1000, 50% at 5000.
        let c = FlowSizeCdf::parse("0 0\n1000 50\n5000 50\n5000 100\n").unwrap();
        assert_eq!(c.quantile(0.25), 500.0);
        assert_eq!(c.quantile(0.75), 5000.0);
        assert_eq!(c.mean(), 0.5 * 500.0 + 0.5 * 5000.0);
        // AliStorage2019: mean from its points.
        let a = shipped("AliStorage2019.txt");
        let want = 2000.0 * 0.2293 + 6000.0 * 0.4628 + 12000.0 * 0.1140 + 24000.0 * 0.0986 + 48000.0 * 0.0306 + 96000.0 * 0.0324 + 192000.0 * 0.0076 + 1128000.0 * 0.0247;
        assert!((a.mean() - want).abs() < 1e-6 * want, "{} vs {want}", a.mean());
    }

    #[test]
    fn sample_mean_converges_to_the_distribution_mean() {
        let c = shipped("WebSearch_distribution.txt");
        let mut r = rng::stream(5, "cdf-test", 0);
        let n = 400_000;
        let mean = (0..n).map(|_| c.sample(r.random()) as f64).sum::<f64>() / n as f64;
        assert!((mean / c.mean() - 1.0).abs() < 0.02, "{mean} vs {}", c.mean());
    }

    #[test]
    fn bad_files_name_the_line() {
        assert_eq!(FlowSizeCdf::parse("0 0\n100 50\n50 60\n200 100\n").unwrap_err().line, 3);
        assert_eq!(FlowSizeCdf::parse("0 0\n100 50\n").unwrap_err().line, 2);
        assert_eq!(FlowSizeCdf::parse("0 0\nx 100\n").unwrap_err().line, 2);
        assert!(FlowSizeCdf::parse("").is_err());
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(s in "\\PC{0,120}") {
            if let Ok(c) = FlowSizeCdf::parse(&s) {
                let _ = (c.sample(0.0), c.sample(0.999_999), c.mean());
            }
        }
    }
}
