//! Power loss during random write histories, checked against LevelDB 1.23.
//!
//! Each history (puts, deletes and batches, synced and not, flushes with a 64 KiB write
//! buffer, compactions, `compact_range`, reopens, each of which starts a new MANIFEST) runs
//! on a [`PowerLossFs`]. One history in three starts from a bulk build: a `DbBuilder`, or
//! parts built apart and committed, through the same file system; its entries count as the
//! first batch, synced once the build returns. Then, at every sync point and between (a sample of them, up to the
//! budget), the directory a power loss would leave is built in four ways (only what was
//! durable; plus part of each unsynced tail; tails torn at a page with zeros after; name
//! operations since the last directory sync kept or lost each) and checked:
//!
//! - once the first open returned, `CURRENT` is there;
//! - it opens in leveltable and in LevelDB 1.23, both with `paranoid_checks`, and both show
//!   the same keys and values;
//! - that view is the state after the first `j` batches for some `j`: no batch partly
//!   there, nothing never written; `j` covers every batch acknowledged with `sync`, every
//!   batch written before a `flush`, `compact_range` or open returned, and no batch not yet
//!   issued;
//! - our writer opens it (the durable image), writes and closes.
//!
//! A torn page that leaves the MANIFEST's last record (written, not yet synced) followed by
//! zeros makes LevelDB refuse the image with or without `paranoid_checks`; ours refuses it
//! when paranoid and otherwise reads the MANIFEST without that record: such images are
//! counted apart and must open so, with a valid view.
//!
//! A paranoid open that refuses a log whose tail a torn page left as zeros ("checksum
//! mismatch", "error in middle of record") is counted apart, as a torn log tail: LevelDB refuses such a log too. The
//! image must then open without `paranoid_checks` in both, with a valid view.
//!
//! `LEVELTABLE_POWER_LOSS_POINTS` sets the number of crash images (default 1000),
//! `LEVELTABLE_POWER_LOSS_SEED` the first history's seed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use leveltable_db::{
    BulkOptions, Db as ReadDb, DbBuilder, DbOptions as ReadOptions, PartBuilder, TableOptions,
    WritableDb, WritableOptions, WriteBatchBuilder, WriteOptions, commit_on,
};
use leveltable_interop::db::{Db, DbOptions, SplitMix};
use leveltable_interop::require_leveldb;
use leveltable_powerloss::{Event, Image, PowerLossFs, Trace, Variant};

use crate::common;

use common::{count, scratch_dir};

type Pairs = Vec<(Vec<u8>, Vec<u8>)>;
type Op = (Vec<u8>, Option<Vec<u8>>);

/// Marks: the kind in the high bits, a batch count or index in the low ones.
const ISSUED: u64 = 1 << 32;
const ACKED: u64 = 2 << 32;
/// Every batch before this count is durable (a flush, `compact_range` or open returned).
const DURABLE: u64 = 3 << 32;
const LOW: u64 = (1 << 32) - 1;

struct Batch {
    ops: Vec<Op>,
    sync: bool,
}

struct Run {
    dir: PathBuf,
    trace: Trace,
    batches: Vec<Batch>,
}

fn writer_options(fs: Option<Arc<PowerLossFs>>) -> WritableOptions {
    let o = WritableOptions::default()
        .create_if_missing(true)
        .write_buffer_size(64 << 10)
        .max_file_size(1 << 20)
        .table(TableOptions::default().block_size(1024));
    match fs {
        Some(fs) => o.file_system(fs),
        None => o,
    }
}

/// Bulk-builds the database `dir` through `fs`: sorted keys of the history's key space,
/// with a [`DbBuilder`] or in parts committed together. Returns its entries as batch 0.
fn bulk_build(fs: &Arc<PowerLossFs>, dir: &Path, rng: &mut SplitMix) -> Batch {
    let mut ops: Vec<Op> = Vec::new();
    for k in 0..400u64 {
        if rng.one_in(2) {
            let mut v = format!("bulk{k}:").into_bytes();
            v.extend((0..rng.below(1800)).map(|n| b'a' + (n % 26) as u8));
            ops.push((format!("key{k:05}").into_bytes(), Some(v)));
        }
    }
    let options = BulkOptions::default()
        .max_file_size(1 + rng.below(64 << 10))
        .table(BulkOptions::default().table.block_size(1024))
        .threads(1 + rng.below(2) as usize);
    let file_system: Arc<dyn leveltable_db::FileSystem> = fs.clone();
    fs.mark(ISSUED);
    if rng.one_in(2) {
        let mut b = DbBuilder::create_on(file_system, dir, options).unwrap();
        for (k, v) in &ops {
            b.add(k, v.as_deref().unwrap()).unwrap();
        }
        b.finish().unwrap();
    } else {
        let parts = 1 + rng.below(3) as usize;
        let per = ops.len().div_ceil(parts).max(1);
        let mut built = Vec::new();
        for (i, chunk) in ops.chunks(per).enumerate() {
            let staging = dir.with_extension(format!("part{i}"));
            let mut p =
                PartBuilder::create_on(file_system.clone(), &staging, options.clone()).unwrap();
            for (k, v) in chunk {
                p.add(k, v.as_deref().unwrap()).unwrap();
            }
            built.push(p.finish().unwrap());
        }
        commit_on(&*file_system, dir, &built, &mut |_, _| {}).unwrap();
    }
    fs.mark(ACKED);
    Batch { ops, sync: true }
}

/// Runs history `seed` of `steps` operations in `dir`.
fn run_history(dir: &Path, seed: u64, steps: u64) -> Run {
    let fs = Arc::new(PowerLossFs::new());
    let mut rng = SplitMix(seed);
    let mut batches: Vec<Batch> = Vec::new();
    if seed % 3 == 0 {
        batches.push(bulk_build(&fs, dir, &mut rng));
    }
    let open = || WritableDb::open(dir, writer_options(Some(Arc::clone(&fs)))).unwrap();
    let mut db = Some(open());
    fs.mark(DURABLE | batches.len() as u64);
    let key = |rng: &mut SplitMix| format!("key{:05}", rng.below(400)).into_bytes();
    for _ in 0..steps {
        let d = db.as_ref().unwrap();
        let r = rng.below(100);
        if r < 84 {
            let i = batches.len() as u64;
            let mut b = WriteBatchBuilder::new(0);
            let mut ops = Vec::new();
            for j in 0..1 + rng.below(4) {
                let k = key(&mut rng);
                if rng.one_in(5) {
                    b.delete(&k);
                    ops.push((k, None));
                } else {
                    let mut v = format!("b{i}.{j}:").into_bytes();
                    let fill = rng.below(1800) as usize;
                    v.extend((0..fill).map(|n| b'a' + ((n as u64 + i) % 26) as u8));
                    b.put(&k, &v);
                    ops.push((k, Some(v)));
                }
            }
            let sync = rng.one_in(3);
            fs.mark(ISSUED | i);
            d.write(&b, WriteOptions { sync }).unwrap();
            fs.mark(ACKED | i);
            batches.push(Batch { ops, sync });
        } else if r < 89 {
            d.flush().unwrap();
            fs.mark(DURABLE | batches.len() as u64);
        } else if r < 94 {
            let (a, b) = (key(&mut rng), key(&mut rng));
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            let whole = rng.one_in(3);
            if whole {
                d.compact_range(None, None).unwrap();
            } else {
                d.compact_range(Some(&lo), Some(&hi)).unwrap();
            }
            fs.mark(DURABLE | batches.len() as u64);
        } else if r < 97 {
            db.take().unwrap().close().unwrap();
            db = Some(open());
            fs.mark(DURABLE | batches.len() as u64);
        }
    }
    db.take().unwrap().close().unwrap();
    Run {
        dir: dir.to_path_buf(),
        trace: fs.trace(),
        batches,
    }
}

/// What a crash at `at` promises: every batch below `lo` is there, none from `hi` on.
fn bounds(run: &Run, at: usize) -> (usize, usize, bool) {
    let (mut lo, mut hi, mut opened) = (0usize, 0usize, false);
    for m in run.trace.marks_before(at) {
        let n = (m & LOW) as usize;
        match m & !LOW {
            ISSUED => hi = n + 1,
            ACKED if run.batches[n].sync => lo = lo.max(n + 1),
            DURABLE => {
                lo = lo.max(n);
                opened = true;
            }
            _ => {}
        }
    }
    (lo, hi, opened)
}

fn apply(model: &mut BTreeMap<Vec<u8>, Vec<u8>>, batch: &Batch) {
    for (k, v) in &batch.ops {
        match v {
            Some(v) => model.insert(k.clone(), v.clone()),
            None => model.remove(k),
        };
    }
}

/// The `j` in `lo..=hi` whose state after `j` batches is `got`, or why none is.
fn prefix_of(run: &Run, got: &Pairs, lo: usize, hi: usize) -> Result<usize, String> {
    let got: BTreeMap<Vec<u8>, Vec<u8>> = got.iter().cloned().collect();
    let mut model = BTreeMap::new();
    for b in &run.batches[..lo] {
        apply(&mut model, b);
    }
    for j in lo..=hi {
        if model == got {
            return Ok(j);
        }
        if j < hi {
            apply(&mut model, &run.batches[j]);
        }
    }
    // Say what is wrong: a value never written, or a batch partly there.
    let mut all = BTreeMap::new();
    for (i, b) in run.batches.iter().enumerate() {
        for (k, v) in &b.ops {
            if let Some(v) = v {
                all.insert((k.clone(), v.clone()), i);
            }
        }
    }
    let never = got
        .iter()
        .find(|(k, v)| !all.contains_key(&((*k).clone(), (*v).clone())));
    Err(match never {
        Some((k, _)) => format!(
            "key {} holds a value never written",
            String::from_utf8_lossy(k)
        ),
        None => format!(
            "the view ({} keys) is no state after batches {lo}..={hi} \
             (a batch partly there, or an acknowledged one lost)",
            got.len()
        ),
    })
}

fn copy_image(image: &Image, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    image.write_to(to).unwrap();
}

fn ours(dir: &Path, paranoid: bool) -> Result<Pairs, String> {
    let db = ReadDb::open(dir, ReadOptions::default().paranoid_checks(paranoid))
        .map_err(|e| e.to_string())?;
    db.iter()
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())
}

fn leveldb(dir: &Path, paranoid: bool) -> Result<Pairs, String> {
    let options = DbOptions {
        create_if_missing: false,
        paranoid_checks: paranoid,
        ..DbOptions::default()
    };
    let db = Db::open(dir, &options).map_err(|e| e.to_string())?;
    db.scan(None, false).map_err(|e| e.to_string())
}

/// What the log readers (LevelDB's and ours) say of a record cut short by zeros: its
/// checksum fails, or its first fragment is followed by no more.
const TORN_LOG_ERRORS: [&str; 3] = [
    "checksum mismatch",
    "error in middle of record",
    "partial record without end",
];

/// Whether some log of `image` ends in zeros: under [`Variant::Torn`], a tail a torn page
/// left (a record's own bytes, the letters and lengths written here, never end a log in a
/// zero once they are whole).
fn has_zero_log_tail(image: &Image) -> bool {
    image
        .files
        .iter()
        .any(|(name, data)| name.ends_with(".log") && data.last() == Some(&0))
}

/// Whether the MANIFEST `CURRENT` names ends in zeros (a torn page, as for a log).
fn has_zero_manifest_tail(image: &Image) -> bool {
    let Some(current) = image.files.get("CURRENT") else {
        return false;
    };
    let name = String::from_utf8_lossy(current).trim_end().to_string();
    image
        .files
        .get(&name)
        .is_some_and(|data| data.last() == Some(&0))
}

#[derive(Default, Debug)]
struct Tally {
    images: u64,
    no_database_yet: u64,
    torn_log_tail: u64,
    torn_manifest_tail: u64,
    resumed: u64,
}

/// Checks the image of a crash at `at` under `variant`.
fn check(
    run: &Run,
    work: &Path,
    at: usize,
    variant: Variant,
    tally: &mut Tally,
) -> Result<(), String> {
    tally.images += 1;
    let image = run
        .trace
        .image_in(&run.dir, at, variant)
        .unwrap_or_default();
    let (lo, hi, opened) = bounds(run, at);
    if !image.files.contains_key("CURRENT") {
        if opened {
            return Err("no CURRENT, though the open had returned".into());
        }
        tally.no_database_yet += 1;
        return Ok(());
    }
    let dir = work.join("image");
    copy_image(&image, &dir);
    let copy = work.join("leveldb");
    copy_image(&image, &copy);
    let (a, b) = (ours(&dir, true), leveldb(&copy, true));
    let view = match (a, b) {
        (Ok(a), Ok(b)) => {
            if a != b {
                return Err(format!(
                    "leveltable shows {} entries, LevelDB {}",
                    a.len(),
                    b.len()
                ));
            }
            a
        }
        (a, b) => {
            let errors = format!(
                "leveltable: {:?}; LevelDB: {:?}",
                a.as_ref().err(),
                b.as_ref().err()
            );
            let torn = matches!(variant, Variant::Torn { .. })
                && has_zero_log_tail(&image)
                && [&a, &b].iter().all(|r| match r {
                    Ok(_) => true,
                    // LevelDB's message names no file; ours names the log.
                    Err(e) => {
                        TORN_LOG_ERRORS.iter().any(|t| e.contains(t))
                            && (e.contains(".log") || e.starts_with("interop:"))
                    }
                });
            // A MANIFEST record torn the same way: an edit never synced, which LevelDB
            // refuses with or without `paranoid_checks`; ours reads without it unless
            // paranoid.
            let manifest_torn = matches!(variant, Variant::Torn { .. })
                && has_zero_manifest_tail(&image)
                && [&a, &b].iter().all(|r| match r {
                    Ok(_) => true,
                    Err(e) => {
                        e.contains("checksum mismatch")
                            && (e.contains("MANIFEST") || e.starts_with("interop:"))
                    }
                });
            if manifest_torn {
                tally.torn_manifest_tail += 1;
                let a = ours(&dir, false).map_err(|e| format!("{errors}; then leveltable: {e}"))?;
                prefix_of(run, &a, lo, hi)?;
                // Our writer starts a new MANIFEST without the torn record: a paranoid
                // open then reads the same view.
                let db = WritableDb::open(&dir, writer_options(None).create_if_missing(false))
                    .map_err(|e| format!("{errors}; then the writer: {e}"))?;
                db.close().map_err(|e| e.to_string())?;
                let after = ours(&dir, true).map_err(|e| format!("after the writer: {e}"))?;
                return if after == a {
                    Ok(())
                } else {
                    Err(format!("{errors}; the writer changed the view"))
                };
            }
            if !torn {
                return Err(format!("a paranoid open failed: {errors}"));
            }
            tally.torn_log_tail += 1;
            copy_image(&image, &copy);
            let a = ours(&dir, false).map_err(|e| format!("{errors}; then leveltable: {e}"))?;
            let b = leveldb(&copy, false).map_err(|e| format!("{errors}; then LevelDB: {e}"))?;
            if a != b {
                return Err(format!("{errors}; then leveltable and LevelDB differ"));
            }
            a
        }
    };
    let j = prefix_of(run, &view, lo, hi)?;
    if variant != Variant::Durable {
        return Ok(());
    }
    // Our writer carries on from the image (the durable one: the slowest check, in a
    // debug build, so once per crash point).
    let db = WritableDb::open(&dir, writer_options(None).create_if_missing(false))
        .map_err(|e| format!("the writer cannot open it: {e}"))?;
    db.put(b"resumed", b"yes", WriteOptions::SYNC)
        .map_err(|e| format!("the writer cannot write: {e}"))?;
    db.close().map_err(|e| e.to_string())?;
    let after = ours(&dir, true).map_err(|e| format!("after the writer resumed: {e}"))?;
    let mut want = view.clone();
    let at_key = want.partition_point(|(k, _)| k.as_slice() < b"resumed".as_slice());
    want.insert(at_key, (b"resumed".to_vec(), b"yes".to_vec()));
    if after != want {
        return Err(format!(
            "after the writer resumed at batch {j}, the view changed"
        ));
    }
    tally.resumed += 1;
    Ok(())
}

/// The crash points of `trace` to check: before and after each sync point, and a few
/// between, at most `budget` of them, spread over the run.
fn crash_points(trace: &Trace, rng: &mut SplitMix, budget: usize) -> Vec<usize> {
    let mut points = std::collections::BTreeSet::new();
    for (i, e) in trace.events.iter().enumerate() {
        if e.is_sync() {
            points.insert(i);
            points.insert(i + 1);
        }
        // Just after a write was acknowledged.
        if matches!(e, Event::Mark(m) if m & !LOW == ACKED) {
            points.insert(i + 1);
        }
    }
    for _ in 0..points.len() / 4 + 1 {
        points.insert(rng.below(trace.len() as u64 + 1) as usize);
    }
    let mut points: Vec<usize> = points.into_iter().collect();
    while points.len() > budget {
        let drop = rng.below(points.len() as u64) as usize;
        points.remove(drop);
    }
    points
}

fn variant(rng: &mut SplitMix, k: u64) -> Variant {
    let seed = rng.next_u64();
    match k % 4 {
        0 => Variant::Durable,
        1 => Variant::Tail { seed },
        2 => Variant::Torn { seed },
        _ => Variant::Reordered { seed },
    }
}

/// Runs histories from `seed` until `images` crash images are checked; panics naming the
/// first that fails.
fn power_loss_run(images: u64, seed: u64, steps: u64) -> Tally {
    let mut tally = Tally::default();
    let mut seed = seed;
    while tally.images < images {
        let work = scratch_dir();
        let run = run_history(&work.path().join("db"), seed, steps);
        let mut rng = SplitMix(seed ^ 0x5eed);
        let budget = (images - tally.images).div_ceil(2).min(150) as usize;
        for at in crash_points(&run.trace, &mut rng, budget) {
            for k in 0..2 {
                if tally.images >= images {
                    break;
                }
                let v = if k == 0 {
                    Variant::Durable
                } else {
                    {
                        let k = 1 + rng.below(3);
                        variant(&mut rng, k)
                    }
                };
                if let Err(e) = check(&run, work.path(), at, v, &mut tally) {
                    let event = run.trace.events.get(at.wrapping_sub(1));
                    panic!(
                        "history {seed} ({} events), crash before event {at} (after {event:?}), \
                         {v:?}: {e}\nimage: {:?}",
                        run.trace.len(),
                        run.trace
                            .image_in(&run.dir, at, v)
                            .unwrap_or_default()
                            .files
                            .iter()
                            .map(|(n, d)| (n.clone(), d.len()))
                            .collect::<Vec<_>>()
                    );
                }
            }
        }
        let _ = &run.dir;
        seed += 1;
    }
    tally
}

#[test]
fn every_crash_image_opens_in_both_and_keeps_every_acknowledged_write() {
    if !require_leveldb() {
        return;
    }
    let images = count("LEVELTABLE_POWER_LOSS_POINTS", 1000);
    let seed = count("LEVELTABLE_POWER_LOSS_SEED", 1);
    let tally = power_loss_run(images, seed, 300);
    eprintln!("power loss: {tally:?}");
    assert_eq!(tally.images, images);
    assert!(tally.resumed > images / 3, "{tally:?}");
}

/// The events of a history, for the unit checks below.
fn events(run: &Run) -> impl Iterator<Item = &Event> {
    run.trace.events.iter()
}

#[test]
fn a_new_database_is_durable_before_its_open_returns() {
    if !require_leveldb() {
        return;
    }
    // LevelDB #189: its NewDB syncs neither the MANIFEST's name nor CURRENT's.
    let work = scratch_dir();
    let dir = work.path().join("db");
    let fs = Arc::new(PowerLossFs::new());
    let db = WritableDb::open(&dir, writer_options(Some(Arc::clone(&fs)))).unwrap();
    let trace = fs.trace();
    let image = trace.image(trace.len(), Variant::Durable);
    assert!(
        image.files.contains_key("CURRENT"),
        "{:?}",
        image.files.keys()
    );
    copy_image(&image, &work.path().join("leveldb"));
    assert_eq!(leveldb(&work.path().join("leveldb"), true), Ok(vec![]));
    drop(db);
    let run = Run {
        dir,
        trace,
        batches: Vec::new(),
    };
    assert!(events(&run).any(|e| matches!(e, Event::SyncDir { .. })));
}

/// The memtable fills with unsynced writes, the writer switches to a new log, and the next
/// write is synced into it before the background flush records the new log in the
/// MANIFEST: the directory a power loss then leaves, written to `image` and `leveldb`
/// under the returned directory.
fn synced_write_into_a_new_log() -> tempfile::TempDir {
    let work = scratch_dir();
    let dir = work.path().join("db");
    let fs = Arc::new(PowerLossFs::new());
    let db = WritableDb::open(&dir, writer_options(Some(Arc::clone(&fs)))).unwrap();
    for i in 0..70u32 {
        db.put(
            format!("k{i:04}").as_bytes(),
            &[b'x'; 1000],
            WriteOptions::default(),
        )
        .unwrap();
    }
    db.put(b"synced", b"1", WriteOptions::SYNC).unwrap();
    let trace = fs.trace();
    drop(db);
    let image = trace.image(trace.len(), Variant::Durable);
    copy_image(&image, &work.path().join("leveldb"));
    copy_image(&image, &work.path().join("image"));
    work
}

#[test]
fn a_synced_write_to_a_new_log_survives_before_the_flush_ends() {
    if !require_leveldb() {
        return;
    }
    // The new log's name must be durable by the time the write is acknowledged.
    let work = synced_write_into_a_new_log();
    let want = Some((b"synced".to_vec(), b"1".to_vec()));
    let has = |view: Pairs| view.into_iter().find(|(k, _)| k == b"synced");
    assert_eq!(
        has(leveldb(&work.path().join("leveldb"), true).unwrap()),
        want
    );
    assert_eq!(has(ours(&work.path().join("image"), true).unwrap()), want);
}

#[test]
fn a_synced_write_to_a_new_log_keeps_the_old_logs_writes() {
    if !require_leveldb() {
        return;
    }
    // google/leveldb#193: the writes acknowledged before it, in the old log, survive too.
    let work = synced_write_into_a_new_log();
    for view in [
        leveldb(&work.path().join("leveldb"), true).unwrap(),
        ours(&work.path().join("image"), true).unwrap(),
    ] {
        assert_eq!(view.len(), 71, "{:?}", view.first().map(|(k, _)| k));
    }
}

/// An empty batch written with `sync` is a barrier, as LevelDB's is (it logs an empty
/// record and syncs): every write before it survives a power loss right after it.
#[test]
fn an_empty_synced_batch_makes_the_writes_before_it_durable() {
    let work = scratch_dir();
    let dir = work.path().join("db");
    let fs = Arc::new(PowerLossFs::new());
    let db = WritableDb::open(&dir, writer_options(Some(Arc::clone(&fs)))).unwrap();
    for i in 0..10u32 {
        let key = format!("k{i:04}");
        db.put(key.as_bytes(), b"v", WriteOptions::default())
            .unwrap();
    }
    let before = fs.trace();
    db.write(&WriteBatchBuilder::new(0), WriteOptions::SYNC)
        .unwrap();
    let trace = fs.trace();
    drop(db);
    for (trace, want) in [(before, 0), (trace, 10)] {
        let image = trace.image(trace.len(), Variant::Durable);
        let at = work.path().join(format!("image{want}"));
        copy_image(&image, &at);
        assert_eq!(ours(&at, true).unwrap().len(), want);
        if require_leveldb() {
            let at = work.path().join(format!("leveldb{want}"));
            copy_image(&image, &at);
            assert_eq!(leveldb(&at, true).unwrap().len(), want);
        }
    }
}

/// A part built elsewhere and staged by a plain copy (written, never synced) is committed
/// by hard links: a power loss once the commit returned leaves every table whole, and
/// LevelDB reads the database.
#[test]
fn a_part_staged_unsynced_is_durable_once_committed() {
    let work = scratch_dir();
    let mut builder =
        PartBuilder::create(work.path().join("elsewhere"), BulkOptions::default()).unwrap();
    for i in 0..2000u32 {
        builder
            .add(format!("key{i:06}").as_bytes(), &[b'v'; 100])
            .unwrap();
    }
    let built = builder.finish().unwrap();
    let fs = Arc::new(PowerLossFs::new());
    let staging = work.path().join("staging");
    std::fs::create_dir(&staging).unwrap();
    for f in &built.files {
        let bytes = std::fs::read(built.staging.join(&f.name)).unwrap();
        let mut out = leveltable_db::FileSystem::create_new(&*fs, &staging.join(&f.name)).unwrap();
        std::io::Write::write_all(&mut out, &bytes).unwrap();
        out.close().unwrap();
    }
    let part = leveltable_db::Part {
        staging,
        files: built.files.clone(),
    };
    let dir = work.path().join("db");
    commit_on(&*fs, &dir, &[part], &mut |_, _| {}).unwrap();
    let trace = fs.trace();
    let image = trace
        .image_in(&dir, trace.len(), Variant::Durable)
        .expect("the database's directory is durable");
    let at = work.path().join("image");
    image.write_to(&at).unwrap();
    let tables: Vec<usize> = image
        .files
        .iter()
        .filter(|(name, _)| name.ends_with(".ldb"))
        .map(|(_, bytes)| bytes.len())
        .collect();
    let sizes: Vec<usize> = built.files.iter().map(|f| f.size as usize).collect();
    assert_eq!(tables, sizes, "the tables after a power loss");
    assert_eq!(ours(&at, true).unwrap().len(), 2000);
    if require_leveldb() {
        assert_eq!(leveldb(&at, true).unwrap().len(), 2000);
    }
}
