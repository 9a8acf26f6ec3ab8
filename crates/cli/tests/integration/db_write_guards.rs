//! The write commands get the library's answers: file numbers that ran out, temporary
//! files in a directory without `CURRENT`, a database another process is creating, a
//! creation interrupted before `CURRENT`; and `db write` ended by a signal says which lines
//! were written.

#![cfg(unix)]

use crate::common;

use std::fs;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::time::Duration;

use common::*;
use leveltable_db::{Db, DbLock, DbOptions};

#[test]
fn a_log_numbered_near_the_last_file_number_is_refused_and_nothing_written() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    db_write_quietly(&db, "put\ta\t1\nput\tb\t2\n");
    let log = files_in(&db)
        .into_iter()
        .find(|n| n.ends_with(".log"))
        .unwrap();
    fs::rename(db.join(&log), db.join(format!("{}.log", u64::MAX - 1))).unwrap();
    let before = contents(&db);
    for _ in 0..3 {
        db_refused(&["put"], &db, &["k", "v"]).stderr(format!(
            "error: {}: the database has used every file number: the next would be \
                 18446744073709551615, past the last, 18446744073709551614\n",
            db.display()
        ));
        assert_eq!(contents(&db), before);
    }
    assert_eq!(db_dump(&db, &[]), "a\t1\nb\t2\n");
}

#[test]
fn create_if_missing_deletes_no_temporary_file_of_a_directory_without_current() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    fs::create_dir(&db).unwrap();
    fs::write(db.join("000042.dbtmp"), "the user's").unwrap();
    let before = contents(&db);
    db_refused(&["put", "--create-if-missing"], &db, &["k", "v"]).stderr(format!(
        "error: corruption: {}: no CURRENT file, though it holds a database's files \
             (000042.dbtmp); `leveltable db dump --salvage` reads what they hold\n",
        db.display()
    ));
    assert_eq!(contents(&db), before);
}

#[test]
fn an_open_racing_a_creation_names_the_lock() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    fs::create_dir(&db).unwrap();
    // Another process is creating the database: LOCK held, MANIFEST-000001 written, no
    // CURRENT yet.
    let held = DbLock::acquire(&db).unwrap();
    fs::write(db.join("MANIFEST-000001"), b"").unwrap();
    let before = contents(&db);
    for create in [true, false] {
        let flags: &[&str] = if create {
            &["put", "--create-if-missing"]
        } else {
            &["put"]
        };
        db_refused(flags, &db, &["k", "v"]).stderr(format!(
            "error: {}: locked by another process: the database is open in LevelDB or \
             another program; close it and try again\n",
            db.join("LOCK").display()
        ));
        assert_eq!(contents(&db), before);
    }
    drop(held);
}

#[test]
fn a_creation_interrupted_before_current_is_started_afresh() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    fs::create_dir(&db).unwrap();
    // What a creation killed after its first MANIFEST and the temporary CURRENT leaves.
    fs::write(db.join("MANIFEST-000001"), b"").unwrap();
    fs::write(db.join("000001.dbtmp"), b"MANIFEST-000001\n").unwrap();
    fs::write(db.join("LOCK"), b"").unwrap();
    // Without --create-if-missing there is no database.
    db_refused(&["put"], &db, &["k", "v"]).stderr(format!(
        "error: {}: not a LevelDB database: no CURRENT file (--create-if-missing \
             creates one)\n",
        db.display()
    ));
    db_write_quietly(&db, "put\tk\tv\n");
    assert_eq!(db_dump(&db, &[]), "k\tv\n");
}

/// Starts `db write --batch 2` on standard input, feeds it five lines and waits until the
/// database holds line 4 (two batches).
fn write_under_way(dir: &Path, sync: bool) -> (std::process::Child, std::process::ChildStdin) {
    let mut args = vec!["db", "write", "--create-if-missing", "--batch", "2"];
    args.push(path_str(dir));
    if sync {
        args.push("--sync");
    }
    let mut child = spawn_piped(args);
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"put\tk1\tv\nput\tk2\tv\nput\tk3\tv\ndel\tk1\nput\tk5\tv\n")
        .unwrap();
    stdin.flush().unwrap();
    wait_until(
        Duration::from_millis(10),
        || {
            Db::open(dir, DbOptions::default())
                .ok()
                .and_then(|db| db.get(b"k3").ok().flatten())
                .is_some()
        },
        || "the batches were not written".to_owned(),
    );
    (child, stdin)
}

/// [`write_under_way`], then sends `signal`; returns the exit status and standard error.
fn interrupted_write(dir: &Path, signal: &str, sync: bool) -> (std::process::ExitStatus, String) {
    let (child, stdin) = write_under_way(dir, sync);
    send_signal(child.id(), signal);
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_write_whose_standard_error_is_closed_still_ends_by_the_signal() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let (mut child, stdin) = write_under_way(&db, false);
    // Its message about the lines written cannot be printed: the signal still ends it.
    drop(child.stderr.take());
    send_signal(child.id(), "TERM");
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("db write went on after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    drop(stdin);
    assert_eq!(status.signal(), Some(15), "{status:?}");
    assert_eq!(db_dump(&db, &[]), "k2\tv\nk3\tv\n");
}

#[test]
fn a_write_ended_by_a_signal_says_which_lines_were_written() {
    for (signal, number, sync) in [("INT", 2, false), ("TERM", 15, true), ("HUP", 1, false)] {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("db");
        let (status, stderr) = interrupted_write(&db, signal, sync);
        assert_eq!(
            status.signal(),
            Some(number),
            "{signal}: {status:?} {stderr}"
        );
        let said = "error: interrupted; lines 1 to 4 were written (4 operations in 2 write \
                    batches), nothing after them";
        let expected = if sync {
            format!("{said}\n")
        } else {
            format!(
                "{said} (not synced: a crash of the machine may lose the latest; --sync syncs \
                 each batch)\n"
            )
        };
        assert_eq!(stderr, expected, "{signal}");
        // Exactly those lines are in the database.
        assert_eq!(db_dump(&db, &[]), "k2\tv\nk3\tv\n", "{signal}");
    }
}
