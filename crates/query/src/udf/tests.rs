//! User functions and aggregates on serialized values.

use std::sync::Arc;

use rocksandra_data::types::{CqlType, NativeType};

use super::{compile_body, AggregatePlan, AggregateState, Signature, UserAggregate, UserFunction};

fn int() -> CqlType {
    CqlType::Native(NativeType::Int)
}

fn function(name: &str, args: &[&str], called_on_null: bool, body: &str) -> UserFunction {
    let names: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let types = vec![int(); args.len()];
    let signature = Signature {
        names: &names,
        types: &types,
        return_type: &int(),
        called_on_null_input: called_on_null,
    };
    let compiled = compile_body(&signature, body).expect("compiles");
    UserFunction {
        keyspace: "ks".into(),
        name: name.into(),
        argument_names: names,
        argument_types: types,
        return_type: int(),
        called_on_null_input: called_on_null,
        language: "java".into(),
        body: body.into(),
        compiled: Arc::new(compiled),
    }
}

fn int_bytes(n: i32) -> Vec<u8> {
    n.to_be_bytes().to_vec()
}

#[test]
fn returns_null_on_null_input_skips_the_body() {
    let f = function("f", &["a"], false, "return a + 1;");
    assert_eq!(f.call(&[None]).expect("runs"), None);
    assert_eq!(
        f.call(&[Some(&int_bytes(1))]).expect("runs"),
        Some(int_bytes(2))
    );
    let g = function("g", &["a"], true, "return a + 1;");
    let failure = g.call(&[None]).expect_err("unboxes null");
    assert_eq!(failure.to_string(), "java.lang.NullPointerException");
}

#[test]
fn an_aggregate_folds_rows_then_finishes() {
    let state = function("plus", &["s", "v"], false, "return s + v;");
    let last = function("twice", &["s"], true, "return s == null ? null : s * 2;");
    let aggregate = UserAggregate {
        keyspace: "ks".into(),
        name: "agg".into(),
        argument_types: vec![int()],
        state_function: "plus".into(),
        state_type: int(),
        final_function: Some("twice".into()),
        initial_condition: Some(int_bytes(10)),
        return_type: int(),
    };
    let plan = Arc::new(AggregatePlan {
        aggregate,
        state,
        last: Some(last),
    });
    let mut fold = AggregateState::new(plan.clone());
    for v in [Some(int_bytes(1)), None, Some(int_bytes(2))] {
        fold.add(&[v.as_deref()]).expect("adds");
    }
    // A null argument leaves the state of a RETURNS NULL state function.
    assert_eq!(fold.finish().expect("finishes"), Some(int_bytes(26)));
    let empty = AggregateState::new(plan);
    assert_eq!(empty.finish().expect("finishes"), Some(int_bytes(20)));
}

fn statement(text: &str) -> rocksandra_cql::ast::Statement {
    rocksandra_cql::parse_statement(text)
        .expect("parses")
        .statement
}

/// Applies a CREATE/DROP FUNCTION or AGGREGATE (INITCOND an int literal).
fn apply(schema: &crate::schema::Schema, text: &str) -> crate::schema::Schema {
    use rocksandra_cql::ast::{Expr, Literal, Statement};
    let initial = |e: &Expr, _: &CqlType| match e {
        Expr::Literal(Literal::Integer(n)) => Ok(Some(int_bytes(n.parse().unwrap_or(0)))),
        _ => Ok(None),
    };
    let outcome = match statement(text) {
        Statement::CreateFunction(s) => crate::ddl::udf::create_function(schema, "ks", &s),
        Statement::CreateAggregate(s) => {
            crate::ddl::udf::create_aggregate(schema, "ks", &s, &initial)
        }
        Statement::DropFunction(s) => crate::ddl::udf::drop_function(schema, "ks", &s),
        other => panic!("not a function statement: {other:?}"),
    };
    outcome
        .expect("applies")
        .schema
        .expect("changes the schema")
}

#[test]
fn schema_events_stored_form_and_drop_keyspace() {
    use rocksandra_wire::{SchemaChangeTarget, SchemaChangeType};
    let base = crate::system::builtin_schema();
    let rocksandra_cql::ast::Statement::CreateKeyspace(ks) = statement(
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
    ) else {
        panic!("a CREATE KEYSPACE");
    };
    let with_ks = crate::ddl::create_keyspace(&base, &ks, &[])
        .expect("creates")
        .schema
        .expect("changes");
    let with_f = apply(
        &with_ks,
        "CREATE FUNCTION ks.acc (s int, v int) RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE java AS 'return s + v;'",
    );
    let with_a = apply(
        &with_f,
        "CREATE AGGREGATE ks.total (int) SFUNC acc STYPE int INITCOND 7",
    );
    let events = crate::schema::diff(&with_ks, &with_a);
    let targets: Vec<(SchemaChangeType, SchemaChangeTarget)> = events
        .into_iter()
        .map(|e| (e.change_type, e.target))
        .collect();
    assert_eq!(
        targets,
        vec![
            (
                SchemaChangeType::Created,
                SchemaChangeTarget::Function {
                    keyspace: "ks".into(),
                    name: "acc".into(),
                    arg_types: vec!["int".into(), "int".into()],
                }
            ),
            (
                SchemaChangeType::Created,
                SchemaChangeTarget::Aggregate {
                    keyspace: "ks".into(),
                    name: "total".into(),
                    arg_types: vec!["int".into()],
                }
            ),
        ]
    );
    // The stored form reads back to the same functions, bodies compiled.
    let mut reread = crate::system::builtin_schema();
    reread
        .load_stored_json(&with_a.to_stored_json())
        .expect("reads");
    assert_eq!(reread.keyspace("ks"), with_a.keyspace("ks"));
    let keyspace = reread.keyspace("ks").expect("kept");
    assert_eq!(
        super::initial_condition_literal(&keyspace.aggregates[0]).as_deref(),
        Some("7")
    );
    // DROP KEYSPACE takes them along.
    let dropped = crate::ddl::drop_keyspace(&with_a, "ks", false)
        .expect("drops")
        .schema
        .expect("changes");
    let gone = crate::schema::diff(&with_a, &dropped);
    assert!(gone
        .iter()
        .any(|e| e.change_type == SchemaChangeType::Dropped
            && matches!(&e.target, SchemaChangeTarget::Function { name, .. } if name == "acc")));
}
