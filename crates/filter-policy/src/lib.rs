#![doc = include_str!("../README.md")]
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

mod bloom;
mod policy;

pub use bloom::BloomFilterPolicy;
pub use policy::FilterPolicy;
