//! The keys Rocksandra implements, each with its default and what it does:
//! the one source of `conf/rocksandra.yaml` and `docs/configuration.md`
//! (a test regenerates both and fails when the committed files differ).

use std::fmt::Write as _;

use super::cassandra_keys::CASSANDRA_ONLY_KEYS;

/// One key of `rocksandra.yaml`.
#[derive(Debug, Clone, Copy)]
pub struct KeyDoc {
    pub name: &'static str,
    /// The default as YAML; a value starting with a newline is a block
    /// (indented lines).
    pub default: &'static str,
    /// Unset by default: the shipped file shows `default` as an example,
    /// commented out, and `doc` says what happens without it.
    pub unset: bool,
    /// Older names read as well (never together with `name`).
    pub legacy: &'static [&'static str],
    pub doc: &'static str,
}

const fn key(name: &'static str, default: &'static str, doc: &'static str) -> KeyDoc {
    KeyDoc {
        name,
        default,
        unset: false,
        legacy: &[],
        doc,
    }
}

impl KeyDoc {
    const fn legacy(self, legacy: &'static [&'static str]) -> KeyDoc {
        KeyDoc { legacy, ..self }
    }

    const fn unset(self) -> KeyDoc {
        KeyDoc {
            unset: true,
            ..self
        }
    }
}

/// Every key Rocksandra reads, in the order of the shipped file.
pub const KEYS: &[KeyDoc] = &[
    key("cluster_name", "'Test Cluster'", "Name of the cluster; nodes of other clusters are refused."),
    key("num_tokens", "16", "Tokens (vnodes) a new node takes on the ring, 1 to 1024."),
    key("listen_address", "localhost", "IP address this node listens on for other nodes (and for clients, without rpc_address); not a wildcard."),
    key("listen_interface", "lo", "Network interface whose address is listen_address (its first IPv4 address, else its first); set listen_address or listen_interface, not both.").unset(),
    key("listen_interface_prefer_ipv6", "false", "With listen_interface: take the interface's first IPv6 address instead."),
    key("broadcast_address", "1.2.3.4", "IP address other nodes know this node by (gossip, system.peers), when they reach it at another address than listen_address (NAT); unset: listen_address.").unset(),
    key("listen_on_broadcast_address", "false", "Listen for other nodes on broadcast_address too, not only on listen_address."),
    key("rpc_address", "localhost", "IP address CQL clients connect to (0.0.0.0: all, with broadcast_rpc_address); unset: listen_address.").unset(),
    key("rpc_interface", "lo", "Network interface whose address is rpc_address, picked as for listen_interface; set rpc_address or rpc_interface, not both.").unset(),
    key("rpc_interface_prefer_ipv6", "false", "With rpc_interface: take the interface's first IPv6 address instead."),
    key("broadcast_rpc_address", "1.2.3.4", "CQL address told to drivers (system.local, system.peers, events); required when rpc_address is 0.0.0.0; unset: rpc_address.").unset(),
    key("native_transport_port", "9042", "TCP port of the CQL native protocol."),
    key("storage_port", "7000", "Port for other nodes: internode TCP and gossip."),
    key(
        "seed_provider",
        "\n  - class_name: org.apache.cassandra.locator.SimpleSeedProvider\n    parameters:\n      - seeds: \"127.0.0.1:7000\"",
        "Seeds to join a cluster through (host or host:port); unset: the node runs alone.",
    )
    .unset(),
    key("auto_bootstrap", "true", "A new node streams its ranges' data from the cluster before serving."),
    key("endpoint_snitch", "SimpleSnitch", "Snitch name; GossipingPropertyFileSnitch reads dc= and rack= from cassandra-rackdc.properties next to this file, else data_center and rack place the node."),
    key("data_center", "datacenter1", "Data center of this node."),
    key("rack", "rack1", "Rack of this node."),
    key("hinted_handoff_enabled", "true", "Coordinators keep hints for replicas that are down."),
    key("max_hint_window", "3h", "Longest downtime of a replica that hints are kept for.")
        .legacy(&["max_hint_window_in_ms"]),
    key("data_file_directories", "\n  - ./data", "The data directory; exactly one entry (more are refused)."),
    key(
        "hints_directory",
        "/var/lib/rocksandra/hints",
        "Directory of the hints a coordinator keeps for down replicas; unset: hints in the data directory.",
    )
    .unset(),
    key(
        "commitlog_directory",
        "/var/lib/rocksandra/commitlog",
        "Directory of RocksDB's write-ahead log; unset: inside the data directory. Changing it is refused while the old log holds unflushed writes (nodetool flush first).",
    )
    .unset(),
    key("commitlog_sync", "periodic", "periodic: acknowledge writes at once, sync the log every period; batch: sync before acknowledging."),
    key("commitlog_sync_period", "10000ms", "How often the log is synced under periodic.")
        .legacy(&["commitlog_sync_period_in_ms"]),
    key("block_cache_size", "1GiB", "RocksDB block cache; unset: a quarter of the machine's memory, at least 256MiB.").unset(),
    key(
        "point_cache_size",
        "256MiB",
        "Recently read rows of tables without clustering columns, as stored, kept coherent with every write; 0MiB: none; unset: a quarter of the block cache.",
    )
    .unset(),
    key(
        "memtable_heap_space",
        "256MiB",
        "Memtable budget of all tables together (RocksDB db_write_buffer_size), added to memtable_offheap_space; unset (both): 256MiB.",
    )
    .unset()
    .legacy(&["memtable_heap_space_in_mb"]),
    key("memtable_offheap_space", "256MiB", "Added to memtable_heap_space for the memtable budget.")
        .unset()
        .legacy(&["memtable_offheap_space_in_mb"]),
    key(
        "compaction_throughput",
        "0MiB/s",
        "Write rate of compactions and flushes together (RocksDB rate limiter, flushes first); 0: unthrottled. Cassandra's default, and its stock file, say 64MiB/s.",
    )
    .legacy(&["compaction_throughput_mb_per_sec"]),
    key(
        "stream_throughput_outbound",
        "24MiB/s",
        "What a node sends when it streams data to another (bootstrap, decommission, removenode, rebuild, repair), on average; 0: unthrottled. As in Cassandra, whose default it is; `nodetool setstreamthroughput` changes it until restart.",
    )
    .legacy(&["stream_throughput_outbound_megabits_per_sec"]),
    key(
        "auto_snapshot",
        "true",
        "A snapshot (snapshots/dropped-MILLIS-NAME, truncated-MILLIS-NAME: every table, with schema.json and schema.cql) before each DROP TABLE, DROP KEYSPACE, DROP MATERIALIZED VIEW and TRUNCATE.",
    ),
    key(
        "tombstone_warn_threshold",
        "1000",
        "A read (of one partition, or a range scan) that meets more tombstones than this (cells deleted or expired, rows deleted on their own, two markers per range tombstone) gets a client warning and a log line.",
    ),
    key(
        "tombstone_failure_threshold",
        "100000",
        "Past this many, the read stops and fails with READ_FAILURE (READ_TOO_MANY_TOMBSTONES).",
    ),
    key(
        "read_thresholds_enabled",
        "false",
        "Replicas report what a read met and the coordinator warns once per read: `N nodes scanned up to M tombstones and issued tombstone warnings for query Q` (READ_FAILURE `N nodes scanned over M tombstones and aborted the query Q` past tombstone_failure_threshold), and the size thresholds below apply.",
    ),
    key("coordinator_read_size_warn_threshold", "1MiB", "With read_thresholds_enabled: a result whose values pass this many bytes warns the client. Unset by default (no warning).").unset(),
    key("coordinator_read_size_fail_threshold", "4MiB", "With read_thresholds_enabled: a row that starts past this many bytes of result fails the read (READ_FAILURE, READ_SIZE). Unset by default.").unset(),
    key("local_read_size_warn_threshold", "4MiB", "With read_thresholds_enabled: a replica read that loads this many bytes (its key, clusterings and cell values) warns the client. Unset by default.").unset(),
    key("local_read_size_fail_threshold", "8MiB", "With read_thresholds_enabled: a replica read that loads this many bytes fails (READ_FAILURE, READ_SIZE). Unset by default.").unset(),
    key("row_index_read_size_warn_threshold", "4MiB", "Read and checked against its fail threshold, never measured: RocksDB keeps no row index per partition. Unset by default.").unset(),
    key("row_index_read_size_fail_threshold", "8MiB", "As row_index_read_size_warn_threshold.").unset(),
    key("concurrent_compactors", "2", "Compactions running at once (RocksDB background compaction jobs); unset: 1.").unset(),
    key("authenticator", "AllowAllAuthenticator", "AllowAllAuthenticator (no login) or PasswordAuthenticator."),
    key("authorizer", "AllowAllAuthorizer", "AllowAllAuthorizer or CassandraAuthorizer (needs PasswordAuthenticator)."),
    key("auth_bcrypt_gensalt_log2_rounds", "10", "bcrypt cost of stored passwords, 4 to 31."),
    key("auth_read_consistency_level", "LOCAL_QUORUM", "Level roles (except the default superuser cassandra, always read at QUORUM), role members and permissions are read at, logins included: ANY, ONE, TWO, THREE, QUORUM, ALL, LOCAL_QUORUM, EACH_QUORUM, SERIAL, LOCAL_SERIAL or LOCAL_ONE, upper case. LIST ROLES of every role reads at QUORUM."),
    key("auth_write_consistency_level", "EACH_QUORUM", "Level CREATE/ALTER/DROP ROLE, GRANT and REVOKE write at (the default superuser's row at QUORUM); the same names."),
    key(
        "superuser_setup_delay_ms",
        "10000",
        "With PasswordAuthenticator, how long a node of a cluster waits after joining before it looks for roles (the default role at ONE, then QUORUM, any role at QUORUM) and writes the default superuser cassandra/cassandra at timestamp 0 when there is none, and between attempts; Cassandra's system property -Dcassandra.superuser_setup_delay_ms. A node alone does it at startup.",
    ),
    key("roles_validity", "2000ms", "How long the roles cache (the roles a logged-in role holds, transitively, with their superuser and login flags) serves an entry before reading it again at auth_read_consistency_level; 0ms turns the cache off (every check reads).").legacy(&["roles_validity_in_ms"]),
    key("roles_update_interval", "2000ms", "Age after which a roles cache entry is read again by the request that finds it; when that read fails (too few replicas) the old entry is served until roles_validity ends. Unset: roles_validity.").unset().legacy(&["roles_update_interval_in_ms"]),
    key("roles_cache_max_entries", "1000", "Entries the roles cache holds at most (least recently used out first)."),
    key("roles_cache_active_update", "false", "Reload every entry of the roles cache in the background each roles_update_interval (a failed reload keeps the entry until roles_validity), and none on a lookup before its validity ends."),
    key("permissions_validity", "2000ms", "How long the permissions cache (the permissions a user holds on one resource, with CassandraAuthorizer) serves an entry before reading it again at auth_read_consistency_level; 0ms turns the cache off (every check reads).").legacy(&["permissions_validity_in_ms"]),
    key("permissions_update_interval", "2000ms", "Age after which a permissions cache entry is read again by the request that finds it; when that read fails (too few replicas) the old entry is served until permissions_validity ends. Unset: permissions_validity.").unset().legacy(&["permissions_update_interval_in_ms"]),
    key("permissions_cache_max_entries", "1000", "Entries the permissions cache holds at most (least recently used out first)."),
    key("permissions_cache_active_update", "false", "Reload every entry of the permissions cache in the background each permissions_update_interval (a failed reload keeps the entry until permissions_validity), and none on a lookup before its validity ends."),
    key("credentials_validity", "2000ms", "How long the credentials cache (a role's password hash, for PasswordAuthenticator's logins) serves an entry before reading it again at auth_read_consistency_level; 0ms turns the cache off (every check reads).").legacy(&["credentials_validity_in_ms"]),
    key("credentials_update_interval", "2000ms", "Age after which a credentials cache entry is read again by the request that finds it; when that read fails (too few replicas) the old entry is served until credentials_validity ends. Unset: credentials_validity.").unset().legacy(&["credentials_update_interval_in_ms"]),
    key("credentials_cache_max_entries", "1000", "Entries the credentials cache holds at most (least recently used out first)."),
    key("credentials_cache_active_update", "false", "Reload every entry of the credentials cache in the background each credentials_update_interval (a failed reload keeps the entry until credentials_validity), and none on a lookup before its validity ends."),
    key(
        "client_encryption_options",
        "\n  enabled: false",
        "TLS for CQL clients: enabled, optional, keystore/truststore (PEM), require_client_auth, protocol, cipher_suites.",
    ),
    key(
        "server_encryption_options",
        "\n  internode_encryption: none",
        "TLS between nodes (storage port, gossip included, nodetool): internode_encryption none, dc, rack or all; optional, keystore/outbound_keystore/truststore (PEM), require_client_auth, require_endpoint_verification, protocol, cipher_suites.",
    ),
    key("native_transport_max_frame_size", "16MiB", "Largest frame a client may send, 4KiB up to 2GiB.")
        .legacy(&["native_transport_max_frame_size_in_mb"]),
    key("native_transport_max_concurrent_connections", "-1", "Client connections served at once; -1: 1024."),
    key("native_transport_max_concurrent_connections_per_ip", "-1", "Client connections from one IP address; -1 or 0: no limit."),
    key("native_transport_max_requests_per_connection", "2048", "Requests in flight on one connection before OVERLOADED."),
    key("native_transport_max_concurrent_requests", "16384", "Requests in flight over all connections before OVERLOADED."),
    key("native_transport_max_request_data_in_flight", "256MiB", "Bytes of requests being processed over all connections.")
        .legacy(&["native_transport_max_concurrent_requests_in_bytes"]),
    key("native_transport_max_request_data_in_flight_per_ip", "64MiB", "Bytes of requests being processed per client IP address.")
        .legacy(&["native_transport_max_concurrent_requests_in_bytes_per_ip"]),
    key("native_transport_idle_timeout", "0ms", "Closes a connection idle this long; 0ms: never.")
        .legacy(&["native_transport_idle_timeout_in_ms"]),
    key("read_request_timeout", "5000ms", "How long a page of a read of given partitions may take (on a node alone too), and a coordinator waits for its replicas.")
        .legacy(&["read_request_timeout_in_ms"]),
    key("range_request_timeout", "10000ms", "How long a page of a range or index read may take (on a node alone too), and a coordinator waits for its replicas.")
        .legacy(&["range_request_timeout_in_ms"]),
    key("write_request_timeout", "2000ms", "How long a coordinator waits for the replicas of a write.")
        .legacy(&["write_request_timeout_in_ms"]),
    key("cas_contention_timeout", "1000ms", "How long a lightweight transaction retries under contention.")
        .legacy(&["cas_contention_timeout_in_ms"]),
    key("truncate_request_timeout", "60000ms", "How long a TRUNCATE waits for every node to empty its copy.")
        .legacy(&["truncate_request_timeout_in_ms"]),
    key("prepared_statements_cache_size", "10MiB", "Bound of the prepared-statement cache; empty: 10MiB.")
        .legacy(&["prepared_statements_cache_size_mb"]),
    key("materialized_views_enabled", "false", "Allows CREATE MATERIALIZED VIEW.")
        .legacy(&["enable_materialized_views"]),
    key("drop_compact_storage_enabled", "false", "Allows ALTER TABLE ... DROP COMPACT STORAGE.")
        .legacy(&["enable_drop_compact_storage"]),
    key("user_defined_functions_enabled", "false", "Allows CREATE FUNCTION and CREATE AGGREGATE (function bodies: the Java subset of docs/compatibility.md).")
        .legacy(&["enable_user_defined_functions"]),
    key("dynamic_data_masking_enabled", "false", "Allows column masks (MASKED WITH in CREATE TABLE and ALTER TABLE); users without UNMASK read masked values."),
    key("keyspaces_warn_threshold", "-1", "Guardrail (binds ordinary users: logged in with PasswordAuthenticator, not superusers; -1 disables): warns on CREATE KEYSPACE when there would be more user keyspaces than this."),
    key("keyspaces_fail_threshold", "-1", "Guardrail (ordinary users; -1 disables): refuses CREATE KEYSPACE when there would be more user keyspaces than this."),
    key("tables_warn_threshold", "-1", "Guardrail (ordinary users; -1 disables): warns on CREATE TABLE when there would be more tables and views in user keyspaces than this."),
    key("tables_fail_threshold", "-1", "Guardrail (ordinary users; -1 disables): refuses CREATE TABLE when there would be more tables and views in user keyspaces than this."),
    key("columns_per_table_warn_threshold", "-1", "Guardrail (ordinary users; -1 disables): warns on CREATE TABLE and ALTER TABLE ADD when the table would have more columns than this."),
    key("columns_per_table_fail_threshold", "-1", "Guardrail (ordinary users; -1 disables): refuses CREATE TABLE and ALTER TABLE ADD when the table would have more columns than this."),
    key("secondary_indexes_per_table_warn_threshold", "-1", "Guardrail (ordinary users; -1 disables): warns on CREATE INDEX when the table would have more indexes than this."),
    key("secondary_indexes_per_table_fail_threshold", "-1", "Guardrail (ordinary users; -1 disables): refuses CREATE INDEX when the table would have more indexes than this."),
    key("materialized_views_per_table_warn_threshold", "-1", "Guardrail (ordinary users; -1 disables): warns on CREATE MATERIALIZED VIEW when the base table would have more views than this."),
    key("materialized_views_per_table_fail_threshold", "-1", "Guardrail (ordinary users; -1 disables): refuses CREATE MATERIALIZED VIEW when the base table would have more views than this."),
    key("fields_per_udt_warn_threshold", "-1", "Guardrail (ordinary users; -1 disables): warns on CREATE TYPE and ALTER TYPE ADD when the type would have more fields than this."),
    key("fields_per_udt_fail_threshold", "-1", "Guardrail (ordinary users; -1 disables): refuses CREATE TYPE and ALTER TYPE ADD when the type would have more fields than this."),
    key("page_size_warn_threshold", "-1", "Guardrail (ordinary users; -1 disables): warns on a paged SELECT (no LIMIT at or below the page size, or an aggregate) whose page size is above this."),
    key("page_size_fail_threshold", "-1", "Guardrail (ordinary users; -1 disables): refuses a paged SELECT whose page size is above this."),
    key("partition_keys_in_select_warn_threshold", "-1", "Guardrail (ordinary users; -1 disables): warns on a SELECT whose partition key IN names more partitions than this."),
    key("partition_keys_in_select_fail_threshold", "-1", "Guardrail (ordinary users; -1 disables): refuses a SELECT whose partition key IN names more partitions than this."),
    key("in_select_cartesian_product_warn_threshold", "-1", "Guardrail (ordinary users; -1 disables): warns on a SELECT, UPDATE or DELETE whose IN restrictions make more partition keys, or clustering keys, than this (checked after each restricted column)."),
    key("in_select_cartesian_product_fail_threshold", "-1", "Guardrail (ordinary users; -1 disables): refuses a SELECT, UPDATE or DELETE whose IN restrictions make more partition keys, or clustering keys, than this."),
    key("partition_size_warn_threshold", "100MiB", "Guardrail (unset disables): a compaction that writes a partition larger than this (its stored entries) logs Cassandra's warning for it.").unset(),
    key("partition_size_fail_threshold", "1GiB", "Guardrail (unset disables): as partition_size_warn_threshold, logged as an error; nothing is refused.").unset(),
    key("partition_tombstones_warn_threshold", "1000", "Guardrail (-1 disables): a compaction that writes a partition with more tombstones than this logs Cassandra's warning for it.").unset(),
    key("partition_tombstones_fail_threshold", "10000", "Guardrail (-1 disables): as partition_tombstones_warn_threshold, logged as an error; nothing is refused.").unset(),
    key("column_value_size_warn_threshold", "64KiB", "Guardrail (ordinary users; unset disables): warns on a write of a value (or a collection element's key) larger than this.").unset(),
    key("column_value_size_fail_threshold", "1MiB", "Guardrail (ordinary users; unset disables): refuses a write of a value (or a collection element's key) larger than this.").unset(),
    key("collection_size_warn_threshold", "64KiB", "Guardrail (ordinary users; unset disables): warns when the elements a write adds to a collection (written whole or added to) are larger than this.").unset(),
    key("collection_size_fail_threshold", "1MiB", "Guardrail (ordinary users; unset disables): refuses a write whose elements added to a collection are larger than this.").unset(),
    key("items_per_collection_warn_threshold", "-1", "Guardrail (ordinary users; -1 disables): warns when a write adds more elements than this to a collection (written whole or added to)."),
    key("items_per_collection_fail_threshold", "-1", "Guardrail (ordinary users; -1 disables): refuses a write adding more elements than this to a collection."),
    key("vector_dimensions_warn_threshold", "-1", "Guardrail (ordinary users; -1 disables): warns on CREATE TABLE, ALTER TABLE ADD, CREATE TYPE and ALTER TYPE ADD of a vector with more dimensions than this."),
    key("vector_dimensions_fail_threshold", "-1", "Guardrail (ordinary users; -1 disables): refuses a vector type with more dimensions than this in those statements."),
    key("table_properties_warned", "[]", "Guardrail (ordinary users): table options (comment, compaction, ...) CREATE TABLE, ALTER TABLE ... WITH and CREATE or ALTER MATERIALIZED VIEW are warned about."),
    key("table_properties_ignored", "[]", "Guardrail (ordinary users): table options those statements are run without, with a warning."),
    key("table_properties_disallowed", "[]", "Guardrail (ordinary users): table options those statements are refused for."),
    key("maximum_timestamp_warn_threshold", "1d", "Guardrail (ordinary users; unset disables): warns on an INSERT, UPDATE or DELETE (not in a batch) whose USING TIMESTAMP is later than now plus this.").unset(),
    key("maximum_timestamp_fail_threshold", "365d", "Guardrail (ordinary users; unset disables): refuses an INSERT, UPDATE or DELETE (not in a batch) whose USING TIMESTAMP is later than now plus this.").unset(),
    key("minimum_timestamp_warn_threshold", "1d", "Guardrail (ordinary users; unset disables): warns on an INSERT, UPDATE or DELETE (not in a batch) whose USING TIMESTAMP is earlier than now minus this.").unset(),
    key("minimum_timestamp_fail_threshold", "365d", "Guardrail (ordinary users; unset disables): refuses an INSERT, UPDATE or DELETE (not in a batch) whose USING TIMESTAMP is earlier than now minus this.").unset(),
    key("read_consistency_levels_warned", "[]", "Guardrail (ordinary users): consistency levels a SELECT is warned about, e.g. [ONE, LOCAL_ONE]."),
    key("read_consistency_levels_disallowed", "[]", "Guardrail (ordinary users): consistency levels a SELECT is refused at."),
    key("write_consistency_levels_warned", "[]", "Guardrail (ordinary users): consistency levels (or serial consistency levels; SERIAL when a request gives none) an INSERT, UPDATE, DELETE or BATCH is warned about."),
    key("write_consistency_levels_disallowed", "[]", "Guardrail (ordinary users): consistency levels (or serial consistency levels) an INSERT, UPDATE, DELETE or BATCH is refused at."),
    key("minimum_replication_factor_warn_threshold", "-1", "Guardrail (ordinary users; -1 disables): warns on CREATE and ALTER KEYSPACE when a replication factor is below this."),
    key("minimum_replication_factor_fail_threshold", "-1", "Guardrail (ordinary users; -1 disables): refuses CREATE and ALTER KEYSPACE when a replication factor is below this (at most 1, default_keyspace_rf)."),
    key("maximum_replication_factor_warn_threshold", "-1", "Guardrail (ordinary users; -1 disables): warns on CREATE and ALTER KEYSPACE when a replication factor is above this."),
    key("maximum_replication_factor_fail_threshold", "-1", "Guardrail (ordinary users; -1 disables): refuses CREATE and ALTER KEYSPACE when a replication factor is above this."),
    key("data_disk_usage_percentage_warn_threshold", "-1", "Guardrail (ordinary users; -1 disables): warns on a write whose replicas include one whose data volume is fuller than this percentage (measured every 30 s, told by gossip; the warning at most once per 30 minutes)."),
    key("data_disk_usage_percentage_fail_threshold", "-1", "Guardrail (ordinary users; -1 disables): refuses a write whose replicas include one whose data volume is fuller than this percentage."),
    key("disk_usage_monitor_interval_ms", "30000", "How often the data disk usage guardrails measure the data volume (its data directory's files and the memtables, out of those and its free space); Cassandra's system property -Dcassandra.disk_usage.monitor_interval_ms."),
    key("data_disk_usage_max_disk_size", "500GiB", "The size the data disk usage percentages are of, when smaller than the data volume (unset: the volume's data and free space).").unset(),
    key("user_timestamps_enabled", "true", "Guardrail (ordinary users): allows USING TIMESTAMP in INSERT, UPDATE and DELETE (a BATCH's own USING TIMESTAMP is always allowed)."),
    key("group_by_enabled", "true", "Guardrail (ordinary users): allows SELECT ... GROUP BY."),
    key("drop_truncate_table_enabled", "true", "Guardrail (ordinary users): allows DROP TABLE and TRUNCATE."),
    key("drop_keyspace_enabled", "true", "Guardrail (ordinary users): allows DROP KEYSPACE."),
    key("secondary_indexes_enabled", "true", "Guardrail (ordinary users): allows CREATE INDEX (legacy, SAI and custom indexes)."),
    key("compact_tables_enabled", "true", "Guardrail (ordinary users): allows CREATE TABLE ... WITH COMPACT STORAGE."),
    key("alter_table_enabled", "true", "Guardrail (ordinary users): allows ALTER TABLE ADD, DROP and RENAME (ALTER TABLE ... WITH always is)."),
    key("allow_filtering_enabled", "true", "Guardrail (ordinary users): allows ALLOW FILTERING on tables outside the system keyspaces."),
    key("simplestrategy_enabled", "true", "Guardrail (ordinary users): allows CREATE and ALTER KEYSPACE with 'class': 'SimpleStrategy' (the short name, as Cassandra checks it)."),
    key("read_before_write_list_operations_enabled", "true", "Guardrail (ordinary users): allows the list operations that read the stored list (l[i] = v, DELETE l[i], l = l - [...])."),
    key("uncompressed_tables_enabled", "true", "Guardrail (ordinary users): allows CREATE TABLE and ALTER TABLE ... WITH to leave a table without compression."),
    key("zero_ttl_on_twcs_warned", "true", "Guardrail (ordinary users): warns on CREATE TABLE and ALTER TABLE ... WITH giving TimeWindowCompactionStrategy and a default_time_to_live of 0."),
    key("vector_type_enabled", "true", "Guardrail (ordinary users): allows vector types in CREATE TABLE, ALTER TABLE ADD, CREATE TYPE and ALTER TYPE ADD."),
    key("zero_ttl_on_twcs_enabled", "true", "Guardrail (ordinary users): allows TimeWindowCompactionStrategy with a default_time_to_live of 0 in CREATE TABLE and ALTER TABLE ... WITH."),
    key("admin_address", "127.0.0.1", "Address nodetool connects to (Cassandra's JMX listens on localhost). Several nodes on one machine need their own address or port."),
    key("admin_port", "7199", "nodetool's port (Cassandra's JMX port); 0 turns it off. With PasswordAuthenticator, nodetool logs in as a superuser (-u, -pw)."),
    key("prometheus_address", "127.0.0.1", "Address of the Prometheus metrics endpoint."),
    key("prometheus_port", "9180", "Port of the Prometheus metrics endpoint; 0 turns it off. The legacy key is host:port for both.")
        .legacy(&["prometheus_listen_address"]),
];

const YAML_HEADER: &str = "\
# rocksandra.yaml: every key Rocksandra implements, set to its default.
# Generated from crates/server/src/config/reference.rs (UPDATE_CONFIG_DOCS=1
# cargo test -p rocksandra-server --lib config rewrites it); keys named as in
# cassandra.yaml. Lines starting with `# key:` are unset by default.
# Cassandra 5.0 keys Rocksandra does not use are accepted with a warning
# (docs/configuration.md lists them); any other key is an error.
";

/// `conf/rocksandra.yaml`.
pub fn yaml_file() -> String {
    let mut out = String::from(YAML_HEADER);
    for key in KEYS {
        out.push('\n');
        let _ = writeln!(out, "# {}", key.doc);
        let prefix = if key.unset { "# " } else { "" };
        let mut lines = format!("{}:{}", key.name, yaml_value(key.default));
        if key.default.starts_with('\n') {
            lines = lines.replace('\n', &format!("\n{prefix}"));
        }
        let _ = writeln!(out, "{prefix}{lines}");
    }
    out
}

fn yaml_value(default: &str) -> String {
    if default.starts_with('\n') {
        default.to_string()
    } else {
        format!(" {default}")
    }
}

const MARKDOWN_HEADER: &str = "\
# Configuration

`rocksandra --config FILE` reads a YAML file whose keys are named as in
Cassandra's `cassandra.yaml`. [`conf/rocksandra.yaml`](../conf/rocksandra.yaml)
holds every key below at its default. Both this page and that file are
generated from `crates/server/src/config/reference.rs`; after changing it, run
`UPDATE_CONFIG_DOCS=1 cargo test -p rocksandra-server --lib config`.

A stock Cassandra 5.0 `cassandra.yaml` starts a node too: the Cassandra keys
Rocksandra does not use (listed at the end) are accepted and named in one
warning at startup. A key neither knows is an error naming it. A legacy name
(`_in_ms`, `_in_mb`, ...) takes the unit in its name and a plain number;
giving both names of one key is an error.

## Keys Rocksandra implements

| Key | Default | Meaning |
|---|---|---|
";

/// `docs/configuration.md`.
pub fn markdown_file() -> String {
    let mut out = String::from(MARKDOWN_HEADER);
    for key in KEYS {
        let _ = writeln!(
            out,
            "| `{}`{} | {} | {} |",
            key.name,
            legacy_names(key),
            markdown_default(key),
            key.doc
        );
    }
    out.push_str(
        "\n## Cassandra 5.0 keys accepted but not used\n\n\
         Their values are not read or checked.\n\n",
    );
    for name in CASSANDRA_ONLY_KEYS {
        let _ = writeln!(out, "- `{name}`");
    }
    out
}

fn legacy_names(key: &KeyDoc) -> String {
    key.legacy
        .iter()
        .map(|name| format!(" (legacy `{name}`)"))
        .collect()
}

fn markdown_default(key: &KeyDoc) -> String {
    if key.unset {
        return "unset".to_string();
    }
    let one_line = key
        .default
        .trim_start_matches('\n')
        .lines()
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ");
    format!("`{one_line}`")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, FileConfig};
    use std::path::PathBuf;

    /// The committed file at `relative` (from the workspace root) must be
    /// `generated`; with UPDATE_CONFIG_DOCS=1 it is rewritten instead.
    fn check_generated(relative: &str, generated: &str) {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(relative);
        if std::env::var_os("UPDATE_CONFIG_DOCS").is_some() {
            std::fs::write(&path, generated).expect("write the generated file");
            return;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "{relative} is not what crates/server/src/config/reference.rs generates; \
             regenerate it with UPDATE_CONFIG_DOCS=1 cargo test -p rocksandra-server --lib config"
        );
    }

    #[test]
    fn shipped_yaml_and_docs_are_generated_from_the_key_table() {
        check_generated("conf/rocksandra.yaml", &yaml_file());
        check_generated("docs/configuration.md", &markdown_file());
    }

    #[test]
    fn shipped_yaml_parses_to_the_defaults() {
        let config = match Config::from_yaml(&yaml_file(), "rocksandra.yaml") {
            Ok(config) => config,
            Err(e) => panic!("the generated file parses: {e}"),
        };
        assert_eq!(config, Config::default());
    }

    /// The example value of each unset key parses too.
    #[test]
    fn examples_of_unset_keys_parse() {
        for key in KEYS.iter().filter(|k| k.unset) {
            let yaml = format!("{}:{}\n", key.name, yaml_value(key.default));
            if let Err(e) = Config::from_yaml(&yaml, "rocksandra.yaml") {
                panic!("{yaml}: {e}");
            }
        }
    }

    #[test]
    fn every_key_read_is_documented_once_and_no_key_is_both_used_and_unused() {
        let fields = file_config_fields();
        let mut documented: Vec<&str> = KEYS
            .iter()
            .flat_map(|k| std::iter::once(k.name).chain(k.legacy.iter().copied()))
            .collect();
        documented.sort_unstable();
        let mut read: Vec<&str> = fields.to_vec();
        read.sort_unstable();
        assert_eq!(documented, read, "KEYS against FileConfig's fields");
        for field in fields {
            assert!(
                !CASSANDRA_ONLY_KEYS.contains(field),
                "{field} is read, so it is not a Cassandra-only key"
            );
        }
    }

    /// The keys `FileConfig` reads, as serde's derive lists them.
    fn file_config_fields() -> &'static [&'static str] {
        use serde::Deserialize;
        let mut fields: &'static [&'static str] = &[];
        let _ = FileConfig::deserialize(FieldNames(&mut fields));
        fields
    }

    /// A deserializer that only records the field names of a struct.
    struct FieldNames<'a>(&'a mut &'static [&'static str]);

    impl<'de> serde::Deserializer<'de> for FieldNames<'_> {
        type Error = serde::de::value::Error;

        fn deserialize_any<V: serde::de::Visitor<'de>>(
            self,
            _: V,
        ) -> Result<V::Value, Self::Error> {
            Err(serde::de::Error::custom("only a struct"))
        }

        fn deserialize_struct<V: serde::de::Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _visitor: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(serde::de::Error::custom("fields recorded"))
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map enum identifier ignored_any
        }
    }
}
