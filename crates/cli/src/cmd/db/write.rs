//! `leveltable db write DIR [INPUT]`: puts and deletes read from lines, applied in write
//! batches of `--batch` operations.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use leveltable_db::{Error as DbError, WritableDb, WriteBatchBuilder};

use crate::cmd::Outcome;
use crate::cmd::build::{Input, clean_up_on_signals};
use crate::cmd::db::writable::{WriteArgs, close, open_writable, write_error};
use crate::error::{CliError, Result, io_message};
use crate::lines::{
    DEFAULT_MAX_LINE, Encoding, LineError, LineReader, ReadError, parse_entry_into,
};
use crate::output::Output;
use crate::progress::Progress;

/// The operations of a write batch when `--batch` is not given.
const DEFAULT_BATCH: u32 = 1000;

/// Apply puts and deletes read from lines: put<TAB>KEY<TAB>VALUE or del<TAB>KEY.
///
/// The operations are applied in order, every --batch of them (default 1000) as one write
/// batch: a reader or a crash sees all of a batch or none of it. Empty lines are skipped
/// and not counted. A line that is malformed (or too long, or an input that cannot be
/// read) stops the command with exit code 2 and a message naming the input and the line:
/// the batches before it were written (the message says up to which line), nothing of its
/// batch nor after it was. The database is opened as for `db put`. Prints `wrote DIR: P
/// puts, D deletes in B write batches, S s` on standard error (not with --quiet), nothing
/// on standard output. SIGINT, SIGTERM or SIGHUP ends the command as the signal does, once
/// a batch being written is written, saying which lines the database acknowledged
/// (`error: interrupted; lines 1 to N were written (...), nothing after them`).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The database directory.
    pub dir: PathBuf,
    /// The input lines; standard input when absent or `-`.
    pub input: Option<PathBuf>,
    /// Operations per write batch (the last batch may hold fewer). A batch is held in
    /// memory until it is written.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_BATCH,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub batch: u32,
    /// Refuse input lines longer than this many bytes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_LINE)]
    pub max_line: usize,
    /// Print no summary and draw no progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub write: WriteArgs,
}

/// One line of input.
#[derive(Debug, PartialEq, Eq)]
enum Op<'a> {
    Put(&'a [u8], &'a [u8]),
    Delete(&'a [u8]),
}

/// What has been written so far.
#[derive(Debug, Default, Clone, Copy)]
struct Written {
    batches: u64,
    puts: u64,
    deletes: u64,
    /// The last line of the last batch written.
    through_line: u64,
}

impl Written {
    /// `message`, with what was written before the error.
    fn error(&self, message: impl std::fmt::Display) -> CliError {
        if self.batches == 0 {
            return CliError::new(format!("{message}; nothing was written"));
        }
        CliError::new(format!(
            "{message}; lines 1 to {} were written ({} in {}), nothing after them",
            self.through_line,
            counted(self.puts + self.deletes, "operation"),
            counted(self.batches, "write batch")
        ))
    }

    /// The message when the command is ended by a signal: what the database acknowledged.
    fn interrupted(&self, sync: bool) -> String {
        let written = self.error("interrupted").to_string();
        if sync || self.batches == 0 {
            return written;
        }
        format!(
            "{written} (not synced: a crash of the machine may lose the latest; --sync syncs each batch)"
        )
    }
}

/// The batches the database acknowledged, shared with the thread that handles SIGINT,
/// SIGTERM and SIGHUP: a write holds it while in progress, so the signal's message waits
/// for it, and no write starts after the message.
type Acknowledged = Arc<Mutex<Written>>;

fn acknowledged(shared: &Acknowledged) -> MutexGuard<'_, Written> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Writes `batch` (taking its operations, which leaves it empty: a large batch is not
/// copied), and records `written` as acknowledged once the database has.
fn write_batch(
    db: &WritableDb,
    batch: &mut WriteBatchBuilder,
    args: &Args,
    shared: &Acknowledged,
    before: &Written,
    written: Written,
) -> Result<()> {
    let mut acked = acknowledged(shared);
    db.write_owned(std::mem::take(batch), args.write.write_options())
        .map_err(|e| before.error(write_error(&args.dir, e)))?;
    *acked = written;
    Ok(())
}

/// Runs the command.
///
/// # Errors
/// An input that cannot be read, a malformed line, a database that cannot be opened
/// (missing, locked, damaged) or written; the batches before the error stay written.
pub fn run(args: Args, output: &mut Output) -> Result<Outcome> {
    let started = Instant::now();
    let encoding = args.write.encoding();
    // The input first: a wrong path creates no database.
    let input = Input::open(args.input.as_deref())?;
    let db = open_writable(&args.dir, &args.write)?;
    output.flush()?;
    // A signal ends the command saying which lines the database acknowledged.
    let shared: Acknowledged = Arc::default();
    let on_signal = Arc::clone(&shared);
    let sync = args.write.sync;
    clean_up_on_signals(move || {
        let written = acknowledged(&on_signal);
        // Not `eprintln!`, which panics if standard error is closed: this thread must go on
        // to end the process by the signal.
        let _ = writeln!(std::io::stderr(), "error: {}", written.interrupted(sync));
        // Held: no write starts before the process ends.
        std::mem::forget(written);
    })?;
    let progress = Progress::new(input.file_len, args.quiet);
    let mut lines = LineReader::new(input.reader, args.max_line);
    let name = &input.name;
    let (mut key_buf, mut value_buf) = (Vec::new(), Vec::new());
    let mut batch = WriteBatchBuilder::default();
    let (mut puts, mut deletes) = (0u64, 0u64);
    let mut written = Written::default();
    let mut last_line = 0;
    loop {
        let (number, line) = match lines.next_line() {
            Ok(Some(next)) => next,
            Ok(None) => break,
            Err(ReadError::Io(e)) => {
                return Err(written.error(format!("cannot read {name}: {}", io_message(&e))));
            }
            Err(ReadError::TooLong { line, max }) => {
                return Err(written.error(format!(
                    "line {line} of {name} is longer than {max} bytes (raise the limit with \
                     --max-line)"
                )));
            }
        };
        last_line = number;
        if line.is_empty() {
            continue;
        }
        let op = parse_op(line, encoding, &mut key_buf, &mut value_buf)
            .and_then(|op| add_op(&mut batch, &op).map(|()| op));
        match op {
            Ok(Op::Put(..)) => puts += 1,
            Ok(Op::Delete(_)) => deletes += 1,
            Err(e) => return Err(written.error(format!("line {number} of {name}: {e}"))),
        }
        if batch.count() >= args.batch {
            let next = Written {
                batches: written.batches + 1,
                puts,
                deletes,
                through_line: number,
            };
            write_batch(&db, &mut batch, &args, &shared, &written, next)?;
            written = next;
        }
        progress.update_with(lines.bytes_read(), || {
            format!("{} operations", puts + deletes)
        });
    }
    let next = Written {
        batches: written.batches + u64::from(!batch.is_empty()),
        puts,
        deletes,
        through_line: last_line,
    };
    if batch.is_empty() {
        *acknowledged(&shared) = next;
    } else {
        write_batch(&db, &mut batch, &args, &shared, &written, next)?;
    }
    written = next;
    progress.finish();
    close(db, &args.dir)?;
    if !args.quiet {
        output.err_line(summary_line(&args.dir, &written, started.elapsed()))?;
    }
    Ok(Outcome::Success)
}

/// Reads `put<TAB>KEY<TAB>VALUE` or `del<TAB>KEY` (a line without its newline), decoding
/// hex fields into `key_buf` and `value_buf`.
fn parse_op<'a>(
    line: &'a [u8],
    encoding: Encoding,
    key_buf: &'a mut Vec<u8>,
    value_buf: &'a mut Vec<u8>,
) -> std::result::Result<Op<'a>, String> {
    let (word, rest) = match line.iter().position(|&b| b == b'\t') {
        Some(tab) => (&line[..tab], Some(&line[tab + 1..])),
        None => (line, None),
    };
    let op = match (word, rest) {
        (b"put", Some(rest)) => parse_entry_into(rest, encoding, key_buf, value_buf)
            .map(|(key, value)| Op::Put(key, value))
            .map_err(|e| match e {
                LineError::NoTab => {
                    "expected put<TAB>KEY<TAB>VALUE, found no tab after the key".to_owned()
                }
                LineError::ExtraTab => "expected put<TAB>KEY<TAB>VALUE, found more tabs; in \
                                        text mode neither the key nor the value may hold a \
                                        tab (use --hex)"
                    .to_owned(),
                e => e.to_string(),
            })?,
        (b"del", Some(rest)) => {
            if encoding == Encoding::Text && rest.contains(&b'\t') {
                return Err(
                    "expected del<TAB>KEY, found more tabs; in text mode the key may \
                            not hold a tab (use --hex)"
                        .to_owned(),
                );
            }
            Op::Delete(
                encoding
                    .decode_into(rest, key_buf)
                    .map_err(|e| format!("the key {e}"))?,
            )
        }
        (b"put", None) => return Err("expected put<TAB>KEY<TAB>VALUE, found no tab".to_owned()),
        (b"del", None) => return Err("expected del<TAB>KEY, found no tab".to_owned()),
        _ => {
            return Err(format!(
                "expected put<TAB>KEY<TAB>VALUE or del<TAB>KEY, found the operation {}",
                Encoding::Text.show(word)
            ));
        }
    };
    Ok(op)
}

/// Adds `op` to `batch`: an error for a key or value the write batch cannot hold (its
/// lengths are 32-bit; reachable only with a --max-line over 4 GiB).
fn add_op(batch: &mut WriteBatchBuilder, op: &Op<'_>) -> std::result::Result<(), String> {
    let added = match *op {
        Op::Put(key, value) => batch.try_put(key, value),
        Op::Delete(key) => batch.try_delete(key),
    };
    added.map(|_| ()).map_err(batch_error)
}

/// The message for an operation a write batch refuses.
fn batch_error(e: DbError) -> String {
    match e {
        DbError::TooLong { what, len, .. } => {
            format!("the {what} holds {len} bytes, more than LevelDB's 4 GiB - 1")
        }
        e => e.to_string().trim_start_matches("db: ").to_owned(),
    }
}

/// `wrote DIR: 990 puts, 10 deletes in 1 write batch, 0.02 s`.
fn summary_line(dir: &Path, w: &Written, elapsed: Duration) -> String {
    format!(
        "wrote {}: {}, {} in {}, {:.2} s",
        dir.display(),
        counted(w.puts, "put"),
        counted(w.deletes, "delete"),
        counted(w.batches, "write batch"),
        elapsed.as_secs_f64()
    )
}

/// `1 put`, `2 puts`, `2 write batches`.
fn counted(n: u64, what: &str) -> String {
    match (n, what.ends_with('h')) {
        (1, _) => format!("1 {what}"),
        (_, true) => format!("{n} {what}es"),
        (_, false) => format!("{n} {what}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(
        line: &[u8],
        encoding: Encoding,
    ) -> std::result::Result<(bool, Vec<u8>, Vec<u8>), String> {
        let (mut k, mut v) = (Vec::new(), Vec::new());
        parse_op(line, encoding, &mut k, &mut v).map(|op| match op {
            Op::Put(k, v) => (true, k.to_vec(), v.to_vec()),
            Op::Delete(k) => (false, k.to_vec(), Vec::new()),
        })
    }

    #[test]
    fn puts_and_deletes_in_text_and_hex() {
        let t = Encoding::Text;
        assert_eq!(
            parse(b"put\tk\tv w", t),
            Ok((true, b"k".to_vec(), b"v w".to_vec()))
        );
        assert_eq!(parse(b"put\t\t", t), Ok((true, vec![], vec![])));
        assert_eq!(parse(b"del\tk x", t), Ok((false, b"k x".to_vec(), vec![])));
        assert_eq!(parse(b"del\t", t), Ok((false, vec![], vec![])));
        let h = Encoding::Hex;
        assert_eq!(
            parse(b"put\t6B00\t0a09", h),
            Ok((true, b"k\0".to_vec(), b"\n\t".to_vec()))
        );
        assert_eq!(parse(b"del\t09", h), Ok((false, b"\t".to_vec(), vec![])));
    }

    /// An operation is added to the batch; one too long for it (a length past 4 GiB - 1,
    /// checked by `WriteBatchBuilder`) keeps the message this command always gave.
    #[test]
    fn operations_are_added_and_refusals_keep_their_message() {
        let mut batch = WriteBatchBuilder::default();
        add_op(&mut batch, &Op::Put(b"k", b"v")).unwrap();
        add_op(&mut batch, &Op::Delete(b"k")).unwrap();
        assert_eq!(batch.count(), 2);
        let too_long = |what, len| DbError::TooLong {
            what,
            len,
            limit: u64::from(u32::MAX),
        };
        assert_eq!(
            batch_error(too_long("key", 1 << 32)),
            "the key holds 4294967296 bytes, more than LevelDB's 4 GiB - 1"
        );
        assert_eq!(
            batch_error(too_long("value", 5 << 30)),
            "the value holds 5368709120 bytes, more than LevelDB's 4 GiB - 1"
        );
    }

    #[test]
    fn malformed_lines_say_what_is_wrong() {
        let t = Encoding::Text;
        let error = |line: &[u8], e| parse(line, e).unwrap_err();
        assert_eq!(
            error(b"put", t),
            "expected put<TAB>KEY<TAB>VALUE, found no tab"
        );
        assert_eq!(
            error(b"put\tk", t),
            "expected put<TAB>KEY<TAB>VALUE, found no tab after the key"
        );
        assert!(error(b"put\tk\tv\tw", t).contains("found more tabs"));
        assert_eq!(error(b"del", t), "expected del<TAB>KEY, found no tab");
        assert!(error(b"del\tk\tv", t).contains("found more tabs"));
        assert_eq!(
            error(b"PUT\tk\tv", t),
            "expected put<TAB>KEY<TAB>VALUE or del<TAB>KEY, found the operation \"PUT\""
        );
        assert_eq!(
            error(b"", t),
            "expected put<TAB>KEY<TAB>VALUE or del<TAB>KEY, found the operation \"\""
        );
        let h = Encoding::Hex;
        assert_eq!(
            error(b"put\t6b\tzz", h),
            "the value is not hex: \"z\" at position 1"
        );
        assert_eq!(
            error(b"del\t6", h),
            "the key has an odd number of hex digits (1)"
        );
        assert_eq!(
            error(b"del\t6b\t00", h),
            "the key is not hex: \"\\t\" at position 3"
        );
    }

    #[test]
    fn errors_say_what_was_written_before_them() {
        let nothing = Written::default();
        assert_eq!(
            nothing.error("line 1 of x: bad").to_string(),
            "line 1 of x: bad; nothing was written"
        );
        let some = Written {
            batches: 2,
            puts: 3,
            deletes: 1,
            through_line: 5,
        };
        assert_eq!(
            some.error("line 7 of x: bad").to_string(),
            "line 7 of x: bad; lines 1 to 5 were written (4 operations in 2 write batches), \
             nothing after them"
        );
        assert_eq!(
            summary_line(Path::new("db"), &some, Duration::from_millis(20)),
            "wrote db: 3 puts, 1 delete in 2 write batches, 0.02 s"
        );
    }
}
