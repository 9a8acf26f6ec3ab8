//! The blocking face of [`AsyncTable`], for code without an async runtime.

use std::ops::Bound;
use std::pin::Pin;
use std::sync::Arc;

use futures::{Stream, StreamExt};

use crate::async_table::Entry;
use crate::runtime::block_on;
use crate::tail::TailSource;
use crate::{AsyncTable, Location, ObjectReadOptions, Result};

/// A table on object storage read from ordinary threads: each call runs the
/// [`AsyncTable`] operation on the crate's runtime and waits. Same requests, same answers.
/// Do not call it from async code (it says so with [`Error::Runtime`](crate::Error::Runtime)).
#[derive(Debug)]
pub struct BlockingTable {
    inner: AsyncTable,
}

impl BlockingTable {
    /// Opens the table at `location` (see [`AsyncTable::open`]).
    ///
    /// # Errors
    /// As [`AsyncTable::open`].
    pub fn open(location: &Location, options: ObjectReadOptions) -> Result<BlockingTable> {
        let inner = block_on(AsyncTable::open(location, options))??;
        Ok(BlockingTable { inner })
    }

    /// The async table inside.
    pub fn as_async(&self) -> &AsyncTable {
        &self.inner
    }

    /// The table reader, for its properties and counters.
    pub fn table(&self) -> &leveltable_table::Table<Arc<TailSource>> {
        self.inner.table()
    }

    /// See [`AsyncTable::get`].
    ///
    /// # Errors
    /// As [`AsyncTable::get`].
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        block_on(self.inner.get(key))?
    }

    /// See [`AsyncTable::get_many`].
    ///
    /// # Errors
    /// As [`AsyncTable::get_many`].
    pub fn get_many<K: AsRef<[u8]> + Sync>(&self, keys: &[K]) -> Result<Vec<Option<Vec<u8>>>> {
        block_on(self.inner.get_many(keys))?
    }

    /// See [`AsyncTable::scan`]: each entry in `(start, end)` lent to `f`, nothing copied.
    ///
    /// # Errors
    /// As [`AsyncTable::scan`].
    pub fn scan(
        &self,
        start: Bound<Vec<u8>>,
        end: Bound<Vec<u8>>,
        f: impl FnMut(&[u8], &[u8]) -> bool + Send,
    ) -> Result<u64> {
        block_on(self.inner.scan(start, end, f))?
    }

    /// The entries in `(start, end)` as an iterator (see [`AsyncTable::range`]); requests
    /// run ahead of it on the runtime.
    pub fn range(&self, start: Bound<Vec<u8>>, end: Bound<Vec<u8>>) -> BlockingRange<'_> {
        BlockingRange {
            stream: Box::pin(self.inner.range_batches(start, end)),
            batch: Vec::new().into_iter(),
            done: false,
        }
    }
}

/// An iterator over a [`BlockingTable::range`].
pub struct BlockingRange<'t> {
    stream: Pin<Box<dyn Stream<Item = Result<Vec<Entry>>> + Send + 't>>,
    /// The entries of the last request, handed out one by one.
    batch: std::vec::IntoIter<Entry>,
    done: bool,
}

impl std::fmt::Debug for BlockingRange<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockingRange").finish_non_exhaustive()
    }
}

impl Iterator for BlockingRange<'_> {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Result<Entry>> {
        loop {
            if let Some(entry) = self.batch.next() {
                return Some(Ok(entry));
            }
            if self.done {
                return None;
            }
            // One wait per request's worth of entries, not per entry.
            match block_on(self.stream.next()) {
                Ok(Some(Ok(batch))) => self.batch = batch.into_iter(),
                Ok(Some(Err(e))) | Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
                Ok(None) => self.done = true,
            }
        }
    }
}
