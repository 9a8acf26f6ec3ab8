//! Bulk-built databases against LevelDB 1.23: LevelDB opens every database we build with
//! nothing on level 0, reads every key, lets new writes shadow the loaded values, compacts
//! and reopens without losing an entry, and after a million gets still has the bulk-built
//! files (no seek compaction rewrote them). A build killed at a random moment leaves a
//! complete database or a directory without CURRENT.
//!
//! `LEVELTABLE_BULK_CASES` sets the number of random builds (default 12),
//! `LEVELTABLE_BULK_GETS` the gets of the seek test (default 1,000,000) and
//! `LEVELTABLE_BULK_KILLS` the killed builds (default 8).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use leveltable_db::{
    BulkOptions, Db as OurDb, DbBuilder, DbOptions as OurOptions, Part, PartBuilder, TableOptions,
    commit,
};
use leveltable_interop::db::{Db, DbOptions, SplitMix};
use leveltable_interop::require_leveldb;
use leveltable_table::Compression;

use crate::common::count;

type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// Sorted distinct entries: mostly short keys, now and then a 10 KiB key or a 1 MiB value.
fn input(rng: &mut SplitMix, n: u64) -> Pairs {
    let mut map = BTreeMap::new();
    while (map.len() as u64) < n {
        let key = if rng.one_in(500) {
            let mut k = vec![b'k'; 10 << 10];
            k.extend_from_slice(&rng.next_u64().to_be_bytes());
            k
        } else {
            format!("{:012x}", rng.below(n * 20 + 1)).into_bytes()
        };
        let len = if rng.one_in(2000) {
            1 << 20
        } else {
            rng.below(120) as usize
        };
        let value = (0..len).map(|i| (i as u8) ^ key[0]).collect();
        map.insert(key, value);
    }
    map.into_iter().collect()
}

fn random_options(rng: &mut SplitMix) -> BulkOptions {
    BulkOptions::default()
        .max_file_size(1 + rng.below(256 << 10))
        .table(
            TableOptions::default()
                .block_size(1 + rng.below(8192) as usize)
                .block_restart_interval(1 + rng.below(32) as usize)
                .compression(if rng.one_in(2) {
                    Compression::Snappy
                } else {
                    Compression::None
                })
                .filter_policy(
                    (!rng.one_in(3)).then(|| {
                        leveltable_table::BloomFilterPolicy::new(1 + rng.below(20) as usize)
                    }),
                ),
        )
        .threads(1 + rng.below(4) as usize)
}

/// Builds `entries` at `dir` in `parts` parts (1 through DbBuilder, more through
/// PartBuilder and commit).
fn build(dir: &Path, entries: &Pairs, options: &BulkOptions, parts: u64) {
    if parts <= 1 {
        let mut builder = DbBuilder::create(dir, options.clone()).unwrap();
        for (k, v) in entries {
            builder.add(k, v).unwrap();
        }
        builder.finish().unwrap();
        return;
    }
    let staging = dir.with_extension("staging");
    let per = (entries.len() as u64).div_ceil(parts).max(1) as usize;
    let mut records: Vec<Part> = Vec::new();
    for i in 0..parts as usize {
        let mut part = PartBuilder::create(staging.join(format!("{i}")), options.clone()).unwrap();
        let lo = (i * per).min(entries.len());
        let hi = ((i + 1) * per).min(entries.len());
        for (k, v) in &entries[lo..hi] {
            part.add(k, v).unwrap();
        }
        records.push(part.finish().unwrap());
    }
    commit(dir, &records).unwrap();
    let _ = std::fs::remove_dir_all(&staging);
}

fn leveldb_options(bloom: Option<usize>) -> DbOptions {
    DbOptions {
        create_if_missing: false,
        paranoid_checks: true,
        bloom_bits_per_key: bloom.map_or(0, |b| b as u32),
        ..DbOptions::default()
    }
}

/// The level of each table file in LevelDB's `leveldb.sstables` property.
fn levels_of_tables(db: &Db) -> BTreeMap<u64, usize> {
    let text = db.property("leveldb.sstables").unwrap().unwrap_or_default();
    let mut level = usize::MAX;
    let mut out = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("--- level ") {
            level = rest.trim_end_matches(" ---").parse().unwrap();
        } else if let Some((number, _)) = line.trim().split_once(':') {
            out.insert(number.parse().unwrap(), level);
        }
    }
    out
}

fn table_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".ldb"))
        .collect();
    names.sort();
    names
}

#[test]
fn leveldb_opens_and_keeps_using_what_we_build() {
    if !require_leveldb() {
        return;
    }
    let cases = count("LEVELTABLE_BULK_CASES", 12);
    let work = tempfile::tempdir().unwrap();
    let mut rng = SplitMix(0x5eed_b01c);
    for case in 0..cases {
        let n = match case {
            0 => 0,
            1 => 1,
            _ => rng.below(20_000),
        };
        let entries = input(&mut rng, n);
        let options = random_options(&mut rng);
        let parts = if case % 3 == 2 { 1 + rng.below(64) } else { 1 };
        let ctx = format!("case {case}: {n} entries, {parts} parts, {options:?}");
        let dir = work.path().join(format!("db{case}"));
        build(&dir, &entries, &options, parts);

        let db = Db::open(
            &dir,
            &leveldb_options(options.table.filter_policy.map(|p| p.bits_per_key())),
        )
        .unwrap();
        let levels = levels_of_tables(&db);
        assert!(levels.values().all(|&l| l == 6), "{ctx}: {levels:?}");
        assert_eq!(levels.len(), table_files(&dir).len(), "{ctx}");
        assert_eq!(db.scan(None, false).unwrap(), entries, "{ctx}");
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = entries.iter().cloned().collect();
        for (k, v) in entries.iter().step_by(97) {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{ctx}");
        }
        for _ in 0..200 {
            let k = format!("{:012x}x", rng.next_u64()).into_bytes();
            assert_eq!(db.get(&k).unwrap(), None, "{ctx}");
        }
        // New writes shadow the loaded values.
        if let Some((first, _)) = entries.first() {
            db.put(first, b"rewritten").unwrap();
            model.insert(first.clone(), b"rewritten".to_vec());
        }
        if let Some((last, _)) = entries.last() {
            db.delete(last).unwrap();
            model.remove(last);
        }
        db.put(b"\xffnew", b"key").unwrap();
        model.insert(b"\xffnew".to_vec(), b"key".to_vec());
        let expected: Pairs = model.into_iter().collect();
        assert_eq!(
            db.scan(None, false).unwrap(),
            expected,
            "{ctx}: after writes"
        );
        // Our own reader sees LevelDB's writes on top of the bulk load.
        let ours: Pairs = OurDb::open(&dir, OurOptions::default())
            .unwrap()
            .iter()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(ours, expected, "{ctx}: our view after LevelDB's writes");
        // A full compaction and a reopen keep every entry.
        db.compact_range(None, None);
        db.close();
        let db = Db::open(
            &dir,
            &leveldb_options(options.table.filter_policy.map(|p| p.bits_per_key())),
        )
        .unwrap();
        assert_eq!(
            db.scan(None, false).unwrap(),
            expected,
            "{ctx}: after compaction"
        );
        db.close();
    }
}

#[test]
fn a_million_gets_leave_the_bulk_built_files_alone() {
    if !require_leveldb() {
        return;
    }
    let gets = count("LEVELTABLE_BULK_GETS", 1_000_000);
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("db");
    let mut rng = SplitMix(7);
    let entries: Pairs = (0..100_000u64)
        .map(|i| {
            (
                format!("{:010}", i * 3).into_bytes(),
                format!("v{i}").into_bytes(),
            )
        })
        .collect();
    build(
        &dir,
        &entries,
        &BulkOptions::default().max_file_size(64 << 10),
        1,
    );
    let built = table_files(&dir);
    assert!(built.len() > 20, "{} files", built.len());
    let db = Db::open(&dir, &leveldb_options(Some(10))).unwrap();
    for _ in 0..gets {
        let i = rng.below(300_000);
        let key = format!("{i:010}").into_bytes();
        let found = db.get(&key).unwrap();
        assert_eq!(found.is_some(), i % 3 == 0, "{i}");
    }
    db.close();
    let db = Db::open(&dir, &leveldb_options(Some(10))).unwrap();
    let levels = levels_of_tables(&db);
    db.close();
    assert_eq!(
        table_files(&dir),
        built,
        "a compaction rewrote bulk-built files"
    );
    assert!(levels.values().all(|&l| l == 6), "{levels:?}");
}

/// The child: builds a database from a deterministic input and prints each 1000th entry.
#[test]
fn bulk_build_child() {
    let Ok(spec) = std::env::var("LEVELTABLE_BULK_CHILD") else {
        return;
    };
    let (dir, seed) = spec.split_once('|').unwrap();
    let entries = kill_input(seed.parse().unwrap());
    let options = BulkOptions::default().max_file_size(16 << 10).threads(2);
    let mut builder = DbBuilder::create(dir, options).unwrap();
    for (i, (k, v)) in entries.iter().enumerate() {
        builder.add(k, v).unwrap();
        if i % 1000 == 0 {
            println!("{i}");
        }
    }
    builder.finish().unwrap();
    println!("done");
}

fn kill_input(seed: u64) -> Pairs {
    let mut rng = SplitMix(seed);
    input(&mut rng, 30_000)
}

#[test]
fn killed_builds_leave_a_database_or_no_current() {
    if !require_leveldb() {
        return;
    }
    let kills = count("LEVELTABLE_BULK_KILLS", 8);
    let work = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut rng = SplitMix(99);
    let (mut complete, mut partial) = (0, 0);
    for i in 0..kills {
        let dir: PathBuf = work.path().join(format!("db{i}"));
        let seed = 1000 + i;
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "db_bulk::bulk_build_child",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env("LEVELTABLE_BULK_CHILD", format!("{}|{seed}", dir.display()))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let target = rng.below(32);
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut seen = 0;
        for line in lines.by_ref() {
            let line = line.unwrap();
            if line.trim().parse::<u64>().is_ok() || line.trim() == "done" {
                seen += 1;
                if seen > target {
                    break;
                }
            }
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let ctx = format!("build {i} killed after {seen} progress lines");
        if !dir.join("CURRENT").exists() {
            partial += 1;
            continue;
        }
        complete += 1;
        let db = Db::open(&dir, &leveldb_options(Some(10))).unwrap();
        assert_eq!(db.scan(None, false).unwrap(), kill_input(seed), "{ctx}");
        db.close();
    }
    eprintln!("killed builds: {complete} complete databases, {partial} without CURRENT");
}
