//! `db build-part` and `db build` on sorted input with a key given twice in a row: refused by
//! name, or with `--dedup last` the last value kept, as Python's `build_part` does (the
//! same input and answers are in crates/python/tests/test_db.py).

use crate::common;

use common::*;

const INPUT: &str = "a\t1\nb\t1\nb\t2\nb\t3\nc\t1\n";

#[test]
fn keys_given_twice_are_refused_or_the_last_kept() {
    let tmp = tempfile::tempdir().unwrap();
    for command in ["build-part", "build"] {
        let refused = tmp.path().join(format!("{command}-refused"));
        let out = leveltable()
            .args(["db", command])
            .arg(&refused)
            .write_stdin(INPUT)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{command}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("line 3: duplicate key \"b\" (keep the last one with --dedup last)"),
            "{command}: {err}"
        );
        assert!(!refused.join("PART").exists() && !refused.join("CURRENT").exists());

        let kept = tmp.path().join(format!("{command}-kept"));
        leveltable()
            .args(["db", command, "--dedup", "last", "-q"])
            .arg(&kept)
            .write_stdin(INPUT)
            .assert()
            .success();
        let db = if command == "build" {
            kept
        } else {
            let db = tmp.path().join("committed");
            leveltable()
                .args(["db", "commit", "-q"])
                .arg(&db)
                .arg(&kept)
                .assert()
                .success();
            db
        };
        let out = leveltable().args(["db", "dump"]).arg(&db).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "a\t1\nb\t3\nc\t1\n");
    }
}
