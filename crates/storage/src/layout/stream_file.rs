//! The stream file format of the in-memory store (RocksDB streams SST files):
//! `magic "RSTR1\n"`, then entries `[u32 BE key length][key][u32 BE value length][value]`.

use super::CorruptData;

const MAGIC: &[u8] = b"RSTR1\n";

pub fn encode_entries<'a>(entries: impl IntoIterator<Item = (&'a [u8], &'a [u8])>) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    for (key, value) in entries {
        for part in [key, value] {
            out.extend_from_slice(&(part.len() as u32).to_be_bytes());
            out.extend_from_slice(part);
        }
    }
    out
}

/// A stored key and its value.
pub type Entry = (Vec<u8>, Vec<u8>);

pub fn decode_entries(mut bytes: &[u8]) -> Result<Vec<Entry>, CorruptData> {
    bytes = bytes
        .strip_prefix(MAGIC)
        .ok_or_else(|| CorruptData::new("stream file", "bad magic"))?;
    let mut entries = Vec::new();
    while !bytes.is_empty() {
        let key = take_part(&mut bytes)?;
        let value = take_part(&mut bytes)?;
        entries.push((key, value));
    }
    Ok(entries)
}

fn take_part(bytes: &mut &[u8]) -> Result<Vec<u8>, CorruptData> {
    let len: [u8; 4] = bytes
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| CorruptData::new("stream file", "truncated length"))?;
    let len = u32::from_be_bytes(len) as usize;
    let part = bytes
        .get(4..4 + len)
        .ok_or_else(|| CorruptData::new("stream file", "truncated entry"))?
        .to_vec();
    *bytes = &bytes[4 + len..];
    Ok(part)
}
