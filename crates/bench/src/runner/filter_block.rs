//! `filter-block`: building a table's filter block (one filter per 2 KiB of block offsets)
//! and querying it, laid out as the uncompressed benchmark table lays out its blocks.

use leveltable_filter_block::{FilterBlockBuilder, FilterBlockReader};
use leveltable_filter_policy::BloomFilterPolicy;

use super::config::{BITS_PER_KEY, Config, Result, count};
use super::harness::{Job, Sample, best_of, check, leveldb_on, timed};
use crate::leveldb::{self, Records};
use crate::report::{Row, System, Target, Unit};
use crate::workload::{KEY_LEN, bloom_query_ids, key};

/// Keys per data block in the filter block workload: the uncompressed benchmark table holds
/// 1,000,000 entries in 25,642 blocks (39 keys a block).
pub const FILTER_BLOCK_KEYS: usize = 39;

/// Bytes from one data block to the next in the filter block workload; the uncompressed
/// benchmark table's blocks lie 4,130 bytes apart on average (trailers included), so the
/// two layouts put the same number of blocks in each 2 KiB filter range.
pub const FILTER_BLOCK_STRIDE: u64 = 4153;

pub(super) fn rows(config: &Config) -> Result<Vec<Row>> {
    let n = config.entries as usize;
    let keys: Vec<u8> = (0..config.entries).flat_map(|i| key(2 * i)).collect();
    let records = Records::new(&keys, KEY_LEN);
    let blocks = n.div_ceil(FILTER_BLOCK_KEYS);
    let offsets: Vec<u64> = (0..blocks as u64)
        .map(|b| b * FILTER_BLOCK_STRIDE)
        .collect();
    let starts: Vec<usize> = (0..=blocks)
        .map(|b| (b * FILTER_BLOCK_KEYS).min(n))
        .collect();
    let ours = BloomFilterPolicy::new(BITS_PER_KEY);
    let ldb = if leveldb_on() {
        Some(leveldb::Bloom::new(BITS_PER_KEY)?)
    } else {
        None
    };
    let build = || -> Result<Vec<u8>> {
        let mut builder = FilterBlockBuilder::new(&ours);
        for b in 0..blocks {
            builder.start_block(offsets[b])?;
            for k in records.slice(starts[b]..starts[b + 1]).iter() {
                builder.add_key(k);
            }
        }
        Ok(builder.finish())
    };
    let block = build()?;
    let mut jobs: Vec<(System, Job<'_>)> = Vec::new();
    jobs.push((
        System::Leveltable,
        Box::new(|| {
            let (elapsed, built) = timed(build)?;
            check(built.len() == block.len(), || {
                "filter block size changed".into()
            })?;
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
                let (elapsed, size) =
                    timed(|| Ok(ldb.filter_block_build(records, &offsets, &starts)))?;
                check(size == block.len(), || {
                    format!(
                        "LevelDB filter block {size} bytes, leveltable {}",
                        block.len()
                    )
                })?;
                Ok(Sample {
                    elapsed,
                    work: n as f64,
                })
            }),
        ));
    }
    let built = best_of(config.rounds, Unit::NsPerOp, &mut jobs)?;
    drop(jobs);

    let ids = bloom_query_ids(config.entries, n);
    let query_keys: Vec<u8> = ids.iter().flat_map(|&j| key(j)).collect();
    let queries = Records::new(&query_keys, KEY_LEN);
    let query_offsets: Vec<u64> = ids
        .iter()
        .map(|&j| offsets[(j / 2) as usize / FILTER_BLOCK_KEYS])
        .collect();
    let reader = FilterBlockReader::new(&ours, &block);
    let expected = queries
        .iter()
        .zip(&query_offsets)
        .filter(|(k, o)| reader.key_may_match(**o, k))
        .count();
    let mut jobs: Vec<(System, Job<'_>)> = Vec::new();
    jobs.push((
        System::Leveltable,
        Box::new(|| {
            let (elapsed, hits) = timed(|| {
                let reader = FilterBlockReader::new(&ours, &block);
                Ok(queries
                    .iter()
                    .zip(&query_offsets)
                    .filter(|(k, o)| reader.key_may_match(**o, k))
                    .count())
            })?;
            check(hits == expected, || "filter block hits changed".into())?;
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
                let (elapsed, hits) =
                    timed(|| Ok(ldb.filter_block_match(&block, queries, &query_offsets)))?;
                check(hits == expected, || {
                    format!("LevelDB filter block: {hits} hits, leveltable {expected}")
                })?;
                Ok(Sample {
                    elapsed,
                    work: n as f64,
                })
            }),
        ));
    }
    let matched = best_of(config.rounds, Unit::NsPerOp, &mut jobs)?;
    Ok(vec![
        Row {
            workload: format!(
                "filter block build, {} keys (per key)",
                count(config.entries)
            ),
            unit: Unit::NsPerOp,
            figures: built,
            target: Target::None,
        },
        Row {
            workload: format!("filter block match, {} queries", count(config.entries)),
            unit: Unit::NsPerOp,
            figures: matched,
            target: Target::TimeAtMost(0.8),
        },
    ])
}
