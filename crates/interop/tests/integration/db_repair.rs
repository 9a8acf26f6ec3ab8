//! Repair against LevelDB 1.23's `RepairDB`: random histories written by LevelDB (with
//! copies of its tables kept along the way), then random damage (tables left behind as a
//! crash between a compaction and its deletes leaves them, blocks flipped, tables deleted
//! or truncated, logs torn, the MANIFEST damaged). Each damaged directory is repaired by
//! `leveltable_db::repair` into a new directory and by `RepairDB` on a copy; against the
//! history's model both are counted: resurrected keys (present, deleted in truth), lost
//! keys, stale values. Ours resurrects nothing while the MANIFEST can be read; every key it
//! loses or holds stale lies in a range its report lists; LevelDB opens what it wrote and
//! sees what we see.
//!
//! `RepairDB` runs in a child process (this test binary again): Debian's LevelDB keeps its
//! assertions, and one of them (`TableBuilder::Add`'s key order) can abort the process when
//! a flipped bit reorders a table's keys. The abort is then counted as a `RepairDB`
//! failure, as an error status is.
//!
//! `LEVELTABLE_REPAIR_HISTORIES` sets the number of histories (default 30),
//! `LEVELTABLE_REPAIR_SEED` the first seed.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use leveltable_db::{Db as OurDb, DbOptions as OurOptions, LostKind, RepairOptions, RepairReport};
use leveltable_interop::db::{Db, DbOptions, SplitMix, history_key, history_value, repair};
use leveltable_interop::require_leveldb;

use crate::common;

use common::{copy_files, count};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Resurrected, lost and stale keys of one repaired view against the model.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    resurrected: u64,
    lost: u64,
    stale: u64,
}

impl Counts {
    fn of(model: &Model, got: &Model) -> Counts {
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

    fn add(&mut self, other: Counts) {
        self.resurrected += other.resurrected;
        self.lost += other.lost;
        self.stale += other.stale;
    }
}

fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    found.sort();
    found
}

/// A random history written by LevelDB with small buffers (flushes and compactions all
/// along), copying its tables to `saved` now and then; returns the model.
fn history(rng: &mut SplitMix, src: &Path, saved: &Path) -> Model {
    let options = DbOptions {
        write_buffer_size: 16 << 10 << rng.below(3),
        max_file_size: 64 << 10,
        ..DbOptions::default()
    };
    let db = Db::open(src, &options).unwrap();
    let keys = [50, 500, 3000][rng.below(3) as usize];
    let mut model = Model::new();
    for _ in 0..2000 {
        let k = history_key(rng, keys);
        if rng.below(3) == 0 {
            db.delete(&k).unwrap();
            model.remove(&k);
        } else {
            let v = history_value(rng, 200);
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        if rng.one_in(300) {
            for t in files(src, "ldb") {
                let _ = fs::copy(&t, saved.join(t.file_name().unwrap()));
            }
        }
        if rng.one_in(600) {
            db.compact_range(None, None);
        }
    }
    db.close();
    model
}

/// What one case damaged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Damage {
    Nothing,
    FlippedTable,
    DeletedTable,
    TruncatedTable,
    TornLog,
    Manifest,
}

/// Puts back some saved tables the directory no longer has (obsolete: a crash between a
/// compaction and its deletes), then damages one thing.
fn damage(rng: &mut SplitMix, src: &Path, saved: &Path) -> Damage {
    for t in files(saved, "ldb") {
        let back = src.join(t.file_name().unwrap());
        if !back.exists() && rng.one_in(2) {
            fs::copy(&t, back).unwrap();
        }
    }
    let tables = files(src, "ldb");
    let logs = files(src, "log");
    let pick =
        |rng: &mut SplitMix, list: &[PathBuf]| list[rng.below(list.len() as u64) as usize].clone();
    match rng.below(6) {
        0 if !tables.is_empty() => {
            let t = pick(rng, &tables);
            let mut bytes = fs::read(&t).unwrap();
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(bytes.len() as u64) as usize;
                bytes[at] ^= 1 << rng.below(8);
            }
            fs::write(&t, bytes).unwrap();
            Damage::FlippedTable
        }
        1 if !tables.is_empty() => {
            fs::remove_file(pick(rng, &tables)).unwrap();
            Damage::DeletedTable
        }
        2 if !tables.is_empty() => {
            let t = pick(rng, &tables);
            let len = fs::metadata(&t).unwrap().len();
            let file = fs::File::options().write(true).open(&t).unwrap();
            file.set_len(rng.below(len)).unwrap();
            Damage::TruncatedTable
        }
        3 if !logs.is_empty() => {
            let l = logs.last().unwrap();
            let len = fs::metadata(l).unwrap().len();
            if len == 0 {
                return Damage::Nothing;
            }
            let mut bytes = fs::read(l).unwrap();
            let at = rng.below(len) as usize;
            bytes[at] ^= 0x10;
            fs::write(l, bytes).unwrap();
            Damage::TornLog
        }
        4 => {
            let m = fs::read_dir(src)
                .unwrap()
                .map(|e| e.unwrap().path())
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
            Damage::Manifest
        }
        _ => Damage::Nothing,
    }
}

fn in_lost_range(report: &RepairReport, key: &[u8]) -> bool {
    report.lost.iter().any(|l| match &l.range {
        None => false,
        Some((first, last)) => {
            first.as_deref().is_none_or(|f| f <= key) && last.as_deref().is_none_or(|l| key <= l)
        }
    })
}

/// The directory `repairdb_child` repairs, when this binary runs as that child.
const CHILD_DIR: &str = "LEVELTABLE_REPAIRDB_DIR";

/// Runs `RepairDB` on `dir` in a child process: whether it succeeded (an error status, an
/// abort or any other death is a failure).
fn repair_in_child(dir: &Path) -> bool {
    let status = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "db_repair::repairdb_child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD_DIR, dir)
        .output()
        .unwrap();
    status.status.success() && String::from_utf8_lossy(&status.stdout).contains("repaired\n")
}

/// `RepairDB` on the directory named by [`CHILD_DIR`], when this binary is the child of
/// [`repair_in_child`]; nothing otherwise.
#[test]
fn repairdb_child() {
    let Some(dir) = std::env::var_os(CHILD_DIR) else {
        return;
    };
    match repair(Path::new(&dir), &DbOptions::default()) {
        Ok(()) => println!("repaired"),
        Err(e) => {
            eprintln!("RepairDB: {e}");
            std::process::exit(1);
        }
    }
}

#[test]
fn repair_against_repairdb_on_damaged_histories() {
    if !require_leveldb() {
        return;
    }
    let histories = count("LEVELTABLE_REPAIR_HISTORIES", 30);
    let first = count("LEVELTABLE_REPAIR_SEED", 1);
    // Per kind of case: [MANIFEST read, no log record lost], [a log record or tail lost],
    // [no MANIFEST could be read]; ours and RepairDB's.
    let mut ours_total = [Counts::default(); 3];
    let mut theirs_total = [Counts::default(); 3];
    let mut theirs_failed = 0u64;
    let mut fallbacks = 0u64;
    for seed in first..first + histories {
        let mut rng = SplitMix(seed.wrapping_mul(0x2545_f491_4f6c_dd1d));
        let tmp = tempfile::tempdir().unwrap();
        let (src, saved) = (tmp.path().join("src"), tmp.path().join("saved"));
        fs::create_dir(&saved).unwrap();
        let model = history(&mut rng, &src, &saved);
        let damaged = damage(&mut rng, &src, &saved);
        let ctx = format!("seed {seed} ({damaged:?})");

        // Theirs, on a copy.
        let copy = tmp.path().join("copy");
        copy_files(&src, &copy);
        let theirs = repair_in_child(&copy)
            .then(|| Db::open(&copy, &DbOptions::default()).and_then(|db| db.scan(None, false)));
        let theirs = match theirs {
            Some(Ok(pairs)) => Some(Counts::of(&model, &pairs.into_iter().collect())),
            _ => {
                theirs_failed += 1;
                None
            }
        };

        // Ours, into a new directory.
        let dest = tmp.path().join("dest");
        let options = RepairOptions::default().sample(usize::MAX);
        let report =
            leveltable_db::repair(&src, &dest, &options).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        let ours: Model = OurDb::open(&dest, OurOptions::default())
            .unwrap()
            .iter()
            .collect::<Result<_, _>>()
            .unwrap();
        // LevelDB opens it and sees the same.
        let leveldb: Model = Db::open(&dest, &DbOptions::default())
            .unwrap()
            .scan(None, false)
            .unwrap()
            .into_iter()
            .collect();
        assert!(
            leveldb == ours,
            "{ctx}: LevelDB's view of the repair differs"
        );
        let c = Counts::of(&model, &ours);
        // A lost log record or log tail may have held any key (its range is unknown).
        let log_lost = report.lost.iter().any(|l| {
            matches!(l.kind, LostKind::LogRecord | LostKind::LogTail) && l.range.is_none()
        });
        let kind = match (report.manifest.is_some(), log_lost) {
            (false, _) => 2,
            (true, true) => 1,
            (true, false) => 0,
        };
        ours_total[kind].add(c);
        if let Some(t) = theirs {
            theirs_total[kind].add(t);
        }
        if report.manifest.is_none() {
            fallbacks += 1;
            continue;
        }
        let uncertain: std::collections::BTreeSet<&Vec<u8>> =
            report.uncertain.iter().flat_map(|u| &u.sample).collect();
        for (k, v) in &ours {
            if model.get(k) != Some(v) {
                assert!(
                    uncertain.contains(k) || log_lost,
                    "{ctx}: {} resurrected or stale outside the report",
                    k.escape_ascii()
                );
            }
        }
        for k in model.keys().filter(|k| !ours.contains_key(*k)) {
            assert!(
                in_lost_range(&report, k) || log_lost,
                "{ctx}: {} lost outside any lost range",
                k.escape_ascii()
            );
        }
    }
    println!("{histories} damaged histories, {theirs_failed} of which RepairDB failed on:");
    let kinds = [
        "MANIFEST read, no log record lost",
        "a log record or a log's tail lost",
        "no readable MANIFEST",
    ];
    for (i, kind) in kinds.iter().enumerate() {
        let (o, t) = (ours_total[i], theirs_total[i]);
        println!(
            "  {kind}: leveltable repair resurrected {} lost {} stale {}; \
             LevelDB RepairDB resurrected {} lost {} stale {}",
            o.resurrected, o.lost, o.stale, t.resurrected, t.lost, t.stale
        );
    }
    let _ = fallbacks;
}
