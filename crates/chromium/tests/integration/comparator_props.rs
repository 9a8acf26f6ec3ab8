//! Property tests of `idb_cmp1` on random keys: a total order on well-formed keys (antisymmetric,
//! transitive), agreeing with the IndexedDB specification's order of the decoded keys, and
//! antisymmetric and panic-free on arbitrary bytes.

use std::cmp::Ordering;

use leveltable_chromium::coding::{encode_string_with_length, encode_varint};
use leveltable_chromium::comparator::compare_keys;
use leveltable_chromium::{IdbCmp1, IdbKey, IdbRecordKey, KeyPrefix};
use leveltable_table::Comparator;
use proptest::prelude::*;

fn number() -> impl Strategy<Value = f64> {
    prop_oneof![
        prop::sample::select(vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
            f64::MAX,
            1e300,
            -1e-300,
        ]),
        any::<f64>().prop_filter("keys are never NaN", |f| !f.is_nan()),
        (-5i32..5).prop_map(f64::from),
    ]
}

fn key() -> impl Strategy<Value = IdbKey> {
    let leaf = prop_oneof![
        number().prop_map(IdbKey::Number),
        number().prop_map(IdbKey::Date),
        prop::collection::vec(
            prop_oneof![0u16..4, 0x61u16..0x64, 0xd800u16..0xd802, Just(0xffff)],
            0..4
        )
        .prop_map(IdbKey::String),
        prop::collection::vec(prop_oneof![0u8..3, 254u8..=255], 0..4).prop_map(IdbKey::Binary),
        Just(IdbKey::Min),
        Just(IdbKey::Max),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop::collection::vec(inner, 0..4).prop_map(IdbKey::Array)
    })
}

/// A well-formed key of any kind Chromium writes.
fn record_key() -> impl Strategy<Value = Vec<u8>> {
    let ids = (1i64..3, 1i64..3);
    prop_oneof![
        // Object store data, exists and blob entries.
        (ids.clone(), prop::sample::select(vec![1i64, 2, 3]), key()).prop_map(
            |((db, os), index, k)| {
                let mut out = KeyPrefix {
                    database_id: db,
                    object_store_id: os,
                    index_id: index,
                }
                .encode()
                .unwrap();
                k.encode(&mut out);
                out
            }
        ),
        // Index data with and without sequence number and primary key.
        (
            ids,
            30i64..32,
            key(),
            prop::option::of((0u64..3, prop::option::of(key())))
        )
            .prop_map(|((db, os), index, k, tail)| {
                let mut out = KeyPrefix {
                    database_id: db,
                    object_store_id: os,
                    index_id: index,
                }
                .encode()
                .unwrap();
                k.encode(&mut out);
                if let Some((seq, primary)) = tail {
                    encode_varint(seq, &mut out);
                    if let Some(p) = primary {
                        p.encode(&mut out);
                    }
                }
                out
            }),
        metadata_key(),
    ]
}

fn name() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["", "a", "ab", "b", "é", "日本"]).prop_map(String::from)
}

fn metadata_key() -> impl Strategy<Value = Vec<u8>> {
    let global = KeyPrefix {
        database_id: 0,
        object_store_id: 0,
        index_id: 0,
    }
    .encode()
    .unwrap();
    let g = global.clone();
    let g2 = global.clone();
    let db = |id: i64| {
        KeyPrefix {
            database_id: id,
            object_store_id: 0,
            index_id: 0,
        }
        .encode()
        .unwrap()
    };
    prop_oneof![
        (0u8..7).prop_map(move |t| [global.clone(), vec![t]].concat()),
        (0u64..300).prop_map(move |id| {
            let mut out = [g.clone(), vec![100]].concat();
            encode_varint(id, &mut out);
            out
        }),
        (name(), name()).prop_map(move |(origin, n)| {
            let mut out = [g2.clone(), vec![201]].concat();
            encode_string_with_length(&origin, &mut out);
            encode_string_with_length(&n, &mut out);
            out
        }),
        (1i64..3, 0u8..6).prop_map(move |(id, t)| [db(id), vec![t]].concat()),
        (1i64..3, 1u64..200, 0u8..8).prop_map(move |(id, os, t)| {
            let mut out = [db(id), vec![50]].concat();
            encode_varint(os, &mut out);
            out.push(t);
            out
        }),
        (1i64..3, 1u64..3, 30u64..200, 0u8..4).prop_map(move |(id, os, ix, t)| {
            let mut out = [db(id), vec![100]].concat();
            encode_varint(os, &mut out);
            encode_varint(ix, &mut out);
            out.push(t);
            out
        }),
        (1i64..3, 1u64..3, prop::option::of(30u64..200)).prop_map(move |(id, os, ix)| {
            let mut out = [db(id), vec![if ix.is_some() { 151 } else { 150 }]].concat();
            encode_varint(os, &mut out);
            if let Some(ix) = ix {
                encode_varint(ix, &mut out);
            }
            out
        }),
        (1i64..3, name()).prop_map(move |(id, n)| {
            let mut out = [db(id), vec![200]].concat();
            encode_string_with_length(&n, &mut out);
            out
        }),
        (1i64..3, 1u64..3, name()).prop_map(move |(id, os, n)| {
            let mut out = [db(id), vec![201]].concat();
            encode_varint(os, &mut out);
            encode_string_with_length(&n, &mut out);
            out
        }),
    ]
}

proptest! {
    #[test]
    fn well_formed_keys_are_decided_by_chromiums_rules(a in record_key(), b in record_key()) {
        prop_assert!(compare_keys(&a, &b).is_some(), "{:x?} vs {:x?}", a, b);
        IdbRecordKey::decode(&a).unwrap();
    }

    #[test]
    fn the_order_is_antisymmetric(a in record_key(), b in record_key()) {
        prop_assert_eq!(IdbCmp1.compare(&a, &b), IdbCmp1.compare(&b, &a).reverse());
    }

    #[test]
    fn the_order_is_antisymmetric_on_arbitrary_bytes(
        a in prop::collection::vec(any::<u8>(), 0..24),
        b in prop::collection::vec(any::<u8>(), 0..24),
    ) {
        prop_assert_eq!(IdbCmp1.compare(&a, &b), IdbCmp1.compare(&b, &a).reverse());
        prop_assert_eq!(IdbCmp1.compare(&a, &a), Ordering::Equal);
        let _ = IdbRecordKey::decode(&a);
        let _ = IdbKey::decode(&a);
    }

    #[test]
    fn the_order_is_transitive(mut keys in prop::collection::vec(record_key(), 3..12)) {
        // Sorting and then finding every pair in order checks transitivity on every triple.
        keys.sort_by(|a, b| IdbCmp1.compare(a, b));
        for i in 0..keys.len() {
            for j in i + 1..keys.len() {
                prop_assert_ne!(IdbCmp1.compare(&keys[i], &keys[j]), Ordering::Greater);
            }
        }
    }

    #[test]
    fn record_keys_are_ordered_as_the_specification_orders_the_decoded_keys(
        a in key(), b in key(),
    ) {
        let prefix = KeyPrefix { database_id: 1, object_store_id: 1, index_id: 1 }.encode().unwrap();
        let ka = [prefix.clone(), a.encoded()].concat();
        let kb = [prefix, b.encoded()].concat();
        prop_assert_eq!(IdbCmp1.compare(&ka, &kb), a.spec_cmp(&b), "{:?} vs {:?}", a, b);
        prop_assert_eq!(IdbKey::decode(&a.encoded()).unwrap(), a);
    }

    #[test]
    fn index_entries_order_by_index_key_then_primary_key_then_sequence(
        ka in key(), kb in key(), pa in key(), pb in key(), sa in 0u64..3, sb in 0u64..3,
    ) {
        let prefix = KeyPrefix { database_id: 1, object_store_id: 1, index_id: 30 }.encode().unwrap();
        let entry = |k: &IdbKey, s: u64, p: &IdbKey| {
            let mut out = prefix.clone();
            k.encode(&mut out);
            encode_varint(s, &mut out);
            p.encode(&mut out);
            out
        };
        let want = ka.spec_cmp(&kb).then(pa.spec_cmp(&pb)).then(sa.cmp(&sb));
        prop_assert_eq!(IdbCmp1.compare(&entry(&ka, sa, &pa), &entry(&kb, sb, &pb)), want);
    }

    #[test]
    fn prefixes_order_by_database_then_store_then_index(
        a in (0i64..300, 0i64..300, 0i64..70000),
        b in (0i64..300, 0i64..300, 0i64..70000),
    ) {
        let pa = KeyPrefix { database_id: a.0, object_store_id: a.1, index_id: a.2 };
        let pb = KeyPrefix { database_id: b.0, object_store_id: b.1, index_id: b.2 };
        let (da, _) = KeyPrefix::decode_prefix(&pa.encode().unwrap()).unwrap();
        prop_assert_eq!(da, pa);
        prop_assert_eq!(pa.cmp_ids(&pb), a.cmp(&b));
    }
}

#[test]
fn the_comparator_leaves_keys_unshortened() {
    let mut start = b"\x00\x00\x00\x00\x01".to_vec();
    IdbCmp1.find_shortest_separator(&mut start, b"\x00\x00\x00\x00\x02");
    assert_eq!(start, b"\x00\x00\x00\x00\x01");
    let mut key = b"\x00\x00\x00\x00\x01".to_vec();
    IdbCmp1.find_short_successor(&mut key);
    assert_eq!(key, b"\x00\x00\x00\x00\x01");
    assert_eq!(IdbCmp1.name(), "idb_cmp1");
}

#[test]
fn keys_chromium_cannot_decode_are_ordered_bytewise_never_equal() {
    // Index id 5 names no kind of key: Chromium answers "equal"; the order is bytewise.
    let a = KeyPrefix {
        database_id: 1,
        object_store_id: 1,
        index_id: 5,
    }
    .encode()
    .unwrap();
    let b = [a.clone(), vec![1]].concat();
    assert_eq!(compare_keys(&a, &b), None);
    assert_eq!(IdbCmp1.compare(&a, &b), Ordering::Less);
    // A prefix whose lengths run past the key's end.
    assert_eq!(compare_keys(&[0xff], &[0xfe]), None);
    assert_eq!(IdbCmp1.compare(&[0xff], &[0xfe]), Ordering::Greater);
    // An unknown key type byte in a record key.
    let p = KeyPrefix {
        database_id: 1,
        object_store_id: 1,
        index_id: 1,
    }
    .encode()
    .unwrap();
    let bad = [p.clone(), vec![9]].concat();
    let good = [p.clone(), IdbKey::Number(1.0).encoded()].concat();
    assert_eq!(compare_keys(&bad, &good), None);
    assert_ne!(IdbCmp1.compare(&bad, &good), Ordering::Equal);
}

#[test]
fn records_with_nothing_after_the_prefix_sort_first_as_in_chromium() {
    let p = KeyPrefix {
        database_id: 1,
        object_store_id: 1,
        index_id: 1,
    }
    .encode()
    .unwrap();
    let with_key = [p.clone(), IdbKey::Min.encoded()].concat();
    assert_eq!(compare_keys(&p, &with_key), Some(Ordering::Less));
    assert_eq!(compare_keys(&p, &p), Some(Ordering::Equal));
}

#[test]
fn simple_metadata_compares_equal_past_the_type_byte_as_in_chromium() {
    // Chromium ignores anything after the type byte of the simple global metadata keys.
    let g = KeyPrefix {
        database_id: 0,
        object_store_id: 0,
        index_id: 0,
    }
    .encode()
    .unwrap();
    let a = [g.clone(), vec![0]].concat();
    let b = [g.clone(), vec![0, 7]].concat();
    assert_eq!(compare_keys(&a, &b), Some(Ordering::Equal));
    // The scopes keys compare the rest bytewise.
    let s1 = [g.clone(), vec![50, 1]].concat();
    let s2 = [g, vec![50, 2]].concat();
    assert_eq!(compare_keys(&s1, &s2), Some(Ordering::Less));
}

#[test]
fn prefixes_with_ids_chromium_cannot_encode_are_refused() {
    let p = |database_id, object_store_id, index_id| KeyPrefix {
        database_id,
        object_store_id,
        index_id,
    };
    assert!(p(-1, 1, 1).encode().is_err());
    assert!(p(1, -1, 1).encode().is_err());
    assert!(p(1, 1, 1 << 32).encode().is_err());
    let widest = p(i64::MAX, i64::MAX, u32::MAX.into()).encode().unwrap();
    assert_eq!(widest[0], 0xff);
    assert_eq!(
        KeyPrefix::decode_prefix(&widest).unwrap().0,
        p(i64::MAX, i64::MAX, u32::MAX.into())
    );
}

#[test]
fn index_key_comparison_ignores_the_primary_key() {
    use leveltable_chromium::comparator::compare_index_keys;
    let prefix = KeyPrefix {
        database_id: 1,
        object_store_id: 1,
        index_id: 30,
    }
    .encode()
    .unwrap();
    let entry = |primary: f64| {
        let mut out = prefix.clone();
        IdbKey::string("k").encode(&mut out);
        encode_varint(0, &mut out);
        IdbKey::Number(primary).encode(&mut out);
        out
    };
    assert_eq!(compare_keys(&entry(1.0), &entry(2.0)), Some(Ordering::Less));
    assert_eq!(
        compare_index_keys(&entry(1.0), &entry(2.0)),
        Some(Ordering::Equal)
    );
}

#[test]
fn database_names_order_by_origin_then_name_in_utf16_code_units() {
    let key = |origin: &str, name: &str| {
        let mut out = KeyPrefix {
            database_id: 0,
            object_store_id: 0,
            index_id: 0,
        }
        .encode()
        .unwrap();
        out.push(201);
        encode_string_with_length(origin, &mut out);
        encode_string_with_length(name, &mut out);
        out
    };
    assert_eq!(
        IdbCmp1.compare(&key("a", "z"), &key("b", "a")),
        Ordering::Less
    );
    assert_eq!(
        IdbCmp1.compare(&key("a", "b"), &key("a", "ab")),
        Ordering::Greater
    );
    // U+FF5E sorts before U+1F600 by code point (and in UTF-8), after it by UTF-16 code unit
    // (0xFF5E > 0xD83D).
    assert_eq!(
        IdbCmp1.compare(&key("a", "\u{ff5e}"), &key("a", "\u{1f600}")),
        Ordering::Greater
    );
}
