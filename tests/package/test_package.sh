#!/usr/bin/env bash
# Installs the .deb of scripts/package.sh on this machine and uses it:
# dpkg -i; the files, owners, conffile and `rocksandra` user it made; the
# installed binary started as rocksandra.service starts it (its ExecStart,
# as the rocksandra user) on a copy of the installed configuration whose
# ports are moved off the defaults; CREATE/INSERT/SELECT through cqlsh and
# nodetool status; a clean stop; dpkg -i again (an edited configuration and
# the data kept, the row read back); dpkg --remove (data, logs, user and
# configuration kept), then dpkg --purge (all of them gone); and, where no
# systemd runs, the systemctl calls of the maintainer scripts, to a stub.
#
# Needs root, and a machine where rocksandra is not installed and nothing
# is left of an earlier installation (it refuses otherwise, rather than
# purge someone's data). Checks the tarball beside the .deb too (layout,
# binary). About 10 seconds.
#
#   tests/package/test_package.sh [DEB]     # default: target/package/rocksandra_*.deb
#
# Ports (ROCKSANDRA_PACKAGE_*): CQL 9301, storage 9321, nodetool 9322, metrics 9341.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
CQL_PORT=${ROCKSANDRA_PACKAGE_CQL_PORT:-9301}
STORAGE_PORT=${ROCKSANDRA_PACKAGE_STORAGE_PORT:-9321}
ADMIN_PORT=${ROCKSANDRA_PACKAGE_ADMIN_PORT:-9322}
METRICS_PORT=${ROCKSANDRA_PACKAGE_METRICS_PORT:-9341}
CONFIG=/etc/rocksandra/rocksandra.yaml
UNIT=/lib/systemd/system/rocksandra.service

fail() {
    echo "test_package: FAIL: $*" >&2
    exit 1
}
step() { echo "-- $*"; }
owner_mode() { stat -c '%U:%G %a' "$1"; }
expect_owner_mode() {
    [ -e "$1" ] || fail "$1 does not exist"
    [ "$(owner_mode "$1")" = "$2" ] || fail "$1 is $(owner_mode "$1"), expected $2"
}
expect_absent() { [ ! -e "$1" ] || fail "$1 is still there"; }
package_status() { dpkg-query -W -f='${Status}' rocksandra 2>/dev/null || true; }
port_open() {
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $1), 0.2)" 2>/dev/null
}

# Refusals: not root, no package, or a machine this test would damage.
preconditions() {
    [ "$(id -u)" -eq 0 ] || fail "needs root (dpkg -i, a system user); run it as root"
    [ -f "$DEB" ] || fail "no package $DEB (scripts/package.sh makes it)"
    [ -z "$(package_status)" ] || fail "rocksandra is on this machine already ($(package_status)): this test would purge it"
    for path in /etc/rocksandra /var/lib/rocksandra /var/log/rocksandra; do
        [ ! -e "$path" ] || fail "$path exists already: this test would delete it"
    done
    ! getent passwd rocksandra >/dev/null || fail "a user rocksandra exists already"
    for port in "$CQL_PORT" "$STORAGE_PORT" "$ADMIN_PORT" "$METRICS_PORT"; do
        ! port_open "$port" || fail "port $port is in use"
    done
}

# After a failure too: the node stopped and the package purged.
cleanup() {
    if [ -n "${PID:-}" ] && kill -0 "$PID" 2>/dev/null; then
        kill -9 "$PID"
        wait "$PID" 2>/dev/null || true
    fi
    if [ -n "$(package_status)" ]; then
        dpkg --purge rocksandra >/dev/null 2>&1 || echo "test_package: dpkg --purge rocksandra failed" >&2
    fi
    rm -rf "$WORK"
}

check_installed() {
    step "installed: status, binary, conffile, user, directories, unit"
    [ "$(package_status)" = "install ok installed" ] || fail "dpkg says: $(package_status)"
    local version
    version=$(dpkg-deb -f "$DEB" Version)
    [ "$(/usr/bin/rocksandra --version)" = "rocksandra ${version%-*} (release build)" ] ||
        fail "/usr/bin/rocksandra --version says: $(/usr/bin/rocksandra --version)"
    expect_owner_mode /usr/bin/rocksandra "root:root 755"
    expect_owner_mode "$CONFIG" "root:root 644"
    dpkg-query -W -f='${Conffiles}' rocksandra | grep -q "^ $CONFIG " ||
        fail "$CONFIG is not a conffile"
    grep -A1 -x 'data_file_directories:' "$CONFIG" | grep -qx '  - /var/lib/rocksandra/data' ||
        fail "$CONFIG does not put the data in /var/lib/rocksandra/data"
    local uid home shell
    IFS=: read -r _ _ uid _ _ home shell < <(getent passwd rocksandra) || fail "no user rocksandra"
    [ "$uid" -lt 1000 ] || fail "rocksandra is not a system user (uid $uid)"
    [ "$home:$shell" = "/var/lib/rocksandra:/usr/sbin/nologin" ] || fail "rocksandra's home and shell: $home:$shell"
    getent group rocksandra >/dev/null || fail "no group rocksandra"
    expect_owner_mode /var/lib/rocksandra "rocksandra:rocksandra 750"
    expect_owner_mode /var/log/rocksandra "rocksandra:rocksandra 750"
    grep -qx 'User=rocksandra' "$UNIT" || fail "$UNIT does not run as rocksandra"
    grep -qx 'ExecStart=/usr/bin/rocksandra --config /etc/rocksandra/rocksandra.yaml --log-dir /var/log/rocksandra' "$UNIT" ||
        fail "$UNIT's ExecStart: $(grep '^ExecStart=' "$UNIT")"
    if command -v systemd-analyze >/dev/null; then
        systemd-analyze verify "$UNIT" || fail "systemd-analyze verify $UNIT"
    fi
    [ -f /usr/share/doc/rocksandra/copyright ] && [ -f /usr/share/doc/rocksandra/NOTICE ] ||
        fail "copyright or NOTICE missing from /usr/share/doc/rocksandra"
}

# Under a running systemd, postinst enabled and started the service (on
# the installed configuration's ports): checked, then stopped for ours.
check_service() {
    if [ -d /run/systemd/system ]; then
        step "systemd: rocksandra.service enabled and started by postinst"
        systemctl is-enabled --quiet rocksandra.service || fail "rocksandra.service is not enabled"
        systemctl is-active --quiet rocksandra.service || fail "rocksandra.service is not running"
        systemctl stop rocksandra.service
    else
        step "no systemd running: postinst left the service alone"
        ! pgrep -x rocksandra -u rocksandra >/dev/null || fail "a rocksandra process runs as rocksandra"
    fi
}

# The installed configuration, copied with the test's ports.
test_config() {
    install -m 644 "$CONFIG" "$WORK/rocksandra.yaml"
    sed -i -e "s/^native_transport_port: 9042\$/native_transport_port: $CQL_PORT/" \
        -e "s/^storage_port: 7000\$/storage_port: $STORAGE_PORT/" \
        -e "s/^admin_port: 7199\$/admin_port: $ADMIN_PORT/" \
        -e "s/^prometheus_port: 9180\$/prometheus_port: $METRICS_PORT/" "$WORK/rocksandra.yaml"
    for line in "native_transport_port: $CQL_PORT" "storage_port: $STORAGE_PORT" \
        "admin_port: $ADMIN_PORT" "prometheus_port: $METRICS_PORT"; do
        grep -qx "$line" "$WORK/rocksandra.yaml" || fail "could not set $line in the copy of $CONFIG"
    done
}

# The unit's ExecStart on the copy, as the rocksandra user, in its
# WorkingDirectory, with systemd's bare environment; sets PID.
start_node() {
    step "start: the unit's ExecStart as rocksandra, ports $CQL_PORT (CQL) $STORAGE_PORT $ADMIN_PORT $METRICS_PORT"
    local command
    command=$(sed -n 's/^ExecStart=//p' "$UNIT")
    [[ $command == *" --config $CONFIG "* ]] || fail "ExecStart does not name $CONFIG: $command"
    command=${command/ --config $CONFIG / --config $WORK/rocksandra.yaml }
    # shellcheck disable=SC2086 # the unit's command line, split as systemd splits it (no quotes in it)
    (cd /var/lib/rocksandra && exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        setpriv --reuid=rocksandra --regid=rocksandra --init-groups -- $command) \
        >"$WORK/stderr.log" 2>&1 &
    PID=$!
    for _ in $(seq 1 300); do
        port_open "$CQL_PORT" && break
        kill -0 "$PID" 2>/dev/null || { tail -20 "$WORK/stderr.log" >&2; fail "the node exited"; }
        sleep 0.1
    done
    port_open "$CQL_PORT" || { tail -20 "$WORK/stderr.log" >&2; fail "no CQL port $CQL_PORT after 30 s"; }
    [ "$(ps -o user= -p "$PID")" = rocksandra ] || fail "the node runs as $(ps -o user= -p "$PID")"
}

# cqlsh -e "$1" against the node; its output on stdout.
cql() {
    "$ROOT/.venv/bin/cqlsh" 127.0.0.1 "$CQL_PORT" -e "$1" || fail "cqlsh failed on: $1"
}

# The row written by use_node, read back.
expect_row() {
    local out
    out=$(cql "SELECT k, v FROM package_test.t WHERE k = 1;")
    grep -Eq '^ +1 \| +installed$' <<<"$out" || fail "SELECT did not return the row: $out"
    grep -q '^(1 rows)$' <<<"$out" || fail "SELECT did not return one row: $out"
}

use_node() {
    step "cqlsh: CREATE KEYSPACE, CREATE TABLE, INSERT, SELECT"
    cql "CREATE KEYSPACE package_test WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};
         CREATE TABLE package_test.t (k int PRIMARY KEY, v text);
         INSERT INTO package_test.t (k, v) VALUES (1, 'installed');" >/dev/null
    expect_row
    step "nodetool status"
    local out
    out=$(/usr/bin/rocksandra nodetool --port "$ADMIN_PORT" status) || fail "nodetool status failed: $out"
    grep -Eq '^UN +127\.0\.0\.1 ' <<<"$out" || fail "nodetool status: $out"
    step "files: data in /var/lib/rocksandra/data, system.log in /var/log/rocksandra, owned by rocksandra"
    [ "$(stat -c %U:%G /var/lib/rocksandra/data)" = rocksandra:rocksandra ] || fail "/var/lib/rocksandra/data is not rocksandra's"
    [ -n "$(find /var/lib/rocksandra/data -name '*.log' -user rocksandra)" ] || fail "no WAL of rocksandra's in /var/lib/rocksandra/data"
    [ "$(stat -c %U /var/log/rocksandra/system.log)" = rocksandra ] || fail "system.log is not rocksandra's"
    grep -q 'listening for CQL clients on 127.0.0.1:'"$CQL_PORT" /var/log/rocksandra/system.log ||
        fail "system.log has no startup line"
}

stop_node() {
    step "clean stop (SIGTERM)"
    kill -TERM "$PID"
    local status=0
    wait "$PID" || status=$?
    PID=""
    [ "$status" -eq 0 ] || { tail -20 "$WORK/stderr.log" >&2; fail "the node exited with $status"; }
    tail -1 /var/log/rocksandra/system.log | grep -q 'INFO rocksandra: stopped$' ||
        fail "system.log does not end with the node's stop: $(tail -1 /var/log/rocksandra/system.log)"
}

# dpkg -i over the installed package (an upgrade's path): an edit of the
# conffile and the data stay.
reinstall() {
    step "dpkg -i again: the edited configuration and the data stay"
    echo "# edited by test_package.sh" >>"$CONFIG"
    dpkg -i "$DEB" >"$WORK/dpkg.log" 2>&1 || { cat "$WORK/dpkg.log" >&2; fail "dpkg -i over the installed package"; }
    [ "$(tail -1 "$CONFIG")" = "# edited by test_package.sh" ] || fail "dpkg -i replaced the edited $CONFIG"
    expect_owner_mode /var/lib/rocksandra "rocksandra:rocksandra 750"
    start_node
    expect_row
    stop_node
}

remove_and_purge() {
    step "dpkg --remove: the binary and unit go; configuration, data, logs and user stay"
    dpkg --remove rocksandra >"$WORK/dpkg.log" 2>&1 || { cat "$WORK/dpkg.log" >&2; fail "dpkg --remove"; }
    [ "$(package_status)" = "deinstall ok config-files" ] || fail "after --remove dpkg says: $(package_status)"
    expect_absent /usr/bin/rocksandra
    expect_absent "$UNIT"
    [ -f "$CONFIG" ] || fail "$CONFIG went with --remove"
    [ -d /var/lib/rocksandra/data ] || fail "the data went with --remove"
    [ -f /var/log/rocksandra/system.log ] || fail "the logs went with --remove"
    getent passwd rocksandra >/dev/null || fail "the user went with --remove"
    step "dpkg --purge: configuration, data, logs and user gone"
    dpkg --purge rocksandra >"$WORK/dpkg.log" 2>&1 || { cat "$WORK/dpkg.log" >&2; fail "dpkg --purge"; }
    [ -z "$(package_status)" ] || fail "after --purge dpkg says: $(package_status)"
    expect_absent /etc/rocksandra
    expect_absent /var/lib/rocksandra
    expect_absent /var/log/rocksandra
    expect_absent /usr/share/doc/rocksandra
    ! getent passwd rocksandra >/dev/null || fail "the user rocksandra is still there"
    ! getent group rocksandra >/dev/null || fail "the group rocksandra is still there"
}

# The tarball beside the .deb: its layout, and its binary runs.
check_tarball() {
    local version tarball tree
    version=$(dpkg-deb -f "$DEB" Version)
    version=${version%-*}
    tarball=$(dirname "$DEB")/rocksandra-$version-linux-$(uname -m).tar.gz
    step "tarball $(basename "$tarball")"
    [ -f "$tarball" ] || fail "no $tarball beside $DEB"
    tar -C "$WORK" -xzf "$tarball"
    tree=$WORK/rocksandra-$version-linux-$(uname -m)
    for file in bin/rocksandra conf/rocksandra.yaml systemd/rocksandra.service \
        docs/guide/installing.md README.md LICENSE NOTICE; do
        [ -f "$tree/$file" ] || fail "$file is not in the tarball"
    done
    cmp -s "$tree/conf/rocksandra.yaml" conf/rocksandra.yaml || fail "the tarball's conf/rocksandra.yaml is not the project's"
    [ "$("$tree/bin/rocksandra" --version)" = "rocksandra $version (release build)" ] ||
        fail "the tarball's binary says: $("$tree/bin/rocksandra" --version)"
    rm -rf "$tree"
}

# Where no systemd runs, the maintainer scripts' systemd branch all the
# same: in a mount namespace of its own, /run/systemd/system exists and
# systemctl is a stub that records its arguments; install, reinstall,
# remove and purge must call it as a running systemd needs.
check_systemd_branch() {
    [ ! -d /run/systemd/system ] || return 0
    step "maintainer scripts under systemd (a stub systemctl, in a mount namespace)"
    unshare --mount true || fail "unshare --mount is refused here (it needs CAP_SYS_ADMIN)"
    local calls=$WORK/systemctl.calls
    mkdir "$WORK/stub"
    printf '#!/bin/sh\necho "$*" >>%s\n' "$calls" >"$WORK/stub/systemctl"
    chmod 755 "$WORK/stub/systemctl"
    # shellcheck disable=SC2016 # expanded by the inner sh
    unshare --mount sh -c 'mount -t tmpfs none /run && mkdir -p /run/systemd/system &&
        PATH=$1:$PATH && dpkg -i "$2" && dpkg -i "$2" && dpkg --remove rocksandra &&
        dpkg --purge rocksandra' sh "$WORK/stub" "$DEB" >"$WORK/dpkg.log" 2>&1 ||
        { cat "$WORK/dpkg.log" >&2; fail "dpkg under the stub systemd"; }
    local expected="daemon-reload
enable --now rocksandra.service
daemon-reload
try-restart rocksandra.service
--no-reload disable rocksandra.service
stop rocksandra.service
daemon-reload
daemon-reload"
    [ "$(cat "$calls")" = "$expected" ] || fail "systemctl calls: $(tr '\n' ';' <"$calls")"
    [ -z "$(package_status)" ] || fail "after --purge dpkg says: $(package_status)"
}

if [ $# -gt 0 ]; then
    DEB=$1
else
    debs=(target/package/rocksandra_*.deb)
    [ ${#debs[@]} -eq 1 ] || fail "expected one target/package/rocksandra_*.deb, found: ${debs[*]}"
    DEB=${debs[0]}
fi
preconditions
scripts/test-env.sh
started=$(date +%s)
WORK=$(mktemp -d)
chmod 755 "$WORK"
PID=""
trap cleanup EXIT
check_tarball
step "dpkg -i $DEB"
dpkg -i "$DEB" >"$WORK/dpkg.log" 2>&1 || { cat "$WORK/dpkg.log" >&2; fail "dpkg -i"; }
check_installed
check_service
test_config
start_node
use_node
stop_node
reinstall
remove_and_purge
check_systemd_branch
echo "package test passed in $(($(date +%s) - started)) s"
