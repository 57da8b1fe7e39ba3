//! PasswordAuthenticator and role management, as Cassandra's
//! `CassandraRoleManager`: roles live in `system_auth.roles` (a built-in
//! table kept in storage), passwords as bcrypt hashes (`$2a$`).
//!
//! With AllowAllAuthenticator (the default) every client is anonymous: role
//! statements fail as in Cassandra. With PasswordAuthenticator the default
//! superuser `cassandra`/`cassandra` is created when no role exists in
//! the cluster (`setup_default_role`, which the server runs once the node
//! has joined).
//! Roles are granted to roles (`GRANT r TO s`) as Cassandra keeps them:
//! `roles.member_of` of the grantee and a `role_members` row. A role holds
//! what the roles granted to it hold, superuser status included.
//! Permissions are `authz`'s (CassandraAuthorizer) when configured;
//! otherwise AllowAllAuthorizer's: a logged-in user may do anything except
//! grant superuser status without having it.

use std::collections::BTreeSet;
use std::sync::Arc;

use rocksandra_cql::ast::{
    AlterRole, CreateRole, DropRole, ListRoles, Permission, RoleChange, RoleKind, RoleOption,
};
use rocksandra_data::types::{CqlType, NativeType};
use rocksandra_data::Value;
use rocksandra_wire::{
    ColumnSpec, ColumnsMetadata, Consistency, ResultBody, Rows, RowsMetadata, TableSpec,
};

use crate::authz::{
    authorizer_enabled, grant_to_creator, load_permissions, revoke_all_from, revoke_all_on,
    subject, Resource,
};
use crate::ctx::StatementCtx;
use crate::error::{QueryError, Result};
use crate::request::{Outcome, Request};
use crate::roles::{
    can_login, granted_roles, is_superuser, load_user_roles, logged_in, role, role_level,
    run_internal, run_internal_at, text_cell, text_value, user_role_names, RoleAccess,
    DEFAULT_ROLE_CONSISTENCY, DEFAULT_SUPERUSER,
};
pub use crate::settings::AuthConfig;

const DEFAULT_SUPERUSER_PASSWORD: &str = "cassandra";

fn boolean(b: bool) -> rocksandra_wire::Value {
    rocksandra_wire::Value::Bytes(bytes::Bytes::from(vec![u8::from(b)]))
}

fn hash_password(password: &str, cost: u32) -> Result<String> {
    bcrypt::hash_with_result(password, cost)
        .map(|h| h.format_for_version(bcrypt::Version::TwoA))
        .map_err(|e| QueryError::Server(format!("cannot hash the password: {e}")))
}

/// The reads of Cassandra's `hasExistingRoles`, in its order: the default
/// role at ONE, then at QUORUM, then any role at QUORUM.
pub const DEFAULT_ROLE_PROBES: [(&str, Consistency); 3] = [
    (
        "SELECT role FROM system_auth.roles WHERE role = 'cassandra'",
        Consistency::One,
    ),
    (
        "SELECT role FROM system_auth.roles WHERE role = 'cassandra'",
        Consistency::Quorum,
    ),
    (
        "SELECT role FROM system_auth.roles LIMIT 1",
        Consistency::Quorum,
    ),
];

/// What setting up the default role does next, given what the probes
/// answered so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultRoleStep {
    /// Run `DEFAULT_ROLE_PROBES[i]`.
    Probe(usize),
    /// A probe found a role: nothing is written.
    Exists,
    /// Every probe came back empty: write the default role.
    Create,
}

/// The decision of Cassandra's `setupDefaultRole`: `found[i]` is whether
/// probe i returned a row. The first probe that finds one settles it; the
/// default role is written only when all of them found none.
pub fn default_role_step(found: &[bool]) -> DefaultRoleStep {
    if found.iter().any(|f| *f) {
        DefaultRoleStep::Exists
    } else if found.len() < DEFAULT_ROLE_PROBES.len() {
        DefaultRoleStep::Probe(found.len())
    } else {
        DefaultRoleStep::Create
    }
}

/// What `setup_default_role` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultRoleSetup {
    /// No PasswordAuthenticator: there is no default role.
    NotNeeded,
    Existed,
    Created,
}

/// With PasswordAuthenticator, creates the default superuser
/// `cassandra`/`cassandra` when no role exists, as Cassandra's
/// `setupDefaultRole`: the probes and the write go through the data proxy
/// (the cluster's coordinator in a cluster) at Cassandra's levels, and the
/// role is written at timestamp 0, so any change an operator makes to it
/// (a new password, DROP ROLE) wins over a re-creation by a node that saw
/// no role. An error (too few replicas) is for the caller to retry.
pub(crate) fn setup_default_role(
    ctx: &StatementCtx<'_>,
    config: AuthConfig,
) -> Result<DefaultRoleSetup> {
    if !config.password_authenticator {
        return Ok(DefaultRoleSetup::NotNeeded);
    }
    let mut found = Vec::with_capacity(DEFAULT_ROLE_PROBES.len());
    loop {
        match default_role_step(&found) {
            DefaultRoleStep::Probe(i) => {
                let (cql, consistency) = DEFAULT_ROLE_PROBES[i];
                let outcome = run_internal_at(ctx, cql, Vec::new(), consistency)?;
                found.push(matches!(&outcome.body, ResultBody::Rows(r) if !r.rows.is_empty()));
            }
            DefaultRoleStep::Exists => return Ok(DefaultRoleSetup::Existed),
            DefaultRoleStep::Create => break,
        }
    }
    let hash = hash_password(DEFAULT_SUPERUSER_PASSWORD, config.bcrypt_cost)?;
    run_internal_at(
        ctx,
        "INSERT INTO system_auth.roles (role, can_login, is_superuser, salted_hash) VALUES (?, true, true, ?) USING TIMESTAMP 0",
        vec![text_value(DEFAULT_SUPERUSER), text_value(&hash)],
        DEFAULT_ROLE_CONSISTENCY,
    )?;
    tracing::info!("Created default superuser role '{DEFAULT_SUPERUSER}'");
    Ok(DefaultRoleSetup::Created)
}

/// Checks SASL PLAIN credentials, in Cassandra's order: the password
/// against the stored hash (credentials cache), then whether the role may
/// log in (roles cache). The role is read at its level
/// (`roles::role_consistency`); when that read fails (too few live
/// replicas, a timeout) the login fails as in Cassandra's
/// PasswordAuthenticator, with BAD_CREDENTIALS naming the failure.
pub fn authenticate(ctx: &StatementCtx<'_>, username: &str, password: &str) -> Result<()> {
    let incorrect = || {
        QueryError::BadCredentials(format!(
            "Provided username {username} and/or password are incorrect"
        ))
    };
    let hash = password_hash(ctx, username).map_err(unable_to_authenticate)?;
    let Some(hash) = hash.as_deref() else {
        return Err(incorrect());
    };
    if !matches!(bcrypt::verify(password, hash), Ok(true)) {
        return Err(incorrect());
    }
    if !can_login(ctx, username).map_err(unable_to_authenticate)? {
        return Err(QueryError::BadCredentials(format!(
            "{username} is not permitted to log in"
        )));
    }
    Ok(())
}

/// The stored password hash of `username`, through the credentials cache.
/// None (no such role, or no password) is not kept: a role created next
/// logs in at once, as Cassandra's sentinel handling does.
fn password_hash(ctx: &StatementCtx<'_>, username: &str) -> Result<Arc<Option<String>>> {
    let cache = &ctx.settings.auth_caches.credentials;
    let key = username.to_string();
    let hash = cache.get(&key, ctx.now_millis(), |name| load_password_hash(ctx, name))?;
    if hash.is_none() {
        cache.invalidate_where(|k| *k == key);
    }
    Ok(hash)
}

/// What the credentials cache keeps of `username`, read now.
fn load_password_hash(ctx: &StatementCtx<'_>, username: &str) -> Result<Option<String>> {
    Ok(role(ctx, username)?.and_then(|r| r.salted_hash))
}

/// Cassandra's active update (`*_cache_active_update`): every entry of
/// the caches that have it is read again; a failed read keeps the entry
/// until its validity, and a role gone (or without a password) takes its
/// hash with it, as Cassandra's `CacheRefresher` does.
pub(crate) fn refresh_auth_caches(ctx: &StatementCtx<'_>) {
    let caches = &ctx.settings.auth_caches;
    if caches.roles.settings().active_update {
        caches
            .roles
            .keys()
            .iter()
            .for_each(|key| reload_roles(ctx, key));
    }
    if caches.permissions.settings().active_update {
        let keys = caches.permissions.keys();
        keys.iter().for_each(|key| reload_permissions(ctx, key));
    }
    if caches.credentials.settings().active_update {
        let keys = caches.credentials.keys();
        keys.iter().for_each(|key| reload_credentials(ctx, key));
    }
}

/// The entries lookups found due for refresh (past their update
/// interval), read again in the background as Caffeine's
/// `refreshAfterWrite` does: the lookups were answered from the old entry,
/// which a failed read keeps until its validity.
pub(crate) fn reload_due_auth_entries(ctx: &StatementCtx<'_>) {
    let caches = &ctx.settings.auth_caches;
    caches
        .roles
        .take_due()
        .iter()
        .for_each(|key| reload_roles(ctx, key));
    let due = caches.permissions.take_due();
    due.iter().for_each(|key| reload_permissions(ctx, key));
    let due = caches.credentials.take_due();
    due.iter().for_each(|key| reload_credentials(ctx, key));
}

fn reload_roles(ctx: &StatementCtx<'_>, user: &String) {
    let cache = &ctx.settings.auth_caches.roles;
    cache.refresh(user, ctx.now_millis(), |user| {
        load_user_roles(ctx, user).map(Some)
    });
}

fn reload_permissions(ctx: &StatementCtx<'_>, key: &(String, String)) {
    let cache = &ctx.settings.auth_caches.permissions;
    cache.refresh(key, ctx.now_millis(), |(user, resource)| {
        let roles = user_role_names(ctx, user)?;
        load_permissions(ctx, &roles, resource).map(Some)
    });
}

fn reload_credentials(ctx: &StatementCtx<'_>, name: &String) {
    let cache = &ctx.settings.auth_caches.credentials;
    cache.refresh(name, ctx.now_millis(), |name| {
        Ok(load_password_hash(ctx, name)?.map(Some))
    });
}

/// A failure to read a role while logging in, as the client sees it.
fn unable_to_authenticate(error: QueryError) -> QueryError {
    if error.is_request_execution() {
        QueryError::BadCredentials(format!("Unable to perform authentication: {error}"))
    } else {
        error
    }
}

/// Checks the credentials of a superuser (nodetool's login).
pub fn authenticate_superuser(
    ctx: &StatementCtx<'_>,
    username: &str,
    password: &str,
) -> Result<()> {
    authenticate(ctx, username, password)?;
    if is_superuser(ctx, username)? {
        Ok(())
    } else {
        Err(QueryError::Unauthorized(format!(
            "Access Denied: {username} is not a superuser (nodetool needs one)"
        )))
    }
}

pub(crate) fn create_role(
    ctx: &StatementCtx<'_>,
    stmt: &CreateRole,
    request: &Request,
) -> Result<Outcome> {
    if stmt
        .options
        .iter()
        .any(|o| matches!(o, RoleOption::Password(_) | RoleOption::HashedPassword(_)))
        && !ctx.settings.auth_config().password_authenticator
    {
        return Err(QueryError::invalid(
            "org.apache.cassandra.auth.CassandraRoleManager doesn't support PASSWORD",
        ));
    }
    // CreateRoleStatement.validate's order: options, name, superuser
    // status, existence.
    let opts = RoleOptions::from(&stmt.options, stmt.kind)?;
    check_datacenters(ctx, &stmt.options)?;
    check_cidr_groups(&stmt.options)?;
    let name = stmt.name.as_str();
    if name.is_empty() {
        return Err(QueryError::invalid("Role name can't be an empty string"));
    }
    let user = logged_in(ctx, request)?;
    if opts.superuser == Some(true) && !is_superuser(ctx, &user)? {
        return Err(QueryError::Unauthorized(
            "Only superusers can create a role with superuser status".into(),
        ));
    }
    if role(ctx, name)?.is_some() {
        if stmt.if_not_exists {
            return Ok(Outcome::void());
        }
        return Err(QueryError::invalid(format!("{name} already exists")));
    }
    let hash = match (&opts.password, &opts.hashed_password) {
        (Some(p), _) => Some(hash_password(p, ctx.settings.auth_config().bcrypt_cost)?),
        (None, Some(h)) => Some(h.clone()),
        (None, None) => None,
    };
    let can_login = opts.login.unwrap_or(stmt.kind == RoleKind::User);
    let superuser = opts.superuser.unwrap_or(false);
    match hash {
        Some(h) => run_internal(
            ctx,
            "INSERT INTO system_auth.roles (role, can_login, is_superuser, salted_hash) VALUES (?, ?, ?, ?)",
            vec![text_value(name), boolean(can_login), boolean(superuser), text_value(&h)],
            Some(&user),
            role_level(ctx, name, RoleAccess::Write),
        )?,
        None => run_internal(
            ctx,
            "INSERT INTO system_auth.roles (role, can_login, is_superuser) VALUES (?, ?, ?)",
            vec![text_value(name), boolean(can_login), boolean(superuser)],
            Some(&user),
            role_level(ctx, name, RoleAccess::Write),
        )?,
    };
    grant_to_creator(ctx, request, &Resource::Role(name.to_string()))?;
    Ok(Outcome::void())
}

pub(crate) fn alter_role(
    ctx: &StatementCtx<'_>,
    stmt: &AlterRole,
    request: &Request,
) -> Result<Outcome> {
    let user = logged_in(ctx, request)?;
    let name = stmt.name.as_str();
    // AlterRoleStatement.authorize runs before validate checks the options.
    authorize_alter_role(ctx, stmt, &user, request)?;
    let opts = RoleOptions::from(&stmt.options, stmt.kind)?;
    check_datacenters(ctx, &stmt.options)?;
    check_cidr_groups(&stmt.options)?;
    if role(ctx, name)?.is_none() {
        if stmt.if_exists {
            return Ok(Outcome::void());
        }
        return Err(QueryError::invalid(format!("Role {name} doesn't exist")));
    }
    let mut changes = Vec::new();
    if let Some(p) = &opts.password {
        let h = hash_password(p, ctx.settings.auth_config().bcrypt_cost)?;
        changes.push(("salted_hash", text_value(&h)));
    }
    if let Some(h) = &opts.hashed_password {
        changes.push(("salted_hash", text_value(h)));
    }
    if let Some(l) = opts.login {
        changes.push(("can_login", boolean(l)));
    }
    if let Some(s) = opts.superuser {
        changes.push(("is_superuser", boolean(s)));
    }
    for (column, value) in changes {
        run_internal(
            ctx,
            &format!("UPDATE system_auth.roles SET {column} = ? WHERE role = ?"),
            vec![value, text_value(name)],
            Some(&user),
            role_level(ctx, name, RoleAccess::Write),
        )?;
    }
    // Cassandra's only network authorizer here, AllowAllNetworkAuthorizer,
    // refuses to change a role's datacenters (after the other options).
    if stmt
        .options
        .iter()
        .any(|o| matches!(o, RoleOption::AccessToDatacenters(_)))
    {
        return Err(QueryError::invalid(
            "ACCESS TO DATACENTERS operations not supported by AllowAllNetworkAuthorizer",
        ));
    }
    Ok(Outcome::void())
}

/// Cassandra's `DCPermissions.validate`: every datacenter named by ACCESS
/// TO DATACENTERS is one the cluster knows.
fn check_datacenters(ctx: &StatementCtx<'_>, options: &[RoleOption]) -> Result<()> {
    let node = ctx.node.read().unwrap_or_else(|p| p.into_inner());
    let known =
        |dc: &String| node.data_center == *dc || node.peers.iter().any(|p| p.data_center == *dc);
    let named: Vec<&String> = options
        .iter()
        .filter_map(|o| match o {
            RoleOption::AccessToDatacenters(Some(names)) => Some(names),
            _ => None,
        })
        .flatten()
        .collect();
    if named.iter().all(|dc| known(dc)) {
        return Ok(());
    }
    // The message shows the whole set of names, as Java's HashSet holds them.
    Err(QueryError::invalid(format!(
        "Invalid value(s) for DATACENTERS '[{}]',All values must be valid datacenters",
        java_string_set_order(&named).join(", ")
    )))
}

/// Cassandra's `CIDRPermissions.validate`: every CIDR group named by ACCESS
/// FROM CIDRS is one the CIDR authorizer knows, and this node knows none.
fn check_cidr_groups(options: &[RoleOption]) -> Result<()> {
    let named: Vec<&String> = options
        .iter()
        .filter_map(|o| match o {
            RoleOption::AccessFromCidrs(Some(groups)) => Some(groups),
            _ => None,
        })
        .flatten()
        .collect();
    if named.is_empty() {
        return Ok(());
    }
    Err(QueryError::invalid(format!(
        "Invalid CIDR group(s): [{}]. Available CIDR Groups are: []",
        java_string_set_order(&named).join(", ")
    )))
}

/// The distinct `names` in the order a small `java.util.HashSet<String>`
/// iterates them: by bucket of `String.hashCode` spread as `HashMap.hash`
/// does (16 buckets, doubled past 3/4 full), insertion order within one.
fn java_string_set_order<'a>(names: &[&'a String]) -> Vec<&'a str> {
    let mut distinct: Vec<&str> = Vec::new();
    for name in names {
        if !distinct.contains(&name.as_str()) {
            distinct.push(name.as_str());
        }
    }
    let mut buckets = 16usize;
    while distinct.len() > buckets * 3 / 4 {
        buckets *= 2;
    }
    let bucket = |name: &str| {
        let h = name.encode_utf16().fold(0i32, |h, unit| {
            h.wrapping_mul(31).wrapping_add(i32::from(unit))
        });
        let spread = h ^ ((h as u32) >> 16) as i32;
        (spread as u32 as usize) & (buckets - 1)
    };
    distinct.sort_by_key(|n| bucket(n));
    distinct
}

/// Cassandra's `AlterRoleStatement.authorize`: superuser status is for
/// superusers to change, never on a role the user holds; a role alters
/// only its own password; other roles need ALTER on them.
fn authorize_alter_role(
    ctx: &StatementCtx<'_>,
    stmt: &AlterRole,
    user: &str,
    request: &Request,
) -> Result<()> {
    let name = stmt.name.as_str();
    let sets_superuser = stmt
        .options
        .iter()
        .any(|o| matches!(o, RoleOption::Superuser(_)));
    if sets_superuser && user_role_names(ctx, user)?.contains(name) {
        return Err(QueryError::Unauthorized(
            "You aren't allowed to alter your own superuser status or that of a role granted to you"
                .into(),
        ));
    }
    let superuser = is_superuser(ctx, user)?;
    if sets_superuser && !superuser {
        return Err(QueryError::Unauthorized(
            "Only superusers are allowed to alter superuser status".into(),
        ));
    }
    let datacenters = stmt
        .options
        .iter()
        .any(|o| matches!(o, RoleOption::AccessToDatacenters(_)));
    if datacenters && !superuser {
        return Err(QueryError::Unauthorized(
            "Only superusers are allowed to alter access to datacenters.".into(),
        ));
    }
    if superuser {
        return Ok(());
    }
    if name == user {
        let refused = stmt.options.iter().find_map(|o| match o {
            RoleOption::Password(_) | RoleOption::HashedPassword(_) => None,
            RoleOption::Login(_) => Some("LOGIN"),
            RoleOption::Superuser(_) => Some("SUPERUSER"),
            RoleOption::Options(_) => Some("OPTIONS"),
            RoleOption::AccessToDatacenters(_) | RoleOption::AccessFromCidrs(_) => None,
        });
        if let Some(option) = refused {
            return Err(QueryError::Unauthorized(format!(
                "You aren't allowed to alter {option}"
            )));
        }
        return Ok(());
    }
    if authorizer_enabled(ctx) {
        let resource = Resource::Role(name.to_string());
        let subject = subject(ctx, request, std::slice::from_ref(&resource))?;
        if !subject.holds(Permission::Alter, &resource) {
            return Err(crate::authz::insufficient_privileges(user));
        }
    }
    Ok(())
}

pub(crate) fn drop_role(
    ctx: &StatementCtx<'_>,
    stmt: &DropRole,
    request: &Request,
) -> Result<Outcome> {
    let user = logged_in(ctx, request)?;
    let name = stmt.name.as_str();
    if name == user {
        return Err(QueryError::invalid(
            "Cannot DROP primary role for current login",
        ));
    }
    let Some(role) = role(ctx, name)? else {
        if stmt.if_exists {
            return Ok(Outcome::void());
        }
        return Err(QueryError::invalid(format!("{name} doesn't exist")));
    };
    if role.is_superuser && !is_superuser(ctx, &user)? {
        return Err(QueryError::Unauthorized(
            "Only superusers can drop a role with superuser status".into(),
        ));
    }
    // The roles it is granted to, then the role (its own `member_of`
    // with it), then its grants and the grants on it
    // (CassandraRoleManager.dropRole, revokeAllFrom/On). As there, the
    // `role_members` rows naming it as a member of other roles stay:
    // nothing reads them but the drop of those roles, which skips
    // members that no longer exist.
    for member in role_members(ctx, name)? {
        set_membership(ctx, name, &member, false)?;
    }
    run_internal(
        ctx,
        "DELETE FROM system_auth.roles WHERE role = ?",
        vec![text_value(name)],
        Some(&user),
        role_level(ctx, name, RoleAccess::Write),
    )?;
    if authorizer_enabled(ctx) {
        revoke_all_from(ctx, name);
        let resource = Resource::Role(name.to_string()).name();
        revoke_all_on(ctx, |r| r == resource);
    }
    Ok(Outcome::void())
}

/// The roles `role` is granted to (`role_members`).
fn role_members(ctx: &StatementCtx<'_>, role: &str) -> Result<Vec<String>> {
    let outcome = run_internal(
        ctx,
        "SELECT member FROM system_auth.role_members WHERE role = ?",
        vec![text_value(role)],
        None,
        role_level(ctx, role, RoleAccess::Read),
    )?;
    let ResultBody::Rows(rows) = outcome.body else {
        return Ok(Vec::new());
    };
    Ok(rows
        .rows
        .iter()
        .map(|r| text_cell(r.first().and_then(Option::as_ref)))
        .collect())
}

/// Records (or removes) `role` granted to `member`: the member's
/// `member_of` (at the member's write level) and the `role_members` row
/// (at the granted role's), as Cassandra's grantRole and revokeRole.
fn set_membership(ctx: &StatementCtx<'_>, role: &str, member: &str, granted: bool) -> Result<()> {
    let set = rocksandra_wire::Value::Bytes(bytes::Bytes::from(
        Value::Set(vec![Value::Text(role.to_string())]).to_bytes(),
    ));
    let member_level = role_level(ctx, member, RoleAccess::Write);
    let granted_level = role_level(ctx, role, RoleAccess::Write);
    if granted {
        run_internal(
            ctx,
            "UPDATE system_auth.roles SET member_of = member_of + ? WHERE role = ?",
            vec![set, text_value(member)],
            None,
            member_level,
        )?;
        run_internal(
            ctx,
            "INSERT INTO system_auth.role_members (role, member) VALUES (?, ?)",
            vec![text_value(role), text_value(member)],
            None,
            granted_level,
        )?;
    } else {
        if crate::roles::role(ctx, member)?.is_some() {
            run_internal(
                ctx,
                "UPDATE system_auth.roles SET member_of = member_of - ? WHERE role = ?",
                vec![set, text_value(member)],
                None,
                member_level,
            )?;
        }
        run_internal(
            ctx,
            "DELETE FROM system_auth.role_members WHERE role = ? AND member = ?",
            vec![text_value(role), text_value(member)],
            None,
            granted_level,
        )?;
    }
    Ok(())
}

/// GRANT role TO grantee / REVOKE role FROM grantee (the AUTHORIZE
/// check on the role ran before).
pub(crate) fn change_role_membership(
    ctx: &StatementCtx<'_>,
    stmt: &RoleChange,
    request: &Request,
    grant: bool,
) -> Result<Outcome> {
    logged_in(ctx, request)?;
    let (role, grantee) = (stmt.role.as_str(), stmt.grantee.as_str());
    for name in [role, grantee] {
        if crate::roles::role(ctx, name)?.is_none() {
            return Err(QueryError::invalid(format!("{name} doesn't exist")));
        }
    }
    if grant {
        if granted_roles(ctx, grantee, true)?.contains(role) {
            return Err(QueryError::invalid(format!(
                "{grantee} is a member of {role}"
            )));
        }
        if granted_roles(ctx, role, true)?.contains(grantee) {
            return Err(QueryError::invalid(format!(
                "{role} is a member of {grantee}"
            )));
        }
    } else if !granted_roles(ctx, grantee, false)?.contains(role) || role == grantee {
        return Err(QueryError::invalid(format!(
            "{grantee} is not a member of {role}"
        )));
    }
    set_membership(ctx, role, grantee, grant)?;
    Ok(Outcome::void())
}

/// LIST ROLES / LIST USERS.
pub(crate) fn list_roles(
    ctx: &StatementCtx<'_>,
    stmt: Option<&ListRoles>,
    users: bool,
    request: &Request,
) -> Result<Outcome> {
    let user = logged_in(ctx, request)?;
    let of = stmt
        .and_then(|s| s.of.as_ref())
        .map(|r| r.as_str().to_string());
    // ListUsersStatement is a LIST ROLES of the user's own roles without
    // the roles those roles hold.
    let recursive = !users && stmt.is_none_or(|s| s.recursive);
    if let Some(of) = &of {
        if role(ctx, of)?.is_none() {
            return Err(QueryError::invalid(format!(
                "{} doesn't exist",
                Resource::Role(of.clone())
            )));
        }
    }
    let shown = shown_roles(ctx, request, &user, of.as_deref(), recursive)?;
    // Every role is listed at QUORUM whatever the settings, as Cassandra's
    // getAllRoles (it must know all roles of the cluster); the roles of one
    // role at the read level, as its getRoles.
    let consistency = match shown {
        None => Consistency::Quorum,
        Some(_) => ctx.settings.auth_config().read_consistency,
    };
    let Some(mut roles) = stored_roles(ctx, consistency)? else {
        return Ok(Outcome::void());
    };
    roles.sort();
    if let Some(shown) = &shown {
        roles.retain(|(n, _, _)| shown.contains(n));
    }
    if users {
        roles.retain(|(_, login, _)| *login);
    }
    Ok(role_list(roles, users))
}

/// The roles LIST ROLES may show (None: all of them), as Cassandra's
/// ListRolesStatement.execute decides: DESCRIBE on all roles
/// (superusers, and everyone under AllowAllAuthorizer) lists any role;
/// others see their own roles, and those of a role they hold.
fn shown_roles(
    ctx: &StatementCtx<'_>,
    request: &Request,
    user: &str,
    of: Option<&str>,
    recursive: bool,
) -> Result<Option<BTreeSet<String>>> {
    let describe_all = !authorizer_enabled(ctx)
        || subject(ctx, request, &[Resource::AllRoles])?
            .held_on(&Resource::AllRoles)
            .contains(&Permission::Describe);
    Ok(match (of, describe_all) {
        (None, true) => None,
        (Some(of), true) => Some(granted_roles(ctx, of, recursive)?),
        (None, false) => Some(granted_roles(ctx, user, recursive)?),
        (Some(of), false) => {
            if !granted_roles(ctx, user, true)?.contains(of) {
                return Err(QueryError::Unauthorized(format!(
                    "You are not authorized to view roles granted to {of} "
                )));
            }
            Some(granted_roles(ctx, of, recursive)?)
        }
    })
}

/// Every stored role, read at `consistency`: name, LOGIN and SUPERUSER;
/// None if the roles table gives no rows.
fn stored_roles(
    ctx: &StatementCtx<'_>,
    consistency: Consistency,
) -> Result<Option<Vec<(String, bool, bool)>>> {
    let outcome = run_internal(
        ctx,
        "SELECT role, can_login, is_superuser FROM system_auth.roles",
        Vec::new(),
        None,
        consistency,
    )?;
    let ResultBody::Rows(stored) = outcome.body else {
        return Ok(None);
    };
    let roles: Vec<(String, bool, bool)> = stored
        .rows
        .iter()
        .map(|r| {
            let name = r
                .first()
                .cloned()
                .flatten()
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            let flag = |i: usize| {
                r.get(i)
                    .cloned()
                    .flatten()
                    .is_some_and(|b| b.first() == Some(&1))
            };
            (name, flag(1), flag(2))
        })
        .collect();
    Ok(Some(roles))
}

/// The options of CREATE/ALTER ROLE (or USER).
struct RoleOptions {
    password: Option<String>,
    hashed_password: Option<String>,
    login: Option<bool>,
    superuser: Option<bool>,
}

/// The result of LIST ROLES (role, super, login, options, datacenters) or
/// LIST USERS (name, super, datacenters).
fn role_list(roles: Vec<(String, bool, bool)>, users: bool) -> Outcome {
    let spec = |name: &str, ty: CqlType| ColumnSpec {
        table: TableSpec {
            keyspace: "system_auth".into(),
            table: "roles".into(),
        },
        name: name.into(),
        cql_type: ty,
    };
    let text_t = CqlType::Native(NativeType::Text);
    let bool_t = CqlType::Native(NativeType::Boolean);
    let specs = if users {
        vec![
            spec("name", text_t.clone()),
            spec("super", bool_t.clone()),
            spec("datacenters", text_t.clone()),
        ]
    } else {
        vec![
            spec("role", text_t.clone()),
            spec("super", bool_t.clone()),
            spec("login", bool_t.clone()),
            spec(
                "options",
                CqlType::Map(Box::new(text_t.clone()), Box::new(text_t.clone())),
            ),
            spec("datacenters", text_t),
        ]
    };
    let rows = roles
        .into_iter()
        .map(|(name, login, sup)| {
            let b = |v: bool| Some(bytes::Bytes::from(vec![u8::from(v)]));
            let t = |s: &str| Some(bytes::Bytes::copy_from_slice(s.as_bytes()));
            if users {
                vec![t(&name), b(sup), t("ALL")]
            } else {
                vec![
                    t(&name),
                    b(sup),
                    b(login),
                    Some(bytes::Bytes::from(Value::Map(Vec::new()).to_bytes())),
                    t("ALL"),
                ]
            }
        })
        .collect();
    Outcome::rows(Rows {
        metadata: RowsMetadata {
            columns: ColumnsMetadata::Specs(specs.into()),
            paging_state: None,
            new_metadata_id: None,
        },
        rows,
    })
}

impl RoleOptions {
    fn from(options: &[RoleOption], kind: RoleKind) -> Result<RoleOptions> {
        let mut out = RoleOptions {
            password: None,
            hashed_password: None,
            login: None,
            superuser: None,
        };
        for o in options {
            match o {
                RoleOption::Password(p) => out.password = Some(p.clone()),
                RoleOption::HashedPassword(h) => {
                    if !is_bcrypt_hash(h) {
                        return Err(QueryError::invalid(
                            "Invalid hashed password value. Please use jBcrypt.",
                        ));
                    }
                    out.hashed_password = Some(h.clone())
                }
                RoleOption::Login(l) => out.login = Some(*l),
                RoleOption::Superuser(s) => out.superuser = Some(*s),
                RoleOption::Options(_) => {
                    return Err(QueryError::invalid(
                        "org.apache.cassandra.auth.CassandraRoleManager doesn't support OPTIONS",
                    ))
                }
                RoleOption::AccessToDatacenters(_) | RoleOption::AccessFromCidrs(_) => {}
            }
        }
        if kind == RoleKind::User && out.login.is_none() {
            out.login = Some(true);
        }
        Ok(out)
    }
}

/// Whether `hash` is a bcrypt hash jBCrypt would check a password against
/// (Cassandra tries one): `$2a$`-style prefix, 4 to 30 rounds, salt and hash.
fn is_bcrypt_hash(hash: &str) -> bool {
    hash.parse::<bcrypt::HashParts>()
        .is_ok_and(|parts| (4..=30).contains(&parts.get_cost()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashed_passwords_must_be_bcrypt_hashes_jbcrypt_accepts() {
        let hash = hash_password("secret", 4).expect("hashing works");
        assert!(is_bcrypt_hash(&hash));
        assert!(bcrypt::verify("secret", &hash).expect("a valid hash"));
        assert!(!is_bcrypt_hash("not a hash"));
        assert!(!is_bcrypt_hash("$2a$10$abc"));
        // jBCrypt's rounds are 4..=30
        assert!(!is_bcrypt_hash(&hash.replacen("$04$", "$03$", 1)));
        assert!(!is_bcrypt_hash(&hash.replacen("$04$", "$31$", 1)));
    }

    #[test]
    fn a_login_whose_role_cannot_be_read_fails_as_bad_credentials_naming_why() {
        let unavailable = QueryError::Unavailable {
            consistency: Consistency::LocalQuorum,
            required: 2,
            alive: 1,
        };
        assert_eq!(
            unable_to_authenticate(unavailable),
            QueryError::BadCredentials(
                "Unable to perform authentication: Cannot achieve consistency level LOCAL_QUORUM"
                    .into()
            )
        );
        let timeout = QueryError::ReadTimeout {
            consistency: Consistency::Quorum,
            received: 1,
            block_for: 2,
            data_present: false,
        };
        assert!(matches!(
            unable_to_authenticate(timeout),
            QueryError::BadCredentials(m)
                if m == "Unable to perform authentication: Operation timed out - received only 1 responses."
        ));
        // Not a failure to carry the read out: passed on as it is.
        let empty = QueryError::invalid("Key may not be empty");
        assert_eq!(unable_to_authenticate(empty.clone()), empty);
    }

    #[test]
    fn the_default_role_is_written_only_when_every_probe_found_none() {
        use DefaultRoleStep::{Create, Exists, Probe};
        assert_eq!(default_role_step(&[]), Probe(0));
        // The default role at ONE settles it at once.
        assert_eq!(default_role_step(&[true]), Exists);
        assert_eq!(default_role_step(&[false]), Probe(1));
        // Not at ONE (a replica without it yet), but at QUORUM.
        assert_eq!(default_role_step(&[false, true]), Exists);
        assert_eq!(default_role_step(&[false, false]), Probe(2));
        // The default role was dropped, another role exists.
        assert_eq!(default_role_step(&[false, false, true]), Exists);
        assert_eq!(default_role_step(&[false, false, false]), Create);
    }

    #[test]
    fn the_probes_are_cassandras_in_its_order() {
        let levels: Vec<Consistency> = DEFAULT_ROLE_PROBES.iter().map(|(_, cl)| *cl).collect();
        assert_eq!(
            levels,
            [Consistency::One, Consistency::Quorum, Consistency::Quorum]
        );
        assert!(DEFAULT_ROLE_PROBES[0]
            .0
            .ends_with("WHERE role = 'cassandra'"));
        assert_eq!(DEFAULT_ROLE_PROBES[0].0, DEFAULT_ROLE_PROBES[1].0);
        assert!(DEFAULT_ROLE_PROBES[2].0.ends_with("LIMIT 1"));
        assert_eq!(DEFAULT_ROLE_CONSISTENCY, Consistency::Quorum);
    }
}
