#!/usr/bin/env python3
"""ANN query latency on a node alone: the HNSW graph (a query without
WHERE clause) against the exact scan (a token restriction covering the
ring makes the same query rank by scan), and the graph's recall@10
against the scan's answers. Against a server on 127.0.0.1:9042:

    .venv/bin/python bench/ann.py ROWS DIMENSION QUERIES   (the test venv: cassandra-driver)
"""
import random, statistics, sys, time
from cassandra.cluster import Cluster
from cassandra.concurrent import execute_concurrent_with_args

N, DIM, QUERIES = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(7)
c = Cluster(["127.0.0.1"], port=9042); s = c.connect(); s.default_timeout = 300
s.execute("CREATE KEYSPACE IF NOT EXISTS annb WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
s.execute(f"CREATE TABLE IF NOT EXISTS annb.t (k int PRIMARY KEY, v vector<float, {DIM}>)")
s.execute("CREATE INDEX IF NOT EXISTS ON annb.t (v) USING 'sai'")
ins = s.prepare("INSERT INTO annb.t (k, v) VALUES (?, ?)")
t0 = time.time()
execute_concurrent_with_args(s, ins, [(k, [rng.uniform(-1, 1) for _ in range(DIM)]) for k in range(N)], concurrency=64)
print(f"loaded {N} vectors of {DIM} in {time.time()-t0:.1f} s")
graph = s.prepare("SELECT k FROM annb.t ORDER BY v ANN OF ? LIMIT 10")
scan = s.prepare("SELECT k FROM annb.t WHERE token(k) > -9223372036854775808 ORDER BY v ANN OF ? LIMIT 10")
queries = [[rng.uniform(-1, 1) for _ in range(DIM)] for _ in range(QUERIES)]
t0 = time.time(); list(s.execute(graph, [queries[0]])); print(f"first ANN query (ranked by scan; starts the graph's build): {time.time()-t0:.2f} s")
# The build runs in the background: wait until the graph answers (a query
# without WHERE clause then takes a few ms instead of a scan's tens).
while True:
    t = time.perf_counter(); list(s.execute(graph, [queries[0]])); took = time.perf_counter() - t
    if took < 0.010 or time.time() - t0 > 300:
        break
    time.sleep(0.5)
print(f"graph ready {time.time()-t0:.1f} s after the first query")
def run(stmt):
    lat, answers = [], []
    for q in queries:
        t = time.perf_counter(); rows = list(s.execute(stmt, [q])); lat.append((time.perf_counter() - t) * 1000)
        answers.append([r.k for r in rows])
    return lat, answers
glat, ga = run(graph); slat, sa = run(scan)
recall = statistics.mean(len(set(a) & set(b)) / 10 for a, b in zip(ga, sa))
for name, lat in (("graph", glat), ("scan", slat)):
    lat.sort(); print(f"{name}: median {statistics.median(lat):.2f} ms, p90 {lat[int(len(lat)*0.9)]:.2f} ms over {len(lat)} queries")
print(f"recall@10 of the graph against the exact scan: {recall:.3f}")
