//! The executor depends on the statement modules, never the reverse: no
//! source file of the crate but `executor.rs` and `lib.rs` (which
//! re-exports it) names the executor in its code. Statements get what they
//! use of the node through `ctx::StatementCtx`. And `view` builds on
//! `ddl`, never the reverse.

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

/// The lines of `text` outside comments that contain any of `names`.
fn naming(text: &str, names: &[&str]) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.starts_with("//"))
        .filter(|line| names.iter().any(|name| line.contains(name)))
        .map(str::to_string)
        .collect()
}

/// The lines of `text` outside comments that name the executor.
fn naming_the_executor(text: &str) -> Vec<String> {
    naming(text, &["crate::executor", "Executor"])
}

#[test]
fn no_module_below_the_executor_names_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let allowed = [src.join("executor.rs"), src.join("lib.rs")];
    let mut offenders = Vec::new();
    for file in sources(&src) {
        if allowed.contains(&file) {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("read a source file");
        for line in naming_the_executor(&text) {
            offenders.push(format!("{}: {line}", file.display()));
        }
    }
    assert!(
        offenders.is_empty(),
        "statement modules take a StatementCtx, not the executor:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_check_sees_an_import_and_ignores_comments() {
    let text = "//! see `Executor::run`\nuse crate::executor::Executor;\n";
    assert_eq!(
        naming_the_executor(text),
        vec!["use crate::executor::Executor;".to_string()]
    );
}

/// ALTER TABLE of a base table with views goes through `view::alter_table`,
/// which calls `ddl::alter_table` and makes the views follow.
#[test]
fn ddl_does_not_name_view() {
    let ddl = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/ddl.rs");
    let text = std::fs::read_to_string(&ddl).expect("read ddl.rs");
    let offenders = naming(&text, &["crate::view", "view::"]);
    assert!(
        offenders.is_empty(),
        "view depends on ddl, not the reverse:\n{}",
        offenders.join("\n")
    );
}
