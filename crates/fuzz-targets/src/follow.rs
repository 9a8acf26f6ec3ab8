//! The change feed over a log that is the fuzzer's bytes: a [`Follower`] reads them as the
//! live log of a database directory.

use leveltable_db::log_reader::LogReader;
use leveltable_db::write_batch::WriteBatch;
use leveltable_db::{ChangeOp, FollowEvent, Follower};

/// Calls of `try_next_event` beyond which a follower of `data` is taken to loop.
fn call_bound(data: &[u8]) -> usize {
    data.len() + 16
}

/// Follows `data` written as a database's only log, from sequence 1, until the follower
/// has nothing more: never a panic or a loop; no more operations than the log has bytes;
/// and every batch handed out is (the rest of) a write batch the log reader reads from the
/// same bytes, at the sequence that batch gives it: the feed never makes up a write.
pub fn follow(data: &[u8]) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(dir.path().join("000005.log"), data).expect("writing the log");
    // What the log holds, as the log reader reads it (with checksums): each record that
    // is a whole write batch, with its sequence and operations.
    let mut batches: Vec<(u64, Vec<ChangeOp>)> = Vec::new();
    for record in LogReader::new(data, true) {
        let Ok(batch) = WriteBatch::new(&record.data) else {
            continue;
        };
        let mut ops = Vec::new();
        let whole = batch.for_each(|op| ops.push(ChangeOp::from(op)));
        if whole.is_ok() {
            batches.push((batch.sequence(), ops));
        }
    }
    // Started from nothing known, then from what an open reads as committed (the newest
    // sequence of a batch the reader reads): a follower then reads past damage, by the
    // reader's rules, up to it.
    let committed = batches
        .iter()
        .map(|(sequence, ops)| sequence.saturating_add(ops.len() as u64).saturating_sub(1))
        .max()
        .unwrap_or(0);
    for committed in [0, committed] {
        follow_from(dir.path(), data, &batches, committed);
    }
}

/// Follows the log in `dir` (`data`, holding `batches`) as a follower told that sequences
/// up to `committed` are committed.
fn follow_from(
    dir: &std::path::Path,
    data: &[u8],
    batches: &[(u64, Vec<ChangeOp>)],
    committed: u64,
) {
    let mut follower = Follower::new(dir, 1, committed);
    let mut ops = 0usize;
    for _ in 0..call_bound(data) {
        let event = match follower.try_next_event() {
            Ok(Some(event)) => event,
            Ok(None) | Err(_) => return,
        };
        let FollowEvent::Batch(change) = event else {
            continue;
        };
        ops += change.ops.len();
        assert!(
            ops <= data.len(),
            "{ops} operations from a log of {} bytes",
            data.len()
        );
        let found = batches.iter().any(|(sequence, all)| {
            let skipped = change.sequence.wrapping_sub(*sequence);
            usize::try_from(skipped).is_ok_and(|skip| {
                change.sequence >= *sequence && skip <= all.len() && all[skip..] == change.ops[..]
            })
        });
        assert!(
            found,
            "the follower handed out a batch at sequence {} ({} operations) the log does not hold",
            change.sequence,
            change.ops.len()
        );
    }
    panic!(
        "the follower kept handing out events from a log of {} bytes",
        data.len()
    );
}
