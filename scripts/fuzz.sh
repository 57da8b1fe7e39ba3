#!/usr/bin/env bash
# Runs every fuzz target (fuzz/fuzz_targets) for SECONDS each (default 60)
# with cargo-fuzz on the nightly toolchain. Not part of CI (it needs nightly
# and minutes of CPU); run it after changing a decoder.
#   cargo install cargo-fuzz && rustup toolchain install nightly
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
SECONDS_EACH=${1:-60}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/target-fuzz}"
for target in $(cargo +nightly fuzz list); do
    echo "== $target"
    cargo +nightly fuzz run "$target" -- -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048
done
