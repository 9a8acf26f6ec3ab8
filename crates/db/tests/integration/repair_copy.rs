//! A repair copies the tables whose keys no other file reaches as they are (as LevelDB's
//! `RepairDB` keeps the tables it reads), verified, and merges the rest: an undamaged
//! database's tables come out byte for byte, a database mixing damaged and undamaged tables
//! repairs to the model all the same, the copies' sequence numbers stay below the new
//! writes', and LevelDB 1.23 reads and writes the result.

use crate::common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use common::dbs::{Model, Noise, bulk_build, files, view, writable};
use leveltable_db::{
    Db, DbOptions, LostKind, RepairOptions, WritableDb, WritableOptions, WriteOptions, repair,
};
use leveltable_interop::db::{Db as LevelDb, DbOptions as LevelDbOptions};
use leveltable_interop::require_leveldb;

/// How many times each content occurs among the tables of `dir`.
fn table_bytes(dir: &Path) -> BTreeMap<Vec<u8>, usize> {
    let mut out = BTreeMap::new();
    for t in files(dir, "ldb") {
        *out.entry(fs::read(t).unwrap()).or_default() += 1;
    }
    out
}

/// Tables of `dest` whose bytes are those of a table of `src`.
fn same_tables(src: &Path, dest: &Path) -> usize {
    let source = table_bytes(src);
    table_bytes(dest)
        .into_iter()
        .filter(|(bytes, _)| source.contains_key(bytes))
        .map(|(_, n)| n)
        .sum()
}

/// What LevelDB 1.23 reads in `dir`, after it wrote `key`=`value` there (which it must read
/// back: a copy's sequence numbers must not shadow its new writes).
fn leveldb_reads_and_writes(dir: &Path, key: &[u8], value: &[u8]) -> Option<Model> {
    if !require_leveldb() {
        return None;
    }
    let db = LevelDb::open(dir, &LevelDbOptions::default()).unwrap();
    let before: Model = db.scan(None, false).unwrap().into_iter().collect();
    db.put(key, value).unwrap();
    assert_eq!(db.get(key).unwrap().as_deref(), Some(value));
    db.close();
    Some(before)
}

/// An undamaged bulk-built database: every table is copied, byte for byte, and LevelDB reads
/// the repair as the source.
#[test]
fn an_undamaged_database_s_tables_are_copied_as_they_are() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let mut noise = Noise(7);
    let entries = (0..20_000u32).map(|i| (format!("key{i:08}").into_bytes(), noise.bytes(40)));
    let built = bulk_build(&src, 16 << 10, entries);
    assert!(built.tables > 10, "{} tables", built.tables);
    let model = view(&src);

    let dest = tmp.path().join("dest");
    let report = repair(&src, &dest, &RepairOptions::default()).unwrap();
    assert_eq!(report.keys, 20_000);
    assert_eq!(
        (report.tables, report.tables_copied),
        (built.tables, built.tables)
    );
    assert_eq!(same_tables(&src, &dest), built.tables as usize);
    assert!(
        report.summary().contains("copied as they were"),
        "{}",
        report.summary()
    );
    assert!(report.to_json().contains("\"tables_copied\""));
    assert_eq!(view(&dest), model);
    if let Some(theirs) = leveldb_reads_and_writes(&dest, b"key00000005", b"new") {
        assert_eq!(theirs, model);
    }

    // Asked for the bulk options' compression instead of the source's: every table merged.
    let merged = tmp.path().join("merged");
    let options = RepairOptions::default().keep_compression(false);
    let report = repair(&src, &merged, &options).unwrap();
    assert_eq!(report.tables_copied, 0);
    assert_eq!(view(&merged), model);
}

/// Tables written by a writer hold sequence numbers above 0: the repaired MANIFEST's last
/// sequence covers them, so that new writes, ours or LevelDB's, shadow the copied versions.
#[test]
fn new_writes_shadow_the_copied_versions() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let db = WritableDb::open(&src, writable(16 << 10)).unwrap();
    let w = WriteOptions::default();
    for round in 0..3u32 {
        for i in 0..2000u32 {
            let v = format!("v{round}-{i}-{}", "x".repeat(40));
            db.put(format!("key{i:05}").as_bytes(), v.as_bytes(), w)
                .unwrap();
        }
    }
    for i in (0..2000u32).step_by(5) {
        db.delete(format!("key{i:05}").as_bytes(), w).unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    let model = view(&src);
    assert_eq!(model.len(), 1600);

    let dest = tmp.path().join("dest");
    let report = repair(&src, &dest, &RepairOptions::default()).unwrap();
    assert!(report.tables_copied > 0, "{report:?}");
    assert_eq!(same_tables(&src, &dest), report.tables_copied as usize);
    assert_eq!(report.keys, 1600);
    assert_eq!(view(&dest), model);
    assert!(Db::open(&dest, DbOptions::default()).unwrap().snapshot() > 0);

    let ours = tmp.path().join("ours");
    fs::create_dir(&ours).unwrap();
    for entry in fs::read_dir(&dest).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), ours.join(entry.file_name())).unwrap();
    }
    let db = WritableDb::open(&ours, WritableOptions::default()).unwrap();
    db.put(b"key00001", b"after", w).unwrap();
    db.delete(b"key00002", w).unwrap();
    assert_eq!(db.get(b"key00001").unwrap().as_deref(), Some(&b"after"[..]));
    assert_eq!(db.get(b"key00002").unwrap(), None);
    db.close().unwrap();

    if let Some(theirs) = leveldb_reads_and_writes(&dest, b"key00001", b"after") {
        assert_eq!(theirs, model);
    }
}

/// A bulk-built database overwritten in part by a writer (a level-0 table over some tables,
/// a log), one of its other tables damaged in a middle block: the tables no other file
/// reaches are copied, the damaged one and those under the writes are merged, and the
/// repair reads as the model but for the keys of the lost block, in LevelDB too.
#[test]
fn damaged_and_undamaged_tables_repair_to_the_model() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let mut noise = Noise(11);
    let entries = (0..20_000u32).map(|i| (format!("key{i:08}").into_bytes(), noise.bytes(40)));
    let built = bulk_build(&src, 16 << 10, entries);
    let mut model = view(&src);
    let db = WritableDb::open(&src, writable(1 << 20)).unwrap();
    let w = WriteOptions::default();
    for i in 5000..5100u32 {
        let (k, v) = (format!("key{i:08}").into_bytes(), b"new".to_vec());
        db.put(&k, &v, w).unwrap();
        model.insert(k, v);
    }
    for i in 6000..6050u32 {
        let k = format!("key{i:08}").into_bytes();
        db.delete(&k, w).unwrap();
        model.remove(&k);
    }
    db.flush().unwrap();
    for (k, v) in [("key00007000", "log"), ("key00007001", "")] {
        db.put(k.as_bytes(), v.as_bytes(), w).unwrap();
        model.insert(k.as_bytes().to_vec(), v.as_bytes().to_vec());
    }
    db.close().unwrap();

    // A table far from the writes, damaged in the middle (its ends read fine).
    let opened = Db::open(&src, DbOptions::default()).unwrap();
    let target = opened
        .properties()
        .levels
        .iter()
        .flatten()
        .find(|t| t.smallest.starts_with(b"key00015"))
        .map(|t| src.join(format!("{:06}.ldb", t.number)))
        .unwrap();
    drop(opened);
    let mut bytes = fs::read(&target).unwrap();
    let at = bytes.len() / 3;
    for b in &mut bytes[at..at + 200] {
        *b ^= 0x55;
    }
    fs::write(&target, &bytes).unwrap();

    let dest = tmp.path().join("dest");
    let report = repair(&src, &dest, &RepairOptions::default()).unwrap();
    let blocks: Vec<_> = report
        .lost
        .iter()
        .filter(|l| l.kind == LostKind::Block)
        .collect();
    assert_eq!(blocks.len(), 1, "{:?}", report.lost);
    let Some((Some(after), Some(before))) = blocks[0].range.clone() else {
        panic!("{:?}", blocks[0]);
    };
    let lost: Vec<Vec<u8>> = model
        .keys()
        .filter(|k| after.as_slice() < k.as_slice() && k.as_slice() < before.as_slice())
        .cloned()
        .collect();
    assert!(
        !lost.is_empty() && lost.len() < 200,
        "{} keys lost",
        lost.len()
    );
    for k in &lost {
        model.remove(k);
    }
    assert_eq!(view(&dest), model);
    // The keys at the lost block's edges, read around it, are in its range and no newer.
    assert!(report.uncertain_keys <= 2, "{report:?}");
    assert!(
        report.tables_copied > built.tables / 2 && report.tables_copied < built.tables,
        "{} of {} copied",
        report.tables_copied,
        built.tables
    );
    assert_eq!(same_tables(&src, &dest), report.tables_copied as usize);
    assert!(!table_bytes(&dest).contains_key(&bytes));
    if let Some(theirs) = leveldb_reads_and_writes(&dest, b"key00012345", b"new") {
        assert_eq!(theirs, model);
    }
}

/// The device and inode of each table of `dir`.
fn inodes(dir: &Path) -> Vec<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    files(dir, "ldb")
        .iter()
        .map(|t| {
            let m = fs::metadata(t).unwrap();
            (m.dev(), m.ino())
        })
        .collect()
}

/// On the source's file system a kept table is the source's file under a second name; on
/// another (`/dev/shm` when it is one) a copy, synced: the same bytes either way.
#[test]
fn kept_tables_are_linked_on_one_file_system_and_copied_across() {
    let tmp = tempfile::tempdir().unwrap();
    let shm = Path::new("/dev/shm");
    let other = shm
        .is_dir()
        .then(|| tempfile::tempdir_in(shm).ok())
        .flatten();
    let mut places = vec![(tmp.path().join("src"), tmp.path().join("dest"))];
    if let Some(other) = &other {
        places.push((other.path().join("src"), tmp.path().join("dest-across")));
    }
    for (src, dest) in places {
        let entries = (0..5000u32).map(|i| (format!("key{i:06}").into_bytes(), vec![b'v'; 40]));
        let built = bulk_build(&src, 16 << 10, entries);
        let report = repair(&src, &dest, &RepairOptions::default()).unwrap();
        assert_eq!(report.tables_copied, built.tables);
        assert_eq!(same_tables(&src, &dest), built.tables as usize);
        let (theirs, ours) = (inodes(&src), inodes(&dest));
        let same_device = theirs[0].0 == ours[0].0;
        let shared = ours.iter().filter(|i| theirs.contains(i)).count();
        assert_eq!(shared, if same_device { ours.len() } else { 0 });
        assert_eq!(view(&dest), view(&src));
    }
}
