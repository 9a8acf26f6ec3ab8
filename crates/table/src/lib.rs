#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

pub mod audit;
pub mod block;
pub mod block_builder;
pub mod cache;
pub mod comparator;
mod error;
mod fence;
pub mod file;
pub mod filter;
pub mod format;

pub mod iter;
pub mod options;
pub mod table;
pub mod table_builder;

pub use cache::Cache;
pub use comparator::{BytewiseComparator, Comparator};
pub use error::Error;
pub use file::{AtomicTableFile, ReadAt, create_table};
pub use format::Compression;
pub use iter::{Range, TableIter};
pub use leveltable_filter_policy::{BloomFilterPolicy, FilterPolicy};
pub use options::{BuildOptions, ReadOptions};
pub use table::{Counters, FilterInfo, Table, TableProperties, VerifySummary};
pub use table_builder::{BuildSummary, TableBuilder};

/// The result type of this crate.
pub type Result<T> = std::result::Result<T, Error>;
