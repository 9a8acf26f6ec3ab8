//! Copies of an IndexedDB LevelDB directory taken with `cp -r` while Chromium wrote to it
//! (`testdata/live/copies`, see `testdata/README.md`): a normal open refuses each with an
//! error naming the file the MANIFEST lists and the copy lacks; a salvage reads what the
//! copy holds, and every record it finds is one the page wrote, with the value it wrote.

use crate::common;

use std::collections::BTreeSet;
use std::path::PathBuf;

use leveltable_chromium::read::{self, Reading, indexeddb::Filter};
use leveltable_db::{DbOptions, Error};
use serde_json::{Value, json};

fn copy(name: &str) -> PathBuf {
    common::live().join("copies").join(name)
}

/// What live.html's `recordValue(i)` stored.
fn record_value(i: u64) -> Value {
    let text = format!("record {i} {}", "ab".repeat(50 + (i as usize * 7) % 400));
    json!({"i": i, "text": text, "when": {"type": "date", "value": 1.7e12 + i as f64},
        "tags": [i % 3, format!("t{}", i % 5)]})
}

/// The keys live after the page's first `t` transactions: transaction t puts
/// 8t .. 8t + 7 and deletes what transaction t - 6 put.
fn keys_after(t: u64, batch: u64, window: u64) -> BTreeSet<u64> {
    (batch * t.saturating_sub(window)..batch * t).collect()
}

/// The records of the `log` store (database `live`) a salvage of `dir` reads, as `reading`
/// asks.
fn salvaged(dir: &PathBuf, reading: Reading) -> Vec<Value> {
    let db = read::open(dir, true, DbOptions::default()).unwrap();
    let filter = Filter {
        database: Some("live".into()),
        store: Some("log".into()),
    };
    read::indexeddb::records(&db, reading, &filter)
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn groups(records: &[Value]) -> BTreeSet<u64> {
    records
        .iter()
        .map(|r| r["key"].as_u64().unwrap() / 8)
        .collect()
}

/// Every version a salvage finds in `dir`, of every database, decodes; every record of the
/// `log` store holds what the page wrote under its key.
fn assert_every_record_is_what_the_page_wrote(dir: &PathBuf) {
    let db = read::open(dir, true, DbOptions::default()).unwrap();
    for reading in [Reading::Live, Reading::Versions] {
        let mut log_records = 0;
        for r in read::indexeddb::records(&db, reading, &Filter::default()).unwrap() {
            let r = r.unwrap();
            assert!(r.get("error").is_none(), "{r}");
            if r["store"] == "log" && !r["value"].is_null() {
                let k = r["key"].as_u64().unwrap();
                assert_eq!(
                    common::norm(&r["value"]),
                    common::norm(&record_value(k)),
                    "{k}"
                );
                log_records += 1;
            }
        }
        assert!(log_records > 0);
    }
}

fn assert_missing(dir: &PathBuf, table: &str) {
    let err = read::open(dir, false, DbOptions::default()).unwrap_err();
    assert!(
        matches!(&err, Error::MissingFile { file, .. } if file.to_str() == Some(table)),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        format!("db: {table}: missing: MANIFEST-000001 lists it (1 table file missing)")
    );
}

#[test]
fn the_page_committed_transactions_in_order() {
    let report = common::live_report();
    assert_eq!(
        (report["batch"].as_u64(), report["window"].as_u64()),
        (Some(8), Some(6))
    );
    let committed: Vec<u64> = report["committed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_u64().unwrap())
        .collect();
    assert_eq!(committed, (0..committed.len() as u64).collect::<Vec<_>>());
    assert!(committed.len() > 133, "{}", committed.len());
}

#[test]
fn a_copy_missing_the_newest_table_and_log_reads_as_the_page_left_it_earlier() {
    // The MANIFEST lists 000061.ldb and names log 000060: both were created after cp listed
    // the directory. What the copy holds (000057.log, 000059.ldb) is the database as it was
    // after the page's first 76 transactions.
    let dir = copy("most");
    assert_missing(&dir, "000061.ldb");
    let live = salvaged(&dir, Reading::Live);
    let keys: BTreeSet<u64> = live.iter().map(|r| r["key"].as_u64().unwrap()).collect();
    assert_eq!(keys, keys_after(76, 8, 6));
    assert_eq!(groups(&live), (70..76).collect());
    assert_every_record_is_what_the_page_wrote(&dir);
}

#[test]
fn a_copy_with_a_torn_log_reads_every_whole_record_and_no_more() {
    // cp read 8192 bytes of 000102.log while Chromium appended to it: the last record is cut
    // short (1657 bytes), and dropped. The MANIFEST lists 000103.ldb, which the copy lacks:
    // it held transactions 128 to 131. Chromium writes each put of a transaction as its own
    // log record (LevelDB scopes keep an undo log), so the copy holds transaction 132's
    // puts, all whole, but not yet its deletion of what transaction 126 put.
    let dir = copy("torn_log");
    assert_missing(&dir, "000103.ldb");
    let db = read::open(&dir, true, DbOptions::default()).unwrap();
    let logs = &db.properties().logs;
    assert_eq!(logs.len(), 1);
    assert_eq!((logs[0].number, logs[0].size), (102, 8192));
    assert_eq!((logs[0].records, logs[0].tail_bytes), (17, 1657));
    assert!(logs[0].dropped.is_empty());
    let live = salvaged(&dir, Reading::Live);
    assert_eq!(live.len(), 7 * 8);
    assert_eq!(groups(&live), [122, 123, 124, 125, 126, 127, 132].into());
    assert_every_record_is_what_the_page_wrote(&dir);
}
