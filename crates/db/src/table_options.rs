//! How the tables of a database are laid out: LevelDB's table options (`Options::block_size`,
//! `block_restart_interval`, `compression`, `filter_policy`), set once for every writer of
//! the crate — a database open for writing ([`WritableOptions::table`]) and a bulk build
//! ([`BulkOptions::table`]) — and checked here. They become a table builder's
//! [`BuildOptions`](leveltable_table::BuildOptions) in `dbformat.rs`, beside the
//! internal-key comparator and filter they are wrapped in.
//!
//! [`WritableOptions::table`]: crate::WritableOptions::table
//! [`BulkOptions::table`]: crate::BulkOptions::table

use leveltable_filter_policy::BloomFilterPolicy;
use leveltable_table::{Compression, DEFAULT_BLOCK_RESTART_INTERVAL, DEFAULT_BLOCK_SIZE};

use crate::{Error, Result};

/// The most bits per key of a Bloom filter (LevelDB's or the cache-local one) a table is
/// written with: a filter holds `bits × keys` bits for the keys of a table, built in memory,
/// and past 64 bits the false-positive rate (about one in ten million at 64) gains nothing
/// worth the memory.
pub const MAX_BLOOM_BITS_PER_KEY: usize = 64;

/// The name [`Error::OptionOutOfRange`] gives the bits per key of
/// [`TableOptions::filter_policy`].
pub const BLOOM_BITS_OPTION: &str = "filter_policy bits per key";

/// The name [`Error::OptionOutOfRange`] gives
/// [`TableOptions::cache_local_bits_per_key`].
pub const CACHE_LOCAL_BITS_OPTION: &str = "cache_local_bits_per_key";

/// How each table file is laid out. [`Default`] is LevelDB's defaults: 4 KiB blocks, a
/// restart point every 16 keys, Snappy, no filter. Each front end starts from its own
/// default filter: none for a database open for writing
/// ([`WritableOptions`](crate::WritableOptions), as LevelDB), LevelDB's Bloom filter at 10
/// bits per key for a bulk build ([`BulkOptions`](crate::BulkOptions), whose databases are
/// built to be read).
///
/// ```
/// use leveltable_db::{TableOptions, WritableOptions};
/// use leveltable_table::{BloomFilterPolicy, Compression};
///
/// let table = TableOptions::default()
///     .block_size(16 << 10)
///     .compression(Compression::None)
///     .filter_policy(Some(BloomFilterPolicy::new(10)));
/// let options = WritableOptions::default().table(table);
/// assert_eq!(options.table.block_size, 16 << 10);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableOptions {
    /// Approximate uncompressed size of a data block, at least 1. Default: 4096. A database
    /// open for writing clamps it to 1 KiB ..= 4 MiB, as LevelDB's `SanitizeOptions`.
    pub block_size: usize,
    /// Keys between restart points in a data block, at least 1. Default: 16.
    pub block_restart_interval: usize,
    /// Compression of data, index and metaindex blocks. Default: Snappy. LevelDB 1.23 reads
    /// only Snappy and none; Mojang's zlib and raw deflate need the `zlib` feature, zstd the
    /// `zstd` feature.
    pub compression: Compression,
    /// LevelDB's Bloom filter (`NewBloomFilterPolicy(bits)`) over user keys, at most
    /// [`MAX_BLOOM_BITS_PER_KEY`] bits per key, or none. LevelDB uses it when the database is
    /// opened with a filter policy of that name. Default: none (a bulk build's: 10 bits).
    pub filter_policy: Option<BloomFilterPolicy>,
    /// Bits per key (at most [`MAX_BLOOM_BITS_PER_KEY`]) of a second, cache-local filter
    /// (`leveltable.LocalBloom64`) over user keys, that leveltable's readers prefer and
    /// LevelDB ignores; none keeps the tables byte for byte LevelDB's. Default: none.
    pub cache_local_bits_per_key: Option<usize>,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            block_size: DEFAULT_BLOCK_SIZE,
            block_restart_interval: DEFAULT_BLOCK_RESTART_INTERVAL,
            compression: Compression::Snappy,
            filter_policy: None,
            cache_local_bits_per_key: None,
        }
    }
}

impl TableOptions {
    /// Sets [`block_size`](Self::block_size).
    pub fn block_size(mut self, bytes: usize) -> Self {
        self.block_size = bytes;
        self
    }

    /// Sets [`block_restart_interval`](Self::block_restart_interval).
    pub fn block_restart_interval(mut self, entries: usize) -> Self {
        self.block_restart_interval = entries;
        self
    }

    /// Sets [`compression`](Self::compression).
    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// Sets [`filter_policy`](Self::filter_policy).
    pub fn filter_policy(mut self, policy: Option<BloomFilterPolicy>) -> Self {
        self.filter_policy = policy;
        self
    }

    /// Sets [`cache_local_bits_per_key`](Self::cache_local_bits_per_key).
    pub fn cache_local_bits_per_key(mut self, bits: Option<usize>) -> Self {
        self.cache_local_bits_per_key = bits;
        self
    }

    /// Checks the values are usable.
    ///
    /// # Errors
    /// [`Error::OptionOutOfRange`], naming the option by its field name (the filters by
    /// [`BLOOM_BITS_OPTION`] and [`CACHE_LOCAL_BITS_OPTION`]), for a zero block size or
    /// restart interval, or a filter of more than [`MAX_BLOOM_BITS_PER_KEY`] bits per key.
    pub fn check(&self) -> Result<()> {
        let out_of_range = |option, value: usize, min, max| Error::OptionOutOfRange {
            option,
            value: u64::try_from(value).unwrap_or(u64::MAX),
            min,
            max,
        };
        if self.block_size == 0 {
            return Err(out_of_range("block_size", 0, 1, u64::MAX));
        }
        if self.block_restart_interval == 0 {
            return Err(out_of_range("block_restart_interval", 0, 1, u64::MAX));
        }
        let max = MAX_BLOOM_BITS_PER_KEY;
        let filters = [
            (
                BLOOM_BITS_OPTION,
                self.filter_policy.map(|p| p.bits_per_key()),
            ),
            (CACHE_LOCAL_BITS_OPTION, self.cache_local_bits_per_key),
        ];
        for (option, bits) in filters {
            if let Some(bits) = bits.filter(|&bits| bits > max) {
                return Err(out_of_range(option, bits, 0, max as u64));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each value out of range is named by its field; the limits are inclusive.
    #[test]
    fn check_names_what_is_out_of_range() {
        let named = |options: TableOptions| match options.check() {
            Err(Error::OptionOutOfRange { option, value, .. }) => Some((option, value)),
            Err(e) => panic!("{e}"),
            Ok(()) => None,
        };
        let ok = TableOptions::default();
        assert_eq!(named(ok), None);
        assert_eq!(named(ok.block_size(0)), Some(("block_size", 0)));
        assert_eq!(
            named(ok.block_restart_interval(0)),
            Some(("block_restart_interval", 0))
        );
        let bloom = |bits| Some(BloomFilterPolicy::new(bits));
        assert_eq!(named(ok.filter_policy(bloom(64))), None);
        assert_eq!(
            named(ok.filter_policy(bloom(65))),
            Some((BLOOM_BITS_OPTION, 65))
        );
        assert_eq!(named(ok.cache_local_bits_per_key(Some(64))), None);
        assert_eq!(
            named(ok.cache_local_bits_per_key(Some(1000))),
            Some((CACHE_LOCAL_BITS_OPTION, 1000))
        );
    }
}
