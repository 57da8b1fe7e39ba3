//! The guardrails on what one statement writes, checked on the mutations it
//! made, in the order Cassandra checks them as its operations add cells:
//! `column_value_size` on each cell's value and on each collection
//! element's key (or list element's timeuuid, or UDT field's position);
//! and for a collection column written whole or added to (`c = ...`,
//! `c = c + ...`, INSERT), first `items_per_collection` on the elements
//! it adds and after their cells `collection_size` on their size. A
//! prepend, one element (`m[k] = v`) or a removal is not a collection
//! write. Counter columns are not checked.

use std::collections::BTreeSet;

use rocksandra_cql::ast::{AssignOp, ColumnTarget, Ident, InsertValues, Modification};
use rocksandra_data::types::CqlType;
use rocksandra_data::Value;
use rocksandra_storage::cell::{Cell, CellKind};
use rocksandra_storage::layout::paths;
use rocksandra_storage::{Mutation, RowUpdate};

use crate::error::Result;
use crate::guardrails::Guardrails;
use crate::schema::{Column, Table};

/// What Cassandra counts for a cell besides its value and path
/// (`AbstractCell.dataSize`): the timestamp, TTL and local deletion time.
const CELL_OVERHEAD_BYTES: usize = 20;

/// The size Cassandra gives a cell path: the serialized map key or set
/// element (as written), a list element's timeuuid, a UDT field's position
/// as a short.
pub(super) fn cassandra_path_len(ty: Option<&CqlType>, cell: &Cell) -> usize {
    let path = cell.path.as_deref().unwrap_or_default();
    match ty {
        Some(CqlType::Map(key, _) | CqlType::Set(key)) => {
            paths::element_of(key, cell).map_or(path.len(), |v| v.len())
        }
        Some(CqlType::List(_)) => 16,
        _ => path.len(),
    }
}

/// The guardrails' warnings on `mutations`, all made by `m` on `table`, or
/// the failure of the first value over a fail threshold.
pub(super) fn check(
    g: &Guardrails,
    table: &Table,
    m: &Modification,
    mutations: &[Mutation],
) -> Result<Vec<String>> {
    let collections = collection_writes(table, m);
    let order = statement_order(m);
    let mut warnings = Vec::new();
    for mutation in mutations {
        let rows = mutation
            .static_row
            .iter()
            .chain(mutation.rows.iter().map(|(_, r)| r));
        for row in rows {
            let written = Written {
                table,
                collections: &collections,
                order: &order,
            };
            written.check_row(g, row, &mut warnings)?;
        }
    }
    Ok(warnings)
}

/// The collection columns `m` writes whole or adds to.
fn collection_writes(table: &Table, m: &Modification) -> BTreeSet<String> {
    let is_collection = |name: &str| {
        table
            .columns
            .iter()
            .any(|c| c.name == name && c.ty.is_collection())
    };
    let names: Vec<String> = match m {
        Modification::Insert(_) => table.columns.iter().map(|c| c.name.clone()).collect(),
        Modification::Update(u) => u
            .assignments
            .iter()
            .filter(|a| matches!(a.op, AssignOp::Set | AssignOp::Add))
            .filter_map(|a| match &a.target {
                ColumnTarget::Column(name) => Some(name.as_str().to_string()),
                _ => None,
            })
            .collect(),
        Modification::Delete(_) => Vec::new(),
    };
    names.into_iter().filter(|n| is_collection(n)).collect()
}

/// The columns in the order the statement names them (Cassandra runs its
/// operations in that order); empty for INSERT JSON, whose cells keep the
/// order they were made in.
fn statement_order(m: &Modification) -> Vec<String> {
    let names: Vec<&Ident> = match m {
        Modification::Insert(i) => match &i.values {
            InsertValues::Columns { columns, .. } => columns.iter().collect(),
            InsertValues::Json { .. } => Vec::new(),
        },
        Modification::Update(u) => u.assignments.iter().map(|a| a.target.column()).collect(),
        Modification::Delete(d) => d.targets.iter().map(ColumnTarget::column).collect(),
    };
    names.into_iter().map(|n| n.as_str().to_string()).collect()
}

/// What one statement wrote to a table, checked row by row.
struct Written<'a> {
    table: &'a Table,
    collections: &'a BTreeSet<String>,
    order: &'a [String],
}

impl Written<'_> {
    /// One row's cells, column by column in the statement's order.
    fn check_row(&self, g: &Guardrails, row: &RowUpdate, warnings: &mut Vec<String>) -> Result<()> {
        let mut columns: Vec<&Column> = Vec::new();
        for cell in &row.cells {
            let column = self.table.columns.iter().find(|c| c.id == cell.column);
            if let Some(column) = column.filter(|c| !columns.iter().any(|k| k.id == c.id)) {
                columns.push(column);
            }
        }
        let position = |c: &&Column| self.order.iter().position(|n| *n == c.name);
        columns.sort_by_key(|c| position(c).unwrap_or(usize::MAX));
        for column in columns.into_iter().filter(|c| !c.ty.is_counter()) {
            let cells: Vec<&Cell> = row.cells.iter().filter(|c| c.column == column.id).collect();
            if self.collections.contains(&column.name) {
                check_collection(g, column, &cells, warnings)?;
            } else {
                for cell in cells {
                    check_cell(g, column, cell, warnings)?;
                }
            }
        }
        Ok(())
    }
}

fn is_tombstone(cell: &Cell) -> bool {
    matches!(cell.kind, CellKind::Tombstone { .. })
}

/// `column_value_size` on a live cell's value, then on the path of a
/// non-frozen collection's or UDT's cell (a tombstone's too).
fn check_cell(
    g: &Guardrails,
    column: &Column,
    cell: &Cell,
    warnings: &mut Vec<String>,
) -> Result<()> {
    if !is_tombstone(cell) {
        warnings.extend(g.column_value_size(cell.value.len(), &column.name)?);
    }
    if cell.path.is_some() && column.ty.is_multi_cell() {
        let bytes = cassandra_path_len(Some(&column.ty), cell);
        warnings.extend(g.column_value_size(bytes, &column.name)?);
    }
    Ok(())
}

/// A collection written whole or added to: its elements' count, each
/// cell, then the elements' size. A null (a tombstone) or an empty
/// non-frozen collection adds nothing to check.
fn check_collection(
    g: &Guardrails,
    column: &Column,
    cells: &[&Cell],
    warnings: &mut Vec<String>,
) -> Result<()> {
    let live: Vec<&Cell> = cells.iter().copied().filter(|c| !is_tombstone(c)).collect();
    let Some(first) = live.first() else {
        return Ok(());
    };
    let items = if column.ty.is_multi_cell() {
        live.len()
    } else {
        frozen_items(column.ty.unfrozen(), &first.value)
    };
    warnings.extend(g.items_per_collection(items, &column.name)?);
    let mut bytes = 0;
    for cell in &live {
        check_cell(g, column, cell, warnings)?;
        let path = if cell.path.is_some() {
            cassandra_path_len(Some(&column.ty), cell)
        } else {
            0
        };
        bytes += CELL_OVERHEAD_BYTES + cell.value.len() + path;
    }
    warnings.extend(g.collection_size(bytes, &column.name)?);
    Ok(())
}

/// The elements of a frozen collection's serialized value.
fn frozen_items(ty: &CqlType, bytes: &[u8]) -> usize {
    match Value::deserialize(ty, bytes) {
        Ok(Value::List(items) | Value::Set(items)) => items.len(),
        Ok(Value::Map(entries)) => entries.len(),
        _ => 0,
    }
}
