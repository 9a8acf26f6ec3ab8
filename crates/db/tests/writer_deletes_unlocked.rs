//! A flush deletes the files it made obsolete (the log of the memtable it wrote) without
//! holding up writes: while the deletion is held, puts and gets go on, and nothing written
//! before, during or after it is lost.

use std::io;
use std::path::Path;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leveltable_db::{
    FileSystem, LocalFileSystem, WritableDb, WritableFile, WritableOptions, WriteOptions,
};

/// How long the test waits for an event that comes in milliseconds unless a writer is
/// stuck: past it, the test fails rather than hangs.
const STUCK: Duration = Duration::from_secs(120);

/// The local file system, except that once armed, the next deletion of a log says so on
/// `entered` and waits for a word on `release`.
#[derive(Debug, Default)]
struct HeldRemove {
    gate: Mutex<Option<(Sender<()>, Receiver<()>)>>,
}

impl FileSystem for HeldRemove {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        LocalFileSystem.create(path)
    }

    fn create_log(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        LocalFileSystem.create_log(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        LocalFileSystem.rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        if path.extension().is_some_and(|x| x == "log") {
            let gate = self.gate.lock().unwrap().take();
            if let Some((entered, release)) = gate {
                entered.send(()).unwrap();
                release.recv().unwrap();
            }
        }
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
fn writes_go_on_while_a_flush_deletes_the_old_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let fs = Arc::new(HeldRemove::default());
    let options = WritableOptions::default()
        .create_if_missing(true)
        .write_buffer_size(64 << 10)
        .file_system(Arc::clone(&fs) as Arc<dyn FileSystem>);
    let db = Arc::new(WritableDb::open(&path, options).unwrap());
    let (entered_tx, entered) = channel();
    let (release, release_rx) = channel();
    *fs.gate.lock().unwrap() = Some((entered_tx, release_rx));

    // Fill the memtable past its size, once: the background thread flushes it, and then
    // deletes its log. (On a thread of its own: a writer held up must not hold the test.)
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
        .expect("the flush deletes the old log");

    // The deletion is held: a put and gets on another thread still finish.
    let (done_tx, done) = channel();
    let writer = {
        let db = Arc::clone(&db);
        std::thread::spawn(move || {
            db.put(b"during", b"the deletion", WriteOptions::default())
                .unwrap();
            done_tx
                .send((db.get(b"during").unwrap(), db.get(&key(0)).unwrap()))
                .unwrap();
        })
    };
    let read = done.recv_timeout(STUCK);
    release.send(()).unwrap();
    let (during, first) = read.expect("a put and gets while a log is deleted finish");
    writer.join().unwrap();
    filler.join().unwrap();
    assert_eq!(during, Some(b"the deletion".to_vec()));
    assert_eq!(first, Some(value.clone()));
    db.put(b"after", b"the deletion", WriteOptions::default())
        .unwrap();
    Arc::into_inner(db).unwrap().close().unwrap();

    let db = WritableDb::open(&path, WritableOptions::default()).unwrap();
    for i in 0..written {
        assert_eq!(db.get(&key(i)).unwrap(), Some(value.clone()), "key {i}");
    }
    assert_eq!(db.get(b"during").unwrap(), Some(b"the deletion".to_vec()));
    assert_eq!(db.get(b"after").unwrap(), Some(b"the deletion".to_vec()));
    db.close().unwrap();
}
