//! `scan`: iterating over every entry of the shared tables.

use leveltable_table::{Compression, Table};

use super::config::{Config, Result};
use super::harness::{Job, Sample, best_of, check, leveldb_on, peer_error, timed};
use super::tables::{Fixture, compression_label, open_ours, sstable_options};
use crate::leveldb;
use crate::report::{Row, System, Target, Unit};

pub(super) fn rows(
    config: &Config,
    fixture: &Fixture,
    compression: Compression,
    verify: bool,
) -> Result<Vec<Row>> {
    let mut jobs = jobs(fixture, compression, verify);
    let figures = best_of(config.rounds, Unit::MbPerSec, &mut jobs)?;
    Ok(vec![row(compression, verify, figures)])
}

pub(super) fn row(compression: Compression, verify: bool, figures: [Option<f64>; 4]) -> Row {
    Row {
        workload: format!(
            "scan, {}{} (key + value bytes)",
            compression_label(compression),
            if verify { ", checksums on" } else { "" }
        ),
        unit: Unit::MbPerSec,
        figures,
        // 1.5× was the first target; on both CPU families the table scans are held to 1.7×.
        target: if verify {
            Target::None
        } else {
            Target::ThroughputAtLeast(1.7)
        },
    }
}

/// One job per system scanning the table of `compression`.
pub(super) fn jobs(
    fixture: &Fixture,
    compression: Compression,
    verify: bool,
) -> Vec<(System, Job<'_>)> {
    let (shared, sstable_path) = fixture.paths(compression);
    let n = fixture.entries.len() as u64;
    let raw = fixture.entries.raw_bytes();
    let mut jobs: Vec<(System, Job<'_>)> = vec![(
        System::Leveltable,
        Box::new(move || {
            let table = open_ours(shared, false, None, verify)?;
            let (elapsed, (entries, bytes)) = timed(|| ours_scan(&table))?;
            check(entries == n && bytes == raw, || {
                format!("leveltable scanned {entries}")
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
                let mut table = leveldb::Table::open(shared, 0, 0)?;
                let (elapsed, (entries, bytes)) = timed(|| Ok(table.scan(verify)?))?;
                check(entries == n && bytes == raw, || {
                    format!("LevelDB scanned {entries}")
                })?;
                Ok(Sample {
                    elapsed,
                    work: bytes as f64,
                })
            }),
        ));
    }
    jobs.push((
        System::Sstable,
        Box::new(move || {
            use sstable::SSIterator;
            let options = sstable_options(compression, false, 1);
            let table = sstable::Table::new_from_file(options, sstable_path).map_err(peer_error)?;
            let (elapsed, (entries, bytes)) = timed(|| {
                let mut iter = table.iter();
                let (mut k, mut v) = (Vec::new(), Vec::new());
                let (mut entries, mut bytes) = (0u64, 0u64);
                while iter.advance() {
                    iter.current(&mut k, &mut v);
                    entries += 1;
                    bytes += (k.len() + v.len()) as u64;
                }
                Ok((entries, bytes))
            })?;
            check(entries == n && bytes == raw, || {
                format!("sstable scanned {entries}")
            })?;
            Ok(Sample {
                elapsed,
                work: bytes as f64,
            })
        }),
    ));
    jobs
}

/// Scans a leveltable table; returns (entries, key + value bytes). Never inlined, like
/// `ours_gets` in the `get` workload.
#[inline(never)]
fn ours_scan<R: leveltable_table::ReadAt>(table: &Table<R>) -> Result<(u64, u64)> {
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
}
