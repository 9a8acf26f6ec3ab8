//! Building one part of a bulk build: the table files of one key range, built anywhere
//! (another thread, process or machine) into a staging directory and named `000001.ldb`,
//! `000002.ldb`, … in key order (the commit gives them their final numbers), then the record
//! that describes them for [`commit`](crate::commit()), written last as `PART` (see
//! `part.rs`), so a staging directory without one holds no finished part.

use std::cmp::Ordering;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use leveltable_table::{BuildOptions, Comparator};

use super::chunk::{Chunk, create_table, finish_table};
use super::options::BulkOptions;
use super::part::{PART_RECORD, Part, PartFile};
use super::workers::Workers;
use crate::durable::{create_dirs_on, write_atomically};
use crate::syncer::{SyncQueue, Syncer};
use crate::table_writer::{TableWriter, user_key_of};
use crate::writer::file_system::{FileSystem, LocalFileSystem};
use crate::{Error, Result};

/// Builds one part: entries added in strictly increasing key order are cut into table files
/// of about [`BulkOptions::max_file_size`] bytes of entries, built by
/// [`BulkOptions::threads`] threads. Call order: `create add* finish`.
///
/// ```
/// use leveltable_db::{BulkOptions, PartBuilder};
///
/// let staging = tempfile::tempdir()?;
/// let mut part = PartBuilder::create(staging.path().join("part-0"), BulkOptions::default())?;
/// part.add(b"apple", b"red")?;
/// part.add(b"banana", b"yellow")?;
/// let part = part.finish()?;
/// assert_eq!((part.entries(), part.files.len()), (2, 1));
/// assert_eq!(part.smallest(), Some(&b"apple"[..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PartBuilder {
    staging: PathBuf,
    /// Where the files are made.
    file_system: Arc<dyn FileSystem>,
    max_file_size: u64,
    table_options: BuildOptions,
    /// The user comparator ordering the keys; `None` for bytewise.
    order: Option<Arc<dyn Comparator>>,
    /// With workers: the entries of the file being filled.
    chunk: Chunk,
    /// Bytes of keys and values in the file being filled.
    chunk_bytes: u64,
    /// Without workers: the file being written, entries streamed straight into it.
    current: Option<TableWriter>,
    next_index: u64,
    /// The last key of the last file handed over or finished, for the order check of the
    /// next file's first key (within a file, a chunk's last key or the table builder is
    /// compared).
    last_key: Vec<u8>,
    entries: u64,
    workers: Option<Workers>,
    /// Files built here (without workers).
    built: Vec<(u64, PartFile)>,
    /// Where files finished here go to be synced. Dropped before `syncer` (fields drop in
    /// order), which waits for every queue to go.
    syncs: SyncQueue,
    /// Syncs the finished files while the next ones are built.
    syncer: Syncer,
}

impl std::fmt::Debug for PartBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartBuilder")
            .field("staging", &self.staging)
            .field("files", &self.next_index)
            .finish_non_exhaustive()
    }
}

impl PartBuilder {
    /// A builder writing into `staging`, which is created if missing (with any parent it
    /// lacks, each parent synced, so that a finished part survives a power loss) and must
    /// be empty.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for bad options or a staging directory that is not empty;
    /// [`Error::FileOp`] if it cannot be created; [`Error::Io`] if it cannot be read.
    pub fn create(staging: impl AsRef<Path>, options: BulkOptions) -> Result<PartBuilder> {
        PartBuilder::create_on(Arc::new(LocalFileSystem), staging, options)
    }

    /// [`create`](Self::create), making the staging directory (and any parent it lacks,
    /// each parent synced), the table files and the part record through `file_system` (a
    /// test's, say, that records what a power loss would keep). The staging directory is
    /// read on the local file system.
    ///
    /// # Errors
    /// As [`create`](Self::create).
    pub fn create_on(
        file_system: Arc<dyn FileSystem>,
        staging: impl AsRef<Path>,
        options: BulkOptions,
    ) -> Result<PartBuilder> {
        PartBuilder::create_ordered(file_system, staging, options, None)
    }

    /// [`create_on`](Self::create_on), for keys ordered by the user comparator `order`
    /// (bytewise if `None`).
    pub(crate) fn create_ordered(
        file_system: Arc<dyn FileSystem>,
        staging: impl AsRef<Path>,
        options: BulkOptions,
        order: Option<Arc<dyn Comparator>>,
    ) -> Result<PartBuilder> {
        options.check()?;
        let staging = staging.as_ref().to_owned();
        // Made through the file system with every parent it makes synced: a part whose
        // build returned survives a power loss, its directory's name with it.
        create_dirs_on(&*file_system, &staging)?;
        let not_empty = fs::read_dir(&staging)
            .map_err(|source| Error::Io {
                path: staging.clone(),
                source,
            })?
            .next()
            .is_some();
        if not_empty {
            return Err(Error::InvalidArgument(
                format!("staging directory {} is not empty", staging.display()).into(),
            ));
        }
        let table_options = options.table.build_options_ordered(order.as_ref());
        let (syncer, syncs) = Syncer::start(SYNC_BACKLOG)
            .map_err(|e| Error::op("cannot start a thread to sync the tables of", &staging, e))?;
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let threads = building_threads(options.threads, cores);
        let workers = (threads > 1)
            .then(|| {
                Workers::start(
                    &file_system,
                    threads,
                    staging.clone(),
                    table_options.clone(),
                    syncs.clone(),
                )
            })
            .flatten();
        Ok(PartBuilder {
            staging,
            file_system,
            max_file_size: options.max_file_size,
            table_options,
            order,
            chunk: Chunk::default(),
            chunk_bytes: 0,
            current: None,
            next_index: 0,
            last_key: Vec::new(),
            entries: 0,
            workers,
            built: Vec::new(),
            syncs,
            syncer,
        })
    }

    /// The staging directory.
    pub fn staging(&self) -> &Path {
        &self.staging
    }

    /// Adds an entry; its key must sort strictly after the previous one (bytewise, or by
    /// the comparator the builder was made for).
    ///
    /// # Errors
    /// [`Error::Table`] with [`leveltable_table::Error::KeyOutOfOrder`] for a key out of
    /// order (the builder is unchanged); an error building an earlier file.
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        match &mut self.current {
            // Streaming into a file that has entries: its table builder checks the order
            // (and says what is out of order in user keys), the key is not compared twice.
            Some(writer) if writer.entries() > 0 => writer.add_user(key, value)?,
            _ => {
                // The previous key: the chunk's last, else the last file's.
                let previous = self.chunk.last_key().unwrap_or(&self.last_key);
                let in_order = match &self.order {
                    None => key > previous,
                    Some(order) => order.compare(key, previous) == Ordering::Greater,
                };
                if self.entries > 0 && !in_order {
                    return Err(Error::Table(leveltable_table::Error::KeyOutOfOrder {
                        previous: previous.to_vec(),
                        got: key.to_vec(),
                    }));
                }
                if self.workers.is_some() {
                    self.chunk.push(key, value);
                } else {
                    let writer = match &mut self.current {
                        Some(writer) => writer,
                        None => self.current.insert(create_table(
                            &self.file_system,
                            &self.staging,
                            self.next_index,
                            &self.table_options,
                        )?),
                    };
                    writer.add_user(key, value)?;
                }
            }
        }
        let bytes = (key.len() as u64).saturating_add(value.len() as u64);
        self.chunk_bytes = self.chunk_bytes.saturating_add(bytes);
        self.entries += 1;
        if self.chunk_bytes >= self.max_file_size {
            self.cut()?;
        }
        Ok(())
    }

    /// Entries added so far.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Closes the file being filled: finishes it here, or hands its entries to a worker.
    fn cut(&mut self) -> Result<()> {
        self.chunk_bytes = 0;
        let index = self.next_index;
        if let Some(writer) = self.current.take() {
            // The next file's first key is checked against this file's last.
            self.last_key.clear();
            self.last_key
                .extend_from_slice(user_key_of(writer.last_key()));
            self.built
                .push((index, finish_table(writer, index, &self.syncs)?));
        } else if !self.chunk.is_empty() {
            if let Some(workers) = &mut self.workers {
                if let Some(last) = self.chunk.last_key() {
                    self.last_key.clear();
                    self.last_key.extend_from_slice(last);
                }
                // The next chunk reuses the buffers of one a thread has finished with: its
                // memory is already mapped and large enough.
                let spare = workers.spare(self.max_file_size);
                let entries = std::mem::replace(&mut self.chunk, spare);
                workers.submit(index, entries)?;
            }
        } else {
            return Ok(());
        }
        self.next_index += 1;
        Ok(())
    }

    /// Builds the last file, waits for the others, writes the part record and returns it.
    ///
    /// # Errors
    /// The first error of any file, or writing the record.
    pub fn finish(mut self) -> Result<Part> {
        self.cut()?;
        let mut files: Vec<(u64, PartFile)> = match self.workers.take() {
            Some(workers) => workers.finish()?,
            None => std::mem::take(&mut self.built),
        };
        // Every file durable before the record that lists them: the workers' queues went
        // with them, this is the last.
        drop(self.syncs);
        self.syncer.finish()?;
        files.sort_by_key(|(index, _)| *index);
        if files.len() as u64 != self.next_index {
            return Err(Error::InvalidArgument(
                "a build thread stopped before finishing its file".into(),
            ));
        }
        let part = Part {
            staging: self.staging.clone(),
            files: files.into_iter().map(|(_, f)| f).collect(),
        };
        let temp = format!("{PART_RECORD}.tmp");
        write_atomically(
            &*self.file_system,
            &self.staging,
            &temp,
            PART_RECORD,
            part.to_record().as_bytes(),
        )?;
        Ok(part)
    }
}

/// The threads that build files: those asked for, but no more than the `cores` the process
/// may run on. Threads that share a core with each other and with the adding thread only
/// add its copy of every entry: with one core a two-thread build ran at 0.91× of one
/// (1 GB, `taskset -c 0`). One thread builds on the adding thread itself. The files are the
/// same whatever the number.
fn building_threads(asked: usize, cores: usize) -> usize {
    asked.min(cores).max(1)
}

/// Finished files waiting for the syncing thread, at most; a building thread finishing one
/// more waits.
const SYNC_BACKLOG: usize = 4;

#[cfg(test)]
mod tests {
    use super::*;

    /// A build uses the threads asked for up to the cores it may run on, and at least one.
    #[test]
    fn threads_are_bounded_by_the_cores() {
        assert_eq!(building_threads(2, 1), 1);
        assert_eq!(building_threads(4, 2), 2);
        assert_eq!(building_threads(2, 8), 2);
        assert_eq!(building_threads(1, 8), 1);
        assert_eq!(building_threads(0, 8), 1);
    }
}
