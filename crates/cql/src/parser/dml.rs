//! SELECT, INSERT, UPDATE, DELETE, BATCH, USE and TRUNCATE.

use super::Parser;
use crate::ast::{
    AssignOp, Assignment, Batch, BatchKind, BindReceiver, ColumnCondition, ColumnTarget, Condition,
    Delete, Ident, Insert, InsertValues, Modification, Ordering, OrderingKind, Select, Selection,
    Selector, Update, UsingParam,
};
use crate::error::{ParseError, Result};
use crate::lexer::TokenKind;

impl Parser {
    /// Runs `rule` only to see whether it would succeed; never moves the cursor.
    fn lookahead<T>(&mut self, rule: impl FnOnce(&mut Parser) -> Result<T>) -> bool {
        let checkpoint = self.checkpoint();
        let ok = self.attempt(rule).is_some();
        self.restore(checkpoint);
        ok
    }

    // ------------------------------------------------------------ SELECT

    pub(crate) fn select(&mut self) -> Result<Select> {
        self.expect_kw("select")?;
        // `json` and `distinct` are also valid column names: they are keywords
        // only when a whole select clause follows them, as in Cassandra.
        let json = self.is_kw("json")
            && self.lookahead(|p| {
                p.advance();
                p.select_clause()?;
                p.expect_kw("from")
            });
        if json {
            self.advance();
        }
        let (distinct, selection) = self.select_clause()?;
        self.expect_kw("from")?;
        let table = self.qualified_name()?;
        let where_clause = match self.eat_kw("where") {
            true => self.where_clause()?,
            false => Vec::new(),
        };
        let mut select = Select {
            json,
            distinct,
            selection,
            table,
            where_clause,
            group_by: Vec::new(),
            order_by: Vec::new(),
            per_partition_limit: None,
            limit: None,
            allow_filtering: false,
        };
        self.select_tail(&mut select)?;
        Ok(select)
    }

    /// GROUP BY, ORDER BY, PER PARTITION LIMIT, LIMIT, ALLOW FILTERING.
    fn select_tail(&mut self, select: &mut Select) -> Result<()> {
        for keyword in ["group", "order"] {
            if self.is_kw(keyword) && !self.is_kw_at(1, "by") {
                self.advance();
                return Err(self.mismatch("K_BY"));
            }
        }
        if self.eat_kws(&["group", "by"]) {
            select.group_by = self.comma_separated(|p| {
                p.with_receiver(BindReceiver::Unknown, Parser::selector_expr)
            })?;
        }
        if self.eat_kws(&["order", "by"]) {
            select.order_by = self.comma_separated(Parser::ordering)?;
        }
        if self.eat_kws(&["per", "partition", "limit"]) {
            select.per_partition_limit = Some(self.int_value(BindReceiver::PerPartitionLimit)?);
        }
        if self.eat_kw("limit") {
            select.limit = Some(self.int_value(BindReceiver::Limit)?);
        }
        if self.eat_kw("allow") {
            self.expect_kw("filtering")?;
            select.allow_filtering = true;
        }
        Ok(())
    }

    pub(crate) fn select_clause(&mut self) -> Result<(bool, Selection)> {
        let distinct = self.is_kw("distinct")
            && self.lookahead(|p| {
                p.advance();
                p.selection()?;
                p.expect_kw("from")
            });
        if distinct {
            self.advance();
        }
        Ok((distinct, self.selection()?))
    }

    pub(crate) fn selection(&mut self) -> Result<Selection> {
        if self.eat_sym("*") {
            return Ok(Selection::Wildcard);
        }
        Ok(Selection::Selectors(
            self.comma_separated(Parser::selector)?,
        ))
    }

    fn selector(&mut self) -> Result<Selector> {
        let expr = self.with_receiver(BindReceiver::Unknown, Parser::selector_expr)?;
        let alias = match self.eat_kw("as") {
            true => Some(self.ident()?),
            false => None,
        };
        Ok(Selector { expr, alias })
    }

    fn ordering(&mut self) -> Result<Ordering> {
        let column = self.ident()?;
        let kind = if self.eat_kws(&["ann", "of"]) {
            OrderingKind::Ann(
                self.with_receiver(BindReceiver::Column(column.clone()), Parser::term)?,
            )
        } else if self.eat_kw("desc") {
            OrderingKind::Desc
        } else {
            self.eat_kw("asc");
            OrderingKind::Asc
        };
        Ok(Ordering { column, kind })
    }

    pub(crate) fn comma_separated<T>(
        &mut self,
        mut item: impl FnMut(&mut Parser) -> Result<T>,
    ) -> Result<Vec<T>> {
        let mut items = vec![item(self)?];
        while self.eat_sym(",") {
            items.push(item(self)?);
        }
        Ok(items)
    }

    // ------------------------------------------------------------ INSERT

    pub(crate) fn insert(&mut self) -> Result<Insert> {
        self.expect_kw("insert")?;
        self.expect_kw("into")?;
        if self.is_ident_at(0)
            && !self.at_eof_at(1)
            && !(self.is_sym_at(1, ".") || self.is_sym_at(1, "(") || self.is_kw_at(1, "json"))
        {
            // ANTLR decides whether the name is a keyspace or the table by
            // the token after it, and fails there.
            return Err(self.no_viable_ahead(1));
        }
        let table = self.qualified_name()?;
        let values = match self.eat_kw("json") {
            true => self.json_values()?,
            false => self.column_values()?,
        };
        let if_not_exists = self.eat_kw("if");
        if if_not_exists {
            self.expect_kw("not")?;
            self.expect_kw("exists")?;
        }
        let using = self.using_clause(true)?;
        Ok(Insert {
            table,
            values,
            if_not_exists,
            using,
        })
    }

    fn json_values(&mut self) -> Result<InsertValues> {
        if !(self.peek().kind == TokenKind::String || self.is_sym("?") || self.is_sym(":")) {
            return Err(self.no_viable());
        }
        let value = self.with_receiver(BindReceiver::Json, Parser::term)?;
        let mut default_unset = false;
        if self.eat_kw("default") {
            default_unset = self.eat_kw("unset");
            if !default_unset && !self.eat_kw("null") {
                return Err(self.no_viable());
            }
        }
        Ok(InsertValues::Json {
            value,
            default_unset,
        })
    }

    fn column_values(&mut self) -> Result<InsertValues> {
        let columns = self.parenthesized(false, Parser::ident)?;
        self.expect_kw("values")?;
        let mut position = 0;
        let values = self.parenthesized(false, |p| {
            let receiver = match columns.get(position) {
                Some(column) => BindReceiver::Column(column.clone()),
                None => BindReceiver::Unknown,
            };
            position += 1;
            let value = p.with_receiver(receiver, Parser::term)?;
            if !p.can_follow_term() {
                return Err(p.no_viable());
            }
            Ok(value)
        })?;
        Ok(InsertValues::Columns { columns, values })
    }

    /// `USING TTL x AND TIMESTAMP y`; DELETE allows only TIMESTAMP.
    fn using_clause(&mut self, allow_ttl: bool) -> Result<Vec<UsingParam>> {
        if !self.eat_kw("using") {
            return Ok(Vec::new());
        }
        self.and_separated(|p| {
            if p.eat_kw("timestamp") {
                return Ok(UsingParam::Timestamp(p.int_value(BindReceiver::Timestamp)?));
            }
            if allow_ttl && p.eat_kw("ttl") {
                return Ok(UsingParam::Ttl(p.int_value(BindReceiver::Ttl)?));
            }
            Err(p.mismatch("K_TIMESTAMP"))
        })
    }

    // ------------------------------------------------------------ UPDATE

    pub(crate) fn update(&mut self) -> Result<Update> {
        self.expect_kw("update")?;
        let table = self.qualified_name()?;
        let using = self.using_clause(true)?;
        self.expect_kw("set")?;
        let assignments = self.comma_separated(Parser::assignment)?;
        self.expect_kw("where")?;
        let where_clause = self.where_clause()?;
        let condition = self.condition()?;
        Ok(Update {
            table,
            using,
            assignments,
            where_clause,
            condition,
        })
    }

    fn assignment(&mut self) -> Result<Assignment> {
        let column = self.ident()?;
        if self.is_sym("[") {
            let key = self.element_key(&column)?;
            let receiver = BindReceiver::ElementValue(column.clone());
            return self.plain_assignment(ColumnTarget::Element { column, key }, receiver);
        }
        if self.is_sym(".") && self.is_ident_at(1) {
            self.advance();
            let field = self.ident()?;
            let receiver = BindReceiver::Field {
                column: column.clone(),
                field: field.clone(),
            };
            return self.plain_assignment(ColumnTarget::Field { column, field }, receiver);
        }
        let receiver = BindReceiver::Column(column.clone());
        let shorthand = match self.peek().value.as_str() {
            "+=" => Some(AssignOp::Add),
            "-=" => Some(AssignOp::Subtract),
            _ => None,
        };
        if let Some(op) = shorthand.filter(|_| self.peek().kind == TokenKind::Symbol) {
            self.advance();
            let receiver = match op {
                AssignOp::Subtract => BindReceiver::Subtracted(column.clone()),
                _ => receiver,
            };
            let value = self.with_receiver(receiver, Parser::term)?;
            let target = ColumnTarget::Column(column);
            return Ok(Assignment { target, op, value });
        }
        self.expect_sym("=")?;
        self.column_assignment(column, receiver)
    }

    fn plain_assignment(
        &mut self,
        target: ColumnTarget,
        receiver: BindReceiver,
    ) -> Result<Assignment> {
        self.expect_sym("=")?;
        let value = self.with_receiver(receiver, Parser::term)?;
        Ok(Assignment {
            target,
            op: AssignOp::Set,
            value,
        })
    }

    /// After `c =`: `term`, `c + term`, `c - term` or `term + c`.
    fn column_assignment(&mut self, column: Ident, receiver: BindReceiver) -> Result<Assignment> {
        let self_reference = self.peek().kind != TokenKind::Symbol
            && (self.is_sym_at(1, "+") || self.is_sym_at(1, "-"))
            && !self.is_function_call_at(0)
            && self.is_ident_at(0);
        if self_reference {
            let other = self.ident()?;
            let sign = self.advance().value.clone();
            let (op, receiver) = match sign.as_str() {
                "+" => (AssignOp::Add, receiver),
                _ => (AssignOp::Subtract, BindReceiver::Subtracted(column.clone())),
            };
            // Cassandra checks the column after reading the value, so a
            // value that does not parse is the error it reports.
            let value = self.with_receiver(receiver, Parser::term)?;
            if other != column {
                return Err(ParseError::unpositioned(format!(
                    "Only expressions of the form X = X {sign}<value> are supported."
                )));
            }
            let target = ColumnTarget::Column(column);
            return Ok(Assignment { target, op, value });
        }
        let value = self.with_receiver(receiver, Parser::term)?;
        let mut op = AssignOp::Set;
        if self.is_sym("+") && self.is_ident_at(1) && !self.prepend_ends_at(2) {
            // ANTLR decided between `+ term` and a prepend's `+ column` at
            // the '+' by the token after the column, and neither fits it.
            return Err(self.no_viable_ahead(2));
        }
        if self.eat_sym("+") {
            if self.ident()? != column {
                return Err(ParseError::unpositioned(
                    "Only expressions of the form X = <value> + X are supported.",
                ));
            }
            op = AssignOp::Prepend;
        }
        let target = ColumnTarget::Column(column);
        Ok(Assignment { target, op, value })
    }

    /// `IF EXISTS` or `IF cond AND cond`.
    fn condition(&mut self) -> Result<Option<Condition>> {
        if !self.eat_kw("if") {
            return Ok(None);
        }
        let exists_is_column = {
            let next = self.peek_at(1);
            let word = next.value.as_str();
            (next.kind == TokenKind::Symbol && !matches!(word, ";" | ")"))
                || (next.kind == TokenKind::Ident && matches!(word, "in" | "contains" | "like"))
        };
        if self.is_kw("exists") && !exists_is_column {
            if !self.statement_ends_at(1) {
                // ANTLR chose between IF EXISTS and a condition on a column
                // named exists by the token after it, and neither fits.
                return Err(self.no_viable_ahead(1));
            }
            self.advance();
            return Ok(Some(Condition::Exists));
        }
        let conditions = self.and_separated(Parser::column_condition)?;
        if self.is_kw("or") {
            return Err(self.no_viable());
        }
        Ok(Some(Condition::Columns(conditions)))
    }

    /// Whether a prepend (`c = <value> + c`) can end before the token
    /// `ahead`: at the next assignment, at WHERE, or where the text ends.
    fn prepend_ends_at(&self, ahead: usize) -> bool {
        let next = self.peek_at(ahead);
        match next.kind {
            TokenKind::Eof => true,
            TokenKind::Symbol => next.value == ",",
            TokenKind::Ident => next.value == "where",
            _ => false,
        }
    }

    /// Whether a modification statement can end before the token `ahead`:
    /// at the end, a ';' or the next statement or APPLY of a batch.
    fn statement_ends_at(&self, ahead: usize) -> bool {
        let next = self.peek_at(ahead);
        match next.kind {
            TokenKind::Eof => true,
            TokenKind::Symbol => matches!(next.value.as_str(), ";" | ")"),
            TokenKind::Ident => matches!(
                next.value.as_str(),
                "apply" | "insert" | "update" | "delete"
            ),
            _ => false,
        }
    }

    fn column_condition(&mut self) -> Result<ColumnCondition> {
        let target = self.column_target()?;
        let receiver = match &target {
            ColumnTarget::Column(c) => BindReceiver::Column(c.clone()),
            ColumnTarget::Element { column, .. } => BindReceiver::ElementValue(column.clone()),
            ColumnTarget::Field { column, field } => BindReceiver::Field {
                column: column.clone(),
                field: field.clone(),
            },
        };
        let element = !matches!(target, ColumnTarget::Column(_));
        if self.is_kw("like") || (element && self.is_kw("contains")) {
            // Conditions have no LIKE, and CONTAINS only on a whole column.
            return Err(self.no_viable());
        }
        let op = self.operator()?;
        let value = self.operator_value(op, receiver)?;
        Ok(ColumnCondition { target, op, value })
    }

    /// `c`, `c[key]` or `c.field`.
    fn column_target(&mut self) -> Result<ColumnTarget> {
        let column = self.ident()?;
        if self.is_sym("[") {
            let key = self.element_key(&column)?;
            return Ok(ColumnTarget::Element { column, key });
        }
        if self.is_sym(".") && self.is_ident_at(1) {
            self.advance();
            let field = self.ident()?;
            return Ok(ColumnTarget::Field { column, field });
        }
        Ok(ColumnTarget::Column(column))
    }

    // ------------------------------------------------------------ DELETE

    pub(crate) fn delete(&mut self) -> Result<Delete> {
        self.expect_kw("delete")?;
        let targets = match self.is_kw("from") {
            true => Vec::new(),
            false => self.comma_separated(Parser::column_target)?,
        };
        self.expect_kw("from")?;
        let table = self.qualified_name()?;
        let using = self.using_clause(false)?;
        self.expect_kw("where")?;
        let where_clause = self.where_clause()?;
        let condition = self.condition()?;
        Ok(Delete {
            targets,
            table,
            using,
            where_clause,
            condition,
        })
    }

    // ------------------------------------------------------------ BATCH

    pub(crate) fn batch(&mut self) -> Result<Batch> {
        self.expect_kw("begin")?;
        let kind = if self.eat_kw("unlogged") {
            BatchKind::Unlogged
        } else if self.eat_kw("counter") {
            BatchKind::Counter
        } else {
            BatchKind::Logged
        };
        self.expect_kw("batch")?;
        let using = self.using_clause(true)?;
        let mut statements = Vec::new();
        while !self.eat_kws(&["apply", "batch"]) {
            statements.push(self.modification()?);
            while self.eat_sym(";") {}
        }
        Ok(Batch {
            kind,
            using,
            statements,
        })
    }

    fn modification(&mut self) -> Result<Modification> {
        if self.is_kw("insert") {
            return Ok(Modification::Insert(self.insert()?));
        }
        if self.is_kw("update") {
            return Ok(Modification::Update(self.update()?));
        }
        if self.is_kw("delete") {
            return Ok(Modification::Delete(self.delete()?));
        }
        Err(self.mismatch("K_APPLY"))
    }

    pub(crate) fn truncate(&mut self) -> Result<crate::ast::QualifiedName> {
        self.expect_kw("truncate")?;
        let _ = self.eat_kw("table") || self.eat_kw("columnfamily");
        self.qualified_name()
    }
}
