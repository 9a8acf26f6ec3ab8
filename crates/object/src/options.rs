//! How tables on object storage are read: the table options and the request shaping.

use leveltable_table::ReadOptions;

/// Options for [`AsyncTable`](crate::AsyncTable) and [`BlockingTable`](crate::BlockingTable).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ObjectReadOptions {
    /// The table reader's options (comparator, filter policy, checksums, block cache).
    pub read: ReadOptions,
    /// Bytes read from the object's end at open, in the one request that also learns its
    /// size and ETag. The footer, metaindex, index and filter usually fit; if not, one more
    /// request reads what is missing.
    pub tail_len: u64,
    /// Batched gets merge two blocks into one request when at most this many bytes lie
    /// between them.
    pub coalesce_gap: u64,
    /// The largest request a batched get or a scan makes.
    pub max_request: u64,
    /// A scan's first request (small, so the first entries come soon); later ones are
    /// [`max_request`](Self::max_request).
    pub scan_first_request: u64,
    /// Scan requests in flight ahead of the consumer.
    pub readahead: usize,
    /// Requests a batched get runs at once.
    pub concurrency: usize,
}

impl Default for ObjectReadOptions {
    fn default() -> ObjectReadOptions {
        ObjectReadOptions {
            read: ReadOptions::default(),
            tail_len: 256 << 10,
            coalesce_gap: 64 << 10,
            max_request: 4 << 20,
            scan_first_request: 1 << 20,
            readahead: 8,
            concurrency: 16,
        }
    }
}

impl ObjectReadOptions {
    /// Sets [`read`](Self::read).
    #[must_use]
    pub fn read(mut self, read: ReadOptions) -> Self {
        self.read = read;
        self
    }

    /// Sets [`tail_len`](Self::tail_len) (at least the 48-byte footer is read).
    #[must_use]
    pub fn tail_len(mut self, bytes: u64) -> Self {
        self.tail_len = bytes.max(48);
        self
    }

    /// Sets [`readahead`](Self::readahead) (at least 1).
    #[must_use]
    pub fn readahead(mut self, requests: usize) -> Self {
        self.readahead = requests.max(1);
        self
    }

    /// Sets [`max_request`](Self::max_request) (at least 4 KiB).
    #[must_use]
    pub fn max_request(mut self, bytes: u64) -> Self {
        self.max_request = bytes.max(4096);
        self
    }
}
