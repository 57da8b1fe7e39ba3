//! Type expressions as written in CQL text, before user-defined types are
//! resolved against a schema (which this crate never sees).

use std::fmt;

pub use rocksandra_data::types::UdtResolver;
use rocksandra_data::types::{CqlType, NativeType};

use crate::ast::Ident;

/// A CQL type as written. User-defined types stay names until `resolve`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TypeExpr {
    Native(NativeType),
    List(Box<TypeExpr>),
    Set(Box<TypeExpr>),
    Map(Box<TypeExpr>, Box<TypeExpr>),
    Tuple(Vec<TypeExpr>),
    Frozen(Box<TypeExpr>),
    Vector(Box<TypeExpr>, u32),
    Udt {
        keyspace: Option<Ident>,
        name: Ident,
    },
    /// `'org.example.MyType'`.
    Custom(String),
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("Unknown type {0}")]
pub struct UnknownTypeError(pub String);

impl TypeExpr {
    /// Resolves UDT names and freezes nested multi-cell types the way
    /// Cassandra stores them (elements of collections, tuples and vectors).
    pub fn resolve(&self, udts: &dyn UdtResolver) -> Result<CqlType, UnknownTypeError> {
        let nested = |t: &TypeExpr| t.resolve(udts).map(|t| Box::new(t.freeze()));
        Ok(match self {
            TypeExpr::Native(n) => CqlType::Native(*n),
            TypeExpr::List(e) => CqlType::List(nested(e)?),
            TypeExpr::Set(e) => CqlType::Set(nested(e)?),
            TypeExpr::Map(k, v) => CqlType::Map(nested(k)?, nested(v)?),
            TypeExpr::Tuple(items) => CqlType::Tuple(
                items
                    .iter()
                    .map(|t| t.resolve(udts).map(CqlType::freeze))
                    .collect::<Result<_, _>>()?,
            ),
            TypeExpr::Vector(e, n) => CqlType::Vector(nested(e)?, *n),
            TypeExpr::Frozen(inner) => match inner.resolve(udts)? {
                frozen @ CqlType::Frozen(_) => frozen,
                other => CqlType::Frozen(Box::new(other)),
            },
            TypeExpr::Udt { keyspace, name } => {
                let keyspace = keyspace.as_ref().map(Ident::as_str);
                let udt = udts
                    .resolve_udt(keyspace, name.as_str())
                    .ok_or_else(|| UnknownTypeError(name.as_str().to_string()))?;
                CqlType::Udt(udt)
            }
            TypeExpr::Custom(class) => CqlType::Custom(class.clone()),
        })
    }
}

impl fmt::Display for TypeExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypeExpr::Native(n) => f.write_str(n.name()),
            TypeExpr::List(e) => write!(f, "list<{e}>"),
            TypeExpr::Set(e) => write!(f, "set<{e}>"),
            TypeExpr::Map(k, v) => write!(f, "map<{k}, {v}>"),
            TypeExpr::Tuple(items) => {
                f.write_str("tuple<")?;
                crate::printer::comma_list(f, items)?;
                f.write_str(">")
            }
            TypeExpr::Frozen(inner) => write!(f, "frozen<{inner}>"),
            TypeExpr::Vector(e, n) => write!(f, "vector<{e}, {n}>"),
            TypeExpr::Udt { keyspace, name } => {
                if let Some(ks) = keyspace {
                    write!(f, "{ks}.")?;
                }
                f.write_str(&crate::printer::type_name(name.as_str()))
            }
            TypeExpr::Custom(class) => crate::printer::string_literal(f, class),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocksandra_data::types::UdtType;

    struct OneUdt;

    impl UdtResolver for OneUdt {
        fn resolve_udt(&self, keyspace: Option<&str>, name: &str) -> Option<UdtType> {
            (name == "address").then(|| UdtType {
                keyspace: keyspace.unwrap_or("ks").to_string(),
                name: name.to_string(),
                fields: vec![("street".into(), CqlType::Native(NativeType::Text))],
            })
        }
    }

    fn udt(name: &str) -> TypeExpr {
        TypeExpr::Udt {
            keyspace: None,
            name: Ident::new(name),
        }
    }

    #[test]
    fn resolves_udts_and_freezes_nested_types() {
        let ty = TypeExpr::List(Box::new(udt("address")));
        let resolved = ty.resolve(&OneUdt).expect("resolves");
        assert_eq!(resolved.to_string(), "list<frozen<address>>");
        let frozen = TypeExpr::Frozen(Box::new(TypeExpr::Frozen(Box::new(udt("address")))));
        assert_eq!(
            frozen.resolve(&OneUdt).expect("resolves").to_string(),
            "frozen<address>"
        );
    }

    #[test]
    fn unknown_udt_is_an_error() {
        let err = udt("nope").resolve(&OneUdt).expect_err("should fail");
        assert_eq!(err.to_string(), "Unknown type nope");
    }
}
