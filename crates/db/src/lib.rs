#![doc = include_str!("../README.md")]
// One call maps table files into memory (`table_source`), with its safety argument.
#![deny(unsafe_code)]

mod arena;
mod batch;
mod bulk;
mod coding;
mod comparators;
mod db;
mod db_iter;
pub mod dbformat;
mod destroy;
mod dir_watch;
mod durable;
mod error;
mod file_lock;
pub mod filename;
mod follow;
mod get_many;
pub mod internal_table;
mod levels;
mod live_memtable;
mod lock;
pub mod log_format;
pub mod log_reader;
mod log_tail;
pub mod log_writer;
mod manifest;
mod manifest_writer;
mod merger;
mod options;
mod pinned;
mod recovery;
mod refresh;
mod regular_file;
mod repair;
mod reused_sequences;
mod salvage;
pub mod storage;
mod syncer;
pub mod table_cache;
mod table_options;
mod table_scan;
pub mod table_source;
mod table_writer;
mod tail;
mod torn_tail;
mod version;
pub mod version_edit;
mod version_set;
pub mod write_batch;
mod writer;

pub use bulk::{
    BULK_LEVEL, BulkOptions, CommitSummary, DEFAULT_BULK_BLOOM_BITS_PER_KEY, DEFAULT_MAX_FILE_SIZE,
    DbBuilder, Duplicates, ExternalSorter, PART_RECORD, Part, PartBuilder, PartFile, SortedFeed,
    commit, commit_on, commit_with_progress,
};
pub use comparators::ComparatorRegistry;
pub use db::Db;
pub use db_iter::{DbIter, StoredVersion, VersionStatus, Versions};
pub use destroy::{destroy_db, destroy_db_on};
pub use error::{Error, Limit, MAX_FILE_NUMBER, Result};
pub use file_lock::FileLock;
pub use follow::{Change, ChangeOp, DEFAULT_POLL_INTERVAL, FollowEvent, Follower};
pub use get_many::{GET_MANY_MAX_THREADS, GET_MANY_PARALLEL_BATCH};
pub use internal_table::InternalTable;
pub use lock::DbLock;
pub use options::{DbOptions, DbProperties, DbVerifySummary, LogInfo, TableInfo};
pub use pinned::PinnedVersion;
pub use refresh::Refresh;
pub use repair::{
    IgnoredFile, KeyRange, LostData, LostKind, RepairOptions, RepairReport, UncertainRange, repair,
    repair_in_place, repair_with_progress,
};
pub use table_options::{
    BLOOM_BITS_OPTION, CACHE_LOCAL_BITS_OPTION, MAX_BLOOM_BITS_PER_KEY, TableOptions,
};
pub use version::Origin;
pub use write_batch::WriteBatchBuilder;
pub use writer::compaction_filter::{CompactionFilter, FilterDecision};
pub use writer::file_system::{
    BackgroundSyncFn, FileSystem, LocalFileSystem, ReadableFile, WritableFile,
};
pub use writer::options::{DEFAULT_WRITE_BUFFER_SIZE, WritableOptions, WriteOptions};
pub use writer::writable_db::{Snapshot, WritableDb};
