//! Which of a query's relations the table's indexes serve (Cassandra's
//! index registry deciding `usesSecondaryIndexing` and whether ALLOW
//! FILTERING is needed), from the restrictions `restrict` collected. Apart
//! from the index definitions (`index`), so that `restrict` may ask those
//! (an index's analyzer) without a loop back.

use rocksandra_cql::ast::{Expr, Operator, Relation, RelationLhs};
use rocksandra_data::types::CqlType;
use rocksandra_data::NativeType;

use super::{family, target, IndexFamily, TargetKind};
use crate::restrict::{PartitionSelection, Restrictions};
use crate::schema::{ColumnKind, Table};

/// How a query stands with the table's indexes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IndexUse {
    /// Some relation that needs filtering has an index that supports it
    /// (Cassandra's `usesSecondaryIndexing`): ORDER BY and a partition key
    /// IN are then refused.
    pub uses_index: bool,
    /// Every relation that would need filtering is served by indexes, so
    /// the query needs no ALLOW FILTERING.
    pub served: bool,
    /// A clustering column relation has a supporting index: clustering
    /// relations that are not a prefix then filter instead of failing.
    pub clustering_indexed: bool,
    /// Some single-column relation, needing filtering or not (a partition
    /// key given whole), has a supporting index: Cassandra's
    /// `hasQueriableIndex`, which lets clustering relations after an
    /// unrestricted column go to the index instead of being refused.
    pub queriable: bool,
}

/// Decides whether the relations that need filtering are served by indexes.
///
/// The relations counted are the ones Cassandra hands to its index
/// registry: every relation on a regular or static column, the partition key
/// relations when the partition key is not fully restricted by `=`/`IN`, and
/// the clustering relations when the partition key is not fully restricted
/// or they do not form a clustering prefix. They are served when each has a
/// supporting index and either there is only one (a legacy index serves one
/// relation) or all are served by SAI (which combines several).
pub fn classify(table: &Table, relations: &[Relation], restrictions: &Restrictions) -> IndexUse {
    let partition_open = matches!(restrictions.partition, PartitionSelection::Tokens { .. });
    let clustering_open = partition_open || restrictions.clustering_error.is_some();
    let mut counted = 0usize;
    let mut families: Vec<Option<IndexFamily>> = Vec::new();
    let mut clustering_indexed = false;
    let mut queriable = false;
    for relation in relations {
        let Relation::Compare { lhs, op, rhs } = relation else {
            continue;
        };
        // An IN of one value is an `=` to Cassandra.
        let op = match rhs {
            Expr::Tuple(values) if *op == Operator::In && values.len() == 1 => &Operator::Eq,
            _ => op,
        };
        let (name, element) = match lhs {
            RelationLhs::Column(name) => (name.as_str(), false),
            RelationLhs::Element { column, .. } => (column.as_str(), true),
            RelationLhs::Columns(names) => {
                let clustering = names.iter().any(|n| {
                    table
                        .column(n.as_str())
                        .is_some_and(|c| c.kind == ColumnKind::Clustering)
                });
                if clustering && clustering_open {
                    // `(c1, c2) = (...)` is served when SAI indexes each column.
                    let served = *op == Operator::Eq
                        && names.iter().all(|n| {
                            table.column(n.as_str()).is_some_and(|c| {
                                supporting_index(table, &c.name, &c.ty, Operator::Eq, false)
                                    == Some(IndexFamily::Sai)
                            })
                        });
                    clustering_indexed |= served;
                    counted += 1;
                    families.push(served.then_some(IndexFamily::Sai));
                }
                continue;
            }
            RelationLhs::Token(_) => continue,
        };
        let Some(column) = table.column(name) else {
            continue;
        };
        let family = supporting_index(table, &column.name, &column.ty, *op, element);
        queriable |= family.is_some();
        let counts = match column.kind {
            ColumnKind::PartitionKey => partition_open,
            ColumnKind::Clustering => clustering_open,
            _ => true,
        };
        if !counts {
            continue;
        }
        counted += 1;
        if family.is_some() && column.kind == ColumnKind::Clustering {
            clustering_indexed = true;
        }
        families.push(family);
    }
    let uses_index = families.iter().any(Option::is_some);
    let all_supported = counted > 0 && families.iter().all(Option::is_some);
    let served =
        all_supported && (counted == 1 || families.iter().all(|f| *f == Some(IndexFamily::Sai)));
    IndexUse {
        uses_index,
        served,
        clustering_indexed,
        queriable,
    }
}

/// The family of an index on `column` that supports `op` (`element`: the
/// relation is `m[key] = v`), if any. SAI is preferred when both exist.
fn supporting_index(
    table: &Table,
    column: &str,
    ty: &CqlType,
    op: Operator,
    element: bool,
) -> Option<IndexFamily> {
    let mut found = None;
    for index in &table.indexes {
        let (Some(family), Some((kind, target_column))) = (family(index), target(index)) else {
            continue;
        };
        if target_column != column || !supports(family, kind, ty, op, element) {
            continue;
        }
        if family == IndexFamily::Sai {
            return Some(family);
        }
        found = Some(family);
    }
    found
}

/// Whether an index of this family and target kind answers the operator.
fn supports(
    family: IndexFamily,
    kind: TargetKind,
    ty: &CqlType,
    op: Operator,
    element: bool,
) -> bool {
    if element {
        return kind == TargetKind::Entries && op == Operator::Eq;
    }
    let multi_cell = ty.is_multi_cell();
    match (kind, op) {
        (TargetKind::Simple, Operator::Eq) => !multi_cell,
        (TargetKind::Simple, Operator::Contains) => multi_cell,
        (TargetKind::Simple, Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte) => {
            family == IndexFamily::Sai && !multi_cell && sai_range_type(ty)
        }
        (TargetKind::Values, Operator::Contains) => true,
        (TargetKind::Keys, Operator::ContainsKey) => true,
        (TargetKind::Full, Operator::Eq) => true,
        _ => false,
    }
}

/// SAI answers ranges on numeric and other non-literal types; text, ascii,
/// boolean, uuid (`IndexTermType.EQ_ONLY_TYPES`) and frozen composite
/// values are equality-only.
fn sai_range_type(ty: &CqlType) -> bool {
    match ty {
        CqlType::Native(native) => !matches!(
            native,
            NativeType::Text
                | NativeType::Ascii
                | NativeType::Boolean
                | NativeType::Blob
                | NativeType::Uuid
        ),
        _ => false,
    }
}
