//! Differential tests of `leveltable_db::WritableDb` against LevelDB 1.23 over long
//! histories with the smallest write buffer and tables, so that flushes and compactions
//! run all the time: snapshots held across many compactions (gets and ranges through
//! them), iterators held open (forward, backward, both ends, over a range) while the
//! compactions delete the files they read, `approximate_size` of the same files, and the
//! directory handed back and forth between the two writers. Every read of the latest state
//! must equal LevelDB's and a model's; reads through a snapshot must equal the model's at
//! the snapshot. LevelDB takes no snapshots: with one held, LevelDB 1.23 can keep two
//! versions of a key in two tables of a level and then compact the first without the
//! second (`SetupOtherInputs` widens only the upper level's inputs to such boundaries),
//! bringing back a deleted value. Our compactions widen both levels' inputs.
//!
//! `LEVELTABLE_HELD_HISTORIES` sets the number of histories (default 3),
//! `LEVELTABLE_HELD_STEPS` their length (default 1500), `LEVELTABLE_HELD_SEED` the first
//! seed.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::{Path, PathBuf};

use leveltable_db::{
    DbIter, Snapshot as OurSnapshot, TableOptions, WritableDb, WritableOptions, WriteBatchBuilder,
    WriteOptions,
};
use leveltable_interop::db::{BatchOp, Db, DbOptions, SplitMix, history_key, history_value};
use leveltable_interop::require_leveldb;
use leveltable_interop::table::Compression;

use crate::common::{count, in_range, same};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
type Pairs = Vec<(Vec<u8>, Vec<u8>)>;
type Range = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// A key in one of eight regions, written in bursts so that flushes land at different
/// levels; sometimes one of the order's edges (the empty key, 0x00 and 0xff bytes).
/// Reads take `region` `None`, any region.
fn key_in(rng: &mut SplitMix, keys: u64, region: Option<u64>) -> Vec<u8> {
    let mut k = history_key(rng, keys);
    if k.first() == Some(&b'k') {
        k[0] = b'a' + region.unwrap_or_else(|| rng.below(8)) as u8;
    }
    k
}

fn key(rng: &mut SplitMix, keys: u64) -> Vec<u8> {
    key_in(rng, keys, None)
}

fn random_range(rng: &mut SplitMix, keys: u64) -> Range {
    let bound = |rng: &mut SplitMix| match rng.below(4) {
        0 => Bound::Unbounded,
        1 | 2 => Bound::Included(key(rng, keys)),
        _ => Bound::Excluded(key(rng, keys)),
    };
    (bound(rng), bound(rng))
}

fn as_slices(r: &Range) -> (Bound<&[u8]>, Bound<&[u8]>) {
    (
        r.0.as_ref().map(Vec::as_slice),
        r.1.as_ref().map(Vec::as_slice),
    )
}

fn options(bloom: bool, compression: Compression) -> (WritableOptions, DbOptions) {
    let ours = WritableOptions::default()
        .create_if_missing(true)
        .write_buffer_size(64 << 10)
        .max_file_size(1 << 20)
        .table(
            TableOptions::default()
                .block_size(1024)
                .filter_policy(bloom.then(|| leveltable_filter_policy::BloomFilterPolicy::new(10)))
                .compression(match compression {
                    Compression::None => leveltable_table::Compression::None,
                    _ => leveltable_table::Compression::Snappy,
                }),
        );
    let theirs = DbOptions {
        write_buffer_size: 64 << 10,
        max_file_size: 1 << 20,
        block_size: 1024,
        bloom_bits_per_key: if bloom { 10 } else { 0 },
        compression,
        ..DbOptions::default()
    };
    (ours, theirs)
}

/// An iterator of ours held open, read a few entries at a time from either end, and what
/// LevelDB saw in its range when it was made.
struct Held {
    it: DbIter,
    want: Pairs,
    front: Pairs,
    back: Pairs,
    done: bool,
    what: String,
}

impl Held {
    /// Reads up to `n` entries from the front (or the back).
    fn advance(&mut self, n: u64, back: bool) {
        for _ in 0..n {
            if self.done {
                return;
            }
            let e = if back {
                self.it.next_back()
            } else {
                self.it.next()
            };
            match e {
                Some(e) => {
                    let e = e.unwrap_or_else(|e| panic!("{}: {e}", self.what));
                    if back {
                        self.back.push(e);
                    } else {
                        self.front.push(e);
                    }
                }
                None => self.done = true,
            }
        }
    }

    fn finish(mut self) {
        while !self.done {
            self.advance(64, false);
        }
        assert!(self.it.next().is_none() && self.it.next_back().is_none());
        self.back.reverse();
        self.front.append(&mut self.back);
        same(&self.front, &self.want, &self.what);
    }
}

/// Everything LevelDB sees in `range`, in order.
fn theirs_in(theirs: &Db, range: &Range) -> Pairs {
    let mut all = theirs.scan(None, false).unwrap();
    all.retain(|(k, _)| in_range(k, &range.0, &range.1));
    all
}

/// The model's entries in `range`.
fn in_model(model: &Model, range: &Range) -> Pairs {
    model
        .iter()
        .filter(|(k, _)| in_range(k, &range.0, &range.1))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn history(seed: u64, steps: u64, work: &Path) {
    let mut rng = SplitMix(seed);
    let keys = [40, 300, 2000][rng.below(3) as usize];
    let max_value = [100, 1000, 4000][rng.below(3) as usize];
    let compression = if rng.one_in(2) {
        Compression::None
    } else {
        Compression::Snappy
    };
    let (ours_options, theirs_options) = options(rng.one_in(2), compression);
    let ctx = format!("seed {seed} (keys {keys}, values to {max_value}, {compression:?})");
    let dirs: [PathBuf; 2] = [work.join("a"), work.join("b")];
    let mut ours_at = 0;
    let mut step = 0;
    let mut region = 0;
    let mut model = Model::new();
    while step < steps {
        let ours = WritableDb::open(&dirs[ours_at], ours_options.clone())
            .unwrap_or_else(|e| panic!("{ctx}: our open: {e}"));
        let theirs = Db::open(&dirs[1 - ours_at], &theirs_options).unwrap();
        same(
            &ours.iter().collect::<Result<Pairs, _>>().unwrap(),
            &theirs.scan(None, false).unwrap(),
            &format!("{ctx} step {step}: after open"),
        );
        let mut snapshots: Vec<(OurSnapshot, Model)> = Vec::new();
        let mut held: Vec<Held> = Vec::new();
        while step < steps {
            step += 1;
            let at = format!("{ctx} step {step}");
            if rng.one_in(50) {
                region = rng.below(8);
            }
            let value = |rng: &mut SplitMix| {
                let max = if rng.one_in(10) { 16 << 10 } else { max_value };
                history_value(rng, max)
            };
            match rng.below(200) {
                0..=59 => {
                    let (k, v) = (key_in(&mut rng, keys, Some(region)), value(&mut rng));
                    ours.put(&k, &v, WriteOptions::default()).unwrap();
                    theirs.put(&k, &v).unwrap();
                    model.insert(k, v);
                }
                60..=79 => {
                    let k = key_in(&mut rng, keys, Some(region));
                    ours.delete(&k, WriteOptions::default()).unwrap();
                    theirs.delete(&k).unwrap();
                    model.remove(&k);
                }
                80..=99 => {
                    let mut ops: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
                    for _ in 0..1 + rng.below(30) {
                        let k = key_in(&mut rng, keys, Some(region));
                        let v = (!rng.one_in(3)).then(|| value(&mut rng));
                        ops.push((k, v));
                    }
                    let mut batch = WriteBatchBuilder::default();
                    let mut theirs_ops = Vec::new();
                    for (k, v) in &ops {
                        match v {
                            Some(v) => {
                                batch.put(k, v);
                                theirs_ops.push(BatchOp::Put(k, v));
                            }
                            None => {
                                batch.delete(k);
                                theirs_ops.push(BatchOp::Delete(k));
                            }
                        }
                    }
                    ours.write(&batch, WriteOptions::default()).unwrap();
                    theirs.write(&theirs_ops).unwrap();
                    for (k, v) in ops {
                        match v {
                            Some(v) => {
                                model.insert(k, v);
                            }
                            None => {
                                model.remove(&k);
                            }
                        }
                    }
                }
                100..=119 => {
                    // Gets, now and at every snapshot.
                    let k = key(&mut rng, keys);
                    assert_eq!(ours.get(&k).unwrap(), theirs.get(&k).unwrap(), "{at}: get");
                    for (i, (s, t)) in snapshots.iter().enumerate() {
                        assert_eq!(
                            ours.get_at(&k, s).unwrap().as_ref(),
                            t.get(&k),
                            "{at}: get at snapshot {i} of {k:?}"
                        );
                    }
                }
                120..=127 => {
                    if snapshots.len() < 6 {
                        snapshots.push((ours.snapshot(), model.clone()));
                    } else if rng.one_in(3) {
                        snapshots.remove(rng.below(6) as usize);
                    }
                }
                128..=137 => {
                    // A range through a snapshot (or now), forward or backward.
                    let range = random_range(&mut rng, keys);
                    let pick = rng.below(snapshots.len() as u64 + 1) as usize;
                    let (got, want) = match snapshots.get(pick) {
                        Some((s, t)) => (
                            ours.range_at::<[u8]>(as_slices(&range), s),
                            in_model(t, &range),
                        ),
                        None => (
                            ours.range::<[u8]>(as_slices(&range)),
                            theirs_in(&theirs, &range),
                        ),
                    };
                    if rng.one_in(2) {
                        let got: Pairs = got.collect::<Result<_, _>>().unwrap();
                        same(&got, &want, &format!("{at}: range {range:?} at {pick}"));
                    } else {
                        let mut got: Pairs = got.rev().collect::<Result<_, _>>().unwrap();
                        got.reverse();
                        same(
                            &got,
                            &want,
                            &format!("{at}: reverse range {range:?} at {pick}"),
                        );
                    }
                }
                138..=145 => {
                    if held.len() < 4 {
                        let range = if rng.one_in(2) {
                            (Bound::Unbounded, Bound::Unbounded)
                        } else {
                            random_range(&mut rng, keys)
                        };
                        held.push(Held {
                            it: ours.range::<[u8]>(as_slices(&range)),
                            want: theirs_in(&theirs, &range),
                            front: Vec::new(),
                            back: Vec::new(),
                            done: false,
                            what: format!("{at}: iterator held over {range:?}"),
                        });
                    } else {
                        held.remove(rng.below(4) as usize).finish();
                    }
                }
                146..=169 => {
                    if !held.is_empty() {
                        let i = rng.below(held.len() as u64) as usize;
                        let n = 1 + rng.below(30);
                        held[i].advance(n, rng.one_in(3));
                    }
                }
                170..=175 => {
                    let range = random_range(&mut rng, keys);
                    let key = |b: &Bound<Vec<u8>>| match b {
                        Bound::Included(k) | Bound::Excluded(k) => Some(k.clone()),
                        Bound::Unbounded => None,
                    };
                    let (mut a, mut b) = (key(&range.0), key(&range.1));
                    if let (Some(x), Some(y)) = (&a, &b)
                        && x > y
                    {
                        std::mem::swap(&mut a, &mut b);
                    }
                    ours.compact_range(a.as_deref(), b.as_deref()).unwrap();
                    theirs.compact_range(a.as_deref(), b.as_deref());
                }
                176..=179 => ours.flush().unwrap(),
                180..=197 => {
                    let all_ours: Pairs = ours.iter().collect::<Result<_, _>>().unwrap();
                    let full = (Bound::Unbounded, Bound::Unbounded);
                    let m = in_model(&model, &full);
                    same(
                        &theirs.scan(None, false).unwrap(),
                        &m,
                        &format!("{at}: LevelDB vs model"),
                    );
                    same(&all_ours, &m, &format!("{at}: ours vs model"));
                    same(
                        &all_ours,
                        &theirs.scan(None, false).unwrap(),
                        &format!("{at}: scan"),
                    );
                    let mut back: Pairs = ours.iter().rev().collect::<Result<_, _>>().unwrap();
                    back.reverse();
                    same(&back, &all_ours, &format!("{at}: reverse scan"));
                    for (i, (s, t)) in snapshots.iter().enumerate() {
                        let got: Pairs = ours.iter_at(s).collect::<Result<_, _>>().unwrap();
                        same(&got, &in_model(t, &full), &format!("{at}: snapshot {i}"));
                    }
                }
                198 => {
                    if rng.one_in(4) {
                        break;
                    }
                }
                _ => {
                    if rng.one_in(4) {
                        ours_at = 1 - ours_at;
                        break;
                    }
                }
            }
        }
        for h in held.drain(..) {
            h.finish();
        }
        drop(snapshots);
        ours.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));
        theirs.close();
    }
    // Both directories, each opened by the other side at the end.
    for (i, dir) in dirs.iter().enumerate() {
        let theirs = Db::open(dir, &theirs_options).unwrap();
        let want = theirs.scan(None, false).unwrap();
        theirs.close();
        let ours = WritableDb::open(dir, ours_options.clone()).unwrap();
        let got: Pairs = ours.iter().collect::<Result<_, _>>().unwrap();
        same(&got, &want, &format!("{ctx}: directory {i} at the end"));
        ours.close().unwrap();
    }
    approximate_sizes(
        &dirs[ours_at],
        &ours_options,
        &theirs_options,
        &mut rng,
        keys,
        &ctx,
    );
}

/// After a full `compact_range` and a close, LevelDB opens the same files and must give
/// the same `approximate_size` for any range, and list the same tables.
fn approximate_sizes(
    dir: &Path,
    ours_options: &WritableOptions,
    theirs_options: &DbOptions,
    rng: &mut SplitMix,
    keys: u64,
    ctx: &str,
) {
    let ranges: Vec<(Vec<u8>, Vec<u8>)> = (0..20)
        .map(|_| {
            let (a, b) = (key(rng, keys), key(rng, keys));
            (a.clone().min(b.clone()), a.max(b))
        })
        .collect();
    let ours = WritableDb::open(dir, ours_options.clone()).unwrap();
    ours.compact_range(None, None).unwrap();
    let got: Vec<u64> = ranges
        .iter()
        .map(|(a, b)| ours.approximate_size(a, b).unwrap())
        .collect();
    let names: Vec<String> = (0..8)
        .map(|l| format!("leveldb.num-files-at-level{l}"))
        .chain(["leveldb.sstables".to_string()])
        .collect();
    let ours_properties: Vec<Option<String>> = names.iter().map(|n| ours.property(n)).collect();
    ours.close().unwrap();
    let theirs = Db::open(dir, theirs_options).unwrap();
    let want: Vec<u64> = ranges
        .iter()
        .map(|(a, b)| theirs.approximate_size(a, b))
        .collect();
    let theirs_properties: Vec<Option<String>> =
        names.iter().map(|n| theirs.property(n).unwrap()).collect();
    theirs.close();
    assert_eq!(got, want, "{ctx}: approximate sizes of {ranges:?}");
    assert_eq!(ours_properties, theirs_properties, "{ctx}: properties");
}

#[test]
fn held_snapshots_and_iterators_agree_with_leveldb() {
    if !require_leveldb() {
        return;
    }
    let histories = count("LEVELTABLE_HELD_HISTORIES", 3);
    let steps = count("LEVELTABLE_HELD_STEPS", 1500);
    let first = count("LEVELTABLE_HELD_SEED", 1);
    for seed in first..first + histories {
        let work = tempfile::tempdir().unwrap();
        history(seed, steps, work.path());
    }
}
