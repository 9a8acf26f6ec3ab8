//! `leveltable_table` against LevelDB 1.23's own table builder and reader:
//!
//! - without compression, both builders write byte-identical files;
//! - with snappy (and without compression), each side reads the other's tables (and its
//!   own) with the same entries forwards and backwards, the same gets, seeks and
//!   approximate offsets, and the same read-or-skip decision for every absent key;
//! - a byte flipped inside a data block is rejected by both sides, for exactly the lookups
//!   that read that block, and the intact table is accepted by both.
//!
//! Each property runs `PROPTEST_CASES` cases (256 by default); large keys and values appear
//! in a fraction of the cases only, so the file stays fast in a debug build.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use common::hex;
use leveltable_interop::require_leveldb;
use leveltable_interop::table::{
    Compression as LdbCompression, KeyComparator, Table as LdbTable, TableBuilder as LdbBuilder,
    TableIter as LdbIter, TableOptions, read_block,
};
use leveltable_table::{
    BloomFilterPolicy, BuildOptions, Compression, Error as OurError, ReadOptions, Table,
    TableBuilder, TableIter,
};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestCaseError;

type Entries = BTreeMap<Vec<u8>, Vec<u8>>;
type Entry = (Vec<u8>, Vec<u8>);
type OurTable<'a> = Table<&'a [u8]>;

/// Keys never exceed this (a shared prefix plus a long tail is cut here).
const MAX_KEY: usize = 10 * 1024;
/// The rare big value: 64 KiB to 1 MiB.
const BIG_VALUE: std::ops::RangeInclusive<usize> = 64 * 1024..=1024 * 1024;
/// Present keys looked up per table (evenly spread, first and last always included); the
/// absent probes are derived from these.
const SAMPLED_KEYS: usize = 32;
/// A data block's trailer: 1 type byte + 4 bytes of masked crc32c.
const TRAILER_LEN: u64 = 5;

// ---------------------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------------------

/// How [`fill`] makes bytes.
#[derive(Debug, Clone, Copy)]
enum Fill {
    /// Incompressible.
    Random,
    /// Four letters at random: repeats snappy can find now and then.
    Letters,
    /// One byte repeated: snappy saves a lot.
    Byte(u8),
}

/// `len` bytes of `kind` from `seed` (xorshift64), so big keys and values shrink by length
/// and cost proptest nothing per byte.
fn fill(kind: Fill, len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 32) as u8
    };
    match kind {
        Fill::Random => (0..len).map(|_| next()).collect(),
        Fill::Letters => (0..len).map(|_| b"abcd"[usize::from(next() % 4)]).collect(),
        Fill::Byte(b) => vec![b; len],
    }
}

fn blob(len: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = Vec<u8>> {
    let kind = prop_oneof![
        Just(Fill::Random),
        Just(Fill::Letters),
        prop::sample::select(vec![0x00, 0xff, b'x']).prop_map(Fill::Byte),
    ];
    (len, any::<u64>(), kind).prop_map(|(len, seed, kind)| fill(kind, len, seed))
}

/// A key before the table's shared prefix is applied.
#[derive(Debug, Clone)]
enum KeyPart {
    /// Used as it is.
    Plain(Vec<u8>),
    /// Appended to the table's shared prefix.
    Prefixed(Vec<u8>),
}

fn key_part() -> impl Strategy<Value = KeyPart> {
    prop_oneof![
        4 => prop::collection::vec(any::<u8>(), 0..=12).prop_map(KeyPart::Plain),
        // Runs of the extreme bytes (the empty key included).
        3 => prop::collection::vec(prop::sample::select(vec![0x00, 0x01, 0xfe, 0xff]), 0..=6)
            .prop_map(KeyPart::Plain),
        4 => prop::collection::vec(any::<u8>(), 0..=6).prop_map(KeyPart::Prefixed),
        // Long keys, up to MAX_KEY.
        1 => blob(0..=MAX_KEY).prop_map(KeyPart::Prefixed),
    ]
}

/// The prefix the table's `Prefixed` keys share: short, or long (up to 300 bytes).
fn shared_prefix() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![prop::collection::vec(any::<u8>(), 0..=4), blob(0..=300),]
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        6 => prop::collection::vec(any::<u8>(), 0..=32),
        2 => blob(0..=2048),
    ]
}

fn entry_parts() -> impl Strategy<Value = Vec<(KeyPart, Vec<u8>)>> {
    let entry = || (key_part(), value());
    prop_oneof![
        1 => Just(Vec::new()),
        2 => prop::collection::vec(entry(), 1..=4),
        6 => prop::collection::vec(entry(), 0..=60),
        2 => prop::collection::vec(entry(), 60..=300),
    ]
}

/// Block size 1 B – 64 KiB, restart interval 1–32, Bloom bits 0–30 (0: no filter policy).
fn table_options(
    compression: BoxedStrategy<LdbCompression>,
) -> impl Strategy<Value = TableOptions> {
    (
        prop_oneof![
            3 => 1usize..=64,
            3 => 64usize..=4096,
            1 => 4096usize..=65536,
        ],
        1u32..=32,
        prop_oneof![1 => Just(0u32), 3 => 1u32..=30],
        compression,
    )
        .prop_map(
            |(block_size, block_restart_interval, bloom_bits_per_key, compression)| TableOptions {
                block_size,
                block_restart_interval,
                compression,
                bloom_bits_per_key,
                comparator: KeyComparator::Bytewise,
                // Verify the index, metaindex and filter blocks when LevelDB opens a table.
                paranoid_checks: true,
            },
        )
}

/// One table's worth of input.
#[derive(Clone)]
struct Case {
    options: TableOptions,
    entries: Entries,
    /// Random extra lookup and seek keys.
    probes: Vec<Vec<u8>>,
}

/// Keys and values in short form: a failing case with a 1 MiB value stays readable.
fn show(bytes: &[u8]) -> String {
    if bytes.len() <= 24 {
        hex(bytes)
    } else {
        format!("{}..({} bytes)", hex(&bytes[..12]), bytes.len())
    }
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{:?}", self.options)?;
        writeln!(f, "{} entries:", self.entries.len())?;
        for (k, v) in &self.entries {
            writeln!(f, "  {} => {}", show(k), show(v))?;
        }
        let probes: Vec<String> = self.probes.iter().map(|p| show(p)).collect();
        write!(f, "probes: {probes:?}")
    }
}

fn case(compression: BoxedStrategy<LdbCompression>) -> impl Strategy<Value = Case> {
    (
        table_options(compression),
        shared_prefix(),
        entry_parts(),
        prop::option::weighted(0.03, (any::<Index>(), blob(BIG_VALUE))),
        prop::collection::vec(key_part(), 0..=6),
    )
        .prop_map(|(options, prefix, parts, big, probes)| {
            let key = |part: KeyPart| match part {
                KeyPart::Plain(k) => k,
                KeyPart::Prefixed(tail) => {
                    let mut k = prefix.clone();
                    k.extend(tail);
                    k.truncate(MAX_KEY);
                    k
                }
            };
            let mut entries: Entries = parts.into_iter().map(|(k, v)| (key(k), v)).collect();
            if let Some((at, value)) = big {
                if let Some(k) = entries.keys().nth(at.index(entries.len().max(1))).cloned() {
                    entries.insert(k, value);
                }
            }
            Case {
                options,
                entries,
                probes: probes.into_iter().map(key).collect(),
            }
        })
}

fn snappy_mostly() -> BoxedStrategy<LdbCompression> {
    prop_oneof![3 => Just(LdbCompression::Snappy), 1 => Just(LdbCompression::None)].boxed()
}

// ---------------------------------------------------------------------------------------
// Both sides
// ---------------------------------------------------------------------------------------

fn leveldb_build(options: &TableOptions, entries: &Entries) -> Vec<u8> {
    let mut builder = LdbBuilder::new(options).expect("leveldb builder");
    for (k, v) in entries {
        builder.add(k, v).expect("leveldb add");
    }
    builder.finish().expect("leveldb finish")
}

fn our_build(options: &TableOptions, entries: &Entries) -> Vec<u8> {
    let mut build = BuildOptions::default()
        .block_size(options.block_size)
        .block_restart_interval(options.block_restart_interval as usize)
        .compression(match options.compression {
            LdbCompression::None => Compression::None,
            LdbCompression::Snappy => Compression::Snappy,
        });
    if options.bloom_bits_per_key > 0 {
        build = build.filter_policy(BloomFilterPolicy::new(options.bloom_bits_per_key as usize));
    }
    let mut builder = TableBuilder::new(Vec::new(), build).expect("our builder");
    for (k, v) in entries {
        builder.add(k, v).expect("our add");
    }
    let summary = builder.finish().expect("our finish");
    let file = builder.into_inner();
    assert_eq!(summary.file_size, file.len() as u64);
    assert_eq!(summary.entries, entries.len() as u64);
    file
}

/// Our reader with the filter policy LevelDB is given, checksums verified (our default).
fn our_read_options(options: &TableOptions) -> ReadOptions {
    let read = ReadOptions::default();
    if options.bloom_bits_per_key > 0 {
        read.filter_policy(BloomFilterPolicy::new(options.bloom_bits_per_key as usize))
    } else {
        read
    }
}

fn our_entry<'a>(it: &'a TableIter<'_, &[u8]>) -> Option<(&'a [u8], &'a [u8])> {
    it.valid().then(|| (it.key(), it.value()))
}

fn fail(message: String) -> TestCaseError {
    TestCaseError::fail(message)
}

/// Equal sequences of entries, or a message naming the first difference.
fn same_entries(what: &str, got: &[Entry], want: &[Entry]) -> Result<(), TestCaseError> {
    if let Some(i) = (0..got.len().min(want.len())).find(|&i| got[i] != want[i]) {
        return Err(fail(format!(
            "{what}: entry {i} is {} => {}, expected {} => {}",
            show(&got[i].0),
            show(&got[i].1),
            show(&want[i].0),
            show(&want[i].1)
        )));
    }
    if got.len() != want.len() {
        return Err(fail(format!(
            "{what}: {} entries, expected {}",
            got.len(),
            want.len()
        )));
    }
    Ok(())
}

fn show_entry(e: Option<(&[u8], &[u8])>) -> String {
    e.map_or_else(
        || "none".into(),
        |(k, v)| format!("{} => {}", show(k), show(v)),
    )
}

/// Lookup keys: a sample of the present keys, and absent keys around them — just after
/// (`k+00`, `k+ff`), just before (`k` shortened, last byte lowered then `ff`s), the next
/// byte string up (last byte raised), LevelDB's short successor of `k` and just past it —
/// plus the empty key, a run of `ff`, and the case's random probes.
fn probe_keys(case: &Case) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let keys: Vec<&Vec<u8>> = case.entries.keys().collect();
    let step = keys.len().div_ceil(SAMPLED_KEYS).max(1);
    let mut sampled: BTreeSet<&Vec<u8>> = keys.iter().step_by(step).copied().collect();
    sampled.extend(keys.last());

    let mut candidates: BTreeSet<Vec<u8>> = case.probes.iter().cloned().collect();
    candidates.extend([vec![], vec![0x00], vec![0xff; 16]]);
    for &k in &sampled {
        candidates.insert([k.as_slice(), &[0x00]].concat());
        candidates.insert([k.as_slice(), &[0xff]].concat());
        if let Some((&last, init)) = k.split_last() {
            candidates.insert(init.to_vec());
            if last < 0xff {
                candidates.insert([init, &[last + 1]].concat());
            }
            if last > 0 {
                candidates.insert([init, &[last - 1, 0xff, 0xff]].concat());
            }
        }
        if let Some(i) = k.iter().position(|&b| b != 0xff) {
            let mut successor = k[..=i].to_vec();
            successor[i] += 1;
            candidates.insert([successor.as_slice(), &[0x00]].concat());
            candidates.insert(successor);
        }
    }
    let absent = candidates
        .into_iter()
        .filter(|k| !case.entries.contains_key(k))
        .collect();
    (sampled.into_iter().cloned().collect(), absent)
}

// ---------------------------------------------------------------------------------------
// 1. Byte-identical files without compression
// ---------------------------------------------------------------------------------------

/// Random entries (empty keys and values, 0x00/0xff runs, long shared prefixes, keys up to
/// 10 KiB, rarely a value up to 1 MiB, zero entries) and random options (block size 1 B –
/// 64 KiB, restart interval 1–32, Bloom bits 0–30): our builder writes LevelDB's bytes.
#[test]
fn uncompressed_tables_are_byte_identical() {
    if !require_leveldb() {
        return;
    }
    common::check(
        "tests/regressions/table_diff_bytes.txt",
        case(Just(LdbCompression::None).boxed()),
        |case| {
            let theirs = leveldb_build(&case.options, &case.entries);
            let ours = our_build(&case.options, &case.entries);
            if let Some(at) = (0..theirs.len().min(ours.len())).find(|&i| theirs[i] != ours[i]) {
                let window = |b: &[u8]| show(&b[at..b.len().min(at + 16)]);
                return Err(fail(format!(
                    "first difference at byte {at} of {} (ours {} bytes): leveldb {} ours {}",
                    theirs.len(),
                    ours.len(),
                    window(&theirs),
                    window(&ours)
                )));
            }
            prop_assert_eq!(ours.len(), theirs.len(), "file sizes");
            Ok(())
        },
    );
}

// ---------------------------------------------------------------------------------------
// 2. Cross reads
// ---------------------------------------------------------------------------------------

/// Which builder wrote a file, for messages.
#[derive(Debug, Clone, Copy)]
enum Writer {
    LevelDb,
    Ours,
}

struct Readers<'f> {
    theirs: LdbTable,
    ours: OurTable<'f>,
}

fn open_both<'f>(
    writer: Writer,
    file: &'f [u8],
    case: &Case,
) -> Result<Readers<'f>, TestCaseError> {
    let theirs = LdbTable::open(file, &case.options)
        .map_err(|e| fail(format!("{writer:?} table: leveldb open: {e}")))?;
    let ours = Table::open(file, our_read_options(&case.options))
        .map_err(|e| fail(format!("{writer:?} table: our open: {e}")))?;
    Ok(Readers { theirs, ours })
}

/// Both readers see every entry of `file`, forwards and backwards.
fn scans_agree(writer: Writer, r: &Readers<'_>, model: &[Entry]) -> Result<(), TestCaseError> {
    let theirs = r
        .theirs
        .entries(true)
        .map_err(|e| fail(format!("{writer:?} table: leveldb scan: {e}")))?;
    same_entries(
        &format!("{writer:?} table, leveldb forward"),
        &theirs,
        model,
    )?;
    let ours: Vec<Entry> = r
        .ours
        .entries()
        .collect::<Result<_, _>>()
        .map_err(|e| fail(format!("{writer:?} table: our scan: {e}")))?;
    same_entries(&format!("{writer:?} table, ours forward"), &ours, model)?;

    let mut their_iter = r.theirs.iter(true);
    let mut our_iter = r.ours.iter();
    their_iter.seek_to_last();
    our_iter.seek_to_last();
    for (i, (k, v)) in model.iter().enumerate().rev() {
        let want = Some((k.as_slice(), v.as_slice()));
        if their_iter.entry() != want || our_entry(&our_iter) != want {
            return Err(fail(format!(
                "{writer:?} table, backward at {i}: leveldb {}, ours {}, expected {}",
                show_entry(their_iter.entry()),
                show_entry(our_entry(&our_iter)),
                show_entry(want)
            )));
        }
        their_iter.prev();
        our_iter.prev();
    }
    prop_assert!(
        !their_iter.valid() && !our_iter.valid(),
        "{:?}: past the front",
        writer
    );
    their_iter.status().map_err(|e| fail(e.to_string()))?;
    our_iter.status().map_err(|e| fail(e.to_string()))?;
    Ok(())
}

/// One lookup on both sides: the entry LevelDB's `InternalGet` hands its callback and ours
/// (`internal_get`), whether each read a data block, `get`, and the approximate offset.
fn lookups_agree(
    writer: Writer,
    r: &Readers<'_>,
    key: &[u8],
    expected: Option<&Vec<u8>>,
) -> Result<(), TestCaseError> {
    let context = || format!("{writer:?} table, key {}", show(key));
    let theirs = r
        .theirs
        .lookup(key, true)
        .map_err(|e| fail(format!("{}: leveldb lookup: {e}", context())))?;
    let before = r.ours.counters().data_blocks_read;
    let ours = r
        .ours
        .internal_get(key, |k, v| (k.to_vec(), v.to_vec()))
        .map_err(|e| fail(format!("{}: our internal_get: {e}", context())))?;
    let blocks_read = r.ours.counters().data_blocks_read - before;
    prop_assert!(
        blocks_read <= 1,
        "{}: {} blocks read",
        context(),
        blocks_read
    );

    if ours != theirs.entry {
        let as_ref =
            |e: &Option<Entry>| show_entry(e.as_ref().map(|(k, v)| (k.as_slice(), v.as_slice())));
        return Err(fail(format!(
            "{}: leveldb's InternalGet found {}, ours {}",
            context(),
            as_ref(&theirs.entry),
            as_ref(&ours)
        )));
    }
    prop_assert_eq!(
        blocks_read == 1,
        theirs.block_read,
        "{}: read-or-skip (true = a data block was read)",
        context()
    );
    if expected.is_some() {
        prop_assert!(theirs.block_read, "{}: present key skipped", context());
    }

    let got = r
        .ours
        .get(key)
        .map_err(|e| fail(format!("{}: our get: {e}", context())))?;
    prop_assert!(got.as_ref() == expected, "{}: our get", context());
    let their_get = theirs.entry.and_then(|(k, v)| (k == key).then_some(v));
    prop_assert!(their_get.as_ref() == expected, "{}: leveldb get", context());

    let their_offset = r
        .theirs
        .approximate_offset_of(key)
        .map_err(|e| fail(e.to_string()))?;
    prop_assert_eq!(
        r.ours.approximate_offset_of(key),
        their_offset,
        "{}: approximate offset",
        context()
    );
    Ok(())
}

/// Seek to `key` on both sides, then step: next, prev, prev. After each move both are at
/// the entry the model says (next and prev on an exhausted iterator do nothing).
fn seeks_agree(
    writer: Writer,
    their_iter: &mut LdbIter<'_>,
    our_iter: &mut TableIter<'_, &[u8]>,
    model: &[Entry],
    key: &[u8],
) -> Result<(), TestCaseError> {
    their_iter.seek(key).map_err(|e| fail(e.to_string()))?;
    our_iter.seek(key);
    let mut at =
        Some(model.partition_point(|(k, _)| k.as_slice() < key)).filter(|&i| i < model.len());
    for step in ["seek", "next", "prev", "prev"] {
        match step {
            "next" => {
                their_iter.next();
                our_iter.next();
                at = at.map(|i| i + 1).filter(|&i| i < model.len());
            }
            "prev" => {
                their_iter.prev();
                our_iter.prev();
                at = at.and_then(|i| i.checked_sub(1));
            }
            _ => {}
        }
        let want = at.map(|i| (model[i].0.as_slice(), model[i].1.as_slice()));
        if their_iter.entry() != want || our_entry(our_iter) != want {
            return Err(fail(format!(
                "{writer:?} table, seek {} then {step}: leveldb {}, ours {}, expected {}",
                show(key),
                show_entry(their_iter.entry()),
                show_entry(our_entry(our_iter)),
                show_entry(want)
            )));
        }
    }
    Ok(())
}

/// Random tables (as in the byte-identity property, mostly snappy, a quarter uncompressed),
/// written by LevelDB and by us; each file is read by both readers: every entry in order
/// forwards and backwards, gets of present and absent keys (between entries, before the
/// first, after the last, at and past LevelDB's last index key), seeks with steps either
/// way, approximate offsets. For each lookup both hand over the same entry and both read a
/// data block or both skip it (LevelDB reads nothing for a key past the last index entry or
/// ruled out by the Bloom filter).
#[test]
fn tables_cross_read() {
    if !require_leveldb() {
        return;
    }
    // Counted for the record (the README's note on snappy bytes), not asserted.
    let snappy_tables = AtomicU64::new(0);
    let snappy_identical = AtomicU64::new(0);
    common::check(
        "tests/regressions/table_diff_cross.txt",
        case(snappy_mostly()),
        |case| {
            let model: Vec<Entry> = case.entries.clone().into_iter().collect();
            let (present, absent) = probe_keys(&case);
            let theirs = leveldb_build(&case.options, &case.entries);
            let ours = our_build(&case.options, &case.entries);
            if case.options.compression == LdbCompression::None {
                prop_assert!(theirs == ours, "uncompressed tables differ");
            } else {
                snappy_tables.fetch_add(1, Relaxed);
                if theirs == ours {
                    snappy_identical.fetch_add(1, Relaxed);
                }
            }
            for (writer, file) in [(Writer::LevelDb, &theirs), (Writer::Ours, &ours)] {
                let r = open_both(writer, file, &case)?;
                scans_agree(writer, &r, &model)?;
                for key in &present {
                    lookups_agree(writer, &r, key, case.entries.get(key))?;
                }
                for key in &absent {
                    lookups_agree(writer, &r, key, None)?;
                }
                let mut their_iter = r.theirs.iter(true);
                let mut our_iter = r.ours.iter();
                for key in present.iter().chain(&absent) {
                    seeks_agree(writer, &mut their_iter, &mut our_iter, &model, key)?;
                }
                their_iter.status().map_err(|e| fail(e.to_string()))?;
                our_iter.status().map_err(|e| fail(e.to_string()))?;
            }
            Ok(())
        },
    );
    eprintln!(
        "tables_cross_read: {} of {} snappy table pairs were byte-identical",
        snappy_identical.load(Relaxed),
        snappy_tables.load(Relaxed)
    );
}

// ---------------------------------------------------------------------------------------
// 3. Corrupted data blocks
// ---------------------------------------------------------------------------------------

/// Where each present key's data block starts (by `ApproximateOffsetOf`, which both sides
/// answer alike) and the end of the data section.
fn block_layout(table: &OurTable<'_>, case: &Case) -> (Vec<u64>, u64) {
    let offsets = case
        .entries
        .keys()
        .map(|k| table.approximate_offset_of(k))
        .collect();
    (offsets, table.properties().data_size)
}

/// A table with at least one entry, and a byte of its data section (block contents or
/// trailer) flipped by a nonzero mask.
fn corruption_case() -> impl Strategy<Value = (Case, Index, u8)> {
    (
        case(snappy_mostly()).prop_filter("a table with data blocks", |c| !c.entries.is_empty()),
        any::<Index>(),
        1u8..=255,
    )
}

/// A byte flipped anywhere in a data block (contents, type byte or crc) of a table written
/// by either side: LevelDB's `ReadBlock` with checksums refuses the block, both readers
/// still open the table (data blocks are not read at open), and every lookup fails on both
/// sides exactly when it reads that block — present keys in it always do — with a checksum
/// error. Full scans fail on both sides (LevelDB skips the bad block and reports it at the
/// end; ours stops at it — see the README's differences), and our `verify` fails. The
/// intact table passes all of this on both sides.
#[test]
fn corrupted_data_blocks_are_rejected_alike() {
    if !require_leveldb() {
        return;
    }
    common::check(
        "tests/regressions/table_diff_corruption.txt",
        corruption_case(),
        |(case, at, mask)| {
            let model: Vec<Entry> = case.entries.clone().into_iter().collect();
            let (present, absent) = probe_keys(&case);
            let theirs = leveldb_build(&case.options, &case.entries);
            let ours = our_build(&case.options, &case.entries);
            for (writer, file) in [(Writer::LevelDb, &theirs), (Writer::Ours, &ours)] {
                // The intact table: accepted by both.
                let clean = open_both(writer, file, &case)?;
                scans_agree(writer, &clean, &model)?;
                clean
                    .ours
                    .verify()
                    .map_err(|e| fail(format!("{writer:?} table: our verify: {e}")))?;

                let (key_blocks, data_size) = block_layout(&clean.ours, &case);
                let starts: BTreeSet<u64> = key_blocks.iter().copied().collect();
                let pos = at.index(usize::try_from(data_size).unwrap()) as u64;
                let bad_start = *starts.range(..=pos).next_back().expect("block 0");
                let bad_end = starts.range(pos + 1..).next().copied().unwrap_or(data_size);
                let bad_size = bad_end - bad_start - TRAILER_LEN;
                read_block(file, bad_start, bad_size, true)
                    .map_err(|e| fail(format!("{writer:?} table: intact block: {e}")))?;

                let mut bad = file.clone();
                bad[usize::try_from(pos).unwrap()] ^= mask;
                let context = format!(
                    "{writer:?} table, byte {pos} flipped in the block at {bad_start} (size {bad_size})"
                );
                match read_block(&bad, bad_start, bad_size, true) {
                    Err(e)
                        if e.to_string()
                            .ends_with("Corruption: block checksum mismatch") => {}
                    other => {
                        return Err(fail(format!("{context}: leveldb ReadBlock gave {other:?}")));
                    }
                }
                let r = open_both(writer, &bad, &case)?;

                // A lookup fails exactly when it reads the bad block, on both sides: when
                // LevelDB read a block for it in the intact table, and that block is the
                // bad one. Present keys always read their block.
                for key in present.iter().chain(&absent) {
                    let context = format!("{context}, key {}", show(key));
                    let reads_bad_block = clean
                        .theirs
                        .lookup(key, true)
                        .map_err(|e| fail(format!("{context}: intact lookup: {e}")))?
                        .block_read
                        && clean.ours.approximate_offset_of(key) == bad_start;
                    let theirs = r.theirs.lookup(key, true);
                    let ours = r.ours.get(key);
                    match (&theirs, &ours) {
                        (Err(t), Err(OurError::ChecksumMismatch { offset, .. })) => {
                            prop_assert!(reads_bad_block, "{}: failed on both sides", context);
                            prop_assert!(t.is_corruption(), "{}: leveldb {}", context, t);
                            prop_assert_eq!(*offset, bad_start, "{}: our error offset", context);
                        }
                        (Ok(t), Ok(o)) => {
                            prop_assert!(!reads_bad_block, "{}: read the bad block", context);
                            let want = case.entries.get(key);
                            prop_assert!(o.as_ref() == want, "{}: our get", context);
                            let their_get =
                                t.entry.as_ref().and_then(|(k, v)| (k == key).then_some(v));
                            prop_assert!(their_get == want, "{}: leveldb get", context);
                        }
                        _ => {
                            return Err(fail(format!(
                                "{context}: leveldb {:?}, ours {:?}",
                                theirs.map(|l| l.block_read),
                                ours.map(|v| v.map(|v| v.len()))
                            )));
                        }
                    }
                }
                let in_bad: Vec<bool> = key_blocks.iter().map(|&o| o == bad_start).collect();

                // Scans: LevelDB skips the bad block and reports it at the end; ours stops
                // at it. Both fail.
                let survivors: Vec<Entry> = model
                    .iter()
                    .zip(&in_bad)
                    .filter(|(_, bad)| !**bad)
                    .map(|(e, _)| e.clone())
                    .collect();
                let before: Vec<Entry> = model
                    .iter()
                    .zip(&in_bad)
                    .take_while(|(_, bad)| !**bad)
                    .map(|(e, _)| e.clone())
                    .collect();
                let after: Vec<Entry> = model
                    .iter()
                    .zip(&in_bad)
                    .rev()
                    .take_while(|(_, bad)| !**bad)
                    .map(|(e, _)| e.clone())
                    .collect();

                let mut their_iter = r.theirs.iter(true);
                let mut seen = Vec::new();
                their_iter.seek_to_first();
                while let Some((k, v)) = their_iter.entry() {
                    seen.push((k.to_vec(), v.to_vec()));
                    their_iter.next();
                }
                prop_assert!(
                    their_iter.status().is_err_and(|e| e.is_corruption()),
                    "{}: leveldb scan status",
                    context
                );
                same_entries(&format!("{context}: leveldb forward"), &seen, &survivors)?;
                seen.clear();
                their_iter.seek_to_last();
                while let Some((k, v)) = their_iter.entry() {
                    seen.push((k.to_vec(), v.to_vec()));
                    their_iter.prev();
                }
                prop_assert!(
                    their_iter.status().is_err_and(|e| e.is_corruption()),
                    "{}: leveldb backward status",
                    context
                );
                seen.reverse();
                same_entries(&format!("{context}: leveldb backward"), &seen, &survivors)?;

                let mut ours_seen: Vec<Entry> = Vec::new();
                let mut error = None;
                for e in r.ours.entries() {
                    match e {
                        Ok(e) => ours_seen.push(e),
                        Err(e) => error = Some(e),
                    }
                }
                prop_assert!(
                    matches!(error, Some(OurError::ChecksumMismatch { offset, .. }) if offset == bad_start),
                    "{}: our scan ended with {:?}",
                    context,
                    error
                );
                same_entries(&format!("{context}: ours forward"), &ours_seen, &before)?;
                ours_seen.clear();
                error = None;
                for e in r.ours.entries().rev() {
                    match e {
                        Ok(e) => ours_seen.push(e),
                        Err(e) => error = Some(e),
                    }
                }
                prop_assert!(
                    matches!(error, Some(OurError::ChecksumMismatch { offset, .. }) if offset == bad_start),
                    "{}: our backward scan ended with {:?}",
                    context,
                    error
                );
                same_entries(&format!("{context}: ours backward"), &ours_seen, &after)?;

                prop_assert!(
                    matches!(r.ours.verify(), Err(OurError::ChecksumMismatch { offset, .. }) if offset == bad_start),
                    "{}: our verify",
                    context
                );
            }
            Ok(())
        },
    );
}

// ---------------------------------------------------------------------------------------
// A deliberate difference
// ---------------------------------------------------------------------------------------

/// A checksum mismatch in the metaindex or filter block: LevelDB (verifying them, with
/// `paranoid_checks`) opens the table anyway and drops the filter, so every lookup reads its
/// data block; we refuse to open the table. See the README's differences.
#[test]
fn corrupt_meta_blocks_leveldb_drops_the_filter_we_refuse() {
    if !require_leveldb() {
        return;
    }
    let options = TableOptions {
        block_size: 1024,
        compression: LdbCompression::None,
        bloom_bits_per_key: 10,
        paranoid_checks: true,
        ..TableOptions::default()
    };
    let entries: Entries = (0..500u32)
        .map(|i| (format!("key{i:05}").into_bytes(), i.to_le_bytes().to_vec()))
        .collect();
    let file = our_build(&options, &entries);
    assert_eq!(file, leveldb_build(&options, &entries));
    let absent: Vec<Vec<u8>> = (0..500u32)
        .map(|i| format!("key{i:05}x").into_bytes())
        .collect();
    let skipped = |table: &LdbTable| {
        absent
            .iter()
            .filter(|k| !table.lookup(k, true).unwrap().block_read)
            .count()
    };

    let intact = Table::open(file.as_slice(), our_read_options(&options)).unwrap();
    let properties = intact.properties();
    let filter = properties.filters[0].handle;
    let metaindex = properties.footer.metaindex;
    assert!(skipped(&LdbTable::open(&file, &options).unwrap()) > 450);

    for (what, offset) in [("filter", filter.offset), ("metaindex", metaindex.offset)] {
        let mut bad = file.clone();
        bad[usize::try_from(offset).unwrap()] ^= 0x01;
        let theirs = LdbTable::open(&bad, &options).unwrap();
        assert_eq!(skipped(&theirs), 0, "{what}: LevelDB still filters");
        for (k, v) in &entries {
            assert_eq!(theirs.get(k).unwrap().as_ref(), Some(v), "{what}");
        }
        match Table::open(bad.as_slice(), our_read_options(&options)) {
            Err(OurError::ChecksumMismatch { offset: at, .. }) => assert_eq!(at, offset, "{what}"),
            other => panic!("{what}: our open gave {other:?}"),
        }
    }
}

/// A single value over 256 MiB makes a data block as large: LevelDB writes it and reads
/// ours, and we read LevelDB's, compressed with snappy and not.
#[test]
fn a_value_over_256_mib_crosses_both_ways() {
    if !require_leveldb() {
        return;
    }
    let huge = fill(Fill::Byte(b'v'), (256 << 20) + 4096, 1);
    let entries: Entries = [
        (b"a".to_vec(), b"small".to_vec()),
        (b"huge".to_vec(), huge),
        (b"z".to_vec(), b"small".to_vec()),
    ]
    .into_iter()
    .collect();
    for compression in [LdbCompression::Snappy, LdbCompression::None] {
        let options = TableOptions {
            compression,
            ..TableOptions::default()
        };
        {
            let theirs = leveldb_build(&options, &entries);
            let ours = Table::open(&theirs[..], our_read_options(&options)).unwrap();
            let got = ours
                .get(b"huge")
                .unwrap()
                .expect("the huge value in LevelDB's table");
            assert!(got == entries[&b"huge"[..]], "{} bytes", got.len());
        }
        let built = our_build(&options, &entries);
        let leveldb = LdbTable::open(&built, &options).unwrap();
        let got = leveldb
            .get(b"huge")
            .unwrap()
            .expect("the huge value in our table");
        assert!(got == entries[&b"huge"[..]], "{} bytes", got.len());
    }
}
