//! A table's read counters: blocks and bytes read, cache hits, filter checks.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// A snapshot of a table's read counters. Counts accumulate from
/// [`Table::open`](crate::Table::open) (or the last
/// [`Table::reset_counters`](crate::Table::reset_counters)) over all threads.
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

/// One of the counters.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Counter {
    DataBlocksRead,
    DataBytesRead,
    CacheHits,
    FilterChecks,
    FilterNegatives,
}

const KINDS: usize = 5;

/// One set of the live counters, on cache lines of its own.
#[derive(Default)]
#[repr(align(128))]
struct CounterShard([AtomicU64; KINDS]);

/// Shards of the live counters. Gets from several threads bump different shards, so they
/// do not pass one cache line back and forth between cores on every read; reading the
/// counters sums the shards.
const SHARDS: usize = 8;
/// The shard threads share once every other shard has an owner; it alone is bumped with
/// atomic read-modify-writes.
const SHARED: usize = SHARDS - 1;

/// The live counters of a table, bumped from any thread.
///
/// A thread that owns a shard bumps it with a plain load and store: no other thread writes
/// there, and a locked add would cost each get tens of cycles and, as a full barrier on
/// x86, hold back the loads of the next get until it completes. Resets never write the
/// shards: they record the sums as the new zero.
#[derive(Default)]
pub(crate) struct CounterCells {
    shards: [CounterShard; SHARDS],
    zero: [AtomicU64; KINDS],
}

/// The calling thread's shard. Shards `0..SHARED` are each owned by one live thread at a
/// time, handed out as threads first bump a counter and taken back when they exit; threads
/// beyond those share [`SHARED`].
fn thread_slot() -> usize {
    thread_local! {
        static SLOT: SlotGuard = SlotGuard::take();
    }
    SLOT.try_with(|s| s.0).unwrap_or(SHARED)
}

/// Owned shards given back by threads that exited. The lock also orders an exited owner's
/// last stores before the next owner's first loads.
static FREE: Mutex<Vec<usize>> = Mutex::new(Vec::new());
/// Owned shards never handed out start here.
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A thread's shard, given back when the thread exits if it owned it.
struct SlotGuard(usize);

impl SlotGuard {
    fn take() -> Self {
        let reused = FREE.lock().map_or(None, |mut free| free.pop());
        let index = reused.or_else(|| {
            NEXT.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < SHARED).then_some(n + 1)
            })
            .ok()
        });
        Self(index.unwrap_or(SHARED))
    }
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        if self.0 != SHARED {
            if let Ok(mut free) = FREE.lock() {
                free.push(self.0);
            }
        }
    }
}

impl CounterCells {
    /// Adds `by` to `counter`. Relaxed: the counters order nothing, they only count.
    #[inline]
    pub(crate) fn bump(&self, counter: Counter, by: u64) {
        let slot = thread_slot();
        let cell = &self.shards[slot].0[counter as usize];
        if slot != SHARED {
            cell.store(
                cell.load(Ordering::Relaxed).wrapping_add(by),
                Ordering::Relaxed,
            );
        } else {
            cell.fetch_add(by, Ordering::Relaxed);
        }
    }

    /// The sum over the shards of counter `k` since the table opened.
    fn total(&self, k: usize) -> u64 {
        self.shards
            .iter()
            .map(|s| s.0[k].load(Ordering::Relaxed))
            .fold(0, u64::wrapping_add)
    }

    /// The sum over the shards of one counter since the last reset.
    fn sum(&self, counter: Counter) -> u64 {
        let k = counter as usize;
        self.total(k)
            .wrapping_sub(self.zero[k].load(Ordering::Relaxed))
    }

    /// Makes the counts so far the new zero.
    pub(crate) fn reset(&self) {
        for (k, zero) in self.zero.iter().enumerate() {
            zero.store(self.total(k), Ordering::Relaxed);
        }
    }
}

impl Counters {
    /// The counts so far of `cells`.
    pub(crate) fn of(cells: &CounterCells) -> Counters {
        Counters {
            data_blocks_read: cells.sum(Counter::DataBlocksRead),
            data_bytes_read: cells.sum(Counter::DataBytesRead),
            cache_hits: cells.sum(Counter::CacheHits),
            filter_checks: cells.sum(Counter::FilterChecks),
            filter_negatives: cells.sum(Counter::FilterNegatives),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts bumped from many threads (more than there are shards, some of them after
    /// others exited) all add up, and a reset starts them from 0.
    #[test]
    fn shards_add_up() {
        let cells = CounterCells::default();
        let bump_from_threads = |threads: usize| {
            std::thread::scope(|s| {
                for _ in 0..threads {
                    s.spawn(|| {
                        for _ in 0..1000 {
                            cells.bump(Counter::FilterChecks, 2);
                            cells.bump(Counter::CacheHits, 1);
                        }
                    });
                }
            });
        };
        bump_from_threads(2 * SHARDS + 1);
        bump_from_threads(3);
        let n = (2 * SHARDS + 4) as u64 * 1000;
        assert_eq!(cells.sum(Counter::FilterChecks), 2 * n);
        assert_eq!(cells.sum(Counter::CacheHits), n);
        assert_eq!(cells.sum(Counter::DataBlocksRead), 0);
        cells.reset();
        assert_eq!(cells.sum(Counter::FilterChecks), 0);
        bump_from_threads(2);
        assert_eq!(cells.sum(Counter::FilterChecks), 4000);
        assert_eq!(cells.sum(Counter::CacheHits), 2000);
    }
}
