//! A cell as nodes send it to each other (and as hints, batchlog entries
//! and Paxos state keep it): the serde shape cells had before
//! `Cell::written_key`, so that every record and message without one is
//! unchanged. A written key travels inside the path:
//!
//! ```text
//! path = 0xFF, varint length of the key path, key path, written key bytes
//! ```
//!
//! No path starts with 0xFF otherwise: element and list paths start with a
//! byte-comparable component marker (`0x3F..=0x41`), a UDT field path with
//! the high byte of a field index below 32768.

use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};

use super::{Cell, CellKind, ColumnId};
use crate::layout::values::put_varint;
use rocksandra_data::Timestamp;

const WRITTEN_KEY_MARKER: u8 = 0xFF;

/// `Cell`'s serde fields, in order.
#[derive(Deserialize)]
pub(super) struct CellFields {
    column: ColumnId,
    path: Option<Vec<u8>>,
    timestamp: Timestamp,
    kind: CellKind,
    value: Vec<u8>,
}

impl Serialize for Cell {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut fields = serializer.serialize_struct("Cell", 5)?;
        fields.serialize_field("column", &self.column)?;
        match (&self.path, &self.written_key) {
            (Some(path), Some(written)) => {
                fields.serialize_field("path", &Some(joined_path(path, written)))?
            }
            (path, _) => fields.serialize_field("path", path)?,
        }
        fields.serialize_field("timestamp", &self.timestamp)?;
        fields.serialize_field("kind", &self.kind)?;
        fields.serialize_field("value", &self.value)?;
        fields.end()
    }
}

fn joined_path(path: &[u8], written: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len() + written.len() + 4);
    out.push(WRITTEN_KEY_MARKER);
    put_varint(path.len() as u64, &mut out);
    out.extend_from_slice(path);
    out.extend_from_slice(written);
    out
}

/// The key path and written key of a joined path.
fn split_path(joined: &[u8]) -> Result<(Vec<u8>, Vec<u8>), String> {
    let mut rest = joined.get(1..).unwrap_or_default();
    let mut length = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, tail) = rest.split_first().ok_or("truncated written cell key")?;
        rest = tail;
        length |= u64::from(byte & 0x7F) << shift;
        if byte & 0x80 == 0 {
            let length = usize::try_from(length)
                .ok()
                .filter(|n| *n <= rest.len())
                .ok_or("written cell key path past the end")?;
            let (path, written) = rest.split_at(length);
            return Ok((path.to_vec(), written.to_vec()));
        }
    }
    Err("written cell key length too long".into())
}

impl TryFrom<CellFields> for Cell {
    type Error = String;

    fn try_from(fields: CellFields) -> Result<Cell, String> {
        let (path, written_key) = match fields.path {
            Some(joined) if joined.first() == Some(&WRITTEN_KEY_MARKER) => {
                let (path, written) = split_path(&joined)?;
                (Some(path), Some(written))
            }
            path => (path, None),
        };
        Ok(Cell {
            column: fields.column,
            path,
            timestamp: fields.timestamp,
            kind: fields.kind,
            value: fields.value,
            written_key,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocksandra_data::LocalTime;

    #[derive(Serialize)]
    struct OldCell {
        column: ColumnId,
        path: Option<Vec<u8>>,
        timestamp: Timestamp,
        kind: CellKind,
        value: Vec<u8>,
    }

    #[test]
    fn cells_without_a_written_key_keep_their_old_encoding() {
        let cell = Cell::expiring(ColumnId(3), 7, 60, LocalTime(100), b"v".to_vec())
            .with_path(vec![0x40, 1]);
        let old = OldCell {
            column: cell.column,
            path: cell.path.clone(),
            timestamp: cell.timestamp,
            kind: cell.kind,
            value: cell.value.clone(),
        };
        let bytes = postcard::to_stdvec(&cell).expect("encodes");
        assert_eq!(bytes, postcard::to_stdvec(&old).expect("encodes"));
        assert_eq!(postcard::from_bytes::<Cell>(&bytes).expect("decodes"), cell);
    }

    #[test]
    fn a_written_key_travels_with_its_cell() {
        let cell = Cell::live(ColumnId(1), 5, b"x".to_vec())
            .with_element_key((vec![0x40; 200], Some(vec![0, 0, 0, 2, 0x96])));
        let bytes = postcard::to_stdvec(&cell).expect("encodes");
        assert_eq!(postcard::from_bytes::<Cell>(&bytes).expect("decodes"), cell);
        let empty = Cell::live(ColumnId(1), 5, vec![]).with_element_key((vec![], Some(vec![])));
        let bytes = postcard::to_stdvec(&empty).expect("encodes");
        assert_eq!(
            postcard::from_bytes::<Cell>(&bytes).expect("decodes"),
            empty
        );
    }

    #[test]
    fn a_corrupt_joined_path_is_an_error() {
        for path in [vec![0xFF], vec![0xFF, 5, 1], vec![0xFF; 12]] {
            let old = OldCell {
                column: ColumnId(1),
                path: Some(path),
                timestamp: Timestamp(1),
                kind: CellKind::Live,
                value: vec![],
            };
            let bytes = postcard::to_stdvec(&old).expect("encodes");
            assert!(postcard::from_bytes::<Cell>(&bytes).is_err());
        }
    }
}
