//! `leveltable dump TABLE`: every entry, in order, as `build` reads them.

use std::io::Write as _;
use std::path::PathBuf;

use leveltable_db::dbformat::{ParsedInternalKey, ValueType, ldb_read_options};

use crate::cmd::Outcome;
use crate::error::{CliError, Result};
use crate::lines::{Encoding, LineError, write_entry};
use crate::output::Output;
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
    /// The table is a LevelDB database file (.ldb) of internal keys: print
    /// KEY<TAB>SEQ<TAB>put|del<TAB>VALUE per entry, in file order (VALUE empty for del).
    #[arg(long)]
    pub internal: bool,
}

/// Output is written in pieces of about this size.
const FLUSH_AT: usize = 64 * 1024;

/// Runs the command.
///
/// # Errors
/// An unreadable or corrupt table, an entry that text mode cannot print, or a failed write.
pub fn run(args: Args, output: &mut Output) -> Result<Outcome> {
    let encoding = Encoding::from_hex_flag(args.hex);
    if args.internal {
        return dump_internal(&args, encoding, output);
    }
    let file = TableFile::open(&args.table)?;
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
            // Entries before this one may still be buffered: they are shown first, as
            // everything buffered is written out before an error message.
            output.out(&buf)?;
            return Err(CliError::new(format!(
                "entry {number} (key {}): the {field} contains a tab or a newline{}",
                encoding.show(it.key()),
                encoding.hex_hint()
            )));
        }
        if buf.len() >= FLUSH_AT {
            output.out(&buf)?;
            buf.clear();
        }
        it.next();
    }
    output.out(&buf)?;
    it.status().map_err(|e| file.error(e))?;
    Ok(Outcome::Success)
}

/// `dump --internal`: one line per entry of a database file, its internal key taken apart.
fn dump_internal(args: &Args, encoding: Encoding, output: &mut Output) -> Result<Outcome> {
    let file = TableFile::open_with(&args.table, ldb_read_options())?;
    file.check_internal_keys()?;
    let mut buf = Vec::with_capacity(FLUSH_AT * 2);
    let mut it = file.table.iter();
    it.seek_to_first();
    let mut number = 0u64;
    while it.valid() {
        number += 1;
        let start = buf.len();
        if let Err(e) = internal_line(number, it.key(), it.value(), encoding, &mut buf) {
            // The entries before this one are shown first, as `dump` shows them.
            buf.truncate(start);
            output.out(&buf)?;
            return Err(e);
        }
        if buf.len() >= FLUSH_AT {
            output.out(&buf)?;
            buf.clear();
        }
        it.next();
    }
    output.out(&buf)?;
    it.status().map_err(|e| file.error(e))?;
    Ok(Outcome::Success)
}

/// Appends the line of entry `number` (`key`, `value`) to `buf`.
fn internal_line(
    number: u64,
    key: &[u8],
    value: &[u8],
    encoding: Encoding,
    buf: &mut Vec<u8>,
) -> Result<()> {
    let key = ParsedInternalKey::parse(key)
        .map_err(|e| CliError::new(format!("entry {number}: not a LevelDB internal key: {e}")))?;
    let deleted = key.value_type == ValueType::Deletion;
    let value: &[u8] = if deleted { b"" } else { value };
    let unprintable = |field: &str| {
        CliError::new(format!(
            "entry {number} (key {}): the {field} contains a tab or a newline{}",
            encoding.show(key.user_key),
            encoding.hex_hint()
        ))
    };
    encoding
        .encode(key.user_key, buf)
        .map_err(|_| unprintable("key"))?;
    let kind = if deleted { "del" } else { "put" };
    // Writing into a Vec cannot fail.
    let _ = write!(buf, "\t{}\t{kind}\t", key.sequence);
    encoding
        .encode(value, buf)
        .map_err(|_| unprintable("value"))?;
    buf.push(b'\n');
    Ok(())
}
