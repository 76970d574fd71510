//! Golden outputs: every shipped scenario (examples, quickstart, the benchmark at a short
//! duration, the Eunomia, SCR, StaR, Tassel and Yama reproductions, the first part of the longer
//! ones, and the ns-3 config.txt path) is run and every
//! file of its run folder is digested (SHA-256). The digests are compared to
//! `tests/golden/digests.txt`, so a change that alters any output byte of any shipped scenario
//! fails here.
//!
//! `scenario.toml` names input files by absolute path; the checkout's own path is replaced by a
//! placeholder before digesting, so the digests hold in any clone.
//!
//! An intended change of outputs updates the file deliberately, in a commit of its own that says
//! why: `RNICSIM_BLESS=1 cargo test -p rnicsim --test golden`.

use rnicsim::output::RunDir;
use rnicsim::scenario::LoadedScenario;
use rnicsim::world::World;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod common;
use common::root;

/// The scenarios covered, with the overrides that keep each short enough for a debug build.
fn cases() -> Vec<(String, LoadedScenario)> {
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in ["scenarios", "scenarios/examples", "scenarios/bench", "scenarios/eunomia", "scenarios/scr", "scenarios/star", "scenarios/tassel", "scenarios/yama"] {
        let mut list: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        list.sort();
        files.extend(list);
    }
    let mut out = Vec::new();
    for f in files {
        let name = f.strip_prefix(root()).unwrap().to_string_lossy().replace('\\', "/");
        let mut loaded = LoadedScenario::from_file(&f).unwrap_or_else(|e| panic!("{e}"));
        // Messages (summary.json's warnings) name the file as the repository does, wherever
        // it is checked out.
        loaded.file = name.clone();
        if name.starts_with("scenarios/bench/") {
            loaded = loaded.with_overrides(&[("duration".into(), "\"300us\"".into())]).unwrap();
        }
        // StaR's workload reproductions run for milliseconds; their first 1.5 ms (connection
        // setup, state migration, the first rounds of calls) is digest enough in a debug build.
        if name.starts_with("scenarios/star/") && !name.starts_with("scenarios/star/fig1_") {
            loaded = loaded.with_overrides(&[("duration".into(), "\"1500us\"".into())]).unwrap();
        }
        // Eunomia's 128-host reproductions (each with its baselines) over their first 200 µs,
        // the Jellyfish one (whose path sets take longest to build) over 50 µs; Yama's over 1 ms.
        let first = |d: &str| vec![("duration".to_string(), format!("\"{d}\""))];
        if name.starts_with("scenarios/eunomia/") {
            let d = if name.contains("jellyfish") { "50us" } else { "200us" };
            loaded = loaded.with_overrides(&first(d)).unwrap();
        }
        if name.starts_with("scenarios/yama/") {
            loaded = loaded.with_overrides(&first("1ms")).unwrap();
        }
        out.push((name, loaded));
    }
    // The ns-3 path: a config.txt translated and run; its fct.txt/pfc.txt go into the run folder.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ns3");
    let mut loaded = common::ns3_config(&std::fs::read_to_string(dir.join("config.txt")).unwrap(), &dir);
    loaded.scenario.outputs.hpcc_text = true;
    out.push(("crates/rnicsim/tests/data/ns3/config.txt".into(), loaded));
    out
}

fn digests_of(name: &str, loaded: &LoadedScenario, tmp: &Path) -> Vec<(String, String)> {
    let mut w = World::build(loaded).unwrap_or_else(|e| panic!("{name}: {e}"));
    let target = tmp.join(name.replace('/', "_"));
    let dir = RunDir::create(&target, false).unwrap();
    // As `rnicsim run` does: the growing tables stream out during the run.
    rnicsim::stream_outputs(&dir, loaded, &mut w).unwrap();
    w.run(|_| true);
    rnicsim::write_outputs(&dir, loaded, &mut w, rnicsim::run_baselines(loaded).unwrap()).unwrap();
    let done = dir.commit().unwrap();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&done).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let mut bytes = std::fs::read(&p).unwrap();
            if p.file_name().is_some_and(|n| n == "scenario.toml") {
                bytes = without_checkout_path(&bytes);
            }
            // The marker names the build, which every edit of the sources changes.
            if p.file_name().is_some_and(|n| n == rnicsim::output::RUN_MARKER) {
                bytes = String::from_utf8(bytes).expect("the marker is UTF-8").replace(rnicsim::MODEL_ID, "<model>").into_bytes();
            }
            let hex: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
            (p.file_name().unwrap().to_string_lossy().into_owned(), hex)
        })
        .collect()
}

/// The resolved scenario names its input files by absolute path, which depends on where the
/// repository is checked out: digest it with the checkout's root replaced by a placeholder.
fn without_checkout_path(bytes: &[u8]) -> Vec<u8> {
    let root = std::fs::canonicalize(root()).unwrap();
    let text = String::from_utf8(bytes.to_vec()).expect("scenario.toml is UTF-8");
    text.replace(&root.to_string_lossy().into_owned(), "<checkout>").into_bytes()
}

#[test]
fn every_shipped_scenario_gives_its_golden_outputs() {
    let golden_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/digests.txt");
    let tmp = tempfile::tempdir().unwrap();
    let mut actual = BTreeMap::new();
    for (name, loaded) in cases() {
        for (file, hex) in digests_of(&name, &loaded, tmp.path()) {
            actual.insert(format!("{name} {file}"), hex);
        }
    }
    let text: String = actual.iter().map(|(k, v)| format!("{k} {v}\n")).collect();
    if std::env::var_os("RNICSIM_BLESS").is_some() {
        std::fs::create_dir_all(golden_path.parent().unwrap()).unwrap();
        std::fs::write(&golden_path, text).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&golden_path).unwrap_or_default();
    let expected: BTreeMap<String, String> = expected
        .lines()
        .filter_map(|l| l.rsplit_once(' '))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut diffs = Vec::new();
    for (k, v) in &actual {
        match expected.get(k) {
            None => diffs.push(format!("new output: {k}")),
            Some(e) if e != v => diffs.push(format!("changed: {k}")),
            _ => {}
        }
    }
    for k in expected.keys().filter(|k| !actual.contains_key(*k)) {
        diffs.push(format!("missing output: {k}"));
    }
    assert!(diffs.is_empty(), "outputs differ from tests/golden/digests.txt (bless with RNICSIM_BLESS=1 if intended):\n{}", diffs.join("\n"));
}
