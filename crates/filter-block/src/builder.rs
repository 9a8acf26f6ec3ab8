use alloc::vec::Vec;

use leveltable_filter_policy::FilterPolicy;

use crate::format::{FILTER_BASE_LG, put_fixed32};
use crate::{Error, Result};

/// The largest data-block offset [`FilterBlockBuilder::start_block`] accepts (exclusive):
/// 64 GiB.
///
/// LevelDB emits an empty filter (a 4-byte offset entry) for every 2 KiB of offsets it passes,
/// so an absurd offset would silently build an enormous block: an offset near 2^40 means
/// half a billion entries and 2 GiB of memory. Below this limit the offset array stays under
/// 128 MiB, far beyond any real table (LevelDB's own files are a few MiB; a 64 GiB table
/// would need 16 million data blocks of 4 KiB).
pub const MAX_BLOCK_OFFSET: u64 = 1 << 36;

/// Builds the filter block of a table.
///
/// The allowed call order is `(start_block add_key*)* finish`: `start_block` is called with
/// the offset of each data block before its keys are added, in file order. Keys added after
/// `start_block(o)` belong to the filter covering `o`; every 2 KiB range of offsets gets its
/// own filter, empty when no block starts in it.
///
/// The builder owns its policy, which may be a reference (`&P`) or a shared pointer
/// (`Arc<dyn FilterPolicy>`).
#[derive(Debug)]
pub struct FilterBlockBuilder<P: FilterPolicy> {
    policy: P,
    /// Keys added since the last filter was generated, concatenated.
    keys: Vec<u8>,
    /// Start of each pending key in `keys`.
    starts: Vec<usize>,
    /// The filters generated so far; the block's output in progress.
    result: Vec<u8>,
    /// Start of each generated filter in `result`.
    filter_offsets: Vec<u32>,
}

impl<P: FilterPolicy> FilterBlockBuilder<P> {
    /// A builder whose filters are made by `policy`.
    pub fn new(policy: P) -> Self {
        FilterBlockBuilder {
            policy,
            keys: Vec::new(),
            starts: Vec::new(),
            result: Vec::new(),
            filter_offsets: Vec::new(),
        }
    }

    /// The policy making this block's filters.
    pub fn policy(&self) -> &P {
        &self.policy
    }

    /// Starts the data block at `block_offset`; keys added next belong to it.
    ///
    /// Generates the filters of every 2 KiB range before the one `block_offset` falls in.
    ///
    /// # Errors
    ///
    /// [`Error::OffsetBackwards`] if `block_offset` lies in a range whose filter was already
    /// generated, [`Error::OffsetTooLarge`] if it is at or past [`MAX_BLOCK_OFFSET`], and
    /// [`Error::TooLarge`] if the filters outgrow the block's 32-bit offsets. After an error
    /// the builder is unchanged.
    pub fn start_block(&mut self, block_offset: u64) -> Result<()> {
        if block_offset >= MAX_BLOCK_OFFSET {
            return Err(Error::OffsetTooLarge {
                offset: block_offset,
                max: MAX_BLOCK_OFFSET,
            });
        }
        // Invariant: below MAX_BLOCK_OFFSET the index fits in usize on every target.
        let filter_index = (block_offset >> FILTER_BASE_LG) as usize;
        let generated = self.filter_offsets.len();
        if filter_index < generated {
            return Err(Error::OffsetBackwards {
                offset: block_offset,
                min: (generated as u64) << FILTER_BASE_LG,
            });
        }
        if filter_index > generated {
            self.check_size()?;
            self.filter_offsets.reserve(filter_index - generated);
            self.generate_filter();
            // Every further range before `filter_index` holds no block: its filter is empty.
            let offset = self.result.len() as u32;
            self.filter_offsets.resize(filter_index, offset);
        }
        Ok(())
    }

    /// Adds `key` to the filter of the current data block.
    pub fn add_key(&mut self, key: &[u8]) {
        self.starts.push(self.keys.len());
        self.keys.extend_from_slice(key);
    }

    /// Generates the last filter and returns the whole block.
    ///
    /// # Panics
    ///
    /// If the filters exceed the 4 GiB the block's 32-bit offsets can address. Offsets below
    /// [`MAX_BLOCK_OFFSET`] with any realistic number of keys stay far below that;
    /// `start_block` reports the limit as an error when it is reached earlier.
    pub fn finish(mut self) -> Vec<u8> {
        if !self.starts.is_empty() {
            self.generate_filter();
        }
        let array_offset = u32::try_from(self.result.len())
            .expect("filter block: filters exceed the 4 GiB a filter block can address");
        let mut block = self.result;
        block.reserve(self.filter_offsets.len() * 4 + 5);
        for &offset in &self.filter_offsets {
            put_fixed32(&mut block, offset);
        }
        put_fixed32(&mut block, array_offset);
        block.push(FILTER_BASE_LG);
        block
    }

    /// Fails if the filters so far can no longer be addressed by 32-bit offsets.
    fn check_size(&self) -> Result<()> {
        // The next filter starts at `result.len()`, which must fit in a u32 entry.
        if u32::try_from(self.result.len()).is_err() {
            return Err(Error::TooLarge {
                size: self.result.len() as u64,
            });
        }
        Ok(())
    }

    /// Turns the pending keys into the next filter (empty if there are none).
    fn generate_filter(&mut self) {
        // Invariant: check_size ran before, so the start offset fits.
        self.filter_offsets.push(self.result.len() as u32);
        if self.starts.is_empty() {
            return;
        }
        let keys: Vec<&[u8]> = self
            .starts
            .iter()
            .enumerate()
            .map(|(i, &start)| {
                let end = self.starts.get(i + 1).copied().unwrap_or(self.keys.len());
                &self.keys[start..end]
            })
            .collect();
        self.policy.create_filter(&keys, &mut self.result);
        self.keys.clear();
        self.starts.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FilterBlockReader;
    use alloc::format;
    use alloc::string::String;
    use leveltable_filter_policy::BloomFilterPolicy;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    // Golden values: blocks made by LevelDB 1.23's FilterBlockBuilder with a 10-bit Bloom.
    #[test]
    fn empty_builder_matches_leveldb() {
        let policy = BloomFilterPolicy::new(10);
        let block = FilterBlockBuilder::new(&policy).finish();
        assert_eq!(hex(&block), "000000000b");
        let reader = FilterBlockReader::new(&policy, &block);
        assert!(reader.key_may_match(0, b"foo"));
        assert!(reader.key_may_match(100_000, b"foo"));
    }

    #[test]
    fn single_chunk_matches_leveldb() -> Result<()> {
        let policy = BloomFilterPolicy::new(10);
        let mut builder = FilterBlockBuilder::new(&policy);
        builder.start_block(100)?;
        builder.add_key(b"foo");
        builder.add_key(b"bar");
        builder.add_key(b"box");
        builder.start_block(200)?;
        builder.add_key(b"box");
        builder.start_block(300)?;
        builder.add_key(b"hello");
        let block = builder.finish();
        assert_eq!(hex(&block), "a14912050c1062480600000000090000000b");

        let reader = FilterBlockReader::new(&policy, &block);
        for key in [&b"foo"[..], b"bar", b"box", b"hello"] {
            assert!(reader.key_may_match(100, key));
        }
        assert!(!reader.key_may_match(100, b"missing"));
        assert!(!reader.key_may_match(100, b"other"));
        Ok(())
    }

    #[test]
    fn multi_chunk_matches_leveldb() -> Result<()> {
        let policy = BloomFilterPolicy::new(10);
        let mut builder = FilterBlockBuilder::new(&policy);
        // First filter.
        builder.start_block(0)?;
        builder.add_key(b"foo");
        builder.start_block(2000)?;
        builder.add_key(b"bar");
        // Second filter.
        builder.start_block(3100)?;
        builder.add_key(b"box");
        // Third filter is empty; last filter.
        builder.start_block(9000)?;
        builder.add_key(b"box");
        builder.add_key(b"hello");
        let block = builder.finish();
        assert_eq!(
            hex(&block),
            "214912000010420806800000040810204006814000050c10604006\
             000000000900000012000000120000001200000\
             01b0000000b"
        );

        let reader = FilterBlockReader::new(&policy, &block);
        assert!(reader.key_may_match(0, b"foo"));
        assert!(reader.key_may_match(2000, b"bar"));
        assert!(!reader.key_may_match(0, b"box"));
        assert!(!reader.key_may_match(0, b"hello"));
        assert!(reader.key_may_match(3100, b"box"));
        assert!(!reader.key_may_match(3100, b"foo"));
        assert!(!reader.key_may_match(3100, b"bar"));
        assert!(!reader.key_may_match(3100, b"hello"));
        // The empty filter of 4096..6143 matches nothing.
        assert!(!reader.key_may_match(4100, b"foo"));
        assert!(!reader.key_may_match(4100, b"bar"));
        assert!(!reader.key_may_match(4100, b"box"));
        assert!(!reader.key_may_match(4100, b"hello"));
        assert!(reader.key_may_match(9000, b"box"));
        assert!(reader.key_may_match(9000, b"hello"));
        assert!(!reader.key_may_match(9000, b"foo"));
        assert!(!reader.key_may_match(9000, b"bar"));
        // Past the last filter: may match.
        assert!(reader.key_may_match(1 << 20, b"anything"));
        Ok(())
    }

    #[test]
    fn offsets_going_backwards_are_refused() -> Result<()> {
        let policy = BloomFilterPolicy::new(10);
        let mut builder = FilterBlockBuilder::new(&policy);
        builder.start_block(5000)?;
        builder.add_key(b"a");
        // Same 2 KiB range: fine, even if lower.
        builder.start_block(4096)?;
        assert_eq!(
            builder.start_block(100),
            Err(Error::OffsetBackwards {
                offset: 100,
                min: 4096
            })
        );
        // The builder is still usable and produces the same block as without the error.
        builder.add_key(b"b");
        let block = builder.finish();
        let mut expected = FilterBlockBuilder::new(&policy);
        expected.start_block(5000)?;
        expected.add_key(b"a");
        expected.add_key(b"b");
        assert_eq!(block, expected.finish());
        Ok(())
    }

    #[test]
    fn large_offsets_emit_one_empty_filter_per_2k() -> Result<()> {
        let policy = BloomFilterPolicy::new(10);
        let mut builder = FilterBlockBuilder::new(&policy);
        builder.start_block(0)?;
        builder.add_key(b"first");
        // A 64 MiB jump: 32768 filters, all but the first empty.
        let far = 64 << 20;
        builder.start_block(far)?;
        builder.add_key(b"last");
        let block = builder.finish();
        let filters = (far >> FILTER_BASE_LG) as usize + 1;
        let first_filter = 9; // 64 bits + the probe count
        assert_eq!(block.len(), 2 * first_filter + filters * 4 + 5);
        let reader = FilterBlockReader::new(&policy, &block);
        assert!(reader.key_may_match(0, b"first"));
        assert!(reader.key_may_match(far, b"last"));
        assert!(!reader.key_may_match(far / 2, b"first"));
        Ok(())
    }

    #[test]
    fn absurd_offsets_are_an_error_not_an_allocation() {
        let policy = BloomFilterPolicy::new(10);
        let mut builder = FilterBlockBuilder::new(&policy);
        assert_eq!(
            builder.start_block(1 << 40),
            Err(Error::OffsetTooLarge {
                offset: 1 << 40,
                max: MAX_BLOCK_OFFSET
            })
        );
        assert_eq!(
            builder.start_block(MAX_BLOCK_OFFSET),
            Err(Error::OffsetTooLarge {
                offset: MAX_BLOCK_OFFSET,
                max: MAX_BLOCK_OFFSET
            })
        );
        assert!(builder.filter_offsets.capacity() < 1024);
        assert_eq!(hex(&builder.finish()), "000000000b");
    }

    #[test]
    fn error_messages_name_the_problem() {
        let e = Error::OffsetBackwards {
            offset: 1,
            min: 2048,
        };
        assert_eq!(
            format!("{e}"),
            "filter block: block offset 1 goes backwards (must be at least 2048)"
        );
        let e = Error::OffsetTooLarge {
            offset: 1 << 40,
            max: MAX_BLOCK_OFFSET,
        };
        assert_eq!(
            format!("{e}"),
            "filter block: block offset 1099511627776 is beyond the supported limit 68719476736"
        );
    }
}
