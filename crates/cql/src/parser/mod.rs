//! The recursive-descent parser's core: token cursor, keyword and identifier
//! matching, backtracking, depth and bind-marker bookkeeping, error text.
//!
//! Grammar rules live in the sibling modules, one per statement family.

mod auth;
mod ddl;
mod dml;
mod expr;

use crate::ast::{BindMarker, BindReceiver, BindVariable, Ident, ParsedStatement, QualifiedName};
use crate::error::{ParseError, Result};
use crate::lexer::{tokenize, Token, TokenKind};
use crate::{BIND_MARKERS_MAX, NESTING_DEPTH_MAX, STATEMENT_CHARS_MAX};

/// Keywords that can never be unquoted names (Cassandra's reserved keywords
/// plus the literal words its lexer turns into booleans).
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
    "delete",
    "desc",
    "describe",
    "drop",
    "entries",
    "execute",
    "false",
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
    "materialized",
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
    "revoke",
    "schema",
    "select",
    "set",
    "table",
    "to",
    "token",
    "true",
    "truncate",
    "unlogged",
    "update",
    "use",
    "using",
    "view",
    "where",
    "with",
];

pub(crate) fn is_reserved(word: &str) -> bool {
    RESERVED.contains(&word)
}

/// How many tokens before the offending one the error snippet shows, as Cassandra does.
const SNIPPET_TOKENS_BEFORE: usize = 10;

pub(crate) struct Parser {
    chars: Vec<char>,
    tokens: Vec<Token>,
    pos: usize,
    depth: usize,
    binds: Vec<BindVariable>,
    /// What a bind marker met now would bind; set by the enclosing rule.
    receiver: BindReceiver,
    /// Where the value of the last relation or condition (`c = <term>`)
    /// ended: Cassandra's parser decides what follows a term by more
    /// lookahead than elsewhere, which its errors there show.
    relation_term_end: Option<usize>,
    /// Where the last native type name ended: ANTLR reads two tokens past
    /// one (to rule out a user type `keyspace.name`), so an error right
    /// after it shows the token after the offending one too.
    native_type_end: Option<usize>,
}

/// A position to come back to when a speculative parse fails.
#[derive(Clone, Copy)]
pub(crate) struct Checkpoint {
    pos: usize,
    binds: usize,
}

impl Parser {
    pub(crate) fn new(text: &str) -> Result<Parser> {
        let chars: Vec<char> = text.chars().collect();
        if chars.len() > STATEMENT_CHARS_MAX {
            return Err(ParseError::new(
                1,
                0,
                format!("statement is longer than {STATEMENT_CHARS_MAX} characters"),
            ));
        }
        let tokens = tokenize(&chars)?;
        Ok(Parser {
            chars,
            tokens,
            pos: 0,
            depth: 0,
            binds: Vec::new(),
            receiver: BindReceiver::Unknown,
            relation_term_end: None,
            native_type_end: None,
        })
    }

    /// One statement, optionally followed by semicolons, then the end.
    pub(crate) fn single(&mut self) -> Result<ParsedStatement> {
        let parsed = self.statement_with_binds()?;
        while self.eat_sym(";") {}
        self.expect_eof()?;
        Ok(parsed)
    }

    /// Statements separated by semicolons; empty statements are skipped.
    pub(crate) fn script(&mut self) -> Result<Vec<ParsedStatement>> {
        let mut statements = Vec::new();
        loop {
            while self.eat_sym(";") {}
            if self.at_eof() {
                return Ok(statements);
            }
            statements.push(self.statement_with_binds()?);
            if !self.at_eof() {
                self.expect_sym(";")?;
            }
        }
    }

    fn statement_with_binds(&mut self) -> Result<ParsedStatement> {
        self.binds.clear();
        let statement = self.statement()?;
        Ok(ParsedStatement {
            statement,
            bind_variables: std::mem::take(&mut self.binds),
        })
    }

    fn expect_eof(&self) -> Result<()> {
        if self.at_eof() {
            return Ok(());
        }
        if self.relation_term_end != Some(self.pos) {
            return Err(self.mismatch("EOF"));
        }
        // After a relation's value, ANTLR's decision looks one token past
        // what can follow a term.
        match self.can_follow_term() {
            true => Err(self.mismatch_ahead("EOF", 2)),
            false => Err(self.no_viable()),
        }
    }

    /// Whether the current token can follow a term somewhere in Cassandra's
    /// grammar. Its parser's decision after a term fails on any other token,
    /// with "no viable alternative" at it.
    pub(crate) fn can_follow_term(&self) -> bool {
        let token = self.peek();
        match token.kind {
            TokenKind::Eof => true,
            TokenKind::Symbol => matches!(
                token.value.as_str(),
                "," | ")" | "]" | "}" | ":" | ".." | ";" | "+"
            ),
            TokenKind::Ident => matches!(
                token.value.as_str(),
                "and"
                    | "or"
                    | "where"
                    | "using"
                    | "default"
                    | "group"
                    | "order"
                    | "per"
                    | "limit"
                    | "allow"
                    | "if"
                    | "apply"
                    | "as"
                    | "insert"
                    | "update"
                    | "delete"
            ),
            _ => false,
        }
    }

    // ------------------------------------------------------------ cursor

    pub(crate) fn peek(&self) -> &Token {
        self.peek_at(0)
    }

    pub(crate) fn peek_at(&self, ahead: usize) -> &Token {
        let last = self.tokens.len() - 1;
        &self.tokens[(self.pos + ahead).min(last)]
    }

    pub(crate) fn advance(&mut self) -> Token {
        let token = self.peek().clone();
        if token.kind != TokenKind::Eof {
            self.pos += 1;
        }
        token
    }

    pub(crate) fn at_eof(&self) -> bool {
        self.at_eof_at(0)
    }

    pub(crate) fn at_eof_at(&self, ahead: usize) -> bool {
        self.peek_at(ahead).kind == TokenKind::Eof
    }

    pub(crate) fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            pos: self.pos,
            binds: self.binds.len(),
        }
    }

    pub(crate) fn restore(&mut self, checkpoint: Checkpoint) {
        self.pos = checkpoint.pos;
        self.binds.truncate(checkpoint.binds);
    }

    /// Runs `rule` speculatively: on failure the cursor and bind list are rewound.
    pub(crate) fn attempt<T>(&mut self, rule: impl FnOnce(&mut Parser) -> Result<T>) -> Option<T> {
        let checkpoint = self.checkpoint();
        let depth = self.depth;
        match rule(self) {
            Ok(value) => Some(value),
            Err(_) => {
                self.restore(checkpoint);
                self.depth = depth;
                None
            }
        }
    }

    /// Guards recursion so hostile nesting is an error, never a stack overflow.
    pub(crate) fn nested<T>(&mut self, rule: impl FnOnce(&mut Parser) -> Result<T>) -> Result<T> {
        if self.depth >= NESTING_DEPTH_MAX {
            return Err(self.error_here(format!(
                "nesting deeper than {NESTING_DEPTH_MAX} levels at input '{}'",
                self.token_text(self.peek())
            )));
        }
        self.depth += 1;
        let result = rule(self);
        self.depth -= 1;
        result
    }

    // ------------------------------------------------------------ keywords and symbols

    pub(crate) fn is_kw(&self, keyword: &str) -> bool {
        self.is_kw_at(0, keyword)
    }

    pub(crate) fn is_kw_at(&self, ahead: usize, keyword: &str) -> bool {
        let token = self.peek_at(ahead);
        token.kind == TokenKind::Ident && token.value == keyword
    }

    pub(crate) fn eat_kw(&mut self, keyword: &str) -> bool {
        let found = self.is_kw(keyword);
        if found {
            self.pos += 1;
        }
        found
    }

    /// Eats a run of keywords such as `IF NOT EXISTS`, all or nothing.
    pub(crate) fn eat_kws(&mut self, keywords: &[&str]) -> bool {
        let found = keywords
            .iter()
            .enumerate()
            .all(|(i, keyword)| self.is_kw_at(i, keyword));
        if found {
            self.pos += keywords.len();
        }
        found
    }

    pub(crate) fn expect_kw(&mut self, keyword: &str) -> Result<()> {
        if self.eat_kw(keyword) {
            Ok(())
        } else {
            Err(self.mismatch(&format!("K_{}", keyword.to_ascii_uppercase())))
        }
    }

    pub(crate) fn is_sym(&self, symbol: &str) -> bool {
        self.is_sym_at(0, symbol)
    }

    pub(crate) fn is_sym_at(&self, ahead: usize, symbol: &str) -> bool {
        let token = self.peek_at(ahead);
        token.kind == TokenKind::Symbol && token.value == symbol
    }

    pub(crate) fn eat_sym(&mut self, symbol: &str) -> bool {
        let found = self.is_sym(symbol);
        if found {
            self.pos += 1;
        }
        found
    }

    pub(crate) fn expect_sym(&mut self, symbol: &str) -> Result<()> {
        if self.eat_sym(symbol) {
            Ok(())
        } else {
            Err(self.mismatch(&format!("'{symbol}'")))
        }
    }

    /// `IF NOT EXISTS`, as a flag.
    pub(crate) fn if_not_exists(&mut self) -> bool {
        self.eat_kws(&["if", "not", "exists"])
    }

    /// `IF EXISTS`, as a flag.
    pub(crate) fn if_exists(&mut self) -> bool {
        self.eat_kws(&["if", "exists"])
    }

    // ------------------------------------------------------------ names

    /// Whether the token `ahead` can be a name: a quoted name or an unreserved word.
    pub(crate) fn is_ident_at(&self, ahead: usize) -> bool {
        let token = self.peek_at(ahead);
        match token.kind {
            // `""` lexes, but Cassandra's QUOTED_NAME needs a character
            TokenKind::QuotedName => !token.value.is_empty(),
            TokenKind::Ident => !is_reserved(&token.value),
            _ => false,
        }
    }

    pub(crate) fn ident(&mut self) -> Result<Ident> {
        if !self.is_ident_at(0) {
            return Err(self.no_viable());
        }
        Ok(Ident::new(self.advance().value))
    }

    /// `[keyspace.]name`.
    pub(crate) fn qualified_name(&mut self) -> Result<QualifiedName> {
        let first = self.ident()?;
        if self.eat_sym(".") {
            let name = self.ident()?;
            return Ok(QualifiedName {
                keyspace: Some(first),
                name,
            });
        }
        Ok(QualifiedName {
            keyspace: None,
            name: first,
        })
    }

    /// Role and user names may also be string literals.
    pub(crate) fn role_name(&mut self) -> Result<Ident> {
        if self.peek().kind == TokenKind::String {
            return Ok(Ident::new(self.advance().value));
        }
        self.ident()
    }

    pub(crate) fn string(&mut self) -> Result<String> {
        if self.peek().kind != TokenKind::String {
            return Err(self.mismatch("STRING_LITERAL"));
        }
        Ok(self.advance().value)
    }

    /// Comma-separated items between parentheses; `allow_empty` permits `()`.
    pub(crate) fn parenthesized<T>(
        &mut self,
        allow_empty: bool,
        item: impl FnMut(&mut Parser) -> Result<T>,
    ) -> Result<Vec<T>> {
        self.delimited(("(", ")"), allow_empty, item)
    }

    /// Comma-separated items between `open` and `close`.
    pub(crate) fn delimited<T>(
        &mut self,
        (open, close): (&str, &str),
        allow_empty: bool,
        mut item: impl FnMut(&mut Parser) -> Result<T>,
    ) -> Result<Vec<T>> {
        self.expect_sym(open)?;
        let mut items = Vec::new();
        if allow_empty && self.eat_sym(close) {
            return Ok(items);
        }
        loop {
            items.push(item(self)?);
            if !self.eat_sym(",") {
                break;
            }
        }
        self.expect_sym(close)?;
        Ok(items)
    }

    /// `item (AND item)*`.
    pub(crate) fn and_separated<T>(
        &mut self,
        mut item: impl FnMut(&mut Parser) -> Result<T>,
    ) -> Result<Vec<T>> {
        let mut items = vec![item(self)?];
        while self.eat_kw("and") {
            items.push(item(self)?);
        }
        Ok(items)
    }

    // ------------------------------------------------------------ bind markers

    pub(crate) fn with_receiver<T>(
        &mut self,
        receiver: BindReceiver,
        rule: impl FnOnce(&mut Parser) -> Result<T>,
    ) -> Result<T> {
        let saved = std::mem::replace(&mut self.receiver, receiver);
        let result = rule(self);
        self.receiver = saved;
        result
    }

    pub(crate) fn within<T>(
        &mut self,
        step: crate::ast::NestedStep,
        rule: impl FnOnce(&mut Parser) -> Result<T>,
    ) -> Result<T> {
        let receiver = BindReceiver::Nested {
            parent: Box::new(self.receiver.clone()),
            step,
        };
        self.with_receiver(receiver, rule)
    }

    /// Registers a bind marker against the current receiver.
    pub(crate) fn new_bind(&mut self, name: Option<Ident>) -> Result<BindMarker> {
        if self.binds.len() >= BIND_MARKERS_MAX {
            return Err(self.error_here(format!(
                "more than {BIND_MARKERS_MAX} bind markers in one statement"
            )));
        }
        let index = self.binds.len();
        self.binds.push(BindVariable {
            index,
            name: name.clone(),
            receiver: self.receiver.clone(),
        });
        Ok(BindMarker { index, name })
    }

    // ------------------------------------------------------------ errors

    /// The token's text as ANTLR holds it: Cassandra's lexer replaces the
    /// text of string literals and quoted names by their unquoted value.
    pub(crate) fn token_text(&self, token: &Token) -> String {
        match token.kind {
            TokenKind::Eof => "<EOF>".into(),
            TokenKind::String => token.value.clone(),
            TokenKind::QuotedName if !token.value.is_empty() => token.value.clone(),
            _ => self.chars[token.start..token.end].iter().collect(),
        }
    }

    pub(crate) fn error_here(&self, message: String) -> ParseError {
        let token = self.peek();
        if token.kind == TokenKind::Eof {
            return ParseError::new(0, crate::error::END_OF_INPUT_COLUMN, message);
        }
        ParseError::new(token.line, token.column, message)
    }

    /// An error at the token at `checkpoint`, for checks made after parsing a piece.
    pub(crate) fn error_at(&self, checkpoint: Checkpoint, message: String) -> ParseError {
        let token = &self.tokens[checkpoint.pos.min(self.tokens.len() - 1)];
        ParseError::new(token.line, token.column, message)
    }

    /// A grammar action that threw Java's IllegalArgumentException while
    /// parsing: Cassandra answers with the whole statement and the reason.
    pub(crate) fn refused_by_action(&self, reason: &str) -> ParseError {
        self.thrown_by_action("IllegalArgumentException", reason)
    }

    /// A grammar action that threw the Java exception `exception` (its
    /// simple class name) with the message `reason`.
    pub(crate) fn thrown_by_action(&self, exception: &str, reason: &str) -> ParseError {
        let text: String = self.chars.iter().collect();
        ParseError::unpositioned(format!(
            "Failed parsing statement: [{text}] reason: {exception} {reason}"
        ))
    }

    /// ANTLR's "a specific token was expected" error.
    pub(crate) fn mismatch(&self, expected: &str) -> ParseError {
        if self.signed_number_at(0) {
            // `LIMIT 1-1`: the offending token is the signed number.
            let text = self.signed_number_text();
            return self.error_here(format!(
                "mismatched input '{text}' expecting {expected}{}",
                self.snippet_of(1, 1)
            ));
        }
        let text = self.token_text(self.peek());
        self.error_here(format!(
            "mismatched input '{text}' expecting {expected}{}",
            self.snippet()
        ))
    }

    /// The text of a '-' and the number right after it, one token for
    /// Cassandra's lexer.
    fn signed_number_text(&self) -> String {
        let (minus, number) = (self.peek(), self.peek_at(1));
        self.chars[minus.start..number.end].iter().collect()
    }

    /// `mismatch`, with the snippet continued up to the token `ahead` of
    /// the offending one (what ANTLR had looked ahead at).
    pub(crate) fn mismatch_ahead(&self, expected: &str, ahead: usize) -> ParseError {
        let text = self.token_text(self.peek());
        self.error_here(format!(
            "mismatched input '{text}' expecting {expected}{}",
            self.snippet_to(ahead)
        ))
    }

    /// ANTLR's "no alternative of this rule starts here" error.
    pub(crate) fn no_viable(&self) -> ParseError {
        let text = self.token_text(self.peek());
        self.error_here(format!(
            "no viable alternative at input '{text}'{}",
            self.snippet()
        ))
    }

    /// ANTLR's error when a decision that started at the current token
    /// fails at the token `ahead` of it (a name in a value's place, which
    /// could have begun a function call): reported at that token, with the
    /// current token bracketed and the text up to that token after it.
    pub(crate) fn no_viable_ahead(&self, ahead: usize) -> ParseError {
        let failed = self.peek_at(ahead);
        if failed.kind == TokenKind::Eof {
            return self.no_viable();
        }
        let mut text = self.token_text(failed);
        if self.signed_number_at(ahead) {
            text.push_str(&self.token_text(self.peek_at(ahead + 1)));
        }
        ParseError::new(
            failed.line,
            failed.column,
            format!(
                "no viable alternative at input '{text}'{}",
                self.snippet_to(ahead)
            ),
        )
    }

    /// Whether the token `ahead` is a '-' with a number right after it,
    /// which Cassandra's lexer makes one token (`-00`).
    fn signed_number_at(&self, ahead: usize) -> bool {
        self.signed_number_at_index(self.pos + ahead)
    }

    /// Whether the token at `index` is a '-' with a number right after it.
    fn signed_number_at_index(&self, index: usize) -> bool {
        let last = self.tokens.len() - 1;
        let (minus, number) = (
            &self.tokens[index.min(last)],
            &self.tokens[(index + 1).min(last)],
        );
        minus.kind == TokenKind::Symbol
            && minus.value == "-"
            && number.start == minus.end
            && matches!(
                number.kind,
                TokenKind::Integer | TokenKind::Float | TokenKind::Duration
            )
    }

    /// ` (SELECT [FROM]...)`: the text before the offending token, the token
    /// bracketed, and `...` where text was cut, as Cassandra's ErrorCollector does.
    fn snippet(&self) -> String {
        self.snippet_to(0)
    }

    /// Where the snippet's text ends after the bracketed token (which ends at
    /// `offending_end`), and the index (ahead of the cursor) of the last token
    /// it reaches. Cassandra's snippet runs two stream tokens past the
    /// offending one (the text between two tokens is one hidden token), but
    /// no further than the parser had read: the token `ahead`.
    fn snippet_tail(&self, ahead: usize, offending: usize, offending_end: usize) -> (usize, usize) {
        let mut stream_tokens = 2;
        let mut shown_end = offending_end;
        let mut last = offending;
        while last < ahead {
            let next = self.peek_at(last + 1);
            if next.kind == TokenKind::Eof {
                break;
            }
            if next.start > self.peek_at(last).end {
                stream_tokens -= 1;
                if stream_tokens == 0 {
                    return (next.start, last);
                }
            }
            stream_tokens -= 1;
            last += 1;
            // A token is measured by its text, as the offending one.
            shown_end = (next.start + self.token_text(next).chars().count()).min(next.end);
            if self.signed_number_at(last) {
                last += 1;
                shown_end = self.peek_at(last).end;
            }
            if stream_tokens == 0 {
                break;
            }
        }
        (shown_end, last)
    }

    /// The snippet, continued after the bracketed token up to the token
    /// `ahead` of it.
    fn snippet_to(&self, ahead: usize) -> String {
        let ahead = match self.native_type_end {
            Some(end) if end == self.pos => ahead.max(1),
            _ => ahead,
        };
        self.snippet_of(ahead, 0)
    }

    /// ANTLR's "no alternative" error at a '-' with a number right after
    /// it, which Cassandra's lexer makes one signed token (`1h-1m` is a
    /// duration and the duration `-1m`, `1-1` two integers).
    pub(crate) fn no_viable_signed_number(&self) -> ParseError {
        let text = self.signed_number_text();
        self.error_here(format!(
            "no viable alternative at input '{text}'{}",
            self.snippet_of(1, 1)
        ))
    }

    /// The snippet of an offending token that is the current one and the
    /// `extra` tokens after it (a signed number), continued up to the token
    /// `ahead`.
    fn snippet_of(&self, ahead: usize, extra: usize) -> String {
        let offending = self.peek();
        if offending.kind == TokenKind::Eof {
            return String::new();
        }
        // Walk back over up to SNIPPET_TOKENS_BEFORE ANTLR tokens, where the
        // text between two tokens (whitespace, comments) is one hidden token.
        let mut budget = SNIPPET_TOKENS_BEFORE;
        let mut start = offending.start;
        let mut index = self.pos;
        let mut cut = false;
        loop {
            let previous_end = if index == 0 {
                0
            } else {
                self.tokens[index - 1].end
            };
            if start > previous_end {
                if budget == 0 {
                    cut = true;
                    break;
                }
                start = previous_end;
                budget -= 1;
            }
            if index == 0 {
                break;
            }
            if budget == 0 {
                cut = true;
                break;
            }
            index -= 1;
            start = self.tokens[index].start;
            budget -= 1;
            if index > 0 && self.signed_number_at_index(index - 1) {
                // `-0`: one token for Cassandra's lexer.
                index -= 1;
                start = self.tokens[index].start;
            }
        }
        let flat = |from: usize, to: usize| -> String {
            self.chars[from..to]
                .iter()
                .filter(|c| **c != '\n')
                .collect()
        };
        let mut out = String::from(" (");
        if cut {
            out.push_str("...");
        }
        out.push_str(&flat(start, offending.start));
        out.push('[');
        // Cassandra's ErrorCollector measures the token by its text, so an
        // unquoted value shows that many characters of the quoted source.
        let text_end = offending.start + self.token_text(offending).chars().count();
        let end = match extra {
            0 => text_end.min(offending.end),
            _ => self.peek_at(extra).end,
        };
        out.push_str(&flat(offending.start, end));
        out.push(']');
        let (shown_end, last) = self.snippet_tail(ahead, extra, end);
        out.push_str(&flat(end, shown_end));
        let last_token = self.peek_at(last);
        let cut = shown_end < last_token.end && shown_end >= last_token.start;
        if self.peek_at(last + 1).kind != TokenKind::Eof || cut {
            out.push_str("...");
        }
        out.push(')');
        out
    }
}

impl Parser {
    fn statement(&mut self) -> Result<crate::ast::Statement> {
        use crate::ast::Statement;
        let token = self.peek();
        let word = match token.kind {
            TokenKind::Ident => token.value.clone(),
            _ => String::new(),
        };
        Ok(match word.as_str() {
            "select" => Statement::Select(Box::new(self.select()?)),
            "insert" => Statement::Insert(Box::new(self.insert()?)),
            "update" => Statement::Update(Box::new(self.update()?)),
            "delete" => Statement::Delete(Box::new(self.delete()?)),
            "begin" => Statement::Batch(Box::new(self.batch()?)),
            "use" => {
                self.advance();
                Statement::Use(self.ident()?)
            }
            "truncate" => Statement::Truncate(self.truncate()?),
            "create" => self.create()?,
            "alter" => self.alter()?,
            "drop" => self.drop_statement()?,
            "grant" => self.grant()?,
            "revoke" => self.revoke()?,
            "list" => self.list()?,
            "describe" | "desc" => Statement::Describe(self.describe()?),
            _ => return Err(self.no_viable()),
        })
    }
}
