//! A database's files are read only if they are regular files, and only up to their size
//! at open and a limit: a FIFO, a device or a huge sparse file where a file should be is an
//! error naming it, returned at once, for an open and a salvage alike.

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use leveltable_db::{BulkOptions, Db, DbBuilder, DbOptions, Error, PartBuilder};

use crate::common;

use common::{mkfifo, promptly};

/// A database of 100 keys in one table (000002.ldb), no log, under a new temporary
/// directory; returns the directory and the database's path.
fn database() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let mut b = DbBuilder::create(&db, BulkOptions::default()).unwrap();
    for i in 0..100u32 {
        b.add(format!("key{i:04}").as_bytes(), b"value").unwrap();
    }
    b.finish().unwrap();
    assert!(db.join("000002.ldb").is_file());
    (tmp, db)
}

fn open(db: &Path) -> Result<Db, Error> {
    let db = db.to_owned();
    promptly("Db::open", move || Db::open(&db, DbOptions::default()))
}

fn salvage(db: &Path) -> Result<Db, Error> {
    let db = db.to_owned();
    promptly("Db::salvage", move || {
        Db::salvage(&db, DbOptions::default())
    })
}

/// The error's message, which must name `file`.
fn message_naming(e: Error, file: &str) -> String {
    let m = e.to_string();
    assert!(m.contains(file), "{m}");
    m
}

#[test]
fn a_fifo_as_current_is_refused_at_once() {
    let (_tmp, db) = database();
    mkfifo(&db.join("CURRENT"));
    let m = message_naming(open(&db).unwrap_err(), "CURRENT");
    assert!(m.contains("FIFO, not a regular file"), "{m}");
    // A salvage ignores CURRENT and reads the rest.
    let s = salvage(&db).unwrap();
    assert_eq!(s.get(b"key0042").unwrap().as_deref(), Some(&b"value"[..]));
}

#[test]
fn a_fifo_as_a_live_log_is_refused_at_once() {
    let (_tmp, db) = database();
    mkfifo(&db.join("000009.log"));
    let m = message_naming(open(&db).unwrap_err(), "000009.log");
    assert!(m.contains("not a regular file"), "{m}");
    let s = salvage(&db).unwrap();
    let skipped = &s.properties().skipped;
    assert!(
        skipped
            .iter()
            .any(|(f, why)| f == "000009.log" && why.contains("not a regular file")),
        "{skipped:?}"
    );
    assert_eq!(s.get(b"key0001").unwrap().as_deref(), Some(&b"value"[..]));
}

#[test]
fn a_fifo_as_a_table_is_refused_at_once() {
    let (_tmp, db) = database();
    mkfifo(&db.join("000002.ldb"));
    // Tables open lazily: the open succeeds, the first read of the table fails.
    let d = open(&db).unwrap();
    let d = std::sync::Arc::new(d);
    let got = {
        let d = std::sync::Arc::clone(&d);
        promptly("Db::get", move || d.get(b"key0042"))
    };
    let m = message_naming(got.unwrap_err(), "000002.ldb");
    assert!(m.contains("not a regular file"), "{m}");
    let verified = promptly("Db::verify", move || d.verify());
    message_naming(verified.unwrap_err(), "000002.ldb");
    // A salvage skips it, naming it.
    let s = salvage(&db).unwrap();
    let skipped = &s.properties().skipped;
    assert!(
        skipped.iter().any(|(f, _)| f == "000002.ldb"),
        "{skipped:?}"
    );
}

#[cfg(unix)]
#[test]
fn current_and_logs_linked_to_dev_zero_are_refused() {
    let (_tmp, db) = database();
    std::os::unix::fs::symlink("/dev/zero", db.join("000009.log")).unwrap();
    let m = message_naming(open(&db).unwrap_err(), "000009.log");
    assert!(m.contains("character device, not a regular file"), "{m}");
    fs::remove_file(db.join("CURRENT")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", db.join("CURRENT")).unwrap();
    let m = message_naming(open(&db).unwrap_err(), "CURRENT");
    assert!(m.contains("character device, not a regular file"), "{m}");
    let s = salvage(&db).unwrap();
    assert!(
        s.properties()
            .skipped
            .iter()
            .any(|(f, _)| f == "000009.log"),
        "{:?}",
        s.properties().skipped
    );
}

/// A 3 GiB sparse CURRENT is refused by its size, before anything is read: the test fails
/// if the open takes more than 10 s (reading 3 GiB of zeros) or allocates 3 GiB.
#[test]
fn a_huge_sparse_current_is_corruption_without_reading_it() {
    let (_tmp, db) = database();
    let f = File::create(db.join("CURRENT")).unwrap();
    f.set_len(3 << 30).unwrap();
    drop(f);
    let e = open(&db).unwrap_err();
    assert!(e.is_corruption(), "{e}");
    let m = message_naming(e, "CURRENT");
    assert!(m.contains("longer than its 4096-byte limit"), "{m}");
    assert!(m.contains("3221225472 bytes"), "{m}");
}

/// A CURRENT just over 4 KiB is corrupt; one of 4 KiB naming no MANIFEST is shown cut.
#[test]
fn current_is_one_short_line() {
    let (_tmp, db) = database();
    let mut long = vec![b'x'; 4096];
    long.push(b'\n');
    fs::write(db.join("CURRENT"), &long).unwrap();
    let m = message_naming(open(&db).unwrap_err(), "CURRENT");
    assert!(m.contains("longer than its 4096-byte limit"), "{m}");
    long.truncate(4095);
    long.push(b'\n');
    fs::write(db.join("CURRENT"), &long).unwrap();
    let m = message_naming(open(&db).unwrap_err(), "CURRENT");
    assert!(m.contains(&format!("{}…", "x".repeat(64))), "{m}");
    assert!(m.len() < 200, "the name is cut: {m}");
}

/// A FIFO put at the temporary name of a part's record while the part is built is refused
/// when the record is written (not waited on), and left where it is.
#[test]
fn a_fifo_at_a_part_records_temporary_name_is_refused_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let staging = tmp.path().join("part");
    let mut part = PartBuilder::create(&staging, BulkOptions::default()).unwrap();
    part.add(b"a", b"1").unwrap();
    let fifo = staging.join("PART.tmp");
    mkfifo(&fifo);
    let err = promptly("PartBuilder::finish", move || part.finish()).unwrap_err();
    let text = message_naming(err, "PART.tmp");
    assert!(text.contains("FIFO"), "{text}");
    use std::os::unix::fs::FileTypeExt;
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    assert!(!staging.join("PART").exists());
}
