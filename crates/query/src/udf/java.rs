//! A small, exact interpreter for a documented subset of Java function
//! bodies (Cassandra 5.0 compiles UDF bodies with a Java compiler; we
//! cannot). `compile` parses and type-checks a body at CREATE FUNCTION and
//! refuses anything outside the subset, naming the construct, so a body we
//! accept runs with Java's semantics or not at all.
//!
//! The subset (docs/compatibility.md repeats it):
//! - statements: `return e;`, `if (c) S [else S]` with `{ ... }` blocks,
//!   and local declarations `T name = e;` of the types below;
//! - types: `int long short byte float double boolean` and their boxes
//!   `Integer Long Short Byte Float Double Boolean`, and `String`;
//! - expressions: literals (`1`, `1L`, `1.5`, `1.5f`, `"s"`, `true`,
//!   `null`), names, `( )`, primitive casts, unary `- !`, `* / %`, `+ -`
//!   (string concatenation when a side is a String), `< <= > >=`, `== !=`
//!   (numbers and booleans, or any value against `null`), `&& ||`, `? :`;
//! - calls: `Math.abs max min sqrt cbrt log log10 exp pow floor ceil`,
//!   `Integer/Long/Short/Byte/Float/Double/Boolean.valueOf`, `String.valueOf`,
//!   `x.intValue() longValue() doubleValue() floatValue() shortValue()
//!   byteValue() toString()`, `x.equals(y)` of one class, `s.length()
//!   isEmpty() toUpperCase() toLowerCase() trim()`.
//!
//! Run-time failures are Java's exceptions (`NullPointerException` when a
//! null is unboxed or called, `ArithmeticException: / by zero`), reported by
//! the caller as FUNCTION_FAILURE.

use std::collections::HashMap;

/// A primitive Java type; its box is the same with `boxed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prim {
    Bool,
    Byte,
    Short,
    Int,
    Long,
    Float,
    Double,
}

impl Prim {
    fn name(self) -> &'static str {
        match self {
            Prim::Bool => "boolean",
            Prim::Byte => "byte",
            Prim::Short => "short",
            Prim::Int => "int",
            Prim::Long => "long",
            Prim::Float => "float",
            Prim::Double => "double",
        }
    }

    fn box_name(self) -> &'static str {
        match self {
            Prim::Bool => "Boolean",
            Prim::Byte => "Byte",
            Prim::Short => "Short",
            Prim::Int => "Integer",
            Prim::Long => "Long",
            Prim::Float => "Float",
            Prim::Double => "Double",
        }
    }

    fn from_name(name: &str) -> Option<(Prim, bool)> {
        const ALL: [Prim; 7] = [
            Prim::Bool,
            Prim::Byte,
            Prim::Short,
            Prim::Int,
            Prim::Long,
            Prim::Float,
            Prim::Double,
        ];
        ALL.iter().find_map(|p| {
            (p.name() == name)
                .then_some((*p, false))
                .or_else(|| (p.box_name() == name).then_some((*p, true)))
        })
    }

    fn is_numeric(self) -> bool {
        self != Prim::Bool
    }

    /// Java's numeric promotion rank.
    fn rank(self) -> u8 {
        match self {
            Prim::Bool => 0,
            Prim::Byte | Prim::Short | Prim::Int => 1,
            Prim::Long => 2,
            Prim::Float => 3,
            Prim::Double => 4,
        }
    }
}

/// The static type of an expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    Prim(Prim),
    Boxed(Prim),
    Str,
    Null,
}

impl Ty {
    fn name(self) -> String {
        match self {
            Ty::Prim(p) => p.name().into(),
            Ty::Boxed(p) => p.box_name().into(),
            Ty::Str => "String".into(),
            Ty::Null => "null".into(),
        }
    }

    /// The primitive a value of this type unboxes to.
    fn unboxed(self) -> Option<Prim> {
        match self {
            Ty::Prim(p) | Ty::Boxed(p) => Some(p),
            _ => None,
        }
    }

    fn numeric(self) -> Option<Prim> {
        self.unboxed().filter(|p| p.is_numeric())
    }

    fn is_reference(self) -> bool {
        !matches!(self, Ty::Prim(_))
    }
}

/// A run-time value.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    Null,
    Bool(bool),
    Byte(i8),
    Short(i16),
    Int(i32),
    Long(i64),
    Float(f32),
    Double(f64),
    Str(String),
}

/// Why a body was refused, or why a call failed (a Java exception's text).
pub type Failure = String;

#[derive(Clone, Debug, PartialEq)]
enum Expr {
    Const(Val),
    Local(usize),
    Unary(UnaryOp, Box<Expr>),
    /// Arithmetic or comparison in the promoted type `Prim`.
    Binary(BinOp, Prim, Box<Expr>, Box<Expr>),
    Concat(Box<Expr>, Box<Expr>),
    /// `==`/`!=` of a reference against null (`true`: `==`).
    IsNull(bool, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// Converts to a primitive (unboxing, widening, casts).
    Convert(Prim, Box<Expr>),
    /// Boxing: keeps the value; null stays null.
    Call(Method, Vec<Expr>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum UnaryOp {
    Neg,
    Not,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BinOp {
    Mul,
    Div,
    Rem,
    Add,
    Sub,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

/// `Math` functions of one double.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MathFn {
    Sqrt,
    Cbrt,
    Log,
    Log10,
    Exp,
    Floor,
    Ceil,
}

impl MathFn {
    fn apply(self, x: f64) -> f64 {
        match self {
            MathFn::Sqrt => x.sqrt(),
            MathFn::Cbrt => x.cbrt(),
            MathFn::Log => x.ln(),
            MathFn::Log10 => x.log10(),
            MathFn::Exp => x.exp(),
            MathFn::Floor => x.floor(),
            MathFn::Ceil => x.ceil(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Method {
    /// `Math.f` on doubles.
    MathDouble(MathFn),
    MathPow,
    /// `Math.abs/max/min` in the promoted type.
    MathAbs(Prim),
    MathMax(Prim),
    MathMin(Prim),
    /// `String.valueOf(x)`, `x.toString()` (null: NPE for toString).
    ToText {
        null_is_error: bool,
    },
    Length,
    IsEmpty,
    Upper,
    Lower,
    Trim,
    /// `x.equals(y)`: Java's `String.equals` and the boxes' `equals`.
    Equals,
}

#[derive(Clone, Debug, PartialEq)]
enum Stmt {
    Return(Expr),
    If(Expr, Vec<Stmt>, Vec<Stmt>),
    Let(usize, Expr),
}

/// A compiled body.
#[derive(Clone, Debug, PartialEq)]
pub struct Body {
    statements: Vec<Stmt>,
    locals: usize,
}

/// Parses and type-checks `source` for a function taking `params` (name,
/// Java type) and returning `returns`.
pub fn compile(source: &str, params: &[(String, Ty)], returns: Ty) -> Result<Body, Failure> {
    let tokens = lex(source)?;
    let mut parser = Parser {
        tokens,
        at: 0,
        scopes: vec![params
            .iter()
            .cloned()
            .enumerate()
            .map(|(i, (n, t))| (n, (i, t)))
            .collect()],
        locals: params.len(),
        returns,
    };
    let mut statements = Vec::new();
    while !parser.done() {
        if ends_in_return(&statements) {
            return Err("unreachable statement".into());
        }
        statements.push(parser.statement()?);
    }
    if !ends_in_return(&statements) {
        return Err("missing return statement".into());
    }
    Ok(Body {
        statements,
        locals: parser.locals,
    })
}

fn ends_in_return(statements: &[Stmt]) -> bool {
    match statements.last() {
        Some(Stmt::Return(_)) => true,
        Some(Stmt::If(_, then, otherwise)) => ends_in_return(then) && ends_in_return(otherwise),
        _ => false,
    }
}

impl Body {
    /// Runs the body on its arguments (in parameter order).
    pub fn call(&self, args: Vec<Val>) -> Result<Val, Failure> {
        let mut locals = args;
        locals.resize(self.locals, Val::Null);
        match run_block(&self.statements, &mut locals)? {
            Some(v) => Ok(v),
            None => Err("java.lang.IllegalStateException: no return".into()),
        }
    }
}

// ---------------------------------------------------------------- lexer

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Int(String),
    Str(String),
    Sym(&'static str),
}

const SYMBOLS: [&str; 24] = [
    "&&", "||", "==", "!=", "<=", ">=", "(", ")", "{", "}", ";", ",", ".", "+", "-", "*", "/", "%",
    "<", ">", "!", "?", ":", "=",
];

fn lex(source: &str) -> Result<Vec<Tok>, Failure> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            let rest: String = chars[i + 2..].iter().collect();
            let end = rest.find("*/").ok_or("unterminated comment")?;
            i += 2 + rest[..end].chars().count() + 2;
        } else if c.is_ascii_alphabetic() || c == '_' || c == '$' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == '$')
            {
                i += 1;
            }
            out.push(Tok::Ident(chars[start..i].iter().collect()));
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            i = lex_number(&chars, i, &mut out);
        } else if c == '"' {
            i = lex_string(&chars, i, &mut out)?;
        } else {
            let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
            let symbol = SYMBOLS
                .iter()
                .find(|s| s.len() == 2 && **s == two)
                .or_else(|| SYMBOLS.iter().find(|s| s.len() == 1 && s.starts_with(c)))
                .ok_or_else(|| format!("the character '{c}'"))?;
            i += symbol.len();
            out.push(Tok::Sym(symbol));
        }
    }
    Ok(out)
}

fn lex_number(chars: &[char], mut i: usize, out: &mut Vec<Tok>) -> usize {
    let start = i;
    let mut previous = ' ';
    while i < chars.len() {
        let c = chars[i];
        let sign_of_exponent = (c == '+' || c == '-') && (previous == 'e' || previous == 'E');
        if !(c.is_ascii_alphanumeric() || c == '.' || c == '_' || sign_of_exponent) {
            break;
        }
        previous = c;
        i += 1;
    }
    out.push(Tok::Int(chars[start..i].iter().collect()));
    i
}

fn lex_string(chars: &[char], mut i: usize, out: &mut Vec<Tok>) -> Result<usize, Failure> {
    let mut text = String::new();
    i += 1;
    loop {
        match chars.get(i) {
            None | Some('\n') => return Err("unterminated string literal".into()),
            Some('"') => break,
            Some('\\') => {
                let escaped = match chars.get(i + 1) {
                    Some('n') => '\n',
                    Some('t') => '\t',
                    Some('r') => '\r',
                    Some('"') => '"',
                    Some('\'') => '\'',
                    Some('\\') => '\\',
                    _ => return Err("this escape sequence in a string literal".into()),
                };
                text.push(escaped);
                i += 2;
            }
            Some(c) => {
                text.push(*c);
                i += 1;
            }
        }
    }
    out.push(Tok::Str(text));
    Ok(i + 1)
}

// ---------------------------------------------------------------- parser and type checker

struct Parser {
    tokens: Vec<Tok>,
    at: usize,
    /// Names in scope: parameters, then each block's locals.
    scopes: Vec<HashMap<String, (usize, Ty)>>,
    locals: usize,
    returns: Ty,
}

type Typed = (Expr, Ty);

impl Parser {
    fn done(&self) -> bool {
        self.at >= self.tokens.len()
    }

    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.at)
    }

    fn peek_at(&self, n: usize) -> Option<&Tok> {
        self.tokens.get(self.at + n)
    }

    fn is_sym(&self, s: &str) -> bool {
        matches!(self.peek(), Some(Tok::Sym(x)) if *x == s)
    }

    fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Some(Tok::Ident(x)) if x == w)
    }

    fn eat_sym(&mut self, s: &str) -> bool {
        let found = self.is_sym(s);
        if found {
            self.at += 1;
        }
        found
    }

    fn expect_sym(&mut self, s: &str) -> Result<(), Failure> {
        if self.eat_sym(s) {
            return Ok(());
        }
        Err(format!("'{s}' expected, found {}", self.describe_next()))
    }

    fn describe_next(&self) -> String {
        match self.peek() {
            None => "the end of the body".into(),
            Some(Tok::Ident(w)) | Some(Tok::Int(w)) => format!("'{w}'"),
            Some(Tok::Str(_)) => "a string literal".into(),
            Some(Tok::Sym(s)) => format!("'{s}'"),
        }
    }

    fn ident(&mut self) -> Result<String, Failure> {
        match self.peek() {
            Some(Tok::Ident(w)) => {
                let w = w.clone();
                self.at += 1;
                Ok(w)
            }
            _ => Err(format!("a name expected, found {}", self.describe_next())),
        }
    }

    fn lookup(&self, name: &str) -> Option<(usize, Ty)> {
        self.scopes.iter().rev().find_map(|s| s.get(name).copied())
    }

    fn statement(&mut self) -> Result<Stmt, Failure> {
        if self.is_word("return") {
            self.at += 1;
            let (e, ty) = self.expr()?;
            self.expect_sym(";")?;
            return Ok(Stmt::Return(assign(e, ty, self.returns)?));
        }
        if self.is_word("if") {
            self.at += 1;
            self.expect_sym("(")?;
            let condition = self.condition()?;
            self.expect_sym(")")?;
            let then = self.block()?;
            let otherwise = if self.is_word("else") {
                self.at += 1;
                self.block()?
            } else {
                Vec::new()
            };
            return Ok(Stmt::If(condition, then, otherwise));
        }
        if let Some(Tok::Ident(w)) = self.peek() {
            let declared = match w.as_str() {
                "String" => Some(Ty::Str),
                other => Prim::from_name(other)
                    .map(|(p, boxed)| if boxed { Ty::Boxed(p) } else { Ty::Prim(p) }),
            };
            if let (Some(ty), Some(Tok::Ident(_))) = (declared, self.peek_at(1)) {
                self.at += 1;
                return self.declaration(ty);
            }
        }
        Err(format!(
            "the statement starting with {}",
            self.describe_next()
        ))
    }

    fn declaration(&mut self, ty: Ty) -> Result<Stmt, Failure> {
        let name = self.ident()?;
        if self.lookup(&name).is_some() {
            return Err(format!("variable {name} is already defined"));
        }
        self.expect_sym("=")?;
        let (e, from) = self.expr()?;
        self.expect_sym(";")?;
        let value = assign(e, from, ty)?;
        let slot = self.locals;
        self.locals += 1;
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name, (slot, ty));
        }
        Ok(Stmt::Let(slot, value))
    }

    fn block(&mut self) -> Result<Vec<Stmt>, Failure> {
        if !self.eat_sym("{") {
            return match self.statement()? {
                Stmt::Let(..) => Err("a declaration outside a block".into()),
                s => Ok(vec![s]),
            };
        }
        self.scopes.push(HashMap::new());
        let mut out = Vec::new();
        while !self.eat_sym("}") {
            if self.done() {
                return Err("'}' expected, found the end of the body".into());
            }
            if ends_in_return(&out) {
                return Err("unreachable statement".into());
            }
            out.push(self.statement()?);
        }
        self.scopes.pop();
        Ok(out)
    }

    fn condition(&mut self) -> Result<Expr, Failure> {
        let (e, ty) = self.expr()?;
        to_prim(e, ty, Prim::Bool, "a condition")
    }

    fn expr(&mut self) -> Result<Typed, Failure> {
        let (c, cty) = self.or()?;
        if !self.eat_sym("?") {
            return Ok((c, cty));
        }
        let c = to_prim(c, cty, Prim::Bool, "a condition")?;
        let (a, aty) = self.expr()?;
        self.expect_sym(":")?;
        let (b, bty) = self.expr()?;
        let ty = conditional_type(aty, bty)?;
        let convert = |e: Expr, t: Ty| match ty {
            Ty::Prim(p) => to_prim(e, t, p, "a conditional"),
            _ => Ok(e),
        };
        Ok((
            Expr::Cond(
                Box::new(c),
                Box::new(convert(a, aty)?),
                Box::new(convert(b, bty)?),
            ),
            ty,
        ))
    }

    fn or(&mut self) -> Result<Typed, Failure> {
        let (mut left, mut lty) = self.and()?;
        while self.eat_sym("||") {
            let (right, rty) = self.and()?;
            let l = to_prim(left, lty, Prim::Bool, "'||'")?;
            let r = to_prim(right, rty, Prim::Bool, "'||'")?;
            left = Expr::Or(Box::new(l), Box::new(r));
            lty = Ty::Prim(Prim::Bool);
        }
        Ok((left, lty))
    }

    fn and(&mut self) -> Result<Typed, Failure> {
        let (mut left, mut lty) = self.equality()?;
        while self.eat_sym("&&") {
            let (right, rty) = self.equality()?;
            let l = to_prim(left, lty, Prim::Bool, "'&&'")?;
            let r = to_prim(right, rty, Prim::Bool, "'&&'")?;
            left = Expr::And(Box::new(l), Box::new(r));
            lty = Ty::Prim(Prim::Bool);
        }
        Ok((left, lty))
    }

    fn equality(&mut self) -> Result<Typed, Failure> {
        let mut left = self.relational()?;
        loop {
            let op = if self.eat_sym("==") {
                BinOp::Eq
            } else if self.eat_sym("!=") {
                BinOp::Ne
            } else {
                return Ok(left);
            };
            let right = self.relational()?;
            left = equality(op, left, right)?;
        }
    }

    fn relational(&mut self) -> Result<Typed, Failure> {
        let mut left = self.additive()?;
        loop {
            let op = [
                ("<=", BinOp::Le),
                (">=", BinOp::Ge),
                ("<", BinOp::Lt),
                (">", BinOp::Gt),
            ]
            .into_iter()
            .find(|(s, _)| self.is_sym(s));
            let Some((_, op)) = op else {
                return Ok(left);
            };
            self.at += 1;
            let right = self.additive()?;
            let (l, r, p) = promote_pair(left, right, "a comparison")?;
            left = (
                Expr::Binary(op, p, Box::new(l), Box::new(r)),
                Ty::Prim(Prim::Bool),
            );
        }
    }

    fn additive(&mut self) -> Result<Typed, Failure> {
        let mut left = self.multiplicative()?;
        loop {
            let op = if self.eat_sym("+") {
                BinOp::Add
            } else if self.eat_sym("-") {
                BinOp::Sub
            } else {
                return Ok(left);
            };
            let right = self.multiplicative()?;
            if op == BinOp::Add && (left.1 == Ty::Str || right.1 == Ty::Str) {
                left = (Expr::Concat(Box::new(left.0), Box::new(right.0)), Ty::Str);
                continue;
            }
            left = arithmetic(op, left, right)?;
        }
    }

    fn multiplicative(&mut self) -> Result<Typed, Failure> {
        let mut left = self.unary()?;
        loop {
            let op = if self.eat_sym("*") {
                BinOp::Mul
            } else if self.eat_sym("/") {
                BinOp::Div
            } else if self.eat_sym("%") {
                BinOp::Rem
            } else {
                return Ok(left);
            };
            let right = self.unary()?;
            left = arithmetic(op, left, right)?;
        }
    }

    fn unary(&mut self) -> Result<Typed, Failure> {
        if self.eat_sym("-") {
            if let Some(Tok::Int(text)) = self.peek() {
                // `-2147483648` is an int literal only with its sign.
                let text = format!("-{text}");
                self.at += 1;
                return self.postfix(number_literal(&text)?);
            }
            let (e, ty) = self.unary()?;
            let p = promote(ty.numeric().ok_or_else(|| bad_operand("'-'", ty))?);
            return Ok((
                Expr::Unary(UnaryOp::Neg, Box::new(to_prim(e, ty, p, "'-'")?)),
                Ty::Prim(p),
            ));
        }
        if self.eat_sym("!") {
            let (e, ty) = self.unary()?;
            let e = to_prim(e, ty, Prim::Bool, "'!'")?;
            return Ok((Expr::Unary(UnaryOp::Not, Box::new(e)), Ty::Prim(Prim::Bool)));
        }
        if let (Some(Tok::Sym("(")), Some(Tok::Ident(w)), Some(Tok::Sym(")"))) =
            (self.peek(), self.peek_at(1), self.peek_at(2))
        {
            if let Some((p, false)) = Prim::from_name(w) {
                self.at += 3;
                let (e, ty) = self.unary()?;
                return Ok((cast(e, ty, p)?, Ty::Prim(p)));
            }
        }
        let primary = self.primary()?;
        self.postfix(primary)
    }

    fn primary(&mut self) -> Result<Typed, Failure> {
        let Some(token) = self.peek().cloned() else {
            return Err("an expression expected, found the end of the body".into());
        };
        self.at += 1;
        match token {
            Tok::Int(text) => number_literal(&text),
            Tok::Str(text) => Ok((Expr::Const(Val::Str(text)), Ty::Str)),
            Tok::Sym("(") => {
                let inner = self.expr()?;
                self.expect_sym(")")?;
                Ok(inner)
            }
            Tok::Ident(word) => self.name(&word),
            Tok::Sym(s) => Err(format!("an expression starting with '{s}'")),
        }
    }

    fn name(&mut self, word: &str) -> Result<Typed, Failure> {
        match word {
            "true" => return Ok((Expr::Const(Val::Bool(true)), Ty::Prim(Prim::Bool))),
            "false" => return Ok((Expr::Const(Val::Bool(false)), Ty::Prim(Prim::Bool))),
            "null" => return Ok((Expr::Const(Val::Null), Ty::Null)),
            _ => {}
        }
        if let Some((slot, ty)) = self.lookup(word) {
            return Ok((Expr::Local(slot), ty));
        }
        if self.eat_sym(".") {
            let method = self.ident()?;
            let args = self.arguments()?;
            return static_call(word, &method, args);
        }
        Err(format!("the name '{word}'"))
    }

    fn arguments(&mut self) -> Result<Vec<Typed>, Failure> {
        self.expect_sym("(")?;
        let mut out = Vec::new();
        if self.eat_sym(")") {
            return Ok(out);
        }
        loop {
            out.push(self.expr()?);
            if self.eat_sym(")") {
                return Ok(out);
            }
            self.expect_sym(",")?;
        }
    }

    fn postfix(&mut self, mut target: Typed) -> Result<Typed, Failure> {
        while self.eat_sym(".") {
            let method = self.ident()?;
            let args = self.arguments()?;
            target = instance_call(target, &method, args)?;
        }
        Ok(target)
    }
}

fn bad_operand(op: &str, ty: Ty) -> Failure {
    format!("{op} on a value of type {}", ty.name())
}

fn number_literal(text: &str) -> Result<Typed, Failure> {
    let clean = text.replace('_', "");
    let unsupported = || format!("the number literal {text}");
    let lower = clean.to_ascii_lowercase();
    if lower.starts_with("0x") || lower.starts_with("-0x") || lower.starts_with("0b") {
        return Err(unsupported());
    }
    if let Some(digits) = lower.strip_suffix('l') {
        let v: i64 = digits.parse().map_err(|_| unsupported())?;
        return Ok((Expr::Const(Val::Long(v)), Ty::Prim(Prim::Long)));
    }
    if let Some(digits) = lower.strip_suffix('f') {
        let v: f32 = digits.parse().map_err(|_| unsupported())?;
        return Ok((Expr::Const(Val::Float(v)), Ty::Prim(Prim::Float)));
    }
    let floating = lower.contains('.') || lower.contains('e') || lower.ends_with('d');
    if floating {
        let v: f64 = lower
            .trim_end_matches('d')
            .parse()
            .map_err(|_| unsupported())?;
        return Ok((Expr::Const(Val::Double(v)), Ty::Prim(Prim::Double)));
    }
    let octal =
        lower.trim_start_matches('-').len() > 1 && lower.trim_start_matches('-').starts_with('0');
    if octal {
        return Err(unsupported());
    }
    let v: i32 = lower
        .parse()
        .map_err(|_| format!("integer number too large: {text}"))?;
    Ok((Expr::Const(Val::Int(v)), Ty::Prim(Prim::Int)))
}

/// Unary numeric promotion: byte and short compute as int.
fn promote(p: Prim) -> Prim {
    match p {
        Prim::Byte | Prim::Short => Prim::Int,
        other => other,
    }
}

fn widest(a: Prim, b: Prim) -> Prim {
    promote(if a.rank() >= b.rank() { a } else { b })
}

/// Converts to primitive `to` where Java does so implicitly (unboxing,
/// then widening).
fn to_prim(e: Expr, from: Ty, to: Prim, context: &str) -> Result<Expr, Failure> {
    let Some(p) = from.unboxed() else {
        return Err(bad_operand(context, from));
    };
    let widens = p == to || (p.is_numeric() && to.is_numeric() && widening(p, to));
    if !widens {
        return Err(bad_operand(context, from));
    }
    Ok(Expr::Convert(to, Box::new(e)))
}

fn widening(from: Prim, to: Prim) -> bool {
    match from {
        Prim::Byte => to != Prim::Bool,
        Prim::Short => !matches!(to, Prim::Bool | Prim::Byte),
        _ => to.rank() > from.rank() && from.rank() >= 1,
    }
}

/// A primitive cast `(p) e`.
fn cast(e: Expr, from: Ty, to: Prim) -> Result<Expr, Failure> {
    match from.unboxed() {
        Some(p) if p.is_numeric() && to.is_numeric() => Ok(Expr::Convert(to, Box::new(e))),
        Some(Prim::Bool) if to == Prim::Bool => Ok(Expr::Convert(to, Box::new(e))),
        _ => Err(format!("the cast of a {} to {}", from.name(), to.name())),
    }
}

/// Assignment conversion to a declared type (return value, local).
fn assign(e: Expr, from: Ty, to: Ty) -> Result<Expr, Failure> {
    let ok = match (from, to) {
        (Ty::Null, t) => t.is_reference(),
        (Ty::Str, Ty::Str) => true,
        (Ty::Boxed(a), Ty::Boxed(b)) => a == b,
        (Ty::Prim(a), Ty::Boxed(b)) => a == b,
        (Ty::Prim(_) | Ty::Boxed(_), Ty::Prim(b)) => return to_prim(e, from, b, "an assignment"),
        _ => false,
    };
    if ok {
        return Ok(e);
    }
    Err(format!(
        "incompatible types: {} cannot be converted to {}",
        from.name(),
        to.name()
    ))
}

/// The type of `c ? a : b` (the cases Java types simply).
fn conditional_type(a: Ty, b: Ty) -> Result<Ty, Failure> {
    match (a, b) {
        _ if a == b => Ok(a),
        (Ty::Null, t) | (t, Ty::Null) if t.is_reference() => Ok(t),
        // `c ? null : 1` boxes the primitive.
        (Ty::Null, Ty::Prim(p)) | (Ty::Prim(p), Ty::Null) => Ok(Ty::Boxed(p)),
        (Ty::Prim(p), Ty::Boxed(q)) | (Ty::Boxed(q), Ty::Prim(p)) if p == q => Ok(Ty::Prim(p)),
        _ => Err(format!(
            "a conditional of a {} and a {}",
            a.name(),
            b.name()
        )),
    }
}

fn promote_pair(left: Typed, right: Typed, context: &str) -> Result<(Expr, Expr, Prim), Failure> {
    let (Some(a), Some(b)) = (left.1.numeric(), right.1.numeric()) else {
        let culprit = if left.1.numeric().is_none() {
            left.1
        } else {
            right.1
        };
        return Err(bad_operand(context, culprit));
    };
    let p = widest(a, b);
    Ok((
        to_prim(left.0, left.1, p, context)?,
        to_prim(right.0, right.1, p, context)?,
        p,
    ))
}

fn arithmetic(op: BinOp, left: Typed, right: Typed) -> Result<Typed, Failure> {
    let (l, r, p) = promote_pair(left, right, "an arithmetic operator")?;
    Ok((Expr::Binary(op, p, Box::new(l), Box::new(r)), Ty::Prim(p)))
}

fn equality(op: BinOp, left: Typed, right: Typed) -> Result<Typed, Failure> {
    let is_eq = op == BinOp::Eq;
    let boolean = Ty::Prim(Prim::Bool);
    match (left.1, right.1) {
        (Ty::Null, t) if t.is_reference() => {
            return Ok((Expr::IsNull(is_eq, Box::new(right.0)), boolean))
        }
        (t, Ty::Null) if t.is_reference() => {
            return Ok((Expr::IsNull(is_eq, Box::new(left.0)), boolean))
        }
        (a, b) if a.is_reference() && b.is_reference() => {
            return Err(format!(
            "'==' of two objects ({} and {}): Java compares references; use equals() in Cassandra",
            a.name(),
            b.name()
        ))
        }
        (a, b) if a.unboxed() == Some(Prim::Bool) && b.unboxed() == Some(Prim::Bool) => {
            let l = to_prim(left.0, a, Prim::Bool, "'=='")?;
            let r = to_prim(right.0, b, Prim::Bool, "'=='")?;
            return Ok((
                Expr::Binary(op, Prim::Bool, Box::new(l), Box::new(r)),
                boolean,
            ));
        }
        _ => {}
    }
    let (l, r, p) = promote_pair(left, right, "'=='")?;
    Ok((Expr::Binary(op, p, Box::new(l), Box::new(r)), boolean))
}

fn one_arg(args: Vec<Typed>, name: &str) -> Result<Typed, Failure> {
    let mut args = args;
    match (args.pop(), args.is_empty()) {
        (Some(a), true) => Ok(a),
        _ => Err(format!("{name} with this number of arguments")),
    }
}

fn static_call(class: &str, method: &str, args: Vec<Typed>) -> Result<Typed, Failure> {
    let name = format!("{class}.{method}");
    if class == "Math" {
        return math_call(&name, method, args);
    }
    if class == "String" && method == "valueOf" {
        let (e, ty) = one_arg(args, &name)?;
        if ty == Ty::Null {
            return Err(format!("{name}(null)"));
        }
        let call = Method::ToText {
            null_is_error: false,
        };
        return Ok((Expr::Call(call, vec![e]), Ty::Str));
    }
    match (Prim::from_name(class), method) {
        (Some((p, true)), "valueOf") => {
            let (e, ty) = one_arg(args, &name)?;
            if ty == Ty::Str {
                return Err(format!("{name} of a String"));
            }
            Ok((to_prim(e, ty, p, &name)?, Ty::Boxed(p)))
        }
        _ => Err(format!("the method {name}")),
    }
}

fn math_call(name: &str, method: &str, args: Vec<Typed>) -> Result<Typed, Failure> {
    let double = Ty::Prim(Prim::Double);
    let unary = match method {
        "sqrt" => Some(MathFn::Sqrt),
        "cbrt" => Some(MathFn::Cbrt),
        "log" => Some(MathFn::Log),
        "log10" => Some(MathFn::Log10),
        "exp" => Some(MathFn::Exp),
        "floor" => Some(MathFn::Floor),
        "ceil" => Some(MathFn::Ceil),
        _ => None,
    };
    if let Some(f) = unary {
        let (e, ty) = one_arg(args, name)?;
        let e = to_prim(e, ty, Prim::Double, name)?;
        return Ok((Expr::Call(Method::MathDouble(f), vec![e]), double));
    }
    match (method, args.len()) {
        ("abs", 1) => {
            let (e, ty) = one_arg(args, name)?;
            let p = promote(ty.numeric().ok_or_else(|| bad_operand(name, ty))?);
            Ok((
                Expr::Call(Method::MathAbs(p), vec![to_prim(e, ty, p, name)?]),
                Ty::Prim(p),
            ))
        }
        ("max" | "min" | "pow", 2) => {
            let mut args = args;
            let right = args.pop().ok_or("two arguments")?;
            let left = args.pop().ok_or("two arguments")?;
            if method == "pow" {
                let l = to_prim(left.0, left.1, Prim::Double, name)?;
                let r = to_prim(right.0, right.1, Prim::Double, name)?;
                return Ok((Expr::Call(Method::MathPow, vec![l, r]), double));
            }
            let (l, r, p) = promote_pair(left, right, name)?;
            let m = if method == "max" {
                Method::MathMax(p)
            } else {
                Method::MathMin(p)
            };
            Ok((Expr::Call(m, vec![l, r]), Ty::Prim(p)))
        }
        _ => Err(format!("the method {name} with {} arguments", args.len())),
    }
}

fn instance_call(target: Typed, method: &str, args: Vec<Typed>) -> Result<Typed, Failure> {
    let (e, ty) = target;
    if method == "equals" {
        return equals_call(e, ty, args);
    }
    if !args.is_empty() {
        return Err(format!("the method {}.{method} with arguments", ty.name()));
    }
    let text_method = match method {
        "length" => Some((Method::Length, Ty::Prim(Prim::Int))),
        "isEmpty" => Some((Method::IsEmpty, Ty::Prim(Prim::Bool))),
        "toUpperCase" => Some((Method::Upper, Ty::Str)),
        "toLowerCase" => Some((Method::Lower, Ty::Str)),
        "trim" => Some((Method::Trim, Ty::Str)),
        _ => None,
    };
    match (ty, text_method) {
        (Ty::Str, Some((m, out))) => return Ok((Expr::Call(m, vec![e]), out)),
        (Ty::Str | Ty::Boxed(_), None) if method == "toString" => {
            let call = Method::ToText {
                null_is_error: true,
            };
            return Ok((Expr::Call(call, vec![e]), Ty::Str));
        }
        _ => {}
    }
    let value_of = match method {
        "intValue" => Some(Prim::Int),
        "longValue" => Some(Prim::Long),
        "doubleValue" => Some(Prim::Double),
        "floatValue" => Some(Prim::Float),
        "shortValue" => Some(Prim::Short),
        "byteValue" => Some(Prim::Byte),
        "booleanValue" => Some(Prim::Bool),
        _ => None,
    };
    match (ty, value_of) {
        (Ty::Boxed(p), Some(to)) if (p == Prim::Bool) == (to == Prim::Bool) => {
            Ok((Expr::Convert(to, Box::new(e)), Ty::Prim(to)))
        }
        _ => Err(format!("the method {}.{method}()", ty.name())),
    }
}

/// `x.equals(y)` of a String or a box, with an argument of the same class
/// (a primitive boxed to it, or null); other classes are refused.
fn equals_call(e: Expr, ty: Ty, args: Vec<Typed>) -> Result<Typed, Failure> {
    let (arg, arg_ty) = one_arg(args, "equals")?;
    let same_class = match (ty, arg_ty) {
        (Ty::Str, Ty::Str | Ty::Null) | (Ty::Boxed(_), Ty::Null) => true,
        (Ty::Boxed(p), Ty::Boxed(q) | Ty::Prim(q)) => p == q,
        _ => false,
    };
    if !same_class {
        return Err(format!("{}.equals of a {}", ty.name(), arg_ty.name()));
    }
    Ok((
        Expr::Call(Method::Equals, vec![e, arg]),
        Ty::Prim(Prim::Bool),
    ))
}

/// Java's `equals` of two values of one class: floating point by bits,
/// every NaN equal to every NaN.
fn java_equals(a: &Val, b: &Val) -> bool {
    match (a, b) {
        (Val::Double(x), Val::Double(y)) => {
            (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits()
        }
        (Val::Float(x), Val::Float(y)) => (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

// ---------------------------------------------------------------- evaluation

fn run_block(statements: &[Stmt], locals: &mut Vec<Val>) -> Result<Option<Val>, Failure> {
    for statement in statements {
        match statement {
            Stmt::Return(e) => return eval(e, locals).map(Some),
            Stmt::Let(slot, e) => {
                let v = eval(e, locals)?;
                if let Some(place) = locals.get_mut(*slot) {
                    *place = v;
                }
            }
            Stmt::If(c, then, otherwise) => {
                let branch = if truth(&eval(c, locals)?)? {
                    then
                } else {
                    otherwise
                };
                if let Some(v) = run_block(branch, locals)? {
                    return Ok(Some(v));
                }
            }
        }
    }
    Ok(None)
}

const NPE: &str = "java.lang.NullPointerException";

fn truth(v: &Val) -> Result<bool, Failure> {
    match v {
        Val::Bool(b) => Ok(*b),
        Val::Null => Err(NPE.into()),
        other => Err(format!("java.lang.ClassCastException: {other:?}")),
    }
}

fn eval(e: &Expr, locals: &[Val]) -> Result<Val, Failure> {
    Ok(match e {
        Expr::Const(v) => v.clone(),
        Expr::Local(slot) => locals.get(*slot).cloned().unwrap_or(Val::Null),
        Expr::Unary(UnaryOp::Not, a) => Val::Bool(!truth(&eval(a, locals)?)?),
        Expr::Unary(UnaryOp::Neg, a) => negate(eval(a, locals)?)?,
        Expr::Binary(op, p, a, b) => binary(*op, *p, eval(a, locals)?, eval(b, locals)?)?,
        Expr::Concat(a, b) => {
            let mut text = java_string(&eval(a, locals)?);
            text.push_str(&java_string(&eval(b, locals)?));
            Val::Str(text)
        }
        Expr::IsNull(is_eq, a) => Val::Bool((eval(a, locals)? == Val::Null) == *is_eq),
        Expr::And(a, b) => Val::Bool(truth(&eval(a, locals)?)? && truth(&eval(b, locals)?)?),
        Expr::Or(a, b) => Val::Bool(truth(&eval(a, locals)?)? || truth(&eval(b, locals)?)?),
        Expr::Cond(c, a, b) => match truth(&eval(c, locals)?)? {
            true => eval(a, locals)?,
            false => eval(b, locals)?,
        },
        Expr::Convert(p, a) => convert(eval(a, locals)?, *p)?,
        Expr::Call(m, args) => {
            let values = args
                .iter()
                .map(|a| eval(a, locals))
                .collect::<Result<Vec<_>, _>>()?;
            call(*m, values)?
        }
    })
}

/// Java's `String.valueOf` of a value.
fn java_string(v: &Val) -> String {
    match v {
        Val::Null => "null".into(),
        Val::Bool(b) => b.to_string(),
        Val::Byte(n) => n.to_string(),
        Val::Short(n) => n.to_string(),
        Val::Int(n) => n.to_string(),
        Val::Long(n) => n.to_string(),
        Val::Float(f) => rocksandra_data::value::java_float(*f),
        Val::Double(d) => rocksandra_data::value::java_double(*d),
        Val::Str(s) => s.clone(),
    }
}

fn as_f64(v: &Val) -> Result<f64, Failure> {
    Ok(match v {
        Val::Byte(n) => f64::from(*n),
        Val::Short(n) => f64::from(*n),
        Val::Int(n) => f64::from(*n),
        Val::Long(n) => *n as f64,
        Val::Float(f) => f64::from(*f),
        Val::Double(d) => *d,
        Val::Null => return Err(NPE.into()),
        other => return Err(format!("java.lang.ClassCastException: {other:?}")),
    })
}

fn as_i64(v: &Val) -> Result<i64, Failure> {
    Ok(match v {
        Val::Byte(n) => i64::from(*n),
        Val::Short(n) => i64::from(*n),
        Val::Int(n) => i64::from(*n),
        Val::Long(n) => *n,
        // Java's narrowing of floating point: saturating, NaN to 0.
        Val::Float(f) => *f as i64,
        Val::Double(d) => *d as i64,
        Val::Null => return Err(NPE.into()),
        other => return Err(format!("java.lang.ClassCastException: {other:?}")),
    })
}

/// Unboxing, widening and casts to `p`, with Java's narrowing rules.
fn convert(v: Val, p: Prim) -> Result<Val, Failure> {
    if v == Val::Null {
        return Err(NPE.into());
    }
    Ok(match p {
        Prim::Bool => Val::Bool(truth(&v)?),
        Prim::Double => Val::Double(as_f64(&v)?),
        Prim::Float => match v {
            Val::Double(d) => Val::Float(d as f32),
            Val::Long(n) => Val::Float(n as f32),
            Val::Int(n) => Val::Float(n as f32),
            other => Val::Float(as_f64(&other)? as f32),
        },
        Prim::Long => Val::Long(as_i64(&v)?),
        // Floating point narrows to int through int (saturating), then to
        // the smaller types by truncation, as Java does.
        Prim::Int => Val::Int(to_int(&v)?),
        Prim::Short => Val::Short(to_int(&v)? as i16),
        Prim::Byte => Val::Byte(to_int(&v)? as i8),
    })
}

fn to_int(v: &Val) -> Result<i32, Failure> {
    Ok(match v {
        Val::Float(f) => *f as i32,
        Val::Double(d) => *d as i32,
        other => as_i64(other)? as i32,
    })
}

fn negate(v: Val) -> Result<Val, Failure> {
    Ok(match v {
        Val::Int(n) => Val::Int(n.wrapping_neg()),
        Val::Long(n) => Val::Long(n.wrapping_neg()),
        Val::Float(f) => Val::Float(-f),
        Val::Double(d) => Val::Double(-d),
        Val::Null => return Err(NPE.into()),
        other => return Err(format!("java.lang.ClassCastException: {other:?}")),
    })
}

fn binary(op: BinOp, p: Prim, a: Val, b: Val) -> Result<Val, Failure> {
    match p {
        Prim::Bool => {
            let (x, y) = (truth(&a)?, truth(&b)?);
            Ok(Val::Bool(if op == BinOp::Eq { x == y } else { x != y }))
        }
        Prim::Int | Prim::Short | Prim::Byte => {
            let (x, y) = (to_int(&a)?, to_int(&b)?);
            integer_op(op, i64::from(x), i64::from(y), |n| Val::Int(n as i32), 32)
        }
        Prim::Long => integer_op(op, as_i64(&a)?, as_i64(&b)?, Val::Long, 64),
        Prim::Float => {
            let (x, y) = (as_f64(&a)? as f32, as_f64(&b)? as f32);
            Ok(float_op(
                op,
                f64::from(x),
                f64::from(y),
                |d| Val::Float(d as f32),
                Some((x, y)),
            ))
        }
        Prim::Double => Ok(float_op(op, as_f64(&a)?, as_f64(&b)?, Val::Double, None)),
    }
}

/// Integer arithmetic of `bits` width with Java's wrapping and its
/// ArithmeticException on division by zero.
fn integer_op(
    op: BinOp,
    x: i64,
    y: i64,
    make: impl Fn(i64) -> Val,
    bits: u32,
) -> Result<Val, Failure> {
    let wrap = |n: i128| -> i64 {
        if bits == 32 {
            i64::from(n as i32)
        } else {
            n as i64
        }
    };
    let (x128, y128) = (i128::from(x), i128::from(y));
    let value = match op {
        BinOp::Add => wrap(x128 + y128),
        BinOp::Sub => wrap(x128 - y128),
        BinOp::Mul => wrap(x128 * y128),
        BinOp::Div | BinOp::Rem if y == 0 => {
            return Err("java.lang.ArithmeticException: / by zero".into())
        }
        BinOp::Div => wrap(x128 / y128),
        BinOp::Rem => wrap(x128 % y128),
        _ => return Ok(Val::Bool(compare(op, x.cmp(&y)))),
    };
    Ok(make(value))
}

fn compare(op: BinOp, ordering: std::cmp::Ordering) -> bool {
    use std::cmp::Ordering::*;
    match op {
        BinOp::Lt => ordering == Less,
        BinOp::Le => ordering != Greater,
        BinOp::Gt => ordering == Greater,
        BinOp::Ge => ordering != Less,
        BinOp::Eq => ordering == Equal,
        _ => ordering != Equal,
    }
}

/// Floating point arithmetic; `single` computes in f32 as Java's float does.
fn float_op(
    op: BinOp,
    x: f64,
    y: f64,
    make: impl Fn(f64) -> Val,
    single: Option<(f32, f32)>,
) -> Val {
    let value = match (op, single) {
        (BinOp::Add, Some((a, b))) => f64::from(a + b),
        (BinOp::Sub, Some((a, b))) => f64::from(a - b),
        (BinOp::Mul, Some((a, b))) => f64::from(a * b),
        (BinOp::Div, Some((a, b))) => f64::from(a / b),
        (BinOp::Rem, Some((a, b))) => f64::from(a % b),
        (BinOp::Add, None) => x + y,
        (BinOp::Sub, None) => x - y,
        (BinOp::Mul, None) => x * y,
        (BinOp::Div, None) => x / y,
        (BinOp::Rem, None) => x % y,
        (_, _) => {
            // NaN compares false to everything (true for !=).
            let result = match x.partial_cmp(&y) {
                Some(o) => compare(op, o),
                None => op == BinOp::Ne,
            };
            return Val::Bool(result);
        }
    };
    make(value)
}

fn call(m: Method, args: Vec<Val>) -> Result<Val, Failure> {
    let mut args = args.into_iter();
    let first = args.next().unwrap_or(Val::Null);
    let second = args.next().unwrap_or(Val::Null);
    let text = |v: &Val| match v {
        Val::Str(s) => Ok(s.clone()),
        _ => Err(Failure::from(NPE)),
    };
    Ok(match m {
        Method::MathDouble(f) => Val::Double(f.apply(as_f64(&first)?)),
        Method::MathPow => Val::Double(as_f64(&first)?.powf(as_f64(&second)?)),
        Method::MathAbs(p) => match first {
            Val::Int(n) => Val::Int(n.wrapping_abs()),
            Val::Long(n) => Val::Long(n.wrapping_abs()),
            other => convert(Val::Double(as_f64(&other)?.abs()), p)?,
        },
        Method::MathMax(p) | Method::MathMin(p) => {
            let max = matches!(m, Method::MathMax(_));
            min_max(max, p, first, second)?
        }
        Method::ToText { null_is_error } => {
            if null_is_error && first == Val::Null {
                return Err(NPE.into());
            }
            Val::Str(java_string(&first))
        }
        Method::Length => Val::Int(text(&first)?.encode_utf16().count() as i32),
        Method::IsEmpty => Val::Bool(text(&first)?.is_empty()),
        Method::Upper => Val::Str(text(&first)?.to_uppercase()),
        Method::Lower => Val::Str(text(&first)?.to_lowercase()),
        Method::Equals => match first {
            Val::Null => return Err(NPE.into()),
            target => Val::Bool(java_equals(&target, &second)),
        },
        Method::Trim => Val::Str(text(&first)?.trim_matches(|c: char| c <= ' ').to_string()),
    })
}

fn min_max(max: bool, p: Prim, a: Val, b: Val) -> Result<Val, Failure> {
    if matches!(p, Prim::Float | Prim::Double) {
        let (x, y) = (as_f64(&a)?, as_f64(&b)?);
        // Java: NaN if either is NaN; -0.0 below 0.0.
        let result = if x.is_nan() || y.is_nan() {
            f64::NAN
        } else if x == y {
            if max == x.is_sign_negative() {
                y
            } else {
                x
            }
        } else if (x > y) == max {
            x
        } else {
            y
        };
        return convert(Val::Double(result), p);
    }
    let (x, y) = (as_i64(&a)?, as_i64(&b)?);
    convert(Val::Long(if max { x.max(y) } else { x.min(y) }), p)
}

#[cfg(test)]
mod tests;
