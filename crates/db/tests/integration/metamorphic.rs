//! Metamorphic runs of the writer: one random history (puts, deletes, batches, snapshots
//! held across compactions, flushes, `compact_range`, reopens) replayed under random
//! options — write buffer, table file and block sizes, restart interval, compression,
//! filters, paranoid checks — and with some of its flushes and compactions left out must
//! show the same view at every checkpoint, and that view must be the model's. The options change where every key ends up (which level, which
//! file, which block), so a rule of compaction or of reading that depends on the shape
//! shows up as two runs that disagree.
//!
//! `LEVELTABLE_METAMORPHIC_HISTORIES` sets the number of histories (default 2),
//! `LEVELTABLE_METAMORPHIC_STEPS` their length (default 600), `LEVELTABLE_METAMORPHIC_SEED`
//! the first seed.

use std::collections::BTreeMap;
use std::path::Path;

use leveltable_db::{
    Db, DbOptions, TableOptions, WritableDb, WritableOptions, WriteBatchBuilder, WriteOptions,
};
use leveltable_filter_policy::BloomFilterPolicy;
use leveltable_interop::db::SplitMix;
use leveltable_table::Compression;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

fn count(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One step of a history.
#[derive(Debug, Clone)]
enum Step {
    Write(Vec<(Vec<u8>, Option<Vec<u8>>)>),
    Flush,
    Compact(Option<Vec<u8>>, Option<Vec<u8>>),
    Reopen,
    /// Takes a snapshot, checked (and dropped) at the next checkpoint.
    Snapshot,
    Checkpoint,
}

/// A history: keys in 8 regions, each written in bursts, so that flushes land at
/// different levels and deletions meet older versions deep down.
fn history(seed: u64, steps: u64) -> Vec<Step> {
    let mut rng = SplitMix(seed);
    let mut out = Vec::new();
    let mut region = 0;
    for i in 0..steps {
        if rng.below(40) == 0 {
            region = rng.below(8);
        }
        let key = |rng: &mut SplitMix| format!("{region}-{:04}", rng.below(300)).into_bytes();
        let step = match rng.below(100) {
            0..=79 => {
                let n = 1 + rng.below(3);
                Step::Write(
                    (0..n)
                        .map(|j| {
                            let k = key(&mut rng);
                            if rng.below(4) == 0 {
                                (k, None)
                            } else {
                                let mut v = format!("{i}.{j}:").into_bytes();
                                v.resize(v.len() + rng.below(1500) as usize, b'a' + (i % 26) as u8);
                                (k, Some(v))
                            }
                        })
                        .collect(),
                )
            }
            80..=84 => Step::Flush,
            85..=88 => {
                if rng.below(2) == 0 {
                    Step::Compact(None, None)
                } else {
                    let (a, b) = (key(&mut rng), key(&mut rng));
                    Step::Compact(Some(a.clone().min(b.clone())), Some(a.max(b)))
                }
            }
            89..=90 => Step::Reopen,
            91..=92 => Step::Snapshot,
            _ => Step::Checkpoint,
        };
        out.push(step);
    }
    out.push(Step::Checkpoint);
    out
}

/// Random options: every knob that changes the shape of the files, not their meaning.
fn random_options(seed: u64) -> (WritableOptions, bool, String) {
    let mut rng = SplitMix(seed);
    let buffer = [64 << 10, 100 << 10, 256 << 10, 1 << 20][rng.below(4) as usize];
    let file = [1 << 20, 2 << 20][rng.below(2) as usize];
    let block = [1024, 2048, 4096, 16 << 10][rng.below(4) as usize];
    let restart = [1, 2, 16, 64][rng.below(4) as usize];
    let compression = [Compression::None, Compression::Snappy][rng.below(2) as usize];
    let bits = [0, 1, 10][rng.below(3) as usize];
    let paranoid = rng.below(2) == 0;
    let describe = format!(
        "buffer {buffer}, file {file}, block {block}, restart {restart}, {compression:?}, \
         bloom {bits}, paranoid {paranoid}"
    );
    let options = WritableOptions::default()
        .create_if_missing(true)
        .write_buffer_size(buffer)
        .max_file_size(file)
        .table(
            TableOptions::default()
                .block_size(block)
                .block_restart_interval(restart)
                .compression(compression)
                .filter_policy((bits > 0).then(|| BloomFilterPolicy::new(bits))),
        )
        .read(DbOptions::default().paranoid_checks(paranoid));
    (options, paranoid, describe)
}

/// Replays `steps` under `options`: the view at each checkpoint (the whole database, and
/// what the snapshots taken since the last one see), and the final view by a read-only open.
fn replay(
    dir: &Path,
    steps: &[Step],
    options: &WritableOptions,
    paranoid: bool,
    skip: u64,
) -> Vec<Pairs> {
    let mut rng = SplitMix(skip);
    let open = || WritableDb::open(dir, options.clone()).unwrap();
    let mut db = open();
    let mut views = Vec::new();
    let mut snapshots = Vec::new();
    for step in steps {
        match step {
            Step::Write(ops) => {
                let mut b = WriteBatchBuilder::new(0);
                for (k, v) in ops {
                    match v {
                        Some(v) => b.put(k, v),
                        None => b.delete(k),
                    };
                }
                db.write(&b, WriteOptions::default()).unwrap();
            }
            // Flushes and compactions change no view: a run given `skip` leaves out
            // about half of them, so that its files take another shape.
            Step::Flush | Step::Compact(..) if skip != 0 && rng.below(2) == 0 => {}
            Step::Flush => db.flush().unwrap(),
            Step::Compact(a, b) => db.compact_range(a.as_deref(), b.as_deref()).unwrap(),
            Step::Reopen => {
                snapshots.clear();
                db.close().unwrap();
                db = open();
            }
            Step::Snapshot => snapshots.push(db.snapshot()),
            Step::Checkpoint => {
                for s in snapshots.drain(..) {
                    views.push(db.iter_at(&s).collect::<Result<_, _>>().unwrap());
                }
                views.push(db.iter().collect::<Result<_, _>>().unwrap());
            }
        }
    }
    drop(snapshots);
    db.close().unwrap();
    let ro = Db::open(dir, DbOptions::default().paranoid_checks(paranoid)).unwrap();
    views.push(ro.iter().collect::<Result<_, _>>().unwrap());
    views
}

/// The model's views at the same points.
fn model_views(steps: &[Step]) -> Vec<Pairs> {
    let mut model = Model::new();
    let mut views = Vec::new();
    let mut snapshots: Vec<Model> = Vec::new();
    let pairs = |m: &Model| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    for step in steps {
        match step {
            Step::Write(ops) => {
                for (k, v) in ops {
                    match v {
                        Some(v) => model.insert(k.clone(), v.clone()),
                        None => model.remove(k),
                    };
                }
            }
            Step::Reopen => snapshots.clear(),
            Step::Snapshot => snapshots.push(model.clone()),
            Step::Checkpoint => {
                for s in snapshots.drain(..) {
                    views.push(pairs(&s));
                }
                views.push(pairs(&model));
            }
            Step::Flush | Step::Compact(..) => {}
        }
    }
    views.push(pairs(&model));
    views
}

/// The first difference of two views, for the message.
fn first_difference(a: &Pairs, b: &Pairs) -> String {
    let show = |p: Option<&(Vec<u8>, Vec<u8>)>| {
        p.map(|(k, v)| {
            format!(
                "{}={}",
                String::from_utf8_lossy(k),
                String::from_utf8_lossy(&v[..v.len().min(12)])
            )
        })
    };
    let i = a
        .iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    format!(
        "{} vs {} entries; at {i}: {:?} vs {:?}",
        a.len(),
        b.len(),
        show(a.get(i)),
        show(b.get(i))
    )
}

#[test]
fn one_history_under_random_options_shows_one_view() {
    let histories = count("LEVELTABLE_METAMORPHIC_HISTORIES", 2);
    let steps = count("LEVELTABLE_METAMORPHIC_STEPS", 600);
    let first = count("LEVELTABLE_METAMORPHIC_SEED", 1);
    for seed in first..first + histories {
        let h = history(seed, steps);
        let want = model_views(&h);
        let mut runs: Vec<(String, Vec<Pairs>)> = Vec::new();
        for o in 0..4 {
            let (options, paranoid, describe) = random_options(seed * 1000 + o);
            let dir = tempfile::tempdir().unwrap();
            let skip = if o == 0 { 0 } else { seed * 1000 + o };
            let views = replay(&dir.path().join("db"), &h, &options, paranoid, skip);
            runs.push((describe, views));
        }
        for (describe, views) in &runs {
            assert_eq!(views.len(), want.len());
            for (i, (a, b)) in runs[0].1.iter().zip(views).enumerate() {
                assert!(
                    a == b,
                    "history {seed}, view {i}: [{}] and [{describe}] differ: {}",
                    runs[0].0,
                    first_difference(a, b)
                );
            }
        }
        for (i, (got, want)) in runs[0].1.iter().zip(&want).enumerate() {
            assert!(
                got == want,
                "history {seed}, view {i}: every run differs from the model: {}",
                first_difference(got, want)
            );
        }
    }
}
