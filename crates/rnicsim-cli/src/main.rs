//! The `rnicsim` binary: the command line of `rnicsim_cli`, stopped cleanly by Ctrl-C.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn main() -> ExitCode {
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        // A second Ctrl-C while stopping falls through to the default handler.
        let _ = ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst));
    }
    ExitCode::from(rnicsim_cli::main_with(std::env::args().collect(), &|| stop.load(Ordering::Relaxed)))
}
