//! CQL language front end: lexer, recursive-descent parser, typed AST and a
//! printer whose output parses back to the same AST. No IO, no schema.
//!
//! Architecture invariant: this crate never resolves names against a schema.
//! Unknown type names stay `TypeExpr::Udt` until the server calls
//! [`TypeExpr::resolve`] with its own [`UdtResolver`].

pub mod ast;
mod error;
mod lexer;
mod parser;
mod printer;
pub mod types;

pub use ast::{ParsedStatement, Statement};
pub use error::ParseError;
pub use types::{TypeExpr, UdtResolver, UnknownTypeError};

/// Longest statement (or script) text accepted, in characters.
pub const STATEMENT_CHARS_MAX: usize = 8 * 1024 * 1024;

/// Deepest nesting of terms, selectors and types; deeper input is a syntax
/// error so that hostile text cannot overflow the stack.
pub const NESTING_DEPTH_MAX: usize = 64;

/// Most bind markers in one statement: the native protocol counts them in a u16.
pub const BIND_MARKERS_MAX: usize = u16::MAX as usize;

/// Parses exactly one statement (trailing semicolons allowed).
pub fn parse_statement(text: &str) -> Result<ParsedStatement, ParseError> {
    parser::Parser::new(text)?.single()
}

/// Parses a script of semicolon-separated statements; empty statements are skipped.
pub fn parse_script(text: &str) -> Result<Vec<ParsedStatement>, ParseError> {
    parser::Parser::new(text)?.script()
}
