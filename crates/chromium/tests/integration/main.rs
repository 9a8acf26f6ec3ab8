//! The Chromium crate's integration tests, one module per concern, built as one binary.

mod common;

mod comparator_props;
mod dfindexeddb;
mod golden_indexeddb;
mod golden_order;
mod golden_storage;
mod golden_v8;
mod live_compressed;
mod live_copy;
mod read;
mod repair;
mod robustness;
mod v8_vectors;
