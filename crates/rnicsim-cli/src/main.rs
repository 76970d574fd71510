//! The `rnicsim` binary: the command line of `rnicsim_cli`. A command that writes a run folder
//! or starts runs of its own (`run`, `bench rdma`, `bench soak`, `bench scale`) is stopped
//! cleanly by Ctrl-C, SIGTERM or SIGHUP, ending with the shell's status for that signal
//! (128 + its number); the analysis commands' Python answers them itself; the others end as
//! any program does.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

fn main() -> ExitCode {
    quiet_on_closed_pipe();
    let args: Vec<String> = std::env::args().collect();
    let stopping = Arc::new(AtomicBool::new(false));
    let signal = Arc::new(AtomicUsize::new(0));
    // Only the commands `catches_signals` names; any other ends at the first signal, as
    // programs do (a `validate` reading a pipe, a `bench fabric` ignored its first Ctrl-C).
    let signals = if rnicsim_cli::catches_signals(&args) { &[SIGINT, SIGTERM, SIGHUP][..] } else { &[] };
    for &sig in signals {
        // A second signal while stopping takes the signal's default action (ends at once);
        // hooks run in the order registered, so this one sees the flag the first set.
        let _ = signal_hook::flag::register_conditional_default(sig, stopping.clone());
        let _ = signal_hook::flag::register_usize(sig, signal.clone(), sig as usize);
        let _ = signal_hook::flag::register(sig, stopping.clone());
    }
    let code = rnicsim_cli::main_with(args, &|| stopping.load(Ordering::Relaxed));
    ExitCode::from(stopped_status(code, signal.load(Ordering::Relaxed)))
}

/// `main_with` ends a stopped command with 130, Ctrl-C's status; a command stopped by another
/// signal ends with that signal's (SIGTERM 143, SIGHUP 129), as a shell reports it.
fn stopped_status(code: u8, signal: usize) -> u8 {
    match (code, signal) {
        (130, s) if s > 0 && s < 128 => 128 + s as u8,
        _ => code,
    }
}

/// Output piped into a reader that stops early (`rnicsim validate f.toml | head -1`) ends the
/// program quietly, with the status a shell gives a process killed by SIGPIPE, instead of a
/// panic report: Rust's `println!` panics when stdout is a closed pipe (or cannot be written:
/// that is one line of error and status 2).
fn quiet_on_closed_pipe() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info.payload().downcast_ref::<String>().map(String::as_str).or_else(|| info.payload().downcast_ref::<&str>().copied()).unwrap_or("");
        if msg.contains("failed printing to stdout") && msg.contains("Broken pipe") {
            std::process::exit(141);
        }
        // Any other failure to print (a full disk, `> /dev/full`): one line, not a panic.
        if msg.contains("failed printing to stdout") {
            eprintln!("error: cannot write to standard output ({})", msg.trim_start_matches("failed printing to stdout: "));
            std::process::exit(2);
        }
        report(info)
    }));
}
