//! Every layer names its failures with error types (ARCHITECTURE.md,
//! "Errors"): no function of the cluster crate, nor of the server crate's
//! converted modules, returns `Result<_, String>`, where a caller can only
//! print the error or match its words. Tests (`#[cfg(test)]` modules at a
//! file's end) may compare texts.
//!

use std::path::{Path, PathBuf};

/// The `.rs` files under `dir`, recursively.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let entries = std::fs::read_dir(dir).expect("read the source directory");
    for entry in entries {
        let path = entry.expect("read a directory entry").path();
        if path.is_dir() {
            files.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// The code of `text` before its test module, without comment lines.
fn code(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    let tests = lines.windows(2).position(|pair| {
        pair[0].trim() == "#[cfg(test)]" && pair[1].trim_start().starts_with("mod ")
    });
    lines[..tests.unwrap_or(lines.len())]
        .iter()
        .copied()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect()
}

/// The type arguments of the `Result<...>` starting at `rest` (after
/// `Result<`), split at their top-level commas.
fn arguments(rest: &str) -> Vec<String> {
    let mut depth = 0;
    let mut arguments = vec![String::new()];
    for c in rest.chars() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' if depth == 0 => break,
            '>' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                arguments.push(String::new());
                continue;
            }
            _ => {}
        }
        if let Some(last) = arguments.last_mut() {
            last.push(c);
        }
    }
    arguments.iter().map(|a| a.trim().to_string()).collect()
}

/// The lines of `text`'s code that name a `Result` whose error is `String`.
fn string_results(text: &str) -> Vec<String> {
    code(text)
        .into_iter()
        .filter(|line| {
            line.match_indices("Result<").any(|(at, _)| {
                let args = arguments(&line[at + "Result<".len()..]);
                args.len() == 2 && args[1] == "String"
            })
        })
        .map(|line| line.trim().to_string())
        .collect()
}

fn offenders(dir: &Path, skipped: &[PathBuf]) -> Vec<String> {
    let mut found = Vec::new();
    for file in sources(dir) {
        if skipped.iter().any(|s| file.starts_with(s)) {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("read a source file");
        for line in string_results(&text) {
            found.push(format!("{}: {line}", file.display()));
        }
    }
    found
}

#[test]
fn the_cluster_and_server_crates_return_typed_errors() {
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let cluster = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cluster/src");
    let mut found = offenders(&cluster, &[]);
    found.extend(offenders(&server, &[]));
    assert!(
        found.is_empty(),
        "name the failure with an error type (thiserror), not a String:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_sees_nested_and_split_results_and_skips_tests() {
    let text = "fn a() -> Result<Vec<(u8, u8)>, String> {}\n\
                ) -> Result<(), String> {\n\
                fn b() -> Option<Result<(), String>> {}\n\
                fn c() -> Result<Result<u8, String>, E> {}\n\
                fn d() -> Result<String, E> {}\n\
                type M = BTreeMap<String, String>;\n\
                // fn e() -> Result<(), String>\n\
                #[cfg(test)]\n\
                mod tests {\n\
                fn f() -> Result<(), String> {}\n";
    assert_eq!(
        string_results(text),
        vec![
            "fn a() -> Result<Vec<(u8, u8)>, String> {}",
            ") -> Result<(), String> {",
            "fn b() -> Option<Result<(), String>> {}",
            "fn c() -> Result<Result<u8, String>, E> {}",
        ]
    );
}
