//! How a bulk build writes its tables.

use std::sync::Arc;

use leveltable_filter_policy::BloomFilterPolicy;
use leveltable_table::{
    BuildOptions, Comparator, Compression, DEFAULT_BLOCK_RESTART_INTERVAL, DEFAULT_BLOCK_SIZE,
};

use crate::dbformat::{InternalKeyComparator, TableLayout};
use crate::{Error, Result};

/// The most threads a bulk build starts: more would only contend for the cores, and each
/// holds a file's entries in memory.
pub(crate) const MAX_BULK_THREADS: usize = 256;

/// LevelDB's default `max_file_size`: a table is closed once it reaches 2 MiB.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 2 << 20;

/// Options of a bulk build: the table options LevelDB's `Options` carries, the size at which
/// a table file is closed, and the threads that build files.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BulkOptions {
    /// Approximate uncompressed size of a data block. Default 4096.
    pub block_size: usize,
    /// Keys between restart points in a data block. Default 16.
    pub restart_interval: usize,
    /// Data block compression. Default Snappy.
    pub compression: Compression,
    /// Bits per key of LevelDB's Bloom filter (`NewBloomFilterPolicy`), over user keys;
    /// `None` for no filter. Default `Some(10)`. LevelDB uses the filter when the database is
    /// opened with a filter policy of that name.
    pub bloom_bits_per_key: Option<usize>,
    /// Bits per key of a second, cache-local filter (`leveltable.LocalBloom64`) that
    /// leveltable's readers prefer and LevelDB ignores. Default `None`.
    pub cache_local_bits_per_key: Option<usize>,
    /// A table file is closed once its entries reach this many bytes (keys and values as
    /// given). LevelDB's default is 2 MiB; larger files are allowed. Default 2 MiB.
    pub max_file_size: u64,
    /// Threads building table files, at most 256; a build uses no more than the CPUs the
    /// process may run on (`std::thread::available_parallelism`), and with one it builds on
    /// the thread that adds the entries. The files are the same whatever the number.
    /// Default 1.
    pub threads: usize,
}

impl Default for BulkOptions {
    fn default() -> BulkOptions {
        BulkOptions {
            block_size: DEFAULT_BLOCK_SIZE,
            restart_interval: DEFAULT_BLOCK_RESTART_INTERVAL,
            compression: Compression::Snappy,
            bloom_bits_per_key: Some(10),
            cache_local_bits_per_key: None,
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            threads: 1,
        }
    }
}

impl BulkOptions {
    /// Sets [`block_size`](Self::block_size).
    pub fn block_size(mut self, bytes: usize) -> Self {
        self.block_size = bytes;
        self
    }

    /// Sets [`restart_interval`](Self::restart_interval).
    pub fn restart_interval(mut self, entries: usize) -> Self {
        self.restart_interval = entries;
        self
    }

    /// Sets [`compression`](Self::compression).
    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// Sets [`bloom_bits_per_key`](Self::bloom_bits_per_key).
    pub fn bloom_bits_per_key(mut self, bits: Option<usize>) -> Self {
        self.bloom_bits_per_key = bits;
        self
    }

    /// Sets [`cache_local_bits_per_key`](Self::cache_local_bits_per_key).
    pub fn cache_local_bits_per_key(mut self, bits: Option<usize>) -> Self {
        self.cache_local_bits_per_key = bits;
        self
    }

    /// Sets [`max_file_size`](Self::max_file_size).
    pub fn max_file_size(mut self, bytes: u64) -> Self {
        self.max_file_size = bytes;
        self
    }

    /// Sets [`threads`](Self::threads).
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// Checks the values are usable.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a zero block size, restart interval, file size or
    /// thread count, or more than 256 threads.
    pub fn check(&self) -> Result<()> {
        if self.threads > MAX_BULK_THREADS {
            return Err(Error::InvalidArgument(
                format!(
                    "a bulk build uses at most {MAX_BULK_THREADS} threads, not {}",
                    self.threads
                )
                .into(),
            ));
        }
        let zero = [
            ("block size", self.block_size as u64),
            ("restart interval", self.restart_interval as u64),
            ("max file size", self.max_file_size),
            ("threads", self.threads as u64),
        ]
        .into_iter()
        .find(|&(_, v)| v == 0);
        match zero {
            Some((what, _)) => Err(Error::InvalidArgument(
                format!("the {what} of a bulk build must be at least 1").into(),
            )),
            None => Ok(()),
        }
    }

    /// The options of one table file: internal keys under LevelDB's internal comparator,
    /// filters over user keys, as a LevelDB database writes them.
    pub fn table_options(&self) -> BuildOptions {
        self.table_options_ordered(None)
    }

    /// [`table_options`](Self::table_options) with internal keys ordered by the user
    /// comparator `user` (bytewise if `None`).
    pub(crate) fn table_options_ordered(&self, user: Option<&Arc<dyn Comparator>>) -> BuildOptions {
        let icmp: Arc<dyn Comparator> = match user {
            Some(user) => Arc::new(InternalKeyComparator::new(Arc::clone(user))),
            None => Arc::new(InternalKeyComparator::bytewise()),
        };
        TableLayout {
            block_size: self.block_size,
            restart_interval: self.restart_interval,
            compression: self.compression,
            bloom: self.bloom_bits_per_key.map(BloomFilterPolicy::new),
            cache_local_bits_per_key: self.cache_local_bits_per_key,
        }
        .build_options(icmp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread count from a caller is bounded before any thread is started.
    #[test]
    fn thread_counts_are_bounded() {
        assert!(
            BulkOptions::default()
                .threads(MAX_BULK_THREADS)
                .check()
                .is_ok()
        );
        let err = BulkOptions::default()
            .threads(1 << 40)
            .check()
            .unwrap_err()
            .to_string();
        assert!(err.contains("at most 256 threads"), "{err}");
        assert!(BulkOptions::default().threads(0).check().is_err());
    }
}
