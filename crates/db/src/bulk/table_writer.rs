//! Writing one table file of a part: user keys in order, each stored at sequence 0, with the
//! CRC32C of every byte written, handed to the syncing thread when finished.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use leveltable_table::{BuildOptions, TableBuilder};

use super::part::PartFile;
use super::syncer::SyncQueue;
use crate::dbformat::{TAG_LEN, ValueType, append_internal_key};
use crate::filename::table_file_name;
use crate::writer::file_system::{FileSystem, WritableFile};
use crate::{Error, Result};

/// The name of the `index`-th file of a part.
pub(crate) fn file_name(index: u64) -> String {
    table_file_name(index.saturating_add(1))
}

/// Writes `entries` (user keys in order) as the table `staging/<file_name(index)>`, handed
/// to `syncs` when written.
pub(crate) fn write_table(
    fs: &dyn FileSystem,
    staging: &Path,
    index: u64,
    options: &BuildOptions,
    entries: &Chunk,
    syncs: &SyncQueue,
) -> Result<PartFile> {
    let mut writer = TableWriter::create(fs, staging, index, options)?;
    for (key, value) in entries.iter() {
        writer.add(key, value)?;
    }
    writer.finish(syncs)
}

/// A file's worth of entries on their way to a worker: keys and values back to back in one
/// buffer, so that adding an entry copies its bytes and allocates nothing per entry.
#[derive(Debug, Default)]
pub(crate) struct Chunk {
    pub(crate) bytes: Vec<u8>,
    /// Per entry: where its key ends in `bytes`, and where its value ends (it starts where
    /// the key ends; the key starts where the previous value ends).
    pub(crate) ends: Vec<(usize, usize)>,
}

impl Chunk {
    pub(crate) fn push(&mut self, key: &[u8], value: &[u8]) {
        self.bytes.extend_from_slice(key);
        let key_end = self.bytes.len();
        self.bytes.extend_from_slice(value);
        self.ends.push((key_end, self.bytes.len()));
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The key of the entry pushed last.
    pub(crate) fn last_key(&self) -> Option<&[u8]> {
        let (key_end, _) = *self.ends.last()?;
        let start = self.ends.len().checked_sub(2).map_or(0, |i| self.ends[i].1);
        // Invariant: the ends increase, and each lies within `bytes`.
        Some(&self.bytes[start..key_end])
    }

    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        let mut start = 0;
        self.ends.iter().map(move |&(key_end, value_end)| {
            // Invariant: the ends increase, and each lies within `bytes`.
            let entry = (&self.bytes[start..key_end], &self.bytes[key_end..value_end]);
            start = value_end;
            entry
        })
    }
}

/// One table file of a part being written: user keys in order, each stored at sequence 0,
/// handed to the syncing thread when finished.
pub(crate) struct TableWriter {
    name: String,
    path: PathBuf,
    builder: TableBuilder<BufWriter<Checksummed>>,
    /// The internal key added last.
    key: Vec<u8>,
    /// The internal key being added; swapped with `key` once it is.
    spare: Vec<u8>,
    smallest: Vec<u8>,
}

impl TableWriter {
    pub(crate) fn create(
        fs: &dyn FileSystem,
        staging: &Path,
        index: u64,
        options: &BuildOptions,
    ) -> Result<TableWriter> {
        let name = file_name(index);
        let path = staging.join(&name);
        let file = fs
            .create_new(&path)
            .map_err(|e| Error::op("cannot create", &path, e))?;
        let file = Checksummed { file, crc: 0 };
        let builder = TableBuilder::new(BufWriter::with_capacity(1 << 16, file), options.clone())?;
        Ok(TableWriter {
            name,
            path,
            builder,
            key: Vec::new(),
            spare: Vec::new(),
            smallest: Vec::new(),
        })
    }

    /// Adds an entry; its user key must sort strictly after the previous one (bytewise),
    /// or this is [`leveltable_table::Error::KeyOutOfOrder`] naming both user keys, and the
    /// file is unchanged.
    pub(crate) fn add(&mut self, user_key: &[u8], value: &[u8]) -> Result<()> {
        if self.builder.num_entries() == 0 {
            self.smallest = user_key.to_vec();
        }
        self.spare.clear();
        append_internal_key(&mut self.spare, user_key, 0, ValueType::Value)?;
        match self.builder.add(&self.spare, value) {
            Ok(()) => {
                std::mem::swap(&mut self.key, &mut self.spare);
                Ok(())
            }
            Err(leveltable_table::Error::KeyOutOfOrder { .. }) => {
                Err(Error::Table(leveltable_table::Error::KeyOutOfOrder {
                    previous: self.last_key().to_vec(),
                    got: user_key.to_vec(),
                }))
            }
            Err(e) => Err(Error::writing(&self.path, e)),
        }
    }

    /// Whether no entry has been added.
    pub(crate) fn is_empty(&self) -> bool {
        self.builder.num_entries() == 0
    }

    /// The user key added last (empty before the first).
    pub(crate) fn last_key(&self) -> &[u8] {
        &self.key[..self.key.len().saturating_sub(TAG_LEN)]
    }

    pub(crate) fn finish(mut self, syncs: &SyncQueue) -> Result<PartFile> {
        if self.builder.num_entries() == 0 {
            return Err(Error::InvalidArgument("a table file needs an entry".into()));
        }
        let summary = self
            .builder
            .finish()
            .map_err(|e| Error::writing(&self.path, e))?;
        let largest = self.key[..self.key.len().saturating_sub(TAG_LEN)].to_vec();
        let Checksummed { file, crc } = self
            .builder
            .into_inner()
            .into_inner()
            .map_err(|e| Error::op("cannot write", &self.path, e.into_error()))?;
        syncs.sync(self.path, file)?;
        Ok(PartFile {
            name: self.name,
            size: summary.file_size,
            entries: summary.entries,
            crc32c: Some(crc),
            smallest: self.smallest,
            largest,
        })
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
