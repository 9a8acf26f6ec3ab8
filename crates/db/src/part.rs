//! One part of a bulk build: the table files of one key range, built anywhere (another
//! thread, process or machine) into a staging directory, and the small record that describes
//! them for [`commit`](crate::commit()).
//!
//! A part's files are named `000001.ldb`, `000002.ldb`, … in key order inside its staging
//! directory; the commit gives them their final numbers. The record is written last, as
//! `PART`, so a staging directory without one holds no finished part. It is a few lines of
//! text, one per file, easy to read from any language:
//!
//! ```text
//! leveltable-part 2
//! staging <the staging path's bytes in hex>
//! file 000001.ldb <size> <entries> <CRC32C of the whole file, 8 hex digits> <smallest key in hex> <largest key in hex>
//! ```
//!
//! Records of version 1 (`leveltable-part 1`, without the CRC32C field) are still read.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use leveltable_table::{BuildOptions, TableBuilder};

use crate::bulk_options::BulkOptions;
use crate::dbformat::{TAG_LEN, ValueType, append_internal_key};
use crate::filename::table_file_name;
use crate::syncer::{SyncQueue, Syncer};
use crate::{Error, Result};

mod record;

pub(crate) use crate::storage::open_no_follow;
pub(crate) use record::plain_file_name;
pub use record::{PART_RECORD, Part, PartFile};

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
    max_file_size: u64,
    table_options: BuildOptions,
    /// With workers: the entries of the file being filled.
    chunk: Chunk,
    /// Bytes of keys and values in the file being filled.
    chunk_bytes: u64,
    /// Without workers: the file being written, entries streamed straight into it.
    current: Option<TableWriter>,
    next_index: u64,
    /// The key added last (its buffer reused), for the order check.
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
    /// A builder writing into `staging`, which is created if missing and must be empty.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for bad options or a staging directory that is not empty;
    /// [`Error::FileOp`] if it cannot be created; [`Error::Io`] if it cannot be read.
    pub fn create(staging: impl AsRef<Path>, options: BulkOptions) -> Result<PartBuilder> {
        options.check()?;
        let staging = staging.as_ref().to_owned();
        fs::create_dir_all(&staging).map_err(|e| Error::op("cannot create", &staging, e))?;
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
        let table_options = options.table_options();
        let (syncer, syncs) = Syncer::start(SYNC_BACKLOG);
        let workers = (options.threads > 1).then(|| {
            Workers::start(
                options.threads,
                staging.clone(),
                table_options.clone(),
                syncs.clone(),
            )
        });
        Ok(PartBuilder {
            staging,
            max_file_size: options.max_file_size,
            table_options,
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

    /// Adds an entry; its key must sort strictly after the previous one (bytewise).
    ///
    /// # Errors
    /// [`Error::Table`] with [`leveltable_table::Error::KeyOutOfOrder`] for a key out of
    /// order (the builder is unchanged); an error building an earlier file.
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        if self.entries > 0 && key <= self.last_key.as_slice() {
            return Err(Error::Table(leveltable_table::Error::KeyOutOfOrder {
                previous: self.last_key.clone(),
                got: key.to_vec(),
            }));
        }
        if self.workers.is_some() {
            self.chunk.push(key, value);
        } else {
            let writer = match &mut self.current {
                Some(writer) => writer,
                None => self.current.insert(TableWriter::create(
                    &self.staging,
                    self.next_index,
                    &self.table_options,
                )?),
            };
            writer.add(key, value)?;
        }
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
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
            self.built.push((index, writer.finish(&self.syncs)?));
        } else if !self.chunk.is_empty() {
            if let Some(workers) = &mut self.workers {
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
            &self.staging,
            &temp,
            PART_RECORD,
            part.to_record().as_bytes(),
        )?;
        Ok(part)
    }
}

/// The name of the `index`-th file of a part.
fn file_name(index: u64) -> String {
    table_file_name(index.saturating_add(1))
}

/// Finished files waiting for the syncing thread, at most; a building thread finishing one
/// more waits.
const SYNC_BACKLOG: usize = 4;

/// Writes `entries` (user keys in order) as the table `staging/<file_name(index)>`, handed
/// to `syncs` when written.
fn write_table(
    staging: &Path,
    index: u64,
    options: &BuildOptions,
    entries: &Chunk,
    syncs: &SyncQueue,
) -> Result<PartFile> {
    let mut writer = TableWriter::create(staging, index, options)?;
    for (key, value) in entries.iter() {
        writer.add(key, value)?;
    }
    writer.finish(syncs)
}

/// A file's worth of entries on their way to a worker: keys and values back to back in one
/// buffer, so that adding an entry copies its bytes and allocates nothing per entry.
#[derive(Debug, Default)]
struct Chunk {
    bytes: Vec<u8>,
    /// Per entry: where its key ends in `bytes`, and where its value ends (it starts where
    /// the key ends; the key starts where the previous value ends).
    ends: Vec<(usize, usize)>,
}

impl Chunk {
    fn push(&mut self, key: &[u8], value: &[u8]) {
        self.bytes.extend_from_slice(key);
        let key_end = self.bytes.len();
        self.bytes.extend_from_slice(value);
        self.ends.push((key_end, self.bytes.len()));
    }

    fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
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
struct TableWriter {
    name: String,
    path: PathBuf,
    builder: TableBuilder<BufWriter<Checksummed>>,
    /// The internal key being added, its buffer reused.
    key: Vec<u8>,
    smallest: Vec<u8>,
}

impl TableWriter {
    fn create(staging: &Path, index: u64, options: &BuildOptions) -> Result<TableWriter> {
        let name = file_name(index);
        let path = staging.join(&name);
        let file = File::create_new(&path).map_err(|e| Error::op("cannot create", &path, e))?;
        let file = Checksummed { file, crc: 0 };
        let builder = TableBuilder::new(BufWriter::with_capacity(1 << 16, file), options.clone())?;
        Ok(TableWriter {
            name,
            path,
            builder,
            key: Vec::new(),
            smallest: Vec::new(),
        })
    }

    fn add(&mut self, user_key: &[u8], value: &[u8]) -> Result<()> {
        if self.builder.num_entries() == 0 {
            self.smallest = user_key.to_vec();
        }
        self.key.clear();
        append_internal_key(&mut self.key, user_key, 0, ValueType::Value)?;
        self.builder
            .add(&self.key, value)
            .map_err(|e| Error::writing(&self.path, e))
    }

    fn finish(mut self, syncs: &SyncQueue) -> Result<PartFile> {
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
    file: File,
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

/// Writes `dir/name` through the temporary file `dir/temp` and a rename, synced, then syncs
/// `dir`.
pub(crate) fn write_atomically(dir: &Path, temp: &str, name: &str, contents: &[u8]) -> Result<()> {
    let path = dir.join(name);
    let temp = dir.join(temp);
    let mut file = File::create(&temp).map_err(|e| Error::op("cannot create", &temp, e))?;
    file.write_all(contents)
        .map_err(|e| Error::op("cannot write", &temp, e))?;
    file.sync_all()
        .map_err(|e| Error::op("cannot sync", &temp, e))?;
    drop(file);
    fs::rename(&temp, &path).map_err(|e| {
        let _ = fs::remove_file(&temp);
        Error::op(format!("cannot rename {} to", temp.display()), &path, e)
    })?;
    sync_dir(dir)
}

/// Syncs a directory, so that the names in it survive a crash.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::op("cannot sync", dir, e))
}

type Job = (u64, Chunk);
/// A file built (or its error), and the chunk it was built from, for reuse.
type Built = (u64, Result<PartFile>, Chunk);

/// Threads building table files from chunks of entries.
struct Workers {
    jobs: Option<SyncSender<Job>>,
    results: Receiver<Built>,
    handles: Vec<JoinHandle<()>>,
    done: Vec<(u64, PartFile)>,
    /// Chunks the threads are done with, emptied: at most one per thread and one more.
    spares: Vec<Chunk>,
}

impl Workers {
    fn start(threads: usize, staging: PathBuf, options: BuildOptions, syncs: SyncQueue) -> Workers {
        // One chunk waits for the first thread that frees up: at most one chunk per thread,
        // that one and the one being filled are in memory.
        let (jobs, queue) = mpsc::sync_channel::<Job>(1);
        let queue = Arc::new(Mutex::new(queue));
        let (report, results) = mpsc::channel::<Built>();
        let handles = (0..threads)
            .map(|_| {
                let queue = Arc::clone(&queue);
                let report = report.clone();
                let staging = staging.clone();
                let options = options.clone();
                let syncs = syncs.clone();
                std::thread::spawn(move || {
                    loop {
                        let job = queue.lock().unwrap_or_else(PoisonError::into_inner).recv();
                        let Ok((index, mut entries)) = job else { break };
                        let built = write_table(&staging, index, &options, &entries, &syncs);
                        entries.clear();
                        if report.send((index, built, entries)).is_err() {
                            break;
                        }
                    }
                })
            })
            .collect();
        Workers {
            jobs: Some(jobs),
            results,
            handles,
            done: Vec::new(),
            spares: Vec::new(),
        }
    }

    /// An empty chunk: one the threads are done with if there is one, else a new one with
    /// room for `bytes` of entries.
    fn spare(&mut self, bytes: u64) -> Chunk {
        self.spares.pop().unwrap_or_else(|| Chunk {
            // A cap on the guess: a file's entries may exceed any reasonable reservation.
            bytes: Vec::with_capacity(usize::try_from(bytes.min(64 << 20)).unwrap_or(0)),
            ends: Vec::new(),
        })
    }

    /// Hands a chunk to a free thread, first collecting finished files (and their errors).
    fn submit(&mut self, index: u64, entries: Chunk) -> Result<()> {
        self.collect(false)?;
        let sent = self.jobs.as_ref().map(|jobs| jobs.send((index, entries)));
        match sent {
            Some(Ok(())) => Ok(()),
            _ => Err(Error::InvalidArgument("the build threads stopped".into())),
        }
    }

    /// Takes the files built so far; with `all`, waits for every one.
    fn collect(&mut self, all: bool) -> Result<()> {
        let next = |all: bool| {
            if all {
                self.results.recv().ok()
            } else {
                self.results.try_recv().ok()
            }
        };
        while let Some((index, built, chunk)) = next(all) {
            self.spares.push(chunk);
            self.done.push((index, built?));
        }
        Ok(())
    }

    fn finish(mut self) -> Result<Vec<(u64, PartFile)>> {
        self.jobs = None;
        let collected = self.collect(true);
        for handle in self.handles.drain(..) {
            // A worker that panicked sent nothing for its chunk; the count check below
            // reports it.
            let _ = handle.join();
        }
        collected?;
        Ok(std::mem::take(&mut self.done))
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.jobs = None;
        for handle in self.handles.drain(..) {
            let _ = handle.join();
        }
    }
}
