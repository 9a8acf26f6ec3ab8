//! What the `db` read commands say about a directory that is not a database, and about a
//! table file that is broken, a directory, or a dangling symbolic link.

use crate::common;

use std::path::{Path, PathBuf};

use common::{db_output, leveltable, sorted_tsv, stderr_of};

/// The read commands, each with the arguments after the directory.
const COMMANDS: [(&str, &[&str]); 4] = [
    ("stats", &[]),
    ("get", &["key000001"]),
    ("dump", &[]),
    ("verify", &[]),
];

/// A database of 100 keys in one table; its directory and the table's path.
fn database(root: &Path) -> (PathBuf, PathBuf) {
    let dir = root.join("db");
    leveltable()
        .args(["db", "build"])
        .arg(&dir)
        .arg("-")
        .write_stdin(sorted_tsv(100))
        .assert()
        .success();
    let table = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "ldb"))
        .unwrap();
    (dir, table)
}

/// The exit code and standard error of `leveltable db COMMAND DIR ARGS`.
fn run(command: &str, dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = db_output(command, dir, args);
    (out.status.code(), stderr_of(&out))
}

#[test]
fn stats_names_a_broken_table_as_verify_does() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, table) = database(tmp.path());
    let mut bytes = std::fs::read(&table).unwrap();
    bytes[..16].fill(0x55);
    std::fs::write(&table, bytes).unwrap();
    let name = table.file_name().unwrap().to_str().unwrap().to_owned();
    for command in ["stats", "verify"] {
        let (code, err) = run(command, &dir, &[]);
        assert_eq!(code, Some(2), "{command}: {err}");
        assert!(err.starts_with("error: corruption: "), "{command}: {err}");
        assert!(err.contains(&name), "{command} does not name {name}: {err}");
    }
}

#[test]
fn a_directory_where_a_table_should_be_is_named_as_one() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, table) = database(tmp.path());
    std::fs::remove_file(&table).unwrap();
    std::fs::create_dir(&table).unwrap();
    for (command, args) in COMMANDS {
        let (code, err) = run(command, &dir, args);
        assert_eq!(code, Some(2), "{command}: {err}");
        assert!(
            err.contains(&format!(
                "{}: a directory, not a table file",
                table.display()
            )),
            "{command}: {err}"
        );
        assert!(!err.contains("no such device"), "{command}: {err}");
    }
}

#[test]
fn a_dangling_symbolic_link_for_a_table_is_named_as_one() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, table) = database(tmp.path());
    std::fs::remove_file(&table).unwrap();
    let target = tmp.path().join("moved-away.ldb");
    std::os::unix::fs::symlink(&target, &table).unwrap();
    for (command, args) in COMMANDS {
        let (code, err) = run(command, &dir, args);
        assert_eq!(code, Some(2), "{command}: {err}");
        assert!(
            err.contains(&format!(
                "{}: a dangling symbolic link: its target {} does not exist",
                table.display(),
                target.display()
            )),
            "{command}: {err}"
        );
        assert!(
            !err.contains("compacted by another process"),
            "{command}: {err}"
        );
    }
    // A table really missing is reported as such.
    std::fs::remove_file(&table).unwrap();
    let (_, err) = run("get", &dir, &["key000001"]);
    assert!(err.contains("lists it (1 table file missing)"), "{err}");
}

#[test]
fn an_empty_directory_is_not_a_database() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("empty");
    std::fs::create_dir(&dir).unwrap();
    for (command, args) in COMMANDS {
        let (code, err) = run(command, &dir, args);
        assert_eq!(code, Some(2), "{command}: {err}");
        assert_eq!(
            err,
            format!(
                "error: {}: not a LevelDB database: no CURRENT file\n",
                dir.display()
            ),
            "{command}"
        );
    }
    // A directory that is not there says so.
    let missing = tmp.path().join("missing");
    for (command, args) in COMMANDS {
        let (code, err) = run(command, &missing, args);
        assert_eq!(code, Some(2), "{command}: {err}");
        assert_eq!(
            err,
            format!(
                "error: cannot open {}: no such file or directory\n",
                missing.display()
            ),
            "{command}"
        );
    }
}

#[test]
fn a_database_that_lost_its_current_is_corrupt_and_salvageable() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, table) = database(tmp.path());
    std::fs::remove_file(dir.join("CURRENT")).unwrap();
    let (code, err) = run("get", &dir, &["key000001"]);
    assert_eq!(code, Some(2));
    assert!(err.starts_with("error: corruption: "), "{err}");
    assert!(err.contains("no CURRENT file"), "{err}");
    assert!(
        err.contains(table.file_name().unwrap().to_str().unwrap()),
        "{err}"
    );
    assert!(err.contains("--salvage"), "{err}");
    let out = leveltable()
        .args(["db", "dump", "--salvage"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(common::stdout_of(&out).lines().count(), 100);
}
