//! A repair of a database whose MANIFEST is damaged before its last record: the MANIFEST
//! cannot be read, and the repair says so, whatever zeros the file ends in. A last record
//! ends in zeros of its own (the sequence number of an internal key); where they cross a
//! sector boundary the damage must not pass for a power loss's torn tail, which would end
//! the MANIFEST at the damaged record: every later edit unread, the tables that compactions
//! replaced counted live again, and the keys their deletions hid brought back while the
//! report names the MANIFEST as read.

use std::fs;

use leveltable_db::log_format::HEADER_SIZE;
use leveltable_db::log_reader::LogReader;
use leveltable_db::log_writer::LogWriter;
use leveltable_db::version_edit::VersionEdit;
use leveltable_db::{Db, DbOptions, RepairOptions, repair};

use crate::common;

use common::dbs::{table_left_behind, view};

/// The MANIFEST's edits rewritten with a compact pointer `filler` bytes long after the
/// first two (so that the file's length can be chosen) and one at the end whose internal
/// key's sequence number ends the file in zeros; returns the bytes and the offset of the
/// filler's record.
fn rewritten(edits: &[Vec<u8>], filler: usize) -> (Vec<u8>, usize) {
    let pointer = |user: &[u8]| {
        let mut key = user.to_vec();
        key.extend_from_slice(&((5u64 << 8) | 1).to_le_bytes());
        VersionEdit {
            compact_pointers: vec![(1, key)],
            ..VersionEdit::default()
        }
        .encode()
    };
    let mut records = edits.to_vec();
    records.insert(2, pointer(&vec![b'p'; filler]));
    records.push(pointer(b"key0150"));
    let mut w = LogWriter::new(Vec::new());
    for r in &records {
        w.add_record(r).unwrap();
    }
    let at = records[..2].iter().map(|r| HEADER_SIZE + r.len()).sum();
    (w.into_inner(), at)
}

#[test]
fn a_damaged_manifest_ending_in_zeros_is_not_read_as_torn() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, saved) = (tmp.path().join("src"), tmp.path().join("saved"));
    let model = table_left_behind(&src, &saved);
    let current = fs::read_to_string(src.join("CURRENT")).unwrap();
    let manifest = src.join(current.trim_end());
    let data = fs::read(&manifest).unwrap();
    let mut reader = LogReader::new(&data[..], true);
    let mut edits = Vec::new();
    while let Some(record) = reader.read_record() {
        edits.push(record.data);
    }
    assert!(reader.dropped().is_empty() && edits.len() > 2);
    // A length at which the file's own trailing zeros cross byte 512.
    let (whole, filler_at) = (0..1000)
        .map(|filler| rewritten(&edits, filler))
        .find(|(bytes, _)| {
            let zeros_from = bytes.iter().rposition(|&b| b != 0).unwrap() + 1;
            zeros_from <= 512 && bytes.len() > 512
        })
        .expect("a MANIFEST ending in zeros across byte 512");

    // Whole, it is read: nothing deleted comes back.
    fs::write(&manifest, &whole).unwrap();
    assert_eq!(view(&src), model);
    let options = RepairOptions::default().sample(usize::MAX);
    let report = repair(&src, tmp.path().join("whole"), &options).unwrap();
    assert!(report.manifest.is_some(), "{:?}", report.manifest_error);
    assert_eq!(view(&tmp.path().join("whole")), model);

    // A byte flipped in the filler's record: corruption, as LevelDB reads it. (The
    // records before it, a new database's, list no table: read up to the damage, every
    // table would count live.)
    let mut flipped = whole;
    flipped[filler_at + HEADER_SIZE + 4] ^= 0x08;
    fs::write(&manifest, &flipped).unwrap();
    // The repair falls back to RepairDB's rule, every file live, and says so.
    let report = repair(&src, tmp.path().join("flipped"), &options).unwrap();
    let repaired = view(&tmp.path().join("flipped"));
    let back = repaired.keys().filter(|k| !model.contains_key(*k)).count();
    assert_eq!(
        report.manifest, None,
        "{back} deleted keys back, the MANIFEST named as read"
    );
    let why = report.manifest_error.as_deref().unwrap_or_default();
    assert!(why.contains("checksum mismatch"), "{why}");
    for (k, v) in &model {
        assert_eq!(repaired.get(k), Some(v), "{}", k.escape_ascii());
    }
    let Err(e) = Db::open(&src, DbOptions::default()) else {
        panic!("an open reads the damaged MANIFEST");
    };
    assert!(e.to_string().contains("checksum mismatch"), "{e}");
}
