//! Case files: statements split exactly as tests/golden/runner.py splits
//! them, with their `-- golden:` markers, and the Python literals of `bind`.

use std::fmt;

use rocksandra_wire::Consistency;

/// A marker that applies to the statement after it.
#[derive(Debug, Clone, PartialEq)]
pub enum Marker {
    SkipOutput,
    SortRows,
    /// Page size; 0 means no paging at all.
    FetchSize(i32),
    SleepSeconds(f64),
    Consistency(Consistency),
    SerialConsistency(Consistency),
    Bind(BindValues),
}

/// The values of a `bind` marker: positional, or one dict for named markers.
#[derive(Debug, Clone, PartialEq)]
pub enum BindValues {
    Positional(Vec<PyLiteral>),
    Named(Vec<(String, PyLiteral)>),
}

/// A Python literal as `bind` markers write them (`ast.literal_eval`'s
/// subset the cases use, plus `UNSET`).
#[derive(Debug, Clone, PartialEq)]
pub enum PyLiteral {
    None,
    Unset,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    List(Vec<PyLiteral>),
    Set(Vec<PyLiteral>),
    Tuple(Vec<PyLiteral>),
    Dict(Vec<(PyLiteral, PyLiteral)>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    pub text: String,
    pub line: usize,
    pub markers: Vec<Marker>,
}

impl Statement {
    pub fn has(&self, wanted: &Marker) -> bool {
        self.markers.contains(wanted)
    }

    pub fn fetch_size(&self) -> Option<i32> {
        self.markers.iter().find_map(|m| match m {
            Marker::FetchSize(n) => Some(*n),
            _ => None,
        })
    }

    pub fn bind(&self) -> Option<&BindValues> {
        self.markers.iter().find_map(|m| match m {
            Marker::Bind(values) => Some(values),
            _ => None,
        })
    }
}

/// One item of a case file, in file order.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Statement(Statement),
    /// `normalize RE => REPL`: from here on, on every output line.
    Normalize {
        pattern: String,
        replacement: String,
    },
    /// `login USER PASSWORD`, or `login` (None) for the initial session.
    Login(Option<(String, String)>),
}

/// A malformed case file (the runner's ValueError).
#[derive(Debug, Clone, PartialEq)]
pub struct CaseError(pub String);

impl fmt::Display for CaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn error<T>(line: usize, message: impl fmt::Display) -> Result<T, CaseError> {
    Err(CaseError(format!("line {line}: {message}")))
}

/// The yaml lines a case's server needs (`-- golden: server-yaml`), sorted.
pub fn server_yaml(source: &str) -> Vec<String> {
    let mut lines: Vec<String> = source
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("--")?.trim_start();
            let rest = rest.strip_prefix("golden:")?.trim_start();
            let rest = rest.strip_prefix("server-yaml")?;
            rest.starts_with(char::is_whitespace)
                .then(|| rest.trim().to_string())
        })
        .collect();
    lines.sort();
    lines
}

/// The splitter's state: the statement being read and its pending markers.
struct Splitter<'a> {
    source: &'a str,
    items: Vec<Item>,
    pending: Vec<Marker>,
    buf: String,
    start_line: Option<usize>,
    line: usize,
}

/// Splits a case file into statements, normalizers and logins.
pub fn split_statements(source: &str) -> Result<Vec<Item>, CaseError> {
    let mut s = Splitter {
        source,
        items: Vec::new(),
        pending: Vec::new(),
        buf: String::new(),
        start_line: None,
        line: 1,
    };
    let mut i = 0;
    while i < source.len() {
        i = s.step(i)?;
    }
    if !s.buf.trim().is_empty() {
        return error(
            s.start_line.unwrap_or(s.line),
            "statement without a terminating ';'",
        );
    }
    Ok(s.items)
}

impl Splitter<'_> {
    fn at_statement_start(&self) -> bool {
        self.buf.trim().is_empty()
    }

    /// Consumes what starts at byte `i`; returns where the next step starts.
    fn step(&mut self, i: usize) -> Result<usize, CaseError> {
        let rest = &self.source[i..];
        if rest.starts_with("--") || rest.starts_with("//") {
            return self.line_comment(i);
        }
        if let Some(body) = rest.strip_prefix("/*") {
            let end = body.find("*/").map_or(self.source.len(), |e| i + e + 4);
            let chunk = &self.source[i..end];
            self.line += chunk.matches('\n').count();
            if !self.at_statement_start() {
                self.buf.push_str(chunk);
            }
            return Ok(end);
        }
        let c = rest.chars().next().unwrap_or(' ');
        if c == '\'' || c == '"' || rest.starts_with("$$") {
            return Ok(self.quoted(i, c));
        }
        if c == ';' {
            return self.semicolon(i);
        }
        if c == '\n' {
            self.line += 1;
        } else if !c.is_whitespace() && self.start_line.is_none() {
            self.start_line = Some(self.line);
        }
        self.buf.push(c);
        Ok(i + c.len_utf8())
    }

    fn line_comment(&mut self, i: usize) -> Result<usize, CaseError> {
        let end = self.source[i..]
            .find('\n')
            .map_or(self.source.len(), |e| i + e);
        let comment = &self.source[i..end];
        match golden_marker(comment) {
            Some((name, arg)) if self.at_statement_start() => self.marker(name, arg)?,
            _ if !self.at_statement_start() => self.buf.push_str(comment),
            _ => {}
        }
        Ok(end)
    }

    /// A string literal, quoted identifier or `$$` body, kept verbatim.
    fn quoted(&mut self, i: usize, quote: char) -> usize {
        if self.start_line.is_none() {
            self.start_line = Some(self.line);
        }
        let bytes = self.source.as_bytes();
        let end = if self.source[i..].starts_with("$$") {
            self.source[i + 2..]
                .find("$$")
                .map_or(self.source.len(), |e| i + e + 4)
        } else {
            let q = quote as u8;
            let mut j = i + 1;
            while j < bytes.len() {
                if bytes[j] == q {
                    if bytes.get(j + 1) == Some(&q) {
                        j += 2;
                        continue;
                    }
                    break;
                }
                j += 1;
            }
            (j + 1).min(bytes.len())
        };
        let chunk = &self.source[i..end];
        self.line += chunk.matches('\n').count();
        self.buf.push_str(chunk);
        end
    }

    fn semicolon(&mut self, i: usize) -> Result<usize, CaseError> {
        let text = self.buf.trim().to_string();
        if is_open_batch(&text) {
            self.buf.push(';');
            return Ok(i + 1);
        }
        if !text.is_empty() {
            self.items.push(Item::Statement(Statement {
                text,
                line: self.start_line.unwrap_or(self.line),
                markers: std::mem::take(&mut self.pending),
            }));
        } else if !self.pending.is_empty() {
            return error(self.line, "marker before an empty statement");
        }
        self.pending.clear();
        self.buf.clear();
        self.start_line = None;
        Ok(i + 1)
    }

    fn marker(&mut self, name: &str, arg: &str) -> Result<(), CaseError> {
        let line = self.line;
        let marker = match name {
            "normalize" => {
                let Some((pattern, replacement)) = arg.split_once("=>") else {
                    return error(line, "normalize needs 'RE => REPL'");
                };
                self.items.push(Item::Normalize {
                    pattern: pattern.trim().to_string(),
                    replacement: replacement.trim().to_string(),
                });
                return Ok(());
            }
            "server-yaml" => return Ok(()),
            "login" => return self.login(arg),
            "skip-output" => Marker::SkipOutput,
            "sort-rows" => Marker::SortRows,
            "fetch-size" => Marker::FetchSize(parse_number(arg, line)?),
            "sleep" => Marker::SleepSeconds(parse_number(arg, line)?),
            "consistency" => Marker::Consistency(consistency(arg, line)?),
            "serial-consistency" => Marker::SerialConsistency(consistency(arg, line)?),
            "bind" => Marker::Bind(parse_bind_values(arg, line)?),
            other => return error(line, format!("unknown golden marker {other:?}")),
        };
        self.pending.push(marker);
        Ok(())
    }

    fn login(&mut self, arg: &str) -> Result<(), CaseError> {
        if !self.pending.is_empty() {
            return error(self.line, "login between a marker and its statement");
        }
        let words: Vec<&str> = arg.split_whitespace().collect();
        let login = match words[..] {
            [] => None,
            [user, password] => Some((user.to_string(), password.to_string())),
            _ => return error(self.line, "login needs USER PASSWORD (or nothing)"),
        };
        self.items.push(Item::Login(login));
        Ok(())
    }
}

/// `-- golden: NAME ARG` (the runner's `--\s*golden:\s*(\S+)\s*(.*)$`).
fn golden_marker(comment: &str) -> Option<(&str, &str)> {
    let rest = comment.strip_prefix("--")?.trim_start();
    let rest = rest.strip_prefix("golden:")?.trim_start();
    let name_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let (name, arg) = rest.split_at(name_end);
    (!name.is_empty()).then(|| (name, arg.trim()))
}

/// `BEGIN ...` not yet closed by `APPLY BATCH`: its ';' are inside it.
fn is_open_batch(text: &str) -> bool {
    let upper = text.to_ascii_uppercase();
    let begins = upper.starts_with("BEGIN")
        && !upper[5..].starts_with(|c: char| c.is_alphanumeric() || c == '_');
    if !begins {
        return false;
    }
    let words: Vec<&str> = upper.split_whitespace().collect();
    let applied = words.len() >= 2
        && words[words.len() - 1] == "BATCH"
        && words[words.len() - 2].ends_with("APPLY")
        && !words[words.len() - 2][..words[words.len() - 2].len() - 5]
            .ends_with(|c: char| c.is_alphanumeric() || c == '_');
    !applied
}

fn parse_number<T: std::str::FromStr>(arg: &str, line: usize) -> Result<T, CaseError> {
    match arg.trim().parse() {
        Ok(n) => Ok(n),
        Err(_) => error(line, format!("bad number {arg:?}")),
    }
}

fn consistency(arg: &str, line: usize) -> Result<Consistency, CaseError> {
    let wanted = arg.trim().to_ascii_uppercase();
    match Consistency::ALL.iter().find(|c| c.name() == wanted) {
        Some(c) => Ok(*c),
        None => error(line, format!("unknown consistency level {arg:?}")),
    }
}

/// The values of a `bind` marker; one dict with only string keys names them.
pub fn parse_bind_values(arg: &str, line: usize) -> Result<BindValues, CaseError> {
    let mut parser = LiteralParser {
        text: arg.as_bytes(),
        pos: 0,
    };
    let values = parser
        .sequence(b'\0')
        .and_then(|values| parser.end().map(|()| values))
        .or_else(|message| error(line, format!("bad bind values {arg:?}: {message}")))?;
    if let [PyLiteral::Dict(entries)] = &values[..] {
        let names: Option<Vec<(String, PyLiteral)>> = entries
            .iter()
            .map(|(k, v)| match k {
                PyLiteral::Str(name) => Some((name.clone(), v.clone())),
                _ => None,
            })
            .collect();
        if let Some(named) = names {
            return Ok(BindValues::Named(named));
        }
    }
    Ok(BindValues::Positional(values))
}

/// A small recursive-descent reader of Python literals.
struct LiteralParser<'a> {
    text: &'a [u8],
    pos: usize,
}

impl LiteralParser<'_> {
    fn skip_spaces(&mut self) {
        while self.text.get(self.pos).is_some_and(u8::is_ascii_whitespace) {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_spaces();
        self.text.get(self.pos).copied()
    }

    fn end(&mut self) -> Result<(), String> {
        match self.peek() {
            None => Ok(()),
            Some(c) => Err(format!("unexpected {:?}", c as char)),
        }
    }

    /// Comma-separated values up to `close` (not consumed; `\0` for the end).
    fn sequence(&mut self, close: u8) -> Result<Vec<PyLiteral>, String> {
        let mut items = Vec::new();
        loop {
            match self.peek() {
                Some(c) if c == close => return Ok(items),
                None if close == b'\0' => return Ok(items),
                None => return Err(format!("missing {:?}", close as char)),
                Some(_) => items.push(self.value()?),
            }
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(c) if c == close => return Ok(items),
                None if close == b'\0' => return Ok(items),
                other => return Err(format!("expected ',' at {other:?}")),
            }
        }
    }

    fn value(&mut self) -> Result<PyLiteral, String> {
        match self.peek() {
            Some(b'[') => self.bracketed(b']').map(PyLiteral::List),
            Some(b'(') => self.bracketed(b')').map(PyLiteral::Tuple),
            Some(b'{') => self.braces(),
            Some(b'\'' | b'"') => self.string().map(PyLiteral::Str),
            Some(b'b') if matches!(self.text.get(self.pos + 1), Some(b'\'' | b'"')) => {
                self.pos += 1;
                self.string().map(|s| PyLiteral::Bytes(s.into_bytes()))
            }
            Some(c) if c.is_ascii_alphabetic() => self.name(),
            Some(_) => self.number(),
            None => Err("missing value".into()),
        }
    }

    fn bracketed(&mut self, close: u8) -> Result<Vec<PyLiteral>, String> {
        self.pos += 1;
        let items = self.sequence(close)?;
        self.pos += 1;
        Ok(items)
    }

    /// `{}` is a dict, `{a, b}` a set, `{k: v}` a dict.
    fn braces(&mut self) -> Result<PyLiteral, String> {
        self.pos += 1;
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(PyLiteral::Dict(Vec::new()));
        }
        let first = self.value()?;
        if self.peek() != Some(b':') {
            let mut items = vec![first];
            if self.peek() == Some(b',') {
                self.pos += 1;
                items.extend(self.sequence(b'}')?);
            }
            self.pos += 1;
            return Ok(PyLiteral::Set(items));
        }
        let mut entries = Vec::new();
        let mut key = first;
        loop {
            self.expect(b':')?;
            entries.push((key, self.value()?));
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => break,
                other => return Err(format!("expected ',' or '}}' at {other:?}")),
            }
            if self.peek() == Some(b'}') {
                break;
            }
            key = self.value()?;
        }
        self.pos += 1;
        Ok(PyLiteral::Dict(entries))
    }

    fn expect(&mut self, wanted: u8) -> Result<(), String> {
        if self.peek() == Some(wanted) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!("expected {:?}", wanted as char))
        }
    }

    fn name(&mut self) -> Result<PyLiteral, String> {
        let start = self.pos;
        while self
            .text
            .get(self.pos)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
        {
            self.pos += 1;
        }
        match &self.text[start..self.pos] {
            b"None" => Ok(PyLiteral::None),
            b"UNSET" => Ok(PyLiteral::Unset),
            b"True" => Ok(PyLiteral::Bool(true)),
            b"False" => Ok(PyLiteral::Bool(false)),
            other => Err(format!("unknown name {}", String::from_utf8_lossy(other))),
        }
    }

    fn number(&mut self) -> Result<PyLiteral, String> {
        let start = self.pos;
        while self
            .text
            .get(self.pos)
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'+' | b'_'))
        {
            let exponent_sign = matches!(self.text[self.pos], b'-' | b'+')
                && self.pos > start
                && !matches!(self.text[self.pos - 1], b'e' | b'E');
            if exponent_sign {
                break;
            }
            self.pos += 1;
        }
        let text = std::str::from_utf8(&self.text[start..self.pos])
            .map_err(|e| e.to_string())?
            .replace('_', "");
        if let Ok(n) = text.parse::<i128>() {
            return Ok(PyLiteral::Int(n));
        }
        text.parse::<f64>()
            .map(PyLiteral::Float)
            .map_err(|_| format!("bad literal {text:?}"))
    }

    /// A quoted string with Python's common escapes.
    fn string(&mut self) -> Result<String, String> {
        let quote = self.text[self.pos];
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            let Some(&c) = self.text.get(self.pos) else {
                return Err("unterminated string".into());
            };
            self.pos += 1;
            match c {
                _ if c == quote => break,
                b'\\' => self.escape(&mut out)?,
                _ => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|e| e.to_string())
    }

    fn escape(&mut self, out: &mut Vec<u8>) -> Result<(), String> {
        let Some(&c) = self.text.get(self.pos) else {
            return Err("escape at the end".into());
        };
        self.pos += 1;
        let simple = match c {
            b'n' => Some('\n'),
            b't' => Some('\t'),
            b'r' => Some('\r'),
            b'0' => Some('\0'),
            b'\\' | b'\'' | b'"' => Some(c as char),
            _ => None,
        };
        let ch = match (simple, c) {
            (Some(ch), _) => ch,
            (None, b'x') => self.hex_char(2)?,
            (None, b'u') => self.hex_char(4)?,
            (None, b'U') => self.hex_char(8)?,
            _ => return Err(format!("unknown escape \\{}", c as char)),
        };
        let mut utf8 = [0; 4];
        out.extend_from_slice(ch.encode_utf8(&mut utf8).as_bytes());
        Ok(())
    }

    fn hex_char(&mut self, digits: usize) -> Result<char, String> {
        let hex = self
            .text
            .get(self.pos..self.pos + digits)
            .ok_or("short escape")?;
        self.pos += digits;
        let code = u32::from_str_radix(std::str::from_utf8(hex).map_err(|e| e.to_string())?, 16)
            .map_err(|e| e.to_string())?;
        char::from_u32(code).ok_or_else(|| format!("bad code point {code:x}"))
    }
}
