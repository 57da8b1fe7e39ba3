//! Server-side DESCRIBE, as Cassandra 5.0 answers it (`DescribeStatement`):
//! which schema elements a target names, in which order, and the CQL text
//! that recreates each one (`create_*_statement`, reused elsewhere).
//!
//! Element lists are sorted by name ignoring case, keyspaces' types come in
//! dependency order, and a table is followed by its indexes. Keyspaces that
//! are virtual in Cassandra (`system::VIRTUAL_KEYSPACES`) are described in a
//! comment, as Cassandra does, since CQL cannot recreate them.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use rocksandra_cql::ast::{Describe, DescribeTarget, QualifiedName};
use rocksandra_data::token::Token;
use rocksandra_data::types::{quote_identifier_if_needed as quote, CqlType, NativeType, UdtType};
use rocksandra_data::Value;
use rocksandra_wire::{ColumnSpec, ColumnsMetadata, Rows, RowsMetadata, TableSpec};

use crate::error::{QueryError, Result};
use crate::schema::{is_system_keyspace, ColumnKind, Index, Keyspace, Schema, Table, TableParams};
use crate::system::{is_virtual_in_cassandra, short_strategy};
use crate::type_text::cql_type_text;
use crate::udf::{UserAggregate, UserFunction};
use crate::NodeInfo;

/// What DESCRIBE CLUSTER reports as the snitch (Cassandra wraps the
/// configured one in the dynamic snitch by default).
const SNITCH: &str = "DynamicEndpointSnitch";
const PARTITIONER_SHORT: &str = "Murmur3Partitioner";

/// The result of a DESCRIBE: column names and types, rows of serialized cells.
#[derive(Clone, Debug, PartialEq)]
pub struct DescribeResult {
    pub columns: Vec<(String, CqlType)>,
    pub rows: Vec<Vec<Option<Vec<u8>>>>,
}

impl DescribeResult {
    /// As a ROWS result; Cassandra names the table `system.describe`.
    pub fn into_rows(self) -> Rows {
        let table = TableSpec {
            keyspace: "system".into(),
            table: "describe".into(),
        };
        Rows {
            metadata: RowsMetadata {
                columns: ColumnsMetadata::Specs(
                    self.columns
                        .into_iter()
                        .map(|(name, cql_type)| ColumnSpec {
                            table: table.clone(),
                            name,
                            cql_type,
                        })
                        .collect(),
                ),
                paging_state: None,
                new_metadata_id: None,
            },
            rows: self
                .rows
                .into_iter()
                .map(|row| row.into_iter().map(|cell| cell.map(Bytes::from)).collect())
                .collect(),
        }
    }

    /// The cells of one column as text (test and debugging aid).
    pub fn text_column(&self, index: usize) -> Vec<String> {
        self.rows
            .iter()
            .map(|row| {
                row.get(index)
                    .and_then(|c| c.as_ref())
                    .map(|b| String::from_utf8_lossy(b).into_owned())
                    .unwrap_or_default()
            })
            .collect()
    }
}

/// Runs a DESCRIBE statement against `schema`.
pub fn describe(
    statement: &Describe,
    schema: &Schema,
    current_keyspace: Option<&str>,
    node: &NodeInfo,
) -> Result<DescribeResult> {
    let internals = statement.with_internals;
    let describer = Describer {
        schema,
        current_keyspace,
    };
    let elements = match &statement.target {
        DescribeTarget::Cluster => return Ok(describe_cluster(schema, current_keyspace, node)),
        DescribeTarget::Keyspaces => {
            let elements = sorted_keyspaces(schema)
                .into_iter()
                .map(Element::Keyspace)
                .collect();
            return Ok(listing(elements));
        }
        DescribeTarget::Tables => return describer.listing(table_elements),
        DescribeTarget::Types => {
            return describer.listing(|k| k.types.iter().map(|t| Element::Type(k, t)).collect())
        }
        DescribeTarget::Functions => return describer.listing(function_elements),
        DescribeTarget::Aggregates => return describer.listing(aggregate_elements),
        DescribeTarget::Schema { full } => sorted_keyspaces(schema)
            .into_iter()
            .filter(|k| *full || !is_system_keyspace(&k.name))
            .flat_map(|k| keyspace_elements(k, false))
            .collect(),
        DescribeTarget::Keyspace { only, name } => {
            let keyspace = describer.keyspace(name.as_ref().map(|n| n.as_str()))?;
            keyspace_elements(keyspace, *only)
        }
        DescribeTarget::Table(name) => describer.table(name)?,
        DescribeTarget::Type(name) => {
            let keyspace = describer.keyspace_of(name)?;
            let type_name = name.name.as_str();
            let udt = keyspace.user_type(type_name).ok_or_else(|| {
                QueryError::invalid(format!(
                    "User defined type '{type_name}' not found in '{}'",
                    keyspace.name
                ))
            })?;
            vec![Element::Type(keyspace, udt)]
        }
        DescribeTarget::Function(name) => {
            let keyspace = describer.keyspace_of(name)?;
            let found = named(function_elements(keyspace), name.name.as_str());
            if found.is_empty() {
                return Err(QueryError::invalid(format!(
                    "User defined function '{}' not found in '{}'",
                    name.name.as_str(),
                    keyspace.name
                )));
            }
            found
        }
        DescribeTarget::Aggregate(name) => {
            let keyspace = describer.keyspace_of(name)?;
            let found = named(aggregate_elements(keyspace), name.name.as_str());
            if found.is_empty() {
                return Err(QueryError::invalid(format!(
                    "User defined aggregate '{}' not found in '{}'",
                    name.name.as_str(),
                    keyspace.name
                )));
            }
            found
        }
        DescribeTarget::Index(name) => describer.index(name)?,
        DescribeTarget::MaterializedView(name) => {
            let keyspace = describer.keyspace_of(name)?;
            match keyspace.tables.get(name.name.as_str()) {
                Some(view) if view.is_view() => vec![Element::View(view)],
                _ => return Err(view_not_found(name.name.as_str(), &keyspace.name)),
            }
        }
        DescribeTarget::Name(name) => describer.generic(name)?,
    };
    Ok(element_rows(elements, internals))
}

fn view_not_found(view: &str, keyspace: &str) -> QueryError {
    QueryError::invalid(format!(
        "Materialized view '{view}' not found in '{keyspace}'"
    ))
}

// ---------------------------------------------------------------- elements

/// One describable schema element.
#[derive(Clone, Copy)]
enum Element<'a> {
    Keyspace(&'a Keyspace),
    Type(&'a Keyspace, &'a UdtType),
    Table(&'a Table),
    Index(&'a Table, &'a Index),
    /// A table that is a materialized view.
    View(&'a Table),
    Function(&'a UserFunction),
    Aggregate(&'a UserAggregate),
}

impl Element<'_> {
    fn keyspace(&self) -> &str {
        match self {
            Element::Keyspace(k) | Element::Type(k, _) => &k.name,
            Element::Table(t) | Element::Index(t, _) | Element::View(t) => &t.keyspace,
            Element::Function(f) => &f.keyspace,
            Element::Aggregate(a) => &a.keyspace,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Element::Keyspace(_) => "keyspace",
            Element::Type(..) => "type",
            Element::Table(_) => "table",
            Element::Index(..) => "index",
            Element::View(_) => "materialized_view",
            Element::Function(_) => "function",
            Element::Aggregate(_) => "aggregate",
        }
    }

    fn name(&self) -> &str {
        match self {
            Element::Keyspace(k) => &k.name,
            Element::Type(_, t) => &t.name,
            Element::Table(t) | Element::View(t) => &t.name,
            Element::Index(_, i) => &i.name,
            Element::Function(f) => &f.name,
            Element::Aggregate(a) => &a.name,
        }
    }

    /// The name as DESCRIBE shows it: quoted where needed, with the
    /// argument types of a function or aggregate.
    fn shown_name(&self) -> String {
        let signature = |types: &[CqlType]| {
            let types: Vec<String> = types.iter().map(cql_type_text).collect();
            format!("({})", types.join(", "))
        };
        match self {
            Element::Function(f) => quote(&f.name) + &signature(&f.argument_types),
            Element::Aggregate(a) => quote(&a.name) + &signature(&a.argument_types),
            other => quote(other.name()),
        }
    }

    fn create_statement(&self, internals: bool) -> String {
        match self {
            Element::Keyspace(k) => create_keyspace_statement(k),
            Element::Type(_, t) => create_type_statement(t),
            Element::Table(t) => create_table_statement(t, internals),
            Element::Index(t, i) => create_index_statement(t, i),
            Element::View(t) => create_view_statement(t, internals),
            Element::Function(f) => create_function_statement(f),
            Element::Aggregate(a) => create_aggregate_statement(a),
        }
    }
}

/// Cassandra's `SchemaElement.NAME_COMPARATOR`: names ignoring case.
fn by_name(a: &str, b: &str) -> Ordering {
    let lower = |s: &str| s.chars().flat_map(char::to_lowercase).collect::<String>();
    lower(a).cmp(&lower(b))
}

fn sorted_keyspaces(schema: &Schema) -> Vec<&Keyspace> {
    let mut keyspaces: Vec<&Keyspace> = schema.keyspaces.values().map(|k| &**k).collect();
    keyspaces.sort_by(|a, b| by_name(&a.name, &b.name));
    keyspaces
}

/// A keyspace, then (unless `only`) its types in dependency order, its
/// tables each followed by its indexes.
fn keyspace_elements(keyspace: &Keyspace, only: bool) -> Vec<Element<'_>> {
    let mut out = vec![Element::Keyspace(keyspace)];
    if only {
        return out;
    }
    out.extend(
        types_in_dependency_order(keyspace)
            .into_iter()
            .map(|t| Element::Type(keyspace, t)),
    );
    out.extend(function_elements(keyspace));
    out.extend(aggregate_elements(keyspace));
    for table in sorted_tables(keyspace) {
        out.extend(table_and_indexes(keyspace, table));
    }
    out
}

/// A keyspace's functions by name, overloads by their signature.
fn function_elements(keyspace: &Keyspace) -> Vec<Element<'_>> {
    let mut out: Vec<Element<'_>> = keyspace.functions.iter().map(Element::Function).collect();
    out.sort_by_key(|e| e.shown_name());
    out
}

fn aggregate_elements(keyspace: &Keyspace) -> Vec<Element<'_>> {
    let mut out: Vec<Element<'_>> = keyspace.aggregates.iter().map(Element::Aggregate).collect();
    out.sort_by_key(|e| e.shown_name());
    out
}

fn named<'a>(elements: Vec<Element<'a>>, name: &str) -> Vec<Element<'a>> {
    elements.into_iter().filter(|e| e.name() == name).collect()
}

fn sorted_tables(keyspace: &Keyspace) -> Vec<&Table> {
    let mut tables: Vec<&Table> = keyspace
        .tables
        .values()
        .filter(|t| !t.is_view())
        .map(|t| &**t)
        .collect();
    tables.sort_by(|a, b| by_name(&a.name, &b.name));
    tables
}

fn table_elements(keyspace: &Keyspace) -> Vec<Element<'_>> {
    keyspace
        .tables
        .values()
        .filter(|t| !t.is_view())
        .map(|t| Element::Table(t))
        .collect()
}

/// A table, its indexes and its materialized views.
fn table_and_indexes<'a>(keyspace: &'a Keyspace, table: &'a Table) -> Vec<Element<'a>> {
    let mut indexes: Vec<&Index> = table.indexes.iter().collect();
    indexes.sort_by(|a, b| by_name(&a.name, &b.name));
    let mut views: Vec<&Table> = crate::schema::views_of(keyspace, &table.name)
        .map(|v| &**v)
        .collect();
    views.sort_by(|a, b| by_name(&a.name, &b.name));
    std::iter::once(Element::Table(table))
        .chain(indexes.into_iter().map(|i| Element::Index(table, i)))
        .chain(views.into_iter().map(Element::View))
        .collect()
}

/// Types so that each comes after the types it uses: a depth-first walk in
/// name order that emits a type's dependencies before it (Cassandra's order).
fn types_in_dependency_order(keyspace: &Keyspace) -> Vec<&UdtType> {
    let mut names: Vec<&UdtType> = keyspace.types.iter().collect();
    names.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    let mut done: BTreeSet<&str> = BTreeSet::new();
    let mut out = Vec::new();
    for udt in names {
        visit_type(keyspace, udt, &mut done, &mut out);
    }
    out
}

fn visit_type<'a>(
    keyspace: &'a Keyspace,
    udt: &'a UdtType,
    done: &mut BTreeSet<&'a str>,
    out: &mut Vec<&'a UdtType>,
) {
    if !done.insert(&udt.name) {
        return;
    }
    let mut used = BTreeSet::new();
    for (_, ty) in &udt.fields {
        referenced_types(ty, &mut used);
    }
    for name in used {
        if let Some(dependency) = keyspace.user_type(&name) {
            visit_type(keyspace, dependency, done, out);
        }
    }
    out.push(udt);
}

fn referenced_types(ty: &CqlType, out: &mut BTreeSet<String>) {
    match ty {
        CqlType::Udt(u) => {
            out.insert(u.name.clone());
        }
        CqlType::List(e) | CqlType::Set(e) | CqlType::Vector(e, _) | CqlType::Frozen(e) => {
            referenced_types(e, out)
        }
        CqlType::Map(k, v) => {
            referenced_types(k, out);
            referenced_types(v, out);
        }
        CqlType::Tuple(items) => items.iter().for_each(|t| referenced_types(t, out)),
        CqlType::Native(_) | CqlType::Custom(_) => {}
    }
}

// ---------------------------------------------------------------- lookups

struct Describer<'a> {
    schema: &'a Schema,
    current_keyspace: Option<&'a str>,
}

impl<'a> Describer<'a> {
    fn find_keyspace(&self, name: &str) -> Result<&'a Keyspace> {
        self.schema
            .keyspace(name)
            .map(|k| &**k)
            .ok_or_else(|| QueryError::invalid(format!("'{name}' not found in keyspaces")))
    }

    /// The named keyspace, or the current one.
    fn keyspace(&self, name: Option<&str>) -> Result<&'a Keyspace> {
        let name = name
            .or(self.current_keyspace)
            .ok_or_else(|| QueryError::invalid("No keyspace specified and no current keyspace"))?;
        self.find_keyspace(name)
    }

    fn keyspace_of(&self, name: &QualifiedName) -> Result<&'a Keyspace> {
        self.keyspace(name.keyspace.as_ref().map(|k| k.as_str()))
    }

    /// DESCRIBE TABLES/TYPES/...: the current keyspace's elements, or every
    /// keyspace's, each sorted by name.
    fn listing(
        &self,
        elements: impl Fn(&'a Keyspace) -> Vec<Element<'a>>,
    ) -> Result<DescribeResult> {
        let keyspaces = match self.current_keyspace {
            Some(name) => vec![self.find_keyspace(name)?],
            None => sorted_keyspaces(self.schema),
        };
        let mut out = Vec::new();
        for keyspace in keyspaces {
            let mut items = elements(keyspace);
            items.sort_by(|a, b| by_name(a.name(), b.name()));
            out.extend(items);
        }
        Ok(listing(out))
    }

    fn table(&self, name: &QualifiedName) -> Result<Vec<Element<'a>>> {
        let keyspace = self.keyspace_of(name)?;
        let table_name = name.name.as_str();
        let table = keyspace
            .tables
            .get(table_name)
            .filter(|t| !t.is_view())
            .ok_or_else(|| {
                QueryError::invalid(format!(
                    "Table '{table_name}' not found in keyspace '{}'",
                    keyspace.name
                ))
            })?;
        Ok(table_and_indexes(keyspace, table))
    }

    fn index(&self, name: &QualifiedName) -> Result<Vec<Element<'a>>> {
        let keyspace = self.keyspace_of(name)?;
        let index_name = name.name.as_str();
        find_index(keyspace, index_name)
            .map(|(table, index)| vec![Element::Index(table, index)])
            .ok_or_else(|| {
                QueryError::invalid(format!(
                    "Table for existing index '{index_name}' not found in '{}'",
                    keyspace.name
                ))
            })
    }

    /// `DESCRIBE name`: a keyspace, else a table, index or view of the
    /// given or current keyspace.
    fn generic(&self, name: &QualifiedName) -> Result<Vec<Element<'a>>> {
        let element = name.name.as_str();
        let keyspace_name = match &name.keyspace {
            Some(k) => k.as_str(),
            None => {
                if let Some(keyspace) = self.schema.keyspace(element) {
                    return Ok(keyspace_elements(keyspace, false));
                }
                self.current_keyspace.unwrap_or(element)
            }
        };
        let keyspace = self.find_keyspace(keyspace_name)?;
        if let Some(table) = keyspace.tables.get(element) {
            if table.is_view() {
                return Ok(vec![Element::View(table)]);
            }
            return Ok(table_and_indexes(keyspace, table));
        }
        if let Some((table, index)) = find_index(keyspace, element) {
            return Ok(vec![Element::Index(table, index)]);
        }
        let mut routines = named(function_elements(keyspace), element);
        routines.extend(named(aggregate_elements(keyspace), element));
        if !routines.is_empty() {
            return Ok(routines);
        }
        Err(QueryError::invalid(format!(
            "'{element}' not found in keyspace '{keyspace_name}'"
        )))
    }
}

fn find_index<'a>(keyspace: &'a Keyspace, name: &str) -> Option<(&'a Table, &'a Index)> {
    keyspace
        .tables
        .values()
        .find_map(|t| t.indexes.iter().find(|i| i.name == name).map(|i| (&**t, i)))
}

// ---------------------------------------------------------------- results

fn text_cell(text: &str) -> Option<Vec<u8>> {
    Some(text.as_bytes().to_vec())
}

fn text_columns(names: &[&str]) -> Vec<(String, CqlType)> {
    names
        .iter()
        .map(|n| (n.to_string(), CqlType::Native(NativeType::Text)))
        .collect()
}

/// Rows of `keyspace_name, type, name`.
fn listing(elements: Vec<Element<'_>>) -> DescribeResult {
    DescribeResult {
        columns: text_columns(&["keyspace_name", "type", "name"]),
        rows: elements
            .iter()
            .map(|e| {
                vec![
                    text_cell(&quote(e.keyspace())),
                    text_cell(e.kind()),
                    text_cell(&e.shown_name()),
                ]
            })
            .collect(),
    }
}

/// Rows of `keyspace_name, type, name, create_statement`.
fn element_rows(elements: Vec<Element<'_>>, internals: bool) -> DescribeResult {
    DescribeResult {
        columns: text_columns(&["keyspace_name", "type", "name", "create_statement"]),
        rows: elements
            .iter()
            .map(|e| {
                vec![
                    text_cell(&quote(e.keyspace())),
                    text_cell(e.kind()),
                    text_cell(&e.shown_name()),
                    text_cell(&e.create_statement(internals)),
                ]
            })
            .collect(),
    }
}

fn describe_cluster(
    schema: &Schema,
    current_keyspace: Option<&str>,
    node: &NodeInfo,
) -> DescribeResult {
    let mut columns = text_columns(&["cluster", "partitioner", "snitch"]);
    let mut row = vec![
        text_cell(&node.cluster_name),
        text_cell(PARTITIONER_SHORT),
        text_cell(SNITCH),
    ];
    if let Some(keyspace) = current_keyspace.filter(|k| !is_system_keyspace(k)) {
        columns.push((
            "range_ownership".into(),
            CqlType::Map(
                Box::new(CqlType::Native(NativeType::Text)),
                Box::new(CqlType::List(Box::new(CqlType::Native(NativeType::Text)))),
            ),
        ));
        let ownership = range_ownership(schema.keyspace(keyspace).map(|k| &**k), node);
        let value = Value::Map(
            ownership
                .into_iter()
                .map(|(token, endpoints)| {
                    (
                        Value::Text(token),
                        Value::List(endpoints.into_iter().map(Value::Text).collect()),
                    )
                })
                .collect(),
        );
        row.push(Some(value.to_bytes()));
    }
    DescribeResult {
        columns,
        rows: vec![row],
    }
}

/// A node of the ring as DESCRIBE CLUSTER names it.
struct RingNode {
    endpoint: String,
    data_center: String,
}

/// For each token of the ring (the end of the range it closes), the
/// replicas of that range under the keyspace's replication, keyed by the
/// token's text (sorted as text, as Cassandra serializes the map).
fn range_ownership(keyspace: Option<&Keyspace>, node: &NodeInfo) -> BTreeMap<String, Vec<String>> {
    let mut nodes = vec![RingNode {
        endpoint: format!("/{}:{}", node.broadcast_address, node.storage_port),
        data_center: node.data_center.clone(),
    }];
    let mut ring: Vec<(Token, usize)> = node.tokens.iter().map(|t| (Token(*t), 0)).collect();
    for peer in &node.peers {
        ring.extend(peer.tokens.iter().map(|t| (Token(*t), nodes.len())));
        nodes.push(RingNode {
            endpoint: format!("/{}:{}", peer.broadcast_address, node.storage_port),
            data_center: peer.data_center.clone(),
        });
    }
    ring.sort();
    let replication = keyspace.map(|k| &k.replication);
    let option = |key: &str| -> usize {
        replication
            .and_then(|r| r.get(key))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let class = replication
        .and_then(|r| r.get("class"))
        .map(|c| short_strategy(c).to_string())
        .unwrap_or_default();
    let mut out = BTreeMap::new();
    for start in 0..ring.len() {
        // Walk the ring from this token, collecting distinct nodes.
        let walk = (0..ring.len()).map(|i| ring[(start + i) % ring.len()].1);
        let mut replicas: Vec<usize> = Vec::new();
        match class.as_str() {
            "SimpleStrategy" => {
                let rf = option("replication_factor");
                for n in walk {
                    if replicas.len() >= rf {
                        break;
                    }
                    if !replicas.contains(&n) {
                        replicas.push(n);
                    }
                }
            }
            "NetworkTopologyStrategy" => {
                let mut per_dc: BTreeMap<&str, usize> = BTreeMap::new();
                for n in walk {
                    let dc = nodes[n].data_center.as_str();
                    let wanted = option(dc);
                    let have = per_dc.entry(dc).or_insert(0);
                    if *have < wanted && !replicas.contains(&n) {
                        *have += 1;
                        replicas.push(n);
                    }
                }
            }
            _ => replicas.push(0),
        }
        out.insert(
            ring[start].0 .0.to_string(),
            replicas
                .into_iter()
                .map(|n| nodes[n].endpoint.clone())
                .collect(),
        );
    }
    out
}

// ---------------------------------------------------------------- statements

fn string_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

fn map_literal<'a>(entries: impl IntoIterator<Item = (&'a str, String)>) -> String {
    let entries: Vec<String> = entries
        .into_iter()
        .map(|(k, v)| format!("{}: {v}", string_literal(k)))
        .collect();
    format!("{{{}}}", entries.join(", "))
}

fn text_map_literal(map: &BTreeMap<String, String>) -> String {
    map_literal(map.iter().map(|(k, v)| (k.as_str(), string_literal(v))))
}

/// Java's `Double.toString`: plain decimals in [1e-3, 1e7), otherwise
/// `1.0E-4` style; always with a fractional digit.
fn java_double(value: f64) -> String {
    let magnitude = value.abs();
    if value == 0.0 || (1e-3..1e7).contains(&magnitude) || !value.is_finite() {
        let text = format!("{value:?}");
        return match text.as_str() {
            "inf" => "Infinity".into(),
            "-inf" => "-Infinity".into(),
            "NaN" => "NaN".into(),
            _ => text,
        };
    }
    let text = format!("{value:e}");
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    if mantissa.contains('.') {
        format!("{mantissa}E{exponent}")
    } else {
        format!("{mantissa}.0E{exponent}")
    }
}

fn qualified(keyspace: &str, name: &str) -> String {
    format!("{}.{}", quote(keyspace), quote(name))
}

/// `CREATE KEYSPACE ...;` (a comment for Cassandra's virtual keyspaces).
pub fn create_keyspace_statement(keyspace: &Keyspace) -> String {
    let name = quote(&keyspace.name);
    if is_virtual_in_cassandra(&keyspace.name) {
        return format!(
            "/*\nWarning: Keyspace {name} is a virtual keyspace and cannot be recreated with CQL.\nStructure, for reference:\nVIRTUAL KEYSPACE {name};\n*/"
        );
    }
    let class = keyspace
        .replication
        .get("class")
        .map(|c| short_strategy(c))
        .unwrap_or("");
    let replication = map_literal(
        std::iter::once(("class", string_literal(class))).chain(
            keyspace
                .replication
                .iter()
                .filter(|(k, _)| k.as_str() != "class")
                .map(|(k, v)| (k.as_str(), string_literal(v))),
        ),
    );
    format!(
        "CREATE KEYSPACE {name} WITH replication = {replication}  AND durable_writes = {};",
        keyspace.durable_writes
    )
}

/// `CREATE TYPE ks.name (...);`
pub fn create_type_statement(udt: &UdtType) -> String {
    let fields: Vec<String> = udt
        .fields
        .iter()
        .map(|(name, ty)| format!("    {} {}", quote(name), cql_type_text(ty)))
        .collect();
    format!(
        "CREATE TYPE {} (\n{}\n);",
        qualified(&udt.keyspace, &udt.name),
        fields.join(",\n")
    )
}

/// `CREATE FUNCTION ks.f(a int) ... AS $$body$$;`
pub fn create_function_statement(f: &UserFunction) -> String {
    let arguments: Vec<String> = f
        .argument_names
        .iter()
        .zip(&f.argument_types)
        .map(|(n, t)| format!("{} {}", quote(n), cql_type_text(t)))
        .collect();
    let on_null = match f.called_on_null_input {
        true => "CALLED ON NULL INPUT",
        false => "RETURNS NULL ON NULL INPUT",
    };
    format!(
        "CREATE FUNCTION {}({})\n    {on_null}\n    RETURNS {}\n    LANGUAGE {}\n    AS $${}$$;",
        qualified(&f.keyspace, &f.name),
        arguments.join(", "),
        cql_type_text(&f.return_type),
        f.language,
        f.body
    )
}

/// `CREATE AGGREGATE ks.a(int) SFUNC ... STYPE ... [FINALFUNC] [INITCOND];`
pub fn create_aggregate_statement(a: &UserAggregate) -> String {
    let types: Vec<String> = a.argument_types.iter().map(cql_type_text).collect();
    let mut out = format!(
        "CREATE AGGREGATE {}({})\n    SFUNC {}\n    STYPE {}",
        qualified(&a.keyspace, &a.name),
        types.join(", "),
        quote(&a.state_function),
        cql_type_text(&a.state_type)
    );
    if let Some(f) = &a.final_function {
        out.push_str(&format!("\n    FINALFUNC {}", quote(f)));
    }
    if let Some(initial) = crate::udf::initial_condition_literal(a) {
        out.push_str(&format!("\n    INITCOND {initial}"));
    }
    out.push(';');
    out
}

/// `CREATE [CUSTOM] INDEX ...;`
pub fn create_index_statement(table: &Table, index: &Index) -> String {
    let target = index
        .options
        .get("target")
        .map(String::as_str)
        .unwrap_or("");
    let on = format!(
        "{} ON {} ({target})",
        quote(&index.name),
        qualified(&table.keyspace, &table.name)
    );
    if index.kind != "CUSTOM" {
        return format!("CREATE INDEX {on};");
    }
    let class = index
        .options
        .get("class_name")
        .map(String::as_str)
        .unwrap_or("");
    let options: BTreeMap<String, String> = index
        .options
        .iter()
        .filter(|(k, _)| k.as_str() != "class_name" && k.as_str() != "target")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let with = if options.is_empty() {
        String::new()
    } else {
        format!(" WITH OPTIONS = {}", text_map_literal(&options))
    };
    format!(
        "CREATE CUSTOM INDEX {on} USING {}{with};",
        string_literal(class)
    )
}

/// One column definition line (without indentation or comma).
fn column_definition(name: &str, type_text: &str, is_static: bool) -> String {
    let static_marker = if is_static { " static" } else { "" };
    format!("{} {type_text}{static_marker}", quote(name))
}

/// `CREATE TABLE ...;` as Cassandra prints it; with `internals`, the table
/// id and the dropped columns (re-listed, then dropped again by timestamp).
pub fn create_table_statement(table: &Table, internals: bool) -> String {
    let is_virtual = is_virtual_in_cassandra(&table.keyspace);
    let name = qualified(&table.keyspace, &table.name);
    let single_key = table.partition_key_count == 1 && table.clustering_count == 0;
    let dropped: Vec<&crate::schema::DroppedColumn> = if internals {
        let mut dropped: Vec<_> = table.dropped.iter().collect();
        dropped.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        dropped
    } else {
        Vec::new()
    };
    let dropped_names: BTreeSet<&str> = dropped.iter().map(|d| d.name.as_str()).collect();

    let mut out = String::new();
    let create = if is_virtual {
        out.push_str(&format!(
            "/*\nWarning: Table {name} is a virtual table and cannot be recreated with CQL.\nStructure, for reference:\n"
        ));
        "VIRTUAL"
    } else {
        if table.compact.is_some() {
            // CompactTableMetadata.appendCqlTo.
            out.push_str(&format!(
                "/*\nWarning: Table {name} omitted because it has constructs not compatible with CQL (was created via legacy API).\nApproximate structure, for reference:\n(this should not be used to reproduce this schema)\n\n"
            ));
        }
        "CREATE"
    };
    out.push_str(&format!("{create} TABLE {name} (\n"));

    let lines = column_lines(table, &dropped, &dropped_names, single_key);
    for line in &lines {
        out.push_str("    ");
        out.push_str(line);
        out.push_str(",\n");
    }
    // The last line has no comma.
    if !lines.is_empty() {
        out.truncate(out.len() - 2);
        out.push('\n');
    }
    out.push_str(") WITH ");

    let options = with_options(table, internals, is_virtual);
    out.push_str(&options.join("\n    AND "));
    out.push(';');
    if is_virtual || table.compact.is_some() {
        out.push_str("\n*/");
    }
    for d in &dropped {
        out.push_str(&format!(
            "\nALTER TABLE {name} DROP {} USING TIMESTAMP {};",
            quote(&d.name),
            d.dropped_time
        ));
        if let Some(column) = table.column(&d.name) {
            out.push_str(&format!(
                "\nALTER TABLE {name} ADD {};",
                column_definition(
                    &column.name,
                    &cql_type_text(&column.ty),
                    column.kind == ColumnKind::Static
                )
            ));
        }
    }
    out
}

/// The lines inside CREATE TABLE's parentheses: the live columns in
/// Cassandra's order (without the dropped ones), the dropped columns, and
/// the PRIMARY KEY unless it is a single column's.
fn column_lines(
    table: &Table,
    dropped: &[&crate::schema::DroppedColumn],
    dropped_names: &BTreeSet<&str>,
    single_key: bool,
) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for column in create_order(table) {
        if dropped_names.contains(column.name.as_str()) {
            continue;
        }
        // A static compact table's columns are declared as regular ones.
        let mut line = column_definition(
            &column.name,
            &cql_type_text(&column.ty),
            column.kind == ColumnKind::Static && !table.is_static_compact(),
        );
        if let Some(mask) = table.masks.get(&column.id) {
            line.push_str(" MASKED WITH ");
            line.push_str(&crate::masking::describe(mask));
        }
        if single_key && column.kind == ColumnKind::PartitionKey {
            line.push_str(" PRIMARY KEY");
        }
        lines.push(line);
    }
    for d in dropped {
        lines.push(column_definition(
            &d.name,
            &d.type_text,
            d.kind == ColumnKind::Static,
        ));
    }
    if !single_key {
        lines.push(primary_key(table));
    }
    lines
}

/// The options after `WITH`: the id (with internals), the clustering
/// order, then the table's options (a virtual table's comment only).
fn with_options(table: &Table, internals: bool, is_virtual: bool) -> Vec<String> {
    let mut options: Vec<String> = Vec::new();
    if table.compact.is_some() {
        options.push("COMPACT STORAGE".to_string());
    }
    if internals {
        options.push(format!("ID = {}", uuid_text(table.id)));
    }
    options.extend(clustering_order(table));
    if is_virtual {
        options.push(format!(
            "comment = {}",
            string_literal(&table.params.comment)
        ));
    } else {
        options.extend(table_options(&table.params));
    }
    options
}

/// CREATE MATERIALIZED VIEW as Cassandra's `ViewMetadata.appendCqlTo`
/// writes it.
pub fn create_view_statement(view: &Table, internals: bool) -> String {
    let Some(def) = &view.view else {
        return create_table_statement(view, internals);
    };
    let selection = if def.include_all_columns {
        "*".to_string()
    } else {
        create_order(view)
            .iter()
            .map(|c| quote(&c.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = format!(
        "CREATE MATERIALIZED VIEW {} AS\n    SELECT {selection}\n    FROM {}\n    WHERE {}\n    {}\n WITH ",
        qualified(&view.keyspace, &view.name),
        qualified(&view.keyspace, &def.base_table),
        def.where_clause,
        primary_key(view),
    );
    let mut options: Vec<String> = Vec::new();
    if internals {
        options.push(format!("ID = {}", uuid_text(view.id)));
    }
    options.extend(clustering_order(view));
    // A view has no default_time_to_live of its own.
    options.extend(
        table_options(&view.params)
            .into_iter()
            .filter(|o| !o.starts_with("default_time_to_live")),
    );
    out.push_str(&options.join("\n    AND "));
    out.push(';');
    out
}

/// The `CLUSTERING ORDER BY` option of a table with clustering columns.
fn clustering_order(table: &Table) -> Option<String> {
    if table.clustering_count == 0 {
        return None;
    }
    let order: Vec<String> = table
        .clustering()
        .iter()
        .map(|c| {
            format!(
                "{} {}",
                quote(&c.name),
                if c.descending { "DESC" } else { "ASC" }
            )
        })
        .collect();
    Some(format!("CLUSTERING ORDER BY ({})", order.join(", ")))
}

/// Columns in CREATE order: partition key, clustering, then static and
/// regular columns (statics first; within each, simple columns before
/// multi-cell ones, each by name).
fn create_order(table: &Table) -> Vec<&crate::schema::Column> {
    let mut values: Vec<&crate::schema::Column> = table.value_columns().iter().collect();
    values.sort_by(|a, b| {
        (
            a.kind != ColumnKind::Static,
            a.ty.is_multi_cell(),
            a.name.as_bytes(),
        )
            .cmp(&(
                b.kind != ColumnKind::Static,
                b.ty.is_multi_cell(),
                b.name.as_bytes(),
            ))
    });
    table
        .partition_key()
        .iter()
        .chain(table.clustering())
        .chain(values)
        .filter(|c| !table.is_hidden(c))
        .collect()
}

fn primary_key(table: &Table) -> String {
    let names = |columns: &[crate::schema::Column]| -> Vec<String> {
        columns
            .iter()
            .filter(|c| !table.is_hidden(c))
            .map(|c| quote(&c.name))
            .collect()
    };
    let partition = names(table.partition_key());
    let mut key = if partition.len() > 1 {
        format!("({})", partition.join(", "))
    } else {
        partition.join("")
    };
    for c in names(table.clustering()) {
        key.push_str(", ");
        key.push_str(&c);
    }
    format!("PRIMARY KEY ({key})")
}

/// The `WITH` options of a table, in Cassandra's order.
fn table_options(p: &TableParams) -> Vec<String> {
    vec![
        format!(
            "additional_write_policy = {}",
            string_literal(&p.additional_write_policy)
        ),
        format!("allow_auto_snapshot = {}", p.allow_auto_snapshot),
        format!(
            "bloom_filter_fp_chance = {}",
            java_double(p.bloom_filter_fp_chance)
        ),
        format!("caching = {}", text_map_literal(&p.caching)),
        format!("cdc = {}", p.cdc),
        format!("comment = {}", string_literal(&p.comment)),
        format!("compaction = {}", text_map_literal(&p.compaction)),
        format!("compression = {}", text_map_literal(&p.compression)),
        format!("memtable = {}", string_literal(&p.memtable)),
        format!("crc_check_chance = {}", java_double(p.crc_check_chance)),
        format!("default_time_to_live = {}", p.default_time_to_live),
        format!(
            "extensions = {}",
            map_literal(
                p.extensions
                    .iter()
                    .map(|(k, v)| (k.as_str(), blob_literal(v)))
            )
        ),
        format!("gc_grace_seconds = {}", p.gc_grace_seconds),
        format!("incremental_backups = {}", p.incremental_backups),
        format!("max_index_interval = {}", p.max_index_interval),
        format!(
            "memtable_flush_period_in_ms = {}",
            p.memtable_flush_period_in_ms
        ),
        format!("min_index_interval = {}", p.min_index_interval),
        format!("read_repair = {}", string_literal(&p.read_repair)),
        format!(
            "speculative_retry = {}",
            string_literal(&p.speculative_retry)
        ),
    ]
}

fn blob_literal(bytes: &[u8]) -> String {
    format!("0x{}", hex::encode(bytes))
}

fn uuid_text(id: [u8; 16]) -> String {
    rocksandra_data::uuid::to_text(&id)
}

#[cfg(test)]
mod tests;
