#!/usr/bin/env bash
# Runs the gocql driver tests against $ROCKSANDRA_HOST:$ROCKSANDRA_PORT
# (defaults 127.0.0.1:9042). Exit status is the test status.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")"

export ROCKSANDRA_HOST="${ROCKSANDRA_HOST:-127.0.0.1}"
export ROCKSANDRA_PORT="${ROCKSANDRA_PORT:-9042}"

# A Go toolchain of at least 1.23 (go.mod): the one installed, or else the
# official release fetched once from the Go module proxy (golang.org/toolchain).
GO_FALLBACK_VERSION=1.23.4
go_ok() { "$1" version 2>/dev/null | grep -Eq 'go1\.(2[3-9]|[3-9][0-9])'; }
GO="${GO:-}"
if [ -z "$GO" ]; then
    if command -v go >/dev/null 2>&1 && go_ok go; then GO=go
    elif go_ok /usr/local/go/bin/go; then GO=/usr/local/go/bin/go
    else
        dir="$HOME/.cache/go-toolchain/go$GO_FALLBACK_VERSION"
        if [ ! -x "$dir/go/bin/go" ]; then
            echo "run.sh: fetching Go $GO_FALLBACK_VERSION from proxy.golang.org" >&2
            python3 - "$dir" "$GO_FALLBACK_VERSION" <<'PY'
import io, os, sys, urllib.request, zipfile
dest, version = sys.argv[1], sys.argv[2]
url = "https://proxy.golang.org/golang.org/toolchain/@v/v0.0.1-go%s.linux-amd64.zip" % version
data = urllib.request.urlopen(url, timeout=300).read()
prefix = "golang.org/toolchain@v0.0.1-go%s.linux-amd64/" % version
with zipfile.ZipFile(io.BytesIO(data)) as z:
    for info in z.infolist():
        if not info.filename.startswith(prefix) or info.is_dir():
            continue
        path = os.path.join(dest, "go", info.filename[len(prefix):])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(z.read(info))
        mode = (info.external_attr >> 16) & 0o777
        os.chmod(path, mode or 0o644)
PY
        fi
        GO="$dir/go/bin/go"
    fi
fi

# Keep Go's caches under ~/.cache; modules come from the proxy when missing.
export GOPATH="${GOPATH:-$HOME/.cache/go}"
export GOMODCACHE="${GOMODCACHE:-$HOME/.cache/go/mod}"
export GOCACHE="${GOCACHE:-$HOME/.cache/go-build}"
export GOFLAGS="${GOFLAGS:--mod=mod}"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

exec "$GO" test -count=1 -v ./... "$@"
