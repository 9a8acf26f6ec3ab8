//! Open table files, at most a fixed number at once (LevelDB's `db/table_cache`).
//!
//! Each open table holds its file descriptor, its index block and its filter block in
//! memory; the cache bounds how many are open, evicting the least recently used (CLOCK-Pro,
//! from `quick_cache`). Data blocks go to the shared block cache of the read options.

use std::io;
use std::path::Path;
use std::sync::Arc;

use leveltable_table::{ReadOptions, Table};

use crate::filename::{sst_table_file_name, table_file_name};
use crate::internal_table::InternalTable;
use crate::storage::{LocalDir, Storage};
use crate::table_source::TableSource;
use crate::{Error, Result};

/// LevelDB's default `max_open_files` (1000) less the 10 descriptors it keeps for other
/// files (`kNumNonTableCacheFiles`): the default table cache capacity.
pub const DEFAULT_MAX_OPEN_TABLES: usize = 1000 - 10;

/// An open table file of the database.
pub type OpenTable = InternalTable<TableSource>;

/// A cache of open tables, by file number.
pub struct TableCache {
    storage: Arc<dyn Storage>,
    options: ReadOptions,
    cache: quick_cache::sync::Cache<u64, Arc<OpenTable>>,
    capacity: usize,
    memory_map: bool,
}

impl std::fmt::Debug for TableCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableCache")
            .field("dir", &self.storage.path())
            .field("open", &self.cache.len())
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl TableCache {
    /// A cache of at most `capacity` (at least 1) open tables of the directory `dir`,
    /// opened with `options` (an internal key comparator and filter policy).
    pub fn new(dir: &Path, capacity: usize, options: ReadOptions) -> Self {
        TableCache::with_storage(Arc::new(LocalDir::new(dir)), capacity, options)
    }

    /// A cache of at most `capacity` (at least 1) open tables of `storage`.
    pub fn with_storage(storage: Arc<dyn Storage>, capacity: usize, options: ReadOptions) -> Self {
        let capacity = capacity.max(1);
        TableCache {
            storage,
            options,
            cache: quick_cache::sync::Cache::new(capacity),
            capacity,
            memory_map: true,
        }
    }

    /// Whether tables are read through memory maps (the default) or `pread`.
    pub fn with_memory_map(mut self, memory_map: bool) -> Self {
        self.memory_map = memory_map;
        self
    }

    /// The table numbered `number`, opened if it is not open.
    ///
    /// # Errors
    /// [`Error::MissingFile`] naming `NNNNNN.ldb` if neither it nor `NNNNNN.sst` exists
    /// (deleted since the database was opened: reopen it); [`Error::TableFile`] if the
    /// table does not open; [`Error::Io`] for other I/O errors.
    pub fn get(&self, number: u64) -> Result<Arc<OpenTable>> {
        self.cache
            .get_or_insert_with(&number, || self.open(number).map(Arc::new))
    }

    /// How many tables are open.
    pub fn open_tables(&self) -> usize {
        self.cache.len()
    }

    /// The most tables open at once.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The capacity in bytes of the block cache the tables share (0 without one).
    pub fn block_cache_capacity(&self) -> u64 {
        self.options
            .block_cache
            .as_ref()
            .map_or(0, |c| c.capacity())
    }

    /// Opens a table without caching it.
    ///
    /// # Errors
    /// As [`get`](Self::get).
    pub fn open(&self, number: u64) -> Result<OpenTable> {
        let ldb = table_file_name(number);
        let dir = self.storage.path();
        let (name, source) = match self.storage.open_table(&ldb, self.memory_map) {
            Ok(source) => (ldb, source),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let sst = sst_table_file_name(number);
                match self.storage.open_table(&sst, self.memory_map) {
                    Ok(source) => (sst, source),
                    Err(e2) if e2.kind() == io::ErrorKind::NotFound => {
                        return Err(Error::MissingFile {
                            file: ldb.into(),
                            what: "deleted since the database was opened (compacted by \
                                   another process?); reopen the database"
                                .into(),
                        });
                    }
                    Err(e2) => return Err(Error::io(dir.join(sst), e2)),
                }
            }
            Err(e) => return Err(Error::io(dir.join(ldb), e)),
        };
        let table = Table::open(source, self.options.clone()).map_err(|e| Error::TableFile {
            file: name.clone().into(),
            source: e,
        })?;
        InternalTable::from_table(table).map_err(|e| e.in_table(name))
    }
}
