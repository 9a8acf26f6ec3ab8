//! V8's format as V8 itself writes it: `testdata/v8/vectors.json`, made by
//! `testdata/v8/make_vectors.js` under Node.js (V8 11.3, format version 15), each value with
//! the JSON its JavaScript value must decode to, computed in JavaScript.

use leveltable_chromium::v8::{MAX_DEPTH, deserialize, deserialize_v8};
use leveltable_chromium::{Error, v8};
use serde_json::{Value, json};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Every JSON number as a float, so that `7` and `7.0` compare equal.
fn norm(v: &Value) -> Value {
    match v {
        Value::Number(n) => json!(n.as_f64().unwrap()),
        Value::Array(a) => Value::Array(a.iter().map(norm).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), norm(v))).collect()),
        v => v.clone(),
    }
}

fn vectors() -> Vec<(String, Vec<u8>, Value)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/v8/vectors.json");
    let all: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    all["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["name"].as_str().unwrap().to_string(),
                hex(v["hex"].as_str().unwrap()),
                v["json"].clone(),
            )
        })
        .collect()
}

#[test]
fn every_vector_decodes_to_the_json_of_its_javascript_value() {
    let vectors = vectors();
    assert!(vectors.len() > 60);
    for (name, bytes, want) in vectors {
        let got = deserialize_v8(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(norm(&got), norm(&want), "{name}");
    }
}

#[test]
fn every_tag_of_the_format_is_in_the_vectors() {
    // Tags as they appear after the header; a missing one means an untested branch.
    let all: Vec<u8> = vectors().into_iter().flat_map(|(_, b, _)| b).collect();
    for tag in b"_0TFINZ\"cSo{aA$@D;:',BV~ynzsRr^" {
        assert!(all.contains(tag), "no vector has tag {}", char::from(*tag));
    }
}

#[test]
fn truncated_and_corrupted_vectors_are_errors_not_panics() {
    for (name, bytes, _) in vectors() {
        for len in 0..bytes.len() {
            // A prefix may happen to be a complete value; it must never panic.
            let _ = deserialize_v8(&bytes[..len]);
        }
        assert!(
            deserialize_v8(&bytes[..bytes.len() - 1]).is_err() || bytes.len() <= 3,
            "{name}"
        );
        for i in 2..bytes.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut b = bytes.clone();
                b[i] ^= flip;
                let _ = deserialize_v8(&b);
            }
        }
    }
}

#[test]
fn unknown_tags_are_named_with_their_offset() {
    // 0xff 0x0f header, then tag 0x01, which V8 does not have.
    assert_eq!(
        deserialize_v8(&[0xff, 0x0f, 0x01]),
        Err(Error::UnknownTag {
            what: "V8 value tag",
            tag: 0x01,
            offset: 2
        })
    );
    // Inside an object: `o`, key "a", then tag 0x02.
    let err = deserialize_v8(&[0xff, 0x0f, b'o', b'"', 1, b'a', 0x02]).unwrap_err();
    assert_eq!(err.offset(), 6);
    // A Blink host object tag nobody defined.
    let err = deserialize_v8(&[0xff, 0x0f, b'\\', 0x01]).unwrap_err();
    assert!(matches!(
        err,
        Error::UnknownTag {
            what: "Blink host object tag",
            tag: 1,
            offset: 3
        }
    ));
    // Versions outside 13..=16.
    assert!(deserialize_v8(&[0xff, 0x11, b'0']).is_err());
    assert!(deserialize_v8(b"0").is_err());
}

#[test]
fn claimed_lengths_beyond_the_input_are_errors_not_allocations() {
    // A string, an array buffer, a dense array and a BigInt each claiming 2^31 units.
    for tag in [b'"', b'B', b'A', b'Z'] {
        let mut b = vec![0xff, 0x0f, tag];
        b.extend_from_slice(&[0x80, 0x80, 0x80, 0x80, 0x08]);
        assert!(deserialize_v8(&b).is_err(), "{}", char::from(tag));
    }
}

#[test]
fn nesting_is_bounded_without_overflowing_the_stack() {
    let mut b = vec![0xff, 0x0f];
    for _ in 0..100_000 {
        b.extend_from_slice(&[b'A', 1]);
    }
    assert!(matches!(deserialize_v8(&b), Err(Error::TooDeep { .. })));
    // Just inside the limit decodes.
    let mut ok = vec![0xff, 0x0f];
    for _ in 0..MAX_DEPTH - 1 {
        ok.extend_from_slice(&[b'A', 1]);
    }
    ok.push(b'0');
    for _ in 0..MAX_DEPTH - 1 {
        ok.extend_from_slice(&[b'$', 0, 1]);
    }
    deserialize_v8(&ok).unwrap();
}

#[test]
fn references_that_fan_out_are_bounded() {
    // a0 = [], a1 = [a0, a0], a2 = [a1, a1], ...: 2^60 values as JSON from a few hundred bytes.
    let mut b = vec![0xff, 0x0f, b'A', 2, b'A', 0, b'$', 0, 0, b'^', 1];
    // Build inside out: each level is an array of two references to the level below.
    b.truncate(2);
    let levels = 60;
    for _ in 0..levels {
        b.extend_from_slice(&[b'A', 2]);
    }
    b.extend_from_slice(&[b'A', 0, b'$', 0, 0]);
    for level in (0..levels).rev() {
        // The second item refers to the first item's array, whose id is level + 1.
        b.extend_from_slice(&[b'^', (level + 1) as u8, b'$', 0, 2]);
    }
    let err = deserialize_v8(&b).unwrap_err();
    assert!(err.to_string().contains("output limit"), "{err}");
}

#[test]
fn object_counts_one_after_another_do_not_overflow_the_stack() {
    // V8 writes `?` with an object count before a value; a million of them before `null`.
    let mut b = vec![0xff, 0x0f];
    for _ in 0..1_000_000 {
        b.extend_from_slice(&[b'?', 0]);
    }
    b.push(b'0');
    assert_eq!(deserialize_v8(&b).unwrap(), Value::Null);
}

/// A varint as V8 writes it.
fn varint(mut n: usize, into: &mut Vec<u8>) {
    while n >= 0x80 {
        into.push((n as u8) | 0x80);
        n >>= 7;
    }
    into.push(n as u8);
}

/// An array of `chains` values: the first `[[...[null]...]]` nested `deep` times, each
/// later one the same with a reference to the one before it innermost.
fn chained_references(chains: usize, deep: usize) -> Vec<u8> {
    let mut b = vec![0xff, 0x0f, b'A'];
    varint(chains, &mut b);
    let mut next_id = 1; // the root is object 0
    for k in 0..chains {
        for _ in 0..deep {
            b.extend_from_slice(&[b'A', 1]);
        }
        next_id += deep;
        if k == 0 {
            b.push(b'0');
        } else {
            // The outermost array of the chain before.
            b.push(b'^');
            varint(next_id - 2 * deep, &mut b);
        }
        for _ in 0..deep {
            b.extend_from_slice(&[b'$', 0, 1]);
        }
    }
    b.extend_from_slice(&[b'$', 0]);
    varint(chains, &mut b);
    b
}

#[test]
fn references_that_nest_deeper_than_the_limit_are_refused() {
    // No value is decoded more than 141 deep, but the last chain written out nests 42,000
    // deep.
    let b = chained_references(300, 140);
    assert!(matches!(deserialize_v8(&b), Err(Error::TooDeep { .. })));
    // Within the limit written out: decodes, the last chain 1,400 deep.
    let v = deserialize_v8(&chained_references(10, 140)).unwrap();
    let mut last = &v[9];
    let mut levels = 0;
    while let Some(inner) = last.get(0) {
        last = inner;
        levels += 1;
    }
    assert_eq!((levels, last), (1400, &Value::Null));
}

#[test]
fn an_array_buffer_may_end_with_padding() {
    // Padding after the value, as after any other; V8 reads these bytes as the buffer.
    let padded = [0xff, 0x0f, b'B', 1, 0x41, 0];
    assert_eq!(
        deserialize_v8(&padded).unwrap(),
        json!({"type": "ArrayBuffer", "base64": "QQ=="})
    );
    let blink = [0xff, 0x11, 0xff, 0x0f, b'B', 1, 0x41, 0];
    assert_eq!(
        v8::deserialize_blink(&blink).unwrap(),
        json!({"type": "ArrayBuffer", "base64": "QQ=="})
    );
}

#[test]
fn random_bytes_never_panic() {
    // A small xorshift generator: reproducible without a dependency.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..20_000 {
        let len = (next() % 40) as usize;
        let mut b: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        let _ = deserialize(&b);
        if b.len() >= 2 {
            b[0] = 0xff;
            b[1] = 0x0f;
            let _ = deserialize_v8(&b);
            b[1] = 0x15;
            let _ = deserialize(&b);
        }
    }
}

#[test]
fn indexeddb_wrapping_is_recognized() {
    // Wrapped in blob 3, 70000 bytes.
    let wrapped = [0xff, 0x11, 0x01, 0xf0, 0xa2, 0x04, 0x03];
    assert_eq!(
        deserialize(&wrapped).unwrap(),
        json!({"type": "wrapped_in_blob", "size": 70000, "index": 3})
    );
    // Snappy-compressed: Blink version 21 envelope around the string "hi".
    let plain = [
        0xff, 0x15, 0xfe, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0x10, b'"', 2, b'h', b'i',
    ];
    let mut compressed = vec![0xff, 0x11, 0x02];
    compressed.extend(snap_compress(&plain));
    assert_eq!(deserialize(&compressed).unwrap(), json!("hi"));
    // A compressed value claiming far more than its bytes can expand to.
    let liar = [0xff, 0x11, 0x02, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00];
    assert!(deserialize(&liar).is_err());
    let _ = v8::unwrap_idb_value(&[0xff, 0x11, 0x01]).unwrap_err();
}

/// Snappy with literals only, enough to test decompression without a compressor.
fn snap_compress(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut n = data.len();
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(b);
            break;
        }
        out.push(b | 0x80);
    }
    out.push(((data.len() - 1) as u8) << 2);
    out.extend_from_slice(data);
    out
}

#[test]
fn a_long_string_referenced_many_times_is_bounded() {
    // An object holding a 100 KB string object, then an array of 40,000 references to it:
    // 4 GB of JSON from 180 KB.
    let mut b = vec![0xff, 0x0f, b'A', 0xc1, 0xb8, 0x02]; // dense array of 40,001 items
    b.extend_from_slice(&[b's', b'"', 0xa0, 0x8d, 0x06]); // String object, 100,000 bytes
    b.extend(std::iter::repeat_n(b'x', 100_000));
    for _ in 0..40_000 {
        b.extend_from_slice(&[b'^', 1]);
    }
    b.extend_from_slice(&[b'$', 0, 0xc1, 0xb8, 0x02]);
    let err = deserialize_v8(&b).unwrap_err();
    assert!(err.to_string().contains("output limit"), "{err}");
}

#[test]
fn long_bigints_are_written_in_hex() {
    let mut b = vec![0xff, 0x0f, b'Z'];
    let len = 5000u32;
    let bitfield = (len << 1) | 1;
    let mut n = bitfield;
    while n >= 0x80 {
        b.push((n as u8) | 0x80);
        n >>= 7;
    }
    b.push(n as u8);
    let mut digits = vec![0u8; len as usize];
    digits[len as usize - 1] = 0xab;
    b.extend_from_slice(&digits);
    let v = deserialize_v8(&b).unwrap();
    let hex = v["hex"].as_str().unwrap();
    assert!(hex.starts_with("-0xab000"), "{}", &hex[..10]);
    assert_eq!(hex.len(), 3 + 2 * len as usize);
}

#[test]
fn what_v8_refuses_is_refused() {
    // An object defining `a` twice.
    let twice = [
        0xff, 0x0f, b'o', b'"', 1, b'a', b'0', b'"', 1, b'a', b'T', b'{', 2,
    ];
    assert!(matches!(
        deserialize_v8(&twice),
        Err(Error::Invalid { offset: 7, .. })
    ));
    // The number 1 and the string "1" are the same property.
    let same = [
        0xff, 0x0f, b'o', b'I', 2, b'0', b'"', 1, b'1', b'T', b'{', 2,
    ];
    assert!(deserialize_v8(&same).is_err());
    // Error fields out of V8's order (stack before message), and a prototype tag after them.
    let out_of_order = [
        0xff, 0x0f, b'r', b's', b'"', 1, b's', b'm', b'"', 1, b'm', b'.',
    ];
    assert!(matches!(
        deserialize_v8(&out_of_order),
        Err(Error::UnknownTag {
            what: "V8 error tag",
            tag: b'm',
            offset: 7
        })
    ));
    let late_prototype = [0xff, 0x0f, b'r', b'm', b'"', 1, b'm', b'R', b'.'];
    assert!(deserialize_v8(&late_prototype).is_err());
    // In order, every field.
    let full = [
        0xff, 0x0f, b'r', b'T', b'm', b'"', 1, b'm', b's', b'"', 1, b's', b'c', b'I', 2, b'.',
    ];
    assert_eq!(
        deserialize_v8(&full).unwrap(),
        json!({"type": "error", "name": "TypeError", "message": "m", "stack": "s", "cause": 1})
    );
}
