//! `leveltable get TABLE [KEY...]`: point lookups through the table's filter.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, IsTerminal};
use std::path::PathBuf;

use leveltable_db::InternalTable;
use leveltable_db::dbformat::{LookupResult, ldb_read_options};

use crate::cmd::Outcome;
use crate::error::{CliError, Result};
use crate::lines::{DEFAULT_MAX_LINE, Encoding, LineReader, ReadError, write_entry};
use crate::output::Output;
use crate::table_file::{Source, TableFile};

/// Look keys up, printing KEY<TAB>VALUE for each key found.
///
/// A missing key prints `not found: KEY` on standard error and makes the exit code 1. Keys
/// come from the arguments, or one per line from standard input when none are given.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The table to read.
    pub table: PathBuf,
    /// Keys to look up (put `--` before keys that start with `-`).
    #[arg(value_name = "KEY")]
    pub keys: Vec<OsString>,
    /// Keys and values are hex digits.
    #[arg(long)]
    pub hex: bool,
    /// Print the lookups' counters on standard error at the end.
    #[arg(long)]
    pub stats: bool,
    /// The table is a LevelDB database file (.ldb) of internal keys: print each key's newest
    /// value in the file, or `deleted: KEY` on standard error if that is a deletion.
    #[arg(long)]
    pub internal: bool,
}

/// Runs the command.
///
/// # Errors
/// An unreadable or corrupt table, a key that does not decode, a value that text mode cannot
/// print, or a failed write.
pub fn run(args: Args, output: &mut Output) -> Result<Outcome> {
    let encoding = Encoding::from_hex_flag(args.hex);
    let file = if args.internal {
        TableFile::open_with(&args.table, ldb_read_options())?
    } else {
        TableFile::open(&args.table)?
    };
    let internal = if args.internal {
        // A second handle, opened the same way, answers the internal-key lookups; `file`
        // still describes the table for error messages.
        let handle: Source = if crate::remote::is_url(&args.table) {
            crate::remote::open(&args.table)?.0
        } else {
            Box::new(
                File::open(&args.table)
                    .map_err(|e| CliError::io("cannot open", &args.table, &e))?,
            )
        };
        file.check_internal_keys()?;
        Some(InternalTable::open(handle).map_err(|e| file.db_error(e))?)
    } else {
        None
    };
    let mut lookup = Lookup {
        file: &file,
        internal: internal.as_ref(),
        encoding,
        line: Vec::new(),
        gets: 0,
        found: 0,
    };
    if args.keys.is_empty() && lookup.internal.is_none() && !io::stdin().is_terminal() {
        lookup.get_stdin_batches(output)?;
    } else {
        for_each_key(&args.keys, encoding, output, |output, key| {
            lookup.get(output, key)
        })?;
    }
    let (gets, found) = (lookup.gets, lookup.found);

    if args.stats {
        let c = internal
            .as_ref()
            .map_or(&file.table, InternalTable::table)
            .counters();
        let filter = file.properties().filter_policy.as_deref().unwrap_or("none");
        output.err_line(format_args!(
            "gets: {gets}, found: {found}, data blocks read: {}, filter checks: {}, \
             filter negatives: {}, filter: {filter}",
            c.data_blocks_read, c.filter_checks, c.filter_negatives
        ))?;
        if crate::remote::is_url(&args.table) {
            output.err_line(crate::remote::stats_line())?;
        }
    }
    Ok(if found == gets {
        Outcome::Success
    } else {
        Outcome::NotFound
    })
}

/// Calls `f` with each key asked for: the arguments, or when there are none, one key per line
/// of standard input (answered before the next is read when typed at a terminal).
///
/// # Errors
/// A key that does not decode, a failed read, or the first error of `f`.
pub fn for_each_key(
    keys: &[OsString],
    encoding: Encoding,
    output: &mut Output,
    mut f: impl FnMut(&mut Output, &[u8]) -> Result<()>,
) -> Result<()> {
    if !keys.is_empty() {
        for (i, arg) in keys.iter().enumerate() {
            let key = arg_bytes(arg)
                .and_then(|bytes| decode_key(encoding, &bytes))
                .map_err(|e| CliError::new(format!("key argument {}: {e}", i + 1)))?;
            f(output, &key)?;
        }
        return Ok(());
    }
    // Keys typed at a terminal get their answers before the next key is read.
    let interactive = io::stdin().is_terminal();
    let mut lines = LineReader::new(io::stdin().lock(), DEFAULT_MAX_LINE);
    let mut key_buf = Vec::new();
    loop {
        if interactive {
            output.flush()?;
        }
        let (number, line) = match lines.next_line() {
            Ok(Some(next)) => next,
            Ok(None) => return Ok(()),
            Err(ReadError::Io(e)) => return Err(CliError::stdin(&e)),
            Err(ReadError::TooLong { line, max }) => {
                return Err(CliError::new(format!(
                    "line {line} of standard input is longer than {max} bytes"
                )));
            }
        };
        let key = decode_key_into(encoding, line, &mut key_buf)
            .map_err(|e| CliError::new(format!("line {number} of standard input: {e}")))?;
        f(output, key)?;
    }
}

/// Writes `prefix` and `key` as a line on standard error.
///
/// # Errors
/// A failed write (quiet for a closed pipe).
pub fn report(output: &mut Output, prefix: &[u8], key: &[u8], encoding: Encoding) -> Result<()> {
    // The key was decoded from the same encoding, so it encodes back.
    output.err_field_line(prefix, key, encoding)
}

/// A key as typed: hex decoded, or in text mode checked to hold no tab or newline (it could
/// not be printed back unambiguously).
fn decode_key(encoding: Encoding, field: &[u8]) -> std::result::Result<Vec<u8>, String> {
    encoding
        .decode(field)
        .map(|k| k.into_owned())
        .map_err(|e| format!("the key {e}{}", encoding.hex_hint()))
}

/// [`decode_key`] into `buf`, reused from key to key.
fn decode_key_into<'a>(
    encoding: Encoding,
    field: &'a [u8],
    buf: &'a mut Vec<u8>,
) -> std::result::Result<&'a [u8], String> {
    encoding
        .decode_into(field, buf)
        .map_err(|e| format!("the key {e}{}", encoding.hex_hint()))
}

/// An argument's bytes. Unix arguments are bytes already; elsewhere they must be Unicode.
pub(crate) fn arg_bytes(arg: &OsStr) -> std::result::Result<Vec<u8>, String> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        Ok(arg.as_bytes().to_vec())
    }
    #[cfg(not(unix))]
    {
        arg.to_str()
            .map(|s| s.as_bytes().to_vec())
            .ok_or_else(|| "is not valid Unicode; give it in hex with --hex".to_owned())
    }
}

/// Keys from standard input (not a terminal) are looked up this many at a time, or fewer
/// when they hold [`BATCH_BYTES`]: one pass over the table in file order per batch, each data
/// block read and decoded once for all of the batch's keys it holds.
const BATCH_KEYS: usize = 1 << 18;

/// The most bytes of keys in a batch (see [`BATCH_KEYS`]).
const BATCH_BYTES: usize = 16 << 20;

/// The most bytes of values a batch holds until it prints them; the values of keys found
/// past this are looked up again, one key at a time, when their turn to print comes.
const BATCH_VALUE_BYTES: usize = 64 << 20;

/// A batch of keys from standard input and what the table answered for them.
#[derive(Default)]
struct Batch {
    /// The keys, decoded, end to end.
    bytes: Vec<u8>,
    /// Where each key ends in `bytes`.
    ends: Vec<usize>,
    /// The values found, end to end.
    values: Vec<u8>,
    /// What the table answered for each key.
    found: Vec<Answer>,
}

/// What the table answered for a key of a batch.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// Not found.
    Missing,
    /// Found; the value lies at this range of the batch's values.
    Held(usize, usize),
    /// Found, but the batch's values were full: look it up again.
    Again,
}

struct Lookup<'a> {
    file: &'a TableFile,
    /// Set with `--internal`: lookups by user key in a database file.
    internal: Option<&'a InternalTable<Source>>,
    encoding: Encoding,
    /// The output line being made, reused.
    line: Vec<u8>,
    gets: u64,
    found: u64,
}

impl Lookup<'_> {
    /// Looks up the keys on standard input in batches ([`BATCH_KEYS`]), printing the answers
    /// in input order, as [`get`](Self::get) prints them. A table error fails the batch
    /// before any of its answers is printed.
    fn get_stdin_batches(&mut self, output: &mut Output) -> Result<()> {
        let mut lines = LineReader::new(io::stdin().lock(), DEFAULT_MAX_LINE);
        let mut batch = Batch::default();
        let mut key_buf = Vec::new();
        loop {
            // Input that cannot be read ends the command, but the keys before it are answered
            // first, as one at a time they would have been.
            let read = match lines.next_line() {
                Ok(Some((number, line))) => decode_key_into(self.encoding, line, &mut key_buf)
                    .map_err(|e| CliError::new(format!("line {number} of standard input: {e}"))),
                Ok(None) => return self.answer(output, &mut batch),
                Err(ReadError::Io(e)) => Err(CliError::stdin(&e)),
                Err(ReadError::TooLong { line, max }) => Err(CliError::new(format!(
                    "line {line} of standard input is longer than {max} bytes"
                ))),
            };
            let key = match read {
                Ok(key) => key,
                Err(e) => {
                    self.answer(output, &mut batch)?;
                    return Err(e);
                }
            };
            batch.bytes.extend_from_slice(key);
            batch.ends.push(batch.bytes.len());
            if batch.ends.len() >= BATCH_KEYS || batch.bytes.len() >= BATCH_BYTES {
                self.answer(output, &mut batch)?;
            }
        }
    }

    /// Answers the keys of `batch` and empties it.
    fn answer(&mut self, output: &mut Output, batch: &mut Batch) -> Result<()> {
        let Batch {
            bytes,
            ends,
            values,
            found,
        } = batch;
        let mut start = 0;
        let keys: Vec<&[u8]> = ends
            .iter()
            .map(|&end| {
                let key = &bytes[start..end];
                start = end;
                key
            })
            .collect();
        found.clear();
        found.resize(keys.len(), Answer::Missing);
        values.clear();
        // `get_many_with` orders the keys by their blocks' offsets itself.
        self.file
            .table
            .get_many_with(&keys, |i, value| {
                if found[i] == Answer::Missing {
                    found[i] = if values.len().saturating_add(value.len()) <= BATCH_VALUE_BYTES {
                        let at = values.len();
                        values.extend_from_slice(value);
                        Answer::Held(at, values.len())
                    } else {
                        Answer::Again
                    };
                }
            })
            .map_err(|e| self.file.error(e))?;
        let encoding = self.encoding;
        for (key, answer) in keys.iter().zip(found.iter()) {
            match *answer {
                Answer::Held(from, to) => {
                    self.gets += 1;
                    self.line.clear();
                    write_entry(key, &values[from..to], encoding, &mut self.line)
                        .map_err(|_| unprintable_value(key, encoding))?;
                    self.found += 1;
                    output.out(&self.line)?;
                }
                Answer::Again => self.get(output, key)?,
                Answer::Missing => {
                    self.gets += 1;
                    report(output, b"not found: ", key, encoding)?;
                }
            }
        }
        bytes.clear();
        ends.clear();
        Ok(())
    }

    fn get(&mut self, output: &mut Output, key: &[u8]) -> Result<()> {
        self.gets += 1;
        let (encoding, line) = (self.encoding, &mut self.line);
        line.clear();
        let found = match self.internal {
            Some(table) => match table.get(key).map_err(|e| self.file.db_error(e))? {
                LookupResult::Value { value, .. } => Some(write_entry(key, &value, encoding, line)),
                LookupResult::Deleted { .. } => {
                    return report(output, b"deleted: ", key, encoding);
                }
                LookupResult::NotFound => None,
            },
            None => self
                .file
                .table
                .get_with(key, |value| write_entry(key, value, encoding, line))
                .map_err(|e| self.file.error(e))?,
        };
        match found {
            Some(Ok(())) => {
                self.found += 1;
                output.out(&self.line)
            }
            Some(Err(_)) => Err(unprintable_value(key, encoding)),
            None => report(output, b"not found: ", key, encoding),
        }
    }
}

/// The error for a value that text mode cannot print.
fn unprintable_value(key: &[u8], encoding: Encoding) -> CliError {
    CliError::new(format!(
        "the value of key {} contains a tab or a newline{}",
        encoding.show(key),
        encoding.hex_hint()
    ))
}
