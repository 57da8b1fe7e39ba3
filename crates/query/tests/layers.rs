//! The executor depends on the statement modules, never the reverse: no
//! source file of the crate but `executor.rs` and `lib.rs` (which
//! re-exports it) names the executor in its code. Statements get what they
//! use of the node through `ctx::StatementCtx`. And `view` builds on
//! `ddl`, never the reverse.
//!
//! The schema stands below every statement module: `schema.rs` names only
//! the modules of the types it holds (`udf`'s functions, `metrics`' table
//! handle, `type_text`), and those name nothing above them. Access control
//! points one way: `auth` (login, role statements) over `authz`
//! (permissions) over `roles` (stored roles), with the `role` record and the
//! roles cache below all three.

use std::collections::BTreeSet;
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

/// The modules of the crate that `text` names outside comments and inline
/// tests (`crate::NAME`, and each lower-case name of `crate::{...}`; an
/// upper-case one there is an item of `lib.rs`, named `lib`).
fn crate_modules(text: &str) -> BTreeSet<String> {
    let code: Vec<&str> = text
        .lines()
        .take_while(|line| line.trim() != "#[cfg(test)]")
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect();
    let code = code.join("\n");
    let word = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut named = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        let Some(group) = rest.strip_prefix('{') else {
            named.insert(word(rest));
            continue;
        };
        let inside = group.split('}').next().unwrap_or_default();
        for item in inside.split(',').map(|item| word(item.trim())) {
            match item.chars().next() {
                Some(c) if c.is_uppercase() => named.insert("lib".to_string()),
                Some(_) => named.insert(item),
                None => false,
            };
        }
    }
    named
}

/// The crate modules a source file (path under `src/`) names.
fn modules_named_by(file: &str) -> BTreeSet<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(file);
    let text = std::fs::read_to_string(&path).expect("read a source file");
    crate_modules(&text)
}

/// Fails with the modules `file` names beyond `allowed`.
fn assert_names_only(file: &str, allowed: &[&str], why: &str) {
    let named = modules_named_by(file);
    let beyond: Vec<&String> = named
        .iter()
        .filter(|m| !allowed.contains(&m.as_str()))
        .collect();
    assert!(beyond.is_empty(), "{file} names {beyond:?}: {why}");
}

#[test]
fn the_module_check_reads_paths_and_groups_and_skips_tests() {
    let text = "use crate::error::Result;\n// crate::system\nuse crate::{term, NodeInfo};\n\
                fn f() -> crate::auth_cache::X {}\n#[cfg(test)]\nmod tests { use crate::view; }\n";
    let named: Vec<String> = crate_modules(text).into_iter().collect();
    assert_eq!(named, ["auth_cache", "error", "lib", "term"]);
}

/// The schema and the types it holds stand below every statement module:
/// the built-in keyspaces (`system`), the index stores (`index`) and the
/// metered proxy build on the schema, never the reverse.
#[test]
fn the_schema_names_only_the_types_it_holds() {
    let why = "the schema stands below every statement module";
    assert_names_only("schema.rs", &["error", "metrics", "type_text", "udf"], why);
    assert_names_only("udf.rs", &["error", "type_text"], why);
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for file in sources(&src.join("udf")) {
        let file = file.strip_prefix(&src).expect("under src");
        let file = file.to_str().expect("a UTF-8 path");
        if !file.ends_with("tests.rs") {
            assert_names_only(file, &["error", "type_text", "udf"], why);
        }
    }
    assert_names_only("metrics.rs", &["error"], why);
    assert_names_only("type_text.rs", &[], why);
    assert_names_only("error.rs", &[], why);
}

/// `auth` over `authz` over `roles`, over the `role` record and the roles
/// cache, never the reverse.
#[test]
fn access_control_points_one_way() {
    let above_roles = ["auth", "authz"];
    let why = "roles < authz < auth";
    for file in [
        "roles.rs",
        "role.rs",
        "auth_cache.rs",
        "settings.rs",
        "ctx.rs",
    ] {
        let named = modules_named_by(file);
        let wrong: Vec<&&str> = above_roles.iter().filter(|m| named.contains(**m)).collect();
        assert!(wrong.is_empty(), "{file} names {wrong:?}: {why}");
    }
    assert!(!modules_named_by("authz.rs").contains("auth"), "{why}");
    assert_names_only("role.rs", &[], "the role record is a leaf");
    let cache = modules_named_by("auth_cache.rs");
    assert!(
        !cache.contains("roles"),
        "the roles cache holds `role::Role`; roles reads through the cache"
    );
}

/// `term` stands above `functions`: a term argument carries its own
/// assignment test (`functions::AssignmentTest`), so no file of `functions`
/// names `term`, bar its leaf `term::literal` (the text forms of values).
/// And the index definitions (`index`) stand below `restrict`, which asks
/// them for an analyzer; index planning, which reads restrictions, is
/// `index::plan`.
#[test]
fn functions_do_not_name_term_nor_index_definitions_restrict() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![src.join("functions.rs")];
    files.extend(sources(&src.join("functions")));
    let mut offenders = Vec::new();
    for file in files.iter().filter(|f| !f.ends_with("tests.rs")) {
        let text = std::fs::read_to_string(file).expect("read a source file");
        for line in naming(&text, &["crate::term"]) {
            if !line.contains("crate::term::literal") {
                offenders.push(format!("{}: {line}", file.display()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "functions must not name term:\n{}",
        offenders.join("\n")
    );
    assert!(
        !modules_named_by("index/mod.rs").contains("restrict"),
        "index definitions must not name restrict (planning is index::plan)"
    );
}
