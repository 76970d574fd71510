//! `summary.json` `yama`: throughput, fair and ideal shares, latency and overheads per entity;
//! estimate, dummy work and elections per chain; engine load; join/leave convergence.

use super::Yama;
use crate::units::Time;
use serde::Serialize;

/// `summary.json` `yama`: what every entity, chain and engine achieved over the measurement
/// window, beside what the policy gives.
#[derive(Clone, Debug, Serialize)]
pub struct YamaSummary {
    pub entities: Vec<EntitySummary>,
    pub chains: Vec<ChainSummary>,
    pub engines: Vec<EngineSummary>,
    /// Application work completed, all chains, Gbps.
    pub total_gbps: f64,
    /// Joins and leaves from the warmup on (not the starts at time 0), and the longest and mean time after one until every
    /// active entity of its chain stayed within `tolerance` of its fair share for three samples
    /// (µs; absent when none converged or none happened).
    pub changes: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub convergence_max_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub convergence_mean_us: Option<f64>,
    /// Joins and leaves that never converged before the next change or the end.
    pub unconverged: usize,
    /// Joins and leaves followed by another within four samples (not measured).
    pub superseded: usize,
    /// Operations the NIC refused to post (each is lost; 0 in a sane scenario).
    pub post_errors: u64,
    /// Operations on a NIC's own RDMA engine that completed in error (each is lost).
    pub op_errors: u64,
    /// Operations dropped at engines' full rings (each is lost); present when an engine has
    /// `ring`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ring_drops: Option<u64>,
    /// Dummy connections opened afresh after theirs failed.
    #[serde(skip_serializing_if = "is_zero")]
    pub dummy_reconnects: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct EntitySummary {
    pub name: String,
    pub chain: String,
    /// Its weight normalized over its chain's entities that are on (between `start` and `stop`),
    /// averaged over the measurement window.
    pub weight: f64,
    pub gbps: f64,
    /// The policy's share of what its chain got: weighted max-min of the chain's throughput over
    /// the entities that are on, an open-loop entity asking no more than its `load` (in each
    /// piece of the window between starts and stops, of what the chain completed in that piece,
    /// averaged over the pieces).
    pub fair_gbps: f64,
    /// gbps / fair_gbps; null when its fair share is 0 (it was never on, or asked nothing, in
    /// the window).
    pub fraction_of_fair: Option<f64>,
    /// What the policy gives it with the engines' capacities (nominal, times the `schedule`'s
    /// factor in force), every entity that is on
    /// asking for its `load` or, closed-loop, for all it can get (weighted max-min over the
    /// engines, Table 1; averaged like `fair_gbps`). Absent on a chain that is a
    /// NIC's own RDMA engine: its capacity is not a configured number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ideal_gbps: Option<f64>,
    pub mops: f64,
    /// Latency of its operations completed in the window; null when none did.
    pub latency_p50_us: Option<f64>,
    pub latency_p99_us: Option<f64>,
    /// Gbps from each of its `nodes`, in order.
    pub node_gbps: Vec<f64>,
    /// With a `baseline` entity: this entity's median and 99th percentile latency minus its.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_p50_overhead_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_p99_overhead_us: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ChainSummary {
    pub name: String,
    pub isolation: bool,
    /// Feedback loop period, µs; none where no loop runs (a vanilla chain, or one no entity
    /// uses).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period_us: Option<f64>,
    pub gbps: f64,
    pub dummy_gbps: f64,
    /// The estimate the leader last published, Gbps; none on a vanilla chain (no feedback loop).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimate_gbps: Option<f64>,
    /// The node of the instance that leads the loop; none on a vanilla chain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leader: Option<u32>,
    pub elections: u32,
}

#[derive(Clone, Debug, Serialize)]
pub struct EngineSummary {
    pub name: String,
    /// Work processed (application and dummy), Gbps, from the warmup on (as the chains and
    /// entities are measured).
    pub gbps: f64,
    /// Busy fraction from the warmup on.
    pub utilization: f64,
    pub host_trips: u64,
    /// Pieces dropped at its full rings; present when it has `ring`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dropped: Option<u64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Yama {
    pub fn summary(&self, end: Time) -> Option<YamaSummary> {
        let spec = self.spec.as_ref()?;
        if self.entities.len() < spec.entity.len() || self.policy.entities() < spec.entity.len() {
            // Not started: the entities join when the run begins (the summary of a built world
            // that has not run, which `paper_path_warnings` reads, has no Yama section yet).
            return None;
        }
        let window = end.saturating_sub(spec.warmup).as_secs_f64().max(1e-12);
        let gbps = |b: u64| b as f64 * 8.0 / window / 1e9;
        // Ideal shares: engine time per byte of each chain's mean work.
        let load: Vec<Vec<f64>> = self
            .chains
            .iter()
            .map(|c| {
                let mean = c.spec.mean_work() as f64;
                (0..self.engines.len()).map(|k| c.engines.iter().filter(|&&x| x == k).count() as f64 * self.engines[k].spec.nominal_cost(mean as u64) / 1e12 / mean).collect()
            })
            .collect();
        let shares = self.shares(end, &load);
        let entities = spec
            .entity
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let c = self.policy.chain_of(i);
                let got = gbps(self.entities[i].bytes);
                let (weight, fair, ideal) = shares[i];
                let fair = fair * 8.0 / 1e9;
                let lat = &self.entities[i].latencies;
                EntitySummary {
                    name: e.name.clone(),
                    chain: e.chain.clone(),
                    weight,
                    gbps: got,
                    fair_gbps: fair,
                    fraction_of_fair: (fair > 0.0).then(|| got / fair),
                    ideal_gbps: if spec.chain[c].is_nic_rdma() { None } else { Some(ideal * 8.0 / 1e9) },
                    mops: self.entities[i].ops as f64 / window / 1e6,
                    latency_p50_us: (!lat.is_empty()).then(|| crate::output::summary::percentile(lat, 0.5) / 1e6),
                    latency_p99_us: (!lat.is_empty()).then(|| crate::output::summary::percentile(lat, 0.99) / 1e6),
                    node_gbps: self.entities[i].by_node.iter().map(|&b| gbps(b)).collect(),
                    latency_p50_overhead_us: None,
                    latency_p99_overhead_us: None,
                }
            })
            .collect::<Vec<_>>();
        let mut entities = entities;
        for i in 0..entities.len() {
            if let Some(b) = spec.entity[i].baseline.as_ref().and_then(|b| spec.entity.iter().position(|x| &x.name == b)) {
                let (p50, p99) = (entities[b].latency_p50_us, entities[b].latency_p99_us);
                entities[i].latency_p50_overhead_us = entities[i].latency_p50_us.zip(p50).map(|(x, b)| x - b);
                entities[i].latency_p99_overhead_us = entities[i].latency_p99_us.zip(p99).map(|(x, b)| x - b);
            }
        }
        let chains = self
            .chains
            .iter()
            .map(|c| {
                let leader = (0..c.members.len()).find(|&m| c.overlay.runs_loop(m)).unwrap_or(c.overlay.leader_of(0));
                ChainSummary {
                    name: c.spec.name.clone(),
                    isolation: c.isolation,
                    period_us: (c.isolation && !c.members.is_empty()).then(|| c.period.0 as f64 / 1e6),
                    gbps: gbps(c.app_bytes),
                    dummy_gbps: gbps(c.dummy_bytes),
                    estimate_gbps: c.isolation.then(|| c.members.get(leader).map_or(0.0, |m| m.published.0 * 8.0 / 1e9)),
                    leader: c.members.get(leader).filter(|_| c.isolation).map(|m| m.node),
                    elections: c.overlay.elections(),
                }
            })
            .collect();
        let engines = self.engines.iter().map(|e| EngineSummary { name: e.spec.name.clone(), gbps: gbps(e.bytes), utilization: e.busy_by(end).as_secs_f64() / window, host_trips: e.host_trips, dropped: e.spec.ring.map(|_| e.dropped) }).collect();
        let (conv, unconverged, superseded) = self.convergence();
        Some(YamaSummary {
            entities,
            chains,
            engines,
            total_gbps: gbps(self.chains.iter().map(|c| c.app_bytes).sum()),
            changes: self.changes.len(),
            convergence_max_us: conv.iter().copied().reduce(f64::max),
            convergence_mean_us: if conv.is_empty() { None } else { Some(conv.iter().sum::<f64>() / conv.len() as f64) },
            unconverged,
            superseded,
            post_errors: self.post_errors,
            op_errors: self.op_errors,
            ring_drops: self.engines.iter().any(|e| e.spec.ring.is_some()).then_some(self.ring_drops),
            dummy_reconnects: self.dummy_reconnects,
        })
    }

    /// Each entity's share over the measurement window, averaged over the pieces of it in which
    /// the same entities are on (between `start` and `stop`): its weight normalized over its
    /// chain's entities that are on; its fair share of what its chain got (weighted max-min of
    /// the chain's throughput in that piece, an open-loop entity asking no more than its `load`); and
    /// its ideal share (weighted max-min over the engines' capacities in force in the piece (their
    /// `schedule`), `load` the chain's engine time per byte at nominal capacity; entities on a
    /// NIC's own RDMA engine take no part). Rates
    /// in bytes per second.
    fn shares(&self, end: Time, load: &[Vec<f64>]) -> Vec<(f64, f64, f64)> {
        let spec = self.spec.as_ref().expect("spec");
        let from = spec.warmup.min(end);
        let window = (end.0 - from.0).max(1) as f64;
        // Pieces end where an entity starts or stops and where an engine's capacity changes.
        let steps = self.engines.iter().flat_map(|e| e.spec.schedule.iter().map(|s| s.at));
        let mut cuts: Vec<Time> = spec.entity.iter().flat_map(|e| [Some(e.start), e.stop]).flatten().chain(steps).filter(|t| *t > from && *t < end).collect();
        cuts.extend([from, end]);
        cuts.sort_unstable();
        cuts.dedup();
        // Each chain's application bytes measured by time `t` (a cut: the window's ends, or a
        // join or leave, where the run noted them).
        let bytes_at = |c: usize, t: Time| -> Option<f64> {
            if t <= from {
                Some(0.0)
            } else if t >= end {
                Some(self.chains[c].app_bytes as f64)
            } else {
                self.changes.iter().rposition(|&x| x == t).map(|k| self.change_bytes[k][c] as f64)
            }
        };
        let mean_rate: Vec<f64> = self.chains.iter().map(|c| c.app_bytes as f64 / (window / 1e12)).collect();
        let mut out = vec![(0.0, 0.0, 0.0); spec.entity.len()];
        for piece in cuts.windows(2) {
            let (a, b) = (piece[0], piece[1]);
            let part = (b.0 - a.0) as f64 / window;
            // What each chain completed in this piece, per second: between the noted cuts around
            // it (a capacity step is a cut for the ideal shares only, no bytes are noted there),
            // the window's mean if there are none.
            let noted = |c: usize, t: Time| bytes_at(c, t).map(|x| (t, x));
            let chain_rate: Vec<f64> = (0..self.chains.len())
                .map(|c| {
                    let before = cuts.iter().rev().filter(|&&t| t <= a).find_map(|&t| noted(c, t));
                    let after = cuts.iter().filter(|&&t| t >= b).find_map(|&t| noted(c, t));
                    match (before, after) {
                        (Some((t0, x)), Some((t1, y))) if t1 > t0 => (y - x).max(0.0) / ((t1.0 - t0.0) as f64 / 1e12),
                        _ => mean_rate[c],
                    }
                })
                .collect();
            let on = |e: &super::spec::EntitySpec| e.on_between(a, b);
            let demand = |e: &super::spec::EntitySpec| if !on(e) { 0.0 } else { e.load.map_or(f64::INFINITY, |l| l.0 as f64 / 8.0) };
            let ask: Vec<::yama::Demand> = spec.entity.iter().enumerate().map(|(i, e)| ::yama::Demand { weight: e.weight, chain: self.policy.chain_of(i), demand: demand(e) }).collect();
            for (c, &rate) in chain_rate.iter().enumerate() {
                let mine: Vec<usize> = (0..ask.len()).filter(|&i| ask[i].chain == c).collect();
                let sum: f64 = mine.iter().filter(|&&i| on(&spec.entity[i])).map(|&i| ask[i].weight).sum();
                let local: Vec<::yama::Demand> = mine.iter().map(|&i| ::yama::Demand { chain: 0, ..ask[i] }).collect();
                let fair = if rate > 0.0 { ::yama::ideal_shares_by_load(&[vec![1.0 / rate]], &local) } else { vec![0.0; mine.len()] };
                for (k, &i) in mine.iter().enumerate() {
                    if on(&spec.entity[i]) {
                        out[i].0 += part * ask[i].weight / sum;
                    }
                    out[i].1 += part * fair[k];
                }
            }
            if !load.is_empty() {
                let ask: Vec<::yama::Demand> = ask.iter().map(|d| if spec.chain[d.chain].is_nic_rdma() { ::yama::Demand { demand: 0.0, ..*d } } else { *d }).collect();
                // Engine time per byte at the capacity in force in this piece.
                let load: Vec<Vec<f64>> = load.iter().map(|row| row.iter().enumerate().map(|(k, &x)| x / self.engines[k].factor(a)).collect()).collect();
                for (i, x) in ::yama::ideal_shares_by_load(&load, &ask).into_iter().enumerate() {
                    out[i].2 += part * x;
                }
            }
        }
        out
    }

    /// For each join or leave, µs until every active entity of its chain (of every chain that
    /// changed at that instant) is within the
    /// tolerance of its share of the chain's throughput for three samples running: weighted
    /// max-min, an open-loop entity asking no more than its `load`. An entity that asks less
    /// than its share is not judged (its rate is its own arrivals', noisy over a sample); the
    /// others share what it leaves. A sample in which the chain completed nothing while an
    /// entity that is on asks for work is not within the tolerance. A change followed by another on the same chain within four
    /// samples is superseded (not counted).
    fn convergence(&self) -> (Vec<f64>, usize, usize) {
        let Some(spec) = self.spec.as_ref() else { return (Vec::new(), 0, 0) };
        let mut out = Vec::new();
        let (mut never, mut superseded) = (0, 0);
        for &t in &self.changes {
            // The chains that changed at this instant, each judged; the next change on one of
            // them ends the wait (another chain's does not).
            let chains: Vec<usize> = (0..self.changes.len()).filter(|&j| self.changes[j] == t).map(|j| self.change_chain[j]).collect();
            let until = (0..self.changes.len()).find(|&j| self.changes[j] > t && chains.contains(&self.change_chain[j])).map_or(self.end, |j| self.changes[j]);
            if until.0 < t.0 + 4 * spec.sample.0 {
                superseded += 1;
                continue;
            }
            let rows: Vec<&(Time, Vec<f64>)> = self.timeline.iter().filter(|(at, _)| at.0 >= t.0 + spec.sample.0 && *at <= until).collect();
            let fair_chain = |c: usize, row: &Vec<f64>, at: Time| {
                let act: Vec<usize> = (0..spec.entity.len()).filter(|&e| self.policy.chain_of(e) == c && self.active_at(e, at)).collect();
                // The chain's throughput, a leaver's draining work included: judged only among
                // those still on, a lone survivor "converged" at once, before it had taken up
                // what the leaver freed.
                let total: f64 = (0..spec.entity.len()).filter(|&e| self.policy.chain_of(e) == c).map(|e| row[e]).sum();
                // Max-min over the chain's throughput, in Gbps; who asks for less is satisfied.
                let ask: Vec<::yama::Demand> = act.iter().map(|&e| ::yama::Demand { weight: spec.entity[e].weight, chain: 0, demand: spec.entity[e].load.map_or(f64::INFINITY, |l| l.0 as f64 / 1e9) }).collect();
                // A chain that completed nothing while an entity that is on asks for work has not
                // converged: every share of nothing is nothing, and an idle chain read as fair
                // (three idle samples after a leave counted as converged 40 µs after it, while
                // the survivor took up its share only 210 µs after it).
                if total <= 0.0 {
                    return ask.iter().all(|d| d.demand <= 0.0);
                }
                let share = ::yama::ideal_shares_by_load(&[vec![1.0 / total]], &ask);
                let satisfied: Vec<bool> = (0..act.len()).map(|i| ask[i].demand.is_finite() && share[i] >= ask[i].demand * (1.0 - 1e-9)).collect();
                let left = total - (0..act.len()).filter(|&i| satisfied[i]).map(|i| row[act[i]]).sum::<f64>();
                let wsum: f64 = (0..act.len()).filter(|&i| !satisfied[i]).map(|i| ask[i].weight).sum();
                (0..act.len()).filter(|&i| !satisfied[i]).all(|i| {
                    let fair = left * ask[i].weight / wsum;
                    (row[act[i]] - fair).abs() <= spec.tolerance * fair
                })
            };
            let fair_row = |row: &Vec<f64>, at: Time| chains.iter().all(|&c| fair_chain(c, row, at));
            let ok: Vec<bool> = rows.iter().map(|(at, row)| fair_row(row, *at)).collect();
            match (0..ok.len().saturating_sub(2)).find(|&i| ok[i] && ok[i + 1] && ok[i + 2]) {
                Some(i) => out.push((rows[i].0 - t).0 as f64 / 1e6),
                None => never += 1,
            }
        }
        (out, never, superseded)
    }

    /// Whether entity `e` was on for the whole sample ending at `at`.
    fn active_at(&self, e: usize, at: Time) -> bool {
        let spec = self.spec.as_ref().expect("spec");
        spec.entity[e].on_between(Time(at.0.saturating_sub(spec.sample.0)), at)
    }
}
