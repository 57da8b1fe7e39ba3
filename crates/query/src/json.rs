//! JSON values: `INSERT ... JSON`, `fromJson()` (JSON text to a value of a
//! CQL type, as Cassandra's `AbstractType.fromJSONObject`) and the column
//! names of JSON documents.

use num_bigint::BigInt;
use rocksandra_data::types::{CqlType, NativeType};
use rocksandra_data::Value;
use serde_json::Value as Json;

use crate::term::literal::from_string;

/// Most nesting accepted in a JSON document (serde_json's own limit is 128).
pub const JSON_DEPTH_MAX: usize = 64;

/// Converts a JSON value to the serialized value of `ty`; `Ok(None)` is null.
/// Errors are Cassandra's marshal texts, without the column prefix.
pub fn from_json(ty: &CqlType, json: &Json, now_millis: i64) -> Result<Option<Vec<u8>>, String> {
    from_json_at(ty, json, now_millis, 0)
}

fn from_json_at(
    ty: &CqlType,
    json: &Json,
    now_millis: i64,
    depth: usize,
) -> Result<Option<Vec<u8>>, String> {
    if depth > JSON_DEPTH_MAX {
        return Err("JSON value nested too deeply".into());
    }
    if json.is_null() {
        return Ok(None);
    }
    let native = |t: NativeType, text: &str| from_string(t, text, now_millis);
    Ok(Some(match ty.unfrozen() {
        CqlType::Native(t) => match (t, json) {
            (NativeType::Text | NativeType::Ascii, Json::String(s)) => native(*t, s)?,
            (NativeType::Text | NativeType::Ascii, other) => {
                return Err(format!(
                    "Expected a UTF-8 string, but got a {}: {other}",
                    kind(other)
                ))
            }
            (NativeType::Boolean, Json::Bool(b)) => vec![u8::from(*b)],
            (NativeType::Boolean, Json::String(s)) => native(*t, s)?,
            (
                NativeType::Int
                | NativeType::Bigint
                | NativeType::Smallint
                | NativeType::Tinyint
                | NativeType::Varint
                | NativeType::Counter
                | NativeType::Float
                | NativeType::Double
                | NativeType::Decimal
                | NativeType::Timestamp
                | NativeType::Date
                | NativeType::Time,
                Json::Number(n),
            ) => native(*t, &n.to_string())?,
            (_, Json::String(s)) => native(*t, s)?,
            (_, other) => {
                return Err(format!(
                    "Expected a string representation of a {} value, but got a {}: {other}",
                    t.name(),
                    kind(other)
                ))
            }
        },
        CqlType::List(e) | CqlType::Set(e) | CqlType::Vector(e, _) => {
            let Json::Array(items) = json else {
                return Err(format!("Expected a list, but got a {}: {json}", kind(json)));
            };
            let mut values = Vec::new();
            for item in items {
                let Some(bytes) = from_json_at(e, item, now_millis, depth + 1)? else {
                    return Err("Invalid null element in collection".into());
                };
                values.push(Value::deserialize(e, &bytes).map_err(|e| e.to_string())?);
            }
            match ty.unfrozen() {
                CqlType::List(_) => Value::List(values).to_bytes(),
                CqlType::Vector(_, n) => {
                    if values.len() != *n as usize {
                        return Err(format!(
                            "Invalid vector literal: expected {n} elements but got {}",
                            values.len()
                        ));
                    }
                    Value::Vector(values).to_bytes()
                }
                _ => {
                    let mut encoded: Vec<Vec<u8>> = values.iter().map(Value::to_bytes).collect();
                    encoded.sort_by(|a, b| rocksandra_data::value::compare(e, a, b));
                    encoded.dedup();
                    let sorted = encoded
                        .iter()
                        .map(|b| Value::deserialize(e, b))
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(|e| e.to_string())?;
                    Value::Set(sorted).to_bytes()
                }
            }
        }
        CqlType::Map(k, v) => {
            let Json::Object(entries) = json else {
                return Err(format!("Expected a map, but got a {}: {json}", kind(json)));
            };
            let mut pairs: Vec<(Vec<u8>, Value)> = Vec::new();
            for (key_text, value) in entries {
                // Keys are strings; non-text keys hold their JSON text.
                let key_json = match k.unfrozen() {
                    CqlType::Native(NativeType::Text | NativeType::Ascii) => {
                        Json::String(key_text.clone())
                    }
                    _ => serde_json::from_str(key_text).unwrap_or(Json::String(key_text.clone())),
                };
                let Some(kb) = from_json_at(k, &key_json, now_millis, depth + 1)? else {
                    return Err("Invalid null key in map".into());
                };
                let Some(vb) = from_json_at(v, value, now_millis, depth + 1)? else {
                    return Err("Invalid null value in map".into());
                };
                let vv = Value::deserialize(v, &vb).map_err(|e| e.to_string())?;
                pairs.retain(|(existing, _)| existing != &kb);
                pairs.push((kb, vv));
            }
            pairs.sort_by(|a, b| rocksandra_data::value::compare(k, &a.0, &b.0));
            let entries = pairs
                .into_iter()
                .map(|(kb, vv)| Ok((Value::deserialize(k, &kb).map_err(|e| e.to_string())?, vv)))
                .collect::<Result<Vec<_>, String>>()?;
            Value::Map(entries).to_bytes()
        }
        CqlType::Tuple(types) => {
            let Json::Array(items) = json else {
                return Err(format!(
                    "Expected a tuple, but got a {}: {json}",
                    kind(json)
                ));
            };
            if items.len() > types.len() {
                return Err(format!(
                    "Tuple contains extra items (expected {}): {json}",
                    types.len()
                ));
            }
            let mut fields = Vec::new();
            for (t, item) in types.iter().zip(items) {
                fields.push(match from_json_at(t, item, now_millis, depth + 1)? {
                    Some(b) => Some(Value::deserialize(t, &b).map_err(|e| e.to_string())?),
                    None => None,
                });
            }
            Value::Tuple(fields).to_bytes()
        }
        CqlType::Udt(u) => {
            let Json::Object(entries) = json else {
                return Err(format!("Expected a map, but got a {}: {json}", kind(json)));
            };
            let mut fields: Vec<Option<Value>> = vec![None; u.fields.len()];
            for (name, value) in entries {
                let name = column_name(name);
                let Some(i) = u.fields.iter().position(|(n, _)| *n == name) else {
                    return Err(format!(
                        "Unknown field '{name}' in value of user defined type {}",
                        u.name
                    ));
                };
                let t = &u.fields[i].1;
                fields[i] = match from_json_at(t, value, now_millis, depth + 1)? {
                    Some(b) => Some(Value::deserialize(t, &b).map_err(|e| e.to_string())?),
                    None => None,
                };
            }
            Value::Udt(fields).to_bytes()
        }
        CqlType::Custom(_) => match json {
            Json::String(s) => hex_blob(s)?,
            other => {
                return Err(format!(
                    "Expected a string, but got a {}: {other}",
                    kind(other)
                ))
            }
        },
        CqlType::Frozen(_) => return Err("unexpected nested frozen type".into()),
    }))
}

fn hex_blob(s: &str) -> Result<Vec<u8>, String> {
    let hex = s
        .strip_prefix("0x")
        .ok_or_else(|| format!("cannot parse '{s}' as hex bytes"))?;
    let bytes = BigInt::parse_bytes(hex.as_bytes(), 16)
        .ok_or_else(|| format!("cannot parse '{s}' as hex bytes"))?;
    let (_, mut out) = bytes.to_bytes_be();
    while out.len() < hex.len() / 2 {
        out.insert(0, 0);
    }
    Ok(out)
}

fn kind(json: &Json) -> &'static str {
    match json {
        Json::Null => "null",
        Json::Bool(_) => "Boolean",
        Json::Number(n) if n.is_f64() => "Double",
        Json::Number(_) => "Integer",
        Json::String(_) => "String",
        Json::Array(_) => "ArrayList",
        Json::Object(_) => "LinkedHashMap",
    }
}

/// A column or field name as written in a JSON document: `"\"Name\""` is
/// the case-sensitive `Name`, anything else is lower-cased.
pub fn column_name(key: &str) -> String {
    if key.len() >= 2 && key.starts_with('"') && key.ends_with('"') {
        key[1..key.len() - 1].replace("\"\"", "\"")
    } else {
        key.to_lowercase()
    }
}

/// Parses a JSON document, with Cassandra's message on failure.
pub fn parse(text: &str) -> Result<Json, String> {
    serde_json::from_str(text)
        .map_err(|e| format!("Could not decode JSON string as a map: {e}. (String was: {text})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rocksandra_data::types::NoUdts;

    fn ty(text: &str) -> CqlType {
        CqlType::parse(text, &NoUdts).expect("type")
    }

    #[test]
    fn documents_convert_like_cassandra() {
        let cases: &[(&str, &str, Result<Value, &str>)] = &[
            ("int", "5", Ok(Value::Int(5))),
            ("int", "\"7\"", Ok(Value::Int(7))),
            ("bigint", "\"x\"", Err("Unable to make long from 'x'")),
            ("text", "\"a\\\"b\"", Ok(Value::Text("a\"b".into()))),
            ("boolean", "true", Ok(Value::Boolean(true))),
            (
                "list<int>",
                "[1, 2]",
                Ok(Value::List(vec![Value::Int(1), Value::Int(2)])),
            ),
            (
                "set<int>",
                "[2, 1, 2]",
                Ok(Value::Set(vec![Value::Int(1), Value::Int(2)])),
            ),
            (
                "map<int, text>",
                "{\"2\": \"b\", \"1\": \"a\"}",
                Ok(Value::Map(vec![
                    (Value::Int(1), Value::Text("a".into())),
                    (Value::Int(2), Value::Text("b".into())),
                ])),
            ),
            ("text", "5", Err("Expected a UTF-8 string")),
        ];
        for (t, json, expected) in cases {
            let ty = ty(t);
            let parsed = parse(json).expect("json");
            let got = from_json(&ty, &parsed, 0);
            match expected {
                Ok(v) => {
                    let bytes = got.expect("converts").expect("not null");
                    assert_eq!(
                        &Value::deserialize(&ty, &bytes).expect("valid"),
                        v,
                        "{t} {json}"
                    );
                }
                Err(prefix) => {
                    let e = got.expect_err("fails");
                    assert!(e.starts_with(prefix), "{t} {json}: {e}");
                }
            }
        }
        assert_eq!(column_name("\"Key\""), "Key");
        assert_eq!(column_name("Key"), "key");
    }

    proptest! {
        /// Any JSON text against common types: a value valid for the type, an
        /// error, or null; never a panic.
        #[test]
        fn any_document_converts_or_fails(text in ".{0,40}", pick in 0usize..6) {
            let types = ["int", "text", "list<int>", "map<text, int>", "frozen<tuple<int, text>>", "timestamp"];
            let ty = ty(types[pick]);
            if let Ok(json) = parse(&text) {
                if let Ok(Some(bytes)) = from_json(&ty, &json, 0) {
                    prop_assert!(rocksandra_data::value::validate(&ty, &bytes).is_ok());
                }
            }
        }
    }
}
