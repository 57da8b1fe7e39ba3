//! Cassandra 5.0's auth cache keys: `roles_*`, `permissions_*` and
//! `credentials_*` (`_validity`, `_update_interval`, `_cache_max_entries`,
//! `_cache_active_update`),
//! with their legacy `_in_ms` names, read into
//! `rocksandra_query::auth_cache::AuthCacheSettings`.

use rocksandra_query::auth_cache::{AuthCacheSettings, CacheSettings, DEFAULT_MAX_ENTRIES};

use super::{invalid, parse_duration, pick_legacy, ConfigError, FileConfig};

/// The keys of one cache as the file gives them.
struct CacheKeys {
    /// `roles`, `permissions` or `credentials`.
    name: &'static str,
    validity: Option<String>,
    validity_in_ms: Option<u64>,
    update_interval: Option<String>,
    /// -1 (Cassandra's old default) means unset.
    update_interval_in_ms: Option<i64>,
    max_entries: Option<i64>,
    active_update: Option<bool>,
}

/// A Cassandra duration of whole milliseconds that fits its `int`.
fn millis(key: &'static str, text: &str) -> Result<u64, ConfigError> {
    let duration = parse_duration(text).map_err(|m| invalid(key, m))?;
    let ms = duration.as_millis();
    if duration.as_nanos() % 1_000_000 != 0 || ms > i32::MAX as u128 {
        return Err(invalid(
            key,
            format!(
                "{text} (expected whole milliseconds, at most {}ms)",
                i32::MAX
            ),
        ));
    }
    Ok(ms as u64)
}

fn legacy_millis(key: &'static str, ms: u64) -> Result<u64, ConfigError> {
    match ms <= i32::MAX as u64 {
        true => Ok(ms),
        false => Err(invalid(key, format!("{ms} (at most {})", i32::MAX))),
    }
}

/// The key names of one cache: `<name>_validity` and so on.
fn keys(name: &str) -> [&'static str; 5] {
    match name {
        "roles" => [
            "roles_validity",
            "roles_validity_in_ms",
            "roles_update_interval",
            "roles_update_interval_in_ms",
            "roles_cache_max_entries",
        ],
        "permissions" => [
            "permissions_validity",
            "permissions_validity_in_ms",
            "permissions_update_interval",
            "permissions_update_interval_in_ms",
            "permissions_cache_max_entries",
        ],
        _ => [
            "credentials_validity",
            "credentials_validity_in_ms",
            "credentials_update_interval",
            "credentials_update_interval_in_ms",
            "credentials_cache_max_entries",
        ],
    }
}

impl CacheKeys {
    /// Cassandra's rules: validity 2s by default (0 turns the cache off),
    /// the update interval the validity unless set, at most 1,000 entries.
    fn settings(self) -> Result<CacheSettings, ConfigError> {
        let [validity_key, validity_ms_key, interval_key, interval_ms_key, max_key] =
            keys(self.name);
        let validity_ms = pick_legacy(
            (validity_key, self.validity, |t: String| {
                millis(validity_key, &t)
            }),
            (validity_ms_key, self.validity_in_ms, |ms| {
                legacy_millis(validity_ms_key, ms)
            }),
        )?
        .unwrap_or(CacheSettings::default().validity_ms);
        let update_interval_ms = pick_legacy(
            (interval_key, self.update_interval, |t: String| {
                millis(interval_key, &t).map(Some)
            }),
            (
                interval_ms_key,
                self.update_interval_in_ms,
                |ms: i64| match ms {
                    -1 => Ok(None),
                    ms => legacy_millis(interval_ms_key, u64::try_from(ms).unwrap_or(u64::MAX))
                        .map(Some),
                },
            ),
        )?
        .flatten();
        let max_entries = match self.max_entries {
            None => DEFAULT_MAX_ENTRIES,
            Some(n) if (0..=i64::from(i32::MAX)).contains(&n) => n as usize,
            Some(n) => {
                return Err(invalid(
                    max_key,
                    format!("{n} (expected 0 to {})", i32::MAX),
                ))
            }
        };
        Ok(
            CacheSettings::new(validity_ms, update_interval_ms, max_entries)
                .with_active_update(self.active_update.unwrap_or(false)),
        )
    }
}

impl FileConfig {
    /// The three caches' settings.
    pub(super) fn auth_caches(&mut self) -> Result<AuthCacheSettings, ConfigError> {
        let roles = CacheKeys {
            name: "roles",
            validity: self.roles_validity.take(),
            validity_in_ms: self.roles_validity_in_ms,
            update_interval: self.roles_update_interval.take(),
            update_interval_in_ms: self.roles_update_interval_in_ms,
            max_entries: self.roles_cache_max_entries,
            active_update: self.roles_cache_active_update,
        };
        let permissions = CacheKeys {
            name: "permissions",
            validity: self.permissions_validity.take(),
            validity_in_ms: self.permissions_validity_in_ms,
            update_interval: self.permissions_update_interval.take(),
            update_interval_in_ms: self.permissions_update_interval_in_ms,
            max_entries: self.permissions_cache_max_entries,
            active_update: self.permissions_cache_active_update,
        };
        let credentials = CacheKeys {
            name: "credentials",
            validity: self.credentials_validity.take(),
            validity_in_ms: self.credentials_validity_in_ms,
            update_interval: self.credentials_update_interval.take(),
            update_interval_in_ms: self.credentials_update_interval_in_ms,
            max_entries: self.credentials_cache_max_entries,
            active_update: self.credentials_cache_active_update,
        };
        Ok(AuthCacheSettings {
            roles: roles.settings()?,
            permissions: permissions.settings()?,
            credentials: credentials.settings()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use super::*;

    fn caches(yaml: &str) -> AuthCacheSettings {
        match Config::from_yaml(yaml, "test.yaml") {
            Ok(config) => config.auth_caches,
            Err(e) => panic!("{yaml}: {e}"),
        }
    }

    fn error(yaml: &str) -> String {
        match Config::from_yaml(yaml, "test.yaml") {
            Ok(_) => panic!("{yaml} parsed"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn defaults_are_cassandras() {
        let defaults = CacheSettings {
            validity_ms: 2_000,
            update_interval_ms: 2_000,
            max_entries: 1_000,
            active_update: false,
        };
        let all = caches("");
        assert_eq!(
            all,
            AuthCacheSettings {
                roles: defaults,
                permissions: defaults,
                credentials: defaults
            }
        );
    }

    #[test]
    fn durations_take_cassandras_forms_and_the_interval_follows_the_validity() {
        let c = caches(
            "roles_validity: 10s\nroles_update_interval: 500ms\nroles_cache_max_entries: 7\n\
             permissions_validity: 0ms\ncredentials_validity_in_ms: 3000\n\
             credentials_update_interval_in_ms: -1\n",
        );
        assert_eq!(c.roles, CacheSettings::new(10_000, Some(500), 7));
        assert_eq!(c.permissions.validity_ms, 0);
        assert_eq!(c.credentials, CacheSettings::new(3_000, None, 1_000));
        assert_eq!(c.credentials.update_interval_ms, 3_000);
        let m = caches(
            "permissions_validity: 1m\npermissions_update_interval_in_ms: 250\n\
             permissions_cache_active_update: true\n",
        );
        assert_eq!(
            m.permissions,
            CacheSettings::new(60_000, Some(250), 1_000).with_active_update(true)
        );
        assert!(!m.roles.active_update);
    }

    #[test]
    fn bad_values_name_their_key() {
        assert!(error("roles_validity: soon\n").contains("roles_validity"));
        assert!(error("permissions_validity: 1500us\n").contains("permissions_validity"));
        assert!(
            error("credentials_cache_max_entries: -2\n").contains("credentials_cache_max_entries")
        );
        assert!(error("roles_validity: 1s\nroles_validity_in_ms: 1000\n")
            .contains("roles_validity_in_ms"));
    }
}
