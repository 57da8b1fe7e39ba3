#!/usr/bin/env bash
# Sets up a fresh machine and runs every test: formatting, lints, the Rust
# test suites of all crates (storage conformance on both engines, property
# tests, crash loop, codecs, parser, executor), then the suites that need a
# real server process (scripts/test-server.sh: golden CQL suite, driver,
# process and cluster tests) with, beside them, a smoke run of the
# benchmark harness against Apache Cassandra and Rocksandra (bench/run
# --smoke), then the
# release packages (scripts/package.sh: the release build, a tarball and a
# .deb), installed with dpkg and used by tests/package/test_package.sh
# (needs root). Cargo's target directory lives under
# $HOME/.cache, and RocksDB (about 12 minutes on two cores) is built once per
# machine.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-build.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/rocksandra-target}"
. scripts/rocksdb-env.sh
export CARGO_TERM_COLOR=never
echo "== cargo fmt ($(date +%T))"
cargo fmt --all -- --check
echo "== cargo clippy ($(date +%T))"
cargo clippy --workspace --all-targets -- -D warnings
# The test suites' build: nodetool's fault-injection commands compiled in.
cargo clippy -p rocksandra-cluster -p rocksandra-server --all-targets --features rocksandra-server/fault-injection,rocksandra-cluster/fault-injection -- -D warnings
echo "== cargo test ($(date +%T))"
# The in-process golden suite (tests/golden/cases against a node in the
# test process, ~45 s, mostly one core and its cases' pauses) runs in the
# background beside the other test binaries, which cargo runs one by one.
# Its binary is found in the build's own messages (another cargo command,
# for one package, could unify features otherwise and build again).
golden_bin=$(cargo test --workspace --no-run --message-format=json-render-diagnostics \
    | python3 -c 'import json, sys
# Every message is read (leaving early would break cargo'"'"'s pipe mid-build).
messages = [json.loads(line) for line in sys.stdin]
print(next(m["executable"] for m in messages
           if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "golden_cases"
           and m.get("executable")))')
golden_log=$(mktemp)
(cd crates/server && exec "$golden_bin") >"$golden_log" 2>&1 &
golden_pid=$!
status=0
cargo test --workspace -- --skip golden_cases_match_at_least_their_baseline || status=1
echo "== in-process golden suite (crates/server/tests/golden_cases.rs), from the background ($(date +%T))"
wait "$golden_pid" || status=1
cat "$golden_log"
rm -f "$golden_log"
[ "$status" = 0 ] || { echo "cargo test FAILED"; exit 1; }
# The benchmark harness's smoke run (tiny sizes, debug builds, no timing
# asserted; mostly waiting for Apache Cassandra to start and for its short
# phases) goes in the background beside the server suites, on ports of its
# own (BENCH_*_PORT), its output kept for the end.
echo "== benchmark harness (bench/run --smoke), in the background ($(date +%T))"
# Apache Cassandra's jars first (a no-op once fetched): the smoke run and
# the process tests' migrate test would otherwise fetch them at once.
jars_base=$(mktemp -d)
scripts/cassandra/setup.sh --base "$jars_base" >/dev/null
rm -rf "$jars_base"
smoke_log=$(mktemp)
# Its server: the server suites' debug build (nodetool's fault-injection
# commands compiled in, unused here), built once for both and copied, so
# that no later build can replace it mid-run.
cargo build -p rocksandra-server --bin rocksandra --features fault-injection
smoke_dir=$(mktemp -d)
cp "$CARGO_TARGET_DIR/debug/rocksandra" "$smoke_dir/rocksandra"
BENCH_SERVER="$smoke_dir/rocksandra" BENCH_PORT=9099 BENCH_METRICS_PORT=9098 BENCH_ADMIN_PORT=7097 \
    BENCH_STORAGE_PORT=7096 setsid bench/run --smoke >"$smoke_log" 2>&1 &
smoke_pid=$!
trap 'kill -TERM -- "-$smoke_pid" 2>/dev/null || true' EXIT
echo "== server suites ($(date +%T))"
status=0
scripts/test-server.sh || status=1
echo "== benchmark harness (bench/run --smoke), from the background ($(date +%T))"
wait "$smoke_pid" || { status=1; echo "bench/run --smoke FAILED"; }
trap - EXIT
cat "$smoke_log"
rm -rf "$smoke_log" "$smoke_dir"
[ "$status" = 0 ] || exit 1
echo "== packages (scripts/package.sh: release build, tarball, .deb; the .deb installed and run) ($(date +%T))"
scripts/package.sh
tests/package/test_package.sh
echo "== every suite passed ($(date +%T), ${SECONDS} s in all)"
