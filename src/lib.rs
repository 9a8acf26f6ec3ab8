#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

#[cfg(feature = "db")]
pub use leveltable_db as db;
pub use leveltable_filter_block as filter_block;
pub use leveltable_filter_policy as filter_policy;
pub use leveltable_hash as hash;
pub use leveltable_table as table;
