//! What a statement is given and gives back: the request's options
//! (`Request`), where time and randomness come from (`Env`) and the
//! result (`Outcome`). A leaf: every statement module and the executor
//! use these, and this module uses none of them.

use std::sync::Arc;

use bytes::Bytes;
use rocksandra_wire::{ResultBody, Rows, SchemaChange};

/// Where time and randomness come from.
#[derive(Clone)]
pub struct Env {
    /// Microseconds since the Unix epoch.
    pub now_micros: Arc<dyn Fn() -> i64 + Send + Sync>,
    pub random: Arc<dyn Fn() -> u64 + Send + Sync>,
}

impl Env {
    /// The system clock and a seeded xorshift generator.
    pub fn system() -> Env {
        use std::sync::atomic::{AtomicU64, Ordering};
        let now = rocksandra_data::time::system_micros;
        let seed =
            AtomicU64::new((now() as u64) ^ 0x9E37_79B9_7F4A_7C15 ^ u64::from(std::process::id()));
        Env {
            now_micros: Arc::new(now),
            random: Arc::new(move || {
                // SplitMix64: good enough for ids, not for secrets.
                let mut z = seed.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^ (z >> 31)
            }),
        }
    }
}

/// One request's options (from QUERY/EXECUTE parameters).
#[derive(Clone, Debug, Default)]
pub struct Request {
    /// The session keyspace, or the v5 per-query keyspace.
    pub keyspace: Option<String>,
    /// Positional values.
    pub values: Vec<rocksandra_wire::Value>,
    /// Named values (v3+ NAMES flag): matched to markers by name.
    pub names: Option<Vec<String>>,
    pub page_size: Option<usize>,
    pub paging_state: Option<Bytes>,
    pub timestamp: Option<i64>,
    pub now_in_seconds: Option<i32>,
    pub skip_metadata: bool,
    /// The logged-in user (PasswordAuthenticator), None when anonymous.
    pub user: Option<String>,
    /// Issued by the server itself (role management): may write the
    /// system tables kept in storage. Never set from a client request.
    pub internal: bool,
    pub consistency: rocksandra_wire::Consistency,
    /// For conditional statements (SERIAL or LOCAL_SERIAL).
    pub serial_consistency: Option<rocksandra_wire::Consistency>,
}

/// What running a statement produced.
#[derive(Debug)]
pub struct Outcome {
    pub body: ResultBody,
    pub warnings: Vec<String>,
    /// Sent as a SCHEMA_CHANGE event to registered connections.
    pub schema_change: Option<SchemaChange>,
}

impl Outcome {
    pub fn void() -> Outcome {
        Outcome {
            body: ResultBody::Void,
            warnings: Vec::new(),
            schema_change: None,
        }
    }

    pub fn rows(rows: Rows) -> Outcome {
        Outcome {
            body: ResultBody::Rows(rows),
            warnings: Vec::new(),
            schema_change: None,
        }
    }
}

/// The request's values in marker order (named values placed by name);
/// positional values are used as they are, without a copy.
pub fn bind_values<'a>(
    parsed: &rocksandra_cql::ParsedStatement,
    request: &'a Request,
) -> crate::Result<std::borrow::Cow<'a, [rocksandra_wire::Value]>> {
    let count = parsed.bind_variables.len();
    match &request.names {
        None => {
            if request.values.len() != count {
                return Err(crate::QueryError::invalid(format!(
                    "there were {count} markers(?) in CQL but {} bound variables",
                    request.values.len()
                )));
            }
            Ok(std::borrow::Cow::Borrowed(&request.values))
        }
        Some(names) => {
            let mut out = vec![rocksandra_wire::Value::Unset; count];
            for (var, slot) in parsed.bind_variables.iter().zip(out.iter_mut()) {
                let Some(name) = &var.name else {
                    return Err(crate::QueryError::invalid(
                        "Named values given for a query with positional markers",
                    ));
                };
                let Some(i) = names.iter().position(|n| n == name.as_str()) else {
                    return Err(crate::QueryError::invalid(format!(
                        "No value has been specified for bind variable {}",
                        name.as_str()
                    )));
                };
                *slot = request
                    .values
                    .get(i)
                    .cloned()
                    .unwrap_or(rocksandra_wire::Value::Unset);
            }
            Ok(std::borrow::Cow::Owned(out))
        }
    }
}
