//! `leveltable db put DIR KEY VALUE`: one key set, as LevelDB's `DB::Put`.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::cmd::Outcome;
use crate::cmd::db::writable::{WriteArgs, close, decode_arg, open_writable, write_error};
use crate::error::Result;

/// Set KEY to VALUE in a database.
///
/// The database is opened for writing as LevelDB opens it: its LOCK is taken (another
/// process holding it is an error, exit code 2), the old log becomes a level-0 table, and
/// the write goes to a new log. Prints nothing. Put `--` before a key or value that starts
/// with `-`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The database directory.
    pub dir: PathBuf,
    /// The key.
    pub key: OsString,
    /// Its value.
    pub value: OsString,
    #[command(flatten)]
    pub write: WriteArgs,
}

/// Runs the command.
///
/// # Errors
/// A key or value that does not decode, a database that cannot be opened (missing,
/// locked, damaged) or written.
pub fn run(args: Args) -> Result<Outcome> {
    let encoding = args.write.encoding();
    let key = decode_arg(&args.key, encoding, "the key")?;
    let value = decode_arg(&args.value, encoding, "the value")?;
    let db = open_writable(&args.dir, &args.write)?;
    db.put(&key, &value, args.write.write_options())
        .map_err(|e| write_error(&args.dir, e))?;
    close(db, &args.dir)?;
    Ok(Outcome::Success)
}
