//! Paper figures beside ours: a scenario lists `[[paper]]` values (a metric path into
//! `summary.json`, the paper's number, a relative tolerance and the source), and every run
//! reports each with our value and whether it is within tolerance.
//!
//! A metric path is `/`-separated: object keys, and for lists the `name` of the element, e.g.
//! `perftest/4KB alone/gbps` or `rdma/slowdown_p99`. A value may be a ratio of two metrics
//! (`per`), and a claim may be a bound (`relation = "below"` or `"above"`) rather than a value.
//!
//! `[[figure]]` entries redraw a paper figure on its own axes: each series gives x values and a
//! metric per point (optionally normalized by `per`), and the paper's points go beside them;
//! the run writes both into `summary.json` (`figures`) and `rnicsim reproduce` plots them.

use serde::{Deserialize, Serialize};

/// One published value a scenario reproduces.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaperValue {
    pub metric: String,
    /// Divide the metric by this one (a ratio claim, e.g. throughput relative to the peak).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per: Option<String>,
    pub value: f64,
    /// `near` (within the tolerance), `below` or `above` the value (a bound the paper states).
    #[serde(default)]
    pub relation: Relation,
    /// Relative tolerance: |ours − paper| ≤ tolerance × |paper|.
    #[serde(default = "quarter")]
    pub tolerance: f64,
    /// Where the value is printed, e.g. "SCR Table 2".
    #[serde(default)]
    pub source: String,
    #[serde(default)]
    pub unit: String,
}

/// How our value must relate to the paper's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    #[default]
    Near,
    Below,
    Above,
}

fn quarter() -> f64 {
    0.25
}

/// A paper value with ours beside it.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub metric: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per: Option<String>,
    pub relation: Relation,
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

/// A metric, divided by `per` if given (`None` if either is missing or `per` is zero).
pub fn lookup_ratio(v: &serde_json::Value, metric: &str, per: Option<&str>) -> Option<f64> {
    let x = lookup(v, metric)?;
    match per {
        None => Some(x),
        Some(p) => lookup(v, p).filter(|&d| d != 0.0).map(|d| x / d),
    }
}

pub fn compare(summary: &serde_json::Value, values: &[PaperValue]) -> Vec<Comparison> {
    values
        .iter()
        .map(|p| {
            let ours = lookup_ratio(summary, &p.metric, p.per.as_deref());
            let rel = ours.map(|o| if p.value == 0.0 { o } else { (o - p.value) / p.value.abs() });
            let within = match p.relation {
                Relation::Near => rel.is_some_and(|r| r.abs() <= p.tolerance),
                Relation::Below => ours.is_some_and(|o| o <= p.value),
                Relation::Above => ours.is_some_and(|o| o >= p.value),
            };
            Comparison {
                metric: p.metric.clone(),
                per: p.per.clone(),
                relation: p.relation,
                source: p.source.clone(),
                unit: p.unit.clone(),
                paper: p.value,
                ours,
                tolerance: p.tolerance,
                relative_error: rel,
                within,
            }
        })
        .collect()
}

/// `[[figure]]`: a paper figure redrawn on its own axes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FigureSpec {
    /// E.g. "StaR Fig. 1".
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    #[serde(default)]
    pub x_log: bool,
    /// Our curves: metrics read from this run's summary.
    #[serde(default)]
    pub series: Vec<SeriesSpec>,
    /// The paper's points (or stated bounds), drawn as markers.
    #[serde(default)]
    pub paper: Vec<PaperPoints>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeriesSpec {
    pub label: String,
    pub x: Vec<f64>,
    /// One metric path per x value.
    pub metrics: Vec<String>,
    /// Normalize every point by this metric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaperPoints {
    pub label: String,
    pub x: Vec<f64>,
    pub y: Vec<f64>,
}

/// A figure with our values filled in (`summary.json`'s `figures`).
#[derive(Clone, Debug, Serialize)]
pub struct Figure {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_log: bool,
    pub series: Vec<PaperPoints>,
    pub paper: Vec<PaperPoints>,
}

impl FigureSpec {
    /// Problems with the figure, each as (key, message).
    pub fn check(&self) -> Vec<(String, String)> {
        let mut bad = Vec::new();
        for (i, s) in self.series.iter().enumerate() {
            if s.x.len() != s.metrics.len() {
                bad.push((format!("series[{i}].metrics"), format!("expected one metric per x value ({}), got {}", s.x.len(), s.metrics.len())));
            }
        }
        for (i, p) in self.paper.iter().enumerate() {
            if p.x.len() != p.y.len() {
                bad.push((format!("paper[{i}].y"), format!("expected one y per x value ({}), got {}", p.x.len(), p.y.len())));
            }
        }
        bad
    }
}

/// Our points of every figure (a metric missing from the summary is left out of its series).
pub fn figures(summary: &serde_json::Value, specs: &[FigureSpec]) -> Vec<Figure> {
    specs
        .iter()
        .map(|f| Figure {
            title: f.title.clone(),
            x_label: f.x_label.clone(),
            y_label: f.y_label.clone(),
            x_log: f.x_log,
            series: f
                .series
                .iter()
                .map(|s| {
                    let (x, y) = s.x.iter().zip(&s.metrics).filter_map(|(&x, m)| lookup_ratio(summary, m, s.per.as_deref()).map(|y| (x, y))).unzip();
                    PaperPoints { label: s.label.clone(), x, y }
                })
                .collect(),
            paper: f.paper.clone(),
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
        let v = |value, metric: &str| PaperValue { metric: metric.into(), per: None, value, relation: Relation::Near, tolerance: 0.25, source: String::new(), unit: String::new() };
        let c = compare(&s, &[v(40.0, "perftest/a/gbps"), v(45.0, "perftest/b/gbps"), v(1.0, "nope")]);
        assert!(c[0].within && !c[1].within && !c[2].within);
        assert!((c[0].relative_error.unwrap() + 0.25).abs() < 1e-12);
        // Ratios and bounds: a / b = 0.5.
        let r = |relation, value| PaperValue { per: Some("perftest/b/gbps".into()), relation, ..v(value, "perftest/a/gbps") };
        let c = compare(&s, &[r(Relation::Below, 0.7), r(Relation::Below, 0.4), r(Relation::Above, 0.4), r(Relation::Near, 0.55)]);
        assert_eq!(c.iter().map(|c| c.within).collect::<Vec<_>>(), [true, false, true, true]);
        assert_eq!(c[0].ours, Some(0.5));
        let zero = PaperValue { per: Some("rdma/zero".into()), ..v(1.0, "rdma/x") };
        let s2 = serde_json::json!({"rdma": {"x": 1.0, "zero": 0.0}});
        assert_eq!(compare(&s2, &[zero])[0].ours, None, "a ratio over zero is no value");
    }

    #[test]
    fn figures_read_each_point_and_normalize() {
        let s: serde_json::Value = serde_json::json!({"h": [{"name": "a", "m": 2.0}, {"name": "b", "m": 4.0}]});
        let f = FigureSpec {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x_log: false,
            series: vec![SeriesSpec { label: "ours".into(), x: vec![1.0, 2.0, 3.0], metrics: vec!["h/a/m".into(), "h/b/m".into(), "h/c/m".into()], per: Some("h/b/m".into()) }],
            paper: vec![PaperPoints { label: "paper".into(), x: vec![2.0], y: vec![1.0] }],
        };
        let out = figures(&s, std::slice::from_ref(&f));
        assert_eq!((out[0].series[0].x.clone(), out[0].series[0].y.clone()), (vec![1.0, 2.0], vec![0.5, 1.0]));
        assert_eq!(out[0].paper, f.paper);
        assert!(f.check().is_empty());
        let bad = FigureSpec { series: vec![SeriesSpec { metrics: vec![], ..f.series[0].clone() }], ..f };
        assert_eq!(bad.check()[0].0, "series[0].metrics");
    }
}
