//! `threads`: present-key gets and whole-table scans of the shared snappy table from one
//! thread and from two at once, on one open table, without a block cache and with one
//! 8 MiB cache shared by both threads.
//!
//! Gets: the same 200,000 queries in both configurations, split into two contiguous halves
//! for two threads; the figure is wall-clock time per get over all threads. Scans: every
//! thread iterates over the whole table; the figure is key + value bytes per second over all
//! threads. One and two threads run in the same rounds (`a b b a`), so the speedup compares
//! figures taken under the same conditions. LevelDB's loops start their threads in C++
//! (`ltb_table_gets_threads`, `ltb_table_scan_threads`) over one `leveldb::Table`, whose
//! block cache, when there is one, its threads share too.

use std::thread;

use leveltable_table::{Cache, Compression, Table};

use super::config::{BITS_PER_KEY, Config, Result};
use super::get::{CACHE_BYTES, query_keys};
use super::harness::{Figures, Job, Sample, best_of_paired, check, leveldb_on, timed};
use super::tables::{Fixture, open_ours};
use crate::leveldb::{self, Records};
use crate::report::{Row, System, Target, Unit};
use crate::workload::{KEY_LEN, VALUE_LEN};

/// Threads in the parallel configuration: the runner's machines have 2 cores.
pub const THREADS: usize = 2;

/// The least speedup of gets from [`THREADS`] threads over one.
pub const GET_SPEEDUP_TARGET: f64 = 1.8;

pub(super) fn rows(config: &Config, fixture: &Fixture) -> Result<Vec<Row>> {
    let queries = query_keys(config, true);
    let queries = Records::new(&queries, KEY_LEN);
    let mut rows = Vec::new();
    for cached in [false, true] {
        let cache = if cached {
            "8 MiB shared cache"
        } else {
            "no cache"
        };
        let mut one = get_jobs(fixture, queries, cached, 1);
        let mut two = get_jobs(fixture, queries, cached, THREADS);
        let (f1, f2) = best_of_paired(config.rounds, Unit::NsPerOp, &mut one, &mut two)?;
        rows.extend(scaling_rows(
            &format!("get present, snappy, {cache}"),
            Unit::NsPerOp,
            f1,
            f2,
            Some(GET_SPEEDUP_TARGET),
        ));
        let mut one = scan_jobs(fixture, cached, 1);
        let mut two = scan_jobs(fixture, cached, THREADS);
        let (f1, f2) = best_of_paired(config.rounds, Unit::MbPerSec, &mut one, &mut two)?;
        rows.extend(scaling_rows(
            &format!("scan, snappy, {cache}"),
            Unit::MbPerSec,
            f1,
            f2,
            None,
        ));
    }
    Ok(rows)
}

/// The rows of one workload: its figures from one thread and from [`THREADS`], the second
/// held to `speedup` over leveltable's first if given, and each system's speedup, for which
/// leveltable's must be at least LevelDB's.
fn scaling_rows(
    name: &str,
    unit: Unit,
    one: Figures,
    two: Figures,
    speedup: Option<f64>,
) -> Vec<Row> {
    let mut speedups: Figures = [None; 4];
    for system in [System::Leveltable, System::LevelDb] {
        let i = system.index();
        if let (Some(a), Some(b)) = (two[i], one[i]) {
            speedups[i] = Some(unit.speedup(a, b));
        }
    }
    let ours_one = one[System::Leveltable.index()];
    vec![
        Row {
            workload: format!("threads: {name}, 1 thread"),
            unit,
            figures: one,
            target: Target::None,
        },
        Row {
            workload: format!("threads: {name}, {THREADS} threads"),
            unit,
            figures: two,
            target: match (speedup, ours_one) {
                (Some(at_least), Some(baseline)) => Target::SpeedupOver { baseline, at_least },
                _ => Target::None,
            },
        },
        Row {
            workload: format!("threads: {name}, speedup of {THREADS} threads over 1"),
            unit: Unit::Times,
            figures: speedups,
            target: Target::ThroughputAtLeast(1.0),
        },
    ]
}

/// One job per system: the present-key gets of `queries` from `threads` threads.
fn get_jobs<'a>(
    fixture: &'a Fixture,
    queries: Records<'a>,
    cached: bool,
    threads: usize,
) -> Vec<(System, Job<'a>)> {
    let (shared, _) = fixture.paths(Compression::Snappy);
    let n = queries.count();
    let expected = n as u64;
    let mut jobs: Vec<(System, Job<'a>)> = vec![(
        System::Leveltable,
        Box::new(move || {
            let cache = cached.then(|| Cache::shared(CACHE_BYTES as u64));
            let table = open_ours(shared, true, cache, false)?;
            let (elapsed, found) = timed(|| ours_gets_threads(&table, queries, threads))?;
            check(found == expected, || {
                format!("leveltable found {found} of {expected} from {threads} threads")
            })?;
            Ok(Sample {
                elapsed,
                work: n as f64,
            })
        }),
    )];
    if leveldb_on() {
        jobs.push((
            System::LevelDb,
            Box::new(move || {
                let cache_bytes = if cached { CACHE_BYTES } else { 0 };
                let mut table = leveldb::Table::open(shared, BITS_PER_KEY, cache_bytes)?;
                let (elapsed, (found, _)) = timed(|| Ok(table.gets_threads(queries, threads)?))?;
                check(found == expected, || {
                    format!("LevelDB found {found} of {expected} from {threads} threads")
                })?;
                Ok(Sample {
                    elapsed,
                    work: n as f64,
                })
            }),
        ));
    }
    jobs
}

/// One job per system: `threads` threads each scanning the whole table.
fn scan_jobs(fixture: &Fixture, cached: bool, threads: usize) -> Vec<(System, Job<'_>)> {
    let (shared, _) = fixture.paths(Compression::Snappy);
    let entries = fixture.entries.len() as u64 * threads as u64;
    let raw = fixture.entries.raw_bytes() * threads as u64;
    let mut jobs: Vec<(System, Job<'_>)> = vec![(
        System::Leveltable,
        Box::new(move || {
            let cache = cached.then(|| Cache::shared(CACHE_BYTES as u64));
            let table = open_ours(shared, false, cache, false)?;
            let (elapsed, (n, bytes)) = timed(|| ours_scan_threads(&table, threads))?;
            check(n == entries && bytes == raw, || {
                format!("leveltable scanned {n} of {entries} from {threads} threads")
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
                let cache_bytes = if cached { CACHE_BYTES } else { 0 };
                let mut table = leveldb::Table::open(shared, 0, cache_bytes)?;
                let (elapsed, (n, bytes)) = timed(|| Ok(table.scan_threads(threads)?))?;
                check(n == entries && bytes == raw, || {
                    format!("LevelDB scanned {n} of {entries} from {threads} threads")
                })?;
                Ok(Sample {
                    elapsed,
                    work: bytes as f64,
                })
            }),
        ));
    }
    jobs
}

/// Gets of `queries` from `threads` threads, each asking a contiguous part, on one table;
/// returns the number found. Each thread copies values into its own reused buffer, as the
/// `get` workload's loop does.
#[inline(never)]
fn ours_gets_threads<R: leveltable_table::ReadAt + Sync>(
    table: &Table<R>,
    queries: Records<'_>,
    threads: usize,
) -> Result<u64> {
    let n = queries.count();
    let threads = threads.max(1);
    thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|w| {
                let part = queries.slice(n * w / threads..n * (w + 1) / threads);
                scope.spawn(move || -> Result<u64> {
                    let mut value = Vec::with_capacity(VALUE_LEN);
                    let mut found = 0;
                    for q in part.iter() {
                        let hit = table.get_with(q, |v| {
                            value.clear();
                            value.extend_from_slice(v);
                        })?;
                        found += u64::from(hit.is_some());
                    }
                    Ok(found)
                })
            })
            .collect();
        let mut found = 0;
        for worker in workers {
            found += worker.join().map_err(|_| "a get thread panicked")??;
        }
        Ok(found)
    })
}

/// `threads` threads each scanning the whole table; returns (entries, key + value bytes)
/// over all of them.
#[inline(never)]
fn ours_scan_threads<R: leveltable_table::ReadAt + Sync>(
    table: &Table<R>,
    threads: usize,
) -> Result<(u64, u64)> {
    thread::scope(|scope| {
        let workers: Vec<_> = (0..threads.max(1))
            .map(|_| {
                scope.spawn(move || -> Result<(u64, u64)> {
                    let mut iter = table.iter();
                    iter.seek_to_first();
                    let (mut n, mut bytes) = (0u64, 0u64);
                    while iter.valid() {
                        n += 1;
                        bytes += (iter.key().len() + iter.value().len()) as u64;
                        iter.next();
                    }
                    iter.status()?;
                    Ok((n, bytes))
                })
            })
            .collect();
        let (mut n, mut bytes) = (0, 0);
        for worker in workers {
            let (a, b) = worker.join().map_err(|_| "a scan thread panicked")??;
            n += a;
            bytes += b;
        }
        Ok((n, bytes))
    })
}
