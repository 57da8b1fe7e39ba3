//! The notation types of spec section 3 ([int], [string], [bytes], [value], [inet]...):
//! a bounds-checked `Reader` and the matching `put_*` writers.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::{WireError, WireResult};
use crate::frame::ProtocolVersion;

/// A bound or bind value: `[value]` with its two special lengths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// Length -1.
    Null,
    /// Length -2: leave the existing value unchanged.
    Unset,
    Bytes(Bytes),
}

/// `[string map]`.
pub type StringMap = BTreeMap<String, String>;
/// `[string multimap]`.
pub type StringMultimap = BTreeMap<String, Vec<String>>;
/// `[bytes map]`, as used by custom payloads.
pub type BytesMap = BTreeMap<String, Option<Bytes>>;

/// Reads notation types from a body; every read checks the remaining bytes
/// first, and every length is checked before anything is allocated for it.
/// Slices share the body's buffer (no copy).
#[derive(Debug, Clone)]
pub struct Reader {
    buf: Bytes,
    pos: usize,
}

impl Reader {
    pub fn new(buf: Bytes) -> Reader {
        Reader { buf, pos: 0 }
    }

    pub fn remaining_bytes(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.remaining_bytes() == 0
    }

    /// Fails unless at least `needed_bytes` remain: the check to make before
    /// allocating for a count read from the wire.
    pub fn need(&self, what: &'static str, needed_bytes: usize) -> WireResult<()> {
        if needed_bytes > self.remaining_bytes() {
            return Err(WireError::Truncated {
                what,
                needed_bytes,
                remaining_bytes: self.remaining_bytes(),
            });
        }
        Ok(())
    }

    /// Takes `len` raw bytes.
    pub fn take(&mut self, what: &'static str, len: usize) -> WireResult<Bytes> {
        self.need(what, len)?;
        let out = self.buf.slice(self.pos..self.pos + len);
        self.pos += len;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> WireResult<[u8; N]> {
        self.need(what, N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(&self.buf[self.pos..self.pos + N]);
        self.pos += N;
        Ok(out)
    }

    pub fn byte(&mut self, what: &'static str) -> WireResult<u8> {
        Ok(self.array::<1>(what)?[0])
    }

    pub fn short(&mut self, what: &'static str) -> WireResult<u16> {
        Ok(u16::from_be_bytes(self.array(what)?))
    }

    pub fn int(&mut self, what: &'static str) -> WireResult<i32> {
        Ok(i32::from_be_bytes(self.array(what)?))
    }

    pub fn long(&mut self, what: &'static str) -> WireResult<i64> {
        Ok(i64::from_be_bytes(self.array(what)?))
    }

    pub fn uuid(&mut self, what: &'static str) -> WireResult<[u8; 16]> {
        self.array(what)
    }

    /// A count read as `[int]`, rejected when negative or above `max`, and
    /// when `count * min_item_bytes` exceeds what is left (a forged count).
    pub fn int_count(
        &mut self,
        what: &'static str,
        max: u32,
        min_item_bytes: usize,
    ) -> WireResult<usize> {
        let raw = self.int(what)?;
        let count = u32::try_from(raw).map_err(|_| WireError::InvalidValue {
            what,
            value: i64::from(raw),
        })?;
        self.check_count(what, count, max, min_item_bytes)
    }

    /// A count read as `[short]`, checked like `int_count`.
    pub fn short_count(&mut self, what: &'static str, min_item_bytes: usize) -> WireResult<usize> {
        let count = u32::from(self.short(what)?);
        self.check_count(what, count, u32::from(u16::MAX), min_item_bytes)
    }

    fn check_count(
        &self,
        what: &'static str,
        count: u32,
        max: u32,
        min_item_bytes: usize,
    ) -> WireResult<usize> {
        if count > max {
            return Err(WireError::LimitExceeded {
                what,
                count: u64::from(count),
                max: u64::from(max),
            });
        }
        let count = count as usize;
        self.need(what, count.saturating_mul(min_item_bytes))?;
        Ok(count)
    }

    fn utf8(what: &'static str, raw: Bytes) -> WireResult<String> {
        String::from_utf8(raw.to_vec()).map_err(|_| WireError::InvalidUtf8(what))
    }

    /// `[string]`.
    pub fn string(&mut self, what: &'static str) -> WireResult<String> {
        let len = usize::from(self.short(what)?);
        let raw = self.take(what, len)?;
        Self::utf8(what, raw)
    }

    /// `[long string]`.
    pub fn long_string(&mut self, what: &'static str) -> WireResult<String> {
        let len = self.int(what)?;
        let len = usize::try_from(len).map_err(|_| WireError::InvalidValue {
            what,
            value: i64::from(len),
        })?;
        let raw = self.take(what, len)?;
        Self::utf8(what, raw)
    }

    /// `[string list]`.
    pub fn string_list(&mut self, what: &'static str) -> WireResult<Vec<String>> {
        let count = self.short_count(what, 2)?;
        (0..count).map(|_| self.string(what)).collect()
    }

    /// `[bytes]`: `None` for a negative length.
    pub fn bytes(&mut self, what: &'static str) -> WireResult<Option<Bytes>> {
        let len = self.int(what)?;
        match usize::try_from(len) {
            Ok(len) => Ok(Some(self.take(what, len)?)),
            Err(_) => Ok(None),
        }
    }

    /// `[short bytes]`.
    pub fn short_bytes(&mut self, what: &'static str) -> WireResult<Bytes> {
        let len = usize::from(self.short(what)?);
        self.take(what, len)
    }

    /// `[value]`: -1 is null, -2 is unset, below that is an error.
    pub fn value(&mut self, what: &'static str) -> WireResult<Value> {
        let len = self.int(what)?;
        match len {
            -1 => Ok(Value::Null),
            -2 => Ok(Value::Unset),
            n if n < 0 => Err(WireError::InvalidValue {
                what,
                value: i64::from(n),
            }),
            n => Ok(Value::Bytes(self.take(what, n as usize)?)),
        }
    }

    /// A bound `[value]` of a request: as `value`, except that before v4
    /// (which brought unset values) every negative length is null, as
    /// Cassandra reads them.
    pub fn bound_value(
        &mut self,
        what: &'static str,
        version: ProtocolVersion,
    ) -> WireResult<Value> {
        if version >= ProtocolVersion::V4 {
            return self.value(what);
        }
        let len = self.int(what)?;
        match usize::try_from(len) {
            Ok(n) => Ok(Value::Bytes(self.take(what, n)?)),
            Err(_) => Ok(Value::Null),
        }
    }

    /// `[inetaddr]`: a size byte (4 or 16) and the address.
    pub fn inet_addr(&mut self, what: &'static str) -> WireResult<IpAddr> {
        match self.byte(what)? {
            4 => Ok(IpAddr::V4(Ipv4Addr::from(self.array::<4>(what)?))),
            16 => Ok(IpAddr::V6(Ipv6Addr::from(self.array::<16>(what)?))),
            n => Err(WireError::InvalidValue {
                what,
                value: i64::from(n),
            }),
        }
    }

    /// `[inet]`: an `[inetaddr]` and an `[int]` port.
    pub fn inet(&mut self, what: &'static str) -> WireResult<SocketAddr> {
        let ip = self.inet_addr(what)?;
        let port = self.int(what)?;
        let port = u16::try_from(port).map_err(|_| WireError::InvalidValue {
            what,
            value: i64::from(port),
        })?;
        Ok(SocketAddr::new(ip, port))
    }

    /// `[string map]`.
    pub fn string_map(&mut self, what: &'static str) -> WireResult<StringMap> {
        let count = self.short_count(what, 4)?;
        let mut map = StringMap::new();
        for _ in 0..count {
            let key = self.string(what)?;
            map.insert(key, self.string(what)?);
        }
        Ok(map)
    }

    /// `[string multimap]`.
    pub fn string_multimap(&mut self, what: &'static str) -> WireResult<StringMultimap> {
        let count = self.short_count(what, 4)?;
        let mut map = StringMultimap::new();
        for _ in 0..count {
            let key = self.string(what)?;
            map.insert(key, self.string_list(what)?);
        }
        Ok(map)
    }

    /// `[bytes map]`.
    pub fn bytes_map(&mut self, what: &'static str) -> WireResult<BytesMap> {
        let count = self.short_count(what, 6)?;
        let mut map = BytesMap::new();
        for _ in 0..count {
            let key = self.string(what)?;
            map.insert(key, self.bytes(what)?);
        }
        Ok(map)
    }
}

fn too_long(what: &'static str, len_bytes: usize, max_bytes: usize) -> WireError {
    WireError::TooLongToEncode {
        what,
        len_bytes,
        max_bytes,
    }
}

/// A length or count as `[short]`.
pub fn put_short_len(out: &mut BytesMut, what: &'static str, len: usize) -> WireResult<()> {
    let len = u16::try_from(len).map_err(|_| too_long(what, len, usize::from(u16::MAX)))?;
    out.put_u16(len);
    Ok(())
}

/// A length or count as a non-negative `[int]`.
pub fn put_int_len(out: &mut BytesMut, what: &'static str, len: usize) -> WireResult<()> {
    let len = i32::try_from(len).map_err(|_| too_long(what, len, i32::MAX as usize))?;
    out.put_i32(len);
    Ok(())
}

pub fn put_string(out: &mut BytesMut, what: &'static str, s: &str) -> WireResult<()> {
    put_short_len(out, what, s.len())?;
    out.put_slice(s.as_bytes());
    Ok(())
}

pub fn put_long_string(out: &mut BytesMut, what: &'static str, s: &str) -> WireResult<()> {
    put_int_len(out, what, s.len())?;
    out.put_slice(s.as_bytes());
    Ok(())
}

pub fn put_string_list(out: &mut BytesMut, what: &'static str, list: &[String]) -> WireResult<()> {
    put_short_len(out, what, list.len())?;
    list.iter().try_for_each(|s| put_string(out, what, s))
}

/// `[bytes]`, with `None` as length -1.
pub fn put_bytes(out: &mut BytesMut, what: &'static str, b: Option<&[u8]>) -> WireResult<()> {
    match b {
        None => out.put_i32(-1),
        Some(b) => {
            put_int_len(out, what, b.len())?;
            out.put_slice(b);
        }
    }
    Ok(())
}

pub fn put_short_bytes(out: &mut BytesMut, what: &'static str, b: &[u8]) -> WireResult<()> {
    put_short_len(out, what, b.len())?;
    out.put_slice(b);
    Ok(())
}

pub fn put_value(out: &mut BytesMut, what: &'static str, v: &Value) -> WireResult<()> {
    match v {
        Value::Null => out.put_i32(-1),
        Value::Unset => out.put_i32(-2),
        Value::Bytes(b) => put_bytes(out, what, Some(b))?,
    }
    Ok(())
}

pub fn put_inet_addr(out: &mut BytesMut, ip: &IpAddr) {
    match ip {
        IpAddr::V4(v4) => {
            out.put_u8(4);
            out.put_slice(&v4.octets());
        }
        IpAddr::V6(v6) => {
            out.put_u8(16);
            out.put_slice(&v6.octets());
        }
    }
}

pub fn put_inet(out: &mut BytesMut, addr: &SocketAddr) {
    put_inet_addr(out, &addr.ip());
    out.put_i32(i32::from(addr.port()));
}

pub fn put_string_map(out: &mut BytesMut, what: &'static str, map: &StringMap) -> WireResult<()> {
    put_short_len(out, what, map.len())?;
    for (k, v) in map {
        put_string(out, what, k)?;
        put_string(out, what, v)?;
    }
    Ok(())
}

pub fn put_string_multimap(
    out: &mut BytesMut,
    what: &'static str,
    map: &StringMultimap,
) -> WireResult<()> {
    put_short_len(out, what, map.len())?;
    for (k, v) in map {
        put_string(out, what, k)?;
        put_string_list(out, what, v)?;
    }
    Ok(())
}

pub fn put_bytes_map(out: &mut BytesMut, what: &'static str, map: &BytesMap) -> WireResult<()> {
    put_short_len(out, what, map.len())?;
    for (k, v) in map {
        put_string(out, what, k)?;
        put_bytes(out, what, v.as_deref())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(bytes: &[u8]) -> Reader {
        Reader::new(Bytes::copy_from_slice(bytes))
    }

    #[test]
    fn value_lengths_have_their_special_meanings() {
        assert_eq!(
            reader(&[0xff, 0xff, 0xff, 0xff]).value("v"),
            Ok(Value::Null)
        );
        assert_eq!(
            reader(&[0xff, 0xff, 0xff, 0xfe]).value("v"),
            Ok(Value::Unset)
        );
        assert!(reader(&[0xff, 0xff, 0xff, 0xfd]).value("v").is_err());
        assert_eq!(
            reader(&[0, 0, 0, 1, 7]).value("v"),
            Ok(Value::Bytes(Bytes::from_static(&[7])))
        );
    }

    #[test]
    fn forged_lengths_fail_before_allocating() {
        assert!(matches!(
            reader(&[0x7f, 0xff, 0xff, 0xff]).bytes("b"),
            Err(WireError::Truncated { .. })
        ));
        assert!(matches!(
            reader(&[0x7f, 0xff, 0xff, 0xff]).int_count("rows", u32::MAX, 4),
            Err(WireError::Truncated { .. })
        ));
        assert!(matches!(
            reader(&[0xff, 0xff]).string_list("l"),
            Err(WireError::Truncated { .. })
        ));
    }

    #[test]
    fn inet_round_trips() {
        let addr: SocketAddr = "[::1]:9042".parse().expect("addr");
        let mut out = BytesMut::new();
        put_inet(&mut out, &addr);
        assert_eq!(reader(&out).inet("i"), Ok(addr));
    }
}
