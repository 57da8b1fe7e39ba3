//! Compiles `src/rate_limit.cc` against the headers of the RocksDB that
//! librocksdb-sys links (it names its source directory to crates that
//! depend on it directly: `DEP_ROCKSDB_CARGO_MANIFEST_DIR`).

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=src/rate_limit.cc");
    let Some(librocksdb) = std::env::var_os("DEP_ROCKSDB_CARGO_MANIFEST_DIR") else {
        panic!("librocksdb-sys did not say where its sources are (DEP_ROCKSDB_CARGO_MANIFEST_DIR)");
    };
    let include = PathBuf::from(librocksdb).join("rocksdb").join("include");
    cc::Build::new()
        .cpp(true)
        .std("c++20")
        .include(include)
        .file("src/rate_limit.cc")
        .warnings(true)
        .compile("rocksandra_rate_limit");
}
