#!/usr/bin/env bash
# Cassandra's nodetool against a node started by start.sh, without bin/nodetool:
# org.apache.cassandra.tools.NodeTool from the resolved jars, over JMX on
# 127.0.0.1 (start.sh's -Dcassandra.jmx.local.port binds JMX to loopback).
#
#   scripts/cassandra/nodetool.sh [--jmx-port N] COMMAND [ARGS...]
#
# e.g. `nodetool.sh --jmx-port 7199 status`, `... flush bench`, `... decommission`.
# Each call starts a JVM (about a second of CPU).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

JMX_PORT=7199
if [ "${1:-}" = --jmx-port ]; then
    JMX_PORT=$2
    shift 2
fi
if [ $# -eq 0 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
    sed -n '2,9p' "$0"
    exit 0
fi
[ -f "$CASSANDRA_LIB/.complete" ] || { echo "error: no jars in $CASSANDRA_LIB (run setup.sh)" >&2; exit 1; }
JAVA=$(find_java17)
# Tools log only warnings, to stderr.
TOOLS_LOGBACK=$CASSANDRA_HOME/logback-tools.xml
if [ ! -f "$TOOLS_LOGBACK" ]; then
    cat > "$TOOLS_LOGBACK" <<'XML'
<configuration scan="false">
  <appender name="STDERR" class="ch.qos.logback.core.ConsoleAppender">
    <target>System.err</target>
    <encoder><pattern>%-5level %date{ISO8601} %msg%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="STDERR" /></root>
</configuration>
XML
fi
# The JPMS flags of 5.0's conf/jvm17-clients.options.
CLIENT_OPTS=(
    -Djdk.attach.allowAttachSelf=true
    --add-exports java.base/jdk.internal.misc=ALL-UNNAMED
    --add-exports java.base/jdk.internal.ref=ALL-UNNAMED
    --add-exports java.base/sun.nio.ch=ALL-UNNAMED
    --add-exports java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED
    --add-exports java.rmi/sun.rmi.registry=ALL-UNNAMED
    --add-exports java.rmi/sun.rmi.server=ALL-UNNAMED
    --add-exports java.sql/java.sql=ALL-UNNAMED
    --add-opens java.base/java.lang.module=ALL-UNNAMED
    --add-opens java.base/jdk.internal.loader=ALL-UNNAMED
    --add-opens java.base/jdk.internal.ref=ALL-UNNAMED
    --add-opens java.base/jdk.internal.reflect=ALL-UNNAMED
    --add-opens java.base/jdk.internal.math=ALL-UNNAMED
    --add-opens java.base/jdk.internal.module=ALL-UNNAMED
    --add-opens java.base/jdk.internal.util.jar=ALL-UNNAMED
    --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED
)
exec "$JAVA" -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 "${CLIENT_OPTS[@]}" \
    -Dlogback.configurationFile="file://$TOOLS_LOGBACK" \
    -Dcassandra.storagedir="$CASSANDRA_HOME" \
    -cp "$CASSANDRA_LIB/*" org.apache.cassandra.tools.NodeTool -h 127.0.0.1 -p "$JMX_PORT" "$@"
