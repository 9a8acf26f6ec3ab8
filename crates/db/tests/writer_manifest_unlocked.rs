//! A flush records its table in the MANIFEST without holding up writes: while the MANIFEST
//! record is being synced, puts and gets go on, and once it is synced the database holds
//! everything written, before and during the sync.

use std::io::{self, Write};
use std::path::Path;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leveltable_db::{
    FileSystem, LocalFileSystem, WritableDb, WritableFile, WritableOptions, WriteOptions,
};

/// How long the test waits for an event that comes in microseconds unless the writer is
/// stuck: past it, the test fails rather than hangs.
const STUCK: Duration = Duration::from_secs(120);

/// The local file system, except that once armed, the next sync of a MANIFEST says so on
/// `entered` and waits for a word on `release`.
#[derive(Debug)]
struct HeldSync {
    gate: Arc<Mutex<Option<Gate>>>,
}

#[derive(Debug)]
struct Gate {
    entered: Sender<()>,
    release: Receiver<()>,
}

struct File {
    inner: Box<dyn WritableFile>,
    gate: Option<Arc<Mutex<Option<Gate>>>>,
}

impl Write for File {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl WritableFile for File {
    fn sync(&mut self) -> io::Result<()> {
        let gate = self.gate.as_ref().and_then(|g| g.lock().unwrap().take());
        if let Some(gate) = gate {
            gate.entered.send(()).unwrap();
            gate.release.recv().unwrap();
        }
        self.inner.sync()
    }

    fn close(self: Box<Self>) -> io::Result<()> {
        self.inner.close()
    }
}

impl FileSystem for HeldSync {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let manifest = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("MANIFEST-"));
        Ok(Box::new(File {
            inner: LocalFileSystem.create(path)?,
            gate: manifest.then(|| Arc::clone(&self.gate)),
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        LocalFileSystem.rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        LocalFileSystem.remove(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        LocalFileSystem.sync_dir(dir)
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key-{i:08}").into_bytes()
}

#[test]
fn writes_go_on_while_a_flush_syncs_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let gate = Arc::new(Mutex::new(None));
    let options = WritableOptions::default()
        .create_if_missing(true)
        .write_buffer_size(64 << 10)
        .file_system(Arc::new(HeldSync {
            gate: Arc::clone(&gate),
        }));
    let db = Arc::new(WritableDb::open(&path, options).unwrap());
    let (entered_tx, entered) = channel();
    let (release, release_rx) = channel();
    *gate.lock().unwrap() = Some(Gate {
        entered: entered_tx,
        release: release_rx,
    });
    // Fill the memtable past its size, once: a write switches to a new memtable, and the
    // background thread flushes the full one and records its table in the MANIFEST. (On a
    // thread of its own: a writer waiting for the flush must not keep the test waiting.)
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
        .expect("a flush syncs the MANIFEST");
    // The MANIFEST's sync is held: writes and reads on another thread still finish.
    let (done_tx, done) = channel();
    let writer = {
        let db = Arc::clone(&db);
        std::thread::spawn(move || {
            db.put(b"during", b"the sync", WriteOptions::default())
                .unwrap();
            let read = db.get(b"during").unwrap();
            done_tx.send(read).unwrap();
        })
    };
    let read = done.recv_timeout(STUCK);
    release.send(()).unwrap();
    assert_eq!(
        read.expect("a put while the MANIFEST syncs finishes"),
        Some(b"the sync".to_vec())
    );
    writer.join().unwrap();
    filler.join().unwrap();
    db.put(b"after", b"the sync", WriteOptions::default())
        .unwrap();
    Arc::into_inner(db).unwrap().close().unwrap();

    let db = WritableDb::open(&path, WritableOptions::default()).unwrap();
    for i in 0..written {
        assert_eq!(db.get(&key(i)).unwrap(), Some(value.clone()), "key {i}");
    }
    assert_eq!(db.get(b"during").unwrap(), Some(b"the sync".to_vec()));
    assert_eq!(db.get(b"after").unwrap(), Some(b"the sync".to_vec()));
    assert!(
        db.tables().iter().any(|t| t.level.is_some()),
        "the flush's table is listed"
    );
    db.close().unwrap();
}
