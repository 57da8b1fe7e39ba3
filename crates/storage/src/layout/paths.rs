//! Cell paths: how one element of a non-frozen collection or UDT is named
//! inside its column, so that element updates are blind writes and cells of
//! one column sort in the collection's order.
//!
//! - set element, map key: the byte-comparable encoding (ascending) of the
//!   element or key (`rocksandra_data::comparable`);
//! - list element: the byte-comparable encoding of a timeuuid (list order is
//!   the time order of these ids);
//! - UDT field: the field index as a big-endian u16.

use rocksandra_data::comparable;
use rocksandra_data::types::{CqlType, NativeType};
use rocksandra_data::ValueError;

use super::CorruptData;
use crate::cell::Cell;

/// The path of a set element or map key.
pub fn element_path(key_type: &CqlType, serialized: &[u8]) -> Result<Vec<u8>, ValueError> {
    let mut out = Vec::with_capacity(serialized.len() + 4);
    comparable::encode(key_type, serialized, false, &mut out)?;
    Ok(out)
}

/// The path of a set element or map key and, when the path does not give
/// back the bytes written (`comparable::written_form`), those bytes
/// (`Cell::with_element_key`).
pub fn element_key(
    key_type: &CqlType,
    serialized: &[u8],
) -> Result<(Vec<u8>, Option<Vec<u8>>), ValueError> {
    let path = element_path(key_type, serialized)?;
    let written = comparable::written_form(key_type, serialized)?;
    Ok((path, written))
}

/// The serialized element or key of a set or map cell as written.
pub fn element_of(key_type: &CqlType, cell: &Cell) -> Result<Vec<u8>, CorruptData> {
    match &cell.written_key {
        Some(written) => Ok(written.clone()),
        None => element_from_path(key_type, cell.path.as_deref().unwrap_or_default()),
    }
}

/// The serialized element or key back from its path.
pub fn element_from_path(key_type: &CqlType, path: &[u8]) -> Result<Vec<u8>, CorruptData> {
    let mut input = path;
    comparable::decode(key_type, &mut input, false)
        .map_err(|e| CorruptData::new("cell path", e.to_string()))
}

/// The path of a list element, from its 16 timeuuid bytes.
pub fn list_path(timeuuid: [u8; 16]) -> Vec<u8> {
    let mut out = Vec::with_capacity(20);
    // A timeuuid always has a byte-comparable form.
    let _ = comparable::encode(
        &CqlType::Native(NativeType::Timeuuid),
        &timeuuid,
        false,
        &mut out,
    );
    out
}

/// The timeuuid of a list element's path.
pub fn list_id_from_path(path: &[u8]) -> Result<[u8; 16], CorruptData> {
    let bytes = element_from_path(&CqlType::Native(NativeType::Timeuuid), path)?;
    bytes
        .try_into()
        .map_err(|_| CorruptData::new("cell path", "list element id is not 16 bytes"))
}

/// The path of a UDT field.
pub fn field_path(index: usize) -> Vec<u8> {
    (index as u16).to_be_bytes().to_vec()
}

pub fn field_index_from_path(path: &[u8]) -> Result<usize, CorruptData> {
    match path {
        [a, b] => Ok(usize::from(u16::from_be_bytes([*a, *b]))),
        _ => Err(CorruptData::new(
            "cell path",
            "UDT field path is not 2 bytes",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_round_trip_and_sort_like_their_elements() {
        let int = CqlType::Native(NativeType::Int);
        let a = element_path(&int, &(-5i32).to_be_bytes()).unwrap();
        let b = element_path(&int, &7i32.to_be_bytes()).unwrap();
        assert!(a < b);
        assert_eq!(element_from_path(&int, &b).unwrap(), 7i32.to_be_bytes());
        assert_eq!(field_index_from_path(&field_path(3)).unwrap(), 3);
        let id = [0x10, 0, 0, 0, 0, 0, 0x11, 0xef, 0x80, 0, 0, 0, 0, 0, 0, 1];
        assert_eq!(list_id_from_path(&list_path(id)).unwrap(), id);
    }

    #[test]
    fn a_decimal_key_keeps_its_written_bytes_beside_its_path() {
        let decimal = CqlType::Native(NativeType::Decimal);
        // 1.50 (unscaled 150, scale 2) and 1.5 (15, scale 1).
        let written = [0, 0, 0, 2, 0, 0x96];
        let normal = [0, 0, 0, 1, 0x0f];
        let (path, form) = element_key(&decimal, &written).unwrap();
        assert_eq!(path, element_path(&decimal, &normal).unwrap());
        assert_eq!(form.as_deref(), Some(&written[..]));
        assert_eq!(element_key(&decimal, &normal).unwrap().1, None);
        let int = CqlType::Native(NativeType::Int);
        assert_eq!(element_key(&int, &7i32.to_be_bytes()).unwrap().1, None);
        let cell =
            Cell::live(crate::cell::ColumnId(1), 1, vec![]).with_element_key((path.clone(), form));
        assert_eq!(element_of(&decimal, &cell).unwrap(), written);
        let plain = Cell::live(crate::cell::ColumnId(1), 1, vec![]).with_path(path);
        assert_eq!(element_of(&decimal, &plain).unwrap(), normal);
    }
}
