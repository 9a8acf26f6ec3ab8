//! `leveltable db delete DIR KEY...`: keys deleted in one write batch.

use std::ffi::OsString;
use std::path::PathBuf;

use leveltable_db::WriteBatchBuilder;

use crate::cmd::Outcome;
use crate::cmd::db::writable::{WriteArgs, close, decode_arg, open_writable, write_error};
use crate::error::Result;

/// Delete keys from a database, in one write batch.
///
/// A reader or a crash sees all of the keys deleted or none. A key that is absent is no error (LevelDB's `DB::Delete`). The database is opened as
/// for `db put`. Prints nothing. Put `--` before keys that start with `-`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The database directory.
    pub dir: PathBuf,
    /// The keys to delete.
    #[arg(value_name = "KEY", required = true)]
    pub keys: Vec<OsString>,
    #[command(flatten)]
    pub write: WriteArgs,
}

/// Runs the command.
///
/// # Errors
/// A key that does not decode (nothing is deleted), a database that cannot be opened
/// (missing, locked, damaged) or written.
pub fn run(args: Args) -> Result<Outcome> {
    let encoding = args.write.encoding();
    let mut batch = WriteBatchBuilder::default();
    for (i, arg) in args.keys.iter().enumerate() {
        let key = decode_arg(arg, encoding, &format!("key argument {}", i + 1))?;
        batch.delete(&key);
    }
    let db = open_writable(&args.dir, &args.write)?;
    db.write(&batch, args.write.write_options())
        .map_err(|e| write_error(&args.dir, e))?;
    close(db, &args.dir)?;
    Ok(Outcome::Success)
}
