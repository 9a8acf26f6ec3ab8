//! One table file being written, for every writer of the crate (LevelDB's `BuildTable` and a
//! compaction's output, and a bulk build's files): internal keys in order through a
//! [`TableBuilder`], into a file the [`FileSystem`] made, with its size, its first and last
//! keys and the CRC32C of every byte written kept on the way. A finished table is synced
//! before [`TableWriter::finish`] returns (a flush or a compaction, whose MANIFEST names it
//! next), or handed to a syncing thread (a bulk build): [`Durability`] says which. A table
//! given up on is removed.

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::sync::Arc;

use leveltable_table::{BuildOptions, TableBuilder};

use crate::dbformat::{TAG_LEN, ValueType, append_internal_key};
use crate::syncer::SyncQueue;
use crate::writer::file_system::{FileSystem, WritableFile};
use crate::{Error, Result};

/// How [`TableWriter::finish`] makes the table durable.
pub(crate) enum Durability<'a> {
    /// Synced and closed before `finish` returns.
    Synced,
    /// Handed to the thread behind this queue, which syncs it while the next tables are
    /// written; whoever needs it durable waits for that thread.
    Queued(&'a SyncQueue),
}

/// A table file being written.
pub(crate) struct TableWriter {
    fs: Arc<dyn FileSystem>,
    path: PathBuf,
    builder: TableBuilder<BufWriter<Checksummed>>,
    smallest: Vec<u8>,
    largest: Vec<u8>,
    /// The internal key being made from a user key ([`add_user`](Self::add_user)).
    key: Vec<u8>,
}

/// A finished table file.
pub(crate) struct FinishedTable {
    pub(crate) file_size: u64,
    pub(crate) entries: u64,
    /// The CRC32C of the file's bytes.
    pub(crate) crc32c: u32,
    /// The first and last internal keys.
    pub(crate) smallest: Vec<u8>,
    pub(crate) largest: Vec<u8>,
}

impl TableWriter {
    /// Creates the table `path`, replacing a file there (LevelDB's `NewWritableFile`).
    ///
    /// # Errors
    /// [`Error::FileOp`] (`cannot create`); the table builder's refusal of `options`.
    pub(crate) fn create(
        fs: &Arc<dyn FileSystem>,
        path: PathBuf,
        options: &BuildOptions,
    ) -> Result<TableWriter> {
        let file = fs
            .create(&path)
            .map_err(|e| Error::op("cannot create", &path, e))?;
        TableWriter::new(fs, path, file, options)
    }

    /// Creates the table `path`, which must not exist.
    ///
    /// # Errors
    /// As [`create`](Self::create); an existing file is `cannot create`.
    pub(crate) fn create_new(
        fs: &Arc<dyn FileSystem>,
        path: PathBuf,
        options: &BuildOptions,
    ) -> Result<TableWriter> {
        let file = fs
            .create_new(&path)
            .map_err(|e| Error::op("cannot create", &path, e))?;
        TableWriter::new(fs, path, file, options)
    }

    fn new(
        fs: &Arc<dyn FileSystem>,
        path: PathBuf,
        file: Box<dyn WritableFile>,
        options: &BuildOptions,
    ) -> Result<TableWriter> {
        let file = Checksummed {
            file,
            crc: 0,
            unstarted: 0,
        };
        let builder =
            match TableBuilder::new(BufWriter::with_capacity(1 << 16, file), options.clone()) {
                Ok(builder) => builder,
                Err(e) => {
                    let _ = fs.remove(&path);
                    return Err(Error::writing(&path, e));
                }
            };
        Ok(TableWriter {
            fs: Arc::clone(fs),
            path,
            builder,
            smallest: Vec::new(),
            largest: Vec::new(),
            key: Vec::new(),
        })
    }

    /// Appends an entry; internal keys come in increasing order.
    ///
    /// # Errors
    /// The table builder's error (a key out of order: nothing is added), naming the file.
    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.add_internal(key, value)
            .map_err(|e| Error::writing(&self.path, e))
    }

    /// Appends an entry under its user key, stored at sequence 0 as a value (a bulk build's
    /// entries); its user key must sort strictly after the previous one.
    ///
    /// # Errors
    /// [`leveltable_table::Error::KeyOutOfOrder`] naming both user keys (nothing is added);
    /// a user key too long for an internal key; another error of the table builder, naming
    /// the file.
    pub(crate) fn add_user(&mut self, user_key: &[u8], value: &[u8]) -> Result<()> {
        let mut key = std::mem::take(&mut self.key);
        key.clear();
        let added =
            append_internal_key(&mut key, user_key, 0, ValueType::Value).and_then(|()| match self
                .add_internal(&key, value)
            {
                Ok(()) => Ok(()),
                Err(leveltable_table::Error::KeyOutOfOrder { .. }) => {
                    Err(Error::Table(leveltable_table::Error::KeyOutOfOrder {
                        previous: user_key_of(&self.largest).to_vec(),
                        got: user_key.to_vec(),
                    }))
                }
                Err(e) => Err(Error::writing(&self.path, e)),
            });
        self.key = key;
        added
    }

    fn add_internal(&mut self, key: &[u8], value: &[u8]) -> leveltable_table::Result<()> {
        self.builder.add(key, value)?;
        if self.builder.num_entries() == 1 {
            self.smallest = key.to_vec();
        }
        self.largest.clear();
        self.largest.extend_from_slice(key);
        Ok(())
    }

    /// The number of entries added.
    pub(crate) fn entries(&self) -> u64 {
        self.builder.num_entries()
    }

    /// The internal key added last (empty before the first).
    pub(crate) fn last_key(&self) -> &[u8] {
        &self.largest
    }

    /// The bytes written so far (LevelDB's `FileSize`).
    pub(crate) fn file_size(&self) -> u64 {
        self.builder.file_size()
    }

    /// Finishes the table and makes it durable as `durability` says. A table that cannot
    /// be finished (or handed over) is removed.
    ///
    /// # Errors
    /// [`Error::FileOp`] for a failed write, sync or close, naming the file; a stopped
    /// syncing thread.
    pub(crate) fn finish(self, durability: Durability<'_>) -> Result<FinishedTable> {
        let fs = Arc::clone(&self.fs);
        let path = self.path.clone();
        let finished = self.finish_file().and_then(|(finished, mut file)| {
            match durability {
                Durability::Synced => {
                    file.sync()
                        .map_err(|e| Error::op("cannot sync", &path, e))?;
                    file.close()
                        .map_err(|e| Error::op("cannot close", &path, e))?;
                }
                Durability::Queued(syncs) => syncs.sync(path.clone(), file)?,
            }
            Ok(finished)
        });
        if finished.is_err() {
            let _ = fs.remove(&path);
        }
        finished
    }

    /// Finishes the table, every byte handed to the system; the file, to sync and close.
    fn finish_file(mut self) -> Result<(FinishedTable, Box<dyn WritableFile>)> {
        let summary = self
            .builder
            .finish()
            .map_err(|e| Error::writing(&self.path, e))?;
        let Checksummed { file, crc, .. } = self
            .builder
            .into_inner()
            .into_inner()
            .map_err(|e| Error::op("cannot write", &self.path, e.into_error()))?;
        let finished = FinishedTable {
            file_size: summary.file_size,
            entries: summary.entries,
            crc32c: crc,
            smallest: self.smallest,
            largest: self.largest,
        };
        Ok((finished, file))
    }

    /// Gives up on the table and removes its file.
    pub(crate) fn abandon(mut self) {
        self.builder.abandon();
        let _ = self.fs.remove(&self.path);
    }
}

/// The user key of an internal key (all of a key shorter than a tag).
pub(crate) fn user_key_of(internal: &[u8]) -> &[u8] {
    &internal[..internal.len().saturating_sub(TAG_LEN)]
}

/// After this many bytes written, the system is told to start writing them to the disk
/// ([`WritableFile::start_writeback`]): the sync of the finished table then waits for the
/// last of them only.
const WRITEBACK_BYTES: usize = 1 << 20;

/// A file being written that keeps the CRC32C of every byte written to it.
struct Checksummed {
    file: Box<dyn WritableFile>,
    crc: u32,
    /// Bytes written since the last writeback was started.
    unstarted: usize,
}

impl Write for Checksummed {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        // `write` reports at most the bytes it was given.
        self.crc = crc32c::crc32c_append(self.crc, &buf[..n.min(buf.len())]);
        self.unstarted += n;
        if self.unstarted >= WRITEBACK_BYTES {
            self.unstarted = 0;
            self.file.start_writeback();
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::writer::file_system::LocalFileSystem;
    use leveltable_table::BuildOptions;

    fn local() -> Arc<dyn FileSystem> {
        Arc::new(LocalFileSystem)
    }

    /// A finished table is on disk with the size, keys and CRC32C it reports; a table given
    /// up on leaves no file.
    #[test]
    fn finish_reports_the_file_and_abandon_removes_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.ldb");
        let mut w =
            TableWriter::create_new(&local(), path.clone(), &BuildOptions::default()).unwrap();
        w.add(b"a", b"1").unwrap();
        w.add(b"b", b"2").unwrap();
        assert_eq!((w.entries(), w.last_key()), (2, &b"b"[..]));
        let done = w.finish(Durability::Synced).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(done.file_size, bytes.len() as u64);
        assert_eq!(done.crc32c, crc32c::crc32c(&bytes));
        assert_eq!(
            (&done.smallest[..], &done.largest[..]),
            (&b"a"[..], &b"b"[..])
        );
        assert_eq!(done.entries, 2);

        let other = dir.path().join("000002.ldb");
        let mut w = TableWriter::create(&local(), other.clone(), &BuildOptions::default()).unwrap();
        w.add(b"a", b"1").unwrap();
        w.abandon();
        assert!(!other.exists());
        // A new file is never put over an existing one.
        assert!(TableWriter::create_new(&local(), path, &BuildOptions::default()).is_err());
    }

    /// A file that counts the writebacks started, and where they began.
    struct Hinted {
        inner: Box<dyn WritableFile>,
        written: u64,
        hints: std::sync::Arc<std::sync::Mutex<Vec<u64>>>,
    }

    impl Write for Hinted {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let n = self.inner.write(buf)?;
            self.written += n as u64;
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            self.inner.flush()
        }
    }

    impl WritableFile for Hinted {
        fn sync(&mut self) -> io::Result<()> {
            self.inner.sync()
        }

        fn start_writeback(&mut self) {
            self.hints.lock().unwrap().push(self.written);
        }
    }

    /// A table of about 3.5 MiB has its writes started after each MiB written, and not
    /// more often: three times.
    #[test]
    fn writes_are_started_every_mib() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.ldb");
        let hints = std::sync::Arc::default();
        let inner = LocalFileSystem.create(&path).unwrap();
        let file = Box::new(Hinted {
            inner,
            written: 0,
            hints: std::sync::Arc::clone(&hints),
        });
        let options = crate::TableOptions::default()
            .compression(leveltable_table::Compression::None)
            .build_options();
        let mut w = TableWriter::new(&local(), path, file, &options).unwrap();
        let value = vec![b'v'; 1000];
        for i in 0..3500u32 {
            w.add_user(format!("{i:08}").as_bytes(), &value).unwrap();
        }
        let done = w.finish(Durability::Synced).unwrap();
        let hints = hints.lock().unwrap().clone();
        assert_eq!(hints.len(), 3, "{hints:?} in {} bytes", done.file_size);
        // Each after a MiB more was written, give or take one buffer's write.
        let mut last = 0;
        for at in &hints {
            assert!(
                (1 << 20..(1 << 20) + (128 << 10)).contains(&(at - last)),
                "{hints:?}"
            );
            last = *at;
        }
    }

    /// User keys are stored at sequence 0, and a key out of order is reported by user keys
    /// with nothing added.
    #[test]
    fn user_keys_are_stored_at_sequence_zero() {
        let dir = tempfile::tempdir().unwrap();
        let options = crate::TableOptions::default().build_options();
        let path = dir.path().join("000001.ldb");
        let mut w = TableWriter::create(&local(), path, &options).unwrap();
        w.add_user(b"k1", b"v").unwrap();
        match w.add_user(b"k0", b"v") {
            Err(Error::Table(leveltable_table::Error::KeyOutOfOrder { previous, got })) => {
                assert_eq!((&previous[..], &got[..]), (&b"k1"[..], &b"k0"[..]));
            }
            other => panic!("{:?}", other.err()),
        }
        let mut expected = Vec::new();
        append_internal_key(&mut expected, b"k1", 0, ValueType::Value).unwrap();
        assert_eq!(w.last_key(), &expected[..]);
        let done = w.finish(Durability::Synced).unwrap();
        assert_eq!(done.entries, 1);
        assert_eq!(user_key_of(&done.largest), b"k1");
    }
}
