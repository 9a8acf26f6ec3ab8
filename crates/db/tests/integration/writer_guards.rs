//! What `WritableDb::open` refuses, for every caller alike (the CLI and the Python package
//! only word it): file numbers that ran out, options out of range, a directory that lost
//! its `CURRENT` or holds temporary files of its own, a database another process holds
//! while creating it; and what it starts afresh: a creation interrupted before `CURRENT`.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use leveltable_db::log_writer::LogWriter;
use leveltable_db::version_edit::VersionEdit;
use leveltable_db::{
    BLOOM_BITS_OPTION, DbLock, Error, Limit, MAX_BLOOM_BITS_PER_KEY, MAX_FILE_NUMBER, TableOptions,
    WritableDb, WritableOptions, WriteOptions,
};
use leveltable_filter_policy::BloomFilterPolicy;

fn create() -> WritableOptions {
    WritableOptions::default().create_if_missing(true)
}

/// Every file of `dir` with its bytes; LOCK only by name (a close of a handle of it would
/// release the lock this process may hold).
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().into_string().unwrap();
            let bytes = if name == "LOCK" {
                Vec::new()
            } else {
                fs::read(e.path()).unwrap()
            };
            (name, bytes)
        })
        .collect()
}

/// A database in `dir` holding `n` keys, in tables and in a log.
fn database(dir: &Path, n: u32) {
    let db = WritableDb::open(dir, create().write_buffer_size(64 << 10)).unwrap();
    for i in 0..n {
        db.put(
            format!("key{i:06}").as_bytes(),
            &[b'v'; 100],
            WriteOptions::default(),
        )
        .unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.put(b"in the log", b"yes", WriteOptions::default())
        .unwrap();
    db.close().unwrap();
}

/// A MANIFEST holding `edits`, one record each.
fn manifest(path: &Path, edits: &[VersionEdit]) {
    let mut log = LogWriter::new(Vec::new());
    for edit in edits {
        log.add_record(&edit.encode()).unwrap();
    }
    fs::write(path, log.into_inner()).unwrap();
}

/// The edit LevelDB's `NewDB` writes into `MANIFEST-000001`.
fn new_db_edit() -> VersionEdit {
    VersionEdit {
        comparator: Some("leveldb.BytewiseComparator".into()),
        log_number: Some(0),
        next_file_number: Some(2),
        last_sequence: Some(0),
        ..VersionEdit::default()
    }
}

fn is_lost_current(e: &Error) -> bool {
    matches!(e, Error::LostCurrent { .. })
}

/// Checks that a creating open of `dir` is refused as a database that lost its CURRENT,
/// leaving `dir` as it was.
fn assert_refused_as_lost_current(dir: &Path) {
    let before = snapshot(dir);
    let e = WritableDb::open(dir, create()).unwrap_err();
    assert!(is_lost_current(&e), "{e:?}");
    assert_eq!(snapshot(dir), before);
}

#[test]
fn a_log_numbered_near_the_last_file_number_is_refused_before_anything_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    database(dir, 10);
    let log = snapshot(dir)
        .into_keys()
        .find(|n| n.ends_with(".log"))
        .unwrap();
    // 2^64 - 2: a table for it, a new log and a new MANIFEST would need numbers past the
    // last (they were all made 18446744073709551615, one file over another).
    fs::rename(dir.join(&log), dir.join(format!("{}.log", u64::MAX - 1))).unwrap();
    let before = snapshot(dir);
    let e = WritableDb::open(dir, WritableOptions::default()).unwrap_err();
    assert!(
        matches!(
            e,
            Error::LimitExceeded {
                limit: Limit::FileNumbers,
                value: u64::MAX,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        format!(
            "db: {}: the database has used every file number: the next would be \
             18446744073709551615, past the last, 18446744073709551614",
            dir.display()
        )
    );
    assert_eq!(snapshot(dir), before, "the open wrote to the directory");
    // The read-only open still reads every write.
    let db = leveltable_db::Db::open(dir, leveltable_db::DbOptions::default()).unwrap();
    assert_eq!(db.get(b"in the log").unwrap(), Some(b"yes".to_vec()));
}

#[test]
fn a_manifest_whose_next_file_number_is_near_the_last_is_refused() {
    for (next, opens) in [
        (MAX_FILE_NUMBER, false),
        (MAX_FILE_NUMBER - 1, true),
        (u64::MAX, false),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let mut edit = new_db_edit();
        edit.next_file_number = Some(next);
        manifest(&dir.join("MANIFEST-000001"), &[edit]);
        fs::write(dir.join("CURRENT"), "MANIFEST-000001\n").unwrap();
        fs::write(dir.join("LOCK"), "").unwrap();
        let before = snapshot(dir);
        let opened = WritableDb::open(dir, WritableOptions::default());
        if opens {
            // The log and the MANIFEST take the last two numbers; the first flush cannot
            // have a table number, and says so.
            let db = opened.unwrap();
            db.put(b"k", b"v", WriteOptions::SYNC).unwrap();
            let e = db.flush().unwrap_err();
            assert!(e.to_string().contains("used every file number"), "{e}");
            drop(db);
            let names = snapshot(dir).into_keys().collect::<Vec<_>>();
            assert!(
                names.contains(&format!("{}.log", MAX_FILE_NUMBER - 1))
                    && names.contains(&format!("MANIFEST-{MAX_FILE_NUMBER}")),
                "{names:?}"
            );
            assert!(!names.iter().any(|n| n.starts_with(&u64::MAX.to_string())));
        } else {
            let e = opened.unwrap_err();
            assert!(
                matches!(
                    e,
                    Error::LimitExceeded {
                        limit: Limit::FileNumbers,
                        ..
                    }
                ),
                "{next}: {e:?}"
            );
            assert_eq!(snapshot(dir), before);
        }
    }
}

#[test]
fn options_out_of_range_are_refused_at_open_and_nothing_is_created() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let table = |table: TableOptions| create().table(table);
    let bloom =
        |bits| table(TableOptions::default().filter_policy(Some(BloomFilterPolicy::new(bits))));
    for (options, option, value) in [
        (bloom(1_000_000_000), BLOOM_BITS_OPTION, 1_000_000_000),
        (bloom(MAX_BLOOM_BITS_PER_KEY + 1), BLOOM_BITS_OPTION, 65),
        (
            table(TableOptions::default().block_size(0)),
            "block_size",
            0,
        ),
        (
            table(TableOptions::default().block_restart_interval(0)),
            "block_restart_interval",
            0,
        ),
    ] {
        let e = WritableDb::open(&dir, options).unwrap_err();
        match &e {
            Error::OptionOutOfRange {
                option: o,
                value: v,
                ..
            } => assert_eq!((*o, *v), (option, value)),
            e => panic!("{option}: {e:?}"),
        }
        assert!(!dir.exists(), "{option}: the open created the directory");
    }
    assert_eq!(
        WritableDb::open(&dir, bloom(1_000_000_000))
            .unwrap_err()
            .to_string(),
        "db: invalid argument: filter_policy bits per key is 1000000000: it must be from 0 to 64"
    );
    // The most is taken, and its filters are written.
    let db = WritableDb::open(&dir, bloom(MAX_BLOOM_BITS_PER_KEY)).unwrap();
    db.put(b"k", b"v", WriteOptions::default()).unwrap();
    db.flush().unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()));
}

#[test]
fn create_if_missing_refuses_a_database_that_lost_current_and_deletes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    database(dir, 3000);
    fs::remove_file(dir.join("CURRENT")).unwrap();
    let before = snapshot(dir);
    for options in [create(), WritableOptions::default()] {
        let e = WritableDb::open(dir, options).unwrap_err();
        assert!(is_lost_current(&e), "{e:?}");
        assert!(e.is_corruption());
        assert!(
            e.to_string()
                .contains("no CURRENT file, though it holds a database's files (0"),
            "{e}"
        );
        assert_eq!(snapshot(dir), before, "the open changed the directory");
    }
}

#[test]
fn create_if_missing_refuses_a_directory_with_temporary_files_and_deletes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    fs::write(dir.join("000123.dbtmp"), "the user's").unwrap();
    fs::write(dir.join("notes.txt"), "kept").unwrap();
    let before = snapshot(dir);
    let e = WritableDb::open(dir, create()).unwrap_err();
    match &e {
        Error::LostCurrent { files, .. } => assert_eq!(files, &["000123.dbtmp"]),
        e => panic!("{e:?}"),
    }
    assert_eq!(snapshot(dir), before);
    // Other names are no database's: a database is made beside them.
    fs::remove_file(dir.join("000123.dbtmp")).unwrap();
    WritableDb::open(dir, create()).unwrap().close().unwrap();
    assert_eq!(fs::read(dir.join("notes.txt")).unwrap(), b"kept");
}

#[test]
fn an_open_racing_a_creation_is_told_the_lock_is_held() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // Another open is creating the database: it holds LOCK and has written MANIFEST-000001,
    // not yet CURRENT.
    let held = DbLock::acquire(dir).unwrap();
    manifest(&dir.join("MANIFEST-000001"), &[new_db_edit()]);
    let before = snapshot(dir);
    for options in [create(), WritableOptions::default()] {
        let e = WritableDb::open(dir, options).unwrap_err();
        assert!(matches!(e, Error::Locked { .. }), "{e:?}");
        assert!(e.to_string().contains("LOCK"), "{e}");
        assert_eq!(snapshot(dir), before);
    }
    drop(held);
}

#[test]
fn a_creation_interrupted_before_current_is_started_afresh() {
    /// What the creation left, and the files it left beside its first MANIFEST.
    type Left<'a> = (&'a str, &'a [(&'a str, &'a [u8])]);
    let variants: [Left<'_>; 5] = [
        ("the first MANIFEST synced", &[]),
        ("an empty first MANIFEST", &[]),
        (
            "the temporary CURRENT written",
            &[("000001.dbtmp", b"MANIFEST-000001\n")],
        ),
        (
            "part of the temporary CURRENT",
            &[("000001.dbtmp", b"MANIF")],
        ),
        ("an empty log", &[("000002.log", b"")]),
    ];
    for (what, extra) in variants {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        if what == "an empty first MANIFEST" {
            fs::write(dir.join("MANIFEST-000001"), b"").unwrap();
        } else {
            manifest(&dir.join("MANIFEST-000001"), &[new_db_edit()]);
        }
        fs::write(dir.join("LOCK"), b"").unwrap();
        for (name, bytes) in extra {
            fs::write(dir.join(name), bytes).unwrap();
        }
        // Without create_if_missing there is no database here, and nothing is changed.
        let before = snapshot(dir);
        let e = WritableDb::open(dir, WritableOptions::default()).unwrap_err();
        assert!(
            matches!(e, Error::NoDatabase { exists: true, .. }),
            "{what}: {e:?}"
        );
        assert_eq!(snapshot(dir), before);
        let db = WritableDb::open(dir, create()).unwrap_or_else(|e| panic!("{what}: {e}"));
        db.put(b"k", b"v", WriteOptions::SYNC).unwrap();
        db.close().unwrap();
        let db = WritableDb::open(dir, WritableOptions::default()).unwrap();
        assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()), "{what}");
    }
}

#[test]
fn a_first_manifest_that_records_data_is_a_lost_current() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // MANIFEST-000001 recording writes (a last sequence past 0): not a creation.
    let mut edit = new_db_edit();
    edit.last_sequence = Some(5);
    manifest(&dir.join("MANIFEST-000001"), &[new_db_edit(), edit]);
    assert_refused_as_lost_current(dir);
    // A log holding a record beside the first MANIFEST: not a creation either.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    manifest(&dir.join("MANIFEST-000001"), &[new_db_edit()]);
    fs::write(dir.join("000002.log"), b"\x01\x02\x03").unwrap();
    assert_refused_as_lost_current(dir);
    // A second MANIFEST: not a creation.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    manifest(&dir.join("MANIFEST-000001"), &[new_db_edit()]);
    manifest(&dir.join("MANIFEST-000003"), &[new_db_edit()]);
    assert_refused_as_lost_current(dir);
}
