#!/usr/bin/env bash
# The benchmark's write-maximum phase alone, for before/after comparisons of
# one server build: a fresh node, 200,000 rows preloaded, 20 s idle, then
# two 30 s closed-loop phases of bench/loadgen (128 writers); prints each
# phase's writes/s, P99 and the server's CPU per write (user + system).
#
#   bench/write-max.sh BINARY OUTDIR
#
# Alternate two builds over several runs: a single phase moves by 10-20% on
# this kind of host for no reason of its own.
set -euo pipefail
BIN=$1
OUT=$2
LOADGEN=${LOADGEN:-${CARGO_TARGET_DIR:-$HOME/.cache/rocksandra-target}/release/rocksandra-loadgen}
PORT=${WRITE_MAX_PORT:-9042}
HOST=127.0.0.1:$PORT
rm -rf "$OUT"
mkdir -p "$OUT"
"$BIN" --data-dir "$OUT/data" --listen-address 127.0.0.1 --native-port "$PORT" \
    --admin-port 0 --prometheus-port 0 >"$OUT/server.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
"$LOADGEN" ready --timeout-s 120 --host "$HOST" >/dev/null
"$LOADGEN" schema --host "$HOST" >/dev/null
"$LOADGEN" load --rows 200000 --concurrency 256 --host "$HOST" >"$OUT/load.json"
sleep 20
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
for phase in 1 2; do
    before=$(ticks)
    "$LOADGEN" run --rows 200000 --duration-s 30 --max-rate --readers 0 --writers 128 \
        --host "$HOST" >"$OUT/phase$phase.json"
    after=$(ticks)
    python3 - "$OUT/phase$phase.json" "$phase" $((after - before)) "$hz" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))["writes"]
p = dict((a, b) for a, b in w["percentiles_ms"])
cpu_us = int(sys.argv[3]) / int(sys.argv[4]) * 1e6 / w["count"]
print("phase %s: %.0f writes/s, P99 %.2f ms, server CPU %.1f us per write"
      % (sys.argv[2], w["throughput"], p[99.0], cpu_us))
PY
    sleep 5
done
