//! Threads building a part's table files from chunks of entries, in parallel, while the
//! adding thread fills the next chunk.

use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use leveltable_table::BuildOptions;

use super::chunk::{Chunk, write_table};
use super::part::PartFile;
use crate::syncer::SyncQueue;
use crate::writer::file_system::FileSystem;
use crate::{Error, Result};

type Job = (u64, Chunk);
/// A file built (or its error), and the chunk it was built from, for reuse.
type Built = (u64, Result<PartFile>, Chunk);

/// Threads building table files from chunks of entries.
pub(crate) struct Workers {
    jobs: Option<SyncSender<Job>>,
    results: Receiver<Built>,
    handles: Vec<JoinHandle<()>>,
    done: Vec<(u64, PartFile)>,
    /// Chunks the threads are done with, emptied: at most one per thread and one more.
    spares: Vec<Chunk>,
}

impl Workers {
    /// Starts `threads` building threads, or as many as the system lets start; `None` if
    /// it lets none start (the caller then builds on its own thread).
    pub(crate) fn start(
        fs: &Arc<dyn FileSystem>,
        threads: usize,
        staging: PathBuf,
        options: BuildOptions,
        syncs: SyncQueue,
    ) -> Option<Workers> {
        // One chunk waits for the first thread that frees up: at most one chunk per thread,
        // that one and the one being filled are in memory.
        let (jobs, queue) = mpsc::sync_channel::<Job>(1);
        let queue = Arc::new(Mutex::new(queue));
        let (report, results) = mpsc::channel::<Built>();
        let handles: Vec<_> = (0..threads)
            .map_while(|_| {
                let queue = Arc::clone(&queue);
                let report = report.clone();
                let staging = staging.clone();
                let options = options.clone();
                let syncs = syncs.clone();
                let fs = Arc::clone(fs);
                let spawned = std::thread::Builder::new()
                    .name("leveltable-build".into())
                    .spawn(move || {
                        loop {
                            let job = queue.lock().unwrap_or_else(PoisonError::into_inner).recv();
                            let Ok((index, mut entries)) = job else { break };
                            let built =
                                write_table(&fs, &staging, index, &options, &entries, &syncs);
                            entries.clear();
                            if report.send((index, built, entries)).is_err() {
                                break;
                            }
                        }
                    });
                spawned.ok()
            })
            .collect();
        if handles.is_empty() {
            return None;
        }
        Some(Workers {
            jobs: Some(jobs),
            results,
            handles,
            done: Vec::new(),
            spares: Vec::new(),
        })
    }

    /// An empty chunk: one the threads are done with if there is one, else a new one with
    /// room for `bytes` of entries.
    pub(crate) fn spare(&mut self, bytes: u64) -> Chunk {
        self.spares.pop().unwrap_or_else(|| Chunk {
            // A cap on the guess: a file's entries may exceed any reasonable reservation.
            bytes: Vec::with_capacity(usize::try_from(bytes.min(64 << 20)).unwrap_or(0)),
            ends: Vec::new(),
        })
    }

    /// Hands a chunk to a free thread, first collecting finished files (and their errors).
    pub(crate) fn submit(&mut self, index: u64, entries: Chunk) -> Result<()> {
        self.collect(false)?;
        let sent = self.jobs.as_ref().map(|jobs| jobs.send((index, entries)));
        match sent {
            Some(Ok(())) => Ok(()),
            _ => Err(Error::InvalidArgument("the build threads stopped".into())),
        }
    }

    /// Takes the files built so far; with `all`, waits for every one.
    pub(crate) fn collect(&mut self, all: bool) -> Result<()> {
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

    pub(crate) fn finish(mut self) -> Result<Vec<(u64, PartFile)>> {
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
