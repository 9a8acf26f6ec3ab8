//! `db commit` refuses staged tables that differ from their records, and the errors of
//! `db build` and `db commit` say what failed (`cannot create`, `cannot write`, `cannot
//! copy … to …`) and name the path, also on a full disk. A commit that fails leaves the
//! staging directories byte-identical and can be run again.

#![cfg(unix)]

use crate::common;
use crate::tmpfs;

use std::collections::BTreeMap;
use std::fs;
use std::ops::Range;
use std::path::{Path, PathBuf};

use common::*;
use tmpfs::Tmpfs;

/// Every file under `dir` (and its subdirectories) with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return files;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        let meta = fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            files.extend(snapshot(&path));
        } else {
            files.insert(path.clone(), fs::read(&path).unwrap_or_default());
        }
    }
    files
}

/// `n` lines from `first` on, keys in order, with 400 hex digits of noise as values.
fn noisy_tsv(first: usize, n: usize) -> String {
    (first..first + n)
        .map(|i| format!("key{i:08}\t{}\n", hex(noise(i as u64, 200))))
        .collect()
}

/// Stages `tsv` as a part in `staging`, asserting success.
fn build_part(staging: &Path, tsv: &str) {
    leveltable()
        .args(["db", "build-part", "-q", "--max-file-size", "1048576"])
        .arg(staging)
        .write_stdin(tsv.to_owned())
        .assert()
        .success();
}

/// Parts `a` and `b` staged in `dir` from the lines `lines_a` and `lines_b` of
/// `sorted_tsv(n)`.
fn two_parts(dir: &Path, n: usize, lines_a: Range<usize>, lines_b: Range<usize>) -> [PathBuf; 2] {
    let tsv = sorted_tsv(n);
    let lines: Vec<&str> = tsv.lines().collect();
    let text = |r: Range<usize>| -> String { lines[r].iter().map(|l| format!("{l}\n")).collect() };
    let (a, b) = (dir.join("a"), dir.join("b"));
    build_part(&a, &text(lines_a));
    build_part(&b, &text(lines_b));
    [a, b]
}

/// `leveltable db commit DB PARTS...`, asserting that it fails with status 2: its standard
/// error.
fn failed_commit(db: &Path, parts: &[PathBuf]) -> String {
    let out = leveltable()
        .args(["db", "commit"])
        .arg(db)
        .args(parts)
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    err
}

/// Commits `parts` into `db`, asserting that it fails, makes no `db` and leaves every part
/// byte-identical: its standard error.
fn refused_commit(db: &Path, parts: &[PathBuf]) -> String {
    let before: Vec<_> = parts.iter().map(|p| snapshot(p)).collect();
    let err = failed_commit(db, parts);
    assert!(!db.exists());
    let after: Vec<_> = parts.iter().map(|p| snapshot(p)).collect();
    assert!(before == after, "the staging directories changed");
    err
}

#[test]
fn commit_refuses_tables_that_overlap_under_disjoint_records() {
    let tmp = tempfile::tempdir().unwrap();
    let parts = two_parts(tmp.path(), 1000, 0..600, 500..1000);
    let b = &parts[1];
    // b's record claims keys after a's: its first key is a's 500th.
    let record = fs::read_to_string(b.join("PART")).unwrap();
    let edited = record.replace(&hex("key000500"), &hex("key000700"));
    assert_ne!(edited, record);
    fs::write(b.join("PART"), edited).unwrap();
    let err = refused_commit(&tmp.path().join("db"), &parts);
    for wanted in [
        "part 1",
        &b.display().to_string(),
        "000001.ldb",
        "its first key is \"key000500\", its record says \"key000700\"",
        "nothing was moved",
    ] {
        assert!(err.contains(wanted), "{wanted:?} not in {err}");
    }
}

#[test]
fn errors_say_what_failed_and_name_the_path() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("file");
    fs::write(&file, b"not a directory").unwrap();
    let part = tmp.path().join("part");
    build_part(&part, &sorted_tsv(10));

    let target = file.join("db");
    assert_eq!(
        failed_commit(&target, std::slice::from_ref(&part)),
        format!(
            "error: cannot create {}: not a directory\n",
            target.display()
        )
    );
    assert!(part.join("PART").exists());

    let out = leveltable()
        .args(["db", "build-part"])
        .arg(file.join("staging"))
        .write_stdin(sorted_tsv(10))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr_of(&out),
        format!(
            "error: cannot create {}: not a directory\n",
            file.join("staging").display()
        )
    );
}

#[test]
fn a_commit_onto_a_full_disk_says_what_failed_and_can_be_retried() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(mount) = Tmpfs::mount(&tmp.path().join("small"), "8m") else {
        return;
    };
    let staging: Vec<PathBuf> = (0..3)
        .map(|i| {
            let s = tmp.path().join(format!("part-{i}"));
            build_part(&s, &noisy_tsv(i * 10_000, 10_000));
            s
        })
        .collect();
    let db = mount.0.join("db");
    let err = refused_commit(&db, &staging);
    assert!(err.starts_with("error: cannot copy "), "{err}");
    assert!(
        err.contains(&format!(" to {}/", db.display())),
        "names the target file: {err}"
    );
    assert!(err.ends_with(": no space left on device\n"), "{err}");
    assert_eq!(files_in(&mount.0), Vec::<String>::new());

    mount.resize("64m");
    leveltable()
        .args(["db", "commit", "-q"])
        .arg(&db)
        .args(&staging)
        .assert()
        .success();
    assert_eq!(db_dump(&db, &[]), noisy_tsv(0, 30_000));
    for s in &staging {
        assert!(!s.exists());
    }
}

#[test]
fn a_build_onto_a_full_disk_names_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(mount) = Tmpfs::mount(&tmp.path().join("small"), "8m") else {
        return;
    };
    let input = tmp.path().join("input.tsv");
    fs::write(&input, noisy_tsv(0, 30_000)).unwrap();
    let run = |args: &[&str], target: &Path| {
        let out = leveltable()
            .args(["db", "build"])
            .args(args)
            .arg(target)
            .arg(&input)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
        stderr_of(&out)
    };

    // The staging directory on the full disk: the table being written is named.
    let db = mount.0.join("db");
    let err = run(&["-q"], &db);
    assert!(
        err.starts_with(&format!("error: cannot write {}/", mount.0.display())),
        "{err}"
    );
    assert!(err.ends_with(".ldb: no space left on device\n"), "{err}");
    assert_eq!(files_in(&mount.0), Vec::<String>::new());

    // The sort's runs on the full disk.
    let err = run(&["-q", "--sort", "--memory", "1048576"], &db);
    assert!(
        err.starts_with(&format!("error: cannot write {}/", mount.0.display())),
        "{err}"
    );
    assert!(err.contains(".leveltable-sort-"), "{err}");
    assert_eq!(files_in(&mount.0), Vec::<String>::new());

    // The database on the full disk, its staging directory beside it on another: the copy
    // is named, and nothing is left on either.
    let err = run(&["-q"], &mount.0);
    assert!(err.starts_with("error: cannot copy "), "{err}");
    assert!(
        err.contains(&format!(" to {}/", mount.0.display())),
        "{err}"
    );
    assert_eq!(files_in(&mount.0), Vec::<String>::new());
    assert_eq!(files_in(tmp.path()), ["input.tsv", "small"]);
}

/// A commit of more files than the process may hold open: each file is checked and placed
/// with one descriptor at a time.
#[test]
fn a_commit_of_more_files_than_open_descriptors() {
    let tmp = tempfile::tempdir().unwrap();
    let part = tmp.path().join("part");
    let tsv = noisy_tsv(0, 200);
    leveltable()
        .args(["db", "build-part", "-q", "--max-file-size", "100"])
        .arg(&part)
        .write_stdin(tsv.clone())
        .assert()
        .success();
    assert_eq!(files_in(&part).len(), 201, "a file per entry, and PART");
    let db = tmp.path().join("db");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 48 && exec \"$0\" db commit -q \"$1\" \"$2\"")
        .arg(env!("CARGO_BIN_EXE_leveltable"))
        .arg(&db)
        .arg(&part)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(db_dump(&db, &[]), tsv);
}

#[test]
fn a_malformed_part_record_is_named_with_its_part() {
    let tmp = tempfile::tempdir().unwrap();
    let parts = two_parts(tmp.path(), 100, 0..50, 50..100);
    let b = &parts[1];
    // b's record has a line that names no file.
    let record = fs::read_to_string(b.join("PART")).unwrap();
    fs::write(b.join("PART"), record.replacen("\nfile ", "\nfiel ", 1)).unwrap();
    let err = refused_commit(&tmp.path().join("db"), &parts);
    let wanted = format!("{}: not a part record: line 3", b.join("PART").display());
    assert!(err.contains(&wanted), "{wanted:?} not in {err}");
}

#[test]
fn build_and_commit_into_a_dangling_link_blame_the_link() {
    let tmp = tempfile::tempdir().unwrap();
    let part = tmp.path().join("part");
    build_part(&part, &sorted_tsv(10));
    let missing = tmp.path().join("missing");
    let link = tmp.path().join("db");
    std::os::unix::fs::symlink(&missing, &link).unwrap();
    let wanted = format!(
        "error: {} is a symbolic link to {}, which does not exist",
        link.display(),
        missing.display()
    );
    let build = leveltable()
        .args(["db", "build", "-q"])
        .arg(&link)
        .write_stdin(sorted_tsv(10))
        .output()
        .unwrap();
    let commit = leveltable()
        .args(["db", "commit"])
        .arg(&link)
        .arg(&part)
        .output()
        .unwrap();
    for out in [build, commit] {
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.starts_with(&wanted), "{wanted:?} not in {err}");
        // Nothing made through the link, nothing left beside it.
        assert!(!missing.exists());
        assert_eq!(files_in(tmp.path()), ["db", "part"]);
    }
}

/// A commit to a URL whose upload fails keeps the parts staged, as any failed commit does;
/// committed again to a URL that can be written, the parts are uploaded and then removed.
#[cfg(feature = "object")]
#[test]
fn a_commit_to_a_url_that_cannot_be_written_keeps_the_parts() {
    let tmp = tempfile::tempdir().unwrap();
    let parts = two_parts(tmp.path(), 1000, 0..500, 500..1000);
    // A prefix under a regular file: no object can be written there.
    fs::write(tmp.path().join("file"), b"x").unwrap();
    let bad = format!("file://{}/file/db", tmp.path().display());
    let err = refused_commit(Path::new(&bad), &parts);
    assert!(err.contains("file/db"), "{err}");
    let url = format!("file://{}/db", tmp.path().display());
    leveltable()
        .args(["db", "commit", "-q", &url])
        .args(&parts)
        .assert()
        .success();
    let out = leveltable().args(["db", "dump", &url]).output().unwrap();
    assert_eq!(stdout_of(&out), sorted_tsv(1000));
    for part in &parts {
        assert!(!part.exists(), "{} is still staged", part.display());
    }
}
