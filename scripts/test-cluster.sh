#!/usr/bin/env bash
# Runs the multi-process cluster tests (tests/cluster) in shards at once, one
# pytest per shard, each on its own loopback net: shard i's nodes are on
# NETi1-NETi5 (ROCKSANDRA_CLUSTER_NET, see tests/cluster/harness.py); their
# other ports are on the node's own address or picked free, and every test
# makes its own temporary directories, so shards share no port and no
# directory. Most of these tests' time is waiting (gossip, failure
# detection, timeouts), not CPU, so shards overlap well even on two cores.
# tests/cluster/shards.py splits the files by their measured run times.
# Each shard writes its own log, printed whole when the shard ends; any
# shard's failure fails the script.
#
# Measured on 2026-11-29 on the 2-core machine, the suite alone (71 tests),
# the machine shared with two other sessions' builds and servers (load
# average 2 to 15), every test passing in every run: serial 452 s and 547 s;
# 2 shards 244 s and 262 s; 3 shards 177 s and 194 s, then 179 s and 168 s
# after the process tests as scripts/test-server.sh runs them. In 3 shards
# a test of over 3 s took at most 1.6 times its first serial run's time,
# far inside its waits' timeouts. Three shards are the default:
# test_streaming.py alone (147 s serially) bounds a third. Beside the process tests (2 shards: 296 s
# for both, passing), 3 shards made the migrate test's Apache Cassandra time
# out a query, so scripts/test-server.sh runs them after the process tests.
#
#   ROCKSANDRA_BIN=path/to/rocksandra scripts/test-cluster.sh
#   ROCKSANDRA_CLUSTER_NETS="127.0.0.2 127.0.0.3"  # one shard per net (default below)
#
# The binary needs the fault-injection feature
# (cargo build -p rocksandra-server --bin rocksandra --features fault-injection).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${ROCKSANDRA_BIN:?set ROCKSANDRA_BIN to a rocksandra built with --features fault-injection}"
export ROCKSANDRA_BIN
read -r -a nets <<<"${ROCKSANDRA_CLUSTER_NETS:-127.0.0.1 127.0.0.2 127.0.0.3}"
if [ "$(printf '%s\n' "${nets[@]}" | sort -u | wc -l)" -ne "${#nets[@]}" ]; then
    echo "ROCKSANDRA_CLUSTER_NETS names a net twice: ${nets[*]}" >&2; exit 2
fi
split=$(.venv/bin/python tests/cluster/shards.py "${#nets[@]}")
mapfile -t shards <<<"$split"
logs=$(mktemp -d)
pids=()
# Interrupted: stop every shard's pytest and the nodes it started (each shard
# is a session of its own, see below).
# shellcheck disable=SC2317  # called by the trap
stop_shards() {
    for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
}
trap 'stop_shards; exit 130' INT
trap 'stop_shards; exit 143' TERM
trap 'rm -rf "$logs"' EXIT
# NET's nodes: 127.0.0.2 -> 127.0.0.21-25.
nodes_of() { echo "${1}1-${1##*.}5"; }
for i in "${!shards[@]}"; do
    read -r -a files <<<"${shards[$i]}"
    echo "== cluster shard $((i + 1))/${#shards[@]}, nodes on $(nodes_of "${nets[$i]}"): ${files[*]##*/}"
    # setsid: the shard's own process group, so that stop_shards reaches its nodes too.
    ROCKSANDRA_CLUSTER_NET="${nets[$i]}" setsid .venv/bin/pytest -q -p no:cacheprovider \
        --durations=10 "${files[@]}" >"$logs/$i.log" 2>&1 &
    pids+=("$!")
done
status=0
for i in "${!pids[@]}"; do
    if wait "${pids[$i]}"; then result=passed; else result=FAILED; status=1; fi
    echo "== cluster shard $((i + 1))/${#pids[@]} ($(nodes_of "${nets[$i]}")) $result at $(date +%T), ${SECONDS} s in"
    cat "$logs/$i.log"
done
exit "$status"
