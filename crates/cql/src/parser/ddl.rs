//! CREATE / ALTER / DROP of keyspaces, tables, types, indexes, views,
//! triggers, functions and aggregates.

use super::Parser;
use crate::ast::{
    AlterKeyspace, AlterMaterializedView, AlterTable, AlterTableAction, AlterType, AlterTypeAction,
    ColumnDefinition, ColumnMask, CreateAggregate, CreateFunction, CreateIndex, CreateKeyspace,
    CreateMaterializedView, CreateTable, CreateTrigger, CreateType, DropFunction, DropKind,
    DropObject, DropTrigger, Ident, IndexTarget, IndexTargetKind, QualifiedName, Statement,
    TableOptions,
};
use crate::error::{ParseError, Result};
use crate::lexer::TokenKind;
use crate::types::TypeExpr;

/// The primary key as declared: partition key columns, then clustering columns.
type PrimaryKey = (Vec<Ident>, Vec<Ident>);

impl Parser {
    pub(crate) fn create(&mut self) -> Result<Statement> {
        self.expect_kw("create")?;
        if self.eat_kw("or") {
            self.expect_kw("replace")?;
            return self.create_routine(true);
        }
        let word = self.peek().value.clone();
        if self.peek().kind != TokenKind::Ident {
            return Err(self.no_viable());
        }
        Ok(match word.as_str() {
            "keyspace" => Statement::CreateKeyspace(self.create_keyspace()?),
            "table" | "columnfamily" => Statement::CreateTable(Box::new(self.create_table()?)),
            "index" | "custom" => Statement::CreateIndex(Box::new(self.create_index()?)),
            "materialized" => Statement::CreateMaterializedView(Box::new(self.create_view()?)),
            "type" => Statement::CreateType(self.create_type()?),
            "function" | "aggregate" => self.create_routine(false)?,
            "trigger" => Statement::CreateTrigger(self.create_trigger()?),
            "role" | "user" => Statement::CreateRole(self.create_role()?),
            _ => return Err(self.no_viable()),
        })
    }

    pub(crate) fn alter(&mut self) -> Result<Statement> {
        self.expect_kw("alter")?;
        let word = self.peek().value.clone();
        if self.peek().kind != TokenKind::Ident {
            return Err(self.no_viable());
        }
        Ok(match word.as_str() {
            "keyspace" => Statement::AlterKeyspace(self.alter_keyspace()?),
            "table" | "columnfamily" => Statement::AlterTable(Box::new(self.alter_table()?)),
            "type" => Statement::AlterType(self.alter_type()?),
            "materialized" => Statement::AlterMaterializedView(self.alter_view()?),
            "role" | "user" => Statement::AlterRole(self.alter_role()?),
            _ => return Err(self.no_viable()),
        })
    }

    pub(crate) fn drop_statement(&mut self) -> Result<Statement> {
        self.expect_kw("drop")?;
        let word = self.peek().value.clone();
        if self.peek().kind != TokenKind::Ident {
            return Err(self.no_viable());
        }
        let kind = match word.as_str() {
            "keyspace" => DropKind::Keyspace,
            "table" | "columnfamily" => DropKind::Table,
            "type" => DropKind::Type,
            "index" => DropKind::Index,
            "materialized" => DropKind::MaterializedView,
            "function" | "aggregate" => return Ok(Statement::DropFunction(self.drop_routine()?)),
            "trigger" => return Ok(Statement::DropTrigger(self.drop_trigger()?)),
            "role" | "user" => return Ok(Statement::DropRole(self.drop_role()?)),
            _ => return Err(self.no_viable()),
        };
        self.advance();
        if kind == DropKind::MaterializedView {
            self.expect_kw("view")?;
        }
        let if_exists = self.if_exists();
        let name = match kind {
            DropKind::Keyspace => QualifiedName {
                keyspace: None,
                name: self.ident()?,
            },
            DropKind::Type => self.user_type_name()?,
            _ => self.qualified_name()?,
        };
        Ok(Statement::Drop(DropObject {
            kind,
            if_exists,
            name,
        }))
    }

    // ------------------------------------------------------------ keyspaces

    fn create_keyspace(&mut self) -> Result<CreateKeyspace> {
        self.expect_kw("keyspace")?;
        let if_not_exists = self.if_not_exists();
        let name = self.ident()?;
        self.expect_kw("with")?;
        let properties = self.properties()?;
        Ok(CreateKeyspace {
            if_not_exists,
            name,
            properties,
        })
    }

    fn alter_keyspace(&mut self) -> Result<AlterKeyspace> {
        self.expect_kw("keyspace")?;
        let if_exists = self.if_exists();
        let name = self.ident()?;
        self.expect_kw("with")?;
        let properties = self.properties()?;
        Ok(AlterKeyspace {
            if_exists,
            name,
            properties,
        })
    }

    // ------------------------------------------------------------ tables

    fn create_table(&mut self) -> Result<CreateTable> {
        self.advance();
        let if_not_exists = self.if_not_exists();
        let name = self.qualified_name()?;
        self.expect_sym("(")?;
        let mut columns = Vec::new();
        let mut primary_key: Option<PrimaryKey> = None;
        loop {
            let key = match self.eat_kws(&["primary", "key"]) {
                true => Some(self.primary_key()?),
                false => self.column_definition(&mut columns)?,
            };
            if let Some(key) = key {
                if primary_key.replace(key).is_some() {
                    return Err(ParseError::invalid(format!(
                        "Multiple PRIMARY KEY specified for table '{}' (exactly one required)",
                        name.name.as_str()
                    )));
                }
            }
            if !self.eat_sym(",") || self.is_sym(")") {
                break;
            }
            if !self.is_ident_at(0) && !self.is_kw("primary") && !self.is_sym(",") {
                // A definition after ',' is optional to ANTLR: a word that
                // cannot start one (a reserved keyword) is where ')' was due.
                return Err(self.mismatch("')'"));
            }
        }
        self.expect_sym(")")?;
        let options = self.with_table_options()?;
        let (partition_key, clustering_key) = primary_key.unwrap_or_default();
        Ok(CreateTable {
            if_not_exists,
            name,
            columns,
            partition_key,
            clustering_key,
            options,
        })
    }

    /// `name type [STATIC] [PRIMARY KEY]`; returns the key if declared inline.
    fn column_definition(
        &mut self,
        columns: &mut Vec<ColumnDefinition>,
    ) -> Result<Option<PrimaryKey>> {
        let definition = self.column_type_pair()?;
        let name = definition.name.clone();
        columns.push(definition);
        if self.eat_kws(&["primary", "key"]) {
            return Ok(Some((vec![name], Vec::new())));
        }
        Ok(None)
    }

    fn column_type_pair(&mut self) -> Result<ColumnDefinition> {
        let name = self.ident()?;
        let ty = self.type_expr()?;
        let is_static = self.eat_kw("static");
        let mask = self.column_mask()?;
        Ok(ColumnDefinition {
            name,
            ty,
            is_static,
            mask,
        })
    }

    /// `MASKED WITH DEFAULT` or `MASKED WITH f(args)`, if next.
    fn column_mask(&mut self) -> Result<Option<ColumnMask>> {
        if !self.eat_kws(&["masked", "with"]) {
            return Ok(None);
        }
        if self.eat_kw("default") {
            let function = QualifiedName {
                keyspace: None,
                name: Ident::new("mask_default".to_string()),
            };
            let args = Vec::new();
            return Ok(Some(ColumnMask { function, args }));
        }
        let function = self.function_name()?;
        // As in Cassandra, a mask's markers are not the statement's: they
        // are left for the mask's preparation to refuse.
        let markers = self.binds.len();
        let args = self.parenthesized(true, Parser::term)?;
        self.binds.truncate(markers);
        Ok(Some(ColumnMask { function, args }))
    }

    /// After `PRIMARY KEY`: `(a, b)` or `((a, b), c)`.
    fn primary_key(&mut self) -> Result<PrimaryKey> {
        self.expect_sym("(")?;
        let partition_key = match self.is_sym("(") {
            true => self.parenthesized(false, Parser::ident)?,
            false => vec![self.ident()?],
        };
        let mut clustering_key = Vec::new();
        while self.eat_sym(",") {
            clustering_key.push(self.ident()?);
        }
        self.expect_sym(")")?;
        Ok((partition_key, clustering_key))
    }

    fn with_table_options(&mut self) -> Result<TableOptions> {
        match self.eat_kw("with") {
            true => self.table_options(),
            false => Ok(TableOptions::default()),
        }
    }

    fn alter_table(&mut self) -> Result<AlterTable> {
        self.advance();
        let if_exists = self.if_exists();
        let table = self.qualified_name()?;
        let action = if self.eat_kw("add") {
            let if_not_exists = self.if_not_exists();
            let columns = match self.is_sym("(") {
                true => self.parenthesized(false, Parser::column_type_pair)?,
                false => vec![self.column_type_pair()?],
            };
            AlterTableAction::Add {
                if_not_exists,
                columns,
            }
        } else if self.eat_kws(&["drop", "compact", "storage"]) {
            AlterTableAction::DropCompactStorage
        } else if self.eat_kw("drop") {
            self.alter_table_drop()?
        } else if self.eat_kw("rename") {
            let if_exists = self.if_exists();
            let renames = self.renames()?;
            AlterTableAction::Rename { if_exists, renames }
        } else if self.eat_kw("alter") {
            self.alter_column()?
        } else if self.eat_kw("with") {
            AlterTableAction::With(self.properties()?)
        } else {
            return Err(self.no_viable());
        };
        Ok(AlterTable {
            if_exists,
            table,
            action,
        })
    }

    /// After `ALTER TABLE t ALTER`: `c TYPE t`, `[IF EXISTS] c MASKED
    /// WITH ...` or `[IF EXISTS] c DROP MASKED`.
    fn alter_column(&mut self) -> Result<AlterTableAction> {
        let if_exists = self.if_exists();
        let column = self.ident()?;
        if !if_exists && self.eat_kw("type") {
            let ty = self.type_expr()?;
            return Ok(AlterTableAction::AlterColumnType { column, ty });
        }
        let mask = match self.eat_kws(&["drop", "masked"]) {
            true => None,
            false => match self.column_mask()? {
                Some(mask) => Some(mask),
                None => return Err(self.no_viable()),
            },
        };
        Ok(AlterTableAction::AlterColumnMask {
            if_exists,
            column,
            mask,
        })
    }

    fn alter_table_drop(&mut self) -> Result<AlterTableAction> {
        let if_exists = self.if_exists();
        let columns = match self.is_sym("(") {
            true => self.parenthesized(false, Parser::ident)?,
            false => vec![self.ident()?],
        };
        let mut timestamp = None;
        if self.eat_kw("using") {
            self.expect_kw("timestamp")?;
            timestamp = Some(self.i64_literal()?);
        }
        Ok(AlterTableAction::Drop {
            if_exists,
            columns,
            timestamp,
        })
    }

    fn i64_literal(&mut self) -> Result<i64> {
        let negative = self.is_sym("-") && self.peek_at(1).kind == TokenKind::Integer;
        let token = self.peek_at(usize::from(negative));
        let parsed = format!("{}{}", if negative { "-" } else { "" }, token.value).parse();
        match parsed {
            Ok(n) if token.kind == TokenKind::Integer => {
                self.pos += 1 + usize::from(negative);
                Ok(n)
            }
            _ => Err(self.mismatch("INTEGER")),
        }
    }

    /// `a TO b AND c TO d`.
    fn renames(&mut self) -> Result<Vec<(Ident, Ident)>> {
        self.and_separated(|p| {
            let from = p.ident()?;
            p.expect_kw("to")?;
            Ok((from, p.ident()?))
        })
    }

    // ------------------------------------------------------------ types

    fn create_type(&mut self) -> Result<CreateType> {
        self.expect_kw("type")?;
        let if_not_exists = self.if_not_exists();
        let name = self.user_type_name()?;
        let fields = self.parenthesized(false, |p| Ok((p.ident()?, p.type_expr()?)))?;
        Ok(CreateType {
            if_not_exists,
            name,
            fields,
        })
    }

    fn alter_type(&mut self) -> Result<AlterType> {
        self.expect_kw("type")?;
        let if_exists = self.if_exists();
        let name = self.user_type_name()?;
        let action = if self.eat_kw("add") {
            let if_not_exists = self.if_not_exists();
            let field = self.ident()?;
            let ty = self.type_expr()?;
            AlterTypeAction::Add {
                if_not_exists,
                field,
                ty,
            }
        } else if self.eat_kw("rename") {
            let if_exists = self.if_exists();
            let renames = self.renames()?;
            AlterTypeAction::Rename { if_exists, renames }
        } else if self.eat_kw("alter") {
            let field = self.ident()?;
            self.expect_kw("type")?;
            let ty = self.type_expr()?;
            AlterTypeAction::AlterFieldType { field, ty }
        } else {
            return Err(self.no_viable());
        };
        Ok(AlterType {
            if_exists,
            name,
            action,
        })
    }

    // ------------------------------------------------------------ indexes, views, triggers

    fn create_index(&mut self) -> Result<CreateIndex> {
        let custom = self.eat_kw("custom");
        self.expect_kw("index")?;
        let if_not_exists = self.if_not_exists();
        let name = match self.is_kw("on") {
            true => None,
            false => Some(self.ident()?),
        };
        self.expect_kw("on")?;
        let table = self.qualified_name()?;
        if self.is_sym("(") && self.peek_at(1).kind == TokenKind::Symbol && !self.is_sym_at(1, ")")
        {
            // The targets are optional to ANTLR: a symbol that cannot start
            // one is where ')' was due.
            self.advance();
            return Err(self.mismatch("')'"));
        }
        let targets = self.parenthesized(true, Parser::index_target)?;
        let mut class = None;
        if self.eat_kw("using") {
            class = Some(self.string()?);
        }
        let properties = match self.eat_kw("with") {
            true => self.properties()?,
            false => Vec::new(),
        };
        Ok(CreateIndex {
            custom,
            if_not_exists,
            name,
            table,
            targets,
            class,
            properties,
        })
    }

    fn index_target(&mut self) -> Result<IndexTarget> {
        let kind = match self.peek().value.as_str() {
            "keys" => IndexTargetKind::Keys,
            "values" => IndexTargetKind::Values,
            "entries" => IndexTargetKind::Entries,
            "full" => IndexTargetKind::Full,
            _ => IndexTargetKind::Simple,
        };
        let wrapped = kind != IndexTargetKind::Simple
            && self.peek().kind == TokenKind::Ident
            && self.is_sym_at(1, "(");
        if !wrapped {
            let column = self.ident()?;
            let kind = IndexTargetKind::Simple;
            return Ok(IndexTarget { column, kind });
        }
        self.advance();
        self.expect_sym("(")?;
        let column = self.ident()?;
        self.expect_sym(")")?;
        Ok(IndexTarget { column, kind })
    }

    fn create_view(&mut self) -> Result<CreateMaterializedView> {
        self.expect_kw("materialized")?;
        self.expect_kw("view")?;
        let if_not_exists = self.if_not_exists();
        let name = self.qualified_name()?;
        self.expect_kw("as")?;
        self.expect_kw("select")?;
        if self.is_kw("distinct") && self.is_ident_at(1) && !self.is_kw_at(1, "from") {
            // A view's selection has no DISTINCT: ANTLR reads it as a column
            // name and finds no way on at the word after it.
            return Err(self.no_viable_ahead(1));
        }
        let selection = self.selection()?;
        self.expect_kw("from")?;
        let base_table = self.qualified_name()?;
        let where_clause = match self.eat_kw("where") {
            true => self.where_clause()?,
            false => Vec::new(),
        };
        self.expect_kw("primary")?;
        self.expect_kw("key")?;
        let (partition_key, clustering_key) = self.primary_key()?;
        let options = self.with_table_options()?;
        Ok(CreateMaterializedView {
            if_not_exists,
            name,
            selection,
            base_table,
            where_clause,
            partition_key,
            clustering_key,
            options,
        })
    }

    fn alter_view(&mut self) -> Result<AlterMaterializedView> {
        self.expect_kw("materialized")?;
        self.expect_kw("view")?;
        let if_exists = self.if_exists();
        let name = self.qualified_name()?;
        if !self.eat_kw("with") {
            // ANTLR had read the token after the offending one.
            return Err(self.mismatch_ahead("K_WITH", 1));
        }
        let properties = self.properties()?;
        Ok(AlterMaterializedView {
            if_exists,
            name,
            properties,
        })
    }

    fn create_trigger(&mut self) -> Result<CreateTrigger> {
        self.expect_kw("trigger")?;
        let if_not_exists = self.if_not_exists();
        let name = self.ident()?;
        self.expect_kw("on")?;
        let table = self.qualified_name()?;
        self.expect_kw("using")?;
        let class = self.string()?;
        Ok(CreateTrigger {
            if_not_exists,
            name,
            table,
            class,
        })
    }

    fn drop_trigger(&mut self) -> Result<DropTrigger> {
        self.expect_kw("trigger")?;
        let if_exists = self.if_exists();
        let name = self.ident()?;
        self.expect_kw("on")?;
        let table = self.qualified_name()?;
        Ok(DropTrigger {
            if_exists,
            name,
            table,
        })
    }

    // ------------------------------------------------------------ functions and aggregates

    fn create_routine(&mut self, or_replace: bool) -> Result<Statement> {
        if self.eat_kw("function") {
            return Ok(Statement::CreateFunction(Box::new(
                self.create_function(or_replace)?,
            )));
        }
        self.expect_kw("aggregate")?;
        Ok(Statement::CreateAggregate(Box::new(
            self.create_aggregate(or_replace)?,
        )))
    }

    fn create_function(&mut self, or_replace: bool) -> Result<CreateFunction> {
        let if_not_exists = self.if_not_exists();
        let name = self.function_name()?;
        let arguments = self.parenthesized(true, |p| Ok((p.ident()?, p.type_expr()?)))?;
        let called_on_null_input = if self.eat_kw("called") {
            true
        } else {
            self.expect_kw("returns")?;
            self.expect_kw("null")?;
            false
        };
        self.expect_kw("on")?;
        self.expect_kw("null")?;
        self.expect_kw("input")?;
        self.expect_kw("returns")?;
        let return_type = self.type_expr()?;
        self.expect_kw("language")?;
        let language = self.ident()?;
        self.expect_kw("as")?;
        let body = self.string()?;
        Ok(CreateFunction {
            or_replace,
            if_not_exists,
            name,
            arguments,
            called_on_null_input,
            return_type,
            language,
            body,
        })
    }

    fn create_aggregate(&mut self, or_replace: bool) -> Result<CreateAggregate> {
        let if_not_exists = self.if_not_exists();
        let name = self.function_name()?;
        let argument_types = self.parenthesized(true, Parser::type_expr)?;
        self.expect_kw("sfunc")?;
        let state_function = self.function_name()?.name;
        self.expect_kw("stype")?;
        let state_type = self.type_expr()?;
        let final_function = match self.eat_kw("finalfunc") {
            true => Some(self.function_name()?.name),
            false => None,
        };
        let initial_condition = match self.eat_kw("initcond") {
            true => Some(self.term()?),
            false => None,
        };
        Ok(CreateAggregate {
            or_replace,
            if_not_exists,
            name,
            argument_types,
            state_function,
            state_type,
            final_function,
            initial_condition,
        })
    }

    fn drop_routine(&mut self) -> Result<DropFunction> {
        let aggregate = self.eat_kw("aggregate");
        if !aggregate {
            self.expect_kw("function")?;
        }
        let if_exists = self.if_exists();
        let name = self.function_name()?;
        let argument_types = match self.is_sym("(") {
            true => Some(self.parenthesized(true, Parser::type_expr)?),
            false => None,
        };
        Ok(DropFunction {
            aggregate,
            if_exists,
            name,
            argument_types,
        })
    }

    /// Type list of a function signature, as in `FUNCTION ks.f(int, text)`.
    pub(crate) fn signature(&mut self) -> Result<Vec<TypeExpr>> {
        self.parenthesized(true, Parser::type_expr)
    }
}
