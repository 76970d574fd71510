//! What a scenario will cost, worked out before it runs: flows started and data packets sent,
//! from the workloads' arrival rates, sizes and active times. A run past `[limits]` is refused
//! with the estimate and the key that allows it (a 1-byte flow-size CDF at 25% load would start
//! billions of flows and never finish).

use super::World;
use crate::scenario::{LoadedScenario, ScenarioError};
use serde::Serialize;

/// The expected size of a run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Estimate {
    /// RDMA flows started (CDF workloads: expected arrivals; flow files: their flows).
    pub flows: f64,
    /// Data packets sent, first transmissions only (flows and raw traffic; perftests, NVMe-oF
    /// tenants and RPC servers at line rate).
    pub packets: f64,
}

impl World {
    /// The expected flows and packets of this run (means of the arrival processes).
    pub fn estimate(&self, loaded: &LoadedScenario) -> Estimate {
        let s = &loaded.scenario;
        let mtu = self.nic_spec.mtu.max(1) as f64;
        let packets_of = |bytes: f64| (bytes / mtu).ceil().max(1.0);
        let mut e = Estimate::default();
        let flows = &self.apps.flows;
        for g in &flows.gens {
            let spec = &s.flows[g.workload as usize];
            let active = g.stop.saturating_sub(spec.start).0 as f64;
            // A query generator's arrivals are queries, each bringing `fan_in` flows.
            let n = active / g.mean_gap_ps.max(1.0) * g.fan_in.max(1) as f64;
            let cdf = &flows.cdfs[g.cdf as usize];
            e.flows += n;
            e.packets += n * packets_of(cdf.mean());
        }
        for l in &flows.lists {
            e.flows += l.flows.len() as f64;
            e.packets += l.flows.iter().map(|f| packets_of(f.size as f64)).sum::<f64>();
        }
        for src in &self.apps.sources.list {
            let spec = &s.traffic[src.traffic as usize];
            let active = spec.stop.unwrap_or(s.duration).min(s.duration).saturating_sub(spec.start);
            let mut n = active.0 as f64 / src.gap.0.max(1) as f64;
            if let Some(b) = spec.bytes {
                n = n.min((b.0 as f64 / src.size.max(1) as f64).ceil());
            }
            e.packets += n;
        }
        // Closed-loop workloads: at most a link's rate for their active time, in packets of
        // their smallest message (a packet carries at most an MTU of it, plus headers).
        let header = crate::wire::roce::BASE_HEADER_BYTES as f64;
        let at_line = |host: u32, start: crate::units::Time, message: u64| {
            let rate = self.host_port(host).map_or(0, |port| self.ports[port as usize].rate.0) as f64;
            let active = s.duration.saturating_sub(start).as_secs_f64();
            rate * active / 8.0 / ((message.max(1) as f64).min(mtu) + header)
        };
        for p in &s.perftest {
            // Rate-limited queue pairs send at most their limits (wire bytes) together: a
            // 100 Kbps test for 48 s was refused as 1e10 packets at line rate.
            let limited = p.rate_limit.map(|r| r.0 as f64 * p.qps as f64 * s.duration.saturating_sub(p.start).as_secs_f64() / 8.0 / ((p.message.0.max(1) as f64).min(mtu) + header));
            let line = at_line(p.client, p.start, p.message.0).min(limited.unwrap_or(f64::INFINITY));
            e.packets += if p.test == crate::scenario::schema::PerftestKind::WriteLat {
                // A ping-pong: a message each way per round trip, which crosses the client's
                // link at least twice (its delay and the message's serialization each time).
                let Some(port) = self.host_port(p.client) else { continue };
                let wire = p.message.0.min(mtu as u64) + crate::wire::roce::BASE_HEADER_BYTES as u64;
                let one_way = self.links[port as usize].delay + self.ports[port as usize].rate.tx_time(wire);
                let rounds = s.duration.saturating_sub(p.start).0 as f64 / (2 * one_way.0).max(1) as f64;
                (rounds * 2.0 * packets_of(p.message.0 as f64)).min(line)
            } else {
                line
            };
        }
        for n in &s.nvmf {
            // The data crosses the initiator's link (in the command capsule, or READ from it).
            let data = if n.io.0 <= n.in_capsule.0 { crate::host::apps::nvmf::COMMAND_BYTES + n.io.0 } else { n.io.0 };
            e.packets += at_line(n.initiator, n.start, data);
        }
        for r in &s.rpc {
            // Requests in and replies out through the server's link.
            e.packets += at_line(r.server, crate::units::Time::ZERO, r.request.0) + at_line(r.server, crate::units::Time::ZERO, r.reply.0);
        }
        if let Some(y) = &s.yama {
            // Each chain's work (and the dummy work that fills it) crosses its server's link, in
            // pieces of its mean work, from its first entity's start (yama ran unestimated, so
            // no limit ever stopped it).
            for c in &y.chain {
                let Some(server) = c.server_of(&y.engine) else { continue };
                let Some(start) = y.entity.iter().filter(|e| e.chain == c.name).map(|e| e.start).min() else { continue };
                e.packets += at_line(server, start, c.mean_work());
            }
        }
        e
    }

    /// Refuses a run whose estimate passes the scenario's `[limits]`.
    pub(super) fn check_limits(&self, loaded: &LoadedScenario) -> Result<(), ScenarioError> {
        let limits = &loaded.scenario.limits;
        let e = self.estimate(loaded);
        let d = loaded.scenario.duration;
        if e.flows > limits.max_flows as f64 {
            return Err(loaded.error_at(
                "limits.max_flows",
                format!("the workloads would start about {:.3e} flows in {d} (limit {:.3e}); check the flow sizes and loads, or raise limits.max_flows if you mean it", e.flows, limits.max_flows as f64),
            ));
        }
        if e.packets > limits.max_packets as f64 {
            return Err(loaded.error_at(
                "limits.max_packets",
                format!("the workloads would send about {:.3e} data packets in {d} (limit {:.3e}, hours of simulation); check the loads and duration, or raise limits.max_packets if you mean it", e.packets, limits.max_packets as f64),
            ));
        }
        Ok(())
    }
}

