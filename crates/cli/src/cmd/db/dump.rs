//! `leveltable db dump DIR`: the live view in key order, as `build` reads it; or every stored
//! version.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use leveltable_db::dbformat::ValueType;
use leveltable_db::filename::log_file_name;
use leveltable_db::{Origin, VersionStatus};

use crate::cmd::Outcome;
use crate::cmd::db::{OpenArgs, db_error, open_with_progress, table_name};
use crate::error::{CliError, Result};
use crate::lines::{Encoding, LineError, write_entry};
use crate::output::Output;
use crate::progress::Progress;

/// Print the database's live entries as KEY<TAB>VALUE, in key order.
///
/// `leveltable build` (and `db build`) read the output back. With --internal, every stored
/// version instead: KEY<TAB>SEQ<TAB>put|del<TAB>VALUE, newest first per key. With --salvage,
/// what LevelDB's repair would recover (every table and log in the directory, the MANIFEST
/// ignored); with both, two more columns: live|shadowed|deleted and the file the version is
/// in, tables the MANIFEST no longer lists included.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The database directory.
    pub dir: PathBuf,
    #[command(flatten)]
    pub open: OpenArgs,
    /// Print keys and values as hex digits.
    #[arg(long)]
    pub hex: bool,
    /// Print every stored version, not only the live view.
    #[arg(long)]
    pub internal: bool,
    /// Read every table and log of the directory as a repair would, ignoring the MANIFEST.
    #[arg(long)]
    pub salvage: bool,
    /// Draw no progress bar (--salvage draws one on standard error while it reads the
    /// files, when standard error is a terminal).
    #[arg(long, short)]
    pub quiet: bool,
}

/// Runs the command.
///
/// # Errors
/// A database that cannot be opened or read, an entry that text mode cannot print, or a
/// failed write.
pub fn run(args: Args, output: &mut Output) -> Result<Outcome> {
    let encoding = Encoding::from_hex_flag(args.hex);
    output.flush()?;
    // Only a salvage reads every file at the open.
    let progress = Progress::counting(args.quiet || !args.salvage);
    let db = open_with_progress(&args.dir, args.salvage, args.open, &mut |done, total| {
        progress.report(done, total);
    })?;
    progress.finish();
    let mut line = Vec::new();
    let mut number = 0u64;
    if !args.internal {
        for entry in db.iter() {
            let (key, value) = entry.map_err(|e| db_error(&args.dir, e))?;
            number += 1;
            line.clear();
            write_entry(&key, &value, encoding, &mut line)
                .map_err(|e| unprintable(number, &key, e, encoding))?;
            output.out(&line)?;
        }
        return Ok(Outcome::Success);
    }
    for version in db.versions() {
        let v = version.map_err(|e| db_error(&args.dir, e))?;
        number += 1;
        let deleted = v.value_type == ValueType::Deletion;
        line.clear();
        let fields = encoding.encode(&v.user_key, &mut line).and_then(|()| {
            let kind = if deleted { "del" } else { "put" };
            // Writing into a Vec cannot fail.
            let _ = write!(line, "\t{}\t{kind}\t", v.sequence);
            encoding.encode(if deleted { b"" } else { &v.value }, &mut line)
        });
        fields.map_err(|_| {
            CliError::new(format!(
                "version {number} (key {}) contains a tab or a newline{}",
                encoding.show(&v.user_key),
                encoding.hex_hint()
            ))
        })?;
        if args.salvage {
            let status = match v.status {
                VersionStatus::Live => "live",
                VersionStatus::Shadowed => "shadowed",
                VersionStatus::Deleted => "deleted",
            };
            // Writing into a Vec cannot fail.
            let _ = write!(line, "\t{status}\t{}", file_name(&args.dir, v.origin));
        }
        line.push(b'\n');
        output.out(&line)?;
    }
    Ok(Outcome::Success)
}

/// The name of the file a version came from: `000005.log`, or the table's file.
fn file_name(dir: &Path, origin: Origin) -> String {
    match origin {
        Origin::Log { number } => log_file_name(number),
        Origin::Table { number, .. } => table_name(dir, number),
    }
}

/// The error for an entry text mode cannot print, as `dump` words it.
fn unprintable(number: u64, key: &[u8], e: LineError, encoding: Encoding) -> CliError {
    let field = match e {
        LineError::Key(_) => "key",
        _ => "value",
    };
    CliError::new(format!(
        "entry {number} (key {}): the {field} contains a tab or a newline{}",
        encoding.show(key),
        encoding.hex_hint()
    ))
}
