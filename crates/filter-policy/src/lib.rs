#![doc = include_str!("../README.md")]
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

mod bloom;
pub mod local_bloom;
mod policy;

pub use bloom::BloomFilterPolicy;
pub use local_bloom::LocalBloomPolicy;
pub use policy::FilterPolicy;
