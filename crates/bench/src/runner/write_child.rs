//! The child process of the `write` workloads: one system, one scenario, one fresh database
//! directory, timed phase by phase (the runner started with [`CHILD_COMMAND`]).
//!
//! Each phase runs db_bench's loop: one write (or get) per key, keys made in chunks of
//! 4,096 as they go, values taken in turn from [`value_ring`]. The generation runs inside the
//! timed loop on every system alike. The child prints one `key=value` line per phase
//! (`phase=NAME ops=.. nanos=.. count=..`) and, after a fill and the compactions it caused,
//! one line of its disk writes (`/proc/self/io`) and peak resident set (`VmHWM`).

use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant};

use leveltable_db::{DbOptions, TableOptions, WritableDb, WritableOptions, WriteOptions};
use leveltable_table::Compression;
use rusty_leveldb::{LdbIterator, compressor::CompressorId};

use super::config::Result;
use super::harness::check;
use super::memory::status_kib;
use super::write_floor::{self, FLOOR_SCENARIO, FLOOR_SYSTEM};
use crate::leveldb::{self, Records};
use crate::workload::{KEY_LEN, SplitMix64, VALUE_LEN, key, value_ring};

/// The hidden subcommand: `__write SYSTEM SCENARIO DIR ENTRIES`.
pub const CHILD_COMMAND: &str = "__write";

/// Keys generated per call into a system.
const CHUNK: usize = 4096;

/// How long compactions may take to settle after a phase.
const SETTLE_MS: u64 = 1_800_000;

/// Writes of the `fillsync` scenario for `entries` (10,000 for 1M entries).
pub fn sync_writes(entries: u64) -> u64 {
    (entries / 100).clamp(1, 10_000)
}

/// Seeds of the random key streams, one per phase.
const SEED_FILL: u64 = 10;
const SEED_OVERWRITE: u64 = 11;
const SEED_READ: u64 = 12;
const SEED_DELETE: u64 = 13;
const SEED_SYNC: u64 = 14;
const SEED_WRITERS: [u64; 2] = [20, 21];

/// Keys of a phase: `0, 1, 2, …` (fillseq) or `r mod n` for SplitMix64 outputs `r`.
enum Keys {
    Seq(u64),
    Random(SplitMix64, u64),
}

impl Keys {
    fn random(seed: u64, n: u64) -> Keys {
        Keys::Random(SplitMix64::new(seed), n.max(1))
    }

    /// Replaces `out` with the next `m` keys, laid end to end.
    fn fill(&mut self, out: &mut Vec<u8>, m: usize) {
        out.clear();
        for _ in 0..m {
            let id = match self {
                Keys::Seq(next) => {
                    *next += 1;
                    *next - 1
                }
                Keys::Random(rng, n) => rng.next() % *n,
            };
            out.extend_from_slice(&key(id));
        }
    }
}

/// The values: [`value_ring`] as 100-byte records.
struct Ring(Vec<u8>);

impl Ring {
    fn records(&self) -> Records<'_> {
        Records::new(&self.0, VALUE_LEN)
    }

    fn value(&self, j: u64) -> &[u8] {
        let at = (j % (self.0.len() / VALUE_LEN) as u64) as usize * VALUE_LEN;
        &self.0[at..at + VALUE_LEN]
    }
}

/// rusty-leveldb's tables as good as without a filter, as LevelDB's and ours are written:
/// rusty-leveldb always writes a filter block and its reader asserts that no filter is
/// empty, so each filter is one byte that matches every key.
struct NoFilter;

impl rusty_leveldb::FilterPolicy for NoFilter {
    fn name(&self) -> &'static str {
        "leveltable-bench.NoFilter"
    }
    fn create_filter(&self, _keys: &[u8], _offsets: &[usize]) -> Vec<u8> {
        vec![0]
    }
    fn key_may_match(&self, _key: &[u8], _filter: &[u8]) -> bool {
        true
    }
}

/// One system's open database.
enum Store {
    Ours(WritableDb),
    LevelDb(leveldb::WriteDb),
    Rusty(Box<rusty_leveldb::DB>),
}

impl Store {
    /// Opens a new database in `dir` with LevelDB 1.23's defaults on every system: 4 MiB
    /// write buffer, 2 MiB files, 4 KiB blocks, snappy, no filter, an 8 MiB block cache,
    /// reads not verifying checksums.
    fn open(system: &str, dir: &Path) -> Result<Store> {
        Ok(match system {
            "leveltable" => Store::Ours(WritableDb::open(
                dir,
                WritableOptions::default()
                    .create_if_missing(true)
                    .write_buffer_size(4 << 20)
                    .max_file_size(2 << 20)
                    .table(
                        TableOptions::default()
                            .block_size(4096)
                            .compression(Compression::Snappy)
                            .filter_policy(None),
                    )
                    .read(DbOptions::default().verify_checksums(false)),
            )?),
            "leveldb" => Store::LevelDb(leveldb::WriteDb::open(dir)?),
            "rusty-leveldb" => {
                let options = rusty_leveldb::Options {
                    create_if_missing: true,
                    write_buffer_size: 4 << 20,
                    max_file_size: 2 << 20,
                    block_size: 4096,
                    block_cache_capacity_bytes: 8 << 20,
                    compressor: rusty_leveldb::compressor::SnappyCompressor::ID,
                    filter_policy: Rc::new(Box::new(NoFilter)),
                    ..rusty_leveldb::Options::default()
                };
                Store::Rusty(Box::new(
                    rusty_leveldb::DB::open(dir, options).map_err(|e| format!("{e:?}"))?,
                ))
            }
            other => return Err(format!("unknown system {other:?}").into()),
        })
    }

    /// The database as a handle several threads may write through (not rusty-leveldb's).
    fn shared(&self) -> Result<SharedStore<'_>> {
        match self {
            Store::Ours(db) => Ok(SharedStore::Ours(db)),
            Store::LevelDb(db) => Ok(SharedStore::LevelDb(db)),
            Store::Rusty(_) => Err("rusty-leveldb's DB is not Sync".into()),
        }
    }

    /// Puts `keys[i]` → value `first + i`, one write each.
    fn put(&mut self, keys: &[u8], ring: &Ring, first: u64, sync: bool) -> Result<()> {
        match self {
            Store::Rusty(db) => {
                for (i, k) in keys.chunks_exact(KEY_LEN).enumerate() {
                    let mut batch = rusty_leveldb::WriteBatch::default();
                    batch.put(k, ring.value(first + i as u64));
                    db.write(batch, sync).map_err(|e| format!("{e:?}"))?;
                }
                Ok(())
            }
            _ => self.shared()?.put(keys, ring, first, sync),
        }
    }

    fn delete(&mut self, keys: &[u8]) -> Result<()> {
        match self {
            Store::Ours(db) => {
                for k in keys.chunks_exact(KEY_LEN) {
                    db.delete(k, WriteOptions::default())?;
                }
            }
            Store::LevelDb(db) => db.delete(Records::new(keys, KEY_LEN), false)?,
            Store::Rusty(db) => {
                for k in keys.chunks_exact(KEY_LEN) {
                    db.delete(k).map_err(|e| format!("{e:?}"))?;
                }
            }
        }
        Ok(())
    }

    /// Gets each key; returns how many were found.
    fn gets(&mut self, keys: &[u8]) -> Result<u64> {
        let mut found = 0;
        match self {
            Store::Ours(db) => {
                for k in keys.chunks_exact(KEY_LEN) {
                    found += u64::from(db.get(k)?.is_some_and(|v| v.len() == VALUE_LEN));
                }
            }
            Store::LevelDb(db) => {
                let (f, bytes) = db.gets(Records::new(keys, KEY_LEN))?;
                check(bytes == f * VALUE_LEN as u64, || {
                    format!("LevelDB found {f} values in {bytes} bytes")
                })?;
                found = f;
            }
            Store::Rusty(db) => {
                for k in keys.chunks_exact(KEY_LEN) {
                    found += u64::from(db.get(k).is_some_and(|v| v.len() == VALUE_LEN));
                }
            }
        }
        Ok(found)
    }

    /// Iterates over every entry; returns how many there are.
    fn scan(&mut self) -> Result<u64> {
        let mut n = 0u64;
        let mut bytes = 0u64;
        match self {
            Store::Ours(db) => {
                let mut it = db.iter();
                while let Some(entry) = it.next_entry() {
                    let (k, v) = entry?;
                    n += 1;
                    bytes += (k.len() + v.len()) as u64;
                }
            }
            Store::LevelDb(db) => (n, bytes) = db.scan()?,
            Store::Rusty(db) => {
                let mut it = db.new_iter().map_err(|e| format!("{e:?}"))?;
                while it.advance() {
                    let (k, v) = it.current().ok_or("rusty-leveldb: no current entry")?;
                    n += 1;
                    bytes += (k.len() + v.len()) as u64;
                }
            }
        }
        check(bytes == n * (KEY_LEN + VALUE_LEN) as u64, || {
            format!("a scan found {n} entries in {bytes} bytes")
        })?;
        Ok(n)
    }

    /// Waits until no size compaction is due (rusty-leveldb compacts inside its writes).
    fn settle(&mut self) -> Result<()> {
        match self {
            Store::Ours(db) => settle_ours(db),
            Store::LevelDb(db) => Ok(db.settle(SETTLE_MS)?),
            Store::Rusty(_) => Ok(()),
        }
    }

    fn close(self) -> Result<()> {
        match self {
            Store::Ours(db) => db.close()?,
            Store::LevelDb(db) => drop(db),
            Store::Rusty(mut db) => db.close().map_err(|e| format!("{e:?}"))?,
        }
        Ok(())
    }
}

/// A database several threads write to at once.
#[derive(Clone, Copy)]
enum SharedStore<'a> {
    Ours(&'a WritableDb),
    LevelDb(&'a leveldb::WriteDb),
}

impl SharedStore<'_> {
    /// Puts `keys[i]` → value `first + i`, one write each.
    fn put(self, keys: &[u8], ring: &Ring, first: u64, sync: bool) -> Result<()> {
        match self {
            SharedStore::Ours(db) => {
                for (i, k) in keys.chunks_exact(KEY_LEN).enumerate() {
                    db.put(k, ring.value(first + i as u64), WriteOptions { sync })?;
                }
            }
            SharedStore::LevelDb(db) => {
                db.put(Records::new(keys, KEY_LEN), ring.records(), first, sync)?;
            }
        }
        Ok(())
    }
}

/// Polls every 10 ms until our database has the shape after which LevelDB 1.23 schedules
/// no size compaction: under four level-0 files, under 10^L MiB at level L ≥ 1.
fn settle_ours(db: &WritableDb) -> Result<()> {
    let start = Instant::now();
    loop {
        let mut files = [0u64; 7];
        let mut bytes = [0u64; 7];
        for t in db.tables() {
            if let Some(level) = t.level.filter(|&l| l < 7) {
                files[level] += 1;
                bytes[level] += t.size;
            }
        }
        let mut limit = 10.0 * 1048576.0;
        let mut settled = files[0] < 4;
        for &b in &bytes[1..6] {
            settled &= (b as f64) < limit;
            limit *= 10.0;
        }
        if settled {
            return Ok(());
        }
        check(start.elapsed() < Duration::from_millis(SETTLE_MS), || {
            "leveltable's compactions did not settle".into()
        })?;
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `m` operations from `keys` in chunks; `op` gets each chunk and its first index.
fn run_chunks(
    keys: &mut Keys,
    m: u64,
    mut op: impl FnMut(&[u8], u64) -> Result<()>,
) -> Result<Duration> {
    let mut buf = Vec::with_capacity(CHUNK * KEY_LEN);
    let start = Instant::now();
    let mut done = 0;
    while done < m {
        let take = (m - done).min(CHUNK as u64);
        keys.fill(&mut buf, take as usize);
        op(&buf, done)?;
        done += take;
    }
    Ok(start.elapsed())
}

fn phase(name: &str, ops: u64, elapsed: Duration, count: u64) {
    println!(
        "phase={name} ops={ops} nanos={} count={count}",
        elapsed.as_nanos()
    );
}

/// `write_bytes` and `wchar` of `/proc/self/io`.
fn io_counters() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':')?.trim().parse().ok())
            .unwrap_or(0)
    };
    (field("write_bytes"), field("wchar"))
}

/// Prints the disk bytes written since `before` for `entries` puts, and the peak resident
/// set so far.
fn io_line(name: &str, before: (u64, u64), entries: u64) {
    let (write_bytes, wchar) = io_counters();
    println!(
        "phase={name}-io put_bytes={} write_bytes={} wchar={} peak_kib={}",
        entries * (KEY_LEN + VALUE_LEN) as u64,
        write_bytes.saturating_sub(before.0),
        wchar.saturating_sub(before.1),
        status_kib("VmHWM").unwrap_or(0)
    );
}

/// The child's work: `scenario` (`fillseq`, `random`, `fillsync`, `fill2`) on `system` in a
/// new database at `dir`, `n` entries; or the kernel's floor under single puts and deletes
/// ([`write_floor`]).
///
/// # Errors
///
/// From the system, or a scan finding entries of the wrong size.
pub fn child(system: &str, scenario: &str, dir: &Path, n: u64) -> Result<()> {
    if (system, scenario) == (FLOOR_SYSTEM, FLOOR_SCENARIO) {
        for (name, elapsed) in write_floor::phases(dir, n)? {
            phase(name, n, elapsed, n);
        }
        return Ok(());
    }
    let ring = Ring(value_ring());
    let before = io_counters();
    let mut db = Store::open(system, dir)?;
    let mut written = 0u64;
    let mut puts = |db: &mut Store, keys: &mut Keys, m: u64, sync: bool| {
        let first = written;
        written += m;
        run_chunks(keys, m, |k, i| db.put(k, &ring, first + i, sync))
    };
    match scenario {
        "fillseq" => {
            let t = puts(&mut db, &mut Keys::Seq(0), n, false)?;
            phase("fillseq", n, t, n);
            db.settle()?;
            io_line("fillseq", before, n);
            let count = db.scan()?;
            phase("fillseq-count", count, Duration::ZERO, count);
        }
        "random" => {
            let t = puts(&mut db, &mut Keys::random(SEED_FILL, n), n, false)?;
            phase("fillrandom", n, t, n);
            db.settle()?;
            io_line("fillrandom", before, n);
            let mut found = 0;
            let t = run_chunks(&mut Keys::random(SEED_READ, n), n, |k, _| {
                found += db.gets(k)?;
                Ok(())
            })?;
            phase("readrandom", n, t, found);
            let start = Instant::now();
            let entries = db.scan()?;
            phase("readseq", entries, start.elapsed(), entries);
            let t = puts(&mut db, &mut Keys::random(SEED_OVERWRITE, n), n, false)?;
            phase("overwrite", n, t, n);
            db.settle()?;
            let t = run_chunks(&mut Keys::random(SEED_DELETE, n), n, |k, _| db.delete(k))?;
            phase("deleterandom", n, t, n);
            db.settle()?;
            let count = db.scan()?;
            phase("deleterandom-count", count, Duration::ZERO, count);
        }
        "fillsync" => {
            let m = sync_writes(n);
            let t = puts(&mut db, &mut Keys::random(SEED_SYNC, n), m, true)?;
            phase("fillsync", m, t, m);
            let count = db.scan()?;
            phase("fillsync-count", count, Duration::ZERO, count);
        }
        "fill2" => {
            let half = n / 2;
            let shared = db.shared()?;
            let ring = &ring;
            let start = Instant::now();
            std::thread::scope(|s| -> Result<()> {
                let writers: Vec<_> = SEED_WRITERS
                    .iter()
                    .enumerate()
                    .map(|(w, &seed)| {
                        s.spawn(move || {
                            let first = w as u64 * half;
                            run_chunks(&mut Keys::random(seed, n), half, |k, i| {
                                shared.put(k, ring, first + i, false)
                            })
                        })
                    })
                    .collect();
                for w in writers {
                    w.join().map_err(|_| "a writer thread panicked")??;
                }
                Ok(())
            })?;
            phase("fill2", 2 * half, start.elapsed(), 2 * half);
            db.settle()?;
            let count = db.scan()?;
            phase("fill2-count", count, Duration::ZERO, count);
        }
        other => return Err(format!("unknown scenario {other:?}").into()),
    }
    db.close()
}
