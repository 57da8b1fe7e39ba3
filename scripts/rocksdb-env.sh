# Sourced by every build, test and benchmark script (and README command 1):
# makes sure the one RocksDB static library of this machine exists, then
# points librocksdb-sys at it (ROCKSDB_LIB_DIR, ROCKSDB_STATIC) and sets the
# one target directory every cargo command shares.
#
# Why: librocksdb-sys compiles RocksDB's C++ in its build script, and Cargo
# runs that build script again for every profile and whenever the host
# dependencies it was built with differ (`cargo clippy` against `cargo
# test`). Compiled once here, optimised (-O3, as the release profile asks)
# with SSE4.2 and PCLMUL (hardware CRC32C, as RocksDB's own non-portable
# build), and linked from this directory, tests, clippy, benches and the
# release binary all use the same library. It takes about 12 minutes on two
# cores, once per machine.
#
# The library depends only on the librocksdb-sys version and the flags
# below; change the tag when either changes.
ROCKSANDRA_ROCKSDB_TAG=${ROCKSANDRA_ROCKSDB_TAG:-librocksdb-sys-0.19.0-O3-sse42}
ROCKSANDRA_ROCKSDB_DIR="$HOME/.cache/rocksandra-rocksdb/$ROCKSANDRA_ROCKSDB_TAG"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/rocksandra-target}"
if [ ! -f "$ROCKSANDRA_ROCKSDB_DIR/librocksdb.a" ]; then
    echo "== building RocksDB (once per machine: about 12 minutes on two cores)"
    rocksandra_rocksdb_build="$HOME/.cache/rocksandra-rocksdb/build"
    (
        unset ROCKSDB_LIB_DIR ROCKSDB_STATIC
        # Only this build sees these flags: librocksdb-sys's build script
        # turns the target features into -msse4.2 -mpclmul for the C++.
        export CARGO_TARGET_DIR="$rocksandra_rocksdb_build"
        export RUSTFLAGS="-C target-feature=+sse4.2,+pclmulqdq"
        cargo build --release -p librocksdb-sys
    ) || { echo "RocksDB did not build (scripts/setup-build.sh installs what it needs)" >&2; return 1; }
    built=$(ls -t "$rocksandra_rocksdb_build"/release/build/librocksdb-sys-*/out/librocksdb.a | head -1)
    mkdir -p "$ROCKSANDRA_ROCKSDB_DIR"
    cp "$built" "$ROCKSANDRA_ROCKSDB_DIR/librocksdb.a.tmp"
    mv "$ROCKSANDRA_ROCKSDB_DIR/librocksdb.a.tmp" "$ROCKSANDRA_ROCKSDB_DIR/librocksdb.a"
    rm -rf "$rocksandra_rocksdb_build"
fi
export ROCKSDB_LIB_DIR="$ROCKSANDRA_ROCKSDB_DIR"
export ROCKSDB_STATIC=1
