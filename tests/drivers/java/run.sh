#!/usr/bin/env bash
# Runs the Java driver tests (org.apache.cassandra:java-driver-core 4.x,
# JUnit 5, Maven) against $ROCKSANDRA_HOST:$ROCKSANDRA_PORT (defaults
# 127.0.0.1:9042). Needs JDK 17 and Maven (scripts/setup-build.sh installs
# them from Debian when missing); Maven's repository lives under
# ~/.cache/m2. Exit status is the tests'.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
export ROCKSANDRA_HOST="${ROCKSANDRA_HOST:-127.0.0.1}"
export ROCKSANDRA_PORT="${ROCKSANDRA_PORT:-9042}"
exec mvn -B -q -Dmaven.repo.local="$HOME/.cache/m2" -Dstyle.color=never test
