//! Turns CQL text into tokens, tracking ANTLR-style line and column positions.
//!
//! Keywords are not distinguished here: every bare word is an `Ident` token
//! carrying its lower-cased text, and the parser decides whether a word is a
//! keyword in context. That is what lets unreserved keywords (`key`, `type`,
//! `ttl`, ...) double as names without a keyword table in two places.

use crate::error::{ParseError, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TokenKind {
    Ident,
    QuotedName,
    String,
    Integer,
    Float,
    Uuid,
    Hex,
    Duration,
    Symbol,
    Eof,
}

#[derive(Clone, Debug)]
pub(crate) struct Token {
    pub kind: TokenKind,
    /// Lower-cased for identifiers, unescaped for strings and quoted names,
    /// the source text for everything else.
    pub value: String,
    pub line: u32,
    pub column: u32,
    /// Character offsets into the source, for error snippets and to tell
    /// `-1` (a literal) from `- 1` (a negation).
    pub start: usize,
    pub end: usize,
}

/// Longest symbols first, so `<=` wins over `<`.
const SYMBOLS: [&str; 25] = [
    "..", "<=", ">=", "!=", "+=", "-=", ";", "(", ")", ",", ".", "*", "[", "]", "{", "}", ":", "?",
    "=", "<", ">", "+", "-", "/", "%",
];

/// Where a UUID's text has its dashes.
const UUID_DASH_OFFSETS: [usize; 4] = [8, 13, 18, 23];

/// Duration units, longest first so `ms` wins over `m`.
const DURATION_UNITS: [&str; 11] = ["mo", "ms", "us", "µs", "ns", "y", "w", "d", "h", "m", "s"];

pub(crate) fn tokenize(chars: &[char]) -> Result<Vec<Token>> {
    let mut lexer = Lexer {
        chars,
        pos: 0,
        line: 1,
        line_start: 0,
        tokens: Vec::new(),
    };
    lexer.run()?;
    Ok(lexer.tokens)
}

struct Lexer<'a> {
    chars: &'a [char],
    pos: usize,
    line: u32,
    line_start: usize,
    tokens: Vec<Token>,
}

impl Lexer<'_> {
    fn run(&mut self) -> Result<()> {
        loop {
            self.skip_trivia()?;
            let start = self.pos;
            let (line, column) = (self.line, self.column());
            let Some(c) = self.peek(0) else {
                self.push(TokenKind::Eof, String::new(), start, line, column);
                return Ok(());
            };
            let (kind, value) = self.token(c)?;
            self.push(kind, value, start, line, column);
        }
    }

    fn push(&mut self, kind: TokenKind, value: String, start: usize, line: u32, column: u32) {
        self.tokens.push(Token {
            kind,
            value,
            line,
            column,
            start,
            end: self.pos,
        });
    }

    fn column(&self) -> u32 {
        u32::try_from(self.pos - self.line_start).unwrap_or(u32::MAX)
    }

    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn bump(&mut self) {
        if self.peek(0) == Some('\n') {
            self.line += 1;
            self.line_start = self.pos + 1;
        }
        self.pos += 1;
    }

    fn bump_n(&mut self, n: usize) {
        for _ in 0..n {
            self.bump();
        }
    }

    fn text(&self, start: usize) -> String {
        self.chars[start..self.pos].iter().collect()
    }

    fn error(&self, message: String) -> ParseError {
        ParseError::new(self.line, self.column(), message)
    }

    fn skip_trivia(&mut self) -> Result<()> {
        loop {
            match (self.peek(0), self.peek(1)) {
                (Some(c), _) if c.is_whitespace() => self.bump(),
                (Some('-'), Some('-')) | (Some('/'), Some('/')) => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.bump();
                    }
                }
                (Some('/'), Some('*')) => self.skip_block_comment()?,
                _ => return Ok(()),
            }
        }
    }

    fn skip_block_comment(&mut self) -> Result<()> {
        self.bump_n(2);
        loop {
            match (self.peek(0), self.peek(1)) {
                (Some('*'), Some('/')) => {
                    self.bump_n(2);
                    return Ok(());
                }
                (Some(_), _) => self.bump(),
                (None, _) => {
                    return Err(self.error("mismatched character '<EOF>' expecting '*'".into()))
                }
            }
        }
    }

    fn token(&mut self, c: char) -> Result<(TokenKind, String)> {
        let start = self.pos;
        if c.is_ascii_hexdigit() && self.matches_uuid() {
            self.bump_n(36);
            return Ok((TokenKind::Uuid, self.text(start)));
        }
        if let Some(offset) = self.broken_uuid_offset() {
            return Err(self.broken_uuid_error(offset));
        }
        if c.is_ascii_alphabetic() {
            return Ok(self.word());
        }
        if c.is_ascii_digit() {
            return Ok(self.number());
        }
        if c == '-' {
            self.check_signed_named_float()?;
        }
        match c {
            '\'' => return self.quoted('\'', TokenKind::String),
            '"' => return self.quoted('"', TokenKind::QuotedName),
            '$' if self.peek(1) == Some('$') => return self.dollar_string(),
            _ => {}
        }
        for symbol in SYMBOLS {
            if symbol
                .chars()
                .enumerate()
                .all(|(i, s)| self.peek(i) == Some(s))
            {
                self.bump_n(symbol.len());
                return Ok((TokenKind::Symbol, symbol.to_string()));
            }
        }
        Err(self.error(format!("no viable alternative at character '{c}'")))
    }

    fn matches_uuid(&self) -> bool {
        (0..36).all(|i| {
            let Some(c) = self.peek(i) else { return false };
            if UUID_DASH_OFFSETS.contains(&i) {
                c == '-'
            } else {
                c.is_ascii_hexdigit()
            }
        }) && !self.peek(36).is_some_and(is_word_char)
    }

    /// Cassandra's lexer takes eight hex digits and a '-' for the start of
    /// a UUID: where the rest breaks its shape, the offset of the character
    /// that does.
    fn broken_uuid_offset(&self) -> Option<usize> {
        let starts = (0..8).all(|i| self.peek(i).is_some_and(|c| c.is_ascii_hexdigit()))
            && self.peek(8) == Some('-');
        if !starts {
            return None;
        }
        (9..36).find(|&i| {
            let c = self.peek(i);
            match UUID_DASH_OFFSETS.contains(&i) {
                true => c != Some('-'),
                false => !c.is_some_and(|c| c.is_ascii_hexdigit()),
            }
        })
    }

    /// ANTLR's lexer error at the character `offset` that broke a UUID.
    fn broken_uuid_error(&mut self, offset: usize) -> ParseError {
        let expected = match UUID_DASH_OFFSETS.contains(&offset) {
            true => "'-'",
            false => "set null",
        };
        self.mismatched_character(offset, expected)
    }

    /// ANTLR's lexer error at the character `offset` ahead, which is not
    /// the `expected` one of the token the lexer had committed to.
    fn mismatched_character(&mut self, offset: usize, expected: &str) -> ParseError {
        let found = match self.peek(offset) {
            None => "<EOF>".to_string(),
            Some('\n') => "\\n".to_string(),
            Some('\r') => "\\r".to_string(),
            Some('\t') => "\\t".to_string(),
            Some(c) => c.to_string(),
        };
        self.bump_n(offset);
        self.error(format!(
            "mismatched character '{found}' expecting {expected}"
        ))
    }

    /// Cassandra's lexer takes a '-' followed by an 'n' or an 'i' (in any
    /// case) for the start of `-NaN` or `-Infinity`, and fails at the first
    /// character that is not the next of that word: `-i,` and `bad-name`
    /// are lexer errors (`-ti` is a minus and a name).
    fn check_signed_named_float(&mut self) -> Result<()> {
        let word = match self.peek(1) {
            Some('n' | 'N') => "nan",
            Some('i' | 'I') => "infinity",
            _ => return Ok(()),
        };
        let broken = word.chars().enumerate().find(|(i, w)| {
            self.peek(i + 1)
                .is_none_or(|c| c.to_ascii_lowercase() != *w)
        });
        match broken {
            Some((i, _)) => Err(self.mismatched_character(i + 1, "set null")),
            None => Ok(()),
        }
    }

    fn word(&mut self) -> (TokenKind, String) {
        let start = self.pos;
        if let Some(len) = self.iso_alternative_duration_len() {
            self.bump_n(len);
            return (TokenKind::Duration, self.text(start));
        }
        while self.peek(0).is_some_and(is_word_char) {
            self.bump();
        }
        let text = self.text(start);
        if is_iso_duration(&text) {
            return (TokenKind::Duration, text);
        }
        (TokenKind::Ident, text.to_ascii_lowercase())
    }

    /// `P0001-02-03T04:05:06`, the ISO 8601 alternative duration form.
    fn iso_alternative_duration_len(&self) -> Option<usize> {
        const SHAPE: &str = "P9999-99-99T99:99:99";
        let matches = SHAPE
            .chars()
            .enumerate()
            .all(|(i, s)| match (s, self.peek(i)) {
                ('9', Some(c)) => c.is_ascii_digit(),
                (s, Some(c)) => s == c,
                (_, None) => false,
            });
        (matches && !self.peek(SHAPE.len()).is_some_and(is_word_char)).then_some(SHAPE.len())
    }

    fn number(&mut self) -> (TokenKind, String) {
        let start = self.pos;
        // After a '-', Cassandra's lexer reads a signed integer (`-0`), so
        // `-0x01` is `-0` and the name `x01`.
        let signed = self
            .tokens
            .last()
            .is_some_and(|t| t.kind == TokenKind::Symbol && t.value == "-" && t.end == start);
        if !signed && self.peek(0) == Some('0') && matches!(self.peek(1), Some('x' | 'X')) {
            self.bump_n(2);
            while self.peek(0).is_some_and(|c| c.is_ascii_hexdigit()) {
                self.bump();
            }
            return (TokenKind::Hex, self.text(start));
        }
        self.digits();
        let mut kind = TokenKind::Integer;
        // `1..3` is a slice range, not the float `1.` followed by `.3`.
        if self.peek(0) == Some('.') && self.peek(1) != Some('.') {
            self.bump();
            self.digits();
            kind = TokenKind::Float;
        }
        if self.exponent() {
            kind = TokenKind::Float;
        }
        if kind == TokenKind::Integer && self.duration_units() {
            return (TokenKind::Duration, self.text(start));
        }
        (kind, self.text(start))
    }

    fn digits(&mut self) -> usize {
        let mut count = 0;
        while self.peek(0).is_some_and(|c| c.is_ascii_digit()) {
            self.bump();
            count += 1;
        }
        count
    }

    fn exponent(&mut self) -> bool {
        if !matches!(self.peek(0), Some('e' | 'E')) {
            return false;
        }
        let sign = usize::from(matches!(self.peek(1), Some('+' | '-')));
        if !self.peek(1 + sign).is_some_and(|c| c.is_ascii_digit()) {
            return false;
        }
        self.bump_n(1 + sign);
        self.digits();
        true
    }

    /// After the digits of `1h30m`: consumes `h30m` and reports whether it was a duration.
    fn duration_units(&mut self) -> bool {
        let mut any = false;
        loop {
            let Some(unit) = DURATION_UNITS.iter().find(|unit| {
                unit.chars()
                    .enumerate()
                    .all(|(i, u)| self.peek(i).is_some_and(|c| c.to_lowercase().eq([u])))
            }) else {
                return any;
            };
            self.bump_n(unit.chars().count());
            any = true;
            if self.digits() == 0 {
                return true;
            }
        }
    }

    fn quoted(&mut self, quote: char, kind: TokenKind) -> Result<(TokenKind, String)> {
        self.bump();
        let mut value = String::new();
        loop {
            match (self.peek(0), self.peek(1)) {
                (Some(c), Some(d)) if c == quote && d == quote => {
                    value.push(quote);
                    self.bump_n(2);
                }
                (Some(c), _) if c == quote => {
                    self.bump();
                    return Ok((kind, value));
                }
                (Some(c), _) => {
                    value.push(c);
                    self.bump();
                }
                (None, _) => {
                    return Err(
                        self.error(format!("mismatched character '<EOF>' expecting '{quote}'"))
                    )
                }
            }
        }
    }

    fn dollar_string(&mut self) -> Result<(TokenKind, String)> {
        self.bump_n(2);
        let start = self.pos;
        loop {
            match (self.peek(0), self.peek(1)) {
                (Some('$'), Some('$')) => {
                    let value = self.text(start);
                    self.bump_n(2);
                    return Ok((TokenKind::String, value));
                }
                (Some(_), _) => self.bump(),
                (None, _) => {
                    return Err(self.error("mismatched character '<EOF>' expecting '$'".into()))
                }
            }
        }
    }
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// `P1Y2M3DT4H5M6S` and `P3W`, at least one component. Upper case only, as
/// Cassandra's lexer: `p1y2d` is an identifier there, so a syntax error
/// where a value is expected.
pub(crate) fn is_iso_duration(word: &str) -> bool {
    let Some(rest) = word.strip_prefix('P') else {
        return false;
    };
    if let Some(weeks) = rest.strip_suffix('W') {
        return !weeks.is_empty() && weeks.chars().all(|c| c.is_ascii_digit());
    }
    let (date, time) = match rest.split_once('T') {
        Some((date, time)) => (date, Some(time)),
        None => (rest, None),
    };
    let date_ok = components(date, &['Y', 'M', 'D']);
    let time_ok = time.map(|t| components(t, &['H', 'M', 'S']));
    match (date_ok, time_ok) {
        (Some(d), None) => d > 0,
        (Some(_), Some(Some(t))) => t > 0,
        _ => false,
    }
}

/// Counts `<digits><unit>` components appearing in `units` order; None if malformed.
fn components(text: &str, units: &[char]) -> Option<usize> {
    let mut count = 0;
    let mut next_unit = 0;
    let mut digits = 0;
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits += 1;
            continue;
        }
        let offset = units[next_unit..].iter().position(|u| *u == c)?;
        if digits == 0 {
            return None;
        }
        next_unit += offset + 1;
        digits = 0;
        count += 1;
    }
    (digits == 0).then_some(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(TokenKind, String)> {
        let chars: Vec<char> = text.chars().collect();
        tokenize(&chars)
            .expect("should parse")
            .into_iter()
            .map(|t| (t.kind, t.value))
            .collect()
    }

    #[test]
    fn lexes_literals_of_every_kind() {
        use TokenKind::*;
        let got = kinds("Ab \"Q\"\"x\" 'it''s' $$a'b$$ 12 1.5e3 1..3 0xAB 1h30m P1DT2H");
        let want = [
            (Ident, "ab"),
            (QuotedName, "Q\"x"),
            (String, "it's"),
            (String, "a'b"),
            (Integer, "12"),
            (Float, "1.5e3"),
            (Integer, "1"),
            (Symbol, ".."),
            (Integer, "3"),
            (Hex, "0xAB"),
            (Duration, "1h30m"),
            (Duration, "P1DT2H"),
            (Eof, ""),
        ];
        let want: Vec<_> = want.iter().map(|(k, v)| (*k, v.to_string())).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn lexes_uuids_and_skips_comments() {
        let got = kinds("a -- x\n/* y */ 123e4567-e89b-12d3-a456-426655440000 // z");
        assert_eq!(got[1].0, TokenKind::Uuid);
        assert_eq!(got.len(), 3);
    }

    #[test]
    fn broken_uuids_are_lexer_errors_where_the_shape_breaks() {
        let chars: Vec<char> = "(550e8400-e29b-41d4-a716)".chars().collect();
        let error = tokenize(&chars).expect_err("should fail");
        assert_eq!(
            error.to_string(),
            "line 1:24 mismatched character ')' expecting '-'"
        );
        let chars: Vec<char> = "550e8400-e29x".chars().collect();
        let error = tokenize(&chars).expect_err("should fail");
        assert_eq!(
            error.to_string(),
            "line 1:12 mismatched character 'x' expecting set null"
        );
    }

    #[test]
    fn iso_durations() {
        assert!(is_iso_duration("P1Y2M3DT4H5M6S"));
        assert!(!is_iso_duration("p2w"), "lower case is an identifier");
        assert!(!is_iso_duration("P1y2mT3h"));
        assert!(!is_iso_duration("p"));
        assert!(!is_iso_duration("pt"));
        assert!(!is_iso_duration("plain"));
    }
}
