//! Schema statements: keyspaces, tables, user types, indexes, and (`udf`)
//! functions and aggregates. Each function takes the current schema and
//! returns the changed copy plus what changed; `executor` applies storage
//! effects, persists and publishes it.

pub mod udf;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use rocksandra_cql::ast::{
    AlterKeyspace, AlterTable, AlterTableAction, AlterType, AlterTypeAction, ClusteringOrder,
    CreateIndex, CreateKeyspace, CreateTable, CreateType, Ident, IndexTargetKind, Literal,
    Property, PropertyValue,
};
use rocksandra_cql::TypeExpr;
use rocksandra_data::types::{quote_identifier_if_needed, CqlType, NativeType, UdtType};
use rocksandra_storage::cell::ColumnId;
use rocksandra_storage::TableId;
use rocksandra_wire::{SchemaChange, SchemaChangeTarget, SchemaChangeType};

use crate::error::{QueryError, Result};
use crate::schema::{
    is_system_keyspace, Column, ColumnKind, DroppedColumn, Index, Keyspace, KeyspaceTypes, Schema,
    Table, TableParams,
};

/// Longest keyspace or table name (Cassandra's `SchemaConstants.NAME_LENGTH`).
pub const NAME_LENGTH_MAX: usize = 48;

/// What a DDL statement did to storage, beside the new schema.
#[derive(Debug, Default)]
pub struct StorageEffects {
    pub create: Vec<Arc<Table>>,
    pub alter: Vec<Arc<Table>>,
    pub drop: Vec<TableId>,
}

/// The result of a schema statement: the new schema (None when nothing
/// changed, e.g. IF NOT EXISTS on an existing object) and the change event.
pub struct DdlOutcome {
    pub schema: Option<Schema>,
    pub change: SchemaChange,
    pub effects: StorageEffects,
}

fn change(change_type: SchemaChangeType, target: SchemaChangeTarget) -> SchemaChange {
    SchemaChange {
        change_type,
        target,
    }
}

fn keyspace_target(keyspace: &str) -> SchemaChangeTarget {
    SchemaChangeTarget::Keyspace {
        keyspace: keyspace.to_string(),
    }
}

fn table_target(keyspace: &str, table: &str) -> SchemaChangeTarget {
    SchemaChangeTarget::Table {
        keyspace: keyspace.to_string(),
        table: table.to_string(),
    }
}

fn type_target(keyspace: &str, name: &str) -> SchemaChangeTarget {
    SchemaChangeTarget::Type {
        keyspace: keyspace.to_string(),
        name: name.to_string(),
    }
}

/// `keyspace.table` as Cassandra prints names in messages.
fn literal_text(literal: &Literal) -> String {
    match literal {
        Literal::String(s)
        | Literal::Integer(s)
        | Literal::Float(s)
        | Literal::Uuid(s)
        | Literal::Blob(s)
        | Literal::Duration(s) => s.clone(),
        Literal::Boolean(b) => b.to_string(),
        Literal::Null => "null".into(),
    }
}

fn property_text(p: &Property) -> Result<String> {
    match &p.value {
        PropertyValue::Constant(l) => Ok(literal_text(l)),
        PropertyValue::Word(w) => Ok(w.clone()),
        PropertyValue::Map(_) => Err(QueryError::syntax(format!(
            "Invalid value for property '{}'. It should be a string",
            p.name.as_str()
        ))),
    }
}

fn property_map(p: &Property) -> Result<BTreeMap<String, String>> {
    match &p.value {
        PropertyValue::Map(entries) => Ok(entries
            .iter()
            .map(|(k, v)| (literal_text(k), literal_text(v)))
            .collect()),
        _ => Err(QueryError::syntax(format!(
            "Invalid value for property '{}'. It should be a map.",
            p.name.as_str()
        ))),
    }
}

fn property_bool(p: &Property) -> Result<bool> {
    let text = property_text(p)?;
    // PropertyDefinitions.parseBoolean.
    match text.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" => Ok(true),
        "0" | "false" | "no" => Ok(false),
        _ => Err(QueryError::syntax(format!(
            "Invalid boolean value {text} for '{}'. Positive values can be '1', 'true' or 'yes'. Negative values can be '0', 'false' or 'no'.",
            p.name.as_str()
        ))),
    }
}

fn check_duplicate_properties(properties: &[Property]) -> Result<()> {
    let mut seen = BTreeSet::new();
    for p in properties {
        if !seen.insert(p.name.as_str()) {
            return Err(QueryError::syntax(format!(
                "Multiple definitions for property '{}'",
                p.name.as_str()
            )));
        }
    }
    Ok(())
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

// ---------------------------------------------------------------- keyspaces

const SIMPLE_STRATEGY: &str = "org.apache.cassandra.locator.SimpleStrategy";
const NETWORK_STRATEGY: &str = "org.apache.cassandra.locator.NetworkTopologyStrategy";

/// Validates and normalizes a replication map (class name expanded).
fn replication(
    keyspace: &str,
    given: &BTreeMap<String, String>,
    data_centers: &[String],
) -> Result<BTreeMap<String, String>> {
    let Some(class) = given.get("class") else {
        return Err(QueryError::config("Missing replication strategy class"));
    };
    let full = if class.contains('.') {
        class.clone()
    } else {
        format!("org.apache.cassandra.locator.{class}")
    };
    let mut out = BTreeMap::new();
    let options: Vec<(&String, &String)> = given.iter().filter(|(k, _)| *k != "class").collect();
    let parse_rf = |value: &str| -> Result<i64> {
        // Cassandra accepts "n" or "full/transient"; transient replication is
        // not supported here.
        let rf: i64 = value
            .trim()
            .parse()
            .map_err(|_| QueryError::config(format!("For input string: \"{value}\"")))?;
        if rf < 0 {
            return Err(QueryError::config(format!(
                "Replication factor must be non-negative, found {rf}"
            )));
        }
        Ok(rf)
    };
    match full.as_str() {
        SIMPLE_STRATEGY => {
            let unknown: Vec<&str> = options
                .iter()
                .filter(|(k, _)| k.as_str() != "replication_factor")
                .map(|(k, _)| k.as_str())
                .collect();
            if !unknown.is_empty() {
                return Err(QueryError::config(format!(
                    "Unrecognized strategy option {{{}}} passed to SimpleStrategy for keyspace {keyspace}",
                    unknown.join(", ")
                )));
            }
            // Without a factor Cassandra uses default_keyspace_rf (1).
            let rf = given
                .get("replication_factor")
                .map(String::as_str)
                .unwrap_or("1");
            out.insert("replication_factor".to_string(), parse_rf(rf)?.to_string());
        }
        NETWORK_STRATEGY => {
            let unknown: Vec<&str> = options
                .iter()
                .filter(|(k, _)| k.as_str() != "replication_factor" && !data_centers.contains(k))
                .map(|(k, _)| k.as_str())
                .collect();
            if !unknown.is_empty() {
                return Err(QueryError::config(format!(
                    "Unrecognized strategy option {{{}}} passed to NetworkTopologyStrategy for keyspace {keyspace}",
                    unknown.join(", ")
                )));
            }
            if let Some(rf) = given.get("replication_factor") {
                let rf = parse_rf(rf)?;
                for dc in data_centers {
                    out.insert(dc.clone(), rf.to_string());
                }
            }
            for (dc, rf) in options {
                if dc != "replication_factor" {
                    out.insert(dc.clone(), parse_rf(rf)?.to_string());
                }
            }
        }
        "org.apache.cassandra.locator.LocalStrategy" => {
            return Err(QueryError::invalid(
                "Unable to use given strategy class: LocalStrategy is reserved for internal use.",
            ));
        }
        _ => {
            return Err(QueryError::config(format!(
                "Unable to find replication strategy class '{full}'"
            )));
        }
    }
    out.insert("class".to_string(), full);
    Ok(out)
}

fn check_keyspace_name(name: &str) -> Result<()> {
    if name.len() > NAME_LENGTH_MAX {
        return Err(QueryError::invalid(format!(
            "Keyspace name must not be more than {NAME_LENGTH_MAX} characters long (got {} characters for \"{name}\")",
            name.len()
        )));
    }
    if !valid_name(name) {
        return Err(QueryError::invalid(format!(
            "Keyspace name must not be empty and must contain alphanumeric or underscore characters only (got \"{name}\")"
        )));
    }
    Ok(())
}

struct KeyspaceProperties {
    replication: Option<BTreeMap<String, String>>,
    durable_writes: Option<bool>,
}

fn keyspace_properties(properties: &[Property]) -> Result<KeyspaceProperties> {
    check_duplicate_properties(properties)?;
    let mut out = KeyspaceProperties {
        replication: None,
        durable_writes: None,
    };
    for p in properties {
        match p.name.as_str() {
            "replication" => out.replication = Some(property_map(p)?),
            "durable_writes" => out.durable_writes = Some(property_bool(p)?),
            other => {
                return Err(QueryError::syntax(format!("Unknown property '{other}'")));
            }
        }
    }
    Ok(out)
}

pub fn create_keyspace(
    schema: &Schema,
    stmt: &CreateKeyspace,
    data_centers: &[String],
) -> Result<DdlOutcome> {
    let name = stmt.name.as_str();
    let event = change(SchemaChangeType::Created, keyspace_target(name));
    if is_system_keyspace(name) {
        return Err(QueryError::invalid(format!(
            "System keyspace '{name}' is not user-modifiable"
        )));
    }
    check_keyspace_name(name)?;
    let props = keyspace_properties(&stmt.properties)?;
    if schema.keyspace(name).is_some() {
        if stmt.if_not_exists {
            return Ok(DdlOutcome {
                schema: None,
                change: event,
                effects: StorageEffects::default(),
            });
        }
        return Err(QueryError::AlreadyExists {
            keyspace: name.to_string(),
            table: String::new(),
            message: format!("Cannot add existing keyspace \"{name}\""),
        });
    }
    let Some(given) = props.replication else {
        return Err(QueryError::invalid(
            "Missing mandatory option 'replication'",
        ));
    };
    let replication = replication(name, &given, data_centers)?;
    let mut next = schema.clone();
    next.keyspaces.insert(
        name.to_string(),
        Arc::new(Keyspace {
            name: name.to_string(),
            replication,
            durable_writes: props.durable_writes.unwrap_or(true),
            tables: BTreeMap::new(),
            types: Vec::new(),
            functions: Vec::new(),
            aggregates: Vec::new(),
            is_virtual: false,
        }),
    );
    Ok(DdlOutcome {
        schema: Some(next),
        change: event,
        effects: StorageEffects::default(),
    })
}

fn not_user_modifiable(name: &str) -> QueryError {
    QueryError::Unauthorized(format!("{name} keyspace is not user-modifiable."))
}

/// Cassandra's `ClientState.preventSystemKSSchemaModification`: a schema
/// change in a local system keyspace is refused by name, and in a
/// replicated one (`system_auth`, ...) as the permission `permission` on
/// the statement's `resource` (`Cannot CREATE <all tables in system_auth>`).
fn refuse_system_schema_change(
    keyspace: &str,
    permission: &str,
    resource: impl FnOnce() -> String,
) -> Result<()> {
    if !is_system_keyspace(keyspace) {
        return Ok(());
    }
    if crate::schema::REPLICATED_SYSTEM_KEYSPACES.contains(&keyspace) {
        return Err(QueryError::Unauthorized(format!(
            "Cannot {permission} {}",
            resource()
        )));
    }
    Err(not_user_modifiable(keyspace))
}

/// The resource of every table of a keyspace, as Cassandra prints it.
fn all_tables_resource(keyspace: &str) -> String {
    format!("<all tables in {keyspace}>")
}

fn table_resource(keyspace: &str, table: &str) -> String {
    format!("<table {keyspace}.{table}>")
}

pub fn alter_keyspace(
    schema: &Schema,
    stmt: &AlterKeyspace,
    data_centers: &[String],
) -> Result<DdlOutcome> {
    let name = stmt.name.as_str();
    let event = change(SchemaChangeType::Updated, keyspace_target(name));
    if is_system_keyspace(name) && !crate::schema::REPLICATED_SYSTEM_KEYSPACES.contains(&name) {
        return Err(not_user_modifiable(name));
    }
    let props = keyspace_properties(&stmt.properties)?;
    let Some(current) = schema.keyspace(name) else {
        if stmt.if_exists {
            return Ok(DdlOutcome {
                schema: None,
                change: event,
                effects: StorageEffects::default(),
            });
        }
        return Err(QueryError::invalid(format!(
            "Keyspace '{name}' doesn't exist"
        )));
    };
    let mut keyspace = Keyspace::clone(current);
    if let Some(given) = props.replication {
        keyspace.replication = replication(name, &given, data_centers)?;
    }
    if let Some(durable) = props.durable_writes {
        keyspace.durable_writes = durable;
    }
    let mut next = schema.clone();
    next.keyspaces.insert(name.to_string(), Arc::new(keyspace));
    Ok(DdlOutcome {
        schema: Some(next),
        change: event,
        effects: StorageEffects::default(),
    })
}

pub fn drop_keyspace(schema: &Schema, name: &str, if_exists: bool) -> Result<DdlOutcome> {
    let event = change(SchemaChangeType::Dropped, keyspace_target(name));
    refuse_system_schema_change(name, "DROP", || format!("<keyspace {name}>"))?;
    let Some(current) = schema.keyspace(name) else {
        if if_exists {
            return Ok(DdlOutcome {
                schema: None,
                change: event,
                effects: StorageEffects::default(),
            });
        }
        return Err(QueryError::invalid(format!(
            "Keyspace '{name}' doesn't exist"
        )));
    };
    let effects = StorageEffects {
        drop: current.tables.values().map(|t| t.storage_id).collect(),
        ..StorageEffects::default()
    };
    let mut next = schema.clone();
    next.keyspaces.remove(name);
    Ok(DdlOutcome {
        schema: Some(next),
        change: event,
        effects,
    })
}

// ---------------------------------------------------------------- types

fn resolve_type(keyspace: &Keyspace, ty: &TypeExpr) -> Result<CqlType> {
    if let Some(other) = foreign_udt_keyspace(ty, &keyspace.name) {
        return Err(QueryError::invalid(format!(
            "Statement on keyspace {} cannot refer to a user type in keyspace {other}; user types can only be used in the keyspace they are defined in",
            keyspace.name
        )));
    }
    ty.resolve(&KeyspaceTypes(&keyspace.types))
        .map_err(|e| QueryError::invalid(format!("Unknown type {}.{}", keyspace.name, e.0)))
}

/// The keyspace of a user type named in `ty` with a keyspace other than
/// `keyspace`, if any.
fn foreign_udt_keyspace(ty: &TypeExpr, keyspace: &str) -> Option<String> {
    match ty {
        TypeExpr::Udt {
            keyspace: Some(k), ..
        } if k.as_str() != keyspace => Some(k.as_str().to_string()),
        TypeExpr::List(e) | TypeExpr::Set(e) | TypeExpr::Frozen(e) | TypeExpr::Vector(e, _) => {
            foreign_udt_keyspace(e, keyspace)
        }
        TypeExpr::Map(k, v) => {
            foreign_udt_keyspace(k, keyspace).or_else(|| foreign_udt_keyspace(v, keyspace))
        }
        TypeExpr::Tuple(items) => items.iter().find_map(|t| foreign_udt_keyspace(t, keyspace)),
        _ => None,
    }
}

/// Checks a column or field type as written, before resolving freezes what
/// is nested: `frozen<>` only around collections, tuples and UDTs, and no
/// non-frozen collection inside a non-frozen collection. Inside `frozen<>`
/// and tuples everything is frozen, so nested collections are fine there.
fn check_written_type(ty: &TypeExpr) -> Result<()> {
    check_written(ty, false)
}

fn check_written(ty: &TypeExpr, frozen: bool) -> Result<()> {
    let is_collection =
        |t: &TypeExpr| matches!(t, TypeExpr::List(_) | TypeExpr::Set(_) | TypeExpr::Map(..));
    let nested_non_frozen = || {
        QueryError::invalid(format!(
            "Non-frozen collections are not allowed inside collections: {ty}"
        ))
    };
    let is_udt = |t: &TypeExpr| matches!(t, TypeExpr::Udt { .. });
    let nested_non_frozen_udt = || {
        QueryError::invalid(format!(
            "Non-frozen UDTs are not allowed inside collections: {ty}"
        ))
    };
    match ty {
        TypeExpr::Frozen(inner) => {
            if let TypeExpr::Native(n) = inner.as_ref() {
                return Err(QueryError::syntax(format!(
                    "frozen<> is only allowed on collections, tuples, and user-defined types (got {})",
                    n.name()
                )));
            }
            check_written(inner, true)
        }
        TypeExpr::List(e) | TypeExpr::Set(e) => {
            if !frozen && is_collection(e) {
                return Err(nested_non_frozen());
            }
            if !frozen && is_udt(e) {
                return Err(nested_non_frozen_udt());
            }
            check_written(e, frozen)
        }
        TypeExpr::Map(k, v) => {
            if !frozen && (is_collection(k) || is_collection(v)) {
                return Err(nested_non_frozen());
            }
            if !frozen && (is_udt(k) || is_udt(v)) {
                return Err(nested_non_frozen_udt());
            }
            check_written(k, frozen)?;
            check_written(v, frozen)
        }
        TypeExpr::Tuple(items) => items.iter().try_for_each(|t| check_written(t, true)),
        TypeExpr::Vector(e, _) => check_written(e, frozen),
        _ => Ok(()),
    }
}

/// Cassandra's refusal of durations as set elements and map keys (they
/// have no order), frozen or not, at any depth. Collections inside a tuple
/// are frozen, and named so.
fn check_duration_keys(ty: &CqlType) -> Result<()> {
    let duration = |t: &CqlType| *t.unfrozen() == CqlType::Native(NativeType::Duration);
    match ty.unfrozen() {
        CqlType::Set(e) if duration(e) => Err(QueryError::invalid(format!(
            "Durations are not allowed inside sets: {ty}"
        ))),
        CqlType::Map(k, _) if duration(k) => Err(QueryError::invalid(format!(
            "Durations are not allowed as map keys: {ty}"
        ))),
        CqlType::List(e) | CqlType::Set(e) | CqlType::Vector(e, _) => check_duration_keys(e),
        CqlType::Map(k, v) => {
            check_duration_keys(k)?;
            check_duration_keys(v)
        }
        CqlType::Tuple(items) => items.iter().try_for_each(|t| match t {
            CqlType::List(_) | CqlType::Set(_) | CqlType::Map(..) => {
                check_duration_keys(&CqlType::Frozen(Box::new(t.clone())))
            }
            _ => check_duration_keys(t),
        }),
        _ => Ok(()),
    }
}

/// A list, set or map with counter elements, keys or values.
fn frozen_counter_collection(ty: &CqlType) -> bool {
    match ty {
        CqlType::List(e) | CqlType::Set(e) => e.is_counter(),
        CqlType::Map(k, v) => k.is_counter() || v.is_counter(),
        _ => false,
    }
}

/// Checks a column type as Cassandra's `CQL3Type.Raw.prepare` does.
fn check_column_type(ty: &CqlType, top: bool) -> Result<()> {
    check_duration_keys(ty)?;
    match ty {
        CqlType::List(e) | CqlType::Set(e) => {
            if e.is_multi_cell() {
                return Err(QueryError::invalid(format!(
                    "Non-frozen collections are not allowed inside collections: {ty}"
                )));
            }
            if e.is_counter() {
                return Err(QueryError::invalid(
                    "Counters are not allowed inside collections: ".to_string() + &ty.to_string(),
                ));
            }
            check_column_type(e, false)
        }
        CqlType::Map(k, v) => {
            if k.is_multi_cell() || v.is_multi_cell() {
                return Err(QueryError::invalid(format!(
                    "Non-frozen collections are not allowed inside collections: {ty}"
                )));
            }
            if k.is_counter() || v.is_counter() {
                return Err(QueryError::invalid(
                    "Counters are not allowed inside collections: ".to_string() + &ty.to_string(),
                ));
            }
            check_column_type(k, false)?;
            check_column_type(v, false)
        }
        CqlType::Tuple(items) if items.iter().any(CqlType::is_counter) => Err(QueryError::invalid(
            "Counters are not allowed inside tuples",
        )),
        CqlType::Frozen(inner) if matches!(**inner, CqlType::Tuple(_)) => {
            check_column_type(inner, false)
        }
        CqlType::Vector(e, n) => {
            if *n == 0 {
                return Err(QueryError::invalid(format!(
                    "vectors may only have positive dimensions; given {n}"
                )));
            }
            check_column_type(e, false)
        }
        // A frozen collection of counters is refused as the collection is.
        CqlType::Frozen(inner) if frozen_counter_collection(inner) => Err(QueryError::invalid(
            format!("Counters are not allowed inside collections: {ty}"),
        )),
        // Everything inside frozen<> is frozen too.
        CqlType::Frozen(_) => Ok(()),
        CqlType::Udt(u) if top => {
            if u.fields.iter().any(|(_, t)| t.is_multi_cell()) {
                return Err(QueryError::invalid(
                    "Non-frozen UDTs with nested non-frozen collections are not supported",
                ));
            }
            Ok(())
        }
        CqlType::Udt(u) => {
            if ty.is_multi_cell() {
                return Err(QueryError::invalid(format!(
                    "Non-frozen UDTs are not allowed inside collections: {}",
                    u.name
                )));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

pub fn create_type(schema: &Schema, keyspace: &str, stmt: &CreateType) -> Result<DdlOutcome> {
    refuse_system_schema_change(keyspace, "CREATE", || all_tables_resource(keyspace))?;
    let name = stmt.name.name.as_str();
    let event = change(SchemaChangeType::Created, type_target(keyspace, name));
    let ks = existing_keyspace(schema, keyspace)?;
    if ks.user_type(name).is_some() {
        if stmt.if_not_exists {
            return Ok(DdlOutcome {
                schema: None,
                change: event,
                effects: StorageEffects::default(),
            });
        }
        return Err(QueryError::invalid(format!(
            "A user type with name '{name}' already exists"
        )));
    }
    // A native type's name is a type name only quoted (`CREATE TYPE
    // "text"`), which Cassandra takes: unquoted, the grammar refuses it.
    let mut fields: Vec<(String, CqlType)> = Vec::new();
    for (field, ty) in &stmt.fields {
        if fields.iter().any(|(n, _)| n == field.as_str()) {
            return Err(QueryError::invalid(format!(
                "Duplicate field name '{}' in type '{name}'",
                field.as_str()
            )));
        }
        if matches!(ty, TypeExpr::Udt { .. }) {
            // CreateTypeStatement checks this before resolving the name.
            return Err(QueryError::invalid(
                "A user type cannot contain non-frozen UDTs",
            ));
        }
        check_written_type(ty)?;
        let resolved = resolve_type(ks, ty)?;
        if resolved.is_counter() {
            return Err(QueryError::invalid("A user type cannot contain counters"));
        }
        fields.push((field.as_str().to_string(), resolved));
    }
    let mut keyspace_def = Keyspace::clone(ks);
    keyspace_def.types.push(UdtType {
        keyspace: keyspace.to_string(),
        name: name.to_string(),
        fields,
    });
    let mut next = schema.clone();
    next.keyspaces
        .insert(keyspace.to_string(), Arc::new(keyspace_def));
    Ok(DdlOutcome {
        schema: Some(next),
        change: event,
        effects: StorageEffects::default(),
    })
}

/// Replaces every use of type `updated` in `ty`.
fn replace_udt(ty: &CqlType, updated: &UdtType) -> CqlType {
    match ty {
        CqlType::Udt(u) if u.keyspace == updated.keyspace && u.name == updated.name => {
            CqlType::Udt(updated.clone())
        }
        CqlType::Udt(u) => CqlType::Udt(UdtType {
            keyspace: u.keyspace.clone(),
            name: u.name.clone(),
            fields: u
                .fields
                .iter()
                .map(|(n, t)| (n.clone(), replace_udt(t, updated)))
                .collect(),
        }),
        CqlType::List(e) => CqlType::List(Box::new(replace_udt(e, updated))),
        CqlType::Set(e) => CqlType::Set(Box::new(replace_udt(e, updated))),
        CqlType::Map(k, v) => CqlType::Map(
            Box::new(replace_udt(k, updated)),
            Box::new(replace_udt(v, updated)),
        ),
        CqlType::Tuple(items) => {
            CqlType::Tuple(items.iter().map(|t| replace_udt(t, updated)).collect())
        }
        CqlType::Vector(e, n) => CqlType::Vector(Box::new(replace_udt(e, updated)), *n),
        CqlType::Frozen(inner) => CqlType::Frozen(Box::new(replace_udt(inner, updated))),
        other => other.clone(),
    }
}

fn uses_udt(ty: &CqlType, keyspace: &str, name: &str) -> bool {
    match ty {
        CqlType::Udt(u) => {
            (u.keyspace == keyspace && u.name == name)
                || u.fields.iter().any(|(_, t)| uses_udt(t, keyspace, name))
        }
        CqlType::List(e) | CqlType::Set(e) | CqlType::Frozen(e) | CqlType::Vector(e, _) => {
            uses_udt(e, keyspace, name)
        }
        CqlType::Map(k, v) => uses_udt(k, keyspace, name) || uses_udt(v, keyspace, name),
        CqlType::Tuple(items) => items.iter().any(|t| uses_udt(t, keyspace, name)),
        _ => false,
    }
}

pub fn alter_type(schema: &Schema, keyspace: &str, stmt: &AlterType) -> Result<DdlOutcome> {
    refuse_system_schema_change(keyspace, "ALTER", || all_tables_resource(keyspace))?;
    let name = stmt.name.name.as_str();
    let event = change(SchemaChangeType::Updated, type_target(keyspace, name));
    let ks = existing_keyspace(schema, keyspace)?;
    let Some(current) = ks.user_type(name) else {
        if stmt.if_exists {
            return Ok(DdlOutcome {
                schema: None,
                change: event,
                effects: StorageEffects::default(),
            });
        }
        return Err(QueryError::invalid(format!(
            "Type {} doesn't exist",
            rocksandra_data::types::qualified_name(keyspace, name)
        )));
    };
    let mut updated = current.clone();
    match &stmt.action {
        AlterTypeAction::Add {
            if_not_exists,
            field,
            ty,
        } => {
            if !add_type_field(
                ks,
                (keyspace, name),
                &mut updated,
                *if_not_exists,
                field.as_str(),
                ty,
            )? {
                return Ok(DdlOutcome {
                    schema: None,
                    change: event,
                    effects: StorageEffects::default(),
                });
            }
        }
        AlterTypeAction::Rename { if_exists, renames } => {
            rename_type_fields((keyspace, name), &mut updated, *if_exists, renames)?;
        }
        AlterTypeAction::AlterFieldType { .. } => {
            return Err(QueryError::invalid(
                "Altering field types is no longer supported",
            ));
        }
    }
    let (keyspace_def, effects) = keyspace_with_type(ks, (keyspace, name), &updated);
    let mut next = schema.clone();
    next.keyspaces
        .insert(keyspace.to_string(), Arc::new(keyspace_def));
    Ok(DdlOutcome {
        schema: Some(next),
        change: event,
        effects,
    })
}

/// ALTER TYPE ADD: appends the field to `updated`; false when it exists
/// and IF NOT EXISTS was given (nothing changes). The new field's type may
/// not refer to the type itself.
fn add_type_field(
    ks: &Keyspace,
    (keyspace, name): (&str, &str),
    updated: &mut UdtType,
    if_not_exists: bool,
    field: &str,
    ty: &TypeExpr,
) -> Result<bool> {
    let qualified = rocksandra_data::types::qualified_name(keyspace, name);
    if updated.fields.iter().any(|(n, _)| n == field) {
        if if_not_exists {
            return Ok(false);
        }
        return Err(QueryError::invalid(format!(
            "Cannot add field {field} to type {qualified}: a field with name {field} already exists"
        )));
    }
    check_written_type(ty)?;
    let resolved = resolve_type(ks, ty)?;
    if resolved.is_counter() {
        return Err(QueryError::invalid("A user type cannot contain counters"));
    }
    if uses_udt(&resolved, keyspace, name) {
        return Err(QueryError::invalid(format!(
            "Cannot add new field '{field}' of type {resolved} to user type {qualified} as it would create a circular reference"
        )));
    }
    let in_partition_keys: Vec<String> = ks
        .tables
        .values()
        .filter(|t| {
            t.columns
                .iter()
                .any(|c| c.kind == ColumnKind::PartitionKey && uses_udt(&c.ty, keyspace, name))
        })
        .map(|t| rocksandra_data::types::qualified_name(keyspace, &t.name))
        .collect();
    if !in_partition_keys.is_empty() {
        return Err(QueryError::invalid(format!(
            "Cannot add new field {field} of type {resolved} to user type {qualified} as the type is being used in partition key by the following tables: {}",
            in_partition_keys.join(", ")
        )));
    }
    updated.fields.push((field.to_string(), resolved));
    Ok(true)
}

/// ALTER TYPE RENAME: renames fields of `updated` in order (unknown ones
/// skipped with IF EXISTS); a new name may not be taken.
fn rename_type_fields(
    (keyspace, name): (&str, &str),
    updated: &mut UdtType,
    if_exists: bool,
    renames: &[(Ident, Ident)],
) -> Result<()> {
    let qualified = rocksandra_data::types::qualified_name(keyspace, name);
    for (from, to) in renames {
        let Some(i) = updated.fields.iter().position(|(n, _)| n == from.as_str()) else {
            if if_exists {
                continue;
            }
            return Err(QueryError::invalid(format!(
                "Unkown field {} in user type {qualified}",
                from.as_str()
            )));
        };
        if updated.fields.iter().any(|(n, _)| n == to.as_str()) {
            // AlterTypeStatement's format names the keyspace where the type belongs.
            return Err(QueryError::invalid(format!(
                "Duplicate field name {} in type {keyspace}",
                to.as_str()
            )));
        }
        updated.fields[i].0 = to.as_str().to_string();
    }
    Ok(())
}

/// The keyspace with `updated` in place of its old definition, in the
/// types that use it and in the columns of tables that use it (those
/// tables are altered in storage too).
fn keyspace_with_type(
    ks: &Keyspace,
    (keyspace, name): (&str, &str),
    updated: &UdtType,
) -> (Keyspace, StorageEffects) {
    let mut keyspace_def = Keyspace::clone(ks);
    for t in keyspace_def.types.iter_mut() {
        if t.name == name {
            *t = updated.clone();
        } else {
            t.fields = t
                .fields
                .iter()
                .map(|(n, ty)| (n.clone(), replace_udt(ty, updated)))
                .collect();
        }
    }
    let mut effects = StorageEffects::default();
    let names: Vec<String> = keyspace_def.tables.keys().cloned().collect();
    for table_name in names {
        let Some(table) = keyspace_def.tables.get(&table_name) else {
            continue;
        };
        if table
            .columns
            .iter()
            .any(|c| uses_udt(&c.ty, keyspace, name))
        {
            let mut t = Table::clone(table);
            for c in t.columns.iter_mut() {
                c.ty = replace_udt(&c.ty, updated);
            }
            let t = Arc::new(t);
            effects.alter.push(t.clone());
            keyspace_def.tables.insert(table_name, t);
        }
    }
    (keyspace_def, effects)
}

pub fn drop_type(
    schema: &Schema,
    keyspace: &str,
    name: &str,
    if_exists: bool,
) -> Result<DdlOutcome> {
    refuse_system_schema_change(keyspace, "DROP", || all_tables_resource(keyspace))?;
    let event = change(SchemaChangeType::Dropped, type_target(keyspace, name));
    let ks = match schema.keyspace(keyspace) {
        Some(ks) => ks,
        None if if_exists => {
            return Ok(DdlOutcome {
                schema: None,
                change: event,
                effects: StorageEffects::default(),
            })
        }
        None => {
            return Err(QueryError::invalid(format!(
                "Keyspace '{keyspace}' doesn't exist"
            )))
        }
    };
    if ks.user_type(name).is_none() {
        if if_exists {
            return Ok(DdlOutcome {
                schema: None,
                change: event,
                effects: StorageEffects::default(),
            });
        }
        return Err(QueryError::invalid(format!(
            "Type '{}' doesn't exist",
            rocksandra_data::types::qualified_name(keyspace, name)
        )));
    }
    let user_types: Vec<&str> = ks
        .types
        .iter()
        .filter(|t| t.name != name && t.fields.iter().any(|(_, ty)| uses_udt(ty, keyspace, name)))
        .map(|t| t.name.as_str())
        .collect();
    if !user_types.is_empty() {
        return Err(QueryError::invalid(format!(
            "Cannot drop user type '{}' as it is still used by user types {}",
            rocksandra_data::types::qualified_name(keyspace, name),
            user_types.join(", ")
        )));
    }
    // Named in the order the tables were created, as Cassandra lists them.
    let mut user_tables: Vec<&Table> = ks
        .tables
        .values()
        .filter(|t| t.columns.iter().any(|c| uses_udt(&c.ty, keyspace, name)))
        .map(|t| t.as_ref())
        .collect();
    user_tables.sort_by_key(|t| t.storage_id);
    let users: Vec<&str> = user_tables.iter().map(|t| t.name.as_str()).collect();
    if !users.is_empty() {
        return Err(QueryError::invalid(format!(
            "Cannot drop user type '{}' as it is still used by tables {}",
            rocksandra_data::types::qualified_name(keyspace, name),
            users.join(", ")
        )));
    }
    let mut keyspace_def = Keyspace::clone(ks);
    keyspace_def.types.retain(|t| t.name != name);
    let mut next = schema.clone();
    next.keyspaces
        .insert(keyspace.to_string(), Arc::new(keyspace_def));
    Ok(DdlOutcome {
        schema: Some(next),
        change: event,
        effects: StorageEffects::default(),
    })
}

// ---------------------------------------------------------------- tables

pub fn existing_keyspace<'a>(schema: &'a Schema, keyspace: &str) -> Result<&'a Arc<Keyspace>> {
    schema
        .keyspace(keyspace)
        .ok_or_else(|| QueryError::invalid(format!("Keyspace '{keyspace}' doesn't exist")))
}

/// The parameters of a new table or view: the defaults with the WITH
/// properties applied. A table given no `bloom_filter_fp_chance` takes its
/// compaction strategy's default (`CompactionParams.defaultBloomFilterFbChance`:
/// 0.1 for LeveledCompactionStrategy, 0.01 otherwise); ALTER keeps the
/// chance a table has.
pub fn new_table_params(properties: &[Property]) -> Result<TableParams> {
    let mut params = TableParams::default();
    let params_only: Vec<Property> = properties
        .iter()
        .filter(|p| p.name.as_str() != "id")
        .cloned()
        .collect();
    apply_table_properties(&mut params, &params_only)?;
    let chance_given = properties
        .iter()
        .any(|p| p.name.as_str() == "bloom_filter_fp_chance");
    let leveled =
        params.compaction.get("class").map(String::as_str) == Some(LEVELED_COMPACTION_CLASS);
    if !chance_given && leveled {
        params.bloom_filter_fp_chance = 0.1;
    }
    Ok(params)
}

/// The id a new table or view is given: `WITH id = <uuid>` (Cassandra's
/// `TableAttributes.getId`, for recreating a table with its old id), else a
/// random one. ALTER refuses the option.
pub fn new_table_id(properties: &[Property], random: &dyn Fn() -> u64) -> Result<[u8; 16]> {
    let Some(p) = properties.iter().find(|p| p.name.as_str() == "id") else {
        return Ok(rocksandra_data::uuid::random_v4(random));
    };
    rocksandra_data::uuid::parse_text(&property_text(p)?)
        .ok_or_else(|| QueryError::config("Invalid table id"))
}

/// Applies WITH properties of CREATE/ALTER TABLE to `params`.
pub fn apply_table_properties(params: &mut TableParams, properties: &[Property]) -> Result<()> {
    check_duplicate_properties(properties)?;
    for p in properties {
        apply_table_property(params, p)?;
    }
    validate_intervals(params)
}

/// The checks of Cassandra's `TableParams.validate` on the index intervals
/// and the flush period, which hold between properties.
fn validate_intervals(params: &TableParams) -> Result<()> {
    if params.min_index_interval < 1 {
        return Err(QueryError::config(format!(
            "min_index_interval must be greater than or equal to 1 (got {})",
            params.min_index_interval
        )));
    }
    if params.max_index_interval < params.min_index_interval {
        return Err(QueryError::config(format!(
            "max_index_interval must be greater than or equal to min_index_interval ({}) (got {})",
            params.min_index_interval, params.max_index_interval
        )));
    }
    if params.memtable_flush_period_in_ms < 0 {
        return Err(QueryError::config(format!(
            "memtable_flush_period_in_ms must be greater than or equal to 0 (got {})",
            params.memtable_flush_period_in_ms
        )));
    }
    Ok(())
}

/// `speculative_retry` and `additional_write_policy`: Cassandra's
/// `SpeculativeRetryPolicy.fromString`, in its normal form (`99p`, `50ms`,
/// `NONE`, `ALWAYS`, `MIN(99p,50ms)`).
fn retry_policy(text: &str, option: &str) -> Result<String> {
    let invalid = || QueryError::config(format!("Invalid value {text} for option '{option}'"));
    let upper = text.trim().to_ascii_uppercase();
    if upper == "NONE" || upper == "ALWAYS" {
        return Ok(upper);
    }
    for hybrid in ["MIN", "MAX"] {
        if let Some(inner) = upper
            .strip_prefix(hybrid)
            .and_then(|r| r.strip_prefix('('))
            .and_then(|r| r.strip_suffix(')'))
        {
            let (a, b) = inner.split_once(',').ok_or_else(invalid)?;
            let a = retry_policy(a, option).map_err(|_| invalid())?;
            let b = retry_policy(b, option).map_err(|_| invalid())?;
            return Ok(format!("{hybrid}({a},{b})"));
        }
    }
    let number = |digits: &str| -> Option<f64> {
        let ok = !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit() || c == '.');
        ok.then(|| digits.parse::<f64>().ok()).flatten()
    };
    if let Some(digits) = upper.strip_suffix("MS") {
        let ms = number(digits).ok_or_else(invalid)?;
        return Ok(format!("{}ms", java_decimal_format(ms)));
    }
    let digits = upper
        .strip_suffix("PERCENTILE")
        .or_else(|| upper.strip_suffix('P'))
        .ok_or_else(invalid)?;
    let percentile = number(digits).ok_or_else(invalid)?;
    if percentile <= 0.0 || percentile >= 100.0 {
        return Err(QueryError::config(format!(
            "Invalid value {text} for PERCENTILE option '{option}': must be between (0.0 and 100.0)"
        )));
    }
    Ok(format!("{}p", java_decimal_format(percentile)))
}

/// Java's `new DecimalFormat("#.####").format(v)` for a non-negative value.
fn java_decimal_format(v: f64) -> String {
    let text = format!("{v:.4}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.to_string()
}

/// An integer table property.
fn int_property(p: &Property) -> Result<i64> {
    let text = property_text(p)?;
    text.parse::<i64>().map_err(|_| {
        QueryError::syntax(format!(
            "Invalid integer value {text} for '{}'",
            p.name.as_str()
        ))
    })
}

/// A floating-point table property.
fn double_property(p: &Property) -> Result<f64> {
    let text = property_text(p)?;
    text.parse::<f64>().map_err(|_| {
        QueryError::syntax(format!(
            "Invalid double value {text} for '{}'",
            p.name.as_str()
        ))
    })
}

/// Applies one WITH property: checks its value and sets it in `params`.
fn apply_table_property(params: &mut TableParams, p: &Property) -> Result<()> {
    match p.name.as_str() {
        "comment" => params.comment = property_text(p)?,
        "default_time_to_live" => params.default_time_to_live = default_time_to_live(p)?,
        "gc_grace_seconds" => {
            let v = int_property(p)?;
            if v < 0 {
                return Err(QueryError::config(format!(
                    "gc_grace_seconds must be greater than or equal to 0 (got {v})"
                )));
            }
            params.gc_grace_seconds = v.min(i64::from(i32::MAX)) as i32;
        }
        "bloom_filter_fp_chance" => {
            let v = double_property(p)?;
            // BloomCalculations.minSupportedBloomFilterFpChance().
            const MIN_FP_CHANCE: f64 = 6.71e-5;
            if v <= MIN_FP_CHANCE || v > 1.0 {
                return Err(QueryError::config(format!(
                    "bloom_filter_fp_chance must be larger than 6.71E-5 and less than or equal to 1.0 (got {})",
                    rocksandra_data::value::java_double(v)
                )));
            }
            params.bloom_filter_fp_chance = v;
        }
        "crc_check_chance" => {
            let v = double_property(p)?;
            if !(0.0..=1.0).contains(&v) {
                return Err(QueryError::config(format!(
                    "crc_check_chance must be larger than or equal to 0 and smaller than or equal to 1.0 (got {})",
                    rocksandra_data::value::java_double(v)
                )));
            }
            params.crc_check_chance = v;
        }
        "memtable_flush_period_in_ms" => {
            params.memtable_flush_period_in_ms = int_property(p)? as i32
        }
        "min_index_interval" => params.min_index_interval = int_property(p)? as i32,
        "max_index_interval" => params.max_index_interval = int_property(p)? as i32,
        "speculative_retry" => {
            params.speculative_retry = retry_policy(&property_text(p)?, "speculative_retry")?
        }
        "additional_write_policy" => {
            params.additional_write_policy =
                retry_policy(&property_text(p)?, "additional_write_policy")?
        }
        "read_repair" => {
            let v = property_text(p)?.to_ascii_uppercase();
            if v != "BLOCKING" && v != "NONE" {
                // `ReadRepairStrategy.fromString`'s valueOf throws, uncaught.
                return Err(QueryError::java_exception(
                    "java.lang.IllegalArgumentException",
                    Some(&format!(
                        "No enum constant org.apache.cassandra.service.reads.repair.ReadRepairStrategy.{v}"
                    )),
                ));
            }
            params.read_repair = v;
        }
        "memtable" => {
            let name = property_text(p)?;
            // Only the configuration every node has; cassandra.yaml may add others.
            if name != "default" {
                return Err(QueryError::config(format!(
                    "Memtable configuration \"{name}\" not found."
                )));
            }
            params.memtable = name;
        }
        "cdc" => params.cdc = property_bool(p)?,
        "allow_auto_snapshot" => params.allow_auto_snapshot = property_bool(p)?,
        "incremental_backups" => params.incremental_backups = property_bool(p)?,
        "caching" => params.caching = caching_option(p)?,
        "compaction" => params.compaction = compaction_option(p)?,
        "compression" => params.compression = compression_option(p)?,
        // Cassandra 5.0.6 checks that it is a map and keeps none of it: the
        // table's extensions stay empty in system_schema and DESCRIBE.
        "extensions" => {
            property_map(p)?;
        }
        "id" => return Err(QueryError::config("Cannot alter table id.".to_string())),
        other => {
            return Err(QueryError::syntax(format!("Unknown property '{other}'")));
        }
    }
    Ok(())
}

/// `default_time_to_live`: between 0 and the longest TTL.
fn default_time_to_live(p: &Property) -> Result<i32> {
    let v = int_property(p)?;
    if v < 0 {
        return Err(QueryError::config(format!(
            "default_time_to_live must be greater than or equal to 0 (got {v})"
        )));
    }
    if v > i64::from(crate::MAX_TTL_SECONDS) {
        return Err(QueryError::config(format!(
            "default_time_to_live must be less than or equal to {} (got {v})",
            crate::MAX_TTL_SECONDS
        )));
    }
    Ok(v as i32)
}

/// `caching`: `keys` is ALL or NONE; missing sub-options get their defaults.
fn caching_option(p: &Property) -> Result<BTreeMap<String, String>> {
    let mut m = property_map(p)?;
    if let Some(keys) = m.get("keys") {
        if keys != "ALL" && keys != "NONE" {
            return Err(QueryError::config(format!(
                "Invalid value '{keys}' for caching sub-option 'keys': only 'ALL' and 'NONE' are allowed"
            )));
        }
    }
    if let Some(rows) = m.get("rows_per_partition") {
        let valid = rows.eq_ignore_ascii_case("ALL")
            || rows.eq_ignore_ascii_case("NONE")
            || rows.parse::<i32>().is_ok_and(|n| n >= 0);
        if !valid {
            return Err(QueryError::config(format!(
                "Invalid value '{rows}' for caching sub-option 'rows_per_partition': only 'ALL', 'NONE', and integer values are allowed"
            )));
        }
    }
    m.entry("keys".into()).or_insert_with(|| "ALL".into());
    m.entry("rows_per_partition".into())
        .or_insert_with(|| "NONE".into());
    Ok(m)
}

/// The full name of the leveled compaction strategy's class.
const LEVELED_COMPACTION_CLASS: &str =
    "org.apache.cassandra.db.compaction.LeveledCompactionStrategy";

/// `compaction`: a known strategy class (its full name kept) and the
/// threshold defaults.
fn compaction_option(p: &Property) -> Result<BTreeMap<String, String>> {
    let mut m = property_map(p)?;
    let Some(class) = m.get("class").cloned() else {
        return Err(QueryError::config(
            "Missing sub-option 'class' for the 'compaction' option",
        ));
    };
    let full = if class.contains('.') {
        class
    } else {
        format!("org.apache.cassandra.db.compaction.{class}")
    };
    const KNOWN: [&str; 4] = [
        "SizeTieredCompactionStrategy",
        "LeveledCompactionStrategy",
        "TimeWindowCompactionStrategy",
        "UnifiedCompactionStrategy",
    ];
    if !KNOWN.iter().any(|k| full.ends_with(k)) {
        return Err(QueryError::config(format!(
            "Unable to find compaction strategy class '{full}'"
        )));
    }
    check_compaction_suboptions(&full, &m)?;
    m.insert("class".into(), full);
    m.entry("max_threshold".into())
        .or_insert_with(|| "32".into());
    m.entry("min_threshold".into())
        .or_insert_with(|| "4".into());
    Ok(m)
}

/// The strategy's `validateOptions` for the sub-options checked here: the
/// minimum threshold, and the time window unit of TimeWindowCompactionStrategy.
fn check_compaction_suboptions(class: &str, m: &BTreeMap<String, String>) -> Result<()> {
    if class.ends_with("UnifiedCompactionStrategy") {
        return Ok(());
    }
    if let Some(min) = m.get("min_threshold").and_then(|t| t.parse::<i64>().ok()) {
        if min < 2 {
            return Err(QueryError::config(format!(
                "Min compaction threshold cannot be less than 2 (got {min})"
            )));
        }
    }
    if class.ends_with("TimeWindowCompactionStrategy") {
        if let Some(unit) = m.get("compaction_window_unit") {
            if !["MINUTES", "HOURS", "DAYS"].contains(&unit.as_str()) {
                return Err(QueryError::config(format!(
                    "{unit} is not valid for compaction_window_unit"
                )));
            }
        }
    }
    Ok(())
}

/// `compression`: disabled, or a known compressor class (its full name
/// kept) with its chunk length, checked in the order of Cassandra's
/// `CompressionParams.fromMap`. An empty map disables compression.
fn compression_option(p: &Property) -> Result<BTreeMap<String, String>> {
    let disabled = || BTreeMap::from([("enabled".into(), "false".into())]);
    let mut m = property_map(p)?;
    if m.is_empty() {
        return Ok(disabled());
    }
    let enabled = m.remove("enabled");
    if enabled.is_some_and(|e| !e.eq_ignore_ascii_case("true")) {
        if !m.is_empty() {
            return Err(QueryError::config(
                "If the 'enabled' option is set to false no other options must be specified",
            ));
        }
        return Ok(disabled());
    }
    let class = m
        .remove("class")
        .or_else(|| m.remove("sstable_compression"))
        .ok_or_else(|| {
            QueryError::config("Missing sub-option 'class' for the 'compression' option.")
        })?;
    let chunk_kb = match m.get("chunk_length_in_kb") {
        Some(text) => parse_chunk_length_kb(text)?,
        None => (rocksandra_storage::DEFAULT_BLOCK_BYTES / 1024) as i32,
    };
    let full = compressor_class(class)?;
    check_chunk_length_kb(chunk_kb)?;
    m.insert("class".into(), full);
    m.insert("chunk_length_in_kb".into(), chunk_kb.to_string());
    Ok(m)
}

/// The full name of a known compressor class.
fn compressor_class(class: String) -> Result<String> {
    let full = if class.contains('.') {
        class
    } else {
        format!("org.apache.cassandra.io.compress.{class}")
    };
    const COMPRESSORS: [&str; 5] = [
        "LZ4Compressor",
        "SnappyCompressor",
        "DeflateCompressor",
        "ZstdCompressor",
        "NoopCompressor",
    ];
    if !COMPRESSORS
        .iter()
        .any(|c| full == format!("org.apache.cassandra.io.compress.{c}"))
    {
        return Err(QueryError::config(format!(
            "Could not create Compression for type {full}"
        )));
    }
    Ok(full)
}

/// `chunk_length_in_kb` as Cassandra parses it: an int of KiB whose
/// bytes fit an int.
fn parse_chunk_length_kb(text: &str) -> Result<i32> {
    let kb: i32 = text
        .parse()
        .map_err(|_| QueryError::config("Invalid value for chunk_length_in_kb"))?;
    if kb > i32::MAX / 1024 {
        return Err(QueryError::config(format!(
            "Value of chunk_length_in_kb is too large ({kb})"
        )));
    }
    Ok(kb)
}

/// A chunk length is positive and a power of 2 (Cassandra's `validate`).
fn check_chunk_length_kb(kb: i32) -> Result<()> {
    if kb <= 0 {
        return Err(QueryError::config(
            "Invalid negative or null chunk_length_in_kb",
        ));
    }
    if kb & (kb - 1) != 0 {
        return Err(QueryError::config(
            "chunk_length_in_kb must be a power of 2",
        ));
    }
    Ok(())
}

fn check_key_column_type(name: &str, ty: &CqlType) -> Result<()> {
    if ty.is_multi_cell() {
        if ty.is_collection() {
            return Err(QueryError::invalid(format!(
                "Invalid non-frozen collection type {ty} for PRIMARY KEY column '{name}'"
            )));
        }
        let type_name = match ty {
            CqlType::Udt(u) => rocksandra_data::types::qualified_name(&u.keyspace, &u.name),
            other => other.to_string(),
        };
        return Err(QueryError::invalid(format!(
            "Invalid non-frozen user-defined type \"{type_name}\" for PRIMARY KEY column '{name}'"
        )));
    }
    if ty.is_counter() {
        return Err(QueryError::invalid(format!(
            "counter type is not supported for PRIMARY KEY column '{name}'"
        )));
    }
    if !ty.can_be_key() {
        // A duration anywhere in the type is named as the reason.
        let shown = if ty.references_duration() {
            "duration".to_string()
        } else {
            ty.to_string()
        };
        return Err(QueryError::invalid(format!(
            "{shown} type is not supported for PRIMARY KEY column '{name}'"
        )));
    }
    Ok(())
}

/// A column as CREATE TABLE declares it: name, resolved type, STATIC.
type DeclaredColumn = (String, CqlType, bool);

pub fn create_table(
    schema: &Schema,
    keyspace: &str,
    stmt: &CreateTable,
    random: &dyn Fn() -> u64,
    masking_enabled: bool,
) -> Result<DdlOutcome> {
    let name = stmt.name.name.as_str();
    let event = change(SchemaChangeType::Created, table_target(keyspace, name));
    refuse_system_schema_change(keyspace, "CREATE", || all_tables_resource(keyspace))?;
    let ks = existing_keyspace(schema, keyspace)?;
    if ks.tables.contains_key(name) {
        if stmt.if_not_exists {
            return Ok(DdlOutcome {
                schema: None,
                change: event,
                effects: StorageEffects::default(),
            });
        }
        return Err(QueryError::AlreadyExists {
            keyspace: keyspace.to_string(),
            table: name.to_string(),
            message: format!(
                "Cannot add already existing table \"{name}\" to keyspace \"{keyspace}\""
            ),
        });
    }
    if !valid_name(name) {
        return Err(QueryError::config(format!(
            "{keyspace}.{name}: Table name must not be empty or not contain non-alphanumeric-underscore characters (got \"{name}\")"
        )));
    }
    if stmt.partition_key.is_empty() {
        return Err(QueryError::invalid(format!(
            "No PRIMARY KEY specifed for table '{name}' (exactly one required)"
        )));
    }
    let declared = declared_columns(ks, stmt, name)?;
    let key_positions = key_column_positions(&declared, stmt, name)?;
    let descending = clustering_descending(stmt)?;
    let mut columns = key_columns(&declared, stmt, name, &descending)?;
    if stmt.options.compact_storage {
        check_compact_table(&declared, &key_positions, stmt)?;
    }
    let counters = add_value_columns(&mut columns, &declared, &key_positions, stmt)?;
    let compact = stmt
        .options
        .compact_storage
        .then(|| add_compact_columns(&mut columns, stmt, counters > 0));
    let clustering_count = columns
        .iter()
        .filter(|c| c.kind == ColumnKind::Clustering)
        .count();
    let next_id = columns.len() as u32;
    let params = new_table_params(&stmt.options.properties)?;
    if counters > 0 && params.default_time_to_live > 0 {
        return Err(QueryError::invalid(
            "Cannot set default_time_to_live on a table with counters",
        ));
    }
    let mut table = Table {
        keyspace: keyspace.to_string(),
        name: name.to_string(),
        id: new_table_id(&stmt.options.properties, random)?,
        storage_id: TableId(schema.next_table_id),
        partition_key_count: stmt.partition_key.len(),
        clustering_count,
        columns,
        params,
        next_column_id: next_id,
        dropped: Vec::new(),
        indexes: Vec::new(),
        is_virtual: false,
        view: None,
        compact,
        masks: Default::default(),
        metrics: Default::default(),
    };
    table.sort_value_columns();
    crate::masking::create(schema, stmt, &mut table, masking_enabled)?;
    let table = Arc::new(table);
    let mut next = schema.clone();
    next.next_table_id += 1;
    let mut keyspace_def = Keyspace::clone(ks);
    keyspace_def.tables.insert(name.to_string(), table.clone());
    next.keyspaces
        .insert(keyspace.to_string(), Arc::new(keyspace_def));
    Ok(DdlOutcome {
        schema: Some(next),
        change: event,
        effects: StorageEffects {
            create: vec![table],
            ..StorageEffects::default()
        },
    })
}

/// The declared columns in declaration order, with their types checked and
/// resolved; a column declared twice is an error.
fn declared_columns(ks: &Keyspace, stmt: &CreateTable, name: &str) -> Result<Vec<DeclaredColumn>> {
    let mut declared: Vec<DeclaredColumn> = Vec::new();
    for def in &stmt.columns {
        let cname = def.name.as_str();
        if declared.iter().any(|(n, _, _)| n == cname) {
            return Err(QueryError::invalid(format!(
                "Duplicate column '{cname}' declaration for table '{name}'"
            )));
        }
        check_written_type(&def.ty)?;
        let ty = resolve_type(ks, &def.ty)?;
        check_column_type(&ty, true)?;
        declared.push((cname.to_string(), ty, def.is_static));
    }
    Ok(declared)
}

/// The declaration index of a PRIMARY KEY column of table `name`.
fn find_declared(declared: &[DeclaredColumn], ident: &Ident, name: &str) -> Result<usize> {
    declared
        .iter()
        .position(|(n, _, _)| n == ident.as_str())
        .ok_or_else(|| {
            QueryError::invalid(format!(
                "Unknown column '{}' referenced in PRIMARY KEY for table '{name}'",
                ident.as_str()
            ))
        })
}

/// The declaration indexes of the PRIMARY KEY columns, partition key first;
/// each must be declared and appear once.
fn key_column_positions(
    declared: &[DeclaredColumn],
    stmt: &CreateTable,
    name: &str,
) -> Result<Vec<usize>> {
    let mut key_positions = Vec::new();
    for ident in stmt.partition_key.iter().chain(&stmt.clustering_key) {
        let i = find_declared(declared, ident, name)?;
        if key_positions.contains(&i) {
            return Err(QueryError::invalid(format!(
                "Duplicate column '{}' in PRIMARY KEY clause for table '{name}'",
                ident.as_str()
            )));
        }
        key_positions.push(i);
    }
    Ok(key_positions)
}

/// Whether each clustering column is DESC, from CLUSTERING ORDER BY (which
/// may only name clustering columns, in their order).
fn clustering_descending(stmt: &CreateTable) -> Result<Vec<bool>> {
    let mut descending = vec![false; stmt.clustering_key.len()];
    let not_clustering: Vec<&str> = stmt
        .options
        .clustering_order
        .iter()
        .filter(|(c, _)| !stmt.clustering_key.contains(c))
        .map(|(c, _)| c.as_str())
        .collect();
    if !not_clustering.is_empty() {
        return Err(QueryError::invalid(format!(
            "Only clustering key columns can be defined in CLUSTERING ORDER directive: [{}] are not clustering columns",
            not_clustering.join(", ")
        )));
    }
    for (i, (column, order)) in stmt.options.clustering_order.iter().enumerate() {
        if stmt.options.clustering_order[..i]
            .iter()
            .any(|(c, _)| c == column)
        {
            return Err(QueryError::invalid(format!(
                "Duplicate column '{}' in CLUSTERING ORDER BY clause for table '{}'",
                column.as_str(),
                stmt.name.name.as_str()
            )));
        }
        let position = stmt
            .clustering_key
            .iter()
            .position(|c| c == column)
            .unwrap_or(usize::MAX);
        if position != i {
            let expected = stmt.clustering_key.get(i).map(|c| c.as_str()).unwrap_or("");
            return Err(QueryError::invalid(format!(
                "The order of columns in the CLUSTERING ORDER directive must match that of the clustering columns ({} must appear before {})",
                expected,
                column.as_str()
            )));
        }
        descending[i] = *order == ClusteringOrder::Desc;
    }
    Ok(descending)
}

/// The partition key then clustering columns, with ids from 0; a key column
/// may not be static and must have a key type.
fn key_columns(
    declared: &[DeclaredColumn],
    stmt: &CreateTable,
    name: &str,
    descending: &[bool],
) -> Result<Vec<Column>> {
    let mut columns: Vec<Column> = Vec::new();
    let key_columns = stmt
        .partition_key
        .iter()
        .map(|ident| (ident, ColumnKind::PartitionKey))
        .enumerate()
        .chain(
            stmt.clustering_key
                .iter()
                .map(|ident| (ident, ColumnKind::Clustering))
                .enumerate(),
        );
    for (position, (ident, kind)) in key_columns {
        let (cname, ty, is_static) = &declared[find_declared(declared, ident, name)?];
        if *is_static {
            return Err(QueryError::invalid(format!(
                "Static column '{cname}' cannot be part of the PRIMARY KEY"
            )));
        }
        check_key_column_type(cname, ty)?;
        columns.push(Column {
            name: cname.clone(),
            ty: ty.clone(),
            kind,
            position,
            descending: kind == ColumnKind::Clustering && descending[position],
            id: ColumnId(columns.len() as u32),
        });
    }
    Ok(columns)
}

/// Appends the static and regular columns (ids following the key columns'),
/// in declaration order; returns how many are counters, which must be all
/// of them or none.
fn add_value_columns(
    columns: &mut Vec<Column>,
    declared: &[DeclaredColumn],
    key_positions: &[usize],
    stmt: &CreateTable,
) -> Result<usize> {
    let mut next_id = columns.len() as u32;
    let mut counters = 0;
    let mut values = 0;
    for (i, (cname, ty, is_static)) in declared.iter().enumerate() {
        if key_positions.contains(&i) {
            continue;
        }
        if *is_static && stmt.clustering_key.is_empty() {
            return Err(QueryError::invalid(
                "Static columns are only useful (and thus allowed) if the table has at least one clustering column",
            ));
        }
        values += 1;
        if ty.is_counter() {
            counters += 1;
        }
        columns.push(Column {
            name: cname.clone(),
            ty: ty.clone(),
            kind: if *is_static {
                ColumnKind::Static
            } else {
                ColumnKind::Regular
            },
            position: 0,
            descending: false,
            id: ColumnId(next_id),
        });
        next_id += 1;
    }
    if counters > 0 && counters != values {
        return Err(QueryError::invalid(
            "Cannot mix counter and non counter columns in the same table",
        ));
    }
    Ok(counters)
}

/// CreateTableStatement.validateCompactTable: what a COMPACT STORAGE table
/// may not declare, in Cassandra's order.
fn check_compact_table(
    declared: &[DeclaredColumn],
    key_positions: &[usize],
    stmt: &CreateTable,
) -> Result<()> {
    let mut values: Vec<&DeclaredColumn> = declared
        .iter()
        .enumerate()
        .filter(|(i, _)| !key_positions.contains(i))
        .map(|(_, c)| c)
        .collect();
    if values.iter().any(|(_, ty, _)| ty.is_multi_cell()) {
        return Err(QueryError::invalid(
            "Non-frozen collections and UDTs are not supported with COMPACT STORAGE",
        ));
    }
    if declared.iter().any(|(_, _, is_static)| *is_static) {
        return Err(QueryError::invalid(
            "Static columns are not supported in COMPACT STORAGE tables",
        ));
    }
    if stmt.clustering_key.is_empty() && values.is_empty() {
        return Err(QueryError::invalid(
            "No definition found that is not part of the PRIMARY KEY",
        ));
    }
    if !stmt.clustering_key.is_empty() && values.len() > 1 {
        values.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let names: Vec<&str> = values.iter().map(|(n, _, _)| n.as_str()).collect();
        return Err(QueryError::invalid(format!(
            "COMPACT STORAGE with composite PRIMARY KEY allows no more than one column not part of the PRIMARY KEY (got: {})",
            names.join(", ")
        )));
    }
    Ok(())
}

/// CreateTableStatement.fixupCompactTable: a static compact table's
/// declared columns become static, beside a hidden clustering column
/// (`column1`, text) and a hidden `value` (blob, or counter); a dense table
/// declared without a value column gets a hidden `value` of type empty.
fn add_compact_columns(
    columns: &mut Vec<Column>,
    stmt: &CreateTable,
    counters: bool,
) -> crate::schema::CompactStorage {
    let dense = !stmt.clustering_key.is_empty();
    let compact = crate::schema::CompactStorage {
        dense,
        compound: stmt.clustering_key.len() > 1,
    };
    let mut next_id = columns.len() as u32;
    let mut hidden = |columns: &mut Vec<Column>, kind, ty, at: usize| {
        let base = if kind == ColumnKind::Clustering {
            "column"
        } else {
            "value"
        };
        let name = hidden_column_name(columns, base);
        columns.insert(
            at,
            Column {
                name,
                ty,
                kind,
                position: 0,
                descending: false,
                id: ColumnId(next_id),
            },
        );
        next_id += 1;
    };
    if !dense {
        for column in columns.iter_mut().filter(|c| c.kind == ColumnKind::Regular) {
            column.kind = ColumnKind::Static;
        }
        let at = stmt.partition_key.len();
        hidden(
            columns,
            ColumnKind::Clustering,
            CqlType::native(NativeType::Text),
            at,
        );
        let value_type = CqlType::native(if counters {
            NativeType::Counter
        } else {
            NativeType::Blob
        });
        let end = columns.len();
        hidden(columns, ColumnKind::Regular, value_type, end);
    } else if !columns.iter().any(|c| c.kind == ColumnKind::Regular) {
        let empty = CqlType::Custom(crate::type_text::EMPTY_TYPE_CLASS.to_string());
        let end = columns.len();
        hidden(columns, ColumnKind::Regular, empty, end);
    }
    compact
}

/// Cassandra's default names for hidden columns: `column1`, `column2`, ...
/// and `value`, `value1`, ..., the first no column has.
fn hidden_column_name(columns: &[Column], base: &str) -> String {
    let first = if base == "value" { 0 } else { 1 };
    (first..)
        .map(|i| match i {
            0 => base.to_string(),
            i => format!("{base}{i}"),
        })
        .find(|name| !columns.iter().any(|c| &c.name == name))
        .unwrap_or_else(|| base.to_string())
}

fn table_missing(keyspace: &str, name: &str) -> QueryError {
    QueryError::invalid(format!(
        "Table '{}' doesn't exist",
        rocksandra_data::types::qualified_name(keyspace, name)
    ))
}

pub(crate) fn replace_table(schema: &Schema, table: Table) -> Schema {
    let mut next = schema.clone();
    if let Some(ks) = schema.keyspace(&table.keyspace) {
        let mut keyspace_def = Keyspace::clone(ks);
        keyspace_def
            .tables
            .insert(table.name.clone(), Arc::new(table));
        next.keyspaces
            .insert(keyspace_def.name.clone(), Arc::new(keyspace_def));
    }
    next
}

/// ALTER TABLE of the table alone: `view::alter_table` makes its views
/// follow.
pub fn alter_table(
    schema: &Schema,
    keyspace: &str,
    stmt: &AlterTable,
    now_micros: i64,
    (drop_compact_enabled, masking_enabled): (bool, bool),
) -> Result<DdlOutcome> {
    let name = stmt.table.name.as_str();
    let event = change(SchemaChangeType::Updated, table_target(keyspace, name));
    let noop = || DdlOutcome {
        schema: None,
        change: event.clone(),
        effects: StorageEffects::default(),
    };
    refuse_system_schema_change(keyspace, "ALTER", || table_resource(keyspace, name))?;
    let current = match schema.table(keyspace, name) {
        Some(t) => t,
        None if stmt.if_exists => return Ok(noop()),
        None => return Err(table_missing(keyspace, name)),
    };
    let ks = existing_keyspace(schema, keyspace)?;
    if current.is_view() {
        return Err(QueryError::invalid(
            "Cannot use ALTER TABLE on a materialized view; use ALTER MATERIALIZED VIEW instead",
        ));
    }
    if stmt.action == AlterTableAction::DropCompactStorage {
        check_drop_compact_storage(current, drop_compact_enabled)?;
    }
    let has_views = crate::schema::views_of(ks, name).next().is_some();
    let mut table = Table::clone(current);
    apply_alter_action(ks, &mut table, &stmt.action, has_views, now_micros)?;
    crate::masking::alter(schema, &stmt.action, &mut table, masking_enabled)?;
    Ok(DdlOutcome {
        schema: Some(replace_table(schema, table.clone())),
        change: event,
        effects: StorageEffects {
            alter: vec![Arc::new(table)],
            ..StorageEffects::default()
        },
    })
}

/// Applies an ALTER TABLE action to `table`: ADD, DROP (at the statement's
/// timestamp, else now) or RENAME columns, or WITH properties; altering a
/// column's type is refused.
fn apply_alter_action(
    ks: &Keyspace,
    table: &mut Table,
    action: &AlterTableAction,
    has_views: bool,
    now_micros: i64,
) -> Result<()> {
    match action {
        AlterTableAction::Add {
            if_not_exists,
            columns,
        } => {
            for def in columns {
                add_column(ks, table, def, *if_not_exists)?;
            }
            table.sort_value_columns();
        }
        AlterTableAction::Drop {
            if_exists,
            columns,
            timestamp,
        } => {
            let dropped_time = timestamp.unwrap_or(now_micros);
            for ident in columns {
                drop_column(table, ident, *if_exists, has_views, dropped_time)?;
            }
        }
        AlterTableAction::Rename { renames, .. } => {
            // Cassandra 5.0.6 refuses a missing column even with IF EXISTS
            // (its getExistingColumn runs first).
            for (from, to) in renames {
                rename_column(table, from, to)?;
            }
        }
        AlterTableAction::DropCompactStorage => {
            // Every column shows; the flags become an ordinary table's.
            table.compact = None;
        }
        // `masking::alter`'s.
        AlterTableAction::AlterColumnMask { .. } => {}
        AlterTableAction::AlterColumnType { .. } => {
            return Err(QueryError::invalid(
                "Altering column types is no longer supported",
            ));
        }
        AlterTableAction::With(properties) => {
            apply_table_properties(&mut table.params, properties)?;
            if table.is_counter() && table.params.default_time_to_live > 0 {
                return Err(QueryError::invalid(
                    "Cannot set default_time_to_live on a table with counters",
                ));
            }
        }
    }
    Ok(())
}

/// AlterTableStatement.DropCompactStorage's refusals: the statement is off
/// unless `drop_compact_storage_enabled`, and the table must be compact.
fn check_drop_compact_storage(table: &Table, enabled: bool) -> Result<()> {
    if !enabled {
        return Err(QueryError::invalid(
            "DROP COMPACT STORAGE is disabled. Enable in cassandra.yaml to use.",
        ));
    }
    if table.compact.is_none() {
        return Err(QueryError::invalid(
            "Cannot DROP COMPACT STORAGE on table without COMPACT STORAGE",
        ));
    }
    Ok(())
}

/// ALTER TABLE ADD of one column.
fn add_column(
    ks: &Keyspace,
    table: &mut Table,
    def: &rocksandra_cql::ast::ColumnDefinition,
    if_not_exists: bool,
) -> Result<()> {
    let cname = def.name.as_str();
    // A compact table's hidden columns are taken names too.
    if table.columns.iter().any(|c| c.name == cname) {
        if if_not_exists {
            return Ok(());
        }
        return Err(QueryError::invalid(format!(
            "Column with name '{cname}' already exists"
        )));
    }
    if table.compact.is_some() {
        return Err(QueryError::invalid(
            "Cannot add new column to a COMPACT STORAGE table",
        ));
    }
    check_written_type(&def.ty)?;
    let ty = resolve_type(ks, &def.ty)?;
    check_column_type(&ty, true)?;
    if def.is_static && table.clustering_count == 0 {
        return Err(QueryError::invalid(
                "Static columns are only useful (and thus allowed) if the table has at least one clustering column",
            ));
    }
    if ty.is_counter() != table.is_counter() && !table.value_columns().is_empty() {
        // TableMetadata.validate's ConfigurationException.
        return Err(QueryError::config(format!(
            "{}.{}: Cannot have a {}counter column (\"{cname}\") in a {}counter table",
            table.keyspace,
            table.name,
            if ty.is_counter() { "" } else { "non " },
            if ty.is_counter() { "non " } else { "" },
        )));
    }
    let mut reused_id = None;
    if let Some(dropped) = table.dropped.iter().find(|d| d.name == cname) {
        let kind_text = |static_column: bool| if static_column { "STATIC" } else { "REGULAR" };
        let dropped_static = dropped.kind == ColumnKind::Static;
        if dropped_static != def.is_static {
            return Err(QueryError::invalid(format!(
                "Cannot re-add previously dropped column '{cname}' of kind {}, incompatible with previous kind {}",
                kind_text(def.is_static),
                kind_text(dropped_static)
            )));
        }
        let incompatible = if ty.is_multi_cell() {
            dropped.type_text != ty.to_string()
        } else {
            !readds_dropped(&ty, &dropped.type_text)
        };
        if incompatible {
            return Err(QueryError::invalid(format!(
                    "Cannot re-add previously dropped column '{cname}' of type {}, incompatible with previous type {}",
                    frozen_tuple_text(&ty), frozen_tuple_name(&dropped.type_text)
                )));
        }
        // As in Cassandra, cells are the column's by name: those
        // written after the drop show again, older ones stay
        // hidden (the storage spec carries the drop).
        if dropped.type_text == ty.to_string() {
            reused_id = dropped.column_id;
        }
    }
    table.columns.push(Column {
        name: cname.to_string(),
        ty,
        kind: if def.is_static {
            ColumnKind::Static
        } else {
            ColumnKind::Regular
        },
        position: 0,
        descending: false,
        id: ColumnId(reused_id.unwrap_or(table.next_column_id)),
    });
    if reused_id.is_none() {
        table.next_column_id += 1;
    }
    Ok(())
}

/// ALTER TABLE DROP of one column, remembered (with its cell id) in the
/// table's dropped columns.
fn drop_column(
    table: &mut Table,
    ident: &Ident,
    if_exists: bool,
    has_views: bool,
    dropped_time: i64,
) -> Result<()> {
    let name = table.name.clone();
    let qualified = format!("{}.{}", table.keyspace, table.name);
    let cname = ident.as_str();
    let Some(i) = table.column_index(cname) else {
        if if_exists {
            return Ok(());
        }
        return Err(QueryError::invalid(format!(
            "Column {cname} was not found in table '{qualified}'"
        )));
    };
    let column = table.columns[i].clone();
    if has_views {
        return Err(QueryError::invalid(format!(
            "Cannot drop column {cname} on base table {name} with materialized views"
        )));
    }
    if column.kind.is_primary_key() {
        return Err(QueryError::invalid(format!(
            "Cannot drop PRIMARY KEY column {cname}"
        )));
    }
    if matches!(column.ty, CqlType::Udt(_)) {
        // Dropped columns cannot hold non-frozen UDTs (CASSANDRA-9412).
        return Err(QueryError::invalid(format!(
            "Cannot drop non-frozen column {cname} of user type {}",
            column.ty
        )));
    }
    if table.compact.is_some() && column.kind == ColumnKind::Regular {
        // Cassandra 5.0.6 fails with an AssertionError here.
        return Err(QueryError::invalid(format!(
            "Cannot drop the value column {cname} of a COMPACT STORAGE table"
        )));
    }
    if !table.indexes.is_empty()
        && table.indexes.iter().any(|ix| {
            ix.options
                .get("target")
                .is_some_and(|t| crate::index::index_target_column(t) == cname)
        })
    {
        return Err(QueryError::invalid(format!(
            "Cannot drop column {cname} because it has dependent secondary indexes ({})",
            table
                .indexes
                .iter()
                .filter(|ix| ix
                    .options
                    .get("target")
                    .is_some_and(|t| crate::index::index_target_column(t) == cname))
                .map(|ix| ix.name.clone())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    table.columns.remove(i);
    table.dropped.retain(|d| d.name != cname);
    table.dropped.push(DroppedColumn {
        name: cname.to_string(),
        type_text: column.ty.to_string(),
        kind: column.kind,
        dropped_time,
        column_id: Some(column.id.0),
    });
    Ok(())
}

/// ALTER TABLE RENAME of one primary key column.
fn rename_column(table: &mut Table, from: &Ident, to: &Ident) -> Result<()> {
    let qualified = format!("{}.{}", table.keyspace, table.name);
    if table
        .columns
        .iter()
        .any(|c| c.name == from.as_str() && table.is_hidden(c))
    {
        return Err(QueryError::undefined_column(
            from.as_str(),
            &table.keyspace,
            &table.name,
        ));
    }
    let Some(i) = table.column_index(from.as_str()) else {
        return Err(QueryError::undefined_column(
            from.as_str(),
            &table.keyspace,
            &table.name,
        ));
    };
    if !table.columns[i].kind.is_primary_key() {
        return Err(QueryError::invalid(format!(
            "Cannot rename non PRIMARY KEY column {}",
            from.as_str()
        )));
    }
    if table.column(to.as_str()).is_some() {
        return Err(QueryError::invalid(format!(
                "Cannot rename column {} to {} in table '{qualified}'; another column with that name already exists",
                from.as_str(),
                to.as_str()
            )));
    }
    table.columns[i].name = to.as_str().to_string();
    Ok(())
}

pub fn drop_table(
    schema: &Schema,
    keyspace: &str,
    name: &str,
    if_exists: bool,
) -> Result<DdlOutcome> {
    let event = change(SchemaChangeType::Dropped, table_target(keyspace, name));
    refuse_system_schema_change(keyspace, "DROP", || table_resource(keyspace, name))?;
    let Some(table) = schema.table(keyspace, name) else {
        if if_exists {
            return Ok(DdlOutcome {
                schema: None,
                change: event,
                effects: StorageEffects::default(),
            });
        }
        return Err(table_missing(keyspace, name));
    };
    if table.is_view() {
        return Err(QueryError::invalid(
            "Cannot use DROP TABLE on a materialized view. Please use DROP MATERIALIZED VIEW instead.",
        ));
    }
    if let Some(ks) = schema.keyspace(keyspace) {
        if crate::schema::views_of(ks, name).next().is_some() {
            // Cassandra's format string names the keyspace only.
            return Err(QueryError::invalid(format!(
                "Cannot drop a table when materialized views still depend on it ({keyspace})"
            )));
        }
    }
    Ok(remove_table(schema, table, event))
}

/// The schema without `table` (a table or view), whose storage is dropped.
pub(crate) fn remove_table(schema: &Schema, table: &Table, event: SchemaChange) -> DdlOutcome {
    let mut next = schema.clone();
    if let Some(ks) = schema.keyspace(&table.keyspace) {
        let mut keyspace_def = Keyspace::clone(ks);
        keyspace_def.tables.remove(&table.name);
        next.keyspaces
            .insert(table.keyspace.clone(), Arc::new(keyspace_def));
    }
    DdlOutcome {
        schema: Some(next),
        change: event,
        effects: StorageEffects {
            drop: vec![table.storage_id],
            ..StorageEffects::default()
        },
    }
}

// ---------------------------------------------------------------- indexes

pub fn create_index(schema: &Schema, keyspace: &str, stmt: &CreateIndex) -> Result<DdlOutcome> {
    let table_name = stmt.table.name.as_str();
    let event = change(
        SchemaChangeType::Updated,
        table_target(keyspace, table_name),
    );
    refuse_system_schema_change(keyspace, "ALTER", || table_resource(keyspace, table_name))?;
    let ks = existing_keyspace(schema, keyspace)?;
    let Some(current) = ks.tables.get(table_name) else {
        // CreateIndexStatement names the table alone.
        return Err(QueryError::invalid(format!(
            "Table '{table_name}' doesn't exist"
        )));
    };
    let (column, target) = index_target(current, stmt)?;
    let target_text = index_target_text(column, target.kind);
    let name = index_name(ks, table_name, column, stmt);
    if ks
        .tables
        .values()
        .any(|t| t.indexes.iter().any(|ix| ix.name == name))
    {
        if stmt.if_not_exists {
            return Ok(DdlOutcome {
                schema: None,
                change: event,
                effects: StorageEffects::default(),
            });
        }
        return Err(QueryError::invalid(format!(
            "Index '{name}' already exists"
        )));
    }
    let options = index_options(stmt, target_text)?;
    let legacy_class = stmt
        .class
        .as_deref()
        .is_none_or(|c| c.eq_ignore_ascii_case("legacy_local_table"));
    let given_options = stmt.properties.iter().any(|p| p.name.as_str() == "options");
    if !stmt.custom && legacy_class && given_options {
        return Err(QueryError::invalid(
            "Cannot specify options for a non-CUSTOM index",
        ));
    }
    let kind = if stmt.custom || stmt.class.is_some() {
        "CUSTOM"
    } else {
        "COMPOSITES"
    };
    // Cassandra's duplicate: the same kind and options (target included).
    if let Some(existing) = current
        .indexes
        .iter()
        .find(|ix| ix.kind == kind && ix.options == options)
    {
        if stmt.if_not_exists {
            return Ok(DdlOutcome {
                schema: None,
                change: event,
                effects: StorageEffects::default(),
            });
        }
        return Err(QueryError::invalid(format!(
            "Index {name} is a duplicate of existing index {}",
            existing.name
        )));
    }
    if stmt
        .class
        .as_deref()
        .is_some_and(|c| c.ends_with("SASIIndex"))
    {
        return Err(QueryError::invalid(
            "SASI indexes are disabled. Enable in cassandra.yaml to use.",
        ));
    }
    let mut index = Index {
        name,
        kind: kind.into(),
        options,
        storage_id: None,
        built: false,
    };
    check_index_family(current, column, &index, stmt)?;
    let mut table = Table::clone(current);
    // The index's entries get a storage table of their own (built after
    // the schema is published: `index::build`).
    let stores = crate::index::entries::stores(&table, &index);
    if stores {
        index.storage_id = Some(TableId(schema.next_table_id));
    }
    table.indexes.push(index);
    let mut next = replace_table(schema, table);
    if stores {
        next.next_table_id += 1;
    }
    Ok(DdlOutcome {
        schema: Some(next),
        change: event,
        effects: StorageEffects::default(),
    })
}

/// Refuses an index name that is not a word (`IndexMetadata.validate`)
/// and an index of no known implementation (a custom class other than
/// SAI); an SAI index's options are checked against its column.
fn check_index_family(
    current: &Table,
    column: &Column,
    index: &Index,
    stmt: &CreateIndex,
) -> Result<()> {
    let name = &index.name;
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(QueryError::config(format!("Illegal index name {name}")));
    }
    // `legacy_local_table` names the legacy index only without CUSTOM.
    let family = match crate::index::family(index) {
        Some(crate::index::IndexFamily::Legacy) if stmt.custom => None,
        family => family,
    };
    match family {
        Some(crate::index::IndexFamily::Sai) => {
            crate::index::check_sai(current, column, &index.options)
        }
        Some(crate::index::IndexFamily::Legacy) => Ok(()),
        // CUSTOM without USING takes the default implementation's name
        // (`default_secondary_index`, legacy_local_table) for a class.
        None => Err(QueryError::config(format!(
            "Unable to find custom indexer class '{}'",
            stmt.class.as_deref().unwrap_or("legacy_local_table")
        ))),
    }
}

/// The one column an index is on, and how: not on a view or a counter
/// table, not the only partition key column, and of a kind the column's
/// type supports.
fn index_target<'t, 's>(
    current: &'t Table,
    stmt: &'s CreateIndex,
) -> Result<(&'t Column, &'s rocksandra_cql::ast::IndexTarget)> {
    if current.is_view() {
        return Err(QueryError::invalid(
            "Secondary indexes on materialized views aren't supported",
        ));
    }
    if stmt.targets.len() > 1 && (stmt.custom || stmt.class.is_some()) {
        // A custom index checks each of its targets first.
        for target in &stmt.targets {
            target_column(current, target)?;
        }
    }
    let [target] = stmt.targets.as_slice() else {
        return Err(QueryError::invalid(if stmt.targets.is_empty() {
            "Only CUSTOM indexes can be created without specifying a target column"
        } else {
            "Only CUSTOM indexes support multiple columns"
        }));
    };
    Ok((target_column(current, target)?, target))
}

/// The column one index target names, checked against the table and the
/// target's kind.
fn target_column<'t>(
    current: &'t Table,
    target: &rocksandra_cql::ast::IndexTarget,
) -> Result<&'t Column> {
    let Some(column) = current.column(target.column.as_str()) else {
        if current
            .columns
            .iter()
            .any(|c| c.name == target.column.as_str())
        {
            // A compact table's hidden column.
            return Err(QueryError::undefined_column(
                target.column.as_str(),
                &current.keyspace,
                &current.name,
            ));
        }
        return Err(QueryError::undefined_column(
            target.column.as_str(),
            &current.keyspace,
            &current.name,
        ));
    };
    if current.is_counter() {
        return Err(QueryError::invalid(
            "Secondary indexes on counter tables aren't supported",
        ));
    }
    if let Some(compact) = &current.compact {
        if column.kind.is_primary_key() {
            return Err(QueryError::invalid(
                "Secondary indexes are not supported on PRIMARY KEY columns in COMPACT STORAGE tables",
            ));
        }
        if compact.dense && column.kind == ColumnKind::Regular {
            return Err(QueryError::invalid(
                "Secondary indexes are not supported on compact value column of COMPACT STORAGE tables",
            ));
        }
    }
    if column.kind == ColumnKind::PartitionKey && current.partition_key_count == 1 {
        return Err(QueryError::invalid(format!(
            "Cannot create secondary index on the only partition key column {}",
            column.name
        )));
    }
    crate::index::check_target(column, target.kind)?;
    Ok(column)
}

/// The index's `target` option: the column, or `keys(c)`, `values(c)`,
/// `entries(c)` or `full(c)` (a non-frozen collection's default is values).
fn index_target_text(column: &Column, kind: IndexTargetKind) -> String {
    let quoted = quote_identifier_if_needed(&column.name);
    match kind {
        IndexTargetKind::Simple if column.ty.is_multi_cell() => format!("values({quoted})"),
        IndexTargetKind::Simple => quoted,
        IndexTargetKind::Keys => format!("keys({quoted})"),
        IndexTargetKind::Values => format!("values({quoted})"),
        IndexTargetKind::Entries => format!("entries({quoted})"),
        IndexTargetKind::Full => format!("full({quoted})"),
    }
}

/// The index's name: the one given, else `<table>_<column>_idx` (with a
/// `_<n>` suffix when the keyspace has an index of that name).
fn index_name(ks: &Keyspace, table_name: &str, column: &Column, stmt: &CreateIndex) -> String {
    match &stmt.name {
        Some(n) => n.as_str().to_string(),
        None => {
            let base = format!("{table_name}_{}_idx", column.name)
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<String>();
            let mut candidate = base.clone();
            let mut i = 1;
            while ks
                .tables
                .values()
                .any(|t| t.indexes.iter().any(|ix| ix.name == candidate))
            {
                candidate = format!("{base}_{i}");
                i += 1;
            }
            candidate
        }
    }
}

/// The index's options: its class, the `options` given, and its target.
fn index_options(stmt: &CreateIndex, target_text: String) -> Result<BTreeMap<String, String>> {
    let mut options = BTreeMap::new();
    if let Some(class) = &stmt.class {
        options.insert("class_name".to_string(), class.clone());
    }
    for p in &stmt.properties {
        if p.name.as_str() == "options" {
            options.extend(property_map(p)?);
        }
    }
    options.insert("target".to_string(), target_text);
    Ok(options)
}

pub fn drop_index(
    schema: &Schema,
    keyspace: &str,
    name: &str,
    if_exists: bool,
) -> Result<DdlOutcome> {
    if is_system_keyspace(keyspace) {
        return Err(QueryError::invalid(format!(
            "System keyspace '{keyspace}' is not user-modifiable"
        )));
    }
    // A missing keyspace holds no index: DropIndexStatement names the index.
    let table = schema.keyspace(keyspace).and_then(|ks| {
        ks.tables
            .values()
            .find(|t| t.indexes.iter().any(|ix| ix.name == name))
    });
    let Some(table) = table else {
        let event = change(SchemaChangeType::Updated, keyspace_target(keyspace));
        if if_exists {
            return Ok(DdlOutcome {
                schema: None,
                change: event,
                effects: StorageEffects::default(),
            });
        }
        // Cassandra names it as written, unquoted.
        return Err(QueryError::invalid(format!(
            "Index '{keyspace}.{name}' doesn't exist'"
        )));
    };
    let event = change(
        SchemaChangeType::Updated,
        table_target(keyspace, &table.name),
    );
    let mut updated = Table::clone(table);
    updated.indexes.retain(|ix| ix.name != name);
    Ok(DdlOutcome {
        schema: Some(replace_table(schema, updated)),
        change: event,
        effects: StorageEffects::default(),
    })
}

/// Cassandra's check on re-adding a dropped column of a single-cell type
/// (`isValueCompatibleWith`): the new type must read the dropped cells'
/// bytes with their meaning. A dropped type we cannot parse (a UDT) must
/// come back the same.
fn readds_dropped(new: &CqlType, dropped: &str) -> bool {
    match CqlType::parse(dropped, &rocksandra_data::types::NoUdts) {
        Ok(old) => reads_values_of(new, &old),
        Err(_) => new.to_string() == dropped,
    }
}

/// `is_value_compatible`, with the blob, tuple and vector rules: a blob
/// reads anything; a tuple reads a shorter tuple whose items it reads; a
/// vector only a vector of its own type.
fn reads_values_of(new: &CqlType, old: &CqlType) -> bool {
    match (new.unfrozen(), old.unfrozen()) {
        (CqlType::Native(NativeType::Blob), _) => true,
        (CqlType::Tuple(n), CqlType::Tuple(o)) => {
            n.len() >= o.len() && n.iter().zip(o).all(|(n, o)| reads_values_of(n, o))
        }
        (n @ CqlType::Vector(..), o) => n == o,
        _ => crate::functions::is_value_compatible(new, old),
    }
}

/// A stored type's text as Cassandra names it: a tuple is frozen.
fn frozen_tuple_name(text: &str) -> String {
    if text.starts_with("tuple<") {
        format!("frozen<{text}>")
    } else {
        text.to_string()
    }
}

/// A type as Cassandra names it in schema messages: a tuple is frozen.
fn frozen_tuple_text(ty: &CqlType) -> String {
    match ty {
        CqlType::Tuple(_) => format!("frozen<{ty}>"),
        _ => ty.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocksandra_data::types::NativeType;

    fn int() -> Box<TypeExpr> {
        Box::new(TypeExpr::Native(NativeType::Int))
    }

    fn list(e: Box<TypeExpr>) -> Box<TypeExpr> {
        Box::new(TypeExpr::List(e))
    }

    #[test]
    fn nested_collections_need_a_frozen_around_them() {
        let nested = TypeExpr::Map(int(), list(int()));
        assert!(check_written_type(&nested).is_err());
        assert!(check_written_type(&TypeExpr::Frozen(Box::new(nested.clone()))).is_ok());
        assert!(check_written_type(&TypeExpr::Tuple(vec![nested.clone()])).is_ok());
        let set_of_nested = TypeExpr::Set(Box::new(TypeExpr::Frozen(Box::new(nested))));
        assert!(check_written_type(&set_of_nested).is_ok());
        let list_in_frozen_in_set = TypeExpr::Set(Box::new(TypeExpr::Frozen(list(list(int())))));
        assert!(check_written_type(&list_in_frozen_in_set).is_ok());
    }

    fn created_params(text: &str) -> TableParams {
        let parsed = rocksandra_cql::parse_statement(text).expect("parses");
        let rocksandra_cql::Statement::CreateTable(create) = parsed.statement else {
            panic!("not a CREATE TABLE: {text}");
        };
        new_table_params(&create.options.properties).expect("valid properties")
    }

    #[test]
    fn a_leveled_table_defaults_to_its_strategys_bloom_filter_chance() {
        let leveled = "CREATE TABLE t (k int PRIMARY KEY) WITH compaction = {'class': 'LeveledCompactionStrategy'}";
        assert_eq!(created_params(leveled).bloom_filter_fp_chance, 0.1);
        let given = format!("{leveled} AND bloom_filter_fp_chance = 0.02");
        assert_eq!(created_params(&given).bloom_filter_fp_chance, 0.02);
        let tiered = "CREATE TABLE t (k int PRIMARY KEY) WITH compaction = {'class': 'SizeTieredCompactionStrategy'}";
        assert_eq!(created_params(tiered).bloom_filter_fp_chance, 0.01);
        assert_eq!(
            created_params("CREATE TABLE t (k int PRIMARY KEY)").bloom_filter_fp_chance,
            0.01
        );
    }

    #[test]
    fn retry_policies_take_cassandras_normal_form() {
        let policy = |text: &str| retry_policy(text, "speculative_retry");
        assert_eq!(policy("99PERCENTILE").unwrap(), "99p");
        assert_eq!(policy("99.50p").unwrap(), "99.5p");
        assert_eq!(policy("50ms").unwrap(), "50ms");
        assert_eq!(policy("none").unwrap(), "NONE");
        assert_eq!(policy("min(99p,50ms)").unwrap(), "MIN(99p,50ms)");
        let bogus = policy("bogus").unwrap_err().to_string();
        assert!(
            bogus.contains("Invalid value bogus for option 'speculative_retry'"),
            "{bogus}"
        );
        let over = policy("101p").unwrap_err().to_string();
        assert!(over.contains("must be between (0.0 and 100.0)"), "{over}");
    }
}
