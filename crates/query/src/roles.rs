//! The roles stored in `system_auth.roles`, as the rest of access control
//! reads them: one role, the roles a role holds (transitively), who is
//! logged in and whether they are a superuser; and the text cells of the
//! `system_auth` tables. What the logged-in user's checks read of its own
//! roles comes through the roles cache (`user_roles`), as Cassandra's
//! `Roles`; role statements read the stored rows (`role`, `granted_roles`),
//! as its role manager does. The server's own statements over those tables run
//! through `StatementCtx::run` (`run_internal`).

use std::collections::BTreeSet;
use std::sync::Arc;

use rocksandra_data::types::{CqlType, NativeType};
use rocksandra_data::Value;
use rocksandra_wire::{Consistency, ResultBody};

use crate::ctx::StatementCtx;
use crate::error::{QueryError, Result};
use crate::request::{Outcome, Request};
use crate::role::{HeldRoles, Role};
use crate::settings::AuthConfig;

pub const DEFAULT_SUPERUSER: &str = "cassandra";

/// The level the default role is read (after the setup's probes) and
/// written at, whatever `auth_read_consistency_level` and
/// `auth_write_consistency_level` say (Cassandra's
/// `DEFAULT_SUPERUSER_CONSISTENCY_LEVEL`; `roles::role_consistency`).
pub const DEFAULT_ROLE_CONSISTENCY: Consistency = Consistency::Quorum;

fn internal(user: Option<&str>) -> Request {
    Request {
        internal: true,
        user: user.map(str::to_string),
        ..Request::default()
    }
}

pub(crate) fn text_value(s: &str) -> rocksandra_wire::Value {
    rocksandra_wire::Value::Bytes(bytes::Bytes::copy_from_slice(s.as_bytes()))
}

/// The server's own statement `cql` over the `system_auth` tables, at
/// `consistency`; `user` is whom it is done for (None: the server itself).
pub(crate) fn run_internal(
    ctx: &StatementCtx<'_>,
    cql: &str,
    values: Vec<rocksandra_wire::Value>,
    user: Option<&str>,
    consistency: Consistency,
) -> Result<Outcome> {
    let parsed = rocksandra_cql::parse_statement(cql)?;
    let request = Request {
        consistency,
        ..internal(user)
    };
    ctx.run(&parsed, &request, &values)
}

/// `run_internal` as the server itself, at `consistency`.
pub(crate) fn run_internal_at(
    ctx: &StatementCtx<'_>,
    cql: &str,
    values: Vec<rocksandra_wire::Value>,
    consistency: Consistency,
) -> Result<Outcome> {
    run_internal(ctx, cql, values, None, consistency)
}

/// Whether access control reads or writes a role's rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoleAccess {
    Read,
    Write,
}

/// The level the rows of role `name` are read or written at (its `roles`
/// row; the `role_members` rows of the roles granted to it): Cassandra's
/// `consistencyForRoleRead` and `consistencyForRoleWrite`. The default
/// superuser is always read and written at QUORUM, so that a node that
/// joined, or a replica added by raising `system_auth`'s replication,
/// finds it before a repair and two nodes never create it at once; any
/// other role at `auth_read_consistency_level` and
/// `auth_write_consistency_level`.
pub fn role_consistency(config: &AuthConfig, name: &str, access: RoleAccess) -> Consistency {
    if name == DEFAULT_SUPERUSER {
        return DEFAULT_ROLE_CONSISTENCY;
    }
    match access {
        RoleAccess::Read => config.read_consistency,
        RoleAccess::Write => config.write_consistency,
    }
}

/// `role_consistency` with the node's settings.
pub(crate) fn role_level(ctx: &StatementCtx<'_>, name: &str, access: RoleAccess) -> Consistency {
    role_consistency(&ctx.settings.auth_config(), name, access)
}

/// The stored role `name`, if any. The empty name is refused as
/// Cassandra's read of `system_auth.roles` refuses an empty key.
pub fn role(ctx: &StatementCtx<'_>, name: &str) -> Result<Option<Role>> {
    if name.is_empty() {
        return Err(QueryError::invalid("Key may not be empty"));
    }
    let outcome = run_internal_at(
        ctx,
        "SELECT role, can_login, is_superuser, salted_hash, member_of FROM system_auth.roles WHERE role = ?",
        vec![text_value(name)],
        role_level(ctx, name, RoleAccess::Read),
    )?;
    let ResultBody::Rows(rows) = outcome.body else {
        return Ok(None);
    };
    let Some(row) = rows.rows.first() else {
        return Ok(None);
    };
    let flag = |i: usize| {
        row.get(i)
            .cloned()
            .flatten()
            .is_some_and(|b| b.first() == Some(&1))
    };
    Ok(Some(Role {
        name: name.to_string(),
        can_login: flag(1),
        is_superuser: flag(2),
        salted_hash: row
            .get(3)
            .cloned()
            .flatten()
            .map(|b| String::from_utf8_lossy(&b).into_owned()),
        member_of: text_set(row.get(4).and_then(Option::as_ref)),
    }))
}

/// `name` and the roles granted to it: directly, or also through
/// granted roles when `recursive` (Cassandra's `getRoles`).
pub fn granted_roles(
    ctx: &StatementCtx<'_>,
    name: &str,
    recursive: bool,
) -> Result<BTreeSet<String>> {
    if !recursive {
        let mut roles = BTreeSet::from([name.to_string()]);
        roles.extend(role(ctx, name)?.map(|r| r.member_of).unwrap_or_default());
        return Ok(roles);
    }
    Ok(held_roles(ctx, name)?
        .into_iter()
        .map(|r| r.name)
        .chain(std::iter::once(name.to_string()))
        .collect())
}

/// The stored roles `name` holds: itself and every role granted to it,
/// transitively (each read once; grants never form a cycle, but a
/// stored one would not loop).
pub(crate) fn held_roles(ctx: &StatementCtx<'_>, name: &str) -> Result<Vec<Role>> {
    let mut seen = BTreeSet::from([name.to_string()]);
    let mut pending = vec![name.to_string()];
    let mut held = Vec::new();
    while let Some(next) = pending.pop() {
        let Some(role) = role(ctx, &next)? else {
            continue;
        };
        for granted in &role.member_of {
            if seen.insert(granted.clone()) {
                pending.push(granted.clone());
            }
        }
        held.push(role);
    }
    Ok(held)
}

pub(crate) fn logged_in(ctx: &StatementCtx<'_>, request: &Request) -> Result<String> {
    if !ctx.settings.auth_config().password_authenticator {
        return Err(QueryError::Unauthorized(
            "You have to be logged in and not anonymous to perform this request".into(),
        ));
    }
    request.user.clone().ok_or_else(|| {
        QueryError::Unauthorized(
            "You have to be logged in and not anonymous to perform this request".into(),
        )
    })
}

/// The roles `user` holds, itself included, through the roles cache
/// (Cassandra's `Roles.getRoleDetails`); no password hash is kept there.
pub(crate) fn user_roles(ctx: &StatementCtx<'_>, user: &str) -> Result<Arc<HeldRoles>> {
    let key = user.to_string();
    ctx.settings
        .auth_caches
        .roles
        .get(&key, ctx.now_millis(), |name| load_user_roles(ctx, name))
}

/// What the roles cache keeps of `user`: the roles it holds, read now.
pub(crate) fn load_user_roles(ctx: &StatementCtx<'_>, user: &str) -> Result<HeldRoles> {
    Ok(held_roles(ctx, user)?
        .into_iter()
        .map(|role| Role {
            salted_hash: None,
            ..role
        })
        .collect())
}

/// The names of the roles `user` holds, itself included (cached).
pub(crate) fn user_role_names(ctx: &StatementCtx<'_>, user: &str) -> Result<BTreeSet<String>> {
    let mut names: BTreeSet<String> = user_roles(ctx, user)?
        .iter()
        .map(|r| r.name.clone())
        .collect();
    names.insert(user.to_string());
    Ok(names)
}

/// Superuser status, held directly or through a granted role (cached).
pub(crate) fn is_superuser(ctx: &StatementCtx<'_>, user: &str) -> Result<bool> {
    Ok(user_roles(ctx, user)?.iter().any(|r| r.is_superuser))
}

/// Whether `user`'s own role may log in (cached; Cassandra's
/// `Roles.canLogin`): false for a role that does not exist.
pub(crate) fn can_login(ctx: &StatementCtx<'_>, user: &str) -> Result<bool> {
    Ok(user_roles(ctx, user)?
        .iter()
        .any(|r| r.name == user && r.can_login))
}

/// The names in a stored `set<text>` cell.
pub(crate) fn text_set(cell: Option<&bytes::Bytes>) -> Vec<String> {
    let Some(cell) = cell else {
        return Vec::new();
    };
    let ty = CqlType::Set(Box::new(CqlType::Native(NativeType::Text)));
    match Value::deserialize(&ty, cell) {
        Ok(Value::Set(items)) => items
            .into_iter()
            .filter_map(|v| match v {
                Value::Text(s) => Some(s),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

pub(crate) fn text_cell(cell: Option<&bytes::Bytes>) -> String {
    cell.map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_superuser_is_read_and_written_at_quorum_whatever_the_settings() {
        for config in [
            AuthConfig::default(),
            AuthConfig {
                read_consistency: Consistency::One,
                write_consistency: Consistency::All,
                ..AuthConfig::default()
            },
        ] {
            for access in [RoleAccess::Read, RoleAccess::Write] {
                assert_eq!(
                    role_consistency(&config, "cassandra", access),
                    Consistency::Quorum
                );
            }
        }
    }

    #[test]
    fn other_roles_take_the_configured_levels_cassandras_by_default() {
        let defaults = AuthConfig::default();
        assert_eq!(
            role_consistency(&defaults, "alice", RoleAccess::Read),
            Consistency::LocalQuorum
        );
        assert_eq!(
            role_consistency(&defaults, "alice", RoleAccess::Write),
            Consistency::EachQuorum
        );
        let one = AuthConfig {
            read_consistency: Consistency::One,
            write_consistency: Consistency::LocalOne,
            ..defaults
        };
        assert_eq!(
            role_consistency(&one, "alice", RoleAccess::Read),
            Consistency::One
        );
        assert_eq!(
            role_consistency(&one, "alice", RoleAccess::Write),
            Consistency::LocalOne
        );
        // Only the exact name is the default superuser's.
        assert_eq!(
            role_consistency(&one, "Cassandra", RoleAccess::Read),
            Consistency::One
        );
    }
}
