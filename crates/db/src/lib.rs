#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

pub mod dbformat;
mod error;

pub use error::Error;

/// The result type of this crate.
pub type Result<T> = std::result::Result<T, Error>;
