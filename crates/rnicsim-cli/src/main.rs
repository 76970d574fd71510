//! The `rnicsim` binary: the command line of `rnicsim_cli`, stopped cleanly by Ctrl-C.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn main() -> ExitCode {
    quiet_on_closed_pipe();
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        // A second Ctrl-C while stopping falls through to the default handler.
        let _ = ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst));
    }
    ExitCode::from(rnicsim_cli::main_with(std::env::args().collect(), &|| stop.load(Ordering::Relaxed)))
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
