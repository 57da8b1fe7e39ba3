//! JSON values: `INSERT ... JSON`, `fromJson()` (JSON text to a value of a
//! CQL type, as Cassandra's `AbstractType.fromJSONObject`) and the column
//! names of JSON documents.
//!
//! Cassandra reads JSON with Jackson into Java objects and converts those:
//! what a type accepts depends on the Java class Jackson picked (an integer
//! literal is an `Integer`, a `Long` or a `BigInteger` by size, any number
//! with a fraction or an exponent a `Double`), and its messages print the
//! class and the object's `toString()`. [`Json`] keeps what that needs.

use num_bigint::BigInt;
use rocksandra_data::types::{CqlType, NativeType};
use rocksandra_data::Value;

use crate::term::literal::from_string;

/// Most nesting accepted in a JSON document.
pub const JSON_DEPTH_MAX: usize = 64;

/// A JSON value as Jackson hands it to Cassandra.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    /// An integer literal (`Integer`, `Long` or `BigInteger`).
    Int(BigInt),
    /// A literal with a fraction or an exponent (`Double`; may be infinite).
    Double(f64),
    Str(String),
    /// `ArrayList`.
    List(Vec<Json>),
    /// `LinkedHashMap`: keys in first-seen order, the last value of a
    /// repeated key.
    Map(Vec<(String, Json)>),
}

impl Json {
    /// The simple name of the Java class Jackson gives the value.
    pub fn class(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "Boolean",
            Json::Int(i) if i32::try_from(i).is_ok() => "Integer",
            Json::Int(i) if i64::try_from(i).is_ok() => "Long",
            Json::Int(_) => "BigInteger",
            Json::Double(_) => "Double",
            Json::Str(_) => "String",
            Json::List(_) => "ArrayList",
            Json::Map(_) => "LinkedHashMap",
        }
    }

    fn qualified_class(&self) -> &'static str {
        match self.class() {
            "Boolean" => "java.lang.Boolean",
            "Integer" => "java.lang.Integer",
            "Long" => "java.lang.Long",
            "BigInteger" => "java.math.BigInteger",
            "Double" => "java.lang.Double",
            "String" => "java.lang.String",
            "ArrayList" => "java.util.ArrayList",
            "LinkedHashMap" => "java.util.LinkedHashMap",
            _ => "null",
        }
    }

    /// Java's `toString()` of the value: `[1, a]`, `{a=1}`, `1.0E-7`.
    pub fn java(&self) -> String {
        match self {
            Json::Null => "null".into(),
            Json::Bool(b) => b.to_string(),
            Json::Int(i) => i.to_string(),
            Json::Double(d) => rocksandra_data::value::java_double(*d),
            Json::Str(s) => s.clone(),
            Json::List(items) => format!(
                "[{}]",
                items.iter().map(Json::java).collect::<Vec<_>>().join(", ")
            ),
            Json::Map(entries) => format!(
                "{{{}}}",
                entries
                    .iter()
                    .map(|(k, v)| format!("{k}={}", v.java()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    fn as_f64(&self) -> Option<f64> {
        match self {
            Json::Int(i) => Some(i.to_string().parse().unwrap_or(f64::NAN)),
            Json::Double(d) => Some(*d),
            _ => None,
        }
    }
}

/// Why a JSON value does not convert: Cassandra's `MarshalException`
/// (printed after `Error decoding JSON value for <column>: `) or an error
/// it lets through unprefixed.
#[derive(Clone, Debug, PartialEq)]
pub enum JsonValueError {
    Marshal(String),
    Invalid(String),
}

impl std::fmt::Display for JsonValueError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JsonValueError::Marshal(m) | JsonValueError::Invalid(m) => f.write_str(m),
        }
    }
}

impl From<String> for JsonValueError {
    fn from(m: String) -> Self {
        JsonValueError::Marshal(m)
    }
}

type ValueResult<T> = Result<T, JsonValueError>;

/// Converts a JSON value to the serialized value of `ty`; `Ok(None)` is null.
pub fn from_json(ty: &CqlType, json: &Json, now_millis: i64) -> ValueResult<Option<Vec<u8>>> {
    from_json_at(ty, json, now_millis, 0)
}

fn expected(what: &str, json: &Json) -> JsonValueError {
    JsonValueError::Marshal(format!(
        "Expected {what}, but got a {}: {}",
        json.class(),
        json.java()
    ))
}

/// A collection, tuple or UDT given as a JSON string holds the JSON text
/// of the value (`JsonUtils.decodeJson`).
fn decode_nested(json: &Json) -> ValueResult<std::borrow::Cow<'_, Json>> {
    match json {
        Json::Str(s) => parse(s).map(std::borrow::Cow::Owned).map_err(|e| {
            JsonValueError::Marshal(format!("Error decoding JSON string: {}", e.message))
        }),
        other => Ok(std::borrow::Cow::Borrowed(other)),
    }
}

fn from_json_at(
    ty: &CqlType,
    json: &Json,
    now_millis: i64,
    depth: usize,
) -> ValueResult<Option<Vec<u8>>> {
    if depth > JSON_DEPTH_MAX {
        return Err(JsonValueError::Marshal(
            "JSON value nested too deeply".into(),
        ));
    }
    if *json == Json::Null {
        return Ok(None);
    }
    use NativeType as N;
    Ok(Some(match ty.unfrozen() {
        CqlType::Native(t) => native_from_json(*t, json, now_millis)?,
        CqlType::List(e) | CqlType::Set(e) | CqlType::Vector(e, _) => {
            list_from_json(ty, e, json, now_millis, depth)?
        }
        CqlType::Map(k, v) => map_from_json(k, v, json, now_millis, depth)?,
        CqlType::Tuple(types) => tuple_from_json(types, json, now_millis, depth)?,
        CqlType::Udt(u) => return udt_from_json(ty, u, json, now_millis, depth),
        CqlType::Custom(_) => match json {
            Json::Str(s) => {
                let hex = s.strip_prefix("0x").unwrap_or(s);
                from_string(N::Blob, hex, now_millis)?
            }
            other => return Err(expected("a string", other)),
        },
        CqlType::Frozen(_) => {
            return Err(JsonValueError::Marshal(
                "unexpected nested frozen type".into(),
            ))
        }
    }))
}

/// A native type's value from JSON, as Cassandra's types accept it (numbers
/// and blobs have their own functions).
fn native_from_json(t: NativeType, json: &Json, now_millis: i64) -> ValueResult<Vec<u8>> {
    let native = |t: NativeType, text: &str| {
        from_string(t, text, now_millis).map_err(JsonValueError::Marshal)
    };
    use NativeType as N;
    Ok(match (t, json) {
        (N::Text, Json::Str(s)) | (N::Ascii, Json::Str(s)) => native(t, s)?,
        (N::Text, other) => return Err(expected("a UTF-8 string", other)),
        (N::Ascii, other) => return Err(expected("an ascii string", other)),
        (N::Boolean, Json::Bool(b)) => vec![u8::from(*b)],
        (N::Boolean, Json::Str(s)) => native(t, s)?,
        (N::Boolean, other) => return Err(expected("a boolean value", other)),
        (
            N::Int
            | N::Bigint
            | N::Counter
            | N::Smallint
            | N::Tinyint
            | N::Varint
            | N::Decimal
            | N::Double
            | N::Float,
            _,
        ) => number_from_json(t, json, now_millis)?,
        (N::Blob, _) => blob_from_json(json, now_millis)?,
        (N::Timestamp, Json::Int(i)) if i32::try_from(i).is_err() => match i64::try_from(i) {
            Ok(ms) => ms.to_be_bytes().to_vec(),
            Err(_) => {
                return Err(expected(
                    "a long or a datestring representation of a timestamp value",
                    json,
                ))
            }
        },
        (N::Timestamp, Json::Str(s)) => native(t, s)?,
        (N::Timestamp, other) => {
            return Err(expected(
                "a long or a datestring representation of a timestamp value",
                other,
            ))
        }
        // Duration.from throws an InvalidRequestException, which
        // Cassandra does not prefix with the column.
        (N::Duration, Json::Str(s)) => {
            from_string(t, s, now_millis).map_err(JsonValueError::Invalid)?
        }
        (_, Json::Str(s)) => native(t, s)?,
        (N::Date, other) => return Err(expected("a string representation of a date value", other)),
        (N::Time, other) => return Err(expected("a string representation of a time value", other)),
        (N::Uuid, other) => return Err(expected("a string representation of a uuid", other)),
        (N::Timeuuid, other) => {
            return Err(expected("a string representation of a timeuuid", other))
        }
        (N::Inet, other) => {
            return Err(expected("a string representation of an inet value", other))
        }
        (N::Duration, other) => {
            return Err(expected("a string representation of a duration", other))
        }
    })
}

/// A number column's value from JSON: a string, or a JSON number its type
/// can hold.
fn number_from_json(t: NativeType, json: &Json, now_millis: i64) -> ValueResult<Vec<u8>> {
    let native = |t: NativeType, text: &str| {
        from_string(t, text, now_millis).map_err(JsonValueError::Marshal)
    };
    use NativeType as N;
    Ok(match (t, json) {
        (N::Int, Json::Str(s)) => native(t, s)?,
        (N::Int, Json::Int(i)) if i32::try_from(i).is_ok() => native(t, &i.to_string())?,
        (N::Int, other) => return Err(expected("an int value", other)),
        (N::Bigint | N::Counter, Json::Str(s)) => native(t, s)?,
        (N::Bigint | N::Counter, Json::Int(i)) if i64::try_from(i).is_ok() => {
            native(t, &i.to_string())?
        }
        (N::Bigint | N::Counter, other) => return Err(expected("a bigint value", other)),
        (N::Smallint | N::Tinyint, Json::Str(s)) => native(t, s)?,
        (N::Smallint | N::Tinyint, j @ (Json::Int(_) | Json::Double(_))) => native(t, &j.java())?,
        (N::Smallint, other) => return Err(expected("a short value", other)),
        (N::Tinyint, other) => return Err(expected("a byte value", other)),
        (N::Varint, j @ (Json::Str(_) | Json::Int(_))) => {
            let text = j.java();
            match crate::term::literal::parse_varint(&text) {
                Some(v) => v.to_signed_bytes_be(),
                None => {
                    return Err(JsonValueError::Marshal(format!(
                        "Value '{text}' is not a valid representation of a varint value"
                    )))
                }
            }
        }
        (N::Varint, other) => {
            return Err(JsonValueError::Marshal(format!(
                "Value '{}' is not a valid representation of a varint value",
                other.java()
            )))
        }
        (N::Decimal, j @ (Json::Str(_) | Json::Int(_) | Json::Double(_))) => {
            let text = j.java();
            match native(t, &text) {
                Ok(b) if !text.is_empty() => b,
                _ => {
                    return Err(JsonValueError::Marshal(format!(
                        "Value '{text}' is not a valid representation of a decimal value"
                    )))
                }
            }
        }
        (N::Decimal, other) => {
            return Err(JsonValueError::Marshal(format!(
                "Value '{}' is not a valid representation of a decimal value",
                other.java()
            )))
        }
        (N::Double, Json::Str(s)) | (N::Float, Json::Str(s)) => native(t, s)?,
        (N::Double, j @ (Json::Int(_) | Json::Double(_))) => {
            j.as_f64().unwrap_or(f64::NAN).to_be_bytes().to_vec()
        }
        (N::Float, j @ (Json::Int(_) | Json::Double(_))) => (j.as_f64().unwrap_or(f64::NAN) as f32)
            .to_be_bytes()
            .to_vec(),
        (N::Double, other) => return Err(expected("a double value", other)),
        (N::Float, other) => return Err(expected("a float value", other)),
        // Not a number type: never reached from native_from_json.
        _ => native_from_json(t, json, now_millis)?,
    })
}

/// A blob from JSON: a `0x`-prefixed hex string.
fn blob_from_json(json: &Json, now_millis: i64) -> ValueResult<Vec<u8>> {
    match json {
        Json::Str(s) => {
            let invalid = |why: String| {
                JsonValueError::Marshal(format!(
                    "Value '{s}' is not a valid blob representation: {why}"
                ))
            };
            let Some(hex) = s.strip_prefix("0x") else {
                return Err(invalid(format!(
                    "String representation of blob is missing 0x prefix: {s}"
                )));
            };
            from_string(NativeType::Blob, hex, now_millis)
                .map_err(JsonValueError::Marshal)
                .map_err(|e| invalid(e.to_string()))
        }
        other => {
            let class = other.qualified_class();
            Err(JsonValueError::Marshal(format!(
                "Value '{}' is not a valid blob representation: class {class} cannot be cast to class java.lang.String ({class} and java.lang.String are in module java.base of loader 'bootstrap')",
                other.java()
            )))
        }
    }
}

/// A list, set or vector from a JSON list (or a string holding one).
fn list_from_json(
    ty: &CqlType,
    e: &CqlType,
    json: &Json,
    now_millis: i64,
    depth: usize,
) -> ValueResult<Vec<u8>> {
    let json = decode_nested(json)?;
    let set = matches!(ty.unfrozen(), CqlType::Set(_));
    let Json::List(items) = json.as_ref() else {
        return Err(expected(
            if set {
                "a list (representing a set)"
            } else {
                "a list"
            },
            &json,
        ));
    };
    if let CqlType::Vector(_, n) = ty.unfrozen() {
        if items.len() != *n as usize {
            return Err(JsonValueError::Marshal(format!(
                "List had incorrect size: expected {n} but given {}; {}",
                items.len(),
                json.java()
            )));
        }
    }
    let mut values = Vec::new();
    for item in items {
        let Some(bytes) = from_json_at(e, item, now_millis, depth + 1)? else {
            return Err(JsonValueError::Marshal(format!(
                "Invalid null element in {}",
                if set { "set" } else { "list" }
            )));
        };
        values.push(Value::deserialize(e, &bytes).map_err(|e| e.to_string())?);
    }
    Ok(match ty.unfrozen() {
        CqlType::List(_) => Value::List(values).to_bytes(),
        CqlType::Vector(..) => Value::Vector(values).to_bytes(),
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
    })
}

/// A map from a JSON object (or a string holding one); keys are the
/// object's strings, whatever the key type.
fn map_from_json(
    k: &CqlType,
    v: &CqlType,
    json: &Json,
    now_millis: i64,
    depth: usize,
) -> ValueResult<Vec<u8>> {
    let json = decode_nested(json)?;
    let Json::Map(entries) = json.as_ref() else {
        return Err(expected("a map", &json));
    };
    let mut pairs: Vec<(Vec<u8>, Value)> = Vec::new();
    for (key_text, value) in entries {
        // Keys are the document's strings, whatever the key type.
        let Some(kb) = from_json_at(k, &Json::Str(key_text.clone()), now_millis, depth + 1)? else {
            return Err(JsonValueError::Marshal("Invalid null key in map".into()));
        };
        let Some(vb) = from_json_at(v, value, now_millis, depth + 1)? else {
            return Err(JsonValueError::Marshal("Invalid null value in map".into()));
        };
        let vv = Value::deserialize(v, &vb).map_err(|e| e.to_string())?;
        pairs.retain(|(existing, _)| {
            rocksandra_data::value::compare(k, existing, &kb) != std::cmp::Ordering::Equal
        });
        pairs.push((kb, vv));
    }
    pairs.sort_by(|a, b| rocksandra_data::value::compare(k, &a.0, &b.0));
    let entries = pairs
        .into_iter()
        .map(|(kb, vv)| Ok((Value::deserialize(k, &kb).map_err(|e| e.to_string())?, vv)))
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Value::Map(entries).to_bytes())
}

/// A tuple from a JSON list (or a string holding one) of exactly its size.
fn tuple_from_json(
    types: &[CqlType],
    json: &Json,
    now_millis: i64,
    depth: usize,
) -> ValueResult<Vec<u8>> {
    let json = decode_nested(json)?;
    let Json::List(items) = json.as_ref() else {
        return Err(expected("a list representation of a tuple", &json));
    };
    if items.len() > types.len() {
        return Err(JsonValueError::Marshal(format!(
            "Tuple contains extra items (expected {}): {}",
            types.len(),
            json.java()
        )));
    }
    if items.len() < types.len() {
        return Err(JsonValueError::Marshal(format!(
            "Tuple is missing items (expected {}): {}",
            types.len(),
            json.java()
        )));
    }
    let mut fields = Vec::new();
    for (t, item) in types.iter().zip(items) {
        fields.push(match from_json_at(t, item, now_millis, depth + 1)? {
            Some(b) => Some(Value::deserialize(t, &b).map_err(|e| e.to_string())?),
            None => None,
        });
    }
    Ok(Value::Tuple(fields).to_bytes())
}

/// A UDT from a JSON object (or a string holding one); None for a
/// non-frozen UDT without any field.
fn udt_from_json(
    ty: &CqlType,
    u: &rocksandra_data::types::UdtType,
    json: &Json,
    now_millis: i64,
    depth: usize,
) -> ValueResult<Option<Vec<u8>>> {
    let json = decode_nested(json)?;
    let Json::Map(entries) = json.as_ref() else {
        return Err(expected("a map", &json));
    };
    let mut fields: Vec<Option<Value>> = vec![None; u.fields.len()];
    for (name, value) in entries {
        let name = column_name(name);
        let Some(i) = u.fields.iter().position(|(n, _)| *n == name) else {
            return Err(JsonValueError::Marshal(format!(
                "Unknown field '{name}' in value of user defined type {}",
                u.name
            )));
        };
        let t = &u.fields[i].1;
        fields[i] = match from_json_at(t, value, now_millis, depth + 1)? {
            Some(b) => Some(Value::deserialize(t, &b).map_err(|e| e.to_string())?),
            None => None,
        };
    }
    if ty.is_multi_cell() && fields.iter().all(Option::is_none) {
        // A non-frozen UDT without any field is null.
        return Ok(None);
    }
    Ok(Some(Value::Udt(fields).to_bytes()))
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

// ---------------------------------------------------------------- parsing

/// A document Jackson refuses: the exception's class and message, with
/// its location as Jackson prints it.
#[derive(Clone, Debug, PartialEq)]
pub struct JsonError {
    pub exception: &'static str,
    pub message: String,
}

impl JsonError {
    /// Java's `toString()` of the exception.
    pub fn java(&self) -> String {
        format!("{}: {}", self.exception, self.message)
    }
}

const PARSE_EXCEPTION: &str = "com.fasterxml.jackson.core.JsonParseException";
const EOF_EXCEPTION: &str = "com.fasterxml.jackson.core.io.JsonEOFException";
const MISMATCH_EXCEPTION: &str = "com.fasterxml.jackson.databind.exc.MismatchedInputException";

/// Where Jackson's messages say the input came from (Cassandra hides it).
const SOURCE: &str = "[Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled)";

fn location(line: usize, column: usize) -> String {
    format!("{SOURCE}; line: {line}, column: {column}]")
}

/// Parses the first JSON value of a text, as Jackson's `readValue` does
/// (what follows it is ignored).
pub fn parse(text: &str) -> Result<Json, JsonError> {
    let mut p = JsonParser {
        chars: text.chars().collect(),
        pos: 0,
    };
    p.skip_whitespace();
    if p.pos >= p.chars.len() {
        // No token was read, so Jackson's location has no column.
        return Err(JsonError {
            exception: MISMATCH_EXCEPTION,
            message: format!("No content to map due to end-of-input\n at {SOURCE}; line: 1]"),
        });
    }
    p.value(0)
}

/// Parses a document that must be a JSON object (`INSERT JSON`): the
/// error of anything else is Jackson's for a `Map` target.
pub fn parse_object(text: &str) -> Result<Json, JsonError> {
    let json = parse(text)?;
    let start = text.chars().take_while(|c| c.is_whitespace()).count();
    let (what, token) = match &json {
        Json::Map(_) | Json::Null => return Ok(json),
        Json::List(_) => ("Array", "START_ARRAY"),
        // A string goes to the map's creators first, which take none.
        Json::Str(value) => {
            return Err(JsonError {
                exception: MISMATCH_EXCEPTION,
                message: format!(
                    "Cannot construct instance of `java.util.LinkedHashMap` (although at least one Creator exists): no String-argument constructor/factory method to deserialize from String value ('{value}')\n at {}",
                    location(1, start + 1)
                ),
            })
        }
        Json::Int(_) => ("Integer", "VALUE_NUMBER_INT"),
        Json::Double(_) => ("Floating-point", "VALUE_NUMBER_FLOAT"),
        Json::Bool(true) => ("Boolean", "VALUE_TRUE"),
        Json::Bool(false) => ("Boolean", "VALUE_FALSE"),
    };
    Err(JsonError {
        exception: MISMATCH_EXCEPTION,
        message: format!(
            "Cannot deserialize value of type `java.util.LinkedHashMap<java.lang.Object,java.lang.Object>` from {what} value (token `JsonToken.{token}`)\n at {}",
            location(1, start + 1)
        ),
    })
}

struct JsonParser {
    chars: Vec<char>,
    pos: usize,
}

impl JsonParser {
    /// Jackson's 1-based line and column of a character position.
    fn line_column(&self, pos: usize) -> (usize, usize) {
        let mut line = 1;
        let mut column = 1;
        for c in self.chars.iter().take(pos) {
            if *c == '\n' {
                line += 1;
                column = 1;
            } else {
                column += 1;
            }
        }
        (line, column)
    }

    fn error_at(&self, pos: usize, message: String) -> JsonError {
        let (line, column) = self.line_column(pos);
        JsonError {
            exception: PARSE_EXCEPTION,
            message: format!("{message}\n at {}", location(line, column)),
        }
    }

    fn unexpected(&self, what: &str) -> JsonError {
        let c = self.chars[self.pos];
        self.error_at(
            self.pos,
            format!("Unexpected character ({}): {what}", describe_char(c)),
        )
    }

    fn eof(&self, container: &str, start: usize) -> JsonError {
        let (line, column) = self.line_column(start);
        let (end_line, end_column) = self.line_column(self.chars.len());
        JsonError {
            exception: EOF_EXCEPTION,
            message: format!(
                "Unexpected end-of-input: expected close marker for {container} (start marker at {})\n at {}",
                location(line, column),
                location(end_line, end_column)
            ),
        }
    }

    fn skip_whitespace(&mut self) {
        while self.pos < self.chars.len()
            && matches!(self.chars[self.pos], ' ' | '\t' | '\n' | '\r')
        {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn value(&mut self, depth: usize) -> Result<Json, JsonError> {
        if depth > JSON_DEPTH_MAX {
            return Err(self.error_at(self.pos, "JSON value nested too deeply".into()));
        }
        let Some(c) = self.peek() else {
            let (line, column) = self.line_column(self.chars.len() + 1);
            return Err(JsonError {
                exception: EOF_EXCEPTION,
                message: format!(
                    "Unexpected end-of-input: expected a value\n at {}",
                    location(line, column)
                ),
            });
        };
        match c {
            '{' => self.object(depth),
            '[' => self.array(depth),
            '"' => Ok(Json::Str(self.string()?)),
            '-' | '0'..='9' => self.number(),
            c if c.is_alphabetic() || c == '_' => self.word(),
            _ => Err(self.unexpected(
                "expected a valid value (JSON String, Number, Array, Object or token 'null', 'true' or 'false')",
            )),
        }
    }

    fn word(&mut self) -> Result<Json, JsonError> {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$')
        {
            self.pos += 1;
        }
        let word: String = self.chars[start..self.pos].iter().collect();
        match word.as_str() {
            "true" => Ok(Json::Bool(true)),
            "false" => Ok(Json::Bool(false)),
            "null" => Ok(Json::Null),
            _ => Err(self.error_at(
                self.pos,
                format!(
                    "Unrecognized token '{word}': was expecting (JSON String, Number, Array, Object or token 'null', 'true' or 'false')"
                ),
            )),
        }
    }

    fn number(&mut self) -> Result<Json, JsonError> {
        let start = self.pos;
        if self.peek() == Some('-') {
            self.pos += 1;
        }
        let digits_start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        if self.pos == digits_start {
            return Err(match self.peek() {
                Some(c) => self.error_at(
                    self.pos + 1,
                    format!(
                        "Unexpected character ({}) in numeric value: expected digit (0-9) to follow minus sign, for valid numeric value",
                        describe_char(c)
                    ),
                ),
                None => self.error_at(self.pos, "Unexpected end-of-input in numeric value".into()),
            });
        }
        if self.pos - digits_start > 1 && self.chars[digits_start] == '0' {
            return Err(self.error_at(
                digits_start + 2,
                "Invalid numeric value: Leading zeroes not allowed".into(),
            ));
        }
        let mut floating = false;
        if self.peek() == Some('.') {
            floating = true;
            self.pos += 1;
            let fraction_start = self.pos;
            while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.pos += 1;
            }
            if self.pos == fraction_start {
                return Err(match self.peek() {
                    Some(c) => self.error_at(
                        self.pos + 1,
                        format!(
                            "Unexpected character ({}) in numeric value: Decimal point not followed by a digit",
                            describe_char(c)
                        ),
                    ),
                    None => self.error_at(self.pos, "Unexpected end-of-input in numeric value".into()),
                });
            }
        }
        if matches!(self.peek(), Some('e' | 'E')) {
            floating = true;
            self.pos += 1;
            if matches!(self.peek(), Some('+' | '-')) {
                self.pos += 1;
            }
            let exponent_start = self.pos;
            while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.pos += 1;
            }
            if self.pos == exponent_start {
                return Err(match self.peek() {
                    Some(c) => self.error_at(
                        self.pos + 1,
                        format!(
                            "Unexpected character ({}) in numeric value: Exponent indicator not followed by a digit",
                            describe_char(c)
                        ),
                    ),
                    None => self.error_at(self.pos, "Unexpected end-of-input in numeric value".into()),
                });
            }
        }
        let text: String = self.chars[start..self.pos].iter().collect();
        if floating {
            Ok(Json::Double(text.parse().unwrap_or(f64::NAN)))
        } else {
            Ok(Json::Int(text.parse().unwrap_or_default()))
        }
    }

    fn string(&mut self) -> Result<String, JsonError> {
        let start = self.pos;
        self.pos += 1;
        let mut out = String::new();
        loop {
            let Some(c) = self.peek() else {
                let _ = start;
                return Err(JsonError {
                    exception: EOF_EXCEPTION,
                    message: format!(
                        "Unexpected end-of-input: was expecting closing quote for a string value\n at {}",
                        {
                            let (line, column) = self.line_column(self.chars.len() + 1);
                            location(line, column)
                        }
                    ),
                });
            };
            self.pos += 1;
            match c {
                '"' => return Ok(out),
                '\\' => {
                    let Some(e) = self.peek() else { continue };
                    self.pos += 1;
                    match e {
                        '"' => out.push('"'),
                        '\\' => out.push('\\'),
                        '/' => out.push('/'),
                        'b' => out.push('\u{8}'),
                        'f' => out.push('\u{c}'),
                        'n' => out.push('\n'),
                        'r' => out.push('\r'),
                        't' => out.push('\t'),
                        'u' => {
                            let unit = self.hex4()?;
                            if (0xD800..0xDC00).contains(&unit)
                                && self.peek() == Some('\\')
                                && self.chars.get(self.pos + 1) == Some(&'u')
                            {
                                self.pos += 2;
                                let low = self.hex4()?;
                                let code = 0x10000 + ((unit - 0xD800) << 10) + (low.wrapping_sub(0xDC00) & 0x3FF);
                                out.push(char::from_u32(code).unwrap_or('\u{FFFD}'));
                            } else {
                                out.push(char::from_u32(unit).unwrap_or('\u{FFFD}'));
                            }
                        }
                        other => {
                            return Err(self.error_at(
                                self.pos,
                                format!(
                                    "Unrecognized character escape {}",
                                    describe_char(other)
                                ),
                            ))
                        }
                    }
                }
                c if (c as u32) < 0x20 => {
                    return Err(self.error_at(
                        self.pos,
                        format!(
                            "Illegal unquoted character ((CTRL-CHAR, code {})): has to be escaped using backslash to be included in string value",
                            c as u32
                        ),
                    ))
                }
                c => out.push(c),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let mut value = 0;
        for _ in 0..4 {
            let Some(d) = self.peek().and_then(|c| c.to_digit(16)) else {
                return Err(self.error_at(
                    self.pos + 1,
                    "Unexpected character: expected a hex-digit for character escape sequence"
                        .into(),
                ));
            };
            value = value * 16 + d;
            self.pos += 1;
        }
        Ok(value)
    }

    fn array(&mut self, depth: usize) -> Result<Json, JsonError> {
        let start = self.pos;
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(']') {
            self.pos += 1;
            return Ok(Json::List(items));
        }
        loop {
            self.skip_whitespace();
            if self.peek().is_none() {
                return Err(self.eof("Array", start));
            }
            items.push(self.value(depth + 1)?);
            self.skip_whitespace();
            match self.peek() {
                Some(',') => self.pos += 1,
                Some(']') => {
                    self.pos += 1;
                    return Ok(Json::List(items));
                }
                Some(_) => {
                    return Err(self.unexpected("was expecting comma to separate Array entries"))
                }
                None => return Err(self.eof("Array", start)),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Json, JsonError> {
        let start = self.pos;
        self.pos += 1;
        let mut entries: Vec<(String, Json)> = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some('}') {
            self.pos += 1;
            return Ok(Json::Map(entries));
        }
        loop {
            self.skip_whitespace();
            match self.peek() {
                Some('"') => {}
                Some(_) => {
                    return Err(self.unexpected("was expecting double-quote to start field name"))
                }
                None => return Err(self.eof("Object", start)),
            }
            let key = self.string()?;
            self.skip_whitespace();
            match self.peek() {
                Some(':') => self.pos += 1,
                Some(_) => {
                    return Err(
                        self.unexpected("was expecting a colon to separate field name and value")
                    )
                }
                None => return Err(self.eof("Object", start)),
            }
            self.skip_whitespace();
            if self.peek().is_none() {
                return Err(self.eof("Object", start));
            }
            let value = self.value(depth + 1)?;
            match entries.iter_mut().find(|(k, _)| *k == key) {
                Some(entry) => entry.1 = value,
                None => entries.push((key, value)),
            }
            self.skip_whitespace();
            match self.peek() {
                Some(',') => self.pos += 1,
                Some('}') => {
                    self.pos += 1;
                    return Ok(Json::Map(entries));
                }
                Some(_) => {
                    return Err(self.unexpected("was expecting comma to separate Object entries"))
                }
                None => return Err(self.eof("Object", start)),
            }
        }
    }
}

/// Jackson's `'c' (code n)` description of a character.
fn describe_char(c: char) -> String {
    if (c as u32) < 0x20 {
        format!("(CTRL-CHAR, code {})", c as u32)
    } else {
        format!("'{c}' (code {})", c as u32)
    }
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
            ("int", "5000000000", Err("Expected an int value, but got a Long: 5000000000")),
            ("bigint", "\"x\"", Err("Unable to make long from 'x'")),
            ("bigint", "1.5", Err("Expected a bigint value, but got a Double: 1.5")),
            ("varint", "99999999999999999999", Ok(Value::Varint("99999999999999999999".parse().expect("int")))),
            ("timestamp", "5", Err("Expected a long or a datestring representation of a timestamp value, but got a Integer: 5")),
            ("timestamp", "5000000000", Ok(Value::Timestamp(5_000_000_000))),
            ("double", "1e400", Ok(Value::Double(f64::INFINITY))),
            ("text", "\"a\\\"b\"", Ok(Value::Text("a\"b".into()))),
            ("text", "{\"a\": [1, 2.5, \"s\"]}", Err("Expected a UTF-8 string, but got a LinkedHashMap: {a=[1, 2.5, s]}")),
            ("boolean", "true", Ok(Value::Boolean(true))),
            (
                "list<int>",
                "[1, 2]",
                Ok(Value::List(vec![Value::Int(1), Value::Int(2)])),
            ),
            ("list<int>", "\"[3]\"", Ok(Value::List(vec![Value::Int(3)]))),
            ("list<int>", "[1, null]", Err("Invalid null element in list")),
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
            ("frozen<tuple<int, text>>", "[1]", Err("Tuple is missing items (expected 2): [1]")),
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
                    let e = got.expect_err("fails").to_string();
                    assert!(e.starts_with(prefix), "{t} {json}: {e}");
                }
            }
        }
        assert_eq!(column_name("\"Key\""), "Key");
        assert_eq!(column_name("Key"), "key");
    }

    #[test]
    fn a_document_that_is_no_object_is_refused_as_jackson_refuses_a_map() {
        let text = |json: &str| parse_object(json).expect_err("not an object").message;
        assert_eq!(
            text(""),
            "No content to map due to end-of-input\n at [Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); line: 1]"
        );
        assert!(
            text("\"just a string\"").starts_with("Cannot construct instance of `java.util.LinkedHashMap` (although at least one Creator exists): no String-argument constructor/factory method to deserialize from String value ('just a string')\n at [Source: REDACTED"),
        );
        assert!(text("5").starts_with(
            "Cannot deserialize value of type `java.util.LinkedHashMap<java.lang.Object,java.lang.Object>` from Integer value (token `JsonToken.VALUE_NUMBER_INT`)"
        ));
    }

    #[test]
    fn syntax_errors_are_jacksons() {
        let e = parse("{\"k\": 13,}").expect_err("trailing comma");
        assert_eq!(
            e.java(),
            "com.fasterxml.jackson.core.JsonParseException: Unexpected character ('}' (code 125)): was expecting double-quote to start field name\n at [Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); line: 1, column: 10]"
        );
        let e = parse("not json").expect_err("token");
        assert!(
            e.message.starts_with("Unrecognized token 'not'"),
            "{}",
            e.message
        );
        assert!(e.message.ends_with("column: 4]"), "{}", e.message);
        assert_eq!(
            parse("{\"a\": 1} trailing").expect("first value"),
            Json::Map(vec![("a".into(), Json::Int(1.into()))])
        );
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
