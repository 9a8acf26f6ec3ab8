//! Checking a whole table: every block's checksum and encoding, key order, separators and
//! filters.

#![deny(clippy::arithmetic_side_effects)]

use std::cmp::Ordering;

use crate::block::Block;
use crate::comparator::BytewiseComparator;
use crate::format::{BLOCK_TRAILER_LEN, BlockHandle, Compression, FOOTER_LEN};
use crate::read_block::{check_stored, locate, read_block_contents};
use crate::{Error, ReadAt, Result, Table};

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

impl<R: ReadAt> Table<R> {
    /// Reads and checks every block: checksums (always, whatever the options say), restart
    /// arrays, entry encoding, key order within and across blocks, index separators, and
    /// that the loaded filter admits every key of its blocks. Bypasses the cache.
    ///
    /// # Errors
    /// The first problem found, as [`Error::Corruption`] or [`Error::ChecksumMismatch`];
    /// [`Error::Io`] if reading fails.
    pub fn verify(&self) -> Result<VerifySummary> {
        self.verify_with_progress(&mut |_, _| {})
    }

    /// [`verify`](Self::verify), calling `progress(done, total)` after each data block:
    /// `done` is the file offset checked up to (the end of the block and its trailer) and
    /// `total` the file's size, and once more with both the file's size when all is checked,
    /// so a caller can show how far a long verification has got.
    ///
    /// # Errors
    /// As [`verify`](Self::verify).
    pub fn verify_with_progress(
        &self,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<VerifySummary> {
        let footer = self.properties.footer;
        let cmp = &*self.comparator;
        // The counts below saturate: each block read lies in the file, but the filter handles
        // may point at the same bytes many times over, so no bound on the sums holds.
        let trailer = BLOCK_TRAILER_LEN as u64;
        let mut summary = VerifySummary {
            bytes_read: FOOTER_LEN as u64,
            ..VerifySummary::default()
        };
        #[expect(
            clippy::arithmetic_side_effects,
            reason = "open checked that the file holds a footer"
        )]
        let footer_at = self.file_size - FOOTER_LEN as u64;
        let check = &self.reading.decode.verifying();

        // The index is in memory, decoded at open: its stored bytes are read again for their
        // checksum only, so a verification does not hold a second copy of a large index.
        check_stored(&self.source, self.file_size, &footer.index, footer_at)?;
        let (index, index_compressed) = (&self.index.bytes, self.index.compressed);
        add(
            &mut summary.bytes_read,
            footer.index.size.saturating_add(trailer),
        );
        let index_block =
            Block::new(index).map_err(|e| locate(e, footer.index.offset, index_compressed))?;
        index_block
            .check(cmp)
            .map_err(|e| locate(e, footer.index.offset, index_compressed))?;

        let (metaindex, meta_compression) = read_block_contents(
            &self.source,
            self.file_size,
            &footer.metaindex,
            footer_at,
            check,
        )?;
        add(
            &mut summary.bytes_read,
            footer.metaindex.size.saturating_add(trailer),
        );
        Block::new(&metaindex)
            .and_then(|b| b.check(&BytewiseComparator))
            .map_err(|e| {
                locate(
                    e,
                    footer.metaindex.offset,
                    meta_compression != Compression::None,
                )
            })?;
        for info in &self.properties.filters {
            read_block_contents(
                &self.source,
                self.file_size,
                &info.handle,
                footer.metaindex.offset,
                check,
            )?;
            add(&mut summary.filter_blocks, 1);
            add(
                &mut summary.bytes_read,
                info.handle.size.saturating_add(trailer),
            );
        }

        let mut entries = index_block.iter(cmp);
        entries.seek_to_first();
        let mut previous_key: Option<Vec<u8>> = None;
        // The index key of the block before: a separator below every key of this block, or
        // a get of such a key would be sent to the block before.
        let mut previous_index_key: Option<Vec<u8>> = None;
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
                check,
            )?;
            add(&mut summary.bytes_read, handle.size.saturating_add(trailer));
            add(&mut summary.data_blocks, 1);
            let in_block = |e| locate(e, handle.offset, compressed != Compression::None);
            let block = Block::new(&contents).map_err(in_block)?;
            block.check(cmp).map_err(in_block)?;
            let mut it = block.iter(cmp);
            it.seek_to_first();
            while it.valid() {
                let key = it.key();
                let after_previous = [&previous_key, &previous_index_key]
                    .into_iter()
                    .flatten()
                    .all(|p| cmp.compare(p, key) == Ordering::Less);
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
                add(&mut summary.entries, 1);
                it.next();
            }
            it.status().map_err(in_block)?;
            previous_index_key = Some(index_key);
            progress(previous_end.min(self.file_size), self.file_size);
            entries.next();
        }
        entries
            .status()
            .map_err(|e| locate(e, footer.index.offset, index_compressed))?;
        progress(self.file_size, self.file_size);
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

/// Adds `n` to a count of [`VerifySummary`], saturating.
fn add(count: &mut u64, n: u64) {
    *count = count.saturating_add(n);
}
