//! A structure-aware database target: a directory built from the fuzzer's decisions with
//! our own writers — tables through the table builder, a MANIFEST through the version-edit
//! encoder, a log through the log writer, every checksum valid — and then lies told in it:
//! key ranges, file sizes and numbers, levels, the comparator, sequence numbers, tables whose
//! keys are out of order.
//!
//! What must hold whatever the lies: no panic; every read (forwards, backwards, a range,
//! every version, a salvage) ends and emits no more entries than the files hold; a scan
//! entry by entry and one handed out in runs (`next_entries`) agree; and if `verify`
//! passes, the database reads as the model of what was written.
//!
//! [`db_lies_direct`] builds tables of hundreds of entries and opens the directory with a
//! block cache of 1 KiB, so that long scans soon read straight from the tables' blocks
//! (once a scan has read a quarter of the cache) instead of batch by batch.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::sync::Arc;

use arbitrary::{Result, Unstructured};
use leveltable_db::dbformat::{
    InternalKeyComparator, ValueType, append_internal_key, ldb_build_options,
};
use leveltable_db::log_writer::LogWriter;
use leveltable_db::version_edit::{FileMetaData, VersionEdit};
use leveltable_db::write_batch::WriteBatchBuilder;
use leveltable_db::{Db, DbOptions};
use leveltable_table::{BytewiseComparator, Cache, Comparator, Compression, TableBuilder};

use crate::repair::Repaired;

/// One stored version: user key, sequence number, value (`None`: a deletion).
type Version = (Vec<u8>, u64, Option<Vec<u8>>);

/// Under this comparator every key follows the one before, so the table builder writes
/// entries in the order it is given them, sorted or not.
struct AsGiven;

impl Comparator for AsGiven {
    fn name(&self) -> &str {
        "fuzz.AsGiven"
    }
    fn compare(&self, _: &[u8], _: &[u8]) -> Ordering {
        Ordering::Greater
    }
    fn find_shortest_separator(&self, _: &mut Vec<u8>, _: &[u8]) {}
    fn find_short_successor(&self, _: &mut Vec<u8>) {}
}

/// What the directory holds, as written.
#[derive(Default)]
struct Written {
    /// Every version in a table file or the log.
    versions: Vec<Version>,
    /// The versions of the files the MANIFEST lists and of the live log: what an open
    /// reads when nothing lies.
    live: Vec<Version>,
}

fn internal_key(user: &[u8], sequence: u64, deletion: bool) -> Vec<u8> {
    let t = if deletion {
        ValueType::Deletion
    } else {
        ValueType::Value
    };
    let mut k = Vec::new();
    // Sequences here stay below 2^56: the encoding cannot fail.
    let _ = append_internal_key(&mut k, user, sequence, t);
    k
}

/// How the directory is built and opened.
#[derive(Debug, Clone, Copy)]
struct Shape {
    /// Tables of up to 1200 entries drawn from a generator the input seeds, and a block
    /// cache of 1 KiB: long scans read straight from the blocks.
    direct: bool,
}

/// The block cache of the direct shape: a scan reads straight from the blocks past a
/// quarter of it.
const DIRECT_CACHE_BYTES: u64 = 1 << 10;

impl Shape {
    fn options(self) -> DbOptions {
        if self.direct {
            DbOptions::default().block_cache(Cache::shared(DIRECT_CACHE_BYTES))
        } else {
            DbOptions::default()
        }
    }
}

/// A short user key from a small alphabet, so that versions of one key meet.
fn user_key(u: &mut Unstructured<'_>) -> Result<Vec<u8>> {
    let len = u.int_in_range(0..=2)?;
    (0..len)
        .map(|_| Ok(b'a' + u.int_in_range(0..=5)?))
        .collect()
}

/// A key the MANIFEST claims: mostly the true one, sometimes another.
fn claim(u: &mut Unstructured<'_>, truth: &[u8]) -> Result<Vec<u8>> {
    Ok(match u.int_in_range(0..=7)? {
        0 => {
            let len = u.int_in_range(0..=12)?;
            u.bytes(len)?.to_vec()
        }
        1 => internal_key(&user_key(u)?, u.int_in_range(0..=40)?, false),
        _ => truth.to_vec(),
    })
}

/// Many entries from a generator seeded by the input (keys of up to three letters), for
/// the direct shape: more than a batch holds, in few bytes of input.
fn generated(
    u: &mut Unstructured<'_>,
    sequence: &mut u64,
    entries: &mut Vec<(Vec<u8>, Vec<u8>, Version)>,
) -> Result<()> {
    let mut x = u.arbitrary::<u64>()? | 1;
    let mut next = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    for _ in 0..u.int_in_range(0..=1200)? {
        *sequence += 1;
        let key: Vec<u8> = (0..next(4)).map(|_| b'a' + next(6) as u8).collect();
        let deletion = next(4) == 0;
        let value = (!deletion).then(|| vec![*sequence as u8; next(41) as usize]);
        let ikey = internal_key(&key, *sequence, deletion);
        let stored = value.clone().unwrap_or_default();
        entries.push((ikey, stored, (key, *sequence, value)));
    }
    Ok(())
}

/// Writes one table of the fuzzer's entries as `number`, and returns its MANIFEST entry.
fn table(
    u: &mut Unstructured<'_>,
    shape: Shape,
    dir: &Path,
    number: u64,
    sequence: &mut u64,
    written: &mut Written,
) -> Result<(usize, FileMetaData)> {
    let icmp = InternalKeyComparator::bytewise();
    let mut entries: Vec<(Vec<u8>, Vec<u8>, Version)> = Vec::new();
    if shape.direct {
        generated(u, sequence, &mut entries)?;
    }
    for _ in 0..u.int_in_range(0..=24)? {
        *sequence += 1;
        let key = user_key(u)?;
        let deletion = u.ratio(1, 4)?;
        let value = (!deletion).then(|| vec![*sequence as u8; u.int_in_range(0..=20).unwrap_or(0)]);
        let ikey = internal_key(&key, *sequence, deletion);
        let stored = value.clone().unwrap_or_default();
        entries.push((ikey, stored, (key, *sequence, value)));
    }
    entries.sort_by(|a, b| icmp.compare(&a.0, &b.0));
    if u.ratio(1, 5)? {
        // Keys out of order: a few swaps.
        for _ in 0..u.int_in_range(1..=4)? {
            if entries.len() > 1 {
                let i = u.choose_index(entries.len())?;
                let j = u.choose_index(entries.len())?;
                entries.swap(i, j);
            }
        }
    }
    let compression = if u.arbitrary()? {
        Compression::Snappy
    } else {
        Compression::None
    };
    let options = ldb_build_options(Some(10))
        .block_size(u.int_in_range(16..=256)?)
        .compression(compression)
        .comparator(Arc::new(AsGiven));
    let size = match TableBuilder::new(Vec::new(), options) {
        Ok(mut b) => {
            for (k, v, _) in &entries {
                b.add(k, v)
                    .expect("the builder takes any order under AsGiven");
            }
            b.finish().expect("building in memory");
            let bytes = b.into_inner();
            fs::write(dir.join(format!("{number:06}.ldb")), &bytes).expect("writable");
            bytes.len() as u64
        }
        Err(e) => panic!("build options are valid: {e}"),
    };
    let versions: Vec<Version> = entries.iter().map(|e| e.2.clone()).collect();
    written.versions.extend(versions.iter().cloned());
    let (smallest, largest) = match (
        entries
            .iter()
            .map(|e| &e.0)
            .min_by(|a, b| icmp.compare(a, b)),
        entries
            .iter()
            .map(|e| &e.0)
            .max_by(|a, b| icmp.compare(a, b)),
    ) {
        (Some(a), Some(b)) => (a.clone(), b.clone()),
        // LevelDB never lists an empty table; a MANIFEST that does lies.
        _ => (internal_key(b"a", 0, false), internal_key(b"a", 0, false)),
    };
    let meta = FileMetaData {
        number,
        file_size: if u.ratio(1, 8)? { u.arbitrary()? } else { size },
        smallest: claim(u, &smallest)?,
        largest: claim(u, &largest)?,
    };
    let level = u.int_in_range(0..=6)?;
    written.live.extend(versions);
    Ok((level, meta))
}

/// Builds the directory the fuzzer's bytes describe.
fn build(u: &mut Unstructured<'_>, shape: Shape, dir: &Path) -> Result<Written> {
    let mut written = Written::default();
    let mut sequence = 0u64;
    let mut files = Vec::new();
    for number in 10..10 + u.int_in_range(0..=4)? {
        files.push(table(u, shape, dir, number, &mut sequence, &mut written)?);
    }
    if u.ratio(1, 8)? && !files.is_empty() {
        // A number listed twice, or one without a file.
        let i = u.choose_index(files.len())?;
        let mut again = files[i].clone();
        again.1.number = if u.arbitrary()? { 10 } else { 99 };
        files.push(again);
    }
    let log_number = 5u64;
    if u.arbitrary()? {
        let mut log = LogWriter::new(Vec::new());
        for _ in 0..u.int_in_range(1..=3)? {
            let first = if u.ratio(1, 6)? {
                u.int_in_range(0..=40)?
            } else {
                sequence + 1
            };
            let mut batch = WriteBatchBuilder::new(first);
            let mut s = first;
            for _ in 0..u.int_in_range(0..=6)? {
                let key = user_key(u)?;
                let value = u.arbitrary::<bool>()?.then(|| vec![s as u8; 3]);
                match &value {
                    Some(v) => batch.put(&key, v),
                    None => batch.delete(&key),
                };
                written.versions.push((key.clone(), s, value.clone()));
                written.live.push((key, s, value));
                s += 1;
            }
            sequence = sequence.max(s.saturating_sub(1));
            log.add_record(batch.as_bytes()).expect("writing to memory");
        }
        fs::write(dir.join(format!("{log_number:06}.log")), log.into_inner()).expect("writable");
    }
    let comparator = match u.int_in_range(0..=15)? {
        0 => "idb_cmp1".to_string(),
        1 => {
            let len = u.int_in_range(0..=12)?;
            String::from_utf8_lossy(u.bytes(len)?).into_owned()
        }
        _ => BytewiseComparator.name().to_string(),
    };
    let last_sequence = if u.ratio(1, 6)? {
        u.int_in_range(0..=60)?
    } else {
        sequence
    };
    let edit = VersionEdit {
        comparator: Some(comparator),
        log_number: Some(log_number),
        next_file_number: Some(100),
        last_sequence: Some(last_sequence),
        new_files: files,
        ..VersionEdit::default()
    };
    let mut manifest = LogWriter::new(Vec::new());
    manifest
        .add_record(&edit.encode())
        .expect("writing to memory");
    fs::write(dir.join("MANIFEST-000002"), manifest.into_inner()).expect("writable");
    fs::write(dir.join("CURRENT"), b"MANIFEST-000002\n").expect("writable");
    Ok(written)
}

/// What a reader sees at `snapshot`: per user key, the newest version at or below it.
fn model(versions: &[Version], snapshot: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut newest: BTreeMap<&[u8], (u64, &Option<Vec<u8>>)> = BTreeMap::new();
    for (k, s, v) in versions {
        if *s <= snapshot && newest.get(&k[..]).is_none_or(|(n, _)| s > n) {
            newest.insert(k, (*s, v));
        }
    }
    newest
        .into_iter()
        .filter_map(|(k, (_, v))| v.clone().map(|v| (k.to_vec(), v)))
        .collect()
}

/// Reads `db` every way, each read stopped with a failure past `bound` entries; the
/// entries of a full forward scan if it succeeds.
fn read(db: &Db, bound: usize) -> Option<BTreeMap<Vec<u8>, Vec<u8>>> {
    let bounded = |n: usize, what: &str| {
        assert!(
            n <= bound,
            "{what} emitted {n} entries; the files hold {bound}"
        );
    };
    let mut scan = BTreeMap::new();
    let mut ok = true;
    for (i, entry) in db.iter().enumerate() {
        bounded(i + 1, "a forward scan");
        match entry {
            Ok((k, v)) => {
                scan.insert(k, v);
            }
            Err(_) => {
                ok = false;
                break;
            }
        }
    }
    for (what, it) in [
        (
            "a backward scan",
            Box::new(db.iter().rev()) as Box<dyn Iterator<Item = _>>,
        ),
        ("a range", Box::new(db.range(&b"ab"[..]..&b"e"[..]))),
        (
            "a backward range",
            Box::new(db.range(&b"b"[..]..=&b"d"[..]).rev()),
        ),
    ] {
        for (i, entry) in it.enumerate() {
            bounded(i + 1, what);
            if entry.is_err() {
                break;
            }
        }
    }
    for (i, version) in db.versions().enumerate() {
        bounded(i + 1, "versions");
        if version.is_err() {
            break;
        }
    }
    for key in [&b""[..], b"a", b"ab", b"f", b"ff"] {
        let _ = db.get(key);
    }
    let runs = in_runs(db, bound);
    if let (true, Some(runs)) = (ok, &runs) {
        assert_eq!(
            &scan, runs,
            "a scan in runs reads otherwise than one entry by entry"
        );
    }
    ok.then_some(scan)
}

/// A forward scan through `next_entries`, its sink stopping now and then (the scan then
/// goes on where it stopped); the entries if it succeeds.
fn in_runs(db: &Db, bound: usize) -> Option<BTreeMap<Vec<u8>, Vec<u8>>> {
    let mut scan = BTreeMap::new();
    let mut n = 0usize;
    let mut iter = db.iter();
    loop {
        let more = iter.next_entries(|k, v| {
            n += 1;
            assert!(
                n <= bound,
                "a scan in runs emitted {n} entries; the files hold {bound}"
            );
            scan.insert(k.to_vec(), v.to_vec());
            n % 97 != 0
        });
        match more {
            Ok(true) => {}
            Ok(false) => return Some(scan),
            Err(_) => return None,
        }
    }
}

/// The target: builds a directory from `data`, opens and salvages it, reads it every way,
/// and repairs it ([`crate::repair`]).
/// Returns whether an open verified and was compared with the model.
pub fn db_lies(data: &[u8]) -> bool {
    db_lies_with(data, true).0
}

/// [`db_lies`], repairing the directory too if `repair` (a repair writes and syncs a
/// database: the slowest step by far), and telling how the repair went.
pub fn db_lies_with(data: &[u8], repair: bool) -> (bool, Option<Repaired>) {
    lies(data, Shape { direct: false }, repair)
}

/// The target over tables of hundreds of entries opened with a block cache of 1 KiB, so
/// that long scans read straight from the tables' blocks. No repair. Returns whether an
/// open verified and was compared with the model.
pub fn db_lies_direct(data: &[u8]) -> bool {
    lies(data, Shape { direct: true }, false).0
}

fn lies(data: &[u8], shape: Shape, repair: bool) -> (bool, Option<Repaired>) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut u = Unstructured::new(data);
    let Ok(written) = build(&mut u, shape, dir.path()) else {
        return (false, None);
    };
    let mut compared = false;
    let bound = written.versions.len();
    for options in [shape.options(), shape.options().paranoid_checks(true)] {
        let Ok(db) = Db::open(dir.path(), options) else {
            continue;
        };
        let scan = read(&db, bound);
        let verified = db.verify().is_ok();
        // Two versions with the same user key and sequence number leave the model's choice
        // open; otherwise a database that verifies reads as what was written, whatever
        // else its files claim.
        let mut pairs: Vec<(&[u8], u64)> =
            written.live.iter().map(|(k, s, _)| (&k[..], *s)).collect();
        pairs.sort_unstable();
        let unique = pairs.windows(2).all(|w| w[0] != w[1]);
        if verified && unique {
            compared = true;
            assert_eq!(
                scan.as_ref(),
                Some(&model(&written.live, db.snapshot())),
                "a database that verifies reads otherwise than written"
            );
        }
    }
    if let Ok(salvaged) = Db::salvage(dir.path(), shape.options()) {
        read(&salvaged, bound);
    }
    let repaired = repair.then(|| crate::repair::repair_checked(dir.path()));
    (compared, repaired)
}
