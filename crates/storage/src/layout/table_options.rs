//! The table options file (`TABLE-OPTIONS` in the RocksDB directory): the
//! storage options of every table, which RocksDB needs before the schema is
//! loaded, when it opens the column families. One line per table:
//!
//! ```text
//! <table id> gc_grace=<s> compaction=<leveled|universal|time_window> compression=<none|lz4|zstd> bloom=<p> default_ttl=<s> block=<bytes> [strict_liveness=1] [prefix_rows=1]
//! ```
//! (`strict_liveness` and `prefix_rows` only when set, so files written before it read the
//! same; a line without `block` has the default block size.)

use crate::api::{CompactionStyle, Compression, TableId, TableOptions};

use super::CorruptData;

pub fn encode(tables: &[(TableId, TableOptions)]) -> String {
    let mut out = String::new();
    for (id, o) in tables {
        let compaction = match o.compaction {
            CompactionStyle::Leveled => "leveled",
            CompactionStyle::Universal => "universal",
            CompactionStyle::TimeWindow => "time_window",
        };
        let compression = match o.compression {
            Compression::None => "none",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        };
        out.push_str(&format!(
            "{} gc_grace={} compaction={compaction} compression={compression} bloom={} default_ttl={} block={}\n",
            id.0, o.gc_grace_seconds, o.bloom_filter_fp_chance, o.default_ttl_seconds, o.block_bytes
        ));
        if o.strict_liveness {
            out.insert_str(out.len() - 1, " strict_liveness=1");
        }
        if o.clustering_prefix_rows {
            out.insert_str(out.len() - 1, " prefix_rows=1");
        }
    }
    out
}

pub fn decode(text: &str) -> Result<Vec<(TableId, TableOptions)>, CorruptData> {
    let bad = |detail: String| CorruptData::new("table options file", detail);
    let mut tables = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut words = line.split_whitespace();
        let id = words
            .next()
            .and_then(|w| w.parse().ok())
            .ok_or_else(|| bad(format!("no table id in {line:?}")))?;
        let mut options = TableOptions::default();
        for word in words {
            let (name, value) = word
                .split_once('=')
                .ok_or_else(|| bad(format!("no '=' in {word:?}")))?;
            let number = || {
                value
                    .parse()
                    .map_err(|_| bad(format!("bad number {word:?}")))
            };
            match name {
                "gc_grace" => options.gc_grace_seconds = number()?,
                "default_ttl" => options.default_ttl_seconds = number()?,
                "block" => {
                    options.block_bytes = value
                        .parse()
                        .ok()
                        .filter(|&b| b > 0)
                        .ok_or_else(|| bad(format!("bad block size {word:?}")))?
                }
                "strict_liveness" => options.strict_liveness = value == "1",
                "prefix_rows" => options.clustering_prefix_rows = value == "1",
                "bloom" => {
                    options.bloom_filter_fp_chance = value
                        .parse()
                        .map_err(|_| bad(format!("bad number {word:?}")))?
                }
                "compaction" => {
                    options.compaction = match value {
                        "leveled" => CompactionStyle::Leveled,
                        "universal" => CompactionStyle::Universal,
                        "time_window" => CompactionStyle::TimeWindow,
                        _ => return Err(bad(format!("unknown compaction {value:?}"))),
                    }
                }
                "compression" => {
                    options.compression = match value {
                        "none" => Compression::None,
                        "lz4" => Compression::Lz4,
                        "zstd" => Compression::Zstd,
                        _ => return Err(bad(format!("unknown compression {value:?}"))),
                    }
                }
                // Written by a newer version: ignore, as RocksDB does.
                _ => {}
            }
        }
        tables.push((TableId(id), options));
    }
    Ok(tables)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let tables = vec![
            (TableId(1), TableOptions::default()),
            (
                TableId(u64::MAX - 3),
                TableOptions {
                    gc_grace_seconds: 0,
                    compaction: CompactionStyle::TimeWindow,
                    compression: Compression::Zstd,
                    bloom_filter_fp_chance: 0.1,
                    default_ttl_seconds: 86_400,
                    strict_liveness: true,
                    clustering_prefix_rows: true,
                    block_bytes: 64 * 1024,
                },
            ),
        ];
        assert_eq!(decode(&encode(&tables)).expect("decode"), tables);
    }

    #[test]
    fn rejects_garbage_without_panicking() {
        for text in [
            "x",
            "1 gc_grace",
            "1 gc_grace=x",
            "1 compaction=lsm",
            "1 block=0",
            "1 block=-4",
            "\u{0}",
        ] {
            assert!(decode(text).is_err(), "{text:?}");
        }
        assert_eq!(decode("").expect("empty"), Vec::new());
    }

    #[test]
    fn a_line_without_block_size_has_the_default() {
        let line = "7 gc_grace=10 compaction=leveled compression=lz4 bloom=0.01 default_ttl=0";
        let tables = decode(line).expect("decode");
        assert_eq!(tables[0].1.block_bytes, crate::api::DEFAULT_BLOCK_BYTES);
    }
}
