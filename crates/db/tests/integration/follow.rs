//! The change feed: a follower of a directory another handle writes returns every committed
//! batch once, in order, across log switches; what no log holds any more is a gap it names;
//! a record still being written is not returned until it is whole; nothing in the directory
//! changes.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use leveltable_db::{
    ChangeOp, Db, DbOptions, FollowEvent, Follower, WritableDb, WritableOptions, WriteBatchBuilder,
    WriteOptions,
};

/// The operations of one batch, in order.
type Ops = Vec<ChangeOp>;

fn batch_ops(i: u64) -> Ops {
    let mut ops = Vec::new();
    for j in 0..1 + i % 4 {
        let key = format!("key{:05}", (i * 7 + j * 13) % 3000).into_bytes();
        if (i + j) % 5 == 0 {
            ops.push(ChangeOp::Delete { key });
        } else {
            let value = format!("value {i} {j} {}", "x".repeat((i % 300) as usize)).into_bytes();
            ops.push(ChangeOp::Put { key, value });
        }
    }
    ops
}

fn to_batch(ops: &Ops) -> WriteBatchBuilder {
    let mut batch = WriteBatchBuilder::default();
    for op in ops {
        match op {
            ChangeOp::Put { key, value } => batch.put(key, value),
            ChangeOp::Delete { key } => batch.delete(key),
        };
    }
    batch
}

/// Every file of `dir` with its length and modification time.
fn listing(dir: &Path) -> BTreeMap<String, (u64, std::time::SystemTime)> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            (
                e.file_name().into_string().unwrap(),
                (m.len(), m.modified().unwrap()),
            )
        })
        .collect()
}

fn writable(dir: &Path) -> WritableDb {
    WritableDb::open(
        dir,
        WritableOptions::default()
            .create_if_missing(true)
            .write_buffer_size(64 << 10),
    )
    .unwrap()
}

#[test]
fn a_follower_returns_every_batch_of_a_running_writer_once_in_order() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("db");
    let db = writable(&dir);
    db.put(b"before", b"the follower", WriteOptions::default())
        .unwrap();
    let reader = Db::open(&dir, DbOptions::default()).unwrap();
    let start = reader.snapshot();
    let mut follower = reader.follow(None).poll_interval(Duration::from_millis(1));
    assert_eq!(follower.next_sequence(), start + 1);

    let batches: u64 = 3000;
    let done = AtomicBool::new(false);
    let written: Vec<Ops> = (0..batches).map(batch_ops).collect();
    let events = std::thread::scope(|s| {
        s.spawn(|| {
            for ops in &written {
                db.write(&to_batch(ops), WriteOptions::default()).unwrap();
            }
            done.store(true, Ordering::SeqCst);
        });
        let mut events = Vec::new();
        let total: u64 = written.iter().map(|o| o.len() as u64).sum();
        let deadline = Instant::now() + Duration::from_secs(120);
        while follower.next_sequence() <= start + total {
            assert!(
                Instant::now() < deadline,
                "the follower fell behind for good"
            );
            if let Some(event) = follower.try_next_event().unwrap() {
                events.push(event);
            } else {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
        events
    });
    assert!(done.load(Ordering::SeqCst));

    // The batches the follower returned are the writer's, in order, at consecutive
    // sequences; a gap (a log flushed and deleted before the follower reached it) covers
    // whole batches and is named.
    let mut expected_seq = start + 1;
    let mut next_batch = 0usize;
    let mut returned = 0;
    for event in events {
        match event {
            FollowEvent::Batch(change) => {
                assert_eq!(change.sequence, expected_seq);
                assert!(
                    written[next_batch] == change.ops,
                    "batch at sequence {} is not the writer's batch {next_batch}",
                    change.sequence
                );
                expected_seq += change.ops.len() as u64;
                next_batch += 1;
                returned += 1;
            }
            FollowEvent::Gap { first, last } => {
                assert_eq!(first, expected_seq);
                let mut covered = 0;
                while covered < last - first + 1 {
                    covered += written[next_batch].len() as u64;
                    next_batch += 1;
                }
                assert_eq!(covered, last - first + 1, "a gap splits a batch");
                expected_seq = last + 1;
            }
        }
    }
    assert_eq!(next_batch, batches as usize);
    assert!(
        returned > batches / 2,
        "only {returned} batches came through the feed"
    );
}

#[test]
fn a_start_no_log_holds_is_a_gap_and_a_snapshot_is_the_way_on() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("db");
    let db = writable(&dir);
    for i in 0..2000u64 {
        db.write(&to_batch(&batch_ops(i)), WriteOptions::default())
            .unwrap();
    }
    // Flushed into tables: the first sequences are in no log any more.
    db.compact_range(None, None).unwrap();
    let reader = Db::open(&dir, DbOptions::default()).unwrap();
    let committed = reader.snapshot();
    let mut follower = reader.follow(Some(1));
    let Some(FollowEvent::Gap { first, last }) = follower.try_next_event().unwrap() else {
        panic!("no gap reported");
    };
    assert_eq!(first, 1);
    assert!(
        last >= 1 && last <= committed,
        "gap 1..={last}, committed {committed}"
    );

    // The way on: the snapshot's contents, then the feed after it.
    let mut follower = reader.follow(None);
    assert_eq!(follower.try_next_event().unwrap(), None);
    db.put(b"after", b"the snapshot", WriteOptions { sync: true })
        .unwrap();
    let event = follower.next_event().unwrap();
    assert_eq!(
        event,
        FollowEvent::Batch(leveltable_db::Change {
            sequence: committed + 1,
            ops: vec![ChangeOp::Put {
                key: b"after".to_vec(),
                value: b"the snapshot".to_vec(),
            }],
        })
    );
}

#[test]
fn a_record_still_being_written_is_not_returned_until_whole() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("db");
    let db = writable(&dir);
    db.put(b"a", b"1", WriteOptions { sync: true }).unwrap();
    drop(db);
    // A log of our own making: the record of one batch, written in two steps.
    let db = writable(&dir);
    drop(db);
    let reader = Db::open(&dir, DbOptions::default()).unwrap();
    let logs: Vec<u64> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".log")?.parse().ok()
        })
        .collect();
    let log = dir.join(format!("{:06}.log", logs.iter().max().unwrap()));
    let mut batch = to_batch(&vec![ChangeOp::Put {
        key: b"b".to_vec(),
        value: vec![7; 100_000],
    }]);
    batch.set_sequence(reader.snapshot() + 1);
    let mut record = Vec::new();
    leveltable_db::log_writer::LogWriter::new(&mut record)
        .add_record(batch.as_bytes())
        .unwrap();
    let before = std::fs::read(&log).unwrap();
    assert!(before.is_empty(), "the new log is empty");

    let mut follower = reader.follow(None);
    let listed = listing(&dir);
    for cut in [0, 3, 7, 40_000, record.len() - 1] {
        std::fs::write(&log, &record[..cut]).unwrap();
        assert_eq!(follower.try_next_event().unwrap(), None, "cut at {cut}");
    }
    std::fs::write(&log, &record).unwrap();
    let Some(FollowEvent::Batch(change)) = follower.try_next_event().unwrap() else {
        panic!("the whole record was not returned");
    };
    assert_eq!(change.sequence, reader.snapshot() + 1);
    assert_eq!(follower.try_next_event().unwrap(), None);
    // The follower itself changed nothing (the log is the test's).
    let mut after = listing(&dir);
    after.remove(log.file_name().unwrap().to_str().unwrap());
    let mut listed = listed;
    listed.remove(log.file_name().unwrap().to_str().unwrap());
    assert_eq!(after, listed);
}

#[test]
fn a_follower_of_an_idle_database_finds_nothing_and_writes_nothing() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("db");
    let db = writable(&dir);
    db.put(b"a", b"1", WriteOptions { sync: true }).unwrap();
    let before = listing(&dir);
    let mut follower = Follower::new(&dir, 2, 1);
    for _ in 0..3 {
        assert_eq!(follower.try_next_event().unwrap(), None);
    }
    assert_eq!(listing(&dir), before);
}

/// A follower waiting on its watch of the directory (Linux) takes each batch the writer
/// commits without waiting out its poll interval, here an hour: a batch not taken within a
/// minute means no event woke the follower. The writer commits each batch once the
/// follower took the one before, so each commit finds the follower waiting (or about to).
#[cfg(target_os = "linux")]
#[test]
fn a_watching_follower_wakes_at_each_commit_not_at_its_poll_interval() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("db");
    let db = writable(&dir);
    let reader = Db::open(&dir, DbOptions::default()).unwrap();
    let start = reader.snapshot();
    let mut follower = reader.follow(None).poll_interval(Duration::from_secs(3600));
    let batches = 100u64;
    let (events_tx, events) = std::sync::mpsc::channel();
    // Not joined on failure: a follower that no event wakes sleeps for an hour.
    let feed = std::thread::spawn(move || {
        for _ in 0..batches {
            if events_tx.send(follower.next_event().unwrap()).is_err() {
                break;
            }
        }
        follower.watches_directory()
    });
    let mut sequence = start + 1;
    for i in 0..batches {
        let ops = batch_ops(i);
        db.write(&to_batch(&ops), WriteOptions::default()).unwrap();
        let event = events
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no event woke the follower for batch {i}"));
        let FollowEvent::Batch(change) = event else {
            panic!("a gap at batch {i}: {event:?}");
        };
        assert_eq!(change.sequence, sequence);
        assert!(change.ops == ops, "batch {i} is not the writer's");
        sequence += ops.len() as u64;
    }
    assert!(
        feed.join().unwrap(),
        "the follower did not watch the directory"
    );
}

/// A follower asked for an event sets up its watch before it first looks, even when the
/// event is there already and it never waits: whether it watches does not depend on how the
/// threads were scheduled.
#[cfg(target_os = "linux")]
#[test]
fn a_follower_asked_for_an_event_already_committed_watches_the_directory() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("db");
    let db = writable(&dir);
    let reader = Db::open(&dir, DbOptions::default()).unwrap();
    let mut follower = reader.follow(None);
    assert!(!follower.watches_directory(), "a watch before any wait");
    db.put(b"k", b"v", WriteOptions::default()).unwrap();
    let FollowEvent::Batch(change) = follower.next_event().unwrap() else {
        panic!("a gap");
    };
    assert_eq!(change.sequence, reader.snapshot() + 1);
    assert!(follower.watches_directory());
}

#[test]
fn a_polling_follower_sets_up_no_watch_and_still_follows() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("db");
    let db = writable(&dir);
    let reader = Db::open(&dir, DbOptions::default()).unwrap();
    let mut follower = reader
        .follow(None)
        .poll_interval(Duration::from_millis(1))
        .poll_only(true);
    assert_eq!(
        follower
            .next_event_timeout(Duration::from_millis(5))
            .unwrap(),
        None
    );
    db.put(b"k", b"v", WriteOptions::default()).unwrap();
    let FollowEvent::Batch(change) = follower.next_event().unwrap() else {
        panic!("a gap");
    };
    assert_eq!(change.sequence, reader.snapshot() + 1);
    assert!(!follower.watches_directory());
}
