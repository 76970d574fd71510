//! What several test files need: where the checkout is and which scenarios it ships.

use std::path::{Path, PathBuf};

/// The checkout's root folder.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// An ns-3 `config.txt` text translated and loaded from `dir`, with its FCT and PFC files
/// turned off so that nothing is written into the source tree.
#[allow(dead_code)] // not every test file that includes this module runs ns-3 configs
pub fn ns3_config(text: &str, dir: &Path) -> rnicsim::scenario::LoadedScenario {
    let t = rnicsim::scenario::ns3::translate(text, "config.txt", dir).unwrap_or_else(|e| panic!("{e}"));
    let mut loaded = rnicsim::scenario::LoadedScenario::from_str(&t.toml, "config.txt", dir).unwrap_or_else(|e| panic!("{e}"));
    loaded.scenario.outputs.fct_file = None;
    loaded.scenario.outputs.pfc_file = None;
    loaded
}

/// Every `.toml` file under `scenarios/`, sorted.
#[allow(dead_code)] // not every test file that includes this module walks the scenarios
pub fn shipped_scenarios() -> Vec<PathBuf> {
    let mut dirs = vec![root().join("scenarios")];
    let mut files = Vec::new();
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "toml") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

/// Runs a scenario (and its baselines) to its end; its summary, with the paper comparisons and
/// figures.
#[allow(dead_code)] // not every test file that includes this module runs whole scenarios
pub fn run_summary(loaded: &rnicsim::scenario::LoadedScenario, name: &str) -> rnicsim::output::Summary {
    let mut w = rnicsim::world::World::build(loaded).unwrap_or_else(|e| panic!("{e}"));
    w.run(|_| true);
    let mut s = rnicsim::output::Summary::of(&w, name);
    s.baselines = rnicsim::run_baselines(loaded).unwrap_or_else(|e| panic!("{e}"));
    s.compare_with(&loaded.scenario);
    s
}

/// A shipped scenario, `scenarios/<path>`, run to its end (see [`run_summary`]).
#[allow(dead_code)]
pub fn run_shipped(path: &str) -> rnicsim::output::Summary {
    let loaded = rnicsim::scenario::LoadedScenario::from_file(&root().join("scenarios").join(path)).unwrap_or_else(|e| panic!("{e}"));
    run_summary(&loaded, path)
}
