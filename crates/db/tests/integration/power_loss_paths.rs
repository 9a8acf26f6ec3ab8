//! Power loss on the paths that write files outside a `WritableDb`'s own writes, run on a
//! [`PowerLossFs`]: what a power loss leaves once each has returned, or at any point of it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use leveltable_db::{
    BulkOptions, Db, DbOptions, Part, PartBuilder, RepairReport, WritableDb, WritableOptions,
    WriteOptions, destroy_db_on,
};
use leveltable_powerloss::{Event, PowerLossFs, Trace, Variant};

use crate::common::names;

/// Every directory under `root` (itself left out), found on disk.
fn dirs_under(root: &Path) -> BTreeSet<PathBuf> {
    let mut found = BTreeSet::new();
    let mut todo = vec![root.to_owned()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                found.insert(entry.path());
                todo.push(entry.path());
            }
        }
    }
    found
}

/// The directories the run made through the file system.
fn made_dirs(trace: &Trace) -> BTreeSet<PathBuf> {
    trace
        .events
        .iter()
        .filter_map(|e| match e {
            Event::CreateDir { path } => Some(path.clone()),
            _ => None,
        })
        .collect()
}

/// A part built into a staging directory that did not exist, nor its parent: once the
/// build returns, a power loss leaves both directories, the record and every table whole.
#[test]
fn a_built_part_survives_a_power_loss_with_its_directories() {
    let work = tempfile::tempdir().unwrap();
    let staging = work.path().join("stage").join("p1");
    let fs = Arc::new(PowerLossFs::new());
    let options = BulkOptions::default().max_file_size(64 << 10);
    let mut builder = PartBuilder::create_on(fs.clone(), &staging, options).unwrap();
    for i in 0..4000u32 {
        builder
            .add(format!("key{i:06}").as_bytes(), &[b'v'; 100])
            .unwrap();
    }
    let part = builder.finish().unwrap();
    assert!(part.files.len() > 1, "{:?}", part.files.len());
    let trace = fs.trace();

    // A directory made behind the file system's back is one whose name nothing here can
    // tell is durable: every one on disk must have been made through it.
    let made = made_dirs(&trace);
    let unseen: Vec<_> = dirs_under(work.path()).difference(&made).cloned().collect();
    assert!(
        unseen.is_empty(),
        "made without the file system: {unseen:?}"
    );

    let image = trace
        .image_in(&staging, trace.len(), Variant::Durable)
        .expect("the staging directory and its parent survive");
    let record = image.files.get("PART").expect("the part record survives");
    let loaded = Part::from_record(std::str::from_utf8(record).unwrap()).unwrap();
    assert_eq!(loaded.files, part.files);
    for file in &part.files {
        let bytes = image.files.get(&file.name).map(Vec::len);
        assert_eq!(bytes, Some(file.size as usize), "{}", file.name);
    }
}

/// The entries of the database in `dir`, read-only.
fn entries(dir: &Path) -> leveltable_db::Result<usize> {
    Ok(Db::open(dir, DbOptions::default())?.iter().count())
}

/// A database destroyed: wherever a power loss strikes, and whichever of the deletions not
/// yet synced it keeps, the directory is either the whole database or holds no `CURRENT`;
/// never a database that opens without some of its files (a log's writes, a table).
#[test]
fn a_destroyed_database_is_whole_or_no_database_after_a_power_loss() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("db");
    let fs = Arc::new(PowerLossFs::new());
    let options = WritableOptions::default()
        .create_if_missing(true)
        .write_buffer_size(64 << 10)
        .file_system(fs.clone());
    let db = WritableDb::open(&dir, options).unwrap();
    for i in 0..300u32 {
        db.put(
            format!("key{i:04}").as_bytes(),
            &[b'v'; 1000],
            WriteOptions::SYNC,
        )
        .unwrap();
    }
    db.close().unwrap();
    let before = fs.len();
    // Tables, and writes only a log holds.
    let listed = names(&dir);
    assert!(listed.iter().any(|n| n.ends_with(".ldb")), "{listed:?}");
    assert!(listed.iter().any(|n| n.ends_with(".log")), "{listed:?}");

    destroy_db_on(&*fs, &dir).unwrap();
    assert!(!dir.exists());
    let trace = fs.trace();
    let mut checked = 0;
    for at in before..=trace.len() {
        let variants = std::iter::once(Variant::Durable)
            .chain((0..16).map(|seed| Variant::Reordered { seed }));
        for variant in variants {
            let Some(image) = trace.image_in(&dir, at, variant) else {
                continue;
            };
            if !image.files.contains_key("CURRENT") {
                continue;
            }
            let copy = work.path().join(format!("image-{at}-{checked}"));
            image.write_to(&copy).unwrap();
            let files: Vec<&String> = image.files.keys().collect();
            match entries(&copy) {
                Ok(n) => assert_eq!(n, 300, "{variant:?} at {at}: {files:?}"),
                Err(e) => panic!("{variant:?} at {at}: {e} ({files:?})"),
            }
            checked += 1;
        }
    }
    assert!(checked > 0);
    // Once it returned, nothing of it is left to open.
    let image = trace.image_in(&dir, trace.len(), Variant::Durable);
    assert!(
        image
            .as_ref()
            .is_none_or(|i| !i.files.contains_key("CURRENT")),
        "{image:?}"
    );
}

/// A repair's report written to a file, over an older one: at every point a power loss
/// leaves the old report or the new one, whole, and once the write returns, the new one.
#[test]
fn a_written_report_survives_a_power_loss_whole() {
    let work = tempfile::tempdir().unwrap();
    let path = work.path().join("report.json");
    let fs = Arc::new(PowerLossFs::new());
    let mut old = RepairReport::default();
    old.keys = 1;
    old.write_json_on(&*fs, &path).unwrap();
    let before = fs.len();
    let mut new = RepairReport::default();
    new.keys = 2;
    new.comparator = "x".repeat(10_000);
    new.write_json_on(&*fs, &path).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), new.to_json());

    let trace = fs.trace();
    let (old, new) = (old.to_json().into_bytes(), new.to_json().into_bytes());
    for at in 0..=trace.len() {
        let variants = [Variant::Durable, Variant::Tail { seed: at as u64 }]
            .into_iter()
            .chain((0..8).map(|seed| Variant::Reordered { seed }));
        for variant in variants {
            let image = trace.image_in(work.path(), at, variant).unwrap();
            let found = image.files.get("report.json");
            let whole = at < before || found == Some(&old) || found == Some(&new);
            assert!(whole, "{variant:?} at {at}: {:?}", found.map(Vec::len));
        }
    }
    let image = trace.image_in(work.path(), trace.len(), Variant::Durable);
    assert_eq!(image.unwrap().files.get("report.json"), Some(&new));
}
