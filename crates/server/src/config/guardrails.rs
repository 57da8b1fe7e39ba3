//! Cassandra 5.0's guardrail keys (`*_warn_threshold`, `*_fail_threshold`,
//! `*_enabled`), read and checked as Cassandra's `GuardrailsOptions` checks
//! them, with its messages; the guardrails themselves are
//! `rocksandra_query::guardrails`.

use rocksandra_query::guardrails::{
    java_hash_set_text, ConsistencyLevels, Guardrails, TableProperties, Threshold, TimestampOffsets,
};
use rocksandra_wire::Consistency;

use super::{parse_data_size, parse_duration, ConfigError, FileConfig, ValueError};

pub(crate) mod runtime;

/// A guardrail value refused, in the words of Cassandra's
/// `GuardrailsOptions` (at startup and by `nodetool setguardrailsconfig`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuardrailError {
    #[error("Invalid value {value} for {key}: maximum allowed value is {max}")]
    AboveMaximum { value: i64, key: String, max: i64 },
    #[error("Invalid value for {key}: 0 is not allowed; if attempting to disable use -1")]
    Zero { key: String },
    #[error(
        "Invalid value {value} for {key}: negative values are not allowed, outside of -1 which disables the guardrail"
    )]
    Negative { value: i64, key: String },
    /// Warn above fail for an upper bound (values as written).
    #[error(
        "The warn threshold {warn} for {name}_warn_threshold should be lower than the fail threshold {fail}"
    )]
    WarnAboveFail {
        name: String,
        warn: String,
        fail: String,
    },
    /// Warn below fail for a lower bound.
    #[error(
        "The warn threshold {warn} for {name}_warn_threshold should be greater than the fail threshold {fail}"
    )]
    WarnBelowFail { name: String, warn: i64, fail: i64 },
    #[error(
        "Invalid value for {key}: 0 is not allowed; if attempting to disable use an empty value"
    )]
    ZeroSize { key: String },
    /// A size or duration that does not parse, or does not fit.
    #[error("Invalid value for {key}: {source}")]
    Unparsable { key: String, source: ValueError },
    #[error("Invalid value for {key}: '{names}' do not parse as valid table properties")]
    TableProperties { key: String, names: String },
    #[error("Invalid value for {key}: '{name}' is not a consistency level")]
    ConsistencyLevel { key: String, name: String },
    /// The data disk usage guardrails, set at start only.
    #[error(
        "the data disk usage guardrails are read when the node starts: \
         set them in the configuration file and restart"
    )]
    StartOnly,
}

fn unparsable(key: &str) -> impl Fn(ValueError) -> GuardrailError + '_ {
    move |source| GuardrailError::Unparsable {
        key: key.to_string(),
        source,
    }
}

/// Cassandra's `default_keyspace_rf`, which bounds the minimum replication
/// factor's fail threshold (Rocksandra does not read the key: it is always 1).
const DEFAULT_KEYSPACE_RF: i64 = 1;

/// A threshold's largest value (Cassandra's are Java ints).
const THRESHOLD_MAX: i64 = i32::MAX as i64;

/// -1 disables a threshold; other values must be positive.
fn check_value(value: i64, key: &str) -> Result<(), GuardrailError> {
    check_value_up_to(value, key, THRESHOLD_MAX)
}

/// `check_value` with the largest value allowed: `THRESHOLD_MAX`, or
/// `i64::MAX` for Cassandra's long thresholds (`partition_tombstones`).
fn check_value_up_to(value: i64, key: &str, max: i64) -> Result<(), GuardrailError> {
    let key = key.to_string();
    match value {
        -1 => Ok(()),
        v if v > max => Err(GuardrailError::AboveMaximum { value, key, max }),
        0 => Err(GuardrailError::Zero { key }),
        v if v < 0 => Err(GuardrailError::Negative { value, key }),
        _ => Ok(()),
    }
}

/// A threshold of `name` from its two keys (unset: -1), each value checked.
fn threshold(
    name: &str,
    warn: Option<i64>,
    fail: Option<i64>,
) -> Result<Threshold, GuardrailError> {
    let threshold = Threshold {
        warn: warn.unwrap_or(-1),
        fail: fail.unwrap_or(-1),
    };
    check_value(threshold.warn, &format!("{name}_warn_threshold"))?;
    check_value(threshold.fail, &format!("{name}_fail_threshold"))?;
    Ok(threshold)
}

/// An upper bound: warn must not be above fail.
fn maximum(name: &str, warn: Option<i64>, fail: Option<i64>) -> Result<Threshold, GuardrailError> {
    let t = threshold(name, warn, fail)?;
    warn_below_fail(name, t)
}

/// `maximum` of a Java long (`partition_tombstones`): no int cap.
fn long_maximum(
    name: &str,
    warn: Option<i64>,
    fail: Option<i64>,
) -> Result<Threshold, GuardrailError> {
    let t = Threshold {
        warn: warn.unwrap_or(-1),
        fail: fail.unwrap_or(-1),
    };
    check_value_up_to(t.warn, &format!("{name}_warn_threshold"), i64::MAX)?;
    check_value_up_to(t.fail, &format!("{name}_fail_threshold"), i64::MAX)?;
    warn_below_fail(name, t)
}

fn warn_below_fail(name: &str, t: Threshold) -> Result<Threshold, GuardrailError> {
    if t.warn != -1 && t.fail != -1 && t.fail < t.warn {
        return Err(GuardrailError::WarnAboveFail {
            name: name.to_string(),
            warn: t.warn.to_string(),
            fail: t.fail.to_string(),
        });
    }
    Ok(t)
}

/// A lower bound: warn must not be below fail.
fn minimum(name: &str, warn: Option<i64>, fail: Option<i64>) -> Result<Threshold, GuardrailError> {
    let t = threshold(name, warn, fail)?;
    if t.warn != -1 && t.fail != -1 && t.fail > t.warn {
        return Err(GuardrailError::WarnBelowFail {
            name: name.to_string(),
            warn: t.warn,
            fail: t.fail,
        });
    }
    Ok(t)
}

/// A percentage threshold (`data_disk_usage_percentage`): -1 or 1 to 100,
/// warn not above fail.
fn percentage(
    name: &str,
    warn: Option<i64>,
    fail: Option<i64>,
) -> Result<Threshold, GuardrailError> {
    for (side, value) in [("warn", warn), ("fail", fail)] {
        if let Some(value) = value.filter(|v| *v > 100) {
            return Err(GuardrailError::AboveMaximum {
                value,
                key: format!("{name}_{side}_threshold"),
                max: 100,
            });
        }
    }
    maximum(name, warn, fail)
}

/// `data_disk_usage_max_disk_size` in bytes (unset: the volume's size);
/// 0 is refused. Whether the volume is that large is checked once the
/// data directory exists (`disk_usage::check_max_disk_size`).
fn max_disk_size(text: Option<&str>) -> Result<Option<u64>, GuardrailError> {
    let key = "data_disk_usage_max_disk_size";
    let Some(text) = text else {
        return Ok(None);
    };
    match parse_data_size(text).map_err(unparsable(key))? {
        0 => Err(GuardrailError::ZeroSize { key: key.into() }),
        bytes => Ok(Some(bytes)),
    }
}

/// A data size threshold (`column_value_size`, `collection_size`) in
/// bytes, from its two keys (unset: disabled); 0 is refused and warn must
/// not be above fail, both in Cassandra's words (the sizes as written).
fn size_maximum(
    name: &str,
    warn: Option<&str>,
    fail: Option<&str>,
) -> Result<Threshold, GuardrailError> {
    let bytes = |text: Option<&str>, key: String| -> Result<i64, GuardrailError> {
        let Some(text) = text else {
            return Ok(-1);
        };
        let size = parse_data_size(text).map_err(unparsable(&key))?;
        if size == 0 {
            return Err(GuardrailError::ZeroSize { key });
        }
        i64::try_from(size).map_err(|_| unparsable(&key)(ValueError::TooLarge(text.to_string())))
    };
    let t = Threshold {
        warn: bytes(warn, format!("{name}_warn_threshold"))?,
        fail: bytes(fail, format!("{name}_fail_threshold"))?,
    };
    if let (Some(w), Some(f)) = (warn, fail) {
        if t.fail < t.warn {
            return Err(GuardrailError::WarnAboveFail {
                name: name.to_string(),
                warn: w.to_string(),
                fail: f.to_string(),
            });
        }
    }
    Ok(t)
}

/// A timestamp offset pair (`maximum_timestamp`, `minimum_timestamp`) in
/// microseconds, from durations such as `1d`; 0 is allowed, and warn must
/// not be above fail (the minimum's too, as Cassandra checks them),
/// compared and worded in microseconds.
fn timestamp_offsets(
    name: &str,
    warn: Option<&str>,
    fail: Option<&str>,
) -> Result<TimestampOffsets, GuardrailError> {
    let micros = |text: Option<&str>, key: String| -> Result<Option<i64>, GuardrailError> {
        let Some(text) = text else {
            return Ok(None);
        };
        let duration = parse_duration(text).map_err(unparsable(&key))?;
        i64::try_from(duration.as_micros())
            .map(Some)
            .map_err(|_| unparsable(&key)(ValueError::TooLong(text.to_string())))
    };
    let offsets = TimestampOffsets {
        warn_micros: micros(warn, format!("{name}_warn_threshold"))?,
        fail_micros: micros(fail, format!("{name}_fail_threshold"))?,
    };
    if let (Some(w), Some(f)) = (offsets.warn_micros, offsets.fail_micros) {
        if f < w {
            return Err(GuardrailError::WarnAboveFail {
                name: name.to_string(),
                warn: w.to_string(),
                fail: f.to_string(),
            });
        }
    }
    Ok(offsets)
}

/// A list of table options (any case; unset: empty), refused with
/// Cassandra's message when one is not a table option.
fn table_properties(
    key: &str,
    names: Option<&[String]>,
) -> Result<TableProperties, GuardrailError> {
    let mut set = TableProperties::EMPTY;
    let mut unknown: Vec<String> = Vec::new();
    for name in names.unwrap_or_default() {
        match set.with(name) {
            Some(next) => set = next,
            None => {
                let lower = name.to_ascii_lowercase();
                if !unknown.contains(&lower) {
                    unknown.push(lower);
                }
            }
        }
    }
    if !unknown.is_empty() {
        let unknown: Vec<&str> = unknown.iter().map(String::as_str).collect();
        return Err(GuardrailError::TableProperties {
            key: key.to_string(),
            names: java_hash_set_text(&unknown),
        });
    }
    Ok(set)
}

/// A list of consistency levels by Cassandra's names (unset: empty).
fn consistency_levels(
    key: &str,
    names: Option<&[String]>,
) -> Result<ConsistencyLevels, GuardrailError> {
    let mut levels = ConsistencyLevels::EMPTY;
    for name in names.unwrap_or_default() {
        let level = Consistency::ALL
            .into_iter()
            .find(|c| c.name() == name.as_str())
            .ok_or_else(|| GuardrailError::ConsistencyLevel {
                key: key.to_string(),
                name: name.clone(),
            })?;
        levels = levels.with(level);
    }
    Ok(levels)
}

/// The replication factor thresholds (a keyspace of `default_keyspace_rf`
/// can always be created: a maximum's fail threshold is at least 1).
fn replication_factors(file: &FileConfig) -> Result<(Threshold, Threshold), GuardrailError> {
    let min = minimum(
        "minimum_replication_factor",
        file.minimum_replication_factor_warn_threshold,
        file.minimum_replication_factor_fail_threshold,
    )?;
    let max = maximum(
        "maximum_replication_factor",
        file.maximum_replication_factor_warn_threshold,
        file.maximum_replication_factor_fail_threshold,
    )?;
    Ok((min, max))
}

impl FileConfig {
    /// The guardrails the file sets, Cassandra's defaults for the others.
    pub(super) fn guardrails(&self) -> Result<Guardrails, ConfigError> {
        // Cassandra compares the minimum with `default_keyspace_rf` before
        // it checks the guardrails.
        if let Some(fail) = self
            .minimum_replication_factor_fail_threshold
            .filter(|fail| *fail > DEFAULT_KEYSPACE_RF)
        {
            return Err(ConfigError::Conflict(format!(
                "default_keyspace_rf ({DEFAULT_KEYSPACE_RF}) cannot be less than minimum_replication_factor_fail_threshold ({fail})"
            )));
        }
        Ok(self.read_guardrails()?)
    }

    /// The guardrails the file sets, read and checked in Cassandra's order:
    /// the replication factors, the other thresholds, the lists, the data
    /// disk usage, then the flags.
    fn read_guardrails(&self) -> Result<Guardrails, GuardrailError> {
        let (minimum_replication_factor, maximum_replication_factor) = replication_factors(self)?;
        let g = Guardrails {
            minimum_replication_factor,
            maximum_replication_factor,
            ..Guardrails::DEFAULT
        };
        let g = self.thresholds(g)?;
        let g = self.lists(g)?;
        let g = self.data_disk_usage(g)?;
        Ok(self.flags(g))
    }

    /// The count and size thresholds.
    fn thresholds(&self, g: Guardrails) -> Result<Guardrails, GuardrailError> {
        Ok(Guardrails {
            keyspaces: maximum(
                "keyspaces",
                self.keyspaces_warn_threshold,
                self.keyspaces_fail_threshold,
            )?,
            tables: maximum(
                "tables",
                self.tables_warn_threshold,
                self.tables_fail_threshold,
            )?,
            columns_per_table: maximum(
                "columns_per_table",
                self.columns_per_table_warn_threshold,
                self.columns_per_table_fail_threshold,
            )?,
            secondary_indexes_per_table: maximum(
                "secondary_indexes_per_table",
                self.secondary_indexes_per_table_warn_threshold,
                self.secondary_indexes_per_table_fail_threshold,
            )?,
            materialized_views_per_table: maximum(
                "materialized_views_per_table",
                self.materialized_views_per_table_warn_threshold,
                self.materialized_views_per_table_fail_threshold,
            )?,
            fields_per_udt: maximum(
                "fields_per_udt",
                self.fields_per_udt_warn_threshold,
                self.fields_per_udt_fail_threshold,
            )?,
            page_size: maximum(
                "page_size",
                self.page_size_warn_threshold,
                self.page_size_fail_threshold,
            )?,
            partition_keys_in_select: maximum(
                "partition_keys_in_select",
                self.partition_keys_in_select_warn_threshold,
                self.partition_keys_in_select_fail_threshold,
            )?,
            in_select_cartesian_product: maximum(
                "in_select_cartesian_product",
                self.in_select_cartesian_product_warn_threshold,
                self.in_select_cartesian_product_fail_threshold,
            )?,
            partition_size: size_maximum(
                "partition_size",
                self.partition_size_warn_threshold.as_deref(),
                self.partition_size_fail_threshold.as_deref(),
            )?,
            partition_tombstones: long_maximum(
                "partition_tombstones",
                self.partition_tombstones_warn_threshold,
                self.partition_tombstones_fail_threshold,
            )?,
            column_value_size: size_maximum(
                "column_value_size",
                self.column_value_size_warn_threshold.as_deref(),
                self.column_value_size_fail_threshold.as_deref(),
            )?,
            collection_size: size_maximum(
                "collection_size",
                self.collection_size_warn_threshold.as_deref(),
                self.collection_size_fail_threshold.as_deref(),
            )?,
            items_per_collection: maximum(
                "items_per_collection",
                self.items_per_collection_warn_threshold,
                self.items_per_collection_fail_threshold,
            )?,
            vector_dimensions: maximum(
                "vector_dimensions",
                self.vector_dimensions_warn_threshold,
                self.vector_dimensions_fail_threshold,
            )?,
            ..g
        })
    }

    /// Table properties, timestamp offsets and consistency levels.
    fn lists(&self, g: Guardrails) -> Result<Guardrails, GuardrailError> {
        Ok(Guardrails {
            table_properties_warned: table_properties(
                "table_properties_warned",
                self.table_properties_warned.as_deref(),
            )?,
            table_properties_ignored: table_properties(
                "table_properties_ignored",
                self.table_properties_ignored.as_deref(),
            )?,
            table_properties_disallowed: table_properties(
                "table_properties_disallowed",
                self.table_properties_disallowed.as_deref(),
            )?,
            maximum_timestamp: timestamp_offsets(
                "maximum_timestamp",
                self.maximum_timestamp_warn_threshold.as_deref(),
                self.maximum_timestamp_fail_threshold.as_deref(),
            )?,
            minimum_timestamp: timestamp_offsets(
                "minimum_timestamp",
                self.minimum_timestamp_warn_threshold.as_deref(),
                self.minimum_timestamp_fail_threshold.as_deref(),
            )?,
            read_consistency_levels_warned: consistency_levels(
                "read_consistency_levels_warned",
                self.read_consistency_levels_warned.as_deref(),
            )?,
            read_consistency_levels_disallowed: consistency_levels(
                "read_consistency_levels_disallowed",
                self.read_consistency_levels_disallowed.as_deref(),
            )?,
            write_consistency_levels_warned: consistency_levels(
                "write_consistency_levels_warned",
                self.write_consistency_levels_warned.as_deref(),
            )?,
            write_consistency_levels_disallowed: consistency_levels(
                "write_consistency_levels_disallowed",
                self.write_consistency_levels_disallowed.as_deref(),
            )?,
            ..g
        })
    }

    fn data_disk_usage(&self, g: Guardrails) -> Result<Guardrails, GuardrailError> {
        Ok(Guardrails {
            data_disk_usage_percentage: percentage(
                "data_disk_usage_percentage",
                self.data_disk_usage_percentage_warn_threshold,
                self.data_disk_usage_percentage_fail_threshold,
            )?,
            data_disk_usage_max_disk_size: max_disk_size(
                self.data_disk_usage_max_disk_size.as_deref(),
            )?,
            ..g
        })
    }

    /// The `*_enabled` flags (and `zero_ttl_on_twcs_warned`), Cassandra's
    /// defaults where unset.
    fn flags(&self, g: Guardrails) -> Guardrails {
        let d = Guardrails::DEFAULT;
        Guardrails {
            user_timestamps_enabled: self
                .user_timestamps_enabled
                .unwrap_or(d.user_timestamps_enabled),
            group_by_enabled: self.group_by_enabled.unwrap_or(d.group_by_enabled),
            drop_truncate_table_enabled: self
                .drop_truncate_table_enabled
                .unwrap_or(d.drop_truncate_table_enabled),
            drop_keyspace_enabled: self
                .drop_keyspace_enabled
                .unwrap_or(d.drop_keyspace_enabled),
            secondary_indexes_enabled: self
                .secondary_indexes_enabled
                .unwrap_or(d.secondary_indexes_enabled),
            compact_tables_enabled: self
                .compact_tables_enabled
                .unwrap_or(d.compact_tables_enabled),
            alter_table_enabled: self.alter_table_enabled.unwrap_or(d.alter_table_enabled),
            allow_filtering_enabled: self
                .allow_filtering_enabled
                .unwrap_or(d.allow_filtering_enabled),
            simplestrategy_enabled: self
                .simplestrategy_enabled
                .unwrap_or(d.simplestrategy_enabled),
            read_before_write_list_operations_enabled: self
                .read_before_write_list_operations_enabled
                .unwrap_or(d.read_before_write_list_operations_enabled),
            uncompressed_tables_enabled: self
                .uncompressed_tables_enabled
                .unwrap_or(d.uncompressed_tables_enabled),
            zero_ttl_on_twcs_warned: self
                .zero_ttl_on_twcs_warned
                .unwrap_or(d.zero_ttl_on_twcs_warned),
            zero_ttl_on_twcs_enabled: self
                .zero_ttl_on_twcs_enabled
                .unwrap_or(d.zero_ttl_on_twcs_enabled),
            vector_type_enabled: self.vector_type_enabled.unwrap_or(d.vector_type_enabled),
            ..g
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use super::*;

    fn parse(yaml: &str) -> Result<Config, ConfigError> {
        Config::from_yaml(yaml, "test.yaml")
    }

    fn error(yaml: &str) -> String {
        parse(yaml).expect_err("refused").to_string()
    }

    #[test]
    fn defaults_are_cassandras() {
        let config = parse("cluster_name: c\n").expect("valid");
        assert_eq!(config.guardrails, Guardrails::DEFAULT);
        assert!(config.unused_keys.is_empty());
    }

    #[test]
    fn thresholds_and_flags_are_read() {
        let config = parse(
            "tables_warn_threshold: 2\ntables_fail_threshold: 3\npage_size_warn_threshold: 100\n\
             allow_filtering_enabled: false\nsimplestrategy_enabled: false\n",
        )
        .expect("valid");
        let g = config.guardrails;
        assert_eq!(g.tables, Threshold { warn: 2, fail: 3 });
        assert_eq!(
            g.page_size,
            Threshold {
                warn: 100,
                fail: -1
            }
        );
        assert!(!g.allow_filtering_enabled && !g.simplestrategy_enabled);
        assert!(g.user_timestamps_enabled);
        assert!(config.unused_keys.is_empty(), "{:?}", config.unused_keys);
    }

    #[test]
    fn partition_guardrails_are_read_and_checked() {
        let config = parse(
            "partition_size_warn_threshold: 2KiB\npartition_size_fail_threshold: 8KiB\n\
             partition_tombstones_warn_threshold: 5\n\
             partition_tombstones_fail_threshold: 3000000000\n",
        )
        .expect("valid");
        let g = config.guardrails;
        assert_eq!(
            g.partition_size,
            Threshold {
                warn: 2048,
                fail: 8192
            }
        );
        // A Java long in Cassandra: past an int is allowed.
        assert_eq!(
            g.partition_tombstones,
            Threshold {
                warn: 5,
                fail: 3_000_000_000
            }
        );
        assert!(config.unused_keys.is_empty(), "{:?}", config.unused_keys);
        let refused = [
            ("partition_tombstones_warn_threshold: 6\npartition_tombstones_fail_threshold: 5\n",
             "The warn threshold 6 for partition_tombstones_warn_threshold should be lower than the fail threshold 5"),
            ("partition_tombstones_fail_threshold: 0\n",
             "Invalid value for partition_tombstones_fail_threshold: 0 is not allowed; if attempting to disable use -1"),
            ("partition_size_warn_threshold: 9KiB\npartition_size_fail_threshold: 8KiB\n",
             "The warn threshold 9KiB for partition_size_warn_threshold should be lower than the fail threshold 8KiB"),
        ];
        for (yaml, message) in refused {
            let error = parse(yaml).map(|_| ()).unwrap_err().to_string();
            assert!(error.ends_with(message), "{yaml}: {error}");
        }
    }

    #[test]
    fn sizes_and_consistency_levels_are_read() {
        let config = parse(
            "column_value_size_warn_threshold: 1KiB\ncollection_size_fail_threshold: 2MiB\n\
             read_consistency_levels_disallowed: [ALL, TWO]\nwrite_consistency_levels_warned: []\n",
        )
        .expect("valid");
        let g = config.guardrails;
        assert_eq!(
            g.column_value_size,
            Threshold {
                warn: 1024,
                fail: -1
            }
        );
        assert_eq!(
            g.collection_size,
            Threshold {
                warn: -1,
                fail: 2 << 20
            }
        );
        let disallowed = ConsistencyLevels::EMPTY
            .with(Consistency::Two)
            .with(Consistency::All);
        assert_eq!(g.read_consistency_levels_disallowed, disallowed);
        assert!(g.write_consistency_levels_warned.is_empty());
        assert!(config.unused_keys.is_empty(), "{:?}", config.unused_keys);
        assert!(error("read_consistency_levels_warned: [FOO]\n")
            .contains("'FOO' is not a consistency level"));
        assert_eq!(
            error("table_properties_warned: [comment, foo]\n"),
            "Invalid guardrails configuration: Invalid value for table_properties_warned: '[foo]' do not parse as valid table properties"
        );
        let config =
            parse("maximum_timestamp_warn_threshold: 1h\nminimum_timestamp_fail_threshold: 0s\n")
                .expect("valid");
        assert_eq!(
            config.guardrails.maximum_timestamp.warn_micros,
            Some(3_600_000_000)
        );
        assert_eq!(config.guardrails.minimum_timestamp.fail_micros, Some(0));
        assert_eq!(
            error("minimum_timestamp_warn_threshold: 2h\nminimum_timestamp_fail_threshold: 1h\n"),
            "Invalid guardrails configuration: The warn threshold 7200000000 for minimum_timestamp_warn_threshold should be lower than the fail threshold 3600000000"
        );
    }

    #[test]
    fn values_are_checked_with_cassandras_messages() {
        let prefix = "Invalid guardrails configuration: ";
        let cases = [
            ("tables_warn_threshold: 5\ntables_fail_threshold: 3\n",
             "The warn threshold 5 for tables_warn_threshold should be lower than the fail threshold 3"),
            ("keyspaces_fail_threshold: 0\n",
             "Invalid value for keyspaces_fail_threshold: 0 is not allowed; if attempting to disable use -1"),
            ("page_size_warn_threshold: -2\n",
             "Invalid value -2 for page_size_warn_threshold: negative values are not allowed, outside of -1 which disables the guardrail"),
            ("fields_per_udt_warn_threshold: 2147483648\n",
             "Invalid value 2147483648 for fields_per_udt_warn_threshold: maximum allowed value is 2147483647"),
            // Recorded against Cassandra 5.0.6's startup.
            ("data_disk_usage_percentage_warn_threshold: 0\n",
             "Invalid value for data_disk_usage_percentage_warn_threshold: 0 is not allowed; if attempting to disable use -1"),
            ("data_disk_usage_percentage_fail_threshold: 101\n",
             "Invalid value 101 for data_disk_usage_percentage_fail_threshold: maximum allowed value is 100"),
            ("data_disk_usage_percentage_warn_threshold: -2\n",
             "Invalid value -2 for data_disk_usage_percentage_warn_threshold: negative values are not allowed, outside of -1 which disables the guardrail"),
            ("data_disk_usage_percentage_warn_threshold: 90\ndata_disk_usage_percentage_fail_threshold: 80\n",
             "The warn threshold 90 for data_disk_usage_percentage_warn_threshold should be lower than the fail threshold 80"),
            ("data_disk_usage_max_disk_size: 0B\n",
             "Invalid value for data_disk_usage_max_disk_size: 0 is not allowed; if attempting to disable use an empty value"),
        ];
        for (yaml, message) in cases {
            assert_eq!(error(yaml), format!("{prefix}{message}"), "{yaml}");
        }
        let sizes = [
            ("column_value_size_warn_threshold: 20B\ncolumn_value_size_fail_threshold: 10B\n",
             "The warn threshold 20B for column_value_size_warn_threshold should be lower than the fail threshold 10B"),
            ("collection_size_warn_threshold: 0B\n",
             "Invalid value for collection_size_warn_threshold: 0 is not allowed; if attempting to disable use an empty value"),
        ];
        for (yaml, message) in sizes {
            assert_eq!(error(yaml), format!("{prefix}{message}"), "{yaml}");
        }
        assert_eq!(
            error("minimum_replication_factor_fail_threshold: 2\n"),
            "default_keyspace_rf (1) cannot be less than minimum_replication_factor_fail_threshold (2)"
        );
    }
}
