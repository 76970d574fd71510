//! `rnicsim._native`: the simulator inside Python. Runs release the GIL; progress and Ctrl-C
//! are handled by briefly re-acquiring it every 2¹⁶ events. The Python package
//! (`python/rnicsim`) builds the friendly API on these few functions.

use pyo3::exceptions::{PyKeyboardInterrupt, PyOSError, PyValueError};
use pyo3::prelude::*;
use rnicsim::output::RunDir;
use rnicsim::scenario::LoadedScenario;
use rnicsim::world::{RunEnd, World};
use std::path::Path;

/// Runs the `rnicsim` command line with `argv` (program name first); returns its exit code.
#[pyfunction]
fn cli(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(|| rnicsim_cli::main_with(argv, &|| Python::attach(|py| py.check_signals().is_err())))
}

/// Converts a JSON document to TOML text (scenarios built from Python objects).
#[pyfunction]
fn json_to_toml(json: &str) -> PyResult<String> {
    let v: toml::Value = serde_json::from_str(json).map_err(|e| PyValueError::new_err(format!("not representable as TOML: {e}")))?;
    toml::to_string(&v).map_err(|e| PyValueError::new_err(format!("not representable as TOML: {e}")))
}

/// Checks scenario text; raises ValueError naming file, line and key.
#[pyfunction]
fn validate(text: &str, label: &str, base_dir: &str) -> PyResult<String> {
    let loaded = LoadedScenario::from_str(text, label, Path::new(base_dir)).map_err(|e| PyValueError::new_err(e.to_string()))?;
    World::build(&loaded).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(loaded.resolved_toml())
}

/// Runs scenario text and writes its results into `out` (created whole or not at all).
/// `progress(now_ps, end_ps, events)` is called every 2¹⁶ events if given.
#[pyfunction]
#[pyo3(signature = (text, label, base_dir, out, force=false, progress=None))]
fn run(py: Python<'_>, text: &str, label: &str, base_dir: &str, out: &str, force: bool, progress: Option<Py<PyAny>>) -> PyResult<String> {
    let loaded = LoadedScenario::from_str(text, label, Path::new(base_dir)).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let mut world = World::build(&loaded).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let dir = RunDir::create(Path::new(out), force).map_err(|e| PyOSError::new_err(format!("cannot prepare {out}: {e}")))?;
    rnicsim::check_destinations(&loaded).map_err(|e| PyValueError::new_err(e.to_string()))?;
    rnicsim::stream_outputs(&dir, &loaded, &mut world).map_err(|e| PyOSError::new_err(format!("cannot write results to {out}: {e}")))?;
    let mut failure: Option<PyErr> = None;
    let end = py.detach(|| {
        world.run(|p| {
            Python::attach(|py| {
                if let Some(cb) = &progress {
                    if let Err(e) = cb.call1(py, (p.now.0, p.end.0, p.events)) {
                        failure = Some(e);
                        return false;
                    }
                }
                match py.check_signals() {
                    Ok(()) => true,
                    Err(e) => {
                        failure = Some(e);
                        false
                    }
                }
            })
        })
    });
    if end == RunEnd::Interrupted {
        return Err(failure.unwrap_or_else(|| PyKeyboardInterrupt::new_err("interrupted; nothing was written")));
    }
    rnicsim::write_outputs(&dir, &loaded, &mut world).map_err(|e| PyOSError::new_err(format!("cannot write results to {out}: {e}")))?;
    let path = dir.commit().map_err(|e| PyOSError::new_err(format!("cannot move results into {out}: {e}")))?;
    Ok(path.display().to_string())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add_function(wrap_pyfunction!(json_to_toml, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    Ok(())
}
