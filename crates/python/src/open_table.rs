//! A table file open for `leveltable.Table`, and the path it was opened from.

use std::fs::File;
use std::path::PathBuf;

use leveltable_table::Table as RustTable;

/// An open table and the path it was opened from.
pub struct OpenTable {
    pub path: PathBuf,
    pub table: RustTable<File>,
}
