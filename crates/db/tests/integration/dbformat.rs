//! Tables of internal keys (LevelDB's `.ldb` files): random versions of random user keys
//! written in internal-key order, then every entry and every lookup at every interesting
//! snapshot compared with a model; separators checked against the order; malformed keys.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use leveltable_db::dbformat::{
    self, InternalFilterPolicy, InternalKeyComparator, LookupResult, MAX_SEQUENCE,
    ParsedInternalKey, ValueType, append_internal_key, ldb_build_options, ldb_read_options,
    lookup_key,
};
use leveltable_db::internal_table::{InternalEntry, InternalTable};
use leveltable_table::{
    BloomFilterPolicy, BuildOptions, BytewiseComparator, Comparator, Compression, Error,
    ReadOptions, Table, TableBuilder,
};
use proptest::prelude::*;

use crate::common::comparators::Reverse;

/// A user key's versions: sequence → (type, value). Newest last in the map's order.
type Versions = BTreeMap<u64, (ValueType, Vec<u8>)>;
type Model = BTreeMap<Vec<u8>, Versions>;

#[derive(Debug, Clone)]
struct Params {
    block_size: usize,
    restart_interval: usize,
    compression: Compression,
    bloom_bits: Option<usize>,
    reverse: bool,
}

fn params() -> impl Strategy<Value = Params> {
    (
        prop::sample::select(vec![1usize, 64, 256, 1024, 4096]),
        1usize..=16,
        any::<bool>(),
        prop::option::of(1usize..=20),
        prop::bool::weighted(0.2),
    )
        .prop_map(
            |(block_size, restart_interval, snappy, bloom_bits, reverse)| Params {
                block_size,
                restart_interval,
                compression: if snappy {
                    Compression::Snappy
                } else {
                    Compression::None
                },
                bloom_bits,
                reverse,
            },
        )
}

/// User keys over a small alphabet (shared prefixes, keys that are prefixes of others,
/// 0xff bytes for the separators), each with 1 to 4 versions of distinct sequence numbers.
fn model() -> impl Strategy<Value = Model> {
    let user_key = prop::collection::vec(prop::sample::select(b"ab\x00\xff".to_vec()), 0..10);
    let version = (
        prop::bool::weighted(0.7),
        prop::collection::vec(any::<u8>(), 0..30),
    );
    let sequence = prop_oneof![
        0u64..200,
        Just(MAX_SEQUENCE),
        (MAX_SEQUENCE - 300)..MAX_SEQUENCE,
        0u64..=MAX_SEQUENCE,
    ];
    prop::collection::btree_map(
        user_key,
        prop::collection::btree_map(sequence, version, 1..5),
        0..120,
    )
    .prop_map(|m| {
        m.into_iter()
            .map(|(k, versions)| {
                let versions = versions
                    .into_iter()
                    .map(|(seq, (is_value, value))| {
                        if is_value {
                            (seq, (ValueType::Value, value))
                        } else {
                            (seq, (ValueType::Deletion, Vec::new()))
                        }
                    })
                    .collect();
                (k, versions)
            })
            .collect()
    })
}

fn user_comparator(p: &Params) -> Arc<dyn Comparator> {
    if p.reverse {
        Arc::new(Reverse)
    } else {
        Arc::new(BytewiseComparator)
    }
}

/// The model's entries in file order: user keys under the user comparator, newest first.
fn file_order(model: &Model, p: &Params) -> Vec<InternalEntry> {
    let mut user_keys: Vec<&Vec<u8>> = model.keys().collect();
    if p.reverse {
        user_keys.reverse();
    }
    let mut entries = Vec::new();
    for k in user_keys {
        for (&sequence, (value_type, value)) in model[k].iter().rev() {
            entries.push(InternalEntry {
                user_key: k.clone(),
                sequence,
                value_type: *value_type,
                value: value.clone(),
            });
        }
    }
    entries
}

fn build(entries: &[InternalEntry], options: BuildOptions) -> Vec<u8> {
    let mut builder = TableBuilder::new(Vec::new(), options).unwrap();
    let mut key = Vec::new();
    for e in entries {
        key.clear();
        e.key().encode_to(&mut key).unwrap();
        builder.add(&key, &e.value).unwrap();
    }
    builder.finish().unwrap();
    builder.into_inner()
}

fn build_options(p: &Params) -> BuildOptions {
    let mut options = BuildOptions::default()
        .comparator(Arc::new(InternalKeyComparator::new(user_comparator(p))))
        .block_size(p.block_size)
        .block_restart_interval(p.restart_interval)
        .compression(p.compression);
    if let Some(bits) = p.bloom_bits {
        options = options.filter_policy(InternalFilterPolicy::new(BloomFilterPolicy::new(bits)));
    }
    options
}

fn open(bytes: Vec<u8>, p: &Params) -> InternalTable<Vec<u8>> {
    if p.reverse {
        let mut options = ReadOptions::default()
            .comparator(Arc::new(InternalKeyComparator::new(Arc::new(Reverse))));
        if p.bloom_bits.is_some() {
            options = options.filter_policy(InternalFilterPolicy::new(BloomFilterPolicy::new(10)));
        }
        InternalTable::from_table(Table::open(bytes, options).unwrap()).unwrap()
    } else {
        InternalTable::open(bytes).unwrap()
    }
}

/// What LevelDB answers for `user_key` at `snapshot` from the model.
fn expected(model: &Model, user_key: &[u8], snapshot: u64) -> LookupResult {
    let Some(versions) = model.get(user_key) else {
        return LookupResult::NotFound;
    };
    match versions.range(..=snapshot).next_back() {
        None => LookupResult::NotFound,
        Some((&sequence, (ValueType::Value, value))) => LookupResult::Value {
            sequence,
            value: value.clone(),
        },
        Some((&sequence, (ValueType::Deletion, _))) => LookupResult::Deleted { sequence },
    }
}

fn check(model: &Model, probes: &[Vec<u8>], p: &Params) {
    let entries = file_order(model, p);
    let bytes = build(&entries, build_options(p));
    let table = open(bytes, p);
    let summary = table.table().verify().unwrap();
    assert_eq!(summary.entries, entries.len() as u64);

    let got: Vec<InternalEntry> = table.entries().map(Result::unwrap).collect();
    assert_eq!(got, entries);
    let mut back: Vec<InternalEntry> = table.entries().rev().map(Result::unwrap).collect();
    back.reverse();
    assert_eq!(back, entries);

    for (user_key, versions) in model {
        let mut snapshots = vec![0, MAX_SEQUENCE];
        for &s in versions.keys() {
            snapshots.extend([
                s,
                s.saturating_sub(1),
                s.saturating_add(1).min(MAX_SEQUENCE),
            ]);
        }
        for s in snapshots {
            assert_eq!(
                table.get_at(user_key, s).unwrap(),
                expected(model, user_key, s),
                "{user_key:x?} at {s}"
            );
        }
        assert_eq!(
            table.get(user_key).unwrap(),
            expected(model, user_key, MAX_SEQUENCE)
        );
    }
    for probe in probes {
        for s in [0, 100, MAX_SEQUENCE] {
            assert_eq!(
                table.get_at(probe, s).unwrap(),
                expected(model, probe, s),
                "probe {probe:x?} at {s}"
            );
        }
    }
}

/// A user key over a few bytes around the separator edge cases, a sequence, value or not.
fn key_parts() -> impl Strategy<Value = (Vec<u8>, u64, bool)> {
    (
        prop::collection::vec(prop::sample::select(b"ab\x00\x01\xfe\xff".to_vec()), 0..8),
        0u64..=MAX_SEQUENCE,
        any::<bool>(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn tables_of_versions_answer_like_the_model(
        model in model(),
        probes in prop::collection::vec(
            prop::collection::vec(prop::sample::select(b"ab\x00\xff\x01".to_vec()), 0..11),
            0..30,
        ),
        p in params(),
    ) {
        check(&model, &probes, &p);
    }

    #[test]
    fn separators_stay_between_their_keys(
        a in key_parts(),
        b in key_parts(),
    ) {
        let key = |(user, seq, is_value): &(Vec<u8>, u64, bool)| {
            let t = if *is_value { ValueType::Value } else { ValueType::Deletion };
            ParsedInternalKey::new(user, *seq, t).encode().unwrap()
        };
        let cmp = InternalKeyComparator::bytewise();
        let (mut start, limit) = (key(&a), key(&b));
        if cmp.compare(&start, &limit) == Ordering::Less {
            let original = start.clone();
            cmp.find_shortest_separator(&mut start, &limit);
            prop_assert!(cmp.compare(&original, &start) != Ordering::Greater);
            prop_assert!(cmp.compare(&start, &limit) == Ordering::Less);
            prop_assert!(start.len() <= original.len());
            prop_assert!(ParsedInternalKey::parse(&start).is_ok());
        }
        let mut successor = limit.clone();
        cmp.find_short_successor(&mut successor);
        prop_assert!(cmp.compare(&limit, &successor) != Ordering::Greater);
        prop_assert!(successor.len() <= limit.len());
    }
}

#[test]
fn several_blocks_many_versions_with_and_without_filter() {
    // Many versions of few keys, small blocks: versions of one user key span blocks, so
    // separators between equal user keys and lookups that land at a block's end are hit.
    let mut model = Model::new();
    let mut seq = 1;
    for round in 0..40u32 {
        for k in 0..25u32 {
            if (k + round) % 3 == 0 {
                let v = if (k * round) % 7 == 0 {
                    (ValueType::Deletion, Vec::new())
                } else {
                    (ValueType::Value, format!("v{k}.{round}").into_bytes())
                };
                model
                    .entry(format!("key{k:03}").into_bytes())
                    .or_default()
                    .insert(seq, v);
                seq += 1;
            }
        }
    }
    let probes: Vec<Vec<u8>> = (0..60)
        .map(|i| format!("key{i:03}x").into_bytes())
        .collect();
    for bloom_bits in [None, Some(10)] {
        for block_size in [1, 100, 4096] {
            let p = Params {
                block_size,
                restart_interval: 4,
                compression: Compression::None,
                bloom_bits,
                reverse: false,
            };
            check(&model, &probes, &p);
        }
    }
}

#[test]
fn the_filter_spares_data_blocks_for_absent_user_keys() {
    let mut key = Vec::new();
    let mut builder = TableBuilder::new(Vec::new(), ldb_build_options(Some(10))).unwrap();
    for i in 0..2000u32 {
        key.clear();
        append_internal_key(
            &mut key,
            format!("user{i:05}").as_bytes(),
            u64::from(i) + 1,
            ValueType::Value,
        )
        .unwrap();
        builder.add(&key, b"value").unwrap();
    }
    builder.finish().unwrap();
    let table = InternalTable::open(builder.into_inner()).unwrap();
    assert_eq!(
        table.table().properties().filter_policy.as_deref(),
        Some("leveldb.BuiltinBloomFilter2")
    );
    assert_eq!(
        table.table().properties().filters[0].policy_name,
        "leveldb.BuiltinBloomFilter2"
    );
    // Every present key at every snapshot passes the filter (the filter sees user keys, not
    // the lookup key's tag).
    for i in (0..2000u32).step_by(37) {
        let user_key = format!("user{i:05}");
        assert!(matches!(
            table.get(user_key.as_bytes()).unwrap(),
            LookupResult::Value { .. }
        ));
        assert_eq!(
            table.get_at(user_key.as_bytes(), u64::from(i)).unwrap(),
            LookupResult::NotFound,
            "older than the only version"
        );
    }
    table.table().reset_counters();
    for i in 0..1000u32 {
        let absent = format!("user{i:05}.absent");
        assert_eq!(
            table.get(absent.as_bytes()).unwrap(),
            LookupResult::NotFound
        );
    }
    let counters = table.table().counters();
    assert_eq!(counters.filter_checks, 1000);
    assert!(
        counters.filter_negatives > 950,
        "10 bits per key rule out about 99%: {counters:?}"
    );
    assert_eq!(
        counters.data_blocks_read,
        counters.filter_checks - counters.filter_negatives
    );
}

/// A table whose keys pass the internal comparator but are not all internal keys.
fn table_with_raw_keys(keys: &[&[u8]]) -> InternalTable<Vec<u8>> {
    let options = ldb_build_options(Some(10)).compression(Compression::None);
    let mut builder = TableBuilder::new(Vec::new(), options).unwrap();
    for k in keys {
        builder.add(k, b"v").unwrap();
    }
    builder.finish().unwrap();
    InternalTable::open(builder.into_inner()).unwrap()
}

#[test]
fn keys_that_do_not_parse_are_corruption() {
    let good = lookup_key(b"a", 5).unwrap();
    let unknown_type = b"b\x02\x05\0\0\0\0\0\0".to_vec();
    let table = table_with_raw_keys(&[&good, &unknown_type]);
    let items: Vec<_> = table.entries().collect();
    assert_eq!(items.len(), 2, "the error ends the iteration");
    assert_eq!(items[0].as_ref().unwrap().user_key, b"a");
    let err = items[1].as_ref().unwrap_err();
    assert_eq!(
        err.to_string(),
        "table: corrupt internal key (value type 2) at offset 0"
    );
    assert!(err.is_corruption());
    // The lookup that lands on the bad key reports it, as LevelDB's "corrupted key".
    let err = table.get(b"b").unwrap_err();
    assert_eq!(
        err.to_string(),
        "table: corrupt internal key (value type 2) at offset 0"
    );
    assert_eq!(
        table.get(b"a").unwrap(),
        LookupResult::Value {
            sequence: 5,
            value: b"v".to_vec()
        }
    );
    // From the back, the bad key comes first.
    let mut back = table.entries().rev();
    assert!(back.next().unwrap().is_err());
    assert!(back.next().is_none());

    // Keys shorter than a tag sort as a user key with tag 0, so they can be written; reading
    // them reports what they are.
    let table = table_with_raw_keys(&[b"abc", b"abd"]);
    let err = table.entries().next().unwrap().unwrap_err();
    assert_eq!(
        err.to_string(),
        "table: corrupt internal key (3 bytes, shorter than its tag) at offset 0"
    );
    assert!(table.get(b"abc").is_err());
    table.table().verify().unwrap();
}

#[test]
fn misuse_is_an_error() {
    let table = InternalTable::open(build(&[], ldb_build_options(None))).unwrap();
    assert_eq!(table.get(b"x").unwrap(), LookupResult::NotFound);
    assert_eq!(table.entries().count(), 0);
    let err = table.get_at(b"x", MAX_SEQUENCE + 1).unwrap_err();
    assert_eq!(
        err.to_string(),
        "table: invalid argument: sequence number 72057594037927936 exceeds 2^56 - 1"
    );

    let bytewise = Table::open(table.into_table().into_source(), ReadOptions::default()).unwrap();
    let err = InternalTable::from_table(bytewise).unwrap_err();
    assert_eq!(
        err.to_string(),
        "table: invalid argument: a table of internal keys needs \
         leveldb.InternalKeyComparator, not leveldb.BytewiseComparator"
    );

    // Out of internal order: the same user key with an older version first.
    let mut builder = TableBuilder::new(Vec::new(), ldb_build_options(None)).unwrap();
    builder.add(&lookup_key(b"k", 1).unwrap(), b"").unwrap();
    let err = builder.add(&lookup_key(b"k", 2).unwrap(), b"").unwrap_err();
    assert!(matches!(err, Error::KeyOutOfOrder { .. }), "{err}");
}

#[test]
fn read_options_find_no_filter_in_unfiltered_files() {
    let entries = [InternalEntry {
        user_key: b"k".to_vec(),
        sequence: 1,
        value_type: ValueType::Value,
        value: b"v".to_vec(),
    }];
    let table = Table::open(build(&entries, ldb_build_options(None)), ldb_read_options()).unwrap();
    assert_eq!(table.properties().filter_policy, None);
    let table = InternalTable::from_table(table).unwrap();
    assert_eq!(
        table.get(b"k").unwrap().into_value().as_deref(),
        Some(&b"v"[..])
    );
}

/// The "Internal keys" section of docs/format.md quotes these bytes.
#[test]
fn documented_examples_hold() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/format.md");
    let doc = std::fs::read_to_string(path).expect("docs/format.md next to the workspace");
    let hex = |bytes: &[u8]| {
        bytes
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let key = ParsedInternalKey::new(b"foo", 0x1234, ValueType::Value)
        .encode()
        .unwrap();
    assert!(doc.contains(&format!("`{}`", hex(&key))), "{}", hex(&key));
    let deletion = ParsedInternalKey::new(b"foo", 0x1235, ValueType::Deletion)
        .encode()
        .unwrap();
    assert!(
        doc.contains(&format!("`{}`", hex(&deletion))),
        "{}",
        hex(&deletion)
    );
    let seek = lookup_key(b"foo", dbformat::MAX_SEQUENCE).unwrap();
    assert!(doc.contains(&format!("`{}`", hex(&seek))), "{}", hex(&seek));

    let cmp = InternalKeyComparator::bytewise();
    let mut sep = ParsedInternalKey::new(b"the quick brown fox", 100, ValueType::Value)
        .encode()
        .unwrap();
    let limit = ParsedInternalKey::new(b"the who", 200, ValueType::Value)
        .encode()
        .unwrap();
    cmp.find_shortest_separator(&mut sep, &limit);
    assert_eq!(sep, lookup_key(b"the r", MAX_SEQUENCE).unwrap());
    assert!(doc.contains(&format!("`{}`", hex(&sep))), "{}", hex(&sep));
}
