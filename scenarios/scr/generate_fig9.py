"""Writes SCR Fig. 9's scenarios: eight bandwidth-hungry queue pairs joining one by one under
three water-filling join strategies (fig9a_halve_start_low, fig9b_scale_start_low,
fig9c_scale_start_share).

Fig. 9 starts the flows 50 ms apart; here they start 300 µs apart (our flows settle within a
few hundred microseconds, so the longer gap only adds idle time). Message sizes 4 KB to 512 KB,
depth 4 (A.4's set, as in Table 5). Every test is measured over the same window, once all
eight run: Jain's index over them is `perftest_hosts/host 0/jain_tests`, and the last rate
change (`scr/last_rate_set_us`) less the last join (2.1 ms) is the convergence after it.

Run: python3 scenarios/scr/generate_fig9.py (from the repository root).
"""

SIZES = ["4KiB", "8KiB", "16KiB", "32KiB", "64KiB", "128KiB", "256KiB", "512KiB"]
GAP_US = 300
MEASURE_FROM_US = 2700  # after the last join (2.1 ms) has settled
STRATEGIES = [
    ("a", "halve_start_low", "existing flows halve, the new one starts at 0.5 Gbps"),
    ("b", "scale_start_low", "existing flows scale to (n-1)/n, the new one starts at 0.5 Gbps"),
    ("c", "scale_start_share", "existing flows scale to (n-1)/n, the new one starts at 1/n of the line rate (SCR's)"),
]

for letter, join, what in STRATEGIES:
    name = f"fig9{letter}_{join}"
    text = f"""# SCR Fig. 9{letter} (§5.1): water filling with eight bandwidth-hungry queue pairs joining one by
# one, join strategy `{join}`: {what}.
# Written by generate_fig9.py; its docstring gives the setup. Paper: SCR's strategy (9c) is
# efficient in both fairness and convergence time; `tests/scr.rs` compares the three files.
# Run: rnicsim run scenarios/scr/{name}.toml
name = "scr-{name.replace('_', '-')}"
duration = "3500us"

[topology.star]
hosts = 2

[links]
rate = "100Gbps"
delay = "100ns"

[switch.pfc]
enabled = true

[nic]
mtu = 1024

[nic.cc.dcqcn]

[nic.scheduler.commodity]
turn_bytes = "32KiB"

[nic.scr.policy.water_filling]
start_rate = "0.5Gbps"
join = "{join}"
min_rate = "0.1Gbps"
"""
    for k, size in enumerate(SIZES):
        start = k * GAP_US
        text += f"""
[[perftest]]
name = "{size.replace('KiB', 'KB')}"
test = "write_bw"
client = 0
server = 1
message = "{size}"
depth = 4
start = "{start}us"
warmup = "{MEASURE_FROM_US - start}us"
"""
    # The trace (scr_rates.parquet) on Fig. 9's axes, with the max-min fair share (line rate
    # over the flows running) just before each join, where every flow should have settled.
    xs = ", ".join(str((k + 1) * GAP_US - 20) for k in range(len(SIZES)))
    ys = ", ".join(f"{100 / (k + 1):.2f}" for k in range(len(SIZES)))
    text += f"""
[[figure]]
title = "SCR Fig. 9{letter}: dequeue rates, eight flows joining {GAP_US} µs apart ({join})"
x_label = "time (µs)"
y_label = "dequeue rate (Gbps)"
trace = "scr_rates"
[[figure.paper]]
label = "fair share: line rate / flows running"
x = [{xs}]
y = [{ys}]
"""
    if letter == "c":
        # The paper plots traces; its text claims fairness for SCR's strategy (9c) only.
        text += """
[[paper]]
metric = "perftest_hosts/host 0/jain_tests"
value = 1.0
tolerance = 0.05
source = "SCR Fig. 9c: SCR's join strategy ends the eight flows fair"
"""
    with open(f"scenarios/scr/{name}.toml", "w") as f:
        f.write(text)
