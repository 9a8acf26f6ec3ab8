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

pub use error::Error;

/// The result type of this crate.
pub type Result<T> = std::result::Result<T, Error>;
