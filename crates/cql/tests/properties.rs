//! Property tests: the parser never panics on arbitrary text or token soups,
//! and whatever it accepts survives print -> parse unchanged.

use proptest::prelude::*;
use rocksandra_cql::{parse_script, parse_statement};

/// Words and symbols that make up CQL, so random soups often get deep into
/// the grammar instead of failing on the first token.
const VOCABULARY: &[&str] = &[
    "SELECT",
    "INSERT",
    "UPDATE",
    "DELETE",
    "FROM",
    "WHERE",
    "AND",
    "INTO",
    "VALUES",
    "SET",
    "IF",
    "NOT",
    "EXISTS",
    "USING",
    "TTL",
    "TIMESTAMP",
    "BEGIN",
    "BATCH",
    "APPLY",
    "UNLOGGED",
    "CREATE",
    "ALTER",
    "DROP",
    "TABLE",
    "KEYSPACE",
    "TYPE",
    "INDEX",
    "ON",
    "WITH",
    "PRIMARY",
    "KEY",
    "CLUSTERING",
    "ORDER",
    "BY",
    "ASC",
    "DESC",
    "LIMIT",
    "PER",
    "PARTITION",
    "ALLOW",
    "FILTERING",
    "GROUP",
    "JSON",
    "DISTINCT",
    "AS",
    "IN",
    "CONTAINS",
    "LIKE",
    "IS",
    "NULL",
    "TOKEN",
    "CAST",
    "COUNT",
    "WRITETIME",
    "ROLE",
    "USER",
    "GRANT",
    "REVOKE",
    "LIST",
    "ALL",
    "DESCRIBE",
    "MATERIALIZED",
    "VIEW",
    "FUNCTION",
    "AGGREGATE",
    "ANN",
    "OF",
    "frozen",
    "list",
    "map",
    "set",
    "tuple",
    "vector",
    "int",
    "text",
    "a",
    "b",
    "ks",
    "t",
    "\"Q\"",
    "1",
    "-1",
    "1.5",
    "'s'",
    "$$b$$",
    "0xff",
    "1h",
    "true",
    "NaN",
    "-Infinity",
    "?",
    ":n",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ".",
    "..",
    ";",
    ":",
    "=",
    "<",
    ">",
    "<=",
    ">=",
    "!=",
    "+",
    "-",
    "*",
    "/",
    "%",
    "+=",
    "-=",
    "<",
    ">",
];

fn check_round_trip(text: &str) {
    let Ok(parsed) = parse_statement(text) else {
        return;
    };
    let printed = parsed.to_string();
    match parse_statement(&printed) {
        Ok(reparsed) => assert_eq!(reparsed, parsed, "{text:?} printed as {printed:?}"),
        Err(e) => panic!("{text:?} printed as {printed:?} which fails: {e}"),
    }
}

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(VOCABULARY), 0..40).prop_map(|t| t.join(" "))
}

/// A valid prefix keeps the soup inside one statement's grammar for longer.
fn prefixed_soup() -> impl Strategy<Value = String> {
    let prefixes = prop::sample::select(
        &[
            "SELECT a FROM t WHERE",
            "SELECT",
            "INSERT INTO t (a, b) VALUES (",
            "UPDATE t SET a =",
            "UPDATE t SET",
            "DELETE FROM t WHERE a",
            "CREATE TABLE t (a",
            "SELECT * FROM t WHERE a =",
            "BEGIN BATCH",
        ][..],
    );
    (prefixes, token_soup()).prop_map(|(p, s)| format!("{p} {s}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        let _ = parse_script(&text);
        check_round_trip(&text);
    }

    #[test]
    fn token_soups_never_panic_and_round_trip(text in token_soup()) {
        let _ = parse_script(&text);
        check_round_trip(&text);
    }

    #[test]
    fn prefixed_soups_never_panic_and_round_trip(text in prefixed_soup()) {
        let _ = parse_script(&text);
        check_round_trip(&text);
    }
}

/// Random valid terms, built from the grammar so that nesting, precedence and
/// literal forms get exercised together.
fn term() -> impl Strategy<Value = String> {
    let leaf = prop::sample::select(
        &[
            "1",
            "-1",
            "- 1",
            "1.5",
            "-2e3",
            "'s'",
            "'it''s'",
            "$$x$$",
            "0xab",
            "1h30m",
            "-1d",
            "P2W",
            "true",
            "null",
            "NaN",
            "-Infinity",
            "?",
            ":n",
            "now()",
            "ks.f()",
            "123e4567-e89b-12d3-a456-426655440000",
            "{}",
            "[]",
        ][..],
    )
    .prop_map(str::to_string);
    leaf.prop_recursive(4, 32, 4, |inner| {
        let items = prop::collection::vec(inner.clone(), 1..4).prop_map(|v| v.join(", "));
        prop_oneof![
            items.clone().prop_map(|s| format!("[{s}]")),
            items.clone().prop_map(|s| format!("{{{s}}}")),
            items.clone().prop_map(|s| format!("({s})")),
            items.prop_map(|s| format!("f({s})")),
            (inner.clone(), inner.clone()).prop_map(|(k, v)| format!("{{{k}: {v}}}")),
            inner.clone().prop_map(|v| format!("{{field: {v}}}")),
            inner
                .clone()
                .prop_map(|v| format!("(frozen<list<int>>) ({v})")),
            inner.clone().prop_map(|v| format!("- {v}")),
            (
                inner.clone(),
                prop::sample::select(&["+", "-", "*", "/", "%"][..]),
                inner
            )
                .prop_map(|(a, op, b)| format!("{a} {op} {b}")),
        ]
    })
}

/// Random valid selectors: columns, their parts, calls and arithmetic.
fn selector() -> impl Strategy<Value = String> {
    let leaf = prop::sample::select(
        &[
            "a",
            "\"B\"",
            "key",
            "1",
            "'x'",
            "?",
            "count(*)",
            "writetime(a)",
            "ttl(a)",
            "token(a, b)",
            "CAST(a AS text)",
            "(int) a",
            "m['k']",
            "s[1..2]",
            "s[..?]",
            "u.f",
        ][..],
    )
    .prop_map(str::to_string);
    leaf.prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            (
                inner.clone(),
                prop::sample::select(&["+", "-", "*", "/"][..]),
                inner.clone()
            )
                .prop_map(|(a, op, b)| format!("{a} {op} {b}")),
            inner.clone().prop_map(|v| format!("({v})")),
            inner.clone().prop_map(|v| format!("- {v}")),
            inner.clone().prop_map(|v| format!("({v})[1]")),
            inner.clone().prop_map(|v| format!("(text) ({v})")),
            prop::collection::vec(inner, 1..3).prop_map(|v| format!("f({})", v.join(", "))),
        ]
    })
}

fn must_round_trip(text: &str) {
    let parsed = parse_statement(text).unwrap_or_else(|e| panic!("{text:?} failed: {e}"));
    let printed = parsed.to_string();
    let reparsed = parse_statement(&printed).unwrap_or_else(|e| panic!("{printed:?} failed: {e}"));
    assert_eq!(reparsed, parsed, "{text:?} printed as {printed:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn generated_statements_round_trip(
        t1 in term(),
        t2 in term(),
        s1 in selector(),
        s2 in selector(),
    ) {
        must_round_trip(&format!("SELECT {s1}, {s2} AS x FROM t WHERE a = {t1} AND b IN ({t2})"));
        must_round_trip(&format!("INSERT INTO t (a, b) VALUES ({t1}, {t2}) USING TTL ?"));
        must_round_trip(&format!("UPDATE t SET a = {t1}, l = {t2} + l WHERE k = 1 IF c = {t2}"));
    }
}
