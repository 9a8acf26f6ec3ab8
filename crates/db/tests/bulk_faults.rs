//! Bulk builds and commits whose file system fails on demand: ENOSPC or EIO at each file
//! operation in turn (creating a table, writing, syncing, making the database's directory,
//! linking a table into it, writing the MANIFEST and `CURRENT`, syncing directories). A
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

mod common;

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
        .block_size(1024)
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

#[test]
fn every_failing_operation_of_a_bulk_build_fails_it_and_leaves_nothing() {
    let stride = stride();
    let mut failures = 0;
    for threads in [1, 2] {
        let mut fail_at = 0;
        loop {
            let kind = if (fail_at / stride) % 2 == 0 {
                ENOSPC
            } else {
                EIO
            };
            let ctx = format!("{threads} threads, operation {fail_at} failing ({kind})");
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join("db");
            let failing = Failing::new(fail_at, kind);
            let built = build(Arc::new(FailingFs(Arc::clone(&failing))), &dir, threads);
            if !failing.failed() {
                built.unwrap_or_else(|e| panic!("{ctx}: an error without a failure: {e}"));
                check_database(&dir, &ctx);
                break;
            }
            let Err(e) = built else {
                // A failed hard link: the table was copied.
                check_database(&dir, &ctx);
                fail_at += stride;
                continue;
            };
            failures += 1;
            let e = e.to_string();
            assert!(
                e.contains("cannot") && e.contains(&*tmp.path().to_string_lossy()),
                "{ctx}: the error does not say what failed and where: {e}"
            );
            // Nothing under the database's name, and no staging directory left beside it.
            assert!(
                !dir.exists(),
                "{ctx}: {:?} left at the database's name",
                names(&dir)
            );
            assert!(
                names(tmp.path()).is_empty(),
                "{ctx}: {:?} left",
                names(tmp.path())
            );
            // The same build succeeds once the file system does.
            build(Arc::new(LocalFileSystem), &dir, threads).unwrap();
            check_database(&dir, &ctx);
            fail_at += stride;
        }
    }
    eprintln!("{failures} failing operations of bulk builds checked, stride {stride}");
    assert!(failures > 30, "{failures}");
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

#[test]
fn every_failing_operation_of_a_commit_fails_it_and_keeps_the_parts() {
    let stride = stride();
    let mut failures = 0;
    let mut fail_at = 0;
    loop {
        let kind = if (fail_at / stride) % 2 == 0 {
            EIO
        } else {
            ENOSPC
        };
        let ctx = format!("operation {fail_at} of the commit failing ({kind})");
        let tmp = tempfile::tempdir().unwrap();
        let parts = staged_parts(tmp.path());
        let before = staged_bytes(&parts);
        let dir = tmp.path().join("db");
        let failing = Failing::new(fail_at, kind);
        let committed = commit_on(
            &FailingFs(Arc::clone(&failing)),
            &dir,
            &parts,
            &mut |_, _| {},
        );
        if !failing.failed() {
            committed.unwrap_or_else(|e| panic!("{ctx}: an error without a failure: {e}"));
            check_database(&dir, &ctx);
            break;
        }
        let Err(e) = committed else {
            // A failed hard link: the table was copied (and the parts, committed, removed).
            check_database(&dir, &ctx);
            fail_at += stride;
            continue;
        };
        failures += 1;
        let e = e.to_string();
        assert!(
            e.contains("cannot") && e.contains(&*tmp.path().to_string_lossy()),
            "{ctx}: the error does not say what failed and where: {e}"
        );
        assert!(
            !dir.exists(),
            "{ctx}: {:?} left at the database's name",
            names(&dir)
        );
        assert!(
            staged_bytes(&parts) == before,
            "{ctx}: a staged file changed"
        );
        commit(&dir, &parts).unwrap_or_else(|e| panic!("{ctx}: the commit after: {e}"));
        check_database(&dir, &ctx);
        fail_at += stride;
    }
    eprintln!("{failures} failing operations of commits checked, stride {stride}");
    assert!(failures > 5, "{failures}");
}
