//! Readahead for scans of tables stored with a slow codec: while the reader works through
//! one data block, the next few are decompressed on other cores.
//!
//! zlib, raw deflate and zstd decompress at a few hundred MB/s, an order of magnitude below
//! snappy and below a disk's read rate, so a scan of a Minecraft world is bound by one
//! core's inflate. A table's [`Readahead`] watches the data blocks it is asked for; once it
//! has seen a block of a slow codec and two reads in a row of consecutive data blocks, each
//! read hands the stored bytes of the following blocks (up to the depth) to the process's
//! background workers (`leveltable_process::workers`), and a later read of one of them
//! takes its result. The reading thread decodes a block itself when no worker has started
//! on it yet, so neither side waits on an idle other. Memory is bounded by the depth: at most that many stored and decoded blocks per
//! scanned table.
//!
//! Gets and scans that jump are never sequential and pay one uncontended lock per block.

#![deny(clippy::arithmetic_side_effects)]

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::ReadAt;
use crate::block::Block;
use crate::comparator::BytewiseComparator;
use crate::format::{BlockHandle, Compression};
use crate::profile::Profile;
use crate::read_block::{decode_raw, read_raw};
use crate::{Error, Result};

/// A decoded block: its contents and whether it was stored compressed.
type Decoded = Result<(Vec<u8>, bool)>;

/// The readahead of one table.
pub(crate) struct Readahead {
    depth: usize,
    /// Set once a block of a slow codec was read; until then every read goes straight on.
    active: AtomicBool,
    state: Mutex<State>,
    /// Blocks handed to a read from a slot: decoded by a worker, or by the reader before a
    /// worker started on them.
    taken: AtomicU64,
}

impl fmt::Debug for Readahead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Readahead")
            .field("depth", &self.depth)
            .field("active", &self.active.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct State {
    /// The data blocks in file order, read from the index on first use; empty if it could
    /// not be read (the readahead then stays out of the way).
    handles: Option<Vec<BlockHandle>>,
    /// The position a read continuing the current scan asks for next.
    expected: Option<usize>,
    /// The next position not yet handed out.
    next_to_schedule: usize,
    /// Blocks handed out, in order: their offsets and their slots.
    pending: VecDeque<(u64, Arc<Slot>)>,
    /// The last block a slot gave a read, kept for a read of the same block again.
    last: Option<(u64, Vec<u8>, bool)>,
}

impl Readahead {
    /// A readahead of `depth` blocks; `None` for 0.
    pub(crate) fn new(depth: usize) -> Option<Arc<Readahead>> {
        (depth > 0).then(|| {
            Arc::new(Readahead {
                depth,
                active: AtomicBool::new(false),
                state: Mutex::new(State::default()),
                taken: AtomicU64::new(0),
            })
        })
    }

    /// Notes the compression of a block just read: a slow codec turns the readahead on.
    pub(crate) fn saw(&self, compression: Compression) {
        if is_slow(compression) && !self.active.load(Ordering::Relaxed) {
            self.active.store(true, Ordering::Relaxed);
        }
    }

    /// The block at `handle` if it was decoded ahead, waiting for it if a worker is on it;
    /// `None` to read it as usual. Schedules the blocks after it when the reads are
    /// sequential.
    ///
    /// `index` gives the table's index block, from which the data blocks are listed the
    /// first time the readahead is used.
    pub(crate) fn block<R: ReadAt + ?Sized>(
        &self,
        source: &R,
        file_size: u64,
        handle: &BlockHandle,
        (verify, profile): (bool, Profile),
        index: &[u8],
    ) -> Option<Decoded> {
        if !self.active.load(Ordering::Relaxed) {
            return None;
        }
        let mut state = lock(&self.state);
        if state.handles.is_none() {
            state.handles = Some(data_handles(index));
        }
        let handles = state.handles.as_deref().unwrap_or_default();
        let position = handles
            .binary_search_by_key(&handle.offset, |h| h.offset)
            .ok()?;
        if handles.get(position) != Some(handle) {
            return None;
        }
        // The block just read, read again (an iterator re-positioned on it, as a merging
        // iterator does): served from the copy kept if it came from a slot, else decoded
        // again; what is handed out after it is still wanted.
        if state.expected == position.checked_add(1) {
            return match &state.last {
                Some((offset, data, compressed)) if *offset == handle.offset => {
                    Some(Ok((data.clone(), *compressed)))
                }
                _ => None,
            };
        }
        let sequential = state.expected == Some(position);
        state.expected = position.checked_add(1);
        if sequential {
            if let Some((offset, _)) = state.pending.front() {
                if *offset == handle.offset {
                    let (_, slot) = state.pending.pop_front()?;
                    self.schedule(&mut state, source, file_size, verify, profile);
                    drop(state);
                    self.taken.fetch_add(1, Ordering::Relaxed);
                    let decoded = slot.resolve();
                    let kept = match &decoded {
                        Ok((data, compressed)) => Some((handle.offset, data.clone(), *compressed)),
                        Err(_) => None,
                    };
                    lock(&self.state).last = kept;
                    return Some(decoded);
                }
            }
        }
        // A jump (or the start of a scan): what was handed out is for another place.
        for (_, slot) in state.pending.drain(..) {
            slot.cancel();
        }
        if sequential {
            state.next_to_schedule = position.saturating_add(1);
            self.schedule(&mut state, source, file_size, verify, profile);
        }
        None
    }

    /// Hands out blocks from `next_to_schedule` until `depth` are pending.
    fn schedule<R: ReadAt + ?Sized>(
        &self,
        state: &mut State,
        source: &R,
        file_size: u64,
        verify: bool,
        profile: Profile,
    ) {
        while state.pending.len() < self.depth {
            let Some(handle) = state
                .handles
                .as_deref()
                .and_then(|h| h.get(state.next_to_schedule))
                .copied()
            else {
                return;
            };
            // A block that cannot be read is left to the reader, which reports it.
            let Ok(raw) = read_raw(source, file_size, &handle, handle.offset) else {
                return;
            };
            let slot = Arc::new(Slot {
                handle,
                verify,
                profile,
                state: Mutex::new(SlotState::Queued(raw.into_owned())),
                done: Condvar::new(),
            });
            if !submit(Arc::clone(&slot)) {
                return;
            }
            state.pending.push_back((handle.offset, slot));
            state.next_to_schedule = state.next_to_schedule.saturating_add(1);
        }
    }
}

/// Whether blocks of `compression` are worth decompressing ahead on other cores.
pub(crate) fn is_slow(compression: Compression) -> bool {
    !matches!(compression, Compression::None | Compression::Snappy)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing under these locks can be left half-updated by a panic.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The data block handles of the index block `index`, in file order; empty if it does not
/// decode.
fn data_handles(index: &[u8]) -> Vec<BlockHandle> {
    let read = || -> Result<Vec<BlockHandle>> {
        let block = Block::new(index)?;
        let mut it = block.iter(&BytewiseComparator);
        it.seek_to_first();
        let mut handles = Vec::new();
        while it.valid() {
            handles.push(BlockHandle::decode_from(&mut it.value())?);
            it.next();
        }
        Ok(handles)
    };
    let mut handles = read().unwrap_or_default();
    // Binary search needs increasing offsets; a table whose index says otherwise is read
    // without readahead.
    if !handles.windows(2).all(|w| w[0].offset < w[1].offset) {
        handles.clear();
    }
    handles
}

/// One block handed out.
struct Slot {
    handle: BlockHandle,
    verify: bool,
    profile: Profile,
    state: Mutex<SlotState>,
    done: Condvar,
}

enum SlotState {
    /// Stored bytes and trailer, waiting for whoever comes first.
    Queued(Vec<u8>),
    /// Being decoded by a worker.
    Running,
    /// Decoded, waiting for the reader.
    Done(Decoded),
    /// Taken, or no longer wanted.
    Gone,
}

impl Slot {
    /// Decodes the block if nobody has started on it.
    fn run(&self) {
        let raw = {
            let mut state = lock(&self.state);
            match std::mem::replace(&mut *state, SlotState::Running) {
                SlotState::Queued(raw) => raw,
                other => {
                    *state = other;
                    return;
                }
            }
        };
        let decoded = self.decode(raw);
        *lock(&self.state) = SlotState::Done(decoded);
        self.done.notify_all();
    }

    fn decode(&self, raw: Vec<u8>) -> Decoded {
        decode_raw(
            Cow::Owned(raw),
            &self.handle,
            self.verify,
            self.profile,
            Vec::new(),
        )
        .map(|(data, compression)| (data.into_owned(), compression != Compression::None))
    }

    /// The decoded block: decoded here if no worker has started, else waited for.
    fn resolve(&self) -> Decoded {
        let mut state = lock(&self.state);
        loop {
            match std::mem::replace(&mut *state, SlotState::Gone) {
                SlotState::Queued(raw) => {
                    drop(state);
                    return self.decode(raw);
                }
                SlotState::Done(decoded) => return decoded,
                SlotState::Running => {
                    *state = SlotState::Running;
                    state = self.done.wait(state).unwrap_or_else(|e| e.into_inner());
                }
                // Only the reader that popped the slot resolves it, once.
                SlotState::Gone => return Err(Error::corrupt("readahead slot", 0)),
            }
        }
    }

    /// Drops the block if nobody has started on it.
    fn cancel(&self) {
        let mut state = lock(&self.state);
        if matches!(*state, SlotState::Queued(_)) {
            *state = SlotState::Gone;
        }
    }
}

/// Hands `slot` to the process's background workers (one thread fewer than the machine has
/// cores, at least one); `false` if there are none.
fn submit(slot: Arc<Slot>) -> bool {
    leveltable_process::workers::submit(move || slot.run())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BuildOptions, ReadOptions, Table, TableBuilder};

    fn table(compression: Compression, readahead: usize) -> Table<Vec<u8>> {
        let options = BuildOptions::default()
            .compression(compression)
            .block_size(512);
        let mut b = TableBuilder::new(Vec::new(), options).unwrap();
        for i in 0..5000u32 {
            b.add(
                format!("k{i:06}").as_bytes(),
                format!("value {i}").repeat(3).as_bytes(),
            )
            .unwrap();
        }
        b.finish().unwrap();
        let options = ReadOptions::default().readahead_blocks(readahead);
        Table::open(b.into_inner(), options).unwrap()
    }

    #[test]
    fn scans_read_the_same_with_and_without() {
        for compression in Compression::ALL {
            if !compression.is_available() {
                continue;
            }
            let plain: Vec<_> = table(compression, 0).iter_entries();
            let ahead = table(compression, 4);
            assert_eq!(ahead.iter_entries(), plain, "{compression:?}");
            let taken = ahead
                .reading
                .readahead
                .as_ref()
                .unwrap()
                .taken
                .load(Ordering::Relaxed);
            let blocks = ahead.properties().data_blocks;
            if matches!(compression, Compression::None | Compression::Snappy) {
                assert_eq!(taken, 0, "{compression:?}");
            } else {
                // All but the first two blocks of the scan come from the readahead.
                assert!(taken + 2 >= blocks, "{compression:?}: {taken} of {blocks}");
            }
            // Jumps, backwards scans and restarts mixed in.
            assert_eq!(ahead.range("k002000".."k002100").count(), 100);
            let back: Vec<_> = ahead.range::<&str>(..).rev().map(Result::unwrap).collect();
            assert_eq!(back.len(), 5000);
            assert_eq!(ahead.iter_entries(), plain);
            for i in (0..5000).step_by(37) {
                let key = format!("k{i:06}");
                assert!(ahead.get(key.as_bytes()).unwrap().is_some());
            }
        }
    }

    #[test]
    fn blocks_read_again_come_back_the_same() {
        for compression in [Compression::RawDeflate, Compression::Zstd] {
            if !compression.is_available() {
                continue;
            }
            let plain = table(compression, 0);
            let ahead = table(compression, 4);
            let handles = data_handles(&ahead.index.bytes);
            assert!(handles.len() > 10);
            let order = [0, 1, 2, 3, 3, 4, 5, 5, 5, 6, 9, 10, 11, 11, 12];
            for i in order {
                let got = ahead.data_block_with(&handles[i], None, true).unwrap();
                let want = plain.data_block_with(&handles[i], None, true).unwrap();
                assert_eq!(got.data(), want.data(), "{compression:?} block {i}");
            }
            let taken = ahead
                .reading
                .readahead
                .as_ref()
                .unwrap()
                .taken
                .load(Ordering::Relaxed);
            assert!(taken >= 6, "{compression:?}: {taken}");
        }
    }

    /// Blocks decoded ahead have their checksums checked even when the read that handed
    /// them out was of a block already checked: gets of blocks 0, 1, 0, 1 (the second two
    /// of blocks checked before), then of block 2, whose stored checksum is wrong.
    #[test]
    fn blocks_decoded_ahead_are_checked() {
        for compression in [Compression::RawDeflate, Compression::Zstd] {
            if !compression.is_available() {
                continue;
            }
            let intact = table(compression, 4).into_source();
            let plain = Table::open(&intact[..], ReadOptions::default()).unwrap();
            let handles = data_handles(&plain.index.bytes);
            let first_key = |i: usize| {
                let mut it = plain.iter();
                it.seek_to_first();
                while it.block_offset() != Some(handles[i].offset) {
                    it.next();
                }
                it.key().to_vec()
            };
            let mut damaged = intact.clone();
            let crc_at = (handles[2].offset + handles[2].size + 1) as usize;
            damaged[crc_at] ^= 1;
            let options = ReadOptions::default().readahead_blocks(4);
            let t = Table::open(damaged, options).unwrap();
            let keys: Vec<Vec<u8>> = (0..3).map(first_key).collect();
            for i in [0, 1, 0, 1] {
                assert!(
                    t.get(&keys[i]).unwrap().is_some(),
                    "{compression:?} block {i}"
                );
            }
            let got = t.get(&keys[2]);
            assert!(
                matches!(got, Err(Error::ChecksumMismatch { .. })),
                "{compression:?}: {got:?}"
            );
        }
    }

    trait Entries {
        fn iter_entries(&self) -> Vec<(Vec<u8>, Vec<u8>)>;
    }

    impl Entries for Table<Vec<u8>> {
        fn iter_entries(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
            self.entries().map(Result::unwrap).collect()
        }
    }
}
