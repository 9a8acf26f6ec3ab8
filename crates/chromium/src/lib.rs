#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

pub mod coding;
pub mod comparator;
pub mod error;
pub mod idb_key;
pub mod indexeddb;
pub mod json;
pub mod local_storage;
pub mod metadata;
pub mod read;
pub mod session_storage;
pub mod v8;

pub use comparator::IdbCmp1;
pub use error::{Error, Result};
pub use idb_key::IdbKey;
pub use indexeddb::{IdbRecordKey, KeyPrefix, KeyType};
pub use read::{comparators, open};
