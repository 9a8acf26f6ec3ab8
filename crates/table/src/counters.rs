//! A table's read counters: blocks and bytes read, cache hits, filter checks.

use std::ops::Deref;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

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

/// One set of the live counters, on a cache line of its own.
#[derive(Default)]
#[repr(align(128))]
pub(crate) struct CounterShard {
    pub(crate) data_blocks_read: AtomicU64,
    pub(crate) data_bytes_read: AtomicU64,
    pub(crate) cache_hits: AtomicU64,
    pub(crate) filter_checks: AtomicU64,
    pub(crate) filter_negatives: AtomicU64,
}

/// Shards of the live counters. Threads bump different shards, so gets from several threads
/// do not pass one cache line back and forth between cores on every read; reading the
/// counters sums the shards.
const SHARDS: usize = 8;

/// The live counters of a table, bumped from any thread: `counters.filter_checks` is the
/// calling thread's shard's (through `Deref`).
#[derive(Default)]
pub(crate) struct CounterCells {
    shards: [CounterShard; SHARDS],
}

/// A small number per thread, handed out in the order threads first bump a counter.
fn thread_slot() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SLOT: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
    }
    SLOT.with(|s| *s)
}

impl Deref for CounterCells {
    type Target = CounterShard;

    #[inline]
    fn deref(&self) -> &CounterShard {
        &self.shards[thread_slot()]
    }
}

impl CounterCells {
    /// The sum over the shards of one counter.
    fn sum(&self, field: impl Fn(&CounterShard) -> &AtomicU64) -> u64 {
        self.shards
            .iter()
            .map(|s| field(s).load(Ordering::Relaxed))
            .fold(0, u64::wrapping_add)
    }
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
        Counters {
            data_blocks_read: c.sum(|s| &s.data_blocks_read),
            data_bytes_read: c.sum(|s| &s.data_bytes_read),
            cache_hits: c.sum(|s| &s.cache_hits),
            filter_checks: c.sum(|s| &s.filter_checks),
            filter_negatives: c.sum(|s| &s.filter_negatives),
        }
    }

    /// Sets every counter back to 0.
    pub fn reset_counters(&self) {
        for s in &self.counter_cells().shards {
            for a in [
                &s.data_blocks_read,
                &s.data_bytes_read,
                &s.cache_hits,
                &s.filter_checks,
                &s.filter_negatives,
            ] {
                a.store(0, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts bumped from many threads (more than there are shards) all add up.
    #[test]
    fn shards_add_up() {
        let cells = CounterCells::default();
        std::thread::scope(|s| {
            for _ in 0..2 * SHARDS + 1 {
                s.spawn(|| {
                    for _ in 0..1000 {
                        bump(&cells.filter_checks, 2);
                        bump(&cells.cache_hits, 1);
                    }
                });
            }
        });
        let n = (2 * SHARDS + 1) as u64 * 1000;
        assert_eq!(cells.sum(|s| &s.filter_checks), 2 * n);
        assert_eq!(cells.sum(|s| &s.cache_hits), n);
        assert_eq!(cells.sum(|s| &s.data_blocks_read), 0);
    }
}
