//! Tests of internal keys, the internal comparator and filter policy, and the options.

use super::*;

fn ikey(user_key: &[u8], sequence: u64, value_type: ValueType) -> Vec<u8> {
    ParsedInternalKey::new(user_key, sequence, value_type)
        .encode()
        .unwrap()
}

fn shorten(start: &[u8], limit: &[u8]) -> Vec<u8> {
    let mut s = start.to_vec();
    InternalKeyComparator::bytewise().find_shortest_separator(&mut s, limit);
    s
}

fn successor(key: &[u8]) -> Vec<u8> {
    let mut k = key.to_vec();
    InternalKeyComparator::bytewise().find_short_successor(&mut k);
    k
}

use ValueType::{Deletion, Value};

#[test]
fn encode_and_parse_round_trip() {
    let sequences = [
        0,
        1,
        2,
        (1 << 8) - 1,
        1 << 8,
        (1 << 8) + 1,
        (1 << 16) - 1,
        1 << 16,
        (1 << 32) + 1,
        MAX_SEQUENCE,
    ];
    for user_key in [&b""[..], b"k", b"hello", b"longggggggggggggggggggggg"] {
        for &sequence in &sequences {
            for value_type in [Value, Deletion] {
                let key = ikey(user_key, sequence, value_type);
                assert_eq!(key.len(), user_key.len() + TAG_LEN);
                let parsed = ParsedInternalKey::parse(&key).unwrap();
                assert_eq!(
                    parsed,
                    ParsedInternalKey::new(user_key, sequence, value_type)
                );
                assert_eq!(extract_user_key(&key), Some(user_key));
                assert_eq!(parsed.tag().unwrap(), sequence << 8 | value_type as u64);
            }
        }
    }
}

#[test]
fn tag_bytes_are_little_endian() {
    assert_eq!(
        ikey(b"foo", 0x0102_0304, Value),
        b"foo\x01\x04\x03\x02\x01\x00\x00\x00"
    );
    assert_eq!(ikey(b"", 5, Deletion), [0x00, 5, 0, 0, 0, 0, 0, 0]);
    assert_eq!(
        lookup_key(b"k", MAX_SEQUENCE).unwrap(),
        b"k\x01\xff\xff\xff\xff\xff\xff\xff"
    );
}

#[test]
fn malformed_keys_are_refused() {
    assert_eq!(
        ParsedInternalKey::parse(b"bar"),
        Err(InternalKeyError::TooShort { len: 3 })
    );
    assert_eq!(
        ParsedInternalKey::parse(b"k\x02\0\0\0\0\0\0\0"),
        Err(InternalKeyError::UnknownType { value_type: 2 })
    );
    assert_eq!(
        ParsedInternalKey::parse(b"\xff\xff\xff\xff\xff\xff\xff\xff"),
        Err(InternalKeyError::UnknownType { value_type: 0xff })
    );
    assert_eq!(
        InternalKeyError::TooShort { len: 3 }.to_string(),
        "internal key of 3 bytes is shorter than its 8-byte tag"
    );
    assert_eq!(
        InternalKeyError::UnknownType { value_type: 2 }.to_string(),
        "internal key has unknown value type 2"
    );
    assert_eq!(extract_user_key(b"1234567"), None);
    assert_eq!(extract_user_key(b"12345678"), Some(&b""[..]));
}

#[test]
fn sequences_beyond_56_bits_are_refused() {
    let err = pack_tag(MAX_SEQUENCE + 1, Value).unwrap_err();
    assert_eq!(
        err.to_string(),
        "table: invalid argument: sequence number 72057594037927936 exceeds 2^56 - 1"
    );
    let mut dst = b"keep".to_vec();
    assert!(append_internal_key(&mut dst, b"k", u64::MAX, Deletion).is_err());
    assert_eq!(dst, b"keep", "dst unchanged on error");
    assert!(lookup_key(b"k", MAX_SEQUENCE + 1).is_err());
    assert!(LookupKey::new(b"k", MAX_SEQUENCE + 1).is_err());
    assert!(
        ParsedInternalKey::new(b"k", MAX_SEQUENCE + 1, Value)
            .encode()
            .is_err()
    );
}

#[test]
fn order_is_user_key_then_newest_first() {
    let cmp = InternalKeyComparator::bytewise();
    assert_eq!(cmp.name(), "leveldb.InternalKeyComparator");
    let sorted = [
        ikey(b"", 0, Value),
        ikey(b"a", MAX_SEQUENCE, Value),
        ikey(b"a", 100, Value),
        ikey(b"a", 100, Deletion),
        ikey(b"a", 99, Value),
        ikey(b"a", 0, Deletion),
        ikey(b"a\x00", 200, Value),
        ikey(b"ab", 1, Value),
        ikey(b"b", 500, Deletion),
        ikey(b"\xff", 0, Value),
    ];
    for (i, a) in sorted.iter().enumerate() {
        for (j, b) in sorted.iter().enumerate() {
            assert_eq!(cmp.compare(a, b), i.cmp(&j), "{a:?} vs {b:?}");
        }
    }
}

#[test]
fn separators_like_leveldb() {
    let foo100 = ikey(b"foo", 100, Value);
    // Same user keys: unchanged.
    assert_eq!(shorten(&foo100, &ikey(b"foo", 99, Value)), foo100);
    assert_eq!(shorten(&foo100, &ikey(b"foo", 101, Value)), foo100);
    assert_eq!(shorten(&foo100, &ikey(b"foo", 100, Value)), foo100);
    assert_eq!(shorten(&foo100, &ikey(b"foo", 100, Deletion)), foo100);
    // Misordered user keys: unchanged.
    assert_eq!(shorten(&foo100, &ikey(b"bar", 99, Value)), foo100);
    // Different, ordered user keys: shortened, with the seek tag.
    assert_eq!(
        shorten(&foo100, &ikey(b"hello", 200, Value)),
        ikey(b"g", MAX_SEQUENCE, ValueType::FOR_SEEK)
    );
    // A prefix either way: unchanged.
    assert_eq!(shorten(&foo100, &ikey(b"foobar", 200, Value)), foo100);
    let foobar = ikey(b"foobar", 100, Value);
    assert_eq!(shorten(&foobar, &ikey(b"foo", 200, Value)), foobar);
    // The user key got shorter but not greater ("abc" vs "abd" cannot shorten).
    let abc = ikey(b"abc", 7, Deletion);
    assert_eq!(shorten(&abc, &ikey(b"abd", 3, Value)), abc);
}

#[test]
fn successors_like_leveldb() {
    assert_eq!(
        successor(&ikey(b"foo", 100, Value)),
        ikey(b"g", MAX_SEQUENCE, ValueType::FOR_SEEK)
    );
    let ff = ikey(b"\xff\xff", 100, Value);
    assert_eq!(successor(&ff), ff);
    let empty = ikey(b"", 3, Value);
    assert_eq!(successor(&empty), empty);
}

#[test]
fn short_keys_neither_panic_nor_break_the_order() {
    let cmp = InternalKeyComparator::bytewise();
    // A short key is its own user key with tag 0: after every real version of it.
    assert_eq!(
        cmp.compare(b"abc", &ikey(b"abc", 1, Value)),
        Ordering::Greater
    );
    assert_eq!(cmp.compare(b"abc", &ikey(b"abd", 1, Value)), Ordering::Less);
    assert_eq!(cmp.compare(b"", b""), Ordering::Equal);
    assert_eq!(shorten(b"abc", b"c"), b"b\x01\xff\xff\xff\xff\xff\xff\xff");
    assert_eq!(shorten(b"abc", b"abe"), b"abc", "not shorter: unchanged");
    assert_eq!(shorten(b"", b""), b"");
    assert_eq!(successor(b"abc"), b"b\x01\xff\xff\xff\xff\xff\xff\xff");
    let policy = InternalFilterPolicy::new(BloomFilterPolicy::new(10));
    let mut filter = Vec::new();
    policy.create_filter(&[b"abc", b""], &mut filter);
    assert!(policy.key_may_match(b"abc", &filter));
    assert!(policy.key_may_match(&ikey(b"abc", 9, Value), &filter));
    assert!(policy.key_may_match(b"", &filter));
}

#[test]
fn filter_is_the_user_policy_over_user_keys() {
    let user = BloomFilterPolicy::new(10);
    let policy = InternalFilterPolicy::new(user);
    assert_eq!(policy.name(), "leveldb.BuiltinBloomFilter2");
    let keys = [
        ikey(b"apple", 9, Value),
        ikey(b"apple", 3, Deletion),
        ikey(b"banana", 1, Value),
    ];
    let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let mut ours = b"prefix".to_vec();
    policy.create_filter(&refs, &mut ours);
    let mut plain = b"prefix".to_vec();
    user.create_filter(&[b"apple", b"apple", b"banana"], &mut plain);
    assert_eq!(ours, plain);
    let filter = &ours[b"prefix".len()..];
    for key in &keys {
        assert!(policy.key_may_match(key, filter));
    }
    assert!(policy.key_may_match(&lookup_key(b"banana", 77).unwrap(), filter));
    let mut negatives = 0;
    for i in 0..100 {
        let probe = format!("absent{i}");
        let answer = policy.key_may_match(&lookup_key(probe.as_bytes(), 77).unwrap(), filter);
        assert_eq!(answer, user.key_may_match(probe.as_bytes(), filter));
        negatives += usize::from(!answer);
    }
    assert!(negatives > 50, "{negatives}");
    assert_eq!(policy.into_inner(), user);
}

#[test]
fn options_are_leveldbs() {
    let build = ldb_build_options(Some(10));
    assert_eq!(build.comparator.name(), INTERNAL_KEY_COMPARATOR_NAME);
    assert_eq!(
        build.filter_policy.as_ref().map(|p| p.name()),
        Some("leveldb.BuiltinBloomFilter2")
    );
    assert!(ldb_build_options(None).filter_policy.is_none());
    let read = ldb_read_options();
    assert_eq!(read.comparator.name(), INTERNAL_KEY_COMPARATOR_NAME);
    assert!(read.verify_checksums);
    assert_eq!(
        format!("{:?}", InternalKeyComparator::bytewise()),
        "InternalKeyComparator { user: \"leveldb.BytewiseComparator\" }"
    );
}

#[test]
fn value_types() {
    assert_eq!(ValueType::from_byte(0), Some(Deletion));
    assert_eq!(ValueType::from_byte(1), Some(Value));
    assert_eq!(ValueType::from_byte(2), None);
    assert_eq!(Value.to_byte(), 1);
    assert_eq!(ValueType::FOR_SEEK, Value);
    assert_eq!(
        LookupResult::Value {
            sequence: 1,
            value: b"v".to_vec()
        }
        .into_value(),
        Some(b"v".to_vec())
    );
    assert_eq!(LookupResult::Deleted { sequence: 1 }.into_value(), None);
    assert_eq!(LookupResult::NotFound.into_value(), None);
}

/// A lookup key holds the seek key and the floor of its user key, inline or not: empty
/// keys, keys at the inline limit and past it, at the lowest and highest sequences.
#[test]
fn lookup_keys_bound_the_versions_of_their_user_key() {
    for len in [
        0,
        1,
        16,
        LOOKUP_INLINE_USER_KEY,
        LOOKUP_INLINE_USER_KEY + 1,
        1000,
    ] {
        let user: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        for sequence in [0, 1, 77, MAX_SEQUENCE] {
            let k = LookupKey::new(&user, sequence).unwrap();
            assert_eq!(k.user_key(), &user[..]);
            assert_eq!(k.target(), &lookup_key(&user, sequence).unwrap()[..]);
            assert_eq!(k.floor(), &ikey(&user, 0, Deletion)[..]);
            let icmp = InternalKeyComparator::bytewise();
            // Every version at or below the sequence lies in [target, floor].
            for v in [0, sequence / 2, sequence] {
                for t in [Value, Deletion] {
                    let version = ikey(&user, v, t);
                    assert_ne!(icmp.compare(&version, k.target()), Ordering::Less);
                    assert_ne!(icmp.compare(&version, k.floor()), Ordering::Greater);
                }
            }
        }
    }
}
