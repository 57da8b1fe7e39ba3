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
