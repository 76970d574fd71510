"""Parameter sweeps: a sweep file expands one scenario over a grid or a zip of keys and seeds,
runs the points on a local process pool, and merges their summaries into one table.

Sweep file (TOML)::

    scenario = "../scenarios/quickstart.toml"   # relative to the sweep file
    mode = "grid"                                # or "zip" (all lists of equal length)
    seeds = [1, 2]                               # optional, crossed with every point
    [parameters]
    "nic.cc" = [{ dcqcn = {} }, { hpcc = {} }]
    "flows.0.load" = [0.2, 0.4]                  # list elements by index

Points run on a local process pool, or on a Ray cluster (``ray_address``; ``--ray ADDRESS``).
Runs are content-addressed: each point's folder is named by a hash of its resolved scenario and
of the content of the files it reads (flow, CDF and topology files), so re-running a sweep skips
finished points and resumes after a crash, and runs a point again when a file it reads changed.
Points that resolve to the same scenario (``"300us"`` and ``"0.3ms"``) run once and share that
folder; a value (or seed) listed twice, two parameters that set the same key (``flows.0.load``
and ``flows[0].load``, ``nic.cc`` and ``nic.cc.dcqcn.g``, two kinds of one-kind table such as
``nic.cc.hpcc.eta`` and ``nic.cc.dcqcn.g``) and a parameter that cannot be set (an index past a
list's end) are mistakes of the sweep file, refused before anything is written. A point that
fails (an invalid value, a crash) is reported with its parameters in ``failures.json`` and does
not stop the others. ``results.parquet`` holds one row per finished point: its parameters (numbers,
strings and booleans as typed columns, tables as JSON text), seed, run folder and every numeric
value of its summary (integers as integer columns).
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import copy
import hashlib
import itertools
import json
import math
import multiprocessing
import os
import signal
import sys
import tomllib
import warnings
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Iterator, Optional, Union

import polars as pl

from ._native import MODEL_ID
from .api import DamagedRunError, Run, Scenario, ScenarioError, ScenarioWarning, _file_in_the_way, _is_run, _non_finite, _path, _sigterm_raises, _warn, read_summary


def load(path: Union[str, Path]) -> tuple[Scenario, list[dict[str, Any]]]:
    """Reads a sweep file: the base scenario and the list of points (key → value)."""
    path = Path(path)
    try:
        # utf-8-sig: a leading byte order mark is dropped, as for scenario files.
        spec = tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except OSError as e:
        raise ScenarioError(f"{path}: cannot read the sweep file: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise ScenarioError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{path}: {e}") from None
    known = ("scenario", "mode", "seeds", "parameters")
    unknown = set(spec) - set(known)
    if unknown:
        import difflib

        close = {k: difflib.get_close_matches(k, known, n=1, cutoff=0.6) for k in sorted(unknown)}
        named = ", ".join(f"{k} (did you mean {c[0]}?)" if c else k for k, c in close.items())
        hint = "" if any(close.values()) else f"; a sweep file takes {', '.join(known)}, and a scenario key goes under [parameters]"
        raise ScenarioError(f"{path}: unknown sweep keys: {named}{hint}")
    if "scenario" not in spec:
        raise ScenarioError(f"{path}: a sweep needs `scenario`")
    # Every key's kind is checked before the scenario is read or a point made.
    if not isinstance(spec["scenario"], str) or not spec["scenario"]:
        raise ScenarioError(f"{path}: scenario: expected the scenario file's path as a string, got {spec['scenario']!r}")
    params: dict[str, list[Any]] = spec.get("parameters", {})
    if not isinstance(params, dict):
        raise ScenarioError(f"{path}: parameters: expected a table of keys, each with a list of values ([parameters]), got {params!r}")
    for k, v in params.items():
        if isinstance(v, dict):
            # `switch.buffer = [...]` unquoted is TOML's table `switch` holding `buffer`.
            from .query import leaves

            inner = next(iter(leaves(v)), ("...", None))[0]
            raise ScenarioError(f"{path}: parameters.{k}: expected a list of values, got a table: a dotted key is quoted in a sweep file, as \"{k}.{inner}\" = [...]")
        if not isinstance(v, list) or not v:
            raise ScenarioError(f"{path}: parameters.{k}: expected a non-empty list of values")
    mode = spec.get("mode", "grid")
    if mode not in ("grid", "zip"):
        raise ScenarioError(f"{path}: mode: expected \"grid\" or \"zip\", got {mode!r}")
    seeds = spec.get("seeds")
    if seeds is not None:
        if not isinstance(seeds, list) or not seeds:
            raise ScenarioError(f"{path}: seeds: expected a non-empty list of seeds (whole numbers), got {seeds!r}")
        bad = next((s for s in seeds if not isinstance(s, int) or isinstance(s, bool) or s < 0), None)
        if bad is not None:
            raise ScenarioError(f"{path}: seeds: expected whole numbers of at least 0, got {bad!r}")
        twice = next((s for i, s in enumerate(seeds) if s in seeds[:i]), None)
        if twice is not None:
            raise ScenarioError(f"{path}: seeds: {twice} is given twice; list each seed once")
    scenario = path.parent / spec["scenario"]
    if not scenario.is_file():
        raise ScenarioError(f"{path}: scenario: {spec['scenario']} (read as {scenario}) is not a file; a relative path is taken from the sweep file's folder")
    keys = list(params)
    _check_keys(path, keys)
    base = Scenario.from_file(scenario)
    if mode == "grid":
        for k in keys:
            seen = [json.dumps(v, sort_keys=True) for v in params[k]]
            twice = next((v for i, v in enumerate(seen) if v in seen[:i]), None)
            if twice is not None:
                raise ScenarioError(f"{path}: parameters.{k}: {twice} is given twice; list each value once")
        combos = list(itertools.product(*(params[k] for k in keys)))
    else:
        lengths = {len(params[k]) for k in keys}
        if len(lengths) > 1:
            sizes = ", ".join(f"{k} {len(params[k])}" for k in keys)
            raise ScenarioError(f"{path}: mode = \"zip\" needs lists of equal length, got {sizes}")
        combos = list(zip(*(params[k] for k in keys)))
        seen = [json.dumps(c, sort_keys=True) for c in combos]
        twice = next((i for i, c in enumerate(seen) if c in seen[:i]), None)
        if twice is not None:
            raise ScenarioError(f"{path}: parameters: point {twice + 1} of the zip is point {seen.index(seen[twice]) + 1} again; list each point once")
    points = [dict(zip(keys, c)) for c in combos] or [{}]
    if seeds is not None:
        # (By the key's parts: `"seed"`, quoted, is the same key, and slipped past.)
        spelt = next((k for k in keys if tuple(_path(k)) == ("seed",)), None)
        if spelt is not None:
            raise ScenarioError(f"{path}: parameters.{spelt}: the seed is swept by `seeds`; give it in one place, not both")
        points = [{**p, "seed": s} for p in points for s in seeds]
    return base, points


# Tables that hold exactly one of several kinds, as the simulator has them (`ONE_OF` in
# crates/rnicsim/src/scenario/mod.rs): setting a key of another kind switches the table to it.
ONE_OF = (("topology",), ("nic", "cc"), ("nic", "scheduler"), ("nic", "scr", "policy"))


def _check_keys(path: Path, keys: list[str]) -> None:
    """Refuses parameters that set the same thing twice, where one point's later value would
    replace an earlier one and the results would carry a value never used: the same key spelt
    two ways (`flows.0.load`, `flows[0].load`), a key and a table that holds it (`nic.cc`,
    `nic.cc.dcqcn.g`), or two kinds of a one-kind table (`nic.cc.hpcc.eta`, `nic.cc.dcqcn.g`)."""
    steps = {}
    for k in keys:
        try:
            steps[k] = tuple(_path(k))
        except ScenarioError as e:
            raise ScenarioError(f"{path}: parameters.{k}: {str(e).removeprefix(f'key `{k}`: ')}") from None
    for a, b in itertools.combinations(keys, 2):
        sa, sb = steps[a], steps[b]
        if sa == sb:
            raise ScenarioError(f"{path}: parameters: `{a}` and `{b}` are the same key; give it once")
        (short, ss), (long, sl) = sorted([(a, sa), (b, sb)], key=lambda x: len(x[1]))
        if sl[: len(ss)] == ss:
            raise ScenarioError(f"{path}: parameters: `{short}` sets the whole of what `{long}` sets a part of; give the part in `{short}`'s values instead")
        for t in ONE_OF:
            n = len(t)
            if sa[:n] == t == sb[:n] and len(sa) > n and len(sb) > n and sa[n] != sb[n]:
                table = ".".join(t)
                raise ScenarioError(
                    f"{path}: parameters: `{a}` and `{b}` set two kinds of `{table}`, which holds one (the later would replace the earlier); "
                    f"sweep the kind as `{table}` = [{{ {sa[n]} = {{ ... }} }}, {{ {sb[n]} = {{ ... }} }}]"
                )


def _input_files(doc: Any, top: bool = True) -> Iterator[str]:
    """The files a resolved scenario reads: every string that is an absolute path to a file
    (the simulator makes the topology file, `flows[].cdf` and `flows[].file` absolute when it
    resolves a scenario), except under `[outputs]`, whose files it writes."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            if not (top and k == "outputs"):
                yield from _input_files(v, False)
    elif isinstance(doc, list):
        for v in doc:
            yield from _input_files(v, False)
    elif isinstance(doc, str) and os.path.isabs(doc) and os.path.isfile(doc):
        yield doc


def _file_digest(path: str, cache: dict[tuple[str, int, int], bytes]) -> bytes:
    """The SHA-256 of a file's content, read once per sweep for each version of the file."""
    try:
        st = os.stat(path)
        at = (path, st.st_mtime_ns, st.st_size)
        if at not in cache:
            cache[at] = hashlib.sha256(Path(path).read_bytes()).digest()
        return cache[at]
    except OSError as e:
        return f"unreadable: {e}".encode()


def _key(resolved_toml: str, cache: Optional[dict[tuple[str, int, int], bytes]] = None) -> str:
    """A point's folder name: a hash of its resolved scenario, of the content of every file it
    reads (a changed flow, CDF or topology file is another scenario, run again) and of the
    simulator's build (`MODEL_ID`: points an earlier build ran are run again, not mixed in)."""
    h = hashlib.sha256(resolved_toml.encode())
    h.update(b"\0model\0" + MODEL_ID.encode())
    cache = {} if cache is None else cache
    for f in sorted(set(_input_files(tomllib.loads(resolved_toml)))):
        h.update(b"\0input\0" + f.encode() + b"\0" + _file_digest(f, cache))
    return h.hexdigest()[:16]


# In a pool worker: whether Ctrl-C came, whether it was told to end (SIGTERM), and whether a
# point is running (see _worker_init).
_interrupted = False
_terminating = False
_running = False


def _on_sigint(signum: int, frame: Any) -> None:
    global _interrupted
    _interrupted = True
    if _running:
        raise KeyboardInterrupt  # the simulator stops and writes nothing
    # Idle (waiting for a point): no traceback from the pool's loop; the next point is skipped.


def _on_sigterm(signum: int, frame: Any) -> None:
    # The sweep stopping its workers (or a pool torn down, or `kill`): a running point stops
    # and writes nothing (see _run_point), then the worker ends; an idle one ends at once.
    global _interrupted, _terminating
    _interrupted = _terminating = True
    if _running:
        raise KeyboardInterrupt
    os._exit(128 + signum)


def _worker_init() -> None:
    # Ctrl-C reaches the workers too (one process group). The points already handed to a
    # worker cannot be cancelled; after Ctrl-C they are skipped, not each run to its end.
    signal.signal(signal.SIGINT, _on_sigint)
    signal.signal(signal.SIGTERM, _on_sigterm)


class Terminated(KeyboardInterrupt):
    """The sweep was told to end (SIGTERM): it stops as on Ctrl-C, and the command exits with
    128 + the signal's number, as a process a signal ends does."""

    def __init__(self, signum: int):
        super().__init__(f"ended by signal {signum}")
        self.signum = signum


class SweepWarning(UserWarning):
    """Points of a sweep that are invalid or failed (their errors are in failures.json)."""


class PointError(Exception):
    """A point's failure as its worker saw it, as text: the exception's type name and message.
    What a point raises cannot always go back to the sweep (the simulator's PanicException
    cannot be pickled), so the worker sends this instead."""


def _portable(e: BaseException) -> PointError:
    return PointError(f"{type(e).__name__}: {e}")


def _run_point(s: Scenario, out: str, model: str = MODEL_ID) -> str:
    """Runs one point into `out` (in a pool worker or a Ray task). `model` is the build the
    sweep keyed the point by: a worker of another build (a Ray node whose rnicsim was not
    reinstalled) refuses it rather than file its results under the sweep's key."""
    global _running
    if _interrupted:
        raise KeyboardInterrupt
    if model != MODEL_ID:
        raise PointError(f"this worker's rnicsim is another build (model {MODEL_ID}) than the sweep's (model {model}): install the same rnicsim on every node")
    _running = True
    try:
        with warnings.catch_warnings():
            # The sweep tells each point's warnings itself, once: those of its check, and those
            # the run writes into its summary (a worker printed them again, with its own line).
            warnings.simplefilter("ignore", ScenarioWarning)
            s.run(out, force=True, progress=False)
    except KeyboardInterrupt:
        # The simulator has stopped and removed the point's partial folder. A worker told to
        # end (SIGTERM) ends now, rather than live on to take the next point.
        if _terminating:
            os._exit(143)
        raise
    except SystemExit:
        raise
    except BaseException as e:  # noqa: BLE001 - a panic is a BaseException; it is reported as text
        raise _portable(e) from None
    finally:
        _running = False
    return out


def _error_text(e: BaseException) -> str:
    """A failed point's error as failures.json gives it: type name and message."""
    cause = getattr(e, "cause", None)  # Ray wraps a task's exception
    if isinstance(cause, PointError):
        e = cause
    if isinstance(e, BrokenProcessPool):
        # Every point the pool still held fails with it; which one's worker died is unknown.
        return (
            "BrokenProcessPool: a worker process ended abruptly (killed, out of memory, or unable to start: a script that runs a sweep must call it "
            'under `if __name__ == "__main__":`, which the workers need to import the script) while this point waited or ran, and the pool stopped; '
            "points that finished are kept: run the sweep again to resume"
        )
    return str(e) if isinstance(e, PointError) else f"{type(e).__name__}: {e}"


def _usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, as `taskset` or a batch scheduler sets
    it), not every CPU of the machine."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


# Set by the `sweep` command (whose option is --ray); from Python the argument is ray_address.
_AS_COMMAND = False


def _local(todo: list, workers: int) -> Iterator[tuple[tuple, Optional[str]]]:
    # Spawned workers: forking a process that runs polars' and the simulator's threads is unsafe.
    ctx = multiprocessing.get_context("spawn")
    pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_worker_init)
    done = False
    try:
        futures = {pool.submit(_run_point, s, str(d), MODEL_ID): (p, s, d) for p, s, d in todo}
        pending = set(futures)
        while pending:
            # Waited on in short turns: a SIGINT to this process alone is seen between them.
            # (polars installs its own SIGINT handler, which leaves a long wait uninterrupted:
            # the sweep stopped only once the running point ended.)
            finished, pending = cf.wait(pending, timeout=0.2, return_when=cf.FIRST_COMPLETED)
            for f in (f for f in futures if f in finished):
                try:
                    f.result()
                    yield futures[f], None
                except Exception as e:  # noqa: BLE001 - a failing point is reported, the rest go on
                    yield futures[f], _error_text(e)
        done = True
    finally:
        if not done:
            # Stopped early (Ctrl-C or SIGTERM to this process alone, as Jupyter's interrupt
            # sends): the workers are told to end, each stopping its point, which then writes
            # nothing, rather than run on to its end unwatched.
            for pid in list(getattr(pool, "_processes", None) or {}):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGTERM)
        # The points not started are dropped, not run first; a point running writes its
        # folder whole or not at all.
        pool.shutdown(wait=True, cancel_futures=True)


def _ray(todo: list, address: str) -> Iterator[tuple[tuple, Optional[str]]]:
    import ray

    opts = {"include_dashboard": False, "log_to_driver": False}
    if address == "local":
        ray.init(num_cpus=_usable_cpus(), **opts)
    else:
        ray.init(address=address, **opts)
    try:
        remote = ray.remote(_run_point)
        refs = {remote.remote(s, str(d), MODEL_ID): (p, s, d) for p, s, d in todo}
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            try:
                ray.get(ready[0])
                yield refs[ready[0]], None
            except Exception as e:  # noqa: BLE001 - a failing point is reported, the rest go on
                yield refs[ready[0]], _error_text(e)
    finally:
        ray.shutdown()


def _check_out(out: Path) -> None:
    """Raises OSError when `out` cannot be a sweep's folder: a file is there (or in the place of
    `out/runs` or a folder above it), or it is a run's folder. A folder that holds a sweep
    already is taken as it is: the sweep resumes there."""
    blocked = _file_in_the_way(out / "runs")
    if blocked is not None:
        raise NotADirectoryError(f"{blocked} is a file, not a folder; name a folder for the sweep's output (--out)")
    if out.is_dir() and _is_run(out):
        raise FileExistsError(f"{out} is a run's folder (it has a .rnicsim-run file), not a sweep's; name another folder for the sweep's output (--out)")
    # Another folder that holds things is not the sweep's to write results.parquet and
    # failures.json into (it replaced a user's files of those names without a word).
    if out.is_dir() and not (out / "runs").is_dir() and any(out.iterdir()):
        raise FileExistsError(f"{out} holds other files and is not a sweep's folder (it has no runs/); name a new or empty folder for the sweep's output (--out)")


def run_sweep(path: Union[str, Path], out: Union[str, Path], workers: Optional[int] = None, quiet: bool = False, ray_address: Optional[str] = None) -> pl.DataFrame:
    """Runs every point not already finished, on a local process pool or, with `ray_address`
    (``"local"`` starts a Ray instance here; otherwise an address for ``ray.init``), on a Ray
    cluster whose nodes share `out`'s filesystem and have rnicsim installed. Returns the merged
    results table."""
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        # A pool worker importing the script that started the sweep while it starts (spawned
        # workers import it; `_inheriting` is how multiprocessing itself tells that phase),
        # which ran the sweep again rather than leave it to the guard.
        raise RuntimeError('run_sweep was called as a sweep\'s worker imported the script that runs the sweep: call it under `if __name__ == "__main__":` in that script')
    out = Path(out)
    if workers is not None and workers < 1:
        # Checked before anything is written (the pool would refuse it only after).
        raise ValueError(f"workers: expected at least 1, got {workers} (leave it out for one per CPU)")
    base, points = load(path)
    _check_out(out)
    if ray_address is not None:
        import importlib.util

        if importlib.util.find_spec("ray") is None:
            option = "--ray" if _AS_COMMAND else "ray_address"
            raise ScenarioError(f"{option}: this Python ({sys.executable}) has no Ray; install it with rnicsim (`pip install .[ray]`), or leave {option} out for a local process pool")
    # Every point is made and checked before anything is written: a parameter that cannot be
    # set (a list index past the end) is a mistake of the sweep file, which stops it here, and
    # so is a sweep none of whose points is valid (a misspelt key, a base scenario at fault).
    # The warnings the points' scenarios draw, each told once (and again by no worker).
    told: set[str] = set()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ScenarioWarning)
        planned = [_plan(Path(path), base, p) for p in points]
    for w in caught:
        if str(w.message) not in told:
            told.add(str(w.message))
            _warn(str(w.message), w.category)
    cache: dict[tuple[str, int, int], bytes] = {}
    # A file outside the run folder (`outputs.fct_file`, `pfc_file`) named alike by points
    # that run apart would be written by each in turn, in no set order, and keep the last one's
    # lines (points that resolve to one scenario run once, and write it once).
    for key in ("outputs.fct_file", "outputs.pfc_file"):
        named: dict[str, set[str]] = {}
        for _, s, r in planned:
            f = None if isinstance(r, ScenarioError) else s.get(key)
            if f is not None:
                named.setdefault(str(f), set()).add(_key(r, cache))
        shared = sorted(f for f, runs in named.items() if len(runs) > 1)
        if shared:
            raise ScenarioError(f"{path}: {key} = {shared[0]!r} in the scenario: each of the sweep's points would write it over the last (each run folder has its own fct.txt and pfc.txt); leave it out, or sweep it with a value per point")
    invalid = [r for _, _, r in planned if isinstance(r, ScenarioError)]
    if invalid and len(invalid) == len(planned):
        first = str(invalid[0])
        same = "every point" if all(str(e) == first for e in invalid) else f"every point ({len(invalid)}; the first)"
        raise ScenarioError(f"{path}: {same} is invalid, so nothing ran: {first}")
    (out / "runs").mkdir(parents=True, exist_ok=True)
    # Points whose scenarios are the same ("300us" and "0.3ms") share one run folder: each
    # distinct scenario runs once, and the results give each point its row.
    members: dict[Path, list[dict[str, Any]]] = {}
    todo, finished, failures = [], [], []
    for p, s, resolved in planned:
        if isinstance(resolved, ScenarioError):
            # (As a point that fails while it runs is given: the error's type and text.)
            failures.append({"parameters": p, "error": _error_text(resolved)})
            continue
        d = (out / "runs" / _key(resolved, cache)).resolve()
        if d in members:
            members[d].append(p)
            continue
        members[d] = [p]
        # A finished point has a summary that reads; one damaged since (a truncated file) runs
        # again, where it was taken as finished and every later sweep stopped on it.
        (finished if _summary(d) is not None else todo).append((p, s, d))
    where = f"Ray ({ray_address})" if ray_address else "a local process pool"
    if not quiet:
        same = sum(len(m) - 1 for m in members.values())
        also = f", {same} the same scenario as another point (each scenario runs once)" if same else ""
        print(f"sweep: {len(points)} points, {len(finished)} already finished, {len(todo)} to run on {where}, {len(failures)} invalid{also}", file=sys.stderr)
    events = _ray(todo, ray_address) if ray_address and todo else _local(todo, workers or _usable_cpus())
    # SIGTERM to the sweep stops it as Ctrl-C does (by default it ended the sweep at once and
    # left its workers running points no one waits for).
    failed = 0
    with _sigterm_raises(Terminated):
        for i, ((p, s, d), error) in enumerate(events, 1):
            if error is None:
                finished.append((p, s, d))
                # What the run itself found (flows that did not finish, a stall, ...), which
                # its worker keeps to itself: told here, once.
                for text in map(str, (_summary(d) or {}).get("warnings", [])):
                    if text not in told:
                        told.add(text)
                        _warn(text, ScenarioWarning)
            else:
                failed += 1
                failures.extend({"parameters": q, "error": error} for q in members[d])
            if not quiet:
                print(f"sweep: {i}/{len(todo)} done" + (f", {failed} failed" if failed else ""), file=sys.stderr)
    done = [(q, s, d) for _, s, d in finished for q in members[d]]
    # (A parameter of nan or inf, which made its point invalid, as text: JSON has neither.)
    (out / "failures.json").write_text(json.dumps(_json_safe(failures), indent=2, allow_nan=False) + "\n")
    table = results(done, points)
    tmp = out / "results.parquet.partial"
    table.write_parquet(tmp)
    tmp.replace(out / "results.parquet")
    if failures and not quiet:
        for fl in failures:
            print(f"sweep: failed {json.dumps(fl['parameters'])}: {fl['error']}", file=sys.stderr)
    if failures:
        # A caller that reads only the table would take the missing rows for a whole sweep.
        _warn(f"{len(failures)} of {len(points)} points are invalid or failed and have no row: see {out / 'failures.json'}", SweepWarning)
    return table


def _json_safe(doc: Any) -> Any:
    """`doc` with every nan or infinity as its text ("nan", "inf", "-inf")."""
    if isinstance(doc, float) and not math.isfinite(doc):
        return str(doc)
    if isinstance(doc, dict):
        return {k: _json_safe(v) for k, v in doc.items()}
    if isinstance(doc, (list, tuple)):
        return [_json_safe(v) for v in doc]
    return doc


def _summary(run: Path) -> Optional[dict[str, Any]]:
    """`run`'s summary.json, or None where there is none or it does not read."""
    try:
        return read_summary(run / "summary.json")
    except (OSError, DamagedRunError):
        return None


def _plan(path: Path, base: Scenario, point: dict[str, Any]) -> tuple[dict[str, Any], Scenario, Union[str, ScenarioError]]:
    """A point's scenario and its resolved text, or the error that makes the point invalid.
    Raises ScenarioError naming the sweep file and the parameter when a parameter cannot be
    set at all (an index past a list's end, a key inside a value that is not a table)."""
    s = copy.deepcopy(base)
    for k, v in point.items():
        bad = _non_finite(v, ".set()", k)
        if bad is not None:
            # A value no key takes, of this point alone: the point is invalid, the rest run.
            return point, s, bad
        try:
            s.set(k, v)
        except ScenarioError as e:
            where = "seeds" if k == "seed" else f"parameters.{k}"
            raise ScenarioError(f"{path}: {where}: {str(e).removeprefix(f'key `{k}`: ')}") from None
    try:
        return point, s, s.validate()
    except ScenarioError as e:
        return point, s, e


def _scalars(doc: Any, prefix: str = "") -> dict[str, Union[int, float]]:
    """Every number of a summary under its dotted name, integers as integers."""
    out: dict[str, Union[int, float]] = {}
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.update(_scalars(v, f"{prefix}.{k}" if prefix else k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.update(_scalars(v, f"{prefix}[{i}]"))
    elif isinstance(doc, (int, float)) and not isinstance(doc, bool):
        out[prefix] = doc
    return out


def _numeric_types(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Each summary column's type: Int64 when every point that has it gives an integer that
    fits, else Float64 (a key that is an integer in some points and not in others)."""
    kinds: dict[str, bool] = {}
    for row in rows:
        for k, v in row.items():
            fits = isinstance(v, int) and -(2**63) <= v < 2**63
            kinds[k] = kinds.get(k, True) and fits
    return {k: pl.Int64 if ints else pl.Float64 for k, ints in kinds.items()}


def _column(values: list[Any]) -> list[Any]:
    """A swept key's values as one column: numbers, strings or booleans as they are when every
    point gives that kind (integers stay integers), else each value as JSON text."""
    kinds = {bool if isinstance(v, bool) else int if isinstance(v, int) else float if isinstance(v, float) else str if isinstance(v, str) else object for v in values}
    if kinds <= {int}:
        return values
    if kinds <= {int, float}:
        return [float(v) for v in values]
    if kinds == {str} or kinds == {bool}:
        return values
    return [json.dumps(v) for v in values]


def results(done: list[tuple[dict[str, Any], Scenario, Path]], points: Optional[list[dict[str, Any]]] = None) -> pl.DataFrame:
    """One row per finished point, in the order of `points` (the sweep's grid) when given."""
    if points is not None:
        order = {json.dumps(p, sort_keys=True): i for i, p in enumerate(points)}
        done = sorted(done, key=lambda x: order.get(json.dumps(x[0], sort_keys=True), len(order)))
    else:
        done = sorted(done, key=lambda x: str(x[2]))
    keys = sorted({k for p, _, _ in done for k in p})
    rows = [_scalars(Run(d).summary) for _, _, d in done]
    if not rows:
        return pl.DataFrame({"run": []}, schema={"run": pl.Utf8})
    types = _numeric_types(rows)
    for row, (_, _, d) in zip(rows, done):
        # Summary values first; the swept parameters take their names over them.
        for k, t in types.items():
            if t == pl.Float64 and k in row:
                row[k] = float(row[k])
        # Where the run is within the sweep folder (`runs/<key>`): the same sweep written to
        # another folder gives the same table, byte for byte.
        row["run"] = f"runs/{d.name}"
    # (A summary key a parameter replaces takes the parameter's type.)
    types = {k: t for k, t in types.items() if k not in keys}
    for k in keys:
        for row, v in zip(rows, _column([p.get(k) for p, _, _ in done])):
            row[k] = v
    # Columns from every row, not polars' first 100: a summary key some points lack (deflection
    # counts when only later points deflect) is null where missing, not dropped.
    return pl.DataFrame(rows, schema_overrides=types, infer_schema_length=None)
