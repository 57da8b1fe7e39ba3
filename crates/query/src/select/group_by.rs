//! GROUP BY: which primary key columns group rows, by Cassandra 5.0's
//! rules and messages (`SelectStatement.getAggregationSpecFactory`), and a
//! monotonic function of a clustering column as its last element
//! (`floor(ts, 1h)`, CASSANDRA-11871), whose value groups the rows.
//!
//! Rows come in clustering order, so a group is a run of consecutive rows
//! with equal grouping values: the columns compared as stored, then the
//! function's value (the function being monotonic, equal values are
//! consecutive). Cassandra computes that value on the replicas, so its
//! failures (`floor` refusing a duration or a start time) come back as a
//! ReadFailure naming the node, as Cassandra's coordinator reports them.

use std::net::IpAddr;

use rocksandra_cql::ast::{Expr, Relation, Select};
use rocksandra_wire::Consistency;

use super::{eval_sel, literal_label, plan_selector, sel_columns, Sel};
use crate::error::{QueryError, Result};
use crate::rows::CqlRow;
use crate::schema::{ColumnKind, Table};
use crate::term::EvalContext;

/// How a GROUP BY query groups its rows.
#[derive(Debug)]
pub(super) struct GroupBy {
    /// Primary key columns compared as stored, in key order (the columns
    /// restricted by `=` that GROUP BY leaves out are not here).
    pub columns: Vec<usize>,
    /// The last element when it is a function of a clustering column.
    pub function: Option<Sel>,
    /// The node and consistency level a failed function is reported with
    /// (known once there is a function).
    replica: Option<(IpAddr, Consistency)>,
}

impl GroupBy {
    /// Whether the query has a GROUP BY clause.
    pub fn is_grouped(&self) -> bool {
        !self.columns.is_empty() || self.function.is_some()
    }

    /// The function's value for `row` (None without a function, and for
    /// a partition's static-only row, as Cassandra's `SelectorGroupMaker`).
    pub fn function_value(&self, table: &Table, row: &CqlRow) -> Result<Option<Vec<u8>>> {
        match &self.function {
            Some(sel) if row.clustering.is_some() => {
                eval_sel(table, sel, row).map_err(|e| self.replica_failure(e))
            }
            _ => Ok(None),
        }
    }

    /// Cassandra's coordinator's report of a replica that failed the read.
    fn replica_failure(&self, e: QueryError) -> QueryError {
        let Some((node, consistency)) = self.replica else {
            return e;
        };
        tracing::error!("GROUP BY function failed the read: {e}");
        QueryError::read_failure(
            consistency,
            (0, 1),
            vec![(node, crate::error::UNKNOWN_FAILURE)],
        )
    }

    /// Whether `row` (its function value `value`) is in the group of
    /// `first` (its function value `first_value`).
    pub fn same_group(
        &self,
        (first, first_value): (&CqlRow, &Option<Vec<u8>>),
        (row, value): (&CqlRow, &Option<Vec<u8>>),
    ) -> bool {
        first_value == value
            && self
                .columns
                .iter()
                .all(|c| row.columns[*c].value == first.columns[*c].value)
    }
}

/// One element of the GROUP BY clause once checked: a primary key column,
/// or a function of a clustering column.
enum Element {
    Column(usize),
    Function { column: usize, sel: Box<Sel> },
}

/// Checks the GROUP BY clause as Cassandra does and plans its grouping:
/// primary key columns in key order from the whole partition key (those
/// restricted by `=` may be left out), the last one possibly in a function.
pub(super) fn plan(
    table: &Table,
    select: &Select,
    ctx: &EvalContext<'_>,
    replica: &dyn Fn() -> (IpAddr, Consistency),
) -> Result<GroupBy> {
    let mut group = GroupBy {
        columns: Vec::new(),
        function: None,
        replica: None,
    };
    let mut next_key_column = 0;
    let mut clustering_grouped = false;
    for expr in &select.group_by {
        let column = match element(table, expr, ctx)? {
            Element::Column(i) => {
                if group.function.is_some() {
                    return Err(QueryError::invalid(
                        "Functions are only supported on the last element of the GROUP BY clause",
                    ));
                }
                group.columns.push(i);
                i
            }
            Element::Function { column, sel } => {
                // A function followed by another: Cassandra groups by the
                // last one, and by the earlier one's column as stored.
                if let Some(earlier) = group.function.replace(*sel) {
                    sel_columns(table, &earlier, &mut group.columns);
                }
                group.replica = Some(replica());
                column
            }
        };
        next_key_column = key_order(table, select, next_key_column, column)?;
        clustering_grouped |= table.columns[column].kind == ColumnKind::Clustering;
    }
    if group.is_grouped() && next_key_column < table.partition_key_count {
        return Err(QueryError::invalid(
            "Group by is not supported on only a part of the partition key",
        ));
    }
    if clustering_grouped && select.distinct {
        return Err(QueryError::invalid(
            "Grouping on clustering columns is not allowed for SELECT DISTINCT queries",
        ));
    }
    if let Some(sel) = &group.function {
        check_monotonic(sel)?;
    }
    Ok(group)
}

/// The key column after `column` once `column` is checked to come next in
/// the primary key (key columns before it restricted by `=` may be skipped).
fn key_order(table: &Table, select: &Select, next: usize, column: usize) -> Result<usize> {
    let mut next = next;
    while next < column && restricted_by_eq(table, select, next) {
        next += 1;
    }
    if next != column || !table.columns[column].kind.is_primary_key() {
        return Err(QueryError::invalid(
            "Group by currently only support groups of columns following their declared order in the PRIMARY KEY",
        ));
    }
    Ok(next + 1)
}

fn restricted_by_eq(table: &Table, select: &Select, column: usize) -> bool {
    use rocksandra_cql::ast::{Operator, RelationLhs};
    select.where_clause.iter().any(|r| {
        matches!(r, Relation::Compare {
            lhs: RelationLhs::Column(c),
            op: Operator::Eq,
            ..
        } if table.column_index(c.as_str()) == Some(column))
    })
}

/// One GROUP BY element: a primary key column, or a scalar function of
/// exactly one clustering column.
fn element(table: &Table, expr: &Expr, ctx: &EvalContext<'_>) -> Result<Element> {
    let Expr::Function { name, .. } = expr else {
        let column = match expr {
            Expr::Column(c) => table.column_index(c.as_str()),
            _ => None,
        };
        let Some(i) = column else {
            return Err(QueryError::undefined_column(
                &literal_label(expr),
                &table.keyspace,
                &table.name,
            ));
        };
        if !table.columns[i].kind.is_primary_key() {
            return Err(QueryError::invalid(format!(
                "Group by is currently only supported on the columns of the PRIMARY KEY, got {}",
                table.columns[i].name
            )));
        }
        return Ok(Element::Column(i));
    };
    let (sel, _, _) = plan_selector(table, expr, ctx)?;
    if matches!(sel, Sel::Aggregate { .. } | Sel::CountStar) {
        return Err(QueryError::invalid(format!(
            "Aggregate functions are not supported within the GROUP BY clause, got: system.{}",
            name.name.as_str()
        )));
    }
    let mut columns = Vec::new();
    sel_columns(table, &sel, &mut columns);
    let column = match columns.as_slice() {
        [] => {
            return Err(QueryError::invalid(
                "GROUP BY functions must have one clustering column name as parameter",
            ))
        }
        [column] => *column,
        more => {
            let names: Vec<&str> = more
                .iter()
                .map(|c| table.columns[*c].name.as_str())
                .collect();
            return Err(QueryError::invalid(format!(
                "GROUP BY functions accept only one clustering column as parameter, got: {}",
                names.join(",")
            )));
        }
    };
    if table.columns[column].kind != ColumnKind::Clustering {
        return Err(QueryError::invalid(format!(
            "Group by functions are only supported on clustering columns, got {}",
            table.columns[column].name
        )));
    }
    Ok(Element::Function {
        column,
        sel: Box::new(sel),
    })
}

/// Cassandra's `Selector.validateForGroupBy`: columns, and functions
/// monotonic in their arguments from the row (given the constant ones).
fn check_monotonic(sel: &Sel) -> Result<()> {
    match sel {
        Sel::Column(_) => Ok(()),
        Sel::Function { function, args, .. } => {
            let constant: Vec<bool> = args
                .iter()
                .map(|a| matches!(a, Sel::Constant(_)))
                .collect();
            if !function.is_monotonic(&constant) {
                let shown = if constant.contains(&true) {
                    function.partial_signature(&constant)
                } else {
                    function.signature()
                };
                return Err(QueryError::invalid(format!(
                    "Only monotonic functions are supported in the GROUP BY clause. Got: {shown} "
                )));
            }
            args.iter()
                .filter(|a| !matches!(a, Sel::Constant(_)))
                .try_for_each(check_monotonic)
        }
        _ => Err(QueryError::invalid(
            "Only column names and monotonic scalar functions are supported in the GROUP BY clause.",
        )),
    }
}
