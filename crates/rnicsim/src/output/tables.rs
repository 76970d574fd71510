//! Columnar tables of a finished run, written as Parquet (readable by DuckDB, polars, pandas).

use super::Recorder;
use crate::units::Time;
use crate::world::World;
use arrow_array::{ArrayRef, BooleanArray, Float64Array, RecordBatch, StringArray, UInt16Array, UInt32Array, UInt64Array, UInt8Array};
use parquet::arrow::ArrowWriter;
use std::path::Path;
use std::sync::Arc;

fn u64s(v: impl IntoIterator<Item = u64>) -> ArrayRef {
    Arc::new(UInt64Array::from_iter_values(v))
}
fn u32s(v: impl IntoIterator<Item = u32>) -> ArrayRef {
    Arc::new(UInt32Array::from_iter_values(v))
}
fn f64s(v: impl IntoIterator<Item = f64>) -> ArrayRef {
    Arc::new(Float64Array::from_iter_values(v))
}

/// A batch whose columns are nullable exactly when they hold nulls.
fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    RecordBatch::try_from_iter(columns).expect("columns of equal length")
}

/// A batch whose columns named in `nullable` are nullable, whatever they hold (a table written
/// in parts has one schema for all of them).
fn batch_with_nulls(columns: Vec<(&str, ArrayRef)>, nullable: &[&str]) -> RecordBatch {
    RecordBatch::try_from_iter_with_nullable(columns.into_iter().map(|(n, a)| (n, a, nullable.contains(&n)))).expect("columns of equal length")
}

/// Per-port counters (one row per egress port; its link is the one leaving it).
pub fn counters(w: &World) -> RecordBatch {
    let p = &w.ports;
    let secs = w.end.as_secs_f64();
    let c = |f: fn(&crate::fabric::port::PortCounters) -> u64| u64s(p.iter().map(|x| f(&x.counters)));
    batch(vec![
        ("port", u32s(0..p.len() as u32)),
        ("node", u32s(p.iter().map(|x| x.node))),
        ("node_kind", Arc::new(StringArray::from_iter_values(p.iter().map(|x| if w.is_switch(x.node) { "switch" } else { "host" })))),
        ("iface", u32s(p.iter().map(|x| x.iface))),
        ("peer_node", u32s(p.iter().map(|x| p[x.peer as usize].node))),
        ("rate_bps", u64s(p.iter().map(|x| x.rate.0))),
        ("delay_ps", u64s(w.links.iter().map(|l| l.delay.0))),
        ("tx_packets", c(|c| c.tx_packets)),
        ("tx_bytes", c(|c| c.tx_bytes)),
        ("utilization", f64s(p.iter().map(|x| x.tx_bytes_by(w.end) as f64 * 8.0 / (x.rate.0 as f64 * secs)))),
        ("drops_buffer", c(|c| c.drops_buffer)),
        ("drops_link_down", c(|c| c.drops_link_down)),
        ("drops_corrupt", c(|c| c.drops_corrupt)),
        ("ecn_marks", c(|c| c.ecn_marks)),
        ("pfc_pause_tx", c(|c| c.pause_tx)),
        ("pfc_resume_tx", c(|c| c.resume_tx)),
        ("pfc_pause_rx", c(|c| c.pause_rx)),
        ("pfc_resume_rx", c(|c| c.resume_rx)),
        ("paused_rx_ps", c(|c| c.paused_rx_ps)),
        ("paused_tx_ps", c(|c| c.paused_tx_ps)),
        ("max_queue_bytes", c(|c| c.max_queue_bytes)),
    ])
}

/// Every NIC transport event, in the order they happened (`outputs.nic_events`).
pub fn nic_events(log: &crate::nic::events::EventLog) -> RecordBatch {
    let r = &log.records;
    batch(vec![
        ("time_ps", u64s(r.iter().map(|e| e.at.0))),
        ("host", u32s(r.iter().map(|e| e.host))),
        ("qp", u32s(r.iter().map(|e| e.qp))),
        ("kind", Arc::new(StringArray::from_iter_values(r.iter().map(|e| e.kind)))),
        ("bytes", u64s(r.iter().map(|e| e.bytes))),
        ("rtt_ps", u64s(r.iter().map(|e| e.rtt.0))),
    ])
}

/// Per raw-traffic source delivery.
pub fn sources(w: &World) -> RecordBatch {
    let s = &w.apps.sources.list;
    let f = &w.apps.sources.stats;
    let secs = w.end.as_secs_f64();
    batch(vec![
        ("flow", u32s(0..s.len() as u32)),
        ("traffic", u32s(s.iter().map(|x| x.traffic))),
        ("src", u32s(s.iter().map(|x| x.src))),
        ("dst", u32s(s.iter().map(|x| x.dst))),
        ("priority", Arc::new(UInt8Array::from_iter_values(s.iter().map(|x| x.priority)))),
        ("udp_sport", Arc::new(UInt16Array::from_iter_values(s.iter().map(|x| x.udp_sport)))),
        ("packet_size", u32s(s.iter().map(|x| x.size))),
        ("tx_packets", u64s(s.iter().map(|x| x.sent_packets))),
        ("tx_bytes", u64s(s.iter().map(|x| x.sent_bytes))),
        ("rx_packets", u64s(f.iter().map(|x| x.rx_packets))),
        ("rx_bytes", u64s(f.iter().map(|x| x.rx_bytes))),
        ("first_rx_ps", u64s(f.iter().map(|x| x.first_rx.0))),
        ("last_rx_ps", u64s(f.iter().map(|x| x.last_rx.0))),
        ("latency_min_ps", u64s(f.iter().map(|x| if x.rx_packets == 0 { 0 } else { x.latency_min.0 }))),
        ("latency_mean_ps", u64s(f.iter().map(|x| if x.rx_packets == 0 { 0 } else { (x.latency_sum / x.rx_packets as u128) as u64 }))),
        ("latency_max_ps", u64s(f.iter().map(|x| x.latency_max.0))),
        ("ecn_ce", u64s(f.iter().map(|x| x.ecn_ce))),
        ("rx_gbps", f64s(f.iter().map(|x| x.rx_bytes as f64 * 8.0 / secs / 1e9))),
    ])
}

/// One row per RDMA flow of the flow workloads (those still in memory: all, unless the run
/// streamed them out).
pub fn flows(w: &World) -> RecordBatch {
    flows_batch(w.apps.flows.records.iter())
}

/// One row per flow of `f`.
pub fn flows_batch<'a>(f: impl Iterator<Item = &'a crate::world::FlowRecord> + Clone) -> RecordBatch {
    let fct = |r: &crate::world::FlowRecord| r.fct().map(|t| t.0);
    batch_with_nulls(vec![
        ("flow", u32s(f.clone().map(|r| r.id))),
        ("workload", u32s(f.clone().map(|r| r.workload))),
        ("src", u32s(f.clone().map(|r| r.src))),
        ("dst", u32s(f.clone().map(|r| r.dst))),
        ("size", u64s(f.clone().map(|r| r.size))),
        ("priority", Arc::new(UInt8Array::from_iter_values(f.clone().map(|r| r.priority)))),
        ("udp_sport", Arc::new(UInt16Array::from_iter_values(f.clone().map(|r| r.udp_sport)))),
        ("src_qp", u32s(f.clone().map(|r| r.qps.0))),
        ("dst_qp", u32s(f.clone().map(|r| r.qps.1))),
        ("start_ps", u64s(f.clone().map(|r| r.start.0))),
        ("finish_ps", Arc::new(UInt64Array::from_iter(f.clone().map(|r| (r.finish != Time::MAX).then_some(r.finish.0))))),
        ("fct_ps", Arc::new(UInt64Array::from_iter(f.clone().map(fct)))),
        ("ideal_fct_ps", u64s(f.clone().map(|r| r.ideal.0))),
        ("slowdown", Arc::new(Float64Array::from_iter(f.clone().map(|r| r.slowdown())))),
        ("status", Arc::new(StringArray::from_iter(f.clone().map(|r| r.status.map(|s| format!("{s:?}")))))),
        ("query", Arc::new(UInt32Array::from_iter(f.map(|r| r.query)))),
    ], &["finish_ps", "fct_ps", "slowdown", "status", "query"])
}

/// One row per perftest queue pair.
pub fn perftest(w: &World) -> RecordBatch {
    let mut rows: Vec<(u32, &crate::world::Perftest, usize)> = Vec::new();
    for (i, p) in w.apps.perftests.tests.iter().enumerate() {
        for q in 0..p.qps.len() {
            rows.push((i as u32, p, q));
        }
    }
    let lat = |p: &crate::world::Perftest, i: usize, q: f64| crate::output::summary::percentile(&p.latencies[i], q);
    let goodput: Vec<Vec<f64>> = w.apps.perftests.tests.iter().map(|p| p.qp_goodput_gbps(w.end)).collect();
    batch(vec![
        ("test", u32s(rows.iter().map(|r| r.0))),
        ("name", Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.1.spec.name.clone())))),
        ("kind", Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.1.spec.test.name())))),
        ("qp", u32s(rows.iter().map(|r| r.2 as u32))),
        ("client", u32s(rows.iter().map(|r| r.1.spec.client))),
        ("server", u32s(rows.iter().map(|r| r.1.spec.server))),
        // The NIC-side numbers, as `qp` in the rate, event and SCR tables.
        ("client_qp", u32s(rows.iter().map(|r| r.1.qps[r.2].0))),
        ("server_qp", u32s(rows.iter().map(|r| r.1.qps[r.2].1))),
        ("message", u64s(rows.iter().map(|r| r.1.messages[r.2]))),
        ("bytes", u64s(rows.iter().map(|r| r.1.bytes[r.2]))),
        ("completed_gbps", f64s(rows.iter().map(|r| r.1.qp_gbps(r.2, w.end)))),
        ("goodput_gbps", f64s(rows.iter().map(|r| goodput[r.0 as usize].get(r.2).copied().unwrap_or(0.0)))),
        ("latency_samples", u64s(rows.iter().map(|r| r.1.latencies[r.2].len() as u64))),
        ("latency_mean_ps", f64s(rows.iter().map(|r| crate::output::summary::mean(&r.1.latencies[r.2])))),
        ("latency_p50_ps", f64s(rows.iter().map(|r| lat(r.1, r.2, 0.5)))),
        ("latency_p99_ps", f64s(rows.iter().map(|r| lat(r.1, r.2, 0.99)))),
    ])
}

/// Queue-pair rate (and window) samples.
pub fn rates(r: &Recorder) -> RecordBatch {
    let l = &r.rates;
    batch(vec![
        ("time_ps", u64s(l.time.iter().copied())),
        ("qp", u32s(l.qp.iter().copied())),
        ("src", u32s(l.src.iter().copied())),
        ("dst", u32s(l.dst.iter().copied())),
        ("rate_bps", u64s(l.rate_bps.iter().copied())),
        ("window_bytes", Arc::new(UInt64Array::from(l.window.clone()))),
    ])
}

pub fn queues(r: &Recorder) -> RecordBatch {
    let q = &r.queues;
    batch(vec![
        ("time_ps", u64s(q.time.iter().copied())),
        ("node", u32s(q.node.iter().copied())),
        ("iface", u32s(q.iface.iter().copied())),
        ("port", u32s(q.port.iter().copied())),
        ("queue_bytes", u64s(q.bytes.iter().copied())),
        ("paused", Arc::new(BooleanArray::from(q.paused.clone()))),
        ("tx_bytes", u64s(q.tx_bytes.iter().copied())),
        ("drops", u64s(q.drops.iter().copied())),
        ("ecn_marks", u64s(q.ecn_marks.iter().copied())),
        ("paused_rx_ps", u64s(q.paused_rx_ps.iter().copied())),
        ("paused_tx_ps", u64s(q.paused_tx_ps.iter().copied())),
    ])
}

pub fn state_cache(r: &Recorder) -> RecordBatch {
    let l = &r.state_cache;
    batch(vec![
        ("time_ps", u64s(l.time.iter().copied())),
        ("node", u32s(l.node.iter().copied())),
        ("lookups", u64s(l.lookups.iter().copied())),
        ("hits", u64s(l.hits.iter().copied())),
        ("misses", u64s(l.misses.iter().copied())),
        ("stall_ps", u64s(l.stall_ps.iter().copied())),
        ("rx_drops", u64s(l.rx_drops.iter().copied())),
        ("rx_held_bytes", u64s(l.rx_held_bytes.iter().copied())),
        ("tx_held_bytes", u64s(l.tx_held_bytes.iter().copied())),
    ])
}

pub fn ordering(r: &Recorder) -> RecordBatch {
    let l = &r.ordering;
    batch(vec![
        ("time_ps", u64s(l.time.iter().copied())),
        ("node", u32s(l.node.iter().copied())),
        ("bytes", u64s(l.bytes.iter().copied())),
        ("bitmap_bytes", u64s(l.bitmap_bytes.iter().copied())),
        ("sacks", u64s(l.sacks.iter().copied())),
        ("nacks", u64s(l.nacks.iter().copied())),
    ])
}

/// One row per (sample, entity) of a `[yama]` run: the entity's application throughput over the
/// sample interval ending at `time_ps`.
pub fn yama_timeline(y: &crate::host::apps::Yama, spec: &crate::host::apps::yama::spec::YamaSpec) -> RecordBatch {
    let rows: Vec<(u64, usize, f64)> = y.timeline.iter().flat_map(|(t, row)| row.iter().enumerate().map(move |(e, g)| (t.0, e, *g))).collect();
    let names: Vec<&str> = rows.iter().map(|r| spec.entity[r.1].name.as_str()).collect();
    let chains: Vec<&str> = rows.iter().map(|r| spec.entity[r.1].chain.as_str()).collect();
    batch(vec![
        ("time_ps", u64s(rows.iter().map(|r| r.0))),
        ("entity", Arc::new(StringArray::from_iter_values(names))),
        ("chain", Arc::new(StringArray::from_iter_values(chains))),
        ("gbps", f64s(rows.iter().map(|r| r.2))),
    ])
}

/// One row per SCR telemetry sample (`nic.scr.telemetry`): per mille of the PCIe and port
/// rates over the period ending at `time_ps`, and the PCIe ping-pong's round trip.
pub fn scr_telemetry(rows: &[crate::nic::scr::telemetry::Row]) -> RecordBatch {
    batch(vec![
        ("time_ps", u64s(rows.iter().map(|r| r.at.0))),
        ("node", u32s(rows.iter().map(|r| r.node))),
        ("pcie_read_permille", u32s(rows.iter().map(|r| r.pcie_read_permille))),
        ("pcie_write_permille", u32s(rows.iter().map(|r| r.pcie_write_permille))),
        ("pcie_rtt_ps", u64s(rows.iter().map(|r| r.pcie_rtt.0))),
        ("port_tx_permille", u32s(rows.iter().map(|r| r.port_tx_permille))),
        ("port_rx_permille", u32s(rows.iter().map(|r| r.port_rx_permille))),
    ])
}

/// One row per dequeue rate an SCR policy put in force: when it took effect, the NIC's host
/// node, the queue pair and the rate.
pub fn scr_rates(log: &crate::nic::scr::Log<crate::nic::scr::RateSet>) -> RecordBatch {
    batch(vec![
        ("time_ps", u64s(log.rows.iter().map(|r| r.time.0))),
        ("node", u32s(log.rows.iter().map(|r| r.node))),
        ("qp", u32s(log.rows.iter().map(|r| r.qp))),
        ("rate_bps", u64s(log.rows.iter().map(|r| r.bps))),
    ])
}

/// One row per RTT probe answer an SCR NIC collected: when, the NIC's host node, the queue
/// pair, the UDP source port (path) the probe took and its round trip.
pub fn scr_rtt(log: &crate::nic::scr::Log<crate::nic::scr::RttSample>) -> RecordBatch {
    batch(vec![
        ("time_ps", u64s(log.rows.iter().map(|r| r.time.0))),
        ("node", u32s(log.rows.iter().map(|r| r.node))),
        ("qp", u32s(log.rows.iter().map(|r| r.qp))),
        ("sport", u32s(log.rows.iter().map(|r| r.sport as u32))),
        ("rtt_ps", u64s(log.rows.iter().map(|r| r.rtt.0))),
    ])
}

pub fn pfc(r: &Recorder) -> RecordBatch {
    pfc_batch(&r.pfc)
}

/// One row per PFC frame of `l`.
pub fn pfc_batch(l: &super::PfcLog) -> RecordBatch {
    batch(vec![
        ("time_ps", u64s(l.time.iter().copied())),
        ("node", u32s(l.node.iter().copied())),
        ("iface", u32s(l.iface.iter().copied())),
        ("class", Arc::new(UInt8Array::from_iter_values(l.class.iter().copied()))),
        ("kind", Arc::new(StringArray::from_iter_values(l.quanta.iter().map(|&q| if q == 0 { "resume" } else { "pause" })))),
        ("quanta", Arc::new(UInt16Array::from_iter_values(l.quanta.iter().copied()))),
    ])
}

/// Writes one table as a Parquet file.
pub fn write_parquet(path: &Path, batch: &RecordBatch) -> std::io::Result<()> {
    let file = std::fs::File::create(path)?;
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(super::stream::parquet_properties())).map_err(std::io::Error::other)?;
    w.write(batch).map_err(std::io::Error::other)?;
    w.close().map_err(std::io::Error::other)?;
    Ok(())
}
