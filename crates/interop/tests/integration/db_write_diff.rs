//! Differential tests of `leveltable_db::WritableDb` against LevelDB 1.23: the same random
//! operations (puts, deletes, batches, snapshots, iterators, reopens, `compact_range`,
//! values from 0 bytes to 1 MiB) go to our writer in one directory and to LevelDB in
//! another; after every step both views equal a model. At random points each side closes
//! and the other opens its directory and writes on, both directions at once. At the end
//! LevelDB's `leveldb.sstables` lists a sane tree for both directories, the read-only open
//! sees what LevelDB sees, and our salvage equals `RepairDB` on every directory our writer
//! left.
//!
//! `LEVELTABLE_WRITE_HISTORIES` sets the number of histories (default 50; CI runs 500),
//! `LEVELTABLE_WRITE_STEPS` the operations of each (default 120), and
//! `LEVELTABLE_WRITE_SEED` the first seed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use leveltable_db::{
    Db as ReadDb, DbOptions as ReadOptions, Snapshot as OurSnapshot, WritableDb, WritableOptions,
    WriteBatchBuilder, WriteOptions,
};
use leveltable_filter_policy::BloomFilterPolicy;
use leveltable_interop::db::{
    BatchOp, Db, DbOptions, SplitMix, history_key, history_value, repair,
};
use leveltable_interop::require_leveldb;
use leveltable_interop::table::Compression;

use crate::common;

use common::{count, same};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
type Pairs = Vec<(Vec<u8>, Vec<u8>)>;
/// A key as `leveldb.sstables` shows it: the user key and the sequence number.
type Shown = (Vec<u8>, u64);
/// A table as `leveldb.sstables` lists it: number, smallest and largest keys.
type Listed = (u64, Shown, Shown);

fn pairs(m: &Model) -> Pairs {
    m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// The options of one history, for both sides.
#[derive(Clone, Copy, Debug)]
struct Shape {
    write_buffer_size: usize,
    max_file_size: usize,
    bloom: u32,
    compression: Compression,
    max_value: u64,
    keys: u64,
}

impl Shape {
    fn random(rng: &mut SplitMix) -> Shape {
        Shape {
            write_buffer_size: 64 << 10 << rng.below(3),
            max_file_size: 1 << 20,
            bloom: [0, 10][rng.below(2) as usize],
            compression: if rng.below(3) == 0 {
                Compression::None
            } else {
                Compression::Snappy
            },
            max_value: [20, 200, 2000][rng.below(3) as usize],
            keys: [50, 500, 5000][rng.below(3) as usize],
        }
    }

    fn leveldb(&self) -> DbOptions {
        DbOptions {
            write_buffer_size: self.write_buffer_size,
            max_file_size: self.max_file_size,
            bloom_bits_per_key: self.bloom,
            compression: self.compression,
            ..DbOptions::default()
        }
    }

    fn ours(&self) -> WritableOptions {
        WritableOptions::default()
            .create_if_missing(true)
            .write_buffer_size(self.write_buffer_size)
            .max_file_size(self.max_file_size as u64)
            .table(
                leveltable_db::TableOptions::default()
                    .filter_policy(
                        (self.bloom > 0).then(|| BloomFilterPolicy::new(self.bloom as usize)),
                    )
                    .compression(match self.compression {
                        Compression::None => leveltable_table::Compression::None,
                        _ => leveltable_table::Compression::Snappy,
                    }),
            )
    }

    fn value(&self, rng: &mut SplitMix) -> Vec<u8> {
        match rng.below(400) {
            0 => history_value(rng, 1 << 20),
            1..=8 => history_value(rng, 100 << 10),
            _ => history_value(rng, self.max_value),
        }
    }
}

/// One step's write, applied to both sides and the model.
enum Write {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
}

fn apply(model: &mut Model, ops: &[Write]) {
    for op in ops {
        match op {
            Write::Put(k, v) => {
                model.insert(k.clone(), v.clone());
            }
            Write::Delete(k) => {
                model.remove(k);
            }
        }
    }
}

fn ours_all(db: &WritableDb, snapshot: Option<&OurSnapshot>) -> Pairs {
    let it = match snapshot {
        Some(s) => db.iter_at(s),
        None => db.iter(),
    };
    it.collect::<Result<_, _>>().unwrap()
}

/// The files of each level as LevelDB's `leveldb.sstables` lists them: number and the
/// smallest and largest keys (user key unescaped, sequence number).
fn sstables(text: &str) -> Vec<Vec<Listed>> {
    let unescape = |s: &str| -> Vec<u8> {
        let b = s.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'\\' && b.get(i + 1) == Some(&b'x') && i + 3 < b.len() + 1 {
                out.push(u8::from_str_radix(&s[i + 2..i + 4], 16).unwrap());
                i += 4;
            } else {
                out.push(b[i]);
                i += 1;
            }
        }
        out
    };
    // A key is shown as 'user' @ sequence : type.
    let key = |s: &str| -> Shown {
        let s = s.trim();
        let end = s.rfind("' @ ").expect("a key shown as 'user' @ seq : type");
        let sequence = s[end + 4..].split(" : ").next().unwrap().parse().unwrap();
        (unescape(&s[1..end]), sequence)
    };
    let mut levels: Vec<Vec<Listed>> = Vec::new();
    for line in text.lines() {
        if line.starts_with("--- level") {
            levels.push(Vec::new());
        } else if let Some(rest) = line.strip_prefix(' ') {
            let (number, rest) = rest.split_once(':').unwrap();
            let range = &rest[rest.find('[').unwrap() + 1..rest.len() - 1];
            let (a, b) = range.split_once(" .. ").unwrap();
            levels
                .last_mut()
                .unwrap()
                .push((number.parse().unwrap(), key(a), key(b)));
        }
    }
    levels
}

/// Checks the tree LevelDB reports for `dir`: no two files of a level above 0 overlap;
/// LevelDB and the read-only open see the model's entries.
fn check_tree(dir: &Path, shape: &Shape, model: &Model, ctx: &str) {
    let db = Db::open(dir, &shape.leveldb()).unwrap();
    let text = db.property("leveldb.sstables").unwrap().unwrap();
    same(
        &db.scan(None, false).unwrap(),
        &pairs(model),
        &format!("{ctx}: LevelDB at the end"),
    );
    drop(db);
    let levels = sstables(&text);
    for (level, files) in levels.iter().enumerate().skip(1) {
        let mut sorted = files.clone();
        // Internal-key order: user keys ascending, then sequence numbers descending. Two
        // files may share a user key (a compaction's output cut between its versions), but
        // not a range of internal keys.
        let order = |k: &Shown| (k.0.clone(), std::cmp::Reverse(k.1));
        sorted.sort_by_key(|f| order(&f.1));
        for w in sorted.windows(2) {
            assert!(
                order(&w[0].2) < order(&w[1].1),
                "{ctx}: level {level} overlaps: {} and {}\n{text}",
                w[0].0,
                w[1].0
            );
        }
    }
    // LevelDB's open wrote a new MANIFEST (and may have compacted since the listing): the
    // read-only open reads what it left.
    let ro = ReadDb::open(dir, ReadOptions::default()).unwrap();
    let got: Pairs = ro.iter().collect::<Result<_, _>>().unwrap();
    same(
        &got,
        &pairs(model),
        &format!("{ctx}: read-only open at the end"),
    );
}

/// Our salvage of a copy of `dir` equals `RepairDB` of another copy, then an open.
fn check_salvage(dir: &Path, shape: &Shape, work: &Path, ctx: &str) {
    let a = work.join("salvage");
    let b = work.join("repair");
    for to in [&a, &b] {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_file() && e.file_name() != "LOCK" {
                std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
            }
        }
    }
    let salvaged = ReadDb::salvage(&a, ReadOptions::default()).unwrap();
    let got: Pairs = salvaged.iter().collect::<Result<_, _>>().unwrap();
    repair(&b, &shape.leveldb()).unwrap();
    let want = Db::open(&b, &shape.leveldb())
        .unwrap()
        .scan(None, false)
        .unwrap();
    same(&got, &want, &format!("{ctx}: salvage vs RepairDB"));
    std::fs::remove_dir_all(&a).unwrap();
    std::fs::remove_dir_all(&b).unwrap();
}

/// Runs one history; returns how many side switches it made.
fn history(seed: u64, steps: u64, work: &Path) -> u64 {
    let mut rng = SplitMix(seed);
    let shape = Shape::random(&mut rng);
    let ctx = format!("seed {seed} ({shape:?})");
    let dirs: [PathBuf; 2] = [work.join("a"), work.join("b")];
    let mut model = Model::new();
    // Which directory our writer has; LevelDB has the other.
    let mut ours_at = 0usize;
    let mut switches = 0;
    let mut step = 0;
    let mut last_ours_dir = dirs[0].clone();
    while step < steps {
        let ours = WritableDb::open(&dirs[ours_at], shape.ours())
            .unwrap_or_else(|e| panic!("{ctx}: our open of {}: {e}", dirs[ours_at].display()));
        let theirs = Db::open(&dirs[1 - ours_at], &shape.leveldb()).unwrap();
        last_ours_dir = dirs[ours_at].clone();
        same(
            &ours_all(&ours, None),
            &pairs(&model),
            &format!("{ctx}: ours after open"),
        );
        let mut snapshots = Vec::new();
        while step < steps {
            step += 1;
            let at = format!("{ctx} step {step}");
            let sync = rng.below(20) == 0;
            let w = WriteOptions { sync };
            match rng.below(100) {
                0..=44 => {
                    let (k, v) = (history_key(&mut rng, shape.keys), shape.value(&mut rng));
                    ours.put(&k, &v, w).unwrap();
                    theirs.put(&k, &v).unwrap();
                    assert_eq!(
                        ours.get(&k).unwrap().as_ref(),
                        Some(&v),
                        "{at}: get after put"
                    );
                    apply(&mut model, &[Write::Put(k, v)]);
                }
                45..=59 => {
                    let k = history_key(&mut rng, shape.keys);
                    ours.delete(&k, w).unwrap();
                    theirs.delete(&k).unwrap();
                    assert_eq!(ours.get(&k).unwrap(), None, "{at}: get after delete");
                    apply(&mut model, &[Write::Delete(k)]);
                }
                60..=71 => {
                    let mut ops = Vec::new();
                    for _ in 0..1 + rng.below(20) {
                        let k = history_key(&mut rng, shape.keys);
                        if rng.below(3) == 0 {
                            ops.push(Write::Delete(k));
                        } else {
                            ops.push(Write::Put(k, shape.value(&mut rng)));
                        }
                    }
                    let mut batch = WriteBatchBuilder::default();
                    let mut theirs_ops = Vec::new();
                    for op in &ops {
                        match op {
                            Write::Put(k, v) => {
                                batch.put(k, v);
                                theirs_ops.push(BatchOp::Put(k, v));
                            }
                            Write::Delete(k) => {
                                batch.delete(k);
                                theirs_ops.push(BatchOp::Delete(k));
                            }
                        }
                    }
                    ours.write(&batch, w).unwrap();
                    theirs.write(&theirs_ops).unwrap();
                    apply(&mut model, &ops);
                }
                72..=81 => {
                    let k = history_key(&mut rng, shape.keys);
                    let want = model.get(&k);
                    assert_eq!(ours.get(&k).unwrap().as_ref(), want, "{at}: our get");
                    assert_eq!(theirs.get(&k).unwrap().as_ref(), want, "{at}: LevelDB get");
                }
                82..=85 => {
                    if snapshots.len() < 3 {
                        snapshots.push((ours.snapshot(), theirs.snapshot(), model.clone()));
                    } else {
                        snapshots.remove(rng.below(3) as usize);
                    }
                }
                86..=91 => {
                    let want = pairs(&model);
                    same(&ours_all(&ours, None), &want, &format!("{at}: our scan"));
                    same(
                        &theirs.scan(None, false).unwrap(),
                        &want,
                        &format!("{at}: LevelDB scan"),
                    );
                    let back: Pairs = ours.iter().rev().collect::<Result<_, _>>().unwrap();
                    let mut want_back = want.clone();
                    want_back.reverse();
                    same(&back, &want_back, &format!("{at}: our reverse scan"));
                    for (s_ours, s_theirs, m) in &snapshots {
                        let want = pairs(m);
                        same(
                            &ours_all(&ours, Some(s_ours)),
                            &want,
                            &format!("{at}: our snapshot scan"),
                        );
                        same(
                            &theirs.scan(Some(s_theirs), false).unwrap(),
                            &want,
                            &format!("{at}: LevelDB snapshot scan"),
                        );
                    }
                }
                92..=94 => {
                    let mut a = history_key(&mut rng, shape.keys);
                    let mut b = history_key(&mut rng, shape.keys);
                    if a > b {
                        std::mem::swap(&mut a, &mut b);
                    }
                    let (begin, end) = match rng.below(4) {
                        0 => (None, None),
                        1 => (Some(a.as_slice()), None),
                        2 => (None, Some(b.as_slice())),
                        _ => (Some(a.as_slice()), Some(b.as_slice())),
                    };
                    ours.compact_range(begin, end).unwrap();
                    theirs.compact_range(begin, end);
                    same(
                        &ours_all(&ours, None),
                        &pairs(&model),
                        &format!("{at}: after compact_range"),
                    );
                }
                95..=97 => break,
                _ => {
                    ours_at = 1 - ours_at;
                    switches += 1;
                    break;
                }
            }
        }
        drop(snapshots);
        ours.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));
        theirs.close();
    }
    for dir in &dirs {
        check_tree(dir, &shape, &model, &format!("{ctx}: {}", dir.display()));
    }
    // The directory our writer had last, as it left it (the LevelDB open of the tree
    // check rewrote its MANIFEST; write once more to leave our own files).
    {
        let ours = WritableDb::open(&last_ours_dir, shape.ours()).unwrap();
        let k = history_key(&mut rng, shape.keys);
        let v = shape.value(&mut rng);
        ours.put(&k, &v, WriteOptions::default()).unwrap();
        model.insert(k, v);
        ours.flush().unwrap();
        ours.close().unwrap();
    }
    check_salvage(&last_ours_dir, &shape, work, &ctx);
    switches
}

#[test]
fn histories_agree_with_leveldb() {
    if !require_leveldb() {
        return;
    }
    let histories = count("LEVELTABLE_WRITE_HISTORIES", 50);
    let steps = count("LEVELTABLE_WRITE_STEPS", 120);
    let first = count("LEVELTABLE_WRITE_SEED", 1);
    let mut switches = 0;
    for seed in first..first + histories {
        let work = tempfile::tempdir().unwrap();
        switches += history(seed, steps, work.path());
    }
    eprintln!("{histories} histories of {steps} steps: {switches} switches between the two sides");
    assert!(histories < 20 || switches > histories / 2);
}
