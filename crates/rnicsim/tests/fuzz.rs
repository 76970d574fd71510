//! A mutation fuzzer over every input the simulator reads: each shipped scenario, the ns-3
//! config.txt with its topology and flow files, the shipped topology files and flow-size CDFs.
//! Each case applies a few mutations (byte flips, line deletions and duplications, numbers
//! swapped or replaced by extreme values), then loads, builds and runs the result for at most
//! 5 µs of simulated time and 65,536 events. Any panic fails the test, naming the case; errors
//! are fine as long as they say something.
//!
//! The seed is fixed, so a failure reproduces; `RNICSIM_FUZZ_CASES` and `RNICSIM_FUZZ_SEED` run
//! more or other cases (the default is 2,000). `RNICSIM_FUZZ_VERBOSE` names each case as it
//! starts (a stack overflow aborts before any report) and `RNICSIM_FUZZ_KEEP=<file>` keeps the
//! input of the last case started. A case still running after `RNICSIM_FUZZ_CASE_SECS` (default
//! 120) wall seconds is a hang: a watchdog prints its input and ends the test process with a
//! failure, rather than leaving CI to time out without saying which input.
//!
//! A case whose topology would need more than 2^20 routing entries is only validated, not
//! built, to bound the suite's time; building large worlds is the benchmarks' business.

use rnicsim::scenario::ns3::translate;
use rnicsim::scenario::{LoadedScenario, ScenarioError};
use rnicsim::units::Time;
use rnicsim::world::World;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod common;
use common::{root, shipped_scenarios};

/// A small deterministic generator (SplitMix64), so the cases depend on the seed only.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const EXTREMES: &[&str] = &["0", "-1", "1", "0.0", "1e-300", "1e308", "4294967295", "4294967296", "18446744073709551615", "9999999999999999999999", "NaN", "-0", "\"\"", "[]", "1ps", "0ns", "1e20Gbps"];

/// Applies one mutation to `text`.
fn mutate(text: &str, g: &mut Gen) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if lines.is_empty() {
        return EXTREMES[g.below(EXTREMES.len())].to_string();
    }
    let li = g.below(lines.len());
    match g.below(6) {
        // Byte flip (kept valid UTF-8 by working on chars).
        0 => {
            let mut cs: Vec<char> = lines[li].chars().collect();
            if !cs.is_empty() {
                let i = g.below(cs.len());
                cs[i] = char::from_u32(32 + (g.next() % 95) as u32).unwrap_or('x');
            }
            lines[li] = cs.into_iter().collect();
        }
        1 => {
            lines.remove(li);
        }
        2 => {
            let l = lines[li].clone();
            lines.insert(li, l);
        }
        // A number replaced by an extreme value.
        3 | 4 => {
            let toks: Vec<(usize, usize)> = number_spans(&lines[li]);
            if let Some(&(a, b)) = toks.get(g.below(toks.len().max(1))) {
                let e = EXTREMES[g.below(EXTREMES.len())];
                lines[li] = format!("{}{}{}", &lines[li][..a], e, &lines[li][b..]);
            }
        }
        // Two lines' values swapped.
        _ => {
            let lj = g.below(lines.len());
            let (a, b) = (lines[li].clone(), lines[lj].clone());
            match (a.split_once('='), b.split_once('=')) {
                (Some((ka, va)), Some((kb, vb))) => {
                    lines[li] = format!("{ka}={vb}");
                    lines[lj] = format!("{kb}={va}");
                }
                _ => lines.swap(li, lj),
            }
        }
    }
    lines.join("\n") + "\n"
}

/// Byte spans of the numbers in a line.
fn number_spans(l: &str) -> Vec<(usize, usize)> {
    let b = l.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let s = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.' || b[i] == b'e') {
                i += 1;
            }
            out.push((s, i));
        } else {
            i += 1;
        }
    }
    out
}

/// What one case feeds the simulator.
enum Input {
    /// A scenario's text, read relative to a folder.
    Scenario(String, PathBuf),
    /// An ns-3 config, read relative to a folder.
    Config(String, PathBuf),
}

/// Loads, builds (if it is small enough) and briefly runs an input; errors must say something.
fn exercise(input: &Input) -> Result<(), ScenarioError> {
    let loaded = match input {
        Input::Scenario(text, dir) => LoadedScenario::from_str(text, "fuzz.toml", dir)?,
        Input::Config(text, dir) => {
            let t = translate(text, "config.txt", dir)?;
            LoadedScenario::from_str(&t.toml, "config.txt", dir)?
        }
    };
    let topo = loaded.topology()?;
    if topo.nodes() as u64 * topo.hosts().len() as u64 > 1 << 20 {
        return Ok(());
    }
    let mut w = World::build(&loaded)?;
    w.end = w.end.min(Time::from_us(5));
    w.run(|_| false);
    Ok(())
}

/// The corpus: (name, how to turn a mutated text into an input).
fn corpus(tmp: &Path) -> Vec<(String, String, Box<dyn Fn(String) -> Input>)> {
    let mut out: Vec<(String, String, Box<dyn Fn(String) -> Input>)> = Vec::new();
    for f in shipped_scenarios() {
        let dir = f.parent().unwrap().to_path_buf();
        out.push((f.display().to_string(), std::fs::read_to_string(&f).unwrap(), Box::new(move |t| Input::Scenario(t, dir.clone()))));
    }
    // The ns-3 config, in a folder of its own with its topology and flow files.
    let ns3 = root().join("crates/rnicsim/tests/data/ns3");
    let cfg = tmp.join("ns3");
    std::fs::create_dir_all(&cfg).unwrap();
    for f in ["topology.txt", "flow.txt"] {
        std::fs::copy(ns3.join(f), cfg.join(f)).unwrap();
    }
    let c = cfg.clone();
    out.push(("config.txt".into(), std::fs::read_to_string(ns3.join("config.txt")).unwrap(), Box::new(move |t| Input::Config(t, c.clone()))));
    // Topology files, flow files and CDFs, each read through a small scenario.
    let mut side = |name: &str, text: String, file: &str, scenario: String| {
        let dir = tmp.join(name.replace('/', "_"));
        std::fs::create_dir_all(&dir).unwrap();
        let file = file.to_string();
        out.push((
            name.to_string(),
            text,
            Box::new(move |t| {
                std::fs::write(dir.join(&file), t).unwrap();
                Input::Scenario(scenario.clone(), dir.clone())
            }),
        ));
    };
    for t in ["fat_k4_100G_OS2.txt", "leaf_spine_128_100G_OS2.txt"] {
        let text = std::fs::read_to_string(root().join("data/topology").join(t)).unwrap();
        side(t, text, "topo.txt", "duration = \"5us\"\n[topology.file]\npath = \"topo.txt\"\n[[traffic]]\npattern = \"permutation\"\nload = 0.5\n".into());
    }
    side("ns3 topology.txt", std::fs::read_to_string(ns3.join("topology.txt")).unwrap(), "topo.txt", "duration = \"5us\"\n[topology.file]\npath = \"topo.txt\"\n[[perftest]]\ntest = \"write_bw\"\nclient = 0\nserver = 1\nmessage = \"4KB\"\n".into());
    side(
        "ns3 flow.txt",
        std::fs::read_to_string(ns3.join("flow.txt")).unwrap(),
        "flows.txt",
        format!("duration = \"5us\"\n[topology.file]\npath = \"{}\"\n[[flows]]\nfile = \"flows.txt\"\n", ns3.join("topology.txt").display().to_string().replace('\\', "/")),
    );
    let mut cdfs: Vec<PathBuf> = std::fs::read_dir(root().join("data/cdf")).unwrap().map(|e| e.unwrap().path()).collect();
    cdfs.sort();
    for c in cdfs {
        let name = c.file_name().unwrap().to_string_lossy().into_owned();
        side(&name, std::fs::read_to_string(&c).unwrap(), "sizes.cdf", "duration = \"5us\"\n[topology.star]\nhosts = 4\n[[flows]]\ncdf = \"sizes.cdf\"\nload = 0.5\n".into());
    }
    out
}

#[test]
fn mutated_inputs_never_panic() {
    let cases: usize = std::env::var("RNICSIM_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000);
    let seed: u64 = std::env::var("RNICSIM_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    let tmp = tempfile::tempdir().unwrap();
    let corpus = corpus(tmp.path());
    let mut g = Gen(seed);
    let (mut ok, mut refused) = (0, 0);
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut failures = Vec::new();
    // The case under way (number, corpus entry, input) and when it started, for the watchdog.
    // `None` once the last case is done.
    let current: Arc<Mutex<(usize, String, String, Option<Instant>)>> = Arc::new(Mutex::new((0, String::new(), String::new(), Some(Instant::now()))));
    let limit = Duration::from_secs(std::env::var("RNICSIM_FUZZ_CASE_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(120));
    let watched = Arc::clone(&current);
    std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_millis(500).min(limit));
        let c = watched.lock().unwrap_or_else(|e| e.into_inner());
        if c.3.is_some_and(|at| at.elapsed() > limit) {
            // Written to the stream itself: the test harness captures `eprintln!`, and exiting
            // would lose what it holds.
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "case {} ({}) still runs after {:?} (seed {seed}): a hang\n--- input ---\n{}", c.0, c.1, limit, c.2);
            std::process::exit(101);
        }
    });
    for case in 0..cases {
        let (name, text, make) = &corpus[case % corpus.len()];
        let mut t = text.clone();
        for _ in 0..1 + g.below(4) {
            t = mutate(&t, &mut g);
        }
        let input = make(t.clone());
        *current.lock().unwrap_or_else(|e| e.into_inner()) = (case, name.clone(), t.clone(), Some(Instant::now()));
        if std::env::var_os("RNICSIM_FUZZ_VERBOSE").is_some() {
            // Said before the run: a stack overflow aborts without unwinding to the report.
            eprintln!("case {case} ({name}) starts");
            if let Some(keep) = std::env::var_os("RNICSIM_FUZZ_KEEP") {
                std::fs::write(keep, &t).unwrap();
            }
        }
        match catch_unwind(AssertUnwindSafe(|| exercise(&input))) {
            Ok(Ok(())) => ok += 1,
            Ok(Err(e)) => {
                refused += 1;
                if std::env::var_os("RNICSIM_FUZZ_VERBOSE").is_some() {
                    println!("case {case} ({name}): {e}");
                }
                if e.message.trim().is_empty() {
                    failures.push(format!("case {case} ({name}): an error that says nothing"));
                }
            }
            Err(p) => {
                let what = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
                failures.push(format!("case {case} ({name}): panicked: {what}\n--- input ---\n{t}"));
            }
        }
    }
    current.lock().unwrap_or_else(|e| e.into_inner()).3 = None;
    std::panic::set_hook(quiet);
    println!("{cases} cases over {} inputs: {ok} ran, {refused} refused with an error", corpus.len());
    assert!(failures.is_empty(), "{} of {cases} cases failed (seed {seed}):\n{}", failures.len(), failures.iter().take(5).cloned().collect::<Vec<_>>().join("\n\n"));
    assert!(ok > cases / 10, "most mutations should still run ({ok} of {cases})");
}
