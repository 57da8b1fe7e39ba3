//! The shape of a built-in table definition in `catalog.rs`: plain static
//! data, turned into `schema::Table`s by `system::system_keyspaces`.

use crate::schema::ColumnKind;

/// One column as Cassandra lists it in `system_schema.columns`.
pub(crate) struct ColumnDef {
    pub name: &'static str,
    pub kind: ColumnKind,
    /// Position in the partition or clustering key; -1 otherwise.
    pub position: i32,
    /// CQL type text, e.g. `frozen<map<text, text>>`.
    pub type_text: &'static str,
    pub descending: bool,
}

/// A dropped column that Cassandra still remembers for a built-in table.
pub(crate) struct DroppedDef {
    pub name: &'static str,
    pub type_text: &'static str,
    pub kind: ColumnKind,
    /// Microseconds.
    pub dropped_time: i64,
}

/// One built-in table with the options where it differs from a new table.
pub(crate) struct TableDef {
    pub keyspace: &'static str,
    pub name: &'static str,
    pub comment: &'static str,
    pub gc_grace_seconds: i32,
    pub memtable_flush_period_in_ms: i32,
    pub default_time_to_live: i32,
    /// Empty: Cassandra's default compaction.
    pub compaction: &'static [(&'static str, &'static str)],
    pub columns: &'static [ColumnDef],
    pub dropped: &'static [DroppedDef],
}
