#![doc = include_str!("../README.md")]
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

mod builder;
mod error;
mod filters;
pub mod format;
mod reader;

pub use builder::{FilterBlockBuilder, MAX_BLOCK_OFFSET};
pub use error::{Error, Result};
pub use filters::Filters;
pub use format::FILTER_BASE_LG;
pub use reader::FilterBlockReader;
