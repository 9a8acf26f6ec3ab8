//! The `.ldb` files of real LevelDB 1.23 databases, read and rewritten by
//! `leveltable_db::dbformat`.
//!
//! Each database gets a workload of puts, overwrites and deletes over prefix-sharing keys,
//! with manual compactions, so that its table files lie at several levels and hold several
//! versions of a key and tombstones. Then for every `.ldb` file:
//!
//! - our parsed entries, re-encoded, are LevelDB's entries (its own `Table` iterator over
//!   internal keys);
//! - for every user key in the file, at the newest snapshot and around each of its
//!   versions, and for absent keys, our lookup answers as LevelDB's `Table::InternalGet`
//!   followed by `Version::Get`'s verdict, and reads a data block exactly when LevelDB does;
//! - where a user key's newest version in the whole database lies in the file, our lookup
//!   there answers as the database's `get`;
//! - the file rebuilt from its entries by our builder is the same bytes (compression off),
//!   or reads back the same on both sides (snappy).

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use common::hex;
use leveltable_db::dbformat::{
    LookupResult, MAX_SEQUENCE, ParsedInternalKey, ValueType, ldb_build_options, lookup_key,
};
use leveltable_db::internal_table::{InternalEntry, InternalTable};
use leveltable_interop::db::{Db, DbOptions};
use leveltable_interop::require_leveldb;
use leveltable_interop::table::{
    Compression as LdbCompression, KeyComparator, Table as LdbTable, TableOptions,
};
use leveltable_table::{Compression, TableBuilder};

/// Keys a flush range starts at: above every key the workload writes, so compacting from
/// here writes the memtable out and compacts nothing else.
const ABOVE_ALL_KEYS: &[u8] = b"\xff\xff\xff\xff";

/// A database's settings.
#[derive(Debug, Clone, Copy)]
struct Setup {
    compression: LdbCompression,
    bloom_bits: u32,
    block_size: usize,
    restart_interval: u32,
}

impl Setup {
    fn db_options(&self) -> DbOptions {
        DbOptions {
            compression: self.compression,
            bloom_bits_per_key: self.bloom_bits,
            block_size: self.block_size,
            block_restart_interval: self.restart_interval,
            // LevelDB raises these to 64 KiB and 1 MiB: many flushes, several files a level.
            write_buffer_size: 64 << 10,
            max_file_size: 1 << 20,
            paranoid_checks: true,
            verify_checksums: true,
            ..DbOptions::default()
        }
    }

    fn table_options(&self) -> TableOptions {
        TableOptions {
            comparator: KeyComparator::InternalKey,
            bloom_bits_per_key: self.bloom_bits,
            paranoid_checks: true,
            ..TableOptions::default()
        }
    }
}

/// xorshift64: a fixed workload from a fixed seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A value of about `len` bytes, a quarter text that Snappy compresses, the rest noise it
/// does not.
fn value(rng: &mut Rng, tag: &str, len: usize) -> Vec<u8> {
    let mut v = tag.as_bytes().to_vec();
    while v.len() < len / 4 {
        v.extend_from_slice(b" lorem ipsum ");
    }
    while v.len() < len {
        v.extend_from_slice(&rng.next().to_le_bytes());
    }
    v.truncate(len);
    v
}

fn user(i: u64) -> Vec<u8> {
    format!("user/{i:05}").into_bytes()
}

fn profile(i: u64) -> Vec<u8> {
    format!("user/{i:05}/profile").into_bytes()
}

fn post(i: u64, j: u64) -> Vec<u8> {
    format!("user/{i:05}/posts/{j:03}").into_bytes()
}

fn hot(i: u64) -> Vec<u8> {
    format!("hot/{i:03}").into_bytes()
}

/// The database's expected contents.
type Model = BTreeMap<Vec<u8>, Vec<u8>>;

struct Writer<'d> {
    db: &'d Db,
    model: Model,
    /// Every user key ever written or deleted.
    touched: BTreeSet<Vec<u8>>,
}

impl Writer<'_> {
    fn put(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.db.put(&key, &value).unwrap();
        self.touched.insert(key.clone());
        self.model.insert(key, value);
    }

    fn delete(&mut self, key: Vec<u8>) {
        self.db.delete(&key).unwrap();
        self.touched.insert(key.clone());
        self.model.remove(&key);
    }
}

/// What a database looks like once the workload is done.
struct Made {
    /// `(level, file number, bytes)` of every table file.
    files: Vec<(u32, u64, Vec<u8>)>,
    model: Model,
    touched: BTreeSet<Vec<u8>>,
    /// `db.get` for every touched key.
    answers: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    sstables: String,
}

/// Levels and file numbers from the `leveldb.sstables` property
/// (`--- level N ---` then ` number:size[smallest .. largest]` per file).
fn parse_sstables(text: &str) -> BTreeMap<u64, u32> {
    let mut levels = BTreeMap::new();
    let mut level = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("--- level ") {
            level = Some(rest.trim_end_matches(" ---").parse::<u32>().unwrap());
        } else if let Some((number, _)) = line.trim_start().split_once(':') {
            levels.insert(number.parse::<u64>().unwrap(), level.unwrap());
        }
    }
    levels
}

fn make_database(dir: &Path, setup: &Setup) -> Made {
    let db = Db::open(dir, &setup.db_options()).unwrap();
    let mut w = Writer {
        db: &db,
        model: Model::new(),
        touched: BTreeSet::new(),
    };
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);

    // Bulk load, about 1.8 MB, then everything down to the deepest level: several files of
    // 1 MiB there, one version per key.
    for i in 0..3000 {
        w.put(profile(i), value(&mut rng, &format!("profile {i} v1"), 500));
        if i % 10 == 0 {
            w.put(user(i), value(&mut rng, &format!("user {i}"), 40));
        }
        if i % 7 == 0 {
            for j in 0..3 {
                w.put(post(i, j), value(&mut rng, &format!("post {i}.{j}"), 120));
            }
        }
    }
    for key in [&b""[..], b"a", b"ab", b"abc", b"\xff", b"\xff\xff\x00"] {
        w.put(key.to_vec(), value(&mut rng, "edge", 30));
    }
    db.compact_range(None, None);

    // Overwrites, deletions (of present and of absent keys) and new keys all over the key
    // space; flushes and automatic compactions put them in upper levels.
    for round in 0..3 {
        for _ in 0..500 {
            let i = rng.below(3000);
            match rng.below(10) {
                0..=4 => w.put(
                    profile(i),
                    value(&mut rng, &format!("profile {i} r{round}"), 300),
                ),
                5 | 6 => w.delete(profile(i)),
                7 => w.delete(post(i, rng.below(5))),
                8 => w.put(post(i, 3 + rng.below(3)), value(&mut rng, "new post", 80)),
                _ => w.put(user(i), Vec::new()),
            }
        }
        if round == 1 {
            // Compact the middle of the key space: its upper-level files move down.
            db.compact_range(Some(&profile(1000)), Some(&profile(2000)));
        }
    }
    w.delete(b"ab".to_vec());
    w.put(b"abc".to_vec(), b"abc again".to_vec());
    // Compact a narrow range: the level-0 files (which overlap it) merge into level 1.
    db.compact_range(Some(&profile(1500)), Some(&profile(1501)));

    // Less than a memtable of overwrites and deletions, flushed: tombstones and new values
    // in an upper level over the old values below.
    for _ in 0..150 {
        let i = rng.below(3000);
        if rng.below(2) == 0 {
            w.delete(profile(i));
        } else {
            w.put(
                profile(i),
                value(&mut rng, &format!("profile {i} late"), 300),
            );
        }
    }
    db.compact_range(Some(ABOVE_ALL_KEYS), None);

    // Two small memtables of hot keys, each written many times and sometimes deleted,
    // flushed as they are: level-0 files with several versions per key and tombstones.
    for flush in 0..2 {
        for n in 0..800 {
            let i = rng.below(60);
            if rng.below(5) == 0 {
                w.delete(hot(i));
            } else {
                w.put(
                    hot(i),
                    value(&mut rng, &format!("hot {i} f{flush} n{n}"), 20),
                );
            }
        }
        w.put(
            profile(42),
            value(&mut rng, &format!("profile 42 f{flush}"), 100),
        );
        w.delete(profile(43));
        db.compact_range(Some(ABOVE_ALL_KEYS), None);
    }

    let sstables = db.property("leveldb.sstables").unwrap().unwrap();
    let levels = parse_sstables(&sstables);
    // Fewer level-0 files than LevelDB's compaction trigger (4), and no reads that could
    // make a file due for compaction: nothing changes the files while we read them.
    assert!(
        levels.values().filter(|&&level| level == 0).count() < 4,
        "{sstables}"
    );
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "ldb") {
            let number: u64 = path.file_stem().unwrap().to_str().unwrap().parse().unwrap();
            let level = *levels
                .get(&number)
                .unwrap_or_else(|| panic!("{} not in {sstables}", path.display()));
            files.push((level, number, std::fs::read(&path).unwrap()));
        }
    }
    files.sort_by_key(|f| (f.0, f.1));
    assert_eq!(
        files.len(),
        levels.len(),
        "the files on disk are the current version's: {sstables}"
    );
    assert_eq!(
        db.property("leveldb.sstables").unwrap().unwrap(),
        sstables,
        "no compaction ran while the files were read"
    );

    let answers = w
        .touched
        .iter()
        .map(|k| (k.clone(), db.get(k).unwrap()))
        .collect();
    let Writer { model, touched, .. } = w;
    db.close();
    Made {
        files,
        model,
        touched,
        answers,
        sstables,
    }
}

/// LevelDB's answer for a lookup key: `Table::InternalGet` hands the first entry at or after
/// it in the one block the index and filter allow to `Version::Get`'s `SaveValue`, which
/// keeps it if its user key is the one looked up.
fn leveldb_lookup(table: &LdbTable, user_key: &[u8], snapshot: u64) -> (LookupResult, bool) {
    let lookup = table
        .lookup(&lookup_key(user_key, snapshot).unwrap(), true)
        .unwrap();
    let result = match &lookup.entry {
        None => LookupResult::NotFound,
        Some((key, value)) => {
            let parsed = ParsedInternalKey::parse(key).expect("LevelDB wrote internal keys");
            if parsed.user_key != user_key {
                LookupResult::NotFound
            } else if parsed.value_type == ValueType::Value {
                LookupResult::Value {
                    sequence: parsed.sequence,
                    value: value.clone(),
                }
            } else {
                LookupResult::Deleted {
                    sequence: parsed.sequence,
                }
            }
        }
    };
    (result, lookup.block_read)
}

/// Our answer, and whether we read a data block for it.
fn our_lookup(
    table: &InternalTable<Vec<u8>>,
    user_key: &[u8],
    snapshot: u64,
) -> (LookupResult, bool) {
    let before = table.table().counters().data_blocks_read;
    let result = table.get_at(user_key, snapshot).unwrap();
    (result, table.table().counters().data_blocks_read > before)
}

#[derive(Debug, Default)]
struct Tally {
    files: usize,
    entries: usize,
    deletions: usize,
    /// User keys with more than one version in a file.
    multi_version: usize,
    lookups: usize,
    filtered: usize,
    newest_here: usize,
    snappy_identical: usize,
}

/// Every check on one file. `newest` maps each user key to the file number holding its
/// newest version in the database.
fn check_file(
    setup: &Setup,
    number: u64,
    bytes: &[u8],
    newest: &BTreeMap<Vec<u8>, (u64, u64)>,
    made: &Made,
    tally: &mut Tally,
) {
    let what = format!("file {number:06}.ldb");
    let theirs = LdbTable::open(bytes, &setup.table_options()).unwrap();
    let ours = InternalTable::open(bytes.to_vec()).unwrap();
    ours.table().verify().unwrap();
    if setup.bloom_bits > 0 {
        assert_eq!(
            ours.table().properties().filter_policy.as_deref(),
            Some("leveldb.BuiltinBloomFilter2"),
            "{what}"
        );
    }

    // Iteration: ours, parsed and re-encoded, is LevelDB's.
    let their_entries = theirs.entries(true).unwrap();
    let entries: Vec<InternalEntry> = ours.entries().map(Result::unwrap).collect();
    let reencoded: Vec<(Vec<u8>, Vec<u8>)> = entries
        .iter()
        .map(|e| (e.key().encode().unwrap(), e.value.clone()))
        .collect();
    assert_eq!(reencoded.len(), their_entries.len(), "{what}");
    for (i, (a, b)) in reencoded.iter().zip(&their_entries).enumerate() {
        assert_eq!(a, b, "{what}, entry {i}: {} vs {}", hex(&a.0), hex(&b.0));
    }
    let raw: Vec<(Vec<u8>, Vec<u8>)> = ours.table().entries().map(Result::unwrap).collect();
    assert_eq!(raw, their_entries, "{what}: raw entries");
    tally.files += 1;
    tally.entries += entries.len();
    tally.deletions += entries
        .iter()
        .filter(|e| e.value_type == ValueType::Deletion)
        .count();

    // Lookups: every user key of the file at the newest snapshot, at each of its versions
    // and just below; user keys of the database absent from this file; made-up keys.
    let mut versions: BTreeMap<&[u8], Vec<u64>> = BTreeMap::new();
    for e in &entries {
        versions.entry(&e.user_key).or_default().push(e.sequence);
    }
    tally.multi_version += versions.values().filter(|v| v.len() > 1).count();
    let mut probes: Vec<(Vec<u8>, u64)> = Vec::new();
    for (user_key, seqs) in &versions {
        probes.push((user_key.to_vec(), MAX_SEQUENCE));
        for &s in seqs {
            probes.push((user_key.to_vec(), s));
            probes.push((user_key.to_vec(), s.saturating_sub(1)));
        }
        let mut after = user_key.to_vec();
        after.push(0);
        probes.push((after, MAX_SEQUENCE));
    }
    for key in made.touched.iter().step_by(7) {
        probes.push((key.clone(), MAX_SEQUENCE));
    }
    for key in [&b""[..], b"\x00", b"user/", b"zzz", b"\xff\xff\xff\xff\xff"] {
        probes.push((key.to_vec(), MAX_SEQUENCE));
        probes.push((key.to_vec(), 0));
    }
    for (user_key, snapshot) in &probes {
        let (want, their_read) = leveldb_lookup(&theirs, user_key, *snapshot);
        let (got, our_read) = our_lookup(&ours, user_key, *snapshot);
        assert_eq!(got, want, "{what}: {} at {snapshot}", hex(user_key));
        assert_eq!(
            our_read,
            their_read,
            "{what}: {} at {snapshot}: data block read",
            hex(user_key)
        );
        tally.lookups += 1;
        tally.filtered += usize::from(!our_read);
    }

    // Where the newest version of a user key is in this file, the database's answer is ours.
    for user_key in versions.keys() {
        if newest.get(*user_key).map(|&(file, _)| file) != Some(number) {
            continue;
        }
        let db_answer = &made.answers[*user_key];
        let ours = ours.get(user_key).unwrap();
        match &ours {
            LookupResult::Value { value, .. } => {
                assert_eq!(db_answer.as_ref(), Some(value), "{what}: {}", hex(user_key));
            }
            LookupResult::Deleted { .. } => {
                assert_eq!(db_answer, &None, "{what}: {}", hex(user_key));
            }
            LookupResult::NotFound => panic!("{what}: {} is in the file", hex(user_key)),
        }
        tally.newest_here += 1;
    }

    // Rebuilt from its entries by our builder.
    let compression = match setup.compression {
        LdbCompression::None => Compression::None,
        LdbCompression::Snappy => Compression::Snappy,
    };
    let bloom = (setup.bloom_bits > 0).then_some(setup.bloom_bits as usize);
    let options = ldb_build_options(bloom)
        .compression(compression)
        .block_size(setup.block_size)
        .block_restart_interval(setup.restart_interval as usize);
    let mut builder = TableBuilder::new(Vec::new(), options).unwrap();
    for (key, value) in &reencoded {
        builder.add(key, value).unwrap();
    }
    builder.finish().unwrap();
    let rebuilt = builder.into_inner();
    match setup.compression {
        LdbCompression::None => {
            if rebuilt != bytes {
                let at = rebuilt.iter().zip(bytes).position(|(a, b)| a != b);
                panic!(
                    "{what}: rebuilt file differs at byte {at:?} ({} vs {} bytes)",
                    rebuilt.len(),
                    bytes.len()
                );
            }
        }
        LdbCompression::Snappy => {
            // Snappy encoders may differ (see the crate README); what both read must not.
            tally.snappy_identical += usize::from(rebuilt == bytes);
            let theirs = LdbTable::open(&rebuilt, &setup.table_options()).unwrap();
            assert_eq!(
                theirs.entries(true).unwrap(),
                their_entries,
                "{what}: rebuilt"
            );
            let ours = InternalTable::open(rebuilt).unwrap();
            assert_eq!(
                ours.entries().map(Result::unwrap).collect::<Vec<_>>(),
                entries,
                "{what}: rebuilt"
            );
        }
    }
}

fn check_database(setup: Setup) {
    let dir = tempfile::tempdir().unwrap();
    let made = make_database(&dir.path().join("db"), &setup);

    // The database answers as the model says, and its files are spread over levels.
    for key in &made.touched {
        assert_eq!(
            made.answers[key],
            made.model.get(key).cloned(),
            "{}",
            hex(key)
        );
    }
    let levels: BTreeSet<u32> = made.files.iter().map(|f| f.0).collect();
    assert!(
        levels.len() >= 3 && made.files.iter().filter(|f| f.0 == 0).count() >= 2,
        "expected files at several levels: {}",
        made.sstables
    );
    let deepest = *levels.last().unwrap();
    assert!(
        made.files.iter().filter(|f| f.0 == deepest).count() >= 2,
        "several files at the deepest level: {}",
        made.sstables
    );

    // Where each user key's newest version is (memtable empty: the newest in any file).
    let mut newest: BTreeMap<Vec<u8>, (u64, u64)> = BTreeMap::new();
    for (_, number, bytes) in &made.files {
        let table = InternalTable::open(bytes.as_slice()).unwrap();
        for e in table.entries() {
            let e = e.unwrap();
            let slot = newest.entry(e.user_key).or_insert((*number, e.sequence));
            if e.sequence > slot.1 {
                *slot = (*number, e.sequence);
            }
        }
    }
    for (key, answer) in &made.answers {
        if !newest.contains_key(key) {
            assert_eq!(answer, &None, "{} is in no file", hex(key));
        }
    }

    let mut tally = Tally::default();
    for (_, number, bytes) in &made.files {
        check_file(&setup, *number, bytes, &newest, &made, &mut tally);
    }
    assert_eq!(tally.newest_here, newest.len());
    assert!(
        tally.deletions > 0 && tally.multi_version > 0 && tally.filtered > 0,
        "{tally:?}"
    );
    let per_level: BTreeMap<u32, usize> = made.files.iter().fold(BTreeMap::new(), |mut m, f| {
        *m.entry(f.0).or_default() += 1;
        m
    });
    eprintln!("{setup:?}: files per level {per_level:?}, {tally:?}");
}

#[test]
fn uncompressed_database_files_are_read_and_rebuilt_exactly() {
    if !require_leveldb() {
        return;
    }
    check_database(Setup {
        compression: LdbCompression::None,
        bloom_bits: 10,
        block_size: 4096,
        restart_interval: 16,
    });
}

#[test]
fn snappy_database_files_are_read_alike() {
    if !require_leveldb() {
        return;
    }
    check_database(Setup {
        compression: LdbCompression::Snappy,
        bloom_bits: 10,
        block_size: 4096,
        restart_interval: 16,
    });
}

#[test]
fn unfiltered_small_block_database_files_are_rebuilt_exactly() {
    if !require_leveldb() {
        return;
    }
    check_database(Setup {
        compression: LdbCompression::None,
        bloom_bits: 0,
        block_size: 1024,
        restart_interval: 4,
    });
}
