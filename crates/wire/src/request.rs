//! Request messages (spec 4.1): STARTUP, AUTH_RESPONSE, OPTIONS, QUERY,
//! PREPARE, EXECUTE, BATCH, REGISTER, with their query parameters.

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::{WireError, WireResult};
use crate::frame::{Opcode, ProtocolVersion};
use crate::primitives::{
    put_bytes, put_long_string, put_short_bytes, put_short_len, put_string, put_string_map,
    put_value, Reader, StringMap, Value,
};
use crate::response::EventType;
use crate::types::Consistency;

/// Bound values of a QUERY, EXECUTE or batch statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BoundValues {
    Positional(Vec<Value>),
    /// With names for values (flag 0x40).
    Named(Vec<(String, Value)>),
}

impl Default for BoundValues {
    fn default() -> Self {
        BoundValues::Positional(Vec::new())
    }
}

impl BoundValues {
    pub fn len(&self) -> usize {
        match self {
            BoundValues::Positional(v) => v.len(),
            BoundValues::Named(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn is_named(&self) -> bool {
        matches!(self, BoundValues::Named(_))
    }

    fn put(&self, out: &mut BytesMut) -> WireResult<()> {
        put_short_len(out, "value count", self.len())?;
        match self {
            BoundValues::Positional(values) => {
                values.iter().try_for_each(|v| put_value(out, "value", v))
            }
            BoundValues::Named(values) => values.iter().try_for_each(|(name, v)| {
                put_string(out, "value name", name)?;
                put_value(out, "value", v)
            }),
        }
    }

    fn read(r: &mut Reader, named: bool, version: ProtocolVersion) -> WireResult<BoundValues> {
        let min_bytes = if named { 6 } else { 4 };
        let count = r.short_count("value count", min_bytes)?;
        if named {
            let read_one =
                |r: &mut Reader| Ok((r.string("value name")?, r.bound_value("value", version)?));
            let values = (0..count).map(|_| read_one(r)).collect::<WireResult<_>>()?;
            Ok(BoundValues::Named(values))
        } else {
            let values = (0..count)
                .map(|_| r.bound_value("value", version))
                .collect::<WireResult<_>>()?;
            Ok(BoundValues::Positional(values))
        }
    }
}

/// Flag bits of `<query_parameters>` and of BATCH (spec 4.1.4, 4.1.7).
mod flag {
    pub const VALUES: u32 = 0x01;
    pub const SKIP_METADATA: u32 = 0x02;
    pub const PAGE_SIZE: u32 = 0x04;
    pub const PAGING_STATE: u32 = 0x08;
    pub const SERIAL_CONSISTENCY: u32 = 0x10;
    pub const DEFAULT_TIMESTAMP: u32 = 0x20;
    pub const NAMES_FOR_VALUES: u32 = 0x40;
    pub const KEYSPACE: u32 = 0x80;
    pub const NOW_IN_SECONDS: u32 = 0x100;
}

/// Query flags are a [byte] in v4 and an [int] in v5.
fn read_flags(r: &mut Reader, version: ProtocolVersion) -> WireResult<u32> {
    match version {
        ProtocolVersion::V3 | ProtocolVersion::V4 => Ok(u32::from(r.byte("flags")?)),
        ProtocolVersion::V5 => Ok(r.int("flags")? as u32),
    }
}

fn put_flags(out: &mut BytesMut, flags: u32, version: ProtocolVersion) -> WireResult<()> {
    match version {
        ProtocolVersion::V3 | ProtocolVersion::V4 => {
            let byte = u8::try_from(flags).map_err(|_| WireError::NotInVersion {
                what: "keyspace or now_in_seconds",
                version: version.number(),
            })?;
            out.put_u8(byte);
        }
        ProtocolVersion::V5 => out.put_u32(flags),
    }
    Ok(())
}

fn flag_if(set: bool, bit: u32) -> u32 {
    if set {
        bit
    } else {
        0
    }
}

/// `<query_parameters>` of QUERY and EXECUTE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryParameters {
    pub consistency: Consistency,
    pub values: BoundValues,
    pub skip_metadata: bool,
    pub page_size: Option<i32>,
    pub paging_state: Option<Bytes>,
    pub serial_consistency: Option<Consistency>,
    pub default_timestamp_micros: Option<i64>,
    /// v5 only.
    pub keyspace: Option<String>,
    /// v5 only.
    pub now_in_seconds: Option<i32>,
}

impl QueryParameters {
    pub fn new(consistency: Consistency) -> QueryParameters {
        QueryParameters {
            consistency,
            values: BoundValues::default(),
            skip_metadata: false,
            page_size: None,
            paging_state: None,
            serial_consistency: None,
            default_timestamp_micros: None,
            keyspace: None,
            now_in_seconds: None,
        }
    }

    fn flags(&self) -> u32 {
        flag_if(
            !self.values.is_empty() || self.values.is_named(),
            flag::VALUES,
        ) | flag_if(self.values.is_named(), flag::NAMES_FOR_VALUES)
            | flag_if(self.skip_metadata, flag::SKIP_METADATA)
            | flag_if(self.page_size.is_some(), flag::PAGE_SIZE)
            | flag_if(self.paging_state.is_some(), flag::PAGING_STATE)
            | flag_if(self.serial_consistency.is_some(), flag::SERIAL_CONSISTENCY)
            | flag_if(
                self.default_timestamp_micros.is_some(),
                flag::DEFAULT_TIMESTAMP,
            )
            | flag_if(self.keyspace.is_some(), flag::KEYSPACE)
            | flag_if(self.now_in_seconds.is_some(), flag::NOW_IN_SECONDS)
    }

    pub fn put(&self, out: &mut BytesMut, version: ProtocolVersion) -> WireResult<()> {
        self.consistency.put(out);
        let flags = self.flags();
        put_flags(out, flags, version)?;
        if flags & flag::VALUES != 0 {
            self.values.put(out)?;
        }
        if let Some(page_size) = self.page_size {
            out.put_i32(page_size);
        }
        if let Some(state) = &self.paging_state {
            put_bytes(out, "paging state", Some(state))?;
        }
        put_optional_tail(out, self.serial_consistency, self.default_timestamp_micros)?;
        put_v5_tail(out, self.keyspace.as_deref(), self.now_in_seconds)
    }

    pub fn read(r: &mut Reader, version: ProtocolVersion) -> WireResult<QueryParameters> {
        let consistency = Consistency::read(r, "consistency")?;
        let flags = read_flags(r, version)?;
        let values = if flags & flag::VALUES != 0 {
            BoundValues::read(r, flags & flag::NAMES_FOR_VALUES != 0, version)?
        } else {
            BoundValues::default()
        };
        let skip_metadata = flags & flag::SKIP_METADATA != 0;
        let page_size = read_if(flags, flag::PAGE_SIZE, || r.int("page size"))?;
        let paging_state = read_if(flags, flag::PAGING_STATE, || r.bytes("paging state"))?;
        let tail = OptionalTail::read(r, flags)?;
        Ok(QueryParameters {
            consistency,
            values,
            skip_metadata,
            page_size,
            paging_state: paging_state.flatten(),
            serial_consistency: tail.serial_consistency,
            default_timestamp_micros: tail.default_timestamp_micros,
            keyspace: tail.keyspace,
            now_in_seconds: tail.now_in_seconds,
        })
    }
}

fn read_if<T>(flags: u32, bit: u32, read: impl FnOnce() -> WireResult<T>) -> WireResult<Option<T>> {
    if flags & bit != 0 {
        read().map(Some)
    } else {
        Ok(None)
    }
}

fn put_optional_tail(
    out: &mut BytesMut,
    serial_consistency: Option<Consistency>,
    default_timestamp_micros: Option<i64>,
) -> WireResult<()> {
    if let Some(serial) = serial_consistency {
        serial.put(out);
    }
    if let Some(timestamp) = default_timestamp_micros {
        out.put_i64(timestamp);
    }
    Ok(())
}

fn put_v5_tail(
    out: &mut BytesMut,
    keyspace: Option<&str>,
    now_in_seconds: Option<i32>,
) -> WireResult<()> {
    if let Some(keyspace) = keyspace {
        put_string(out, "keyspace", keyspace)?;
    }
    if let Some(now) = now_in_seconds {
        out.put_i32(now);
    }
    Ok(())
}

/// The fields QUERY/EXECUTE parameters and BATCH share, in wire order.
struct OptionalTail {
    serial_consistency: Option<Consistency>,
    default_timestamp_micros: Option<i64>,
    keyspace: Option<String>,
    now_in_seconds: Option<i32>,
}

impl OptionalTail {
    fn read(r: &mut Reader, flags: u32) -> WireResult<OptionalTail> {
        Ok(OptionalTail {
            serial_consistency: read_if(flags, flag::SERIAL_CONSISTENCY, || {
                Consistency::read(r, "serial consistency")
            })?,
            default_timestamp_micros: read_if(flags, flag::DEFAULT_TIMESTAMP, || {
                r.long("default timestamp")
            })?,
            keyspace: read_if(flags, flag::KEYSPACE, || r.string("keyspace"))?,
            now_in_seconds: read_if(flags, flag::NOW_IN_SECONDS, || r.int("now in seconds"))?,
        })
    }
}

/// QUERY.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    pub query: String,
    pub params: QueryParameters,
}

/// PREPARE; `keyspace` is v5 only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepare {
    pub query: String,
    pub keyspace: Option<String>,
}

/// EXECUTE; `result_metadata_id` is present in v5 and absent in v4.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Execute {
    pub id: Bytes,
    pub result_metadata_id: Option<Bytes>,
    pub params: QueryParameters,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BatchType {
    Logged,
    Unlogged,
    Counter,
}

impl BatchType {
    fn byte(self) -> u8 {
        match self {
            BatchType::Logged => 0,
            BatchType::Unlogged => 1,
            BatchType::Counter => 2,
        }
    }

    fn from_byte(byte: u8) -> WireResult<BatchType> {
        match byte {
            0 => Ok(BatchType::Logged),
            1 => Ok(BatchType::Unlogged),
            2 => Ok(BatchType::Counter),
            other => Err(WireError::InvalidValue {
                what: "batch type",
                value: i64::from(other),
            }),
        }
    }
}

/// A batch statement: query text or prepared id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchQuery {
    Text(String),
    Prepared(Bytes),
}

/// A batch statement with its positional values. Names for values in
/// batches are specified but cannot work (CASSANDRA-10246); like Cassandra,
/// this codec rejects them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchStatement {
    pub query: BatchQuery,
    pub values: Vec<Value>,
}

/// BATCH.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    pub batch_type: BatchType,
    pub statements: Vec<BatchStatement>,
    pub consistency: Consistency,
    pub serial_consistency: Option<Consistency>,
    pub default_timestamp_micros: Option<i64>,
    /// v5 only.
    pub keyspace: Option<String>,
    /// v5 only.
    pub now_in_seconds: Option<i32>,
}

impl Batch {
    fn put(&self, out: &mut BytesMut, version: ProtocolVersion) -> WireResult<()> {
        out.put_u8(self.batch_type.byte());
        put_short_len(out, "batch statement count", self.statements.len())?;
        for statement in &self.statements {
            put_batch_statement(out, statement)?;
        }
        self.consistency.put(out);
        let flags = flag_if(self.serial_consistency.is_some(), flag::SERIAL_CONSISTENCY)
            | flag_if(
                self.default_timestamp_micros.is_some(),
                flag::DEFAULT_TIMESTAMP,
            )
            | flag_if(self.keyspace.is_some(), flag::KEYSPACE)
            | flag_if(self.now_in_seconds.is_some(), flag::NOW_IN_SECONDS);
        put_flags(out, flags, version)?;
        put_optional_tail(out, self.serial_consistency, self.default_timestamp_micros)?;
        put_v5_tail(out, self.keyspace.as_deref(), self.now_in_seconds)
    }

    fn read(r: &mut Reader, version: ProtocolVersion) -> WireResult<Batch> {
        let batch_type = BatchType::from_byte(r.byte("batch type")?)?;
        let count = r.short_count("batch statement count", 5)?;
        let statements = (0..count)
            .map(|_| read_batch_statement(r, version))
            .collect::<WireResult<_>>()?;
        let consistency = Consistency::read(r, "consistency")?;
        let flags = read_flags(r, version)?;
        if flags & flag::NAMES_FOR_VALUES != 0 {
            return Err(WireError::InvalidValue {
                what: "batch flags (names for values are not supported in batches)",
                value: i64::from(flags),
            });
        }
        let tail = OptionalTail::read(r, flags)?;
        Ok(Batch {
            batch_type,
            statements,
            consistency,
            serial_consistency: tail.serial_consistency,
            default_timestamp_micros: tail.default_timestamp_micros,
            keyspace: tail.keyspace,
            now_in_seconds: tail.now_in_seconds,
        })
    }
}

const BATCH_KIND_TEXT: u8 = 0;
const BATCH_KIND_PREPARED: u8 = 1;

fn put_batch_statement(out: &mut BytesMut, statement: &BatchStatement) -> WireResult<()> {
    match &statement.query {
        BatchQuery::Text(text) => {
            out.put_u8(BATCH_KIND_TEXT);
            put_long_string(out, "batch query", text)?;
        }
        BatchQuery::Prepared(id) => {
            out.put_u8(BATCH_KIND_PREPARED);
            put_short_bytes(out, "prepared id", id)?;
        }
    }
    put_short_len(out, "value count", statement.values.len())?;
    statement
        .values
        .iter()
        .try_for_each(|v| put_value(out, "value", v))
}

fn read_batch_query(r: &mut Reader) -> WireResult<BatchQuery> {
    match r.byte("batch statement kind")? {
        BATCH_KIND_TEXT => Ok(BatchQuery::Text(r.long_string("batch query")?)),
        BATCH_KIND_PREPARED => Ok(BatchQuery::Prepared(r.short_bytes("prepared id")?)),
        other => Err(WireError::InvalidValue {
            what: "batch statement kind",
            value: i64::from(other),
        }),
    }
}

fn read_batch_statement(r: &mut Reader, version: ProtocolVersion) -> WireResult<BatchStatement> {
    let query = read_batch_query(r)?;
    let count = r.short_count("value count", 4)?;
    let values = (0..count)
        .map(|_| r.bound_value("value", version))
        .collect::<WireResult<_>>()?;
    Ok(BatchStatement { query, values })
}

/// A request message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Startup(StringMap),
    AuthResponse(Option<Bytes>),
    Options,
    Query(Query),
    Prepare(Prepare),
    Execute(Execute),
    Batch(Batch),
    Register(Vec<EventType>),
}

impl Request {
    pub fn opcode(&self) -> Opcode {
        match self {
            Request::Startup(_) => Opcode::Startup,
            Request::AuthResponse(_) => Opcode::AuthResponse,
            Request::Options => Opcode::Options,
            Request::Query(_) => Opcode::Query,
            Request::Prepare(_) => Opcode::Prepare,
            Request::Execute(_) => Opcode::Execute,
            Request::Batch(_) => Opcode::Batch,
            Request::Register(_) => Opcode::Register,
        }
    }

    /// Writes the message body (without envelope extras).
    pub fn encode_body(&self, out: &mut BytesMut, version: ProtocolVersion) -> WireResult<()> {
        match self {
            Request::Startup(options) => put_string_map(out, "startup options", options),
            Request::AuthResponse(token) => put_bytes(out, "auth token", token.as_deref()),
            Request::Options => Ok(()),
            Request::Query(q) => {
                put_long_string(out, "query", &q.query)?;
                q.params.put(out, version)
            }
            Request::Prepare(p) => put_prepare(out, p, version),
            Request::Execute(e) => put_execute(out, e, version),
            Request::Batch(b) => b.put(out, version),
            Request::Register(types) => {
                put_short_len(out, "event types", types.len())?;
                types
                    .iter()
                    .try_for_each(|t| put_string(out, "event type", t.name()))
            }
        }
    }

    /// Reads the message body of a request with this opcode.
    pub fn decode_body(
        opcode: Opcode,
        r: &mut Reader,
        version: ProtocolVersion,
    ) -> WireResult<Request> {
        Ok(match opcode {
            Opcode::Startup => Request::Startup(r.string_map("startup options")?),
            Opcode::AuthResponse => Request::AuthResponse(r.bytes("auth token")?),
            Opcode::Options => Request::Options,
            Opcode::Query => Request::Query(Query {
                query: r.long_string("query")?,
                params: QueryParameters::read(r, version)?,
            }),
            Opcode::Prepare => Request::Prepare(read_prepare(r, version)?),
            Opcode::Execute => Request::Execute(read_execute(r, version)?),
            Opcode::Batch => Request::Batch(Batch::read(r, version)?),
            Opcode::Register => Request::Register(read_event_types(r)?),
            other => {
                return Err(WireError::WrongDirection {
                    opcode: other.byte(),
                    expected: "REQUEST",
                })
            }
        })
    }
}

const PREPARE_FLAG_KEYSPACE: u32 = 0x01;

fn put_prepare(out: &mut BytesMut, p: &Prepare, version: ProtocolVersion) -> WireResult<()> {
    put_long_string(out, "query", &p.query)?;
    match (version, &p.keyspace) {
        (ProtocolVersion::V3 | ProtocolVersion::V4, None) => Ok(()),
        (v @ (ProtocolVersion::V3 | ProtocolVersion::V4), Some(_)) => {
            Err(WireError::NotInVersion {
                what: "PREPARE keyspace",
                version: v.number(),
            })
        }
        (ProtocolVersion::V5, keyspace) => {
            out.put_u32(flag_if(keyspace.is_some(), PREPARE_FLAG_KEYSPACE));
            put_v5_tail(out, keyspace.as_deref(), None)
        }
    }
}

fn read_prepare(r: &mut Reader, version: ProtocolVersion) -> WireResult<Prepare> {
    let query = r.long_string("query")?;
    let keyspace = match version {
        ProtocolVersion::V3 | ProtocolVersion::V4 => None,
        ProtocolVersion::V5 => {
            let flags = r.int("prepare flags")? as u32;
            read_if(flags, PREPARE_FLAG_KEYSPACE, || r.string("keyspace"))?
        }
    };
    Ok(Prepare { query, keyspace })
}

fn put_execute(out: &mut BytesMut, e: &Execute, version: ProtocolVersion) -> WireResult<()> {
    put_short_bytes(out, "prepared id", &e.id)?;
    match (version, &e.result_metadata_id) {
        (ProtocolVersion::V3 | ProtocolVersion::V4, None) => {}
        (ProtocolVersion::V5, Some(id)) => put_short_bytes(out, "result metadata id", id)?,
        (v, _) => {
            return Err(WireError::NotInVersion {
                what: "EXECUTE result metadata id (required in v5, absent before)",
                version: v.number(),
            })
        }
    }
    e.params.put(out, version)
}

fn read_execute(r: &mut Reader, version: ProtocolVersion) -> WireResult<Execute> {
    let id = r.short_bytes("prepared id")?;
    let result_metadata_id = match version {
        ProtocolVersion::V3 | ProtocolVersion::V4 => None,
        ProtocolVersion::V5 => Some(r.short_bytes("result metadata id")?),
    };
    let params = QueryParameters::read(r, version)?;
    Ok(Execute {
        id,
        result_metadata_id,
        params,
    })
}

fn read_event_types(r: &mut Reader) -> WireResult<Vec<EventType>> {
    r.string_list("event types")?
        .into_iter()
        .map(|name| {
            EventType::from_name(&name).ok_or(WireError::UnknownName {
                what: "event type",
                value: name,
            })
        })
        .collect()
}
