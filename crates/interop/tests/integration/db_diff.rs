//! Differential tests of `leveltable_db::Db` against LevelDB 1.23: random histories of
//! puts, deletes and batches with flushes, compactions, reopens, snapshots and logs cut at
//! random lengths; our read-only view of a directory must equal LevelDB's (read from a copy,
//! since LevelDB writes on open), and our salvage must equal `RepairDB` followed by an open.
//!
//! `LEVELTABLE_DB_HISTORIES` sets the number of histories (default 120; CI runs 500).

use std::ops::Bound;
use std::path::{Path, PathBuf};

use leveltable_db::{Db as OurDb, DbOptions as OurOptions, VersionStatus};
use leveltable_interop::db::{
    BatchOp, Db, DbOptions, Snapshot, SplitMix, history_key, history_value, repair,
};
use leveltable_interop::require_leveldb;
use leveltable_interop::table::Compression;

use crate::common;

use common::{copy_files, count, dir_state, in_range, same, scratch_dir};

type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

fn ours_all(db: &OurDb) -> Result<Pairs, leveltable_db::Error> {
    db.iter().collect()
}

fn random_bound(rng: &mut SplitMix, keys: u64) -> Bound<Vec<u8>> {
    match rng.below(3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(history_key(rng, keys)),
        _ => Bound::Excluded(history_key(rng, keys)),
    }
}

/// Compares our view with LevelDB's at the latest state: forward, backward, both ends at
/// once, a random range, and gets of present, deleted and absent keys. Errors from our side
/// are returned (a live directory may change under us); mismatches panic.
fn compare(
    ours: &OurDb,
    theirs: &Db,
    rng: &mut SplitMix,
    keys: u64,
    ctx: &str,
) -> Result<(), leveltable_db::Error> {
    let expected = theirs.scan(None, false).unwrap();
    same(
        &ours_all(ours)?,
        &expected,
        &format!("{ctx}: forward iteration"),
    );
    let backward: Pairs = ours.iter().rev().collect::<Result<_, _>>()?;
    let mut theirs_back = theirs.scan(None, true).unwrap();
    same(
        &backward,
        &theirs_back,
        &format!("{ctx}: backward iteration"),
    );
    theirs_back.reverse();
    assert_eq!(
        theirs_back, expected,
        "{ctx}: LevelDB's own directions agree"
    );
    // Both ends at once, in a random interleaving.
    let (mut front, mut back) = (Vec::new(), Vec::new());
    let mut it = ours.iter();
    loop {
        let from_front = rng.one_in(2);
        let item = if from_front {
            it.next()
        } else {
            it.next_back()
        };
        match item {
            None => break,
            Some(entry) if from_front => front.push(entry?),
            Some(entry) => back.push(entry?),
        }
    }
    back.reverse();
    front.extend(back);
    same(&front, &expected, &format!("{ctx}: both ends"));
    let lo = random_bound(rng, keys);
    let hi = random_bound(rng, keys);
    let want: Pairs = expected
        .iter()
        .filter(|(k, _)| in_range(k, &lo, &hi))
        .cloned()
        .collect();
    let got: Pairs = ours
        .range::<Vec<u8>>((lo.clone(), hi.clone()))
        .collect::<Result<_, _>>()?;
    same(&got, &want, &format!("{ctx}: range {lo:?}..{hi:?}"));
    let got_back: Pairs = ours
        .range::<Vec<u8>>((lo.clone(), hi.clone()))
        .rev()
        .collect::<Result<_, _>>()?;
    same(
        &got_back,
        &want.iter().rev().cloned().collect::<Pairs>(),
        &format!("{ctx}: range backward"),
    );
    let mut probes: Vec<Vec<u8>> = expected.iter().map(|(k, _)| k.clone()).collect();
    for _ in 0..40 {
        probes.push(history_key(rng, keys + keys / 4));
    }
    for k in &probes {
        assert_eq!(ours.get(k)?, theirs.get(k).unwrap(), "{ctx}: get {k:?}");
    }
    // Every probe at once, in reverse order (unsorted when the keys were).
    probes.reverse();
    let many = ours.get_many(&probes)?;
    for (k, v) in probes.iter().zip(many) {
        assert_eq!(v, theirs.get(k).unwrap(), "{ctx}: get_many {k:?}");
    }
    Ok(())
}

/// Our view at each snapshot equals LevelDB's through that snapshot.
fn compare_snapshots(
    ours: &OurDb,
    theirs: &Db,
    snapshots: &[(u64, Snapshot<'_>)],
    rng: &mut SplitMix,
    keys: u64,
    ctx: &str,
) -> Result<(), leveltable_db::Error> {
    for (sequence, snapshot) in snapshots {
        let expected = theirs.scan(Some(snapshot), false).unwrap();
        let got: Pairs = ours.iter_at(*sequence).collect::<Result<_, _>>()?;
        same(&got, &expected, &format!("{ctx}: snapshot at {sequence}"));
        let back: Pairs = ours.iter_at(*sequence).rev().collect::<Result<_, _>>()?;
        same(
            &back,
            &expected.iter().rev().cloned().collect::<Pairs>(),
            &format!("{ctx}: snapshot at {sequence}, backward"),
        );
        let mut probes = Vec::new();
        for _ in 0..20 {
            let k = history_key(rng, keys);
            assert_eq!(
                ours.get_at(&k, *sequence)?,
                theirs.get_at(&k, Some(snapshot)).unwrap(),
                "{ctx}: get {k:?} at {sequence}"
            );
            probes.push(k);
        }
        let many = ours.get_many_at(&probes, *sequence)?;
        for (k, v) in probes.iter().zip(many) {
            let want = theirs.get_at(k, Some(snapshot)).unwrap();
            assert_eq!(v, want, "{ctx}: get_many {k:?} at {sequence}");
        }
    }
    Ok(())
}

/// Opens our view of a directory that LevelDB may be changing, retrying while it does.
fn with_live<T>(
    path: &Path,
    ctx: &str,
    mut f: impl FnMut(&OurDb) -> Result<T, leveltable_db::Error>,
) -> T {
    let mut last = None;
    for _ in 0..20 {
        match OurDb::open(path, OurOptions::default()).and_then(|db| f(&db)) {
            Ok(t) => return t,
            Err(e) => last = Some(e),
        }
    }
    panic!("{ctx}: our view kept failing: {}", last.unwrap());
}

fn leveldb_options(rng: &mut SplitMix) -> DbOptions {
    DbOptions {
        // LevelDB raises these to at least 64 KiB and 1 MiB.
        write_buffer_size: 64 << 10,
        max_file_size: 1 << 20,
        block_size: [256, 1024, 4096][rng.below(3) as usize],
        block_restart_interval: 1 + rng.below(16) as u32,
        compression: if rng.one_in(2) {
            Compression::None
        } else {
            Compression::Snappy
        },
        bloom_bits_per_key: if rng.one_in(2) { 10 } else { 0 },
        ..DbOptions::default()
    }
}

/// The newest log of a directory, if any.
fn newest_log(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            let n: u64 = name.strip_suffix(".log")?.parse().ok()?;
            Some((n, dir.join(name)))
        })
        .max()
        .map(|(_, p)| p)
}

/// Our view of a closed directory equals LevelDB's view of a copy; our reads change
/// nothing; our salvage equals `RepairDB` of another copy, then an open.
fn compare_closed(
    path: &Path,
    work: &Path,
    options: &DbOptions,
    rng: &mut SplitMix,
    keys: u64,
    ctx: &str,
) {
    let before = dir_state(path);
    // Few open tables at times, so tables are evicted and reopened mid-iteration.
    let max_open = [1, 2, 990][rng.below(3) as usize];
    let ours = OurDb::open(path, OurOptions::default().max_open_tables(max_open))
        .unwrap_or_else(|e| panic!("{ctx}: open: {e}"));
    let copy = work.join(format!("copy{}", rng.next_u64()));
    copy_files(path, &copy);
    let reopen = DbOptions {
        create_if_missing: false,
        ..options.clone()
    };
    {
        let theirs = Db::open(&copy, &reopen).unwrap();
        compare(&ours, &theirs, rng, keys, ctx).unwrap_or_else(|e| panic!("{ctx}: {e}"));
    }
    ours.verify()
        .unwrap_or_else(|e| panic!("{ctx}: verify: {e}"));
    assert!(
        ours.open_tables() <= max_open,
        "{ctx}: too many open tables"
    );
    // The live versions are what iteration shows; every user key's first version is the
    // newest, and sequence numbers never exceed the last one.
    let versions: Vec<_> = ours.versions().collect::<Result<_, _>>().unwrap();
    let live: Pairs = versions
        .iter()
        .filter(|v| v.status == VersionStatus::Live)
        .map(|v| (v.user_key.clone(), v.value.clone()))
        .collect();
    same(
        &live,
        &ours_all(&ours).unwrap(),
        &format!("{ctx}: live versions"),
    );
    assert!(
        versions.iter().all(|v| v.sequence <= ours.snapshot()),
        "{ctx}"
    );
    for w in versions.windows(2) {
        if w[0].user_key == w[1].user_key {
            assert!(
                w[0].sequence > w[1].sequence,
                "{ctx}: versions out of order"
            );
            assert_eq!(w[1].status, VersionStatus::Shadowed, "{ctx}");
        }
    }
    // Sizes: the whole key space holds every table's bytes, approximately; an empty range
    // none.
    let tables: u64 = ours
        .properties()
        .levels
        .iter()
        .flatten()
        .map(|t| t.size)
        .sum();
    let all = ours.approximate_size(b"", &[0xff; 8]).unwrap();
    assert!(
        all <= tables && all + 4096 * 8 >= tables / 2,
        "{ctx}: {all} of {tables}"
    );
    assert_eq!(ours.approximate_size(b"k1", b"k1").unwrap(), 0, "{ctx}");
    drop(ours);
    assert!(
        dir_state(path) == before,
        "{ctx}: our reads changed the directory"
    );

    // Salvage against RepairDB.
    let salvaged = OurDb::salvage(path, OurOptions::default()).unwrap();
    let repaired = work.join(format!("repair{}", rng.next_u64()));
    copy_files(path, &repaired);
    repair(&repaired, &reopen).unwrap();
    let theirs = Db::open(&repaired, &reopen).unwrap();
    let expected = theirs.scan(None, false).unwrap();
    let got = ours_all(&salvaged).unwrap();
    same(&got, &expected, &format!("{ctx}: salvage vs RepairDB"));
    // LevelDB's gets after a repair search level 0 by file number, not by sequence, until
    // a compaction merges the files; compact first so its gets answer by sequence.
    theirs.compact_range(None, None);
    for k in expected
        .iter()
        .map(|(k, _)| k.clone())
        .chain((0..20).map(|_| history_key(rng, keys)))
    {
        assert_eq!(
            salvaged.get(&k).unwrap(),
            theirs.get(&k).unwrap(),
            "{ctx}: salvage get {k:?}"
        );
    }
    assert!(
        dir_state(path) == before,
        "{ctx}: salvage changed the directory"
    );
}

fn random_history(seed: u64, work: &Path) {
    let mut rng = SplitMix(seed);
    let path = work.join(format!("db{seed}"));
    let options = leveldb_options(&mut rng);
    let keys = 20 + rng.below(400);
    let writes = rng.below(600);
    let max_value = [10, 200, 2000][rng.below(3) as usize];
    let mut sequence = 0u64;
    let ctx = format!("history {seed}");
    let mut db = Db::open(&path, &options).unwrap();
    let mut snapshot_seqs: Vec<u64> = Vec::new();
    let mut i = 0;
    while i < writes {
        // Snapshots live only while the database stays open: collect them per epoch.
        let mut snapshots: Vec<(u64, Snapshot<'_>)> = Vec::new();
        while i < writes {
            i += 1;
            match rng.below(10) {
                0..=5 => {
                    db.put(
                        &history_key(&mut rng, keys),
                        &history_value(&mut rng, max_value),
                    )
                    .unwrap();
                    sequence += 1;
                }
                6 | 7 => {
                    db.delete(&history_key(&mut rng, keys)).unwrap();
                    sequence += 1;
                }
                _ => {
                    let n = 1 + rng.below(10);
                    let owned: Vec<(Vec<u8>, Option<Vec<u8>>)> = (0..n)
                        .map(|_| {
                            (
                                history_key(&mut rng, keys),
                                rng.one_in(3).then(|| history_value(&mut rng, max_value)),
                            )
                        })
                        .collect();
                    let batch: Vec<BatchOp<'_>> = owned
                        .iter()
                        .map(|(k, v)| {
                            v.as_ref()
                                .map_or(BatchOp::Delete(k), |v| BatchOp::Put(k, v))
                        })
                        .collect();
                    db.write(&batch).unwrap();
                    sequence += n;
                }
            }
            if rng.one_in(60) {
                snapshots.push((sequence, db.snapshot()));
                snapshot_seqs.push(sequence);
            }
            if rng.one_in(250) {
                let mut ab = [history_key(&mut rng, keys), history_key(&mut rng, keys)];
                ab.sort();
                db.compact_range(Some(&ab[0]), Some(&ab[1]));
            }
            if rng.one_in(300) {
                db.compact_range(None, None);
            }
            if rng.one_in(200) {
                break; // reopen
            }
        }
        // Compare with LevelDB live, snapshots included.
        with_live(&path, &ctx, |ours| {
            compare(ours, &db, &mut rng, keys, &ctx)?;
            compare_snapshots(ours, &db, &snapshots, &mut rng, keys, &ctx)
        });
        drop(snapshots);
        db.close();
        db = Db::open(&path, &options).unwrap();
    }
    if rng.one_in(4) {
        // After a full compaction LevelDB's version is settled: sizes must agree exactly.
        db.compact_range(None, None);
        let ranges: Vec<[Vec<u8>; 2]> = (0..5)
            .map(|_| {
                let mut r = [history_key(&mut rng, keys), history_key(&mut rng, keys)];
                r.sort();
                r
            })
            .collect();
        with_live(&path, &ctx, |ours| {
            for [a, b] in &ranges {
                let (got, want) = (ours.approximate_size(a, b)?, db.approximate_size(a, b));
                assert_eq!(got, want, "{ctx}: approximate size of {a:?}..{b:?}");
            }
            Ok(())
        });
    }
    db.close();
    if rng.one_in(2)
        && let Some(log) = newest_log(&path)
    {
        let len = std::fs::metadata(&log).unwrap().len();
        let cut = rng.below(len + 1);
        std::fs::OpenOptions::new()
            .write(true)
            .open(&log)
            .unwrap()
            .set_len(cut)
            .unwrap();
    }
    compare_closed(&path, work, &options, &mut rng, keys, &ctx);
}

#[test]
fn random_histories_match_leveldb() {
    if !require_leveldb() {
        return;
    }
    let n = count("LEVELTABLE_DB_HISTORIES", 120);
    let base = count("LEVELTABLE_DB_SEED", 0x5eed);
    let threads = 2;
    std::thread::scope(|s| {
        for t in 0..threads {
            s.spawn(move || {
                for h in (t..n).step_by(threads as usize) {
                    let work = scratch_dir();
                    random_history(base + h, work.path());
                }
            });
        }
    });
}
