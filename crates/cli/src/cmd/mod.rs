//! One module per command: each has its clap `Args` and a `run` that returns how the
//! command ended.

use std::process::ExitCode;

pub mod audit;
pub mod build;
pub mod chromium;
pub mod completions;
pub mod db;
pub mod dump;
pub mod get;
pub mod man;
pub mod stats;
pub mod verify;

/// How a command that did not fail ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Everything asked for was done: exit code 0.
    Success,
    /// At least one key asked for was not found: exit code 1.
    NotFound,
}

impl Outcome {
    /// The process exit code.
    pub fn exit_code(self) -> ExitCode {
        match self {
            Outcome::Success => ExitCode::SUCCESS,
            Outcome::NotFound => ExitCode::from(1),
        }
    }
}
