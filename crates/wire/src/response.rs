//! Response messages (spec 4.2): READY, AUTHENTICATE, SUPPORTED, RESULT
//! (void, rows, set keyspace, prepared, schema change), EVENT, the AUTH_*
//! replies; ERROR lives in `error_response`.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use rocksandra_data::types::CqlType;

use crate::error::{WireError, WireResult};
use crate::error_response::ErrorResponse;
use crate::frame::{Opcode, ProtocolVersion};
use crate::limits::{COLUMN_COUNT_MAX, ROW_COUNT_MAX};
use crate::primitives::{
    put_bytes, put_inet, put_short_bytes, put_string, put_string_list, put_string_multimap, Reader,
    StringMultimap,
};
use crate::types::{put_type, read_type};

/// A response message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    Error(ErrorResponse),
    Ready,
    /// The authenticator's Java class name.
    Authenticate(String),
    Supported(StringMultimap),
    Result(ResultBody),
    Event(Event),
    AuthChallenge(Option<Bytes>),
    AuthSuccess(Option<Bytes>),
}

impl Response {
    pub fn opcode(&self) -> Opcode {
        match self {
            Response::Error(_) => Opcode::Error,
            Response::Ready => Opcode::Ready,
            Response::Authenticate(_) => Opcode::Authenticate,
            Response::Supported(_) => Opcode::Supported,
            Response::Result(_) => Opcode::Result,
            Response::Event(_) => Opcode::Event,
            Response::AuthChallenge(_) => Opcode::AuthChallenge,
            Response::AuthSuccess(_) => Opcode::AuthSuccess,
        }
    }

    /// Writes the message body (without envelope extras).
    pub fn encode_body(&self, out: &mut BytesMut, version: ProtocolVersion) -> WireResult<()> {
        match self {
            Response::Error(e) => e.put(out, version),
            Response::Ready => Ok(()),
            Response::Authenticate(class) => put_string(out, "authenticator", class),
            Response::Supported(options) => put_string_multimap(out, "supported", options),
            Response::Result(result) => result.put(out, version),
            Response::Event(event) => event.put(out, version),
            Response::AuthChallenge(token) | Response::AuthSuccess(token) => {
                put_bytes(out, "auth token", token.as_deref())
            }
        }
    }

    /// Reads the message body of a response with this opcode.
    pub fn decode_body(
        opcode: Opcode,
        r: &mut Reader,
        version: ProtocolVersion,
    ) -> WireResult<Response> {
        Ok(match opcode {
            Opcode::Error => Response::Error(ErrorResponse::read(r, version)?),
            Opcode::Ready => Response::Ready,
            Opcode::Authenticate => Response::Authenticate(r.string("authenticator")?),
            Opcode::Supported => Response::Supported(r.string_multimap("supported")?),
            Opcode::Result => Response::Result(ResultBody::read(r, version)?),
            Opcode::Event => Response::Event(Event::read(r)?),
            Opcode::AuthChallenge => Response::AuthChallenge(r.bytes("auth token")?),
            Opcode::AuthSuccess => Response::AuthSuccess(r.bytes("auth token")?),
            other => {
                return Err(WireError::WrongDirection {
                    opcode: other.byte(),
                    expected: "RESPONSE",
                })
            }
        })
    }
}

/// The body of a RESULT message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultBody {
    Void,
    Rows(Rows),
    SetKeyspace(String),
    Prepared(Prepared),
    SchemaChange(SchemaChange),
}

mod result_kind {
    pub const VOID: i32 = 0x0001;
    pub const ROWS: i32 = 0x0002;
    pub const SET_KEYSPACE: i32 = 0x0003;
    pub const PREPARED: i32 = 0x0004;
    pub const SCHEMA_CHANGE: i32 = 0x0005;
}

impl ResultBody {
    fn put(&self, out: &mut BytesMut, version: ProtocolVersion) -> WireResult<()> {
        match self {
            ResultBody::Void => {
                out.put_i32(result_kind::VOID);
                Ok(())
            }
            ResultBody::Rows(rows) => {
                out.put_i32(result_kind::ROWS);
                rows.put(out, version)
            }
            ResultBody::SetKeyspace(keyspace) => {
                out.put_i32(result_kind::SET_KEYSPACE);
                put_string(out, "keyspace", keyspace)
            }
            ResultBody::Prepared(prepared) => {
                out.put_i32(result_kind::PREPARED);
                prepared.put(out, version)
            }
            ResultBody::SchemaChange(change) => {
                out.put_i32(result_kind::SCHEMA_CHANGE);
                change.put(out, version)
            }
        }
    }

    fn read(r: &mut Reader, version: ProtocolVersion) -> WireResult<ResultBody> {
        Ok(match r.int("result kind")? {
            result_kind::VOID => ResultBody::Void,
            result_kind::ROWS => ResultBody::Rows(Rows::read(r, version)?),
            result_kind::SET_KEYSPACE => ResultBody::SetKeyspace(r.string("keyspace")?),
            result_kind::PREPARED => ResultBody::Prepared(Prepared::read(r, version)?),
            result_kind::SCHEMA_CHANGE => ResultBody::SchemaChange(SchemaChange::read(r)?),
            other => {
                return Err(WireError::InvalidValue {
                    what: "result kind",
                    value: i64::from(other),
                })
            }
        })
    }
}

/// Keyspace and table a column belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TableSpec {
    pub keyspace: String,
    pub table: String,
}

impl TableSpec {
    fn put(&self, out: &mut BytesMut) -> WireResult<()> {
        put_string(out, "keyspace", &self.keyspace)?;
        put_string(out, "table", &self.table)
    }

    fn read(r: &mut Reader) -> WireResult<TableSpec> {
        Ok(TableSpec {
            keyspace: r.string("keyspace")?,
            table: r.string("table")?,
        })
    }
}

/// One column of result or bind metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnSpec {
    pub table: TableSpec,
    pub name: String,
    pub cql_type: CqlType,
}

/// The column specs of a metadata block. Encoding uses the global table spec
/// when every column shares one table, as Cassandra does; decoding gives
/// each column its table either way.
fn put_column_specs(
    out: &mut BytesMut,
    columns: &[ColumnSpec],
    version: ProtocolVersion,
) -> WireResult<()> {
    let global = global_table_spec(columns);
    if let Some(table) = global {
        table.put(out)?;
    }
    for column in columns {
        if global.is_none() {
            column.table.put(out)?;
        }
        put_string(out, "column name", &column.name)?;
        put_type(out, &column.cql_type, version)?;
    }
    Ok(())
}

fn global_table_spec(columns: &[ColumnSpec]) -> Option<&TableSpec> {
    let first = &columns.first()?.table;
    columns.iter().all(|c| &c.table == first).then_some(first)
}

fn read_column_specs(r: &mut Reader, count: usize, global: bool) -> WireResult<Vec<ColumnSpec>> {
    let global_table = if global {
        Some(TableSpec::read(r)?)
    } else {
        None
    };
    r.need("column specs", count.saturating_mul(COLUMN_SPEC_BYTES_MIN))?;
    let mut columns = Vec::with_capacity(count);
    for _ in 0..count {
        let table = match &global_table {
            Some(table) => table.clone(),
            None => TableSpec::read(r)?,
        };
        let name = r.string("column name")?;
        let cql_type = read_type(r)?;
        columns.push(ColumnSpec {
            table,
            name,
            cql_type,
        });
    }
    Ok(columns)
}

/// Smallest encoding of one column spec: empty name and a 2-byte type id.
const COLUMN_SPEC_BYTES_MIN: usize = 4;

mod rows_flag {
    pub const GLOBAL_TABLES_SPEC: i32 = 0x0001;
    pub const HAS_MORE_PAGES: i32 = 0x0002;
    pub const NO_METADATA: i32 = 0x0004;
    pub const METADATA_CHANGED: i32 = 0x0008;
}

/// Column metadata: the specs, or only their count (NO_METADATA, when the
/// client asked to skip metadata it already has). The specs are shared: a
/// prepared statement answers every EXECUTE with the same ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnsMetadata {
    Specs(Arc<[ColumnSpec]>),
    NoMetadata { column_count: u32 },
}

/// `<metadata>` of a Rows result (and the result metadata of Prepared).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowsMetadata {
    pub columns: ColumnsMetadata,
    /// Present when there are more pages (HAS_MORE_PAGES).
    pub paging_state: Option<Bytes>,
    /// v5 METADATA_CHANGED: the id of the new result metadata.
    pub new_metadata_id: Option<Bytes>,
}

impl RowsMetadata {
    pub fn column_count(&self) -> usize {
        match &self.columns {
            ColumnsMetadata::Specs(specs) => specs.len(),
            ColumnsMetadata::NoMetadata { column_count } => *column_count as usize,
        }
    }

    fn put(&self, out: &mut BytesMut, version: ProtocolVersion) -> WireResult<()> {
        if self.new_metadata_id.is_some() && version < ProtocolVersion::V5 {
            return Err(WireError::NotInVersion {
                what: "new result metadata id",
                version: version.number(),
            });
        }
        let specs = match &self.columns {
            ColumnsMetadata::Specs(specs) => Some(&specs[..]),
            ColumnsMetadata::NoMetadata { .. } => None,
        };
        let global = specs.and_then(global_table_spec).is_some();
        let flags = flag_if(global, rows_flag::GLOBAL_TABLES_SPEC)
            | flag_if(self.paging_state.is_some(), rows_flag::HAS_MORE_PAGES)
            | flag_if(specs.is_none(), rows_flag::NO_METADATA)
            | flag_if(self.new_metadata_id.is_some(), rows_flag::METADATA_CHANGED);
        out.put_i32(flags);
        put_count(out, "column count", self.column_count())?;
        if let Some(state) = &self.paging_state {
            put_bytes(out, "paging state", Some(state))?;
        }
        if let Some(id) = &self.new_metadata_id {
            put_short_bytes(out, "new metadata id", id)?;
        }
        match specs {
            Some(specs) => put_column_specs(out, specs, version),
            None => Ok(()),
        }
    }

    fn read(r: &mut Reader, version: ProtocolVersion) -> WireResult<RowsMetadata> {
        let flags = r.int("rows metadata flags")?;
        let column_count = read_column_count(r)?;
        let paging_state = if flags & rows_flag::HAS_MORE_PAGES != 0 {
            r.bytes("paging state")?
        } else {
            None
        };
        let changed = flags & rows_flag::METADATA_CHANGED != 0 && version >= ProtocolVersion::V5;
        let new_metadata_id = if changed {
            Some(r.short_bytes("new metadata id")?)
        } else {
            None
        };
        let columns = if flags & rows_flag::NO_METADATA != 0 {
            ColumnsMetadata::NoMetadata {
                column_count: column_count as u32,
            }
        } else {
            let global = flags & rows_flag::GLOBAL_TABLES_SPEC != 0;
            ColumnsMetadata::Specs(read_column_specs(r, column_count, global)?.into())
        };
        Ok(RowsMetadata {
            columns,
            paging_state,
            new_metadata_id,
        })
    }
}

fn flag_if(set: bool, bit: i32) -> i32 {
    if set {
        bit
    } else {
        0
    }
}

fn put_count(out: &mut BytesMut, what: &'static str, count: usize) -> WireResult<()> {
    let count = i32::try_from(count).map_err(|_| WireError::TooLongToEncode {
        what,
        len_bytes: count,
        max_bytes: i32::MAX as usize,
    })?;
    out.put_i32(count);
    Ok(())
}

fn read_column_count(r: &mut Reader) -> WireResult<usize> {
    // A column with no metadata costs nothing in the header, so only the
    // limit applies here; rows pay four bytes per cell, checked in `Rows::read`.
    r.int_count("column count", COLUMN_COUNT_MAX, 0)
}

/// A Rows result: metadata and rows of opaque cells (`None` is null), already
/// serialized by the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rows {
    pub metadata: RowsMetadata,
    pub rows: Vec<Vec<Option<Bytes>>>,
}

/// Smallest encoding of a cell: its `[bytes]` length.
const CELL_BYTES_MIN: usize = 4;

impl Rows {
    fn put(&self, out: &mut BytesMut, version: ProtocolVersion) -> WireResult<()> {
        self.metadata.put(out, version)?;
        let width = self.metadata.column_count();
        put_count(out, "row count", self.rows.len())?;
        for row in &self.rows {
            if row.len() != width {
                return Err(WireError::InvalidValue {
                    what: "row width (cells in a row) against column count",
                    value: row.len() as i64,
                });
            }
            row.iter()
                .try_for_each(|cell| put_bytes(out, "cell", cell.as_deref()))?;
        }
        Ok(())
    }

    fn read(r: &mut Reader, version: ProtocolVersion) -> WireResult<Rows> {
        let metadata = RowsMetadata::read(r, version)?;
        let width = metadata.column_count();
        let row_bytes_min = width.saturating_mul(CELL_BYTES_MIN);
        let count = r.int_count("row count", ROW_COUNT_MAX, row_bytes_min)?;
        let mut rows = Vec::with_capacity(if width == 0 { 0 } else { count });
        for _ in 0..count {
            let row = (0..width)
                .map(|_| r.bytes("cell"))
                .collect::<WireResult<Vec<_>>>()?;
            rows.push(row);
        }
        Ok(Rows { metadata, rows })
    }
}

/// Bind-variable metadata of a Prepared result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedMetadata {
    /// Indexes of the bind variables that make up the partition key, in key order.
    pub pk_indexes: Vec<u16>,
    pub columns: Vec<ColumnSpec>,
}

impl PreparedMetadata {
    fn put(&self, out: &mut BytesMut, version: ProtocolVersion) -> WireResult<()> {
        let global = global_table_spec(&self.columns).is_some();
        out.put_i32(flag_if(global, rows_flag::GLOBAL_TABLES_SPEC));
        put_count(out, "bind column count", self.columns.len())?;
        // v4 brought the partition key's bind indexes (token-aware routing).
        if version >= ProtocolVersion::V4 {
            put_count(out, "partition key count", self.pk_indexes.len())?;
            self.pk_indexes.iter().for_each(|i| out.put_u16(*i));
        }
        put_column_specs(out, &self.columns, version)
    }

    fn read(r: &mut Reader, version: ProtocolVersion) -> WireResult<PreparedMetadata> {
        let flags = r.int("prepared metadata flags")?;
        let count = r.int_count("bind column count", COLUMN_COUNT_MAX, COLUMN_SPEC_BYTES_MIN)?;
        let pk_indexes = if version >= ProtocolVersion::V4 {
            let pk_count = r.int_count("partition key count", COLUMN_COUNT_MAX, 2)?;
            (0..pk_count)
                .map(|_| r.short("partition key index"))
                .collect::<WireResult<_>>()?
        } else {
            Vec::new()
        };
        let global = flags & rows_flag::GLOBAL_TABLES_SPEC != 0;
        let columns = read_column_specs(r, count, global)?;
        Ok(PreparedMetadata {
            pk_indexes,
            columns,
        })
    }
}

/// A Prepared result. `result_metadata_id` is present in v5 only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    pub id: Bytes,
    pub result_metadata_id: Option<Bytes>,
    pub bind_metadata: PreparedMetadata,
    pub result_metadata: RowsMetadata,
}

impl Prepared {
    fn put(&self, out: &mut BytesMut, version: ProtocolVersion) -> WireResult<()> {
        put_short_bytes(out, "prepared id", &self.id)?;
        match (version, &self.result_metadata_id) {
            (ProtocolVersion::V3 | ProtocolVersion::V4, None) => {}
            (ProtocolVersion::V5, Some(id)) => put_short_bytes(out, "result metadata id", id)?,
            (v, _) => {
                return Err(WireError::NotInVersion {
                    what: "prepared result metadata id (required in v5, absent before)",
                    version: v.number(),
                })
            }
        }
        self.bind_metadata.put(out, version)?;
        self.result_metadata.put(out, version)
    }

    fn read(r: &mut Reader, version: ProtocolVersion) -> WireResult<Prepared> {
        let id = r.short_bytes("prepared id")?;
        let result_metadata_id = match version {
            ProtocolVersion::V3 | ProtocolVersion::V4 => None,
            ProtocolVersion::V5 => Some(r.short_bytes("result metadata id")?),
        };
        Ok(Prepared {
            id,
            result_metadata_id,
            bind_metadata: PreparedMetadata::read(r, version)?,
            result_metadata: RowsMetadata::read(r, version)?,
        })
    }
}

/// Declares an enum of the protocol's upper-case words, with both conversions.
macro_rules! wire_words {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $word:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $word),+ }
            }

            pub fn from_name(name: &str) -> Option<$name> {
                $name::ALL.iter().copied().find(|v| v.name() == name)
            }
        }
    };
}

wire_words!(
    /// The change a schema change reports.
    SchemaChangeType {
        Created => "CREATED",
        Updated => "UPDATED",
        Dropped => "DROPPED",
    }
);

wire_words!(
    /// Event types a connection can REGISTER for.
    EventType {
        TopologyChange => "TOPOLOGY_CHANGE",
        StatusChange => "STATUS_CHANGE",
        SchemaChange => "SCHEMA_CHANGE",
    }
);

wire_words!(
    /// TOPOLOGY_CHANGE kinds (MOVED_NODE is read for older servers).
    TopologyChangeType {
        NewNode => "NEW_NODE",
        RemovedNode => "REMOVED_NODE",
        MovedNode => "MOVED_NODE",
    }
);

wire_words!(
    StatusChangeType {
        Up => "UP",
        Down => "DOWN",
    }
);

fn read_word<T>(
    r: &mut Reader,
    what: &'static str,
    parse: impl Fn(&str) -> Option<T>,
) -> WireResult<T> {
    let word = r.string(what)?;
    parse(&word).ok_or(WireError::UnknownName { what, value: word })
}

/// What a schema change touched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaChangeTarget {
    Keyspace {
        keyspace: String,
    },
    Table {
        keyspace: String,
        table: String,
    },
    Type {
        keyspace: String,
        name: String,
    },
    Function {
        keyspace: String,
        name: String,
        arg_types: Vec<String>,
    },
    Aggregate {
        keyspace: String,
        name: String,
        arg_types: Vec<String>,
    },
}

/// A schema change, as a RESULT or inside a SCHEMA_CHANGE event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaChange {
    pub change_type: SchemaChangeType,
    pub target: SchemaChangeTarget,
}

impl SchemaChange {
    /// The change as `version` carries it: v3 has no function or aggregate
    /// target, and reports those changes as an update of their keyspace,
    /// as Cassandra does.
    fn in_version(&self, version: ProtocolVersion) -> Option<SchemaChange> {
        match &self.target {
            SchemaChangeTarget::Function { keyspace, .. }
            | SchemaChangeTarget::Aggregate { keyspace, .. }
                if version < ProtocolVersion::V4 =>
            {
                Some(SchemaChange {
                    change_type: SchemaChangeType::Updated,
                    target: SchemaChangeTarget::Keyspace {
                        keyspace: keyspace.clone(),
                    },
                })
            }
            _ => None,
        }
    }

    fn put(&self, out: &mut BytesMut, version: ProtocolVersion) -> WireResult<()> {
        if let Some(older) = self.in_version(version) {
            return older.put(out, version);
        }
        put_string(out, "change type", self.change_type.name())?;
        let (word, keyspace, name, arg_types) = match &self.target {
            SchemaChangeTarget::Keyspace { keyspace } => ("KEYSPACE", keyspace, None, None),
            SchemaChangeTarget::Table { keyspace, table } => ("TABLE", keyspace, Some(table), None),
            SchemaChangeTarget::Type { keyspace, name } => ("TYPE", keyspace, Some(name), None),
            SchemaChangeTarget::Function {
                keyspace,
                name,
                arg_types,
            } => ("FUNCTION", keyspace, Some(name), Some(arg_types)),
            SchemaChangeTarget::Aggregate {
                keyspace,
                name,
                arg_types,
            } => ("AGGREGATE", keyspace, Some(name), Some(arg_types)),
        };
        put_string(out, "change target", word)?;
        put_string(out, "keyspace", keyspace)?;
        if let Some(name) = name {
            put_string(out, "name", name)?;
        }
        match arg_types {
            Some(arg_types) => put_string_list(out, "argument types", arg_types),
            None => Ok(()),
        }
    }

    fn read(r: &mut Reader) -> WireResult<SchemaChange> {
        let change_type = read_word(r, "change type", SchemaChangeType::from_name)?;
        let target = r.string("change target")?;
        let keyspace = r.string("keyspace")?;
        let target = match target.as_str() {
            "KEYSPACE" => SchemaChangeTarget::Keyspace { keyspace },
            "TABLE" => SchemaChangeTarget::Table {
                keyspace,
                table: r.string("table")?,
            },
            "TYPE" => SchemaChangeTarget::Type {
                keyspace,
                name: r.string("type name")?,
            },
            "FUNCTION" => SchemaChangeTarget::Function {
                keyspace,
                name: r.string("function name")?,
                arg_types: r.string_list("argument types")?,
            },
            "AGGREGATE" => SchemaChangeTarget::Aggregate {
                keyspace,
                name: r.string("aggregate name")?,
                arg_types: r.string_list("argument types")?,
            },
            _ => {
                return Err(WireError::UnknownName {
                    what: "change target",
                    value: target,
                })
            }
        };
        Ok(SchemaChange {
            change_type,
            target,
        })
    }
}

/// A server-pushed EVENT (sent on stream -1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    TopologyChange {
        change: TopologyChangeType,
        address: SocketAddr,
    },
    StatusChange {
        change: StatusChangeType,
        address: SocketAddr,
    },
    SchemaChange(SchemaChange),
}

impl Event {
    pub fn event_type(&self) -> EventType {
        match self {
            Event::TopologyChange { .. } => EventType::TopologyChange,
            Event::StatusChange { .. } => EventType::StatusChange,
            Event::SchemaChange(_) => EventType::SchemaChange,
        }
    }

    fn put(&self, out: &mut BytesMut, version: ProtocolVersion) -> WireResult<()> {
        put_string(out, "event type", self.event_type().name())?;
        match self {
            Event::TopologyChange { change, address } => {
                put_string(out, "topology change", change.name())?;
                put_inet(out, address);
                Ok(())
            }
            Event::StatusChange { change, address } => {
                put_string(out, "status change", change.name())?;
                put_inet(out, address);
                Ok(())
            }
            Event::SchemaChange(change) => change.put(out, version),
        }
    }

    fn read(r: &mut Reader) -> WireResult<Event> {
        Ok(match read_word(r, "event type", EventType::from_name)? {
            EventType::TopologyChange => Event::TopologyChange {
                change: read_word(r, "topology change", TopologyChangeType::from_name)?,
                address: r.inet("node address")?,
            },
            EventType::StatusChange => Event::StatusChange {
                change: read_word(r, "status change", StatusChangeType::from_name)?,
                address: r.inet("node address")?,
            },
            EventType::SchemaChange => Event::SchemaChange(SchemaChange::read(r)?),
        })
    }
}
