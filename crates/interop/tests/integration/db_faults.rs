//! `leveltable_db::Db` under faults, against LevelDB 1.23: writers killed with SIGKILL at
//! random points, a writer running while we read, every bit of a MANIFEST and of a log
//! flipped, and the errors that name a database's missing or damaged files.
//!
//! `LEVELTABLE_DB_KILLS` sets the number of killed writers (default 12).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use leveltable_db::{Db as OurDb, DbOptions as OurOptions, Error as OurError};
use leveltable_interop::db::{BatchOp, Db, DbOptions, SplitMix, random_writer, repair};
use leveltable_interop::require_leveldb;

use crate::common;

use common::{
    child_test, copy_files, count, dir_state, flipped_copy, log_file, manifest_file, scratch_dir,
    table_file,
};

type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// Every entry of our view of a database.
fn entries(db: &OurDb) -> Pairs {
    db.iter().collect::<Result<_, _>>().unwrap()
}

/// Checks that our gets of the probed keys answer as LevelDB's did; `what` starts each
/// message.
fn assert_probes(db: &OurDb, probes: Probes, what: &str) {
    for (k, v) in probes {
        assert_eq!(db.get(&k).unwrap(), v, "{what}get {k:?}");
    }
}

/// LevelDB's options to open an existing database.
fn reopen_options() -> DbOptions {
    DbOptions {
        create_if_missing: false,
        ..DbOptions::default()
    }
}

/// LevelDB's view of a copy of `dir`, or its error.
fn leveldb_view(dir: &Path, work: &Path, tag: &str) -> Result<(Pairs, Probes), String> {
    leveldb_view_with(dir, work, tag, &reopen_options(), false)
}

type Probes = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// `RepairDB`'s view of a copy of `dir`, or its error.
fn repairdb_view(dir: &Path, work: &Path) -> Result<(Pairs, Probes), String> {
    leveldb_view_with(dir, work, "repair", &reopen_options(), true)
}

/// LevelDB's view of a copy of `dir` opened with `options`, after `RepairDB` if `repaired`.
fn leveldb_view_with(
    dir: &Path,
    work: &Path,
    tag: &str,
    options: &DbOptions,
    repaired: bool,
) -> Result<(Pairs, Probes), String> {
    let copy = work.join(format!("leveldb-{tag}"));
    let _ = std::fs::remove_dir_all(&copy);
    copy_files(dir, &copy);
    if repaired {
        repair(&copy, options).map_err(|e| e.to_string())?;
    }
    let db = Db::open(&copy, options).map_err(|e| e.to_string())?;
    let pairs = db.scan(None, false).map_err(|e| e.to_string())?;
    if repaired {
        // Gets after a repair answer by sequence only once level 0 is compacted.
        db.compact_range(None, None);
    }
    let probes = ["", "a", "k00001", "k00007", "zz"]
        .iter()
        .map(|k| (k.as_bytes().to_vec(), db.get(k.as_bytes()).unwrap()))
        .collect();
    Ok((pairs, probes))
}

/// The writer child: the example binary beside the test's, or this test binary itself.
fn writer_command(dir: &Path, seed: u64, writes: u64) -> Command {
    let exe = std::env::current_exe().unwrap();
    let example = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("examples").join("db_writer"));
    match example.filter(|p| p.is_file()) {
        Some(example) => {
            let mut c = Command::new(example);
            c.arg(dir).arg(seed.to_string()).arg(writes.to_string());
            c
        }
        None => {
            let mut c = child_test("db_faults::writer_child");
            c.env(
                "LEVELTABLE_DB_WRITER",
                format!("{}|{seed}|{writes}", dir.display()),
            );
            c
        }
    }
}

/// Runs as the writer when this binary is its own child (see `writer_command`).
#[test]
fn writer_child() {
    let Ok(spec) = std::env::var("LEVELTABLE_DB_WRITER") else {
        return;
    };
    let mut parts = spec.split('|');
    let dir = PathBuf::from(parts.next().unwrap());
    let seed = parts.next().unwrap().parse().unwrap();
    let writes = parts.next().unwrap().parse().unwrap();
    random_writer(&dir, seed, writes).unwrap();
}

#[test]
fn killed_writers_leave_what_leveldb_recovers() {
    if !require_leveldb() {
        return;
    }
    let kills = count("LEVELTABLE_DB_KILLS", 12);
    let mut seen = 0;
    for i in 0..kills {
        let seed = 0xdead_0000 + i;
        let mut rng = SplitMix(seed);
        let work = scratch_dir();
        let dir = work.path().join("db");
        let target = 1 + rng.below(3000);
        let mut child = writer_command(&dir, seed, 100_000)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        for line in stdout.lines() {
            let Ok(line) = line else { break };
            if line.trim().parse::<u64>().is_ok_and(|n| n >= target) {
                break;
            }
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let ctx = format!("writer {seed} killed after {target} operations");
        if !dir.join("CURRENT").exists() {
            continue;
        }
        let before = dir_state(&dir);
        let ours =
            OurDb::open(&dir, OurOptions::default()).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        let got = entries(&ours);
        let (expected, probes) = leveldb_view(&dir, work.path(), "kill").unwrap();
        assert_eq!(got, expected, "{ctx}");
        seen += got.len();
        assert_probes(&ours, probes, &format!("{ctx}: "));
        ours.verify().unwrap();
        drop(ours);
        let salvaged = OurDb::salvage(&dir, OurOptions::default()).unwrap();
        let got = entries(&salvaged);
        let (expected, probes) = repairdb_view(&dir, work.path()).unwrap();
        assert_eq!(got, expected, "{ctx}: salvage vs RepairDB");
        assert_probes(&salvaged, probes, &format!("{ctx}: salvage "));
        drop(salvaged);
        assert!(
            dir_state(&dir) == before,
            "{ctx}: our reads changed the directory"
        );
    }
    assert!(
        kills == 0 || seen > 0,
        "the writers left nothing to compare"
    );
}

/// While LevelDB rewrites every key in each batch, flushing and compacting, every view we
/// open holds one batch's values for all keys: consistent, never mixed, and never an error
/// other than a table deleted since the open.
#[test]
fn reading_while_leveldb_writes() {
    if !require_leveldb() {
        return;
    }
    let work = scratch_dir();
    let path = work.path().join("db");
    let options = DbOptions {
        write_buffer_size: 64 << 10,
        ..DbOptions::default()
    };
    let db = Db::open(&path, &options).unwrap();
    let keys: Vec<Vec<u8>> = (0..200)
        .map(|i| format!("key{i:04}").into_bytes())
        .collect();
    let write_round = |round: u64| {
        let value = format!("{round:08}").repeat(8).into_bytes();
        let batch: Vec<BatchOp<'_>> = keys.iter().map(|k| BatchOp::Put(k, &value)).collect();
        db.write(&batch).unwrap();
    };
    write_round(0);
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            for round in 1..1500 {
                write_round(round);
            }
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        let mut views = 0;
        while !stop.load(std::sync::atomic::Ordering::SeqCst) || views < 5 {
            let result = OurDb::open(&path, OurOptions::default())
                .and_then(|ours| ours.iter().collect::<Result<Pairs, _>>());
            match result {
                Ok(pairs) => {
                    assert_eq!(pairs.len(), keys.len());
                    assert!(
                        pairs.iter().all(|(_, v)| *v == pairs[0].1),
                        "a view mixed two batches"
                    );
                    views += 1;
                }
                Err(OurError::MissingFile { .. } | OurError::KeptChanging { .. }) => {}
                Err(e) => panic!("reading a live database: {e}"),
            }
        }
    });
}

/// A small database made by LevelDB: its MANIFEST, one table and a log.
fn small_database(work: &Path) -> PathBuf {
    let path = work.join("small");
    {
        let db = Db::open(&path, &DbOptions::default()).unwrap();
        db.put(b"k00001", b"one").unwrap();
        db.put(b"k00007", b"seven").unwrap();
        db.compact_range(None, None);
        db.delete(b"k00001").unwrap();
        db.write(&[BatchOp::Put(b"a", b"x"), BatchOp::Put(b"zz", b"y")])
            .unwrap();
    }
    path
}

/// Entries with their keys as text, for messages.
fn readable(pairs: Pairs) -> Vec<(String, Vec<u8>)> {
    pairs
        .into_iter()
        .map(|(k, v)| (String::from_utf8_lossy(&k).into_owned(), v))
        .collect()
}

/// Flipping each bit of `target(dir)`: our open fails, or gives LevelDB's view.
fn flip_every_bit(target: impl Fn(&Path) -> PathBuf, what: &str, refusals: bool, paranoid: bool) {
    let work = scratch_dir();
    let original = small_database(work.path());
    let len = std::fs::metadata(target(&original)).unwrap().len() as usize;
    let unflipped = entries(&OurDb::open(&original, OurOptions::default()).unwrap());
    let (mut agreed, mut refused, mut changed) = (0, 0, 0);
    for bit in 0..len * 8 {
        let dir = flipped_copy(&original, work.path(), &target, bit);
        let ours = OurDb::open(&dir, OurOptions::default().paranoid_checks(paranoid))
            .and_then(|db| db.iter().collect::<Result<Pairs, _>>().map(|p| (db, p)));
        match ours {
            Err(_) => refused += 1,
            Ok((db, pairs)) => {
                let options = DbOptions {
                    paranoid_checks: paranoid,
                    ..reopen_options()
                };
                let (expected, probes) =
                    leveldb_view_with(&dir, work.path(), "flip", &options, false).unwrap_or_else(
                        |e| panic!("{what} bit {bit}: we opened, LevelDB failed: {e}"),
                    );
                assert_eq!(pairs, expected, "{what} bit {bit}");
                changed += usize::from(pairs != unflipped);
                assert_probes(&db, probes, &format!("{what} bit {bit}: "));
                agreed += 1;
            }
        }
    }
    // A MANIFEST's corruption fails the open; a log's loses records, as LevelDB's does
    // without paranoid checks.
    assert!(
        agreed > 0 && (refused > 0) == refusals,
        "{what}: {agreed} agreed, {refused} refused"
    );
    assert!(refusals || changed > 0, "{what}: no flip changed the view");
}

#[test]
fn every_bit_of_a_manifest_flipped() {
    if !require_leveldb() {
        return;
    }
    flip_every_bit(manifest_file, "MANIFEST", true, false);
}

#[test]
fn every_bit_of_a_log_flipped() {
    if !require_leveldb() {
        return;
    }
    flip_every_bit(log_file, "log", false, false);
    flip_every_bit(log_file, "paranoid log", true, true);
}

#[test]
fn every_bit_of_a_table_flipped() {
    if !require_leveldb() {
        return;
    }
    // Our reads check every block's checksum: a flipped table is an error (or, for a bit
    // LevelDB ignores too, the same answer), never another value.
    flip_every_bit(table_file, "table", true, false);
}

#[test]
fn errors_name_the_file() {
    if !require_leveldb() {
        return;
    }
    let work = scratch_dir();
    let original = small_database(work.path());
    let fresh = |name: &str| {
        let dir = work.path().join(name);
        copy_files(&original, &dir);
        dir
    };
    let message = |dir: &Path| {
        OurDb::open(dir, OurOptions::default())
            .unwrap_err()
            .to_string()
    };

    let dir = fresh("no-current");
    std::fs::remove_file(dir.join("CURRENT")).unwrap();
    assert!(
        message(&dir).starts_with("db: CURRENT: missing: "),
        "{}",
        message(&dir)
    );

    let dir = fresh("no-manifest");
    let manifest = manifest_file(&dir);
    let manifest_name = manifest.file_name().unwrap().to_string_lossy().into_owned();
    std::fs::remove_file(&manifest).unwrap();
    assert_eq!(
        message(&dir),
        format!(
            "db: {manifest_name}: missing: CURRENT names it (CURRENT points to a non-existent file)"
        )
    );

    let dir = fresh("bad-manifest");
    let manifest = dir.join(&manifest_name);
    let mut bytes = std::fs::read(&manifest).unwrap();
    bytes[10] ^= 0x40;
    std::fs::write(&manifest, &bytes).unwrap();
    let m = message(&dir);
    assert!(
        m.starts_with(&format!(
            "db: {manifest_name}: corrupt record (checksum mismatch"
        )),
        "{m}"
    );

    let dir = fresh("no-table");
    let table = table_file(&dir);
    let table_name = table.file_name().unwrap().to_string_lossy().into_owned();
    std::fs::remove_file(&table).unwrap();
    assert_eq!(
        message(&dir),
        format!("db: {table_name}: missing: {manifest_name} lists it (1 table file missing)")
    );

    let dir = fresh("bad-current");
    std::fs::write(dir.join("CURRENT"), manifest_name.as_bytes()).unwrap();
    assert_eq!(
        message(&dir),
        "db: CURRENT: corrupt CURRENT file (does not end with newline) at offset 0"
    );

    // A table deleted after the open: the read that needs it names it and says to reopen.
    let dir = fresh("deleted-later");
    let ours = OurDb::open(&dir, OurOptions::default()).unwrap();
    std::fs::remove_file(dir.join(&table_name)).unwrap();
    let e = ours.get(b"k00007").unwrap_err().to_string();
    assert!(
        e.starts_with(&format!(
            "db: {table_name}: missing: deleted since the database was opened"
        )),
        "{e}"
    );
    assert!(e.ends_with("reopen the database"), "{e}");
    assert!(ours.iter().any(|r| r.is_err()));
}

#[test]
fn another_comparator_is_refused_by_name() {
    if !require_leveldb() {
        return;
    }
    use leveltable_table::Comparator;
    use std::cmp::Ordering;
    use std::sync::Arc;

    /// Bytewise under another name, as an application's comparator would be.
    struct Renamed;
    impl Comparator for Renamed {
        fn name(&self) -> &str {
            "app.Reverse"
        }
        fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
            b.cmp(a)
        }
        fn find_shortest_separator(&self, _: &mut Vec<u8>, _: &[u8]) {}
        fn find_short_successor(&self, _: &mut Vec<u8>) {}
    }
    let work = scratch_dir();
    let original = small_database(work.path());
    let e = OurDb::open(
        &original,
        OurOptions::default().comparator(Arc::new(Renamed)),
    )
    .unwrap_err();
    let manifest = manifest_file(&original);
    assert_eq!(
        e.to_string(),
        format!(
            "db: {}: the database uses comparator leveldb.BytewiseComparator, not app.Reverse; \
             open it with a Comparator named leveldb.BytewiseComparator in DbOptions",
            manifest.file_name().unwrap().to_string_lossy()
        )
    );
}

/// Tables named as before LevelDB 1.14 (`NNNNNN.sst`) are read like `.ldb` ones.
#[test]
fn sst_names_are_read() {
    if !require_leveldb() {
        return;
    }
    let work = scratch_dir();
    let dir = small_database(work.path());
    let (expected, _) = leveldb_view(&dir, work.path(), "ldb").unwrap();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "ldb") {
            std::fs::rename(&p, p.with_extension("sst")).unwrap();
        }
    }
    let ours = OurDb::open(&dir, OurOptions::default()).unwrap();
    let got = entries(&ours);
    assert_eq!(got, expected);
    assert_eq!(ours.get(b"k00007").unwrap(), Some(b"seven".to_vec()));
    let props = ours.properties();
    assert_eq!(props.last_sequence, 5);
    assert_eq!(props.logs.len(), 1);
    assert_eq!(props.log_bytes_dropped, 0);
    assert_eq!(props.levels.iter().flatten().count(), 1);
}

/// A salvage labels the versions of a table the MANIFEST does not list, and RepairDB agrees
/// on what the directory holds; a table that is not a table is skipped and reported.
#[test]
fn salvage_labels_unlisted_tables() {
    use leveltable_db::{Origin, VersionStatus};
    if !require_leveldb() {
        return;
    }
    let work = scratch_dir();
    let dir = small_database(work.path());
    let table = table_file(&dir);
    std::fs::copy(&table, dir.join("000999.ldb")).unwrap();
    std::fs::write(dir.join("000998.ldb"), b"not a table").unwrap();
    let salvaged = OurDb::salvage(&dir, OurOptions::default()).unwrap();
    let versions: Vec<_> = salvaged.versions().collect::<Result<_, _>>().unwrap();
    let unlisted: Vec<_> = versions
        .iter()
        .filter(|v| {
            v.origin
                == Origin::Table {
                    number: 999,
                    level: None,
                }
        })
        .collect();
    assert_eq!(unlisted.len(), 2, "{versions:?}");
    let k1: Vec<_> = versions
        .iter()
        .filter(|v| v.user_key == b"k00001")
        .collect();
    assert_eq!(
        k1[0].status,
        VersionStatus::Deleted,
        "the log's deletion is newest"
    );
    assert!(k1[1..].iter().all(|v| v.status == VersionStatus::Shadowed));
    let skipped = &salvaged.properties().skipped;
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0].0, "000998.ldb");
    let got = entries(&salvaged);
    let (expected, _) = repairdb_view(&dir, work.path()).unwrap();
    assert_eq!(got, expected);
}

/// A table with an unreadable data block in the middle: the salvage keeps the blocks before
/// and after it, as RepairDB does, and the normal open reports the damage.
#[test]
fn salvage_skips_a_damaged_block_like_repairdb() {
    use leveltable_interop::table::Compression;
    if !require_leveldb() {
        return;
    }
    let work = scratch_dir();
    let path = work.path().join("db");
    let options = DbOptions {
        block_size: 256,
        compression: Compression::None,
        ..DbOptions::default()
    };
    {
        let db = Db::open(&path, &options).unwrap();
        for i in 0..300u32 {
            db.put(format!("key{i:05}").as_bytes(), &[i as u8; 40])
                .unwrap();
        }
        db.compact_range(None, None);
        db.put(b"key00001", b"newer, in the log").unwrap();
    }
    let table = table_file(&path);
    let bytes = std::fs::read(&table).unwrap();
    // Find two consecutive data blocks through the index; break the first one's trailer.
    let t =
        leveltable_table::Table::open(bytes.clone(), leveltable_db::dbformat::ldb_read_options())
            .unwrap();
    let mut offsets: Vec<u64> = t
        .entries()
        .map(|e| t.data_block_offset_for(&e.unwrap().0).unwrap().unwrap())
        .collect();
    offsets.dedup();
    assert!(offsets.len() > 4, "{offsets:?}");
    let trailer_type = (offsets[3] - 5) as usize;
    let mut broken = bytes.clone();
    broken[trailer_type] = 0x7f; // no such compression type
    std::fs::write(&table, &broken).unwrap();

    let ours = OurDb::open(&path, OurOptions::default()).unwrap();
    assert!(
        ours.iter().any(|r| r.is_err()),
        "the open reports the damage"
    );
    let salvaged = OurDb::salvage(&path, OurOptions::default()).unwrap();
    let got = entries(&salvaged);
    let (expected, probes) = repairdb_view(&path, work.path()).unwrap();
    assert_eq!(got.len(), expected.len());
    assert_eq!(got, expected);
    assert!(got.len() < 300 && got.len() > 250, "{}", got.len());
    assert!(
        got.iter().any(|(k, _)| k == b"key00299"),
        "blocks after the damage are kept"
    );
    assert_probes(&salvaged, probes, "");
    let skipped = &salvaged.properties().skipped;
    assert!(
        skipped[0]
            .1
            .starts_with("read in part (1 damaged data blocks)"),
        "{skipped:?}"
    );
}

/// Flips each bit of `target(dir)` and compares our salvage with RepairDB's, returning the
/// bits where they differ (with what differed).
fn salvage_flips(target: impl Fn(&Path) -> PathBuf) -> (usize, Vec<(usize, String)>) {
    let work = scratch_dir();
    let original = small_database(work.path());
    let len = std::fs::metadata(target(&original)).unwrap().len() as usize;
    let mut differ = Vec::new();
    for bit in 0..len * 8 {
        let dir = flipped_copy(&original, work.path(), &target, bit);
        let ours = OurDb::salvage(&dir, OurOptions::default())
            .and_then(|db| db.iter().collect::<Result<Pairs, _>>());
        let theirs = repairdb_view(&dir, work.path());
        match (ours, theirs) {
            (Ok(a), Ok((b, _))) if a == b => {}
            (a, b) => differ.push((
                bit,
                format!(
                    "ours {:?} / RepairDB {:?}",
                    a.map(readable),
                    b.map(|(p, _)| readable(p))
                ),
            )),
        }
    }
    (len * 8, differ)
}

/// Every bit of a log flipped: our salvage equals RepairDB's (which reads logs without
/// checksums, so flipped records are applied as they read). Tables are not flipped here:
/// LevelDB 1.23's RepairDB aborts on an assertion (`InternalKey::Encode`, `!rep_.empty()`)
/// for a table whose keys no longer parse.
#[test]
fn salvage_of_a_flipped_log_matches_repairdb() {
    if !require_leveldb() {
        return;
    }
    let (bits, differ) = salvage_flips(log_file);
    assert!(bits > 400);
    assert!(
        differ.is_empty(),
        "{} of {bits} bits differ: {differ:?}",
        differ.len()
    );
}

/// Runs as RepairDB's child when this binary is its own child: repairs the directory, opens
/// it and prints its entries, one `hex(key) hex(value)` line each. LevelDB may abort on an
/// assertion; the parent then sees the signal.
#[test]
fn repair_child() {
    let Ok(dir) = std::env::var("LEVELTABLE_DB_REPAIR") else {
        return;
    };
    let dir = PathBuf::from(dir);
    repair(&dir, &reopen_options()).unwrap();
    let db = Db::open(&dir, &reopen_options()).unwrap();
    for (k, v) in db.scan(None, false).unwrap() {
        println!("ENTRY {} {}", common::hex(&k), common::hex(&v));
    }
    println!("END");
}

/// RepairDB's view of a copy of `dir`, from a child process; `None` if LevelDB failed or
/// aborted.
fn repaired_in_child(dir: &Path, work: &Path) -> Option<Pairs> {
    let copy = work.join("child-repair");
    let _ = std::fs::remove_dir_all(&copy);
    copy_files(dir, &copy);
    let out = child_test("db_faults::repair_child")
        .env("LEVELTABLE_DB_REPAIR", &copy)
        .stderr(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !text.lines().any(|l| l.ends_with("END")) {
        return None;
    }
    Some(
        text.lines()
            // libtest prints `test repair_child ... ` before the first line of output.
            .filter_map(|l| l.split_once("ENTRY ").map(|(_, rest)| rest))
            .map(|l| {
                let (k, v) = l.split_once(' ').unwrap();
                (common::unhex(k), common::unhex(v))
            })
            .collect(),
    )
}

/// Bits of a table flipped (every 13th; `LEVELTABLE_DB_TABLE_FLIP_STEP=1` for all): where
/// RepairDB (in a child, since it may abort) recovers a view, our salvage equals it.
#[test]
fn salvage_of_a_flipped_table_matches_repairdb() {
    if !require_leveldb() {
        return;
    }
    let work = scratch_dir();
    let original = small_database(work.path());
    let len = std::fs::metadata(table_file(&original)).unwrap().len() as usize;
    let (mut agreed, mut aborted) = (0, 0);
    let step = count("LEVELTABLE_DB_TABLE_FLIP_STEP", 13) as usize;
    for bit in (0..len * 8).step_by(step.max(1)) {
        let dir = flipped_copy(&original, work.path(), &table_file, bit);
        let Some(expected) = repaired_in_child(&dir, work.path()) else {
            aborted += 1;
            continue;
        };
        let ours: Pairs = OurDb::salvage(&dir, OurOptions::default())
            .unwrap()
            .iter()
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("bit {bit}: {e}"));
        assert_eq!(ours, expected, "table bit {bit}");
        agreed += 1;
    }
    assert!(agreed > 0, "{agreed} agreed, {aborted} aborted");
}
