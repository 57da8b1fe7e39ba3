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

/// Checks `mask` for the column `column` of type `ty` (Cassandra's
/// `ColumnMask.Raw.prepare`) and evaluates its arguments.
pub(crate) fn prepare(
    mask: &ast::ColumnMask,
    column: &str,
    ty: &CqlType,
    ctx: &EvalContext<'_>,
) -> Result<ColumnMask> {
    let text = written(mask);
    let name = mask.function.name.as_str();
    let in_system = mask
        .function
        .keyspace
        .as_ref()
        .is_none_or(|k| k.as_str() == "system");
    if in_system && Aggregate::named(name).is_some() {
        return Err(QueryError::invalid(format!(
            "Aggregate function {text} cannot be used for masking table columns"
        )));
    }
    if !in_system || !functions::exists(name) {
        return Err(QueryError::invalid(format!(
            "Unable to find masking function for {column}, no declared function matches the signature {text}"
        )));
    }
    // The column's type stands for the first argument, which Cassandra's
    // messages name by its marshal class.
    let class = rocksandra_wire::types::marshal_name(ty);
    let mut args = vec![Arg::Selector(ty, &class)];
    args.extend(mask.args.iter().map(term::term_arg));
    let function = functions::resolve_called(name, &args, mask.function.keyspace.is_some())?;
    if !functions::is_masking(name) {
        return Err(QueryError::invalid(format!(
            "Not-masking function {text} cannot be used for masking table columns"
        )));
    }
    let returned = function.return_type();
    if returned.unfrozen() != ty.unfrozen() {
        return Err(QueryError::invalid(format!(
            "Masking function {text} return type is {returned}. This is different to the type of the \
             masked column {column} of type {ty}. Masking functions can only be attached to table \
             columns if they return the same data type as the masked column."
        )));
    }
    let arg_types = &function.arg_types()[1..];
    let mut arg_values = Vec::with_capacity(arg_types.len());
    for (expr, arg_type) in mask.args.iter().zip(arg_types) {
        arg_values.push(match term::evaluate(expr, arg_type, column, ctx)? {
            Term::Value(bytes) => Some(bytes),
            Term::Null | Term::Unset => None,
        });
    }
    Ok(ColumnMask {
        function: name.to_string(),
        arg_types: arg_types.iter().map(ToString::to_string).collect(),
        arg_values,
    })
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
    format!("system.{}({})", mask.function, args.join(", "))
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
type MaskedColumn = (usize, Function, Vec<Option<Vec<u8>>>);

impl Masker {
    /// The masks of `table` for the request's user; None when the user
    /// reads clear values.
    pub(crate) fn for_read(
        context: &StatementCtx<'_>,
        request: &Request,
        table: &Table,
        types: &dyn rocksandra_data::types::UdtResolver,
    ) -> Result<Option<Masker>> {
        if unmasks(context, request, table)? {
            return Ok(None);
        }
        let mut columns = Vec::with_capacity(table.masks.len());
        for (index, column) in table.columns.iter().enumerate() {
            let Some(mask) = table.masks.get(&column.id) else {
                continue;
            };
            let arg_types = mask
                .arg_types
                .iter()
                .map(|t| CqlType::parse(t, types))
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|e| QueryError::Server(format!("a stored mask has a bad type: {e}")))?;
            let mut args = vec![Arg::Typed(&column.ty)];
            args.extend(arg_types.iter().map(Arg::Typed));
            let function = functions::resolve(&mask.function, &args)?;
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
                let mut args = Vec::with_capacity(1 + others.len());
                args.push(cell.value.take());
                args.extend(others.iter().cloned());
                cell.value = function.call(&args, &call)?;
            }
        }
        Ok(())
    }
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
    let prepared = prepare(mask, column, &ty, &constants(schema, &table.keyspace))?;
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
