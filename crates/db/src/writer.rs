//! Writing to a database: the write path of LevelDB 1.23 (log, memtable, flushes,
//! compactions, recovery), sharing its files with LevelDB.

mod background;
mod compaction;
pub(crate) mod file_system;
mod levels;
mod log_file;
pub(crate) mod options;
mod recover;
mod shared;
mod table_output;
mod version_set;
pub(crate) mod writable_db;
