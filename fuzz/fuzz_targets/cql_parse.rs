//! Fuzzes the CQL parser: arbitrary bytes must never panic, and any statement
//! that parses must print to text that parses back to the same AST.

#![no_main]

use libfuzzer_sys::fuzz_target;
use rocksandra_cql::{parse_script, parse_statement};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_script(text);
    let Ok(parsed) = parse_statement(text) else {
        return;
    };
    let printed = parsed.to_string();
    match parse_statement(&printed) {
        Ok(reparsed) => assert_eq!(reparsed, parsed, "{text:?} printed as {printed:?}"),
        Err(e) => panic!("{text:?} printed as {printed:?}, which fails to parse: {e}"),
    }
});
