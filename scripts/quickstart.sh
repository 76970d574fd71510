#!/usr/bin/env bash
# Builds rnicsim and runs the quickstart scenario end to end, printing its summary.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release --locked --bin rnicsim
./target/release/rnicsim run scenarios/quickstart.toml --out runs/quickstart --force
