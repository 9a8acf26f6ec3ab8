//! The write-ahead log's contract: at every instant the log holds whole records in order,
//! followed at most by part of one at the end of the file. So a read-only open of a
//! database a writer is writing sees a prefix of the committed batches; an open replays a
//! log within a small multiple of its size; and the writer refuses a batch no reader could
//! replay within its bounds.
//!
//! `LEVELTABLE_LOG_CONTRACT_BATCHES` sets the batches the writer writes while readers
//! dump (default 30,000); `LEVELTABLE_LOG_REPLAY_PUTS` the puts of the replayed log
//! (default 300,000); `LEVELTABLE_LARGE_BATCH_MIB` the size of the batch whose write is
//! measured (default 96); `LEVELTABLE_BIG_BATCH=1` runs the test that builds a batch just
//! over the limit (1 GiB of memory).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use leveltable_db::log_format::MAX_WRITE_BATCH_BYTES;
use leveltable_db::log_reader::LogReader;
use leveltable_db::log_writer::LogWriter;
use leveltable_db::{
    Db, DbOptions, Error, WritableDb, WritableOptions, WriteBatchBuilder, WriteOptions,
};

fn env_count(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn key(i: u64) -> Vec<u8> {
    format!("{i:09}").into_bytes()
}

/// The value of batch `i`: mostly short, every tenth 40 KiB (its record spans blocks of the
/// log, in fragments).
fn value(i: u64) -> Vec<u8> {
    let len = if i % 10 == 9 { 40 << 10 } else { 120 };
    let mut v = vec![b'0' + (i % 10) as u8; len];
    v[..9].copy_from_slice(&key(i));
    v
}

/// Batch `i` of the history: one put of key `i`.
fn batch(i: u64) -> WriteBatchBuilder {
    let mut b = WriteBatchBuilder::default();
    b.put(&key(i), &value(i));
    b
}

/// The newest log of `dir`, read as it is now: its records must be whole batches with
/// consecutive sequence numbers, and nothing may be reported dropped (a record the writer
/// is still writing is a torn tail at the end of the file, never followed by anything).
fn check_newest_log(dir: &Path, round: u64) {
    let Some(log) = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .max()
    else {
        return;
    };
    // The log may have been deleted after a flush.
    let Ok(data) = std::fs::read(&log) else {
        return;
    };
    let mut reader = LogReader::new(&data, true);
    let mut last: Option<u64> = None;
    while let Some(record) = reader.read_record() {
        let sequence = u64::from_le_bytes(record.data[..8].try_into().unwrap());
        if let Some(last) = last {
            assert_eq!(
                sequence,
                last + 1,
                "round {round}: {}: a batch without the one before it",
                log.display()
            );
        }
        last = Some(sequence);
    }
    assert!(
        reader.dropped().is_empty(),
        "round {round}: {}: {:?}",
        log.display(),
        reader.dropped()
    );
}

/// A read-only open (paranoid), dumping the whole database in a loop while a writer commits
/// batch after batch, sees each time a prefix of the batches: batches `0..n` for some `n`,
/// never a batch without the ones before it; and the log, read raw meanwhile, holds whole
/// records in order followed at most by part of one.
#[test]
fn a_reader_sees_a_prefix_of_the_batches() {
    let batches = env_count("LEVELTABLE_LOG_CONTRACT_BATCHES", 30_000);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = WritableDb::open(&dir, WritableOptions::default().create_if_missing(true)).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            for i in 0..batches {
                db.write_owned(batch(i), WriteOptions::default()).unwrap();
            }
            done.store(true, Ordering::Release);
            db.close().unwrap();
        })
    };
    let mut dumps = 0u64;
    let mut raw_reads = 0u64;
    let mut largest = 0;
    loop {
        let finished = done.load(Ordering::Acquire);
        for _ in 0..200 {
            check_newest_log(&dir, raw_reads);
            raw_reads += 1;
        }
        let reader = Db::open(&dir, DbOptions::default().paranoid_checks(true))
            .unwrap_or_else(|e| panic!("dump {dumps}: {e}"));
        let mut n = 0u64;
        for entry in reader.iter() {
            let (k, v) = entry.unwrap();
            assert_eq!(
                k,
                key(n),
                "dump {dumps}: after {n} batches, a batch without batch {n}"
            );
            assert_eq!(v, value(n));
            n += 1;
        }
        dumps += 1;
        largest = largest.max(n);
        if finished {
            assert_eq!(n, batches);
            break;
        }
    }
    writer.join().unwrap();
    eprintln!(
        "{dumps} dumps and {raw_reads} reads of the log while {batches} batches were written"
    );
    assert!(dumps > 1 && largest == batches);
}

/// A database whose live log holds `puts` small puts (in batches of 100), written with
/// LevelDB's log format after the writer closed it.
fn database_with_a_log(dir: &Path, puts: u64) -> u64 {
    let db = WritableDb::open(dir, WritableOptions::default().create_if_missing(true)).unwrap();
    db.close().unwrap();
    let log: PathBuf = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "log"))
        .unwrap();
    let file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    let len = file.metadata().unwrap().len();
    let mut w = LogWriter::with_offset(std::io::BufWriter::new(file), len);
    let mut sequence = 1;
    let mut i = 0;
    while i < puts {
        let mut b = WriteBatchBuilder::new(sequence);
        for _ in 0..100.min(puts - i) {
            b.put(format!("k{i:07}").as_bytes(), b"vv");
            i += 1;
        }
        sequence += u64::from(b.count());
        w.add_record(b.as_bytes()).unwrap();
    }
    w.flush().unwrap();
    drop(w);
    std::fs::metadata(&log).unwrap().len()
}

/// The peak resident bytes of this process so far (`VmHWM`).
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb << 10
}

/// Runs in a process of its own (see below): opens the database read-only, looks up one
/// key, and prints how much the peak resident size grew. A small database opened first
/// brings the code of the open into memory, so that the measure is the replay's.
#[test]
fn replay_child() {
    let Ok(dir) = std::env::var("LEVELTABLE_LOG_REPLAY_CHILD") else {
        return;
    };
    let warm = tempfile::tempdir().unwrap();
    database_with_a_log(warm.path(), 100);
    let db = Db::open(warm.path(), DbOptions::default()).unwrap();
    assert_eq!(db.get(b"k0000007").unwrap().as_deref(), Some(&b"vv"[..]));
    drop(db);
    let before = peak_rss();
    let db = Db::open(&dir, DbOptions::default()).unwrap();
    assert_eq!(db.get(b"k0000007").unwrap().as_deref(), Some(&b"vv"[..]));
    let grown = peak_rss().saturating_sub(before);
    drop(db);
    let mut out = std::io::stdout().lock();
    writeln!(out, "grown {grown}").unwrap();
}

/// A read-only open replays a log of small puts within 3× the log's size (LevelDB's
/// memtable takes about 5×).
#[cfg(target_os = "linux")]
#[test]
fn replaying_a_log_takes_at_most_three_times_its_size() {
    let puts = env_count("LEVELTABLE_LOG_REPLAY_PUTS", 300_000);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let log_bytes = database_with_a_log(&dir, puts);
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "log_contract::replay_child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("LEVELTABLE_LOG_REPLAY_CHILD", &dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let grown: u64 = stdout
        .lines()
        .find_map(|l| l.split_once("grown ")?.1.trim().parse().ok())
        .unwrap_or_else(|| panic!("no measure in {stdout}"));
    eprintln!(
        "a log of {log_bytes} bytes ({puts} puts): the open's peak grew by {grown} bytes ({:.2}x)",
        grown as f64 / log_bytes as f64
    );
    assert!(
        grown <= 3 * log_bytes,
        "replaying {log_bytes} bytes of log took {grown} bytes"
    );
}

/// Runs in a process of its own (see below): builds one batch of values of 1 MiB, writes
/// it, closes the database, and prints the batch's size and how much the peak resident size
/// grew since the start.
#[test]
fn large_batch_child() {
    let Ok(dir) = std::env::var("LEVELTABLE_LARGE_BATCH_CHILD") else {
        return;
    };
    let mib = env_count("LEVELTABLE_LARGE_BATCH_MIB", 96);
    let before = peak_rss();
    let db = WritableDb::open(&dir, WritableOptions::default().create_if_missing(true)).unwrap();
    let mut b = WriteBatchBuilder::default();
    let mut value = vec![0u8; 1 << 20];
    for i in 0..mib {
        value[..8].copy_from_slice(&i.to_le_bytes());
        b.put(format!("k{i:06}").as_bytes(), &value);
    }
    drop(value);
    let bytes = b.approximate_size();
    db.write_owned(b, WriteOptions::default()).unwrap();
    assert_eq!(
        db.get(b"k000001").unwrap().unwrap()[..8],
        1u64.to_le_bytes()
    );
    db.close().unwrap();
    let grown = peak_rss().saturating_sub(before);
    let mut out = std::io::stdout().lock();
    writeln!(out, "batch {bytes} grown {grown}").unwrap();
}

/// The writer holds a large batch once: a write of a batch of ~100 MiB peaks within 1.5× the
/// batch (the memtable keeps the batch whole rather than copying it entry by entry), and a
/// read-only open reads every value back.
#[cfg(target_os = "linux")]
#[test]
fn writing_a_large_batch_takes_at_most_one_and_a_half_times_its_size() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "log_contract::large_batch_child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("LEVELTABLE_LARGE_BATCH_CHILD", &dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let (batch, grown): (u64, u64) = stdout
        .lines()
        .find_map(|l| {
            let rest = l.split_once("batch ")?.1;
            let (b, g) = rest.split_once(" grown ")?;
            Some((b.trim().parse().ok()?, g.trim().parse().ok()?))
        })
        .unwrap_or_else(|| panic!("no measure in {stdout}"));
    eprintln!(
        "a batch of {batch} bytes: the write's peak grew by {grown} bytes ({:.2}x)",
        grown as f64 / batch as f64
    );
    assert!(
        grown <= batch * 3 / 2,
        "writing a batch of {batch} bytes took {grown} bytes"
    );
    let reader = Db::open(&dir, DbOptions::default().paranoid_checks(true)).unwrap();
    let mut n = 0u64;
    for entry in reader.iter() {
        let (k, v) = entry.unwrap();
        assert_eq!(k, format!("k{n:06}").as_bytes());
        assert_eq!(v.len(), 1 << 20);
        assert_eq!(v[..8], n.to_le_bytes());
        n += 1;
    }
    assert_eq!(n, env_count("LEVELTABLE_LARGE_BATCH_MIB", 96));
}

/// A batch of more than `MAX_WRITE_BATCH_BYTES` is refused with an error naming the limit,
/// before anything reaches the log; the database stays open and readable by every reader.
#[test]
fn a_batch_over_the_limit_is_refused() {
    if std::env::var("LEVELTABLE_BIG_BATCH").is_err() {
        eprintln!("skipped: set LEVELTABLE_BIG_BATCH=1 to build a batch over 1 GiB");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = WritableDb::open(&dir, WritableOptions::default().create_if_missing(true)).unwrap();
    db.put(b"before", b"1", WriteOptions::default()).unwrap();
    let mut b = WriteBatchBuilder::default();
    let value = vec![7u8; MAX_WRITE_BATCH_BYTES - 40];
    b.put(b"big", &value);
    drop(value);
    b.put(b"more", &[1u8; 64]);
    assert!(b.approximate_size() > MAX_WRITE_BATCH_BYTES);
    let err = db.write(&b, WriteOptions::default()).unwrap_err();
    assert!(
        matches!(err, Error::TooLong { what: "write batch", limit, .. } if limit == MAX_WRITE_BATCH_BYTES as u64),
        "{err}"
    );
    assert!(
        err.to_string().contains("at most 1073741824 (1 GiB)"),
        "{err}"
    );
    drop(b);
    db.put(b"after", b"2", WriteOptions::default()).unwrap();
    db.close().unwrap();
    let reader = Db::open(&dir, DbOptions::default().paranoid_checks(true)).unwrap();
    let all: Vec<_> = reader.iter().map(Result::unwrap).collect();
    assert_eq!(
        all,
        [
            (b"after".to_vec(), b"2".to_vec()),
            (b"before".to_vec(), b"1".to_vec())
        ]
    );
}
