//! Refreshing a read-only handle while another handle writes: after each refresh the whole
//! view is the writer's database after some prefix of its batches, the prefixes never go
//! back, and the last refresh after the writer stops sees everything; across a reopen of
//! the writer (a new MANIFEST) too.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use leveltable_db::{Db, DbOptions, WritableDb, WritableOptions, WriteBatchBuilder, WriteOptions};

type State = BTreeMap<Vec<u8>, Vec<u8>>;

/// Batch `i`: puts and deletes of up to four keys of 2,000, values of up to 600 bytes, so a
/// run of a few thousand fills many small memtables and compacts.
fn batch(i: u64) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    (0..1 + i % 4)
        .map(|j| {
            let key = format!("key{:05}", (i * 7 + j * 13) % 2000).into_bytes();
            let value = ((i + j) % 5 != 0)
                .then(|| format!("value {i} {j} {}", "x".repeat((i % 600) as usize)).into_bytes());
            (key, value)
        })
        .collect()
}

fn to_builder(ops: &[(Vec<u8>, Option<Vec<u8>>)]) -> WriteBatchBuilder {
    let mut b = WriteBatchBuilder::default();
    for (key, value) in ops {
        match value {
            Some(v) => b.put(key, v),
            None => b.delete(key),
        };
    }
    b
}

fn apply(state: &mut State, ops: &[(Vec<u8>, Option<Vec<u8>>)]) {
    for (key, value) in ops {
        match value {
            Some(v) => state.insert(key.clone(), v.clone()),
            None => state.remove(key),
        };
    }
}

fn writable(dir: &Path) -> WritableDb {
    WritableDb::open(
        dir,
        WritableOptions::default()
            .create_if_missing(true)
            .write_buffer_size(32 << 10),
    )
    .unwrap()
}

fn view(db: &Db) -> State {
    db.iter().map(Result::unwrap).collect()
}

/// Checks views of `reader`, refreshed while `write` runs batches `range` (the model is
/// `state` before them, at sequence `sequence`): each view is the model after a prefix, at
/// the prefix's last sequence, and the prefixes grow. `write` gets a pace to call now and
/// then: it returns once the reader has refreshed since the last call, so the reader sees
/// the writes in several steps however the threads are scheduled. Returns the model and
/// sequence after all of them, and how many refreshes saw something new.
fn refresh_during(
    reader: &mut Db,
    write: impl FnOnce(&[Vec<(Vec<u8>, Option<Vec<u8>>)>], &dyn Fn()) + Send,
    range: std::ops::Range<u64>,
    mut state: State,
    mut sequence: u64,
) -> (State, u64, u64) {
    let batches: Vec<_> = range.map(batch).collect();
    // The last sequence after each prefix of the batches.
    let mut ends = vec![sequence];
    for ops in &batches {
        ends.push(ends.last().unwrap() + ops.len() as u64);
    }
    let done = AtomicBool::new(false);
    let refreshes = AtomicU64::new(0);
    let reader_gone = AtomicBool::new(false);
    let mut applied = 0usize;
    let mut changed = 0u64;
    std::thread::scope(|s| {
        s.spawn(|| {
            let seen = AtomicU64::new(0);
            let pace = || {
                let last = seen.load(Ordering::SeqCst);
                // (A reader that stopped, failing, stops the pacing.)
                while refreshes.load(Ordering::SeqCst) <= last
                    && !reader_gone.load(Ordering::SeqCst)
                {
                    std::thread::sleep(Duration::from_millis(1));
                }
                seen.store(refreshes.load(Ordering::SeqCst), Ordering::SeqCst);
            };
            write(&batches, &pace);
            done.store(true, Ordering::SeqCst);
        });
        // Set as the reader's loop ends, by a failed check too.
        struct Gone<'a>(&'a AtomicBool);
        impl Drop for Gone<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let _gone = Gone(&reader_gone);
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let finished = done.load(Ordering::SeqCst);
            let r = reader.refresh().unwrap();
            refreshes.fetch_add(1, Ordering::SeqCst);
            assert!(r.last_sequence >= r.previous_sequence, "{r:?}");
            assert_eq!(reader.snapshot(), r.last_sequence);
            if r.changed() {
                changed += 1;
            }
            let Ok(prefix) = ends.binary_search(&r.last_sequence) else {
                panic!("sequence {} is not at the end of a batch", r.last_sequence)
            };
            assert!(prefix >= applied, "the view went back");
            for ops in &batches[applied..prefix] {
                apply(&mut state, ops);
            }
            applied = prefix;
            sequence = ends[prefix];
            assert!(
                view(reader) == state,
                "the view at sequence {sequence} is not the writer's state after {prefix} batches"
            );
            if finished {
                break;
            }
            assert!(Instant::now() < deadline, "refreshes fell behind");
            std::thread::sleep(Duration::from_millis(2));
        }
    });
    assert_eq!(applied, batches.len(), "the last refresh missed batches");
    (state, sequence, changed)
}

#[test]
fn every_refresh_is_a_prefix_of_the_writers_history() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("db");
    let db = writable(&dir);
    db.put(b"before", b"the reader", WriteOptions::default())
        .unwrap();
    let mut reader = Db::open(&dir, DbOptions::default()).unwrap();
    let start = reader.snapshot();
    let state: State = [(b"before".to_vec(), b"the reader".to_vec())].into();

    // Nothing new: nothing changes.
    let idle = reader.refresh().unwrap();
    assert!(!idle.changed(), "{idle:?}");
    assert_eq!(idle.last_sequence, start);

    let (state, sequence, changed) = refresh_during(
        &mut reader,
        |batches, pace| {
            for (i, ops) in batches.iter().enumerate() {
                db.write(&to_builder(ops), WriteOptions::default()).unwrap();
                if i % 700 == 699 {
                    db.compact_range(None, None).unwrap();
                }
                if i % 500 == 499 {
                    pace();
                }
            }
        },
        0..2500,
        state,
        start,
    );
    assert!(changed > 1, "the refreshes saw the writes in one go");
    let tables = reader.properties().levels.iter().flatten().count();
    assert!(
        tables > 0,
        "the writer flushed nothing: the test proves less"
    );

    // The writer closes and reopens: a new MANIFEST, logs replayed into tables.
    let before = reader.properties().manifest.clone();
    db.close().unwrap();
    let db = writable(&dir);
    let (_, _, _) = refresh_during(
        &mut reader,
        |batches, _pace| {
            for ops in batches {
                db.write(&to_builder(ops), WriteOptions::default()).unwrap();
            }
        },
        2500..3500,
        state,
        sequence,
    );
    assert_ne!(reader.properties().manifest, before, "no new MANIFEST");
    // A fresh open agrees with the refreshed view. The writer's compactions may go on after
    // its last write and delete tables a fresh open lists but has not opened yet: close it
    // first.
    db.close().unwrap();
    let fresh = Db::open(&dir, DbOptions::default()).unwrap();
    assert_eq!(fresh.snapshot(), reader.snapshot());
    assert!(view(&fresh) == view(&reader));
}

/// An iterator made before a refresh keeps its view; tables the writer's compaction
/// deleted after they were opened are still read, by the refreshed view and the old one.
#[test]
fn views_taken_before_a_refresh_keep_reading_after_compactions() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("db");
    let db = writable(&dir);
    let mut state = State::new();
    for i in 0..600 {
        let ops = batch(i);
        db.write(&to_builder(&ops), WriteOptions::default())
            .unwrap();
        apply(&mut state, &ops);
    }
    // A compaction still running could delete a table between the open and the read.
    db.wait_for_compactions().unwrap();
    let mut reader = Db::open(&dir, DbOptions::default()).unwrap();
    assert!(view(&reader) == state);
    for i in 600..1200 {
        db.write(&to_builder(&batch(i)), WriteOptions::default())
            .unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    reader.refresh().unwrap();
    let mut after = state.clone();
    for i in 600..1200 {
        apply(&mut after, &batch(i));
    }
    assert!(view(&reader) == after);
    let old = reader.iter();
    // Every table of the view is deleted by a full compaction; the view reads on, and so
    // does an iterator made before.
    db.compact_range(None, None).unwrap();
    db.put(b"newer", b"write", WriteOptions::default()).unwrap();
    assert!(view(&reader) == after);
    let old: State = old.map(Result::unwrap).collect();
    assert!(old == after);
    // The next refresh lets go of the deleted tables and reads the compaction's output.
    let r = reader.refresh().unwrap();
    assert!(r.tables_removed > 0, "{r:?}");
    after.insert(b"newer".to_vec(), b"write".to_vec());
    assert!(view(&reader) == after);
}

/// `refreshed` makes a new handle and leaves the old one's view; the old one, refreshed
/// after the new one read everything, still catches up.
#[test]
fn a_refreshed_handle_leaves_the_old_view_and_the_old_handle_catches_up() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("db");
    let db = writable(&dir);
    db.put(b"a", b"1", WriteOptions::default()).unwrap();
    let mut old = Db::open(&dir, DbOptions::default()).unwrap();
    db.put(b"a", b"2", WriteOptions::default()).unwrap();
    db.put(b"b", b"3", WriteOptions::default()).unwrap();
    let (new, r) = old.refreshed().unwrap().expect("two writes are new");
    assert_eq!((r.batches, r.last_sequence - r.previous_sequence), (2, 2));
    assert_eq!(old.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(new.get(b"a").unwrap().as_deref(), Some(&b"2"[..]));
    assert!(new.refreshed().unwrap().is_none(), "nothing is new");
    let r = old.refresh().unwrap();
    assert!(r.changed() && r.batches == 0, "{r:?}");
    assert_eq!(old.snapshot(), new.snapshot());
    assert!(view(&old) == view(&new));
}

/// After the directory has been still for a while a refresh does not list it; a log the
/// writer then creates changes the directory's time and is found.
#[test]
fn a_log_created_after_a_quiet_spell_is_found() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("db");
    let db = writable(&dir);
    db.put(b"a", b"1", WriteOptions::default()).unwrap();
    let mut reader = Db::open(&dir, DbOptions::default()).unwrap();
    reader.refresh().unwrap();
    std::thread::sleep(Duration::from_millis(2300));
    assert!(!reader.refresh().unwrap().changed());
    // A flush switches to a new log; the writes after it are in that log only.
    db.flush().unwrap();
    db.put(b"b", b"2", WriteOptions::default()).unwrap();
    let r = reader.refresh().unwrap();
    assert!(r.changed(), "{r:?}");
    assert_eq!(reader.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(reader.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
}
