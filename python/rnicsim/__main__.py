"""`python -m rnicsim`: the `rnicsim` command line (run, validate, bench), plus `query`."""

from __future__ import annotations

import sys

from . import _native


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv if argv is None else argv)
    if len(argv) >= 2 and argv[1] == "query":
        if len(argv) != 4:
            print("usage: python -m rnicsim query RUN_DIR SQL", file=sys.stderr)
            return 2
        from .query import connect

        try:
            print(connect(argv[2]).sql(argv[3]))
        except Exception as e:  # noqa: BLE001 - report any query error as the CLI does
            print(f"error: {e}", file=sys.stderr)
            return 2
        return 0
    argv[0] = "rnicsim"
    return _native.cli(argv)


if __name__ == "__main__":
    sys.exit(main())
