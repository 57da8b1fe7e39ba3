//! UUIDs, in one place: their text form (the `uuid` crate) and the two
//! versions the server makes, random (4) and time-based (1), the latter
//! with Cassandra's layout and its `minTimeuuid`/`maxTimeuuid` halves.
//! Randomness comes in as an argument, so generation is deterministic in
//! tests.

use uuid::Uuid;

/// 100-ns ticks from the Gregorian reform (1582-10-15) to the Unix epoch.
pub const GREGORIAN_EPOCH_OFFSET_TICKS: i64 = 0x01B2_1DD2_1381_4000;

/// The canonical lowercase 8-4-4-4-12 form.
pub fn to_text(id: &[u8; 16]) -> String {
    Uuid::from_bytes(*id).hyphenated().to_string()
}

/// A UUID in the canonical 8-4-4-4-12 form only (either case), as CQL's
/// UUID literal; the `uuid` crate's other forms (braced, URN, without
/// hyphens) are not UUIDs in CQL.
pub fn parse_text(text: &str) -> Option<[u8; 16]> {
    let hyphens = [8, 13, 18, 23];
    let canonical = text.len() == 36
        && text
            .bytes()
            .enumerate()
            .all(|(i, b)| (b == b'-') == hyphens.contains(&i));
    canonical
        .then(|| Uuid::try_parse(text).ok())
        .flatten()
        .map(Uuid::into_bytes)
}

/// A random (version 4) UUID from two draws of `random`.
pub fn random_v4(random: &dyn Fn() -> u64) -> [u8; 16] {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&random().to_be_bytes());
    bytes[8..].copy_from_slice(&random().to_be_bytes());
    uuid::Builder::from_random_bytes(bytes)
        .into_uuid()
        .into_bytes()
}

/// The most significant half of a version-1 UUID at `ticks` (100 ns)
/// since 1582-10-15.
pub fn v1_msb(ticks: u64) -> u64 {
    ((ticks & 0xffff_ffff) << 32)
        | (((ticks >> 32) & 0xffff) << 16)
        | 0x1000
        | ((ticks >> 48) & 0x0fff)
}

/// The ticks since 1582-10-15 of a version-1 UUID's most significant half.
pub fn v1_ticks(id: &[u8; 16]) -> u64 {
    let msb = (u128::from_be_bytes(*id) >> 64) as u64;
    ((msb & 0x0fff) << 48) | (((msb >> 16) & 0xffff) << 32) | (msb >> 32)
}

/// The UUID of two halves, most significant first.
pub fn from_halves(msb: u64, lsb: u64) -> [u8; 16] {
    ((u128::from(msb) << 64) | u128::from(lsb)).to_be_bytes()
}

/// A version-1 UUID at `ticks` since 1582-10-15, its clock sequence and
/// node from `random` (with the IETF variant).
pub fn time_v1(ticks: u64, random: u64) -> [u8; 16] {
    let lsb = (random & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
    from_halves(v1_msb(ticks), lsb)
}

/// The ticks since 1582-10-15 of `micros` since the Unix epoch.
pub fn ticks_of_unix_micros(micros: i64) -> u64 {
    micros
        .saturating_mul(10)
        .saturating_add(GREGORIAN_EPOCH_OFFSET_TICKS) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn text_round_trips_and_only_the_canonical_form_parses() {
        let id = *b"\x12\x34\x56\x78\x9a\xbc\xde\xf0\x01\x23\x45\x67\x89\xab\xcd\xef";
        let text = to_text(&id);
        assert_eq!(text, "12345678-9abc-def0-0123-456789abcdef");
        assert_eq!(parse_text(&text), Some(id));
        assert_eq!(parse_text(&text.to_uppercase()), Some(id));
        assert_eq!(parse_text("123456789abcdef00123456789abcdef"), None);
        assert_eq!(parse_text("{12345678-9abc-def0-0123-456789abcdef}"), None);
        assert_eq!(parse_text("12345678-9abc-def0-0123-456789abcdeg"), None);
        assert_eq!(parse_text("1234567-89abc-def0-0123-456789abcdef"), None);
    }

    #[test]
    fn random_v4_has_version_and_variant_and_uses_its_draws() {
        let draws = Cell::new(0u64);
        let random = || {
            draws.set(draws.get() + 1);
            u64::MAX
        };
        let id = Uuid::from_bytes(random_v4(&random));
        assert_eq!(draws.get(), 2);
        assert_eq!(id.get_version_num(), 4);
        assert_eq!(id.get_variant(), uuid::Variant::RFC4122);
        assert_eq!(id.as_bytes()[0], 0xff);
    }

    #[test]
    fn time_v1_encodes_ticks_the_uuid_crate_reads_back() {
        let ticks = ticks_of_unix_micros(1_413_581_259_541_000);
        let id = time_v1(ticks, 42);
        let parsed = Uuid::from_bytes(id);
        assert_eq!(parsed.get_version_num(), 1);
        assert_eq!(parsed.get_variant(), uuid::Variant::RFC4122);
        let (crate_ticks, _) = parsed
            .get_timestamp()
            .map(|t| t.to_gregorian())
            .unwrap_or_default();
        assert_eq!(crate_ticks, ticks);
        assert_eq!(v1_ticks(&id), ticks);
    }
}
