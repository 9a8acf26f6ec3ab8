//! `repair`: repairing an undamaged database, against building it from its dump and
//! against LevelDB's `RepairDB`.
//!
//! Input: the `db-build` workload's entries (`--db-build-bytes`, 1 GB by default), bulk
//! built once, before any clock starts, into the source database (2 MiB snappy tables, a
//! 10-bit Bloom filter). Each round, interleaved:
//!
//! - leveltable: `repair(src, dest)`, every table and log read with its checksums
//!   checked, the MANIFEST's live files deciding each key; the tables no other file
//!   reaches (here all of them) kept as they are (linked, or copied on another file
//!   system) and each verified whole, the others' winners written through a bulk build;
//!   a new database, synced and renamed into place;
//! - its baseline: `DbBuilder` (one thread) over the same entries held in memory, as
//!   `leveltable db build` builds a database from a dump: the issue's "≥ 0.8× of `db
//!   build` from its dump";
//! - LevelDB: `RepairDB` (through the interop crate) on a copy of the source made before
//!   its clock starts; it reads every table and writes a new MANIFEST, keeping the tables
//!   (it rewrites only the ones it cannot read whole, and none here are damaged).
//!
//! Each result is counted by the other system (or by leveltable without LevelDB). The
//! repair and the build are also timed by the CPU time they take (user and system, of
//! every thread of the process, from `/proc/self/stat`), which a loaded machine stretches
//! less than the time on the clock.

use std::path::Path;
use std::time::{Duration, Instant};

use leveltable_db::{BulkOptions, Db, DbBuilder, DbOptions, RepairOptions, repair};

use super::config::{BITS_PER_KEY, Config, Result, count};
use super::get::CACHE_BYTES;
use super::harness::{check, leveldb_on};
use super::tables::Entries;
use crate::leveldb;
use crate::report::{Row, Target, Unit};
use crate::workload::{KEY_LEN, KeyShape, VALUE_LEN};

/// Bytes of one entry.
const ENTRY_BYTES: u64 = (KEY_LEN + VALUE_LEN) as u64;

/// A repair of an undamaged database at least this fraction of a build of it.
const OVER_BUILD: f64 = 0.8;

fn fresh(dir: &Path) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    Ok(())
}

/// The CPU time this process has taken so far (user and system, every thread), in seconds;
/// `None` where `/proc/self/stat` cannot tell it.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // After the command name (in parentheses, which may hold spaces): the state is field
    // 3, utime and stime fields 14 and 15, in clock ticks (100 a second on Linux).
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some((user + system) as f64 / 100.0)
}

/// The CPU time `f` takes, with its result.
fn cpu_time<T>(f: impl FnOnce() -> Result<T>) -> Result<(T, Option<Duration>)> {
    let before = cpu_seconds();
    let value = f()?;
    let spent = before
        .zip(cpu_seconds())
        .map(|(a, b)| Duration::from_secs_f64((b - a).max(0.01)));
    Ok((value, spent))
}

/// Builds the database of `entries` at `dir` with one thread; returns the time.
fn build(dir: &Path, entries: &Entries) -> Result<Duration> {
    fresh(dir)?;
    let start = Instant::now();
    let mut builder = DbBuilder::create(dir, BulkOptions::default().threads(1))?;
    for (k, v) in entries.keys().iter().zip(entries.values().iter()) {
        builder.add(k, v)?;
    }
    let summary = builder.finish()?;
    let elapsed = start.elapsed();
    let n = entries.len() as u64;
    check(summary.entries == n, || {
        format!("leveltable built {} entries, not {n}", summary.entries)
    })?;
    Ok(elapsed)
}

/// Copies the database directory `from` to `to` (a fresh directory).
fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    fresh(to)?;
    std::fs::create_dir(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        std::fs::copy(entry.path(), to.join(entry.file_name()))?;
    }
    Ok(())
}

/// Entries in the database at `dir`, counted by LevelDB if it is there, else by leveltable.
fn count_entries(dir: &Path) -> Result<u64> {
    if leveldb_on() {
        let mut db = leveldb::Db::open(dir, BITS_PER_KEY, CACHE_BYTES, false, false)?;
        return Ok(db.scan()?.0);
    }
    count_ours(dir)
}

/// Entries in the database at `dir` as leveltable reads them.
fn count_ours(dir: &Path) -> Result<u64> {
    let db = Db::open(dir, DbOptions::default())?;
    let mut n = 0;
    for entry in db.iter() {
        entry?;
        n += 1;
    }
    Ok(n)
}

fn keep_best(slot: &mut Option<f64>, value: f64) {
    if slot.is_none_or(|b| value > b) {
        *slot = Some(value);
    }
}

/// `1.00 GB`, or `4.0 MB` below 0.1 GB.
fn gigabytes(bytes: u64) -> String {
    if bytes >= 100_000_000 {
        format!("{:.2} GB", bytes as f64 / 1e9)
    } else {
        format!("{:.1} MB", bytes as f64 / 1e6)
    }
}

/// The `repair` rows.
///
/// # Errors
///
/// From either system, or a wrong count.
pub(super) fn rows(config: &Config) -> Result<Vec<Row>> {
    let n = config.db_build_bytes / ENTRY_BYTES;
    let entries = Entries::new(n, KeyShape::Decimal);
    let bytes = entries.raw_bytes();
    let src = config.dir.join("repair-source");
    let dest = config.dir.join("repair-leveltable");
    let built = config.dir.join("repair-build");
    let copy = config.dir.join("repair-leveldb");
    build(&src, &entries)?;
    let (mut ours, mut baseline, mut theirs) = (None, None, None);
    let (mut ours_cpu, mut baseline_cpu) = (None, None);
    for _ in 0..config.rounds.max(1) {
        fresh(&dest)?;
        let start = Instant::now();
        let (report, cpu) = cpu_time(|| Ok(repair(&src, &dest, &RepairOptions::default())?))?;
        let elapsed = start.elapsed();
        if let Some(cpu) = cpu {
            keep_best(&mut ours_cpu, Unit::MbPerSec.figure(cpu, bytes as f64));
        }
        check(report.keys == n && report.lost.is_empty(), || {
            format!(
                "the repair wrote {} keys, not {n}, and lost {} pieces",
                report.keys,
                report.lost.len()
            )
        })?;
        let counted = count_entries(&dest)?;
        check(counted == n, || {
            format!("{counted} entries counted in leveltable's repair, not {n}")
        })?;
        keep_best(&mut ours, Unit::MbPerSec.figure(elapsed, bytes as f64));

        let (elapsed, cpu) = cpu_time(|| build(&built, &entries))?;
        keep_best(&mut baseline, Unit::MbPerSec.figure(elapsed, bytes as f64));
        if let Some(cpu) = cpu {
            keep_best(&mut baseline_cpu, Unit::MbPerSec.figure(cpu, bytes as f64));
        }

        if leveldb_on() {
            copy_dir(&src, &copy)?;
            let start = Instant::now();
            leveltable_interop::db::repair(&copy, &leveltable_interop::db::DbOptions::default())?;
            let elapsed = start.elapsed();
            let counted = count_ours(&copy)?;
            check(counted == n, || {
                format!("leveltable counted {counted} entries in RepairDB's repair, not {n}")
            })?;
            keep_best(&mut theirs, Unit::MbPerSec.figure(elapsed, bytes as f64));
        }
    }
    for dir in [&src, &dest, &built, &copy] {
        fresh(dir)?;
    }
    let size = format!("{} ({} entries)", gigabytes(bytes), count(n));
    let mut rows = vec![Row {
        workload: format!(
            "repair, undamaged {size} database into a new one; LevelDB: RepairDB in place \
             (input bytes)"
        ),
        unit: Unit::MbPerSec,
        figures: [ours, theirs, None, None],
        target: Target::None,
    }];
    if let Some(baseline) = baseline {
        rows.push(Row {
            workload: format!(
                "repair, undamaged {size} database, over db build (1 thread) of its entries \
                 (input bytes)"
            ),
            unit: Unit::MbPerSec,
            figures: [ours, None, None, None],
            target: Target::SpeedupOver {
                baseline,
                at_least: OVER_BUILD,
            },
        });
    }
    if let (Some(ours_cpu), Some(baseline_cpu)) = (ours_cpu, baseline_cpu) {
        rows.push(Row {
            workload: format!(
                "repair, undamaged {size} database, over db build (1 thread) of its entries, \
                 by CPU time (input bytes per CPU second)"
            ),
            unit: Unit::MbPerSec,
            figures: [Some(ours_cpu), None, None, None],
            target: Target::SpeedupOver {
                baseline: baseline_cpu,
                at_least: OVER_BUILD,
            },
        });
    }
    Ok(rows)
}
