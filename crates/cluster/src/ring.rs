//! The token ring: members with their tokens, data centers and racks;
//! replica placement as Cassandra's SimpleStrategy and
//! NetworkTopologyStrategy compute it; pending replicas while nodes join and
//! leave; the ring's ranges and each node's ownership; and the tokens a
//! joining node takes. Pure: no IO, no clock, randomness comes in as an
//! argument.

use std::collections::{BTreeMap, BTreeSet};

use rocksandra_data::Token;
use rocksandra_storage::TokenRange;

/// A node's listen address.
pub type Endpoint = std::net::IpAddr;

/// Number of positions on the Murmur3 ring (every i64); distances between
/// tokens are computed in i128 so that they never overflow.
const RING_SIZE: i128 = 1 << 64;

const LOCATOR_PACKAGE: &str = "org.apache.cassandra.locator.";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemberStatus {
    /// Bootstrapping: receives writes for the ranges it will own (pending
    /// replica), owns nothing yet.
    Joining,
    Normal,
    /// Decommissioning: still owns its ranges; the nodes that take them over
    /// are pending replicas.
    Leaving,
}

impl MemberStatus {
    /// Whether the member's tokens count for placement now.
    fn owns_now(self) -> bool {
        matches!(self, MemberStatus::Normal | MemberStatus::Leaving)
    }

    /// Whether the member's tokens count once every join and leave is done.
    fn owns_after_moves(self) -> bool {
        matches!(self, MemberStatus::Normal | MemberStatus::Joining)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    pub address: Endpoint,
    pub host_id: [u8; 16],
    pub dc: String,
    pub rack: String,
    pub tokens: Vec<Token>,
    pub status: MemberStatus,
}

/// A keyspace's replication strategy.
#[derive(Clone, Debug, PartialEq)]
pub enum Strategy {
    /// Every node keeps its own data (system keyspaces).
    Local,
    Simple {
        rf: usize,
    },
    NetworkTopology {
        dcs: BTreeMap<String, usize>,
    },
}

impl Strategy {
    /// From a keyspace's replication map as stored in
    /// `system_schema.keyspaces`: "class" (`org.apache.cassandra.locator.X`
    /// or short X) plus options. LocalStrategy and EverywhereStrategy give
    /// `Local`; an unknown class gives `Simple { rf: 1 }`. Replication
    /// factors in Cassandra's transient form "3/1" count all 3 replicas.
    /// NetworkTopologyStrategy drops data centers with 0 replicas or an
    /// unreadable count, and ignores a "replication_factor" option
    /// (Cassandra expands it to per-dc entries before storing the map).
    pub fn from_replication(map: &BTreeMap<String, String>) -> Strategy {
        let class = map.get("class").map(String::as_str).unwrap_or_default();
        let short_class = class.strip_prefix(LOCATOR_PACKAGE).unwrap_or(class);
        match short_class {
            "LocalStrategy" | "EverywhereStrategy" => Strategy::Local,
            "SimpleStrategy" => Strategy::Simple {
                rf: map
                    .get("replication_factor")
                    .and_then(|text| parse_replication_factor(text))
                    .unwrap_or(1),
            },
            "NetworkTopologyStrategy" => Strategy::NetworkTopology {
                dcs: map
                    .iter()
                    .filter(|(key, _)| *key != "class" && *key != "replication_factor")
                    .filter_map(|(dc, text)| Some((dc.clone(), parse_replication_factor(text)?)))
                    .filter(|(_, rf)| *rf > 0)
                    .collect(),
            },
            _ => Strategy::Simple { rf: 1 },
        }
    }

    /// The Java class Cassandra names the strategy by.
    pub fn class_name(&self) -> &'static str {
        match self {
            Strategy::Local => "org.apache.cassandra.locator.LocalStrategy",
            Strategy::Simple { .. } => "org.apache.cassandra.locator.SimpleStrategy",
            Strategy::NetworkTopology { .. } => {
                "org.apache.cassandra.locator.NetworkTopologyStrategy"
            }
        }
    }

    /// Replicas in `dc` (Simple: rf whatever the dc; Local: 1).
    pub fn rf_in(&self, dc: &str) -> usize {
        match self {
            Strategy::Local => 1,
            Strategy::Simple { rf } => *rf,
            Strategy::NetworkTopology { dcs } => dcs.get(dc).copied().unwrap_or(0),
        }
    }

    pub fn total_rf(&self) -> usize {
        match self {
            Strategy::Local => 1,
            Strategy::Simple { rf } => *rf,
            Strategy::NetworkTopology { dcs } => dcs.values().sum(),
        }
    }
}

/// "3" -> 3; "3/1" (3 replicas of which 1 transient) -> 3.
fn parse_replication_factor(text: &str) -> Option<usize> {
    let all_replicas = text.split('/').next()?;
    all_replicas.trim().parse().ok()
}

/// The cluster's members and, precomputed from them, the placement now and
/// the placement once every join and leave has completed.
#[derive(Clone, Debug, Default)]
pub struct Ring {
    members: BTreeMap<Endpoint, Member>,
    /// Normal and Leaving members.
    current: Placement,
    /// Normal and Joining members; None when no member is joining or
    /// leaving (the future placement is then the current one).
    after_moves: Option<Placement>,
}

impl Ring {
    /// A member listed twice under one address keeps its last entry.
    pub fn new(members: impl IntoIterator<Item = Member>) -> Ring {
        let members: BTreeMap<Endpoint, Member> = members
            .into_iter()
            .map(|member| (member.address, member))
            .collect();
        let current = Placement::new(members.values().filter(|m| m.status.owns_now()));
        let moving = members
            .values()
            .any(|m| m.status != MemberStatus::Normal && !m.tokens.is_empty());
        let after_moves = moving
            .then(|| Placement::new(members.values().filter(|m| m.status.owns_after_moves())));
        Ring {
            members,
            current,
            after_moves,
        }
    }

    /// Every member, in address order.
    pub fn members(&self) -> impl Iterator<Item = &Member> + '_ {
        self.members.values()
    }

    pub fn member(&self, address: Endpoint) -> Option<&Member> {
        self.members.get(&address)
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Natural replicas of `token`, in ring order starting at the first
    /// token at or after `token` (wrapping), placed over Normal and Leaving
    /// members (Joining ones own nothing yet). `Local` gives an empty vec:
    /// the caller uses itself.
    pub fn replicas(&self, strategy: &Strategy, token: Token) -> Vec<Endpoint> {
        self.current.replicas(strategy, token)
    }

    /// Endpoints that will be replicas of `token` once every Joining member
    /// is Normal and every Leaving one is gone, and are not natural replicas
    /// now: writes go to them too (Cassandra's pending endpoints).
    pub fn pending_replicas(&self, strategy: &Strategy, token: Token) -> Vec<Endpoint> {
        let Some(after_moves) = &self.after_moves else {
            return Vec::new();
        };
        let natural = self.current.replicas(strategy, token);
        let mut future = after_moves.replicas(strategy, token);
        future.retain(|endpoint| !natural.contains(endpoint));
        future
    }

    /// The ring cut at every token of the owning (Normal/Leaving) members:
    /// ranges (t_prev, t] in token order, the first one wrapping
    /// ((t_last, t_first]), each with `replicas(strategy, t)`. A single
    /// token gives one range with start == end (the whole ring).
    pub fn ranges(&self, strategy: &Strategy) -> Vec<(TokenRange, Vec<Endpoint>)> {
        let tokens = self.current.distinct_tokens();
        let Some(&last) = tokens.last() else {
            return Vec::new();
        };
        let mut start = last;
        tokens
            .iter()
            .map(|&end| {
                let range = TokenRange {
                    start_exclusive: start,
                    end_inclusive: end,
                };
                start = end;
                (range, self.replicas(strategy, end))
            })
            .collect()
    }

    /// The ranges `endpoint` replicates. With `Local` every node keeps its
    /// own data for the whole ring.
    pub fn ranges_of(&self, strategy: &Strategy, endpoint: Endpoint) -> Vec<TokenRange> {
        if *strategy == Strategy::Local {
            return vec![TokenRange::full()];
        }
        self.ranges(strategy)
            .into_iter()
            .filter(|(_, replicas)| replicas.contains(&endpoint))
            .map(|(range, _)| range)
            .collect()
    }

    /// Each owning endpoint's share of the ring among the data it holds as a
    /// replica (nodetool's "Owns (effective)"): 0..=1 each, summing to the
    /// replicas placed per token. With `Local` every node holds all of its
    /// own data: 1 each.
    pub fn effective_ownership(&self, strategy: &Strategy) -> BTreeMap<Endpoint, f64> {
        let local = *strategy == Strategy::Local;
        let mut ownership: BTreeMap<Endpoint, f64> = self
            .current
            .nodes
            .iter()
            .map(|node| (node.address, if local { 1.0 } else { 0.0 }))
            .collect();
        if local {
            return ownership;
        }
        for (range, replicas) in self.ranges(strategy) {
            let share =
                range_width(range.start_exclusive, range.end_inclusive) as f64 / RING_SIZE as f64;
            for replica in replicas {
                *ownership.entry(replica).or_default() += share;
            }
        }
        ownership
    }

    /// The range (t_prev, t] of the owning members' tokens that contains
    /// `token` (start == end when the ring has a single token).
    pub fn range_containing(&self, token: Token) -> Option<TokenRange> {
        self.current.range_containing(token)
    }
}

/// Replica placement over one set of members.
#[derive(Clone, Debug, Default)]
struct Placement {
    /// Every (token, node) sorted by token then address (node indexes are in
    /// address order), so that equal tokens walk in a fixed order.
    ring: Vec<(Token, usize)>,
    /// Members with at least one token, in address order.
    nodes: Vec<PlacedNode>,
    /// Data centers with at least one node, by name.
    dcs: Vec<PlacedDc>,
    /// Distinct (dc, rack) pairs over every dc.
    rack_count: usize,
}

#[derive(Clone, Debug)]
struct PlacedNode {
    address: Endpoint,
    /// Index into `Placement::dcs`.
    dc: usize,
    /// Index of the node's (dc, rack) pair, below `Placement::rack_count`.
    rack: usize,
}

#[derive(Clone, Debug)]
struct PlacedDc {
    name: String,
    node_count: usize,
    rack_count: usize,
}

/// One data center's progress through a NetworkTopologyStrategy walk.
#[derive(Clone, Copy, Debug)]
struct DcFill {
    replicas_left: usize,
    /// Replicas that may still share a rack already used in this dc: rf
    /// minus the dc's racks (negative when there are more racks than rf).
    rack_repeats_left: isize,
}

impl Placement {
    fn new<'a>(members: impl Iterator<Item = &'a Member>) -> Placement {
        let members: Vec<&Member> = members.filter(|m| !m.tokens.is_empty()).collect();
        let dc_names: BTreeSet<&str> = members.iter().map(|m| m.dc.as_str()).collect();
        let mut dcs: Vec<PlacedDc> = dc_names
            .iter()
            .map(|name| PlacedDc {
                name: (*name).to_owned(),
                node_count: 0,
                rack_count: 0,
            })
            .collect();
        let mut racks: BTreeMap<(&str, &str), usize> = BTreeMap::new();
        let mut nodes = Vec::with_capacity(members.len());
        let mut ring = Vec::new();
        for (index, member) in members.iter().enumerate() {
            // `dc_names` holds every member's dc, so the search finds it.
            let dc = dc_names
                .iter()
                .position(|name| *name == member.dc)
                .unwrap_or_default();
            dcs[dc].node_count += 1;
            let rack_key = (member.dc.as_str(), member.rack.as_str());
            let next_rack = racks.len();
            let rack = *racks.entry(rack_key).or_insert_with(|| {
                dcs[dc].rack_count += 1;
                next_rack
            });
            nodes.push(PlacedNode {
                address: member.address,
                dc,
                rack,
            });
            ring.extend(member.tokens.iter().map(|&token| (token, index)));
        }
        ring.sort_unstable();
        ring.dedup();
        Placement {
            ring,
            nodes,
            dcs,
            rack_count: racks.len(),
        }
    }

    /// Index in `ring` of the first token >= `token`, wrapping to 0.
    fn walk_start(&self, token: Token) -> usize {
        let index = self.ring.partition_point(|(t, _)| *t < token);
        if index == self.ring.len() {
            0
        } else {
            index
        }
    }

    /// Every node of the ring (with repeats, one per token) in ring order
    /// from the first token >= `token`.
    fn walk(&self, token: Token) -> impl Iterator<Item = &PlacedNode> + '_ {
        let start = self.walk_start(token);
        let (before, after) = self.ring.split_at(start);
        after
            .iter()
            .chain(before)
            .map(|&(_, node)| &self.nodes[node])
    }

    fn replicas(&self, strategy: &Strategy, token: Token) -> Vec<Endpoint> {
        match strategy {
            Strategy::Local => Vec::new(),
            Strategy::Simple { rf } => self.simple_replicas(*rf, token),
            Strategy::NetworkTopology { dcs } => self.network_topology_replicas(dcs, token),
        }
    }

    /// SimpleStrategy: the next `rf` distinct endpoints walking the ring.
    fn simple_replicas(&self, rf: usize, token: Token) -> Vec<Endpoint> {
        let wanted = rf.min(self.nodes.len());
        let mut replicas = Vec::with_capacity(wanted);
        if wanted == 0 {
            return replicas;
        }
        for node in self.walk(token) {
            if !replicas.contains(&node.address) {
                replicas.push(node.address);
                if replicas.len() == wanted {
                    break;
                }
            }
        }
        replicas
    }

    /// NetworkTopologyStrategy as Cassandra computes it, in one walk over
    /// the ring: in each dc, an endpoint on a rack not used yet in that dc is
    /// always taken; one on a used rack only while the dc has fewer racks
    /// than its rf left to cover (rf - racks repeats in all), so that every
    /// rack gets a replica before a rack gets a second one.
    fn network_topology_replicas(
        &self,
        rf_by_dc: &BTreeMap<String, usize>,
        token: Token,
    ) -> Vec<Endpoint> {
        let mut fills: Vec<DcFill> = self
            .dcs
            .iter()
            .map(|dc| {
                let rf = rf_by_dc.get(&dc.name).copied().unwrap_or(0);
                DcFill {
                    replicas_left: rf.min(dc.node_count),
                    rack_repeats_left: to_isize(rf) - to_isize(dc.rack_count),
                }
            })
            .collect();
        let mut dcs_to_fill = fills.iter().filter(|f| f.replicas_left > 0).count();
        let mut replicas = Vec::new();
        if dcs_to_fill == 0 {
            return replicas;
        }
        let mut rack_used = vec![false; self.rack_count];
        for node in self.walk(token) {
            let fill = &mut fills[node.dc];
            if fill.replicas_left == 0 {
                continue;
            }
            if !rack_used[node.rack] {
                // A node's rack is marked used when it is taken, so a node
                // on an unused rack is never a replica yet.
                rack_used[node.rack] = true;
            } else if fill.rack_repeats_left <= 0 || replicas.contains(&node.address) {
                continue;
            } else {
                fill.rack_repeats_left -= 1;
            }
            replicas.push(node.address);
            fill.replicas_left -= 1;
            if fill.replicas_left == 0 {
                dcs_to_fill -= 1;
                if dcs_to_fill == 0 {
                    break;
                }
            }
        }
        replicas
    }

    fn distinct_tokens(&self) -> Vec<Token> {
        let mut tokens: Vec<Token> = self.ring.iter().map(|&(token, _)| token).collect();
        tokens.dedup();
        tokens
    }

    fn range_containing(&self, token: Token) -> Option<TokenRange> {
        let &(end, _) = self.ring.get(self.walk_start(token))?;
        let tokens_before_end = self.ring.partition_point(|(t, _)| *t < end);
        let start = match tokens_before_end.checked_sub(1) {
            Some(previous) => self.ring[previous].0,
            // `end` is the smallest token: the range wraps from the largest
            // (which is `end` itself when the ring has a single token).
            None => self.ring.last()?.0,
        };
        Some(TokenRange {
            start_exclusive: start,
            end_inclusive: end,
        })
    }
}

fn to_isize(count: usize) -> isize {
    isize::try_from(count).unwrap_or(isize::MAX)
}

/// Positions in (start, end]: the distance walking up from `start`, wrapping
/// past i64::MAX; the whole ring when start == end.
fn range_width(start: Token, end: Token) -> i128 {
    match (i128::from(end.0) - i128::from(start.0)).rem_euclid(RING_SIZE) {
        0 => RING_SIZE,
        width => width,
    }
}

/// The token `distance` positions after `start`, wrapping around the ring.
fn token_after(start: Token, distance: i128) -> Token {
    let from_min = (i128::from(start.0) - i128::from(i64::MIN) + distance).rem_euclid(RING_SIZE);
    // In 0..2^64, so the sum is within i64.
    Token(i64::try_from(from_min + i128::from(i64::MIN)).unwrap_or(i64::MAX))
}

/// `num_tokens` new tokens for a node joining `dc` of `ring`, balanced. On a
/// ring without tokens in `dc`: evenly spaced over the whole ring from a
/// random offset. Otherwise each new token splits at its midpoint the largest
/// range among the ranges of `dc`'s members (Normal and Joining; Leaving ones
/// are on their way out), counting the tokens already picked; among ranges of
/// equal size it splits one of the member that owns the most, so that the
/// newcomer takes from every member alike. Never returns Token(i64::MIN) nor
/// a token of any member of the ring; sorted ascending, no duplicates.
/// Returns fewer tokens only when the dc's ranges are too small to split.
pub fn allocate_tokens(
    ring: &Ring,
    dc: &str,
    num_tokens: usize,
    random: &mut dyn FnMut() -> u64,
) -> Vec<Token> {
    let mut taken: BTreeSet<Token> = ring
        .members()
        .flat_map(|member| member.tokens.iter().copied())
        .collect();
    taken.insert(Token(i64::MIN));
    let mut dc_tokens: Vec<(Token, Endpoint)> = ring
        .members()
        .filter(|member| member.dc == dc && member.status.owns_after_moves())
        .flat_map(|member| member.tokens.iter().map(|&token| (token, member.address)))
        .collect();
    dc_tokens.sort_unstable();
    dc_tokens.dedup_by_key(|(token, _)| *token);
    let mut picked = if dc_tokens.is_empty() {
        evenly_spaced_tokens(num_tokens, random(), &mut taken)
    } else {
        split_largest_ranges(&dc_tokens, num_tokens, &mut taken)
    };
    picked.sort_unstable();
    picked
}

/// `count` tokens 2^64/count apart from `offset`, each moved up to the next
/// position not in `taken` (which gains them).
fn evenly_spaced_tokens(count: usize, offset: u64, taken: &mut BTreeSet<Token>) -> Vec<Token> {
    if count == 0 {
        return Vec::new();
    }
    let step = RING_SIZE / i128::try_from(count).unwrap_or(i128::MAX);
    let first = token_after(Token(i64::MIN), i128::from(offset));
    let mut picked = Vec::with_capacity(count);
    let mut distance = 0;
    for _ in 0..count {
        let mut token = token_after(first, distance);
        while taken.contains(&token) {
            token = token_after(token, 1);
        }
        taken.insert(token);
        picked.push(token);
        distance += step;
    }
    picked
}

/// A range of the joining node's dc while tokens are being picked.
struct Split {
    start: Token,
    width: i128,
    /// The member whose token ends the range; None for the joining node.
    owner: Option<Endpoint>,
}

/// Up to `count` tokens, each at the midpoint of the largest range of the
/// dc's members (`dc_tokens`: sorted, distinct, not empty) and the tokens
/// picked so far. At equal sizes a range of an existing member goes first
/// (splitting one of the joining node's own gives it nothing), then one of
/// the member owning the most.
fn split_largest_ranges(
    dc_tokens: &[(Token, Endpoint)],
    count: usize,
    taken: &mut BTreeSet<Token>,
) -> Vec<Token> {
    let mut previous = dc_tokens[dc_tokens.len() - 1].0;
    let mut splits: Vec<Split> = Vec::with_capacity(dc_tokens.len() + count);
    let mut owned: BTreeMap<Endpoint, i128> = BTreeMap::new();
    for &(token, owner) in dc_tokens {
        let width = range_width(previous, token);
        *owned.entry(owner).or_default() += width;
        splits.push(Split {
            start: previous,
            width,
            owner: Some(owner),
        });
        previous = token;
    }
    let mut picked = Vec::with_capacity(count);
    while picked.len() < count {
        let best = splits
            .iter()
            .enumerate()
            .map(|(index, split)| {
                let owned_by_owner = split
                    .owner
                    .and_then(|owner| owned.get(&owner).copied())
                    .unwrap_or_default();
                let priority = (split.width, split.owner.is_some(), owned_by_owner);
                (priority, index)
            })
            .max_by(|(a, a_index), (b, b_index)| a.cmp(b).then(b_index.cmp(a_index)));
        let Some((_, index)) = best else {
            break;
        };
        let split = &mut splits[index];
        let Some(mid_distance) = free_position(split.start, split.width, taken) else {
            // Every position inside is taken: this range cannot be split.
            splits.swap_remove(index);
            continue;
        };
        let token = token_after(split.start, mid_distance);
        taken.insert(token);
        picked.push(token);
        if let Some(owner) = split.owner {
            *owned.entry(owner).or_default() -= mid_distance;
        }
        let joining_part = Split {
            start: split.start,
            width: mid_distance,
            owner: None,
        };
        split.start = token;
        split.width -= mid_distance;
        splits.push(joining_part);
    }
    picked
}

/// Distance from `start` of a free position strictly inside (start, start +
/// width) (the range's end is a token already): the midpoint, else the
/// nearest free one after it, else before it. At most `taken.len()`
/// positions in a row are taken, which bounds the search.
fn free_position(start: Token, width: i128, taken: &BTreeSet<Token>) -> Option<i128> {
    let attempts = taken.len() + 1;
    let mid = width / 2;
    (mid..width)
        .take(attempts)
        .chain((1..mid).rev().take(attempts))
        .find(|&distance| distance > 0 && !taken.contains(&token_after(start, distance)))
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use proptest::prelude::{any, prop_assert, prop_assert_eq, prop_oneof, proptest, Just};
    use proptest::strategy::Strategy as _;

    use super::*;

    fn ip(last: u8) -> Endpoint {
        IpAddr::V4(Ipv4Addr::new(10, 0, 0, last))
    }

    fn member(last: u8, dc: &str, rack: &str, tokens: &[i64], status: MemberStatus) -> Member {
        Member {
            address: ip(last),
            host_id: [last; 16],
            dc: dc.to_owned(),
            rack: rack.to_owned(),
            tokens: tokens.iter().map(|&t| Token(t)).collect(),
            status,
        }
    }

    fn normal(last: u8, dc: &str, rack: &str, tokens: &[i64]) -> Member {
        member(last, dc, rack, tokens, MemberStatus::Normal)
    }

    fn simple(rf: usize) -> Strategy {
        Strategy::Simple { rf }
    }

    fn nts(dcs: &[(&str, usize)]) -> Strategy {
        Strategy::NetworkTopology {
            dcs: dcs.iter().map(|(dc, rf)| ((*dc).to_owned(), *rf)).collect(),
        }
    }

    fn ips(lasts: &[u8]) -> Vec<Endpoint> {
        lasts.iter().map(|&l| ip(l)).collect()
    }

    fn range(start: i64, end: i64) -> TokenRange {
        TokenRange {
            start_exclusive: Token(start),
            end_inclusive: Token(end),
        }
    }

    /// Nodes 1, 2, 3 at tokens -100, 0, 100 in one dc and rack.
    fn three_nodes() -> Ring {
        Ring::new([
            normal(1, "dc1", "r1", &[-100]),
            normal(2, "dc1", "r1", &[0]),
            normal(3, "dc1", "r1", &[100]),
        ])
    }

    fn replication(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn strategy_from_replication_map() {
        let cases = [
            (
                replication(&[
                    ("class", "org.apache.cassandra.locator.SimpleStrategy"),
                    ("replication_factor", "3"),
                ]),
                simple(3),
            ),
            (
                replication(&[("class", "SimpleStrategy"), ("replication_factor", "3/1")]),
                simple(3),
            ),
            (
                replication(&[
                    (
                        "class",
                        "org.apache.cassandra.locator.NetworkTopologyStrategy",
                    ),
                    ("dc1", "3"),
                    ("dc2", "2/1"),
                    ("dc3", "0"),
                    ("dc4", "x"),
                ]),
                nts(&[("dc1", 3), ("dc2", 2)]),
            ),
            (
                replication(&[("class", "org.apache.cassandra.locator.LocalStrategy")]),
                Strategy::Local,
            ),
            (
                replication(&[("class", "org.apache.cassandra.locator.EverywhereStrategy")]),
                Strategy::Local,
            ),
            (
                replication(&[("class", "com.example.Custom"), ("replication_factor", "5")]),
                simple(1),
            ),
            (replication(&[]), simple(1)),
        ];
        for (map, expected) in cases {
            assert_eq!(Strategy::from_replication(&map), expected, "{map:?}");
        }
    }

    #[test]
    fn strategy_rf_per_dc() {
        let strategy = nts(&[("dc1", 3), ("dc2", 2)]);
        assert_eq!(strategy.rf_in("dc1"), 3);
        assert_eq!(strategy.rf_in("dc2"), 2);
        assert_eq!(strategy.rf_in("dc3"), 0);
        assert_eq!(strategy.total_rf(), 5);
        assert_eq!(simple(3).rf_in("anywhere"), 3);
        assert_eq!(simple(3).total_rf(), 3);
        assert_eq!(Strategy::Local.rf_in("dc1"), 1);
        assert_eq!(Strategy::Local.total_rf(), 1);
        assert_eq!(
            strategy.class_name(),
            "org.apache.cassandra.locator.NetworkTopologyStrategy"
        );
    }

    #[test]
    fn members_by_address() {
        let ring = Ring::new([
            normal(2, "dc1", "r1", &[0]),
            normal(1, "dc1", "r1", &[5]),
            normal(2, "dc1", "r1", &[7]),
        ]);
        let addresses: Vec<Endpoint> = ring.members().map(|m| m.address).collect();
        assert_eq!(addresses, ips(&[1, 2]));
        assert_eq!(
            ring.member(ip(2)).map(|m| m.tokens.clone()),
            Some(vec![Token(7)])
        );
        assert_eq!(ring.member(ip(9)), None);
        assert!(!ring.is_empty());
        assert!(Ring::default().is_empty());
    }

    #[test]
    fn simple_replicas_walk_and_wrap() {
        let ring = three_nodes();
        let strategy = simple(2);
        assert_eq!(ring.replicas(&strategy, Token(-500)), ips(&[1, 2]));
        assert_eq!(ring.replicas(&strategy, Token(-100)), ips(&[1, 2]));
        assert_eq!(ring.replicas(&strategy, Token(-99)), ips(&[2, 3]));
        assert_eq!(ring.replicas(&strategy, Token(50)), ips(&[3, 1]));
        assert_eq!(ring.replicas(&strategy, Token(100)), ips(&[3, 1]));
        assert_eq!(ring.replicas(&strategy, Token(101)), ips(&[1, 2]));
        assert_eq!(ring.replicas(&strategy, Token(i64::MAX)), ips(&[1, 2]));
        assert_eq!(ring.replicas(&strategy, Token(i64::MIN)), ips(&[1, 2]));
        assert_eq!(ring.replicas(&simple(1), Token(1)), ips(&[3]));
    }

    #[test]
    fn replicas_with_rf_above_node_count_are_every_node() {
        let ring = three_nodes();
        assert_eq!(ring.replicas(&simple(5), Token(1)), ips(&[3, 1, 2]));
        assert_eq!(
            ring.replicas(&nts(&[("dc1", 5)]), Token(1)),
            ips(&[3, 1, 2])
        );
        assert!(ring.replicas(&simple(0), Token(1)).is_empty());
    }

    #[test]
    fn replicas_skip_repeated_endpoints_of_vnodes() {
        let ring = Ring::new([
            normal(1, "dc1", "r1", &[10, 20]),
            normal(2, "dc1", "r1", &[30, 40]),
        ]);
        assert_eq!(ring.replicas(&simple(2), Token(0)), ips(&[1, 2]));
        assert_eq!(ring.replicas(&simple(2), Token(35)), ips(&[2, 1]));
        assert_eq!(ring.replicas(&simple(3), Token(35)), ips(&[2, 1]));
    }

    #[test]
    fn local_strategy_and_empty_ring_place_nothing() {
        assert!(three_nodes()
            .replicas(&Strategy::Local, Token(0))
            .is_empty());
        let empty = Ring::default();
        assert!(empty.replicas(&simple(3), Token(0)).is_empty());
        assert!(empty.pending_replicas(&simple(3), Token(0)).is_empty());
        assert!(empty.ranges(&simple(3)).is_empty());
        assert_eq!(empty.range_containing(Token(0)), None);
        assert!(empty.effective_ownership(&simple(3)).is_empty());
    }

    /// Two dcs of three racks each; dc1 has two nodes on rack a.
    ///   token: 10  20  30  40  50  60  70  80
    ///   node:   1   2   3   4   5   6   7   8
    ///   dc:    d1  d2  d1  d2  d1  d2  d1  d2
    ///   rack:   a   x   a   y   b   z   c   x
    fn two_dcs() -> Ring {
        Ring::new([
            normal(1, "dc1", "a", &[10]),
            normal(2, "dc2", "x", &[20]),
            normal(3, "dc1", "a", &[30]),
            normal(4, "dc2", "y", &[40]),
            normal(5, "dc1", "b", &[50]),
            normal(6, "dc2", "z", &[60]),
            normal(7, "dc1", "c", &[70]),
            normal(8, "dc2", "x", &[80]),
        ])
    }

    #[test]
    fn network_topology_prefers_new_racks() {
        let ring = two_dcs();
        // dc1 from token 10: 1 (a), 3 (a again: skipped), 5 (b), 7 (c).
        assert_eq!(
            ring.replicas(&nts(&[("dc1", 3)]), Token(0)),
            ips(&[1, 5, 7])
        );
        // dc2 from token 0: 2 (x), 4 (y), 6 (z).
        assert_eq!(
            ring.replicas(&nts(&[("dc1", 3), ("dc2", 2)]), Token(0)),
            ips(&[1, 2, 4, 5, 7])
        );
        // From 61: 7 (c), 8 (x), 1 (a), 2 (x again: skipped), 3 (a again:
        // skipped), 4 (y: dc2 done), 5 (b: dc1 done).
        assert_eq!(
            ring.replicas(&nts(&[("dc1", 3), ("dc2", 2)]), Token(61)),
            ips(&[7, 8, 1, 4, 5])
        );
        assert_eq!(ring.replicas(&nts(&[("dc2", 1)]), Token(61)), ips(&[8]));
        assert!(ring.replicas(&nts(&[("dc3", 3)]), Token(0)).is_empty());
    }

    #[test]
    fn network_topology_repeats_racks_only_beyond_rack_count() {
        let ring = two_dcs();
        // dc1 has 3 racks and rf 4: one repeat, the first met in walk order.
        assert_eq!(
            ring.replicas(&nts(&[("dc1", 4)]), Token(0)),
            ips(&[1, 3, 5, 7])
        );
        // From 31: 5 (b), 7 (c), 1 (a): rf 3 needs no repeat.
        assert_eq!(
            ring.replicas(&nts(&[("dc1", 3)]), Token(31)),
            ips(&[5, 7, 1])
        );
        // dc2 with rf 4 has 3 racks and 4 nodes: all of them, in walk order.
        assert_eq!(
            ring.replicas(&nts(&[("dc2", 4)]), Token(0)),
            ips(&[2, 4, 6, 8])
        );
        // One rack, rf 2: repeats allowed from the start.
        let one_rack = three_nodes();
        assert_eq!(
            one_rack.replicas(&nts(&[("dc1", 2)]), Token(0)),
            ips(&[2, 3])
        );
    }

    #[test]
    fn network_topology_fewer_racks_than_rf_takes_first_repeats() {
        // Racks a, a, a, b: rf 3 takes 1 (a), 2 (a: one repeat allowed),
        // skips 3 (a), then 4 (b).
        let ring = Ring::new([
            normal(1, "dc1", "a", &[10]),
            normal(2, "dc1", "a", &[20]),
            normal(3, "dc1", "a", &[30]),
            normal(4, "dc1", "b", &[40]),
        ]);
        assert_eq!(
            ring.replicas(&nts(&[("dc1", 3)]), Token(0)),
            ips(&[1, 2, 4])
        );
    }

    #[test]
    fn joining_node_is_pending_not_natural() {
        let mut members = vec![
            normal(1, "dc1", "r1", &[-100]),
            normal(2, "dc1", "r1", &[0]),
            normal(3, "dc1", "r1", &[100]),
        ];
        members.push(member(4, "dc1", "r1", &[50], MemberStatus::Joining));
        let ring = Ring::new(members);
        let strategy = simple(2);
        // (0, 50] goes to 4 once it joins: replicas 4, 3 instead of 3, 1.
        assert_eq!(ring.replicas(&strategy, Token(10)), ips(&[3, 1]));
        assert_eq!(ring.pending_replicas(&strategy, Token(10)), ips(&[4]));
        // (-100, 0] will have 2, 4 instead of 2, 3.
        assert_eq!(ring.replicas(&strategy, Token(-50)), ips(&[2, 3]));
        assert_eq!(ring.pending_replicas(&strategy, Token(-50)), ips(&[4]));
        // (100, -100] keeps 1, 2.
        assert!(ring.pending_replicas(&strategy, Token(200)).is_empty());
        // The joining node owns no range yet.
        assert_eq!(ring.ranges(&strategy).len(), 3);
        assert!(ring.ranges_of(&strategy, ip(4)).is_empty());
        assert!(!ring.effective_ownership(&strategy).contains_key(&ip(4)));
    }

    #[test]
    fn leaving_node_hands_its_ranges_to_pending_replicas() {
        let ring = Ring::new([
            normal(1, "dc1", "r1", &[-100]),
            normal(2, "dc1", "r1", &[0]),
            member(3, "dc1", "r1", &[100], MemberStatus::Leaving),
            normal(4, "dc1", "r1", &[200]),
        ]);
        let strategy = simple(2);
        // (0, 100]: 3, 4 now; 4, 1 once 3 has left.
        assert_eq!(ring.replicas(&strategy, Token(50)), ips(&[3, 4]));
        assert_eq!(ring.pending_replicas(&strategy, Token(50)), ips(&[1]));
        // (-100, 0]: 2, 3 now; 2, 4 after.
        assert_eq!(ring.pending_replicas(&strategy, Token(-50)), ips(&[4]));
        // (100, 200]: 4, 1 stays.
        assert!(ring.pending_replicas(&strategy, Token(150)).is_empty());
        // A leaving node still owns its range.
        assert_eq!(ring.range_containing(Token(50)), Some(range(0, 100)));
    }

    #[test]
    fn no_pending_replicas_without_moves() {
        let ring = two_dcs();
        let strategy = nts(&[("dc1", 3), ("dc2", 2)]);
        for t in [0, 15, 45, 79, 1000] {
            assert!(ring.pending_replicas(&strategy, Token(t)).is_empty());
        }
    }

    #[test]
    fn ranges_cover_the_ring_once() {
        let ring = three_nodes();
        let strategy = simple(2);
        assert_eq!(
            ring.ranges(&strategy),
            vec![
                (range(100, -100), ips(&[1, 2])),
                (range(-100, 0), ips(&[2, 3])),
                (range(0, 100), ips(&[3, 1])),
            ]
        );
        assert_eq!(
            ring.ranges_of(&strategy, ip(1)),
            vec![range(100, -100), range(0, 100)]
        );
        assert_eq!(
            ring.ranges_of(&Strategy::Local, ip(1)),
            vec![TokenRange::full()]
        );
    }

    #[test]
    fn single_token_is_the_whole_ring() {
        let ring = Ring::new([normal(1, "dc1", "r1", &[42])]);
        assert_eq!(ring.ranges(&simple(3)), vec![(range(42, 42), ips(&[1]))]);
        for t in [i64::MIN, -1, 42, 43, i64::MAX] {
            assert_eq!(ring.range_containing(Token(t)), Some(range(42, 42)));
        }
        assert_eq!(
            ring.effective_ownership(&simple(3)),
            BTreeMap::from([(ip(1), 1.0)])
        );
    }

    #[test]
    fn shared_token_is_cut_once() {
        let ring = Ring::new([
            normal(1, "dc1", "r1", &[5]),
            normal(2, "dc1", "r1", &[5, 9]),
        ]);
        assert_eq!(
            ring.ranges(&simple(1)),
            vec![(range(9, 5), ips(&[1])), (range(5, 9), ips(&[2]))]
        );
        assert_eq!(ring.range_containing(Token(5)), Some(range(9, 5)));
        assert_eq!(ring.range_containing(Token(6)), Some(range(5, 9)));
    }

    #[test]
    fn range_containing_finds_the_end_token() {
        let ring = three_nodes();
        assert_eq!(ring.range_containing(Token(-100)), Some(range(100, -100)));
        assert_eq!(ring.range_containing(Token(-99)), Some(range(-100, 0)));
        assert_eq!(ring.range_containing(Token(0)), Some(range(-100, 0)));
        assert_eq!(ring.range_containing(Token(100)), Some(range(0, 100)));
        assert_eq!(ring.range_containing(Token(101)), Some(range(100, -100)));
        assert_eq!(
            ring.range_containing(Token(i64::MIN)),
            Some(range(100, -100))
        );
    }

    #[test]
    fn effective_ownership_counts_every_replica() {
        // Ranges (i64::MAX, 0]: half the ring and one position, (0, 2^62]: a
        // quarter, (2^62, i64::MAX]: a quarter less one position.
        let ring = Ring::new([
            normal(1, "dc1", "r1", &[0]),
            normal(2, "dc1", "r1", &[1 << 62]),
            normal(3, "dc1", "r1", &[i64::MAX]),
        ]);
        let primary = ring.effective_ownership(&simple(1));
        assert!((primary[&ip(1)] - 0.5).abs() < 1e-9);
        assert!((primary[&ip(2)] - 0.25).abs() < 1e-9);
        assert!((primary[&ip(3)] - 0.25).abs() < 1e-9);
        let rf2 = ring.effective_ownership(&simple(2));
        assert!((rf2[&ip(1)] - 0.75).abs() < 1e-9);
        assert!((rf2[&ip(2)] - 0.75).abs() < 1e-9);
        assert!((rf2[&ip(3)] - 0.5).abs() < 1e-9);
        let everywhere = ring.effective_ownership(&simple(3));
        assert!(everywhere.values().all(|share| (share - 1.0).abs() < 1e-9));
        let local = ring.effective_ownership(&Strategy::Local);
        assert_eq!(local.len(), 3);
        assert!(local.values().all(|share| *share == 1.0));
    }

    #[test]
    fn effective_ownership_per_dc_sums_to_rf() {
        let ring = two_dcs();
        let ownership = ring.effective_ownership(&nts(&[("dc1", 3), ("dc2", 2)]));
        let dc1: f64 = (1..=7).step_by(2).map(|n| ownership[&ip(n)]).sum();
        let dc2: f64 = (2..=8).step_by(2).map(|n| ownership[&ip(n)]).sum();
        assert!((dc1 - 3.0).abs() < 1e-9, "{dc1}");
        assert!((dc2 - 2.0).abs() < 1e-9, "{dc2}");
    }

    fn counter_random(seed: u64) -> impl FnMut() -> u64 {
        let mut state = seed;
        move || {
            // splitmix64
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
    }

    fn assert_valid_allocation(ring: &Ring, tokens: &[Token]) {
        assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
        assert!(!tokens.contains(&Token(i64::MIN)));
        for member in ring.members() {
            for token in &member.tokens {
                assert!(!tokens.contains(token), "{token:?} reused");
            }
        }
    }

    #[test]
    fn first_node_tokens_are_evenly_spaced() {
        let ring = Ring::default();
        let mut random = || 5_u64;
        let tokens = allocate_tokens(&ring, "dc1", 4, &mut random);
        let quarter = 1_i64 << 62;
        assert_eq!(
            tokens,
            vec![
                Token(i64::MIN + 5),
                Token(-quarter + 5),
                Token(5),
                Token(quarter + 5)
            ]
        );
        assert!(allocate_tokens(&ring, "dc1", 0, &mut random).is_empty());
    }

    #[test]
    fn evenly_spaced_tokens_avoid_min_and_taken_tokens() {
        // Offset 0 would give i64::MIN and 0; the other dc has 1.
        let ring = Ring::new([normal(1, "dc2", "r1", &[1, 0])]);
        let mut random = || 0_u64;
        let tokens = allocate_tokens(&ring, "dc1", 2, &mut random);
        assert_eq!(tokens, vec![Token(i64::MIN + 1), Token(2)]);
    }

    #[test]
    fn second_node_splits_the_largest_ranges_at_midpoints() {
        let ring = Ring::new([normal(1, "dc1", "r1", &[0, 1000])]);
        let mut random = || panic!("the dc has tokens: no randomness needed");
        // (0, 1000] is small; (1000, 0] wraps and is huge: its midpoint first,
        // then the midpoints of its two halves.
        let tokens = allocate_tokens(&ring, "dc1", 3, &mut random);
        let mid = token_after(Token(1000), (RING_SIZE - 1000) / 2);
        let quarter = (RING_SIZE - 1000) / 4;
        let mut expected = vec![
            mid,
            token_after(Token(1000), quarter),
            token_after(mid, quarter),
        ];
        expected.sort_unstable();
        assert_eq!(tokens, expected);
        assert_valid_allocation(&ring, &tokens);
    }

    #[test]
    fn allocation_ignores_other_dcs_and_leaving_members() {
        let ring = Ring::new([
            normal(1, "dc1", "r1", &[0]),
            member(2, "dc1", "r1", &[1 << 62], MemberStatus::Leaving),
            normal(3, "dc2", "r1", &[i64::MAX / 2 + 1]),
        ]);
        let mut random = || 0_u64;
        // dc1 without the leaving node is (0, 0]: the midpoint is 2^63 past 0,
        // i64::MIN, never assigned: the next position.
        let tokens = allocate_tokens(&ring, "dc1", 1, &mut random);
        assert_eq!(tokens, vec![Token(i64::MIN + 1)]);
        // dc3 is empty: evenly spaced.
        let tokens = allocate_tokens(&ring, "dc3", 2, &mut random);
        assert_eq!(tokens, vec![Token(i64::MIN + 1), Token(1)]);
    }

    #[test]
    fn ranges_without_free_positions_are_not_split() {
        // (i64::MAX, i64::MIN + 1] has width 2 and its one inner position,
        // i64::MIN, is never assigned.
        let taken = BTreeSet::from([Token(i64::MIN), Token(i64::MIN + 1)]);
        assert_eq!(free_position(Token(i64::MAX), 2, &taken), None);
        assert_eq!(free_position(Token(10), 1, &taken), None);
        assert_eq!(free_position(Token(10), 4, &taken), Some(2));
        assert_eq!(free_position(Token(i64::MAX - 1), 4, &taken), Some(1));
        // Only the large range is split, at its midpoint (0).
        let ring = Ring::new([normal(1, "dc1", "r1", &[i64::MAX, i64::MIN + 1])]);
        let mut random = || 0_u64;
        let tokens = allocate_tokens(&ring, "dc1", 1, &mut random);
        assert_eq!(tokens, vec![Token(0)]);
        // Two adjacent tokens: (1, 2] has no inner position, so everything
        // goes to (2, 1].
        let ring = Ring::new([normal(1, "dc1", "r1", &[1, 2])]);
        let tokens = allocate_tokens(&ring, "dc1", 3, &mut random);
        assert_eq!(tokens.len(), 3);
        assert_valid_allocation(&ring, &tokens);
    }

    #[test]
    fn allocation_balances_five_nodes_added_one_by_one() {
        let mut random = counter_random(7);
        let mut members = Vec::new();
        for node in 1..=5_u8 {
            let ring = Ring::new(members.clone());
            let tokens = allocate_tokens(&ring, "dc1", 16, &mut random);
            assert_eq!(tokens.len(), 16);
            assert_valid_allocation(&ring, &tokens);
            let mut joined = normal(node, "dc1", "r1", &[]);
            joined.tokens = tokens;
            members.push(joined);
            let ring = Ring::new(members.clone());
            let ideal = 1.0 / f64::from(node);
            for (endpoint, share) in ring.effective_ownership(&simple(1)) {
                let ratio = share / ideal;
                assert!(
                    (0.6..=1.6).contains(&ratio),
                    "{node} nodes: {endpoint} owns {share} ({ratio} of its share)"
                );
            }
            for (endpoint, share) in ring.effective_ownership(&simple(3)) {
                let ideal = 3.0_f64.min(f64::from(node)) / f64::from(node);
                let ratio = share / ideal;
                assert!(
                    (0.6..=1.6).contains(&ratio),
                    "{node} nodes, rf 3: {endpoint} owns {share}"
                );
            }
        }
    }

    #[test]
    fn allocation_balances_a_second_dc() {
        let mut random = counter_random(11);
        let mut members = vec![normal(1, "dc1", "r1", &[])];
        members[0].tokens = allocate_tokens(&Ring::default(), "dc1", 8, &mut random);
        for node in 2..=4_u8 {
            let ring = Ring::new(members.clone());
            let mut joined = normal(node, "dc2", "r1", &[]);
            joined.tokens = allocate_tokens(&ring, "dc2", 8, &mut random);
            assert_valid_allocation(&ring, &joined.tokens);
            members.push(joined);
        }
        let ring = Ring::new(members);
        let ownership = ring.effective_ownership(&nts(&[("dc2", 1)]));
        for node in 2..=4 {
            let ratio = ownership[&ip(node)] * 3.0;
            assert!((0.6..=1.6).contains(&ratio), "{node}: {ratio}");
        }
    }

    /// A random ring: up to 8 nodes with up to 6 tokens each, in up to 2 dcs
    /// and 3 racks per dc, some joining or leaving.
    fn arbitrary_members() -> impl proptest::strategy::Strategy<Value = Vec<Member>> {
        let status = prop_oneof![
            6 => Just(MemberStatus::Normal),
            1 => Just(MemberStatus::Joining),
            1 => Just(MemberStatus::Leaving),
        ];
        let node = (
            0..2_u8,
            0..3_u8,
            proptest::collection::vec(any::<i64>(), 1..6),
            status,
        );
        proptest::collection::vec(node, 0..8).prop_map(|nodes| {
            nodes
                .into_iter()
                .enumerate()
                .map(|(index, (dc, rack, tokens, status))| {
                    let last = u8::try_from(index + 1).unwrap_or(u8::MAX);
                    let tokens: Vec<i64> = tokens.into_iter().filter(|t| *t != i64::MIN).collect();
                    member(
                        last,
                        &format!("dc{dc}"),
                        &format!("r{rack}"),
                        &tokens,
                        status,
                    )
                })
                .collect()
        })
    }

    fn arbitrary_replication() -> impl proptest::strategy::Strategy<Value = Strategy> {
        prop_oneof![
            (0..5_usize).prop_map(simple),
            (0..4_usize, 0..4_usize).prop_map(|(a, b)| nts(&[("dc0", a), ("dc1", b)])),
            (1..4_usize).prop_map(|rf| nts(&[("dc1", rf), ("dc9", 2)])),
        ]
    }

    fn owning_nodes<'a>(members: &'a [Member]) -> impl Iterator<Item = &'a Member> + 'a {
        members
            .iter()
            .filter(|m| m.status.owns_now() && !m.tokens.is_empty())
    }

    proptest! {
        #[test]
        fn simple_replicas_are_distinct_and_min_rf_nodes(
            members in arbitrary_members(), rf in 0..6_usize, token: i64,
        ) {
            let ring = Ring::new(members.clone());
            let replicas = ring.replicas(&simple(rf), Token(token));
            let owners: BTreeSet<Endpoint> = owning_nodes(&members).map(|m| m.address).collect();
            prop_assert_eq!(replicas.len(), rf.min(owners.len()));
            prop_assert_eq!(replicas.iter().collect::<BTreeSet<_>>().len(), replicas.len());
            prop_assert!(replicas.iter().all(|r| owners.contains(r)));
            // The first replica owns the range the token falls in.
            if let (Some(first), Some(range)) = (replicas.first(), ring.range_containing(Token(token))) {
                prop_assert!(ring.member(*first).is_some_and(|m| m.tokens.contains(&range.end_inclusive)));
            }
        }

        #[test]
        fn network_topology_fills_each_dc_across_racks(
            members in arbitrary_members(), rf0 in 0..5_usize, rf1 in 0..5_usize, token: i64,
        ) {
            let ring = Ring::new(members.clone());
            let replicas = ring.replicas(&nts(&[("dc0", rf0), ("dc1", rf1)]), Token(token));
            prop_assert_eq!(replicas.iter().collect::<BTreeSet<_>>().len(), replicas.len());
            for (dc, rf) in [("dc0", rf0), ("dc1", rf1)] {
                let in_dc: Vec<&Member> = owning_nodes(&members).filter(|m| m.dc == dc).collect();
                let racks: BTreeSet<&str> = in_dc.iter().map(|m| m.rack.as_str()).collect();
                let chosen: Vec<&Member> = replicas
                    .iter()
                    .filter_map(|r| ring.member(*r))
                    .filter(|m| m.dc == dc)
                    .collect();
                prop_assert_eq!(chosen.len(), rf.min(in_dc.len()));
                let chosen_racks: BTreeSet<&str> = chosen.iter().map(|m| m.rack.as_str()).collect();
                prop_assert_eq!(chosen_racks.len(), rf.min(racks.len()));
            }
        }

        #[test]
        fn ranges_partition_the_ring(
            members in arbitrary_members(), strategy in arbitrary_replication(), tokens in proptest::collection::vec(any::<i64>(), 1..20),
        ) {
            let ring = Ring::new(members.clone());
            let ranges = ring.ranges(&strategy);
            let distinct: BTreeSet<Token> = owning_nodes(&members).flat_map(|m| m.tokens.clone()).collect();
            prop_assert_eq!(ranges.len(), distinct.len());
            let total: i128 = ranges
                .iter()
                .map(|(r, _)| range_width(r.start_exclusive, r.end_inclusive))
                .sum();
            if !ranges.is_empty() {
                prop_assert_eq!(total, RING_SIZE);
            }
            // The ends of the ranges are the tokens themselves.
            let all_tokens = tokens.iter().copied().chain(distinct.iter().map(|t| t.0));
            for token in all_tokens.map(Token) {
                let containing: Vec<&(TokenRange, Vec<Endpoint>)> =
                    ranges.iter().filter(|(r, _)| r.contains(token)).collect();
                if ranges.is_empty() {
                    prop_assert!(containing.is_empty());
                    prop_assert_eq!(ring.range_containing(token), None);
                    continue;
                }
                prop_assert_eq!(containing.len(), 1, "{:?} in {:?}", token, ranges);
                let (range, replicas) = containing[0];
                prop_assert_eq!(ring.range_containing(token), Some(*range));
                prop_assert_eq!(replicas, &ring.replicas(&strategy, token));
            }
        }

        #[test]
        fn ranges_of_and_ownership_agree_with_ranges(
            members in arbitrary_members(), strategy in arbitrary_replication(),
        ) {
            let ring = Ring::new(members.clone());
            let ranges = ring.ranges(&strategy);
            let ownership = ring.effective_ownership(&strategy);
            let mut expected_total = 0.0;
            for (range, replicas) in &ranges {
                expected_total += replicas.len() as f64
                    * range_width(range.start_exclusive, range.end_inclusive) as f64
                    / RING_SIZE as f64;
            }
            let total: f64 = ownership.values().sum();
            prop_assert!((total - expected_total).abs() < 1e-6);
            for (endpoint, share) in &ownership {
                prop_assert!((0.0..=1.0 + 1e-9).contains(share));
                let of: Vec<TokenRange> = ring.ranges_of(&strategy, *endpoint);
                let expected: Vec<TokenRange> = ranges
                    .iter()
                    .filter(|(_, replicas)| replicas.contains(endpoint))
                    .map(|(r, _)| *r)
                    .collect();
                prop_assert_eq!(of, expected);
            }
        }

        #[test]
        fn pending_replicas_complete_the_future_placement(
            members in arbitrary_members(), strategy in arbitrary_replication(), token: i64,
        ) {
            let ring = Ring::new(members.clone());
            let natural = ring.replicas(&strategy, Token(token));
            let pending = ring.pending_replicas(&strategy, Token(token));
            prop_assert!(pending.iter().all(|p| !natural.contains(p)));
            let after: Vec<Member> = members
                .iter()
                .filter(|m| m.status != MemberStatus::Leaving)
                .map(|m| Member { status: MemberStatus::Normal, ..m.clone() })
                .collect();
            let future = Ring::new(after).replicas(&strategy, Token(token));
            let mut expected: Vec<Endpoint> =
                future.into_iter().filter(|f| !natural.contains(f)).collect();
            expected.sort_unstable();
            let mut pending = pending;
            pending.sort_unstable();
            prop_assert_eq!(pending, expected);
        }

        #[test]
        fn allocated_tokens_are_new_sorted_and_valid(
            members in arbitrary_members(), dc in 0..3_u8, count in 0..40_usize, seed: u64,
        ) {
            let ring = Ring::new(members);
            let mut random = counter_random(seed);
            let tokens = allocate_tokens(&ring, &format!("dc{dc}"), count, &mut random);
            prop_assert_eq!(tokens.len(), count);
            assert_valid_allocation(&ring, &tokens);
        }

        #[test]
        fn token_arithmetic_wraps(start: i64, distance in 0..RING_SIZE) {
            let end = token_after(Token(start), distance);
            let expected = if distance == 0 { RING_SIZE } else { distance };
            prop_assert_eq!(range_width(Token(start), end), expected);
        }
    }
}
