//! The typed syntax tree the parser produces and the printer consumes: what a
//! server executor matches on. No schema knowledge lives here; names are as
//! written (unquoted names already lower-cased) and types are unresolved.

use crate::types::TypeExpr;

/// A name: unquoted names are lower-cased by the lexer, quoted names keep their case.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ident(String);

impl Ident {
    pub fn new(name: impl Into<String>) -> Ident {
        Ident(name.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// `[keyspace.]name`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct QualifiedName {
    pub keyspace: Option<Ident>,
    pub name: Ident,
}

/// One parsed statement with its bind markers in the order they appear.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedStatement {
    pub statement: Statement,
    /// Indexed by `BindMarker::index`; `len()` is the statement's bind count.
    pub bind_variables: Vec<BindVariable>,
}

/// A `?` or `:name` where it appears in the tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BindMarker {
    pub index: usize,
    pub name: Option<Ident>,
}

/// A bind marker and what it binds, so the server can infer its type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BindVariable {
    pub index: usize,
    pub name: Option<Ident>,
    pub receiver: BindReceiver,
}

/// What value a bind marker supplies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BindReceiver {
    /// A whole column value: INSERT values, `SET c = ?`, `WHERE c = ?`, `IF c = ?`.
    Column(Ident),
    /// The tuple of several columns: `WHERE (a, b) > ?`.
    Columns(Vec<Ident>),
    /// The key or index of a collection element: `c[?]`.
    ElementKey(Ident),
    /// The value of a collection element: `SET c[k] = ?`, `IF c[k] = ?`.
    ElementValue(Ident),
    /// What `SET c = c - ?` removes: the keys (a set) of a map, else a
    /// value of the column's type.
    Subtracted(Ident),
    /// A UDT field value: `SET c.f = ?`.
    Field {
        column: Ident,
        field: Ident,
    },
    /// The token of a partition key: `WHERE token(a, b) > ?`.
    Token(Vec<Ident>),
    /// The whole list of an `IN ?`.
    InValues(Box<BindReceiver>),
    Limit,
    PerPartitionLimit,
    Timestamp,
    Ttl,
    /// The JSON document of `INSERT ... JSON ?`.
    Json,
    /// A value whose type is given by a cast in the text: `(int) ?`.
    Hinted(TypeExpr),
    /// Part of a larger value whose receiver is `parent`.
    Nested {
        parent: Box<BindReceiver>,
        step: NestedStep,
    },
    /// Nothing in the text says (selectors, options).
    Unknown,
}

/// How a nested bind marker sits inside its parent value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NestedStep {
    ListItem,
    SetItem,
    MapKey,
    MapValue,
    TupleItem(usize),
    UdtField(Ident),
    InItem(usize),
    /// `CONTAINS ?`: an element of the collection.
    ContainsValue,
    /// `CONTAINS KEY ?`: a key of the map.
    ContainsKey,
    /// `x[?]` on a selector: a map's key, a set's element, a list's index.
    ElementKey,
    /// An operand of `+ - * / %` or unary minus.
    Operand,
    FunctionArgument {
        function: QualifiedName,
        position: usize,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Statement {
    Select(Box<Select>),
    Insert(Box<Insert>),
    Update(Box<Update>),
    Delete(Box<Delete>),
    Batch(Box<Batch>),
    Use(Ident),
    Truncate(QualifiedName),
    CreateKeyspace(CreateKeyspace),
    AlterKeyspace(AlterKeyspace),
    CreateTable(Box<CreateTable>),
    AlterTable(Box<AlterTable>),
    CreateType(CreateType),
    AlterType(AlterType),
    CreateIndex(Box<CreateIndex>),
    CreateMaterializedView(Box<CreateMaterializedView>),
    AlterMaterializedView(AlterMaterializedView),
    CreateTrigger(CreateTrigger),
    DropTrigger(DropTrigger),
    /// DROP KEYSPACE / TABLE / TYPE / INDEX / MATERIALIZED VIEW.
    Drop(DropObject),
    CreateFunction(Box<CreateFunction>),
    CreateAggregate(Box<CreateAggregate>),
    /// DROP FUNCTION / AGGREGATE.
    DropFunction(DropFunction),
    CreateRole(CreateRole),
    AlterRole(AlterRole),
    DropRole(DropRole),
    GrantPermissions(PermissionChange),
    RevokePermissions(PermissionChange),
    ListPermissions(ListPermissions),
    GrantRole(RoleChange),
    RevokeRole(RoleChange),
    ListRoles(ListRoles),
    ListUsers,
    Describe(Describe),
}

// ---------------------------------------------------------------- expressions

/// A term or selector. Terms never contain `Column`, `Element`, `Slice`,
/// `Field`, `Metadata`, `CountStar` or `Cast`; selectors may.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    Literal(Literal),
    Bind(BindMarker),
    Column(Ident),
    Function {
        name: QualifiedName,
        args: Vec<Expr>,
    },
    /// `count(*)`.
    CountStar,
    /// `writetime(c)`, `maxwritetime(c)`, `ttl(c)`.
    Metadata {
        kind: MetadataKind,
        column: Box<Expr>,
    },
    /// `CAST(expr AS type)`.
    Cast {
        expr: Box<Expr>,
        ty: TypeExpr,
    },
    /// `(type) expr`.
    TypeHint {
        ty: TypeExpr,
        expr: Box<Expr>,
    },
    /// `m['k']`.
    Element {
        collection: Box<Expr>,
        key: Box<Expr>,
    },
    /// `s[1..3]`, either bound may be open.
    Slice {
        collection: Box<Expr>,
        from: Option<Box<Expr>>,
        to: Option<Box<Expr>>,
    },
    /// `u.f`.
    Field {
        udt: Box<Expr>,
        field: Ident,
    },
    Binary {
        op: BinaryOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    Negate(Box<Expr>),
    List(Vec<Expr>),
    /// Also `{}`, whose kind (set or map) only the receiver decides.
    Set(Vec<Expr>),
    Map(Vec<(Expr, Expr)>),
    /// `{field: value}`; in selectors this may still turn out to be a map.
    Udt(Vec<(Ident, Expr)>),
    /// A tuple literal; in terms `(x)` is a one-element tuple, as in Cassandra.
    Tuple(Vec<Expr>),
}

/// A constant. Numbers keep their source text so values beyond `i64` or
/// `f64` survive until the receiver type is known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Literal {
    String(String),
    /// Decimal digits with an optional leading `-`.
    Integer(String),
    /// Includes `NaN`, `Infinity` and `-Infinity`.
    Float(String),
    Boolean(bool),
    Uuid(String),
    /// `0x...` as written.
    Blob(String),
    /// `1h30m`, `P1DT2H`, `-3d` as written.
    Duration(String),
    Null,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetadataKind {
    WriteTime,
    MaxWriteTime,
    Ttl,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Subtract,
    Multiply,
    Divide,
    Remainder,
}

// ---------------------------------------------------------------- SELECT

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Select {
    pub json: bool,
    pub distinct: bool,
    pub selection: Selection,
    pub table: QualifiedName,
    pub where_clause: Vec<Relation>,
    pub group_by: Vec<Expr>,
    pub order_by: Vec<Ordering>,
    pub per_partition_limit: Option<Expr>,
    pub limit: Option<Expr>,
    pub allow_filtering: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    /// `*`.
    Wildcard,
    Selectors(Vec<Selector>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector {
    pub expr: Expr,
    pub alias: Option<Ident>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ordering {
    pub column: Ident,
    pub kind: OrderingKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OrderingKind {
    /// Also what `ORDER BY c` without a direction means.
    Asc,
    Desc,
    /// `ORDER BY v ANN OF [..]`: vector similarity.
    Ann(Expr),
}

/// One `AND`-joined restriction of a WHERE clause.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Relation {
    Compare {
        lhs: RelationLhs,
        op: Operator,
        /// For `IN`, a parenthesised list is an `Expr::Tuple` of the items
        /// (possibly empty); `IN ?` is a bind marker.
        rhs: Expr,
    },
    IsNotNull {
        column: Ident,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RelationLhs {
    Column(Ident),
    /// `m[key] = value`.
    Element {
        column: Ident,
        key: Expr,
    },
    /// `(a, b) > (1, 2)`.
    Columns(Vec<Ident>),
    /// `token(a, b) > ...`.
    Token(Vec<Ident>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operator {
    Eq,
    Lt,
    Lte,
    Gt,
    Gte,
    Neq,
    In,
    Contains,
    ContainsKey,
    Like,
}

impl Operator {
    /// The operator as CQL writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::Eq => "=",
            Operator::Lt => "<",
            Operator::Lte => "<=",
            Operator::Gt => ">",
            Operator::Gte => ">=",
            Operator::Neq => "!=",
            Operator::In => "IN",
            Operator::Contains => "CONTAINS",
            Operator::ContainsKey => "CONTAINS KEY",
            Operator::Like => "LIKE",
        }
    }
}

// ---------------------------------------------------------------- modifications

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Insert {
    pub table: QualifiedName,
    pub values: InsertValues,
    pub if_not_exists: bool,
    pub using: Vec<UsingParam>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InsertValues {
    Columns {
        columns: Vec<Ident>,
        values: Vec<Expr>,
    },
    /// `JSON 'doc' [DEFAULT UNSET]`; the default is `DEFAULT NULL`.
    Json { value: Expr, default_unset: bool },
}

/// One `USING` parameter, kept in source order because bind markers are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UsingParam {
    Ttl(Expr),
    Timestamp(Expr),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Update {
    pub table: QualifiedName,
    pub using: Vec<UsingParam>,
    pub assignments: Vec<Assignment>,
    pub where_clause: Vec<Relation>,
    pub condition: Option<Condition>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    pub target: ColumnTarget,
    pub op: AssignOp,
    pub value: Expr,
}

/// A column, a collection element or a UDT field: what SET, DELETE and IF address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ColumnTarget {
    Column(Ident),
    Element { column: Ident, key: Expr },
    Field { column: Ident, field: Ident },
}

impl ColumnTarget {
    pub fn column(&self) -> &Ident {
        match self {
            ColumnTarget::Column(c) => c,
            ColumnTarget::Element { column, .. } | ColumnTarget::Field { column, .. } => column,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AssignOp {
    /// `c = v`.
    Set,
    /// `c = c + v` or `c += v`: append, add to a counter, union.
    Add,
    /// `c = v + c`: prepend to a list.
    Prepend,
    /// `c = c - v` or `c -= v`.
    Subtract,
}

/// The `IF` clause of UPDATE and DELETE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Condition {
    Exists,
    Columns(Vec<ColumnCondition>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnCondition {
    pub target: ColumnTarget,
    pub op: Operator,
    pub value: Expr,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delete {
    /// Empty means the whole row (or partition, or range).
    pub targets: Vec<ColumnTarget>,
    pub table: QualifiedName,
    pub using: Vec<UsingParam>,
    pub where_clause: Vec<Relation>,
    pub condition: Option<Condition>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    pub kind: BatchKind,
    pub using: Vec<UsingParam>,
    pub statements: Vec<Modification>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BatchKind {
    Logged,
    Unlogged,
    Counter,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Modification {
    Insert(Insert),
    Update(Update),
    Delete(Delete),
}

// ---------------------------------------------------------------- schema

/// `name = value` in a WITH clause.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Property {
    pub name: Ident,
    pub value: PropertyValue,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PropertyValue {
    Constant(Literal),
    /// A bare word such as `ALL` (lower-cased).
    Word(String),
    Map(Vec<(Literal, Literal)>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreateKeyspace {
    pub if_not_exists: bool,
    pub name: Ident,
    pub properties: Vec<Property>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AlterKeyspace {
    pub if_exists: bool,
    pub name: Ident,
    pub properties: Vec<Property>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreateTable {
    pub if_not_exists: bool,
    pub name: QualifiedName,
    pub columns: Vec<ColumnDefinition>,
    /// From `PRIMARY KEY ((a, b), c)` or an inline `c type PRIMARY KEY`.
    pub partition_key: Vec<Ident>,
    pub clustering_key: Vec<Ident>,
    pub options: TableOptions,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnDefinition {
    pub name: Ident,
    pub ty: TypeExpr,
    pub is_static: bool,
    /// `MASKED WITH ...` (Cassandra 5.0's dynamic data masking).
    pub mask: Option<ColumnMask>,
}

/// A column's mask: a masking function applied to the column's value as
/// its first argument, the others given here (`MASKED WITH DEFAULT` is
/// `mask_default()`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnMask {
    pub function: QualifiedName,
    pub args: Vec<Expr>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableOptions {
    pub properties: Vec<Property>,
    pub clustering_order: Vec<(Ident, ClusteringOrder)>,
    pub compact_storage: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClusteringOrder {
    Asc,
    Desc,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AlterTable {
    pub if_exists: bool,
    pub table: QualifiedName,
    pub action: AlterTableAction,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AlterTableAction {
    Add {
        if_not_exists: bool,
        columns: Vec<ColumnDefinition>,
    },
    Drop {
        if_exists: bool,
        columns: Vec<Ident>,
        /// `USING TIMESTAMP n`.
        timestamp: Option<i64>,
    },
    Rename {
        if_exists: bool,
        renames: Vec<(Ident, Ident)>,
    },
    /// `DROP COMPACT STORAGE`.
    DropCompactStorage,
    /// `ALTER c TYPE t`: parsed so the server can reject it with Cassandra's message.
    AlterColumnType {
        column: Ident,
        ty: TypeExpr,
    },
    /// `ALTER [IF EXISTS] c MASKED WITH ...`, or `DROP MASKED` (None).
    AlterColumnMask {
        if_exists: bool,
        column: Ident,
        mask: Option<ColumnMask>,
    },
    With(Vec<Property>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreateType {
    pub if_not_exists: bool,
    pub name: QualifiedName,
    pub fields: Vec<(Ident, TypeExpr)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AlterType {
    pub if_exists: bool,
    pub name: QualifiedName,
    pub action: AlterTypeAction,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AlterTypeAction {
    Add {
        if_not_exists: bool,
        field: Ident,
        ty: TypeExpr,
    },
    Rename {
        if_exists: bool,
        renames: Vec<(Ident, Ident)>,
    },
    AlterFieldType {
        field: Ident,
        ty: TypeExpr,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreateIndex {
    pub custom: bool,
    pub if_not_exists: bool,
    pub name: Option<Ident>,
    pub table: QualifiedName,
    pub targets: Vec<IndexTarget>,
    /// `USING 'class'`.
    pub class: Option<String>,
    /// `WITH OPTIONS = {...}` and any other WITH properties.
    pub properties: Vec<Property>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexTarget {
    pub column: Ident,
    pub kind: IndexTargetKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IndexTargetKind {
    /// `col`: values for collections, the value otherwise.
    Simple,
    Keys,
    Values,
    Entries,
    Full,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreateMaterializedView {
    pub if_not_exists: bool,
    pub name: QualifiedName,
    pub selection: Selection,
    pub base_table: QualifiedName,
    pub where_clause: Vec<Relation>,
    pub partition_key: Vec<Ident>,
    pub clustering_key: Vec<Ident>,
    pub options: TableOptions,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AlterMaterializedView {
    pub if_exists: bool,
    pub name: QualifiedName,
    pub properties: Vec<Property>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreateTrigger {
    pub if_not_exists: bool,
    pub name: Ident,
    pub table: QualifiedName,
    pub class: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DropTrigger {
    pub if_exists: bool,
    pub name: Ident,
    pub table: QualifiedName,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DropObject {
    pub kind: DropKind,
    pub if_exists: bool,
    /// For keyspaces, `keyspace` is None and `name` is the keyspace.
    pub name: QualifiedName,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DropKind {
    Keyspace,
    Table,
    Type,
    Index,
    MaterializedView,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreateFunction {
    pub or_replace: bool,
    pub if_not_exists: bool,
    pub name: QualifiedName,
    pub arguments: Vec<(Ident, TypeExpr)>,
    /// `CALLED ON NULL INPUT` (true) or `RETURNS NULL ON NULL INPUT` (false).
    pub called_on_null_input: bool,
    pub return_type: TypeExpr,
    pub language: Ident,
    pub body: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreateAggregate {
    pub or_replace: bool,
    pub if_not_exists: bool,
    pub name: QualifiedName,
    pub argument_types: Vec<TypeExpr>,
    pub state_function: Ident,
    pub state_type: TypeExpr,
    pub final_function: Option<Ident>,
    pub initial_condition: Option<Expr>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DropFunction {
    pub aggregate: bool,
    pub if_exists: bool,
    pub name: QualifiedName,
    /// None when no signature was given (drops the only overload).
    pub argument_types: Option<Vec<TypeExpr>>,
}

// ---------------------------------------------------------------- auth

/// USER statements are the pre-2.2 spelling of ROLE statements with LOGIN.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RoleKind {
    Role,
    User,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreateRole {
    pub kind: RoleKind,
    pub if_not_exists: bool,
    pub name: Ident,
    pub options: Vec<RoleOption>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AlterRole {
    pub kind: RoleKind,
    pub if_exists: bool,
    pub name: Ident,
    pub options: Vec<RoleOption>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DropRole {
    pub kind: RoleKind,
    pub if_exists: bool,
    pub name: Ident,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RoleOption {
    Password(String),
    HashedPassword(String),
    Login(bool),
    Superuser(bool),
    Options(Vec<(Literal, Literal)>),
    /// None is `ACCESS TO ALL DATACENTERS`.
    AccessToDatacenters(Option<Vec<String>>),
    /// None is `ACCESS FROM ALL CIDRS`.
    AccessFromCidrs(Option<Vec<String>>),
}

/// In Cassandra's order (its enum's), which listings sort by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Permission {
    Create,
    Alter,
    Drop,
    Select,
    Modify,
    Authorize,
    Describe,
    Execute,
    Unmask,
    SelectMasked,
}

impl Permission {
    /// Every permission, in Cassandra's order.
    pub const ALL: [Permission; 10] = [
        Permission::Create,
        Permission::Alter,
        Permission::Drop,
        Permission::Select,
        Permission::Modify,
        Permission::Authorize,
        Permission::Describe,
        Permission::Execute,
        Permission::Unmask,
        Permission::SelectMasked,
    ];

    /// The name CQL uses and Cassandra stores.
    pub fn name(self) -> &'static str {
        match self {
            Permission::Create => "CREATE",
            Permission::Alter => "ALTER",
            Permission::Drop => "DROP",
            Permission::Select => "SELECT",
            Permission::Modify => "MODIFY",
            Permission::Authorize => "AUTHORIZE",
            Permission::Describe => "DESCRIBE",
            Permission::Execute => "EXECUTE",
            Permission::Unmask => "UNMASK",
            Permission::SelectMasked => "SELECT_MASKED",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Permissions {
    All,
    One(Permission),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resource {
    AllKeyspaces,
    Keyspace(Ident),
    Table(QualifiedName),
    AllRoles,
    Role(Ident),
    AllFunctions {
        keyspace: Option<Ident>,
    },
    Function {
        name: QualifiedName,
        argument_types: Vec<TypeExpr>,
    },
    AllMbeans,
    Mbean(String),
    Mbeans(String),
}

/// GRANT or REVOKE permissions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PermissionChange {
    pub permissions: Permissions,
    pub resource: Resource,
    pub role: Ident,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListPermissions {
    pub permissions: Permissions,
    pub resource: Option<Resource>,
    pub role: Option<Ident>,
    pub recursive: bool,
}

/// GRANT role TO grantee, REVOKE role FROM grantee.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoleChange {
    pub role: Ident,
    pub grantee: Ident,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListRoles {
    pub of: Option<Ident>,
    pub recursive: bool,
}

// ---------------------------------------------------------------- describe

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Describe {
    pub target: DescribeTarget,
    pub with_internals: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DescribeTarget {
    Cluster,
    Schema {
        full: bool,
    },
    Keyspaces,
    /// None is the current keyspace.
    Keyspace {
        only: bool,
        name: Option<Ident>,
    },
    Tables,
    Table(QualifiedName),
    Types,
    Type(QualifiedName),
    Functions,
    Function(QualifiedName),
    Aggregates,
    Aggregate(QualifiedName),
    Index(QualifiedName),
    MaterializedView(QualifiedName),
    /// `DESCRIBE name`: a keyspace, table, view, index, type, function or aggregate.
    Name(QualifiedName),
}
