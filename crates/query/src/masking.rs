//! Dynamic data masking (Cassandra 5.0, CEP-20): a column's mask (`MASKED
//! WITH` in CREATE TABLE and ALTER TABLE), checked as Cassandra checks it
//! and kept with the table (`schema::ColumnMask`), then applied to the
//! values a user without UNMASK on the table reads. Masked columns in a
//! WHERE clause need UNMASK or SELECT_MASKED. Without an authorizer every
//! user may unmask, as in Cassandra, so masks only show in the schema.
//!
//! The masking functions themselves are `functions::masking`'s.

use rocksandra_cql::ast::{self, Permission, Relation, RelationLhs, Select};
use rocksandra_data::types::CqlType;
use rocksandra_data::value::timestamp_iso8601;
use rocksandra_data::Value;

use crate::authz::{self, Resource};
use crate::ctx::StatementCtx;
use crate::error::{QueryError, Result};
use crate::functions::aggregates::Aggregate;
use crate::functions::{self, Arg, CallContext, Function};
use crate::request::Request;
use crate::rows::CqlRow;
use crate::schema::{ColumnMask, Table};
use crate::term::{self, EvalContext, Term};
use crate::udf::UserFunction;

/// Cassandra's refusal of a mask while `dynamic_data_masking_enabled` is
/// false (its default).
pub(crate) const DISABLED: &str = "Cannot mask columns because dynamic data masking is not \
     enabled. You can enable it with the dynamic_data_masking_enabled property on cassandra.yaml";

pub(crate) fn ensure_enabled(enabled: bool) -> Result<()> {
    match enabled {
        true => Ok(()),
        false => Err(QueryError::invalid(DISABLED)),
    }
}

/// The mask as written, for messages: `mask_inner(1, null)`.
fn written(mask: &ast::ColumnMask) -> String {
    let args: Vec<String> = mask.args.iter().map(ToString::to_string).collect();
    format!("{}({})", mask.function, args.join(", "))
}

/// Checks `mask` for the column `column` of type `ty` of the table
/// `table` (Cassandra's `ColumnMask.Raw.prepare`) and evaluates its
/// arguments: a native masking function, or a user-defined function of
/// the table's keyspace.
pub(crate) fn prepare(
    mask: &ast::ColumnMask,
    (table, column): (&str, &str),
    ty: &CqlType,
    ctx: &EvalContext<'_>,
) -> Result<ColumnMask> {
    let text = written(mask);
    // The column's type stands for the first argument, which Cassandra's
    // messages name by its marshal class.
    let class = rocksandra_wire::types::marshal_name(ty);
    let mut args = vec![Arg::Selector(ty, &class)];
    args.extend(mask.args.iter().map(term::term_arg));
    let found = match native(mask) {
        true => native_mask(mask, &args, &text)?,
        false => user_mask(mask, &args, &text, ctx)?,
    };
    let Some((returned, arg_types, keyspace)) = found else {
        return Err(QueryError::invalid(format!(
            "Unable to find masking function for {column}, no declared function matches the signature {text}"
        )));
    };
    if returned.unfrozen() != ty.unfrozen() {
        return Err(QueryError::invalid(format!(
            "Masking function {text} return type is {returned}. This is different to the type of the \
             masked column {column} of type {ty}. Masking functions can only be attached to table \
             columns if they return the same data type as the masked column."
        )));
    }
    if keyspace.as_deref().is_some_and(|k| k != ctx.keyspace) {
        return Err(QueryError::invalid(format!(
            "Masking function {text} doesn't belong to the same keyspace as the table {}.{table}",
            ctx.keyspace
        )));
    }
    let arg_values = argument_values(mask, &arg_types, column, ctx)?;
    Ok(ColumnMask {
        keyspace,
        function: mask.function.name.as_str().to_string(),
        arg_types: arg_types.iter().map(ToString::to_string).collect(),
        arg_values,
    })
}

/// What a mask's function resolves to: its return type, the types of its
/// arguments after the column's, and its keyspace (None for a native one);
/// None when no function has that name.
type Resolved = Option<(CqlType, Vec<CqlType>, Option<String>)>;

/// Whether the mask names a native function (or aggregate): in `system`,
/// or unqualified and named as one.
fn native(mask: &ast::ColumnMask) -> bool {
    let name = mask.function.name.as_str();
    match mask.function.keyspace.as_ref().map(|k| k.as_str()) {
        Some(keyspace) => keyspace == "system",
        None => functions::exists(name) || Aggregate::named(name).is_some(),
    }
}

fn native_mask(mask: &ast::ColumnMask, args: &[Arg<'_>], text: &str) -> Result<Resolved> {
    let name = mask.function.name.as_str();
    if Aggregate::named(name).is_some() {
        return Err(aggregate_refused(text));
    }
    if !functions::exists(name) {
        return Ok(None);
    }
    let function = functions::resolve_called(name, args, mask.function.keyspace.is_some())?;
    if !functions::is_masking(name) {
        return Err(QueryError::invalid(format!(
            "Not-masking function {text} cannot be used for masking table columns"
        )));
    }
    let others = function.arg_types()[1..].to_vec();
    Ok(Some((function.return_type().clone(), others, None)))
}

/// A user-defined function as a mask, found as a call finds it among the
/// overloads of its name in its keyspace (the table's when unqualified).
fn user_mask(
    mask: &ast::ColumnMask,
    args: &[Arg<'_>],
    text: &str,
    ctx: &EvalContext<'_>,
) -> Result<Resolved> {
    use crate::functions::user::{self, Call, Routine};
    let name = mask.function.name.as_str();
    let keyspace = mask
        .function
        .keyspace
        .as_ref()
        .map_or(ctx.keyspace, |k| k.as_str());
    let Some(ks) = ctx.schema.and_then(|s| s.keyspace(keyspace)) else {
        return Ok(None);
    };
    let overloads = user::overloads(ks, name);
    if overloads.is_empty() {
        return Ok(None);
    }
    let resolved = format!("{keyspace}.{name}");
    let call = Call {
        written: &mask.function.to_string(),
        resolved: &resolved,
        receiver: None,
    };
    match user::choose(&overloads, args, &call)? {
        Routine::Aggregate(_) => Err(aggregate_refused(text)),
        Routine::Scalar(f) => Ok(Some((
            f.return_type.clone(),
            f.argument_types[1..].to_vec(),
            Some(keyspace.to_string()),
        ))),
    }
}

fn aggregate_refused(text: &str) -> QueryError {
    QueryError::invalid(format!(
        "Aggregate function {text} cannot be used for masking table columns"
    ))
}

/// The values of a mask's arguments after the column's (None for null).
/// A bind marker fails as it fails in Cassandra 5.0.6, which looks for a
/// bound value that a schema statement never has.
fn argument_values(
    mask: &ast::ColumnMask,
    arg_types: &[CqlType],
    column: &str,
    ctx: &EvalContext<'_>,
) -> Result<Vec<Option<Vec<u8>>>> {
    let mut values = Vec::with_capacity(arg_types.len());
    for (expr, arg_type) in mask.args.iter().zip(arg_types) {
        if matches!(expr, ast::Expr::Bind(_)) {
            return Err(QueryError::java_exception(
                "java.lang.IndexOutOfBoundsException",
                Some("Index: 0"),
            ));
        }
        values.push(match term::evaluate(expr, arg_type, column, ctx)? {
            Term::Value(bytes) => Some(bytes),
            Term::Null | Term::Unset => None,
        });
    }
    Ok(values)
}

/// A view's columns take the masks of its base table's columns of the
/// same name, as Cassandra 5.0.6's views do: when the view is created and
/// whenever the base's masks change.
pub(crate) fn follow_base(view: &mut Table, base: &Table) {
    view.masks = view
        .columns
        .iter()
        .filter_map(|column| {
            let in_base = base.column(&column.name)?;
            let mask = base.masks.get(&in_base.id)?;
            Some((column.id, mask.clone()))
        })
        .collect();
}

/// Whether a mask of `table` calls the user-defined `function`.
pub(crate) fn uses(table: &Table, function: &UserFunction) -> bool {
    let types = crate::schema::KeyspaceTypes(&[]);
    table.columns.iter().any(|column| {
        let Some(mask) = table.masks.get(&column.id) else {
            return false;
        };
        let others = mask.arg_types.iter().map(|t| CqlType::parse(t, &types));
        mask.keyspace.as_deref() == Some(function.keyspace.as_str())
            && mask.function == function.name
            && function.argument_types.len() == 1 + mask.arg_types.len()
            && function.argument_types[0].unfrozen() == column.ty.unfrozen()
            && function.argument_types[1..]
                .iter()
                .zip(others)
                .all(|(t, other)| other.is_ok_and(|o| o == *t))
    })
}

/// The keyspace of a mask's function as the schema names it.
pub(crate) fn function_keyspace(mask: &ColumnMask) -> &str {
    mask.keyspace.as_deref().unwrap_or("system")
}

/// The mask as DESCRIBE shows it: `system.mask_inner(1, null)`, each
/// argument as Cassandra's `toCQLLiteral` prints it.
pub(crate) fn describe(mask: &ColumnMask) -> String {
    let args: Vec<String> = arguments(mask)
        .map(|(value, bytes)| match (value, bytes) {
            (_, None) => "null".to_string(),
            (Some((Value::Timestamp(ms), _)), _) => format!("'{}'", timestamp_iso8601(ms)),
            (Some((value, ty)), _) => value.to_cql_literal(&ty),
            (None, Some(bytes)) => format!("0x{}", hex::encode(bytes)),
        })
        .collect();
    format!(
        "{}.{}({})",
        function_keyspace(mask),
        mask.function,
        args.join(", ")
    )
}

/// The arguments' values as system_schema.column_masks lists them
/// (Cassandra's `AbstractType.getString`: a native value's text, the hex
/// of a blob or of any other type's value, empty for null).
pub(crate) fn argument_texts(mask: &ColumnMask) -> Vec<String> {
    arguments(mask)
        .map(|(value, bytes)| match value {
            Some((Value::Text(text) | Value::Ascii(text), _)) => text,
            Some((Value::Timestamp(ms), _)) => timestamp_iso8601(ms),
            Some((Value::Blob(_), _)) | None => bytes.map(hex::encode).unwrap_or_default(),
            Some((_, ty)) if !matches!(ty, CqlType::Native(_)) => {
                bytes.map(hex::encode).unwrap_or_default()
            }
            Some((other, _)) => {
                let literal = other.to_string();
                match literal
                    .strip_prefix('\'')
                    .and_then(|l| l.strip_suffix('\''))
                {
                    Some(inner) => inner.replace("''", "'"),
                    None => literal,
                }
            }
        })
        .collect()
}

/// Each argument's value, decoded when it is of a native type, with its
/// bytes (None for null).
fn arguments(
    mask: &ColumnMask,
) -> impl Iterator<Item = (Option<(Value, CqlType)>, Option<&Vec<u8>>)> + '_ {
    let types = crate::schema::KeyspaceTypes(&[]);
    mask.arg_types
        .iter()
        .zip(&mask.arg_values)
        .map(move |(ty, bytes)| {
            let decoded = match (CqlType::parse(ty, &types), bytes) {
                (Ok(ty), Some(bytes)) => {
                    Value::deserialize(&ty, bytes).ok().map(|value| (value, ty))
                }
                _ => None,
            };
            (decoded, bytes.as_ref())
        })
}

/// Whether the request's user reads `table`'s clear values: no masks, no
/// authorizer (everyone may then unmask, as in Cassandra), an internal
/// request, or UNMASK held on the table or its keyspace.
fn unmasks(context: &StatementCtx<'_>, request: &Request, table: &Table) -> Result<bool> {
    holds_any(context, request, table, &[Permission::Unmask])
}

/// Whether the user reads clear values (see [`unmasks`]) or holds one of
/// `permissions` on the table or a parent.
fn holds_any(
    context: &StatementCtx<'_>,
    request: &Request,
    table: &Table,
    permissions: &[Permission],
) -> Result<bool> {
    if table.masks.is_empty() || request.internal || !authz::authorizer_enabled(context) {
        return Ok(true);
    }
    let resource = Resource::Table(table.keyspace.clone(), table.name.clone());
    let subject = authz::subject(context, request, std::slice::from_ref(&resource))?;
    Ok(permissions.iter().any(|p| subject.holds(*p, &resource)))
}

/// Refuses a SELECT whose WHERE clause restricts masked columns (or that
/// orders by a masked column's ANN), for a user with neither UNMASK nor
/// SELECT_MASKED on the table (Cassandra's `SelectStatement.authorize`).
pub(crate) fn authorize_where(
    context: &StatementCtx<'_>,
    request: &Request,
    table: &Table,
    select: &Select,
) -> Result<()> {
    let mut restricted: Vec<&str> = table
        .columns
        .iter()
        .filter(|c| table.masks.contains_key(&c.id))
        .map(|c| c.name.as_str())
        .filter(|name| {
            select.where_clause.iter().any(|r| restricts(r, name)) || orders_by_ann(select, name)
        })
        .collect();
    let cleared = [Permission::Unmask, Permission::SelectMasked];
    if restricted.is_empty() || holds_any(context, request, table, &cleared)? {
        return Ok(());
    }
    restricted.sort_unstable();
    Err(QueryError::Unauthorized(format!(
        "User {} has no UNMASK nor SELECT_MASKED permission on table {}.{}, cannot query masked columns [{}]",
        request.user.as_deref().unwrap_or_default(),
        table.keyspace,
        table.name,
        restricted.join(", ")
    )))
}

/// `ORDER BY column ANN OF ...`, which Cassandra counts as a restriction
/// of the column.
fn orders_by_ann(select: &Select, column: &str) -> bool {
    select
        .order_by
        .iter()
        .any(|o| matches!(o.kind, ast::OrderingKind::Ann(_)) && o.column.as_str() == column)
}

fn restricts(relation: &Relation, column: &str) -> bool {
    match relation {
        Relation::IsNotNull { column: c } => c.as_str() == column,
        Relation::Compare { lhs, .. } => match lhs {
            RelationLhs::Column(c) | RelationLhs::Element { column: c, .. } => c.as_str() == column,
            RelationLhs::Columns(cs) | RelationLhs::Token(cs) => {
                cs.iter().any(|c| c.as_str() == column)
            }
        },
    }
}

/// The masks a read applies: each masked column's index in the rows and
/// its function with the other arguments' values.
pub(crate) struct Masker {
    columns: Vec<MaskedColumn>,
}

/// A masked column's index in the rows, its masking function and the
/// values of the function's other arguments.
type MaskedColumn = (usize, MaskFunction, Vec<Option<Vec<u8>>>);

/// A mask's function: native, or user-defined (run by the UDF
/// interpreter, as a call in a selection runs it).
enum MaskFunction {
    Native(Function),
    User(UserFunction),
}

impl Masker {
    /// The masks of `table` for the request's user; None when the user
    /// reads clear values.
    pub(crate) fn for_read(
        context: &StatementCtx<'_>,
        request: &Request,
        table: &Table,
        ctx: &EvalContext<'_>,
    ) -> Result<Option<Masker>> {
        if unmasks(context, request, table)? {
            return Ok(None);
        }
        let mut columns = Vec::with_capacity(table.masks.len());
        for (index, column) in table.columns.iter().enumerate() {
            let Some(mask) = table.masks.get(&column.id) else {
                continue;
            };
            let function = mask_function(mask, &column.ty, ctx)?;
            columns.push((index, function, mask.arg_values.clone()));
        }
        Ok(Some(Masker { columns }))
    }

    /// Replaces the masked columns' values of `rows` by their masks.
    pub(crate) fn mask(&self, rows: &mut [CqlRow]) -> Result<()> {
        let no_randomness = || 0;
        let call = CallContext {
            now_micros: 0,
            random: &no_randomness,
        };
        for row in rows {
            for (index, function, others) in &self.columns {
                let Some(cell) = row.columns.get_mut(*index) else {
                    continue;
                };
                let value = cell.value.take();
                cell.value = match function {
                    MaskFunction::Native(function) => {
                        let mut args = Vec::with_capacity(1 + others.len());
                        args.push(value);
                        args.extend(others.iter().cloned());
                        function.call(&args, &call)?
                    }
                    MaskFunction::User(function) => {
                        let mut args = Vec::with_capacity(1 + others.len());
                        args.push(value.as_deref());
                        args.extend(others.iter().map(Option::as_deref));
                        function.call(&args)?
                    }
                };
            }
        }
        Ok(())
    }
}

/// The function a stored mask of a column of type `ty` names.
fn mask_function(mask: &ColumnMask, ty: &CqlType, ctx: &EvalContext<'_>) -> Result<MaskFunction> {
    let arg_types = mask
        .arg_types
        .iter()
        .map(|t| CqlType::parse(t, &ctx.types))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| QueryError::Server(format!("a stored mask has a bad type: {e}")))?;
    let Some(keyspace) = &mask.keyspace else {
        let mut args = vec![Arg::Typed(ty)];
        args.extend(arg_types.iter().map(Arg::Typed));
        return Ok(MaskFunction::Native(functions::resolve(
            &mask.function,
            &args,
        )?));
    };
    let mut signature = vec![ty.clone()];
    signature.extend(arg_types);
    ctx.schema
        .and_then(|s| s.keyspace(keyspace))
        .and_then(|ks| crate::functions::user::find_function(ks, &mask.function, &signature))
        .map(|f| MaskFunction::User(f.clone()))
        .ok_or_else(|| {
            QueryError::Server(format!(
                "the masking function {keyspace}.{} is missing",
                mask.function
            ))
        })
}

/// What evaluates a mask's arguments: constants only (no bind markers, no
/// clock), in the table's keyspace.
fn constants<'e>(schema: &'e crate::schema::Schema, keyspace: &'e str) -> EvalContext<'e> {
    fn no_randomness() -> u64 {
        0
    }
    EvalContext {
        binds: &[],
        now_micros: 0,
        keyspace,
        types: crate::schema::KeyspaceTypes(
            schema
                .keyspace(keyspace)
                .map(|k| k.types.as_slice())
                .unwrap_or(&[]),
        ),
        schema: Some(schema),
        random: &no_randomness,
        stand_ins: false,
    }
}

/// Sets the masks a CREATE TABLE declares on `table`.
pub(crate) fn create(
    schema: &crate::schema::Schema,
    stmt: &ast::CreateTable,
    table: &mut Table,
    enabled: bool,
) -> Result<()> {
    for def in &stmt.columns {
        if let Some(mask) = &def.mask {
            ensure_enabled(enabled)?;
            set(schema, table, def.name.as_str(), mask)?;
        }
    }
    Ok(())
}

/// The masks of an ALTER TABLE: `ALTER c MASKED WITH` or `DROP MASKED`,
/// ADD with masks (after the columns are added; Cassandra 5.0.6 takes
/// these even while masking is disabled), and the masks of dropped
/// columns forgotten.
pub(crate) fn alter(
    schema: &crate::schema::Schema,
    action: &ast::AlterTableAction,
    table: &mut Table,
    enabled: bool,
) -> Result<()> {
    match action {
        ast::AlterTableAction::AlterColumnMask {
            if_exists,
            column,
            mask,
        } => {
            if mask.is_some() {
                ensure_enabled(enabled)?;
            }
            let Some(id) = table.column(column.as_str()).map(|c| c.id) else {
                if *if_exists {
                    return Ok(());
                }
                return Err(QueryError::invalid(format!(
                    "Column with name '{column}' doesn't exist on table '{}'",
                    table.name
                )));
            };
            match mask {
                Some(mask) => set(schema, table, column.as_str(), mask)?,
                None => {
                    table.masks.remove(&id);
                }
            }
        }
        ast::AlterTableAction::Add { columns, .. } => {
            for def in columns {
                if let Some(mask) = &def.mask {
                    set(schema, table, def.name.as_str(), mask)?;
                }
            }
        }
        _ => {
            let live: std::collections::BTreeSet<_> = table.columns.iter().map(|c| c.id).collect();
            table.masks.retain(|id, _| live.contains(id));
        }
    }
    Ok(())
}

fn set(
    schema: &crate::schema::Schema,
    table: &mut Table,
    column: &str,
    mask: &ast::ColumnMask,
) -> Result<()> {
    let Some(target) = table.column(column) else {
        return Ok(());
    };
    let (id, ty) = (target.id, target.ty.clone());
    let ctx = constants(schema, &table.keyspace);
    let prepared = prepare(mask, (&table.name, column), &ty, &ctx)?;
    table.masks.insert(id, prepared);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ddl::{alter_table, create_keyspace, create_table};
    use crate::schema::Schema;
    use rocksandra_cql::ast::Statement;

    fn parse(text: &str) -> Statement {
        rocksandra_cql::parse_statement(text)
            .map(|p| p.statement)
            .unwrap_or_else(|e| panic!("{text}: {e:?}"))
    }

    fn with_keyspace() -> Schema {
        let schema = crate::system::tests::schema_with(Vec::new());
        let Statement::CreateKeyspace(ks) = parse(
            "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        ) else {
            unreachable!()
        };
        let outcome = create_keyspace(&schema, &ks, &[]).expect("keyspace");
        outcome.schema.expect("a new schema")
    }

    fn create(schema: &Schema, text: &str, enabled: bool) -> Result<Schema> {
        let Statement::CreateTable(stmt) = parse(text) else {
            unreachable!()
        };
        let outcome = create_table(schema, "ks", &stmt, &|| 7, enabled)?;
        Ok(outcome.schema.expect("a new schema"))
    }

    fn alter(schema: &Schema, text: &str, enabled: bool) -> Result<Schema> {
        let Statement::AlterTable(stmt) = parse(text) else {
            unreachable!()
        };
        let outcome = alter_table(schema, "ks", &stmt, 1, (false, enabled))?;
        Ok(outcome.schema.unwrap_or_else(|| schema.clone()))
    }

    fn message(result: Result<Schema>) -> String {
        match result {
            Ok(_) => "accepted".into(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn masks_are_refused_while_masking_is_disabled_but_on_add() {
        let schema = with_keyspace();
        let refused = create(
            &schema,
            "CREATE TABLE t (k int PRIMARY KEY, v int MASKED WITH DEFAULT)",
            false,
        );
        assert!(message(refused).contains(DISABLED));
        let schema =
            create(&schema, "CREATE TABLE t (k int PRIMARY KEY, v int)", false).expect("t");
        let refused = alter(&schema, "ALTER TABLE t ALTER v MASKED WITH DEFAULT", false);
        assert!(message(refused).contains(DISABLED));
        assert!(alter(&schema, "ALTER TABLE t ALTER v DROP MASKED", false).is_ok());
        let added = alter(
            &schema,
            "ALTER TABLE t ADD w int MASKED WITH DEFAULT",
            false,
        )
        .expect("w");
        assert_eq!(added.table("ks", "t").expect("t").masks.len(), 1);
    }

    #[test]
    fn a_mask_keeps_its_function_and_argument_values() {
        let schema = with_keyspace();
        let text =
            "CREATE TABLE t (k int PRIMARY KEY, v text MASKED WITH mask_inner(1, null, '#'))";
        let schema = create(&schema, text, true).expect("t");
        let table = schema.table("ks", "t").expect("t");
        let mask = table.masks.values().next().expect("a mask");
        assert_eq!(mask.function, "mask_inner");
        assert_eq!(mask.arg_types, ["int", "int", "text"]);
        assert_eq!(
            mask.arg_values,
            [Some(vec![0, 0, 0, 1]), None, Some(b"#".to_vec())]
        );
        assert_eq!(describe(mask), "system.mask_inner(1, null, '#')");
        assert_eq!(argument_texts(mask), ["1", "", "#"]);
    }

    #[test]
    fn a_mask_must_be_a_masking_function_returning_the_column_type() {
        let schema = with_keyspace();
        let refusal = |definition: &str| {
            let text = format!("CREATE TABLE t (k int PRIMARY KEY, {definition})");
            message(create(&schema, &text, true))
        };
        assert_eq!(
            refusal("v int MASKED WITH abs()"),
            "Not-masking function abs() cannot be used for masking table columns"
        );
        assert_eq!(
            refusal("v int MASKED WITH max()"),
            "Aggregate function max() cannot be used for masking table columns"
        );
        assert_eq!(
            refusal("v int MASKED WITH ks.mask_null()"),
            "Unable to find masking function for v, no declared function matches the signature ks.mask_null()"
        );
        assert!(refusal("v text MASKED WITH mask_hash()").starts_with(
            "Masking function mask_hash() return type is blob. This is different to the type of the masked column v of type text."
        ));
        assert_eq!(
            refusal("v blob MASKED WITH mask_inner(1, 1)"),
            "Function system.mask_inner requires an argument of type [text|varchar|ascii], but found argument org.apache.cassandra.db.marshal.BytesType of type blob"
        );
    }

    #[test]
    fn altering_and_dropping_columns_updates_their_masks() {
        let schema = with_keyspace();
        let text = "CREATE TABLE t (k int PRIMARY KEY, v int MASKED WITH DEFAULT, w int)";
        let schema = create(&schema, text, true).expect("t");
        let schema = alter(
            &schema,
            "ALTER TABLE t ALTER w MASKED WITH mask_replace(-1)",
            true,
        )
        .expect("w");
        assert_eq!(schema.table("ks", "t").expect("t").masks.len(), 2);
        let schema = alter(&schema, "ALTER TABLE t ALTER v DROP MASKED", true).expect("v");
        let schema = alter(&schema, "ALTER TABLE t DROP w", true).expect("drop");
        assert!(schema.table("ks", "t").expect("t").masks.is_empty());
        assert_eq!(
            message(alter(&schema, "ALTER TABLE t ALTER nope DROP MASKED", true)),
            "Column with name 'nope' doesn't exist on table 't'"
        );
        assert!(alter(
            &schema,
            "ALTER TABLE t ALTER IF EXISTS nope DROP MASKED",
            true
        )
        .is_ok());
    }

    fn with_functions() -> Schema {
        let mut schema = with_keyspace();
        for text in [
            "CREATE FUNCTION times(v int, n int) RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE java AS 'return v * n;'",
            "CREATE FUNCTION state(s int, v int) CALLED ON NULL INPUT RETURNS int LANGUAGE java AS 'return s;'",
        ] {
            let Statement::CreateFunction(stmt) = parse(text) else {
                unreachable!()
            };
            let outcome = crate::ddl::udf::create_function(&schema, "ks", &stmt);
            schema = outcome.expect(text).schema.expect("a new schema");
        }
        schema
    }

    #[test]
    fn a_user_function_of_the_keyspace_is_a_mask_and_cannot_be_dropped() {
        let schema = with_functions();
        let text = "CREATE TABLE t (k int PRIMARY KEY, v int MASKED WITH times(3))";
        let schema = create(&schema, text, true).expect("t");
        let table = schema.table("ks", "t").expect("t");
        let mask = table.masks.values().next().expect("a mask");
        assert_eq!(mask.keyspace.as_deref(), Some("ks"));
        assert_eq!(describe(mask), "ks.times(3)");
        let ks = schema.keyspace("ks").expect("ks");
        let times = ks.functions.iter().find(|f| f.name == "times").expect("f");
        let state = ks.functions.iter().find(|f| f.name == "state").expect("f");
        assert!(uses(table, times));
        assert!(!uses(table, state));
        let refusal = |definition: &str| {
            let text = format!("CREATE TABLE t2 (k int PRIMARY KEY, {definition})");
            message(create(&schema, &text, true))
        };
        assert_eq!(
            refusal("v int MASKED WITH times()"),
            "Invalid number of arguments in call to function ks.times: 2 required but 1 provided"
        );
        assert!(refusal("v bigint MASKED WITH times(1)").starts_with("Type error: "));
        assert_eq!(
            refusal("v int MASKED WITH system.times(1)"),
            "Unable to find masking function for v, no declared function matches the signature system.times(1)"
        );
        assert_eq!(
            refusal("v int MASKED WITH times(?)"),
            "java.lang.IndexOutOfBoundsException: Index: 0"
        );
    }

    #[test]
    fn a_view_takes_its_base_columns_masks() {
        let schema = with_keyspace();
        let text = "CREATE TABLE t (k int PRIMARY KEY, v int MASKED WITH DEFAULT, w int)";
        let schema = create(&schema, text, true).expect("t");
        let base = schema.table("ks", "t").expect("t");
        let mut view = Table::clone(base);
        view.columns.reverse();
        for (i, column) in view.columns.iter_mut().enumerate() {
            column.id = rocksandra_storage::cell::ColumnId(100 + i as u32);
        }
        follow_base(&mut view, base);
        let masked: Vec<&str> = view
            .columns
            .iter()
            .filter(|c| view.masks.contains_key(&c.id))
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(masked, ["v"]);
    }

    #[test]
    fn where_clauses_restrict_the_columns_they_name() {
        let Statement::Select(select) = parse(
            "SELECT * FROM t WHERE token(a, b) > 0 AND (c, d) = (1, 2) AND m[1] = 2 AND e = 3",
        ) else {
            unreachable!()
        };
        for column in ["a", "b", "c", "d", "m", "e"] {
            assert!(
                select.where_clause.iter().any(|r| restricts(r, column)),
                "{column}"
            );
        }
        assert!(!select.where_clause.iter().any(|r| restricts(r, "f")));
    }
}
