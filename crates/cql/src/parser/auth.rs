//! Roles, users, permissions, and DESCRIBE.

use super::Parser;
use crate::ast::{
    AlterRole, CreateRole, Describe, DescribeTarget, DropRole, Ident, ListPermissions, ListRoles,
    Permission, PermissionChange, Permissions, Resource, RoleChange, RoleKind, RoleOption,
    Statement,
};
use crate::error::{ParseError, Result};
use crate::lexer::TokenKind;

fn permission(word: &str) -> Option<Permission> {
    Some(match word {
        "create" => Permission::Create,
        "alter" => Permission::Alter,
        "drop" => Permission::Drop,
        "select" => Permission::Select,
        "modify" => Permission::Modify,
        "authorize" => Permission::Authorize,
        "describe" => Permission::Describe,
        "execute" => Permission::Execute,
        "unmask" => Permission::Unmask,
        "select_masked" => Permission::SelectMasked,
        _ => return None,
    })
}

impl Parser {
    fn role_kind(&mut self) -> Result<RoleKind> {
        if self.eat_kw("user") {
            return Ok(RoleKind::User);
        }
        self.expect_kw("role")?;
        Ok(RoleKind::Role)
    }

    pub(crate) fn create_role(&mut self) -> Result<CreateRole> {
        let kind = self.role_kind()?;
        let if_not_exists = self.if_not_exists();
        let name = self.role_name()?;
        let options = self.role_options(kind)?;
        Ok(CreateRole {
            kind,
            if_not_exists,
            name,
            options,
        })
    }

    pub(crate) fn alter_role(&mut self) -> Result<AlterRole> {
        let kind = self.role_kind()?;
        let if_exists = self.if_exists();
        let name = self.role_name()?;
        let options = self.role_options(kind)?;
        Ok(AlterRole {
            kind,
            if_exists,
            name,
            options,
        })
    }

    pub(crate) fn drop_role(&mut self) -> Result<DropRole> {
        let kind = self.role_kind()?;
        let if_exists = self.if_exists();
        let name = self.role_name()?;
        Ok(DropRole {
            kind,
            if_exists,
            name,
        })
    }

    fn role_options(&mut self, kind: RoleKind) -> Result<Vec<RoleOption>> {
        if kind == RoleKind::User {
            return self.user_options();
        }
        if !self.eat_kw("with") {
            return Ok(Vec::new());
        }
        let mut access = AccessBuilders::default();
        let options = self.and_separated(|p| p.role_option(&mut access))?;
        check_role_options(&options)?;
        Ok(options)
    }

    /// `[WITH [HASHED] PASSWORD 'p'] [SUPERUSER | NOSUPERUSER]`.
    fn user_options(&mut self) -> Result<Vec<RoleOption>> {
        let mut options = Vec::new();
        if self.eat_kw("with") {
            let hashed = self.eat_kw("hashed");
            self.expect_kw("password")?;
            let password = self.string()?;
            options.push(match hashed {
                true => RoleOption::HashedPassword(password),
                false => RoleOption::Password(password),
            });
        }
        if self.eat_kw("superuser") {
            options.push(RoleOption::Superuser(true));
        } else if self.eat_kw("nosuperuser") {
            options.push(RoleOption::Superuser(false));
        }
        Ok(options)
    }

    fn role_option(&mut self, access: &mut AccessBuilders) -> Result<RoleOption> {
        // Cassandra 5.0's grammar has no GENERATED PASSWORD: like any
        // unknown word here, it is no viable alternative.
        if self.eat_kw("access") {
            return self.access_option(access);
        }
        let hashed = self.eat_kw("hashed");
        let word = self.peek().value.clone();
        let known = self.peek().kind == TokenKind::Ident
            && matches!(
                word.as_str(),
                "password" | "login" | "superuser" | "options"
            );
        if !known || (hashed && word != "password") {
            return Err(self.no_viable());
        }
        self.advance();
        self.expect_sym("=")?;
        Ok(match word.as_str() {
            "password" if hashed => RoleOption::HashedPassword(self.string()?),
            "password" => RoleOption::Password(self.string()?),
            "login" => RoleOption::Login(self.boolean()?),
            "superuser" => RoleOption::Superuser(self.boolean()?),
            _ => RoleOption::Options(self.literal_map()?),
        })
    }

    /// After ACCESS: `TO [ALL] DATACENTERS {..}` or `FROM [ALL] CIDRS {..}`.
    fn access_option(&mut self, access: &mut AccessBuilders) -> Result<RoleOption> {
        let datacenters = self.eat_kw("to");
        if !datacenters {
            self.expect_kw("from")?;
        }
        let all = self.eat_kw("all");
        self.expect_kw(if datacenters { "datacenters" } else { "cidrs" })?;
        let builder = match datacenters {
            true => &mut access.datacenters,
            false => &mut access.cidrs,
        };
        let names = match all {
            true => {
                builder
                    .all(datacenters)
                    .map_err(|e| self.refused_by_action(e))?;
                None
            }
            false => {
                if self.is_sym("{") && self.peek_at(1).kind == TokenKind::String {
                    builder.add().map_err(|e| self.refused_by_action(e))?;
                }
                Some(self.delimited(("{", "}"), false, Parser::string)?)
            }
        };
        Ok(match datacenters {
            true => RoleOption::AccessToDatacenters(names),
            false => RoleOption::AccessFromCidrs(names),
        })
    }

    fn boolean(&mut self) -> Result<bool> {
        if self.eat_kw("true") {
            return Ok(true);
        }
        if self.eat_kw("false") {
            return Ok(false);
        }
        Err(self.mismatch("BOOLEAN"))
    }

    // ------------------------------------------------------------ GRANT, REVOKE, LIST

    /// A permission list follows (rather than a role name).
    fn at_permissions(&self) -> bool {
        let word = self.peek().value.as_str();
        let is_word = self.peek().kind == TokenKind::Ident;
        let next_fits = self.is_kw_at(1, "on")
            || self.is_kw_at(1, "permission")
            || self.is_kw_at(1, "permissions")
            || self.is_kw_at(1, "of")
            || self.is_kw_at(1, "norecursive")
            || self.peek_at(1).kind == TokenKind::Eof
            || self.is_sym_at(1, ";");
        is_word && (word == "all" || permission(word).is_some()) && next_fits
    }

    fn permissions(&mut self) -> Result<Permissions> {
        if self.eat_kw("all") {
            self.eat_kw("permissions");
            return Ok(Permissions::All);
        }
        let found = permission(&self.peek().value).filter(|_| self.peek().kind == TokenKind::Ident);
        let Some(permission) = found else {
            return Err(self.no_viable());
        };
        self.advance();
        self.eat_kw("permission");
        Ok(Permissions::One(permission))
    }

    pub(crate) fn grant(&mut self) -> Result<Statement> {
        self.expect_kw("grant")?;
        if !self.at_permissions() {
            let role = self.role_name()?;
            self.expect_kw("to")?;
            let grantee = self.role_name()?;
            return Ok(Statement::GrantRole(RoleChange { role, grantee }));
        }
        let (permissions, resource) = self.permissions_on()?;
        self.expect_kw("to")?;
        let role = self.role_name()?;
        Ok(Statement::GrantPermissions(PermissionChange {
            permissions,
            resource,
            role,
        }))
    }

    pub(crate) fn revoke(&mut self) -> Result<Statement> {
        self.expect_kw("revoke")?;
        if !self.at_permissions() {
            let role = self.role_name()?;
            self.expect_kw("from")?;
            let grantee = self.role_name()?;
            return Ok(Statement::RevokeRole(RoleChange { role, grantee }));
        }
        let (permissions, resource) = self.permissions_on()?;
        self.expect_kw("from")?;
        let role = self.role_name()?;
        Ok(Statement::RevokePermissions(PermissionChange {
            permissions,
            resource,
            role,
        }))
    }

    fn permissions_on(&mut self) -> Result<(Permissions, Resource)> {
        let permissions = self.permissions()?;
        self.expect_kw("on")?;
        Ok((permissions, self.resource()?))
    }

    fn resource(&mut self) -> Result<Resource> {
        if self.is_kw("all") {
            if let Some(resource) = self.all_resource()? {
                return Ok(resource);
            }
        }
        if self.eat_kw("keyspace") {
            return Ok(Resource::Keyspace(self.ident()?));
        }
        if self.eat_kw("table") {
            return Ok(Resource::Table(self.qualified_name()?));
        }
        let named = self.peek_at(1).kind != TokenKind::Symbol;
        if named && self.eat_kw("role") {
            return Ok(Resource::Role(self.role_name()?));
        }
        if named && self.eat_kw("function") {
            let name = self.function_name()?;
            let argument_types = self.signature()?;
            return Ok(Resource::Function {
                name,
                argument_types,
            });
        }
        if self.peek_at(1).kind == TokenKind::String {
            if self.eat_kw("mbean") {
                return Ok(Resource::Mbean(self.string()?));
            }
            if self.eat_kw("mbeans") {
                return Ok(Resource::Mbeans(self.string()?));
            }
        }
        Ok(Resource::Table(self.qualified_name()?))
    }

    /// `ALL KEYSPACES`, `ALL ROLES`, `ALL FUNCTIONS [IN KEYSPACE ks]`, `ALL MBEANS`.
    fn all_resource(&mut self) -> Result<Option<Resource>> {
        let resource = match self.peek_at(1).value.as_str() {
            "keyspaces" => Resource::AllKeyspaces,
            "roles" => Resource::AllRoles,
            "mbeans" => Resource::AllMbeans,
            "functions" => Resource::AllFunctions { keyspace: None },
            _ => return Ok(None),
        };
        self.pos += 2;
        if resource == (Resource::AllFunctions { keyspace: None }) && self.eat_kw("in") {
            self.expect_kw("keyspace")?;
            let keyspace = Some(self.ident()?);
            return Ok(Some(Resource::AllFunctions { keyspace }));
        }
        Ok(Some(resource))
    }

    pub(crate) fn list(&mut self) -> Result<Statement> {
        self.expect_kw("list")?;
        if self.eat_kw("users") {
            return Ok(Statement::ListUsers);
        }
        if self.eat_kw("roles") {
            let of = self.of_role()?;
            let recursive = !self.eat_kw("norecursive");
            return Ok(Statement::ListRoles(ListRoles { of, recursive }));
        }
        let permissions = self.permissions()?;
        let resource = match self.eat_kw("on") {
            true => Some(self.resource()?),
            false => None,
        };
        let role = self.of_role()?;
        let recursive = !self.eat_kw("norecursive");
        Ok(Statement::ListPermissions(ListPermissions {
            permissions,
            resource,
            role,
            recursive,
        }))
    }

    fn of_role(&mut self) -> Result<Option<Ident>> {
        match self.eat_kw("of") {
            true => Ok(Some(self.role_name()?)),
            false => Ok(None),
        }
    }

    // ------------------------------------------------------------ DESCRIBE

    pub(crate) fn describe(&mut self) -> Result<Describe> {
        if !self.eat_kw("describe") {
            self.expect_kw("desc")?;
        }
        let target = self.describe_target()?;
        let with_internals = self.eat_kws(&["with", "internals"]);
        Ok(Describe {
            target,
            with_internals,
        })
    }

    fn describe_target(&mut self) -> Result<DescribeTarget> {
        let word = match self.peek().kind {
            TokenKind::Ident if !self.is_sym_at(1, ".") => self.peek().value.clone(),
            _ => String::new(),
        };
        let named = self.is_ident_at(1);
        let target = match word.as_str() {
            "cluster" => DescribeTarget::Cluster,
            "keyspaces" => DescribeTarget::Keyspaces,
            "tables" => DescribeTarget::Tables,
            "types" => DescribeTarget::Types,
            "functions" => DescribeTarget::Functions,
            "aggregates" => DescribeTarget::Aggregates,
            "schema" => DescribeTarget::Schema { full: false },
            "full" => {
                self.advance();
                self.expect_kw("schema")?;
                return Ok(DescribeTarget::Schema { full: true });
            }
            "only" | "keyspace" => return self.describe_keyspace(),
            "table" | "columnfamily" | "index" | "materialized" => {
                return self.describe_named(&word)
            }
            // Unreserved words: `DESCRIBE type` alone names an object called `type`.
            "type" | "function" | "aggregate" if named => return self.describe_named(&word),
            _ => return Ok(DescribeTarget::Name(self.qualified_name()?)),
        };
        self.advance();
        Ok(target)
    }

    fn describe_keyspace(&mut self) -> Result<DescribeTarget> {
        let only = self.eat_kw("only");
        self.expect_kw("keyspace")?;
        let name = match self.is_ident_at(0) {
            true => Some(self.ident()?),
            false => None,
        };
        Ok(DescribeTarget::Keyspace { only, name })
    }

    /// `TABLE t`, `TYPE t`, `MATERIALIZED VIEW v`, ...
    fn describe_named(&mut self, word: &str) -> Result<DescribeTarget> {
        self.advance();
        if word == "materialized" {
            self.expect_kw("view")?;
        }
        let name = match word {
            "function" | "aggregate" => self.function_name()?,
            _ => self.qualified_name()?,
        };
        Ok(match word {
            "table" | "columnfamily" => DescribeTarget::Table(name),
            "index" => DescribeTarget::Index(name),
            "type" => DescribeTarget::Type(name),
            "function" => DescribeTarget::Function(name),
            "aggregate" => DescribeTarget::Aggregate(name),
            _ => DescribeTarget::MaterializedView(name),
        })
    }
}

/// Cassandra's `RoleOptions` as its grammar fills them: each option once
/// (ACCESS clauses excepted), and not both a password and a hashed one.
/// What Cassandra's `DCPermissions.Builder` and `CIDRPermissions.Builder`
/// hold while a role's options are parsed: whether ALL or some names were
/// given. Mixing the two throws from the grammar's action.
#[derive(Default)]
struct AccessBuilders {
    datacenters: AccessBuilder,
    cidrs: AccessBuilder,
}

#[derive(Default)]
struct AccessBuilder {
    all: bool,
    names: bool,
}

impl AccessBuilder {
    /// A name of `{...}`; refused after ALL.
    fn add(&mut self) -> std::result::Result<(), &'static str> {
        if self.all {
            return Err("All has been set");
        }
        self.names = true;
        Ok(())
    }

    /// ALL; refused after names (`datacenters`: which builder says it).
    fn all(&mut self, datacenters: bool) -> std::result::Result<(), &'static str> {
        if self.names {
            return Err(match datacenters {
                true => "DCs have already been set",
                false => "CIDR Groups have already been set",
            });
        }
        self.all = true;
        Ok(())
    }
}

fn check_role_options(options: &[RoleOption]) -> Result<()> {
    let name = |option: &RoleOption| match option {
        RoleOption::Password(_) => Some("PASSWORD"),
        RoleOption::HashedPassword(_) => Some("HASHED_PASSWORD"),
        RoleOption::Login(_) => Some("LOGIN"),
        RoleOption::Superuser(_) => Some("SUPERUSER"),
        RoleOption::Options(_) => Some("OPTIONS"),
        RoleOption::AccessToDatacenters(_) | RoleOption::AccessFromCidrs(_) => None,
    };
    for (i, option) in options.iter().enumerate() {
        let Some(option_name) = name(option) else {
            continue;
        };
        if options[..i].iter().any(|o| name(o) == Some(option_name)) {
            return Err(ParseError::unpositioned(format!(
                "Multiple definition for property '{option_name}'"
            )));
        }
    }
    let has = |wanted: &str| options.iter().any(|o| name(o) == Some(wanted));
    if has("PASSWORD") && has("HASHED_PASSWORD") {
        return Err(ParseError::unpositioned(
            "Options 'password' and 'hashed password' are mutually exclusive",
        ));
    }
    Ok(())
}
