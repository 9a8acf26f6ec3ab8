//! A follower reading through a `FileSystem` whose operations fail in turn with EIO, while
//! the writer moves from one log to the next: each failure is an error naming the file or
//! directory, and the calls after it return every batch once, in order, without a gap.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use leveltable_db::{
    ChangeOp, Db, DbOptions, FollowEvent, WritableDb, WritableOptions, WriteBatchBuilder,
    WriteOptions,
};

use crate::common;

use common::failing_fs::{EIO, Failing, FailingFs};

/// The operations of batch `i`.
fn batch(i: u64) -> Vec<ChangeOp> {
    (0..1 + i % 3)
        .map(|j| {
            let key = format!("k{:04}", (i * 31 + j * 7) % 97).into_bytes();
            if (i + j) % 5 == 0 {
                ChangeOp::Delete { key }
            } else {
                ChangeOp::Put {
                    key,
                    value: vec![b'a' + (i % 26) as u8; 50 + (i as usize % 7) * 40],
                }
            }
        })
        .collect()
}

fn write(db: &WritableDb, i: u64) {
    let mut b = WriteBatchBuilder::new(0);
    for op in batch(i) {
        match op {
            ChangeOp::Put { key, value } => b.put(&key, &value),
            ChangeOp::Delete { key } => b.delete(&key),
        };
    }
    db.write(&b, WriteOptions::default()).unwrap();
}

/// Calls `next` until it gives an event, retrying once after an error (only one
/// operation fails in a run); the errors seen go to `errors`.
fn next_event(
    next: &mut dyn FnMut() -> leveltable_db::Result<Option<FollowEvent>>,
    dir: &Path,
    errors: &mut Vec<String>,
) -> Option<FollowEvent> {
    for _ in 0..3 {
        match next() {
            Ok(event) => return event,
            Err(e) => {
                let message = e.to_string();
                assert!(
                    message.contains(&dir.display().to_string()),
                    "the error names neither the directory nor a file in it: {message}"
                );
                errors.push(message);
            }
        }
    }
    panic!("a follower failed three times in a row: {errors:?}");
}

#[test]
fn a_follower_whose_reads_fail_returns_every_batch_once_after_the_failure() {
    const FIRST: u64 = 20;
    const ALL: u64 = 40;
    let mut errors = Vec::new();
    let mut runs = 0;
    for fail_at in 0.. {
        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join("db");
        let options = WritableOptions::default().create_if_missing(true);
        let db = WritableDb::open(&dir, options).unwrap();
        for i in 0..FIRST {
            write(&db, i);
        }
        let failing = Failing::new(fail_at, EIO);
        let reader = match Db::open(
            &dir,
            DbOptions::default().file_system(Arc::new(FailingFs(Arc::clone(&failing)))),
        ) {
            Ok(reader) => reader,
            // The open's failures are `env_faults.rs`'s.
            Err(_) => continue,
        };
        let mut follower = reader
            .follow(Some(1))
            .poll_interval(Duration::ZERO)
            .poll_only(true);
        let mut next = || follower.try_next_event();
        let mut events = Vec::new();
        // The follower holds the first log open, then the writer moves to a second one
        // (the first is deleted once flushed) and writes the rest there.
        events.extend(next_event(&mut next, &dir, &mut errors));
        db.flush().unwrap();
        for i in FIRST..ALL {
            write(&db, i);
        }
        while let Some(event) = next_event(&mut next, &dir, &mut errors) {
            events.push(event);
        }
        let mut sequence = 1;
        for (i, event) in events.iter().enumerate() {
            let ops = batch(i as u64);
            let expected = FollowEvent::Batch(leveltable_db::Change { sequence, ops });
            assert_eq!(event, &expected, "operation {fail_at} failing: event {i}");
            if let FollowEvent::Batch(change) = event {
                sequence += change.ops.len() as u64;
            }
        }
        assert_eq!(events.len() as u64, ALL, "operation {fail_at} failing");
        runs += 1;
        db.close().unwrap();
        if !failing.failed() {
            break;
        }
    }
    // Reads of both logs and the listing that finds the second failed along the way.
    assert!(
        errors.iter().any(|e| e.contains("000002.log")),
        "{errors:#?}"
    );
    assert!(
        errors.iter().any(|e| e.contains("000004.log")),
        "{errors:#?}"
    );
    assert!(runs > 10, "{runs} runs");
}
