//! The Java subset: what it accepts and computes, and what it refuses.

use super::{compile, Prim, Ty, Val};

const INT: Ty = Ty::Boxed(Prim::Int);
const LONG: Ty = Ty::Boxed(Prim::Long);
const DOUBLE: Ty = Ty::Boxed(Prim::Double);
const TEXT: Ty = Ty::Str;

fn params(list: &[(&str, Ty)]) -> Vec<(String, Ty)> {
    list.iter().map(|(n, t)| (n.to_string(), *t)).collect()
}

fn run(body: &str, list: &[(&str, Ty)], returns: Ty, args: Vec<Val>) -> Result<Val, String> {
    let compiled = compile(body, &params(list), returns).map_err(|e| format!("refused: {e}"))?;
    compiled.call(args)
}

fn refused(body: &str, list: &[(&str, Ty)], returns: Ty) -> String {
    match compile(body, &params(list), returns) {
        Ok(_) => panic!("{body} compiled"),
        Err(e) => e,
    }
}

#[test]
fn integer_arithmetic_wraps_and_divides_as_java() {
    let ab = [("a", INT), ("b", INT)];
    assert_eq!(
        run("return a + b;", &ab, INT, vec![Val::Int(2), Val::Int(3)]),
        Ok(Val::Int(5))
    );
    assert_eq!(
        run(
            "return a + b;",
            &ab,
            INT,
            vec![Val::Int(i32::MAX), Val::Int(1)]
        ),
        Ok(Val::Int(i32::MIN))
    );
    assert_eq!(
        run("return a / b;", &ab, INT, vec![Val::Int(-7), Val::Int(2)]),
        Ok(Val::Int(-3))
    );
    assert_eq!(
        run("return a % b;", &ab, INT, vec![Val::Int(-7), Val::Int(2)]),
        Ok(Val::Int(-1))
    );
    assert_eq!(
        run("return a / b;", &ab, INT, vec![Val::Int(1), Val::Int(0)]),
        Err("java.lang.ArithmeticException: / by zero".into())
    );
    assert_eq!(
        run(
            "return (long) a * b;",
            &ab,
            LONG,
            vec![Val::Int(i32::MAX), Val::Int(2)]
        ),
        Ok(Val::Long(i64::from(i32::MAX) * 2))
    );
}

#[test]
fn doubles_and_math_calls() {
    let input = [("input", DOUBLE)];
    let body = "return Double.valueOf(Math.log(input.doubleValue()));";
    assert_eq!(
        run(body, &input, DOUBLE, vec![Val::Double(1.0)]),
        Ok(Val::Double(0.0))
    );
    assert_eq!(
        run(
            "return Math.max(input, 2.5);",
            &input,
            DOUBLE,
            vec![Val::Double(1.0)]
        ),
        Ok(Val::Double(2.5))
    );
    assert_eq!(
        run("return input / 0;", &input, DOUBLE, vec![Val::Double(1.0)]),
        Ok(Val::Double(f64::INFINITY))
    );
}

#[test]
fn nulls_checks_and_unboxing() {
    let sv = [("state", INT), ("val", INT)];
    let body = "if (val == null) return state; return state + val;";
    assert_eq!(
        run(body, &sv, INT, vec![Val::Int(4), Val::Null]),
        Ok(Val::Int(4))
    );
    assert_eq!(
        run(body, &sv, INT, vec![Val::Int(4), Val::Int(1)]),
        Ok(Val::Int(5))
    );
    assert_eq!(
        run(
            "return state + val;",
            &sv,
            INT,
            vec![Val::Null, Val::Int(1)]
        ),
        Err("java.lang.NullPointerException".into())
    );
    let ternary = "return state == null ? val : state + val;";
    assert_eq!(
        run(ternary, &sv, INT, vec![Val::Null, Val::Int(7)]),
        Ok(Val::Int(7))
    );
    assert_eq!(
        run("return null;", &sv, INT, vec![Val::Int(1), Val::Int(1)]),
        Ok(Val::Null)
    );
}

#[test]
fn string_concatenation_uses_java_text() {
    let st = [("s", TEXT), ("d", DOUBLE)];
    assert_eq!(
        run(
            "return s + \":\" + d + 1;",
            &st,
            TEXT,
            vec![Val::Str("x".into()), Val::Double(1e7)]
        ),
        Ok(Val::Str("x:1.0E71".into()))
    );
    assert_eq!(
        run("return s + d;", &st, TEXT, vec![Val::Null, Val::Null]),
        Ok(Val::Str("nullnull".into()))
    );
    assert_eq!(
        run(
            "return s.toUpperCase() + s.length();",
            &st,
            TEXT,
            vec![Val::Str("ab".into()), Val::Null]
        ),
        Ok(Val::Str("AB2".into()))
    );
}

#[test]
fn blocks_locals_and_else() {
    let a = [("a", INT)];
    let body = "int twice = a * 2; if (twice > 10) { return twice; } else { int small = 0; return small; }";
    assert_eq!(run(body, &a, INT, vec![Val::Int(6)]), Ok(Val::Int(12)));
    assert_eq!(run(body, &a, INT, vec![Val::Int(5)]), Ok(Val::Int(0)));
}

#[test]
fn what_java_or_the_subset_refuses() {
    let ab = [("a", INT), ("b", INT)];
    assert!(refused("return a + b;", &ab, LONG).contains("int cannot be converted to Long"));
    assert!(refused("return a;", &ab, TEXT).contains("cannot be converted to String"));
    assert_eq!(
        refused("if (a > 1) return a;", &ab, INT),
        "missing return statement"
    );
    assert_eq!(
        refused("return a; return b;", &ab, INT),
        "unreachable statement"
    );
    assert!(refused("return a == b ? 1 : 2;", &ab, INT).contains("compares references"));
    assert!(refused("return new java.util.ArrayList();", &ab, INT).contains("new"));
    assert!(refused("for (;;) {}", &ab, INT).contains("for"));
    assert!(refused("return c;", &ab, INT).contains("'c'"));
    assert!(refused("return 2147483648;", &ab, INT).contains("too large"));
    assert!(refused("return a.foo();", &ab, INT).contains("foo"));
}

#[test]
fn equals_compares_as_java() {
    let st = [("s", TEXT), ("t", TEXT)];
    let body = "return s.equals(t);";
    let yes = run(
        body,
        &st,
        Ty::Boxed(Prim::Bool),
        vec![Val::Str("a".into()), Val::Str("a".into())],
    );
    assert_eq!(yes, Ok(Val::Bool(true)));
    let no = run(
        body,
        &st,
        Ty::Boxed(Prim::Bool),
        vec![Val::Str("a".into()), Val::Null],
    );
    assert_eq!(no, Ok(Val::Bool(false)));
    let npe = run(
        body,
        &st,
        Ty::Boxed(Prim::Bool),
        vec![Val::Null, Val::Str("a".into())],
    );
    assert_eq!(npe, Err("java.lang.NullPointerException".into()));
    let dd = [("a", DOUBLE), ("b", DOUBLE)];
    let nan = run(
        "return a.equals(b);",
        &dd,
        Ty::Boxed(Prim::Bool),
        vec![Val::Double(f64::NAN), Val::Double(f64::NAN)],
    );
    assert_eq!(nan, Ok(Val::Bool(true)));
    let zeros = run(
        "return a.equals(b);",
        &dd,
        Ty::Boxed(Prim::Bool),
        vec![Val::Double(0.0), Val::Double(-0.0)],
    );
    assert_eq!(zeros, Ok(Val::Bool(false)));
    // Integer.equals(Long) is always false in Java: refused, not guessed.
    assert!(refused(
        "return a.equals(b);",
        &[("a", INT), ("b", LONG)],
        Ty::Boxed(Prim::Bool)
    )
    .contains("equals"));
}
