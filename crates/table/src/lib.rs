#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

pub mod atomic_file;
mod bits;
pub mod block;
pub mod block_builder;
pub mod block_plan;
mod cache;
pub mod codec;
pub mod comparator;
mod compression;
mod error;
mod fence;
pub mod filter;
pub mod format;
pub mod read_at;

mod counters;
mod data_blocks;
mod get_many;
mod iter;
mod locate;
mod open;
mod options;
mod profile;
mod properties;
mod read_block;
mod readahead;
mod snappy_length;
mod table;
mod table_builder;
#[cfg(test)]
mod test_rng;
mod verify;

pub use atomic_file::{AtomicTableFile, create_table};
pub use cache::Cache;
pub use comparator::{BytewiseComparator, Comparator};
pub use compression::{Compression, UnknownCompression};
pub use counters::Counters;
pub use data_blocks::DataBlocks;
pub use error::{Error, Result};
pub use iter::{MapAhead, Range, TableIter};
pub use leveltable_filter_policy::{BloomFilterPolicy, FilterPolicy};
pub use open::OpenPlan;
pub use options::{
    BuildOptions, DEFAULT_BLOCK_RESTART_INTERVAL, DEFAULT_BLOCK_SIZE, DEFAULT_READAHEAD_BLOCKS,
    ReadOptions,
};
pub use profile::{Profile, UnknownProfile};
pub use properties::{FilterInfo, TableProperties};
pub use read_at::ReadAt;
pub use table::Table;
pub use table_builder::{BuildSummary, TableBuilder};
pub use verify::VerifySummary;
