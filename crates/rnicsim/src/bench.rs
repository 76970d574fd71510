//! Speed measurements (never part of a run's results, which contain no wall-clock values).
//!
//! The fabric benchmark: a leaf-spine (8 spines × 8 leaves × 16 hosts, 1:2, 100 Gbps, 1 µs),
//! every host sending fixed-size packets to a random permutation partner at a fraction of line
//! rate for a span of simulated time. Its cost per packet-hop is compared with a bare binary-heap
//! push + pop on a heap as large as the simulator's event queue.

use crate::scenario::LoadedScenario;
use crate::world::World;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct FabricBench {
    pub leaves: usize,
    pub spines: usize,
    pub hosts_per_leaf: usize,
    pub load: f64,
    pub duration: &'static str,
    pub packet_size: u32,
    pub seed: u64,
}

impl Default for FabricBench {
    fn default() -> Self {
        FabricBench { leaves: 8, spines: 8, hosts_per_leaf: 16, load: 0.8, duration: "1ms", packet_size: 1000, seed: 1 }
    }
}

#[derive(Clone, Debug)]
pub struct FabricBenchResult {
    pub hosts: usize,
    pub wall: Duration,
    pub events: u64,
    pub packet_hops: u64,
    pub packets_delivered: u64,
    /// The most packets alive at once.
    pub peak_packets: u64,
    /// Timer slots in the event queue (its largest possible size).
    pub timer_slots: usize,
}

impl FabricBenchResult {
    pub fn hops_per_sec(&self) -> f64 {
        self.packet_hops as f64 / self.wall.as_secs_f64()
    }
    pub fn ns_per_hop(&self) -> f64 {
        self.wall.as_nanos() as f64 / self.packet_hops.max(1) as f64
    }
}

impl FabricBench {
    pub fn scenario(&self) -> LoadedScenario {
        let text = format!(
            r#"
name = "bench-fabric"
seed = {seed}
duration = "{dur}"
[topology.leaf_spine]
leaves = {l}
spines = {s}
hosts_per_leaf = {h}
[[traffic]]
pattern = "permutation"
load = {load}
packet_size = "{size}B"
[outputs]
pfc_events = false
"#,
            seed = self.seed,
            dur = self.duration,
            l = self.leaves,
            s = self.spines,
            h = self.hosts_per_leaf,
            load = self.load,
            size = self.packet_size
        );
        LoadedScenario::from_str(&text, "<bench>", std::path::Path::new(".")).expect("the bench scenario is valid")
    }

    pub fn run(&self) -> FabricBenchResult {
        let loaded = self.scenario();
        let mut world = World::build(&loaded).expect("the bench scenario builds");
        FabricBenchResult::timed(&mut world)
    }
}

impl FabricBenchResult {
    /// Runs a built world to its end, timing the run alone.
    fn timed(world: &mut World) -> FabricBenchResult {
        let timer_slots = world.timers_slots();
        let start = Instant::now();
        world.run(|_| true);
        let wall = start.elapsed();
        FabricBenchResult {
            hosts: world.host_count(),
            wall,
            events: world.stats.events,
            packet_hops: world.stats.packet_hops,
            packets_delivered: world.stats.packets_delivered,
            peak_packets: world.stats.peak_packets,
            timer_slots,
        }
    }
}

/// The scale benchmark's fabrics: a fat-tree of a given host count, or a Jellyfish.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScaleFabric {
    /// k-ary fat-tree with `hosts_per_edge` hosts per edge switch (k/2 is non-blocking).
    FatTree { k: usize, hosts_per_edge: usize },
    /// Random regular graph of `switches` switches, `degree` switch links and 4 hosts each.
    Jellyfish { switches: usize, degree: usize },
}

impl ScaleFabric {
    /// The fat-tree of exactly `hosts` hosts with the largest even k such that k³/4 ≤ hosts
    /// and the edge switches share the hosts evenly (more than k/2 per edge oversubscribes it).
    pub fn fat_tree(hosts: usize) -> Option<ScaleFabric> {
        (2..=128usize).rev().step_by(2).find(|&k| k * k * k / 4 <= hosts && hosts.is_multiple_of(k * k / 2)).map(|k| ScaleFabric::FatTree { k, hosts_per_edge: hosts / (k * k / 2) })
    }

    /// A Jellyfish of about `hosts` hosts: 4 hosts and 12 switch links per switch.
    pub fn jellyfish(hosts: usize) -> ScaleFabric {
        ScaleFabric::Jellyfish { switches: hosts.div_ceil(4).max(14), degree: 12 }
    }

    fn toml(&self) -> String {
        match *self {
            ScaleFabric::FatTree { k, hosts_per_edge } => format!("[topology.fat_tree]\nk = {k}\nhosts_per_edge = {hosts_per_edge}\n"),
            ScaleFabric::Jellyfish { switches, degree } => format!("[topology.jellyfish]\nswitches = {switches}\ndegree = {degree}\nhosts_per_switch = 4\n"),
        }
    }

    pub fn describe(&self) -> String {
        match *self {
            ScaleFabric::FatTree { k, hosts_per_edge } => format!("fat-tree k={k}, {hosts_per_edge} hosts/edge"),
            ScaleFabric::Jellyfish { switches, degree } => format!("Jellyfish {switches} switches, degree {degree}"),
        }
    }
}

/// The scale benchmark: every host sends `bytes` to a permutation partner at line rate, with PFC,
/// for `duration` (the workload whose cost per packet-hop must not grow with the fabric).
#[derive(Clone, Debug)]
pub struct ScaleBench {
    pub fabric: ScaleFabric,
    pub duration: String,
    pub bytes: String,
    pub seed: u64,
}

/// What a scale run measured.
#[derive(Clone, Debug)]
pub struct ScaleResult {
    pub run: FabricBenchResult,
    pub switches: usize,
    pub build: Duration,
    /// Bytes of the routing tables.
    pub routing_bytes: usize,
}

impl ScaleBench {
    pub fn scenario(&self) -> Result<LoadedScenario, crate::scenario::ScenarioError> {
        let text = format!(
            "name = \"bench-scale\"\nseed = {seed}\nduration = \"{dur}\"\n{topo}[[traffic]]\npattern = \"permutation\"\nload = 1.0\nbytes = \"{bytes}\"\n[outputs]\npfc_events = false\n",
            seed = self.seed,
            dur = self.duration,
            topo = self.fabric.toml(),
            bytes = self.bytes
        );
        LoadedScenario::from_str(&text, "<bench scale>", std::path::Path::new("."))
    }

    pub fn run(&self) -> Result<ScaleResult, crate::scenario::ScenarioError> {
        let loaded = self.scenario()?;
        let start = Instant::now();
        let mut world = World::build(&loaded)?;
        let build = start.elapsed();
        let run = FabricBenchResult::timed(&mut world);
        Ok(ScaleResult { switches: world.switch_count(), routing_bytes: world.routes_memory_bytes(), build, run })
    }
}

/// Nanoseconds per push + pop on a `std` binary heap holding `size` `(time, seq)` entries, each
/// push scheduling a little after the popped time (the pattern of a discrete-event loop).
pub fn heap_push_pop_ns(size: usize, ops: u64) -> f64 {
    let mut heap = BinaryHeap::with_capacity(size + 1);
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..size as u64 {
        heap.push(Reverse((next() % 1_000_000, i)));
    }
    let start = Instant::now();
    let mut seq = size as u64;
    for _ in 0..ops {
        let Reverse((t, _)) = heap.pop().expect("non-empty");
        seq += 1;
        heap.push(Reverse((t + 1 + next() % 1_000_000, seq)));
    }
    let wall = start.elapsed();
    std::hint::black_box(&heap);
    wall.as_nanos() as f64 / ops as f64
}

/// Peak resident memory of this process (Linux), in bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// SCR's framework on the real CPU (`rnicsim bench scr`): `flows` flows of 1 KB packets sharing
/// 100 Gbps raise TX events in time order; a processor with `[nic.scr]`'s defaults (hardware
/// coalescing, 64 threads) and the water-filling policy handles them.
pub struct ScrBenchResult {
    pub events: u64,
    pub handled: u64,
    pub secs: f64,
}

impl ScrBenchResult {
    /// Events the framework took in per wall second.
    pub fn events_per_sec(&self) -> f64 {
        self.events as f64 / self.secs
    }
}

pub fn scr_events(flows: u32, events: u64) -> ScrBenchResult {
    use crate::nic::scr::{event::Kind, PolicySpec, ScrSpec};
    let spec = ScrSpec { policy: PolicySpec::WaterFilling(Default::default()), ..Default::default() };
    let mut core = spec.build(crate::units::BitsPerSec::gbps(100));
    let start = Instant::now();
    scr_feed_tx(core.as_mut(), flows, 1024 + 58, events);
    let secs = start.elapsed().as_secs_f64();
    ScrBenchResult { events, handled: core.stats().handled[Kind::Tx.index()], secs }
}

/// Feeds `events` TX events of `pkt` wire bytes to `core`: `flows` flows in turn, one packet
/// time at 100 Gbps apart, from time 0. The processor's timer lives in the world's own timer
/// queue, armed at its `due` as the world keeps it; when it fires the runs catch up and the
/// decisions in effect are taken off. At the end the runs catch up with the last event.
pub fn scr_feed_tx(core: &mut dyn crate::nic::scr::processor::ScrCore, flows: u32, pkt: u64, events: u64) {
    use crate::nic::events::NicEvent;
    use crate::sim::timer::TimerQueue;
    use crate::units::{BitsPerSec, Time};
    let gap = BitsPerSec::gbps(100).tx_time(pkt);
    let mut timers: TimerQueue<()> = TimerQueue::new();
    let slot = timers.add_timer(());
    let mut now = Time::ZERO;
    let mut last = now;
    let mut flow = 0u32;
    for _ in 0..events {
        while let Some((at, ())) = timers.pop_until(now) {
            core.advance(at);
            while core.pop_install(at).is_some() {}
            if let Some(due) = core.due() {
                timers.arm(slot, due);
            }
        }
        if let Some(due) = core.collect(now, flow, &NicEvent::Tx { bytes: pkt, packets: 1 }) {
            timers.arm_if_later(slot, due);
        }
        flow = if flow + 1 == flows { 0 } else { flow + 1 };
        last = now;
        now += gap;
    }
    core.advance(last);
}
