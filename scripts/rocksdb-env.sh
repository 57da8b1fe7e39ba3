# Sourced by the build, test and benchmark scripts: makes sure RocksDB's
# static library exists, then points librocksdb-sys at it (ROCKSDB_LIB_DIR,
# ROCKSDB_STATIC).
#
# Why: librocksdb-sys compiles RocksDB's C++ in its build script (about 45
# minutes on two cores unoptimised, as Cargo.toml asks for dev builds; about
# 70 optimised), and Cargo runs that build script again whenever the host
# dependencies it was built with differ, as they do between `cargo clippy`
# (check mode) and `cargo test`. Compiled once here and linked from this
# directory, every cargo command reuses it.
#
# ROCKSANDRA_ROCKSDB_PROFILE=release (set it before sourcing) selects the
# optimised library, for `cargo build --release` and `cargo bench`; the
# default is the unoptimised one for tests. The library depends only on the
# librocksdb-sys version and the Cargo.toml profile settings for it; change
# the tag when either changes.
ROCKSANDRA_ROCKSDB_PROFILE=${ROCKSANDRA_ROCKSDB_PROFILE:-dev}
if [ "$ROCKSANDRA_ROCKSDB_PROFILE" = release ]; then
    ROCKSANDRA_ROCKSDB_TAG=${ROCKSANDRA_ROCKSDB_TAG:-librocksdb-sys-0.19.0-release-O3}
    rocksandra_cargo_profile=(--release)
    rocksandra_profile_dir=release
else
    ROCKSANDRA_ROCKSDB_TAG=${ROCKSANDRA_ROCKSDB_TAG:-librocksdb-sys-0.19.0-dev-O0}
    rocksandra_cargo_profile=()
    rocksandra_profile_dir=debug
fi
ROCKSANDRA_ROCKSDB_DIR="$HOME/.cache/rocksandra-rocksdb/$ROCKSANDRA_ROCKSDB_TAG"
if [ ! -f "$ROCKSANDRA_ROCKSDB_DIR/librocksdb.a" ]; then
    echo "== building RocksDB ($ROCKSANDRA_ROCKSDB_PROFILE; once per machine: 45-70 minutes on two cores)"
    (unset ROCKSDB_LIB_DIR ROCKSDB_STATIC; cargo build "${rocksandra_cargo_profile[@]}" -p librocksdb-sys)
    built=$(ls -t "${CARGO_TARGET_DIR:-target}/$rocksandra_profile_dir"/build/librocksdb-sys-*/out/librocksdb.a | head -1)
    mkdir -p "$ROCKSANDRA_ROCKSDB_DIR"
    cp "$built" "$ROCKSANDRA_ROCKSDB_DIR/librocksdb.a.tmp"
    mv "$ROCKSANDRA_ROCKSDB_DIR/librocksdb.a.tmp" "$ROCKSANDRA_ROCKSDB_DIR/librocksdb.a"
fi
export ROCKSDB_LIB_DIR="$ROCKSANDRA_ROCKSDB_DIR"
export ROCKSDB_STATIC=1
