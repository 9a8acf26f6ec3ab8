//! A comparator other than LevelDB's default, and a database whose MANIFEST names one.

use std::cmp::Ordering;
use std::fs;
use std::path::Path;

use leveltable_db::log_writer::LogWriter;
use leveltable_db::version_edit::VersionEdit;
use leveltable_db::write_batch::WriteBatchBuilder;
use leveltable_table::Comparator;

/// Bytewise order reversed, named `test.Reverse`: an application's comparator, so tests
/// take the non-bytewise paths. It keeps index keys whole (no shortening).
pub struct Reverse;

impl Comparator for Reverse {
    fn name(&self) -> &str {
        "test.Reverse"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        b.cmp(a)
    }
    fn find_shortest_separator(&self, _start: &mut Vec<u8>, _limit: &[u8]) {}
    fn find_short_successor(&self, _key: &mut Vec<u8>) {}
}

/// A comparator under which different bytes can be equal (only the first byte counts),
/// as `idb_cmp1` holds the encodings of 0 and -0 equal. Named `test.FirstByte`.
pub struct FirstByte;

impl Comparator for FirstByte {
    fn name(&self) -> &str {
        "test.FirstByte"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        a.first().cmp(&b.first())
    }
    fn find_shortest_separator(&self, _start: &mut Vec<u8>, _limit: &[u8]) {}
    fn find_short_successor(&self, _key: &mut Vec<u8>) {}
}

/// A database in `dir` (created if missing) whose MANIFEST-000002 names `comparator` (none
/// if `None`), with keys a, c, b in its log.
pub fn write_db(dir: &Path, comparator: Option<&str>) {
    let mut batch = WriteBatchBuilder::new(1);
    batch.put(b"a", b"1").put(b"c", b"3").put(b"b", b"2");
    write_db_with(dir, comparator, &[batch]);
}

/// A database in `dir` (created if missing) whose MANIFEST-000002 names `comparator` (none
/// if `None`), with `batches` in its log, in order.
pub fn write_db_with(dir: &Path, comparator: Option<&str>, batches: &[WriteBatchBuilder]) {
    fs::create_dir_all(dir).unwrap();
    let edit = VersionEdit {
        comparator: comparator.map(str::to_string),
        log_number: Some(3),
        next_file_number: Some(4),
        last_sequence: Some(0),
        ..VersionEdit::default()
    };
    let mut w = LogWriter::new(Vec::new());
    w.add_record(&edit.encode()).unwrap();
    fs::write(dir.join("MANIFEST-000002"), w.into_inner()).unwrap();
    fs::write(dir.join("CURRENT"), b"MANIFEST-000002\n").unwrap();
    let mut log = LogWriter::new(Vec::new());
    for batch in batches {
        log.add_record(batch.as_bytes()).unwrap();
    }
    fs::write(dir.join("000003.log"), log.into_inner()).unwrap();
}
