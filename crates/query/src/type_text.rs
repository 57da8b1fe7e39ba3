//! CQL type text as Cassandra's schema tables and DESCRIBE write it, and
//! Cassandra's `EmptyType` (a compact table's hidden value). A leaf: the
//! schema, user functions and the system tables all name types this way.

use rocksandra_data::types::CqlType;

/// The type of the hidden value column of a dense compact table declared
/// without one (Cassandra's `EmptyType`): its cells are empty.
pub const EMPTY_TYPE_CLASS: &str = "org.apache.cassandra.db.marshal.EmptyType";

/// Whether `ty` is Cassandra's `EmptyType`.
pub fn is_empty_type(ty: &CqlType) -> bool {
    matches!(ty, CqlType::Custom(class) if class == EMPTY_TYPE_CLASS)
}

/// A type as Cassandra writes it in schema tables and DESCRIBE: tuples are
/// always `frozen<tuple<...>>`, user types by their (quoted if needed) name.
pub fn cql_type_text(ty: &CqlType) -> String {
    match ty {
        CqlType::Native(n) => n.name().to_string(),
        CqlType::List(e) => format!("list<{}>", cql_type_text(e)),
        CqlType::Set(e) => format!("set<{}>", cql_type_text(e)),
        CqlType::Map(k, v) => format!("map<{}, {}>", cql_type_text(k), cql_type_text(v)),
        CqlType::Tuple(items) => format!("frozen<{}>", tuple_text(items)),
        CqlType::Frozen(inner) => match inner.as_ref() {
            CqlType::Tuple(items) => format!("frozen<{}>", tuple_text(items)),
            CqlType::Frozen(_) => cql_type_text(inner),
            other => format!("frozen<{}>", cql_type_text(other)),
        },
        CqlType::Vector(e, n) => format!("vector<{}, {n}>", cql_type_text(e)),
        // A compact table's hidden value of Cassandra's EmptyType.
        CqlType::Custom(_) if is_empty_type(ty) => "empty".to_string(),
        CqlType::Udt(_) | CqlType::Custom(_) => ty.to_string(),
    }
}

fn tuple_text(items: &[CqlType]) -> String {
    let items: Vec<String> = items.iter().map(cql_type_text).collect();
    format!("tuple<{}>", items.join(", "))
}
