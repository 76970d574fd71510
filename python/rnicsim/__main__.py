"""`python -m rnicsim`: the `rnicsim` command line (run, validate, bench), plus `query`,
`sweep`, `report` and `reproduce`."""

from __future__ import annotations

import os
import sys

from . import _native

# The name usage lines give the command by: `rnicsim` when the binary runs this module for its
# analysis commands (it sets RNICSIM_PROG), else how Python was asked.
PROG = os.environ.get("RNICSIM_PROG", "python -m rnicsim")


def _at_least_one(text: str) -> int:
    """An argparse type: a whole number of at least 1 (argparse names the option and exits 2)."""
    import argparse

    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return int(text)


def _folder(text: str) -> str:
    """An argparse type: a folder's path, not empty (`--out ''` wrote into the default folder)."""
    import argparse

    if not text.strip():
        raise argparse.ArgumentTypeError("expected a folder, got an empty path")
    return text


def _write_csv(cursor) -> None:
    """An executed DuckDB statement's rows to stdout as CSV, a batch at a time (a statement
    without a result prints nothing); a closed pipe (`| head`) ends the output quietly."""
    import csv

    if cursor.description is None:
        return
    out = csv.writer(sys.stdout, lineterminator="\n")
    try:
        out.writerow(d[0] for d in cursor.description)
        while batch := cursor.fetchmany(10_000):
            out.writerows(batch)
        sys.stdout.flush()
    except BrokenPipeError:
        # Python would report the pipe again as it flushes stdout on exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _plain_warning(message, category, filename, lineno, line=None) -> str:
    """A warning as the command line prints it: `warning: <text>`, without the Python file and
    line it was raised at (`<frozen runpy>:88: ScenarioWarning: ...`)."""
    return f"warning: {message}\n"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv if argv is None else argv)
    import warnings

    warnings.formatwarning = _plain_warning
    if len(argv) >= 2 and argv[1] == "query":
        import argparse

        ap = argparse.ArgumentParser(
            prog=f"{PROG} query",
            description="SQL over a run folder's tables (DuckDB): one view per Parquet file it holds (flows, "
            "perftest, queues, ...: docs/outputs.md), and summary and scenario as key/value tables; or over a "
            "sweep folder's results.",
        )
        ap.add_argument("run_dir", metavar="RUN_DIR")
        ap.add_argument("sql", metavar="SQL")
        shape = ap.add_mutually_exclusive_group()
        shape.add_argument("--rows", type=_at_least_one, default=None, metavar="N", help="rows the table shows (default: DuckDB's 20, the first and last 10)")
        shape.add_argument("--csv", action="store_true", help="every row as CSV, a header line first (for a file or another tool)")
        args = ap.parse_args(argv[2:])
        if not args.sql.strip():
            print("error: no SQL to run (an empty statement)", file=sys.stderr)
            return 2
        con = None  # (None until the run folder is open)
        try:
            from .query import connect

            con = connect(args.run_dir)
            if args.csv:
                _write_csv(con.execute(args.sql))
                return 0
            result = con.sql(args.sql)
            # (A statement without a result, CREATE VIEW or SET, prints nothing.)
            if result is None:
                pass
            elif args.rows is not None:
                result.show(max_rows=args.rows)
            else:
                print(result)
        except KeyboardInterrupt:
            return 130
        except Exception as e:  # noqa: BLE001 - report any query error as the CLI does
            print(f"error: {e}", file=sys.stderr)
            from .query import missing_table_hint

            hint = missing_table_hint(str(e), con) if con is not None else None
            if hint is not None:
                print(hint, file=sys.stderr)
            return 2
        return 0
    if len(argv) >= 2 and argv[1] == "sweep":
        import argparse

        from .api import DamagedRunError, ScenarioError
        import warnings

        from . import sweep as sweep_module
        from .sweep import SweepWarning, run_sweep

        sweep_module._AS_COMMAND = True  # errors name the command's options (--ray)

        ap = argparse.ArgumentParser(prog=f"{PROG} sweep", description="Run a parameter sweep on a local process pool.")
        ap.add_argument("sweep")
        ap.add_argument("--out", required=True, type=_folder)
        ap.add_argument("--workers", type=_at_least_one, default=None, help="points run at once (default: one per CPU)")
        ap.add_argument("--ray", default=None, metavar="ADDRESS", help='run on a Ray cluster ("local" starts one here)')
        ap.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
        a = ap.parse_args(argv[2:])
        try:
            with warnings.catch_warnings():
                # The command says so itself, with its exit status.
                warnings.simplefilter("ignore", SweepWarning)
                table = run_sweep(a.sweep, a.out, workers=a.workers, quiet=a.quiet, ray_address=a.ray)
        except (ScenarioError, DamagedRunError, OSError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        except KeyboardInterrupt as e:
            # The points that finished are kept (a re-run resumes); the others wrote nothing.
            print(f"sweep: interrupted; finished points are kept in {a.out}/runs (run the sweep again to resume)", file=sys.stderr)
            return 128 + getattr(e, "signum", 2)
        import json
        from pathlib import Path

        failed = len(json.loads((Path(a.out) / "failures.json").read_text()))
        if not a.quiet:
            print(f"{table.height} finished points: {a.out}/results.parquet")
        if failed:
            # A script or CI job must not take a sweep with failed points for a success.
            print(f"error: {failed} point(s) invalid or failed: {a.out}/failures.json", file=sys.stderr)
            return 1
        return 0
    if len(argv) >= 2 and argv[1] == "report":
        import argparse

        from .api import DamagedRunError
        from .report import write_report

        ap = argparse.ArgumentParser(prog=f"{PROG} report", description="Write an HTML report (PNG and SVG plots) of one or more runs.")
        ap.add_argument("runs", nargs="+")
        ap.add_argument("--out", default=None, type=_folder, help="folder for the page (default: RUN/report)")
        a = ap.parse_args(argv[2:])
        try:
            page = write_report(a.runs, a.out if a.out is not None else f"{a.runs[0]}/report")
        except (FileNotFoundError, FileExistsError, NotADirectoryError, DamagedRunError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print("report: interrupted; nothing was written", file=sys.stderr)
            return 130
        print(page)
        return 0
    if len(argv) >= 2 and argv[1] == "reproduce":
        import argparse

        from .api import ScenarioError
        from .reproduce import PAPERS, counted, reproduce

        def paper(text: str) -> str:
            """An argparse type: a paper's name or `all`. (Not `choices`: argparse checks a
            `*` argument's default list against them, and refused no argument at all.)"""
            if text not in (*PAPERS, "all"):
                raise argparse.ArgumentTypeError(f"unknown paper {text!r}; choose from {', '.join(PAPERS)} or all")
            return text

        ap = argparse.ArgumentParser(prog=f"{PROG} reproduce", description="Run the paper reproductions and build a gallery page.")
        ap.add_argument("papers", nargs="*", type=paper, metavar="PAPER", help=f"{', '.join(PAPERS)} or all (default: all)")
        ap.add_argument("--out", default="runs/reproduce", type=_folder)
        ap.add_argument("--scenarios", default=None, help="the folder holding scr/, tassel/, ... (default: scenarios/ in this folder or one above it, else in the checkout the package runs from or pip installed it from)")
        ap.add_argument("--quick", action="store_true", help="kept for scripts: the shipped reproductions take seconds, so it runs them unchanged")
        ap.add_argument("-q", "--quiet", action="store_true", help="no line per scenario on stderr")
        a = ap.parse_args(argv[2:])
        try:
            counts = reproduce(a.papers or ["all"], a.out, a.scenarios, quick=a.quick, quiet=a.quiet)
        except (OSError, ScenarioError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            # The runs that finished are kept; the gallery page is written only at the end.
            print(f"reproduce: interrupted; no gallery page was written (the finished runs are in {a.out}/runs)", file=sys.stderr)
            return 130
        print(f"{counted(**counts)}: {a.out}/index.html")
        return 0
    argv[0] = "rnicsim"
    return _native.cli(argv)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        # Ctrl-C before a command's own handling (while a module loads): the status a shell
        # gives a command Ctrl-C ends, without a traceback.
        sys.exit(130)
