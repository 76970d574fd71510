//! `rnicsim bench`: simulator speed on the fixed fabric workload, beside a bare heap.

use clap::Args;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use rnicsim::bench::{heap_push_pop_ns, peak_rss_bytes, FabricBench};

#[derive(Args)]
pub struct BenchArgs {
    /// Hosts per leaf (8 leaves, 8 spines); 16 gives the standard 128-host 1:2 fabric.
    #[arg(long, default_value_t = 16)]
    hosts_per_leaf: usize,
    /// Offered load per host as a fraction of line rate.
    #[arg(long, default_value_t = 0.8)]
    load: f64,
    /// Repetitions; the fastest is reported.
    #[arg(long, default_value_t = 3)]
    repeat: u32,
}

pub fn run(args: &BenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.hosts_per_leaf > 0 && args.repeat > 0, "--hosts-per-leaf and --repeat must be positive");
    anyhow::ensure!(args.load > 0.0 && args.load <= 1.0, "--load must be in (0, 1]");
    let cfg = FabricBench { hosts_per_leaf: args.hosts_per_leaf, load: args.load, ..FabricBench::default() };
    eprintln!("fabric: {} hosts, permutation at {:.0}% load, {} packets, {} simulated, best of {}", cfg.leaves * cfg.hosts_per_leaf, cfg.load * 100.0, cfg.packet_size, cfg.duration, args.repeat);
    let best = (0..args.repeat).map(|_| cfg.run()).min_by_key(|r| r.wall).expect("at least one run");
    let heap_ns = (0..args.repeat).map(|_| heap_push_pop_ns(best.timer_slots, 20_000_000)).fold(f64::INFINITY, f64::min);
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec!["measure", "value", "goal"]);
    t.add_row(vec!["hosts".to_string(), best.hosts.to_string(), String::new()]);
    t.add_row(vec!["wall time".to_string(), format!("{:.3} s", best.wall.as_secs_f64()), String::new()]);
    t.add_row(vec!["events".to_string(), best.events.to_string(), String::new()]);
    t.add_row(vec!["packet-hops".to_string(), best.packet_hops.to_string(), String::new()]);
    t.add_row(vec!["packets delivered".to_string(), best.packets_delivered.to_string(), String::new()]);
    t.add_row(vec!["packet-hops per second".to_string(), format!("{:.1} M", best.hops_per_sec() / 1e6), "≥ 20 M".to_string()]);
    t.add_row(vec!["ns per packet-hop".to_string(), format!("{:.1}", best.ns_per_hop()), String::new()]);
    t.add_row(vec![format!("bare heap push+pop (heap of {})", best.timer_slots), format!("{heap_ns:.1} ns"), String::new()]);
    t.add_row(vec!["packet-hop / heap op".to_string(), format!("{:.2}", best.ns_per_hop() / heap_ns), "≤ 4".to_string()]);
    t.add_row(vec!["peak packets alive".to_string(), best.peak_packets.to_string(), String::new()]);
    t.add_row(vec!["peak memory (process)".to_string(), peak_rss_bytes().map_or("n/a".into(), |b| format!("{:.1} MB", b as f64 / 1e6)), String::new()]);
    println!("{t}");
    Ok(())
}
