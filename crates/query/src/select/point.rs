//! Prepared reads of at most one row, planned once at PREPARE: `SELECT
//! <columns> FROM t WHERE <every primary key column> = ?`, the shape of a
//! key-value lookup (the seed's `emp` reads, user profiles). EXECUTE then
//! binds the key and reads, without planning the statement again.
//!
//! The fast path answers only what it is sure the general path
//! (`select::execute`) answers the same way; anything else (a changed
//! table, a table with column masks, a null, unset or invalid key value, a
//! page size of one, a paging state, named values) falls back to the general path, which also owns
//! every error message. `tests/executor.rs` runs both on the same
//! statements and compares the results.

use std::sync::Arc;

use bytes::Bytes;
use rocksandra_cql::ast::{
    Expr, Operator, ParsedStatement, Relation, RelationLhs, Select, Statement,
};
use rocksandra_storage::api::{PartitionKey, PartitionRead, Slice};
use rocksandra_wire::{ColumnSpec, ColumnsMetadata, Rows, RowsMetadata, Value};

use super::{plan, specs, Sel};
use crate::ctx::StatementCtx;
use crate::error::Result;
use crate::request::{Outcome, Request};
use crate::rows::{partition_key_bytes_owned, partition_rows_owned, CqlRow};
use crate::schema::{Schema, Table};
use crate::term::{evaluate, Term};

/// A SELECT of one row by its full primary key, compiled at PREPARE.
pub struct PointRead {
    /// The table as it was at PREPARE; a table changed since (any ALTER
    /// makes a new `Arc`) sends EXECUTE to the general path.
    table: Arc<Table>,
    /// The bind marker of each primary key column, in key order.
    key_binds: Vec<rocksandra_cql::ast::BindMarker>,
    /// The statement names no keyspace: the request's must be the table's.
    unqualified: bool,
    /// The column (index in `Table::columns`) of each selector: plain
    /// column selectors only.
    columns: Vec<usize>,
    specs: Arc<[ColumnSpec]>,
}

impl PointRead {
    /// The plan of `parsed` when it has the shape this path serves.
    pub(crate) fn compile(
        context: &StatementCtx<'_>,
        schema: &Schema,
        parsed: &ParsedStatement,
        session_ks: Option<&str>,
    ) -> Option<PointRead> {
        let Statement::Select(select) = &parsed.statement else {
            return None;
        };
        if !plain_shape(select) {
            return None;
        }
        let keyspace = crate::schema::keyspace_of(&select.table, session_ks).ok()?;
        if crate::schema::is_system_keyspace(keyspace) {
            return None;
        }
        let table = schema
            .lookup_table(keyspace, select.table.name.as_str())
            .ok()?;
        // Masked columns are read through the general path, which masks
        // them and checks a masked key's restriction (`masking`).
        if table.is_virtual || !table.masks.is_empty() {
            return None;
        }
        let key_binds = key_binds(table, &select.where_clause)?;
        let random = context.env.random.clone();
        let ctx = context.eval_context(schema, keyspace, &[], &*random);
        let outputs = plan(table, select, &ctx).ok()?;
        let columns = outputs
            .iter()
            .map(|o| match o.sel {
                Sel::Column(i) => Some(i),
                _ => None,
            })
            .collect::<Option<Vec<usize>>>()?;
        Some(PointRead {
            table: table.clone(),
            key_binds,
            unqualified: select.table.keyspace.is_none(),
            specs: specs(table, &outputs).into(),
            columns,
        })
    }

    /// Runs the read, or None to send the request to the general path.
    /// `values` are the request's, by marker index.
    pub(crate) fn execute(
        &self,
        context: &StatementCtx<'_>,
        request: &Request,
        values: &[Value],
    ) -> Option<Result<Outcome>> {
        // A page of one row carries a paging state in the general path.
        let simple_paging = request.paging_state.is_none() && request.page_size != Some(1);
        if !simple_paging || request.names.is_some() {
            return None;
        }
        // With `read_thresholds_enabled` the general path reports the reads.
        if context.read_thresholds().is_some() {
            return None;
        }
        if self.unqualified && request.keyspace.as_deref() != Some(self.table.keyspace.as_str()) {
            return None;
        }
        let schema = context.schema();
        let table = schema
            .lookup_table(&self.table.keyspace, &self.table.name)
            .ok()?;
        if !Arc::ptr_eq(table, &self.table) {
            return None;
        }
        let (partition, clustering) = self.bind_key(context, &schema, values)?;
        let now = context.local_now(request);
        let read = PartitionRead {
            table: table.storage_id,
            partition: PartitionKey::new(partition),
            slices: vec![Slice::prefix(clustering)],
            reversed: false,
            include_static: true,
            row_limit: 1,
        };
        let consistency = request.consistency;
        let (partition, met) =
            match context
                .data()
                .read_partition_counted(&schema, table, &read, consistency, now)
            {
                Ok(read) => read,
                Err(e) => return Some(Err(e)),
            };
        // Past the tombstone thresholds, the general path reads again and
        // warns or fails with the statement's text.
        if context.tombstones_past_warn(met.tombstones) {
            return None;
        }
        Some(
            partition_rows_owned(table, partition, now, table.clustering_count == 0)
                .map(|rows| self.outcome(request, rows)),
        )
    }

    /// The serialized partition key and the clustering values, or None
    /// when a value is missing or invalid (the general path says why).
    fn bind_key(
        &self,
        context: &StatementCtx<'_>,
        schema: &Schema,
        values: &[Value],
    ) -> Option<(Vec<u8>, Vec<Vec<u8>>)> {
        let table = &self.table;
        let random = context.env.random.clone();
        let ctx = context.eval_context(schema, &table.keyspace, values, &*random);
        let mut parts = Vec::with_capacity(self.key_binds.len());
        for (column, marker) in table.columns.iter().zip(&self.key_binds) {
            let expr = Expr::Bind(marker.clone());
            match evaluate(&expr, &column.ty, &column.name, &ctx) {
                Ok(Term::Value(v)) => parts.push(v),
                _ => return None,
            }
        }
        let clustering = parts.split_off(table.partition_key_count);
        if parts.iter().any(Vec::is_empty) {
            return None;
        }
        Some((partition_key_bytes_owned(parts), clustering))
    }

    fn outcome(&self, request: &Request, rows: Vec<CqlRow>) -> Outcome {
        let result_rows = rows.into_iter().map(|row| self.values(row)).collect();
        let columns = if request.skip_metadata {
            ColumnsMetadata::NoMetadata {
                column_count: self.specs.len() as u32,
            }
        } else {
            ColumnsMetadata::Specs(self.specs.clone())
        };
        Outcome::rows(Rows {
            metadata: RowsMetadata {
                columns,
                paging_state: None,
                new_metadata_id: None,
            },
            rows: result_rows,
        })
    }

    /// The selected values of `row`, moved out of it (copied only for a
    /// column selected again later).
    fn values(&self, mut row: CqlRow) -> Vec<Option<Bytes>> {
        let columns = &self.columns;
        let mut out = Vec::with_capacity(columns.len());
        for (j, &i) in columns.iter().enumerate() {
            let slot = &mut row.columns[i].value;
            let value = if columns[j + 1..].contains(&i) {
                slot.clone()
            } else {
                slot.take()
            };
            out.push(value.map(Bytes::from));
        }
        out
    }
}

/// No JSON, DISTINCT, grouping, ordering or limits.
fn plain_shape(select: &Select) -> bool {
    !select.json
        && !select.distinct
        && select.group_by.is_empty()
        && select.order_by.is_empty()
        && select.limit.is_none()
        && select.per_partition_limit.is_none()
}

/// The anonymous bind marker of each primary key column when the WHERE
/// clause is exactly `k = ?` once for every one of them.
fn key_binds(
    table: &Table,
    relations: &[Relation],
) -> Option<Vec<rocksandra_cql::ast::BindMarker>> {
    let key_count = table.partition_key_count + table.clustering_count;
    if relations.len() != key_count {
        return None;
    }
    let mut binds = vec![None; key_count];
    for relation in relations {
        let Relation::Compare {
            lhs: RelationLhs::Column(column),
            op: Operator::Eq,
            rhs: Expr::Bind(marker),
        } = relation
        else {
            return None;
        };
        let i = table.column_index(column.as_str())?;
        if i >= key_count || marker.name.is_some() || binds[i].is_some() {
            return None;
        }
        binds[i] = Some(marker.clone());
    }
    binds.into_iter().collect()
}
