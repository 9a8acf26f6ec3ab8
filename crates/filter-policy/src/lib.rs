#![doc = include_str!("../README.md")]
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

mod bloom;
pub mod cache_local_bloom;
mod known;
mod policy;

pub use bloom::BloomFilterPolicy;
pub use cache_local_bloom::CacheLocalBloomPolicy;
pub use known::KnownPolicy;
pub use policy::FilterPolicy;
