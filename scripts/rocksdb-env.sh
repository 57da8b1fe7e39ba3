# Sourced by the build and test scripts: makes sure RocksDB's static library
# exists, then points librocksdb-sys at it (ROCKSDB_LIB_DIR, ROCKSDB_STATIC).
#
# Why: librocksdb-sys compiles RocksDB's C++ in its build script (about 45
# minutes on two cores, unoptimised as Cargo.toml asks), and Cargo runs that
# build script again whenever the host dependencies it was built with differ,
# as they do between `cargo clippy` (check mode) and `cargo test`. Compiled
# once here and linked from this directory, every cargo command reuses it.
# The library depends only on the librocksdb-sys version and the dev profile
# settings for it; change ROCKSANDRA_ROCKSDB_TAG when either changes.
ROCKSANDRA_ROCKSDB_TAG=${ROCKSANDRA_ROCKSDB_TAG:-librocksdb-sys-0.19.0-dev-O0}
ROCKSANDRA_ROCKSDB_DIR="$HOME/.cache/rocksandra-rocksdb/$ROCKSANDRA_ROCKSDB_TAG"
if [ ! -f "$ROCKSANDRA_ROCKSDB_DIR/librocksdb.a" ]; then
    echo "== building RocksDB (once per machine: about 45 minutes on two cores)"
    (unset ROCKSDB_LIB_DIR ROCKSDB_STATIC; cargo build -p librocksdb-sys)
    built=$(ls -t "${CARGO_TARGET_DIR:-target}"/debug/build/librocksdb-sys-*/out/librocksdb.a | head -1)
    mkdir -p "$ROCKSANDRA_ROCKSDB_DIR"
    cp "$built" "$ROCKSANDRA_ROCKSDB_DIR/librocksdb.a.tmp"
    mv "$ROCKSANDRA_ROCKSDB_DIR/librocksdb.a.tmp" "$ROCKSANDRA_ROCKSDB_DIR/librocksdb.a"
fi
export ROCKSDB_LIB_DIR="$ROCKSANDRA_ROCKSDB_DIR"
export ROCKSDB_STATIC=1
