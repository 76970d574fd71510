#!/usr/bin/env bash
# Builds rnicsim, runs the quickstart scenario end to end and prints its summary, then writes the
# run's HTML report (FCT, rate, queue, PFC and fairness plots) with the Python package, installed
# into ./.venv as the README's Python section does. Without Python 3.11+ and its venv module the
# report is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release --locked --bin rnicsim
./target/release/rnicsim run scenarios/quickstart.toml --out runs/quickstart --force

# Debian and Ubuntu ship venv's pip bootstrap (ensurepip) in a separate package, python3-venv.
if ! python3 -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "note: no Python 3.11+ with venv (Debian: apt install python3-venv), so no HTML report; the run's tables are in runs/quickstart" >&2
    exit 0
fi
if ! .venv/bin/pip --version >/dev/null 2>&1; then
    rm -rf .venv
    python3 -m venv .venv
fi
echo "installing the Python package into .venv for the report (the first time takes a few minutes)" >&2
.venv/bin/pip install -q --disable-pip-version-check .
rm -rf runs/quickstart/report
# This environment's Python, even when another virtual environment is active.
page=$(RNICSIM_PYTHON=.venv/bin/python ./target/release/rnicsim report runs/quickstart)
echo "report: $page"
