//! Paper figures beside ours: a scenario lists `[[paper]]` values (a metric path into
//! `summary.json`, the paper's number, a relative tolerance and the source), and every run
//! reports each with our value and whether it is within tolerance.
//!
//! A metric path is `/`-separated: object keys, and for lists the `name` of the element, e.g.
//! `perftest/4KB alone/gbps` or `rdma/slowdown_p99`. A value may be a ratio of two metrics
//! (`per`), and a claim may be a bound (`relation = "below"` or `"above"`) rather than a value.
//! A claim of the form "up to" names many metrics with one `*` segment (every element of a list,
//! e.g. `rdma/by_size/*/fct_mean_us`) and takes the least or greatest (`over`) of them; a `per`
//! with a `*` divides each by the element of the same name.
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
    /// With a `*` in `metric`: take the least (`min`) or greatest (`max`) of the matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over: Option<Over>,
    /// The value follows from a constant the scenario sets to the paper's (an engine's rate, a
    /// cache's capacity), not from the mechanism under test: a check of units and setup, listed
    /// apart from the claims a run reproduces.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub calibration: bool,
}

/// Which of many matched values a claim takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Over {
    Min,
    Max,
}

impl PaperValue {
    /// Problems with the claim, each as (key, message).
    pub fn check(&self) -> Vec<(String, String)> {
        let stars = |p: &str| p.split('/').filter(|s| *s == "*").count();
        let mut bad = Vec::new();
        match (stars(&self.metric), self.over) {
            (0, Some(_)) => bad.push(("over".into(), "needs a `*` segment in `metric`".into())),
            (1, None) => bad.push(("over".into(), "a `metric` with `*` needs `over = \"min\"` or `\"max\"`".into())),
            (n, _) if n > 1 => bad.push(("metric".into(), "at most one `*` segment".into())),
            _ => {}
        }
        if let Some(per) = &self.per {
            if stars(per) > stars(&self.metric).min(1) {
                bad.push(("per".into(), "a `*` in `per` needs one in `metric`".into()));
            }
        }
        // (A NaN value was written as null, an infinite one made a bound that always held.)
        if !self.value.is_finite() {
            bad.push(("value".into(), format!("expected a finite number, got {}", self.value)));
        }
        if !(self.tolerance.is_finite() && self.tolerance >= 0.0) {
            bad.push(("tolerance".into(), format!("expected a finite relative tolerance of 0 or more, got {}", self.tolerance)));
        }
        bad
    }
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
    /// A check of a calibrated constant, not a reproduced result ([`PaperValue::calibration`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub calibration: bool,
}

/// Looks a metric path up in a JSON value.
pub fn lookup(v: &serde_json::Value, path: &str) -> Option<f64> {
    walk(v, path)?.as_f64()
}

/// The value at a path: an object's key, or a list's element with that `name`, else at that
/// index (so a test named "1" is found by its name, not as the second element).
fn walk<'a>(v: &'a serde_json::Value, path: &str) -> Option<&'a serde_json::Value> {
    path.split('/').try_fold(v, |cur, seg| match cur {
        serde_json::Value::Object(m) => m.get(seg),
        serde_json::Value::Array(a) => a
            .iter()
            .find(|e| e.get("name").and_then(|n| n.as_str()) == Some(seg))
            .or_else(|| seg.parse::<usize>().ok().and_then(|i| a.get(i))),
        _ => None,
    })
}

/// A metric, divided by `per` if given (`None` if either is missing or `per` is zero).
pub fn lookup_ratio(v: &serde_json::Value, metric: &str, per: Option<&str>) -> Option<f64> {
    let x = lookup(v, metric)?;
    match per {
        None => Some(x),
        Some(p) => lookup(v, p).filter(|&d| d != 0.0).map(|d| x / d),
    }
}

/// Every match of a path with one `*` segment: (the element's key in a path, its value). The
/// key is the element's name where that names it alone, else its index: two unnamed perftests
/// were both keyed "" and a `per` with `*` divided each by the first's.
pub fn lookup_all(v: &serde_json::Value, path: &str) -> Vec<(String, f64)> {
    let Some((head, tail)) = path.split_once("/*") else { return Vec::new() };
    let tail = tail.strip_prefix('/').unwrap_or(tail);
    let list = if head.is_empty() { Some(v) } else { walk(v, head) };
    let Some(serde_json::Value::Array(items)) = list else { return Vec::new() };
    let name = |e: &serde_json::Value| e.get("name").and_then(|n| n.as_str()).filter(|n| !n.is_empty()).map(str::to_string);
    let names: Vec<Option<String>> = items.iter().map(name).collect();
    items
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            let key = names[i].clone().filter(|n| names.iter().filter(|m| m.as_ref() == Some(n)).count() == 1 && n.parse::<usize>().is_err()).unwrap_or_else(|| i.to_string());
            let x = if tail.is_empty() { e.as_f64() } else { lookup(e, tail) }?;
            Some((key, x))
        })
        .collect()
}

/// A claim's value: one metric (over `per`), or the least or greatest of a `*` path's matches.
fn claim_value(summary: &serde_json::Value, p: &PaperValue) -> Option<f64> {
    let Some(over) = p.over else { return lookup_ratio(summary, &p.metric, p.per.as_deref()) };
    let values = lookup_all(summary, &p.metric).into_iter().filter_map(|(name, x)| match &p.per {
        None => Some(x),
        Some(per) if per.contains('*') => lookup(summary, &per.replacen('*', &name, 1)).filter(|&d| d != 0.0).map(|d| x / d),
        Some(per) => lookup(summary, per).filter(|&d| d != 0.0).map(|d| x / d),
    });
    match over {
        Over::Min => values.reduce(f64::min),
        Over::Max => values.reduce(f64::max),
    }
}

pub fn compare(summary: &serde_json::Value, values: &[PaperValue]) -> Vec<Comparison> {
    values
        .iter()
        .map(|p| {
            let ours = claim_value(summary, p);
            // Against a paper value of 0 a relative error means nothing: the tolerance is then
            // absolute (|ours| ≤ tolerance), and the error is ours. A bound met to the last
            // bits of a float holds (1.1 against 1 ± 10% read as +10.000000000000009%).
            let rel = ours.map(|o| if p.value == 0.0 { o } else { (o - p.value) / p.value.abs() });
            let within = match p.relation {
                Relation::Near => rel.is_some_and(|r| r.abs() <= p.tolerance * (1.0 + 1e-9) + 1e-15),
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
                calibration: p.calibration,
            }
        })
        .collect()
}

/// Metric paths of `[[paper]]` claims and `[[figure]]` series that the summary of this scenario
/// cannot hold, each as (key, message), checked against `summary` (the summary of the built,
/// not yet run, world: its sections and names are there, its numbers not yet), so that a typo
/// is found before the run rather than as a missing value after it. `baselines/NAME/...` must
/// name a `[[baseline]]`, and the rest is checked as a path of this summary: a list entry must
/// be there by name or index, a table's key must be there unless no key of the table is within
/// an edit or two of it (one for names of up to five letters; sections a run adds later are not
/// there yet, a misspelling is near one that is), and nothing goes under a number. A path through an empty list or table, or a null, is
/// given the benefit of the doubt.
pub fn unresolved(summary: &serde_json::Value, claims: &[PaperValue], figures: &[FigureSpec], baselines: &[String]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut check = |key: String, path: &str| {
        if let Some(why) = path_problem(summary, path, baselines) {
            out.push((key, format!("{path:?} will have no value: {why}")));
        }
    };
    for (i, c) in claims.iter().enumerate() {
        check(format!("paper[{i}].metric"), &c.metric);
        if let Some(per) = &c.per {
            // A `per` with a `*` takes each match's name in its place.
            check(format!("paper[{i}].per"), per);
        }
    }
    for (i, f) in figures.iter().enumerate() {
        for (j, s) in f.series.iter().enumerate() {
            for m in s.metrics.iter().chain(&s.per_each).chain(&s.per) {
                check(format!("figure[{i}].series[{j}]"), m);
            }
        }
    }
    out
}

/// Why `path` cannot be a value of `summary`, if it cannot.
fn path_problem(summary: &serde_json::Value, path: &str, baselines: &[String]) -> Option<String> {
    let mut segs: Vec<&str> = path.split('/').collect();
    // Under a baseline the rest is checked against this scenario's summary, which the
    // baseline's changes may rename or remove entries of: only keys are checked there.
    let mut under_baseline = false;
    if segs.first() == Some(&"baselines") {
        let name = segs.get(1).copied().unwrap_or("");
        // A baseline by name, by index (as any list's entry), or every one (`*`).
        let found = name == "*" || baselines.iter().any(|b| b == name) || name.parse::<usize>().is_ok_and(|i| i < baselines.len());
        if !found {
            return Some(format!("\"{name}\" is no [[baseline]] of this scenario (it has {})", listed(baselines.iter().map(String::as_str))));
        }
        segs.drain(..2);
        under_baseline = true;
    }
    let mut cur = summary;
    let mut walked = String::new();
    for seg in segs {
        let here = if walked.is_empty() { "the summary".to_string() } else { format!("\"{walked}\"") };
        let next = match cur {
            serde_json::Value::Object(m) if m.is_empty() => return None,
            serde_json::Value::Object(m) => match m.get(seg) {
                Some(v) => v,
                // Some sections and figures appear only once a run has something to say (SCR's
                // granularity, say): a missing key counts only as a likely misspelling of one
                // that is there.
                None => {
                    let slack = if seg.len() <= 5 { 1 } else { 2 };
                    let near = m.keys().find(|k| seg.len() >= 4 && edit_distance(k, seg) <= slack)?;
                    return Some(format!("{here} has no \"{seg}\"; did you mean \"{near}\"?"));
                }
            },
            serde_json::Value::Array(a) if a.is_empty() => return None,
            serde_json::Value::Array(a) => {
                let named = a.iter().find(|e| e.get("name").and_then(|n| n.as_str()) == Some(seg));
                match named.or_else(|| seg.parse::<usize>().ok().and_then(|i| a.get(i))).or(if seg == "*" { a.first() } else { None }) {
                    Some(v) => v,
                    None if under_baseline => return None,
                    None => {
                        let names = a.iter().filter_map(|e| e.get("name").and_then(|n| n.as_str()));
                        return Some(format!("{here} has no entry \"{seg}\" (it has {} entries: {})", a.len(), listed(names)));
                    }
                }
            }
            serde_json::Value::Null => return None,
            _ => return Some(format!("{here} is a value, with nothing under it")),
        };
        cur = next;
        walked = if walked.is_empty() { seg.to_string() } else { format!("{walked}/{seg}") };
    }
    None
}

/// Levenshtein distance between two short names (insertions, deletions, substitutions, and a
/// swap of two neighbours counted as one).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

/// Up to a dozen names, comma-separated.
fn listed<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.collect();
    match names.len() {
        0 => "none".into(),
        n if n > 12 => format!("{}, … ({n} in all)", names[..12].join(", ")),
        _ => names.join(", "),
    }
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
    #[serde(default)]
    pub y_log: bool,
    /// Our curves: metrics read from this run's summary.
    #[serde(default)]
    pub series: Vec<SeriesSpec>,
    /// The paper's points (or stated bounds), drawn as markers.
    #[serde(default)]
    pub paper: Vec<PaperPoints>,
    /// Our curves from a table of the run instead of summary metrics: one line per queue pair
    /// or entity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<Trace>,
}

/// The tables a figure can trace over time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trace {
    /// `scr_rates.parquet`: each queue pair's dequeue rate (Gbps) over time (µs), as steps.
    ScrRates,
    /// `yama_timeline.parquet`: each entity's throughput (Gbps) per sample over time (µs).
    YamaTimeline,
    /// `scr_rtt.parquet`: each path's (queue pair and source port) RTT probe answers (µs) over
    /// time (µs).
    ScrRtt,
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
    /// Or each point by its own metric (one per x value).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_each: Vec<String>,
    /// Every point times this, after normalizing (a unit change: Gbps over 100 flows to Mbps
    /// per flow is 10).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub scale: f64,
}

fn one() -> f64 {
    1.0
}

fn is_one(v: &f64) -> bool {
    *v == 1.0
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
    pub y_log: bool,
    pub series: Vec<PaperPoints>,
    pub paper: Vec<PaperPoints>,
    /// A table the plot draws our curves from (the reproduction gallery reads it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<Trace>,
}

impl FigureSpec {
    /// Problems with the figure, each as (key, message).
    pub fn check(&self) -> Vec<(String, String)> {
        let mut bad = Vec::new();
        for (i, s) in self.series.iter().enumerate() {
            if s.x.len() != s.metrics.len() {
                bad.push((format!("series[{i}].metrics"), format!("expected one metric per x value ({}), got {}", s.x.len(), s.metrics.len())));
            }
            if !(s.scale.is_finite() && s.scale > 0.0) {
                bad.push((format!("series[{i}].scale"), format!("expected a positive factor, got {}", s.scale)));
            }
            if !s.per_each.is_empty() && (s.per_each.len() != s.x.len() || s.per.is_some()) {
                bad.push((format!("series[{i}].per_each"), format!("expected one metric per x value ({}) and no `per`, got {}", s.x.len(), s.per_each.len())));
            }
        }
        for (i, p) in self.paper.iter().enumerate() {
            if p.x.len() != p.y.len() {
                bad.push((format!("paper[{i}].y"), format!("expected one y per x value ({}), got {}", p.x.len(), p.y.len())));
            }
        }
        // A point is one metric: a `*` (a claim's "every element") found nothing, and its
        // point was left out without a word.
        for (i, s) in self.series.iter().enumerate() {
            let starred = s.metrics.iter().chain(&s.per_each).chain(&s.per).any(|m| m.split('/').any(|seg| seg == "*"));
            if starred {
                bad.push((format!("series[{i}].metrics"), "a figure's point reads one metric; `*` (every element) is for claims with `over`: list the elements".into()));
            }
        }
        // Points a logarithmic axis cannot show, and numbers that are none.
        let axis = |log: bool, name: &str, key: String, values: &[f64], bad: &mut Vec<(String, String)>| {
            if let Some(v) = values.iter().find(|v| !v.is_finite() || (log && **v <= 0.0)) {
                let why = if v.is_finite() { format!("{name}_log is set, and a logarithmic axis has no place for {v}") } else { format!("expected finite numbers, got {v}") };
                bad.push((key, why));
            }
        };
        for (i, s) in self.series.iter().enumerate() {
            axis(self.x_log, "x", format!("series[{i}].x"), &s.x, &mut bad);
        }
        for (i, p) in self.paper.iter().enumerate() {
            axis(self.x_log, "x", format!("paper[{i}].x"), &p.x, &mut bad);
            axis(self.y_log, "y", format!("paper[{i}].y"), &p.y, &mut bad);
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
            y_log: f.y_log,
            series: f
                .series
                .iter()
                .map(|s| {
                    let per = |i: usize| s.per_each.get(i).or(s.per.as_ref()).map(String::as_str);
                    let (x, y) = s.x.iter().zip(&s.metrics).enumerate().filter_map(|(i, (&x, m))| lookup_ratio(summary, m, per(i)).map(|y| (x, y * s.scale))).unzip();
                    PaperPoints { label: s.label.clone(), x, y }
                })
                .collect(),
            paper: f.paper.clone(),
            trace: f.trace,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_star_claim_takes_the_least_or_greatest_ratio_of_like_named_elements() {
        let s = serde_json::json!({
            "rdma": {"by_size": [{"name": "4KB", "fct": 2.0}, {"name": "1MB", "fct": 30.0}]},
            "baselines": [{"name": "ecmp", "rdma": {"by_size": [{"name": "1MB", "fct": 40.0}, {"name": "4KB", "fct": 10.0}]}}]
        });
        assert_eq!(lookup_all(&s, "rdma/by_size/*/fct"), vec![("4KB".to_string(), 2.0), ("1MB".to_string(), 30.0)]);
        // A star under a baseline: the list of runs is found by name on the way down.
        assert_eq!(lookup_all(&s, "baselines/ecmp/rdma/by_size/*/fct"), vec![("1MB".to_string(), 40.0), ("4KB".to_string(), 10.0)]);
        let claim = |over| PaperValue { metric: "rdma/by_size/*/fct".into(), per: Some("baselines/ecmp/rdma/by_size/*/fct".into()), value: 0.2, relation: Relation::Near, tolerance: 0.1, source: String::new(), unit: String::new(), over: Some(over), calibration: false };
        // 4KB: 2/10 = 0.2 (paired by name, not position); 1MB: 30/40 = 0.75.
        let c = compare(&s, &[claim(Over::Min), claim(Over::Max)]);
        assert_eq!((c[0].ours, c[1].ours), (Some(0.2), Some(0.75)));
        assert!(c[0].within && !c[1].within);
        // A star without `over`, or `over` without a star, is a mistake in the scenario.
        assert_eq!(PaperValue { over: None, ..claim(Over::Min) }.check().len(), 1);
        assert_eq!(PaperValue { metric: "rdma/x".into(), per: None, ..claim(Over::Min) }.check().len(), 1);
        assert!(claim(Over::Max).check().is_empty());
    }

    #[test]
    fn unnamed_elements_pair_by_position_and_a_claim_on_its_bound_holds() {
        // Two unnamed perftests, a baseline halving the second's message: 64000/64000 and
        // 4000/2000. Both were keyed "" and divided by the first's (ours 1, not 2).
        let s = serde_json::json!({
            "perftest": [{"name": "", "message": 64000.0}, {"name": "", "message": 4000.0}],
            "baselines": [{"name": "b", "perftest": [{"name": "", "message": 64000.0}, {"name": "", "message": 2000.0}]}]
        });
        assert_eq!(lookup_all(&s, "perftest/*/message"), vec![("0".to_string(), 64000.0), ("1".to_string(), 4000.0)]);
        let claim = PaperValue { metric: "perftest/*/message".into(), per: Some("baselines/b/perftest/*/message".into()), value: 2.0, relation: Relation::Near, tolerance: 0.0, source: String::new(), unit: String::new(), over: Some(Over::Max), calibration: false };
        let c = compare(&s, std::slice::from_ref(&claim));
        assert!(c[0].ours == Some(2.0) && c[0].within, "{:?}", c[0]);
        // On the tolerance's edge, to the float: 1.1 against 1 ± 10%, 0.77 against 0.7 ± 10%.
        let edge = serde_json::json!({"a": 1.1, "b": 0.77, "c": 1.1000001});
        let near = |metric: &str, value: f64| PaperValue { metric: metric.into(), per: None, value, tolerance: 0.1, over: None, ..claim.clone() };
        let c = compare(&edge, &[near("a", 1.0), near("b", 0.7), near("c", 1.0)]);
        assert_eq!(c.iter().map(|c| c.within).collect::<Vec<_>>(), vec![true, true, false]);
        // Values and tolerances a claim cannot be judged by.
        for (bad, key) in [(PaperValue { value: f64::NAN, ..near("a", 1.0) }, "value"), (PaperValue { value: f64::INFINITY, ..near("a", 1.0) }, "value"), (PaperValue { tolerance: -0.1, ..near("a", 1.0) }, "tolerance"), (PaperValue { tolerance: f64::INFINITY, ..near("a", 1.0) }, "tolerance")] {
            assert_eq!(bad.check().iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), vec![key]);
        }
    }

    #[test]
    fn paths_and_tolerance() {
        let s: serde_json::Value = serde_json::json!({"perftest": [{"name": "a", "gbps": 30.0}, {"name": "b", "gbps": 60.0}], "rdma": {"x": 1.0}});
        assert_eq!(lookup(&s, "perftest/b/gbps"), Some(60.0));
        assert_eq!(lookup(&s, "perftest/0/gbps"), Some(30.0));
        // A name that reads as an index is found by its name first.
        let named: serde_json::Value = serde_json::json!({"perftest": [{"name": "a", "gbps": 30.0}, {"name": "0", "gbps": 60.0}]});
        assert_eq!(lookup(&named, "perftest/0/gbps"), Some(60.0));
        assert_eq!(lookup(&named, "perftest/1/gbps"), Some(60.0));
        assert_eq!(lookup(&s, "rdma/x"), Some(1.0));
        assert_eq!(lookup(&s, "rdma/y"), None);
        let v = |value, metric: &str| PaperValue { metric: metric.into(), per: None, value, relation: Relation::Near, tolerance: 0.25, source: String::new(), unit: String::new(), over: None, calibration: false };
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
            y_log: false,
            series: vec![SeriesSpec { label: "ours".into(), x: vec![1.0, 2.0, 3.0], metrics: vec!["h/a/m".into(), "h/b/m".into(), "h/c/m".into()], per: Some("h/b/m".into()), per_each: Vec::new(), scale: 1.0 }],
            paper: vec![PaperPoints { label: "paper".into(), x: vec![2.0], y: vec![1.0] }],
            trace: None,
        };
        let out = figures(&s, std::slice::from_ref(&f));
        assert_eq!((out[0].series[0].x.clone(), out[0].series[0].y.clone()), (vec![1.0, 2.0], vec![0.5, 1.0]));
        assert_eq!(out[0].paper, f.paper);
        assert!(f.check().is_empty());
        // Each point over its own metric: 2/2 and 4/2.
        let each = SeriesSpec { x: vec![1.0, 2.0], metrics: vec!["h/a/m".into(), "h/b/m".into()], per: None, per_each: vec!["h/a/m".into(), "h/a/m".into()], ..f.series[0].clone() };
        let out = figures(&s, &[FigureSpec { series: vec![each.clone()], ..f.clone() }]);
        assert_eq!(out[0].series[0].y, vec![1.0, 2.0]);
        let bad_each = FigureSpec { series: vec![SeriesSpec { per_each: vec!["h/a/m".into()], ..each }], ..f.clone() };
        assert_eq!(bad_each.check()[0].0, "series[0].per_each");
        // A unit change after normalizing: (2/2, 4/2) × 10.
        let scaled = FigureSpec { series: vec![SeriesSpec { scale: 10.0, ..f.series[0].clone() }], ..f.clone() };
        assert_eq!(figures(&s, &[scaled])[0].series[0].y, vec![5.0, 10.0]);
        let bad_scale = FigureSpec { series: vec![SeriesSpec { scale: 0.0, ..f.series[0].clone() }], ..f.clone() };
        assert_eq!(bad_scale.check()[0].0, "series[0].scale");
        let bad = FigureSpec { series: vec![SeriesSpec { metrics: vec![], ..f.series[0].clone() }], ..f.clone() };
        assert_eq!(bad.check()[0].0, "series[0].metrics");
        // A `*` in a point's metric (it found nothing, and the point went missing unsaid), a 0
        // on a logarithmic axis, and numbers that are none (found by a helper).
        let star = FigureSpec { series: vec![SeriesSpec { metrics: vec!["h/*/m".into(), "h/b/m".into(), "h/c/m".into()], ..f.series[0].clone() }], ..f.clone() };
        assert_eq!(star.check().iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), vec!["series[0].metrics"]);
        let log0 = FigureSpec { x_log: true, series: vec![SeriesSpec { x: vec![0.0, 2.0, 3.0], ..f.series[0].clone() }], ..f.clone() };
        assert_eq!(log0.check().iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), vec!["series[0].x"]);
        let ylog0 = FigureSpec { y_log: true, paper: vec![PaperPoints { label: "paper".into(), x: vec![2.0], y: vec![0.0] }], ..f.clone() };
        assert_eq!(ylog0.check().iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), vec!["paper[0].y"]);
        let nan = FigureSpec { paper: vec![PaperPoints { label: "paper".into(), x: vec![f64::NAN], y: vec![1.0] }], ..f };
        assert_eq!(nan.check().iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), vec!["paper[0].x"]);
    }
}
