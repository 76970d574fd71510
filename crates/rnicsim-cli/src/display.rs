//! Terminal output: the progress bar and the summary table.

use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rnicsim::output::Summary;
use rnicsim::units::Time;
use rnicsim::world::Progress;
use std::time::Duration;

/// A bar over simulated time (hidden when `quiet` or when stderr is not a terminal).
pub fn progress_bar(quiet: bool, end: Time) -> ProgressBar {
    let target = if quiet { ProgressDrawTarget::hidden() } else { ProgressDrawTarget::stderr() };
    let bar = ProgressBar::with_draw_target(Some(end.0.max(1)), target);
    bar.set_style(ProgressStyle::with_template("{bar:30} {percent:>3}% {msg}").expect("valid template"));
    bar
}

pub fn update_progress(bar: &ProgressBar, p: Progress, wall: Duration) {
    bar.set_position(p.now.0);
    let rate = p.events as f64 / wall.as_secs_f64().max(1e-9);
    bar.set_message(format!("sim {} / {} · wall {:.1}s · {:.1} M events/s", p.now, p.end, wall.as_secs_f64(), rate / 1e6));
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
        ("drops buffer / link / corrupt / no route".into(), format!("{} / {} / {} / {}", s.drops_buffer, s.drops_link_down, s.drops_corrupt, s.drops_unroutable)),
        ("ECN marks".into(), s.ecn_marks.to_string()),
        ("PFC pauses sent".into(), format!("{} ({:.3} port-ms paused)", s.pfc_pauses_sent, s.paused_seconds * 1e3)),
        ("max queue".into(), format!("{} B", s.max_queue_bytes)),
    ];
    for (k, v) in rows {
        t.add_row(vec![k, v]);
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
