//! The comparison runner: every workload on every system that supports it, interleaved
//! round by round, best of N.
//!
//! Each measurement times only the workload's loop; setup (generating inputs, opening a
//! table with a fresh cache) happens before the clock starts, on every system alike. Every
//! loop checks its answers (entries found, filter hits) against the others, so a figure
//! never comes from a loop that did less work.

use std::error::Error;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use leveltable_filter_block::{FilterBlockBuilder, FilterBlockReader};
use leveltable_filter_policy::{BloomFilterPolicy, FilterPolicy};
use leveltable_hash::{BLOOM_SEED, hash};
use leveltable_table::{BuildOptions, Cache, Compression, ReadOptions, Table, TableBuilder};

use crate::leveldb::{self, Records};
use crate::mmap;
use crate::report::{Row, System, Target, Unit};
use crate::workload::{
    KEY_LEN, KeyShape, VALUE_LEN, bloom_query_ids, get_query_ids, hash_input, key, table_entries,
};

/// Errors from any system.
pub type BoxError = Box<dyn Error + Send + Sync>;
/// Result of a workload.
pub type Result<T> = std::result::Result<T, BoxError>;

/// Bloom filter bits per key everywhere.
pub const BITS_PER_KEY: usize = 10;
/// Keys per filter in the Bloom create workload.
pub const CREATE_BATCH: usize = 1000;
/// The block cache of the cached get workloads: 8 MiB.
pub const CACHE_BYTES: usize = 8 << 20;
/// Keys per data block in the filter block workload: the uncompressed benchmark table holds
/// 1,000,000 entries in 25,642 blocks (39 keys a block).
pub const FILTER_BLOCK_KEYS: usize = 39;
/// Bytes from one data block to the next in the filter block workload; the uncompressed
/// benchmark table's blocks lie 4,130 bytes apart on average (trailers included), so the
/// two layouts put the same number of blocks in each 2 KiB filter range.
pub const FILTER_BLOCK_STRIDE: u64 = 4153;

/// Sizes of the workloads. [`Config::standard`] is the published one.
#[derive(Debug, Clone)]
pub struct Config {
    /// Entries in the benchmark tables.
    pub entries: u64,
    /// Queries per get workload.
    pub queries: usize,
    /// Keys in the Bloom match filter (and its query count).
    pub filter_keys: u64,
    /// Keys in the Bloom create workload, filtered in batches of [`CREATE_BATCH`].
    pub create_keys: u64,
    /// Times the 1 MiB hash input is hashed per measurement.
    pub hash_repeat: usize,
    /// Measurements per system per workload; the best is reported.
    pub rounds: usize,
    /// Input bytes (keys + values) of the table the memory workload builds.
    pub mem_bytes: u64,
    /// Directory for table files.
    pub dir: PathBuf,
}

impl Config {
    /// The published workloads, with table files under `dir`.
    pub fn standard(dir: PathBuf) -> Config {
        Config {
            entries: 1_000_000,
            queries: 200_000,
            filter_keys: 1_000_000,
            create_keys: 1_000_000,
            hash_repeat: 64,
            rounds: 3,
            mem_bytes: 2_000_000_000,
            dir,
        }
    }

    /// Tiny sizes that exercise every path in a second (tests).
    pub fn smoke(dir: PathBuf) -> Config {
        Config {
            entries: 5_000,
            queries: 2_000,
            filter_keys: 5_000,
            create_keys: 5_000,
            hash_repeat: 1,
            rounds: 1,
            mem_bytes: 2_000_000,
            dir,
        }
    }
}

/// One timed run: how long, and how much work (operations or bytes).
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// Time of the loop.
    pub elapsed: Duration,
    /// Operations or bytes done.
    pub work: f64,
}

type Job<'a> = Box<dyn FnMut() -> Result<Sample> + 'a>;

/// One figure per system, indexed by [`System::index`].
pub type Figures = [Option<f64>; 4];

/// Runs each job `rounds` times, interleaving systems within each round, and keeps each
/// system's best figure.
fn best_of(rounds: usize, unit: Unit, jobs: &mut [(System, Job<'_>)]) -> Result<[Option<f64>; 4]> {
    let mut best: [Option<f64>; 4] = [None; 4];
    for _ in 0..rounds.max(1) {
        for (system, job) in jobs.iter_mut() {
            let sample = job()?;
            let value = unit.figure(sample.elapsed, sample.work);
            let slot = &mut best[system.index()];
            if slot.is_none_or(|b| unit.better(value, b)) {
                *slot = Some(value);
            }
        }
    }
    Ok(best)
}

/// Like [`best_of`] for two job sets measured in the same rounds: in each round, each
/// system runs its jobs in the order `a b b a`, so both figures share the machine's
/// conditions and neither side always profits from what the other left warm.
fn best_of_paired<'j>(
    rounds: usize,
    unit: Unit,
    a: &mut [(System, Job<'j>)],
    b: &mut [(System, Job<'j>)],
) -> Result<(Figures, Figures)> {
    let mut best: [Figures; 2] = [[None; 4]; 2];
    for _ in 0..rounds.max(1) {
        for ((system, job_a), (system_b, job_b)) in a.iter_mut().zip(b.iter_mut()) {
            debug_assert_eq!(system, system_b);
            for side in [0, 1, 1, 0] {
                let job = if side == 0 { &mut *job_a } else { &mut *job_b };
                let sample = job()?;
                let value = unit.figure(sample.elapsed, sample.work);
                let slot = &mut best[side][system.index()];
                if slot.is_none_or(|b| unit.better(value, b)) {
                    *slot = Some(value);
                }
            }
        }
    }
    Ok((best[0], best[1]))
}

fn timed<T>(f: impl FnOnce() -> Result<T>) -> Result<(Duration, T)> {
    let start = Instant::now();
    let out = f()?;
    Ok((start.elapsed(), out))
}

fn check(ok: bool, what: impl FnOnce() -> String) -> Result<()> {
    if ok { Ok(()) } else { Err(what().into()) }
}

fn peer_error(e: impl std::fmt::Debug) -> BoxError {
    format!("{e:?}").into()
}

/// LevelDB's loops are in this build.
fn leveldb_on() -> bool {
    leveldb::available()
}

/// Keys of a shape and the table values, as fixed-length records.
#[derive(Debug)]
pub struct Entries {
    /// Keys, ascending.
    pub keys: Vec<u8>,
    /// Key length.
    pub key_len: usize,
    /// Values, `VALUE_LEN` bytes each.
    pub values: Vec<u8>,
}

impl Entries {
    /// The benchmark table's `n` entries with keys `2i` of `shape`.
    ///
    /// # Panics
    ///
    /// For a shape without a fixed length.
    pub fn new(n: u64, shape: KeyShape) -> Entries {
        let key_len = shape.fixed_len().expect("bench: fixed-length keys");
        let mut keys = Vec::with_capacity(n as usize * key_len);
        let mut values = Vec::with_capacity(n as usize * VALUE_LEN);
        let mut buf = Vec::new();
        for (i, (_, value)) in table_entries(n).enumerate() {
            shape.key_into(2 * i as u64, &mut buf);
            keys.extend_from_slice(&buf);
            values.extend_from_slice(&value);
        }
        Entries {
            keys,
            key_len,
            values,
        }
    }

    /// The keys.
    pub fn keys(&self) -> Records<'_> {
        Records::new(&self.keys, self.key_len)
    }

    /// The values.
    pub fn values(&self) -> Records<'_> {
        Records::new(&self.values, VALUE_LEN)
    }

    /// Key plus value bytes.
    pub fn raw_bytes(&self) -> u64 {
        (self.keys.len() + self.values.len()) as u64
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.keys.len() / self.key_len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// Query keys of `shape` for the numbers `ids`, as records.
pub fn shaped_queries(ids: &[u64], shape: KeyShape) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = Vec::new();
    for &j in ids {
        shape.key_into(j, &mut buf);
        out.extend_from_slice(&buf);
    }
    out
}

fn sstable_options(
    compression: Compression,
    filter: bool,
    cache_blocks: usize,
) -> sstable::Options {
    let mut opt = sstable::Options::default().with_cache_capacity(cache_blocks.max(1));
    opt.compression_type = match compression {
        Compression::None => sstable::CompressionType::CompressionNone,
        _ => sstable::CompressionType::CompressionSnappy,
    };
    opt.filter_policy = if filter {
        Arc::new(Box::new(sstable::filter::BloomPolicy::new(
            BITS_PER_KEY as u32,
        )))
    } else {
        Arc::new(Box::new(sstable::filter::NoFilterPolicy::new()))
    };
    opt
}

fn build_options(compression: Compression) -> BuildOptions {
    BuildOptions::default()
        .compression(compression)
        .filter_policy(BloomFilterPolicy::new(BITS_PER_KEY))
}

/// Builds a leveltable table at `path`.
fn build_ours(path: &Path, entries: &Entries, options: BuildOptions) -> Result<u64> {
    let file = BufWriter::with_capacity(1 << 16, File::create(path)?);
    let mut builder = TableBuilder::new(file, options)?;
    for (k, v) in entries.keys().iter().zip(entries.values().iter()) {
        builder.add(k, v)?;
    }
    builder.finish()?;
    let size = builder.file_size();
    builder.into_inner().flush()?;
    Ok(size)
}

fn build_leveldb(path: &Path, entries: &Entries, snappy: bool) -> Result<u64> {
    let mut builder = leveldb::TableBuilder::create(path, snappy, BITS_PER_KEY)?;
    builder.add(entries.keys(), entries.values())?;
    Ok(builder.finish()?)
}

fn build_sstable(path: &Path, entries: &Entries, compression: Compression) -> Result<u64> {
    let file = BufWriter::with_capacity(1 << 16, File::create(path)?);
    let mut builder = sstable::TableBuilder::new(sstable_options(compression, true, 1), file);
    for (k, v) in entries.keys().iter().zip(entries.values().iter()) {
        builder.add(k, v).map_err(peer_error)?;
    }
    Ok(builder.finish().map_err(peer_error)? as u64)
}

/// Opens a leveltable table over a map of `path`, without checksums unless asked, with the
/// LevelDB Bloom filter if `filter`.
fn open_ours(
    path: &Path,
    filter: bool,
    cache: Option<Arc<Cache>>,
    verify: bool,
) -> Result<Table<memmap2::Mmap>> {
    let mut options = ReadOptions::default().verify_checksums(verify);
    if filter {
        options = options.filter_policy(BloomFilterPolicy::new(BITS_PER_KEY));
    }
    if let Some(cache) = cache {
        options = options.block_cache(cache);
    }
    Ok(Table::open(mmap::map(path)?, options)?)
}

/// Gets through leveltable; returns the number found.
///
/// Never inlined, so that profilers (`valgrind --tool=callgrind`) can attribute the loop,
/// as they attribute LevelDB's `ltb_table_gets`. Values are copied into one reused
/// buffer, as LevelDB's loop copies them into one reused string.
#[inline(never)]
fn ours_gets<R: leveltable_table::ReadAt>(table: &Table<R>, queries: Records<'_>) -> Result<u64> {
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

/// Scans a leveltable table; returns (entries, key + value bytes). Never inlined, like
/// [`ours_gets`].
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

/// All results of one run of the runner.
#[derive(Debug, Default)]
pub struct Results {
    /// The main comparison table.
    pub rows: Vec<Row>,
    /// Rendered extra sections (filters, memory), in order.
    pub sections: Vec<String>,
    /// What checksums cost each system.
    pub checksum_costs: Vec<ChecksumCost>,
}

/// The table files shared by the read workloads, built once per run (untimed), with snappy
/// and without compression.
struct Fixture {
    entries: Entries,
    /// The tables ours and LevelDB read: written by LevelDB when it is in the build, else by
    /// leveltable. Snappy, then uncompressed.
    shared: [PathBuf; 2],
    /// sstable's own tables, likewise.
    sstable: [PathBuf; 2],
}

impl Fixture {
    fn new(config: &Config) -> Result<Fixture> {
        let entries = Entries::new(config.entries, KeyShape::Decimal);
        let mut shared = Vec::new();
        let mut sst = Vec::new();
        for compression in [Compression::Snappy, Compression::None] {
            let label = compression_label(compression);
            let path = config.dir.join(format!("read-shared-{label}.ldb"));
            if leveldb_on() {
                build_leveldb(&path, &entries, compression == Compression::Snappy)?;
            } else {
                build_ours(&path, &entries, build_options(compression))?;
            }
            shared.push(path);
            let path = config.dir.join(format!("read-sstable-{label}.ldb"));
            build_sstable(&path, &entries, compression)?;
            sst.push(path);
        }
        Ok(Fixture {
            entries,
            shared: shared.try_into().expect("two compressions"),
            sstable: sst.try_into().expect("two compressions"),
        })
    }

    /// (the table ours and LevelDB read, sstable's table) for `compression`.
    fn paths(&self, compression: Compression) -> (&Path, &Path) {
        let i = usize::from(compression == Compression::None);
        (&self.shared[i], &self.sstable[i])
    }
}

fn compression_label(compression: Compression) -> &'static str {
    if compression == Compression::None {
        "uncompressed"
    } else {
        "snappy"
    }
}

/// The runner's workloads, by command-line name.
pub const WORKLOADS: [&str; 9] = [
    "hash",
    "bloom",
    "filter-block",
    "build",
    "get",
    "scan",
    "checksum",
    "filters",
    "memory",
];

/// Runs the named workloads (see [`WORKLOADS`]) and collects their results. `exe` is the
/// runner binary, which the memory workload starts as a child process.
///
/// # Errors
///
/// An error from any system, or a system giving a wrong answer.
pub fn run(config: &Config, names: &[&str], exe: Option<&Path>) -> Result<Results> {
    let mut results = Results::default();
    let mut fixture: Option<Fixture> = None;
    for &name in names {
        eprintln!("running {name} ...");
        let needs_fixture = matches!(name, "get" | "scan" | "checksum");
        if needs_fixture && fixture.is_none() {
            fixture = Some(Fixture::new(config)?);
        }
        match name {
            "hash" => results.rows.extend(hash_rows(config)?),
            "bloom" => results.rows.extend(bloom_rows(config)?),
            "filter-block" => results.rows.extend(filter_block_rows(config)?),
            "build" => results.rows.extend(build_rows(config)?),
            "get" => results
                .rows
                .extend(get_rows(config, fixture.as_ref().expect("built above"))?),
            "scan" => {
                let f = fixture.as_ref().expect("built above");
                for compression in [Compression::Snappy, Compression::None] {
                    results
                        .rows
                        .extend(scan_rows(config, f, compression, false)?);
                }
            }
            "checksum" => {
                let f = fixture.as_ref().expect("built above");
                let (rows, costs) = checksum_rows(config, f)?;
                results.rows.extend(rows);
                results.checksum_costs.extend(costs);
            }
            "filters" => results.sections.push(crate::filters::run(config)?),
            "memory" => results.sections.push(crate::memory::run(
                config,
                exe.ok_or("memory needs the runner binary")?,
            )?),
            other => return Err(format!("unknown workload {other:?}").into()),
        }
    }
    Ok(results)
}

fn hash_rows(config: &Config) -> Result<Vec<Row>> {
    let input = hash_input(1 << 20);
    let mut rows = Vec::new();
    for len in [16usize, 1024] {
        let bytes = (input.len() / len * len * config.hash_repeat) as f64;
        // Hashing the input `hash_repeat` times XORs each pass's result in: an even number
        // of passes cancels out.
        let expected = if config.hash_repeat % 2 == 0 {
            0
        } else {
            input
                .chunks_exact(len)
                .fold(0, |a, s| a ^ hash(s, BLOOM_SEED))
        };
        let mut jobs: Vec<(System, Job<'_>)> = vec![(
            System::Leveltable,
            Box::new(|| {
                let (elapsed, acc) = timed(|| {
                    let mut acc = 0u32;
                    for _ in 0..config.hash_repeat {
                        for s in std::hint::black_box(&input[..]).chunks_exact(len) {
                            acc ^= hash(s, BLOOM_SEED);
                        }
                    }
                    Ok(acc)
                })?;
                check(acc == expected, || format!("hash {len}: {acc:#x}"))?;
                Ok(Sample {
                    elapsed,
                    work: bytes,
                })
            }),
        )];
        if leveldb_on() {
            jobs.push((
                System::LevelDb,
                Box::new(|| {
                    let (elapsed, acc) = timed(|| {
                        let mut acc = 0u32;
                        for _ in 0..config.hash_repeat {
                            acc ^= leveldb::hash_slices(
                                std::hint::black_box(&input),
                                len,
                                BLOOM_SEED,
                            )?;
                        }
                        Ok(acc)
                    })?;
                    check(acc == expected, || {
                        format!("hash {len}: LevelDB {acc:#x}, leveltable {expected:#x}")
                    })?;
                    Ok(Sample {
                        elapsed,
                        work: bytes,
                    })
                }),
            ));
        }
        let figures = best_of(config.rounds, Unit::MbPerSec, &mut jobs)?;
        rows.push(Row {
            workload: format!("hash, {len} B slices of 1 MiB"),
            unit: Unit::MbPerSec,
            figures,
            target: Target::ThroughputAtLeast(1.0),
        });
    }
    Ok(rows)
}

/// Keys and offsets in the layout the peers' `create_filter` takes.
fn peer_offsets(n: usize, key_len: usize) -> Vec<usize> {
    (0..n).map(|i| i * key_len).collect()
}

fn bloom_rows(config: &Config) -> Result<Vec<Row>> {
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
            target: Target::TimeAtMost(0.5),
        },
        Row {
            workload: format!(
                "Bloom match, {}-key filter, {} queries, leveltable's batch query",
                count(config.filter_keys),
                count(config.filter_keys)
            ),
            unit: Unit::NsPerOp,
            figures: matched_batch,
            target: Target::TimeAtMost(0.5),
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

/// `1000000` as `1M`, `5000` as `5k`.
pub fn count(n: u64) -> String {
    if n >= 1_000_000 && n % 1_000_000 == 0 {
        format!("{}M", n / 1_000_000)
    } else if n >= 1000 && n % 1000 == 0 {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}

fn filter_block_rows(config: &Config) -> Result<Vec<Row>> {
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
            target: Target::None,
        },
    ])
}

fn build_rows(config: &Config) -> Result<Vec<Row>> {
    let entries = Entries::new(config.entries, KeyShape::Decimal);
    let raw = entries.raw_bytes() as f64;
    let mut rows = Vec::new();
    for (compression, label) in [(Compression::Snappy, "snappy"), (Compression::None, "none")] {
        let snappy = compression == Compression::Snappy;
        let ours_path = config.dir.join(format!("build-ours-{label}.ldb"));
        let ldb_path = config.dir.join(format!("build-leveldb-{label}.ldb"));
        let sst_path = config.dir.join(format!("build-sstable-{label}.ldb"));
        let mut ours_size = 0;
        let mut jobs: Vec<(System, Job<'_>)> = vec![(
            System::Leveltable,
            Box::new(|| {
                let (elapsed, size) =
                    timed(|| build_ours(&ours_path, &entries, build_options(compression)))?;
                ours_size = size;
                Ok(Sample { elapsed, work: raw })
            }),
        )];
        if leveldb_on() {
            jobs.push((
                System::LevelDb,
                Box::new(|| {
                    let (elapsed, _) = timed(|| build_leveldb(&ldb_path, &entries, snappy))?;
                    Ok(Sample { elapsed, work: raw })
                }),
            ));
        }
        jobs.push((
            System::Sstable,
            Box::new(|| {
                let (elapsed, _) = timed(|| build_sstable(&sst_path, &entries, compression))?;
                Ok(Sample { elapsed, work: raw })
            }),
        ));
        let figures = best_of(config.rounds, Unit::MbPerSec, &mut jobs)?;
        drop(jobs);
        if !snappy && leveldb_on() {
            // Without compression the two builders write the same bytes.
            check(
                std::fs::read(&ours_path)? == std::fs::read(&ldb_path)?,
                || "uncompressed tables differ from LevelDB's".into(),
            )?;
        }
        check(ours_size > 0, || "empty table".into())?;
        for p in [&ours_path, &ldb_path, &sst_path] {
            let _ = std::fs::remove_file(p);
        }
        rows.push(Row {
            workload: format!("table build, {label}, 10-bit Bloom (input bytes)"),
            unit: Unit::MbPerSec,
            figures,
            target: Target::ThroughputAtLeast(1.5),
        });
    }
    Ok(rows)
}

fn get_rows(config: &Config, fixture: &Fixture) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let target = |present: bool, filter: bool| match (present, filter) {
        (true, _) => Target::TimeAtMost(0.7),
        (false, true) => Target::TimeAtMost(0.5),
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
                rows.push(Row {
                    workload: name(present, filter, cached),
                    unit: Unit::NsPerOp,
                    figures: get_figures(config, fixture, case)?,
                    target: target(present, filter),
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
            compression: Compression::None,
        };
        rows.push(Row {
            workload: format!("{}, uncompressed", name(present, true, false)),
            unit: Unit::NsPerOp,
            figures: get_figures(config, fixture, case)?,
            target: target(present, true),
        });
    }
    Ok(rows)
}

/// One get workload.
#[derive(Debug, Clone, Copy)]
struct GetCase {
    present: bool,
    filter: bool,
    cached: bool,
    verify: bool,
    compression: Compression,
}

fn get_figures(config: &Config, fixture: &Fixture, case: GetCase) -> Result<[Option<f64>; 4]> {
    let queries = get_query_keys(config, case.present);
    let mut jobs = get_jobs(fixture, case, Records::new(&queries, KEY_LEN));
    best_of(config.rounds, Unit::NsPerOp, &mut jobs)
}

fn get_query_keys(config: &Config, present: bool) -> Vec<u8> {
    get_query_ids(config.entries, config.queries, present)
        .into_iter()
        .flat_map(key)
        .collect()
}

/// One job per system running the gets of `case` over `queries`.
fn get_jobs<'a>(
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

fn scan_rows(
    config: &Config,
    fixture: &Fixture,
    compression: Compression,
    verify: bool,
) -> Result<Vec<Row>> {
    let mut jobs = scan_jobs(fixture, compression, verify);
    let figures = best_of(config.rounds, Unit::MbPerSec, &mut jobs)?;
    Ok(vec![scan_row(compression, verify, figures)])
}

fn scan_row(compression: Compression, verify: bool, figures: [Option<f64>; 4]) -> Row {
    Row {
        workload: format!(
            "scan, {}{} (key + value bytes)",
            compression_label(compression),
            if verify { ", checksums on" } else { "" }
        ),
        unit: Unit::MbPerSec,
        figures,
        target: if verify {
            Target::None
        } else {
            Target::ThroughputAtLeast(1.5)
        },
    }
}

/// One job per system scanning the table of `compression`.
fn scan_jobs(fixture: &Fixture, compression: Compression, verify: bool) -> Vec<(System, Job<'_>)> {
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

/// Gets of present keys and snappy scans with checksums off and on, measured in the same
/// rounds. Returns the "checksums on" rows and each system's cost: checked time over
/// unchecked time.
fn checksum_rows(config: &Config, fixture: &Fixture) -> Result<(Vec<Row>, Vec<ChecksumCost>)> {
    let mut costs = Vec::new();
    let mut record = |label: &str, unit: Unit, off: &[Option<f64>; 4], on: &[Option<f64>; 4]| {
        for system in [System::Leveltable, System::LevelDb] {
            if let (Some(a), Some(b)) = (off[system.index()], on[system.index()]) {
                costs.push(ChecksumCost {
                    workload: label.to_string(),
                    system,
                    unchecked: a,
                    checked: b,
                    ratio: unit.speedup(a, b),
                });
            }
        }
    };
    let case = GetCase {
        present: true,
        filter: true,
        cached: false,
        verify: false,
        compression: Compression::Snappy,
    };
    let queries = get_query_keys(config, true);
    let queries = Records::new(&queries, KEY_LEN);
    let mut off = get_jobs(fixture, case, queries);
    let mut on = get_jobs(
        fixture,
        GetCase {
            verify: true,
            ..case
        },
        queries,
    );
    let (get_off, get_on) = best_of_paired(config.rounds, Unit::NsPerOp, &mut off, &mut on)?;
    record(
        "get present, Bloom filter, no cache, snappy",
        Unit::NsPerOp,
        &get_off,
        &get_on,
    );
    drop((off, on));
    let mut off = scan_jobs(fixture, Compression::Snappy, false);
    let mut on = scan_jobs(fixture, Compression::Snappy, true);
    let (scan_off, scan_on) = best_of_paired(config.rounds, Unit::MbPerSec, &mut off, &mut on)?;
    record("scan, snappy", Unit::MbPerSec, &scan_off, &scan_on);
    let rows = vec![
        Row {
            workload: "get present, Bloom filter, no cache, checksums on".into(),
            unit: Unit::NsPerOp,
            figures: get_on,
            target: Target::TimeAtMost(0.7),
        },
        scan_row(Compression::Snappy, true, scan_on),
    ];
    Ok((rows, costs))
}

/// The cost of verifying checksums on one workload for one system, from figures measured
/// in the same rounds.
#[derive(Debug, Clone, PartialEq)]
pub struct ChecksumCost {
    /// Workload.
    pub workload: String,
    /// System.
    pub system: System,
    /// Figure with checksums off.
    pub unchecked: f64,
    /// Figure with checksums on.
    pub checked: f64,
    /// Checked time over unchecked time.
    pub ratio: f64,
}

/// At most this checked-over-unchecked time for leveltable.
pub const CHECKSUM_COST_TARGET: f64 = 1.2;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_naturally() {
        assert_eq!(count(1_000_000), "1M");
        assert_eq!(count(5000), "5k");
        assert_eq!(count(1234), "1234");
    }

    #[test]
    fn entries_are_the_workload_table() {
        let e = Entries::new(3, KeyShape::BigEndianU64);
        assert_eq!(e.len(), 3);
        assert_eq!(e.keys().iter().nth(2), Some(&[0, 0, 0, 0, 0, 0, 0, 4][..]));
        assert_eq!(e.raw_bytes(), 3 * (8 + 100));
    }

    #[test]
    fn best_of_keeps_the_best_figure_per_system() {
        let mut calls = 0;
        let mut jobs: Vec<(System, Job<'_>)> = vec![(
            System::Sstable,
            Box::new(|| {
                calls += 1;
                Ok(Sample {
                    elapsed: Duration::from_millis(10 * calls),
                    work: 1e6,
                })
            }),
        )];
        let best = best_of(3, Unit::NsPerOp, &mut jobs).unwrap();
        assert_eq!(best[System::Sstable.index()], Some(10.0));
        assert_eq!(best[System::Leveltable.index()], None);
    }
}
