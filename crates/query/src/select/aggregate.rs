//! Aggregates, folded a batch of rows at a time: each `count`, `min`,
//! `max`, `sum` and `avg` keeps a running state, and only a group's first
//! row is kept (the other selectors of an aggregate query show its
//! values), so a `SELECT count(*)` over a table of any size holds one
//! batch of rows in memory (`BatchSize`: about 4 MiB of values, at most
//! 1,000 rows), as Cassandra's paged aggregation does. GROUP BY
//! folds its groups as the rows come (`fold_groups`), holding the page's
//! result rows and the group in progress.

use bytes::Bytes;

use super::group_by::GroupBy;
use super::{
    empty_row, eval_sel, is_aggregate, BatchSize, Output, PagingState, Reader, ResultRows, Sel,
};
use crate::error::{QueryError, Result};
use crate::functions::aggregates::{is_summable, Aggregate, SumAvg};
use crate::rows::CqlRow;
use crate::schema::Table;

enum State {
    Count(i64),
    Min(Option<Vec<u8>>),
    Max(Option<Vec<u8>>),
    SumAvg(Box<SumAvg>),
    User(Box<crate::udf::AggregateState>),
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
            Sel::UserAggregate { plan, .. } => {
                State::User(Box::new(crate::udf::AggregateState::new(plan.clone())))
            }
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
            Sel::UserAggregate { args, .. } => {
                let mut values = Vec::with_capacity(args.len());
                for a in args {
                    values.push(eval_sel(table, a, row)?);
                }
                let refs: Vec<Option<&[u8]>> = values.iter().map(Option::as_deref).collect();
                if let State::User(state) = &mut self.state {
                    state.add(&refs)?;
                }
                return Ok(());
            }
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
            State::User(_) => {}
        }
        Ok(())
    }

    fn finish(self) -> Result<Option<Vec<u8>>> {
        Ok(match self.state {
            State::Count(n) => Some(n.to_be_bytes().to_vec()),
            State::Min(v) | State::Max(v) => v,
            State::SumAvg(acc) => Some(acc.finish()),
            State::User(state) => state.finish()?,
        })
    }
}

/// Replaces each aggregate in `sel` (itself included) by `f` of it, in one
/// fixed order: collecting the folds and putting their results back use it.
pub(super) fn map_aggregates(sel: &Sel, f: &mut dyn FnMut(&Sel) -> Result<Sel>) -> Result<Sel> {
    if matches!(
        sel,
        Sel::CountStar | Sel::Aggregate { .. } | Sel::UserAggregate { .. }
    ) {
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
        Sel::UserFunction { function, args } => Sel::UserFunction {
            function: function.clone(),
            args: args
                .iter()
                .map(|a| map_aggregates(a, f))
                .collect::<Result<_>>()?,
        },
        other => other.clone(),
    })
}

/// One group being folded: a fold per aggregate of the outputs, and the
/// group's first row (the other selectors show its values).
struct Group {
    folds: Vec<Fold>,
    first: Option<CqlRow>,
    rows: usize,
}

impl Group {
    fn new(outputs: &[Output]) -> Result<Group> {
        let mut folds = Vec::new();
        for o in outputs {
            map_aggregates(&o.sel, &mut |node| {
                folds.push(Fold::new(node)?);
                Ok(Sel::Constant(None))
            })?;
        }
        Ok(Group {
            folds,
            first: None,
            rows: 0,
        })
    }

    fn add(&mut self, table: &Table, row: CqlRow) -> Result<()> {
        for fold in &mut self.folds {
            fold.add(table, &row)?;
        }
        self.rows += 1;
        if self.first.is_none() {
            self.first = Some(row);
        }
        Ok(())
    }

    /// The group's result row.
    fn finish(self, table: &Table, outputs: &[Output]) -> Result<Vec<Option<Bytes>>> {
        let results: Vec<Option<Vec<u8>>> = self
            .folds
            .into_iter()
            .map(Fold::finish)
            .collect::<Result<_>>()?;
        let mut results = results.into_iter();
        let read = self.rows;
        let row = self.first.unwrap_or_else(|| empty_row(table));
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
        Ok(out)
    }
}

/// Reads every row `reader` selects, a batch at a time, and returns the
/// aggregate query's one result row and how many rows were read.
pub(super) fn fold(
    table: &Table,
    outputs: &[Output],
    reader: &Reader<'_>,
) -> Result<(Vec<Option<Bytes>>, usize)> {
    let mut group = Group::new(outputs)?;
    let mut state = PagingState::default();
    let mut batch = BatchSize::new();
    loop {
        let (rows, next) = reader.read(&state, batch.rows())?;
        batch.after(&rows);
        for row in rows {
            group.add(table, row)?;
        }
        match next {
            Some(n) => state = n,
            None => break,
        }
    }
    let read = group.rows;
    Ok((group.finish(table, outputs)?, read))
}

/// A GROUP BY query's page: which groups (after PER PARTITION LIMIT) it
/// returns and whether a next page follows.
pub(super) struct GroupWindow<'a> {
    pub group_by: &'a GroupBy,
    /// PER PARTITION LIMIT: at most this many groups of each partition.
    pub per_partition: Option<usize>,
    /// Groups returned by earlier pages (skipped: reads start over).
    pub offset: usize,
    /// Rows returned by earlier pages, and LIMIT.
    pub already: usize,
    pub limit: Option<usize>,
    pub remaining_limit: Option<usize>,
    pub page_size: Option<usize>,
}

/// Folds the groups of a GROUP BY query as the rows come, a batch at a
/// time, keeping the result rows of this page and one group in progress.
/// Returns the page's rows, the paging state of the next page (its
/// `partition_index` the groups returned so far) and the rows read.
pub(super) fn fold_groups(
    table: &Table,
    outputs: &[Output],
    reader: &Reader<'_>,
    window: &GroupWindow<'_>,
) -> Result<(ResultRows, Option<PagingState>, usize)> {
    let take = match (window.remaining_limit, window.page_size) {
        (Some(l), Some(p)) => l.min(p),
        (Some(l), None) => l,
        (None, Some(p)) => p,
        (None, None) => usize::MAX,
    };
    let mut page = GroupPage {
        out: Vec::new(),
        seen: 0,
        take,
        offset: window.offset,
    };
    // The group in progress: its first row and grouping function value,
    // whether PER PARTITION LIMIT keeps it, its folds.
    let mut current: Option<(CqlRow, Option<Vec<u8>>, bool, Group)> = None;
    let mut partition_groups: Option<(rocksandra_storage::PartitionKey, usize)> = None;
    let mut read = 0usize;
    let mut state = PagingState::default();
    let mut batch = BatchSize::new();
    'reading: loop {
        let (rows, next) = reader.read(&state, batch.rows())?;
        batch.after(&rows);
        for row in rows {
            read += 1;
            let value = window.group_by.function_value(table, &row)?;
            let same = current.as_ref().is_some_and(|(first, first_value, ..)| {
                window
                    .group_by
                    .same_group((first, first_value), (&row, &value))
            });
            if !same {
                if let Some((_, _, kept, group)) = current.take() {
                    if page.close(table, outputs, kept, group)? {
                        break 'reading;
                    }
                }
                let count = match &mut partition_groups {
                    Some((key, n)) if *key == row.partition => {
                        *n += 1;
                        *n
                    }
                    _ => {
                        partition_groups = Some((row.partition.clone(), 1));
                        1
                    }
                };
                let kept = window.per_partition.is_none_or(|n| n == 0 || count <= n);
                current = Some((row.clone(), value, kept, Group::new(outputs)?));
            }
            if let Some((_, _, true, group)) = &mut current {
                group.add(table, row)?;
            }
        }
        match next {
            Some(n) => state = n,
            None => {
                if let Some((_, _, kept, group)) = current.take() {
                    page.close(table, outputs, kept, group)?;
                }
                break;
            }
        }
    }
    let returned = page.out.len();
    let total = window.already + returned;
    let full = window.page_size.is_some_and(|p| returned >= p);
    let next = (full && window.limit.is_none_or(|l| total < l)).then(|| PagingState {
        rows_so_far: total as u64,
        partition_index: (window.offset + returned) as u32,
        position: None,
    });
    Ok((page.out, next, read))
}

/// The groups of one GROUP BY page as they close.
struct GroupPage {
    out: ResultRows,
    /// Groups kept so far (PER PARTITION LIMIT applied), this page's and
    /// the earlier pages'.
    seen: usize,
    take: usize,
    offset: usize,
}

impl GroupPage {
    /// Adds a finished group if it is kept and on this page; true once the
    /// page is full.
    fn close(
        &mut self,
        table: &Table,
        outputs: &[Output],
        kept: bool,
        group: Group,
    ) -> Result<bool> {
        if !kept {
            return Ok(false);
        }
        self.seen += 1;
        if self.seen > self.offset && self.out.len() < self.take {
            self.out.push(group.finish(table, outputs)?);
        }
        Ok(self.out.len() >= self.take)
    }
}
