//! Reads a table: open, point lookups, verification, statistics.

use std::borrow::Cow;
use std::cell::Cell;
use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

use crate::block::{Block, Cursor, Layout, restart_key};
use crate::cache::{Cache, CachedBlock};
use crate::comparator::{BytewiseComparator, Comparator, is_bytewise};
use crate::fence::{Fence, pack_handle};
use crate::file::ReadAt;
use crate::filter::{FILTER_META_PREFIX, LoadedFilter};
use crate::format::{
    BLOCK_TRAILER_LEN, BlockHandle, BlockTrailer, Compression, FOOTER_LEN, Footer,
};
use crate::iter::{Range, TableIter};
use crate::options::ReadOptions;
use crate::{Error, Result};
use leveltable_prefetch as prefetch;

/// Snappy's output is at most 64 bytes per 3-byte copy element, so a valid stream never
/// expands by more than 64/3 < 22. A length claim beyond that is corrupt; checking it keeps a
/// few hostile bytes from making us allocate gigabytes.
const MAX_SNAPPY_EXPANSION: usize = 22;

/// Facts about an open table, gathered by [`Table::open`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableProperties {
    /// Size of the file.
    pub file_size: u64,
    /// The footer: where the metaindex and index blocks are.
    pub footer: Footer,
    /// Number of data blocks (entries of the index block).
    pub data_blocks: u64,
    /// Stored bytes of all data blocks, trailers included.
    pub data_size: u64,
    /// Stored size of the index block.
    pub index_size: u64,
    /// Stored size of the metaindex block.
    pub metaindex_size: u64,
    /// Name of the policy whose filter [`Table::get`] uses, if any.
    pub filter_policy: Option<String>,
    /// Stored size of that filter block (0 without one).
    pub filter_size: u64,
    /// Every `filter.<name>` entry of the metaindex, in metaindex order, whether or not the
    /// reader knows the policy.
    pub filters: Vec<FilterInfo>,
}

/// One filter block listed in a table's metaindex.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FilterInfo {
    /// The policy name (the metaindex key without `filter.`).
    pub policy_name: String,
    /// Where the filter block is.
    pub handle: BlockHandle,
}

/// What [`Table::verify`] checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct VerifySummary {
    /// Entries in all data blocks.
    pub entries: u64,
    /// Data blocks read.
    pub data_blocks: u64,
    /// Filter blocks read.
    pub filter_blocks: u64,
    /// Bytes read (all blocks with their trailers, and the footer).
    pub bytes_read: u64,
}

/// A snapshot of a table's read counters. Counts accumulate from [`Table::open`] (or the last
/// [`Table::reset_counters`]) over all threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Counters {
    /// Data blocks read from the source (cache misses and uncached reads).
    pub data_blocks_read: u64,
    /// Bytes of data blocks read from the source, trailers included.
    pub data_bytes_read: u64,
    /// Data blocks found in the block cache.
    pub cache_hits: u64,
    /// Times a get consulted the filter.
    pub filter_checks: u64,
    /// Times the filter said "certainly absent", sparing a data block read.
    pub filter_negatives: u64,
}

#[derive(Default)]
struct CounterCells {
    data_blocks_read: AtomicU64,
    data_bytes_read: AtomicU64,
    cache_hits: AtomicU64,
    filter_checks: AtomicU64,
    filter_negatives: AtomicU64,
}

#[inline]
fn bump(cell: &AtomicU64, by: u64) {
    cell.fetch_add(by, AtomicOrdering::Relaxed);
}

/// A block's contents as a reader holds them.
pub(crate) enum BlockRef<'t> {
    /// Uncompressed bytes lent by an in-memory source.
    Borrowed { data: &'t [u8], layout: Layout },
    /// Bytes read or decompressed for this use only.
    Owned {
        data: Vec<u8>,
        layout: Layout,
        compressed: bool,
    },
    /// A block shared with the cache.
    Cached(Arc<CachedBlock>),
}

impl BlockRef<'_> {
    #[inline]
    pub(crate) fn data(&self) -> &[u8] {
        match self {
            BlockRef::Borrowed { data, .. } => data,
            BlockRef::Owned { data, .. } => data,
            BlockRef::Cached(b) => &b.data,
        }
    }

    #[inline]
    pub(crate) fn layout(&self) -> Layout {
        match self {
            BlockRef::Borrowed { layout, .. } | BlockRef::Owned { layout, .. } => *layout,
            BlockRef::Cached(b) => b.layout,
        }
    }

    /// Returns an owned block's buffer to the thread for the next uncached read.
    fn give_back(self) {
        if let BlockRef::Owned { data, .. } = self {
            if data.capacity() <= MAX_KEPT_BLOCK_BUF {
                BLOCK_BUF.set(data);
            }
        }
    }

    fn compressed(&self) -> bool {
        match self {
            BlockRef::Borrowed { .. } => false,
            BlockRef::Owned { compressed, .. } => *compressed,
            BlockRef::Cached(b) => b.compressed,
        }
    }

    /// Moves an error about a position inside this block to the file (see
    /// [`Error::Corruption`]).
    pub(crate) fn locate(&self, e: Error, handle: &BlockHandle) -> Error {
        locate(e, handle.offset, self.compressed())
    }
}

/// Positions inside an uncompressed block map to file offsets; inside a compressed block,
/// the block's own offset is the best there is.
fn locate(e: Error, block_offset: u64, compressed: bool) -> Error {
    if compressed {
        e.at(block_offset)
    } else {
        e.rebase(block_offset)
    }
}

thread_local! {
    /// Key buffers for gets, taken and put back so a get allocates nothing once warm (and a
    /// get nested in a get's callback just starts with empty buffers).
    static INDEX_KEY: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
    static DATA_KEY: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
    /// The decompression buffer lent to blocks that are not cached and taken back after a
    /// get, so a get of a compressed block neither allocates nor zero-fills a fresh buffer.
    static BLOCK_BUF: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// A buffer larger than this is not kept for reuse, so one huge block does not pin its
/// memory in the thread for good.
const MAX_KEPT_BLOCK_BUF: usize = 1 << 20;

/// An open table. Cheap to open (footer, index, metaindex and one filter block are read);
/// everything else is read on demand.
///
/// `Table` is `Send + Sync`: share it (`&Table` or `Arc<Table>`) between threads for
/// concurrent gets and scans.
///
/// ```
/// use leveltable_table::{BuildOptions, ReadOptions, Table, TableBuilder};
/// let mut builder = TableBuilder::new(Vec::new(), BuildOptions::default())?;
/// for (k, v) in [("a", "1"), ("b", "2"), ("c", "3")] {
///     builder.add(k.as_bytes(), v.as_bytes())?;
/// }
/// builder.finish()?;
/// let table = Table::open(builder.into_inner(), ReadOptions::default())?;
/// assert_eq!(table.get(b"b")?, Some(b"2".to_vec()));
/// assert_eq!(table.get(b"bb")?, None);
/// let keys: Vec<Vec<u8>> = table.range("b"..).map(|e| e.map(|(k, _)| k)).collect::<Result<_, _>>()?;
/// assert_eq!(keys, [b"b".to_vec(), b"c".to_vec()]);
/// # Ok::<(), leveltable_table::Error>(())
/// ```
pub struct Table<R> {
    source: R,
    file_size: u64,
    comparator: Arc<dyn Comparator>,
    bytewise: bool,
    verify_checksums: bool,
    cache: Option<Arc<Cache>>,
    fill_cache: bool,
    cache_id: u64,
    index: Vec<u8>,
    index_layout: Layout,
    index_compressed: bool,
    /// Search array over the index's restart keys (bytewise tables only).
    fence: Option<Fence>,
    /// Whether every index entry is a restart point (LevelDB writes index blocks so).
    index_all_restarts: bool,
    filter: Option<LoadedFilter>,
    properties: TableProperties,
    counters: CounterCells,
}

const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Table<std::fs::File>>();
    assert_send_sync::<Table<Vec<u8>>>();
    assert_send_sync::<Table<Arc<dyn ReadAt>>>();
};

impl<R> fmt::Debug for Table<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Table")
            .field("properties", &self.properties)
            .field("comparator", &self.comparator.name())
            .field("counters", &self.counters())
            .finish_non_exhaustive()
    }
}

/// Reads a block's stored bytes and trailer, checks the crc if asked, and decompresses.
/// Returns the contents and whether they were stored compressed.
///
/// `handle_at` is where the handle itself was found, for the error when it points outside
/// the file.
fn read_block_contents<'s, R: ReadAt + ?Sized>(
    source: &'s R,
    file_size: u64,
    handle: &BlockHandle,
    handle_at: u64,
    verify: bool,
) -> Result<(Cow<'s, [u8]>, bool)> {
    read_block_contents_into(source, file_size, handle, handle_at, verify, Vec::new())
}

/// [`read_block_contents`], decompressing into `out` (whose bytes are overwritten). `out`
/// keeps its length from an earlier block, so sizing it zero-fills only what it grows by.
fn read_block_contents_into<'s, R: ReadAt + ?Sized>(
    source: &'s R,
    file_size: u64,
    handle: &BlockHandle,
    handle_at: u64,
    verify: bool,
    mut out: Vec<u8>,
) -> Result<(Cow<'s, [u8]>, bool)> {
    // Validate before allocating or reading: the block and its trailer lie in the file.
    let end = handle.end_with_trailer();
    let (Some(_), Ok(n)) = (
        end.filter(|&e| e <= file_size),
        usize::try_from(handle.size),
    ) else {
        return Err(Error::corrupt("block handle", handle_at));
    };
    let total = n + BLOCK_TRAILER_LEN;
    let raw: Cow<'s, [u8]> = match source.as_bytes() {
        Some(all) => {
            let range = usize::try_from(handle.offset)
                .ok()
                .and_then(|start| all.get(start..start.checked_add(total)?));
            match range {
                Some(bytes) => Cow::Borrowed(bytes),
                None => return Err(Error::corrupt("block handle", handle_at)),
            }
        }
        None => {
            let mut buf = vec![0; total];
            source.read_exact_at(&mut buf, handle.offset)?;
            Cow::Owned(buf)
        }
    };
    let mut trailer_bytes = &raw[n..];
    let trailer = BlockTrailer::decode_from(&mut trailer_bytes)?;
    if verify || trailer.block_type == Compression::Snappy.type_byte() {
        // The snappy decoder reads its input in data-dependent steps, and the checksum pass
        // stalls at each page boundary, where the hardware prefetcher stops; hinted up front,
        // the misses on a cold block overlap.
        prefetch::lines(&raw[..n]);
    }
    if verify {
        trailer
            .verify(&raw[..n])
            .map_err(|e| e.rebase(handle.offset))?;
    }
    match Compression::from_type_byte(trailer.block_type) {
        Some(Compression::None) => Ok((
            match raw {
                Cow::Borrowed(b) => Cow::Borrowed(&b[..n]),
                Cow::Owned(mut v) => {
                    v.truncate(n);
                    Cow::Owned(v)
                }
            },
            false,
        )),
        Some(Compression::Snappy) => {
            let input = &raw[..n];
            let bad = || Error::corrupt("compressed block contents", handle.offset);
            let len = snap::raw::decompress_len(input).map_err(|_| bad())?;
            if len > input.len().saturating_mul(MAX_SNAPPY_EXPANSION) {
                return Err(bad());
            }
            out.resize(len, 0);
            let written = snap::raw::Decoder::new()
                .decompress(input, &mut out)
                .map_err(|_| bad())?;
            if written != len {
                return Err(bad());
            }
            Ok((Cow::Owned(out), true))
        }
        None => Err(Error::corrupt("block type", handle.offset + n as u64)),
    }
}

impl<R: ReadAt> Table<R> {
    /// Opens the table in `source`: reads the footer, the index and metaindex blocks, and
    /// the filter block of the first policy in the options (extra policies first) that the
    /// table has a filter for.
    ///
    /// # Errors
    /// [`Error::TooShort`] or [`Error::NotATable`] for a file that is not a table;
    /// [`Error::Corruption`] or [`Error::ChecksumMismatch`] for malformed footer, index,
    /// metaindex or filter blocks; [`Error::Io`] if reading fails.
    pub fn open(source: R, options: ReadOptions) -> Result<Table<R>> {
        let file_size = source.size()?;
        let Some(footer_at) = file_size.checked_sub(FOOTER_LEN as u64) else {
            return Err(Error::TooShort { size: file_size });
        };
        let mut footer_bytes = [0u8; FOOTER_LEN];
        source.read_exact_at(&mut footer_bytes, footer_at)?;
        let footer =
            Footer::decode_from(&mut &footer_bytes[..]).map_err(|e| e.rebase(footer_at))?;
        let verify = options.verify_checksums;

        let (index, index_compressed) =
            read_block_contents(&source, file_size, &footer.index, footer_at, verify)?;
        let index = index.into_owned();
        let index_layout =
            Layout::parse(&index).map_err(|e| locate(e, footer.index.offset, index_compressed))?;

        let (metaindex, meta_compressed) =
            read_block_contents(&source, file_size, &footer.metaindex, footer_at, verify)?;
        let filters = read_filter_entries(&metaindex, footer.metaindex.offset, meta_compressed)?;

        let candidates = options
            .extra_filter_policies
            .iter()
            .chain(options.filter_policy.as_ref());
        let mut filter = None;
        let mut filter_size = 0;
        'find: for policy in candidates {
            for info in &filters {
                if info.policy_name == policy.name() {
                    let meta_at = footer.metaindex.offset;
                    let (data, _) =
                        read_block_contents(&source, file_size, &info.handle, meta_at, verify)?;
                    filter_size = info.handle.size;
                    filter = Some(LoadedFilter {
                        policy: Arc::clone(policy),
                        data: data.into_owned(),
                    });
                    break 'find;
                }
            }
        }

        let scan = scan_index(
            &index,
            index_layout,
            &*options.comparator,
            footer.index.offset,
            index_compressed,
        )?;
        let (data_blocks, data_size) = (scan.blocks, scan.size);
        let bytewise = is_bytewise(&*options.comparator);
        let fence = if bytewise {
            Fence::build(&index, index_layout, scan.handles_at_restarts)
        } else {
            None
        };
        let cache_id = options.block_cache.as_ref().map_or(0, |c| c.new_id());
        let properties = TableProperties {
            file_size,
            footer,
            data_blocks,
            data_size,
            index_size: footer.index.size,
            metaindex_size: footer.metaindex.size,
            filter_policy: filter.as_ref().map(|f| f.policy.name().to_owned()),
            filter_size,
            filters,
        };
        Ok(Table {
            source,
            file_size,
            bytewise,
            comparator: options.comparator,
            verify_checksums: verify,
            cache: options.block_cache,
            fill_cache: options.fill_cache,
            cache_id,
            index,
            index_layout,
            index_compressed,
            fence,
            index_all_restarts: data_blocks == index_layout.num_restarts as u64,
            filter,
            properties,
            counters: CounterCells::default(),
        })
    }

    /// The value stored under `key`, if any.
    ///
    /// Looks `key` up in the index, asks the filter (if one was loaded) and reads the one
    /// data block that may hold it only when the filter allows.
    ///
    /// # Errors
    /// [`Error::Corruption`], [`Error::ChecksumMismatch`] or [`Error::Io`] from the blocks
    /// read.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_with(key, <[u8]>::to_vec)
    }

    /// Like [`get`](Self::get), but lends the value to `f` instead of copying it.
    ///
    /// # Errors
    /// As [`get`](Self::get).
    pub fn get_with<T>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> T) -> Result<Option<T>> {
        if self.bytewise {
            self.get_with_cmp(&BytewiseComparator, key, f)
        } else {
            self.get_with_cmp(&*self.comparator, key, f)
        }
    }

    fn get_with_cmp<C: Comparator + ?Sized, T>(
        &self,
        cmp: &C,
        key: &[u8],
        f: impl FnOnce(&[u8]) -> T,
    ) -> Result<Option<T>> {
        let found = self.internal_get_cmp(cmp, key, |k, v| {
            (cmp.compare(k, key) == Ordering::Equal).then(|| f(v))
        })?;
        Ok(found.flatten())
    }

    /// LevelDB's `Table::InternalGet`: finds the data block that would hold `key`, asks the
    /// filter about `key`, and if it may be there calls `f` with the first entry of that
    /// block at or after `key` (which need not equal `key`). `None` if the filter rules
    /// `key` out or the block has no such entry.
    ///
    /// This is the primitive for lookups in tables whose keys carry more than the lookup key,
    /// such as LevelDB's internal keys.
    ///
    /// # Errors
    /// As [`get`](Self::get).
    pub fn internal_get<T>(
        &self,
        key: &[u8],
        f: impl FnOnce(&[u8], &[u8]) -> T,
    ) -> Result<Option<T>> {
        if self.bytewise {
            self.internal_get_cmp(&BytewiseComparator, key, f)
        } else {
            self.internal_get_cmp(&*self.comparator, key, f)
        }
    }

    /// The data block a lookup of `key` consults: the first index entry `>= key`, or `None`
    /// past the last block.
    fn block_for<C: Comparator + ?Sized>(
        &self,
        cmp: &C,
        key: &[u8],
    ) -> Result<Option<BlockHandle>> {
        let first = self.fence_first(key);
        // The fence holds handles only when every index entry is its own restart point.
        if let Some(handle) = first.and_then(|i| self.fence.as_ref()?.handle(i)) {
            return Ok(Some(handle));
        }
        let mut index = Cursor::new(self.index_layout, INDEX_KEY.take());
        self.seek_index_from(&mut index, cmp, key, first);
        let handle = if index.valid() {
            let mut value = index.value(&self.index);
            BlockHandle::decode_from(&mut value)
                .map(Some)
                .map_err(|e| self.locate_in_index(e, index.entry_offset()))
        } else {
            index
                .status()
                .map(|()| None)
                .map_err(|e| self.locate_index_error(e))
        };
        INDEX_KEY.set(index.into_key_buf());
        handle
    }

    /// The offset of the data block a lookup of `key` would consult, if any.
    pub(crate) fn data_block_offset_for(&self, key: &[u8]) -> Result<Option<u64>> {
        let handle = if self.bytewise {
            self.block_for(&BytewiseComparator, key)
        } else {
            self.block_for(&*self.comparator, key)
        };
        Ok(handle?.map(|h| h.offset))
    }

    /// Reads the filter block `info` lists, checking its checksum.
    pub(crate) fn read_filter_block(&self, info: &FilterInfo) -> Result<Vec<u8>> {
        let meta_at = self.properties.footer.metaindex.offset;
        let (data, _) =
            read_block_contents(&self.source, self.file_size, &info.handle, meta_at, true)?;
        Ok(data.into_owned())
    }

    fn internal_get_cmp<C: Comparator + ?Sized, T>(
        &self,
        cmp: &C,
        key: &[u8],
        f: impl FnOnce(&[u8], &[u8]) -> T,
    ) -> Result<Option<T>> {
        let Some(handle) = self.block_for(cmp, key)? else {
            return Ok(None);
        };

        if let Some(filter) = &self.filter {
            bump(&self.counters.filter_checks, 1);
            if !filter.key_may_match(handle.offset, key) {
                bump(&self.counters.filter_negatives, 1);
                return Ok(None);
            }
        }

        let block = self.data_block(&handle)?;
        let data = block.data();
        let mut cursor = Cursor::new(block.layout(), DATA_KEY.take());
        cursor.seek(data, cmp, key);
        let result = if cursor.valid() {
            Ok(Some(f(cursor.key(), cursor.value(data))))
        } else {
            cursor
                .status()
                .map(|()| None)
                .map_err(|e| block.locate(e, &handle))
        };
        DATA_KEY.set(cursor.into_key_buf());
        block.give_back();
        result
    }

    /// Hints every cache line of the stored block `handle` points to, trailer included, when
    /// the source is in memory.
    pub(crate) fn prefetch_block(&self, handle: &BlockHandle) {
        let Some(all) = self.source.as_bytes() else {
            return;
        };
        let range = handle.end_with_trailer().and_then(|end| {
            let start = usize::try_from(handle.offset).ok()?;
            all.get(start..usize::try_from(end).ok()?)
        });
        if let Some(bytes) = range {
            prefetch::lines(bytes);
        }
    }

    /// Positions `cursor` (over the index block) at the first entry `>= key`.
    pub(crate) fn seek_index<C: Comparator + ?Sized>(
        &self,
        cursor: &mut Cursor,
        cmp: &C,
        key: &[u8],
    ) {
        self.seek_index_from(cursor, cmp, key, self.fence_first(key));
    }

    /// The fence's answer for `key` (the first restart point whose key is `>= key`), for
    /// bytewise tables.
    fn fence_first(&self, key: &[u8]) -> Option<usize> {
        let (index, layout) = (&self.index[..], self.index_layout);
        self.fence
            .as_ref()
            .map(|fence| fence.first_at_or_after(key, |i| restart_key(index, layout, i)))
    }

    /// [`seek_index`](Self::seek_index), given the fence's answer `first` if there is one.
    fn seek_index_from<C: Comparator + ?Sized>(
        &self,
        cursor: &mut Cursor,
        cmp: &C,
        key: &[u8],
        first: Option<usize>,
    ) {
        match first {
            Some(first) => {
                // With one entry per restart point the answer is that restart entry;
                // otherwise it may lie in the interval before it.
                let start = if self.index_all_restarts {
                    first
                } else {
                    first.saturating_sub(1)
                };
                cursor.seek_from_restart(&self.index, cmp, key, start);
            }
            None => cursor.seek(&self.index, cmp, key),
        }
    }

    /// Moves an error at `entry` (a position in the index block) to the file.
    fn locate_in_index(&self, e: Error, entry: usize) -> Error {
        let e = match e {
            // A handle that fails to decode is reported at its entry.
            Error::Corruption { what, .. } => Error::Corruption {
                what,
                offset: entry as u64,
            },
            other => other,
        };
        locate(
            e,
            self.properties.footer.index.offset,
            self.index_compressed,
        )
    }

    /// A data block, from the cache or the source (then cached if configured). A handle
    /// pointing outside the file is reported at the index block.
    pub(crate) fn data_block(&self, handle: &BlockHandle) -> Result<BlockRef<'_>> {
        if let Some(cache) = &self.cache {
            if let Some(block) = cache.get(self.cache_id, handle.offset) {
                bump(&self.counters.cache_hits, 1);
                return Ok(BlockRef::Cached(block));
            }
        }
        bump(&self.counters.data_blocks_read, 1);
        bump(
            &self.counters.data_bytes_read,
            handle.size + BLOCK_TRAILER_LEN as u64,
        );
        let index_at = self.properties.footer.index.offset;
        let cached = self.cache.is_some() && self.fill_cache;
        // A block bound for the cache gets a buffer of its own size; others borrow the
        // thread's buffer, which `give_back` returns.
        let out = if cached { Vec::new() } else { BLOCK_BUF.take() };
        let (contents, compressed) = read_block_contents_into(
            &self.source,
            self.file_size,
            handle,
            index_at,
            self.verify_checksums,
            out,
        )?;
        let layout = Layout::parse(&contents).map_err(|e| locate(e, handle.offset, compressed))?;
        Ok(match contents {
            Cow::Borrowed(data) => BlockRef::Borrowed { data, layout },
            Cow::Owned(data) => match &self.cache {
                Some(cache) if self.fill_cache => {
                    let block = Arc::new(CachedBlock {
                        data,
                        layout,
                        compressed,
                    });
                    cache.insert(self.cache_id, handle.offset, Arc::clone(&block));
                    BlockRef::Cached(block)
                }
                _ => BlockRef::Owned {
                    data,
                    layout,
                    compressed,
                },
            },
        })
    }

    /// A cursor over the table's entries (seek, next, prev), positioned nowhere.
    pub fn iter(&self) -> TableIter<'_, R> {
        TableIter::new(self)
    }

    /// All entries in order, as a Rust iterator of owned `(key, value)` pairs. Double-ended.
    pub fn entries(&self) -> Range<'_, R> {
        Range::new(self, std::ops::Bound::Unbounded, std::ops::Bound::Unbounded)
    }

    /// The entries whose keys lie in `range` (in the table's order), as a double-ended Rust
    /// iterator of owned `(key, value)` pairs: `table.range("b".."d")`,
    /// `table.range(b"k".as_slice()..)`.
    pub fn range<K: AsRef<[u8]>>(&self, range: impl std::ops::RangeBounds<K>) -> Range<'_, R> {
        let own = |b: std::ops::Bound<&K>| b.map(|k| k.as_ref().to_vec());
        Range::new(self, own(range.start_bound()), own(range.end_bound()))
    }

    /// Approximate file offset where the data for `key` begins (or would begin): the offset
    /// of the data block that would hold it, or of the metaindex block for keys past the end.
    pub fn approximate_offset_of(&self, key: &[u8]) -> u64 {
        let metaindex_offset = self.properties.footer.metaindex.offset;
        let mut index = Cursor::new(self.index_layout, Vec::new());
        self.seek_index(&mut index, &*self.comparator, key);
        if !index.valid() {
            return metaindex_offset;
        }
        let mut value = index.value(&self.index);
        BlockHandle::decode_from(&mut value).map_or(metaindex_offset, |h| h.offset)
    }

    /// Reads and checks every block: checksums (always, whatever the options say), restart
    /// arrays, entry encoding, key order within and across blocks, index separators, and
    /// that the loaded filter admits every key of its blocks. Bypasses the cache.
    ///
    /// # Errors
    /// The first problem found, as [`Error::Corruption`] or [`Error::ChecksumMismatch`];
    /// [`Error::Io`] if reading fails.
    pub fn verify(&self) -> Result<VerifySummary> {
        let footer = self.properties.footer;
        let cmp = &*self.comparator;
        let trailer = BLOCK_TRAILER_LEN as u64;
        let mut summary = VerifySummary {
            bytes_read: FOOTER_LEN as u64,
            ..VerifySummary::default()
        };
        let footer_at = self.file_size - FOOTER_LEN as u64;

        let (index, index_compressed) =
            read_block_contents(&self.source, self.file_size, &footer.index, footer_at, true)?;
        summary.bytes_read += footer.index.size + trailer;
        let index_block =
            Block::new(&index).map_err(|e| locate(e, footer.index.offset, index_compressed))?;
        index_block
            .check(cmp)
            .map_err(|e| locate(e, footer.index.offset, index_compressed))?;

        let (metaindex, meta_compressed) = read_block_contents(
            &self.source,
            self.file_size,
            &footer.metaindex,
            footer_at,
            true,
        )?;
        summary.bytes_read += footer.metaindex.size + trailer;
        Block::new(&metaindex)
            .and_then(|b| b.check(&BytewiseComparator))
            .map_err(|e| locate(e, footer.metaindex.offset, meta_compressed))?;
        for info in &self.properties.filters {
            read_block_contents(
                &self.source,
                self.file_size,
                &info.handle,
                footer.metaindex.offset,
                true,
            )?;
            summary.filter_blocks += 1;
            summary.bytes_read += info.handle.size + trailer;
        }

        let mut entries = index_block.iter(cmp);
        entries.seek_to_first();
        let mut previous_key: Option<Vec<u8>> = None;
        let mut previous_end = 0u64;
        while entries.valid() {
            let index_key = entries.key().to_vec();
            let entry_at = entries.entry_offset();
            let mut value = entries.value();
            let handle = BlockHandle::decode_from(&mut value)
                .map_err(|e| self.locate_in_index(e, entry_at))?;
            if handle.offset < previous_end {
                return Err(self.locate_in_index(Error::corrupt("block handle", 0), entry_at));
            }
            previous_end = handle.end_with_trailer().unwrap_or(u64::MAX);
            let (contents, compressed) = read_block_contents(
                &self.source,
                self.file_size,
                &handle,
                footer.index.offset,
                true,
            )?;
            summary.bytes_read += handle.size + trailer;
            summary.data_blocks += 1;
            let in_block = |e| locate(e, handle.offset, compressed);
            let block = Block::new(&contents).map_err(in_block)?;
            block.check(cmp).map_err(in_block)?;
            let mut it = block.iter(cmp);
            it.seek_to_first();
            while it.valid() {
                let key = it.key();
                let after_previous = previous_key
                    .as_deref()
                    .is_none_or(|p| cmp.compare(p, key) == Ordering::Less);
                if !after_previous || cmp.compare(key, &index_key) == Ordering::Greater {
                    return Err(in_block(Error::corrupt(
                        "key order",
                        it.entry_offset() as u64,
                    )));
                }
                if let Some(filter) = &self.filter {
                    if !filter.key_may_match(handle.offset, key) {
                        return Err(Error::corrupt(
                            "filter block (misses a key)",
                            self.filter_handle().map_or(0, |h| h.offset),
                        ));
                    }
                }
                let previous = previous_key.get_or_insert_with(Vec::new);
                previous.clear();
                previous.extend_from_slice(key);
                summary.entries += 1;
                it.next();
            }
            it.status().map_err(in_block)?;
            entries.next();
        }
        entries
            .status()
            .map_err(|e| locate(e, footer.index.offset, index_compressed))?;
        Ok(summary)
    }

    fn filter_handle(&self) -> Option<BlockHandle> {
        let name = self.properties.filter_policy.as_deref()?;
        self.properties
            .filters
            .iter()
            .find(|f| f.policy_name == name)
            .map(|f| f.handle)
    }
}

impl<R> Table<R> {
    /// What [`open`](Self::open) found out about the table.
    pub fn properties(&self) -> &TableProperties {
        &self.properties
    }

    /// The read counters so far.
    pub fn counters(&self) -> Counters {
        let c = &self.counters;
        let load = |a: &AtomicU64| a.load(AtomicOrdering::Relaxed);
        Counters {
            data_blocks_read: load(&c.data_blocks_read),
            data_bytes_read: load(&c.data_bytes_read),
            cache_hits: load(&c.cache_hits),
            filter_checks: load(&c.filter_checks),
            filter_negatives: load(&c.filter_negatives),
        }
    }

    /// Sets every counter back to 0.
    pub fn reset_counters(&self) {
        let c = &self.counters;
        for a in [
            &c.data_blocks_read,
            &c.data_bytes_read,
            &c.cache_hits,
            &c.filter_checks,
            &c.filter_negatives,
        ] {
            a.store(0, AtomicOrdering::Relaxed);
        }
    }

    /// The comparator the table is read with.
    pub fn comparator(&self) -> &Arc<dyn Comparator> {
        &self.comparator
    }

    /// The source the table reads from.
    pub fn source(&self) -> &R {
        &self.source
    }

    /// Gives back the source.
    pub fn into_source(self) -> R {
        self.source
    }

    pub(crate) fn index_parts(&self) -> (&[u8], Layout) {
        (&self.index, self.index_layout)
    }

    /// Moves an error at a position in the index block to the file.
    pub(crate) fn locate_index_error(&self, e: Error) -> Error {
        locate(
            e,
            self.properties.footer.index.offset,
            self.index_compressed,
        )
    }
}

/// Lists the `filter.*` entries of a metaindex block.
fn read_filter_entries(metaindex: &[u8], at: u64, compressed: bool) -> Result<Vec<FilterInfo>> {
    let block = Block::new(metaindex).map_err(|e| locate(e, at, compressed))?;
    let mut it = block.iter(&BytewiseComparator);
    it.seek(FILTER_META_PREFIX.as_bytes());
    let mut filters = Vec::new();
    while it.valid() {
        let Some(name) = it.key().strip_prefix(FILTER_META_PREFIX.as_bytes()) else {
            break;
        };
        let mut value = it.value();
        let handle = BlockHandle::decode_from(&mut value)
            .map_err(|e| locate(e.at(it.entry_offset() as u64), at, compressed))?;
        filters.push(FilterInfo {
            policy_name: String::from_utf8_lossy(name).into_owned(),
            handle,
        });
        it.next();
    }
    it.status().map_err(|e| locate(e, at, compressed))?;
    Ok(filters)
}

/// What a walk over the index block found.
struct IndexScan {
    /// Data blocks (index entries).
    blocks: u64,
    /// Their stored bytes, trailers included.
    size: u64,
    /// Whether every index entry sits at its own restart point (entry `i` at restart point
    /// `i`, as LevelDB writes index blocks) and every handle packs.
    handles_at_restarts: bool,
}

/// Counts the index entries and adds up the data blocks' stored sizes, checking that every
/// handle decodes.
fn scan_index(
    index: &[u8],
    layout: Layout,
    cmp: &dyn Comparator,
    at: u64,
    compressed: bool,
) -> Result<IndexScan> {
    let mut it = Block::from_parts(index, layout).iter(cmp);
    it.seek_to_first();
    let (mut blocks, mut size) = (0u64, 0u64);
    let mut handles_at_restarts = true;
    while it.valid() {
        let mut value = it.value();
        let handle = BlockHandle::decode_from(&mut value)
            .map_err(|e| locate(e.at(it.entry_offset() as u64), at, compressed))?;
        let own_restart = usize::try_from(blocks)
            .is_ok_and(|i| layout.restart_point(index, i) == it.entry_offset());
        handles_at_restarts &= own_restart && pack_handle(&handle).is_some();
        blocks += 1;
        size = size.saturating_add(handle.size.saturating_add(BLOCK_TRAILER_LEN as u64));
        it.next();
    }
    it.status().map_err(|e| locate(e, at, compressed))?;
    Ok(IndexScan {
        blocks,
        size,
        handles_at_restarts: handles_at_restarts && blocks == layout.num_restarts as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BuildOptions, TableBuilder};

    /// Uncached gets of snappy blocks share one decompression buffer: blocks of very
    /// different sizes, read in turn and from inside another get's callback, each read back
    /// exactly.
    #[test]
    fn uncached_snappy_blocks_of_mixed_sizes() {
        let value = |i: usize| -> Vec<u8> {
            let len = if i % 50 < 25 { 3 } else { 9000 };
            (0..len).map(|j| b"abcdefgh"[(i + j / 7) % 8]).collect()
        };
        let keys: Vec<Vec<u8>> = (0..400).map(|i| format!("{i:06}").into_bytes()).collect();
        let options = BuildOptions::default().compression(Compression::Snappy);
        let mut builder = TableBuilder::new(Vec::new(), options).unwrap();
        for (i, k) in keys.iter().enumerate() {
            builder.add(k, &value(i)).unwrap();
        }
        builder.finish().unwrap();
        let table = Table::open(builder.into_inner(), ReadOptions::default()).unwrap();
        for (i, k) in keys.iter().enumerate().rev().chain(keys.iter().enumerate()) {
            let other = (i * 37) % keys.len();
            let (got, nested) = table
                .get_with(k, |v| (v.to_vec(), table.get(&keys[other]).unwrap()))
                .unwrap()
                .unwrap();
            assert_eq!(got, value(i), "key {i}");
            assert_eq!(nested, Some(value(other)), "key {other} inside key {i}");
        }
        assert_eq!(table.get(b"000400").unwrap(), None);
    }
}
