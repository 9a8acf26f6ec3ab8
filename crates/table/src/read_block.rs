//! Reading one block: the handle checked against the file, the stored bytes and trailer read
//! (or borrowed from an in-memory source), the checksum verified and the contents
//! decompressed by the codec the profile gives the type byte; and the per-thread buffer that
//! uncached blocks are decompressed into.

#![deny(clippy::arithmetic_side_effects)]

use std::borrow::Cow;
use std::cell::Cell;
use std::ops::Range;
use std::sync::Arc;

use crate::ReadAt;
use crate::block::Layout;
use crate::cache::CachedBlock;
use crate::codec::{CodecError, decompress_into};
use crate::format::{BLOCK_TRAILER_LEN, BlockHandle, BlockTrailer, Compression};
use crate::options::ReadOptions;
use crate::profile::Profile;
use crate::{Error, Result};
use leveltable_prefetch as prefetch;

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

/// How the blocks of one table are decoded: whether checksums are checked, and which
/// [`Profile`] maps type bytes to codecs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Decode {
    pub(crate) verify: bool,
    pub(crate) profile: Profile,
}

impl Decode {
    /// The decoding `options` ask for.
    pub(crate) fn new(options: &ReadOptions) -> Decode {
        Decode {
            verify: options.verify_checksums,
            profile: options.profile,
        }
    }

    /// The same profile, checksums checked: for a full verification.
    pub(crate) fn verifying(&self) -> Decode {
        Decode {
            verify: true,
            profile: self.profile,
        }
    }
}

/// What a block read is told: a checksum policy alone (the default profile), or a table's
/// [`Decode`].
pub(crate) enum Check<'a> {
    Verify(bool),
    With(&'a Decode),
    /// A table's [`Decode`] for bytes whose checksum an earlier read already checked.
    Checked(&'a Decode),
}

impl From<bool> for Check<'static> {
    fn from(verify: bool) -> Self {
        Check::Verify(verify)
    }
}

impl<'a> From<&'a Decode> for Check<'a> {
    fn from(decode: &'a Decode) -> Self {
        Check::With(decode)
    }
}

/// Reads a block's stored bytes and trailer, checks the crc if asked, and decompresses.
/// Returns the contents and the compression they were stored with.
///
/// `handle_at` is where the handle itself was found, for the error when it points outside
/// the file.
pub(crate) fn read_block_contents<'s, 'c, R: ReadAt + ?Sized>(
    source: &'s R,
    file_size: u64,
    handle: &BlockHandle,
    handle_at: u64,
    check: impl Into<Check<'c>>,
) -> Result<(Cow<'s, [u8]>, Compression)> {
    read_block_contents_into(source, file_size, handle, handle_at, check, Vec::new())
}

/// [`read_block_contents`], decompressing into `out` (whose bytes are overwritten). `out`
/// keeps its length from an earlier block, so sizing it zero-fills only what it grows by.
pub(crate) fn read_block_contents_into<'s, 'c, R: ReadAt + ?Sized>(
    source: &'s R,
    file_size: u64,
    handle: &BlockHandle,
    handle_at: u64,
    check: impl Into<Check<'c>>,
    out: Vec<u8>,
) -> Result<(Cow<'s, [u8]>, Compression)> {
    let (verify, profile) = match check.into() {
        Check::Verify(verify) => (verify, Profile::default()),
        Check::With(d) => (d.verify, d.profile),
        Check::Checked(d) => (false, d.profile),
    };
    let raw = read_raw(source, file_size, handle, handle_at)?;
    decode_raw(raw, handle, verify, profile, out)
}

/// Reads the stored bytes of the block at `handle` and checks their checksum, without
/// decompressing them: for a block whose contents are already in memory.
pub(crate) fn check_stored<R: ReadAt + ?Sized>(
    source: &R,
    file_size: u64,
    handle: &BlockHandle,
    handle_at: u64,
) -> Result<()> {
    let raw = read_raw(source, file_size, handle, handle_at)?;
    let Some(n) = raw.len().checked_sub(BLOCK_TRAILER_LEN) else {
        return Err(Error::corrupt("block handle", handle.offset));
    };
    let trailer = BlockTrailer::decode_from(&mut &raw[n..])?;
    trailer
        .verify(&raw[..n])
        .map_err(|e| e.rebase(handle.offset))
}

/// The bytes of `range`, which must lie within the source, borrowed from an in-memory
/// source or read (in steps, so that memory grows only with bytes that arrive).
pub(crate) fn read_range<R: ReadAt + ?Sized>(
    source: &R,
    range: Range<u64>,
) -> Result<Cow<'_, [u8]>> {
    let len = range
        .end
        .checked_sub(range.start)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| Error::corrupt("block handle", range.start))?;
    if let Some(all) = source.as_bytes() {
        return usize::try_from(range.start)
            .ok()
            .and_then(|start| all.get(start..start.checked_add(len)?))
            .map(Cow::Borrowed)
            .ok_or_else(|| Error::corrupt("block handle", range.start));
    }
    let mut buf = Vec::new();
    while let Some(left) = len.checked_sub(buf.len()).filter(|&n| n > 0) {
        let at = buf.len();
        buf.resize(len.saturating_sub(left.saturating_sub(READ_STEP)), 0);
        // `at` is below `len`, and the range lies within the source: no overflow.
        let offset = range.start.saturating_add(at as u64);
        source.read_exact_at(&mut buf[at..], offset)?;
    }
    Ok(Cow::Owned(buf))
}

/// The stored bytes of the block at `handle` followed by its trailer, borrowed from an
/// in-memory source or read.
pub(crate) fn read_raw<'s, R: ReadAt + ?Sized>(
    source: &'s R,
    file_size: u64,
    handle: &BlockHandle,
    handle_at: u64,
) -> Result<Cow<'s, [u8]>> {
    // Validate before allocating or reading: the block and its trailer lie in the file, and
    // their length fits a `usize` (on a 32-bit target a block may fit the file but not memory).
    let end = handle.end_with_trailer();
    let n = usize::try_from(handle.size).ok();
    let (Some(_), Some(total)) = (
        end.filter(|&e| e <= file_size),
        n.and_then(|n| n.checked_add(BLOCK_TRAILER_LEN)),
    ) else {
        return Err(Error::corrupt("block handle", handle_at));
    };
    // `end` is checked: the span is `total` bytes from the handle's offset.
    read_range(
        source,
        handle.offset..handle.offset.saturating_add(total as u64),
    )
    .map_err(|e| match e {
        Error::Io(e) => Error::Io(e),
        _ => Error::corrupt("block handle", handle_at),
    })
}

/// The most a block read allocates ahead of the bytes it has read.
const READ_STEP: usize = 4 << 20;

/// Checks the crc of `raw` (a block and its trailer, as [`read_raw`] returns it) if asked,
/// and decompresses it into `out` under `profile`. Returns the contents and the compression
/// the block was stored with.
pub(crate) fn decode_raw<'s>(
    raw: Cow<'s, [u8]>,
    handle: &BlockHandle,
    verify: bool,
    profile: Profile,
    mut out: Vec<u8>,
) -> Result<(Cow<'s, [u8]>, Compression)> {
    let Some(n) = raw.len().checked_sub(BLOCK_TRAILER_LEN) else {
        return Err(Error::corrupt("block handle", handle.offset));
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
    let block_type = trailer.block_type;
    let Some(compression) = profile.compression(block_type, &raw[..n]) else {
        return Err(if profile == Profile::Auto && block_type == 2 {
            Error::corrupt(
                "block of type 2, neither a zstd frame nor a zlib stream (profile auto)",
                handle.offset,
            )
        } else {
            Error::UnsupportedCompression {
                block_type,
                offset: handle.offset,
                profile,
            }
        });
    };
    if compression == Compression::None {
        return Ok((
            match raw {
                Cow::Borrowed(b) => Cow::Borrowed(&b[..n]),
                Cow::Owned(mut v) => {
                    v.truncate(n);
                    Cow::Owned(v)
                }
            },
            compression,
        ));
    }
    match decompress_into(compression, &raw[..n], &mut out) {
        Ok(()) => Ok((Cow::Owned(out), compression)),
        Err(CodecError::Malformed) => Err(Error::corrupt(
            format!(
                "{} block contents (type {block_type}, profile {profile})",
                compression.codec_name()
            ),
            handle.offset,
        )),
        Err(e) => Err(e.into_error(compression, handle.offset)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BuildOptions, Compression, ReadOptions, Table, TableBuilder};

    /// The `i`th value of [`mixed_snappy_table`]: runs of 25 tiny values, then 25 values of
    /// 9,000 bytes, compressible.
    fn mixed_value(i: usize) -> Vec<u8> {
        let len = if i % 50 < 25 { 3 } else { 9000 };
        (0..len)
            .map(|j| b"abcdefgh"[i.wrapping_add(j / 7) % 8])
            .collect()
    }

    /// A snappy table of `n` keys `000000`, `000001`, … with [`mixed_value`]s, so that its
    /// blocks are of very different sizes; and its keys.
    fn mixed_snappy_table(n: usize) -> (Table<Vec<u8>>, Vec<Vec<u8>>) {
        let keys: Vec<Vec<u8>> = (0..n).map(|i| format!("{i:06}").into_bytes()).collect();
        let options = BuildOptions::default().compression(Compression::Snappy);
        let mut builder = TableBuilder::new(Vec::new(), options).unwrap();
        for (i, k) in keys.iter().enumerate() {
            builder.add(k, &mixed_value(i)).unwrap();
        }
        builder.finish().unwrap();
        let table = Table::open(builder.into_inner(), ReadOptions::default()).unwrap();
        (table, keys)
    }

    /// Uncached gets of snappy blocks share one decompression buffer: blocks of very
    /// different sizes, read in turn and from inside another get's callback, each read back
    /// exactly.
    #[test]
    fn uncached_snappy_blocks_of_mixed_sizes() {
        let value = mixed_value;
        let (table, keys) = mixed_snappy_table(400);
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

    /// Cursors hand their blocks' buffers back to the thread: two cursors over snappy
    /// blocks of very different sizes, one forward and one backward, with gets between
    /// their steps, each read every entry exactly; and a cursor dropped inside a block leaves
    /// the thread a buffer for the next read.
    #[test]
    fn cursors_return_their_block_buffers() {
        let value = mixed_value;
        let (table, keys) = mixed_snappy_table(300);
        let mut forward = table.iter();
        let mut backward = table.iter();
        forward.seek_to_first();
        backward.seek_to_last();
        for i in 0..keys.len() {
            let j = keys.len() - 1 - i;
            assert_eq!(
                (forward.key(), forward.value()),
                (&keys[i][..], &value(i)[..])
            );
            assert_eq!(
                (backward.key(), backward.value()),
                (&keys[j][..], &value(j)[..])
            );
            let other = (i * 53) % keys.len();
            assert_eq!(table.get(&keys[other]).unwrap(), Some(value(other)));
            forward.next();
            backward.prev();
        }
        assert!(!forward.valid() && !backward.valid());
        forward.status().unwrap();
        backward.status().unwrap();
        // A cursor dropped inside a block gives that block's buffer back.
        let mut it = table.iter();
        it.seek_to_first();
        drop(take_block_buf());
        drop(it);
        assert!(take_block_buf().capacity() > 0);
    }
}
