//! What a power loss leaves of the write-ahead logs, and what an open makes of it (two of
//! LevelDB's open durability bugs): a later log's records never survive without the
//! earlier log's (LevelDB's #193), and garbage or zeros where the last append should be are
//! never read as a write (#251).
//!
//! A power loss is modelled on the logs' bytes: each log keeps what was synced
//! (`fdatasync`, on the writer's thread or in the background) and loses the rest; the other
//! files are kept whole.
#![cfg(unix)]

use std::collections::HashMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::time::{Duration, Instant};

use leveltable_db::{
    BackgroundSyncFn, Db, DbOptions, FileSystem, LocalFileSystem, WritableDb, WritableFile,
    WritableOptions, WriteOptions,
};

/// Per file: bytes written, bytes synced.
type Lengths = Arc<Mutex<HashMap<PathBuf, (u64, u64)>>>;

/// The local file system, recording what each file has written and synced; creating a
/// table waits while `hold_tables` is set (the memtable flush then waits with it).
#[derive(Debug, Default)]
struct Tracking {
    lengths: Lengths,
    hold_tables: Mutex<bool>,
    released: Condvar,
    background: Arc<Background>,
}

/// The background syncs started and made, and whether they fail; while `hold` is set, a
/// background sync waits before it begins.
#[derive(Debug, Default)]
struct Background {
    started: AtomicUsize,
    syncs: AtomicUsize,
    fail: AtomicBool,
    hold: Mutex<bool>,
    released: Condvar,
}

impl Background {
    fn release(&self) {
        *self.hold.lock().unwrap() = false;
        self.released.notify_all();
    }
}

struct Tracked {
    inner: Box<dyn WritableFile>,
    path: PathBuf,
    lengths: Lengths,
    background: Arc<Background>,
    /// Whether a background sync of this file failed: its own syncs then fail too, as
    /// Linux reports a failed write to each open description of the file.
    failed: Arc<AtomicBool>,
}

impl Write for Tracked {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.lengths
            .lock()
            .unwrap()
            .entry(self.path.clone())
            .or_default()
            .0 += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl WritableFile for Tracked {
    fn sync(&mut self) -> io::Result<()> {
        if self.failed.load(Ordering::Relaxed) {
            return Err(io::Error::other(
                "injected failure, seen by the file's own sync",
            ));
        }
        self.inner.sync()?;
        let mut lengths = self.lengths.lock().unwrap();
        let entry = lengths.entry(self.path.clone()).or_default();
        entry.1 = entry.0;
        Ok(())
    }

    /// Counts as synced only what was written when the sync began. With `fail` set, the
    /// file's writes fail to reach the disk from the start: its background syncs fail, and
    /// so do its own, whichever comes first (as the kernel reports a failed write to each
    /// open description), however late the background thread runs.
    fn background_sync(&self, path: &Path) -> Option<BackgroundSyncFn> {
        let mut inner = self.inner.background_sync(path)?;
        if self.background.fail.load(Ordering::Relaxed) {
            self.failed.store(true, Ordering::Relaxed);
        }
        let (path, lengths) = (self.path.clone(), Arc::clone(&self.lengths));
        let background = Arc::clone(&self.background);
        let failed = Arc::clone(&self.failed);
        Some(Box::new(move || {
            background.started.fetch_add(1, Ordering::Relaxed);
            let mut hold = background.hold.lock().unwrap();
            while *hold {
                hold = background.released.wait(hold).unwrap();
            }
            drop(hold);
            let written = lengths.lock().unwrap().entry(path.clone()).or_default().0;
            if failed.load(Ordering::Relaxed) {
                return Err(io::Error::other("injected background sync failure"));
            }
            inner()?;
            background.syncs.fetch_add(1, Ordering::Relaxed);
            let mut lengths = lengths.lock().unwrap();
            let entry = lengths.entry(path.clone()).or_default();
            entry.1 = entry.1.max(written);
            Ok(())
        }))
    }
}

impl Tracking {
    fn track(&self, path: &Path, inner: Box<dyn WritableFile>) -> Box<dyn WritableFile> {
        self.lengths.lock().unwrap().insert(path.to_owned(), (0, 0));
        Box::new(Tracked {
            inner,
            path: path.to_owned(),
            lengths: Arc::clone(&self.lengths),
            background: Arc::clone(&self.background),
            failed: Arc::default(),
        })
    }

    fn release_tables(&self) {
        *self.hold_tables.lock().unwrap() = false;
        self.released.notify_all();
    }

    /// What a power loss now leaves of `dir`, in `image`: each log cut to its synced bytes.
    fn power_loss_image(&self, dir: &Path, image: &Path) {
        fs::create_dir_all(image).unwrap();
        let lengths = self.lengths.lock().unwrap();
        for e in fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            let mut data = fs::read(&path).unwrap();
            if path.extension().is_some_and(|x| x == "log") {
                let synced = lengths.get(&path).map_or(0, |l| l.1);
                data.truncate(synced as usize);
            }
            fs::write(image.join(path.file_name().unwrap()), data).unwrap();
        }
    }
}

/// Releases the tables a [`Tracking`] holds when dropped: a test that fails while they are
/// held then ends, rather than waiting for ever in the database's drop for its flush.
struct ReleaseTables<'a>(&'a Tracking);

impl Drop for ReleaseTables<'_> {
    fn drop(&mut self) {
        self.0.release_tables();
    }
}

impl FileSystem for Tracking {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        if path.extension().is_some_and(|x| x == "ldb") {
            let mut hold = self.hold_tables.lock().unwrap();
            while *hold {
                hold = self.released.wait(hold).unwrap();
            }
        }
        let inner = LocalFileSystem.create(path)?;
        Ok(self.track(path, inner))
    }

    fn create_log(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let inner = LocalFileSystem.create_log(path)?;
        Ok(self.track(path, inner))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        LocalFileSystem.rename(from, to)?;
        let mut lengths = self.lengths.lock().unwrap();
        if let Some(l) = lengths.remove(from) {
            lengths.insert(to.to_owned(), l);
        }
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        LocalFileSystem.remove(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        LocalFileSystem.sync_dir(dir)
    }
}

/// A new database in `dir`, through `fs_`, whose memtables hold about 64 writes of 1 KB.
fn open_small(dir: &Path, fs_: &Arc<Tracking>) -> WritableDb {
    let options = WritableOptions::default()
        .create_if_missing(true)
        .write_buffer_size(64 << 10)
        .file_system(Arc::clone(fs_) as Arc<dyn FileSystem>);
    WritableDb::open(dir, options).unwrap()
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// LevelDB's #193: unsynced writes fill a memtable and its log; the next write starts a new
/// log (the full memtable's flush is held back); a synced write then reaches the new log.
/// After a power loss there, the synced write is kept, and so is every write before it:
/// the earlier log was made durable before the new one took a write. (LevelDB syncs only
/// the log a synced write goes to, so its open can keep the synced write and lose the
/// writes of the earlier log.)
#[test]
fn a_later_log_never_survives_without_the_earlier_one() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let fs_ = Arc::new(Tracking::default());
    *fs_.hold_tables.lock().unwrap() = true;
    let db = open_small(&dir, &fs_);
    // Dropped before `db`, whatever happens.
    let _release = ReleaseTables(&fs_);
    let value = vec![b'v'; 1000];
    // About 64 writes fill the first memtable; the rest go to the second log.
    for i in 0..100 {
        db.put(&key(i), &value, WriteOptions { sync: false })
            .unwrap();
    }
    db.put(b"marker", b"synced", WriteOptions { sync: true })
        .unwrap();
    assert_eq!(log_count(&dir), 2, "the writes span two logs");
    // The first log's writes started a background sync, which a loaded machine may not
    // have run yet.
    let deadline = Instant::now() + Duration::from_secs(60);
    while fs_.background.syncs.load(Ordering::Relaxed) == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        fs_.background.syncs.load(Ordering::Relaxed) > 0,
        "the first log was synced in part in the background"
    );
    let image = tmp.path().join("image");
    fs_.power_loss_image(&dir, &image);
    fs_.release_tables();
    db.close().unwrap();

    let reader = Db::open(&image, DbOptions::default().paranoid_checks(true)).unwrap();
    assert_eq!(
        reader.get(b"marker").unwrap().as_deref(),
        Some(&b"synced"[..])
    );
    for i in 0..100 {
        assert_eq!(
            reader.get(&key(i)).unwrap().as_deref(),
            Some(&value[..]),
            "the synced write survived without write {i} of the earlier log"
        );
    }
}

fn log_count(dir: &Path) -> usize {
    fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "log")
        })
        .count()
}

/// A background sync of the log fails: the failure is reported by a write (the sync's
/// outcome, taken when the next one starts, or the log's own sync when its memtable is
/// full), no write is accepted after it, and no write reaches a new log.
#[test]
fn a_failed_background_sync_stops_the_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let fs_ = Arc::new(Tracking::default());
    fs_.background.fail.store(true, Ordering::Relaxed);
    let db = open_small(&dir, &fs_);
    let value = vec![b'v'; 1000];
    let failed = (0..200)
        .find_map(|i| {
            db.put(&key(i), &value, WriteOptions { sync: false })
                .err()
                .map(|e| (i, e))
        })
        .expect("a write reports the failed sync");
    let (i, err) = failed;
    let text = err.to_string();
    assert!(
        text.contains("cannot sync") && text.contains(".log"),
        "{text}"
    );
    assert!(text.contains("injected"), "{text}");
    assert!(
        i < 70,
        "reported by the memtable switch at the latest, not write {i}"
    );
    assert!(
        db.put(b"after", b"x", WriteOptions { sync: false })
            .is_err()
    );
    assert_eq!(log_count(&dir), 1, "no write reached a new log");
}

/// A background sync that does not finish holds up no write: the memtable switch syncs
/// the old log on its own and goes on, so writes reach the next logs while the background
/// syncs of the earlier ones wait; and each earlier log was synced whole before the next
/// took a write.
#[test]
fn the_memtable_switch_waits_for_no_background_sync() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let fs_ = Arc::new(Tracking::default());
    *fs_.background.hold.lock().unwrap() = true;
    let db = Arc::new(open_small(&dir, &fs_));
    let (done, finished) = mpsc::channel();
    let writer = {
        let db = Arc::clone(&db);
        std::thread::spawn(move || {
            let value = vec![b'v'; 1000];
            for i in 0..300 {
                db.put(&key(i), &value, WriteOptions { sync: false })
                    .unwrap();
            }
            done.send(()).unwrap();
        })
    };
    let waited = finished.recv_timeout(Duration::from_secs(60));
    // What the logs hold and have synced, before any held sync may go on.
    let mut logs: Vec<(PathBuf, (u64, u64))> = fs_
        .lengths
        .lock()
        .unwrap()
        .iter()
        .filter(|(path, _)| path.extension().is_some_and(|x| x == "log"))
        .map(|(path, lengths)| (path.clone(), *lengths))
        .collect();
    let started = fs_.background.started.load(Ordering::Relaxed);
    fs_.background.release();
    writer.join().unwrap();
    waited.expect("the writes went on while the background syncs were held");
    assert!(started >= 2, "background syncs were held: {started}");
    logs.sort();
    assert!(logs.len() >= 4, "the writes span several logs: {logs:?}");
    logs.pop(); // the log being written
    for (path, (written, synced)) in &logs {
        assert!(
            *written > 0 && synced == written,
            "{} was synced whole before the next log took a write: {synced} of {written}",
            path.display()
        );
    }
    Arc::try_unwrap(db).ok().unwrap().close().unwrap();
}

/// LevelDB's #251: a power loss can leave the last append's bytes as garbage or zeros
/// (a file system that journals metadata only). An open never reads such bytes as a
/// write, as LevelDB's open does not: garbage under a plausible header fails its checksum
/// and is dropped (counted in the properties; a paranoid open refuses the log, naming it);
/// a garbage length running past the end reads as a record cut short, and zeros as the
/// log format's preallocated space, both silently.
#[test]
fn garbage_or_zeros_after_the_last_record_are_never_a_write() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = WritableDb::open(&dir, WritableOptions::default().create_if_missing(true)).unwrap();
    for i in 0..10 {
        db.put(&key(i), b"kept", WriteOptions { sync: true })
            .unwrap();
    }
    let log: PathBuf = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "log"))
        .unwrap();
    let before = fs::metadata(&log).unwrap().len() as usize;
    db.put(b"last", &[b'x'; 300], WriteOptions { sync: true })
        .unwrap();
    let data = fs::read(&log).unwrap();
    drop(db); // the log stays: nothing is flushed for so few writes
    let appended = data.len() - before;
    assert!(appended > 300);

    let garbage: Vec<u8> = (0..appended).map(|i| (i * 7 + 3) as u8).collect();
    // Garbage under the record's own length and type: its checksum fails.
    let mut garbage_payload = garbage.clone();
    garbage_payload[4..7].copy_from_slice(&data[before + 4..before + 7]);
    for (what, fill) in [
        ("garbage", garbage_payload),
        ("garbage header", garbage),
        ("zeros", vec![0u8; appended]),
    ] {
        let image = tmp.path().join(what);
        fs::create_dir_all(&image).unwrap();
        for e in fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            if path.file_name().unwrap() != "LOCK" {
                fs::copy(&path, image.join(path.file_name().unwrap())).unwrap();
            }
        }
        let mut damaged = data[..before].to_vec();
        damaged.extend_from_slice(&fill);
        fs::write(image.join(log.file_name().unwrap()), &damaged).unwrap();

        let reader = Db::open(&image, DbOptions::default()).unwrap();
        let all: Vec<_> = reader.iter().map(Result::unwrap).collect();
        assert_eq!(all.len(), 10, "{what}: {all:?}");
        assert!(all.iter().all(|(_, v)| v == b"kept"), "{what}");
        assert_eq!(reader.get(b"last").unwrap(), None, "{what}");
        let dropped = reader.properties().log_bytes_dropped;
        let paranoid = Db::open(&image, DbOptions::default().paranoid_checks(true));
        if what == "garbage" {
            assert!(dropped > 0, "{what}: nothing reported dropped");
            let err = paranoid.unwrap_err().to_string();
            assert!(err.contains(".log") && err.contains("checksum"), "{err}");
        } else {
            // A length past the end reads as a record cut short, zeros as the end.
            assert_eq!(dropped, 0, "{what}");
            assert!(paranoid.is_ok(), "{what}");
        }
    }
}
