//! The ERROR response (spec 4.2.1 and section 9): every error code with its
//! extra fields, and the mapping from `WireError` to the error to answer.

use std::net::IpAddr;

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::{WireError, WireResult};
use crate::frame::ProtocolVersion;
use crate::limits::REASON_MAP_ENTRIES_MAX;
use crate::primitives::{put_inet_addr, put_short_bytes, put_string, put_string_list, Reader};
use crate::types::Consistency;

/// An ERROR message: a code (given by `kind`) and a human-readable message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorResponse {
    pub kind: ErrorKind,
    pub message: String,
}

/// Replica failures of READ_FAILURE / WRITE_FAILURE: v4 sends only the count,
/// v5 a map from replica address to reason code (its size is the count).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failures {
    pub num_failures: i32,
    pub reasons: Vec<(IpAddr, u16)>,
}

/// `writeType` of write timeouts and failures.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum WriteType {
    Simple,
    Batch,
    UnloggedBatch,
    Counter,
    BatchLog,
    Cas,
    View,
    Cdc,
    /// A write type this codec does not know, kept as sent.
    Other(String),
}

impl WriteType {
    const KNOWN: [WriteType; 8] = [
        WriteType::Simple,
        WriteType::Batch,
        WriteType::UnloggedBatch,
        WriteType::Counter,
        WriteType::BatchLog,
        WriteType::Cas,
        WriteType::View,
        WriteType::Cdc,
    ];

    pub fn name(&self) -> &str {
        match self {
            WriteType::Simple => "SIMPLE",
            WriteType::Batch => "BATCH",
            WriteType::UnloggedBatch => "UNLOGGED_BATCH",
            WriteType::Counter => "COUNTER",
            WriteType::BatchLog => "BATCH_LOG",
            WriteType::Cas => "CAS",
            WriteType::View => "VIEW",
            WriteType::Cdc => "CDC",
            WriteType::Other(name) => name,
        }
    }

    pub fn from_name(name: String) -> WriteType {
        WriteType::KNOWN
            .into_iter()
            .find(|w| w.name() == name)
            .unwrap_or(WriteType::Other(name))
    }
}

/// The error codes of spec section 9 with their extra fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    ServerError,
    ProtocolError,
    BadCredentials,
    Unavailable {
        consistency: Consistency,
        required: i32,
        alive: i32,
    },
    Overloaded,
    IsBootstrapping,
    TruncateError,
    /// `contentions` is sent in v5 when `write_type` is CAS, and only then.
    WriteTimeout {
        consistency: Consistency,
        received: i32,
        block_for: i32,
        write_type: WriteType,
        contentions: Option<u16>,
    },
    ReadTimeout {
        consistency: Consistency,
        received: i32,
        block_for: i32,
        data_present: bool,
    },
    ReadFailure {
        consistency: Consistency,
        received: i32,
        block_for: i32,
        failures: Failures,
        data_present: bool,
    },
    FunctionFailure {
        keyspace: String,
        function: String,
        arg_types: Vec<String>,
    },
    WriteFailure {
        consistency: Consistency,
        received: i32,
        block_for: i32,
        failures: Failures,
        write_type: WriteType,
    },
    /// v5.
    CdcWriteFailure,
    /// v5.
    CasWriteUnknown {
        consistency: Consistency,
        received: i32,
        block_for: i32,
    },
    SyntaxError,
    Unauthorized,
    Invalid,
    ConfigError,
    AlreadyExists {
        keyspace: String,
        /// Empty when a keyspace already exists.
        table: String,
    },
    Unprepared {
        id: Bytes,
    },
}

/// Numeric error codes.
pub mod code {
    pub const SERVER_ERROR: i32 = 0x0000;
    pub const PROTOCOL_ERROR: i32 = 0x000A;
    pub const BAD_CREDENTIALS: i32 = 0x0100;
    pub const UNAVAILABLE: i32 = 0x1000;
    pub const OVERLOADED: i32 = 0x1001;
    pub const IS_BOOTSTRAPPING: i32 = 0x1002;
    pub const TRUNCATE_ERROR: i32 = 0x1003;
    pub const WRITE_TIMEOUT: i32 = 0x1100;
    pub const READ_TIMEOUT: i32 = 0x1200;
    pub const READ_FAILURE: i32 = 0x1300;
    pub const FUNCTION_FAILURE: i32 = 0x1400;
    pub const WRITE_FAILURE: i32 = 0x1500;
    pub const CDC_WRITE_FAILURE: i32 = 0x1600;
    pub const CAS_WRITE_UNKNOWN: i32 = 0x1700;
    pub const SYNTAX_ERROR: i32 = 0x2000;
    pub const UNAUTHORIZED: i32 = 0x2100;
    pub const INVALID: i32 = 0x2200;
    pub const CONFIG_ERROR: i32 = 0x2300;
    pub const ALREADY_EXISTS: i32 = 0x2400;
    pub const UNPREPARED: i32 = 0x2500;
}

impl ErrorKind {
    pub fn code(&self) -> i32 {
        match self {
            ErrorKind::ServerError => code::SERVER_ERROR,
            ErrorKind::ProtocolError => code::PROTOCOL_ERROR,
            ErrorKind::BadCredentials => code::BAD_CREDENTIALS,
            ErrorKind::Unavailable { .. } => code::UNAVAILABLE,
            ErrorKind::Overloaded => code::OVERLOADED,
            ErrorKind::IsBootstrapping => code::IS_BOOTSTRAPPING,
            ErrorKind::TruncateError => code::TRUNCATE_ERROR,
            ErrorKind::WriteTimeout { .. } => code::WRITE_TIMEOUT,
            ErrorKind::ReadTimeout { .. } => code::READ_TIMEOUT,
            ErrorKind::ReadFailure { .. } => code::READ_FAILURE,
            ErrorKind::FunctionFailure { .. } => code::FUNCTION_FAILURE,
            ErrorKind::WriteFailure { .. } => code::WRITE_FAILURE,
            ErrorKind::CdcWriteFailure => code::CDC_WRITE_FAILURE,
            ErrorKind::CasWriteUnknown { .. } => code::CAS_WRITE_UNKNOWN,
            ErrorKind::SyntaxError => code::SYNTAX_ERROR,
            ErrorKind::Unauthorized => code::UNAUTHORIZED,
            ErrorKind::Invalid => code::INVALID,
            ErrorKind::ConfigError => code::CONFIG_ERROR,
            ErrorKind::AlreadyExists { .. } => code::ALREADY_EXISTS,
            ErrorKind::Unprepared { .. } => code::UNPREPARED,
        }
    }

    /// The kinds without extra fields, by code.
    fn plain(code: i32) -> Option<ErrorKind> {
        Some(match code {
            code::SERVER_ERROR => ErrorKind::ServerError,
            code::PROTOCOL_ERROR => ErrorKind::ProtocolError,
            code::BAD_CREDENTIALS => ErrorKind::BadCredentials,
            code::OVERLOADED => ErrorKind::Overloaded,
            code::IS_BOOTSTRAPPING => ErrorKind::IsBootstrapping,
            code::TRUNCATE_ERROR => ErrorKind::TruncateError,
            code::CDC_WRITE_FAILURE => ErrorKind::CdcWriteFailure,
            code::SYNTAX_ERROR => ErrorKind::SyntaxError,
            code::UNAUTHORIZED => ErrorKind::Unauthorized,
            code::INVALID => ErrorKind::Invalid,
            code::CONFIG_ERROR => ErrorKind::ConfigError,
            _ => return None,
        })
    }
}

/// The first fields of the timeout and failure errors.
fn put_cl_received_block_for(out: &mut BytesMut, cl: Consistency, received: i32, block_for: i32) {
    cl.put(out);
    out.put_i32(received);
    out.put_i32(block_for);
}

fn put_failures(
    out: &mut BytesMut,
    failures: &Failures,
    version: ProtocolVersion,
) -> WireResult<()> {
    match version {
        ProtocolVersion::V3 | ProtocolVersion::V4 => out.put_i32(failures.num_failures),
        ProtocolVersion::V5 => {
            let count =
                i32::try_from(failures.reasons.len()).map_err(|_| WireError::TooLongToEncode {
                    what: "failure reason map",
                    len_bytes: failures.reasons.len(),
                    max_bytes: i32::MAX as usize,
                })?;
            out.put_i32(count);
            for (address, reason) in &failures.reasons {
                put_inet_addr(out, address);
                out.put_u16(*reason);
            }
        }
    }
    Ok(())
}

fn read_failures(r: &mut Reader, version: ProtocolVersion) -> WireResult<Failures> {
    match version {
        ProtocolVersion::V3 | ProtocolVersion::V4 => Ok(Failures {
            num_failures: r.int("failure count")?,
            reasons: Vec::new(),
        }),
        ProtocolVersion::V5 => {
            // Each entry: at least a 1-byte size, 4 address bytes, a 2-byte reason.
            let count = r.int_count("failure reason map", REASON_MAP_ENTRIES_MAX, 7)?;
            let reasons = (0..count)
                .map(|_| Ok((r.inet_addr("failed replica")?, r.short("failure reason")?)))
                .collect::<WireResult<Vec<_>>>()?;
            Ok(Failures {
                num_failures: count as i32,
                reasons,
            })
        }
    }
}

fn carries_contentions(write_type: &WriteType, version: ProtocolVersion) -> bool {
    version >= ProtocolVersion::V5 && *write_type == WriteType::Cas
}

impl ErrorResponse {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> ErrorResponse {
        ErrorResponse {
            kind,
            message: message.into(),
        }
    }

    /// The error to answer a request whose decoding failed with `error`: an
    /// oversized frame is INVALID (Cassandra's "Request is too big"), every
    /// other codec error is a PROTOCOL_ERROR carrying the error's text.
    pub fn from_wire_error(error: &WireError) -> ErrorResponse {
        let kind = match error {
            WireError::FrameTooBig { .. } => ErrorKind::Invalid,
            _ => ErrorKind::ProtocolError,
        };
        ErrorResponse::new(kind, error.to_string())
    }

    /// The error as a client of `version` can read it, when that version
    /// has no code for it (Cassandra's `getBackwardsCompatibleException`):
    /// before v4 the failures are timeouts and a function failure or a
    /// CDC write failure is INVALID; before v5 an unknown CAS outcome is a
    /// CAS write timeout.
    fn in_version(&self, version: ProtocolVersion) -> Option<ErrorResponse> {
        let kind = match &self.kind {
            ErrorKind::ReadFailure {
                consistency,
                received,
                block_for,
                data_present,
                ..
            } if version < ProtocolVersion::V4 => ErrorKind::ReadTimeout {
                consistency: *consistency,
                received: *received,
                block_for: *block_for,
                data_present: *data_present,
            },
            ErrorKind::WriteFailure {
                consistency,
                received,
                block_for,
                write_type,
                ..
            } if version < ProtocolVersion::V4 => ErrorKind::WriteTimeout {
                consistency: *consistency,
                received: *received,
                block_for: *block_for,
                write_type: write_type.clone(),
                contentions: None,
            },
            ErrorKind::FunctionFailure { .. } | ErrorKind::CdcWriteFailure
                if version < ProtocolVersion::V4 =>
            {
                let name = match self.kind {
                    ErrorKind::CdcWriteFailure => "CDC_WRITE_FAILURE",
                    _ => "FUNCTION_FAILURE",
                };
                let message = format!("ERROR {name}: {}", self.message);
                return Some(ErrorResponse::new(ErrorKind::Invalid, message));
            }
            ErrorKind::CasWriteUnknown {
                consistency,
                received,
                block_for,
            } if version < ProtocolVersion::V5 => ErrorKind::WriteTimeout {
                consistency: *consistency,
                received: *received,
                block_for: *block_for,
                write_type: WriteType::Cas,
                contentions: None,
            },
            _ => return None,
        };
        Some(ErrorResponse::new(kind, self.message.clone()))
    }

    pub(crate) fn put(&self, out: &mut BytesMut, version: ProtocolVersion) -> WireResult<()> {
        if let Some(older) = self.in_version(version) {
            return older.put(out, version);
        }
        out.put_i32(self.kind.code());
        put_string(out, "error message", &self.message)?;
        self.put_extras(out, version)
    }

    fn put_extras(&self, out: &mut BytesMut, version: ProtocolVersion) -> WireResult<()> {
        match &self.kind {
            ErrorKind::Unavailable {
                consistency,
                required,
                alive,
            } => {
                put_cl_received_block_for(out, *consistency, *required, *alive);
            }
            ErrorKind::WriteTimeout {
                consistency,
                received,
                block_for,
                write_type,
                contentions,
            } => {
                put_cl_received_block_for(out, *consistency, *received, *block_for);
                put_string(out, "write type", write_type.name())?;
                if carries_contentions(write_type, version) {
                    out.put_u16(contentions.unwrap_or(0));
                }
            }
            ErrorKind::ReadTimeout {
                consistency,
                received,
                block_for,
                data_present,
            } => {
                put_cl_received_block_for(out, *consistency, *received, *block_for);
                out.put_u8(u8::from(*data_present));
            }
            ErrorKind::ReadFailure {
                consistency,
                received,
                block_for,
                failures,
                data_present,
            } => {
                put_cl_received_block_for(out, *consistency, *received, *block_for);
                put_failures(out, failures, version)?;
                out.put_u8(u8::from(*data_present));
            }
            ErrorKind::FunctionFailure {
                keyspace,
                function,
                arg_types,
            } => {
                put_string(out, "keyspace", keyspace)?;
                put_string(out, "function", function)?;
                put_string_list(out, "argument types", arg_types)?;
            }
            ErrorKind::WriteFailure {
                consistency,
                received,
                block_for,
                failures,
                write_type,
            } => {
                put_cl_received_block_for(out, *consistency, *received, *block_for);
                put_failures(out, failures, version)?;
                put_string(out, "write type", write_type.name())?;
            }
            ErrorKind::CasWriteUnknown {
                consistency,
                received,
                block_for,
            } => {
                put_cl_received_block_for(out, *consistency, *received, *block_for);
            }
            ErrorKind::AlreadyExists { keyspace, table } => {
                put_string(out, "keyspace", keyspace)?;
                put_string(out, "table", table)?;
            }
            ErrorKind::Unprepared { id } => put_short_bytes(out, "prepared id", id)?,
            _ => {}
        }
        Ok(())
    }

    pub(crate) fn read(r: &mut Reader, version: ProtocolVersion) -> WireResult<ErrorResponse> {
        let code = r.int("error code")?;
        let message = r.string("error message")?;
        let kind = match ErrorKind::plain(code) {
            Some(kind) => kind,
            None => read_kind_with_extras(r, code, version)?,
        };
        Ok(ErrorResponse { kind, message })
    }
}

fn read_kind_with_extras(
    r: &mut Reader,
    code: i32,
    version: ProtocolVersion,
) -> WireResult<ErrorKind> {
    let cl = |r: &mut Reader| -> WireResult<(Consistency, i32, i32)> {
        Ok((
            Consistency::read(r, "consistency")?,
            r.int("received")?,
            r.int("block for")?,
        ))
    };
    Ok(match code {
        code::UNAVAILABLE => {
            let (consistency, required, alive) = cl(r)?;
            ErrorKind::Unavailable {
                consistency,
                required,
                alive,
            }
        }
        code::WRITE_TIMEOUT => {
            let (consistency, received, block_for) = cl(r)?;
            let write_type = WriteType::from_name(r.string("write type")?);
            let contentions = if carries_contentions(&write_type, version) {
                Some(r.short("contentions")?)
            } else {
                None
            };
            ErrorKind::WriteTimeout {
                consistency,
                received,
                block_for,
                write_type,
                contentions,
            }
        }
        code::READ_TIMEOUT => {
            let (consistency, received, block_for) = cl(r)?;
            let data_present = r.byte("data present")? != 0;
            ErrorKind::ReadTimeout {
                consistency,
                received,
                block_for,
                data_present,
            }
        }
        code::READ_FAILURE => {
            let (consistency, received, block_for) = cl(r)?;
            let failures = read_failures(r, version)?;
            let data_present = r.byte("data present")? != 0;
            ErrorKind::ReadFailure {
                consistency,
                received,
                block_for,
                failures,
                data_present,
            }
        }
        code::FUNCTION_FAILURE => ErrorKind::FunctionFailure {
            keyspace: r.string("keyspace")?,
            function: r.string("function")?,
            arg_types: r.string_list("argument types")?,
        },
        code::WRITE_FAILURE => {
            let (consistency, received, block_for) = cl(r)?;
            let failures = read_failures(r, version)?;
            let write_type = WriteType::from_name(r.string("write type")?);
            ErrorKind::WriteFailure {
                consistency,
                received,
                block_for,
                failures,
                write_type,
            }
        }
        code::CAS_WRITE_UNKNOWN => {
            let (consistency, received, block_for) = cl(r)?;
            ErrorKind::CasWriteUnknown {
                consistency,
                received,
                block_for,
            }
        }
        code::ALREADY_EXISTS => ErrorKind::AlreadyExists {
            keyspace: r.string("keyspace")?,
            table: r.string("table")?,
        },
        code::UNPREPARED => ErrorKind::Unprepared {
            id: r.short_bytes("prepared id")?,
        },
        other => {
            return Err(WireError::InvalidValue {
                what: "error code",
                value: i64::from(other),
            })
        }
    })
}
