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
use world::World;

/// Checks, before a run, that the files it writes outside its run folder (an ns-3 config's
/// FCT_OUTPUT_FILE and PFC_OUTPUT_FILE) can be written: their folder exists and takes a file.
pub fn check_destinations(loaded: &LoadedScenario) -> Result<(), scenario::ScenarioError> {
    let o = &loaded.scenario.outputs;
    for (key, path) in [("outputs.fct_file", &o.fct_file), ("outputs.pfc_file", &o.pfc_file)] {
        let Some(p) = path else { continue };
        let p = loaded.base_dir.join(p);
        let folder = p.parent().filter(|f| !f.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
        if !folder.is_dir() {
            return Err(loaded.error_at(key, format!("cannot write {}: folder {} does not exist", p.display(), folder.display())));
        }
        let probe = p.with_extension(format!("probe-{}", std::process::id()));
        std::fs::write(&probe, b"").and_then(|_| std::fs::remove_file(&probe)).map_err(|e| loaded.error_at(key, format!("cannot write in {}: {e}", folder.display())))?;
    }
    Ok(())
}

/// Writes every output of a finished run into `dir` (which the caller then commits).
pub fn write_outputs(dir: &RunDir, loaded: &LoadedScenario, world: &World) -> std::io::Result<Summary> {
    let mut summary = Summary::of(world, &loaded.scenario.name);
    summary.compare_with(&loaded.scenario.paper);
    std::fs::write(dir.path("scenario.toml"), loaded.resolved_toml())?;
    tables::write_parquet(&dir.path("counters.parquet"), &tables::counters(world))?;
    tables::write_parquet(&dir.path("sources.parquet"), &tables::sources(world))?;
    tables::write_parquet(&dir.path("flows.parquet"), &tables::flows(world))?;
    tables::write_parquet(&dir.path("perftest.parquet"), &tables::perftest(world))?;
    tables::write_parquet(&dir.path("rates.parquet"), &tables::rates(&world.record))?;
    if let Some(log) = &world.tap.log {
        tables::write_parquet(&dir.path("nic_events.parquet"), &tables::nic_events(log))?;
    }
    if loaded.scenario.outputs.hpcc_text {
        std::fs::write(dir.path("fct.txt"), output::hpcc_text::fct_txt(world))?;
        std::fs::write(dir.path("pfc.txt"), output::hpcc_text::pfc_txt(world))?;
    }
    // Files an ns-3 config names, outside the run folder: each appears whole or not at all.
    let o = &loaded.scenario.outputs;
    for (path, text) in [(&o.fct_file, output::hpcc_text::fct_txt as fn(&World) -> String), (&o.pfc_file, output::hpcc_text::pfc_txt)] {
        if let Some(p) = path {
            let p = loaded.base_dir.join(p);
            let tmp = p.with_extension(format!("partial-{}", std::process::id()));
            std::fs::write(&tmp, text(world))?;
            std::fs::rename(&tmp, &p)?;
        }
    }
    if !loaded.scenario.outputs.pcap.is_empty() {
        wire::pcap::write_pcap(&dir.path("capture.pcap"), &world.capture)?;
    }
    tables::write_parquet(&dir.path("queues.parquet"), &tables::queues(&world.record))?;
    tables::write_parquet(&dir.path("pfc.parquet"), &tables::pfc(&world.record))?;
    // Written last: its presence marks a complete run.
    std::fs::write(dir.path("summary.json"), serde_json::to_string_pretty(&summary).expect("summary serializes") + "\n")?;
    Ok(summary)
}
