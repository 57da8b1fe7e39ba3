"""Cassandra 5.0's guardrails through the Python driver: two servers whose
yamls set thresholds and flags, an ordinary role `app` that meets them
(failures as InvalidRequest, warnings in the response's warnings list) and
the superuser, who is exempt. Every expected text below is what Apache
Cassandra 5.0.6 answered to the same statements with the same yaml
(scripts/cassandra/start.sh --auth with these lines as --yaml); only the
warnings that name a guardrail are compared (Cassandra adds others, such as
its repair advice on ALTER KEYSPACE, that are not guardrails)."""

import contextlib
import os

import pytest
from cassandra import InvalidRequest
from cassandra.query import BatchStatement, SimpleStatement

from test_auth import connect, run_server
from test_durability import PORT

GUARDRAILS_PORT = int(os.environ.get("ROCKSANDRA_GUARDRAILS_PORT", str(PORT + 6)))

GUARDRAILS_YAML = """\
authorizer: CassandraAuthorizer
keyspaces_warn_threshold: 1
keyspaces_fail_threshold: 2
tables_warn_threshold: 2
tables_fail_threshold: 3
columns_per_table_warn_threshold: 3
columns_per_table_fail_threshold: 4
secondary_indexes_per_table_warn_threshold: 1
secondary_indexes_per_table_fail_threshold: 2
materialized_views_per_table_warn_threshold: 1
materialized_views_per_table_fail_threshold: 2
fields_per_udt_warn_threshold: 2
fields_per_udt_fail_threshold: 3
page_size_warn_threshold: 100
page_size_fail_threshold: 5000
partition_keys_in_select_warn_threshold: 2
partition_keys_in_select_fail_threshold: 3
minimum_replication_factor_warn_threshold: 2
minimum_replication_factor_fail_threshold: 1
maximum_replication_factor_warn_threshold: 2
maximum_replication_factor_fail_threshold: 3
user_timestamps_enabled: false
group_by_enabled: false
drop_truncate_table_enabled: false
drop_keyspace_enabled: false
compact_tables_enabled: false
alter_table_enabled: false
allow_filtering_enabled: false
simplestrategy_enabled: false
materialized_views_enabled: true
"""

# (who, statement, fetch size or None for the driver's 5000, the error's
# message or None, the guardrail warnings), in order: later statements
# count what earlier ones created.
CASES = [
    ('su', "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 1}", None, None, []),
    ('su', 'CREATE TABLE ks.t (k int, c int, v int, w int, PRIMARY KEY (k, c))', None, None, []),
    ('su', "CREATE ROLE app WITH PASSWORD = 'app' AND LOGIN = true", None, None, []),
    ('su', 'GRANT ALL PERMISSIONS ON ALL KEYSPACES TO app', None, None, []),
    ('su', 'INSERT INTO ks.t (k, c, v, w) VALUES (1, 1, 1, 1)', None, None, []),
    ('app', "CREATE KEYSPACE ks2 WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 1}", None, None, ['Guardrail keyspaces violated: Creating keyspace ks2, current number of keyspaces 2 exceeds warning threshold of 1.', 'Guardrail minimum_replication_factor violated: The keyspace ks2 has a replication factor of 1, below the warning threshold of 2.']),
    ('app', "CREATE KEYSPACE ks3 WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 1}", None, 'Guardrail keyspaces violated: Cannot have more than 2 keyspaces, aborting the creation of keyspace ks3', []),
    ('app', "CREATE KEYSPACE IF NOT EXISTS ks2 WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 1}", None, 'Guardrail keyspaces violated: Cannot have more than 2 keyspaces, aborting the creation of keyspace ks2', []),
    ('app', "ALTER KEYSPACE ks2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", None, 'Guardrail simplestrategy violated: SimpleStrategy is not allowed', []),
    ('app', "ALTER KEYSPACE ks2 WITH replication = {'class': 'org.apache.cassandra.locator.SimpleStrategy', 'replication_factor': 1}", None, None, ['Guardrail minimum_replication_factor violated: The keyspace ks2 has a replication factor of 1, below the warning threshold of 2.']),
    ('app', "ALTER KEYSPACE ks2 WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 3}", None, None, ['Guardrail maximum_replication_factor violated: The keyspace ks2 has a replication factor of 3, above the warning threshold of 2.']),
    ('app', "ALTER KEYSPACE ks2 WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 4}", None, 'Guardrail maximum_replication_factor violated: The keyspace ks2 has a replication factor of 4, above the failure threshold of 3.', []),
    ('app', "ALTER KEYSPACE ks2 WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 1}", None, None, ['Guardrail minimum_replication_factor violated: The keyspace ks2 has a replication factor of 1, below the warning threshold of 2.']),
    ('app', 'CREATE TABLE ks2.wide (k int PRIMARY KEY, a int, b int, c int)', None, None, ['Guardrail columns_per_table violated: The table wide has 4 columns, this exceeds the warning threshold of 3.']),
    ('app', 'CREATE TABLE ks2.cs (k int PRIMARY KEY, v int) WITH COMPACT STORAGE', None, 'Guardrail compact_tables violated: Creation of new COMPACT STORAGE tables is not allowed', []),
    ('app', 'CREATE TABLE ks2.b (k int PRIMARY KEY, v int)', None, None, ['Guardrail tables violated: Creating table b, current number of tables 3 exceeds warning threshold of 2.']),
    ('app', 'CREATE TABLE ks2.toowide (k int PRIMARY KEY, a int, b int, c int, d int)', None, 'Guardrail columns_per_table violated: Tables cannot have more than 4 columns, but 5 provided for table toowide', []),
    ('app', 'CREATE TABLE ks2.c (k int PRIMARY KEY)', None, 'Guardrail tables violated: Cannot have more than 3 tables, aborting the creation of table c', []),
    ('app', 'CREATE TABLE IF NOT EXISTS ks2.b (k int PRIMARY KEY, v int)', None, 'Guardrail tables violated: Cannot have more than 3 tables, aborting the creation of table b', []),
    ('app', 'ALTER TABLE ks2.b ADD x int', None, 'Guardrail alter_table violated: ALTER TABLE changing columns is not allowed', []),
    ('app', "ALTER TABLE ks2.b WITH comment = 'x'", None, None, []),
    ('app', 'CREATE TYPE ks2.u2 (a int, b int)', None, None, []),
    ('app', 'CREATE TYPE ks2.u3 (a int, b int, c int)', None, None, ['Guardrail fields_per_udt violated: The user type u3 has 3 columns, this exceeds the warning threshold of 2.']),
    ('app', 'CREATE TYPE ks2.u4 (a int, b int, c int, d int)', None, 'Guardrail fields_per_udt violated: User types cannot have more than 3 columns, but 4 provided for user type u4.', []),
    ('app', 'ALTER TYPE ks2.u3 ADD d int', None, 'Guardrail fields_per_udt violated: User types cannot have more than 3 columns, but 4 provided for user type u3.', []),
    ('app', 'ALTER TYPE ks2.u2 ADD c int', None, None, ['Guardrail fields_per_udt violated: The user type u2 has 3 columns, this exceeds the warning threshold of 2.']),
    ('app', 'CREATE INDEX i1 ON ks.t (v)', None, None, []),
    ('app', 'CREATE INDEX ON ks.t (w)', None, None, ['Guardrail secondary_indexes_per_table violated: Creating secondary index on table t, current number of indexes 2 exceeds warning threshold of 1.']),
    ('app', 'CREATE INDEX i3 ON ks.t (c)', None, 'Guardrail secondary_indexes_per_table violated: Tables cannot have more than 2 secondary indexes, aborting the creation of secondary index i3 on table t', []),
    ('app', 'CREATE MATERIALIZED VIEW ks.mv1 AS SELECT k, c FROM ks.t WHERE k IS NOT NULL AND c IS NOT NULL PRIMARY KEY (c, k)', None, None, []),
    ('app', 'CREATE MATERIALIZED VIEW ks.mv2 AS SELECT k, c FROM ks.t WHERE k IS NOT NULL AND c IS NOT NULL PRIMARY KEY (c, k)', None, None, ['Guardrail materialized_views_per_table violated: Creating materialized view mv2 on table t, current number of views 2 exceeds warning threshold of 1.']),
    ('app', 'CREATE MATERIALIZED VIEW ks.mv3 AS SELECT k, c FROM ks.t WHERE k IS NOT NULL AND c IS NOT NULL PRIMARY KEY (c, k)', None, 'Guardrail materialized_views_per_table violated: Tables cannot have more than 2 materialized views, aborting the creation of materialized view mv3 on table t', []),
    ('app', 'INSERT INTO ks.t (k, c, v) VALUES (1, 1, 1) USING TIMESTAMP 10', None, 'Guardrail user_timestamps violated: User provided timestamps (USING TIMESTAMP) is not allowed', []),
    ('app', 'UPDATE ks.t USING TIMESTAMP 10 SET v = 1 WHERE k = 1 AND c = 1', None, 'Guardrail user_timestamps violated: User provided timestamps (USING TIMESTAMP) is not allowed', []),
    ('app', 'DELETE FROM ks.t USING TIMESTAMP 10 WHERE k = 1 AND c = 1', None, 'Guardrail user_timestamps violated: User provided timestamps (USING TIMESTAMP) is not allowed', []),
    ('app', 'BEGIN BATCH USING TIMESTAMP 10 INSERT INTO ks.t (k, c, v) VALUES (1, 1, 1); APPLY BATCH', None, None, []),
    ('app', 'INSERT INTO ks.t (k, c, v) VALUES (1, 1, 1) USING TTL 100', None, None, []),
    ('app', 'SELECT * FROM ks.t WHERE k = 1', None, None, ['Guardrail page_size violated: Query for table t with page size 5000 exceeds warning threshold of 100.']),
    ('app', 'SELECT * FROM ks.t WHERE k = 1', 6000, 'Guardrail page_size violated: Aborting query for table t, page size 6000 exceeds fail threshold of 5000.', []),
    ('app', 'SELECT * FROM ks.t WHERE k = 1 LIMIT 10', None, None, []),
    ('app', 'SELECT * FROM ks.t WHERE k = 1 AND c = 1', None, None, ['Guardrail page_size violated: Query for table t with page size 5000 exceeds warning threshold of 100.']),
    ('app', 'SELECT * FROM ks.t WHERE k = 1', 50, None, []),
    ('app', 'SELECT * FROM ks.t WHERE k IN (1, 2, 3)', 50, None, ['Guardrail partition_keys_in_select violated: Query with partition keys in IN clause on table t, with number of partition keys 3 exceeds warning threshold of 2.']),
    ('app', 'SELECT * FROM ks.t WHERE k IN (1, 2, 3, 4)', 50, 'Guardrail partition_keys_in_select violated: Aborting query with partition keys in IN clause on table t, number of partition keys 4 exceeds fail threshold of 3.', []),
    ('app', 'SELECT * FROM ks.t WHERE k IN (1, 2, 3, 4) LIMIT 5', 50, 'Guardrail partition_keys_in_select violated: Aborting query with partition keys in IN clause on table t, number of partition keys 4 exceeds fail threshold of 3.', []),
    ('app', 'SELECT * FROM ks.t WHERE v = 1 ALLOW FILTERING', 50, 'Guardrail allow_filtering violated: Querying with ALLOW FILTERING is not allowed. ALLOW FILTERING can potentially visit all the data in the table and have unpredictable performance.', []),
    ('app', 'SELECT * FROM ks.t WHERE k = 1 ALLOW FILTERING', 50, 'Guardrail allow_filtering violated: Querying with ALLOW FILTERING is not allowed. ALLOW FILTERING can potentially visit all the data in the table and have unpredictable performance.', []),
    ('app', 'SELECT * FROM ks2.b WHERE v = 1', 50, 'Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. Executing this query despite the performance unpredictability with ALLOW FILTERING has been disabled by the allow_filtering_enabled property in cassandra.yaml', []),
    ('app', 'SELECT k, count(*) FROM ks.t WHERE k = 1 GROUP BY k', 50, 'Guardrail group_by violated: GROUP BY functionality is not allowed', []),
    ('app', 'SELECT count(*) FROM ks.t WHERE k = 1', None, None, ['Guardrail page_size violated: Query for table t with page size 5000 exceeds warning threshold of 100.']),
    ('app', 'SELECT * FROM system_schema.keyspaces WHERE durable_writes = true ALLOW FILTERING', 50, None, []),
    ('app', 'SELECT * FROM system.local', 6000, 'Guardrail page_size violated: Aborting query for table local, page size 6000 exceeds fail threshold of 5000.', []),
    ('app', 'TRUNCATE ks.t', None, 'Guardrail drop_truncate_table_enabled violated: DROP and TRUNCATE TABLE functionality is not allowed', []),
    ('app', 'DROP TABLE ks2.b', None, 'Guardrail drop_truncate_table_enabled violated: DROP and TRUNCATE TABLE functionality is not allowed', []),
    ('app', 'DROP TABLE IF EXISTS ks2.nonexistent', None, 'Guardrail drop_truncate_table_enabled violated: DROP and TRUNCATE TABLE functionality is not allowed', []),
    ('app', 'DROP MATERIALIZED VIEW ks.mv2', None, None, []),
    ('app', 'DROP INDEX ks.i1', None, None, []),
    ('app', 'DROP KEYSPACE ks2', None, 'Guardrail drop_keyspace_enabled violated: DROP KEYSPACE functionality is not allowed', []),
    ('app', 'DROP KEYSPACE IF EXISTS nonexistent', None, 'Guardrail drop_keyspace_enabled violated: DROP KEYSPACE functionality is not allowed', []),
    ('su', 'CREATE TABLE ks2.super1 (k int PRIMARY KEY, a int, b int, c int, d int)', None, None, []),
    ('su', 'SELECT * FROM ks.t WHERE k IN (1, 2, 3, 4) ALLOW FILTERING', 6000, None, []),
    ('su', 'TRUNCATE ks.t', None, None, []),
]


# A second server, with these flags (and a keyspaces threshold): the order
# of a guardrail against the statement's other checks.
FLAGS_YAML = """\
authorizer: CassandraAuthorizer
user_timestamps_enabled: false
drop_truncate_table_enabled: false
simplestrategy_enabled: false
keyspaces_warn_threshold: 1
alter_table_enabled: false
group_by_enabled: false
"""

# As CASES; "BATCH MESSAGE <statement>" sends the statement in a BATCH
# message of the protocol.
FLAG_CASES = [
    ('su', "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 1}", None, None, []),
    ('su', 'CREATE TABLE ks.t (k int, c int, v int, w int, PRIMARY KEY (k, c))', None, None, []),
    ('su', "CREATE ROLE app WITH PASSWORD = 'app' AND LOGIN = true", None, None, []),
    ('su', 'GRANT ALL PERMISSIONS ON ALL KEYSPACES TO app', None, None, []),
    ('app', 'BEGIN BATCH INSERT INTO ks.t (k, c, v) VALUES (1, 1, 1) USING TIMESTAMP 5; APPLY BATCH', None, 'Guardrail user_timestamps violated: User provided timestamps (USING TIMESTAMP) is not allowed', []),
    ('app', 'BEGIN UNLOGGED BATCH INSERT INTO ks.t (k, c, v) VALUES (1, 1, 1) USING TIMESTAMP 5; INSERT INTO ks.t (k, c, v) VALUES (1, 2, 1); APPLY BATCH', None, 'Guardrail user_timestamps violated: User provided timestamps (USING TIMESTAMP) is not allowed', []),
    ('app', 'BATCH MESSAGE INSERT INTO ks.t (k, c, v) VALUES (2, 1, 1) USING TIMESTAMP 5', None, 'Guardrail user_timestamps violated: User provided timestamps (USING TIMESTAMP) is not allowed', []),
    ('app', 'TRUNCATE ks.nonexistent', None, 'table nonexistent does not exist', []),
    ('app', "CREATE KEYSPACE ks2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", None, 'Guardrail simplestrategy violated: SimpleStrategy is not allowed', []),
    ('app', "CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", None, 'Guardrail simplestrategy violated: SimpleStrategy is not allowed', []),
    ('app', 'INSERT INTO ks.t JSON \'{"k": 1, "c": 1, "v": 1}\' USING TIMESTAMP 5', None, 'Guardrail user_timestamps violated: User provided timestamps (USING TIMESTAMP) is not allowed', []),
    ('app', 'UPDATE ks.t USING TTL 10 AND TIMESTAMP 5 SET v = 1 WHERE k = 1 AND c = 1', None, 'Guardrail user_timestamps violated: User provided timestamps (USING TIMESTAMP) is not allowed', []),
    ('app', 'INSERT INTO ks.t (k, c, v) VALUES (1, 1, 1) IF NOT EXISTS USING TIMESTAMP 5', None, 'Cannot provide custom timestamp for conditional updates', []),
    ('app', 'ALTER TABLE ks.t ADD x int', None, 'Guardrail alter_table violated: ALTER TABLE changing columns is not allowed', []),
    ('app', 'ALTER TABLE ks.t DROP w', None, 'Guardrail alter_table violated: ALTER TABLE changing columns is not allowed', []),
    ('app', 'ALTER TABLE ks.t RENAME c TO cc', None, 'Guardrail alter_table violated: ALTER TABLE changing columns is not allowed', []),
    ('app', 'ALTER TABLE ks.nonexistent ADD x int', None, "Table 'ks.nonexistent' doesn't exist", []),
    ('app', "ALTER TABLE ks.t WITH comment = 'x'", None, None, []),
    ('app', 'SELECT k, count(*) FROM ks.t WHERE k = 1 GROUP BY k', None, 'Guardrail group_by violated: GROUP BY functionality is not allowed', []),
    ('app', 'DROP TABLE ks.t', None, 'Guardrail drop_truncate_table_enabled violated: DROP and TRUNCATE TABLE functionality is not allowed', []),
    ('su', 'INSERT INTO ks.t (k, c, v) VALUES (1, 1, 1) USING TIMESTAMP 5', None, None, []),
    ('su', 'ALTER TABLE ks.t DROP w', None, None, []),
    ('su', 'SELECT k, count(*) FROM ks.t WHERE k = 1 GROUP BY k', None, None, []),
]



def run(session, cql, fetch_size):
    """The error's message (None on success) and the guardrail warnings."""
    if cql.startswith("BATCH MESSAGE "):
        statement = BatchStatement()
        statement.add(SimpleStatement(cql[len("BATCH MESSAGE "):]))
    elif fetch_size:
        statement = SimpleStatement(cql, fetch_size=fetch_size)
    else:
        statement = SimpleStatement(cql)
    future = session.execute_async(statement)
    try:
        future.result()
    except InvalidRequest as e:
        return error_message(str(e)), []
    return None, [w for w in (future.warnings or []) if w.startswith("Guardrail ")]


def error_message(text):
    # The driver's 'Error from server: code=2200 [Invalid query] message="..."'.
    marker = 'message="'
    return text[text.index(marker) + len(marker):-1] if marker in text else text


@pytest.mark.parametrize("yaml, cases", [(GUARDRAILS_YAML, CASES), (FLAGS_YAML, FLAG_CASES)],
                         ids=["thresholds", "flags"])
def test_guardrails_answer_as_cassandra(yaml, cases):
    with contextlib.contextmanager(run_server)(GUARDRAILS_PORT, yaml):
        replay(cases)


def replay(cases):
    clusters = []
    sessions = {}
    try:
        for who, cql, fetch_size, error, warnings in cases:
            if who not in sessions:
                user, password = ("cassandra", "cassandra") if who == "su" else ("app", "app")
                cluster, sessions[who] = connect(user, password, port=GUARDRAILS_PORT)
                clusters.append(cluster)
            assert run(sessions[who], cql, fetch_size) == (error, warnings), "%s: %s" % (who, cql)
    finally:
        for cluster in clusters:
            cluster.shutdown()
