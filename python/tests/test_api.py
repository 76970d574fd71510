"""The Python API against the command line, and the query layer."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import rnicsim

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "scenarios" / "quickstart.toml"


def files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


def test_api_and_cli_give_identical_outputs(tmp_path: Path) -> None:
    api = rnicsim.Scenario.from_file(QUICKSTART).set("duration", "200us").run(tmp_path / "api", progress=False)
    cli = subprocess.run(
        [sys.executable, "-m", "rnicsim", "run", str(QUICKSTART), "--set", 'duration="200us"', "--out", str(tmp_path / "cli"), "--quiet"],
        capture_output=True,
        text=True,
    )
    assert cli.returncode == 0, cli.stderr
    a, c = files(api.path), files(tmp_path / "cli")
    assert a.keys() == c.keys()
    for name in a:
        assert a[name] == c[name], f"{name} differs between the API and the CLI"
    assert api.summary["rdma"]["flows_completed"] > 50


def test_tables_are_polars_and_queryable(tmp_path: Path) -> None:
    run = rnicsim.run(QUICKSTART, out=tmp_path / "r", progress=False, duration="200us", seed=3)
    flows = run.flows
    assert isinstance(flows, pl.DataFrame)
    assert {"size", "fct_ps", "ideal_fct_ps", "slowdown"} <= set(flows.columns)
    done = flows.filter(pl.col("fct_ps").is_not_null())
    assert (done["slowdown"] >= 0.999).all(), "no flow beats its ideal completion time"
    n = run.query("SELECT count(*) AS n FROM flows WHERE fct_ps IS NOT NULL")["n"][0]
    assert n == done.height
    seed = run.query("SELECT value FROM scenario WHERE key = 'seed'")["value"][0]
    assert seed == "3"
    completed = run.query("SELECT value FROM summary WHERE key = 'rdma.flows_completed'")["value"][0]
    assert int(completed) == done.height
    # An interval (polars holds none: the conversion panicked past `except Exception`) comes
    # back as its text, beside the other columns' own types.
    iv = run.query("SELECT INTERVAL 1 DAY AS \"a \"\"day\"\"\", max(fct_ps) AS m FROM flows")
    assert iv['a "day"'][0] == "1 day" and iv["m"].dtype == pl.UInt64
    # So does an interval inside a struct or a map, and a union (each panicked too).
    nested = run.query("SELECT {'d': INTERVAL 2 DAY} AS s, MAP {'a': INTERVAL 1 DAY} AS m, union_value(k := 1) AS u, 7 AS n")
    assert nested["s"][0] == "{'d': 2 days}" and "1 day" in nested["m"][0] and nested["u"][0] == "1" and nested["n"].dtype == pl.Int32
    # A flow's queue pairs join it to the per-queue-pair tables: every rate sample is one
    # flow's, between that flow's hosts (flows.parquet had no queue-pair column).
    joined = run.query("SELECT count(*) AS n, count(f.flow) AS matched, sum(CASE WHEN r.src = f.src AND r.dst = f.dst THEN 1 ELSE 0 END) AS same FROM rates r LEFT JOIN flows f ON r.qp = f.src_qp")
    assert joined["n"][0] > 0 and joined["matched"][0] == joined["n"][0] == joined["same"][0], joined
    # A statement without a result gives an empty frame; no statement at all is refused.
    assert run.query("CREATE VIEW big AS SELECT * FROM flows WHERE size > 1000000").height == 0
    with pytest.raises(ValueError, match="no SQL"):
        run.query("  ")


def test_scenarios_built_from_python_objects(tmp_path: Path) -> None:
    s = rnicsim.Scenario.from_dict(
        {
            "duration": "300us",
            "topology": {"back_to_back": {}},
            "nic": {"cc": {"none": {}}},
            "perftest": [{"name": "bw", "test": "write_bw", "client": 0, "server": 1, "message": "64KiB", "depth": 16, "warmup": "100us"}],
        }
    )
    run = s.run(tmp_path / "p", progress=False)
    pt = run.perftest
    assert pt["name"][0] == "bw"
    # 64 KiB messages of 1000 B packets on a 100 Gbps link: payload share 65536 / (65536 + 66·62 + 16).
    gbps = run.summary["perftest"][0]["gbps"]
    assert abs(gbps - 100 * 65536 / (65536 + 66 * 62 + 16)) < 0.5


def test_invalid_scenarios_name_line_and_key_and_write_nothing(tmp_path: Path) -> None:
    s = rnicsim.Scenario.from_file(QUICKSTART).set("flows", [{"cdf": "../data/cdf/AliStorage2019.txt", "load": 1.5}])
    with pytest.raises(rnicsim.ScenarioError, match=r"flows\[0\]\.load"):
        s.run(tmp_path / "bad", progress=False)
    assert not (tmp_path / "bad").exists()
    # Line 3 of the text as written (a regenerated document put it on line 4).
    with pytest.raises(rnicsim.ScenarioError, match=r"<toml>:3:1: key `topology.star.hosts`"):
        rnicsim.Scenario.from_toml('duration = "1us"\n[topology.star]\nhosts = 0\n').validate()
    # .set() comes before validation: it may mend a value the text has wrong.
    rnicsim.Scenario.from_toml('duration = "1us"\n[topology.star]\nhosts = 0\n').set("topology.star.hosts", 2).validate()


def test_progress_callback_and_query_command(tmp_path: Path) -> None:
    run = rnicsim.run(QUICKSTART, out=tmp_path / "q", progress=True, duration="100us")
    out = subprocess.run([sys.executable, "-m", "rnicsim", "query", str(run.path), "SELECT count(*) AS n FROM counters"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "96" in out.stdout, out.stdout  # 48 links, two ports each


def test_the_rust_binary_hands_analysis_commands_to_python(tmp_path: Path) -> None:
    exe = ROOT / "target" / "debug" / "rnicsim"
    if not exe.exists():
        pytest.skip("the Rust binary is built by `cargo test` (scripts/test.sh runs it first)")
    run = rnicsim.run(QUICKSTART, out=tmp_path / "r", progress=False, duration="100us")
    env = {**__import__("os").environ, "RNICSIM_PYTHON": sys.executable}
    out = subprocess.run([str(exe), "query", str(run.path), "SELECT count(*) AS n FROM counters"], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert "96" in out.stdout
    # Usage lines name the command as the user typed it.
    out = subprocess.run([str(exe), "query", str(run.path)], capture_output=True, text=True, env=env)
    assert out.returncode == 2 and out.stderr.startswith("usage: rnicsim query [-h] [--rows N | --csv] RUN_DIR SQL"), out.stderr
    out = subprocess.run([str(exe), "report", "--help"], capture_output=True, text=True, env=env)
    assert out.stdout.startswith("usage: rnicsim report"), out.stdout
    out = subprocess.run([sys.executable, "-m", "rnicsim", "report", "--help"], capture_output=True, text=True)
    assert out.stdout.startswith("usage: python -m rnicsim report"), out.stdout


def test_nic_events_are_a_table_when_recorded(tmp_path: Path) -> None:
    quiet = rnicsim.run(QUICKSTART, out=tmp_path / "q", progress=False, duration="100us")
    with pytest.raises(FileNotFoundError):
        quiet.nic_events
    run = rnicsim.run(QUICKSTART, out=tmp_path / "r", progress=False, duration="100us", outputs__nic_events=True)
    ev = run.nic_events
    assert {"time_ps", "host", "qp", "kind", "bytes", "rtt_ps"} <= set(ev.columns)
    tx = run.query("SELECT count(*) AS n FROM nic_events WHERE kind = 'tx'")["n"][0]
    assert tx == ev.filter(pl.col("kind") == "tx").height > 0
    assert run.summary["packets_delivered"] == quiet.summary["packets_delivered"], "recording observes only"


def test_a_stalled_run_warns_and_can_stop_early(tmp_path: Path) -> None:
    # A perftest whose only link fails for good at 20 us: nothing arrives after, work waits.
    data = {
        "duration": "5ms",
        "topology": {"back_to_back": {}},
        "nic": {"rto": "100ms", "cc": {"none": {}}},
        "link_events": [{"at": "20us", "between": [0, 1], "state": "down"}],
        "perftest": [{"test": "write_bw", "client": 0, "server": 1, "message": "64KiB"}],
    }
    with pytest.warns(rnicsim.StallWarning, match="stalled"):
        full = rnicsim.Scenario.from_dict(data).run(tmp_path / "full", progress=False)
    assert full.summary["duration_ps"] == 5_000_000_000
    with pytest.warns(rnicsim.StallWarning, match="stop_on_stall ended the run"):
        early = rnicsim.Scenario.from_dict({**data, "stop_on_stall": True}).run(tmp_path / "early", progress=False)
    assert early.summary["stall"]["stopped_at_ps"] == early.summary["duration_ps"] < 1_000_000_000


def test_settings_unlikely_to_be_meant_warn_and_are_kept_in_the_summary(tmp_path: Path) -> None:
    data = {
        "duration": "50us",
        "topology": {"back_to_back": {}},
        "perftest": [{"test": "write_bw", "client": 0, "server": 1, "message": "4KiB", "warmup": "60us"}],
    }
    scenario = rnicsim.Scenario.from_dict(data)
    with pytest.warns(rnicsim.ScenarioWarning, match=r"perftest\[0\]\.warmup.*nothing of the 50us run"):
        scenario.validate()
    with pytest.warns(rnicsim.ScenarioWarning, match="warmup"):
        run = scenario.run(tmp_path / "short", progress=False)
    assert len(run.summary["warnings"]) == 1 and run.summary["perftest"][0]["gbps"] == 0
    # Long enough to measure: no warning, and no `warnings` key.
    ok = rnicsim.Scenario.from_dict({**data, "duration": "100us"}).run(tmp_path / "ok", progress=False)
    assert "warnings" not in ok.summary and ok.summary["perftest"][0]["gbps"] > 0


def test_yama_from_python_weights_and_timeline(tmp_path: Path) -> None:
    """Offload isolation through the API: a shipped Yama scenario with other weights, its
    summary and its per-entity timeline table."""
    s = rnicsim.Scenario.from_file(ROOT / "scenarios" / "yama" / "fig1.toml").set("duration", "1ms")
    entities = s.get("yama")["entity"]
    entities[1]["weight"] = 2.0  # yama-e2, with a quarter of the queue pairs, weighs twice yama-e1
    run = s.run(tmp_path / "y", progress=False)
    by_name = {e["name"]: e for e in run.summary["yama"]["entities"]}
    ratio = by_name["yama-e2"]["gbps"] / by_name["yama-e1"]["gbps"]
    assert 1.7 < ratio < 2.3, ratio
    vanilla = by_name["vanilla-e1"]["gbps"] / by_name["vanilla-e2"]["gbps"]
    assert 3.6 < vanilla < 4.4, vanilla
    timeline = run.table("yama_timeline")
    assert {"time_ps", "entity", "chain", "gbps"} <= set(timeline.columns)
    assert timeline.filter(pl.col("entity") == "yama-e1").height >= 40


def test_star_rpc_from_python_sweeping_connections(tmp_path: Path) -> None:
    """StaR through the API: a shipped Fig. 10 scenario cut to two groups, its connections
    changed from Python; the stateless server keeps no connection state and RDMA on the FPGA
    NIC falls past its 120-connection cache while StaR does not."""
    s = rnicsim.Scenario.from_file(ROOT / "scenarios" / "star" / "fig10_rpc_fpga.toml").set("duration", "5ms")
    groups = s.get("rpc")
    rdma = next(g for g in groups if g["name"] == "RDMA on FPGA 400")
    star = next(g for g in groups if g["name"] == "StaR 400")
    rdma["connections"] = star["connections"] = 360
    s.set("rpc", [rdma, star]).set("paper", []).set("figure", [])
    run = s.run(tmp_path / "star", progress=False)
    by_name = {r["name"]: r for r in run.summary["rpc"]}
    assert by_name["StaR 400"]["wire_load"] > 0.95
    assert by_name["RDMA on FPGA 400"]["wire_load"] < 0.4
    server = next(n for n in run.summary["star"]["per_nic"] if n["name"] == f"host {star['server']}")
    assert server["peak_stateful"] == 0 and server["stateless"] == 360


def test_a_python_scr_policy_sees_the_nics_telemetry(tmp_path: Path) -> None:
    # One WRITE stream at 100 Gbps over 200 Gbps PCIe; the policy takes only the telemetry,
    # sampled every 20 µs, on a separate per-node pool.
    s = rnicsim.Scenario.from_file(ROOT / "scenarios" / "scr" / "fig13_static.toml").set("duration", "1ms")
    s.set("perftest", [{"name": "w", "test": "write_bw", "client": 0, "server": 1, "message": "64KiB", "depth": 16}])
    s.set("nic.scr", {"hosts": [0, 1], "telemetry": "20us", "node_threads": 2, "policy": {"external": {"kinds": ["pcie", "port"], "cycles": 200}}})

    class Watch:
        def __init__(self) -> None:
            self.seen: list[tuple[int, str, int, int, int]] = []

        def on_event(self, host, event, now_ps, line_bps):
            self.seen.append((host, event["kind"], event["value"], event["aux"], event["rtt_ps"]))
            assert event["flow"] == 2**32 - 1 and event["at_ps"] < now_ps

    w = Watch()
    run = s.run(tmp_path / "watch", scr_policy=w)
    late = [e for e in w.seen[len(w.seen) // 4 :]]
    port_tx = [v for h, k, v, a, r in late if h == 0 and k == "port"]
    pcie_in = [a for h, k, v, a, r in late if h == 1 and k == "pcie"]
    assert port_tx and min(port_tx) > 900  # per mille of the line rate
    assert pcie_in and 400 < sum(pcie_in) / len(pcie_in) < 520  # payload written at ~100 of 200 Gbps
    assert all(r >= 1_005_000 for h, k, v, a, r in late if k == "pcie")  # two 500 ns hops at least
    nic = {n["name"]: n for n in run.summary["scr"]["per_nic"]}
    assert nic["host 0"]["telemetry"]["samples"] == 50
    # The same samples as a time series: 50 per NIC, every 20 µs; their mean is the summary's.
    t = run.table("scr_telemetry")
    assert t.height == 100 and t["time_ps"].filter(t["node"] == 0).diff().drop_nulls().unique().to_list() == [20_000_000]
    rx = t.filter(pl.col("node") == 1)["port_rx_permille"].mean() / 1000
    assert abs(rx - nic["host 1"]["telemetry"]["port_rx_utilization"]) < 1e-9
    kinds = {k["name"]: k for k in run.summary["scr"]["kinds"]}
    assert kinds["pcie"]["handled"] > 0 and kinds["port"]["handled"] > 0


def test_a_python_policys_rate_of_zero_lifts_only_its_own_limit(tmp_path: Path) -> None:
    # A 10 Gbps rate-limited stream whose policy lifts the dequeue rate (bps 0): the
    # application's limit still holds (a rate of 0 was in force as "unpaced": 100 Gbps).
    s = rnicsim.Scenario.from_file(ROOT / "scenarios" / "scr" / "fig13_static.toml").set("duration", "500us")
    s.set("perftest", [{"name": "w", "test": "write_bw", "client": 0, "server": 1, "message": "64KiB", "depth": 16, "rate_limit": "10Gbps"}])
    s.set("nic.scr", {"hosts": [0], "policy": {"external": {"kinds": ["tx"]}}})

    class Lifts:
        def on_join(self, host, flows, now_ps, line_bps):
            return [("rate", flows[-1], 0)]

    run = s.run(tmp_path / "lifts", scr_policy=Lifts())
    assert run.summary["scr"]["rate_sets"] == 1
    gbps = run.summary["perftest"][0]["wire_gbps"]
    assert 9.0 < gbps < 10.6, gbps


def test_a_python_policy_sets_its_own_timer(tmp_path: Path) -> None:
    # A wake-up every 10 µs from the join on: timer events 10 µs apart, whatever each run costs
    # (Python had no way to ask for one: a policy's deadlines waited for the next packet).
    s = rnicsim.Scenario.from_file(ROOT / "scenarios" / "scr" / "fig13_static.toml").set("duration", "200us")
    s.set("perftest", [{"name": "w", "test": "write_bw", "client": 0, "server": 1, "message": "4KiB", "depth": 1, "rate_limit": "1Gbps"}])
    # (The flow joins at its first TX event; the TX events themselves are ignored, and come
    # seldom enough, one a 33 µs, not to keep the thread busy.)
    s.set("nic.scr", {"hosts": [0], "policy": {"external": {"kinds": ["tx", "timer"], "cycles": 300}}})

    class Ticks:
        def __init__(self) -> None:
            self.at: list[int] = []

        def on_join(self, host, flows, now_ps, line_bps):
            return [("wake", flows[-1], 10_000_000)]

        def on_event(self, host, event, now_ps, line_bps):
            if event["kind"] != "timer":
                return None
            self.at.append(now_ps)
            return [("wake", event["flow"], 10_000_000)]

    t = Ticks()
    s.run(tmp_path / "ticks", scr_policy=t)
    gaps = [b - a for a, b in zip(t.at, t.at[1:])]
    # Each a step after the last, but for a wait behind a TX event's run (300 cycles, 0.59 µs).
    assert len(t.at) > 15 and all(abs(g - 10_000_000) < 600_000 for g in gaps), gaps
    assert abs((t.at[-1] - t.at[0]) / len(gaps) - 10_000_000) < 50_000, gaps

    class Never:
        def on_join(self, host, flows, now_ps, line_bps):
            return [("wake", flows[-1], 0)]

    with pytest.raises(RuntimeError, match="expected a positive delay"):
        s.run(tmp_path / "never", scr_policy=Never())

    class Forever:
        def on_join(self, host, flows, now_ps, line_bps):
            return [("wake", flows[-1], 2**64 - 1)]

    # Past the simulator's range of time (it wrapped into the past).
    with pytest.raises(RuntimeError, match="at most 10\\^18 ps"):
        s.run(tmp_path / "forever", scr_policy=Forever())


def test_a_python_scr_policy_gives_the_same_run_as_its_rust_twin(tmp_path: Path) -> None:
    # SCR Fig. 13's static allocation, once with the Rust policy and once with its Python twin
    # (same costs): the same decisions at the same times, so the same results.
    base = rnicsim.Scenario.from_file(ROOT / "scenarios" / "scr" / "fig13_static.toml").set("duration", "2ms")
    rust = base.run(tmp_path / "rust")
    py = rnicsim.Scenario.from_file(ROOT / "scenarios" / "scr" / "fig13_static.toml").set("duration", "2ms")
    py.set("nic.scr.policy", {"external": {"kinds": ["tx"], "cycles": 150, "set_cycles": 20}})
    twin = py.run(tmp_path / "py", scr_policy=rnicsim.policies.StaticShare())
    a, b = rust.summary, twin.summary
    assert a["perftest"] == b["perftest"]
    assert a["scr"]["kinds"] == b["scr"]["kinds"] and a["scr"]["rate_sets"] == b["scr"]["rate_sets"] > 0
    assert (a["scr"]["policy"], b["scr"]["policy"]) == ("static", "external")
    bw = next(p for p in b["perftest"] if p["name"] == "bw-static")
    assert 49.0 < bw["wire_gbps"] < 51.0
    # The policy's mistakes surface as Python errors; the scenario alone cannot run.
    class Broken:
        def on_join(self, host, flows, now_ps, line_bps):
            return [("teleport", flows[-1])]

    with pytest.raises(RuntimeError, match=r"the SCR policy's on_join \(host \d+\) returned a bad action: unknown SCR action"):
        py.run(tmp_path / "broken", scr_policy=Broken())

    # A signal is one packet: a 100 MB one (which went out as one packet, filled the switch's
    # buffer and stopped both streams) is refused, naming the limit.
    class Shouts:
        def on_join(self, host, flows, now_ps, line_bps):
            return [("signal", flows[-1], 7, 100_000_000)]

    with pytest.raises(RuntimeError, match=r"on_join \(host \d+\) returned a bad action: a signal of 100000000 B: a signal is one packet, at most 4096 B"):
        py.run(tmp_path / "shouts", scr_policy=Shouts())

    class Raises:
        def on_event(self, host, event, now_ps, line_bps):
            raise KeyError("boom")

    # Its own exception, named as the policy's, with the original as the cause (it read as a
    # ScenarioError "boom", the type and the policy lost).
    with pytest.raises(RuntimeError, match=r"on_event \(host \d+\) raised KeyError: 'boom'") as caught:
        py.run(tmp_path / "raises", scr_policy=Raises())
    assert isinstance(caught.value.__cause__, KeyError)
    assert not (tmp_path / "raises").exists()

    # An interrupt raised inside a policy stays an interrupt (not a policy error), and nothing
    # is written.
    class Interrupts:
        calls = 0

        def on_event(self, host, event, now_ps, line_bps):
            Interrupts.calls += 1
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        py.run(tmp_path / "interrupted", scr_policy=Interrupts())
    assert Interrupts.calls == 1 and not (tmp_path / "interrupted").exists()
    with pytest.raises(rnicsim.ScenarioError, match="needs a policy object"):
        py.run(tmp_path / "none")
    assert not (tmp_path / "broken").exists() and not (tmp_path / "none").exists()

    # An exception in start() is the policy's too, its own the cause (a ValueError read as a
    # ScenarioError, its traceback dropped), in a baseline's start as in the run's; a class
    # handed over for an instance is said to be one (found by a helper).
    class StartsOnce:
        started = 0

        def start(self):
            StartsOnce.started += 1
            if StartsOnce.started > 1:
                raise ValueError("second start")

    again = rnicsim.Scenario.from_file(ROOT / "scenarios" / "scr" / "fig13_static.toml").set("duration", "200us")
    again.set("nic.scr.policy", {"external": {"kinds": ["tx"]}})
    again.set("baseline", [{"name": "again", "set": {"duration": "100us"}}])
    with pytest.raises(RuntimeError, match=r"the SCR policy's start\(\) raised ValueError: second start") as caught:
        again.run(tmp_path / "starts", scr_policy=StartsOnce())
    assert isinstance(caught.value.__cause__, ValueError) and StartsOnce.started == 2, "failed in the baseline's start"
    assert not (tmp_path / "starts").exists()
    with pytest.raises(TypeError, match=r"scr_policy is the class StaticShare, not a policy: pass an instance"):
        py.run(tmp_path / "class", scr_policy=rnicsim.policies.StaticShare)


def test_a_python_scr_policy_decides_for_every_run_as_its_rust_twin_does(tmp_path: Path) -> None:
    # Three flows on 100 Gbps (the bandwidth test on two queue pairs): Rust rounds each share
    # up to 33,334 Mbps and the twin rounded it down; and a [[baseline]] ran with no policy at
    # all (98.98 Gbps for the bandwidth test where the main run had 66.7), with no word.
    def scenario() -> rnicsim.Scenario:
        s = rnicsim.Scenario.from_file(ROOT / "scenarios" / "scr" / "fig13_static.toml").set("duration", "1500us")
        s.set("perftest.1.qps", 2)
        s.set("baseline", [{"name": "again", "set": {"seed": 1}}])
        return s

    rust = scenario().run(tmp_path / "rust")
    py = scenario().set("nic.scr.policy", {"external": {"kinds": ["tx"], "cycles": 150, "set_cycles": 20}})
    policy = rnicsim.policies.StaticShare()
    twin = py.run(tmp_path / "py", scr_policy=policy)
    a, b = rust.summary, twin.summary
    assert a["perftest"] == b["perftest"]
    assert a["scr"]["rate_sets"] == b["scr"]["rate_sets"] > 0
    assert (tmp_path / "rust" / "flows.parquet").read_bytes() == (tmp_path / "py" / "flows.parquet").read_bytes()
    # The baseline, the same run again, took the same policy object and its decisions.
    assert a["baselines"][0]["perftest"] == b["baselines"][0]["perftest"] == a["perftest"]
    assert b["baselines"][0]["scr"]["rate_sets"] == b["scr"]["rate_sets"]
    # The same object for another run starts afresh (its rates cache skipped the new run's
    # first decisions: 99.5 Gbps for the bandwidth test).
    again = py.run(tmp_path / "py-again", scr_policy=policy)
    assert again.summary["perftest"] == b["perftest"]


def test_bad_scr_policy_actions_are_refused_by_shape(tmp_path: Path) -> None:
    s = rnicsim.Scenario.from_file(ROOT / "scenarios" / "scr" / "fig13_static.toml").set("duration", "200us")
    s.set("nic.scr.policy", {"external": {}})
    for action, says in [
        (("rate", 0, 10**9, 7), r'a \"rate\" action has 3 items, got 4'),
        (("rate", 0, True), r"is a bool, not a number"),
        ("rate", r"an action is a tuple such as"),
        ({"rate": 1}, r"an action is a tuple such as"),
    ]:
        class Policy:
            def on_join(self, host, flows, now_ps, line_bps, action=action):
                return [action]

        with pytest.raises(RuntimeError, match=says):
            s.run(tmp_path / "bad", scr_policy=Policy())
        assert not (tmp_path / "bad").exists()


def test_errors_name_the_files_own_line_and_set_names_its_key(tmp_path: Path) -> None:
    # The scenario goes to the simulator as the user wrote it, so an error's line is the file's
    # (the command line's), not a line of a regenerated document; a bad `.set()` is named as such.
    text = QUICKSTART.read_text().replace("hosts_per_leaf", "host_per_leaf")
    bad = tmp_path / "typo.toml"
    bad.write_text(text)
    line = next(i for i, l in enumerate(text.splitlines(), 1) if l.startswith("host_per_leaf"))
    with pytest.raises(rnicsim.ScenarioError, match=rf"typo.toml:{line}:1: key `topology.leaf_spine.host_per_leaf`"):
        rnicsim.Scenario.from_file(bad).validate()
    cli = subprocess.run([sys.executable, "-m", "rnicsim", "validate", str(bad)], capture_output=True, text=True)
    assert f"typo.toml:{line}:1" in cli.stderr
    with pytest.raises(rnicsim.ScenarioError, match=r"^\.set\(\): key `links.rat`: unknown field"):
        rnicsim.Scenario.from_file(QUICKSTART).set("links.rat", "25Gbps").validate()
    # Edited by hand rather than by `.set()`: said so, not blamed on the file's lines.
    s = rnicsim.Scenario.from_file(QUICKSTART)
    s.data["links"]["rat"] = 1
    with pytest.raises(rnicsim.ScenarioError, match=r"as edited in Python"):
        s.validate()


def test_set_addresses_keys_as_the_command_line_does(tmp_path: Path) -> None:
    # List entries both ways, and a key of another congestion control switches the kind.
    a = rnicsim.Scenario.from_file(QUICKSTART).set("flows[0].load", 0.3)
    b = rnicsim.Scenario.from_file(QUICKSTART).set("flows.0.load", 0.3)
    assert a.data == b.data and a.data["flows"][0]["load"] == 0.3
    s = rnicsim.Scenario.from_file(QUICKSTART).set("nic.cc.hpcc.eta", 0.9)
    assert s.data["nic"]["cc"] == {"hpcc": {"eta": 0.9}}
    assert "[nic.cc.hpcc]" in s.validate()
    with pytest.raises(rnicsim.ScenarioError, match=r"\.set\(\): key `flows\[0\]\.load`: expected a fraction"):
        rnicsim.Scenario.from_file(QUICKSTART).set("flows.0.load", -1.0).validate()
    # The command line takes the dotted index too.
    cli = subprocess.run(
        [sys.executable, "-m", "rnicsim", "run", str(QUICKSTART), "--set", "flows.0.load=0.3", "--set", 'duration="20us"', "--out", str(tmp_path / "c"), "--quiet"],
        capture_output=True,
        text=True,
    )
    assert cli.returncode == 0, cli.stderr


def test_query_refuses_a_folder_that_is_not_a_run(tmp_path: Path) -> None:
    for d, why in [(tmp_path / "nope", "no such folder"), (tmp_path, "not a complete run")]:
        out = subprocess.run([sys.executable, "-m", "rnicsim", "query", str(d), "SELECT 1"], capture_output=True, text=True)
        assert out.returncode == 2 and why in out.stderr, out.stderr


def test_query_help_is_help(tmp_path: Path) -> None:
    # `query --help` printed a usage line and exited with status 2, as for a mistake.
    out = subprocess.run([sys.executable, "-m", "rnicsim", "query", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "RUN_DIR" in out.stdout and "DuckDB" in out.stdout, out
    out = subprocess.run([sys.executable, "-m", "rnicsim", "query", str(tmp_path)], capture_output=True, text=True)
    assert out.returncode == 2 and "SQL" in out.stderr, out


def test_the_rust_binary_says_how_to_reach_the_python_package(tmp_path: Path) -> None:
    exe = ROOT / "target" / "debug" / "rnicsim"
    if not exe.exists():
        pytest.skip("the Rust binary is built by `cargo test` (scripts/test.sh runs it first)")
    # A Python without the package (a bare interpreter with no site-packages of ours).
    bare = tmp_path / "python"
    bare.write_text(f"#!/bin/sh\nexec {sys.executable} -I -S \"$@\"\n")
    bare.chmod(0o755)
    env = {k: v for k, v in __import__("os").environ.items() if k != "VIRTUAL_ENV"} | {"RNICSIM_PYTHON": str(bare)}
    out = subprocess.run([str(exe), "query", str(tmp_path), "SELECT 1"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.returncode != 0
    assert "cannot import rnicsim" in out.stderr and "RNICSIM_PYTHON" in out.stderr, out.stderr


def test_query_keeps_the_sql_types_of_its_result(tmp_path: Path) -> None:
    # A loaded, short run: many flows are still unfinished (finish_ps NULL) when it ends.
    run = rnicsim.run(QUICKSTART, out=tmp_path / "r", progress=False, duration="200us", flows__0__load=0.9)
    unfinished = run.flows.filter(pl.col("finish_ps").is_null()).height
    assert unfinished > 100, "the test needs more NULLs than polars' row inference looks at"
    q = run.query("SELECT flow, finish_ps FROM flows ORDER BY finish_ps NULLS FIRST")
    assert q["finish_ps"].null_count() == unfinished
    assert q.schema == run.flows.select("flow", "finish_ps").schema, "u32 stays u32, u64 u64"
    empty = run.query("SELECT slowdown FROM flows WHERE size < 0")
    assert empty.height == 0 and empty.schema == {"slowdown": pl.Float64}
    # Columns named alike are renamed as DuckDB renames them, not refused.
    twice = run.query("SELECT size, size FROM flows LIMIT 3")
    assert twice.columns == ["size", "size_1"] and twice["size"].equals(twice["size_1"], check_names=False)


TINY = 'duration = "20us"\n[topology.star]\nhosts = 3\n[[perftest]]\ntest = "write_bw"\nclient = 0\nserver = 2\nmessage = "4KiB"\n'


def test_a_byte_order_mark_is_dropped_as_the_command_line_drops_it(tmp_path: Path) -> None:
    from rnicsim.sweep import load

    f = tmp_path / "bom.toml"
    f.write_bytes(b"\xef\xbb\xbf" + TINY.encode())
    api = rnicsim.Scenario.from_file(f).run(tmp_path / "api", progress=False)
    cli = subprocess.run([sys.executable, "-m", "rnicsim", "run", str(f), "--out", str(tmp_path / "cli"), "--quiet"], capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    assert files(api.path) == files(tmp_path / "cli")
    # A sweep file with a byte order mark reads too.
    sweep = tmp_path / "sweep.toml"
    sweep.write_bytes(b"\xef\xbb\xbf" + b'scenario = "bom.toml"\nseeds = [1, 2]\n')
    assert [p["seed"] for p in load(sweep)[1]] == [1, 2]


def test_a_run_folder_with_a_quote_in_its_path_is_queryable(tmp_path: Path) -> None:
    run = rnicsim.Scenario.from_toml(TINY).run(tmp_path / "Bob's runs" / "it's", progress=False)
    assert run.query("SELECT count(*) AS n FROM perftest")["n"][0] == run.perftest.height == 1
    assert run.connect().sql("SELECT count(*) FROM counters").fetchall()[0][0] == run.counters.height
    out = subprocess.run([sys.executable, "-m", "rnicsim", "query", str(run.path), "SELECT count(*) AS n FROM perftest"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_get_reads_every_key_set_writes() -> None:
    s = rnicsim.Scenario.from_toml(TINY + '[[perftest]]\ntest = "read_bw"\nclient = 1\nserver = 2\nmessage = "1MiB"\n')
    for key, value in [("perftest[1].message", "2MiB"), ("perftest.0.message", "8KiB"), ("topology.star.hosts", 4), ("nic.cc.hpcc.eta", 0.9)]:
        s.set(key, value)
        assert s.get(key) == value, key
    assert s.get("perftest[1].test") == s.get("perftest.1.test") == "read_bw"
    # Keys that are not there give the default, as before.
    assert s.get("perftest[2].message", "none") == "none"
    assert s.get("topology.star.hosts.x") is None and s.get("links.rate") is None


def test_run_with_overrides_leaves_the_callers_scenario_as_it_was(tmp_path: Path) -> None:
    s = rnicsim.Scenario.from_toml("seed = 1\n" + TINY)
    before = copy.deepcopy(s.data)
    assert rnicsim.run(s, out=tmp_path / "a", progress=False, seed=7).summary["seed"] == 7
    assert s.data == before and s.get("seed") == 1
    assert rnicsim.run(s, out=tmp_path / "b", progress=False).summary["seed"] == 1


def test_the_default_output_folder_is_the_command_lines_and_stays_in_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "mine.toml"
    f.write_text('name = "other"\n' + TINY)
    monkeypatch.chdir(tmp_path)
    cli = subprocess.run([sys.executable, "-m", "rnicsim", "run", str(f), "--quiet"], capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["mine"], "the command line names it by the file"
    api = rnicsim.Scenario.from_file(f).run(progress=False, force=True)
    assert api.path == Path("runs") / "mine"
    # Not from a file: by its name, as one folder inside runs/.
    for name in ("../escaped", "a/b", ".."):
        run = rnicsim.Scenario.from_toml(f"name = {name!r}\n" + TINY).run(progress=False)
        assert run.path.parent == Path("runs") and run.path.name not in ("", ".", ".."), run.path
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.toml", "runs"]


def test_an_existing_output_folder_is_refused_naming_the_python_argument(tmp_path: Path) -> None:
    s = rnicsim.Scenario.from_toml(TINY)
    s.run(tmp_path / "r", progress=False)
    with pytest.raises(OSError, match=r"exists and is not empty \(use force=True to replace a previous run\)") as e:
        s.run(tmp_path / "r", progress=False)
    assert "--force" not in str(e.value)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("not a run")
    with pytest.raises(OSError, match=r"force=True replaces only runs") as e:
        s.run(tmp_path / "mine", progress=False, force=True)
    assert "--force" not in str(e.value)
    assert s.run(tmp_path / "r", progress=False, force=True).path == tmp_path / "r"


@pytest.mark.parametrize(
    "sets,progress",
    [
        ("set('duration', '50ms')", False),
        # The scenario's own run ends at once and the signal comes during its baseline, which
        # ran on to its end and was saved; the bar names the baseline it shows.
        ("set('duration', '1us').set('baseline', [{'name': 'long', 'set': {'duration': '50ms'}}])", True),
    ],
)
def test_sigterm_during_a_run_leaves_no_partial_folder_and_exits_143(tmp_path: Path, sets: str, progress: bool) -> None:
    import os
    import signal
    import time

    # A run of several seconds in a child Python: SIGTERM once its partial folder exists. (It
    # killed the interpreter on the spot, leaving `.out.partial-<pid>` behind.)
    code = f"import rnicsim; rnicsim.Scenario.from_file({str(QUICKSTART)!r}).{sets}.run({str(tmp_path / 'out')!r}, progress={progress})"
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True, preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None and not any(p.name.startswith(".out.partial") for p in tmp_path.iterdir()):
        time.sleep(0.02)
    assert proc.poll() is None, "the run ended before it could be stopped"
    time.sleep(0.2)
    os.kill(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert list(tmp_path.iterdir()) == [], "nothing half-written"
    assert not progress or "baseline 1" in err, err


def test_a_toml_syntax_error_names_file_line_and_key_as_the_cli_does(tmp_path: Path) -> None:
    # Python's parser said "Cannot overwrite a value (at line 2, column 11)", naming no key.
    bad = tmp_path / "dup.toml"
    bad.write_text('name = "a"\nname = "b"\nduration = "1us"\n[topology.star]\nhosts = 2\n')
    with pytest.raises(rnicsim.ScenarioError) as e:
        rnicsim.Scenario.from_file(bad)
    cli = subprocess.run([sys.executable, "-m", "rnicsim", "validate", str(bad)], capture_output=True, text=True)
    assert "dup.toml:2" in str(e.value) and "`name`" in str(e.value), str(e.value)
    assert str(e.value).split(": ", 1)[1] in cli.stderr, (str(e.value), cli.stderr)


def test_an_ns3_config_is_pointed_to_the_command_line_not_read_as_bad_toml() -> None:
    config = Path(__file__).resolve().parents[2] / "scenarios" / "ns3" / "fbhdp50-dcqcn" / "config.txt"
    with pytest.raises(rnicsim.ScenarioError, match=r"an ns-3 config .*python -m rnicsim run"):
        rnicsim.Scenario.from_file(config)
    # TOML whose first key is in capitals is still TOML.
    assert rnicsim.Scenario.from_toml('NAME = "x"\nduration = "1us"\n').get("NAME") == "x"


def test_get_refuses_a_malformed_key_as_set_does() -> None:
    # `flows[0]x.load` read as `flows[0].load` and `links..rate` as `links.rate` (found by a helper).
    s = rnicsim.Scenario.from_toml(TINY)
    for key in ["perftest[0]x.message", "perftest..message", "perftest[0", ""]:
        with pytest.raises(rnicsim.ScenarioError, match=r"key path|expected a key path"):
            s.get(key)
        with pytest.raises(rnicsim.ScenarioError):
            s.set(key, "8KiB")
    assert s.get("perftest[0].message") == s.get('"perftest"[0]."message"') == "4KiB"


def test_set_takes_numpy_scalars_and_paths_and_names_what_toml_cannot_hold(tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    s = rnicsim.Scenario.from_toml(TINY).set("seed", np.int64(3)).set("perftest[0].qps", np.uint8(2)).set("name", tmp_path / "x")
    assert (s.get("seed"), s.get("perftest[0].qps"), s.get("name")) == (3, 2, str(tmp_path / "x"))
    assert type(s.get("seed")) is int and "seed = 3" in s.validate()
    assert rnicsim.Scenario.from_dict({"seed": np.int32(5), "duration": "20us", "topology": {"star": {"hosts": 2}}}).get("seed") == 5
    for value, said in [(None, "None has no TOML value"), (2**64, "outside the integers TOML holds"), (object(), "got object"), ({1: 2}, "keys are strings")]:
        with pytest.raises(rnicsim.ScenarioError, match=rf"^key `seed`: .*{said}"):
            rnicsim.Scenario.from_toml(TINY).set("seed", value)


def test_the_analysis_modules_are_attributes_of_the_package() -> None:
    import importlib

    assert rnicsim.report.write_report is importlib.import_module("rnicsim.report").write_report
    assert callable(rnicsim.reproduce.reproduce) and callable(rnicsim.sweep.run_sweep)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        rnicsim.nope  # noqa: B018


def test_a_scenario_warning_points_at_the_callers_line(tmp_path: Path) -> None:
    import warnings

    # (An SCR strategy for a kind the policy does not take: a warning, kept in the summary.)
    text = TINY + '[nic.scr]\nhosts = [0]\n[nic.scr.policy.static]\n[nic.scr.strategy]\nrtt = "keep_oldest"\n'
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        rnicsim.run(rnicsim.Scenario.from_toml(text), out=tmp_path / "r", progress=False)
        line = sys._getframe().f_lineno - 1
    mine = [w for w in seen if issubclass(w.category, rnicsim.ScenarioWarning)]
    assert mine, [str(w.message) for w in seen]
    assert all((w.filename, w.lineno) == (__file__, line) for w in mine), [(w.filename, w.lineno) for w in mine]


def test_the_baseline_bar_is_labelled_as_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    from rnicsim.api import _progress

    update, close = _progress(True, ("ecmp", "drill"))
    update(5, 10, 100, None, 1)
    close()
    assert "baseline 2/2 drill" in capsys.readouterr().err


def test_a_damaged_run_file_is_named(tmp_path: Path) -> None:
    run = rnicsim.Scenario.from_toml(TINY).run(tmp_path / "r", progress=False)
    (run.path / "summary.json").write_text('{"cut": ')
    with pytest.raises(rnicsim.DamagedRunError, match=r"summary.json: not valid JSON"):
        run.summary
    out = subprocess.run([sys.executable, "-m", "rnicsim", "query", str(run.path), "SELECT 1"], capture_output=True, text=True)
    assert out.returncode == 2 and "summary.json: not valid JSON" in out.stderr and "Traceback" not in out.stderr, out.stderr
    (run.path / "perftest.parquet").write_bytes(b"PAR1 half")
    with pytest.raises(rnicsim.DamagedRunError, match=r"perftest.parquet: not a readable Parquet"):
        run.perftest
    # A report that fails leaves no folder it made, nor its work folder.
    rep = subprocess.run([sys.executable, "-m", "rnicsim", "report", str(run.path), "--out", str(tmp_path / "a" / "b" / "rep")], capture_output=True, text=True)
    assert rep.returncode == 2 and "summary.json" in rep.stderr and "Traceback" not in rep.stderr, rep.stderr
    assert not (tmp_path / "a").exists()


def test_query_prints_every_row_as_csv_or_as_many_as_asked(tmp_path: Path) -> None:
    run = rnicsim.Scenario.from_toml(TINY).run(tmp_path / "r", progress=False)
    sql = "SELECT range AS n, range * 2 AS twice FROM range(50)"
    csv = subprocess.run([sys.executable, "-m", "rnicsim", "query", str(run.path), sql, "--csv"], capture_output=True, text=True)
    assert csv.returncode == 0, csv.stderr
    lines = csv.stdout.splitlines()
    assert lines[0] == "n,twice" and len(lines) == 51 and lines[-1] == "49,98"
    table = subprocess.run([sys.executable, "-m", "rnicsim", "query", str(run.path), sql, "--rows", "50"], capture_output=True, text=True)
    assert table.returncode == 0 and all(f"│ {n:>5} │" in table.stdout or f" {n} " in table.stdout for n in (25, 26)), table.stdout
    short = subprocess.run([sys.executable, "-m", "rnicsim", "query", str(run.path), sql], capture_output=True, text=True)
    assert " 25 " not in short.stdout, "DuckDB's default shows the first and last rows only"


def test_a_query_of_a_table_the_run_did_not_write_says_what_writes_it(tmp_path: Path) -> None:
    # DuckDB's own words suggested a catalog table ("Did you mean pg_indexes?") (found by a helper).
    import duckdb

    run = rnicsim.run(QUICKSTART, out=tmp_path / "r", progress=False, duration="50us")
    with pytest.raises(duckdb.CatalogException, match=r"no nic_events table \(a run writes it only with outputs.nic_events = true\); its tables are counters, flows"):
        run.query("SELECT * FROM nic_events")
    with pytest.raises(duckdb.CatalogException, match="there is no table flowz; this run's tables are"):
        run.query("SELECT count(*) FROM flowz")
    cli = subprocess.run([sys.executable, "-m", "rnicsim", "query", str(run.path), "SELECT * FROM scr_rates"], capture_output=True, text=True)
    assert cli.returncode == 2 and "this run has no scr_rates table (a run writes it only with [nic.scr])" in cli.stderr, cli.stderr


def test_resolved_gives_the_value_a_run_uses_and_names_a_misspelt_key() -> None:
    # `get` gives None for a default and for a misspelt key alike (found by a helper).
    s = rnicsim.Scenario.from_file(QUICKSTART)
    assert s.get("nic.retry_count") is None and s.resolved("nic.retry_count") == 7
    assert s.set("nic.retry_count", 3).resolved("nic.retry_count") == 3
    assert s.resolved("flows.0.load") == s.get("flows[0].load")
    with pytest.raises(KeyError, match=r"no 'mtuu' under nic \(it has .*\bmtu\b.*\): misspelt"):
        s.resolved("nic.mtuu")
    with pytest.raises(KeyError, match=r"no 7 under flows"):
        s.resolved("flows[7].load")


def test_a_run_folder_that_does_not_exist_is_named_as_such(tmp_path: Path) -> None:
    # It read "not a complete run (no summary.json)" for a path that is not there at all.
    with pytest.raises(FileNotFoundError, match=r"nope: no such folder$"):
        rnicsim.open_run(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"empty is not a complete run \(no summary.json\)$"):
        rnicsim.open_run(tmp_path / "empty")
    out = subprocess.run([sys.executable, "-m", "rnicsim", "report", str(tmp_path / "nope")], capture_output=True, text=True)
    assert out.returncode == 2 and "nope: no such folder" in out.stderr, out.stderr


def test_errors_of_a_scenario_made_in_python_name_no_line_of_text_never_seen(tmp_path: Path) -> None:
    # `<python>:4:1: key ...` pointed at a line of TOML written for the simulator (found by a helper).
    s = rnicsim.Scenario.from_dict({"duration": "1ms", "topology": {"star": {"hosts": 2}}, "links": {"rate": "fast"}})
    with pytest.raises(rnicsim.ScenarioError, match=r'^<python>: key `links.rate`: expected a rate such as "100Gbps", got "fast"$'):
        s.validate()
    edited = rnicsim.Scenario.from_file(QUICKSTART)
    edited.data["links"]["rate"] = "x"
    with pytest.raises(rnicsim.ScenarioError, match=r"quickstart.toml \(as edited in Python\): key `links.rate`"):
        edited.validate()
    # A file's own lines are kept.
    bad = tmp_path / "badline.toml"
    bad.write_text('duration = "1ms"\n[topology.star]\nhosts = 2\n[links]\nrate = "fast"\n')
    with pytest.raises(rnicsim.ScenarioError, match=r"badline.toml:5:8: key `links.rate`"):
        rnicsim.Scenario.from_file(bad).validate()


def test_a_run_folder_is_read_literally_and_one_damaged_table_leaves_the_others(tmp_path: Path) -> None:
    # A run in `g[1]/` beside another in `g1/`: DuckDB and polars took `[1]` for a pattern and
    # read g1's tables (found by a helper).
    import shutil

    import duckdb

    from rnicsim.query import DamagedTableWarning, connect

    a = rnicsim.run(QUICKSTART, out=tmp_path / "g[1]" / "r", progress=False, duration="60us", seed=1)
    b = rnicsim.run(QUICKSTART, out=tmp_path / "g1" / "r", progress=False, duration="120us", seed=2)
    n = a.query("SELECT count(*) AS n FROM flows")["n"][0]
    assert n == a.flows.height != b.flows.height
    assert rnicsim.open_run(tmp_path / "g[1]" / "r").counters.equals(a.counters)
    # A file that is no table of a run is left alone, a truncated one is warned of, and the
    # other tables still answer (one bad file made every query fail).
    c = tmp_path / "c"
    shutil.copytree(tmp_path / "g1" / "r", c)
    shutil.copy(c / "flows.parquet", c / "flows (copy).parquet")
    (c / "flows.parquet").write_bytes((c / "flows.parquet").read_bytes()[:40])
    with pytest.warns(DamagedTableWarning, match=r"flows\.parquet: not a readable Parquet table"):
        con = connect(c)
    assert con.execute("SELECT count(*) FROM counters").fetchone()[0] == b.counters.height
    with pytest.raises(duckdb.CatalogException):
        con.execute("SELECT * FROM flows")
