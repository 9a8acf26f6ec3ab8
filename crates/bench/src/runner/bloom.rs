//! `bloom`: creating Bloom filters in batches of [`CREATE_BATCH`] keys, and querying one
//! large filter, one key at a time and through leveltable's batch query.

use leveltable_filter_policy::{BloomFilterPolicy, FilterPolicy};

use super::config::{BITS_PER_KEY, Config, Result, count};
use super::harness::{Job, Sample, best_of, best_of_paired, check, leveldb_on, timed};
use crate::leveldb::{self, Records};
use crate::report::{Row, System, Target, Unit};
use crate::workload::{KEY_LEN, bloom_query_ids, key};

/// Keys per filter in the Bloom create workload.
pub const CREATE_BATCH: usize = 1000;

/// Keys and offsets in the layout the peers' `create_filter` takes.
fn peer_offsets(n: usize, key_len: usize) -> Vec<usize> {
    (0..n).map(|i| i * key_len).collect()
}

pub(super) fn rows(config: &Config) -> Result<Vec<Row>> {
    let ours = BloomFilterPolicy::new(BITS_PER_KEY);
    let sst = sstable::filter::BloomPolicy::new(BITS_PER_KEY as u32);
    let rusty = rusty_leveldb::BloomPolicy::new(BITS_PER_KEY as u32);
    let ldb = if leveldb_on() {
        Some(leveldb::Bloom::new(BITS_PER_KEY)?)
    } else {
        None
    };

    // Create: batches of 1,000 keys key(j).
    let create_keys: Vec<u8> = (0..config.create_keys).flat_map(key).collect();
    let records = Records::new(&create_keys, KEY_LEN);
    let refs: Vec<&[u8]> = records.iter().collect();
    let n = refs.len();
    let batch_offsets = peer_offsets(CREATE_BATCH, KEY_LEN);
    let expected_bytes: usize = refs
        .chunks(CREATE_BATCH)
        .map(|b| (b.len() * BITS_PER_KEY).max(64).div_ceil(8) + 1)
        .sum();
    let mut jobs: Vec<(System, Job<'_>)> = Vec::new();
    jobs.push((
        System::Leveltable,
        Box::new(|| {
            let (elapsed, total) = timed(|| {
                let mut dst = Vec::new();
                let mut total = 0;
                for batch in refs.chunks(CREATE_BATCH) {
                    dst.clear();
                    ours.create_filter(batch, &mut dst);
                    total += dst.len();
                }
                Ok(total)
            })?;
            check(total == expected_bytes, || format!("create: {total} bytes"))?;
            Ok(Sample {
                elapsed,
                work: n as f64,
            })
        }),
    ));
    if let Some(ldb) = &ldb {
        jobs.push((
            System::LevelDb,
            Box::new(|| {
                let (elapsed, total) = timed(|| Ok(ldb.create_batches(records, CREATE_BATCH)))?;
                check(total == expected_bytes, || {
                    format!("LevelDB create: {total} bytes")
                })?;
                Ok(Sample {
                    elapsed,
                    work: n as f64,
                })
            }),
        ));
    }
    fn peer_create<F: Fn(&[u8], &[usize]) -> Vec<u8>>(
        keys: &[u8],
        offsets: &[usize],
        create: F,
    ) -> usize {
        let mut total = 0;
        for batch in keys.chunks(CREATE_BATCH * KEY_LEN) {
            let m = batch.len() / KEY_LEN;
            total += create(batch, &offsets[..m]).len();
        }
        total
    }
    jobs.push((
        System::Sstable,
        Box::new(|| {
            let (elapsed, total) = timed(|| {
                Ok(peer_create(&create_keys, &batch_offsets, |k, o| {
                    sstable::filter::FilterPolicy::create_filter(&sst, k, o)
                }))
            })?;
            check(total == expected_bytes, || {
                format!("sstable create: {total} bytes")
            })?;
            Ok(Sample {
                elapsed,
                work: n as f64,
            })
        }),
    ));
    jobs.push((
        System::RustyLeveldb,
        Box::new(|| {
            let (elapsed, total) = timed(|| {
                Ok(peer_create(&create_keys, &batch_offsets, |k, o| {
                    rusty_leveldb::FilterPolicy::create_filter(&rusty, k, o)
                }))
            })?;
            check(total == expected_bytes, || {
                format!("rusty-leveldb create: {total} bytes")
            })?;
            Ok(Sample {
                elapsed,
                work: n as f64,
            })
        }),
    ));
    let create = best_of(config.rounds, Unit::NsPerOp, &mut jobs)?;
    drop(jobs);

    // Match: one filter over key(2i), i < n; queries half present.
    let filter_keys: Vec<u8> = (0..config.filter_keys).flat_map(|i| key(2 * i)).collect();
    let filter_records = Records::new(&filter_keys, KEY_LEN);
    let filter_refs: Vec<&[u8]> = filter_records.iter().collect();
    let mut our_filter = Vec::new();
    ours.create_filter(&filter_refs, &mut our_filter);
    let all_offsets = peer_offsets(filter_refs.len(), KEY_LEN);
    let sst_filter = sstable::filter::FilterPolicy::create_filter(&sst, &filter_keys, &all_offsets);
    let rusty_filter =
        rusty_leveldb::FilterPolicy::create_filter(&rusty, &filter_keys, &all_offsets);
    let ldb_filter = ldb.as_ref().map(|l| l.create(filter_records));
    if let Some(f) = &ldb_filter {
        check(*f == our_filter, || {
            "LevelDB's filter differs from ours".into()
        })?;
    }
    let query_keys: Vec<u8> = bloom_query_ids(config.filter_keys, config.filter_keys as usize)
        .into_iter()
        .flat_map(key)
        .collect();
    let queries = Records::new(&query_keys, KEY_LEN);
    let q = queries.count() as f64;
    let expected_hits = queries
        .iter()
        .filter(|k| ours.key_may_match(k, &our_filter))
        .count();
    // The same jobs twice: leveltable asking one key at a time, and through its batch query.
    // LevelDB and the peers have no batch query and ask one key at a time in both.
    let query_refs: Vec<&[u8]> = queries.iter().collect();
    let match_jobs = |batch: bool| -> Vec<(System, Job<'_>)> {
        let ours_job: Job<'_> = if batch {
            let (query_refs, our_filter) = (&query_refs, &our_filter);
            let mut answers = Vec::with_capacity(query_refs.len());
            Box::new(move || {
                let (elapsed, hits) = timed(|| {
                    answers.clear();
                    ours.keys_may_match(query_refs, our_filter, &mut answers);
                    Ok(answers.iter().filter(|&&a| a).count())
                })?;
                check(hits == expected_hits, || {
                    format!("batch match: {hits} hits")
                })?;
                Ok(Sample { elapsed, work: q })
            })
        } else {
            match_one_at_a_time("leveltable", queries, expected_hits, |k| {
                ours.key_may_match(k, &our_filter)
            })
        };
        let mut jobs: Vec<(System, Job<'_>)> = vec![(System::Leveltable, ours_job)];
        if let (Some(ldb), Some(filter)) = (&ldb, &ldb_filter) {
            jobs.push((
                System::LevelDb,
                Box::new(|| {
                    let (elapsed, hits) = timed(|| Ok(ldb.matches(filter, queries)))?;
                    check(hits == expected_hits, || {
                        format!("LevelDB match: {hits} hits, leveltable {expected_hits}")
                    })?;
                    Ok(Sample { elapsed, work: q })
                }),
            ));
        }
        jobs.push((
            System::Sstable,
            match_one_at_a_time("sstable", queries, expected_hits, |k| {
                sstable::filter::FilterPolicy::key_may_match(&sst, k, &sst_filter)
            }),
        ));
        jobs.push((
            System::RustyLeveldb,
            match_one_at_a_time("rusty-leveldb", queries, expected_hits, |k| {
                rusty_leveldb::FilterPolicy::key_may_match(&rusty, k, &rusty_filter)
            }),
        ));
        jobs
    };
    let mut one = match_jobs(false);
    let mut batched = match_jobs(true);
    let (matched, matched_batch) =
        best_of_paired(config.rounds, Unit::NsPerOp, &mut one, &mut batched)?;

    Ok(vec![
        Row {
            workload: format!("Bloom create, batches of {CREATE_BATCH} keys (per key)"),
            unit: Unit::NsPerOp,
            figures: create,
            target: Target::TimeAtMost(0.7),
        },
        Row {
            workload: format!(
                "Bloom match, {}-key filter, {} queries",
                count(config.filter_keys),
                count(config.filter_keys)
            ),
            unit: Unit::NsPerOp,
            figures: matched,
            target: Target::TimeAtMost(0.7),
        },
        Row {
            workload: format!(
                "Bloom match, {}-key filter, {} queries, leveltable's batch query",
                count(config.filter_keys),
                count(config.filter_keys)
            ),
            unit: Unit::NsPerOp,
            figures: matched_batch,
            target: Target::TimeAtMost(0.45),
        },
    ])
}

/// A job that asks `may_match` about every query, one key at a time, and checks the number
/// of hits.
fn match_one_at_a_time<'a>(
    name: &'static str,
    queries: Records<'a>,
    expected_hits: usize,
    may_match: impl Fn(&[u8]) -> bool + 'a,
) -> Job<'a> {
    let q = queries.count() as f64;
    Box::new(move || {
        let (elapsed, hits) = timed(|| Ok(queries.iter().filter(|k| may_match(k)).count()))?;
        check(hits == expected_hits, || {
            format!("{name} match: {hits} hits")
        })?;
        Ok(Sample { elapsed, work: q })
    })
}
