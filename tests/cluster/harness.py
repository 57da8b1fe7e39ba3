"""Processes and driver sessions for the multi-process cluster tests.

Every node is a real `rocksandra` process on its own loopback address
(127.0.0.11-15 by default: CQL on :9042 unless given a `native_port`,
internode TCP and gossip UDP on :7000, nodetool on :7199) with a
fresh data directory; its log goes to `<dir>/node.log`. Only processes started
here are ever signalled.
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.policies import (ConstantReconnectionPolicy, FallthroughRetryPolicy,
                                RoundRobinPolicy, TokenAwarePolicy, WhiteListRoundRobinPolicy)
from cassandra.query import SimpleStatement

BIN = os.environ.get("ROCKSANDRA_BIN",
                     os.path.expanduser("~/.cache/rocksandra-target/debug/rocksandra"))
CQL_PORT = 9042
STORAGE_PORT = 7000
# ROCKSANDRA_CLUSTER_NET=127.0.0.2 puts the nodes on 127.0.0.21-25 instead, so
# two checkouts can run their cluster tests at once.
NET = os.environ.get("ROCKSANDRA_CLUSTER_NET", "127.0.0.1")
# ROCKSANDRA_CLUSTER_ADDRESSES=127.0.0.46,127.0.0.47,... names the nodes'
# addresses outright instead (a test uses as many of the first as it needs).
LISTED = [a for a in os.environ.get("ROCKSANDRA_CLUSTER_ADDRESSES", "").split(",") if a]
ADDRESSES = LISTED or ["%s%d" % (NET, i) for i in range(1, 6)]
SEED = ADDRESSES[0]
# ROCKSANDRA_CLUSTER_KEEP=1 keeps the data directories and logs for a post-mortem.
KEEP = os.environ.get("ROCKSANDRA_CLUSTER_KEEP") == "1"

STATUS_LINE = re.compile(r"^([UD][NLJM])\s+(\d+\.\d+\.\d+\.\d+)\s")


def port_open(ip, port):
    try:
        socket.create_connection((ip, port), 0.2).close()
        return True
    except OSError:
        return False


class Node:
    def __init__(self, ip, root, seeds=SEED, extra=(), nodetool_config=None, nodetool_login=None,
                 native_port=CQL_PORT, metrics_port=0):
        self.ip = ip
        # The metrics endpoint's port on 127.0.0.1 (0: no endpoint), so
        # nodes sharing the host need one each.
        self.metrics_port = metrics_port
        # A node with `rpc_address: 0.0.0.0` needs a port of its own.
        self.native_port = native_port
        self.dir = os.path.join(root, ip)
        self.data_dir = os.path.join(self.dir, "data")
        os.makedirs(self.data_dir, exist_ok=True)
        self.log_path = os.path.join(self.dir, "node.log")
        self.seeds = seeds
        self.extra = list(extra)
        # The configuration file nodetool takes its TLS settings from
        # (`rocksandra --config FILE nodetool ...`).
        self.nodetool_config = nodetool_config
        # (user, password) nodetool logs in with (PasswordAuthenticator).
        self.nodetool_login = nodetool_login
        self.proc = None
        self.log = None

    def start(self, timeout=60):
        assert self.proc is None or self.proc.poll() is not None, "%s already running" % self.ip
        # A listener we did not start would make the readiness check lie.
        assert not port_open(self.ip, self.native_port), \
            "%s:%d is already taken" % (self.ip, self.native_port)
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.command(), stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("%s exited with %s before listening:\n%s"
                                     % (self.ip, self.proc.returncode, self.tail()))
            if port_open(self.ip, self.native_port):
                return
            time.sleep(0.05)
        raise AssertionError("%s did not listen for CQL within %ds:\n%s"
                             % (self.ip, timeout, self.tail()))

    def command(self):
        return ([BIN, "--data-dir", self.data_dir, "--listen-address", self.ip,
                 "--seeds", self.seeds, "--prometheus-port", str(self.metrics_port),
                 "--native-port", str(self.native_port),
                 # nodetool's port, on this node's own address.
                 "--admin-address", self.ip]
                + self.extra)

    def start_refused(self, timeout=30):
        """Starts the node expecting it to refuse: returns (exit code, output)."""
        r = subprocess.run(self.command(), capture_output=True, text=True, timeout=timeout)
        return r.returncode, r.stdout + r.stderr

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def _closed(self):
        if self.log:
            self.log.close()
            self.log = None

    def kill9(self):
        self.proc.kill()
        self.proc.wait(timeout=30)
        self._closed()

    def terminate(self, timeout=30):
        """SIGTERM; returns the exit code (SIGKILL after `timeout`)."""
        if not self.running():
            self._closed()
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            code = "killed after %ds without stopping" % timeout
        self._closed()
        return code

    def tail(self, lines=40):
        try:
            with open(self.log_path, "rb") as f:
                text = f.read().decode("utf-8", "replace")
        except OSError:
            return "(no log)"
        return "\n".join("  [%s] %s" % (self.ip, l) for l in text.splitlines()[-lines:])

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def nodetool(self, *args, check=True, timeout=60):
        config = ["--config", self.nodetool_config] if self.nodetool_config else []
        login = ["-u", self.nodetool_login[0], "-pw", self.nodetool_login[1]] \
            if self.nodetool_login else []
        r = subprocess.run([BIN] + config + ["nodetool", "--host", self.ip] + login + list(args),
                           capture_output=True, text=True, timeout=timeout)
        if check:
            assert r.returncode == 0, "nodetool %s on %s failed (%d): %s%s" % (
                " ".join(args), self.ip, r.returncode, r.stdout, r.stderr)
        return r

    def status(self):
        """{address: 'UN' | 'DN' | ...} as this node's `nodetool status` shows."""
        r = self.nodetool("status", check=False, timeout=20)
        if r.returncode != 0:
            return None
        out = {}
        for line in r.stdout.splitlines():
            m = STATUS_LINE.match(line)
            if m:
                out[m.group(2)] = m.group(1)
        return out


class Nodes:
    """The nodes a test started, in one temporary root; `close` stops them all."""

    def __init__(self):
        self.root = tempfile.mkdtemp(prefix="rocksandra-cluster-")
        self.nodes = {}
        self.clusters = []

    def add(self, ip, **kw):
        node = Node(ip, self.root, **kw)
        self.nodes[ip] = node
        return node

    def __getitem__(self, ip):
        return self.nodes[ip]

    def start(self, *ips, **kw):
        for ip in ips:
            (self.nodes.get(ip) or self.add(ip, **kw)).start()

    def connect(self, ip, pinned=True, protocol_version=4):
        port = self.nodes[ip].native_port if ip in self.nodes else CQL_PORT
        cluster, session = connect(ip, pinned, port=port, protocol_version=protocol_version)
        self.clusters.append(cluster)
        return session

    def logs(self, lines=40):
        return "\n".join(n.tail(lines) for n in self.nodes.values())

    def wait_status(self, expected, askers=None, timeout=30):
        """Polls `nodetool status` on `askers` (default: the running nodes)
        until each shows `expected` ({ip: 'UN'|'DN'}) for the listed nodes."""
        askers = askers or [ip for ip, n in self.nodes.items() if n.running()]
        deadline = time.monotonic() + timeout
        seen = {}
        while time.monotonic() < deadline:
            seen = {a: self.nodes[a].status() for a in askers}
            if all(s is not None and all(s.get(ip) == st for ip, st in expected.items())
                   for s in seen.values()):
                return seen
            time.sleep(0.25)
        raise AssertionError("status did not reach %s within %ds: last seen %s\n%s"
                             % (expected, timeout, seen, self.logs(20)))

    def close(self):
        for c in self.clusters:
            try:
                c.shutdown()
            except Exception:
                pass
        self.clusters = []
        codes = {ip: n.terminate() for ip, n in self.nodes.items() if n.proc is not None}
        if not KEEP:
            shutil.rmtree(self.root, ignore_errors=True)
        else:
            print("kept cluster data and logs in", self.root)
        return codes


def connect(ip, pinned=True, auth_provider=None, port=CQL_PORT, protocol_version=4):
    """A driver session through `ip`: pinned to that node only, or token aware
    over every node the driver discovers."""
    lbp = WhiteListRoundRobinPolicy([ip]) if pinned else TokenAwarePolicy(RoundRobinPolicy())
    profile = ExecutionProfile(load_balancing_policy=lbp, request_timeout=20,
                               retry_policy=FallthroughRetryPolicy())
    cluster = Cluster([ip], port=port, protocol_version=protocol_version,
                      execution_profiles={EXEC_PROFILE_DEFAULT: profile},
                      reconnection_policy=ConstantReconnectionPolicy(0.5, None),
                      connect_timeout=10, control_connection_timeout=10,
                      auth_provider=auth_provider)
    return cluster, cluster.connect()


def stmt(query, cl):
    return SimpleStatement(query, consistency_level=cl)


def bound(prepared, values, cl):
    b = prepared.bind(values)
    b.consistency_level = cl
    return b


def wait_until(predicate, timeout, interval=0.25, what="condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last is True:
            return
        time.sleep(interval)
    raise AssertionError("%s did not hold within %ds (last: %r)" % (what, timeout, last))


def parse_ranges(text):
    """describering's TokenRange lines as (start, end, [endpoints])."""
    pat = re.compile(r"TokenRange\(start_token:(-?\d+), end_token:(-?\d+), endpoints:\[([^\]]*)\]")
    return [(int(m.group(1)), int(m.group(2)), [e.strip() for e in m.group(3).split(",")])
            for m in pat.finditer(text)]


def in_range(token, start, end):
    if start < end:
        return start < token <= end
    return token > start or token <= end  # wraps around
