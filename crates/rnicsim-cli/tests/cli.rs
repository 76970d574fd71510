//! The `rnicsim` binary end to end: outputs, determinism, and clean failure.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn rnicsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rnicsim")).args(args).output().expect("the binary runs")
}

fn quickstart() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/quickstart.toml")
}

fn run_to(dir: &Path, extra: &[&str]) -> Output {
    let q = quickstart();
    let mut args = vec!["run", q.to_str().unwrap(), "--out", dir.to_str().unwrap(), "--quiet"];
    args.extend_from_slice(extra);
    rnicsim(&args)
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap()).map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap())).collect();
    v.sort();
    v
}

#[test]
fn run_writes_every_output() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = run_to(&out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let names: Vec<String> = files(&out).into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [".rnicsim-run", "counters.parquet", "fct.txt", "flows.parquet", "perftest.parquet", "pfc.parquet", "pfc.txt", "queues.parquet", "rates.parquet", "scenario.toml", "sources.parquet", "summary.json"]
    );
    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert!(summary["packets_delivered"].as_u64().unwrap() > 10_000);
    assert!(summary["rdma"]["flows_completed"].as_u64().unwrap() > 500);
    let fct = std::fs::read_to_string(out.join("fct.txt")).unwrap();
    assert_eq!(fct.lines().count() as u64, summary["rdma"]["flows_completed"].as_u64().unwrap());
    assert_eq!(fct.lines().next().unwrap().split_whitespace().count(), 8, "HPCC fct.txt has eight columns");
    // The resolved scenario reproduces the run.
    let again = tmp.path().join("again");
    let resolved = out.join("scenario.toml");
    let o = rnicsim(&["run", resolved.to_str().unwrap(), "--out", again.to_str().unwrap(), "--quiet"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(out.join("summary.json")).unwrap(), std::fs::read(again.join("summary.json")).unwrap());
}

#[test]
fn same_seed_gives_identical_bytes_and_another_seed_does_not() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, c) = (tmp.path().join("a"), tmp.path().join("b"), tmp.path().join("c"));
    assert!(run_to(&a, &[]).status.success());
    assert!(run_to(&b, &[]).status.success());
    assert!(run_to(&c, &["--set", "seed=2"]).status.success());
    assert_eq!(files(&a), files(&b), "same scenario and seed, same bytes");
    let flows = |d: &Path| std::fs::read(d.join("flows.parquet")).unwrap();
    assert_ne!(flows(&a), flows(&c), "another seed, another run");
}

#[test]
fn invalid_scenario_writes_nothing_and_names_line_and_key() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.toml");
    let text = std::fs::read_to_string(quickstart()).unwrap().replace("load = 0.25", "load = -0.25");
    std::fs::write(&bad, text).unwrap();
    let out = tmp.path().join("out");
    let o = rnicsim(&["run", bad.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.toml:") && err.contains("flows[0].load"), "{err}");
    assert!(!out.exists());
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1, "no partial folder left behind");
    let o = rnicsim(&["validate", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn existing_results_are_not_overwritten_without_force() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("keep.txt"), "mine").unwrap();
    let o = run_to(&out, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--force"));
    assert_eq!(std::fs::read_to_string(out.join("keep.txt")).unwrap(), "mine");
    // --force replaces only a previous run: a user's folder stays as it is.
    let o = run_to(&out, &["--force"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a previous run"), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read_to_string(out.join("keep.txt")).unwrap(), "mine");
    let run = tmp.path().join("run2");
    assert!(run_to(&run, &[]).status.success());
    std::fs::write(run.join("stale.txt"), "old").unwrap();
    assert!(run_to(&run, &["--force"]).status.success());
    assert!(!run.join("stale.txt").exists() && run.join("summary.json").exists());
}

#[test]
fn a_file_as_the_output_folder_is_refused_before_running() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("results");
    std::fs::write(&file, "mine").unwrap();
    let q = quickstart();
    // A 2 s run would take minutes: refusing at once shows the check comes first.
    let started = std::time::Instant::now();
    let o = rnicsim(&["run", q.to_str().unwrap(), "--out", file.to_str().unwrap(), "--force", "--quiet", "--set", "duration=\"2s\""]);
    assert_eq!(o.status.code(), Some(2));
    assert!(started.elapsed().as_secs() < 30);
    assert!(String::from_utf8_lossy(&o.stderr).contains("is a file"), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
}

#[test]
fn an_override_without_a_key_or_value_is_refused() {
    for bad in ["=5", "seed=", "seed"] {
        let o = rnicsim(&["validate", quickstart().to_str().unwrap(), "--set", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(String::from_utf8_lossy(&o.stderr).contains("--set expects KEY=VALUE"), "{bad}");
    }
}

#[test]
fn an_override_may_mend_a_value_the_file_has_wrong() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.toml");
    let text = std::fs::read_to_string(quickstart()).unwrap().replace("seed = 1", "seed = -1").replace("../data", &format!("{}/../data", quickstart().parent().unwrap().display()));
    std::fs::write(&bad, text).unwrap();
    let o = rnicsim(&["validate", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("bad.toml:5:8: key `seed`"), "{}", String::from_utf8_lossy(&o.stderr));
    let o = rnicsim(&["validate", bad.to_str().unwrap(), "--set", "seed=7"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn validate_reports_the_world() {
    let o = rnicsim(&["validate", quickstart().to_str().unwrap()]);
    assert!(o.status.success());
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("32 hosts, 8 switches, 48 links, 0 traffic sources, 32 flow generators"), "{s}");
}

#[test]
fn validate_and_run_name_a_misspelt_claim_metric_before_running() {
    // `validate` said "valid", and the run found the typo only at its end (`ours: null`).
    let tmp = tempfile::tempdir().unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/").display().to_string();
    let text = std::fs::read_to_string(quickstart()).unwrap().replace("\r\n", "\n").replace("\"../data/", &format!("\"{data}"));
    let file = tmp.path().join("s.toml");
    std::fs::write(&file, format!("{text}\n[[paper]]\nmetric = \"rdma/fct_maen_us\"\nvalue = 1\nsource = \"x\"\n")).unwrap();
    let line = text.lines().count() + 3;
    let o = rnicsim(&["validate", file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.contains(&format!("s.toml:{line}")) && err.contains("did you mean \"fct_mean_us\""), "{err}");
    let o = rnicsim(&["run", file.to_str().unwrap(), "--out", tmp.path().join("run").to_str().unwrap(), "--quiet", "--set", "duration=\"20us\""]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.contains("did you mean"), "{err}");
    let summary = std::fs::read_to_string(tmp.path().join("run/summary.json")).unwrap();
    assert!(summary.contains("did you mean"), "kept in summary.json's warnings");
}

/// Runs the quickstart for a long time, sends `signal` once it writes, and checks that it stops
/// with the shell's status for that signal (`status`: 128 + its number) and leaves nothing behind.
fn interrupted_by(signal: &str, status: i32, sets: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let q = quickstart();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rnicsim"))
        .args(["run", q.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"])
        .args(sets.iter().flat_map(|s| ["--set", s]))
        .spawn()
        .unwrap();
    // Wait until the run has started writing (its partial folder exists), then signal it.
    let started = std::time::Instant::now();
    while std::fs::read_dir(tmp.path()).unwrap().count() == 0 {
        assert!(started.elapsed().as_secs() < 60, "the run never started");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let killed = Command::new("kill").args([signal, &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let child_status = child.wait().unwrap();
    assert_eq!(child_status.code(), Some(status), "{signal}");
    assert!(!out.exists());
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "partial folder removed after {signal}");
}

#[test]
fn interrupted_run_leaves_nothing_behind() {
    interrupted_by("-INT", 130, &["duration=\"1s\""]);
}

#[test]
fn terminated_run_leaves_nothing_behind() {
    // What `timeout`, batch schedulers and `docker stop` send; 143 as Python's commands end.
    interrupted_by("-TERM", 143, &["duration=\"1s\""]);
}

#[test]
fn a_run_whose_terminal_hangs_up_leaves_nothing_behind() {
    interrupted_by("-HUP", 129, &["duration=\"1s\""]);
}

#[test]
fn a_run_terminated_during_its_baselines_leaves_nothing_behind() {
    // The scenario's own run ends at once; the signal comes while its baseline runs.
    interrupted_by("-TERM", 143, &["duration=\"1us\"", "baseline=[{ name = \"long\", set = { duration = \"1s\" } }]"]);
}

#[test]
fn an_unwritable_fct_output_file_is_found_before_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../rnicsim/tests/data/ns3");
    for f in ["topology.txt", "flow.txt"] {
        std::fs::copy(data.join(f), tmp.path().join(f)).unwrap();
    }
    let text = std::fs::read_to_string(data.join("config.txt")).unwrap().replace("FCT_OUTPUT_FILE fct.txt", "FCT_OUTPUT_FILE missing/fct.txt");
    let line = text.lines().position(|l| l.starts_with("FCT_OUTPUT_FILE")).unwrap() + 1;
    std::fs::write(tmp.path().join("config.txt"), &text).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_rnicsim")).args(["run", "config.txt", "--out", "run", "--quiet"]).current_dir(tmp.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("config.txt:{line}")) && err.contains("FCT_OUTPUT_FILE") && err.contains("does not exist"), "{err}");
    assert!(!tmp.path().join("run").exists(), "nothing ran, nothing was written");
    // A folder where the file should go was found only after the run, blamed on the run
    // folder, and left a `.partial-<pid>` copy beside it.
    std::fs::create_dir(tmp.path().join("taken")).unwrap();
    std::fs::write(tmp.path().join("config.txt"), text.replace("FCT_OUTPUT_FILE missing/fct.txt", "FCT_OUTPUT_FILE taken")).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_rnicsim")).args(["run", "config.txt", "--out", "run", "--quiet"]).current_dir(tmp.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("config.txt:{line}")) && err.contains("FCT_OUTPUT_FILE") && err.contains("is a folder"), "{err}");
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).filter(|n| n.contains("partial") || n == "run").collect();
    assert!(left.is_empty(), "nothing written: {left:?}");

    // A file inside the run folder itself: it was written into the old folder that `--force`
    // then replaced (lost, exit 0), or into an empty folder the commit then refused (the whole
    // run thrown away). Both are refused before the run, at the key.
    std::fs::create_dir(tmp.path().join("empty")).unwrap();
    std::fs::write(tmp.path().join("config.txt"), text.replace("FCT_OUTPUT_FILE missing/fct.txt", "FCT_OUTPUT_FILE empty/fct.txt")).unwrap();
    for args in [&["--out", "empty"][..], &["--out", "./empty/", "--force"][..]] {
        let o = Command::new(env!("CARGO_BIN_EXE_rnicsim")).args(["run", "config.txt", "--quiet"]).args(args).current_dir(tmp.path()).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(&format!("config.txt:{line}")) && err.contains("inside the run folder"), "{err}");
        assert_eq!(std::fs::read_dir(tmp.path().join("empty")).unwrap().count(), 0, "nothing written");
    }
}

#[test]
fn an_fct_output_file_that_is_an_input_or_the_pfc_file_is_refused_before_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../rnicsim/tests/data/ns3");
    for f in ["topology.txt", "flow.txt"] {
        std::fs::copy(data.join(f), tmp.path().join(f)).unwrap();
    }
    let flows = std::fs::read(tmp.path().join("flow.txt")).unwrap();
    let text = std::fs::read_to_string(data.join("config.txt")).unwrap();
    let line = |t: &str, key: &str| t.lines().position(|l| l.starts_with(key)).unwrap() + 1;
    let cases = [
        (text.replace("FCT_OUTPUT_FILE fct.txt", "FCT_OUTPUT_FILE ./flow.txt"), "FCT_OUTPUT_FILE", "flow file"),
        (text.replace("FCT_OUTPUT_FILE fct.txt", "FCT_OUTPUT_FILE config.txt"), "FCT_OUTPUT_FILE", "scenario itself"),
        (text.replace("PFC_OUTPUT_FILE pfc.txt", "PFC_OUTPUT_FILE topology.txt"), "PFC_OUTPUT_FILE", "topology file"),
        (text.replace("PFC_OUTPUT_FILE pfc.txt", "PFC_OUTPUT_FILE fct.txt"), "PFC_OUTPUT_FILE", "the FCT file is the same file"),
    ];
    for (config, key, says) in cases {
        std::fs::write(tmp.path().join("config.txt"), &config).unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_rnicsim")).args(["run", "config.txt", "--out", "run", "--quiet"]).current_dir(tmp.path()).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{key} {says}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(&format!("config.txt:{}", line(&config, key))) && err.contains(key) && err.contains(says), "{err}");
        assert!(!tmp.path().join("run").exists() && !tmp.path().join("fct.txt").exists(), "nothing ran: {err}");
        assert_eq!(std::fs::read(tmp.path().join("flow.txt")).unwrap(), flows, "the flow file is untouched");
        assert_eq!(std::fs::read_to_string(tmp.path().join("config.txt")).unwrap(), config, "the config is untouched");
        // validate says so too (it passed them; found by a helper).
        let o = Command::new(env!("CARGO_BIN_EXE_rnicsim")).args(["validate", "config.txt"]).current_dir(tmp.path()).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "validate: {key} {says}");
    }
    // A path that is not a regular file is never replaced: the finished file is moved into
    // place, and a run as root turned /dev/full into a 550-byte file (found by a helper). A
    // symbolic link (here to the flow file) and a named pipe are refused alike.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(tmp.path().join("elsewhere.txt"), tmp.path().join("link.txt")).unwrap();
        let fifo = std::process::Command::new("mkfifo").arg(tmp.path().join("pipe")).status().is_ok_and(|s| s.success());
        for (name, there) in [("link.txt", true), ("pipe", fifo)] {
            if !there {
                continue;
            }
            let config = text.replace("FCT_OUTPUT_FILE fct.txt", &format!("FCT_OUTPUT_FILE {name}"));
            std::fs::write(tmp.path().join("config.txt"), &config).unwrap();
            let o = Command::new(env!("CARGO_BIN_EXE_rnicsim")).args(["run", "config.txt", "--out", "run", "--quiet"]).current_dir(tmp.path()).output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{name}: {err}");
            assert!(err.contains("FCT_OUTPUT_FILE") && err.contains("name a regular file"), "{err}");
            let kind = std::fs::symlink_metadata(tmp.path().join(name)).unwrap().file_type();
            assert!(!kind.is_file(), "{name} is still what it was");
        }
    }
}

#[test]
fn an_ns3_config_runs_unchanged_and_writes_its_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../rnicsim/tests/data/ns3");
    for f in ["config.txt", "topology.txt", "flow.txt"] {
        std::fs::copy(data.join(f), tmp.path().join(f)).unwrap();
    }
    let o = Command::new(env!("CARGO_BIN_EXE_rnicsim")).args(["run", "config.txt", "--out", "run", "--quiet"]).current_dir(tmp.path()).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("warning: config.txt: no equivalent here, ignored: TRACE_FILE"));
    let fct = std::fs::read_to_string(tmp.path().join("fct.txt")).unwrap();
    assert_eq!(fct.lines().count(), 4, "{fct}");
    assert!(fct.lines().all(|l| l.split_whitespace().count() == 8));
    assert!(tmp.path().join("pfc.txt").exists());
    assert!(tmp.path().join("run/summary.json").exists());
}

#[test]
fn a_reader_that_stops_early_ends_the_output_quietly() {
    use std::process::Stdio;
    // `rnicsim validate quickstart.toml | <reader that closes at once>`: the pipe is closed
    // before the verdict is written; the program ends without a panic report.
    let q = quickstart();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rnicsim")).args(["validate", q.to_str().unwrap()]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("the binary runs");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("it ends");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn compare_fct_tables_two_fct_files_flow_by_flow() {
    // ns-3's reference FCT file (gzip) against itself written in HPCC's dialect with every FCT
    // 10% longer for flows under 10 KB: the table says so, and the flows all match.
    let ns3 = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/ns3/fbhdp50-dcqcn/ns3_fct.txt.gz");
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(std::fs::File::open(&ns3).unwrap()), &mut text).unwrap();
    let ip = |n: u64| format!("{:08x}", 0x0b00_0001 + (n / 256) * 0x1_0000 + (n % 256) * 0x100);
    let slower: String = text
        .lines()
        .map(|l| {
            let v: Vec<u64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
            let fct = if v[4] < 10_000 && v[6] * 11 / 10 > v[7] { v[6] * 11 / 10 } else { v[6] };
            format!("{} {} {} {} {} {} {fct} {}\n", ip(v[0]), ip(v[1]), v[2], v[3], v[4], v[5], v[7])
        })
        .collect();
    let tmp = tempfile::tempdir().unwrap();
    let ours = tmp.path().join("fct.txt");
    std::fs::write(&ours, slower).unwrap();
    let o = rnicsim(&["compare-fct", ours.to_str().unwrap(), ns3.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("16245 flows in both (16245 lines in the first file, 16245 in the second)"), "{s}");
    let ratio_row = s.lines().find(|l| l.contains("first / second")).expect("a ratio row");
    let ratios: Vec<&str> = ratio_row.split(['┆', '│']).map(str::trim).filter(|c| !c.is_empty()).collect();
    assert_eq!(ratios[7], "1.000", "≥ 1 MB untouched: {ratio_row}");
    assert!(ratios[4].parse::<f64>().unwrap() > 1.05, "< 10 KB slower: {ratio_row}");
    assert!(s.contains("│ fct.txt ") && s.contains("│ ns3_fct.txt.gz "), "rows labelled by file name: {s}");
    // Two files of one name are labelled by their folders.
    let other = tmp.path().join("run-b");
    std::fs::create_dir(&other).unwrap();
    std::fs::copy(&ours, other.join("fct.txt")).unwrap();
    let o = rnicsim(&["compare-fct", ours.to_str().unwrap(), other.join("fct.txt").to_str().unwrap()]);
    let s = String::from_utf8_lossy(&o.stdout);
    let dir = tmp.path().file_name().unwrap().to_string_lossy();
    assert!(s.contains(&format!("│ {dir}/fct.txt ")) && s.contains("│ run-b/fct.txt "), "{s}");
    // A size bucket without flows shows a dash, not NaN.
    std::fs::write(&ours, "1 2 10000 100 1000 2000000000 3000 2000\n").unwrap();
    let o = rnicsim(&["compare-fct", ours.to_str().unwrap(), ours.to_str().unwrap()]);
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && !s.contains("NaN") && s.contains("—"), "{s}");
    // A malformed line is named with its file and line.
    std::fs::write(&ours, "1 2 3\n").unwrap();
    let o = rnicsim(&["compare-fct", ours.to_str().unwrap(), ns3.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("fct.txt:1: 3 fields"), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn bench_options_out_of_place_or_out_of_range_are_refused_not_ignored() {
    let bin = env!("CARGO_BIN_EXE_rnicsim");
    let fails = |args: &[&str], needle: &str| {
        let o = Command::new(bin).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && o.status.code() != Some(101) && err.contains(needle), "{args:?}: {:?} {err}", o.status);
    };
    // The fabric options given before a subcommand's name were dropped without a word.
    fails(&["bench", "--load", "0.5", "fabric"], "cannot be used with");
    fails(&["bench", "--repeat", "1", "rdma"], "cannot be used with");
    // Checked before the sizes that divide by it (a panic before).
    fails(&["bench", "ordering", "--connections", "10", "--block-bits", "0"], "block_bits");
    fails(&["bench", "ordering", "--max-shift", "0"], "--max-shift");
    // The trace is held in memory: 10⁸ connections took about 20 GB before it ran out.
    fails(&["bench", "ordering", "--connections", "100000000"], "at most 100000000");
    fails(&["bench", "scale", "--hosts", "128", "--duration=-5us"], "must not be negative");
    fails(&["bench", "scale", "--hosts", "128", "--jellyfish", "5"], "at least 14 switches");
    // A run folder holding a run is replaced only with --force, as `run --out` does.
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let rdma = |force: bool| {
        let mut c = Command::new(bin);
        c.args(["bench", "rdma", "--set", "duration=\"10us\"", "--out"]).arg(&out);
        if force {
            c.arg("--force");
        }
        c.output().unwrap()
    };
    assert!(rdma(false).status.success());
    let again = rdma(false);
    assert!(!again.status.success() && String::from_utf8_lossy(&again.stderr).contains("--force"), "{}", String::from_utf8_lossy(&again.stderr));
    assert!(rdma(true).status.success());
}

#[test]
fn the_rdma_bench_finds_its_shipped_scenario_from_any_folder() {
    // `bench rdma` names scenarios/bench/alistorage_128.toml by its repository path; run elsewhere,
    // it still finds it (shortened to 20 µs here), and a file found nowhere is named in the error.
    let tmp = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_rnicsim");
    let o = Command::new(bin).args(["bench", "rdma", "--json", "--set", "duration=\"20us\""]).current_dir(tmp.path()).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let m: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(m["data_packets"].as_u64().unwrap() > 0, "{m}");
    let o = Command::new(bin).args(["bench", "rdma", "--scenario", "scenarios/bench/nope.toml"]).current_dir(tmp.path()).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("scenarios/bench/nope.toml") && err.contains("--scenario"), "{err}");
}

#[test]
fn every_argument_of_run_and_validate_is_described_in_help() {
    for cmd in ["run", "validate"] {
        let o = rnicsim(&[cmd, "--help"]);
        let help = String::from_utf8_lossy(&o.stdout);
        let arguments = help.split("Arguments:").nth(1).expect("an Arguments section");
        let scenario = arguments.lines().find(|l| l.contains("<SCENARIO>")).expect("the scenario argument");
        assert!(scenario.trim_start().len() > "<SCENARIO>".len() + 4, "{cmd}: <SCENARIO> has no description:\n{help}");
        let set = help.lines().find(|l| l.contains("--set <KEY=VALUE>")).expect("--set");
        assert!(set.trim_start().len() > "--set <KEY=VALUE>".len() + 4, "{cmd}: --set has no description:\n{help}");
    }
}

#[test]
fn a_bound_claim_shows_its_bound_not_a_tolerance() {
    // fig21b's default-scheduler claim is "at most 1x": 0.66 holds it, though 34% from 1.
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/scr/fig21b_nvmf.toml");
    let tmp = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_rnicsim")).arg("run").arg(&scenario).arg("--out").arg(tmp.path().join("r")).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    let row = out.lines().find(|l| l.contains("nvmf/default depth 16/gbps")).unwrap_or_else(|| panic!("{out}"));
    assert!(row.contains("≤ 1 x") && row.contains("yes (bound)") && !row.contains("±"), "{row}");
}

#[test]
fn a_calibration_check_is_marked_in_the_claims_table() {
    // A value the scenario sets to the paper's is checked like a claim, and said to be one.
    let tmp = tempfile::tempdir().unwrap();
    let claim = |calibration: &str| format!("[[paper]]\nmetric = \"packets_sent\"\nvalue = 0\ntolerance = 0\n{calibration}source = \"nothing sent\"\n");
    let text = format!("duration = \"10us\"\n[topology.back_to_back]\n{}\n{}", claim("calibration = true\n"), claim("").replace("packets_sent", "drops_buffer"));
    std::fs::write(tmp.path().join("s.toml"), text).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_rnicsim")).arg("run").arg(tmp.path().join("s.toml")).arg("--out").arg(tmp.path().join("r")).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    let row = |metric: &str| out.lines().find(|l| l.contains(metric)).unwrap_or_else(|| panic!("{out}")).to_string();
    assert!(row("packets_sent").contains("yes (±0, calibration)"), "{out}");
    assert!(row("drops_buffer").contains("yes (±0)") && !row("drops_buffer").contains("calibration"), "{out}");
    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(tmp.path().join("r/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["paper"][0]["calibration"], true);
    assert!(summary["paper"][1].get("calibration").is_none(), "written only when set: {summary}");
}

/// A stand-in Python for the analysis commands: `probe` is what its `import rnicsim` check
/// does (shell), and `-m rnicsim ...` prints "ran" and exits 0.
fn fake_python(dir: &Path, probe: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let exe = dir.join("python");
    std::fs::write(&exe, format!("#!/bin/sh\nif [ \"$1\" = \"-c\" ]; then\n{probe}\nfi\necho ran\n")).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    exe
}

fn analysis_command(python: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rnicsim")).args(["query", "somewhere", "select 1"]).env("RNICSIM_PYTHON", python).output().expect("the binary runs")
}

#[test]
fn the_python_of_an_analysis_command_does_not_look_for_modules_in_the_working_folder() {
    // A folder named `rnicsim` where the command ran (a checkout's parent) was imported as the
    // package: "another build" and "No module named rnicsim.__main__" (found by a helper).
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("python");
    let script = format!("#!/bin/sh\nif [ \"$1\" = \"-c\" ]; then [ \"$PYTHONSAFEPATH\" = 1 ] && echo {} && exit 0; exit 1; fi\necho \"ran with PYTHONSAFEPATH=$PYTHONSAFEPATH\"\n", rnicsim::MODEL_ID);
    std::fs::write(&exe, script).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = analysis_command(&exe);
    assert!(out.status.success() && out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ran with PYTHONSAFEPATH=1");
    // An empty RNICSIM_PYTHON is no python's name ("cannot start  for ..."): the usual search.
    let o = Command::new(env!("CARGO_BIN_EXE_rnicsim")).args(["query", "somewhere", "select 1"]).env("RNICSIM_PYTHON", "").env_remove("VIRTUAL_ENV").current_dir(dir.path()).output().unwrap();
    assert!(!String::from_utf8_lossy(&o.stderr).contains("cannot start  for"), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn the_version_names_the_model_and_a_package_of_another_build_is_warned_of() {
    let version = String::from_utf8_lossy(&rnicsim(&["--version"]).stdout).to_string();
    assert_eq!(version.trim(), format!("rnicsim {}", rnicsim::VERSION));
    assert!(version.contains(&format!("(model {})", rnicsim::MODEL_ID)) && rnicsim::MODEL_ID.len() == 16, "{version}");
    let dir = tempfile::tempdir().unwrap();
    let same = analysis_command(&fake_python(dir.path(), &format!("echo {}; exit 0", rnicsim::MODEL_ID)));
    assert!(same.status.success() && same.stderr.is_empty(), "{}", String::from_utf8_lossy(&same.stderr));
    let other = analysis_command(&fake_python(dir.path(), "echo 0123456789abcdef; exit 0"));
    let stderr = String::from_utf8_lossy(&other.stderr);
    assert!(other.status.success() && stderr.contains("another build (model 0123456789abcdef)"), "{stderr}");
    // A run folder names its build.
    let out = dir.path().join("run");
    assert!(run_to(&out, &[]).status.success());
    let marker = std::fs::read_to_string(out.join(".rnicsim-run")).unwrap();
    assert!(marker.contains(&format!("rnicsim {}", rnicsim::VERSION)), "{marker}");
}

#[test]
fn ctrl_c_during_the_python_check_is_an_interruption_not_a_missing_package() {
    // The check's Python ends by SIGINT (Ctrl-C reaches the whole process group): the command
    // exits with 130, and does not say the package cannot be imported. This holds where the
    // binary was started ignoring SIGINT (a background job, as CI runs it): it catches the
    // signal, so the Python it starts has it at its default.
    let dir = tempfile::tempdir().unwrap();
    let out = analysis_command(&fake_python(dir.path(), "kill -INT $$; sleep 1; exit 1"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(!stderr.contains("cannot import"), "{stderr}");
}

#[test]
fn a_signal_to_the_binary_reaches_the_python_command() {
    // `kill PID` on `rnicsim sweep` (or a batch scheduler's SIGTERM) was taken by the binary,
    // which waited on while the sweep ran every point to its end (found by a helper).
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("python");
    let ready = dir.path().join("ready");
    // The command writes its pid when it has started, and runs until told to stop.
    let script = format!("#!/bin/sh\nif [ \"$1\" = \"-c\" ]; then echo {}; exit 0; fi\ntrap 'echo stopped by TERM; exit 143' TERM\necho $$ > {}\nwhile :; do sleep 0.05; done\n", rnicsim::MODEL_ID, ready.display());
    std::fs::write(&exe, script).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_rnicsim")).args(["sweep", "s.toml", "--out", "o"]).env("RNICSIM_PYTHON", &exe).stdout(std::process::Stdio::piped()).spawn().unwrap();
    let start = std::time::Instant::now();
    while !ready.exists() && start.elapsed() < std::time::Duration::from_secs(30) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(ready.exists(), "the command started");
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    let sent = std::time::Instant::now();
    let mut child = child;
    while child.try_wait().unwrap().is_none() && sent.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    if child.try_wait().unwrap().is_none() {
        // Still running: the signal never reached the command. End both, then fail.
        let pid = std::fs::read_to_string(&ready).unwrap_or_default();
        let _ = Command::new("kill").args(["-KILL", pid.trim()]).status();
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143), "the command was stopped by the signal");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "stopped by TERM");
}

#[test]
fn bench_rdma_checks_its_outputs_as_run_does_and_stops_at_the_first_signal() {
    // `bench rdma --out` wrote the scenario's fct_file over the scenario itself (found by a
    // helper): it is refused before anything runs, as `run` refuses it.
    let tmp = tempfile::tempdir().unwrap();
    let scenario = tmp.path().join("s.toml");
    let text = "duration = \"20us\"\n[topology.back_to_back]\n[outputs]\nfct_file = \"s.toml\"\n";
    std::fs::write(&scenario, text).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_rnicsim")).args(["bench", "rdma", "--scenario"]).arg(&scenario).arg("--out").arg(tmp.path().join("b")).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("outputs.fct_file") && err.contains("scenario itself"), "{err}");
    assert_eq!(std::fs::read_to_string(&scenario).unwrap(), text);
    assert!(!tmp.path().join("b").exists());
    // A long bench run with --out stops at the first SIGTERM, writing nothing; it ran on to its
    // end and wrote its folder (exit 0).
    let long = tmp.path().join("long.toml");
    std::fs::write(&long, "duration = \"1s\"\n[topology.back_to_back]\n[[perftest]]\ntest = \"write_bw\"\nclient = 0\nserver = 1\nmessage = \"64KiB\"\nqps = 4\n").unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_rnicsim")).args(["bench", "rdma", "--json", "--scenario"]).arg(&long).arg("--out").arg(tmp.path().join("l")).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let out = terminated(child, std::time::Duration::from_millis(700));
    assert_eq!(out.status.code(), Some(143), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing was written"));
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 2, "no run folder, no partial one");
}

/// Sends SIGTERM to `child` after `after`, and returns its output once it ends (killed if it
/// has not ended within 20 s).
fn terminated(mut child: std::process::Child, after: std::time::Duration) -> Output {
    std::thread::sleep(after);
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    let sent = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() && sent.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    if child.try_wait().unwrap().is_none() {
        let _ = child.kill();
    }
    child.wait_with_output().unwrap()
}

#[test]
fn bench_rdma_baselines_and_a_soak_stop_at_the_first_signal_and_leave_nothing() {
    // `bench rdma --out` ran a long baseline to its end after SIGTERM and wrote its folder; a
    // soak stopped by SIGTERM left its child run going and its temporary folder behind (both
    // found by a helper).
    let tmp = tempfile::tempdir().unwrap();
    let scenario = tmp.path().join("s.toml");
    std::fs::write(&scenario, "duration = \"10us\"\n[topology.back_to_back]\n[[perftest]]\ntest = \"write_bw\"\nclient = 0\nserver = 1\nmessage = \"64KiB\"\nqps = 4\n[[baseline]]\nname = \"long\"\nset = { duration = \"2s\" }\n").unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_rnicsim")).args(["bench", "rdma", "--json", "--scenario"]).arg(&scenario).arg("--out").arg(tmp.path().join("b")).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let out = terminated(child, std::time::Duration::from_millis(800));
    assert_eq!(out.status.code(), Some(143), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("interrupted during the baselines; nothing was written"));
    assert!(!tmp.path().join("b").exists());
    // The soak's runs go into a temporary folder under TMPDIR: it is gone with the soak.
    let temp = tmp.path().join("temp");
    std::fs::create_dir(&temp).unwrap();
    let long = tmp.path().join("l.toml");
    std::fs::write(&long, "duration = \"10us\"\n[topology.back_to_back]\n[[perftest]]\ntest = \"write_bw\"\nclient = 0\nserver = 1\nmessage = \"64KiB\"\nqps = 4\n").unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_rnicsim")).args(["bench", "soak", "--short", "100us", "--long", "2s", "--scenario"]).arg(&long).env("TMPDIR", &temp).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let out = terminated(child, std::time::Duration::from_millis(1500));
    assert_eq!(out.status.code(), Some(143), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_dir(&temp).unwrap().count(), 0, "the soak's temporary folder is removed");
}

#[test]
fn a_soak_whose_long_run_is_not_longer_is_refused_before_it_runs() {
    // Equal durations ran the first simulation, then failed on a temporary folder's name.
    for (short, long) in [("20us", "20us"), ("40us", "20us")] {
        let o = rnicsim(&["bench", "soak", "--short", short, "--long", long]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("--long") && err.contains("longer than --short") && !err.contains("soak:"), "{err}");
    }
}

#[test]
fn a_command_that_writes_no_run_ends_at_the_first_signal() {
    // `validate` of a named pipe nobody writes waits; one SIGTERM ended nothing (the binary took
    // it for a run's stop request, which only `run` and `bench rdma` poll).
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("fifo.toml");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    assert!(!rnicsim_cli::catches_signals(&["rnicsim".into(), "validate".into(), fifo.to_string_lossy().into()]));
    assert!(rnicsim_cli::catches_signals(&["rnicsim".into(), "run".into(), "x.toml".into()]));
    let child = Command::new(env!("CARGO_BIN_EXE_rnicsim")).arg("validate").arg(&fifo).spawn().unwrap();
    // Ended by the SIGTERM itself, not by the SIGKILL `terminated` sends after waiting.
    use std::os::unix::process::ExitStatusExt;
    let out = terminated(child, std::time::Duration::from_millis(300));
    assert_eq!(out.status.signal(), Some(15), "one SIGTERM ends validate: {:?}", out.status);
}

#[test]
fn help_of_an_analysis_command_needs_no_python_package() {
    // Without the package, `--help` says what the command is and how to get its options
    // (exit 0), where it failed with exit 2; anything else still fails with the way out.
    let dir = tempfile::tempdir().unwrap();
    let python = fake_python(dir.path(), "exit 1");
    for command in ["reproduce", "sweep", "query", "report"] {
        let o = Command::new(env!("CARGO_BIN_EXE_rnicsim")).args([command, "--help"]).env("RNICSIM_PYTHON", &python).output().unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success() && out.contains(&format!("Usage: rnicsim {command}")) && out.contains("cannot import rnicsim"), "{command}: {out}");
    }
    let o = analysis_command(&python);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot import rnicsim"));
}

#[test]
fn a_perftest_with_drawn_message_sizes_prints_their_range() {
    // Each queue pair's size is drawn from [4 KB, 64 KB]: the table printed "4000 B × 3 QPs",
    // as if every message were 4 KB.
    let tmp = tempfile::tempdir().unwrap();
    let scenario = tmp.path().join("range.toml");
    std::fs::write(
        &scenario,
        "duration = \"200us\"\n[topology.star]\nhosts = 2\n[[perftest]]\ntest = \"write_bw\"\nclient = 0\nserver = 1\nmessage = \"4KB\"\nmessage_max = \"64KB\"\nqps = 3\n",
    )
    .unwrap();
    let out = tmp.path().join("run");
    let o = rnicsim(&["run", scenario.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("4000–64000 B × 3 QPs"), "{table}");
    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["perftest"][0]["message_max"], 64000);
}

#[test]
fn validate_reports_yama_and_the_warnings_its_build_finds() {
    // `validate` summed up traffic and perftests only, and the Yama build's warning (a
    // stale_after below two periods, known once the fabric's round trips are) came only from
    // a run.
    let tmp = tempfile::tempdir().unwrap();
    let scenario = tmp.path().join("y.toml");
    std::fs::write(
        &scenario,
        "duration = \"1ms\"\n[topology.star]\nhosts = 3\n[yama]\nstale_after = \"1ns\"\n[[yama.engine]]\nname = \"aes\"\nhost = 2\ngbps = \"10Gbps\"\n\
         [[yama.chain]]\nname = \"c\"\nengines = [\"aes\"]\nworkload = \"aes\"\n[[yama.entity]]\nname = \"a\"\nweight = 1.0\nchain = \"c\"\nnodes = [0]\ninstances = 2\nqueues = 3\n",
    )
    .unwrap();
    let o = rnicsim(&["validate", scenario.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("yama: 1 engines, 1 chains, 1 entities with 6 queue pairs, isolation on"), "{out}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("y.toml:5") && err.contains("yama.stale_after") && err.contains("less than two"), "{err}");
}

#[test]
fn a_baseline_with_an_outside_scr_policy_is_refused_before_the_run() {
    // Its NICs had no policy object (only Python can hand one over): the baseline ran deciding
    // nothing, 98.98 Gbps against the main run's 50, and the run exited 0.
    let tmp = tempfile::tempdir().unwrap();
    let fig13 = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/scr/fig13_static.toml");
    let text = std::fs::read_to_string(fig13).unwrap() + "\n[[baseline]]\nname = \"outside\"\nset = { \"nic.scr.policy\" = { external = {} } }\n";
    let scenario = tmp.path().join("f13.toml");
    std::fs::write(&scenario, text).unwrap();
    let out = tmp.path().join("run");
    let o = rnicsim(&["run", scenario.to_str().unwrap(), "--out", out.to_str().unwrap(), "--set", "duration=\"100us\""]);
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("baseline `outside`") && err.contains("policy object"), "{err}");
    assert!(!out.exists());
}

#[test]
fn a_baseline_past_the_limits_is_refused_before_the_main_run() {
    // It was found only once the main run had finished (its work then lost), and `validate`
    // called the scenario valid (found by a helper).
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("b.toml");
    std::fs::write(
        &s,
        "duration = \"1ms\"\n[topology.back_to_back]\n[limits]\nmax_packets = 5000\n\
         [[perftest]]\ntest = \"write_bw\"\nclient = 0\nserver = 1\nmessage = \"4KiB\"\nrate_limit = \"1Gbps\"\n\
         [[baseline]]\nname = \"unlimited\"\nremove = [\"perftest[0].rate_limit\"]\n",
    )
    .unwrap();
    for args in [vec!["validate", s.to_str().unwrap()], vec!["run", s.to_str().unwrap(), "--out", tmp.path().join("run").to_str().unwrap(), "--quiet"]] {
        let o = rnicsim(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("baseline `unlimited`") && err.contains("limits.max_packets"), "{err}");
    }
    assert!(!tmp.path().join("run").exists(), "nothing ran, nothing was written");
}

#[test]
fn a_python_policy_the_command_line_cannot_run_is_named_at_its_line() {
    // Found by a helper: `validate` passes it (a Python run can hand the policy over), and
    // `run` refused it naming only the file.
    let tmp = tempfile::tempdir().unwrap();
    let scen = tmp.path().join("py.toml");
    let cdf = quickstart().parent().unwrap().join("../data/cdf/");
    let text = std::fs::read_to_string(quickstart()).unwrap().replace("../data/cdf/", cdf.to_str().unwrap()) + "\n[nic.scr.policy.external]\n";
    std::fs::write(&scen, &text).unwrap();
    let line = text.lines().position(|l| l == "[nic.scr.policy.external]").unwrap() + 1;
    let out = tmp.path().join("out");
    let o = rnicsim(&["run", scen.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"]);
    assert_ne!(o.status.code(), Some(0));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("py.toml:{line}:")) && err.contains("nic.scr.policy.external") && err.contains("scr_policy="), "{err}");
    assert!(!out.exists());
}

#[test]
fn ctrl_c_while_the_results_are_written_leaves_nothing() {
    // The stop signal comes once the hidden folder being written holds summary.json, after the
    // run: the results are dropped, not moved into place (they were, with status 0).
    let tmp = tempfile::tempdir().unwrap();
    let scenario = tmp.path().join("s.toml");
    std::fs::write(&scenario, "duration = \"20us\"\n[topology.back_to_back]\n[[perftest]]\ntest = \"write_bw\"\nclient = 0\nserver = 1\nmessage = \"64KiB\"\n").unwrap();
    let (out, parent) = (tmp.path().join("run"), tmp.path().to_path_buf());
    let writing = move || {
        std::fs::read_dir(&parent).unwrap().flatten().any(|e| e.file_name().to_string_lossy().starts_with(".run.partial-") && e.path().join("summary.json").exists())
    };
    let args = ["rnicsim", "run", scenario.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"].map(String::from).to_vec();
    assert_eq!(rnicsim_cli::main_with(args, &writing), 130);
    assert!(!out.exists());
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1, "only the scenario is left");
}

#[test]
fn a_failure_to_print_is_one_line_of_error_not_a_panic() {
    // Standard output that cannot take the text (a full disk; here the full device, opened
    // for writing only, never replaced): status 2 and one line, where it panicked (101).
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let scenario = tmp.path().join("s.toml");
    std::fs::write(&scenario, "duration = \"10us\"\n[topology.back_to_back]\n").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_rnicsim")).args(["validate", scenario.to_str().unwrap()]).stdout(full).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("error: cannot write to standard output") && !err.contains("panicked"), "{err}");
}

#[test]
fn validate_warns_of_a_policy_only_python_can_run() {
    // `validate` said "valid" and `run` then refused it (found by a helper).
    let static_scr = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/scr/fig13_static.toml");
    let args = ["validate", static_scr.to_str().unwrap(), "--set", "nic.scr.policy={external={kinds=[\"tx\"]}}"];
    let o = rnicsim(&args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("key `nic.scr.policy.external`") && err.contains("`rnicsim run` refuses it"), "{err}");
    let o = rnicsim(&["validate", static_scr.to_str().unwrap()]);
    assert!(!String::from_utf8_lossy(&o.stderr).contains("refuses it"));
}

#[test]
fn a_run_whose_stderr_is_not_a_terminal_says_how_far_it_is_in_plain_lines() {
    // The bar cannot be drawn into a pipe or a log file, where a long run was silent until its
    // end: a plain line at the first report (then one every 10 s of wall time) stands in.
    let tmp = tempfile::tempdir().unwrap();
    let q = quickstart();
    let o = rnicsim(&["run", q.to_str().unwrap(), "--out", tmp.path().join("a").to_str().unwrap(), "--set", "duration=200us"]);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    let line = err.lines().find(|l| l.starts_with("progress: ")).unwrap_or_else(|| panic!("{err}"));
    assert!(line.contains("% sim ") && line.contains(" / 200us") && line.contains("M events/s"), "{line}");
    // `--quiet` says nothing.
    let o = run_to(&tmp.path().join("b"), &["--set", "duration=200us"]);
    assert!(o.status.success() && !String::from_utf8_lossy(&o.stderr).contains("progress:"));
}
