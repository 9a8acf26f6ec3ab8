//! A database open for writing whose file system fails on demand: ENOSPC or EIO at each
//! file operation in turn (creating, writing, syncing, renaming files and syncing the
//! directory). The error reaches the caller, nothing acknowledged is lost, and the database
//! reopens holding every acknowledged write (and possibly the write that failed) and
//! nothing else.
//!
//! `LEVELTABLE_FAULT_STRIDE` sets the step between failing operations (default 5; 1 fails
//! every operation in turn).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use leveltable_db::{
    FileSystem, LocalFileSystem, WritableDb, WritableOptions, WriteBatchBuilder, WriteOptions,
};

use crate::common;

use common::failing_fs::{EIO, ENOSPC, Failing, FailingFs};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
/// Puts (`Some`) and deletes (`None`).
type Ops = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// Step `i` of the workload: a put, a delete or a batch, deterministic in `i`.
fn write_op(i: u64) -> (WriteBatchBuilder, Ops, bool) {
    let mut x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5555;
    let mut next = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let n = if next(5) == 0 { 1 + next(8) } else { 1 };
    let mut ops = Vec::new();
    for _ in 0..n {
        let key = format!("key{:04}", next(300)).into_bytes();
        let value = (next(4) != 0).then(|| vec![b'a' + next(26) as u8; next(3000) as usize]);
        ops.push((key, value));
    }
    let mut batch = WriteBatchBuilder::default();
    for (k, v) in &ops {
        match v {
            Some(v) => batch.put(k, v),
            None => batch.delete(k),
        };
    }
    (batch, ops, next(4) == 0)
}

fn apply(model: &mut Model, ops: &[(Vec<u8>, Option<Vec<u8>>)]) {
    for (k, v) in ops {
        match v {
            Some(v) => model.insert(k.clone(), v.clone()),
            None => model.remove(k),
        };
    }
}

const STEPS: u64 = 240;

fn options(fs: Arc<dyn FileSystem>) -> WritableOptions {
    WritableOptions::default()
        .create_if_missing(true)
        .write_buffer_size(64 << 10)
        .file_system(fs)
}

/// Runs the workload until the first error; returns the writes acknowledged, whether the
/// failing call was a write, and the error.
fn run(dir: &Path, fs: Arc<dyn FileSystem>) -> (u64, bool, Option<String>) {
    let mut db = match WritableDb::open(dir, options(Arc::clone(&fs))) {
        Ok(db) => db,
        Err(e) => return (0, false, Some(e.to_string())),
    };
    for i in 0..STEPS {
        let step = match i {
            80 => db.flush(),
            160 => db.compact_range(None, None),
            120 => {
                if let Err(e) = db.close() {
                    return (i, false, Some(e.to_string()));
                }
                match WritableDb::open(dir, options(Arc::clone(&fs))) {
                    Ok(reopened) => {
                        db = reopened;
                        Ok(())
                    }
                    Err(e) => return (i, false, Some(e.to_string())),
                }
            }
            _ => Ok(()),
        };
        if let Err(e) = step {
            return (i, false, Some(e.to_string()));
        }
        let (batch, _, sync) = write_op(i);
        if let Err(e) = db.write(&batch, WriteOptions { sync }) {
            return (i, true, Some(e.to_string()));
        }
    }
    match db.close() {
        Ok(()) => (STEPS, false, None),
        Err(e) => (STEPS, false, Some(e.to_string())),
    }
}

#[test]
fn every_failing_file_operation_reaches_the_caller_and_loses_nothing() {
    let stride: u64 = std::env::var("LEVELTABLE_FAULT_STRIDE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
        .max(1);
    let mut fail_at = 0;
    let mut failures = 0;
    loop {
        let dir = tempfile::tempdir().unwrap();
        let kind = if (fail_at / stride) % 2 == 0 {
            ENOSPC
        } else {
            EIO
        };
        let failing = Failing::new(fail_at, kind);
        let (acked, write_failed, error) =
            run(dir.path(), Arc::new(FailingFs(Arc::clone(&failing))));
        let ctx = format!("operation {fail_at} failing ({kind}), {acked} writes acknowledged");
        if !failing.failed() {
            assert!(
                error.is_none(),
                "{ctx}: an error without a failure: {error:?}"
            );
            break;
        }
        // The failure may have been an obsolete file's deletion, which is no error.
        if let Some(e) = &error {
            failures += 1;
            assert!(
                e.contains("cannot") || e.contains("os error"),
                "{ctx}: the error does not say what failed: {e}"
            );
        }
        let db = WritableDb::open(dir.path(), options(Arc::new(LocalFileSystem)))
            .unwrap_or_else(|e| panic!("{ctx}: the database does not reopen: {e}"));
        let got: Vec<(Vec<u8>, Vec<u8>)> = db.iter().collect::<Result<_, _>>().unwrap();
        let mut model = Model::new();
        for i in 0..acked {
            apply(&mut model, &write_op(i).1);
        }
        let at_ack: Vec<_> = model.clone().into_iter().collect();
        if got != at_ack {
            assert!(
                write_failed,
                "{ctx}: {} entries, expected {}",
                got.len(),
                at_ack.len()
            );
            apply(&mut model, &write_op(acked).1);
            let with_failed: Vec<_> = model.into_iter().collect();
            assert_eq!(
                got, with_failed,
                "{ctx}: neither the acknowledged writes nor one more"
            );
        }
        db.close().unwrap();
        fail_at += stride;
    }
    eprintln!("{failures} failing operations checked, stride {stride}");
    assert!(failures > 20, "{failures}");
}
