#!/usr/bin/env bash
# Runs the suites that need a real server process: builds `rocksandra`,
# starts it on 127.0.0.1:9042 with a fresh data directory, runs the golden
# CQL suite (statement-level baseline in tests/golden/baseline.json), the
# Python driver and cqlsh tests, the Rust (scylla) and Go (gocql) driver tests through
# unmodified clients, scrapes its metrics endpoint, stops it with SIGTERM (a
# clean shutdown is part of the test), then the process tests (restart,
# kill -9, PasswordAuthenticator) and the multi-process cluster tests.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/rocksandra-target}"
. scripts/rocksdb-env.sh
scripts/test-env.sh
cargo build -p rocksandra-server --bin rocksandra
BIN="$CARGO_TARGET_DIR/debug/rocksandra"

WORK=$(mktemp -d)
# The golden suite was recorded against a node on 9042 (system.local shows
# its rpc_port), so the server under test listens there too.
PORT=${ROCKSANDRA_TEST_PORT:-9042}
if python3 -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 0.2)" 2>/dev/null; then
    echo "port $PORT is already in use (stop the server there, or set ROCKSANDRA_TEST_PORT)" >&2
    exit 1
fi
# The metrics endpoint on a free port (9180 may belong to another server here).
METRICS_PORT=$(python3 -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
"$BIN" --data-dir "$WORK/data" --listen-address 127.0.0.1 --native-port "$PORT" \
    --prometheus-port "$METRICS_PORT" >"$WORK/server.log" 2>&1 &
PID=$!
stop() {
    if kill -0 "$PID" 2>/dev/null; then
        kill -TERM "$PID"
        for _ in $(seq 1 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$PID" 2>/dev/null; then
            echo "server did not stop within 10 s of SIGTERM" >&2
            kill -9 "$PID"; return 1
        fi
    fi
    wait "$PID" 2>/dev/null || true
}
trap 'stop || true; echo "--- server log (last 40 lines)"; tail -40 "$WORK/server.log"; rm -rf "$WORK"' EXIT
for _ in $(seq 1 100); do
    if python3 -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 0.2)" 2>/dev/null; then break; fi
    sleep 0.1
done

status=0
echo "== golden CQL suite (protocol v4)"
.venv/bin/python tests/golden/runner.py --host 127.0.0.1 --port "$PORT" --quiet \
    --baseline tests/golden/baseline.json || status=1
echo "== golden CQL suite (protocol v5)"
.venv/bin/python tests/golden/runner.py --host 127.0.0.1 --port "$PORT" --quiet \
    --protocol-version 5 --baseline tests/golden/baseline.json || status=1
# Cases written for another configuration (`-- golden: server-yaml`): a
# server of their own each, on the next free ports.
CONFIG_PORT=$((PORT + 4))
while IFS= read -r config; do
    [ -n "$config" ] || continue
    yaml="$WORK/golden-$CONFIG_PORT.yaml"
    yaml_args=()
    python3 - "$config" "$yaml" <<'PY'
import json, sys
with open(sys.argv[2], "w") as f:
    f.write("".join(line + "\n" for line in json.loads(sys.argv[1])))
PY
    while IFS= read -r line; do yaml_args+=(--server-yaml "$line"); done < "$yaml"
    echo "== golden CQL suite with: $(tr '\n' ' ' < "$yaml")(port $CONFIG_PORT)"
    "$BIN" --config "$yaml" --data-dir "$WORK/data-$CONFIG_PORT" --listen-address 127.0.0.1 \
        --native-port "$CONFIG_PORT" --prometheus-port 0 >"$WORK/server-$CONFIG_PORT.log" 2>&1 &
    config_pid=$!
    for _ in $(seq 1 100); do
        if python3 -c "import socket; socket.create_connection(('127.0.0.1', $CONFIG_PORT), 0.2)" 2>/dev/null; then break; fi
        sleep 0.1
    done
    for version in 4 5; do
        .venv/bin/python tests/golden/runner.py --host 127.0.0.1 --port "$CONFIG_PORT" --quiet \
            --protocol-version "$version" --baseline tests/golden/baseline.json "${yaml_args[@]}" || status=1
    done
    kill -TERM "$config_pid"; wait "$config_pid" 2>/dev/null || true
    CONFIG_PORT=$((CONFIG_PORT + 1))
done < <(.venv/bin/python tests/golden/runner.py --list-server-configs)
echo "== Python driver and cqlsh tests"
ROCKSANDRA_HOST=127.0.0.1 ROCKSANDRA_PORT="$PORT" .venv/bin/pytest -q -p no:cacheprovider \
    tests/drivers/python || status=1
echo "== Rust driver (scylla) tests"
ROCKSANDRA_HOST=127.0.0.1 ROCKSANDRA_PORT="$PORT" CARGO_TARGET_DIR="$HOME/.cache/target-drivers-rust" \
    tests/drivers/rust/run.sh || status=1
echo "== Go driver (gocql) tests"
ROCKSANDRA_HOST=127.0.0.1 ROCKSANDRA_PORT="$PORT" tests/drivers/go/run.sh || status=1
echo "== metrics endpoint"
python3 - "$METRICS_PORT" <<'PY' || status=1
import sys, urllib.request
with urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=10) as r:
    assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4"), r.headers
    samples = dict(l.rsplit(" ", 1) for l in r.read().decode().splitlines() if not l.startswith("#"))
for op in ("query", "execute", "prepare", "batch"):
    assert float(samples['rocksandra_cql_requests_total{op="%s"}' % op]) > 0, op
assert float(samples["rocksandra_storage_sst_bytes"]) >= 0
assert float(samples["rocksandra_process_resident_memory_bytes"]) > 0
print("requests counted, storage and process metrics present")
PY
echo "== clean shutdown"
stop || status=1
echo "== process tests (restart, kill -9)"
ROCKSANDRA_BIN="$BIN" .venv/bin/pytest -q -p no:cacheprovider tests/process || status=1
echo "== cluster tests (real nodes on 127.0.0.11-15)"
ROCKSANDRA_BIN="$BIN" .venv/bin/pytest -q -p no:cacheprovider tests/cluster || status=1
exit $status
