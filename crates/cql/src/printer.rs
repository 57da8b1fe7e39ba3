//! Prints the AST back to CQL text in one canonical form: upper-case
//! keywords, single spaces, names quoted only when they must be.
//!
//! Invariant (checked by the round-trip tests): for any AST the parser
//! produced, parsing the printed text yields the same AST, bind marker
//! indexes included. Hence clauses that may hold bind markers are printed in
//! source order, and parentheses are added only where the parser would
//! otherwise group differently.

use std::fmt::{self, Display, Formatter, Write};

use rocksandra_data::types::{quote_identifier_if_needed, NativeType};

use crate::ast::*;
use crate::lexer::{tokenize, TokenKind};
use crate::parser::is_reserved;

type Out<'a, 'b> = &'a mut Formatter<'b>;

/// Whether `name` can be written without quotes and read back unchanged.
fn is_bare(name: &str) -> bool {
    if quote_identifier_if_needed(name) != name || is_reserved(name) {
        return false;
    }
    let chars: Vec<char> = name.chars().collect();
    match tokenize(&chars) {
        Ok(tokens) => {
            tokens.len() == 2 && tokens[0].kind == TokenKind::Ident && tokens[0].value == name
        }
        Err(_) => false,
    }
}

fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

pub(crate) fn ident_text(name: &str) -> String {
    match is_bare(name) {
        true => name.to_string(),
        false => quoted(name),
    }
}

/// A UDT name must not read as a native type.
pub(crate) fn type_name(name: &str) -> String {
    match NativeType::from_name(name) {
        Some(_) => quoted(name),
        None => ident_text(name),
    }
}

/// Function names: `token` is reserved yet callable; names with their own
/// call syntax must be quoted to stay plain calls.
fn function_name_text(name: &str) -> String {
    match name {
        "token" => name.to_string(),
        "cast" | "writetime" | "maxwritetime" | "ttl" => quoted(name),
        _ => ident_text(name),
    }
}

pub(crate) fn string_literal(f: Out, value: &str) -> fmt::Result {
    write!(f, "'{}'", value.replace('\'', "''"))
}

pub(crate) fn comma_list<T: Display>(f: Out, items: &[T]) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{item}")?;
    }
    Ok(())
}

fn and_list<T: Display>(f: Out, items: &[T]) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(" AND ")?;
        }
        write!(f, "{item}")?;
    }
    Ok(())
}

fn flag(f: Out, on: bool, text: &str) -> fmt::Result {
    if on {
        f.write_str(text)?;
    }
    Ok(())
}

impl Display for Ident {
    fn fmt(&self, f: Out) -> fmt::Result {
        f.write_str(&ident_text(self.as_str()))
    }
}

impl Display for QualifiedName {
    fn fmt(&self, f: Out) -> fmt::Result {
        if let Some(keyspace) = &self.keyspace {
            write!(f, "{keyspace}.")?;
        }
        write!(f, "{}", self.name)
    }
}

struct FunctionName<'a>(&'a QualifiedName);

impl Display for FunctionName<'_> {
    fn fmt(&self, f: Out) -> fmt::Result {
        if let Some(keyspace) = &self.0.keyspace {
            write!(f, "{keyspace}.")?;
        }
        f.write_str(&function_name_text(self.0.name.as_str()))
    }
}

impl Display for ParsedStatement {
    fn fmt(&self, f: Out) -> fmt::Result {
        write!(f, "{}", self.statement)
    }
}

// ---------------------------------------------------------------- expressions

impl Display for Literal {
    fn fmt(&self, f: Out) -> fmt::Result {
        match self {
            Literal::String(s) => string_literal(f, s),
            Literal::Integer(t)
            | Literal::Float(t)
            | Literal::Uuid(t)
            | Literal::Blob(t)
            | Literal::Duration(t) => f.write_str(t),
            Literal::Boolean(b) => write!(f, "{b}"),
            Literal::Null => f.write_str("null"),
        }
    }
}

impl Display for BindMarker {
    fn fmt(&self, f: Out) -> fmt::Result {
        match &self.name {
            Some(name) => write!(f, ":{name}"),
            None => f.write_str("?"),
        }
    }
}

impl BinaryOp {
    fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Subtract => "-",
            BinaryOp::Multiply => "*",
            BinaryOp::Divide => "/",
            BinaryOp::Remainder => "%",
        }
    }

    fn precedence(self) -> u8 {
        match self {
            BinaryOp::Add | BinaryOp::Subtract => 1,
            _ => 2,
        }
    }
}

/// Prints `expr`, parenthesised when `wrap` says the parser would otherwise
/// attach it differently (only reachable for selectors, where `(x)` groups).
fn operand(f: Out, expr: &Expr, wrap: bool) -> fmt::Result {
    match wrap {
        true => write!(f, "({expr})"),
        false => write!(f, "{expr}"),
    }
}

fn binds_looser_than(expr: &Expr, precedence: u8) -> bool {
    match expr {
        Expr::Binary { op, .. } => op.precedence() < precedence,
        _ => false,
    }
}

/// A postfix `[..]` or `.f` would bind tighter than these.
fn is_prefix_or_infix(expr: &Expr) -> bool {
    matches!(expr, Expr::Binary { .. } | Expr::Negate(_))
}

/// Whether `-` written right before `text` would lex as part of a constant
/// (or, before an 'n' or an 'i', as the start of `-NaN` or `-Infinity`).
fn would_fuse_with_minus(text: &str) -> bool {
    let chars: Vec<char> = text.chars().collect();
    let Ok(tokens) = tokenize(&chars) else {
        return true;
    };
    let first = &tokens[0];
    matches!(
        first.kind,
        TokenKind::Integer | TokenKind::Float | TokenKind::Duration | TokenKind::Hex
    ) || (first.kind == TokenKind::Ident && first.value.starts_with(['n', 'i']))
        || (first.kind == TokenKind::Symbol && first.value == "-")
}

/// Postfix modifiers and type hints apply to a simple selector only.
fn is_compound(expr: &Expr) -> bool {
    matches!(
        expr,
        Expr::Binary { .. }
            | Expr::Negate(_)
            | Expr::Element { .. }
            | Expr::Slice { .. }
            | Expr::Field { .. }
    )
}

impl Display for Expr {
    fn fmt(&self, f: Out) -> fmt::Result {
        match self {
            Expr::Literal(l) => write!(f, "{l}"),
            Expr::Bind(b) => write!(f, "{b}"),
            Expr::Column(c) => write!(f, "{c}"),
            Expr::Function { name, args } => {
                write!(f, "{}(", FunctionName(name))?;
                comma_list(f, args)?;
                f.write_str(")")
            }
            Expr::CountStar => f.write_str("count(*)"),
            Expr::Metadata { kind, column } => {
                let name = match kind {
                    MetadataKind::WriteTime => "writetime",
                    MetadataKind::MaxWriteTime => "maxwritetime",
                    MetadataKind::Ttl => "ttl",
                };
                write!(f, "{name}({column})")
            }
            Expr::Cast { expr, ty } => write!(f, "CAST({expr} AS {ty})"),
            Expr::TypeHint { ty, expr } => {
                write!(f, "({ty}) ")?;
                operand(f, expr, is_compound(expr))
            }
            Expr::Element { collection, key } => {
                operand(f, collection, is_prefix_or_infix(collection))?;
                write!(f, "[{key}]")
            }
            Expr::Slice {
                collection,
                from,
                to,
            } => {
                operand(f, collection, is_prefix_or_infix(collection))?;
                f.write_str("[")?;
                if let Some(from) = from {
                    write!(f, "{from}")?;
                }
                f.write_str("..")?;
                if let Some(to) = to {
                    write!(f, "{to}")?;
                }
                f.write_str("]")
            }
            Expr::Field { udt, field } => {
                operand(f, udt, is_prefix_or_infix(udt))?;
                write!(f, ".{field}")
            }
            Expr::Binary { op, left, right } => {
                let precedence = op.precedence();
                operand(f, left, binds_looser_than(left, precedence))?;
                write!(f, " {} ", op.symbol())?;
                operand(f, right, binds_looser_than(right, precedence + 1))
            }
            Expr::Negate(inner) => {
                let text = inner.to_string();
                match inner.as_ref() {
                    Expr::Binary { .. } => write!(f, "-({text})"),
                    // `- 1` must not print as the constant `-1`, nor `- -1` as a comment.
                    _ if would_fuse_with_minus(&text) => write!(f, "- {text}"),
                    _ => write!(f, "-{text}"),
                }
            }
            Expr::List(items) => {
                f.write_str("[")?;
                comma_list(f, items)?;
                f.write_str("]")
            }
            Expr::Set(items) => {
                f.write_str("{")?;
                comma_list(f, items)?;
                f.write_str("}")
            }
            Expr::Map(entries) => {
                let entries: Vec<String> =
                    entries.iter().map(|(k, v)| format!("{k}: {v}")).collect();
                write!(f, "{{{}}}", entries.join(", "))
            }
            Expr::Udt(fields) => {
                let fields: Vec<String> = fields.iter().map(|(k, v)| format!("{k}: {v}")).collect();
                write!(f, "{{{}}}", fields.join(", "))
            }
            Expr::Tuple(items) => {
                f.write_str("(")?;
                comma_list(f, items)?;
                f.write_str(")")
            }
        }
    }
}

// ---------------------------------------------------------------- statements

impl Display for Statement {
    fn fmt(&self, f: Out) -> fmt::Result {
        match self {
            Statement::Select(s) => write!(f, "{s}"),
            Statement::Insert(s) => write!(f, "{s}"),
            Statement::Update(s) => write!(f, "{s}"),
            Statement::Delete(s) => write!(f, "{s}"),
            Statement::Batch(s) => write!(f, "{s}"),
            Statement::Use(ks) => write!(f, "USE {ks}"),
            Statement::Truncate(t) => write!(f, "TRUNCATE {t}"),
            Statement::CreateKeyspace(s) => write!(f, "{s}"),
            Statement::AlterKeyspace(s) => write!(f, "{s}"),
            Statement::CreateTable(s) => write!(f, "{s}"),
            Statement::AlterTable(s) => write!(f, "{s}"),
            Statement::CreateType(s) => write!(f, "{s}"),
            Statement::AlterType(s) => write!(f, "{s}"),
            Statement::CreateIndex(s) => write!(f, "{s}"),
            Statement::CreateMaterializedView(s) => write!(f, "{s}"),
            Statement::AlterMaterializedView(s) => write!(f, "{s}"),
            Statement::CreateTrigger(s) => write!(f, "{s}"),
            Statement::DropTrigger(s) => write!(f, "{s}"),
            Statement::Drop(s) => write!(f, "{s}"),
            Statement::CreateFunction(s) => write!(f, "{s}"),
            Statement::CreateAggregate(s) => write!(f, "{s}"),
            Statement::DropFunction(s) => write!(f, "{s}"),
            Statement::CreateRole(s) => write!(f, "{s}"),
            Statement::AlterRole(s) => write!(f, "{s}"),
            Statement::DropRole(s) => write!(f, "{s}"),
            Statement::GrantPermissions(s) => {
                write!(f, "GRANT {} ON {} TO {}", s.permissions, s.resource, s.role)
            }
            Statement::RevokePermissions(s) => {
                write!(
                    f,
                    "REVOKE {} ON {} FROM {}",
                    s.permissions, s.resource, s.role
                )
            }
            Statement::ListPermissions(s) => write!(f, "{s}"),
            Statement::GrantRole(s) => write!(f, "GRANT {} TO {}", s.role, s.grantee),
            Statement::RevokeRole(s) => write!(f, "REVOKE {} FROM {}", s.role, s.grantee),
            Statement::ListRoles(s) => write!(f, "{s}"),
            Statement::ListUsers => f.write_str("LIST USERS"),
            Statement::Describe(s) => write!(f, "{s}"),
        }
    }
}

// ---------------------------------------------------------------- SELECT

impl Display for Select {
    fn fmt(&self, f: Out) -> fmt::Result {
        f.write_str("SELECT ")?;
        flag(f, self.json, "JSON ")?;
        flag(f, self.distinct, "DISTINCT ")?;
        write!(f, "{} FROM {}", self.selection, self.table)?;
        where_clause(f, &self.where_clause)?;
        if !self.group_by.is_empty() {
            f.write_str(" GROUP BY ")?;
            comma_list(f, &self.group_by)?;
        }
        if !self.order_by.is_empty() {
            f.write_str(" ORDER BY ")?;
            comma_list(f, &self.order_by)?;
        }
        if let Some(limit) = &self.per_partition_limit {
            write!(f, " PER PARTITION LIMIT {limit}")?;
        }
        if let Some(limit) = &self.limit {
            write!(f, " LIMIT {limit}")?;
        }
        flag(f, self.allow_filtering, " ALLOW FILTERING")
    }
}

impl Display for Selection {
    fn fmt(&self, f: Out) -> fmt::Result {
        match self {
            Selection::Wildcard => f.write_str("*"),
            Selection::Selectors(selectors) => comma_list(f, selectors),
        }
    }
}

impl Display for Selector {
    fn fmt(&self, f: Out) -> fmt::Result {
        write!(f, "{}", self.expr)?;
        if let Some(alias) = &self.alias {
            write!(f, " AS {alias}")?;
        }
        Ok(())
    }
}

impl Display for Ordering {
    fn fmt(&self, f: Out) -> fmt::Result {
        match &self.kind {
            OrderingKind::Asc => write!(f, "{} ASC", self.column),
            OrderingKind::Desc => write!(f, "{} DESC", self.column),
            OrderingKind::Ann(vector) => write!(f, "{} ANN OF {vector}", self.column),
        }
    }
}

fn where_clause(f: Out, relations: &[Relation]) -> fmt::Result {
    if relations.is_empty() {
        return Ok(());
    }
    f.write_str(" WHERE ")?;
    and_list(f, relations)
}

impl Display for Relation {
    fn fmt(&self, f: Out) -> fmt::Result {
        match self {
            Relation::Compare { lhs, op, rhs } => write!(f, "{lhs} {op} {rhs}"),
            Relation::IsNotNull { column } => write!(f, "{column} IS NOT NULL"),
        }
    }
}

impl Display for RelationLhs {
    fn fmt(&self, f: Out) -> fmt::Result {
        match self {
            RelationLhs::Column(c) => write!(f, "{c}"),
            RelationLhs::Element { column, key } => write!(f, "{column}[{key}]"),
            RelationLhs::Columns(columns) => {
                f.write_str("(")?;
                comma_list(f, columns)?;
                f.write_str(")")
            }
            RelationLhs::Token(columns) => {
                f.write_str("token(")?;
                comma_list(f, columns)?;
                f.write_str(")")
            }
        }
    }
}

impl Display for Operator {
    fn fmt(&self, f: Out) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

// ---------------------------------------------------------------- modifications

fn using(f: Out, params: &[UsingParam]) -> fmt::Result {
    if params.is_empty() {
        return Ok(());
    }
    f.write_str(" USING ")?;
    and_list(f, params)
}

impl Display for UsingParam {
    fn fmt(&self, f: Out) -> fmt::Result {
        match self {
            UsingParam::Ttl(v) => write!(f, "TTL {v}"),
            UsingParam::Timestamp(v) => write!(f, "TIMESTAMP {v}"),
        }
    }
}

impl Display for Insert {
    fn fmt(&self, f: Out) -> fmt::Result {
        write!(f, "INSERT INTO {}", self.table)?;
        match &self.values {
            InsertValues::Columns { columns, values } => {
                f.write_str(" (")?;
                comma_list(f, columns)?;
                f.write_str(") VALUES (")?;
                comma_list(f, values)?;
                f.write_str(")")?;
            }
            InsertValues::Json {
                value,
                default_unset,
            } => {
                write!(f, " JSON {value}")?;
                flag(f, *default_unset, " DEFAULT UNSET")?;
            }
        }
        flag(f, self.if_not_exists, " IF NOT EXISTS")?;
        using(f, &self.using)
    }
}

impl Display for Update {
    fn fmt(&self, f: Out) -> fmt::Result {
        write!(f, "UPDATE {}", self.table)?;
        using(f, &self.using)?;
        f.write_str(" SET ")?;
        comma_list(f, &self.assignments)?;
        where_clause(f, &self.where_clause)?;
        condition(f, &self.condition)
    }
}

impl Display for Assignment {
    fn fmt(&self, f: Out) -> fmt::Result {
        let (target, value) = (&self.target, &self.value);
        match self.op {
            AssignOp::Set => write!(f, "{target} = {value}"),
            AssignOp::Add => write!(f, "{target} = {target} + {value}"),
            AssignOp::Subtract => write!(f, "{target} = {target} - {value}"),
            AssignOp::Prepend => write!(f, "{target} = {value} + {target}"),
        }
    }
}

impl Display for ColumnTarget {
    fn fmt(&self, f: Out) -> fmt::Result {
        match self {
            ColumnTarget::Column(c) => write!(f, "{c}"),
            ColumnTarget::Element { column, key } => write!(f, "{column}[{key}]"),
            ColumnTarget::Field { column, field } => write!(f, "{column}.{field}"),
        }
    }
}

fn condition(f: Out, condition: &Option<Condition>) -> fmt::Result {
    match condition {
        None => Ok(()),
        Some(Condition::Exists) => f.write_str(" IF EXISTS"),
        Some(Condition::Columns(conditions)) => {
            f.write_str(" IF ")?;
            and_list(f, conditions)
        }
    }
}

impl Display for ColumnCondition {
    fn fmt(&self, f: Out) -> fmt::Result {
        write!(f, "{} {} {}", self.target, self.op, self.value)
    }
}

impl Display for Delete {
    fn fmt(&self, f: Out) -> fmt::Result {
        f.write_str("DELETE ")?;
        if !self.targets.is_empty() {
            comma_list(f, &self.targets)?;
            f.write_str(" ")?;
        }
        write!(f, "FROM {}", self.table)?;
        using(f, &self.using)?;
        where_clause(f, &self.where_clause)?;
        condition(f, &self.condition)
    }
}

impl Display for Batch {
    fn fmt(&self, f: Out) -> fmt::Result {
        f.write_str(match self.kind {
            BatchKind::Logged => "BEGIN BATCH",
            BatchKind::Unlogged => "BEGIN UNLOGGED BATCH",
            BatchKind::Counter => "BEGIN COUNTER BATCH",
        })?;
        using(f, &self.using)?;
        for statement in &self.statements {
            match statement {
                Modification::Insert(s) => write!(f, " {s};")?,
                Modification::Update(s) => write!(f, " {s};")?,
                Modification::Delete(s) => write!(f, " {s};")?,
            }
        }
        f.write_str(" APPLY BATCH")
    }
}

// ---------------------------------------------------------------- schema

impl Display for Property {
    fn fmt(&self, f: Out) -> fmt::Result {
        write!(f, "{} = ", self.name)?;
        match &self.value {
            PropertyValue::Constant(l) => write!(f, "{l}"),
            PropertyValue::Word(w) => f.write_str(w),
            PropertyValue::Map(entries) => literal_map(f, entries),
        }
    }
}

fn literal_map(f: Out, entries: &[(Literal, Literal)]) -> fmt::Result {
    let entries: Vec<String> = entries.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    write!(f, "{{{}}}", entries.join(", "))
}

impl Display for CreateKeyspace {
    fn fmt(&self, f: Out) -> fmt::Result {
        f.write_str("CREATE KEYSPACE ")?;
        flag(f, self.if_not_exists, "IF NOT EXISTS ")?;
        write!(f, "{} WITH ", self.name)?;
        and_list(f, &self.properties)
    }
}

impl Display for AlterKeyspace {
    fn fmt(&self, f: Out) -> fmt::Result {
        f.write_str("ALTER KEYSPACE ")?;
        flag(f, self.if_exists, "IF EXISTS ")?;
        write!(f, "{} WITH ", self.name)?;
        and_list(f, &self.properties)
    }
}

impl Display for ColumnDefinition {
    fn fmt(&self, f: Out) -> fmt::Result {
        write!(f, "{} {}", self.name, self.ty)?;
        flag(f, self.is_static, " STATIC")?;
        match &self.mask {
            Some(mask) => write!(f, " {mask}"),
            None => Ok(()),
        }
    }
}

impl Display for ColumnMask {
    fn fmt(&self, f: Out) -> fmt::Result {
        write!(f, "MASKED WITH {}(", self.function)?;
        comma_list(f, &self.args)?;
        f.write_str(")")
    }
}

fn primary_key(f: Out, partition_key: &[Ident], clustering_key: &[Ident]) -> fmt::Result {
    f.write_str("PRIMARY KEY (")?;
    match partition_key {
        [single] => write!(f, "{single}")?,
        many => {
            f.write_str("(")?;
            comma_list(f, many)?;
            f.write_str(")")?;
        }
    }
    for column in clustering_key {
        write!(f, ", {column}")?;
    }
    f.write_str(")")
}

impl Display for TableOptions {
    fn fmt(&self, f: Out) -> fmt::Result {
        let mut parts = Vec::new();
        if !self.clustering_order.is_empty() {
            let columns: Vec<String> = self
                .clustering_order
                .iter()
                .map(|(column, order)| match order {
                    ClusteringOrder::Asc => format!("{column} ASC"),
                    ClusteringOrder::Desc => format!("{column} DESC"),
                })
                .collect();
            parts.push(format!("CLUSTERING ORDER BY ({})", columns.join(", ")));
        }
        if self.compact_storage {
            parts.push("COMPACT STORAGE".into());
        }
        parts.extend(self.properties.iter().map(ToString::to_string));
        if parts.is_empty() {
            return Ok(());
        }
        write!(f, " WITH {}", parts.join(" AND "))
    }
}

impl Display for CreateTable {
    fn fmt(&self, f: Out) -> fmt::Result {
        f.write_str("CREATE TABLE ")?;
        flag(f, self.if_not_exists, "IF NOT EXISTS ")?;
        write!(f, "{} (", self.name)?;
        comma_list(f, &self.columns)?;
        if !self.partition_key.is_empty() {
            f.write_str(", ")?;
            primary_key(f, &self.partition_key, &self.clustering_key)?;
        }
        write!(f, "){}", self.options)
    }
}

/// `x` for one item, `(x, y)` for several.
fn one_or_many<T: Display>(f: Out, items: &[T]) -> fmt::Result {
    match items {
        [single] => write!(f, "{single}"),
        many => {
            f.write_str("(")?;
            comma_list(f, many)?;
            f.write_str(")")
        }
    }
}

fn renames(f: Out, renames: &[(Ident, Ident)]) -> fmt::Result {
    let parts: Vec<String> = renames.iter().map(|(a, b)| format!("{a} TO {b}")).collect();
    f.write_str(&parts.join(" AND "))
}

impl Display for AlterTable {
    fn fmt(&self, f: Out) -> fmt::Result {
        f.write_str("ALTER TABLE ")?;
        flag(f, self.if_exists, "IF EXISTS ")?;
        write!(f, "{} ", self.table)?;
        match &self.action {
            AlterTableAction::Add {
                if_not_exists,
                columns,
            } => {
                f.write_str("ADD ")?;
                flag(f, *if_not_exists, "IF NOT EXISTS ")?;
                one_or_many(f, columns)
            }
            AlterTableAction::Drop {
                if_exists,
                columns,
                timestamp,
            } => {
                f.write_str("DROP ")?;
                flag(f, *if_exists, "IF EXISTS ")?;
                one_or_many(f, columns)?;
                match timestamp {
                    Some(ts) => write!(f, " USING TIMESTAMP {ts}"),
                    None => Ok(()),
                }
            }
            AlterTableAction::Rename {
                if_exists,
                renames: pairs,
            } => {
                f.write_str("RENAME ")?;
                flag(f, *if_exists, "IF EXISTS ")?;
                renames(f, pairs)
            }
            AlterTableAction::DropCompactStorage => f.write_str("DROP COMPACT STORAGE"),
            AlterTableAction::AlterColumnType { column, ty } => {
                write!(f, "ALTER {column} TYPE {ty}")
            }
            AlterTableAction::AlterColumnMask {
                if_exists,
                column,
                mask,
            } => {
                f.write_str("ALTER ")?;
                flag(f, *if_exists, "IF EXISTS ")?;
                match mask {
                    Some(mask) => write!(f, "{column} {mask}"),
                    None => write!(f, "{column} DROP MASKED"),
                }
            }
            AlterTableAction::With(properties) => {
                f.write_str("WITH ")?;
                and_list(f, properties)
            }
        }
    }
}

impl Display for CreateType {
    fn fmt(&self, f: Out) -> fmt::Result {
        f.write_str("CREATE TYPE ")?;
        flag(f, self.if_not_exists, "IF NOT EXISTS ")?;
        let fields: Vec<String> = self
            .fields
            .iter()
            .map(|(n, t)| format!("{n} {t}"))
            .collect();
        write!(f, "{} ({})", self.name, fields.join(", "))
    }
}

impl Display for AlterType {
    fn fmt(&self, f: Out) -> fmt::Result {
        f.write_str("ALTER TYPE ")?;
        flag(f, self.if_exists, "IF EXISTS ")?;
        write!(f, "{} ", self.name)?;
        match &self.action {
            AlterTypeAction::Add {
                if_not_exists,
                field,
                ty,
            } => {
                f.write_str("ADD ")?;
                flag(f, *if_not_exists, "IF NOT EXISTS ")?;
                write!(f, "{field} {ty}")
            }
            AlterTypeAction::Rename {
                if_exists,
                renames: pairs,
            } => {
                f.write_str("RENAME ")?;
                flag(f, *if_exists, "IF EXISTS ")?;
                renames(f, pairs)
            }
            AlterTypeAction::AlterFieldType { field, ty } => write!(f, "ALTER {field} TYPE {ty}"),
        }
    }
}

impl Display for IndexTarget {
    fn fmt(&self, f: Out) -> fmt::Result {
        let wrapper = match self.kind {
            IndexTargetKind::Simple => return write!(f, "{}", self.column),
            IndexTargetKind::Keys => "KEYS",
            IndexTargetKind::Values => "VALUES",
            IndexTargetKind::Entries => "ENTRIES",
            IndexTargetKind::Full => "FULL",
        };
        write!(f, "{wrapper}({})", self.column)
    }
}

impl Display for CreateIndex {
    fn fmt(&self, f: Out) -> fmt::Result {
        f.write_str("CREATE ")?;
        flag(f, self.custom, "CUSTOM ")?;
        f.write_str("INDEX ")?;
        flag(f, self.if_not_exists, "IF NOT EXISTS ")?;
        if let Some(name) = &self.name {
            write!(f, "{name} ")?;
        }
        write!(f, "ON {} (", self.table)?;
        comma_list(f, &self.targets)?;
        f.write_str(")")?;
        if let Some(class) = &self.class {
            f.write_str(" USING ")?;
            string_literal(f, class)?;
        }
        if !self.properties.is_empty() {
            f.write_str(" WITH ")?;
            and_list(f, &self.properties)?;
        }
        Ok(())
    }
}

impl Display for CreateMaterializedView {
    fn fmt(&self, f: Out) -> fmt::Result {
        f.write_str("CREATE MATERIALIZED VIEW ")?;
        flag(f, self.if_not_exists, "IF NOT EXISTS ")?;
        write!(
            f,
            "{} AS SELECT {} FROM {}",
            self.name, self.selection, self.base_table
        )?;
        where_clause(f, &self.where_clause)?;
        f.write_str(" ")?;
        primary_key(f, &self.partition_key, &self.clustering_key)?;
        write!(f, "{}", self.options)
    }
}

impl Display for AlterMaterializedView {
    fn fmt(&self, f: Out) -> fmt::Result {
        f.write_str("ALTER MATERIALIZED VIEW ")?;
        flag(f, self.if_exists, "IF EXISTS ")?;
        write!(f, "{} WITH ", self.name)?;
        and_list(f, &self.properties)
    }
}

impl Display for CreateTrigger {
    fn fmt(&self, f: Out) -> fmt::Result {
        f.write_str("CREATE TRIGGER ")?;
        flag(f, self.if_not_exists, "IF NOT EXISTS ")?;
        write!(f, "{} ON {} USING ", self.name, self.table)?;
        string_literal(f, &self.class)
    }
}

impl Display for DropTrigger {
    fn fmt(&self, f: Out) -> fmt::Result {
        f.write_str("DROP TRIGGER ")?;
        flag(f, self.if_exists, "IF EXISTS ")?;
        write!(f, "{} ON {}", self.name, self.table)
    }
}

impl Display for DropObject {
    fn fmt(&self, f: Out) -> fmt::Result {
        f.write_str(match self.kind {
            DropKind::Keyspace => "DROP KEYSPACE ",
            DropKind::Table => "DROP TABLE ",
            DropKind::Type => "DROP TYPE ",
            DropKind::Index => "DROP INDEX ",
            DropKind::MaterializedView => "DROP MATERIALIZED VIEW ",
        })?;
        flag(f, self.if_exists, "IF EXISTS ")?;
        write!(f, "{}", self.name)
    }
}

/// Function bodies read best between `$$`; fall back to quotes when they contain `$$`.
fn body_literal(f: Out, body: &str) -> fmt::Result {
    match body.contains("$$") || body.ends_with('$') {
        true => string_literal(f, body),
        false => write!(f, "$${body}$$"),
    }
}

impl Display for CreateFunction {
    fn fmt(&self, f: Out) -> fmt::Result {
        f.write_str("CREATE ")?;
        flag(f, self.or_replace, "OR REPLACE ")?;
        f.write_str("FUNCTION ")?;
        flag(f, self.if_not_exists, "IF NOT EXISTS ")?;
        let arguments: Vec<String> = self
            .arguments
            .iter()
            .map(|(n, t)| format!("{n} {t}"))
            .collect();
        write!(f, "{}({}) ", FunctionName(&self.name), arguments.join(", "))?;
        f.write_str(match self.called_on_null_input {
            true => "CALLED ON NULL INPUT",
            false => "RETURNS NULL ON NULL INPUT",
        })?;
        write!(
            f,
            " RETURNS {} LANGUAGE {} AS ",
            self.return_type, self.language
        )?;
        body_literal(f, &self.body)
    }
}

impl Display for CreateAggregate {
    fn fmt(&self, f: Out) -> fmt::Result {
        f.write_str("CREATE ")?;
        flag(f, self.or_replace, "OR REPLACE ")?;
        f.write_str("AGGREGATE ")?;
        flag(f, self.if_not_exists, "IF NOT EXISTS ")?;
        write!(f, "{}(", FunctionName(&self.name))?;
        comma_list(f, &self.argument_types)?;
        write!(
            f,
            ") SFUNC {} STYPE {}",
            function_name_text(self.state_function.as_str()),
            self.state_type
        )?;
        if let Some(final_function) = &self.final_function {
            write!(
                f,
                " FINALFUNC {}",
                function_name_text(final_function.as_str())
            )?;
        }
        if let Some(initial) = &self.initial_condition {
            write!(f, " INITCOND {initial}")?;
        }
        Ok(())
    }
}

impl Display for DropFunction {
    fn fmt(&self, f: Out) -> fmt::Result {
        f.write_str(match self.aggregate {
            true => "DROP AGGREGATE ",
            false => "DROP FUNCTION ",
        })?;
        flag(f, self.if_exists, "IF EXISTS ")?;
        write!(f, "{}", FunctionName(&self.name))?;
        if let Some(types) = &self.argument_types {
            f.write_str("(")?;
            comma_list(f, types)?;
            f.write_str(")")?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------- auth

/// User names were never quoted identifiers in Cassandra; print a string instead.
fn user_name(name: &Ident) -> String {
    match is_bare(name.as_str()) {
        true => name.as_str().to_string(),
        false => format!("'{}'", name.as_str().replace('\'', "''")),
    }
}

fn role_header(
    f: Out,
    verb: &str,
    kind: RoleKind,
    guard: Option<&str>,
    name: &Ident,
) -> fmt::Result {
    let noun = match kind {
        RoleKind::Role => "ROLE",
        RoleKind::User => "USER",
    };
    write!(f, "{verb} {noun} ")?;
    if let Some(guard) = guard {
        write!(f, "{guard} ")?;
    }
    match kind {
        RoleKind::Role => write!(f, "{name}"),
        RoleKind::User => f.write_str(&user_name(name)),
    }
}

fn role_options(f: Out, kind: RoleKind, options: &[RoleOption]) -> fmt::Result {
    if options.is_empty() {
        return Ok(());
    }
    if kind == RoleKind::Role {
        f.write_str(" WITH ")?;
        return and_list(f, options);
    }
    for option in options {
        let mut text = String::new();
        match option {
            RoleOption::Password(p) => {
                write!(text, " WITH PASSWORD {}", Literal::String(p.clone()))?
            }
            RoleOption::HashedPassword(p) => {
                write!(text, " WITH HASHED PASSWORD {}", Literal::String(p.clone()))?
            }
            RoleOption::Superuser(true) => text.push_str(" SUPERUSER"),
            RoleOption::Superuser(false) => text.push_str(" NOSUPERUSER"),
            // The user syntax cannot express the rest; the parser never produces them.
            _ => {}
        }
        f.write_str(&text)?;
    }
    Ok(())
}

impl Display for RoleOption {
    fn fmt(&self, f: Out) -> fmt::Result {
        let strings = |names: &[String]| -> String {
            let quoted: Vec<String> = names
                .iter()
                .map(|n| Literal::String(n.clone()).to_string())
                .collect();
            format!("{{{}}}", quoted.join(", "))
        };
        match self {
            RoleOption::Password(p) => write!(f, "PASSWORD = {}", Literal::String(p.clone())),
            RoleOption::HashedPassword(p) => {
                write!(f, "HASHED PASSWORD = {}", Literal::String(p.clone()))
            }
            RoleOption::Login(b) => write!(f, "LOGIN = {b}"),
            RoleOption::Superuser(b) => write!(f, "SUPERUSER = {b}"),
            RoleOption::Options(entries) => {
                f.write_str("OPTIONS = ")?;
                literal_map(f, entries)
            }
            RoleOption::AccessToDatacenters(None) => f.write_str("ACCESS TO ALL DATACENTERS"),
            RoleOption::AccessToDatacenters(Some(names)) => {
                write!(f, "ACCESS TO DATACENTERS {}", strings(names))
            }
            RoleOption::AccessFromCidrs(None) => f.write_str("ACCESS FROM ALL CIDRS"),
            RoleOption::AccessFromCidrs(Some(names)) => {
                write!(f, "ACCESS FROM CIDRS {}", strings(names))
            }
        }
    }
}

impl Display for CreateRole {
    fn fmt(&self, f: Out) -> fmt::Result {
        let guard = self.if_not_exists.then_some("IF NOT EXISTS");
        role_header(f, "CREATE", self.kind, guard, &self.name)?;
        role_options(f, self.kind, &self.options)
    }
}

impl Display for AlterRole {
    fn fmt(&self, f: Out) -> fmt::Result {
        let guard = self.if_exists.then_some("IF EXISTS");
        role_header(f, "ALTER", self.kind, guard, &self.name)?;
        role_options(f, self.kind, &self.options)
    }
}

impl Display for DropRole {
    fn fmt(&self, f: Out) -> fmt::Result {
        let guard = self.if_exists.then_some("IF EXISTS");
        role_header(f, "DROP", self.kind, guard, &self.name)
    }
}

impl Display for Permission {
    fn fmt(&self, f: Out) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Display for Permissions {
    fn fmt(&self, f: Out) -> fmt::Result {
        match self {
            Permissions::All => f.write_str("ALL PERMISSIONS"),
            Permissions::One(p) => write!(f, "{p}"),
        }
    }
}

impl Display for Resource {
    fn fmt(&self, f: Out) -> fmt::Result {
        match self {
            Resource::AllKeyspaces => f.write_str("ALL KEYSPACES"),
            Resource::Keyspace(ks) => write!(f, "KEYSPACE {ks}"),
            Resource::Table(t) => write!(f, "TABLE {t}"),
            Resource::AllRoles => f.write_str("ALL ROLES"),
            Resource::Role(r) => write!(f, "ROLE {r}"),
            Resource::AllFunctions { keyspace: None } => f.write_str("ALL FUNCTIONS"),
            Resource::AllFunctions { keyspace: Some(ks) } => {
                write!(f, "ALL FUNCTIONS IN KEYSPACE {ks}")
            }
            Resource::Function {
                name,
                argument_types,
            } => {
                write!(f, "FUNCTION {}(", FunctionName(name))?;
                comma_list(f, argument_types)?;
                f.write_str(")")
            }
            Resource::AllMbeans => f.write_str("ALL MBEANS"),
            Resource::Mbean(name) => write!(f, "MBEAN {}", Literal::String(name.clone())),
            Resource::Mbeans(name) => write!(f, "MBEANS {}", Literal::String(name.clone())),
        }
    }
}

impl Display for ListPermissions {
    fn fmt(&self, f: Out) -> fmt::Result {
        write!(f, "LIST {}", self.permissions)?;
        if let Some(resource) = &self.resource {
            write!(f, " ON {resource}")?;
        }
        if let Some(role) = &self.role {
            write!(f, " OF {role}")?;
        }
        flag(f, !self.recursive, " NORECURSIVE")
    }
}

impl Display for ListRoles {
    fn fmt(&self, f: Out) -> fmt::Result {
        f.write_str("LIST ROLES")?;
        if let Some(role) = &self.of {
            write!(f, " OF {role}")?;
        }
        flag(f, !self.recursive, " NORECURSIVE")
    }
}

// ---------------------------------------------------------------- describe

/// Words that DESCRIBE reads as a target kind rather than an object name.
const DESCRIBE_WORDS: &[&str] = &[
    "cluster",
    "schema",
    "full",
    "keyspaces",
    "keyspace",
    "only",
    "tables",
    "table",
    "columnfamily",
    "types",
    "type",
    "functions",
    "function",
    "aggregates",
    "aggregate",
    "index",
    "materialized",
];

impl Display for Describe {
    fn fmt(&self, f: Out) -> fmt::Result {
        f.write_str("DESCRIBE ")?;
        match &self.target {
            DescribeTarget::Cluster => f.write_str("CLUSTER")?,
            DescribeTarget::Schema { full } => {
                flag(f, *full, "FULL ")?;
                f.write_str("SCHEMA")?;
            }
            DescribeTarget::Keyspaces => f.write_str("KEYSPACES")?,
            DescribeTarget::Keyspace { only, name } => {
                flag(f, *only, "ONLY ")?;
                f.write_str("KEYSPACE")?;
                if let Some(name) = name {
                    write!(f, " {name}")?;
                }
            }
            DescribeTarget::Tables => f.write_str("TABLES")?,
            DescribeTarget::Table(name) => write!(f, "TABLE {name}")?,
            DescribeTarget::Types => f.write_str("TYPES")?,
            DescribeTarget::Type(name) => write!(f, "TYPE {name}")?,
            DescribeTarget::Functions => f.write_str("FUNCTIONS")?,
            DescribeTarget::Function(name) => write!(f, "FUNCTION {}", FunctionName(name))?,
            DescribeTarget::Aggregates => f.write_str("AGGREGATES")?,
            DescribeTarget::Aggregate(name) => write!(f, "AGGREGATE {}", FunctionName(name))?,
            DescribeTarget::Index(name) => write!(f, "INDEX {name}")?,
            DescribeTarget::MaterializedView(name) => write!(f, "MATERIALIZED VIEW {name}")?,
            DescribeTarget::Name(name) => describe_name(f, name)?,
        }
        flag(f, self.with_internals, " WITH INTERNALS")
    }
}

fn describe_name(f: Out, name: &QualifiedName) -> fmt::Result {
    let keyword_like = DESCRIBE_WORDS.contains(&name.name.as_str());
    match (&name.keyspace, keyword_like) {
        (None, true) => f.write_str(&quoted(name.name.as_str())),
        _ => write!(f, "{name}"),
    }
}
