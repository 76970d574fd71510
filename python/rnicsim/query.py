"""DuckDB over a run folder: one view per Parquet table, and the resolved scenario and summary as
(key, value) tables with dotted keys; over a sweep folder, its `results` table, and each table
its runs write, across all of them, with a `run` column to join on."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any, Iterator, Optional, Union

import duckdb

from .api import read_resolved_scenario, read_summary


def leaves(doc: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every value of a nested document with its dotted key (`flows[0].load`): tables by key,
    lists that hold tables or lists by index."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from leaves(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(doc, list) and any(isinstance(x, (dict, list)) for x in doc):
        for i, v in enumerate(doc):
            yield from leaves(v, f"{prefix}[{i}]")
    else:
        yield prefix, doc


def _flatten(doc: Any) -> Iterator[tuple[str, str]]:
    """`leaves` as text: strings as they are, the rest as JSON."""
    for key, v in leaves(doc):
        yield key, v if isinstance(v, str) else json.dumps(v)


def _sql_string(text: str) -> str:
    """`text` as an SQL string literal: a quote in it (a folder named "Bob's runs") is doubled."""
    return "'" + text.replace("'", "''") + "'"


def _file(path: Path) -> str:
    """A file's path as `read_parquet` takes it literally: DuckDB expands `*`, `?` and `[...]`
    in a path, so a run in `runs[1]/` read the tables of `runs1/`; each is written as a class
    of itself (`[[]`), which matches only that character."""
    text = path.as_posix().replace("[", "[[]").replace("*", "[*]").replace("?", "[?]")
    return _sql_string(text)


def _views(con: "duckdb.DuckDBPyConnection", path: Path) -> None:
    """A view for each table the run folder `path` has. Files that are no table of a run (a
    copy, `flows (copy).parquet`) are left alone, and a damaged one is warned of and left out,
    so that the other tables can still be queried."""
    from .api import TABLES

    for name in TABLES + ("results",):
        f = path / f"{name}.parquet"
        if not f.is_file():
            continue
        try:
            con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet({_file(f)})")
        except duckdb.Error as e:
            warnings.warn(f"{f}: not a readable Parquet table ({str(e).splitlines()[0]}); the {name} table is left out", DamagedTableWarning, stacklevel=3)


class DamagedTableWarning(UserWarning):
    """A table of the folder could not be read; the others can."""


def connect(path: Union[str, Path]) -> "duckdb.DuckDBPyConnection":
    """A connection over a run folder, or a sweep folder (whose `results` table has one row per
    finished point, and whose `flows`, `pfc`, ... views hold every run's rows with its `run`:
    ``SELECT "flows.0.load", avg(slowdown) FROM results JOIN flows USING (run) GROUP BY 1``)."""
    path = Path(path)
    if not (path / "summary.json").is_file() and not (path / "results.parquet").is_file():
        what = "no such folder" if not path.exists() else "not a complete run (no summary.json) or a sweep (no results.parquet)"
        raise FileNotFoundError(f"{path}: {what}")
    con = duckdb.connect()
    _views(con, path)
    if (path / "results.parquet").is_file() and (path / "runs").is_dir():
        # A sweep: each table its finished runs write, over all of them, with the `run` that
        # `results` names for that run's folder, so one join gives a per-flow figure per swept
        # value. Runs are matched by their folder's name, so a sweep folder that was moved or
        # copied still joins. Only the runs `results` names are read: a folder reused by
        # another sweep keeps the earlier sweep's runs (and a point still running or killed,
        # `.<hash>.partial-<pid>`), which are not this sweep's.
        runs = (path / "runs").resolve()
        names = "(SELECT regexp_extract(run, '[^/\\\\]+$') AS folder, min(run) AS run FROM results GROUP BY 1)"
        listed = {folder for (folder,) in con.execute(f"SELECT folder FROM {names}").fetchall()}
        finished = sorted(d for d in runs.iterdir() if d.name in listed and d.is_dir() and (d / "summary.json").is_file())
        from .api import TABLES

        for name in sorted({f.stem for d in finished for f in d.glob("*.parquet")} & set(TABLES)):
            files = "[" + ", ".join(_file(d / f"{name}.parquet") for d in finished if (d / f"{name}.parquet").is_file()) + "]"
            rows = f"(SELECT *, regexp_extract(filename, '([^/]+)/[^/]*$', 1) AS folder FROM read_parquet({files}, filename = true, union_by_name = true))"
            try:
                con.execute(f"CREATE VIEW {name} AS SELECT t.* EXCLUDE (filename, folder), n.run FROM {rows} t JOIN {names} n USING (folder)")
            except duckdb.Error as e:
                warnings.warn(f"{path}: the runs' {name} tables cannot all be read ({str(e).splitlines()[0]}); the {name} table is left out", DamagedTableWarning, stacklevel=2)
    docs = []
    if (path / "scenario.toml").exists():
        docs.append(("scenario", read_resolved_scenario(path / "scenario.toml")))
    if (path / "summary.json").exists():
        docs.append(("summary", read_summary(path / "summary.json")))
    for name, doc in docs:
        con.execute(f"CREATE TABLE {name} (key VARCHAR, value VARCHAR)")
        rows = list(_flatten(doc))
        if rows:
            con.executemany(f"INSERT INTO {name} VALUES (?, ?)", rows)
    return con


def missing_table_hint(message: str, con: "duckdb.DuckDBPyConnection") -> Optional[str]:
    """For DuckDB's error of a table that does not exist (whose own suggestion is a catalog
    table such as `pg_indexes`), what the run has: a table every run of some setting writes is
    named with that setting, and the tables there are listed. None for other errors."""
    m = re.search(r"Table with name (\S+) does not exist", message)
    if m is None:
        return None
    from .api import TABLES, _TABLE_NEEDS

    name = m.group(1).strip('"')
    have = ", ".join(t for (t,) in con.execute("SELECT table_name FROM information_schema.tables ORDER BY table_name").fetchall())
    if name in TABLES:
        needs = _TABLE_NEEDS.get(name)
        why = f"a run writes it only with {needs}" if needs else "every run writes it: the folder is incomplete, or the file was removed"
        return f"this run has no {name} table ({why}); its tables are {have}"
    return f"there is no table {name}; this run's tables are {have}"
