//! The few CQL value encodings the migration reads or writes itself:
//! `bigint`, `int`, and collections (an `[int]` count, then `[bytes]`
//! elements; a map's entries as key, value) to split a non-frozen
//! collection into elements and to bind part of one.

use bytes::{BufMut, Bytes, BytesMut};

use super::MigrateError;

pub fn bigint(value: i64) -> Bytes {
    Bytes::copy_from_slice(&value.to_be_bytes())
}

pub fn int(value: i32) -> Bytes {
    Bytes::copy_from_slice(&value.to_be_bytes())
}

pub fn read_bigint(bytes: &[u8], what: &str) -> Result<i64, MigrateError> {
    let array: [u8; 8] = bytes
        .try_into()
        .map_err(|_| MigrateError::Data(format!("{what}: a bigint of {} bytes", bytes.len())))?;
    Ok(i64::from_be_bytes(array))
}

pub fn read_int(bytes: &[u8], what: &str) -> Result<i32, MigrateError> {
    let array: [u8; 4] = bytes
        .try_into()
        .map_err(|_| MigrateError::Data(format!("{what}: an int of {} bytes", bytes.len())))?;
    Ok(i32::from_be_bytes(array))
}

/// The `[bytes]` items of a serialized collection (`items_per_element` 2
/// for a map: key then value), nulls as `None`.
pub fn split_collection(
    bytes: &[u8],
    items_per_element: usize,
    what: &str,
) -> Result<Vec<Option<Bytes>>, MigrateError> {
    let bad = |why: &str| MigrateError::Data(format!("{what}: malformed collection ({why})"));
    let mut rest = bytes;
    let count = take_i32(&mut rest).ok_or_else(|| bad("no count"))?;
    let count = usize::try_from(count).map_err(|_| bad("negative count"))?;
    // Each item takes at least its 4-byte length: a forged count fails here.
    if count > rest.len() / 4 + 1 {
        return Err(bad("count larger than the value"));
    }
    let items = split_items(rest, what)?;
    if items.len() != count * items_per_element {
        return Err(bad("count and items differ"));
    }
    Ok(items)
}

/// The `[bytes]` fields of a serialized UDT value (no count: as many as
/// were written, possibly fewer than the type has), nulls as `None`.
pub fn split_fields(bytes: &[u8], what: &str) -> Result<Vec<Option<Bytes>>, MigrateError> {
    split_items(bytes, what)
}

fn split_items(mut rest: &[u8], what: &str) -> Result<Vec<Option<Bytes>>, MigrateError> {
    let bad = |why: &str| MigrateError::Data(format!("{what}: malformed value ({why})"));
    let mut items = Vec::new();
    while !rest.is_empty() {
        let length = take_i32(&mut rest).ok_or_else(|| bad("truncated length"))?;
        let Ok(length) = usize::try_from(length) else {
            items.push(None);
            continue;
        };
        if length > rest.len() {
            return Err(bad("truncated item"));
        }
        items.push(Some(Bytes::copy_from_slice(&rest[..length])));
        rest = &rest[length..];
    }
    Ok(items)
}

fn take_i32(rest: &mut &[u8]) -> Option<i32> {
    let (head, tail) = rest.split_first_chunk::<4>()?;
    *rest = tail;
    Some(i32::from_be_bytes(*head))
}

/// A collection of `count` elements made of `items` (`count * 2` items
/// for a map).
pub fn join_collection(count: usize, items: &[&Bytes]) -> Bytes {
    let mut out = BytesMut::new();
    out.put_i32(count as i32);
    for item in items {
        out.put_i32(item.len() as i32);
        out.put_slice(item);
    }
    out.freeze()
}

/// Per-element write times or TTLs of a non-frozen collection
/// (`list<bigint>` / `list<int>`; a TTL is null for an element without one).
pub fn per_element<T>(
    bytes: Option<&Bytes>,
    elements: usize,
    what: &str,
    read: impl Fn(&[u8], &str) -> Result<T, MigrateError>,
) -> Result<Vec<Option<T>>, MigrateError> {
    let Some(bytes) = bytes else {
        return Ok((0..elements).map(|_| None).collect());
    };
    let items = split_collection(bytes, 1, what)?;
    if items.len() != elements {
        return Err(MigrateError::Data(format!(
            "{what}: {} values for {elements} elements",
            items.len()
        )));
    }
    items
        .iter()
        .map(|item| item.as_deref().map(|b| read(b, what)).transpose())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_collection_splits_into_its_items_and_joins_back() {
        let a = Bytes::from_static(b"a");
        let bc = Bytes::from_static(b"bc");
        let joined = join_collection(2, &[&a, &bc]);
        let items = split_collection(&joined, 1, "s").expect("splits");
        assert_eq!(items, vec![Some(a), Some(bc)]);
    }

    #[test]
    fn null_items_and_truncated_values() {
        let mut with_null = BytesMut::new();
        with_null.put_i32(2);
        with_null.put_i32(-1);
        with_null.put_i32(4);
        with_null.put_i32(7);
        let ttls = per_element(Some(&with_null.freeze()), 2, "ttl", read_int).expect("reads");
        assert_eq!(ttls, vec![None, Some(7)]);
        assert!(split_collection(&[0, 0, 0, 1, 0, 0, 0, 9, 1], 1, "x").is_err());
        assert!(split_collection(&[0, 0], 1, "x").is_err());
        assert!(split_collection(&[0, 0x7f, 0, 0], 1, "x").is_err());
        assert!(read_bigint(&[1, 2], "w").is_err());
    }
}
