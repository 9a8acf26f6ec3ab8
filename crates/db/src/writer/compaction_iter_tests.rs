//! The drop rules and the compaction filter against a model: random versions of a few keys,
//! random snapshots, random answers about deeper levels.

use std::collections::{BTreeMap, BTreeSet};

use leveltable_table::BytewiseComparator;
use proptest::prelude::*;

use super::*;

/// Entries from a vector, in order.
struct VecEntries {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    next: usize,
}

impl Entries for VecEntries {
    fn advance(&mut self) -> Result<bool> {
        if self.next >= self.entries.len() {
            return Ok(false);
        }
        self.next += 1;
        Ok(true)
    }

    fn current(&self) -> (&[u8], &[u8]) {
        let (k, v) = &self.entries[self.next - 1];
        (k, v)
    }
}

/// A filter deciding by the value's first byte: 'r' removes, 'c' changes, else keeps.
struct ByFirstByte;

impl CompactionFilter for ByFirstByte {
    fn filter(&self, level: usize, key: &[u8], value: &[u8]) -> FilterDecision {
        assert_eq!(level, 3);
        match value.first() {
            Some(b'r') => FilterDecision::Remove,
            Some(b'c') => FilterDecision::ChangeValue([key, b"-changed"].concat()),
            _ => FilterDecision::Keep,
        }
    }

    fn name(&self) -> &str {
        "by-first-byte"
    }
}

/// One version: user key, sequence number, value (`None`: a deletion).
type Version = (Vec<u8>, u64, Option<Vec<u8>>);

/// One version of a known key: sequence number and value.
type Stored = (u64, Option<Vec<u8>>);

fn internal(user_key: &[u8], sequence: u64, value: &Option<Vec<u8>>) -> Vec<u8> {
    let t = if value.is_some() {
        ValueType::Value
    } else {
        ValueType::Deletion
    };
    let mut k = Vec::new();
    append_internal_key(&mut k, user_key, sequence, t).unwrap();
    k
}

/// What the iterator keeps of `versions` (in internal-key order).
fn run(
    versions: &[Version],
    smallest_snapshot: u64,
    deeper: &BTreeSet<Vec<u8>>,
    filter: Option<Filtering<'_>>,
) -> Vec<Version> {
    let entries = versions
        .iter()
        .map(|(k, s, v)| (internal(k, *s, v), v.clone().unwrap_or_default()))
        .collect();
    let input = VecEntries { entries, next: 0 };
    let mut asked: Vec<Vec<u8>> = Vec::new();
    let base = |k: &[u8]| {
        asked.push(k.to_vec());
        !deeper.contains(k)
    };
    let mut it = CompactionIter::new(input, &BytewiseComparator, smallest_snapshot, base, filter);
    let mut out = Vec::new();
    while let Some((k, v)) = it.next().unwrap() {
        let p = ParsedInternalKey::parse(k).unwrap();
        let value = (p.value_type == ValueType::Value).then(|| v.to_vec());
        out.push((p.user_key.to_vec(), p.sequence, value));
    }
    drop(it);
    assert!(
        asked.is_sorted(),
        "base levels asked out of order: {asked:?}"
    );
    out
}

/// The model: versions grouped by key, newest first; a version survives unless some newer
/// version of its key is at or below the smallest snapshot, or it is a deletion at or below
/// the smallest snapshot of a key no deeper level holds. The filter first rewrites the
/// newest version of each key when it is a put newer than every snapshot.
fn model(
    versions: &[Version],
    snapshots: &BTreeSet<u64>,
    last_sequence: u64,
    deeper: &BTreeSet<Vec<u8>>,
    filtered: bool,
) -> Vec<Version> {
    let smallest = snapshots.first().copied().unwrap_or(last_sequence);
    let mut by_key: BTreeMap<&[u8], Vec<Stored>> = BTreeMap::new();
    for (k, s, v) in versions {
        by_key.entry(k).or_default().push((*s, v.clone()));
    }
    let mut out = Vec::new();
    for (k, mut vs) in by_key {
        vs.sort_by_key(|v| std::cmp::Reverse(v.0));
        if filtered
            && let Some((s, Some(v))) = vs.first_mut()
            && snapshots.last().is_none_or(|l| *s > *l)
        {
            match v.first() {
                Some(b'r') => vs[0].1 = None,
                Some(b'c') => *v = [k, b"-changed"].concat(),
                _ => {}
            }
        }
        for (i, (s, v)) in vs.iter().enumerate() {
            let shadowed = vs[..i].iter().any(|(newer, _)| *newer <= smallest);
            let dead_tombstone = v.is_none() && *s <= smallest && !deeper.contains(k);
            if !shadowed && !dead_tombstone {
                out.push((k.to_vec(), *s, v.clone()));
            }
        }
    }
    out
}

/// What a reader at `sequence` sees of `key`, with `under` beneath the versions (a value a
/// deeper level holds).
fn read(versions: &[Version], key: &[u8], sequence: u64, under: Option<&[u8]>) -> Option<Vec<u8>> {
    versions
        .iter()
        .filter(|(k, s, _)| k == key && *s <= sequence)
        .max_by_key(|(_, s, _)| *s)
        .map_or(under.map(<[u8]>::to_vec), |(_, _, v)| v.clone())
}

fn arb_case() -> impl Strategy<Value = (Vec<Version>, BTreeSet<u64>, u64, BTreeSet<Vec<u8>>)> {
    let version = (
        0u8..5,
        prop_oneof![
            Just(None),
            prop_oneof![Just(b'k'), Just(b'r'), Just(b'c')].prop_map(|b| Some(vec![b, b'1']))
        ],
    );
    (
        prop::collection::vec(version, 0..40),
        prop::collection::btree_set(1u64..60, 0..4),
        prop::collection::btree_set(0u8..5, 0..5),
    )
        .prop_map(|(vs, snaps, deeper)| {
            // Distinct sequence numbers 1..=n, in a shuffled order given by the keys.
            let n = vs.len() as u64;
            let mut versions: Vec<Version> = vs
                .into_iter()
                .enumerate()
                .map(|(i, (k, v))| (vec![b'a' + k], i as u64 + 1, v))
                .collect();
            versions.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
            let snapshots = snaps.into_iter().filter(|&s| s <= n).collect();
            let deeper = deeper.into_iter().map(|k| vec![b'a' + k]).collect();
            (versions, snapshots, n, deeper)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_drop_rules_match_the_model(case in arb_case()) {
        let (versions, snapshots, last, deeper) = case;
        let smallest = snapshots.first().copied().unwrap_or(last);
        let got = run(&versions, smallest, &deeper, None);
        prop_assert_eq!(&got, &model(&versions, &snapshots, last, &deeper, false));
        // Every reader (each snapshot, and the newest state) sees what it saw before.
        for reader in snapshots.iter().copied().chain([last]) {
            for k in 0..5u8 {
                let key = [b'a' + k];
                let under = deeper.contains(&key[..]).then_some(&b"deep"[..]);
                prop_assert_eq!(
                    read(&got, &key, reader, under),
                    read(&versions, &key, reader, under),
                    "key {} at {}", k, reader
                );
            }
        }
    }

    #[test]
    fn the_filter_sees_only_the_newest_puts_no_snapshot_reads(case in arb_case()) {
        let (versions, snapshots, last, deeper) = case;
        let smallest = snapshots.first().copied().unwrap_or(last);
        let filter = Filtering {
            filter: &ByFirstByte,
            level: 3,
            latest_snapshot: snapshots.last().copied(),
        };
        let got = run(&versions, smallest, &deeper, Some(filter));
        prop_assert_eq!(&got, &model(&versions, &snapshots, last, &deeper, true));
        // Snapshots read what they read before the filter.
        for reader in snapshots.iter().copied() {
            for k in 0..5u8 {
                let key = [b'a' + k];
                let under = deeper.contains(&key[..]).then_some(&b"deep"[..]);
                prop_assert_eq!(
                    read(&got, &key, reader, under),
                    read(&versions, &key, reader, under)
                );
            }
        }
    }
}

#[test]
fn an_unparsable_key_is_kept_and_ends_its_run() {
    let mut k1 = Vec::new();
    append_internal_key(&mut k1, b"a", 5, ValueType::Value).unwrap();
    let mut k2 = Vec::new();
    append_internal_key(&mut k2, b"a", 4, ValueType::Value).unwrap();
    let mut k3 = Vec::new();
    append_internal_key(&mut k3, b"a", 3, ValueType::Value).unwrap();
    let entries = vec![
        (k1.clone(), b"1".to_vec()),
        (b"short".to_vec(), b"?".to_vec()),
        (k2.clone(), b"2".to_vec()),
        (k3, b"3".to_vec()),
    ];
    let input = VecEntries { entries, next: 0 };
    let mut it = CompactionIter::new(input, &BytewiseComparator, 10, |_: &[u8]| true, None);
    let mut out = Vec::new();
    while let Some((k, v)) = it.next().unwrap() {
        out.push((k.to_vec(), v.to_vec()));
    }
    // After the unparsable key, `a`@4 counts as the first version again: kept.
    assert_eq!(
        out,
        [
            (k1, b"1".to_vec()),
            (b"short".to_vec(), b"?".to_vec()),
            (k2, b"2".to_vec())
        ]
    );
}
