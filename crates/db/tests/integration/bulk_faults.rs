//! Bulk builds and commits whose file system fails on demand: ENOSPC or EIO at each file
//! operation in turn (creating a table, writing, syncing, making the database's directory,
//! locking its `LOCK`, reading the staged tables as a commit checks and copies them, linking
//! a table into the database, writing the MANIFEST and `CURRENT`, syncing directories). A
//! failed hard link is no error (the table is copied instead) and the database is whole;
//! any other failure reaches the caller naming what failed, nothing is left under the database's name
//! (no directory it made, no file), the parts of a failed commit stay staged as they were,
//! and the same build or commit then succeeds.
//!
//! `LEVELTABLE_FAULT_STRIDE` sets the step between failing operations (default 1: every
//! operation fails in turn).

use std::path::Path;
use std::sync::Arc;

use leveltable_db::{
    BulkOptions, Db, DbBuilder, DbOptions, FileSystem, LocalFileSystem, Part, PartBuilder, commit,
    commit_on,
};

use crate::common;

use common::failing_fs::{EIO, ENOSPC, Failing, FailingFs};

fn stride() -> u64 {
    std::env::var("LEVELTABLE_FAULT_STRIDE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

fn entries() -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..600u32)
        .map(|i| {
            let value = vec![b'a' + (i % 26) as u8; 40 + (i as usize * 7) % 300];
            (format!("key{i:05}").into_bytes(), value)
        })
        .collect()
}

fn options(threads: usize) -> BulkOptions {
    BulkOptions::default()
        .max_file_size(16 << 10)
        .table(BulkOptions::default().table.block_size(1024))
        .threads(threads)
}

/// The names in `dir`, or none if it is not there.
fn names(dir: &Path) -> Vec<String> {
    match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    }
}

fn check_database(dir: &Path, ctx: &str) {
    let db = Db::open(dir, DbOptions::default().paranoid_checks(true))
        .unwrap_or_else(|e| panic!("{ctx}: the database does not open: {e}"));
    let got: Vec<(Vec<u8>, Vec<u8>)> = db.iter().collect::<Result<_, _>>().unwrap();
    assert!(got == entries(), "{ctx}: {} entries read back", got.len());
}

fn build(fs: Arc<dyn FileSystem>, dir: &Path, threads: usize) -> leveltable_db::Result<()> {
    let mut b = DbBuilder::create_on(fs, dir, options(threads))?;
    for (k, v) in entries() {
        b.add(&k, &v)?;
    }
    b.finish().map(|_| ())
}

/// Parts staged under `tmp`, built on the local file system.
fn staged_parts(tmp: &Path) -> Vec<Part> {
    let all = entries();
    all.chunks(250)
        .enumerate()
        .map(|(i, chunk)| {
            let mut p = PartBuilder::create(tmp.join(format!("part{i}")), options(1)).unwrap();
            for (k, v) in chunk {
                p.add(k, v).unwrap();
            }
            p.finish().unwrap()
        })
        .collect()
}

/// The bytes of every staged file, by path.
fn staged_bytes(parts: &[Part]) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut all = Vec::new();
    for part in parts {
        for file in &part.files {
            let path = part.staging.join(&file.name);
            let bytes = std::fs::read(&path).unwrap();
            all.push((path, bytes));
        }
    }
    all
}

/// Runs `attempt(tmp, dir, failing)` in a new temporary directory with operation 0, then
/// every `stride`-th, failing (with `kinds` in turns), until one runs without reaching its
/// failing operation; each time the database at `dir` is whole, or the error says what
/// failed and where, nothing stands at `dir`, and the check `attempt` returned (what is
/// left, then the same work done again on the local file system) passes. Returns the
/// failures that were errors.
fn each_failing_operation<F, R>(what: &str, kinds: [i32; 2], mut attempt: F) -> Vec<String>
where
    F: FnMut(&Path, &Path, Arc<Failing>) -> (leveltable_db::Result<()>, R),
    R: FnOnce(&str),
{
    let stride = stride();
    let mut failures = Vec::new();
    let mut fail_at = 0;
    loop {
        let kind = kinds[usize::from((fail_at / stride) % 2 == 1)];
        let ctx = format!("{what}, operation {fail_at} failing ({kind})");
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("db");
        let failing = Failing::new(fail_at, kind);
        let (result, after_error) = attempt(tmp.path(), &dir, Arc::clone(&failing));
        if !failing.failed() {
            result.unwrap_or_else(|e| panic!("{ctx}: an error without a failure: {e}"));
            check_database(&dir, &ctx);
            eprintln!(
                "{} failing operations of {what} checked, stride {stride}",
                failures.len()
            );
            return failures;
        }
        match result {
            // A failed hard link: the table was copied.
            Ok(()) => check_database(&dir, &ctx),
            Err(e) => {
                let e = e.to_string();
                failures.push(e.clone());
                // `cannot create …`, or a staged file that could not be read (`…: Input/output
                // error (os error 5)`).
                assert!(
                    (e.contains("cannot") || e.contains("os error"))
                        && e.contains(&*tmp.path().to_string_lossy()),
                    "{ctx}: the error does not say what failed and where: {e}"
                );
                assert!(
                    !dir.exists(),
                    "{ctx}: {:?} left at the database's name",
                    names(&dir)
                );
                after_error(&ctx);
                check_database(&dir, &ctx);
            }
        }
        fail_at += stride;
    }
}

#[test]
fn every_failing_operation_of_a_bulk_build_fails_it_and_leaves_nothing() {
    for threads in [1, 2] {
        let what = format!("bulk builds on {threads} threads");
        let failures = each_failing_operation(&what, [ENOSPC, EIO], |tmp, dir, failing| {
            let built = build(Arc::new(FailingFs(failing)), dir, threads);
            let (tmp, dir) = (tmp.to_path_buf(), dir.to_path_buf());
            let after_error = move |ctx: &str| {
                // No staging directory left beside the database's name.
                assert!(names(&tmp).is_empty(), "{ctx}: {:?} left", names(&tmp));
                // The same build succeeds once the file system does.
                build(Arc::new(LocalFileSystem), &dir, threads).unwrap();
            };
            (built, after_error)
        });
        assert!(failures.len() > 15, "{failures:#?}");
    }
}

#[test]
fn every_failing_operation_of_a_commit_fails_it_and_keeps_the_parts() {
    let failures = each_failing_operation("commits", [EIO, ENOSPC], |tmp, dir, failing| {
        let parts = staged_parts(tmp);
        let before = staged_bytes(&parts);
        let committed = commit_on(&FailingFs(failing), dir, &parts, &mut |_, _| {}).map(|_| ());
        let dir = dir.to_path_buf();
        let after_error = move |ctx: &str| {
            assert!(
                staged_bytes(&parts) == before,
                "{ctx}: a staged file changed"
            );
            commit(&dir, &parts).unwrap_or_else(|e| panic!("{ctx}: the commit after: {e}"));
        };
        (committed, after_error)
    });
    assert!(failures.len() > 5, "{failures:#?}");
    // Reads of the staged tables failed too (a commit checks each, reading it whole), named.
    let staged_read = failures.iter().find(|e| {
        e.contains("/part0/000001.ldb: ") && e.contains("os error") && !e.contains("cannot")
    });
    assert!(
        staged_read.is_some(),
        "no staged read failed: {failures:#?}"
    );
    // And the lock.
    assert!(
        failures.iter().any(|e| e.contains("cannot lock")),
        "{failures:#?}"
    );
}
