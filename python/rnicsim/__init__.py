"""rnicsim from Python: load or build scenarios, run them in process, query the results.

>>> import rnicsim
>>> run = rnicsim.Scenario.from_file("scenarios/quickstart.toml").set("duration", "200us").run("runs/qs")
>>> run.flows.select("size", "slowdown").head()          # a polars DataFrame
>>> run.query("SELECT avg(slowdown) FROM flows")           # DuckDB over every table of the run
"""

from . import policies, query
from ._native import MODEL_ID, __version__
from .api import Run, Scenario, ScenarioError, ScenarioWarning, StallWarning, open_run, run
from .sweep import SweepWarning

__all__ = ["MODEL_ID", "Run", "Scenario", "ScenarioError", "ScenarioWarning", "StallWarning", "SweepWarning", "open_run", "run"]
