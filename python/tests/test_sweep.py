"""Sweeps: invalid points are reported without stopping the rest; re-running resumes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rnicsim
from rnicsim.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[2]


def write_sweep(d: Path, body: str) -> Path:
    f = d / "sweep.toml"
    f.write_text(f'scenario = "{(ROOT / "scenarios" / "quickstart.toml").as_posix()}"\n' + body)
    return f


def test_an_invalid_point_is_reported_and_the_rest_complete(tmp_path: Path) -> None:
    sweep = write_sweep(tmp_path, 'mode = "zip"\n[parameters]\nduration = ["100us", "100us", "100us"]\n"flows.0.load" = [0.1, 1.5, 0.2]\n')
    # The Python caller is told too: the table alone would look like a whole sweep.
    with pytest.warns(rnicsim.SweepWarning, match=r"1 of 3 points are invalid or failed and have no row: see .*failures.json"):
        table = run_sweep(sweep, tmp_path / "out", workers=2, quiet=True)
    assert table.height == 2
    assert table["flows.0.load"].to_list() == [0.1, 0.2], "numbers, in the sweep's order"
    failures = json.loads((tmp_path / "out" / "failures.json").read_text())
    assert len(failures) == 1 and failures[0]["parameters"]["flows.0.load"] == 1.5
    assert "flows[0].load" in failures[0]["error"] and failures[0]["error"].startswith("ScenarioError: "), "its type, as a run's failure"
    # The merged table is queryable with DuckDB.
    con = rnicsim.query.connect(tmp_path / "out")
    assert con.sql("SELECT count(*) FROM results").fetchall()[0][0] == 2


def test_rerunning_a_sweep_skips_finished_points(tmp_path: Path) -> None:
    first = write_sweep(tmp_path, 'seeds = [1, 2]\n[parameters]\nduration = ["100us"]\n')
    out = tmp_path / "out"
    assert run_sweep(first, out, workers=2, quiet=True).height == 2
    before = {p: (p / "summary.json").stat().st_mtime_ns for p in (out / "runs").iterdir()}
    # As after a crash: one more seed; only the new point runs.
    second = write_sweep(tmp_path, 'seeds = [1, 2, 3]\n[parameters]\nduration = ["100us"]\n')
    table = run_sweep(second, out, workers=2, quiet=True)
    assert table.height == 3
    after = {p: (p / "summary.json").stat().st_mtime_ns for p in (out / "runs").iterdir()}
    assert len(after) == 3
    assert all(after[p] == t for p, t in before.items()), "finished runs were not redone"
    assert table["seed"].to_list() == [1, 2, 3], "seeds are integers, rows in the grid's order"
    assert table["duration"].to_list() == ["100us"] * 3


def test_the_same_sweep_runs_on_a_local_ray_instance(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    sweep = write_sweep(tmp_path, 'seeds = [1, 2]\n[parameters]\nduration = ["100us"]\n"flows.0.load" = [0.1, 9.0]\n')
    with pytest.warns(rnicsim.SweepWarning):
        table = run_sweep(sweep, tmp_path / "ray", quiet=True, ray_address="local")
    assert table.height == 2, "the two valid points ran on Ray"
    failures = json.loads((tmp_path / "ray" / "failures.json").read_text())
    assert len(failures) == 2 and all(f["parameters"]["flows.0.load"] == 9.0 for f in failures)
    # Ray and the local pool give the same runs (same content addresses, same summaries).
    local = run_sweep(write_sweep(tmp_path, 'seeds = [1, 2]\n[parameters]\nduration = ["100us"]\n"flows.0.load" = [0.1]\n'), tmp_path / "local", workers=2, quiet=True)
    key = lambda t: sorted(zip(t["seed"].to_list(), t["rdma.flows_completed"].to_list()))  # noqa: E731
    assert key(table) == key(local)
    assert sorted(p.name for p in (tmp_path / "ray" / "runs").iterdir()) == sorted(p.name for p in (tmp_path / "local" / "runs").iterdir())


def test_a_sweep_killed_midway_resumes_without_redoing_finished_runs(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    sweep = write_sweep(tmp_path, 'seeds = [1, 2, 3, 4, 5, 6]\n[parameters]\nduration = ["300us"]\n')
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "rnicsim", "sweep", str(sweep), "--out", str(out), "--workers", "1", "--quiet"]
    proc = subprocess.Popen(cmd, start_new_session=True)
    deadline = time.time() + 120
    finished: list[Path] = []
    while time.time() < deadline and proc.poll() is None:
        finished = [p for p in (out / "runs").glob("*") if (p / "summary.json").exists()] if (out / "runs").exists() else []
        if finished:
            break
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    finished = [p for p in (out / "runs").iterdir() if (p / "summary.json").exists()]
    assert 1 <= len(finished) < 6, "killed midway"
    assert not (out / "results.parquet").exists(), "the killed sweep never merged"
    before = {p: (p / "summary.json").stat().st_mtime_ns for p in finished}
    table = run_sweep(sweep, out, workers=2, quiet=True)
    assert table.height == 6
    assert all((p / "summary.json").stat().st_mtime_ns == t for p, t in before.items()), "finished runs were kept"
    # No half-written folder survives as a run.
    assert sorted(p.name for p in (out / "runs").iterdir() if not p.name.startswith(".")) == sorted(table["run"].map_elements(lambda r: Path(r).name, return_dtype=str).to_list())


def test_failed_points_make_the_command_fail_and_mistakes_leave_nothing(tmp_path: Path) -> None:
    import subprocess
    import sys

    # One point of two is invalid: results are written, but the exit status says it failed.
    bad = write_sweep(tmp_path, '[parameters]\nduration = ["100us"]\n"flows.0.load" = [0.2, 1.5]\n')
    out = subprocess.run([sys.executable, "-m", "rnicsim", "sweep", str(bad), "--out", str(tmp_path / "o"), "--quiet"], capture_output=True, text=True)
    assert out.returncode == 1 and "1 point(s) invalid or failed" in out.stderr and "SweepWarning" not in out.stderr, out.stderr
    (failure,) = json.loads((tmp_path / "o" / "failures.json").read_text())
    assert "flows[0].load" in failure["error"], failure
    # Every point misspells a key: the sweep is refused before anything is written (it used to
    # make the folder and list each point as a failure).
    bad = write_sweep(tmp_path, '[parameters]\nduraton = ["100us", "200us"]\n')
    out = subprocess.run([sys.executable, "-m", "rnicsim", "sweep", str(bad), "--out", str(tmp_path / "o2"), "--quiet"], capture_output=True, text=True)
    assert out.returncode == 2 and "every point is invalid" in out.stderr and "key `duraton`" in out.stderr, out.stderr
    assert not (tmp_path / "o2").exists()
    # A sweep file that names a missing scenario or mixes list lengths: an error, no folder.
    (tmp_path / "s2").mkdir()
    quick = (ROOT / "scenarios" / "quickstart.toml").as_posix()
    # (The seed swept twice, by `seeds` and as a parameter: the parameter's values never ran.)
    for body in ['scenario = "nope.toml"\n', f'scenario = "{quick}"\nmode = "zip"\n[parameters]\nseed = [1, 2]\nduration = ["1us"]\n', f'scenario = "{quick}"\nseeds = [1, 2]\n[parameters]\nseed = [5, 6]\n']:
        f = tmp_path / "s2" / "sweep.toml"
        f.write_text(body)
        out = subprocess.run([sys.executable, "-m", "rnicsim", "sweep", str(f), "--out", str(tmp_path / "none")], capture_output=True, text=True)
        assert out.returncode == 2 and "error:" in out.stderr and "Traceback" not in out.stderr, out.stderr
        assert not (tmp_path / "none").exists()


def test_results_keep_summary_keys_that_only_later_points_have(tmp_path: Path) -> None:
    from rnicsim.sweep import results

    s = rnicsim.Scenario.from_toml('duration = "20us"\n[topology.star]\nhosts = 3\n[[perftest]]\ntest = "write_bw"\nclient = 0\nserver = 2\nmessage = "4KiB"\n')
    plain = s.run(tmp_path / "plain", progress=False).path
    deflecting = s.set("switch.deflection", True).run(tmp_path / "deflecting", progress=False).path
    # 150 points without deflection counts, then 50 with: more rows than polars looks at.
    points = [{"seed": i} for i in range(200)]
    done = [(p, s, plain if p["seed"] < 150 else deflecting) for p in points]
    table = results(done, points)
    assert table.height == 200
    assert "deflection.deflected" in table.columns
    assert table["deflection.deflected"].null_count() == 150


def test_ctrl_c_stops_a_sweep_with_one_line_and_status_130(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    # Points of several seconds each: the ones already handed to a worker must not run on.
    sweep = write_sweep(tmp_path, 'seeds = [1, 2, 3, 4, 5, 6, 7, 8]\n[parameters]\nduration = ["40ms"]\n')
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "rnicsim", "sweep", str(sweep), "--out", str(out), "--workers", "2"]
    # Ctrl-C reaches the terminal's whole process group: the sweep and its workers. (SIGINT is
    # reset to its default: a test runner started in the background may ignore it.)
    proc = subprocess.Popen(cmd, start_new_session=True, stderr=subprocess.PIPE, text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if (out / "runs").exists() and any((p / "summary.json").exists() for p in (out / "runs").iterdir()):
            break
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGINT)
    interrupted = time.time()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert time.time() - interrupted < 5, "stopped at once, not after the queued points"
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("sweep: interrupted; finished points are kept"), err
    # Nothing half-written: no merged table, and every run folder there is a whole run.
    assert not (out / "results.parquet").exists()
    runs = list((out / "runs").iterdir())
    assert 1 <= len(runs) < 8 and all((p / "summary.json").exists() for p in runs), runs


def _children(pid: int) -> set[int]:
    """The live processes whose parent is `pid` (Linux /proc)."""
    found = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                found.add(int(d.name))
    return found


def _alive(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("signum", ["SIGTERM", "SIGINT"])
def test_a_signal_to_the_sweep_alone_stops_it_and_its_workers(tmp_path: Path, signum: str) -> None:
    # `kill PID`, a batch scheduler, or Jupyter's interrupt signal the sweep's process only:
    # SIGTERM ended it at once and left its workers running points unwatched, forever idle
    # after; SIGINT waited for every queued point to finish (found by a helper).
    import signal
    import subprocess
    import sys
    import time

    sweep = write_sweep(tmp_path, 'seeds = [1, 2, 3, 4, 5, 6, 7, 8]\n[parameters]\nduration = ["40ms"]\n')
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "rnicsim", "sweep", str(sweep), "--out", str(out), "--workers", "2"]
    proc = subprocess.Popen(cmd, start_new_session=True, stderr=subprocess.PIPE, text=True, preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL) for s in (signal.SIGINT, signal.SIGTERM)])
    deadline = time.time() + 120
    workers: set[int] = set()
    while time.time() < deadline and proc.poll() is None:
        workers |= _children(proc.pid)
        if (out / "runs").exists() and any((p / "summary.json").exists() for p in (out / "runs").iterdir()):
            break
        time.sleep(0.02)
    workers |= _children(proc.pid)
    assert len(workers) >= 2, "the pool's workers were seen"
    # Into the next points (some 6 s each), so that none is about to end.
    time.sleep(1.0)
    proc.send_signal(getattr(signal, signum))
    stopped = time.time()
    _, err = proc.communicate(timeout=120)
    # The status a shell gives a process that signal ends (SIGTERM's was 130, Ctrl-C's).
    assert proc.returncode == 128 + getattr(signal, signum), err
    # At once: not after the queued points, nor after the running ones (with polars' own
    # SIGINT handler the wait for them was not interrupted: found by a helper).
    assert time.time() - stopped < 2.0, f"stopped after {time.time() - stopped:.1f} s, not at once"
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("sweep: interrupted; finished points are kept"), err
    while time.time() < stopped + 10 and any(_alive(w) for w in workers):
        time.sleep(0.05)
    assert not [w for w in workers if _alive(w)], "no worker outlives the sweep"
    assert not (out / "results.parquet").exists()
    runs = list((out / "runs").iterdir())
    assert 1 <= len(runs) < 8 and all((p / "summary.json").exists() for p in runs), runs


def test_a_sweep_folder_joins_its_runs_flows_to_their_swept_values(tmp_path: Path) -> None:
    # A mean over every flow per swept value, in one query (a mean of the runs' means is
    # another number; joining the runs' own files by path found nothing: found by a helper).
    from rnicsim.query import connect

    sweep = write_sweep(tmp_path, '[parameters]\nduration = ["200us"]\n"flows.0.load" = [0.2, 0.4]\n')
    table = run_sweep(sweep, tmp_path / "out", workers=1, quiet=True)
    con = connect(tmp_path / "out")
    got = dict(con.execute('SELECT "flows.0.load", avg(slowdown) FROM results JOIN flows USING (run) GROUP BY 1').fetchall())
    want = {}
    for load, run in table.select("flows.0.load", "run").iter_rows():
        s = rnicsim.open_run(tmp_path / "out" / run).flows["slowdown"].drop_nulls()
        want[load] = s.mean()
    assert got.keys() == want.keys() == {0.2, 0.4}
    assert all(abs(got[k] - want[k]) < 1e-9 for k in want), (got, want)
    counts = dict(con.execute("SELECT run, count(*) FROM flows GROUP BY 1").fetchall())
    assert sorted(counts) == sorted(table["run"].to_list())
    # Copied elsewhere, it still joins (results name the runs by where they were written; the
    # views took the folders' new paths, and the join found nothing); a point killed while
    # running leaves a partial folder whose half-written file the views leave out (it failed
    # every query of the folder until the sweep ran again). Both found by a helper.
    import shutil

    moved = tmp_path / "moved"
    shutil.copytree(tmp_path / "out", moved)
    partial = moved / "runs" / ".0123456789abcdef.partial-4242"
    partial.mkdir()
    (partial / "flows.parquet").write_bytes(b"half a file")
    con = connect(moved)
    again = dict(con.execute('SELECT "flows.0.load", avg(slowdown) FROM results JOIN flows USING (run) GROUP BY 1').fetchall())
    assert again == got
    assert con.execute("SELECT count(*) FROM flows").fetchone()[0] == sum(counts.values())
    # The folder reused by a sweep of one of those points: its tables hold that point's runs
    # only, not the earlier sweep's other run, which its results do not name (found by a helper).
    one = write_sweep(tmp_path, '[parameters]\nduration = ["200us"]\n"flows.0.load" = [0.2]\n')
    assert run_sweep(one, moved, workers=1, quiet=True).height == 1
    con = connect(moved)
    assert con.execute("SELECT count(DISTINCT run) FROM flows").fetchone()[0] == 1
    assert dict(con.execute('SELECT "flows.0.load", avg(slowdown) FROM results JOIN flows USING (run) GROUP BY 1').fetchall()) == {0.2: got[0.2]}
    # A sweep's folder taken for a run (`rnicsim report DIR`) says where its runs are.
    with pytest.raises(FileNotFoundError, match=r"it is a sweep's folder: its runs are .*runs/\*"):
        rnicsim.open_run(moved)


def test_a_folder_of_other_files_is_not_taken_for_a_sweeps(tmp_path: Path) -> None:
    # Its results.parquet and failures.json were replaced without a word (found by a helper).
    sweep = write_sweep(tmp_path, '[parameters]\nduration = ["20us"]\n')
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "results.parquet").write_text("precious")
    with pytest.raises(FileExistsError, match="holds other files and is not a sweep's folder"):
        run_sweep(sweep, mine, quiet=True)
    assert (mine / "results.parquet").read_text() == "precious" and sorted(p.name for p in mine.iterdir()) == ["results.parquet"]
    # An empty folder, or a sweep's own, is taken (a rerun resumes).
    (tmp_path / "empty").mkdir()
    assert run_sweep(sweep, tmp_path / "empty", quiet=True).height == 1
    assert run_sweep(sweep, tmp_path / "empty", quiet=True).height == 1


def test_a_worker_count_below_one_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    import subprocess
    import sys

    sweep = write_sweep(tmp_path, '[parameters]\nduration = ["20us"]\n')
    for n in ("-1", "0"):
        out = subprocess.run([sys.executable, "-m", "rnicsim", "sweep", str(sweep), "--out", str(tmp_path / "o"), "--workers", n], capture_output=True, text=True)
        assert out.returncode == 2 and "--workers: expected a whole number of at least 1" in out.stderr and "Traceback" not in out.stderr, out.stderr
        with pytest.raises(ValueError, match="workers: expected at least 1"):
            run_sweep(sweep, tmp_path / "o", workers=int(n), quiet=True)
        assert not (tmp_path / "o").exists()


def test_sweep_keys_of_the_wrong_kind_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    import subprocess
    import sys

    from rnicsim.sweep import load

    quick = (ROOT / "scenarios" / "quickstart.toml").as_posix()
    f = tmp_path / "sweep.toml"
    # (Tracebacks before, or no points at all for `seeds = []`, or seeds "a" and "b".)
    for body, says in [
        (f'scenario = "{quick}"\nparameters = 3\n', "parameters: expected a table"),
        ("scenario = 5\n", "scenario: expected the scenario file's path"),
        (f'scenario = "{quick}"\nseeds = 5\n', "seeds: expected a non-empty list"),
        (f'scenario = "{quick}"\nseeds = []\n', "seeds: expected a non-empty list"),
        (f'scenario = "{quick}"\nseeds = "ab"\n', "seeds: expected a non-empty list"),
        (f'scenario = "{quick}"\nseeds = [1, 2.5]\n', "seeds: expected whole numbers of at least 0, got 2.5"),
        (f'scenario = "{quick}"\nseeds = [true]\n', "seeds: expected whole numbers"),
        (f'scenario = "{quick}"\nmode = 5\n', "mode: expected"),
        # A near miss is named with the key meant; a scenario key is pointed to [parameters].
        (f'scenario = "{quick}"\nseed = [1, 2]\n', "unknown sweep keys: seed (did you mean seeds?)"),
        (f'scenario = "{quick}"\nduration = ["1ms"]\n', "unknown sweep keys: duration; a sweep file takes scenario, mode, seeds, parameters, and a scenario key goes under [parameters]"),
        # Lists of a zip that differ in length are named with their lengths.
        (f'scenario = "{quick}"\nmode = "zip"\n[parameters]\nseed = [1, 2]\nduration = ["1ms"]\n', 'mode = "zip" needs lists of equal length, got seed 2, duration 1'),
    ]:
        f.write_text(body)
        with pytest.raises(rnicsim.ScenarioError, match=f"^{f}: "):
            load(f)
        out = subprocess.run([sys.executable, "-m", "rnicsim", "sweep", str(f), "--out", str(tmp_path / "none")], capture_output=True, text=True)
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
        (line,) = out.stderr.splitlines()
        assert line.startswith(f"error: {f}: ") and says in line, line
        assert not (tmp_path / "none").exists()


def test_a_run_folder_or_a_file_is_refused_as_a_sweeps_folder(tmp_path: Path) -> None:
    import subprocess
    import sys

    sweep = write_sweep(tmp_path, '[parameters]\nduration = ["20us"]\n')
    run_dir = rnicsim.Scenario.from_file(ROOT / "scenarios" / "quickstart.toml").set("duration", "20us").run(tmp_path / "run", progress=False).path
    before = sorted(p.name for p in run_dir.iterdir())
    (tmp_path / "afile").write_text("mine\n")
    for out_dir, says in [(run_dir, "is a run's folder"), (tmp_path / "afile", "is a file, not a folder"), (tmp_path / "afile" / "sub", "afile is a file, not a folder")]:
        out = subprocess.run([sys.executable, "-m", "rnicsim", "sweep", str(sweep), "--out", str(out_dir), "--quiet"], capture_output=True, text=True)
        assert out.returncode == 2 and "Traceback" not in out.stderr and "Errno" not in out.stderr, out.stderr
        assert len(out.stderr.splitlines()) == 1 and out.stderr.startswith("error: ") and says in out.stderr, out.stderr
    assert sorted(p.name for p in run_dir.iterdir()) == before, "nothing added to the run"
    assert (tmp_path / "afile").read_text() == "mine\n"
    # A sweep's own folder is still taken again: the sweep resumes there.
    assert run_sweep(sweep, tmp_path / "o", quiet=True).height == 1
    assert run_sweep(sweep, tmp_path / "o", quiet=True).height == 1


def test_sweep_takes_dash_q_for_quiet(tmp_path: Path) -> None:
    import subprocess
    import sys

    sweep = write_sweep(tmp_path, '[parameters]\nduration = ["20us"]\n')
    out = subprocess.run([sys.executable, "-m", "rnicsim", "sweep", str(sweep), "--out", str(tmp_path / "o"), "-q"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout == "" and out.stderr == "", out.stderr


def test_integer_summary_values_stay_integer_columns(tmp_path: Path) -> None:
    import polars as pl

    from rnicsim.sweep import results

    # Hand-made summaries: `mixed` is an integer in one point and not in the other.
    done = []
    for i, summary in enumerate([{"seed": 7, "flows": 10, "gbps": 1.5, "mixed": 2}, {"seed": 8, "flows": 12, "gbps": 2.0, "mixed": 2.5, "late": 3}]):
        (tmp_path / str(i)).mkdir()
        (tmp_path / str(i) / "summary.json").write_text(json.dumps(summary))
        done.append(({}, None, tmp_path / str(i)))
    table = results(done)
    assert {k: table.schema[k] for k in ("seed", "flows", "gbps", "mixed", "late")} == {"seed": pl.Int64, "flows": pl.Int64, "gbps": pl.Float64, "mixed": pl.Float64, "late": pl.Int64}
    assert table["mixed"].to_list() == [2.0, 2.5] and table["late"].to_list() == [None, 3]
    # And so in a sweep's results.parquet: the seed (not swept here) and the counters.
    run_sweep(write_sweep(tmp_path, '[parameters]\nduration = ["20us"]\n'), tmp_path / "o", quiet=True)
    written = pl.read_parquet(tmp_path / "o" / "results.parquet")
    assert written.schema["seed"] == pl.Int64 and written.schema["rdma.flows_completed"] == pl.Int64 and written.schema["duration_ps"] == pl.Int64
    assert written.schema["rdma.slowdown_p99"] == pl.Float64


def test_equivalent_points_run_once_and_a_seed_given_twice_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import rnicsim.sweep as sweep

    # "100us" and "0.1ms" are one scenario: before, both ran at once into its folder and failed
    # at random ("is not a complete run", "cannot move results").
    handed: list[int] = []
    local = sweep._local
    monkeypatch.setattr(sweep, "_local", lambda todo, workers: (handed.append(len(todo)), local(todo, workers))[1])
    table = run_sweep(write_sweep(tmp_path, '[parameters]\nduration = ["100us", "0.1ms"]\n'), tmp_path / "out", workers=2, quiet=True)
    assert handed == [1], "one run for the two points"
    assert table["duration"].to_list() == ["100us", "0.1ms"], "a row for each point"
    assert table["run"].n_unique() == 1 and len(list((tmp_path / "out" / "runs").iterdir())) == 1
    assert json.loads((tmp_path / "out" / "failures.json").read_text()) == []
    # The same seed or value listed twice is a mistake of the sweep file: refused, nothing written.
    for body, says in [('seeds = [1, 1, 1]\n[parameters]\nduration = ["100us"]\n', "seeds: 1 is given twice"), ('[parameters]\nduration = ["100us", "100us"]\n', 'parameters.duration: "100us" is given twice')]:
        f = write_sweep(tmp_path, body)
        with pytest.raises(rnicsim.ScenarioError, match=f"^{f}: {says}"):
            run_sweep(f, tmp_path / "none", quiet=True)
        assert not (tmp_path / "none").exists()


def test_a_finished_point_runs_again_when_a_file_it_reads_changed(tmp_path: Path) -> None:
    flows = tmp_path / "flows.txt"
    flows.write_text("2\n0 1 3 100 10000 0.000001\n2 1 3 100 20000 0.000002\n")
    (tmp_path / "s.toml").write_text('name = "ff"\nduration = "100us"\n[topology.star]\nhosts = 3\n[[flows]]\nfile = "flows.txt"\n')
    sweep = tmp_path / "sweep.toml"
    sweep.write_text('scenario = "s.toml"\nseeds = [1]\n')
    first = run_sweep(sweep, tmp_path / "out", workers=1, quiet=True)
    assert first["rdma.flows_started"].to_list() == [2]
    # The scenario's text is the same, the flow file is not: the point is not the finished one.
    flows.write_text("3\n0 1 3 100 10000 0.000001\n2 1 3 100 20000 0.000002\n0 2 3 100 5000 0.000003\n")
    second = run_sweep(sweep, tmp_path / "out", workers=1, quiet=True)
    assert second["rdma.flows_started"].to_list() == [3], "run again with the new flow file"
    assert second["run"].to_list() != first["run"].to_list()
    # Unchanged, it is reused.
    assert run_sweep(sweep, tmp_path / "out", workers=1, quiet=True)["run"].to_list() == second["run"].to_list()


def test_parameters_that_set_one_key_twice_are_refused(tmp_path: Path) -> None:
    # The later would replace the earlier in each point, and the results would carry values
    # that never ran.
    for a, b, says in [
        ('"flows.0.load"', '"flows[0].load"', "are the same key"),
        ('"nic.cc"', '"nic.cc.dcqcn.g"', "sets the whole of what `nic.cc.dcqcn.g` sets a part of"),
        ('"nic.cc.hpcc.eta"', '"nic.cc.dcqcn.g"', "set two kinds of `nic.cc`"),
    ]:
        va = "[{ dcqcn = {} }]" if a == '"nic.cc"' else "[0.1, 0.2]"
        f = write_sweep(tmp_path, f"[parameters]\n{a} = {va}\n{b} = [0.1, 0.2]\n")
        with pytest.raises(rnicsim.ScenarioError, match=f"^{f}: parameters: ") as e:
            run_sweep(f, tmp_path / "none", quiet=True)
        assert says in str(e.value), e.value
        assert not (tmp_path / "none").exists()


class _Panic(BaseException):
    """As pyo3's PanicException: a BaseException whose class cannot be pickled by name."""


_Panic.__module__ = "pyo3_runtime"


class _Panicky:
    """A point whose run panics."""

    def run(self, out: str, force: bool, progress: bool) -> None:
        raise _Panic("index out of bounds: the len is 2 but the index is 5")


def test_a_panic_in_a_point_is_reported_with_its_message(tmp_path: Path) -> None:
    import pickle

    from rnicsim.sweep import _local, _run_point

    # In a pool worker: failures.json had "PicklingError: Can't pickle <class 'pyo3_runtime...'>".
    ((_, error),) = list(_local([({}, _Panicky(), tmp_path / "p")], 1))
    assert error == "_Panic: index out of bounds: the len is 2 but the index is 5"
    # What the worker raises goes back to the sweep (and to Ray) pickled.
    with pytest.raises(Exception) as e:
        _run_point(_Panicky(), str(tmp_path / "p"))  # type: ignore[arg-type]
    assert str(pickle.loads(pickle.dumps(e.value))) == "_Panic: index out of bounds: the len is 2 but the index is 5"


def test_a_parameter_that_cannot_be_set_names_the_sweep_file_and_writes_nothing(tmp_path: Path) -> None:
    import subprocess
    import sys

    # The scenario has one flow workload: index 3 is past the end (before, exit 2 without the
    # sweep file's name, and an empty OUT/runs left behind).
    f = write_sweep(tmp_path, '[parameters]\nduration = ["100us"]\n"flows.3.load" = [0.1]\n')
    with pytest.raises(rnicsim.ScenarioError, match=rf"^{f}: parameters\.flows\.3\.load: .*no \[3\]"):
        run_sweep(f, tmp_path / "o", quiet=True)
    assert not (tmp_path / "o").exists()
    out = subprocess.run([sys.executable, "-m", "rnicsim", "sweep", str(f), "--out", str(tmp_path / "o")], capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    (line,) = out.stderr.splitlines()
    assert line.startswith(f"error: {f}: parameters.flows.3.load: "), line
    assert not (tmp_path / "o").exists()


def test_ray_asked_for_where_it_is_not_installed_is_refused_before_anything_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    find = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else find(name, *a))
    sweep = write_sweep(tmp_path, 'seeds = [1]\n[parameters]\nduration = ["100us"]\n')
    # From Python the message names the argument, not the command's flag.
    with pytest.raises(rnicsim.ScenarioError, match=r"^ray_address: .*has no Ray.*pip install \.\[ray\]`\), or leave ray_address out"):
        run_sweep(sweep, tmp_path / "o", quiet=True, ray_address="local")
    assert not (tmp_path / "o").exists()


def test_points_are_keyed_by_the_build_that_ran_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A point another build of the simulator ran is run again, not mixed into the results.
    import rnicsim.sweep as sweep_module

    sweep = write_sweep(tmp_path, 'seeds = [1]\n[parameters]\nduration = ["50us"]\n')
    first = run_sweep(sweep, tmp_path / "o", workers=1, quiet=True)["run"].to_list()
    assert run_sweep(sweep, tmp_path / "o", workers=1, quiet=True)["run"].to_list() == first
    # As a sweep driven by another build: the finished point is not taken for its own, and the
    # worker (this build) refuses to run it under that build's key.
    monkeypatch.setattr(sweep_module, "MODEL_ID", "another-build")
    assert run_sweep(sweep, tmp_path / "o", workers=1, quiet=True).height == 0
    (failure,) = json.loads((tmp_path / "o" / "failures.json").read_text())
    assert "another build" in failure["error"] and "model another-build" in failure["error"], failure
    # The run folder names its build.
    marker = (tmp_path / "o" / first[0] / ".rnicsim-run").read_text()
    assert f"(model {rnicsim.MODEL_ID})" in marker and len(rnicsim.MODEL_ID) == 16, marker


def test_a_nan_value_is_an_invalid_point_and_a_nan_in_the_file_is_named_at_its_line(tmp_path: Path) -> None:
    # JSON, which a scenario crosses into the simulator by, has no nan: a nan parameter value
    # refused the whole sweep, and a nan in the base file was blamed on the parameter's key.
    sweep = write_sweep(tmp_path, '[parameters]\nduration = ["100us"]\n"links.loss" = [0.0, nan]\n')
    table = run_sweep(sweep, tmp_path / "out", workers=1, quiet=True)
    assert table.height == 1
    # Valid JSON (it held a bare NaN, which JSON has not): the value as its text.
    def no_constants(c: str) -> None:
        raise ValueError(f"{c} is not JSON")

    (failure,) = json.loads((tmp_path / "out" / "failures.json").read_text(), parse_constant=no_constants)
    assert "links.loss" in failure["error"] and "nan" in failure["error"], failure
    assert failure["parameters"] == {"duration": "100us", "links.loss": "nan"}, failure
    base = tmp_path / "base.toml"
    base.write_text((ROOT / "scenarios" / "quickstart.toml").read_text().replace("[links]\n", "[links]\nloss = nan\n", 1))
    with pytest.raises(rnicsim.ScenarioError, match=r"base.toml:\d+:\d+: key `links.loss`"):
        rnicsim.Scenario.from_file(base)


def test_a_script_that_runs_a_sweep_unguarded_is_told_of_the_guard(tmp_path: Path) -> None:
    # Spawned workers import the script; unguarded, each ran the sweep again, the pool broke,
    # and the points failed as if "killed, or out of memory" (found by a helper).
    import subprocess
    import sys

    sweep = write_sweep(tmp_path, "seeds = [1]\n[parameters]\nduration = [\"20us\"]\n")
    script = tmp_path / "unguarded.py"
    script.write_text(f"import warnings\nfrom rnicsim.sweep import run_sweep\nwarnings.simplefilter('ignore')\nrun_sweep({str(sweep)!r}, {str(tmp_path / 'out')!r}, workers=1, quiet=True)\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert 'call it under `if __name__ == "__main__":`' in proc.stderr, proc.stderr
    (failure,) = json.loads((tmp_path / "out" / "failures.json").read_text())
    assert "__main__" in failure["error"], failure


def test_a_sweep_gives_the_same_table_wherever_it_is_written_and_reruns_a_damaged_point(tmp_path: Path) -> None:
    # The table named each run by its absolute path, so two sweeps of one file differed.
    sweep = write_sweep(tmp_path, '[parameters]\nduration = ["40us"]\n"flows.0.load" = [0.2, 0.3]\n')
    one = run_sweep(sweep, tmp_path / "one", workers=1, quiet=True)
    two = run_sweep(sweep, tmp_path / "two", workers=1, quiet=True)
    assert (tmp_path / "one" / "results.parquet").read_bytes() == (tmp_path / "two" / "results.parquet").read_bytes()
    assert all(r.startswith("runs/") and (tmp_path / "one" / r / "summary.json").is_file() for r in one["run"].to_list())
    assert one.equals(two)
    # A point whose summary was damaged after it finished runs again (each later sweep stopped
    # on it, "the run folder is damaged").
    damaged = tmp_path / "one" / one["run"][0] / "summary.json"
    damaged.write_text(damaged.read_text()[:50])
    again = run_sweep(sweep, tmp_path / "one", workers=1, quiet=True)
    assert again.equals(one)


def test_a_file_every_point_would_write_is_refused(tmp_path: Path) -> None:
    # `outputs.fct_file` in the base scenario: every point wrote the same file outside its run
    # folder, and the last to finish won.
    (tmp_path / "flows.txt").write_text("1\n0 1 3 100 10000 0.000001\n")
    (tmp_path / "s.toml").write_text('duration = "50us"\n[topology.star]\nhosts = 3\n[[flows]]\nfile = "flows.txt"\n[outputs]\nfct_file = "shared_fct.txt"\n')
    sweep = tmp_path / "sweep.toml"
    sweep.write_text('scenario = "s.toml"\nseeds = [1, 2]\n')
    with pytest.raises(rnicsim.ScenarioError, match=r"outputs\.fct_file = 'shared_fct\.txt'.*each of the sweep's points would write it"):
        run_sweep(sweep, tmp_path / "out", workers=1, quiet=True)
    assert not (tmp_path / "out").exists() and not (tmp_path / "shared_fct.txt").exists()
    # Points that are one scenario spelt two ways run once, and write the file once.
    sweep.write_text('scenario = "s.toml"\n[parameters]\nduration = ["50us", "0.05ms"]\n')
    table = run_sweep(sweep, tmp_path / "out", workers=1, quiet=True)
    assert table.height == 2 and table["run"].n_unique() == 1 and (tmp_path / "shared_fct.txt").is_file()


def test_what_a_point_s_run_warns_of_is_told_once(tmp_path: Path) -> None:
    # The run's own warnings (a flow that did not finish) were dropped with the worker's copies
    # of the load-time ones; each is told once, however many points draw it.
    (tmp_path / "flows.txt").write_text("1\n0 1 3 100 100000000 0.000001\n")
    (tmp_path / "s.toml").write_text('duration = "20us"\n[topology.star]\nhosts = 3\n[[flows]]\nfile = "flows.txt"\n')
    sweep = tmp_path / "sweep.toml"
    sweep.write_text('scenario = "s.toml"\nseeds = [1, 2]\n')
    with pytest.warns(rnicsim.ScenarioWarning) as told:
        run_sweep(sweep, tmp_path / "out", workers=2, quiet=True)
    unfinished = [w for w in told if "did not finish by the end of the run" in str(w.message)]
    assert len(unfinished) == 1, [str(w.message) for w in told]


def test_the_seed_is_swept_in_one_place_however_its_key_is_spelt(tmp_path: Path) -> None:
    # `"seed"`, quoted, slipped past the check: the table's `"seed"` column said 5 and 6 while
    # the runs used seeds 1 and 2.
    for key in ("seed", '"seed"'):
        sweep = write_sweep(tmp_path, f'seeds = [1, 2]\n[parameters]\n{json.dumps(key)} = [5, 6]\n')
        with pytest.raises(rnicsim.ScenarioError, match=r"the seed is swept by `seeds`; give it in one place"):
            run_sweep(sweep, tmp_path / "out", workers=1, quiet=True)
    assert not (tmp_path / "out").exists()


def test_a_missing_sweep_file_and_an_unquoted_dotted_key_are_said_plainly(tmp_path: Path) -> None:
    # "[Errno 2] No such file or directory" alone, and "expected a non-empty list of values" for
    # what TOML read as a table.
    with pytest.raises(rnicsim.ScenarioError, match=r"nope\.toml: cannot read the sweep file: No such file"):
        run_sweep(tmp_path / "nope.toml", tmp_path / "out", workers=1, quiet=True)
    sweep = write_sweep(tmp_path, '[parameters]\nswitch.buffer = ["1MB", "2MB"]\n')
    with pytest.raises(rnicsim.ScenarioError, match=r'parameters\.switch: expected a list of values, got a table: .*"switch\.buffer" = \[\.\.\.\]'):
        run_sweep(sweep, tmp_path / "out", workers=1, quiet=True)
    assert not (tmp_path / "out").exists()
