//! Databases the tests build: bulk-built ones of many small tables, and a history of
//! writes whose compaction's inputs are put back (as a crash leaves them), with what each
//! should read as.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use leveltable_db::dbformat::ldb_read_options;
use leveltable_db::{
    BulkOptions, CommitSummary, Db, DbBuilder, DbOptions, RepairOptions, RepairReport, WritableDb,
    WritableOptions, WriteOptions,
};
use leveltable_interop::mojang::{mojang_view, run};
use leveltable_table::{Profile, Table};

/// Keys and values, as a database should read.
pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// What the database `dir` reads as.
pub fn view(dir: &Path) -> Model {
    let db = Db::open(dir, DbOptions::default()).unwrap();
    db.iter().collect::<Result<_, _>>().unwrap()
}

/// Options of a writer that creates the database, with a write buffer of `buffer` bytes.
pub fn writable(buffer: usize) -> WritableOptions {
    WritableOptions::default()
        .create_if_missing(true)
        .write_buffer_size(buffer)
}

/// The numbers of the tables of `db`, sorted.
pub fn table_numbers(db: &Db) -> Vec<u64> {
    let mut numbers: Vec<u64> = db
        .properties()
        .levels
        .iter()
        .flatten()
        .map(|t| t.number)
        .collect();
    numbers.sort_unstable();
    numbers
}

/// The files of `dir` named `*.ext`, sorted.
pub fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    found.sort();
    found
}

/// Copies the files of `from` into `to` (created if missing).
pub fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// Writes a Minecraft world of `megabytes` MB seeded by `seed` to `world` with Mojang's
/// LevelDB (run by `python`), and returns Mojang's view of it, read from a copy at `copy`
/// (opening recovers the log into a table; the world stays as Mojang left it).
pub fn mojang_world<C: FromIterator<(Vec<u8>, Vec<u8>)>>(
    python: &str,
    world: &Path,
    megabytes: u32,
    seed: u64,
    copy: &Path,
) -> C {
    let (megabytes, seed) = (megabytes.to_string(), seed.to_string());
    let args = ["write", world.to_str().unwrap(), "--megabytes", &megabytes];
    run(python, &[&args[..], &["--seed", &seed]].concat());
    copy_dir(world, copy);
    mojang_view(python, copy)
}

/// Checks that LevelDB 1.23's profile cannot read the table `path`: its blocks are raw
/// deflate (compression type 4), as Mojang's are.
pub fn assert_raw_deflate(path: &Path) {
    let options = ldb_read_options().profile(Profile::LevelDb);
    let err = Table::open(fs::File::open(path).unwrap(), options)
        .and_then(|t| t.verify().map(drop))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("compression type 4"),
        "{}: {err}",
        path.display()
    );
}

/// Whether a lost range of `report` covers `key` (the report keeps every uncertain key
/// when sampled without limit; lost ranges are checked directly).
pub fn in_lost_range(report: &RepairReport, key: &[u8]) -> bool {
    report.lost.iter().any(|l| match &l.range {
        None => false,
        Some((first, last)) => {
            first.as_deref().is_none_or(|f| f <= key) && last.as_deref().is_none_or(|l| key <= l)
        }
    })
}

/// The keys `report` lists as uncertain (all of them when sampled without limit).
pub fn uncertain(report: &RepairReport) -> BTreeSet<Vec<u8>> {
    report
        .uncertain
        .iter()
        .flat_map(|u| u.sample.iter().cloned())
        .collect()
}

/// A repair's options under a table memory budget of `budget` bytes (the options' default
/// memory maps, which a repair does not use).
pub fn budgeted(budget: u64) -> RepairOptions {
    RepairOptions::default().db(DbOptions::default().table_memory_budget(budget))
}

/// Bulk-builds the database `dir` of `entries` (keys in increasing order) in tables of
/// about `table_bytes` bytes of entries, each with a Bloom filter.
pub fn bulk_build(
    dir: &Path,
    table_bytes: u64,
    entries: impl IntoIterator<Item = (Vec<u8>, Vec<u8>)>,
) -> CommitSummary {
    let options = BulkOptions::default().max_file_size(table_bytes);
    let mut builder = DbBuilder::create(dir, options).unwrap();
    for (k, v) in entries {
        builder.add(&k, &v).unwrap();
    }
    builder.finish().unwrap()
}

/// Bytes that do not compress: a xorshift generator.
pub struct Noise(pub u64);

impl Noise {
    /// `len` more bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len)
            .map(|_| {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                self.0 as u8
            })
            .collect()
    }
}

/// A database at `src` whose compaction dropped 100 deletions with the puts they hid, and
/// the table holding those puts put back (a crash between the new version and the deletes
/// leaves it), a copy of it kept in `saved` (created); returns the model.
pub fn table_left_behind(src: &Path, saved: &Path) -> Model {
    fs::create_dir(saved).unwrap();
    let db = WritableDb::open(src, writable(1 << 20)).unwrap();
    let w = WriteOptions::default();
    let mut model = Model::new();
    for i in 0..200u32 {
        let (k, v) = (
            format!("key{i:04}").into_bytes(),
            format!("v{i}").into_bytes(),
        );
        db.put(&k, &v, w).unwrap();
        model.insert(k, v);
    }
    db.flush().unwrap();
    for t in files(src, "ldb") {
        fs::copy(&t, saved.join(t.file_name().unwrap())).unwrap();
    }
    for i in 0..100u32 {
        let k = format!("key{i:04}").into_bytes();
        db.delete(&k, w).unwrap();
        model.remove(&k);
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    for t in files(saved, "ldb") {
        let back = src.join(t.file_name().unwrap());
        assert!(!back.exists(), "the compaction kept {}", back.display());
        fs::copy(&t, back).unwrap();
    }
    model
}

/// A history of puts, overwrites and deletions with small buffers (many tables, flushes and
/// compactions), the inputs of a compaction put back (saved in `saved`), and keys left in
/// the log; returns the model.
pub fn damaged_history(src: &Path, saved: &Path) -> Model {
    let db = WritableDb::open(src, writable(32 << 10)).unwrap();
    let w = WriteOptions::default();
    let mut model = Model::new();
    for i in 0..6000u32 {
        let (k, v) = (format!("key{i:05}"), format!("first{i}"));
        db.put(k.as_bytes(), v.as_bytes(), w).unwrap();
        model.insert(k.into_bytes(), v.into_bytes());
    }
    db.flush().unwrap();
    fs::create_dir(saved).unwrap();
    for t in files(src, "ldb") {
        fs::copy(&t, saved.join(t.file_name().unwrap())).unwrap();
    }
    for i in (0..6000u32).step_by(3) {
        let k = format!("key{i:05}");
        db.delete(k.as_bytes(), w).unwrap();
        model.remove(k.as_bytes());
    }
    for i in (1..6000u32).step_by(7) {
        let (k, v) = (format!("key{i:05}"), format!("second{i}"));
        db.put(k.as_bytes(), v.as_bytes(), w).unwrap();
        model.insert(k.into_bytes(), v.into_bytes());
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    // Left in the log: deletions and puts no table holds.
    for i in (2..6000u32).step_by(11) {
        let k = format!("key{i:05}");
        db.delete(k.as_bytes(), w).unwrap();
        model.remove(k.as_bytes());
    }
    db.close().unwrap();
    for t in files(saved, "ldb") {
        let back = src.join(t.file_name().unwrap());
        if !back.exists() {
            fs::copy(&t, back).unwrap();
        }
    }
    model
}
