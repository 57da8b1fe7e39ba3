//! The guardrails applied to one statement: whom they bind (ordinary
//! users logged in with PasswordAuthenticator, in requests from clients),
//! the checks around a statement (`StatementGuard`) and the refusal of a
//! query that needs ALLOW FILTERING when the guardrail forbids it. The
//! checks themselves are `guardrails`' pure functions.

use std::cell::RefCell;
use std::sync::Arc;

use rocksandra_cql::ast::Statement;

use crate::ctx::StatementCtx;
use crate::ddl::DdlOutcome;
use crate::error::{QueryError, Result};
use crate::guardrails::{
    after_change, before_run, table_properties, without_options, Guardrails,
    FILTERING_DISABLED_MESSAGE,
};
use crate::request::{Outcome, Request};
use crate::roles::is_superuser;
use crate::schema::Schema;

/// The guardrails when `active` says one that matters is set and they
/// bind the request's user: an ordinary user (not a superuser) logged
/// in with PasswordAuthenticator, in a request from a client. Roles
/// are read only when a guardrail is set.
pub(crate) fn guardrails_for(
    ctx: &StatementCtx<'_>,
    request: &Request,
    active: impl Fn(&Guardrails) -> bool,
) -> Result<Option<Arc<Guardrails>>> {
    let guardrails = ctx.settings.guardrails();
    if !active(&guardrails)
        || request.internal
        || !ctx.settings.auth_config().password_authenticator
    {
        return Ok(None);
    }
    let superuser = match &request.user {
        Some(user) => is_superuser(ctx, user)?,
        None => false,
    };
    Ok((!superuser).then(|| arc_swap::Guard::into_inner(guardrails)))
}

/// The guardrails of one statement: the checks Cassandra makes before a
/// statement runs (`check`), those that look at the schema a change would
/// make (`wrap`, inside the schema change, so a failure applies nothing),
/// and the warnings they gave, put first in the outcome (`finish`).
pub(crate) struct StatementGuard<'a> {
    guardrails: Option<Arc<Guardrails>>,
    statement: &'a Statement,
    session_keyspace: Option<&'a str>,
    warnings: RefCell<Vec<String>>,
    /// Table options `table_properties_ignored` drops from the statement.
    ignored_options: Vec<String>,
}

impl<'a> StatementGuard<'a> {
    /// Runs the checks made before the statement runs.
    pub(crate) fn check(
        ctx: &StatementCtx<'a>,
        statement: &'a Statement,
        request: &'a Request,
    ) -> Result<StatementGuard<'a>> {
        let guardrails = guardrails_for(ctx, request, |g| g.guards(statement))?;
        let mut guard = StatementGuard {
            guardrails,
            statement,
            session_keyspace: request.keyspace.as_deref(),
            warnings: RefCell::new(Vec::new()),
            ignored_options: Vec::new(),
        };
        if let Some(g) = guard.guardrails.clone() {
            let g = &*g;
            let (warnings, ignored) = table_properties(g, statement)?;
            guard.warnings.borrow_mut().extend(warnings);
            guard.ignored_options = ignored;
            let schema = ctx.schema();
            let warnings = before_run(g, statement, &schema, guard.session_keyspace)?;
            guard.warnings.borrow_mut().extend(warnings);
        }
        Ok(guard)
    }

    /// The statement to run when options are ignored: without them.
    pub(crate) fn rewritten(&self) -> Option<Statement> {
        (!self.ignored_options.is_empty())
            .then(|| without_options(self.statement, &self.ignored_options))
    }

    /// `change` with the checks of the schema it makes.
    pub(crate) fn wrap<'b>(
        &'b self,
        change: impl FnOnce(&Schema) -> Result<DdlOutcome> + 'b,
    ) -> impl FnOnce(&Schema) -> Result<DdlOutcome> + 'b {
        move |schema: &Schema| {
            let outcome = change(schema)?;
            if let (Some(g), Some(next)) = (&self.guardrails, &outcome.schema) {
                let warnings = after_change(g, self.statement, next, self.session_keyspace)?;
                self.warnings.borrow_mut().extend(warnings);
            }
            Ok(outcome)
        }
    }

    /// The outcome with the guardrails' warnings before its own.
    pub(crate) fn finish(self, outcome: Result<Outcome>) -> Result<Outcome> {
        let mut outcome = outcome?;
        let mut warnings = self.warnings.into_inner();
        if !warnings.is_empty() {
            warnings.append(&mut outcome.warnings);
            outcome.warnings = warnings;
        }
        Ok(outcome)
    }
}

/// Whether `error` refuses a query that needs ALLOW FILTERING.
pub(crate) fn is_filtering_refusal(error: &QueryError) -> bool {
    matches!(error, QueryError::Invalid(m) if m.starts_with("Cannot execute this query as it might involve data filtering"))
}

/// A refusal for want of ALLOW FILTERING in Cassandra's words for a user
/// the `allow_filtering` guardrail binds; other errors unchanged.
pub(crate) fn filtering_disabled(error: QueryError) -> QueryError {
    if is_filtering_refusal(&error) {
        QueryError::invalid(FILTERING_DISABLED_MESSAGE)
    } else {
        error
    }
}

/// The refusal of a query that needs ALLOW FILTERING, in Cassandra's words
/// for a user the `allow_filtering` guardrail binds.
pub(crate) fn filtering_refusal(
    ctx: &StatementCtx<'_>,
    error: QueryError,
    request: &Request,
) -> QueryError {
    if !is_filtering_refusal(&error) {
        return error;
    }
    match guardrails_for(ctx, request, |g| !g.allow_filtering_enabled) {
        Ok(Some(_)) => filtering_disabled(error),
        Ok(None) => error,
        Err(e) => e,
    }
}
