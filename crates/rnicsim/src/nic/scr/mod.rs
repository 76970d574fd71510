//! SCR, Software-Controlled RDMA (paper 000: §4 framework, §5 policies, §6 and Appendix A
//! evaluation): packet-granular control of the NIC from software on its cores.
//!
//! The NIC's transport events ([`crate::nic::events`]) are collected per flow and kind
//! ([`event`]), wait in coalescing queues ([`queue`]), and are handed by a deterministic
//! multiplexer to a pool of hardware threads that run a policy at a modelled core clock
//! ([`processor`]). A policy ([`policy`]) answers with control actions, chiefly the per-QP
//! *dequeue rate* of the NIC's QP scheduler (§4.2), which take effect after the NIC's install
//! latency. [`stats`] measures event rate, coalescing granularity and processing rate as §6.1
//! defines them. Scenario key: `[nic.scr]` (`docs/scr.md`).

/// An out-of-band signal is one packet: its payload is at most this many bytes (§4.3.1's
/// signals are 128 B UDP packets; the largest MTU bounds what a policy may ask for).
pub const MAX_SIGNAL_BYTES: u32 = 4096;

pub mod compact;
pub mod event;
pub mod policy;
pub mod processor;
pub mod queue;
pub mod stats;
pub mod telemetry;

use crate::units::{BitsPerSec, Bytes, Time};
use event::Kind;
use policy::{external, multipath, passive, receiver_driven, static_share, swift, water_filling};
use processor::{context_fits, Config, Processor, ScrCore};
use queue::Strategy;
use serde::{Deserialize, Serialize};

/// Where in-band events coalesce.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Coalescing {
    /// In the ASIC: accumulate only, flows hash-steered onto threads (BlueField-3's, §4.3.2);
    /// out-of-band peer signals still go through software rings.
    #[default]
    Hardware,
    /// Every event through software rings with a strategy per kind; flows dealt to threads in turn.
    Software,
}

/// The coalescing strategy of each event kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Strategies {
    #[serde(default)]
    pub tx: Strategy,
    #[serde(default)]
    pub rx: Strategy,
    #[serde(default)]
    pub ack: Strategy,
    #[serde(default)]
    pub nack: Strategy,
    #[serde(default)]
    pub cnp: Strategy,
    #[serde(default = "keep_latest")]
    pub rtt: Strategy,
    #[serde(default = "keep_latest")]
    pub peer: Strategy,
    /// A policy's wake-ups (one tick stands for any that folded).
    #[serde(default = "keep_latest", skip_serializing_if = "is_keep_latest")]
    pub timer: Strategy,
    /// Application hints (the latest one written is what counts).
    #[serde(default = "keep_latest", skip_serializing_if = "is_keep_latest")]
    pub host: Strategy,
    /// Telemetry samples (PCIe, port): a newer reading replaces one not yet handled.
    #[serde(default = "keep_latest", skip_serializing_if = "is_keep_latest")]
    pub pcie: Strategy,
    #[serde(default = "keep_latest", skip_serializing_if = "is_keep_latest")]
    pub port: Strategy,
}

fn keep_latest() -> Strategy {
    Strategy::KeepLatest
}

fn is_keep_latest(s: &Strategy) -> bool {
    *s == Strategy::KeepLatest
}

impl Default for Strategies {
    fn default() -> Self {
        Strategies { tx: Strategy::Accumulate, rx: Strategy::Accumulate, ack: Strategy::Accumulate, nack: Strategy::Accumulate, cnp: Strategy::Accumulate, rtt: keep_latest(), peer: keep_latest(), timer: keep_latest(), host: keep_latest(), pcie: keep_latest(), port: keep_latest() }
    }
}

impl Strategies {
    fn by_kind(&self) -> [Strategy; Kind::COUNT] {
        [self.tx, self.rx, self.ack, self.nack, self.cnp, self.rtt, self.peer, self.timer, self.host, self.pcie, self.port]
    }
}

/// Which policy the cores run, with its parameters (`[nic.scr.policy.<name>]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum PolicySpec {
    Passive(passive::PassiveParams),
    Static(static_share::StaticParams),
    WaterFilling(water_filling::WaterFillingParams),
    Swift(swift::SwiftParams),
    ReceiverDriven(receiver_driven::ReceiverDrivenParams),
    Multipath(multipath::MultipathParams),
    External(external::ExternalParams),
}

impl Default for PolicySpec {
    fn default() -> Self {
        PolicySpec::Passive(Default::default())
    }
}

/// `[nic.scr]`: SCR on every NIC.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScrSpec {
    /// Hardware threads for per-flow work (§4.3.3: 64 for in-band fabric events).
    #[serde(default = "default_threads")]
    pub threads: u32,
    /// Core clock (BlueField-3's DPA: 505 MHz, §6.1).
    #[serde(default = "default_clock")]
    pub clock_mhz: u32,
    #[serde(default)]
    pub coalescing: Coalescing,
    #[serde(default)]
    pub strategy: Strategies,
    /// Software ring entries per flow and kind.
    #[serde(default = "default_depth")]
    pub queue_depth: u32,
    /// Bytes a *threshold* queue gathers before a stable flow's events are processed again.
    #[serde(default = "default_threshold")]
    pub threshold: Bytes,
    /// Cycles a thread spends parking a stable flow's events (threshold strategy).
    #[serde(default = "default_park_cycles")]
    pub park_cycles: u32,
    /// From the NIC raising an event to a thread being able to take it (A.11: up to 7 µs;
    /// busy-waiting threads hide most of it).
    #[serde(default = "default_trigger")]
    pub trigger_latency: Time,
    /// From a thread's decision to the data path obeying it (A.11: up to 6 µs).
    #[serde(default = "default_install")]
    pub install_latency: Time,
    #[serde(default)]
    pub policy: PolicySpec,
    /// Threads of the separate per-node pool (§4.3.3): node-level work (joins, leaves and the
    /// telemetry samples) runs there, apart from the per-flow threads. 0 (the default): no
    /// separate pool; a join is charged to its flow's thread, telemetry to a flow thread.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub node_threads: u32,
    /// The host-domain collectors' sampling period (A.10's telemetry threads): every period the
    /// NIC reads its PCIe utilization per direction, times a 64-byte ping-pong across PCIe, and
    /// reads its port's utilization, as `pcie` and `port` events. Off if unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<Time>,
    /// The hosts (node ids, as `client`/`server` name them) whose NICs run SCR; all if unset
    /// (A.6/A.8's testbeds mix SCR-capable BlueField-3s with plain NICs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<Vec<u32>>,
    /// The processors' counters in `summary.json` (events collected and handled, granularity,
    /// event and processing rates, thread utilization, drops, rate sets) count from this time
    /// on, as perftest's `warmup` does for bandwidth: §6.1 measures a steady state, and flows
    /// that have not yet had their first turn at the wire send their first bursts unpaced.
    /// 0 (the default): the whole run.
    #[serde(default, skip_serializing_if = "is_zero_time")]
    pub warmup: Time,
}

fn default_threads() -> u32 {
    64
}
fn is_zero(n: &u32) -> bool {
    *n == 0
}
fn is_zero_time(t: &Time) -> bool {
    *t == Time::ZERO
}
fn default_clock() -> u32 {
    505
}
fn default_depth() -> u32 {
    64
}
fn default_threshold() -> Bytes {
    Bytes(64 * 1024)
}
fn default_park_cycles() -> u32 {
    40
}
fn default_trigger() -> Time {
    Time::from_us(2)
}
fn default_install() -> Time {
    Time::from_us(4)
}

impl Default for ScrSpec {
    fn default() -> Self {
        ScrSpec {
            threads: default_threads(),
            clock_mhz: default_clock(),
            coalescing: Coalescing::default(),
            strategy: Strategies::default(),
            queue_depth: default_depth(),
            threshold: default_threshold(),
            park_cycles: default_park_cycles(),
            trigger_latency: default_trigger(),
            install_latency: default_install(),
            policy: PolicySpec::default(),
            node_threads: 0,
            telemetry: None,
            hosts: None,
            warmup: Time::ZERO,
        }
    }
}

impl ScrSpec {
    /// What is wrong with it, if anything: the `nic.scr` key and why.
    pub fn check(&self) -> Result<(), (String, String)> {
        let bad = |k: &str, why: String| Err((format!("nic.scr.{k}"), why));
        if self.threads == 0 || self.threads > 4096 {
            return bad("threads", format!("{} threads; a NIC has 1 to 4096", self.threads));
        }
        if self.clock_mhz == 0 {
            return bad("clock_mhz", "the core clock must be above 0 MHz".into());
        }
        if self.node_threads > 64 {
            return bad("node_threads", format!("{} node threads; a NIC has 0 to 64", self.node_threads));
        }
        if self.telemetry.is_some_and(|p| p < Time::from_ns(100)) {
            return bad("telemetry", "expected a period of at least 100ns (a ping-pong across PCIe takes about 1µs)".into());
        }
        if self.queue_depth == 0 {
            return bad("queue_depth", "a software ring needs at least one entry".into());
        }
        if self.threshold.0 == 0 {
            return bad("threshold", "expected at least 1 byte for a threshold queue to gather (0 parks nothing: that is `accumulate`)".into());
        }
        if self.hosts.as_ref().is_some_and(|h| h.is_empty()) {
            return bad("hosts", "no host listed; list the hosts whose NICs run SCR, or leave the key out for all".into());
        }
        if let Some(h) = self.hosts.as_ref().and_then(|h| h.iter().enumerate().find_map(|(i, x)| h[..i].contains(x).then_some(*x))) {
            return bad("hosts", format!("host {h} is listed twice"));
        }
        if self.coalescing == Coalescing::Hardware {
            for (k, s) in Kind::ALL.iter().zip(self.strategy.by_kind()) {
                if k.in_band() && matches!(s, Strategy::KeepLatest | Strategy::KeepOldest) {
                    return bad(
                        &format!("strategy.{}", k.name()),
                        format!("hardware coalescing only accumulates in-band events (SCR §4.3.2); \"{}\" needs coalescing = \"software\"", s.name()),
                    );
                }
            }
        }
        // A policy's own parameter check names its key under `nic.scr.policy.<name>`.
        let named = |name: &str, r: Result<(), (&'static str, String)>| r.map_err(|(k, why)| (format!("nic.scr.policy.{name}.{k}"), why));
        let fits = match &self.policy {
            PolicySpec::Passive(_) => context_fits::<passive::Passive>(),
            PolicySpec::Static(_) => context_fits::<static_share::StaticShare>(),
            PolicySpec::WaterFilling(p) => {
                if p.step.0 < 1_000_000 {
                    return bad("policy.water_filling.step", "the filling step must be at least 1Mbps".into());
                }
                if p.ewma == Time::ZERO {
                    return bad("policy.water_filling.ewma", "expected a positive time constant for the bandwidth average, such as \"20us\"".into());
                }
                // A flow's use can reach its rate, not pass it: a saturation mark above 1000 is
                // never met, so the flow would never fill.
                if p.saturated_permille == 0 || p.saturated_permille > 1000 {
                    return bad("policy.water_filling.saturated_permille", format!("expected a share of the rate in 1..=1000 per mille, got {}", p.saturated_permille));
                }
                if p.reclaim_permille >= p.saturated_permille {
                    return bad("policy.water_filling.reclaim_permille", format!("expected less than saturated_permille ({}), got {}", p.saturated_permille, p.reclaim_permille));
                }
                context_fits::<water_filling::WaterFilling>()
            }
            PolicySpec::Swift(p) => {
                named("swift", p.check())?;
                context_fits::<swift::Swift>()
            }
            PolicySpec::ReceiverDriven(p) => {
                named("receiver_driven", p.check())?;
                context_fits::<receiver_driven::ReceiverDriven>()
            }
            PolicySpec::Multipath(p) => {
                named("multipath", p.check())?;
                context_fits::<multipath::Multipath>()
            }
            PolicySpec::External(_) => Ok(()),
        };
        fits.map_err(|e| ("nic.scr.policy".to_string(), e))
    }

    /// A processor for a NIC of `line_rate`.
    pub fn build(&self, line_rate: BitsPerSec) -> Box<dyn ScrCore + Send> {
        let cfg = Config {
            threads: self.threads,
            node_threads: self.node_threads,
            clock_mhz: self.clock_mhz,
            hardware: self.coalescing == Coalescing::Hardware,
            depth: self.queue_depth,
            strategies: self.strategy.by_kind(),
            threshold: self.threshold.0,
            park_cycles: self.park_cycles,
            trigger_latency: self.trigger_latency,
            install_latency: self.install_latency,
            line_rate,
        };
        match &self.policy {
            PolicySpec::Passive(p) => Box::new(Processor::new(cfg, passive::Passive(p.clone()))),
            PolicySpec::Static(p) => Box::new(Processor::new(cfg, static_share::StaticShare(p.clone()))),
            PolicySpec::WaterFilling(p) => Box::new(Processor::new(cfg, water_filling::WaterFilling::new(p.clone()))),
            PolicySpec::Swift(p) => Box::new(Processor::new(cfg, swift::Swift::new(p.clone()))),
            PolicySpec::ReceiverDriven(p) => Box::new(Processor::new(cfg, receiver_driven::ReceiverDriven::new(p.clone()))),
            PolicySpec::Multipath(p) => Box::new(Processor::new(cfg, multipath::Multipath::new(p.clone()))),
            PolicySpec::External(p) => Box::new(Processor::new(cfg, external::External::new(p.clone()))),
        }
    }
}

/// SCR on a world's NICs: one processor per host and its timers.
pub struct Scr {
    /// Per host: its processor, if SCR runs on that host's NIC (`nic.scr.hosts`).
    pub cores: Vec<Option<Box<dyn ScrCore + Send>>>,
    /// Per host: the processor's timer, armed at its [`ScrCore::due`] (its threads and
    /// wake-ups keep their own timeline; the world hands it the time when a decision may take
    /// effect).
    pub timers: Vec<crate::sim::TimerId>,
    /// Per host: the telemetry collector's timer and its readings at the previous sample
    /// (`nic.scr.telemetry`; none without it).
    pub telemetry_timers: Vec<Option<crate::sim::TimerId>>,
    pub meters: Vec<telemetry::Meter>,
    /// Every sample taken, in time order (`scr_telemetry.parquet`).
    pub telemetry_log: Vec<telemetry::Row>,
    /// Every dequeue rate put in force, in time order (`scr_rates.parquet`).
    pub rate_log: Log<RateSet>,
    /// Every RTT probe answer the NICs collected, in time order (`scr_rtt.parquet`).
    pub rtt_log: Log<RttSample>,
    /// Per host: its node id (the logs name NICs by node).
    pub nodes: Vec<u32>,
    /// Per host: the processor's counters when the measurement window opened (what
    /// `summary.json` subtracts): zero from the start without `nic.scr.warmup`, none until a
    /// warmup is over.
    pub baseline: Vec<Option<stats::ScrStats>>,
}

impl Scr {
    /// Host `h`'s counters over the measurement window, which ends at `end`: all zero if it
    /// never opened. Thread time counts only the part of each run inside the window.
    pub fn window_stats(&self, h: usize, end: Time) -> Option<stats::ScrStats> {
        let c = self.cores[h].as_ref()?;
        let s = c.stats();
        let mut w = s.since(self.baseline[h].as_ref().unwrap_or(s));
        if self.baseline[h].is_some() {
            w.busy_ps = w.busy_ps.saturating_sub(c.busy_after(end));
        }
        Some(w)
    }
}

/// Rows kept for a table of the run, at most [`crate::output::MAX_RATE_ROWS`] of them.
#[derive(Debug)]
pub struct Log<T> {
    pub rows: Vec<T>,
    /// When the log stopped at its cap (the run's warnings say so).
    pub stopped_at: Option<crate::units::Time>,
}

impl<T> Default for Log<T> {
    fn default() -> Self {
        Log { rows: Vec::new(), stopped_at: None }
    }
}

impl<T> Log<T> {
    pub fn push(&mut self, at: crate::units::Time, row: T) {
        if self.rows.len() < crate::output::MAX_RATE_ROWS {
            self.rows.push(row);
        } else if self.stopped_at.is_none() {
            self.stopped_at = Some(at);
        }
    }

    /// The warning of a log that reached its cap.
    pub fn warning(&self, table: &str) -> Option<String> {
        self.stopped_at.map(|t| format!("nic.scr: {table} stops at {t}, where it reached its cap of {} rows", crate::output::MAX_RATE_ROWS))
    }
}

/// One rate installed: `time` is when it took effect (the decision plus `install_latency`).
/// The dequeue rates SCR's policies put in force are the trace of paper Fig. 9 and Fig. 16.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateSet {
    pub time: crate::units::Time,
    /// The NIC's host node.
    pub node: u32,
    pub qp: u32,
    pub bps: u64,
}

/// One RTT probe answer (paper A.7, Fig. 19): when it came back, on which NIC and queue pair,
/// the UDP source port (path) it took and its round trip.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RttSample {
    pub time: crate::units::Time,
    pub node: u32,
    pub qp: u32,
    pub sport: u16,
    pub rtt: crate::units::Time,
}
