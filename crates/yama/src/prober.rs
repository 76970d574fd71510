//! The throughput prober (Yama §4.2, Algorithm 1). Once per period (≈ 1.25 RTT, §7) the leader
//! of a chain counts the application and dummy work completed since the last period, smooths it
//! over a sliding window of periods into the chain's throughput, and publishes that × (1 + β)
//! (controlled oversubscription, so an engine that got faster is found). A period with nothing
//! completed counts too: when one operation takes longer than a period, completions are lumpy,
//! and the window reaches back to take in `window` periods that saw completions, timed from the
//! end of the one before them. It then backfills:
//! dummy work for the gap between the estimate and what applications posted, but no more than a
//! fraction of the applications' own work. When that cap binds, the chain was not offered the
//! estimate, so what completes next period says nothing of its maximum: the estimate is kept.
//! Applications that had work waiting which the chain did not take (their queue pairs' buckets
//! spilled while work waited, or work their tokens allowed waited for earlier work still queued
//! in the chain) saturate the chain: no dummy work then, since there is no gap the applications
//! could not fill. The application work posted, and whether any waited, are taken over the same
//! time as the completions, so the period-to-period jitter of what applications post (a few
//! large packets more or less, or one piece larger than a period's share) does not turn into
//! dummy work.

use crate::PS_PER_S;
use std::collections::VecDeque;

/// The most periods the window reaches back over.
const MAX_PERIODS: usize = 1024;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProberConfig {
    /// Oversubscription factor β.
    pub beta: f64,
    /// Periods in the sliding window.
    pub window: usize,
    /// Dummy work at most this fraction of the application work posted in a period.
    pub backfill_cap: f64,
    /// The estimate before the first measurement, bytes per second.
    pub initial: f64,
}

impl Default for ProberConfig {
    fn default() -> ProberConfig {
        ProberConfig { beta: 0.05, window: 4, backfill_cap: 0.5, initial: 1.25e9 }
    }
}

/// What one period of the loop saw: bytes of application work completed, dummy work completed,
/// application work posted, and application work that waited for the chain (tokens its queue
/// pairs lost while work was queued, and work that came back queued in the chain to a queue pair
/// with more waiting).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub app_done: u64,
    pub dummy_done: u64,
    pub app_posted: u64,
    pub app_waiting: u64,
}

/// What one period of the loop decided.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    /// The chain's estimated throughput to pace at, bytes per second.
    pub estimate: f64,
    /// Dummy work to post during the next period, bytes.
    pub dummy: u64,
    /// Whether the estimate was updated (this period measured the chain, and something
    /// completed within the window).
    pub updated: bool,
    /// Whether the cap on dummy work bound (so the next period will not update).
    pub capped: bool,
}

#[derive(Clone, Debug)]
pub struct Prober {
    cfg: ProberConfig,
    estimate: f64,
    /// (bytes completed, picoseconds) of the periods that measured the chain, oldest first: the
    /// last `window` periods with completions, the periods without any between and after them,
    /// and the period with completions before them (where the window's time starts).
    window: VecDeque<(u64, u64)>,
    /// (application bytes posted, application bytes waiting, picoseconds) of the last periods,
    /// measured or not.
    posted: VecDeque<(u64, u64, u64)>,
    /// The time the last measurement spanned (0: none yet): posted work is smoothed over as
    /// long, so that lumpy posting (work larger than a period's share) is not read as a gap.
    span: u64,
    /// The last period's offered work fell short of the estimate.
    capped: bool,
    last: Option<u64>,
}

impl Prober {
    pub fn new(cfg: ProberConfig) -> Prober {
        assert!(cfg.beta >= 0.0 && cfg.window >= 1 && cfg.backfill_cap >= 0.0 && cfg.initial > 0.0, "bad prober configuration");
        Prober { cfg, estimate: cfg.initial, window: VecDeque::new(), posted: VecDeque::new(), span: 0, capped: false, last: None }
    }

    /// Starts (or restarts, after a handover) the loop at `now` with the estimate last seen.
    pub fn start(&mut self, now: u64, estimate: f64) {
        self.last = Some(now);
        self.estimate = estimate.max(1.0);
        self.window.clear();
        self.posted.clear();
        self.span = 0;
        self.capped = false;
    }

    /// One iteration at `now` with what happened since the last one.
    pub fn period(&mut self, now: u64, c: Counts) -> Step {
        let Counts { app_done, dummy_done, app_posted, app_waiting } = c;
        let last = *self.last.get_or_insert(now);
        let dt = now.saturating_sub(last);
        self.last = Some(now);
        let done = app_done + dummy_done;
        let mut updated = false;
        if dt > 0 && !self.capped {
            // Periods before the first completion are the chain's latency, not its rate.
            if done > 0 || !self.window.is_empty() {
                self.window.push_back((done, dt));
            }
            if let Some((bytes, ps)) = self.measure() {
                self.estimate = (1.0 + self.cfg.beta) * bytes as f64 * PS_PER_S / ps as f64;
                self.span = ps;
                updated = true;
            }
        }
        self.posted.push_back((app_posted, app_waiting, dt));
        if self.posted.len() > MAX_PERIODS {
            self.posted.pop_front();
        }
        // The last `window` periods, or as many as the last measurement spanned if more.
        let (mut bytes, mut waited, mut ps) = (0u64, 0u64, 0u64);
        for (n, &(b, w, t)) in self.posted.iter().rev().enumerate() {
            if n >= self.cfg.window && ps >= self.span {
                break;
            }
            bytes += b;
            waited += w;
            ps += t;
        }
        let posted = if ps > 0 { bytes as f64 * dt as f64 / ps as f64 } else { app_posted as f64 };
        let target = self.estimate * dt as f64 / PS_PER_S;
        let gap = if waited > 0 { 0.0 } else { (target - posted).max(0.0) };
        let cap = self.cfg.backfill_cap * posted;
        self.capped = gap > cap;
        let dummy = gap.min(cap).round() as u64;
        Step { estimate: self.estimate, dummy, updated, capped: self.capped }
    }

    /// Bytes and picoseconds of the window: from the end of the last period with completions
    /// before the last `window` ones to now. With every period seeing completions that is the
    /// last `window` periods; with lumpy completions it spans as many periods as it takes, so
    /// empty periods lower the rate instead of being left out (which overstated it by the
    /// ratio of all periods to those with completions). The empty periods since the last
    /// completion count only beyond the window's mean time between completions: counted from
    /// the first, they understated a steady lumpy rate by up to a gap (with four completions in
    /// the window, 10% on average and 18% at worst, more than β, so a paced chain's estimate
    /// sank), while an
    /// engine that stops completing is still followed down once the wait passes a mean gap.
    /// Drops what lies before; `None` if nothing completed in it (no evidence: the estimate is
    /// kept).
    fn measure(&mut self) -> Option<(u64, u64)> {
        while self.window.len() > MAX_PERIODS {
            self.window.pop_front();
        }
        let (mut bytes, mut ps, mut seen, mut tail) = (0u64, 0u64, 0usize, 0u64);
        let mut start = 0;
        for (i, &(b, t)) in self.window.iter().enumerate().rev() {
            if b > 0 && seen == self.cfg.window {
                start = i;
                break;
            }
            if b == 0 && seen == 0 {
                tail += t;
            }
            bytes += b;
            ps += t;
            seen += usize::from(b > 0);
        }
        self.window.drain(..start);
        let busy = ps - tail;
        let gap = if seen > 0 { busy / seen as u64 } else { 0 };
        let ps = busy + tail.saturating_sub(gap);
        (bytes > 0 && ps > 0).then_some((bytes, ps))
    }

    pub fn estimate(&self) -> f64 {
        self.estimate
    }

    pub fn config(&self) -> &ProberConfig {
        &self.cfg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: u64 = 10_000_000; // 10 µs period

    /// A chain of capacity `cap(t)` B/s fed by applications that always post the whole
    /// estimate: completions are min(offered, capacity) per period.
    fn track(p: &mut Prober, periods: usize, cap: impl Fn(usize) -> f64) -> Vec<f64> {
        let mut out = Vec::new();
        let mut still = 0;
        let mut offered = p.estimate() * P as f64 / PS_PER_S;
        for i in 1..=periods {
            let c = cap(i) * P as f64 / PS_PER_S;
            let done = offered.min(c) as u64;
            let before = p.estimate();
            let s = p.period(i as u64 * P, Counts { app_done: done, app_posted: (before * P as f64 / PS_PER_S).ceil() as u64, ..Counts::default() });
            // Applications post the whole estimate: no dummy work once it has held still for a
            // window (while it rises, the smoothed posting lags it).
            still = if (s.estimate - before).abs() <= 1e-6 * before { still + 1 } else { 0 };
            if still > p.config().window {
                assert_eq!(s.dummy, 0, "no dummy work while applications saturate the chain");
            }
            offered = s.estimate * P as f64 / PS_PER_S;
            out.push(s.estimate);
        }
        out
    }

    #[test]
    fn the_estimate_settles_at_capacity_times_one_plus_beta() {
        let mut p = Prober::new(ProberConfig { beta: 0.1, window: 4, backfill_cap: 0.5, initial: 1e9 });
        let est = track(&mut p, 60, |_| 5e9);
        assert!((est[59] - 5.5e9).abs() / 5.5e9 < 1e-9, "{}", est[59]);
    }

    #[test]
    fn a_step_down_of_capacity_is_tracked_within_the_window() {
        let cfg = ProberConfig { beta: 0.05, window: 4, backfill_cap: 0.5, initial: 1e10 };
        let mut p = Prober::new(cfg);
        let est = track(&mut p, 80, |i| if i <= 40 { 1e10 } else { 4e9 });
        // After `window` periods of the new capacity, the window holds only it.
        let at = 40 + cfg.window - 1;
        assert!((est[at] - 4.2e9).abs() / 4.2e9 < 1e-9, "{:?}", &est[38..48]);
    }

    #[test]
    fn a_step_up_is_found_within_a_bounded_number_of_periods() {
        let cfg = ProberConfig { beta: 0.1, window: 2, backfill_cap: 0.5, initial: 4e9 };
        let mut p = Prober::new(cfg);
        let est = track(&mut p, 200, |i| if i <= 20 { 4e9 } else { 8e9 });
        // Each period's completions grow by (1 + β) at least once the window has turned over:
        // at most window × log(2)/log(1.1) + window periods to reach the new capacity.
        let bound = 20 + (cfg.window as f64 * (2f64.ln() / 1.1f64.ln())).ceil() as usize + cfg.window;
        let reached = est.iter().position(|&e| e >= 8e9).unwrap() + 1;
        assert!(reached <= bound, "reached at period {reached}, bound {bound}");
        assert!((est[199] - 8.8e9).abs() / 8.8e9 < 1e-9);
    }

    #[test]
    fn lumpy_completions_are_measured_over_the_periods_between_them() {
        // One 64 KiB operation completes every 7 periods of 10 µs: 936 MB/s. Applications
        // always have work waiting (no period is skipped). Leaving the empty periods out would
        // make it 7 times that; counting those since the last completion from the first would
        // read 4 gaps over 4 to 4 6/7 of them, 17.6% low at worst and 9% on average (more than
        // beta). They count only beyond a mean gap, so the estimate is exact wherever the
        // period falls between completions.
        let (size, every, beta) = (65_536u64, 7usize, 0.05);
        let capacity = size as f64 / (every as f64 * P as f64 / PS_PER_S);
        let mut p = Prober::new(ProberConfig { beta, window: 4, backfill_cap: 0.5, initial: 1e9 });
        p.start(0, 1e9);
        let waiting = Counts { app_waiting: 1, ..Counts::default() };
        for i in 1..=200usize {
            let done = if i % every == 0 { size } else { 0 };
            let s = p.period(i as u64 * P, Counts { app_done: done, ..waiting });
            if i > 6 * every {
                let r = s.estimate / ((1.0 + beta) * capacity);
                assert!((r - 1.0).abs() < 1e-9, "period {i}: {r}");
            }
        }
        // The engine stops completing while work waits: the estimate falls with the time.
        let before = p.estimate();
        for i in 201..=300usize {
            p.period(i as u64 * P, waiting);
        }
        assert!(p.estimate() < 0.3 * before, "{} after {}", p.estimate(), before);
        assert!(p.window.len() <= MAX_PERIODS);
    }

    #[test]
    fn backfill_fills_the_gap_up_to_the_cap() {
        let mut p = Prober::new(ProberConfig { beta: 0.0, window: 1, backfill_cap: 0.5, initial: 1e9 });
        p.start(0, 1e9);
        // 1 GB/s × 10 µs = 10 000 bytes; applications posted 8000: 2000 of dummy.
        let s = p.period(P, Counts { app_done: 10_000, dummy_done: 0, app_posted: 8000, app_waiting: 0 });
        assert_eq!((s.dummy, s.capped), (2000, false));
        // Applications posted 4000: the gap is 6000, the cap 2000.
        let s = p.period(2 * P, Counts { app_done: 10_000, dummy_done: 0, app_posted: 4000, app_waiting: 0 });
        assert_eq!((s.dummy, s.capped), (2000, true));
        // The period after a capped one does not update the estimate, whatever completed.
        let s = p.period(3 * P, Counts { app_done: 3000, dummy_done: 2000, app_posted: 4000, app_waiting: 0 });
        assert!(!s.updated);
        assert_eq!(s.estimate, 1e9);
        // Applications posted more than the estimate: no dummy work.
        let s = p.period(4 * P, Counts { app_done: 10_000, dummy_done: 0, app_posted: 12_000, app_waiting: 0 });
        assert_eq!((s.dummy, s.capped), (0, false));
        // Applications posted less, but had work waiting the chain did not take: no dummy.
        let s = p.period(5 * P, Counts { app_done: 8000, dummy_done: 0, app_posted: 6000, app_waiting: 500 });
        assert_eq!((s.dummy, s.capped), (0, false));
        // Nothing posted: no dummy work at all.
        let mut p = Prober::new(ProberConfig { beta: 0.0, window: 1, backfill_cap: 0.5, initial: 1e9 });
        let s = p.period(6 * P, Counts::default());
        assert_eq!(s.dummy, 0);
    }
}
