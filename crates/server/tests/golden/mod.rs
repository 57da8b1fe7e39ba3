//! The golden CQL suite (tests/golden) in process: the case files parsed,
//! run and rendered exactly as tests/golden/runner.py does with the Python
//! driver, then compared block by block with tests/golden/expected under
//! the per-case ratchet of tests/golden/baseline.json.
//!
//! - `case`: statements and markers of a case file, `bind`'s Python literals;
//! - `python`: cells decoded into the driver's Python objects, and Python's
//!   ordering of them (the driver sorts sets with it);
//! - `render`: those objects, column types and errors as text;
//! - `bind`: `bind` literals serialized for the bind columns;
//! - `session`: one connection, and the output of each statement;
//! - here: a whole case (echo, normalizers, logins) and the comparison.

pub mod bind;
pub mod case;
pub mod python;
pub mod render;
pub mod session;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use regex::Regex;
use rocksandra_wire::ProtocolVersion;

use case::{split_statements, Item};
use render::render_error;
use session::Session;

/// tests/golden, from this crate.
pub fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden")
}

/// Where a case runs: the server, the protocol, the initial login.
#[derive(Clone)]
pub struct Target {
    pub address: SocketAddr,
    pub version: ProtocolVersion,
    pub login: Option<(String, String)>,
}

/// Applies the case's `normalize` markers seen so far to output lines.
struct Normalizers(Vec<(Regex, String)>);

impl Normalizers {
    fn add(&mut self, pattern: &str, replacement: &str) -> Result<(), String> {
        let regex = Regex::new(pattern).map_err(|e| format!("normalize {pattern:?}: {e}"))?;
        self.0.push((regex, python_replacement(replacement)));
        Ok(())
    }

    fn apply(&self, line: &str) -> String {
        self.0
            .iter()
            .fold(line.to_string(), |line, (regex, replacement)| {
                regex.replace_all(&line, replacement.as_str()).into_owned()
            })
    }
}

/// A Python `re.sub` replacement (`\1`, `\g<name>`) in the regex crate's
/// syntax (`${1}`, `${name}`, a literal `$` doubled).
fn python_replacement(replacement: &str) -> String {
    let mut out = String::new();
    let mut chars = replacement.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '$' => out.push_str("$$"),
            '\\' => match chars.peek().copied() {
                Some(d) if d.is_ascii_digit() => {
                    let mut group = String::new();
                    while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                        group.push(d);
                        chars.next();
                    }
                    out.push_str(&format!("${{{group}}}"));
                }
                Some('g') => {
                    chars.next();
                    let name: String = chars.by_ref().skip(1).take_while(|c| *c != '>').collect();
                    out.push_str(&format!("${{{name}}}"));
                }
                Some('n') => {
                    chars.next();
                    out.push('\n');
                }
                Some('\\') => {
                    chars.next();
                    out.push('\\');
                }
                _ => out.push('\\'),
            },
            other => out.push(other),
        }
    }
    out
}

/// Runs one case file; its whole output, as runner.py's `run_case` writes
/// it. An error is a broken case file (the runner's RUNNER FAILURE).
pub async fn run_case(target: &Target, source: &str) -> Result<String, String> {
    let items = split_statements(source).map_err(|e| e.to_string())?;
    let initial_login = target.login.as_ref().map(|(u, p)| (u.as_str(), p.as_str()));
    let mut initial = Session::connect(target.address, target.version, initial_login)
        .await
        .map_err(|e| format!("the initial login failed: {}", render_error(&e)))?;
    let mut logged_in: Option<Session> = None;
    let mut normalizers = Normalizers(Vec::new());
    let mut out: Vec<String> = Vec::new();
    for item in items {
        match item {
            Item::Normalize {
                pattern,
                replacement,
            } => normalizers.add(&pattern, &replacement)?,
            Item::Login(None) => {
                out.push("> LOGIN".into());
                logged_in = None;
                out.push(normalizers.apply("OK"));
                out.push(String::new());
            }
            Item::Login(Some((user, password))) => {
                out.push(format!("> LOGIN {user}"));
                let login = Some((user.as_str(), password.as_str()));
                match Session::connect(target.address, target.version, login).await {
                    Ok(session) => {
                        logged_in = Some(session);
                        out.push(normalizers.apply("OK"));
                    }
                    Err(e) => out.push(normalizers.apply(&render_error(&e))),
                }
                out.push(String::new());
            }
            Item::Statement(statement) => {
                out.extend(echo(&statement));
                let session = logged_in.as_mut().unwrap_or(&mut initial);
                for line in session.execute(&statement).await {
                    out.push(normalizers.apply(&line));
                }
                out.push(String::new());
            }
        }
    }
    Ok(format!("{}\n", out.join("\n").trim_end_matches('\n')))
}

/// The statement echoed with '> ' (then '  ') prefixes, ';' on its last
/// line, and its bind values.
fn echo(statement: &case::Statement) -> Vec<String> {
    let lines = python_splitlines(&statement.text);
    let last = lines.len().saturating_sub(1);
    let mut out: Vec<String> = lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let prefix = if i == 0 { "> " } else { "  " };
            let end = if i == last { ";" } else { "" };
            format!("{prefix}{}{end}", line.trim_end())
        })
        .collect();
    if let Some(values) = statement.bind() {
        out.push(format!("  -- bind {}", render::render_bind(values)));
    }
    out
}

/// Python's `str.splitlines()` for the line breaks CQL text can hold.
fn python_splitlines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => {
                lines.push(&text[start..i]);
                i += 2;
                start = i;
            }
            b'\n' | b'\r' | 0x0b | 0x0c | 0x1c..=0x1e => {
                lines.push(&text[start..i]);
                i += 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// The output of each statement: blocks start at lines beginning with '> '.
pub fn split_blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for line in python_splitlines(text) {
        if line.starts_with("> ") && !current.is_empty() {
            blocks.push(current.join("\n").trim_end().to_string());
            current.clear();
        }
        current.push(line);
    }
    if !current.is_empty() {
        blocks.push(current.join("\n").trim_end().to_string());
    }
    blocks
}

/// How a case's output compares with its expected output.
pub struct Comparison {
    pub matched: usize,
    pub expected_blocks: usize,
    /// Expected and actual blocks at the first few positions that differ.
    pub first_differences: Vec<(usize, String, String)>,
}

/// The blocks at most this many differences are shown for, per case.
const DIFFERENCES_SHOWN_MAX: usize = 3;

pub fn compare(expected: &str, actual: &str) -> Comparison {
    let expected = split_blocks(expected);
    let actual = split_blocks(actual);
    let mut matched = 0;
    let mut first_differences = Vec::new();
    for i in 0..expected.len().max(actual.len()) {
        let (e, a) = (expected.get(i), actual.get(i));
        if e.is_some() && e == a {
            matched += 1;
        } else if first_differences.len() < DIFFERENCES_SHOWN_MAX {
            let text = |b: Option<&String>| b.cloned().unwrap_or_else(|| "(nothing)".into());
            first_differences.push((i, text(e), text(a)));
        }
    }
    Comparison {
        matched,
        expected_blocks: expected.len(),
        first_differences,
    }
}

/// A readable diff of two blocks: `-` expected lines, `+` actual lines.
pub fn block_diff(expected: &str, actual: &str) -> String {
    let mut out = String::new();
    let expected_lines: Vec<&str> = expected.lines().collect();
    let actual_lines: Vec<&str> = actual.lines().collect();
    for i in 0..expected_lines.len().max(actual_lines.len()) {
        match (expected_lines.get(i), actual_lines.get(i)) {
            (Some(e), Some(a)) if e == a => out.push_str(&format!("      {e}\n")),
            (e, a) => {
                if let Some(e) = e {
                    out.push_str(&format!("    - {e}\n"));
                }
                if let Some(a) = a {
                    out.push_str(&format!("    + {a}\n"));
                }
            }
        }
    }
    out
}

/// The renderer and parser against what Python and its driver print for
/// the same values (read off python3 and cassandra-driver 3.30.1).
#[cfg(test)]
mod tests {
    use num_bigint::BigInt;
    use rocksandra_data::types::{CqlType, NativeType};

    use super::case::{parse_bind_values, split_statements, BindValues, Item, PyLiteral};
    use super::python::{decode, Py};
    use super::render::{render_decimal, render_float, render_text, render_value};

    #[test]
    fn floats_print_as_python_repr() {
        let cases = [
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-0.0, "-0.0"),
            (1.5e300, "1.5e+300"),
            (f64::from(0.729_927_06_f32), "0.7299270629882812"),
            (f64::from(1.1_f32), "1.100000023841858"),
            (123_456_789_012_345_678.0, "1.2345678901234568e+17"),
            (2.5e-7, "2.5e-07"),
            (100.0, "100.0"),
        ];
        for (value, python) in cases {
            assert_eq!(render_float(value), python, "{value:e}");
        }
    }

    #[test]
    fn decimals_print_as_python_decimal() {
        let cases = [
            (123, 2, "1.23"),
            (1, -2, "1E+2"),
            (0, 2, "0.00"),
            (-5, 8, "-5E-8"),
            (12345, 0, "12345"),
            (1, 7, "1E-7"),
            (1, 6, "0.000001"),
        ];
        for (unscaled, scale, python) in cases {
            assert_eq!(render_decimal(&BigInt::from(unscaled), scale), python);
        }
    }

    #[test]
    fn inets_print_as_inet_ntop() {
        let inet = |bytes: [u8; 16]| match decode(&CqlType::Native(NativeType::Inet), &bytes) {
            Ok(Py::Str(s)) => s,
            other => panic!("{other:?}"),
        };
        let mut mapped = [0; 16];
        mapped[10..].copy_from_slice(&[0xff, 0xff, 1, 2, 3, 4]);
        let mut two_runs = [0; 16];
        two_runs[1] = 1;
        two_runs[9] = 1;
        assert_eq!(inet([0; 16]), "::");
        assert_eq!(inet(mapped), "::ffff:1.2.3.4");
        assert_eq!(inet(two_runs), "1::1:0:0:0");
    }

    #[test]
    fn text_escapes_what_python_cannot_print() {
        assert_eq!(render_text("it's\\ é"), "'it''s\\\\ é'");
        assert_eq!(
            render_text("\u{7}\u{85}\u{200b}\u{e0001}\n"),
            "'\\x07\\x85\\u200b\\U000e0001\\n'"
        );
    }

    #[test]
    fn dates_outside_python_years_print_as_day_counts() {
        let date = |days: i64| render_value(&Py::Date(days));
        assert_eq!(date(-719_163), "-719163");
        assert_eq!(date(2_932_897), "2932897");
        assert_eq!(date(0), "1970-01-01");
    }

    #[test]
    fn sets_of_tuples_with_nulls_keep_the_driver_order() {
        // (1, None) cannot be compared with (1, 2) in Python: SortedSet
        // falls back to a scan (python3: SortedSet([(1, 3), (1, None),
        // (1, 2)]) is [(1, 2), (1, 3), (1, None)]).
        let tuple = |b: Option<i32>| {
            let field = b.map_or(Py::None, |b| Py::Int(b.into()));
            Py::Tuple(vec![Py::Int(1.into()), field])
        };
        let ty = CqlType::Set(Box::new(CqlType::Tuple(vec![
            CqlType::Native(NativeType::Int),
            CqlType::Native(NativeType::Int),
        ])));
        let cell = |b: Option<i32>| {
            let mut out = 4i32.to_be_bytes().to_vec();
            out.extend(1i32.to_be_bytes());
            match b {
                Some(b) => {
                    out.extend(4i32.to_be_bytes());
                    out.extend(b.to_be_bytes());
                }
                None => out.extend((-1i32).to_be_bytes()),
            }
            out
        };
        let mut bytes = 3i32.to_be_bytes().to_vec();
        for element in [cell(Some(3)), cell(None), cell(Some(2))] {
            bytes.extend((element.len() as i32).to_be_bytes());
            bytes.extend(element);
        }
        let set = decode(&ty, &bytes).expect("decodes");
        let expected = vec![tuple(Some(2)), tuple(Some(3)), tuple(None)];
        assert_eq!(set, Py::SortedSet(expected));
    }

    #[test]
    fn statements_split_as_the_python_runner_splits_them() {
        let source = "-- golden: fetch-size 2\nSELECT ';' FROM t; -- trailing\n\
                      BEGIN BATCH INSERT INTO t (k) VALUES (1); APPLY BATCH;\n\
                      -- golden: login u p\nCREATE FUNCTION f() RETURNS int LANGUAGE java AS $$ return 1; $$;\n";
        let items = split_statements(source).expect("splits");
        let texts: Vec<&str> = items
            .iter()
            .filter_map(|i| match i {
                Item::Statement(s) => Some(s.text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            texts,
            [
                "SELECT ';' FROM t",
                "BEGIN BATCH INSERT INTO t (k) VALUES (1); APPLY BATCH",
                "CREATE FUNCTION f() RETURNS int LANGUAGE java AS $$ return 1; $$",
            ]
        );
        assert!(matches!(&items[2], Item::Login(Some((u, p))) if u == "u" && p == "p"));
    }

    #[test]
    fn bind_values_read_python_literals() {
        let values = parse_bind_values("'a', None, UNSET, [0.7, -3], {'b'}, {1: 'x'}", 1);
        assert_eq!(
            values,
            Ok(BindValues::Positional(vec![
                PyLiteral::Str("a".into()),
                PyLiteral::None,
                PyLiteral::Unset,
                PyLiteral::List(vec![PyLiteral::Float(0.7), PyLiteral::Int(-3)]),
                PyLiteral::Set(vec![PyLiteral::Str("b".into())]),
                PyLiteral::Dict(vec![(PyLiteral::Int(1), PyLiteral::Str("x".into()))]),
            ]))
        );
        let named = parse_bind_values("{'key': 'b'}", 1);
        assert_eq!(
            named,
            Ok(BindValues::Named(vec![(
                "key".into(),
                PyLiteral::Str("b".into())
            )]))
        );
    }
}
