//! `rnicsim`: run, validate and benchmark scenarios. The command line lives in this library so
//! that the binary and the Python package (`python -m rnicsim`) run the same code.

mod bench;
mod display;

use anyhow::Context;
use clap::{Parser, Subcommand};
use rnicsim::output::RunDir;
use rnicsim::scenario::LoadedScenario;
use rnicsim::world::{RunEnd, World};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Parser)]
#[command(name = "rnicsim", version, about = "A deterministic packet-level simulator of RDMA NICs and datacenter fabrics")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario and write its results to a folder.
    Run {
        /// The scenario file (TOML).
        scenario: PathBuf,
        /// Output folder; it appears only once the run is complete. Default: runs/<scenario file name without its extension>.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Replace the output folder if it exists.
        #[arg(long)]
        force: bool,
        /// Override a key, e.g. --set links.rate='"25Gbps"' --set seed=7 (values are TOML).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        overrides: Vec<String>,
        /// No progress bar or summary table.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Check a scenario (and the files it names) without running it.
    Validate {
        scenario: PathBuf,
        #[arg(long = "set", value_name = "KEY=VALUE")]
        overrides: Vec<String>,
    },
    /// Measure simulator speed on a fixed fabric workload.
    Bench(bench::BenchArgs),
    /// SQL over a run folder's tables (DuckDB; runs `python -m rnicsim query`).
    #[command(disable_help_flag = true)]
    Query {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// An HTML report of one or more runs (runs `python -m rnicsim report`).
    #[command(disable_help_flag = true)]
    Report {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// A parameter sweep on a local pool or Ray (runs `python -m rnicsim sweep`).
    #[command(disable_help_flag = true)]
    Sweep {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// The paper reproductions and their gallery (runs `python -m rnicsim reproduce`).
    #[command(disable_help_flag = true)]
    Reproduce {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

/// Runs the command line `args` (program name first); `stop` is polled during long runs and
/// interrupts them (nothing is written) when it returns true. Returns the exit code.
pub fn main_with(args: Vec<String>, stop: &dyn Fn() -> bool) -> u8 {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let result = match cli.command {
        Command::Run { scenario, out, force, overrides, quiet } => run(&scenario, out, force, &overrides, quiet, stop),
        Command::Validate { scenario, overrides } => validate(&scenario, &overrides),
        Command::Bench(args) => bench::run(&args).map(|_| 0),
        Command::Query { args } => python("query", &args),
        Command::Report { args } => python("report", &args),
        Command::Sweep { args } => python("sweep", &args),
        Command::Reproduce { args } => python("reproduce", &args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            2
        }
    }
}

/// The analysis commands live in the Python package (DuckDB, polars, matplotlib, Ray): run them
/// with `$RNICSIM_PYTHON` (default `python3`), which must have `rnicsim` installed.
fn python(command: &str, args: &[String]) -> anyhow::Result<u8> {
    let exe = std::env::var("RNICSIM_PYTHON").unwrap_or_else(|_| "python3".into());
    let status = std::process::Command::new(&exe)
        .args(["-m", "rnicsim", command])
        .args(args)
        .status()
        .with_context(|| format!("cannot start {exe} for `rnicsim {command}`; install the Python package (`pip install .`) or set RNICSIM_PYTHON"))?;
    Ok(status.code().map_or(1, |c| c.clamp(0, 255) as u8))
}

/// Loads a scenario and applies `--set` overrides.
pub(crate) fn load(path: &Path, overrides: &[String]) -> anyhow::Result<LoadedScenario> {
    let loaded = LoadedScenario::from_file(path)?;
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
    if overrides.is_empty() {
        return Ok(loaded);
    }
    let pairs = overrides
        .iter()
        .map(|s| {
            s.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .filter(|(k, v)| !k.is_empty() && !v.is_empty())
                .with_context(|| format!("--set expects KEY=VALUE with both given, got \"{s}\""))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(loaded.with_overrides(&pairs)?)
}

fn validate(path: &Path, overrides: &[String]) -> anyhow::Result<u8> {
    let loaded = load(path, overrides)?;
    let world = World::build(&loaded)?;
    let switches = (0..world.ports.iter().map(|p| p.node + 1).max().unwrap_or(0)).filter(|&n| world.is_switch(n)).count();
    println!(
        "{}: valid — {} hosts, {} switches, {} links, {} traffic sources, {} flow generators, {} listed flows, {} perftests, {} simulated",
        path.display(),
        world.host_count(),
        switches,
        world.ports.len() / 2,
        world.apps.sources.list.len(),
        world.apps.flows.gens.len(),
        world.apps.flows.listed(),
        world.apps.perftests.tests.len(),
        loaded.scenario.duration
    );
    let e = world.estimate(&loaded);
    println!("expected: about {:.0} flows and {:.0} data packets (limits: {} flows, {} packets; [limits] raises them)", e.flows, e.packets, loaded.scenario.limits.max_flows, loaded.scenario.limits.max_packets);
    Ok(0)
}

fn run(path: &Path, out: Option<PathBuf>, force: bool, overrides: &[String], quiet: bool, stop: &dyn Fn() -> bool) -> anyhow::Result<u8> {
    let loaded = load(path, overrides)?;
    let mut world = World::build(&loaded)?;
    if world.scr_policy_missing() {
        anyhow::bail!("{}: [nic.scr.policy.external] takes its decisions from a policy object, which only the Python API can hand over (rnicsim.run(..., scr_policy=...))", path.display());
    }
    let out = out.unwrap_or_else(|| Path::new("runs").join(path.file_stem().unwrap_or_default()));
    let dir = RunDir::create(&out, force).with_context(|| format!("cannot prepare {}", out.display()))?;
    rnicsim::check_destinations(&loaded)?;
    rnicsim::stream_outputs(&dir, &loaded, &mut world).with_context(|| format!("cannot write results to {}", out.display()))?;

    let bar = display::progress_bar(quiet, loaded.scenario.duration);
    let started = Instant::now();
    let mut stalled = None;
    let end = world.run(|p| {
        display::update_progress(&bar, p, started.elapsed());
        if p.stalled_since != stalled {
            // Said as it happens (a long run need not be waited out to learn it stalled).
            bar.suspend(|| display::stall_news(&p, stalled));
            stalled = p.stalled_since;
        }
        !stop()
    });
    let wall = started.elapsed();
    bar.finish_and_clear();
    if end == RunEnd::Interrupted {
        eprintln!("interrupted at {} of {}; nothing was written", world.now, loaded.scenario.duration);
        return Ok(130);
    }
    let baselines = &loaded.scenario.baseline;
    if !quiet && !baselines.is_empty() {
        let names: Vec<&str> = baselines.iter().map(|b| b.name.as_str()).collect();
        eprintln!("running {} baselines one after another: {}", names.len(), names.join(", "));
    }
    let summary = rnicsim::write_outputs(&dir, &loaded, &mut world).with_context(|| format!("cannot write results to {}", out.display()))?;
    let out = dir.commit().with_context(|| format!("cannot move results into {}", out.display()))?;
    if let Some(st) = &summary.stall {
        eprintln!(
            "warning: the run stalled: nothing reached its destination after {} while {} packets were alive and {} flows and {} queue pairs waited{}{}; see `stall` in summary.json",
            rnicsim::units::Time(st.since_ps),
            st.packets_alive,
            st.waiting_flows,
            st.waiting_qps,
            match st.paused.len() {
                0 => String::new(),
                n => format!(", and {n} port classes were paused with packets queued (first: node {} port {} class {})", st.paused[0].node, st.paused[0].iface, st.paused[0].class),
            },
            match st.stopped_at_ps {
                Some(t) => format!("; stop_on_stall ended the run at {}", rnicsim::units::Time(t)),
                None => String::new(),
            }
        );
    }
    if !quiet {
        println!("{}", display::summary_table(&summary, wall));
        if let Some(t) = display::paper_table(&summary) {
            println!("{t}");
        }
        println!("results: {}", out.display());
    }
    Ok(0)
}
