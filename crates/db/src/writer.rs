//! Writing to a database: the write path of LevelDB 1.23 (log, memtable, flushes,
//! compactions, recovery), sharing its files with LevelDB.

mod background;
mod background_sync;
mod compaction;
pub(crate) mod compaction_filter;
mod compaction_iter;
mod compaction_stats;
pub(crate) mod file_system;
mod flush;
mod fork;
pub(crate) mod log_file;
mod no_current;
pub(crate) mod options;
mod properties;
mod read_view;
mod recover;
mod shared;
pub(crate) mod writable_db;
mod write_queue;
