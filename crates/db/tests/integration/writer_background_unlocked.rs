//! A flush and a compaction record their tables in the MANIFEST, and a flush deletes the log
//! it made obsolete, without holding up writes: while the MANIFEST record is being synced,
//! or the log deleted, puts and gets go on, and afterwards the database holds everything
//! written, before, during and after.

use std::io::{self, Write};
use std::path::Path;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leveltable_db::version_edit::VersionEdit;
use leveltable_db::{WritableDb, WritableFile, WritableOptions, WriteOptions};

use crate::common;

use common::wrapped_fs::{WrapFile, Wrapped};

/// How long the test waits for an event that comes in microseconds unless the writer is
/// stuck: past it, the test fails rather than hangs.
const STUCK: Duration = Duration::from_secs(120);

/// The local file system, except that once armed, the next step of the kind `held` says so
/// on `entered` and waits for a word on `release`.
#[derive(Debug)]
struct HeldStep {
    gate: Arc<Mutex<Option<Gate>>>,
}

#[derive(Debug)]
struct Gate {
    entered: Sender<()>,
    release: Receiver<()>,
    held: Held,
}

/// The step a [`Gate`] holds.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Held {
    /// The next sync of a MANIFEST.
    ManifestSync,
    /// The next sync of a MANIFEST whose record deletes tables: a compaction's.
    CompactionSync,
    /// The next deletion of a log.
    LogDeletion,
}

impl Gate {
    /// Says the step is held, and waits for the word to go on.
    fn hold(self) {
        self.entered.send(()).unwrap();
        self.release.recv().unwrap();
    }
}

struct File {
    inner: Box<dyn WritableFile>,
    gate: Option<Arc<Mutex<Option<Gate>>>>,
    /// The bytes written since the last sync: one MANIFEST record, header first.
    unsynced: Vec<u8>,
}

impl File {
    /// Whether the record written since the last sync deletes a table.
    fn deletes_tables(&self) -> bool {
        let mut edit = self.unsynced.get(7..).unwrap_or_default();
        VersionEdit::decode_from(&mut edit).is_ok_and(|e| !e.deleted_files.is_empty())
    }
}

impl Write for File {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.unsynced.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl WritableFile for File {
    fn sync(&mut self) -> io::Result<()> {
        let deletes = self.deletes_tables();
        let gate = self.gate.as_ref().and_then(|g| {
            let mut g = g.lock().unwrap();
            g.take_if(|gate| {
                gate.held == Held::ManifestSync || gate.held == Held::CompactionSync && deletes
            })
        });
        self.unsynced.clear();
        if let Some(gate) = gate {
            gate.hold();
        }
        self.inner.sync()
    }

    fn close(self: Box<Self>) -> io::Result<()> {
        self.inner.close()
    }
}

impl WrapFile for HeldStep {
    fn wrap(&self, path: &Path, inner: Box<dyn WritableFile>) -> Box<dyn WritableFile> {
        let manifest = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("MANIFEST-"));
        Box::new(File {
            inner,
            gate: manifest.then(|| Arc::clone(&self.gate)),
            unsynced: Vec::new(),
        })
    }

    fn removing(&self, path: &Path) {
        if path.extension().is_some_and(|x| x == "log") {
            let gate = self
                .gate
                .lock()
                .unwrap()
                .take_if(|gate| gate.held == Held::LogDeletion);
            if let Some(gate) = gate {
                gate.hold();
            }
        }
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key-{i:08}").into_bytes()
}

/// Opens a database at `path` with `options` over [`HeldStep`], armed to hold the next step
/// of the kind `held`. Returns the database, the channel that says the step is held, and the
/// one that releases it.
fn open_held(
    path: &Path,
    options: WritableOptions,
    held: Held,
) -> (Arc<WritableDb>, Receiver<()>, Sender<()>) {
    let gate = Arc::new(Mutex::new(None));
    let options = options
        .create_if_missing(true)
        .file_system(Arc::new(Wrapped(HeldStep {
            gate: Arc::clone(&gate),
        })));
    let db = Arc::new(WritableDb::open(path, options).unwrap());
    let (entered_tx, entered) = channel();
    let (release, release_rx) = channel();
    *gate.lock().unwrap() = Some(Gate {
        entered: entered_tx,
        release: release_rx,
        held,
    });
    (db, entered, release)
}

/// With a step held: puts `during` on another thread and reads it and `other` back there,
/// then releases the step. Returns what the two gets read; fails the test if the put or the
/// gets wait for the step.
fn write_while_held(
    db: &Arc<WritableDb>,
    release: Sender<()>,
    other: Vec<u8>,
) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    let (done_tx, done) = channel();
    let writer = {
        let db = Arc::clone(db);
        std::thread::spawn(move || {
            db.put(b"during", b"the held step", WriteOptions::default())
                .unwrap();
            let read = (db.get(b"during").unwrap(), db.get(&other).unwrap());
            done_tx.send(read).unwrap();
        })
    };
    let read = done.recv_timeout(STUCK);
    release.send(()).unwrap();
    let read = read.expect("a put and gets while the step is held finish");
    writer.join().unwrap();
    read
}

#[test]
fn writes_go_on_while_a_flush_syncs_the_manifest() {
    writes_go_on_while_a_flush_is_held(Held::ManifestSync);
}

#[test]
fn writes_go_on_while_a_flush_deletes_the_old_log() {
    writes_go_on_while_a_flush_is_held(Held::LogDeletion);
}

/// Fills a memtable past its size, once: a write switches to a new memtable, and the
/// background thread flushes the full one, records its table in the MANIFEST and deletes
/// its log. With the step `held` held, a put and gets go on.
fn writes_go_on_while_a_flush_is_held(held: Held) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let options = WritableOptions::default().write_buffer_size(64 << 10);
    let (db, entered, release) = open_held(&path, options, held);
    // (The filler is on a thread of its own: a writer waiting for the flush must not keep
    // the test waiting.)
    let written = 80;
    let value = vec![b'v'; 1000];
    let filler = {
        let (db, value) = (Arc::clone(&db), value.clone());
        std::thread::spawn(move || {
            for i in 0..written {
                db.put(&key(i), &value, WriteOptions::default()).unwrap();
            }
        })
    };
    entered
        .recv_timeout(STUCK)
        .expect("the flush reaches the step held");
    // The step is held: writes and reads on another thread still finish.
    let (during, first) = write_while_held(&db, release, key(0));
    assert_eq!(during, Some(b"the held step".to_vec()));
    assert_eq!(first, Some(value.clone()));
    filler.join().unwrap();
    db.put(b"after", b"the held step", WriteOptions::default())
        .unwrap();
    Arc::into_inner(db).unwrap().close().unwrap();

    let db = WritableDb::open(&path, WritableOptions::default()).unwrap();
    for i in 0..written {
        assert_eq!(db.get(&key(i)).unwrap(), Some(value.clone()), "key {i}");
    }
    assert_eq!(db.get(b"during").unwrap(), Some(b"the held step".to_vec()));
    assert_eq!(db.get(b"after").unwrap(), Some(b"the held step".to_vec()));
    assert!(
        db.tables().iter().any(|t| t.level.is_some()),
        "the flush's table is listed"
    );
    db.close().unwrap();
}

#[test]
fn writes_go_on_while_a_compaction_syncs_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    // Tables of the same keys, flushed one by one (on a thread of its own: its last flush
    // waits for the background thread): the first go to levels 2 and 1, the next to level
    // 0, and with four there the background thread compacts them. That compaction's
    // MANIFEST record, the first to delete tables, is held in its sync.
    let (db, entered, release) = open_held(&path, WritableOptions::default(), Held::CompactionSync);
    let rounds = 8u32;
    let value = |round: u32| [&[b'v'; 100][..], &round.to_be_bytes()].concat();
    let filler = {
        let db = Arc::clone(&db);
        std::thread::spawn(move || {
            for round in 0..rounds {
                for i in 0..200 {
                    db.put(&key(i), &value(round), WriteOptions::default())
                        .unwrap();
                }
                db.flush().unwrap();
            }
        })
    };
    entered
        .recv_timeout(STUCK)
        .expect("a compaction syncs the MANIFEST");
    // The compaction's MANIFEST sync is held: writes and reads on another thread finish.
    let (during, seven) = write_while_held(&db, release, key(7));
    assert_eq!(during, Some(b"the held step".to_vec()));
    assert!(seven.is_some_and(|v| v.starts_with(&[b'v'; 100])));
    filler.join().unwrap();
    let newest = value(rounds - 1);
    db.wait_for_compactions().unwrap();
    assert!(db.files_at_level(0) < 4, "the compaction applied");
    Arc::into_inner(db).unwrap().close().unwrap();

    let db = WritableDb::open(&path, WritableOptions::default()).unwrap();
    for i in 0..200 {
        assert_eq!(db.get(&key(i)).unwrap(), Some(newest.clone()), "key {i}");
    }
    assert_eq!(db.get(b"during").unwrap(), Some(b"the held step".to_vec()));
    db.close().unwrap();
}
