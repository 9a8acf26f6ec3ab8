//! Power loss on the paths that write files outside a `WritableDb`'s own writes, run on a
//! [`PowerLossFs`]: what a power loss leaves once each has returned, or at any point of it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use leveltable_db::{BulkOptions, Part, PartBuilder};
use leveltable_powerloss::{Event, PowerLossFs, Trace, Variant};

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
