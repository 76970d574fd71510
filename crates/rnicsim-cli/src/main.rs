//! `rnicsim`: run, validate and benchmark scenarios.

mod bench;
mod display;

use anyhow::Context;
use clap::{Parser, Subcommand};
use rnicsim::output::RunDir;
use rnicsim::scenario::LoadedScenario;
use rnicsim::world::{RunEnd, World};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
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
        /// Output folder; it appears only once the run is complete. Default: runs/<scenario name>.
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run { scenario, out, force, overrides, quiet } => run(&scenario, out, force, &overrides, quiet),
        Command::Validate { scenario, overrides } => validate(&scenario, &overrides),
        Command::Bench(args) => bench::run(&args).map(|_| ExitCode::SUCCESS),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
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
        .map(|s| s.split_once('=').map(|(k, v)| (k.trim().to_string(), v.trim().to_string())).with_context(|| format!("--set expects KEY=VALUE, got \"{s}\"")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(loaded.with_overrides(&pairs)?)
}

fn validate(path: &Path, overrides: &[String]) -> anyhow::Result<ExitCode> {
    let loaded = load(path, overrides)?;
    let world = World::build(&loaded)?;
    let switches = (0..world.ports.iter().map(|p| p.node + 1).max().unwrap_or(0)).filter(|&n| world.is_switch(n)).count();
    println!(
        "{}: valid — {} hosts, {} switches, {} links, {} traffic sources, {} flow generators, {} listed flows, {} perftests, {} simulated",
        path.display(),
        world.host_count(),
        switches,
        world.ports.len() / 2,
        world.sources.len(),
        world.flow_generators(),
        world.listed_flows(),
        world.perftests.len(),
        loaded.scenario.duration
    );
    Ok(ExitCode::SUCCESS)
}

fn run(path: &Path, out: Option<PathBuf>, force: bool, overrides: &[String], quiet: bool) -> anyhow::Result<ExitCode> {
    let loaded = load(path, overrides)?;
    let mut world = World::build(&loaded)?;
    let out = out.unwrap_or_else(|| Path::new("runs").join(path.file_stem().unwrap_or_default()));
    let dir = RunDir::create(&out, force).with_context(|| format!("cannot prepare {}", out.display()))?;

    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        // A second Ctrl-C while stopping falls through to the default handler.
        let _ = ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst));
    }
    let bar = display::progress_bar(quiet, loaded.scenario.duration);
    let started = Instant::now();
    let end = world.run(|p| {
        display::update_progress(&bar, p, started.elapsed());
        !stop.load(Ordering::Relaxed)
    });
    let wall = started.elapsed();
    bar.finish_and_clear();
    if end == RunEnd::Interrupted {
        eprintln!("interrupted at {} of {}; nothing was written", world.now, loaded.scenario.duration);
        return Ok(ExitCode::from(130));
    }
    let summary = rnicsim::write_outputs(&dir, &loaded, &world).with_context(|| format!("cannot write results to {}", out.display()))?;
    let out = dir.commit().with_context(|| format!("cannot move results into {}", out.display()))?;
    if !quiet {
        println!("{}", display::summary_table(&summary, wall));
        if let Some(t) = display::paper_table(&summary) {
            println!("{t}");
        }
        println!("results: {}", out.display());
    }
    Ok(ExitCode::SUCCESS)
}
