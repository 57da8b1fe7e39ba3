//! PasswordAuthenticator and role management, as Cassandra's
//! `CassandraRoleManager`: roles live in `system_auth.roles` (a built-in
//! table kept in storage), passwords as bcrypt hashes (`$2a$`).
//!
//! With AllowAllAuthenticator (the default) every client is anonymous: role
//! statements fail as in Cassandra. With PasswordAuthenticator the default
//! superuser `cassandra`/`cassandra` is created when no role exists.
//! Authorization is AllowAllAuthorizer's: a logged-in user may do anything
//! except grant superuser status without having it.

use rocksandra_cql::ast::{AlterRole, CreateRole, DropRole, ListRoles, RoleKind, RoleOption};
use rocksandra_data::types::{CqlType, NativeType};
use rocksandra_data::Value;
use rocksandra_wire::{ColumnSpec, ColumnsMetadata, ResultBody, Rows, RowsMetadata, TableSpec};

use crate::error::{QueryError, Result};
use crate::executor::{Executor, Outcome, Request};

/// How clients log in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AuthConfig {
    pub password_authenticator: bool,
    /// bcrypt cost (`auth_bcrypt_gensalt_log2_rounds`, Cassandra's default 10).
    pub bcrypt_cost: u32,
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            password_authenticator: false,
            bcrypt_cost: 10,
        }
    }
}

pub const DEFAULT_SUPERUSER: &str = "cassandra";
const DEFAULT_SUPERUSER_PASSWORD: &str = "cassandra";

/// A role as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct Role {
    pub name: String,
    pub can_login: bool,
    pub is_superuser: bool,
    pub salted_hash: Option<String>,
}

fn internal(user: Option<&str>) -> Request {
    Request {
        internal: true,
        user: user.map(str::to_string),
        ..Request::default()
    }
}

fn text(s: &str) -> rocksandra_wire::Value {
    rocksandra_wire::Value::Bytes(bytes::Bytes::copy_from_slice(s.as_bytes()))
}

fn boolean(b: bool) -> rocksandra_wire::Value {
    rocksandra_wire::Value::Bytes(bytes::Bytes::from(vec![u8::from(b)]))
}

fn hash_password(password: &str, cost: u32) -> Result<String> {
    bcrypt::hash_with_result(password, cost)
        .map(|h| h.format_for_version(bcrypt::Version::TwoA))
        .map_err(|e| QueryError::Server(format!("cannot hash the password: {e}")))
}

impl Executor {
    fn run_internal(
        &self,
        cql: &str,
        values: Vec<rocksandra_wire::Value>,
        user: Option<&str>,
    ) -> Result<Outcome> {
        let parsed = rocksandra_cql::parse_statement(cql)?;
        self.run(&parsed, &internal(user), &values)
    }

    /// The stored role `name`, if any.
    pub fn role(&self, name: &str) -> Result<Option<Role>> {
        let outcome = self.run_internal(
            "SELECT role, can_login, is_superuser, salted_hash FROM system_auth.roles WHERE role = ?",
            vec![text(name)],
            None,
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
        }))
    }

    /// Turns PasswordAuthenticator on; creates the default superuser when
    /// there is no role yet.
    pub fn enable_password_authentication(&self, config: AuthConfig) -> Result<()> {
        *self.auth.write().unwrap_or_else(|p| p.into_inner()) = config;
        if !config.password_authenticator {
            return Ok(());
        }
        let outcome = self.run_internal(
            "SELECT role FROM system_auth.roles LIMIT 1",
            Vec::new(),
            None,
        )?;
        let empty = matches!(&outcome.body, ResultBody::Rows(r) if r.rows.is_empty());
        if empty {
            let hash = hash_password(DEFAULT_SUPERUSER_PASSWORD, config.bcrypt_cost)?;
            self.run_internal(
                "INSERT INTO system_auth.roles (role, can_login, is_superuser, salted_hash) VALUES (?, true, true, ?)",
                vec![text(DEFAULT_SUPERUSER), text(&hash)],
                None,
            )?;
        }
        Ok(())
    }

    pub fn auth_config(&self) -> AuthConfig {
        *self.auth.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Checks SASL PLAIN credentials.
    pub fn authenticate(&self, username: &str, password: &str) -> Result<()> {
        let incorrect = || {
            QueryError::BadCredentials(format!(
                "Provided username {username} and/or password are incorrect"
            ))
        };
        let Some(role) = self.role(username)? else {
            return Err(incorrect());
        };
        if !role.can_login {
            return Err(QueryError::BadCredentials(format!(
                "{username} is not permitted to log in"
            )));
        }
        let Some(hash) = role.salted_hash else {
            return Err(incorrect());
        };
        match bcrypt::verify(password, &hash) {
            Ok(true) => Ok(()),
            _ => Err(incorrect()),
        }
    }

    fn logged_in(&self, request: &Request) -> Result<String> {
        if !self.auth_config().password_authenticator {
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

    fn is_superuser(&self, user: &str) -> Result<bool> {
        Ok(self.role(user)?.is_some_and(|r| r.is_superuser))
    }

    pub(crate) fn create_role(&self, stmt: &CreateRole, request: &Request) -> Result<Outcome> {
        if stmt
            .options
            .iter()
            .any(|o| matches!(o, RoleOption::Password(_) | RoleOption::HashedPassword(_)))
            && !self.auth_config().password_authenticator
        {
            return Err(QueryError::invalid(
                "org.apache.cassandra.auth.CassandraRoleManager doesn't support PASSWORD",
            ));
        }
        let user = self.logged_in(request)?;
        let name = stmt.name.as_str();
        if self.role(name)?.is_some() {
            if stmt.if_not_exists {
                return Ok(Outcome::void());
            }
            return Err(QueryError::invalid(format!("{name} already exists")));
        }
        let opts = RoleOptions::from(&stmt.options, stmt.kind)?;
        if opts.superuser == Some(true) && !self.is_superuser(&user)? {
            return Err(QueryError::Unauthorized(
                "Only superusers can create a role with superuser status".into(),
            ));
        }
        let hash = match (&opts.password, &opts.hashed_password) {
            (Some(p), _) => Some(hash_password(p, self.auth_config().bcrypt_cost)?),
            (None, Some(h)) => Some(h.clone()),
            (None, None) => None,
        };
        let can_login = opts.login.unwrap_or(stmt.kind == RoleKind::User);
        let superuser = opts.superuser.unwrap_or(false);
        match hash {
            Some(h) => self.run_internal(
                "INSERT INTO system_auth.roles (role, can_login, is_superuser, salted_hash) VALUES (?, ?, ?, ?)",
                vec![text(name), boolean(can_login), boolean(superuser), text(&h)],
                Some(&user),
            )?,
            None => self.run_internal(
                "INSERT INTO system_auth.roles (role, can_login, is_superuser) VALUES (?, ?, ?)",
                vec![text(name), boolean(can_login), boolean(superuser)],
                Some(&user),
            )?,
        };
        Ok(Outcome::void())
    }

    pub(crate) fn alter_role(&self, stmt: &AlterRole, request: &Request) -> Result<Outcome> {
        let user = self.logged_in(request)?;
        let name = stmt.name.as_str();
        if self.role(name)?.is_none() {
            if stmt.if_exists {
                return Ok(Outcome::void());
            }
            return Err(QueryError::invalid(format!("{name} doesn't exist")));
        }
        let opts = RoleOptions::from(&stmt.options, stmt.kind)?;
        let superuser = self.is_superuser(&user)?;
        if opts.superuser.is_some() && !superuser {
            return Err(QueryError::Unauthorized(
                "Only superusers are allowed to alter superuser status".into(),
            ));
        }
        if opts.superuser == Some(false) && name == user {
            return Err(QueryError::Unauthorized(
                "You aren't allowed to alter your own superuser status or that of a role granted to you"
                    .into(),
            ));
        }
        if let Some(p) = &opts.password {
            let h = hash_password(p, self.auth_config().bcrypt_cost)?;
            self.run_internal(
                "UPDATE system_auth.roles SET salted_hash = ? WHERE role = ?",
                vec![text(&h), text(name)],
                Some(&user),
            )?;
        }
        if let Some(h) = &opts.hashed_password {
            self.run_internal(
                "UPDATE system_auth.roles SET salted_hash = ? WHERE role = ?",
                vec![text(h), text(name)],
                Some(&user),
            )?;
        }
        if let Some(l) = opts.login {
            self.run_internal(
                "UPDATE system_auth.roles SET can_login = ? WHERE role = ?",
                vec![boolean(l), text(name)],
                Some(&user),
            )?;
        }
        if let Some(s) = opts.superuser {
            self.run_internal(
                "UPDATE system_auth.roles SET is_superuser = ? WHERE role = ?",
                vec![boolean(s), text(name)],
                Some(&user),
            )?;
        }
        Ok(Outcome::void())
    }

    pub(crate) fn drop_role(&self, stmt: &DropRole, request: &Request) -> Result<Outcome> {
        let user = self.logged_in(request)?;
        let name = stmt.name.as_str();
        if name == user {
            return Err(QueryError::invalid(
                "Cannot DROP primary role for current login",
            ));
        }
        let Some(role) = self.role(name)? else {
            if stmt.if_exists {
                return Ok(Outcome::void());
            }
            return Err(QueryError::invalid(format!("{name} doesn't exist")));
        };
        if role.is_superuser && !self.is_superuser(&user)? {
            return Err(QueryError::Unauthorized(
                "Only superusers can drop a role with superuser status".into(),
            ));
        }
        self.run_internal(
            "DELETE FROM system_auth.roles WHERE role = ?",
            vec![text(name)],
            Some(&user),
        )?;
        Ok(Outcome::void())
    }

    /// LIST ROLES / LIST USERS.
    pub(crate) fn list_roles(
        &self,
        stmt: Option<&ListRoles>,
        users: bool,
        request: &Request,
    ) -> Result<Outcome> {
        self.logged_in(request)?;
        let outcome = self.run_internal(
            "SELECT role, can_login, is_superuser FROM system_auth.roles",
            Vec::new(),
            None,
        )?;
        let ResultBody::Rows(stored) = outcome.body else {
            return Ok(Outcome::void());
        };
        let mut roles: Vec<(String, bool, bool)> = stored
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
        roles.sort();
        if let Some(of) = stmt.and_then(|s| s.of.as_ref()) {
            roles.retain(|(n, _, _)| n == of.as_str());
        }
        if users {
            roles.retain(|(_, login, _)| *login);
        }
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
        Ok(Outcome::rows(Rows {
            metadata: RowsMetadata {
                columns: ColumnsMetadata::Specs(specs),
                paging_state: None,
                new_metadata_id: None,
            },
            rows,
        }))
    }
}

/// The options of CREATE/ALTER ROLE (or USER).
struct RoleOptions {
    password: Option<String>,
    hashed_password: Option<String>,
    login: Option<bool>,
    superuser: Option<bool>,
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
                RoleOption::HashedPassword(h) => out.hashed_password = Some(h.clone()),
                RoleOption::Login(l) => out.login = Some(*l),
                RoleOption::Superuser(s) => out.superuser = Some(*s),
                RoleOption::GeneratedPassword => {
                    return Err(QueryError::invalid("GENERATED PASSWORD is not supported"))
                }
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
