//! `leveltable_db::WritableDb` killed with SIGKILL at random moments (during log appends,
//! flushes, compactions, reopens that start a new MANIFEST): on reopen, by us and by
//! LevelDB 1.23, the database holds exactly a prefix of the writes, at least every write
//! acknowledged before the kill (each acknowledged write reached the system, synced or not;
//! a process kill loses nothing the system has).
//!
//! `LEVELTABLE_WRITE_KILLS` sets the number of kills (default 30; CI runs 300).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use leveltable_db::{WritableDb, WritableOptions, WriteBatchBuilder, WriteOptions};
use leveltable_interop::db::{Db, DbOptions, SplitMix, history_key, history_value};
use leveltable_interop::require_leveldb;

use crate::common;

use common::{copy_files, kill_child};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// One write of a history.
enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    Batch(Vec<(Vec<u8>, Option<Vec<u8>>)>),
}

/// The `i`-th write of the history `seed`, and whether it is synced; every 150th write is
/// preceded by a reopen.
fn op(rng: &mut SplitMix) -> (Op, bool) {
    let keys = 400;
    let sync = rng.below(4) == 0;
    let value = |rng: &mut SplitMix| {
        if rng.below(50) == 0 {
            history_value(rng, 64 << 10)
        } else {
            history_value(rng, 1500)
        }
    };
    let op = match rng.below(10) {
        0..=5 => Op::Put(history_key(rng, keys), value(rng)),
        6 | 7 => Op::Delete(history_key(rng, keys)),
        _ => Op::Batch(
            (0..1 + rng.below(10))
                .map(|_| {
                    let k = history_key(rng, keys);
                    (k, (rng.below(3) != 0).then(|| value(rng)))
                })
                .collect(),
        ),
    };
    (op, sync)
}

fn apply(model: &mut Model, op: &Op) {
    let mut one = |k: &Vec<u8>, v: Option<&Vec<u8>>| match v {
        Some(v) => {
            model.insert(k.clone(), v.clone());
        }
        None => {
            model.remove(k);
        }
    };
    match op {
        Op::Put(k, v) => one(k, Some(v)),
        Op::Delete(k) => one(k, None),
        Op::Batch(ops) => ops.iter().for_each(|(k, v)| one(k, v.as_ref())),
    }
}

const REOPEN_EVERY: u64 = 150;

fn options() -> WritableOptions {
    WritableOptions::default()
        .create_if_missing(true)
        .write_buffer_size(64 << 10)
}

/// The child: writes the history `seed` to `dir`, printing the number of writes done after
/// each, until killed.
fn write_history(dir: &Path, seed: u64) {
    let mut rng = SplitMix(seed);
    let mut db = WritableDb::open(dir, options()).unwrap();
    let stdout = std::io::stdout();
    for i in 1.. {
        if i % REOPEN_EVERY == 0 {
            db.close().unwrap();
            db = WritableDb::open(dir, options()).unwrap();
        }
        let (op, sync) = op(&mut rng);
        let w = WriteOptions { sync };
        match &op {
            Op::Put(k, v) => db.put(k, v, w).unwrap(),
            Op::Delete(k) => db.delete(k, w).unwrap(),
            Op::Batch(ops) => {
                let mut b = WriteBatchBuilder::default();
                for (k, v) in ops {
                    match v {
                        Some(v) => b.put(k, v),
                        None => b.delete(k),
                    };
                }
                db.write(&b, w).unwrap();
            }
        }
        let mut out = stdout.lock();
        let _ = writeln!(out, "{i}");
        let _ = out.flush();
    }
}

/// Runs as the writer when this binary is its own child.
#[test]
fn writer_child() {
    let Ok(spec) = std::env::var("LEVELTABLE_WRITE_KILL_CHILD") else {
        return;
    };
    let (dir, seed) = spec.split_once('|').unwrap();
    write_history(&PathBuf::from(dir), seed.parse().unwrap());
}

fn leveldb_view(dir: &Path, work: &Path) -> Pairs {
    let copy = work.join("leveldb-copy");
    copy_files(dir, &copy);
    let db = Db::open(&copy, &DbOptions::default()).unwrap();
    let all = db.scan(None, false).unwrap();
    drop(db);
    std::fs::remove_dir_all(&copy).unwrap();
    all
}

fn pairs(m: &Model) -> Pairs {
    m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

#[test]
fn killed_writers_keep_every_acknowledged_write() {
    if !require_leveldb() {
        return;
    }
    let kills = std::env::var("LEVELTABLE_WRITE_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30u64);
    let mut timer = SplitMix(0x6b11);
    let mut acknowledged_total = 0;
    for i in 0..kills {
        let seed = 0x4b11_0000 + i;
        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join("db");
        let dir_arg = format!("{}|{seed}", dir.display());
        let acknowledged = kill_child(
            "db_write_kill::writer_child",
            ("LEVELTABLE_WRITE_KILL_CHILD", &dir_arg),
            Duration::from_millis(20 + timer.below(400)),
        );
        let ctx = format!("history {seed} killed after {acknowledged} acknowledged writes");
        if !dir.join("CURRENT").exists() {
            assert_eq!(acknowledged, 0, "{ctx}: no CURRENT");
            continue;
        }
        acknowledged_total += acknowledged;
        // The state after `acknowledged` writes, and after one more (done, not printed).
        let mut rng = SplitMix(seed);
        let mut model = Model::new();
        for _ in 0..acknowledged {
            apply(&mut model, &op(&mut rng).0);
        }
        let at_ack = pairs(&model);
        apply(&mut model, &op(&mut rng).0);
        let one_more = pairs(&model);
        let theirs = leveldb_view(&dir, work.path());
        assert!(
            theirs == at_ack || theirs == one_more,
            "{ctx}: LevelDB recovers {} entries, expected {} (or {})",
            theirs.len(),
            at_ack.len(),
            one_more.len()
        );
        let db = WritableDb::open(&dir, options()).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        let ours: Pairs = db.iter().collect::<Result<_, _>>().unwrap();
        assert!(
            ours == theirs,
            "{ctx}: we recover {} entries, LevelDB {}",
            ours.len(),
            theirs.len()
        );
        db.close().unwrap();
    }
    eprintln!("{kills} kills, {acknowledged_total} acknowledged writes checked");
    assert!(kills < 10 || acknowledged_total > 0);
}
