//! `leveltable db ...`: bulk builds in one go and in parts, the read-only commands on what
//! they built, the directory left unchanged by every reading command, and the errors that
//! name the file.

use crate::common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use common::*;

/// Every file of `dir` with its bytes: a reading command must change none.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn build_then_read_and_nothing_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let tsv = sorted_tsv(5000);
    db_build(&db, &tsv, &["--max-file-size", "20000", "--threads", "2"]);
    let before = snapshot(&db);
    assert_eq!(db_dump(&db, &[]), tsv);
    leveltable()
        .args(["db", "get"])
        .arg(&db)
        .args(["key000042", "nope", "key004999"])
        .assert()
        .code(1)
        .stdout(format!(
            "key000042\t{}\nkey004999\t{}\n",
            value(42),
            value(4999)
        ))
        .stderr("not found: nope\n");
    leveltable()
        .args(["db", "get", "--hex"])
        .arg(&db)
        .write_stdin("6b6579303030303031\n")
        .assert()
        .success()
        .stdout(format!(
            "6b6579303030303031\t{}\n",
            hex(value(1).as_bytes())
        ));
    leveltable()
        .args(["db", "verify"])
        .arg(&db)
        .assert()
        .success()
        .stdout(predicates::str::starts_with("ok: "));
    let stats = leveltable()
        .args(["db", "stats", "--json"])
        .arg(&db)
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&stats.stdout).unwrap();
    assert_eq!(json["comparator"], "leveldb.BytewiseComparator");
    assert_eq!(json["levels"][6]["entries"], 5000);
    assert_eq!(json["levels"][0]["files"], 0);
    assert!(json["levels"][6]["files"].as_u64().unwrap() > 3);
    let text = leveltable()
        .args(["db", "stats"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(text.status.success());
    assert!(
        stdout_of(&text).contains("level 6: "),
        "{}",
        stdout_of(&text)
    );
    assert!(
        stdout_of(&text).contains("5000 entries"),
        "{}",
        stdout_of(&text)
    );
    // Every version: one put per key, at sequence 0.
    let internal = db_dump(&db, &["--internal"]);
    assert_eq!(internal.lines().count(), 5000);
    assert!(internal.starts_with(&format!("key000000\t0\tput\t{}\n", value(0))));
    let salvaged = db_dump(&db, &["--salvage", "--internal"]);
    assert!(
        salvaged.starts_with(&format!(
            "key000000\t0\tput\t{}\tlive\t000002.ldb\n",
            value(0)
        )),
        "{}",
        &salvaged[..200]
    );
    assert_eq!(db_dump(&db, &["--salvage"]), tsv);
    assert_eq!(
        snapshot(&db),
        before,
        "a reading command changed the directory"
    );
}

/// `db stats --json` gives a level's key range whole, however long its keys, for the
/// programs that read it: hex digits with `--hex`, the quoted text without. The text output,
/// for people, cuts them.
#[test]
fn stats_json_keys_are_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let long = "k".repeat(100);
    db_build(&db, &format!("{long}1\tv\n{long}2\tv\n"), &[]);
    let json = |flags: &[&str]| -> serde_json::Value {
        let out = leveltable()
            .args(["db", "stats", "--json"])
            .args(flags)
            .arg(&db)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr_of(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let hex = json(&["--hex"]);
    let hex_of = |key: &str| key.bytes().map(|b| format!("{b:02x}")).collect::<String>();
    assert_eq!(hex["levels"][6]["smallest"], hex_of(&format!("{long}1")));
    assert_eq!(hex["levels"][6]["largest"], hex_of(&format!("{long}2")));
    let text = json(&[]);
    assert_eq!(text["levels"][6]["smallest"], format!("\"{long}1\""));
    let shown = leveltable()
        .args(["db", "stats"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        stdout_of(&shown).contains("(101 bytes)"),
        "{}",
        stdout_of(&shown)
    );
}

#[test]
fn dump_rebuilds_the_same_database() {
    let tmp = tempfile::tempdir().unwrap();
    let (tsv, _) = mixed_tsv(3000);
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    db_build(&a, &tsv, &["--max-file-size", "30000"]);
    let dumped = db_dump(&a, &["--hex"]);
    db_build(&b, &dumped, &["--hex", "--max-file-size", "30000"]);
    assert_eq!(snapshot(&a), snapshot(&b));
}

#[test]
fn sort_with_a_memory_budget_and_duplicates() {
    let tmp = tempfile::tempdir().unwrap();
    let tsv = sorted_tsv(4000);
    let mut lines: Vec<&str> = tsv.lines().collect();
    lines.reverse();
    let reversed = lines.join("\n") + "\n";
    let err = db_error(&["build"], &tmp.path().join("unsorted"), &[], &reversed);
    assert!(
        err.contains("line 2: key \"key003998\" does not sort after"),
        "{err}"
    );
    assert!(!tmp.path().join("unsorted").exists());
    db_build(
        &tmp.path().join("sorted"),
        &reversed,
        &["--sort", "--memory", "65536"],
    );
    assert_eq!(db_dump(&tmp.path().join("sorted"), &[]), tsv);
    let twice = format!("{reversed}key000007\tnewer\n");
    let err = db_error(&["build", "--sort"], &tmp.path().join("dup"), &[], &twice);
    assert_eq!(
        err,
        "error: duplicate key \"key000007\" (keep the last one with --dedup last)\n"
    );
    assert!(!tmp.path().join("dup").exists());
    db_build(
        &tmp.path().join("last"),
        &twice,
        &["--sort", "--dedup", "last"],
    );
    leveltable()
        .args(["db", "get"])
        .arg(tmp.path().join("last"))
        .arg("key000007")
        .assert()
        .success()
        .stdout("key000007\tnewer\n");
    // Nothing but the databases is left beside them.
    assert_eq!(files_in(tmp.path()), ["last", "sorted"]);
}

#[test]
fn parts_and_commit() {
    let tmp = tempfile::tempdir().unwrap();
    let tsv = sorted_tsv(3000);
    let lines: Vec<&str> = tsv.lines().collect();
    let part = |name: &str, range: std::ops::Range<usize>| {
        let text = lines[range]
            .iter()
            .map(|l| format!("{l}\n"))
            .collect::<String>();
        leveltable()
            .args(["db", "build-part", "-q"])
            .arg(tmp.path().join(name))
            .write_stdin(text)
            .assert()
            .success();
        tmp.path().join(name)
    };
    let (p1, p2, p3) = (
        part("p1", 0..1000),
        part("p2", 1000..1000),
        part("p3", 1000..3000),
    );
    let db = tmp.path().join("db");
    let err = db_error(&["commit"], &db, &[path_str(&p3), path_str(&p1)], "");
    assert!(err.contains("out of order or overlap"), "{err}");
    assert!(!db.exists());
    leveltable()
        .args(["db", "commit"])
        .arg(&db)
        .args([&p1, &p2, &p3])
        .assert()
        .success()
        .stderr(predicates::str::contains("3000 entries"));
    assert_eq!(db_dump(&db, &[]), tsv);
    assert_eq!(files_in(tmp.path()), ["db"]);
    let nowhere = tmp.path().join("nowhere");
    let err = db_error(
        &["commit"],
        &tmp.path().join("x"),
        &[path_str(&nowhere)],
        "",
    );
    assert!(err.contains("PART"), "{err}");
}

#[test]
fn targets_must_be_new_or_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let full = tmp.path().join("full");
    fs::create_dir(&full).unwrap();
    fs::write(full.join("keep"), b"x").unwrap();
    let err = db_error(&["build"], &full, &[], "a\t1\n");
    assert!(err.contains("is not empty"), "{err}");
    assert_eq!(files_in(&full), ["keep"]);
}

/// Errors that say which file is missing or bad, exit 2, never a panic.
#[test]
fn broken_databases_name_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let fresh = || {
        let dir = tempfile::tempdir_in(tmp.path()).unwrap();
        let db = dir.path().join("db");
        db_build(&db, &sorted_tsv(2000), &["--max-file-size", "10000", "-q"]);
        (dir, db)
    };
    let check = |db: &Path, expect: &str| {
        for command in ["get", "dump", "verify", "stats"] {
            let args: &[&str] = if command == "get" {
                &["key000001"]
            } else {
                &[]
            };
            let stderr = db_error(&[command], db, args, "");
            assert!(stderr.starts_with("error: "), "{command}: {stderr}");
            assert!(
                stderr.contains(expect),
                "{command}: expected {expect:?} in {stderr}"
            );
        }
    };

    let (_d, db) = fresh();
    fs::remove_file(db.join("CURRENT")).unwrap();
    check(&db, "CURRENT");

    let (_d, db) = fresh();
    fs::write(db.join("CURRENT"), "MANIFEST-000009\n").unwrap();
    check(&db, "MANIFEST-000009");

    let (_d, db) = fresh();
    let manifest = db.join("MANIFEST-000001");
    let mut bytes = fs::read(&manifest).unwrap();
    bytes[10] ^= 0x01;
    fs::write(&manifest, bytes).unwrap();
    check(&db, "MANIFEST-000001");

    let (_d, db) = fresh();
    fs::remove_file(db.join("000003.ldb")).unwrap();
    for command in ["dump", "verify", "stats"] {
        let err = db_error(&[command], &db, &[], "");
        assert!(err.contains("000003.ldb"), "{command}: {err}");
    }

    let (_d, db) = fresh();
    let table = db.join("000002.ldb");
    let mut bytes = fs::read(&table).unwrap();
    bytes[100] ^= 0x01;
    fs::write(&table, bytes).unwrap();
    let stderr = db_error(&["verify"], &db, &[], "");
    assert!(stderr.starts_with("error: corruption: "), "{stderr}");
    assert!(stderr.contains("000002.ldb"), "{stderr}");

    let file = tmp.path().join("plain-file");
    fs::write(&file, b"x").unwrap();
    let err = db_error(&["dump"], &file, &[], "");
    assert!(err.contains("not a directory"), "{err}");
}
