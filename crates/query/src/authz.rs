//! CassandraAuthorizer: permissions on resources, kept in
//! `system_auth.role_permissions` as Cassandra keeps them (one row per role
//! and resource, the permission names in a `set<text>`), and checked before
//! every client statement when `authorizer: CassandraAuthorizer` is set.
//!
//! Resources are named as Cassandra names them in storage (`data`,
//! `data/ks`, `data/ks/*`, `data/ks/t`, `roles`, `roles/r`, `functions`,
//! `functions/ks`, `mbean`, `mbean/name`) and shown as it shows them in
//! messages and LIST PERMISSIONS (`<table ks.t>`). A permission held on a
//! resource holds on everything below it (`Resource::chain`); a role holds
//! the permissions of every role granted to it; a superuser (directly or
//! through a granted role) holds every permission.
//!
//! What a statement needs is the pure function [`requirements`]; the
//! executor checks it against the user's [`Subject`] before running the
//! statement, from the permissions cache (`auth_cache`, Cassandra's
//! `PermissionsCache`: the permissions a user holds on one resource).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use rocksandra_cql::ast::{self, DropKind, Modification, Permission, Permissions, Statement};
use rocksandra_data::types::{CqlType, NativeType};
use rocksandra_data::Value;
use rocksandra_wire::{
    ColumnSpec, ColumnsMetadata, Consistency, ResultBody, Rows, RowsMetadata, TableSpec,
};

use crate::ctx::StatementCtx;
use crate::error::{QueryError, Result};
use crate::request::{Outcome, Request};
use crate::roles::{
    granted_roles, logged_in, role, run_internal, text_cell, text_set, text_value, user_roles,
};
use crate::schema::keyspace_of;
use crate::schema::{is_system_keyspace, Schema};

/// Every permission, in Cassandra's enum order (LIST PERMISSIONS sorts by it).
pub const PERMISSIONS: [Permission; 10] = Permission::ALL;

pub fn permission_from_name(name: &str) -> Option<Permission> {
    PERMISSIONS.into_iter().find(|p| p.name() == name)
}

const DATA_PERMISSIONS: &[Permission] = &[
    Permission::Create,
    Permission::Alter,
    Permission::Drop,
    Permission::Select,
    Permission::Modify,
    Permission::Authorize,
    Permission::Unmask,
    Permission::SelectMasked,
];
const TABLE_PERMISSIONS: &[Permission] = &[
    Permission::Alter,
    Permission::Drop,
    Permission::Select,
    Permission::Modify,
    Permission::Authorize,
    Permission::Unmask,
    Permission::SelectMasked,
];
const ALL_ROLES_PERMISSIONS: &[Permission] = &[
    Permission::Create,
    Permission::Alter,
    Permission::Drop,
    Permission::Authorize,
    Permission::Describe,
];
const ROLE_PERMISSIONS: &[Permission] = &[
    Permission::Alter,
    Permission::Drop,
    Permission::Authorize,
    Permission::Describe,
];
const FUNCTIONS_PERMISSIONS: &[Permission] = &[
    Permission::Create,
    Permission::Alter,
    Permission::Drop,
    Permission::Authorize,
    Permission::Execute,
];
const FUNCTION_PERMISSIONS: &[Permission] = &[
    Permission::Alter,
    Permission::Drop,
    Permission::Authorize,
    Permission::Execute,
];
const MBEAN_PERMISSIONS: &[Permission] = &[
    Permission::Select,
    Permission::Modify,
    Permission::Authorize,
    Permission::Describe,
    Permission::Execute,
];

/// Something permissions are granted on, as Cassandra's `IResource`s.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Resource {
    AllKeyspaces,
    Keyspace(String),
    /// Every table of a keyspace: what CREATE TABLE and the type statements
    /// need (`data/ks/*`).
    AllTables(String),
    Table(String, String),
    AllRoles,
    Role(String),
    AllFunctions,
    KeyspaceFunctions(String),
    /// A user-defined function or aggregate, by its CQL argument types.
    Function {
        keyspace: String,
        name: String,
        arguments: Vec<String>,
    },
    AllMbeans,
    Mbean(String),
}

impl Resource {
    /// The stored name (`resource` column of `role_permissions`).
    pub fn name(&self) -> String {
        match self {
            Resource::AllKeyspaces => "data".into(),
            Resource::Keyspace(k) => format!("data/{k}"),
            Resource::AllTables(k) => format!("data/{k}/*"),
            Resource::Table(k, t) => format!("data/{k}/{t}"),
            Resource::AllRoles => "roles".into(),
            Resource::Role(r) => format!("roles/{r}"),
            Resource::AllFunctions => "functions".into(),
            Resource::KeyspaceFunctions(k) => format!("functions/{k}"),
            Resource::Function {
                keyspace,
                name,
                arguments,
            } => format!("functions/{keyspace}/{name}[{}]", arguments.join("^")),
            Resource::AllMbeans => "mbean".into(),
            Resource::Mbean(m) => format!("mbean/{m}"),
        }
    }

    /// The resource a stored name names, if it is well formed.
    pub fn from_name(name: &str) -> Option<Resource> {
        let (root, rest) = match name.split_once('/') {
            Some((root, rest)) => (root, Some(rest)),
            None => (name, None),
        };
        Some(match (root, rest) {
            ("data", None) => Resource::AllKeyspaces,
            ("data", Some(rest)) => match rest.split_once('/') {
                None => Resource::Keyspace(rest.into()),
                Some((k, "*")) => Resource::AllTables(k.into()),
                Some((k, t)) if !t.contains('/') => Resource::Table(k.into(), t.into()),
                Some(_) => return None,
            },
            ("roles", None) => Resource::AllRoles,
            ("roles", Some(r)) => Resource::Role(r.into()),
            ("functions", None) => Resource::AllFunctions,
            ("functions", Some(rest)) => match rest.split_once('/') {
                None => Resource::KeyspaceFunctions(rest.into()),
                Some((k, f)) => {
                    let (name, args) = f.strip_suffix(']')?.split_once('[')?;
                    Resource::Function {
                        keyspace: k.into(),
                        name: name.into(),
                        arguments: args
                            .split('^')
                            .filter(|a| !a.is_empty())
                            .map(str::to_string)
                            .collect(),
                    }
                }
            },
            ("mbean", None) => Resource::AllMbeans,
            ("mbean", Some(m)) => Resource::Mbean(m.into()),
            _ => return None,
        })
    }

    pub fn parent(&self) -> Option<Resource> {
        match self {
            Resource::Keyspace(_) => Some(Resource::AllKeyspaces),
            Resource::AllTables(k) => Some(Resource::Keyspace(k.clone())),
            Resource::Table(k, _) => Some(Resource::AllTables(k.clone())),
            Resource::Role(_) => Some(Resource::AllRoles),
            Resource::KeyspaceFunctions(_) => Some(Resource::AllFunctions),
            Resource::Function { keyspace, .. } => {
                Some(Resource::KeyspaceFunctions(keyspace.clone()))
            }
            Resource::Mbean(_) => Some(Resource::AllMbeans),
            Resource::AllKeyspaces
            | Resource::AllRoles
            | Resource::AllFunctions
            | Resource::AllMbeans => None,
        }
    }

    /// The resource and its parents up to the root (`Resources.chain`).
    pub fn chain(&self) -> Vec<Resource> {
        let mut chain = vec![self.clone()];
        while let Some(parent) = chain.last().and_then(Resource::parent) {
            chain.push(parent);
        }
        chain
    }

    /// The permissions that can be granted on it.
    pub fn applicable_permissions(&self) -> &'static [Permission] {
        match self {
            Resource::AllKeyspaces | Resource::Keyspace(_) | Resource::AllTables(_) => {
                DATA_PERMISSIONS
            }
            Resource::Table(..) => TABLE_PERMISSIONS,
            Resource::AllRoles => ALL_ROLES_PERMISSIONS,
            Resource::Role(_) => ROLE_PERMISSIONS,
            Resource::AllFunctions | Resource::KeyspaceFunctions(_) => FUNCTIONS_PERMISSIONS,
            Resource::Function { .. } => FUNCTION_PERMISSIONS,
            Resource::AllMbeans | Resource::Mbean(_) => MBEAN_PERMISSIONS,
        }
    }

    /// Cassandra's class name, as its messages show it.
    fn type_name(&self) -> &'static str {
        match self {
            Resource::AllKeyspaces
            | Resource::Keyspace(_)
            | Resource::AllTables(_)
            | Resource::Table(..) => "DataResource",
            Resource::AllRoles | Resource::Role(_) => "RoleResource",
            Resource::AllFunctions | Resource::KeyspaceFunctions(_) | Resource::Function { .. } => {
                "FunctionResource"
            }
            Resource::AllMbeans | Resource::Mbean(_) => "JMXResource",
        }
    }

    /// The resource a GRANT, REVOKE or LIST names; a table without a
    /// keyspace is in the session's keyspace.
    pub fn from_ast(resource: &ast::Resource, session_ks: Option<&str>) -> Result<Resource> {
        Ok(match resource {
            ast::Resource::AllKeyspaces => Resource::AllKeyspaces,
            ast::Resource::Keyspace(k) => Resource::Keyspace(k.as_str().into()),
            ast::Resource::Table(name) => Resource::Table(
                keyspace_of(name, session_ks)?.into(),
                name.name.as_str().into(),
            ),
            ast::Resource::AllRoles => Resource::AllRoles,
            ast::Resource::Role(r) => Resource::Role(r.as_str().into()),
            ast::Resource::AllFunctions { keyspace: None } => Resource::AllFunctions,
            ast::Resource::AllFunctions { keyspace: Some(k) } => {
                Resource::KeyspaceFunctions(k.as_str().into())
            }
            ast::Resource::Function {
                name,
                argument_types,
            } => {
                let keyspace = name.keyspace.as_ref().ok_or_else(|| {
                    QueryError::invalid(
                        "In this context function name must be explictly qualified by a keyspace",
                    )
                })?;
                Resource::Function {
                    keyspace: keyspace.as_str().into(),
                    name: name.name.as_str().into(),
                    arguments: argument_types.iter().map(|t| t.to_string()).collect(),
                }
            }
            ast::Resource::AllMbeans => Resource::AllMbeans,
            ast::Resource::Mbean(m) | ast::Resource::Mbeans(m) => Resource::Mbean(m.clone()),
        })
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Resource::AllKeyspaces => write!(f, "<all keyspaces>"),
            Resource::Keyspace(k) => write!(f, "<keyspace {k}>"),
            Resource::AllTables(k) => write!(f, "<all tables in {k}>"),
            Resource::Table(k, t) => write!(f, "<table {k}.{t}>"),
            Resource::AllRoles => write!(f, "<all roles>"),
            Resource::Role(r) => write!(f, "<role {r}>"),
            Resource::AllFunctions => write!(f, "<all functions>"),
            Resource::KeyspaceFunctions(k) => write!(f, "<all functions in {k}>"),
            Resource::Function {
                keyspace,
                name,
                arguments,
            } => write!(f, "<function {keyspace}.{name}({})>", arguments.join(", ")),
            Resource::AllMbeans => write!(f, "<all mbeans>"),
            Resource::Mbean(m) => write!(f, "<mbean {m}>"),
        }
    }
}

/// The permissions of a GRANT or REVOKE that apply to `resource`, in
/// Cassandra's order; a syntax error when none does (Cassandra refuses
/// `GRANT MODIFY ON ROLE r` while parsing).
pub fn applicable(permissions: Permissions, resource: &Resource) -> Result<Vec<Permission>> {
    let applicable = resource.applicable_permissions();
    let out: Vec<Permission> = match permissions {
        Permissions::All => applicable.to_vec(),
        Permissions::One(p) => applicable.iter().copied().filter(|a| *a == p).collect(),
    };
    if out.is_empty() {
        return Err(QueryError::syntax(format!(
            "Resource type {} does not support any of the requested permissions",
            resource.type_name()
        )));
    }
    Ok(out)
}

/// System tables any logged-in user may read (drivers, cqlsh and tools
/// need them), as Cassandra 5.0's `ClientState.READABLE_SYSTEM_RESOURCES`.
pub fn is_readable_system_table(keyspace: &str, table: &str) -> bool {
    match keyspace {
        "system" => matches!(
            table,
            "local" | "peers" | "peers_v2" | "size_estimates" | "table_estimates"
        ),
        "system_traces" => matches!(table, "events" | "sessions"),
        "system_schema" | "system_virtual_schema" => true,
        _ => false,
    }
}

/// What a statement needs the user to hold, every pair required, checked
/// before it runs. Statements that decide themselves (ALTER ROLE, LIST
/// ROLES, LIST PERMISSIONS) and statements on objects that do not exist
/// (which fail as they would without authorization) need nothing here.
/// Schema statements on system keyspaces need nothing either: they are
/// refused for everyone.
pub fn requirements(
    statement: &Statement,
    schema: &Schema,
    session_ks: Option<&str>,
) -> Result<Vec<(Permission, Resource)>> {
    let on = Resources { schema, session_ks };
    let table = |name: &ast::QualifiedName| on.table(name);
    Ok(match statement {
        Statement::Select(s) => {
            let mut out = on.select(s)?;
            out.extend(on.function_calls(s)?);
            out
        }
        Statement::Insert(i) => modification(&i.table, i.if_not_exists, &table)?,
        Statement::Update(u) => modification(&u.table, u.condition.is_some(), &table)?,
        Statement::Delete(d) => modification(&d.table, d.condition.is_some(), &table)?,
        Statement::Batch(b) => {
            let mut out = Vec::new();
            for m in &b.statements {
                let (name, conditional) = modification_target(m);
                out.extend(modification(name, conditional, &table)?);
            }
            out
        }
        Statement::Truncate(name) => {
            let keyspace = keyspace_of(name, session_ks)?;
            vec![(
                Permission::Modify,
                Resource::Table(keyspace.into(), name.name.as_str().into()),
            )]
        }
        Statement::CreateKeyspace(_) => vec![(Permission::Create, Resource::AllKeyspaces)],
        // Cassandra lets ALTER KEYSPACE change a replicated system keyspace.
        Statement::AlterKeyspace(s) => match s.name.as_str() {
            k @ ("system_auth" | "system_traces" | "system_distributed") => {
                vec![(Permission::Alter, Resource::Keyspace(k.into()))]
            }
            k => on_keyspace(Permission::Alter, k),
        },
        Statement::CreateTable(s) => on.all_tables(Permission::Create, &s.name)?,
        Statement::CreateType(s) => on.all_tables(Permission::Create, &s.name)?,
        Statement::AlterType(s) => on.all_tables(Permission::Alter, &s.name)?,
        Statement::AlterTable(s) => on.named_table(Permission::Alter, &s.table)?,
        Statement::CreateIndex(s) => on.named_table(Permission::Alter, &s.table)?,
        Statement::CreateMaterializedView(s) => on.named_table(Permission::Alter, &s.base_table)?,
        Statement::AlterMaterializedView(s) => on.alter_on_view_base(&s.name)?,
        Statement::Drop(d) => on.drop(d)?,
        Statement::CreateRole(_) => vec![(Permission::Create, Resource::AllRoles)],
        Statement::DropRole(s) => vec![(Permission::Drop, Resource::Role(s.name.as_str().into()))],
        Statement::GrantRole(s) | Statement::RevokeRole(s) => {
            vec![(
                Permission::Authorize,
                Resource::Role(s.role.as_str().into()),
            )]
        }
        Statement::GrantPermissions(s) | Statement::RevokePermissions(s) => {
            let resource = Resource::from_ast(&s.resource, session_ks)?;
            let permissions = applicable(s.permissions, &resource)?;
            let mut out = vec![(Permission::Authorize, resource.clone())];
            out.extend(permissions.into_iter().map(|p| (p, resource.clone())));
            out
        }
        Statement::Use(_)
        | Statement::Describe(_)
        | Statement::AlterRole(_)
        | Statement::ListRoles(_)
        | Statement::ListUsers
        | Statement::ListPermissions(_)
        | Statement::CreateTrigger(_)
        | Statement::DropTrigger(_) => Vec::new(),
        Statement::CreateFunction(s) => {
            let keyspace = keyspace_of(&s.name, session_ks)?;
            let types: Vec<rocksandra_cql::TypeExpr> =
                s.arguments.iter().map(|(_, t)| t.clone()).collect();
            on.create_routine(keyspace, &s.name, &types, s.or_replace)
        }
        Statement::CreateAggregate(s) => {
            let keyspace = keyspace_of(&s.name, session_ks)?;
            let mut out = on.create_routine(keyspace, &s.name, &s.argument_types, s.or_replace);
            let mut state_types = vec![s.state_type.clone()];
            state_types.extend(s.argument_types.iter().cloned());
            out.push((
                Permission::Execute,
                function_resource(keyspace, s.state_function.as_str(), &state_types),
            ));
            if let Some(f) = &s.final_function {
                let types = std::slice::from_ref(&s.state_type);
                out.push((
                    Permission::Execute,
                    function_resource(keyspace, f.as_str(), types),
                ));
            }
            out
        }
        Statement::DropFunction(s) => {
            let keyspace = keyspace_of(&s.name, session_ks)?;
            match &s.argument_types {
                Some(types) => vec![(
                    Permission::Drop,
                    function_resource(keyspace, s.name.name.as_str(), types),
                )],
                None => Vec::new(),
            }
        }
    })
}

/// Whether a user-defined function or aggregate of this signature (CQL
/// type texts) exists.
fn function_exists(schema: &Schema, keyspace: &str, name: &str, arguments: &[String]) -> bool {
    schema.keyspace(keyspace).is_some_and(|ks| {
        let same = |n: &str, t: &[rocksandra_data::types::CqlType]| {
            n == name
                && t.iter()
                    .map(crate::udf::type_text)
                    .eq(arguments.iter().cloned())
        };
        ks.functions
            .iter()
            .any(|f| same(&f.name, &f.argument_types))
            || ks
                .aggregates
                .iter()
                .any(|a| same(&a.name, &a.argument_types))
    })
}

/// A user-defined function or aggregate as a resource.
fn function_resource(keyspace: &str, name: &str, types: &[rocksandra_cql::TypeExpr]) -> Resource {
    Resource::Function {
        keyspace: keyspace.into(),
        name: name.into(),
        arguments: types.iter().map(|t| t.to_string()).collect(),
    }
}

/// `permission` on a keyspace, unless it is a system keyspace.
fn on_keyspace(permission: Permission, keyspace: &str) -> Vec<(Permission, Resource)> {
    match is_system_keyspace(keyspace) {
        true => Vec::new(),
        false => vec![(permission, Resource::Keyspace(keyspace.into()))],
    }
}

/// The resources statements name, resolved against the schema and the
/// session's keyspace.
struct Resources<'a> {
    schema: &'a Schema,
    session_ks: Option<&'a str>,
}

impl Resources<'_> {
    /// CREATE on the keyspace's functions, or ALTER on the function that
    /// OR REPLACE replaces.
    fn create_routine(
        &self,
        keyspace: &str,
        name: &ast::QualifiedName,
        types: &[rocksandra_cql::TypeExpr],
        or_replace: bool,
    ) -> Vec<(Permission, Resource)> {
        let text: Vec<String> = types.iter().map(|t| t.to_string()).collect();
        let exists = function_exists(self.schema, keyspace, name.name.as_str(), &text);
        if exists && or_replace {
            return vec![(
                Permission::Alter,
                function_resource(keyspace, name.name.as_str(), types),
            )];
        }
        vec![(
            Permission::Create,
            Resource::KeyspaceFunctions(keyspace.into()),
        )]
    }

    /// The table `name`, if it exists.
    fn table(&self, name: &ast::QualifiedName) -> Result<Option<Resource>> {
        let keyspace = keyspace_of(name, self.session_ks)?;
        Ok(self
            .schema
            .table(keyspace, name.name.as_str())
            .map(|_| Resource::Table(keyspace.into(), name.name.as_str().into())))
    }

    /// `permission` on the table `name`, if it exists.
    fn on_table(
        &self,
        permission: Permission,
        name: &ast::QualifiedName,
    ) -> Result<Vec<(Permission, Resource)>> {
        Ok(self
            .table(name)?
            .map(|r| (permission, r))
            .into_iter()
            .collect())
    }

    /// `permission` on the table `name`, existing or not (schema statements
    /// are authorized before the table is looked up).
    fn named_table(
        &self,
        permission: Permission,
        name: &ast::QualifiedName,
    ) -> Result<Vec<(Permission, Resource)>> {
        let keyspace = keyspace_of(name, self.session_ks)?;
        Ok(match is_system_keyspace(keyspace) {
            true => Vec::new(),
            false => vec![(
                permission,
                Resource::Table(keyspace.into(), name.name.as_str().into()),
            )],
        })
    }

    /// `permission` on every table of the keyspace (CREATE, ALTER and DROP
    /// of tables and types).
    fn all_tables(
        &self,
        permission: Permission,
        name: &ast::QualifiedName,
    ) -> Result<Vec<(Permission, Resource)>> {
        let keyspace = keyspace_of(name, self.session_ks)?;
        Ok(match is_system_keyspace(keyspace) {
            true => Vec::new(),
            false => vec![(permission, Resource::AllTables(keyspace.into()))],
        })
    }

    /// The base table of the view `name`, if it is one.
    fn view_base(&self, keyspace: &str, name: &str) -> Option<Resource> {
        let base = &self.schema.table(keyspace, name)?.view.as_ref()?.base_table;
        Some(Resource::Table(keyspace.into(), base.clone()))
    }

    /// ALTER on the base table of the view `name` (altering or dropping it).
    fn alter_on_view_base(&self, name: &ast::QualifiedName) -> Result<Vec<(Permission, Resource)>> {
        let keyspace = keyspace_of(name, self.session_ks)?;
        Ok(self
            .view_base(keyspace, name.name.as_str())
            .map(|base| (Permission::Alter, base))
            .into_iter()
            .collect())
    }

    /// SELECT: nothing on readable system tables; on a view, SELECT on its
    /// base table.
    fn select(&self, s: &ast::Select) -> Result<Vec<(Permission, Resource)>> {
        let keyspace = keyspace_of(&s.table, self.session_ks)?;
        Ok(
            match is_readable_system_table(keyspace, s.table.name.as_str()) {
                true => Vec::new(),
                // Reading a view needs SELECT on its base table.
                false => match self.view_base(keyspace, s.table.name.as_str()) {
                    Some(base) => vec![(Permission::Select, base)],
                    None => self.on_table(Permission::Select, &s.table)?,
                },
            },
        )
    }

    /// EXECUTE on the user-defined functions and aggregates a selection
    /// calls (an aggregate's state and final functions too), as
    /// Cassandra's `SelectStatement.authorize`: every overload of the
    /// name taking that many arguments.
    fn function_calls(&self, s: &ast::Select) -> Result<Vec<(Permission, Resource)>> {
        let keyspace = keyspace_of(&s.table, self.session_ks)?;
        let mut out = Vec::new();
        if let ast::Selection::Selectors(selectors) = &s.selection {
            for selector in selectors {
                self.calls_in(&selector.expr, keyspace, &mut out);
            }
        }
        Ok(out)
    }

    fn calls_in(
        &self,
        expr: &ast::Expr,
        table_keyspace: &str,
        out: &mut Vec<(Permission, Resource)>,
    ) {
        let children: Vec<&ast::Expr> = match expr {
            ast::Expr::Function { name, args } => {
                self.user_routines(name, args.len(), table_keyspace, out);
                args.iter().collect()
            }
            ast::Expr::Cast { expr, .. }
            | ast::Expr::TypeHint { expr, .. }
            | ast::Expr::Negate(expr) => {
                vec![&**expr]
            }
            ast::Expr::Field { udt, .. } => vec![&**udt],
            ast::Expr::Element { collection, key } => vec![&**collection, &**key],
            ast::Expr::Binary { left, right, .. } => vec![&**left, &**right],
            _ => Vec::new(),
        };
        for child in children {
            self.calls_in(child, table_keyspace, out);
        }
    }

    fn user_routines(
        &self,
        name: &ast::QualifiedName,
        arity: usize,
        table_keyspace: &str,
        out: &mut Vec<(Permission, Resource)>,
    ) {
        let fname = name.name.as_str();
        let keyspace = match &name.keyspace {
            Some(k) if k.as_str() == "system" => return,
            Some(k) => k.as_str(),
            None if crate::functions::exists(fname) => return,
            None => table_keyspace,
        };
        let Some(ks) = self.schema.keyspace(keyspace) else {
            return;
        };
        let resource = |name: &str, types: &[CqlType]| Resource::Function {
            keyspace: keyspace.into(),
            name: name.into(),
            arguments: types.iter().map(crate::udf::type_text).collect(),
        };
        for routine in crate::functions::user::overloads(ks, fname) {
            if routine.types().len() != arity {
                continue;
            }
            match routine {
                crate::functions::user::Routine::Scalar(f) => {
                    out.push((Permission::Execute, resource(&f.name, &f.argument_types)));
                }
                crate::functions::user::Routine::Aggregate(a) => {
                    out.push((Permission::Execute, resource(&a.name, &a.argument_types)));
                    if let Ok((state, last)) = crate::functions::user::aggregate_functions(ks, a) {
                        for f in std::iter::once(state).chain(last) {
                            out.push((Permission::Execute, resource(&f.name, &f.argument_types)));
                        }
                    }
                }
            }
        }
    }

    /// DROP of a keyspace, table, type, index (ALTER on its table) or view
    /// (ALTER on its base table).
    fn drop(&self, d: &ast::DropObject) -> Result<Vec<(Permission, Resource)>> {
        Ok(match d.kind {
            DropKind::Keyspace => on_keyspace(Permission::Drop, d.name.name.as_str()),
            DropKind::Table => self.named_table(Permission::Drop, &d.name)?,
            DropKind::Type => self.all_tables(Permission::Drop, &d.name)?,
            DropKind::Index => {
                let keyspace = keyspace_of(&d.name, self.session_ks)?;
                let index = d.name.name.as_str();
                self.schema
                    .keyspace(keyspace)
                    .and_then(|k| {
                        k.tables
                            .values()
                            .find(|t| t.indexes.iter().any(|i| i.name == index))
                    })
                    .map(|t| {
                        (
                            Permission::Alter,
                            Resource::Table(keyspace.into(), t.name.clone()),
                        )
                    })
                    .into_iter()
                    .collect()
            }
            DropKind::MaterializedView => self.alter_on_view_base(&d.name)?,
        })
    }
}

/// The table a statement of a batch writes, and whether it is conditional.
pub fn modification_target(m: &Modification) -> (&ast::QualifiedName, bool) {
    match m {
        Modification::Insert(i) => (&i.table, i.if_not_exists),
        Modification::Update(u) => (&u.table, u.condition.is_some()),
        Modification::Delete(d) => (&d.table, d.condition.is_some()),
    }
}

/// INSERT, UPDATE and DELETE need MODIFY on the table, and SELECT too when
/// conditional (the condition reads the row).
fn modification(
    name: &ast::QualifiedName,
    conditional: bool,
    table: &dyn Fn(&ast::QualifiedName) -> Result<Option<Resource>>,
) -> Result<Vec<(Permission, Resource)>> {
    let Some(resource) = table(name)? else {
        return Ok(Vec::new());
    };
    let mut out = vec![(Permission::Modify, resource.clone())];
    if conditional {
        out.push((Permission::Select, resource));
    }
    Ok(out)
}

/// A logged-in user as the authorizer sees it: the roles it holds (its own
/// and those granted to it, transitively) and their permissions on the
/// resources it was built for (`subject`) and their parents; nothing is
/// held on any other.
#[derive(Clone, Debug, Default)]
pub struct Subject {
    pub name: String,
    pub roles: BTreeSet<String>,
    pub superuser: bool,
    /// Resource name -> permissions held on it, over all the roles, for
    /// the resources asked for and their parents.
    pub permissions: BTreeMap<String, BTreeSet<Permission>>,
}

impl Subject {
    /// The permissions held on exactly `resource` (not its parents).
    pub fn held_on(&self, resource: &Resource) -> BTreeSet<Permission> {
        if self.superuser {
            return resource.applicable_permissions().iter().copied().collect();
        }
        self.permissions
            .get(&resource.name())
            .cloned()
            .unwrap_or_default()
    }

    /// Whether `permission` is held on `resource` or one of its parents.
    pub fn holds(&self, permission: Permission, resource: &Resource) -> bool {
        self.superuser
            || resource
                .chain()
                .iter()
                .any(|r| self.held_on(r).contains(&permission))
    }

    pub fn ensure(&self, permission: Permission, resource: &Resource) -> Result<()> {
        match self.holds(permission, resource) {
            true => Ok(()),
            false => Err(QueryError::Unauthorized(format!(
                "User {} has no {} permission on {} or any of its parents",
                self.name,
                permission.name(),
                resource
            ))),
        }
    }
}

/// What role statements (Cassandra's `AuthenticationStatement`s) answer
/// for a missing permission.
pub(crate) fn insufficient_privileges(user: &str) -> QueryError {
    QueryError::Unauthorized(format!(
        "User {user} does not have sufficient privileges to perform the requested operation"
    ))
}

/// One row of LIST PERMISSIONS.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct PermissionDetails {
    role: String,
    resource_name: String,
    /// Sorts in Cassandra's enum order (`Permission`'s `Ord`).
    permission: Permission,
    resource: String,
}

fn set_of_text(items: &[&str]) -> rocksandra_wire::Value {
    let set = Value::Set(items.iter().map(|s| Value::Text((*s).into())).collect());
    rocksandra_wire::Value::Bytes(bytes::Bytes::from(set.to_bytes()))
}

fn rows_of(outcome: Outcome) -> Vec<Vec<Option<bytes::Bytes>>> {
    match outcome.body {
        ResultBody::Rows(rows) => rows.rows,
        _ => Vec::new(),
    }
}

pub fn authorizer_enabled(ctx: &StatementCtx<'_>) -> bool {
    ctx.settings.auth_config().cassandra_authorizer
}

/// Refuses a client statement the user may not run (CassandraAuthorizer).
pub(crate) fn authorize_statement(
    ctx: &StatementCtx<'_>,
    statement: &Statement,
    request: &Request,
) -> Result<()> {
    if request.internal || !authorizer_enabled(ctx) {
        return Ok(());
    }
    let schema = ctx.schema();
    let needed = requirements(statement, &schema, request.keyspace.as_deref())?;
    if needed.is_empty() {
        return Ok(());
    }
    let resources: Vec<Resource> = needed.iter().map(|(_, r)| r.clone()).collect();
    let subject = subject(ctx, request, &resources)?;
    for (permission, resource) in &needed {
        subject
            .ensure(*permission, resource)
            .map_err(|e| match statement {
                Statement::CreateRole(_)
                | Statement::DropRole(_)
                | Statement::GrantRole(_)
                | Statement::RevokeRole(_) => insufficient_privileges(&subject.name),
                _ => e,
            })?;
    }
    Ok(())
}

/// Refuses a statement of a BATCH message the user may not run.
pub(crate) fn authorize_modification(
    ctx: &StatementCtx<'_>,
    m: &Modification,
    session_ks: Option<&str>,
    request: &Request,
) -> Result<()> {
    if request.internal || !authorizer_enabled(ctx) {
        return Ok(());
    }
    let schema = ctx.schema();
    let (name, conditional) = modification_target(m);
    let keyspace = keyspace_of(name, session_ks)?;
    let Some(table) = schema.table(keyspace, name.name.as_str()) else {
        return Ok(());
    };
    let resource = Resource::Table(table.keyspace.clone(), table.name.clone());
    let subject = subject(ctx, request, std::slice::from_ref(&resource))?;
    subject.ensure(Permission::Modify, &resource)?;
    if conditional {
        subject.ensure(Permission::Select, &resource)?;
    }
    Ok(())
}

/// The request's user with its roles and the permissions it holds on
/// `resources` and their parents (from the roles and permissions caches).
pub(crate) fn subject(
    ctx: &StatementCtx<'_>,
    request: &Request,
    resources: &[Resource],
) -> Result<Subject> {
    let name = request
        .user
        .clone()
        .ok_or_else(|| QueryError::Unauthorized("You have not logged in".into()))?;
    let held = user_roles(ctx, &name)?;
    let superuser = held.iter().any(|r| r.is_superuser);
    let mut roles: BTreeSet<String> = held.iter().map(|r| r.name.clone()).collect();
    roles.insert(name.clone());
    let mut permissions: BTreeMap<String, BTreeSet<Permission>> = BTreeMap::new();
    if !superuser {
        for resource in resources.iter().flat_map(Resource::chain) {
            let resource = resource.name();
            if let std::collections::btree_map::Entry::Vacant(slot) = permissions.entry(resource) {
                let held = permissions_on(ctx, &name, &roles, slot.key())?;
                slot.insert(BTreeSet::clone(&held));
            }
        }
    }
    Ok(Subject {
        name,
        roles,
        superuser,
        permissions,
    })
}

/// What `user` (holding `roles`) holds on exactly the resource named
/// `resource`, through the permissions cache (Cassandra's
/// `CassandraAuthorizer.authorize`: each role's row, at
/// `auth_read_consistency_level`).
fn permissions_on(
    ctx: &StatementCtx<'_>,
    user: &str,
    roles: &BTreeSet<String>,
    resource: &str,
) -> Result<std::sync::Arc<BTreeSet<Permission>>> {
    let key = (user.to_string(), resource.to_string());
    let cache = &ctx.settings.auth_caches.permissions;
    cache.get(&key, ctx.now_millis(), |_| {
        load_permissions(ctx, roles, resource)
    })
}

/// What the permissions cache keeps of a user holding `roles` on the
/// resource named `resource`, read now.
pub(crate) fn load_permissions(
    ctx: &StatementCtx<'_>,
    roles: &BTreeSet<String>,
    resource: &str,
) -> Result<BTreeSet<Permission>> {
    let mut held = BTreeSet::new();
    for role in roles {
        held.extend(role_permissions_on(ctx, role, resource)?);
    }
    Ok(held)
}

/// The permissions stored for `role` on the resource named `resource`.
fn role_permissions_on(
    ctx: &StatementCtx<'_>,
    role: &str,
    resource: &str,
) -> Result<Vec<Permission>> {
    let rows = rows_of(run_internal(
        ctx,
        "SELECT permissions FROM system_auth.role_permissions WHERE role = ? AND resource = ?",
        vec![text_value(role), text_value(resource)],
        None,
        auth_read_level(ctx),
    )?);
    Ok(rows
        .first()
        .map(|r| text_set(r.first().and_then(Option::as_ref)))
        .unwrap_or_default()
        .iter()
        .filter_map(|p| permission_from_name(p))
        .collect())
}

/// The level grant and revoke read what a role already holds at
/// (Cassandra's `getExistingPermissions`), whatever the settings.
const EXISTING_PERMISSIONS_CONSISTENCY: Consistency = Consistency::LocalOne;

/// `auth_read_consistency_level`: CassandraAuthorizer reads permissions
/// (of any role, the default superuser's too) at it.
fn auth_read_level(ctx: &StatementCtx<'_>) -> Consistency {
    ctx.settings.auth_config().read_consistency
}

/// `auth_write_consistency_level`: CassandraAuthorizer writes at it.
fn auth_write_level(ctx: &StatementCtx<'_>) -> Consistency {
    ctx.settings.auth_config().write_consistency
}

/// The permissions stored for `role`, by resource name.
fn role_permissions(
    ctx: &StatementCtx<'_>,
    role: &str,
    consistency: Consistency,
) -> Result<Vec<(String, Vec<Permission>)>> {
    let rows = rows_of(run_internal(
        ctx,
        "SELECT resource, permissions FROM system_auth.role_permissions WHERE role = ?",
        vec![text_value(role)],
        None,
        consistency,
    )?);
    Ok(rows
        .iter()
        .map(|r| {
            let held = text_set(r.get(1).and_then(Option::as_ref))
                .iter()
                .filter_map(|p| permission_from_name(p))
                .collect();
            (text_cell(r.first().and_then(Option::as_ref)), held)
        })
        .collect())
}

/// Every stored grant: (role, resource name, permissions).
fn all_permission_rows(ctx: &StatementCtx<'_>) -> Result<Vec<(String, String, Vec<Permission>)>> {
    let rows = rows_of(run_internal(
        ctx,
        "SELECT role, resource, permissions FROM system_auth.role_permissions",
        Vec::new(),
        None,
        auth_read_level(ctx),
    )?);
    Ok(rows
        .iter()
        .map(|r| {
            let cell = |i: usize| r.get(i).and_then(Option::as_ref);
            let held = text_set(cell(2))
                .iter()
                .filter_map(|p| permission_from_name(p))
                .collect();
            (text_cell(cell(0)), text_cell(cell(1)), held)
        })
        .collect())
}

/// The permissions granted to `role` itself on the resource `name`.
fn held_on(ctx: &StatementCtx<'_>, role: &str, name: &str) -> Result<BTreeSet<Permission>> {
    Ok(
        role_permissions(ctx, role, EXISTING_PERMISSIONS_CONSISTENCY)?
            .into_iter()
            .filter(|(r, _)| r == name)
            .flat_map(|(_, p)| p)
            .collect(),
    )
}

/// Grants `permissions` on `resource` to `role`; returns those it did
/// not hold before.
pub(crate) fn grant(
    ctx: &StatementCtx<'_>,
    role: &str,
    permissions: &[Permission],
    resource: &Resource,
) -> Result<Vec<Permission>> {
    let name = resource.name();
    let held = held_on(ctx, role, &name)?;
    let new: Vec<Permission> = permissions
        .iter()
        .copied()
        .filter(|p| !held.contains(p))
        .collect();
    if !new.is_empty() {
        let names: Vec<&str> = new.iter().map(|p| p.name()).collect();
        run_internal(
            ctx,
            "UPDATE system_auth.role_permissions SET permissions = permissions + ? WHERE role = ? AND resource = ?",
            vec![set_of_text(&names), text_value(role), text_value(&name)],
            None,
            auth_write_level(ctx),
        )?;
    }
    Ok(new)
}

/// Revokes `permissions` on `resource` from `role`; returns those it held.
pub(crate) fn revoke(
    ctx: &StatementCtx<'_>,
    role: &str,
    permissions: &[Permission],
    resource: &Resource,
) -> Result<Vec<Permission>> {
    let name = resource.name();
    let held = held_on(ctx, role, &name)?;
    let revoked: Vec<Permission> = permissions
        .iter()
        .copied()
        .filter(|p| held.contains(p))
        .collect();
    if revoked.len() == held.len() && !held.is_empty() {
        run_internal(
            ctx,
            "DELETE FROM system_auth.role_permissions WHERE role = ? AND resource = ?",
            vec![text_value(role), text_value(&name)],
            None,
            auth_write_level(ctx),
        )?;
    } else if !revoked.is_empty() {
        let names: Vec<&str> = revoked.iter().map(|p| p.name()).collect();
        run_internal(
            ctx,
            "UPDATE system_auth.role_permissions SET permissions = permissions - ? WHERE role = ? AND resource = ?",
            vec![set_of_text(&names), text_value(role), text_value(&name)],
            None,
            auth_write_level(ctx),
        )?;
    }
    Ok(revoked)
}

/// Drops every permission granted to `role` (DROP ROLE). As Cassandra's
/// `revokeAllFrom`, a failure (too few replicas) is logged, not returned:
/// the role is gone either way.
pub(crate) fn revoke_all_from(ctx: &StatementCtx<'_>, role: &str) {
    let deleted = run_internal(
        ctx,
        "DELETE FROM system_auth.role_permissions WHERE role = ?",
        vec![text_value(role)],
        None,
        auth_write_level(ctx),
    );
    if let Err(e) = deleted {
        tracing::warn!("CassandraAuthorizer failed to revoke all permissions of {role}: {e}");
    }
}

/// Drops every permission granted on a resource whose stored name
/// `dropped` selects (a dropped keyspace, table or role). As Cassandra's
/// `revokeAllOn`, a failure is logged, not returned: the resource is gone.
pub(crate) fn revoke_all_on(ctx: &StatementCtx<'_>, dropped: impl Fn(&str) -> bool) {
    if let Err(e) = try_revoke_all_on(ctx, dropped) {
        tracing::warn!(
            "CassandraAuthorizer failed to revoke all permissions on a dropped resource: {e}"
        );
    }
}

fn try_revoke_all_on(ctx: &StatementCtx<'_>, dropped: impl Fn(&str) -> bool) -> Result<()> {
    for (role, resource, _) in all_permission_rows(ctx)? {
        if dropped(&resource) {
            run_internal(
                ctx,
                "DELETE FROM system_auth.role_permissions WHERE role = ? AND resource = ?",
                vec![text_value(&role), text_value(&resource)],
                None,
                auth_write_level(ctx),
            )?;
        }
    }
    Ok(())
}

/// After a schema statement ran (CassandraAuthorizer): the creator of a
/// keyspace or table gets every permission on it, and a dropped
/// keyspace or table takes its grants with it.
pub(crate) fn after_schema_change(
    ctx: &StatementCtx<'_>,
    statement: &Statement,
    request: &Request,
) -> Result<()> {
    let session_ks = request.keyspace.as_deref();
    let dropped = |prefix: String| {
        move |name: &str| name == prefix || name.starts_with(&format!("{prefix}/"))
    };
    match statement {
        Statement::CreateKeyspace(s) => {
            let keyspace = s.name.as_str();
            grant_to_creator(ctx, request, &Resource::Keyspace(keyspace.into()))?;
            grant_to_creator(ctx, request, &Resource::KeyspaceFunctions(keyspace.into()))?;
        }
        Statement::CreateTable(s) => {
            let keyspace = keyspace_of(&s.name, session_ks)?;
            let table = Resource::Table(keyspace.into(), s.name.name.as_str().into());
            grant_to_creator(ctx, request, &table)?;
        }
        Statement::Drop(d) if d.kind == DropKind::Keyspace => {
            let keyspace = d.name.name.as_str();
            let data = dropped(format!("data/{keyspace}"));
            let functions = dropped(format!("functions/{keyspace}"));
            revoke_all_on(ctx, |name| data(name) || functions(name));
        }
        Statement::CreateFunction(s) => {
            let keyspace = keyspace_of(&s.name, session_ks)?;
            let types: Vec<rocksandra_cql::TypeExpr> =
                s.arguments.iter().map(|(_, t)| t.clone()).collect();
            grant_to_creator(
                ctx,
                request,
                &function_resource(keyspace, s.name.name.as_str(), &types),
            )?;
        }
        Statement::CreateAggregate(s) => {
            let keyspace = keyspace_of(&s.name, session_ks)?;
            let resource = function_resource(keyspace, s.name.name.as_str(), &s.argument_types);
            grant_to_creator(ctx, request, &resource)?;
        }
        Statement::DropFunction(s) => {
            let keyspace = keyspace_of(&s.name, session_ks)?;
            let prefix = format!("functions/{keyspace}/{}[", s.name.name.as_str());
            let schema = ctx.schema();
            let gone = |name: &str| {
                name.starts_with(&prefix)
                    && matches!(Resource::from_name(name), Some(Resource::Function { keyspace, name, arguments })
                        if !function_exists(&schema, &keyspace, &name, &arguments))
            };
            revoke_all_on(ctx, gone);
        }
        Statement::Drop(d) if d.kind == DropKind::Table => {
            let keyspace = keyspace_of(&d.name, session_ks)?;
            let table = Resource::Table(keyspace.into(), d.name.name.as_str().into()).name();
            revoke_all_on(ctx, |name| name == table);
        }
        _ => {}
    }
    Ok(())
}

/// Cassandra's `grantPermissionsToCreator`: with CassandraAuthorizer,
/// the user that created a resource gets every permission on it.
pub(crate) fn grant_to_creator(
    ctx: &StatementCtx<'_>,
    request: &Request,
    resource: &Resource,
) -> Result<()> {
    if !authorizer_enabled(ctx) {
        return Ok(());
    }
    let Some(user) = &request.user else {
        return Ok(());
    };
    grant(ctx, user, resource.applicable_permissions(), resource)?;
    Ok(())
}

/// Whether a GRANT, REVOKE or LIST names a resource that exists.
fn resource_exists(ctx: &StatementCtx<'_>, resource: &Resource) -> Result<bool> {
    let schema = ctx.schema();
    Ok(match resource {
        Resource::AllKeyspaces
        | Resource::AllRoles
        | Resource::AllFunctions
        | Resource::AllMbeans
        | Resource::Mbean(_) => true,
        Resource::Keyspace(k) | Resource::AllTables(k) | Resource::KeyspaceFunctions(k) => {
            schema.keyspace(k).is_some()
        }
        Resource::Table(k, t) => schema.table(k, t).is_some(),
        Resource::Role(r) => role(ctx, r)?.is_some(),
        Resource::Function {
            keyspace,
            name,
            arguments,
        } => function_exists(&schema, keyspace, name, arguments),
    })
}

/// GRANT and REVOKE of permissions (the AUTHORIZE check ran before).
pub(crate) fn change_permissions(
    ctx: &StatementCtx<'_>,
    stmt: &ast::PermissionChange,
    request: &Request,
    grant: bool,
) -> Result<Outcome> {
    let resource = Resource::from_ast(&stmt.resource, request.keyspace.as_deref())?;
    let permissions = applicable(stmt.permissions, &resource)?;
    logged_in(ctx, request)?;
    let role = stmt.role.as_str();
    if crate::roles::role(ctx, role)?.is_none() {
        return Err(QueryError::invalid(format!("Role {role} doesn't exist")));
    }
    match &resource {
        Resource::Function { keyspace, .. } | Resource::KeyspaceFunctions(keyspace)
            if keyspace.as_str() == "system" =>
        {
            return Err(QueryError::invalid(
                "Altering permissions on builtin functions is not supported",
            ));
        }
        // Cassandra resolves the argument types in the function's keyspace
        // first, and fails as a configuration error without it.
        Resource::Function { keyspace, .. } if ctx.schema().keyspace(keyspace).is_none() => {
            return Err(QueryError::config(format!(
                "Keyspace {keyspace} doesn't exist"
            )));
        }
        _ => {}
    }
    if !resource_exists(ctx, &resource)? {
        return Err(QueryError::invalid(format!(
            "Resource {resource} doesn't exist"
        )));
    }
    let system = match &resource {
        Resource::Keyspace(k) | Resource::AllTables(k) | Resource::Table(k, _) => {
            is_system_keyspace(k) && !crate::system::is_virtual_in_cassandra(k)
        }
        _ => false,
    };
    let limited = |p: &Permission| {
        !matches!(
            p,
            Permission::Select | Permission::Describe | Permission::Alter
        )
    };
    if grant && system && permissions.iter().any(limited) {
        return Err(QueryError::Unauthorized(
            "Granting permissions on system keyspaces is strictly limited, this operation is not permitted"
                .into(),
        ));
    }
    if !authorizer_enabled(ctx) {
        let operation = if grant { "GRANT" } else { "REVOKE" };
        return Err(QueryError::invalid(format!(
            "{operation} operation is not supported by AllowAllAuthorizer"
        )));
    }
    let changed = match grant {
        true => self::grant(ctx, role, &permissions, &resource)?,
        false => revoke(ctx, role, &permissions, &resource)?,
    };
    let mut outcome = Outcome::void();
    let unchanged: Vec<&str> = permissions
        .iter()
        .filter(|p| !changed.contains(p))
        .map(|p| p.name())
        .collect();
    if !unchanged.is_empty() && permissions.len() != PERMISSIONS.len() {
        let what = match grant {
            true => "was already granted",
            false => "was not granted",
        };
        outcome.warnings.push(format!(
            "Role '{role}' {what} {} on {resource}",
            unchanged.join(", ")
        ));
    }
    Ok(outcome)
}

/// LIST PERMISSIONS.
pub(crate) fn list_permissions(
    ctx: &StatementCtx<'_>,
    stmt: &ast::ListPermissions,
    request: &Request,
) -> Result<Outcome> {
    logged_in(ctx, request)?;
    let resource = match &stmt.resource {
        Some(r) => {
            let resource = Resource::from_ast(r, request.keyspace.as_deref())?;
            if !resource_exists(ctx, &resource)? {
                return Err(QueryError::invalid(format!("{resource} doesn't exist")));
            }
            Some(resource)
        }
        None => None,
    };
    let grantee = stmt.role.as_ref().map(|r| r.as_str().to_string());
    if let Some(g) = &grantee {
        if role(ctx, g)?.is_none() {
            return Err(QueryError::invalid(format!(
                "{} doesn't exist",
                Resource::Role(g.clone())
            )));
        }
    }
    if !authorizer_enabled(ctx) {
        return Err(QueryError::invalid(
            "LIST PERMISSIONS operation is not supported by AllowAllAuthorizer",
        ));
    }
    check_may_view_permissions(ctx, request, grantee.as_deref())?;
    let details = permission_details(ctx, stmt, resource.as_ref(), grantee.as_deref())?;
    if details.is_empty() {
        return Ok(Outcome::void());
    }
    Ok(permission_list(&details))
}

/// Whether the user may list `grantee`'s permissions (everyone's when
/// None): superusers, members of the grantee, and holders of DESCRIBE on
/// all roles or on the grantee.
fn check_may_view_permissions(
    ctx: &StatementCtx<'_>,
    request: &Request,
    grantee: Option<&str>,
) -> Result<()> {
    let mut resources = vec![Resource::AllRoles];
    resources.extend(grantee.map(|g| Resource::Role(g.to_string())));
    let subject = subject(ctx, request, &resources)?;
    let may_view = subject.superuser
        || grantee.is_some_and(|g| subject.roles.contains(g))
        || subject
            .held_on(&Resource::AllRoles)
            .contains(&Permission::Describe)
        || grantee.is_some_and(|g| {
            subject
                .held_on(&Resource::Role(g.to_string()))
                .contains(&Permission::Describe)
        });
    if !may_view {
        return Err(QueryError::Unauthorized(format!(
            "You are not authorized to view {}'s permissions",
            grantee.unwrap_or("everyone")
        )));
    }
    Ok(())
}

/// The permissions LIST PERMISSIONS shows: those asked for, held by the
/// grantee (or the roles it holds), on the resource (and its parents,
/// when recursive).
fn permission_details(
    ctx: &StatementCtx<'_>,
    stmt: &ast::ListPermissions,
    resource: Option<&Resource>,
    grantee: Option<&str>,
) -> Result<BTreeSet<PermissionDetails>> {
    let wanted: Vec<Permission> = match stmt.permissions {
        Permissions::All => PERMISSIONS.to_vec(),
        Permissions::One(p) => vec![p],
    };
    let resources: Option<Vec<String>> = resource.map(|r| match stmt.recursive {
        true => r.chain().iter().map(Resource::name).collect(),
        false => vec![r.name()],
    });
    let roles: Option<BTreeSet<String>> = match grantee {
        Some(g) => Some(granted_roles(ctx, g, true)?),
        None => None,
    };
    let mut details = BTreeSet::new();
    for (role, resource_name, held) in all_permission_rows(ctx)? {
        if roles.as_ref().is_some_and(|rs| !rs.contains(&role)) {
            continue;
        }
        if resources
            .as_ref()
            .is_some_and(|rs| !rs.contains(&resource_name))
        {
            continue;
        }
        let Some(parsed) = Resource::from_name(&resource_name) else {
            continue;
        };
        for permission in held.into_iter().filter(|p| wanted.contains(p)) {
            details.insert(PermissionDetails {
                role: role.clone(),
                resource_name: resource_name.clone(),
                permission,
                resource: parsed.to_string(),
            });
        }
    }
    Ok(details)
}

/// The result of LIST PERMISSIONS: role, username, resource, permission.
fn permission_list(details: &BTreeSet<PermissionDetails>) -> Outcome {
    let spec = |name: &str| ColumnSpec {
        table: TableSpec {
            keyspace: "system_auth".into(),
            table: "permissions".into(),
        },
        name: name.into(),
        cql_type: CqlType::Native(NativeType::Text),
    };
    let cell = |s: &str| Some(bytes::Bytes::copy_from_slice(s.as_bytes()));
    let rows = details
        .iter()
        .map(|d| {
            vec![
                cell(&d.role),
                cell(&d.role),
                cell(&d.resource),
                cell(d.permission.name()),
            ]
        })
        .collect();
    Outcome::rows(Rows {
        metadata: RowsMetadata {
            columns: ColumnsMetadata::Specs(
                [
                    spec("role"),
                    spec("username"),
                    spec("resource"),
                    spec("permission"),
                ]
                .into(),
            ),
            paging_state: None,
            new_metadata_id: None,
        },
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_are_named_and_shown_as_cassandra_does() {
        let cases = [
            (Resource::AllKeyspaces, "data", "<all keyspaces>"),
            (Resource::Keyspace("ks".into()), "data/ks", "<keyspace ks>"),
            (
                Resource::AllTables("ks".into()),
                "data/ks/*",
                "<all tables in ks>",
            ),
            (
                Resource::Table("ks".into(), "t".into()),
                "data/ks/t",
                "<table ks.t>",
            ),
            (Resource::AllRoles, "roles", "<all roles>"),
            (Resource::Role("r".into()), "roles/r", "<role r>"),
            (Resource::AllFunctions, "functions", "<all functions>"),
            (
                Resource::KeyspaceFunctions("ks".into()),
                "functions/ks",
                "<all functions in ks>",
            ),
            (Resource::AllMbeans, "mbean", "<all mbeans>"),
            (
                Resource::Mbean("a:b=c".into()),
                "mbean/a:b=c",
                "<mbean a:b=c>",
            ),
        ];
        for (resource, name, shown) in cases {
            assert_eq!(resource.name(), name);
            assert_eq!(resource.to_string(), shown);
            assert_eq!(Resource::from_name(name), Some(resource));
        }
        assert_eq!(Resource::from_name("nothing/x"), None);
        assert_eq!(Resource::from_name("data/ks/t/x"), None);
    }

    #[test]
    fn a_table_inherits_from_every_tables_keyspace_and_root() {
        let chain: Vec<String> = Resource::Table("ks".into(), "t".into())
            .chain()
            .iter()
            .map(Resource::name)
            .collect();
        assert_eq!(chain, ["data/ks/t", "data/ks/*", "data/ks", "data"]);
    }

    #[test]
    fn superusers_hold_everything_others_what_a_parent_holds() {
        let table = Resource::Table("ks".into(), "t".into());
        let mut subject = Subject {
            name: "alice".into(),
            ..Subject::default()
        };
        assert!(!subject.holds(Permission::Select, &table));
        let error = subject.ensure(Permission::Select, &table).unwrap_err();
        assert_eq!(
            error.to_string(),
            "User alice has no SELECT permission on <table ks.t> or any of its parents"
        );
        subject
            .permissions
            .insert("data/ks".into(), BTreeSet::from([Permission::Select]));
        assert!(subject.holds(Permission::Select, &table));
        assert!(!subject.holds(Permission::Modify, &table));
        subject.superuser = true;
        assert!(subject.holds(Permission::Modify, &table));
    }

    #[test]
    fn permissions_must_apply_to_the_resource() {
        let role = Resource::Role("r".into());
        assert_eq!(
            applicable(Permissions::One(Permission::Modify), &role)
                .unwrap_err()
                .to_string(),
            "Resource type RoleResource does not support any of the requested permissions"
        );
        assert_eq!(
            applicable(Permissions::All, &role).unwrap(),
            [
                Permission::Alter,
                Permission::Drop,
                Permission::Authorize,
                Permission::Describe
            ]
        );
    }
}
