//! What a part's table files are made of: the entries of one file on their way to a worker
//! ([`Chunk`]), the files' names in the staging directory, and the record of a finished
//! file. Each file is written by the crate's table writer, user keys stored at sequence 0,
//! and handed to the syncing thread when finished.

use std::path::Path;
use std::sync::Arc;

use leveltable_table::BuildOptions;

use super::part::PartFile;
use crate::filename::table_file_name;
use crate::syncer::SyncQueue;
use crate::table_writer::{Durability, TableWriter, user_key_of};
use crate::writer::file_system::FileSystem;
use crate::{Error, Result};

/// The name of the `index`-th file of a part.
pub(crate) fn file_name(index: u64) -> String {
    table_file_name(index.saturating_add(1))
}

/// Writes `entries` (user keys in order) as the table `staging/<file_name(index)>`, handed
/// to `syncs` when written.
pub(crate) fn write_table(
    fs: &Arc<dyn FileSystem>,
    staging: &Path,
    index: u64,
    options: &BuildOptions,
    entries: &Chunk,
    syncs: &SyncQueue,
) -> Result<PartFile> {
    let mut writer = create_table(fs, staging, index, options)?;
    for (key, value) in entries.iter() {
        if let Err(e) = writer.add_user(key, value) {
            writer.abandon();
            return Err(e);
        }
    }
    finish_table(writer, index, syncs)
}

/// Creates the table `staging/<file_name(index)>`, which must not exist.
pub(crate) fn create_table(
    fs: &Arc<dyn FileSystem>,
    staging: &Path,
    index: u64,
    options: &BuildOptions,
) -> Result<TableWriter> {
    TableWriter::create_new(fs, staging.join(file_name(index)), options)
}

/// Finishes `writer`, the `index`-th file of a part, handing it to `syncs`; its record in the
/// part.
///
/// # Errors
/// [`Error::InvalidArgument`] for a table without entries; an error finishing it.
pub(crate) fn finish_table(writer: TableWriter, index: u64, syncs: &SyncQueue) -> Result<PartFile> {
    if writer.entries() == 0 {
        writer.abandon();
        return Err(Error::InvalidArgument("a table file needs an entry".into()));
    }
    let finished = writer.finish(Durability::Queued(syncs))?;
    Ok(PartFile {
        name: file_name(index),
        size: finished.file_size,
        entries: finished.entries,
        crc32c: Some(finished.crc32c),
        smallest: user_key_of(&finished.smallest).to_vec(),
        largest: user_key_of(&finished.largest).to_vec(),
    })
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
