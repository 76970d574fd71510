#!/usr/bin/env bash
# Builds and runs every test of the workspace. Needs a Rust toolchain (rustup's, as on the
# project machines) and Python 3.11+; crates come from crates.io, Python packages from PyPI,
# tshark and chromium from
# Debian's packages.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
if ! command -v cargo >/dev/null; then
    echo "error: cargo not found; install Rust (https://rustup.rs) and re-run" >&2
    exit 1
fi
# tshark checks that packet captures dissect as RoCEv2 and chromium that reports render (Debian's
# packages; root on the project machines). Without them, those tests skip outside CI.
missing=""
command -v tshark >/dev/null || missing="$missing tshark"
command -v chromium >/dev/null || missing="$missing chromium"
if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing) >/dev/null 2>&1 \
            || echo "warning: could not install$missing" >&2
    else
        echo "note:$missing not found; the tests that need them will skip" >&2
    fi
fi
cargo test --workspace --locked

# The Python package: built into a private virtual environment and tested with pytest.
venv=target/py-venv
# A venv moved from elsewhere (a copied target folder) has stale script paths: make it anew.
if ! "$venv/bin/pip" --version >/dev/null 2>&1; then
    rm -rf "$venv"
    python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q --disable-pip-version-check maturin 'polars>=1' 'duckdb>=1' tqdm matplotlib pytest 'ray>=2'
VIRTUAL_ENV="$PWD/$venv" "$venv/bin/maturin" develop -q --locked
"$venv/bin/python" -m pytest python/tests -q
