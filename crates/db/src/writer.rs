//! Writing to a database: the write path of LevelDB 1.23 (log, memtable, flushes,
//! compactions, recovery), sharing its files with LevelDB.

mod background;
mod compaction;
pub(crate) mod compaction_filter;
mod compaction_iter;
pub(crate) mod file_system;
mod fork;
pub(crate) mod log_file;
mod no_current;
pub(crate) mod options;
mod properties;
mod recover;
mod shared;
mod version_set;
pub(crate) mod writable_db;
