//! Totals of a finished run, written as `summary.json` and printed by the CLI.

use crate::world::World;
use crate::fabric::lb::{LbPolicy, LoadBalancer};
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct TrafficSummary {
    pub index: u32,
    pub senders: u32,
    pub tx_packets: u64,
    pub rx_packets: u64,
    /// Sum over senders of bytes sent × 8 / duration (below the configured load when the
    /// fabric pushes back).
    pub sent_gbps: f64,
    /// Sum over senders of bytes delivered × 8 / duration.
    pub delivered_gbps: f64,
    pub latency_mean_ns: f64,
    pub latency_max_ns: f64,
    /// Fraction of delivered packets that carried an ECN congestion mark.
    pub ecn_ce_fraction: f64,
}

/// What deflection did: packets sent out of another port because the buffer refused them at
/// theirs, and packets dropped with no time to live left.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct DeflectionSummary {
    pub deflected: u64,
    pub drops_ttl: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub name: String,
    pub seed: u64,
    pub duration_ps: u64,
    pub events: u64,
    pub packet_hops: u64,
    pub packets_sent: u64,
    pub packets_delivered: u64,
    pub drops_buffer: u64,
    pub drops_link_down: u64,
    pub drops_corrupt: u64,
    pub drops_unroutable: u64,
    /// Packets that reached a host other than their destination.
    pub drops_misdelivered: u64,
    pub ecn_marks: u64,
    pub pfc_pauses_sent: u64,
    pub pfc_frames_sent: u64,
    /// One row each in `pfc.parquet`.
    pub pfc_frames_received: u64,
    /// Port-seconds of pause, summed over ports and classes.
    pub paused_seconds: f64,
    pub max_queue_bytes: u64,
    pub peak_packets: u64,
    pub traffic: Vec<TrafficSummary>,
    /// RDMA NIC totals (flows, recovery, PCIe, connection state).
    pub rdma: RdmaSummary,
    pub perftest: Vec<PerftestSummary>,
    /// Per client host running bandwidth perftests: Jain's index over all its queue pairs.
    pub perftest_hosts: Vec<HostFairness>,
    /// SCR's counters, when `[nic.scr]` is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scr: Option<crate::nic::scr::stats::ScrSummary>,
    /// The NICs' connection-state caches, when `[nic.state_cache]` is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_cache: Option<crate::nic::state_cache::StateCacheSummary>,
    /// The NICs' ordering layers, when `[nic.ordering]` is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ordering: Option<crate::nic::ordering::OrderingSummary>,
    /// Switch deflection, when `switch.deflection` is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deflection: Option<DeflectionSummary>,
    /// What the switches' load balancer did, summed over switches, when it is ConWeave.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancing: Option<crate::fabric::lb::LbStats>,
    /// Entities sharing offload engines, when `[yama]` is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub yama: Option<crate::host::apps::yama::YamaSummary>,
    /// StaR connections: each NIC's stateful and stateless connections and packets, the
    /// security check's verdicts, resends.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub star: Option<crate::nic::star::StarSummary>,
    /// StaR's RPC and parameter-server workloads (`[[rpc]]`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rpc: Vec<crate::host::apps::rpc::RpcSummary>,
    /// NVMe-oF tenants (`[[nvmf]]`), and per initiator host their total and Jain's index.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nvmf: Vec<crate::host::apps::nvmf::NvmfSummary>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nvmf_hosts: Vec<crate::host::apps::nvmf::NvmfHost>,
    /// The summaries of the scenario's `[[baseline]]` variants, each named by its baseline.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub baselines: Vec<Summary>,
    /// The scenario's `[[paper]]` values with ours beside them.
    pub paper: Vec<super::paper::Comparison>,
    /// The scenario's `[[figure]]`s with our points (absent when it has none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub figures: Vec<super::paper::Figure>,
    /// Present only when the run stalled: nothing arrived for the last tenth of it (at least
    /// 100 µs) while work was pending.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stall: Option<crate::world::Stall>,
    /// The scenario's warnings: settings that ran but are unlikely to be what was meant, each
    /// naming its file, line and key (absent when there are none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct RdmaSummary {
    pub flows_started: u64,
    pub flows_completed: u64,
    pub flows_failed: u64,
    /// Of the completed flows (this and the four below): NaN, null in summary.json, when none
    /// completed.
    pub fct_mean_us: f64,
    /// The 99th percentile (nearest rank) of the completed flows' FCTs.
    pub fct_p99_us: f64,
    pub slowdown_mean: f64,
    pub slowdown_p50: f64,
    pub slowdown_p99: f64,
    pub retransmits: u64,
    pub timeouts: u64,
    /// Requests refused for want of a posted receive (RNR NAKs sent).
    pub rnr_naks: u64,
    /// Packets the NICs' schedulers fetched, and fetched then dropped (Tassel's filter).
    pub scheduler_fetches: u64,
    pub scheduler_dropped_fetches: u64,
    /// Scheduler decisions for queue pairs that had nothing to send.
    pub scheduler_wasted_picks: u64,
    /// Largest per-QP scheduler state on one NIC (Tassel: 32 B per QP slot).
    pub scheduler_state_bytes: u64,
    /// Most queue pairs open at once on one NIC, and the connection context that needs.
    pub peak_qps_per_nic: u32,
    pub peak_qp_context_bytes: u64,
    /// Mean PCIe utilization over NICs, read (NIC ← host) and write directions.
    pub pcie_read_utilization: f64,
    pub pcie_write_utilization: f64,
    /// The receive buffers PCIe drains (`nic.rx_buffer`): the most one held, arrivals dropped
    /// for want of room, and PAUSE frames sent for them (refreshes included; pause mode).
    pub rx_buffer_peak_bytes: u64,
    pub rx_buffer_drops: u64,
    pub rx_buffer_pauses: u64,
    /// Mean utilization of the GPUs' peer-to-peer paths (`[nic.gpu]`, GPUDirect RDMA) each way.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_read_utilization: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_write_utilization: Option<f64>,
    /// Of the completed flows, those a link failure met while they ran (scenarios with link
    /// events or `[failures]` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub met_failure: Option<FailureFlows>,
    /// Completed flows by size (`outputs.fct_by_size`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub by_size: Vec<crate::host::apps::flows::SizeBucket>,
    /// Query completion times (query workloads only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queries: Option<crate::host::apps::flows::QuerySummary>,
}

/// Completed flows that a link went down during.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct FailureFlows {
    pub flows: u64,
    pub fct_mean_us: f64,
    pub slowdown_mean: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct PerftestSummary {
    pub name: String,
    pub test: String,
    /// The message size; with `message_max`, the smallest of the sizes drawn.
    pub message: u64,
    /// The largest message when sizes are drawn uniformly from [`message`, `message_max`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_max: Option<u64>,
    pub qps: u32,
    /// Payload sent in the measurement window (queue-pair counters).
    pub gbps: f64,
    /// Payload of messages completed in the window (perftest's measure).
    pub completed_gbps: f64,
    /// Bytes on the wire in the data direction (headers included).
    pub wire_gbps: f64,
    pub mpps: f64,
    /// Messages completed in the window, in millions per second.
    pub mops: f64,
    /// Over the messages completed in the window; null if none did.
    pub latency_mean_us: Option<f64>,
    pub latency_p99_us: Option<f64>,
    /// Jain's fairness index over the queue pairs' goodputs (1 for one queue pair); null if
    /// none carried any.
    pub jain: Option<f64>,
    pub errors: u64,
}

/// The bandwidth queue pairs of every perftest whose client is one host (SCR's tenants).
#[derive(Clone, Debug, Serialize)]
pub struct HostFairness {
    /// `host <node>`.
    pub name: String,
    pub qps: u32,
    /// Their goodput together, and Jain's index over each one's.
    pub gbps: f64,
    /// Messages they completed in the window, in millions per second.
    pub mops: f64,
    /// Null if no queue pair carried anything.
    pub jain: Option<f64>,
    /// Jain's index over the tests (tenants): each test's goodput summed over its queue pairs.
    pub jain_tests: Option<f64>,
}

/// The `q`-quantile of samples (nearest rank), 0 if none.
pub fn percentile(v: &[crate::units::Time], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s: Vec<u64> = v.iter().map(|t| t.0).collect();
    s.sort_unstable();
    s[super::stream::nearest_rank(s.len(), q)] as f64
}

pub fn mean(v: &[crate::units::Time]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.iter().map(|t| t.0 as f64).sum::<f64>() / v.len() as f64
}

fn rdma(world: &World) -> std::io::Result<RdmaSummary> {
    let finished = world.apps.flows.finished()?;
    let n = world.nics.len().max(1) as f64;
    let pcie: Vec<[f64; 2]> = world.nics.iter().map(|n| n.pcie.utilization(world.end)).collect();
    let gpu: Vec<[f64; 2]> = world.nics.iter().filter_map(|n| n.gpu.as_ref()).map(|p| p.utilization(world.end)).collect();
    let mean = |u: &[[f64; 2]], k: usize| u.iter().map(|x| x[k]).sum::<f64>() / n;
    let peak = world.nics.iter().map(|n| n.peak_qps).max().unwrap_or(0);
    // Figures of the completed flows: none (NaN, null in summary.json) when none completed, not
    // 0 (a slowdown below 1 cannot be, and a 0 averaged into a sweep's table skews it).
    let of_done = |done: u64, v: f64| if done == 0 { f64::NAN } else { v };
    let d = finished.totals.done;
    Ok(RdmaSummary {
        flows_started: world.apps.flows.started(),
        flows_completed: world.stats.flows_completed,
        flows_failed: world.stats.flows_failed,
        fct_mean_us: of_done(d, finished.totals.fct_mean_ps() / 1e6),
        fct_p99_us: of_done(d, finished.fct_p99_ps / 1e6),
        slowdown_mean: of_done(d, finished.totals.slowdown_mean()),
        slowdown_p50: of_done(d, finished.slowdown_p50),
        slowdown_p99: of_done(d, finished.slowdown_p99),
        retransmits: world.nics.iter().map(|n| n.retransmits).sum(),
        timeouts: world.nics.iter().map(|n| n.timeouts).sum(),
        rnr_naks: world.nics.iter().map(|n| n.rnr_naks).sum(),
        scheduler_wasted_picks: world.nics.iter().map(|n| n.wasted_picks).sum(),
        scheduler_state_bytes: world.nics.iter().map(|n| crate::nic::sched::QpScheduler::state_bytes(&n.sched)).max().unwrap_or(0),
        scheduler_fetches: world.nics.iter().map(|n| crate::nic::sched::QpScheduler::fetch_stats(&n.sched).0).sum(),
        scheduler_dropped_fetches: world.nics.iter().map(|n| crate::nic::sched::QpScheduler::fetch_stats(&n.sched).1).sum(),
        peak_qps_per_nic: peak,
        peak_qp_context_bytes: peak as u64 * world.nic_spec.qp_context_bytes as u64,
        pcie_read_utilization: mean(&pcie, 0),
        pcie_write_utilization: mean(&pcie, 1),
        rx_buffer_peak_bytes: world.nics.iter().map(|n| n.rx.peak).max().unwrap_or(0),
        rx_buffer_drops: world.nics.iter().map(|n| n.rx.drops).sum(),
        rx_buffer_pauses: world.nics.iter().map(|n| n.rx.pauses_sent).sum(),
        gpu_read_utilization: world.nic_spec.gpu.map(|_| mean(&gpu, 0)),
        gpu_write_utilization: world.nic_spec.gpu.map(|_| mean(&gpu, 1)),
        queries: world.apps.flows.query_summary(),
        by_size: world.apps.flows.by_size(),
        met_failure: (!world.link_events.is_empty()).then(|| FailureFlows {
            flows: finished.met_failure.done,
            fct_mean_us: of_done(finished.met_failure.done, finished.met_failure.fct_mean_ps() / 1e6),
            slowdown_mean: of_done(finished.met_failure.done, finished.met_failure.slowdown_mean()),
        }),
    })
}

/// `goodput[t]`: each queue pair's goodput of perftest `t`.
fn host_fairness(world: &World, goodput: &[Vec<f64>]) -> Vec<HostFairness> {
    use crate::scenario::schema::PerftestKind;
    let tests: Vec<_> = world.apps.perftests.tests.iter().zip(goodput).filter(|(p, _)| p.spec.test != PerftestKind::WriteLat).collect();
    let mut clients: Vec<u32> = tests.iter().map(|(p, _)| p.spec.client).collect();
    clients.sort_unstable();
    clients.dedup();
    clients
        .into_iter()
        .map(|c| {
            let mine = tests.iter().filter(|(p, _)| p.spec.client == c);
            let per_qp: Vec<f64> = mine.clone().flat_map(|(_, g)| g.iter().copied()).collect();
            let mops = mine.clone().map(|(p, _)| p.mops(world.end)).sum();
            let per_test: Vec<f64> = mine.map(|(_, g)| g.iter().sum()).collect();
            HostFairness { name: format!("host {c}"), qps: per_qp.len() as u32, gbps: per_qp.iter().sum(), mops, jain: crate::nic::scr::stats::jain_reported(&per_qp), jain_tests: crate::nic::scr::stats::jain_reported(&per_test) }
        })
        .collect()
}

fn state_cache(world: &World) -> Option<crate::nic::state_cache::StateCacheSummary> {
    use crate::nic::state_cache::{CacheCounters, NamedCounters, StateCacheSummary};
    let spec = world.nic_spec.state_cache.as_ref()?;
    let mut out = StateCacheSummary { entries: spec.entries(world.nic_spec.qp_context_bytes), ..Default::default() };
    for (h, nic) in world.nics.iter().enumerate() {
        let Some(st) = &nic.state else { continue };
        let c = CacheCounters::of(st, world.end);
        out.total.add(&c);
        if c.lookups > 0 {
            out.per_nic.push(NamedCounters { name: format!("host {}", world.host_nodes()[h]), counters: c });
        }
    }
    Some(out)
}

fn ordering(world: &World) -> Option<crate::nic::ordering::OrderingSummary> {
    use crate::nic::ordering::{NamedOrdering, OrderingSummary};
    let spec = world.nic_spec.ordering.as_ref()?;
    let layer = spec.layer.name().to_string();
    let mut out = OrderingSummary { layer, ..Default::default() };
    for (h, nic) in world.nics.iter().enumerate() {
        let Some(o) = &nic.ordering else { continue };
        let c = o.counters(world.end);
        out.total.add(&c);
        // Every NIC the layer saw anything on (a sender's open connections hold metadata
        // too), so that the total is the sum of the NICs listed.
        if c.in_order + c.sacks + c.nacks + c.duplicates + c.peak_bytes > 0 || c.mean_connections > 0.0 {
            out.per_nic.push(NamedOrdering { name: format!("host {}", world.host_nodes()[h]), counters: c });
        }
    }
    Some(out)
}

fn scr(world: &World) -> Option<crate::nic::scr::stats::ScrSummary> {
    let scr = world.tap.scr.as_ref()?;
    let first = scr.cores.iter().flatten().next()?;
    // Counters over the window after `nic.scr.warmup` (the whole run without one).
    let windows: Vec<_> = (0..scr.cores.len()).map(|h| scr.window_stats(h, world.end)).collect();
    let mut total = crate::nic::scr::stats::ScrStats::default();
    for w in windows.iter().flatten() {
        total.add(w);
    }
    let warmup = world.nic_spec.scr.as_ref().map_or(crate::units::Time::ZERO, |s| s.warmup);
    let secs = world.end.saturating_sub(warmup).as_secs_f64();
    let mut rtt_probes = crate::nic::scr::stats::PathRtt::per_node(scr.rtt_log.rows.iter().map(|r| (r.node, r.sport, r.rtt)));
    // NICs whose processor saw events or took telemetry samples (the others idled).
    let per_nic: Vec<_> = scr
        .cores
        .iter()
        .zip(&windows)
        .enumerate()
        .filter_map(|(h, (c, w))| Some((h, c.as_ref()?, w.as_ref()?)))
        .filter(|(_, c, _)| c.stats().collected.iter().sum::<u64>() > 0 || c.stats().telemetry.port_samples > 0)
        .map(|(h, c, w)| {
            let node = world.host_nodes()[h];
            let mut nic = crate::nic::scr::stats::NicScrSummary::new(format!("host {node}"), w, secs, c.report());
            nic.rtt_probes = rtt_probes.remove(&node).unwrap_or_default();
            nic
        })
        .collect();
    // Thread utilization is over the NICs whose processors worked: a NIC that only took
    // telemetry samples its policy never asked for did none (it halved the figure).
    // (Judged over the same window as the busy time: a NIC idle after the warmup is left out.)
    let active = windows.iter().flatten().filter(|w| w.collected.iter().sum::<u64>() > 0 || w.busy_ps > 0).count().max(1) as u32;
    Some(crate::nic::scr::stats::ScrSummary::new(first.policy_name(), active, first.threads(), first.all_threads(), first.context_bytes(), &total, secs, per_nic))
}

impl Summary {
    /// The summary of a world whose flows are in memory (not streamed: no file is read).
    pub fn of(world: &World, name: &str) -> Summary {
        Summary::try_of(world, name).expect("a world that streamed nothing reads no file")
    }

    /// The summary of any world; a streamed run reads its spilled slowdowns back.
    pub fn try_of(world: &World, name: &str) -> std::io::Result<Summary> {
        let sum = |f: fn(&crate::fabric::port::PortCounters) -> u64| world.ports.iter().map(|p| f(&p.counters)).sum::<u64>();
        let secs = world.end.as_secs_f64();
        let n_traffic = world.apps.sources.list.iter().map(|s| s.traffic + 1).max().unwrap_or(0);
        let traffic = (0..n_traffic)
            .map(|t| {
                let members = || world.apps.sources.list.iter().zip(&world.apps.sources.stats).filter(move |(s, _)| s.traffic == t);
                let rx_packets: u64 = members().map(|(_, f)| f.rx_packets).sum();
                let lat_sum: u128 = members().map(|(_, f)| f.latency_sum).sum();
                TrafficSummary {
                    index: t,
                    senders: members().count() as u32,
                    tx_packets: members().map(|(s, _)| s.sent_packets).sum(),
                    rx_packets,
                    sent_gbps: members().map(|(s, _)| s.sent_bytes).sum::<u64>() as f64 * 8.0 / secs / 1e9,
                    delivered_gbps: members().map(|(_, f)| f.rx_bytes).sum::<u64>() as f64 * 8.0 / secs / 1e9,
                    latency_mean_ns: if rx_packets == 0 { 0.0 } else { lat_sum as f64 / rx_packets as f64 / 1e3 },
                    latency_max_ns: members().map(|(_, f)| f.latency_max.0).max().unwrap_or(0) as f64 / 1e3,
                    ecn_ce_fraction: if rx_packets == 0 { 0.0 } else { members().map(|(_, f)| f.ecn_ce).sum::<u64>() as f64 / rx_packets as f64 },
                }
            })
            .collect();
        let goodput: Vec<Vec<f64>> = world.apps.perftests.tests.iter().map(|p| p.qp_goodput_gbps(world.end)).collect();
        let nvmf = world.apps.nvmf.summary(world);
        Ok(Summary {
            name: name.to_string(),
            seed: world.seed,
            duration_ps: world.end.0,
            events: world.stats.events,
            packet_hops: world.stats.packet_hops,
            packets_sent: world.stats.packets_sent,
            packets_delivered: world.stats.packets_delivered,
            drops_buffer: sum(|c| c.drops_buffer),
            drops_link_down: sum(|c| c.drops_link_down),
            drops_corrupt: sum(|c| c.drops_corrupt),
            drops_unroutable: world.stats.drops_unroutable,
            drops_misdelivered: world.stats.drops_misdelivered,
            ecn_marks: sum(|c| c.ecn_marks),
            pfc_pauses_sent: sum(|c| c.pause_tx),
            pfc_frames_sent: world.stats.pfc_frames_sent,
            pfc_frames_received: world.stats.pfc_frames_received,
            paused_seconds: sum(|c| c.paused_rx_ps) as f64 / 1e12,
            max_queue_bytes: world.ports.iter().map(|p| p.counters.max_queue_bytes).max().unwrap_or(0),
            peak_packets: world.stats.peak_packets,
            traffic,
            rdma: rdma(world)?,
            perftest: world
                .apps
                .perftests
                .tests
                .iter()
                .zip(&goodput)
                .map(|(p, goodput)| (p, goodput, p.all_latencies()))
                .map(|(p, goodput, lat)| PerftestSummary {
                    name: p.spec.name.clone(),
                    test: p.spec.test.name().to_string(),
                    message: p.spec.message.0,
                    message_max: p.spec.message_max.map(|m| m.0).filter(|&m| m > p.spec.message.0),
                    qps: p.qps.len() as u32,
                    gbps: p.gbps(world.end),
                    completed_gbps: p.completed_gbps(world.end),
                    wire_gbps: p.wire_gbps(world.end),
                    mpps: p.mpps(world.end),
                    mops: p.mops(world.end),
                    latency_mean_us: (!lat.is_empty()).then(|| mean(&lat) / 1e6),
                    latency_p99_us: (!lat.is_empty()).then(|| percentile(&lat, 0.99) / 1e6),
                    jain: crate::nic::scr::stats::jain_reported(goodput),
                    errors: p.errors,
                })
                .collect(),
            perftest_hosts: host_fairness(world, &goodput),
            scr: scr(world),
            state_cache: state_cache(world),
            ordering: ordering(world),
            // Packets can run out of time to live without deflection too (a detour loop).
            deflection: (world.switches.iter().any(|s| s.deflect.is_some()) || world.stats.drops_ttl > 0).then_some(DeflectionSummary { deflected: world.stats.deflected, drops_ttl: world.stats.drops_ttl }),
            load_balancing: world.switches.iter().any(|s| matches!(s.lb, LbPolicy::ConWeave(_))).then(|| {
                let mut total = crate::fabric::lb::LbStats::default();
                for s in &world.switches {
                    total += s.lb.stats();
                }
                total
            }),
            yama: world.apps.yama.summary(world.end),
            star: crate::nic::star::StarSummary::of(&world.nics, world.nic_spec.star.unwrap_or_default().security),
            rpc: world.apps.rpc.summary(world),
            nvmf_hosts: crate::host::apps::nvmf::hosts(&nvmf),
            nvmf,
            baselines: Vec::new(),
            paper: Vec::new(),
            figures: Vec::new(),
            stall: world.stall(),
            warnings: Vec::new(),
        })
    }

    /// Fills in the scenario's `[[paper]]` comparisons and `[[figure]]` points from this
    /// summary's own values.
    pub fn compare_with(&mut self, scenario: &crate::scenario::Scenario) {
        let v = serde_json::to_value(&*self).expect("a summary serializes");
        self.paper = super::paper::compare(&v, &scenario.paper);
        self.figures = super::paper::figures(&v, &scenario.figure);
    }
}
