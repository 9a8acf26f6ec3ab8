#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod files;
#[cfg(all(unix, feature = "signals"))]
mod signals;
pub mod temporaries;
pub mod workers;

pub use files::{describe_file_type, sync_dir};
#[cfg(all(unix, feature = "signals"))]
pub use signals::{clean_up_on_signals, stop_flag_on_signals, wait_if_ending_by_signal};
pub use temporaries::{
    TemporaryDir, TemporaryGuard, create_registered, create_temporary, register_temporary_dir,
    release_with, remove_temporaries, rename_releasing,
};
