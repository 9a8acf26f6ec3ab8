//! Every operation of a database's `FileSystem` failing in turn with EIO (listing the
//! directory, reading a file, opening a table; for a writable open also locking `LOCK`,
//! creating, writing, syncing, renaming, removing, syncing the directory and unlocking), for
//! a read-only open and a full read, a salvage, a writable open's recovery of a database
//! with tables and a live log, and a read-only database's refresh after a writer reopened it
//! (a new MANIFEST) and wrote more (a new log). Each failure is an error naming the
//! database's directory or a file in it, or a view that still holds everything; the
//! read-only paths change no byte of the directory; a recovery that failed leaves a database
//! that opens holding every write; a refresh that failed leaves the view as it was, and the
//! next refresh brings it up to date.
//!
//! Bulk builds and their commits fail each operation in turn in `bulk_faults.rs`, the
//! writer's writes, flushes and compactions in `writer_faults.rs`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use leveltable_db::{Db, DbIter, DbOptions, WritableDb, WritableOptions, WriteOptions};

use crate::common;

use common::failing_fs::{EIO, Failing, FailingFs};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Writes 1,500 puts and deletes over 1,000 keys into a new database at `dir`, with a flush
/// and a compaction on the way and the last writes left in the log; returns what it holds.
fn fixture(dir: &Path) -> Model {
    let options = WritableOptions::default()
        .create_if_missing(true)
        .write_buffer_size(16 << 10);
    let db = WritableDb::open(dir, options).unwrap();
    let mut model = Model::new();
    for i in 0u64..1500 {
        let key = format!("key{:05}", (i * 7919) % 1000).into_bytes();
        if i % 5 == 0 {
            db.delete(&key, WriteOptions::default()).unwrap();
            model.remove(&key);
        } else {
            let value = vec![b'a' + (i % 26) as u8; 100 + (i % 300) as usize];
            db.put(&key, &value, WriteOptions::default()).unwrap();
            model.insert(key, value);
        }
        match i {
            600 => db.flush().unwrap(),
            1000 => db.compact_range(None, None).unwrap(),
            _ => {}
        }
    }
    db.close().unwrap();
    model
}

/// Every file of `dir` and its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let name = entry.file_name().into_string().unwrap();
            (name, std::fs::read(entry.path()).unwrap())
        })
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    for (name, data) in files(from) {
        std::fs::write(to.join(name), data).unwrap();
    }
}

fn read_all(iter: DbIter) -> leveltable_db::Result<Model> {
    iter.collect()
}

/// Checks that a failure's error names the database's directory (or a file in it).
fn names_the_directory(error: &leveltable_db::Error, dir: &Path, ctx: &str) {
    let message = error.to_string();
    assert!(
        message.contains(&*dir.to_string_lossy()),
        "{ctx}: the error names neither the directory nor a file in it: {message}"
    );
}

/// Runs `attempt` with operation 0, 1, 2, … failing until one runs without reaching its
/// failing operation; returns how many operations failed.
fn each_failing_operation(mut attempt: impl FnMut(Arc<Failing>, &str)) -> u64 {
    let mut fail_at = 0;
    loop {
        let failing = Failing::new(fail_at, EIO);
        attempt(
            Arc::clone(&failing),
            &format!("operation {fail_at} failing"),
        );
        if !failing.failed() {
            eprintln!("{fail_at} operations failed in turn");
            return fail_at;
        }
        fail_at += 1;
    }
}

fn failing_options(failing: &Arc<Failing>) -> DbOptions {
    DbOptions::default().file_system(Arc::new(FailingFs(Arc::clone(failing))))
}

/// Reads the fixture through `open` and a full read as each operation fails in turn:
/// each time the view is whole, or the files it left out are listed (a salvage's
/// `skipped`), or the error names the directory or a file in it; no byte of the directory
/// changes. Returns how many operations failed.
fn fails_clearly_and_changes_nothing(
    open: fn(&Path, DbOptions) -> leveltable_db::Result<Db>,
) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let model = fixture(dir.path());
    let before = files(dir.path());
    each_failing_operation(|failing, ctx| {
        let opened = open(dir.path(), failing_options(&failing));
        let skipped = opened
            .as_ref()
            .map(|db| db.properties().skipped.clone())
            .unwrap_or_default();
        match opened.and_then(|db| read_all(db.iter())) {
            Ok(view) if view == model => {}
            Ok(_) => assert!(
                !skipped.is_empty(),
                "{ctx}: entries lost, no file said skipped"
            ),
            Err(e) => {
                assert!(failing.failed(), "{ctx}: {e}");
                names_the_directory(&e, dir.path(), ctx);
            }
        }
        for (file, why) in &skipped {
            assert!(failing.failed(), "{ctx}: {file} skipped: {why}");
        }
        assert_eq!(files(dir.path()), before, "{ctx}: the directory changed");
    })
}

#[test]
fn a_read_only_open_and_read_fail_clearly_and_change_nothing() {
    let failed = fails_clearly_and_changes_nothing(|dir, options| Db::open(dir, options));
    // CURRENT, the MANIFEST, the listing, the log and the tables.
    assert!(failed >= 5, "only {failed} operations");
}

#[test]
fn a_salvage_fails_clearly_or_says_what_it_skipped_and_changes_nothing() {
    let failed = fails_clearly_and_changes_nothing(|dir, options| Db::salvage(dir, options));
    assert!(failed >= 5, "only {failed} operations");
}

#[test]
fn a_recovery_that_fails_loses_nothing() {
    let source = tempfile::tempdir().unwrap();
    let model = fixture(source.path());
    let mut errors = Vec::new();
    let failed = each_failing_operation(|failing, ctx| {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(source.path(), dir.path());
        let fs = Arc::new(FailingFs(Arc::clone(&failing)));
        let options = WritableOptions::default().file_system(fs);
        let result = WritableDb::open(dir.path(), options).and_then(|db| {
            let view = read_all(db.iter());
            db.close()?;
            view
        });
        match result {
            Ok(view) => assert_eq!(view, model, "{ctx}: the view lost entries"),
            Err(e) => {
                assert!(failing.failed(), "{ctx}: {e}");
                names_the_directory(&e, dir.path(), ctx);
                errors.push(e.to_string());
            }
        }
        // Also after the unlock failed as the database closed: the lock was released.
        let db = WritableDb::open(dir.path(), WritableOptions::default())
            .unwrap_or_else(|e| panic!("{ctx}: the database no longer opens: {e}"));
        assert_eq!(read_all(db.iter()).unwrap(), model, "{ctx}: entries lost");
        db.close().unwrap();
    });
    // Locking, reading CURRENT, the MANIFEST, the log; writing a table, a new log and a
    // MANIFEST.
    assert!(failed >= 10, "only {failed} operations");
    let lock = dir_file_error(&errors, "cannot lock");
    assert!(lock.ends_with(&format!("LOCK: {}", eio())), "{lock}");
}

/// Checks that `view` is `model`, saying how they differ if not.
fn same(view: &Model, model: &Model, ctx: &str) {
    if view != model {
        let first = view
            .iter()
            .zip(model.iter())
            .find(|(a, b)| a != b)
            .map(|(a, b)| {
                (
                    String::from_utf8_lossy(a.0).into_owned(),
                    String::from_utf8_lossy(b.0).into_owned(),
                )
            });
        panic!(
            "{ctx}: {} entries, expected {}; first difference at {first:?}",
            view.len(),
            model.len()
        );
    }
}

/// The OS's words for EIO.
fn eio() -> std::io::Error {
    std::io::Error::from_raw_os_error(EIO)
}

/// The first of `errors` that contains `what`; fails if there is none.
fn dir_file_error<'a>(errors: &'a [String], what: &str) -> &'a str {
    errors
        .iter()
        .find(|e| e.contains(what))
        .unwrap_or_else(|| panic!("no failure said {what:?}: {errors:#?}"))
}

/// What the fixture's database holds once a writer reopened it (writing its log to a table
/// and starting a new MANIFEST and a new log) and wrote 300 more puts and deletes, left in
/// the new log; the writer is closed.
fn write_more(dir: &Path, mut model: Model) -> Model {
    let db = WritableDb::open(dir, WritableOptions::default()).unwrap();
    for i in 0u64..300 {
        let key = format!("key{:05}", (i * 31) % 1200).into_bytes();
        if i % 7 == 0 {
            db.delete(&key, WriteOptions::default()).unwrap();
            model.remove(&key);
        } else {
            let value = format!("later {i}").into_bytes();
            db.put(&key, &value, WriteOptions::default()).unwrap();
            model.insert(key, value);
        }
    }
    db.wait_for_compactions().unwrap();
    db.close().unwrap();
    model
}

/// A read-only database opened (and read whole, so that its tables are held open) before a
/// writer reopened it and wrote more; then a refresh with each of its file system's
/// operations failing in turn (reading `CURRENT`, the new MANIFEST, asking the directory's
/// time, listing it, opening the new log, its size and reads, opening the new tables). A
/// refresh that fails names the directory or the file, and leaves the view reading as
/// before; the next refresh brings it up to what the writer wrote.
#[test]
fn a_refresh_that_fails_keeps_its_view_and_the_next_one_catches_up() {
    let source = tempfile::tempdir().unwrap();
    let model = fixture(source.path());
    // The operations of the open and the first read, which do not fail here.
    let opening = {
        let failing = Failing::new(u64::MAX, EIO);
        let db = Db::open(source.path(), failing_options(&failing)).unwrap();
        assert_eq!(read_all(db.iter()).unwrap(), model);
        failing.ops()
    };
    let mut errors = Vec::new();
    for fail_at in opening.. {
        let ctx = format!("refresh operation {} failing", fail_at - opening);
        let ctx = ctx.as_str();
        let dir = tempfile::tempdir().unwrap();
        copy_dir(source.path(), dir.path());
        let failing = Failing::new(fail_at, EIO);
        let mut db = Db::open(dir.path(), failing_options(&failing)).unwrap();
        same(&read_all(db.iter()).unwrap(), &model, ctx);
        assert_eq!(failing.ops(), opening, "{ctx}: the open and read differ");
        let later = write_more(dir.path(), model.clone());
        match db.refresh() {
            Ok(refresh) => {
                assert!(!failing.failed(), "{ctx}: the failure was not reported");
                assert!(refresh.changed(), "{ctx}: {refresh:?}");
                same(
                    &read_all(db.iter()).unwrap(),
                    &later,
                    &format!("{ctx}: entries lost"),
                );
                eprintln!("{} operations of a refresh failed in turn", errors.len());
                break;
            }
            Err(e) => {
                assert!(failing.failed(), "{ctx}: {e}");
                names_the_directory(&e, dir.path(), ctx);
                let view = read_all(db.iter()).unwrap_or_else(|e| panic!("{ctx}: {e}"));
                same(&view, &model, &format!("{ctx}: the view changed ({e})"));
                errors.push(e.to_string());
                let refresh = db
                    .refresh()
                    .map_err(|e2| format!("{e2} (after {e})"))
                    .unwrap_or_else(|e| panic!("{ctx}: the next refresh: {e}"));
                assert!(refresh.changed(), "{ctx}: {refresh:?}");
                same(
                    &read_all(db.iter()).unwrap(),
                    &later,
                    &format!("{ctx}: entries lost after {}", errors.last().unwrap()),
                );
            }
        }
    }
    // Each kind of file the refresh reads was seen failing, and the directory itself (its
    // time, its listing).
    let files = ["CURRENT", "MANIFEST-", ".log", ".ldb"];
    for what in files {
        dir_file_error(&errors, what);
    }
    let of_the_directory = errors
        .iter()
        .filter(|e| !files.iter().any(|file| e.contains(file)))
        .count();
    assert!(of_the_directory >= 2, "{errors:#?}");
}
