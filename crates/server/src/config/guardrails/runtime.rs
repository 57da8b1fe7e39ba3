//! `nodetool getguardrailsconfig` and `setguardrailsconfig`, as Cassandra
//! 5.0.6 has them: the guardrails in force under the snake-case names of
//! Cassandra's `GuardrailsMBean` getters and setters, in its layout, and
//! changed with the checks and messages of the startup keys (`super`).
//!
//! Not listed: Cassandra's guardrails Rocksandra does not have (the SAI
//! term sizes and sstable indexes per query,
//! `non_partition_restricted_index_query_enabled`,
//! `intersect_filtering_query_*`). Shown but set at start only: the data
//! disk usage guardrails, whose monitor is started from the configuration.

use rocksandra_query::guardrails::{
    java_hash_set_text, ConsistencyLevels, Guardrails, TableProperties, Threshold, TimestampOffsets,
};

use super::{
    consistency_levels, long_maximum, maximum, minimum, size_maximum, table_properties,
    timestamp_offsets, GuardrailError,
};

/// Why `getguardrailsconfig` or `setguardrailsconfig` answered no, in
/// Cassandra's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuardrailsCommandError {
    #[error(
        "Illegal value for -c/--category used: '{0}'. \
         Supported values are values,thresholds,flags,others."
    )]
    IllegalCategory(String),
    #[error("Do not specify additional arguments when --category/-c is set.")]
    NameWithCategory,
    #[error("Guardrail {0} not found.")]
    NotFound(String),
    #[error("No arguments.")]
    NoArguments,
    #[error("{setter} is expecting {expected} argument values. Getting {got} instead.")]
    ArgumentCount {
        setter: String,
        expected: usize,
        got: usize,
    },
    /// A value that does not parse (Cassandra's client refuses it).
    #[error("Unable to parse value {0}")]
    NotAnInteger(String),
    #[error("Use 'true' or 'false' values for booleans")]
    NotABoolean,
    /// A value the guardrail refuses (Cassandra's node does).
    #[error(
        "Error occured when setting the config for setter {setter} with arguments [{arguments}]: {reason}"
    )]
    Refused {
        setter: String,
        arguments: String,
        reason: GuardrailError,
    },
}

/// getguardrailsconfig's `-c/--category`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Category {
    Flags,
    Thresholds,
    Values,
    Others,
}

impl Category {
    /// Cassandra's category names, any case.
    pub fn parse(text: &str) -> Result<Category, GuardrailsCommandError> {
        match text.to_ascii_lowercase().as_str() {
            "values" => Ok(Category::Values),
            "thresholds" => Ok(Category::Thresholds),
            "flags" => Ok(Category::Flags),
            "others" => Ok(Category::Others),
            _ => Err(GuardrailsCommandError::IllegalCategory(text.to_string())),
        }
    }
}

/// How a guardrail's value is kept, shown and set: its field, read and
/// written through the one accessor.
#[derive(Clone, Copy)]
enum Kind {
    /// A count (Java int or long): warn and fail, -1 disabled.
    Count(fn(&mut Guardrails) -> &mut Threshold),
    /// A data size in bytes, shown as Cassandra's strings (`8KiB`, null).
    Size(fn(&mut Guardrails) -> &mut Threshold),
    /// A timestamp offset, shown as Cassandra's durations (`1d`, null).
    Offsets(fn(&mut Guardrails) -> &mut TimestampOffsets),
    Flag(fn(&mut Guardrails) -> &mut bool),
    Properties(fn(&mut Guardrails) -> &mut TableProperties),
    Levels(fn(&mut Guardrails) -> &mut ConsistencyLevels),
    MaxDiskSize,
}

/// A guardrail: its key (a threshold's without `_warn`/`_fail`) and kind.
struct Entry {
    key: &'static str,
    kind: Kind,
}

const fn count(key: &'static str, get: fn(&mut Guardrails) -> &mut Threshold) -> Entry {
    Entry {
        key,
        kind: Kind::Count(get),
    }
}

const fn flag(key: &'static str, get: fn(&mut Guardrails) -> &mut bool) -> Entry {
    Entry {
        key,
        kind: Kind::Flag(get),
    }
}

/// Every guardrail Rocksandra has, sorted by key as Cassandra lists them.
const ENTRIES: &[Entry] = &[
    flag("allow_filtering_enabled", |g| {
        &mut g.allow_filtering_enabled
    }),
    flag("alter_table_enabled", |g| &mut g.alter_table_enabled),
    Entry {
        key: "collection_size_threshold",
        kind: Kind::Size(|g| &mut g.collection_size),
    },
    Entry {
        key: "column_value_size_threshold",
        kind: Kind::Size(|g| &mut g.column_value_size),
    },
    count("columns_per_table_threshold", |g| &mut g.columns_per_table),
    flag("compact_tables_enabled", |g| &mut g.compact_tables_enabled),
    Entry {
        key: "data_disk_usage_max_disk_size",
        kind: Kind::MaxDiskSize,
    },
    count("data_disk_usage_percentage_threshold", |g| {
        &mut g.data_disk_usage_percentage
    }),
    flag("drop_keyspace_enabled", |g| &mut g.drop_keyspace_enabled),
    flag("drop_truncate_table_enabled", |g| {
        &mut g.drop_truncate_table_enabled
    }),
    count("fields_per_udt_threshold", |g| &mut g.fields_per_udt),
    flag("group_by_enabled", |g| &mut g.group_by_enabled),
    count("in_select_cartesian_product_threshold", |g| {
        &mut g.in_select_cartesian_product
    }),
    count("items_per_collection_threshold", |g| {
        &mut g.items_per_collection
    }),
    count("keyspaces_threshold", |g| &mut g.keyspaces),
    count("materialized_views_per_table_threshold", |g| {
        &mut g.materialized_views_per_table
    }),
    count("maximum_replication_factor_threshold", |g| {
        &mut g.maximum_replication_factor
    }),
    Entry {
        key: "maximum_timestamp_threshold",
        kind: Kind::Offsets(|g| &mut g.maximum_timestamp),
    },
    count("minimum_replication_factor_threshold", |g| {
        &mut g.minimum_replication_factor
    }),
    Entry {
        key: "minimum_timestamp_threshold",
        kind: Kind::Offsets(|g| &mut g.minimum_timestamp),
    },
    count("page_size_threshold", |g| &mut g.page_size),
    count("partition_keys_in_select_threshold", |g| {
        &mut g.partition_keys_in_select
    }),
    Entry {
        key: "partition_size_threshold",
        kind: Kind::Size(|g| &mut g.partition_size),
    },
    count("partition_tombstones_threshold", |g| {
        &mut g.partition_tombstones
    }),
    flag("read_before_write_list_operations_enabled", |g| {
        &mut g.read_before_write_list_operations_enabled
    }),
    Entry {
        key: "read_consistency_levels_disallowed",
        kind: Kind::Levels(|g| &mut g.read_consistency_levels_disallowed),
    },
    Entry {
        key: "read_consistency_levels_warned",
        kind: Kind::Levels(|g| &mut g.read_consistency_levels_warned),
    },
    count("secondary_indexes_per_table_threshold", |g| {
        &mut g.secondary_indexes_per_table
    }),
    flag("secondary_indexes_enabled", |g| {
        &mut g.secondary_indexes_enabled
    }),
    flag("simplestrategy_enabled", |g| &mut g.simplestrategy_enabled),
    Entry {
        key: "table_properties_disallowed",
        kind: Kind::Properties(|g| &mut g.table_properties_disallowed),
    },
    Entry {
        key: "table_properties_ignored",
        kind: Kind::Properties(|g| &mut g.table_properties_ignored),
    },
    Entry {
        key: "table_properties_warned",
        kind: Kind::Properties(|g| &mut g.table_properties_warned),
    },
    count("tables_threshold", |g| &mut g.tables),
    flag("uncompressed_tables_enabled", |g| {
        &mut g.uncompressed_tables_enabled
    }),
    flag("user_timestamps_enabled", |g| {
        &mut g.user_timestamps_enabled
    }),
    count("vector_dimensions_threshold", |g| &mut g.vector_dimensions),
    flag("vector_type_enabled", |g| &mut g.vector_type_enabled),
    Entry {
        key: "write_consistency_levels_disallowed",
        kind: Kind::Levels(|g| &mut g.write_consistency_levels_disallowed),
    },
    Entry {
        key: "write_consistency_levels_warned",
        kind: Kind::Levels(|g| &mut g.write_consistency_levels_warned),
    },
    flag("zero_ttl_on_twcs_enabled", |g| {
        &mut g.zero_ttl_on_twcs_enabled
    }),
    flag("zero_ttl_on_twcs_warned", |g| {
        &mut g.zero_ttl_on_twcs_warned
    }),
];

impl Entry {
    fn category(&self) -> Category {
        match self.kind {
            Kind::Count(_) | Kind::Size(_) | Kind::Offsets(_) => Category::Thresholds,
            Kind::Flag(_) => Category::Flags,
            Kind::Properties(_) | Kind::Levels(_) => Category::Values,
            Kind::MaxDiskSize => Category::Others,
        }
    }

    /// A threshold's key without `_threshold`.
    fn base(&self) -> &'static str {
        self.key.strip_suffix("_threshold").unwrap_or(self.key)
    }

    /// The values its getters give, in getter-name order (a threshold's
    /// fail, then warn).
    fn values(&self, g: &Guardrails) -> Vec<String> {
        let mut g = *g;
        match self.kind {
            Kind::Count(field) => {
                let t = *field(&mut g);
                vec![t.fail.to_string(), t.warn.to_string()]
            }
            Kind::Size(field) => {
                let t = *field(&mut g);
                vec![size_text(t.fail), size_text(t.warn)]
            }
            Kind::Offsets(field) => {
                let t = *field(&mut g);
                vec![duration_text(t.fail_micros), duration_text(t.warn_micros)]
            }
            Kind::Flag(field) => vec![field(&mut g).to_string()],
            Kind::Properties(field) => vec![field(&mut g).java_text()],
            Kind::Levels(field) => vec![java_hash_set_text(&field(&mut g).level_names())],
            Kind::MaxDiskSize => vec![g
                .data_disk_usage_max_disk_size
                .and_then(|b| i64::try_from(b).ok())
                .map_or_else(|| "null".to_string(), size_text)],
        }
    }
}

/// A data size as Cassandra prints its `DataStorageSpec`: in the largest
/// unit that divides it; null when disabled.
fn size_text(bytes: i64) -> String {
    if bytes < 0 {
        return "null".into();
    }
    let unit = [("GiB", 1i64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)]
        .into_iter()
        .find(|(_, size)| bytes != 0 && bytes % size == 0);
    match unit {
        Some((symbol, size)) => format!("{}{symbol}", bytes / size),
        None => format!("{bytes}B"),
    }
}

/// A duration as Cassandra prints its `DurationSpec`: in the largest unit
/// that divides it; null when disabled.
fn duration_text(micros: Option<i64>) -> String {
    let Some(micros) = micros else {
        return "null".into();
    };
    let units = [
        ("d", 86_400_000_000i64),
        ("h", 3_600_000_000),
        ("m", 60_000_000),
        ("s", 1_000_000),
        ("ms", 1_000),
    ];
    match units
        .into_iter()
        .find(|(_, size)| micros != 0 && micros % size == 0)
    {
        Some((symbol, size)) => format!("{}{symbol}", micros / size),
        None => format!("{micros}us"),
    }
}

/// One row: a name and its value.
type Row = (String, String);

/// `nodetool getguardrailsconfig [-c CATEGORY] [--expand] [NAME]`, printed
/// as Cassandra's: flags, thresholds, values, then others, each sorted by
/// name, in two padded columns; a single guardrail asked for by name
/// prints its value alone.
pub fn get_config(
    g: &Guardrails,
    category: Option<Category>,
    expand: bool,
    name: Option<&str>,
) -> Result<String, GuardrailsCommandError> {
    if name.is_some() && category.is_some() {
        return Err(GuardrailsCommandError::NameWithCategory);
    }
    let mut buckets: [(Category, Vec<Row>); 4] = [
        (Category::Flags, Vec::new()),
        (Category::Thresholds, Vec::new()),
        (Category::Values, Vec::new()),
        (Category::Others, Vec::new()),
    ];
    for entry in ENTRIES {
        let rows = rows_of(entry, g, expand, name);
        if let Some((_, bucket)) = buckets.iter_mut().find(|(c, _)| *c == entry.category()) {
            bucket.extend(rows);
        }
    }
    let total: usize = buckets.iter().map(|(_, rows)| rows.len()).sum();
    if let Some(name) = name.filter(|_| total == 0) {
        return Err(GuardrailsCommandError::NotFound(name.to_string()));
    }
    let rows: Vec<Row> = match category {
        Some(wanted) => buckets
            .into_iter()
            .filter(|(c, _)| *c == wanted)
            .flat_map(|(_, rows)| rows)
            .collect(),
        None if total == 1 => {
            let value = buckets
                .into_iter()
                .flat_map(|(_, rows)| rows)
                .map(|(_, v)| v);
            return Ok(value.map(|v| format!("{v}\n")).collect());
        }
        None => buckets.into_iter().flat_map(|(_, rows)| rows).collect(),
    };
    Ok(table(&rows))
}

/// An entry's rows for `getguardrailsconfig`, those `name` asks for.
fn rows_of(entry: &Entry, g: &Guardrails, expand: bool, name: Option<&str>) -> Vec<Row> {
    let values = entry.values(g);
    if values.len() == 1 {
        return match name {
            Some(n) if n != entry.key => Vec::new(),
            _ => vec![(entry.key.to_string(), values[0].clone())],
        };
    }
    let base = entry.base();
    let halves = [
        format!("{base}_fail_threshold"),
        format!("{base}_warn_threshold"),
    ];
    // By name, a threshold's key gives both halves; a half's name, that one.
    let picked: Vec<usize> = match name {
        None => vec![0, 1],
        Some(n) if n == entry.key => vec![0, 1],
        Some(n) => (0..2).filter(|i| halves[*i] == n).collect(),
    };
    match (expand, picked.as_slice()) {
        (_, []) => Vec::new(),
        (true, _) => picked
            .iter()
            .map(|i| (halves[*i].clone(), values[*i].clone()))
            .collect(),
        (false, [one]) => vec![(entry.key.to_string(), values[*one].clone())],
        (false, _) => vec![(entry.key.to_string(), format!("[{}]", values.join(", ")))],
    }
}

/// Cassandra's `TableBuilder`: every column padded to its widest cell
/// (the last one too), separated by a space.
fn table(rows: &[Row]) -> String {
    let name_width = rows
        .iter()
        .map(|(n, _)| n.chars().count())
        .max()
        .unwrap_or(0);
    let value_width = rows
        .iter()
        .map(|(_, v)| v.chars().count())
        .max()
        .unwrap_or(0);
    rows.iter()
        .map(|(n, v)| format!("{n:<name_width$} {v:<value_width$}\n"))
        .collect()
}

/// `nodetool setguardrailsconfig SETTER VALUES...`: the guardrails with
/// one changed, checked as at start. A threshold takes its fail value,
/// then its warn value (`null` disables either); a flag `true` or
/// `false`; a list its items, comma-separated or as several values
/// (`null` or `[]` empties it).
pub fn set_config(g: &Guardrails, args: &[String]) -> Result<Guardrails, GuardrailsCommandError> {
    let Some((setter, values)) = args.split_first() else {
        return Err(GuardrailsCommandError::NoArguments);
    };
    let entry = ENTRIES
        .iter()
        .find(|e| e.key == setter)
        .ok_or_else(|| GuardrailsCommandError::NotFound(setter.clone()))?;
    let values = match entry.kind {
        Kind::Properties(_) | Kind::Levels(_) if values.len() > 1 => vec![values.join(",")],
        _ => values.to_vec(),
    };
    let expected = entry.values(g).len();
    if values.len() != expected {
        return Err(GuardrailsCommandError::ArgumentCount {
            setter: setter.clone(),
            expected,
            got: values.len(),
        });
    }
    let changed = apply(*g, entry, &values).map_err(|e| match e {
        SetError::Argument(e) => e,
        SetError::Refused(reason) => GuardrailsCommandError::Refused {
            setter: setter.clone(),
            arguments: values.join(", "),
            reason,
        },
    })?;
    Ok(changed)
}

enum SetError {
    /// A value that does not parse (Cassandra's client refuses it).
    Argument(GuardrailsCommandError),
    /// A value the guardrail refuses (Cassandra's node does).
    Refused(GuardrailError),
}

/// `g` with `entry` set from `values` (checked in number and form).
fn apply(mut g: Guardrails, entry: &Entry, values: &[String]) -> Result<Guardrails, SetError> {
    let refused = SetError::Refused;
    let base = entry.base();
    match entry.kind {
        Kind::Count(field) => {
            let (fail, warn) = (int(&values[0])?, int(&values[1])?);
            *field(&mut g) = count_threshold(base, Some(warn), Some(fail)).map_err(refused)?;
        }
        Kind::Size(field) => {
            let (fail, warn) = (text(&values[0]), text(&values[1]));
            *field(&mut g) = size_maximum(base, warn, fail).map_err(refused)?;
        }
        Kind::Offsets(field) => {
            let (fail, warn) = (text(&values[0]), text(&values[1]));
            *field(&mut g) = timestamp_offsets(base, warn, fail).map_err(refused)?;
        }
        Kind::Flag(field) => *field(&mut g) = boolean(&values[0])?,
        Kind::Properties(field) => {
            let items = list(&values[0]);
            *field(&mut g) = table_properties(entry.key, Some(&items)).map_err(refused)?;
        }
        Kind::Levels(field) => {
            let items = list(&values[0]);
            *field(&mut g) = consistency_levels(entry.key, Some(&items)).map_err(refused)?;
        }
        Kind::MaxDiskSize => return Err(refused(GuardrailError::StartOnly)),
    }
    Ok(g)
}

/// A count threshold checked as its startup keys are.
fn count_threshold(
    base: &str,
    warn: Option<i64>,
    fail: Option<i64>,
) -> Result<Threshold, GuardrailError> {
    match base {
        "minimum_replication_factor" => minimum(base, warn, fail),
        "partition_tombstones" => long_maximum(base, warn, fail),
        "data_disk_usage_percentage" => Err(GuardrailError::StartOnly),
        _ => maximum(base, warn, fail),
    }
}

/// An int argument (`null`: -1, disabled).
fn int(value: &str) -> Result<i64, SetError> {
    if value == "null" {
        return Ok(-1);
    }
    value
        .parse()
        .map_err(|_| SetError::Argument(GuardrailsCommandError::NotAnInteger(value.to_string())))
}

fn boolean(value: &str) -> Result<bool, SetError> {
    match value {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(SetError::Argument(GuardrailsCommandError::NotABoolean)),
    }
}

/// A string argument: `null` (or nothing) disables.
fn text(value: &str) -> Option<&str> {
    (value != "null" && !value.is_empty()).then_some(value)
}

/// A list argument: comma-separated items; `null` or `[]` is empty.
fn list(value: &str) -> Vec<String> {
    match value {
        "null" | "[]" | "" => Vec::new(),
        _ => value.split(',').map(str::to_string).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn the_defaults_are_listed_by_category_in_cassandras_layout() {
        let text = get_config(&Guardrails::DEFAULT, None, false, None).expect("get");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), ENTRIES.len());
        // Flags first, then thresholds, values and others, each sorted.
        assert!(lines[0].starts_with("allow_filtering_enabled "), "{text}");
        let first_threshold = lines
            .iter()
            .position(|l| l.contains("_threshold"))
            .expect("thresholds");
        assert!(
            lines[first_threshold].starts_with("collection_size_threshold "),
            "{text}"
        );
        assert_eq!(
            lines.last().map(|l| l.split_whitespace().next()),
            Some(Some("data_disk_usage_max_disk_size"))
        );
        // Padded columns: every value starts at the same place, and every
        // line is as long as the widest (Java pads the last column too).
        let widths: Vec<usize> = lines.iter().map(|l| l.len()).collect();
        assert!(widths.iter().all(|w| *w == widths[0]), "{text}");
        assert!(text.contains("keyspaces_threshold"), "{text}");
        let keyspaces = lines
            .iter()
            .find(|l| l.starts_with("keyspaces_threshold "))
            .expect("row");
        assert_eq!(
            keyspaces.split_whitespace().collect::<Vec<_>>(),
            ["keyspaces_threshold", "[-1,", "-1]"]
        );
        let sizes = lines
            .iter()
            .find(|l| l.starts_with("partition_size_threshold "))
            .expect("row");
        assert!(sizes.contains("[null, null]"), "{sizes}");
    }

    #[test]
    fn one_guardrail_by_name_prints_its_value_alone() {
        let g = Guardrails {
            keyspaces: Threshold { warn: 5, fail: 10 },
            ..Guardrails::DEFAULT
        };
        let get = |name: &str, expand| get_config(&g, None, expand, Some(name));
        assert_eq!(get("keyspaces_threshold", false), Ok("[10, 5]\n".into()));
        assert_eq!(get("keyspaces_warn_threshold", false), Ok("5\n".into()));
        assert_eq!(get("allow_filtering_enabled", false), Ok("true\n".into()));
        assert_eq!(
            get("keyspaces_threshold", true),
            Ok("keyspaces_fail_threshold 10\nkeyspaces_warn_threshold 5 \n".into())
        );
        assert_eq!(
            get("no_such", false),
            Err(GuardrailsCommandError::NotFound("no_such".into()))
        );
        assert!(get_config(&g, Some(Category::Flags), false, Some("x")).is_err());
        let flags = get_config(&g, Some(Category::Flags), false, None).expect("flags");
        assert!(
            flags
                .lines()
                .all(|l| l.contains("_enabled") || l.contains("_warned")),
            "{flags}"
        );
        assert_eq!(
            Category::parse("nope").map_err(|e| e.to_string()),
            Err("Illegal value for -c/--category used: 'nope'. Supported values are values,thresholds,flags,others.".into())
        );
    }

    #[test]
    fn setters_take_fail_then_warn_and_check_as_at_start() {
        let g = Guardrails::DEFAULT;
        let set = |line: &str| set_config(&g, &words(line));
        let changed = set("keyspaces_threshold 10 5").expect("set");
        assert_eq!(changed.keyspaces, Threshold { warn: 5, fail: 10 });
        assert_eq!(
            set("keyspaces_threshold null null").expect("off").keyspaces,
            Threshold::DISABLED
        );
        assert_eq!(
            set("keyspaces_threshold 5 10").err().map(|e| e.to_string()),
            Some("Error occured when setting the config for setter keyspaces_threshold with arguments [5, 10]: \
                  The warn threshold 10 for keyspaces_warn_threshold should be lower than the fail threshold 5"
                .into())
        );
        assert_eq!(
            set("keyspaces_threshold 5").err().map(|e| e.to_string()),
            Some("keyspaces_threshold is expecting 2 argument values. Getting 1 instead.".into())
        );
        assert_eq!(
            set("keyspaces_threshold x 1").err().map(|e| e.to_string()),
            Some("Unable to parse value x".into())
        );
        assert_eq!(
            set("no_such 1").err().map(|e| e.to_string()),
            Some("Guardrail no_such not found.".into())
        );
        assert_eq!(
            set_config(&g, &[]).err().map(|e| e.to_string()),
            Some("No arguments.".into())
        );
        assert!(
            !set("allow_filtering_enabled false")
                .expect("flag")
                .allow_filtering_enabled
        );
        assert_eq!(
            set("allow_filtering_enabled no")
                .err()
                .map(|e| e.to_string()),
            Some("Use 'true' or 'false' values for booleans".into())
        );
        let sizes = set("column_value_size_threshold 2MiB 1MiB").expect("sizes");
        assert_eq!(
            sizes.column_value_size,
            Threshold {
                warn: 1 << 20,
                fail: 2 << 20
            }
        );
        let text = get_config(&sizes, None, false, Some("column_value_size_threshold"));
        assert_eq!(text, Ok("[2MiB, 1MiB]\n".into()));
        let levels = set("write_consistency_levels_disallowed ANY ALL").expect("levels");
        assert!(!levels.write_consistency_levels_disallowed.is_empty());
        assert!(set("write_consistency_levels_disallowed null")
            .expect("empty")
            .write_consistency_levels_disallowed
            .is_empty());
        assert!(set("table_properties_warned comment,nope").is_err());
        let offsets = set("maximum_timestamp_threshold 2d 1d").expect("offsets");
        let text = get_config(&offsets, None, false, Some("maximum_timestamp_threshold"));
        assert_eq!(text, Ok("[2d, 1d]\n".into()));
        assert!(set("data_disk_usage_percentage_threshold 90 80").is_err());
        assert!(set("data_disk_usage_max_disk_size 1GiB").is_err());
    }
}
