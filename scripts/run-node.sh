#!/usr/bin/env bash
# README command 1: sets up a fresh machine and runs a single node with the
# embedded defaults (data in ./data, CQL on 127.0.0.1:9042). Extra arguments
# go to the server (`scripts/run-node.sh --config rocksandra.yaml`).
#
# Builds with the machine's one RocksDB library (scripts/rocksdb-env.sh:
# compiled once, about 12 minutes on two cores) in the shared target
# directory under $HOME/.cache, as the tests and benchmarks do.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-build.sh
. scripts/rocksdb-env.sh
exec cargo run --release -p rocksandra-server --bin rocksandra -- "$@"
