//! `leveltable db ...`: whole LevelDB databases, read-only (`get`, `dump`, `export`,
//! `verify`, `watch`, `stats`), bulk-built (`build`, `build-part`, `commit`), written to as
//! LevelDB writes (`put`, `delete`, `write`, `compact`) and repaired (`repair`).

use std::path::Path;

use leveltable_db::filename::{FileType, parse_file_name, sst_table_file_name, table_file_name};
use leveltable_db::table_cache::DEFAULT_TABLE_MEMORY_BUDGET;
use leveltable_db::{Db, DbOptions, Error};

use crate::cmd::Outcome;
use crate::error::{CliError, Result};
use crate::output::Output;

pub mod build;
pub mod compact;
pub mod delete;
pub mod dump;
pub mod export;
pub mod get;
pub mod put;
pub mod repair;
pub mod stats;
pub mod verify;
pub mod watch;
pub mod writable;
pub mod write;

/// Read, build and write whole LevelDB databases (directories with CURRENT, a MANIFEST,
/// tables and logs).
///
/// Reading (get, dump, verify, stats, watch) never writes to the directory: no LOCK, no new log,
/// no compaction, so a database another process has open can be read. The write commands
/// (put, delete, write, compact) open the database as LevelDB does: they take its LOCK
/// (refused, exit code 2, while LevelDB or another program has it open), turn the old log
/// into a level-0 table, start a new log and MANIFEST, and compact in the background.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    Get(get::Args),
    Dump(dump::Args),
    Export(export::Args),
    Verify(verify::Args),
    Stats(stats::Args),
    Watch(watch::Args),
    Build(build::Args),
    BuildPart(build::PartArgs),
    Commit(build::CommitArgs),
    Put(put::Args),
    Delete(delete::Args),
    Write(write::Args),
    Compact(compact::Args),
    Repair(repair::Args),
}

/// Runs the `db` command given.
///
/// # Errors
/// As each command says.
pub fn run(args: Args, output: &mut Output) -> Result<Outcome> {
    match args.command {
        Command::Get(args) => get::run(args, output),
        Command::Dump(args) => dump::run(args, output),
        Command::Export(args) => export::run(args, output),
        Command::Verify(args) => verify::run(args, output),
        Command::Stats(args) => stats::run(args, output),
        Command::Watch(args) => watch::run(args, output),
        Command::Build(mut args) if crate::remote::is_url(&args.dir) => {
            let url = args.dir.clone();
            let quiet = args.build.quiet;
            to_url(&url, quiet, output, |dir, output| {
                args.dir = dir;
                build::run(args, output)
            })
        }
        Command::Build(args) => build::run(args, output),
        Command::BuildPart(args) => build::run_part(args, output),
        Command::Commit(mut args) if crate::remote::is_url(&args.dir) => {
            let url = args.dir.clone();
            let quiet = args.quiet;
            // The parts stay staged until the upload is complete: a failed one can be run
            // again.
            let mut parts = Vec::new();
            let outcome = to_url(&url, quiet, output, |dir, output| {
                args.dir = dir;
                parts = build::run_commit_keeping_parts(args, output)?;
                Ok(Outcome::Success)
            })?;
            build::remove_staging(&parts);
            Ok(outcome)
        }
        Command::Commit(args) => build::run_commit(args, output),
        Command::Put(args) => put::run(args),
        Command::Delete(args) => delete::run(args),
        Command::Write(args) => write::run(args, output),
        Command::Compact(args) => compact::run(args, output),
        Command::Repair(args) => repair::run(args, output),
    }
}

/// `db build` or `db commit` to a URL: the database is made in a temporary directory, then
/// uploaded to the prefix with CURRENT last, so no reader sees a partial database there.
/// The prefix must be new or empty, as a directory must.
fn to_url(
    url: &Path,
    quiet: bool,
    output: &mut Output,
    make: impl FnOnce(std::path::PathBuf, &mut Output) -> Result<Outcome>,
) -> Result<Outcome> {
    let url = url
        .to_str()
        .ok_or_else(|| CliError::new("a URL must be valid Unicode"))?;
    crate::remote::check_empty_prefix(url)?;
    let tmp = tempfile::tempdir()
        .map_err(|e| CliError::new(format!("cannot make a temporary directory: {e}")))?;
    let dir = tmp.path().join("db");
    let outcome = make(dir.clone(), output)?;
    let bytes = crate::remote::upload_db(&dir, url)?;
    if !quiet {
        output.err_line(format!(
            "uploaded {bytes} bytes to {}",
            crate::remote::shown(url)
        ))?;
    }
    Ok(outcome)
}

/// How the read commands (`get`, `dump`, `verify`, `stats`) open the database.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct OpenArgs {
    /// The most bytes the open tables may keep in memory (their index and filter blocks,
    /// decompressed); past it, tables are closed and reopened when needed. A table that
    /// alone needs more is an error naming it. Default: 512 MiB.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_TABLE_MEMORY_BUDGET,
          value_parser = clap::value_parser!(u64).range(1..), hide_default_value = true)]
    pub table_memory: u64,
}

impl OpenArgs {
    fn options(self) -> DbOptions {
        crate::profile::db_options().table_memory_budget(self.table_memory)
    }
}

/// Opens the database `dir` read-only, or with `salvage` reads what LevelDB's repair would
/// recover.
///
/// # Errors
/// A message naming the file that is missing or bad.
pub(crate) fn open(dir: &Path, salvage: bool, how: OpenArgs) -> Result<Db> {
    open_with_progress(dir, salvage, how, &mut |_, _| {})
}

/// [`open`], calling `progress(done, total)` with the bytes a salvage has read.
///
/// # Errors
/// As [`open`].
pub(crate) fn open_with_progress(
    dir: &Path,
    salvage: bool,
    how: OpenArgs,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Db> {
    if crate::remote::is_url(dir) {
        if salvage {
            return Err(CliError::new(
                "--salvage reads a local directory only; copy the database first",
            ));
        }
        return crate::remote::open_db(dir, how.options());
    }
    match std::fs::metadata(dir) {
        Ok(m) if !m.is_dir() => {
            return Err(CliError::new(format!(
                "{} is not a directory; a LevelDB database is a directory",
                dir.display()
            )));
        }
        Err(e) => return Err(CliError::io("cannot open", dir, &e)),
        Ok(_) => {}
    }
    let opened = if salvage {
        Db::salvage_with_progress(dir, how.options(), progress)
    } else {
        Db::open(dir, how.options())
    };
    opened.map_err(|e| db_error(dir, e))
}

/// Refuses a URL given to a command that follows a database (`db watch`, `chromium
/// local-storage --watch`): a follower reads a local directory only.
///
/// # Errors
/// A message saying so, for a URL.
pub(crate) fn local_to_follow(dir: &Path) -> Result<()> {
    if crate::remote::is_url(dir) {
        return Err(CliError::new(format!(
            "{}: following a database reads a local directory only; copy the database first",
            crate::remote::shown(&dir.to_string_lossy())
        )));
    }
    Ok(())
}

/// The name of table `number` in `dir`: `NNNNNN.ldb`, or `NNNNNN.sst` when only that file
/// exists (LevelDB before 1.14 named tables so).
fn table_name(dir: &Path, number: u64) -> String {
    let ldb = table_file_name(number);
    let sst = sst_table_file_name(number);
    if !dir.join(&ldb).exists() && dir.join(&sst).exists() {
        sst
    } else {
        ldb
    }
}

/// The message for a database error: corruption says `corruption:` and where; the rest
/// loses the crate's `db: ` prefix and names the file. A directory without CURRENT is not
/// a database, unless it holds a database's other files (then its CURRENT was lost).
pub(crate) fn db_error(dir: &Path, e: Error) -> CliError {
    if let Error::MissingFile { file, .. } = &e
        && file.as_os_str() == "CURRENT"
        && !crate::remote::is_url(dir)
    {
        let files = database_files(dir);
        if files.is_empty() {
            return CliError::new(format!(
                "{}: not a LevelDB database: no CURRENT file",
                dir.display()
            ));
        }
        return lost_current(dir, &files);
    }
    let corrupt = e.is_corruption();
    let text = match e {
        Error::Io { path, source } => {
            let path = if path.as_os_str().is_empty() {
                dir.to_owned()
            } else {
                path
            };
            return CliError::io("cannot read", &path, &source);
        }
        Error::InvalidArgument(message) if message.contains("table memory budget") => {
            return CliError::new(format!("{message} (--table-memory)"));
        }
        Error::InvalidArgument(message) => return CliError::new(message.into_owned()),
        other => other.to_string(),
    };
    let text = text.strip_prefix("db: ").unwrap_or(&text);
    if corrupt {
        CliError::new(format!("corruption: {text}"))
    } else {
        CliError::new(text.to_owned())
    }
}

/// The error for a directory that holds a database's `files` but no CURRENT.
pub(crate) fn lost_current(dir: &Path, files: &[String]) -> CliError {
    CliError::new(format!(
        "corruption: {}: no CURRENT file, though it holds a database's files ({}); \
         `leveltable db dump --salvage` reads what they hold",
        dir.display(),
        files.join(", ")
    ))
}

/// Up to three of the MANIFESTs, tables and logs in `dir`, by name.
pub(crate) fn database_files(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| {
            matches!(
                parse_file_name(name),
                Some(FileType::Manifest(_) | FileType::Table(_) | FileType::Log(_))
            )
        })
        .collect();
    names.sort();
    names.truncate(3);
    names
}

/// What is wrong with the table file `path` that opening it would report obscurely: a
/// directory standing in its place (`no such device` from a map, `is a directory` from a
/// read), or a symbolic link to nothing (`no such file or directory`).
fn table_path_problem(path: &Path) -> Option<CliError> {
    leveltable_db::storage::table_path_problem(path).map(|e| CliError::io("cannot read", path, &e))
}
