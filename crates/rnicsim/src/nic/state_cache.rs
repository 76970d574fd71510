//! The NIC's connection-state cache (StaR §II-B): on-chip memory holds the state of a few hundred
//! connections (`nic.qp_context_bytes` each, 256 B on ConnectX-3 and StaR's FPGA); the state of
//! every other connection lives in host memory and a packet of such a connection waits for it to
//! be fetched over PCIe.
//!
//! Model:
//! - `capacity / qp_context_bytes` entries, replaced LRU, FIFO or at random (seeded stream
//!   `state-cache`, one per NIC).
//! - A miss starts a fetch that takes `miss_latency`; the NIC overlaps at most `fetch_slots`
//!   fetches. A packet whose fetch cannot start because every slot is busy stalls its pipeline
//!   (receive or transmit) until one frees: with one slot, a second miss during a fetch stalls
//!   the pipeline for the rest of it (§II-B's stall), while hits of other connections pass the
//!   fetch under way. A packet of a connection whose fetch is already under way waits for that
//!   fetch (no second fetch).
//! - A packet leaves the pipeline when its state is on the NIC; until then it occupies the
//!   receive packet buffer (`rx_buffer`), which drops arrivals or pauses the link (PFC) when
//!   full ([`WhenFull`]).
//!
//! Counters per NIC: lookups, hits, misses (fetches), lookups that joined a fetch under way,
//! evictions, and pipeline stalls with their total time. A stalled receive pipeline's arrivals
//! are decided as they come (in order, each when the pipeline resumes), but counted when their
//! lookup takes place, and a stall's time as it passes, so the counters at any instant are
//! those of the lookups made by then.

use crate::sim::rng::{self, Rng};
use crate::sim::TimerId;
use crate::units::{Bytes, Time};
use crate::wire::packet::PacketId;
use rand::Rng as _;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Which entry a miss evicts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Replacement {
    /// The least recently used.
    #[default]
    Lru,
    /// The oldest inserted (hits do not refresh).
    Fifo,
    /// A uniformly random one.
    Random,
}

/// What the receive packet buffer does when an arriving packet does not fit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WhenFull {
    /// Drop the packet (the sender's loss recovery repairs it); counted per NIC.
    #[default]
    Drop,
    /// Send PFC PAUSE for the packet's class while the buffer is above its high mark, so the
    /// switch holds the traffic (lossless).
    Pause,
}

/// `[nic.state_cache]`: a NIC whose on-chip connection state is limited. Absent, every
/// connection's state is on the NIC.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateCacheSpec {
    /// On-chip bytes for connection state (StaR's FPGA: 30 KB, 120 connections of 256 B).
    pub capacity: Bytes,
    #[serde(default)]
    pub replacement: Replacement,
    /// How long fetching one connection's state from host memory takes (a PCIe read round
    /// trip and the transfer).
    #[serde(default = "default_miss_latency")]
    pub miss_latency: Time,
    /// Fetches the NIC overlaps; a miss beyond them stalls the pipeline.
    #[serde(default = "default_fetch_slots")]
    pub fetch_slots: u32,
    /// The receive packet buffer that holds packets waiting for their state.
    #[serde(default = "default_rx_buffer")]
    pub rx_buffer: Bytes,
    #[serde(default)]
    pub when_full: WhenFull,
}

fn default_miss_latency() -> Time {
    Time::from_us(1)
}
fn default_fetch_slots() -> u32 {
    1
}
fn default_rx_buffer() -> Bytes {
    Bytes(256 * 1024)
}

impl StateCacheSpec {
    /// Connections whose state fits on the NIC.
    pub fn entries(&self, state_bytes: u32) -> u32 {
        (self.capacity.0 / state_bytes.max(1) as u64).min(u32::MAX as u64) as u32
    }

    /// Problems with the keys, each as (key, message); `packet` is the largest packet's bytes
    /// (the receive buffer must hold one), `state_bytes` one connection's state.
    pub fn check(&self, packet: u64, state_bytes: u32) -> Vec<(&'static str, String)> {
        let mut bad = Vec::new();
        // 0 is a NIC that caches nothing (every packet fetches); between, the bytes would be
        // rounded down to no connection at all, which is surely not what was meant.
        if self.capacity.0 > 0 && self.capacity.0 < state_bytes as u64 {
            bad.push(("capacity", format!("holds no connection's state ({state_bytes} bytes, nic.qp_context_bytes), got {}B: use 0 for a NIC that keeps none", self.capacity.0)));
        }
        if self.fetch_slots == 0 {
            bad.push(("fetch_slots", "must be at least 1".to_string()));
        }
        // Each slot is kept per NIC; no NIC overlaps anywhere near this many fetches.
        if self.fetch_slots > MAX_FETCH_SLOTS {
            bad.push(("fetch_slots", format!("expected at most {MAX_FETCH_SLOTS} fetches in flight, got {}", self.fetch_slots)));
        }
        if self.rx_buffer.0 < packet {
            bad.push(("rx_buffer", format!("must hold at least one packet ({packet} bytes), got {}", self.rx_buffer.0)));
        }
        bad
    }
}

/// The most fetches a NIC may overlap (`fetch_slots`).
pub const MAX_FETCH_SLOTS: u32 = 65_536;

/// The outcome of one lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lookup {
    /// When the connection's state is on the NIC (the lookup time on a hit).
    pub ready: Time,
    /// When the pipeline may look the next packet up (later than the lookup time only when the
    /// fetch had to wait for a slot: a stall).
    pub resume: Time,
    pub hit: bool,
}

/// Per-NIC counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CacheStats {
    pub lookups: u64,
    pub hits: u64,
    /// Lookups that started a fetch.
    pub misses: u64,
    /// Lookups of a connection whose fetch was under way.
    pub joined: u64,
    pub evictions: u64,
    /// Lookups that stalled their pipeline waiting for a fetch slot, and the time stalled.
    pub stalls: u64,
    pub stall_ps: u64,
}

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Entry {
    qp: u32,
    /// When the state is (or was) on the NIC.
    ready: Time,
    /// Neighbours in recency (LRU) or insertion (FIFO) order: `prev` is more recent.
    prev: u32,
    next: u32,
}

/// Where a connection's entry index is kept: RoCE queue pairs at even places, StaR
/// connections (keys with [`crate::nic::star::STAR_HANDLE`] set) at odd ones.
#[inline]
fn slot_index(key: u32) -> usize {
    let star = crate::nic::star::STAR_HANDLE;
    if key & star != 0 { 2 * (key & !star) as usize + 1 } else { 2 * key as usize }
}

/// One NIC's connection-state cache.
#[derive(Clone, Debug)]
pub struct ConnCache {
    capacity: u32,
    replacement: Replacement,
    miss_latency: Time,
    /// When each fetch slot is next free.
    slots: BinaryHeap<Reverse<Time>>,
    /// Entry index of each queue pair (by global queue-pair number), `NONE` if not cached.
    slot_of: Vec<u32>,
    entries: Vec<Entry>,
    /// Most and least recent entries.
    head: u32,
    tail: u32,
    rng: Rng,
    /// Counts of the lookups made by now, and the time of the stalls over by now.
    stats: CacheStats,
    /// Lookups a stalled pipeline has already decided but that take place later (a receive
    /// pipeline that is stalled looks an arrival up when it resumes, so it counts then): their
    /// time and what they count ([`Counted`] bits), earliest first.
    ahead: BinaryHeap<Reverse<(Time, u8)>>,
    /// Stalls not yet over: (end, start), earliest end first.
    open_stalls: BinaryHeap<Reverse<(Time, Time)>>,
}

/// What one lookup counts, as bits (kept while the lookup lies ahead).
struct Counted;

impl Counted {
    const HIT: u8 = 1;
    const JOINED: u8 = 2;
    const MISS: u8 = 4;
    const EVICTION: u8 = 8;
    const STALL: u8 = 16;

    fn count(bits: u8, s: &mut CacheStats) {
        s.lookups += 1;
        s.hits += (bits & Self::HIT != 0) as u64;
        s.joined += (bits & Self::JOINED != 0) as u64;
        s.misses += (bits & Self::MISS != 0) as u64;
        s.evictions += (bits & Self::EVICTION != 0) as u64;
        s.stalls += (bits & Self::STALL != 0) as u64;
    }
}

impl ConnCache {
    pub fn new(spec: &StateCacheSpec, state_bytes: u32, seed: u64, host: u32) -> ConnCache {
        let slots = (0..spec.fetch_slots.max(1)).map(|_| Reverse(Time::ZERO)).collect();
        ConnCache {
            capacity: spec.entries(state_bytes),
            replacement: spec.replacement,
            miss_latency: spec.miss_latency,
            slots,
            slot_of: Vec::new(),
            entries: Vec::new(),
            head: NONE,
            tail: NONE,
            rng: rng::stream(seed, "state-cache", host as u64),
            stats: CacheStats::default(),
            ahead: BinaryHeap::new(),
            open_stalls: BinaryHeap::new(),
        }
    }

    /// Connections held now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Whether queue pair `qp`'s state is on the NIC (or on its way) now.
    pub fn contains(&self, qp: u32) -> bool {
        self.slot_of.get(slot_index(qp)).is_some_and(|&e| e != NONE)
    }

    /// The counters as of `t` (not before the last lookup's simulated time): the lookups made
    /// by then, and the stalled time up to then.
    pub fn stats_at(&self, t: Time) -> CacheStats {
        let mut s = self.stats;
        for &Reverse((_, bits)) in self.ahead.iter().filter(|Reverse((at, _))| *at <= t) {
            Counted::count(bits, &mut s);
        }
        s.stall_ps += self.open_stalls.iter().map(|&Reverse((end, start))| end.min(t).saturating_sub(start).0).sum::<u64>();
        s
    }

    /// Counts what took place by `now`.
    fn settle(&mut self, now: Time) {
        while let Some(&Reverse((at, bits))) = self.ahead.peek() {
            if at > now {
                break;
            }
            self.ahead.pop();
            Counted::count(bits, &mut self.stats);
        }
        while let Some(&Reverse((end, start))) = self.open_stalls.peek() {
            if end > now {
                break;
            }
            self.open_stalls.pop();
            self.stats.stall_ps += (end - start).0;
        }
    }

    /// A packet of queue pair `qp` is looked up at `at`, decided at `now` (`at` is later when
    /// its pipeline is stalled until then: the lookup counts from `at`).
    pub fn lookup(&mut self, qp: u32, at: Time, now: Time) -> Lookup {
        self.settle(now);
        let (out, bits) = self.look(qp, at);
        if at > now {
            self.ahead.push(Reverse((at, bits)));
        } else {
            Counted::count(bits, &mut self.stats);
        }
        out
    }

    /// The lookup itself, at `now`, and what it counts.
    fn look(&mut self, qp: u32, now: Time) -> (Lookup, u8) {
        if let Some(&e) = self.slot_of.get(slot_index(qp)).filter(|&&e| e != NONE) {
            let ready = self.entries[e as usize].ready;
            if self.replacement == Replacement::Lru {
                self.unlink(e);
                self.push_front(e);
            }
            if ready <= now {
                return (Lookup { ready: now, resume: now, hit: true }, Counted::HIT);
            }
            return (Lookup { ready, resume: now, hit: false }, Counted::JOINED);
        }
        let mut bits = Counted::MISS;
        let Reverse(free) = self.slots.pop().expect("at least one fetch slot");
        let start = free.max(now);
        let ready = start + self.miss_latency;
        self.slots.push(Reverse(ready));
        if start > now {
            bits |= Counted::STALL;
            self.open_stalls.push(Reverse((start, now)));
        }
        if self.capacity > 0 && self.insert(qp, ready) {
            bits |= Counted::EVICTION;
        }
        (Lookup { ready, resume: start, hit: false }, bits)
    }

    /// Drops `qp`'s state (its connection was destroyed).
    pub fn forget(&mut self, qp: u32) {
        if let Some(&e) = self.slot_of.get(slot_index(qp)).filter(|&&e| e != NONE) {
            self.remove(e);
        }
    }

    /// Puts `qp`'s state in, evicting an entry when full; returns whether it evicted.
    fn insert(&mut self, qp: u32, ready: Time) -> bool {
        let evict = self.entries.len() as u32 >= self.capacity;
        if evict {
            let victim = match self.replacement {
                Replacement::Lru | Replacement::Fifo => self.tail,
                Replacement::Random => self.rng.random_range(0..self.entries.len() as u32),
            };
            self.remove(victim);
        }
        if self.slot_of.len() <= slot_index(qp) {
            self.slot_of.resize(slot_index(qp) + 1, NONE);
        }
        let e = self.entries.len() as u32;
        self.entries.push(Entry { qp, ready, prev: NONE, next: NONE });
        self.slot_of[slot_index(qp)] = e;
        self.push_front(e);
        evict
    }

    /// Removes entry `e`, moving the last entry into its place.
    fn remove(&mut self, e: u32) {
        self.unlink(e);
        self.slot_of[slot_index(self.entries[e as usize].qp)] = NONE;
        let last = self.entries.len() as u32 - 1;
        if e != last {
            let moved = self.entries[last as usize];
            self.entries[e as usize] = moved;
            self.slot_of[slot_index(moved.qp)] = e;
            match moved.prev {
                NONE => self.head = e,
                p => self.entries[p as usize].next = e,
            }
            match moved.next {
                NONE => self.tail = e,
                n => self.entries[n as usize].prev = e,
            }
        }
        self.entries.pop();
    }

    fn unlink(&mut self, e: u32) {
        let Entry { prev, next, .. } = self.entries[e as usize];
        match prev {
            NONE => self.head = next,
            p => self.entries[p as usize].next = next,
        }
        match next {
            NONE => self.tail = prev,
            n => self.entries[n as usize].prev = prev,
        }
    }

    fn push_front(&mut self, e: u32) {
        let old = self.head;
        self.entries[e as usize].prev = NONE;
        self.entries[e as usize].next = old;
        match old {
            NONE => self.tail = e,
            h => self.entries[h as usize].prev = e,
        }
        self.head = e;
    }
}

/// Packets held in a pipeline until their connection state is on the NIC, released in
/// (ready, arrival) order.
#[derive(Clone, Debug, Default)]
pub struct Held {
    heap: BinaryHeap<Reverse<(Time, u64, PacketId, u32)>>,
    seq: u64,
    /// Bytes held now, and the most ever held.
    pub bytes: u64,
    pub peak_bytes: u64,
}

impl Held {
    pub fn push(&mut self, ready: Time, id: PacketId, bytes: u32) {
        self.heap.push(Reverse((ready, self.seq, id, bytes)));
        self.seq += 1;
        self.bytes += bytes as u64;
        self.peak_bytes = self.peak_bytes.max(self.bytes);
    }

    /// When the first held packet is ready.
    pub fn next_ready(&self) -> Option<Time> {
        self.heap.peek().map(|Reverse((t, ..))| *t)
    }

    /// The first held packet if it is ready at `now`.
    pub fn pop_ready(&mut self, now: Time) -> Option<PacketId> {
        if self.next_ready()? > now {
            return None;
        }
        let Reverse((_, _, id, bytes)) = self.heap.pop()?;
        self.bytes -= bytes as u64;
        Some(id)
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// The packets held, in no particular order.
    pub fn ids(&self) -> impl Iterator<Item = PacketId> + '_ {
        self.heap.iter().map(|Reverse((_, _, id, _))| *id)
    }
}

/// A NIC with a limited connection-state cache: the cache, and its receive and transmit
/// pipelines' state.
#[derive(Clone, Debug)]
pub struct NicStateCache {
    pub spec: StateCacheSpec,
    pub cache: ConnCache,
    /// When each pipeline may look its next packet up.
    pub rx_resume: Time,
    pub tx_resume: Time,
    /// Received packets waiting for their state (they fill the receive buffer), and scheduled
    /// packets waiting for theirs before the wire.
    pub rx: Held,
    pub tx: Held,
    /// Arrivals dropped because the receive buffer was full.
    pub rx_drops: u64,
    /// Pause mode: until when the NIC's last PAUSE holds its link partner, if one is asserted.
    pub paused_until: Option<Time>,
    pub pauses_sent: u64,
    /// Wakes the NIC when the first held packet is ready.
    pub timer: TimerId,
}

impl NicStateCache {
    pub fn new(spec: &StateCacheSpec, state_bytes: u32, seed: u64, host: u32, timer: TimerId) -> NicStateCache {
        NicStateCache {
            spec: *spec,
            cache: ConnCache::new(spec, state_bytes, seed, host),
            rx_resume: Time::ZERO,
            tx_resume: Time::ZERO,
            rx: Held::default(),
            tx: Held::default(),
            rx_drops: 0,
            paused_until: None,
            pauses_sent: 0,
            timer,
        }
    }

    /// The transmit pipeline looks up the state of connection `key` for a packet it takes at
    /// `now` (or when a stall it is in ends): in the pipeline's order, so a hit holds nothing up
    /// and a miss that waits for a fetch slot stalls the packets after it.
    pub fn tx_lookup(&mut self, key: u32, now: Time) -> Lookup {
        let l = self.cache.lookup(key, now.max(self.tx_resume), now);
        self.tx_resume = self.tx_resume.max(l.resume);
        l
    }

    /// Pause mode: the buffer occupancy above which the NIC pauses its link partner (half the
    /// buffer, leaving the rest for what is in flight), and below which it resumes (a quarter).
    pub fn pause_marks(&self) -> (u64, u64) {
        (self.spec.rx_buffer.0 / 2, self.spec.rx_buffer.0 / 4)
    }
}

/// One NIC's counters in `summary.json` (`state_cache/per_nic/host <n>/...`), or all NICs'.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CacheCounters {
    pub lookups: u64,
    pub hits: u64,
    pub misses: u64,
    pub joined: u64,
    pub evictions: u64,
    /// Hits over lookups (1 with no lookups).
    pub hit_rate: f64,
    pub stalls: u64,
    /// Stalled time of the receive and transmit pipelines added together (it can pass the run's
    /// length when both stall at once).
    pub stall_us: f64,
    /// Arrivals dropped for a full receive buffer, the most the buffer and the transmit
    /// pipeline held waiting for state, and PAUSE frames sent (pause mode).
    pub rx_drops: u64,
    pub rx_peak_bytes: u64,
    pub tx_peak_bytes: u64,
    pub pauses_sent: u64,
}

impl CacheCounters {
    /// `n`'s counters as of `t` (the run's end).
    pub fn of(n: &NicStateCache, t: Time) -> CacheCounters {
        let s = &n.cache.stats_at(t);
        let mut c = CacheCounters {
            lookups: s.lookups,
            hits: s.hits,
            misses: s.misses,
            joined: s.joined,
            evictions: s.evictions,
            hit_rate: 0.0,
            stalls: s.stalls,
            stall_us: s.stall_ps as f64 / 1e6,
            rx_drops: n.rx_drops,
            rx_peak_bytes: n.rx.peak_bytes,
            tx_peak_bytes: n.tx.peak_bytes,
            pauses_sent: n.pauses_sent,
        };
        c.finish();
        c
    }

    /// Adds `o`'s counts (peaks take the larger).
    pub fn add(&mut self, o: &CacheCounters) {
        self.lookups += o.lookups;
        self.hits += o.hits;
        self.misses += o.misses;
        self.joined += o.joined;
        self.evictions += o.evictions;
        self.stalls += o.stalls;
        self.stall_us += o.stall_us;
        self.rx_drops += o.rx_drops;
        self.rx_peak_bytes = self.rx_peak_bytes.max(o.rx_peak_bytes);
        self.tx_peak_bytes = self.tx_peak_bytes.max(o.tx_peak_bytes);
        self.pauses_sent += o.pauses_sent;
        self.finish();
    }

    fn finish(&mut self) {
        self.hit_rate = if self.lookups == 0 { 1.0 } else { self.hits as f64 / self.lookups as f64 };
    }
}

/// `summary.json`'s `state_cache`: the cache's size, every NIC's counters together, and each
/// NIC that looked anything up.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StateCacheSummary {
    /// Connections whose state fits on each NIC.
    pub entries: u32,
    #[serde(flatten)]
    pub total: CacheCounters,
    pub per_nic: Vec<NamedCounters>,
}

#[derive(Clone, Debug, Serialize)]
pub struct NamedCounters {
    /// `host <node>`.
    pub name: String,
    #[serde(flatten)]
    pub counters: CacheCounters,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(entries: u64, slots: u32, replacement: Replacement) -> StateCacheSpec {
        StateCacheSpec { capacity: Bytes(entries * 256), replacement, miss_latency: Time::from_us(1), fetch_slots: slots, rx_buffer: Bytes(1 << 20), when_full: WhenFull::Drop }
    }

    /// Hit rate over `rounds` passes of `order` after one warm-up pass.
    fn hit_rate(c: &mut ConnCache, order: &[u32], rounds: u32) -> f64 {
        let mut t = Time::ZERO;
        for &q in order {
            t = t + Time::from_us(10);
            c.lookup(q, t, t);
        }
        let before = c.stats;
        for _ in 0..rounds {
            for &q in order {
                t = t + Time::from_us(10);
                c.lookup(q, t, t);
            }
        }
        (c.stats.hits - before.hits) as f64 / (c.stats.lookups - before.lookups) as f64
    }

    #[test]
    fn cyclic_access_follows_lru_theory() {
        // A cycle over n connections: LRU hits every time if n ≤ capacity and never otherwise
        // (each connection was evicted n − capacity lookups before it comes back).
        for (n, want) in [(100u32, 1.0), (120, 1.0), (121, 0.0), (500, 0.0)] {
            let mut c = ConnCache::new(&spec(120, 4, Replacement::Lru), 256, 1, 0);
            let order: Vec<u32> = (0..n).collect();
            assert_eq!(hit_rate(&mut c, &order, 5), want, "n = {n}");
            assert!(c.len() <= 120);
        }
    }

    #[test]
    fn random_access_follows_che_approximation() {
        // Uniform independent access over n connections into an LRU cache of c entries: every
        // connection is equally likely, so the cache holds c of them and the hit rate is c / n.
        let mut r = rng::stream(7, "test", 0);
        for (n, cap) in [(400u32, 100u64), (1000, 450), (3000, 450)] {
            let mut c = ConnCache::new(&spec(cap, 4, Replacement::Lru), 256, 1, 0);
            let order: Vec<u32> = (0..200_000).map(|_| r.random_range(0..n)).collect();
            let got = hit_rate(&mut c, &order, 1);
            let want = cap as f64 / n as f64;
            assert!((got - want).abs() < 0.01, "n {n} cap {cap}: {got} vs {want}");
        }
    }

    #[test]
    fn fifo_and_random_replacement() {
        // FIFO ignores hits: re-touching 0 does not save it from eviction.
        let mut c = ConnCache::new(&spec(2, 4, Replacement::Fifo), 256, 1, 0);
        let t = Time::from_us(100);
        c.lookup(0, t, t);
        c.lookup(1, t, t);
        c.lookup(0, t + Time::from_us(5), t + Time::from_us(5));
        c.lookup(2, t + Time::from_us(10), t + Time::from_us(10));
        assert!(!c.contains(0) && c.contains(1) && c.contains(2));
        let mut l = ConnCache::new(&spec(2, 4, Replacement::Lru), 256, 1, 0);
        l.lookup(0, t, t);
        l.lookup(1, t, t);
        l.lookup(0, t + Time::from_us(5), t + Time::from_us(5));
        l.lookup(2, t + Time::from_us(10), t + Time::from_us(10));
        assert!(l.contains(0) && !l.contains(1) && l.contains(2));
        // Random replacement under a cyclic scan still hits sometimes (LRU never would).
        let mut r = ConnCache::new(&spec(100, 4, Replacement::Random), 256, 1, 0);
        let order: Vec<u32> = (0..150).collect();
        let rate = hit_rate(&mut r, &order, 20);
        assert!(rate > 0.2 && rate < 0.8, "{rate}");
        assert_eq!(r.len(), 100);
    }

    #[test]
    fn misses_wait_for_fetch_slots_and_stall() {
        let mut c = ConnCache::new(&spec(10, 2, Replacement::Lru), 256, 1, 0);
        let t = Time::from_us(5);
        let us = Time::from_us;
        // Two slots: the first two misses start at once, the third waits for the first slot.
        assert_eq!(c.lookup(1, t, t), Lookup { ready: t + us(1), resume: t, hit: false });
        assert_eq!(c.lookup(2, t, t), Lookup { ready: t + us(1), resume: t, hit: false });
        assert_eq!(c.lookup(3, t, t), Lookup { ready: t + us(2), resume: t + us(1), hit: false });
        // A packet of a connection whose fetch is under way waits for it, without a new fetch.
        assert_eq!(c.lookup(3, t + Time::from_ns(10), t + Time::from_ns(10)), Lookup { ready: t + us(2), resume: t + Time::from_ns(10), hit: false });
        assert_eq!(c.lookup(1, t + us(3), t + us(3)), Lookup { ready: t + us(3), resume: t + us(3), hit: true });
        assert_eq!((c.stats.misses, c.stats.joined, c.stats.hits, c.stats.stalls, c.stats.stall_ps), (3, 1, 1, 1, us(1).0));
        // No room at all: every lookup fetches, nothing is kept.
        let mut none = ConnCache::new(&spec(0, 1, Replacement::Lru), 256, 1, 0);
        assert_eq!(none.lookup(4, t, t).ready, t + us(1));
        assert_eq!(none.lookup(4, t + us(1), t + us(1)).ready, t + us(2));
        assert!(none.is_empty() && none.stats.hits == 0);
    }

    #[test]
    fn counters_count_a_stalled_pipelines_lookups_when_they_take_place() {
        // One fetch slot. At 5 us two misses arrive: the second waits for the slot (a stall
        // to 6 us), and a third arrival, decided at 5 us too, is looked up only when its
        // pipeline resumes at 6 us, where it stalls again to 7 us.
        let mut c = ConnCache::new(&spec(10, 1, Replacement::Lru), 256, 1, 0);
        let (t, us) = (Time::from_us(5), Time::from_us);
        c.lookup(1, t, t);
        let second = c.lookup(2, t, t);
        assert_eq!(second.resume, t + us(1));
        let third = c.lookup(3, second.resume, t);
        assert_eq!((third.ready, third.resume), (t + us(3), t + us(2)));
        let at = |x: Time| {
            let s = c.stats_at(x);
            (s.lookups, s.misses, s.stalls, s.stall_ps)
        };
        assert_eq!(at(t), (2, 2, 1, 0));
        assert_eq!(at(t + Time::from_ns(1500)), (3, 3, 2, Time::from_ns(1500).0));
        assert_eq!(at(t + us(10)), (3, 3, 2, us(2).0));
    }

    #[test]
    fn held_packets_leave_in_ready_then_arrival_order() {
        let mut h = Held::default();
        let us = Time::from_us;
        h.push(us(3), PacketId(1), 100);
        h.push(us(1), PacketId(2), 200);
        h.push(us(3), PacketId(3), 50);
        assert_eq!((h.bytes, h.peak_bytes, h.next_ready()), (350, 350, Some(us(1))));
        assert_eq!(h.pop_ready(us(0)), None);
        assert_eq!(h.pop_ready(us(2)), Some(PacketId(2)));
        assert_eq!(h.pop_ready(us(2)), None);
        assert_eq!(h.pop_ready(us(3)), Some(PacketId(1)));
        assert_eq!(h.pop_ready(us(3)), Some(PacketId(3)));
        assert!(h.is_empty() && h.bytes == 0 && h.peak_bytes == 350);
    }

    #[test]
    fn forgetting_frees_the_entry() {
        let mut c = ConnCache::new(&spec(3, 1, Replacement::Lru), 256, 1, 0);
        for q in 0..3 {
            c.lookup(q, Time::from_us(10 * (q as u64 + 1)), Time::from_us(10 * (q as u64 + 1)));
        }
        c.forget(1);
        assert_eq!(c.len(), 2);
        assert!(!c.contains(1) && c.contains(0) && c.contains(2));
        c.lookup(5, Time::from_us(100), Time::from_us(100));
        assert_eq!((c.len(), c.stats.evictions), (3, 0), "the freed entry took the new one");
        c.lookup(6, Time::from_us(110), Time::from_us(110));
        assert!(!c.contains(0), "LRU victim after the removal kept order");
    }
}
