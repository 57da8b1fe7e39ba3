//! Cassandra's auth caches: the roles a role holds (`RolesCache`), the
//! permissions a user holds on one resource (`PermissionsCache`) and a
//! role's password hash (PasswordAuthenticator's `CredentialsCache`), in
//! front of the reads of `system_auth` that logins and permission checks
//! make at `auth_read_consistency_level`.
//!
//! Each cache is bounded by entry count (least recently used out first)
//! and follows Cassandra's `AuthCache` over Caffeine: an entry older than
//! the validity is reloaded before use; one older than the update
//! interval (Caffeine's `refreshAfterWrite`) is served as it is at once
//! and queued for a reload in the background (`take_due`, then `refresh`,
//! driven by `Executor::reload_due_auth_entries` on the server's refresher
//! thread); when that reload fails (too few replicas) the old entry is
//! served until its validity ends. One reload per entry is queued per
//! update interval, and at most `DUE_RELOADS_MAX` per cache: past it a due
//! entry is served as it is and queued again an update interval later. A
//! validity of 0 turns a cache off: every lookup reads. With active update
//! (`*_cache_active_update`) lookups never reload before the validity:
//! the server reloads every entry each update interval instead
//! (`refresh`, driven by `Executor::refresh_auth_caches`). Time comes in
//! as an argument (`now_ms`), so the logic is tested without sleeping.
//!
//! Different from Cassandra: the node that runs a role or permission
//! statement drops the entries it may change
//! (`AuthCaches::invalidate_after`), where Cassandra 5.0 leaves every
//! node, its own included, to expiry.

use std::collections::{BTreeSet, VecDeque};
use std::hash::Hash;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::Duration;

use lru::LruCache;
use rocksandra_cql::ast::{DropKind, Permission, Statement};

use crate::error::Result;
use crate::role::HeldRoles;

/// Cassandra's default validity of each auth cache (`roles_validity`,
/// `permissions_validity`, `credentials_validity`: 2 s).
pub const DEFAULT_VALIDITY_MS: u64 = 2_000;
/// Cassandra's default `*_cache_max_entries`.
pub const DEFAULT_MAX_ENTRIES: usize = 1_000;
/// The most entries due for a reload one cache queues for the background
/// refresher.
pub const DUE_RELOADS_MAX: usize = 64;

/// One cache's settings (`<name>_validity`, `<name>_update_interval`,
/// `<name>_cache_max_entries`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheSettings {
    /// How long an entry may be used; 0 turns the cache off.
    pub validity_ms: u64,
    /// How old an entry gets before it is reloaded (the old one still
    /// served if the reload fails); the validity when not configured.
    pub update_interval_ms: u64,
    pub max_entries: usize,
    /// Every entry is reloaded each update interval in the background,
    /// none on a lookup before its validity ends.
    pub active_update: bool,
}

impl CacheSettings {
    /// A cache that is off: every lookup reads.
    pub const OFF: CacheSettings = CacheSettings {
        validity_ms: 0,
        update_interval_ms: 0,
        max_entries: DEFAULT_MAX_ENTRIES,
        active_update: false,
    };

    /// `update_interval_ms` None: the validity, as Cassandra's getters say.
    pub fn new(validity_ms: u64, update_interval_ms: Option<u64>, max_entries: usize) -> Self {
        CacheSettings {
            validity_ms,
            update_interval_ms: update_interval_ms.unwrap_or(validity_ms),
            max_entries,
            active_update: false,
        }
    }

    /// The same with `*_cache_active_update`.
    pub fn with_active_update(self, active_update: bool) -> Self {
        CacheSettings {
            active_update,
            ..self
        }
    }

    /// How often the server reloads every entry: with active update on a
    /// cache that is on.
    pub fn active_interval_ms(&self) -> Option<u64> {
        (self.enabled() && self.active_update).then_some(self.update_interval_ms.max(1))
    }

    fn enabled(&self) -> bool {
        self.validity_ms > 0 && self.max_entries > 0
    }
}

impl Default for CacheSettings {
    fn default() -> Self {
        CacheSettings::new(DEFAULT_VALIDITY_MS, None, DEFAULT_MAX_ENTRIES)
    }
}

/// What a lookup does with the entry it found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Freshness {
    /// Served as it is.
    Fresh,
    /// Served as it is, and reloaded in the background (kept as it is if
    /// the reload fails).
    Refresh,
    /// Past its validity: reloaded, a failure is the lookup's.
    Expired,
}

/// The decision for an entry loaded at `loaded_at_ms` whose last reload
/// was tried at `tried_at_ms`: Caffeine's `expireAfterWrite(validity)`
/// and `refreshAfterWrite(update interval)` (the validity with active
/// update, as Cassandra sets it: so never), a failed reload tried again
/// an update interval later.
pub fn freshness(
    settings: &CacheSettings,
    loaded_at_ms: i64,
    tried_at_ms: i64,
    now_ms: i64,
) -> Freshness {
    let age = now_ms.saturating_sub(loaded_at_ms);
    let since_try = now_ms.saturating_sub(tried_at_ms);
    let interval = i64::try_from(settings.update_interval_ms).unwrap_or(i64::MAX);
    if age >= i64::try_from(settings.validity_ms).unwrap_or(i64::MAX) {
        Freshness::Expired
    } else if !settings.active_update && age >= interval && since_try >= interval {
        Freshness::Refresh
    } else {
        Freshness::Fresh
    }
}

struct Entry<V> {
    value: Arc<V>,
    loaded_at_ms: i64,
    tried_at_ms: i64,
}

/// The entries, the count of invalidations (which a load that started
/// before one must not undo) and the keys due for a background reload.
struct Slots<K: Hash + Eq, V> {
    entries: LruCache<K, Entry<V>>,
    generation: u64,
    due: VecDeque<K>,
}

/// Wakes the background refresher when a cache queued a due reload; one
/// for the three caches of a node.
#[derive(Debug, Default)]
pub struct DueSignal {
    queued: Mutex<bool>,
    wake: Condvar,
}

impl DueSignal {
    fn notify(&self) {
        *self.queued.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.wake.notify_one();
    }

    /// Waits until a reload is queued or `timeout` passes; true when one
    /// was queued (and clears the mark).
    pub fn wait(&self, timeout: Duration) -> bool {
        let queued = self.queued.lock().unwrap_or_else(|p| p.into_inner());
        let (mut queued, _) = self
            .wake
            .wait_timeout_while(queued, timeout, |queued| !*queued)
            .unwrap_or_else(|p| p.into_inner());
        std::mem::take(&mut *queued)
    }
}

/// Lookups answered from an entry and lookups that read (`nodetool
/// info`-like counters for the metrics endpoint).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub entries: u64,
}

/// One bounded auth cache.
pub struct AuthCache<K: Hash + Eq, V> {
    settings: RwLock<CacheSettings>,
    slots: Mutex<Slots<K, V>>,
    hits: AtomicU64,
    misses: AtomicU64,
    signal: Arc<DueSignal>,
}

fn capacity(max_entries: usize) -> NonZeroUsize {
    NonZeroUsize::new(max_entries).unwrap_or(NonZeroUsize::MIN)
}

impl<K: Hash + Eq + Clone, V> AuthCache<K, V> {
    pub fn new(settings: CacheSettings) -> Self {
        Self::with_signal(settings, Arc::default())
    }

    /// A cache whose due reloads wake `signal`'s waiter.
    pub fn with_signal(settings: CacheSettings, signal: Arc<DueSignal>) -> Self {
        AuthCache {
            settings: RwLock::new(settings),
            slots: Mutex::new(Slots {
                entries: LruCache::new(capacity(settings.max_entries)),
                generation: 0,
                due: VecDeque::new(),
            }),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            signal,
        }
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, Slots<K, V>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn settings(&self) -> CacheSettings {
        *self.settings.read().unwrap_or_else(|p| p.into_inner())
    }

    /// New settings; the entries go (Cassandra re-creates the cache).
    pub fn configure(&self, settings: CacheSettings) {
        *self.settings.write().unwrap_or_else(|p| p.into_inner()) = settings;
        let mut slots = self.slots();
        slots.entries = LruCache::new(capacity(settings.max_entries));
        slots.generation += 1;
        slots.due.clear();
    }

    /// The value of `key`, from the cache or by `load` (which runs without
    /// the cache's lock held: it reads storage, and may use other caches).
    pub fn get(&self, key: &K, now_ms: i64, load: impl FnOnce(&K) -> Result<V>) -> Result<Arc<V>> {
        let settings = self.settings();
        if !settings.enabled() {
            self.misses.fetch_add(1, Ordering::Relaxed);
            return load(key).map(Arc::new);
        }
        let (found, generation) = self.lookup(key, &settings, now_ms);
        if let Some(value) = found {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(value);
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let value = Arc::new(load(key)?);
        self.fill(key, &value, generation, now_ms);
        Ok(value)
    }

    /// The usable entry of `key`, and the generation the lookup saw. An
    /// entry due for refresh is marked tried now and queued for the
    /// background refresher (when the queue has room), so the lookups
    /// that follow use it while it reloads.
    fn lookup(&self, key: &K, settings: &CacheSettings, now_ms: i64) -> (Option<Arc<V>>, u64) {
        let mut slots = self.slots();
        let generation = slots.generation;
        let Some(entry) = slots.entries.get_mut(key) else {
            return (None, generation);
        };
        match freshness(settings, entry.loaded_at_ms, entry.tried_at_ms, now_ms) {
            Freshness::Expired => {
                slots.entries.pop(key);
                (None, generation)
            }
            Freshness::Refresh => {
                entry.tried_at_ms = now_ms;
                let value = entry.value.clone();
                let queued = slots.due.len() < DUE_RELOADS_MAX && !slots.due.contains(key);
                if queued {
                    slots.due.push_back(key.clone());
                }
                drop(slots);
                if queued {
                    self.signal.notify();
                }
                (Some(value), generation)
            }
            Freshness::Fresh => (Some(entry.value.clone()), generation),
        }
    }

    /// The keys queued for a background reload (each then reloaded with
    /// `refresh`), oldest first.
    pub fn take_due(&self) -> Vec<K> {
        self.slots().due.drain(..).collect()
    }

    /// Keeps a loaded value, unless an invalidation came since the load
    /// started.
    fn fill(&self, key: &K, value: &Arc<V>, generation: u64, now_ms: i64) {
        let mut slots = self.slots();
        if slots.generation != generation {
            return;
        }
        slots.entries.put(
            key.clone(),
            Entry {
                value: value.clone(),
                loaded_at_ms: now_ms,
                tried_at_ms: now_ms,
            },
        );
    }

    /// The keys held now (at most `max_entries`).
    pub fn keys(&self) -> Vec<K> {
        self.slots()
            .entries
            .iter()
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// A background reload of one entry (active update, or one due for
    /// refresh): `load` Some replaces it, None (what it stood for is gone)
    /// drops it, a failure keeps it until its validity.
    pub fn refresh(&self, key: &K, now_ms: i64, load: impl FnOnce(&K) -> Result<Option<V>>) {
        let generation = self.slots().generation;
        match load(key) {
            Ok(Some(value)) => self.fill(key, &Arc::new(value), generation, now_ms),
            Ok(None) => {
                self.slots().entries.pop(key);
            }
            Err(e) => tracing::debug!("auth cache: an active update failed: {e}"),
        }
    }

    /// Drops the entries whose key `matches`.
    pub fn invalidate_where(&self, matches: impl Fn(&K) -> bool) {
        let mut slots = self.slots();
        let doomed: Vec<K> = slots
            .entries
            .iter()
            .filter(|(k, _)| matches(k))
            .map(|(k, _)| k.clone())
            .collect();
        for key in &doomed {
            slots.entries.pop(key);
        }
        slots.generation += 1;
    }

    /// Drops every entry.
    pub fn invalidate_all(&self) {
        let mut slots = self.slots();
        slots.entries.clear();
        slots.generation += 1;
    }

    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            entries: self.slots().entries.len() as u64,
        }
    }
}

/// The node's three auth caches.
pub struct AuthCaches {
    /// Role name -> the roles it holds (`RolesCache`).
    pub roles: AuthCache<String, HeldRoles>,
    /// (user, resource name) -> the permissions the user holds on exactly
    /// that resource (`PermissionsCache`).
    pub permissions: AuthCache<(String, String), BTreeSet<Permission>>,
    /// Role name -> its password hash (`CredentialsCache`); None (no such
    /// role, or no password) is dropped once read, as Cassandra does.
    pub credentials: AuthCache<String, Option<String>>,
    /// Woken when any of the three queues a due reload.
    pub due: Arc<DueSignal>,
}

/// The three caches' settings, from cassandra.yaml.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AuthCacheSettings {
    pub roles: CacheSettings,
    pub permissions: CacheSettings,
    pub credentials: CacheSettings,
}

impl AuthCacheSettings {
    /// Every cache off (`*_validity: 0ms`).
    pub const OFF: AuthCacheSettings = AuthCacheSettings {
        roles: CacheSettings::OFF,
        permissions: CacheSettings::OFF,
        credentials: CacheSettings::OFF,
    };
}

/// The three caches' counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AuthCacheStats {
    pub roles: CacheStats,
    pub permissions: CacheStats,
    pub credentials: CacheStats,
}

impl std::fmt::Debug for AuthCaches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthCaches")
            .field("stats", &self.stats())
            .finish()
    }
}

/// Which cache a nodetool `invalidate*cache` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheName {
    Roles,
    Permissions,
    Credentials,
}

impl Default for AuthCaches {
    fn default() -> Self {
        let due = Arc::new(DueSignal::default());
        AuthCaches {
            roles: AuthCache::with_signal(CacheSettings::default(), due.clone()),
            permissions: AuthCache::with_signal(CacheSettings::default(), due.clone()),
            credentials: AuthCache::with_signal(CacheSettings::default(), due.clone()),
            due,
        }
    }
}

impl AuthCaches {
    /// How often the server reloads the entries of the caches with active
    /// update (the shortest of their update intervals); None: never.
    pub fn active_interval_ms(&self) -> Option<u64> {
        [
            self.roles.settings(),
            self.permissions.settings(),
            self.credentials.settings(),
        ]
        .iter()
        .filter_map(CacheSettings::active_interval_ms)
        .min()
    }

    pub fn stats(&self) -> AuthCacheStats {
        AuthCacheStats {
            roles: self.roles.stats(),
            permissions: self.permissions.stats(),
            credentials: self.credentials.stats(),
        }
    }

    /// nodetool's `invalidaterolescache`, `invalidatepermissionscache`,
    /// `invalidatecredentialscache`: the entries of `roles` (for the
    /// permissions cache, only those on the resources named in `resources`
    /// when any is, else on any), or every entry when no role is named.
    pub fn invalidate(&self, cache: CacheName, roles: &[String], resources: &[String]) {
        let named = |name: &String| roles.contains(name);
        match (cache, roles.is_empty()) {
            (CacheName::Roles, true) => self.roles.invalidate_all(),
            (CacheName::Roles, false) => self.roles.invalidate_where(named),
            (CacheName::Permissions, true) => self.permissions.invalidate_all(),
            (CacheName::Permissions, false) => self.permissions.invalidate_where(|(user, on)| {
                named(user) && (resources.is_empty() || resources.contains(on))
            }),
            (CacheName::Credentials, true) => self.credentials.invalidate_all(),
            (CacheName::Credentials, false) => self.credentials.invalidate_where(named),
        }
    }

    /// After `statement` ran on this node: the entries it may have made
    /// wrong go (`invalidated_by`).
    pub fn invalidate_after(&self, statement: &Statement) {
        let effect = invalidated_by(statement);
        if effect.roles {
            self.roles.invalidate_all();
        }
        if effect.permissions {
            self.permissions.invalidate_all();
        }
        if let Some(role) = effect.credentials {
            self.credentials.invalidate_where(|name| *name == role);
        }
    }
}

/// What a statement makes stale on the node that ran it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Invalidation {
    /// Every role hierarchy (a role's change reaches the roles holding it).
    pub roles: bool,
    /// Every user's permissions (they follow the roles held, and grants).
    pub permissions: bool,
    /// The password hash of this role.
    pub credentials: Option<String>,
}

/// Role statements change role hierarchies and so the permissions held
/// through them; ALTER and DROP ROLE a password too; GRANT and REVOKE of
/// permissions, the creations that grant their creator every permission
/// and the drops that revoke the grants on what they drop change
/// permissions.
pub fn invalidated_by(statement: &Statement) -> Invalidation {
    let roles_and_permissions = |credentials: Option<&str>| Invalidation {
        roles: true,
        permissions: true,
        credentials: credentials.map(str::to_string),
    };
    let permissions = Invalidation {
        permissions: true,
        ..Invalidation::default()
    };
    match statement {
        Statement::CreateRole(_) | Statement::GrantRole(_) | Statement::RevokeRole(_) => {
            roles_and_permissions(None)
        }
        Statement::AlterRole(s) => roles_and_permissions(Some(s.name.as_str())),
        Statement::DropRole(s) => roles_and_permissions(Some(s.name.as_str())),
        Statement::GrantPermissions(_) | Statement::RevokePermissions(_) => permissions,
        Statement::Drop(d) if matches!(d.kind, DropKind::Keyspace | DropKind::Table) => permissions,
        Statement::DropFunction(_)
        | Statement::CreateKeyspace(_)
        | Statement::CreateTable(_)
        | Statement::CreateFunction(_)
        | Statement::CreateAggregate(_) => permissions,
        _ => Invalidation::default(),
    }
}

#[cfg(test)]
mod tests;
