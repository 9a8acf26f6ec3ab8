//! Absent-key gets on structured keys: how many data blocks each filter lets a get read, and
//! what a get costs, with LevelDB's Bloom filter and with leveltable's `LocalBloom64` kept
//! beside it in the same table.
//!
//! One table per key shape (consecutive even numbers as 8-byte big-endian integers, and as
//! 16-digit decimal strings), built by leveltable with both filters. LevelDB 1.23 reads it
//! with its own filter (it ignores the second one); leveltable reads it once with LevelDB's
//! filter only and once preferring `LocalBloom64`. Queries are the odd neighbours `2i + 1`
//! (absent) and the keys `2i` (present) of the get workload.

use std::path::Path;
use std::time::Duration;

use leveltable_filter_policy::{BloomFilterPolicy, CacheLocalBloomPolicy};
use leveltable_table::{BuildOptions, Compression, ReadOptions, Table};

use super::config::{BITS_PER_KEY, Config, Result, count};
use super::tables::{Entries, shaped_queries};
use crate::leveldb::{self, Records};
use crate::mmap;
use crate::report::render_markdown;
use crate::workload::{KeyShape, get_query_ids};

/// Who reads the table, with which filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reader {
    LevelDb,
    OursLevelDbFilter,
    OursLocalBloom,
}

impl Reader {
    const ALL: [Reader; 3] = [
        Reader::LevelDb,
        Reader::OursLevelDbFilter,
        Reader::OursLocalBloom,
    ];

    fn label(self) -> &'static str {
        match self {
            Reader::LevelDb => "LevelDB 1.23, its Bloom filter",
            Reader::OursLevelDbFilter => "leveltable, LevelDB's Bloom filter",
            Reader::OursLocalBloom => "leveltable, LocalBloom64",
        }
    }
}

/// Blocks read per get and best time per get, for one reader and one query set.
#[derive(Debug, Clone, Copy, Default)]
struct Outcome {
    blocks_per_get: f64,
    ns_per_get: f64,
}

fn open_ours(path: &Path, reader: Reader) -> Result<Table<memmap2::Mmap>> {
    let mut options = ReadOptions::default()
        .verify_checksums(false)
        .filter_policy(BloomFilterPolicy::new(BITS_PER_KEY));
    if reader == Reader::OursLocalBloom {
        options = options.extra_filter_policy(CacheLocalBloomPolicy::new(BITS_PER_KEY));
    }
    let table = Table::open(mmap::map(path)?, options)?;
    let want = match reader {
        Reader::OursLocalBloom => "leveltable.LocalBloom64",
        _ => "leveldb.BuiltinBloomFilter2",
    };
    if table.properties().filter_policy.as_deref() != Some(want) {
        return Err(format!("table opened with {:?}", table.properties().filter_policy).into());
    }
    Ok(table)
}

/// Data blocks LevelDB reads for `queries`, counted by the interop crate's LevelDB table,
/// whose file counts every read.
fn leveldb_blocks(path: &Path, queries: Records<'_>) -> Result<u64> {
    use leveltable_interop::table::{Table, TableOptions};
    let options = TableOptions {
        bloom_bits_per_key: BITS_PER_KEY as u32,
        ..TableOptions::default()
    };
    let table = Table::open_file(path, &options)?;
    let mut reads = 0;
    for q in queries.iter() {
        reads += u64::from(table.lookup(q, false)?.block_read);
    }
    Ok(reads)
}

fn measure(
    config: &Config,
    path: &Path,
    reader: Reader,
    queries: Records<'_>,
    expected: u64,
) -> Result<Outcome> {
    let n = queries.count() as f64;
    let mut best = Duration::MAX;
    let mut blocks = 0;
    for _ in 0..config.rounds.max(1) {
        let (elapsed, found) = match reader {
            Reader::LevelDb => {
                let mut table = leveldb::Table::open(path, BITS_PER_KEY, 0)?;
                let start = std::time::Instant::now();
                let (found, _) = table.gets(queries, false)?;
                (start.elapsed(), found)
            }
            _ => {
                let table = open_ours(path, reader)?;
                let mut value = Vec::new();
                let start = std::time::Instant::now();
                let mut found = 0u64;
                for q in queries.iter() {
                    let hit = table.get_with(q, |v| {
                        value.clear();
                        value.extend_from_slice(v);
                    })?;
                    found += u64::from(hit.is_some());
                }
                let elapsed = start.elapsed();
                blocks = table.counters().data_blocks_read;
                (elapsed, found)
            }
        };
        if found != expected {
            return Err(format!("{}: found {found} of {expected}", reader.label()).into());
        }
        best = best.min(elapsed);
    }
    if reader == Reader::LevelDb {
        blocks = leveldb_blocks(path, queries)?;
    }
    Ok(Outcome {
        blocks_per_get: blocks as f64 / n,
        ns_per_get: best.as_secs_f64() * 1e9 / n,
    })
}

/// Runs the comparison and renders its section.
///
/// # Errors
///
/// From building or reading the tables, or a wrong answer.
pub fn run(config: &Config) -> Result<String> {
    let mut rows = Vec::new();
    for shape in [KeyShape::BigEndianU64, KeyShape::Decimal] {
        let entries = Entries::new(config.entries, shape);
        let path = config.dir.join(format!("filters-{}.ldb", shape.name()));
        {
            let options = BuildOptions::default()
                .compression(Compression::Snappy)
                .filter_policy(BloomFilterPolicy::new(BITS_PER_KEY))
                .extra_filter_policy(CacheLocalBloomPolicy::new(BITS_PER_KEY));
            let file = std::io::BufWriter::new(std::fs::File::create(&path)?);
            let mut builder = leveltable_table::TableBuilder::new(file, options)?;
            for (k, v) in entries.keys().iter().zip(entries.values().iter()) {
                builder.add(k, v)?;
            }
            builder.finish()?;
            std::io::Write::flush(&mut builder.into_inner())?;
        }
        let absent = shaped_queries(&get_query_ids(config.entries, config.queries, false), shape);
        let present = shaped_queries(&get_query_ids(config.entries, config.queries, true), shape);
        let key_len = entries.key_len;
        let absent = Records::new(&absent, key_len);
        let present = Records::new(&present, key_len);
        let mut leveldb_ns = None;
        for reader in Reader::ALL {
            if reader == Reader::LevelDb && !leveldb::available() {
                continue;
            }
            let a = measure(config, &path, reader, absent, 0)?;
            let p = measure(config, &path, reader, present, present.count() as u64)?;
            if reader == Reader::LevelDb {
                leveldb_ns = Some(a.ns_per_get);
            }
            rows.push(vec![
                shape.name().to_string(),
                reader.label().to_string(),
                format!("{:.4}", a.blocks_per_get),
                format!("{:.4}", p.blocks_per_get),
                format!("{:.2}%", 100.0 * a.blocks_per_get / p.blocks_per_get),
                format!("{:.0}", a.ns_per_get),
                leveldb_ns.map_or("—".into(), |l| format!("{:.2}×", a.ns_per_get / l)),
                format!("{:.0}", p.ns_per_get),
            ]);
        }
        let _ = std::fs::remove_file(&path);
    }
    let mut out = format!(
        "Absent-key gets on structured keys ({} entries, keys 2i; {} absent queries 2i+1 and {} present 2i; snappy; both filters at {BITS_PER_KEY} bits/key in one table; best of {}):\n\n",
        count(config.entries),
        count(config.queries as u64),
        count(config.queries as u64),
        config.rounds
    );
    out.push_str(&render_markdown(
        &[
            "keys",
            "reader and filter",
            "absent: blocks/get",
            "present: blocks/get",
            "absent/present blocks",
            "absent: ns/get",
            "absent ns vs LevelDB",
            "present: ns/get",
        ],
        &rows,
    ));
    Ok(out)
}
