"""The Python API: scenarios as dictionaries, runs as folders of tables.

A :class:`Scenario` holds the TOML document as nested dicts and lists; :meth:`Scenario.set` changes
any dotted key. :meth:`Scenario.run` runs it in this process (the simulator releases the GIL;
Ctrl-C interrupts it and nothing is written) and returns a :class:`Run`, whose tables are polars
DataFrames and which DuckDB queries directly.
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import os
import re
import signal
import sys
import threading
import tomllib
import warnings
from pathlib import Path
from typing import Any, Callable, Optional, Union

import polars as pl

from . import _native

#: The Parquet tables every run folder holds (see docs/outputs.md).
TABLES = ("flows", "perftest", "rates", "counters", "queues", "pfc", "sources", "nic_events", "state_cache", "ordering", "yama_timeline", "scr_telemetry", "scr_rates", "scr_rtt")


class ScenarioError(ValueError):
    """A scenario is invalid; the message names the file, line and key."""


class Scenario:
    """A scenario: its document (nested dicts), a label for errors, and the folder relative
    paths in it resolve against. A scenario read from a file or TOML text remembers that text
    and the keys :meth:`set` changed since, so errors name the file's own lines (or the
    ``.set()`` that caused them), as the command line's ``--set`` does."""

    def __init__(self, data: dict[str, Any], label: str = "<python>", base_dir: Union[str, Path] = "."):
        self.data = data
        self.label = label
        self.base_dir = Path(base_dir)
        # The file read, if any: it names the default output folder, as on the command line.
        self.path: Optional[Path] = None
        # The text `data` was read from, and the `.set()` calls since.
        self._text: Optional[str] = None
        self._sets: list[tuple[str, Any]] = []

    @classmethod
    def from_file(cls, path: Union[str, Path]) -> "Scenario":
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise ScenarioError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
        if _native.is_ns3_config(text):
            raise ScenarioError(
                f"{path}: an ns-3 config (KEY value lines), which Scenario.from_file does not read (it takes TOML scenarios); "
                f"run it with `python -m rnicsim run {path}` (or `rnicsim run`), which translates it"
            )
        s = cls.from_toml(text, path.parent, str(path))
        s.path = path
        return s

    @classmethod
    def from_toml(cls, text: str, base_dir: Union[str, Path] = ".", label: str = "<toml>") -> "Scenario":
        # A leading byte order mark (as some Windows editors write) is not TOML; the command
        # line drops it, and so does this.
        text = text.removeprefix("\ufeff")
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            # The simulator's own reader says it as the command line does, naming the file, the
            # line and the key (a duplicate `name`: "s.toml:2:1: key `name`: duplicate key");
            # Python's parser is the fallback (line and column only).
            try:
                _native.validate(text, label, str(base_dir), [])
            except ValueError as native:
                raise ScenarioError(str(native)) from None
            raise ScenarioError(f"{label}: {e}") from None
        bad = _non_finite(data, label)
        if bad is not None:
            # The simulator's reader names the line of a nan or inf (it has none of either), and
            # the JSON the document crosses into it by could not carry one: refused here.
            try:
                _native.validate(text, label, str(base_dir), [])
            except ValueError as native:
                raise ScenarioError(str(native)) from None
            raise bad
        s = cls(data, label, base_dir)
        s._text = text
        return s

    @classmethod
    def from_dict(cls, data: dict[str, Any], base_dir: Union[str, Path] = ".") -> "Scenario":
        data = _toml_value(data, "")
        bad = _non_finite(data, "<python>")
        if bad is not None:
            raise bad
        return cls(data, "<python>", base_dir)

    def set(self, key: str, value: Any) -> "Scenario":
        """Sets a dotted key (``"links.rate"``, ``"nic.cc"``; list elements as
        ``"flows.0.load"`` or ``"flows[0].load"``), as the command line's ``--set`` does:
        missing tables are created, and a key of another kind in a one-kind table
        (``"nic.cc.hpcc.eta"`` in a DCQCN scenario) switches the kind. Returns the scenario, so
        calls chain."""
        value = _toml_value(value, key)
        bad = _non_finite(value, ".set()", key)
        if bad is not None:
            raise bad
        self.data = _set_key(self.data, key, value)
        self._sets.append((key, copy.deepcopy(value)))
        return self

    def _native_args(self) -> tuple[str, str, list[tuple[str, str]]]:
        """Text, label and overrides for the simulator: the text read and the `.set()` calls,
        unless `data` was changed some other way (then the document itself, labelled so)."""
        if self._text is not None:
            replayed = tomllib.loads(self._text)
            for k, v in self._sets:
                replayed = _set_key(replayed, k, v)
            if replayed == self.data:
                return self._text, self.label, [(k, json.dumps(v)) for k, v in self._sets]
            return self.to_toml(), f"{self.label} (as edited in Python)", []
        return self.to_toml(), self.label, []

    def get(self, key: str, default: Any = None) -> Any:
        """The value at a key spelled as for :meth:`set` (``"flows[0].load"`` or
        ``"flows.0.load"``), or `default` when there is none; a malformed key
        (``"flows[0]x.load"``) raises ScenarioError, as it does for :meth:`set`."""
        node, missing = _walk(self.data, _path(key))
        return default if missing is not None else node

    def resolved(self, key: str) -> Any:
        """The value the simulator runs with at `key` (spelled as for :meth:`get`): the file's,
        or the default it leaves in place (``resolved("nic.retry_count")`` is 7 where :meth:`get`
        gives None). Checks the scenario first (a ScenarioError if it is invalid); a KeyError
        names a key the resolved scenario has not: misspelt, or an option left off (an unset
        ``[nic.gpu]``), which the resolved scenario leaves out too."""
        steps = _path(key)
        node, missing = _walk(tomllib.loads(self.validate()), steps)
        if missing is not None:
            where = ".".join(str(x) for x in steps[:missing]) or "the top level"
            have = ", ".join(sorted(node)) if isinstance(node, dict) else f"{len(node)} entries" if isinstance(node, list) else "a value, not a table"
            raise KeyError(f"{key!r}: the resolved scenario has no {steps[missing]!r} under {where} (it has {have}): misspelt, or an option left off")
        return node

    def to_toml(self) -> str:
        return _native.json_to_toml(json.dumps(self.data))

    def validate(self) -> str:
        """Checks the scenario (and the files it names); returns it resolved, as TOML."""
        text, label, sets = self._native_args()
        unseen = text is not self._text
        try:
            resolved, notes = _native.validate(text, label, str(self.base_dir), sets)
        except ValueError as e:
            raise ScenarioError(_no_unseen_lines(str(e), label, unseen)) from None
        for note in notes:
            _warn(_no_unseen_lines(note, label, unseen), ScenarioWarning)
        return resolved

    def run(self, out: Union[str, Path, None] = None, force: bool = False, progress: Optional[bool] = None, scr_policy: Any = None) -> "Run":
        """Runs in this process and writes the results to `out`: by default ``runs/<file stem>``
        as on the command line, or for a scenario not read from a file ``runs/<name>`` (the
        name made one plain folder name).
        `progress`: a bar; by default when stderr is a terminal or in a Jupyter notebook.
        `scr_policy`: an SCR policy object for ``[nic.scr.policy.external]`` (see
        :mod:`rnicsim.policies`; its exception stops the run at once and is raised)."""
        if out is None:
            out = Path("runs") / (self.path.stem if self.path else _folder_name(self.data.get("name")))
        out = Path(out)
        text, label, sets = self._native_args()
        unseen = text is not self._text
        baselines = tuple(str(b.get("name", "")) for b in self.data.get("baseline", []) if isinstance(b, dict))
        callback, close = _progress(progress, baselines)
        try:
            with _terminate_as_exit():
                path = _native.run(text, label, str(self.base_dir), str(out), force, callback, scr_policy, sets)
        except ValueError as e:
            raise ScenarioError(_no_unseen_lines(str(e), label, unseen)) from None
        except OSError as e:
            # The simulator names the command line's flag; here it is the `force` argument.
            raise type(e)(str(e).replace("--force", "force=True")) from None
        finally:
            close()
        run = Run(path)
        for note in run.summary.get("warnings", []):
            _warn(note, ScenarioWarning)
        stall = run.summary.get("stall")
        if stall:
            ended = f"; stop_on_stall ended the run at {stall['stopped_at_ps']} ps" if "stopped_at_ps" in stall else ""
            if stall.get("rnr_naks"):
                ended = f"; {stall['rnr_naks']} requests were refused in the run for want of a posted receive (RNR NAKs){ended}"
            if stall.get("waiting_star_ends"):
                ended = f" (and {stall['waiting_star_ends']} StaR connection ends){ended}"
            _warn(
                f"the run stalled: nothing reached its destination after {stall['since_ps']} ps while "
                f"{stall['packets_alive']} packets were alive and {stall['waiting_flows']} flows and {stall['waiting_qps']} queue pairs waited{ended}; "
                "see summary['stall']",
                StallWarning,
            )
        return run


_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def _warn(message: str, category: type[Warning]) -> None:
    """Warns as from the caller's line that led here (a script's `rnicsim.run(...)`), the
    first frame outside this package, not from a line of the package."""
    level, frame = 2, sys._getframe(1)
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == _PACKAGE:
        level, frame = level + 1, frame.f_back
    warnings.warn(message, category, stacklevel=level)


def _folder_name(name: Any) -> str:
    """A scenario's name as one folder name: what is not a letter, digit, `-`, `_` or `.` becomes
    `_`, and dots at the ends go, so that a name such as "../x" or "a/b" stays inside `runs/`."""
    return re.sub(r"[^\w.-]+", "_", str(name or "")).strip(".") or "scenario"


def _is_run(path: Path) -> bool:
    """Whether `path` is a run folder, as the simulator decides: it holds the `.rnicsim-run`
    marker or, for a run written before the marker, both `scenario.toml` and `summary.json`."""
    return (path / ".rnicsim-run").is_file() or ((path / "scenario.toml").is_file() and (path / "summary.json").is_file())


def _file_in_the_way(path: Path) -> Optional[Path]:
    """The first of `path` and the folders above it that exists, when it is not a folder (a
    file there stops a folder from being made); else None."""
    for p in (path, *path.parents):
        if p.exists() or p.is_symlink():
            return None if p.is_dir() else p
    return None


def _no_unseen_lines(message: str, label: str, unseen: bool) -> str:
    """`message` without the line and column it names in `label`'s text when that text is one
    the user never saw (a scenario made from a dict, or edited in Python: the simulator reads
    it as TOML written for it), so that `<python>:4:1: key ...` reads `<python>: key ...`; the
    key still says where."""
    if not unseen:
        return message
    return re.sub(rf"(^|\n)(\s*(?:error: |warning: )?{re.escape(label)}):\d+:\d+:", r"\1\2:", message)


def _walk(node: Any, steps: list[Union[str, int]]) -> tuple[Any, Optional[int]]:
    """Follows `steps` (as :func:`_path` gives them) down a document: the value reached and
    None, or, where a step is not there, the node it was looked for in and the step's index."""
    for i, step in enumerate(steps):
        if isinstance(step, int) and isinstance(node, list) and step < len(node):
            node = node[step]
        elif isinstance(step, str) and isinstance(node, dict) and step in node:
            node = node[step]
        else:
            return node, i
    return node, None


def _path(key: str) -> list[Union[str, int]]:
    """`key`'s steps as the simulator's --set reads them: table keys (str) and list indices
    (int); a number after the first step is an index, so `flows.0.load` is `flows[0].load`.
    A malformed key (`flows[0]x.load`, `links..rate`) raises ScenarioError, as `set` does."""
    try:
        return _native.key_path(key)
    except ValueError as e:
        raise ScenarioError(str(e)) from None


# What makes a run write the tables that not every run writes.
_TABLE_NEEDS = {
    "nic_events": "outputs.nic_events = true",
    "state_cache": "[nic.state_cache]",
    "ordering": "[nic.ordering]",
    "yama_timeline": "[yama]",
    "scr_telemetry": "nic.scr.telemetry",
    "scr_rates": "[nic.scr]",
    "scr_rtt": "[nic.scr]",
}


def _toml_value(value: Any, key: str) -> Any:
    """`value` as the plain Python a TOML document holds: a NumPy scalar (``np.int64(4)``, as
    a DataFrame's cell gives) as its Python number, a path (``Path("flows.txt")``) as its text,
    a tuple as a list. Raises ScenarioError naming `key` for what TOML has no value for: None
    (a key cannot be unset; leave it out of the scenario), an integer outside TOML's 64 bits,
    an object of another type."""
    where = f"key `{key}`: " if key else ""
    if isinstance(value, (bool, str, float)):
        return value
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            raise ScenarioError(f"{where}{value} is outside the integers TOML holds (-2**63 to 2**63 - 1)")
        return value
    if value is None:
        raise ScenarioError(f"{where}None has no TOML value: a key cannot be unset; build the scenario without it to take its default")
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, dict):
        bad = next((k for k in value if not isinstance(k, str)), None)
        if bad is not None:
            raise ScenarioError(f"{where}a table's keys are strings, got {bad!r}")
        return {k: _toml_value(v, f"{key}.{k}" if key else k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_toml_value(v, f"{key}[{i}]") for i, v in enumerate(value)]
    # A NumPy (or other array library's) scalar: its Python value.
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        return _toml_value(value.item(), key)
    kind = f"{type(value).__module__}.{type(value).__qualname__}".removeprefix("builtins.")
    raise ScenarioError(f"{where}expected a number, string, boolean, list or table (dict), got {kind} {value!r}")


def _non_finite(doc: Any, label: str, prefix: str = "") -> Optional[ScenarioError]:
    """The error for the first nan or infinity in `doc` (a value at key `prefix`), named by
    `label` and its key path, or None. No scenario key takes one, and JSON, which documents
    cross into the simulator by, has none: a nan in a file was refused as "not representable as
    TOML" with no key, or blamed on a later `.set()`."""
    if isinstance(doc, float) and not math.isfinite(doc):
        return ScenarioError(f"{label}: key `{prefix}`: expected a number, got {doc}")
    if isinstance(doc, dict):
        items = ((f"{prefix}.{k}" if prefix else str(k), v) for k, v in doc.items())
    elif isinstance(doc, (list, tuple)):
        items = ((f"{prefix}[{i}]", v) for i, v in enumerate(doc))
    else:
        return None
    for path, v in items:
        found = _non_finite(v, label, path)
        if found is not None:
            return found
    return None


def _set_key(doc: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """`doc` with `key` set to `value` (the simulator's own rule; a new document)."""
    try:
        return json.loads(_native.set_key(json.dumps(doc), key, json.dumps(value)))
    except (TypeError, ValueError) as e:
        raise ScenarioError(str(e) if str(e).startswith("key `") else f"key `{key}`: {e}") from None


def run(scenario: Union[str, Path, Scenario, dict], out: Union[str, Path, None] = None, force: bool = False, progress: Optional[bool] = None, scr_policy: Any = None, **overrides: Any) -> "Run":
    """Runs a scenario file, :class:`Scenario` or dict. Keyword overrides use ``__`` for dots:
    ``run("s.toml", seed=2, links__rate="25Gbps")``. `scr_policy`: see :meth:`Scenario.run`."""
    if isinstance(scenario, (str, Path)):
        s = Scenario.from_file(scenario)
    elif isinstance(scenario, dict):
        s = Scenario.from_dict(scenario)
    else:
        # The overrides are for this run: the caller's Scenario stays as it was.
        s = copy.deepcopy(scenario)
    for k, v in overrides.items():
        s.set(k.replace("__", "."), v)
    return s.run(out, force=force, progress=progress, scr_policy=scr_policy)


@contextlib.contextmanager
def _sigterm_raises(exception: Callable[[int], BaseException]) -> Any:
    """Within the block SIGTERM raises `exception(signum)` in the main thread, where the work
    under way stops as on Ctrl-C (by default SIGTERM would end the process on the spot). Only
    where Python can take signals (the main thread) and nothing else has claimed SIGTERM."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def stop(signum: int, _frame: Any) -> None:
        raise exception(signum)

    signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _terminate_as_exit() -> Any:
    """While a run is in the simulator, SIGTERM stops it as Ctrl-C does: the simulator stops at
    its next check, removes its partial run folder, and ``SystemExit(143)`` ends the process
    (the partial folder is not left behind)."""
    return _sigterm_raises(lambda signum: SystemExit(128 + signum))


def _progress(progress: Optional[bool], baselines: tuple[str, ...] = ()) -> tuple[Optional[_native.Progress], Callable[[], None]]:
    """A progress callback and what closes it: a bar by default when stderr is a terminal or
    this runs in a notebook (Jupyter's kernel, whose stderr is no terminal); `baselines`: the
    scenario's [[baseline]] names, for the bar's label as the command line gives it."""
    if progress is None:
        progress = sys.stderr.isatty() or _in_notebook()
    if not progress:
        return None, lambda: None
    from tqdm.auto import tqdm

    bar = tqdm(total=100, unit="%", desc="simulating", leave=False)

    def update(now: int, end: int, events: int, flows: Optional[tuple[int, int]] = None, baseline: Optional[int] = None) -> None:
        # Over flows finished when the run ends with its listed flows (an ns-3 config's, whose
        # duration is only a safety limit), else over simulated time; `baseline`: the number of
        # the [[baseline]] run under way, once the scenario's own has ended.
        if baseline is None:
            desc = "simulating"
        elif baseline < len(baselines):
            desc = f"baseline {baseline + 1}/{len(baselines)} {baselines[baseline]}"
        else:
            desc = f"baseline {baseline + 1}"
        if bar.desc != desc:
            bar.set_description(desc, refresh=False)
        done, total = flows if flows else (now, end)
        bar.n = round(100 * done / max(total, 1), 1)
        bar.set_postfix(events=f"{events / 1e6:.1f}M", **({"flows": f"{flows[0]}/{flows[1]}"} if flows else {}), refresh=False)
        bar.refresh()

    return update, bar.close


def _in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (IPython's ZMQ shell), where tqdm draws a widget."""
    shell = sys.modules.get("IPython")
    try:
        ip = shell.get_ipython() if shell is not None else None
    except Exception:  # noqa: BLE001 - an IPython that cannot say is not a notebook
        return False
    return type(ip).__name__ == "ZMQInteractiveShell"


class ScenarioWarning(UserWarning):
    """A scenario runs but a setting is unlikely to be what was meant (summary key `warnings`);
    the message names the file, line and key."""


class StallWarning(RuntimeWarning):
    """A run stalled: work was pending and nothing reached its destination (summary key `stall`)."""


class DamagedRunError(ValueError):
    """A file of a run folder cannot be read (cut short, or changed by hand); the message names it."""


def read_summary(path: Path) -> dict[str, Any]:
    """A run's summary.json; DamagedRunError naming the file if it is not a JSON object."""
    try:
        doc = json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError) as e:
        raise DamagedRunError(f"{path}: not valid JSON ({e}); the run folder is damaged: run the scenario again") from None
    if not isinstance(doc, dict):
        raise DamagedRunError(f"{path}: expected a JSON object, got {type(doc).__name__}; the run folder is damaged: run the scenario again")
    return doc


def read_resolved_scenario(path: Path) -> dict[str, Any]:
    """A run's scenario.toml; DamagedRunError naming the file if it is not TOML."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise DamagedRunError(f"{path}: not valid TOML ({e}); the run folder is damaged: run the scenario again") from None


class Run:
    """A finished run's folder."""

    def __init__(self, path: Union[str, Path]):
        self.path = Path(path)
        if not self.path.exists():
            raise FileNotFoundError(f"{self.path}: no such folder")
        if not (self.path / "summary.json").exists():
            hint = f"; it is a sweep's folder: its runs are {self.path / 'runs' / '*'}" if (self.path / "results.parquet").is_file() else ""
            raise FileNotFoundError(f"{self.path} is not a complete run (no summary.json){hint}")

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r})"

    @property
    def summary(self) -> dict[str, Any]:
        return read_summary(self.path / "summary.json")

    @property
    def scenario(self) -> dict[str, Any]:
        """The resolved scenario (every default spelled out)."""
        return read_resolved_scenario(self.path / "scenario.toml")

    def table(self, name: str) -> pl.DataFrame:
        """One of :data:`TABLES` as a polars DataFrame."""
        if name not in TABLES:
            raise KeyError(f"no table {name!r}; tables are {', '.join(TABLES)}")
        path = self.path / f"{name}.parquet"
        if not path.exists():
            needs = _TABLE_NEEDS.get(name)
            why = f"it needs {needs}" if needs else "every run writes it: the folder is incomplete, or a file was removed"
            raise FileNotFoundError(f"{path} was not written ({why})")
        try:
            # (Taken literally: a run in `runs[1]/` read `runs1/`'s tables as a glob.)
            return pl.read_parquet(path, glob=False)
        except pl.exceptions.PolarsError as e:
            raise DamagedRunError(f"{path}: not a readable Parquet table ({e}); the run folder is damaged: run the scenario again") from None

    flows = property(lambda self: self.table("flows"))
    perftest = property(lambda self: self.table("perftest"))
    rates = property(lambda self: self.table("rates"))
    counters = property(lambda self: self.table("counters"))
    queues = property(lambda self: self.table("queues"))
    pfc = property(lambda self: self.table("pfc"))
    sources = property(lambda self: self.table("sources"))
    nic_events = property(lambda self: self.table("nic_events"))

    def connect(self):
        """A DuckDB connection with a view per table, plus `scenario` and `summary` as
        (key, value) tables of the flattened documents."""
        from .query import connect

        return connect(self.path)

    def query(self, sql: str) -> pl.DataFrame:
        """Runs SQL over the run's tables; returns a polars DataFrame with the SQL result's
        column types (an INTERVAL, which polars cannot hold, as its text). Columns named alike
        (``SELECT size, size``) are renamed as DuckDB renames them in a subquery (``size``,
        ``size_1``)."""
        if not sql.strip():
            raise ValueError("no SQL to run (an empty statement)")
        import duckdb

        from .query import missing_table_hint

        con = self.connect()
        try:
            rel = con.sql(sql)
        except duckdb.CatalogException as e:
            hint = missing_table_hint(str(e), con)
            if hint is None:
                raise
            raise duckdb.CatalogException(f"{e}\n{hint}") from None
        if rel is None:
            # A statement without a result (CREATE VIEW ..., SET ...): no rows, no columns.
            return pl.DataFrame()
        if len(set(rel.columns)) < len(rel.columns):
            # A DataFrame needs distinct names; projecting `*` gives DuckDB's own renaming.
            rel = rel.project("*")
        types = [str(t) for t in rel.types]
        as_text = [_polars_cannot_hold(t) for t in types]
        if any(as_text):
            # polars cannot take Arrow's month-day-nano intervals or unions, nor a struct, list
            # or map holding one (it panicked): those columns as text.
            quoted = ['"' + c.replace('"', '""') + '"' for c in rel.columns]
            rel = rel.project(", ".join(f"CAST({q} AS VARCHAR) AS {q}" if text else q for q, text in zip(quoted, as_text)))
        # DuckDB's Arrow export (no pyarrow needed) keeps the types: rows through Python would
        # have polars guess them from the first rows (an all-NULL start fails, u32 becomes i64).
        return pl.DataFrame(rel) if hasattr(rel, "__arrow_c_stream__") else rel.pl()


def _polars_cannot_hold(duckdb_type: str) -> bool:
    """Whether a DuckDB column type holds an INTERVAL or a UNION anywhere in it (`INTERVAL[]`,
    `STRUCT(d INTERVAL)`, `MAP(VARCHAR, INTERVAL)`, `UNION(k INTEGER)`), which polars cannot
    take from Arrow."""
    t = duckdb_type.upper()
    return "INTERVAL" in t or t.startswith("UNION") or "UNION(" in t


def open_run(path: Union[str, Path]) -> Run:
    """Opens an existing run folder."""
    return Run(path)


if os.environ.get("RNICSIM_DEBUG_NATIVE"):
    print(_native.__file__, file=sys.stderr)
