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
    cql_probe "$1" "$2"
}

# Does host:port accept a PasswordAuthenticator login as user/password
# (STARTUP, then AUTH_RESPONSE with SASL PLAIN, over native protocol v4)?
cql_login() {
    cql_probe "$1" "$2" "$3" "$4"
}

# cql_probe HOST PORT [USER PASSWORD]: the two checks above, one v4 exchange
# at a time.
cql_probe() {
    python3 - "$@" <<'PY'
import socket, struct, sys
host, port, login = sys.argv[1], int(sys.argv[2]), sys.argv[3:]

def receive(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            sys.exit(1)
        data += chunk
    return data

def request(s, opcode, body):
    """Send a v4 request frame; the response's version and opcode."""
    s.sendall(struct.pack(">BBhBI", 0x04, 0, 1, opcode, len(body)) + body)
    hdr = receive(s, 9)
    receive(s, struct.unpack(">I", hdr[5:9])[0])
    return hdr[0], hdr[4]

def string(x):
    return struct.pack(">H", len(x)) + x

try:
    s = socket.create_connection((host, port), timeout=5.0)
    if not login:
        # OPTIONS (0x05) -> SUPPORTED (0x06)
        sys.exit(0 if request(s, 0x05, b"") == (0x84, 0x06) else 1)
    # STARTUP {CQL_VERSION: 3.0.0} -> AUTHENTICATE (0x03)
    startup = struct.pack(">H", 1) + string(b"CQL_VERSION") + string(b"3.0.0")
    if request(s, 0x01, startup)[1] != 0x03:
        sys.exit(1)
    token = b"\0" + login[0].encode() + b"\0" + login[1].encode()
    # AUTH_RESPONSE -> AUTH_SUCCESS (0x10)
    sys.exit(0 if request(s, 0x0F, struct.pack(">i", len(token)) + token)[1] == 0x10 else 1)
except OSError:
    sys.exit(1)
PY
}
