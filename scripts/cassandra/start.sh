#!/usr/bin/env bash
# Start a local Apache Cassandra 5.0.6 node in the background and wait for CQL.
#
#   scripts/cassandra/start.sh [--base DIR] [--port N] [--heap 1G] [--timeout SECS]
#                              [--storage-port N] [--jmx-port N] [--jvm-opt OPT]...
#                              [setup.sh's cluster options: --listen-address IP, --rpc-address IP,
#                               --seeds IPS, --num-tokens N, --token-allocation-rf N,
#                               --auto-bootstrap true|false, --stream-throughput RATE,
#                               --yaml 'key: value', --auth]
#
# Runs setup.sh first (idempotent), then CassandraDaemon under JDK 17 with the
# flags of conf/jvm-server.options and conf/jvm17-server.options (5.0). Writes
# DIR/cassandra.pid, stdout/stderr to DIR/logs/stdout.log, the system log to
# DIR/logs/system.log and the GC log to DIR/logs/gc.log. Returns once the CQL
# port answers an OPTIONS request; exits non-zero if the node dies or the
# timeout (default 180 s) passes. Does nothing if the node is already running.
# With --auth (PasswordAuthenticator, see setup.sh) it also waits until the
# default superuser cassandra/cassandra can log in: Cassandra creates it some
# seconds after the CQL port opens.
# A node that bootstraps into a cluster opens CQL only once it has joined, so
# give it a --timeout long enough for the streaming.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

BASE=$DEFAULT_BASE
PORT=9042
HEAP=1G
TIMEOUT=180
STORAGE_PORT=7000
JMX_PORT=7199
RPC=""
LISTEN=127.0.0.1
AUTH=0
SETUP_OPTS=()
EXTRA_JVM_OPTS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --base) BASE=$2; shift 2 ;;
        --port) PORT=$2; shift 2 ;;
        --heap) HEAP=$2; shift 2 ;;
        --timeout) TIMEOUT=$2; shift 2 ;;
        --storage-port) STORAGE_PORT=$2; shift 2 ;;
        --jmx-port) JMX_PORT=$2; shift 2 ;;
        --jvm-opt) EXTRA_JVM_OPTS+=("$2"); shift 2 ;;
        --listen-address) LISTEN=$2; SETUP_OPTS+=("$1" "$2"); shift 2 ;;
        --rpc-address) RPC=$2; SETUP_OPTS+=("$1" "$2"); shift 2 ;;
        --auth) AUTH=1; SETUP_OPTS+=("$1"); shift ;;
        --seeds|--num-tokens|--token-allocation-rf|--auto-bootstrap|--stream-throughput|--yaml)
            SETUP_OPTS+=("$1" "$2"); shift 2 ;;
        -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
done

"$SCRIPT_DIR/setup.sh" --base "$BASE" --port "$PORT" --storage-port "$STORAGE_PORT" --jmx-port "$JMX_PORT" \
    "${SETUP_OPTS[@]}" >/dev/null
RPC=${RPC:-$LISTEN}
BASE=$(cd "$BASE" && pwd)
PIDFILE=$BASE/cassandra.pid

if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
    if cql_ready "$RPC" "$PORT"; then
        echo "cassandra already running (pid $(cat "$PIDFILE")), CQL on $RPC:$PORT"
        exit 0
    fi
    echo "error: cassandra pid $(cat "$PIDFILE") is alive but $RPC:$PORT does not answer" >&2
    exit 1
fi
if port_open "$RPC" "$PORT"; then
    echo "error: $RPC:$PORT is already in use by another process" >&2
    exit 1
fi

JAVA=$(find_java17)
JAMM=$(ls "$CASSANDRA_LIB"/jamm-*.jar | head -1)

JVM_OPTS=(
    # memory
    "-Xms$HEAP" "-Xmx$HEAP"
    -Xss256k
    -XX:+AlwaysPreTouch
    -XX:+HeapDumpOnOutOfMemoryError "-XX:HeapDumpPath=$BASE/logs"
    -XX:+CrashOnOutOfMemoryError
    # jvm-server.options (general); -XX:-UseBiasedLocking is left out: JDK 17
    # deprecated it. The hotspot_compiler CompileCommandFile is a perf hint only.
    -ea -da:net.openhft...
    -XX:+UseThreadPriorities
    -XX:+UseTLAB -XX:+ResizeTLAB -XX:+UseNUMA
    -XX:+PerfDisableSharedMem
    -Djava.net.preferIPv4Stack=true
    # jvm17-server.options: G1
    -XX:+UseG1GC -XX:+ParallelRefProcEnabled -XX:MaxTenuringThreshold=1
    -XX:G1HeapRegionSize=16m -XX:G1RSetUpdatingPauseTimePercent=5
    -XX:MaxGCPauseMillis=300 -XX:InitiatingHeapOccupancyPercent=70
    # jvm17-server.options: JPMS
    -Djdk.attach.allowAttachSelf=true
    --add-exports java.base/jdk.internal.misc=ALL-UNNAMED
    --add-exports java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED
    --add-exports java.rmi/sun.rmi.registry=ALL-UNNAMED
    --add-exports java.rmi/sun.rmi.server=ALL-UNNAMED
    --add-exports java.sql/java.sql=ALL-UNNAMED
    --add-exports java.base/java.lang.ref=ALL-UNNAMED
    --add-exports jdk.unsupported/sun.misc=ALL-UNNAMED
    --add-exports jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED
    --add-exports jdk.attach/sun.tools.attach=ALL-UNNAMED
    --add-opens java.base/java.lang.module=ALL-UNNAMED
    --add-opens java.base/jdk.internal.loader=ALL-UNNAMED
    --add-opens java.base/jdk.internal.ref=ALL-UNNAMED
    --add-opens java.base/jdk.internal.reflect=ALL-UNNAMED
    --add-opens java.base/jdk.internal.math=ALL-UNNAMED
    --add-opens java.base/jdk.internal.module=ALL-UNNAMED
    --add-opens java.base/jdk.internal.util.jar=ALL-UNNAMED
    --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED
    --add-opens java.base/sun.nio.ch=ALL-UNNAMED
    --add-opens java.base/java.io=ALL-UNNAMED
    --add-opens java.base/java.lang.reflect=ALL-UNNAMED
    --add-opens jdk.compiler/com.sun.tools.javac=ALL-UNNAMED
    --add-opens java.base/java.lang=ALL-UNNAMED
    --add-opens java.base/java.util=ALL-UNNAMED
    # jvm17-server.options: netty
    -Dio.netty.tryReflectionSetAccessible=true
    -Dio.netty.allocator.useCacheForAllThreads=true
    -Dio.netty.allocator.maxOrder=11
    # GC log (for GC stall / safepoint time)
    "-Xlog:gc*,safepoint:file=$BASE/logs/gc.log:time,uptime,level,tags:filecount=5,filesize=10M"
    # what cassandra-env.sh / bin/cassandra add
    "-javaagent:$JAMM"
    "-Dcassandra.jmx.local.port=$JMX_PORT"
    "-Dcassandra.config=file://$BASE/conf/cassandra.yaml"
    "-Dcassandra.storagedir=$BASE/data"
    "-Dcassandra.logdir=$BASE/logs"
    "-Dlogback.configurationFile=file://$BASE/conf/logback.xml"
    -Dcassandra-foreground=yes
    # fast single-node boot (instead of 30 s of ring delay)
    -Dcassandra.ring_delay_ms=1000
    -Dcassandra.skip_wait_for_gossip_to_settle=0
    "${EXTRA_JVM_OPTS[@]}"
)

cd "$BASE"
START=$(date +%s.%N)
nohup "$JAVA" "${JVM_OPTS[@]}" -cp "$BASE/conf:$CASSANDRA_LIB/*" \
    org.apache.cassandra.service.CassandraDaemon \
    >"$BASE/logs/stdout.log" 2>&1 </dev/null &
PID=$!
echo "$PID" > "$PIDFILE"
echo "cassandra starting (pid $PID, heap $HEAP, base $BASE) ..."

while true; do
    if ! kill -0 "$PID" 2>/dev/null; then
        echo "error: cassandra exited during startup; last lines of $BASE/logs/stdout.log:" >&2
        tail -n 30 "$BASE/logs/stdout.log" >&2
        rm -f "$PIDFILE"
        exit 1
    fi
    if cql_ready "$RPC" "$PORT" && { [ "$AUTH" = 0 ] || cql_login "$RPC" "$PORT" cassandra cassandra; }; then
        break
    fi
    ELAPSED=$(python3 -c "import sys; print(int(float(sys.argv[2]) - float(sys.argv[1])))" "$START" "$(date +%s.%N)")
    if [ "$ELAPSED" -ge "$TIMEOUT" ]; then
        echo "error: CQL port $PORT did not answer (or log cassandra in, with --auth) within ${TIMEOUT}s (see $BASE/logs/system.log)" >&2
        exit 1
    fi
    sleep 1
done
BOOT=$(python3 -c "import sys; print('%.1f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$START" "$(date +%s.%N)")
echo "cassandra up: CQL on $RPC:$PORT after ${BOOT}s (pid $PID)"
