//! LevelDB's filter block (table/filter_block.cc): `FilterBlockBuilder` and
//! `FilterBlockReader`, driven with a [`BloomFilterPolicy`].
#![expect(unsafe_code, reason = "calls the shim")]

use core::marker::PhantomData;
use core::ptr::NonNull;

use crate::bloom::BloomFilterPolicy;
use crate::error::{ErrSlot, take_bytes};
use crate::{Error, Result, ffi};

/// LevelDB generates one filter per `2^FILTER_BASE_LG` bytes of data-block offsets.
pub const FILTER_BASE_LG: u8 = 11;

/// The largest data-block offset [`FilterBlockBuilder::start_block`] passes to LevelDB
/// (exclusive): 64 GiB.
///
/// LevelDB appends an empty filter for every 2 KiB it skips, so one call with an absurd
/// offset would allocate without bound; below this limit the offsets array stays under
/// 128 MiB (2^36 / 2^11 filters × 4 bytes).
pub const MAX_BLOCK_OFFSET: u64 = 1 << 36;

/// `leveldb::FilterBlockBuilder` over a borrowed policy.
///
/// Call order: `(start_block add_key*)* finish`.
#[derive(Debug)]
pub struct FilterBlockBuilder<'p> {
    raw: NonNull<ffi::LtFilterBuilder>,
    _policy: PhantomData<&'p BloomFilterPolicy>,
}

impl<'p> FilterBlockBuilder<'p> {
    /// `FilterBlockBuilder(policy)`.
    ///
    /// # Panics
    ///
    /// If LevelDB is not linked into this build or the builder cannot be allocated.
    pub fn new(policy: &'p BloomFilterPolicy) -> Self {
        ffi::ensure_available();
        // SAFETY: `policy` is live and, through the `'p` borrow, outlives the builder, which
        // keeps a pointer to it.
        let raw = unsafe { ffi::lt_filter_builder_new(policy.raw()) };
        let raw = NonNull::new(raw).expect("interop: allocating a filter block builder failed");
        FilterBlockBuilder {
            raw,
            _policy: PhantomData,
        }
    }

    /// `StartBlock(block_offset)`: generates the filters of every 2 KiB range before the one
    /// `block_offset` falls in.
    ///
    /// # Errors
    ///
    /// [`Error::Rejected`] when `block_offset` falls in a range whose filter was already
    /// generated (LevelDB asserts against it) or is at or past [`MAX_BLOCK_OFFSET`]. The
    /// builder is unchanged then.
    pub fn start_block(&mut self, block_offset: u64) -> Result<()> {
        let mut err = ErrSlot::new();
        // SAFETY: `raw` is a live builder owned by `self`; `err` is a valid out-parameter.
        let code = unsafe {
            ffi::lt_filter_builder_start_block(self.raw.as_ptr(), block_offset, err.as_out())
        };
        err.check(code)
    }

    /// `AddKey(key)`: adds `key` to the filter of the current block.
    ///
    /// # Panics
    ///
    /// If LevelDB runs out of memory.
    pub fn add_key(&mut self, key: &[u8]) {
        let mut err = ErrSlot::new();
        // SAFETY: `raw` is live; LevelDB copies the `key.len()` bytes at `key` before
        // returning.
        let code = unsafe {
            ffi::lt_filter_builder_add_key(self.raw.as_ptr(), key.as_ptr(), key.len(), err.as_out())
        };
        if let Err(e) = err.check(code) {
            panic!("{e}");
        }
    }

    /// `Finish()`: generates the last filter and returns the whole block.
    ///
    /// # Errors
    ///
    /// [`Error::Exception`] if LevelDB runs out of memory.
    pub fn finish(self) -> Result<Vec<u8>> {
        let mut out = ffi::LtBytes::empty();
        let mut err = ErrSlot::new();
        // SAFETY: `raw` is live and not finished (finish consumes `self`); `out` and `err`
        // are valid out-parameters.
        let code =
            unsafe { ffi::lt_filter_builder_finish(self.raw.as_ptr(), &mut out, err.as_out()) };
        err.check(code)?;
        Ok(take_bytes(out))
    }
}

impl Drop for FilterBlockBuilder<'_> {
    fn drop(&mut self) {
        // SAFETY: `raw` came from `lt_filter_builder_new` and is freed only here.
        unsafe { ffi::lt_filter_builder_free(self.raw.as_ptr()) };
    }
}

/// `leveldb::FilterBlockReader` over borrowed block contents.
///
/// Like LevelDB, it accepts any bytes: malformed contents answer "may match".
#[derive(Debug)]
pub struct FilterBlockReader<'a> {
    raw: NonNull<ffi::LtFilterReader>,
    base_lg: Option<u8>,
    _borrows: PhantomData<(&'a BloomFilterPolicy, &'a [u8])>,
}

impl<'a> FilterBlockReader<'a> {
    /// `FilterBlockReader(policy, contents)`.
    ///
    /// # Panics
    ///
    /// If LevelDB is not linked into this build or the reader cannot be allocated.
    pub fn new(policy: &'a BloomFilterPolicy, contents: &'a [u8]) -> Self {
        ffi::ensure_available();
        // SAFETY: policy and contents outlive the reader (`'a`), which keeps pointers to
        // both; LevelDB reads at most `contents.len()` bytes.
        let raw =
            unsafe { ffi::lt_filter_reader_new(policy.raw(), contents.as_ptr(), contents.len()) };
        let raw = NonNull::new(raw).expect("interop: allocating a filter block reader failed");
        // LevelDB takes the encoding parameter from the last byte of any block of 5 bytes or
        // more, before it validates the rest.
        let base_lg = if contents.len() >= 5 {
            contents.last().copied()
        } else {
            None
        };
        FilterBlockReader {
            raw,
            base_lg,
            _borrows: PhantomData,
        }
    }

    /// `KeyMayMatch(block_offset, key)`.
    ///
    /// # Errors
    ///
    /// [`Error::Rejected`] when the block's encoding parameter (its last byte) is 64 or more:
    /// LevelDB shifts the 64-bit offset right by it, which is undefined behaviour in C++, so
    /// LevelDB has no defined answer and is not asked.
    pub fn key_may_match(&self, block_offset: u64, key: &[u8]) -> Result<bool> {
        if let Some(lg) = self.base_lg.filter(|&lg| lg >= 64) {
            return Err(Error::rejected(format!(
                "filter block base_lg {lg} makes LevelDB's offset shift undefined"
            )));
        }
        // SAFETY: `raw` is a live reader whose borrowed policy and contents outlive `self`;
        // the shift count is below 64 (checked above), and LevelDB bounds-checks every other
        // read of the contents.
        let r = unsafe {
            ffi::lt_filter_reader_key_may_match(
                self.raw.as_ptr(),
                block_offset,
                key.as_ptr(),
                key.len(),
            )
        };
        Ok(r != 0)
    }
}

impl Drop for FilterBlockReader<'_> {
    fn drop(&mut self) {
        // SAFETY: `raw` came from `lt_filter_reader_new` and is freed only here.
        unsafe { ffi::lt_filter_reader_free(self.raw.as_ptr()) };
    }
}
