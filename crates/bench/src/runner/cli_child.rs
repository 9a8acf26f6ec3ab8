//! The C++ tool the `cli` rows measure ours against (`ltb_cli_get`, `ltb_cli_build` and
//! `ltb_cli_db_write` in the native loops), run as a child of this runner, and the running
//! of either tool as a timed process.

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};

use super::config::Result;
use super::harness::timed;
use crate::leveldb;

/// The first argument that makes the runner act as the C++ tool: `CHILD_COMMAND get TABLE`
/// or `CHILD_COMMAND build OUT`, input on standard input.
pub const CHILD_COMMAND: &str = "__leveldb-cli";

/// Runs the C++ tool in this process (see [`CHILD_COMMAND`]); returns its exit code.
///
/// # Errors
///
/// Wrong arguments, or LevelDB's error.
pub fn child(args: &[String]) -> Result<u8> {
    match args {
        [command, path] if command == "get" => Ok(leveldb::cli_get(path.as_ref())? as u8),
        [command, path] if command == "build" => {
            leveldb::cli_build(path.as_ref())?;
            Ok(0)
        }
        [command, dir, batch, sync] if command == "db-write" => {
            leveldb::cli_db_write(dir.as_ref(), batch.parse()?, sync == "sync")?;
            Ok(0)
        }
        _ => Err(format!(
            "usage: leveltable-bench {CHILD_COMMAND} get TABLE | build OUT | db-write DIR BATCH sync|nosync"
        )
        .into()),
    }
}

/// Lowercase hex, as both tools print it.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Runs `command` with standard input from `input` and its output streams into `out` and
/// `err`; returns the time from start to exit and the exit code.
///
/// `input` is read once first, untimed: a host that reclaims cold page cache (DAMON on
/// some virtual machines) may have dropped it since the last run, and the tool that ran
/// first would then also be timed reading it from the disk.
pub(crate) fn run_timed(
    command: &mut Command,
    input: &Path,
    out: &Path,
    err: &Path,
) -> Result<(std::time::Duration, Option<i32>)> {
    std::io::copy(&mut File::open(input)?, &mut std::io::sink())?;
    command
        .stdin(Stdio::from(File::open(input)?))
        .stdout(Stdio::from(File::create(out)?))
        .stderr(Stdio::from(File::create(err)?));
    let (elapsed, status) = timed(|| Ok(command.status()?))?;
    Ok((elapsed, status.code()))
}
