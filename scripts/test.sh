#!/usr/bin/env bash
# Builds and runs every test of the workspace. Needs a Rust toolchain (rustup's, as on the
# project machines); everything else is fetched by cargo from crates.io.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
if ! command -v cargo >/dev/null; then
    echo "error: cargo not found; install Rust (https://rustup.rs) and re-run" >&2
    exit 1
fi
cargo test --workspace --locked
