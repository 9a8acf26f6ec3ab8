//! A database open for writing creates its files only as regular files in its directory.
//! Something else put at the name of a file it is about to create (a FIFO, a symbolic link
//! to a file outside the directory or to nothing, a directory) is an error naming the file
//! and saying what is there, returned at once; nothing outside the directory changes, and
//! once the thing is removed the database opens with every acknowledged write.
//!
//! The names are found by doing the same thing first through a file system that records
//! what it creates, not written down here.
#![cfg(unix)]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use leveltable_db::{Error, FileSystem, WritableDb, WritableFile, WritableOptions, WriteOptions};

use crate::common;

use common::wrapped_fs::{WrapFile, Wrapped};
use common::{mkfifo, promptly};

/// The local file system, recording the name of each file created.
#[derive(Debug, Default)]
struct Recording {
    created: Mutex<Vec<String>>,
}

impl Recording {
    fn note(&self, path: &Path) {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        self.created.lock().unwrap().push(name);
    }

    fn created(&self) -> Vec<String> {
        self.created.lock().unwrap().clone()
    }
}

impl WrapFile for Recording {
    fn wrap(&self, path: &Path, file: Box<dyn WritableFile>) -> Box<dyn WritableFile> {
        self.note(path);
        file
    }
}

fn options() -> WritableOptions {
    WritableOptions::default().create_if_missing(true)
}

fn recording(fs: &Arc<Wrapped<Recording>>) -> WritableOptions {
    options().file_system(Arc::clone(fs) as Arc<dyn FileSystem>)
}

fn open(db: &Path) -> Result<WritableDb, Error> {
    let db = db.to_owned();
    promptly("WritableDb::open", move || WritableDb::open(&db, options()))
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    format!("value {i} ").repeat(8).into_bytes()
}

fn put_range(db: &WritableDb, keys: std::ops::Range<u32>) {
    for i in keys {
        db.put(&key(i), &value(i), WriteOptions::default()).unwrap();
    }
}

/// Every key of `0..n` holds its value.
fn holds_all(db: &WritableDb, n: u32) {
    for i in 0..n {
        assert_eq!(db.get(&key(i)).unwrap(), Some(value(i)), "key {i}");
    }
}

/// Opens the database `dir` and checks that it holds keys 0 to `n` - 1.
fn reopened_holds_all(dir: &Path, n: u32) {
    let db = open(dir).unwrap();
    holds_all(&db, n);
    db.close().unwrap();
}

/// The bytes of the file outside the database that a link points to.
const OUTSIDE: &[u8] = b"a file outside the database, not to be changed";

/// What is put where the database will create a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hostile {
    Fifo,
    /// A symbolic link to a file outside the directory holding [`OUTSIDE`].
    LinkOutside,
    /// A symbolic link to a name outside the directory where nothing is.
    DanglingLink,
    Directory,
}

const HOSTILE: [Hostile; 4] = [
    Hostile::Fifo,
    Hostile::LinkOutside,
    Hostile::DanglingLink,
    Hostile::Directory,
];

impl Hostile {
    /// What the error says is there.
    fn says(self) -> &'static str {
        match self {
            Hostile::Fifo => "a FIFO, not a regular file",
            Hostile::LinkOutside | Hostile::DanglingLink => "a symbolic link, not a regular file",
            Hostile::Directory => "a directory, not a regular file",
        }
    }
}

/// A scratch directory holding a database directory `db` and a directory `outside` with
/// the file `target` ([`OUTSIDE`]).
struct Scene {
    _tmp: tempfile::TempDir,
    db: PathBuf,
    outside: PathBuf,
}

impl Scene {
    /// A scene whose database directory is a copy of `from` (none if `None`).
    fn new(from: Option<&Path>) -> Scene {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("db");
        let outside = tmp.path().join("outside");
        fs::create_dir(&outside).unwrap();
        fs::write(outside.join("target"), OUTSIDE).unwrap();
        fs::create_dir(&db).unwrap();
        if let Some(from) = from {
            for entry in fs::read_dir(from).unwrap() {
                let entry = entry.unwrap();
                fs::copy(entry.path(), db.join(entry.file_name())).unwrap();
            }
        }
        Scene {
            _tmp: tmp,
            db,
            outside,
        }
    }

    /// Puts `what` at `db/name`.
    fn place(&self, what: Hostile, name: &str) {
        let path = self.db.join(name);
        match what {
            Hostile::Fifo => mkfifo(&path),
            Hostile::LinkOutside => {
                std::os::unix::fs::symlink(self.outside.join("target"), &path).unwrap();
            }
            Hostile::DanglingLink => {
                std::os::unix::fs::symlink(self.outside.join("missing"), &path).unwrap();
            }
            Hostile::Directory => fs::create_dir(&path).unwrap(),
        }
    }

    /// Puts `what` at `db/name` and checks that the open is refused as [`refused`] says.
    ///
    /// [`refused`]: Scene::refused
    fn open_refuses(&self, what: Hostile, name: &str) {
        self.place(what, name);
        let e = open(&self.db).unwrap_err();
        self.refused(&e, what, name);
    }

    /// Checks that `e` names `db/name` and says `what` is there, that `what` is still
    /// there, and that nothing outside the database changed; then removes `what`.
    fn refused(&self, e: &Error, what: Hostile, name: &str) {
        let m = e.to_string();
        let path = self.db.join(name);
        assert!(m.contains(&path.display().to_string()), "{what:?}: {m}");
        assert!(m.contains(what.says()), "{what:?}: {m}");
        let kind = fs::symlink_metadata(&path).unwrap().file_type();
        use std::os::unix::fs::FileTypeExt;
        let still = match what {
            Hostile::Fifo => kind.is_fifo(),
            Hostile::LinkOutside | Hostile::DanglingLink => kind.is_symlink(),
            Hostile::Directory => kind.is_dir(),
        };
        assert!(still, "{what:?} at {name} was replaced");
        let mut outside: Vec<_> = fs::read_dir(&self.outside)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        outside.sort();
        assert_eq!(
            outside,
            ["target"],
            "a file was created outside the database"
        );
        assert_eq!(fs::read(self.outside.join("target")).unwrap(), OUTSIDE);
        if what == Hostile::Directory {
            fs::remove_dir(&path).unwrap();
        } else {
            fs::remove_file(&path).unwrap();
        }
    }
}

/// Whether an open reads the file `name` before it would create it: a log of a number
/// at least the MANIFEST's log number is replayed, as LevelDB replays it, so whatever is at
/// the name of the log an open is about to create is read first (through the read path,
/// which refuses what is not a regular file) and its number passed over.
fn read_first_at_open(name: &str) -> bool {
    name.ends_with(".log")
}

/// The names an open and close of a copy of `from` (a new database if `None`) create, in
/// order.
fn names_an_open_creates(from: Option<&Path>) -> Vec<String> {
    let probe = Scene::new(from);
    let fs = Arc::new(Wrapped(Recording::default()));
    WritableDb::open(&probe.db, recording(&fs))
        .unwrap()
        .close()
        .unwrap();
    fs.0.created()
}

/// The names a new database's open creates, in order (its first MANIFEST, the temporary
/// file that replaces CURRENT, the first log, ...).
fn names_a_new_database_creates() -> Vec<String> {
    let names = names_an_open_creates(None);
    assert!(names.iter().any(|n| n.ends_with(".log")), "{names:?}");
    assert!(
        names.iter().any(|n| n.starts_with("MANIFEST-")),
        "{names:?}"
    );
    assert!(names.iter().any(|n| n.ends_with(".dbtmp")), "{names:?}");
    names
}

/// A new database whose first file (its first MANIFEST) is a FIFO: the open returns at
/// once, naming it, and the database opens once it is removed.
#[test]
fn a_new_database_whose_first_file_is_a_fifo_is_refused_at_once() {
    let first = &names_a_new_database_creates()[0];
    let scene = Scene::new(None);
    scene.open_refuses(Hostile::Fifo, first);
    let db = open(&scene.db).unwrap();
    put_range(&db, 0..10);
    db.close().unwrap();
}

/// A new database whose first file is a link to a file outside the directory: refused,
/// and the file outside keeps its bytes.
#[test]
fn a_new_database_whose_first_file_is_a_link_leaves_its_target_alone() {
    let first = &names_a_new_database_creates()[0];
    let scene = Scene::new(None);
    scene.open_refuses(Hostile::LinkOutside, first);
}

/// Each file a new database creates (MANIFESTs, the temporary file replacing CURRENT; not
/// the log, see [`read_first_at_open`]), with each hostile thing at its name: refused at once, naming it; the database
/// opens once it is removed.
#[test]
fn every_file_of_a_new_database_refuses_what_is_not_a_regular_file() {
    for name in names_a_new_database_creates() {
        if read_first_at_open(&name) {
            continue;
        }
        for what in HOSTILE {
            let scene = Scene::new(None);
            scene.open_refuses(what, &name);
            let db = open(&scene.db).unwrap();
            put_range(&db, 0..10);
            holds_all(&db, 10);
            db.close().unwrap();
        }
    }
}

/// A database of 200 keys: 100 in a table, 100 only in its log.
fn database_with_data() -> Scene {
    let scene = Scene::new(None);
    let db = WritableDb::open(&scene.db, options()).unwrap();
    put_range(&db, 0..100);
    db.flush().unwrap();
    put_range(&db, 100..200);
    db.close().unwrap();
    scene
}

/// Reopening a database with data: a table (the log's keys), a new MANIFEST and the
/// temporary file replacing CURRENT (not the new log, see [`read_first_at_open`]), each
/// refusing what is at its name; every
/// acknowledged write is there once it is removed.
#[test]
fn a_reopen_refuses_what_is_at_the_next_names_and_loses_nothing() {
    let data = database_with_data();
    let names = names_an_open_creates(Some(&data.db));
    for suffix in [".ldb", ".log", ".dbtmp"] {
        assert!(names.iter().any(|n| n.ends_with(suffix)), "{names:?}");
    }
    assert!(
        names.iter().any(|n| n.starts_with("MANIFEST-")),
        "{names:?}"
    );
    for name in names.iter().filter(|n| !read_first_at_open(n)) {
        for what in HOSTILE {
            let scene = Scene::new(Some(&data.db));
            scene.open_refuses(what, name);
            reopened_holds_all(&scene.db, 200);
        }
    }
}

/// A flush of an open database with data: its new log and its table each refuse what is
/// at their name, and the flush returns the error naming it; every acknowledged write is
/// there once it is removed and the database reopened.
#[test]
fn a_flush_refuses_what_is_at_the_next_names_and_loses_nothing() {
    let data = database_with_data();
    let probe = Scene::new(Some(&data.db));
    let fs = Arc::new(Wrapped(Recording::default()));
    let db = WritableDb::open(&probe.db, recording(&fs)).unwrap();
    put_range(&db, 200..300);
    let before = fs.0.created().len();
    db.flush().unwrap();
    db.close().unwrap();
    let names = fs.0.created()[before..].to_vec();
    for suffix in [".ldb", ".log"] {
        assert!(names.iter().any(|n| n.ends_with(suffix)), "{names:?}");
    }
    for name in &names {
        for what in HOSTILE {
            let scene = Scene::new(Some(&data.db));
            let db = open(&scene.db).unwrap();
            put_range(&db, 200..300);
            scene.place(what, name);
            let (db, flushed) = promptly("WritableDb::flush", move || {
                let flushed = db.flush();
                (db, flushed)
            });
            scene.refused(&flushed.unwrap_err(), what, name);
            // A failed table write stops writes until the database is reopened.
            drop(db);
            reopened_holds_all(&scene.db, 300);
        }
    }
}

/// A regular file at the name of a file a new database creates that is also linked (a hard
/// link) from outside the directory: replaced, not emptied, so the file outside keeps its
/// bytes.
#[test]
fn a_file_linked_from_outside_is_replaced_not_emptied() {
    let names = names_a_new_database_creates();
    for name in names.iter().filter(|n| !read_first_at_open(n)) {
        let scene = Scene::new(None);
        fs::hard_link(scene.outside.join("target"), scene.db.join(name)).unwrap();
        let db = match open(&scene.db) {
            // A file of a database's name that is not what an interrupted creation leaves
            // (a temporary file, a second MANIFEST): refused, and kept.
            Err(Error::LostCurrent { .. }) => {
                assert_eq!(fs::read(scene.db.join(name)).unwrap(), OUTSIDE, "{name}");
                assert_eq!(fs::read(scene.outside.join("target")).unwrap(), OUTSIDE);
                continue;
            }
            opened => opened.unwrap(),
        };
        put_range(&db, 0..10);
        db.close().unwrap();
        assert_eq!(fs::read(scene.outside.join("target")).unwrap(), OUTSIDE);
        reopened_holds_all(&scene.db, 10);
    }
}
