//! The options of a read-only `leveltable.Db`, from its keywords.

use leveltable_db::DbOptions;
use leveltable_table::Cache;
use pyo3::prelude::*;

use crate::errors::InvalidArgumentError;

/// The options of `Db(path, verify_checksums=…, cache_bytes=…, max_open_tables=…,
/// table_memory=…, profile=…)`.
pub(crate) fn options(
    verify_checksums: bool,
    cache_bytes: u64,
    max_open_tables: Option<usize>,
    table_memory: Option<u64>,
    profile: &str,
) -> PyResult<DbOptions> {
    // The comparator the MANIFEST names: bytewise, or Chromium's IndexedDB `idb_cmp1`.
    let mut options = DbOptions::default()
        .comparators(leveltable_chromium::comparators())
        .verify_checksums(verify_checksums)
        .profile(crate::builder::profile_named(profile)?);
    if let Some(bytes) = table_memory {
        if bytes == 0 {
            return Err(InvalidArgumentError::new_err(
                "table_memory must be at least 1 byte",
            ));
        }
        options = options.table_memory_budget(bytes);
    }
    // A cache of 0 bytes is no block cache.
    options = options.block_cache(Cache::shared(cache_bytes));
    if let Some(tables) = max_open_tables {
        options = options.max_open_tables(tables.max(1));
    }
    Ok(options)
}
