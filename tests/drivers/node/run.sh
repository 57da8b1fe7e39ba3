#!/usr/bin/env bash
# Runs the Node.js driver tests (cassandra-driver, pinned in package-lock.json)
# against $ROCKSANDRA_HOST:$ROCKSANDRA_PORT (defaults 127.0.0.1:9042). Needs
# Node.js 20 or newer (cassandra-driver 4.10 asks for it) (scripts/setup-build.sh installs it from Debian when
# missing); npm's cache lives under ~/.cache/npm. Exit status is the tests'.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
export ROCKSANDRA_HOST="${ROCKSANDRA_HOST:-127.0.0.1}"
export ROCKSANDRA_PORT="${ROCKSANDRA_PORT:-9042}"
npm ci --cache "$HOME/.cache/npm" --no-audit --no-fund --loglevel=error
exec node --test --test-concurrency=1 test/
