"""Type stubs of the compiled module (crates/rnicsim-py)."""

from typing import Any, Callable, List, Optional, Tuple

def cli(argv: list[str]) -> int:
    """Runs the `rnicsim` command line (program name first); returns its exit code."""

def json_to_toml(json: str) -> str:
    """Converts a JSON document to TOML text."""

def set_key(doc: str, key: str, value: str) -> str:
    """Sets a dotted key of a scenario document (JSON in, JSON out) as `--set` does."""

def validate(text: str, label: str, base_dir: str, overrides: List[Tuple[str, str]] = ...) -> Tuple[str, List[str]]:
    """Checks scenario text with (key, JSON value) overrides; returns it resolved and its warnings. Raises ValueError naming file, line and key."""

def run(text: str, label: str, base_dir: str, out: str, force: bool = False, progress: Optional[Callable[[int, int, int, Optional[Tuple[int, int]]], None]] = None, scr_policy: Any = None, overrides: List[Tuple[str, str]] = ...) -> str:
    """Runs scenario text, writes the results into `out`; returns the folder."""

__version__: str
"""The package's version and the model's, as `rnicsim --version` prints them."""

MODEL_ID: str
"""A hash of the simulator's sources: which code makes this package's results."""
