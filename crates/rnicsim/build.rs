//! The model's identity: a hash of the simulator's sources (this crate's and the three system
//! crates' it builds on, unit tests and comments included) and of the workspace's `Cargo.lock`
//! (the versions of the crates it depends on, such as its random number generators), so that a
//! run folder, `rnicsim --version` and the Python package say which code made a result, and a
//! sweep does not mix points of two builds.

use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn main() {
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let dirs = [here.join("src"), here.join("../eunomia/src"), here.join("../tassel/src"), here.join("../yama/src")];
    // FNV-1a (64-bit) over each file's path below its crate and its bytes, in path order.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for &b in bytes {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    };
    for dir in &dirs {
        println!("cargo:rerun-if-changed={}", dir.display());
        let mut all = Vec::new();
        files(dir, &mut all);
        all.sort();
        for f in all {
            let name = f.strip_prefix(dir.parent().unwrap_or(dir)).unwrap_or(&f);
            feed(name.to_string_lossy().as_bytes());
            feed(&[0]);
            feed(&std::fs::read(&f).unwrap_or_default());
            feed(&[0]);
        }
    }
    let lock = here.join("../../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    feed(b"Cargo.lock\0");
    feed(&std::fs::read(&lock).unwrap_or_default());
    println!("cargo:rustc-env=RNICSIM_MODEL_ID={h:016x}");
}
