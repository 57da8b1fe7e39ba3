//! The checks Cassandra makes when it prepares a statement: the refusals
//! of a SELECT's, UPDATE's or DELETE's WHERE clause (its
//! `StatementRestrictions`), and of a SELECT's ORDER BY and GROUP BY, that
//! need no value. They are the checks the statement makes again when it
//! runs (`select::check_prepared`, `modify::check_prepared_update` and
//! `_delete`), here with a stand-in value for each term
//! (`EvalContext::stand_ins`): bind markers have no value yet, and
//! Cassandra checks the values of literals (null, empty) only when the
//! statement runs. A SELECT's checks include an ANN query's that need no
//! value, and the `allow_filtering` guardrail for an ordinary user.

use rocksandra_cql::ast::{Delete, Insert, Modification, QualifiedName, Statement, Update};

use crate::ctx::StatementCtx;
use crate::error::Result;
use crate::guard::guardrails_for;
use crate::request::Request;
use crate::schema::{keyspace_of, Schema, Table};
use crate::term::EvalContext;

/// Refuses a statement whose restrictions Cassandra refuses at PREPARE,
/// for `request`'s user (the `allow_filtering` guardrail binds ordinary
/// users: its refusals are theirs). Other statements, and those on tables
/// no one may write, pass (running them refuses what there is to refuse).
pub(crate) fn check(
    ctx: &StatementCtx<'_>,
    schema: &Schema,
    (statement, session_keyspace): (&Statement, Option<&str>),
    request: &Request,
) -> Result<()> {
    let on_table = |name: &QualifiedName,
                    check: &dyn Fn(&Table, &EvalContext<'_>) -> Result<()>| {
        let keyspace = keyspace_of(name, session_keyspace)?;
        let table = schema.lookup_table(keyspace, name.name.as_str())?;
        let random = ctx.env.random.clone();
        let eval = ctx.prepare_eval_context(schema, &table.keyspace, &*random);
        check(table, &eval)
    };
    let writable = |name: &QualifiedName,
                    check: &dyn Fn(&Table, &EvalContext<'_>) -> Result<()>| {
        on_table(name, &|table, eval| {
            let system = crate::schema::is_system_keyspace(&table.keyspace);
            if table.is_virtual || table.is_view() || system {
                return Ok(());
            }
            check(table, eval)
        })
    };
    let update = |u: &Update| {
        writable(&u.table, &|table, eval| {
            crate::modify::check_prepared_update(table, u, eval)
        })
    };
    let insert = |i: &Insert| {
        writable(&i.table, &|table, eval| {
            crate::modify::check_prepared_insert(table, i, eval)
        })
    };
    let delete = |d: &Delete| {
        writable(&d.table, &|table, eval| {
            crate::modify::check_prepared_delete(table, d, eval)
        })
    };
    match statement {
        Statement::Select(select) => {
            let filtering = guardrails_for(ctx, request, |g| !g.allow_filtering_enabled)?;
            on_table(&select.table, &|table, eval| {
                crate::select::check_prepared(table, select, eval, filtering.as_deref())
            })
        }
        Statement::Insert(i) => insert(i),
        Statement::Update(u) => update(u),
        Statement::Delete(d) => delete(d),
        Statement::Batch(batch) => batch.statements.iter().try_for_each(|m| match m {
            Modification::Insert(i) => insert(i),
            Modification::Update(u) => update(u),
            Modification::Delete(d) => delete(d),
        }),
        _ => Ok(()),
    }
}
