//! `leveltable db export DIR --format jsonl|csv|arrow`: the live entries in key order, for
//! tools that read JSON lines, CSV or Arrow (DuckDB, Polars, pandas, spreadsheets).

use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::builder::BinaryBuilder;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{DataType, Field, Schema};

use crate::cmd::Outcome;
use crate::cmd::db::{OpenArgs, db_error, open};
use crate::error::{CliError, Result};
use crate::lines::Encoding;
use crate::output::Output;

/// Rows per Arrow record batch.
const BATCH_ROWS: usize = 65_536;
/// Bytes of keys, or of values, per Arrow record batch at most (a `binary` column's
/// 32-bit offsets cap it below 2 GiB).
const BATCH_BYTES: usize = 256 << 20;

/// The output formats.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One JSON object per line: {"key": ..., "value": ...}.
    Jsonl,
    /// A header line `key,value`, then one line per entry (RFC 4180 quoting).
    Csv,
    /// An Arrow IPC stream of record batches with `key` and `value` (binary) columns.
    Arrow,
}

/// Export the database's live entries in key order, as JSON lines, CSV or an Arrow IPC
/// stream, on standard output.
///
/// JSON and CSV hold keys and values as text: UTF-8 as it is (an entry that is not UTF-8
/// is an error suggesting --hex), or with --hex as hex digits. Arrow holds the bytes
/// themselves (`binary` columns); DuckDB reads the stream with
/// `read_arrow('/dev/stdin')`-style readers, pyarrow with `pyarrow.ipc.open_stream`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The database directory.
    pub dir: PathBuf,
    #[command(flatten)]
    pub open: OpenArgs,
    /// The output format.
    #[arg(long, value_enum)]
    pub format: Format,
    /// Keys and values as hex digits (JSON lines and CSV).
    #[arg(long)]
    pub hex: bool,
}

/// Runs the command.
///
/// # Errors
/// A database that cannot be opened or read, an entry that is not UTF-8 without --hex, or
/// a failed write.
pub fn run(args: Args, output: &mut Output) -> Result<Outcome> {
    if args.hex && args.format == Format::Arrow {
        return Err(CliError::new(
            "--hex is for --format jsonl and csv: Arrow columns hold the bytes themselves",
        ));
    }
    let db = open(&args.dir, false, args.open)?;
    output.flush()?;
    let entries = db.iter().map(|e| e.map_err(|e| db_error(&args.dir, e)));
    match args.format {
        Format::Arrow => arrow(entries, output),
        format => text(entries, format, Encoding::from_hex_flag(args.hex), output),
    }
}

type Entry = Result<(Vec<u8>, Vec<u8>)>;

/// A field as text: UTF-8 as it is, or hex digits.
fn field<'a>(
    bytes: &'a [u8],
    encoding: Encoding,
    hex: &'a mut Vec<u8>,
    number: u64,
    what: &str,
) -> Result<&'a str> {
    if encoding == Encoding::Hex {
        hex.clear();
        // Hex digits hold no tab or newline: encoding cannot fail.
        let _ = encoding.encode(bytes, hex);
        return Ok(std::str::from_utf8(hex).unwrap_or_default());
    }
    std::str::from_utf8(bytes).map_err(|_| {
        CliError::new(format!(
            "entry {number} (key {}): the {what} is not UTF-8 text; --hex prints keys and \
             values as hex digits",
            Encoding::Hex.show(bytes)
        ))
    })
}

/// `s` as a CSV field: quoted if it holds a comma, a quote or a line break, quotes doubled.
fn csv_field(s: &str, line: &mut Vec<u8>) {
    if s.contains([',', '"', '\n', '\r']) {
        line.push(b'"');
        line.extend_from_slice(s.replace('"', "\"\"").as_bytes());
        line.push(b'"');
    } else {
        line.extend_from_slice(s.as_bytes());
    }
}

fn text(
    entries: impl Iterator<Item = Entry>,
    format: Format,
    encoding: Encoding,
    output: &mut Output,
) -> Result<Outcome> {
    if format == Format::Csv {
        output.out(b"key,value\n")?;
    }
    let (mut key_hex, mut value_hex, mut line) = (Vec::new(), Vec::new(), Vec::new());
    let mut number = 0u64;
    for entry in entries {
        let (key, value) = entry?;
        number += 1;
        let k = field(&key, encoding, &mut key_hex, number, "key")?;
        let v = field(&value, encoding, &mut value_hex, number, "value")?;
        line.clear();
        if format == Format::Csv {
            csv_field(k, &mut line);
            line.push(b',');
            csv_field(v, &mut line);
        } else {
            let object = serde_json::json!({ "key": k, "value": v });
            // Serializing a map of strings into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut line, &object);
        }
        line.push(b'\n');
        output.out(&line)?;
    }
    Ok(Outcome::Success)
}

fn arrow(mut entries: impl Iterator<Item = Entry>, output: &mut Output) -> Result<Outcome> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("key", DataType::Binary, false),
        Field::new("value", DataType::Binary, false),
    ]));
    let failed = |e: arrow_schema::ArrowError| CliError::new(format!("arrow: {e}"));
    let mut writer = StreamWriter::try_new(Vec::new(), &schema).map_err(failed)?;
    let mut done = false;
    while !done {
        let mut keys = BinaryBuilder::new();
        let mut values = BinaryBuilder::new();
        let (mut rows, mut key_bytes, mut value_bytes) = (0, 0, 0);
        while rows < BATCH_ROWS && key_bytes < BATCH_BYTES && value_bytes < BATCH_BYTES {
            let Some(entry) = entries.next() else {
                done = true;
                break;
            };
            let (key, value) = entry?;
            if key.len() >= i32::MAX as usize - key_bytes
                || value.len() >= i32::MAX as usize - value_bytes
            {
                return Err(CliError::new(format!(
                    "an entry of {} + {} bytes does not fit an Arrow binary column",
                    key.len(),
                    value.len()
                )));
            }
            keys.append_value(&key);
            values.append_value(&value);
            key_bytes += key.len();
            value_bytes += value.len();
            rows += 1;
        }
        if rows > 0 {
            let columns: Vec<ArrayRef> = vec![Arc::new(keys.finish()), Arc::new(values.finish())];
            let batch = RecordBatch::try_new(Arc::clone(&schema), columns).map_err(failed)?;
            writer.write(&batch).map_err(failed)?;
        }
        if done {
            writer.finish().map_err(failed)?;
        }
        // The stream's bytes so far, handed to standard output batch by batch.
        let buffer = writer.get_mut();
        output.out(buffer)?;
        buffer.clear();
    }
    Ok(Outcome::Success)
}
