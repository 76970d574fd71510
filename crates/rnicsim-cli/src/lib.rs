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
#[command(name = "rnicsim", version = rnicsim::VERSION, about = "A deterministic packet-level simulator of RDMA NICs and datacenter fabrics")]
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
        /// The scenario file (TOML, or an ns-3 config.txt).
        scenario: PathBuf,
        /// Override a key before checking, as `run --set` does (values are TOML).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        overrides: Vec<String>,
    },
    /// Measure simulator speed on a fixed fabric workload.
    Bench(bench::BenchArgs),
    /// Compare two FCT files flow by flow (an ns-3 FCT_OUTPUT_FILE and a config.txt run's, in
    /// HPCC's or ConWeave's format; .gz files are read too).
    CompareFct {
        /// The first file (e.g. the one rnicsim wrote).
        a: PathBuf,
        /// The second (e.g. ns-3's own).
        b: PathBuf,
    },
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

/// Whether the binary catches SIGINT, SIGTERM and SIGHUP for the command `args` names:
/// `run` and `bench rdma`, which write a run folder and stop without writing it, `bench soak`
/// and `scale`, which stop the runs they started (all poll `main_with`'s `stop`), and the
/// analysis commands, whose Python (started with the caught signals at their defaults) must
/// answer them even where this process was started ignoring SIGINT, as a script's background
/// job is. Other commands write nothing to undo, and a signal ends them as it ends any program
/// (caught, it was ignored: a `validate` reading a pipe never ended).
pub fn catches_signals(args: &[String]) -> bool {
    match Cli::try_parse_from(args) {
        Ok(Cli { command: Command::Run { .. } | Command::Query { .. } | Command::Report { .. } | Command::Sweep { .. } | Command::Reproduce { .. } }) => true,
        Ok(Cli { command: Command::Bench(b) }) => b.polls_stop(),
        _ => false,
    }
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
        Command::Bench(args) => bench::run(&args, stop),
        Command::CompareFct { a, b } => compare_fct(&a, &b),
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

/// The Python that runs the analysis commands: `$RNICSIM_PYTHON` (unless empty), else the active virtual
/// environment's, else `./.venv`'s (where the README installs the package), else `python3`.
fn python_exe() -> String {
    if let Some(p) = std::env::var("RNICSIM_PYTHON").ok().filter(|p| !p.is_empty()) {
        return p;
    }
    let venv = std::env::var_os("VIRTUAL_ENV").map(std::path::PathBuf::from).into_iter().chain([std::path::PathBuf::from(".venv")]);
    venv.map(|v| v.join("bin/python")).find(|p| p.is_file()).map_or_else(|| "python3".into(), |p| p.display().to_string())
}

/// The analysis commands live in the Python package (DuckDB, polars, matplotlib, Ray): run them
/// with [`python_exe`], which must have `rnicsim` installed (checked first, so that a Python
/// without it gets a way out rather than Python's bare "No module named rnicsim"). A package
/// built from other sources than this binary is warned of: its sweeps and reports would not
/// give what `rnicsim run` gives. Ctrl-C in the check exits with 130; the command itself
/// replaces this process.
fn python(command: &str, args: &[String]) -> anyhow::Result<u8> {
    let exe = python_exe();
    let how = || format!("cannot start {exe} for `rnicsim {command}`; install the Python package (`pip install .`) or set RNICSIM_PYTHON");
    // PYTHONSAFEPATH: the working folder is not searched for modules, so a folder named
    // `rnicsim` there (a checkout's, run from its parent) is not taken for the package.
    let probe = std::process::Command::new(&exe)
        .env("PYTHONSAFEPATH", "1")
        .args(["-c", "import rnicsim; print(getattr(rnicsim, 'MODEL_ID', 'older'))"])
        .stderr(std::process::Stdio::null())
        .output()
        .with_context(how)?;
    if interrupted(&probe.status) {
        return Ok(130);
    }
    if !probe.status.success() && args.iter().any(|a| a == "-h" || a == "--help") {
        // Help needs no analysis: say what the command is and how to get its options.
        use clap::CommandFactory;
        let about = Cli::command().find_subcommand(command).and_then(|c| c.get_about().map(|a| a.to_string())).unwrap_or_default();
        println!("{about}\n\nUsage: rnicsim {command} [ARGS]...\n\n`rnicsim {command}` runs in the Python package, and {exe} cannot import rnicsim, so its options are not listed here: install it (README: `python3 -m venv .venv && .venv/bin/pip install .`) or set RNICSIM_PYTHON to a python that has it, and ask again.");
        return Ok(0);
    }
    anyhow::ensure!(
        probe.status.success(),
        "`rnicsim {command}` runs in Python, and {exe} cannot import rnicsim: activate the environment the package is installed in (README: `python3 -m venv .venv && .venv/bin/pip install .`), or set RNICSIM_PYTHON to its python"
    );
    let theirs = String::from_utf8_lossy(&probe.stdout).trim().to_string();
    if theirs != rnicsim::MODEL_ID {
        eprintln!(
            "warning: the rnicsim package of {exe} is another build (model {theirs}) than this rnicsim (model {}): its runs may differ from `rnicsim run`'s; reinstall it from these sources (`{exe} -m pip install .`)",
            rnicsim::MODEL_ID
        );
    }
    // Python takes this process's place, so that a signal sent to it (`kill`, a batch
    // scheduler's SIGTERM) reaches the command, which stops its work and ends as it does on
    // Ctrl-C; a child would not see it (this process took SIGTERM and waited on).
    use std::os::unix::process::CommandExt;
    let error = std::process::Command::new(&exe).args(["-m", "rnicsim", command]).args(args).env("RNICSIM_PROG", "rnicsim").env("PYTHONSAFEPATH", "1").exec();
    Err::<u8, _>(error).with_context(how)
}

/// Whether a child Python ended by Ctrl-C (SIGINT, or its KeyboardInterrupt exit before the
/// package's own handler is in place).
fn interrupted(status: &std::process::ExitStatus) -> bool {
    use std::os::unix::process::ExitStatusExt;
    status.signal() == Some(2) || status.code() == Some(130)
}

/// Reads an FCT file (gzip-compressed when its name ends in `.gz`).
fn read_fct(path: &Path) -> anyhow::Result<Vec<rnicsim::output::fct_compare::FctLine>> {
    let raw = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let text = if path.extension().is_some_and(|e| e == "gz") {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&raw[..]), &mut s).with_context(|| format!("{}: not a gzip file of text", path.display()))?;
        s
    } else {
        String::from_utf8(raw).with_context(|| format!("{}: not a text file", path.display()))?
    };
    rnicsim::output::fct_compare::parse_fct(&text).map_err(|(line, m)| anyhow::anyhow!("{}:{line}: {m}", path.display()))
}

fn compare_fct(a: &Path, b: &Path) -> anyhow::Result<u8> {
    use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
    let c = rnicsim::output::fct_compare::compare(&read_fct(a)?, &read_fct(b)?);
    if c.matched == 0 {
        anyhow::bail!("no flow of {} is in {} (flows match by source, destination, size and start time)", a.display(), b.display());
    }
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec!["slowdown", "flows", "mean", "p50", "p99", "< 10 KB", "10–100 KB", "100 KB–1 MB", "≥ 1 MB"]);
    let (la, lb) = fct_labels(a, b);
    for (label, s) in [(la, c.a), (lb, c.b)] {
        let mut row = vec![label, s.flows.to_string(), format!("{:.3}", s.mean), format!("{:.3}", s.p50), format!("{:.2}", s.p99)];
        // (A bucket no matched flow falls in has no mean: a dash, not NaN.)
        row.extend(s.by_size.iter().map(|v| if v.is_nan() { "—".to_string() } else { format!("{v:.3}") }));
        t.add_row(row);
    }
    let ratio = |x: f64, y: f64| if (x / y).is_finite() { format!("{:.3}", x / y) } else { "—".to_string() };
    let mut row = vec!["first / second".to_string(), String::new(), ratio(c.a.mean, c.b.mean), ratio(c.a.p50, c.b.p50), ratio(c.a.p99, c.b.p99)];
    row.extend((0..4).map(|i| ratio(c.a.by_size[i], c.b.by_size[i])));
    t.add_row(row);
    println!("{t}");
    println!("{} flows in both ({} lines in the first file, {} in the second); {:.1}% of them have a slowdown within 10% of the other's", c.matched, c.lines.0, c.lines.1, 100.0 * c.within_10pct);
    Ok(0)
}

/// Row labels for two FCT files: their names, or as many trailing path components as tell
/// them apart (two runs' `fct.txt` are labelled by their folders: `run-a/fct.txt`).
fn fct_labels(a: &Path, b: &Path) -> (String, String) {
    let parts = |p: &Path| p.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>();
    let (pa, pb) = (parts(a), parts(b));
    let tail = |v: &[String], n: usize| v[v.len().saturating_sub(n)..].join("/");
    for n in 1..=pa.len().max(pb.len()) {
        let (x, y) = (tail(&pa, n), tail(&pb, n));
        if x != y {
            return (x, y);
        }
    }
    (a.display().to_string(), format!("{} (again)", b.display()))
}

/// Loads a scenario and applies `--set` overrides.
pub(crate) fn load(path: &Path, overrides: &[String]) -> anyhow::Result<LoadedScenario> {
    let pairs = overrides
        .iter()
        .map(|s| {
            s.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .filter(|(k, v)| !k.is_empty() && !v.is_empty())
                .with_context(|| format!("--set expects KEY=VALUE with both given, got \"{s}\""))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    // Overrides are applied before validation: one may mend a value the file has wrong.
    let loaded = LoadedScenario::from_file_with_overrides(path, &pairs)?;
    warn(&loaded);
    Ok(loaded)
}

/// Prints a scenario's warnings to stderr.
fn warn(loaded: &LoadedScenario) {
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
}

/// What `[nic.scr.policy.external]` needs that the command line cannot give it.
const POLICY_FROM_PYTHON: &str = "takes its decisions from a policy object, which only the Python API can hand over (rnicsim.run(..., scr_policy=...))";

fn validate(path: &Path, overrides: &[String]) -> anyhow::Result<u8> {
    let loaded = load(path, overrides)?;
    let world = World::build(&loaded)?;
    rnicsim::check_baselines(&loaded)?;
    // Where the run would write its ns-3 text files (it refused what validate passed).
    rnicsim::check_destinations(&loaded, None)?;
    for w in rnicsim::paper_path_warnings(&loaded, &world) {
        eprintln!("warning: {w}");
    }
    // Valid, but for the Python API alone: `run` refuses it (validate said "valid").
    if world.scr_policy_missing() {
        eprintln!("warning: {}", loaded.error_at("nic.scr.policy.external", format!("{POLICY_FROM_PYTHON}: `rnicsim run` refuses it")));
    }
    if let Some(why) = rnicsim::baseline_needing_a_policy(&loaded) {
        eprintln!("warning: {}: {why}: `rnicsim run` refuses it", path.display());
    }
    let switches = (0..world.ports.iter().map(|p| p.node + 1).max().unwrap_or(0)).filter(|&n| world.is_switch(n)).count();
    println!(
        "{}: valid — {} hosts, {} switches, {} links, {} traffic sources, {} flow generators, {} listed flows, {} perftests, {} NVMe-oF tenants, {} RPC entries, {} simulated",
        path.display(),
        world.host_count(),
        switches,
        world.ports.len() / 2,
        world.apps.sources.list.len(),
        world.apps.flows.gens.len(),
        world.apps.flows.listed(),
        world.apps.perftests.tests.len(),
        loaded.scenario.nvmf.len(),
        loaded.scenario.rpc.len(),
        loaded.scenario.duration
    );
    // What building the Yama application found (its periods come from the fabric's round trips).
    for (key, m) in &world.apps.yama.warnings {
        eprintln!("warning: {}", loaded.error_at(key, m.clone()));
    }
    if let Some(y) = &loaded.scenario.yama {
        let qps: u64 = y.entity.iter().map(|e| u64::from(e.instances) * u64::from(e.queues)).sum();
        println!(
            "yama: {} engines, {} chains, {} entities with {qps} queue pairs, isolation {}",
            y.engine.len(),
            y.chain.len(),
            y.entity.len(),
            if y.isolation { "on (libYama)" } else { "off (vanilla)" }
        );
    }
    let e = world.estimate(&loaded);
    println!("expected: about {:.0} flows and {:.0} data packets (limits: {} flows, {} packets; [limits] raises them)", e.flows, e.packets, loaded.scenario.limits.max_flows, loaded.scenario.limits.max_packets);
    Ok(0)
}

fn run(path: &Path, out: Option<PathBuf>, force: bool, overrides: &[String], quiet: bool, stop: &dyn Fn() -> bool) -> anyhow::Result<u8> {
    let mut loaded = load(path, overrides)?;
    let mut world = World::build(&loaded)?;
    // Said before the run, and kept with the scenario's warnings in `summary.json`.
    for w in rnicsim::paper_path_warnings(&loaded, &world) {
        eprintln!("warning: {w}");
        loaded.warnings.push(w);
    }
    if world.scr_policy_missing() {
        // Named at the table (file, line and key), as any other error of the scenario.
        let e = loaded.error_at("nic.scr.policy.external", format!("{POLICY_FROM_PYTHON}: the command line cannot run it"));
        anyhow::bail!("{e}");
    }
    if let Some(why) = rnicsim::baseline_needing_a_policy(&loaded) {
        anyhow::bail!("{}: {why}", path.display());
    }
    rnicsim::check_baselines(&loaded)?;
    let out = out.unwrap_or_else(|| Path::new("runs").join(path.file_stem().unwrap_or_default()));
    rnicsim::check_destinations(&loaded, Some(&out))?;
    let dir = RunDir::create(&out, force).with_context(|| format!("cannot prepare {}", out.display()))?;
    rnicsim::stream_outputs(&dir, &loaded, &mut world).with_context(|| format!("cannot write results to {}", out.display()))?;

    let mut progress = display::RunProgress::new(quiet, &world.progress());
    let started = Instant::now();
    let mut stalled = None;
    let end = world.run(|p| {
        progress.update(p, started.elapsed());
        if p.stalled_since != stalled {
            // Said as it happens (a long run need not be waited out to learn it stalled).
            progress.bar.suspend(|| display::stall_news(&p, stalled));
            stalled = p.stalled_since;
        }
        !stop()
    });
    let wall = started.elapsed();
    progress.bar.finish_and_clear();
    if end == RunEnd::Interrupted {
        eprintln!("interrupted at {} of {}; nothing was written", world.now, loaded.scenario.duration);
        return Ok(130);
    }
    let names: Vec<&str> = loaded.scenario.baseline.iter().map(|b| b.name.as_str()).collect();
    if !quiet && !names.is_empty() {
        eprintln!("running {} baselines one after another: {}", names.len(), names.join(", "));
    }
    // Each baseline with its own bar, and stopped by the same signals as the run.
    let mut current: Option<(usize, display::RunProgress, Instant)> = None;
    let baselines = rnicsim::run_baselines_while(&loaded, |i, p| {
        if current.as_ref().is_none_or(|(at, _, _)| *at != i) {
            if let Some((_, progress, _)) = current.take() {
                progress.bar.finish_and_clear();
            }
            let progress = display::RunProgress::new(quiet, &p);
            progress.bar.set_prefix(format!("baseline {}/{} {} ", i + 1, names.len(), names[i]));
            current = Some((i, progress, Instant::now()));
        }
        let (_, progress, started) = current.as_mut().expect("set above");
        progress.update(p, started.elapsed());
        !stop()
    });
    if let Some((_, progress, _)) = current.take() {
        progress.bar.finish_and_clear();
    }
    let Some(baselines) = baselines.with_context(|| format!("cannot run the baselines of {}", path.display()))? else {
        eprintln!("interrupted during the baselines; nothing was written");
        return Ok(130);
    };
    let summary = rnicsim::write_outputs(&dir, &loaded, &mut world, baselines).with_context(|| format!("cannot write results to {}", out.display()))?;
    // Ctrl-C while the files were written: they are dropped unmoved, as any time before (but
    // for an ns-3 config's own FCT and PFC files, already in place by then).
    if stop() {
        let o = &loaded.scenario.outputs;
        let outside: Vec<String> = [&o.fct_file, &o.pfc_file].into_iter().flatten().map(|p| loaded.base_dir.join(p).display().to_string()).collect();
        if outside.is_empty() {
            eprintln!("interrupted while writing the results; nothing was written");
        } else {
            eprintln!("interrupted while writing the results; the run folder was not written, but {} already were", outside.join(" and "));
        }
        return Ok(130);
    }
    let out = dir.commit().with_context(|| format!("cannot move results into {}", out.display()))?;
    // What the run itself found (the scenario's own warnings were printed when it was loaded).
    for w in &summary.warnings[loaded.warnings.len()..] {
        eprintln!("warning: {w}");
    }
    if let Some(st) = &summary.stall {
        eprintln!(
            "warning: the run stalled: nothing reached its destination after {} while {} packets were alive and {} flows and {} queue pairs waited{}{}{}{}; see `stall` in summary.json",
            rnicsim::units::Time(st.since_ps),
            st.packets_alive,
            st.waiting_flows,
            st.waiting_qps,
            match st.waiting_star_ends {
                0 => String::new(),
                n => format!(" (and {n} StaR connection ends)"),
            },
            match st.rnr_naks {
                0 => String::new(),
                n => format!("; {n} requests were refused in the run for want of a posted receive (RNR NAKs)"),
            },
            match st.paused_count {
                0 => String::new(),
                n => format!(", and {n} port classes were paused with packets queued (first, switches before hosts: node {} port {} class {})", st.paused[0].node, st.paused[0].iface, st.paused[0].class),
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
