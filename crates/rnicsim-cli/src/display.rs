//! Terminal output: the progress bar and the summary table.

use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rnicsim::output::paper::Relation;
use rnicsim::output::Summary;
use rnicsim::units::Time;
use rnicsim::world::Progress;
use std::io::IsTerminal;
use std::time::Duration;

/// Progress of a run: a bar over simulated time, or over flows finished when the run ends with
/// its listed flows (an ns-3 config's: its `duration` is a safety limit, far past where the run
/// ends). Where stderr is not a terminal (a log file, `nohup`, a batch job) the bar cannot be
/// drawn, and a plain line is written instead: at the first report, then every [`PLAIN_EVERY`] of
/// wall time.
pub struct RunProgress {
    pub bar: ProgressBar,
    /// Plain lines, and when the next is due (wall time since the start).
    plain: Option<Duration>,
}

/// How often a run whose stderr is not a terminal says how far it is.
pub const PLAIN_EVERY: Duration = Duration::from_secs(10);

impl RunProgress {
    pub fn new(quiet: bool, start: &Progress) -> RunProgress {
        let target = if quiet { ProgressDrawTarget::hidden() } else { ProgressDrawTarget::stderr() };
        let len = start.flows.map_or(start.end.0, |(_, total)| total);
        let bar = ProgressBar::with_draw_target(Some(len.max(1)), target);
        bar.set_style(ProgressStyle::with_template("{prefix}{bar:30} {percent:>3}% {msg}").expect("valid template"));
        let plain = (!quiet && !std::io::stderr().is_terminal()).then_some(Duration::ZERO);
        RunProgress { bar, plain }
    }

    pub fn update(&mut self, p: Progress, wall: Duration) {
        let rate = p.events as f64 / wall.as_secs_f64().max(1e-9);
        let speed = format!("wall {:.1}s · {:.1} M events/s", wall.as_secs_f64(), rate / 1e6);
        match p.flows {
            Some((done, total)) => {
                self.bar.set_position(done);
                self.bar.set_message(format!("flows {done} / {total} · sim {} · {speed}", p.now));
            }
            None => {
                self.bar.set_position(p.now.0);
                self.bar.set_message(format!("sim {} / {} · {speed}", p.now, p.end));
            }
        }
        if let Some(due) = self.plain.filter(|&due| wall >= due) {
            let percent = 100 * self.bar.position() / self.bar.length().unwrap_or(1).max(1);
            eprintln!("progress: {}{percent}% {}", self.bar.prefix(), self.bar.message());
            self.plain = Some(due + PLAIN_EVERY * (1 + ((wall - due).as_secs() / PLAIN_EVERY.as_secs()) as u32));
        }
    }
}

/// A stall seen (or ended) during the run, `before` being what was known at the last report.
pub fn stall_news(p: &Progress, before: Option<Time>) {
    match (before, p.stalled_since) {
        (_, Some(since)) => eprintln!("warning: at {} of {}: nothing has reached its destination since {since} while work is pending", p.now, p.end),
        (Some(_), None) => eprintln!("note: at {}: the stall ended (packets arrive again, or the pending work completed or failed)", p.now),
        (None, None) => {}
    }
}

pub fn summary_table(s: &Summary, wall: Duration) -> Table {
    let secs = wall.as_secs_f64().max(1e-9);
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec!["run", "value"]);
    let rows: Vec<(String, String)> = vec![
        ("scenario".into(), if s.name.is_empty() { "(unnamed)".into() } else { s.name.clone() }),
        ("simulated".into(), Time(s.duration_ps).to_string()),
        ("wall time".into(), format!("{secs:.2} s")),
        ("events".into(), format!("{} ({:.1} M/s)", s.events, s.events as f64 / secs / 1e6)),
        ("packet-hops".into(), format!("{} ({:.1} M/s)", s.packet_hops, s.packet_hops as f64 / secs / 1e6)),
        ("packets sent / delivered".into(), format!("{} / {}", s.packets_sent, s.packets_delivered)),
        ("drops buffer / link / corrupt / no route / wrong host".into(), format!("{} / {} / {} / {} / {}", s.drops_buffer, s.drops_link_down, s.drops_corrupt, s.drops_unroutable, s.drops_misdelivered)),
        ("ECN marks".into(), s.ecn_marks.to_string()),
        ("PFC pauses sent".into(), format!("{} ({:.3} port-ms paused)", s.pfc_pauses_sent, s.paused_seconds * 1e3)),
        ("max queue".into(), format!("{} B", s.max_queue_bytes)),
    ];
    for (k, v) in rows {
        t.add_row(vec![k, v]);
    }
    let r = &s.rdma;
    // The NICs' receive buffers, when PCIe could not keep up with what arrived.
    if r.rx_buffer_drops + r.rx_buffer_pauses > 0 {
        t.add_row(vec!["NIC receive buffer peak / drops / PAUSEs".to_string(), format!("{} B / {} / {}", r.rx_buffer_peak_bytes, r.rx_buffer_drops, r.rx_buffer_pauses)]);
    }
    if r.flows_started > 0 {
        t.add_row(vec![
            "RDMA flows started / completed / failed".to_string(),
            format!("{} / {} / {}", r.flows_started, r.flows_completed, r.flows_failed),
        ]);
        if r.flows_completed > 0 {
            t.add_row(vec![
                "FCT slowdown mean / p50 / p99".to_string(),
                format!("{:.2} / {:.2} / {:.2} (mean FCT {:.1} µs)", r.slowdown_mean, r.slowdown_p50, r.slowdown_p99, r.fct_mean_us),
            ]);
        }
    }
    if r.flows_started > 0 || !s.perftest.is_empty() {
        t.add_row(vec!["retransmits / timeouts".to_string(), format!("{} / {}", r.retransmits, r.timeouts)]);
        t.add_row(vec![
            "peak QPs per NIC (context)".to_string(),
            format!("{} ({} B)", r.peak_qps_per_nic, r.peak_qp_context_bytes),
        ]);
    }
    for p in &s.perftest {
        let label = if p.name.is_empty() { p.test.clone() } else { format!("{} ({})", p.name, p.test) };
        // Sizes drawn from a range show the range (SCR Fig. 12's 4 KB–1 MB).
        let message = match p.message_max {
            Some(max) => format!("{}–{max}", p.message),
            None => p.message.to_string(),
        };
        let v = if p.test == rnicsim::scenario::PerftestKind::WriteLat.name() {
            format!("{message} B: {}", latency(p.latency_mean_us, p.latency_p99_us, 2, "no message completed in the window"))
        } else {
            format!("{message} B × {} QPs: {:.4} Gbps goodput, {:.4} Gbps on the wire, {:.3} Mpps", p.qps, p.gbps, p.wire_gbps, p.mpps)
        };
        t.add_row(vec![format!("perftest {label}"), v]);
    }
    for r in &s.rpc {
        t.add_row(vec![
            format!("rpc {} ({} connections)", r.name, r.connections),
            format!("{:.3} M calls/s, load {:.3} (wire {:.3}), {}", r.mcalls, r.load, r.wire_load, latency(r.latency_mean_us, r.latency_p99_us, 1, "no call finished in the window")),
        ]);
    }
    for n in &s.nvmf {
        t.add_row(vec![
            format!("nvmf {} ({} B writes, depth {})", n.name, n.io_bytes, n.depth),
            format!("{:.1} K IOPS, {:.3} Gbps, {}, errors {}", n.kiops, n.gbps, latency(n.latency_mean_us, n.latency_p99_us, 1, "no write completed in the window"), n.errors),
        ]);
    }
    if let Some(st) = &s.star {
        let c = &st.total;
        t.add_row(vec![
            "StaR packets: stateless rx/tx, stateful rx/tx".to_string(),
            format!("{} / {}, {} / {} (refused {}, resent {}, WQEPs re-posted {})", c.stateless_rx, c.stateless_tx, c.stateful_rx, c.stateful_tx, c.refused, c.resent, c.wqep_reposts),
        ]);
    }
    for tr in &s.traffic {
        t.add_row(vec![
            format!("traffic[{}] ({} senders)", tr.index, tr.senders),
            format!(
                "sent {:.1} Gbps, delivered {:.1} Gbps, latency mean {:.2} µs max {:.2} µs, CE {:.1}%",
                tr.sent_gbps,
                tr.delivered_gbps,
                tr.latency_mean_ns / 1e3,
                tr.latency_max_ns / 1e3,
                tr.ecn_ce_fraction * 100.0
            ),
        ]);
    }
    t
}

/// The paper's values beside ours.
pub fn paper_table(s: &Summary) -> Option<Table> {
    if s.paper.is_empty() {
        return None;
    }
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec!["metric", "source", "paper", "ours", "error", "within"]);
    for c in &s.paper {
        t.add_row(vec![
            // A ratio claim shows what it divides by.
            c.per.as_ref().map_or_else(|| c.metric.clone(), |per| format!("{} / {per}", c.metric)),
            c.source.clone(),
            // A bound holds or not; the tolerance is for values meant to be near the paper's.
            match c.relation {
                Relation::Near => format!("{} {}", c.paper, c.unit),
                Relation::Below => format!("≤ {} {}", c.paper, c.unit),
                Relation::Above => format!("≥ {} {}", c.paper, c.unit),
            },
            // Ours to the paper's precision at least (1/64000 read 0.00 beside 0.00002).
            c.ours.map_or("missing".to_string(), |o| format!("{} {}", significant(o), c.unit)),
            match (c.relative_error, c.paper == 0.0) {
                (None, _) => "-".to_string(),
                // Against 0 the tolerance is absolute and the error is ours itself.
                (Some(r), true) => format!("{r:+}"),
                (Some(r), false) => format!("{:+.1}%", r * 100.0),
            },
            // A calibrated constant's check is marked as such: it reproduces nothing.
            match (c.relation, if c.calibration { ", calibration" } else { "" }) {
                (Relation::Near, calib) if c.paper == 0.0 => format!("{} (±{}{calib})", if c.within { "yes" } else { "NO" }, c.tolerance),
                (Relation::Near, calib) => format!("{} (±{:.0}%{calib})", if c.within { "yes" } else { "NO" }, c.tolerance * 100.0),
                (Relation::Below | Relation::Above, calib) => format!("{} (bound{calib})", if c.within { "yes" } else { "NO" }),
            },
        ]);
    }
    Some(t)
}

/// `x` with two decimals, or four significant digits where two decimals would lose it.
fn significant(x: f64) -> String {
    if x == 0.0 || x.abs() >= 0.1 {
        format!("{x:.2}")
    } else {
        format!("{x:.3e}")
    }
}

/// "latency mean M µs, p99 P µs" with `digits` decimals, or `none` where nothing was measured.
fn latency(mean: Option<f64>, p99: Option<f64>, digits: usize, none: &str) -> String {
    match (mean, p99) {
        (Some(m), Some(p)) => format!("latency mean {m:.digits$} µs, p99 {p:.digits$} µs"),
        _ => format!("latency: {none}"),
    }
}
