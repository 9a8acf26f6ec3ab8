//! `leveltable db get DIR [KEY...]`: the newest value of each key.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::cmd::Outcome;
use crate::cmd::db::{OpenArgs, db_error, open};
use crate::cmd::get::{for_each_key, report};
use crate::error::{CliError, Result};
use crate::lines::{Encoding, write_entry};
use crate::output::Output;

/// Look keys up in a database, printing KEY<TAB>VALUE for each key found.
///
/// A key that is absent or deleted prints `not found: KEY` on standard error and makes the
/// exit code 1. Keys come from the arguments, or one per line from standard input when none
/// are given. The newest writes, still in the log, are seen.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The database directory.
    pub dir: PathBuf,
    #[command(flatten)]
    pub open: OpenArgs,
    /// Keys to look up (put `--` before keys that start with `-`).
    #[arg(value_name = "KEY")]
    pub keys: Vec<OsString>,
    /// Keys and values are hex digits.
    #[arg(long)]
    pub hex: bool,
}

/// Runs the command.
///
/// # Errors
/// A database that cannot be opened or read, a key that does not decode, a value that text
/// mode cannot print, or a failed write.
pub fn run(args: Args, output: &mut Output) -> Result<Outcome> {
    let encoding = Encoding::from_hex_flag(args.hex);
    let db = open(&args.dir, false, args.open)?;
    let (mut gets, mut found) = (0u64, 0u64);
    let mut line = Vec::new();
    for_each_key(&args.keys, encoding, output, |output, key| {
        gets += 1;
        match db.get(key).map_err(|e| db_error(&args.dir, e))? {
            Some(value) => {
                line.clear();
                write_entry(key, &value, encoding, &mut line).map_err(|_| {
                    CliError::new(format!(
                        "the value of key {} contains a tab or a newline{}",
                        encoding.show(key),
                        encoding.hex_hint()
                    ))
                })?;
                found += 1;
                output.out(&line)
            }
            None => report(output, b"not found: ", key, encoding),
        }
    })?;
    Ok(if found == gets {
        Outcome::Success
    } else {
        Outcome::NotFound
    })
}
