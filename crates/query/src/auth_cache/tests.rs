//! The cache logic with the time given: expiry, refresh, the bound,
//! invalidation, and what each statement invalidates.

use std::cell::Cell;

use super::*;
use crate::error::QueryError;

fn cache(
    validity_ms: u64,
    update_interval_ms: Option<u64>,
    max_entries: usize,
) -> AuthCache<String, u32> {
    AuthCache::new(CacheSettings::new(
        validity_ms,
        update_interval_ms,
        max_entries,
    ))
}

/// A loader that counts its calls and answers `value`, or fails.
struct Store {
    value: Cell<u32>,
    up: Cell<bool>,
    reads: Cell<u32>,
}

impl Store {
    fn new(value: u32) -> Store {
        Store {
            value: Cell::new(value),
            up: Cell::new(true),
            reads: Cell::new(0),
        }
    }

    fn load(&self, _key: &String) -> Result<u32> {
        self.reads.set(self.reads.get() + 1);
        match self.up.get() {
            true => Ok(self.value.get()),
            false => Err(QueryError::Unavailable {
                consistency: rocksandra_wire::Consistency::LocalQuorum,
                required: 2,
                alive: 1,
            }),
        }
    }
}

fn get(cache: &AuthCache<String, u32>, store: &Store, key: &str, now_ms: i64) -> Result<u32> {
    cache
        .get(&key.to_string(), now_ms, |k| store.load(k))
        .map(|v| *v)
}

#[test]
fn freshness_follows_validity_and_update_interval() {
    let s = CacheSettings::new(10_000, Some(2_000), 10);
    assert_eq!(freshness(&s, 0, 0, 1_999), Freshness::Fresh);
    assert_eq!(freshness(&s, 0, 0, 2_000), Freshness::Refresh);
    // A reload tried at 2 s is not tried again before 4 s.
    assert_eq!(freshness(&s, 0, 2_000, 3_999), Freshness::Fresh);
    assert_eq!(freshness(&s, 0, 2_000, 4_000), Freshness::Refresh);
    assert_eq!(freshness(&s, 0, 9_000, 10_000), Freshness::Expired);
    // The update interval defaults to the validity: no refresh window.
    let d = CacheSettings::new(2_000, None, 10);
    assert_eq!(d.update_interval_ms, 2_000);
    assert_eq!(freshness(&d, 0, 0, 1_999), Freshness::Fresh);
    assert_eq!(freshness(&d, 0, 0, 2_000), Freshness::Expired);
}

#[test]
fn an_entry_is_served_until_its_validity_then_reloaded() {
    let c = cache(2_000, None, 10);
    let store = Store::new(1);
    assert_eq!(get(&c, &store, "alice", 0).unwrap(), 1);
    store.value.set(2);
    assert_eq!(get(&c, &store, "alice", 1_999).unwrap(), 1, "cached");
    assert_eq!(store.reads.get(), 1);
    assert_eq!(get(&c, &store, "alice", 2_000).unwrap(), 2, "expired: read");
    assert_eq!(store.reads.get(), 2);
    assert_eq!(
        c.stats(),
        CacheStats {
            hits: 1,
            misses: 2,
            entries: 1
        }
    );
}

#[test]
fn past_its_validity_a_failed_read_is_the_lookups() {
    let c = cache(2_000, None, 10);
    let store = Store::new(1);
    get(&c, &store, "alice", 0).unwrap();
    store.up.set(false);
    assert_eq!(get(&c, &store, "alice", 1_000).unwrap(), 1);
    assert!(matches!(
        get(&c, &store, "alice", 2_000),
        Err(QueryError::Unavailable { .. })
    ));
}

/// The server's refresher: the keys queued as due, reloaded at `now_ms`.
fn reload_due(cache: &AuthCache<String, u32>, store: &Store, now_ms: i64) -> Vec<String> {
    let due = cache.take_due();
    for key in &due {
        cache.refresh(key, now_ms, |k| store.load(k).map(Some));
    }
    due
}

#[test]
fn a_due_entry_is_served_at_once_and_reloaded_in_the_background() {
    let c = cache(10_000, Some(1_000), 10);
    let store = Store::new(1);
    get(&c, &store, "alice", 0).unwrap();
    store.value.set(2);
    // Past the update interval: the old value, no read by the lookup.
    assert_eq!(get(&c, &store, "alice", 1_000).unwrap(), 1);
    assert_eq!(store.reads.get(), 1);
    assert_eq!(reload_due(&c, &store, 1_200), vec!["alice".to_string()]);
    assert_eq!(store.reads.get(), 2);
    assert_eq!(get(&c, &store, "alice", 1_300).unwrap(), 2);
    assert_eq!(store.reads.get(), 2);
    assert_eq!(
        c.stats(),
        CacheStats {
            hits: 2,
            misses: 1,
            entries: 1
        }
    );
}

#[test]
fn a_failed_refresh_keeps_serving_the_old_entry_until_its_validity() {
    let c = cache(10_000, Some(1_000), 10);
    let store = Store::new(1);
    get(&c, &store, "alice", 0).unwrap();
    store.up.set(false);
    assert_eq!(get(&c, &store, "alice", 1_000).unwrap(), 1);
    assert_eq!(reload_due(&c, &store, 1_000).len(), 1, "refresh failed");
    assert_eq!(store.reads.get(), 2);
    // Not queued again within an update interval of the failed try.
    assert_eq!(get(&c, &store, "alice", 1_500).unwrap(), 1);
    assert!(c.take_due().is_empty());
    assert_eq!(get(&c, &store, "alice", 9_999).unwrap(), 1);
    assert_eq!(reload_due(&c, &store, 9_999).len(), 1);
    assert_eq!(store.reads.get(), 3);
    assert!(get(&c, &store, "alice", 10_000).is_err(), "validity over");
    assert_eq!(
        store.reads.get(),
        4,
        "an expired entry is read by the lookup"
    );
}

#[test]
fn a_successful_refresh_restarts_the_validity() {
    let c = cache(10_000, Some(1_000), 10);
    let store = Store::new(1);
    get(&c, &store, "alice", 0).unwrap();
    store.value.set(2);
    assert_eq!(get(&c, &store, "alice", 1_000).unwrap(), 1);
    reload_due(&c, &store, 1_000);
    store.up.set(false);
    assert_eq!(
        get(&c, &store, "alice", 10_500).unwrap(),
        2,
        "loaded at 1 s"
    );
    assert!(get(&c, &store, "alice", 11_000).is_err());
}

#[test]
fn due_reloads_are_queued_once_per_entry_and_bounded() {
    let c = cache(60_000, Some(1_000), 1_000);
    let store = Store::new(1);
    let keys: Vec<String> = (0..DUE_RELOADS_MAX + 10).map(|i| format!("u{i}")).collect();
    for key in &keys {
        get(&c, &store, key, 0).unwrap();
    }
    for key in &keys {
        assert_eq!(get(&c, &store, key, 1_000).unwrap(), 1);
    }
    // Found due again while still queued: not queued twice.
    assert_eq!(get(&c, &store, "u0", 2_000).unwrap(), 1);
    let due = c.take_due();
    assert_eq!(due, keys[..DUE_RELOADS_MAX].to_vec());
    // The ones left out are served as they are and queued an update
    // interval later.
    assert_eq!(get(&c, &store, &keys[DUE_RELOADS_MAX], 1_500).unwrap(), 1);
    assert!(c.take_due().is_empty());
    assert_eq!(get(&c, &store, &keys[DUE_RELOADS_MAX], 2_000).unwrap(), 1);
    assert_eq!(c.take_due(), vec![keys[DUE_RELOADS_MAX].clone()]);
    assert_eq!(store.reads.get(), keys.len() as u32, "no lookup read");
}

#[test]
fn a_reload_begun_before_an_invalidation_is_not_kept() {
    let c = cache(60_000, Some(1_000), 10);
    let store = Store::new(1);
    get(&c, &store, "alice", 0).unwrap();
    get(&c, &store, "alice", 1_000).unwrap();
    let due = c.take_due();
    store.value.set(2);
    c.refresh(&due[0], 1_000, |k| {
        c.invalidate_all();
        store.load(k).map(Some)
    });
    assert_eq!(c.stats().entries, 0);
    // Nor does configure leave old keys queued.
    get(&c, &store, "bob", 1_000).unwrap();
    get(&c, &store, "bob", 2_000).unwrap();
    c.configure(c.settings());
    assert!(c.take_due().is_empty());
}

#[test]
fn a_due_reload_wakes_the_refresher() {
    let caches = AuthCaches::default();
    let store = Store::new(1);
    let wait = std::time::Duration::from_millis(0);
    assert!(!caches.due.wait(wait));
    let roles = &caches.credentials;
    roles.configure(CacheSettings::new(60_000, Some(1_000), 10));
    let load = |_: &String| store.load(&String::new()).map(|_| Some("hash".to_string()));
    roles.get(&"alice".to_string(), 0, load).unwrap();
    assert!(!caches.due.wait(wait), "fresh: nothing queued");
    roles.get(&"alice".to_string(), 1_000, load).unwrap();
    assert!(caches.due.wait(wait));
    assert!(!caches.due.wait(wait), "the mark is cleared");
    assert_eq!(roles.take_due(), vec!["alice".to_string()]);
}

#[test]
fn the_cache_holds_at_most_max_entries_least_recently_used_out() {
    let c = cache(60_000, None, 2);
    let store = Store::new(1);
    for name in ["a", "b"] {
        get(&c, &store, name, 0).unwrap();
    }
    get(&c, &store, "a", 1).unwrap();
    get(&c, &store, "c", 2).unwrap();
    assert_eq!(c.stats().entries, 2);
    assert_eq!(store.reads.get(), 3);
    get(&c, &store, "a", 3).unwrap();
    assert_eq!(store.reads.get(), 3, "a was used last: kept");
    get(&c, &store, "b", 4).unwrap();
    assert_eq!(store.reads.get(), 4, "b was evicted");
}

#[test]
fn validity_zero_reads_every_time_and_keeps_nothing() {
    let c = cache(0, None, 10);
    let store = Store::new(1);
    for now in 0..3 {
        get(&c, &store, "alice", now).unwrap();
    }
    assert_eq!(store.reads.get(), 3);
    assert_eq!(c.stats().entries, 0);
    assert_eq!(c.stats().misses, 3);
}

#[test]
fn invalidation_drops_entries_and_a_load_begun_before_it_is_not_kept() {
    let c = cache(60_000, None, 10);
    let store = Store::new(1);
    get(&c, &store, "alice", 0).unwrap();
    get(&c, &store, "bob", 0).unwrap();
    c.invalidate_where(|k| k == "alice");
    assert_eq!(c.stats().entries, 1);
    get(&c, &store, "bob", 1).unwrap();
    assert_eq!(store.reads.get(), 2, "bob kept");
    // A load racing an invalidation: its old value is not kept.
    let value = c
        .get(&"carol".to_string(), 2, |_| {
            c.invalidate_all();
            Ok(7)
        })
        .unwrap();
    assert_eq!(*value, 7);
    assert_eq!(c.stats().entries, 0);
}

#[test]
fn configure_replaces_the_settings_and_the_entries() {
    let c = cache(60_000, None, 10);
    let store = Store::new(1);
    get(&c, &store, "alice", 0).unwrap();
    c.configure(CacheSettings::OFF);
    assert_eq!(c.stats().entries, 0);
    get(&c, &store, "alice", 1).unwrap();
    get(&c, &store, "alice", 2).unwrap();
    assert_eq!(store.reads.get(), 3);
}

#[test]
fn nodetool_invalidates_the_named_roles_or_everything() {
    let caches = AuthCaches::default();
    let now = 0;
    for user in ["alice", "bob"] {
        caches
            .permissions
            .get(&(user.to_string(), "data".to_string()), now, |_| {
                Ok(BTreeSet::new())
            })
            .unwrap();
        caches
            .credentials
            .get(&user.to_string(), now, |_| Ok(Some("hash".to_string())))
            .unwrap();
    }
    let alice = ["alice".to_string()];
    caches.invalidate(CacheName::Permissions, &alice, &["data/ks".to_string()]);
    assert_eq!(
        caches.permissions.stats().entries,
        2,
        "not on that resource"
    );
    caches.invalidate(CacheName::Permissions, &alice, &["data".to_string()]);
    assert_eq!(caches.permissions.stats().entries, 1);
    caches.invalidate(CacheName::Credentials, &[], &[]);
    assert_eq!(caches.credentials.stats().entries, 0);
}

#[test]
fn with_active_update_lookups_never_reload_and_refresh_reloads_every_entry() {
    let settings = CacheSettings::new(10_000, Some(1_000), 10).with_active_update(true);
    assert_eq!(settings.active_interval_ms(), Some(1_000));
    assert_eq!(freshness(&settings, 0, 0, 9_999), Freshness::Fresh);
    assert_eq!(freshness(&settings, 0, 0, 10_000), Freshness::Expired);
    let c: AuthCache<String, u32> = AuthCache::new(settings);
    let store = Store::new(1);
    get(&c, &store, "alice", 0).unwrap();
    get(&c, &store, "bob", 0).unwrap();
    store.value.set(2);
    assert_eq!(
        get(&c, &store, "alice", 5_000).unwrap(),
        1,
        "no reload on lookup"
    );
    for key in c.keys() {
        c.refresh(&key, 6_000, |k| store.load(k).map(Some));
    }
    assert_eq!(store.reads.get(), 4);
    assert_eq!(
        get(&c, &store, "alice", 15_999).unwrap(),
        2,
        "reloaded at 6 s"
    );
    // A failed refresh keeps the entry; a gone one is dropped.
    store.up.set(false);
    c.refresh(&"alice".to_string(), 7_000, |k| store.load(k).map(Some));
    assert_eq!(get(&c, &store, "alice", 8_000).unwrap(), 2);
    c.refresh(&"bob".to_string(), 7_000, |_| Ok(None));
    assert_eq!(c.keys(), vec!["alice".to_string()]);
    assert_eq!(
        CacheSettings::OFF
            .with_active_update(true)
            .active_interval_ms(),
        None
    );
    let caches = AuthCaches::default();
    assert_eq!(caches.active_interval_ms(), None);
    caches
        .permissions
        .configure(CacheSettings::new(4_000, Some(3_000), 5).with_active_update(true));
    caches
        .roles
        .configure(CacheSettings::new(4_000, None, 5).with_active_update(true));
    assert_eq!(caches.active_interval_ms(), Some(3_000));
}

fn statement(cql: &str) -> Statement {
    rocksandra_cql::parse_statement(cql)
        .expect("parses")
        .statement
}

#[test]
fn role_and_permission_statements_invalidate_what_they_change() {
    let both = |credentials: Option<&str>| Invalidation {
        roles: true,
        permissions: true,
        credentials: credentials.map(str::to_string),
    };
    let permissions = Invalidation {
        permissions: true,
        ..Invalidation::default()
    };
    let cases = [
        ("CREATE ROLE r", both(None)),
        ("ALTER ROLE r WITH PASSWORD = 'p'", both(Some("r"))),
        ("DROP ROLE r", both(Some("r"))),
        ("GRANT r TO s", both(None)),
        ("REVOKE r FROM s", both(None)),
        ("GRANT SELECT ON KEYSPACE ks TO r", permissions.clone()),
        ("REVOKE SELECT ON KEYSPACE ks FROM r", permissions.clone()),
        ("DROP KEYSPACE ks", permissions.clone()),
        ("DROP TABLE ks.t", permissions.clone()),
        ("DROP FUNCTION ks.f", permissions.clone()),
        ("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", permissions.clone()),
        ("SELECT * FROM ks.t", Invalidation::default()),
        ("DROP INDEX ks.i", Invalidation::default()),
    ];
    for (cql, expected) in cases {
        assert_eq!(invalidated_by(&statement(cql)), expected, "{cql}");
    }
}

#[test]
fn a_statement_run_here_empties_the_caches_it_changes() {
    let caches = AuthCaches::default();
    let fill = |caches: &AuthCaches| {
        caches
            .roles
            .get(&"r".to_string(), 0, |_| Ok(Vec::new()))
            .unwrap();
        caches
            .permissions
            .get(&("r".to_string(), "data".to_string()), 0, |_| {
                Ok(BTreeSet::new())
            })
            .unwrap();
        for name in ["r", "s"] {
            caches
                .credentials
                .get(&name.to_string(), 0, |_| Ok(Some("h".to_string())))
                .unwrap();
        }
    };
    fill(&caches);
    caches.invalidate_after(&statement("GRANT SELECT ON KEYSPACE ks TO r"));
    assert_eq!(caches.roles.stats().entries, 1);
    assert_eq!(caches.permissions.stats().entries, 0);
    fill(&caches);
    caches.invalidate_after(&statement("ALTER ROLE r WITH PASSWORD = 'p'"));
    assert_eq!(caches.roles.stats().entries, 0);
    assert_eq!(caches.permissions.stats().entries, 0);
    assert_eq!(caches.credentials.stats().entries, 1, "s's hash stays");
}
