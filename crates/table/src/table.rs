//! Reads a table: point lookups, the index search (opening is in `open.rs`).

#![deny(clippy::arithmetic_side_effects)]

use std::borrow::Cow;
use std::cell::Cell;
use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use crate::bits::Bits;
use crate::block::{Block, Cursor, Layout};
use crate::cache::{Cache, CachedBlock, take_spare};
use crate::comparator::{BytewiseComparator, Comparator, is_bytewise};
use crate::counters::{Counter, CounterCells, Counters};
use crate::fence::{Fence, PackedFilter, pack_handle};
use crate::filter::LoadedFilter;
use crate::format::{BLOCK_TRAILER_LEN, BlockHandle, Compression, Footer};
use crate::options::ReadOptions;
use crate::properties::{FilterInfo, TableProperties};
pub(crate) use crate::read_block::BlockRef;
use crate::read_block::{
    Check, locate, read_block_contents, read_block_contents_into, take_block_buf,
};
use crate::readahead::{Readahead, is_slow};
use crate::{Error, ReadAt, Result};
use leveltable_prefetch as prefetch;

/// Calls `$body` with `$cmp` bound to the table's comparator: statically dispatched
/// [`BytewiseComparator`] when the table is bytewise (the common case, which the compiler
/// then inlines into the searches), the trait object otherwise.
macro_rules! with_comparator {
    ($table:expr, |$cmp:ident| $body:expr) => {
        if $table.bytewise {
            let $cmp = &BytewiseComparator;
            $body
        } else {
            let $cmp = &*$table.comparator;
            $body
        }
    };
}

thread_local! {
    /// The data block cursor's key buffer for gets, taken and put back so a get allocates
    /// nothing once warm (and a get nested in a get's callback just starts with an empty
    /// buffer).
    static DATA_KEY: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

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
    pub(crate) source: R,
    pub(crate) file_size: u64,
    pub(crate) comparator: Arc<dyn Comparator>,
    pub(crate) bytewise: bool,
    pub(crate) index: IndexBlock,
    pub(crate) filter: Option<LoadedFilter>,
    pub(crate) reading: BlockReading,
    pub(crate) cache: CacheSlot,
    pub(crate) properties: TableProperties,
    pub(crate) counters: CounterCells,
}

/// The index block, decoded at open and held while the table is open, with what speeds up
/// searching it.
pub(crate) struct IndexBlock {
    pub(crate) bytes: Vec<u8>,
    pub(crate) layout: Layout,
    /// Whether it was stored compressed (for the offsets errors name).
    pub(crate) compressed: bool,
    /// Search tree over the index's restart keys (for comparators with a bytewise view).
    pub(crate) fence: Option<Fence>,
    /// Whether every index entry is a restart point (LevelDB writes index blocks so).
    pub(crate) all_restarts: bool,
}

/// How data blocks are read: checksums and codecs, the readahead of scans, and what a
/// source in memory lets the table remember.
pub(crate) struct BlockReading {
    pub(crate) decode: crate::read_block::Decode,
    pub(crate) verify_checksums: bool,
    /// Decompresses the data blocks of a scan ahead on other cores, for slow codecs.
    pub(crate) readahead: Option<Arc<Readahead>>,
    /// The data blocks whose checksums were checked, one bit per block by its position in
    /// the index, for a table in memory that checks them and whose index positions its
    /// fence gives. A block read from memory (a memory map, a buffer) is the same bytes at
    /// every read: once its checksum has matched, checking it again proves nothing new, yet
    /// costs a pass over the whole block, where a lookup in an uncompressed block otherwise
    /// touches a few cache lines.
    pub(crate) verified: Option<Bits>,
    /// For a source in memory: the stretches of [`MAP_CHUNK`] bytes some scan has asked it
    /// to map in ([`ReadAt::will_read`]), so that scans of one table from several threads
    /// do not each ask for the same pages, waiting on each other in the kernel.
    pub(crate) mapped: Option<Bits>,
}

/// The block cache the table shares, if any: whether reads fill it, and the table's id in
/// it.
pub(crate) struct CacheSlot {
    pub(crate) slot: Option<Arc<Cache>>,
    pub(crate) fill: bool,
    pub(crate) id: u64,
}

/// What an [`OpenPlan`](crate::OpenPlan) decoded of a table, for [`Table::assemble`].
pub(crate) struct Opened {
    pub(crate) file_size: u64,
    pub(crate) decode: crate::read_block::Decode,
    pub(crate) footer: Footer,
    pub(crate) index: Vec<u8>,
    pub(crate) index_layout: Layout,
    pub(crate) index_compression: Compression,
    pub(crate) filters: Vec<FilterInfo>,
    pub(crate) filter: Option<LoadedFilter>,
    pub(crate) filter_size: u64,
}

/// The granularity at which a table remembers what scans asked its source to map in.
pub(crate) const MAP_CHUNK: u64 = 128 << 10;

/// A data block found through the index: its handle and, when the fence gave them, its
/// position among the table's data blocks and where its filter lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Located {
    pub(crate) handle: BlockHandle,
    pub(crate) position: Option<usize>,
    pub(crate) filter: Option<PackedFilter>,
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

impl<R: ReadAt> Table<R> {
    /// The table from what an [`OpenPlan`](crate::OpenPlan) decoded, reading its data blocks from `source`.
    pub(crate) fn assemble(source: R, options: ReadOptions, opened: Opened) -> Result<Table<R>> {
        let Opened {
            file_size,
            decode,
            footer,
            index,
            index_layout,
            index_compression,
            filters,
            filter,
            filter_size,
        } = opened;
        let index_compressed = index_compression != Compression::None;
        let readahead = Readahead::new(options.readahead_blocks);
        // An index stored with a slow codec says the data blocks are too: scans decompress
        // them ahead from the first.
        if let Some(ahead) = readahead.as_ref().filter(|_| is_slow(index_compression)) {
            ahead.saw(index_compression);
        }
        let verify = &decode;
        let scan = scan_index(
            &index,
            index_layout,
            &*options.comparator,
            footer.index.offset,
            index_compressed,
        )?;
        let (data_blocks, data_size) = (scan.blocks, scan.size);
        let bytewise = is_bytewise(&*options.comparator);
        let filter_of = filter
            .as_ref()
            .map(|f| move |handle: &BlockHandle| f.packed_for(handle.offset));
        let fence = Fence::build(
            &index,
            index_layout,
            scan.handles_at_restarts,
            filter_of
                .as_ref()
                .map(|f| f as &dyn Fn(&BlockHandle) -> PackedFilter),
            |k| options.comparator.bytewise_view(k),
        )
        .map(|fence| match &filter {
            Some(f) => fence.with_filter_block(Arc::clone(&f.data)),
            None => fence,
        });
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
        let index_all_restarts = data_blocks == index_layout.num_restarts as u64;
        let verified =
            (verify.verify && index_all_restarts && fence.is_some() && source.as_bytes().is_some())
                .then(|| Bits::new(index_layout.num_restarts));
        let mapped = source.as_bytes().map(|bytes| {
            let chunks = (bytes.len() as u64).div_ceil(MAP_CHUNK);
            Bits::new(usize::try_from(chunks).unwrap_or(0))
        });
        Ok(Table {
            source,
            file_size,
            bytewise,
            comparator: options.comparator,
            index: IndexBlock {
                bytes: index,
                layout: index_layout,
                compressed: index_compressed,
                fence,
                all_restarts: index_all_restarts,
            },
            filter,
            reading: BlockReading {
                decode: *verify,
                verify_checksums: verify.verify,
                readahead,
                verified,
                mapped,
            },
            cache: CacheSlot {
                slot: options.block_cache,
                fill: options.fill_cache,
                id: cache_id,
            },
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
        with_comparator!(self, |cmp| self.get_with_cmp(cmp, key, f))
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
        with_comparator!(self, |cmp| self.internal_get_cmp(cmp, key, f))
    }

    /// The offset of the data block a lookup of `key` would consult (found through the
    /// index, before any filter is asked), or `None` for a key past the last block.
    ///
    /// # Errors
    /// [`Error::Corruption`] for an index entry that does not decode.
    pub fn data_block_offset_for(&self, key: &[u8]) -> Result<Option<u64>> {
        let found = with_comparator!(self, |cmp| self.block_for(cmp, key))?;
        Ok(found.map(|at| at.handle.offset))
    }

    /// Reads the filter block `info` lists (one of [`TableProperties::filters`]), checking
    /// its checksum, whatever the read options say. Any listed filter can be read, whether
    /// or not the reader knows its policy.
    ///
    /// # Errors
    /// [`Error::Corruption`] for a handle outside the file, [`Error::ChecksumMismatch`], or
    /// [`Error::Io`].
    pub fn read_filter_block(&self, info: &FilterInfo) -> Result<Vec<u8>> {
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
        let Some(at) = self.block_for(cmp, key)? else {
            return Ok(None);
        };
        let handle = at.handle;
        if !self.filter_admits(&at, key) {
            return Ok(None);
        }

        let block = match self.cached_block(&handle) {
            Some(block) => block,
            None => {
                // Every line of the block at once: the trailer, the restart array, the restart
                // keys the search compares and the entries it reads are otherwise each a miss
                // that waits for the one before (in a memory map, the first reaches the file's
                // page too), and snappy's input is read in data-dependent steps.
                self.prefetch_block(&handle);
                self.read_data_block(&handle, at.position, self.cache.fill)?
            }
        };
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
        if let Some(bytes) = self.stored_in_memory(handle) {
            prefetch::lines(bytes);
        }
    }

    /// Whether the filter, if the table has one, lets `key` through to the data block `at`;
    /// counts the check and, when it says no, the negative.
    // Always inlined: as a call, taking the block's location through memory, it made
    // absent gets 10% slower.
    #[inline(always)]
    pub(crate) fn filter_admits(&self, at: &Located, key: &[u8]) -> bool {
        let Some(filter) = &self.filter else {
            return true;
        };
        self.counters.bump(Counter::FilterChecks, 1);
        let admits = filter.may_match_at(at.filter, at.handle.offset, key);
        if !admits {
            self.counters.bump(Counter::FilterNegatives, 1);
        }
        admits
    }

    /// Asks the source to map in `len` bytes from `offset` ([`ReadAt::will_read`]), unless
    /// earlier requests (from any scan of this table) covered every [`MAP_CHUNK`] of them.
    pub(crate) fn map_in(&self, offset: u64, len: u64) {
        if let Some(mapped) = &self.reading.mapped {
            let first = offset / MAP_CHUNK;
            let last = offset.saturating_add(len).saturating_sub(1) / MAP_CHUNK;
            let mut fresh = false;
            for chunk in first..=last {
                let Ok(i) = usize::try_from(chunk) else { break };
                // Two scans arriving together may both find a chunk fresh and both ask:
                // harmless, and rare once one runs ahead.
                if !mapped.contains(i) && mapped.insert(i) {
                    fresh = true;
                }
            }
            if !fresh {
                return;
            }
        }
        self.source.will_read(offset, len);
    }

    /// The stored bytes of the block `handle` points to, trailer included, when the source
    /// is in memory and the handle lies inside it.
    fn stored_in_memory(&self, handle: &BlockHandle) -> Option<&[u8]> {
        let all = self.source.as_bytes()?;
        let end = usize::try_from(handle.end_with_trailer()?).ok()?;
        all.get(usize::try_from(handle.offset).ok()?..end)
    }

    /// [`data_block_with`](Self::data_block_with) of a block found through the index,
    /// filling the cache as the options say.
    pub(crate) fn data_block_at(&self, at: &Located) -> Result<BlockRef<'_>> {
        self.data_block_with(&at.handle, at.position, self.cache.fill)
    }

    /// A data block, from the cache or the source, added to the cache if `fill` (and there
    /// is a cache). A handle pointing outside the file is reported at the index block. A
    /// block whose `position` among the data blocks is known has its checksum checked only
    /// the first time it is read from memory (see `Table::verified`).
    pub(crate) fn data_block_with(
        &self,
        handle: &BlockHandle,
        position: Option<usize>,
        fill: bool,
    ) -> Result<BlockRef<'_>> {
        match self.cached_block(handle) {
            Some(block) => Ok(block),
            None => self.read_data_block(handle, position, fill),
        }
    }

    /// The data block `handle` points to if the block cache holds it.
    fn cached_block(&self, handle: &BlockHandle) -> Option<BlockRef<'_>> {
        self.cache_lookup(handle).map(BlockRef::Cached)
    }

    /// The decoded data block `handle` points to if the block cache holds it, counted as a
    /// cache hit.
    pub(crate) fn cache_lookup(&self, handle: &BlockHandle) -> Option<Arc<CachedBlock>> {
        let block = self
            .cache
            .slot
            .as_ref()?
            .get(self.cache.id, handle.offset)?;
        self.counters.bump(Counter::CacheHits, 1);
        Some(block)
    }

    /// [`data_block_with`](Self::data_block_with) of a block the cache does not hold: read
    /// from the source.
    fn read_data_block(
        &self,
        handle: &BlockHandle,
        position: Option<usize>,
        fill: bool,
    ) -> Result<BlockRef<'_>> {
        self.counters.bump(Counter::DataBlocksRead, 1);
        // The handle comes from the file and is checked only by the read below: its size
        // may be anything up to 2^64 - 1.
        self.counters.bump(
            Counter::DataBytesRead,
            handle.size.saturating_add(BLOCK_TRAILER_LEN as u64),
        );
        let index_at = self.properties.footer.index.offset;
        let cached = self.cache.slot.is_some() && fill;
        // A block bound for the cache gets one of the thread's spare buffers (trimmed to
        // size below if much larger); others borrow the thread's buffer, which `give_back`
        // returns.
        let out = if cached {
            take_spare()
        } else {
            take_block_buf()
        };
        let verified = position.zip(self.reading.verified.as_ref());
        let check = match verified {
            Some((i, v)) if v.contains(i) => Check::Checked(&self.reading.decode),
            _ => Check::With(&self.reading.decode),
        };
        let ahead = self.reading.readahead.as_deref().and_then(|ahead| {
            // The decode is for the blocks this read hands out ahead, whose checksums no
            // read has checked yet: the table's, whatever this block's own check is.
            let decode = (self.reading.decode.verify, self.reading.decode.profile);
            ahead.block(
                &self.source,
                self.file_size,
                handle,
                decode,
                &self.index.bytes,
            )
        });
        let (contents, compressed) = match ahead {
            Some(decoded) => {
                let (data, compressed) = decoded?;
                (Cow::Owned(data), compressed)
            }
            None => {
                let (contents, compression) = read_block_contents_into(
                    &self.source,
                    self.file_size,
                    handle,
                    index_at,
                    check,
                    out,
                )?;
                if let Some(ahead) = &self.reading.readahead {
                    ahead.saw(compression);
                }
                (contents, compression != Compression::None)
            }
        };
        if let Some((i, v)) = verified {
            v.insert(i);
        }
        let layout = Layout::parse(&contents).map_err(|e| locate(e, handle.offset, compressed))?;
        Ok(match contents {
            Cow::Borrowed(data) => BlockRef::Borrowed { data, layout },
            Cow::Owned(data) => match &self.cache.slot {
                Some(cache) if fill => {
                    let block = CachedBlock::new(data, layout, compressed);
                    cache.insert(self.cache.id, handle.offset, Arc::clone(&block));
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

    /// Approximate file offset where the data for `key` begins (or would begin): the offset
    /// of the data block that would hold it, or of the metaindex block for keys past the end.
    pub fn approximate_offset_of(&self, key: &[u8]) -> u64 {
        let metaindex_offset = self.properties.footer.metaindex.offset;
        let mut index = Cursor::new(self.index.layout, Vec::new());
        self.seek_index(&mut index, &*self.comparator, key);
        if !index.valid() {
            return metaindex_offset;
        }
        let mut value = index.value(&self.index.bytes);
        BlockHandle::decode_from(&mut value).map_or(metaindex_offset, |h| h.offset)
    }
}

impl<R> Table<R> {
    /// What [`open`](Self::open) found out about the table.
    pub fn properties(&self) -> &TableProperties {
        &self.properties
    }

    /// The bytes this open table keeps in memory for as long as it is open: its index
    /// block (decompressed), its filter block, the search tree over the index (the fence)
    /// and its per-block bitmaps. Data blocks (read on demand, into the shared block cache
    /// or a buffer) and the source are not counted; nor is the `Table` value itself.
    pub fn resident_bytes(&self) -> u64 {
        let filter = self.filter.as_ref().map_or(0, |f| f.data.len());
        let fence = self.index.fence.as_ref().map_or(0, Fence::heap_bytes);
        let bits = [&self.reading.verified, &self.reading.mapped]
            .into_iter()
            .flatten()
            .map(Bits::heap_bytes)
            .fold(0usize, usize::saturating_add);
        let names = self
            .properties
            .filters
            .iter()
            .map(|f| std::mem::size_of::<FilterInfo>().saturating_add(f.policy_name.capacity()))
            .fold(0usize, usize::saturating_add);
        [self.index.bytes.capacity(), filter, fence, bits, names]
            .into_iter()
            .fold(0u64, |sum, n| sum.saturating_add(n as u64))
    }

    /// The read counters so far.
    pub fn counters(&self) -> Counters {
        Counters::of(&self.counters)
    }

    /// Sets every counter back to 0.
    pub fn reset_counters(&self) {
        self.counters.reset();
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
        (&self.index.bytes, self.index.layout)
    }

    /// Moves an error at a position in the index block to the file.
    pub(crate) fn locate_index_error(&self, e: Error) -> Error {
        locate(
            e,
            self.properties.footer.index.offset,
            self.index.compressed,
        )
    }
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
        let own_restart = usize::try_from(blocks).is_ok_and(|i| {
            i < layout.num_restarts && layout.restart_point(index, i) == it.entry_offset()
        });
        handles_at_restarts &= own_restart && pack_handle(&handle).is_some();
        #[expect(
            clippy::arithmetic_side_effects,
            reason = "counts entries of the index block, each at least 3 bytes"
        )]
        {
            blocks += 1;
        }
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
