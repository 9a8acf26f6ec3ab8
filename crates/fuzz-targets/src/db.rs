//! Fuzz target bodies for the database layer: the log reader, MANIFEST records (version
//! edits), write batches, and opening a directory whose MANIFEST and log are the fuzzer's
//! bytes.

use std::collections::BTreeMap;
use std::fs;

use leveltable_db::dbformat::ValueType;
use leveltable_db::log_reader::LogReader;
use leveltable_db::log_writer::LogWriter;
use leveltable_db::version_edit::VersionEdit;
use leveltable_db::write_batch::{WriteBatch, WriteBatchBuilder};
use leveltable_db::{
    BulkOptions, Db, DbBuilder, DbOptions, WritableDb, WritableOptions, WriteOptions,
};

/// Reads `data` as a log, with and without checksums: never a panic, every record within
/// the input, and the bytes dropped bounded by the input. Then writes the records read
/// and reads them back: the same records, nothing dropped.
pub fn log(data: &[u8]) {
    for checksum in [true, false] {
        let mut reader = LogReader::new(data, checksum);
        let records: Vec<Vec<u8>> = reader.by_ref().map(|r| r.data).collect();
        let total: usize = records.iter().map(Vec::len).sum();
        assert!(total <= data.len(), "records longer than the log");
        assert!(reader.dropped_bytes() <= data.len() as u64);
        let mut log = Vec::new();
        let mut writer = LogWriter::new(&mut log);
        for r in &records {
            writer.add_record(r).expect("writing to memory");
        }
        let mut again = LogReader::new(&log, true);
        let back: Vec<Vec<u8>> = again.by_ref().map(|r| r.data).collect();
        assert_eq!(back, records, "records written and read back differ");
        assert_eq!(again.dropped_bytes(), 0);
    }
}

/// Decodes `data` as a MANIFEST record; a record that decodes encodes to bytes that decode
/// to the same edit.
pub fn version_edit(data: &[u8]) {
    let Ok(edit) = VersionEdit::decode_from(&mut &data[..]) else {
        return;
    };
    let encoded = edit.encode();
    let again = VersionEdit::decode_from(&mut &encoded[..]).expect("an encoded edit decodes");
    assert_eq!(again, edit);
}

/// Decodes `data` as a write batch: never a panic; a batch whose operations all decode is
/// rebuilt by the builder into a batch that decodes to the same operations (the bytes may
/// differ: a varint may be stored in more bytes than it needs, which readers accept).
pub fn write_batch(data: &[u8]) {
    let Ok(batch) = WriteBatch::new(data) else {
        return;
    };
    let mut ops = Vec::new();
    let decoded =
        batch.for_each(|op| ops.push((op.value_type, op.key.to_vec(), op.value.to_vec())));
    let _ = batch.last_sequence();
    if decoded.is_err() || ops.len() != batch.count() as usize {
        return;
    }
    let mut builder = WriteBatchBuilder::new(batch.sequence());
    for (value_type, key, value) in &ops {
        match value_type {
            ValueType::Value => builder.put(key, value),
            ValueType::Deletion => builder.delete(key),
        };
    }
    let rebuilt = WriteBatch::new(builder.as_bytes()).expect("a built batch has a header");
    let mut again = Vec::new();
    rebuilt
        .for_each(|op| again.push((op.value_type, op.key.to_vec(), op.value.to_vec())))
        .expect("a built batch decodes");
    assert_eq!(again, ops, "a decoded batch rebuilds to other operations");
    assert_eq!(
        (rebuilt.sequence(), rebuilt.count()),
        (batch.sequence(), batch.count())
    );
}

/// A directory holding a small real database (two tables on the last level) whose
/// MANIFEST and log are replaced by the fuzzer's bytes, split where the first byte says:
/// opening it, salvaging it, reading and verifying it never panic, what the open reads
/// is what a second open reads, and a repair holds as [`crate::repair`] says.
pub fn db_dir(data: &[u8]) {
    let (split, rest) = match data.split_first() {
        Some((&b, rest)) => (usize::from(b) * rest.len() / 256, rest),
        None => (0, data),
    };
    let (manifest, log) = rest.split_at(split.min(rest.len()));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let db = dir.path().join("db");
    let mut builder =
        DbBuilder::create(&db, BulkOptions::default().max_file_size(64)).expect("a new database");
    for i in 0..8u8 {
        builder.add(&[b'k', i], &[b'v', i]).expect("keys in order");
    }
    builder.finish().expect("the database builds");
    if !manifest.is_empty() {
        fs::write(db.join("MANIFEST-000001"), manifest).expect("writable");
    }
    fs::write(db.join("000009.log"), log).expect("writable");
    let read = |db: &Db| -> Option<BTreeMap<Vec<u8>, Vec<u8>>> {
        let entries = db.iter().collect::<Result<BTreeMap<_, _>, _>>().ok();
        for key in [&b"k\x00"[..], b"k\x07", b"zz", b""] {
            let _ = db.get(key);
        }
        let _ = db.versions().count();
        let _ = db.verify();
        entries
    };
    for options in [
        DbOptions::default(),
        DbOptions::default().paranoid_checks(true),
    ] {
        if let Ok(first) = Db::open(&db, options.clone()) {
            let seen = read(&first);
            let second = Db::open(&db, options).expect("a database that opened opens again");
            assert_eq!(read(&second), seen, "two opens read differently");
        }
    }
    if let Ok(salvaged) = Db::salvage(&db, DbOptions::default()) {
        read(&salvaged);
    }
    crate::repair::repair_checked(&db);
    // Opened for writing, a database the read-only open reads recovers to the same view,
    // takes a write, and reads back after a close as the read-only open reads it.
    let before = Db::open(&db, DbOptions::default())
        .ok()
        .and_then(|d| d.iter().collect::<Result<BTreeMap<_, _>, _>>().ok());
    if let Ok(writer) = WritableDb::open(&db, WritableOptions::default()) {
        let recovered = writer.iter().collect::<Result<BTreeMap<_, _>, _>>().ok();
        if let Some(before) = &before {
            assert_eq!(
                recovered.as_ref(),
                Some(before),
                "the writer recovers another view"
            );
        }
        if let Some(mut expected) = recovered
            && writer
                .put(b"new", b"value", WriteOptions::default())
                .is_ok()
            && writer.close().is_ok()
        {
            expected.insert(b"new".to_vec(), b"value".to_vec());
            let after = Db::open(&db, DbOptions::default()).expect("a database we wrote opens");
            let got = after.iter().collect::<Result<BTreeMap<_, _>, _>>();
            assert_eq!(got.ok(), Some(expected), "the write reads back otherwise");
        }
    }
}
