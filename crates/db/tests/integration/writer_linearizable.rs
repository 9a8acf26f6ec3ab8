//! Eight threads write and read a database open for writing at once, while it flushes and
//! compacts; the history of each key must be linearizable (checked by a search for a
//! sequential order, Wing and Gong's with Lowe's memoization, over each key's register:
//! linearizability is local, so keys are checked one by one), and every write batch must
//! be seen whole or not at all by scans and snapshots.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use leveltable_db::{WritableDb, WritableOptions, WriteBatchBuilder, WriteOptions};

const THREADS: u64 = 8;
const OPS: u64 = 250;
const KEYS: u64 = 6;
const GROUPS: u64 = 4;
const GROUP_KEYS: u64 = 4;
/// Values are padded so that the memtable fills and the database flushes and compacts.
const PAD: usize = 700;

/// The bounds of a range compaction.
type Range = (Option<&'static [u8]>, Option<&'static [u8]>);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Sets the register to the value (a delete sets it to `None`).
    Write(Option<u32>),
    /// Read the value.
    Read(Option<u32>),
}

/// One operation of one key's history: invoked and returned at ticks of a shared clock.
#[derive(Debug, Clone, Copy)]
struct Op {
    inv: u64,
    ret: u64,
    kind: Kind,
}

fn value(id: u32) -> Vec<u8> {
    let mut v = id.to_le_bytes().to_vec();
    v.resize(4 + PAD, b'.');
    v
}

fn id_of(v: &[u8]) -> u32 {
    u32::from_le_bytes(v[..4].try_into().unwrap())
}

/// Whether `ops` (one register's history, starting from `None`) has a sequential order
/// that respects real time and in which each read returns the last value written.
fn linearizable(mut ops: Vec<Op>) -> bool {
    ops.sort_by_key(|o| o.inv);
    let n = ops.len();
    let words = n.div_ceil(64);
    let mut seen: HashSet<(Vec<u64>, Option<u32>)> = HashSet::new();
    // Depth-first search over (operations linearized, register value).
    let mut stack = vec![(vec![0u64; words], None::<u32>, 0usize)];
    while let Some((done, state, count)) = stack.pop() {
        if count == n {
            return true;
        }
        let pending = (0..n).filter(|&i| done[i / 64] >> (i % 64) & 1 == 0);
        let first_return = pending.clone().map(|i| ops[i].ret).min().unwrap();
        for i in pending {
            let op = ops[i];
            if op.inv > first_return {
                // Invoked after a pending operation returned: it cannot come before it.
                break;
            }
            let next = match op.kind {
                Kind::Write(v) => v,
                Kind::Read(v) if v == state => state,
                Kind::Read(_) => continue,
            };
            let mut d = done.clone();
            d[i / 64] |= 1 << (i % 64);
            if seen.insert((d.clone(), next)) {
                stack.push((d, next, count + 1));
            }
        }
    }
    false
}

#[test]
fn the_checker_refuses_a_stale_read() {
    let w = |inv, ret, v| Op {
        inv,
        ret,
        kind: Kind::Write(Some(v)),
    };
    let r = |inv, ret, v: Option<u32>| Op {
        inv,
        ret,
        kind: Kind::Read(v),
    };
    assert!(linearizable(vec![w(0, 1, 1), w(2, 3, 2), r(4, 5, Some(2))]));
    assert!(!linearizable(vec![
        w(0, 1, 1),
        w(2, 3, 2),
        r(4, 5, Some(1))
    ]));
    // Overlapping writes may be read in either order, but not back and forth.
    assert!(linearizable(vec![w(0, 5, 1), w(1, 6, 2), r(7, 8, Some(1))]));
    assert!(!linearizable(vec![
        w(0, 5, 1),
        w(1, 6, 2),
        r(7, 8, Some(1)),
        r(9, 10, Some(2)),
        r(11, 12, Some(1)),
    ]));
    assert!(!linearizable(vec![r(0, 1, Some(3))]));
}

#[test]
fn concurrent_histories_are_linearizable_and_batches_atomic() {
    let dir = tempfile::tempdir().unwrap();
    let options = WritableOptions::default()
        .create_if_missing(true)
        .write_buffer_size(64 << 10);
    let db = Arc::new(WritableDb::open(dir.path(), options).unwrap());
    let clock = Arc::new(AtomicU64::new(0));
    // Range compactions run beside the writes, each flushing memtables in its middle.
    let running = Arc::new(AtomicBool::new(true));
    let compactor = {
        let (db, running) = (Arc::clone(&db), Arc::clone(&running));
        std::thread::spawn(move || {
            let ranges: [Range; 3] = [(None, None), (Some(b"g"), Some(b"h")), (Some(b"k3"), None)];
            let mut runs = 0;
            while running.load(Ordering::Acquire) {
                let (begin, end) = ranges[runs % ranges.len()];
                db.compact_range(begin, end).unwrap();
                runs += 1;
            }
            runs
        })
    };
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (db, clock) = (Arc::clone(&db), Arc::clone(&clock));
            std::thread::spawn(move || {
                let mut x = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(t + 1);
                let mut next = |n: u64| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x % n
                };
                let mut history: Vec<(u64, Op)> = Vec::new();
                for i in 0..OPS {
                    let id = (t * OPS + i + 1) as u32;
                    let key = next(KEYS);
                    let name = format!("k{key}");
                    let sync = next(16) == 0;
                    let w = WriteOptions { sync };
                    match next(10) {
                        0..=3 => {
                            let inv = clock.fetch_add(1, Ordering::SeqCst);
                            db.put(name.as_bytes(), &value(id), w).unwrap();
                            let ret = clock.fetch_add(1, Ordering::SeqCst);
                            let kind = Kind::Write(Some(id));
                            history.push((key, Op { inv, ret, kind }));
                        }
                        4 => {
                            let inv = clock.fetch_add(1, Ordering::SeqCst);
                            db.delete(name.as_bytes(), w).unwrap();
                            let ret = clock.fetch_add(1, Ordering::SeqCst);
                            history.push((
                                key,
                                Op {
                                    inv,
                                    ret,
                                    kind: Kind::Write(None),
                                },
                            ));
                        }
                        5..=7 => {
                            let inv = clock.fetch_add(1, Ordering::SeqCst);
                            let got = db.get(name.as_bytes()).unwrap();
                            let ret = clock.fetch_add(1, Ordering::SeqCst);
                            let kind = Kind::Read(got.map(|v| id_of(&v)));
                            history.push((key, Op { inv, ret, kind }));
                        }
                        8 => {
                            // A batch sets every key of a group to one value.
                            let g = next(GROUPS);
                            let mut batch = WriteBatchBuilder::default();
                            for j in 0..GROUP_KEYS {
                                batch.put(format!("g{g}-{j}").as_bytes(), &value(id));
                            }
                            db.write(&batch, w).unwrap();
                        }
                        _ => check_groups(&db),
                    }
                }
                history
            })
        })
        .collect();
    let mut per_key: Vec<Vec<Op>> = vec![Vec::new(); KEYS as usize];
    for t in threads {
        for (key, op) in t.join().unwrap() {
            per_key[key as usize].push(op);
        }
    }
    running.store(false, Ordering::Release);
    assert!(compactor.join().unwrap() > 0);
    for (key, ops) in per_key.into_iter().enumerate() {
        let n = ops.len();
        assert!(
            linearizable(ops),
            "the history of k{key} ({n} operations) is not linearizable"
        );
    }
    check_groups(&db);
    assert!(
        db.compactions() > 0 || db.tables().len() > 1,
        "nothing was flushed"
    );
    // The levels the compactions and flushes left open again, with the same contents.
    let before: Vec<_> = db.iter().collect::<Result<_, _>>().unwrap();
    Arc::into_inner(db).unwrap().close().unwrap();
    let db = WritableDb::open(dir.path(), WritableOptions::default()).unwrap();
    let after: Vec<_> = db.iter().collect::<Result<_, _>>().unwrap();
    assert!(before == after, "the reopened database differs");
}

/// Every group's keys hold one value, in a scan and at a snapshot.
fn check_groups(db: &WritableDb) {
    let mut by_group: Vec<HashSet<Vec<u8>>> = vec![HashSet::new(); GROUPS as usize];
    let mut counts = vec![0; GROUPS as usize];
    for entry in db.range(&b"g"[..]..&b"h"[..]) {
        let (k, v) = entry.unwrap();
        let g: usize = std::str::from_utf8(&k[1..2]).unwrap().parse().unwrap();
        by_group[g].insert(v);
        counts[g] += 1;
    }
    for g in 0..GROUPS as usize {
        assert!(
            by_group[g].len() <= 1,
            "group {g} holds {} values in one scan",
            by_group[g].len()
        );
        assert!(
            counts[g] == 0 || counts[g] == GROUP_KEYS,
            "group {g} has {} keys",
            counts[g]
        );
    }
    let snapshot = db.snapshot();
    for g in 0..GROUPS {
        let values: HashSet<Option<Vec<u8>>> = (0..GROUP_KEYS)
            .map(|j| {
                db.get_at(format!("g{g}-{j}").as_bytes(), &snapshot)
                    .unwrap()
            })
            .collect();
        assert_eq!(values.len(), 1, "group {g} at a snapshot");
    }
}
