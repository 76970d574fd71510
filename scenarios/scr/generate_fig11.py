"""Writes SCR Fig. 11's scenarios: two tenants on one client, every pair of message sizes.

Fig. 11 ("Enhancing fairness and utilization in QP scheduling") maps Jain's index and the
link's utilization over the two tenants' message sizes (256 B to 1 MB) for the default
scheduler, static allocation and water filling. Here each pair of sizes is an independent
client/server pair on one switch; `fig11.toml` runs every pair twice, once on plain NICs (the
default scheduler) and once with SCR's water filling on the client (`nic.scr.hosts`), so its
claims compare the two in one run; `fig11_static.toml` runs every pair under static allocation.

Run: python3 scenarios/scr/generate_fig11.py (from the repository root).
"""

SIZES = [("256B", "256B"), ("4KB", "4KiB"), ("64KB", "64KiB"), ("256KB", "256KiB"), ("1MB", "1MiB")]

HEAD = """# SCR Fig. 11 ("Enhancing fairness and utilization in QP scheduling"){title}.
# Written by generate_fig11.py. Two tenants share one client's NIC: WRITE streams of message
# sizes a and b (256 B to 1 MB, depth 128 each). Each pair of sizes is its own client/server
# pair on one switch; `perftest_hosts/host <client>/jain_tests` is the pair's Jain index over the
# two tenants' goodput, `gbps` their sum (utilization).
{what}
# Run: rnicsim run scenarios/scr/{file}
name = "{name}"
duration = "3ms"

[topology.star]
hosts = {hosts}

[links]
rate = "100Gbps"
delay = "100ns"

[switch.pfc]
enabled = true

[nic]
mtu = 4096
# perftest copies small messages into the WQE (inline), skipping the payload DMA read.
inline_bytes = 256

[nic.cc.dcqcn]

[nic.scheduler.commodity]
turn_bytes = "32KiB"

[nic.scr]
hosts = [{scr_hosts}]

[nic.scr.policy.{policy}]
"""


def pairs():
    return [(a, b) for i, a in enumerate(SIZES) for b in SIZES[i:]]


def tenants(tag, client, a, b):
    out = ""
    for t, (label, size) in (("a", a), ("b", b)):
        out += f"""
[[perftest]]
name = "{tag} {a[0]}-{b[0]} {t}"
test = "write_bw"
client = {client}
server = {client + 1}
message = "{size}"
depth = 128
warmup = "1ms"
"""
    return out


def write(file, name, title, what, groups, policy, claims):
    hosts, scr, body = 0, [], ""
    for tag, controlled in groups:
        for a, b in pairs():
            if controlled:
                scr.append(hosts)
            body += tenants(tag, hosts, a, b)
            hosts += 2
    text = HEAD.format(title=title, what=what, file=file, name=name, hosts=hosts, scr_hosts=", ".join(map(str, scr)), policy=policy) + body + claims(hosts)
    with open(f"scenarios/scr/{file}", "w") as f:
        f.write(text)


def host_of(group, a, b):
    """The client host of pair (a, b) in group `group` (0: first group)."""
    return 2 * (group * len(pairs()) + pairs().index((a, b)))


def claims_wf(_hosts):
    small, big = SIZES[1], SIZES[4]
    d, w = host_of(0, small, big), host_of(1, small, big)
    diag = host_of(1, SIZES[2], SIZES[2])
    out = f"""
[[paper]]
metric = "perftest_hosts/host {w}/jain_tests"
per = "perftest_hosts/host {d}/jain_tests"
value = 1.78
source = "SCR Fig. 11: water filling's fairness over the default's, 4 KB vs 1 MB tenants (up to 1.78x)"
unit = "x"

[[paper]]
metric = "perftest_hosts/host {w}/jain_tests"
value = 1.0
tolerance = 0.05
source = "SCR Fig. 11c: water filling is about as fair as static (Jain ~1)"

[[paper]]
metric = "perftest_hosts/host {w}/gbps"
per = "perftest_hosts/host {d}/gbps"
value = 1.0
tolerance = 0.05
source = "SCR Fig. 11f: water filling keeps the default's utilization"
unit = "x"

[[paper]]
metric = "perftest_hosts/host {diag}/jain_tests"
value = 1.0
tolerance = 0.05
source = "SCR Fig. 11a: equal sizes are shared fairly (the diagonal)"
"""
    out += figure("water filling", "paper: water filling ~1, 1.78x the default at 1 MB")
    return out



def figure(label, paper):
    """Fig. 11 as a line: Jain's index against the second tenant's size, the first at 4 KB."""
    xs = list(range(1, len(SIZES)))
    row = [(SIZES[1], b) for b in SIZES[1:]]
    return f"""
[[figure]]
title = "SCR Fig. 11a/c: fairness of a 4 KB tenant beside another"
x_label = "other tenant's message size (1: 4 KB, 2: 64 KB, 3: 256 KB, 4: 1 MB)"
y_label = "Jain's index of the two tenants"

[[figure.series]]
label = "ours (default scheduler)"
x = {xs}
metrics = [{", ".join(f'"perftest_hosts/host {host_of(0, a, b)}/jain_tests"' for a, b in row)}]

[[figure.series]]
label = "ours ({label})"
x = {xs}
metrics = [{", ".join(f'"perftest_hosts/host {host_of(1, a, b)}/jain_tests"' for a, b in row)}]

[[figure.paper]]
label = "{paper}"
x = [1, 4]
y = [1.0, 1.0]
"""

def claims_static(_hosts):
    d, st = host_of(0, SIZES[0], SIZES[4]), host_of(1, SIZES[0], SIZES[4])
    return f"""
[[paper]]
metric = "perftest_hosts/host {host_of(1, SIZES[1], SIZES[4])}/jain_tests"
value = 1.0
tolerance = 0.05
source = "SCR Fig. 11b: static gives each tenant 1/n, the fairest"

[[paper]]
metric = "perftest_hosts/host {st}/gbps"
per = "perftest_hosts/host {d}/gbps"
value = 1.0
relation = "below"
source = "SCR Fig. 11e: static underuses the link when a 256 B tenant cannot fill its half beside a 1 MB one (utilization over the default's)"
unit = "x"
""" + figure("static", "paper: static the fairest (Fig. 11b)")


write("fig11.toml", "scr-fig11", ": the default scheduler beside water filling",
      "# Group 1 (hosts 0-29) runs on plain NICs (the default scheduler), group 2 (hosts 30-59) with\n"
      "# water filling on the client. Paper (§6.2): water filling is as fair as static while keeping\n"
      "# utilization; up to 1.78x the default's fairness (4 KB vs 1 MB).",
      [("default", False), ("wf", True)], "water_filling", claims_wf)
write("fig11_static.toml", "scr-fig11-static", ": the default scheduler beside static allocation",
      "# Group 1 (hosts 0-29) runs on plain NICs (the default scheduler), group 2 (hosts 30-59) with\n"
      "# static allocation on the client. Paper (§6.2): static is the fairest, but a bandwidth-hungry\n"
      "# tenant beside a small-message one is held at its 50 Gbps budget the other cannot use, so\n"
      "# utilization suffers.",
      [("default", False), ("static", True)], "static", claims_static)
