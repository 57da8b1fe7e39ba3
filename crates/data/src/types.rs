//! CQL data types, their CQL text form (`frozen<map<text, int>>`, as stored in
//! `system_schema.columns.type`) and the parser for that text.

use std::fmt;

/// The CQL native (non-parameterized) types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NativeType {
    Ascii,
    Bigint,
    Blob,
    Boolean,
    Counter,
    Date,
    Decimal,
    Double,
    Duration,
    Float,
    Inet,
    Int,
    Smallint,
    Text,
    Time,
    Timestamp,
    Timeuuid,
    Tinyint,
    Uuid,
    Varint,
}

impl NativeType {
    /// The numeric types, in the order of Cassandra's function declarations
    /// (`OperationFcts`, `CastFcts`, the aggregates).
    pub const NUMERIC: [NativeType; 9] = [
        NativeType::Tinyint,
        NativeType::Smallint,
        NativeType::Int,
        NativeType::Bigint,
        NativeType::Float,
        NativeType::Double,
        NativeType::Decimal,
        NativeType::Varint,
        NativeType::Counter,
    ];

    /// Whether arithmetic, `sum`, `avg` and numeric casts apply.
    pub fn is_numeric(self) -> bool {
        NativeType::NUMERIC.contains(&self)
    }

    pub const ALL: [NativeType; 20] = [
        NativeType::Ascii,
        NativeType::Bigint,
        NativeType::Blob,
        NativeType::Boolean,
        NativeType::Counter,
        NativeType::Date,
        NativeType::Decimal,
        NativeType::Double,
        NativeType::Duration,
        NativeType::Float,
        NativeType::Inet,
        NativeType::Int,
        NativeType::Smallint,
        NativeType::Text,
        NativeType::Time,
        NativeType::Timestamp,
        NativeType::Timeuuid,
        NativeType::Tinyint,
        NativeType::Uuid,
        NativeType::Varint,
    ];

    /// The CQL name (`text`, never `varchar`, as Cassandra prints it).
    pub fn name(self) -> &'static str {
        match self {
            NativeType::Ascii => "ascii",
            NativeType::Bigint => "bigint",
            NativeType::Blob => "blob",
            NativeType::Boolean => "boolean",
            NativeType::Counter => "counter",
            NativeType::Date => "date",
            NativeType::Decimal => "decimal",
            NativeType::Double => "double",
            NativeType::Duration => "duration",
            NativeType::Float => "float",
            NativeType::Inet => "inet",
            NativeType::Int => "int",
            NativeType::Smallint => "smallint",
            NativeType::Text => "text",
            NativeType::Time => "time",
            NativeType::Timestamp => "timestamp",
            NativeType::Timeuuid => "timeuuid",
            NativeType::Tinyint => "tinyint",
            NativeType::Uuid => "uuid",
            NativeType::Varint => "varint",
        }
    }

    /// Parses a native type name, case-insensitively; `varchar` is `text`.
    pub fn from_name(name: &str) -> Option<NativeType> {
        let lower = name.to_ascii_lowercase();
        if lower == "varchar" {
            return Some(NativeType::Text);
        }
        NativeType::ALL.iter().copied().find(|t| t.name() == lower)
    }

    /// Byte width of the serialized value when it is fixed.
    pub fn fixed_width(self) -> Option<usize> {
        match self {
            NativeType::Bigint | NativeType::Counter | NativeType::Double => Some(8),
            NativeType::Time | NativeType::Timestamp => Some(8),
            NativeType::Int | NativeType::Float | NativeType::Date => Some(4),
            NativeType::Smallint => Some(2),
            NativeType::Tinyint | NativeType::Boolean => Some(1),
            NativeType::Uuid | NativeType::Timeuuid => Some(16),
            _ => None,
        }
    }
}

/// A CQL type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum CqlType {
    Native(NativeType),
    List(Box<CqlType>),
    Set(Box<CqlType>),
    Map(Box<CqlType>, Box<CqlType>),
    Tuple(Vec<CqlType>),
    /// A user-defined type with its field names and types resolved.
    Udt(UdtType),
    /// `vector<element, dimension>` (Cassandra 5.0).
    Vector(Box<CqlType>, u32),
    /// `frozen<...>`: the value is one cell, compared as a whole.
    Frozen(Box<CqlType>),
    /// A custom type given by its Java class name.
    Custom(String),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UdtType {
    pub keyspace: String,
    pub name: String,
    pub fields: Vec<(String, CqlType)>,
}

impl CqlType {
    pub fn native(t: NativeType) -> CqlType {
        CqlType::Native(t)
    }

    /// The type with any `frozen<>` wrapper removed.
    pub fn unfrozen(&self) -> &CqlType {
        match self {
            CqlType::Frozen(inner) => inner.unfrozen(),
            other => other,
        }
    }

    pub fn is_frozen(&self) -> bool {
        matches!(self, CqlType::Frozen(_))
    }

    /// A non-frozen collection or UDT: stored as one cell per element or field.
    pub fn is_multi_cell(&self) -> bool {
        matches!(
            self,
            CqlType::List(_) | CqlType::Set(_) | CqlType::Map(..) | CqlType::Udt(_)
        )
    }

    pub fn is_collection(&self) -> bool {
        matches!(
            self.unfrozen(),
            CqlType::List(_) | CqlType::Set(_) | CqlType::Map(..)
        )
    }

    pub fn is_counter(&self) -> bool {
        matches!(self, CqlType::Native(NativeType::Counter))
    }

    /// Wraps collections and UDTs nested inside this type in `frozen<>`,
    /// as Cassandra requires for nested multi-cell types.
    pub fn freeze(self) -> CqlType {
        match self {
            t @ (CqlType::List(_) | CqlType::Set(_) | CqlType::Map(..) | CqlType::Udt(_)) => {
                CqlType::Frozen(Box::new(t))
            }
            other => other,
        }
    }

    /// Whether this type may be part of a primary key.
    /// Whether a duration appears anywhere in the type (Cassandra's
    /// `AbstractType.referencesDuration`).
    pub fn references_duration(&self) -> bool {
        self.references(NativeType::Duration)
    }

    /// Whether native type `native` appears anywhere in the type.
    pub fn references(&self, native: NativeType) -> bool {
        match self {
            CqlType::Native(t) => *t == native,
            CqlType::Custom(_) => false,
            CqlType::List(e) | CqlType::Set(e) | CqlType::Frozen(e) | CqlType::Vector(e, _) => {
                e.references(native)
            }
            CqlType::Map(k, v) => k.references(native) || v.references(native),
            CqlType::Tuple(items) => items.iter().any(|t| t.references(native)),
            CqlType::Udt(u) => u.fields.iter().any(|(_, t)| t.references(native)),
        }
    }

    pub fn can_be_key(&self) -> bool {
        match self {
            CqlType::Native(NativeType::Duration) | CqlType::Native(NativeType::Counter) => false,
            CqlType::Native(_) => true,
            CqlType::Frozen(inner) => inner.can_be_frozen_key(),
            CqlType::Tuple(items) => items.iter().all(|t| t.can_be_frozen_key()),
            CqlType::Vector(..) => true,
            _ => false,
        }
    }

    fn can_be_frozen_key(&self) -> bool {
        match self {
            CqlType::Native(NativeType::Duration) => false,
            CqlType::Native(NativeType::Counter) => false,
            CqlType::Native(_) | CqlType::Custom(_) => true,
            CqlType::Frozen(inner) => inner.can_be_frozen_key(),
            CqlType::List(e) | CqlType::Set(e) | CqlType::Vector(e, _) => e.can_be_frozen_key(),
            CqlType::Map(k, v) => k.can_be_frozen_key() && v.can_be_frozen_key(),
            CqlType::Tuple(items) => items.iter().all(|t| t.can_be_frozen_key()),
            CqlType::Udt(u) => u.fields.iter().all(|(_, t)| t.can_be_frozen_key()),
        }
    }
}

impl fmt::Display for CqlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CqlType::Native(n) => f.write_str(n.name()),
            CqlType::List(e) => write!(f, "list<{e}>"),
            CqlType::Set(e) => write!(f, "set<{e}>"),
            CqlType::Map(k, v) => write!(f, "map<{k}, {v}>"),
            CqlType::Tuple(items) => {
                f.write_str("tuple<")?;
                for (i, t) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{t}")?;
                }
                f.write_str(">")
            }
            CqlType::Udt(u) => f.write_str(&quote_identifier_if_needed(&u.name)),
            CqlType::Vector(e, n) => write!(f, "vector<{e}, {n}>"),
            CqlType::Frozen(inner) => write!(f, "frozen<{inner}>"),
            CqlType::Custom(class) => write!(f, "'{class}'"),
        }
    }
}

/// `keyspace.name` as Cassandra prints a table, view or type name, each part
/// quoted when it needs to be.
pub fn qualified_name(keyspace: &str, name: &str) -> String {
    format!(
        "{}.{}",
        quote_identifier_if_needed(keyspace),
        quote_identifier_if_needed(name)
    )
}

/// Quotes an identifier the way Cassandra prints names: bare when it is a
/// lower-case identifier that is not a reserved word, double-quoted otherwise.
pub fn quote_identifier_if_needed(name: &str) -> String {
    let bare = !name.is_empty()
        && name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !is_reserved_keyword(name);
    if bare {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// Cassandra's reserved keywords (`ReservedKeywords.java`): names that must be quoted.
pub fn is_reserved_keyword(name: &str) -> bool {
    const RESERVED: &[&str] = &[
        "add",
        "allow",
        "alter",
        "and",
        "apply",
        "asc",
        "authorize",
        "batch",
        "begin",
        "by",
        "columnfamily",
        "create",
        "default",
        "delete",
        "desc",
        "describe",
        "drop",
        "entries",
        "execute",
        "from",
        "full",
        "grant",
        "if",
        "in",
        "index",
        "infinity",
        "insert",
        "into",
        "is",
        "keyspace",
        "limit",
        "mbean",
        "mbeans",
        "modify",
        "nan",
        "norecursive",
        "not",
        "null",
        "of",
        "on",
        "or",
        "order",
        "primary",
        "rename",
        "replace",
        "revoke",
        "schema",
        "select",
        "set",
        "table",
        "to",
        "token",
        "truncate",
        "unlogged",
        "unset",
        "update",
        "use",
        "using",
        "view",
        "where",
        "with",
    ];
    RESERVED.contains(&name.to_ascii_lowercase().as_str())
}

/// Error from parsing a type's text form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TypeParseError {
    pub message: String,
}

/// Looks user-defined types up by name: for type text parsed here and for
/// CQL type expressions (`rocksandra_cql::TypeExpr::resolve`).
pub trait UdtResolver {
    /// `keyspace` is None when the text did not qualify the name; the
    /// resolver then uses the keyspace it stands for.
    fn resolve_udt(&self, keyspace: Option<&str>, name: &str) -> Option<UdtType>;
}

/// A resolver that knows no user-defined types.
pub struct NoUdts;

impl UdtResolver for NoUdts {
    fn resolve_udt(&self, _keyspace: Option<&str>, _name: &str) -> Option<UdtType> {
        None
    }
}

impl CqlType {
    /// Parses CQL type text such as `frozen<map<text, int>>` or `vector<float, 3>`.
    pub fn parse(text: &str, udts: &dyn UdtResolver) -> Result<CqlType, TypeParseError> {
        let mut parser = TypeParser {
            text: text.as_bytes(),
            pos: 0,
            udts,
        };
        let t = parser.parse_type()?;
        parser.skip_ws();
        if parser.pos != parser.text.len() {
            return Err(parser.error("unexpected trailing characters"));
        }
        Ok(t)
    }
}

struct TypeParser<'a> {
    text: &'a [u8],
    pos: usize,
    udts: &'a dyn UdtResolver,
}

impl TypeParser<'_> {
    fn error(&self, what: &str) -> TypeParseError {
        TypeParseError {
            message: format!(
                "{what} in type '{}' at character {}",
                String::from_utf8_lossy(self.text),
                self.pos
            ),
        }
    }

    fn skip_ws(&mut self) {
        while self.pos < self.text.len() && self.text[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.skip_ws();
        if self.text.get(self.pos) == Some(&c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), TypeParseError> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.error(&format!("expected '{}'", c as char)))
        }
    }

    fn word(&mut self) -> Result<(String, bool), TypeParseError> {
        self.skip_ws();
        if self.eat(b'"') {
            let mut out = Vec::new();
            loop {
                match self.text.get(self.pos) {
                    None => return Err(self.error("unterminated quoted name")),
                    Some(b'"') if self.text.get(self.pos + 1) == Some(&b'"') => {
                        out.push(b'"');
                        self.pos += 2;
                    }
                    Some(b'"') => {
                        self.pos += 1;
                        break;
                    }
                    Some(&c) => {
                        out.push(c);
                        self.pos += 1;
                    }
                }
            }
            return Ok((String::from_utf8_lossy(&out).into_owned(), true));
        }
        if self.eat(b'\'') {
            let start = self.pos;
            while self.pos < self.text.len() && self.text[self.pos] != b'\'' {
                self.pos += 1;
            }
            let class = String::from_utf8_lossy(&self.text[start..self.pos]).into_owned();
            self.expect(b'\'')?;
            return Ok((class, true));
        }
        let start = self.pos;
        while self.pos < self.text.len()
            && (self.text[self.pos].is_ascii_alphanumeric()
                || self.text[self.pos] == b'_'
                || self.text[self.pos] == b'.')
        {
            self.pos += 1;
        }
        if start == self.pos {
            return Err(self.error("expected a type name"));
        }
        Ok((
            String::from_utf8_lossy(&self.text[start..self.pos]).into_owned(),
            false,
        ))
    }

    fn parse_type(&mut self) -> Result<CqlType, TypeParseError> {
        self.skip_ws();
        let custom = self.text.get(self.pos) == Some(&b'\'');
        let (word, quoted) = self.word()?;
        if custom {
            return Ok(CqlType::Custom(word));
        }
        if quoted {
            return self.resolve_udt(&word);
        }
        let lower = word.to_ascii_lowercase();
        match lower.as_str() {
            "frozen" => {
                self.expect(b'<')?;
                let inner = self.parse_type()?;
                self.expect(b'>')?;
                Ok(match inner {
                    CqlType::Frozen(_) => inner,
                    other => CqlType::Frozen(Box::new(other)),
                })
            }
            "list" | "set" => {
                self.expect(b'<')?;
                let inner = self.parse_type()?.freeze();
                self.expect(b'>')?;
                Ok(if lower == "list" {
                    CqlType::List(Box::new(inner))
                } else {
                    CqlType::Set(Box::new(inner))
                })
            }
            "map" => {
                self.expect(b'<')?;
                let k = self.parse_type()?.freeze();
                self.expect(b',')?;
                let v = self.parse_type()?.freeze();
                self.expect(b'>')?;
                Ok(CqlType::Map(Box::new(k), Box::new(v)))
            }
            "tuple" => {
                self.expect(b'<')?;
                let mut items = vec![self.parse_type()?.freeze()];
                while self.eat(b',') {
                    items.push(self.parse_type()?.freeze());
                }
                self.expect(b'>')?;
                Ok(CqlType::Tuple(items))
            }
            "vector" => {
                self.expect(b'<')?;
                let elem = self.parse_type()?.freeze();
                self.expect(b',')?;
                self.skip_ws();
                let start = self.pos;
                while self.pos < self.text.len() && self.text[self.pos].is_ascii_digit() {
                    self.pos += 1;
                }
                let dimension: u32 = std::str::from_utf8(&self.text[start..self.pos])
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .filter(|n| *n > 0)
                    .ok_or_else(|| self.error("expected a positive vector dimension"))?;
                self.expect(b'>')?;
                Ok(CqlType::Vector(Box::new(elem), dimension))
            }
            _ => match NativeType::from_name(&lower) {
                Some(n) => Ok(CqlType::Native(n)),
                None => self.resolve_udt(&lower),
            },
        }
    }

    fn resolve_udt(&self, name: &str) -> Result<CqlType, TypeParseError> {
        self.udts
            .resolve_udt(None, name)
            .map(CqlType::Udt)
            .ok_or_else(|| TypeParseError {
                message: format!("Unknown type {name}"),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_text_round_trips() {
        for text in [
            "int",
            "text",
            "frozen<map<text, int>>",
            "list<frozen<set<bigint>>>",
            "map<int, frozen<list<text>>>",
            "tuple<int, text, frozen<list<int>>>",
            "vector<float, 3>",
            "frozen<tuple<int, blob>>",
        ] {
            let t = CqlType::parse(text, &NoUdts).expect("parses");
            assert_eq!(t.to_string(), text);
        }
    }

    #[test]
    fn nested_collections_are_frozen_and_varchar_is_text() {
        let t = CqlType::parse("list<set<varchar>>", &NoUdts).expect("parses");
        assert_eq!(t.to_string(), "list<frozen<set<text>>>");
    }

    #[test]
    fn unknown_type_is_an_error() {
        assert!(CqlType::parse("nosuch", &NoUdts).is_err());
        assert!(CqlType::parse("map<int>", &NoUdts).is_err());
        assert!(CqlType::parse("vector<float, 0>", &NoUdts).is_err());
    }

    #[test]
    fn identifiers_are_quoted_as_cassandra_prints_them() {
        assert_eq!(quote_identifier_if_needed("abc_1"), "abc_1");
        assert_eq!(quote_identifier_if_needed("Abc"), "\"Abc\"");
        assert_eq!(quote_identifier_if_needed("select"), "\"select\"");
        assert_eq!(quote_identifier_if_needed("a\"b"), "\"a\"\"b\"");
    }
}
