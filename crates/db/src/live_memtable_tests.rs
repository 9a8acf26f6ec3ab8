//! Tests of the memtable of a database open for writing.

use super::*;
use crate::dbformat::{InternalKeyComparator, MAX_SEQUENCE, append_internal_key, lookup_key};
use std::ops::Bound;

fn bytewise() -> LiveMemTable {
    LiveMemTable::new(&(Arc::new(BytewiseComparator) as Arc<dyn Comparator>))
}

fn all(m: &LiveMemTable) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut v = Vec::new();
    m.try_for_each(|k, val| {
        v.push((k.to_vec(), val.to_vec()));
        Ok(())
    })
    .unwrap();
    v
}

fn backwards(m: &LiveMemTable) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut v = Vec::new();
    m.visit_range(Bound::Unbounded, Bound::Unbounded, false, &mut |k, val| {
        v.push((k.to_vec(), val.to_vec()));
        true
    });
    v.reverse();
    v
}

#[test]
fn lookups_see_the_newest_version_at_the_snapshot() {
    let m = bytewise();
    m.add(1, ValueType::Value, b"a", b"1").unwrap();
    m.add(2, ValueType::Value, b"a", b"2").unwrap();
    m.add(3, ValueType::Deletion, b"a", b"").unwrap();
    m.add(2, ValueType::Value, b"b", b"x").unwrap();
    let get = |k: &[u8], s| m.lookup(&LookupKey::new(k, s).unwrap()).unwrap();
    assert_eq!(get(b"a", 1).into_value(), Some(b"1".to_vec()));
    assert_eq!(get(b"a", 2).into_value(), Some(b"2".to_vec()));
    assert_eq!(get(b"a", 3), LookupResult::Deleted { sequence: 3 });
    assert_eq!(get(b"a", 0), LookupResult::NotFound);
    assert_eq!(get(b"ab", 9), LookupResult::NotFound);
    assert_eq!(get(b"b", 9).into_value(), Some(b"x".to_vec()));
    assert_eq!(m.len(), 4);
}

struct Reverse;

impl Comparator for Reverse {
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        b.cmp(a)
    }
    fn name(&self) -> &str {
        "test.Reverse"
    }
    fn find_shortest_separator(&self, _: &mut Vec<u8>, _: &[u8]) {}
    fn find_short_successor(&self, _: &mut Vec<u8>) {}
}

/// Entries come out in internal-key order, forwards and backwards, for keys of every
/// length around the arena's word size (bytewise) and under a user comparator; each
/// lookup finds its version.
#[test]
fn entries_order_as_internal_keys() {
    for user in [
        Arc::new(BytewiseComparator) as Arc<dyn Comparator>,
        Arc::new(Reverse),
    ] {
        let icmp = InternalKeyComparator::new(Arc::clone(&user));
        let m = LiveMemTable::new(&user);
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut expected = Vec::new();
        for sequence in 1..=2000u64 {
            let len = next(24) as usize;
            let mut key: Vec<u8> = (0..len)
                .map(|_| [0u8, 1, b'a', 0xff][next(4) as usize])
                .collect();
            if next(2) == 0 {
                // Keys sharing their first 14 to 16 bytes.
                let mut long = b"0000000000000000".to_vec();
                long.truncate(14 + next(3) as usize);
                long.extend_from_slice(&key[..len.min(4)]);
                key = long;
            }
            let value = vec![b'v'; next(9) as usize];
            let t = if next(3) == 0 {
                ValueType::Deletion
            } else {
                ValueType::Value
            };
            let value = if t == ValueType::Deletion {
                Vec::new()
            } else {
                value
            };
            m.add(sequence, t, &key, &value).unwrap();
            let mut k = Vec::new();
            append_internal_key(&mut k, &key, sequence, t).unwrap();
            expected.push((k, value));
        }
        expected.sort_by(|a, b| icmp.compare(&a.0, &b.0));
        assert_eq!(all(&m), expected);
        assert_eq!(backwards(&m), expected);
        for (k, v) in &expected {
            let p = ParsedInternalKey::parse(k).unwrap();
            let found = m
                .lookup(&LookupKey::new(p.user_key, p.sequence).unwrap())
                .unwrap();
            assert_eq!(found, LookupResult::decided_by(&p, v));
        }
    }
}

/// Keys written in order are linked at the end without a search; keys written out of
/// order among them still land in place, on every level.
#[test]
fn keys_in_order_append_and_others_still_land_in_place() {
    let m = bytewise();
    let mut expected = Vec::new();
    for i in 0..5000u64 {
        // Every 7th key goes back before the others.
        let n = if i % 7 == 3 { i / 2 * 2 + 1 } else { i * 2 };
        let key = format!("k{n:08}");
        m.add(i + 1, ValueType::Value, key.as_bytes(), b"v")
            .unwrap();
        let mut k = Vec::new();
        append_internal_key(&mut k, key.as_bytes(), i + 1, ValueType::Value).unwrap();
        expected.push((k, b"v".to_vec()));
    }
    let icmp = InternalKeyComparator::bytewise();
    expected.sort_by(|a, b| icmp.compare(&a.0, &b.0));
    assert_eq!(all(&m), expected);
    assert_eq!(backwards(&m), expected);
    for (k, _) in &expected {
        let p = ParsedInternalKey::parse(k).unwrap();
        let found = m.lookup(&LookupKey::new(p.user_key, p.sequence).unwrap());
        assert_eq!(found.unwrap().into_value(), Some(b"v".to_vec()));
    }
}

/// Small entries take their bytes and about 17 more in the arena (LevelDB's take about
/// 30 more: a node of 8 bytes plus 8 per level, two length prefixes and the tag).
#[test]
fn a_small_entry_takes_its_bytes_and_about_17_more() {
    let m = bytewise();
    let n = 200_000u64;
    for i in 0..n {
        m.add(i + 1, ValueType::Value, &i.to_be_bytes(), b"0123456789")
            .unwrap();
    }
    let per_entry = m.arena.memory_usage() as f64 / n as f64;
    assert!(per_entry < 18.0 + 22.0, "{per_entry} bytes per entry");
}

/// A batch kept whole reads as one copied: the same versions, values and deletions.
#[test]
fn a_shared_batch_reads_as_a_copied_one() {
    let mut b = crate::write_batch::WriteBatchBuilder::new(7);
    b.put(b"a", &[1u8; 3000])
        .delete(b"b")
        .put(b"c", b"")
        .put(b"a", b"again");
    let copied = bytewise();
    copied
        .insert_batch(&WriteBatch::new(b.as_bytes()).unwrap())
        .unwrap();
    let shared = bytewise();
    shared
        .insert_shared_batch(Arc::new(b.as_bytes().to_vec()))
        .unwrap();
    assert_eq!(all(&shared), all(&copied));
    assert_eq!(backwards(&shared), all(&copied));
    assert_eq!(all(&shared).len(), 4);
    let get = |k: &[u8]| shared.lookup(&LookupKey::new(k, 100).unwrap()).unwrap();
    assert_eq!(get(b"a").into_value(), Some(b"again".to_vec()));
    assert_eq!(get(b"b"), LookupResult::Deleted { sequence: 8 });
    assert_eq!(get(b"c").into_value(), Some(Vec::new()));
}

/// Entries too large for the arena are kept outside it and read the same.
#[test]
fn large_entries_live_outside_the_arena() {
    let m = bytewise();
    let big_key = vec![b'k'; INLINE_BYTES];
    let big_value = vec![7u8; 3 * BLOCK_WORDS * 4];
    m.add(1, ValueType::Value, &big_key, b"small").unwrap();
    m.add(2, ValueType::Value, b"b", &big_value).unwrap();
    m.add(3, ValueType::Value, b"a", b"inline").unwrap();
    let got = all(&m);
    assert_eq!(got.len(), 3);
    assert_eq!(&got[0].1, b"inline");
    assert_eq!(got[1].1, big_value);
    assert_eq!(got[2].0[..big_key.len()], big_key[..]);
    assert_eq!(&got[2].1, b"small");
    assert_eq!(backwards(&m), got);
    assert!(m.memory_usage() >= big_value.len() + big_key.len());
}

#[test]
fn ranges_run_both_ways_within_bounds() {
    let m = bytewise();
    for (i, k) in [b"d", b"a", b"c", b"b"].iter().enumerate() {
        m.add(i as u64 + 1, ValueType::Value, *k, b"v").unwrap();
    }
    let visit = |lo: Bound<&[u8]>, hi: Bound<&[u8]>, forward: bool| {
        let mut keys = Vec::new();
        m.visit_range(lo, hi, forward, &mut |k, _| {
            keys.push(k[0]);
            true
        });
        keys
    };
    let b = lookup_key(b"b", MAX_SEQUENCE).unwrap();
    let c = lookup_key(b"c", 3).unwrap();
    assert_eq!(visit(Bound::Included(&b), Bound::Unbounded, true), b"bcd");
    assert_eq!(visit(Bound::Unbounded, Bound::Excluded(&b), false), b"a");
    assert_eq!(visit(Bound::Included(&b), Bound::Included(&c), true), b"bc");
    assert_eq!(visit(Bound::Included(&b), Bound::Excluded(&c), true), b"b");
    assert_eq!(visit(Bound::Excluded(&c), Bound::Unbounded, true), b"d");
    assert_eq!(
        visit(Bound::Included(&b), Bound::Included(&c), false),
        b"cb"
    );
    // `b`'s version sorts after the bound `b`@max, `c`'s is the bound `c`@3.
    assert_eq!(visit(Bound::Excluded(&b), Bound::Excluded(&c), false), b"b");
    assert_eq!(visit(Bound::Unbounded, Bound::Unbounded, false), b"dcba");
}

/// Every version the writer has added is found by readers looking it up meanwhile.
#[test]
fn lookups_beside_the_writer_find_what_was_added() {
    lookups_beside_the_writer(None);
}

#[test]
fn lookups_beside_the_writer_find_what_was_added_past_a_key_filter() {
    // Built over the first thousand keys; the rest are added through it.
    lookups_beside_the_writer(Some(1000));
}

fn lookups_beside_the_writer(filter_at: Option<u64>) {
    use std::sync::atomic::AtomicU64;
    let m = Arc::new(bytewise());
    let added = Arc::new(AtomicU64::new(0));
    let key = |i: u64| format!("k{:08}", i.wrapping_mul(0x9e37_79b9) % 1_000_000_007);
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (m, added) = (Arc::clone(&m), Arc::clone(&added));
            std::thread::spawn(move || {
                let mut i = r;
                loop {
                    let n = added.load(AtomicOrdering::Acquire);
                    if n >= 30_000 {
                        break;
                    }
                    if n > 0 {
                        i = (i * 31 + 7) % n;
                        let k = key(i);
                        let found = m
                            .lookup(&LookupKey::new(k.as_bytes(), MAX_SEQUENCE).unwrap())
                            .unwrap();
                        assert_eq!(found.into_value(), Some(k.into_bytes()), "{i} of {n}");
                    }
                }
            })
        })
        .collect();
    for i in 0..30_000u64 {
        if filter_at == Some(i) {
            m.build_key_filter();
        }
        let k = key(i);
        m.add(i + 1, ValueType::Value, k.as_bytes(), k.as_bytes())
            .unwrap();
        added.store(i + 1, AtomicOrdering::Release);
    }
    for r in readers {
        r.join().unwrap();
    }
}

#[test]
fn readers_run_beside_the_writer() {
    let m = Arc::new(bytewise());
    let writer = {
        let m = Arc::clone(&m);
        std::thread::spawn(move || {
            for i in 0..20_000u64 {
                let key = (i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).to_be_bytes();
                m.add(i + 1, ValueType::Value, &key, &[i as u8; 40])
                    .unwrap();
            }
        })
    };
    let mut seen = 0;
    while seen < 20_000 {
        let mut n = 0;
        let mut last: Option<Vec<u8>> = None;
        m.visit_range(Bound::Unbounded, Bound::Unbounded, true, &mut |k, v| {
            if let Some(l) = &last {
                assert!(l.as_slice() < k);
            }
            assert_eq!(v.len(), 40);
            last = Some(k.to_vec());
            n += 1;
            true
        });
        assert!(n >= seen);
        seen = n;
    }
    writer.join().unwrap();
}

/// Lengths at either side of what half a word holds read back as written, inline and
/// outside the arena, by the key or by the value.
#[test]
fn lengths_of_every_width_read_back() {
    let m = bytewise();
    let mut cases: Vec<(Vec<u8>, Vec<u8>)> = vec![
        (vec![b'a'; 3], vec![1; 0]),
        (vec![b'b'; 100], vec![2; 30_000]),
        (vec![b'h'; 8191], vec![8; 8191]),
        (vec![b'i'; 8192], vec![9; 3]),
        (vec![b'j'; 5], vec![10; 8192]),
        (vec![b'c'; 65_535], vec![3; 1]),
        (vec![b'd'; 65_536], vec![4; 2]),
        (vec![b'e'; 1], vec![5; 65_535]),
        (vec![b'f'; 1], vec![6; 65_536]),
        (vec![b'g'; 70_000], vec![7; 70_000]),
    ];
    for (i, (k, v)) in cases.iter().enumerate() {
        m.add(i as u64 + 1, ValueType::Value, k, v).unwrap();
    }
    let got = all(&m);
    assert_eq!(got.len(), cases.len());
    cases.sort();
    for ((k, v), (gk, gv)) in cases.iter().zip(&got) {
        assert!(
            gk[..gk.len() - TAG_LEN] == k[..],
            "key of {} bytes",
            k.len()
        );
        assert!(gv == v, "value of {} bytes", v.len());
    }
    assert_eq!(backwards(&m), got);
}

/// The entries `added` (internal key and value) sorted, of equal internal keys only the
/// one added last.
fn newest_wins(added: &[(Vec<u8>, Vec<u8>)]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let icmp = InternalKeyComparator::bytewise();
    let mut v: Vec<_> = added.iter().enumerate().collect();
    v.sort_by(|a, b| icmp.compare(&a.1.0, &b.1.0).then(b.0.cmp(&a.0)));
    v.dedup_by(|later, kept| icmp.compare(&later.1.0, &kept.1.0) == Ordering::Equal);
    v.into_iter().map(|(_, e)| e.clone()).collect()
}

/// A version added again (a salvage reading two logs that hold it) replaces the one held,
/// wherever it is and whatever the heights of the two nodes: one entry, the later value;
/// keys in order still append after the last one was replaced.
#[test]
fn a_version_added_again_replaces_the_one_held() {
    let m = bytewise();
    let mut added = Vec::new();
    let mut add = |m: &LiveMemTable, key: &[u8], seq: u64, value: &[u8]| {
        let t = if seq % 11 == 0 {
            ValueType::Deletion
        } else {
            ValueType::Value
        };
        m.add(seq, t, key, value).unwrap();
        let mut k = Vec::new();
        append_internal_key(&mut k, key, seq, t).unwrap();
        added.push((k, value.to_vec()));
    };
    for round in 0..4u64 {
        for i in 0..3000u64 {
            // Keys in order; each round again over the same keys and sequence numbers,
            // some of them, the last included.
            if round > 0 && !(i % (round + 2) == 0 || i == 2999) {
                continue;
            }
            let key = format!("k{:06}", i);
            add(
                &m,
                key.as_bytes(),
                i % 500 + 1,
                format!("r{round}").as_bytes(),
            );
            if round > 0 && i % 3 == 0 {
                // And a new version after the last one, which appends.
                add(&m, format!("z{round}{i:06}").as_bytes(), 1, b"new");
            }
        }
    }
    let expected = newest_wins(&added);
    assert_eq!(m.len(), expected.len());
    assert_eq!(m.added(), added.len());
    assert_eq!(all(&m), expected);
    assert_eq!(backwards(&m), expected);
    assert_eq!(m.first(), expected.first().cloned());
    assert_eq!(m.last(), expected.last().cloned());
    for (k, v) in &expected {
        assert!(m.contains(k));
        let p = ParsedInternalKey::parse(k).unwrap();
        let found = m.lookup(&LookupKey::new(p.user_key, p.sequence).unwrap());
        assert_eq!(found.unwrap(), LookupResult::decided_by(&p, v));
    }
    assert!(!m.contains(&lookup_key(b"k000000", 9999).unwrap()));
}

/// As LevelDB's tags: past 2^56 - 1, sequence numbers of a batch lose their top bits.
#[test]
fn sequence_numbers_past_the_tag_lose_their_top_bits() {
    let m = bytewise();
    let mut batch = crate::write_batch::WriteBatchBuilder::new(MAX_SEQUENCE);
    batch.put(b"a", b"").put(b"b", b"");
    m.insert_batch(&WriteBatch::new(batch.as_bytes()).unwrap())
        .unwrap();
    let get = |k: &[u8], s| m.lookup(&LookupKey::new(k, s).unwrap()).unwrap();
    assert_eq!(
        get(b"a", MAX_SEQUENCE),
        LookupResult::Value {
            sequence: MAX_SEQUENCE,
            value: Vec::new()
        }
    );
    assert_eq!(
        get(b"b", 0),
        LookupResult::Value {
            sequence: 0,
            value: Vec::new()
        }
    );
}

/// The lookups of `keys` at every 97th sequence and at `top`.
fn lookups(m: &LiveMemTable, keys: &[Vec<u8>], top: u64) -> Vec<LookupResult> {
    keys.iter()
        .flat_map(|k| {
            (0..top)
                .step_by(97)
                .chain([top])
                .map(move |s| m.lookup(&LookupKey::new(k, s).unwrap()).unwrap())
        })
        .collect()
}

#[test]
fn a_key_filter_changes_no_lookup() {
    let m = bytewise();
    let mut keys: Vec<Vec<u8>> = Vec::new();
    let mut sequence = 0;
    for i in 0..2000u32 {
        let k = format!("key{:06}", i * 7 % 2000).into_bytes();
        sequence += 1;
        let kind = if i % 13 == 0 {
            ValueType::Deletion
        } else {
            ValueType::Value
        };
        m.add(sequence, kind, &k, &i.to_le_bytes()).unwrap();
        keys.push(k);
    }
    // A version kept outside the arena.
    sequence += 1;
    m.add(sequence, ValueType::Value, b"large", &vec![7; INLINE_BYTES])
        .unwrap();
    keys.extend([
        b"large".to_vec(),
        b"absent".to_vec(),
        b"key".to_vec(),
        Vec::new(),
    ]);
    keys.extend((0..500).map(|i| format!("key{:06}x", i).into_bytes()));
    let before = lookups(&m, &keys, sequence);
    let memory = m.memory_usage();
    m.build_key_filter();
    assert!(m.memory_usage() > memory, "the filter is counted");
    assert_eq!(lookups(&m, &keys, sequence), before);
    // Versions added after it are found through it.
    for (i, k) in [b"zebra".as_slice(), b"aardvark", b"key000003"]
        .iter()
        .enumerate()
    {
        sequence += 1;
        m.add(sequence, ValueType::Value, k, &[i as u8]).unwrap();
        let found = m.lookup(&LookupKey::new(k, sequence).unwrap()).unwrap();
        assert_eq!(found.into_value(), Some(vec![i as u8]));
    }
}

#[test]
fn no_key_filter_under_another_comparator() {
    let m = LiveMemTable::new(&(Arc::new(Reverse) as Arc<dyn Comparator>));
    m.add(1, ValueType::Value, b"a", b"1").unwrap();
    let memory = m.memory_usage();
    m.build_key_filter();
    assert_eq!(m.memory_usage(), memory);
    let found = m.lookup(&LookupKey::new(b"a", 1).unwrap()).unwrap();
    assert_eq!(found.into_value(), Some(b"1".to_vec()));
}

#[test]
fn a_writable_memtable_finds_every_key_through_its_filter() {
    // Sized for 64 keys, given 5,000: the filter fills up and admits more, never fewer.
    let user = Arc::new(BytewiseComparator) as Arc<dyn Comparator>;
    let m = LiveMemTable::for_writes(&user, 64 * FILTER_SIZING_ENTRY_BYTES, &BlockPool::new(0));
    assert!(
        m.memory_usage() > bytewise().memory_usage(),
        "the filter is there"
    );
    for i in 0..5000u64 {
        m.add(
            i + 1,
            ValueType::Value,
            format!("k{i}").as_bytes(),
            &i.to_le_bytes(),
        )
        .unwrap();
    }
    for i in 0..5000u64 {
        let get = |k: String| m.lookup(&LookupKey::new(k.as_bytes(), MAX_SEQUENCE).unwrap());
        assert_eq!(
            get(format!("k{i}")).unwrap().into_value(),
            Some(i.to_le_bytes().to_vec())
        );
        assert_eq!(get(format!("j{i}")).unwrap(), LookupResult::NotFound);
    }
}

/// Every level's nodes are in strictly increasing internal-key order, and every level's
/// nodes are on the level below.
fn check_levels(m: &LiveMemTable) {
    let mut below: Option<std::collections::HashSet<u32>> = None;
    for level in 0..MAX_HEIGHT {
        let mut nodes = Vec::new();
        let mut at = m.node(HEAD).next(level);
        while at != HEAD {
            nodes.push(at);
            at = m.node(at).next(level);
        }
        for pair in nodes.windows(2) {
            let (mut key, mut value) = (Vec::new(), Vec::new());
            m.read_entry(m.node(pair[1]), &mut key, &mut value);
            let order = m.compare(pair[0], &Probe::of(&key), &mut Vec::new());
            assert_eq!(order, Ordering::Less, "level {level} out of order");
        }
        if let Some(below) = &below {
            assert!(nodes.iter().all(|n| below.contains(n)), "level {level}");
        }
        below = Some(nodes.into_iter().collect());
    }
}

/// Operations of a batch: a key and its value, or `None` for a delete.
type Ops = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// A batch of `ops` from `sequence`.
fn batch_of(sequence: u64, ops: &Ops) -> Vec<u8> {
    let mut b = crate::write_batch::WriteBatchBuilder::new(sequence);
    for (key, value) in ops {
        match value {
            Some(v) => b.put(key, v),
            None => b.delete(key),
        };
    }
    b.as_bytes().to_vec()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 96, ..Default::default() })]

    /// Batches inserted sorted, each search from the last insert's splice, hold what the
    /// same operations added one at a time hold, copied or kept whole, and leave every
    /// level in order; a batch applied again (the same sequence numbers: a salvage reading
    /// a log twice) replaces its versions.
    #[test]
    fn sorted_batches_hold_what_single_inserts_hold(
        batches in proptest::collection::vec(
            (
                proptest::collection::vec(
                    (
                        proptest::collection::vec(0u8..4, 0..5),
                        proptest::option::of(proptest::collection::vec(proptest::prelude::any::<u8>(), 0..30)),
                    ),
                    0..80,
                ),
                0u8..4,
            ),
            1..8,
        )
    ) {
        let (sorted, shared, single) = (bytewise(), bytewise(), bytewise());
        let mut sequence = 1;
        let mut applied: Vec<(u64, Ops)> = Vec::new();
        for (ops, again) in batches {
            // One batch in four applies an earlier one's keys again at its sequence numbers.
            let (start, ops) = match applied.last() {
                Some((start, earlier)) if again == 0 => {
                    let values = earlier.iter().map(|(k, v)| (k.clone(), v.as_ref().map(|_| ops.len().to_le_bytes().to_vec())));
                    (*start, values.collect::<Vec<_>>())
                }
                _ => (sequence, ops),
            };
            let rep = batch_of(start, &ops);
            sorted.insert_batch(&WriteBatch::new(&rep).unwrap()).unwrap();
            shared.insert_shared_batch(Arc::new(rep.clone())).unwrap();
            for (i, (key, value)) in ops.iter().enumerate() {
                let (kind, v) = match value {
                    Some(v) => (ValueType::Value, v.as_slice()),
                    None => (ValueType::Deletion, &[][..]),
                };
                single.add(start + i as u64, kind, key, v).unwrap();
            }
            if start == sequence {
                sequence += ops.len() as u64;
            }
            applied.push((start, ops));
        }
        let expected = all(&single);
        proptest::prop_assert_eq!(&all(&sorted), &expected);
        proptest::prop_assert_eq!(&all(&shared), &expected);
        proptest::prop_assert_eq!(&backwards(&sorted), &expected);
        proptest::prop_assert_eq!(sorted.len(), single.len());
        proptest::prop_assert_eq!(sorted.approximate_bytes(), single.approximate_bytes());
        check_levels(&sorted);
        check_levels(&shared);
    }
}

/// Large batches of random keys go in sorted, in windows whose searches run together,
/// into a memtable already holding many versions: every level stays in order and lookups
/// find each key's newest version. The last batch applied again replaces its versions.
#[test]
fn a_large_random_batch_links_every_level_in_order() {
    let m = bytewise();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut key = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        format!("{:08}", x % 50_000).into_bytes()
    };
    let mut sequence = 1;
    let mut last = Vec::new();
    for _ in 0..20 {
        let ops: Vec<_> = (0..1000).map(|i| (key(), Some(vec![i as u8; 5]))).collect();
        last = batch_of(sequence, &ops);
        m.insert_batch(&WriteBatch::new(&last).unwrap()).unwrap();
        for (i, (k, v)) in ops.iter().enumerate() {
            let newest = ops[i + 1..].iter().all(|(later, _)| later != k);
            if newest {
                let found = m
                    .lookup(&LookupKey::new(k, sequence + 999).unwrap())
                    .unwrap();
                assert_eq!(found.into_value().as_ref(), v.as_ref());
            }
        }
        sequence += 1000;
    }
    check_levels(&m);
    assert_eq!(m.added(), 20_000);
    let before = all(&m);
    m.insert_batch(&WriteBatch::new(&last).unwrap()).unwrap();
    check_levels(&m);
    assert_eq!(all(&m), before);
    assert_eq!(m.len(), 20_000);
}
