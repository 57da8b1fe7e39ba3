#!/usr/bin/env python3
"""The side-by-side benchmark: Apache Cassandra 5.0.6 and Rocksandra, one
after the other, on the same machine, under the same load (bench/loadgen).

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
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOST = "127.0.0.1"
PORT = 9042
METRICS_URL = "http://127.0.0.1:9180/metrics"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


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


# --- process measurements -------------------------------------------------

def cpu_seconds(pid):
    """utime + stime of a process and its threads, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def status_kb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


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

    def __init__(self, work, heap):
        self.base = os.path.join(work, "cassandra")
        self.heap = heap
        self.pid = None

    def start(self):
        shutil.rmtree(self.base, ignore_errors=True)
        subprocess.run(
            [os.path.join(ROOT, "scripts/cassandra/start.sh"), "--base", self.base,
             "--port", str(PORT), "--heap", self.heap, "--timeout", "300"],
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
        return {"cassandra": "5.0.6", "heap": self.heap,
                "java": subprocess.run(["bash", "-c", "source %s/scripts/cassandra/common.sh && "
                                        "$(find_java17) -version 2>&1 | head -1" % ROOT],
                                       capture_output=True, text=True).stdout.strip()}


class Rocksandra:
    name = "rocksandra"
    label = "Rocksandra"

    def __init__(self, work, binary):
        self.base = os.path.join(work, "rocksandra")
        self.binary = binary
        self.proc = None
        self.pid = None
        self.before = {}

    def start(self):
        shutil.rmtree(self.base, ignore_errors=True)
        os.makedirs(self.base)
        self.log = open(os.path.join(self.base, "server.log"), "w")
        self.proc = subprocess.Popen(
            [self.binary, "--data-dir", os.path.join(self.base, "data"),
             "--listen-address", HOST, "--native-port", str(PORT)],
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

    def stalls(self, start, end):
        after = scrape_metrics()
        stall = after.get("rocksandra_storage_write_stall_seconds_total", 0.0) - \
            self.before.get("rocksandra_storage_write_stall_seconds_total", 0.0)
        return {"kind": "RocksDB write stalls", "seconds": stall,
                "event_loop_lag_max_s": after.get("rocksandra_event_loop_lag_max_seconds"),
                "block_cache_hits": after.get("rocksandra_storage_block_cache_hits_total"),
                "block_cache_misses": after.get("rocksandra_storage_block_cache_misses_total")}

    def versions(self):
        version = subprocess.run([self.binary, "--version"], capture_output=True,
                                 text=True).stdout.strip().split()[-1:]
        return {"rocksandra": " ".join(version), "build": "release" if "/release/" in self.binary
                else "debug"}


# --- one system's run -------------------------------------------------------

def measure(system, loadgen, what, args_list):
    """Runs one load phase with server CPU and stall measurements around it."""
    if hasattr(system, "phase_start"):
        system.phase_start()
    cpu0 = cpu_seconds(system.pid)
    t0 = time.time()
    result = loadgen(*args_list)
    t1 = time.time()
    cpu1 = cpu_seconds(system.pid)
    result["server_cpu_seconds"] = cpu1 - cpu0
    result["server_cpu_cores"] = (cpu1 - cpu0) / (t1 - t0)
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


def run_system(system, loadgen, opts):
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
        sweep = []
        for rate in opts.sweep:
            r = measure(system, loadgen, "read %d/s" % rate, [
                "run", "--rows", str(opts.rows), "--duration-s", str(opts.sweep_duration),
                "--read-rate", str(rate), "--readers", "128", "--writers", "0"])
            r["target_rate"] = rate
            sweep.append(r)
            reads = r["reads"]
            # Saturated: the target rate is not reached, or latency explodes.
            if reads["throughput"] < 0.9 * rate or reads["p99_ms"] > opts.sweep_stop_ms:
                break
        out["read_sweep"] = sweep
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
    systems = [Cassandra(opts.work, opts.heap), Rocksandra(opts.work, opts.server)]
    for system in systems:
        if opts.only and system.name != opts.only:
            continue
        results["systems"][system.name] = run_system(system, loadgen, opts)
        with open(os.path.join(opts.work, "results.json"), "w") as f:
            json.dump(results, f, indent=1)
    log("results in", os.path.join(opts.work, "results.json"))


# --- the report -------------------------------------------------------------

def best_rate(sweep, bound_ms):
    ok = [r["reads"]["throughput"] for r in sweep
          if r["reads"]["p99_ms"] <= bound_ms and r["reads"]["errors"] == 0
          and r["reads"]["throughput"] >= 0.9 * r["target_rate"]]
    return max(ok) if ok else 0.0


def ratio(a, b):
    return "%.2f" % (a / b) if a and b else "n/a"


def fmt_ops(ops):
    if not ops or not ops.get("count"):
        return "| - | - | - | - | - | - | - |"
    return "| %.0f | %.2f | %.2f | %.2f | %.2f | %.2f | %d |" % (
        ops["throughput"], ops["mean_ms"], ops["p50_ms"], ops["p99_ms"], ops["p999_ms"],
        ops["max_ms"], ops["errors"])


def plots(results, out_dir, stem):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    files = []
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    for ax, key, title in zip(axes, ["p50_ms", "p99_ms", "p999_ms"], ["P50", "P99", "P99.9"]):
        for name, s in results["systems"].items():
            sweep = s.get("read_sweep", [])
            ax.plot([r["reads"]["throughput"] for r in sweep], [r["reads"][key] for r in sweep],
                    marker="o", label=s["label"])
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
    sysd = results["systems"]
    c, r = sysd.get("cassandra", {}), sysd.get("rocksandra", {})
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
    w("- Command: `%s`" % results["command"])
    w("- Parameters: %s rows of ~1 KB (three 330-byte text columns), mixed phase %s s at %s reads/s + "
      "%s writes/s with 128 readers and 128 writers, read sweep %s at %s s per step, write max %s s "
      "closed-loop with 128 writers. Prepared statements, consistency ONE, single node, "
      "periodic commit log / WAL sync every 10 s on both." % (
          p["rows"], p["duration_s"], p["mixed_rate_each"], p["mixed_rate_each"],
          p["sweep"], p["sweep_duration_s"], p["duration_s"]))
    w("")
    w("## Method")
    w("- Load generator: our own (`bench/loadgen`, Rust, on the `scylla` 1.9 driver), chosen over "
      "`latte` or NoSQLBench because it runs the seed's exact workload (NDBench's `emp` table, 128 "
      "readers and 128 writers), is open-model (operation i is due at start + i/rate whatever "
      "happened before; latency is measured from that intended time, so queueing behind a stalled "
      "server is counted: no coordinated omission), records HdrHistograms (3 significant digits), "
      "schedules on an OS thread with sub-millisecond sleeps, and reports its own CPU time. The "
      "same binary and driver settings (4 connections, prepared statements, consistency ONE, "
      "10 s request timeout) drive both systems.")
    w("- Throughput sweep: read-only steps at increasing fixed rates; the figure is the highest "
      "achieved rate whose P99 stays under the bound with no errors and at least 90% of the target "
      "rate achieved. Write maximum: closed loop, 128 writers, latency from the actual send.")
    w("- Server figures: CPU from /proc/PID/stat over each phase; peak RSS = VmHWM; disk = bytes "
      "under the data directory (data, commit log/WAL) once the server is idle after the preload (its CPU under 0.2 cores over 5 s, at most 300 s: compactions done), which is also when the measured phases start; ready time = from "
      "spawning the server to the first successful `SELECT` (Cassandra: from running its start "
      "script, JVM launch included). Stalls: Cassandra's stop-the-world GC pauses from its GC log "
      "inside the phase window; Rocksandra's RocksDB write-stall time from its metrics endpoint, "
      "and the longest event-loop pause (a 10 ms timer's lateness) since start.")
    w("")
    w("## Summary")
    w("| figure | Cassandra | Rocksandra | Rocksandra / Cassandra |")
    w("|---|---|---|---|")

    def row(name, a, b, fmt="%.2f"):
        w("| %s | %s | %s | %s |" % (name, fmt % a if a is not None else "-",
                                     fmt % b if b is not None else "-", ratio(b, a)))
    get = lambda s, *ks: _dig(s, ks)
    for bound in (2, 10):
        row("read throughput at P99 <= %d ms (reads/s)" % bound,
            best_rate(c.get("read_sweep", []), bound), best_rate(r.get("read_sweep", []), bound), "%.0f")
    for k, label in [("p99_ms", "P99"), ("p999_ms", "P99.9")]:
        row("mixed: read %s (ms)" % label, get(c, "mixed", "reads", k), get(r, "mixed", "reads", k))
        row("mixed: write %s (ms)" % label, get(c, "mixed", "writes", k), get(r, "mixed", "writes", k))
    row("write max throughput (writes/s)", get(c, "write_max", "writes", "throughput"),
        get(r, "write_max", "writes", "throughput"), "%.0f")
    row("stall time, mixed phase (% of wall)", get(c, "mixed", "stalls", "percent_of_wall"),
        get(r, "mixed", "stalls", "percent_of_wall"), "%.3f")
    row("peak RSS (MiB)", (c.get("peak_rss_bytes") or 0) / 1048576 or None,
        (r.get("peak_rss_bytes") or 0) / 1048576 or None, "%.0f")
    row("disk after preload (MiB)", (c.get("disk_bytes_after_load") or 0) / 1048576 or None,
        (r.get("disk_bytes_after_load") or 0) / 1048576 or None, "%.1f")
    row("start to first successful query (s)", c.get("ready_seconds"), r.get("ready_seconds"))
    row("preload (rows/s)", get(c, "preload", "rows_per_second"), get(r, "preload", "rows_per_second"), "%.0f")
    w("")
    for img in images:
        w("![%s](%s)" % (os.path.basename(img), os.path.basename(img)))
        w("")
    for name, s in sysd.items():
        w("## %s" % s["label"])
        w("Latencies in ms, throughput in operations/s.")
        w("")
        w("| phase | op | throughput | mean | P50 | P99 | P99.9 | max | errors | server CPU (cores) | client CPU (cores) | stalls (% wall) |")
        w("|---|---|---|---|---|---|---|---|---|---|---|---|")
        phases = [("mixed", s.get("mixed"))] + \
            [("read %d/s" % x["target_rate"], x) for x in s.get("read_sweep", [])] + \
            [("write max", s.get("write_max"))]
        for phase, res in phases:
            if not res:
                continue
            for kind in ("reads", "writes"):
                ops = res.get(kind)
                if ops and ops.get("count"):
                    w("| %s | %s %s %.2f | %.2f | %.3f |" % (
                        phase, kind, fmt_ops(ops), res["server_cpu_cores"],
                        res["client_cpu_cores"], res["stalls"]["percent_of_wall"]))
        w("")
        st = s.get("mixed", {}).get("stalls", {})
        w("- Stalls measured as: %s. %s" % (st.get("kind", "-"), (
            "Longest GC pause in the mixed phase: %.1f ms." % (1000 * st["longest_s"])
            if "longest_s" in st else
            "Longest event-loop pause since start: %s ms." % (
                "%.1f" % (1000 * st["event_loop_lag_max_s"]) if st.get("event_loop_lag_max_s") is not None else "n/a"))))
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
    if opts.notes and os.path.exists(opts.notes):
        with open(opts.notes) as f:
            w(f.read())
    with open(opts.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    shutil.copy(os.path.join(opts.work, "results.json"), os.path.join(out_dir, stem + ".json"))
    log("report:", opts.out)


def _dig(d, keys):
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["run", "report"])
    ap.add_argument("--work", required=True)
    ap.add_argument("--out")
    ap.add_argument("--notes", help="hand-written analysis appended to the report")
    ap.add_argument("--server")
    ap.add_argument("--loadgen")
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
    ap.add_argument("--only", choices=["cassandra", "rocksandra"])
    ap.add_argument("--smoke", action="store_true")
    opts = ap.parse_args()
    if opts.command == "run":
        cmd_run(opts)
    else:
        cmd_report(opts)


if __name__ == "__main__":
    main()
