//! The syntax error type, shaped like Cassandra's `SyntaxException` text.

use std::fmt;

/// A syntax error at a position in the statement text.
///
/// `line` is 1-based and `column` is the 0-based character position within the
/// line, as ANTLR reports them, so drivers and tools that parse Cassandra's
/// messages keep working. Errors that Cassandra's grammar actions throw
/// (duplicate properties, say) carry no position in its text: `positioned`
/// is false for those.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ParseError {
    pub line: u32,
    pub column: u32,
    pub message: String,
    pub positioned: bool,
    /// Thrown by a grammar action as an invalid request, not a syntax
    /// error (Cassandra's `InvalidRequestException` while parsing): the
    /// message alone, with the INVALID error code.
    pub invalid: bool,
}

/// The column of errors at the end of the input: ANTLR reports them at
/// `line 0:-1` (the EOF token has no position), and so does Cassandra.
pub const END_OF_INPUT_COLUMN: u32 = u32::MAX;

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.positioned {
            return f.write_str(&self.message);
        }
        if self.column == END_OF_INPUT_COLUMN {
            return write!(f, "line {}:-1 {}", self.line, self.message);
        }
        write!(f, "line {}:{} {}", self.line, self.column, self.message)
    }
}

impl ParseError {
    pub(crate) fn new(line: u32, column: u32, message: impl Into<String>) -> ParseError {
        ParseError {
            line,
            column,
            message: message.into(),
            positioned: true,
            invalid: false,
        }
    }

    /// An error thrown by a grammar action rather than by the parser proper:
    /// Cassandra's text is the message alone.
    pub(crate) fn unpositioned(message: impl Into<String>) -> ParseError {
        ParseError {
            line: 0,
            column: 0,
            message: message.into(),
            positioned: false,
            invalid: false,
        }
    }

    /// An invalid request found while parsing (see `invalid`).
    pub(crate) fn invalid(message: impl Into<String>) -> ParseError {
        ParseError {
            invalid: true,
            ..ParseError::unpositioned(message)
        }
    }
}

pub(crate) type Result<T> = std::result::Result<T, ParseError>;
