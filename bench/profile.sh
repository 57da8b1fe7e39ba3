#!/usr/bin/env bash
# A CPU profile of Rocksandra serving prepared single-row reads, in one
# command: a release build, 200,000 rows of ~1 KB, latte reading at
# 20,000/s, perf with call graphs on the server, a flame graph (inferno) and
# the table of where the CPU goes per request step (bench/costs.py).
#
#   bench/profile.sh [--rows N] [--latte-rates RATE] [--duration SECONDS] [--out FILE.md]
#
# Writes FILE.md (default docs/benchmarks/<date>-profile-read.md) and the
# flame graph beside it (.svg). Needs perf (Debian: linux-perf) and installs
# inferno into ~/.cache/rocksandra-tools and latte (bench/latte/install.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if ! command -v perf >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq linux-perf >/dev/null
fi
tools="$HOME/.cache/rocksandra-tools"
if [ ! -x "$tools/bin/inferno-flamegraph" ]; then
    cargo install --locked --version 0.12.8 --root "$tools" inferno
fi
scripts/setup-build.sh
[ -x bench/.venv/bin/python ] || python3 -m venv bench/.venv
bench/.venv/bin/pip install -q -r bench/requirements.txt
. scripts/rocksdb-env.sh
cargo build --release -p rocksandra-server
cargo build --release --locked --manifest-path bench/loadgen/Cargo.toml
latte="$(bench/latte/install.sh)"
exec bench/.venv/bin/python bench/bench.py profile --work "$HOME/.cache/rocksandra-bench/profile" \
    --server "$CARGO_TARGET_DIR/release/rocksandra" --loadgen "$CARGO_TARGET_DIR/release/rocksandra-loadgen" \
    --latte "$latte" --rows 200000 --latte-rates 20000 --duration 15 --settle 120 \
    --out "docs/benchmarks/$(date +%F)-profile-read.md" "$@"
