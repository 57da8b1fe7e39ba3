#!/usr/bin/env python3
"""The side-by-side benchmark: Apache Cassandra 5.0.6 and Rocksandra, one
after the other, on the same machine, under the same load (bench/loadgen;
with --latte, also fixed-rate reads from latte, a second, independent client).

    bench.py run    --work DIR [sizes...]   runs everything, writes DIR/results.json
    bench.py report --work DIR --out FILE   writes the Markdown report and PNG plots

Called by bench/run, which builds and installs what this needs.
"""

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOST = "127.0.0.1"
# The systems' ports: the defaults, or others (BENCH_*_PORT) when the
# benchmark runs beside other servers (the smoke run in scripts/test-all.sh).
PORT = int(os.environ.get("BENCH_PORT", "9042"))
METRICS_PORT = int(os.environ.get("BENCH_METRICS_PORT", "9180"))
ADMIN_PORT = int(os.environ.get("BENCH_ADMIN_PORT", "7199"))
STORAGE_PORT = int(os.environ.get("BENCH_STORAGE_PORT", "7000"))
METRICS_URL = "http://127.0.0.1:%d/metrics" % METRICS_PORT
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# A phase during which other processes used more CPU than this (cores) is
# flagged as disturbed in the report.
OTHER_CORES_MAX = 0.15


def log(*parts):
    print("[bench %s]" % time.strftime("%H:%M:%S"), *parts, flush=True)


class Loadgen:
    def __init__(self, binary):
        self.binary = binary

    def __call__(self, *args):
        cmd = [self.binary, *args, "--host", "%s:%d" % (HOST, PORT)]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True)
        if out.stderr.strip():
            log("loadgen stderr:", out.stderr.strip()[-2000:])
        return json.loads(out.stdout)


class Latte:
    """latte (crates.io `latte-cli`, installed by bench/latte/install.sh), the
    second, independent load generator: the `read` function of
    bench/latte/emp.rn, the same prepared SELECT on the same `emp` rows as
    bench/loadgen, at a fixed rate. Returns a dict shaped like loadgen's `run`
    output (`reads` with throughput, latencies in ms, errors), so `measure()`
    and the report treat both alike."""

    WORKLOAD = os.path.join(ROOT, "bench/latte/emp.rn")
    # Client settings, chosen for 20-40k reads/s on two cores shared with the
    # server. latte splits the rate evenly over its threads, each with its own
    # rate limiter (a tokio interval: a tick more than 5 ms late is dropped,
    # so a starved thread loses rate) and its own in-flight limit. 2 threads
    # keep the rate when one is descheduled: against Cassandra on this
    # machine (2000 cached rows, 10 s) they reached 99.9/99.6/99.0% of
    # 20k/30k/40k reads/s using 0.29-0.40 cores, 1 thread 100/98.1/96.9% using
    # 0.22-0.34. 64 in flight per thread make the 128 of loadgen's readers; 4
    # connections, as loadgen's. Consistency ONE, loadgen's 10 s request
    # timeout, and no retries (latte retries timeouts 3 times by default,
    # which would hide errors in its latencies). No warm-up cycles: loadgen
    # has none either.
    SETTINGS = ["--threads", "2", "--concurrency", "64", "--connections", "4",
                "--consistency", "ONE", "--request-timeout", "10s", "--retries", "0",
                "--warmup", "0"]

    def __init__(self, binary, work):
        self.binary = binary
        self.dir = os.path.join(work, "latte")
        os.makedirs(self.dir, exist_ok=True)
        self.phases = 0

    def version(self):
        out = subprocess.run([self.binary, "--version"], capture_output=True, text=True)
        return out.stdout.strip().split()[-1] if out.stdout.strip() else "?"

    def __call__(self, rows, rate, seconds):
        # Each phase starts its cycle counter elsewhere, so it reads other keys
        # than the phase before (latte draws key i from a hash of the cycle).
        self.phases += 1
        stem = os.path.join(self.dir, "%s-read-%d" % (time.strftime("%H%M%S"), rate))
        cmd = [self.binary, "--log-file", stem + ".log", "run", self.WORKLOAD,
               "--functions", "read", "-P", "rows=%d" % rows,
               "--rate", str(rate), "--duration", "%ds" % seconds,
               "--start-cycle", str(self.phases << 40), *self.SETTINGS,
               "--quiet", "--output", stem + ".json", "%s:%d" % (HOST, PORT)]
        out = subprocess.run(cmd, capture_output=True, text=True)
        with open(stem + ".txt", "w") as f:
            f.write(" ".join(cmd) + "\n\n" + out.stdout + "\n" + out.stderr)
        if out.returncode != 0:
            raise RuntimeError("latte exited with %d: %s" % (out.returncode, out.stderr.strip()[-2000:]))
        result = parse_latte_report(stem + ".json", rate)
        result["latte_output"] = stem + ".txt"
        return result


def parse_latte_report(path, target_rate):
    """latte 0.29's JSON report as loadgen's `run` output: `reads` with the
    request latencies (ms; measured by latte around each request, from its
    send), and latte's own CPU as the client's."""
    with open(path) as f:
        report = json.load(f)
    res = report["result"]
    # Request errors are only in the per-second sampling log (the top-level
    # `error_count` counts failed workload calls, and in latte 0.29 a failed
    # request does not fail the call).
    request_errors = sum(s.get("req_error_count", 0) for s in res.get("log", []))
    requests = res["request_count"]
    # A key lookup returns at most one row: a successful read without its row
    # is an error, as in loadgen.
    missing_rows = max(0, requests - request_errors - res["row_count"])
    count = requests - request_errors - missing_rows
    seconds = res["elapsed_time_s"]
    latency = res.get("request_latency") or {}
    pct = {round(q, 2): p["value"] for q, p in zip(report["percentiles"], latency.get("percentiles", []))}
    first_error = (res.get("errors") or [None])[0]
    if missing_rows and not first_error:
        first_error = "%d reads returned no row" % missing_rows
    reads = {
        "target_rate": target_rate,
        "count": count,
        "errors": request_errors + missing_rows,
        "request_errors": request_errors,
        "missing_rows": missing_rows,
        "first_error": first_error,
        "rows": res["row_count"],
        "rows_per_request": res.get("row_count_per_req"),
        "throughput": count / seconds if seconds else 0.0,
        "mean_ms": _dig(latency, ["mean", "value"]),
        "p50_ms": pct.get(50.0),
        "p99_ms": pct.get(99.0),
        "p999_ms": pct.get(99.9),
        "max_ms": pct.get(100.0),
        "percentiles_ms": [[q, v] for q, v in sorted(pct.items()) if q >= 50.0],
    }
    return {
        "seconds": seconds,
        "mode": "latte fixed rate (rate limiter)",
        "client_cpu_seconds": res["cpu_time_s"],
        "client_cpu_cores": res["cpu_time_s"] / seconds if seconds else 0.0,
        "reads": reads,
        "writes": {"count": 0},
        "latte_report": path,
    }


# --- process measurements -------------------------------------------------

def cpu_seconds(pid):
    """utime + stime of a process and its threads, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def context_switches(pid):
    """Context switches (voluntary and not) of all of a process's threads: a
    thread that sleeps between requests pays one wake-up per request, which
    is why the server's CPU per request depends on how its requests arrive
    (one at a time, or several per wake-up)."""
    total = 0
    task_dir = "/proc/%d/task" % pid
    for tid in os.listdir(task_dir):
        try:
            with open(os.path.join(task_dir, tid, "status")) as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:")):
                        total += int(line.split()[1])
        except FileNotFoundError:  # a thread that ended meanwhile
            pass
    return total


def proc_kb(path, key):
    """A `Key:   N kB` figure of a /proc file (0 when absent)."""
    with open(path) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def status_kb(pid, key):
    return proc_kb("/proc/%d/status" % pid, key)


def du_bytes(path):
    total = 0
    for dirpath, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


def scrape_metrics():
    """Rocksandra's Prometheus endpoint as {name{labels}: value}."""
    try:
        with urllib.request.urlopen(METRICS_URL, timeout=5) as r:
            text = r.read().decode()
    except OSError as e:
        log("metrics scrape failed:", e)
        return {}
    values = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, _, value = line.rpartition(" ")
        try:
            values[name] = float(value)
        except ValueError:
            pass
    return values


LAG_BUCKET = 'rocksandra_event_loop_lag_seconds_bucket{le="%s"}'
LAG_LIMIT_S = 0.01


def fmt_lag(lag):
    """One phase's event-loop lag (from lag_in_phase) in words."""
    if not lag:
        return "no event-loop probe figures for the mixed phase"
    lower, upper = lag["longest_between_s"]
    return "in the mixed phase, %d of %d probe wake-ups were more than %g ms late, the latest %s" % (
        lag["over_limit"], lag["wakeups"], 1000 * LAG_LIMIT_S,
        "between %g and %g ms" % (1000 * lower, 1000 * upper) if upper is not None
        else "over %g ms" % (1000 * lower))


# The server's line for a late probe wake-up (crates/server/src/metrics).
LATE_WAKEUP = re.compile(
    r"woke (?P<late_ms>[\d.]+) ms late: of its (?P<wall_ms>[\d.]+) ms it ran (?P<ran_ms>[\d.]+) ms, "
    r"waited (?P<waited_ms>[\d.]+) ms for a CPU, and was blocked or idle (?P<blocked_ms>[\d.]+) ms")


def fmt_late_wakeups(lines):
    """Where the logged late wake-ups' time went, summed, in words."""
    if not lines:
        return "none logged"
    total = lambda k: sum(x[k] for x in lines)
    return ("%d logged (the latest %.1f ms late); over their %.1f ms the loops ran %.1f ms, "
            "waited %.1f ms for a CPU, and were blocked or idle %.1f ms" % (
                len(lines), max(x["late_ms"] for x in lines), total("wall_ms"), total("ran_ms"),
                total("waited_ms"), total("blocked_ms")))


def lag_in_phase(before, after):
    """The event-loop probe's wake-ups during one phase, from the change of
    its histogram: how many, how many were more than LAG_LIMIT_S late, and
    the bucket bounds (s) the longest one lies between."""
    def diff(key):
        return after.get(key, 0.0) - before.get(key, 0.0)
    prefix = LAG_BUCKET[:-4]
    bounds = sorted((float(k[len(prefix):-2]), k) for k in after
                    if k.startswith(prefix) and "+Inf" not in k)
    total = diff(LAG_BUCKET % "+Inf")
    if not bounds or total <= 0:
        return None
    within = [(bound, diff(key)) for bound, key in bounds]
    over = total - sum(n for bound, n in within if bound == LAG_LIMIT_S)
    longest = (within[-1][0], None)
    for lower, (upper, n) in zip([0.0] + [b for b, _ in within], within):
        if n >= total:
            longest = (lower, upper)
            break
    return {"wakeups": total, "over_limit": over, "longest_between_s": longest}


def gc_pauses(gc_log_dir, start, end):
    """Seconds of stop-the-world GC pauses logged between two wall times."""
    total = 0.0
    longest = 0.0
    pattern = re.compile(r"^\[([^\]]+)\].*\[gc\s*\] GC\(\d+\) Pause .* ([0-9.]+)ms$")
    for name in sorted(os.listdir(gc_log_dir)):
        if not name.startswith("gc.log"):
            continue
        with open(os.path.join(gc_log_dir, name), errors="replace") as f:
            for line in f:
                m = pattern.match(line.strip())
                if not m:
                    continue
                try:
                    at = dt.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()
                except ValueError:
                    continue
                if start <= at <= end:
                    pause = float(m.group(2)) / 1000.0
                    total += pause
                    longest = max(longest, pause)
    return total, longest


# --- the systems ------------------------------------------------------------

class Cassandra:
    name = "cassandra"
    label = "Apache Cassandra 5.0.6"

    def __init__(self, work, heap, yaml_lines=()):
        self.base = os.path.join(work, "cassandra")
        self.heap = heap
        self.yaml_lines = list(yaml_lines)
        self.pid = None

    def start(self):
        shutil.rmtree(self.base, ignore_errors=True)
        yaml_args = [arg for line in self.yaml_lines for arg in ("--yaml", line)]
        subprocess.run(
            [os.path.join(ROOT, "scripts/cassandra/start.sh"), "--base", self.base,
             "--port", str(PORT), "--storage-port", str(STORAGE_PORT), "--jmx-port", str(ADMIN_PORT),
             "--heap", self.heap, "--timeout", "300"] + yaml_args,
            check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(self.base, "cassandra.pid")) as f:
            self.pid = int(f.read().strip())

    def stop(self):
        subprocess.run([os.path.join(ROOT, "scripts/cassandra/stop.sh"), "--base", self.base],
                       check=False, stdout=subprocess.DEVNULL)

    def data_dir(self):
        return os.path.join(self.base, "data")

    def stalls(self, start, end):
        total, longest = gc_pauses(os.path.join(self.base, "logs"), start, end)
        return {"kind": "GC pauses (gc.log)", "seconds": total, "longest_s": longest}

    def versions(self):
        return {"cassandra": "5.0.6", "heap": self.heap, "yaml": self.yaml_lines,
                "java": subprocess.run(["bash", "-c", "source %s/scripts/cassandra/common.sh && "
                                        "$(find_java17) -version 2>&1 | head -1" % ROOT],
                                       capture_output=True, text=True).stdout.strip()}


class Rocksandra:
    name = "rocksandra"
    label = "Rocksandra"

    def __init__(self, work, binary, yaml_lines=()):
        self.base = os.path.join(work, "rocksandra")
        self.binary = binary
        self.yaml_lines = list(yaml_lines)
        self.proc = None
        self.pid = None
        self.before = {}

    def start(self):
        shutil.rmtree(self.base, ignore_errors=True)
        os.makedirs(self.base)
        self.log = open(os.path.join(self.base, "server.log"), "w")
        config = []
        if self.yaml_lines:
            path = os.path.join(self.base, "rocksandra.yaml")
            with open(path, "w") as f:
                f.write("".join(line + "\n" for line in self.yaml_lines))
            config = ["--config", path]
        self.proc = subprocess.Popen(
            [self.binary, "--data-dir", os.path.join(self.base, "data"),
             "--listen-address", HOST, "--native-port", str(PORT),
             "--prometheus-port", str(METRICS_PORT), "--admin-port", str(ADMIN_PORT)] + config,
            stdout=self.log, stderr=subprocess.STDOUT)
        self.pid = self.proc.pid

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def data_dir(self):
        return os.path.join(self.base, "data")

    def phase_start(self):
        self.before = scrape_metrics()
        self.log.flush()
        self.log_offset = os.path.getsize(os.path.join(self.base, "server.log"))

    def late_wakeups(self):
        """The server's log lines about late event-loop wake-ups since the
        phase began (at most one per loop per second), parsed."""
        with open(os.path.join(self.base, "server.log"), "rb") as f:
            f.seek(getattr(self, "log_offset", 0))
            text = f.read().decode(errors="replace")
        return [{k: float(v) for k, v in m.groupdict().items()}
                for m in LATE_WAKEUP.finditer(text)]

    def stalls(self, start, end):
        after = scrape_metrics()
        stall = after.get("rocksandra_storage_write_stall_seconds_total", 0.0) - \
            self.before.get("rocksandra_storage_write_stall_seconds_total", 0.0)
        return {"kind": "RocksDB write stalls", "seconds": stall,
                "event_loop_lag_max_s": after.get("rocksandra_event_loop_lag_max_seconds"),
                "event_loop_lag": lag_in_phase(self.before, after),
                "late_wakeups": self.late_wakeups(),
                "block_cache_hits": after.get("rocksandra_storage_block_cache_hits_total"),
                "block_cache_misses": after.get("rocksandra_storage_block_cache_misses_total")}

    def versions(self):
        # `rocksandra 0.1.0 (release build)`; older binaries print no profile.
        out = subprocess.run([self.binary, "--version"], capture_output=True,
                             text=True).stdout.strip()
        words = out.split()
        if "(release build)" in out or "(debug build)" in out:
            build = "release" if "(release build)" in out else "debug"
        else:
            build = "release" if "/release/" in self.binary else "unknown"
        return {"rocksandra": words[1] if len(words) > 1 else "?", "build": build,
                "yaml": self.yaml_lines}


# --- one system's run -------------------------------------------------------

def machine_busy_seconds():
    """CPU seconds the whole machine spent busy (all but idle and iowait),
    from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / CLOCK_TICKS


def measure(system, loadgen, what, args_list):
    """Runs one load phase with server CPU and stall measurements around it,
    and the machine's load: the CPU used by anything but the server and the
    load generator is recorded as `other_cores`, and a phase where it passes
    OTHER_CORES_MAX is flagged (`disturbed`) in the report."""
    if hasattr(system, "phase_start"):
        system.phase_start()
    # Dirty pages left by an earlier phase or by the other system (Cassandra
    # writes about 1.5 GB) are written back while this phase runs and can
    # stall its writes; each phase starts with them on disk.
    os.sync()
    dirty_kb = proc_kb("/proc/meminfo", "Dirty") + proc_kb("/proc/meminfo", "Writeback")
    result_load = os.getloadavg()[0]
    busy0 = machine_busy_seconds()
    cpu0 = cpu_seconds(system.pid)
    switches0 = context_switches(system.pid)
    t0 = time.time()
    result = loadgen(*args_list)
    t1 = time.time()
    cpu1 = cpu_seconds(system.pid)
    result["server_context_switches"] = context_switches(system.pid) - switches0
    busy = (machine_busy_seconds() - busy0) / (t1 - t0)
    result["server_cpu_seconds"] = cpu1 - cpu0
    result["server_cpu_cores"] = (cpu1 - cpu0) / (t1 - t0)
    result["load_average_before"] = result_load
    result["dirty_kb_before"] = dirty_kb
    result["machine_busy_cores"] = busy
    client = result.get("client_cpu_cores")
    if client is not None:
        result["other_cores"] = busy - result["server_cpu_cores"] - client
        result["disturbed"] = result["other_cores"] > OTHER_CORES_MAX
        if result["disturbed"]:
            log("WARNING: %.2f cores used by other processes during %s %s" % (
                result["other_cores"], system.name, what))
    stalls = system.stalls(t0, t1)
    stalls["percent_of_wall"] = 100.0 * stalls["seconds"] / (t1 - t0)
    result["stalls"] = stalls
    log("%s %s: reads %s, writes %s, server cpu %.2f cores, stalls %.3f%%" % (
        system.name, what, summary(result.get("reads")), summary(result.get("writes")),
        result["server_cpu_cores"], stalls["percent_of_wall"]))
    return result


def summary(ops):
    if not ops or not ops.get("count"):
        return "-"
    return "%.0f/s p99 %.2f ms p99.9 %.2f ms errors %d" % (
        ops["throughput"], ops["p99_ms"], ops["p999_ms"], ops["errors"])


def cpu_us_per_op(result):
    """Server CPU per operation of a phase in microseconds: server CPU seconds
    over the operations done (completed and failed, reads and writes)."""
    ops = sum((result.get(k) or {}).get("count", 0) + (result.get(k) or {}).get("errors", 0)
              for k in ("reads", "writes"))
    return result["server_cpu_seconds"] / ops * 1e6 if ops else None


def switches_per_op(result):
    """Server context switches per operation of a phase (None for results
    recorded before they were measured)."""
    ops = sum((result.get(k) or {}).get("count", 0) + (result.get(k) or {}).get("errors", 0)
              for k in ("reads", "writes"))
    switches = result.get("server_context_switches")
    return switches / ops if ops and switches is not None else None


def fmt_switches(result):
    switches = switches_per_op(result)
    return "-" if switches is None else "%.2f" % switches


def cpu_per_read_at(sweep, rate):
    """Server CPU per read (µs) of a sweep's step at `rate`, None when the
    sweep has no such step or it did not reach 90% of the rate."""
    for step in sweep:
        reads = step.get("reads") or {}
        if step.get("target_rate") == rate and reads.get("throughput", 0) >= 0.9 * rate:
            return cpu_us_per_op(step)
    return None


def sweep_stops(reads, rate, stop_ms):
    """Saturated: the target rate is not reached, or latency explodes."""
    return reads["throughput"] < 0.9 * rate or (reads["p99_ms"] or 0) > stop_ms


def settle(pid, limit, idle_cores=0.2, window=5.0):
    """Waits until the server is idle (background compaction after the
    preload done: under `idle_cores` over `window` seconds), at most `limit`
    seconds, so every system starts the measured phases quiet."""
    start = time.time()
    while time.time() - start < limit:
        before = cpu_seconds(pid)
        time.sleep(window)
        if (cpu_seconds(pid) - before) / window < idle_cores:
            break
    return time.time() - start


def run_system(system, loadgen, opts, latte=None):
    out = {"label": system.label}
    log("starting", system.label)
    t0 = time.time()
    system.start()
    ready = loadgen("ready", "--timeout-s", "300")
    out["ready_seconds"] = time.time() - t0
    out["versions"] = system.versions()
    log("%s answered a query %.2f s after start" % (system.name, out["ready_seconds"]))
    try:
        loadgen("schema")
        cpu0 = cpu_seconds(system.pid)
        out["preload"] = loadgen("load", "--rows", str(opts.rows), "--concurrency", "256")
        out["preload"]["server_cpu_seconds"] = cpu_seconds(system.pid) - cpu0
        log("%s preload: %.0f rows/s" % (system.name, out["preload"]["rows_per_second"]))
        out["settle_seconds"] = settle(system.pid, opts.settle)
        log("%s idle %.0f s after the preload" % (system.name, out["settle_seconds"]))
        out["disk_bytes_after_load"] = du_bytes(system.data_dir())
        common = ["--rows", str(opts.rows), "--duration-s", str(opts.duration)]
        out["mixed"] = measure(system, loadgen, "mixed", [
            "run", *common, "--read-rate", str(opts.mixed_rate), "--write-rate", str(opts.mixed_rate),
            "--readers", "128", "--writers", "128"])
        # The mixed phase's writes leave flushes and compactions behind: the
        # read sweep starts on a quiet server, as the mixed phase did.
        out["settle_after_mixed_seconds"] = settle(system.pid, opts.settle)
        log("%s idle %.0f s after the mixed phase" % (system.name, out["settle_after_mixed_seconds"]))
        sweep = []
        for rate in opts.sweep:
            r = measure(system, loadgen, "read %d/s" % rate, [
                "run", "--rows", str(opts.rows), "--duration-s", str(opts.sweep_duration),
                "--read-rate", str(rate), "--readers", "128", "--writers", "0"])
            r["target_rate"] = rate
            r["server_cpu_us_per_op"] = cpu_us_per_op(r)
            sweep.append(r)
            if sweep_stops(r["reads"], rate, opts.sweep_stop_ms):
                break
        out["read_sweep"] = sweep
        if latte:
            out["latte_sweep"] = latte_sweep(system, latte, opts)
        out["write_max"] = measure(system, loadgen, "write max", [
            "run", *common, "--max-rate", "--readers", "0", "--writers", "128"])
        if isinstance(system, Rocksandra):
            out["metrics_at_end"] = {k: v for k, v in scrape_metrics().items()
                                     if not k.startswith("rocksandra_cql_request_latency")}
        out["peak_rss_bytes"] = status_kb(system.pid, "VmHWM") * 1024
        out["rss_bytes_at_end"] = status_kb(system.pid, "VmRSS") * 1024
        out["disk_bytes_at_end"] = du_bytes(system.data_dir())
    finally:
        system.stop()
    return out


def latte_sweep(system, latte, opts):
    """The second client: latte's fixed-rate read phases on the same rows,
    server CPU measured around each as for loadgen's; stops at saturation as
    loadgen's sweep does. A latte failure is recorded, not fatal: the first
    client's figures stand on their own."""
    sweep = []
    for rate in opts.latte_rates:
        try:
            r = measure(system, latte, "latte read %d/s" % rate, [opts.rows, rate, opts.sweep_duration])
        except (RuntimeError, OSError, ValueError, KeyError) as e:
            log("%s latte read %d/s failed: %s" % (system.name, rate, e))
            sweep.append({"target_rate": rate, "error": str(e)})
            break
        r["target_rate"] = rate
        r["server_cpu_us_per_op"] = cpu_us_per_op(r)
        sweep.append(r)
        if r["reads"]["missing_rows"]:
            log("%s latte read %d/s: %d reads found no row" % (system.name, rate, r["reads"]["missing_rows"]))
        if sweep_stops(r["reads"], rate, opts.sweep_stop_ms):
            break
    return sweep


def machine():
    cpu = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kb = int(f.readline().split()[1])
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(mem_kb / 1048576, 1),
            "kernel": platform.release(), "hostname": platform.node()}


def cmd_run(opts):
    os.makedirs(opts.work, exist_ok=True)
    loadgen = Loadgen(opts.loadgen)
    latte = Latte(opts.latte, opts.work) if opts.latte else None
    results = {
        "date": dt.date.today().isoformat(),
        "started": dt.datetime.now().isoformat(timespec="seconds"),
        "machine": machine(),
        "command": " ".join(sys.argv),
        "parameters": {"rows": opts.rows, "duration_s": opts.duration,
                       "mixed_rate_each": opts.mixed_rate, "sweep": opts.sweep,
                       "sweep_duration_s": opts.sweep_duration, "heap": opts.heap},
        "systems": {},
    }
    if latte:
        results["parameters"]["latte_rates"] = opts.latte_rates
        results["latte"] = {"version": latte.version(), "workload": "bench/latte/emp.rn, function read",
                            "settings": " ".join(Latte.SETTINGS)}
    results["parameters"]["repeat"] = opts.repeat
    results["runs"] = []
    systems = [Cassandra(opts.work, opts.heap, opts.cassandra_yaml),
               Rocksandra(opts.work, opts.server, opts.rocksandra_yaml)]
    systems = [s for s in systems if not opts.only or s.name == opts.only]
    for i in range(opts.repeat):
        # Alternate which system goes first, so neither always runs on a
        # machine the other has just warmed or heated.
        run = {}
        results["runs"].append(run)
        for system in (systems if i % 2 == 0 else systems[::-1]):
            log("run %d of %d" % (i + 1, opts.repeat))
            run[system.name] = run_system(system, loadgen, opts, latte)
            results["systems"] = results["runs"][0]
            with open(os.path.join(opts.work, "results.json"), "w") as f:
                json.dump(results, f, indent=1)
    log("results in", os.path.join(opts.work, "results.json"))


def cmd_profile(opts):
    """A CPU profile of Rocksandra under latte's fixed-rate reads: perf
    with call graphs (DWARF unwinding by default: neither RocksDB nor the
    Rust code keeps frame pointers, so `fp` loses most callers) over `--duration` seconds of the phase, folded
    with inferno into a flame graph, split into request steps by
    bench/costs.py, with the server CPU per read measured in the same phase
    (perf's own sampling included)."""
    os.makedirs(opts.work, exist_ok=True)
    loadgen, latte = Loadgen(opts.loadgen), Latte(opts.latte, opts.work)
    system = Rocksandra(opts.work, opts.server, opts.rocksandra_yaml)
    rate = opts.latte_rates[0]
    perf_data = os.path.join(opts.work, "perf.data")
    system.start()
    try:
        loadgen("ready", "--timeout-s", "300")
        loadgen("schema")
        loadgen("load", "--rows", str(opts.rows), "--concurrency", "256")
        log("rocksandra idle %.0f s after the preload" % settle(system.pid, opts.settle))
        if opts.profile_after_mixed:
            # The state `run`'s read phases meet: the mixed phase's writes in
            # memtables and level-0 files over the compacted rows.
            loadgen("run", "--rows", str(opts.rows), "--duration-s", str(opts.duration),
                    "--read-rate", str(opts.mixed_rate), "--write-rate", str(opts.mixed_rate),
                    "--readers", "128", "--writers", "128")
            log("rocksandra idle %.0f s after the mixed phase" % settle(system.pid, opts.settle))
        latte(opts.rows, rate, 10)
        perf = subprocess.Popen(["perf", "record", "-F", str(opts.perf_hz), "--call-graph", opts.call_graph,
                                 "-p", str(system.pid),
                                 "-o", perf_data, "--", "sleep", str(opts.duration)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        result = measure(system, latte, "latte read %d/s, profiled" % rate, [opts.rows, rate, opts.duration])
        perf.wait()
    finally:
        system.stop()
    stem = os.path.splitext(opts.out)[0]
    folded = os.path.join(opts.work, "profile.folded")
    tools = os.path.join(os.path.expanduser("~"), ".cache/rocksandra-tools/bin")
    script = subprocess.run(["perf", "script", "-i", perf_data], check=True, capture_output=True)
    with open(folded, "wb") as f:
        f.write(subprocess.run([os.path.join(tools, "inferno-collapse-perf"), "--kernel"], input=script.stdout,
                               check=True, capture_output=True).stdout)
    with open(folded, "rb") as src, open(stem + ".svg", "wb") as svg:
        subprocess.run([os.path.join(tools, "inferno-flamegraph"), "--title",
                        "Rocksandra, latte reads at %d/s, %d rows (%s)" % (rate, opts.rows, dt.date.today()),
                        "--width", "1600"], stdin=src, stdout=svg, check=True)
    per_read = cpu_us_per_op(result)
    table = subprocess.run([sys.executable, os.path.join(ROOT, "bench/costs.py"), folded,
                            "--per-op-us", "%.2f" % per_read], check=True, capture_output=True, text=True).stdout
    m = machine()
    reads = result["reads"]
    with open(stem + ".md", "w") as f:
        f.write("# CPU profile: Rocksandra serving prepared single-row reads (%s)\n\n" % dt.date.today())
        f.write("Generated by `bench/profile.sh`. Flame graph: `%s`.\n\n" % os.path.basename(stem + ".svg"))
        f.write("- Machine: %s, %s cores, %s GiB RAM, Linux %s; load average %.2f before the phase, "
                "%.2f cores used by other processes during it.\n" % (
                    m["cpu"], m["cores"], m["memory_gib"], m["kernel"], result["load_average_before"],
                    result.get("other_cores") or 0.0))
        f.write("- Command: `%s`\n" % " ".join(sys.argv))
        f.write("- Load: latte %s, `%s`, %d rows of ~1 KB preloaded and compacted, %d reads/s for %d s "
                "after a 10 s warm-up; perf record -F %d --call-graph %s on the server over the phase.\n" % (
                    latte.version(), " ".join(Latte.SETTINGS), opts.rows, rate, opts.duration,
                    opts.perf_hz, opts.call_graph))
        f.write("- Achieved %.0f reads/s, P50 %.2f ms, P99 %.2f ms, errors %d; server %.2f cores: "
                "**%.1f µs of server CPU per read** (with perf's sampling); latte %.2f cores.\n\n" % (
                    reads["throughput"], reads["p50_ms"] or 0, reads["p99_ms"] or 0, reads["errors"],
                    result["server_cpu_cores"], per_read, result["client_cpu_cores"]))
        f.write("Where the server's CPU goes, by the leaf frame of each sample (bench/costs.py):\n\n")
        f.write(table)
    log("profile:", stem + ".md", stem + ".svg")


# --- the report -------------------------------------------------------------

def best_rate(sweep, bound_ms):
    ok = [r["reads"]["throughput"] for r in sweep
          if r.get("reads") and (r["reads"]["p99_ms"] or 0) <= bound_ms and r["reads"]["errors"] == 0
          and r["reads"]["throughput"] >= 0.9 * r["target_rate"]]
    return max(ok) if ok else 0.0


def ratio(a, b):
    """a / b, as 1/N when under a tenth (0.00 would hide a 100x gap)."""
    if not a or not b:
        return "n/a"
    r = a / b
    return "%.2f" % r if r >= 0.1 else "1/%.0f" % (1 / r)


def fmt_ops(ops):
    if not ops or not ops.get("count"):
        return "| - | - | - | - | - | - | - |"
    return "| %.0f | %.2f | %.2f | %.2f | %.2f | %.2f | %d |" % (
        ops["throughput"], ops["mean_ms"], ops["p50_ms"], ops["p99_ms"], ops["p999_ms"],
        ops["max_ms"], ops["errors"])


def fmt_us(us):
    return "%.1f" % us if us is not None else "-"


def latte_section(w, s):
    """The second client's table for one system, and its server CPU per read
    beside loadgen's at the same rate."""
    w("### Second client: latte")
    w("Fixed-rate reads from latte on the same rows; request latencies in ms, throughput in reads/s.")
    w("")
    w("| target rate | throughput | mean | P50 | P99 | P99.9 | max | errors | server CPU (cores) | server CPU per read (µs) | server context switches per read | client CPU (cores) | stalls (% wall) |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in s["latte_sweep"]:
        if "error" in r:
            w("| %d | latte failed: %s ||||||||||||" % (r["target_rate"], r["error"].replace("|", "/")[:300]))
            continue
        switches = switches_per_op(r)
        w("| %d %s %.2f | %s | %s | %.2f | %.3f |" % (
            r["target_rate"], fmt_ops(r["reads"]), r["server_cpu_cores"], fmt_us(cpu_us_per_op(r)),
            "-" if switches is None else "%.2f" % switches, r["client_cpu_cores"], r["stalls"]["percent_of_wall"]))
    w("")
    loadgen = {x["target_rate"]: x for x in s.get("read_sweep", [])}
    for r in s["latte_sweep"]:
        if "error" in r:
            continue
        same = loadgen.get(r["target_rate"])
        w("- %d reads/s: server CPU per read %s µs with latte%s; %s." % (
            r["target_rate"], fmt_us(cpu_us_per_op(r)),
            ", %s µs with loadgen at the same rate (server context switches per read: %s with latte, "
            "%s with loadgen)" % (fmt_us(cpu_us_per_op(same)), fmt_switches(r), fmt_switches(same))
            if same else "",
            "every read returned its row" if not r["reads"].get("missing_rows")
            else "%d reads returned no row" % r["reads"]["missing_rows"]))
    w("")


def plots(results, out_dir, stem):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    files = []
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    for ax, key, title in zip(axes, ["p50_ms", "p99_ms", "p999_ms"], ["P50", "P99", "P99.9"]):
        for name, s in results["systems"].items():
            sweep = s.get("read_sweep", [])
            line, = ax.plot([r["reads"]["throughput"] for r in sweep], [r["reads"][key] for r in sweep],
                            marker="o", label=s["label"])
            # The second client's phases, dashed in the same system's colour.
            latte = [r for r in s.get("latte_sweep", []) if r.get("reads", {}).get("count")]
            if latte:
                ax.plot([r["reads"]["throughput"] for r in latte], [r["reads"][key] for r in latte],
                        marker="x", linestyle="--", color=line.get_color(), label=s["label"] + " (latte)")
        ax.set_xlabel("reads/s achieved")
        finish_axes(ax, "Read-only sweep: %s latency" % title)
    files.append(save(plt, fig, os.path.join(out_dir, stem + "-read-sweep.png")))

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, kind in zip(axes, ["reads", "writes"]):
        for name, s in results["systems"].items():
            pct = s.get("mixed", {}).get(kind, {}).get("percentiles_ms", [])
            if pct:
                xs = [100.0 / (100.0 - q) if q < 100 else 1e5 for q, _ in pct]
                ax.plot(xs, [v for _, v in pct], marker="o", label=s["label"])
        ax.set_xscale("log")
        ax.set_xticks([2, 10, 100, 1000, 10000, 1e5])
        ax.set_xticklabels(["P50", "P90", "P99", "P99.9", "P99.99", "max"])
        finish_axes(ax, "Mixed 50/50 load: %s latency by percentile" % kind)
    files.append(save(plt, fig, os.path.join(out_dir, stem + "-mixed-percentiles.png")))
    return files


def finish_axes(ax, title):
    ax.set_ylabel("latency (ms, log)")
    ax.set_yscale("log")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()


def save(plt, fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def cmd_report(opts):
    with open(os.path.join(opts.work, "results.json")) as f:
        results = json.load(f)
    out_dir = os.path.dirname(os.path.abspath(opts.out))
    os.makedirs(out_dir, exist_ok=True)
    stem = os.path.splitext(os.path.basename(opts.out))[0]
    images = plots(results, out_dir, stem)
    runs = results.get("runs") or [results["systems"]]
    sysd = runs[0]
    p = results["parameters"]
    m = results["machine"]
    lines = []
    w = lines.append
    w("# Benchmark: Rocksandra vs Apache Cassandra 5.0.6, NDBench `emp` workload (%s)" % results["date"])
    w("")
    w("Generated by `bench/run` (%s). Raw numbers: `%s.json` beside this file." % (
        "smoke size" if opts.smoke else "default sizes", stem))
    w("")
    w("## Machine and versions")
    w("- %s, %s cores, %s GiB RAM, Linux %s. Client and server share the machine "
      "and its cores (no pinning); client CPU is reported with each phase." % (
          m["cpu"], m["cores"], m["memory_gib"], m["kernel"]))
    for s in sysd.values():
        w("- %s: %s" % (s["label"], ", ".join("%s %s" % kv for kv in s.get("versions", {}).items())))
    if results.get("latte"):
        w("- Second client: latte %s (`%s`), settings `%s`." % (
            results["latte"]["version"], results["latte"]["workload"], results["latte"]["settings"]))
    w("- Command: `%s`" % results["command"])
    w("- Parameters: %s rows of ~1 KB (three 330-byte text columns), mixed phase %s s at %s reads/s + "
      "%s writes/s with 128 readers and 128 writers, read sweep %s at %s s per step, write max %s s "
      "closed-loop with 128 writers. Prepared statements, consistency ONE, single node, "
      "periodic commit log / WAL sync every 10 s on both." % (
          p["rows"], p["duration_s"], p["mixed_rate_each"], p["mixed_rate_each"],
          p["sweep"], p["sweep_duration_s"], p["duration_s"]))
    if p.get("latte_rates"):
        w("- Second client: latte read phases at %s reads/s, %s s each, after loadgen's read sweep." % (
            p["latte_rates"], p["sweep_duration_s"]))
    w("")
    w("## Method")
    w("- Load generator: our own (`bench/loadgen`, Rust, on the `scylla` 1.9 driver), chosen over "
      "`latte` or NoSQLBench as the main client because it runs the seed's exact workload (NDBench's `emp` table, 128 "
      "readers and 128 writers), is open-model (operation i is due at start + i/rate whatever "
      "happened before; latency is measured from that intended time, so queueing behind a stalled "
      "server is counted: no coordinated omission), records HdrHistograms (3 significant digits), "
      "schedules on an OS thread with sub-millisecond sleeps, and reports its own CPU time. The "
      "same binary and driver settings (4 connections, prepared statements, consistency ONE, "
      "10 s request timeout) drive both systems.")
    if results.get("latte"):
        w("- Second client, to check the first against an independent one: latte (crates.io "
          "`latte-cli`, Rust, on the `scylla` driver, workload `bench/latte/emp.rn`), the same prepared "
          "SELECT of one uniformly random row of the same `emp` rows, 2 threads x 64 requests in flight "
          "(128, as loadgen's readers), 4 connections, consistency ONE, no retries. Its fixed rate is a "
          "rate limiter, not an open model: a tick more than 5 ms late is skipped, and latency is "
          "measured from each request's send, so near saturation it reports a lower rate rather than "
          "the queueing delay loadgen counts. Every read is checked to return its row (latte's row count "
          "equals its successful requests; a read without its row counts as an error).")
    w("- Server CPU per operation: server CPU seconds of a phase over its operations (completed and "
      "failed), in microseconds; for the read-only steps of either client, CPU per read.")
    w("- Throughput sweep: read-only steps at increasing fixed rates; the figure is the highest "
      "achieved rate whose P99 stays under the bound with no errors and at least 90% of the target "
      "rate achieved. Write maximum: closed loop, 128 writers, latency from the actual send.")
    w("- Server figures: CPU from /proc/PID/stat over each phase; peak RSS = VmHWM; disk = bytes "
      "under the data directory (data, commit log/WAL) once the server is idle after the preload (its CPU under 0.2 cores over 5 s, at most 300 s: compactions done), which is also when the measured phases start (the read sweep again waits for the server to be idle after the mixed phase); ready time = from "
      "spawning the server to the first successful `SELECT` (Cassandra: from running its start "
      "script, JVM launch included). Stalls: Cassandra's stop-the-world GC pauses from its GC log "
      "inside the phase window; Rocksandra's RocksDB write-stall time from its metrics endpoint, "
      "and the longest event-loop pause (a 10 ms timer's lateness) since start. Each measured phase "
      "starts after a `sync` (from 2026-11-29, stop 38), so that no dirty pages of an earlier phase or "
      "of the other system are written back during it.")
    w("")
    w("## Summary")
    if len(runs) > 1:
        w("%d runs per system, alternating which system goes first: the median, and in brackets the "
          "lowest and highest run; the ratio is of the medians. Plots and the per-phase tables below "
          "are each run's own; the plots show run 1." % len(runs))
        w("")
    w("| figure | Cassandra | Rocksandra | Rocksandra / Cassandra |")
    w("|---|---|---|---|")
    for name, fn, fmt in summary_figures():
        cs, rs = run_values(runs, "cassandra", fn), run_values(runs, "rocksandra", fn)
        w("| %s | %s | %s | %s |" % (name, spread(cs, fmt), spread(rs, fmt),
                                     ratio(median_or_none(rs), median_or_none(cs))))
    w("")
    for img in images:
        w("![%s](%s)" % (os.path.basename(img), os.path.basename(img)))
        w("")
    for i, run in enumerate(runs):
        for s in run.values():
            system_section(w, s, "" if len(runs) == 1 else " (run %d of %d)" % (i + 1, len(runs)))
    if opts.notes and os.path.exists(opts.notes):
        with open(opts.notes) as f:
            w(f.read())
    with open(opts.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    shutil.copy(os.path.join(opts.work, "results.json"), os.path.join(out_dir, stem + ".json"))
    log("report:", opts.out)


def summary_figures():
    """The summary's rows: (name, figure of one system's run, format)."""
    get = lambda *ks: lambda s: _dig(s, ks)
    mib = lambda k: lambda s: (s.get(k) or 0) / 1048576 or None
    figs = [("read throughput at P99 <= %d ms (reads/s)" % b,
             lambda s, b=b: best_rate(s.get("read_sweep", []), b), "%.0f") for b in (2, 10)]
    figs.append(("latte: read throughput at P99 <= 2 ms (reads/s)",
                 lambda s: best_rate(s.get("latte_sweep", []), 2), "%.0f"))
    for client, key in (("loadgen", "read_sweep"), ("latte", "latte_sweep")):
        for rate in (10000, 20000):
            figs.append(("%s: server CPU per read at %d reads/s (µs)" % (client, rate),
                         lambda s, k=key, r=rate: cpu_per_read_at(s.get(k, []), r), "%.1f"))
    for k, label in [("p99_ms", "P99"), ("p999_ms", "P99.9")]:
        figs.append(("mixed: read %s (ms)" % label, get("mixed", "reads", k), "%.2f"))
        figs.append(("mixed: write %s (ms)" % label, get("mixed", "writes", k), "%.2f"))
    figs += [
        ("mixed: server CPU per operation (µs)",
         lambda s: cpu_us_per_op(s["mixed"]) if s.get("mixed") else None, "%.1f"),
        ("write max throughput (writes/s)", get("write_max", "writes", "throughput"), "%.0f"),
        ("write max: server CPU per write (µs)",
         lambda s: cpu_us_per_op(s["write_max"]) if s.get("write_max") else None, "%.1f"),
        ("stall time, mixed phase (% of wall)", get("mixed", "stalls", "percent_of_wall"), "%.3f"),
        ("peak RSS (MiB)", mib("peak_rss_bytes"), "%.0f"),
        ("disk after preload (MiB)", mib("disk_bytes_after_load"), "%.1f"),
        ("start to first successful query (s)", get("ready_seconds"), "%.2f"),
        ("preload (rows/s)", get("preload", "rows_per_second"), "%.0f"),
    ]
    return figs


def run_values(runs, name, fn):
    """A figure's value in every run of one system (runs without it left out)."""
    vals = [fn(run[name]) for run in runs if name in run]
    return [v for v in vals if v is not None]


def median_or_none(values):
    return statistics.median(values) if values else None


def spread(values, fmt):
    if not values:
        return "-"
    if len(values) == 1:
        return fmt % values[0]
    return "%s (%s-%s)" % (fmt % statistics.median(values), fmt % min(values), fmt % max(values))


def system_section(w, s, suffix):
    """One system's per-phase tables of one run."""
    get = lambda d, *ks: _dig(d, ks)
    w("## %s%s" % (s["label"], suffix))
    w("Latencies in ms, throughput in operations/s.")
    w("")
    w("| phase | op | throughput | mean | P50 | P99 | P99.9 | max | errors | server CPU (cores) | server CPU per op (µs) | server context switches per op | client CPU (cores) | stalls (% wall) | other CPU (cores) |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    phases = [("mixed", s.get("mixed"))] + \
        [("read %d/s" % x["target_rate"], x) for x in s.get("read_sweep", [])] + \
        [("write max", s.get("write_max"))]
    for phase, res in phases:
        if not res:
            continue
        for kind in ("reads", "writes"):
            ops = res.get(kind)
            if ops and ops.get("count"):
                other = res.get("other_cores")
                switches = switches_per_op(res)
                w("| %s | %s %s %.2f | %s | %s | %.2f | %.3f | %s |" % (
                    phase, kind, fmt_ops(ops), res["server_cpu_cores"], fmt_us(cpu_us_per_op(res)),
                    "-" if switches is None else "%.2f" % switches, res["client_cpu_cores"], res["stalls"]["percent_of_wall"],
                    "-" if other is None else "%.2f%s" % (other, " (disturbed)" if res.get("disturbed") else "")))
    w("")
    st = s.get("mixed", {}).get("stalls", {})
    w("- Stalls measured as: %s. %s" % (st.get("kind", "-"), (
        "Longest GC pause in the mixed phase: %.1f ms." % (1000 * st["longest_s"])
        if "longest_s" in st else
        "Longest event-loop pause since start: %s ms; %s. Late wake-ups in the mixed phase: %s." % (
            "%.1f" % (1000 * st["event_loop_lag_max_s"]) if st.get("event_loop_lag_max_s") is not None else "n/a",
            fmt_lag(st.get("event_loop_lag")),
            fmt_late_wakeups(st.get("late_wakeups"))))))
    me = s.get("metrics_at_end")
    if me:
        pick = lambda k: me.get(k)
        hits, misses = pick("rocksandra_storage_block_cache_hits_total"), pick("rocksandra_storage_block_cache_misses_total")
        w("- From its metrics endpoint at the end: block-cache hit rate %s, pending compaction %.1f MiB, "
          "memtables %.1f MiB, SST files %.1f MiB, write stalls %.3f s in total, longest event-loop pause %.1f ms." % (
              "%.1f%%" % (100.0 * hits / (hits + misses)) if hits is not None and misses and hits + misses > 0 else "n/a",
              (pick("rocksandra_storage_compaction_pending_bytes") or 0) / 1048576,
              (pick("rocksandra_storage_memtable_bytes") or 0) / 1048576,
              (pick("rocksandra_storage_sst_bytes") or 0) / 1048576,
              pick("rocksandra_storage_write_stall_seconds_total") or 0,
              1000 * (pick("rocksandra_event_loop_lag_max_seconds") or 0)))
    w("- Preload: %.0f rows/s; disk after preload %.1f MiB, at the end %.1f MiB; peak RSS %.0f MiB." % (
        get(s, "preload", "rows_per_second") or 0, (s.get("disk_bytes_after_load") or 0) / 1048576,
        (s.get("disk_bytes_at_end") or 0) / 1048576, (s.get("peak_rss_bytes") or 0) / 1048576))
    w("")
    if "latte_sweep" in s:
        latte_section(w, s)


def _dig(d, keys):
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["run", "report", "profile"])
    ap.add_argument("--work", required=True)
    ap.add_argument("--out")
    ap.add_argument("--notes", help="hand-written analysis appended to the report")
    ap.add_argument("--server")
    ap.add_argument("--loadgen")
    ap.add_argument("--latte", metavar="BINARY",
                    help="latte, the second client: its read phases follow loadgen's read sweep")
    ap.add_argument("--latte-rates", type=lambda s: [int(x) for x in s.split(",")],
                    default=[10000, 20000, 30000, 40000],
                    help="latte's fixed read rates (reads/s), one phase of --sweep-duration each")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--duration", type=int, default=60)
    ap.add_argument("--mixed-rate", type=int, default=2000)
    ap.add_argument("--sweep", type=lambda s: [int(x) for x in s.split(",")],
                    default=[500, 1000, 2000, 5000, 10000, 15000, 20000, 30000, 40000, 60000])
    ap.add_argument("--sweep-duration", type=int, default=20)
    ap.add_argument("--sweep-stop-ms", type=float, default=1000.0)
    ap.add_argument("--settle", type=int, default=300,
                    help="longest wait for the server to go idle after the preload (s)")
    ap.add_argument("--heap", default="4G")
    ap.add_argument("--cassandra-yaml", action="append", default=[], metavar="'KEY: VALUE'",
                    help="a cassandra.yaml line for Cassandra (repeatable)")
    ap.add_argument("--rocksandra-yaml", action="append", default=[], metavar="'KEY: VALUE'",
                    help="a configuration line for Rocksandra (repeatable)")
    ap.add_argument("--only", choices=["cassandra", "rocksandra"])
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs of every phase per system, alternating which system goes first; "
                         "the summary reports the median and the spread")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--profile-after-mixed", action="store_true",
                    help="profile: run the mixed phase (--mixed-rate, --duration) before the profiled reads")
    ap.add_argument("--perf-hz", type=int, default=499, help="profile: perf's sampling frequency")
    ap.add_argument("--call-graph", default="dwarf,16384", help="profile: perf's --call-graph mode")
    opts = ap.parse_args()
    if opts.command == "run":
        cmd_run(opts)
    elif opts.command == "profile":
        cmd_profile(opts)
    else:
        cmd_report(opts)


if __name__ == "__main__":
    main()
