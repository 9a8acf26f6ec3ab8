//! The `LOCK` file against LevelDB 1.23: a LevelDB process with the database open and a
//! held [`DbLock`] exclude each other, and the bulk commit holds the lock while it places
//! files.
//!
//! POSIX record locks belong to a process, so LevelDB runs in a child: this test binary,
//! run again with `LEVELTABLE_LOCK_CHILD` set (see `leveldb_child`).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Stdio};

use leveltable_db::{
    BulkOptions, Db as OurDb, DbLock, DbOptions as OurOptions, Error, PartBuilder,
};
use leveltable_db::{commit, commit_with_progress};
use leveltable_interop::db::{Db, DbOptions};
use leveltable_interop::require_leveldb;

use crate::common::child_test;

/// Runs as the child when this binary is its own child: opens the database in
/// `LEVELTABLE_LOCK_CHILD` (`hold:DIR` or `try:DIR`) with LevelDB and `create_if_missing`
/// (with `ours:DIR`, takes a [`DbLock`] of it instead), prints `CHILD OPENED` or
/// `CHILD FAILED <status>`; with `hold` and `ours`, keeps it until its standard input closes.
#[test]
fn leveldb_child() {
    let Ok(spec) = std::env::var("LEVELTABLE_LOCK_CHILD") else {
        return;
    };
    let (mode, dir) = spec.split_once(':').unwrap();
    if mode == "ours" {
        let _lock = DbLock::acquire(dir).unwrap();
        println!("\nCHILD OPENED");
        std::io::stdout().flush().unwrap();
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
        return;
    }
    match Db::open(Path::new(dir), &DbOptions::default()) {
        Ok(db) => {
            println!("\nCHILD OPENED");
            std::io::stdout().flush().unwrap();
            if mode == "hold" {
                let mut line = String::new();
                let _ = std::io::stdin().read_line(&mut line);
            }
            db.close();
        }
        Err(e) => println!("\nCHILD FAILED {e}"),
    }
}

fn child(mode: &str, dir: &Path) -> Child {
    child_test("db_lock::leveldb_child")
        .env("LEVELTABLE_LOCK_CHILD", format!("{mode}:{}", dir.display()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The child's `CHILD ...` line, without the prefix; `None` if it printed none.
fn child_says(out: &mut BufReader<ChildStdout>) -> Option<String> {
    let mut line = String::new();
    while out.read_line(&mut line).unwrap() > 0 {
        if let Some(said) = line.trim_end().strip_prefix("CHILD ") {
            return Some(said.to_owned());
        }
        line.clear();
    }
    None
}

/// Reads the rest of the child's output (so that its last lines do not meet a closed pipe)
/// and checks that it exited successfully.
fn finish(mut c: Child, mut out: BufReader<ChildStdout>) {
    drop(c.stdin.take());
    std::io::copy(&mut out, &mut std::io::sink()).unwrap();
    assert!(c.wait().unwrap().success());
}

/// What LevelDB, in a child process, says opening `dir`: `OPENED` or `FAILED <status>`.
fn leveldb_opens(dir: &Path) -> String {
    let mut c = child("try", dir);
    let mut out = BufReader::new(c.stdout.take().unwrap());
    let said = child_says(&mut out);
    finish(c, out);
    said.expect("the child said nothing")
}

/// A LevelDB process holding `dir` open until [`close`](Self::close)d.
struct Holder {
    child: Child,
    out: BufReader<ChildStdout>,
}

impl Holder {
    /// LevelDB holding `dir`.
    fn open(dir: &Path) -> Holder {
        Holder::new("hold", dir)
    }

    /// Another process of ours holding a [`DbLock`] of `dir`.
    fn ours(dir: &Path) -> Holder {
        Holder::new("ours", dir)
    }

    fn new(mode: &str, dir: &Path) -> Holder {
        let mut child = child(mode, dir);
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let said = child_says(&mut out);
        assert_eq!(said.as_deref(), Some("OPENED"));
        Holder { child, out }
    }

    fn close(self) {
        finish(self.child, self.out);
    }
}

fn assert_locked_elsewhere(result: leveltable_db::Result<DbLock>, dir: &Path) {
    match result {
        Err(Error::Locked {
            path,
            by_this_process: false,
        }) => assert_eq!(path, dir.join("LOCK")),
        other => panic!("expected the lock held by another process, got {other:?}"),
    }
}

fn assert_leveldb_refused(dir: &Path) {
    let said = leveldb_opens(dir);
    assert!(said.starts_with("FAILED"), "{said}");
    assert!(said.contains("LOCK"), "{said}");
    assert!(said.contains("Resource temporarily unavailable"), "{said}");
}

#[test]
fn a_leveldb_process_and_a_db_lock_exclude_each_other() {
    if !require_leveldb() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");

    // LevelDB holds the database: our lock is refused, naming the file.
    let holder = Holder::open(&db);
    let refused = DbLock::acquire(&db);
    let message = refused.as_ref().unwrap_err().to_string();
    assert!(
        message.contains(&db.join("LOCK").display().to_string()),
        "{message}"
    );
    assert!(message.contains("locked by another process"), "{message}");
    assert_locked_elsewhere(refused, &db);
    holder.close();

    // We hold it: LevelDB's open is refused.
    let lock = DbLock::acquire(&db).unwrap();
    assert!(!lock.created(), "LevelDB made the LOCK file");
    assert_leveldb_refused(&db);
    // A second attempt of ours, refused in the process, leaves the lock held.
    assert!(matches!(
        DbLock::acquire(&db),
        Err(Error::Locked {
            by_this_process: true,
            ..
        })
    ));
    assert_leveldb_refused(&db);

    // Dropped: LevelDB opens.
    drop(lock);
    assert_eq!(leveldb_opens(&db), "OPENED");
    assert!(db.join("LOCK").is_file());
}

#[test]
fn a_db_lock_of_a_new_directory_keeps_leveldb_out() {
    if !require_leveldb() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let lock = DbLock::acquire(dir.path()).unwrap();
    assert!(lock.created());
    assert_leveldb_refused(dir.path());
    drop(lock);
    assert_eq!(leveldb_opens(dir.path()), "OPENED");
}

#[test]
fn db_locks_of_two_processes_exclude_each_other() {
    if !require_leveldb() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let other = Holder::ours(dir.path());
    assert_locked_elsewhere(DbLock::acquire(dir.path()), dir.path());
    assert_leveldb_refused(dir.path());
    other.close();
    drop(DbLock::acquire(dir.path()).unwrap());
}

/// A part of `n` entries in `staging`, in small files.
fn part(staging: &Path, n: u32) -> leveltable_db::Part {
    let mut builder =
        PartBuilder::create(staging, BulkOptions::default().max_file_size(4096)).unwrap();
    for i in 0..n {
        builder
            .add(format!("key{i:06}").as_bytes(), &[i as u8; 100])
            .unwrap();
    }
    builder.finish().unwrap()
}

/// A part of 50 entries staged in `dir/part`: its staging directory, the part, and the
/// path `dir/db` to commit it to.
fn staged_part(dir: &Path) -> (PathBuf, leveltable_db::Part, PathBuf) {
    let staging = dir.join("part");
    let part = part(&staging, 50);
    (staging, part, dir.join("db"))
}

/// Commits `part` (staged in `staging`) into `db`, checks that it is refused because another
/// process holds `db`'s LOCK and that the part stays staged, and returns the error.
fn assert_commit_locked_elsewhere(db: &Path, staging: &Path, part: &leveltable_db::Part) -> Error {
    let err = commit(db, std::slice::from_ref(part)).unwrap_err();
    assert!(
        matches!(&err, Error::Locked { path, by_this_process: false } if *path == db.join("LOCK")),
        "{err:?}"
    );
    assert!(staging.join("PART").is_file(), "the part is still staged");
    err
}

#[test]
fn leveldb_cannot_open_a_database_while_it_is_committed() {
    if !require_leveldb() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let part = part(&tmp.path().join("part"), 300);
    assert!(part.files.len() >= 2);
    let db = tmp.path().join("db");
    let mut tried = false;
    commit_with_progress(&db, &[part], &mut |done, total| {
        // Past the checks, with a file placed and no CURRENT yet.
        if done > total / 2 && !tried {
            tried = true;
            assert!(!db.join("CURRENT").exists());
            assert_leveldb_refused(&db);
        }
    })
    .unwrap();
    assert!(tried);
    // Released with CURRENT in place: LevelDB opens what was committed.
    let leveldb = Db::open(&db, &DbOptions::default()).unwrap();
    assert_eq!(
        leveldb.get(b"key000299").unwrap().as_deref(),
        Some(&[43u8; 100][..])
    );
    leveldb.close();
    assert_eq!(
        OurDb::open(&db, OurOptions::default())
            .unwrap()
            .iter()
            .count(),
        300
    );
}

#[test]
fn a_commit_into_a_directory_another_process_holds_is_refused() {
    if !require_leveldb() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (staging, part, db) = staged_part(tmp.path());
    std::fs::create_dir(&db).unwrap();
    // An empty directory whose LOCK another process holds.
    let other = Holder::ours(&db);
    assert_commit_locked_elsewhere(&db, &staging, &part);
    other.close();
    commit(&db, &[part]).unwrap();
    assert_eq!(leveldb_opens(&db), "OPENED");
}

#[test]
fn a_commit_into_a_database_leveldb_has_open_says_it_is_locked() {
    if !require_leveldb() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (staging, part, db) = staged_part(tmp.path());
    let holder = Holder::open(&db);
    let text = assert_commit_locked_elsewhere(&db, &staging, &part).to_string();
    assert!(text.contains("locked by another process"), "{text}");
    holder.close();
    // Closed, the database is refused as not empty, as before.
    let err = commit(&db, &[part]).unwrap_err();
    assert!(err.to_string().contains("is not empty"), "{err}");
    assert_eq!(leveldb_opens(&db), "OPENED");
}
