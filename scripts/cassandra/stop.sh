#!/usr/bin/env bash
# Stop the Cassandra node started by start.sh (by the pid in DIR/cassandra.pid).
#
#   scripts/cassandra/stop.sh [--base DIR] [--timeout SECS]
#
# Sends SIGTERM (Cassandra's shutdown hook drains and flushes), waits up to
# --timeout seconds (default 60), then SIGKILL. With --wipe also deletes the
# node's data, commit log and logs (the next start boots a fresh node).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

BASE=$DEFAULT_BASE
TIMEOUT=60
WIPE=0
while [ $# -gt 0 ]; do
    case "$1" in
        --base) BASE=$2; shift 2 ;;
        --timeout) TIMEOUT=$2; shift 2 ;;
        --wipe) WIPE=1; shift ;;
        -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
done
PIDFILE=$BASE/cassandra.pid

if [ -f "$PIDFILE" ]; then
    PID=$(cat "$PIDFILE")
    if kill -0 "$PID" 2>/dev/null; then
        kill -TERM "$PID"
        for _ in $(seq 1 "$TIMEOUT"); do
            kill -0 "$PID" 2>/dev/null || break
            sleep 1
        done
        if kill -0 "$PID" 2>/dev/null; then
            echo "cassandra (pid $PID) did not stop in ${TIMEOUT}s; killing" >&2
            kill -KILL "$PID" 2>/dev/null || true
        fi
        echo "cassandra (pid $PID) stopped"
    else
        echo "cassandra not running (stale pid file)"
    fi
    rm -f "$PIDFILE"
else
    echo "cassandra not running (no $PIDFILE)"
fi

if [ "$WIPE" = 1 ]; then
    rm -rf "$BASE/data" "$BASE/logs"
    echo "wiped $BASE/data and $BASE/logs"
fi
