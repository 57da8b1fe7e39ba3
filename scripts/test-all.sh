#!/usr/bin/env bash
# Sets up a fresh machine and runs every test: formatting, lints, the Rust
# test suites of all crates (storage conformance on both engines, property
# tests, crash loop, codecs, parser). Cargo's target directory lives under
# $HOME/.cache so RocksDB (about 20 CPU-minutes) is built once per machine.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-build.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/rocksandra-target}"
export CARGO_TERM_COLOR=never
echo "== cargo fmt"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings
echo "== cargo test"
cargo test --workspace
