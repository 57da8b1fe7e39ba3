//! `writetime()`, `maxwritetime()` and `ttl()` selectors: of a whole column,
//! of one element or a slice of a set or map, or of one field of a UDT.
//!
//! As in Cassandra 5.0, a non-frozen collection or UDT answers with a list
//! (one entry per element cell, or per declared field with null for an
//! absent one, and null for an element without a TTL), except
//! `maxwritetime`, which is the largest write time. A frozen value is one
//! cell: its element, slice or field answers with that cell's write time
//! or TTL, or null when the selection is empty.

use rocksandra_cql::ast::MetadataKind;
use rocksandra_data::types::{CqlType, NativeType};
use rocksandra_data::Value;

use super::Sel;
use crate::error::{QueryError, Result};
use crate::rows::{ColumnValue, CqlRow};
use crate::schema::Table;

/// What part of a column's cells a metadata selector reads.
#[derive(Clone, Debug)]
pub(super) enum CellPart {
    Whole,
    /// `c[key]`; None when the key was a bind marker at PREPARE.
    Element(Option<Vec<u8>>),
    /// `c[from..to]`, either bound open.
    Range {
        from: Option<Vec<u8>>,
        to: Option<Vec<u8>>,
    },
    /// `u.field`, by field index.
    Field(usize),
}

/// A planned `writetime()`, `maxwritetime()` or `ttl()`.
#[derive(Clone, Debug)]
pub(super) struct Metadata {
    pub(super) kind: MetadataKind,
    pub(super) column: usize,
    /// The selection applied to the column itself.
    part: CellPart,
    /// A selection nested deeper (`u.f['k']`, inside one frozen cell): the
    /// whole selector, which must not be null for the cell to count.
    nested: Option<Box<Sel>>,
    /// One entry per selected cell rather than a single value.
    list: bool,
}

fn function_name(kind: MetadataKind) -> &'static str {
    match kind {
        MetadataKind::WriteTime => "writetime",
        MetadataKind::MaxWriteTime => "maxwritetime",
        MetadataKind::Ttl => "ttl",
    }
}

/// Plans `kind(target)`, where `target` is the planned selector of the
/// argument (a column, optionally with one element, slice or field
/// selection) and `label` its name.
pub(super) fn plan(
    table: &Table,
    kind: MetadataKind,
    target: Sel,
    label: &str,
) -> Result<(Sel, String, CqlType)> {
    let fname = function_name(kind);
    let (column, part) = column_part(&target)?;
    let nested = match &target {
        Sel::Element {
            collection: inner, ..
        }
        | Sel::Range {
            collection: inner, ..
        }
        | Sel::Field { udt: inner, .. } => {
            (!matches!(**inner, Sel::Column(_))).then(|| Box::new(target.clone()))
        }
        _ => None,
    };
    let col = &table.columns[column];
    if col.kind.is_primary_key() {
        return Err(QueryError::invalid(format!(
            "Cannot use selection function {fname} on PRIMARY KEY part {}",
            col.name
        )));
    }
    let list = kind != MetadataKind::MaxWriteTime
        && col.ty.is_multi_cell()
        && matches!(part, CellPart::Whole | CellPart::Range { .. });
    let native = CqlType::Native(match kind {
        MetadataKind::Ttl => NativeType::Int,
        _ => NativeType::Bigint,
    });
    let ty = if list {
        CqlType::List(Box::new(native))
    } else {
        native
    };
    let meta = Metadata {
        kind,
        column,
        part,
        nested,
        list,
    };
    Ok((
        Sel::Metadata(Box::new(meta)),
        format!("{fname}({label})"),
        ty,
    ))
}

/// The column under a chain of element, slice and field selections, and
/// the selection applied directly to it.
fn column_part(sel: &Sel) -> Result<(usize, CellPart)> {
    let (inner, part) = match sel {
        Sel::Column(i) => return Ok((*i, CellPart::Whole)),
        Sel::Element {
            collection, key, ..
        } => (collection, CellPart::Element(key.clone())),
        Sel::Range {
            collection,
            from,
            to,
            ..
        } => (
            collection,
            CellPart::Range {
                from: from.clone(),
                to: to.clone(),
            },
        ),
        Sel::Field { udt, index } => (udt, CellPart::Field(*index)),
        _ => return Err(only_columns()),
    };
    match inner.as_ref() {
        Sel::Column(i) => Ok((*i, part)),
        deeper => column_part(deeper),
    }
}

fn only_columns() -> QueryError {
    QueryError::invalid("writetime and ttl only apply to columns")
}

/// The value of a metadata selector on a row.
pub(super) fn eval(table: &Table, meta: &Metadata, row: &CqlRow) -> Result<Option<Vec<u8>>> {
    let content = &row.columns[meta.column];
    let Some(bytes) = &content.value else {
        return Ok(None);
    };
    if let Some(nested) = &meta.nested {
        if super::eval_sel(table, nested, row)?.is_none() {
            return Ok(None);
        }
    }
    let ty = &table.columns[meta.column].ty;
    let Some(cells) = selected_cells(ty, bytes, &meta.part)? else {
        return Ok(None);
    };
    Ok(match meta.kind {
        MetadataKind::MaxWriteTime => cells
            .iter()
            .flatten()
            .filter_map(|&i| content.writetimes.get(i))
            .max()
            .map(|t| t.to_be_bytes().to_vec()),
        _ if meta.list => Some(nullable_list(
            cells.iter().map(|c| cell_metadata(meta.kind, content, *c)),
        )),
        _ => cells
            .iter()
            .find_map(|c| *c)
            .and_then(|c| cell_metadata(meta.kind, content, Some(c))),
    })
}

/// A cell's write time (bigint) or remaining TTL (int, null without one).
fn cell_metadata(
    kind: MetadataKind,
    content: &ColumnValue,
    cell: Option<usize>,
) -> Option<Vec<u8>> {
    let cell = cell?;
    match kind {
        MetadataKind::Ttl => content
            .ttls
            .get(cell)
            .copied()
            .flatten()
            .map(|t| t.to_be_bytes().to_vec()),
        _ => content
            .writetimes
            .get(cell)
            .map(|t| t.to_be_bytes().to_vec()),
    }
}

/// A serialized list whose elements may be null.
fn nullable_list(items: impl ExactSizeIterator<Item = Option<Vec<u8>>>) -> Vec<u8> {
    let mut out = (items.len() as i32).to_be_bytes().to_vec();
    for item in items {
        match item {
            Some(v) => {
                out.extend_from_slice(&(v.len() as i32).to_be_bytes());
                out.extend_from_slice(&v);
            }
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }
    out
}

/// The cells (indexes into the column's write times and TTLs, which follow
/// the value's element order) a part selects; None when it selects nothing.
/// A `None` entry is a UDT field without a cell.
fn selected_cells(
    ty: &CqlType,
    bytes: &[u8],
    part: &CellPart,
) -> Result<Option<Vec<Option<usize>>>> {
    if !ty.is_multi_cell() {
        let selected = match part {
            CellPart::Whole => true,
            _ => !part_values(ty, bytes, part)?.is_empty(),
        };
        return Ok(selected.then(|| vec![Some(0)]));
    }
    if let CqlType::Udt(u) = ty {
        return udt_cells(ty, u.fields.len(), bytes, part);
    }
    let keys = collection_keys(ty, bytes)?;
    let key_ty = key_type(ty);
    let cells: Vec<Option<usize>> = (0..keys.len())
        .filter(|&i| match part {
            CellPart::Whole => true,
            _ => key_selected(key_ty, &keys[i], part),
        })
        .map(Some)
        .collect();
    Ok((!cells.is_empty()).then_some(cells))
}

/// A non-frozen UDT's cells: one per non-null field, in field order.
fn udt_cells(
    ty: &CqlType,
    field_count: usize,
    bytes: &[u8],
    part: &CellPart,
) -> Result<Option<Vec<Option<usize>>>> {
    let Value::Udt(fields) = Value::deserialize(ty, bytes)? else {
        return Ok(None);
    };
    let mut ordinal = 0;
    let mut cells = Vec::with_capacity(field_count);
    for i in 0..field_count {
        let present = matches!(fields.get(i), Some(Some(_)));
        cells.push(present.then_some(ordinal));
        ordinal += usize::from(present);
    }
    Ok(match part {
        CellPart::Field(i) => cells.get(*i).copied().flatten().map(|c| vec![Some(c)]),
        _ => Some(cells),
    })
}

/// What an element, slice or field selection of a frozen value holds
/// (empty when nothing).
fn part_values(ty: &CqlType, bytes: &[u8], part: &CellPart) -> Result<Vec<Vec<u8>>> {
    if let CellPart::Field(i) = part {
        return Ok(super::udt_field(bytes, *i).into_iter().collect());
    }
    let key_ty = key_type(ty);
    Ok(collection_keys(ty, bytes)?
        .into_iter()
        .filter(|k| key_selected(key_ty, k, part))
        .collect())
}

/// The serialized keys (of a map) or elements (of a set), in order.
fn collection_keys(ty: &CqlType, bytes: &[u8]) -> Result<Vec<Vec<u8>>> {
    Ok(match Value::deserialize(ty, bytes)? {
        Value::Map(entries) => entries.into_iter().map(|(k, _)| k.to_bytes()).collect(),
        Value::Set(items) | Value::List(items) => items.into_iter().map(|v| v.to_bytes()).collect(),
        _ => Vec::new(),
    })
}

fn key_type(ty: &CqlType) -> &CqlType {
    match ty.unfrozen() {
        CqlType::Map(k, _) => k,
        CqlType::Set(e) | CqlType::List(e) => e,
        other => other,
    }
}

fn key_selected(key_ty: &CqlType, key: &[u8], part: &CellPart) -> bool {
    match part {
        CellPart::Whole => true,
        CellPart::Element(Some(k)) => {
            rocksandra_data::value::compare(key_ty, key, k) == std::cmp::Ordering::Equal
        }
        CellPart::Element(None) | CellPart::Field(_) => false,
        CellPart::Range { from, to } => super::key_in_range(key_ty, key, from, to),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocksandra_data::types::UdtType;

    fn text(s: &str) -> Vec<u8> {
        Value::Text(s.into()).to_bytes()
    }

    fn map_type() -> CqlType {
        let native = |t| Box::new(CqlType::Native(t));
        CqlType::Map(native(NativeType::Text), native(NativeType::Int))
    }

    fn map_abc() -> Vec<u8> {
        let entry = |k: &str, v| (Value::Text(k.into()), Value::Int(v));
        Value::Map(vec![entry("a", 1), entry("b", 2), entry("c", 3)]).to_bytes()
    }

    fn cells(ty: &CqlType, bytes: &[u8], part: CellPart) -> Option<Vec<Option<usize>>> {
        selected_cells(ty, bytes, &part).expect("valid value")
    }

    #[test]
    fn elements_and_slices_of_a_non_frozen_map_select_their_cells() {
        let (ty, value) = (map_type(), map_abc());
        let all = Some(vec![Some(0), Some(1), Some(2)]);
        assert_eq!(cells(&ty, &value, CellPart::Whole), all);
        assert_eq!(
            cells(&ty, &value, CellPart::Element(Some(text("b")))),
            Some(vec![Some(1)])
        );
        assert_eq!(cells(&ty, &value, CellPart::Element(Some(text("z")))), None);
        let from_b = CellPart::Range {
            from: Some(text("b")),
            to: None,
        };
        assert_eq!(cells(&ty, &value, from_b), Some(vec![Some(1), Some(2)]));
        let empty = CellPart::Range {
            from: Some(text("c")),
            to: Some(text("a")),
        };
        assert_eq!(cells(&ty, &value, empty), None);
    }

    #[test]
    fn a_frozen_value_is_one_cell_when_its_selection_is_not_empty() {
        let (ty, value) = (CqlType::Frozen(Box::new(map_type())), map_abc());
        assert_eq!(
            cells(&ty, &value, CellPart::Element(Some(text("c")))),
            Some(vec![Some(0)])
        );
        assert_eq!(cells(&ty, &value, CellPart::Element(Some(text("q")))), None);
    }

    #[test]
    fn a_non_frozen_udt_has_an_entry_per_field_and_null_for_absent_ones() {
        let int = CqlType::Native(NativeType::Int);
        let ty = CqlType::Udt(UdtType {
            keyspace: "ks".into(),
            name: "u".into(),
            fields: vec![
                ("a".into(), int.clone()),
                ("b".into(), int.clone()),
                ("c".into(), int),
            ],
        });
        let value = Value::Udt(vec![Some(Value::Int(1)), None, Some(Value::Int(3))]).to_bytes();
        assert_eq!(
            cells(&ty, &value, CellPart::Whole),
            Some(vec![Some(0), None, Some(1)])
        );
        assert_eq!(cells(&ty, &value, CellPart::Field(2)), Some(vec![Some(1)]));
        assert_eq!(cells(&ty, &value, CellPart::Field(1)), None);
    }

    #[test]
    fn lists_of_metadata_keep_null_entries() {
        let list = nullable_list(vec![Some(vec![0, 0, 0, 7]), None].into_iter());
        assert_eq!(
            list,
            vec![0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 7, 255, 255, 255, 255]
        );
    }
}
