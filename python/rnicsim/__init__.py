"""rnicsim from Python: load or build scenarios, run them in process, query the results.

>>> import rnicsim
>>> run = rnicsim.Scenario.from_file("scenarios/quickstart.toml").set("duration", "200us").run("runs/qs")
>>> run.flows.select("size", "slowdown").head()          # a polars DataFrame
>>> run.query("SELECT avg(slowdown) FROM flows")           # DuckDB over every table of the run
"""

from . import policies, query, sweep
from ._native import MODEL_ID, __version__
from .api import DamagedRunError, Run, Scenario, ScenarioError, ScenarioWarning, StallWarning, open_run, run
from .sweep import SweepWarning

# The analysis modules that import matplotlib load when first named (`rnicsim.report`), not
# with the package.
_LAZY = ("report", "reproduce")


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["MODEL_ID", "DamagedRunError", "Run", "Scenario", "ScenarioError", "ScenarioWarning", "StallWarning", "SweepWarning", "open_run", "run"]
