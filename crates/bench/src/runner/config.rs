//! What every workload shares: the sizes ([`Config`]), the error type, the Bloom filter's
//! bits per key, and how row labels write counts.

use std::error::Error;
use std::path::PathBuf;

/// Errors from any system.
pub type BoxError = Box<dyn Error + Send + Sync>;
/// Result of a workload.
pub type Result<T> = std::result::Result<T, BoxError>;

/// Bloom filter bits per key everywhere.
pub const BITS_PER_KEY: usize = 10;

/// Sizes of the workloads. [`Config::standard`] is the published one.
#[derive(Debug, Clone)]
pub struct Config {
    /// Entries in the benchmark tables.
    pub entries: u64,
    /// Queries per get workload.
    pub queries: usize,
    /// Keys in the Bloom match filter (and its query count).
    pub filter_keys: u64,
    /// Keys in the Bloom create workload, filtered in batches of
    /// [`CREATE_BATCH`](crate::runner::CREATE_BATCH).
    pub create_keys: u64,
    /// Times the 1 MiB hash input is hashed per measurement.
    pub hash_repeat: usize,
    /// Measurements per system per workload; the best is reported.
    pub rounds: usize,
    /// Input bytes (keys + values) of the table the memory workload builds.
    pub mem_bytes: u64,
    /// Entries of the table the `get-many-large` workload reads (larger than the caches).
    pub large_entries: u64,
    /// Entries of the database the `db` workload reads.
    pub db_entries: u64,
    /// Input bytes (keys + values) of the `db-build` databases.
    pub db_build_bytes: u64,
    /// Memory budget of the `db-build` sort (`ExternalSorter`).
    pub sort_budget: u64,
    /// Bytes of values in the database the `follow` workload refreshes.
    pub follow_bytes: u64,
    /// Batches per round of each `follow` feed latency figure (the refresh loops are
    /// sized from it too).
    pub follow_samples: usize,
    /// Directory for table files.
    pub dir: PathBuf,
}

impl Config {
    /// The published workloads, with table files under `dir`.
    pub fn standard(dir: PathBuf) -> Config {
        Config {
            entries: 1_000_000,
            queries: 200_000,
            filter_keys: 1_000_000,
            create_keys: 1_000_000,
            hash_repeat: 64,
            rounds: 3,
            mem_bytes: 2_000_000_000,
            large_entries: 30_000_000,
            db_entries: 1_000_000,
            db_build_bytes: 1_000_000_000,
            sort_budget: 256 << 20,
            follow_bytes: 100_000_000,
            follow_samples: 200,
            dir,
        }
    }

    /// Tiny sizes that exercise every path in a second (tests).
    pub fn smoke(dir: PathBuf) -> Config {
        Config {
            entries: 5_000,
            queries: 2_000,
            filter_keys: 5_000,
            create_keys: 5_000,
            hash_repeat: 1,
            rounds: 1,
            mem_bytes: 2_000_000,
            large_entries: 20_000,
            db_entries: 5_000,
            db_build_bytes: 4_000_000,
            sort_budget: 1 << 20,
            follow_bytes: 1_000_000,
            follow_samples: 10,
            dir,
        }
    }
}

/// `1000000` as `1M`, `5000` as `5k`.
pub fn count(n: u64) -> String {
    if n >= 1_000_000 && n % 1_000_000 == 0 {
        format!("{}M", n / 1_000_000)
    } else if n >= 1000 && n % 1000 == 0 {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_naturally() {
        assert_eq!(count(1_000_000), "1M");
        assert_eq!(count(5000), "5k");
        assert_eq!(count(1234), "1234");
    }
}
