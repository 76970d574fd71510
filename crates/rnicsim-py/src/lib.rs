//! `rnicsim._native`: the simulator inside Python. Runs release the GIL; progress and Ctrl-C
//! are handled by briefly re-acquiring it every 2¹⁶ events. The Python package
//! (`python/rnicsim`) builds the friendly API on these few functions.

use pyo3::exceptions::{PyException, PyKeyboardInterrupt, PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::IntoPyDict;
use rnicsim::nic::scr::event::ScrEvent;
use rnicsim::nic::scr::policy::external::ExternalPolicy;
use rnicsim::nic::scr::policy::Action;
use rnicsim::output::RunDir;
use rnicsim::scenario::LoadedScenario;
use rnicsim::units::Time;
use rnicsim::world::{RunEnd, World};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// An SCR policy written in Python (`[nic.scr.policy.external]`), one object shared by every
/// SCR NIC (the host's node id comes with each call). Each call briefly takes the GIL; the
/// first exception stops further calls and the run (at its next progress check), and is raised.
struct PyPolicy {
    obj: Py<PyAny>,
    host: u32,
    error: Arc<Mutex<Option<PyErr>>>,
}

impl PyPolicy {
    /// Calls `method(args)` if the object has it and appends the actions it returns.
    fn call(&self, method: &str, args: impl FnOnce(Python<'_>) -> PyResult<Py<pyo3::types::PyTuple>>, actions: &mut Vec<Action>) {
        let mut failed = self.error.lock().expect("not poisoned");
        if failed.is_some() {
            return;
        }
        Python::attach(|py| {
            // The method's own exception, or a mistake in what it returned.
            let mut returned = false;
            let run = || -> PyResult<()> {
                let obj = self.obj.bind(py);
                if !obj.hasattr(method)? {
                    return Ok(());
                }
                let out = obj.call_method1(method, args(py)?.bind(py))?;
                returned = true;
                if out.is_none() {
                    return Ok(());
                }
                for item in out.try_iter()? {
                    actions.push(parse_action(&item?)?);
                }
                Ok(())
            };
            if let Err(e) = run() {
                // Said to be the policy's, its own exception chained as the cause (a ValueError
                // it raised read as a bad scenario, with no word of the policy). An interrupt
                // or exit (not an Exception) stays what it is.
                if !e.is_instance_of::<PyException>(py) {
                    *failed = Some(e);
                    return;
                }
                let what = if returned {
                    format!("returned a bad action: {}", e.value(py))
                } else {
                    let kind = e.get_type(py).name().map(|n| n.to_string()).unwrap_or_else(|_| "an exception".into());
                    format!("raised {kind}: {}", e.value(py))
                };
                let wrapped = PyRuntimeError::new_err(format!("the SCR policy's {method} (host {}) {what}", self.host));
                wrapped.set_cause(py, Some(e));
                *failed = Some(wrapped);
            }
        });
    }
}

/// `("rate", flow, bps)`, `("sport", flow, port)`, `("probe_rtt", flow)`,
/// `("probe_path", flow, port)`, `("signal", flow, value, bytes)` or `("wake", flow, after_ps)`.
fn parse_action(item: &Bound<'_, PyAny>) -> PyResult<Action> {
    let shape = || PyValueError::new_err(format!("an action is a tuple such as (\"rate\", flow, bps); got {}", item.repr().map(|r| r.to_string()).unwrap_or_default()));
    if !(item.is_instance_of::<pyo3::types::PyTuple>() || item.is_instance_of::<pyo3::types::PyList>()) {
        return Err(shape());
    }
    let len = item.len()?;
    let what: String = item.get_item(0).map_err(|_| shape())?.extract().map_err(|_| shape())?;
    let wanted = match what.as_str() {
        "probe_rtt" => 2,
        "rate" | "sport" | "probe_path" | "wake" => 3,
        "signal" => 4,
        other => return Err(PyValueError::new_err(format!("unknown SCR action {other:?}: expected rate, sport, probe_rtt, probe_path, signal or wake"))),
    };
    if len != wanted {
        return Err(PyValueError::new_err(format!("a {what:?} action has {wanted} items, got {len}: {}", item.repr()?)));
    }
    // Each argument a whole number (True is one to Python, and no flow, rate or port).
    let arg = |k: usize| -> PyResult<Bound<'_, PyAny>> {
        let v = item.get_item(k)?;
        if v.is_instance_of::<pyo3::types::PyBool>() {
            return Err(PyValueError::new_err(format!("a {what:?} action's item {k} is a bool, not a number: {}", item.repr()?)));
        }
        Ok(v)
    };
    let flow: u32 = arg(1)?.extract()?;
    Ok(match what.as_str() {
        "rate" => Action::SetRate { flow, bps: arg(2)?.extract()? },
        "sport" => Action::SetSport { flow, sport: arg(2)?.extract()? },
        "probe_rtt" => Action::ProbeRtt { flow },
        "probe_path" => Action::ProbePath { flow, sport: arg(2)?.extract()? },
        "signal" => {
            let bytes: u32 = arg(3)?.extract()?;
            let max = rnicsim::nic::scr::MAX_SIGNAL_BYTES;
            if bytes > max {
                return Err(PyValueError::new_err(format!("a signal of {bytes} B: a signal is one packet, at most {max} B")));
            }
            Action::Signal { flow, value: arg(2)?.extract()?, bytes }
        }
        _ => {
            let after: u64 = arg(2)?.extract()?;
            // (At most 10⁶ s: a time past the simulator's range would wrap.)
            if after == 0 || after > 1_000_000_000_000_000_000 {
                return Err(PyValueError::new_err(format!("a wake-up {after} ps after the decision: expected a positive delay of at most 10^18 ps")));
            }
            Action::Wake { flow, after: Time(after) }
        }
    })
}

/// Tells a policy object a run begins (its `start()`, if it has one), before the run's first
/// call: the main run and each baseline start afresh with the same object.
fn start_policy(obj: &Py<PyAny>) -> PyResult<()> {
    Python::attach(|py| {
        let obj = obj.bind(py);
        if obj.is_instance_of::<pyo3::types::PyType>() {
            let name = obj.getattr("__name__").map(|n| n.to_string()).unwrap_or_default();
            return Err(pyo3::exceptions::PyTypeError::new_err(format!("scr_policy is the class {name}, not a policy: pass an instance, {name}(...)")));
        }
        if !obj.hasattr("start")? {
            return Ok(());
        }
        // Said to be the policy's, with its own exception as the cause, as its other methods'
        // are (a ValueError from start() read as a bad scenario, its traceback dropped).
        obj.call_method0("start").map(|_| ()).map_err(|e| {
            if !e.is_instance_of::<PyException>(py) {
                return e;
            }
            let kind = e.get_type(py).name().map(|n| n.to_string()).unwrap_or_else(|_| "an exception".into());
            let wrapped = PyRuntimeError::new_err(format!("the SCR policy's start() raised {kind}: {}", e.value(py)));
            wrapped.set_cause(py, Some(e));
            wrapped
        })
    })
}

impl ExternalPolicy for PyPolicy {
    fn on_join(&mut self, now: Time, line_bps: u64, flows: &[u32], actions: &mut Vec<Action>) {
        let host = self.host;
        self.call("on_join", |py| Ok(pyo3::types::PyTuple::new(py, [host.into_pyobject(py)?.into_any(), flows.to_vec().into_pyobject(py)?.into_any(), now.0.into_pyobject(py)?.into_any(), line_bps.into_pyobject(py)?.into_any()])?.unbind()), actions);
    }
    fn on_leave(&mut self, now: Time, line_bps: u64, flow: u32, flows: &[u32], actions: &mut Vec<Action>) {
        let host = self.host;
        self.call(
            "on_leave",
            |py| Ok(pyo3::types::PyTuple::new(py, [host.into_pyobject(py)?.into_any(), flow.into_pyobject(py)?.into_any(), flows.to_vec().into_pyobject(py)?.into_any(), now.0.into_pyobject(py)?.into_any(), line_bps.into_pyobject(py)?.into_any()])?.unbind()),
            actions,
        );
    }
    fn on_event(&mut self, now: Time, line_bps: u64, ev: &ScrEvent, actions: &mut Vec<Action>) {
        let host = self.host;
        let e = *ev;
        self.call(
            "on_event",
            |py| {
                let d = pyo3::types::PyDict::new(py);
                d.set_item("flow", e.flow)?;
                d.set_item("kind", e.kind.name())?;
                d.set_item("at_ps", e.at.0)?;
                d.set_item("first_at_ps", e.first_at.0)?;
                d.set_item("bytes", e.bytes)?;
                d.set_item("count", e.count)?;
                d.set_item("rtt_ps", e.rtt.0)?;
                d.set_item("value", e.value)?;
                d.set_item("aux", e.aux)?;
                Ok(pyo3::types::PyTuple::new(py, [host.into_pyobject(py)?.into_any(), d.into_any(), now.0.into_pyobject(py)?.into_any(), line_bps.into_pyobject(py)?.into_any()])?.unbind())
            },
            actions,
        );
    }
}

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

/// Whether `text` is an HPCC/ConWeave ns-3 `config.txt` (`KEY value` lines), as the command
/// line tells one from a TOML scenario.
#[pyfunction]
fn is_ns3_config(text: &str) -> bool {
    rnicsim::scenario::ns3::is_ns3_config(text)
}

/// Sets dotted key `key` of a scenario document (JSON) to `value` (JSON), as `--set` does:
/// `flows.0.load` or `flows[0].load` reach into arrays, and a key of another kind in a one-kind
/// table (`nic.cc.hpcc.eta` in a DCQCN scenario) switches the kind. Returns the document.
#[pyfunction]
fn set_key(doc: &str, key: &str, value: &str) -> PyResult<String> {
    let mut d: toml::Table = serde_json::from_str(doc).map_err(|e| PyValueError::new_err(format!("not representable as TOML: {e}")))?;
    let v = toml_value(key, value)?;
    rnicsim::scenario::set_key(&mut d, key, Some(v)).map_err(|m| PyValueError::new_err(format!("key `{key}`: {m}")))?;
    serde_json::to_string(&d).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The steps of key path `key` as `set_key` reads it: table keys (str) and list indices (int).
/// Raises ValueError for a malformed path (`flows[0]x.load`, `links..rate`), as `set_key` does.
#[pyfunction]
fn key_path(py: Python<'_>, key: &str) -> PyResult<Vec<Py<PyAny>>> {
    let segs = rnicsim::scenario::error::parse_key_path(key).map_err(|m| PyValueError::new_err(format!("key `{key}`: {m}")))?;
    segs.into_iter()
        .map(|s| match s {
            rnicsim::scenario::error::Seg::Key(k) => Ok(k.into_pyobject(py)?.into_any().unbind()),
            rnicsim::scenario::error::Seg::Index(n) => Ok(n.into_pyobject(py)?.into_any().unbind()),
        })
        .collect()
}

/// A JSON value as a TOML value (`null` has none).
fn toml_value(key: &str, json: &str) -> PyResult<toml::Value> {
    serde_json::from_str(json).map_err(|e| PyValueError::new_err(format!("key `{key}`: not representable as TOML: {e}")))
}

/// The scenario text `text` (named `label`), with Python's `.set()` overrides applied as
/// `--set` applies the command line's, so that errors name the user's file and line, or the
/// override.
fn load(text: &str, label: &str, base_dir: &str, overrides: &[(String, String)]) -> PyResult<LoadedScenario> {
    let loaded = if overrides.is_empty() {
        LoadedScenario::from_str(text, label, Path::new(base_dir))
    } else {
        // Applied before validation: an override may mend a value the text has wrong.
        let values = overrides.iter().map(|(k, v)| Ok((k.clone(), toml_value(k, v)?))).collect::<PyResult<Vec<_>>>()?;
        LoadedScenario::from_str_with_values(text, label, Path::new(base_dir), &values, ".set()")
    };
    loaded.map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Checks scenario text (with `.set()` overrides, each a key and a JSON value); raises
/// ValueError naming file, line and key. Returns the resolved scenario and its warnings.
#[pyfunction]
#[pyo3(signature = (text, label, base_dir, overrides=Vec::new()))]
fn validate(text: &str, label: &str, base_dir: &str, overrides: Vec<(String, String)>) -> PyResult<(String, Vec<String>)> {
    let loaded = load(text, label, base_dir, &overrides)?;
    let world = World::build(&loaded).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let warnings = loaded.warnings.iter().cloned().chain(rnicsim::paper_path_warnings(&loaded, &world)).collect();
    Ok((loaded.resolved_toml(), warnings))
}

/// Runs scenario text and writes its results into `out` (created whole or not at all).
/// `progress(now_ps, end_ps, events, flows)` is called every 2¹⁶ events if given (`flows`:
/// (finished, in all) when the run ends with its listed flows, else None).
#[pyfunction]
#[pyo3(signature = (text, label, base_dir, out, force=false, progress=None, scr_policy=None, overrides=Vec::new()))]
#[allow(clippy::too_many_arguments)]
fn run(py: Python<'_>, text: &str, label: &str, base_dir: &str, out: &str, force: bool, progress: Option<Py<PyAny>>, scr_policy: Option<Py<PyAny>>, overrides: Vec<(String, String)>) -> PyResult<String> {
    let mut loaded = load(text, label, base_dir, &overrides)?;
    let mut world = World::build(&loaded).map_err(|e| PyValueError::new_err(e.to_string()))?;
    rnicsim::check_baselines(&loaded).map_err(|e| PyValueError::new_err(e.to_string()))?;
    // Kept with the scenario's warnings in `summary.json` (the package warns of them).
    let unresolved = rnicsim::paper_path_warnings(&loaded, &world);
    loaded.warnings.extend(unresolved);
    let policy_error: Arc<Mutex<Option<PyErr>>> = Arc::default();
    if let Some(obj) = &scr_policy {
        world
            .set_scr_policy(|host| Box::new(PyPolicy { obj: obj.clone_ref(py), host, error: policy_error.clone() }))
            .map_err(PyValueError::new_err)?;
        start_policy(obj)?;
    }
    if world.scr_policy_missing() {
        return Err(PyValueError::new_err("[nic.scr.policy.external] needs a policy object: run(..., scr_policy=obj)"));
    }
    rnicsim::check_destinations(&loaded, Some(Path::new(out))).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let dir = RunDir::create(Path::new(out), force).map_err(|e| PyOSError::new_err(format!("cannot prepare {out}: {e}")))?;
    rnicsim::stream_outputs(&dir, &loaded, &mut world).map_err(|e| PyOSError::new_err(format!("cannot write results to {out}: {e}")))?;
    let mut failure: Option<PyErr> = None;
    // Called as the run goes, and as its baselines go (`baseline`: which one): reports
    // progress, and stops on a signal or a failed callback or policy.
    let mut keep_going = |p: rnicsim::world::Progress, baseline: Option<usize>| {
        Python::attach(|py| {
            if let Some(cb) = &progress {
                let args = (p.now.0, p.end.0, p.events, p.flows);
                let called = match baseline {
                    None => cb.call1(py, args),
                    Some(i) => cb.call(py, args, Some(&[("baseline", i)].into_py_dict(py)?)),
                };
                if let Err(e) = called {
                    failure = Some(e);
                    return Ok(false);
                }
            }
            // A policy that failed stops the run at once (its later calls would be skipped).
            if policy_error.lock().expect("not poisoned").is_some() {
                return Ok(false);
            }
            py.check_signals().map(|()| true)
        })
        .unwrap_or_else(|e: PyErr| {
            failure = Some(e);
            false
        })
    };
    let end = py.detach(|| world.run(|p| keep_going(p, None)));
    if let Some(e) = policy_error.lock().expect("not poisoned").take() {
        return Err(e);
    }
    if end == RunEnd::Interrupted {
        return Err(failure.unwrap_or_else(|| PyKeyboardInterrupt::new_err("interrupted; nothing was written")));
    }
    // A baseline whose NICs run `external` gets the same policy object (started afresh); one
    // that sets another policy runs that one.
    let hand_over = |world: &mut World| match &scr_policy {
        Some(obj) if world.scr_policy_missing() => {
            Python::attach(|py| world.set_scr_policy(|host| Box::new(PyPolicy { obj: obj.clone_ref(py), host, error: policy_error.clone() })))?;
            // The policy's own error (kept to be raised as it is) stops the baselines.
            start_policy(obj).map_err(|e| {
                let said = e.to_string();
                *policy_error.lock().expect("not poisoned") = Some(e);
                said
            })
        }
        _ => Ok(()),
    };
    let baselines = py.detach(|| rnicsim::run_baselines_prepared(&loaded, hand_over, |i, p| keep_going(p, Some(i))));
    if let Some(e) = policy_error.lock().expect("not poisoned").take() {
        return Err(e);
    }
    let baselines = baselines.map_err(|e| PyValueError::new_err(e.to_string()))?;
    let Some(baselines) = baselines else {
        return Err(failure.unwrap_or_else(|| PyKeyboardInterrupt::new_err("interrupted during the baselines; nothing was written")));
    };
    rnicsim::write_outputs(&dir, &loaded, &mut world, baselines).map_err(|e| PyOSError::new_err(format!("cannot write results to {out}: {e}")))?;
    let path = dir.commit().map_err(|e| PyOSError::new_err(format!("cannot move results into {out}: {e}")))?;
    Ok(path.display().to_string())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add_function(wrap_pyfunction!(json_to_toml, m)?)?;
    m.add_function(wrap_pyfunction!(is_ns3_config, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(set_key, m)?)?;
    m.add_function(wrap_pyfunction!(key_path, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add("__version__", rnicsim::VERSION)?;
    m.add("MODEL_ID", rnicsim::MODEL_ID)?;
    Ok(())
}
