//! A table as the migration sees it (from `system_schema.columns`): its
//! key columns in key order and its data columns with how each is stored,
//! and the scan that reads a token range of it with every cell's write
//! time and TTL.

use rocksandra_data::types::{CqlType, NativeType, UdtResolver, UdtType};

use super::MigrateError;

pub use rocksandra_query::schema::ColumnKind;

/// How a data column's cells are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    /// One cell: native types, frozen values, tuples, vectors.
    Single,
    /// One cell per element of a non-frozen set, map or list.
    Set,
    Map,
    List,
    /// One cell per field of a non-frozen user-defined type.
    Udt,
    Counter,
}

/// A type whose storage depends on `system_schema.types`: a non-frozen
/// user-defined type, or text the type parser refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotStoredAlone {
    #[error("user-defined type {0}")]
    Udt(String),
    #[error("type {0}")]
    Unparsed(String),
}

impl NotStoredAlone {
    /// The name to look up among the keyspace's user-defined types.
    pub fn name(&self) -> &str {
        match self {
            NotStoredAlone::Udt(name) | NotStoredAlone::Unparsed(name) => name,
        }
    }
}

impl Storage {
    /// From `system_schema.columns.type` (read by the project's one type
    /// parser); `Err` for a non-frozen UDT (its fields are in
    /// `system_schema.types`) or the text the parser refused.
    pub fn from_type(type_text: &str) -> Result<Storage, NotStoredAlone> {
        let parsed = CqlType::parse(type_text, &AnyUdt)
            .map_err(|_| NotStoredAlone::Unparsed(type_text.trim().to_string()))?;
        Ok(match parsed {
            CqlType::Native(NativeType::Counter) => Storage::Counter,
            CqlType::Set(_) => Storage::Set,
            CqlType::Map(..) => Storage::Map,
            CqlType::List(_) => Storage::List,
            CqlType::Udt(udt) => return Err(NotStoredAlone::Udt(udt.name)),
            _ => Storage::Single,
        })
    }

    pub fn is_collection(self) -> bool {
        matches!(self, Storage::Set | Storage::Map | Storage::List)
    }
}

/// Takes any name for a user-defined type: `Storage::from_type` wants only
/// the name of a non-frozen one, whose fields come from `system_schema.types`.
struct AnyUdt;

impl UdtResolver for AnyUdt {
    fn resolve_udt(&self, keyspace: Option<&str>, name: &str) -> Option<UdtType> {
        Some(UdtType {
            keyspace: keyspace.unwrap_or_default().to_string(),
            name: name.to_string(),
            fields: Vec::new(),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub kind: ColumnKind,
    /// Key order for key columns; -1 for data columns (as in system_schema).
    pub position: i32,
    pub type_text: String,
    pub storage: Storage,
    /// The field names of a non-frozen UDT, in order; empty otherwise.
    pub fields: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub keyspace: String,
    pub name: String,
    /// Partition key, clustering, static, regular; keys by position,
    /// data columns by name.
    pub columns: Vec<Column>,
}

impl Table {
    /// Orders the columns; a table without partition key is refused.
    pub fn new(
        keyspace: &str,
        name: &str,
        mut columns: Vec<Column>,
    ) -> Result<Table, MigrateError> {
        columns.sort_by(|a, b| (a.kind, a.position, &a.name).cmp(&(b.kind, b.position, &b.name)));
        let table = Table {
            keyspace: keyspace.into(),
            name: name.into(),
            columns,
        };
        if table.partition_key().next().is_none() {
            return Err(table.refuse("it has no partition key column"));
        }
        Ok(table)
    }

    pub fn qualified(&self) -> String {
        format!("{}.{}", quote(&self.keyspace), quote(&self.name))
    }

    /// `ks.t` as the checkpoint and the progress lines name it.
    pub fn label(&self) -> String {
        format!("{}.{}", self.keyspace, self.name)
    }

    pub fn refuse(&self, why: &str) -> MigrateError {
        MigrateError::Unsupported(format!("table {}: {why}", self.label()))
    }

    pub fn partition_key(&self) -> impl Iterator<Item = &Column> {
        self.columns
            .iter()
            .filter(|c| c.kind == ColumnKind::PartitionKey)
    }

    pub fn keys(&self) -> impl Iterator<Item = &Column> {
        self.columns
            .iter()
            .filter(|c| c.kind <= ColumnKind::Clustering)
    }

    pub fn key_count(&self) -> usize {
        self.keys().count()
    }

    pub fn partition_key_count(&self) -> usize {
        self.partition_key().count()
    }

    pub fn data(&self) -> impl Iterator<Item = &Column> {
        self.columns.iter().filter(|c| c.kind >= ColumnKind::Static)
    }

    pub fn is_counter(&self) -> bool {
        self.data().any(|c| c.storage == Storage::Counter)
    }

    pub fn has_clustering(&self) -> bool {
        self.columns
            .iter()
            .any(|c| c.kind == ColumnKind::Clustering)
    }

    /// Cells a scanned data column takes in a row: the value, then (except
    /// for counters, which have neither) its write time and TTL.
    pub fn cells_per_data_column(&self) -> usize {
        if self.is_counter() {
            1
        } else {
            3
        }
    }

    /// The scan of one token range `(?, ?]`: keys, then per data column its
    /// value, `WRITETIME` and `TTL`.
    pub fn range_scan(&self) -> String {
        let mut selectors: Vec<String> = self.keys().map(|c| quote(&c.name)).collect();
        for column in self.data() {
            let name = quote(&column.name);
            if self.is_counter() {
                selectors.push(name);
            } else {
                selectors.push(format!("{name}, WRITETIME({name}), TTL({name})"));
            }
        }
        let token = self.token_call();
        format!(
            "SELECT {} FROM {} WHERE {token} > ? AND {token} <= ?",
            selectors.join(", "),
            self.qualified()
        )
    }

    fn token_call(&self) -> String {
        let names: Vec<String> = self.partition_key().map(|c| quote(&c.name)).collect();
        format!("token({})", names.join(", "))
    }

    /// `"pk" = ? AND "ck" = ?` over the partition key, or every key column.
    pub fn key_condition(&self, whole_key: bool) -> String {
        let columns: Vec<&Column> = if whole_key {
            self.keys().collect()
        } else {
            self.partition_key().collect()
        };
        let parts: Vec<String> = columns
            .iter()
            .map(|c| format!("{} = ?", quote(&c.name)))
            .collect();
        parts.join(" AND ")
    }
}

/// A CQL identifier as the schema stores it, quoted when it needs to be.
pub use rocksandra_data::types::quote_identifier_if_needed as quote;

#[cfg(test)]
mod tests {
    use super::*;

    pub fn column(name: &str, kind: ColumnKind, position: i32, type_text: &str) -> Column {
        let storage = Storage::from_type(type_text).expect("supported");
        Column {
            name: name.into(),
            kind,
            position,
            type_text: type_text.into(),
            storage,
            fields: Vec::new(),
        }
    }

    #[test]
    fn storage_follows_the_schema_type() {
        assert_eq!(Storage::from_type("int"), Ok(Storage::Single));
        assert_eq!(Storage::from_type("frozen<set<int>>"), Ok(Storage::Single));
        assert_eq!(Storage::from_type("frozen<addr>"), Ok(Storage::Single));
        assert_eq!(Storage::from_type("vector<float, 3>"), Ok(Storage::Single));
        assert_eq!(
            Storage::from_type("set<frozen<list<int>>>"),
            Ok(Storage::Set)
        );
        assert_eq!(Storage::from_type("map<int, text>"), Ok(Storage::Map));
        assert_eq!(Storage::from_type("list<int>"), Ok(Storage::List));
        assert_eq!(Storage::from_type("counter"), Ok(Storage::Counter));
        assert_eq!(
            Storage::from_type("addr"),
            Err(NotStoredAlone::Udt("addr".into()))
        );
        assert_eq!(
            Storage::from_type("\"Addr\""),
            Err(NotStoredAlone::Udt("Addr".into()))
        );
    }

    #[test]
    fn the_range_scan_reads_keys_then_each_cell_with_its_write_time_and_ttl() {
        let table = Table::new(
            "ks",
            "t",
            vec![
                column("v", ColumnKind::Regular, -1, "text"),
                column("c", ColumnKind::Clustering, 0, "int"),
                column("p2", ColumnKind::PartitionKey, 1, "int"),
                column("p1", ColumnKind::PartitionKey, 0, "int"),
            ],
        )
        .expect("supported");
        assert_eq!(
            table.range_scan(),
            "SELECT p1, p2, c, v, WRITETIME(v), TTL(v) FROM ks.t \
             WHERE token(p1, p2) > ? AND token(p1, p2) <= ?"
        );
        assert_eq!(table.key_condition(false), "p1 = ? AND p2 = ?");
    }
}
