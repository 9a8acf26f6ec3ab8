//! Repair against a model: histories written through `WritableDb`, then damaged (tables
//! left behind by a compaction, blocks flipped, tables deleted or truncated, logs torn, the
//! MANIFEST damaged); the repaired database must bring nothing deleted back while the
//! MANIFEST can be read, and every key it lost or holds stale must lie in a range the
//! report lists as lost.
//!
//! `LEVELTABLE_REPAIR_HISTORIES` sets the number of random histories (default 40).

use std::fs;
use std::path::{Path, PathBuf};

use leveltable_db::{
    BulkOptions, Db, DbOptions, LostKind, RepairOptions, TableOptions, WritableDb, WriteOptions,
    repair, repair_in_place,
};
use leveltable_interop::db::SplitMix;

use crate::common;

use common::dbs::{
    Model, assert_raw_deflate, files, in_lost_range, table_left_behind, uncertain, view, writable,
};

fn salvage_view(dir: &Path) -> Model {
    let db = Db::salvage(dir, DbOptions::default()).unwrap();
    db.iter().collect::<Result<_, _>>().unwrap()
}

/// A compaction's inputs left behind (as a crash between the new version and the deletes
/// leaves them) hold puts whose deletions the compaction dropped: LevelDB's `RepairDB`
/// (our salvage) brings them back, a repair does not.
#[test]
fn tables_left_behind_bring_nothing_back() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let model = table_left_behind(&src, &tmp.path().join("saved"));
    assert_eq!(view(&src), model);
    // What RepairDB recovers: every deleted key is back.
    assert_eq!(salvage_view(&src).len(), 200);

    let dest = tmp.path().join("dest");
    let report = repair(&src, &dest, &RepairOptions::default()).unwrap();
    assert_eq!(view(&dest), model);
    assert_eq!((report.keys, report.uncertain_keys), (100, 0));
    assert!(report.lost.is_empty(), "{:?}", report.lost);
    assert!(
        report.ignored.iter().any(|i| i.file.ends_with(".ldb")),
        "{:?}",
        report.ignored
    );
    assert!(
        report.obsolete_ignored >= 100,
        "{}",
        report.obsolete_ignored
    );
    // The source is as it was.
    assert_eq!(view(&src), model);
}

/// A flipped block of the newest table: the keys it held fall back to older versions in a
/// deeper level, which the report lists as uncertain; `drop_uncertain` leaves them out.
#[test]
fn a_lost_block_makes_older_versions_uncertain() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let db = WritableDb::open(&src, writable(4 << 20)).unwrap();
    let w = WriteOptions::default();
    let mut model = Model::new();
    for i in 0..2000u32 {
        let k = format!("key{i:05}").into_bytes();
        db.put(&k, b"old", w).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let before: Vec<PathBuf> = files(&src, "ldb");
    for i in 0..2000u32 {
        let k = format!("key{i:05}").into_bytes();
        let v = format!("new{i}").into_bytes();
        db.put(&k, &v, w).unwrap();
        model.insert(k, v);
    }
    db.flush().unwrap();
    db.close().unwrap();
    let newest = files(&src, "ldb")
        .into_iter()
        .find(|t| !before.contains(t))
        .unwrap();
    let mut bytes = fs::read(&newest).unwrap();
    // The second data block (blocks are about 4 KiB), garbled beyond reading.
    for b in &mut bytes[5000..7000] {
        *b = 0x55;
    }
    fs::write(&newest, &bytes).unwrap();

    let options = RepairOptions::default().sample(usize::MAX);
    let dest = tmp.path().join("dest");
    let report = repair(&src, &dest, &options).unwrap();
    let repaired = view(&dest);
    let unsure = uncertain(&report);
    assert!(
        report.lost.iter().any(|l| l.kind == LostKind::Block),
        "{:?}",
        report.lost
    );
    assert!(!unsure.is_empty());
    assert_eq!(report.uncertain_keys, unsure.len() as u64);
    let mut stale = 0;
    for (k, v) in &model {
        match repaired.get(k) {
            Some(got) if got == v => assert!(!unsure.contains(k) || in_lost_range(&report, k)),
            _ => {
                stale += 1;
                assert!(
                    unsure.contains(k),
                    "{} is stale and not uncertain",
                    k.escape_ascii()
                );
            }
        }
    }
    assert!(stale > 0);

    let dropped = tmp.path().join("dropped");
    let report2 = repair(&src, &dropped, &options.clone().drop_uncertain(true)).unwrap();
    let repaired = view(&dropped);
    assert_eq!(report2.uncertain_keys, report.uncertain_keys);
    for (k, v) in &repaired {
        assert_eq!(model.get(k), Some(v), "{}", k.escape_ascii());
    }
    assert_eq!(
        repaired.len() as u64 + report.uncertain_keys,
        model.len() as u64
    );
}

/// What one damaged history's repair got wrong against the model.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    resurrected: u64,
    lost: u64,
    stale: u64,
}

/// A random history written through `WritableDb` with small buffers (flushes and
/// compactions throughout), with copies of tables saved along the way; returns the model.
fn history(rng: &mut SplitMix, src: &Path, saved: &Path) -> Model {
    let db = WritableDb::open(src, writable(16 << 10)).unwrap();
    let w = WriteOptions::default();
    let keys = [50, 400, 3000][rng.below(3) as usize];
    let mut model = Model::new();
    for step in 0..1500 {
        let k = format!("k{:05}", rng.below(keys)).into_bytes();
        if rng.below(3) == 0 {
            db.delete(&k, w).unwrap();
            model.remove(&k);
        } else {
            let v = format!("v{step}-{}", "x".repeat(rng.below(60) as usize)).into_bytes();
            db.put(&k, &v, w).unwrap();
            model.insert(k, v);
        }
        if rng.below(400) == 0 {
            for t in files(src, "ldb") {
                let _ = fs::copy(&t, saved.join(t.file_name().unwrap()));
            }
        }
        if rng.below(700) == 0 {
            db.compact_range(None, None).unwrap();
        }
    }
    db.close().unwrap();
    model
}

/// Damages `src` at random; returns whether the MANIFEST was damaged.
fn damage(rng: &mut SplitMix, src: &Path, saved: &Path) -> bool {
    // Tables a crash left behind: copies of tables since compacted away.
    for t in files(saved, "ldb") {
        let back = src.join(t.file_name().unwrap());
        if !back.exists() && rng.below(2) == 0 {
            fs::copy(&t, back).unwrap();
        }
    }
    let tables = files(src, "ldb");
    let logs = files(src, "log");
    let mut manifest_damaged = false;
    match rng.below(6) {
        0 | 1 if !tables.is_empty() => {
            let t = &tables[rng.below(tables.len() as u64) as usize];
            let mut bytes = fs::read(t).unwrap();
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(bytes.len() as u64) as usize;
                bytes[at] ^= 1 << rng.below(8);
            }
            fs::write(t, bytes).unwrap();
        }
        2 if !tables.is_empty() => {
            fs::remove_file(&tables[rng.below(tables.len() as u64) as usize]).unwrap();
        }
        3 if !tables.is_empty() => {
            let t = &tables[rng.below(tables.len() as u64) as usize];
            let len = fs::metadata(t).unwrap().len();
            fs::File::options()
                .write(true)
                .open(t)
                .unwrap()
                .set_len(rng.below(len))
                .unwrap();
        }
        4 if !logs.is_empty() => {
            let l = logs.last().unwrap();
            let mut bytes = fs::read(l).unwrap();
            if !bytes.is_empty() {
                let at = rng.below(bytes.len() as u64) as usize;
                bytes[at] ^= 0x10;
                fs::write(l, bytes).unwrap();
            }
        }
        5 => {
            let m = files(src, "")
                .into_iter()
                .chain(fs::read_dir(src).unwrap().map(|e| e.unwrap().path()))
                .find(|p| {
                    p.file_name()
                        .unwrap()
                        .to_string_lossy()
                        .starts_with("MANIFEST")
                })
                .unwrap();
            let mut bytes = fs::read(&m).unwrap();
            let at = rng.below(bytes.len() as u64) as usize;
            bytes[at] ^= 0x08;
            fs::write(&m, bytes).unwrap();
            manifest_damaged = true;
        }
        _ => {}
    }
    manifest_damaged
}

fn count(model: &Model, got: &Model) -> Counts {
    let mut c = Counts::default();
    for (k, v) in got {
        match model.get(k) {
            None => c.resurrected += 1,
            Some(m) if m != v => c.stale += 1,
            Some(_) => {}
        }
    }
    c.lost = model.keys().filter(|k| !got.contains_key(*k)).count() as u64;
    c
}

#[test]
fn random_histories_with_random_damage() {
    let histories: u64 = std::env::var("LEVELTABLE_REPAIR_HISTORIES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    let mut total = Counts::default();
    let mut repairdb = Counts::default();
    for seed in 0..histories {
        let mut rng = SplitMix(seed.wrapping_mul(0x1234_5678_9abc_def1));
        let tmp = tempfile::tempdir().unwrap();
        let (src, saved) = (tmp.path().join("src"), tmp.path().join("saved"));
        fs::create_dir(&saved).unwrap();
        let model = history(&mut rng, &src, &saved);
        let manifest_damaged = damage(&mut rng, &src, &saved);
        let dest = tmp.path().join("dest");
        let options = RepairOptions::default().sample(usize::MAX);
        let report = repair(&src, &dest, &options).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let got = view(&dest);
        let c = count(&model, &got);
        let theirs = count(&model, &salvage_view(&src));
        if std::env::var_os("LEVELTABLE_REPAIR_VERBOSE").is_some() {
            println!(
                "seed {seed}: manifest damaged {manifest_damaged} {:?} ours {c:?} salvage {theirs:?} lost {:?} ignored {:?}",
                report.manifest, report.lost, report.ignored
            );
        }
        for (t, n) in [(&mut total, c), (&mut repairdb, theirs)] {
            t.resurrected += n.resurrected;
            t.lost += n.lost;
            t.stale += n.stale;
        }
        // Only damage to the MANIFEST makes a repair fall back to RepairDB's rule (a flip
        // in a torn tail may leave it readable).
        if report.manifest.is_none() {
            assert!(manifest_damaged, "seed {seed}: {:?}", report.manifest_error);
            continue;
        }
        let unsure = uncertain(&report);
        // A lost log record or log tail may have held any key (its range is unknown).
        let log_lost = report.lost.iter().any(|l| {
            matches!(l.kind, LostKind::LogRecord | LostKind::LogTail) && l.range.is_none()
        });
        for (k, v) in &got {
            match model.get(k) {
                Some(m) if m == v => {}
                _ => assert!(
                    unsure.contains(k) || log_lost,
                    "seed {seed}: {} is resurrected or stale outside the report",
                    k.escape_ascii()
                ),
            }
        }
        for k in model.keys().filter(|k| !got.contains_key(*k)) {
            assert!(
                in_lost_range(&report, k) || log_lost,
                "seed {seed}: {} is lost outside any lost range",
                k.escape_ascii()
            );
        }
    }
    println!(
        "{histories} damaged histories: repair resurrected {} lost {} stale {}; \
         RepairDB's rule (salvage) resurrected {} lost {} stale {}",
        total.resurrected,
        total.lost,
        total.stale,
        repairdb.resurrected,
        repairdb.lost,
        repairdb.stale
    );
}

/// In place: the directory becomes the repaired database, the original moves whole to
/// `lost/`, and nothing else is left beside it.
#[test]
fn in_place_keeps_the_original_under_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("db");
    let db = WritableDb::open(&src, writable(1 << 20)).unwrap();
    let w = WriteOptions::default();
    for i in 0..100u32 {
        db.put(format!("key{i:03}").as_bytes(), b"v", w).unwrap();
    }
    db.delete(b"key000", w).unwrap();
    db.close().unwrap();
    let before = view(&src);
    let original: Vec<String> = fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let report = repair_in_place(&src, &RepairOptions::default()).unwrap();
    assert_eq!(report.keys, 99);
    assert_eq!(view(&src), before);
    for name in &original {
        assert!(src.join("lost").join(name).exists(), "{name}");
    }
    let beside: Vec<_> = fs::read_dir(tmp.path()).unwrap().collect();
    assert_eq!(beside.len(), 1);
}

/// A database of raw deflate blocks (Mojang's LevelDB, Minecraft Bedrock) is repaired into
/// raw deflate tables, which Mojang's LevelDB reads (LevelDB 1.23 does not know type 4).
#[test]
fn the_source_compression_is_kept() {
    use leveltable_table::Compression;

    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let options =
        writable(1 << 20).table(TableOptions::default().compression(Compression::RawDeflate));
    let db = WritableDb::open(&src, options).unwrap();
    for i in 0..500u32 {
        db.put(
            format!("key{i:04}").as_bytes(),
            &[b'x'; 100],
            WriteOptions::default(),
        )
        .unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    let dest = tmp.path().join("dest");
    let report = repair(&src, &dest, &RepairOptions::default()).unwrap();
    assert_eq!(report.keys, 500);
    assert_eq!(view(&dest).len(), 500);
    for path in files(&dest, "ldb") {
        assert_raw_deflate(&path);
    }
}

/// The progress of a repair of an undamaged database, whose tables the merge reads once:
/// it rises with the merge, as it passes the tables, to the bytes of every table.
#[test]
fn progress_rises_with_the_merge_to_every_table() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let mut builder =
        leveltable_db::DbBuilder::create(&src, BulkOptions::default().max_file_size(4 << 10))
            .unwrap();
    for i in 0..2000u32 {
        builder
            .add(format!("key{i:06}").as_bytes(), &[b'v'; 40])
            .unwrap();
    }
    let summary = builder.finish().unwrap();
    assert!(summary.tables > 10, "{} tables", summary.tables);
    let mut calls: Vec<(u64, u64)> = Vec::new();
    let report = leveltable_db::repair_with_progress(
        &src,
        tmp.path().join("dest"),
        &RepairOptions::default(),
        &mut |done, total| calls.push((done, total)),
    )
    .unwrap();
    assert_eq!(report.keys, 2000);
    let (&(_, total), first) = (calls.last().unwrap(), calls[0]);
    assert_eq!(total, summary.bytes);
    assert_eq!(first.0, 0);
    assert!(calls.iter().all(|&(_, t)| t == total));
    assert!(calls.windows(2).all(|w| w[0].0 <= w[1].0), "{calls:?}");
    assert_eq!(calls.last().unwrap().0, total);
    // Counted as the merge passes the tables, not all at once at the end.
    assert!(calls.iter().any(|&(d, _)| 0 < d && d < total), "{calls:?}");
}

/// A table read in part is listed with its own file's size, as every other table is.
#[test]
fn a_table_read_in_part_is_listed_with_its_size() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let db = WritableDb::open(&src, writable(4 << 20)).unwrap();
    for i in 0..2000u32 {
        let key = format!("key{i:05}");
        db.put(key.as_bytes(), b"value", WriteOptions::default())
            .unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    let table = files(&src, "ldb").pop().unwrap();
    let mut bytes = fs::read(&table).unwrap();
    bytes[5000..7000].fill(0x55);
    fs::write(&table, &bytes).unwrap();
    let salvaged = Db::salvage(&src, DbOptions::default()).unwrap();
    let properties = salvaged.properties();
    assert!(
        properties
            .skipped
            .iter()
            .any(|(_, why)| why.contains("read in part")),
        "{:?}",
        properties.skipped
    );
    let info = properties.levels.iter().flatten().next().unwrap();
    assert_eq!(info.size, bytes.len() as u64, "{}", table.display());
}
