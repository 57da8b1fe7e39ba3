//! Where an index keeps its entries, and which entries a write adds.
//!
//! Every index that serves a query has a hidden storage table
//! (`Index::storage_id`, `storage_table`), in its table's keyspace, with
//! the table's options. Its layout mirrors Cassandra's legacy index tables:
//!
//! ```text
//! partition key   the indexed value: a column's value, a collection
//!                 element's value or key, a map entry's key and value
//!                 (as a two-component partition key), or the partition key
//!                 component or clustering value of a key-column index
//! clustering      token      bigint   of the base partition
//!                 key        blob     the base partition key
//!                 row        boolean  only in an index on a partition key
//!                                     component of a table with clustering
//!                                     columns: false for the entry of the
//!                                     static row (its c1 .. cn empty), which
//!                                     so sorts first, as the static row does
//!                 c1 .. cn            the base row's clustering (not for a
//!                                     static column: one entry per partition)
//!                 path       blob     the element's cell path (collection
//!                                     indexes: list [1, 1] has two entries)
//! ```
//!
//! so the entries of one value come in token order, then partition key,
//! then clustering order: the order of a full scan, which keeps query
//! results and paging the same whether or not an index answers.
//!
//! An entry's content carries the timestamp and TTL of what it stands for,
//! so it expires with the data. A value entry has a row marker with the
//! indexed cell's timestamp and TTL. A key-column entry (partition key
//! component, clustering column) stands for the row's existence: it copies
//! the row marker and has an empty cell per live base cell, at the same
//! position with the same timestamp and TTL, so it is live exactly when the
//! base row is, but for deletions. Writes add entries without reading;
//! deletions add nothing: the search drops stale entries (`search`).

use std::collections::BTreeSet;

use rocksandra_data::types::CqlType;
use rocksandra_data::NativeType;
use rocksandra_storage::cell::{Cell, CellKind, ColumnId, LiveRow, LivenessInfo};
use rocksandra_storage::layout::paths;
use rocksandra_storage::{Mutation, PartitionKey, RowUpdate, TableId};

use super::{family, target, TargetKind};
use crate::error::{QueryError, Result};
use crate::schema::{Column, ColumnKind, Index, Schema, Table};

/// Largest indexed value, in bytes (Cassandra's `MAX_UNSIGNED_SHORT`):
/// an index partition key must fit a 16-bit length.
pub const INDEXED_VALUE_BYTES_MAX: usize = 65_535;

/// What of the indexed column an entry is keyed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Indexed {
    /// The value of a simple (or frozen) regular or static column.
    Value,
    /// List elements and map values: the element cell's value.
    ElementValue,
    /// Set elements and map keys: the element cell's path.
    ElementKey,
    /// Map entries: key and value.
    Entry,
    /// A partition key component or a clustering column: the row itself.
    KeyColumn,
}

/// An index resolved against its table.
#[derive(Clone, Debug)]
pub struct Target {
    /// Position of the indexed column in `Table::columns`.
    pub column: usize,
    pub indexed: Indexed,
}

impl Target {
    /// What `index` stores, or None when it stores nothing: an unknown
    /// class, a counter table, or a target no query can use.
    pub fn resolve(table: &Table, index: &Index) -> Option<Target> {
        family(index)?;
        if table.is_counter() || table.is_virtual {
            return None;
        }
        let (kind, name) = target(index)?;
        let column = table.column_index(name)?;
        let ty = &table.columns[column].ty;
        let key_column = table.columns[column].kind.is_primary_key();
        let indexed = match (kind, ty.unfrozen()) {
            (TargetKind::Simple | TargetKind::Full, _) if key_column => Indexed::KeyColumn,
            (TargetKind::Simple | TargetKind::Full, _) if !ty.is_multi_cell() => Indexed::Value,
            (TargetKind::Values, CqlType::Set(_)) if ty.is_multi_cell() => Indexed::ElementKey,
            (TargetKind::Values, CqlType::List(_) | CqlType::Map(..)) if ty.is_multi_cell() => {
                Indexed::ElementValue
            }
            (TargetKind::Keys, CqlType::Map(..)) if ty.is_multi_cell() => Indexed::ElementKey,
            (TargetKind::Entries, CqlType::Map(..)) if ty.is_multi_cell() => Indexed::Entry,
            _ => return None,
        };
        Some(Target { column, indexed })
    }

    /// One entry per partition: an index on a static column.
    pub fn per_partition(&self, table: &Table) -> bool {
        table.columns[self.column].kind == ColumnKind::Static
    }

    /// Entries end with the element's cell path.
    pub fn has_path(&self) -> bool {
        matches!(
            self.indexed,
            Indexed::ElementValue | Indexed::ElementKey | Indexed::Entry
        )
    }

    /// Entries carry the `row` flag: an index on a partition key component
    /// has an entry for the static row too (module documentation).
    pub fn row_flag(&self, table: &Table) -> bool {
        self.indexed == Indexed::KeyColumn
            && table.columns[self.column].kind == ColumnKind::PartitionKey
            && table.clustering_count > 0
    }

    /// The clustering of an entry: token, partition key, the base row's
    /// clustering (`row` None: a per-partition entry or a static row) and
    /// the element's path.
    pub fn entry_clustering(
        &self,
        table: &Table,
        partition: &PartitionKey,
        row: Option<&[Vec<u8>]>,
        path: Option<&[u8]>,
    ) -> Vec<Vec<u8>> {
        let mut out = self.partition_prefix(table, partition, row.is_some());
        match row {
            _ if self.per_partition(table) => {}
            Some(c) => out.extend(c.iter().cloned()),
            None if self.row_flag(table) => {
                out.extend(std::iter::repeat_n(Vec::new(), table.clustering_count))
            }
            None => {}
        }
        if let Some(p) = path {
            out.push(p.to_vec());
        }
        out
    }

    /// The leading components of a partition's entries: token and partition
    /// key, and the row flag (`row`: of a row's entries) when entries have it.
    fn partition_prefix(&self, table: &Table, partition: &PartitionKey, row: bool) -> Vec<Vec<u8>> {
        let mut out = vec![
            partition.token.0.to_be_bytes().to_vec(),
            partition.key.clone(),
        ];
        if self.row_flag(table) {
            out.push(vec![u8::from(row)]);
        }
        out
    }

    /// What base data an entry's clustering names; None when it is not an
    /// entry of this index.
    pub fn decode(&self, table: &Table, clustering: &[Vec<u8>]) -> Option<EntryOf> {
        let token: [u8; 8] = clustering.first()?.as_slice().try_into().ok()?;
        let partition = PartitionKey {
            token: rocksandra_data::Token(i64::from_be_bytes(token)),
            key: clustering.get(1)?.clone(),
        };
        let mut rest = &clustering[2..];
        let mut is_row = !self.per_partition(table);
        if self.row_flag(table) {
            let (flag, tail) = rest.split_first()?;
            is_row = flag.as_slice() == [1];
            rest = tail;
        }
        let path = if self.has_path() {
            let (last, head) = rest.split_last()?;
            rest = head;
            Some(last.clone())
        } else {
            None
        };
        let expected = if self.per_partition(table) {
            0
        } else {
            table.clustering_count
        };
        if rest.len() != expected {
            return None;
        }
        let row = is_row.then(|| rest.to_vec());
        Some(EntryOf {
            partition,
            row,
            path,
        })
    }
}

/// The base data an entry stands for.
#[derive(Clone, Debug, PartialEq)]
pub struct EntryOf {
    pub partition: PartitionKey,
    /// The base row's clustering; None for a per-partition entry or the
    /// entry of a static row.
    pub row: Option<Vec<Vec<u8>>>,
    /// The element's cell path (collection indexes).
    pub path: Option<Vec<u8>>,
}

/// Whether `index` on `table` keeps entries (and so gets a storage table).
pub fn stores(table: &Table, index: &Index) -> bool {
    Target::resolve(table, index).is_some()
}

/// The hidden table holding `index`'s entries, derived from its table (so
/// it follows the table's options and clustering types), or None when the
/// index stores nothing.
pub fn storage_table(table: &Table, index: &Index) -> Option<Table> {
    let storage_id = index.storage_id?;
    let target = Target::resolve(table, index)?;
    let blob = CqlType::Native(NativeType::Blob);
    let column = |name: &str, ty: CqlType, kind: ColumnKind, position: usize| Column {
        name: name.to_string(),
        ty,
        kind,
        position,
        descending: false,
        id: ColumnId(0),
    };
    let mut columns = vec![
        column("value", blob.clone(), ColumnKind::PartitionKey, 0),
        column(
            "token",
            CqlType::Native(NativeType::Bigint),
            ColumnKind::Clustering,
            0,
        ),
        column("partition_key", blob.clone(), ColumnKind::Clustering, 1),
    ];
    if target.row_flag(table) {
        columns.push(column(
            "row",
            CqlType::Native(NativeType::Boolean),
            ColumnKind::Clustering,
            2,
        ));
    }
    if !target.per_partition(table) {
        for c in table.clustering() {
            columns.push(Column {
                kind: ColumnKind::Clustering,
                position: columns.len() - 1,
                ..c.clone()
            });
        }
    }
    if target.has_path() {
        let position = columns.len() - 1;
        columns.push(column("path", blob, ColumnKind::Clustering, position));
    }
    for (i, c) in columns.iter_mut().enumerate() {
        c.id = ColumnId(i as u32);
    }
    Some(Table {
        keyspace: table.keyspace.clone(),
        name: format!("{}.{}", table.name, index.name),
        id: table.id,
        storage_id,
        partition_key_count: 1,
        clustering_count: columns.len() - 1,
        next_column_id: columns.len() as u32,
        columns,
        params: table.params.clone(),
        dropped: Vec::new(),
        indexes: Vec::new(),
        is_virtual: false,
        view: None,
        compact: None,
        masks: Default::default(),
        metrics: Default::default(),
    })
}

/// The storage tables of every index of `table` that keeps entries.
pub fn storage_tables(table: &Table) -> impl Iterator<Item = Table> + '_ {
    table
        .indexes
        .iter()
        .filter_map(move |index| storage_table(table, index))
}

/// Every table kept in storage: user tables, the system tables kept in
/// storage, and the tables holding index entries.
pub fn stored_tables(schema: &Schema) -> Vec<Table> {
    let mut out = Vec::new();
    for table in schema.tables().filter(|t| !t.is_virtual) {
        out.push(Table::clone(table));
        out.extend(storage_tables(table));
    }
    out
}

/// The storage ids of `stored_tables`.
pub fn stored_ids(schema: &Schema) -> BTreeSet<u64> {
    stored_tables(schema)
        .iter()
        .map(|t| t.storage_id.0)
        .collect()
}

/// The indexes of `table` that writes maintain (built or being built).
fn maintained(table: &Table) -> Vec<(&Index, TableId, Target)> {
    table
        .indexes
        .iter()
        .filter_map(|index| {
            let id = index.storage_id?;
            Some((index, id, Target::resolve(table, index)?))
        })
        .collect()
}

/// The index entries a write of `mutations` adds: for every mutation of a
/// table with stored indexes, an entry per indexed cell it sets (or per
/// row it writes, for key-column indexes) with that cell's timestamp and
/// TTL. Deletions add nothing. Fails as Cassandra does on a value too
/// large to index.
pub fn for_mutations(schema: &Schema, mutations: &[Mutation]) -> Result<Vec<Mutation>> {
    let mut out = Vec::new();
    for m in mutations {
        let Some((_, table)) = schema.table_by_storage_id(m.table) else {
            continue;
        };
        if table.indexes.is_empty() {
            continue;
        }
        super::check_zero_vectors(table, m)?;
        for (index, id, target) in maintained(table) {
            let writer = EntryWriter {
                table,
                index,
                storage_id: id,
                target: &target,
                partition: &m.partition,
            };
            if let Some(row) = &m.static_row {
                writer.add(None, &RowParts::of(row), &mut out)?;
            }
            for (clustering, row) in &m.rows {
                writer.add(Some(clustering), &RowParts::of(row), &mut out)?;
            }
        }
    }
    Ok(out)
}

/// The entries of `index` for the live content of a stored partition
/// (building an index over existing data).
pub fn for_partition(
    table: &Table,
    index: &Index,
    partition: &rocksandra_storage::Partition,
) -> Result<Vec<Mutation>> {
    let mut out = Vec::new();
    let (Some(id), Some(target)) = (index.storage_id, Target::resolve(table, index)) else {
        return Ok(out);
    };
    let writer = EntryWriter {
        table,
        index,
        storage_id: id,
        target: &target,
        partition: &partition.key,
    };
    if let Some(row) = &partition.static_row {
        writer.add(None, &RowParts::live(row), &mut out)?;
    }
    for row in &partition.rows {
        writer.add(
            Some(&row.clustering),
            &RowParts::live(&row.content),
            &mut out,
        )?;
    }
    Ok(out)
}

/// The parts of a row write (or of a live row) entries are made from.
struct RowParts<'a> {
    liveness: Option<LivenessInfo>,
    cells: &'a [Cell],
}

impl<'a> RowParts<'a> {
    fn of(row: &'a RowUpdate) -> RowParts<'a> {
        RowParts {
            liveness: row.liveness,
            cells: &row.cells,
        }
    }

    fn live(row: &'a LiveRow) -> RowParts<'a> {
        RowParts {
            liveness: row.liveness,
            cells: &row.cells,
        }
    }
}

/// The row marker an entry for `cell` gets: the cell's timestamp and TTL.
pub fn marker_of(cell: &Cell) -> LivenessInfo {
    match cell.kind {
        CellKind::Expiring {
            ttl_seconds,
            local_expiration_time,
        } => LivenessInfo::new(cell.timestamp.0, ttl_seconds, local_expiration_time.0),
        _ => LivenessInfo::new(cell.timestamp.0, 0, i64::MAX),
    }
}

/// The index partition key of an element cell of the indexed column.
pub fn element_value(column: &Column, indexed: Indexed, cell: &Cell) -> Result<Vec<u8>> {
    let path = cell.path.as_deref().unwrap_or_default();
    let corrupt = |e: rocksandra_storage::layout::CorruptData| QueryError::Server(e.to_string());
    let key = || -> Result<Vec<u8>> {
        match column.ty.unfrozen() {
            CqlType::Set(k) | CqlType::Map(k, _) => {
                paths::element_from_path(k, path).map_err(corrupt)
            }
            other => Err(QueryError::Server(format!(
                "index on {} of type {other} has no element keys",
                column.name
            ))),
        }
    };
    Ok(match indexed {
        Indexed::ElementKey => key()?,
        Indexed::Entry => entry_key(&key()?, &cell.value),
        _ => cell.value.clone(),
    })
}

/// The index partition key of the map entry `key: value`.
pub fn entry_key(key: &[u8], value: &[u8]) -> Vec<u8> {
    rocksandra_data::token::serialize_partition_key(&[key, value])
}

/// Adds the entries of one base row write to one index.
struct EntryWriter<'a> {
    table: &'a Table,
    index: &'a Index,
    storage_id: TableId,
    target: &'a Target,
    partition: &'a PartitionKey,
}

impl EntryWriter<'_> {
    /// `clustering` None: the static row.
    fn add(
        &self,
        clustering: Option<&Vec<Vec<u8>>>,
        row: &RowParts<'_>,
        out: &mut Vec<Mutation>,
    ) -> Result<()> {
        let column = &self.table.columns[self.target.column];
        let live = |c: &&Cell| !matches!(c.kind, CellKind::Tombstone { .. });
        if self.target.indexed == Indexed::KeyColumn {
            let value = match (column.kind, clustering) {
                (ColumnKind::PartitionKey, _) => {
                    let components =
                        crate::rows::partition_components(self.table, &self.partition.key)?;
                    components[column.position].clone()
                }
                (_, Some(clustering)) => clustering[column.position].clone(),
                // A clustering column index has no entry for the static row.
                (_, None) => return Ok(()),
            };
            let cells: Vec<Cell> = row
                .cells
                .iter()
                .filter(live)
                .map(|c| Cell {
                    value: Vec::new(),
                    ..c.clone()
                })
                .collect();
            if row.liveness.is_none() && cells.is_empty() {
                return Ok(());
            }
            let content = RowUpdate {
                liveness: row.liveness,
                cells,
                ..RowUpdate::default()
            };
            return self.push(value, clustering, None, content, out);
        }
        if (column.kind == ColumnKind::Static) != clustering.is_none() {
            return Ok(());
        }
        for cell in row.cells.iter().filter(live) {
            if cell.column != column.id {
                continue;
            }
            let marker = RowUpdate {
                liveness: Some(marker_of(cell)),
                ..RowUpdate::default()
            };
            match (self.target.indexed, &cell.path) {
                (Indexed::Value, None) => {
                    let value = match super::Analyzer::of(self.index) {
                        Some(analyzer) => analyzer.apply(&cell.value),
                        None => cell.value.clone(),
                    };
                    self.push(value, clustering, None, marker, out)?
                }
                (Indexed::Value, Some(_)) | (_, None) => {}
                (indexed, Some(path)) => {
                    let value = element_value(column, indexed, cell)?;
                    self.push(value, clustering, Some(path), marker, out)?;
                }
            }
        }
        Ok(())
    }

    fn push(
        &self,
        value: Vec<u8>,
        clustering: Option<&Vec<Vec<u8>>>,
        path: Option<&Vec<u8>>,
        content: RowUpdate,
        out: &mut Vec<Mutation>,
    ) -> Result<()> {
        if value.len() >= INDEXED_VALUE_BYTES_MAX {
            return Err(QueryError::invalid(format!(
                "Cannot index value of size {} for index {} on {}.{}({}) (maximum allowed size={INDEXED_VALUE_BYTES_MAX})",
                value.len(),
                self.index.name,
                self.table.keyspace,
                self.table.name,
                self.table.columns[self.target.column].name
            )));
        }
        let mut mutation = Mutation::new(self.storage_id, PartitionKey::new(value));
        let clustering = self.target.entry_clustering(
            self.table,
            self.partition,
            clustering.map(Vec::as_slice),
            path.map(Vec::as_slice),
        );
        mutation.rows.push((clustering, content));
        out.push(mutation);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocksandra_data::Token;

    fn table(cql_columns: &[(&str, CqlType, ColumnKind)]) -> Table {
        let mut columns = Vec::new();
        let mut positions = [0usize; 4];
        for (i, (name, ty, kind)) in cql_columns.iter().enumerate() {
            let slot = match kind {
                ColumnKind::PartitionKey => 0,
                ColumnKind::Clustering => 1,
                _ => 2,
            };
            columns.push(Column {
                name: name.to_string(),
                ty: ty.clone(),
                kind: *kind,
                position: if slot < 2 { positions[slot] } else { 0 },
                descending: false,
                id: ColumnId(i as u32),
            });
            positions[slot] += 1;
        }
        Table {
            keyspace: "ks".into(),
            name: "t".into(),
            id: [1; 16],
            storage_id: TableId(5),
            partition_key_count: positions[0],
            clustering_count: positions[1],
            next_column_id: columns.len() as u32,
            columns,
            params: Default::default(),
            dropped: Vec::new(),
            indexes: Vec::new(),
            is_virtual: false,
            view: None,
            compact: None,
            masks: Default::default(),
            metrics: Default::default(),
        }
    }

    fn index(target: &str) -> Index {
        Index {
            name: "i".into(),
            kind: "COMPOSITES".into(),
            options: [("target".to_string(), target.to_string())].into(),
            storage_id: Some(TableId(9)),
            built: true,
        }
    }

    fn int() -> CqlType {
        CqlType::Native(NativeType::Int)
    }

    /// The stored layout of each kind of index (module documentation):
    /// the storage table's clustering types and an entry's clustering.
    #[test]
    fn entries_are_laid_out_as_documented() {
        let t = table(&[
            ("a", int(), ColumnKind::PartitionKey),
            ("b", int(), ColumnKind::PartitionKey),
            ("c", int(), ColumnKind::Clustering),
            ("s", int(), ColumnKind::Static),
            ("v", int(), ColumnKind::Regular),
            ("l", CqlType::List(Box::new(int())), ColumnKind::Regular),
        ]);
        let partition = PartitionKey::new(rocksandra_data::token::serialize_partition_key(&[
            &[0, 0, 0, 1],
            &[0, 0, 0, 2],
        ]));
        let token = partition.token.0.to_be_bytes().to_vec();
        let row = vec![vec![0, 0, 0, 3]];
        #[allow(clippy::type_complexity)]
        let cases: [(
            &str,
            Vec<&str>,
            Option<&[Vec<u8>]>,
            Option<&[u8]>,
            Vec<Vec<u8>>,
        ); 5] = [
            (
                "v",
                vec!["bigint", "blob", "int"],
                Some(&row),
                None,
                vec![token.clone(), partition.key.clone(), row[0].clone()],
            ),
            (
                "s",
                vec!["bigint", "blob"],
                None,
                None,
                vec![token.clone(), partition.key.clone()],
            ),
            (
                "values(l)",
                vec!["bigint", "blob", "int", "blob"],
                Some(&row),
                Some(b"p"),
                vec![
                    token.clone(),
                    partition.key.clone(),
                    row[0].clone(),
                    b"p".to_vec(),
                ],
            ),
            (
                "a",
                vec!["bigint", "blob", "boolean", "int"],
                None,
                None,
                vec![token.clone(), partition.key.clone(), vec![0], Vec::new()],
            ),
            (
                "c",
                vec!["bigint", "blob", "int"],
                Some(&row),
                None,
                vec![token.clone(), partition.key.clone(), row[0].clone()],
            ),
        ];
        for (target, types, base_row, path, clustering) in cases {
            let index = index(target);
            let storage = storage_table(&t, &index).expect("stored");
            assert_eq!(storage.storage_id, TableId(9));
            let spec: Vec<String> = storage
                .storage_spec()
                .clustering
                .iter()
                .map(|c| c.ty.to_string())
                .collect();
            assert_eq!(spec, types, "{target}");
            let target_of = Target::resolve(&t, &index).expect("resolves");
            let entry = target_of.entry_clustering(&t, &partition, base_row, path);
            assert_eq!(entry, clustering, "{target}");
            let of = target_of.decode(&t, &entry).expect("decodes");
            assert_eq!(of.partition, partition);
            assert_eq!(of.row.as_deref(), base_row.filter(|_| target != "s"));
            assert_eq!(of.path.as_deref(), path);
        }
        assert_eq!(
            Token(i64::from_be_bytes(token.try_into().expect("8 bytes"))),
            partition.token
        );
    }

    #[test]
    fn only_indexes_a_query_can_use_are_stored() {
        let t = table(&[
            ("k", int(), ColumnKind::PartitionKey),
            ("v", int(), ColumnKind::Regular),
        ]);
        assert!(stores(&t, &index("v")));
        let mut custom = index("v");
        custom
            .options
            .insert("class_name".into(), "com.example.Custom".into());
        assert!(!stores(&t, &custom));
        assert!(!stores(&t, &index("nosuch")));
    }
}
