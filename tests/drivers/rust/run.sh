#!/usr/bin/env bash
# Builds and runs the Rust `scylla` driver tests against a running server at
# $ROCKSANDRA_HOST:$ROCKSANDRA_PORT (defaults 127.0.0.1:9042). Exits with the
# status of `cargo test`. Extra arguments go to the test binary, e.g.
# `run.sh --test-threads=1` or `run.sh paging`.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/target-drivers-rust}"
export ROCKSANDRA_HOST="${ROCKSANDRA_HOST:-127.0.0.1}"
export ROCKSANDRA_PORT="${ROCKSANDRA_PORT:-9042}"

# Build exactly the committed dependency versions when the lock file is there.
locked=()
if [[ -f "$here/Cargo.lock" ]]; then
    locked=(--locked)
fi

echo "scylla driver tests against $ROCKSANDRA_HOST:$ROCKSANDRA_PORT (target dir $CARGO_TARGET_DIR)"
exec cargo test "${locked[@]}" --manifest-path "$here/Cargo.toml" --test scylla_driver -- "$@"
