//! Types, terms, selectors, WHERE relations and WITH properties: the pieces
//! every statement rule is built from.

use rocksandra_data::types::NativeType;

use super::{Checkpoint, Parser};
use crate::ast::{
    BinaryOp, BindReceiver, ClusteringOrder, Expr, Ident, Literal, MetadataKind, NestedStep,
    Operator, Property, PropertyValue, QualifiedName, Relation, RelationLhs, TableOptions,
};
use crate::error::{ParseError, Result};
use crate::lexer::TokenKind;
use crate::types::TypeExpr;

/// Terms are values; selectors may also name columns and pick their parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Term,
    Selector,
}

/// The keywords of Cassandra's `native_type` rule.
const NATIVE_TYPE_KEYWORDS: &[&str] = &[
    "ascii",
    "bigint",
    "blob",
    "boolean",
    "counter",
    "decimal",
    "double",
    "duration",
    "float",
    "inet",
    "int",
    "smallint",
    "text",
    "timestamp",
    "tinyint",
    "uuid",
    "varchar",
    "varint",
    "timeuuid",
    "date",
    "time",
];

/// Words that can name a keyspace but not a user type (Cassandra's
/// `noncol_ident` less its `non_type_ident`): the native types' keywords and
/// a few unreserved ones.
fn is_keyspace_only_word(word: &str) -> bool {
    NATIVE_TYPE_KEYWORDS.contains(&word)
        || matches!(
            word,
            "ttl" | "count" | "writetime" | "maxwritetime" | "cast" | "json" | "distinct"
        )
}

/// The words the lexer would make constants in Cassandra's grammar.
fn keyword_literal(word: &str) -> Option<Literal> {
    match word {
        "true" => Some(Literal::Boolean(true)),
        "false" => Some(Literal::Boolean(false)),
        "null" => Some(Literal::Null),
        "nan" => Some(Literal::Float("NaN".into())),
        "infinity" => Some(Literal::Float("Infinity".into())),
        _ => None,
    }
}

impl Parser {
    // ------------------------------------------------------------ types

    pub(crate) fn type_expr(&mut self) -> Result<TypeExpr> {
        self.nested(Parser::type_expr_inner)
    }

    fn type_expr_inner(&mut self) -> Result<TypeExpr> {
        let token = self.peek().clone();
        match token.kind {
            TokenKind::String => {
                self.advance();
                Ok(TypeExpr::Custom(token.value))
            }
            TokenKind::QuotedName => self.udt_type_name(),
            TokenKind::Ident if self.is_sym_at(1, "<") => self.parameterized_type(&token.value),
            TokenKind::Ident => match NativeType::from_name(&token.value) {
                Some(native) if !self.is_sym_at(1, ".") => {
                    self.advance();
                    self.native_type_end = Some(self.pos);
                    Ok(TypeExpr::Native(native))
                }
                _ => self.udt_type_name(),
            },
            _ => Err(self.no_viable()),
        }
    }

    fn udt_type_name(&mut self) -> Result<TypeExpr> {
        let QualifiedName { keyspace, name } = self.user_type_name()?;
        Ok(TypeExpr::Udt { keyspace, name })
    }

    /// Cassandra's `userTypeName`, `[keyspace.]name`: a word that cannot
    /// name a type (`int`) can only be the keyspace, so a '.' must follow it.
    pub(crate) fn user_type_name(&mut self) -> Result<QualifiedName> {
        let token = self.peek();
        if token.kind == TokenKind::Ident
            && is_keyspace_only_word(&token.value)
            && !self.is_sym_at(1, ".")
        {
            self.advance();
            return Err(self.mismatch("'.'"));
        }
        self.qualified_name()
    }

    fn parameterized_type(&mut self, word: &str) -> Result<TypeExpr> {
        if !matches!(word, "frozen" | "list" | "set" | "map" | "tuple" | "vector") {
            return Err(self.no_viable());
        }
        self.advance();
        self.expect_sym("<")?;
        let boxed = |p: &mut Parser| p.type_expr().map(Box::new);
        let ty = match word {
            "frozen" => TypeExpr::Frozen(boxed(self)?),
            "list" => TypeExpr::List(boxed(self)?),
            "set" => TypeExpr::Set(boxed(self)?),
            "map" => {
                let key = boxed(self)?;
                self.expect_sym(",")?;
                TypeExpr::Map(key, boxed(self)?)
            }
            "tuple" => {
                if self.is_sym(">") {
                    // ANTLR recovers from the missing type with a null
                    // one, which the grammar's action then dereferences.
                    return Err(self.thrown_by_action(
                        "NullPointerException",
                        "Cannot invoke \"org.apache.cassandra.cql3.CQL3Type$Raw.supportsFreezing()\" because \"t\" is null",
                    ));
                }
                let mut items = vec![self.type_expr()?];
                while self.eat_sym(",") {
                    items.push(self.type_expr()?);
                }
                TypeExpr::Tuple(items)
            }
            _ => {
                let element = boxed(self)?;
                if !self.eat_sym(",") {
                    // ANTLR had read the token after this one when it
                    // failed, and its snippet runs to it.
                    return Err(self.mismatch_ahead("','", 1));
                }
                TypeExpr::Vector(element, self.vector_dimension()?)
            }
        };
        self.expect_sym(">")?;
        Ok(ty)
    }

    fn vector_dimension(&mut self) -> Result<u32> {
        // Cassandra's INTEGER token carries its sign.
        let negative = self.is_sym("-") && self.peek_at(1).kind == TokenKind::Integer;
        if negative {
            self.advance();
        }
        let token = self.peek();
        if token.kind != TokenKind::Integer {
            return Err(self.mismatch("INTEGER"));
        }
        let Ok(n) = token.value.parse::<i64>() else {
            return Err(self.mismatch("INTEGER"));
        };
        let n = if negative { -n } else { n };
        self.advance();
        match u32::try_from(n) {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(crate::error::ParseError::invalid(format!(
                "vectors may only have positive dimensions; given {n}"
            ))),
        }
    }

    // ------------------------------------------------------------ expressions

    pub(crate) fn term(&mut self) -> Result<Expr> {
        self.expr(Mode::Term)
    }

    pub(crate) fn selector_expr(&mut self) -> Result<Expr> {
        self.expr(Mode::Selector)
    }

    fn expr(&mut self, mode: Mode) -> Result<Expr> {
        self.nested(|p| p.additive(mode))
    }

    fn additive(&mut self, mode: Mode) -> Result<Expr> {
        let start = self.checkpoint();
        let mut left = self.multiplicative(mode)?;
        loop {
            let op = match self.peek().value.as_str() {
                "+" => BinaryOp::Add,
                "-" => BinaryOp::Subtract,
                _ => break,
            };
            // `SET c = [1] + c` is a prepend: leave `+ c` to the assignment rule.
            if self.peek().kind != TokenKind::Symbol
                || (mode == Mode::Term && self.is_column_ref_at(1))
            {
                break;
            }
            if op == BinaryOp::Subtract && self.negative_literal_follows() {
                return Err(self.signed_operand_error(mode, start));
            }
            self.advance();
            let right = self.within(NestedStep::Operand, |p| p.multiplicative(mode))?;
            left = binary(op, left, right);
        }
        Ok(left)
    }

    /// `1-1`, `k-1`: Cassandra's lexer reads the '-' and the number as one
    /// signed constant, which no rule takes after an operand. A selector
    /// of one name fails in the decision that began at that name.
    fn signed_operand_error(&mut self, mode: Mode, operand: Checkpoint) -> ParseError {
        if mode == Mode::Selector && operand.pos + 1 == self.checkpoint().pos {
            self.restore(operand);
            return self.no_viable_ahead(1);
        }
        self.no_viable_signed_number()
    }

    fn multiplicative(&mut self, mode: Mode) -> Result<Expr> {
        let mut left = self.group(mode)?;
        loop {
            let op = match self.peek().value.as_str() {
                "*" => BinaryOp::Multiply,
                "/" => BinaryOp::Divide,
                "%" => BinaryOp::Remainder,
                _ => break,
            };
            if self.peek().kind != TokenKind::Symbol {
                break;
            }
            self.advance();
            let right = self.within(NestedStep::Operand, |p| p.group(mode))?;
            left = binary(op, left, right);
        }
        Ok(left)
    }

    fn group(&mut self, mode: Mode) -> Result<Expr> {
        if self.is_sym("-") {
            if let Some(literal) = self.negative_literal() {
                let literal = self.finite_float(literal)?;
                return self.modifiers_if_selector(mode, Expr::Literal(literal));
            }
            self.advance();
            let operand = self.nested(|p| p.within(NestedStep::Operand, |p| p.group(mode)))?;
            return Ok(Expr::Negate(Box::new(operand)));
        }
        let base = self.simple(mode)?;
        self.modifiers_if_selector(mode, base)
    }

    fn modifiers_if_selector(&mut self, mode: Mode, base: Expr) -> Result<Expr> {
        match mode {
            Mode::Selector => self.selector_modifiers(base),
            Mode::Term => Ok(base),
        }
    }

    fn negative_literal_follows(&self) -> bool {
        let (minus, next) = (self.peek(), self.peek_at(1));
        let numeric = matches!(
            next.kind,
            TokenKind::Integer | TokenKind::Float | TokenKind::Duration
        ) || (next.kind == TokenKind::Ident && next.value == "infinity");
        self.is_sym("-") && minus.end == next.start && numeric
    }

    /// `-1`, `-1.5`, `-1h`, `-Infinity` written without a space: one constant,
    /// as Cassandra's lexer makes it.
    fn negative_literal(&mut self) -> Option<Literal> {
        if !self.negative_literal_follows() {
            return None;
        }
        let next = self.peek_at(1);
        let text = format!("-{}", next.value);
        let literal = match next.kind {
            TokenKind::Integer => Literal::Integer(text),
            TokenKind::Float => Literal::Float(text),
            TokenKind::Duration => Literal::Duration(text),
            TokenKind::Ident if next.value == "infinity" => Literal::Float("-Infinity".into()),
            _ => return None,
        };
        self.pos += 2;
        Some(literal)
    }

    /// A float literal as Cassandra's parser makes it: its preferred type is
    /// found by comparing the number with `BigDecimal.valueOf` of its double,
    /// which throws for a number beyond a double's range (`1e309`, `-1e400`:
    /// `new BigDecimal("Infinity")`), so the whole statement is refused.
    fn finite_float(&self, literal: Literal) -> Result<Literal> {
        let Literal::Float(text) = &literal else {
            return Ok(literal);
        };
        let named = matches!(text.as_str(), "NaN" | "Infinity" | "-Infinity");
        if !named && text.parse::<f64>().is_ok_and(f64::is_infinite) {
            return Err(self.thrown_by_action(
                "NumberFormatException",
                "Character I is neither a decimal digit number, decimal point, nor \"e\" notation exponential mark.",
            ));
        }
        Ok(literal)
    }

    /// `.field`, `[key]` and `[from..to]` after a selector.
    fn selector_modifiers(&mut self, mut base: Expr) -> Result<Expr> {
        loop {
            if self.is_sym(".") && self.is_ident_at(1) {
                self.advance();
                let field = self.ident()?;
                base = Expr::Field {
                    udt: Box::new(base),
                    field,
                };
            } else if self.is_sym("[") {
                base = self.element_or_slice(base)?;
            } else {
                return Ok(base);
            }
        }
    }

    fn element_or_slice(&mut self, collection: Expr) -> Result<Expr> {
        if self.is_sym_at(1, "..") && self.is_sym_at(2, "]") {
            // `c[..]`: Cassandra's grammar backs out of the selector at `[`.
            return Err(self.mismatch_ahead("K_FROM", 2));
        }
        self.expect_sym("[")?;
        let receiver = match &collection {
            Expr::Column(c) => BindReceiver::ElementKey(c.clone()),
            Expr::Field { udt, field } => match udt.as_ref() {
                Expr::Column(c) => BindReceiver::Nested {
                    parent: Box::new(BindReceiver::Field {
                        column: c.clone(),
                        field: field.clone(),
                    }),
                    step: NestedStep::ElementKey,
                },
                _ => BindReceiver::Unknown,
            },
            _ => BindReceiver::Unknown,
        };
        let from = match self.is_sym("..") {
            true => None,
            false => Some(self.with_receiver(receiver.clone(), Parser::term)?),
        };
        let expr = if self.eat_sym("..") {
            let to = match self.is_sym("]") {
                true => None,
                false => Some(Box::new(self.with_receiver(receiver, Parser::term)?)),
            };
            Expr::Slice {
                collection: Box::new(collection),
                from: from.map(Box::new),
                to,
            }
        } else {
            let key = from.ok_or_else(|| self.no_viable())?;
            Expr::Element {
                collection: Box::new(collection),
                key: Box::new(key),
            }
        };
        self.expect_sym("]")?;
        Ok(expr)
    }

    fn simple(&mut self, mode: Mode) -> Result<Expr> {
        let token = self.peek().clone();
        let literal = match token.kind {
            TokenKind::String => Literal::String(token.value),
            TokenKind::Integer => Literal::Integer(token.value),
            TokenKind::Float => self.finite_float(Literal::Float(token.value))?,
            TokenKind::Uuid => Literal::Uuid(token.value),
            TokenKind::Hex => Literal::Blob(token.value),
            TokenKind::Duration => Literal::Duration(token.value),
            TokenKind::Symbol => return self.symbol_term(mode, &token.value),
            TokenKind::Ident | TokenKind::QuotedName => return self.word_term(mode),
            TokenKind::Eof => return Err(self.no_viable()),
        };
        self.advance();
        Ok(Expr::Literal(literal))
    }

    fn symbol_term(&mut self, mode: Mode, symbol: &str) -> Result<Expr> {
        match symbol {
            "?" => {
                self.advance();
                Ok(Expr::Bind(self.new_bind(None)?))
            }
            ":" => {
                self.advance();
                let name = self.ident()?;
                Ok(Expr::Bind(self.new_bind(Some(name))?))
            }
            "[" => self.list_literal(mode),
            "{" => self.brace_literal(mode),
            "(" => self.parenthesized_term(mode),
            _ => Err(self.no_viable()),
        }
    }

    fn word_term(&mut self, mode: Mode) -> Result<Expr> {
        let token = self.peek().clone();
        if token.kind == TokenKind::Ident {
            if let Some(literal) = keyword_literal(&token.value) {
                self.advance();
                return Ok(Expr::Literal(literal));
            }
            if let Some(expr) = self.special_function(mode, &token.value)? {
                return Ok(expr);
            }
        }
        if self.is_function_call_at(0) {
            return self.function_call(mode);
        }
        match mode {
            Mode::Selector => Ok(Expr::Column(self.ident()?)),
            // Cassandra's parser reads the name as a possible function name
            // (`f(` or `ks.f(`) and fails at the first token that rules it out.
            Mode::Term if !self.is_sym_at(1, ".") => Err(self.no_viable_ahead(1)),
            Mode::Term if self.is_function_name_at(2) => Err(self.no_viable_ahead(3)),
            Mode::Term => Err(self.no_viable_ahead(2)),
        }
    }

    /// `CAST(x AS t)`, `count(*)`, `writetime(c)`, `maxwritetime(c)`, `ttl(c)`:
    /// calls with their own syntax or meaning.
    fn special_function(&mut self, mode: Mode, word: &str) -> Result<Option<Expr>> {
        if !self.is_sym_at(1, "(") {
            return Ok(None);
        }
        let kind = match word {
            "cast" => return self.cast(mode).map(Some),
            "count" if self.is_sym_at(2, "*") && self.is_sym_at(3, ")") => {
                self.pos += 4;
                return Ok(Some(Expr::CountStar));
            }
            "writetime" => MetadataKind::WriteTime,
            "maxwritetime" => MetadataKind::MaxWriteTime,
            "ttl" => MetadataKind::Ttl,
            _ => return Ok(None),
        };
        if mode == Mode::Term {
            return Ok(None);
        }
        self.pos += 2;
        let column = self.selector_expr()?;
        self.expect_sym(")")?;
        Ok(Some(Expr::Metadata {
            kind,
            column: Box::new(column),
        }))
    }

    fn cast(&mut self, mode: Mode) -> Result<Expr> {
        self.pos += 2;
        let expr = self.expr(mode)?;
        self.expect_kw("as")?;
        // CAST takes a native type only (the grammar's `native_type`).
        let token = self.peek();
        if token.kind != crate::lexer::TokenKind::Ident
            || !NATIVE_TYPE_KEYWORDS.contains(&token.value.as_str())
        {
            return Err(self.no_viable());
        }
        let ty = self.type_expr()?;
        self.expect_sym(")")?;
        Ok(Expr::Cast {
            expr: Box::new(expr),
            ty,
        })
    }

    fn is_function_name_at(&self, ahead: usize) -> bool {
        self.is_ident_at(ahead) || self.is_kw_at(ahead, "token")
    }

    /// `f(`, `ks.f(`.
    pub(crate) fn is_function_call_at(&self, ahead: usize) -> bool {
        self.is_function_name_at(ahead)
            && (self.is_sym_at(ahead + 1, "(")
                || (self.is_sym_at(ahead + 1, ".")
                    && self.is_function_name_at(ahead + 2)
                    && self.is_sym_at(ahead + 3, "(")))
    }

    /// A bare column name (not a call) at `ahead`. Constant words such as
    /// `true` are reserved, so `is_ident_at` already rules them out.
    fn is_column_ref_at(&self, ahead: usize) -> bool {
        self.is_ident_at(ahead)
            && !self.is_sym_at(ahead + 1, "(")
            && !self.is_sym_at(ahead + 1, ".")
    }

    pub(crate) fn function_name(&mut self) -> Result<QualifiedName> {
        let part = |p: &mut Parser| {
            if p.is_kw("token") {
                return Ok(Ident::new(p.advance().value));
            }
            p.ident()
        };
        let first = part(self)?;
        if !self.eat_sym(".") {
            return Ok(QualifiedName {
                keyspace: None,
                name: first,
            });
        }
        Ok(QualifiedName {
            keyspace: Some(first),
            name: part(self)?,
        })
    }

    fn function_call(&mut self, mode: Mode) -> Result<Expr> {
        let name = self.function_name()?;
        if self.is_sym_at(1, "*") && self.is_sym("(") {
            // Only count takes `*`: the argument list ends there.
            self.advance();
            return Err(self.mismatch("')'"));
        }
        let mut position = 0;
        let args = self.parenthesized(true, |p| {
            let step = NestedStep::FunctionArgument {
                function: name.clone(),
                position,
            };
            position += 1;
            if mode == Mode::Selector && p.is_kw("distinct") && p.is_ident_at(1) {
                // SQL's `count(DISTINCT a)`: DISTINCT can only be a column
                // name here, and Cassandra's parser fails at the name after it.
                return Err(p.no_viable_ahead(1));
            }
            p.within(step, |p| p.expr(mode))
        })?;
        Ok(Expr::Function { name, args })
    }

    fn list_literal(&mut self, mode: Mode) -> Result<Expr> {
        let items = self.delimited(("[", "]"), true, |p| {
            p.within(NestedStep::ListItem, |p| p.expr(mode))
        })?;
        Ok(Expr::List(items))
    }

    fn brace_literal(&mut self, mode: Mode) -> Result<Expr> {
        if self.is_sym_at(1, "}") {
            self.pos += 2;
            return Ok(Expr::Set(Vec::new()));
        }
        if self.is_ident_at(1) && self.is_sym_at(2, ":") {
            return self.udt_literal(mode);
        }
        if self.map_follows() {
            return self.map_literal(mode);
        }
        let items = self.delimited(("{", "}"), false, |p| {
            p.within(NestedStep::SetItem, |p| p.expr(mode))
        })?;
        Ok(Expr::Set(items))
    }

    fn udt_literal(&mut self, mode: Mode) -> Result<Expr> {
        let fields = self.delimited(("{", "}"), false, |p| {
            let field = p.ident()?;
            p.expect_sym(":")?;
            let value = p.within(NestedStep::UdtField(field.clone()), |p| p.expr(mode))?;
            Ok((field, value))
        })?;
        Ok(Expr::Udt(fields))
    }

    fn map_literal(&mut self, mode: Mode) -> Result<Expr> {
        let entries = self.delimited(("{", "}"), false, |p| {
            let key = p.within(NestedStep::MapKey, |p| p.expr(mode))?;
            p.expect_sym(":")?;
            let value = p.within(NestedStep::MapValue, |p| p.expr(mode))?;
            Ok((key, value))
        })?;
        Ok(Expr::Map(entries))
    }

    /// Whether the `{` at the cursor opens a map: a `:` after a complete first
    /// key at the top level (a `:` opening a named marker follows a separator).
    fn map_follows(&self) -> bool {
        let mut depth = 0usize;
        for ahead in 1.. {
            let token = self.peek_at(ahead);
            if token.kind == TokenKind::Eof {
                return false;
            }
            if token.kind != TokenKind::Symbol {
                continue;
            }
            match token.value.as_str() {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" if depth == 0 => return false,
                ")" | "]" | "}" => depth -= 1,
                "," if depth == 0 => return false,
                ":" if depth == 0 => {
                    let before = self.peek_at(ahead - 1);
                    let separator_before = before.kind == TokenKind::Symbol
                        && matches!(
                            before.value.as_str(),
                            "{" | "," | ":" | "(" | "[" | "+" | "-" | "*" | "/" | "%"
                        );
                    if !separator_before {
                        return true;
                    }
                }
                _ => {}
            }
        }
        false
    }

    /// `(type) term`, a tuple, or (in selectors) a parenthesised selector.
    fn parenthesized_term(&mut self, mode: Mode) -> Result<Expr> {
        let checkpoint = self.checkpoint();
        if let Some(ty) = self.attempt(|p| {
            p.expect_sym("(")?;
            let ty = p.type_expr()?;
            p.expect_sym(")")?;
            Ok(ty)
        }) {
            // In selectors `(u.f)[1]` reads better as an element of a field than
            // as a UDT-typed list literal: a bare name may be a column.
            let name_then_element =
                mode == Mode::Selector && matches!(ty, TypeExpr::Udt { .. }) && self.is_sym("[");
            if self.starts_simple_term(mode) && !name_then_element {
                let expr = self.with_receiver(BindReceiver::Hinted(ty.clone()), |p| {
                    p.nested(|p| match p.negative_literal() {
                        Some(literal) => Ok(Expr::Literal(literal)),
                        None => p.simple(mode),
                    })
                })?;
                return Ok(Expr::TypeHint {
                    ty,
                    expr: Box::new(expr),
                });
            }
            self.restore(checkpoint);
        }
        let mut position = 0;
        let items = self.parenthesized(false, |p| {
            // In selectors `(x)` is just `x`, so it must not change x's receiver.
            if mode == Mode::Selector {
                return p.expr(mode);
            }
            let step = NestedStep::TupleItem(position);
            position += 1;
            if mode == Mode::Selector && p.is_kw("distinct") && p.is_ident_at(1) {
                // SQL's `count(DISTINCT a)`: DISTINCT can only be a column
                // name here, and Cassandra's parser fails at the name after it.
                return Err(p.no_viable_ahead(1));
            }
            p.within(step, |p| p.expr(mode))
        })?;
        // In selectors `(x)` groups x; it stays a one-item tuple so that
        // labels keep the parentheses, as Cassandra's do.
        Ok(Expr::Tuple(items))
    }

    fn starts_simple_term(&self, mode: Mode) -> bool {
        let token = self.peek();
        match token.kind {
            TokenKind::String
            | TokenKind::Integer
            | TokenKind::Float
            | TokenKind::Uuid
            | TokenKind::Hex
            | TokenKind::Duration => true,
            TokenKind::Symbol if token.value == "-" => self.negative_literal_follows(),
            // `:name` is written tight; `(t) x: v` in a map is a key, then a value.
            TokenKind::Symbol if token.value == ":" => {
                self.is_ident_at(1) && token.end == self.peek_at(1).start
            }
            TokenKind::Symbol => matches!(token.value.as_str(), "?" | "[" | "{" | "("),
            TokenKind::Ident if keyword_literal(&token.value).is_some() => true,
            // `(t) AS x` ends a selector: read `as` as the alias keyword, not a column.
            TokenKind::Ident if token.value == "as" => false,
            TokenKind::Ident | TokenKind::QuotedName => {
                self.is_function_call_at(0) || (mode == Mode::Selector && self.is_ident_at(0))
            }
            TokenKind::Eof => false,
        }
    }

    /// LIMIT and USING values: an integer or a bind marker.
    pub(crate) fn int_value(&mut self, receiver: BindReceiver) -> Result<Expr> {
        let token = self.peek();
        let is_integer = token.kind == TokenKind::Integer
            || (self.is_sym("-") && self.peek_at(1).kind == TokenKind::Integer);
        if is_integer || self.is_sym("?") || self.is_sym(":") {
            return self.with_receiver(receiver, |p| p.nested(|p| p.group(Mode::Term)));
        }
        // Cassandra's intValue has three alternatives (INTEGER, :name, ?)
        Err(self.no_viable())
    }

    // ------------------------------------------------------------ WHERE

    pub(crate) fn where_clause(&mut self) -> Result<Vec<Relation>> {
        let relations = self.and_separated(Parser::relation)?;
        if self.is_kw("or") {
            // Cassandra 5.0's grammar has OR in its WHERE rules (for SAI).
            return Err(self.no_viable());
        }
        Ok(relations)
    }

    fn relation(&mut self) -> Result<Relation> {
        let column_tuple = self.is_sym_at(2, ",") || self.is_sym_at(2, ")");
        if self.is_sym("(") && !column_tuple {
            // Cassandra's grammar: `relation: ... | '(' relation ')'`.
            self.advance();
            let relation = self.relation()?;
            self.expect_sym(")")?;
            return Ok(relation);
        }
        if self.is_sym("(") {
            let columns = self.parenthesized(false, Parser::ident)?;
            return self.compare(
                RelationLhs::Columns(columns.clone()),
                BindReceiver::Columns(columns),
            );
        }
        if self.is_kw("token") && self.is_sym_at(1, "(") {
            self.advance();
            let columns = self.parenthesized(false, Parser::ident)?;
            // Cassandra's grammar takes only `=`, `<`, `<=`, `>`, `>=` and
            // `!=` after token(...): IN, CONTAINS and LIKE are no viable
            // alternative there.
            if self.is_kw("in") || self.is_kw("contains") || self.is_kw("like") {
                return Err(self.no_viable());
            }
            return self.compare(
                RelationLhs::Token(columns.clone()),
                BindReceiver::Token(columns),
            );
        }
        if self.is_ident_at(0) && !self.at_eof_at(1) && !self.relation_operator_at(1) {
            // `WHERE f(x) = 1`: ANTLR picks the relation's form by the token
            // after the name and fails there.
            return Err(self.no_viable_ahead(1));
        }
        let column = self.ident()?;
        if self.eat_kws(&["is", "not", "null"]) {
            return Ok(Relation::IsNotNull { column });
        }
        if self.is_sym("[") {
            let key = self.element_key(&column)?;
            if self.is_kw("in") || self.is_kw("contains") || self.is_kw("like") {
                // `c[key]` takes only the comparison operators.
                return Err(self.no_viable());
            }
            let receiver = BindReceiver::ElementValue(column.clone());
            return self.compare(RelationLhs::Element { column, key }, receiver);
        }
        self.compare(
            RelationLhs::Column(column.clone()),
            BindReceiver::Column(column),
        )
    }

    /// `[term]` addressing an element of `column`.
    pub(crate) fn element_key(&mut self, column: &Ident) -> Result<Expr> {
        self.expect_sym("[")?;
        let key = self.with_receiver(BindReceiver::ElementKey(column.clone()), Parser::term)?;
        if self.is_sym("..") {
            // No slices here; ANTLR had read the token after `..`.
            return Err(self.mismatch_ahead("']'", 1));
        }
        self.expect_sym("]")?;
        Ok(key)
    }

    fn compare(&mut self, lhs: RelationLhs, receiver: BindReceiver) -> Result<Relation> {
        let op = self.operator()?;
        let rhs = self.operator_value(op, receiver)?;
        Ok(Relation::Compare { lhs, op, rhs })
    }

    /// Whether the token `ahead` can follow a column name in a relation.
    fn relation_operator_at(&self, ahead: usize) -> bool {
        let token = self.peek_at(ahead);
        match token.kind {
            TokenKind::Symbol => matches!(
                token.value.as_str(),
                "=" | "<" | "<=" | ">" | ">=" | "!=" | "["
            ),
            TokenKind::Ident => matches!(token.value.as_str(), "in" | "like" | "contains" | "is"),
            _ => false,
        }
    }

    pub(crate) fn operator(&mut self) -> Result<Operator> {
        let token = self.peek();
        let word = match token.kind {
            TokenKind::Symbol | TokenKind::Ident => token.value.as_str(),
            _ => "",
        };
        let op = match word {
            "=" => Operator::Eq,
            "<" => Operator::Lt,
            "<=" => Operator::Lte,
            ">" => Operator::Gt,
            ">=" => Operator::Gte,
            "!=" => Operator::Neq,
            "in" => Operator::In,
            "like" => Operator::Like,
            "contains" if self.is_kw_at(1, "key") => {
                self.pos += 2;
                return Ok(Operator::ContainsKey);
            }
            "contains" => Operator::Contains,
            _ => return Err(self.no_viable()),
        };
        self.advance();
        Ok(op)
    }

    /// The right side of `op`, with the receiver bind markers there get.
    pub(crate) fn operator_value(&mut self, op: Operator, receiver: BindReceiver) -> Result<Expr> {
        let nested = |step| BindReceiver::Nested {
            parent: Box::new(receiver.clone()),
            step,
        };
        match op {
            Operator::In => self.in_values(receiver),
            Operator::Contains => {
                self.with_receiver(nested(NestedStep::ContainsValue), Parser::term)
            }
            Operator::ContainsKey => {
                self.with_receiver(nested(NestedStep::ContainsKey), Parser::term)
            }
            _ => {
                let value = self.with_receiver(receiver, Parser::term)?;
                self.relation_term_end = Some(self.pos);
                Ok(value)
            }
        }
    }

    /// `IN (a, b)` as a tuple of the items, or `IN ?`.
    fn in_values(&mut self, receiver: BindReceiver) -> Result<Expr> {
        if !self.is_sym("(") {
            return self.with_receiver(BindReceiver::InValues(Box::new(receiver)), Parser::term);
        }
        let mut position = 0;
        let items = self.parenthesized(true, |p| {
            let item = BindReceiver::Nested {
                parent: Box::new(receiver.clone()),
                step: NestedStep::InItem(position),
            };
            position += 1;
            p.with_receiver(item, Parser::term)
        })?;
        Ok(Expr::Tuple(items))
    }

    // ------------------------------------------------------------ WITH

    pub(crate) fn properties(&mut self) -> Result<Vec<Property>> {
        let properties = self.and_separated(Parser::property)?;
        check_unique_properties(&properties)?;
        Ok(properties)
    }

    fn property(&mut self) -> Result<Property> {
        if self.is_ident_at(0) && !self.is_sym_at(1, "=") {
            // ANTLR predicts a property by its name and the '=' after it,
            // and fails at the token that is not one (`WITH CLUSTERING ORDER`).
            return Err(self.no_viable_ahead(1));
        }
        let name = self.ident()?;
        self.expect_sym("=")?;
        let value = self.property_value()?;
        Ok(Property { name, value })
    }

    fn property_value(&mut self) -> Result<PropertyValue> {
        let token = self.peek();
        if token.kind == TokenKind::Ident
            && keyword_literal(&token.value).is_none()
            && !self.is_function_call_at(0)
        {
            return Ok(PropertyValue::Word(self.advance().value));
        }
        let checkpoint = self.checkpoint();
        let invalid = |p: &Parser| p.error_at(checkpoint, "Invalid property value".into());
        match self.term()? {
            Expr::Literal(literal) => Ok(PropertyValue::Constant(literal)),
            Expr::Set(items) if items.is_empty() => Ok(PropertyValue::Map(Vec::new())),
            Expr::Map(entries) => {
                let literals = entries.into_iter().map(|entry| match entry {
                    (Expr::Literal(k), Expr::Literal(v)) => Ok((k, v)),
                    _ => Err(invalid(self)),
                });
                Ok(PropertyValue::Map(literals.collect::<Result<_>>()?))
            }
            _ => Err(invalid(self)),
        }
    }

    /// A constant-only map such as role OPTIONS.
    pub(crate) fn literal_map(&mut self) -> Result<Vec<(Literal, Literal)>> {
        match self.property_value()? {
            PropertyValue::Map(entries) => Ok(entries),
            _ => Err(self.no_viable()),
        }
    }

    /// WITH options of CREATE TABLE and CREATE MATERIALIZED VIEW.
    pub(crate) fn table_options(&mut self) -> Result<TableOptions> {
        let mut options = TableOptions::default();
        loop {
            if self.eat_kws(&["clustering", "order", "by"]) {
                options.clustering_order = self.parenthesized(false, |p| {
                    let column = p.ident()?;
                    // Cassandra's grammar requires the direction.
                    let order = if p.eat_kw("desc") {
                        ClusteringOrder::Desc
                    } else if p.eat_kw("asc") {
                        ClusteringOrder::Asc
                    } else {
                        return Err(p.no_viable());
                    };
                    Ok((column, order))
                })?;
            } else if self.eat_kws(&["compact", "storage"]) {
                options.compact_storage = true;
            } else {
                options.properties.push(self.property()?);
            }
            if !self.eat_kw("and") {
                break;
            }
        }
        check_unique_properties(&options.properties)?;
        Ok(options)
    }
}

fn binary(op: BinaryOp, left: Expr, right: Expr) -> Expr {
    Expr::Binary {
        op,
        left: Box::new(left),
        right: Box::new(right),
    }
}

/// Cassandra's `PropertyDefinitions.addProperty`: each property once.
fn check_unique_properties(properties: &[Property]) -> Result<()> {
    for (i, property) in properties.iter().enumerate() {
        if properties[..i].iter().any(|p| p.name == property.name) {
            return Err(ParseError::unpositioned(format!(
                "Multiple definitions for property '{}'",
                property.name.as_str()
            )));
        }
    }
    Ok(())
}
