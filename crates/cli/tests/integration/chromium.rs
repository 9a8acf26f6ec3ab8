//! `leveltable chromium ...` on the data Chromium 156 wrote (`crates/chromium/testdata`),
//! checked against what the page that wrote it reported, and the `db` commands opening an
//! IndexedDB database with the comparator its MANIFEST names (`idb_cmp1`).

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::*;
use serde_json::{Value, json};

fn golden() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../chromium/testdata/golden")
}

fn report() -> Value {
    serde_json::from_str(&std::fs::read_to_string(golden().join("report.json")).unwrap()).unwrap()
}

/// A copy of the golden directory `rel` in a temporary directory (the tests read copies,
/// never the test data itself).
fn copy(rel: &str) -> (tempfile::TempDir, PathBuf) {
    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                copy_dir(&e.path(), &to.join(e.file_name()));
            } else {
                std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
            }
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    copy_dir(&golden().join(rel), &dir);
    (tmp, dir)
}

const IDB: &str = "IndexedDB/http_127.0.0.1_8765.indexeddb.leveldb";

/// Runs `leveltable ARGS`, expecting exit code 0, and parses each line of its output.
fn lines(args: &[&str]) -> Vec<Value> {
    let out = leveltable().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    stdout_of(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn written(name: &str) -> Vec<(String, String)> {
    let mut items: Vec<(String, String)> = report()[name]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_str().unwrap().into(), p[1].as_str().unwrap().into()))
        .collect();
    items.sort();
    items
}

/// Every file of `dir` with its bytes: to check a read wrote nothing.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().into_string().unwrap(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn local_storage_prints_the_items_the_page_set() {
    let (_tmp, dir) = copy("local_storage/leveldb");
    let before = snapshot(&dir);
    let records = lines(&["chromium", "local-storage", dir.to_str().unwrap()]);
    let mut items: Vec<(String, String)> = records
        .iter()
        .map(|r| {
            assert_eq!(r["origin"], "http://127.0.0.1:8765");
            assert_eq!(r.as_object().unwrap().len(), 3, "{r}");
            (
                r["key"].as_str().unwrap().into(),
                r["value"].as_str().unwrap().into(),
            )
        })
        .collect();
    items.sort();
    assert_eq!(items, written("local_storage"));
    assert_eq!(snapshot(&dir), before, "the read changed the directory");
}

#[test]
fn session_storage_prints_the_items_the_page_set_with_their_tab() {
    let (_tmp, dir) = copy("session_storage");
    let records = lines(&["chromium", "session-storage", dir.to_str().unwrap()]);
    let mut items: Vec<(String, String)> = records
        .iter()
        .map(|r| {
            assert_eq!(r["origin"], "http://127.0.0.1:8765/");
            assert_eq!(r["namespace"].as_str().unwrap().len(), 36, "{r}");
            (
                r["key"].as_str().unwrap().into(),
                r["value"].as_str().unwrap().into(),
            )
        })
        .collect();
    items.sort();
    assert_eq!(items, written("session_storage"));
}

#[test]
fn salvage_labels_every_local_storage_version() {
    let (_tmp, dir) = copy("local_storage/leveldb");
    let records = lines(&[
        "chromium",
        "local-storage",
        dir.to_str().unwrap(),
        "--salvage",
    ]);
    let live: Vec<_> = records.iter().filter(|r| r["state"] == "live").collect();
    assert_eq!(live.len(), written("local_storage").len());
    for r in &records {
        assert!(r["sequence"].as_u64().unwrap() > 0, "{r}");
        assert!(
            ["live", "deleted", "shadowed"].contains(&r["state"].as_str().unwrap()),
            "{r}"
        );
    }
}

#[test]
fn indexeddb_lists_databases_stores_indexes_and_counts() {
    let (_tmp, dir) = copy(IDB);
    let dbs = lines(&["chromium", "indexeddb", dir.to_str().unwrap()]);
    let by_name: BTreeMap<&str, &Value> = dbs
        .iter()
        .map(|d| (d["database"].as_str().unwrap(), d))
        .collect();
    assert_eq!(
        by_name.keys().copied().collect::<Vec<_>>(),
        ["keys", "many", "values"]
    );
    let keys = by_name["keys"];
    assert_eq!(keys["version"], 2);
    assert!(
        keys["origin"]
            .as_str()
            .unwrap()
            .starts_with("http_127.0.0.1_8765")
    );
    let stores: BTreeMap<&str, &Value> = keys["object_stores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s))
        .collect();
    // The page's `gone` store was deleted; every other store holds the keys it reported.
    assert!(!stores.contains_key("gone"));
    let order = &report()["key_order"];
    for (name, keys) in order.as_object().unwrap() {
        assert_eq!(
            stores[name.as_str()]["records"],
            keys.as_array().unwrap().len(),
            "{name}"
        );
    }
    let people = stores["people"];
    assert_eq!(people["key_path"], "id");
    assert_eq!(people["auto_increment"], true);
    let indexes: BTreeMap<&str, &Value> = people["indexes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["name"].as_str().unwrap(), i))
        .collect();
    assert_eq!(indexes["by_email"]["unique"], true);
    assert_eq!(indexes["by_tag"]["multi_entry"], true);
    assert_eq!(indexes["by_name_age"]["key_path"], json!(["name", "age"]));
    // Each person has three tags: a multi-entry index holds three entries per record.
    assert_eq!(indexes["by_tag"]["entries"], 3 * 8);
    assert_eq!(indexes["by_name"]["entries"], 8);
    assert_eq!(by_name["values"]["version"], 300);
    let many = by_name["many"]["object_stores"].as_array().unwrap();
    assert_eq!(many.len(), 262);
    let wide = many.iter().find(|s| s["name"] == "wide").unwrap();
    assert_eq!(wide["indexes"].as_array().unwrap().len(), 230);
}

/// The page's `describeKey` of a number key as the dump prints it.
fn describe_number(key: &Value) -> Value {
    match key {
        Value::Number(n) => json!({ "number": n.as_f64().unwrap() }),
        Value::Object(o) if o["type"] == "number" => json!({ "number": o["value"] }),
        other => panic!("not a number key: {other}"),
    }
}

#[test]
fn indexeddb_dump_prints_records_in_chromiums_order_with_their_values() {
    let (_tmp, dir) = copy(IDB);
    let d = dir.to_str().unwrap();
    let numbers = lines(&[
        "chromium",
        "indexeddb",
        d,
        "--dump",
        "--database",
        "keys",
        "--store",
        "numbers",
    ]);
    let want: Vec<Value> = report()["key_order"]["numbers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| match &k["number"] {
            Value::Number(n) => json!({ "number": n.as_f64().unwrap() }),
            other => json!({ "number": other }),
        })
        .collect();
    let got: Vec<Value> = numbers.iter().map(|r| describe_number(&r["key"])).collect();
    assert_eq!(got, want);
    for r in &numbers {
        let fields: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(fields, ["database", "key", "origin", "store", "value"]);
        // The page put `{i, t}` under the i-th key of its list.
        assert_eq!(r["value"]["t"], "numbers");
        assert!(r["value"]["i"].is_u64(), "{r}");
    }
    let values: BTreeMap<String, Value> =
        lines(&["chromium", "indexeddb", d, "--dump", "--database", "values"])
            .into_iter()
            .map(|r| (r["key"].as_str().unwrap().to_string(), r["value"].clone()))
            .collect();
    assert_eq!(values["int"], 42);
    assert_eq!(values["two_byte"], "\u{65e5}\u{672c}\u{8a9e} \u{1f600}");
    assert_eq!(
        values["bigint"],
        json!({"type": "bigint", "value": "12345678901234567890"})
    );
    assert_eq!(
        values["date"],
        json!({"type": "date", "value": 1700000000123u64})
    );
    assert_eq!(
        values["obj"],
        json!({"a": 1, "b": {"c": [1, 2, {"d": "e"}]}, "7": "seven"})
    );
    assert_eq!(values["all"]["int"], 42);
    // Every database's records, and none of a store no database holds.
    let all = lines(&["chromium", "indexeddb", d, "--dump"]);
    assert_eq!(all.len(), 544);
    let none = leveltable()
        .args([
            "chromium",
            "indexeddb",
            d,
            "--dump",
            "--store",
            "no such store",
        ])
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(0));
    assert_eq!(stdout_of(&none), "");
    // A misspelt name is told apart from an empty result on standard error.
    assert_eq!(
        stderr_of(&none),
        format!("note: no records of {d} matched --store \"no such store\"\n")
    );
}

#[test]
fn indexeddb_salvage_shows_the_deleted_stores_records() {
    let (_tmp, dir) = copy(IDB);
    let records = lines(&[
        "chromium",
        "indexeddb",
        dir.to_str().unwrap(),
        "--dump",
        "--salvage",
        "--store",
        "gone",
    ]);
    // The page put 0..20 under keys 0..20 in `gone`, then deleted the store: each key has
    // its deletion (no value) and the value it shadows.
    let deleted: Vec<&Value> = records.iter().filter(|r| r["state"] == "deleted").collect();
    let shadowed: Vec<&Value> = records
        .iter()
        .filter(|r| r["state"] == "shadowed")
        .collect();
    assert_eq!((deleted.len(), shadowed.len()), (20, 20));
    for r in &deleted {
        assert_eq!(r["value"], Value::Null, "{r}");
        assert_eq!(r["database"], "keys");
    }
    for r in &shadowed {
        assert_eq!(r["value"], r["key"], "{r}");
        assert!(r["sequence"].as_u64().unwrap() > 0);
    }
    let keys: Vec<f64> = deleted.iter().map(|r| r["key"].as_f64().unwrap()).collect();
    assert_eq!(keys, (0..20).map(f64::from).collect::<Vec<_>>());
}

#[test]
fn db_commands_open_an_indexeddb_database_by_its_comparators_name() {
    let (_tmp, dir) = copy(IDB);
    let d = dir.to_str().unwrap();
    let out = leveltable()
        .args(["db", "stats", d, "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let stats: Value = serde_json::from_str(&stdout_of(&out)).unwrap();
    assert_eq!(stats["comparator"], "idb_cmp1");
    let out = leveltable().args(["db", "verify", d]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let out = leveltable()
        .args(["db", "dump", d, "--hex"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let dump = stdout_of(&out);
    let first = dump
        .lines()
        .next()
        .unwrap()
        .split('\t')
        .next()
        .unwrap()
        .to_string();
    let out = leveltable()
        .args(["db", "get", d, "--hex", &first])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let out = leveltable()
        .args(["db", "dump", d, "--hex", "--salvage"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
}

/// `db stats` gives each level's key range in the database's order: for an IndexedDB
/// database spread over many tables of one level, the first and last keys `db dump` prints.
#[test]
fn db_stats_key_ranges_follow_the_databases_comparator() {
    let (tmp, idb) = copy(IDB);
    let spread = tmp.path().join("spread");
    let out = leveltable()
        .args(["db", "repair", "-q", "--max-file-size", "1"])
        .arg(&idb)
        .arg(&spread)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let d = spread.to_str().unwrap();
    let out = leveltable()
        .args(["db", "dump", d, "--hex"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let dump = stdout_of(&out);
    let keys: Vec<&str> = dump
        .lines()
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    let out = leveltable()
        .args(["db", "stats", d, "--hex", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let stats: Value = serde_json::from_str(&stdout_of(&out)).unwrap();
    let level = stats["levels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["files"].as_u64() > Some(1))
        .expect("a level of many tables");
    assert_eq!(level["smallest"], keys[0]);
    assert_eq!(level["largest"], keys[keys.len() - 1]);
}

#[test]
fn a_directory_of_the_other_kind_is_refused() {
    let (_tmp, idb) = copy(IDB);
    let (_tmp2, local) = copy("local_storage/leveldb");
    for (args, says) in [
        (
            vec!["chromium", "local-storage", idb.to_str().unwrap()],
            "an IndexedDB database",
        ),
        (
            vec!["chromium", "session-storage", idb.to_str().unwrap()],
            "an IndexedDB database",
        ),
        (
            vec!["chromium", "indexeddb", local.to_str().unwrap()],
            "not an IndexedDB database",
        ),
        (
            vec!["chromium", "indexeddb", "/nonexistent/dir"],
            "cannot open",
        ),
    ] {
        let out = leveltable().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr_of(&out).contains(says), "{}", stderr_of(&out));
        assert!(stdout_of(&out).is_empty());
    }
}

#[test]
fn db_commands_refuse_an_unregistered_comparator_naming_it() {
    use leveltable_db::log_writer::LogWriter;
    use leveltable_db::version_edit::VersionEdit;
    let tmp = tempfile::tempdir().unwrap();
    let edit = VersionEdit {
        comparator: Some("app.Other".to_string()),
        log_number: Some(0),
        next_file_number: Some(3),
        last_sequence: Some(0),
        ..VersionEdit::default()
    };
    let mut w = LogWriter::new(Vec::new());
    w.add_record(&edit.encode()).unwrap();
    std::fs::write(tmp.path().join("MANIFEST-000002"), w.into_inner()).unwrap();
    std::fs::write(tmp.path().join("CURRENT"), b"MANIFEST-000002\n").unwrap();
    let d = tmp.path().to_str().unwrap();
    for args in [
        vec!["db", "dump", d],
        vec!["db", "dump", d, "--salvage"],
        vec!["chromium", "indexeddb", d],
    ] {
        let out = leveltable().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr_of(&out);
        assert!(err.contains("app.Other"), "{err}");
        assert!(err.contains("idb_cmp1"), "{err}");
    }
}

#[cfg(unix)]
#[test]
fn local_storage_watch_prints_the_items_then_each_change_decoded() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    use leveltable_db::{WritableDb, WritableOptions, WriteOptions};

    let (_tmp, dir) = copy("local_storage/leveldb");
    let items = written("local_storage");
    let mut child = Command::new(env!("CARGO_BIN_EXE_leveltable"))
        .args(["chromium", "local-storage", "--watch", "--poll-ms", "5"])
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut read = |n: usize| -> Vec<Value> {
        (0..n)
            .map(|_| {
                let mut line = String::new();
                assert!(out.read_line(&mut line).unwrap() > 0, "the watch ended");
                serde_json::from_str(&line).unwrap()
            })
            .collect()
    };
    assert_eq!(read(items.len()).len(), items.len());

    // The page's writes, as Chromium encodes them: `_` origin NUL key, Latin-1 strings
    // (tag 1) and UTF-16LE (tag 0).
    let db = WritableDb::open(&dir, WritableOptions::default()).unwrap();
    let origin = b"_http://127.0.0.1:8765\x00";
    let key = |k: &[u8]| [&origin[..], k].concat();
    db.put(&key(b"\x01watched"), b"\x01first", WriteOptions::default())
        .unwrap();
    db.put(
        &key(b"\x00h\x00i\x00"),
        b"\x00\xe9\x00",
        WriteOptions::default(),
    )
    .unwrap();
    db.put(b"VERSION", b"1", WriteOptions::default()).unwrap();
    let (first_key, _) = &items[0];
    let mut gone = b"\x01".to_vec();
    gone.extend_from_slice(first_key.as_bytes());
    db.delete(&key(&gone), WriteOptions::default()).unwrap();
    let changes = read(3);
    let base = changes[0]["seq"].as_u64().unwrap();
    assert_eq!(
        changes,
        [
            json!({"seq": base, "op": "put", "origin": "http://127.0.0.1:8765",
                   "key": "watched", "value": "first"}),
            json!({"seq": base + 1, "op": "put", "origin": "http://127.0.0.1:8765",
                   "key": "hi", "value": "é"}),
            // VERSION (base + 2) is not an item.
            json!({"seq": base + 3, "op": "del", "origin": "http://127.0.0.1:8765",
                   "key": first_key, "value": null}),
        ]
    );
    send_signal(child.id(), "INT");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    drop(db);
}
