#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod coding;
pub mod dbformat;
mod error;
pub mod log_format;
pub mod log_reader;
pub mod log_writer;
pub mod version_edit;
pub mod write_batch;

mod bulk_options;
mod commit;
mod db_builder;
mod external_sort;
mod part;

pub use bulk_options::{BulkOptions, DEFAULT_MAX_FILE_SIZE};
pub use commit::{BULK_LEVEL, CommitSummary, commit};
pub use db_builder::DbBuilder;
pub use external_sort::{Duplicates, ExternalSorter};
pub use part::{PART_RECORD, Part, PartBuilder, PartFile};

pub use error::Error;

/// The result type of this crate.
pub type Result<T> = std::result::Result<T, Error>;
