//! `leveltable db put`, `db delete`, `db write` and `db compact`: what they write is read
//! back by the read commands and by LevelDB 1.23, malformed input keeps the batches before
//! it and nothing of its own, a database held open elsewhere is refused naming its LOCK,
//! and a missing database is an error that creates nothing.

use crate::common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use common::*;
use predicates::prelude::*;
use serde_json::Value;

/// `leveltable db COMMAND DIR ARGS...`, asserting success with nothing on standard output.
fn db_ok(command: &str, dir: &Path, args: &[&str]) {
    let out = db_output(command, dir, args);
    assert!(out.status.success(), "db {command}: {}", stderr_of(&out));
    assert_eq!(
        stdout_of(&out),
        "",
        "db {command} printed on standard output"
    );
}

/// The table files of each level, as `db stats --json` counts them.
fn files_per_level(dir: &Path) -> Vec<u64> {
    let out = db_output("stats", dir, &["--json"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    json["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["files"].as_u64().unwrap())
        .collect()
}

/// The lines `put<TAB>KEY<TAB>VALUE` of keys `k00`..`k{n-1}` with values `{tag}-{i}`.
fn puts(n: usize, tag: &str) -> String {
    (0..n)
        .map(|i| format!("put\tk{i:02}\t{tag}-{i}\n"))
        .collect()
}

#[test]
fn put_then_get_reads_it_and_a_second_put_replaces_it() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("new/db");
    db_ok("put", &db, &["apple", "red", "--create-if-missing"]);
    db_ok("put", &db, &["banana", "yellow", "--sync"]);
    leveltable()
        .args(["db", "get"])
        .arg(&db)
        .args(["apple", "banana"])
        .assert()
        .code(0)
        .stdout("apple\tred\nbanana\tyellow\n");
    db_ok("put", &db, &["apple", "green"]);
    // An empty value, and a key that starts with `-` after `--`.
    db_ok("put", &db, &["--", "-k", ""]);
    assert_eq!(db_dump(&db, &[]), "-k\t\napple\tgreen\nbanana\tyellow\n");
    // Text mode refuses what the read commands could not print back; nothing is written.
    db_refused(&["put"], &db, &["k", "a\tb"]).stderr(predicate::str::contains(
        "the value contains a tab or a newline; use --hex",
    ));
    assert_eq!(db_dump(&db, &[]), "-k\t\napple\tgreen\nbanana\tyellow\n");
}

#[test]
fn delete_removes_several_keys_in_one_batch() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    db_write_quietly(&db, &puts(5, "v"));
    // An absent key is no error.
    db_ok("delete", &db, &["k01", "k03", "k04", "absent"]);
    assert_eq!(db_dump(&db, &[]), "k00\tv-0\nk02\tv-2\n");
    // A key that does not decode deletes nothing, not even the keys before it.
    db_refused(&["delete", "--hex"], &db, &["6b3030", "zz"])
        .stdout("")
        .stderr("error: key argument 2 is not hex: \"z\" at position 1\n");
    assert_eq!(db_dump(&db, &[]), "k00\tv-0\nk02\tv-2\n");
    db_refused(&["delete"], &db, &[]).stderr(predicate::str::contains("<KEY>..."));
}

#[test]
fn write_reads_a_file_or_standard_input_in_batches() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let input = tmp.path().join("ops.tsv");
    // Ten puts, an empty line (skipped), two deletes and a put replacing a value.
    let text = format!("{}\ndel\tk03\ndel\tk07\nput\tk05\tnew\n", puts(10, "a"));
    fs::write(&input, &text).unwrap();
    leveltable()
        .args(["db", "write", "--create-if-missing", "--batch", "4"])
        .arg(&db)
        .arg(&input)
        .assert()
        .success()
        .stdout("")
        .stderr(
            predicate::str::is_match(format!(
                r"^wrote {}: 11 puts, 2 deletes in 4 write batches, \d+\.\d\d s\n$",
                regex_escape(&db.display().to_string())
            ))
            .unwrap(),
        );
    let want: String = (0..10)
        .filter(|i| ![3, 7].contains(i))
        .map(|i| match i {
            5 => "k05\tnew\n".to_owned(),
            i => format!("k{i:02}\ta-{i}\n"),
        })
        .collect();
    assert_eq!(db_dump(&db, &[]), want);

    // The same from standard input, absent or `-`, into new databases; the last line
    // without its newline.
    for input_arg in [None, Some("-")] {
        let other = tmp.path().join(format!("db-{}", input_arg.is_some()));
        leveltable()
            .args([
                "db",
                "write",
                "--create-if-missing",
                "--batch",
                "1",
                "--sync",
            ])
            .arg(&other)
            .args(input_arg)
            .write_stdin(text.trim_end().to_owned())
            .assert()
            .success()
            .stderr(predicate::str::contains(
                "11 puts, 2 deletes in 13 write batches",
            ));
        assert_eq!(db_dump(&other, &[]), want);
    }
}

#[test]
fn a_malformed_line_keeps_the_batches_before_it_and_nothing_of_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    db_ok("put", &db, &["k06", "old", "--create-if-missing"]);
    // Batches of 2: lines 1-2 and 3-4 are written; line 5 shares its batch with the
    // malformed line 6, so neither it nor line 7 is.
    let input = tmp.path().join("ops.tsv");
    let text = "put\tk01\tv\nput\tk02\tv\ndel\tk06\nput\tk04\tv\nput\tk05\tv\nput\tk06\n\
                put\tk07\tv\n";
    fs::write(&input, text).unwrap();
    leveltable()
        .args(["db", "write", "--batch", "2"])
        .arg(&db)
        .arg(&input)
        .assert()
        .code(2)
        .stdout("")
        .stderr(format!(
            "error: line 6 of {}: expected put<TAB>KEY<TAB>VALUE, found no tab after the key; \
             lines 1 to 4 were written (4 operations in 2 write batches), nothing after them\n",
            input.display()
        ));
    assert_eq!(db_dump(&db, &[]), "k01\tv\nk02\tv\nk04\tv\n");

    // From standard input, an unknown operation in the first batch: nothing is written.
    leveltable()
        .args(["db", "write", "--batch", "3"])
        .arg(&db)
        .write_stdin("put\tk10\tv\n\nset\tk11\tv\n")
        .assert()
        .code(2)
        .stderr(
            "error: line 3 of standard input: expected put<TAB>KEY<TAB>VALUE or del<TAB>KEY, \
             found the operation \"set\"; nothing was written\n",
        );
    // A line over --max-line is named the same way.
    leveltable()
        .args(["db", "write", "--batch", "1", "--max-line", "12"])
        .arg(&db)
        .write_stdin("put\tk10\tv\nput\tk11\tlong value\n")
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "line 2 of standard input is longer than 12 bytes (raise the limit with \
             --max-line); lines 1 to 1 were written (1 operation in 1 write batch)",
        ));
    assert_eq!(db_dump(&db, &[]), "k01\tv\nk02\tv\nk04\tv\nk10\tv\n");
}

#[test]
fn hex_keys_and_values_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    // Keys and values with a tab, a newline, a NUL and a byte that is not UTF-8.
    db_ok(
        "put",
        &db,
        &["--hex", "--create-if-missing", "6b090aff00", "760a0900"],
    );
    leveltable()
        .args(["db", "write", "--hex", "-q"])
        .arg(&db)
        .write_stdin("put\t00\tFF09\nput\t0a\t\ndel\t00\nput\t01\t02\n")
        .assert()
        .success();
    db_ok("delete", &db, &["--hex", "01"]);
    assert_eq!(db_dump(&db, &["--hex"]), "0a\t\n6b090aff00\t760a0900\n");
    leveltable()
        .args(["db", "get", "--hex"])
        .arg(&db)
        .arg("6B090AFF00")
        .assert()
        .code(0)
        .stdout("6b090aff00\t760a0900\n");
    // The text commands refuse what only hex can spell.
    db_refused(&["put"], &db, &["a\nb", "v"]).stderr("error: the key contains a tab or a newline; use --hex for keys and values with tabs or newlines\n");
}

#[test]
fn compact_empties_level_0_in_its_range_and_keeps_the_data() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    // Each command's open turns the previous command's log into a level-0 table, each
    // holding k00..k09.
    let runs = [
        puts(10, "a"),
        format!("{}del\tk09\n", puts(10, "b")),
        puts(5, "c"),
    ];
    for ops in &runs {
        db_write_quietly(&db, ops);
    }
    let data = db_dump(&db, &[]);
    let want: String = (0..9)
        .map(|i| format!("k{i:02}\t{}-{i}\n", if i < 5 { "c" } else { "b" }))
        .collect();
    assert_eq!(data, want);
    // A range holding none of the keys leaves the level-0 tables where they are.
    leveltable()
        .args(["db", "compact", "--start", "x", "--end", "y"])
        .arg(&db)
        .assert()
        .success()
        .stdout("")
        .stderr(
            predicate::str::is_match(
                r"^compacted .*db: 3 tables, \d+ bytes before; 3 tables, \d+ bytes after\n$",
            )
            .unwrap(),
        );
    let levels = files_per_level(&db);
    assert_eq!(levels[0], 3, "{levels:?}");
    // A range holding some of their keys compacts them all into level 1.
    leveltable()
        .args([
            "db", "compact", "--hex", "--start", "6b3033", "--end", "6b3035", "-q",
        ])
        .arg(&db)
        .assert()
        .success()
        .stdout("")
        .stderr("");
    let levels = files_per_level(&db);
    assert_eq!(levels[0], 0, "{levels:?}");
    assert!(levels[1] >= 1, "{levels:?}");
    assert_eq!(db_dump(&db, &[]), data);
    // The overwritten and deleted versions are gone: one version per live key.
    let internal = db_dump(&db, &["--internal"]);
    assert_eq!(internal.lines().count(), 9, "{internal}");
    // Unbounded at both ends, and again: nothing changes in the data.
    db_ok("compact", &db, &["-q", "--sync"]);
    assert_eq!(db_dump(&db, &[]), data);
}

#[test]
fn a_database_another_process_holds_is_refused_naming_its_lock() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    db_ok("put", &db, &["k", "v", "--create-if-missing"]);
    let held =
        leveltable_db::WritableDb::open(&db, leveltable_db::WritableOptions::default()).unwrap();
    let lock = db.join("LOCK");
    for args in [
        &["put", "k", "w"][..],
        &["delete", "k"],
        &["write", "-"],
        &["compact"],
    ] {
        db_command(&args[..1], &db, &args[1..])
            .write_stdin("put\tk\tw\n")
            .assert()
            .code(2)
            .stdout("")
            .stderr(format!(
                "error: {}: locked by another process: the database is open in LevelDB or \
                 another program; close it and try again\n",
                lock.display()
            ));
    }
    // The read commands take no lock.
    leveltable()
        .args(["db", "get"])
        .arg(&db)
        .arg("k")
        .assert()
        .code(0)
        .stdout("k\tv\n");
    held.close().unwrap();
    db_ok("put", &db, &["k", "w"]);
    assert_eq!(db_dump(&db, &[]), "k\tw\n");
}

#[test]
fn a_missing_database_is_an_error_that_creates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing");
    let empty = tmp.path().join("empty");
    fs::create_dir(&empty).unwrap();
    for args in [
        &["put", "k", "v"][..],
        &["delete", "k"],
        &["write"],
        &["compact"],
    ] {
        db_command(&args[..1], &missing, &args[1..])
            .write_stdin("put\tk\tv\n")
            .assert()
            .code(2)
            .stdout("")
            .stderr(format!(
                "error: cannot open {}: no such file or directory (--create-if-missing \
                 creates the database)\n",
                missing.display()
            ));
        assert!(
            !missing.exists(),
            "db {} created {}",
            args[0],
            missing.display()
        );
        db_command(&args[..1], &empty, &args[1..])
            .write_stdin("put\tk\tv\n")
            .assert()
            .code(2)
            .stderr(format!(
                "error: {}: not a LevelDB database: no CURRENT file (--create-if-missing \
                 creates one)\n",
                empty.display()
            ));
        assert!(
            files_in(&empty).is_empty(),
            "db {}: {:?}",
            args[0],
            files_in(&empty)
        );
    }
    // An input that cannot be opened is refused before the database is created.
    leveltable()
        .args(["db", "write", "--create-if-missing"])
        .arg(&missing)
        .arg(tmp.path().join("no-such-input"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "no-such-input: no such file or directory",
        ));
    assert!(!missing.exists());
    // A URL is refused, not taken for a relative path (`s3:/bucket/db`) to create.
    let cwd = tempfile::tempdir().unwrap();
    leveltable()
        .current_dir(cwd.path())
        .args([
            "db",
            "put",
            "--create-if-missing",
            "s3://bucket/db",
            "k",
            "v",
        ])
        .assert()
        .code(2)
        .stderr("error: s3://bucket/db: the write commands take a local directory, not a URL\n");
    assert!(files_in(cwd.path()).is_empty());
    // A file is not a database directory.
    let file = tmp.path().join("file");
    fs::write(&file, "x").unwrap();
    db_refused(&["put", "--create-if-missing"], &file, &["k", "v"])
        .stderr(predicate::str::contains("is not a directory"));
    assert_eq!(fs::read(&file).unwrap(), b"x");
}

#[test]
fn create_if_missing_does_not_start_over_a_database_that_lost_its_current() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    db_write_quietly(&db, &puts(3, "v"));
    db_ok("compact", &db, &["-q"]);
    fs::remove_file(db.join("CURRENT")).unwrap();
    let before = contents(&db);
    db_refused(&["put", "--create-if-missing"], &db, &["k", "v"]).stderr(predicate::str::contains(
        format!(
            "error: corruption: {}: no CURRENT file, though it holds a database's files",
            db.display()
        ),
    ));
    assert_eq!(contents(&db), before);
}

#[test]
fn leveldb_reads_what_db_write_wrote_and_the_lock_excludes_it() {
    if !leveltable_interop::require_leveldb() {
        return;
    }
    use leveltable_interop::db::{Db as LevelDb, DbOptions as LevelDbOptions};
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    // Several batches, deletes, binary keys and values; then a second run, so that the
    // first run's log is a level-0 table and the second's is still a log.
    let mut want = BTreeMap::new();
    let mut first = String::new();
    for i in 0u32..3000 {
        let key = i.to_be_bytes();
        let value = noise(u64::from(i), (i % 200) as usize);
        first.push_str(&format!("put\t{}\t{}\n", hex(key), hex(&value)));
        want.insert(key.to_vec(), value);
    }
    let mut second = String::new();
    for i in (0u32..3000).step_by(7) {
        second.push_str(&format!("del\t{}\n", hex(i.to_be_bytes())));
        want.remove(&i.to_be_bytes()[..]);
    }
    for (ops, batch) in [(first, "500"), (second, "64")] {
        leveltable()
            .args([
                "db",
                "write",
                "--hex",
                "--create-if-missing",
                "-q",
                "--batch",
                batch,
            ])
            .arg(&db)
            .write_stdin(ops)
            .assert()
            .success();
    }
    let options = LevelDbOptions {
        create_if_missing: false,
        ..LevelDbOptions::default()
    };
    let leveldb = LevelDb::open(&db, &options).unwrap();
    let got: BTreeMap<Vec<u8>, Vec<u8>> = leveldb.scan(None, false).unwrap().into_iter().collect();
    assert_eq!(got.len(), want.len());
    assert!(
        got == want,
        "LevelDB reads other contents than were written"
    );
    // While LevelDB has it open, the write commands are refused.
    db_refused(&["put"], &db, &["k", "v"])
        .stderr(predicate::str::contains("LOCK: locked by another process"));
    leveldb.put(b"from leveldb", b"1").unwrap();
    leveldb.close();
    db_ok("put", &db, &["from leveltable", "2"]);
    let leveldb = LevelDb::open(&db, &options).unwrap();
    assert_eq!(
        leveldb.get(b"from leveldb").unwrap().as_deref(),
        Some(&b"1"[..])
    );
    assert_eq!(
        leveldb.get(b"from leveltable").unwrap().as_deref(),
        Some(&b"2"[..])
    );
    assert_eq!(leveldb.scan(None, false).unwrap().len(), want.len() + 2);
}

/// `text` with the characters a regular expression treats specially escaped.
fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$".contains(c);
            special.then_some('\\').into_iter().chain([c])
        })
        .collect()
}

#[test]
fn compression_and_filters_of_new_tables_are_chosen() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("world");
    let input = tmp.path().join("ops.tsv");
    fs::write(&input, puts(200, "v")).unwrap();
    let flags = ["--compression", "deflate", "--bloom-bits", "10"];
    let input_arg = input.to_str().unwrap();
    db_ok(
        "write",
        &db,
        &[
            &[input_arg, "--create-if-missing", "--quiet"][..],
            &flags[..],
        ]
        .concat(),
    );
    db_ok("compact", &db, &[&["--quiet"][..], &flags[..]].concat());
    // The tables are raw deflate (type 4), as Minecraft Bedrock writes them: read as
    // Google's LevelDB reads blocks, they fail; read as Mojang's, they pass.
    let out = leveltable()
        .args(["db", "verify", "--profile", "leveldb"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr_of(&out).contains("type 4"), "{}", stderr_of(&out));
    leveltable()
        .args(["db", "verify", "--profile", "mojang"])
        .arg(&db)
        .assert()
        .code(0);
    assert_eq!(db_dump(&db, &[]).lines().count(), 200);
    db_refused(&["put", "--compression", "lz4"], &db, &["k", "v"])
        .stderr(predicate::str::contains("lz4"));
}
