"""SCR policies written in Python, for prototyping (``[nic.scr.policy.external]``).

A policy is any object with some of these methods; each returns an iterable of actions (or
None). ``host`` is the NIC's host node id, ``flows`` the NIC's live flows (queue pairs) in the
order they joined, times are integer picoseconds and rates bits per second:

- ``start()``: a run begins (the main run, then each ``[[baseline]]`` run, which gets the same
  object): forget what the last run left;
- ``on_join(host, flows, now_ps, line_bps)``: a flow appeared (the newest is ``flows[-1]``);
- ``on_leave(host, flow, flows, now_ps, line_bps)``: ``flow`` closed;
- ``on_event(host, event, now_ps, line_bps)``: one (possibly coalesced) event, a dict with
  ``flow``, ``kind`` (``tx``, ``rx``, ``ack``, ``nack``, ``cnp``, ``rtt``, ``peer``, ``timer``,
  ``host``, and the node-level telemetry ``pcie`` and ``port``), ``at_ps``, ``first_at_ps``,
  ``bytes``, ``count``, ``rtt_ps``, ``value`` and ``aux`` (an ``rx`` event's ``value`` is the
  ECN-marked packets among the ``count`` it stands for). A telemetry event (``nic.scr.telemetry``)
  has the flow 2³²−1; ``pcie`` carries the host → NIC utilization in per mille as ``value``,
  NIC → host as ``aux`` and the ping-pong's round trip as ``rtt_ps``; ``port`` the transmit and
  receive utilization in per mille as ``value`` and ``aux``.

Actions: ``("rate", flow, bps)`` (``bps`` 0 lifts the dequeue rate: no limit), ``("sport",
flow, port)``, ``("probe_rtt", flow)``, ``("probe_path", flow, port)``, ``("signal", flow,
value, bytes)`` (one packet: ``bytes`` at most 4,096) and ``("wake", flow, after_ps)`` (a
``timer`` event for the flow ``after_ps`` after this decision, a timer on the cores; it comes
whether or not ``kinds`` lists ``"timer"``, as a Rust policy's wake-up does, since the policy
asked for it). The others take effect after the NIC's install latency, as a Rust policy's do; an
action for a flow that has left (or never was) does nothing. An exception a method raises,
or an action it returns that is not one of these, stops the run at once with a
``RuntimeError`` naming the method and host, the policy's own exception as its cause, and
nothing is written (an interrupt, ``KeyboardInterrupt``, stays one). The scenario chooses which event kinds reach the
policy and what its calls cost the NIC's cores (``kinds``, ``cycles``, ``set_cycles``); SCR's
coalescing keeps the calls to one per handled event. A Python policy keeps its state in its
own objects: the 48-byte per-flow context that bounds a Rust policy does not bound it (the
summary's ``context_bytes`` is 0).

Usage::

    s = rnicsim.Scenario.from_file("scenarios/scr/fig13_static.toml")
    s.set("nic.scr.policy", {"external": {}})
    run = s.run("runs/py-static", scr_policy=rnicsim.policies.StaticShare())
"""

from typing import Iterable, Optional

Action = tuple


class StaticShare:
    """Static allocation (SCR §5.1): every flow's dequeue rate is the line rate over the number
    of flows, never below a floor, recomputed when a flow joins or leaves. The twin of
    ``[nic.scr.policy.static]``: with the same costs it makes the same decisions at the same
    times, so a run gives the same results."""

    def __init__(self, min_rate_bps: int = 1_000_000_000) -> None:
        self.min_mbps = min_rate_bps // 1_000_000
        self.rates: dict[tuple[int, int], int] = {}

    def _share(self, host: int, flows: list[int], line_bps: int) -> list[Action]:
        # Rates in whole Mbps, as the Rust policy keeps them, the share rounded up as it is.
        share = max(-(-(line_bps // 1_000_000) // max(len(flows), 1)), self.min_mbps, 1)
        out = []
        for f in flows:
            if self.rates.get((host, f)) != share:
                self.rates[(host, f)] = share
                out.append(("rate", f, share * 1_000_000))
        return out

    def start(self) -> None:
        self.rates.clear()

    def on_join(self, host: int, flows: list[int], now_ps: int, line_bps: int) -> Iterable[Action]:
        return self._share(host, flows, line_bps)

    def on_leave(self, host: int, flow: int, flows: list[int], now_ps: int, line_bps: int) -> Iterable[Action]:
        self.rates.pop((host, flow), None)
        return self._share(host, flows, line_bps)

    def on_event(self, host: int, event: dict, now_ps: int, line_bps: int) -> Optional[Iterable[Action]]:
        return None
