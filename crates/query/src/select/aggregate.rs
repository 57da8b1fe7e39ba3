//! Aggregates without GROUP BY, folded a batch of rows at a time: each
//! `count`, `min`, `max`, `sum` and `avg` keeps a running state, and only
//! the first row is kept (the other selectors of an aggregate query show
//! its values), so a `SELECT count(*)` over a table of any size holds one
//! batch of rows in memory, as Cassandra's paged aggregation does.

use bytes::Bytes;

use super::{eval_sel, is_aggregate, Aggregate, Output, PagingState, Reader, Sel};
use crate::error::{QueryError, Result};
use crate::functions::aggregates::{is_summable, SumAvg};
use crate::rows::CqlRow;
use crate::schema::Table;

/// Rows read from storage at a time while folding.
pub const AGGREGATE_BATCH_ROWS: usize = 1000;

enum State {
    Count(i64),
    Min(Option<Vec<u8>>),
    Max(Option<Vec<u8>>),
    SumAvg(Box<SumAvg>),
}

/// One aggregate of a selector and its running state.
struct Fold {
    node: Sel,
    state: State,
}

impl Fold {
    fn new(node: &Sel) -> Result<Fold> {
        let state = match node {
            Sel::Aggregate { function, ty, .. } => match function {
                Aggregate::Count => State::Count(0),
                Aggregate::Min => State::Min(None),
                Aggregate::Max => State::Max(None),
                Aggregate::Sum | Aggregate::Avg => {
                    let avg = *function == Aggregate::Avg;
                    if !is_summable(ty) {
                        return Err(QueryError::invalid(format!(
                            "Invalid call to function system.{}: type {ty} is not numeric",
                            if avg { "avg" } else { "sum" }
                        )));
                    }
                    State::SumAvg(Box::new(SumAvg::new(avg, ty)?))
                }
            },
            _ => State::Count(0),
        };
        Ok(Fold {
            node: node.clone(),
            state,
        })
    }

    fn add(&mut self, table: &Table, row: &CqlRow) -> Result<()> {
        let (arg, ty) = match &self.node {
            Sel::Aggregate { arg, ty, .. } => (arg, ty),
            _ => {
                if let State::Count(n) = &mut self.state {
                    *n += 1;
                }
                return Ok(());
            }
        };
        let Some(value) = eval_sel(table, arg, row)? else {
            return Ok(());
        };
        let compare = rocksandra_data::value::compare;
        match &mut self.state {
            State::Count(n) => *n += 1,
            // The first of equal minimums, the last of equal maximums (as
            // Iterator::min_by and max_by over all values).
            State::Min(best) => {
                if best.as_ref().is_none_or(|b| compare(ty, &value, b).is_lt()) {
                    *best = Some(value);
                }
            }
            State::Max(best) => {
                if best.as_ref().is_none_or(|b| compare(ty, &value, b).is_ge()) {
                    *best = Some(value);
                }
            }
            State::SumAvg(acc) => acc.add(&value)?,
        }
        Ok(())
    }

    fn finish(self) -> Option<Vec<u8>> {
        match self.state {
            State::Count(n) => Some(n.to_be_bytes().to_vec()),
            State::Min(v) | State::Max(v) => v,
            State::SumAvg(acc) => Some(acc.finish()),
        }
    }
}

/// Replaces each aggregate in `sel` (itself included) by `f` of it, in one
/// fixed order: collecting the folds and putting their results back use it.
pub(super) fn map_aggregates(sel: &Sel, f: &mut dyn FnMut(&Sel) -> Result<Sel>) -> Result<Sel> {
    if matches!(sel, Sel::CountStar | Sel::Aggregate { .. }) {
        return f(sel);
    }
    if !is_aggregate(sel) {
        return Ok(sel.clone());
    }
    let mut inner = |s: &Sel| -> Result<Box<Sel>> { Ok(Box::new(map_aggregates(s, f)?)) };
    Ok(match sel {
        Sel::Field { udt, index } => Sel::Field {
            udt: inner(udt)?,
            index: *index,
        },
        Sel::Cast { arg, from, to } => Sel::Cast {
            arg: inner(arg)?,
            from: from.clone(),
            to: to.clone(),
        },
        Sel::ToJson { arg, ty } => Sel::ToJson {
            arg: inner(arg)?,
            ty: ty.clone(),
        },
        Sel::Negate { arg, ty } => Sel::Negate {
            arg: inner(arg)?,
            ty: *ty,
        },
        Sel::Arith {
            op,
            left,
            left_ty,
            right,
            right_ty,
            ty,
        } => Sel::Arith {
            op: *op,
            left: inner(left)?,
            left_ty: left_ty.clone(),
            right: inner(right)?,
            right_ty: right_ty.clone(),
            ty: ty.clone(),
        },
        Sel::Element {
            collection,
            ty,
            key,
        } => Sel::Element {
            collection: inner(collection)?,
            ty: ty.clone(),
            key: key.clone(),
        },
        Sel::Range {
            collection,
            ty,
            from,
            to,
        } => Sel::Range {
            collection: inner(collection)?,
            ty: ty.clone(),
            from: from.clone(),
            to: to.clone(),
        },
        Sel::Function {
            function,
            args,
            now_micros,
        } => Sel::Function {
            function: function.clone(),
            args: args
                .iter()
                .map(|a| map_aggregates(a, f))
                .collect::<Result<_>>()?,
            now_micros: *now_micros,
        },
        other => other.clone(),
    })
}

/// Reads every row `reader` selects, a batch at a time, and returns the
/// aggregate query's one result row and how many rows were read.
pub(super) fn fold(
    table: &Table,
    outputs: &[Output],
    reader: &Reader<'_>,
) -> Result<(Vec<Option<Bytes>>, usize)> {
    let mut folds = Vec::new();
    for o in outputs {
        map_aggregates(&o.sel, &mut |node| {
            folds.push(Fold::new(node)?);
            Ok(Sel::Constant(None))
        })?;
    }
    let mut first: Option<CqlRow> = None;
    let mut read = 0usize;
    let mut state = PagingState::default();
    loop {
        let (rows, next) = reader.read(&state, AGGREGATE_BATCH_ROWS)?;
        for row in &rows {
            for fold in &mut folds {
                fold.add(table, row)?;
            }
        }
        read += rows.len();
        if first.is_none() {
            first = rows.into_iter().next();
        }
        match next {
            Some(n) => state = n,
            None => break,
        }
    }
    let mut results = folds.into_iter().map(Fold::finish);
    let row = first.unwrap_or_else(|| CqlRow {
        partition: rocksandra_storage::PartitionKey::new(Vec::new()),
        clustering: None,
        columns: vec![Default::default(); table.columns.len()],
    });
    let mut out = Vec::with_capacity(outputs.len());
    for o in outputs {
        let computed =
            map_aggregates(&o.sel, &mut |_| Ok(Sel::Constant(results.next().flatten())))?;
        // Non-aggregate selectors show the first row's values (null when
        // no row was read).
        let value = if read == 0 && !is_aggregate(&o.sel) {
            None
        } else {
            eval_sel(table, &computed, &row)?
        };
        out.push(value.map(Bytes::from));
    }
    Ok((out, read))
}
