//! Column types on the wire: consistency levels, and `CqlType` as the
//! `[option]` of result and bind metadata (including the Java marshal class
//! names that custom types such as `vector` travel as).

use bytes::{BufMut, BytesMut};
use rocksandra_data::types::{CqlType, NativeType, UdtType};

use crate::error::{WireError, WireResult};
use crate::frame::ProtocolVersion;
use crate::limits::TYPE_NESTING_DEPTH_MAX;
use crate::primitives::{put_short_len, put_string, Reader};

/// `[consistency]` (spec section 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Consistency {
    Any,
    /// The default of requests the server issues itself.
    #[default]
    One,
    Two,
    Three,
    Quorum,
    All,
    LocalQuorum,
    EachQuorum,
    Serial,
    LocalSerial,
    LocalOne,
}

impl Consistency {
    pub const ALL: [Consistency; 11] = [
        Consistency::Any,
        Consistency::One,
        Consistency::Two,
        Consistency::Three,
        Consistency::Quorum,
        Consistency::All,
        Consistency::LocalQuorum,
        Consistency::EachQuorum,
        Consistency::Serial,
        Consistency::LocalSerial,
        Consistency::LocalOne,
    ];

    pub fn code(self) -> u16 {
        match self {
            Consistency::Any => 0x0000,
            Consistency::One => 0x0001,
            Consistency::Two => 0x0002,
            Consistency::Three => 0x0003,
            Consistency::Quorum => 0x0004,
            Consistency::All => 0x0005,
            Consistency::LocalQuorum => 0x0006,
            Consistency::EachQuorum => 0x0007,
            Consistency::Serial => 0x0008,
            Consistency::LocalSerial => 0x0009,
            Consistency::LocalOne => 0x000A,
        }
    }

    pub fn from_code(code: u16) -> Option<Consistency> {
        Consistency::ALL.into_iter().find(|c| c.code() == code)
    }

    /// The name Cassandra prints (`LOCAL_QUORUM`).
    pub fn name(self) -> &'static str {
        match self {
            Consistency::Any => "ANY",
            Consistency::One => "ONE",
            Consistency::Two => "TWO",
            Consistency::Three => "THREE",
            Consistency::Quorum => "QUORUM",
            Consistency::All => "ALL",
            Consistency::LocalQuorum => "LOCAL_QUORUM",
            Consistency::EachQuorum => "EACH_QUORUM",
            Consistency::Serial => "SERIAL",
            Consistency::LocalSerial => "LOCAL_SERIAL",
            Consistency::LocalOne => "LOCAL_ONE",
        }
    }

    pub(crate) fn read(r: &mut Reader, what: &'static str) -> WireResult<Consistency> {
        let code = r.short(what)?;
        Consistency::from_code(code).ok_or(WireError::InvalidValue {
            what,
            value: i64::from(code),
        })
    }

    pub(crate) fn put(self, out: &mut BytesMut) {
        out.put_u16(self.code());
    }
}

/// Option ids of spec section 4.2.5.2.
mod option_id {
    pub const CUSTOM: u16 = 0x0000;
    pub const TEXT: u16 = 0x000A;
    pub const VARCHAR: u16 = 0x000D;
    pub const DURATION: u16 = 0x0015;
    pub const LIST: u16 = 0x0020;
    pub const MAP: u16 = 0x0021;
    pub const SET: u16 = 0x0022;
    pub const UDT: u16 = 0x0030;
    pub const TUPLE: u16 = 0x0031;
}

const MARSHAL_PACKAGE: &str = "org.apache.cassandra.db.marshal.";

fn native_option_id(native: NativeType) -> u16 {
    match native {
        NativeType::Ascii => 0x0001,
        NativeType::Bigint => 0x0002,
        NativeType::Blob => 0x0003,
        NativeType::Boolean => 0x0004,
        NativeType::Counter => 0x0005,
        NativeType::Decimal => 0x0006,
        NativeType::Double => 0x0007,
        NativeType::Float => 0x0008,
        NativeType::Int => 0x0009,
        NativeType::Timestamp => 0x000B,
        NativeType::Uuid => 0x000C,
        // Cassandra answers with VARCHAR for UTF8Type (its id map keeps the last).
        NativeType::Text => option_id::VARCHAR,
        NativeType::Varint => 0x000E,
        NativeType::Timeuuid => 0x000F,
        NativeType::Inet => 0x0010,
        NativeType::Date => 0x0011,
        NativeType::Time => 0x0012,
        NativeType::Smallint => 0x0013,
        NativeType::Tinyint => 0x0014,
        NativeType::Duration => option_id::DURATION,
    }
}

fn native_from_option_id(id: u16) -> Option<NativeType> {
    if id == option_id::TEXT {
        return Some(NativeType::Text);
    }
    NativeType::ALL
        .into_iter()
        .find(|n| native_option_id(*n) == id)
}

/// The Java marshal class (without package) Cassandra uses for a native type.
pub fn marshal_class(native: NativeType) -> &'static str {
    match native {
        NativeType::Ascii => "AsciiType",
        NativeType::Bigint => "LongType",
        NativeType::Blob => "BytesType",
        NativeType::Boolean => "BooleanType",
        NativeType::Counter => "CounterColumnType",
        NativeType::Date => "SimpleDateType",
        NativeType::Decimal => "DecimalType",
        NativeType::Double => "DoubleType",
        NativeType::Duration => "DurationType",
        NativeType::Float => "FloatType",
        NativeType::Inet => "InetAddressType",
        NativeType::Int => "Int32Type",
        NativeType::Smallint => "ShortType",
        NativeType::Text => "UTF8Type",
        NativeType::Time => "TimeType",
        NativeType::Timestamp => "TimestampType",
        NativeType::Timeuuid => "TimeUUIDType",
        NativeType::Tinyint => "ByteType",
        NativeType::Uuid => "UUIDType",
        NativeType::Varint => "IntegerType",
    }
}

/// What `read_type(put_type(t))` gives back: `frozen` is not on the wire, so
/// it is removed, except inside types that travel as a marshal class string
/// (vectors), where Cassandra spells it `FrozenType(...)`.
pub fn wire_form(t: &CqlType) -> CqlType {
    match t {
        CqlType::Frozen(inner) => wire_form(inner),
        CqlType::List(e) => CqlType::List(Box::new(wire_form(e))),
        CqlType::Set(e) => CqlType::Set(Box::new(wire_form(e))),
        CqlType::Map(k, v) => CqlType::Map(Box::new(wire_form(k)), Box::new(wire_form(v))),
        CqlType::Tuple(items) => CqlType::Tuple(items.iter().map(wire_form).collect()),
        CqlType::Udt(u) => CqlType::Udt(UdtType {
            keyspace: u.keyspace.clone(),
            name: u.name.clone(),
            fields: u
                .fields
                .iter()
                .map(|(n, t)| (n.clone(), wire_form(t)))
                .collect(),
        }),
        other => other.clone(),
    }
}

/// The first protocol version with an option id for a native type: older
/// versions send the type as a custom one, by its class name.
fn native_since(n: NativeType) -> ProtocolVersion {
    match n {
        NativeType::Duration => ProtocolVersion::V5,
        NativeType::Date | NativeType::Time | NativeType::Smallint | NativeType::Tinyint => {
            ProtocolVersion::V4
        }
        _ => ProtocolVersion::V3,
    }
}

/// Writes a type as an `[option]`.
pub fn put_type(out: &mut BytesMut, t: &CqlType, version: ProtocolVersion) -> WireResult<()> {
    match t {
        CqlType::Frozen(inner) => put_type(out, inner, version),
        CqlType::Native(n) if version < native_since(*n) => put_custom(out, &marshal_name(t)),
        CqlType::Native(n) => {
            out.put_u16(native_option_id(*n));
            Ok(())
        }
        CqlType::List(e) => put_collection(out, option_id::LIST, &[e], version),
        CqlType::Set(e) => put_collection(out, option_id::SET, &[e], version),
        CqlType::Map(k, v) => put_collection(out, option_id::MAP, &[k, v], version),
        CqlType::Tuple(items) => {
            out.put_u16(option_id::TUPLE);
            put_short_len(out, "tuple arity", items.len())?;
            items.iter().try_for_each(|t| put_type(out, t, version))
        }
        CqlType::Udt(u) => put_udt(out, u, version),
        CqlType::Vector(..) => put_custom(out, &marshal_name(t)),
        CqlType::Custom(class) => put_custom(out, class),
    }
}

fn put_custom(out: &mut BytesMut, class: &str) -> WireResult<()> {
    out.put_u16(option_id::CUSTOM);
    put_string(out, "custom type class", class)
}

fn put_collection(
    out: &mut BytesMut,
    id: u16,
    params: &[&CqlType],
    version: ProtocolVersion,
) -> WireResult<()> {
    out.put_u16(id);
    params.iter().try_for_each(|t| put_type(out, t, version))
}

fn put_udt(out: &mut BytesMut, udt: &UdtType, version: ProtocolVersion) -> WireResult<()> {
    out.put_u16(option_id::UDT);
    put_string(out, "udt keyspace", &udt.keyspace)?;
    put_string(out, "udt name", &udt.name)?;
    put_short_len(out, "udt field count", udt.fields.len())?;
    for (name, t) in &udt.fields {
        put_string(out, "udt field name", name)?;
        put_type(out, t, version)?;
    }
    Ok(())
}

/// Reads an `[option]` type; nesting is bounded by `TYPE_NESTING_DEPTH_MAX`.
pub fn read_type(r: &mut Reader) -> WireResult<CqlType> {
    read_type_at(r, 0)
}

fn read_type_at(r: &mut Reader, depth: usize) -> WireResult<CqlType> {
    check_depth(depth)?;
    let id = r.short("type option id")?;
    if let Some(native) = native_from_option_id(id) {
        return Ok(CqlType::Native(native));
    }
    let inner = |r: &mut Reader| read_type_at(r, depth + 1).map(Box::new);
    match id {
        option_id::CUSTOM => Ok(custom_type(r.string("custom type class")?)),
        option_id::LIST => Ok(CqlType::List(inner(r)?)),
        option_id::SET => Ok(CqlType::Set(inner(r)?)),
        option_id::MAP => Ok(CqlType::Map(inner(r)?, inner(r)?)),
        option_id::TUPLE => {
            let arity = r.short_count("tuple arity", 2)?;
            let items = (0..arity).map(|_| read_type_at(r, depth + 1));
            Ok(CqlType::Tuple(items.collect::<WireResult<_>>()?))
        }
        option_id::UDT => read_udt(r, depth),
        other => Err(WireError::InvalidValue {
            what: "type option id",
            value: i64::from(other),
        }),
    }
}

fn read_udt(r: &mut Reader, depth: usize) -> WireResult<CqlType> {
    let keyspace = r.string("udt keyspace")?;
    let name = r.string("udt name")?;
    let count = r.short_count("udt field count", 4)?;
    let mut fields = Vec::with_capacity(count);
    for _ in 0..count {
        let field = r.string("udt field name")?;
        fields.push((field, read_type_at(r, depth + 1)?));
    }
    Ok(CqlType::Udt(UdtType {
        keyspace,
        name,
        fields,
    }))
}

fn check_depth(depth: usize) -> WireResult<()> {
    if depth > TYPE_NESTING_DEPTH_MAX {
        return Err(WireError::LimitExceeded {
            what: "type nesting depth",
            count: depth as u64,
            max: TYPE_NESTING_DEPTH_MAX as u64,
        });
    }
    Ok(())
}

/// A custom type class from the wire: vectors (and v4's duration) become
/// their CQL types; anything else stays `Custom`.
fn custom_type(class: String) -> CqlType {
    match parse_marshal(&class) {
        Ok(t @ (CqlType::Vector(..) | CqlType::Native(NativeType::Duration))) => t,
        _ => CqlType::Custom(class),
    }
}

/// The marshal class string of a type, as Cassandra's `AbstractType.toString`
/// prints it: `org.apache.cassandra.db.marshal.VectorType(org.apache.cassandra.db.marshal.FloatType,3)`.
pub fn marshal_name(t: &CqlType) -> String {
    let mut out = String::new();
    write_marshal(&mut out, t);
    out
}

fn write_marshal(out: &mut String, t: &CqlType) {
    let class = |out: &mut String, name: &str| {
        out.push_str(MARSHAL_PACKAGE);
        out.push_str(name);
    };
    match t {
        CqlType::Native(n) => class(out, marshal_class(*n)),
        CqlType::Custom(c) => out.push_str(c),
        CqlType::List(e) => write_parameterized(out, "ListType", &[e]),
        CqlType::Set(e) => write_parameterized(out, "SetType", &[e]),
        CqlType::Map(k, v) => write_parameterized(out, "MapType", &[k, v]),
        CqlType::Frozen(inner) => write_parameterized(out, "FrozenType", &[inner]),
        CqlType::Tuple(items) => {
            let items: Vec<&CqlType> = items.iter().collect();
            write_parameterized(out, "TupleType", &items);
        }
        CqlType::Vector(e, dimension) => {
            class(out, "VectorType(");
            write_marshal(out, e);
            out.push_str(&format!(",{dimension})"));
        }
        CqlType::Udt(u) => write_marshal_udt(out, u),
    }
}

fn write_parameterized(out: &mut String, class: &str, params: &[&CqlType]) {
    out.push_str(MARSHAL_PACKAGE);
    out.push_str(class);
    out.push('(');
    for (i, p) in params.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_marshal(out, p);
    }
    out.push(')');
}

fn write_marshal_udt(out: &mut String, udt: &UdtType) {
    out.push_str(MARSHAL_PACKAGE);
    out.push_str("UserType(");
    out.push_str(&udt.keyspace);
    out.push(',');
    out.push_str(&hex::encode(&udt.name));
    for (name, t) in &udt.fields {
        out.push(',');
        out.push_str(&hex::encode(name));
        out.push(':');
        write_marshal(out, t);
    }
    out.push(')');
}

fn unhex(text: &str) -> Option<String> {
    String::from_utf8(hex::decode(text).ok()?).ok()
}

/// Parses a marshal class string (as `marshal_name` prints it; the package
/// may be omitted). Unknown classes are errors: callers keep such types as
/// `Custom`.
pub fn parse_marshal(text: &str) -> Result<CqlType, MarshalParseError> {
    let mut parser = MarshalParser { text, pos: 0 };
    let t = parser.parse_type(0)?;
    if parser.pos != text.len() {
        return Err(MarshalParseError);
    }
    Ok(t)
}

/// A marshal class string this codec does not understand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MarshalParseError;

struct MarshalParser<'a> {
    text: &'a str,
    pos: usize,
}

impl MarshalParser<'_> {
    fn rest(&self) -> &str {
        self.text.get(self.pos..).unwrap_or("")
    }

    fn word(&mut self) -> &str {
        let rest = self.rest();
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '$'))
            .unwrap_or(rest.len());
        let start = self.pos;
        self.pos += len;
        self.text.get(start..self.pos).unwrap_or("")
    }

    fn eat(&mut self, c: char) -> bool {
        if self.rest().starts_with(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn require(&mut self, c: char) -> Result<(), MarshalParseError> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(MarshalParseError)
        }
    }

    fn parse_type(&mut self, depth: usize) -> Result<CqlType, MarshalParseError> {
        if depth > TYPE_NESTING_DEPTH_MAX {
            return Err(MarshalParseError);
        }
        let word = self.word();
        let class = word
            .strip_prefix(MARSHAL_PACKAGE)
            .unwrap_or(word)
            .to_string();
        if let Some(native) = NativeType::ALL
            .into_iter()
            .find(|n| marshal_class(*n) == class)
        {
            return Ok(CqlType::Native(native));
        }
        self.require('(')?;
        let t = self.parse_parameters(&class, depth)?;
        self.require(')')?;
        Ok(t)
    }

    fn parse_parameters(
        &mut self,
        class: &str,
        depth: usize,
    ) -> Result<CqlType, MarshalParseError> {
        let inner = |p: &mut Self| p.parse_type(depth + 1).map(Box::new);
        match class {
            "ListType" => Ok(CqlType::List(inner(self)?)),
            "SetType" => Ok(CqlType::Set(inner(self)?)),
            "FrozenType" => Ok(CqlType::Frozen(inner(self)?)),
            "ReversedType" => self.parse_type(depth + 1),
            "MapType" => {
                let k = inner(self)?;
                self.require(',')?;
                Ok(CqlType::Map(k, inner(self)?))
            }
            "TupleType" => self.parse_tuple(depth),
            "VectorType" => {
                let e = inner(self)?;
                self.require(',')?;
                let dimension = self.word().parse::<u32>().map_err(|_| MarshalParseError)?;
                Ok(CqlType::Vector(e, dimension))
            }
            "UserType" => self.parse_udt(depth),
            _ => Err(MarshalParseError),
        }
    }

    fn parse_tuple(&mut self, depth: usize) -> Result<CqlType, MarshalParseError> {
        let mut items = vec![self.parse_type(depth + 1)?];
        while self.eat(',') {
            items.push(self.parse_type(depth + 1)?);
        }
        Ok(CqlType::Tuple(items))
    }

    fn parse_udt(&mut self, depth: usize) -> Result<CqlType, MarshalParseError> {
        let keyspace = self.word().to_string();
        self.require(',')?;
        let name = unhex(self.word()).ok_or(MarshalParseError)?;
        let mut fields = Vec::new();
        while self.eat(',') {
            let field = unhex(self.word()).ok_or(MarshalParseError)?;
            self.require(':')?;
            fields.push((field, self.parse_type(depth + 1)?));
        }
        Ok(CqlType::Udt(UdtType {
            keyspace,
            name,
            fields,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn encode(t: &CqlType, version: ProtocolVersion) -> Vec<u8> {
        let mut out = BytesMut::new();
        put_type(&mut out, t, version).expect("encodes");
        out.to_vec()
    }

    fn decode(bytes: &[u8]) -> WireResult<CqlType> {
        read_type(&mut Reader::new(Bytes::copy_from_slice(bytes)))
    }

    #[test]
    fn text_is_sent_as_varchar_and_both_ids_read_as_text() {
        let text = CqlType::Native(NativeType::Text);
        assert_eq!(encode(&text, ProtocolVersion::V5), [0x00, 0x0D]);
        assert_eq!(decode(&[0x00, 0x0A]), Ok(text.clone()));
        assert_eq!(decode(&[0x00, 0x0D]), Ok(text));
    }

    #[test]
    fn frozen_collections_lose_frozen_on_the_wire() {
        let t = CqlType::Frozen(Box::new(CqlType::Map(
            Box::new(CqlType::Native(NativeType::Text)),
            Box::new(CqlType::Native(NativeType::Int)),
        )));
        let bytes = encode(&t, ProtocolVersion::V4);
        assert_eq!(bytes, [0x00, 0x21, 0x00, 0x0D, 0x00, 0x09]);
        assert_eq!(decode(&bytes), Ok(wire_form(&t)));
    }

    #[test]
    fn vector_travels_as_its_marshal_class() {
        let t = CqlType::Vector(Box::new(CqlType::Native(NativeType::Float)), 3);
        let class = "org.apache.cassandra.db.marshal.VectorType(org.apache.cassandra.db.marshal.FloatType,3)";
        assert_eq!(marshal_name(&t), class);
        let bytes = encode(&t, ProtocolVersion::V5);
        assert_eq!(&bytes[..2], &[0, 0]);
        assert_eq!(&bytes[4..], class.as_bytes());
        assert_eq!(decode(&bytes), Ok(t));
    }

    #[test]
    fn duration_is_custom_before_v5() {
        let t = CqlType::Native(NativeType::Duration);
        assert_eq!(encode(&t, ProtocolVersion::V5), [0x00, 0x15]);
        let v4 = encode(&t, ProtocolVersion::V4);
        assert_eq!(&v4[..2], &[0, 0]);
        assert_eq!(decode(&v4), Ok(t));
    }

    #[test]
    fn udt_marshal_names_are_hex_encoded() {
        let udt = CqlType::Udt(UdtType {
            keyspace: "ks".into(),
            name: "address".into(),
            fields: vec![("zip".into(), CqlType::Native(NativeType::Int))],
        });
        let t = CqlType::Vector(Box::new(CqlType::Frozen(Box::new(udt))), 2);
        let name = marshal_name(&t);
        assert!(name.contains(
            "UserType(ks,61646472657373,7a6970:org.apache.cassandra.db.marshal.Int32Type)"
        ));
        assert_eq!(parse_marshal(&name), Ok(t));
    }

    #[test]
    fn deep_nesting_is_rejected() {
        let mut bytes = Vec::new();
        for _ in 0..10_000 {
            bytes.extend_from_slice(&[0x00, 0x20]);
        }
        bytes.extend_from_slice(&[0x00, 0x09]);
        assert!(matches!(
            decode(&bytes),
            Err(WireError::LimitExceeded { .. })
        ));
        let deep = "ListType(".repeat(10_000);
        assert_eq!(parse_marshal(&deep), Err(MarshalParseError));
    }

    #[test]
    fn unknown_custom_classes_stay_custom() {
        let class = "com.example.PointType";
        let mut bytes = vec![0, 0];
        bytes.extend_from_slice(&(class.len() as u16).to_be_bytes());
        bytes.extend_from_slice(class.as_bytes());
        assert_eq!(decode(&bytes), Ok(CqlType::Custom(class.into())));
    }
}
