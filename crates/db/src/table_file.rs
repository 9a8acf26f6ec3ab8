//! One table file being written (LevelDB's `BuildTable` and a compaction's output): internal
//! keys in order through a [`TableBuilder`], into a file the [`FileSystem`] made, with the
//! CRC32C of every byte written. A flush or a compaction syncs and closes it before the
//! MANIFEST names it; a bulk build hands it to its syncing thread.
//!
//! [`FileSystem`]: crate::writer::file_system::FileSystem

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use leveltable_table::{BuildOptions, TableBuilder};

use crate::writer::file_system::WritableFile;
use crate::{Error, Result};

/// A table file being written.
pub(crate) struct TableFile {
    path: PathBuf,
    builder: TableBuilder<BufWriter<Checksummed>>,
    smallest: Vec<u8>,
    largest: Vec<u8>,
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

impl TableFile {
    /// Writes a table into `file`, the new file `path`.
    pub(crate) fn new(
        path: PathBuf,
        file: Box<dyn WritableFile>,
        options: &BuildOptions,
    ) -> Result<TableFile> {
        let file = Checksummed { file, crc: 0 };
        let builder = TableBuilder::new(BufWriter::with_capacity(1 << 16, file), options.clone())?;
        Ok(TableFile {
            path,
            builder,
            smallest: Vec::new(),
            largest: Vec::new(),
        })
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Appends an entry; keys come in increasing internal-key order, or this is the table
    /// builder's [`KeyOutOfOrder`](leveltable_table::Error::KeyOutOfOrder) and nothing is
    /// added.
    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) -> leveltable_table::Result<()> {
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

    /// Finishes the table, syncs and closes its file.
    pub(crate) fn finish_synced(self) -> Result<FinishedTable> {
        let path = self.path.clone();
        let (finished, mut file) = self.finish()?;
        file.sync()
            .map_err(|e| Error::op("cannot sync", &path, e))?;
        file.close()
            .map_err(|e| Error::op("cannot close", &path, e))?;
        Ok(finished)
    }

    /// Finishes the table, every byte handed to the system; the file, for the caller to
    /// sync and close.
    pub(crate) fn finish(mut self) -> Result<(FinishedTable, Box<dyn WritableFile>)> {
        let summary = self
            .builder
            .finish()
            .map_err(|e| Error::writing(&self.path, e))?;
        let Checksummed { file, crc } = self
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

    /// Gives up on the table; the caller removes its file.
    pub(crate) fn abandon(mut self) {
        self.builder.abandon();
    }
}

/// A file being written that keeps the CRC32C of every byte written to it.
struct Checksummed {
    file: Box<dyn WritableFile>,
    crc: u32,
}

impl Write for Checksummed {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        // `write` reports at most the bytes it was given.
        self.crc = crc32c::crc32c_append(self.crc, &buf[..n.min(buf.len())]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}
