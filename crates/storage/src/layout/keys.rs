//! RocksDB key layout. One column family per table; within it:
//!
//! ```text
//! partition prefix = token (8 bytes, sign bit flipped, big-endian)
//!                    partition key bytes, 0x00 escaped as 0x00 0xFF
//!                    0x00 0x00 (terminator)
//! key              = partition prefix, kind, rest
//!   kind 0x01  partition header (partition deletion)     rest: empty
//!   kind 0x02  static row                                rest: empty
//!   kind 0x03  range tombstone      rest: start bound, end bound
//!   kind 0x04  row                  rest: clustering components, 0x38
//! component        = marker (0x40 value, 0x3F/0x41 empty ASC/DESC), then the
//!                    order-preserving value (`rocksandra_data::comparable`)
//! bound            = components, then 0x20 (sorts before extensions of its
//!                    prefix) or 0x60 (sorts after them); a bound at one row
//!                    (`ClusteringBound::exact_row`) ends in 0x37 (just before
//!                    that row) or 0x39 (just after it, before its extensions)
//! ```
//!
//! A row of a COMPACT STORAGE table may leave out trailing clustering
//! columns (CASSANDRA-7990): its key holds fewer components, so it sorts
//! before every row extending its clustering, in ASC and DESC columns
//! alike, as Cassandra sorts the nulls standing for the missing values.
//!
//! Partitions are therefore contiguous and in token order, then in the
//! unsigned order of their key bytes, as Cassandra orders them; rows sort in
//! clustering order (DESC columns encoded inverted), so slices are seeks.

use rocksandra_data::{comparable, CqlType, Token};
use serde::{Deserialize, Serialize};

use super::CorruptData;

pub const KIND_PARTITION_HEADER: u8 = 0x01;
pub const KIND_STATIC_ROW: u8 = 0x02;
pub const KIND_RANGE_TOMBSTONE: u8 = 0x03;
pub const KIND_ROW: u8 = 0x04;
/// Greater than every kind: `prefix + KIND_END` bounds a partition.
pub const KIND_END: u8 = 0xFF;

/// Every component starts with one of `comparable`'s marker bytes (null,
/// empty ASC, present, empty DESC), all between the row terminator and
/// `BOUND_AFTER`, which is what makes bounds and rows interleave correctly.
fn is_component_marker(b: u8) -> bool {
    matches!(
        b,
        comparable::NULL_MARKER
            | comparable::EMPTY_ASCENDING
            | comparable::SEPARATOR
            | comparable::EMPTY_DESCENDING
    )
}
/// Ends a full clustering key; between the two bound terminators, so a row
/// equal to a bound's prefix falls inside inclusive bounds.
pub const ROW_TERMINATOR: u8 = 0x38;
/// Bound terminator sorting before every key extending the bound's prefix.
pub const BOUND_BEFORE: u8 = 0x20;
/// Bound terminator sorting after every key extending the bound's prefix.
pub const BOUND_AFTER: u8 = 0x60;
/// Terminator of an exact-row bound sorting just before its row's key.
pub const ROW_BEFORE: u8 = ROW_TERMINATOR - 1;
/// Terminator of an exact-row bound sorting just after its row's key, and
/// before every key extending it (their next byte is a component marker).
pub const ROW_AFTER: u8 = ROW_TERMINATOR + 1;

/// A clustering column's type and order, as the key layout needs them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusteringColumn {
    pub ty: CqlType,
    pub descending: bool,
}

/// Whether clustering spec `new` orders and encodes the keys of `old`
/// alike: the same columns and orders, and types that differ at most by
/// user type names, field names and fields appended (ALTER TYPE RENAME and
/// ADD of a frozen UDT in a clustering column: the encoding leaves out
/// trailing null fields, so no key changes).
pub fn same_clustering_order(old: &[ClusteringColumn], new: &[ClusteringColumn]) -> bool {
    old.len() == new.len()
        && old
            .iter()
            .zip(new)
            .all(|(x, y)| x.descending == y.descending && orders_alike(&x.ty, &y.ty))
}

fn orders_alike(old: &CqlType, new: &CqlType) -> bool {
    let fields = |t: &CqlType| -> Option<Vec<CqlType>> {
        match t {
            CqlType::Udt(u) => Some(u.fields.iter().map(|(_, t)| t.clone()).collect()),
            CqlType::Tuple(items) => Some(items.clone()),
            _ => None,
        }
    };
    match (old, new) {
        (CqlType::Frozen(a), CqlType::Frozen(b))
        | (CqlType::List(a), CqlType::List(b))
        | (CqlType::Set(a), CqlType::Set(b)) => orders_alike(a, b),
        (CqlType::Map(ak, av), CqlType::Map(bk, bv)) => {
            orders_alike(ak, bk) && orders_alike(av, bv)
        }
        (CqlType::Vector(a, n), CqlType::Vector(b, m)) => n == m && orders_alike(a, b),
        (CqlType::Udt(_), CqlType::Udt(_)) => match (fields(old), fields(new)) {
            (Some(a), Some(b)) => {
                a.len() <= b.len() && a.iter().zip(&b).all(|(x, y)| orders_alike(x, y))
            }
            _ => false,
        },
        _ => old == new,
    }
}

/// Encodes the prefix shared by every key of one partition.
pub fn partition_prefix(token: Token, partition_key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + partition_key.len() + 3);
    push_partition_prefix(token, partition_key, &mut out);
    out
}

fn push_partition_prefix(token: Token, partition_key: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&token.to_order_preserving_bytes());
    for &b in partition_key {
        out.push(b);
        if b == 0 {
            out.push(0xFF);
        }
    }
    out.extend_from_slice(&[0, 0]);
}

/// The only two keys a partition of a table without clustering columns
/// can hold (its header's and its row's), built in one buffer for a point
/// read: each starts with the partition's prefix.
#[derive(Debug)]
pub struct PointKeys {
    buf: Vec<u8>,
    prefix_len: usize,
}

impl PointKeys {
    pub fn new(token: Token, partition_key: &[u8]) -> PointKeys {
        // The prefix twice (at most twice the key's length when every byte
        // is escaped), a kind each, and the row's terminator.
        let mut buf = Vec::with_capacity(2 * (8 + 2 * partition_key.len() + 2) + 3);
        push_partition_prefix(token, partition_key, &mut buf);
        let prefix_len = buf.len();
        buf.push(KIND_PARTITION_HEADER);
        buf.extend_from_within(..prefix_len);
        buf.extend_from_slice(&[KIND_ROW, ROW_TERMINATOR]);
        PointKeys { buf, prefix_len }
    }

    pub fn prefix(&self) -> &[u8] {
        &self.buf[..self.prefix_len]
    }

    /// `partition_header_key(prefix)`.
    pub fn header(&self) -> &[u8] {
        &self.buf[..=self.prefix_len]
    }

    /// `row_key(prefix, [], [])`.
    pub fn row(&self) -> &[u8] {
        &self.buf[self.prefix_len + 1..]
    }
}

/// The smallest key of any partition with a token >= `token`.
pub fn token_start(token: Token) -> Vec<u8> {
    token.to_order_preserving_bytes().to_vec()
}

/// The smallest key greater than every key of a partition with token <= `token`.
pub fn token_end(token: Token) -> Option<Vec<u8>> {
    if token.0 == i64::MAX {
        None
    } else {
        Some(Token(token.0 + 1).to_order_preserving_bytes().to_vec())
    }
}

/// Splits a stored key into its partition (token, key bytes, prefix length)
/// and the remainder after the prefix.
pub fn split_partition(key: &[u8]) -> Result<(Token, Vec<u8>, usize), CorruptData> {
    let token_bytes: [u8; 8] = key
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| CorruptData::new("key", "shorter than a token"))?;
    let token = Token::from_order_preserving_bytes(token_bytes);
    let mut partition_key = Vec::new();
    let mut i = 8;
    loop {
        match (key.get(i), key.get(i + 1)) {
            (Some(0), Some(0)) => return Ok((token, partition_key, i + 2)),
            (Some(0), Some(0xFF)) => {
                partition_key.push(0);
                i += 2;
            }
            (Some(0), _) => return Err(CorruptData::new("key", "bad escape in partition key")),
            (Some(&b), _) => {
                partition_key.push(b);
                i += 1;
            }
            (None, _) => return Err(CorruptData::new("key", "unterminated partition key")),
        }
    }
}

/// Length of the partition prefix a stored key starts with, without decoding
/// it; None for bytes that hold no complete prefix. Used as RocksDB's prefix
/// extractor, so bloom filters and seeks work per partition.
pub fn partition_prefix_len(key: &[u8]) -> Option<usize> {
    let mut i = 8;
    if key.len() < i {
        return None;
    }
    loop {
        match (key.get(i)?, key.get(i + 1)) {
            (0, Some(0)) => return Some(i + 2),
            (0, Some(0xFF)) => i += 2,
            (0, _) => return None,
            _ => i += 1,
        }
    }
}

/// `partition_prefix_len` for keys read back from the store, where a key
/// without a complete prefix is corrupt; unlike `split_partition`, nothing
/// is decoded or allocated.
pub fn stored_prefix_len(key: &[u8]) -> Result<usize, CorruptData> {
    partition_prefix_len(key).ok_or_else(|| CorruptData::new("key", "no complete partition key"))
}

pub fn partition_header_key(prefix: &[u8]) -> Vec<u8> {
    with_kind(prefix, KIND_PARTITION_HEADER)
}

pub fn static_row_key(prefix: &[u8]) -> Vec<u8> {
    with_kind(prefix, KIND_STATIC_ROW)
}

pub fn with_kind(prefix: &[u8], kind: u8) -> Vec<u8> {
    let mut out = Vec::with_capacity(prefix.len() + 1);
    out.extend_from_slice(prefix);
    out.push(kind);
    out
}

/// Appends clustering components (prefix of the clustering key) to `out`.
pub fn encode_components(
    columns: &[ClusteringColumn],
    values: &[Vec<u8>],
    out: &mut Vec<u8>,
) -> Result<(), CorruptData> {
    if values.len() > columns.len() {
        return Err(CorruptData::new("clustering", "more values than columns"));
    }
    for (column, value) in columns.iter().zip(values) {
        comparable::encode(&column.ty, value, column.descending, out)
            .map_err(|e| CorruptData::new("clustering value", e.to_string()))?;
    }
    Ok(())
}

/// Whether a row key of these columns may not give back the bytes written
/// (`comparable::may_normalize`): rows of such tables keep their
/// `ClusteringForm`.
pub fn may_normalize(columns: &[ClusteringColumn]) -> bool {
    columns.iter().any(|c| comparable::may_normalize(&c.ty))
}

/// The clustering values whose written bytes a row key does not give back,
/// by column index (`ClusteringForm::values`).
pub fn written_forms(
    columns: &[ClusteringColumn],
    values: &[Vec<u8>],
) -> Result<Vec<(u16, Vec<u8>)>, CorruptData> {
    let mut forms = Vec::new();
    for (index, (column, value)) in columns.iter().zip(values).enumerate() {
        let written = comparable::written_form(&column.ty, value)
            .map_err(|e| CorruptData::new("clustering value", e.to_string()))?;
        if let (Some(bytes), Ok(index)) = (written, u16::try_from(index)) {
            forms.push((index, bytes));
        }
    }
    Ok(forms)
}

/// Decodes clustering components until the input ends or a byte other than
/// the separator follows; returns the values (serialized native form).
pub fn decode_components(
    columns: &[ClusteringColumn],
    input: &mut &[u8],
) -> Result<Vec<Vec<u8>>, CorruptData> {
    let mut values = Vec::new();
    while input.first().is_some_and(|b| is_component_marker(*b)) {
        let column = columns
            .get(values.len())
            .ok_or_else(|| CorruptData::new("clustering", "more components than columns"))?;
        let value = comparable::decode(&column.ty, input, column.descending)
            .map_err(|e| CorruptData::new("clustering value", e.to_string()))?;
        values.push(value);
    }
    Ok(values)
}

pub fn row_key(
    prefix: &[u8],
    columns: &[ClusteringColumn],
    clustering: &[Vec<u8>],
) -> Result<Vec<u8>, CorruptData> {
    // Room for the kind, the terminator and the values with some escapes:
    // most keys are built without growing the buffer.
    let values: usize = clustering.iter().map(|v| v.len() + 4).sum();
    let mut out = Vec::with_capacity(prefix.len() + 2 + values);
    out.extend_from_slice(prefix);
    out.push(KIND_ROW);
    encode_components(columns, clustering, &mut out)?;
    out.push(ROW_TERMINATOR);
    Ok(out)
}

/// One end of a clustering slice: a clustering prefix and whether the end
/// includes the rows extending that prefix.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ClusteringBound {
    pub prefix: Vec<Vec<u8>>,
    pub inclusive: bool,
    /// The bound sits at the one row whose clustering is `prefix`, not
    /// around every row extending it: where a read resumes after a row. A
    /// compact table's row may have a prefix for its clustering, and the
    /// rows extending it come after it.
    pub exact_row: bool,
}

impl ClusteringBound {
    /// The bound that includes everything (empty prefix).
    pub fn unbounded() -> ClusteringBound {
        ClusteringBound::around(Vec::new(), true)
    }

    /// A bound including (or excluding) every row extending `prefix`.
    pub fn around(prefix: Vec<Vec<u8>>, inclusive: bool) -> ClusteringBound {
        ClusteringBound {
            prefix,
            inclusive,
            exact_row: false,
        }
    }

    /// The start of the rows after the row whose clustering is `clustering`.
    pub fn after_row(clustering: Vec<Vec<u8>>) -> ClusteringBound {
        ClusteringBound {
            prefix: clustering,
            inclusive: false,
            exact_row: true,
        }
    }

    /// The end of the rows before the row whose clustering is `clustering`.
    pub fn before_row(clustering: Vec<Vec<u8>>) -> ClusteringBound {
        ClusteringBound::after_row(clustering)
    }
}

/// Encodes a slice start as a key after `KIND_ROW`-style components; the
/// terminator makes it sort right next to the rows it bounds.
pub fn encode_bound(
    columns: &[ClusteringColumn],
    bound: &ClusteringBound,
    is_start: bool,
    out: &mut Vec<u8>,
) -> Result<(), CorruptData> {
    encode_components(columns, &bound.prefix, out)?;
    // Start inclusive / end exclusive sit before the prefix's rows; start
    // exclusive / end inclusive sit after them.
    let before = bound.inclusive == is_start;
    out.push(match (bound.exact_row, before) {
        (false, true) => BOUND_BEFORE,
        (false, false) => BOUND_AFTER,
        (true, true) => ROW_BEFORE,
        (true, false) => ROW_AFTER,
    });
    Ok(())
}

pub fn decode_bound(
    columns: &[ClusteringColumn],
    input: &mut &[u8],
    is_start: bool,
) -> Result<ClusteringBound, CorruptData> {
    let prefix = decode_components(columns, input)?;
    let terminator = *input
        .first()
        .ok_or_else(|| CorruptData::new("bound", "missing terminator"))?;
    *input = &input[1..];
    let (before, exact_row) = match terminator {
        BOUND_BEFORE => (true, false),
        BOUND_AFTER => (false, false),
        ROW_BEFORE => (true, true),
        ROW_AFTER => (false, true),
        other => return Err(CorruptData::new("bound", format!("terminator {other:#x}"))),
    };
    Ok(ClusteringBound {
        prefix,
        inclusive: before == is_start,
        exact_row,
    })
}

/// Key of a range tombstone: both bounds, so equal ranges merge into one entry.
pub fn range_tombstone_key(
    prefix: &[u8],
    columns: &[ClusteringColumn],
    start: &ClusteringBound,
    end: &ClusteringBound,
) -> Result<Vec<u8>, CorruptData> {
    let mut out = with_kind(prefix, KIND_RANGE_TOMBSTONE);
    encode_bound(columns, start, true, &mut out)?;
    encode_bound(columns, end, false, &mut out)?;
    Ok(out)
}

/// Key range `[start, end)` of the rows within a clustering slice.
pub fn row_slice(
    prefix: &[u8],
    columns: &[ClusteringColumn],
    start: &ClusteringBound,
    end: &ClusteringBound,
) -> Result<(Vec<u8>, Vec<u8>), CorruptData> {
    let mut lo = with_kind(prefix, KIND_ROW);
    encode_bound(columns, start, true, &mut lo)?;
    let mut hi = with_kind(prefix, KIND_ROW);
    encode_bound(columns, end, false, &mut hi)?;
    Ok((lo, hi))
}

/// A decoded key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodedKey {
    PartitionHeader,
    StaticRow,
    RangeTombstone {
        start: ClusteringBound,
        end: ClusteringBound,
    },
    Row {
        clustering: Vec<Vec<u8>>,
    },
}

/// Decodes what follows the partition prefix.
pub fn decode_after_prefix(
    columns: &[ClusteringColumn],
    rest: &[u8],
) -> Result<DecodedKey, CorruptData> {
    let (&kind, mut rest) = rest
        .split_first()
        .ok_or_else(|| CorruptData::new("key", "missing kind"))?;
    let decoded = match kind {
        KIND_PARTITION_HEADER => DecodedKey::PartitionHeader,
        KIND_STATIC_ROW => DecodedKey::StaticRow,
        KIND_RANGE_TOMBSTONE => {
            let start = decode_bound(columns, &mut rest, true)?;
            let end = decode_bound(columns, &mut rest, false)?;
            DecodedKey::RangeTombstone { start, end }
        }
        KIND_ROW => {
            let clustering = decode_components(columns, &mut rest)?;
            match rest.split_first() {
                Some((&ROW_TERMINATOR, tail)) => rest = tail,
                _ => return Err(CorruptData::new("key", "row key without terminator")),
            }
            DecodedKey::Row { clustering }
        }
        other => return Err(CorruptData::new("key", format!("unknown kind {other:#x}"))),
    };
    if !rest.is_empty() {
        return Err(CorruptData::new("key", "trailing bytes"));
    }
    Ok(decoded)
}

/// Whether a clustering key lies within `[start, end]` bounds, by comparing
/// encodings (the same order RocksDB uses).
pub fn bound_contains(
    columns: &[ClusteringColumn],
    start: &ClusteringBound,
    end: &ClusteringBound,
    clustering: &[Vec<u8>],
) -> Result<bool, CorruptData> {
    let mut key = Vec::new();
    encode_components(columns, clustering, &mut key)?;
    key.push(ROW_TERMINATOR);
    let mut lo = Vec::new();
    encode_bound(columns, start, true, &mut lo)?;
    let mut hi = Vec::new();
    encode_bound(columns, end, false, &mut hi)?;
    Ok(lo < key && key < hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn point_keys_are_the_header_and_row_keys_of_the_partition() {
        for key in [&b""[..], b"k", b"a\0b\0", &[0u8; 40]] {
            let token = Token::murmur3(key);
            let keys = PointKeys::new(token, key);
            let prefix = partition_prefix(token, key);
            assert_eq!(keys.prefix(), prefix.as_slice());
            assert_eq!(keys.header(), partition_header_key(&prefix).as_slice());
            assert_eq!(keys.row(), row_key(&prefix, &[], &[]).unwrap().as_slice());
        }
    }

    #[test]
    fn udt_renames_and_appended_fields_keep_the_clustering_order() {
        use rocksandra_data::types::{NativeType, UdtType};
        let udt = |fields: &[(&str, NativeType)]| {
            let fields = fields
                .iter()
                .map(|(n, t)| (n.to_string(), CqlType::Native(*t)))
                .collect();
            CqlType::Frozen(Box::new(CqlType::Udt(UdtType {
                keyspace: "ks".into(),
                name: "t".into(),
                fields,
            })))
        };
        let column = |ty: CqlType| ClusteringColumn {
            ty,
            descending: true,
        };
        let old = [column(udt(&[
            ("a", NativeType::Int),
            ("b", NativeType::Text),
        ]))];
        let renamed = [column(udt(&[
            ("x", NativeType::Int),
            ("b", NativeType::Text),
        ]))];
        let appended = [column(udt(&[
            ("a", NativeType::Int),
            ("b", NativeType::Text),
            ("c", NativeType::Bigint),
        ]))];
        let retyped = [column(udt(&[
            ("a", NativeType::Bigint),
            ("b", NativeType::Text),
        ]))];
        assert!(same_clustering_order(&old, &renamed));
        assert!(same_clustering_order(&old, &appended));
        assert!(!same_clustering_order(&appended, &old));
        assert!(!same_clustering_order(&old, &retyped));
        let ascending = [ClusteringColumn {
            descending: false,
            ..old[0].clone()
        }];
        assert!(!same_clustering_order(&old, &ascending));
    }

    #[test]
    fn prefix_len_agrees_with_split_partition() {
        for key in [&b""[..], b"a", b"\0", b"a\0b", b"\0\0\0"] {
            let prefix = partition_prefix(Token(-5), key);
            let mut row = prefix.clone();
            row.extend_from_slice(&[KIND_ROW, 1, 2, 0, 0]);
            for stored in [&prefix, &row] {
                let (_, _, len) = split_partition(stored).expect("split");
                assert_eq!(partition_prefix_len(stored), Some(len));
                assert_eq!(len, prefix.len());
            }
        }
        for bad in [
            &b"1234567"[..],
            b"12345678",
            b"12345678a\0",
            b"12345678\0\x01",
        ] {
            assert_eq!(partition_prefix_len(bad), None, "{bad:?}");
        }
    }
    use rocksandra_data::NativeType;

    fn int_col(descending: bool) -> ClusteringColumn {
        ClusteringColumn {
            ty: CqlType::Native(NativeType::Int),
            descending,
        }
    }

    fn int(v: i32) -> Vec<u8> {
        v.to_be_bytes().to_vec()
    }

    #[test]
    fn partition_prefix_round_trips_and_orders_by_token_then_key() {
        let a = partition_prefix(Token(-5), b"z");
        let b = partition_prefix(Token(3), b"a\0b");
        let c = partition_prefix(Token(3), b"a\0c");
        let d = partition_prefix(Token(3), b"a");
        assert!(a < b && b < c);
        assert!(d < b, "a key sorts before its extensions");
        let (token, key, len) = split_partition(&b).expect("decodes");
        assert_eq!(
            (token, key.as_slice(), len),
            (Token(3), &b"a\0b"[..], b.len())
        );
    }

    #[test]
    fn kinds_sort_header_static_tombstones_rows() {
        let p = partition_prefix(Token(0), b"k");
        let cols = [int_col(false)];
        let header = partition_header_key(&p);
        let stat = static_row_key(&p);
        let rt = range_tombstone_key(
            &p,
            &cols,
            &ClusteringBound::unbounded(),
            &ClusteringBound::unbounded(),
        )
        .expect("encodes");
        let row = row_key(&p, &cols, &[int(-7)]).expect("encodes");
        assert!(header < stat && stat < rt && rt < row);
        assert!(row < with_kind(&p, KIND_END));
    }

    #[test]
    fn bounds_bracket_the_rows_of_their_prefix() {
        let p = partition_prefix(Token(0), b"k");
        let cols = [int_col(false), int_col(true)];
        let row = |a, b| row_key(&p, &cols, &[int(a), int(b)]).expect("encodes");
        let bound = |v: i32, inclusive| ClusteringBound::around(vec![int(v)], inclusive);
        let (lo, hi) = row_slice(&p, &cols, &bound(1, true), &bound(2, true)).expect("slice");
        for (a, b, inside) in [
            (0, 0, false),
            (1, 9, true),
            (1, -9, true),
            (2, 5, true),
            (3, 0, false),
        ] {
            let k = row(a, b);
            assert_eq!(lo <= k && k < hi, inside, "row ({a}, {b})");
        }
        let (lo, hi) = row_slice(&p, &cols, &bound(1, false), &bound(2, false)).expect("slice");
        assert!(!(lo <= row(1, 0) && row(1, 0) < hi));
        assert!(!(lo <= row(2, 0) && row(2, 0) < hi));
        // DESC second column: (1, 9) sorts before (1, -9).
        assert!(row(1, 9) < row(1, -9));
    }

    #[test]
    fn keys_decode_back() {
        let p = partition_prefix(Token(42), b"pk");
        let cols = [int_col(false), int_col(true)];
        let start = ClusteringBound::around(vec![int(1)], false);
        let end = ClusteringBound::around(vec![int(3), int(4)], true);
        let rt = range_tombstone_key(&p, &cols, &start, &end).expect("encodes");
        assert_eq!(
            decode_after_prefix(&cols, &rt[p.len()..]).expect("decodes"),
            DecodedKey::RangeTombstone { start, end }
        );
        let row = row_key(&p, &cols, &[int(5), int(-6)]).expect("encodes");
        assert_eq!(
            decode_after_prefix(&cols, &row[p.len()..]).expect("decodes"),
            DecodedKey::Row {
                clustering: vec![int(5), int(-6)]
            }
        );
    }

    #[test]
    fn a_prefix_row_sorts_before_the_rows_extending_it_in_any_order() {
        let p = partition_prefix(Token(0), b"k");
        for descending in [false, true] {
            let cols = [int_col(descending), int_col(descending)];
            let row = |c: &[i32]| {
                let values: Vec<Vec<u8>> = c.iter().map(|v| int(*v)).collect();
                row_key(&p, &cols, &values).expect("encodes")
            };
            let prefix_row = row(&[1]);
            for extension in [row(&[1, i32::MIN]), row(&[1, 0]), row(&[1, i32::MAX])] {
                assert!(prefix_row < extension, "descending: {descending}");
            }
            let (before, after) = if descending {
                (row(&[2, 0]), row(&[0, 0]))
            } else {
                (row(&[0, 0]), row(&[2, 0]))
            };
            assert!(before < prefix_row && prefix_row < after);
            assert_eq!(
                decode_after_prefix(&cols, &prefix_row[p.len()..]).expect("decodes"),
                DecodedKey::Row {
                    clustering: vec![int(1)]
                }
            );
        }
    }

    #[test]
    fn exact_row_bounds_take_the_row_and_not_its_extensions() {
        let cols = [int_col(false), int_col(true)];
        let contains = |start: &ClusteringBound, end: &ClusteringBound, c: &[i32]| {
            let values: Vec<Vec<u8>> = c.iter().map(|v| int(*v)).collect();
            bound_contains(&cols, start, end, &values).expect("encodes")
        };
        let everything = ClusteringBound::unbounded();
        let after = ClusteringBound::after_row(vec![int(1)]);
        assert!(!contains(&after, &everything, &[1]));
        assert!(contains(&after, &everything, &[1, 7]));
        assert!(contains(&after, &everything, &[2]));
        assert!(!contains(&after, &everything, &[0, 7]));
        let before = ClusteringBound::before_row(vec![int(1)]);
        assert!(!contains(&everything, &before, &[1]));
        assert!(!contains(&everything, &before, &[1, 7]));
        assert!(contains(&everything, &before, &[0, 7]));
        // A prefix bound of the same values covers the prefix row and its
        // extensions alike.
        let around = ClusteringBound::around(vec![int(1)], false);
        assert!(!contains(&around, &everything, &[1, 7]));
        // Exact bounds decode back (they never reach a tombstone's key,
        // but a key is read back whole).
        for (bound, is_start) in [(&after, true), (&before, false)] {
            let mut out = Vec::new();
            encode_bound(&cols, bound, is_start, &mut out).expect("encodes");
            let decoded = decode_bound(&cols, &mut out.as_slice(), is_start).expect("decodes");
            assert_eq!(&decoded, bound);
        }
    }

    #[test]
    fn full_clustering_keys_keep_their_bytes() {
        let p = partition_prefix(Token(9), b"k");
        let cols = [int_col(false), int_col(true)];
        let key = row_key(&p, &cols, &[int(1), int(2)]).expect("encodes");
        let mut expected = p.clone();
        expected.push(KIND_ROW);
        for (v, descending) in [(1i32, false), (2, true)] {
            comparable::encode(&cols[0].ty, &int(v), descending, &mut expected).expect("encodes");
        }
        expected.push(ROW_TERMINATOR);
        assert_eq!(key, expected);
    }

    #[test]
    fn garbage_keys_are_errors_not_panics() {
        let cols = [int_col(false)];
        for bytes in [
            &b""[..],
            b"\x01\x02",
            b"12345678\x00\x01",
            b"12345678k\x00\x00\x09",
        ] {
            if let Ok((_, _, len)) = split_partition(bytes) {
                let _ = decode_after_prefix(&cols, &bytes[len..]);
            }
        }
    }
}
