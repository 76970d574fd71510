//! `rnicsim bench`: simulator speed on the fixed fabric workload beside a bare heap, and
//! component benchmarks (`rnicsim bench tassel`, `scr`, `ordering`).

use clap::{Args, Subcommand};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use rnicsim::bench::{heap_push_pop_ns, peak_rss_bytes, FabricBench, ScaleBench, ScaleFabric};

/// The fabric options belong to the fabric workload: given before another subcommand's name
/// (or before `fabric`'s own) they would be ignored, so clap refuses them there.
#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BenchArgs {
    #[command(subcommand)]
    which: Option<Which>,
    #[command(flatten)]
    fabric: FabricArgs,
}

#[derive(Subcommand)]
enum Which {
    /// The fabric workload (the default).
    Fabric(FabricArgs),
    /// Tassel's rate limiter beside the monolithic SE-PIEO baseline, on the real CPU.
    Tassel(TasselArgs),
    /// The standard RDMA datacenter run (128-host leaf-spine, AliStorage at 50% load, DCQCN,
    /// PFC, 10 ms) end to end.
    Rdma(RdmaArgs),
    /// The standard RDMA run for a short and a long simulated time, each in its own process,
    /// writing its outputs: peak memory must not grow with simulated time, and every flow that
    /// started before the last 10 ms must complete.
    Soak(SoakArgs),
    /// Cost per packet-hop and peak memory as the fabric grows: fat-trees of each host count
    /// and a Jellyfish, every host sending 2 MB to a permutation partner at line rate with PFC,
    /// each in its own process.
    Scale(ScaleArgs),
    /// SCR's event framework (collectors, hardware coalescing, 64 threads, water filling) on
    /// the real CPU: TX events taken in per wall second.
    Scr(ScrArgs),
    /// Eunomia's ordering layer (hybrid-dynamic bitmap and memory controller) on the real CPU:
    /// packet arrivals processed per second with many connections and a fraction reordered.
    Ordering(OrderingArgs),
    /// libYama's scheduler on the real CPU: submission decisions per second with many queue
    /// pairs sharing one chain by weight.
    Yama(YamaArgs),
}

#[derive(Args)]
pub struct YamaArgs {
    /// Numbers of queue pairs on the chain.
    #[arg(long, value_delimiter = ',', default_value = "16,256,4096")]
    qps: Vec<usize>,
    /// Decisions timed per point.
    #[arg(long, default_value_t = 2_000_000)]
    decisions: u64,
    /// Bytes per piece of work.
    #[arg(long, default_value_t = 1000)]
    size: u64,
}

#[derive(Args)]
pub struct OrderingArgs {
    /// Concurrent connections.
    #[arg(long, default_value_t = 10_000)]
    connections: u32,
    /// Packets per message of each connection (the last carries the last-packet bit).
    #[arg(long, default_value_t = 200)]
    packets: u32,
    /// Messages per connection (the trace of one message each is replayed this many times).
    #[arg(long, default_value_t = 20)]
    rounds: u32,
    /// Fraction of packets overtaken by later ones.
    #[arg(long, default_value_t = 0.025)]
    displaced: f64,
    /// Most later packets that overtake a displaced one (uniform from 1).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..))]
    max_shift: u32,
    /// Bits per bitmap block and the cap on one bitmap.
    #[arg(long, default_value_t = 16)]
    block_bits: u32,
    #[arg(long, default_value_t = 256)]
    cap_bits: u32,
}

#[derive(Args)]
pub struct ScrArgs {
    /// Numbers of flows sharing the line rate.
    #[arg(long, value_delimiter = ',', default_value = "64,1024")]
    flows: Vec<u32>,
    /// TX events per measurement.
    #[arg(long, default_value_t = 20_000_000)]
    events: u64,
}

#[derive(Args)]
pub struct ScaleArgs {
    /// Fat-tree sizes in hosts (each k³/4 × a whole number of hosts per edge).
    #[arg(long, value_delimiter = ',', default_value = "128,1024,8192,16384")]
    hosts: Vec<usize>,
    /// Hosts of the Jellyfish row (0: none).
    #[arg(long, default_value_t = 10_000)]
    jellyfish: usize,
    /// Simulated time of each run.
    #[arg(long, default_value = "200us")]
    duration: String,
    /// Bytes each host sends.
    #[arg(long, default_value = "2MB")]
    bytes: String,
    /// Run one fabric in this process and print its measures as JSON (used by the table).
    #[arg(long, hide = true)]
    one: Option<String>,
}

#[derive(Args)]
pub struct SoakArgs {
    #[arg(long, default_value = "scenarios/bench/alistorage_128.toml")]
    scenario: std::path::PathBuf,
    /// The reference run's simulated time.
    #[arg(long, default_value = "10ms")]
    short: String,
    /// The long run's simulated time.
    #[arg(long, default_value = "200ms")]
    long: String,
}

#[derive(Args)]
pub struct RdmaArgs {
    /// The scenario to time.
    #[arg(long, default_value = "scenarios/bench/alistorage_128.toml")]
    scenario: std::path::PathBuf,
    /// Override a key (as `rnicsim run --set`), e.g. --set duration='"2ms"'.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
    /// Also write the run's outputs here (streamed during the run, as `rnicsim run` does).
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    /// Replace the run folder `--out` names if it holds an earlier run.
    #[arg(long, requires = "out")]
    force: bool,
    /// Print the measures as one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct TasselArgs {
    /// Numbers of always-backlogged flows to measure.
    #[arg(long, value_delimiter = ',', default_value = "1,1024,16384,262144,1048576")]
    flows: Vec<usize>,
    /// Packets timed per measurement (after a warm-up).
    #[arg(long, default_value_t = 2_000_000)]
    packets: u64,
    /// Packet size in bytes.
    #[arg(long, default_value_t = 64)]
    size: u32,
}

#[derive(Args)]
pub struct FabricArgs {
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

impl BenchArgs {
    /// `bench rdma` polls the stop flag (it may be writing a run folder), and so do `soak` and
    /// `scale`, which stop the runs they start in processes of their own (and remove their
    /// temporary folders); the others do not.
    pub fn polls_stop(&self) -> bool {
        match &self.which {
            Some(Which::Rdma(_) | Which::Soak(_)) => true,
            Some(Which::Scale(s)) => s.one.is_none(),
            _ => false,
        }
    }
}

/// Runs a benchmark; the exit code (130 for one that `stop` interrupted).
pub fn run(args: &BenchArgs, stop: &dyn Fn() -> bool) -> anyhow::Result<u8> {
    match &args.which {
        None => fabric(&args.fabric),
        Some(Which::Fabric(f)) => fabric(f),
        Some(Which::Tassel(t)) => tassel(t),
        Some(Which::Rdma(r)) => return rdma(r, stop),
        Some(Which::Soak(s)) => return soak(s, stop),
        Some(Which::Scale(s)) => return scale(s, stop),
        Some(Which::Scr(s)) => scr(s),
        Some(Which::Ordering(o)) => ordering(o),
        Some(Which::Yama(y)) => yama_bench(y),
    }
    .map(|_| 0)
}

fn scr(args: &ScrArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.events > 0 && args.flows.iter().all(|&f| f > 0), "--events and --flows must be positive");
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec!["flows", "TX events", "handled (after coalescing)", "wall s", "M events/s (goal ≥ 50)"]);
    for &flows in &args.flows {
        let r = rnicsim::bench::scr_events(flows, args.events);
        t.add_row(vec![flows.to_string(), r.events.to_string(), r.handled.to_string(), format!("{:.3}", r.secs), format!("{:.1}", r.events_per_sec() / 1e6)]);
    }
    println!("{t}");
    Ok(())
}

/// Runs `cmd` to its end and returns its output, or stops it (and returns None) once `stop`
/// says so: a benchmark ended by a signal takes the runs it started with it.
fn child_output(cmd: &mut std::process::Command, stop: &dyn Fn() -> bool) -> anyhow::Result<Option<std::process::Output>> {
    let mut child = cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn()?;
    loop {
        if child.try_wait()?.is_some() {
            return Ok(Some(child.wait_with_output()?));
        }
        if stop() {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn scale(args: &ScaleArgs, stop: &dyn Fn() -> bool) -> anyhow::Result<u8> {
    if let Some(one) = &args.one {
        let fabric = match one.split_once(':') {
            Some(("fat_tree", h)) => ScaleFabric::fat_tree(h.parse()?).ok_or_else(|| anyhow::anyhow!("no fat-tree has exactly {h} hosts"))?,
            Some(("jellyfish", h)) => ScaleFabric::jellyfish(h.parse()?),
            _ => anyhow::bail!("--one takes fat_tree:HOSTS or jellyfish:HOSTS"),
        };
        let bench = ScaleBench { fabric, duration: args.duration.clone(), bytes: args.bytes.clone(), seed: 1 };
        let r = bench.run()?;
        let m = serde_json::json!({
            "fabric": fabric.describe(),
            "hosts": r.run.hosts,
            "switches": r.switches,
            "build_s": r.build.as_secs_f64(),
            "wall_s": r.run.wall.as_secs_f64(),
            "packet_hops": r.run.packet_hops,
            "ns_per_hop": r.run.ns_per_hop(),
            "peak_packets": r.run.peak_packets,
            "routing_bytes": r.routing_bytes,
            "peak_rss_bytes": peak_rss_bytes(),
        });
        println!("{m}");
        return Ok(0);
    }
    let duration: rnicsim::units::Time = args.duration.parse().map_err(|e| anyhow::anyhow!("--duration {:?}: {e}", args.duration))?;
    anyhow::ensure!(duration.0 > 0, "--duration must be positive, got {}", args.duration);
    let bytes: rnicsim::units::Bytes = args.bytes.parse().map_err(|e| anyhow::anyhow!("--bytes {:?}: {e}", args.bytes))?;
    anyhow::ensure!(bytes.0 > 0, "--bytes must be positive, got {}", args.bytes);
    // Degree 12 needs 13 other switches: fewer hosts would silently run 56.
    anyhow::ensure!(args.jellyfish == 0 || args.jellyfish >= 56, "--jellyfish: a Jellyfish of 4 hosts and 12 switch links per switch needs at least 14 switches (56 hosts), got {} (0 for none)", args.jellyfish);
    // Smallest first: the "× smallest" column divides by the first row.
    let mut hosts = args.hosts.clone();
    hosts.sort_unstable();
    hosts.dedup();
    for &h in &hosts {
        anyhow::ensure!(ScaleFabric::fat_tree(h).is_some(), "no fat-tree has exactly {h} hosts (k³/4 × a whole number of hosts per edge)");
    }
    let exe = std::env::current_exe()?;
    let runs: Vec<String> = hosts.iter().map(|h| format!("fat_tree:{h}")).chain((args.jellyfish > 0).then(|| format!("jellyfish:{}", args.jellyfish))).collect();
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec!["fabric", "hosts", "switches", "packet-hops", "wall", "ns / packet-hop", "× smallest", "peak packets", "routing tables", "peak memory"]);
    let mut first_ns = None;
    let bar = indicatif::ProgressBar::new(runs.len() as u64);
    for one in &runs {
        bar.set_message(one.clone());
        let Some(child) = child_output(std::process::Command::new(&exe).args(["bench", "scale", &format!("--duration={}", args.duration), &format!("--bytes={}", args.bytes), &format!("--one={one}")]), stop)? else {
            eprintln!("interrupted during the {one} run");
            return Ok(130);
        };
        anyhow::ensure!(child.status.success(), "the {one} run failed: {}", String::from_utf8_lossy(&child.stderr));
        let m: serde_json::Value = serde_json::from_slice(&child.stdout)?;
        let ns = m["ns_per_hop"].as_f64().unwrap_or(f64::NAN);
        let first = *first_ns.get_or_insert(ns);
        t.add_row(vec![
            m["fabric"].as_str().unwrap_or("").to_string(),
            m["hosts"].to_string(),
            m["switches"].to_string(),
            m["packet_hops"].to_string(),
            format!("{:.1} s", m["wall_s"].as_f64().unwrap_or(f64::NAN)),
            format!("{ns:.0}"),
            format!("{:.2}", ns / first),
            m["peak_packets"].to_string(),
            format!("{:.2} MB", m["routing_bytes"].as_f64().unwrap_or(f64::NAN) / 1e6),
            format!("{:.0} MB", m["peak_rss_bytes"].as_f64().unwrap_or(f64::NAN) / 1e6),
        ]);
        bar.inc(1);
    }
    bar.finish_and_clear();
    println!("{} simulated, every host sending {} to a permutation partner at line rate, PFC on", args.duration, args.bytes);
    println!("{t}");
    Ok(0)
}

/// Flows that started this long before the end of a soak run must have completed.
const SOAK_TAIL: rnicsim::units::Time = rnicsim::units::Time::from_ms(10);

/// The shipped scenario a bench names by its repository path (`scenarios/bench/...`): as given
/// if it exists there (or the user named another), else in the repository this binary was built
/// from, so that the benches run from any folder.
fn shipped(path: &std::path::Path) -> anyhow::Result<std::path::PathBuf> {
    if path.exists() || path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path);
    repo.canonicalize().map_err(|_| anyhow::anyhow!("{}: no such file here or in the repository this binary was built from; pass --scenario FILE", path.display()))
}

fn soak(args: &SoakArgs, stop: &dyn Fn() -> bool) -> anyhow::Result<u8> {
    // Checked before the first run: the comparison needs a long run longer than the short one
    // (equal durations failed after the first run, on a temporary folder's name).
    let time = |flag: &str, text: &str| text.parse::<rnicsim::units::Time>().map_err(|e| anyhow::anyhow!("--{flag} {text}: {e}"));
    let (short, long) = (time("short", &args.short)?, time("long", &args.long)?);
    anyhow::ensure!(short < long, "--long ({}) must be longer than --short ({}): the soak compares a long run's memory with a short one's", args.long, args.short);
    let scenario = shipped(&args.scenario)?;
    let exe = std::env::current_exe()?;
    let tmp = tempfile::tempdir()?;
    let mut rows = Vec::new();
    for duration in [&args.short, &args.long] {
        eprintln!("soak: {} for {duration} …", scenario.display());
        let out = tmp.path().join(duration.as_str());
        let mut cmd = std::process::Command::new(&exe);
        cmd.args(["bench", "rdma", "--json", "--scenario"]).arg(&scenario).arg("--set").arg(format!("duration=\"{duration}\"")).arg("--out").arg(&out);
        // Stopped, the run and its temporary folder go with the soak.
        let Some(child) = child_output(&mut cmd, stop)? else {
            eprintln!("interrupted during the {duration} run; nothing was written");
            return Ok(130);
        };
        anyhow::ensure!(child.status.success(), "the {duration} run failed: {}", String::from_utf8_lossy(&child.stderr));
        let m: serde_json::Value = serde_json::from_slice(&child.stdout)?;
        rows.push((duration.clone(), m));
    }
    let rss = |m: &serde_json::Value| m["peak_rss_bytes"].as_f64().unwrap_or(f64::NAN);
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec!["simulated", "wall", "peak memory (RSS)", "flows started", "completed", "unfinished, started before the last 10 ms"]);
    for (d, m) in &rows {
        t.add_row(vec![
            d.clone(),
            format!("{:.1} s", m["wall_s"].as_f64().unwrap_or(f64::NAN)),
            format!("{:.1} MB", rss(m) / 1e6),
            m["flows_started"].to_string(),
            m["flows_completed"].to_string(),
            m["unfinished_before_tail"].to_string(),
        ]);
    }
    println!("{t}");
    println!("peak memory {} / {}: {:.3} (goal ≤ 1.10)", args.long, args.short, rss(&rows[1].1) / rss(&rows[0].1));
    Ok(0)
}

fn rdma(args: &RdmaArgs, stop: &dyn Fn() -> bool) -> anyhow::Result<u8> {
    let loaded = crate::load(&shipped(&args.scenario)?, &args.overrides)?;
    // With --out, the files the scenario writes beside the run folder are checked as `run`
    // checks them (not the scenario itself, nor inside the folder), before anything runs.
    if let Some(out) = &args.out {
        rnicsim::check_destinations(&loaded, Some(out))?;
    }
    let start = std::time::Instant::now();
    let mut world = rnicsim::world::World::build(&loaded)?;
    let built = start.elapsed();
    let dir = args.out.as_ref().map(|o| rnicsim::output::RunDir::create(o, args.force)).transpose()?;
    if let Some(d) = &dir {
        rnicsim::stream_outputs(d, &loaded, &mut world)?;
    }
    if world.run(|_| !stop()) == rnicsim::world::RunEnd::Interrupted {
        eprintln!("interrupted at {} of {}; nothing was written", world.now, loaded.scenario.duration);
        return Ok(130);
    }
    if let Some(d) = dir {
        let Some(baselines) = rnicsim::run_baselines_while(&loaded, |_, _| !stop())? else {
            eprintln!("interrupted during the baselines; nothing was written");
            return Ok(130);
        };
        rnicsim::write_outputs(&d, &loaded, &mut world, baselines)?;
        d.commit()?;
    }
    let wall = start.elapsed();
    let secs = wall.as_secs_f64();
    let data = world.stats.packets_sent;
    if args.json {
        let tail_start = world.end.saturating_sub(SOAK_TAIL);
        let unfinished = world.apps.flows.records.iter().filter(|r| r.status.is_none() && r.start < tail_start).count();
        let m = serde_json::json!({
            "duration_ps": world.end.0,
            "wall_s": secs,
            "peak_rss_bytes": peak_rss_bytes(),
            "flows_started": world.apps.flows.started(),
            "flows_completed": world.stats.flows_completed,
            "unfinished_before_tail": unfinished,
            "data_packets": data,
            "qp_slots": world.qps.len(),
            "qp_slot_bytes": std::mem::size_of::<rnicsim::nic::qp::Qp>(),
            "flow_records_held": world.apps.flows.records.capacity(),
        });
        println!("{m}");
        return Ok(0);
    }
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec!["rdma benchmark", "value"]);
    let rows = [
        ("scenario", format!("{} ({} simulated)", loaded.file, loaded.scenario.duration)),
        ("wall time", format!("{secs:.2} s (build {:.2} s)", built.as_secs_f64())),
        ("flows started / completed", format!("{} / {}", world.apps.flows.started(), world.stats.flows_completed)),
        ("data packets", format!("{data} ({:.2} M/s)", data as f64 / secs / 1e6)),
        ("packet-hops", format!("{} ({:.2} M/s)", world.stats.packet_hops, world.stats.packet_hops as f64 / secs / 1e6)),
        ("events", format!("{} ({:.2} M/s)", world.stats.events, world.stats.events as f64 / secs / 1e6)),
        ("peak memory (RSS)", peak_rss_bytes().map_or("unknown".into(), |b| format!("{:.1} MB", b as f64 / 1e6))),
    ];
    for (k, v) in rows {
        t.add_row(vec![k.to_string(), v]);
    }
    println!("{t}");
    Ok(0)
}

/// Most arrivals a round of `bench ordering` may have (about 1.6 GB of trace).
const MAX_ORDERING_ARRIVALS: u64 = 100_000_000;

fn ordering(args: &OrderingArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.connections > 0 && args.packets > 0 && args.rounds > 0, "--connections, --packets and --rounds must be positive");
    anyhow::ensure!((0.0..=1.0).contains(&args.displaced), "--displaced must be in [0, 1]");
    // The arrival trace of one round is built in memory before the clock starts (about 16 B an
    // arrival: its order, its place in the interleaving and the prefetch hint).
    let arrivals = args.connections as u64 * args.packets as u64;
    anyhow::ensure!(
        arrivals <= MAX_ORDERING_ARRIVALS,
        "--connections × --packets is {arrivals} arrivals a round; at most {MAX_ORDERING_ARRIVALS} (the trace is held in memory, about 16 B an arrival: {:.1} GB asked)",
        arrivals as f64 * 16.0 / 1e9
    );
    // The block sizes first (the sizes below divide by them), with memory to spare.
    let probe = eunomia::Config { block_bits: args.block_bits, cap_bits: args.cap_bits, memory_blocks: u32::MAX };
    probe.check()?;
    // Room for every connection's bitmap at its cap: nothing is refused for memory.
    let per = probe.metadata_blocks() + probe.max_rows() * probe.row_blocks();
    let memory_blocks = per.checked_mul(args.connections).ok_or_else(|| anyhow::anyhow!("{} connections of {per} blocks each do not fit a 32-bit block count", args.connections))?;
    let cfg = eunomia::Config { memory_blocks, ..probe };
    cfg.check()?;
    eprintln!(
        "ordering: {} connections, {} packets × {} messages each, {:.1}% displaced by up to {}, {}-bit blocks, {}-bit cap",
        args.connections, args.packets, args.rounds, args.displaced * 100.0, args.max_shift, args.block_bits, args.cap_bits
    );
    let r = eunomia::bench::run(cfg, args.connections, args.packets, args.rounds, args.displaced, args.max_shift, 1);
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec!["measure", "value", "goal"]);
    let rows = [
        ("arrivals", r.arrivals.to_string(), String::new()),
        ("arrivals out of order", format!("{:.1}%", r.out_of_order_fraction * 100.0), String::new()),
        ("wall time", format!("{:.3} s", r.elapsed.as_secs_f64()), String::new()),
        ("arrivals per second", format!("{:.1} M", r.arrivals_per_sec() / 1e6), "≥ 100 M".into()),
        ("bytes per connection (mean, all)", format!("{:.1}", r.mean_bytes_per_connection), String::new()),
        ("bytes per connection (mean, with a bitmap)", format!("{:.1}", r.mean_bytes_per_reordering_connection), "4–82 (paper, 256-bit cap)".into()),
        ("peak bytes", r.peak_bytes.to_string(), String::new()),
        ("refused (NACK)", r.refused.to_string(), String::new()),
        ("all delivered in order, all freed", r.all_delivered.to_string(), "true".into()),
    ];
    for (k, v, g) in rows {
        t.add_row(vec![k.to_string(), v, g]);
    }
    println!("{t}");
    anyhow::ensure!(r.all_delivered, "the ordering layer lost a packet or a block");
    Ok(())
}

fn yama_bench(args: &YamaArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.decisions > 0 && args.size > 0, "--decisions and --size must be positive");
    anyhow::ensure!(args.qps.iter().all(|&q| q > 0), "--qps must be positive");
    eprintln!("yama: one chain at 100 Gbps, weights 1:2:3:4 repeating, {} B pieces, {} decisions per point", args.size, args.decisions);
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec!["queue pairs", "decisions per second", "ns per decision", "submitted", "worst share error"]);
    for &qps in &args.qps {
        let r = yama::bench::run(qps, args.decisions, args.size);
        t.add_row(vec![
            qps.to_string(),
            format!("{:.2} M", r.decisions_per_sec() / 1e6),
            format!("{:.0}", 1e9 / r.decisions_per_sec()),
            r.sent.to_string(),
            format!("{:.2}%", r.worst_share_error * 100.0),
        ]);
    }
    println!("{t}");
    Ok(())
}

fn tassel(args: &TasselArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.packets > 0 && args.size >= 64, "--packets must be positive and --size at least 64");
    anyhow::ensure!(args.flows.iter().all(|&f| f > 0), "--flows must be positive");
    eprintln!("tassel: {} B packets, rate limits 1:2:4:8 summing to 98 Gbps, {} packets timed per point", args.size, args.packets);
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec!["flows", "Tassel Mpps", "SE-PIEO Mpps", "speed-up", "imminent (end)", "dropped fetches / sent"]);
    for &flows in &args.flows {
        let r = tassel::bench::run(flows, args.packets, args.size);
        t.add_row(vec![
            flows.to_string(),
            format!("{:.1}", r.tassel_pps() / 1e6),
            format!("{:.1}", r.baseline_pps() / 1e6),
            format!("{:.2}×", r.tassel_pps() / r.baseline_pps()),
            r.imminent_at_end.to_string(),
            format!("{:.3}", r.dropped_per_sent),
        ]);
    }
    println!("{t}");
    println!("scheduler state per flow: {} bytes (goal ≤ 32; the paper's hardware: 17)", tassel::Tassel::STATE_BYTES_PER_FLOW);
    Ok(())
}

fn fabric(args: &FabricArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.hosts_per_leaf > 0 && args.repeat > 0, "--hosts-per-leaf and --repeat must be positive");
    anyhow::ensure!(args.load > 0.0 && args.load <= 1.0, "--load must be in (0, 1]");
    let cfg = FabricBench { hosts_per_leaf: args.hosts_per_leaf, load: args.load, ..FabricBench::default() };
    eprintln!("fabric: {} hosts, permutation at {:.0}% load, {} B packets, {} simulated, best of {}", cfg.leaves * cfg.hosts_per_leaf, cfg.load * 100.0, cfg.packet_size, cfg.duration, args.repeat);
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
    t.add_row(vec!["packet-hop / heap op".to_string(), format!("{:.2}", best.ns_per_hop() / heap_ns), "≤ 2".to_string()]);
    t.add_row(vec!["peak packets alive".to_string(), best.peak_packets.to_string(), String::new()]);
    t.add_row(vec!["peak memory (process)".to_string(), peak_rss_bytes().map_or("n/a".into(), |b| format!("{:.1} MB", b as f64 / 1e6)), String::new()]);
    println!("{t}");
    Ok(())
}
