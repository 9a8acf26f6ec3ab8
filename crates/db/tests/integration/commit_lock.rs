//! A commit holds the database directory's `LOCK` file from before the first file is placed
//! until `CURRENT` is in place, is refused while another holds it, and removes the `LOCK`
//! file it made when it fails. (Against a LevelDB process: `crates/interop/tests/db_lock.rs`.)

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use leveltable_db::{
    BulkOptions, Db, DbLock, DbOptions, Error, Part, PartBuilder, commit, commit_with_progress,
};

use crate::common::names;

fn entries(n: u32) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..n)
        .map(|i| {
            let value = (0..64).map(|j| (i * 31 + j * 7) as u8).collect();
            (format!("key{i:06}").into_bytes(), value)
        })
        .collect()
}

/// A part of `entries(n)` in `staging`, in several small table files.
fn part(staging: &Path, n: u32) -> Part {
    let options = BulkOptions::default().max_file_size(4096);
    let mut builder = PartBuilder::create(staging, options).unwrap();
    for (k, v) in entries(n) {
        builder.add(&k, &v).unwrap();
    }
    builder.finish().unwrap()
}

/// Every file in `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let bytes = fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect()
}

fn read_back(dir: &Path) -> Vec<(Vec<u8>, Vec<u8>)> {
    let db = Db::open(dir, DbOptions::default()).unwrap();
    db.iter().collect::<Result<Vec<_>, _>>().unwrap()
}

#[test]
fn a_commit_into_a_locked_directory_is_refused_and_moves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let staging = tmp.path().join("part");
    let part = part(&staging, 500);
    let db = tmp.path().join("db");
    fs::create_dir(&db).unwrap();
    let before = snapshot(&staging);

    let holder = DbLock::acquire(&db).unwrap();
    let err = commit(&db, std::slice::from_ref(&part)).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(&db.join("LOCK").display().to_string()),
        "{text}"
    );
    match err {
        Error::Locked { path, .. } => assert_eq!(path, db.join("LOCK")),
        other => panic!("expected Locked, got {other:?}"),
    }
    assert!(before == snapshot(&staging), "the staging changed");
    assert_eq!(names(&db), ["LOCK"], "only the holder's LOCK file");

    drop(holder);
    let summary = commit(&db, &[part]).unwrap();
    assert_eq!(summary.entries, 500);
    assert_eq!(read_back(&db), entries(500));
    assert!(names(&db).contains(&"LOCK".to_owned()));
}

#[test]
fn the_commit_holds_the_lock_until_current_is_in_place() {
    let tmp = tempfile::tempdir().unwrap();
    let part = part(&tmp.path().join("part"), 500);
    assert!(part.files.len() >= 2, "{} files", part.files.len());
    let db = tmp.path().join("db");
    let mut seen_placing = 0;
    commit_with_progress(&db, &[part], &mut |done, total| {
        if done <= total / 2 {
            return; // Still checking: nothing is locked or placed yet.
        }
        seen_placing += 1;
        assert!(!db.join("CURRENT").exists());
        match DbLock::acquire(&db) {
            Err(Error::Locked {
                by_this_process: true,
                ..
            }) => {}
            other => panic!("the commit does not hold the lock while placing: {other:?}"),
        }
    })
    .unwrap();
    assert!(seen_placing >= 2);
    assert!(db.join("CURRENT").is_file());
    assert!(db.join("LOCK").is_file(), "the LOCK file stays");
    drop(DbLock::acquire(&db).expect("released once CURRENT is in place"));
}

/// A commit into the existing, empty (but for `lock_before`) directory `db` that fails while
/// placing (a staged file is replaced after it was checked).
fn commit_failing_while_placing(tmp: &Path, db: &Path) -> Error {
    let staging = tmp.join("part");
    let part = part(&staging, 500);
    let victim = staging.join(&part.files[1].name);
    let mut replaced = false;
    commit_with_progress(db, &[part], &mut |done, total| {
        if done > total / 2 && !replaced {
            // After the first file is placed: the second becomes another file.
            let copy = staging.join("copy");
            fs::copy(&victim, &copy).unwrap();
            fs::rename(&copy, &victim).unwrap();
            replaced = true;
        }
    })
    .unwrap_err()
}

#[test]
fn a_failed_commit_removes_the_lock_file_it_made() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    fs::create_dir(&db).unwrap();
    let err = commit_failing_while_placing(tmp.path(), &db);
    assert!(
        err.to_string().contains("changed while the commit ran"),
        "{err}"
    );
    assert!(db.is_dir(), "the directory was there before");
    assert_eq!(names(&db), Vec::<String>::new(), "{err}");
}

#[test]
fn a_lock_file_left_alone_counts_as_empty_and_stays() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    fs::create_dir(&db).unwrap();
    fs::write(db.join("LOCK"), b"").unwrap();

    let err = commit_failing_while_placing(tmp.path(), &db);
    assert_eq!(names(&db), ["LOCK"], "{err}");

    let part = part(&tmp.path().join("again"), 300);
    commit(&db, &[part]).unwrap();
    assert_eq!(read_back(&db), entries(300));
}

#[test]
fn a_directory_with_other_files_is_refused_and_gets_no_lock_file() {
    let tmp = tempfile::tempdir().unwrap();
    let part = part(&tmp.path().join("part"), 100);
    let db = tmp.path().join("db");
    fs::create_dir(&db).unwrap();
    fs::write(db.join("notes"), b"mine").unwrap();
    let err = commit(&db, &[part]).unwrap_err();
    assert!(err.to_string().contains("is not empty"), "{err}");
    assert_eq!(names(&db), ["notes"]);
}

#[cfg(unix)]
#[test]
fn a_lock_that_is_a_symbolic_link_is_refused_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let staging = tmp.path().join("part");
    let part = part(&staging, 100);
    let before = snapshot(&staging);
    let db = tmp.path().join("db");
    fs::create_dir(&db).unwrap();
    let target = tmp.path().join("elsewhere");
    std::os::unix::fs::symlink(&target, db.join("LOCK")).unwrap();

    let err = commit(&db, &[part]).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("a symbolic link"), "{text}");
    assert!(
        text.contains(&db.join("LOCK").display().to_string()),
        "{text}"
    );
    assert!(!target.exists(), "the link was followed");
    assert_eq!(names(&db), ["LOCK"]);
    assert!(before == snapshot(&staging), "the staging changed");
}
