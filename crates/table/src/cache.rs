//! A block cache bounded in bytes, shared by any number of tables.
//!
//! Keys are (table id, block offset); each [`Table`](crate::Table) opened with a cache takes a
//! fresh id from it, so tables never see each other's blocks. Values are decoded
//! (decompressed, checksum-verified, restart-array-checked) blocks. Eviction is
//! [`quick_cache`]'s CLOCK-Pro, weighted by block size.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::block::Layout;

/// Bytes charged per cached block on top of its contents, for the entry's bookkeeping.
const ENTRY_OVERHEAD: u64 = 64;

/// A decoded block held by the cache.
#[derive(Debug)]
pub(crate) struct CachedBlock {
    pub(crate) data: Vec<u8>,
    pub(crate) layout: Layout,
    /// Whether the block was stored compressed (positions inside it then have no file offset).
    pub(crate) compressed: bool,
}

#[derive(Clone, Copy)]
struct Weigher;

impl quick_cache::Weighter<(u64, u64), Arc<CachedBlock>> for Weigher {
    fn weight(&self, _key: &(u64, u64), block: &Arc<CachedBlock>) -> u64 {
        block.data.capacity() as u64 + ENTRY_OVERHEAD
    }
}

/// A concurrent cache of decoded blocks holding at most about `capacity` bytes.
///
/// Share one between tables by putting the same `Arc<Cache>` in their
/// [`ReadOptions`](crate::ReadOptions).
pub struct Cache {
    inner: quick_cache::sync::Cache<(u64, u64), Arc<CachedBlock>, Weigher>,
    next_id: AtomicU64,
    capacity: u64,
}

impl Cache {
    /// A cache for about `capacity` bytes of blocks. A block larger than the cache's
    /// per-shard share is never cached.
    pub fn new(capacity: u64) -> Cache {
        // The estimate only sizes the hash tables; assume blocks of about 4 KiB.
        let estimated_items = usize::try_from(capacity / 4096)
            .unwrap_or(usize::MAX)
            .max(16);
        Cache {
            inner: quick_cache::sync::Cache::with_weighter(estimated_items, capacity, Weigher),
            next_id: AtomicU64::new(1),
            capacity,
        }
    }

    /// A new [`Cache::new`] in an `Arc`, ready for [`ReadOptions::block_cache`](crate::ReadOptions::block_cache).
    pub fn shared(capacity: u64) -> Arc<Cache> {
        Arc::new(Cache::new(capacity))
    }

    /// The capacity in bytes given at creation.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Bytes currently charged (block contents plus a fixed overhead per block).
    pub fn weight(&self) -> u64 {
        self.inner.weight()
    }

    /// Number of blocks held.
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// Whether the cache holds no block.
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// Drops every block.
    pub fn clear(&self) {
        self.inner.clear();
    }

    /// A fresh id for one table's keys.
    pub(crate) fn new_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn get(&self, id: u64, offset: u64) -> Option<Arc<CachedBlock>> {
        self.inner.get(&(id, offset))
    }

    pub(crate) fn insert(&self, id: u64, offset: u64, block: Arc<CachedBlock>) {
        self.inner.insert((id, offset), block);
    }
}

impl fmt::Debug for Cache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cache")
            .field("capacity", &self.capacity)
            .field("weight", &self.weight())
            .field("blocks", &self.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(len: usize) -> Arc<CachedBlock> {
        let mut data = vec![0u8; len];
        data.extend_from_slice(&[0, 0, 0, 0, 1, 0, 0, 0]);
        let layout = Layout::parse(&data[len..]).unwrap();
        Arc::new(CachedBlock {
            data,
            layout,
            compressed: false,
        })
    }

    #[test]
    fn ids_are_distinct_and_keys_separate() {
        let cache = Cache::new(1 << 20);
        let (a, b) = (cache.new_id(), cache.new_id());
        assert_ne!(a, b);
        cache.insert(a, 0, block(100));
        assert!(cache.get(a, 0).is_some());
        assert!(cache.get(b, 0).is_none());
        assert!(cache.get(a, 1).is_none());
        assert_eq!(cache.len(), 1);
        cache.clear();
        assert!(cache.is_empty());
    }

    #[test]
    fn bounded_by_bytes() {
        let cache = Cache::new(64 * 1024);
        for i in 0..1000 {
            cache.insert(1, i, block(4000));
        }
        assert!(cache.weight() <= 64 * 1024, "{}", cache.weight());
        assert!(cache.len() < 20);
    }
}
