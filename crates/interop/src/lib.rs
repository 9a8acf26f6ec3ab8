#![doc = include_str!("../README.md")]

pub mod bloom;
pub mod crc32c;
pub mod db;
mod error;
mod ffi;
pub mod filter_block;
pub mod hash;
pub mod mojang;
mod skip;
pub mod table;

pub use error::{Error, Result, StatusCode};
pub use skip::{REQUIRE_ENV, SKIP_MESSAGE, require_leveldb};

/// Whether LevelDB 1.23 was found at build time and linked into this crate.
///
/// When false, every wrapper panics with [`SKIP_MESSAGE`]; tests call
/// [`require_leveldb`] first instead.
pub const fn available() -> bool {
    cfg!(leveldb_available)
}
