//! `db`: reading a whole database that LevelDB wrote through its own write path.
//!
//! The fixture is made once: LevelDB (`DB::Open` + `WriteBatch` puts of 1,000 entries,
//! `sync=false`) writes `key(2i)` → a 100-byte value for every `i < n` in a shuffled order,
//! its background compactions spread the tables over several levels, and the database is
//! closed and reopened (which flushes the log into a table) and left to settle. A last batch
//! then overwrites every hundredth key with a new value and the database is closed, so those
//! writes sit in the log only. The directory is then only read: leveltable opens it
//! read-only; LevelDB writes on open (it replays the log into a level-0 table and starts a
//! new MANIFEST), so each of its rounds opens a fresh copy.
//!
//! Both sides use an 8 MiB block cache, LevelDB's 10-bit Bloom filter (the tables carry
//! it), and verify block checksums on reads (leveltable's default; LevelDB's
//! `ReadOptions::verify_checksums` set). Both check the log's record checksums on replay.
//!
//! Without LevelDB in the build, leveltable bulk-builds the same final contents (without a
//! log) and the rows carry its figures alone.

use std::path::{Path, PathBuf};

use leveltable_db::{BulkOptions, Db, DbBuilder, DbOptions};

use super::config::{BITS_PER_KEY, Config, Result, count};
use super::get::CACHE_BYTES;
use super::harness::{Job, Sample, best_of, check, leveldb_on, timed};
use crate::leveldb::{self, Records};
use crate::report::{Row, System, Target, Unit};
use crate::workload::{KEY_LEN, SplitMix64, VALUE_LEN, get_queries, key, next_value};

/// Entries per `WriteBatch` when LevelDB writes the fixture.
const WRITE_BATCH: usize = 1000;

/// Every `OVERWRITE_STRIDE`-th key is overwritten by the last batch, left in the log.
const OVERWRITE_STRIDE: u64 = 100;

/// How long LevelDB's compactions may take to settle.
const SETTLE_MS: u64 = 600_000;

/// The database LevelDB wrote, and what reading it must find.
#[derive(Debug)]
pub struct DbFixture {
    dir: PathBuf,
    entries: u64,
    /// Files per level after the writes and before the last batch.
    levels: [u64; 7],
    /// Entries in the log.
    logged: u64,
}

impl DbFixture {
    /// The database's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn raw_bytes(&self) -> u64 {
        self.entries * (KEY_LEN + VALUE_LEN) as u64
    }

    /// A fresh copy of the database for a LevelDB open.
    fn copy(&self, name: &str) -> Result<PathBuf> {
        let to = self.dir.with_file_name(name);
        if to.exists() {
            std::fs::remove_dir_all(&to)?;
        }
        std::fs::create_dir(&to)?;
        for entry in std::fs::read_dir(&self.dir)? {
            let entry = entry?;
            std::fs::copy(entry.path(), to.join(entry.file_name()))?;
        }
        Ok(to)
    }
}

/// The overwritten value of key `key(2i)`: `i` in decimal, then `'z'`s to 100 bytes.
fn new_value(i: u64) -> [u8; VALUE_LEN] {
    let mut v = [b'z'; VALUE_LEN];
    v[..KEY_LEN].copy_from_slice(&key(i));
    v
}

/// Without LevelDB: the same final contents bulk-built by leveltable (no log), so that the
/// runner still reports leveltable's figures.
fn bulk_fixture(dir: PathBuf, n: u64) -> Result<DbFixture> {
    let mut builder = DbBuilder::create(&dir, BulkOptions::default())?;
    let mut rng = SplitMix64::new(1);
    for i in 0..n {
        let v = next_value(&mut rng);
        let v = if i % OVERWRITE_STRIDE == 0 {
            new_value(i)
        } else {
            v
        };
        builder.add(&key(2 * i), &v)?;
    }
    builder.finish()?;
    let db = Db::open(&dir, DbOptions::default())?;
    let mut levels = [0u64; 7];
    for (l, files) in db.properties().levels.iter().enumerate().take(7) {
        levels[l] = files.len() as u64;
    }
    Ok(DbFixture {
        dir,
        entries: n,
        levels,
        logged: 0,
    })
}

/// Writes the fixture of [`Config::db_entries`] entries into `config.dir/db-leveldb` with
/// LevelDB (see the module documentation), or bulk-builds its contents without LevelDB.
///
/// # Errors
///
/// From either system, or leveltable reading back a wrong value.
pub fn write_fixture(config: &Config) -> Result<DbFixture> {
    let n = config.db_entries;
    let dir = config.dir.join("db-leveldb");
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    if !leveldb_on() {
        let fixture = bulk_fixture(dir, n)?;
        check_fixture(&fixture)?;
        return Ok(fixture);
    }
    // Entry i is key(2i) → the i-th value of the table workload's stream; written in an
    // order shuffled by Fisher–Yates (SplitMix64, seed 5).
    let mut order: Vec<u64> = (0..n).collect();
    let mut rng = SplitMix64::new(5);
    for i in (1..order.len()).rev() {
        let j = (rng.next() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    let mut values_rng = SplitMix64::new(1);
    let values: Vec<[u8; VALUE_LEN]> = (0..n).map(|_| next_value(&mut values_rng)).collect();
    let mut key_bytes = Vec::with_capacity(order.len() * KEY_LEN);
    let mut value_bytes = Vec::with_capacity(order.len() * VALUE_LEN);
    for &i in &order {
        key_bytes.extend_from_slice(&key(2 * i));
        value_bytes.extend_from_slice(&values[i as usize]);
    }
    drop(values);
    let open = |create| leveldb::Db::open(&dir, BITS_PER_KEY, CACHE_BYTES, true, create);
    let mut db = open(true)?;
    db.write(
        Records::new(&key_bytes, KEY_LEN),
        Records::new(&value_bytes, VALUE_LEN),
        WRITE_BATCH,
    )?;
    db.settle(SETTLE_MS)?;
    drop(db);
    // Reopening moves the log into a table; then nothing more is due.
    let mut db = open(false)?;
    let levels = db.settle(SETTLE_MS)?;
    key_bytes.clear();
    value_bytes.clear();
    let mut logged = 0;
    for i in (0..n).step_by(OVERWRITE_STRIDE as usize) {
        key_bytes.extend_from_slice(&key(2 * i));
        value_bytes.extend_from_slice(&new_value(i));
        logged += 1;
    }
    db.write(
        Records::new(&key_bytes, KEY_LEN),
        Records::new(&value_bytes, VALUE_LEN),
        WRITE_BATCH,
    )?;
    drop(db);
    let fixture = DbFixture {
        dir,
        entries: n,
        levels,
        logged,
    };
    if n >= 100_000 {
        let used = levels.iter().filter(|&&f| f > 0).count();
        check(used >= 2, || {
            format!("LevelDB left its tables on {used} level(s): {levels:?}")
        })?;
    }
    check_fixture(&fixture)?;
    Ok(fixture)
}

/// The log holds the overwrites, and leveltable reads them back.
fn check_fixture(fixture: &DbFixture) -> Result<()> {
    let db = Db::open(&fixture.dir, DbOptions::default())?;
    let replayed: u64 = db.properties().logs.iter().map(|l| l.versions).sum();
    let logged = fixture.logged;
    check(replayed == logged, || {
        format!("leveltable replayed {replayed} versions from the log, not {logged}")
    })?;
    for i in [0, 1] {
        let expected = if i % OVERWRITE_STRIDE == 0 {
            new_value(i).to_vec()
        } else {
            let mut rng = SplitMix64::new(1);
            let mut v = next_value(&mut rng);
            for _ in 0..i {
                v = next_value(&mut rng);
            }
            v.to_vec()
        };
        check(db.get(&key(2 * i))? == Some(expected), || {
            format!("leveltable read a wrong value for key {i}")
        })?;
    }
    Ok(())
}

fn open_ours(fixture: &DbFixture) -> Result<Db> {
    Ok(Db::open(&fixture.dir, DbOptions::default())?)
}

/// Opens a fresh copy with LevelDB and waits for any compaction its open started.
fn open_leveldb(fixture: &DbFixture) -> Result<(leveldb::Db, PathBuf)> {
    let copy = fixture.copy("db-leveldb-copy")?;
    let mut db = leveldb::Db::open(&copy, BITS_PER_KEY, CACHE_BYTES, true, false)?;
    db.settle(SETTLE_MS)?;
    Ok((db, copy))
}

/// Gets per query; returns (found, value bytes). Never inlined, for profilers.
#[inline(never)]
fn ours_gets(db: &Db, queries: &[[u8; KEY_LEN]]) -> Result<(u64, u64)> {
    let (mut found, mut bytes) = (0u64, 0u64);
    for q in queries {
        if let Some(v) = db.get(q)? {
            found += 1;
            bytes += v.len() as u64;
        }
    }
    Ok((found, bytes))
}

/// Iterates over the whole database; returns (entries, key + value bytes).
#[inline(never)]
fn ours_scan(db: &Db) -> Result<(u64, u64)> {
    let (mut n, mut bytes) = (0u64, 0u64);
    // Keys and values lent, as LevelDB's iterator lends its slices.
    let mut iter = db.iter();
    while let Some(entry) = iter.next_entry() {
        let (k, v) = entry?;
        n += 1;
        bytes += (k.len() + v.len()) as u64;
    }
    Ok((n, bytes))
}

fn get_row(config: &Config, fixture: &DbFixture, present: bool) -> Result<Row> {
    let queries = get_queries(fixture.entries, config.queries, present);
    let flat: Vec<u8> = queries.concat();
    let expected_found = if present { queries.len() as u64 } else { 0 };
    let expected_bytes = expected_found * VALUE_LEN as u64;
    let queries = &queries;
    let flat = &flat;
    let mut jobs: Vec<(System, Job<'_>)> = vec![(
        System::Leveltable,
        Box::new(move || {
            let db = open_ours(fixture)?;
            let (elapsed, (found, bytes)) = timed(|| ours_gets(&db, queries))?;
            check(found == expected_found && bytes == expected_bytes, || {
                format!("leveltable found {found} ({bytes} bytes), not {expected_found}")
            })?;
            Ok(Sample {
                elapsed,
                work: queries.len() as f64,
            })
        }),
    )];
    if leveldb_on() {
        jobs.push((
            System::LevelDb,
            Box::new(move || {
                let (mut db, copy) = open_leveldb(fixture)?;
                let (elapsed, (found, bytes)) =
                    timed(|| Ok(db.gets(Records::new(flat, KEY_LEN))?))?;
                drop(db);
                std::fs::remove_dir_all(copy)?;
                check(found == expected_found && bytes == expected_bytes, || {
                    format!("LevelDB found {found} ({bytes} bytes), not {expected_found}")
                })?;
                Ok(Sample {
                    elapsed,
                    work: queries.len() as f64,
                })
            }),
        ));
    }
    let figures = best_of(config.rounds, Unit::NsPerOp, &mut jobs)?;
    Ok(Row {
        workload: format!(
            "db get {}, {} keys on {}, random order",
            if present { "present" } else { "absent" },
            count(fixture.entries),
            shape(fixture)
        ),
        unit: Unit::NsPerOp,
        figures,
        target: Target::TimeAtMost(0.70),
    })
}

fn scan_row(config: &Config, fixture: &DbFixture) -> Result<Row> {
    let (n, raw) = (fixture.entries, fixture.raw_bytes());
    let mut jobs: Vec<(System, Job<'_>)> = vec![(
        System::Leveltable,
        Box::new(move || {
            let db = open_ours(fixture)?;
            let (elapsed, (entries, bytes)) = timed(|| ours_scan(&db))?;
            check(entries == n && bytes == raw, || {
                format!("leveltable scanned {entries} ({bytes} bytes)")
            })?;
            Ok(Sample {
                elapsed,
                work: bytes as f64,
            })
        }),
    )];
    if leveldb_on() {
        jobs.push((
            System::LevelDb,
            Box::new(move || {
                let (mut db, copy) = open_leveldb(fixture)?;
                let (elapsed, (entries, bytes)) = timed(|| Ok(db.scan()?))?;
                drop(db);
                std::fs::remove_dir_all(copy)?;
                check(entries == n && bytes == raw, || {
                    format!("LevelDB scanned {entries} ({bytes} bytes)")
                })?;
                Ok(Sample {
                    elapsed,
                    work: bytes as f64,
                })
            }),
        ));
    }
    let figures = best_of(config.rounds, Unit::MbPerSec, &mut jobs)?;
    Ok(Row {
        workload: format!("db scan, {} (key + value bytes)", shape(fixture)),
        unit: Unit::MbPerSec,
        figures,
        target: Target::ThroughputAtLeast(1.5),
    })
}

fn open_row(config: &Config, fixture: &DbFixture) -> Result<Row> {
    let logged = fixture.logged;
    let mut jobs: Vec<(System, Job<'_>)> = vec![(
        System::Leveltable,
        Box::new(move || {
            let (elapsed, db) = timed(|| open_ours(fixture))?;
            let replayed: u64 = db.properties().logs.iter().map(|l| l.versions).sum();
            check(replayed == logged, || {
                format!("leveltable replayed {replayed} versions, not {logged}")
            })?;
            drop(db);
            Ok(Sample { elapsed, work: 1.0 })
        }),
    )];
    if leveldb_on() {
        jobs.push((
            System::LevelDb,
            Box::new(move || {
                let copy = fixture.copy("db-leveldb-copy")?;
                let (elapsed, db) = timed(|| {
                    Ok(leveldb::Db::open(
                        &copy,
                        BITS_PER_KEY,
                        CACHE_BYTES,
                        true,
                        false,
                    )?)
                })?;
                // Closing waits for any compaction the open started; not timed.
                drop(db);
                std::fs::remove_dir_all(copy)?;
                Ok(Sample { elapsed, work: 1.0 })
            }),
        ));
    }
    let figures = best_of(config.rounds, Unit::Millis, &mut jobs)?;
    Ok(Row {
        workload: format!(
            "db open, replaying a log of {} writes, {}",
            count(fixture.logged),
            shape(fixture)
        ),
        unit: Unit::Millis,
        figures,
        target: Target::TimeAtMost(1.0),
    })
}

/// `tables at L0–L2: 0/12/31`.
fn shape(fixture: &DbFixture) -> String {
    let last = fixture.levels.iter().rposition(|&f| f > 0).unwrap_or(0);
    let files: Vec<String> = fixture.levels[..=last].iter().map(u64::to_string).collect();
    format!("tables at L0–L{last}: {}", files.join("/"))
}

/// The `db` rows: gets present and absent, a full scan, and the open with its log replay.
///
/// # Errors
///
/// From either system, or a wrong answer.
pub(super) fn rows(config: &Config) -> Result<Vec<Row>> {
    let fixture = write_fixture(config)?;
    let rows = vec![
        get_row(config, &fixture, true)?,
        get_row(config, &fixture, false)?,
        scan_row(config, &fixture)?,
        open_row(config, &fixture)?,
    ];
    remove(&fixture.dir);
    Ok(rows)
}

fn remove(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
}
