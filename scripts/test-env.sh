#!/usr/bin/env bash
# Create (or refresh) the test virtualenv at <repo>/.venv from requirements-test.txt.
# Idempotent and quiet: does nothing when .venv already matches the requirements.
#
#   scripts/test-env.sh            # then: .venv/bin/python, .venv/bin/pytest, .venv/bin/cqlsh
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=$ROOT/.venv
REQ=$ROOT/requirements-test.txt
STAMP=$VENV/.requirements-test.sha256
PY=${PYTHON:-python3}

want=$(sha256sum "$REQ" | cut -d' ' -f1)
if [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
    exit 0
fi
if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
fi
"$VENV/bin/pip" install -q --disable-pip-version-check -r "$REQ"
echo "$want" > "$STAMP"
echo "test environment ready: $VENV"
