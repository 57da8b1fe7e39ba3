//! One scanned row turned into the writes that recreate it with its
//! cells' write times and TTLs: cells of equal (write time, TTL) in one
//! UPDATE, each non-frozen collection's elements added in groups of equal
//! (write time, TTL), the row marker as an INSERT of the key, and counters
//! as deltas. No IO: the copy runs these statements as one batch per row.

use std::collections::BTreeMap;

use bytes::Bytes;
use rocksandra_wire::Value;

use super::table::{quote, Column, ColumnKind, Storage, Table};
use super::values::{
    bigint, int, join_collection, per_element, read_bigint, read_int, split_collection,
    split_fields,
};
use super::MigrateError;

/// CQL text and its positional values.
pub type Statement = (String, Vec<Value>);

/// A scanned row: key cells, then per data column its cells (value, and
/// except for counters write time and TTL), as `Table::range_scan` selects.
pub struct ScannedRow<'a> {
    pub table: &'a Table,
    pub cells: &'a [Option<Bytes>],
}

/// Single cells written by one UPDATE: (static, write time, TTL).
type CellGroup = (bool, i64, i32);

/// A data column's value with its write time and TTL (0: none).
struct Cell<'a> {
    column: &'a Column,
    value: Option<&'a Bytes>,
    write_time: Option<&'a Bytes>,
    ttl: Option<&'a Bytes>,
}

impl<'a> ScannedRow<'a> {
    pub fn new(table: &'a Table, cells: &'a [Option<Bytes>]) -> Result<Self, MigrateError> {
        let expected = table.key_count() + table.data().count() * table.cells_per_data_column();
        if cells.len() != expected {
            return Err(MigrateError::Data(format!(
                "{}: a row of {} cells, expected {expected}",
                table.label(),
                cells.len()
            )));
        }
        Ok(ScannedRow { table, cells })
    }

    pub fn key_values(&self, whole_key: bool) -> Vec<Value> {
        let count = if whole_key {
            self.table.key_count()
        } else {
            self.table.partition_key_count()
        };
        self.cells[..count].iter().map(value).collect()
    }

    /// The partition key's cells, to tell partitions apart.
    pub fn partition_key(&self) -> &[Option<Bytes>] {
        &self.cells[..self.table.partition_key_count()]
    }

    /// A partition with static cells and no rows scans as one row with
    /// null clustering columns.
    pub fn is_static_only(&self) -> bool {
        let pk = self.table.partition_key_count();
        self.table.has_clustering()
            && self.cells[pk..self.table.key_count()]
                .iter()
                .all(Option::is_none)
    }

    /// Whether the copy of this row writes its static cells (with the
    /// partition's first row, `write_statics`) or its regular ones (unless
    /// the row stands for a partition without rows).
    pub fn writes(&self, is_static: bool, write_statics: bool) -> bool {
        if is_static {
            write_statics
        } else {
            !self.is_static_only()
        }
    }

    fn data_cells(&self) -> impl Iterator<Item = Cell<'_>> {
        let width = self.table.cells_per_data_column();
        let first = self.table.key_count();
        self.table.data().enumerate().map(move |(i, column)| {
            let at = first + i * width;
            let cell = |offset: usize| {
                (width > offset)
                    .then(|| self.cells[at + offset].as_ref())
                    .flatten()
            };
            Cell {
                column,
                value: cell(0),
                write_time: cell(1),
                ttl: cell(2),
            }
        })
    }

    /// The values of the static or regular data columns of a storage, by
    /// position among data columns.
    pub fn data_values(&self, storage: Storage, is_static: bool) -> Vec<(usize, Option<Bytes>)> {
        self.data_cells()
            .enumerate()
            .filter(|(_, c)| c.column.storage == storage)
            .filter(|(_, c)| (c.column.kind == ColumnKind::Static) == is_static)
            .map(|(i, c)| (i, c.value.cloned()))
            .collect()
    }
}

fn value(cell: &Option<Bytes>) -> Value {
    match cell {
        Some(bytes) => Value::Bytes(bytes.clone()),
        None => Value::Null,
    }
}

/// The writes that recreate a non-counter row. `write_statics` on the
/// first row of each partition; `skip_lists` names (by data column
/// position) list columns the target already holds equal; `now_micros`
/// is the write time of the marker of a row with no cell at all.
pub fn row_writes(
    row: &ScannedRow,
    write_statics: bool,
    skip_lists: &[usize],
    now_micros: i64,
) -> Result<Vec<Statement>, MigrateError> {
    let table = row.table;
    let mut single: BTreeMap<CellGroup, Vec<(String, Bytes)>> = BTreeMap::new();
    let mut statements = Vec::new();
    let mut liveness = Liveness::default();
    for (index, cell) in row.data_cells().enumerate() {
        let is_static = cell.column.kind == ColumnKind::Static;
        if !row.writes(is_static, write_statics) {
            continue;
        }
        let Some(content) = cell.value else { continue };
        let what = format!("{}.{}", table.label(), cell.column.name);
        if cell.column.storage.is_collection() {
            if skip_lists.contains(&index) {
                continue;
            }
            let groups = collection_groups(&cell, content, &what)?;
            for group in groups {
                if !is_static {
                    liveness.add(group.write_time, group.ttl);
                }
                statements.push(add_elements(table, cell.column, is_static, group, row));
            }
        } else if cell.column.storage == Storage::Udt {
            for (target, write_time, ttl, value) in udt_fields(&cell, content, &what)? {
                if !is_static {
                    liveness.add(write_time, ttl);
                }
                let group = single.entry((is_static, write_time, ttl)).or_default();
                group.push((target, value));
            }
        } else {
            let write_time = required(cell.write_time, &what, read_bigint)?;
            let ttl = cell
                .ttl
                .map(|b| read_int(b, &what))
                .transpose()?
                .unwrap_or(0);
            if !is_static {
                liveness.add(write_time, ttl);
            }
            let group = single.entry((is_static, write_time, ttl)).or_default();
            group.push((quote(&cell.column.name), content.clone()));
        }
    }
    for ((is_static, write_time, ttl), cells) in single {
        statements.push(set_cells(table, is_static, write_time, ttl, &cells, row));
    }
    if !row.is_static_only() {
        let (write_time, ttl) = liveness.marker(now_micros);
        statements.insert(0, marker(table, write_time, ttl, row));
    }
    Ok(statements)
}

fn required<T>(
    bytes: Option<&Bytes>,
    what: &str,
    read: impl Fn(&[u8], &str) -> Result<T, MigrateError>,
) -> Result<T, MigrateError> {
    let bytes =
        bytes.ok_or_else(|| MigrateError::Data(format!("{what}: a value with no write time")))?;
    read(bytes, what)
}

/// What keeps the row alive: the marker the copy writes lives as long as
/// the row's longest-lived cell, from its oldest cell's write time.
#[derive(Default)]
struct Liveness {
    oldest_micros: Option<i64>,
    any_without_ttl: bool,
    ttl_max: i32,
}

impl Liveness {
    fn add(&mut self, write_time: i64, ttl: i32) {
        self.oldest_micros = Some(self.oldest_micros.map_or(write_time, |t| t.min(write_time)));
        self.any_without_ttl |= ttl == 0;
        self.ttl_max = self.ttl_max.max(ttl);
    }

    fn marker(&self, now_micros: i64) -> (i64, i32) {
        match self.oldest_micros {
            None => (now_micros, 0),
            Some(oldest) if self.any_without_ttl => (oldest, 0),
            Some(oldest) => (oldest, self.ttl_max),
        }
    }
}

/// The live fields of a non-frozen UDT value: `"column"."field"`, write
/// time, TTL (0: none) and value. Cassandra 5.0 gives a write time and a
/// TTL per field of the type (null for a field with no cell).
fn udt_fields(
    cell: &Cell,
    content: &Bytes,
    what: &str,
) -> Result<Vec<(String, i64, i32, Bytes)>, MigrateError> {
    let names = &cell.column.fields;
    let values = split_fields(content, what)?;
    if values.len() > names.len() {
        return Err(MigrateError::Data(format!(
            "{what}: {} fields for a type of {}",
            values.len(),
            names.len()
        )));
    }
    let write_times = per_element(cell.write_time, names.len(), what, read_bigint)?;
    let ttls = per_element(cell.ttl, names.len(), what, read_int)?;
    let mut out = Vec::new();
    for (i, value) in values.into_iter().enumerate() {
        let Some(value) = value else { continue };
        let write_time = write_times[i]
            .ok_or_else(|| MigrateError::Data(format!("{what}: a field with no write time")))?;
        let target = format!("{}.{}", quote(&cell.column.name), quote(&names[i]));
        out.push((target, write_time, ttls[i].unwrap_or(0), value));
    }
    Ok(out)
}

/// Elements of a non-frozen collection with one write time and TTL.
struct ElementGroup {
    write_time: i64,
    ttl: i32,
    count: usize,
    items: Vec<Bytes>,
}

/// A set's or map's elements grouped by (write time, TTL); a list's in
/// runs of equal (write time, TTL), so appending them keeps their order.
fn collection_groups(
    cell: &Cell,
    content: &Bytes,
    what: &str,
) -> Result<Vec<ElementGroup>, MigrateError> {
    let per = if cell.column.storage == Storage::Map {
        2
    } else {
        1
    };
    let items = split_collection(content, per, what)?;
    let elements = items.len() / per;
    let write_times = per_element(cell.write_time, elements, what, read_bigint)?;
    let ttls = per_element(cell.ttl, elements, what, read_int)?;
    let mut groups: Vec<ElementGroup> = Vec::new();
    for (i, (write_time, ttl)) in write_times.into_iter().zip(ttls).enumerate() {
        let write_time = write_time
            .ok_or_else(|| MigrateError::Data(format!("{what}: an element with no write time")))?;
        let ttl = ttl.unwrap_or(0);
        let element = items[i * per..(i + 1) * per]
            .iter()
            .map(|item| {
                item.clone()
                    .ok_or_else(|| MigrateError::Data(format!("{what}: a null element")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let same = |g: &ElementGroup| g.write_time == write_time && g.ttl == ttl;
        let found = if cell.column.storage == Storage::List {
            groups.last_mut().filter(|g| same(g))
        } else {
            groups.iter_mut().find(|g| same(g))
        };
        match found {
            Some(group) => {
                group.count += 1;
                group.items.extend(element);
            }
            None => groups.push(ElementGroup {
                write_time,
                ttl,
                count: 1,
                items: element,
            }),
        }
    }
    Ok(groups)
}

fn using_and_where(table: &Table, is_static: bool) -> (String, String) {
    (
        format!("UPDATE {} USING TIMESTAMP ? AND TTL ?", table.qualified()),
        format!("WHERE {}", table.key_condition(!is_static)),
    )
}

fn add_elements(
    table: &Table,
    column: &Column,
    is_static: bool,
    group: ElementGroup,
    row: &ScannedRow,
) -> Statement {
    let (update, condition) = using_and_where(table, is_static);
    let name = quote(&column.name);
    let text = format!("{update} SET {name} = {name} + ? {condition}");
    let items: Vec<&Bytes> = group.items.iter().collect();
    let mut values = vec![
        Value::Bytes(bigint(group.write_time)),
        Value::Bytes(int(group.ttl)),
        Value::Bytes(join_collection(group.count, &items)),
    ];
    values.extend(row.key_values(!is_static));
    (text, values)
}

fn set_cells(
    table: &Table,
    is_static: bool,
    write_time: i64,
    ttl: i32,
    cells: &[(String, Bytes)],
    row: &ScannedRow,
) -> Statement {
    let (update, condition) = using_and_where(table, is_static);
    let sets: Vec<String> = cells
        .iter()
        .map(|(target, _)| format!("{target} = ?"))
        .collect();
    let text = format!("{update} SET {} {condition}", sets.join(", "));
    let mut values = vec![Value::Bytes(bigint(write_time)), Value::Bytes(int(ttl))];
    values.extend(cells.iter().map(|(_, v)| Value::Bytes(v.clone())));
    values.extend(row.key_values(!is_static));
    (text, values)
}

fn marker(table: &Table, write_time: i64, ttl: i32, row: &ScannedRow) -> Statement {
    let names: Vec<String> = table.keys().map(|c| quote(&c.name)).collect();
    let marks = vec!["?"; names.len()].join(", ");
    let text = format!(
        "INSERT INTO {} ({}) VALUES ({marks}) USING TIMESTAMP ? AND TTL ?",
        table.qualified(),
        names.join(", ")
    );
    let mut values = row.key_values(true);
    values.push(Value::Bytes(bigint(write_time)));
    values.push(Value::Bytes(int(ttl)));
    (text, values)
}

/// The counter UPDATE that brings the target's static or regular counters
/// (`target`, one per column of `source`, null for none) to the source's
/// (`source`: data column position and value, as `data_values` gives
/// them): a delta per column, so a row or partition copied again after a
/// crash is not counted twice.
pub fn counter_writes(
    row: &ScannedRow,
    source: &[(usize, Option<Bytes>)],
    target: &[Option<Bytes>],
    is_static: bool,
) -> Result<Option<Statement>, MigrateError> {
    let table = row.table;
    let columns: Vec<&Column> = table.data().collect();
    let mut sets = Vec::new();
    let mut values = Vec::new();
    for ((index, source), target) in source.iter().zip(target) {
        let column = columns.get(*index).ok_or_else(|| {
            MigrateError::Data(format!("{}: no data column {index}", table.label()))
        })?;
        let what = format!("{}.{}", table.label(), column.name);
        let read = |b: Option<&Bytes>| {
            b.map(|b| read_bigint(b, &what))
                .transpose()
                .map(|v| v.unwrap_or(0))
        };
        let delta = read(source.as_ref())?.wrapping_sub(read(target.as_ref())?);
        if delta != 0 {
            let name = quote(&column.name);
            sets.push(format!("{name} = {name} + ?"));
            values.push(Value::Bytes(bigint(delta)));
        }
    }
    if sets.is_empty() {
        return Ok(None);
    }
    values.extend(row.key_values(!is_static));
    let text = format!(
        "UPDATE {} SET {} WHERE {}",
        table.qualified(),
        sets.join(", "),
        table.key_condition(!is_static)
    );
    Ok(Some((text, values)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::table::{Column, Storage};

    fn column(name: &str, kind: ColumnKind, position: i32, type_text: &str) -> Column {
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

    fn table() -> Table {
        Table::new(
            "ks",
            "t",
            vec![
                column("k", ColumnKind::PartitionKey, 0, "int"),
                column("c", ColumnKind::Clustering, 0, "int"),
                column("st", ColumnKind::Static, -1, "int"),
                column("l", ColumnKind::Regular, -1, "list<int>"),
                column("v", ColumnKind::Regular, -1, "text"),
                column("w", ColumnKind::Regular, -1, "text"),
            ],
        )
        .expect("supported")
    }

    fn b(bytes: Bytes) -> Option<Bytes> {
        Some(bytes)
    }

    /// A `list<int>` of per-element TTLs, null for an element without one.
    fn ttls(ttls: &[Option<i32>]) -> Option<Bytes> {
        let mut out = bytes::BytesMut::new();
        out.extend_from_slice(&(ttls.len() as i32).to_be_bytes());
        for ttl in ttls {
            match ttl {
                Some(ttl) => {
                    out.extend_from_slice(&4i32.to_be_bytes());
                    out.extend_from_slice(&ttl.to_be_bytes());
                }
                None => out.extend_from_slice(&(-1i32).to_be_bytes()),
            }
        }
        Some(out.freeze())
    }

    fn list(items: &[Bytes]) -> Option<Bytes> {
        Some(join_collection(
            items.len(),
            &items.iter().collect::<Vec<_>>(),
        ))
    }

    #[test]
    fn cells_group_by_write_time_and_ttl_and_the_marker_lives_as_long_as_the_row() {
        let table = table();
        let cells = vec![
            b(int(1)),
            b(int(2)),
            b(int(9)),
            b(bigint(50)),
            None,
            list(&[int(1), int(2), int(3)]),
            list(&[bigint(10), bigint(20), bigint(10)]),
            ttls(&[None, Some(100), None]),
            b(Bytes::from_static(b"x")),
            b(bigint(30)),
            b(int(60)),
            b(Bytes::from_static(b"y")),
            b(bigint(30)),
            b(int(60)),
        ];
        let row = ScannedRow::new(&table, &cells).expect("row");
        let writes = row_writes(&row, true, &[], 999).expect("writes");
        let texts: Vec<&str> = writes.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(
            texts,
            vec![
                "INSERT INTO ks.t (k, c) VALUES (?, ?) USING TIMESTAMP ? AND TTL ?",
                "UPDATE ks.t USING TIMESTAMP ? AND TTL ? SET l = l + ? WHERE k = ? AND c = ?",
                "UPDATE ks.t USING TIMESTAMP ? AND TTL ? SET l = l + ? WHERE k = ? AND c = ?",
                "UPDATE ks.t USING TIMESTAMP ? AND TTL ? SET l = l + ? WHERE k = ? AND c = ?",
                "UPDATE ks.t USING TIMESTAMP ? AND TTL ? SET v = ?, w = ? WHERE k = ? AND c = ?",
                "UPDATE ks.t USING TIMESTAMP ? AND TTL ? SET st = ? WHERE k = ?",
            ]
        );
        // The marker: the oldest cell's write time, no TTL (a list element has none).
        assert_eq!(
            writes[0].1[2..],
            [Value::Bytes(bigint(10)), Value::Bytes(int(0))]
        );
        // The list's three runs keep their order: [1] at 10, [2] at 20 with TTL 100, [3] at 10.
        assert_eq!(
            writes[2].1[..3],
            [
                Value::Bytes(bigint(20)),
                Value::Bytes(int(100)),
                Value::Bytes(join_collection(1, &[&int(2)]))
            ]
        );
        assert_eq!(
            writes[4].1[..2],
            [Value::Bytes(bigint(30)), Value::Bytes(int(60))]
        );

        // Statics only on a partition's first row; a list the target holds is skipped.
        let again = row_writes(&row, false, &[1], 999).expect("writes");
        assert_eq!(again.len(), 2);
    }

    #[test]
    fn a_row_of_ttl_cells_gets_a_marker_that_expires_with_them_and_a_bare_key_one_at_now() {
        let table = table();
        let mut cells = vec![b(int(1)), b(int(2)), None, None, None, None, None, None];
        cells.extend([b(Bytes::from_static(b"x")), b(bigint(30)), b(int(60))]);
        cells.extend([b(Bytes::from_static(b"y")), b(bigint(40)), b(int(90))]);
        let row = ScannedRow::new(&table, &cells).expect("row");
        let writes = row_writes(&row, true, &[], 999).expect("writes");
        assert_eq!(
            writes[0].1[2..],
            [Value::Bytes(bigint(30)), Value::Bytes(int(90))]
        );

        let bare = vec![
            b(int(1)),
            b(int(2)),
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
        ];
        let row = ScannedRow::new(&table, &bare).expect("row");
        let writes = row_writes(&row, true, &[], 999).expect("writes");
        assert_eq!(writes.len(), 1);
        assert_eq!(
            writes[0].1[2..],
            [Value::Bytes(bigint(999)), Value::Bytes(int(0))]
        );

        // A static-only partition: its static cell, no marker.
        let mut statics = vec![b(int(1)), None, b(int(5)), b(bigint(7)), None];
        statics.extend(vec![None; 9]);
        let row = ScannedRow::new(&table, &statics).expect("row");
        let writes = row_writes(&row, true, &[], 999).expect("writes");
        assert_eq!(writes.len(), 1);
        assert!(writes[0].0.contains("SET st = ? WHERE k = ?"));
    }

    #[test]
    fn counters_are_written_as_the_difference_from_the_target() {
        let table = Table::new(
            "ks",
            "c",
            vec![
                column("k", ColumnKind::PartitionKey, 0, "int"),
                column("a", ColumnKind::Regular, -1, "counter"),
                column("b", ColumnKind::Regular, -1, "counter"),
            ],
        )
        .expect("supported");
        let cells = vec![b(int(1)), b(bigint(10)), b(bigint(3))];
        let row = ScannedRow::new(&table, &cells).expect("row");
        let source = row.data_values(Storage::Counter, false);
        let (text, values) = counter_writes(&row, &source, &[b(bigint(4)), b(bigint(3))], false)
            .expect("delta")
            .expect("some");
        assert_eq!(text, "UPDATE ks.c SET a = a + ? WHERE k = ?");
        assert_eq!(values, vec![Value::Bytes(bigint(6)), Value::Bytes(int(1))]);
        assert!(
            counter_writes(&row, &source, &[b(bigint(10)), b(bigint(3))], false)
                .expect("delta")
                .is_none()
        );
    }

    #[test]
    fn static_counters_are_written_by_partition_key() {
        let table = Table::new(
            "ks",
            "c",
            vec![
                column("k", ColumnKind::PartitionKey, 0, "int"),
                column("c", ColumnKind::Clustering, 0, "int"),
                column("s", ColumnKind::Static, -1, "counter"),
                column("a", ColumnKind::Regular, -1, "counter"),
            ],
        )
        .expect("supported");
        let cells = vec![b(int(1)), b(int(2)), b(bigint(7)), b(bigint(5))];
        let row = ScannedRow::new(&table, &cells).expect("row");
        let statics = row.data_values(Storage::Counter, true);
        assert_eq!(statics, vec![(0, b(bigint(7)))]);
        let (text, values) = counter_writes(&row, &statics, &[None], true)
            .expect("delta")
            .expect("some");
        assert_eq!(text, "UPDATE ks.c SET s = s + ? WHERE k = ?");
        assert_eq!(values, vec![Value::Bytes(bigint(7)), Value::Bytes(int(1))]);
        let regular = row.data_values(Storage::Counter, false);
        let (text, values) = counter_writes(&row, &regular, &[b(bigint(2))], false)
            .expect("delta")
            .expect("some");
        assert_eq!(text, "UPDATE ks.c SET a = a + ? WHERE k = ? AND c = ?");
        assert_eq!(
            values,
            vec![
                Value::Bytes(bigint(3)),
                Value::Bytes(int(1)),
                Value::Bytes(int(2))
            ]
        );
    }

    #[test]
    fn a_non_frozen_udt_is_written_field_by_field_with_each_field_s_write_time() {
        let mut udt = column("u", ColumnKind::Regular, -1, "frozen<p>");
        udt.storage = Storage::Udt;
        udt.fields = vec!["x".into(), "Y".into(), "z".into()];
        let key = column("k", ColumnKind::PartitionKey, 0, "int");
        let table = Table::new("ks", "t", vec![key, udt]).expect("supported");
        // x = 1 at 100, Y null, z = 3 at 200 with TTL 50.
        let value = Bytes::from_static(&[
            0, 0, 0, 4, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 4, 0, 0, 0, 3,
        ]);
        let write_times = {
            let mut out = bytes::BytesMut::new();
            out.extend_from_slice(&3i32.to_be_bytes());
            for t in [Some(100i64), None, Some(200)] {
                match t {
                    Some(t) => {
                        out.extend_from_slice(&8i32.to_be_bytes());
                        out.extend_from_slice(&t.to_be_bytes());
                    }
                    None => out.extend_from_slice(&(-1i32).to_be_bytes()),
                }
            }
            out.freeze()
        };
        let cells = vec![
            b(int(1)),
            b(value),
            b(write_times),
            ttls(&[None, None, Some(50)]),
        ];
        let row = ScannedRow::new(&table, &cells).expect("row");
        let writes = row_writes(&row, true, &[], 999).expect("writes");
        let texts: Vec<&str> = writes.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(
            texts,
            vec![
                "INSERT INTO ks.t (k) VALUES (?) USING TIMESTAMP ? AND TTL ?",
                "UPDATE ks.t USING TIMESTAMP ? AND TTL ? SET u.x = ? WHERE k = ?",
                "UPDATE ks.t USING TIMESTAMP ? AND TTL ? SET u.z = ? WHERE k = ?",
            ]
        );
        assert_eq!(
            writes[2].1[..3],
            [
                Value::Bytes(bigint(200)),
                Value::Bytes(int(50)),
                Value::Bytes(int(3))
            ]
        );
        // The marker: from the oldest field, without TTL (x has none).
        assert_eq!(
            writes[0].1[1..],
            [Value::Bytes(bigint(100)), Value::Bytes(int(0))]
        );
    }
}
