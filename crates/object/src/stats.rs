//! Request counters: every request sent to a store, the bytes that came back, retries.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// Live counters of the requests made through a [`Location`](crate::Location) and its
/// clones; read them with [`snapshot`](Stats::snapshot).
#[derive(Default)]
pub struct Stats {
    gets: AtomicU64,
    puts: AtomicU64,
    lists: AtomicU64,
    bytes_read: AtomicU64,
    bytes_written: AtomicU64,
    retries: AtomicU64,
}

/// A snapshot of [`Stats`]. Subtract two to get the cost of what happened between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct StatsSnapshot {
    /// GET requests (ranged or whole) and HEAD requests, every attempt counted, failed
    /// ones too.
    pub gets: u64,
    /// Requests that write: PUT, each multipart part, multipart create, complete and abort,
    /// deletes.
    pub puts: u64,
    /// LIST requests.
    pub lists: u64,
    /// Body bytes received by successful GETs.
    pub bytes_read: u64,
    /// Body bytes sent.
    pub bytes_written: u64,
    /// Attempts that were retries of a failed one.
    pub retries: u64,
}

impl StatsSnapshot {
    /// All requests.
    pub fn requests(&self) -> u64 {
        self.gets + self.puts + self.lists
    }
}

impl std::ops::Add for StatsSnapshot {
    type Output = StatsSnapshot;
    fn add(self, o: StatsSnapshot) -> StatsSnapshot {
        StatsSnapshot {
            gets: self.gets + o.gets,
            puts: self.puts + o.puts,
            lists: self.lists + o.lists,
            bytes_read: self.bytes_read + o.bytes_read,
            bytes_written: self.bytes_written + o.bytes_written,
            retries: self.retries + o.retries,
        }
    }
}

impl std::ops::Sub for StatsSnapshot {
    type Output = StatsSnapshot;
    fn sub(self, o: StatsSnapshot) -> StatsSnapshot {
        StatsSnapshot {
            gets: self.gets.saturating_sub(o.gets),
            puts: self.puts.saturating_sub(o.puts),
            lists: self.lists.saturating_sub(o.lists),
            bytes_read: self.bytes_read.saturating_sub(o.bytes_read),
            bytes_written: self.bytes_written.saturating_sub(o.bytes_written),
            retries: self.retries.saturating_sub(o.retries),
        }
    }
}

impl fmt::Display for StatsSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "requests {} (get {}, put {}, list {}), retries {}, bytes read {}, bytes written {}",
            self.requests(),
            self.gets,
            self.puts,
            self.lists,
            self.retries,
            self.bytes_read,
            self.bytes_written
        )
    }
}

impl Stats {
    /// The counts so far.
    pub fn snapshot(&self) -> StatsSnapshot {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        StatsSnapshot {
            gets: r(&self.gets),
            puts: r(&self.puts),
            lists: r(&self.lists),
            bytes_read: r(&self.bytes_read),
            bytes_written: r(&self.bytes_written),
            retries: r(&self.retries),
        }
    }

    pub(crate) fn get(&self) {
        self.gets.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn put(&self, bytes: u64) {
        self.puts.fetch_add(1, Ordering::Relaxed);
        self.bytes_written.fetch_add(bytes, Ordering::Relaxed);
    }
    pub(crate) fn list(&self) {
        self.lists.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn read(&self, bytes: u64) {
        self.bytes_read.fetch_add(bytes, Ordering::Relaxed);
    }
    pub(crate) fn retry(&self) {
        self.retries.fetch_add(1, Ordering::Relaxed);
    }
}

impl fmt::Debug for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.snapshot(), f)
    }
}
