//! `leveltable chromium ...`: what Chrome, Chromium and Electron apps keep in LevelDB, as
//! JSON lines.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use leveltable_chromium::IdbCmp1;
use leveltable_chromium::read::{self, Reading, indexeddb::Filter};
use leveltable_db::{ChangeOp, Db, FollowEvent, Follower};
use leveltable_table::Comparator;
use serde_json::Value;

use crate::cmd::Outcome;
use crate::cmd::db::{OpenArgs, db_error, local_to_follow, open};
use crate::error::{CliError, Result};
use crate::output::Output;

/// Decode Chrome, Chromium and Electron storage (IndexedDB, Local Storage, Session
/// Storage) into JSON lines.
///
/// Each command reads one LevelDB directory of a profile (`~/.config/google-chrome/Default`,
/// an Electron app's data directory) and prints one JSON object a line. Reading never
/// writes to the directory and takes no lock, so it works while the browser runs: it reads
/// the files as they are (what the browser has written to them).
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Print every item of a Local Storage directory (`Default/Local Storage/leveldb`) as
    /// JSON lines.
    ///
    /// One line per item: {"origin", "key", "value"}. A record that does not decode is
    /// printed with null fields, an "error" and its "key_hex" and "value_hex".
    ///
    /// With --watch, then each change the browser commits, as it commits it: the item's
    /// line with its "seq" and "op" ("put", or "del" with a null "value"). It reads the
    /// log's new bytes only, writes nothing to the directory (on Linux it waits on an
    /// inotify watch of it, unless --poll-only), and runs until interrupted
    /// (SIGINT, SIGTERM or SIGHUP: exit code 0); changes that are in no log any more (the
    /// browser moved them into tables before they were read) end it with exit code 2.
    LocalStorage(LocalStorageArgs),
    /// Print every item of a Session Storage directory (`Default/Session Storage`) as JSON
    /// lines.
    ///
    /// One line per item and tab (namespace) that holds it: {"namespace", "origin", "key",
    /// "value", "map_id"}; an item of a closed tab's map has a null namespace and origin. A
    /// record that does not decode is printed with null fields, an "error" and its
    /// "key_hex" and "value_hex".
    SessionStorage(StorageArgs),
    Indexeddb(IndexedDbArgs),
}

/// How the commands read the directory.
#[derive(clap::Args, Debug)]
struct ReadArgs {
    #[command(flatten)]
    open: OpenArgs,
    /// Read every table and log of the directory as LevelDB's repair would (the MANIFEST
    /// ignored), and print every stored version, each with its `sequence` number and
    /// `state`: live, deleted (its `value` is null) or shadowed (an older version).
    #[arg(long)]
    salvage: bool,
}

impl ReadArgs {
    fn reading(&self) -> Reading {
        if self.salvage {
            Reading::Versions
        } else {
            Reading::Live
        }
    }
}

/// A Local Storage or Session Storage directory and how to read it.
#[derive(clap::Args, Debug)]
struct StorageArgs {
    /// The LevelDB directory.
    dir: PathBuf,
    #[command(flatten)]
    read: ReadArgs,
}

/// A Local Storage directory, how to read it, and whether to follow it.
#[derive(clap::Args, Debug)]
struct LocalStorageArgs {
    #[command(flatten)]
    storage: StorageArgs,
    /// After the items, print each change as the browser commits it.
    #[arg(long, conflicts_with = "salvage")]
    watch: bool,
    /// With --watch, how often to look at the log for new writes, in milliseconds (with a
    /// watch of the directory, the longest wait without an event).
    #[arg(long, value_name = "MS", default_value_t = 10, requires = "watch",
          value_parser = clap::value_parser!(u64).range(1..=60_000))]
    poll_ms: u64,
    /// With --watch, look every --poll-ms only, without an inotify watch of the directory.
    #[arg(long, requires = "watch")]
    poll_only: bool,
}

/// List an IndexedDB directory's databases (`Default/IndexedDB/<origin>.indexeddb.leveldb`),
/// or with --dump print its records as JSON lines.
///
/// Without --dump, one line per database: {"origin", "database", "id", "version",
/// "object_stores": [{"name", "id", "key_path", "auto_increment", "records", "indexes":
/// [{"name", "id", "key_path", "unique", "multi_entry", "entries"}]}]}.
///
/// With --dump, one line per record: {"origin", "database", "store", "key", "value"}: the
/// key as JSON (arrays as arrays, dates, binaries and special numbers as {"type": ...}
/// objects) and the value as JSON, with {"type": ...} objects for what JSON lacks
/// (undefined, BigInt, Date, Map, Set, typed arrays, blobs, ...). A record that does not
/// decode is printed with an "error" and its "key_hex" and "value_hex".
#[derive(clap::Args, Debug)]
struct IndexedDbArgs {
    /// The LevelDB directory (`*.indexeddb.leveldb`).
    dir: PathBuf,
    #[command(flatten)]
    read: ReadArgs,
    /// Print the records instead of the list of databases.
    #[arg(long)]
    dump: bool,
    /// Only the records of the database of this name.
    #[arg(long, value_name = "NAME", requires = "dump")]
    database: Option<String>,
    /// Only the records of the object stores of this name.
    #[arg(long, value_name = "NAME", requires = "dump")]
    store: Option<String>,
}

/// Runs the `chromium` command given.
///
/// # Errors
/// A directory that cannot be opened or read, or a failed write.
pub fn run(args: Args, output: &mut Output) -> Result<Outcome> {
    match args.command {
        Command::LocalStorage(LocalStorageArgs {
            storage: a,
            watch,
            poll_ms,
            poll_only,
        }) => {
            if watch {
                local_to_follow(&a.dir)?;
            }
            let stop = watch
                .then(leveltable_process::stop_flag_on_signals)
                .transpose()
                .map_err(|e| CliError::new(format!("cannot handle signals: {e}")))?;
            let db = open(&a.dir, a.read.salvage, a.read.open)?;
            expect_kind(&db, &a.dir, false)?;
            let reading = a.read.reading();
            print(read::local_storage::records(&db, reading), &a.dir, output)?;
            match stop {
                Some(stop) => {
                    let poll = Duration::from_millis(poll_ms);
                    let follower = db.follow(None).poll_interval(poll).poll_only(poll_only);
                    watch_local_storage(follower, &a.dir, poll, &stop, output)
                }
                None => Ok(Outcome::Success),
            }
        }
        Command::SessionStorage(a) => {
            let db = open(&a.dir, a.read.salvage, a.read.open)?;
            expect_kind(&db, &a.dir, false)?;
            let reading = a.read.reading();
            let records =
                read::session_storage::records(&db, reading).map_err(|e| db_error(&a.dir, e))?;
            print(records, &a.dir, output)
        }
        Command::Indexeddb(a) => {
            let db = open(&a.dir, a.read.salvage, a.read.open)?;
            expect_kind(&db, &a.dir, true)?;
            if !a.dump {
                let databases = read::indexeddb::summary(&db).map_err(|e| db_error(&a.dir, e))?;
                return print(databases.into_iter().map(Ok), &a.dir, output);
            }
            let filter = Filter {
                database: a.database,
                store: a.store,
            };
            let records = read::indexeddb::records(&db, a.read.reading(), &filter)
                .map_err(|e| db_error(&a.dir, e))?;
            let mut printed = 0u64;
            let outcome = print(records.inspect(|_| printed += 1), &a.dir, output)?;
            if printed == 0 && (filter.database.is_some() || filter.store.is_some()) {
                // A misspelt name is otherwise no different from an empty store.
                output.err_line(no_match_note(&a.dir, &filter))?;
            }
            Ok(outcome)
        }
    }
}

/// Refuses an IndexedDB directory (comparator `idb_cmp1`) given to the Local or Session
/// Storage commands, and any other given to `indexeddb`: their keys would not decode.
fn expect_kind(db: &Db, dir: &Path, indexeddb: bool) -> Result<()> {
    let comparator = &db.properties().comparator;
    let is_indexeddb = comparator == IdbCmp1.name();
    match (indexeddb, is_indexeddb) {
        (true, false) => Err(CliError::new(format!(
            "{}: not an IndexedDB database (its comparator is {comparator}, not idb_cmp1); \
             `leveltable chromium local-storage` or `session-storage` read the others",
            dir.display()
        ))),
        (false, true) => Err(CliError::new(format!(
            "{}: an IndexedDB database (comparator idb_cmp1); \
             `leveltable chromium indexeddb` reads it",
            dir.display()
        ))),
        _ => Ok(()),
    }
}

/// Prints each change `follower` yields, decoded, until `stop` is set (looked at every
/// `poll` at least).
fn watch_local_storage(
    mut follower: Follower,
    dir: &Path,
    poll: Duration,
    stop: &AtomicBool,
    output: &mut Output,
) -> Result<Outcome> {
    output.flush()?;
    while !stop.load(Ordering::Relaxed) {
        match follower
            .next_event_timeout(poll)
            .map_err(|e| db_error(dir, e))?
        {
            None => {}
            Some(FollowEvent::Batch(change)) => {
                for (sequence, op) in (change.sequence..).zip(&change.ops) {
                    let object = match op {
                        ChangeOp::Put { key, value } => {
                            read::local_storage::change(sequence, key, Some(value))
                        }
                        ChangeOp::Delete { key } => {
                            read::local_storage::change(sequence, key, None)
                        }
                    };
                    if let Some(object) = object {
                        output.out_line(object)?;
                    }
                }
                output.flush()?;
            }
            Some(FollowEvent::Gap { first, last }) => {
                return Err(CliError::new(format!(
                    "{}: sequences {first}..{last} are no longer in any log (the browser \
                     moved them into tables); start again",
                    dir.display()
                )));
            }
        }
    }
    Ok(Outcome::Success)
}

/// `note: no records of DIR matched --database NAME --store NAME`, for a dump whose names
/// selected nothing.
fn no_match_note(dir: &Path, filter: &Filter) -> String {
    let mut names = String::new();
    for (flag, name) in [("--database", &filter.database), ("--store", &filter.store)] {
        if let Some(name) = name {
            names.push_str(&format!(
                " {flag} {}",
                serde_json::Value::from(name.as_str())
            ));
        }
    }
    format!("note: no records of {} matched{names}", dir.display())
}

/// Prints each object as a line.
fn print(
    objects: impl Iterator<Item = leveltable_db::Result<Value>>,
    dir: &Path,
    output: &mut Output,
) -> Result<Outcome> {
    for object in objects {
        let object = object.map_err(|e| db_error(dir, e))?;
        output.out_line(object)?;
    }
    Ok(Outcome::Success)
}
