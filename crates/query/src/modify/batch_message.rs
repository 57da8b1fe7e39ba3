//! A BATCH message of the native protocol: each statement parsed (or
//! looked up when prepared) and bound to its own values, then the whole
//! written as one batch (`modify::execute_batch_message`).

use rocksandra_cql::ast::{BatchKind, Modification, Statement};
use rocksandra_cql::ParsedStatement;
use rocksandra_wire::{Batch, BatchQuery, BatchType, Value};

use crate::error::{QueryError, Result};
use crate::request::{bind_values, Request};

/// One statement of a batch, bound: the modification, its values and the
/// keyspace it runs in.
pub type BoundStatement = (Modification, Vec<Value>, Option<String>);

/// The batch's kind, as the CQL statement names it.
pub fn kind(batch_type: BatchType) -> BatchKind {
    match batch_type {
        BatchType::Logged => BatchKind::Logged,
        BatchType::Unlogged => BatchKind::Unlogged,
        BatchType::Counter => BatchKind::Counter,
    }
}

/// The request the whole batch runs under (its consistency levels,
/// timestamp and clock), for `user` in `keyspace`.
pub fn base_request(batch: &Batch, keyspace: Option<String>, user: Option<String>) -> Request {
    Request {
        user,
        keyspace,
        timestamp: batch.default_timestamp_micros,
        now_in_seconds: batch.now_in_seconds,
        consistency: batch.consistency,
        serial_consistency: batch.serial_consistency,
        ..Request::default()
    }
}

/// A prepared statement by id: its parsed form and the keyspace it was
/// prepared in.
pub type Prepared = (ParsedStatement, Option<String>);

/// Each statement of `batch` parsed (or found by `prepared`) and bound,
/// with Cassandra's refusals in its order: a statement's marker count
/// first, then a statement that is not INSERT, UPDATE or DELETE.
pub fn bind(
    batch: Batch,
    base: &Request,
    prepared: impl Fn(&[u8]) -> Result<Prepared>,
) -> Result<Vec<BoundStatement>> {
    let mut statements = Vec::with_capacity(batch.statements.len());
    for s in batch.statements {
        let (parsed, keyspace) = match &s.query {
            BatchQuery::Text(text) => (
                rocksandra_cql::parse_statement(text)?,
                base.keyspace.clone(),
            ),
            BatchQuery::Prepared(id) => {
                let (parsed, keyspace) = prepared(id)?;
                (parsed, keyspace.or(base.keyspace.clone()))
            }
        };
        // A batch's own wording (capitalised), where QUERY and EXECUTE
        // say "there were" (Cassandra's BatchMessage and QueryProcessor).
        let markers = parsed.bind_variables.len();
        if s.values.len() != markers {
            return Err(QueryError::invalid(format!(
                "There were {markers} markers(?) in CQL but {} bound variables",
                s.values.len()
            )));
        }
        let request = Request {
            keyspace,
            values: s.values,
            ..base.clone()
        };
        let values = bind_values(&parsed, &request)?.into_owned();
        statements.push((modification(parsed.statement)?, values, request.keyspace));
    }
    Ok(statements)
}

fn modification(statement: Statement) -> Result<Modification> {
    match statement {
        Statement::Insert(i) => Ok(Modification::Insert(*i)),
        Statement::Update(u) => Ok(Modification::Update(*u)),
        Statement::Delete(d) => Ok(Modification::Delete(*d)),
        _ => Err(QueryError::invalid(
            "Invalid statement in batch: only UPDATE, INSERT and DELETE statements are allowed.",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocksandra_wire::{BatchStatement, Consistency};

    fn batch(statements: Vec<BatchStatement>) -> Batch {
        Batch {
            batch_type: BatchType::Unlogged,
            statements,
            consistency: Consistency::Quorum,
            serial_consistency: None,
            default_timestamp_micros: Some(42),
            keyspace: None,
            now_in_seconds: None,
        }
    }

    fn text(query: &str, values: Vec<Value>) -> BatchStatement {
        BatchStatement {
            query: BatchQuery::Text(query.to_string()),
            values,
        }
    }

    fn unknown(id: &[u8]) -> Result<Prepared> {
        Err(QueryError::Unprepared(bytes::Bytes::copy_from_slice(id)))
    }

    fn int(v: i32) -> Value {
        Value::Bytes(bytes::Bytes::copy_from_slice(&v.to_be_bytes()))
    }

    #[test]
    fn statements_bind_to_their_own_values_and_keyspace() {
        let b = batch(vec![
            text("INSERT INTO t (k, v) VALUES (?, 1)", vec![int(7)]),
            text("DELETE FROM ks2.t WHERE k = 3", vec![]),
        ]);
        let base = base_request(&b, Some("ks".into()), Some("alice".into()));
        assert_eq!(base.timestamp, Some(42));
        assert_eq!(base.consistency, Consistency::Quorum);
        let bound = bind(b, &base, unknown).expect("binds");
        assert_eq!(bound.len(), 2);
        assert!(matches!(bound[0].0, Modification::Insert(_)));
        assert_eq!(bound[0].1, vec![int(7)]);
        assert_eq!(bound[0].2.as_deref(), Some("ks"));
        assert!(matches!(bound[1].0, Modification::Delete(_)));
    }

    #[test]
    fn a_marker_count_that_differs_is_refused_in_the_batch_wording() {
        let b = batch(vec![text(
            "INSERT INTO t (k, v) VALUES (?, ?)",
            vec![int(1)],
        )]);
        let base = base_request(&b, Some("ks".into()), None);
        let e = bind(b, &base, unknown).expect_err("refused");
        assert_eq!(
            e.to_string(),
            "There were 2 markers(?) in CQL but 1 bound variables"
        );
    }

    #[test]
    fn only_modifications_are_allowed() {
        let b = batch(vec![text("SELECT * FROM t", vec![])]);
        let base = base_request(&b, Some("ks".into()), None);
        let e = bind(b, &base, unknown).expect_err("refused");
        assert!(
            e.to_string().starts_with("Invalid statement in batch"),
            "{e}"
        );
    }

    #[test]
    fn an_unknown_prepared_id_is_unprepared() {
        let b = batch(vec![BatchStatement {
            query: BatchQuery::Prepared(bytes::Bytes::from_static(b"\x01\x02")),
            values: vec![],
        }]);
        let base = base_request(&b, None, None);
        let e = bind(b, &base, unknown).expect_err("refused");
        assert!(matches!(e, QueryError::Unprepared(_)));
    }
}
