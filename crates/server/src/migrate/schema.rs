//! The schema step: the source's keyspaces as `DESCRIBE KEYSPACE` gives
//! them, created on the target in that order (keyspaces, types, functions,
//! tables); what exists already is kept if its columns are the same and
//! refused otherwise. Indexes and views wait until the data is copied.

use std::collections::BTreeMap;

use bytes::Bytes;
use rocksandra_query::schema::SYSTEM_KEYSPACES;
use rocksandra_wire::{ResultBody, Value};

use super::client::CqlClient;
use super::table::{Column, ColumnKind, Storage, Table};
use super::MigrateError;

/// One statement of `DESCRIBE KEYSPACE`.
pub struct Described {
    pub keyspace: String,
    pub kind: String,
    pub name: String,
    pub statement: String,
}

impl Described {
    fn label(&self) -> String {
        match self.kind.as_str() {
            "keyspace" => format!("keyspace {}", self.keyspace),
            kind => format!("{kind} {}.{}", self.keyspace, self.name),
        }
    }
}

fn text(cell: &Option<Bytes>, what: &str) -> Result<String, MigrateError> {
    let bytes = cell
        .as_ref()
        .ok_or_else(|| MigrateError::Data(format!("{what}: null")))?;
    String::from_utf8(bytes.to_vec()).map_err(|_| MigrateError::Data(format!("{what}: not UTF-8")))
}

fn text_value(text: &str) -> Value {
    Value::Bytes(Bytes::copy_from_slice(text.as_bytes()))
}

/// The keyspaces to copy: those named, or every non-system one.
pub async fn keyspaces(
    source: &mut CqlClient,
    named: &[String],
) -> Result<Vec<String>, MigrateError> {
    let rows = source
        .all_rows("SELECT keyspace_name FROM system_schema.keyspaces", vec![])
        .await?;
    let existing: Vec<String> = rows
        .iter()
        .map(|r| text(&r[0], "keyspace_name"))
        .collect::<Result<_, _>>()?;
    if named.is_empty() {
        return Ok(existing
            .into_iter()
            .filter(|k| !SYSTEM_KEYSPACES.contains(&k.as_str()))
            .collect());
    }
    for name in named {
        if SYSTEM_KEYSPACES.contains(&name.as_str()) {
            return Err(MigrateError::Unsupported(format!(
                "{name} is a system keyspace: it is not copied"
            )));
        }
        if !existing.contains(name) {
            return Err(MigrateError::Usage(format!(
                "the source has no keyspace {name}"
            )));
        }
    }
    Ok(named.to_vec())
}

/// The keyspace's tables (not views) with their columns.
pub async fn tables(
    client: &mut CqlClient,
    keyspace: &str,
) -> Result<Vec<Result<Table, MigrateError>>, MigrateError> {
    let names = client
        .all_rows(
            "SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?",
            vec![text_value(keyspace)],
        )
        .await?;
    let rows = client
        .all_rows(
            "SELECT table_name, column_name, kind, position, type FROM system_schema.columns WHERE keyspace_name = ?",
            vec![text_value(keyspace)],
        )
        .await?;
    let types = user_types(client, keyspace).await?;
    let mut columns: BTreeMap<String, Vec<Result<Column, UnknownType>>> = BTreeMap::new();
    for row in &rows {
        let column = column_of(row, &types)?;
        columns
            .entry(text(&row[0], "table_name")?)
            .or_default()
            .push(column);
    }
    let mut out = Vec::new();
    for row in &names {
        let name = text(&row[0], "table_name")?;
        let columns = columns.remove(&name).unwrap_or_default();
        let columns: Result<Vec<Column>, UnknownType> = columns.into_iter().collect();
        out.push(match columns {
            Ok(columns) => Table::new(keyspace, &name, columns),
            Err(why) => Err(MigrateError::Unsupported(format!(
                "table {keyspace}.{name}: {why}"
            ))),
        });
    }
    Ok(out)
}

/// The field names of the keyspace's user-defined types, by type name.
async fn user_types(
    client: &mut CqlClient,
    keyspace: &str,
) -> Result<BTreeMap<String, Vec<String>>, MigrateError> {
    let rows = client
        .all_rows(
            "SELECT type_name, field_names FROM system_schema.types WHERE keyspace_name = ?",
            vec![text_value(keyspace)],
        )
        .await?;
    let mut types = BTreeMap::new();
    for row in &rows {
        let name = text(&row[0], "type_name")?;
        let names = row[1].as_deref().unwrap_or_default();
        let fields = super::values::split_collection(names, 1, "field_names")?
            .iter()
            .map(|field| text(field, "field name"))
            .collect::<Result<Vec<_>, _>>()?;
        types.insert(name, fields);
    }
    Ok(types)
}

/// A column whose type the copy cannot write.
#[derive(Debug, thiserror::Error)]
#[error("column {name}: unknown type {type_text}")]
struct UnknownType {
    name: String,
    type_text: String,
}

/// A column of `system_schema.columns`; `Err` names what the copy cannot write.
fn column_of(
    row: &[Option<Bytes>],
    types: &BTreeMap<String, Vec<String>>,
) -> Result<Result<Column, UnknownType>, MigrateError> {
    let name = text(&row[1], "column_name")?;
    let kind_name = text(&row[2], "kind")?;
    let kind = ColumnKind::from_name(&kind_name)
        .ok_or_else(|| MigrateError::Data(format!("unknown column kind {kind_name}")))?;
    let position = row[3]
        .as_deref()
        .map(|b| super::values::read_int(b, "position"))
        .transpose()?
        .unwrap_or(-1);
    let type_text = text(&row[4], "type")?;
    let (storage, fields) = match Storage::from_type(&type_text) {
        Ok(storage) => (storage, Vec::new()),
        Err(udt) => match types.get(udt.name()) {
            Some(fields) => (Storage::Udt, fields.clone()),
            None => return Ok(Err(UnknownType { name, type_text })),
        },
    };
    Ok(Ok(Column {
        name,
        kind,
        position,
        type_text,
        storage,
        fields,
    }))
}

pub async fn describe(
    source: &mut CqlClient,
    keyspace: &str,
) -> Result<Vec<Described>, MigrateError> {
    let quoted = super::table::quote(keyspace);
    let rows = match source
        .query(&format!("DESCRIBE KEYSPACE {quoted}"), vec![])
        .await?
    {
        ResultBody::Rows(rows) => rows.rows,
        other => {
            return Err(MigrateError::Data(format!(
                "DESCRIBE KEYSPACE {keyspace}: {other:?}"
            )))
        }
    };
    rows.iter()
        .map(|row| {
            if row.len() < 4 {
                return Err(MigrateError::Data(format!(
                    "DESCRIBE KEYSPACE {keyspace}: a row of {} columns",
                    row.len()
                )));
            }
            Ok(Described {
                keyspace: text(&row[0], "keyspace_name")?,
                kind: text(&row[1], "type")?,
                name: text(&row[2], "name")?,
                statement: text(&row[3], "create_statement")?,
            })
        })
        .collect()
}

/// Whether a described object is created after the data.
pub fn after_data(kind: &str) -> bool {
    matches!(kind, "index" | "materialized_view")
}

/// Runs one described statement on the target; an existing keyspace,
/// type, function, index or view is kept as it is, an existing table only
/// if its columns are the same.
pub async fn create(
    target: &mut CqlClient,
    item: &Described,
    source_table: Option<&Table>,
) -> Result<String, MigrateError> {
    if !exists(target, item).await? {
        target.query(&item.statement, vec![]).await?;
        return Ok(format!("created {}", item.label()));
    }
    match source_table {
        None => Ok(format!("kept the existing {}", item.label())),
        Some(table) => same_table(target, table).await,
    }
}

/// Whether the target has an object of the described kind and name.
async fn exists(target: &mut CqlClient, item: &Described) -> Result<bool, MigrateError> {
    let (table, column) = match item.kind.as_str() {
        "keyspace" => {
            let query = "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?";
            let rows = target
                .all_rows(query, vec![text_value(&item.keyspace)])
                .await?;
            return Ok(!rows.is_empty());
        }
        "type" => ("types", "type_name"),
        "table" => ("tables", "table_name"),
        "function" => ("functions", "function_name"),
        "aggregate" => ("aggregates", "aggregate_name"),
        "index" => ("indexes", "index_name"),
        "materialized_view" => ("views", "view_name"),
        other => {
            return Err(MigrateError::Unsupported(format!(
                "{other} {}.{} (from DESCRIBE): the copy does not create these",
                item.keyspace, item.name
            )))
        }
    };
    // indexes is keyed by table first: its name alone needs filtering.
    let query = format!(
        "SELECT {column} FROM system_schema.{table} WHERE keyspace_name = ? AND {column} = ? ALLOW FILTERING"
    );
    let rows = target
        .all_rows(
            &query,
            vec![text_value(&item.keyspace), text_value(&item.name)],
        )
        .await?;
    Ok(!rows.is_empty())
}

async fn same_table(target: &mut CqlClient, source: &Table) -> Result<String, MigrateError> {
    let existing = tables(target, &source.keyspace).await?;
    let same = existing
        .into_iter()
        .filter_map(Result::ok)
        .find(|t| t.name == source.name);
    match same {
        Some(table) if table.columns == source.columns => {
            Ok(format!("kept the existing table {}", source.label()))
        }
        _ => Err(MigrateError::Unsupported(format!(
            "table {} exists on the target with other columns: drop it or make it the same",
            source.label()
        ))),
    }
}
