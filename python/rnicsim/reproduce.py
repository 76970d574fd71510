"""`rnicsim reproduce`: runs the shipped paper-reproduction scenarios (`scenarios/<paper>/`) and
builds a gallery page: every claim a scenario lists (`[[paper]]`), the paper's value, ours, the
tolerance and a pass/miss mark, with each `[[figure]]` the scenario lists redrawn on the paper's
own axes (our curve, the paper's points overlaid) and a chart of every claim's ours/paper ratio.

The shipped reproductions already finish in seconds each (the longest simulated run, Tassel
Fig. 17's 1.5 s of slow flows, takes well under a second of wall time), so `--quick` runs the
same scenarios; it exists so that heavier reproductions added later can offer scaled-down
variants."""

from __future__ import annotations

import html
import importlib.metadata
import json
import re
import sys
import textwrap
import urllib.parse
import urllib.request
import warnings
from pathlib import Path
from typing import Optional, Sequence, Union

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from .api import Run, Scenario, ScenarioWarning, _file_in_the_way, _is_run  # noqa: E402
from .report import BOUND, claim_metric, save_figure, scr_rate_steps  # noqa: E402

PAPERS = ("scr", "tassel", "eunomia", "star", "yama")
# What the gallery says of a `[[paper]]` entry marked `calibration = true`.
CALIBRATION = (
    " A calibration check is a value that follows from a constant the scenario sets to the paper's"
    " (an engine's rate, a cache's capacity): it shows the setup is the paper's, not a reproduced result."
)


def _installed_from() -> Optional[Path]:
    """The local folder pip installed this package from (``pip install .`` records it in
    direct_url.json, PEP 610), or None (installed from a wheel or an index)."""
    try:
        url = json.loads(importlib.metadata.distribution("rnicsim").read_text("direct_url.json") or "{}")
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None
    if "dir_info" not in url or not url.get("url", "").startswith("file://"):
        return None
    return Path(urllib.request.url2pathname(urllib.parse.urlparse(url["url"]).path))


def shipped_scenarios() -> Path:
    """The shipped `scenarios/` folder, the first that holds every paper's folder of:
    `scenarios/` in the working directory or a folder above it; in the source checkout this
    module is in (run from the repository: PYTHONPATH or an editable install); in the folder
    ``pip install`` was given. Raises FileNotFoundError when none does (a wheel carries no
    scenarios: pass the folder)."""
    cwd = Path.cwd()
    candidates = [Path("scenarios"), *(d / "scenarios" for d in cwd.parents)]
    # The package is python/rnicsim/ in a checkout.
    checkout = Path(__file__).resolve().parents[2] / "scenarios"
    source = _installed_from()
    candidates += [checkout] + ([source / "scenarios"] if source else [])
    for d in candidates:
        if all((d / p).is_dir() for p in PAPERS):
            return d
    raise FileNotFoundError(
        f"no shipped scenarios (a scenarios/ folder holding {', '.join(PAPERS)}) in {cwd} or a folder above it, "
        f"or in {', '.join(str(d) for d in candidates[-1 - bool(source):])}; pass the repository's scenarios/ folder (--scenarios DIR)"
    )


def scenarios_for(papers: Sequence[str], root: Union[str, Path, None] = None) -> list[tuple[str, Path]]:
    """Each chosen paper's scenario files under `root` (default: [`shipped_scenarios`]).
    A paper without a folder there is an error, not an empty gallery."""
    root = shipped_scenarios() if root is None else Path(root)
    # Each paper once, in the order first named ("yama yama" ran and counted its claims twice).
    chosen = PAPERS if "all" in papers else tuple(dict.fromkeys(papers))
    out = []
    for p in chosen:
        if p not in PAPERS:
            raise ValueError(f"unknown paper {p!r}; choose from {', '.join(PAPERS)} or all")
        d = root / p
        if not d.is_dir():
            raise FileNotFoundError(f"{d}: no such folder (the scenarios folder must hold {p}/; --scenarios DIR names it)")
        found = [(p, f) for f in sorted(d.glob("*.toml"))]
        if not found and "all" not in papers:
            # (Named, it must have some; under `all` a folder of your own may leave papers out.)
            raise FileNotFoundError(f"{d}: no scenario files (*.toml) in it; --scenarios DIR names the folder that holds {p}/ with its scenarios")
        out += found
    return out


def _num(v) -> str:
    return "—" if v is None else f"{v:.4g}"




def _tolerance(c: dict) -> str:
    return f"±{100 * c['tolerance']:.0f}%" if c.get("relation", "near") == "near" else "bound"


def _figure(run: Run, claims: list[dict], out: Path, name: str) -> str:
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(claims) + 1.4))
    labels = [claim_metric(c) for c in claims]
    ratios = [(c["ours"] / c["paper"]) if (c["ours"] is not None and c["paper"]) else 0.0 for c in claims]
    def color(c: dict) -> str:
        # A calibrated constant's check is drawn paler: it shows the setup, not a result.
        if c.get("calibration"):
            return "palegreen" if c["within"] else "lightsalmon"
        return "tab:green" if c["within"] else "tab:red"

    colors = [color(c) for c in claims]
    ys = list(range(len(claims)))
    ax.barh(ys, ratios, color=colors)
    for y, c in zip(ys, claims):
        if c.get("relation", "near") != "near":
            continue
        ax.fill_betweenx([y - 0.4, y + 0.4], 1 - c["tolerance"], 1 + c["tolerance"], color="grey", alpha=0.2)
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_yticks(ys, labels, fontsize="small")
    ax.invert_yaxis()
    ax.set_xlabel("ours / paper (grey: tolerance; pale: a calibrated constant's check)" if any(c.get("calibration") for c in claims) else "ours / paper (grey: tolerance)")
    ax.set_title(name)
    fig.tight_layout()
    save_figure(fig, out / name)
    plt.close(fig)
    return f"{name}.svg"


def _trace(run: Run, ax, table: str) -> None:
    """Our curves from a table of the run: `scr_rates`, each queue pair's dequeue rate as steps
    (µs, Gbps), held to the end of the run; `scr_rtt`, each path's RTT probe answers (µs) as
    points (a gap is a path that did not answer); `yama_timeline`, each entity's throughput
    per sample."""
    if table == "yama_timeline":
        t = run.table("yama_timeline").sort("time_ps", maintain_order=True)
        for (entity,) in t.select("entity").unique(maintain_order=True).rows():
            e = t.filter(t["entity"] == entity)
            ax.plot((e["time_ps"] / 1e6).to_list(), e["gbps"].to_list(), linewidth=1, label=entity)
        return
    if table == "scr_rtt":
        t = run.table("scr_rtt").sort("time_ps", maintain_order=True)
        for node, qp, sport in t.select(["node", "qp", "sport"]).unique(maintain_order=True).rows():
            p = t.filter((t["node"] == node) & (t["qp"] == qp) & (t["sport"] == sport))
            ax.plot((p["time_ps"] / 1e6).to_list(), (p["rtt_ps"] / 1e6).to_list(), linestyle="none", marker=".", markersize=4, label=f"QP {qp}, port {sport}")
        return
    if table != "scr_rates":
        raise ValueError(f"no trace of table {table!r}")
    t = run.table("scr_rates").sort("time_ps", maintain_order=True)
    end_us = run.summary["duration_ps"] / 1e6
    keys = t.select(["node", "qp"]).unique(maintain_order=True).rows()
    for node, qp in keys:
        x, y = scr_rate_steps(t, node, qp, end_us)
        label = f"QP {qp}" if len(keys) <= 10 else None
        ax.step(x, y, where="post", linewidth=1, label=label)


def _wrap(text: str, width: int) -> str:
    """`text` in lines of about `width` characters, a number never parted from its unit
    ("49 µs")."""
    kept = re.sub(r"(\d) (?=[^\W\d])", "\\1\u00a0", text)
    return textwrap.fill(kept, width).replace("\u00a0", " ")


def _paper_axes(figures: list[dict], out: Path, name: str, run: Run = None) -> list[str]:
    """Each `[[figure]]` on the paper's own axes: our series as lines (or a traced table's rows
    as steps), the paper's points as black markers."""
    images = []
    for i, f in enumerate(figures):
        fig, ax = plt.subplots(figsize=(8.5, 4))
        if f.get("trace") and run is not None:
            _trace(run, ax, f["trace"])
        for s in f["series"]:
            ax.plot(s["x"], s["y"], marker="o", label=s["label"])
        for p, m in zip(f["paper"], "xv^sD*"):
            ax.scatter(p["x"], p["y"], marker=m, color="black", s=60, zorder=3, label=p["label"])
        if f.get("x_log"):
            ax.set_xscale("log")
        if f.get("y_log"):
            ax.set_yscale("log")
        elif ax.get_ylim()[0] >= 0:
            # Rates, indices and times from zero: a narrow band of values is not magnified.
            ax.set_ylim(0, ax.get_ylim()[1] * 1.08)
        xs = [x for s in f["series"] for x in s["x"]] + [x for p in f["paper"] for x in p["x"]]
        if not f.get("x_log") and xs and all(float(x).is_integer() for x in xs):
            # Whole-numbered x (flow-size buckets, policies, cases): no ticks between them.
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        # Long axis labels (a bucket legend) wrapped, not cut off at the edge.
        ax.set_xlabel(_wrap(f["x_label"], 90), fontsize="small")
        ax.set_ylabel(_wrap(f["y_label"], 45))
        ax.set_title(_wrap(f["title"], 60), fontsize="medium")
        ax.grid(alpha=0.3)
        many = len(ax.get_legend_handles_labels()[1]) > 6
        # Beside the axes, so it hides no point (it covered the paper's 9.5x of Eunomia Fig. 1).
        handles, labels = ax.get_legend_handles_labels()
        labels = [_wrap(label, 40) for label in labels]
        ax.legend(handles, labels, fontsize="x-small" if many else "small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
        fig.tight_layout()
        stem = f"{name}-fig{i}"
        save_figure(fig, out / stem)
        plt.close(fig)
        images.append(f"{stem}.svg")
    return images


def _check_out(out: Path, names: Sequence[str]) -> None:
    """Raises OSError naming the first place under `out` the runs `names` cannot be written to:
    a file where a folder goes, or a run's folder that holds something other than a previous
    run (a previous run is replaced; anything else is left alone)."""
    blocked = _file_in_the_way(out / "runs")
    if blocked is not None:
        raise NotADirectoryError(f"{blocked} is a file, not a folder; remove it or choose another output folder (--out)")
    if out.is_dir() and _is_run(out):
        # (Written into, a later `run --force` there would delete the gallery with the run.)
        raise FileExistsError(f"{out} is a run's folder (it has a .rnicsim-run file), not a gallery's; name another folder for the gallery (--out)")
    for name in names:
        d = out / "runs" / name
        if d.is_symlink() or d.exists() and not d.is_dir():
            raise FileExistsError(f"{d} is in the way: it is a {'symbolic link' if d.is_symlink() else 'file'}, not a run folder; remove it or choose another output folder (--out)")
        if d.is_dir() and any(d.iterdir()) and not _is_run(d):
            raise FileExistsError(f"{d} is in the way: it is not a previous run (it has no .rnicsim-run file), and only runs are replaced; remove it or choose another output folder (--out)")


def reproduce(papers: Sequence[str], out: Union[str, Path], scenarios: Union[str, Path, None] = None, quick: bool = False, progress: bool = False, quiet: bool = False) -> dict:
    """Runs the reproductions, writes `out/index.html`; returns counts of claims. `scenarios`
    defaults to [`shipped_scenarios`]. Unless `quiet`, a line on stderr per scenario run;
    `progress`: a progress bar for each run."""
    chosen = scenarios_for(papers, scenarios)
    # Every scenario is read before anything runs: one that does not load stops the gallery
    # with its file, line and key, and nothing is written.
    loaded = [(paper, path, Scenario.from_file(path)) for paper, path in chosen]
    with warnings.catch_warnings():
        # (A load-time warning is given once, by the run.)
        warnings.simplefilter("ignore", ScenarioWarning)
        for _, _, scenario in loaded:
            scenario.validate()
    out = Path(out)
    # So is every place a run goes: something in the way stops the gallery before it starts.
    _check_out(out, [f"{paper}-{path.stem}" for paper, path, _ in loaded])
    (out / "runs").mkdir(parents=True, exist_ok=True)
    # A page of an earlier gallery would show its numbers beside the new runs' figures if this
    # one stops part way (interrupted, or a run fails): it goes now, and the new page comes last.
    (out / "index.html").unlink(missing_ok=True)
    # Claims a run reproduces, and apart from them the checks of calibrated constants
    # (`calibration = true`: a value the scenario is set to match), each as [listed, within].
    counts = {"claims": [0, 0], "calibration": [0, 0]}
    sections = []
    for i, (paper, path, scenario) in enumerate(loaded, 1):
        name = f"{paper}-{path.stem}"
        run = scenario.run(out / "runs" / name, force=True, progress=progress)
        claims = run.summary.get("paper", [])
        figures = run.summary.get("figures", [])
        tally = _tally(claims)
        if not quiet:
            print(f"reproduce: {i}/{len(loaded)} {paper}/{path.name}: {counted(*tally['claims'], *tally['calibration'])}", file=sys.stderr)
        if not claims and not figures:
            continue
        for kind, (listed, within) in tally.items():
            counts[kind][0] += listed
            counts[kind][1] += within
        imgs = _paper_axes(figures, out, name, run) + ([_figure(run, claims, out, name)] if claims else [])
        rows = "".join(
            f"<tr class='{'pass' if c['within'] else 'miss'}'><td>{html.escape(claim_metric(c))}</td><td>{html.escape(c['source'])}</td>"
            f"<td>{BOUND.get(c.get('relation', 'near'), '')}{c['paper']:.4g} {html.escape(c['unit'])}</td><td>{_num(c['ours'])} {html.escape(c['unit'])}</td>"
            f"<td>{_tolerance(c)}</td><td>{('calibration: ' if c.get('calibration') else '') + ('pass' if c['within'] else 'miss')}</td></tr>"
            for c in claims
        )
        sections.append(
            f"<section><h2>{html.escape(paper.upper())}: {html.escape(path.name)}</h2>"
            f"<table><tr><th>claim (metric)</th><th>source</th><th>paper</th><th>ours</th><th>tolerance</th><th></th></tr>{rows}</table>"
            + "".join(f"<figure><img src='{img}' alt='{name}'></figure>" for img in imgs)
            + "</section>"
        )
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>rnicsim reproductions</title>
<style>body{{font-family:sans-serif;margin:2em;color:#222}}table{{border-collapse:collapse;margin:0.5em 0}}td,th{{border:1px solid #ccc;padding:3px 8px}}
tr.pass td:last-child{{color:green;font-weight:bold}}tr.miss td:last-child{{color:#b00;font-weight:bold}}img{{max-width:700px}}section{{margin-bottom:2em}}</style>
</head><body><h1>rnicsim: paper claims reproduced</h1>
<p>{counted(*counts['claims'], *counts['calibration'])}{' (quick mode)' if quick else ''}.{CALIBRATION if counts['calibration'][0] else ''}</p>
{''.join(sections) or '<p>No reproduction scenarios found.</p>'}
<script>window.addEventListener("load", () => document.body.setAttribute("data-images-ok",
  Array.from(document.images).every(i => i.complete && i.naturalWidth > 0) ? "yes" : "no"));</script>
</body></html>
"""
    partial = out / ".index.html.partial"
    partial.write_text(page)
    partial.replace(out / "index.html")
    return {"claims": counts["claims"][0], "passed": counts["claims"][1], "calibration": counts["calibration"][0], "calibration_passed": counts["calibration"][1]}


def _tally(claims: list[dict]) -> dict[str, list[int]]:
    """Claims and calibration checks, each as [listed, within tolerance]."""
    out = {"claims": [0, 0], "calibration": [0, 0]}
    for c in claims:
        kind = out["calibration" if c.get("calibration") else "claims"]
        kind[0] += 1
        kind[1] += bool(c["within"])
    return out


def counted(claims: int, passed: int, calibration: int = 0, calibration_passed: int = 0) -> str:
    """E.g. "5 of 6 claims within tolerance; 2 of 2 calibration checks hold"."""
    return f"{passed} of {claims} claims within tolerance" + (f"; {calibration_passed} of {calibration} calibration checks hold" if calibration else "")
