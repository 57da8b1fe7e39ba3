#!/usr/bin/env bash
# Why the two clients disagree on a read's server CPU: system calls and
# context switches of the server per read, with loadgen (requests spread
# evenly in time, open model) and latte (requests released in bursts by its
# rate limiter's ticks) at the same rate on the same rows, alternating.
#
#   bench/syscalls.sh [SERVER_BINARY] [RATE] [SECONDS] [ROUNDS]
#
# Needs perf (the raw_syscalls tracepoint, counted, not sampled), a release
# build of the server and loadgen, and latte (bench/latte/install.sh).
# Prints one line per phase and writes them to $WORK/summary.txt.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$root/scripts/rocksdb-env.sh"
bin=${1:-$CARGO_TARGET_DIR/release/rocksandra}
rate=${2:-20000}; secs=${3:-15}; rounds=${4:-2}
loadgen=$CARGO_TARGET_DIR/release/rocksandra-loadgen
latte="$("$root/bench/latte/install.sh")"
work=${WORK:-$HOME/.cache/rocksandra-bench/syscalls}
host=127.0.0.1:9042
rm -rf "$work"; mkdir -p "$work"
"$bin" --data-dir "$work/data" --listen-address 127.0.0.1 --native-port 9042 >"$work/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null' EXIT
for _ in $(seq 100); do "$loadgen" ready --host $host >/dev/null 2>&1 && break; sleep 0.2; done
"$loadgen" schema --host $host >/dev/null
"$loadgen" load --rows 200000 --concurrency 256 --host $host >"$work/load.json"
ticks() { awk '{print $14+$15}' /proc/$pid/stat; }
hz=$(getconf CLK_TCK)
for _ in $(seq 60); do  # idle: compactions after the preload done
    a=$(ticks); sleep 5; b=$(ticks)
    [ $(( (b - a) * 5 )) -lt "$hz" ] && break
done
phase() {  # NAME COMMAND...: the server's CPU, system calls and context switches over one phase
    local name=$1; shift
    local c0 c1 calls switches reads=$((rate * secs))
    c0=$(ticks)
    perf stat -x, -e raw_syscalls:sys_enter,context-switches -p $pid -o "$work/$name.perf" -- sleep $((secs + 1)) &
    local perf_pid=$!
    "$@" >"$work/$name.out" 2>&1
    wait $perf_pid
    c1=$(ticks)
    calls=$(awk -F, '/raw_syscalls/{print $1}' "$work/$name.perf")
    switches=$(awk -F, '/context-switches/{print $1}' "$work/$name.perf")
    awk -v n="$name" -v c=$((c1 - c0)) -v hz="$hz" -v r=$reads -v s="$calls" -v w="$switches" 'BEGIN {
        printf "%s: server CPU per read %.1f us, system calls per read %.2f, context switches per read %.2f\n",
            n, c / hz / r * 1e6, s / r, w / r }' | tee -a "$work/summary.txt"
}
for round in $(seq "$rounds"); do
    phase "loadgen-$round" "$loadgen" run --read-rate "$rate" --readers 128 --writers 0 \
        --duration-s "$secs" --rows 200000 --host $host
    phase "latte-$round" "$latte" --log-file "$work/latte-$round.log" run "$root/bench/latte/emp.rn" --functions read -P rows=200000 \
        --rate "$rate" --duration "${secs}s" --threads 2 --concurrency 64 --connections 4 \
        --consistency ONE --request-timeout 10s --retries 0 --warmup 0 --quiet \
        --start-cycle $((round << 40)) --output "$work/latte-$round.json" $host
done
