//! `db-build`: making a whole database from sorted input, and from shuffled input through
//! an external sort.
//!
//! Input: `n` = bytes / 116 entries `key(2i)` (16 bytes) → the `i`-th 100-byte value of the
//! table workload's stream, generated before the clock starts and held in memory, as every
//! other workload's input. Every system writes LevelDB's defaults: 4 KiB blocks, snappy, a
//! 10-bit Bloom filter; the databases 2 MiB table files.
//!
//! - leveltable: `DbBuilder` with one thread and with two, through `finish` (the commit:
//!   every file synced, checked and renamed, the MANIFEST and `CURRENT` written).
//! - The baselines: leveltable's `TableBuilder` writing the same entries into one table
//!   file as the database's tables hold them (internal keys, the bulk build's table
//!   options), synced before the clock stops as the database's files are — what building
//!   its tables durably costs — and the same not synced, and as the `build` workload writes
//!   them (user keys, not synced).
//! - LevelDB: its write path, `DB::Open` (create) and sorted `WriteBatch` puts of 1,000
//!   entries with `sync=false`, then `CompactRange(nullptr, nullptr)` and a wait until no
//!   compaction is due, then the close, all in C++.
//!
//! Each build is checked by the other system: LevelDB opens leveltable's database and
//! counts its entries, leveltable opens LevelDB's and counts them.
//!
//! The sort runs in a child process (the runner started with [`SORT_COMMAND`]) so that its
//! peak resident set (`VmHWM`) measures the sort alone: entries in a shuffled order go into
//! `ExternalSorter` with a budget of about a quarter of the input (256 MiB for 1 GB), and
//! its output into a one-thread `DbBuilder`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use std::fs::File;
use std::io::{BufWriter, Write};

use leveltable_db::dbformat::{ValueType, append_internal_key};
use leveltable_db::{BulkOptions, Db, DbBuilder, DbOptions, Duplicates, ExternalSorter};
use leveltable_table::{Compression, TableBuilder};

use super::config::{BITS_PER_KEY, Config, Result, count};
use super::get::CACHE_BYTES;
use super::harness::{check, leveldb_on};
use super::memory::status_kib;
use super::tables::{Entries, build_options, build_ours as build_table};
use crate::leveldb;
use crate::report::{Row, Target, Unit};
use crate::workload::{KEY_LEN, KeyShape, SplitMix64, VALUE_LEN, key, next_value};

/// The hidden subcommand that runs the sort in a child process:
/// `__db_sort DIR INPUT_BYTES BUDGET_BYTES`.
pub const SORT_COMMAND: &str = "__db_sort";

/// Entries per `WriteBatch` on LevelDB's write path.
const WRITE_BATCH: usize = 1000;

/// How long LevelDB's compactions may take to settle.
const SETTLE_MS: u64 = 1_800_000;

/// The sort's peak resident set may exceed its budget by this much.
const SORT_SLACK_MIB: f64 = 64.0;

/// Bytes of one entry.
const ENTRY_BYTES: u64 = (KEY_LEN + VALUE_LEN) as u64;

/// A one-thread build at least this fraction of the durable baseline table build's
/// throughput.
const OVER_TABLE_BUILD: f64 = 0.9;

/// A one-thread build at least this multiple of LevelDB's write path.
const OVER_LEVELDB: f64 = 3.0;

/// Two threads at least this multiple of one.
const TWO_OVER_ONE: f64 = 1.75;

fn fresh(dir: &Path) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    Ok(())
}

/// Builds with leveltable; returns the time.
fn build_ours(dir: &Path, entries: &Entries, threads: usize) -> Result<Duration> {
    fresh(dir)?;
    let n = entries.len() as u64;
    let start = Instant::now();
    let mut builder = DbBuilder::create(dir, BulkOptions::default().threads(threads))?;
    for (k, v) in entries.keys().iter().zip(entries.values().iter()) {
        builder.add(k, v)?;
    }
    let summary = builder.finish()?;
    let elapsed = start.elapsed();
    check(summary.entries == n, || {
        format!("leveltable built {} entries, not {n}", summary.entries)
    })?;
    Ok(elapsed)
}

/// How a baseline table is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Baseline {
    /// As a database's tables hold the entries (each key with its sequence-0 tag, the bulk
    /// build's table options), synced before the clock stops as a database's files are.
    Durable,
    /// The same, not synced.
    Internal,
    /// As the `build` workload writes them (user keys), not synced.
    UserKeys,
}

/// Builds one table file of the entries; returns the time.
fn build_one_table(path: &Path, entries: &Entries, baseline: Baseline) -> Result<Duration> {
    let _ = std::fs::remove_file(path);
    let start = Instant::now();
    let size = if baseline != Baseline::UserKeys {
        let file = BufWriter::with_capacity(1 << 16, File::create(path)?);
        let mut builder = TableBuilder::new(file, BulkOptions::default().table.build_options())?;
        let mut key = Vec::new();
        for (k, v) in entries.keys().iter().zip(entries.values().iter()) {
            key.clear();
            append_internal_key(&mut key, k, 0, ValueType::Value)?;
            builder.add(&key, v)?;
        }
        builder.finish()?;
        let size = builder.file_size();
        let mut file = builder.into_inner();
        file.flush()?;
        if baseline == Baseline::Durable {
            file.get_ref().sync_all()?;
        }
        size
    } else {
        build_table(path, entries, build_options(Compression::Snappy))?
    };
    let elapsed = start.elapsed();
    check(size > 0, || "empty table".into())?;
    std::fs::remove_file(path)?;
    Ok(elapsed)
}

/// Builds with LevelDB's write path; returns the time.
fn build_leveldb(dir: &Path, entries: &Entries) -> Result<Duration> {
    fresh(dir)?;
    let start = Instant::now();
    let mut db = leveldb::Db::open(dir, BITS_PER_KEY, CACHE_BYTES, false, true)?;
    db.write(entries.keys(), entries.values(), WRITE_BATCH)?;
    db.compact_all()?;
    db.settle(SETTLE_MS)?;
    drop(db);
    Ok(start.elapsed())
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

/// Entries in the database at `dir` as LevelDB reads them (it writes on open).
fn count_leveldb(dir: &Path) -> Result<u64> {
    let mut db = leveldb::Db::open(dir, BITS_PER_KEY, CACHE_BYTES, false, false)?;
    Ok(db.scan()?.0)
}

/// `1.00 GB`, or `4.0 MB` below 0.1 GB.
fn gigabytes(bytes: u64) -> String {
    if bytes >= 100_000_000 {
        format!("{:.2} GB", bytes as f64 / 1e9)
    } else {
        format!("{:.1} MB", bytes as f64 / 1e6)
    }
}

fn mb_per_sec(bytes: u64, elapsed: Duration) -> f64 {
    Unit::MbPerSec.figure(elapsed, bytes as f64)
}

fn keep_best(slot: &mut Option<f64>, value: f64) {
    if slot.is_none_or(|b| value > b) {
        *slot = Some(value);
    }
}

/// The builds, interleaved round by round: the baseline table, leveltable with one thread,
/// with two, LevelDB.
fn build_rows(config: &Config) -> Result<Vec<Row>> {
    let n = config.db_build_bytes / ENTRY_BYTES;
    let entries = Entries::new(n, KeyShape::Decimal);
    let bytes = entries.raw_bytes();
    let table_path = config.dir.join("db-build-table.ldb");
    let ours_dir = config.dir.join("db-build-leveltable");
    let leveldb_dir = config.dir.join("db-build-leveldb");
    let mut baselines = [None; 3];
    let (mut one, mut two, mut theirs) = (None, None, None);
    for _ in 0..config.rounds.max(1) {
        for (slot, baseline) in
            baselines
                .iter_mut()
                .zip([Baseline::Durable, Baseline::Internal, Baseline::UserKeys])
        {
            let elapsed = build_one_table(&table_path, &entries, baseline)?;
            keep_best(slot, mb_per_sec(bytes, elapsed));
        }
        for threads in [1, 2] {
            let elapsed = build_ours(&ours_dir, &entries, threads)?;
            if leveldb_on() {
                let counted = count_leveldb(&ours_dir)?;
                check(counted == n, || {
                    format!("LevelDB counted {counted} entries in leveltable's build, not {n}")
                })?;
            } else {
                let counted = count_ours(&ours_dir)?;
                check(counted == n, || {
                    format!("leveltable counted {counted} entries in its build, not {n}")
                })?;
            }
            let slot = if threads == 1 { &mut one } else { &mut two };
            keep_best(slot, mb_per_sec(bytes, elapsed));
        }
        if leveldb_on() {
            let elapsed = build_leveldb(&leveldb_dir, &entries)?;
            let counted = count_ours(&leveldb_dir)?;
            check(counted == n, || {
                format!("leveltable counted {counted} entries in LevelDB's build, not {n}")
            })?;
            keep_best(&mut theirs, mb_per_sec(bytes, elapsed));
        }
    }
    fresh(&ours_dir)?;
    fresh(&leveldb_dir)?;
    let size = format!("{} ({} entries)", gigabytes(bytes), count(n));
    let mut rows = vec![Row {
        workload: format!(
            "db-build, {size}, 1 thread; LevelDB: WriteBatch puts + CompactRange (input bytes)"
        ),
        unit: Unit::MbPerSec,
        figures: [one, theirs, None, None],
        target: Target::ThroughputAtLeast(OVER_LEVELDB),
    }];
    let [durable, internal, user_keys] = baselines;
    if let Some(baseline) = durable {
        rows.push(Row {
            workload: format!(
                "db-build, {size}, 1 thread over building its tables durably: the entries into \
                 one table file of internal keys with the same table options, synced (input \
                 bytes)"
            ),
            unit: Unit::MbPerSec,
            figures: [one, None, None, None],
            target: Target::SpeedupOver {
                baseline,
                at_least: OVER_TABLE_BUILD,
            },
        });
    }
    for (baseline, what) in [
        (internal, "the same table file not synced"),
        (
            user_keys,
            "the build workload's table of the same input (user keys, not synced)",
        ),
    ] {
        if let (Some(baseline), Some(one)) = (baseline, one) {
            rows.push(Row {
                workload: format!(
                    "db-build, {size}, 1 thread over {what} ({baseline:.0} MB/s): {:.2}× \
                     (input bytes)",
                    one / baseline
                ),
                unit: Unit::MbPerSec,
                figures: [Some(one), None, None, None],
                target: Target::None,
            });
        }
    }
    if let Some(baseline) = one {
        rows.push(Row {
            workload: format!("db-build, {size}, 2 threads over 1 thread (input bytes)"),
            unit: Unit::MbPerSec,
            figures: [two, None, None, None],
            target: Target::SpeedupOver {
                baseline,
                at_least: TWO_OVER_ONE,
            },
        });
    }
    Ok(rows)
}

/// A permutation of `0..n`: a bijection of the smallest power-of-two range holding `n`
/// (xor-shifts and odd multiplications), walked until it lands below `n`.
#[derive(Debug, Clone, Copy)]
struct Shuffle {
    n: u64,
    bits: u32,
    mask: u64,
}

impl Shuffle {
    fn new(n: u64) -> Shuffle {
        let bits = (64 - n.saturating_sub(1).leading_zeros()).max(2);
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1 << bits) - 1
        };
        Shuffle { n, bits, mask }
    }

    fn mix(&self, mut x: u64) -> u64 {
        let shift = self.bits / 2;
        x = (x ^ 0x5bd1_e995) & self.mask;
        x ^= x >> shift;
        x = x.wrapping_mul(0x9e37_79b9_7f4a_7c15) & self.mask;
        x ^= x >> shift;
        x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9) & self.mask;
        x ^ (x >> shift)
    }

    /// The `i`-th element of the permutation, `i < n`.
    fn at(&self, i: u64) -> u64 {
        let mut x = self.mix(i);
        while x >= self.n {
            x = self.mix(x);
        }
        x
    }
}

/// The value of entry `i` in the sort's input: the first value of the stream seeded `i`.
fn sort_value(i: u64) -> [u8; VALUE_LEN] {
    next_value(&mut SplitMix64::new(i))
}

/// What the sort child reports.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct SortReport {
    base_kib: u64,
    peak_kib: u64,
    nanos: u64,
    entries: u64,
}

impl SortReport {
    fn to_line(self) -> String {
        format!(
            "base_kib={} peak_kib={} nanos={} entries={}",
            self.base_kib, self.peak_kib, self.nanos, self.entries
        )
    }

    fn parse(line: &str) -> Option<SortReport> {
        let mut r = SortReport::default();
        for field in line.split_whitespace() {
            let (name, value) = field.split_once('=')?;
            let value = value.parse().ok()?;
            match name {
                "base_kib" => r.base_kib = value,
                "peak_kib" => r.peak_kib = value,
                "nanos" => r.nanos = value,
                "entries" => r.entries = value,
                _ => return None,
            }
        }
        Some(r)
    }
}

/// The child's work: sort `input_bytes` of shuffled entries within `budget` bytes into a
/// database in `dir`, and print a report line.
///
/// # Errors
///
/// From the sort or the build.
pub fn sort_child(dir: &Path, input_bytes: u64, budget: u64) -> Result<()> {
    let n = input_bytes / ENTRY_BYTES;
    let base_kib = status_kib("VmHWM").ok_or("no VmHWM in /proc/self/status")?;
    let db_dir = dir.join("db-sorted");
    fresh(&db_dir)?;
    let shuffle = Shuffle::new(n);
    let start = Instant::now();
    let mut sorter = ExternalSorter::new(budget, Duplicates::Error, dir)?;
    for i in 0..n {
        let j = shuffle.at(i);
        sorter.add(&key(2 * j), &sort_value(j))?;
    }
    let mut builder = DbBuilder::create(&db_dir, BulkOptions::default().threads(1))?;
    sorter.finish(|k, v| builder.add(k, v))?;
    let summary = builder.finish()?;
    let nanos = start.elapsed().as_nanos() as u64;
    let peak_kib = status_kib("VmHWM").unwrap_or(0);
    let report = SortReport {
        base_kib,
        peak_kib,
        nanos,
        entries: summary.entries,
    };
    println!("{}", report.to_line());
    Ok(())
}

/// Runs the sort child once per round; rows for its peak resident set (the highest of the
/// rounds) and its time (the best).
fn sort_rows(config: &Config, exe: &Path) -> Result<Vec<Row>> {
    let n = config.db_build_bytes / ENTRY_BYTES;
    let bytes = n * ENTRY_BYTES;
    let budget = config.sort_budget;
    let dir: PathBuf = config.dir.join("db-sort");
    fresh(&dir)?;
    std::fs::create_dir(&dir)?;
    let (mut peak, mut best) = (0u64, None);
    for _ in 0..config.rounds.max(1) {
        let output = Command::new(exe)
            .arg(SORT_COMMAND)
            .arg(&dir)
            .arg(config.db_build_bytes.to_string())
            .arg(budget.to_string())
            .output()?;
        if !output.status.success() {
            return Err(format!(
                "sort child failed: {}",
                String::from_utf8_lossy(&output.stderr)
            )
            .into());
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        let report = stdout
            .lines()
            .find_map(SortReport::parse)
            .ok_or_else(|| format!("no report from the sort child: {stdout}"))?;
        check(report.entries == n, || {
            format!("the sort built {} entries, not {n}", report.entries)
        })?;
        let counted = count_ours(&dir.join("db-sorted"))?;
        check(counted == n, || {
            format!("leveltable counted {counted} entries in the sorted build, not {n}")
        })?;
        peak = peak.max(report.peak_kib);
        keep_best(
            &mut best,
            mb_per_sec(bytes, Duration::from_nanos(report.nanos)),
        );
    }
    fresh(&dir)?;
    let budget_mib = budget as f64 / f64::from(1 << 20);
    let what = format!(
        "db-build from {} shuffled, ExternalSorter budget {budget_mib:.0} MiB, 1 thread",
        gigabytes(bytes)
    );
    Ok(vec![
        Row {
            workload: format!("{what}: peak RSS (VmHWM, child process, highest round)"),
            unit: Unit::MiB,
            figures: [Some(peak as f64 / 1024.0), None, None, None],
            target: Target::AtMost(budget_mib + SORT_SLACK_MIB),
        },
        Row {
            workload: format!("{what}: sort + build (input bytes)"),
            unit: Unit::MbPerSec,
            figures: [best, None, None, None],
            target: Target::None,
        },
    ])
}

/// The `db-build` rows. `exe` is the runner binary, which the sort runs as a child.
///
/// # Errors
///
/// From either system, or a wrong count.
pub(super) fn rows(config: &Config, exe: &Path) -> Result<Vec<Row>> {
    let mut rows = build_rows(config)?;
    rows.extend(sort_rows(config, exe)?);
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shuffles_are_permutations() {
        for n in [1, 2, 3, 5, 1000, 4097] {
            let s = Shuffle::new(n);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let j = s.at(i) as usize;
                assert!(!seen[j], "{n}: {j} twice");
                seen[j] = true;
            }
        }
    }

    #[test]
    fn sort_reports_round_trip() {
        let r = SortReport {
            base_kib: 1,
            peak_kib: 2,
            nanos: 3,
            entries: 4,
        };
        assert_eq!(SortReport::parse(&r.to_line()), Some(r));
        assert_eq!(SortReport::parse("x"), None);
    }
}
