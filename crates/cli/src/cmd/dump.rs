//! `leveltable dump TABLE`: every entry, in order, as `build` reads them.

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use crate::cmd::Outcome;
use crate::error::{CliError, Result};
use crate::lines::{Encoding, LineError, write_entry};
use crate::table_file::TableFile;

/// Print every entry as KEY<TAB>VALUE, in key order.
///
/// `leveltable build` reads the output back into an identical table (given the same
/// options).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The table to read.
    pub table: PathBuf,
    /// Print keys and values as hex digits.
    #[arg(long)]
    pub hex: bool,
}

/// Output is written in pieces of about this size.
const FLUSH_AT: usize = 64 * 1024;

/// Runs the command.
///
/// # Errors
/// An unreadable or corrupt table, an entry that text mode cannot print, or a failed write.
pub fn run(args: Args) -> Result<Outcome> {
    let encoding = Encoding::from_hex_flag(args.hex);
    let file = TableFile::open(&args.table)?;
    let mut out = BufWriter::new(io::stdout().lock());
    let mut buf = Vec::with_capacity(FLUSH_AT * 2);
    let mut it = file.table.iter();
    it.seek_to_first();
    let mut number = 0u64;
    while it.valid() {
        number += 1;
        if let Err(e) = write_entry(it.key(), it.value(), encoding, &mut buf) {
            let field = match e {
                LineError::Key(_) => "key",
                _ => "value",
            };
            // Entries before this one may still be buffered: show them first.
            out.write_all(&buf).map_err(|e| CliError::stdout(&e))?;
            out.flush().map_err(|e| CliError::stdout(&e))?;
            return Err(CliError::new(format!(
                "entry {number} (key {}): the {field} contains a tab or a newline{}",
                encoding.show(it.key()),
                encoding.hex_hint()
            )));
        }
        if buf.len() >= FLUSH_AT {
            out.write_all(&buf).map_err(|e| CliError::stdout(&e))?;
            buf.clear();
        }
        it.next();
    }
    out.write_all(&buf).map_err(|e| CliError::stdout(&e))?;
    out.flush().map_err(|e| CliError::stdout(&e))?;
    it.status().map_err(|e| file.error(e))?;
    Ok(Outcome::Success)
}
