//! Paper figures beside ours: a scenario lists `[[paper]]` values (a metric path into
//! `summary.json`, the paper's number, a relative tolerance and the source), and every run
//! reports each with our value and whether it is within tolerance.
//!
//! A metric path is `/`-separated: object keys, and for lists the `name` of the element, e.g.
//! `perftest/4KB alone/gbps` or `rdma/slowdown_p99`.

use serde::{Deserialize, Serialize};

/// One published value a scenario reproduces.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaperValue {
    pub metric: String,
    pub value: f64,
    /// Relative tolerance: |ours − paper| ≤ tolerance × |paper|.
    #[serde(default = "quarter")]
    pub tolerance: f64,
    /// Where the value is printed, e.g. "SCR Table 2".
    #[serde(default)]
    pub source: String,
    #[serde(default)]
    pub unit: String,
}

fn quarter() -> f64 {
    0.25
}

/// A paper value with ours beside it.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub metric: String,
    pub source: String,
    pub unit: String,
    pub paper: f64,
    pub ours: Option<f64>,
    pub tolerance: f64,
    /// (ours − paper) / paper.
    pub relative_error: Option<f64>,
    pub within: bool,
}

/// Looks a metric path up in a JSON value.
pub fn lookup(v: &serde_json::Value, path: &str) -> Option<f64> {
    let mut cur = v;
    for seg in path.split('/') {
        cur = match cur {
            serde_json::Value::Object(m) => m.get(seg)?,
            serde_json::Value::Array(a) => match seg.parse::<usize>() {
                Ok(i) => a.get(i)?,
                Err(_) => a.iter().find(|e| e.get("name").and_then(|n| n.as_str()) == Some(seg))?,
            },
            _ => return None,
        };
    }
    cur.as_f64()
}

pub fn compare(summary: &serde_json::Value, values: &[PaperValue]) -> Vec<Comparison> {
    values
        .iter()
        .map(|p| {
            let ours = lookup(summary, &p.metric);
            let rel = ours.map(|o| if p.value == 0.0 { o } else { (o - p.value) / p.value.abs() });
            Comparison {
                metric: p.metric.clone(),
                source: p.source.clone(),
                unit: p.unit.clone(),
                paper: p.value,
                ours,
                tolerance: p.tolerance,
                relative_error: rel,
                within: rel.is_some_and(|r| r.abs() <= p.tolerance),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_tolerance() {
        let s: serde_json::Value = serde_json::json!({"perftest": [{"name": "a", "gbps": 30.0}, {"name": "b", "gbps": 60.0}], "rdma": {"x": 1.0}});
        assert_eq!(lookup(&s, "perftest/b/gbps"), Some(60.0));
        assert_eq!(lookup(&s, "perftest/0/gbps"), Some(30.0));
        assert_eq!(lookup(&s, "rdma/x"), Some(1.0));
        assert_eq!(lookup(&s, "rdma/y"), None);
        let v = |value, metric: &str| PaperValue { metric: metric.into(), value, tolerance: 0.25, source: String::new(), unit: String::new() };
        let c = compare(&s, &[v(40.0, "perftest/a/gbps"), v(45.0, "perftest/b/gbps"), v(1.0, "nope")]);
        assert!(c[0].within && !c[1].within && !c[2].within);
        assert!((c[0].relative_error.unwrap() + 0.25).abs() < 1e-12);
    }
}
