"""Type stubs of the compiled module (crates/rnicsim-py)."""

from typing import Any, Callable, List, Optional, Tuple

def cli(argv: list[str]) -> int:
    """Runs the `rnicsim` command line (program name first); returns its exit code."""

def json_to_toml(json: str) -> str:
    """Converts a JSON document to TOML text."""

def validate(text: str, label: str, base_dir: str) -> Tuple[str, List[str]]:
    """Checks scenario text; returns it resolved and its warnings. Raises ValueError naming file, line and key."""

def run(text: str, label: str, base_dir: str, out: str, force: bool = False, progress: Optional[Callable[[int, int, int], None]] = None, scr_policy: Any = None) -> str:
    """Runs scenario text, writes the results into `out`; returns the folder."""
