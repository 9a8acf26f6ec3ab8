//! Writing one table file of a part: user keys in order, each stored at sequence 0, with the
//! CRC32C of every byte written ([`TableFile`]), handed to the syncing thread when finished.

use std::path::Path;

use leveltable_table::BuildOptions;

use super::part::PartFile;
use super::syncer::SyncQueue;
use crate::dbformat::{TAG_LEN, ValueType, append_internal_key};
use crate::filename::table_file_name;
use crate::table_file::TableFile;
use crate::writer::file_system::FileSystem;
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
    table: TableFile,
    /// The internal key being added.
    key: Vec<u8>,
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
        Ok(TableWriter {
            name,
            table: TableFile::new(path, file, options)?,
            key: Vec::new(),
        })
    }

    /// Adds an entry; its user key must sort strictly after the previous one (bytewise),
    /// or this is [`leveltable_table::Error::KeyOutOfOrder`] naming both user keys, and the
    /// file is unchanged.
    pub(crate) fn add(&mut self, user_key: &[u8], value: &[u8]) -> Result<()> {
        self.key.clear();
        append_internal_key(&mut self.key, user_key, 0, ValueType::Value)?;
        match self.table.add(&self.key, value) {
            Ok(()) => Ok(()),
            Err(leveltable_table::Error::KeyOutOfOrder { .. }) => {
                Err(Error::Table(leveltable_table::Error::KeyOutOfOrder {
                    previous: self.last_key().to_vec(),
                    got: user_key.to_vec(),
                }))
            }
            Err(e) => Err(Error::writing(self.table.path(), e)),
        }
    }

    /// Whether no entry has been added.
    pub(crate) fn is_empty(&self) -> bool {
        self.table.entries() == 0
    }

    /// The user key added last (empty before the first).
    pub(crate) fn last_key(&self) -> &[u8] {
        user_key_of(self.table.last_key())
    }

    pub(crate) fn finish(self, syncs: &SyncQueue) -> Result<PartFile> {
        if self.is_empty() {
            return Err(Error::InvalidArgument("a table file needs an entry".into()));
        }
        let path = self.table.path().to_path_buf();
        let (finished, file) = self.table.finish()?;
        syncs.sync(path, file)?;
        Ok(PartFile {
            name: self.name,
            size: finished.file_size,
            entries: finished.entries,
            crc32c: Some(finished.crc32c),
            smallest: user_key_of(&finished.smallest).to_vec(),
            largest: user_key_of(&finished.largest).to_vec(),
        })
    }
}

/// The user key of an internal key this wrote.
fn user_key_of(internal: &[u8]) -> &[u8] {
    &internal[..internal.len().saturating_sub(TAG_LEN)]
}
