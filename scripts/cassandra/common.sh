# Shared settings for scripts/cassandra/*.sh (sourced, not executed).
# Everything lives under $ROCKSANDRA_CACHE (default ~/.cache/rocksandra):
#   cassandra-5.0.6/lib    jars resolved from Maven Central (setup.sh)
#   cassandra-5.0.6/node1  default --base: conf/, data/, logs/, cassandra.pid

CASSANDRA_VERSION=5.0.6
ROCKSANDRA_CACHE=${ROCKSANDRA_CACHE:-$HOME/.cache/rocksandra}
CASSANDRA_HOME=${CASSANDRA_HOME_DIR:-$ROCKSANDRA_CACHE/cassandra-$CASSANDRA_VERSION}
CASSANDRA_LIB=$CASSANDRA_HOME/lib
DEFAULT_BASE=$CASSANDRA_HOME/node1
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# JDK 17 (Cassandra 5.0 runs on 11 or 17; the machine also has a JDK 25, which it rejects).
find_java17() {
    local cand
    for cand in "${JAVA17_HOME:-}" "${JAVA_HOME:-}" /usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/jvm/java-17-openjdk-arm64 /usr/lib/jvm/temurin-17-jdk-amd64; do
        [ -n "$cand" ] && [ -x "$cand/bin/java" ] || continue
        if "$cand/bin/java" -version 2>&1 | grep -q 'version "17\.'; then
            echo "$cand/bin/java"; return 0
        fi
    done
    if command -v java >/dev/null && java -version 2>&1 | grep -q 'version "17\.'; then
        command -v java; return 0
    fi
    echo "error: no JDK 17 found (set JAVA17_HOME)" >&2
    return 1
}

# Is something accepting TCP connections on host:port?
port_open() {
    python3 - "$1" "$2" <<'PY'
import socket, sys
s = socket.socket()
s.settimeout(1.0)
try:
    s.connect((sys.argv[1], int(sys.argv[2])))
except OSError:
    sys.exit(1)
finally:
    s.close()
PY
}

# Does a CQL server answer OPTIONS on host:port (native protocol v4 frame)?
cql_ready() {
    python3 - "$1" "$2" <<'PY'
import socket, struct, sys
try:
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2.0)
    # v4 request header: version, flags, stream, opcode OPTIONS (0x05), body length 0
    s.sendall(struct.pack(">BBhBI", 0x04, 0, 1, 0x05, 0))
    hdr = b""
    while len(hdr) < 9:
        chunk = s.recv(9 - len(hdr))
        if not chunk:
            sys.exit(1)
        hdr += chunk
    # response opcode SUPPORTED (0x06)
    sys.exit(0 if hdr[0] == 0x84 and hdr[4] == 0x06 else 1)
except OSError:
    sys.exit(1)
PY
}

# Does host:port accept a PasswordAuthenticator login as user/password
# (STARTUP, then AUTH_RESPONSE with SASL PLAIN, over native protocol v4)?
cql_login() {
    python3 - "$1" "$2" "$3" "$4" <<'PY'
import socket, struct, sys
host, port, user, password = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]

def frame(s, opcode, body):
    s.sendall(struct.pack(">BBhBI", 0x04, 0, 1, opcode, len(body)) + body)
    hdr = b""
    while len(hdr) < 9:
        chunk = s.recv(9 - len(hdr))
        if not chunk:
            sys.exit(1)
        hdr += chunk
    length = struct.unpack(">I", hdr[5:9])[0]
    data = b""
    while len(data) < length:
        chunk = s.recv(length - len(data))
        if not chunk:
            sys.exit(1)
        data += chunk
    return hdr[4]

def string(x):
    return struct.pack(">H", len(x)) + x

try:
    s = socket.create_connection((host, port), timeout=5.0)
    # STARTUP {CQL_VERSION: 3.0.0} -> AUTHENTICATE (0x03)
    if frame(s, 0x01, struct.pack(">H", 1) + string(b"CQL_VERSION") + string(b"3.0.0")) != 0x03:
        sys.exit(1)
    token = b"\0" + user.encode() + b"\0" + password.encode()
    # AUTH_RESPONSE -> AUTH_SUCCESS (0x10)
    sys.exit(0 if frame(s, 0x0F, struct.pack(">i", len(token)) + token) == 0x10 else 1)
except OSError:
    sys.exit(1)
PY
}
