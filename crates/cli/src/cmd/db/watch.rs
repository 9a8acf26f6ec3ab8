//! `leveltable db watch DIR [--from-seq N] [--hex] [--snapshot] [--poll-ms MS] [--poll-only]`:
//! a change feed of a live database, one JSON line per operation.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use leveltable_db::{ChangeOp, FollowEvent};

use crate::cmd::Outcome;
use crate::cmd::db::{OpenArgs, db_error, local_to_follow, open};
use crate::error::{CliError, Result};
use crate::lines::Encoding;
use crate::output::Output;

/// Print each write committed to a database, as another process (LevelDB, a browser, a
/// node) commits it.
///
/// One JSON line per operation, in commit order:
/// {"seq":N,"op":"put","key":"…","value":"…"} or {"seq":N,"op":"del","key":"…"}. Keys and
/// values are strings of their bytes (which must then be UTF-8), lowercase hex with --hex.
/// Without --from-seq, writes committed after the command starts; --snapshot first prints
/// the database's contents as puts at its current sequence, then every write after it.
/// Reads the logs' new bytes only and writes nothing to the directory (no LOCK). On Linux it
/// waits for writes on an inotify watch of the directory, looking at least every --poll-ms;
/// elsewhere, or with --poll-only, it looks every --poll-ms. Runs until
/// interrupted (SIGINT, SIGTERM or SIGHUP end it with exit code 0). Writes that are in no
/// log any more (the writer moved them into tables before they were read) end it with
/// exit code 2 and a message naming their sequences: start again with --snapshot.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The database directory.
    pub dir: PathBuf,
    /// Print the operations from this sequence number on.
    #[arg(long, value_name = "N", conflicts_with = "snapshot")]
    pub from_seq: Option<u64>,
    /// Keys and values as hex digits.
    #[arg(long)]
    pub hex: bool,
    /// First print the current contents, as puts at the current sequence.
    #[arg(long)]
    pub snapshot: bool,
    /// How often to look at the log for new writes, in milliseconds (with a watch of the
    /// directory, the longest wait without an event).
    #[arg(long, value_name = "MS", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub poll_ms: u64,
    /// Look every --poll-ms only, without an inotify watch of the directory.
    #[arg(long)]
    pub poll_only: bool,
    #[command(flatten)]
    pub open: OpenArgs,
}

/// Runs the command until a signal stops it.
///
/// # Errors
/// A database that cannot be opened or followed, a key or value that is not UTF-8 without
/// --hex, writes no log holds any more, or a failed write of the output.
pub fn run(args: Args, output: &mut Output) -> Result<Outcome> {
    local_to_follow(&args.dir)?;
    let stop = leveltable_process::stop_flag_on_signals()
        .map_err(|e| CliError::new(format!("cannot handle signals: {e}")))?;
    let encoding = Encoding::from_hex_flag(args.hex);
    let db = open(&args.dir, false, args.open)?;
    let mut line = Vec::new();
    if args.snapshot {
        let sequence = db.snapshot();
        for entry in db.iter() {
            let (key, value) = entry.map_err(|e| db_error(&args.dir, e))?;
            json_line(&mut line, sequence, Some(&value), &key, encoding)?;
            output.out(&line)?;
        }
        output.flush()?;
    }
    let poll = Duration::from_millis(args.poll_ms);
    let mut follower = db
        .follow(args.from_seq)
        .poll_interval(poll)
        .poll_only(args.poll_only);
    while !stop.load(Ordering::Relaxed) {
        let Some(event) = follower
            .next_event_timeout(poll)
            .map_err(|e| db_error(&args.dir, e))?
        else {
            continue;
        };
        match event {
            FollowEvent::Batch(change) => {
                for (sequence, op) in (change.sequence..).zip(&change.ops) {
                    match op {
                        ChangeOp::Put { key, value } => {
                            json_line(&mut line, sequence, Some(value), key, encoding)?;
                        }
                        ChangeOp::Delete { key } => {
                            json_line(&mut line, sequence, None, key, encoding)?;
                        }
                    }
                    output.out(&line)?;
                }
                output.flush()?;
            }
            FollowEvent::Gap { first, last } => {
                return Err(CliError::new(format!(
                    "{}: sequences {first}..{last} are no longer in any log (the writer moved \
                     them into tables); start again with --snapshot",
                    args.dir.display()
                )));
            }
        }
    }
    Ok(Outcome::Success)
}

/// Sets `line` to the JSON line of one operation (`value` `None` for a delete), its fields
/// in the order `seq`, `op`, `key`, `value`.
fn json_line(
    line: &mut Vec<u8>,
    sequence: u64,
    value: Option<&[u8]>,
    key: &[u8],
    encoding: Encoding,
) -> Result<()> {
    let op = if value.is_some() { "put" } else { "del" };
    line.clear();
    line.extend_from_slice(format!("{{\"seq\":{sequence},\"op\":\"{op}\",\"key\":").as_bytes());
    json_string(line, key, encoding).map_err(|()| {
        CliError::new(format!(
            "key {} (sequence {sequence}) is not UTF-8; use --hex",
            encoding.show(key)
        ))
    })?;
    if let Some(value) = value {
        line.extend_from_slice(b",\"value\":");
        json_string(line, value, encoding).map_err(|()| {
            CliError::new(format!(
                "the value of key {} (sequence {sequence}) is not UTF-8; use --hex",
                encoding.show(key)
            ))
        })?;
    }
    line.extend_from_slice(b"}\n");
    Ok(())
}

/// Appends `bytes` as a JSON string: their text, or their hex digits in hex mode. `Err` if
/// text mode meets bytes that are not UTF-8.
fn json_string(
    line: &mut Vec<u8>,
    bytes: &[u8],
    encoding: Encoding,
) -> std::result::Result<(), ()> {
    match encoding {
        Encoding::Hex => {
            line.push(b'"');
            encoding.encode(bytes, line).map_err(|_| ())?;
            line.push(b'"');
        }
        Encoding::Text => {
            let text = std::str::from_utf8(bytes).map_err(|_| ())?;
            serde_json::to_writer(&mut *line, text).map_err(|_| ())?;
        }
    }
    Ok(())
}
