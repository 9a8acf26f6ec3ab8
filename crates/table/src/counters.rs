//! A table's read counters: blocks and bytes read, cache hits, filter checks.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::Table;

/// A snapshot of a table's read counters. Counts accumulate from [`Table::open`] (or the last
/// [`Table::reset_counters`]) over all threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Counters {
    /// Data blocks read from the source (cache misses and uncached reads).
    pub data_blocks_read: u64,
    /// Bytes of data blocks read from the source, trailers included.
    pub data_bytes_read: u64,
    /// Data blocks found in the block cache.
    pub cache_hits: u64,
    /// Times a get consulted the filter.
    pub filter_checks: u64,
    /// Times the filter said "certainly absent", sparing a data block read.
    pub filter_negatives: u64,
}

/// The live counters of a table, bumped from any thread.
#[derive(Default)]
pub(crate) struct CounterCells {
    pub(crate) data_blocks_read: AtomicU64,
    pub(crate) data_bytes_read: AtomicU64,
    pub(crate) cache_hits: AtomicU64,
    pub(crate) filter_checks: AtomicU64,
    pub(crate) filter_negatives: AtomicU64,
}

/// Adds `by` to a counter. Relaxed: the counters order nothing, they only count.
#[inline]
pub(crate) fn bump(cell: &AtomicU64, by: u64) {
    cell.fetch_add(by, Ordering::Relaxed);
}

impl<R> Table<R> {
    /// The read counters so far.
    pub fn counters(&self) -> Counters {
        let c = self.counter_cells();
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Counters {
            data_blocks_read: load(&c.data_blocks_read),
            data_bytes_read: load(&c.data_bytes_read),
            cache_hits: load(&c.cache_hits),
            filter_checks: load(&c.filter_checks),
            filter_negatives: load(&c.filter_negatives),
        }
    }

    /// Sets every counter back to 0.
    pub fn reset_counters(&self) {
        let c = self.counter_cells();
        for a in [
            &c.data_blocks_read,
            &c.data_bytes_read,
            &c.cache_hits,
            &c.filter_checks,
            &c.filter_negatives,
        ] {
            a.store(0, Ordering::Relaxed);
        }
    }
}
