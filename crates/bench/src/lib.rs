//! The fixed benchmark workloads of leveltable, shared by the criterion benches and the
//! comparison runner so that anyone can reproduce a figure, and the runner itself.
//!
//! Every input derives from [`SplitMix64`](workload::SplitMix64) with a fixed seed; keys are
//! [`key(j)`](workload::key), `j` in decimal zero-padded to 16 ASCII digits.
//!
//! The runner (`cargo run --release -p leveltable-bench -- all`) measures each workload on
//! leveltable, on LevelDB 1.23 ([`leveldb`]: C++ loops linked against the installed
//! library) and on the `sstable` and `rusty-leveldb` crates where their public API reaches,
//! interleaving the systems round by round and keeping each one's best figure
//! ([`runner`]); [`report`] prints the table with each figure's ratio to LevelDB.

// Built without LevelDB, its handles are empty stand-ins that nothing can construct; the
// runner still drops them where a handle built against LevelDB must be closed.
#![cfg_attr(not(leveldb_loops), allow(clippy::drop_non_drop))]

pub mod leveldb;
pub mod mmap;
pub mod report;
pub mod runner;
pub mod workload;
