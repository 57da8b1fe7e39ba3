#!/usr/bin/env python3
"""Streaming throughput: bootstrap and decommission of a second node, on the
same data, for Apache Cassandra 5.0.6 and Rocksandra, one system after the
other.

    streaming.py run    --work DIR --server BIN --loadgen BIN [--rows N] [--systems LIST]
    streaming.py report --work DIR --out FILE.md [--notes NOTES.md] [--smoke]

For each system: node 1 alone on 127.0.0.31 (its own seed, 16 tokens), the
loadgen's `emp` table (RF 1, ~1 KB rows) loaded into it, flushed, and left
until its CPU is idle (compactions done); then node 2 on 127.0.0.32 starts and
bootstraps (takes about half of the ranges), and once it is Normal it is
decommissioned (streams everything back). Timings come from the wall clock
around the processes and from the nodes' own logs. `run` writes
DIR/results.json; `report` turns it into Markdown. Called by bench/streaming.
"""

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import cpu_seconds, log  # noqa: E402  (bench/bench.py)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODE1 = "127.0.0.31"
NODE2 = "127.0.0.32"
CQL_PORT = 9042
NUM_TOKENS = 16
KEYSPACE = "bench"
# Cassandra's JMX (bound to 127.0.0.1 by start.sh), away from the default
# 7199 that other local Cassandra nodes use.
JMX_PORT = {NODE1: 7331, NODE2: 7332}
IDLE_CPU_CORES = 0.2
IDLE_WINDOW_S = 5
IDLE_WAIT_MAX_S = 600
JOIN_TIMEOUT_S = 3600
DECOMMISSION_TIMEOUT_S = 3600
STATUS_POLL_S = 0.25


def elapsed(since):
    return time.time() - since


def wait_idle(pid, label):
    """Waits until a process uses under IDLE_CPU_CORES over IDLE_WINDOW_S
    (its compactions done); returns the seconds waited."""
    start = time.time()
    while elapsed(start) < IDLE_WAIT_MAX_S:
        before = cpu_seconds(pid)
        time.sleep(IDLE_WINDOW_S)
        used = (cpu_seconds(pid) - before) / IDLE_WINDOW_S
        if used < IDLE_CPU_CORES:
            return elapsed(start)
        log("%s still busy (%.2f cores), waiting" % (label, used))
    log("%s not idle after %ds; going on" % (label, IDLE_WAIT_MAX_S))
    return elapsed(start)


def sst_bytes(path, suffixes):
    """Bytes of the table files under `path` (names ending in `suffixes`)."""
    total = 0
    for dirpath, _, files in os.walk(path):
        for name in files:
            if name.endswith(suffixes):
                try:
                    total += os.lstat(os.path.join(dirpath, name)).st_size
                except OSError:
                    pass
    return total


class CpuWatch:
    """Samples a process's CPU seconds every 0.2 s in a thread, so the last
    figure survives the process's exit (Rocksandra stops itself after a
    decommission)."""

    def __init__(self, pid):
        self.pid = pid
        self.first = cpu_seconds(pid)
        self.last = self.first
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.done.wait(0.2):
            try:
                self.last = cpu_seconds(self.pid)
            except (OSError, ValueError, IndexError):
                return

    def stop(self):
        """CPU seconds used since the watch started."""
        self.done.set()
        self.thread.join()
        try:
            self.last = cpu_seconds(self.pid)
        except (OSError, ValueError, IndexError):
            pass
        return self.last - self.first


def run_checked(cmd, timeout, what):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError("%s failed (exit %d):\n%s%s" % (what, r.returncode, r.stdout[-3000:],
                                                          r.stderr[-3000:]))
    return r.stdout


def load(loadgen, rows):
    host = "%s:%d" % (NODE1, CQL_PORT)
    run_checked([loadgen, "ready", "--host", host, "--timeout-s", "120"], 180, "loadgen ready")
    run_checked([loadgen, "schema", "--host", host], 120, "loadgen schema")
    out = run_checked([loadgen, "load", "--host", host, "--rows", str(rows)], 7200, "loadgen load")
    result = json.loads(out)
    if result.get("errors"):
        log("load: %d write errors (retried)" % result["errors"])
    return result


# --- log parsing --------------------------------------------------------------

SIZE_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def parse_size(text):
    """Cassandra's prettyPrintMemory ("23.742MiB", "0B") in bytes."""
    m = re.fullmatch(r"([0-9.]+)\s*([KMGT]iB|B)", text.strip())
    if not m:
        raise ValueError("not a size: %r" % text)
    return float(m.group(1)) * SIZE_UNITS[m.group(2)]


def cassandra_time(line):
    """Wall time of a system.log line (logback ISO8601, local time)."""
    m = re.search(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})", line)
    if not m:
        return None
    return dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()


def rocksandra_time(line):
    """Wall time of a tracing log line ("2026-11-21T19:40:00.123456Z  INFO ...")."""
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)Z", line)
    if not m:
        return None
    stamp = m.group(1)
    if "." in stamp:
        head, frac = stamp.split(".")
        stamp = head + "." + frac[:6]
        fmt = "%Y-%m-%dT%H:%M:%S.%f"
    else:
        fmt = "%Y-%m-%dT%H:%M:%S"
    return dt.datetime.strptime(stamp, fmt).replace(tzinfo=dt.timezone.utc).timestamp()


def read_lines(path):
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()
    except OSError:
        return []


def cassandra_streams(log_path, plan, since):
    """The stream sessions of `plan` ("Bootstrap", "Unbootstrap") started by
    this node after `since`: their start and end times, the bytes and files
    it received and sent, and whether whole SSTables went (zero-copy)."""
    streams = {}
    lines = read_lines(log_path)
    for line in lines:
        at = cassandra_time(line)
        if at is None or at < since - 1:
            continue
        m = re.search(r"\[Stream #([0-9a-f-]+)\] Executing streaming plan for (\w+)", line)
        if m and m.group(2) == plan:
            streams[m.group(1)] = {"start": at, "end": None, "received_bytes": 0.0,
                                   "sent_bytes": 0.0, "received_files": 0, "sent_files": 0}
            continue
        m = re.search(r"\[Stream #([0-9a-f-]+) ID#\d+\] Prepare completed\. Receiving (\d+) "
                      r"files\(([^)]*)\), sending (\d+) files\(([^)]*)\)", line)
        if m and m.group(1) in streams:
            s = streams[m.group(1)]
            s["received_files"] += int(m.group(2))
            s["received_bytes"] += parse_size(m.group(3))
            s["sent_files"] += int(m.group(4))
            s["sent_bytes"] += parse_size(m.group(5))
            continue
        m = re.search(r"\[Stream #([0-9a-f-]+)\] All sessions completed", line)
        if m and m.group(1) in streams:
            streams[m.group(1)]["end"] = at
    return list(streams.values())


def first_line_time(lines, pattern, since, parse):
    for line in lines:
        at = parse(line)
        if at is not None and at >= since - 1 and re.search(pattern, line):
            return at
    return None


def count_lines(lines, pattern, since, parse):
    n = 0
    for line in lines:
        at = parse(line)
        if at is not None and at >= since - 1 and re.search(pattern, line):
            n += 1
    return n


# --- the systems ------------------------------------------------------------

class Cassandra:
    name = "cassandra"
    label = "Apache Cassandra 5.0.6"

    def __init__(self, work, heap, stream_throughput):
        self.work = os.path.join(work, "cassandra")
        self.heap = heap
        self.stream_throughput = stream_throughput
        self.started = []

    def base(self, ip):
        return os.path.join(self.work, ip)

    def pid(self, ip):
        with open(os.path.join(self.base(ip), "cassandra.pid")) as f:
            return int(f.read().strip())

    def log_path(self, ip):
        return os.path.join(self.base(ip), "logs", "system.log")

    def table_bytes(self, ip):
        """The bench keyspace's SSTables (every component)."""
        return sst_bytes(os.path.join(self.base(ip), "data", "data", KEYSPACE),
                         (".db", ".crc32", ".txt"))

    def start(self, ip, bootstrap):
        cmd = [os.path.join(ROOT, "scripts/cassandra/start.sh"), "--base", self.base(ip),
               "--listen-address", ip, "--seeds", NODE1, "--port", str(CQL_PORT),
               "--jmx-port", str(JMX_PORT[ip]), "--num-tokens", str(NUM_TOKENS),
               "--token-allocation-rf", "1", "--heap", self.heap,
               "--timeout", str(JOIN_TIMEOUT_S)]
        if bootstrap:
            cmd += ["--auto-bootstrap", "true"]
        if self.stream_throughput:
            cmd += ["--stream-throughput", self.stream_throughput]
        self.started.append(ip)
        run_checked(cmd, JOIN_TIMEOUT_S + 60, "starting Cassandra on %s" % ip)

    def nodetool(self, ip, *args, timeout=600):
        return run_checked([os.path.join(ROOT, "scripts/cassandra/nodetool.sh"), "--jmx-port",
                            str(JMX_PORT[ip]), *args], timeout, "nodetool %s on %s"
                           % (" ".join(args), ip))

    def flush(self, ip):
        self.nodetool(ip, "flush", KEYSPACE)

    def status(self, ip):
        return self.nodetool(ip, "status", timeout=60)

    def bootstrap(self, result):
        """Starts node 2; returns when it serves CQL (after joining)."""
        t0 = time.time()
        self.start(NODE2, bootstrap=True)
        returned = time.time()
        lines = read_lines(self.log_path(NODE2))
        normal = first_line_time(lines, r"Node /%s:\d+ state jump to NORMAL" % re.escape(NODE2),
                                 t0, cassandra_time)
        streams = cassandra_streams(self.log_path(NODE2), "Bootstrap", t0)
        if not streams or any(s["end"] is None for s in streams):
            raise RuntimeError("no complete Bootstrap stream in %s" % self.log_path(NODE2))
        result.update({
            "start_to_normal_s": (normal or returned) - t0,
            "start_to_cql_s": returned - t0,
            "start_to_stream_s": min(s["start"] for s in streams) - t0,
            "stream_s": max(s["end"] for s in streams) - min(s["start"] for s in streams),
            "bytes": sum(s["received_bytes"] for s in streams),
            "files": sum(s["received_files"] for s in streams),
            "mode": self.stream_mode(NODE2, t0),
            "bytes_source": "node 2's system.log: 'Prepare completed. Receiving N files(SIZE)'",
        })

    def stream_mode(self, receiver, since):
        """Entire-SSTable (zero-copy) or partial-SSTable streaming, from the
        receiver's log."""
        lines = read_lines(self.log_path(receiver))
        whole = count_lines(lines, r"SSTableZeroCopyWriter.*Writing component Data\.db", since,
                            cassandra_time)
        partial = count_lines(lines, r"Cassandra(Compressed)?StreamReader.*Finished receiving file",
                              since, cassandra_time)
        return {"entire_sstables": whole, "partial_sstables": partial}

    def decommission(self, result):
        t0 = time.time()
        # --force: with two nodes, system_distributed and system_traces
        # (RF 3) cannot keep their replication factor; Cassandra refuses
        # without it. Rocksandra's system keyspaces are node-local.
        self.nodetool(NODE2, "decommission", "--force", timeout=DECOMMISSION_TIMEOUT_S)
        returned = time.time()
        lines = read_lines(self.log_path(NODE2))
        done = first_line_time(lines, r"StorageService.*- DECOMMISSIONED", t0, cassandra_time)
        begin = first_line_time(lines, r"StorageService.*- (LEAVING|DECOMMISSIONING)", t0,
                                cassandra_time)
        streams = cassandra_streams(self.log_path(NODE2), "Unbootstrap", t0)
        if not streams or any(s["end"] is None for s in streams):
            raise RuntimeError("no complete Unbootstrap stream in %s" % self.log_path(NODE2))
        result.update({
            "command_s": returned - t0,
            "leaving_to_done_s": (done - begin) if done and begin else None,
            "stream_s": max(s["end"] for s in streams) - min(s["start"] for s in streams),
            "bytes": sum(s["sent_bytes"] for s in streams),
            "files": sum(s["sent_files"] for s in streams),
            "mode": self.stream_mode(NODE1, t0),
            "bytes_source": "node 2's system.log: 'Prepare completed. ... sending N files(SIZE)'",
        })

    def stop_all(self):
        for ip in reversed(self.started):
            subprocess.run([os.path.join(ROOT, "scripts/cassandra/stop.sh"), "--base",
                            self.base(ip)], check=False, stdout=subprocess.DEVNULL)
        self.started = []

    def versions(self):
        java = subprocess.run(["bash", "-c", "source %s/scripts/cassandra/common.sh && "
                               "$(find_java17) -version 2>&1 | head -1" % ROOT],
                              capture_output=True, text=True).stdout.strip()
        return {"version": "5.0.6", "heap": self.heap, "java": java,
                "stream_throughput_outbound": self.stream_throughput or "24MiB/s (default)"}


class Rocksandra:
    name = "rocksandra"
    label = "Rocksandra"

    def __init__(self, work, binary, stream_throughput):
        self.work = os.path.join(work, "rocksandra")
        self.binary = binary
        self.stream_throughput = stream_throughput
        self.procs = {}
        self.logs = {}

    def base(self, ip):
        return os.path.join(self.work, ip)

    def pid(self, ip):
        return self.procs[ip].pid

    def log_path(self, ip):
        return os.path.join(self.base(ip), "node.log")

    def data_dir(self, ip):
        return os.path.join(self.base(ip), "data")

    def table_bytes(self, ip):
        """RocksDB's SST files (every table; the system ones are a few KiB)."""
        return sst_bytes(self.data_dir(ip), (".sst",))

    def start(self, ip, timeout):
        """Spawns the node; returns once its CQL port answers."""
        os.makedirs(self.base(ip), exist_ok=True)
        self.logs[ip] = open(self.log_path(ip), "ab")
        config = []
        if self.stream_throughput:
            path = os.path.join(self.base(ip), "rocksandra.yaml")
            with open(path, "w") as f:
                f.write("stream_throughput_outbound: %s\n" % self.stream_throughput)
            config = ["--config", path]
        self.procs[ip] = subprocess.Popen(
            [self.binary, *config, "--data-dir", self.data_dir(ip), "--listen-address", ip,
             "--seeds", NODE1, "--num-tokens", str(NUM_TOKENS), "--native-port", str(CQL_PORT),
             "--prometheus-port", "0", "--admin-address", ip],
            stdout=self.logs[ip], stderr=subprocess.STDOUT)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.procs[ip].poll() is not None:
                raise RuntimeError("rocksandra on %s exited with %s; see %s"
                                   % (ip, self.procs[ip].returncode, self.log_path(ip)))
            if port_open(ip, CQL_PORT):
                return
            time.sleep(0.05)
        raise RuntimeError("rocksandra on %s did not listen within %ds" % (ip, timeout))

    def nodetool(self, ip, *args, timeout=600):
        return run_checked([self.binary, "nodetool", "--host", ip, *args], timeout,
                           "nodetool %s on %s" % (" ".join(args), ip))

    def flush(self, ip):
        self.nodetool(ip, "flush")

    def status(self, ip):
        return self.nodetool(ip, "status", timeout=60)

    def state_of(self, asker, ip):
        r = subprocess.run([self.binary, "nodetool", "--host", asker, "status"],
                           capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            return None
        for line in r.stdout.splitlines():
            fields = line.split()
            if len(fields) >= 2 and fields[1] == ip:
                return fields[0]
        return None

    def bootstrap(self, result):
        t0 = time.time()
        self.start(NODE2, timeout=JOIN_TIMEOUT_S)
        listening = time.time()
        deadline = t0 + JOIN_TIMEOUT_S
        normal = None
        while time.time() < deadline:
            if self.procs[NODE2].poll() is not None:
                raise RuntimeError("rocksandra on %s exited during bootstrap; see %s"
                                   % (NODE2, self.log_path(NODE2)))
            if self.state_of(NODE1, NODE2) == "UN":
                normal = time.time()
                break
            time.sleep(STATUS_POLL_S)
        if normal is None:
            raise RuntimeError("%s not UN after %ds" % (NODE2, JOIN_TIMEOUT_S))
        lines = read_lines(self.log_path(NODE2))
        streamed = None
        for line in lines:
            m = re.search(r"bootstrap streamed (\d+) bytes in ([0-9.]+) s", line)
            if m:
                streamed = (int(m.group(1)), float(m.group(2)), rocksandra_time(line))
        if streamed is None:
            raise RuntimeError("no 'bootstrap streamed' line in %s" % self.log_path(NODE2))
        nbytes, secs, logged_at = streamed
        result.update({
            "start_to_normal_s": normal - t0,
            "start_to_cql_s": listening - t0,
            "start_to_stream_s": (logged_at - secs - t0) if logged_at else None,
            "stream_s": secs,
            "bytes": nbytes,
            "files": None,
            "mode": "SST files exported per range (RocksDB SstFileWriter), ingested",
            "bytes_source": "node 2's log: 'bootstrap streamed N bytes in S s'",
            "normal_poll_s": STATUS_POLL_S,
        })

    def decommission(self, result):
        t0 = time.time()
        # --force as for Cassandra: system_traces has RF 2 and cannot keep it
        # on one node.
        out = self.nodetool(NODE2, "decommission", "--force", timeout=DECOMMISSION_TIMEOUT_S)
        returned = time.time()
        try:
            self.procs[NODE2].wait(timeout=120)
        except subprocess.TimeoutExpired:
            log("rocksandra on %s still running 120 s after decommission" % NODE2)
        exited = time.time()
        m = re.search(r"streamed (\d+) bytes in ([0-9.]+) s", out)
        if not m:
            raise RuntimeError("unexpected decommission output: %r" % out)
        result.update({
            "command_s": returned - t0,
            "leaving_to_done_s": returned - t0,
            "command_to_exit_s": exited - t0,
            "stream_s": float(m.group(2)),
            "bytes": int(m.group(1)),
            "files": None,
            "mode": "SST files exported per range, ingested",
            "bytes_source": "nodetool decommission's answer: 'streamed N bytes in S s'",
        })

    def stop_all(self):
        for ip, proc in self.procs.items():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        for f in self.logs.values():
            f.close()
        self.procs = {}
        self.logs = {}

    def versions(self):
        version = subprocess.run([self.binary, "--version"], capture_output=True,
                                 text=True).stdout.strip()
        return {"binary": self.binary, "version": version,
                "stream_throughput_outbound": self.stream_throughput or "24MiB/s (default)"}


def port_open(ip, port):
    import socket
    try:
        socket.create_connection((ip, port), 0.2).close()
        return True
    except OSError:
        return False


def phase(system, args):
    """One system's whole run; returns its results."""
    out = {"label": system.label, "versions": system.versions()}
    for ip in (NODE1, NODE2):
        if port_open(ip, CQL_PORT):
            raise RuntimeError("%s:%d is already taken (another node running?)" % (ip, CQL_PORT))
    shutil.rmtree(system.work, ignore_errors=True)
    os.makedirs(system.work)
    log("%s: starting node 1 on %s" % (system.name, NODE1))
    t0 = time.time()
    if isinstance(system, Cassandra):
        system.start(NODE1, bootstrap=False)
    else:
        system.start(NODE1, timeout=300)
    out["node1_start_s"] = elapsed(t0)
    log("%s: loading %d rows" % (system.name, args.rows))
    out["load"] = load(args.loadgen, args.rows)
    log("%s: load %.0f rows/s; flushing" % (system.name, out["load"]["rows_per_second"]))
    system.flush(NODE1)
    out["idle_wait_s"] = wait_idle(system.pid(NODE1), "%s node 1" % system.name)
    out["node1_table_bytes"] = system.table_bytes(NODE1)
    out["status_before"] = system.status(NODE1)
    log("%s: node 1 holds %.1f MiB; starting node 2 on %s (bootstrap)"
        % (system.name, out["node1_table_bytes"] / 2**20, NODE2))
    boot = {"loadavg_before": loadavg()}
    source_cpu = CpuWatch(system.pid(NODE1))
    system.bootstrap(boot)
    boot["node1_cpu_s"] = source_cpu.stop()
    # Since its spawn: the JVM's or the binary's start-up included.
    boot["node2_cpu_s_since_spawn"] = cpu_seconds(system.pid(NODE2))
    boot["node2_bytes_after"] = system.table_bytes(NODE2)
    out["bootstrap"] = boot
    out["status_joined"] = system.status(NODE1)
    log("%s: joined in %.1f s, streamed %.1f MiB in %.1f s"
        % (system.name, boot["start_to_normal_s"], boot["bytes"] / 2**20, boot["stream_s"]))
    # Node 2 flushes and compacts what it received; let it settle first.
    boot["node2_idle_wait_s"] = wait_idle(system.pid(NODE2), "%s node 2" % system.name)
    boot["node2_bytes_idle"] = system.table_bytes(NODE2)
    log("%s: decommissioning node 2" % system.name)
    dec = {"loadavg_before": loadavg()}
    cpu = [CpuWatch(system.pid(NODE1)), CpuWatch(system.pid(NODE2))]
    system.decommission(dec)
    dec["node1_cpu_s"], dec["node2_cpu_s"] = [w.stop() for w in cpu]
    out["decommission"] = dec
    out["status_after"] = system.status(NODE1)
    log("%s: decommissioned in %.1f s, streamed %.1f MiB in %.1f s"
        % (system.name, dec["command_s"], dec["bytes"] / 2**20, dec["stream_s"]))
    return out


def loadavg():
    """The 1-minute load average: the machine is shared, so it is recorded."""
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def machine():
    info = {"kernel": platform.release(), "cores": os.cpu_count(), "python": platform.python_version()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as f:
            info["mem_gib"] = round(int(f.readline().split()[1]) / 2**20, 1)
    except OSError:
        pass
    return info


def cmd_run(args):
    results_path = os.path.join(args.work, "results.json")
    os.makedirs(args.work, exist_ok=True)
    if os.path.exists(results_path):
        os.remove(results_path)  # a report must never show an older run
    results = {"started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
               "machine": machine(), "rows": args.rows,
               "command": " ".join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:]),
               "systems": {}}
    systems = {"cassandra": lambda: Cassandra(args.work, args.heap, args.stream_throughput),
               "rocksandra": lambda: Rocksandra(args.work, args.server, args.stream_throughput)}
    failed = False
    for name in args.systems.split(","):
        system = systems[name]()
        try:
            results["systems"][name] = phase(system, args)
        except Exception as e:  # reported, and the other system still runs
            log("%s failed: %s" % (name, e))
            results["systems"][name] = {"label": system.label, "error": str(e)}
            failed = True
        finally:
            system.stop_all()
        with open(results_path, "w") as f:
            json.dump(results, f, indent=2)
    log("results in %s" % results_path)
    return 1 if failed else 0


# --- report -----------------------------------------------------------------

def mb_per_s(nbytes, secs):
    if not nbytes or not secs:
        return None
    return nbytes / 1e6 / secs


def fmt(value, spec="%.1f"):
    return "-" if value is None else spec % value


def cmd_report(args):
    with open(os.path.join(args.work, "results.json")) as f:
        results = json.load(f)
    systems = results["systems"]
    lines = []
    add = lines.append
    title = "Streaming throughput: Rocksandra vs Apache Cassandra 5.0.6"
    add("# %s (%s)%s" % (title, results["started"][:10], " [smoke]" if args.smoke else ""))
    add("")
    m = results["machine"]
    add("- Machine: %s, %s cores, %s GiB RAM, Linux %s." % (m.get("cpu", "?"), m.get("cores"),
                                                           m.get("mem_gib", "?"), m.get("kernel")))
    add("- Command: `%s` (through `bench/streaming`)." % results["command"])
    add("- Data: %d rows of the loadgen's `emp` table (three 330-character text columns, "
        "~1 KB a row) in keyspace `bench`, SimpleStrategy RF 1, loaded into node 1 (%s, "
        "%d tokens), flushed, then left until node 1 was idle." % (results["rows"], NODE1,
                                                                  NUM_TOKENS))
    add("- Node 2 (%s, %d tokens) bootstraps from node 1, then is decommissioned back "
        "into it. One system at a time on the same machine." % (NODE2, NUM_TOKENS))
    for name, s in systems.items():
        add("- %s: %s" % (s["label"], ", ".join("%s %s" % (k, v) for k, v in
                                                 s.get("versions", {}).items())))
    add("")
    add("MB = 10^6 bytes, MiB = 2^20 bytes. *Stream time*: from the first stream session's "
        "start to the last one's end, from the node's own log. *Join*: from spawning node 2 "
        "(Cassandra: running `scripts/cassandra/start.sh`, JVM start included) until it is "
        "Normal. *Decommission*: the `nodetool decommission` command, start to answer "
        "(Cassandra's nodetool starts a JVM first, about a second).")
    add("")
    add("## Bootstrap (node 2 joins)")
    add("")
    add("| | " + " | ".join(s["label"] for s in systems.values()) + " |")
    add("|---|" + "---|" * len(systems))
    rows = [
        ("table files on node 1 (MiB)", lambda s: fmt(s["node1_table_bytes"] / 2**20)),
        ("preload (rows/s)", lambda s: fmt(s["load"]["rows_per_second"], "%.0f")),
        ("bytes streamed (MiB)", lambda s: fmt(s["bootstrap"]["bytes"] / 2**20)),
        ("table files on node 2 right after joining (MiB)",
         lambda s: fmt(s["bootstrap"]["node2_bytes_after"] / 2**20)),
        ("table files on node 2 once idle (MiB)",
         lambda s: fmt(s["bootstrap"]["node2_bytes_idle"] / 2**20)),
        ("spawn to first stream (s)", lambda s: fmt(s["bootstrap"]["start_to_stream_s"])),
        ("stream time (s)", lambda s: fmt(s["bootstrap"]["stream_s"])),
        ("spawn to Normal (s)", lambda s: fmt(s["bootstrap"]["start_to_normal_s"])),
        ("**MB/s over stream time**",
         lambda s: "**%s**" % fmt(mb_per_s(s["bootstrap"]["bytes"], s["bootstrap"]["stream_s"]))),
        ("MB/s over the whole join",
         lambda s: fmt(mb_per_s(s["bootstrap"]["bytes"], s["bootstrap"]["start_to_normal_s"]))),
        ("how", lambda s: describe_mode(s["bootstrap"]["mode"])),
        ("CPU s, node 1 (source) during the join", lambda s: fmt(s["bootstrap"]["node1_cpu_s"])),
        ("CPU s, node 2 since spawn (start-up included)",
         lambda s: fmt(s["bootstrap"]["node2_cpu_s_since_spawn"])),
        ("machine load average before", lambda s: fmt(s["bootstrap"]["loadavg_before"])),
    ]
    table(lines, systems, rows)
    add("")
    add("## Decommission (node 2 streams everything back)")
    add("")
    add("| | " + " | ".join(s["label"] for s in systems.values()) + " |")
    add("|---|" + "---|" * len(systems))
    rows = [
        ("bytes streamed (MiB)", lambda s: fmt(s["decommission"]["bytes"] / 2**20)),
        ("stream time (s)", lambda s: fmt(s["decommission"]["stream_s"])),
        ("nodetool decommission (s)", lambda s: fmt(s["decommission"]["command_s"])),
        ("**MB/s over stream time**",
         lambda s: "**%s**" % fmt(mb_per_s(s["decommission"]["bytes"],
                                           s["decommission"]["stream_s"]))),
        ("MB/s over the whole command",
         lambda s: fmt(mb_per_s(s["decommission"]["bytes"], s["decommission"]["command_s"]))),
        ("how", lambda s: describe_mode(s["decommission"]["mode"])),
        ("CPU s, node 2 (source) during the command", lambda s: fmt(s["decommission"]["node2_cpu_s"])),
        ("CPU s, node 1 (receiver) during the command",
         lambda s: fmt(s["decommission"]["node1_cpu_s"])),
        ("machine load average before", lambda s: fmt(s["decommission"]["loadavg_before"])),
    ]
    table(lines, systems, rows)
    for name, s in systems.items():
        if "error" in s:
            add("")
            add("**%s failed**: `%s`" % (s["label"], s["error"][:2000]))
    add("")
    add("Raw figures: `%s` (copied beside this report)." % os.path.basename(args.out_json))
    if args.notes and os.path.exists(args.notes):
        add("")
        with open(args.notes) as f:
            add(f.read().rstrip())
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    shutil.copy(os.path.join(args.work, "results.json"), args.out_json)
    log("report in %s" % args.out)


def describe_mode(mode):
    if isinstance(mode, dict):
        parts = []
        if mode.get("entire_sstables"):
            parts.append("%d entire SSTables (zero-copy)" % mode["entire_sstables"])
        if mode.get("partial_sstables"):
            parts.append("%d SSTable sections (partition by partition)" % mode["partial_sstables"])
        return (", ".join(parts) + " (all keyspaces)") if parts else "-"
    return str(mode)


def table(lines, systems, rows):
    for label, get in rows:
        cells = []
        for s in systems.values():
            try:
                cells.append(get(s))
            except (KeyError, TypeError):
                cells.append("-")
        lines.append("| %s | %s |" % (label, " | ".join(cells)))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run")
    run.add_argument("--work", required=True)
    run.add_argument("--server", required=True, help="the rocksandra binary")
    run.add_argument("--loadgen", required=True, help="the rocksandra-loadgen binary")
    run.add_argument("--rows", type=int, default=1_000_000,
                     help="rows to load (~1 KB each; default 1000000, ~1 GB on disk)")
    run.add_argument("--heap", default="1G", help="Cassandra's heap per node")
    run.add_argument("--stream-throughput", "--cassandra-stream-throughput",
                     dest="stream_throughput", default="0MiB/s",
                     help="both systems' stream_throughput_outbound (and Cassandra's "
                          "entire-SSTable one); 0MiB/s (default here) is unthrottled, the "
                          "systems' own default 24MiB/s; empty: leave the yaml defaults")
    run.add_argument("--systems", default="cassandra,rocksandra")
    report = sub.add_parser("report")
    report.add_argument("--work", required=True)
    report.add_argument("--out", required=True)
    report.add_argument("--notes", help="Markdown appended as the analysis")
    report.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.command == "run":
        for name in args.systems.split(","):
            if name not in ("cassandra", "rocksandra"):
                parser.error("--systems: cassandra and/or rocksandra, not %r" % name)
        # SIGTERM runs the cleanup in cmd_run's finally blocks.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        sys.exit(cmd_run(args))
    args.out_json = os.path.splitext(args.out)[0] + ".json"
    cmd_report(args)


if __name__ == "__main__":
    main()
