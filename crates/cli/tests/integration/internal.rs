//! `dump --internal` and `get --internal` on a table file of a real LevelDB 1.23 database
//! (`crates/table/testdata/db_internal.ldb`, made by `crates/interop/examples/make_golden.rs`):
//! 300 `user:NNNN` keys put, every 7th overwritten, every 11th deleted.

use crate::common;

use common::{leveltable, stderr_of, testdata};

#[test]
fn dump_internal_matches_leveldbs_own_reading() {
    let expected = std::fs::read_to_string(testdata("db_internal.tsv")).unwrap();
    leveltable()
        .args(["dump", "--internal", "--hex"])
        .arg(testdata("db_internal.ldb"))
        .assert()
        .success()
        .stdout(expected);
}

#[test]
fn dump_internal_text_mode() {
    let out = leveltable()
        .args(["dump", "--internal"])
        .arg(testdata("db_internal.ldb"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // Newest version first: the deletion, then the overwrite, then the first put.
    assert_eq!(lines[0], "user:0000\t344\tdel\t");
    assert_eq!(lines[1], "user:0000\t301\tput\tv2-0");
    assert_eq!(lines[2], "user:0000\t1\tput\tv1-0");
    assert_eq!(lines.len(), 300 + 43 + 28);
}

#[test]
fn get_internal_answers_live_deleted_and_absent_keys() {
    let table = testdata("db_internal.ldb");
    // user:0007 was overwritten; user:0001 written once.
    leveltable()
        .args(["get", "--internal"])
        .arg(&table)
        .args(["user:0007", "user:0001"])
        .assert()
        .code(0)
        .stdout("user:0007\tv2-7\nuser:0001\tv1-1\n");
    // user:0011 was deleted; user:9999 never written.
    leveltable()
        .args(["get", "--internal", "--stats"])
        .arg(&table)
        .args(["user:0011", "user:9999", "user:0002"])
        .assert()
        .code(1)
        .stdout("user:0002\tv1-2\n")
        .stderr(predicates::str::starts_with(
            "deleted: user:0011\nnot found: user:9999\ngets: 3, found: 1,",
        ));
}

#[test]
fn get_internal_hex_keys_from_stdin() {
    leveltable()
        .args(["get", "--internal", "--hex"])
        .arg(testdata("db_internal.ldb"))
        .write_stdin("757365723a30303134\n")
        .assert()
        .code(0)
        .stdout("757365723a30303134\t76322d3134\n");
}

#[test]
fn internal_on_a_table_without_internal_keys_is_an_error() {
    let out = leveltable()
        .args(["dump", "--internal"])
        .arg(testdata("table_none.ldb"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).starts_with("error: entry 1: not a LevelDB internal key"),
        "{}",
        stderr_of(&out)
    );
}

/// A table of plain keys under `--internal` is named for what it is, with the way out, and
/// is not reported as corrupt; the message carries no other crate's prefix.
#[test]
fn internal_on_plain_keys_says_to_drop_the_flag() {
    let table = testdata("table_none.ldb");
    for args in [&["dump", "--internal"][..], &["get", "--internal"][..]] {
        let mut cmd = leveltable();
        cmd.args(args).arg(&table);
        if args[0] == "get" {
            cmd.arg("some key");
        }
        let out = cmd.output().unwrap();
        let stderr = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("error: entry 1: not a LevelDB internal key ("),
            "{args:?}: {stderr}"
        );
        assert!(
            stderr.contains("table_none.ldb holds plain keys; drop --internal"),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("corrupt"), "{args:?}: {stderr}");
        assert!(!stderr.contains("table: "), "{args:?}: {stderr}");
    }
}

/// An entry text mode cannot print ends `dump --internal` with the entries before it
/// printed, as `dump` does: the buffering is never seen.
#[test]
fn dump_internal_prints_the_entries_before_an_unprintable_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    leveltable()
        .args(["db", "build", "--hex"])
        .arg(&db)
        .write_stdin("61\t31\n62\t32\n6309\t33\n64\t34\n")
        .assert()
        .success();
    let table = std::fs::read_dir(&db)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "ldb"))
        .unwrap();
    leveltable()
        .args(["dump", "--internal"])
        .arg(&table)
        .assert()
        .code(2)
        .stdout("a\t0\tput\t1\nb\t0\tput\t2\n")
        .stderr(
            "error: entry 3 (key \"c\\t\"): the key contains a tab or a newline; use --hex \
             for keys and values with tabs or newlines\n",
        );
}
