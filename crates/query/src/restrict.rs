//! WHERE clauses: which partitions, which clustering slices, and which
//! remaining relations filter rows. Shared by SELECT, UPDATE and DELETE.

use std::cmp::Ordering;

use rocksandra_cql::ast::{Expr, Operator, Relation, RelationLhs};
use rocksandra_data::types::CqlType;
use rocksandra_data::{Token, Value};
use rocksandra_storage::{ClusteringBound, Slice};

use crate::error::{QueryError, Result};
use crate::rows::CqlRow;
use crate::schema::{ColumnKind, Table};
use crate::term::{evaluate, EvalContext, Term};

/// Most partition keys or clustering prefixes an IN product may produce
/// (Cassandra's `max_in_values`-like guard against huge cartesian products).
pub const IN_PRODUCT_MAX: usize = 10_000;

#[derive(Clone, Debug, PartialEq)]
pub enum PartitionSelection {
    /// Exactly these partitions (each a list of key components), in order.
    Keys(Vec<Vec<Vec<u8>>>),
    /// A token range: `start` exclusive/inclusive, `end` exclusive/inclusive.
    Tokens {
        start: Option<(Token, bool)>,
        end: Option<(Token, bool)>,
    },
}

/// A relation applied to rows after reading.
#[derive(Clone, Debug)]
pub struct Filter {
    pub column: usize,
    pub op: Operator,
    /// For IN, every value; otherwise one. None is null.
    pub values: Vec<Option<Vec<u8>>>,
    /// For `m[key] = v`: the map key.
    pub element_key: Option<Vec<u8>>,
}

/// `(a, b) > (x, y)`: a bound on a tuple of clustering columns, by value.
#[derive(Clone, Debug)]
pub struct TupleFilter {
    pub columns: Vec<usize>,
    /// A lower bound (`>`/`>=`) or an upper one.
    pub lower: bool,
    pub inclusive: bool,
    pub values: Vec<Vec<u8>>,
}

impl TupleFilter {
    pub fn matches(&self, table: &Table, row: &CqlRow) -> bool {
        let mut ordering = Ordering::Equal;
        for (column, expected) in self.columns.iter().zip(&self.values) {
            let definition = &table.columns[*column];
            ordering = match &row.columns[*column].value {
                Some(actual) => rocksandra_data::value::compare(&definition.ty, actual, expected),
                // A compact table's prefix row has no value for its
                // trailing clustering columns: it sorts first in clustering
                // order, as Cassandra's nulls do there.
                None if definition.descending => Ordering::Greater,
                None => Ordering::Less,
            };
            if ordering != Ordering::Equal {
                break;
            }
        }
        match (ordering, self.lower) {
            (Ordering::Equal, _) => self.inclusive,
            (Ordering::Greater, lower) => lower,
            (Ordering::Less, lower) => !lower,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Restrictions {
    pub partition: PartitionSelection,
    /// Clustering slices in clustering order (empty = none selected; the
    /// whole partition is `[Slice::all()]`).
    pub slices: Vec<Slice>,
    /// Whether the clustering restrictions select exactly full keys with EQ/IN.
    pub clustering_is_exact: bool,
    /// Whether any clustering column is restricted.
    pub clustering_restricted: bool,
    /// Clustering restrictions that cannot select slices (a column after an
    /// unrestricted or range-restricted one): filters with ALLOW FILTERING,
    /// this error otherwise.
    pub clustering_error: Option<QueryError>,
    /// The clustering error is a column restricted after an unrestricted
    /// one (`PRIMARY KEY column ... is not restricted`), which any relation
    /// with a supporting index lifts in Cassandra (the query then goes to
    /// the index, and needs ALLOW FILTERING if the index cannot take it).
    pub clustering_gap: bool,
    /// A clustering column after a multi-column slice is restricted: it can
    /// only filter, and an index cannot take the slice with it
    /// (`Multi-column slice restrictions cannot be used for filtering.`).
    pub filters_after_multi_slice: bool,
    pub filters: Vec<Filter>,
    /// Multi-column bounds applied to rows (tables with DESC columns).
    pub tuple_filters: Vec<TupleFilter>,
    /// Filters that need ALLOW FILTERING in a SELECT.
    pub needs_filtering: bool,
    /// With an IN on the partition key, the number of partition keys after
    /// each partition key column (Cassandra's running cartesian product,
    /// which the `in_select_cartesian_product` guardrail checks).
    pub partition_in_sizes: Vec<usize>,
    /// The same for an IN on the clustering key when it selects whole rows.
    pub clustering_in_sizes: Vec<usize>,
    /// A key column with a null slice bound: a SELECT reads the null as the
    /// empty value (which sorts first), as Cassandra does; a modification
    /// refuses it.
    pub null_slice_bound: Option<String>,
    /// Per clustering column, whether an equality (one value) restricts
    /// it: ORDER BY may skip such columns.
    pub clustering_eq: Vec<bool>,
}

fn column_index(table: &Table, name: &str) -> Result<usize> {
    table.column_index(name).ok_or_else(|| {
        QueryError::undefined_column(
            &rocksandra_data::types::quote_identifier_if_needed(name),
            &table.keyspace,
            &table.name,
        )
    })
}

fn term_value(term: Term, name: &str) -> Result<Option<Vec<u8>>> {
    match term {
        Term::Value(v) => Ok(Some(v)),
        Term::Null => Ok(None),
        Term::Unset => Err(QueryError::invalid(format!(
            "Invalid unset value for column {name}"
        ))),
    }
}

/// Checks `m[key] = value` as Cassandra does and evaluates its key and value.
fn map_entry_relation(
    col: &crate::schema::Column,
    key: &Expr,
    op: Operator,
    rhs: &Expr,
    ctx: &EvalContext<'_>,
) -> Result<(Vec<u8>, Vec<u8>)> {
    let name = col.name.as_str();
    if matches!(col.ty.unfrozen(), CqlType::List(_)) {
        return Err(QueryError::invalid(format!(
            "Indexes on list entries ({name}[index] = value) are not currently supported."
        )));
    }
    // A DESC clustering column's reversed type is no map to Cassandra.
    let (CqlType::Map(kt, vt), false) = (col.ty.unfrozen(), col.descending) else {
        return Err(QueryError::invalid(format!(
            "Column {name} cannot be used as a map"
        )));
    };
    if op == Operator::Neq {
        return Err(QueryError::invalid(format!(
            "Unsupported \"!=\" relation: {name}[{key}] != {rhs}"
        )));
    }
    if op != Operator::Eq {
        return Err(QueryError::invalid(
            "Only EQ relations are supported on map entries",
        ));
    }
    if col.ty.is_frozen() {
        return Err(QueryError::invalid(format!(
            "Map-entry equality predicates on frozen map column {name} are not supported"
        )));
    }
    let entry_part = |expr: &Expr, ty: &CqlType, part: &str| -> Result<Vec<u8>> {
        match evaluate(expr, ty, &format!("{part}({name})"), ctx)? {
            Term::Value(v) => Ok(v),
            Term::Null => Err(QueryError::invalid(format!(
                "Unsupported null map {part} for column {name}"
            ))),
            Term::Unset => Err(QueryError::invalid(format!(
                "Unsupported unset map {part} for column {name}"
            ))),
        }
    };
    let k = entry_part(key, kt, "key")?;
    let v = entry_part(rhs, vt, "value")?;
    Ok((k, v))
}

/// Evaluates the right side of `IN`: a tuple of terms or one bound list.
fn in_values(
    expr: &Expr,
    ty: &CqlType,
    name: &str,
    ctx: &EvalContext<'_>,
) -> Result<Vec<Option<Vec<u8>>>> {
    match expr {
        Expr::Tuple(items) => items
            .iter()
            .map(|e| term_value(evaluate(e, ty, name, ctx)?, name))
            .collect(),
        other => {
            let list_type = CqlType::List(Box::new(ty.clone()));
            match evaluate(other, &list_type, name, ctx)? {
                Term::Value(bytes) => match Value::deserialize(&list_type, &bytes)? {
                    Value::List(items) => Ok(items.iter().map(|v| Some(v.to_bytes())).collect()),
                    _ => Err(QueryError::invalid(format!("Invalid IN value for {name}"))),
                },
                Term::Null => Err(QueryError::invalid("Invalid null value for IN restriction")),
                Term::Unset => Err(QueryError::invalid(format!(
                    "Invalid unset value for column {name}"
                ))),
            }
        }
    }
}

/// Per-column restriction gathered from the relations.
#[derive(Default, Clone)]
struct ColumnRestriction {
    /// EQ (one value) or IN (several).
    values: Option<Vec<Option<Vec<u8>>>>,
    is_in: bool,
    lower: Option<(Vec<u8>, bool)>,
    upper: Option<(Vec<u8>, bool)>,
    /// A slice bound was null (read as the empty value).
    null_bound: bool,
}

impl ColumnRestriction {
    fn is_restricted(&self) -> bool {
        self.values.is_some() || self.lower.is_some() || self.upper.is_some()
    }
}

/// One side of a single-column slice: the value and whether it is included.
type SliceSide = Option<(Vec<u8>, bool)>;

/// Analyzes a WHERE clause.
pub fn analyze(
    table: &Table,
    relations: &[Relation],
    ctx: &EvalContext<'_>,
) -> Result<Restrictions> {
    let mut gathered = Gathered::new(table);
    for relation in relations {
        gathered.add_relation(table, relation, ctx)?;
    }
    gathered.check_multi_slice_equalities(table)?;
    gathered.check_multi_slice_single_slices(table)?;
    let partition = gathered.partition_selection(table)?;
    let clustering_eq = gathered.clustering_equalities(table);
    let Gathered {
        partition_in_sizes,
        per_column,
        mut filters,
        mut needs_filtering,
        multi_slice_start,
        multi_lower,
        multi_upper,
        multi_eqs,
        multi_slice_before_single_slice,
        ..
    } = gathered;
    let null_slice_bound = per_column
        .iter()
        .zip(&table.columns)
        .find(|(r, _)| r.null_bound)
        .map(|(_, c)| c.name.clone());
    let multi_slice = multi_slice_start.map(|start| MultiSlice {
        start,
        lower: multi_lower,
        upper: multi_upper,
        before_single_slice: multi_slice_before_single_slice,
    });
    let clustering = clustering_selection(
        table,
        &per_column,
        &multi_eqs,
        multi_slice,
        &mut filters,
        &mut needs_filtering,
    )?;
    Ok(Restrictions {
        partition,
        slices: clustering.slices,
        clustering_is_exact: clustering.exact,
        clustering_restricted: clustering.restricted,
        clustering_error: clustering.error,
        clustering_gap: clustering.gap,
        filters_after_multi_slice: clustering.filters_after_multi_slice,
        filters,
        tuple_filters: clustering.tuple_filters,
        needs_filtering,
        partition_in_sizes,
        clustering_in_sizes: clustering.in_sizes,
        null_slice_bound,
        clustering_eq,
    })
}

/// What the relations of a WHERE clause restrict, gathered relation by
/// relation before the partition and clustering selections are worked out.
struct Gathered {
    per_column: Vec<ColumnRestriction>,
    token_start: Option<(Token, bool)>,
    /// A `token(...) = x` relation was seen.
    token_eq: bool,
    /// A single-column clustering slice came after the multi-column slice.
    multi_slice_before_single_slice: bool,
    token_end: Option<(Token, bool)>,
    has_token: bool,
    filters: Vec<Filter>,
    needs_filtering: bool,
    // Multi-column relations on clustering columns, each starting at a
    // clustering position: a slice's bounds (values, inclusive) per side,
    // and equalities (EQ or IN) as (start, width, tuples).
    multi_slice_start: Option<usize>,
    multi_lower: Option<(Vec<Vec<u8>>, bool)>,
    multi_upper: Option<(Vec<Vec<u8>>, bool)>,
    multi_eqs: Vec<MultiEq>,
    /// `Restrictions::partition_in_sizes`.
    partition_in_sizes: Vec<usize>,
}

/// The "`{name} cannot be restricted by more than one relation if it
/// includes ...`" error, naming an IN or an Equal relation.
fn restricted_more_than_once(name: &str, is_in: bool) -> QueryError {
    let what = if is_in { "a IN" } else { "an Equal" };
    QueryError::invalid(format!(
        "{name} cannot be restricted by more than one relation if it includes {what}"
    ))
}

/// Cassandra's error for an EQ or IN on `columns` after a slice on them.
fn equality_and_inequality(columns: &str) -> QueryError {
    QueryError::invalid(format!(
        "Column \"{columns}\" cannot be restricted by both an equality and an inequality relation"
    ))
}

/// An IN whose literal list holds one value, as Cassandra reads it: an
/// equality on that value (so `c IN (1) AND c IN (2)` is refused as two
/// equalities, and ORDER BY may skip the column).
fn single_value_in(op: Operator, rhs: &Expr) -> Option<&Expr> {
    match (op, rhs) {
        (Operator::In, Expr::Tuple(items) | Expr::List(items)) if items.len() == 1 => items.first(),
        _ => None,
    }
}

/// Whether `op` is one of the four slice operators.
fn is_slice_op(op: Operator) -> bool {
    matches!(
        op,
        Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte
    )
}

/// Whether `op` can only filter rows (never select partitions or slices).
fn is_filter_only_op(op: Operator) -> bool {
    matches!(
        op,
        Operator::Contains | Operator::ContainsKey | Operator::Like | Operator::Neq
    )
}

/// Rejects single-column relations Cassandra never accepts: `!=`, LIKE
/// without an index, slices on durations and most operators on
/// non-frozen collections.
fn reject_unsupported_column_relation(
    column: &crate::schema::Column,
    op: Operator,
    rhs: &Expr,
    relation: &Relation,
) -> Result<()> {
    let name = column.name.as_str();
    match op {
        Operator::Neq => {
            let rhs_text = match rhs {
                Expr::Literal(rocksandra_cql::ast::Literal::Null) => "NULL".to_string(),
                other => other.to_string(),
            };
            Err(QueryError::invalid(format!(
                "Unsupported \"!=\" relation: {} != {rhs_text}",
                column.name
            )))
        }
        Operator::Like if !column.ty.is_multi_cell() => Err(QueryError::invalid(format!(
            "LIKE restriction is only supported on properly indexed columns. {relation} is not valid."
        ))),
        Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte
            if column.ty == CqlType::Native(rocksandra_data::NativeType::Duration) =>
        {
            Err(QueryError::invalid(
                "Slice restrictions are not supported on duration columns",
            ))
        }
        Operator::Eq
        | Operator::Lt
        | Operator::Lte
        | Operator::Gt
        | Operator::Gte
        | Operator::In
        | Operator::Like
            if column.ty.is_multi_cell() =>
        {
            if matches!(column.ty, CqlType::Udt(_)) {
                return Err(QueryError::invalid(format!(
                    "Non-frozen UDT column '{name}' ({}) cannot be restricted by any relation",
                    column.ty
                )));
            }
            Err(QueryError::invalid(format!(
                "Collection column '{name}' ({}) cannot be restricted by a '{}' relation",
                column.ty,
                op.as_str()
            )))
        }
        _ => Ok(()),
    }
}

/// Evaluates the right side of a filtering relation: every IN value, the
/// element of CONTAINS, the key of CONTAINS KEY, or the one compared value.
fn filter_values(
    column: &crate::schema::Column,
    op: Operator,
    rhs: &Expr,
    ctx: &EvalContext<'_>,
) -> Result<Vec<Option<Vec<u8>>>> {
    let name = column.name.as_str();
    // Cassandra types a DESC clustering column as a reversed type, which it
    // does not take for a collection.
    let collection = (!column.descending).then(|| column.ty.unfrozen());
    Ok(match op {
        Operator::In => in_values(rhs, &column.ty, name, ctx)?,
        Operator::Contains => {
            let elem = match collection {
                Some(CqlType::List(e) | CqlType::Set(e)) => (**e).clone(),
                Some(CqlType::Map(_, v)) => (**v).clone(),
                _ => {
                    return Err(QueryError::invalid(format!(
                        "Cannot use CONTAINS on non-collection column {name}"
                    )))
                }
            };
            vec![term_value(
                evaluate(rhs, &elem, &format!("value({name})"), ctx)?,
                name,
            )?]
        }
        Operator::ContainsKey => {
            let Some(CqlType::Map(k, _)) = collection else {
                return Err(QueryError::invalid(format!(
                    "Cannot use CONTAINS KEY on non-map column {name}"
                )));
            };
            vec![term_value(
                evaluate(rhs, k, &format!("key({name})"), ctx)?,
                name,
            )?]
        }
        _ => match evaluate(rhs, &column.ty, name, ctx)? {
            // A filter on a regular column (Cassandra's RowFilter) words it so.
            Term::Unset if !column.kind.is_primary_key() => {
                return Err(QueryError::invalid(format!(
                    "Unsupported unset value for column {name}"
                )))
            }
            term => vec![term_value(term, name)?],
        },
    })
}

/// The merging rules of single-column restrictions on a regular (non-key)
/// column: at most one EQ/IN, not mixed with a slice, one bound per side.
/// Only the shape is recorded; the values live in the filter.
fn merge_regular_restriction(slot: &mut ColumnRestriction, name: &str, op: Operator) -> Result<()> {
    match op {
        Operator::Eq | Operator::In => {
            if slot.values.is_some() {
                return Err(restricted_more_than_once(name, slot.is_in));
            }
            if slot.lower.is_some() || slot.upper.is_some() {
                return Err(equality_and_inequality(name));
            }
            slot.is_in = op == Operator::In;
            slot.values = Some(Vec::new());
        }
        Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte => {
            if slot.values.is_some() {
                return Err(restricted_more_than_once(name, slot.is_in));
            }
            set_bound(slot, op, name, (Vec::new(), false))?;
        }
        _ => {}
    }
    Ok(())
}

/// Cassandra's error for a second bound on the same side of a range.
fn more_than_one_bound(lower: bool, columns: &str) -> QueryError {
    QueryError::invalid(format!(
        "More than one restriction was found for the {} bound on {columns}",
        if lower { "start" } else { "end" }
    ))
}

/// A multi-column relation's tuple literals (each of an IN list) have one
/// value per column, as Cassandra checks them.
fn check_tuple_arity(rhs: &Expr, op: Operator, width: usize) -> Result<()> {
    let tuples: Vec<&Expr> = match (op, rhs) {
        (Operator::In, Expr::List(items)) | (Operator::In, Expr::Tuple(items)) => {
            items.iter().collect()
        }
        (Operator::In, _) => Vec::new(),
        _ => vec![rhs],
    };
    for tuple in tuples {
        if let Expr::Tuple(items) = tuple {
            if items.len() != width {
                return Err(QueryError::invalid(format!(
                    "Expected {width} elements in value tuple, but got {}: {tuple}",
                    items.len()
                )));
            }
        }
    }
    Ok(())
}

/// Sets the lower (`>`, `>=`) or upper (`<`, `<=`) bound of a column's
/// range, once: a second bound on the same side is Cassandra's error.
fn set_bound(
    slot: &mut ColumnRestriction,
    op: Operator,
    name: &str,
    bound: (Vec<u8>, bool),
) -> Result<()> {
    let start = matches!(op, Operator::Gt | Operator::Gte);
    let side = if start {
        &mut slot.lower
    } else {
        &mut slot.upper
    };
    if side.is_some() {
        return Err(more_than_one_bound(start, name));
    }
    *side = Some(bound);
    Ok(())
}

/// Records an EQ, IN or slice relation on a primary key column with its
/// values, under the same merging rules as regular columns.
fn restrict_key_column(
    slot: &mut ColumnRestriction,
    column: &crate::schema::Column,
    op: Operator,
    rhs: &Expr,
    ctx: &EvalContext<'_>,
) -> Result<()> {
    let name = column.name.as_str();
    match op {
        Operator::Eq | Operator::In => {
            if slot.values.is_some() {
                return Err(restricted_more_than_once(name, slot.is_in));
            }
            if slot.lower.is_some() || slot.upper.is_some() {
                return Err(equality_and_inequality(name));
            }
            if op == Operator::In {
                slot.is_in = true;
                slot.values = Some(in_values(rhs, &column.ty, name, ctx)?);
            } else {
                let v = term_value(evaluate(rhs, &column.ty, name, ctx)?, name)?;
                slot.values = Some(vec![v]);
            }
        }
        Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte => {
            if column.ty == CqlType::Native(rocksandra_data::NativeType::Duration) {
                return Err(QueryError::invalid(
                    "Slice restrictions are not supported on duration columns",
                ));
            }
            if slot.values.is_some() {
                return Err(restricted_more_than_once(name, slot.is_in));
            }
            let v = match term_value(evaluate(rhs, &column.ty, name, ctx)?, name)? {
                Some(v) => v,
                // Cassandra reads a null bound as the empty value, first in
                // ascending order (last in a reversed one, not done here).
                None if !column.descending => {
                    slot.null_bound = true;
                    Vec::new()
                }
                None => {
                    return Err(QueryError::invalid(format!(
                        "Invalid null value for column {name}"
                    )))
                }
            };
            let inclusive = matches!(op, Operator::Lte | Operator::Gte);
            set_bound(slot, op, name, (v, inclusive))?;
        }
        _ => {}
    }
    Ok(())
}

/// Checks that a multi-column relation names clustering columns in
/// primary key order; returns their indexes and the first one's position.
fn multi_column_indexes(
    table: &Table,
    names: &[rocksandra_cql::ast::Ident],
    relation: &Relation,
) -> Result<(Vec<usize>, usize)> {
    let mut idx = Vec::new();
    let mut start = 0;
    for (j, n) in names.iter().enumerate() {
        let i = column_index(table, n.as_str())?;
        if names[..j].contains(n) {
            return Err(QueryError::invalid(format!(
                "Column \"{}\" appeared twice in a relation: {relation}",
                n.as_str()
            )));
        }
        if table.columns[i].kind != ColumnKind::Clustering {
            return Err(QueryError::invalid(format!(
                "Multi-column relations can only be applied to clustering columns but was applied to: {}",
                n.as_str()
            )));
        }
        if j == 0 {
            start = table.columns[i].position;
        }
        if table.columns[i].position != start + j {
            return Err(QueryError::invalid(format!(
                "Clustering columns must appear in the PRIMARY KEY order in multi-column relations: {relation}"
            )));
        }
        idx.push(i);
    }
    Ok((idx, start))
}

/// Splits a serialized tuple into its (non-null) component values.
/// `names` are the relation's columns; a null one is named as Cassandra
/// names it, in a slice's condition or in an equality.
fn tuple_components(
    tuple_type: &CqlType,
    bytes: Vec<u8>,
    names: &[&str],
    slice: bool,
) -> Result<Vec<Vec<u8>>> {
    let null = |i: usize| {
        let name = names.get(i).copied().unwrap_or_default();
        QueryError::invalid(if slice {
            format!("Invalid null value in condition for column {name}")
        } else {
            format!("Invalid null value for column {name}")
        })
    };
    match Value::deserialize(tuple_type, &bytes)? {
        Value::Tuple(items) => items
            .into_iter()
            .enumerate()
            .map(|(i, v)| v.map(|v| v.to_bytes()).ok_or_else(|| null(i)))
            .collect(),
        _ => Err(QueryError::invalid("Invalid tuple")),
    }
}

/// Evaluates one non-null tuple of a multi-column relation.
fn multi_column_tuple(
    rhs: &Expr,
    tuple_type: &CqlType,
    (label, names, slice): (&str, &[&str], bool),
    ctx: &EvalContext<'_>,
) -> Result<Vec<Vec<u8>>> {
    if let Some(components) = literal_tuple_components(rhs, tuple_type, names, slice, ctx) {
        return components;
    }
    let term = evaluate(rhs, tuple_type, label, ctx)?;
    if matches!(term, Term::Unset) {
        return Err(QueryError::invalid(format!(
            "Invalid unset value for tuple {label}"
        )));
    }
    let Some(b) = term_value(term, label)? else {
        return Err(QueryError::invalid(format!(
            "Invalid null value for {label}"
        )));
    };
    tuple_components(tuple_type, b, names, slice)
}

/// The tuples of a multi-column IN: each literal tuple of a literal list
/// typed component by component, or the values of a bound list.
fn multi_column_in_tuples(
    rhs: &Expr,
    tuple_type: &CqlType,
    (label, names): (&str, &[&str]),
    ctx: &EvalContext<'_>,
) -> Result<Vec<Vec<Vec<u8>>>> {
    let literals: Option<Vec<&Expr>> = match rhs {
        Expr::Tuple(list) | Expr::List(list) => list
            .iter()
            .map(|e| matches!(e, Expr::Tuple(_)).then_some(e))
            .collect(),
        _ => None,
    };
    if let Some(literals) = literals {
        return literals
            .into_iter()
            .map(|t| multi_column_tuple(t, tuple_type, (label, names, false), ctx))
            .collect();
    }
    in_values(rhs, tuple_type, label, ctx)?
        .into_iter()
        .map(|v| match v {
            Some(b) => tuple_components(tuple_type, b, names, false),
            None => Err(QueryError::invalid(format!(
                "Invalid null value for {label}"
            ))),
        })
        .collect()
}

/// The values of a tuple literal `(x, y, ...)` of a multi-column relation,
/// each typed by its column as Cassandra types them (so an empty value of
/// an int column, which a tuple value cannot hold, is taken); None when
/// `rhs` is not such a literal.
fn literal_tuple_components(
    rhs: &Expr,
    tuple_type: &CqlType,
    names: &[&str],
    slice: bool,
    ctx: &EvalContext<'_>,
) -> Option<Result<Vec<Vec<u8>>>> {
    let (Expr::Tuple(items), CqlType::Tuple(types)) = (rhs, tuple_type) else {
        return None;
    };
    if items.len() != types.len() || names.len() != types.len() {
        return None;
    }
    let component = |(i, (item, ty)): (usize, (&Expr, &CqlType))| -> Result<Vec<u8>> {
        let name = names[i];
        match term_value(evaluate(item, ty, name, ctx)?, name)? {
            Some(value) => Ok(value),
            None if slice => Err(QueryError::invalid(format!(
                "Invalid null value in condition for column {name}"
            ))),
            None => Err(QueryError::invalid(format!(
                "Invalid null value for column {name}"
            ))),
        }
    };
    Some(items.iter().zip(types).enumerate().map(component).collect())
}

/// Checks the columns of `token(...)` on the left of a relation: all the
/// partition key columns, in order.
fn check_token_columns(table: &Table, names: &[rocksandra_cql::ast::Ident]) -> Result<()> {
    let expected: Vec<&str> = table
        .partition_key()
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    let given: Vec<&str> = names.iter().map(|n| n.as_str()).collect();
    if expected.iter().any(|e| !given.contains(e)) {
        return Err(QueryError::invalid(
            "The token() function must be applied to all partition key components or none of them",
        ));
    }
    if given.len() != expected.len() || given.iter().any(|g| !expected.contains(g)) {
        return Err(QueryError::invalid(
            "The token() function must contains only partition key components",
        ));
    }
    if given != expected {
        return Err(QueryError::invalid(format!(
            "The token function arguments must be in the partition key order: {}",
            expected.join(", ")
        )));
    }
    Ok(())
}

/// Evaluates the right side of a token relation: a bigint, or
/// `token(<terms>)` — the token of the partition key those terms make.
fn token_bound(table: &Table, rhs: &Expr, ctx: &EvalContext<'_>) -> Result<Token> {
    let bigint = CqlType::Native(rocksandra_data::NativeType::Bigint);
    let value = match rhs {
        Expr::Function { name, args }
            if name.keyspace.is_none() && name.name.as_str() == "token" =>
        {
            if args.len() != table.partition_key_count {
                return Err(QueryError::invalid(format!(
                    "Invalid number of arguments in call to function system.token: {} required but {} provided",
                    table.partition_key_count,
                    args.len()
                )));
            }
            let mut parts = Vec::new();
            for (position, (arg, column)) in args.iter().zip(table.partition_key()).enumerate() {
                let term = evaluate(arg, &column.ty, &column.name, ctx)
                    .map_err(|e| token_argument_error(e, arg, position, &column.ty))?;
                let Some(v) = term_value(term, &column.name)? else {
                    return Err(QueryError::invalid(format!(
                        "Invalid null value for partition key part {}",
                        column.name
                    )));
                };
                parts.push(v);
            }
            let key = crate::rows::partition_key_bytes(&parts);
            Term::Value(Token::murmur3(&key).0.to_be_bytes().to_vec())
        }
        other => evaluate(other, &bigint, "partition key token", ctx)?,
    };
    let Some(b) = term_value(value, "token")? else {
        return Err(QueryError::invalid("Invalid null token value"));
    };
    Ok(Token(i64::from_be_bytes(b.as_slice().try_into().map_err(
        |_| QueryError::invalid("Invalid token value"),
    )?)))
}

/// Cassandra's error for a literal of the wrong type given to token():
/// its function resolution refuses the argument before typing the value.
fn token_argument_error(
    error: QueryError,
    arg: &Expr,
    position: usize,
    ty: &CqlType,
) -> QueryError {
    match arg {
        Expr::Literal(literal) if !matches!(literal, rocksandra_cql::ast::Literal::Null) => {
            QueryError::invalid(format!(
                "Type error: {arg} cannot be passed as argument {position} of function system.token of type {ty}"
            ))
        }
        _ => error,
    }
}

/// Whether partition key `key`'s token lies between `start` and `end`
/// (an end of `i64::MIN` is no end).
fn token_in_range(
    key: &[Vec<u8>],
    start: Option<(Token, bool)>,
    end: Option<(Token, bool)>,
) -> bool {
    let t = Token::murmur3(&crate::rows::partition_key_bytes(key));
    let after_start = match start {
        None => true,
        Some((s, true)) => t >= s,
        Some((s, false)) => t > s,
    };
    let before_end = match end {
        None => true,
        Some((e, _)) if e.0 == i64::MIN => true,
        Some((e, true)) => t <= e,
        Some((e, false)) => t < e,
    };
    after_start && before_end
}

impl Gathered {
    fn new(table: &Table) -> Self {
        Gathered {
            per_column: vec![ColumnRestriction::default(); table.columns.len()],
            token_start: None,
            token_eq: false,
            multi_slice_before_single_slice: false,
            token_end: None,
            has_token: false,
            filters: Vec::new(),
            needs_filtering: false,
            multi_slice_start: None,
            multi_lower: None,
            multi_upper: None,
            multi_eqs: Vec::new(),
            partition_in_sizes: Vec::new(),
        }
    }

    /// Adds one relation, dispatching on its left side.
    fn add_relation(
        &mut self,
        table: &Table,
        relation: &Relation,
        ctx: &EvalContext<'_>,
    ) -> Result<()> {
        let Relation::Compare { lhs, op, rhs } = relation else {
            if let Relation::IsNotNull { column } = relation {
                column_index(table, column.as_str())?;
                return Err(QueryError::invalid(format!(
                    "Unsupported restriction: {} IS NOT NULL",
                    column.as_str()
                )));
            }
            return Ok(());
        };
        match lhs {
            RelationLhs::Column(name) => {
                self.add_column_relation(table, relation, name.as_str(), *op, rhs, ctx)
            }
            RelationLhs::Element { column, key } => {
                let i = column_index(table, column.as_str())?;
                let (k, v) = map_entry_relation(&table.columns[i], key, *op, rhs, ctx)?;
                self.needs_filtering = true;
                self.filters.push(Filter {
                    column: i,
                    op: *op,
                    values: vec![Some(v)],
                    element_key: Some(k),
                });
                Ok(())
            }
            RelationLhs::Columns(names) => {
                self.add_multi_column_relation(table, relation, names, *op, rhs, ctx)
            }
            RelationLhs::Token(names) => self.add_token_relation(table, names, *op, rhs, ctx),
        }
    }

    /// A single-column relation: a filter when it cannot select partitions
    /// or slices (regular columns, partition key ranges, CONTAINS, ...), a
    /// key restriction otherwise.
    fn add_column_relation(
        &mut self,
        table: &Table,
        relation: &Relation,
        name: &str,
        op: Operator,
        rhs: &Expr,
        ctx: &EvalContext<'_>,
    ) -> Result<()> {
        let i = column_index(table, name)?;
        let column = &table.columns[i];
        let name = column.name.as_str();
        let is_key = column.kind.is_primary_key();
        reject_unsupported_column_relation(column, op, rhs, relation)?;
        let (op, rhs) = single_value_in(op, rhs).map_or((op, rhs), |v| (Operator::Eq, v));
        let partition_range = column.kind == ColumnKind::PartitionKey && is_slice_op(op);
        if partition_range || is_filter_only_op(op) || !is_key {
            let values = filter_values(column, op, rhs, ctx)?;
            let contains = matches!(op, Operator::Contains | Operator::ContainsKey);
            if contains && values.iter().any(Option::is_none) {
                return Err(QueryError::invalid(format!(
                    "Unsupported null value for column {name}"
                )));
            }
            if !is_key {
                if values.iter().any(Option::is_none) {
                    return Err(QueryError::invalid(format!(
                        "Unsupported null value for column {name}"
                    )));
                }
                merge_regular_restriction(&mut self.per_column[i], name, op)?;
            }
            if column.kind != ColumnKind::PartitionKey || !matches!(op, Operator::Eq | Operator::In)
            {
                self.needs_filtering = true;
            }
            self.filters.push(Filter {
                column: i,
                op,
                values,
                element_key: None,
            });
            if !is_key || is_filter_only_op(op) {
                return Ok(());
            }
        }
        if column.kind == ColumnKind::Clustering && is_slice_op(op) {
            // Cassandra words a multi-column restriction that comes before a
            // slice on an earlier column otherwise.
            self.multi_eqs
                .iter_mut()
                .for_each(|m| m.before_single_slice = true);
            self.multi_slice_before_single_slice |= self.multi_slice_start.is_some();
        }
        restrict_key_column(&mut self.per_column[i], column, op, rhs, ctx)
    }

    /// A multi-column relation on clustering columns: an equality (EQ or
    /// IN) or one side of a slice, all starting at the same column.
    fn add_multi_column_relation(
        &mut self,
        table: &Table,
        relation: &Relation,
        names: &[rocksandra_cql::ast::Ident],
        op: Operator,
        rhs: &Expr,
        ctx: &EvalContext<'_>,
    ) -> Result<()> {
        let (idx, start) = multi_column_indexes(table, names, relation)?;
        let types: Vec<CqlType> = idx.iter().map(|i| table.columns[*i].ty.clone()).collect();
        let tuple_type = CqlType::Tuple(types);
        let label = format!(
            "({})",
            names
                .iter()
                .map(|n| n.as_str())
                .collect::<Vec<_>>()
                .join(",")
        );
        check_tuple_arity(rhs, op, names.len())?;
        let columns: Vec<&str> = names.iter().map(|n| n.as_str()).collect();
        let (op, rhs) = single_value_in(op, rhs).map_or((op, rhs), |v| (Operator::Eq, v));
        match op {
            Operator::Eq => {
                let tuple = multi_column_tuple(rhs, &tuple_type, (&label, &columns, false), ctx)?;
                self.multi_eqs.push(MultiEq {
                    start,
                    width: names.len(),
                    tuples: vec![tuple],
                    is_in: false,
                    after_slice: self.multi_slice_start.is_some(),
                    before_single_slice: false,
                });
            }
            Operator::In => {
                let tuples = multi_column_in_tuples(rhs, &tuple_type, (&label, &columns), ctx)?;
                self.multi_eqs.push(MultiEq {
                    start,
                    width: names.len(),
                    tuples,
                    is_in: true,
                    after_slice: self.multi_slice_start.is_some(),
                    before_single_slice: false,
                });
            }
            Operator::Gt | Operator::Gte | Operator::Lt | Operator::Lte => {
                let values = multi_column_tuple(rhs, &tuple_type, (&label, &columns, true), ctx)?;
                if self.multi_slice_start.is_some_and(|s| s != start) {
                    return Err(QueryError::invalid(format!(
                        "Column \"{}\" cannot be restricted by two inequalities not starting with the same column",
                        names[0].as_str()
                    )));
                }
                self.multi_slice_start = Some(start);
                let inclusive = matches!(op, Operator::Gte | Operator::Lte);
                let lower = matches!(op, Operator::Gt | Operator::Gte);
                let taken = if lower {
                    self.multi_lower.is_some()
                } else {
                    self.multi_upper.is_some()
                };
                if taken {
                    let columns: Vec<&str> = names.iter().map(|n| n.as_str()).collect();
                    return Err(more_than_one_bound(lower, &columns.join(" ,")));
                }
                if lower {
                    self.multi_lower = Some((values, inclusive));
                } else {
                    self.multi_upper = Some((values, inclusive));
                }
            }
            _ => {
                return Err(QueryError::invalid(format!(
                    "Unsupported operator {op:?} on multi-column relation"
                )))
            }
        }
        Ok(())
    }

    /// `token(pk...) op value`: a bound of the token range.
    fn add_token_relation(
        &mut self,
        table: &Table,
        names: &[rocksandra_cql::ast::Ident],
        op: Operator,
        rhs: &Expr,
        ctx: &EvalContext<'_>,
    ) -> Result<()> {
        check_token_columns(table, names)?;
        if op == Operator::Neq {
            let columns: Vec<&str> = names.iter().map(|n| n.as_str()).collect();
            return Err(QueryError::invalid(format!(
                "Unsupported \"!=\" relation: token({}) != {rhs}",
                columns.join(", ")
            )));
        }
        let t = token_bound(table, rhs, ctx)?;
        if self.token_eq {
            let columns: Vec<&str> = names.iter().map(|n| n.as_str()).collect();
            return Err(restricted_more_than_once(&columns.join(", "), false));
        }
        self.has_token = true;
        let taken = match op {
            Operator::Gt | Operator::Gte => self.token_start.is_some(),
            Operator::Lt | Operator::Lte => self.token_end.is_some(),
            _ => false,
        };
        if taken {
            let columns: Vec<&str> = names.iter().map(|n| n.as_str()).collect();
            let lower = matches!(op, Operator::Gt | Operator::Gte);
            return Err(more_than_one_bound(lower, &columns.join(", ")));
        }
        match op {
            Operator::Gt => self.token_start = Some((t, false)),
            Operator::Gte => self.token_start = Some((t, true)),
            Operator::Lt => self.token_end = Some((t, false)),
            Operator::Lte => self.token_end = Some((t, true)),
            Operator::Eq => {
                self.token_eq = true;
                self.token_start = Some((t, true));
                self.token_end = Some((t, true));
            }
            _ => {
                return Err(QueryError::invalid(format!(
                    "Unsupported operator on token: {op:?}"
                )))
            }
        }
        Ok(())
    }

    /// Rejects a multi-column slice together with an equality on one of
    /// its columns.
    fn check_multi_slice_equalities(&self, table: &Table) -> Result<()> {
        let pk_count = table.partition_key_count;
        let ck_count = table.clustering_count;
        let multi_width = self
            .multi_lower
            .as_ref()
            .or(self.multi_upper.as_ref())
            .map_or(0, |(values, _)| values.len());
        let slice_start = pk_count + self.multi_slice_start.unwrap_or(0);
        if let Some(column) = (slice_start..(slice_start + multi_width).min(pk_count + ck_count))
            .find(|i| self.per_column[*i].values.is_some())
        {
            return Err(QueryError::invalid(format!(
                "Column \"{}\" cannot be restricted by both an equality and an inequality relation",
                table.columns[column].name
            )));
        }
        Ok(())
    }

    /// `Restrictions::clustering_eq`.
    fn clustering_equalities(&self, table: &Table) -> Vec<bool> {
        let pk_count = table.partition_key_count;
        (0..table.clustering_count)
            .map(|j| {
                let r = &self.per_column[pk_count + j];
                let single = !r.is_in && r.values.as_ref().is_some_and(|v| v.len() == 1);
                single
                    || self
                        .multi_eqs
                        .iter()
                        .any(|m| !m.is_in && (m.start..m.start + m.width).contains(&j))
            })
            .collect()
    }

    /// Rejects a single-column slice on a column inside a multi-column
    /// slice that starts at an earlier column: the two inequalities do not
    /// start with the same column.
    fn check_multi_slice_single_slices(&self, table: &Table) -> Result<()> {
        let Some(start) = self.multi_slice_start else {
            return Ok(());
        };
        let width = [&self.multi_lower, &self.multi_upper]
            .iter()
            .filter_map(|side| side.as_ref().map(|(values, _)| values.len()))
            .max()
            .unwrap_or(0);
        let pk_count = table.partition_key_count;
        let inner = (start + 1)..(start + width).min(table.clustering_count);
        if let Some(j) = inner.into_iter().find(|j| {
            let r = &self.per_column[pk_count + j];
            r.lower.is_some() || r.upper.is_some()
        }) {
            return Err(QueryError::invalid(format!(
                "Column \"{}\" cannot be restricted by two inequalities not starting with the same column",
                table.columns[pk_count + j].name
            )));
        }
        Ok(())
    }

    /// Decides which partitions are read: exact keys when every partition
    /// key column has EQ/IN values (narrowed by any token range), a token
    /// range otherwise (partial key restrictions then become filters).
    fn partition_selection(&mut self, table: &Table) -> Result<PartitionSelection> {
        let pk_count = table.partition_key_count;
        let pk_restricted: Vec<bool> = (0..pk_count)
            .map(|i| self.per_column[i].values.is_some())
            .collect();
        if pk_restricted.iter().all(|r| *r) {
            let mut keys = self.partition_keys(table)?;
            if self.has_token {
                // Keys and a token range: the keys whose token is in the range.
                keys.retain(|k| token_in_range(k, self.token_start, self.token_end));
            }
            return Ok(PartitionSelection::Keys(keys));
        }
        if pk_restricted.iter().any(|r| *r) {
            self.needs_filtering = true;
            for (i, restriction) in self.per_column[..pk_count].iter().enumerate() {
                if let Some(values) = &restriction.values {
                    if !self.filters.iter().any(|f| f.column == i) {
                        self.filters.push(Filter {
                            column: i,
                            op: if values.len() == 1 {
                                Operator::Eq
                            } else {
                                Operator::In
                            },
                            values: values.clone(),
                            element_key: None,
                        });
                    }
                }
            }
        }
        Ok(PartitionSelection::Tokens {
            start: self.token_start,
            end: self.token_end,
        })
    }

    /// Every partition key the EQ/IN values make, in key order (and with
    /// an IN, their number after each column in `partition_in_sizes`).
    fn partition_keys(&mut self, table: &Table) -> Result<Vec<Vec<Vec<u8>>>> {
        let mut keys: Vec<Vec<Vec<u8>>> = vec![Vec::new()];
        let mut sizes = Vec::new();
        for (i, column) in table.partition_key().iter().enumerate() {
            let values = self.per_column[i].values.as_deref().unwrap_or_default();
            if table.partition_key_count == 1
                && values
                    .iter()
                    .any(|v| v.as_ref().is_some_and(|b| b.is_empty()))
            {
                // QueryProcessor.validateKey: a whole partition key may not be empty.
                return Err(QueryError::invalid("Key may not be empty"));
            }
            let distinct = distinct_values(values, &column.name)?;
            keys = extend_product(
                &keys,
                distinct.iter().map(std::slice::from_ref),
                "partition",
            )?;
            sizes.push(keys.len());
        }
        if self.per_column[..table.partition_key_count]
            .iter()
            .any(|r| r.is_in)
        {
            self.partition_in_sizes = sizes;
        }
        // IN values come back in key order (Cassandra keeps them in a sorted
        // set), not in the order written.
        keys.sort_by(|a, b| {
            for (column, (x, y)) in table.partition_key().iter().zip(a.iter().zip(b)) {
                let o = rocksandra_data::value::compare(&column.ty, x, y);
                if o != Ordering::Equal {
                    return o;
                }
            }
            Ordering::Equal
        });
        Ok(keys)
    }
}

/// A multi-column EQ or IN on clustering positions `start..start + width`.
struct MultiEq {
    start: usize,
    width: usize,
    tuples: Vec<Vec<Vec<u8>>>,
    is_in: bool,
    /// Whether a multi-column slice came before it in the WHERE clause.
    after_slice: bool,
    /// Whether it came before a single-column slice in the WHERE clause.
    before_single_slice: bool,
}

/// A multi-column slice on clustering columns from position `start`.
struct MultiSlice {
    start: usize,
    lower: Option<(Vec<Vec<u8>>, bool)>,
    upper: Option<(Vec<Vec<u8>>, bool)>,
    /// Whether it came before a single-column slice in the WHERE clause.
    before_single_slice: bool,
}

impl MultiSlice {
    /// The clustering columns its bounds cover.
    fn width(&self) -> usize {
        [&self.lower, &self.upper]
            .iter()
            .filter_map(|b| b.as_ref().map(|(values, _)| values.len()))
            .max()
            .unwrap_or(0)
    }
}

/// What the clustering restrictions select in each partition.
struct ClusteringSelection {
    slices: Vec<Slice>,
    exact: bool,
    restricted: bool,
    error: Option<QueryError>,
    /// `Restrictions::clustering_gap`.
    gap: bool,
    /// `Restrictions::filters_after_multi_slice`.
    filters_after_multi_slice: bool,
    tuple_filters: Vec<TupleFilter>,
    /// `Restrictions::clustering_in_sizes`.
    in_sizes: Vec<usize>,
}

/// The clustering slices of single- and multi-column restrictions, walked
/// in clustering order: equalities (single values, IN lists, tuples)
/// extend the prefixes, the first slice (single- or multi-column) ends
/// them; a restriction after a gap is only usable as a filter.
fn clustering_selection(
    table: &Table,
    per_column: &[ColumnRestriction],
    multi_eqs: &[MultiEq],
    multi_slice: Option<MultiSlice>,
    filters: &mut Vec<Filter>,
    needs_filtering: &mut bool,
) -> Result<ClusteringSelection> {
    let pk_count = table.partition_key_count;
    let ck_count = table.clustering_count;
    check_multi_overlaps(table, per_column, multi_eqs, multi_slice.as_ref())?;
    let mut selection = ClusteringSelection {
        slices: vec![Slice::all()],
        exact: ck_count == 0,
        restricted: false,
        error: None,
        gap: false,
        filters_after_multi_slice: false,
        tuple_filters: Vec::new(),
        in_sizes: Vec::new(),
    };
    let walk = ClusteringWalk {
        table,
        per_column,
        multi_eqs,
        multi_slice: multi_slice.as_ref(),
    };
    let PrefixWalk {
        mut prefixes,
        slice,
        reached_multi_slice,
        in_sizes,
    } = walk.run(&mut selection, filters, needs_filtering)?;
    if !selection.restricted {
        return Ok(selection);
    }
    if !multi_eqs.is_empty() {
        prefixes.sort_by(|a, b| compare_prefix(table, a, b));
        // Equal values of other forms (decimals `1.5`, `1.50`) select one row.
        prefixes.dedup_by(|a, b| compare_prefix(table, a, b) == Ordering::Equal);
    }
    let eq_len = prefixes.first().map(Vec::len).unwrap_or(0);
    // An empty IN selects exactly nothing.
    selection.exact =
        prefixes.is_empty() || (slice.is_none() && !reached_multi_slice && eq_len == ck_count);
    if selection.exact {
        selection.in_sizes = in_sizes;
    }
    selection.slices = match (multi_slice, reached_multi_slice) {
        (Some(m), true) => {
            // Single-column bounds beside a multi-column slice narrow it
            // further; after it, they can only filter.
            for (i, r) in per_column
                .iter()
                .enumerate()
                .take(pk_count + ck_count)
                .skip(pk_count + m.start)
            {
                let after = i >= pk_count + m.start + m.width();
                if after && r.is_restricted() {
                    let name = &table.columns[i].name;
                    let first = &table.columns[pk_count + m.start].name;
                    selection.error.get_or_insert(QueryError::invalid(format!(
                        "Clustering column \"{name}\" cannot be restricted (preceding column \"{first}\" is restricted by a non-EQ relation)"
                    )));
                    selection.filters_after_multi_slice = true;
                    *needs_filtering = true;
                }
                filters.extend(column_filters(i, r));
            }
            multi_slice_slices(table, prefixes, m, &mut selection.tuple_filters)
        }
        _ => prefixes
            .into_iter()
            .map(|prefix| single_slice(table, prefix, slice.as_ref()))
            .collect(),
    };
    Ok(selection)
}

/// The clustering restrictions of one statement, walked column by column.
struct ClusteringWalk<'a> {
    table: &'a Table,
    per_column: &'a [ColumnRestriction],
    multi_eqs: &'a [MultiEq],
    multi_slice: Option<&'a MultiSlice>,
}

/// What the walk found: the equality prefixes, the single-column slice after
/// them, and whether a multi-column slice starts where they stop.
struct PrefixWalk {
    prefixes: Vec<Vec<Vec<u8>>>,
    slice: Option<(SliceSide, SliceSide)>,
    reached_multi_slice: bool,
    /// With an IN among the equalities, the prefixes after each of them.
    in_sizes: Vec<usize>,
}

impl ClusteringWalk<'_> {
    /// Walks the clustering columns in order: equalities and INs extend the
    /// prefixes, a slice ends them, and a restriction after a gap can only
    /// filter (recorded in `selection.error` for a SELECT without ALLOW
    /// FILTERING).
    fn run(
        &self,
        selection: &mut ClusteringSelection,
        filters: &mut Vec<Filter>,
        needs_filtering: &mut bool,
    ) -> Result<PrefixWalk> {
        let table = self.table;
        let pk_count = table.partition_key_count;
        let mut walk = PrefixWalk {
            prefixes: vec![Vec::new()],
            slice: None,
            reached_multi_slice: false,
            in_sizes: Vec::new(),
        };
        let mut has_in = false;
        let mut stopped_at: Option<usize> = None;
        let mut j = 0;
        while j < table.clustering_count {
            let multi_eq = self.multi_eqs.iter().find(|m| m.start == j);
            let multi_slice_here = self.multi_slice.is_some_and(|m| m.start == j);
            let r = &self.per_column[pk_count + j];
            let restricted = multi_eq.is_some()
                || multi_slice_here
                || r.values.is_some()
                || r.lower.is_some()
                || r.upper.is_some();
            if !restricted {
                stopped_at.get_or_insert(j);
                j += 1;
                continue;
            }
            if let Some(at) = stopped_at {
                let multi_first = multi_eq.is_some_and(|m| m.before_single_slice)
                    || (multi_slice_here
                        && self.multi_slice.is_some_and(|m| m.before_single_slice));
                if multi_first && walk.slice.is_some() {
                    return Err(primary_key_after_slice(table, j, at));
                }
                let error = gap_error(table, j, at, walk.slice.is_some());
                if multi_eq.is_some() || multi_slice_here {
                    return Err(error);
                }
                // Usable only as a filter (with ALLOW FILTERING in a SELECT).
                if selection.error.is_none() {
                    selection.gap = walk.slice.is_none();
                }
                selection.error.get_or_insert(error);
                *needs_filtering = true;
                filters.extend(column_filters(pk_count + j, r));
                j += 1;
                continue;
            }
            selection.restricted = true;
            if let Some(m) = multi_eq {
                let tuples = m.tuples.iter().map(Vec::as_slice);
                walk.prefixes = extend_product(&walk.prefixes, tuples, "clustering")?;
                walk.in_sizes.push(walk.prefixes.len());
                has_in |= m.is_in;
                j += m.width;
                continue;
            }
            if multi_slice_here {
                walk.reached_multi_slice = true;
                break;
            }
            match &r.values {
                Some(values) => {
                    walk.prefixes = self.extend_in(&walk.prefixes, j, values)?;
                    walk.in_sizes.push(walk.prefixes.len());
                    has_in |= r.is_in;
                }
                None => {
                    walk.slice = Some((r.lower.clone(), r.upper.clone()));
                    stopped_at = Some(j + 1);
                }
            }
            j += 1;
        }
        if !has_in {
            walk.in_sizes.clear();
        }
        Ok(walk)
    }

    /// The prefixes extended by the distinct values of clustering column
    /// `j`'s equality or IN, in the column's order; equal values of other
    /// forms (decimals `1.5`, `1.50`) count once, as in Cassandra's sorted
    /// set of clusterings.
    fn extend_in(
        &self,
        prefixes: &[Vec<Vec<u8>>],
        j: usize,
        values: &[Option<Vec<u8>>],
    ) -> Result<Vec<Vec<Vec<u8>>>> {
        let column = &self.table.columns[self.table.partition_key_count + j];
        let mut distinct = distinct_values(values, &column.name)?;
        distinct.sort_by(|a, b| {
            let o = rocksandra_data::value::compare(&column.ty, a, b);
            if column.descending {
                o.reverse()
            } else {
                o
            }
        });
        distinct
            .dedup_by(|a, b| rocksandra_data::value::compare(&column.ty, a, b) == Ordering::Equal);
        extend_product(
            prefixes,
            distinct.iter().map(std::slice::from_ref),
            "clustering",
        )
    }
}

/// The error for a clustering column restricted after an unrestricted one
/// (or after a slice).
fn gap_error(table: &Table, j: usize, stopped_at: usize, after_slice: bool) -> QueryError {
    let pk_count = table.partition_key_count;
    let name = &table.columns[pk_count + j].name;
    // After a slice, the column of the slice (`stopped_at` is the one after
    // it); otherwise the first unrestricted column before `j`.
    let previous_index = if after_slice {
        stopped_at.saturating_sub(1)
    } else {
        stopped_at.min(j.saturating_sub(1))
    };
    let previous = &table.columns[pk_count + previous_index].name;
    if after_slice {
        QueryError::invalid(format!(
            "Clustering column \"{name}\" cannot be restricted (preceding column \"{previous}\" is restricted by a non-EQ relation)"
        ))
    } else {
        QueryError::invalid(format!(
            "PRIMARY KEY column \"{name}\" cannot be restricted as preceding column \"{previous}\" is not restricted"
        ))
    }
}

/// `gap_error` after a slice, as Cassandra words it for a multi-column
/// restriction that came before the slice (on the column before it).
fn primary_key_after_slice(table: &Table, j: usize, stopped_at: usize) -> QueryError {
    let pk_count = table.partition_key_count;
    let name = &table.columns[pk_count + j].name;
    let previous = &table.columns[pk_count + stopped_at.saturating_sub(1)].name;
    QueryError::invalid(format!(
        "PRIMARY KEY column \"{name}\" cannot be restricted (preceding column \"{previous}\" is restricted by a non-EQ relation)"
    ))
}

/// A column in a multi-column equality may not be restricted again.
fn check_multi_overlaps(
    table: &Table,
    per_column: &[ColumnRestriction],
    multi_eqs: &[MultiEq],
    multi_slice: Option<&MultiSlice>,
) -> Result<()> {
    let pk_count = table.partition_key_count;
    for (n, m) in multi_eqs.iter().enumerate() {
        for j in m.start..m.start + m.width {
            let r = &per_column[pk_count + j];
            let single = r.values.is_some() || r.lower.is_some() || r.upper.is_some();
            if single {
                return Err(restricted_more_than_once(
                    &table.columns[pk_count + j].name,
                    false,
                ));
            }
            // Cassandra names a multi-column restriction's columns last first.
            let columns = || {
                let names: Vec<&str> = (m.start..m.start + m.width)
                    .rev()
                    .map(|c| table.columns[pk_count + c].name.as_str())
                    .collect();
                names.join(" ,")
            };
            if m.after_slice && multi_slice.is_some_and(|s| s.start == j) {
                return Err(equality_and_inequality(&columns()));
            }
            // A later multi-column equality on the column merges into
            // this one, which names the columns they share and its own kind.
            let later = multi_eqs[n + 1..]
                .iter()
                .find(|o| (o.start..o.start + o.width).contains(&j));
            if let Some(o) = later {
                let common: Vec<&str> = (m.start.max(o.start)
                    ..(m.start + m.width).min(o.start + o.width))
                    .rev()
                    .map(|c| table.columns[pk_count + c].name.as_str())
                    .collect();
                return Err(restricted_more_than_once(&common.join(" ,"), m.is_in));
            }
            if multi_slice.is_some_and(|s| s.start == j) {
                return Err(restricted_more_than_once(&columns(), false));
            }
        }
    }
    Ok(())
}

/// A slice bound: the equality prefix followed by the bound's values, or
/// the prefix itself (inclusive) on a side without a bound.
fn bound_after(prefix: &[Vec<u8>], side: Option<(&[Vec<u8>], bool)>) -> ClusteringBound {
    match side {
        Some((values, inclusive)) => {
            ClusteringBound::around(prefix.iter().chain(values).cloned().collect(), inclusive)
        }
        None => ClusteringBound::around(prefix.to_vec(), true),
    }
}

/// The slice of one equality prefix, bounded by a single-column slice on
/// the next column if there is one.
fn single_slice(
    table: &Table,
    prefix: Vec<Vec<u8>>,
    slice: Option<&(SliceSide, SliceSide)>,
) -> Slice {
    let Some((lower, upper)) = slice else {
        return Slice::prefix(prefix);
    };
    let bound = |side: &SliceSide| {
        bound_after(
            &prefix,
            side.as_ref()
                .map(|(v, inclusive)| (std::slice::from_ref(v), *inclusive)),
        )
    };
    // A slice's bounds are given in clustering order; a DESC column swaps
    // which side is the start.
    let descending = table.columns[table.partition_key_count + prefix.len()].descending;
    if descending {
        Slice {
            start: bound(upper),
            end: bound(lower),
        }
    } else {
        Slice {
            start: bound(lower),
            end: bound(upper),
        }
    }
}

/// The slices of a multi-column slice after each equality prefix. Tuple
/// bounds compare by value, which is not the clustering order when one of
/// their columns is DESC: then each prefix is read whole and the bounds
/// are checked on each row.
fn multi_slice_slices(
    table: &Table,
    prefixes: Vec<Vec<Vec<u8>>>,
    m: MultiSlice,
    tuple_filters: &mut Vec<TupleFilter>,
) -> Vec<Slice> {
    let first = table.partition_key_count + m.start;
    let mixed_order = table.columns[first..first + m.width()]
        .iter()
        .any(|c| c.descending);
    if mixed_order {
        for (bound, lower) in [(&m.lower, true), (&m.upper, false)] {
            if let Some((values, inclusive)) = bound {
                tuple_filters.push(TupleFilter {
                    columns: (first..first + values.len()).collect(),
                    lower,
                    inclusive: *inclusive,
                    values: values.clone(),
                });
            }
        }
        return prefixes.into_iter().map(Slice::prefix).collect();
    }
    let bound = |prefix: &[Vec<u8>], side: &Option<(Vec<Vec<u8>>, bool)>| {
        bound_after(
            prefix,
            side.as_ref()
                .map(|(values, inclusive)| (values.as_slice(), *inclusive)),
        )
    };
    prefixes
        .iter()
        .map(|prefix| Slice {
            start: bound(prefix, &m.lower),
            end: bound(prefix, &m.upper),
        })
        .collect()
}

/// The filters equivalent to one column's restriction.
fn column_filters(column: usize, r: &ColumnRestriction) -> Vec<Filter> {
    let mut out = Vec::new();
    if let Some(values) = &r.values {
        out.push(Filter {
            column,
            op: if values.len() == 1 {
                Operator::Eq
            } else {
                Operator::In
            },
            values: values.clone(),
            element_key: None,
        });
    }
    if let Some((v, inclusive)) = &r.lower {
        out.push(Filter {
            column,
            op: if *inclusive {
                Operator::Gte
            } else {
                Operator::Gt
            },
            values: vec![Some(v.clone())],
            element_key: None,
        });
    }
    if let Some((v, inclusive)) = &r.upper {
        out.push(Filter {
            column,
            op: if *inclusive {
                Operator::Lte
            } else {
                Operator::Lt
            },
            values: vec![Some(v.clone())],
            element_key: None,
        });
    }
    out
}

/// Compares clustering prefixes in clustering order.
pub fn compare_prefix(table: &Table, a: &[Vec<u8>], b: &[Vec<u8>]) -> Ordering {
    for (j, column) in table.clustering().iter().enumerate() {
        match (a.get(j), b.get(j)) {
            (Some(x), Some(y)) => {
                let o = rocksandra_data::value::compare(&column.ty, x, y);
                let o = if column.descending { o.reverse() } else { o };
                if o != Ordering::Equal {
                    return o;
                }
            }
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
        }
    }
    Ordering::Equal
}

/// Where a clustering lies relative to one end of a slice, in clustering
/// order: `Less` before it, `Greater` after it (never `Equal`), as the
/// storage key layout orders them. A row whose clustering is a prefix (a
/// compact table's) sorts before the rows extending it.
pub fn compare_to_bound(
    table: &Table,
    clustering: &[Vec<u8>],
    bound: &ClusteringBound,
    is_start: bool,
) -> Ordering {
    let n = bound.prefix.len().min(clustering.len());
    match compare_prefix(table, &clustering[..n], &bound.prefix) {
        Ordering::Equal => {
            // The bound sits before the rows it names, or after them.
            let before = bound.inclusive == is_start;
            let extends = clustering.len() > bound.prefix.len();
            if before || (bound.exact_row && extends) {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
        o => o,
    }
}

/// Whether a row passes every filter and tuple bound.
pub fn row_passes(table: &Table, row: &CqlRow, restrictions: &Restrictions) -> Result<bool> {
    if !restrictions
        .tuple_filters
        .iter()
        .all(|t| t.matches(table, row))
    {
        return Ok(false);
    }
    row_matches(table, row, &restrictions.filters)
}

/// Whether a row passes every filter.
pub fn row_matches(table: &Table, row: &CqlRow, filters: &[Filter]) -> Result<bool> {
    for f in filters {
        let column = &table.columns[f.column];
        let Some(actual) = &row.columns[f.column].value else {
            return Ok(false);
        };
        let ty = &column.ty;
        if actual.is_empty()
            && f.element_key.is_none()
            && crate::index::sai_skips_empty(table, f.column, f.op)
        {
            return Ok(false);
        }
        let analyzer =
            crate::index::analyzer_on(table, f.column).filter(|_| f.element_key.is_none());
        let matched = match (f.op, analyzer) {
            (Operator::Eq, Some(analyzer)) => f
                .values
                .first()
                .and_then(Option::as_ref)
                .is_some_and(|expected| analyzer.equal(actual, expected)),
            (op, _) => match_relation(f, op, ty, actual)?,
        };
        if !matched {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Whether a row's value of a filter's column satisfies the filter by the
/// column type's comparison.
fn match_relation(f: &Filter, op: Operator, ty: &CqlType, actual: &[u8]) -> Result<bool> {
    Ok({
        match op {
            Operator::Eq
            | Operator::Neq
            | Operator::Lt
            | Operator::Lte
            | Operator::Gt
            | Operator::Gte => comparison_matches(f, ty, actual)?,
            Operator::In => f
                .values
                .iter()
                .flatten()
                .any(|v| rocksandra_data::value::compare(ty, actual, v) == Ordering::Equal),
            Operator::Contains | Operator::ContainsKey => contains_matches(f, ty, actual)?,
            Operator::Like => {
                let Some(Some(pattern)) = f.values.first() else {
                    return Ok(false);
                };
                like(actual, pattern)
            }
        }
    })
}

/// `=`, `!=`, `<`, `<=`, `>`, `>=` on a value, or on a map entry's value
/// (`m[key] = v`); false when either side is missing.
fn comparison_matches(f: &Filter, ty: &CqlType, actual: &[u8]) -> Result<bool> {
    let (value_type, actual_value): (CqlType, Option<Vec<u8>>) = match &f.element_key {
        Some(key) => {
            let CqlType::Map(kt, vt) = ty.unfrozen() else {
                return Ok(false);
            };
            let found = match Value::deserialize(ty, actual)? {
                Value::Map(entries) => entries
                    .into_iter()
                    .find(|(k, _)| {
                        rocksandra_data::value::compare(kt, &k.to_bytes(), key) == Ordering::Equal
                    })
                    .map(|(_, v)| v.to_bytes()),
                _ => None,
            };
            ((**vt).clone(), found)
        }
        None => (ty.clone(), Some(actual.to_vec())),
    };
    let Some(actual_value) = actual_value else {
        return Ok(false);
    };
    let Some(Some(expected)) = f.values.first() else {
        return Ok(false);
    };
    let o = rocksandra_data::value::compare(&value_type, &actual_value, expected);
    Ok(match f.op {
        Operator::Eq => o == Ordering::Equal,
        Operator::Neq => o != Ordering::Equal,
        Operator::Lt => o == Ordering::Less,
        Operator::Lte => o != Ordering::Greater,
        Operator::Gt => o == Ordering::Greater,
        _ => o != Ordering::Less,
    })
}

/// CONTAINS on a collection's elements (a map's values), or CONTAINS KEY on
/// a map's keys.
fn contains_matches(f: &Filter, ty: &CqlType, actual: &[u8]) -> Result<bool> {
    let Some(Some(needle)) = f.values.first() else {
        return Ok(false);
    };
    let value = Value::deserialize(ty, actual)?;
    let (elem_ty, items): (CqlType, Vec<Vec<u8>>) = match (ty.unfrozen(), value) {
        (CqlType::List(e), Value::List(v)) | (CqlType::Set(e), Value::Set(v)) => {
            ((**e).clone(), v.iter().map(Value::to_bytes).collect())
        }
        (CqlType::Map(k, v), Value::Map(entries)) => {
            if f.op == Operator::ContainsKey {
                (
                    (**k).clone(),
                    entries.iter().map(|(k, _)| k.to_bytes()).collect(),
                )
            } else {
                (
                    (**v).clone(),
                    entries.iter().map(|(_, v)| v.to_bytes()).collect(),
                )
            }
        }
        _ => return Ok(false),
    };
    Ok(items
        .iter()
        .any(|i| rocksandra_data::value::compare(&elem_ty, i, needle) == Ordering::Equal))
}

/// LIKE with `%` at the start and/or end (SASI's prefix/suffix/contains).
fn like(value: &[u8], pattern: &[u8]) -> bool {
    let starts = pattern.first() == Some(&b'%');
    let ends = pattern.len() > 1 && pattern.last() == Some(&b'%');
    let core = &pattern[usize::from(starts)..pattern.len() - usize::from(ends)];
    match (starts, ends) {
        (true, true) => value.windows(core.len().max(1)).any(|w| w == core) || core.is_empty(),
        (true, false) => value.ends_with(core),
        (false, true) => value.starts_with(core),
        (false, false) => value == core,
    }
}

/// The distinct values of an `=` or `IN` restriction, in the order written;
/// a null is refused.
fn distinct_values(values: &[Option<Vec<u8>>], column: &str) -> Result<Vec<Vec<u8>>> {
    let mut distinct: Vec<Vec<u8>> = Vec::new();
    for v in values {
        let Some(v) = v else {
            return Err(QueryError::invalid(format!(
                "Invalid null value in condition for column {column}"
            )));
        };
        if !distinct.contains(v) {
            distinct.push(v.clone());
        }
    }
    Ok(distinct)
}

/// Every prefix extended with every value (the cartesian product of IN
/// restrictions), refused beyond `IN_PRODUCT_MAX` keys.
/// Each prefix extended by each extension: one value of a single-column
/// EQ or IN, or one tuple of a multi-column one.
fn extend_product<'a>(
    prefixes: &[Vec<Vec<u8>>],
    extensions: impl Iterator<Item = &'a [Vec<u8>]> + Clone,
    key: &str,
) -> Result<Vec<Vec<Vec<u8>>>> {
    let mut next = Vec::new();
    for prefix in prefixes {
        for extension in extensions.clone() {
            let mut k = prefix.clone();
            k.extend_from_slice(extension);
            next.push(k);
        }
    }
    if next.len() > IN_PRODUCT_MAX {
        return Err(QueryError::invalid(format!(
            "The cartesian product of the IN relations on the {key} key is larger than {IN_PRODUCT_MAX}"
        )));
    }
    Ok(next)
}

/// Every relation as a per-row check, none turned into partitions or
/// slices (a materialized view's WHERE clause, applied to each base row).
pub fn row_filters(
    table: &Table,
    relations: &[Relation],
    ctx: &EvalContext<'_>,
) -> Result<(Vec<Filter>, Vec<TupleFilter>)> {
    let mut filters = Vec::new();
    let mut tuples = Vec::new();
    for relation in relations {
        let Relation::Compare { lhs, op, rhs } = relation else {
            continue;
        };
        match lhs {
            RelationLhs::Column(name) => {
                let column = column_index(table, name.as_str())?;
                let ty = &table.columns[column].ty;
                let values = if *op == Operator::In {
                    in_values(rhs, ty, name.as_str(), ctx)?
                } else {
                    vec![term_value(
                        evaluate(rhs, ty, name.as_str(), ctx)?,
                        name.as_str(),
                    )?]
                };
                filters.push(Filter {
                    column,
                    op: *op,
                    values,
                    element_key: None,
                });
            }
            RelationLhs::Columns(names) => {
                let Expr::Tuple(items) = rhs else {
                    return Err(QueryError::invalid(format!(
                        "Unsupported restriction {relation} in a materialized view"
                    )));
                };
                let mut columns = Vec::new();
                let mut values = Vec::new();
                for (name, item) in names.iter().zip(items) {
                    let column = column_index(table, name.as_str())?;
                    let ty = &table.columns[column].ty;
                    match term_value(evaluate(item, ty, name.as_str(), ctx)?, name.as_str())? {
                        Some(v) => values.push(v),
                        None => {
                            return Err(QueryError::invalid(format!(
                                "Invalid null value in condition for column {}",
                                name.as_str()
                            )))
                        }
                    }
                    columns.push(column);
                }
                match op {
                    Operator::Eq => {
                        for (column, value) in columns.into_iter().zip(values) {
                            filters.push(Filter {
                                column,
                                op: Operator::Eq,
                                values: vec![Some(value)],
                                element_key: None,
                            });
                        }
                    }
                    Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte => {
                        tuples.push(TupleFilter {
                            columns,
                            lower: matches!(op, Operator::Gt | Operator::Gte),
                            inclusive: matches!(op, Operator::Lte | Operator::Gte),
                            values,
                        })
                    }
                    _ => {
                        return Err(QueryError::invalid(format!(
                            "Unsupported restriction {relation} in a materialized view"
                        )))
                    }
                }
            }
            RelationLhs::Element { .. } | RelationLhs::Token(_) => {
                return Err(QueryError::invalid(format!(
                    "Unsupported restriction {relation} in a materialized view"
                )))
            }
        }
    }
    Ok((filters, tuples))
}
