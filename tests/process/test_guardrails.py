"""Cassandra 5.0's guardrails through the Python driver: five servers whose
yamls set thresholds and flags, an ordinary role `app` that meets them
(failures as InvalidRequest, warnings in the response's warnings list) and
the superuser, who is exempt. Every expected text below is what Apache
Cassandra 5.0.6 answered to the same statements with the same yaml
(scripts/cassandra/start.sh --auth with these lines as --yaml); only the
warnings that name a guardrail are compared (Cassandra adds others, such as
its repair advice on ALTER KEYSPACE, that are not guardrails)."""

import contextlib
import os
import re
import subprocess
import time

import pytest
from cassandra import ConsistencyLevel, InvalidRequest
from cassandra.query import BatchStatement, SimpleStatement

from test_auth import connect, run_server
from test_durability import BIN, PORT

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


# A third server: the guardrails on written values, consistency levels, IN
# products, vector dimensions, list operations, table options (the zero TTL
# one warns by default) and USING TIMESTAMP bounds. "CL=<level> " and "SERIAL=<level> " before
# a statement set its consistency and serial consistency (the driver's
# defaults otherwise: LOCAL_ONE, and no serial consistency, which Cassandra
# takes as SERIAL); "{now+2h}" is now plus two hours, in microseconds. The
# timestamps and bounds in the maximum_timestamp and minimum_timestamp
# messages depend on the clock and are compared without their digits
# (Cassandra's bound is its last generated timestamp plus the offset, ours
# now plus the offset).
VALUES_YAML = """\
authorizer: CassandraAuthorizer
column_value_size_warn_threshold: 10B
column_value_size_fail_threshold: 40B
collection_size_warn_threshold: 50B
collection_size_fail_threshold: 100B
items_per_collection_warn_threshold: 2
items_per_collection_fail_threshold: 4
in_select_cartesian_product_warn_threshold: 4
in_select_cartesian_product_fail_threshold: 9
vector_dimensions_warn_threshold: 3
vector_dimensions_fail_threshold: 5
read_consistency_levels_warned: [ONE]
read_consistency_levels_disallowed: [ALL, TWO]
write_consistency_levels_warned: [ONE]
write_consistency_levels_disallowed: [ALL, LOCAL_SERIAL]
read_before_write_list_operations_enabled: false
uncompressed_tables_enabled: false
maximum_timestamp_warn_threshold: 1h
maximum_timestamp_fail_threshold: 1d
minimum_timestamp_warn_threshold: 1h
minimum_timestamp_fail_threshold: 1d
"""

VALUE_CASES = [
    ('su', "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 1}", None, None, []),
    ('su', 'CREATE TABLE ks.c (k int, c int, v text, s set<int>, l list<int>, m map<int, int>, fs frozen<set<int>>, fl frozen<list<int>>, PRIMARY KEY (k, c))', None, None, []),
    ('su', 'CREATE TYPE ks.pt (x int, y text)', None, None, []),
    ('su', 'CREATE TABLE ks.u (k int PRIMARY KEY, p pt, fp frozen<pt>)', None, None, []),
    ('su', 'CREATE TABLE ks.ct (a int, b int, c int, d int, v int, PRIMARY KEY ((a, b), c, d))', None, None, []),
    ('su', "CREATE ROLE app WITH PASSWORD = 'app' AND LOGIN = true", None, None, []),
    ('su', 'GRANT ALL PERMISSIONS ON ALL KEYSPACES TO app', None, None, []),
    ('app', "INSERT INTO ks.c (k, c, v) VALUES (1, 1, 'abc')", None, None, []),
    ('app', "INSERT INTO ks.c (k, c, v) VALUES (1, 1, 'abcdefghijkl')", None, None, ["Guardrail column_value_size violated: Value of column 'v' has size 12, this exceeds the warning threshold of 10."]),
    ('app', "INSERT INTO ks.c (k, c, v) VALUES (1, 1, 'abcdefghijabcdefghijabcdefghijabcdefghijX')", None, "Guardrail column_value_size violated: Value of column 'v' has size 41, this exceeds the failure threshold of 40.", []),
    ('app', "UPDATE ks.c SET v = 'abcdefghijkl' WHERE k = 1 AND c IN (1, 2)", None, None, ["Guardrail column_value_size violated: Value of column 'v' has size 12, this exceeds the warning threshold of 10.", "Guardrail column_value_size violated: Value of column 'v' has size 12, this exceeds the warning threshold of 10."]),
    ('app', "UPDATE ks.c SET v = 'abcdefghijkl', s = {1, 2, 3} WHERE k = 1 AND c = 1", None, None, ["Guardrail column_value_size violated: Value of column 'v' has size 12, this exceeds the warning threshold of 10.", 'Guardrail items_per_collection violated: Detected collection s with 3 items, this exceeds the warning threshold of 2.', 'Guardrail collection_size violated: Detected collection s of size 72, this exceeds the warning threshold of 50.']),
    ('app', 'UPDATE ks.c SET s = {1, 2} WHERE k = 1 AND c = 1', None, None, []),
    ('app', 'UPDATE ks.c SET s = {} WHERE k = 1 AND c = 1', None, None, []),
    ('app', 'UPDATE ks.c SET s = s + {1, 2, 3, 4, 5} WHERE k = 1 AND c = 1', None, 'Guardrail items_per_collection violated: Detected collection s with 5 items, this exceeds the failure threshold of 4.', []),
    ('app', 'UPDATE ks.c SET s = s - {1, 2, 3, 4, 5} WHERE k = 1 AND c = 1', None, None, []),
    ('app', 'UPDATE ks.c SET l = [1] WHERE k = 1 AND c = 1', None, None, ["Guardrail column_value_size violated: Value of column 'l' has size 16, this exceeds the warning threshold of 10."]),
    ('app', 'UPDATE ks.c SET l = l + [1, 2] WHERE k = 1 AND c = 1', None, None, ["Guardrail column_value_size violated: Value of column 'l' has size 16, this exceeds the warning threshold of 10.", "Guardrail column_value_size violated: Value of column 'l' has size 16, this exceeds the warning threshold of 10.", 'Guardrail collection_size violated: Detected collection l of size 80, this exceeds the warning threshold of 50.']),
    ('app', 'UPDATE ks.c SET l = [3, 4, 5] + l WHERE k = 1 AND c = 1', None, None, ["Guardrail column_value_size violated: Value of column 'l' has size 16, this exceeds the warning threshold of 10.", "Guardrail column_value_size violated: Value of column 'l' has size 16, this exceeds the warning threshold of 10.", "Guardrail column_value_size violated: Value of column 'l' has size 16, this exceeds the warning threshold of 10."]),
    ('app', 'UPDATE ks.c SET m = {1: 1, 2: 2} WHERE k = 1 AND c = 1', None, None, ['Guardrail collection_size violated: Detected collection m of size 56, this exceeds the warning threshold of 50.']),
    ('app', 'UPDATE ks.c SET m = m + {1: 1, 2: 2, 3: 3, 4: 4, 5: 5} WHERE k = 1 AND c = 1', None, 'Guardrail items_per_collection violated: Detected collection m with 5 items, this exceeds the failure threshold of 4.', []),
    ('app', 'UPDATE ks.c SET m[5] = 5 WHERE k = 1 AND c = 1', None, None, []),
    ('app', 'UPDATE ks.c SET m = m - {1} WHERE k = 1 AND c = 1', None, None, []),
    ('app', 'DELETE m[2] FROM ks.c WHERE k = 1 AND c = 1', None, None, []),
    ('app', 'UPDATE ks.c SET fs = {1, 2, 3} WHERE k = 1 AND c = 1', None, None, ['Guardrail items_per_collection violated: Detected collection fs with 3 items, this exceeds the warning threshold of 2.', "Guardrail column_value_size violated: Value of column 'fs' has size 28, this exceeds the warning threshold of 10."]),
    ('app', 'UPDATE ks.c SET fs = {1} WHERE k = 1 AND c = 1', None, None, ["Guardrail column_value_size violated: Value of column 'fs' has size 12, this exceeds the warning threshold of 10."]),
    ('app', 'UPDATE ks.c SET fl = [1, 2, 3, 4, 5] WHERE k = 1 AND c = 1', None, 'Guardrail items_per_collection violated: Detected collection fl with 5 items, this exceeds the failure threshold of 4.', []),
    ('app', 'INSERT INTO ks.c (k, c, s, fs) VALUES (2, 1, {1, 2, 3}, {1, 2, 3})', None, None, ['Guardrail items_per_collection violated: Detected collection s with 3 items, this exceeds the warning threshold of 2.', 'Guardrail collection_size violated: Detected collection s of size 72, this exceeds the warning threshold of 50.', 'Guardrail items_per_collection violated: Detected collection fs with 3 items, this exceeds the warning threshold of 2.', "Guardrail column_value_size violated: Value of column 'fs' has size 28, this exceeds the warning threshold of 10."]),
    ('app', 'INSERT INTO ks.c JSON \'{"k": 3, "c": 1, "v": "abcdefghijkl", "m": {"1": 1, "2": 2}}\'', None, None, ["Guardrail column_value_size violated: Value of column 'v' has size 12, this exceeds the warning threshold of 10.", 'Guardrail collection_size violated: Detected collection m of size 56, this exceeds the warning threshold of 50.']),
    ('app', "INSERT INTO ks.c (k, c, v) VALUES (4, 1, 'abcdefghijkl') IF NOT EXISTS", None, None, ["Guardrail column_value_size violated: Value of column 'v' has size 12, this exceeds the warning threshold of 10."]),
    ('app', "INSERT INTO ks.c (k, c, v) VALUES (4, 1, 'abcdefghijabcdefghijabcdefghijabcdefghijX') IF NOT EXISTS", None, None, []),
    ('app', "UPDATE ks.c SET v = 'abcdefghijabcdefghijabcdefghijabcdefghijX' WHERE k = 4 AND c = 1 IF v = 'x'", None, None, []),
    ('app', "BEGIN BATCH INSERT INTO ks.c (k, c, v) VALUES (5, 1, 'abcdefghijkl'); UPDATE ks.c SET s = {1, 2, 3} WHERE k = 5 AND c = 2; APPLY BATCH", None, None, ["Guardrail column_value_size violated: Value of column 'v' has size 12, this exceeds the warning threshold of 10.", 'Guardrail items_per_collection violated: Detected collection s with 3 items, this exceeds the warning threshold of 2.', 'Guardrail collection_size violated: Detected collection s of size 72, this exceeds the warning threshold of 50.']),
    ('app', "UPDATE ks.u SET p = {x: 1, y: 'abcdefghijkl'} WHERE k = 1", None, None, ["Guardrail column_value_size violated: Value of column 'p' has size 12, this exceeds the warning threshold of 10."]),
    ('app', "UPDATE ks.u SET p.y = 'abcdefghijkl' WHERE k = 1", None, None, ["Guardrail column_value_size violated: Value of column 'p' has size 12, this exceeds the warning threshold of 10."]),
    ('app', "UPDATE ks.u SET fp = {x: 1, y: 'ab'} WHERE k = 1", None, None, ["Guardrail column_value_size violated: Value of column 'fp' has size 14, this exceeds the warning threshold of 10."]),
    ('su', "INSERT INTO ks.c (k, c, v, s) VALUES (1, 1, 'abcdefghijabcdefghijabcdefghijabcdefghijX', {1, 2, 3, 4, 5})", None, None, []),
    ('app', 'CL=ONE SELECT * FROM ks.c WHERE k = 1', None, None, ['Guardrail read_consistency_levels violated: Provided values [ONE] are not recommended for read consistency levels (warned values are: [ONE])']),
    ('app', 'CL=ALL SELECT * FROM ks.c WHERE k = 1', None, 'Guardrail read_consistency_levels violated: Provided values [ALL] are not allowed for read consistency levels (disallowed values are: [TWO, ALL])', []),
    ('app', 'CL=TWO SELECT * FROM ks.c WHERE k = 1', None, 'Guardrail read_consistency_levels violated: Provided values [TWO] are not allowed for read consistency levels (disallowed values are: [TWO, ALL])', []),
    ('app', 'CL=SERIAL SELECT * FROM ks.c WHERE k = 1', None, None, []),
    ('app', 'CL=ONE SELECT * FROM system.local', None, None, ['Guardrail read_consistency_levels violated: Provided values [ONE] are not recommended for read consistency levels (warned values are: [ONE])']),
    ('app', "CL=ONE INSERT INTO ks.c (k, c, v) VALUES (6, 1, 'a')", None, None, ['Guardrail write_consistency_levels violated: Provided values [ONE] are not recommended for write consistency levels (warned values are: [ONE])']),
    ('app', "CL=ALL INSERT INTO ks.c (k, c, v) VALUES (6, 1, 'a')", None, 'Guardrail write_consistency_levels violated: Provided values [ALL] are not allowed for write consistency levels (disallowed values are: [ALL, LOCAL_SERIAL])', []),
    ('app', "SERIAL=LOCAL_SERIAL INSERT INTO ks.c (k, c, v) VALUES (6, 1, 'a')", None, 'Guardrail write_consistency_levels violated: Provided values [LOCAL_SERIAL] are not allowed for write consistency levels (disallowed values are: [ALL, LOCAL_SERIAL])', []),
    ('app', "CL=ALL SERIAL=LOCAL_SERIAL UPDATE ks.c SET v = 'a' WHERE k = 6 AND c = 1", None, 'Guardrail write_consistency_levels violated: Provided values [ALL, LOCAL_SERIAL] are not allowed for write consistency levels (disallowed values are: [ALL, LOCAL_SERIAL])', []),
    ('app', "SERIAL=LOCAL_SERIAL INSERT INTO ks.c (k, c, v) VALUES (6, 2, 'a') IF NOT EXISTS", None, 'Guardrail write_consistency_levels violated: Provided values [LOCAL_SERIAL] are not allowed for write consistency levels (disallowed values are: [ALL, LOCAL_SERIAL])', []),
    ('app', "CL=ALL BEGIN BATCH INSERT INTO ks.c (k, c, v) VALUES (6, 1, 'a'); APPLY BATCH", None, 'Guardrail write_consistency_levels violated: Provided values [ALL] are not allowed for write consistency levels (disallowed values are: [ALL, LOCAL_SERIAL])', []),
    ('app', 'CL=ONE DELETE FROM ks.c WHERE k = 6 AND c = 1', None, None, ['Guardrail write_consistency_levels violated: Provided values [ONE] are not recommended for write consistency levels (warned values are: [ONE])']),
    ('app', "CL=ONE BEGIN BATCH INSERT INTO ks.c (k, c, v) VALUES (6, 1, 'abcdefghijkl'); APPLY BATCH", None, None, ['Guardrail write_consistency_levels violated: Provided values [ONE] are not recommended for write consistency levels (warned values are: [ONE])', "Guardrail column_value_size violated: Value of column 'v' has size 12, this exceeds the warning threshold of 10."]),
    ('app', "CL=ONE INSERT INTO ks.c (k, c, v) VALUES (6, 3, 'a') IF NOT EXISTS", None, None, ['Guardrail write_consistency_levels violated: Provided values [ONE] are not recommended for write consistency levels (warned values are: [ONE])']),
    ('app', 'CL=ALL CREATE TABLE ks.other (k int PRIMARY KEY)', None, None, []),
    ('app', 'CL=ALL TRUNCATE ks.other', None, None, []),
    ('su', 'CL=ALL SELECT * FROM ks.c WHERE k = 1', None, None, []),
    ('su', "CL=ALL INSERT INTO ks.c (k, c, v) VALUES (6, 1, 'a')", None, None, []),
    ('su', 'INSERT INTO ks.c (k, c, l) VALUES (7, 1, [1, 2, 3])', None, None, []),
    ('app', 'UPDATE ks.c SET l[0] = 5 WHERE k = 7 AND c = 1', None, 'Guardrail read_before_write_list_operations violated: Setting of list items by index requiring read before write is not allowed', []),
    ('app', 'UPDATE ks.c SET l = l - [1] WHERE k = 7 AND c = 1', None, 'Guardrail read_before_write_list_operations violated: Removal of list items requiring read before write is not allowed', []),
    ('app', 'DELETE l[0] FROM ks.c WHERE k = 7 AND c = 1', None, 'Guardrail read_before_write_list_operations violated: Removal of list items by index requiring read before write is not allowed', []),
    ('app', 'UPDATE ks.c SET l = l - [1] WHERE k = 8 AND c = 1', None, 'Guardrail read_before_write_list_operations violated: Removal of list items requiring read before write is not allowed', []),
    ('app', 'UPDATE ks.c SET l = l + [4] WHERE k = 7 AND c = 1', None, None, ["Guardrail column_value_size violated: Value of column 'l' has size 16, this exceeds the warning threshold of 10."]),
    ('app', 'DELETE l FROM ks.c WHERE k = 7 AND c = 1', None, None, []),
    ('su', 'UPDATE ks.c SET l[0] = 5 WHERE k = 7 AND c = 1', None, 'Attempted to set an element on a list which is null', []),
    ('app', "CREATE TABLE ks.tw (k int PRIMARY KEY) WITH compaction = {'class': 'TimeWindowCompactionStrategy'}", None, None, ['Guardrail zero_ttl_on_twcs violated: 0 default_time_to_live on a table with TimeWindowCompactionStrategy compaction strategy is not recommended. It is suspicious to use default_time_to_live set to 0 with such compaction strategy. Please keep in mind that data will not start to automatically expire after they are older than a respective compaction window unit of a certain size. Please set TTL for your INSERT or UPDATE statements if you expect data to be expired as table settings will not do it. ']),
    ('app', "CREATE TABLE ks.tw2 (k int PRIMARY KEY) WITH compaction = {'class': 'org.apache.cassandra.db.compaction.TimeWindowCompactionStrategy'} AND default_time_to_live = 60", None, None, []),
    ('app', 'ALTER TABLE ks.tw2 WITH default_time_to_live = 0', None, None, []),
    ('app', "ALTER TABLE ks.tw2 WITH default_time_to_live = 0 AND compaction = {'class': 'TimeWindowCompactionStrategy'}", None, None, ['Guardrail zero_ttl_on_twcs violated: 0 default_time_to_live on a table with TimeWindowCompactionStrategy compaction strategy is not recommended. It is suspicious to use default_time_to_live set to 0 with such compaction strategy. Please keep in mind that data will not start to automatically expire after they are older than a respective compaction window unit of a certain size. Please set TTL for your INSERT or UPDATE statements if you expect data to be expired as table settings will not do it. ']),
    ('app', "ALTER TABLE ks.tw WITH comment = 'x'", None, None, []),
    ('app', "CREATE TABLE ks.unc (k int PRIMARY KEY) WITH compression = {'enabled': false}", None, 'Guardrail uncompressed_tables_enabled violated: Uncompressed table is not allowed', []),
    ('app', "CREATE TABLE ks.unc2 (k int PRIMARY KEY) WITH compression = {'enabled': 'false'} AND compaction = {'class': 'TimeWindowCompactionStrategy'}", None, 'Guardrail uncompressed_tables_enabled violated: Uncompressed table is not allowed', []),
    ('app', "ALTER TABLE ks.tw WITH compression = {'enabled': false}", None, 'Guardrail uncompressed_tables_enabled violated: Uncompressed table is not allowed', []),
    ('su', "CREATE TABLE ks.unc (k int PRIMARY KEY) WITH compression = {'enabled': false}", None, None, []),
    ('app', "ALTER TABLE ks.unc WITH comment = 'x'", None, 'Guardrail uncompressed_tables_enabled violated: Uncompressed table is not allowed', []),
    ('app', 'ALTER TABLE ks.unc ADD v int', None, None, []),
    ('app', "INSERT INTO ks.c (k, c, v) VALUES (9, 1, 'a') USING TIMESTAMP {now+2h}", None, None, ["Guardrail maximum_timestamp violated: The modification to table c has a timestamp 1795896908812756 after the maximum allowable warning threshold 1795893308653000. Timestamps too far in the future can lead to data that can't be easily overwritten"]),
    ('app', "INSERT INTO ks.c (k, c, v) VALUES (9, 1, 'a') USING TIMESTAMP {now+2d}", None, "Guardrail maximum_timestamp violated: The modification to table c has a timestamp 1796062508892433 after the maximum allowable failure threshold 1795976108653000. Timestamps too far in the future can lead to data that can't be easily overwritten", []),
    ('app', "UPDATE ks.c USING TIMESTAMP {now-2h} SET v = 'a' WHERE k = 9 AND c = 1", None, None, ['Guardrail minimum_timestamp violated: The modification to table c has a timestamp 1795882509032908 before the minimum allowable warning threshold 1795886108653000. Timestamps too far in the past can cause writes can be unexpectedly lost']),
    ('app', 'DELETE FROM ks.c USING TIMESTAMP {now-2d} WHERE k = 9 AND c = 1', None, 'Guardrail minimum_timestamp violated: The modification to table c has a timestamp 1795716909046314 before the minimum allowable failure threshold 1795803308653000. Timestamps too far in the past can cause writes can be unexpectedly lost', []),
    ('app', "INSERT INTO ks.c (k, c, v) VALUES (9, 1, 'a') USING TIMESTAMP 5", None, 'Guardrail minimum_timestamp violated: The modification to table c has a timestamp 5 before the minimum allowable failure threshold 1795803308653000. Timestamps too far in the past can cause writes can be unexpectedly lost', []),
    ('app', "INSERT INTO ks.c (k, c, v) VALUES (9, 1, 'a') USING TTL 10 AND TIMESTAMP {now+2h}", None, None, ["Guardrail maximum_timestamp violated: The modification to table c has a timestamp 1795896909078850 after the maximum allowable warning threshold 1795893308653000. Timestamps too far in the future can lead to data that can't be easily overwritten"]),
    ('app', "BEGIN BATCH INSERT INTO ks.c (k, c, v) VALUES (9, 1, 'a') USING TIMESTAMP {now+2d}; APPLY BATCH", None, None, []),
    ('app', "BEGIN BATCH USING TIMESTAMP {now-2d} INSERT INTO ks.c (k, c, v) VALUES (9, 1, 'a'); APPLY BATCH", None, None, []),
    ('app', "INSERT INTO ks.c (k, c, v) VALUES (9, 1, 'a')", None, None, []),
    ('su', "INSERT INTO ks.c (k, c, v) VALUES (9, 1, 'a') USING TIMESTAMP {now+2d}", None, None, []),
    ('app', 'SELECT * FROM ks.ct WHERE a IN (1, 2) AND b IN (1, 2)', None, None, []),
    ('app', 'SELECT * FROM ks.ct WHERE a IN (1, 2) AND b IN (1, 2, 3)', None, None, ['Guardrail in_select_cartesian_product violated: The cartesian product of the IN restrictions on partition key produces 6 values, this exceeds warning threshold of 4.']),
    ('app', 'SELECT * FROM ks.ct WHERE a IN (1, 2, 3, 4, 5) AND b = 1', None, None, ['Guardrail in_select_cartesian_product violated: The cartesian product of the IN restrictions on partition key produces 5 values, this exceeds warning threshold of 4.', 'Guardrail in_select_cartesian_product violated: The cartesian product of the IN restrictions on partition key produces 5 values, this exceeds warning threshold of 4.']),
    ('app', 'SELECT * FROM ks.ct WHERE a IN (1, 2, 3, 4, 5) AND b IN (1, 2)', None, 'Guardrail in_select_cartesian_product violated: Aborting query because the cartesian product of the IN restrictions on partition key produces 10 values, this exceeds fail threshold of 9.', []),
    ('app', 'SELECT * FROM ks.ct WHERE a = 1 AND b = 1 AND c IN (1, 2) AND d IN (1, 2, 3)', None, None, ['Guardrail in_select_cartesian_product violated: The cartesian product of the IN restrictions on clustering key produces 6 values, this exceeds warning threshold of 4.']),
    ('app', 'SELECT * FROM ks.ct WHERE a = 1 AND b = 1 AND (c, d) IN ((1, 1), (1, 2), (1, 3), (2, 1), (2, 2))', None, None, ['Guardrail in_select_cartesian_product violated: The cartesian product of the IN restrictions on clustering key produces 5 values, this exceeds warning threshold of 4.']),
    ('app', 'SELECT * FROM ks.ct WHERE a IN (1, 2, 3) AND b IN (1, 2) AND c IN (1, 2)', None, None, ['Guardrail in_select_cartesian_product violated: The cartesian product of the IN restrictions on partition key produces 6 values, this exceeds warning threshold of 4.']),
    ('app', 'UPDATE ks.ct SET v = 1 WHERE a IN (1, 2) AND b IN (1, 2, 3) AND c = 1 AND d = 1', None, None, ['Guardrail in_select_cartesian_product violated: The cartesian product of the IN restrictions on partition key produces 6 values, this exceeds warning threshold of 4.']),
    ('app', 'DELETE FROM ks.ct WHERE a = 1 AND b = 1 AND c IN (1, 2, 3) AND d IN (1, 2, 3, 4)', None, 'Guardrail in_select_cartesian_product violated: Aborting query because the cartesian product of the IN restrictions on clustering key produces 12 values, this exceeds fail threshold of 9.', []),
    ('app', 'SELECT * FROM ks.ct WHERE a IN (1, 2) AND b IN (1, 2, 3) LIMIT 1', None, None, ['Guardrail in_select_cartesian_product violated: The cartesian product of the IN restrictions on partition key produces 6 values, this exceeds warning threshold of 4.']),
    ('app', 'CREATE TABLE ks.vec3 (k int PRIMARY KEY, v vector<float, 3>)', None, None, []),
    ('app', 'CREATE TABLE ks.vec4 (k int PRIMARY KEY, v vector<float, 4>)', None, None, ['Guardrail vector_dimensions violated: Column v has a vector of 4 dimensions, this exceeds the warning threshold of 3.']),
    ('app', 'CREATE TABLE ks.vec6 (k int PRIMARY KEY, v vector<float, 6>)', None, 'Guardrail vector_dimensions violated: Column v has a vector of 6 dimensions, this exceeds the failure threshold of 5.', []),
    ('app', 'ALTER TABLE ks.vec3 ADD w vector<int, 6>', None, 'Guardrail vector_dimensions violated: Column w has a vector of 6 dimensions, this exceeds the failure threshold of 5.', []),
    ('app', 'CREATE TABLE ks.vec5 (k int PRIMARY KEY, v frozen<list<vector<float, 5>>>)', None, None, ['Guardrail vector_dimensions violated: Column v has a vector of 5 dimensions, this exceeds the warning threshold of 3.']),
    ('app', 'CREATE TYPE ks.vt (a vector<float, 4>)', None, None, ['Guardrail vector_dimensions violated: Field a has a vector of 4 dimensions, this exceeds the warning threshold of 3.']),
    ('app', 'CREATE TABLE ks.vc (k int PRIMARY KEY, v vector<float, 2>)', None, None, []),
    ('app', 'INSERT INTO ks.vc (k, v) VALUES (1, [1.0, 2.0])', None, None, []),
    ('su', 'CREATE TABLE ks.vecsu (k int PRIMARY KEY, v vector<float, 6>)', None, None, []),
]


# A fourth server: table_properties_* (an ignored option is dropped from
# the statement; Cassandra 5.0.6 answers a server error when one statement
# gives two ignored options, so no case here does).
PROPERTIES_YAML = """\
authorizer: CassandraAuthorizer
materialized_views_enabled: true
table_properties_warned: [comment, gc_grace_seconds]
table_properties_ignored: [read_repair, bloom_filter_fp_chance, cdc]
table_properties_disallowed: [default_time_to_live, crc_check_chance, caching, memtable_flush_period_in_ms]
"""

PROPERTY_CASES = [
    ('su', "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 1}", None, None, []),
    ('su', "CREATE ROLE app WITH PASSWORD = 'app' AND LOGIN = true", None, None, []),
    ('su', 'GRANT ALL PERMISSIONS ON ALL KEYSPACES TO app', None, None, []),
    ('app', "CREATE TABLE ks.t1 (k int PRIMARY KEY, v int) WITH comment = 'c'", None, None, ['Guardrail table_properties violated: Provided values [comment] are not recommended for Table Properties (warned values are: [gc_grace_seconds, comment])']),
    ('app', 'CREATE TABLE ks.t3 (k int PRIMARY KEY) WITH default_time_to_live = 10', None, 'Guardrail table_properties violated: Provided values [default_time_to_live] are not allowed for Table Properties (disallowed values are: [crc_check_chance, memtable_flush_period_in_ms, caching, default_time_to_live])', []),
    ('app', "CREATE TABLE ks.t4 (k int PRIMARY KEY) WITH caching = {'keys': 'ALL'} AND crc_check_chance = 0.5 AND comment = 'c'", None, 'Guardrail table_properties violated: Provided values [caching, crc_check_chance] are not allowed for Table Properties (disallowed values are: [crc_check_chance, memtable_flush_period_in_ms, caching, default_time_to_live])', []),
    ('app', "ALTER TABLE ks.t1 WITH comment = 'd'", None, None, ['Guardrail table_properties violated: Provided values [comment] are not recommended for Table Properties (warned values are: [gc_grace_seconds, comment])']),
    ('app', 'ALTER TABLE ks.t1 WITH cdc = false', None, None, ['Guardrail table_properties violated: Ignoring provided values [cdc] as they are not supported for Table Properties (ignored values are: [cdc, read_repair, bloom_filter_fp_chance])']),
    ('app', 'ALTER TABLE ks.t1 WITH bloom_filter_fp_chance = 0.1 AND default_time_to_live = 0', None, 'Guardrail table_properties violated: Provided values [default_time_to_live] are not allowed for Table Properties (disallowed values are: [crc_check_chance, memtable_flush_period_in_ms, caching, default_time_to_live])', []),
    ('app', "ALTER TABLE ks.nonexistent WITH comment = 'x'", None, "Table 'ks.nonexistent' doesn't exist", []),
    ('app', "CREATE MATERIALIZED VIEW ks.mv AS SELECT k, v FROM ks.t1 WHERE k IS NOT NULL AND v IS NOT NULL PRIMARY KEY (v, k) WITH comment = 'x'", None, None, ['Guardrail table_properties violated: Provided values [comment] are not recommended for Table Properties (warned values are: [gc_grace_seconds, comment])']),
    ('app', 'ALTER MATERIALIZED VIEW ks.mv WITH gc_grace_seconds = 100', None, None, ['Guardrail table_properties violated: Provided values [gc_grace_seconds] are not recommended for Table Properties (warned values are: [gc_grace_seconds, comment])']),
    ('app', "ALTER MATERIALIZED VIEW ks.mv WITH caching = {'keys': 'ALL'}", None, 'Guardrail table_properties violated: Provided values [caching] are not allowed for Table Properties (disallowed values are: [crc_check_chance, memtable_flush_period_in_ms, caching, default_time_to_live])', []),
    ('app', 'CREATE TABLE ks.t5 (k int PRIMARY KEY, a int)', None, None, []),
    ('app', "CREATE TABLE ks.t6 (k int, c int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC) AND comment = 'x'", None, None, ['Guardrail table_properties violated: Provided values [comment] are not recommended for Table Properties (warned values are: [gc_grace_seconds, comment])']),
    ('app', "CREATE TABLE IF NOT EXISTS ks.t1 (k int PRIMARY KEY) WITH comment = 'c'", None, None, ['Guardrail table_properties violated: Provided values [comment] are not recommended for Table Properties (warned values are: [gc_grace_seconds, comment])']),
    ('su', 'CREATE TABLE ks.t7 (k int PRIMARY KEY) WITH default_time_to_live = 10', None, None, []),
    ('app', "ALTER TABLE ks.t7 WITH comment = 'x'", None, None, ['Guardrail table_properties violated: Provided values [comment] are not recommended for Table Properties (warned values are: [gc_grace_seconds, comment])']),
]



# A fifth server: vector_type_enabled (and a vector_dimensions threshold
# that the flag's failure comes before).
VECTOR_TYPE_YAML = """\
authorizer: CassandraAuthorizer
vector_type_enabled: false
vector_dimensions_warn_threshold: 1
"""

VECTOR_TYPE_CASES = [
    ('su', "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 1}", None, None, []),
    ('su', "CREATE ROLE app WITH PASSWORD = 'app' AND LOGIN = true", None, None, []),
    ('su', 'GRANT ALL PERMISSIONS ON ALL KEYSPACES TO app', None, None, []),
    ('app', 'CREATE TABLE ks.t (k int PRIMARY KEY, v int)', None, None, []),
    ('app', 'CREATE TABLE ks.v (k int PRIMARY KEY, v vector<float, 2>)', None, 'Guardrail vector_type_enabled violated: Column v is not allowed', []),
    ('app', 'CREATE TABLE ks.v2 (k int PRIMARY KEY, v frozen<list<vector<float, 2>>>)', None, 'Guardrail vector_type_enabled violated: Column v is not allowed', []),
    ('app', 'ALTER TABLE ks.t ADD w vector<float, 2>', None, 'Guardrail vector_type_enabled violated: Column w is not allowed', []),
    ('app', 'CREATE TYPE ks.vt (a vector<float, 2>)', None, 'Guardrail vector_type_enabled violated: Field a is not allowed', []),
    ('su', 'CREATE TABLE ks.v (k int PRIMARY KEY, v vector<float, 2>)', None, None, []),
    ('app', 'INSERT INTO ks.v (k, v) VALUES (1, [1.0, 2.0])', None, None, []),
    ('app', 'SELECT * FROM ks.v', None, None, []),
]



def expand(cql):
    """`{now+2h}`, `{now-2d}`: now plus or minus hours or days, in microseconds."""
    def offset(m):
        unit = {"h": 3600, "d": 86400}[m.group(3)] * 1000000
        sign = 1 if m.group(1) == "+" else -1
        return str(int(time.time() * 1000000) + sign * int(m.group(2)) * unit)
    return re.sub(r"\{now([+-])(\d+)([hd])\}", offset, cql)


def without_clock(text):
    """A timestamp guardrail's message with its clock-dependent numbers out."""
    if text is None:
        return None
    return re.sub(r"(has a timestamp|allowable (?:warning|failure) threshold) \d+", r"\1 N", text)


def run(session, cql, fetch_size):
    """The error's message (None on success) and the guardrail warnings."""
    cql = expand(cql)
    levels = {}
    while re.match(r"(CL|SERIAL)=\w+ ", cql):
        setting, cql = cql.split(" ", 1)
        name, level = setting.split("=")
        levels[name] = getattr(ConsistencyLevel, level)
    if cql.startswith("BATCH MESSAGE "):
        statement = BatchStatement()
        statement.add(SimpleStatement(cql[len("BATCH MESSAGE "):]))
    elif fetch_size:
        statement = SimpleStatement(cql, fetch_size=fetch_size)
    else:
        statement = SimpleStatement(cql)
    statement.consistency_level = levels.get("CL")
    statement.serial_consistency_level = levels.get("SERIAL")
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


@pytest.mark.parametrize("yaml, cases, protocol_version", [
    (GUARDRAILS_YAML, CASES, 5), (FLAGS_YAML, FLAG_CASES, 5),
    (VALUES_YAML, VALUE_CASES, 4), (VALUES_YAML, VALUE_CASES, 5),
    (PROPERTIES_YAML, PROPERTY_CASES, 4), (PROPERTIES_YAML, PROPERTY_CASES, 5),
    (VECTOR_TYPE_YAML, VECTOR_TYPE_CASES, 4), (VECTOR_TYPE_YAML, VECTOR_TYPE_CASES, 5),
], ids=["thresholds", "flags", "values-v4", "values-v5", "properties-v4", "properties-v5",
        "vector-type-v4", "vector-type-v5"])
def test_guardrails_answer_as_cassandra(yaml, cases, protocol_version):
    with contextlib.contextmanager(run_server)(GUARDRAILS_PORT, yaml):
        replay(cases, protocol_version)


def replay(cases, protocol_version=5):
    clusters = []
    sessions = {}
    try:
        for who, cql, fetch_size, error, warnings in cases:
            if who not in sessions:
                user, password = ("cassandra", "cassandra") if who == "su" else ("app", "app")
                cluster, sessions[who] = connect(user, password, port=GUARDRAILS_PORT,
                                                 protocol_version=protocol_version)
                clusters.append(cluster)
            actual_error, actual_warnings = run(sessions[who], cql, fetch_size)
            assert (without_clock(actual_error), [without_clock(w) for w in actual_warnings]) == \
                (without_clock(error), [without_clock(w) for w in warnings]), "%s: %s" % (who, cql)
    finally:
        for cluster in clusters:
            cluster.shutdown()


RUNTIME_PORT = int(os.environ.get("ROCKSANDRA_GUARDRAILS_RUNTIME_PORT", str(PORT + 7)))
RUNTIME_ADMIN_PORT = int(os.environ.get("ROCKSANDRA_GUARDRAILS_RUNTIME_ADMIN_PORT", "7207"))


def nodetool(*args):
    return subprocess.run([BIN, "nodetool", "-p", str(RUNTIME_ADMIN_PORT),
                           "-u", "cassandra", "-pw", "cassandra"] + list(args),
                          capture_output=True, text=True, timeout=60)


def test_guardrails_change_at_runtime_through_nodetool():
    """getguardrailsconfig shows the guardrails in force by Cassandra's
    names; setguardrailsconfig changes them at once, checked as at start:
    an ordinary role meets the new threshold on its next statement."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(contextlib.contextmanager(run_server)(
            RUNTIME_PORT, "authorizer: CassandraAuthorizer\n", admin_port=RUNTIME_ADMIN_PORT))
        su_cluster, su = connect("cassandra", "cassandra", port=RUNTIME_PORT)
        stack.callback(su_cluster.shutdown)
        su.execute("CREATE KEYSPACE ks WITH replication = "
                   "{'class': 'NetworkTopologyStrategy', 'datacenter1': 1}")
        su.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
        su.execute("CREATE ROLE app WITH PASSWORD = 'app' AND LOGIN = true")
        su.execute("GRANT ALL PERMISSIONS ON ALL KEYSPACES TO app")
        app_cluster, app = connect("app", "app", port=RUNTIME_PORT)
        stack.callback(app_cluster.shutdown)
        app.execute("CREATE TABLE ks.a (k int PRIMARY KEY)")

        got = nodetool("getguardrailsconfig", "tables_threshold")
        assert (got.returncode, got.stdout) == (0, "[-1, -1]\n"), got
        everything = nodetool("getguardrailsconfig").stdout
        assert re.search(r"^allow_filtering_enabled +true *$", everything, re.M), everything
        assert re.search(r"^tables_threshold +\[-1, -1\] *$", everything, re.M), everything

        # Fail, then warn, as Cassandra's setter takes them; silent.
        got = nodetool("setguardrailsconfig", "tables_threshold", "3", "2")
        assert (got.returncode, got.stdout) == (0, ""), got
        got = nodetool("getguardrailsconfig", "--expand", "tables_threshold")
        assert got.stdout.split() == ["tables_fail_threshold", "3", "tables_warn_threshold", "2"], got
        warned = app.execute("CREATE TABLE ks.b (k int PRIMARY KEY)")
        assert warned.response_future.warnings == [
            "Guardrail tables violated: Creating table b, current number of tables 3 "
            "exceeds warning threshold of 2."]
        with pytest.raises(InvalidRequest, match="Guardrail tables violated: Cannot have more "
                                                 "than 3 tables, aborting the creation of table c"):
            app.execute("CREATE TABLE ks.c (k int PRIMARY KEY)")
        su.execute("CREATE TABLE ks.c (k int PRIMARY KEY)")  # the superuser is exempt

        # A flag, and values refused as at start.
        assert nodetool("setguardrailsconfig", "allow_filtering_enabled", "false").returncode == 0
        with pytest.raises(InvalidRequest, match="Guardrail allow_filtering violated"):
            app.execute("SELECT * FROM ks.t WHERE v = 1 ALLOW FILTERING")
        bad = nodetool("setguardrailsconfig", "tables_threshold", "2", "3")
        assert bad.returncode != 0
        assert ("Error occured when setting the config for setter tables_threshold with "
                "arguments [2, 3]: The warn threshold 3 for tables_warn_threshold should be "
                "lower than the fail threshold 2") in bad.stderr, bad
        missing = nodetool("setguardrailsconfig", "no_such_threshold", "1", "1")
        assert "Guardrail no_such_threshold not found." in missing.stderr, missing
        # Back off: the ordinary role may create tables again.
        assert nodetool("setguardrailsconfig", "tables_threshold", "null", "null").returncode == 0
        app.execute("CREATE TABLE ks.d (k int PRIMARY KEY)")
