//! `leveltable db repair`: a damaged database repaired into a new directory (or in place)
//! without bringing deleted data back, the JSON report and the summary, `--drop-uncertain`,
//! and the refusals that leave everything as it was.

use crate::common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use common::*;
use leveltable_db::{WritableDb, WritableOptions, WriteOptions};
use serde_json::Value;

fn ldb_files(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ldb"))
        .collect();
    found.sort();
    found
}

/// A database whose keys 0..100 were deleted and compacted away, with the tables that held
/// them put back, as a crash between a compaction and its deletes leaves them.
fn left_behind(root: &Path) -> PathBuf {
    let src = root.join("src");
    let saved = root.join("saved");
    fs::create_dir(&saved).unwrap();
    let options = WritableOptions::default().create_if_missing(true);
    let db = WritableDb::open(&src, options).unwrap();
    let w = WriteOptions::default();
    for i in 0..200u32 {
        db.put(format!("key{i:04}").as_bytes(), b"v", w).unwrap();
    }
    db.flush().unwrap();
    for t in ldb_files(&src) {
        fs::copy(&t, saved.join(t.file_name().unwrap())).unwrap();
    }
    for i in 0..100u32 {
        db.delete(format!("key{i:04}").as_bytes(), w).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    for t in ldb_files(&saved) {
        fs::copy(&t, src.join(t.file_name().unwrap())).unwrap();
    }
    src
}

/// `leveltable db repair SRC DEST --report REPORT`, asserting success: its output and the
/// report it wrote.
fn repair_with_report(src: &Path, dest: &Path, report: &Path) -> (std::process::Output, Value) {
    let out = db_output(
        "repair",
        src,
        &[path_str(dest), "--report", path_str(report)],
    );
    assert!(out.status.success(), "{}", stderr_of(&out));
    let json = serde_json::from_slice(&fs::read(report).unwrap()).unwrap();
    (out, json)
}

fn dir_state(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let bytes = if e.file_type().unwrap().is_file() {
                fs::read(e.path()).unwrap()
            } else {
                Vec::new()
            };
            (e.file_name().to_string_lossy().into_owned(), bytes)
        })
        .collect()
}

#[test]
fn repair_leaves_deleted_keys_out_and_reports() {
    let tmp = tempfile::tempdir().unwrap();
    let src = left_behind(tmp.path());
    let before = dir_state(&src);
    let dest = tmp.path().join("dest");
    let report = tmp.path().join("report.json");
    let (out, json) = repair_with_report(&src, &dest, &report);
    assert_eq!(stdout_of(&out), "");
    let err = stderr_of(&out);
    assert!(err.contains("100 keys"), "{err}");
    assert!(
        err.contains("ignored: 2 files") || err.contains("ignored: 1 files"),
        "{err}"
    );
    let want: String = (100..200u32).map(|i| format!("key{i:04}\tv\n")).collect();
    assert_eq!(db_dump(&dest, &[]), want);
    // What LevelDB's RepairDB recovers brings the deleted keys back.
    let salvage = leveltable()
        .args(["db", "dump", "--salvage"])
        .arg(&src)
        .output()
        .unwrap();
    assert_eq!(stdout_of(&salvage).lines().count(), 200);

    assert_eq!(json["keys"], 100);
    assert!(
        json["manifest"].as_str().unwrap().starts_with("MANIFEST-"),
        "{json}"
    );
    assert!(!json["ignored"].as_array().unwrap().is_empty());
    assert_eq!(json["lost"].as_array().unwrap().len(), 0);
    assert_eq!(dir_state(&src), before, "the repair wrote in its source");
}

/// A block garbled in the newest table: its keys fall back to older versions, reported
/// uncertain, and left out with --drop-uncertain.
#[test]
fn uncertain_keys_are_kept_or_dropped() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let options = WritableOptions::default().create_if_missing(true);
    let db = WritableDb::open(&src, options).unwrap();
    let w = WriteOptions::default();
    for i in 0..2000u32 {
        db.put(format!("key{i:05}").as_bytes(), b"old", w).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let old = ldb_files(&src);
    for i in 0..2000u32 {
        db.put(format!("key{i:05}").as_bytes(), b"new", w).unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    let newest = ldb_files(&src)
        .into_iter()
        .find(|t| !old.contains(t))
        .unwrap();
    let mut bytes = fs::read(&newest).unwrap();
    bytes[5000..7000].fill(0x55);
    fs::write(&newest, bytes).unwrap();

    let report = tmp.path().join("r.json");
    let (_, json) = repair_with_report(&src, &tmp.path().join("kept"), &report);
    let uncertain = json["uncertain_keys"].as_u64().unwrap();
    assert!(uncertain > 0, "{json}");
    let lost = &json["lost"][0];
    assert_eq!(lost["kind"], "block");
    assert!(lost["range"]["first"].is_string(), "{lost}");
    assert!(
        !json["uncertain"][0]["sample"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let kept = db_dump(&tmp.path().join("kept"), &[]);
    assert_eq!(kept.lines().count(), 2000);

    let out = leveltable()
        .args(["db", "repair", "--drop-uncertain", "--quiet"])
        .arg(&src)
        .arg(tmp.path().join("dropped"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stderr_of(&out), "");
    let dropped = db_dump(&tmp.path().join("dropped"), &[]);
    assert_eq!(dropped.lines().count() as u64, 2000 - uncertain);
    assert!(
        dropped.lines().all(|l| l.ends_with("\tnew")),
        "a stale value was kept"
    );
}

/// A log cut inside its last record, as a crash leaves it: the tail is reported, in the
/// summary and in the JSON report, with its file, offset and length and no key range.
#[test]
fn a_log_cut_short_is_reported_as_its_tail() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let options = WritableOptions::default().create_if_missing(true);
    let db = WritableDb::open(&src, options).unwrap();
    let w = WriteOptions::default();
    for i in 0..10u32 {
        db.put(format!("key{i:02}").as_bytes(), b"value", w)
            .unwrap();
    }
    db.close().unwrap();
    let log = fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "log"))
        .unwrap();
    let name = log.file_name().unwrap().to_string_lossy().into_owned();
    let len = fs::metadata(&log).unwrap().len();
    // The last record (a header of 7 bytes, a batch of 12 + 1 + 1 + 5 + 1 + 5 bytes) loses
    // its last 10 bytes.
    let record = 7 + 25;
    let cut = len - 10;
    fs::File::options()
        .write(true)
        .open(&log)
        .unwrap()
        .set_len(cut)
        .unwrap();

    let report = tmp.path().join("r.json");
    let (out, json) = repair_with_report(&src, &tmp.path().join("dest"), &report);
    let offset = len - record;
    let err = stderr_of(&out);
    assert!(
        err.contains(&format!(
            "  log-tail {name} at offset {offset}, {} bytes: the log's last {} bytes",
            record - 10,
            record - 10
        )),
        "{err}"
    );
    let lost = json["lost"].as_array().unwrap();
    assert_eq!(lost.len(), 1, "{json}");
    assert_eq!(lost[0]["kind"], "log-tail");
    assert_eq!(lost[0]["file"], name.as_str());
    assert_eq!(lost[0]["offset"], offset);
    assert_eq!(lost[0]["length"], record - 10);
    assert!(lost[0]["range"].is_null(), "{json}");
    let want: String = (0..9u32).map(|i| format!("key{i:02}\tvalue\n")).collect();
    assert_eq!(db_dump(&tmp.path().join("dest"), &[]), want);
}

#[test]
fn refusals_leave_everything_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let src = left_behind(tmp.path());
    let before = dir_state(&src);
    // DEST inside SRC.
    let err = db_error(&["repair"], &src, &[path_str(&src.join("inside"))], "");
    assert!(err.contains("inside"), "{err}");
    assert_eq!(dir_state(&src), before);
    // A DEST that is not empty.
    let full = tmp.path().join("full");
    fs::create_dir(&full).unwrap();
    fs::write(full.join("x"), b"x").unwrap();
    let err = db_error(&["repair"], &src, &[path_str(&full)], "");
    assert!(err.contains("not empty"), "{err}");
    assert_eq!(fs::read_dir(&full).unwrap().count(), 1);
    // No DEST and no --in-place.
    db_error(&["repair"], &src, &[], "");
    // Nothing left beside them.
    let names: Vec<String> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(names.is_empty(), "{names:?}");
}

/// A report that could not be written once the repair is done would fail a repair that
/// succeeded: a report in a directory that does not exist is refused before any work.
#[test]
fn a_report_in_a_missing_directory_is_refused_before_the_repair() {
    let tmp = tempfile::tempdir().unwrap();
    let src = left_behind(tmp.path());
    let before = dir_state(&src);
    let dest = tmp.path().join("dest");
    let report = tmp.path().join("missing").join("report.json");
    let err = db_error(
        &["repair"],
        &src,
        &[path_str(&dest), "--report", path_str(&report)],
        "",
    );
    assert_eq!(
        err,
        format!(
            "error: cannot write {}: the directory {} does not exist\n",
            report.display(),
            tmp.path().join("missing").display()
        )
    );
    assert!(!dest.exists());
    // Nor is SRC repaired in place.
    let err = db_error(
        &["repair"],
        &src,
        &["--in-place", "--report", path_str(&report)],
        "",
    );
    assert!(err.contains("does not exist"), "{err}");
    assert_eq!(dir_state(&src), before);
}

/// A report that cannot be written once the repair is done (here: in `/proc`, where no
/// file can be created, not even by root) fails the command, saying that the repair itself
/// finished and where the repaired database is, after the summary of what it lost.
#[test]
fn a_report_failing_after_the_repair_says_the_repair_finished() {
    if !Path::new("/proc/self").is_dir() {
        eprintln!("skipped: no /proc here");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let src = left_behind(tmp.path());
    let dest = tmp.path().join("dest");
    let report = Path::new("/proc/leveltable-report.json");
    let out = db_output(
        "repair",
        &src,
        &[path_str(&dest), "--report", path_str(report)],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr_of(&out);
    assert!(err.contains("100 keys"), "the summary is printed: {err}");
    let last = err.lines().last().unwrap();
    assert!(
        last.starts_with("error: cannot create a file in /proc: "),
        "{last}"
    );
    assert!(
        last.ends_with(&format!(
            "(the repair finished: {} holds the repaired database; only the report is missing)",
            dest.display()
        )),
        "{last}"
    );
    let want: String = (100..200u32).map(|i| format!("key{i:04}\tv\n")).collect();
    assert_eq!(db_dump(&dest, &[]), want);
}

#[test]
fn in_place_keeps_the_original_in_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let src = left_behind(tmp.path());
    let before = dir_state(&src);
    let out = leveltable()
        .args(["db", "repair", "--in-place"])
        .arg(&src)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let want: String = (100..200u32).map(|i| format!("key{i:04}\tv\n")).collect();
    assert_eq!(db_dump(&src, &[]), want);
    let kept = dir_state(&src.join("lost"));
    for (name, bytes) in &before {
        if name != "LOCK" {
            assert_eq!(kept.get(name), Some(bytes), "{name}");
        }
    }
}

/// A database of 20,000 keys (100-byte values, several tables and a log) whose keys
/// below 2,000 were deleted and compacted away, with the tables that held them put back:
/// a repair that takes long enough to be killed at many points of its run.
fn large_left_behind(root: &Path) -> PathBuf {
    let src = root.join("large");
    let saved = root.join("large-saved");
    fs::create_dir(&saved).unwrap();
    let options = WritableOptions::default()
        .create_if_missing(true)
        .write_buffer_size(256 << 10);
    let db = WritableDb::open(&src, options).unwrap();
    let w = WriteOptions::default();
    for i in 0..20_000u32 {
        db.put(
            format!("key{i:06}").as_bytes(),
            format!("{i:0>100}").as_bytes(),
            w,
        )
        .unwrap();
    }
    db.flush().unwrap();
    for t in ldb_files(&src) {
        fs::copy(&t, saved.join(t.file_name().unwrap())).unwrap();
    }
    for i in 0..2_000u32 {
        db.delete(format!("key{i:06}").as_bytes(), w).unwrap();
    }
    db.compact_range(None, None).unwrap();
    // The newest writes stay in the log.
    for i in 0..200u32 {
        db.put(format!("key{:06}", i * 97).as_bytes(), b"new", w)
            .unwrap();
    }
    db.close().unwrap();
    for t in ldb_files(&saved) {
        let to = src.join(t.file_name().unwrap());
        if !to.exists() {
            fs::copy(&t, to).unwrap();
        }
    }
    src
}

/// `--in-place` killed (SIGKILL) at 40 moments spread evenly over its run and on past it
/// until 5 kills came after the swap: after each, the directory is exactly the original database (every file as it was,
/// nothing added but `LOCK`) or exactly the repaired one (it opens, verifies and reads as
/// the repair), with the original whole in `lost/` or, killed between the swap and the
/// move, beside it; never a mix. Both outcomes must be seen.
#[test]
fn in_place_killed_at_any_moment_leaves_a_whole_database() {
    use leveltable_db::{Db, DbOptions};

    let tmp = tempfile::tempdir().unwrap();
    let template = large_left_behind(tmp.path());
    let original = dir_state(&template);
    let without_lock = |state: &BTreeMap<String, Vec<u8>>| {
        let mut s = state.clone();
        s.remove("LOCK");
        s
    };
    // The repair's view, and how long an unkilled run takes (the best of three).
    let reference = tmp.path().join("reference");
    let out = leveltable()
        .args(["db", "repair", "--quiet"])
        .arg(&template)
        .arg(&reference)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let want = db_dump(&reference, &[]);
    // 18,000 keys and the 21 deleted keys the log writes again.
    assert_eq!(want.lines().count(), 18_021);
    assert_eq!(db_dump(&template, &[]), want);
    let mut run = std::time::Duration::MAX;
    for i in 0..3 {
        let dir = tmp.path().join(format!("timed{i}"));
        fs::create_dir(&dir).unwrap();
        for (name, bytes) in &original {
            fs::write(dir.join(name), bytes).unwrap();
        }
        let start = std::time::Instant::now();
        let out = leveltable()
            .args(["db", "repair", "--in-place", "--quiet"])
            .arg(&dir)
            .output()
            .unwrap();
        run = run.min(start.elapsed());
        assert!(out.status.success(), "{}", stderr_of(&out));
        assert_eq!(db_dump(&dir, &[]), want);
    }
    // 40 kills spread over the run, and then on past it (a loaded machine runs slower
    // than it timed) until 5 kills have come after the swap, at most 200.
    let kills = 40u32;
    let (mut untouched, mut repaired) = (0, 0);
    let mut round = 0u32;
    while round < 200 && (round < kills || repaired < 5) {
        round += 1;
        let root = tmp.path().join(format!("round{round}"));
        fs::create_dir(&root).unwrap();
        let dir = root.join("db");
        fs::create_dir(&dir).unwrap();
        for (name, bytes) in &original {
            fs::write(dir.join(name), bytes).unwrap();
        }
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin!("leveltable"))
            .args(["db", "repair", "--in-place", "--quiet"])
            .arg(&dir)
            .spawn()
            .unwrap();
        std::thread::sleep(run * 11 * (round - 1) / (10 * kills));
        let _ = child.kill();
        let _ = child.wait();
        let now = dir_state(&dir);
        let hidden: Vec<PathBuf> = fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .contains("repair-original")
            })
            .collect();
        let kept = if now.contains_key("lost") {
            assert!(hidden.is_empty(), "round {round}: the original twice");
            Some(dir_state(&dir.join("lost")))
        } else {
            hidden.first().map(|h| dir_state(h))
        };
        match kept {
            // Repaired: the directory is the repaired database, and the original is whole
            // where it was moved.
            Some(kept) => {
                repaired += 1;
                assert_eq!(
                    without_lock(&kept),
                    without_lock(&original),
                    "round {round}: the original kept is not whole"
                );
                let db = Db::open(&dir, DbOptions::default()).unwrap();
                db.verify().unwrap();
                drop(db);
                assert_eq!(db_dump(&dir, &[]), want, "round {round}");
            }
            // Not swapped: the original, every file as it was, nothing added but LOCK.
            None => {
                untouched += 1;
                assert_eq!(
                    without_lock(&now),
                    without_lock(&original),
                    "round {round}: not the original"
                );
                assert_eq!(db_dump(&dir, &[]), want, "round {round}");
            }
        }
    }
    eprintln!(
        "{round} kills, {kills} over a {run:?} run: {untouched} left the original, \
         {repaired} the repair"
    );
    assert!(untouched > 0 && repaired > 0, "{untouched} / {repaired}");
}

/// Chromium's IndexedDB database (ordered by `idb_cmp1`, which its MANIFEST names): repaired
/// by that comparator, into a database that dumps as the source does and whose MANIFEST
/// names it; in place too.
#[test]
fn a_source_ordered_by_idb_cmp1_is_repaired_in_its_order() {
    let golden = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../chromium/testdata/golden/IndexedDB/http_127.0.0.1_8765.indexeddb.leveldb");
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("idb");
    fs::create_dir(&src).unwrap();
    for (name, bytes) in dir_state(&golden) {
        fs::write(src.join(name), bytes).unwrap();
    }
    let want = db_dump(&src, &["--hex"]);
    let dest = tmp.path().join("dest");
    let out = leveltable()
        .args(["db", "repair", "--quiet"])
        .arg(&src)
        .arg(&dest)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(db_dump(&dest, &["--hex"]), want);
    let stats = leveltable()
        .args(["db", "stats"])
        .arg(&dest)
        .output()
        .unwrap();
    assert!(stats.status.success(), "{}", stderr_of(&stats));
    assert!(
        stdout_of(&stats).contains("comparator: idb_cmp1"),
        "{}",
        stdout_of(&stats)
    );
    let out = leveltable()
        .args(["db", "repair", "--quiet", "--in-place"])
        .arg(&src)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(db_dump(&src, &["--hex"]), want);
}

/// `.` as the target, run from inside it: the build, the repair into it and the repair in
/// place stage beside the directory, not inside it, and each leaves a database there.
#[test]
fn the_current_directory_is_a_target_like_any_other() {
    let tmp = tempfile::tempdir().unwrap();
    let built = tmp.path().join("built");
    fs::create_dir(&built).unwrap();
    db_command(&["build"], Path::new("."), &[])
        .current_dir(&built)
        .write_stdin("a\t1\nb\t2\n")
        .assert()
        .success();
    let dest = tmp.path().join("dest");
    fs::create_dir(&dest).unwrap();
    db_command(&["repair"], &built, &["."])
        .current_dir(&dest)
        .assert()
        .success();
    db_command(&["repair", "--in-place"], Path::new("."), &[])
        .current_dir(&dest)
        .assert()
        .success();
    for dir in [&built, &dest] {
        assert!(dir.join("CURRENT").is_file(), "{}", dir.display());
        assert!(
            files_in(dir).iter().all(|n| !n.starts_with('.')),
            "nothing staged inside {}: {:?}",
            dir.display(),
            files_in(dir)
        );
        assert_eq!(db_dump(dir, &[]).lines().count(), 2, "{}", dir.display());
    }
    assert!(
        files_in(tmp.path()).iter().all(|n| !n.starts_with('.')),
        "{:?}",
        files_in(tmp.path())
    );
}
