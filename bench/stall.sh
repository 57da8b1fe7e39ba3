#!/usr/bin/env bash
# A disk that stops for a while, under a mixed load: do reads wait for it?
#
#   sudo bench/stall.sh BINARY OUTDIR [FREEZE_SECONDS]
#
# Puts a Rocksandra node's data on an ext4 filesystem of its own (a 4 GiB
# image file, loop-mounted at $STALL_MOUNT, /mnt/rocksandra-stall by
# default), preloads 50,000 rows with bench/loadgen, then runs its open-model
# mixed load (2,000 reads/s and 2,000 writes/s, 20 s) and, 8 s in, freezes
# the filesystem (fsfreeze) for FREEZE_SECONDS (1 by default): every write to
# it blocks, as on a device that stalls. Prints the reads' and writes'
# percentiles (measured from each operation's intended start, so time spent
# queued behind the stall counts). Needs root (mount, fsfreeze) and a
# release build of bench/loadgen (bench/run builds one).
set -euo pipefail
BIN=$1
OUT=$2
FREEZE_S=${3:-1}
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LOADGEN=${LOADGEN:-${CARGO_TARGET_DIR:-$HOME/.cache/rocksandra-target}/release/rocksandra-loadgen}
MNT=${STALL_MOUNT:-/mnt/rocksandra-stall}
IMAGE=${STALL_IMAGE:-$HOME/.cache/rocksandra-bench/stall.img}
PORT=${STALL_PORT:-9300}
HOST=127.0.0.1:$PORT
RATE=2000

mkdir -p "$OUT" "$MNT" "$(dirname "$IMAGE")"
if ! mountpoint -q "$MNT"; then
    [ -f "$IMAGE" ] || { truncate -s 4G "$IMAGE"; mkfs.ext4 -q -F "$IMAGE"; }
    mount -o loop "$IMAGE" "$MNT"
fi
rm -rf "$MNT/data"
"$BIN" --data-dir "$MNT/data" --listen-address 127.0.0.1 --native-port "$PORT" \
    --admin-port 0 --prometheus-port 0 >"$OUT/server.log" 2>&1 &
server=$!
trap 'fsfreeze -u "$MNT" 2>/dev/null || true; kill "$server" 2>/dev/null || true' EXIT
"$LOADGEN" ready --host "$HOST" --timeout-s 60 >/dev/null
"$LOADGEN" schema --host "$HOST" >/dev/null
"$LOADGEN" load --host "$HOST" --rows 50000 --concurrency 64 >"$OUT/load.json"
sleep 2
(
    sleep 8
    fsfreeze -f "$MNT"
    date -u +%T.%N >"$OUT/freeze"
    sleep "$FREEZE_S"
    fsfreeze -u "$MNT"
    date -u +%T.%N >>"$OUT/freeze"
) &
freezer=$!
"$LOADGEN" run --host "$HOST" --rows 50000 --duration-s 20 --read-rate "$RATE" \
    --write-rate "$RATE" --readers 128 --writers 128 >"$OUT/run.json"
wait "$freezer"
kill -TERM "$server"
wait "$server" || true
trap - EXIT
python3 - "$OUT/run.json" "$FREEZE_S" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
print("filesystem frozen %s s:" % sys.argv[2])
for kind in ("reads", "writes"):
    r = run[kind]
    p = dict((a, b) for a, b in r["percentiles_ms"])
    print("  %-6s %6d done, %d errors, P50 %.2f ms, P99 %.2f ms, P99.9 %.2f ms, max %.2f ms"
          % (kind, r["count"], r["errors"], p[50.0], p[99.0], p[99.9], r["max_ms"]))
PY
