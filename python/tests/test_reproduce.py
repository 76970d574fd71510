"""`rnicsim reproduce`: runs the shipped reproductions and marks each claim pass or miss."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rnicsim.reproduce import PAPERS, reproduce, scenarios_for

ROOT = Path(__file__).resolve().parents[2]


def test_gallery_lists_every_claim_with_paper_ours_and_mark(tmp_path: Path) -> None:
    # SCR Table 2 alone (the other SCR reproductions are checked by crates/rnicsim/tests/scr.rs).
    (tmp_path / "s" / "scr").mkdir(parents=True)
    shutil.copy(ROOT / "scenarios" / "scr" / "table2.toml", tmp_path / "s" / "scr")
    counts = reproduce(["scr"], tmp_path / "g", tmp_path / "s")
    assert counts == {"claims": 6, "passed": 6, "calibration": 0, "calibration_passed": 0}
    page = (tmp_path / "g" / "index.html").read_text()
    assert "6 of 6 claims within tolerance" in page
    for metric, paper in [("perftest/4KB vs 64KB/gbps", "33.25"), ("perftest/256B vs 64KB/latency_mean_us", "5.31")]:
        assert metric in page and paper in page
    assert page.count(">pass</td>") == 6
    assert (tmp_path / "g" / "scr-table2.svg").stat().st_size > 1000


def test_a_missed_claim_is_marked(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "rnicsim", "reproduce", "tassel", "--out", str(tmp_path / "t"), "--scenarios", str(ROOT / "scenarios")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    page = (tmp_path / "t" / "index.html").read_text()
    n = len(scenarios_for(["tassel"], ROOT / "scenarios"))
    assert n == 7
    # Fig. 12's 64 B point is wire-bound with RoCEv2 headers (see docs/tassel.md).
    assert page.count(">miss</td>") == 1 and "125 Mpps" in page
    assert "33 of 34 claims within tolerance" in page


def test_the_shipped_scenarios_are_found_from_any_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A development install run outside the repository still finds its scenarios/.
    monkeypatch.chdir(tmp_path)
    from rnicsim.reproduce import shipped_scenarios

    assert shipped_scenarios() == ROOT / "scenarios"
    assert len(scenarios_for(["tassel"])) == 7


def test_a_scenarios_folder_without_the_paper_is_an_error_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    out = subprocess.run(
        [sys.executable, "-m", "rnicsim", "reproduce", "yama", "--out", str(tmp_path / "g"), "--scenarios", str(tmp_path / "s")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert "yama" in out.stderr and "no such folder" in out.stderr
    assert not (tmp_path / "g").exists()


def test_a_scenario_that_does_not_load_is_named_and_nothing_runs(tmp_path: Path) -> None:
    # A good scenario beside one with a misspelt key: the key, file and line, no traceback, and
    # no gallery or runs (it used to run the good one, then stop on a Python traceback).
    (tmp_path / "s" / "scr").mkdir(parents=True)
    shutil.copy(ROOT / "scenarios" / "scr" / "table2.toml", tmp_path / "s" / "scr")
    # (and a file that is not TOML at all: named, with its line).
    for text, says in [('name = "bad"\nduration = "1us"\n[topology.back_to_back]\ndepht = 16\n', ["zz_bad.toml:4", "depht"]), ('name = "bad"\nduration = 1us"\n', ["zz_bad.toml:2"])]:
        (tmp_path / "s" / "scr" / "zz_bad.toml").write_text(text)
        out = subprocess.run(
            [sys.executable, "-m", "rnicsim", "reproduce", "scr", "--out", str(tmp_path / "g"), "--scenarios", str(tmp_path / "s")],
            capture_output=True,
            text=True,
        )
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
        assert all(s in out.stderr for s in says), out.stderr
        assert not (tmp_path / "g").exists()


def test_unknown_papers_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown paper"):
        scenarios_for(["nope"], ROOT / "scenarios")


def test_a_paper_named_twice_runs_once_and_an_empty_paper_folder_is_refused(tmp_path: Path) -> None:
    once = scenarios_for(["tassel"], ROOT / "scenarios")
    assert scenarios_for(["tassel", "tassel"], ROOT / "scenarios") == once
    assert scenarios_for(["yama", "tassel", "yama"], ROOT / "scenarios") == scenarios_for(["yama"], ROOT / "scenarios") + once
    (tmp_path / "star").mkdir()
    with pytest.raises(FileNotFoundError, match="no scenario files"):
        scenarios_for(["star"], tmp_path)


def test_figures_are_redrawn_on_the_papers_axes(tmp_path: Path) -> None:
    # StaR Fig. 1 (LRU): throughput against concurrent connections, normalized to 450.
    (tmp_path / "s" / "star").mkdir(parents=True)
    shutil.copy(ROOT / "scenarios" / "star" / "fig1_lru.toml", tmp_path / "s" / "star")
    counts = reproduce(["star"], tmp_path / "g", tmp_path / "s")
    # The peak's place follows from the cache's capacity: two of its checks are calibration.
    assert counts == {"claims": 1, "passed": 1, "calibration": 2, "calibration_passed": 2}
    page = (tmp_path / "g" / "index.html").read_text()
    assert "star-fig1_lru-fig0.svg" in page and "≤ 0.7" in page
    assert (tmp_path / "g" / "star-fig1_lru-fig0.png").stat().st_size > 5000
    run = json.loads((tmp_path / "g" / "runs" / "star-fig1_lru" / "summary.json").read_text())
    (curve,) = run["figures"][0]["series"]
    assert curve["x"] == [90, 300, 450, 600, 900, 1500, 3000, 4500]
    assert max(curve["y"]) == curve["y"][2] == 1.0


def test_a_traced_figure_draws_the_dequeue_rates_scr_set(tmp_path: Path) -> None:
    # SCR Table 5 at 0.1 GB/s: eight flows' dequeue rates over time from scr_rates.parquet, the
    # paper's convergence time marked.
    (tmp_path / "s" / "scr").mkdir(parents=True)
    shutil.copy(ROOT / "scenarios" / "scr" / "table5_step010.toml", tmp_path / "s" / "scr")
    reproduce(["scr"], tmp_path / "g", tmp_path / "s")
    page = (tmp_path / "g" / "index.html").read_text()
    assert "scr-table5_step010-fig0.svg" in page
    svg = (tmp_path / "g" / "scr-table5_step010-fig0.svg").read_text()
    assert "QP 0" in svg and "49 µs" in svg
    run_dir = tmp_path / "g" / "runs" / "scr-table5_step010"
    (fig,) = json.loads((run_dir / "summary.json").read_text())["figures"]
    assert fig["trace"] == "scr_rates" and fig["series"] == []
    from rnicsim.api import Run

    rates = Run(run_dir).table("scr_rates")
    assert rates.height > 8 * 15 and rates["qp"].n_unique() == 8


def fake_checkout(root: Path) -> Path:
    """A folder with the shipped scenarios' layout (every paper's folder, empty)."""
    for p in PAPERS:
        (root / "scenarios" / p).mkdir(parents=True)
    return root / "scenarios"


def test_an_installed_package_finds_the_scenarios_above_the_working_folder_or_where_pip_took_it_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import rnicsim.reproduce as rep

    # As after `pip install .`: the package in site-packages, far from any checkout.
    package = tmp_path / "venv" / "lib" / "site-packages" / "rnicsim"
    package.mkdir(parents=True)
    monkeypatch.setattr(rep, "__file__", str(package / "reproduce.py"))
    # pip records the folder it installed from (direct_url.json); here a checkout elsewhere.
    installed_from = fake_checkout(tmp_path / "checkout")
    dist = tmp_path / "site" / "rnicsim-0.1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: rnicsim\nVersion: 0.1.0\n")
    (dist / "direct_url.json").write_text(json.dumps({"url": (tmp_path / "checkout").as_uri(), "dir_info": {}}))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.chdir(tmp_path / "venv")
    assert rep.shipped_scenarios() == installed_from
    # A checkout above the working folder comes first.
    above = fake_checkout(tmp_path / "work")
    (tmp_path / "work" / "runs" / "a").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "work" / "runs" / "a")
    assert rep.shipped_scenarios() == above
    # Neither: the error says where it looked and how to name the folder.
    (dist / "direct_url.json").write_text(json.dumps({"url": "https://example.org/rnicsim-0.1.0.whl", "archive_info": {}}))
    monkeypatch.chdir(tmp_path / "venv")
    with pytest.raises(FileNotFoundError, match=r"--scenarios DIR"):
        rep.shipped_scenarios()


def test_no_paper_argument_means_every_paper(tmp_path: Path) -> None:
    # `reproduce --out DIR` alone was refused by argparse ("invalid choice: ['all']").
    scenarios = fake_checkout(tmp_path)
    shutil.copy(ROOT / "scenarios" / "scr" / "table2.toml", scenarios / "scr")
    out = subprocess.run([sys.executable, "-m", "rnicsim", "reproduce", "--out", str(tmp_path / "g"), "--scenarios", str(scenarios)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "6 of 6 claims within tolerance" in (tmp_path / "g" / "index.html").read_text()
    # An unknown paper is still refused by name.
    out = subprocess.run([sys.executable, "-m", "rnicsim", "reproduce", "nope", "--out", str(tmp_path / "n"), "--scenarios", str(scenarios)], capture_output=True, text=True)
    assert out.returncode == 2 and "unknown paper 'nope'" in out.stderr and not (tmp_path / "n").exists(), out.stderr


def test_a_folder_in_the_way_of_a_run_is_named_and_nothing_runs(tmp_path: Path) -> None:
    # Two scenarios; the second one's run folder holds someone's file. It used to run the first,
    # then stop on a traceback about `force=True`, a parameter the user never gave.
    (tmp_path / "s" / "scr").mkdir(parents=True)
    shutil.copy(ROOT / "scenarios" / "scr" / "table2.toml", tmp_path / "s" / "scr")
    shutil.copy(ROOT / "scenarios" / "scr" / "table2.toml", tmp_path / "s" / "scr" / "zz.toml")
    (tmp_path / "g" / "runs" / "scr-zz").mkdir(parents=True)
    (tmp_path / "g" / "runs" / "scr-zz" / "note").write_text("mine\n")
    cmd = [sys.executable, "-m", "rnicsim", "reproduce", "scr", "--out", str(tmp_path / "g"), "--scenarios", str(tmp_path / "s")]
    out = subprocess.run(cmd, capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith("error: ") and str(tmp_path / "g" / "runs" / "scr-zz") in line and "remove it or choose another" in line and "force" not in line, line
    assert sorted(p.name for p in (tmp_path / "g" / "runs").iterdir()) == ["scr-zz"] and not (tmp_path / "g" / "index.html").exists()
    assert (tmp_path / "g" / "runs" / "scr-zz" / "note").read_text() == "mine\n"
    # A file where the runs go is named too.
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "runs").write_text("")
    out = subprocess.run(cmd[:6] + [str(tmp_path / "f")] + cmd[7:], capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr and f"{tmp_path / 'f' / 'runs'} is a file" in out.stderr, out.stderr


def test_progress_is_a_line_per_scenario_unless_quiet(tmp_path: Path) -> None:
    (tmp_path / "s" / "scr").mkdir(parents=True)
    shutil.copy(ROOT / "scenarios" / "scr" / "table2.toml", tmp_path / "s" / "scr")
    cmd = [sys.executable, "-m", "rnicsim", "reproduce", "scr", "--scenarios", str(tmp_path / "s"), "--out"]
    out = subprocess.run(cmd + [str(tmp_path / "g")], capture_output=True, text=True)
    assert out.returncode == 0 and out.stderr.splitlines() == ["reproduce: 1/1 scr/table2.toml: 6 of 6 claims within tolerance"], out.stderr
    for quiet in ("-q", "--quiet"):
        out = subprocess.run(cmd + [str(tmp_path / quiet), quiet], capture_output=True, text=True)
        assert out.returncode == 0 and out.stderr == "", out.stderr


def test_a_run_folder_is_no_gallery_and_a_stale_page_goes_before_the_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A run's folder took the gallery (a later `run --force` there deleted it with the run).
    run = tmp_path / "run"
    run.mkdir()
    (run / ".rnicsim-run").write_text("a run folder of rnicsim\n")
    out = subprocess.run([sys.executable, "-m", "rnicsim", "reproduce", "tassel", "--out", str(run)], capture_output=True, text=True)
    assert out.returncode == 2 and "is a run's folder" in out.stderr, out.stderr
    assert sorted(p.name for p in run.iterdir()) == [".rnicsim-run"]
    # An earlier gallery's page is gone once the runs start: one stopped part way (Ctrl-C, or a
    # run that fails) showed the old numbers beside the new runs' figures.
    g = tmp_path / "g"
    g.mkdir()
    (g / "index.html").write_text("<p>an earlier gallery</p>")
    import rnicsim.reproduce as rp

    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(rp.Scenario, "run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        rp.reproduce(["tassel"], g, quiet=True)
    assert not (g / "index.html").exists()


def test_a_calibration_check_is_counted_apart_from_the_claims(tmp_path: Path) -> None:
    # A value that follows from a constant the scenario sets to the paper's is marked
    # `calibration = true`: the gallery lists it, but not among the claims a run reproduces.
    (tmp_path / "s" / "scr").mkdir(parents=True)
    text = (ROOT / "scenarios" / "scr" / "table2.toml").read_text()
    assert text.count("[[paper]]\n") == 6
    (tmp_path / "s" / "scr" / "table2.toml").write_text(text.replace("[[paper]]\n", "[[paper]]\ncalibration = true\n", 1))
    cmd = [sys.executable, "-m", "rnicsim", "reproduce", "scr", "--scenarios", str(tmp_path / "s"), "--out", str(tmp_path / "g")]
    out = subprocess.run(cmd, capture_output=True, text=True)
    said = "5 of 5 claims within tolerance; 1 of 1 calibration checks hold"
    assert out.returncode == 0 and out.stderr.splitlines() == [f"reproduce: 1/1 scr/table2.toml: {said}"], out.stderr
    assert out.stdout.startswith(f"{said}: "), out.stdout
    page = (tmp_path / "g" / "index.html").read_text()
    assert f"<p>{said}." in page and "A calibration check is a value" in page
    assert page.count(">calibration: pass</td>") == 1 and page.count(">pass</td>") == 5
    claims = json.loads((tmp_path / "g" / "runs" / "scr-table2" / "summary.json").read_text())["paper"]
    assert [c.get("calibration", False) for c in claims] == [True] + [False] * 5
