"""`rnicsim report`: every plot written as PNG and SVG, and the page renders in headless
Chromium (non-blank, every image loaded, no script errors)."""

from __future__ import annotations

import html
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib.image
import pytest

import rnicsim
from rnicsim.report import PLOTS, write_report

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("report")
    a = rnicsim.run(ROOT / "scenarios" / "quickstart.toml", out=d / "a", progress=False, duration="200us")
    b = rnicsim.run(ROOT / "scenarios" / "examples" / "dcqcn_incast.toml", out=d / "b", progress=False, duration="500us", outputs__rate_interval="5us")
    out = subprocess.run([sys.executable, "-m", "rnicsim", "report", str(a.path), str(b.path), "--out", str(d / "report")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return d / "report"


def test_every_plot_with_data_is_written_as_png_and_svg_and_the_others_are_named(report: Path) -> None:
    page = (report / "index.html").read_text()
    meta = json.loads((report / "report.json").read_text())
    drawn = set(meta["figures"])
    absent = {d["figure"]: d["missing"] for d in meta["not_drawn"]}
    assert drawn | set(absent) == {name for name, _ in PLOTS} and not drawn & set(absent)
    # Neither run has PFC pauses or SCR; both have flows, rates, queues and perftests.
    assert set(absent) == {"pause_fraction", "nic_telemetry", "scr_dequeue_rates"}, absent
    for name in drawn:
        for ext in ("png", "svg"):
            f = report / f"{name}.{ext}"
            assert f.stat().st_size > 1000, f
        assert f'src="{name}.svg"' in page
    for name, missing in absent.items():
        assert not (report / f"{name}.svg").exists() and f'src="{name}.svg"' not in page
        assert html.escape(missing) in page, "the page says what the runs lack and which key adds it"
    assert "nic.scr.telemetry" in page
    assert "quickstart" in page and "dcqcn-incast" in page, "both runs side by side"
    # Bandwidth tests have a plot and a row (a perftest-only run's report had no throughput).
    assert "perftest_goodput" in drawn
    incast = json.loads((report.parent / "b" / "summary.json").read_text())
    total = sum(t["gbps"] for t in incast["perftest"] if t["test"] != "write_lat")
    assert f"<tr><td>perftest goodput (Gbps)</td><td>n/a</td><td>{total:.4g}</td></tr>" in page, page


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def test_the_page_renders_in_headless_chromium(report: Path, tmp_path: Path) -> None:
    exe = chromium()
    if exe is None:
        assert not os.environ.get("CI"), "CI installs Debian's chromium (scripts/test.sh)"
        pytest.skip("chromium not installed")
    url = (report / "index.html").as_uri()
    flags = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--virtual-time-budget=5000"]
    shot = tmp_path / "shot.png"
    r = subprocess.run(flags + ["--window-size=1400,2000", f"--screenshot={shot}", "--enable-logging=stderr", "--v=0", url], capture_output=True, text=True, timeout=120)
    assert shot.exists(), r.stderr
    pixels = matplotlib.image.imread(shot)
    assert pixels.std() > 0.05, "the screenshot is not blank"
    assert "Uncaught" not in r.stderr, r.stderr
    dom = subprocess.run(flags + ["--dump-dom", url], capture_output=True, text=True, timeout=120).stdout
    assert 'data-images-ok="yes"' in dom, "every image loaded"


def test_the_telemetry_plot_draws_each_nics_port_and_pcie_lines(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    from rnicsim.report import nic_telemetry

    run = rnicsim.run(ROOT / "scenarios" / "quickstart.toml", out=tmp_path / "t", progress=False, duration="200us", nic__scr__telemetry="20us", nic__scr__hosts=[0, 1])
    fig, ax = plt.subplots()
    nic_telemetry(ax, [run])
    assert len(ax.lines) == 4  # a port and a PCIe line for each of the two NICs
    assert all(len(line.get_xdata()) == 10 for line in ax.lines)  # 200 µs / 20 µs
    fig2, ax2 = plt.subplots()
    nic_telemetry(ax2, [])
    assert len(ax2.lines) == 0 and ax2.texts  # nothing to draw: a note says what is missing
    plt.close(fig)
    plt.close(fig2)


def test_the_scr_rate_plot_draws_each_queue_pairs_dequeue_rate_as_steps(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    from rnicsim.report import scr_dequeue_rates

    # SCR Table 5 at 0.1 GB/s: eight queue pairs, the six busiest drawn, each from 0.5 Gbps up
    # to its share and held to the end of the run.
    run = rnicsim.run(ROOT / "scenarios" / "scr" / "table5_step010.toml", out=tmp_path / "t", progress=False)
    fig, ax = plt.subplots()
    scr_dequeue_rates(ax, [run])
    assert len(ax.lines) == 6
    for line in ax.lines:
        y = list(line.get_ydata())
        assert y[0] == 0.5 and 11.7 <= y[-1] <= 13.3
        assert line.get_xdata()[-1] == 2000.0  # held to the end of the 2 ms run
    fig2, ax2 = plt.subplots()
    scr_dequeue_rates(ax2, [])
    assert len(ax2.lines) == 0 and ax2.texts
    plt.close(fig)
    plt.close(fig2)


def test_runs_of_one_scenario_are_told_apart_by_their_settings_then_their_folders(tmp_path: Path) -> None:
    from rnicsim.report import distinct_labels

    a = rnicsim.run(ROOT / "scenarios" / "quickstart.toml", out=tmp_path / "seed1", progress=False, duration="20us")
    b = rnicsim.run(ROOT / "scenarios" / "quickstart.toml", out=tmp_path / "seed2", progress=False, duration="20us", seed=2)
    c = rnicsim.run(ROOT / "scenarios" / "examples" / "dcqcn_incast.toml", out=tmp_path / "x" / "seed1", progress=False, duration="20us")
    # By the settings they differ in (a sweep's points sit in folders named by hashes).
    assert distinct_labels([a, b, c]) == ["quickstart (seed = 1)", "quickstart (seed = 2)", "dcqcn-incast"]
    e = rnicsim.run(ROOT / "scenarios" / "quickstart.toml", out=tmp_path / "load", progress=False, duration="20us", seed=2, flows__0__load=0.2)
    assert distinct_labels([a, b, e])[2] == "quickstart (seed = 2, flows[0].load = 0.2)"
    # The same scenario twice: by folder, then by path.
    d = rnicsim.run(ROOT / "scenarios" / "quickstart.toml", out=tmp_path / "y" / "seed1", progress=False, duration="20us")
    assert distinct_labels([a, d]) == [f"quickstart ({a.path})", f"quickstart ({d.path})"]
    f = rnicsim.run(ROOT / "scenarios" / "quickstart.toml", out=tmp_path / "other", progress=False, duration="20us")
    assert distinct_labels([a, f]) == ["quickstart (seed1)", "quickstart (other)"]
    # A swept one-kind table by its kind: HPCC's many keys against DCQCN's had labelled both
    # runs by the first of them, alike, and fallen back to the folders (found by a helper).
    g = rnicsim.run(ROOT / "scenarios" / "quickstart.toml", out=tmp_path / "hpcc", progress=False, duration="20us", nic__cc={"hpcc": {}})
    h = rnicsim.run(ROOT / "scenarios" / "quickstart.toml", out=tmp_path / "hpcc2", progress=False, duration="20us", nic__cc={"hpcc": {}}, seed=2)
    assert distinct_labels([a, g, h]) == ['quickstart (nic.cc = "dcqcn", seed = 1)', 'quickstart (nic.cc = "hpcc", seed = 1)', 'quickstart (nic.cc = "hpcc", seed = 2)']


def test_the_pause_plot_draws_several_runs_side_by_side(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    from rnicsim.report import pause_fraction

    incast = ROOT / "scenarios" / "examples" / "incast_pfc.toml"
    a = rnicsim.run(incast, out=tmp_path / "a", progress=False, duration="200us")
    b = rnicsim.run(incast, out=tmp_path / "b", progress=False, duration="200us", switch__pfc__xoff="30KB")
    fig, ax = plt.subplots()
    pause_fraction(ax, [a, b])
    bars = [[(p.get_x(), p.get_x() + p.get_width()) for p in c] for c in ax.containers]
    assert len(bars) == 2 and all(len(run) == 8 for run in bars)  # the eight paused senders of each run
    # No bar of one run covers any of the other's.
    assert all(x1 <= y0 + 1e-9 or y1 <= x0 + 1e-9 for x0, x1 in bars[0] for y0, y1 in bars[1])
    assert sorted(t.get_text() for t in ax.get_xticklabels()) == [f"{n}:0" for n in range(8)]  # one tick a port
    plt.close(fig)


def test_the_paper_table_shows_a_bound_as_a_bound_and_a_ratio_by_both_metrics(tmp_path: Path) -> None:
    # A `relation = "below"` claim read as a plain value, and a `per` claim named only its
    # numerator, unlike the reproduction gallery.
    text = (ROOT / "scenarios" / "examples" / "dcqcn_incast.toml").read_text() + (
        '\n[[paper]]\nmetric = "max_queue_bytes"\nrelation = "below"\nvalue = 1e9\nsource = "a bound"\n'
        '\n[[paper]]\nmetric = "packets_delivered"\nper = "packets_sent"\nvalue = 1.0\nsource = "a ratio"\n'
    )
    (tmp_path / "claims.toml").write_text(text)
    run = rnicsim.run(tmp_path / "claims.toml", out=tmp_path / "run", progress=False, duration="50us")
    out = subprocess.run([sys.executable, "-m", "rnicsim", "report", str(run.path), "--out", str(tmp_path / "report")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    page = html.unescape((tmp_path / "report" / "index.html").read_text())
    assert "<td>max_queue_bytes</td><td>a bound</td><td>≤ 1000000000.0</td>" in page, page
    assert "<td>packets_delivered ÷ packets_sent</td><td>a ratio</td><td>1.0</td>" in page, page


def test_slowdown_by_size_agrees_with_the_summarys_by_size(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    from rnicsim.report import slowdown_by_size

    # The summary's buckets hold their upper bound and its p99 is the nearest rank; the plot
    # (polars' quantile, `lo <= size < hi`) disagreed, and drew empty buckets as 0.
    run = rnicsim.run(ROOT / "scenarios" / "quickstart.toml", out=tmp_path / "q", progress=False, duration="200us", outputs__fct_by_size=["10KB", "100KB", "1MB", "10MB"])
    by = [b for b in run.summary["rdma"]["by_size"] if b["flows"]]
    assert len(by) < 5, "an empty bucket (`more`) to leave out"
    expected_p99 = [b["slowdown_p99"] for b in by]
    expected_mean = [b["slowdown_mean"] for b in by]
    # The same run without `by_size` in its summary: the plot computes it from flows.parquet.
    shutil.copytree(run.path, tmp_path / "bare")
    summary = json.loads((tmp_path / "bare" / "summary.json").read_text())
    del summary["rdma"]["by_size"]
    (tmp_path / "bare" / "summary.json").write_text(json.dumps(summary))
    for path in (run.path, tmp_path / "bare"):
        fig, ax = plt.subplots()
        slowdown_by_size(ax, [rnicsim.open_run(path)])
        p99, mean = ax.containers
        assert [p.get_height() for p in p99] == pytest.approx(expected_p99, rel=1e-12), path
        assert [p.get_height() for p in mean] == pytest.approx(expected_mean, rel=1e-12), path
        assert [t.get_text() for t in ax.get_xticklabels()] == ["≤10KB", "10KB–100KB", "100KB–1MB", "1MB–10MB"][: len(by)]
        plt.close(fig)
    # A flow of exactly 10,000 bytes is in the 10KB bucket, as in the summary.
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "flows.txt").write_text("2\n0 1 3 100 10000 0.000001\n2 1 3 100 20000 0.000002\n")
    (tmp_path / "f" / "s.toml").write_text('duration = "100us"\n[topology.star]\nhosts = 3\n[[flows]]\nfile = "flows.txt"\n')
    small = rnicsim.run(tmp_path / "f" / "s.toml", out=tmp_path / "f" / "run", progress=False)
    fig, ax = plt.subplots()
    slowdown_by_size(ax, [small])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["≤10KB", "10KB–100KB"], "one flow each; the empty buckets left out"
    assert all(len(c) == 2 for c in ax.containers)
    plt.close(fig)


def test_the_pause_fraction_is_per_class_and_at_most_1(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    from rnicsim.report import pause_fraction

    # Two lossless classes paused at once: paused_rx_ps (summed over classes) is 1.8 × the run.
    (tmp_path / "s.toml").write_text(
        'duration = "200us"\n[topology.star]\nhosts = 9\n[switch]\nbuffer = "2MB"\n[switch.pfc]\nclasses = [3, 4]\nxoff = "60KB"\n'
        "[[traffic]]\npattern = { incast = { receiver = 8 } }\nload = 1.0\npriority = 3\n"
        "[[traffic]]\npattern = { incast = { receiver = 8 } }\nload = 1.0\npriority = 4\n"
    )
    run = rnicsim.run(tmp_path / "s.toml", out=tmp_path / "run", progress=False)
    assert run.counters["paused_rx_ps"].max() > run.summary["duration_ps"], "more than the run: two classes"
    fig, ax = plt.subplots()
    pause_fraction(ax, [run])
    heights = [p.get_height() for c in ax.containers for p in c]
    assert len(heights) == 8 and all(0.5 < h <= 1 for h in heights), heights
    assert "classes" in ax.get_ylabel()
    plt.close(fig)


def test_flow_figures_are_na_when_no_flow_completed(tmp_path: Path) -> None:
    import re

    from rnicsim.report import write_report

    # 2 µs: flows start, none completes; the summary gives 0 (or, later, null) slowdowns.
    run = rnicsim.run(ROOT / "scenarios" / "quickstart.toml", out=tmp_path / "r", progress=False, duration="2us")
    assert run.summary["rdma"]["flows_completed"] == 0
    shutil.copytree(run.path, tmp_path / "null")
    summary = json.loads((tmp_path / "null" / "summary.json").read_text())
    summary["rdma"].update({"slowdown_p50": None, "slowdown_p99": None, "slowdown_mean": None})
    (tmp_path / "null" / "summary.json").write_text(json.dumps(summary))
    for path in (run.path, tmp_path / "null"):
        page = write_report([path], tmp_path / "report").read_text()
        for row in ("slowdown p50", "slowdown p99"):
            assert re.search(f"<td>{row}</td><td>n/a</td>", page), (row, page)


def test_a_file_where_the_report_would_go_is_refused_with_one_line(tmp_path: Path) -> None:
    run = rnicsim.run(ROOT / "scenarios" / "quickstart.toml", out=tmp_path / "r", progress=False, duration="20us")
    (tmp_path / "taken").write_text("")
    for out in (tmp_path / "taken", tmp_path / "taken" / "below"):
        done = subprocess.run([sys.executable, "-m", "rnicsim", "report", str(run.path), "--out", str(out)], capture_output=True, text=True)
        assert done.returncode == 2 and "taken is a file, not a folder" in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_a_folder_holding_other_files_is_not_taken_for_a_report(tmp_path: Path) -> None:
    # Any folder was written into: a page of one's own became the report, another run's folder
    # got an index.html and plots.
    run = rnicsim.run(ROOT / "scenarios" / "quickstart.toml", out=tmp_path / "r", progress=False, duration="20us")
    other = rnicsim.run(ROOT / "scenarios" / "quickstart.toml", out=tmp_path / "other", progress=False, duration="20us")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.html").write_text("mine")
    for out in (tmp_path / "docs", other.path):
        before = sorted(p.name for p in out.iterdir())
        done = subprocess.run([sys.executable, "-m", "rnicsim", "report", str(run.path), "--out", str(out)], capture_output=True, text=True)
        assert done.returncode == 2 and "is not an earlier report" in done.stderr and "Traceback" not in done.stderr, done.stderr
        assert sorted(p.name for p in out.iterdir()) == before
    assert (tmp_path / "docs" / "index.html").read_text() == "mine"
    # An empty folder and an earlier report's are taken.
    (tmp_path / "empty").mkdir()
    for _ in range(2):
        assert write_report([run.path], tmp_path / "empty").is_file()


def test_a_report_that_fails_part_way_leaves_the_folder_as_it_was(report: Path, tmp_path: Path) -> None:
    # A run folder missing a table every run writes: the report fails after drawing some plots.
    # Before, the earlier report's plots were overwritten under its old page, and a fresh
    # folder kept four plots and no page.
    broken = tmp_path / "broken"
    shutil.copytree(report.parent / "a", broken)
    (broken / "rates.parquet").unlink()
    earlier = tmp_path / "earlier"
    shutil.copytree(report, earlier)
    before = {f.name: f.read_bytes() for f in earlier.iterdir()}
    for out in (earlier, tmp_path / "fresh"):
        done = subprocess.run([sys.executable, "-m", "rnicsim", "report", str(broken), "--out", str(out)], capture_output=True, text=True)
        assert done.returncode == 2 and "rates.parquet was not written (every run writes it" in done.stderr, done.stderr
    assert {f.name: f.read_bytes() for f in earlier.iterdir()} == before
    assert not (tmp_path / "fresh").exists()
    assert not [f for f in tmp_path.iterdir() if f.name.endswith(".partial")]


def test_a_report_of_the_same_runs_is_the_same_bytes(report: Path, tmp_path: Path) -> None:
    # Same runs, same report: the SVGs carried the time they were drawn and random element
    # ids (found by a helper), so two reports of one run differed in every SVG.
    again = tmp_path / "again"
    done = subprocess.run([sys.executable, "-m", "rnicsim", "report", str(report.parent / "a"), str(report.parent / "b"), "--out", str(again)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    images = sorted(f.name for f in report.iterdir() if f.suffix in (".svg", ".png"))
    assert images and any(n.endswith(".svg") for n in images)
    for name in images:
        assert (again / name).read_bytes() == (report / name).read_bytes(), name


def test_unnamed_perftests_are_bars_of_their_own_and_latency_tests_alone_have_no_goodput(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    import polars as pl

    from rnicsim.report import SUMMARY_ROWS, _cell, perftest_goodput

    # Two unnamed bandwidth tests were drawn as one bar of both (found in review).
    text = 'duration = "100us"\n[topology.star]\nhosts = 4\n[nic.cc.none]\n'
    bw = text + "".join(f'[[perftest]]\ntest = "write_bw"\nclient = {c}\nserver = 3\nmessage = "4KiB"\n' for c in (0, 1))
    run = rnicsim.Scenario.from_toml(bw).run(tmp_path / "bw", progress=False)
    fig, ax = plt.subplots()
    perftest_goodput(ax, [run])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["perftest[0]", "perftest[1]"]
    bars = sorted(p.get_height() for p in ax.patches)
    want = sorted(run.perftest.group_by("test").agg(pl.col("goodput_gbps").sum())["goodput_gbps"].to_list())
    assert len(bars) == 2 and all(abs(a - b) < 1e-9 for a, b in zip(bars, want)), (bars, want)
    plt.close(fig)
    # A run of latency tests only has no goodput to show: n/a, not 0.
    lat = rnicsim.Scenario.from_toml(text + '[[perftest]]\ntest = "write_lat"\nclient = 0\nserver = 1\nmessage = "64B"\n').run(tmp_path / "lat", progress=False)
    row = dict(SUMMARY_ROWS)["perftest goodput (Gbps)"]
    assert _cell(row, lat.summary) == "n/a" and _cell(row, run.summary) != "n/a"


def test_an_empty_out_is_refused_not_taken_for_the_default(tmp_path: Path) -> None:
    # `report RUN --out ''` wrote into RUN/report as if --out were not given.
    for cmd in (["report", str(tmp_path / "r")], ["sweep", str(tmp_path / "s.toml")], ["reproduce", "scr"]):
        out = subprocess.run([sys.executable, "-m", "rnicsim", *cmd, "--out", ""], capture_output=True, text=True)
        assert out.returncode == 2 and "--out: expected a folder, got an empty path" in out.stderr, (cmd, out.stderr)
    assert list(tmp_path.iterdir()) == []
