"""Type stubs of the compiled module (crates/rnicsim-py)."""

from typing import Any, List, Optional, Protocol, Tuple

class Progress(Protocol):
    """Called every 2**16 events: simulated time and end (ps), events so far, and (finished,
    in all) flows when the run ends with its listed flows; during the [[baseline]] runs after
    the scenario's own, `baseline` is the number (from 0) of the one under way."""

    def __call__(self, now_ps: int, end_ps: int, events: int, flows: Optional[Tuple[int, int]] = None, baseline: Optional[int] = None) -> None: ...

def cli(argv: list[str]) -> int:
    """Runs the `rnicsim` command line (program name first); returns its exit code."""

def json_to_toml(json: str) -> str:
    """Converts a JSON document to TOML text."""

def is_ns3_config(text: str) -> bool:
    """Whether the text is an HPCC/ConWeave ns-3 config.txt (KEY value lines)."""

def set_key(doc: str, key: str, value: str) -> str:
    """Sets a dotted key of a scenario document (JSON in, JSON out) as `--set` does."""

def key_path(key: str) -> list[str | int]:
    """A key path's steps as `set_key` reads them (keys and list indices); ValueError if malformed."""

def validate(text: str, label: str, base_dir: str, overrides: List[Tuple[str, str]] = ...) -> Tuple[str, List[str]]:
    """Checks scenario text with (key, JSON value) overrides; returns it resolved and its warnings. Raises ValueError naming file, line and key."""

def run(text: str, label: str, base_dir: str, out: str, force: bool = False, progress: Optional[Progress] = None, scr_policy: Any = None, overrides: List[Tuple[str, str]] = ...) -> str:
    """Runs scenario text, writes the results into `out`; returns the folder."""

__version__: str
"""The package's version and the model's, as `rnicsim --version` prints them."""

MODEL_ID: str
"""A hash of the simulator's sources: which code makes this package's results."""
