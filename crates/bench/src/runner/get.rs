//! `get`: point lookups of present and absent keys in the shared tables, with and without
//! the Bloom filter and the block cache.

use leveltable_table::{Cache, Compression, Table};

use super::config::{BITS_PER_KEY, Config, Result};
use super::harness::{Job, Sample, best_of, check, leveldb_on, peer_error, timed};
use super::tables::{Fixture, open_ours, sstable_options};
use crate::leveldb::{self, Records};
use crate::report::{Row, System, Target, Unit};
use crate::workload::{KEY_LEN, VALUE_LEN, get_query_ids, key};

/// Keys per batch of the batched get workloads.
pub const GET_MANY_BATCH: usize = 64;

/// The block cache of the cached get workloads: 8 MiB.
pub const CACHE_BYTES: usize = 8 << 20;

pub(super) fn rows(config: &Config, fixture: &Fixture) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    // With a cache, an absent key's rare false positive reads its block into the cache
    // instead of a buffer: held to 0.35 where the other absent rows are held to 0.40.
    let target = |present: bool, filter: bool, cached: bool| match (present, filter) {
        (true, _) => Target::TimeAtMost(0.6),
        (false, true) if cached => Target::TimeAtMost(0.35),
        (false, true) => Target::TimeAtMost(0.4),
        (false, false) => Target::None,
    };
    let name = |present: bool, filter: bool, cached: bool| {
        format!(
            "get {}, {}, {}",
            if present { "present" } else { "absent" },
            if filter { "Bloom filter" } else { "no filter" },
            if cached { "8 MiB cache" } else { "no cache" },
        )
    };
    // Our single gets with the filter and no cache, present and absent: the baselines of
    // the batched rows.
    let mut singles = [None; 2];
    for cached in [false, true] {
        for present in [true, false] {
            for filter in [true, false] {
                let case = GetCase {
                    present,
                    filter,
                    cached,
                    verify: false,
                    compression: Compression::Snappy,
                };
                let figures = figures(config, fixture, case)?;
                if filter && !cached {
                    singles[usize::from(!present)] = figures[System::Leveltable.index()];
                }
                rows.push(Row {
                    workload: name(present, filter, cached),
                    unit: Unit::NsPerOp,
                    figures,
                    target: target(present, filter, cached),
                });
            }
        }
    }
    for present in [true, false] {
        let case = GetCase {
            present,
            filter: true,
            cached: false,
            verify: false,
            compression: Compression::Snappy,
        };
        let queries = query_keys(config, present);
        let mut jobs = batch_jobs(fixture, case, Records::new(&queries, KEY_LEN));
        let figures = best_of(config.rounds, Unit::NsPerOp, &mut jobs)?;
        let what = format!(
            "{} batches of {GET_MANY_BATCH} (per key)",
            name(present, true, false).replacen("get", "get_many", 1)
        );
        // Never slower than single gets, and at most half of LevelDB's single gets.
        rows.push(Row {
            workload: format!("{what} over single gets"),
            unit: Unit::NsPerOp,
            figures: [figures[System::Leveltable.index()], None, None, None],
            target: singles[usize::from(!present)].map_or(Target::None, |baseline| {
                Target::SpeedupOver {
                    baseline,
                    at_least: 1.0,
                }
            }),
        });
        rows.push(Row {
            workload: format!("{what}; LevelDB: single gets"),
            unit: Unit::NsPerOp,
            figures,
            target: Target::TimeAtMost(0.5),
        });
    }
    for present in [true, false] {
        let case = GetCase {
            present,
            filter: true,
            cached: false,
            verify: false,
            compression: Compression::None,
        };
        rows.push(Row {
            workload: format!("{}, uncompressed", name(present, true, false)),
            unit: Unit::NsPerOp,
            figures: figures(config, fixture, case)?,
            target: target(present, true, false),
        });
    }
    Ok(rows)
}

/// One get workload.
#[derive(Debug, Clone, Copy)]
pub(super) struct GetCase {
    pub(super) present: bool,
    pub(super) filter: bool,
    pub(super) cached: bool,
    pub(super) verify: bool,
    pub(super) compression: Compression,
}

fn figures(config: &Config, fixture: &Fixture, case: GetCase) -> Result<[Option<f64>; 4]> {
    let queries = query_keys(config, case.present);
    let mut jobs = jobs(fixture, case, Records::new(&queries, KEY_LEN));
    best_of(config.rounds, Unit::NsPerOp, &mut jobs)
}

pub(super) fn query_keys(config: &Config, present: bool) -> Vec<u8> {
    get_query_ids(config.entries, config.queries, present)
        .into_iter()
        .flat_map(key)
        .collect()
}

/// One job per system running the gets of `case` over `queries`.
pub(super) fn jobs<'a>(
    fixture: &'a Fixture,
    case: GetCase,
    queries: Records<'a>,
) -> Vec<(System, Job<'a>)> {
    let GetCase {
        present,
        filter,
        cached,
        verify,
        compression,
    } = case;
    let (shared, sstable_path) = fixture.paths(compression);
    let q = queries.count() as f64;
    let expected = if present { queries.count() as u64 } else { 0 };
    let cache_bytes = if cached { CACHE_BYTES } else { 0 };
    let mut jobs: Vec<(System, Job<'_>)> = vec![(
        System::Leveltable,
        Box::new(move || {
            let cache = cached.then(|| Cache::shared(CACHE_BYTES as u64));
            let table = open_ours(shared, filter, cache, verify)?;
            let (elapsed, found) = timed(|| ours_gets(&table, queries))?;
            check(found == expected, || {
                format!("leveltable found {found} of {expected}")
            })?;
            Ok(Sample { elapsed, work: q })
        }),
    )];
    if leveldb_on() {
        jobs.push((
            System::LevelDb,
            Box::new(move || {
                let bits = if filter { BITS_PER_KEY } else { 0 };
                let mut table = leveldb::Table::open(shared, bits, cache_bytes)?;
                let (elapsed, (found, _)) = timed(|| Ok(table.gets(queries, verify)?))?;
                check(found == expected, || {
                    format!("LevelDB found {found} of {expected}")
                })?;
                Ok(Sample { elapsed, work: q })
            }),
        ));
    }
    jobs.push((
        System::Sstable,
        Box::new(move || {
            // sstable always has a block cache; one block is the least it allows.
            let blocks = if cached { CACHE_BYTES / 4096 } else { 1 };
            let options = sstable_options(compression, filter, blocks);
            let table = sstable::Table::new_from_file(options, sstable_path).map_err(peer_error)?;
            let (elapsed, found) = timed(|| {
                let mut found = 0u64;
                for k in queries.iter() {
                    found += u64::from(table.get(k).map_err(peer_error)?.is_some());
                }
                Ok(found)
            })?;
            check(found == expected, || {
                format!("sstable found {found} of {expected}")
            })?;
            Ok(Sample { elapsed, work: q })
        }),
    ));
    jobs
}

/// Our batched gets of `case` over `queries`, and LevelDB's single gets to compare.
fn batch_jobs<'a>(
    fixture: &'a Fixture,
    case: GetCase,
    queries: Records<'a>,
) -> Vec<(System, Job<'a>)> {
    let (shared, _) = fixture.paths(case.compression);
    let q = queries.count() as f64;
    let expected = if case.present {
        queries.count() as u64
    } else {
        0
    };
    let mut jobs = jobs(fixture, case, queries);
    jobs.retain(|(system, _)| *system == System::LevelDb);
    let keys: Vec<&[u8]> = queries.iter().collect();
    jobs.insert(
        0,
        (
            System::Leveltable,
            Box::new(move || {
                let table = open_ours(shared, case.filter, None, case.verify)?;
                let (elapsed, found) = timed(|| ours_get_many(&table, &keys))?;
                check(found == expected, || {
                    format!("leveltable found {found} of {expected}")
                })?;
                Ok(Sample { elapsed, work: q })
            }),
        ),
    );
    jobs
}

/// Batched gets through leveltable, [`GET_MANY_BATCH`] keys at a time; returns the number
/// found. Values are copied into one reused buffer, as in [`ours_gets`].
#[inline(never)]
pub(super) fn ours_get_many<R: leveltable_table::ReadAt>(
    table: &Table<R>,
    keys: &[&[u8]],
) -> Result<u64> {
    let mut value = Vec::with_capacity(VALUE_LEN);
    let mut found = 0;
    for batch in keys.chunks(GET_MANY_BATCH) {
        table.get_many_with(batch, |_, v| {
            value.clear();
            value.extend_from_slice(v);
            found += 1;
        })?;
    }
    Ok(found)
}

/// Gets through leveltable; returns the number found.
///
/// Never inlined, so that profilers (`valgrind --tool=callgrind`) can attribute the loop,
/// as they attribute LevelDB's `ltb_table_gets`. Values are copied into one reused
/// buffer, as LevelDB's loop copies them into one reused string.
#[inline(never)]
pub(super) fn ours_gets<R: leveltable_table::ReadAt>(
    table: &Table<R>,
    queries: Records<'_>,
) -> Result<u64> {
    let mut value = Vec::with_capacity(VALUE_LEN);
    let mut found = 0;
    for q in queries.iter() {
        let hit = table.get_with(q, |v| {
            value.clear();
            value.extend_from_slice(v);
        })?;
        found += u64::from(hit.is_some());
    }
    Ok(found)
}
