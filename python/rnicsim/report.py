"""`rnicsim report`: an HTML page (with PNG and SVG files) of the plots a run is read by:
FCT slowdown CDF, slowdown by flow size (mean and p99), per-QP rates, queue lengths, PFC pause
fraction per port, fairness over time (Jain's index of QP rates) and SCR's NIC telemetry. Several runs are drawn side
by side, each in its own colour."""

from __future__ import annotations

import contextlib
import html
import itertools
import json
import math
import os
import shutil
import tempfile
import tomllib
from pathlib import Path
from typing import Callable, Iterator, Sequence, Union

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402

from .api import Run, _file_in_the_way, _terminate_as_exit  # noqa: E402
from .query import leaves  # noqa: E402

# Flow-size buckets of the slowdown-by-size plot for a run without `outputs.fct_by_size`, as
# summary.json's `rdma.by_size` would have them with bounds ["10KB", "100KB", "1MB", "10MB"]:
# a bucket holds the sizes above the bound before it up to its own (a 10,000 B flow is ≤10KB).
SIZE_BUCKETS = [(-1, 10_000, "≤10KB"), (10_000, 100_000, "10KB–100KB"), (100_000, 1_000_000, "100KB–1MB"), (1_000_000, 10_000_000, "1MB–10MB"), (10_000_000, 1 << 62, ">10MB")]



# How a claim reads: "≤ 5" for a bound (`relation = "below"`), the metric over another for a
# ratio (`per`), as the reproduction gallery prints them.
BOUND = {"near": "", "below": "≤ ", "above": "≥ "}


def claim_metric(c: dict) -> str:
    """A claim's metric as compared: over its `per` metric for a ratio."""
    return f"{c['metric']} ÷ {c['per']}" if c.get("per") else c["metric"]


def _label(run: Run) -> str:
    return getattr(run, "label", None) or run.summary.get("name") or run.path.name


def _scenario(run: Run) -> dict:
    """A run's resolved scenario (its folder's scenario.toml), or nothing if it does not read."""
    try:
        return run.scenario
    except (OSError, tomllib.TOMLDecodeError):
        return {}


def _settings(doc: dict) -> dict[str, object]:
    """A resolved scenario as dotted keys and values, its name left out."""
    flat = dict(leaves(doc))
    flat.pop("name", None)
    return flat


def _kinds(doc: object, prefix: str = "") -> Iterator[tuple[str, str]]:
    """The one-kind tables of a resolved scenario (`nic.cc = {hpcc = {...}}`): their dotted
    key and the kind chosen."""
    if isinstance(doc, dict):
        if len(doc) == 1 and prefix and isinstance(next(iter(doc.values())), dict):
            yield prefix, next(iter(doc))
        for k, v in doc.items():
            yield from _kinds(v, f"{prefix}.{k}" if prefix else k)


def _differences(runs: Sequence[Run], most: int = 3) -> list[str]:
    """For runs of one scenario: the settings in which each differs from the others, as
    `key = value` (the first `most`), e.g. the swept values of a sweep's points. A one-kind
    table whose kind differs (a sweep over `nic.cc`) is told by its kind (`nic.cc = hpcc`),
    not by the first of the kind's many keys."""
    docs = [_scenario(r) for r in runs]
    settings = [_settings(d) for d in docs]
    kinds = [dict(_kinds(d)) for d in docs]
    swapped = [p for p in dict.fromkeys(p for k in kinds for p in k) if len({k.get(p) for k in kinds}) > 1]
    for s, k in zip(settings, kinds):
        for p in swapped:
            for key in [key for key in s if key.startswith(p + ".")]:
                del s[key]
            s[p] = k.get(p)
    keys = list(dict.fromkeys([*swapped, *(k for s in settings for k in s)]))
    varied = [k for k in keys if len({json.dumps(s.get(k), sort_keys=True, default=str) for s in settings}) > 1]
    shown = lambda v: "unset" if v is None else json.dumps(v, default=str)  # noqa: E731
    more = ", …" if len(varied) > most else ""
    return [", ".join(f"{k} = {shown(s.get(k))}" for k in varied[:most]) + more if varied else "" for s in settings]


def distinct_labels(runs: Sequence[Run]) -> list[str]:
    """Each run's scenario name, with what sets it apart where runs share a name: the settings
    in which they differ (two seeds, a sweep's points), else its folder, else its whole path."""
    names = [r.summary.get("name") or r.path.name for r in runs]
    labels = list(names)
    for n in set(names):
        group = [i for i, m in enumerate(names) if m == n]
        if len(group) > 1:
            for i, d in zip(group, _differences([runs[i] for i in group])):
                labels[i] = f"{n} ({d})" if d else n
    labels = [f"{n} ({r.path.name})" if labels.count(l) > 1 else l for n, l, r in zip(names, labels, runs)]
    return [f"{n} ({r.path})" if labels.count(l) > 1 else l for n, l, r in zip(names, labels, runs)]


def save_figure(fig, base: Path) -> None:
    """`fig` as `base`.svg and `base`.png, the same bytes for the same runs: no date in the
    SVG and its element ids from a fixed salt (they were the time and random)."""
    with matplotlib.rc_context({"svg.hashsalt": "rnicsim"}):
        fig.savefig(base.with_name(base.name + ".svg"), metadata={"Date": None})
    fig.savefig(base.with_name(base.name + ".png"), dpi=110)


def _written(run: Run, table: str) -> pl.DataFrame | None:
    """One of the tables a run writes only when asked (SCR's), or None if this run did not."""
    return run.table(table) if (run.path / f"{table}.parquet").exists() else None


def _finish(ax, drawn: bool, missing: str, small: bool = False) -> None:
    """A legend if anything was drawn, else a note of what the runs lack."""
    if drawn:
        ax.legend(fontsize="small" if small else None)
    else:
        ax.text(0.5, 0.5, f"no {missing} in these runs", ha="center", va="center", transform=ax.transAxes, color="grey")
        ax.rnicsim_missing = missing  # write_report leaves the panel out and says what it lacks


def slowdown_cdf(ax, runs: Sequence[Run]) -> None:
    drawn = False
    for r in runs:
        s = r.flows["slowdown"].drop_nulls().sort()
        if s.len() == 0:
            continue
        y = [(i + 1) / s.len() for i in range(s.len())]
        ax.step(s.to_list(), y, where="post", label=_label(r))
        drawn = True
    ax.set_xscale("log")
    ax.set_xlabel("FCT slowdown (FCT / ideal FCT)")
    ax.set_ylabel("fraction of flows")
    ax.set_title("FCT slowdown CDF")
    _finish(ax, drawn, "completed flows")


def nearest_rank(values: Sequence[float], q: float) -> float:
    """The nearest-rank `q`-quantile, as summary.json's percentiles are: the value at rank
    ⌈q·n⌉ of the sorted values (at least the first)."""
    s = sorted(values)
    return s[min(max(math.ceil(q * len(s)), 1), len(s)) - 1]


def size_buckets(run: Run) -> list[tuple[str, float, float]]:
    """(label, slowdown mean, slowdown p99) of each flow-size bucket with completed flows:
    summary.json's `rdma.by_size` when the run has it (`outputs.fct_by_size`), else the same
    computed from flows.parquet over SIZE_BUCKETS (upper bounds included, nearest-rank p99).
    Buckets without a completed flow are left out."""
    by = (run.summary.get("rdma") or {}).get("by_size")
    if by:
        names = [b["name"] for b in by]
        labels = [f"≤{n}" if i == 0 else f">{names[i - 1]}" if n == "more" else f"{names[i - 1]}–{n}" for i, n in enumerate(names)]
        return [(label, b["slowdown_mean"], b["slowdown_p99"]) for label, b in zip(labels, by) if b.get("flows") and b.get("slowdown_mean") is not None and b.get("slowdown_p99") is not None]
    f = run.flows.filter(pl.col("slowdown").is_not_null())
    out = []
    for lo, hi, label in SIZE_BUCKETS:
        b = f.filter((pl.col("size") > lo) & (pl.col("size") <= hi))["slowdown"].to_list()
        if b:
            out.append((label, sum(b) / len(b), nearest_rank(b, 0.99)))
    return out


def slowdown_by_size(ax, runs: Sequence[Run]) -> None:
    drawn = [(r, size_buckets(r)) for r in runs]
    drawn = [(r, b) for r, b in drawn if b]
    # One slot per bucket any run has, in each run's order (runs may set other bounds).
    slots: list[str] = []
    for _, buckets in drawn:
        at = -1
        for label, _, _ in buckets:
            if label in slots:
                at = slots.index(label)
            else:
                at += 1
                slots.insert(at, label)
    width = 0.8 / max(1, len(drawn))
    for k, (r, buckets) in enumerate(drawn):
        xs = [slots.index(label) + k * width for label, _, _ in buckets]
        ax.bar(xs, [p99 for _, _, p99 in buckets], width, alpha=0.35, label=f"{_label(r)} p99")
        ax.bar(xs, [mean for _, mean, _ in buckets], width * 0.6, label=f"{_label(r)} mean")
    ax.set_xticks([i + (len(drawn) - 1) * width / 2 for i in range(len(slots))], slots)
    ax.set_xlabel("flow size")
    ax.set_ylabel("FCT slowdown")
    ax.set_title("slowdown by flow size (mean and p99)")
    _finish(ax, bool(drawn), "completed flows", small=True)


def qp_rates(ax, runs: Sequence[Run]) -> None:
    drawn = False
    for r in runs:
        rates = r.rates
        if rates.height == 0:
            continue
        busiest = rates.group_by("qp").len().sort(["len", "qp"], descending=[True, False]).head(4)["qp"].to_list()
        for q in busiest:
            d = rates.filter(pl.col("qp") == q).sort("time_ps")
            ax.plot((d["time_ps"] / 1e6).to_list(), (d["rate_bps"] / 1e9).to_list(), label=f"{_label(r)} QP {q}")
            drawn = True
    ax.set_xlabel("time (µs)")
    ax.set_ylabel("rate (Gbps)")
    ax.set_title("per-QP rate (congestion control)")
    _finish(ax, drawn, "rate samples (set outputs.rate_interval)", small=True)


def queue_lengths(ax, runs: Sequence[Run]) -> None:
    drawn = False
    for r in runs:
        q = r.queues
        if q.height == 0:
            continue
        top = q.group_by("port").agg(pl.col("queue_bytes").max().alias("m")).sort(["m", "port"], descending=[True, False]).head(3)
        for port in top.filter(pl.col("m") > 0)["port"].to_list():
            d = q.filter(pl.col("port") == port).sort("time_ps")
            ax.plot((d["time_ps"] / 1e6).to_list(), (d["queue_bytes"] / 1e3).to_list(), label=f"{_label(r)} port {port}")
            drawn = True
    ax.set_xlabel("time (µs)")
    ax.set_ylabel("queue (KB)")
    ax.set_title("longest queues")
    _finish(ax, drawn, "queue samples (set outputs.queue_interval)", small=True)


def _paused_classes(run: Run) -> pl.DataFrame:
    """(node, iface, classes): how many PFC classes were paused at each port that received a
    PAUSE, from pfc.parquet; empty when the run did not record PFC frames."""
    pfc = _written(run, "pfc")
    if pfc is None or pfc.height == 0:
        return pl.DataFrame(schema={"node": pl.UInt32, "iface": pl.UInt32, "classes": pl.UInt32})
    return pfc.filter(pl.col("quanta") > 0).group_by(["node", "iface"]).agg(pl.col("class").n_unique().cast(pl.UInt32).alias("classes"))


def pause_fraction(ax, runs: Sequence[Run]) -> None:
    """Each port's fraction of the run paused by its peer, per class: `paused_rx_ps` is summed
    over the classes, so it is divided by the run's length times the number of classes paused
    at that port (from pfc.parquet; without it, the scenario's `switch.pfc.classes`), the mean
    over those classes. A class is paused at most the whole run, so the fraction is at most 1."""
    paused = []  # (run, {"node:iface": fraction}) for each run with pauses, its 12 most paused ports
    for r in runs:
        c = r.counters.filter(pl.col("paused_rx_ps") > 0)
        if c.height == 0:
            continue
        ps = r.summary["duration_ps"]
        configured = len((((r.scenario.get("switch") or {}).get("pfc") or {}).get("classes")) or []) or 1
        c = c.join(_paused_classes(r), on=["node", "iface"], how="left").with_columns(pl.col("classes").fill_null(configured))
        # (Without pfc.parquet, a count of classes too small to hold the paused time is raised:
        # no class is paused longer than the run.)
        k = pl.max_horizontal(pl.col("classes").cast(pl.Float64), (pl.col("paused_rx_ps").cast(pl.Float64) / ps).ceil())
        c = c.with_columns((pl.col("paused_rx_ps").cast(pl.Float64) / ps / k).alias("f")).sort("f", descending=True).head(12)
        paused.append((r, {f"{n}:{i}": f for n, i, f in zip(c["node"], c["iface"], c["f"])}))
    # One slot per port any run paused; each run's bar at its own offset in the slot, side by
    # side as in slowdown_by_size (at one position, a shorter bar would hide behind a taller).
    ports = list(dict.fromkeys(p for _, f in paused for p in f))
    width = 0.8 / max(1, len(paused))
    for k, (r, f) in enumerate(paused):
        slots = [i for i, p in enumerate(ports) if p in f]
        ax.bar([i + k * width for i in slots], [f[ports[i]] for i in slots], width, alpha=0.7, label=_label(r))
    ax.set_xticks([i + (len(paused) - 1) * width / 2 for i in range(len(ports))], ports)
    drawn = bool(paused)
    ax.set_xlabel("node:interface")
    ax.set_ylabel("fraction of time paused\n(mean over the paused classes)")
    ax.set_title("PFC pause fraction per port and class")
    ax.tick_params(axis="x", labelrotation=60, labelsize="small")
    _finish(ax, drawn, "PFC pauses")


def fairness(ax, runs: Sequence[Run]) -> None:
    drawn = False
    for r in runs:
        rates = r.rates
        if rates.height == 0:
            continue
        j = (
            rates.group_by("time_ps")
            .agg((pl.col("rate_bps").cast(pl.Float64).sum() ** 2 / (pl.len() * (pl.col("rate_bps").cast(pl.Float64) ** 2).sum())).alias("jain"))
            .sort("time_ps")
        )
        ax.plot((j["time_ps"] / 1e6).to_list(), j["jain"].to_list(), label=_label(r))
        drawn = True
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("time (µs)")
    ax.set_ylabel("Jain's index of QP rates")
    ax.set_title("fairness over time")
    _finish(ax, drawn, "rate samples (set outputs.rate_interval)")


def nic_telemetry(ax, runs: Sequence[Run]) -> None:
    """SCR's host-domain telemetry (``nic.scr.telemetry``): each NIC's PCIe and port utilization
    over time, the busier direction of each."""
    drawn = False
    for r in runs:
        t = _written(r, "scr_telemetry")
        if t is None:
            continue
        for node in sorted(set(t["node"].to_list()))[:4]:
            d = t.filter(pl.col("node") == node).sort("time_ps")
            x = (d["time_ps"] / 1e6).to_list()
            pcie = d.select(pl.max_horizontal("pcie_read_permille", "pcie_write_permille") / 1000).to_series().to_list()
            port = d.select(pl.max_horizontal("port_tx_permille", "port_rx_permille") / 1000).to_series().to_list()
            ax.plot(x, port, label=f"{_label(r)} host {node} port")
            ax.plot(x, pcie, linestyle="--", label=f"{_label(r)} host {node} PCIe")
            drawn = True
    ax.set_xlabel("time (µs)")
    ax.set_ylabel("utilization (busier direction)")
    ax.set_title("NIC telemetry (SCR host domain)")
    _finish(ax, drawn, "SCR telemetry (set nic.scr.telemetry)", small=True)


def scr_rate_steps(rates: pl.DataFrame, node: int, qp: int, end_us: float) -> tuple[list, list]:
    """One queue pair's rows of ``scr_rates`` as a step line: times (µs) and rates (Gbps), the
    last rate held to ``end_us`` (the end of the run)."""
    d = rates.filter((pl.col("node") == node) & (pl.col("qp") == qp)).sort("time_ps", maintain_order=True)
    x = (d["time_ps"] / 1e6).to_list()
    y = (d["rate_bps"] / 1e9).to_list()
    if x and end_us > x[-1]:
        x, y = x + [end_us], y + [y[-1]]
    return x, y


def scr_dequeue_rates(ax, runs: Sequence[Run]) -> None:
    """The dequeue rates SCR's policy set (``scr_rates.parquet``), as steps held to the end of
    the run, for the queue pairs whose rate changed most often (at most six per run)."""
    drawn = False
    for r in runs:
        t = _written(r, "scr_rates")
        if t is None or t.height == 0:
            continue
        end_us = r.summary["duration_ps"] / 1e6
        busiest = t.group_by(["node", "qp"]).len().sort(["len", "node", "qp"], descending=[True, False, False]).head(6)
        for node, qp in zip(busiest["node"].to_list(), busiest["qp"].to_list()):
            x, y = scr_rate_steps(t, node, qp, end_us)
            ax.step(x, y, where="post", label=f"{_label(r)} host {node} QP {qp}")
            drawn = True
    ax.set_xlabel("time (µs)")
    ax.set_ylabel("dequeue rate (Gbps)")
    ax.set_title("SCR dequeue rates")
    _finish(ax, drawn, "SCR rate decisions ([nic.scr] with a policy that sets rates)", small=True)


def perftest_goodput(ax, runs: Sequence[Run]) -> None:
    """Each bandwidth test's goodput (its queue pairs together), bars side by side per run."""
    tests: list[str] = []
    per_run = []
    for r in runs:
        bw = r.perftest.filter(pl.col("kind") != "write_lat")
        got = {}
        # By test, labelled by its name (names are unique; an unnamed test by its index: two
        # unnamed tests were drawn as one bar of both).
        for test, name, gbps in bw.group_by("test", "name", maintain_order=True).agg(pl.col("goodput_gbps").sum()).iter_rows():
            label = name or f"perftest[{test}]"
            got[label] = gbps
            if label not in tests:
                tests.append(label)
        per_run.append((r, got))
    width = 0.8 / max(1, len(runs))
    drawn = False
    for i, (r, got) in enumerate(per_run):
        at = [t for t, label in enumerate(tests) if label in got]
        if at:
            ax.bar([t + i * width for t in at], [got[tests[t]] for t in at], width=width, label=_label(r))
            drawn = True
    ax.set_xticks([t + 0.4 - width / 2 for t in range(len(tests))], tests, rotation=30, ha="right", fontsize="small")
    ax.set_ylabel("goodput (Gbps)")
    ax.set_title("perftest bandwidth tests")
    _finish(ax, drawn, "perftest bandwidth tests ([[perftest]] with test = \"write_bw\", \"read_bw\" or \"send_bw\")", small=True)


PLOTS: list[tuple[str, Callable]] = [
    ("slowdown_cdf", slowdown_cdf),
    ("slowdown_by_size", slowdown_by_size),
    ("qp_rates", qp_rates),
    ("queue_lengths", queue_lengths),
    ("pause_fraction", pause_fraction),
    ("fairness", fairness),
    ("nic_telemetry", nic_telemetry),
    ("scr_dequeue_rates", scr_dequeue_rates),
    ("perftest_goodput", perftest_goodput),
]

def _of_completed(key: str) -> Callable[[dict], object]:
    """An RDMA figure over the completed flows: none (n/a) when no flow completed, where the
    summary gives 0 or null (a slowdown below 1 cannot be)."""
    return lambda s: s["rdma"][key] if s["rdma"].get("flows_completed") else None


SUMMARY_ROWS = [
    ("simulated (µs)", lambda s: s["duration_ps"] / 1e6),
    ("flows completed", lambda s: s["rdma"]["flows_completed"]),
    # perftest-only runs (SCR's, Tassel's) had no throughput in the table.
    ("perftest goodput (Gbps)", lambda s: sum(bw) if (bw := [t["gbps"] for t in s.get("perftest") or [] if t["test"] != "write_lat"]) else None),
    ("slowdown p50", _of_completed("slowdown_p50")),
    ("slowdown p99", _of_completed("slowdown_p99")),
    ("retransmits", lambda s: s["rdma"]["retransmits"]),
    ("ECN marks", lambda s: s["ecn_marks"]),
    ("PFC pauses sent", lambda s: s["pfc_pauses_sent"]),
    ("drops (buffer)", lambda s: s["drops_buffer"]),
    ("max queue (KB)", lambda s: s["max_queue_bytes"] / 1e3),
]


def _fmt(v) -> str:
    return "n/a" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v)


def _cell(f: Callable[[dict], object], s: dict) -> str:
    """A summary row's value for one run; "n/a" where the run has none (null or absent)."""
    try:
        return _fmt(f(s))
    except (KeyError, TypeError):
        return "n/a"


def write_report(runs: Sequence[Union[str, Path, Run]], out: Union[str, Path]) -> Path:
    """Writes `out/index.html` with every plot the runs have data for as PNG and SVG beside it,
    and a list of the others with what they need; returns the page."""
    runs = [r if isinstance(r, Run) else Run(r) for r in runs]
    # A label the caller gave a run is kept (it was overwritten).
    for r, label in zip(runs, distinct_labels(runs)):
        if not getattr(r, "label", None):
            r.label = label
    out = Path(out)
    blocked = _file_in_the_way(out)
    if blocked is not None:
        raise NotADirectoryError(f"{blocked} is a file, not a folder; name a folder for the report (--out)")
    # The report replaces its own files in `out`: a folder holding anything else (a run's, a
    # page of one's own) is not taken, as `run` and `sweep` do not take one.
    if out.is_dir() and not (out / "report.json").is_file() and any(out.iterdir()):
        raise FileExistsError(f"{out} holds other files and is not an earlier report; name a new or empty folder, or an earlier report's (--out)")
    # Everything is drawn into a folder beside `out` and moved in at the end, the page last: a
    # report that fails part way (a run missing a table) leaves `out` as it was, not an
    # earlier page above this report's plots, nor plots without a page.
    # (The folders made for it are removed again if it fails, deepest first.)
    made = list(itertools.takewhile(lambda p: not p.exists(), (out.parent, *out.parent.parents)))
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent))
    page = None
    try:
        # SIGTERM stops it as Ctrl-C does, so the work folder goes too.
        with _terminate_as_exit():
            page = _write_report(runs, out, work)
        return page
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if page is None:
            for p in made:
                with contextlib.suppress(OSError):
                    p.rmdir()


def _write_report(runs: Sequence[Run], out: Path, work: Path) -> Path:
    figures = []
    # Plots with nothing to draw in these runs: (name, what the runs lack and the key that adds it).
    not_drawn = []
    for name, draw in PLOTS:
        fig, ax = plt.subplots(figsize=(7, 4))
        draw(ax, runs)
        missing = getattr(ax, "rnicsim_missing", None)
        if missing is None:
            fig.tight_layout()
            save_figure(fig, work / name)
            figures.append(name)
        else:
            not_drawn.append((name, missing))
        plt.close(fig)
    summaries = [r.summary for r in runs]
    head = "".join(f"<th>{html.escape(_label(r))}</th>" for r in runs)
    rows = "".join(f"<tr><td>{k}</td>" + "".join(f"<td>{_cell(f, s)}</td>" for s in summaries) + "</tr>" for k, f in SUMMARY_ROWS)
    paper = ""
    for r, s in zip(runs, summaries):
        if s.get("paper"):
            items = "".join(
                f"<tr><td>{html.escape(claim_metric(c))}</td><td>{html.escape(c['source'])}</td><td>{BOUND.get(c.get('relation', 'near'), '')}{c['paper']}</td>"
                f"<td>{'—' if c['ours'] is None else _fmt(c['ours'])}</td><td>{'yes' if c['within'] else 'NO'}{' (calibration)' if c.get('calibration') else ''}</td></tr>"
                for c in s["paper"]
            )
            paper += f"<h2>{html.escape(_label(r))}: paper vs ours</h2><table><tr><th>metric</th><th>source</th><th>paper</th><th>ours</th><th>within</th></tr>{items}</table>"
    absent = ""
    if not_drawn:
        items = "".join(f"<li>{html.escape(n)}: no {html.escape(m)}</li>" for n, m in not_drawn)
        absent = f"<p>Not drawn, nothing to show in these runs:</p><ul class='absent'>{items}</ul>"
    imgs = "".join(f'<figure><img src="{n}.svg" alt="{n}"><figcaption><a href="{n}.png">PNG</a> · <a href="{n}.svg">SVG</a></figcaption></figure>' for n in figures)
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>rnicsim report</title>
<style>body{{font-family:sans-serif;margin:2em;color:#222}}table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}td:first-child{{text-align:left}}figure{{display:inline-block;margin:0.5em}}img{{width:640px}}</style>
</head><body>
<h1>rnicsim report</h1>
<p>{len(runs)} run(s): {html.escape(", ".join(str(r.path) for r in runs))}</p>
<table><tr><th></th>{head}</tr>{rows}</table>
{paper}
{imgs}
{absent}
<script>
window.addEventListener("load", () => {{
  const ok = Array.from(document.images).every(i => i.complete && i.naturalWidth > 0);
  document.body.setAttribute("data-images-ok", ok ? "yes" : "no");
}});
</script>
</body></html>
"""
    (work / "index.html").write_text(page)
    (work / "report.json").write_text(json.dumps({"runs": [str(r.path) for r in runs], "figures": figures, "not_drawn": [{"figure": n, "missing": m} for n, m in not_drawn]}, indent=2) + "\n")
    out.mkdir(exist_ok=True)
    for name, _ in not_drawn:
        for ext in ("svg", "png"):  # a plot an earlier report drew here
            (out / f"{name}.{ext}").unlink(missing_ok=True)
    for f in sorted(work.iterdir(), key=lambda f: f.name == "index.html"):
        os.replace(f, out / f.name)
    return out / "index.html"
