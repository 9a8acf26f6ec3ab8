//! `leveltable_db::WritableDb` writing 1 MiB batches, killed with SIGKILL at random moments,
//! most of them in the middle of a log record: the log it leaves holds whole records
//! followed at most by part of one at its end, as LevelDB's writer leaves it. So LevelDB
//! 1.23 with `paranoid_checks` opens the database, as do our read-only open and our writer
//! with paranoid checks, and all three see the same prefix of the batches.
//!
//! `LEVELTABLE_LOG_KILLS` sets the number of kills (default 10; CI runs 100).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use leveltable_db::{
    Db as OurDb, DbOptions as OurOptions, WritableDb, WritableOptions, WriteBatchBuilder,
    WriteOptions,
};
use leveltable_interop::db::{Db, DbOptions, SplitMix};
use leveltable_interop::require_leveldb;

use crate::common;

use common::{copy_files, kill_child};

/// Puts per batch, each of a 64 KiB value: a batch is a log record of about 1 MiB, cut
/// into 32 fragments.
const PUTS: u64 = 16;

fn key(batch: u64, j: u64) -> Vec<u8> {
    format!("b{batch:06}-{j:02}").into_bytes()
}

fn value(batch: u64, j: u64) -> Vec<u8> {
    let mut v = vec![b'v'; 64 << 10];
    v[..16].copy_from_slice(format!("{batch:08}{j:08}").as_bytes());
    let last = v.len() - 1;
    v[last] = (batch * PUTS + j) as u8;
    v
}

fn options() -> WritableOptions {
    WritableOptions::default().create_if_missing(true)
}

/// The child: writes batch after batch to `dir`, printing the count after each, until
/// killed.
fn write_batches(dir: &Path) {
    let db = WritableDb::open(dir, options()).unwrap();
    let stdout = std::io::stdout();
    for batch in 0.. {
        let mut b = WriteBatchBuilder::default();
        for j in 0..PUTS {
            b.put(&key(batch, j), &value(batch, j));
        }
        db.write_owned(b, WriteOptions::default()).unwrap();
        let mut out = stdout.lock();
        let _ = writeln!(out, "{}", batch + 1);
        let _ = out.flush();
    }
}

/// Runs as the writer when this binary is its own child.
#[test]
fn log_writer_child() {
    let Ok(dir) = std::env::var("LEVELTABLE_LOG_KILL_CHILD") else {
        return;
    };
    write_batches(&PathBuf::from(dir));
}

/// The number of whole batches in `entries`, checking that they are batches `0..n`, whole,
/// with their values.
fn batches_in(entries: &[(Vec<u8>, Vec<u8>)], who: &str, ctx: &str) -> u64 {
    let mut by_batch: BTreeMap<u64, u64> = BTreeMap::new();
    for (k, v) in entries {
        let text = String::from_utf8(k.clone()).unwrap();
        let (b, j) = text[1..].split_once('-').unwrap();
        let (b, j): (u64, u64) = (b.parse().unwrap(), j.parse().unwrap());
        assert!(*v == value(b, j), "{ctx}: {who}: wrong value of {text}");
        *by_batch.entry(b).or_default() += 1;
    }
    let n = by_batch.len() as u64;
    for (i, (&b, &puts)) in by_batch.iter().enumerate() {
        assert_eq!(
            b, i as u64,
            "{ctx}: {who} holds batch {b} without batch {i}"
        );
        assert_eq!(puts, PUTS, "{ctx}: {who} holds {puts} puts of batch {b}");
    }
    n
}

#[test]
fn a_killed_writer_leaves_a_log_a_paranoid_open_accepts() {
    if !require_leveldb() {
        return;
    }
    let kills = std::env::var("LEVELTABLE_LOG_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10u64);
    let mut timer = SplitMix(0x10c_c111);
    let mut acknowledged_total = 0;
    for i in 0..kills {
        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join("db");
        let dir_arg = dir.display().to_string();
        let acknowledged = kill_child(
            "db_log_kill::log_writer_child",
            ("LEVELTABLE_LOG_KILL_CHILD", &dir_arg),
            Duration::from_millis(150 + timer.below(700)),
        );
        let ctx = format!("kill {i} after {acknowledged} acknowledged batches");
        if !dir.join("CURRENT").exists() {
            assert_eq!(acknowledged, 0, "{ctx}: no CURRENT");
            continue;
        }
        acknowledged_total += acknowledged;

        // LevelDB, paranoid, on a copy (its open writes a table and a MANIFEST).
        let copy = work.path().join("leveldb-copy");
        copy_files(&dir, &copy);
        let paranoid = DbOptions {
            create_if_missing: false,
            paranoid_checks: true,
            ..DbOptions::default()
        };
        let theirs = Db::open(&copy, &paranoid)
            .unwrap_or_else(|e| panic!("{ctx}: LevelDB with paranoid_checks refuses: {e}"));
        let theirs_all = theirs.scan(None, false).unwrap();
        drop(theirs);
        let n = batches_in(&theirs_all, "LevelDB", &ctx);
        assert!(
            n == acknowledged || n == acknowledged + 1,
            "{ctx}: LevelDB holds {n} batches"
        );

        // Our read-only open, paranoid, then our writer, paranoid.
        let ours = OurDb::open(&dir, OurOptions::default().paranoid_checks(true))
            .unwrap_or_else(|e| panic!("{ctx}: our paranoid read-only open refuses: {e}"));
        let ours_all: Vec<_> = ours.iter().collect::<Result<_, _>>().unwrap();
        drop(ours);
        assert_eq!(batches_in(&ours_all, "our reader", &ctx), n, "{ctx}");
        let writer = WritableDb::open(
            &dir,
            options().read(OurOptions::default().paranoid_checks(true)),
        )
        .unwrap_or_else(|e| panic!("{ctx}: our paranoid writer refuses: {e}"));
        let writer_all: Vec<_> = writer.iter().collect::<Result<_, _>>().unwrap();
        writer.close().unwrap();
        assert_eq!(batches_in(&writer_all, "our writer", &ctx), n, "{ctx}");
    }
    eprintln!("{kills} kills, {acknowledged_total} acknowledged batches checked");
    assert!(kills < 5 || acknowledged_total > 0);
}
