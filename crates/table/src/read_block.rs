//! Reading one block: the handle checked against the file, the stored bytes and trailer read
//! (or borrowed from an in-memory source), the checksum verified and the contents
//! decompressed; and the per-thread buffer that uncached blocks are decompressed into.

#![deny(clippy::arithmetic_side_effects)]

use std::borrow::Cow;
use std::cell::Cell;
use std::sync::Arc;

use crate::ReadAt;
use crate::block::Layout;
use crate::cache::CachedBlock;
use crate::format::{BLOCK_TRAILER_LEN, BlockHandle, BlockTrailer, Compression};
use crate::{Error, Result};
use leveltable_prefetch as prefetch;

/// Snappy's output is at most 64 bytes per 3-byte copy element, so a valid stream never
/// expands by more than 64/3 < 22. A length claim beyond that is corrupt; checking it keeps a
/// few hostile bytes from making us allocate gigabytes.
const MAX_SNAPPY_EXPANSION: usize = 22;

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
    pub(crate) fn give_back(self) {
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
pub(crate) fn locate(e: Error, block_offset: u64, compressed: bool) -> Error {
    if compressed {
        e.at(block_offset)
    } else {
        e.rebase(block_offset)
    }
}

thread_local! {
    /// The decompression buffer lent to blocks that are not cached and taken back after a
    /// get, so a get of a compressed block neither allocates nor zero-fills a fresh buffer.
    static BLOCK_BUF: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// The thread's decompression buffer, for a block that will not be cached;
/// [`BlockRef::give_back`] returns it.
pub(crate) fn take_block_buf() -> Vec<u8> {
    BLOCK_BUF.take()
}

/// A buffer larger than this is not kept for reuse, so one huge block does not pin its
/// memory in the thread for good.
const MAX_KEPT_BLOCK_BUF: usize = 1 << 20;

/// Reads a block's stored bytes and trailer, checks the crc if asked, and decompresses.
/// Returns the contents and whether they were stored compressed.
///
/// `handle_at` is where the handle itself was found, for the error when it points outside
/// the file.
pub(crate) fn read_block_contents<'s, R: ReadAt + ?Sized>(
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
pub(crate) fn read_block_contents_into<'s, R: ReadAt + ?Sized>(
    source: &'s R,
    file_size: u64,
    handle: &BlockHandle,
    handle_at: u64,
    verify: bool,
    mut out: Vec<u8>,
) -> Result<(Cow<'s, [u8]>, bool)> {
    // Validate before allocating or reading: the block and its trailer lie in the file, and
    // their length fits a `usize` (on a 32-bit target a block may fit the file but not memory).
    let end = handle.end_with_trailer();
    let n = usize::try_from(handle.size).ok();
    let (Some(_), Some(n), Some(total)) = (
        end.filter(|&e| e <= file_size),
        n,
        n.and_then(|n| n.checked_add(BLOCK_TRAILER_LEN)),
    ) else {
        return Err(Error::corrupt("block handle", handle_at));
    };
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
        None => {
            #[expect(
                clippy::arithmetic_side_effects,
                reason = "offset + size + 5 was checked to fit a u64 above"
            )]
            let type_at = handle.offset + handle.size;
            Err(Error::corrupt("block type", type_at))
        }
    }
}
