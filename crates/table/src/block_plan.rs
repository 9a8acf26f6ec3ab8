//! Planning reads before doing them: which data blocks an operation needs (the index and
//! filter consulted, no I/O), and answering it from block bytes the caller fetched.
//!
//! A reader whose source is slow per request (object storage, a network) first asks
//! [`Table::block_to_read`] or [`Table::blocks_in_range`], fetches those byte ranges its own
//! way (one request, coalesced, concurrently), then hands the stored bytes to
//! [`Table::get_from_block`] or [`Table::entries_of_block`]. The checksum, decompression,
//! block format and cache are the table's own, exactly as for [`Table::get`].

#![deny(clippy::arithmetic_side_effects)]

use std::cmp::Ordering;
use std::io;
use std::ops::Bound;
use std::sync::Arc;

use crate::block::{Block, Cursor, Layout};
use crate::cache::{CachedBlock, take_spare};
use crate::counters::Counter;
use crate::format::{BLOCK_TRAILER_LEN, BlockHandle, Compression};
use crate::read_block::{Decode, locate, read_block_contents_into};
use crate::{ReadAt, Result, Table};

/// A block's stored bytes (contents and trailer) placed at the block's offset in a file of
/// `file_size` bytes, so the table's block reader can read them as it reads a file.
struct Placed<'a> {
    bytes: &'a [u8],
    offset: u64,
    file_size: u64,
}

impl ReadAt for Placed<'_> {
    fn size(&self) -> io::Result<u64> {
        Ok(self.file_size)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let start = offset
            .checked_sub(self.offset)
            .and_then(|s| usize::try_from(s).ok());
        let src = start.and_then(|s| self.bytes.get(s..s.checked_add(buf.len())?));
        match src {
            Some(src) => {
                buf.copy_from_slice(src);
                Ok(())
            }
            None => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the fetched bytes do not cover the block",
            )),
        }
    }
}

/// The stored length of the block `handle` points to (contents and trailer), or `None` if it
/// does not fit a `usize`.
pub fn stored_len(handle: &BlockHandle) -> Option<usize> {
    usize::try_from(handle.size)
        .ok()?
        .checked_add(BLOCK_TRAILER_LEN)
}

/// A data block decoded from its stored bytes (checksum checked if asked, decompressed),
/// ready to iterate with [`Table::entries_of_decoded`]; decoding may run on another thread.
#[derive(Clone)]
pub struct DecodedBlock {
    block: Arc<CachedBlock>,
    handle: BlockHandle,
}

impl std::fmt::Debug for DecodedBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecodedBlock")
            .field("handle", &self.handle)
            .field("len", &self.block.data.len())
            .finish()
    }
}

impl<R: ReadAt> Table<R> {
    /// The data block a get of `key` must read, or `None` when no read is needed: the key
    /// lies past the last block, or the filter rules it out. Consults the index and the
    /// filter only; reads nothing.
    ///
    /// # Errors
    /// [`Error::Corruption`](crate::Error::Corruption) for an index entry that does not decode.
    pub fn block_to_read(&self, key: &[u8]) -> Result<Option<BlockHandle>> {
        let Some(at) = self.block_for(&*self.comparator, key)? else {
            return Ok(None);
        };
        Ok(self.filter_admits(&at, key).then_some(at.handle))
    }

    /// Whether the block cache holds the data block at `handle`.
    pub fn block_is_cached(&self, handle: &BlockHandle) -> bool {
        self.cache
            .slot
            .as_ref()
            .is_some_and(|c| c.get(self.cache.id, handle.offset).is_some())
    }

    /// The data blocks that may hold keys in `(start, end)`, in file order: from the block
    /// a seek to `start` lands on through the first block whose last key reaches `end`.
    /// Reads nothing.
    ///
    /// # Errors
    /// [`Error::Corruption`](crate::Error::Corruption) for an index entry that does not decode.
    pub fn blocks_in_range(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
    ) -> Result<Vec<BlockHandle>> {
        let cmp = &*self.comparator;
        let mut index = Cursor::new(self.index.layout, Vec::new());
        match start {
            Bound::Included(k) | Bound::Excluded(k) => self.seek_index(&mut index, cmp, k),
            Bound::Unbounded => index.seek_to_first(&self.index.bytes),
        }
        let mut handles = Vec::new();
        while index.valid() {
            let mut value = index.value(&self.index.bytes);
            let handle = BlockHandle::decode_from(&mut value)
                .map_err(|e| self.locate_in_index(e, index.entry_offset()))?;
            handles.push(handle);
            // The index key is at or past every key of its block: once it reaches `end`,
            // later blocks hold only keys past the range.
            let past = match end {
                Bound::Included(k) => cmp.compare(index.key(), k) != Ordering::Less,
                Bound::Excluded(k) => cmp.compare(index.key(), k) != Ordering::Less,
                Bound::Unbounded => false,
            };
            if past {
                break;
            }
            index.next(&self.index.bytes);
        }
        index.status().map_err(|e| self.locate_index_error(e))?;
        Ok(handles)
    }

    /// Reads the block `handle` points to out of `stored` (its stored bytes, contents and
    /// trailer, as fetched from the file): checks the checksum if the read options ask,
    /// decompresses, and fills the block cache if configured.
    fn block_from_stored(&self, handle: &BlockHandle, stored: &[u8]) -> Result<Arc<CachedBlock>> {
        if let Some(block) = self.cache_lookup(handle) {
            return Ok(block);
        }
        self.counters.bump(Counter::DataBlocksRead, 1);
        self.counters.bump(
            Counter::DataBytesRead,
            handle.size.saturating_add(BLOCK_TRAILER_LEN as u64),
        );
        let placed = Placed {
            bytes: stored,
            offset: handle.offset,
            file_size: self.file_size,
        };
        let index_at = self.properties.footer.index.offset;
        // The table's checksum policy and codec profile.
        let decode = Decode {
            verify: self.reading.verify_checksums,
            profile: self.reading.decode.profile,
        };
        // A block bound for the cache decodes into one of the thread's spare buffers.
        let fill = self.cache.slot.is_some() && self.cache.fill;
        let out = if fill { take_spare() } else { Vec::new() };
        let (contents, compression) =
            read_block_contents_into(&placed, self.file_size, handle, index_at, &decode, out)?;
        let compressed = compression != Compression::None;
        let layout = Layout::parse(&contents).map_err(|e| locate(e, handle.offset, compressed))?;
        let block = CachedBlock::new(contents.into_owned(), layout, compressed);
        if let Some(cache) = self.cache.slot.as_ref().filter(|_| fill) {
            cache.insert(self.cache.id, handle.offset, Arc::clone(&block));
        }
        Ok(block)
    }

    /// Answers a get of `key` from the data block `handle` (as
    /// [`block_to_read`](Self::block_to_read) named it), given its stored bytes. Gives the
    /// same answer [`get`](Self::get) would.
    ///
    /// # Errors
    /// [`Error::ChecksumMismatch`](crate::Error::ChecksumMismatch) or [`Error::Corruption`](crate::Error::Corruption) for bad block bytes;
    /// [`Error::Io`](crate::Error::Io) when `stored` is shorter than the block.
    pub fn get_from_block(
        &self,
        key: &[u8],
        handle: &BlockHandle,
        stored: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        let block = self.block_from_stored(handle, stored)?;
        self.get_in_block(key, handle, &block)
    }

    /// Answers a get of `key` from the data block `handle` if the block cache holds it, as
    /// [`get_from_block`](Self::get_from_block) would; `None` when the cache does not hold
    /// the block (the caller then fetches it).
    pub fn get_from_cache(
        &self,
        key: &[u8],
        handle: &BlockHandle,
    ) -> Option<Result<Option<Vec<u8>>>> {
        let block = self.cache_lookup(handle)?;
        Some(self.get_in_block(key, handle, &block))
    }

    /// The value of `key` in `block`, the decoded data block `handle` points to.
    fn get_in_block(
        &self,
        key: &[u8],
        handle: &BlockHandle,
        block: &CachedBlock,
    ) -> Result<Option<Vec<u8>>> {
        let cmp = &*self.comparator;
        let mut cursor = Cursor::new(block.layout, Vec::new());
        cursor.seek(&block.data, cmp, key);
        if cursor.valid() {
            let found = cmp.compare(cursor.key(), key) == Ordering::Equal;
            Ok(found.then(|| cursor.value(&block.data).to_vec()))
        } else {
            cursor
                .status()
                .map(|()| None)
                .map_err(|e| locate(e, handle.offset, block.compressed))
        }
    }

    /// Calls `f` with each entry of the data block `handle`, in order, given its stored
    /// bytes, until `f` returns `false`.
    ///
    /// # Errors
    /// As [`get_from_block`](Self::get_from_block).
    pub fn entries_of_block(
        &self,
        handle: &BlockHandle,
        stored: &[u8],
        f: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        let block = self.decode_block(handle, stored)?;
        self.entries_of_decoded(&block, f)
    }

    /// Decodes the data block `handle` from its stored bytes, for
    /// [`entries_of_decoded`](Self::entries_of_decoded).
    ///
    /// # Errors
    /// As [`get_from_block`](Self::get_from_block).
    pub fn decode_block(&self, handle: &BlockHandle, stored: &[u8]) -> Result<DecodedBlock> {
        Ok(DecodedBlock {
            block: self.block_from_stored(handle, stored)?,
            handle: *handle,
        })
    }

    /// Calls `f` with each entry of a decoded block, in order, until `f` returns `false`.
    ///
    /// # Errors
    /// [`Error::Corruption`](crate::Error::Corruption) for a malformed entry.
    pub fn entries_of_decoded(
        &self,
        decoded: &DecodedBlock,
        mut f: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        let (block, handle) = (&decoded.block, &decoded.handle);
        let cmp = &*self.comparator;
        let mut it = Block::from_parts(&block.data, block.layout).iter(cmp);
        it.seek_to_first();
        while it.valid() {
            if !f(it.key(), it.value()) {
                return Ok(());
            }
            it.next();
        }
        it.status()
            .map_err(|e| locate(e, handle.offset, block.compressed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BloomFilterPolicy, BuildOptions, Compression, Error, ReadOptions, TableBuilder};

    fn table(compression: Compression) -> (Vec<u8>, Table<Vec<u8>>) {
        let options = BuildOptions::default()
            .compression(compression)
            .filter_policy(BloomFilterPolicy::new(10))
            .block_size(256);
        let mut b = TableBuilder::new(Vec::new(), options).unwrap();
        for i in 0..2000u32 {
            b.add(format!("k{i:06}").as_bytes(), format!("v{i}").as_bytes())
                .unwrap();
        }
        b.finish().unwrap();
        let bytes = b.into_inner();
        let opts = ReadOptions::default().filter_policy(BloomFilterPolicy::new(10));
        (bytes.clone(), Table::open(bytes, opts).unwrap())
    }

    fn stored<'a>(file: &'a [u8], h: &BlockHandle) -> &'a [u8] {
        let start = h.offset as usize;
        &file[start..][..stored_len(h).unwrap()]
    }

    #[test]
    fn planned_gets_answer_as_get_does() {
        for compression in [Compression::None, Compression::Snappy] {
            let (file, t) = table(compression);
            for i in (0..2100u32).step_by(7) {
                let key = format!("k{i:06}");
                let want = t.get(key.as_bytes()).unwrap();
                let got = match t.block_to_read(key.as_bytes()).unwrap() {
                    Some(h) => t
                        .get_from_block(key.as_bytes(), &h, stored(&file, &h))
                        .unwrap(),
                    None => None,
                };
                assert_eq!(got, want, "{key}");
            }
            // Past the last block, nothing is read.
            assert!(t.block_to_read(b"z").unwrap().is_none());
        }
    }

    #[test]
    fn a_bad_block_is_an_error_not_a_value() {
        let (file, t) = table(Compression::None);
        let h = t.block_to_read(b"k000500").unwrap().unwrap();
        let mut bad = stored(&file, &h).to_vec();
        bad[3] ^= 1;
        assert!(matches!(
            t.get_from_block(b"k000500", &h, &bad),
            Err(Error::ChecksumMismatch { .. })
        ));
        let short = &stored(&file, &h)[..10];
        assert!(t.get_from_block(b"k000500", &h, short).is_err());
    }

    #[test]
    fn ranges_cover_their_keys() {
        let (file, t) = table(Compression::Snappy);
        let (lo, hi) = (b"k000333".as_slice(), b"k001234".as_slice());
        let blocks = t
            .blocks_in_range(Bound::Included(lo), Bound::Excluded(hi))
            .unwrap();
        let mut keys = Vec::new();
        for h in &blocks {
            t.entries_of_block(h, stored(&file, h), |k, _| {
                if k >= lo && k < hi {
                    keys.push(k.to_vec());
                }
                true
            })
            .unwrap();
        }
        let want: Vec<Vec<u8>> = (333..1234u32)
            .map(|i| format!("k{i:06}").into_bytes())
            .collect();
        assert_eq!(keys, want);
        let all = t
            .blocks_in_range(Bound::Unbounded, Bound::Unbounded)
            .unwrap();
        assert_eq!(all.len() as u64, t.properties().data_blocks);
        assert!(blocks.len() < all.len() / 2);
    }
}
