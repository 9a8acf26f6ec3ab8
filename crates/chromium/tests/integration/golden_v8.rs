//! Values Chromium 156 serialized (Blink envelope version 21, V8 format version 16) into the
//! golden IndexedDB database, checked against what `testdata/make/page.html` stored.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use leveltable_chromium::metadata::{Metadata, split_record_value};
use leveltable_chromium::v8::{self, Envelope};
use leveltable_chromium::{IdbCmp1, IdbKey, IdbRecordKey, KeyType};
use leveltable_db::{Db, DbOptions};
use serde_json::{Value, json};

/// The records of the `values` database by their string keys: the raw serialized value.
fn records() -> BTreeMap<String, Vec<u8>> {
    let db = Db::open(
        common::indexeddb_dir(),
        DbOptions::default().comparator(Arc::new(IdbCmp1)),
    )
    .unwrap();
    let entries: Vec<_> = db.iter().map(|e| e.unwrap()).collect();
    let meta = Metadata::from_entries(entries.iter().map(|(k, v)| (k, v))).unwrap();
    let (values_id, _) = meta.database("http_127.0.0.1_8765", "values").unwrap();
    let mut out = BTreeMap::new();
    for (k, v) in entries {
        if let IdbRecordKey::Data {
            kind: KeyType::ObjectStoreData,
            database_id,
            key: IdbKey::String(name),
            ..
        } = IdbRecordKey::decode(&k).unwrap()
        {
            if database_id == values_id {
                let (_, ssv) = split_record_value(&v).unwrap();
                out.insert(String::from_utf16(&name).unwrap(), ssv.to_vec());
            }
        }
    }
    out
}

fn norm(v: &Value) -> Value {
    match v {
        Value::Number(n) => json!(n.as_f64().unwrap()),
        Value::Array(a) => Value::Array(a.iter().map(norm).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), norm(v))).collect()),
        v => v.clone(),
    }
}

fn view(kind: &str, offset: u64, length: u64, values: Value) -> Value {
    json!({"type": kind, "byte_offset": offset, "byte_length": length, "values": values})
}

/// What page.html's `valuesOfEveryType` stored, in this crate's JSON conventions (errors
/// without their stacks, which name lines of the page).
fn expected() -> BTreeMap<&'static str, Value> {
    let number = |s: &str| json!({"type": "number", "value": s});
    let bigint = |s: &str| json!({"type": "bigint", "value": s});
    BTreeMap::from([
        ("undef", json!({"type": "undefined"})),
        ("nul", Value::Null),
        ("t", json!(true)),
        ("f", json!(false)),
        ("int", json!(42)),
        ("neg", json!(-7)),
        ("big_int", json!(2147483648u64)),
        ("dbl", json!(3.5)),
        ("nan", number("NaN")),
        ("ninf", number("-Infinity")),
        ("negzero", number("-0")),
        ("bigint", bigint("12345678901234567890")),
        ("negbigint", bigint("-5")),
        ("zerobigint", bigint("0")),
        ("one_byte", json!("latin1 café")),
        ("two_byte", json!("日本語 😀")),
        ("empty", json!("")),
        (
            "obj",
            json!({"a": 1, "b": {"c": [1, 2, {"d": "e"}]}, "7": "seven"}),
        ),
        // [1, , 3] has a hole: V8 writes holey arrays sparse.
        (
            "dense",
            json!({"type": "sparse_array", "length": 3, "properties": {"0": 1, "2": 3}}),
        ),
        (
            "sparse",
            json!({"type": "sparse_array", "length": 10, "properties": {"5": "five"}}),
        ),
        (
            "withProps",
            json!({"type": "array", "items": [1, 2], "properties": {"extra": "x"}}),
        ),
        ("date", json!({"type": "date", "value": 1700000000123u64})),
        ("baddate", json!({"type": "date", "value": "NaN"})),
        (
            "re",
            json!({"type": "regexp", "source": "ab+c", "flags": "gimsuy"}),
        ),
        (
            "re2",
            json!({"type": "regexp", "source": "é", "flags": "d"}),
        ),
        (
            "map",
            json!({"type": "map", "entries": [[1, "one"], ["k", {"v": []}]]}),
        ),
        (
            "set",
            json!({"type": "set", "values": [1, "two", bigint("3")]}),
        ),
        ("ab", json!({"type": "ArrayBuffer", "base64": "AAEC/w=="})),
        ("u8", view("Uint8Array", 0, 3, json!([1, 2, 3]))),
        ("i16", view("Int16Array", 0, 4, json!([-1, 2]))),
        (
            "f64",
            view("Float64Array", 0, 16, json!([1.5, number("-0")])),
        ),
        ("u8c", view("Uint8ClampedArray", 0, 1, json!([255]))),
        ("i8", view("Int8Array", 0, 1, json!([-128]))),
        ("u16", view("Uint16Array", 0, 2, json!([65535]))),
        ("i32", view("Int32Array", 0, 4, json!([-2]))),
        ("u32", view("Uint32Array", 0, 4, json!([4000000000u64]))),
        ("f32", view("Float32Array", 0, 4, json!([0.25]))),
        ("b64", view("BigInt64Array", 0, 8, json!(["-3"]))),
        (
            "bu64",
            view("BigUint64Array", 0, 8, json!(["18446744073709551615"])),
        ),
        (
            "dv",
            json!({"type": "DataView", "byte_offset": 1, "byte_length": 2, "base64": "CAc="}),
        ),
        ("sub", view("Uint8Array", 2, 2, json!([3, 4]))),
        ("numobj", json!({"type": "Number", "value": 5})),
        ("strobj", json!({"type": "String", "value": "s"})),
        ("boolobj", json!({"type": "Boolean", "value": false})),
        ("bigobj", json!({"type": "BigInt", "value": "7"})),
        (
            "err",
            json!({"type": "error", "name": "RangeError", "message": "out of range"}),
        ),
        (
            "typeerr",
            json!({"type": "error", "name": "TypeError", "message": "bad type"}),
        ),
        (
            "plainerr",
            json!({"type": "error", "name": "Error", "message": "plain"}),
        ),
        ("ref1", json!({"s": 1})),
        ("ref2", json!({"s": 1})),
        ("blob", json!({"type": "blob", "index": 0})),
        ("file", json!({"file": {"type": "file", "index": 0}})),
    ])
}

fn without_stack(mut v: Value) -> Value {
    if v["type"] == "error" {
        let stack = v.as_object_mut().unwrap().remove("stack").unwrap();
        let name = v["name"].as_str().unwrap().to_string();
        assert!(stack.as_str().unwrap().starts_with(&name), "{stack}");
    }
    v
}

#[test]
fn chromiums_values_decode_to_what_the_page_stored() {
    let records = records();
    let expected = expected();
    for (name, want) in &expected {
        let bytes = records
            .get(*name)
            .unwrap_or_else(|| panic!("no record {name}"));
        let got = v8::deserialize(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(norm(&without_stack(got)), norm(want), "{name}");
    }
    assert_eq!(
        records.len(),
        expected.len() + 1,
        "every record but `all` is checked"
    );
}

#[test]
fn the_record_of_all_values_holds_each_one_again() {
    // `all` stored the same objects in one record: each property decodes as its own record
    // did, and the two properties that are one object are two equal copies.
    let records = records();
    let all = v8::deserialize(&records["all"]).unwrap();
    let all = all.as_object().unwrap();
    assert_eq!(
        all.len(),
        expected().len() - 2,
        "every value but the blob and the file"
    );
    for (name, value) in all {
        let alone = v8::deserialize(&records[name.as_str()]).unwrap();
        assert_eq!(value, &alone, "{name}");
    }
    assert_eq!(all["ref1"], all["ref2"]);
}

#[test]
fn chromiums_envelope_is_blink_21_around_v8_16() {
    let records = records();
    let plain = Envelope::parse(&records["int"]).unwrap();
    assert_eq!(plain.blink_version, 21);
    assert_eq!(
        records["int"][plain.v8_start..plain.v8_start + 2],
        [0xff, 16]
    );
    assert!(plain.requires_interfaces.is_empty());
    assert_eq!(plain.v8_end, records["int"].len());
    // A value holding a blob ends with a trailer naming the interface it needs.
    let blob = Envelope::parse(&records["blob"]).unwrap();
    assert_eq!(blob.requires_interfaces, b"i");
    assert!(blob.v8_end < records["blob"].len());
}
