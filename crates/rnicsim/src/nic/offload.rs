//! Black-box offload engines on a NIC (Yama §2, §6.1): NAT (cost per packet), AES (per byte), a
//! key-value cache (per request; a GET whose key is cached is answered on the NIC, a miss or a PUT
//! also waits for the host), and the RDMA engine (per operation). An engine serves work first come
//! first served (no isolation of its own, the "vanilla" offload) at a throughput that may change
//! over time ([`CapacityStep`]s), and chains of engines pass work from one to the next. Nothing
//! outside may read an engine's capacity: libYama only sees what it posted and what completed.
//! `[[yama.engine]]` in a scenario.

use crate::units::{BitsPerSec, Time};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// From time `at` on, the engine runs at `factor` × its nominal throughput.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapacityStep {
    pub at: Time,
    pub factor: f64,
}

/// One engine: a cost per operation and per byte, on one host's NIC.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineSpec {
    pub name: String,
    /// The host whose NIC has it.
    pub host: u32,
    /// Operations per second at most, in millions (a per-operation cost), if limited so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mops: Option<f64>,
    /// Bytes of work per second at most (a per-byte cost), if limited so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gbps: Option<BitsPerSec>,
    /// Changes of throughput over time (capacity schedule).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schedule: Vec<CapacityStep>,
    /// A key-value cache: keys `0..cached_keys` are held on the NIC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_keys: Option<u32>,
    /// A key-value cache: what a miss (or a PUT) waits for the host, after the engine.
    #[serde(default = "default_host_time")]
    pub host_time: Time,
    /// How waiting work is picked: `per_queue` (round robin over source queues) or `fcfs`.
    #[serde(default)]
    pub discipline: Discipline,
    /// Bounded rings: at most this many pieces wait per source queue (`per_queue`) or in all
    /// (`fcfs`); a piece that finds its ring full is dropped. Unbounded if unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ring: Option<u32>,
}

fn default_host_time() -> Time {
    Time::from_ns(2000)
}

impl EngineSpec {
    pub fn check(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if self.mops.is_none() && self.gbps.is_none() {
            out.push(("mops", "an engine needs a throughput: mops (operations) or gbps (bytes), or both".into()));
        }
        if let Some(m) = self.mops {
            if !(m >= 1e-6 && m.is_finite()) {
                out.push(("mops", format!("expected a positive number of millions of operations per second (at least 1e-6), got {m}")));
            }
        }
        if self.gbps.is_some_and(|g| g.0 == 0) {
            out.push(("gbps", "expected a positive rate such as \"10Gbps\", got 0".into()));
        }
        if self.schedule.iter().any(|s| !(s.factor >= 1e-6 && s.factor <= 1e6)) {
            out.push(("schedule", "every factor must be between 1e-6 and 1e6".into()));
        }
        if self.schedule.windows(2).any(|w| w[1].at < w[0].at) {
            out.push(("schedule", "steps must be in time order".into()));
        }
        if self.ring == Some(0) {
            out.push(("ring", "a ring holds at least one piece (leave the key out for an unbounded one)".into()));
        }
        out
    }

    /// Picoseconds of engine time for one operation of `bytes` at nominal speed.
    pub fn nominal_cost(&self, bytes: u64) -> f64 {
        let per_op = self.mops.map_or(0.0, |m| 1e6 / m);
        let per_byte = self.gbps.map_or(0.0, |g| 8e12 / g.0 as f64);
        per_op + per_byte * bytes as f64
    }
}

/// What one piece of work asks of an engine.
#[derive(Clone, Copy, Debug)]
pub struct Work {
    pub bytes: u64,
    /// Key-value requests: the key, and whether it writes.
    pub key: Option<u32>,
    pub put: bool,
}

/// How an engine picks the next piece of work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Discipline {
    /// Round robin over the queues work comes from, one piece per turn (a NIC's queue-pair
    /// scheduler, a software NIC polling its rings).
    #[default]
    PerQueue,
    /// One queue, first come first served.
    Fcfs,
}

/// What became of a piece that reached an engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// The engine was idle: it is in service, done at this time.
    Started(Time),
    /// It waits in its ring.
    Queued,
    /// Its ring was full: it is lost.
    Dropped,
}

/// A running engine: its queues, the piece in service and its counters.
#[derive(Clone, Debug)]
pub struct Engine {
    pub spec: EngineSpec,
    /// Per source queue, the pieces waiting (item id and work).
    waiting: Vec<VecDeque<(u32, Work)>>,
    /// Source queues with work, in round-robin order.
    ready: VecDeque<u32>,
    in_service: Option<(u32, Work)>,
    pub ops: u64,
    /// Bytes of the pieces started since the measurement's start (`measure_from`, a run's
    /// warmup; 0 unless set), and their service time since then (see [`Self::busy_by`]).
    pub bytes: u64,
    pub busy: Time,
    measure_from: Time,
    /// When the last piece started is done.
    service_end: Time,
    pub host_trips: u64,
    /// Most pieces waiting at once.
    pub peak_waiting: u64,
    waiting_now: u64,
    /// Pieces dropped at a full ring.
    pub dropped: u64,
}

impl Engine {
    pub fn new(spec: EngineSpec) -> Engine {
        Engine::measured_from(spec, Time(0))
    }

    /// An engine whose `bytes` and `busy` count from `from` on.
    pub fn measured_from(spec: EngineSpec, from: Time) -> Engine {
        Engine { spec, waiting: Vec::new(), ready: VecDeque::new(), in_service: None, ops: 0, bytes: 0, busy: Time(0), measure_from: from, service_end: Time(0), host_trips: 0, peak_waiting: 0, waiting_now: 0, dropped: 0 }
    }

    /// The throughput factor in force at `t`.
    pub fn factor(&self, t: Time) -> f64 {
        self.spec.schedule.iter().rev().find(|s| s.at <= t).map_or(1.0, |s| s.factor)
    }

    fn start(&mut self, now: Time, item: u32, w: Work) -> Time {
        let cost = Time((self.spec.nominal_cost(w.bytes) / self.factor(now)).round().max(1.0) as u64);
        self.in_service = Some((item, w));
        self.ops += 1;
        self.service_end = now + cost;
        if now >= self.measure_from {
            self.bytes += w.bytes;
        }
        if self.service_end > self.measure_from {
            self.busy += cost.saturating_sub(self.measure_from.saturating_sub(now));
        }
        now + cost
    }

    /// Time spent serving from the measurement's start up to `end`: a piece still in service
    /// counts up to `end` only.
    pub fn busy_by(&self, end: Time) -> Time {
        self.busy.saturating_sub(self.service_end.saturating_sub(end.max(self.measure_from)))
    }

    /// Piece `item` arrives at `now` from source queue `from`: it starts at once if the engine
    /// was idle, waits in its ring, or is dropped if the ring is full.
    pub fn arrive(&mut self, now: Time, from: u32, item: u32, w: Work) -> Arrival {
        if self.in_service.is_none() {
            return Arrival::Started(self.start(now, item, w));
        }
        let q = match self.spec.discipline {
            Discipline::PerQueue => from as usize,
            Discipline::Fcfs => 0,
        };
        if self.waiting.len() <= q {
            self.waiting.resize_with(q + 1, VecDeque::new);
        }
        if self.spec.ring.is_some_and(|r| self.waiting[q].len() >= r as usize) {
            self.dropped += 1;
            return Arrival::Dropped;
        }
        if self.waiting[q].is_empty() {
            self.ready.push_back(q as u32);
        }
        self.waiting[q].push_back((item, w));
        self.waiting_now += 1;
        self.peak_waiting = self.peak_waiting.max(self.waiting_now);
        Arrival::Queued
    }

    /// The piece in service leaves at `now`: it, whether it goes to the host too (a key-value
    /// miss or PUT), and the next piece started with its done time, if any was waiting.
    pub fn depart(&mut self, now: Time) -> ((u32, Work), bool, Option<(u32, Time)>) {
        let done = self.in_service.take().expect("a piece in service");
        let to_host = match (self.spec.cached_keys, done.1.key) {
            (Some(cached), Some(k)) => done.1.put || k >= cached,
            _ => false,
        };
        if to_host {
            self.host_trips += 1;
        }
        let mut next = None;
        if let Some(q) = self.ready.pop_front() {
            let (item, w) = self.waiting[q as usize].pop_front().expect("a ready queue has work");
            if !self.waiting[q as usize].is_empty() {
                self.ready.push_back(q);
            }
            self.waiting_now -= 1;
            next = Some((item, self.start(now, item, w)));
        }
        (done, to_host, next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(mops: Option<f64>, gbps: Option<u64>) -> EngineSpec {
        EngineSpec { name: "e".into(), host: 0, mops, gbps: gbps.map(BitsPerSec::gbps), schedule: Vec::new(), cached_keys: None, host_time: Time::from_ns(2000), discipline: Discipline::PerQueue, ring: None }
    }

    fn w(bytes: u64) -> Work {
        Work { bytes, key: None, put: false }
    }

    /// Serves everything that arrived at `arrivals` (time, source, bytes) to the end; returns
    /// (item, source, done time) in order of departure.
    fn drain(e: &mut Engine, arrivals: &[(u64, u32, u64)]) -> Vec<(u32, u32, Time)> {
        let mut out = Vec::new();
        let mut next_done: Option<(u32, Time)> = None;
        let mut i = 0;
        loop {
            let arrival = arrivals.get(i).map(|a| Time(a.0));
            match (arrival, next_done) {
                (Some(t), d) if d.is_none_or(|(_, dt)| t < dt) => {
                    let (_, from, bytes) = arrivals[i];
                    if let Arrival::Started(done) = e.arrive(t, from, i as u32, w(bytes)) {
                        next_done = Some((i as u32, done));
                    }
                    i += 1;
                }
                (_, Some((item, t))) => {
                    let (_, _, next) = e.depart(t);
                    out.push((item, arrivals[item as usize].1, t));
                    next_done = next;
                }
                (None, None) => return out,
                _ => unreachable!(),
            }
        }
    }

    #[test]
    fn a_queue_drains_at_the_engines_rate() {
        // 10 Gbps per byte and 10 Mops: a 1000-byte op costs 800 ns + 100 ns.
        let mut e = Engine::new(spec(Some(10.0), Some(10)));
        let arrivals: Vec<_> = (0..100).map(|_| (0, 0, 1000)).collect();
        let out = drain(&mut e, &arrivals);
        assert_eq!(out.last().unwrap().2, Time::from_ns(90_000));
        assert_eq!(e.busy, Time::from_ns(90_000));
        // Arriving after the queue drained: served at once.
        assert_eq!(e.arrive(Time::from_ns(100_000), 0, 0, w(1000)), Arrival::Started(Time::from_ns(100_900)));
    }

    #[test]
    fn per_queue_round_robin_shares_a_backlog_equally_fcfs_by_arrival() {
        // Source 0 dumps 6 pieces, then source 1 dumps 2: round robin interleaves them.
        let arrivals = [(0, 0, 64), (0, 0, 64), (0, 0, 64), (0, 0, 64), (0, 0, 64), (0, 0, 64), (1, 1, 64), (1, 1, 64)];
        let mut rr = Engine::new(spec(Some(1.0), None));
        let order: Vec<u32> = drain(&mut rr, &arrivals).iter().map(|x| x.1).collect();
        assert_eq!(order, [0, 0, 1, 0, 1, 0, 0, 0]);
        let mut s = spec(Some(1.0), None);
        s.discipline = Discipline::Fcfs;
        let mut fifo = Engine::new(s);
        let order: Vec<u32> = drain(&mut fifo, &arrivals).iter().map(|x| x.1).collect();
        assert_eq!(order, [0, 0, 0, 0, 0, 0, 1, 1]);
    }

    #[test]
    fn measured_counters_start_at_the_warmup() {
        // 1 M pieces per second (1 us each), measured from 10 us: a piece served over 9.5-10.5
        // us counts half its time and none of its bytes; one from 20 us, all of both, up to
        // where the reading is taken.
        let mut e = Engine::measured_from(spec(Some(1.0), None), Time::from_us(10));
        e.arrive(Time::from_ns(9_500), 0, 0, w(64));
        e.depart(Time::from_ns(10_500));
        e.arrive(Time::from_us(20), 0, 1, w(100));
        assert_eq!((e.bytes, e.busy_by(Time::from_ns(20_250))), (100, Time::from_ns(750)));
        assert_eq!(e.busy_by(Time::from_us(30)), Time::from_ns(1_500));
        assert_eq!(e.busy_by(Time::from_us(5)), Time::ZERO);
    }

    #[test]
    fn the_capacity_schedule_changes_the_cost() {
        let mut s = spec(Some(1.0), None);
        s.schedule = vec![CapacityStep { at: Time::from_us(10), factor: 0.5 }, CapacityStep { at: Time::from_us(20), factor: 2.0 }];
        let mut e = Engine::new(s);
        assert_eq!(e.arrive(Time::from_us(1), 0, 0, w(64)), Arrival::Started(Time::from_us(2)));
        e.depart(Time::from_us(2));
        assert_eq!(e.arrive(Time::from_us(10), 0, 1, w(64)), Arrival::Started(Time::from_us(12)));
        e.depart(Time::from_us(12));
        assert_eq!(e.arrive(Time::from_us(20), 0, 2, w(64)), Arrival::Started(Time::from_ns(20_500)));
    }

    #[test]
    fn a_full_ring_drops_per_source_queue_or_in_all() {
        // Per queue, rings of 2: source 0's third and fourth waiting pieces are dropped, source
        // 1 still gets its two in; the one in service does not count.
        let mut s = spec(Some(1.0), None);
        s.ring = Some(2);
        let mut e = Engine::new(s.clone());
        let got: Vec<Arrival> = [0, 0, 0, 0, 0, 1, 1].iter().enumerate().map(|(i, &from)| e.arrive(Time(0), from, i as u32, w(64))).collect();
        use Arrival::*;
        assert_eq!(got, [Started(Time::from_us(1)), Queued, Queued, Dropped, Dropped, Queued, Queued]);
        assert_eq!((e.dropped, e.peak_waiting), (2, 4));
        // A departure frees a slot of the ring it takes from.
        e.depart(Time::from_us(1));
        assert_eq!(e.arrive(Time::from_us(1), 0, 9, w(64)), Queued);
        // FCFS: one ring for all sources.
        s.discipline = Discipline::Fcfs;
        let mut f = Engine::new(s);
        let got: Vec<Arrival> = [0, 1, 2, 3].iter().map(|&from| f.arrive(Time(0), from, from, w(64))).collect();
        assert_eq!(got, [Started(Time::from_us(1)), Queued, Queued, Dropped]);
        // Drained, everything that was not dropped is served.
        let mut n = 0;
        while f.depart(Time::from_us(10)).2.is_some() || n == 0 {
            n += 1;
        }
        assert_eq!(f.ops, 3);
    }

    #[test]
    fn kv_misses_and_puts_go_to_the_host() {
        let mut s = spec(Some(10.0), None);
        s.cached_keys = Some(100);
        let mut e = Engine::new(s);
        for (key, put, host) in [(5, false, false), (500, false, true), (5, true, true)] {
            e.arrive(Time(0), 0, 0, Work { bytes: 96, key: Some(key), put });
            let (_, to_host, _) = e.depart(Time::from_ns(100));
            assert_eq!(to_host, host);
        }
        assert_eq!(e.host_trips, 2);
    }
}
