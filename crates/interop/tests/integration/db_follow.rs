//! Following LevelDB 1.23 itself: while it writes a seeded history (small memtables, so
//! its background compactions run throughout), our read-only handle refreshes in a loop
//! and a follower reads its logs. After each refresh the whole view is LevelDB's database
//! after some prefix of the batches, the prefixes never go back, and the follower's batches,
//! concatenated, are LevelDB's in order, none twice, none missing except where it reported a
//! gap (whole batches).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use leveltable_db::{ChangeOp, Db as OurDb, DbOptions as OurOptions, FollowEvent};
use leveltable_interop::db::{BatchOp, Db as LevelDb, DbOptions, SplitMix, history_key};
use leveltable_interop::require_leveldb;

type Op = (Vec<u8>, Option<Vec<u8>>);
type State = BTreeMap<Vec<u8>, Vec<u8>>;

/// A seeded history of `n` batches of one to five puts and deletes over 3,000 keys.
fn history(seed: u64, n: usize) -> Vec<Vec<Op>> {
    let mut rng = SplitMix(seed);
    (0..n)
        .map(|_| {
            (0..1 + rng.below(5))
                .map(|_| {
                    let key = history_key(&mut rng, 3000);
                    let value = (!rng.one_in(5)).then(|| {
                        let len = rng.below(400) as usize;
                        let mut v = format!("v{}", rng.next_u64()).into_bytes();
                        v.resize(v.len() + len, b'.');
                        v
                    });
                    (key, value)
                })
                .collect()
        })
        .collect()
}

fn ops_of(batch: &[Op]) -> Vec<ChangeOp> {
    batch
        .iter()
        .map(|(key, value)| match value {
            Some(value) => ChangeOp::Put {
                key: key.clone(),
                value: value.clone(),
            },
            None => ChangeOp::Delete { key: key.clone() },
        })
        .collect()
}

#[test]
fn refreshes_and_the_feed_follow_leveldb_writing_and_compacting() {
    if !require_leveldb() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let options = DbOptions {
        write_buffer_size: 32 << 10,
        max_file_size: 64 << 10,
        ..DbOptions::default()
    };
    let writer = LevelDb::open(dir.path(), &options).unwrap();
    writer.put(b"before", b"the reader").unwrap();
    let mut reader = OurDb::open(dir.path(), OurOptions::default()).unwrap();
    let start = reader.snapshot();
    let mut follower = reader.follow(None).poll_interval(Duration::from_millis(1));
    let mut state: State = [(b"before".to_vec(), b"the reader".to_vec())].into();

    let batches = history(41, 3000);
    let mut ends = vec![start];
    for b in &batches {
        ends.push(ends.last().unwrap() + b.len() as u64);
    }
    let done = AtomicBool::new(false);
    let mut applied = 0usize;
    // Views checked so far: the writer waits for a new one every 100 batches, so that the
    // refreshes see many states in between however fast either side runs.
    let views = AtomicU64::new(0);
    let last = *ends.last().unwrap();
    let events = std::thread::scope(|s| {
        s.spawn(|| {
            for (i, b) in batches.iter().enumerate() {
                if i % 100 == 0 {
                    let seen = views.load(Ordering::SeqCst);
                    let deadline = Instant::now() + Duration::from_secs(60);
                    while views.load(Ordering::SeqCst) == seen && Instant::now() < deadline {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                let ops: Vec<BatchOp<'_>> = b
                    .iter()
                    .map(|(k, v)| match v {
                        Some(v) => BatchOp::Put(k, v),
                        None => BatchOp::Delete(k),
                    })
                    .collect();
                writer.write(&ops).unwrap();
            }
            done.store(true, Ordering::SeqCst);
        });
        let feed = s.spawn(move || {
            let mut events = Vec::new();
            let deadline = Instant::now() + Duration::from_secs(300);
            while follower.next_sequence() <= last {
                assert!(Instant::now() < deadline, "the feed fell behind");
                match follower.try_next_event().unwrap() {
                    Some(event) => events.push(event),
                    None => std::thread::sleep(Duration::from_micros(200)),
                }
            }
            events
        });
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let finished = done.load(Ordering::SeqCst);
            let r = reader.refresh().unwrap();
            let Ok(prefix) = ends.binary_search(&r.last_sequence) else {
                panic!("sequence {} is not at the end of a batch", r.last_sequence)
            };
            assert!(prefix >= applied, "the view went back");
            for b in &batches[applied..prefix] {
                for (k, v) in b {
                    match v {
                        Some(v) => state.insert(k.clone(), v.clone()),
                        None => state.remove(k),
                    };
                }
            }
            applied = prefix;
            let view: State = reader.iter().map(Result::unwrap).collect();
            assert!(
                view == state,
                "the view at sequence {} is not LevelDB's state after {prefix} batches",
                r.last_sequence
            );
            views.fetch_add(1, Ordering::SeqCst);
            if finished && applied == batches.len() {
                break;
            }
            assert!(Instant::now() < deadline, "refreshes fell behind");
            std::thread::sleep(Duration::from_millis(3));
        }
        feed.join().unwrap()
    });
    let views = views.into_inner();
    assert!(views > 10, "the refreshes saw the writes in {views} goes");
    let tables = reader.properties().levels.iter().flatten().count();
    assert!(tables > 1, "LevelDB flushed nothing: the test proves less");

    // The feed, concatenated: LevelDB's batches in order, once, gaps at whole batches.
    let mut next = 0usize;
    let (mut gaps, mut missed) = (0, 0);
    for event in events {
        match event {
            FollowEvent::Batch(change) => {
                assert_eq!(change.sequence, ends[next] + 1, "batch {next}");
                assert!(change.ops == ops_of(&batches[next]), "batch {next} differs");
                next += 1;
            }
            FollowEvent::Gap { first, last } => {
                assert_eq!(first, ends[next] + 1, "a gap starts inside a batch");
                let skipped = ends
                    .binary_search(&last)
                    .unwrap_or_else(|_| panic!("a gap ends inside a batch at {last}"));
                assert!(skipped > next);
                missed += skipped - next;
                next = skipped;
                gaps += 1;
            }
        }
    }
    assert_eq!(next, batches.len(), "the feed missed the last batches");
    eprintln!("{views} views; the feed had {gaps} gaps ({missed} batches)");
    assert!(
        missed < batches.len() / 2,
        "the feed missed {missed} of {} batches",
        batches.len()
    );
    drop(writer);
}
