//! A table on object storage for tokio users: open in one request, gets in at most one,
//! batched gets and scans in coalesced requests. The table crate's own reader decodes every
//! block; this file only decides which bytes to fetch.

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures::stream::{self, Stream, StreamExt, TryStreamExt};
use leveltable_table::block_plan::stored_len;
use leveltable_table::format::BlockHandle;
use leveltable_table::{Comparator, Error as TableError, OpenPlan, ReadOptions, Table};

use crate::remote::RemoteObject;
use crate::tail::TailSource;
use crate::{Error, Location, ObjectReadOptions, Result};

/// A key and its value.
pub type Entry = (Vec<u8>, Vec<u8>);

/// An open table in an object store, read through async requests that never block the
/// executor.
///
/// Costs, in requests: [`open`](Self::open) 1 when the footer, metaindex, index and filter
/// lie in the last [`tail_len`](ObjectReadOptions::tail_len) bytes, else 2; [`get`](Self::get)
/// at most 1, and none when the filter rules the key out, the key is past the last block, or
/// the block is cached or in the tail; [`get_many`](Self::get_many) one per run of
/// neighbouring blocks; [`range`](Self::range) one per
/// [`max_request`](ObjectReadOptions::max_request) bytes of blocks, with
/// [`readahead`](ObjectReadOptions::readahead) requests in flight.
///
/// The object is pinned at open: a read after it was replaced fails with
/// [`Error::Replaced`].
pub struct AsyncTable {
    object: RemoteObject,
    table: Arc<Table<Arc<TailSource>>>,
    tail: Arc<TailSource>,
    options: ObjectReadOptions,
}

impl std::fmt::Debug for AsyncTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncTable")
            .field("object", &self.object.location.name)
            .field("size", &self.object.size)
            .finish_non_exhaustive()
    }
}

/// Pins the table object at `location` and feeds its open plan: the last `tail_len` bytes
/// come with the first request; the footer, index, metaindex and filter are taken from the
/// bytes held, and what lies before them is fetched with the plan's hint, so a table opens
/// in two requests unless its filter block is larger than the hint guessed. Returns the
/// object, the plan ready to [`finish`](OpenPlan::finish), and the bytes held (the object's
/// last bytes, the metadata among them). Every table on object storage opens here: an
/// [`AsyncTable`], and each table of a database under a prefix.
///
/// # Errors
/// [`Error::NotFound`], [`Error::Request`], or [`Error::Table`] for an object that is not a
/// well-formed table.
pub(crate) async fn open_plan(
    location: &Location,
    tail_len: u64,
    read: ReadOptions,
) -> Result<(RemoteObject, OpenPlan, Bytes)> {
    let name = location.name.as_str();
    let (object, mut held) = RemoteObject::open_tail(location, tail_len).await?;
    let size = object.size;
    let table_err = |e| Error::table(name, e);
    let mut plan = OpenPlan::new(size, read).map_err(table_err)?;
    while let Some(need) = plan.need() {
        let start = size.saturating_sub(held.len() as u64);
        if need.start < start {
            let lo = plan.hint().map_or(need.start, |h| h.start.min(need.start));
            let more = object.read(lo..start).await?;
            let mut joined = BytesMut::with_capacity(more.len().saturating_add(held.len()));
            joined.extend_from_slice(&more);
            joined.extend_from_slice(&held);
            held = joined.freeze();
        }
        let start = size.saturating_sub(held.len() as u64);
        plan.give(start, &held).map_err(table_err)?;
    }
    Ok((object, plan, held))
}

impl AsyncTable {
    /// Opens the table at `location`.
    ///
    /// # Errors
    /// [`Error::NotFound`], [`Error::Request`], or [`Error::Table`] for an object that is
    /// not a well-formed table.
    pub async fn open(location: &Location, options: ObjectReadOptions) -> Result<AsyncTable> {
        let (object, plan, held) =
            open_plan(location, options.tail_len, options.read.clone()).await?;
        let tail = Arc::new(TailSource::new(held, object.size));
        let table = plan
            .finish(Arc::clone(&tail))
            .map_err(|e| Error::table(&location.name, e))?;
        Ok(AsyncTable {
            object,
            table: Arc::new(table),
            tail,
            options,
        })
    }

    /// The table reader, for its properties and counters.
    pub fn table(&self) -> &Table<Arc<TailSource>> {
        &self.table
    }

    /// The pinned object.
    pub fn object(&self) -> &RemoteObject {
        &self.object
    }

    /// The location's request counters.
    pub fn stats(&self) -> &crate::Stats {
        &self.object.location.stats
    }

    fn err(&self, e: TableError) -> Error {
        Error::table(&self.object.location.name, e)
    }

    /// The stored bytes of the block `h` if they need no request: in the tail read at open.
    fn held(&self, h: &BlockHandle) -> Option<Bytes> {
        self.tail.slice(h.offset, stored_len(h)? as u64)
    }

    /// The byte range block `h` occupies, trailer included.
    fn span(&self, h: &BlockHandle) -> Result<std::ops::Range<u64>> {
        let end = h
            .end_with_trailer()
            .filter(|&e| e <= self.object.size)
            .ok_or_else(|| {
                self.err(TableError::Corruption {
                    what: "block handle".into(),
                    offset: self.table.properties().footer.index.offset,
                })
            })?;
        Ok(h.offset..end)
    }

    /// The value of `key`, if the table holds it. At most one request.
    ///
    /// # Errors
    /// [`Error::Replaced`], [`Error::Request`], or [`Error::Table`] for bad block bytes.
    pub async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let Some(h) = self.table.block_to_read(key).map_err(|e| self.err(e))? else {
            return Ok(None);
        };
        if let Some(bytes) = self.held(&h) {
            return self
                .table
                .get_from_block(key, &h, &bytes)
                .map_err(|e| self.err(e));
        }
        if let Some(found) = self.table.get_from_cache(key, &h) {
            return found.map_err(|e| self.err(e));
        }
        let bytes = self.object.read(self.span(&h)?).await?;
        self.table
            .get_from_block(key, &h, &bytes)
            .map_err(|e| self.err(e))
    }

    /// The values of `keys`, in their order. Blocks are fetched once each, neighbouring
    /// blocks in one request, [`concurrency`](ObjectReadOptions::concurrency) requests at
    /// a time.
    ///
    /// # Errors
    /// As [`get`](Self::get).
    pub async fn get_many<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<Vec<u8>>>> {
        let plans: Vec<Option<BlockHandle>> = keys
            .iter()
            .map(|k| self.table.block_to_read(k.as_ref()))
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| self.err(e))?;
        let mut wanted: Vec<BlockHandle> = plans
            .iter()
            .flatten()
            .filter(|h| self.held(h).is_none() && !self.table.block_is_cached(h))
            .copied()
            .collect();
        wanted.sort_by_key(|h| h.offset);
        wanted.dedup_by_key(|h| h.offset);
        let mut runs: Vec<std::ops::Range<u64>> = Vec::new();
        for h in &wanted {
            let span = self.span(h)?;
            match runs.last_mut() {
                Some(r)
                    if span.start <= r.end.saturating_add(self.options.coalesce_gap)
                        && span.end - r.start <= self.options.max_request =>
                {
                    r.end = r.end.max(span.end);
                }
                _ => runs.push(span),
            }
        }
        let fetched: Vec<(u64, Bytes)> = stream::iter(runs)
            .map(|r| async move { self.object.read(r.clone()).await.map(|b| (r.start, b)) })
            .buffer_unordered(self.options.concurrency.max(1))
            .try_collect()
            .await?;
        let mut fetched = fetched;
        fetched.sort_by_key(|(start, _)| *start);
        let mut out = Vec::with_capacity(keys.len());
        for (key, plan) in keys.iter().zip(&plans) {
            let key = key.as_ref();
            let Some(h) = plan else {
                out.push(None);
                continue;
            };
            let bytes = match self.held(h) {
                Some(b) => b,
                None => {
                    let i = fetched.partition_point(|(s, _)| *s <= h.offset);
                    let from_run = i.checked_sub(1).and_then(|i| {
                        let (s, b) = &fetched[i];
                        let from = usize::try_from(h.offset - s).ok()?;
                        let to = from.checked_add(stored_len(h)?)?;
                        (to <= b.len()).then(|| b.slice(from..to))
                    });
                    match from_run {
                        Some(b) => b,
                        // Cached when planned: the cache answers, or (evicted since) one
                        // request does.
                        None => match self.table.get_from_cache(key, h) {
                            Some(found) => {
                                out.push(found.map_err(|e| self.err(e))?);
                                continue;
                            }
                            None => self.object.read(self.span(h)?).await?,
                        },
                    }
                }
            };
            out.push(
                self.table
                    .get_from_block(key, h, &bytes)
                    .map_err(|e| self.err(e))?,
            );
        }
        Ok(out)
    }

    /// The entries with keys in `(start, end)`, in order, as a stream. Blocks are fetched
    /// in runs of up to [`max_request`](ObjectReadOptions::max_request) bytes (the first run
    /// smaller), [`readahead`](ObjectReadOptions::readahead) runs in flight.
    pub fn range(
        &self,
        start: Bound<Vec<u8>>,
        end: Bound<Vec<u8>>,
    ) -> impl Stream<Item = Result<Entry>> + Send + '_ {
        self.range_batches(start, end).flat_map(|r| match r {
            Ok(v) => stream::iter(v.into_iter().map(Ok)).left_stream(),
            Err(e) => stream::once(async move { Err(e) }).right_stream(),
        })
    }

    /// [`range`](Self::range) in batches: the entries of each request's blocks together,
    /// for consumers that take them a request at a time.
    pub fn range_batches(
        &self,
        start: Bound<Vec<u8>>,
        end: Bound<Vec<u8>>,
    ) -> impl Stream<Item = Result<Vec<Entry>>> + Send + '_ {
        let planned = self
            .table
            .blocks_in_range(as_ref(&start), as_ref(&end))
            .map_err(|e| self.err(e));
        let runs = planned.and_then(|blocks| self.scan_runs(blocks));
        let (runs, first_error) = match runs {
            Ok(r) => (r, None),
            Err(e) => (Vec::new(), Some(e)),
        };
        let bounds = Arc::new((start, end));
        let fetched = stream::iter(runs)
            .map(move |run| {
                let bounds = Arc::clone(&bounds);
                async move { self.decode_run(run, &bounds).await }
            })
            .buffered(self.options.readahead.max(1));
        stream::iter(first_error.map(Err)).chain(fetched)
    }

    /// Groups the blocks of a scan into runs of contiguous bytes.
    fn scan_runs(&self, blocks: Vec<BlockHandle>) -> Result<Vec<Run>> {
        let mut runs: Vec<Run> = Vec::new();
        for h in blocks {
            let span = self.span(&h)?;
            let limit = if runs.len() <= 1 {
                self.options.scan_first_request
            } else {
                self.options.max_request
            };
            match runs.last_mut() {
                Some(r) if span.start == r.range.end && span.end - r.range.start <= limit => {
                    r.range.end = span.end;
                    r.blocks.push(h);
                }
                _ => runs.push(Run {
                    range: span,
                    blocks: vec![h],
                }),
            }
        }
        Ok(runs)
    }

    /// The stored bytes of one run: from the tail if held, else one request.
    async fn fetch_run(&self, run: &Run) -> Result<Bytes> {
        match self
            .tail
            .slice(run.range.start, run.range.end - run.range.start)
        {
            Some(b) => Ok(b),
            None => self.object.read(run.range.clone()).await,
        }
    }

    /// Fetches one run and decodes the entries of its blocks that lie in `bounds`.
    async fn decode_run(&self, run: Run, bounds: &Bounds) -> Result<Vec<Entry>> {
        let bytes = self.fetch_run(&run).await?;
        let mut out = Vec::new();
        self.visit_run(&run, &bytes, bounds, &mut |k, v| {
            out.push((k.to_vec(), v.to_vec()));
            true
        })?;
        Ok(out)
    }

    /// Calls `f` with each entry in `bounds` of the run's blocks, given the run's bytes,
    /// until `f` returns `false`. Returns whether the scan goes on (the end bound was not
    /// reached and `f` did not stop it).
    fn visit_run(
        &self,
        run: &Run,
        bytes: &[u8],
        bounds: &Bounds,
        f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<bool> {
        let cmp = self.table.comparator();
        for h in &run.blocks {
            let from = (h.offset - run.range.start) as usize;
            let stored = stored_len(h)
                .and_then(|n| bytes.get(from..from.checked_add(n)?))
                .unwrap_or(&[]);
            let mut go_on = true;
            self.table
                .entries_of_block(h, stored, |k, v| {
                    let after_start = match &bounds.0 {
                        Bound::Included(s) => cmp.compare(k, s) != Ordering::Less,
                        Bound::Excluded(s) => cmp.compare(k, s) == Ordering::Greater,
                        Bound::Unbounded => true,
                    };
                    let before_end = match &bounds.1 {
                        Bound::Included(e) => cmp.compare(k, e) != Ordering::Greater,
                        Bound::Excluded(e) => cmp.compare(k, e) == Ordering::Less,
                        Bound::Unbounded => true,
                    };
                    go_on = before_end && (!after_start || f(k, v));
                    go_on
                })
                .map_err(|e| self.err(e))?;
            if !go_on {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Calls `f` with each entry in `(start, end)`, in order, borrowed (nothing is copied
    /// out), until `f` returns `false`; returns the entries visited. The same requests as
    /// [`range`](Self::range): runs fetched [`readahead`](ObjectReadOptions::readahead)
    /// ahead while `f` works on the current one.
    ///
    /// # Errors
    /// As [`get`](Self::get).
    pub async fn scan(
        &self,
        start: Bound<Vec<u8>>,
        end: Bound<Vec<u8>>,
        mut f: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<u64> {
        let runs = self
            .table
            .blocks_in_range(as_ref(&start), as_ref(&end))
            .map_err(|e| self.err(e))
            .and_then(|blocks| self.scan_runs(blocks))?;
        let bounds = (start, end);
        // Fetched and decoded (checksums, decompression) ahead on the runtime's blocking
        // threads, so decoding overlaps the transfers and the caller's work.
        let mut fetched = stream::iter(runs)
            .map(|run| async move {
                let bytes = self.fetch_run(&run).await?;
                let table = Arc::clone(&self.table);
                let name = self.object.location.name.clone();
                tokio::task::spawn_blocking(move || {
                    run.blocks
                        .iter()
                        .map(|h| {
                            let from = (h.offset - run.range.start) as usize;
                            let stored = stored_len(h)
                                .and_then(|n| bytes.get(from..from.checked_add(n)?))
                                .unwrap_or(&[]);
                            table.decode_block(h, stored)
                        })
                        .collect::<std::result::Result<Vec<_>, _>>()
                        .map_err(|e| Error::table(&name, e))
                })
                .await
                .map_err(|e| Error::Runtime(e.to_string()))?
            })
            .buffered(self.options.readahead.max(1));
        let cmp = self.table.comparator();
        let mut n = 0u64;
        while let Some(next) = fetched.next().await {
            for block in next? {
                let mut go_on = true;
                self.table
                    .entries_of_decoded(&block, |k, v| {
                        go_on = in_end_bound(&**cmp, k, &bounds.1)
                            && (!in_start_bound(&**cmp, k, &bounds.0) || {
                                n += 1;
                                f(k, v)
                            });
                        go_on
                    })
                    .map_err(|e| self.err(e))?;
                if !go_on {
                    return Ok(n);
                }
            }
        }
        Ok(n)
    }
}

/// A scan's key bounds.
type Bounds = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// Whether `k` is at or past the start bound.
fn in_start_bound(cmp: &dyn Comparator, k: &[u8], b: &Bound<Vec<u8>>) -> bool {
    match b {
        Bound::Included(s) => cmp.compare(k, s) != Ordering::Less,
        Bound::Excluded(s) => cmp.compare(k, s) == Ordering::Greater,
        Bound::Unbounded => true,
    }
}

/// Whether `k` is before the end bound.
fn in_end_bound(cmp: &dyn Comparator, k: &[u8], b: &Bound<Vec<u8>>) -> bool {
    match b {
        Bound::Included(e) => cmp.compare(k, e) != Ordering::Greater,
        Bound::Excluded(e) => cmp.compare(k, e) == Ordering::Less,
        Bound::Unbounded => true,
    }
}

/// Contiguous blocks fetched in one request.
struct Run {
    range: std::ops::Range<u64>,
    blocks: Vec<BlockHandle>,
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}
