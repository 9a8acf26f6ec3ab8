//! The integration tests of `leveltable-interop`, one module per concern, built as one binary.

mod common;

mod bloom;
mod crc32c;
mod db;
mod db_bulk;
mod db_compaction;
mod db_diff;
mod db_faults;
mod db_follow;
mod db_lock;
mod db_log_kill;
mod db_power_loss;
mod db_repair;
mod db_write_diff;
mod db_write_held;
mod db_write_kill;
mod dual_filter;
mod filter_block;
mod hash;
mod ldb;
mod skip;
mod table;
mod table_diff;
