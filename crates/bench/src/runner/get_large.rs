//! `get-many-large`: single gets and `get_many` on a table larger than the caches, where a
//! get's index search, filter probe and data block are each a miss to memory (30M entries:
//! a 1.8 GB snappy table whose filter alone is 37.5 MB, 10 bits a key, against a 32 MiB
//! L3). The batch's figure is over leveltable's own single gets, both measured in the same
//! rounds; LevelDB's single gets on the same file are shown beside them.
//!
//! The table is written by leveltable (untimed, once per run) with the `build` workload's
//! options and read through a fresh memory map each round, as the `get` rows read theirs.

use std::path::Path;

use leveltable_table::Compression;

use super::config::{Config, Result, count};
use super::get::{GET_MANY_BATCH, ours_get_many, ours_gets};
use super::harness::{Job, Sample, best_of, best_of_paired, check, leveldb_on, timed};
use super::tables::{build_options, open_ours};
use crate::leveldb::{self, Records};
use crate::report::{Row, System, Target, Unit};
use crate::workload::{KEY_LEN, get_query_ids, key, table_entries};

/// `get_many` over single gets, per key: present keys (each batch still decompresses a
/// block per key), absent keys (a filter probe per key, the misses of a batch overlapping).
const PRESENT_SPEEDUP: f64 = 1.3;
const ABSENT_SPEEDUP: f64 = 2.0;

pub(super) fn rows(config: &Config) -> Result<Vec<Row>> {
    let n = config.large_entries;
    let path = config.dir.join("get-many-large.ldb");
    build(&path, n)?;
    let mut rows = Vec::new();
    for present in [true, false] {
        let queries: Vec<u8> = get_query_ids(n, config.queries, present)
            .into_iter()
            .flat_map(key)
            .collect();
        let records = Records::new(&queries, KEY_LEN);
        let keys: Vec<&[u8]> = records.iter().collect();
        let q = records.count() as f64;
        let expected = if present { records.count() as u64 } else { 0 };
        let path = path.as_path();
        let mut singles: Vec<(System, Job<'_>)> = vec![(
            System::Leveltable,
            Box::new(move || {
                let table = open_ours(path, true, None, false)?;
                let (elapsed, found) = timed(|| ours_gets(&table, records))?;
                check(found == expected, || {
                    format!("leveltable found {found} of {expected}")
                })?;
                Ok(Sample { elapsed, work: q })
            }),
        )];
        let keys = &keys;
        let mut batched: Vec<(System, Job<'_>)> = vec![(
            System::Leveltable,
            Box::new(move || {
                let table = open_ours(path, true, None, false)?;
                let (elapsed, found) = timed(|| ours_get_many(&table, keys))?;
                check(found == expected, || {
                    format!("leveltable found {found} of {expected} in batches")
                })?;
                Ok(Sample { elapsed, work: q })
            }),
        )];
        let (one, many) = best_of_paired(config.rounds, Unit::NsPerOp, &mut singles, &mut batched)?;
        let mut theirs = [None; 4];
        if leveldb_on() {
            let mut jobs: Vec<(System, Job<'_>)> = vec![(
                System::LevelDb,
                Box::new(move || {
                    let mut table = leveldb::Table::open(path, super::BITS_PER_KEY, 0)?;
                    let (elapsed, (found, _)) = timed(|| Ok(table.gets(records, false)?))?;
                    check(found == expected, || {
                        format!("LevelDB found {found} of {expected}")
                    })?;
                    Ok(Sample { elapsed, work: q })
                }),
            )];
            theirs = best_of(config.rounds, Unit::NsPerOp, &mut jobs)?;
        }
        let which = if present { "present" } else { "absent" };
        let ours = one[System::Leveltable.index()];
        rows.push(Row {
            workload: format!(
                "get {which}, {}-entry table, Bloom filter, no cache",
                count(n)
            ),
            unit: Unit::NsPerOp,
            figures: [ours, theirs[System::LevelDb.index()], None, None],
            target: Target::None,
        });
        rows.push(Row {
            workload: format!(
                "get_many {which}, {}-entry table, batches of {GET_MANY_BATCH} (per key) over \
                 single gets",
                count(n)
            ),
            unit: Unit::NsPerOp,
            figures: many,
            target: ours.map_or(Target::None, |baseline| Target::SpeedupOver {
                baseline,
                at_least: if present {
                    PRESENT_SPEEDUP
                } else {
                    ABSENT_SPEEDUP
                },
            }),
        });
    }
    std::fs::remove_file(&path)?;
    Ok(rows)
}

/// Writes the `n`-entry table at `path`, streaming the entries (never all in memory).
fn build(path: &Path, n: u64) -> Result<()> {
    use std::io::{BufWriter, Write};
    let file = BufWriter::with_capacity(1 << 16, std::fs::File::create(path)?);
    let mut builder =
        leveltable_table::TableBuilder::new(file, build_options(Compression::Snappy))?;
    for (k, v) in table_entries(n) {
        builder.add(&k, &v)?;
    }
    builder.finish()?;
    builder.into_inner().flush()?;
    Ok(())
}
