"""User-defined functions and aggregates through the Python driver, on a
server with `user_defined_functions_enabled: true`: the driver's schema
metadata (read from system_schema.functions and .aggregates after the
SCHEMA_CHANGE events with FUNCTION and AGGREGATE targets), calls and
aggregation, and all of it again after a restart (schema.json)."""

import signal
import tempfile

from test_durability import Node


def test_functions_and_aggregates_survive_restart_and_drivers_see_them():
    with tempfile.TemporaryDirectory() as d:
        n = Node(d, extra_yaml="user_defined_functions_enabled: true\n")
        try:
            n.start()
            cluster, session = n.session()
            session.execute("CREATE KEYSPACE ks WITH replication = "
                            "{'class': 'SimpleStrategy', 'replication_factor': 1}")
            session.execute("CREATE TABLE ks.t (k int, c int, v int, PRIMARY KEY (k, c))")
            session.execute(
                "CREATE FUNCTION ks.acc (state int, val int) CALLED ON NULL INPUT RETURNS int "
                "LANGUAGE java AS 'if (val == null) return state; return state + val;'")
            session.execute(
                "CREATE FUNCTION ks.label (state int) RETURNS NULL ON NULL INPUT RETURNS text "
                "LANGUAGE java AS 'return \"sum \" + state;'")
            session.execute("CREATE AGGREGATE ks.total (int) SFUNC acc STYPE int "
                            "FINALFUNC label INITCOND 0")
            insert = session.prepare("INSERT INTO ks.t (k, c, v) VALUES (?, ?, ?)")
            for c in range(10):
                session.execute(insert, (1, c, c))
            cluster.refresh_schema_metadata()
            keyspace = cluster.metadata.keyspaces["ks"]
            assert sorted(keyspace.functions) == ["acc(int,int)", "label(int)"]
            acc = keyspace.functions["acc(int,int)"]
            assert acc.argument_names == ["state", "val"]
            assert acc.return_type == "int" and acc.called_on_null_input
            total = keyspace.aggregates["total(int)"]
            assert (total.state_func, total.final_func, total.initial_condition) == ("acc", "label", "0")
            assert "CREATE AGGREGATE ks.total(int)" in keyspace.export_as_string()
            assert session.execute("SELECT ks.total(v) FROM ks.t WHERE k = 1").one()[0] == "sum 45"
            cluster.shutdown()
            assert n.stop(signal.SIGTERM) == 0

            n.start()
            cluster, session = n.session()
            assert session.execute("SELECT total(v) FROM ks.t WHERE k = 1").one()[0] == "sum 45"
            session.execute("DROP AGGREGATE ks.total")
            session.execute("DROP FUNCTION ks.label")
            cluster.refresh_schema_metadata()
            assert sorted(cluster.metadata.keyspaces["ks"].functions) == ["acc(int,int)"]
            assert not cluster.metadata.keyspaces["ks"].aggregates
            cluster.shutdown()
        finally:
            if n.proc and n.proc.poll() is None:
                n.proc.kill()
                n.proc.wait()
