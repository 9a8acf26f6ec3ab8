//! How a bulk build writes its tables.

use leveltable_filter_policy::BloomFilterPolicy;

use crate::table_options::TableOptions;
use crate::{Error, Result};

/// The most threads a bulk build starts: more would only contend for the cores, and each
/// holds a file's entries in memory.
pub(crate) const MAX_BULK_THREADS: usize = 256;

/// LevelDB's default `max_file_size`: a table is closed once it reaches 2 MiB.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 2 << 20;

/// The Bloom filter a bulk build writes unless told otherwise: LevelDB's, at 10 bits per key.
pub const DEFAULT_BULK_BLOOM_BITS_PER_KEY: usize = 10;

/// Options of a bulk build: how each table is laid out, the size at which a table file is
/// closed, and the threads that build files.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BulkOptions {
    /// How each table is laid out. Default: LevelDB's (4 KiB blocks, restart interval 16,
    /// Snappy) with LevelDB's Bloom filter at 10 bits per key
    /// ([`DEFAULT_BULK_BLOOM_BITS_PER_KEY`]) over user keys, which LevelDB uses when the
    /// database is opened with a filter policy of that name; no cache-local filter.
    pub table: TableOptions,
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
            table: TableOptions::default().filter_policy(Some(BloomFilterPolicy::new(
                DEFAULT_BULK_BLOOM_BITS_PER_KEY,
            ))),
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            threads: 1,
        }
    }
}

impl BulkOptions {
    /// Sets [`table`](Self::table).
    pub fn table(mut self, table: TableOptions) -> Self {
        self.table = table;
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

    /// Checks the values are usable: the table options as [`TableOptions::check`] does, and
    /// the build's own.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a zero block size, restart interval, file size or
    /// thread count, or more than 256 threads; [`Error::OptionOutOfRange`] for a filter of
    /// more bits per key than [`TableOptions::check`] allows.
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
        let at_least_one = |what: &str| {
            Error::InvalidArgument(format!("the {what} of a bulk build must be at least 1").into())
        };
        match self.table.check() {
            Err(Error::OptionOutOfRange {
                option: "block_size",
                ..
            }) => return Err(at_least_one("block size")),
            Err(Error::OptionOutOfRange {
                option: "block_restart_interval",
                ..
            }) => return Err(at_least_one("restart interval")),
            checked => checked?,
        }
        if self.max_file_size == 0 {
            return Err(at_least_one("max file size"));
        }
        if self.threads == 0 {
            return Err(at_least_one("threads"));
        }
        Ok(())
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

    /// The table options are checked as [`TableOptions::check`] does, a zero said as a bulk
    /// build says it.
    #[test]
    fn table_options_are_checked() {
        let with = |table: TableOptions| BulkOptions::default().table(table).check();
        let table = BulkOptions::default().table;
        assert!(with(table).is_ok());
        let err = with(table.block_size(0)).unwrap_err().to_string();
        assert!(
            err.contains("the block size of a bulk build must be at least 1"),
            "{err}"
        );
        let err = with(table.block_restart_interval(0))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("the restart interval of a bulk build must be at least 1"),
            "{err}"
        );
        let bloom = Some(BloomFilterPolicy::new(65));
        assert!(matches!(
            with(table.filter_policy(bloom)),
            Err(Error::OptionOutOfRange { max: 64, .. })
        ));
    }
}
