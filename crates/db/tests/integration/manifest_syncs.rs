//! What an open for writing costs in syncs: a new MANIFEST's two records (the state, then
//! the change) are made durable by one sync, before `CURRENT` names it, as LevelDB's
//! `LogAndApply` does; the new log's name, synced with the MANIFEST's, is not synced again.

use crate::common;

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::wrapped_fs::{WrapFile, Wrapped};
use leveltable_db::{
    Db, DbOptions, FileSystem, WritableDb, WritableFile, WritableOptions, WriteOptions,
};

/// The syncs of each file created, by file name.
#[derive(Debug, Default)]
struct CountSyncs(Arc<Mutex<BTreeMap<String, usize>>>);

struct Counted {
    inner: Box<dyn WritableFile>,
    name: String,
    syncs: Arc<Mutex<BTreeMap<String, usize>>>,
}

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl WritableFile for Counted {
    fn sync(&mut self) -> io::Result<()> {
        self.inner.sync()?;
        *self
            .syncs
            .lock()
            .unwrap()
            .entry(self.name.clone())
            .or_default() += 1;
        Ok(())
    }

    fn close(self: Box<Self>) -> io::Result<()> {
        self.inner.close()
    }
}

impl WrapFile for CountSyncs {
    fn wrap(&self, path: &Path, file: Box<dyn WritableFile>) -> Box<dyn WritableFile> {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        self.0.lock().unwrap().entry(name.clone()).or_default();
        Box::new(Counted {
            inner: file,
            name,
            syncs: Arc::clone(&self.0),
        })
    }
}

/// The sync counts of the files whose names `pick` picks, in name order.
fn syncs_of(syncs: &BTreeMap<String, usize>, pick: impl Fn(&str) -> bool) -> Vec<usize> {
    syncs
        .iter()
        .filter(|(name, _)| pick(name))
        .map(|(_, &n)| n)
        .collect()
}

/// Reopening a database writes a new MANIFEST holding its state and the open's change:
/// one sync for the MANIFEST, one for the file that becomes `CURRENT`, and what was
/// written before reads back.
#[test]
fn a_new_manifest_is_synced_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let options = WritableOptions::default().create_if_missing(true);
    let db = WritableDb::open(&dir, options).unwrap();
    for i in 0..100u32 {
        let key = format!("key{i:03}");
        db.put(key.as_bytes(), b"value", WriteOptions { sync: false })
            .unwrap();
    }
    db.close().unwrap();

    let syncs = Arc::new(Mutex::new(BTreeMap::new()));
    let options =
        WritableOptions::default().file_system(Arc::new(Wrapped(CountSyncs(Arc::clone(&syncs)))));
    let db = WritableDb::open(&dir, options).unwrap();
    db.close().unwrap();
    let syncs = syncs.lock().unwrap().clone();
    assert_eq!(
        syncs_of(&syncs, |name| name.starts_with("MANIFEST-")),
        [1],
        "one new MANIFEST, synced once: {syncs:?}"
    );
    assert_eq!(
        syncs_of(&syncs, |name| name.ends_with(".dbtmp")),
        [1],
        "CURRENT's replacement was synced: {syncs:?}"
    );

    let db = Db::open(&dir, DbOptions::default()).unwrap();
    let entries: Vec<_> = db.iter().collect::<Result<_, _>>().unwrap();
    assert_eq!(entries.len(), 100);
    assert_eq!(db.get(b"key042").unwrap().as_deref(), Some(&b"value"[..]));
}

/// [`Wrapped`]`<`[`CountSyncs`]`>`, counting the directory syncs as well.
#[derive(Debug, Default)]
struct CountDirSyncs {
    files: Wrapped<CountSyncs>,
    dir_syncs: AtomicUsize,
}

impl FileSystem for CountDirSyncs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.files.create(path)
    }

    fn create_log(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.files.create_log(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.files.rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.files.remove(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.dir_syncs.fetch_add(1, Ordering::SeqCst);
        self.files.sync_dir(dir)
    }
}

/// The directory is synced after the open creates its log (the MANIFEST change naming it
/// syncs it): a synced write into that log syncs the log alone. A write synced after a
/// reopen of the database reads back.
#[test]
fn the_first_synced_write_after_an_open_syncs_only_the_log() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    for round in 0..2 {
        let fs = Arc::new(CountDirSyncs::default());
        let options = WritableOptions::default()
            .create_if_missing(true)
            .file_system(Arc::clone(&fs) as Arc<dyn FileSystem>);
        let db = WritableDb::open(&dir, options).unwrap();
        let opened = fs.dir_syncs.load(Ordering::SeqCst);
        assert!(opened > 0, "the open synced the directory");
        let key = format!("synced{round}");
        db.put(key.as_bytes(), b"v", WriteOptions { sync: true })
            .unwrap();
        assert_eq!(fs.dir_syncs.load(Ordering::SeqCst), opened, "round {round}");
        let syncs = fs.files.0.0.lock().unwrap().clone();
        assert_eq!(
            syncs_of(&syncs, |name| name.ends_with(".log")),
            [1],
            "the synced write synced its log: {syncs:?}"
        );
        db.close().unwrap();
    }
    let db = Db::open(&dir, DbOptions::default()).unwrap();
    assert_eq!(db.get(b"synced0").unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(db.get(b"synced1").unwrap().as_deref(), Some(&b"v"[..]));
}
