//! The former home of [`ReadAt`] and [`AtomicTableFile`], kept so existing paths still
//! resolve: positional reads now live in [`read_at`](crate::read_at), atomic creation in
//! [`atomic_file`](crate::atomic_file).

pub use crate::atomic_file::{AtomicTableFile, TEMP_FILE_PREFIX, create_table};
pub use crate::read_at::ReadAt;
