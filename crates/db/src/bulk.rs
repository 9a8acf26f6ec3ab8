//! Bulk builds: a database made from sorted (or sorted here) entries without LevelDB's write
//! path. Parts are built anywhere ([`PartBuilder`], in parallel threads, processes or
//! machines) and committed into one database ([`commit()`]); [`DbBuilder`] does both in one
//! process, and [`ExternalSorter`] sorts what does not come sorted.
//!
//! - `options.rs`: what every table of a build looks like ([`BulkOptions`]);
//! - `part.rs`: a part and the record that describes it (`PART`);
//! - `part_builder.rs`, `chunk.rs`, `workers.rs`: building a part's table files on worker
//!   threads (each through the crate's one table writer, `table_writer.rs`), synced on
//!   another (`syncer.rs`);
//! - `commit.rs` (and `commit/verify.rs`, what a commit checks before it moves anything);
//! - `durable.rs`: files written through a rename, directories synced;
//! - `db_builder.rs`, `external_sort.rs`, and `sorted_feed.rs` (sorted input with keys given
//!   twice resolved, for every front end).

pub(crate) mod chunk;
pub(crate) mod commit;
pub(crate) mod db_builder;
pub(crate) mod external_sort;
pub(crate) mod options;
pub(crate) mod part;
pub(crate) mod part_builder;
pub(crate) mod sorted_feed;
pub(crate) mod workers;

pub use commit::{BULK_LEVEL, CommitSummary, commit, commit_on, commit_with_progress};
pub use db_builder::DbBuilder;
pub use external_sort::{Duplicates, ExternalSorter};
pub use options::{BulkOptions, DEFAULT_BULK_BLOOM_BITS_PER_KEY, DEFAULT_MAX_FILE_SIZE};
pub use part::{PART_RECORD, Part, PartFile};
pub use part_builder::PartBuilder;
pub use sorted_feed::SortedFeed;
