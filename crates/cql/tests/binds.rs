//! Bind markers: their count, order, names and what they bind.

use rocksandra_cql::ast::{BindReceiver, Ident, NestedStep};
use rocksandra_cql::parse_statement;

fn receivers(text: &str) -> Vec<(usize, Option<String>, BindReceiver)> {
    let parsed = parse_statement(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    parsed
        .bind_variables
        .into_iter()
        .map(|b| (b.index, b.name.map(|n| n.as_str().to_string()), b.receiver))
        .collect()
}

fn col(name: &str) -> BindReceiver {
    BindReceiver::Column(Ident::new(name))
}

#[test]
fn select_markers_are_ordered_and_located() {
    let got = receivers(
        "SELECT * FROM t WHERE k = ? AND c IN ? AND (a, b) > (?, :x) AND token(k) > ? LIMIT ?",
    );
    let tuple_item = |i| BindReceiver::Nested {
        parent: Box::new(BindReceiver::Columns(vec![
            Ident::new("a"),
            Ident::new("b"),
        ])),
        step: NestedStep::TupleItem(i),
    };
    assert_eq!(
        got,
        vec![
            (0, None, col("k")),
            (1, None, BindReceiver::InValues(Box::new(col("c")))),
            (2, None, tuple_item(0)),
            (3, Some("x".into()), tuple_item(1)),
            (4, None, BindReceiver::Token(vec![Ident::new("k")])),
            (5, None, BindReceiver::Limit),
        ]
    );
}

#[test]
fn modification_markers_know_their_columns() {
    let got = receivers("INSERT INTO t (a, b) VALUES (?, [?]) USING TTL ? AND TIMESTAMP ?");
    assert_eq!(got[0].2, col("a"));
    assert_eq!(
        got[1].2,
        BindReceiver::Nested {
            parent: Box::new(col("b")),
            step: NestedStep::ListItem
        }
    );
    assert_eq!(got[2].2, BindReceiver::Ttl);
    assert_eq!(got[3].2, BindReceiver::Timestamp);

    let got = receivers("UPDATE t SET m[?] = ?, u.f = ?, c = c + ? WHERE k = ? IF v = ?");
    let receivers_only: Vec<_> = got.into_iter().map(|(_, _, r)| r).collect();
    assert_eq!(
        receivers_only,
        vec![
            BindReceiver::ElementKey(Ident::new("m")),
            BindReceiver::ElementValue(Ident::new("m")),
            BindReceiver::Field {
                column: Ident::new("u"),
                field: Ident::new("f")
            },
            col("c"),
            col("k"),
            col("v"),
        ]
    );
}

#[test]
fn batch_markers_are_numbered_across_statements() {
    let got = receivers(
        "BEGIN BATCH INSERT INTO t (a) VALUES (?); UPDATE t SET b = ? WHERE a = ?; APPLY BATCH",
    );
    let indexes: Vec<usize> = got.iter().map(|(i, _, _)| *i).collect();
    assert_eq!(indexes, vec![0, 1, 2]);
    assert_eq!(got[2].2, col("a"));
}

#[test]
fn hints_and_json_give_types() {
    let got = receivers("INSERT INTO t JSON ?");
    assert_eq!(got[0].2, BindReceiver::Json);
    let got = receivers("SELECT * FROM t WHERE a = (int) ?");
    assert!(matches!(got[0].2, BindReceiver::Hinted(_)));
}

#[test]
fn speculative_parses_do_not_leak_markers() {
    // `json` is tried as a keyword first; the failed attempt must not keep its markers.
    let got = receivers("SELECT json, (int) ? FROM t WHERE a = ?");
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].0, 1);
}

#[test]
fn subtractions_and_selector_elements_say_what_they_bind() {
    let got = receivers("UPDATE t SET m = m - ?, s -= ?, l = l + ? WHERE k = 1");
    let receivers_only: Vec<_> = got.into_iter().map(|(_, _, r)| r).collect();
    assert_eq!(
        receivers_only,
        vec![
            BindReceiver::Subtracted(Ident::new("m")),
            BindReceiver::Subtracted(Ident::new("s")),
            col("l"),
        ]
    );
    let got = receivers("SELECT m[?], u.f[?..] FROM t");
    assert_eq!(got[0].2, BindReceiver::ElementKey(Ident::new("m")));
    assert_eq!(
        got[1].2,
        BindReceiver::Nested {
            parent: Box::new(BindReceiver::Field {
                column: Ident::new("u"),
                field: Ident::new("f")
            }),
            step: NestedStep::ElementKey
        }
    );
}
