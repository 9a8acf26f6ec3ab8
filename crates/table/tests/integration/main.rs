//! The table crate's integration tests, one module per concern, built as one binary. The
//! tests of `remove_temporaries`, which closes the process's registry, are binaries of their
//! own.

mod common;

mod atomic_replace;
mod claimed_size;
mod codecs;
mod concurrency;
mod dual_filter;
mod format_doc;
mod golden;
mod hostile;
mod index_shapes;
mod kill;
mod map_ahead;
mod model;
mod open_plan;
mod reader;
mod resident;
mod torture;
mod verify_progress;
mod zstd_golden;
