//! The fixed benchmark workloads of leveltable, shared by the criterion benches and the
//! comparison runner so that anyone can reproduce a figure.
//!
//! Every input derives from [`SplitMix64`](workload::SplitMix64) with a fixed seed; keys are [`key(j)`](workload::key), `j` in
//! decimal zero-padded to 16 ASCII digits.

#![forbid(unsafe_code)]

pub mod workload;
