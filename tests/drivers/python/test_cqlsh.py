"""cqlsh (PyPI, 6.2) run non-interactively (-e and -f) against the server under
test: DESCRIBE, simple queries, COPY TO / COPY FROM round trip."""

import csv
import os
import shutil
import subprocess
import sys
import uuid

import pytest

from conftest import HOST, PORT, make_cluster

CQLSH = shutil.which("cqlsh", path=os.path.dirname(sys.executable)) or shutil.which("cqlsh")


def cqlsh(*args, input_file=None, check=True, timeout=120):
    assert CQLSH, "cqlsh not installed (scripts/test-env.sh)"
    cmd = [CQLSH, HOST, str(PORT), "--no-color", "--request-timeout=60", "--connect-timeout=20"]
    if input_file:
        cmd += ["-f", input_file]
    cmd += list(args)
    env = dict(os.environ, CQLSH_NO_BUNDLED="TRUE", HOME=os.environ.get("HOME", "/tmp"))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if check and proc.returncode != 0:
        raise AssertionError("cqlsh %s failed (%d):\nstdout: %s\nstderr: %s"
                             % (args, proc.returncode, proc.stdout, proc.stderr))
    return proc


@pytest.fixture(scope="module")
def ks():
    name = "cqlsh_" + uuid.uuid4().hex[:10]
    cluster = make_cluster(4)
    s = cluster.connect()
    s.execute("CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}" % name)
    s.execute("CREATE TYPE %s.addr (street text, zip int)" % name)
    s.execute("""CREATE TABLE %s.data (k int, c text, v double, tags set<text>, m map<text, int>,
                 a frozen<addr>, ts timestamp, u uuid, PRIMARY KEY (k, c))""" % name)
    ins = s.prepare("INSERT INTO %s.data (k, c, v, tags, m, a, ts, u) VALUES (?, ?, ?, ?, ?, {street: 'x', zip: 1}, '2024-01-02 03:04:05+0000', ?)" % name)
    for k in range(50):
        for c in ("a", "b, with comma", "c \"quoted\""):
            s.execute(ins, (k, c, k / 4.0, {"t%d" % (k % 3), "all"}, {"n": k}, uuid.UUID(int=k)))
    yield name
    s.execute("DROP KEYSPACE IF EXISTS %s" % name)
    cluster.shutdown()


def test_version_and_simple_query(ks):
    out = cqlsh("-e", "SELECT k, c, v FROM %s.data WHERE k = 1;" % ks).stdout
    assert "b, with comma" in out
    assert "(3 rows)" in out
    out = cqlsh("-e", "SELECT count(*) FROM %s.data;" % ks).stdout
    assert "150" in out


def test_show_version(ks):
    out = cqlsh("-e", "SHOW VERSION;").stdout
    assert "CQL spec" in out and "Native protocol" in out


def test_describe_keyspaces(ks):
    out = cqlsh("-e", "DESCRIBE KEYSPACES;").stdout
    for name in (ks, "system", "system_schema"):
        assert name in out.split(), out


def test_describe_keyspace_and_table(ks):
    out = cqlsh("-e", "DESCRIBE KEYSPACE %s;" % ks).stdout
    assert "CREATE KEYSPACE %s WITH replication" % ks in out
    assert "CREATE TYPE %s.addr" % ks in out
    assert "CREATE TABLE %s.data" % ks in out
    out = cqlsh("-e", "DESCRIBE TABLE %s.data;" % ks).stdout
    assert "PRIMARY KEY (k, c)" in out
    assert "a frozen<addr>" in out
    assert "CLUSTERING ORDER BY (c ASC)" in out


def test_describe_schema(ks):
    out = cqlsh("-e", "DESCRIBE SCHEMA;").stdout
    assert "CREATE KEYSPACE %s" % ks in out
    assert "CREATE TABLE %s.data" % ks in out


def test_describe_unknown_table_fails(ks):
    proc = cqlsh("-e", "DESCRIBE TABLE %s.nope;" % ks, check=False)
    assert proc.returncode != 0
    assert "nope" in proc.stderr


def test_syntax_error_reported(ks):
    proc = cqlsh("-e", "SELEC 1;", check=False)
    assert proc.returncode != 0
    assert "SyntaxException" in proc.stderr


def test_file_with_statements(ks, tmp_path):
    script = tmp_path / "script.cql"
    script.write_text(
        "USE %s;\n"
        "CREATE TABLE f (k int PRIMARY KEY, v text);\n"
        "INSERT INTO f (k, v) VALUES (1, 'one');\n"
        "INSERT INTO f (k, v) VALUES (2, 'two; with semicolon');\n"
        "SELECT * FROM f WHERE k = 2;\n"
        "DROP TABLE f;\n" % ks)
    out = cqlsh(input_file=str(script)).stdout
    assert "two; with semicolon" in out
    assert "(1 rows)" in out


def _read_csv(path):
    with open(path, newline="") as f:
        return sorted(tuple(r) for r in csv.reader(f))


def test_copy_round_trip(ks, tmp_path):
    out_file = tmp_path / "data.csv"
    cols = "k, c, v, tags, m, a, ts, u"
    proc = cqlsh("-e", "COPY %s.data (%s) TO '%s' WITH HEADER = false;" % (ks, cols, out_file))
    assert "150 rows exported" in proc.stdout, proc.stdout
    exported = _read_csv(out_file)
    assert len(exported) == 150

    cqlsh("-e", "CREATE TABLE %s.copy (k int, c text, v double, tags set<text>, m map<text, int>, "
                "a frozen<addr>, ts timestamp, u uuid, PRIMARY KEY (k, c));" % ks)
    proc = cqlsh("-e", "COPY %s.copy (%s) FROM '%s' WITH HEADER = false;" % (ks, cols, out_file))
    assert "150 rows imported" in proc.stdout, proc.stdout

    back = tmp_path / "back.csv"
    cqlsh("-e", "COPY %s.copy (%s) TO '%s' WITH HEADER = false;" % (ks, cols, back))
    assert _read_csv(back) == exported

    # and the data, compared through the driver
    cluster = make_cluster(4)
    try:
        s = cluster.connect(ks)
        a = sorted(tuple(r) for r in s.execute("SELECT k, c, v, tags, ts, u FROM data"))
        b = sorted(tuple(r) for r in s.execute("SELECT k, c, v, tags, ts, u FROM copy"))
        assert a == b and len(a) == 150
    finally:
        cluster.shutdown()
