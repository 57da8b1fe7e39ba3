#!/usr/bin/env bash
# Makes Rocksandra's release packages in target/package/ (docs/guide/installing.md):
#   rocksandra-VERSION-linux-ARCH.tar.gz  bin/rocksandra, conf/ (rocksandra.yaml
#       with every key at its default, the Grafana dashboard),
#       systemd/rocksandra.service, docs/, README.md, LICENSE, NOTICE;
#   rocksandra_VERSION-1_DEBARCH.deb      made by cargo-deb ([package.metadata.deb]
#       in crates/server/Cargo.toml, maintainer scripts in packaging/debian/):
#       /usr/bin/rocksandra, the conffile /etc/rocksandra/rocksandra.yaml (data
#       in /var/lib/rocksandra), the rocksandra user, /var/log/rocksandra and
#       rocksandra.service;
#   SHA256SUMS.
# The binary is stripped of its debug information (symbols stay, for
# backtraces). tests/package/test_package.sh installs the .deb and runs it.
#
#   scripts/package.sh                  # builds the release binary first
#   scripts/package.sh --binary PATH    # packages a release binary built already
#                                       # (or ROCKSANDRA_BIN=PATH)
#   scripts/package.sh --out DIR        # writes to DIR instead of target/package
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
# cargo-deb, pinned, installed once per machine under $HOME/.cache.
CARGO_DEB_VERSION=3.8.0
CARGO_TOOLS=$HOME/.cache/cargo-tools

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
binary=${ROCKSANDRA_BIN:-}
out=$ROOT/target/package
while [ $# -gt 0 ]; do
    case $1 in
        --binary) binary=${2:?--binary needs a path}; shift 2 ;;
        --out) out=${2:?--out needs a directory}; shift 2 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "package.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
done

# The workspace's version ([workspace.package] in Cargo.toml).
workspace_version() {
    sed -n '/^\[workspace\.package\]/,/^\[/s/^version = "\(.*\)"$/\1/p' Cargo.toml
}

# The release binary, built into the shared target directory; sets $binary.
build_binary() {
    export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/rocksandra-target}"
    . scripts/rocksdb-env.sh
    echo "== cargo build --release (rocksandra)"
    cargo build --release -p rocksandra-server --bin rocksandra
    binary=$CARGO_TARGET_DIR/release/rocksandra
}

# cargo-deb $CARGO_DEB_VERSION in $CARGO_TOOLS/bin, installed when missing
# (about 3 minutes on two cores, once), built in a temporary directory.
ensure_cargo_deb() {
    local have
    have=$("$CARGO_TOOLS/bin/cargo-deb" --version 2>/dev/null || true)
    if [ "$have" != "cargo-deb $CARGO_DEB_VERSION" ]; then
        echo "== installing cargo-deb $CARGO_DEB_VERSION into $CARGO_TOOLS"
        env -u CARGO_TARGET_DIR cargo install --quiet --locked --root "$CARGO_TOOLS" \
            cargo-deb --version "$CARGO_DEB_VERSION"
    fi
}

# /etc/rocksandra/rocksandra.yaml: conf/rocksandra.yaml under a header of
# its own (instead of the first paragraph, which says how that file is
# generated), with the data in /var/lib/rocksandra.
installed_yaml() {
    cat <<'EOF'
# /etc/rocksandra/rocksandra.yaml, from the rocksandra package: the
# configuration rocksandra.service runs the node with; dpkg keeps your
# changes on upgrades. Every key Rocksandra implements, set to its default
# (as in the project's conf/rocksandra.yaml) but for the data directory,
# /var/lib/rocksandra/data. Keys are named as in cassandra.yaml; lines
# starting with `# key:` are unset by default. Cassandra 5.0 keys
# Rocksandra does not use are accepted with a warning (configuration.md in
# /usr/share/doc/rocksandra lists them); any other key is an error. The
# service writes system.log to /var/log/rocksandra (its --log-dir).
EOF
    awk '
        NR == 1 && !/^# rocksandra\.yaml: / { exit 1 }
        !header_done { if ($0 == "") header_done = 1; else next }
        /^data_file_directories:$/ {
            print
            if ((getline line) <= 0 || line != "  - ./data") exit 1
            print "  - /var/lib/rocksandra/data"
            replaced = 1
            next
        }
        { print }
        END { if (!replaced) exit 1 }
    ' conf/rocksandra.yaml
}

# The tarball's tree in $1.
tarball_tree() {
    local tree=$1
    install -D -m 755 "$stage/release/rocksandra" "$tree/bin/rocksandra"
    mkdir -p "$tree/conf" "$tree/systemd" "$tree/docs"
    cp -r conf/. "$tree/conf/"
    cp packaging/rocksandra.service "$tree/systemd/"
    cp -r docs/guide "$tree/docs/"
    cp docs/configuration.md docs/compatibility.md docs/security.md "$tree/docs/"
    cp README.md LICENSE NOTICE "$tree/"
}

version=$(workspace_version)
[ -n "$version" ] || { echo "package.sh: no version in Cargo.toml's [workspace.package]" >&2; exit 1; }
scripts/setup-build.sh
[ -n "$binary" ] || build_binary
got=$("$binary" --version)
if [ "$got" != "rocksandra $version (release build)" ]; then
    echo "package.sh: $binary says \"$got\", not a release build of $version" >&2
    exit 1
fi
ensure_cargo_deb

# Only this script's own files are replaced in $out.
stage=$out/stage
rm -rf "$stage" "$out"/rocksandra-*.tar.gz "$out"/rocksandra_*.deb "$out/SHA256SUMS"
mkdir -p "$stage/release"
strip --strip-debug -o "$stage/release/rocksandra" "$binary"
installed_yaml >"$stage/release/rocksandra.yaml" ||
    { echo "package.sh: conf/rocksandra.yaml's header or data_file_directories (  - ./data) moved" >&2; exit 1; }

name=rocksandra-$version-linux-$(uname -m)
tarball_tree "$stage/$name"
# Reproducible: sorted, owned by root, dated at the last commit.
mtime=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner \
    --mtime="@$mtime" -czf "$out/$name.tar.gz" "$name"

# The staged directory stands for cargo's target directory (the assets'
# `target/release/`); --no-build: nothing is compiled.
CARGO_TARGET_DIR=$stage PATH="$CARGO_TOOLS/bin:$PATH" \
    cargo deb --no-build --no-strip --quiet -p rocksandra-server --output "$out/" >/dev/null
rm -rf "$stage"
(cd "$out" && sha256sum -- *.tar.gz *.deb >SHA256SUMS)
ls -l "$out"
