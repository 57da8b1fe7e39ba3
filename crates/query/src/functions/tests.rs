use super::*;

use rocksandra_data::types::NoUdts;

fn ty(text: &str) -> CqlType {
    CqlType::parse(text, &NoUdts).expect("test type parses")
}

fn call(name: &str, arg_types: &[&str], args: &[Option<Vec<u8>>]) -> Result<Option<Vec<u8>>> {
    let types: Vec<CqlType> = arg_types.iter().map(|t| ty(t)).collect();
    let typed: Vec<Arg<'_>> = types.iter().map(Arg::Typed).collect();
    let random = || 0xdead_beef_u64;
    let ctx = CallContext {
        now_micros: 1_704_164_645_678_000,
        random: &random,
    };
    resolve(name, &typed)?.call(args, &ctx)
}

/// A serialized value, `None` for null.
type Bytes = Option<Vec<u8>>;

fn some(value: Value) -> Option<Vec<u8>> {
    Some(value.to_bytes())
}

fn list(elements: &[Value]) -> Vec<u8> {
    let bytes: Vec<Vec<u8>> = elements.iter().map(Value::to_bytes).collect();
    let refs: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
    build_collection(&refs)
}

#[test]
fn time_uuid_layout() {
    // minTimeuuid('2013-02-02 10:00+0000') from Cassandra's documentation.
    let min = min_timeuuid(1_359_799_200_000);
    assert_eq!(min[6] >> 4, 1);
    assert_eq!(&min[8..], &[0x80; 8]);
    assert_eq!(timeuuid_unix_millis(&min), Ok(1_359_799_200_000));
    let max = max_timeuuid(1_359_799_200_000);
    assert_eq!(&max[8..], &[0x7f; 8]);
    assert_eq!(timeuuid_unix_millis(&max), Ok(1_359_799_200_000));
    assert!(compare(&ty("timeuuid"), &min, &max) == Ordering::Less);
    // The well-known uuid 6bddc89a-5644-11e4-97fc-56847afe9799 is 2014-10-17T21:27:39.541Z.
    let known = [
        0x6b, 0xdd, 0xc8, 0x9a, 0x56, 0x44, 0x11, 0xe4, 0x97, 0xfc, 0x56, 0x84, 0x7a, 0xfe, 0x97,
        0x99,
    ];
    assert_eq!(timeuuid_unix_millis(&known), Ok(1_413_581_259_541));
    let generated = timeuuid_at(1_413_581_259_541_000, 42);
    assert_eq!(timeuuid_unix_millis(&generated), Ok(1_413_581_259_541));
    assert_eq!(generated[8] >> 6, 0b10, "IETF variant");
}

/// Each call of `name` on `types` with `args` gives `expected`.
fn check_calls(cases: Vec<(&str, Vec<&str>, Vec<Bytes>, Bytes)>) {
    for (name, types, args, expected) in cases {
        assert_eq!(call(name, &types, &args), Ok(expected), "{name}({types:?})");
    }
}

#[test]
fn time_and_blob_calls() {
    let ts = |ms: i64| some(Value::Timestamp(ms));
    check_calls(vec![
        (
            "totimestamp",
            vec!["date"],
            vec![some(Value::Date((1 << 31) + 1))],
            ts(86_400_000),
        ),
        (
            "to_unix_timestamp",
            vec!["timestamp"],
            vec![ts(5)],
            some(Value::Bigint(5)),
        ),
        (
            "todate",
            vec!["timestamp"],
            vec![ts(86_400_000 * 2 + 5)],
            some(Value::Date((1 << 31) + 2)),
        ),
        ("todate", vec!["timestamp"], vec![None], None),
        ("todate", vec!["timestamp"], vec![Some(Vec::new())], None),
        ("currenttimestamp", vec![], vec![], ts(1_704_164_645_678)),
        (
            "intasblob",
            vec!["int"],
            vec![some(Value::Int(1))],
            Some(vec![0, 0, 0, 1]),
        ),
        (
            "blob_as_text",
            vec!["blob"],
            vec![Some(b"hi".to_vec())],
            Some(b"hi".to_vec()),
        ),
        (
            "blobasint",
            vec!["blob"],
            vec![Some(Vec::new())],
            Some(Vec::new()),
        ),
    ]);
}

#[test]
fn math_calls() {
    check_calls(vec![
        (
            "abs",
            vec!["int"],
            vec![some(Value::Int(-3))],
            some(Value::Int(3)),
        ),
        (
            "abs",
            vec!["int"],
            vec![some(Value::Int(i32::MIN))],
            some(Value::Int(i32::MIN)),
        ),
        (
            "abs",
            vec!["decimal"],
            vec![some(Value::Decimal {
                unscaled: BigInt::from(-15),
                scale: 1,
            })],
            some(Value::Decimal {
                unscaled: BigInt::from(15),
                scale: 1,
            }),
        ),
        (
            "round",
            vec!["double"],
            vec![some(Value::Double(-2.5))],
            some(Value::Double(-2.0)),
        ),
        (
            "round",
            vec!["float"],
            vec![some(Value::Float(2.5))],
            some(Value::Float(3.0)),
        ),
        (
            "round",
            vec!["decimal"],
            vec![some(Value::Decimal {
                unscaled: BigInt::from(-25),
                scale: 1,
            })],
            some(Value::Decimal {
                unscaled: BigInt::from(-3),
                scale: 0,
            }),
        ),
        (
            "exp",
            vec!["double"],
            vec![some(Value::Double(0.0))],
            some(Value::Double(1.0)),
        ),
        (
            "log10",
            vec!["double"],
            vec![some(Value::Double(1000.0))],
            some(Value::Double(3.0)),
        ),
        (
            "log",
            vec!["int"],
            vec![some(Value::Int(8))],
            some(Value::Int(2)),
        ),
    ]);
}

#[test]
fn collection_calls() {
    check_calls(vec![
        (
            "collection_count",
            vec!["list<int>"],
            vec![Some(list(&[Value::Int(1), Value::Int(1)]))],
            some(Value::Int(2)),
        ),
        (
            "collection_min",
            vec!["set<int>"],
            vec![Some(list(&[Value::Int(-1), Value::Int(4)]))],
            some(Value::Int(-1)),
        ),
        (
            "collection_max",
            vec!["list<text>"],
            vec![Some(list(&[
                Value::Text("b".into()),
                Value::Text("a".into()),
            ]))],
            some(Value::Text("b".into())),
        ),
        (
            "collection_max",
            vec!["list<int>"],
            vec![Some(list(&[]))],
            None,
        ),
        (
            "collection_sum",
            vec!["list<int>"],
            vec![Some(list(&[Value::Int(2), Value::Int(3)]))],
            some(Value::Int(5)),
        ),
        (
            "collection_avg",
            vec!["list<int>"],
            vec![Some(list(&[Value::Int(2), Value::Int(3)]))],
            some(Value::Int(2)),
        ),
        (
            "collection_avg",
            vec!["list<double>"],
            vec![Some(list(&[Value::Double(2.0), Value::Double(3.0)]))],
            some(Value::Double(2.5)),
        ),
        (
            "map_keys",
            vec!["map<int, text>"],
            vec![Some(list(&[
                Value::Int(2),
                Value::Text("b".into()),
                Value::Int(1),
                Value::Text("a".into()),
            ]))],
            Some(list(&[Value::Int(1), Value::Int(2)])),
        ),
        (
            "map_values",
            vec!["map<int, text>"],
            vec![Some(list(&[Value::Int(1), Value::Text("a".into())]))],
            Some(list(&[Value::Text("a".into())])),
        ),
    ]);
}

#[test]
fn resolution_errors() {
    let cases: Vec<(&str, Vec<&str>, &str)> = vec![
        ("nosuch", vec![], "Unknown function nosuch called"),
        ("token", vec!["int"], "Unknown function token called"),
        ("dateof", vec!["timeuuid"], "Unknown function dateof called"),
        ("now", vec!["int"], "Invalid number of arguments in call to function system.now: 0 required but 1 provided"),
        ("mintimeuuid", vec!["text"], "Type error: text cannot be passed as argument 0 of function system.mintimeuuid of type timestamp"),
        (
            "totimestamp",
            vec!["text"],
            "Invalid call to function system.totimestamp, none of its type signatures match (known type signatures: system.totimestamp : (timeuuid) -> timestamp, system.totimestamp : (date) -> timestamp)",
        ),
        ("map_keys", vec!["list<int>"], "Function system.map_keys requires a map argument, but found argument list<int> of type list<int>"),
        ("collection_sum", vec!["list<text>"], "Function system.collection_sum requires a numeric set/list argument, but found argument list<text> of type list<text>"),
    ];
    for (name, types, expected) in cases {
        let types: Vec<CqlType> = types.iter().map(|t| ty(t)).collect();
        let typed: Vec<Arg<'_>> = types.iter().map(Arg::Typed).collect();
        assert_eq!(
            resolve(name, &typed),
            Err(QueryError::invalid(expected)),
            "{name}"
        );
    }
    assert_eq!(
        call("blobasint", &["blob"], &[Some(vec![1, 2])]),
        Err(QueryError::invalid(
            "In call to function system.blobasint, value 0x0102 is not a valid binary representation for type int"
        ))
    );
}

#[test]
#[allow(clippy::too_many_lines, reason = "one table of cases")]
fn casts() {
    let cases: Vec<(&str, Value, &str, Option<Vec<u8>>)> = vec![
        ("int", Value::Int(300), "tinyint", some(Value::Tinyint(44))),
        (
            "double",
            Value::Double(1e10),
            "int",
            some(Value::Int(i32::MAX)),
        ),
        (
            "double",
            Value::Double(300.7),
            "tinyint",
            some(Value::Tinyint(44)),
        ),
        (
            "double",
            Value::Double(1.5),
            "decimal",
            some(Value::Decimal {
                unscaled: BigInt::from(15),
                scale: 1,
            }),
        ),
        (
            "double",
            Value::Double(100.0),
            "decimal",
            some(Value::Decimal {
                unscaled: BigInt::from(1000),
                scale: 1,
            }),
        ),
        (
            "decimal",
            Value::Decimal {
                unscaled: BigInt::from(-275),
                scale: 2,
            },
            "varint",
            some(Value::Varint(BigInt::from(-2))),
        ),
        (
            "decimal",
            Value::Decimal {
                unscaled: BigInt::from(275),
                scale: 2,
            },
            "int",
            some(Value::Int(2)),
        ),
        (
            "varint",
            Value::Varint(BigInt::from(1) << 40),
            "int",
            some(Value::Int(0)),
        ),
        (
            "counter",
            Value::Counter(7),
            "bigint",
            some(Value::Bigint(7)),
        ),
        ("int", Value::Int(7), "text", Some(b"7".to_vec())),
        ("double", Value::Double(1.0), "text", Some(b"1.0".to_vec())),
        (
            "float",
            Value::Float(1e10),
            "ascii",
            Some(b"1.0E10".to_vec()),
        ),
        (
            "boolean",
            Value::Boolean(true),
            "text",
            Some(b"true".to_vec()),
        ),
        (
            "timestamp",
            Value::Timestamp(1_704_164_645_123),
            "text",
            Some(b"2024-01-02T03:04:05.123Z".to_vec()),
        ),
        (
            "date",
            Value::Date((1 << 31) + 1),
            "text",
            Some(b"1970-01-02".to_vec()),
        ),
        (
            "timestamp",
            Value::Timestamp(86_400_000 + 1),
            "date",
            some(Value::Date((1 << 31) + 1)),
        ),
        (
            "date",
            Value::Date((1 << 31) + 1),
            "timestamp",
            some(Value::Timestamp(86_400_000)),
        ),
        ("int", Value::Int(3), "int", some(Value::Int(3))),
    ];
    for (from, value, to, expected) in cases {
        let bytes = value.to_bytes();
        assert_eq!(
            cast(Some(&bytes), &ty(from), &ty(to)),
            Ok(expected),
            "{from} -> {to}"
        );
    }
    assert_eq!(cast(None, &ty("int"), &ty("text")), Ok(None));
    assert_eq!(cast(Some(&[]), &ty("int"), &ty("bigint")), Ok(None));
    assert!(!can_cast(&ty("text"), &ty("int")));
    assert!(!can_cast(&ty("int"), &ty("counter")));
    assert!(!can_cast(&ty("blob"), &ty("text")));
    assert_eq!(
        cast(Some(&[]), &ty("blob"), &ty("int")),
        Err(QueryError::invalid("blob cannot be cast to int"))
    );
}

#[test]
fn functions_are_named_as_called_and_marked_deterministic() {
    let timestamp = ty("timestamp");
    let f = resolve("to_date", &[Arg::Typed(&timestamp)]).expect("to_date resolves");
    assert_eq!(f.name(), "to_date");
    assert_eq!(f.return_type(), &ty("date"));
    assert!(f.is_deterministic());
    assert_eq!(f.signature(), "system.to_date : (timestamp) -> date");
    assert!(!resolve("now", &[])
        .expect("now resolves")
        .is_deterministic());
    assert!(exists("blobasvarchar"));
    assert!(exists("collection_avg"));
    assert!(!exists("blobasblob"));
}
