//! Anti-entropy repair: Merkle trees over token ranges. Each replica hashes
//! the stored state (tombstones and timestamps included) of the partitions
//! in equal token slices of a range (the leaves); the trees are compared
//! top-down, and only the slices whose hashes differ are streamed.
//!
//! Everything here but `leaf_hashes` (which reads the engine) is pure.

use md5::{Digest, Md5};
use rocksandra_data::{LocalTime, Token};
use rocksandra_storage::{Engine, PartitionRead, Slice, TableId, TokenRange};

/// Leaves of a tree are 2^depth slices of its range.
pub const DEFAULT_DEPTH: u8 = 6;
/// The deepest tree a replica builds (2^12 leaves, 64 KiB of hashes).
pub const MAX_DEPTH: u8 = 12;
/// Partitions listed per engine call while hashing.
const KEYS_PER_PAGE: usize = 512;

pub type Hash = [u8; 16];

/// Splits `range` into `2^depth` consecutive slices of (nearly) equal
/// token width, in ring order from the range's start. A range whose start
/// equals its end is the whole ring.
pub fn leaf_ranges(range: TokenRange, depth: u8) -> Vec<TokenRange> {
    let depth = depth.min(MAX_DEPTH);
    let count: u128 = 1 << depth;
    let start = range.start_exclusive.0 as i128;
    let end = range.end_inclusive.0 as i128;
    const RING: i128 = 1 << 64;
    let width: i128 = if end > start {
        end - start
    } else {
        end - start + RING
    };
    // Boundaries on the unwrapped line, mapped back onto the ring.
    let at = |i: u128| -> Token {
        let offset = (width as u128 * i / count) as i128;
        let mut t = start + offset;
        if t > i64::MAX as i128 {
            t -= RING;
        }
        Token(t as i64)
    };
    let mut leaves = Vec::with_capacity(count as usize);
    for i in 0..count {
        let (s, e) = (at(i), at(i + 1));
        leaves.push(TokenRange {
            start_exclusive: s,
            end_inclusive: if i + 1 == count {
                range.end_inclusive
            } else {
                e
            },
        });
    }
    leaves
}

/// A slice of a narrow range can be empty; as a `TokenRange` (start equal
/// to end) it would read as the whole ring.
pub fn is_empty_leaf(range: TokenRange, leaf: &TokenRange) -> bool {
    leaf.start_exclusive == leaf.end_inclusive && range.start_exclusive != range.end_inclusive
}

/// A Merkle tree stored as levels, leaves first, the root last.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MerkleTree {
    levels: Vec<Vec<Hash>>,
}

impl MerkleTree {
    /// Builds the tree over `leaves` (a power of two of them).
    pub fn new(leaves: Vec<Hash>) -> MerkleTree {
        let mut levels = vec![leaves];
        while levels.last().is_some_and(|l| l.len() > 1) {
            let below = levels.last().map(Vec::as_slice).unwrap_or_default();
            let above = below
                .chunks(2)
                .map(|pair| {
                    let mut context = Md5::new();
                    for h in pair {
                        context.update(h);
                    }
                    context.finalize().into()
                })
                .collect();
            levels.push(above);
        }
        MerkleTree { levels }
    }

    pub fn root(&self) -> Option<Hash> {
        self.levels.last().and_then(|l| l.first()).copied()
    }

    pub fn leaves(&self) -> &[Hash] {
        &self.levels[0]
    }

    /// The leaves where the two trees differ, found by descending only
    /// into differing subtrees. Trees of different shapes differ
    /// everywhere.
    pub fn differences(&self, other: &MerkleTree) -> Vec<usize> {
        if self.levels.len() != other.levels.len() || self.leaves().len() != other.leaves().len() {
            return (0..self.leaves().len().max(other.leaves().len())).collect();
        }
        let mut frontier = vec![0usize];
        for level in (0..self.levels.len()).rev() {
            let differing: Vec<usize> = frontier
                .into_iter()
                .filter(|&i| self.levels[level].get(i) != other.levels[level].get(i))
                .collect();
            if level == 0 {
                return differing;
            }
            frontier = differing
                .iter()
                .flat_map(|&i| [2 * i, 2 * i + 1])
                .filter(|&i| i < self.levels[level - 1].len())
                .collect();
        }
        Vec::new()
    }
}

/// Leaves where any of `trees` disagree with the first.
pub fn differing_leaves(trees: &[MerkleTree]) -> Vec<usize> {
    let mut out = std::collections::BTreeSet::new();
    if let Some((first, rest)) = trees.split_first() {
        for tree in rest {
            out.extend(first.differences(tree));
        }
    }
    out.into_iter().collect()
}

/// Joins adjacent leaves (by index) into as few ranges as possible.
pub fn coalesce(leaves: &[TokenRange], indexes: &[usize]) -> Vec<TokenRange> {
    let mut out: Vec<TokenRange> = Vec::new();
    let mut previous: Option<usize> = None;
    for &i in indexes {
        let Some(leaf) = leaves.get(i) else { continue };
        match (out.last_mut(), previous) {
            (Some(last), Some(p)) if p + 1 == i => last.end_inclusive = leaf.end_inclusive,
            _ => out.push(*leaf),
        }
        previous = Some(i);
    }
    out
}

/// Why a replica's Merkle tree leaves could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum HashError {
    #[error("{0}")]
    Storage(#[from] rocksandra_storage::StorageError),
    /// A partition read could not be encoded for hashing.
    #[error("{0}")]
    Encode(#[from] postcard::Error),
}

/// This replica's leaf hashes of `table` over `range`: for each slice, the
/// MD5 of every stored partition's key and stored state, in token order.
pub fn leaf_hashes(
    engine: &dyn Engine,
    table: TableId,
    range: TokenRange,
    depth: u8,
    now: LocalTime,
) -> Result<Vec<Hash>, HashError> {
    let mut hashes = Vec::new();
    for leaf in leaf_ranges(range, depth) {
        let mut context = Md5::new();
        let mut after = None;
        while !is_empty_leaf(range, &leaf) {
            let keys = engine.partition_keys(table, leaf, after.as_ref(), KEYS_PER_PAGE)?;
            for key in &keys {
                let read = PartitionRead {
                    table,
                    partition: key.clone(),
                    slices: vec![Slice::all()],
                    reversed: false,
                    include_static: true,
                    row_limit: 0,
                };
                let raw = engine.read_raw(&read, now)?;
                let bytes = postcard::to_stdvec(&raw.data)?;
                context.update((key.key.len() as u64).to_be_bytes());
                context.update(&key.key);
                context.update(Md5::digest(&bytes));
            }
            if keys.len() < KEYS_PER_PAGE {
                break;
            }
            after = keys.last().cloned();
        }
        hashes.push(context.finalize().into());
    }
    Ok(hashes)
}

/// `range` as ranges that do not wrap: itself, or its two sides of the
/// ring's end (the whole ring when start == end).
fn unwrapped(range: TokenRange) -> Vec<(i64, i64)> {
    let (s, e) = (range.start_exclusive.0, range.end_inclusive.0);
    if s < e {
        vec![(s, e)]
    } else {
        // (s, MAX] and (MIN, e]: Murmur3 never yields i64::MIN itself.
        [(s, i64::MAX), (i64::MIN, e)]
            .into_iter()
            .filter(|(a, b)| a < b)
            .collect()
    }
}

/// The tokens in both `a` and `b`, as ranges that do not wrap (for
/// `nodetool repair -st -et`: the requested range within a replicated one).
pub fn intersect(a: TokenRange, b: TokenRange) -> Vec<TokenRange> {
    let mut out = Vec::new();
    for (a1, a2) in unwrapped(a) {
        for (b1, b2) in unwrapped(b) {
            let (s, e) = (a1.max(b1), a2.min(b2));
            if s < e {
                out.push(TokenRange {
                    start_exclusive: Token(s),
                    end_inclusive: Token(e),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn range(s: i64, e: i64) -> TokenRange {
        TokenRange {
            start_exclusive: Token(s),
            end_inclusive: Token(e),
        }
    }

    proptest! {
        /// Leaves tile their range: consecutive, the same tokens covered.
        #[test]
        fn leaves_tile_the_range(s in any::<i64>(), e in any::<i64>(), depth in 0u8..8, probes in proptest::collection::vec(any::<i64>(), 32)) {
            let r = range(s, e);
            let leaves = leaf_ranges(r, depth);
            prop_assert_eq!(leaves.len(), 1 << depth);
            prop_assert_eq!(leaves[0].start_exclusive, r.start_exclusive);
            prop_assert_eq!(leaves[leaves.len() - 1].end_inclusive, r.end_inclusive);
            for pair in leaves.windows(2) {
                prop_assert_eq!(pair[0].end_inclusive, pair[1].start_exclusive);
            }
            for t in probes.into_iter().chain([s, e, s.wrapping_add(1), i64::MIN, i64::MAX]) {
                let inside = leaves.iter().filter(|l| !is_empty_leaf(r, l) && l.contains(Token(t))).count();
                if s == e {
                    // Whole ring: every token in exactly one non-empty leaf.
                    prop_assert_eq!(inside, 1, "token {}", t);
                } else {
                    prop_assert_eq!(inside, usize::from(r.contains(Token(t))), "token {}", t);
                }
            }
        }

        /// The top-down walk finds exactly the leaves that differ.
        #[test]
        fn differences_are_the_differing_leaves(depth in 0u8..7, seed in any::<u64>(), flips in proptest::collection::vec(any::<usize>(), 0..6)) {
            let n = 1usize << depth;
            let leaves: Vec<Hash> = (0..n).map(|i| Md5::digest(seed.wrapping_add(i as u64).to_be_bytes()).into()).collect();
            let mut other = leaves.clone();
            let mut want: Vec<usize> = flips.iter().map(|f| f % n).collect();
            want.sort();
            want.dedup();
            for &i in &want {
                other[i][0] ^= 1;
            }
            let (a, b) = (MerkleTree::new(leaves), MerkleTree::new(other));
            prop_assert_eq!(a.differences(&b), want.clone());
            prop_assert_eq!(a.root() == b.root(), want.is_empty());
        }
    }

    #[test]
    fn narrow_ranges_have_empty_leaves_not_whole_rings() {
        let r = range(10, 12);
        let leaves = leaf_ranges(r, 3);
        let used: Vec<_> = leaves.iter().filter(|l| !is_empty_leaf(r, l)).collect();
        assert_eq!(used, vec![&range(10, 11), &range(11, 12)]);
    }

    #[test]
    fn adjacent_leaves_coalesce() {
        let leaves = leaf_ranges(range(0, 800), 3);
        let joined = coalesce(&leaves, &[1, 2, 3, 6]);
        assert_eq!(joined, vec![range(100, 400), range(600, 700)]);
    }

    #[test]
    fn whole_ring_splits_evenly() {
        let leaves = leaf_ranges(range(i64::MIN, i64::MIN), 1);
        assert_eq!(leaves, vec![range(i64::MIN, 0), range(0, i64::MIN)]);
    }

    fn any_range() -> impl proptest::strategy::Strategy<Value = TokenRange> {
        use proptest::prelude::*;
        let token = prop_oneof![
            Just(i64::MIN),
            Just(i64::MAX),
            -100i64..100,
            proptest::num::i64::ANY
        ];
        (token.clone(), token).prop_map(|(s, e)| TokenRange {
            start_exclusive: Token(s),
            end_inclusive: Token(e),
        })
    }

    proptest::proptest! {
        #[test]
        fn intersection_holds_exactly_the_common_tokens(
            a in any_range(),
            b in any_range(),
            probes in proptest::collection::vec(proptest::num::i64::ANY, 0..64),
        ) {
            let pieces = intersect(a, b);
            let ends = [a.start_exclusive.0, a.end_inclusive.0, b.start_exclusive.0, b.end_inclusive.0];
            let near = ends.iter().flat_map(|t| [t.saturating_sub(1), *t, t.saturating_add(1)]);
            for t in probes.into_iter().chain(near).filter(|t| *t != i64::MIN) {
                let t = Token(t);
                let inside = pieces.iter().filter(|p| p.contains(t)).count();
                let want = usize::from(a.contains(t) && b.contains(t));
                proptest::prop_assert_eq!(inside, want, "token {:?} in {:?} ∩ {:?} = {:?}", t, a, b, pieces);
            }
            for p in &pieces {
                proptest::prop_assert!(p.start_exclusive < p.end_inclusive, "{:?} wraps", p);
            }
        }
    }
}
