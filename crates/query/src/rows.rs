//! From storage rows to CQL rows: partition key components, clustering
//! values and the columns' values (collections rebuilt from their element
//! cells), with write times and TTLs for `writetime()` and `ttl()`.

use rocksandra_data::types::CqlType;
use rocksandra_data::{LocalTime, Value};
use rocksandra_storage::cell::{Cell, CellKind, LiveRow};
use rocksandra_storage::layout::paths;
use rocksandra_storage::PartitionKey;
use smallvec::SmallVec;

use crate::error::{QueryError, Result};
use crate::schema::{Column, ColumnKind, Table};

/// One column's content in a row.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ColumnValue {
    /// Serialized value; None is null.
    pub value: Option<Vec<u8>>,
    /// Write time(s) in microseconds: one for a simple column, one per
    /// element for a multi-cell column (inline for one: no allocation per
    /// simple column read).
    pub writetimes: SmallVec<[i64; 1]>,
    /// Remaining TTL(s) in seconds; None for cells that do not expire.
    pub ttls: SmallVec<[Option<i32>; 1]>,
}

/// A CQL row: a value per table column (`Table::columns` order).
#[derive(Clone, Debug, PartialEq)]
pub struct CqlRow {
    pub partition: PartitionKey,
    /// None for a partition that only has a static row.
    pub clustering: Option<Vec<Vec<u8>>>,
    pub columns: Vec<ColumnValue>,
}

impl CqlRow {
    /// The bytes of its clustering and column values (to size read batches).
    pub fn value_bytes(&self) -> usize {
        let clustering = self
            .clustering
            .iter()
            .flatten()
            .map(Vec::len)
            .sum::<usize>();
        let columns = self.columns.iter().flat_map(|c| &c.value).map(Vec::len);
        clustering + columns.sum::<usize>()
    }
}

/// Splits a serialized partition key into its components.
pub fn partition_components(table: &Table, key: &[u8]) -> Result<Vec<Vec<u8>>> {
    if table.partition_key_count == 1 {
        return Ok(vec![key.to_vec()]);
    }
    rocksandra_data::token::split_partition_key(key, table.partition_key_count)
        .map(|parts| parts.into_iter().map(|p| p.to_vec()).collect())
        .map_err(|e| QueryError::Server(format!("corrupt partition key: {e}")))
}

/// The serialized partition key of components (one per key column).
pub fn partition_key_bytes(components: &[Vec<u8>]) -> Vec<u8> {
    if components.len() == 1 {
        return components[0].clone();
    }
    let refs: Vec<&[u8]> = components.iter().map(Vec::as_slice).collect();
    rocksandra_data::token::serialize_partition_key(&refs)
}

/// `partition_key_bytes` of components the caller no longer needs: a
/// single component is the key itself, moved rather than copied.
pub fn partition_key_bytes_owned(mut components: Vec<Vec<u8>>) -> Vec<u8> {
    if components.len() == 1 {
        return components.pop().unwrap_or_default();
    }
    partition_key_bytes(&components)
}

/// A partition key given as text, as `nodetool getendpoints` takes it:
/// each component parsed as Cassandra's `fromString` does, the components
/// of a composite key separated by `:` (`\:` inside one).
pub fn partition_key_from_text(table: &Table, text: &str) -> std::result::Result<Vec<u8>, String> {
    let columns = table.partition_key();
    let parts = split_key_components(text, columns.len() > 1);
    if parts.len() != columns.len() {
        return Err(format!(
            "the partition key of {}.{} has {} component(s), {text:?} gives {}",
            table.keyspace,
            table.name,
            columns.len(),
            parts.len()
        ));
    }
    let now_millis = rocksandra_data::time::system_micros() / 1_000;
    let mut components = Vec::with_capacity(parts.len());
    for (column, part) in columns.iter().zip(&parts) {
        let CqlType::Native(native) = column.ty.unfrozen() else {
            return Err(format!(
                "a {} partition key cannot be given as text",
                column.ty
            ));
        };
        components.push(crate::term::literal::from_string(
            *native, part, now_millis,
        )?);
    }
    Ok(partition_key_bytes(&components))
}

/// A serialized partition key as text, as Cassandra's
/// `partitionKeyType.getString` writes it in its log lines (the inverse of
/// `partition_key_from_text`): text as it is, blobs in hex, other values as
/// CQL literals; the components of a composite key joined by `:` (`\:`
/// inside one). Undecodable bytes in hex.
pub fn partition_key_text(table: &Table, key: &[u8]) -> String {
    let columns = table.partition_key();
    let Ok(parts) = partition_components(table, key) else {
        return hex::encode(key);
    };
    let texts: Vec<String> = columns
        .iter()
        .zip(&parts)
        .map(
            |(column, bytes)| match Value::deserialize(&column.ty, bytes) {
                Ok(Value::Text(t) | Value::Ascii(t)) => t,
                Ok(Value::Blob(b)) => hex::encode(&b),
                Ok(value) => value.to_cql_literal(&column.ty),
                Err(_) => hex::encode(bytes),
            },
        )
        .collect();
    match texts.as_slice() {
        [only] => only.clone(),
        _ => texts
            .iter()
            .map(|t| t.replace(':', "\\:"))
            .collect::<Vec<_>>()
            .join(":"),
    }
}

/// `a:b\:c` as `["a", "b:c"]` when `composite`; the whole text otherwise.
fn split_key_components(text: &str, composite: bool) -> Vec<String> {
    if !composite {
        return vec![text.to_string()];
    }
    let mut parts = vec![String::new()];
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (c, parts.last_mut()) {
            ('\\', Some(part)) => part.extend(chars.next()),
            (':', _) => parts.push(String::new()),
            (c, Some(part)) => part.push(c),
            (_, None) => {}
        }
    }
    parts
}

fn remaining_ttl(cell: &Cell, now: LocalTime) -> Option<i32> {
    match cell.kind {
        CellKind::Expiring {
            local_expiration_time,
            ..
        } => Some((local_expiration_time.0 - now.0).clamp(0, i64::from(i32::MAX)) as i32),
        _ => None,
    }
}

/// Builds the value of a column from its live cells (sorted by path).
fn column_value(column: &Column, cells: &[&Cell], now: LocalTime) -> Result<ColumnValue> {
    let mut out = ColumnValue::default();
    if cells.is_empty() {
        return Ok(out);
    }
    for c in cells {
        out.writetimes.push(c.timestamp.0);
        out.ttls.push(remaining_ttl(c, now));
    }
    if !column.ty.is_multi_cell() {
        out.value = Some(cells[0].value.clone());
        return Ok(out);
    }
    let corrupt = |e: rocksandra_storage::layout::CorruptData| QueryError::Server(e.to_string());
    let mut bytes = Vec::new();
    match &column.ty {
        CqlType::List(_) => {
            put_count(&mut bytes, cells.len());
            for c in cells {
                put_value(&mut bytes, &c.value);
            }
        }
        CqlType::Set(e) => {
            put_count(&mut bytes, cells.len());
            for c in cells {
                put_value(&mut bytes, &paths::element_of(e, c).map_err(corrupt)?);
            }
        }
        CqlType::Map(k, _) => {
            put_count(&mut bytes, cells.len());
            for c in cells {
                put_value(&mut bytes, &paths::element_of(k, c).map_err(corrupt)?);
                put_value(&mut bytes, &c.value);
            }
        }
        CqlType::Udt(u) => {
            let mut fields: Vec<Option<&[u8]>> = vec![None; u.fields.len()];
            for c in cells {
                let path = c.path.as_deref().unwrap_or_default();
                let i = paths::field_index_from_path(path).map_err(corrupt)?;
                if let Some(slot) = fields.get_mut(i) {
                    *slot = Some(&c.value);
                }
            }
            // Every field of the type, the unset ones null, as Cassandra's
            // `UserType.serializeForNativeProtocol` sends a non-frozen UDT.
            for f in fields {
                match f {
                    Some(v) => put_value(&mut bytes, v),
                    None => bytes.extend_from_slice(&(-1i32).to_be_bytes()),
                }
            }
        }
        _ => {
            out.value = Some(cells[0].value.clone());
            return Ok(out);
        }
    }
    out.value = Some(bytes);
    Ok(out)
}

fn put_count(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&(n as i32).to_be_bytes());
}

fn put_value(out: &mut Vec<u8>, v: &[u8]) {
    out.extend_from_slice(&(v.len() as i32).to_be_bytes());
    out.extend_from_slice(v);
}

/// Whether `column` takes its value from a static row (`static_row`) or
/// from a regular one.
fn filled_from(column: &Column, static_row: bool) -> bool {
    match column.kind {
        ColumnKind::Static => static_row,
        ColumnKind::Regular => !static_row,
        _ => false,
    }
}

/// Fills the values of the columns of `kind` (static or regular) from a
/// storage row.
pub fn fill_columns(
    table: &Table,
    row: &LiveRow,
    static_row: bool,
    now: LocalTime,
    out: &mut [ColumnValue],
) -> Result<()> {
    for (i, column) in table.columns.iter().enumerate() {
        if !filled_from(column, static_row) {
            continue;
        }
        let cells: SmallVec<[&Cell; 4]> =
            row.cells.iter().filter(|c| c.column == column.id).collect();
        out[i] = column_value(column, &cells, now)?;
    }
    Ok(())
}

/// `fill_columns` from a row that is not needed afterwards: the values of
/// simple columns are moved out of their cells instead of copied.
fn take_columns(
    table: &Table,
    row: &mut LiveRow,
    static_row: bool,
    now: LocalTime,
    out: &mut [ColumnValue],
) -> Result<()> {
    for (i, column) in table.columns.iter().enumerate() {
        if !filled_from(column, static_row) {
            continue;
        }
        if column.ty.is_multi_cell() {
            let cells: SmallVec<[&Cell; 4]> =
                row.cells.iter().filter(|c| c.column == column.id).collect();
            out[i] = column_value(column, &cells, now)?;
        } else if let Some(cell) = row.cells.iter_mut().find(|c| c.column == column.id) {
            out[i] = ColumnValue {
                writetimes: smallvec::smallvec![cell.timestamp.0],
                ttls: smallvec::smallvec![remaining_ttl(cell, now)],
                value: Some(std::mem::take(&mut cell.value)),
            };
        }
    }
    Ok(())
}

/// Builds CQL rows from a storage partition: one per live row, or one with
/// only the static columns when the partition has no live row but a live
/// static row (Cassandra's behaviour when no clustering restriction applies).
pub fn partition_rows(
    table: &Table,
    partition: &rocksandra_storage::Partition,
    now: LocalTime,
    include_static_only: bool,
) -> Result<Vec<CqlRow>> {
    partition_rows_owned(table, partition.clone(), now, include_static_only)
}

/// `partition_rows` of a partition the caller no longer needs: its values
/// move into the rows without a copy.
pub fn partition_rows_owned(
    table: &Table,
    mut partition: rocksandra_storage::Partition,
    now: LocalTime,
    include_static_only: bool,
) -> Result<Vec<CqlRow>> {
    let mut base = vec![ColumnValue::default(); table.columns.len()];
    if table.partition_key_count == 1 {
        // The key is the one component: no list of components built.
        base[0].value = Some(partition.key.key.clone());
    } else {
        let pk = partition_components(table, &partition.key.key)?;
        for (i, component) in pk.into_iter().enumerate() {
            base[i].value = Some(component);
        }
    }
    let static_exists = partition.static_row.as_ref().is_some_and(|s| s.exists());
    if let Some(static_row) = &mut partition.static_row {
        take_columns(table, static_row, true, now, &mut base)?;
    }
    let mut rows = Vec::with_capacity(partition.rows.len());
    let last = partition.rows.len().saturating_sub(1);
    for (n, mut row) in std::mem::take(&mut partition.rows).into_iter().enumerate() {
        // `base` is needed after the loop only when there was no row.
        let mut columns = if n == last {
            std::mem::take(&mut base)
        } else {
            base.clone()
        };
        for (j, value) in row.clustering.iter().enumerate() {
            if let Some(slot) = columns.get_mut(table.partition_key_count + j) {
                slot.value = Some(value.clone());
            }
        }
        take_columns(table, &mut row.content, false, now, &mut columns)?;
        // The last row takes the key itself: after the loop it is needed
        // only when there was no row.
        let key = if n == last {
            PartitionKey {
                token: partition.key.token,
                key: std::mem::take(&mut partition.key.key),
            }
        } else {
            partition.key.clone()
        };
        rows.push(CqlRow {
            partition: key,
            clustering: Some(row.clustering),
            columns,
        });
    }
    if rows.is_empty() && include_static_only && static_exists {
        rows.push(CqlRow {
            partition: partition.key,
            clustering: None,
            columns: base,
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::{partition_key_bytes, partition_key_bytes_owned, split_key_components};

    #[test]
    fn owned_components_serialize_as_borrowed_ones() {
        let one = vec![b"k".to_vec()];
        let two = vec![b"a".to_vec(), b"bc".to_vec()];
        assert_eq!(
            partition_key_bytes_owned(one.clone()),
            partition_key_bytes(&one)
        );
        assert_eq!(
            partition_key_bytes_owned(two.clone()),
            partition_key_bytes(&two)
        );
        assert_eq!(
            partition_key_bytes_owned(two),
            b"\0\x01a\0\0\x02bc\0".to_vec()
        );
    }

    #[test]
    fn composite_key_text_splits_on_unescaped_colons() {
        assert_eq!(split_key_components("a:b", false), ["a:b"]);
        assert_eq!(split_key_components("a:7", true), ["a", "7"]);
        assert_eq!(
            split_key_components("with\\:colon:7", true),
            ["with:colon", "7"]
        );
        assert_eq!(split_key_components("a\\\\:7", true), ["a\\", "7"]);
        assert_eq!(split_key_components(":", true), ["", ""]);
    }
}
