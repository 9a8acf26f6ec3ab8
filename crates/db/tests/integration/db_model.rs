//! A model test without LevelDB: databases assembled from our own writers (tables at levels
//! 2, 1 and 0, then a log, oldest to newest, as LevelDB's compactions leave them) read back
//! against a model of every version, at random snapshots, from both ends.

use std::collections::BTreeMap;

use leveltable_db::dbformat::InternalKeyComparator;
use leveltable_db::dbformat::{ValueType, append_internal_key, ldb_build_options};
use leveltable_db::log_writer::LogWriter;
use leveltable_db::version_edit::{FileMetaData, VersionEdit};
use leveltable_db::write_batch::WriteBatchBuilder;
use leveltable_db::{Db, DbIter, DbOptions, Error, VersionStatus};
use leveltable_table::{BytewiseComparator, Cache, Comparator, TableBuilder};
use proptest::prelude::*;
use std::sync::Arc;

use crate::common::comparators::Reverse;

/// An internal key and its value.
type Entry = (Vec<u8>, Vec<u8>);

/// One write: (user key, value or deletion).
type Op = (Vec<u8>, Option<Vec<u8>>);

/// The model: every version of every key, by sequence number.
fn visible(ops: &[Op], sequence: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut map = BTreeMap::new();
    for (i, (k, v)) in ops.iter().enumerate() {
        if i as u64 + 1 > sequence {
            break;
        }
        match v {
            Some(v) => map.insert(k.clone(), v.clone()),
            None => map.remove(k),
        };
    }
    map
}

/// Writes the table of `entries` (internal key, value), sorted, as `NNNNNN.ldb`.
fn write_table(
    dir: &std::path::Path,
    user: &Arc<dyn Comparator>,
    number: u64,
    mut entries: Vec<(Vec<u8>, Vec<u8>)>,
) -> FileMetaData {
    let cmp = Arc::new(InternalKeyComparator::new(Arc::clone(user)));
    entries.sort_by(|a, b| cmp.compare(&a.0, &b.0));
    let options = ldb_build_options(Some(10)).block_size(64).comparator(cmp);
    let mut b = TableBuilder::new(Vec::new(), options).unwrap();
    for (k, v) in &entries {
        b.add(k, v).unwrap();
    }
    b.finish().unwrap();
    let bytes = b.into_inner();
    std::fs::write(dir.join(format!("{number:06}.ldb")), &bytes).unwrap();
    FileMetaData {
        number,
        file_size: bytes.len() as u64,
        smallest: entries.first().unwrap().0.clone(),
        largest: entries.last().unwrap().0.clone(),
    }
}

fn entry(ops: &[Op], i: usize) -> (Vec<u8>, Vec<u8>) {
    let (k, v) = &ops[i];
    let mut key = Vec::new();
    let t = if v.is_some() {
        ValueType::Value
    } else {
        ValueType::Deletion
    };
    append_internal_key(&mut key, k, i as u64 + 1, t).unwrap();
    (key, v.clone().unwrap_or_default())
}

/// Builds a database of `ops`: the first `cuts[0]` at level 2 in key-range files, up to
/// `cuts[1]` at level 1, up to `cuts[2]` in two level-0 files, the rest in a log.
fn build(dir: &std::path::Path, ops: &[Op], cuts: [usize; 3]) {
    build_with(
        dir,
        ops,
        cuts,
        &(Arc::new(BytewiseComparator) as Arc<dyn Comparator>),
        3,
    );
}

/// As [`build`], under the user comparator `user`, with up to `keys_per_file` user keys in
/// each file of levels 1 and 2.
fn build_with(
    dir: &std::path::Path,
    ops: &[Op],
    cuts: [usize; 3],
    user: &Arc<dyn Comparator>,
    keys_per_file: usize,
) {
    let mut next = 10u64;
    let mut edit = VersionEdit {
        comparator: Some(user.name().to_string()),
        log_number: Some(5),
        next_file_number: Some(1000),
        last_sequence: Some(cuts[2] as u64),
        ..VersionEdit::default()
    };
    let mut start = 0;
    for (level, end) in [(2usize, cuts[0]), (1, cuts[1])] {
        // Non-overlapping files: split the segment's entries by user key.
        let mut by_key: BTreeMap<Vec<u8>, Vec<Entry>> = BTreeMap::new();
        for i in start..end {
            by_key
                .entry(ops[i].0.clone())
                .or_default()
                .push(entry(ops, i));
        }
        let mut groups: Vec<_> = by_key.into_iter().collect();
        groups.sort_by(|a, b| user.compare(&a.0, &b.0));
        let groups: Vec<_> = groups.into_iter().map(|(_, g)| g).collect();
        for chunk in groups.chunks(keys_per_file) {
            let f = write_table(dir, user, next, chunk.concat());
            next += 1;
            edit.new_files.push((level, f));
        }
        start = end;
    }
    let mid = (start + cuts[2]) / 2;
    for (a, b) in [(start, mid), (mid, cuts[2])] {
        if a < b {
            let f = write_table(dir, user, next, (a..b).map(|i| entry(ops, i)).collect());
            next += 1;
            edit.new_files.push((0, f));
        }
    }
    let mut manifest = LogWriter::new(Vec::new());
    manifest.add_record(&edit.encode()).unwrap();
    std::fs::write(dir.join("MANIFEST-000003"), manifest.into_inner()).unwrap();
    std::fs::write(dir.join("CURRENT"), "MANIFEST-000003\n").unwrap();
    let mut log = LogWriter::new(Vec::new());
    let mut i = cuts[2];
    while i < ops.len() {
        let n = (ops.len() - i).min(1 + i % 3);
        let mut batch = WriteBatchBuilder::new(i as u64 + 1);
        for (k, v) in &ops[i..i + n] {
            match v {
                Some(v) => batch.put(k, v),
                None => batch.delete(k),
            };
        }
        log.add_record(batch.as_bytes()).unwrap();
        i += n;
    }
    std::fs::write(dir.join("000005.log"), log.into_inner()).unwrap();
    // An obsolete log, older than the MANIFEST's log number: never replayed.
    let mut old = LogWriter::new(Vec::new());
    let mut junk = WriteBatchBuilder::new(1);
    junk.put(b"obsolete", b"never seen");
    old.add_record(junk.as_bytes()).unwrap();
    std::fs::write(dir.join("000004.log"), old.into_inner()).unwrap();
}

fn ops_strategy() -> impl Strategy<Value = Vec<Op>> {
    let key = (0u8..12).prop_map(|k| vec![b'k', k]);
    let value = proptest::option::weighted(0.7, proptest::collection::vec(any::<u8>(), 0..20));
    proptest::collection::vec((key, value), 1..120)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn reads_match_the_model(ops in ops_strategy(), a in 0.0f64..1.0, b in 0.0f64..1.0, c in 0.0f64..1.0, seed in any::<u64>()) {
        let n = ops.len();
        let mut cuts = [(a * n as f64) as usize, (b * n as f64) as usize, (c * n as f64) as usize];
        cuts.sort_unstable();
        let dir = tempfile::tempdir().unwrap();
        build(dir.path(), &ops, cuts);
        let db = Db::open(dir.path(), DbOptions::default()).unwrap();
        prop_assert_eq!(db.snapshot(), n as u64);
        for sequence in [n as u64, seed % (n as u64 + 1), (seed >> 8) % (n as u64 + 1)] {
            let model: Vec<(Vec<u8>, Vec<u8>)> = visible(&ops, sequence).into_iter().collect();
            let forward: Vec<_> = db.iter_at(sequence).collect::<Result<_, Error>>().unwrap();
            prop_assert_eq!(&forward, &model);
            let mut backward: Vec<_> = db.iter_at(sequence).rev().collect::<Result<_, Error>>().unwrap();
            backward.reverse();
            prop_assert_eq!(&backward, &model);
            let mut wants = Vec::new();
            for k in 0u8..13 {
                let key = [b'k', k];
                let want = model.iter().find(|(mk, _)| mk[..] == key).map(|(_, v)| v.clone());
                prop_assert_eq!(db.get_at(&key, sequence).unwrap(), want.clone());
                wants.push((key, want));
            }
            // The batch, shuffled and with duplicates, answers what the single gets answer.
            let mut batch: Vec<([u8; 2], Option<Vec<u8>>)> = wants.clone();
            batch.extend(wants.iter().step_by(3).cloned());
            let rot = (seed % batch.len() as u64) as usize;
            batch.rotate_left(rot);
            let mid = batch.len() / 2;
            batch.swap(0, mid);
            let keys: Vec<[u8; 2]> = batch.iter().map(|(k, _)| *k).collect();
            let want: Vec<Option<Vec<u8>>> = batch.into_iter().map(|(_, v)| v).collect();
            prop_assert_eq!(db.get_many_at(&keys, sequence).unwrap(), want);
            let lo = [b'k', (seed % 13) as u8];
            let hi = [b'k', (seed % 7 + 3) as u8];
            let want: Vec<_> = model.iter().filter(|(k, _)| k[..] >= lo[..] && k[..] < hi[..]).cloned().collect();
            let got: Vec<_> = db.range_at(&lo[..]..&hi[..], sequence).collect::<Result<_, Error>>().unwrap();
            prop_assert_eq!(&got, &want);
            prop_assert_eq!(&bulk_read(db.range_at(&lo[..]..&hi[..], sequence), None), &want);
            let stride = (seed % 5) as usize + 1;
            prop_assert_eq!(&bulk_read(db.iter_at(sequence), Some(stride)), &model);
        }
        prop_assert_eq!(db.get(b"obsolete").unwrap(), None);
        let live = db.versions().filter_map(|v| {
            let v = v.unwrap();
            (v.status == VersionStatus::Live).then_some((v.user_key, v.value))
        });
        prop_assert_eq!(live.collect::<Vec<_>>(), visible(&ops, n as u64).into_iter().collect::<Vec<_>>());
        db.verify().unwrap();
        // The salvage sees every version too, the obsolete log's included (RepairDB
        // replays every log); it is older than everything, so only "obsolete" differs.
        let salvaged = Db::salvage(dir.path(), DbOptions::default()).unwrap();
        let mut model = visible(&ops, n as u64);
        if !model.contains_key(&b"obsolete"[..]) {
            // Sequence 1 is shadowed only if op 1 wrote the same key, which it cannot.
            model.insert(b"obsolete".to_vec(), b"never seen".to_vec());
        }
        let got: BTreeMap<_, _> = salvaged.iter().collect::<Result<_, Error>>().unwrap();
        prop_assert_eq!(got, model);
    }
}

/// A batch large enough to be shared between threads answers, key for key, what the
/// model holds, at the latest sequence and at an older snapshot, shuffled and with
/// duplicates and absent keys.
#[test]
fn large_batches_agree_with_the_model() {
    let ops: Vec<Op> = (0..600u32)
        .map(|i| {
            let key = format!("k{:03}", i * 7 % 211).into_bytes();
            (key, (i % 6 != 0).then(|| i.to_le_bytes().to_vec()))
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    build(dir.path(), &ops, [150, 300, 450]);
    let db = Db::open(dir.path(), DbOptions::default()).unwrap();
    let keys: Vec<Vec<u8>> = (0..3 * leveltable_db::GET_MANY_PARALLEL_BATCH as u32)
        .map(|i| format!("k{:03}", i * 37 % 260).into_bytes())
        .collect();
    for sequence in [ops.len() as u64, 333] {
        let model = visible(&ops, sequence);
        let want: Vec<Option<Vec<u8>>> = keys.iter().map(|k| model.get(k).cloned()).collect();
        assert_eq!(db.get_many_at(&keys, sequence).unwrap(), want);
    }
}

/// Reads the whole database at `sequence` forward, backward, and from both ends at once
/// until they meet (`turns.0` steps from the front in every `turns.1`), each equal to
/// `model`.
fn read_every_way(db: &Db, sequence: u64, model: &[Entry], turns: (usize, usize)) {
    let forward: Vec<Entry> = db.iter_at(sequence).collect::<Result<_, Error>>().unwrap();
    assert_eq!(forward, model, "forward at {sequence}");
    let mut backward: Vec<Entry> = db
        .iter_at(sequence)
        .rev()
        .collect::<Result<_, Error>>()
        .unwrap();
    backward.reverse();
    assert_eq!(backward, model, "backward at {sequence}");
    let mut it = db.iter_at(sequence);
    let (mut front, mut back) = (Vec::new(), Vec::new());
    for turn in 0usize.. {
        let from_front = turn % turns.1 < turns.0;
        match if from_front {
            it.next()
        } else {
            it.next_back()
        } {
            Some(e) if from_front => front.push(e.unwrap()),
            Some(e) => back.push(e.unwrap()),
            None => break,
        }
    }
    back.reverse();
    front.extend(back);
    assert_eq!(front, model, "both ends at {sequence}");
    assert_eq!(
        bulk_read(db.iter_at(sequence), None),
        model,
        "in bulk at {sequence}"
    );
    for stride in [1, 2, 7, 500] {
        let got = bulk_read(db.iter_at(sequence), Some(stride));
        assert_eq!(got, model, "in bulk, {stride} at a time, at {sequence}");
    }
}

/// The entries of `it` read with `next_entries`: all in one call, or (`stride`) that many
/// per call with one `next_entry` between the calls.
fn bulk_read(mut it: DbIter, stride: Option<usize>) -> Vec<Entry> {
    let mut got = Vec::new();
    loop {
        let mut n = 0;
        let more = it
            .next_entries(|k, v| {
                got.push((k.to_vec(), v.to_vec()));
                n += 1;
                stride.is_none_or(|s| n < s)
            })
            .unwrap();
        if !more {
            break;
        }
        match it.next_entry() {
            Some(e) => {
                let (k, v) = e.unwrap();
                got.push((k.to_vec(), v.to_vec()));
            }
            None => break,
        }
    }
    assert!(it.next_entry().is_none());
    got
}

/// Scans long enough to fill many batches from each source: large tables of small blocks
/// at levels 2 and 1, two level-0 tables and a log over the same keys, values of mixed
/// sizes (batches end on the entry limit, on the byte limit and at block ends), read
/// forward, backward, from both ends at once and between bounds, at two snapshots.
#[test]
fn long_scans_agree_with_the_model() {
    let ops: Vec<Op> = (0..6000u32)
        .map(|i| {
            let key = format!("k{:05}", u64::from(i) * 7919 % 4000).into_bytes();
            let len = if i % 3 == 0 { i * 37 % 400 } else { i % 7 } as usize;
            (key, (i % 11 != 0).then(|| vec![(i % 251) as u8; len]))
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let user: Arc<dyn Comparator> = Arc::new(BytewiseComparator);
    build_with(dir.path(), &ops, [2500, 4000, 5500], &user, 1500);
    // With a block cache this small, a scan soon counts as long and reads the source that
    // leads the merge straight from its blocks.
    for cache in [None, Some(Cache::shared(1024))] {
        let options = match cache {
            Some(cache) => DbOptions::default().block_cache(cache),
            None => DbOptions::default(),
        };
        let db = Db::open(dir.path(), options).unwrap();
        for sequence in [ops.len() as u64, 4700] {
            let model: Vec<Entry> = visible(&ops, sequence).into_iter().collect();
            // Both ends at once: three steps from the front, then two from the back.
            read_every_way(&db, sequence, &model, (3, 5));
            for (a, b) in [(17u64, 3333u64), (1000, 1001), (2999, 3900), (0, 4000)] {
                let (lo, hi) = (format!("k{a:05}"), format!("k{b:05}"));
                let want: Vec<Entry> = model
                    .iter()
                    .filter(|(k, _)| k[..] >= *lo.as_bytes() && k[..] < *hi.as_bytes())
                    .cloned()
                    .collect();
                let got: Vec<Entry> = db
                    .range_at(lo.as_bytes()..hi.as_bytes(), sequence)
                    .collect::<Result<_, Error>>()
                    .unwrap();
                assert_eq!(got, want, "{lo}..{hi} at {sequence}");
            }
        }
    }
}

/// Values larger than a merge batch's byte budget, so a batch holds one entry and each
/// step reads a new one: keys of several versions in every source (the log's included),
/// read forward, backward and from both ends, at every snapshot.
#[test]
fn values_larger_than_a_batch_agree_with_the_model() {
    let ops: Vec<Op> = (0..48u32)
        .map(|i| {
            let key = format!("k{}", i % 5).into_bytes();
            let len = if i % 2 == 0 {
                70_000 + i as usize
            } else {
                i as usize
            };
            (key, (i % 7 != 3).then(|| vec![i as u8; len]))
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    build(dir.path(), &ops, [12, 24, 36]);
    let db = Db::open(dir.path(), DbOptions::default()).unwrap();
    for sequence in 0..=ops.len() as u64 {
        let model: Vec<Entry> = visible(&ops, sequence).into_iter().collect();
        read_every_way(&db, sequence, &model, (2, 3));
    }
}

#[test]
fn gets_from_many_threads() {
    let ops: Vec<Op> = (0..400u32)
        .map(|i| {
            let key = format!("k{:03}", i % 97).into_bytes();
            (key, (i % 5 != 0).then(|| i.to_le_bytes().to_vec()))
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    build(dir.path(), &ops, [100, 200, 300]);
    // Two open tables at most: threads evict each other's tables all the time.
    let db = Db::open(dir.path(), DbOptions::default().max_open_tables(2)).unwrap();
    let model = visible(&ops, ops.len() as u64);
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (db, model) = (&db, &model);
            s.spawn(move || {
                for round in 0..50u64 {
                    let k = format!("k{:03}", (round * 7 + t * 13) % 100).into_bytes();
                    assert_eq!(db.get(&k).unwrap(), model.get(&k).cloned());
                    if round % 10 == t {
                        let all: BTreeMap<_, _> = db.iter().collect::<Result<_, Error>>().unwrap();
                        assert_eq!(&all, model);
                    }
                }
                assert!(db.open_tables() <= 2);
            });
        }
    });
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// A database under another comparator opens with that comparator, and reads in its
    /// order; without it, it is refused by name.
    #[test]
    fn another_comparator_orders_everything(ops in ops_strategy(), a in 0.0f64..1.0, b in 0.0f64..1.0, c in 0.0f64..1.0) {
        let n = ops.len();
        let mut cuts = [(a * n as f64) as usize, (b * n as f64) as usize, (c * n as f64) as usize];
        cuts.sort_unstable();
        let user: Arc<dyn Comparator> = Arc::new(Reverse);
        let dir = tempfile::tempdir().unwrap();
        build_with(dir.path(), &ops, cuts, &user, 3);
        let refused = Db::open(dir.path(), DbOptions::default()).unwrap_err();
        let refused_by_name =
            matches!(refused, Error::UnknownComparator { ref name, .. } if name == "test.Reverse");
        prop_assert!(refused_by_name);
        let db = Db::open(dir.path(), DbOptions::default().comparator(Arc::clone(&user))).unwrap();
        let mut model: Vec<_> = visible(&ops, n as u64).into_iter().collect();
        model.reverse();
        let got: Vec<_> = db.iter().collect::<Result<_, Error>>().unwrap();
        prop_assert_eq!(&got, &model);
        let mut back: Vec<_> = db.iter().rev().collect::<Result<_, Error>>().unwrap();
        back.reverse();
        prop_assert_eq!(&back, &model);
        let mut keys = Vec::new();
        let mut wants = Vec::new();
        for k in 0u8..13 {
            let key = [b'k', k];
            let want = model.iter().find(|(mk, _)| mk[..] == key).map(|(_, v)| v.clone());
            prop_assert_eq!(db.get(&key).unwrap(), want.clone());
            keys.push(key);
            wants.push(want);
        }
        prop_assert_eq!(db.get_many(&keys).unwrap(), wants);
        // "From k9 down to k3" in this order.
        let (hi, lo) = ([b'k', 9u8], [b'k', 3u8]);
        let want: Vec<_> = model.iter().filter(|(k, _)| k[..] <= hi[..] && k[..] > lo[..]).cloned().collect();
        let got: Vec<_> = db.range(&hi[..]..&lo[..]).collect::<Result<_, Error>>().unwrap();
        prop_assert_eq!(got, want);
    }
}

/// A memtable holding a narrow run of keys (the log's writes): a batch reaching below,
/// into, onto both ends of and above that run, with duplicates, answers what the model
/// holds, at the latest sequence and at older ones: keys outside the run are answered by
/// the tables, keys on its ends by the memtable.
#[test]
fn batches_around_a_narrow_memtable_agree_with_the_model() {
    let mut ops: Vec<Op> = (0..300u32)
        .map(|i| (format!("k{:03}", i).into_bytes(), Some(vec![b'a'; 3])))
        .collect();
    // The log: puts and deletions of k100..=k120 only, its ends included.
    for i in 0..60u32 {
        let key = format!("k{:03}", 100 + i * 7 % 21).into_bytes();
        ops.push((key, (i % 4 != 0).then(|| i.to_le_bytes().to_vec())));
    }
    let dir = tempfile::tempdir().unwrap();
    build(dir.path(), &ops, [150, 300, 300]);
    let db = Db::open(dir.path(), DbOptions::default()).unwrap();
    let mut keys: Vec<Vec<u8>> = (0..320u32)
        .rev()
        .map(|i| format!("k{:03}", i).into_bytes())
        .collect();
    keys.extend([&b"k100"[..], b"k120", b"k099", b"k121", b"k", b"z"].map(<[u8]>::to_vec));
    keys.extend(keys[..40].to_vec());
    for sequence in [ops.len() as u64, 330, 300, 120] {
        let model = visible(&ops, sequence);
        let want: Vec<Option<Vec<u8>>> = keys.iter().map(|k| model.get(k).cloned()).collect();
        assert_eq!(
            db.get_many_at(&keys, sequence).unwrap(),
            want,
            "at {sequence}"
        );
        let few = &keys[..5];
        assert_eq!(
            db.get_many_at(few, sequence).unwrap(),
            want[..5],
            "at {sequence}"
        );
    }
}
