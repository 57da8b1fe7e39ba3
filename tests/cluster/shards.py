"""Splits the cluster test files into N shards of about equal run time, for
scripts/test-cluster.sh: prints one line per shard, its files separated by
spaces. Every tests/cluster/test_*.py file lands in exactly one shard.

The weights are each file's seconds in a serial run on the 2-core machine
(pytest --durations=0, setup + call + teardown); a file not listed yet
counts as NEW_FILE_S. Files go, longest first, to the shard with the least
time so far.

    python3 tests/cluster/shards.py 2
"""

import glob
import os
import sys

FILE_S = {
    "test_streaming.py": 147,
    "test_cluster.py": 76,
    "test_auth_cluster.py": 53,
    "test_vector_search.py": 37,
    "test_scylla_cluster.py": 20,
    "test_internode_tls_membership.py": 20,
    "test_secondary_index.py": 16,
    "test_internode_tls_refusals.py": 16,
    "test_metrics_cluster.py": 13,
    "test_disk_full.py": 13,
    "test_auth_cache.py": 12,
    "test_internode_tls.py": 11,
    "test_broadcast_address.py": 9,
    "test_read_thresholds.py": 9,
    "test_tombstones.py": 9,
    "test_nodetool.py": 8,
    "test_udf_cluster.py": 7,
    "test_disk_usage.py": 6,
    "test_import.py": 6,
}
NEW_FILE_S = 30


def weight(path):
    return FILE_S.get(os.path.basename(path), NEW_FILE_S)


def shards(paths, count):
    """`count` lists of paths, balanced by FILE_S, each in its files' name order."""
    loads = [0] * count
    out = [[] for _ in range(count)]
    for path in sorted(paths, key=lambda p: (-weight(p), p)):
        lightest = loads.index(min(loads))
        out[lightest].append(path)
        loads[lightest] += weight(path)
    return [sorted(s) for s in out]


def main(argv):
    if len(argv) != 2 or not argv[1].isdigit() or int(argv[1]) < 1:
        sys.exit("usage: shards.py COUNT (a positive number of shards)")
    here = os.path.relpath(os.path.dirname(os.path.abspath(__file__)))
    paths = glob.glob(os.path.join(here, "test_*.py"))
    count = int(argv[1])
    if count > len(paths):
        sys.exit("%d shards for %d test files" % (count, len(paths)))
    result = shards(paths, count)
    assert sorted(p for s in result for p in s) == sorted(paths), "a file lost or doubled"
    for s in result:
        print(" ".join(s))


if __name__ == "__main__":
    main(sys.argv)
