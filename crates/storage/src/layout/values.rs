//! RocksDB value layout: one `RowState` per entry (rows, the static row, and
//! deletion-only entries for partition headers and range tombstones).
//!
//! ```text
//! value    = version (0x01), flags, [liveness], [deletion], [form],
//!            varint count, complex deletion*, varint count, cell*
//! flags    = bit 0: liveness present, bit 1: deletion present,
//!            bit 2: clustering form present
//! liveness = timestamp i64, ttl i32, local expiration i64
//! deletion = marked-for-delete-at i64, local deletion time i64
//! form     = timestamp i64, varint count, (varint index, varint length,
//!            written bytes)* (`ClusteringForm`; only in tables whose
//!            clustering key may normalize a value, so no other row has it)
//! complex  = varint column id, deletion
//! cell     = varint column id, cell flags, [varint path length, path],
//!            [varint written key length, written key],
//!            timestamp i64, kind fields, [varint value length, value]
//! cell flags = bit 0: has path; bits 1-2: 0 live, 1 expiring, 2 tombstone;
//!            bit 3: has a written key (`Cell::written_key`, with a path)
//! kind fields: live none; expiring ttl i32 + local expiration i64;
//!              tombstone local deletion time i64 (and no value)
//! ```
//! Integers are big-endian; varints are unsigned LEB128.

use rocksandra_data::{LocalTime, Timestamp};

use super::CorruptData;
use crate::cell::{Cell, CellKind, ClusteringForm, ColumnId, DeletionTime, LivenessInfo, RowState};

pub const FORMAT_VERSION: u8 = 1;
const FLAG_LIVENESS: u8 = 1;
const FLAG_DELETION: u8 = 2;
const FLAG_CLUSTERING_FORM: u8 = 4;
const CELL_HAS_PATH: u8 = 1;
const CELL_LIVE: u8 = 0;
const CELL_EXPIRING: u8 = 2;
const CELL_TOMBSTONE: u8 = 4;
const CELL_KIND_MASK: u8 = 6;
const CELL_HAS_WRITTEN_KEY: u8 = 8;

pub fn encode_row(row: &RowState) -> Vec<u8> {
    let mut out = Vec::with_capacity(32 + row.cells.len() * 24);
    encode_row_into(row, &mut out);
    out
}

pub fn encode_row_into(row: &RowState, out: &mut Vec<u8>) {
    out.push(FORMAT_VERSION);
    let mut flags = 0;
    if row.liveness.is_some() {
        flags |= FLAG_LIVENESS;
    }
    if row.deletion.is_some() {
        flags |= FLAG_DELETION;
    }
    if row.clustering_form.is_some() {
        flags |= FLAG_CLUSTERING_FORM;
    }
    out.push(flags);
    if let Some(l) = row.liveness {
        out.extend_from_slice(&l.timestamp.0.to_be_bytes());
        out.extend_from_slice(&l.ttl_seconds.to_be_bytes());
        out.extend_from_slice(&l.local_expiration_time.0.to_be_bytes());
    }
    if let Some(d) = row.deletion {
        put_deletion(d, out);
    }
    if let Some(form) = &row.clustering_form {
        put_clustering_form(form, out);
    }
    put_varint(row.complex_deletions.len() as u64, out);
    for (column, d) in &row.complex_deletions {
        put_varint(u64::from(column.0), out);
        put_deletion(*d, out);
    }
    put_varint(row.cells.len() as u64, out);
    for cell in &row.cells {
        put_cell(cell, out);
    }
}

fn put_deletion(d: DeletionTime, out: &mut Vec<u8>) {
    out.extend_from_slice(&d.marked_for_delete_at.0.to_be_bytes());
    out.extend_from_slice(&d.local_deletion_time.0.to_be_bytes());
}

fn put_clustering_form(form: &ClusteringForm, out: &mut Vec<u8>) {
    out.extend_from_slice(&form.timestamp.0.to_be_bytes());
    put_varint(form.values.len() as u64, out);
    for (index, bytes) in &form.values {
        put_varint(u64::from(*index), out);
        put_varint(bytes.len() as u64, out);
        out.extend_from_slice(bytes);
    }
}

fn put_cell(cell: &Cell, out: &mut Vec<u8>) {
    put_varint(u64::from(cell.column.0), out);
    let kind = match cell.kind {
        CellKind::Live => CELL_LIVE,
        CellKind::Expiring { .. } => CELL_EXPIRING,
        CellKind::Tombstone { .. } => CELL_TOMBSTONE,
    };
    let has_path = if cell.path.is_some() {
        CELL_HAS_PATH
    } else {
        0
    };
    let written_key = cell.written_key.as_ref().filter(|_| cell.path.is_some());
    let has_written_key = if written_key.is_some() {
        CELL_HAS_WRITTEN_KEY
    } else {
        0
    };
    out.push(kind | has_path | has_written_key);
    if let Some(path) = &cell.path {
        put_varint(path.len() as u64, out);
        out.extend_from_slice(path);
    }
    if let Some(written) = written_key {
        put_varint(written.len() as u64, out);
        out.extend_from_slice(written);
    }
    out.extend_from_slice(&cell.timestamp.0.to_be_bytes());
    match cell.kind {
        CellKind::Live => {}
        CellKind::Expiring {
            ttl_seconds,
            local_expiration_time,
        } => {
            out.extend_from_slice(&ttl_seconds.to_be_bytes());
            out.extend_from_slice(&local_expiration_time.0.to_be_bytes());
        }
        CellKind::Tombstone {
            local_deletion_time,
        } => {
            out.extend_from_slice(&local_deletion_time.0.to_be_bytes());
            return;
        }
    }
    put_varint(cell.value.len() as u64, out);
    out.extend_from_slice(&cell.value);
}

pub fn put_varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A cursor over stored bytes; every read is bounds-checked.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], CorruptData> {
        if self.bytes.len() < n {
            return Err(CorruptData::new("value", "truncated"));
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, CorruptData> {
        Ok(self.take(1)?[0])
    }

    fn i32(&mut self) -> Result<i32, CorruptData> {
        let b: [u8; 4] = self
            .take(4)?
            .try_into()
            .map_err(|_| CorruptData::new("value", "i32"))?;
        Ok(i32::from_be_bytes(b))
    }

    fn i64(&mut self) -> Result<i64, CorruptData> {
        let b: [u8; 8] = self
            .take(8)?
            .try_into()
            .map_err(|_| CorruptData::new("value", "i64"))?;
        Ok(i64::from_be_bytes(b))
    }

    fn varint(&mut self) -> Result<u64, CorruptData> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7F) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(CorruptData::new("value", "varint too long"))
    }

    /// A length that must fit in what remains, so a corrupt length can
    /// never cause a large allocation.
    fn length(&mut self) -> Result<usize, CorruptData> {
        let n = self.varint()?;
        usize::try_from(n)
            .ok()
            .filter(|n| *n <= self.bytes.len())
            .ok_or_else(|| CorruptData::new("value", "length past the end"))
    }

    fn column(&mut self) -> Result<ColumnId, CorruptData> {
        u32::try_from(self.varint()?)
            .map(ColumnId)
            .map_err(|_| CorruptData::new("value", "column id"))
    }

    fn deletion(&mut self) -> Result<DeletionTime, CorruptData> {
        Ok(DeletionTime::new(self.i64()?, self.i64()?))
    }

    fn clustering_form(&mut self) -> Result<ClusteringForm, CorruptData> {
        let timestamp = Timestamp(self.i64()?);
        let count = self.length()?;
        let mut values = Vec::with_capacity(count);
        for _ in 0..count {
            let index = u16::try_from(self.varint()?)
                .map_err(|_| CorruptData::new("value", "clustering index"))?;
            let n = self.length()?;
            values.push((index, self.take(n)?.to_vec()));
        }
        Ok(ClusteringForm { timestamp, values })
    }
}

pub fn decode_row(bytes: &[u8]) -> Result<RowState, CorruptData> {
    let mut r = Reader { bytes };
    let version = r.u8()?;
    if version != FORMAT_VERSION {
        return Err(CorruptData::new(
            "value",
            format!("format version {version}"),
        ));
    }
    let flags = r.u8()?;
    let liveness = if flags & FLAG_LIVENESS != 0 {
        Some(LivenessInfo::new(r.i64()?, r.i32()?, r.i64()?))
    } else {
        None
    };
    let deletion = if flags & FLAG_DELETION != 0 {
        Some(r.deletion()?)
    } else {
        None
    };
    let clustering_form = if flags & FLAG_CLUSTERING_FORM != 0 {
        Some(r.clustering_form()?)
    } else {
        None
    };
    let complex_count = r.length()?;
    let mut complex_deletions = Vec::with_capacity(complex_count);
    for _ in 0..complex_count {
        complex_deletions.push((r.column()?, r.deletion()?));
    }
    let cell_count = r.length()?;
    let mut cells = Vec::with_capacity(cell_count);
    for _ in 0..cell_count {
        cells.push(read_cell(&mut r)?);
    }
    if !r.bytes.is_empty() {
        return Err(CorruptData::new("value", "trailing bytes"));
    }
    Ok(RowState {
        liveness,
        deletion,
        complex_deletions,
        cells,
        clustering_form,
    })
}

fn read_cell(r: &mut Reader<'_>) -> Result<Cell, CorruptData> {
    let column = r.column()?;
    let flags = r.u8()?;
    let path = if flags & CELL_HAS_PATH != 0 {
        let n = r.length()?;
        Some(r.take(n)?.to_vec())
    } else {
        None
    };
    let written_key = if flags & CELL_HAS_WRITTEN_KEY != 0 && path.is_some() {
        let n = r.length()?;
        Some(r.take(n)?.to_vec())
    } else {
        None
    };
    let timestamp = Timestamp(r.i64()?);
    let kind = match flags & CELL_KIND_MASK {
        CELL_LIVE => CellKind::Live,
        CELL_EXPIRING => CellKind::Expiring {
            ttl_seconds: r.i32()?,
            local_expiration_time: LocalTime(r.i64()?),
        },
        CELL_TOMBSTONE => CellKind::Tombstone {
            local_deletion_time: LocalTime(r.i64()?),
        },
        other => return Err(CorruptData::new("value", format!("cell kind {other}"))),
    };
    let value = if matches!(kind, CellKind::Tombstone { .. }) {
        Vec::new()
    } else {
        let n = r.length()?;
        r.take(n)?.to_vec()
    };
    Ok(Cell {
        column,
        path,
        timestamp,
        kind,
        value,
        written_key,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_round_trips() {
        let now = LocalTime(1_700_000_000);
        let row = RowState {
            liveness: Some(LivenessInfo::new(5, 10, now.0 + 10)),
            deletion: Some(DeletionTime::new(3, now.0)),
            complex_deletions: vec![(ColumnId(7), DeletionTime::new(4, now.0))],
            cells: vec![
                Cell::live(ColumnId(1), 9, b"abc".to_vec()),
                Cell::expiring(ColumnId(2), 9, 60, now, vec![0; 300]),
                Cell::tombstone(ColumnId(3), 9, now),
                Cell::live(ColumnId(7), 9, vec![]).with_path(vec![1, 2, 3]),
                Cell::live(ColumnId(8), 9, b"v".to_vec())
                    .with_element_key((vec![0x40, 1], Some(vec![0, 0, 0, 1, 0x0f]))),
            ],
            clustering_form: None,
        };
        assert_eq!(decode_row(&encode_row(&row)).expect("decodes"), row);
        let with_form = RowState {
            clustering_form: Some(ClusteringForm {
                timestamp: Timestamp(-4),
                values: vec![(0, vec![0, 0, 0, 2, 0x96]), (300, vec![])],
            }),
            ..row
        };
        let bytes = encode_row(&with_form);
        assert_eq!(decode_row(&bytes).expect("decodes"), with_form);
        for cut in 0..bytes.len() {
            assert!(decode_row(&bytes[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn a_form_of_normal_values_costs_its_timestamp_and_a_count() {
        let row = RowState {
            cells: vec![Cell::live(ColumnId(1), 2, b"x".to_vec())],
            clustering_form: Some(ClusteringForm {
                timestamp: Timestamp(2),
                values: vec![],
            }),
            ..Default::default()
        };
        let bytes = encode_row(&row);
        assert_eq!(
            bytes,
            [1, 4, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 1, b'x']
        );
        assert_eq!(decode_row(&bytes).expect("decodes"), row);
    }

    #[test]
    fn fixture_of_format_version_1() {
        let row = RowState {
            cells: vec![Cell::live(ColumnId(1), 2, b"x".to_vec())],
            ..Default::default()
        };
        let bytes = encode_row(&row);
        assert_eq!(bytes, [1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 1, b'x']);
    }

    #[test]
    fn corrupt_values_are_errors() {
        let good = encode_row(&RowState {
            cells: vec![Cell::live(ColumnId(1), 2, b"xyz".to_vec())],
            ..Default::default()
        });
        for cut in 0..good.len() {
            assert!(decode_row(&good[..cut]).is_err(), "cut at {cut}");
        }
        assert!(decode_row(&[1, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F]).is_err());
    }
}
