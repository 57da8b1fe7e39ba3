#!/usr/bin/env bash
# Installs latte (crates.io `latte-cli`), the benchmark's second, independent
# CQL load generator, at a pinned version under ~/.cache/rocksandra-latte,
# only when it is not there yet; prints the binary's path.
#
#   bench/latte/install.sh            # prints e.g. /root/.cache/rocksandra-latte/bin/latte
#
# 0.29.0 is the newest latte-cli on crates.io and builds with Rust 1.95
# (`--locked`: its own Cargo.lock). The first install compiles it from source:
# about 7.5 minutes on two cores.
set -euo pipefail
version=0.29.0
root="${LATTE_ROOT:-$HOME/.cache/rocksandra-latte}"
binary="$root/bin/latte"
if [ ! -x "$binary" ] || ! "$binary" --version 2>/dev/null | grep -qF " $version"; then
    echo "== latte: installing latte-cli $version into $root" >&2
    cargo install --locked --version "$version" --root "$root" latte-cli >&2
fi
echo "$binary"
