//! The syntax error type, shaped like Cassandra's `SyntaxException` text.

use std::fmt;

/// A syntax error at a position in the statement text.
///
/// `line` is 1-based and `column` is the 0-based character position within the
/// line, as ANTLR reports them, so drivers and tools that parse Cassandra's
/// messages keep working.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ParseError {
    pub line: u32,
    pub column: u32,
    pub message: String,
}

/// The column of errors at the end of the input: ANTLR reports them at
/// `line 0:-1` (the EOF token has no position), and so does Cassandra.
pub const END_OF_INPUT_COLUMN: u32 = u32::MAX;

/// The column of errors the grammar's actions raise (`addRecognitionError`):
/// Cassandra prints their message alone, without a position.
pub const NO_POSITION: u32 = u32::MAX - 1;

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.column == NO_POSITION {
            return write!(f, "{}", self.message);
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
        }
    }

    /// An error raised by a grammar action: printed without a position.
    pub(crate) fn unpositioned(message: impl Into<String>) -> ParseError {
        ParseError::new(0, NO_POSITION, message)
    }
}

pub(crate) type Result<T> = std::result::Result<T, ParseError>;
