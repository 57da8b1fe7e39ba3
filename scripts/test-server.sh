#!/usr/bin/env bash
# Runs the suites that need a real server process: builds `rocksandra`,
# starts it on 127.0.0.1:9042 with a fresh data directory, runs the golden
# CQL suite (statement-level baseline in tests/golden/baseline.json), the
# golden auth_* cases on a second server with PasswordAuthenticator and
# CassandraAuthorizer (127.0.0.1:9044, ROCKSANDRA_TEST_AUTH_PORT; those with
# `server-yaml` markers on one with those lines too), the
# Python driver and cqlsh tests, the Rust (scylla), Go (gocql), Node.js and
# Java driver tests through unmodified clients, scrapes its metrics
# endpoint, stops it with SIGTERM (a clean shutdown is part of the test).
# Beside the golden runs, the process tests (restart, kill -9,
# PasswordAuthenticator; `rocksandra migrate` from an Apache Cassandra 5.0.6
# it starts on 127.0.0.1:9460, fetching its jars first on a new machine as
# scripts/cassandra/start.sh does; ~90 s alone), on ports of their own.
# Beside the driver tests, the multi-process cluster tests
# (scripts/test-cluster.sh: in shards at once, each on its own loopback net).
#
# The golden runs on the auth server and the per-configuration servers go
# in the background beside the main server's v3/v4/v5 runs (servers, ports
# and directories of their own). Measured on 2026-11-29 on the 2-core
# machine, the golden steps (main server's start to the last run's end),
# same results each time: one after another 243 s and 243 s, then 196 s on
# a later tree; beside each other 159 s and 150 s, then 150 s on that tree.
# What runs beside what follows the CPU each step used alone (stop 38, a
# warm run, the whole machine's busy time): golden runs with the process
# tests beside them 1.4 cores, driver
# tests 0.44, cluster tests 0.97.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/rocksandra-target}"
. scripts/rocksdb-env.sh
scripts/test-env.sh
cargo build -p rocksandra-server --bin rocksandra --features fault-injection
BIN="$CARGO_TARGET_DIR/debug/rocksandra"

WORK=$(mktemp -d)
# The golden suite was recorded against a node on 9042 (system.local shows
# its rpc_port), so the server under test listens there too.
PORT=${ROCKSANDRA_TEST_PORT:-9042}
# The auth_* golden cases need logins: a second server with the auth yaml.
AUTH_PORT=${ROCKSANDRA_TEST_AUTH_PORT:-9044}
# The per-configuration golden servers: CONFIG_PORT, CONFIG_PORT + 1, ...
# (clear of the process tests' ports, 9043-9058, which run beside them).
CONFIG_PORT=${ROCKSANDRA_TEST_CONFIG_PORT:-9140}
port_open() {
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $1), 0.2)" 2>/dev/null
}
for port in "$PORT" "$AUTH_PORT"; do
    if port_open "$port"; then
        echo "port $port is already in use (stop the server there, or set ROCKSANDRA_TEST_PORT / ROCKSANDRA_TEST_AUTH_PORT)" >&2
        exit 1
    fi
done
# start_server NAME PORT [ARGS...]: $BIN on 127.0.0.1:PORT with data and log
# under $WORK/NAME; its pid in SERVER_PID once the port answers.
start_server() {
    local name=$1 port=$2
    shift 2
    mkdir -p "$WORK/$name"
    # No nodetool port: 7199 may be taken (by Cassandra's JMX, or another server here).
    "$BIN" --data-dir "$WORK/$name/data" --listen-address 127.0.0.1 --native-port "$port" \
        --admin-port 0 "$@" \
        >"$WORK/$name/server.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 1 100); do port_open "$port" && break; sleep 0.1; done
}
# stop_server PID: SIGTERM, and a failure unless it exits within 10 s.
stop_server() {
    if kill -0 "$1" 2>/dev/null; then
        kill -TERM "$1"
        for _ in $(seq 1 100); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$1" 2>/dev/null; then
            echo "server did not stop within 10 s of SIGTERM" >&2
            kill -9 "$1"; return 1
        fi
    fi
    wait "$1" 2>/dev/null || true
}
# The metrics endpoint on a free port (9180 may belong to another server here).
METRICS_PORT=$(python3 -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
start_server main "$PORT" --prometheus-port "$METRICS_PORT"
PID=$SERVER_PID
OTHERS_PID=""
PROCESS_PID=""
CLUSTER_PID=""
stop() { stop_server "$PID"; }
trap 'stop || true; [ -z "$OTHERS_PID" ] || { kill -TERM "$OTHERS_PID"; wait "$OTHERS_PID"; } || true
      [ -z "$PROCESS_PID" ] || { kill -TERM -- "-$PROCESS_PID"; wait "$PROCESS_PID"; } || true
      [ -z "$CLUSTER_PID" ] || { kill -TERM "$CLUSTER_PID"; wait "$CLUSTER_PID"; } || true
      echo "--- server log (last 40 lines)"; tail -40 "$WORK/main/server.log"; rm -rf "$WORK"' EXIT

status=0
# v3 has its own ratchet: it lacks unset values, warnings and v4's error
# codes, so fewer statements match the output recorded in v4.
baseline() { if [ "$1" = 3 ]; then echo tests/golden/baseline-v3.json; else echo tests/golden/baseline.json; fi; }
# A server per configuration the cases name (`-- golden: server-yaml`
# lines), one after another on config_port and up, each running its cases:
# `plain` for the cases without login (v4 and v5), `auth` for the auth_*
# ones, on the auth server's yaml plus their lines (v3, v4 and v5).
golden_config_servers() {
    local kind=$1 status=0 config yaml line versions="4 5" label="CQL suite" login=()
    if [ "$kind" = auth ]; then
        versions="3 4 5"; label="auth cases"; login=(--username cassandra --password cassandra)
    fi
    while IFS= read -r config; do
        [ -n "$config" ] || continue
        yaml="$WORK/golden-$kind-$config_port.yaml"
        python3 -c 'import json, sys; open(sys.argv[2], "w").write("".join(l + "\n" for l in json.loads(sys.argv[1])))' \
            "$config" "$yaml"
        local yaml_args=()
        while IFS= read -r line; do yaml_args+=(--server-yaml "$line"); done <"$yaml"
        if [ "$kind" = auth ]; then cat "$WORK/auth.yaml" >>"$yaml"; fi
        if port_open "$config_port"; then
            echo "port $config_port is already in use" >&2; status=1; break
        fi
        start_server "$kind-config-$config_port" "$config_port" --config "$yaml" --prometheus-port 0
        other_pid=$SERVER_PID
        for version in $versions; do
            echo "== golden $label with: $(tr '\n' ' ' <"$yaml")(protocol v$version)"
            .venv/bin/python tests/golden/runner.py --host 127.0.0.1 --port "$config_port" --quiet \
                "${login[@]}" --protocol-version "$version" --baseline "$(baseline "$version")" \
                "${yaml_args[@]}" || { status=1; tail -20 "$WORK/$kind-config-$config_port/server.log"; }
        done
        stop_server "$other_pid" || status=1
        other_pid=""
        config_port=$((config_port + 1))
    done < <(.venv/bin/python tests/golden/runner.py "${login[@]}" --list-server-configs)
    return $status
}
# golden_other_servers (run in the background): the auth_* cases on a
# server with logins, then the cases written for another configuration
# (`-- golden: server-yaml`) on a server each, on CONFIG_PORT and up. Its
# servers and ports are its own, so it runs beside the main server's golden
# runs; stopped, it stops the server it has running.
golden_other_servers() {
    local status=0 version config_port=$CONFIG_PORT
    other_pid=""
    trap '[ -z "$other_pid" ] || stop_server "$other_pid" || true' EXIT
    # UDFs, column masks and materialized views on too, for auth_udf and the
    # auth_masking* cases (recorded against Cassandra started with --auth
    # --yaml 'user_defined_functions_enabled: true' --yaml
    # 'dynamic_data_masking_enabled: true' --yaml 'materialized_views_enabled: true').
    printf '%s\n' 'authenticator: PasswordAuthenticator' 'authorizer: CassandraAuthorizer' \
        'roles_validity: 0ms' 'permissions_validity: 0ms' 'credentials_validity: 0ms' \
        'user_defined_functions_enabled: true' 'dynamic_data_masking_enabled: true' \
        'materialized_views_enabled: true' >"$WORK/auth.yaml"
    start_server auth "$AUTH_PORT" --config "$WORK/auth.yaml" --prometheus-port 0
    other_pid=$SERVER_PID
    # Logged in as PasswordAuthenticator's default superuser, runner.py runs
    # the auth_* cases only.
    for version in 3 4 5; do
        echo "== golden auth cases (protocol v$version, PasswordAuthenticator, CassandraAuthorizer)"
        .venv/bin/python tests/golden/runner.py --host 127.0.0.1 --port "$AUTH_PORT" --quiet \
            --username cassandra --password cassandra --protocol-version "$version" \
            --baseline "$(baseline "$version")" || { status=1; tail -20 "$WORK/auth/server.log"; }
    done
    stop_server "$other_pid" || status=1
    other_pid=""
    golden_config_servers plain || status=1
    # The auth_* cases written for another configuration (`-- golden:
    # server-yaml` in an auth case): the auth server's yaml and their lines.
    golden_config_servers auth || status=1
    return $status
}
# The golden runs wait on their cases' pauses (TTLs, index builds) and on
# one statement at a time: the process tests (their own servers and ports,
# mostly waiting for restarts) go in the background beside them.
echo "== process tests (restart, kill -9), in the background ($(date +%T))"
# setsid: a process group of its own, so that the trap reaches its servers too.
ROCKSANDRA_BIN="$BIN" setsid .venv/bin/pytest -q -p no:cacheprovider --durations=15 tests/process \
    >"$WORK/process.log" 2>&1 &
PROCESS_PID=$!
echo "== golden cases on other servers (auth, other configurations), in the background ($(date +%T))"
golden_other_servers >"$WORK/golden-others.log" 2>&1 &
OTHERS_PID=$!
for version in 3 4 5; do
    echo "== golden CQL suite (protocol v$version)"
    .venv/bin/python tests/golden/runner.py --host 127.0.0.1 --port "$PORT" --quiet \
        --protocol-version "$version" --baseline "$(baseline "$version")" || status=1
done
wait "$OTHERS_PID" || status=1
OTHERS_PID=""
cat "$WORK/golden-others.log"
# The cluster tests (their nodes on 127.0.0.11-35, mostly waiting on gossip,
# streaming and timeouts: about one core) go in the background beside the
# driver tests (about half a core, on the main server alone).
echo "== cluster tests, in shards, in the background (scripts/test-cluster.sh) ($(date +%T))"
ROCKSANDRA_BIN="$BIN" scripts/test-cluster.sh >"$WORK/cluster.log" 2>&1 &
CLUSTER_PID=$!
echo "== Python driver and cqlsh tests ($(date +%T))"
ROCKSANDRA_HOST=127.0.0.1 ROCKSANDRA_PORT="$PORT" .venv/bin/pytest -q -p no:cacheprovider \
    tests/drivers/python || status=1
echo "== Rust driver (scylla) tests ($(date +%T))"
ROCKSANDRA_HOST=127.0.0.1 ROCKSANDRA_PORT="$PORT" CARGO_TARGET_DIR="$HOME/.cache/target-drivers-rust" \
    tests/drivers/rust/run.sh || status=1
echo "== Go driver (gocql) tests ($(date +%T))"
ROCKSANDRA_HOST=127.0.0.1 ROCKSANDRA_PORT="$PORT" tests/drivers/go/run.sh || status=1
echo "== Node.js driver (cassandra-driver) tests ($(date +%T))"
ROCKSANDRA_HOST=127.0.0.1 ROCKSANDRA_PORT="$PORT" tests/drivers/node/run.sh || status=1
echo "== Java driver (java-driver-core 4.x) tests ($(date +%T))"
ROCKSANDRA_HOST=127.0.0.1 ROCKSANDRA_PORT="$PORT" tests/drivers/java/run.sh || status=1
echo "== metrics endpoint ($(date +%T))"
python3 - "$METRICS_PORT" <<'PY' || status=1
import sys, urllib.request
with urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=10) as r:
    assert r.headers["Content-Type"].startswith("application/openmetrics-text"), r.headers
    samples = dict(l.rsplit(" ", 1) for l in r.read().decode().splitlines() if not l.startswith("#"))
for op in ("query", "execute", "prepare", "batch"):
    assert float(samples['rocksandra_cql_requests_total{op="%s"}' % op]) > 0, op
assert float(samples["rocksandra_storage_sst_bytes"]) >= 0
assert float(samples["rocksandra_process_resident_memory_bytes"]) > 0
print("requests counted, storage and process metrics present")
PY
echo "== clean shutdown ($(date +%T))"
stop || status=1
echo "== process tests (restart, kill -9), from the background ($(date +%T))"
wait "$PROCESS_PID" || { status=1; echo "process tests FAILED"; }
PROCESS_PID=""
cat "$WORK/process.log"
echo "== cluster tests, from the background ($(date +%T))"
wait "$CLUSTER_PID" || { status=1; echo "cluster tests FAILED"; }
CLUSTER_PID=""
cat "$WORK/cluster.log"
exit $status
