//! Cassandra 5.0's guardrails: thresholds (`*_warn_threshold`,
//! `*_fail_threshold`) and feature flags (`*_enabled`) set in
//! cassandra.yaml. The decisions are pure functions of a `Guardrails` value
//! and what a statement counts; each returns nothing, a client warning, or
//! the InvalidRequest Cassandra answers ("Guardrail tables violated: ...").
//!
//! As in Cassandra, guardrails bind ordinary users only: a superuser, the
//! server's own (`internal`) requests and every client of a node without
//! PasswordAuthenticator (where Cassandra counts everyone as a superuser)
//! pass untouched (`guard::guardrails_for`).

use std::collections::BTreeMap;

use rocksandra_cql::ast::{
    AlterTable, AlterTableAction, AlterType, AlterTypeAction, CreateIndex, CreateMaterializedView,
    CreateTable, Delete, DropKind, Insert, Literal, Modification, Property, PropertyValue,
    QualifiedName, Statement, Update, UsingParam,
};

use rocksandra_cql::TypeExpr;
use rocksandra_wire::Consistency;

use crate::error::{QueryError, Result};
use crate::schema::{is_system_keyspace, keyspace_of, Keyspace, Schema};

/// A warn and a fail threshold; -1 (or any value below 1) disables one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Threshold {
    pub warn: i64,
    pub fail: i64,
}

impl Threshold {
    pub const DISABLED: Threshold = Threshold { warn: -1, fail: -1 };

    pub fn is_enabled(self) -> bool {
        self.warn > 0 || self.fail > 0
    }
}

/// A set of consistency levels (`read_consistency_levels_warned`, ...),
/// listed in Cassandra's order of the levels (`[TWO, ALL]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConsistencyLevels(u16);

impl ConsistencyLevels {
    pub const EMPTY: ConsistencyLevels = ConsistencyLevels(0);

    pub fn with(self, level: Consistency) -> ConsistencyLevels {
        ConsistencyLevels(self.0 | 1 << level.code())
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    fn intersection(self, other: ConsistencyLevels) -> ConsistencyLevels {
        ConsistencyLevels(self.0 & other.0)
    }

    /// `[ONE, LOCAL_ONE]`, as Java prints a set of levels.
    fn names(self) -> String {
        format!("[{}]", self.level_names().join(", "))
    }

    /// The levels' names, in the protocol's order.
    pub fn level_names(self) -> Vec<&'static str> {
        Consistency::ALL
            .into_iter()
            .filter(|c| self.0 & 1 << c.code() != 0)
            .map(Consistency::name)
            .collect()
    }
}

/// How far from now a USING TIMESTAMP may be (`maximum_timestamp_*`,
/// `minimum_timestamp_*`), in microseconds; None disables one side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimestampOffsets {
    pub warn_micros: Option<i64>,
    pub fail_micros: Option<i64>,
}

impl TimestampOffsets {
    pub const DISABLED: TimestampOffsets = TimestampOffsets {
        warn_micros: None,
        fail_micros: None,
    };

    fn is_enabled(self) -> bool {
        self.warn_micros.is_some() || self.fail_micros.is_some()
    }
}

/// The options of CREATE and ALTER TABLE (Cassandra's `TableParams.Option`
/// names, then `id`): what `table_properties_*` may name.
pub const TABLE_PROPERTY_NAMES: [&str; 20] = [
    "allow_auto_snapshot",
    "bloom_filter_fp_chance",
    "caching",
    "comment",
    "compaction",
    "compression",
    "memtable",
    "default_time_to_live",
    "extensions",
    "gc_grace_seconds",
    "incremental_backups",
    "max_index_interval",
    "memtable_flush_period_in_ms",
    "min_index_interval",
    "speculative_retry",
    "additional_write_policy",
    "crc_check_chance",
    "cdc",
    "read_repair",
    "id",
];

/// A set of table option names (`table_properties_warned`, ...), kept in
/// the order the yaml lists them: Cassandra prints such a set in the
/// order of a Java `HashSet`, which depends on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableProperties {
    /// Indexes into `TABLE_PROPERTY_NAMES`, the first `len` used.
    names: [u8; TABLE_PROPERTY_NAMES.len()],
    len: u8,
}

impl TableProperties {
    pub const EMPTY: TableProperties = TableProperties {
        names: [0; TABLE_PROPERTY_NAMES.len()],
        len: 0,
    };

    /// The set with `name` (any case) added; None when it is not a table
    /// option.
    pub fn with(self, name: &str) -> Option<TableProperties> {
        let lower = name.to_ascii_lowercase();
        let index = TABLE_PROPERTY_NAMES.iter().position(|n| *n == lower)?;
        let mut next = self;
        if !self.contains(&lower) {
            next.names[usize::from(self.len)] = index as u8;
            next.len += 1;
        }
        Some(next)
    }

    pub fn is_empty(self) -> bool {
        self.len == 0
    }

    fn iter(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.names[..usize::from(self.len)]
            .iter()
            .map(|i| TABLE_PROPERTY_NAMES[usize::from(*i)])
    }

    fn contains(&self, name: &str) -> bool {
        self.iter().any(|n| n == name)
    }

    /// `[gc_grace_seconds, comment]`: as Java prints the `HashSet`
    /// Cassandra reads the yaml list into.
    pub fn java_text(&self) -> String {
        java_hash_set_text(&self.iter().collect::<Vec<_>>())
    }
}

/// Strings as Java prints a `HashSet` of them added in this order: by
/// bucket (the spread `String.hashCode` modulo a table of 16, doubled while
/// more than three quarters full), in insertion order within a bucket.
pub fn java_hash_set_text(items: &[&str]) -> String {
    let mut capacity = 16usize;
    while items.len() * 4 > capacity * 3 {
        capacity *= 2;
    }
    let bucket = |s: &str| {
        let h = s
            .encode_utf16()
            .fold(0u32, |h, c| h.wrapping_mul(31).wrapping_add(u32::from(c)));
        ((h ^ (h >> 16)) as usize) & (capacity - 1)
    };
    let mut sorted = items.to_vec();
    sorted.sort_by_key(|s| bucket(s));
    format!("[{}]", sorted.join(", "))
}

/// The guardrails of a node, Cassandra 5.0's defaults by `Default`:
/// every threshold disabled, every feature allowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Guardrails {
    /// User keyspaces (system ones are not counted).
    pub keyspaces: Threshold,
    /// Tables and materialized views of user keyspaces.
    pub tables: Threshold,
    pub columns_per_table: Threshold,
    pub secondary_indexes_per_table: Threshold,
    pub materialized_views_per_table: Threshold,
    pub fields_per_udt: Threshold,
    pub page_size: Threshold,
    pub partition_keys_in_select: Threshold,
    /// The partition keys, or clustering prefixes, an IN makes.
    pub in_select_cartesian_product: Threshold,
    /// A partition written by a compaction, bytes (checked by the storage
    /// engine's compactions and logged; `partition_guard`).
    pub partition_size: Threshold,
    /// The tombstones of a partition written by a compaction.
    pub partition_tombstones: Threshold,
    /// A written cell's value (and its collection element's key), bytes.
    pub column_value_size: Threshold,
    /// The collection elements one write adds to a column, bytes.
    pub collection_size: Threshold,
    /// The collection elements one write adds to a column.
    pub items_per_collection: Threshold,
    /// The dimensions of a vector type in CREATE TABLE, ALTER TABLE ADD and
    /// CREATE TYPE.
    pub vector_dimensions: Threshold,
    /// A USING TIMESTAMP later than now plus these.
    pub maximum_timestamp: TimestampOffsets,
    /// A USING TIMESTAMP earlier than now minus these.
    pub minimum_timestamp: TimestampOffsets,
    /// Table options CREATE and ALTER TABLE and MATERIALIZED VIEW are
    /// warned about, given without them, or refused.
    pub table_properties_warned: TableProperties,
    pub table_properties_ignored: TableProperties,
    pub table_properties_disallowed: TableProperties,
    pub read_consistency_levels_warned: ConsistencyLevels,
    pub read_consistency_levels_disallowed: ConsistencyLevels,
    pub write_consistency_levels_warned: ConsistencyLevels,
    pub write_consistency_levels_disallowed: ConsistencyLevels,
    /// A lower bound: below `warn` warns, below `fail` fails.
    pub minimum_replication_factor: Threshold,
    pub maximum_replication_factor: Threshold,
    /// How full the data volume may be, in percent (`disk_usage`).
    pub data_disk_usage_percentage: Threshold,
    /// The data volume's size for that percentage, if smaller than it.
    pub data_disk_usage_max_disk_size: Option<u64>,
    pub user_timestamps_enabled: bool,
    pub group_by_enabled: bool,
    pub drop_truncate_table_enabled: bool,
    pub drop_keyspace_enabled: bool,
    pub secondary_indexes_enabled: bool,
    pub compact_tables_enabled: bool,
    pub alter_table_enabled: bool,
    pub allow_filtering_enabled: bool,
    pub simplestrategy_enabled: bool,
    /// Setting or removing list elements by index, removing them by value.
    pub read_before_write_list_operations_enabled: bool,
    /// Tables without compression (CREATE TABLE, ALTER TABLE ... WITH).
    pub uncompressed_tables_enabled: bool,
    /// CREATE or ALTER TABLE ... WITH TimeWindowCompactionStrategy and
    /// `default_time_to_live` 0: warned (by default), or refused.
    pub zero_ttl_on_twcs_warned: bool,
    pub zero_ttl_on_twcs_enabled: bool,
    /// Vector types in CREATE TABLE, ALTER TABLE ADD, CREATE TYPE and
    /// ALTER TYPE ADD.
    pub vector_type_enabled: bool,
}

impl Default for Guardrails {
    fn default() -> Self {
        Guardrails::DEFAULT
    }
}

/// What a check decided when it did not fail: a warning for the client, or
/// nothing.
pub type Verdict = Result<Option<String>>;

/// Cassandra's log line for a partition a compaction wrote past
/// `partition_size` (bytes) or, with `tombstones`, `partition_tombstones`:
/// `what` names it (`ks.t:KEY`). Logged, never sent to a client.
pub fn partition_violation(
    what: &str,
    tombstones: bool,
    (value, threshold): (u64, u64),
    failure: bool,
) -> String {
    let kind = if failure { "failure" } else { "warning" };
    let (name, measured, reason) = if tombstones {
        let reason = "Partitions with too many tombstones can cause performance problems.";
        (
            "partition_tombstones",
            format!("has {value} tombstones"),
            reason,
        )
    } else {
        let reason = "Too large partitions can cause performance problems.";
        ("partition_size", format!("has size {value}"), reason)
    };
    let message =
        format!("Partition {what} {measured}, this exceeds the {kind} threshold of {threshold}.");
    format!("{} {reason}", decorate(name, &message))
}

/// The text of a warning or failure: Cassandra's prefix naming the
/// guardrail, then the guardrail's own message.
pub(crate) fn decorate(name: &str, message: &str) -> String {
    format!("Guardrail {name} violated: {message}")
}

/// A value above a maximum: the failure if above `fail`, else the warning
/// if above `warn`. The message functions get the threshold passed.
fn above(
    name: &str,
    threshold: Threshold,
    value: i64,
    warn_message: impl Fn(i64) -> String,
    fail_message: impl Fn(i64) -> String,
) -> Verdict {
    if threshold.fail > 0 && value > threshold.fail {
        return Err(QueryError::invalid(decorate(
            name,
            &fail_message(threshold.fail),
        )));
    }
    if threshold.warn > 0 && value > threshold.warn {
        return Ok(Some(decorate(name, &warn_message(threshold.warn))));
    }
    Ok(None)
}

/// A value below a minimum: the mirror of `above`.
fn below(
    name: &str,
    threshold: Threshold,
    value: i64,
    message: impl Fn(&str, i64) -> String,
) -> Verdict {
    if threshold.fail > 0 && value < threshold.fail {
        return Err(QueryError::invalid(decorate(
            name,
            &message("failure", threshold.fail),
        )));
    }
    if threshold.warn > 0 && value < threshold.warn {
        return Ok(Some(decorate(name, &message("warning", threshold.warn))));
    }
    Ok(None)
}

/// A feature flag: the failure when the feature is off.
fn flag(name: &str, enabled: bool, feature: &str) -> Result<()> {
    if enabled {
        return Ok(());
    }
    Err(QueryError::invalid(decorate(
        name,
        &format!("{feature} is not allowed"),
    )))
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Cassandra's `Values` guardrail on consistency levels (`kind` "read" or
/// "write"): a disallowed level fails, a warned one warns.
fn consistency_levels(
    kind: &str,
    warned: ConsistencyLevels,
    disallowed: ConsistencyLevels,
    given: ConsistencyLevels,
) -> Verdict {
    let name = format!("{kind}_consistency_levels");
    let what = format!("{kind} consistency levels");
    let refused = given.intersection(disallowed);
    if !refused.is_empty() {
        return Err(QueryError::invalid(decorate(
            &name,
            &format!(
                "Provided values {} are not allowed for {what} (disallowed values are: {})",
                refused.names(),
                disallowed.names()
            ),
        )));
    }
    let warn = given.intersection(warned);
    if warn.is_empty() {
        return Ok(None);
    }
    Ok(Some(decorate(
        &name,
        &format!(
            "Provided values {} are not recommended for {what} (warned values are: {})",
            warn.names(),
            warned.names()
        ),
    )))
}

/// Why a zero default TTL with TimeWindowCompactionStrategy is warned of
/// (with its trailing space, as Cassandra's).
const ZERO_TTL_ON_TWCS_REASON: &str = "It is suspicious to use default_time_to_live set to 0 with such compaction strategy. Please keep in mind that data will not start to automatically expire after they are older than a respective compaction window unit of a certain size. Please set TTL for your INSERT or UPDATE statements if you expect data to be expired as table settings will not do it. ";

/// Why ALLOW FILTERING is refused, appended to the flag's failure.
const ALLOW_FILTERING_REASON: &str =
    "ALLOW FILTERING can potentially visit all the data in the table and have unpredictable performance.";

/// What a query that needs filtering is told when the user may not add
/// ALLOW FILTERING (`allow_filtering_enabled: false`).
pub const FILTERING_DISABLED_MESSAGE: &str = "Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. Executing this query despite the performance unpredictability with ALLOW FILTERING has been disabled by the allow_filtering_enabled property in cassandra.yaml";

impl Guardrails {
    pub const DEFAULT: Guardrails = Guardrails {
        keyspaces: Threshold::DISABLED,
        tables: Threshold::DISABLED,
        columns_per_table: Threshold::DISABLED,
        secondary_indexes_per_table: Threshold::DISABLED,
        materialized_views_per_table: Threshold::DISABLED,
        fields_per_udt: Threshold::DISABLED,
        page_size: Threshold::DISABLED,
        partition_keys_in_select: Threshold::DISABLED,
        in_select_cartesian_product: Threshold::DISABLED,
        partition_size: Threshold::DISABLED,
        partition_tombstones: Threshold::DISABLED,
        column_value_size: Threshold::DISABLED,
        collection_size: Threshold::DISABLED,
        items_per_collection: Threshold::DISABLED,
        vector_dimensions: Threshold::DISABLED,
        maximum_timestamp: TimestampOffsets::DISABLED,
        minimum_timestamp: TimestampOffsets::DISABLED,
        table_properties_warned: TableProperties::EMPTY,
        table_properties_ignored: TableProperties::EMPTY,
        table_properties_disallowed: TableProperties::EMPTY,
        read_consistency_levels_warned: ConsistencyLevels::EMPTY,
        read_consistency_levels_disallowed: ConsistencyLevels::EMPTY,
        write_consistency_levels_warned: ConsistencyLevels::EMPTY,
        write_consistency_levels_disallowed: ConsistencyLevels::EMPTY,
        minimum_replication_factor: Threshold::DISABLED,
        maximum_replication_factor: Threshold::DISABLED,
        data_disk_usage_percentage: Threshold::DISABLED,
        data_disk_usage_max_disk_size: None,
        user_timestamps_enabled: true,
        group_by_enabled: true,
        drop_truncate_table_enabled: true,
        drop_keyspace_enabled: true,
        secondary_indexes_enabled: true,
        compact_tables_enabled: true,
        alter_table_enabled: true,
        allow_filtering_enabled: true,
        simplestrategy_enabled: true,
        read_before_write_list_operations_enabled: true,
        uncompressed_tables_enabled: true,
        zero_ttl_on_twcs_warned: true,
        zero_ttl_on_twcs_enabled: true,
        vector_type_enabled: true,
    };

    /// CREATE KEYSPACE: `user_keyspaces` counts the new one.
    pub fn keyspaces(&self, user_keyspaces: usize, keyspace: &str) -> Verdict {
        above(
            "keyspaces",
            self.keyspaces,
            count(user_keyspaces),
            |t| {
                format!("Creating keyspace {keyspace}, current number of keyspaces {user_keyspaces} exceeds warning threshold of {t}.")
            },
            |t| {
                format!("Cannot have more than {t} keyspaces, aborting the creation of keyspace {keyspace}")
            },
        )
    }

    /// CREATE TABLE: `user_tables` (tables and views) counts the new one.
    pub fn tables(&self, user_tables: usize, table: &str) -> Verdict {
        above(
            "tables",
            self.tables,
            count(user_tables),
            |t| {
                format!("Creating table {table}, current number of tables {user_tables} exceeds warning threshold of {t}.")
            },
            |t| format!("Cannot have more than {t} tables, aborting the creation of table {table}"),
        )
    }

    /// CREATE TABLE (the columns declared) and ALTER TABLE ADD (the
    /// table's columns after it).
    pub fn columns_per_table(&self, columns: usize, table: &str) -> Verdict {
        above(
            "columns_per_table",
            self.columns_per_table,
            count(columns),
            |t| {
                format!("The table {table} has {columns} columns, this exceeds the warning threshold of {t}.")
            },
            |t| {
                format!("Tables cannot have more than {t} columns, but {columns} provided for table {table}")
            },
        )
    }

    /// CREATE INDEX: `indexes` counts the new one; `what` is
    /// `"<index> on table <table>"`, or `"on table <table>"` unnamed.
    pub fn secondary_indexes_per_table(&self, indexes: usize, what: &str) -> Verdict {
        above(
            "secondary_indexes_per_table",
            self.secondary_indexes_per_table,
            count(indexes),
            |t| {
                format!("Creating secondary index {what}, current number of indexes {indexes} exceeds warning threshold of {t}.")
            },
            |t| {
                format!("Tables cannot have more than {t} secondary indexes, aborting the creation of secondary index {what}")
            },
        )
    }

    /// CREATE MATERIALIZED VIEW: `views` counts the new one; `what` is
    /// `"<view> on table <base>"`.
    pub fn materialized_views_per_table(&self, views: usize, what: &str) -> Verdict {
        above(
            "materialized_views_per_table",
            self.materialized_views_per_table,
            count(views),
            |t| {
                format!("Creating materialized view {what}, current number of views {views} exceeds warning threshold of {t}.")
            },
            |t| {
                format!("Tables cannot have more than {t} materialized views, aborting the creation of materialized view {what}")
            },
        )
    }

    /// CREATE TYPE and ALTER TYPE ADD: the fields the type would have.
    pub fn fields_per_udt(&self, fields: usize, user_type: &str) -> Verdict {
        above(
            "fields_per_udt",
            self.fields_per_udt,
            count(fields),
            |t| {
                format!("The user type {user_type} has {fields} columns, this exceeds the warning threshold of {t}.")
            },
            |t| {
                format!("User types cannot have more than {t} columns, but {fields} provided for user type {user_type}.")
            },
        )
    }

    /// A paged SELECT's page size (rows).
    pub fn page_size(&self, page_size: usize, table: &str) -> Verdict {
        above(
            "page_size",
            self.page_size,
            count(page_size),
            |t| {
                format!("Query for table {table} with page size {page_size} exceeds warning threshold of {t}.")
            },
            |t| {
                format!("Aborting query for table {table}, page size {page_size} exceeds fail threshold of {t}.")
            },
        )
    }

    /// A SELECT with the partition key restricted by IN: the keys it reads.
    pub fn partition_keys_in_select(&self, keys: usize, table: &str) -> Verdict {
        above(
            "partition_keys_in_select",
            self.partition_keys_in_select,
            count(keys),
            |t| {
                format!("Query with partition keys in IN clause on table {table}, with number of partition keys {keys} exceeds warning threshold of {t}.")
            },
            |t| {
                format!("Aborting query with partition keys in IN clause on table {table}, number of partition keys {keys} exceeds fail threshold of {t}.")
            },
        )
    }

    /// The partition keys (`what`: "partition key") or clustering
    /// prefixes ("clustering key") the IN restrictions make so far.
    pub fn in_select_cartesian_product(&self, values: usize, what: &str) -> Verdict {
        above(
            "in_select_cartesian_product",
            self.in_select_cartesian_product,
            count(values),
            |t| {
                format!("The cartesian product of the IN restrictions on {what} produces {values} values, this exceeds warning threshold of {t}.")
            },
            |t| {
                format!("Aborting query because the cartesian product of the IN restrictions on {what} produces {values} values, this exceeds fail threshold of {t}.")
            },
        )
    }

    /// A written value, or a collection element's key, of `column`.
    pub fn column_value_size(&self, bytes: usize, column: &str) -> Verdict {
        let message = |kind: &str, t: i64| {
            format!("Value of column '{column}' has size {bytes}, this exceeds the {kind} threshold of {t}.")
        };
        above(
            "column_value_size",
            self.column_value_size,
            count(bytes),
            |t| message("warning", t),
            |t| message("failure", t),
        )
    }

    /// The size of the collection elements a write adds to `column`.
    pub fn collection_size(&self, bytes: usize, column: &str) -> Verdict {
        let message = |kind: &str, t: i64| {
            format!("Detected collection {column} of size {bytes}, this exceeds the {kind} threshold of {t}.")
        };
        above(
            "collection_size",
            self.collection_size,
            count(bytes),
            |t| message("warning", t),
            |t| message("failure", t),
        )
    }

    /// The number of collection elements a write adds to `column`.
    pub fn items_per_collection(&self, items: usize, column: &str) -> Verdict {
        let message = |kind: &str, t: i64| {
            format!("Detected collection {column} with {items} items, this exceeds the {kind} threshold of {t}.")
        };
        above(
            "items_per_collection",
            self.items_per_collection,
            count(items),
            |t| message("warning", t),
            |t| message("failure", t),
        )
    }

    /// A vector type's dimensions; `what` is "Column v" or "Field a".
    pub fn vector_dimensions(&self, dimensions: usize, what: &str) -> Verdict {
        let message = |kind: &str, t: i64| {
            format!("{what} has a vector of {dimensions} dimensions, this exceeds the {kind} threshold of {t}.")
        };
        above(
            "vector_dimensions",
            self.vector_dimensions,
            count(dimensions),
            |t| message("warning", t),
            |t| message("failure", t),
        )
    }

    /// The USING TIMESTAMP of an INSERT, UPDATE or DELETE on `table`
    /// against the maximum (now plus its offsets), then the minimum (now
    /// minus them), with Cassandra's reasons after the messages.
    pub fn timestamp_bounds(&self, timestamp: i64, now_micros: i64, table: &str) -> Verdict {
        let message = |side: &str, kind: &str, bound: i64, reason: &str| {
            let text = format!("The modification to table {table} has a timestamp {timestamp} {side} allowable {kind} threshold {bound}");
            let name = if side == "after the maximum" {
                "maximum_timestamp"
            } else {
                "minimum_timestamp"
            };
            format!("{}. {reason}", decorate(name, &text))
        };
        const LATE: &str =
            "Timestamps too far in the future can lead to data that can't be easily overwritten";
        const EARLY: &str =
            "Timestamps too far in the past can cause writes can be unexpectedly lost";
        let late = |offset: Option<i64>| {
            offset
                .map(|o| now_micros.saturating_add(o))
                .filter(|b| timestamp > *b)
        };
        let early = |offset: Option<i64>| {
            offset
                .map(|o| now_micros.saturating_sub(o))
                .filter(|b| timestamp < *b)
        };
        let (max, min) = (self.maximum_timestamp, self.minimum_timestamp);
        if let Some(bound) = late(max.fail_micros) {
            return Err(QueryError::invalid(message(
                "after the maximum",
                "failure",
                bound,
                LATE,
            )));
        }
        if let Some(bound) = late(max.warn_micros) {
            return Ok(Some(message("after the maximum", "warning", bound, LATE)));
        }
        if let Some(bound) = early(min.fail_micros) {
            return Err(QueryError::invalid(message(
                "before the minimum",
                "failure",
                bound,
                EARLY,
            )));
        }
        Ok(early(min.warn_micros)
            .map(|bound| message("before the minimum", "warning", bound, EARLY)))
    }

    /// Whether `maximum_timestamp` or `minimum_timestamp` is set.
    pub fn guards_timestamps(&self) -> bool {
        self.maximum_timestamp.is_enabled() || self.minimum_timestamp.is_enabled()
    }

    /// Whether `table_properties_*` names any option.
    fn guards_table_properties(&self) -> bool {
        !self.table_properties_warned.is_empty()
            || !self.table_properties_ignored.is_empty()
            || !self.table_properties_disallowed.is_empty()
    }

    /// The options a statement gives (`given`, lower-case names): the
    /// failure for a disallowed one, else the warnings and the names to
    /// drop from the statement (ignored ones).
    pub fn table_properties(&self, given: &[&str]) -> Result<(Vec<String>, Vec<String>)> {
        let name = "table_properties";
        let matching = |set: TableProperties| {
            let mut names: Vec<&str> = given.iter().copied().filter(|g| set.contains(g)).collect();
            names.sort_unstable();
            names.dedup();
            names
        };
        let refused = matching(self.table_properties_disallowed);
        if !refused.is_empty() {
            return Err(QueryError::invalid(decorate(
                name,
                &format!(
                    "Provided values [{}] are not allowed for Table Properties (disallowed values are: {})",
                    refused.join(", "),
                    self.table_properties_disallowed.java_text()
                ),
            )));
        }
        let mut warnings = Vec::new();
        let ignored = matching(self.table_properties_ignored);
        if !ignored.is_empty() {
            warnings.push(decorate(
                name,
                &format!(
                    "Ignoring provided values [{}] as they are not supported for Table Properties (ignored values are: {})",
                    ignored.join(", "),
                    self.table_properties_ignored.java_text()
                ),
            ));
        }
        let warned: Vec<&str> = matching(self.table_properties_warned)
            .into_iter()
            .filter(|w| !ignored.contains(w))
            .collect();
        if !warned.is_empty() {
            warnings.push(decorate(
                name,
                &format!(
                    "Provided values [{}] are not recommended for Table Properties (warned values are: {})",
                    warned.join(", "),
                    self.table_properties_warned.java_text()
                ),
            ));
        }
        Ok((warnings, ignored.into_iter().map(str::to_string).collect()))
    }

    /// A SELECT's consistency level.
    pub fn read_consistency_levels(&self, level: Consistency) -> Verdict {
        consistency_levels(
            "read",
            self.read_consistency_levels_warned,
            self.read_consistency_levels_disallowed,
            ConsistencyLevels::EMPTY.with(level),
        )
    }

    /// A write's consistency level and serial consistency level.
    pub fn write_consistency_levels(&self, level: Consistency, serial: Consistency) -> Verdict {
        consistency_levels(
            "write",
            self.write_consistency_levels_warned,
            self.write_consistency_levels_disallowed,
            ConsistencyLevels::EMPTY.with(level).with(serial),
        )
    }

    /// One replication factor of a user keyspace (of each data center for
    /// NetworkTopologyStrategy): the minimum's warning or failure first,
    /// then the maximum's.
    pub fn replication_factor(&self, rf: i64, keyspace: &str) -> Result<Vec<String>> {
        let message = |side: &str, kind: &str, t: i64| {
            format!("The keyspace {keyspace} has a replication factor of {rf}, {side} the {kind} threshold of {t}.")
        };
        let minimum = below(
            "minimum_replication_factor",
            self.minimum_replication_factor,
            rf,
            |kind, t| message("below", kind, t),
        )?;
        let maximum = above(
            "maximum_replication_factor",
            self.maximum_replication_factor,
            rf,
            |t| message("above", "warning", t),
            |t| message("above", "failure", t),
        )?;
        Ok(minimum.into_iter().chain(maximum).collect())
    }

    /// INSERT, UPDATE or DELETE `USING TIMESTAMP`.
    pub fn user_timestamps(&self) -> Result<()> {
        flag(
            "user_timestamps",
            self.user_timestamps_enabled,
            "User provided timestamps (USING TIMESTAMP)",
        )
    }

    /// SELECT ... GROUP BY.
    pub fn group_by(&self) -> Result<()> {
        flag("group_by", self.group_by_enabled, "GROUP BY functionality")
    }

    /// DROP TABLE and TRUNCATE.
    pub fn drop_truncate_table(&self) -> Result<()> {
        flag(
            "drop_truncate_table_enabled",
            self.drop_truncate_table_enabled,
            "DROP and TRUNCATE TABLE functionality",
        )
    }

    /// DROP KEYSPACE.
    pub fn drop_keyspace(&self) -> Result<()> {
        flag(
            "drop_keyspace_enabled",
            self.drop_keyspace_enabled,
            "DROP KEYSPACE functionality",
        )
    }

    /// CREATE INDEX of any kind (legacy, SAI, custom).
    pub fn secondary_indexes(&self) -> Result<()> {
        flag(
            "secondary_indexes",
            self.secondary_indexes_enabled,
            "Creating secondary indexes",
        )
    }

    /// CREATE TABLE ... WITH COMPACT STORAGE.
    pub fn compact_tables(&self) -> Result<()> {
        flag(
            "compact_tables",
            self.compact_tables_enabled,
            "Creation of new COMPACT STORAGE tables",
        )
    }

    /// ALTER TABLE ADD, DROP or RENAME (not WITH).
    pub fn alter_table(&self) -> Result<()> {
        flag(
            "alter_table",
            self.alter_table_enabled,
            "ALTER TABLE changing columns",
        )
    }

    /// A list operation that reads the stored list: `operation` is
    /// "Setting of list items by index requiring read before write", ...
    pub fn read_before_write_list_operations(&self, operation: &str) -> Result<()> {
        flag(
            "read_before_write_list_operations",
            self.read_before_write_list_operations_enabled,
            operation,
        )
    }

    /// A table whose compression is disabled.
    pub fn uncompressed_tables(&self) -> Result<()> {
        flag(
            "uncompressed_tables_enabled",
            self.uncompressed_tables_enabled,
            "Uncompressed table",
        )
    }

    /// TimeWindowCompactionStrategy with `default_time_to_live` 0 in the
    /// options of CREATE or ALTER TABLE: the failure, or the warning, both
    /// with Cassandra's reason after them.
    pub fn zero_ttl_on_twcs(&self) -> Verdict {
        let decorated = |verdict: &str| {
            let message = format!("0 default_time_to_live on a table with TimeWindowCompactionStrategy compaction strategy is {verdict}");
            format!(
                "{}. {ZERO_TTL_ON_TWCS_REASON}",
                decorate("zero_ttl_on_twcs", &message)
            )
        };
        if !self.zero_ttl_on_twcs_enabled {
            return Err(QueryError::invalid(decorated("not allowed")));
        }
        Ok(self
            .zero_ttl_on_twcs_warned
            .then(|| decorated("not recommended")))
    }

    /// SELECT ... ALLOW FILTERING on a table outside the system keyspaces.
    pub fn allow_filtering(&self) -> Result<()> {
        flag(
            "allow_filtering",
            self.allow_filtering_enabled,
            "Querying with ALLOW FILTERING",
        )
        .map_err(|e| QueryError::invalid(format!("{}. {ALLOW_FILTERING_REASON}", e)))
    }

    /// CREATE or ALTER KEYSPACE with `'class': 'SimpleStrategy'` (the short
    /// name as written; Cassandra does not look at the full class name).
    pub fn simplestrategy(&self) -> Result<()> {
        flag(
            "simplestrategy",
            self.simplestrategy_enabled,
            "SimpleStrategy",
        )
    }

    /// Whether a guardrail `StatementGuard` checks for `statement` is set
    /// (SELECT's are checked where it is planned, `guards_select`).
    pub(crate) fn guards(&self, statement: &Statement) -> bool {
        let replication = self.minimum_replication_factor.is_enabled()
            || self.maximum_replication_factor.is_enabled()
            || !self.simplestrategy_enabled;
        match statement {
            Statement::CreateKeyspace(_) => self.keyspaces.is_enabled() || replication,
            Statement::AlterKeyspace(_) => replication,
            Statement::CreateTable(_) => {
                self.tables.is_enabled()
                    || self.columns_per_table.is_enabled()
                    || !self.compact_tables_enabled
                    || self.guards_vectors()
                    || self.guards_table_options()
                    || self.guards_table_properties()
            }
            Statement::AlterTable(_) => {
                !self.alter_table_enabled
                    || self.columns_per_table.is_enabled()
                    || self.guards_vectors()
                    || self.guards_table_options()
                    || self.guards_table_properties()
            }
            Statement::CreateType(_) | Statement::AlterType(_) => {
                self.fields_per_udt.is_enabled() || self.guards_vectors()
            }
            Statement::CreateIndex(_) => {
                !self.secondary_indexes_enabled || self.secondary_indexes_per_table.is_enabled()
            }
            Statement::CreateMaterializedView(_) => {
                self.materialized_views_per_table.is_enabled() || self.guards_table_properties()
            }
            Statement::AlterMaterializedView(_) => self.guards_table_properties(),
            Statement::Drop(_) => !self.drop_keyspace_enabled || !self.drop_truncate_table_enabled,
            Statement::Truncate(_) => !self.drop_truncate_table_enabled,
            Statement::Insert(_)
            | Statement::Update(_)
            | Statement::Delete(_)
            | Statement::Batch(_) => {
                !self.user_timestamps_enabled && statement_uses_timestamp(statement)
            }
            _ => false,
        }
    }

    /// Whether a guardrail on vector types is set.
    fn guards_vectors(&self) -> bool {
        self.vector_dimensions.is_enabled() || !self.vector_type_enabled
    }

    /// Whether a guardrail on table options is set (the zero TTL one is
    /// by default: it warns).
    fn guards_table_options(&self) -> bool {
        !self.uncompressed_tables_enabled
            || self.zero_ttl_on_twcs_warned
            || !self.zero_ttl_on_twcs_enabled
    }

    /// Whether any guardrail of a SELECT is set: a prepared point read
    /// then takes the general path, which checks them.
    pub fn guards_select(&self) -> bool {
        self.page_size.is_enabled()
            || self.partition_keys_in_select.is_enabled()
            || self.in_select_cartesian_product.is_enabled()
            || !self.read_consistency_levels_warned.is_empty()
            || !self.read_consistency_levels_disallowed.is_empty()
            || !self.allow_filtering_enabled
            || !self.group_by_enabled
    }

    /// Whether a guardrail on what INSERT, UPDATE and DELETE write is set
    /// (`modify::written`, and the IN products of their WHERE clause).
    pub fn guards_written_values(&self) -> bool {
        self.column_value_size.is_enabled()
            || self.collection_size.is_enabled()
            || self.items_per_collection.is_enabled()
            || self.in_select_cartesian_product.is_enabled()
    }
}

fn user_keyspaces(schema: &Schema) -> impl Iterator<Item = &Keyspace> {
    schema
        .keyspaces
        .values()
        .filter(|k| !is_system_keyspace(&k.name) && !k.is_virtual)
        .map(|k| &**k)
}

/// The class a keyspace statement's replication map names, as written.
fn replication_class(properties: &[Property]) -> Option<&str> {
    let replication = properties
        .iter()
        .find(|p| p.name.as_str() == "replication")?;
    let PropertyValue::Map(entries) = &replication.value else {
        return None;
    };
    entries.iter().find_map(|(k, v)| match (k, v) {
        (Literal::String(k), Literal::String(v)) if k == "class" => Some(v.as_str()),
        _ => None,
    })
}

fn simplestrategy(g: &Guardrails, properties: &[Property]) -> Result<()> {
    match replication_class(properties) {
        Some("SimpleStrategy") => g.simplestrategy(),
        _ => Ok(()),
    }
}

fn uses_timestamp(using: &[UsingParam]) -> bool {
    using.iter().any(|u| matches!(u, UsingParam::Timestamp(_)))
}

/// Whether a modification says `USING TIMESTAMP` (a BATCH's own does not
/// count, as in Cassandra) and meets the guardrail: a conditional one is
/// refused first for having a timestamp at all (`Cannot provide custom
/// timestamp for conditional updates`).
pub(crate) fn modification_uses_timestamp(m: &Modification) -> bool {
    match m {
        Modification::Insert(i) => insert_timestamped(i),
        Modification::Update(u) => update_timestamped(u),
        Modification::Delete(d) => delete_timestamped(d),
    }
}

fn insert_timestamped(i: &Insert) -> bool {
    !i.if_not_exists && uses_timestamp(&i.using)
}

fn update_timestamped(u: &Update) -> bool {
    u.condition.is_none() && uses_timestamp(&u.using)
}

fn delete_timestamped(d: &Delete) -> bool {
    d.condition.is_none() && uses_timestamp(&d.using)
}

/// `modification_uses_timestamp` of a statement (false for any other).
fn statement_uses_timestamp(statement: &Statement) -> bool {
    match statement {
        Statement::Insert(i) => insert_timestamped(i),
        Statement::Update(u) => update_timestamped(u),
        Statement::Delete(d) => delete_timestamped(d),
        Statement::Batch(b) => b.statements.iter().any(modification_uses_timestamp),
        _ => false,
    }
}

/// The table options a statement gives: CREATE TABLE, ALTER TABLE ...
/// WITH, CREATE and ALTER MATERIALIZED VIEW.
fn table_options(statement: &Statement) -> Option<&[Property]> {
    match statement {
        Statement::CreateTable(s) => Some(&s.options.properties),
        Statement::AlterTable(s) => match &s.action {
            AlterTableAction::With(properties) => Some(properties),
            _ => None,
        },
        Statement::CreateMaterializedView(s) => Some(&s.options.properties),
        Statement::AlterMaterializedView(s) => Some(&s.properties),
        _ => None,
    }
}

/// `table_properties_*` on the options of a statement, checked first
/// (Cassandra's `validate`): the warnings and the options to ignore.
pub(crate) fn table_properties(
    g: &Guardrails,
    statement: &Statement,
) -> Result<(Vec<String>, Vec<String>)> {
    let Some(properties) = table_options(statement).filter(|_| g.guards_table_properties()) else {
        return Ok((Vec::new(), Vec::new()));
    };
    let given: Vec<&str> = properties.iter().map(|p| p.name.as_str()).collect();
    g.table_properties(&given)
}

/// The statement without the options named in `ignored`.
pub(crate) fn without_options(statement: &Statement, ignored: &[String]) -> Statement {
    let keep = |properties: &mut Vec<Property>| {
        properties.retain(|p| !ignored.iter().any(|i| i == p.name.as_str()));
    };
    let mut statement = statement.clone();
    match &mut statement {
        Statement::CreateTable(s) => keep(&mut s.options.properties),
        Statement::AlterTable(s) => {
            if let AlterTableAction::With(properties) = &mut s.action {
                keep(properties);
            }
        }
        Statement::CreateMaterializedView(s) => keep(&mut s.options.properties),
        Statement::AlterMaterializedView(s) => keep(&mut s.properties),
        _ => {}
    }
    statement
}

/// Cassandra's checks before a statement runs (its `validate` and the
/// first steps of its `apply`), for an ordinary user.
pub(crate) fn before_run(
    g: &Guardrails,
    statement: &Statement,
    schema: &Schema,
    session_keyspace: Option<&str>,
) -> Result<Vec<String>> {
    let none = |()| Vec::new();
    match statement {
        Statement::CreateKeyspace(s) => {
            let warnings = g.keyspaces(user_keyspaces(schema).count() + 1, s.name.as_str())?;
            simplestrategy(g, &s.properties)?;
            Ok(warnings.into_iter().collect())
        }
        Statement::AlterKeyspace(s) => simplestrategy(g, &s.properties).map(none),
        Statement::CreateTable(s) => create_table(g, s, schema, session_keyspace),
        Statement::AlterTable(s) => {
            let mut warnings = added_vectors(g, s)?;
            if let AlterTableAction::With(properties) = &s.action {
                let keyspace = keyspace_of(&s.table, session_keyspace)?;
                warnings.extend(zero_ttl_on_twcs(g, keyspace, properties)?);
            }
            alter_table(g, s, schema, session_keyspace)?;
            Ok(warnings)
        }
        Statement::CreateType(s) => {
            let mut warnings: Vec<String> = g
                .fields_per_udt(s.fields.len(), s.name.name.as_str())?
                .into_iter()
                .collect();
            for (field, ty) in &s.fields {
                warnings.extend(vectors(g, ty, &format!("Field {}", field.as_str()))?);
            }
            Ok(warnings)
        }
        Statement::CreateIndex(_) => g.secondary_indexes().map(none),
        Statement::Drop(d) => match d.kind {
            DropKind::Keyspace => g.drop_keyspace().map(none),
            DropKind::Table => g.drop_truncate_table().map(none),
            _ => Ok(Vec::new()),
        },
        Statement::Truncate(name) => truncate(g, name, schema, session_keyspace).map(none),
        _ if statement_uses_timestamp(statement) => g.user_timestamps().map(none),
        _ => Ok(Vec::new()),
    }
}

/// CREATE TABLE: the columns declared, the tables and views of user
/// keyspaces with the new one, COMPACT STORAGE.
fn create_table(
    g: &Guardrails,
    s: &CreateTable,
    schema: &Schema,
    session_keyspace: Option<&str>,
) -> Result<Vec<String>> {
    let name = s.name.name.as_str();
    let mut warnings = Vec::new();
    warnings.extend(g.columns_per_table(s.columns.len(), name)?);
    let tables: usize = user_keyspaces(schema).map(|k| k.tables.len()).sum();
    warnings.extend(g.tables(tables + 1, name)?);
    if s.options.compact_storage {
        g.compact_tables()?;
    }
    let keyspace = keyspace_of(&s.name, session_keyspace)?;
    warnings.extend(zero_ttl_on_twcs(g, keyspace, &s.options.properties)?);
    for column in &s.columns {
        let what = format!("Column {}", column.name.as_str());
        warnings.extend(vectors(g, &column.ty, &what)?);
    }
    Ok(warnings)
}

/// `zero_ttl_on_twcs` on the options a statement gives (Cassandra looks
/// at them alone: an ALTER that sets only the TTL to 0 on a TWCS table
/// passes), outside the system keyspaces.
fn zero_ttl_on_twcs(g: &Guardrails, keyspace: &str, properties: &[Property]) -> Verdict {
    let named = |name: &str| properties.iter().find(|p| p.name.as_str() == name);
    let zero_ttl = named("default_time_to_live").is_none_or(|p| {
        matches!(&p.value, PropertyValue::Constant(Literal::Integer(n)) if n.parse::<i64>() == Ok(0))
    });
    let twcs = named("compaction").is_some_and(|p| match &p.value {
        PropertyValue::Map(entries) => entries.iter().any(|(k, v)| {
            matches!((k, v), (Literal::String(k), Literal::String(v)) if k == "class"
                && (v == "TimeWindowCompactionStrategy"
                    || v == "org.apache.cassandra.db.compaction.TimeWindowCompactionStrategy"))
        }),
        _ => false,
    });
    if !zero_ttl || !twcs || is_system_keyspace(keyspace) {
        return Ok(None);
    }
    g.zero_ttl_on_twcs()
}

/// CREATE TABLE or ALTER TABLE ... WITH: the table it makes must be
/// compressed when `uncompressed_tables_enabled` is false.
fn uncompressed(g: &Guardrails, next: &Schema, keyspace: &str, table: &str) -> Result<()> {
    let disabled = next
        .table(keyspace, table)
        .is_some_and(|t| t.params.compression.get("enabled").map(String::as_str) == Some("false"));
    if disabled {
        g.uncompressed_tables()?;
    }
    Ok(())
}

/// ALTER TABLE ADD: the vectors of the added columns (checked before the
/// table is looked up, as Cassandra's `validate`).
fn added_vectors(g: &Guardrails, s: &AlterTable) -> Result<Vec<String>> {
    let AlterTableAction::Add { columns, .. } = &s.action else {
        return Ok(Vec::new());
    };
    let mut warnings = Vec::new();
    for column in columns {
        let what = format!("Column {}", column.name.as_str());
        warnings.extend(vectors(g, &column.ty, &what)?);
    }
    Ok(warnings)
}

/// `vector_type_enabled` (`Column v is not allowed`), then
/// `vector_dimensions`, on each vector in a type as written: a collection's
/// keys before its values, a tuple's components in order, not the
/// elements of a vector (Cassandra's `CQL3Type.Raw.validate`).
fn vectors(g: &Guardrails, ty: &TypeExpr, what: &str) -> Result<Vec<String>> {
    let mut dimensions = Vec::new();
    vector_dimensions_of(ty, &mut dimensions);
    let mut warnings = Vec::new();
    for d in dimensions {
        flag("vector_type_enabled", g.vector_type_enabled, what)?;
        warnings.extend(g.vector_dimensions(d as usize, what)?);
    }
    Ok(warnings)
}

fn vector_dimensions_of(ty: &TypeExpr, out: &mut Vec<u32>) {
    match ty {
        TypeExpr::Vector(_, d) => out.push(*d),
        TypeExpr::List(e) | TypeExpr::Set(e) | TypeExpr::Frozen(e) => vector_dimensions_of(e, out),
        TypeExpr::Map(k, v) => {
            vector_dimensions_of(k, out);
            vector_dimensions_of(v, out);
        }
        TypeExpr::Tuple(items) => items.iter().for_each(|t| vector_dimensions_of(t, out)),
        TypeExpr::Native(_) | TypeExpr::Udt { .. } | TypeExpr::Custom(_) => {}
    }
}

/// ALTER TABLE ADD, DROP or RENAME of a table that exists (a missing one
/// keeps its own error, as in Cassandra).
fn alter_table(
    g: &Guardrails,
    s: &AlterTable,
    schema: &Schema,
    session_keyspace: Option<&str>,
) -> Result<()> {
    let changes_columns = matches!(
        s.action,
        AlterTableAction::Add { .. }
            | AlterTableAction::Drop { .. }
            | AlterTableAction::Rename { .. }
    );
    let keyspace = keyspace_of(&s.table, session_keyspace)?;
    if changes_columns && schema.table(keyspace, s.table.name.as_str()).is_some() {
        g.alter_table()?;
    }
    Ok(())
}

/// TRUNCATE of a table that exists and is not a view (Cassandra's validate
/// refuses the others first).
fn truncate(
    g: &Guardrails,
    name: &QualifiedName,
    schema: &Schema,
    session_keyspace: Option<&str>,
) -> Result<()> {
    let keyspace = keyspace_of(name, session_keyspace)?;
    let table = schema.table(keyspace, name.name.as_str());
    if table.is_some_and(|t| !t.is_view()) {
        g.drop_truncate_table()?;
    }
    Ok(())
}

/// The replication factors of a keyspace's replication map: the
/// `replication_factor` of SimpleStrategy or each data center's (the full
/// replicas of a `full/transient` factor).
fn replication_factors(replication: &BTreeMap<String, String>) -> Vec<i64> {
    replication
        .iter()
        .filter(|(k, _)| *k != "class")
        .filter_map(|(_, v)| v.split('/').next()?.trim().parse().ok())
        .collect()
}

/// Cassandra's checks on what a schema change makes (the later steps of
/// its `apply`), given the schema `next` it would publish.
pub(crate) fn after_change(
    g: &Guardrails,
    statement: &Statement,
    next: &Schema,
    session_keyspace: Option<&str>,
) -> Result<Vec<String>> {
    let warning = match statement {
        Statement::CreateKeyspace(s) => return keyspace_replication(g, next, s.name.as_str()),
        Statement::AlterKeyspace(s) => return keyspace_replication(g, next, s.name.as_str()),
        Statement::AlterTable(s) if matches!(s.action, AlterTableAction::Add { .. }) => {
            let keyspace = keyspace_of(&s.table, session_keyspace)?;
            let name = s.table.name.as_str();
            let columns = next.table(keyspace, name).map(|t| t.columns.len());
            columns.map_or(Ok(None), |n| g.columns_per_table(n, name))?
        }
        Statement::AlterType(s) => return alter_type_add(g, s, next, session_keyspace),
        Statement::CreateTable(s) => {
            let keyspace = keyspace_of(&s.name, session_keyspace)?;
            uncompressed(g, next, keyspace, s.name.name.as_str())?;
            None
        }
        Statement::AlterTable(s) if matches!(s.action, AlterTableAction::With(_)) => {
            let keyspace = keyspace_of(&s.table, session_keyspace)?;
            uncompressed(g, next, keyspace, s.table.name.as_str())?;
            None
        }
        Statement::CreateIndex(s) => index_count(g, s, next, session_keyspace)?,
        Statement::CreateMaterializedView(s) => view_count(g, s, next, session_keyspace)?,
        _ => None,
    };
    Ok(warning.into_iter().collect())
}

/// ALTER TYPE ADD: the type's fields with the new one, then its vectors.
fn alter_type_add(
    g: &Guardrails,
    s: &AlterType,
    next: &Schema,
    session_keyspace: Option<&str>,
) -> Result<Vec<String>> {
    let AlterTypeAction::Add { field, ty, .. } = &s.action else {
        return Ok(Vec::new());
    };
    let keyspace = keyspace_of(&s.name, session_keyspace)?;
    let name = s.name.name.as_str();
    let Some(user_type) = next.keyspace(keyspace).and_then(|k| k.user_type(name)) else {
        return Ok(Vec::new());
    };
    let mut warnings: Vec<String> = g
        .fields_per_udt(user_type.fields.len(), name)?
        .into_iter()
        .collect();
    warnings.extend(vectors(g, ty, &format!("Field {}", field.as_str()))?);
    Ok(warnings)
}

/// CREATE INDEX: the table's indexes with the new one.
fn index_count(
    g: &Guardrails,
    s: &CreateIndex,
    next: &Schema,
    session_keyspace: Option<&str>,
) -> Verdict {
    let keyspace = keyspace_of(&s.table, session_keyspace)?;
    let table = s.table.name.as_str();
    let Some(t) = next.table(keyspace, table) else {
        return Ok(None);
    };
    let what = match &s.name {
        Some(index) => format!("{} on table {table}", index.as_str()),
        None => format!("on table {table}"),
    };
    g.secondary_indexes_per_table(t.indexes.len(), &what)
}

/// CREATE MATERIALIZED VIEW: the base table's views with the new one.
fn view_count(
    g: &Guardrails,
    s: &CreateMaterializedView,
    next: &Schema,
    session_keyspace: Option<&str>,
) -> Verdict {
    let base_keyspace = keyspace_of(&s.base_table, session_keyspace)?;
    let keyspace = s
        .name
        .keyspace
        .as_ref()
        .map_or(base_keyspace, |k| k.as_str());
    let base = s.base_table.name.as_str();
    let Some(ks) = next.keyspace(keyspace) else {
        return Ok(None);
    };
    let views = crate::schema::views_of(ks, base).count();
    let what = format!("{} on table {base}", s.name.name.as_str());
    g.materialized_views_per_table(views, &what)
}

fn keyspace_replication(g: &Guardrails, next: &Schema, keyspace: &str) -> Result<Vec<String>> {
    if is_system_keyspace(keyspace) {
        return Ok(Vec::new());
    }
    let Some(ks) = next.keyspace(keyspace) else {
        return Ok(Vec::new());
    };
    let mut warnings = Vec::new();
    for rf in replication_factors(&ks.replication) {
        warnings.extend(g.replication_factor(rf, keyspace)?);
    }
    Ok(warnings)
}

/// A SELECT's checks made before it reads (ALLOW FILTERING outside the
/// system keyspaces, GROUP BY, the consistency level, the IN products and
/// the partition keys of an IN), with the warnings they give. `keys_in` is
/// the number of partition keys when the partition key is restricted by IN.
pub(crate) fn select_checks(
    g: &Guardrails,
    select: &rocksandra_cql::ast::Select,
    table: &crate::schema::Table,
    read: (&crate::restrict::Restrictions, Consistency),
    keys_in: Option<usize>,
) -> Result<Vec<String>> {
    let (restrictions, consistency) = read;
    allow_filtering_keyword(g, select, table)?;
    if !select.group_by.is_empty() {
        g.group_by()?;
    }
    let mut warnings = Vec::new();
    warnings.extend(g.read_consistency_levels(consistency)?);
    warnings.extend(in_products(
        g,
        &restrictions.partition_in_sizes,
        "partition key",
    )?);
    if let Some(keys) = keys_in {
        warnings.extend(g.partition_keys_in_select(keys, &table.name)?);
    }
    warnings.extend(in_products(
        g,
        &restrictions.clustering_in_sizes,
        "clustering key",
    )?);
    Ok(warnings)
}

/// `allow_filtering_enabled` on a SELECT written with ALLOW FILTERING
/// outside the system keyspaces (at PREPARE and when it runs).
pub(crate) fn allow_filtering_keyword(
    g: &Guardrails,
    select: &rocksandra_cql::ast::Select,
    table: &crate::schema::Table,
) -> Result<()> {
    if select.allow_filtering && !is_system_keyspace(&table.keyspace) {
        g.allow_filtering()?;
    }
    Ok(())
}

/// `in_select_cartesian_product` on the running sizes of an IN product
/// (`Restrictions::partition_in_sizes`): a warning for each size over the
/// warn threshold, as Cassandra checks after each restriction.
pub(crate) fn in_products(g: &Guardrails, sizes: &[usize], what: &str) -> Result<Vec<String>> {
    let mut warnings = Vec::new();
    for size in sizes {
        warnings.extend(g.in_select_cartesian_product(*size, what)?);
    }
    Ok(warnings)
}

/// The page size check of a SELECT Cassandra pages: an aggregate or a
/// GROUP BY always, otherwise one whose LIMIT (none: unbounded; none
/// either when rows are sorted after the read) exceeds the page size.
pub(crate) fn paged_select(
    g: &Guardrails,
    page_size: Option<usize>,
    limit: Option<usize>,
    aggregate: bool,
    table: &str,
) -> Verdict {
    let Some(page_size) = page_size.filter(|p| *p > 0) else {
        return Ok(None);
    };
    let paged = aggregate || limit.is_none_or(|l| l > page_size);
    if !paged {
        return Ok(None);
    }
    g.page_size(page_size, table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_violations_are_worded_as_cassandra_5_0_6_logged_them() {
        // Cassandra 5.0.6's log, its " on sstable PATH" aside.
        assert_eq!(
            partition_violation("pg.t:1", false, (3064, 2048), false),
            "Guardrail partition_size violated: Partition pg.t:1 has size 3064, this exceeds \
             the warning threshold of 2048. Too large partitions can cause performance problems."
        );
        assert_eq!(
            partition_violation("pg.t:4", true, (25, 20), true),
            "Guardrail partition_tombstones violated: Partition pg.t:4 has 25 tombstones, this \
             exceeds the failure threshold of 20. Partitions with too many tombstones can cause \
             performance problems."
        );
    }

    fn threshold(warn: i64, fail: i64) -> Threshold {
        Threshold { warn, fail }
    }

    fn message(e: QueryError) -> String {
        e.to_string()
    }

    #[test]
    fn defaults_pass_everything() {
        let g = Guardrails::default();
        assert_eq!(g.keyspaces(1_000, "ks").unwrap(), None);
        assert_eq!(g.page_size(1_000_000, "t").unwrap(), None);
        assert!(g.replication_factor(0, "ks").unwrap().is_empty());
        assert!(g.user_timestamps().is_ok() && g.allow_filtering().is_ok());
        assert!(!g.guards_select());
    }

    #[test]
    fn a_maximum_warns_above_warn_and_fails_above_fail() {
        let g = Guardrails {
            tables: threshold(2, 3),
            ..Guardrails::default()
        };
        assert_eq!(g.tables(2, "t").unwrap(), None);
        assert_eq!(
            g.tables(3, "b").unwrap().as_deref(),
            Some("Guardrail tables violated: Creating table b, current number of tables 3 exceeds warning threshold of 2.")
        );
        assert_eq!(
            message(g.tables(4, "c").unwrap_err()),
            "Guardrail tables violated: Cannot have more than 3 tables, aborting the creation of table c"
        );
    }

    #[test]
    fn one_side_of_a_threshold_may_be_disabled() {
        let fail_only = Guardrails {
            columns_per_table: threshold(-1, 4),
            ..Guardrails::default()
        };
        assert_eq!(fail_only.columns_per_table(4, "t").unwrap(), None);
        assert_eq!(
            message(fail_only.columns_per_table(5, "t").unwrap_err()),
            "Guardrail columns_per_table violated: Tables cannot have more than 4 columns, but 5 provided for table t"
        );
        let warn_only = Guardrails {
            page_size: threshold(100, -1),
            ..Guardrails::default()
        };
        assert_eq!(
            warn_only.page_size(1_000_000, "t").unwrap().as_deref(),
            Some("Guardrail page_size violated: Query for table t with page size 1000000 exceeds warning threshold of 100.")
        );
        assert!(warn_only.guards_select());
    }

    #[test]
    fn replication_factor_has_a_minimum_and_a_maximum() {
        let g = Guardrails {
            minimum_replication_factor: threshold(2, 1),
            maximum_replication_factor: threshold(2, 3),
            ..Guardrails::default()
        };
        assert_eq!(
            g.replication_factor(1, "ks2").unwrap(),
            vec!["Guardrail minimum_replication_factor violated: The keyspace ks2 has a replication factor of 1, below the warning threshold of 2."]
        );
        assert!(g.replication_factor(2, "ks2").unwrap().is_empty());
        assert_eq!(
            g.replication_factor(3, "ks2").unwrap(),
            vec!["Guardrail maximum_replication_factor violated: The keyspace ks2 has a replication factor of 3, above the warning threshold of 2."]
        );
        assert_eq!(
            message(g.replication_factor(4, "ks2").unwrap_err()),
            "Guardrail maximum_replication_factor violated: The keyspace ks2 has a replication factor of 4, above the failure threshold of 3."
        );
        assert_eq!(
            message(g.replication_factor(0, "ks2").unwrap_err()),
            "Guardrail minimum_replication_factor violated: The keyspace ks2 has a replication factor of 0, below the failure threshold of 1."
        );
    }

    #[test]
    fn flags_refuse_with_the_feature_named() {
        let g = Guardrails {
            user_timestamps_enabled: false,
            group_by_enabled: false,
            drop_truncate_table_enabled: false,
            drop_keyspace_enabled: false,
            secondary_indexes_enabled: false,
            compact_tables_enabled: false,
            alter_table_enabled: false,
            allow_filtering_enabled: false,
            simplestrategy_enabled: false,
            ..Guardrails::default()
        };
        let cases = [
            (g.user_timestamps(), "Guardrail user_timestamps violated: User provided timestamps (USING TIMESTAMP) is not allowed"),
            (g.group_by(), "Guardrail group_by violated: GROUP BY functionality is not allowed"),
            (g.drop_truncate_table(), "Guardrail drop_truncate_table_enabled violated: DROP and TRUNCATE TABLE functionality is not allowed"),
            (g.drop_keyspace(), "Guardrail drop_keyspace_enabled violated: DROP KEYSPACE functionality is not allowed"),
            (g.secondary_indexes(), "Guardrail secondary_indexes violated: Creating secondary indexes is not allowed"),
            (g.compact_tables(), "Guardrail compact_tables violated: Creation of new COMPACT STORAGE tables is not allowed"),
            (g.alter_table(), "Guardrail alter_table violated: ALTER TABLE changing columns is not allowed"),
            (g.allow_filtering(), "Guardrail allow_filtering violated: Querying with ALLOW FILTERING is not allowed. ALLOW FILTERING can potentially visit all the data in the table and have unpredictable performance."),
            (g.simplestrategy(), "Guardrail simplestrategy violated: SimpleStrategy is not allowed"),
        ];
        for (result, expected) in cases {
            assert_eq!(message(result.unwrap_err()), expected);
        }
    }

    #[test]
    fn written_values_word_their_messages_as_cassandra() {
        let g = Guardrails {
            column_value_size: threshold(10, 40),
            collection_size: threshold(50, 100),
            items_per_collection: threshold(2, 4),
            ..Guardrails::default()
        };
        assert_eq!(g.column_value_size(10, "v").unwrap(), None);
        assert_eq!(g.column_value_size(12, "v").unwrap().as_deref(), Some("Guardrail column_value_size violated: Value of column 'v' has size 12, this exceeds the warning threshold of 10."));
        assert_eq!(message(g.column_value_size(41, "v").unwrap_err()), "Guardrail column_value_size violated: Value of column 'v' has size 41, this exceeds the failure threshold of 40.");
        assert_eq!(g.collection_size(72, "s").unwrap().as_deref(), Some("Guardrail collection_size violated: Detected collection s of size 72, this exceeds the warning threshold of 50."));
        assert_eq!(message(g.items_per_collection(5, "m").unwrap_err()), "Guardrail items_per_collection violated: Detected collection m with 5 items, this exceeds the failure threshold of 4.");
        assert!(g.guards_written_values() && !g.guards_select());
    }

    #[test]
    fn consistency_levels_are_listed_in_cassandras_order() {
        let g = Guardrails {
            read_consistency_levels_warned: ConsistencyLevels::EMPTY.with(Consistency::One),
            read_consistency_levels_disallowed: ConsistencyLevels::EMPTY
                .with(Consistency::All)
                .with(Consistency::Two),
            write_consistency_levels_disallowed: ConsistencyLevels::EMPTY
                .with(Consistency::LocalSerial)
                .with(Consistency::All),
            ..Guardrails::default()
        };
        assert_eq!(
            g.read_consistency_levels(Consistency::LocalOne).unwrap(),
            None
        );
        assert_eq!(g.read_consistency_levels(Consistency::One).unwrap().as_deref(), Some("Guardrail read_consistency_levels violated: Provided values [ONE] are not recommended for read consistency levels (warned values are: [ONE])"));
        assert_eq!(message(g.read_consistency_levels(Consistency::All).unwrap_err()), "Guardrail read_consistency_levels violated: Provided values [ALL] are not allowed for read consistency levels (disallowed values are: [TWO, ALL])");
        assert_eq!(
            g.write_consistency_levels(Consistency::One, Consistency::Serial)
                .unwrap(),
            None
        );
        assert_eq!(message(g.write_consistency_levels(Consistency::All, Consistency::LocalSerial).unwrap_err()), "Guardrail write_consistency_levels violated: Provided values [ALL, LOCAL_SERIAL] are not allowed for write consistency levels (disallowed values are: [ALL, LOCAL_SERIAL])");
        assert!(g.guards_select() && !g.guards_written_values());
    }

    #[test]
    fn in_products_warn_at_each_restriction_over_the_threshold() {
        let g = Guardrails {
            in_select_cartesian_product: threshold(4, 9),
            ..Guardrails::default()
        };
        let warning = "Guardrail in_select_cartesian_product violated: The cartesian product of the IN restrictions on partition key produces 5 values, this exceeds warning threshold of 4.";
        assert_eq!(
            in_products(&g, &[5, 5], "partition key").unwrap(),
            vec![warning, warning]
        );
        assert!(in_products(&g, &[2, 4], "partition key")
            .unwrap()
            .is_empty());
        assert_eq!(message(in_products(&g, &[3, 12], "clustering key").unwrap_err()), "Guardrail in_select_cartesian_product violated: Aborting query because the cartesian product of the IN restrictions on clustering key produces 12 values, this exceeds fail threshold of 9.");
    }

    #[test]
    fn vector_dimensions_are_found_inside_collections_and_tuples() {
        use rocksandra_data::types::NativeType;
        let g = Guardrails {
            vector_dimensions: threshold(3, 5),
            ..Guardrails::default()
        };
        let vector = |d| TypeExpr::Vector(Box::new(TypeExpr::Native(NativeType::Float)), d);
        let nested = TypeExpr::Frozen(Box::new(TypeExpr::Map(
            Box::new(vector(4)),
            Box::new(TypeExpr::Tuple(vec![vector(2), vector(5)])),
        )));
        let warning = |d| {
            format!("Guardrail vector_dimensions violated: Column v has a vector of {d} dimensions, this exceeds the warning threshold of 3.")
        };
        assert_eq!(
            vectors(&g, &nested, "Column v").unwrap(),
            vec![warning(4), warning(5)]
        );
        assert_eq!(message(vectors(&g, &vector(6), "Field a").unwrap_err()), "Guardrail vector_dimensions violated: Field a has a vector of 6 dimensions, this exceeds the failure threshold of 5.");
        let off = Guardrails {
            vector_type_enabled: false,
            ..g
        };
        assert_eq!(
            message(vectors(&off, &nested, "Column v").unwrap_err()),
            "Guardrail vector_type_enabled violated: Column v is not allowed"
        );
    }

    #[test]
    fn table_properties_print_their_sets_as_java_does() {
        let set = |names: &[&str]| {
            names
                .iter()
                .fold(TableProperties::EMPTY, |s, n| s.with(n).expect("an option"))
        };
        let g = Guardrails {
            table_properties_warned: set(&["comment", "gc_grace_seconds"]),
            table_properties_ignored: set(&["read_repair", "bloom_filter_fp_chance", "cdc"]),
            table_properties_disallowed: set(&[
                "default_time_to_live",
                "crc_check_chance",
                "caching",
                "memtable_flush_period_in_ms",
            ]),
            ..Guardrails::default()
        };
        assert_eq!(
            message(g.table_properties(&["crc_check_chance", "caching", "comment"]).unwrap_err()),
            "Guardrail table_properties violated: Provided values [caching, crc_check_chance] are not allowed for Table Properties (disallowed values are: [crc_check_chance, memtable_flush_period_in_ms, caching, default_time_to_live])"
        );
        let (warnings, ignored) = g.table_properties(&["cdc", "comment"]).unwrap();
        assert_eq!(warnings, vec![
            "Guardrail table_properties violated: Ignoring provided values [cdc] as they are not supported for Table Properties (ignored values are: [cdc, read_repair, bloom_filter_fp_chance])",
            "Guardrail table_properties violated: Provided values [comment] are not recommended for Table Properties (warned values are: [gc_grace_seconds, comment])",
        ]);
        assert_eq!(ignored, vec!["cdc"]);
        assert!(TableProperties::EMPTY.with("Comment").is_some());
        assert!(TableProperties::EMPTY.with("foo").is_none());
    }

    #[test]
    fn timestamps_are_bounded_around_now() {
        let hour = 3_600_000_000;
        let g = Guardrails {
            maximum_timestamp: TimestampOffsets {
                warn_micros: Some(hour),
                fail_micros: Some(24 * hour),
            },
            minimum_timestamp: TimestampOffsets {
                warn_micros: Some(0),
                fail_micros: None,
            },
            ..Guardrails::default()
        };
        let now = 1_000 * hour;
        assert_eq!(g.timestamp_bounds(now, now, "t").unwrap(), None);
        assert_eq!(
            g.timestamp_bounds(now + 2 * hour, now, "t").unwrap().as_deref(),
            Some("Guardrail maximum_timestamp violated: The modification to table t has a timestamp 3607200000000 after the maximum allowable warning threshold 3603600000000. Timestamps too far in the future can lead to data that can't be easily overwritten")
        );
        assert_eq!(
            message(g.timestamp_bounds(now + 25 * hour, now, "t").unwrap_err()),
            "Guardrail maximum_timestamp violated: The modification to table t has a timestamp 3690000000000 after the maximum allowable failure threshold 3686400000000. Timestamps too far in the future can lead to data that can't be easily overwritten"
        );
        assert_eq!(
            g.timestamp_bounds(5, now, "t").unwrap().as_deref(),
            Some("Guardrail minimum_timestamp violated: The modification to table t has a timestamp 5 before the minimum allowable warning threshold 3600000000000. Timestamps too far in the past can cause writes can be unexpectedly lost")
        );
        assert!(g.guards_timestamps() && !Guardrails::default().guards_timestamps());
    }

    #[test]
    fn the_other_thresholds_word_their_messages_as_cassandra() {
        let g = Guardrails {
            keyspaces: threshold(1, 2),
            secondary_indexes_per_table: threshold(1, 2),
            materialized_views_per_table: threshold(1, 2),
            fields_per_udt: threshold(2, 3),
            partition_keys_in_select: threshold(2, 3),
            ..Guardrails::default()
        };
        assert_eq!(g.keyspaces(2, "ks2").unwrap().as_deref(), Some("Guardrail keyspaces violated: Creating keyspace ks2, current number of keyspaces 2 exceeds warning threshold of 1."));
        assert_eq!(message(g.keyspaces(3, "ks3").unwrap_err()), "Guardrail keyspaces violated: Cannot have more than 2 keyspaces, aborting the creation of keyspace ks3");
        assert_eq!(g.secondary_indexes_per_table(2, "on table t").unwrap().as_deref(), Some("Guardrail secondary_indexes_per_table violated: Creating secondary index on table t, current number of indexes 2 exceeds warning threshold of 1."));
        assert_eq!(message(g.secondary_indexes_per_table(3, "i3 on table t").unwrap_err()), "Guardrail secondary_indexes_per_table violated: Tables cannot have more than 2 secondary indexes, aborting the creation of secondary index i3 on table t");
        assert_eq!(g.materialized_views_per_table(2, "mv2 on table t").unwrap().as_deref(), Some("Guardrail materialized_views_per_table violated: Creating materialized view mv2 on table t, current number of views 2 exceeds warning threshold of 1."));
        assert_eq!(message(g.materialized_views_per_table(3, "mv3 on table t").unwrap_err()), "Guardrail materialized_views_per_table violated: Tables cannot have more than 2 materialized views, aborting the creation of materialized view mv3 on table t");
        assert_eq!(g.fields_per_udt(3, "u3").unwrap().as_deref(), Some("Guardrail fields_per_udt violated: The user type u3 has 3 columns, this exceeds the warning threshold of 2."));
        assert_eq!(message(g.fields_per_udt(4, "u4").unwrap_err()), "Guardrail fields_per_udt violated: User types cannot have more than 3 columns, but 4 provided for user type u4.");
        assert_eq!(g.partition_keys_in_select(3, "t").unwrap().as_deref(), Some("Guardrail partition_keys_in_select violated: Query with partition keys in IN clause on table t, with number of partition keys 3 exceeds warning threshold of 2."));
        assert_eq!(message(g.partition_keys_in_select(4, "t").unwrap_err()), "Guardrail partition_keys_in_select violated: Aborting query with partition keys in IN clause on table t, number of partition keys 4 exceeds fail threshold of 3.");
    }
}
