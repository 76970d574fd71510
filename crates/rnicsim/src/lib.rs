//! rnicsim: a deterministic, packet-level simulator of RDMA NICs and datacenter fabrics.
//!
//! Layout (mirroring the data path; `docs/architecture.md` follows one WRITE through it):
//! [`units`] and [`sim`] are the kernel (integer picosecond time, the event queue, seeded random
//! streams); [`wire`] the packet and its headers (RoCEv2, INT, pcap bytes); [`nic`] the RDMA NIC
//! (verbs, PCIe, connection table, the RC transport with its recovery schemes, the event tap, QP
//! schedulers, congestion control); [`fabric`] links, ports, switches, load balancers, routing and
//! carried paths, topologies; [`host`] the applications (flows, perftest, raw sources) and their
//! inputs; [`scenario`] reads and validates scenario files; [`world`] only wires the components
//! to the event loop; [`output`] writes a run's results.
//!
//! ```no_run
//! use rnicsim::{scenario::LoadedScenario, world::World};
//! let loaded = LoadedScenario::from_file("scenarios/quickstart.toml".as_ref()).unwrap();
//! let mut world = World::build(&loaded).unwrap();
//! world.run(|_| true);
//! println!("{} packets delivered", world.stats.packets_delivered);
//! ```

/// A hash of the simulator's sources (`build.rs`): which code made a result. Run folders
/// record it, `rnicsim --version` prints it, and a sweep's point folders are keyed by it.
pub const MODEL_ID: &str = env!("RNICSIM_MODEL_ID");

/// The version `rnicsim --version` prints: the package's and the model's.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (model ", env!("RNICSIM_MODEL_ID"), ")");

pub mod bench;
pub mod fabric;
pub mod host;
pub mod input;
pub mod nic;
pub mod output;
pub mod scenario;
pub mod sim;
pub mod units;
pub mod wire;
pub mod world;

use output::{tables, RunDir, Summary};
use scenario::LoadedScenario;
use world::{RunEnd, World};

/// Checks, before a run, that the files it writes outside its run folder (an ns-3 config's
/// FCT_OUTPUT_FILE and PFC_OUTPUT_FILE) can be written: their folder exists and takes a file,
/// and neither is the other or a file the scenario reads (its own file, its topology, flow or
/// CDF files), which the copy at the end of the run would overwrite, and neither lies inside
/// the run folder `out` (when the caller knows it), which the run puts in place as a whole when
/// it finishes: a file written there first would be lost with the folder it replaces, or keep a
/// fresh folder from being taken.
pub fn check_destinations(loaded: &LoadedScenario, out: Option<&std::path::Path>) -> Result<(), scenario::ScenarioError> {
    let o = &loaded.scenario.outputs;
    let s = &loaded.scenario;
    // Where a path lands, whether or not the file exists yet: its folder resolved, links and all.
    let landing = |p: &std::path::Path| -> Option<std::path::PathBuf> {
        let folder = p.parent().filter(|f| !f.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
        Some(folder.canonicalize().ok()?.join(p.file_name()?))
    };
    let mut inputs = vec![("the scenario itself", loaded.source_path())];
    if let scenario::TopologySpec::File { path } = &s.topology {
        inputs.push(("its topology file", loaded.base_dir.join(path)));
    }
    for f in &s.flows {
        inputs.extend(f.cdf.iter().map(|p| ("a flow-size CDF", loaded.base_dir.join(p))));
        inputs.extend(f.file.iter().map(|p| ("a flow file", loaded.base_dir.join(p))));
    }
    let inputs: Vec<(&str, std::path::PathBuf)> = inputs.into_iter().filter_map(|(k, p)| Some((k, landing(&p)?))).collect();
    let run_folder = out.and_then(|o| o.canonicalize().ok().or_else(|| landing(o)));
    let mut written: Vec<(&str, std::path::PathBuf)> = Vec::new();
    for (key, what, path) in [("outputs.fct_file", "the FCT file", &o.fct_file), ("outputs.pfc_file", "the PFC file", &o.pfc_file)] {
        let Some(p) = path else { continue };
        let p = loaded.base_dir.join(p);
        let folder = p.parent().filter(|f| !f.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
        if !folder.is_dir() {
            return Err(loaded.error_at(key, format!("cannot write {}: folder {} does not exist", p.display(), folder.display())));
        }
        if p.is_dir() {
            return Err(loaded.error_at(key, format!("cannot write {}: it is a folder; name a file", p.display())));
        }
        // The file is written beside and moved into place, which replaces whatever the path
        // names: a device (a run as root turned /dev/full into a file), a link (not what it
        // points to) or a pipe. Only a regular file, or nothing yet, is replaced.
        if let Ok(m) = std::fs::symlink_metadata(&p) {
            if !m.file_type().is_file() {
                let kind = if m.file_type().is_symlink() { "a symbolic link" } else { "not a regular file (a device, a pipe or a socket)" };
                return Err(loaded.error_at(key, format!("cannot write {}: it is {kind}, which the finished file would replace; name a regular file", p.display())));
            }
        }
        if let Some(at) = landing(&p) {
            if let Some((other, _)) = written.iter().find(|(_, w)| *w == at) {
                return Err(loaded.error_at(key, format!("cannot write {}: {other} is the same file, and one would overwrite the other; name two files", p.display())));
            }
            if let Some((input, _)) = inputs.iter().find(|(_, i)| *i == at) {
                return Err(loaded.error_at(key, format!("cannot write {}: it is {input}, which the run reads; name another file", p.display())));
            }
            if let (Some(run), Some(o)) = (&run_folder, out) {
                if at.starts_with(run) {
                    return Err(loaded.error_at(key, format!("cannot write {}: it is inside the run folder {}, which the run puts in place whole when it finishes (a file there would be lost or keep the folder from being taken); name a file outside it", p.display(), o.display())));
                }
            }
            written.push((what, at));
        }
        let probe = p.with_extension(format!("probe-{}", std::process::id()));
        std::fs::write(&probe, b"").and_then(|_| std::fs::remove_file(&probe)).map_err(|e| loaded.error_at(key, format!("cannot write in {}: {e}", folder.display())))?;
    }
    Ok(())
}

/// Warnings, naming file, line and key, for `[[paper]]` and `[[figure]]` metric paths that the
/// summary of `world` (built from `loaded`, not yet run) cannot hold: a misspelt metric is found
/// before the run rather than as a missing value after it ([`output::paper::unresolved`]).
pub fn paper_path_warnings(loaded: &LoadedScenario, world: &World) -> Vec<String> {
    let s = &loaded.scenario;
    if s.paper.is_empty() && s.figure.is_empty() {
        return Vec::new();
    }
    let Ok(summary) = Summary::try_of(world, &s.name) else { return Vec::new() };
    let v = serde_json::to_value(&summary).expect("a summary serializes");
    let baselines: Vec<String> = s.baseline.iter().map(|b| b.name.clone()).collect();
    output::paper::unresolved(&v, &s.paper, &s.figure, &baselines).into_iter().map(|(key, m)| loaded.error_at(&key, m).to_string()).collect()
}

/// Sends the outputs that grow with simulated time (flows, PFC frames and their HPCC text
/// forms) to `dir` while `world` runs, so its memory stays flat however long the run; call
/// before [`World::run`], then [`write_outputs`] as usual. The files are the same either way.
pub fn stream_outputs(dir: &RunDir, loaded: &LoadedScenario, world: &mut World) -> std::io::Result<()> {
    stream_outputs_every(dir, loaded, world, output::stream::SPILL_ROWS)
}

/// [`stream_outputs`], writing a table out whenever it holds `rows` rows.
pub fn stream_outputs_every(dir: &RunDir, loaded: &LoadedScenario, world: &mut World, rows: usize) -> std::io::Result<()> {
    let rows = rows.max(1);
    let o = &loaded.scenario.outputs;
    let text = |wanted: bool, name: &str| if wanted { output::stream::text_file(&dir.path(name)).map(Some) } else { Ok(None) };
    world.apps.flows.stream = Some(output::stream::FlowStream {
        spill_rows: rows,
        table: output::stream::TableFile::new(dir.path("flows.parquet")),
        fct: text(o.hpcc_text || o.fct_file.is_some(), "fct.txt")?,
        fct_dialect: o.fct_dialect,
        pending: Vec::new(),
        slowdowns: output::stream::Spill::new(dir.path(".slowdowns.f64")),
        fcts: output::stream::Spill::new(dir.path(".fcts.f64")),
        error: None,
    });
    let nodes = world.ports.iter().map(|p| p.node + 1).max().unwrap_or(0);
    world.record.pfc_stream = Some(output::PfcStream {
        spill_rows: rows,
        table: output::stream::TableFile::new(dir.path("pfc.parquet")),
        text: text(o.hpcc_text || o.pfc_file.is_some(), "pfc.txt")?,
        is_switch: (0..nodes).map(|n| world.is_switch(n)).collect(),
        error: None,
    });
    Ok(())
}

/// Builds each `[[baseline]]` variant's world, before any run: a variant its `[limits]` (or its
/// topology) refuse is found before the main run's work, which was lost when it was found after.
pub fn check_baselines(loaded: &LoadedScenario) -> Result<(), scenario::ScenarioError> {
    for (i, b) in loaded.scenario.baseline.iter().enumerate() {
        let variant = loaded.baseline(i)?;
        World::build(&variant).map_err(|mut e| {
            e.message = format!("baseline `{}`: {}", b.name, e.message);
            e
        })?;
    }
    Ok(())
}

/// Runs each `[[baseline]]` variant of the scenario in turn and returns their summaries, each
/// named by its baseline (their other outputs are not kept).
pub fn run_baselines(loaded: &LoadedScenario) -> std::io::Result<Vec<Summary>> {
    Ok(run_baselines_while(loaded, |_, _| true)?.expect("runs that are never stopped end"))
}

/// [`run_baselines`], calling `keep_going(i, progress)` as baseline `i` runs (as
/// [`World::run`] calls its callback): `None` if it returned false, which stops the runs.
pub fn run_baselines_while(loaded: &LoadedScenario, keep_going: impl FnMut(usize, world::Progress) -> bool) -> std::io::Result<Option<Vec<Summary>>> {
    run_baselines_prepared(loaded, |_| Ok(()), keep_going)
}

/// [`run_baselines_while`], calling `prepare(world)` on each baseline's world before it runs
/// (to hand it the outside SCR policy the main run has). A baseline whose
/// `[nic.scr.policy.external]` is still without a policy then is an error: it ran with none,
/// deciding nothing, and its numbers compared as if it had.
pub fn run_baselines_prepared(
    loaded: &LoadedScenario,
    mut prepare: impl FnMut(&mut World) -> Result<(), String>,
    mut keep_going: impl FnMut(usize, world::Progress) -> bool,
) -> std::io::Result<Option<Vec<Summary>>> {
    let mut out = Vec::new();
    for (i, b) in loaded.scenario.baseline.iter().enumerate() {
        let variant = loaded.baseline(i).map_err(std::io::Error::other)?;
        let mut world = World::build(&variant).map_err(std::io::Error::other)?;
        prepare(&mut world).map_err(|e| std::io::Error::other(format!("baseline `{}`: {e}", b.name)))?;
        if world.scr_policy_missing() {
            return Err(std::io::Error::other(baseline_policy_missing(&b.name)));
        }
        if world.run(|p| keep_going(i, p)) == RunEnd::Interrupted {
            return Ok(None);
        }
        out.push(Summary::try_of(&world, &b.name)?);
    }
    Ok(Some(out))
}

/// The error of a baseline that runs `[nic.scr.policy.external]` with no policy object.
fn baseline_policy_missing(name: &str) -> String {
    format!("baseline `{name}`: [nic.scr.policy.external] takes its decisions from a policy object, which only the Python API can hand over (rnicsim.run(..., scr_policy=...)), and then to every run")
}

/// The error of the first `[[baseline]]` entry whose variant runs `[nic.scr.policy.external]`:
/// with no policy object to hand it (the command line), it cannot run; said before the main run.
pub fn baseline_needing_a_policy(loaded: &LoadedScenario) -> Option<String> {
    let external = |l: &LoadedScenario| l.scenario.nic.scr.as_ref().is_some_and(|s| matches!(s.policy, nic::scr::PolicySpec::External(_)));
    let i = (0..loaded.scenario.baseline.len()).find(|&i| loaded.baseline(i).is_ok_and(|v| external(&v)))?;
    Some(baseline_policy_missing(&loaded.scenario.baseline[i].name))
}

/// Writes every output of a finished run into `dir` (which the caller then commits): what was
/// streamed there during the run is completed, the rest written from memory. `baselines` are
/// the summaries of its `[[baseline]]` runs ([`run_baselines`]).
pub fn write_outputs(dir: &RunDir, loaded: &LoadedScenario, world: &mut World, baselines: Vec<Summary>) -> std::io::Result<Summary> {
    world.apps.flows.flush_stream()?;
    let mut summary = Summary::try_of(world, &loaded.scenario.name)?;
    summary.baselines = baselines;
    summary.compare_with(&loaded.scenario);
    summary.warnings = loaded.warnings.clone();
    let unfinished = world.apps.flows.unfinished_listed(&loaded.scenario, world.now);
    summary.warnings.extend(unfinished.into_iter().map(|(key, m)| loaded.error_at(&key, m).to_string()));
    summary.warnings.extend(world.record.rates.warning());
    summary.warnings.extend(world.apps.yama.warnings.iter().map(|(key, m)| loaded.error_at(key, m.clone()).to_string()));
    let rpc = summary.rpc.iter().enumerate().filter_map(|(i, r)| r.window_warning().map(|m| loaded.error_at(&format!("rpc[{i}].warmup"), m).to_string()));
    summary.warnings.extend(rpc.collect::<Vec<_>>());
    if let Some(scr) = world.tap.scr.as_ref() {
        summary.warnings.extend(scr.rate_log.warning("scr_rates.parquet"));
        summary.warnings.extend(scr.rtt_log.warning("scr_rtt.parquet"));
    }
    std::fs::write(dir.path("scenario.toml"), loaded.resolved_toml())?;
    tables::write_parquet(&dir.path("counters.parquet"), &tables::counters(world))?;
    tables::write_parquet(&dir.path("sources.parquet"), &tables::sources(world))?;
    tables::write_parquet(&dir.path("perftest.parquet"), &tables::perftest(world))?;
    tables::write_parquet(&dir.path("rates.parquet"), &tables::rates(&world.record))?;
    if let Some(log) = &world.tap.log {
        tables::write_parquet(&dir.path("nic_events.parquet"), &tables::nic_events(log))?;
    }
    if world.apps.flows.stream.is_none() {
        // A run that did not stream: the same writers take everything from memory now.
        stream_outputs(dir, loaded, world)?;
        world.apps.flows.queue_completed_for_fct();
    }
    world.apps.flows.finish_stream()?;
    world.record.finish_pfc_stream()?;
    let o = &loaded.scenario.outputs;
    // Files an ns-3 config names, outside the run folder: each appears whole or not at all.
    for (path, name) in [(&o.fct_file, "fct.txt"), (&o.pfc_file, "pfc.txt")] {
        if let Some(p) = path {
            let p = loaded.base_dir.join(p);
            let tmp = p.with_extension(format!("partial-{}", std::process::id()));
            let placed = std::fs::copy(dir.path(name), &tmp).and_then(|_| std::fs::rename(&tmp, &p));
            if let Err(e) = placed {
                let _ = std::fs::remove_file(&tmp);
                return Err(std::io::Error::new(e.kind(), format!("cannot write {}: {e}", p.display())));
            }
        }
    }
    if !o.hpcc_text {
        for name in ["fct.txt", "pfc.txt"] {
            if dir.path(name).exists() {
                std::fs::remove_file(dir.path(name))?;
            }
        }
    }
    if !o.pcap.is_empty() {
        wire::pcap::write_pcap(&dir.path("capture.pcap"), &world.capture)?;
    }
    tables::write_parquet(&dir.path("queues.parquet"), &tables::queues(&world.record))?;
    if world.nic_spec.state_cache.is_some() {
        tables::write_parquet(&dir.path("state_cache.parquet"), &tables::state_cache(&world.record))?;
    }
    if world.nic_spec.ordering.is_some() {
        tables::write_parquet(&dir.path("ordering.parquet"), &tables::ordering(&world.record))?;
    }
    if let Some(scr) = world.tap.scr.as_ref().filter(|_| world.nic_spec.scr.as_ref().is_some_and(|s| s.telemetry.is_some())) {
        tables::write_parquet(&dir.path("scr_telemetry.parquet"), &tables::scr_telemetry(&scr.telemetry_log))?;
    }
    if let Some(scr) = world.tap.scr.as_ref() {
        tables::write_parquet(&dir.path("scr_rates.parquet"), &tables::scr_rates(&scr.rate_log))?;
        tables::write_parquet(&dir.path("scr_rtt.parquet"), &tables::scr_rtt(&scr.rtt_log))?;
    }
    if let Some(y) = &loaded.scenario.yama {
        tables::write_parquet(&dir.path("yama_timeline.parquet"), &tables::yama_timeline(&world.apps.yama, y))?;
    }
    // Written last: its presence marks a complete run.
    std::fs::write(dir.path("summary.json"), serde_json::to_string_pretty(&summary).expect("summary serializes") + "\n")?;
    Ok(summary)
}
