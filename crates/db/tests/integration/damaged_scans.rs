//! A scan that meets a damaged data block hands out every entry before it (from the front,
//! and from the back every entry after it), then the error naming the table, and nothing
//! past it: entries read ahead in the same batch as the damage are not lost with it.

use std::path::{Path, PathBuf};

use leveltable_db::{Db, DbOptions, TableOptions, WritableDb, WritableOptions, WriteOptions};
use leveltable_table::Compression;

const ENTRIES: u64 = 5000;

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    format!("value-{i:06}-{}", "v".repeat(90)).into_bytes()
}

/// A database of `ENTRIES` uncompressed entries in one table, with a byte of entry
/// `damaged`'s value flipped: its data block fails its checksum. Returns the table's path.
fn damaged_db(dir: &Path, damaged: u64) -> PathBuf {
    let options = WritableOptions::default()
        .create_if_missing(true)
        .table(TableOptions::default().compression(Compression::None));
    let db = WritableDb::open(dir, options).unwrap();
    for i in 0..ENTRIES {
        db.put(&key(i), &value(i), WriteOptions::default()).unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    let tables: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ldb"))
        .collect();
    assert_eq!(tables.len(), 1, "{tables:?}");
    let mut bytes = std::fs::read(&tables[0]).unwrap();
    let needle = format!("value-{damaged:06}-");
    let at = bytes
        .windows(needle.len())
        .position(|w| w == needle.as_bytes())
        .unwrap();
    bytes[at + 3] ^= 0x40;
    std::fs::write(&tables[0], &bytes).unwrap();
    tables[0].clone()
}

type Entry = (Vec<u8>, Vec<u8>);

/// The entries `next` hands out until its error, and the error.
fn until_error(
    mut next: impl FnMut() -> Option<leveltable_db::Result<Entry>>,
) -> (Vec<Entry>, leveltable_db::Error) {
    let mut entries = Vec::new();
    loop {
        match next() {
            Some(Ok(entry)) => entries.push(entry),
            Some(Err(e)) => return (entries, e),
            None => panic!("the scan ended without meeting the damage"),
        }
    }
}

#[test]
fn a_scan_hands_out_every_entry_before_a_damaged_block() {
    let dir = tempfile::tempdir().unwrap();
    let table = damaged_db(dir.path(), 2500);
    let name = table.file_name().unwrap().to_string_lossy().into_owned();
    let db = Db::open(dir.path(), DbOptions::default()).unwrap();
    // Forward, entry by entry and in batches: keys 0.. up to the damaged block, in order,
    // then the error.
    let mut it = db.iter();
    let (forward, error) = until_error(|| it.next());
    assert!(error.to_string().contains(&name), "{error}");
    assert!(it.next().is_none(), "nothing after the error");
    let n = forward.len() as u64;
    // A 4 KiB block holds about 35 of these entries: all before its block came out.
    assert!((2400..=2500).contains(&n), "{n} entries before the damage");
    for (i, (k, v)) in forward.iter().enumerate() {
        assert_eq!((k, v), (&key(i as u64), &value(i as u64)));
    }
    let mut batched = Vec::new();
    let mut it = db.iter();
    let result = loop {
        match it.next_entries(|k, v| {
            batched.push((k.to_vec(), v.to_vec()));
            true
        }) {
            Ok(true) => {}
            other => break other,
        }
    };
    assert!(result.is_err(), "{result:?}");
    assert_eq!(batched, forward);
    // Backward: every entry after the damaged block, then the error.
    let mut it = db.iter();
    let (backward, error) = until_error(|| it.next_back());
    assert!(error.to_string().contains(&name), "{error}");
    let after = backward.len() as u64;
    assert!(
        (2400..=2500).contains(&after),
        "{after} entries after the damage"
    );
    for (j, (k, v)) in backward.iter().enumerate() {
        let i = ENTRIES - 1 - j as u64;
        assert_eq!((k, v), (&key(i), &value(i)));
    }
}
