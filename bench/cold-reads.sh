#!/usr/bin/env bash
# Hot reads beside reads that need the disk, on one node: the latency of
# reads of a small cached key set while other clients read keys that are
# only on disk (page cache dropped, small block and point caches).
# A short read runs on the network thread; this measures what a disk read
# there does to the reads of the same thread.
#
#   bench/cold-reads.sh SERVER_BIN LOADGEN_BIN OUT_DIR [ROWS] [HOT_RATE] [COLD_RATE|max]
#
# Needs root (drop_caches) and a quiet machine. Writes OUT_DIR/{hot,cold}-N.json
# OUT_DIR/summary.txt and the server's log; ports 9300 (CQL) and 9301 (metrics).
set -euo pipefail
server=$1 loadgen=$2 out=$3
rows=${4:-1000000} hot_rate=${5:-5000} cold_rate=${6:-400}
duration=30 hot_rows=1000 port=9300 metrics=9301
# COLD_RATE "max": the cold reads closed-loop at full speed (128 readers),
# their throughput then being the figure.
if [ "$cold_rate" = max ]; then
    cold_load=(--max-rate --writers 0)
else
    cold_load=(--read-rate "$cold_rate" --write-rate 0)
fi
work=$(mktemp -d /tmp/cold-reads.XXXXXX)
mkdir -p "$out"
cat > "$work/rocksandra.yaml" <<YAML
block_cache_size: 32MiB
point_cache_size: 4MiB
YAML
pid=
start() {
    "$server" --config "$work/rocksandra.yaml" --data-dir "$work/data" \
        --listen-address 127.0.0.1 --native-port $port --prometheus-port $metrics \
        --admin-port 0 >> "$work/server.log" 2>&1 &
    pid=$!
    "$loadgen" ready --host 127.0.0.1:$port > /dev/null
}
stop() { kill -TERM "$pid"; wait "$pid" || true; }
trap 'kill -9 $pid 2>/dev/null || true; cp "$work/server.log" "$out/" 2>/dev/null; rm -rf "$work"' EXIT
misses() {
    curl -s http://127.0.0.1:$metrics/metrics | awk '/^rocksandra_storage_memory_only_misses_total/ {print $2}'
}

start
"$loadgen" schema --host 127.0.0.1:$port > /dev/null
"$loadgen" load --host 127.0.0.1:$port --rows "$rows" > "$out/load.json"
stop                                   # a clean stop flushes the memtables
echo "data: $(du -sh "$work/data" | cut -f1)" > "$out/summary.txt"
for run in 1 2 3; do
    start
    # The hot keys cached first.
    "$loadgen" run --host 127.0.0.1:$port --rows $hot_rows --duration-s 5 \
        --read-rate 2000 --write-rate 0 > /dev/null
    sync; echo 3 > /proc/sys/vm/drop_caches
    before=$(misses)
    "$loadgen" run --host 127.0.0.1:$port --rows "$rows" --duration-s $duration \
        "${cold_load[@]}" > "$out/cold-$run.json" &
    cold=$!
    "$loadgen" run --host 127.0.0.1:$port --rows $hot_rows --duration-s $duration \
        --read-rate "$hot_rate" --write-rate 0 > "$out/hot-$run.json"
    wait $cold
    after=$(misses)
    python3 - "$out" "$run" "${before:-}" "${after:-}" >> "$out/summary.txt" <<'PY'
import json, sys
out, run, before, after = sys.argv[1:]
def line(kind):
    r = json.load(open(f"{out}/{kind}-{run}.json"))["reads"]
    return (f"{kind}: {r['throughput']:.0f}/s p50 {r['p50_ms']:.2f} p99 {r['p99_ms']:.2f} "
            f"p99.9 {r['p999_ms']:.2f} max {r['max_ms']:.2f} ms errors {r.get('errors', 0)}")
handed = (float(after) - float(before)) if before and after else "n/a"
print(f"run {run}: {line('hot')} | {line('cold')} | handed off {handed}")
PY
    stop
done
cat "$out/summary.txt"
