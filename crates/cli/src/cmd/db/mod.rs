//! `leveltable db ...`: whole LevelDB databases, read-only (`get`, `dump`, `verify`,
//! `stats`) and bulk-built (`build`, `build-part`, `commit`).

use std::path::Path;

use leveltable_db::filename::{sst_table_file_name, table_file_name};
use leveltable_db::{Db, Error};

use crate::cmd::Outcome;
use crate::error::{CliError, Result};
use crate::output::Output;

pub mod build;
pub mod dump;
pub mod get;
pub mod stats;
pub mod verify;

/// Read and build whole LevelDB databases (directories with CURRENT, a MANIFEST, tables and
/// logs). Reading never writes to the directory: no LOCK, no new log, no compaction.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    Get(get::Args),
    Dump(dump::Args),
    Verify(verify::Args),
    Stats(stats::Args),
    Build(build::Args),
    BuildPart(build::PartArgs),
    Commit(build::CommitArgs),
}

/// Runs the `db` command given.
///
/// # Errors
/// As each command says.
pub fn run(args: Args, output: &mut Output) -> Result<Outcome> {
    match args.command {
        Command::Get(args) => get::run(args, output),
        Command::Dump(args) => dump::run(args, output),
        Command::Verify(args) => verify::run(args, output),
        Command::Stats(args) => stats::run(args, output),
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
            to_url(&url, quiet, output, |dir, output| {
                args.dir = dir;
                build::run_commit(args, output)
            })
        }
        Command::Commit(args) => build::run_commit(args, output),
    }
}

/// `db build` or `db commit` to a URL: the database is made in a temporary directory, then
/// uploaded to the prefix with CURRENT last, so no reader sees a partial database there.
fn to_url(
    url: &Path,
    quiet: bool,
    output: &mut Output,
    make: impl FnOnce(std::path::PathBuf, &mut Output) -> Result<Outcome>,
) -> Result<Outcome> {
    let tmp = tempfile::tempdir()
        .map_err(|e| CliError::new(format!("cannot make a temporary directory: {e}")))?;
    let dir = tmp.path().join("db");
    let outcome = make(dir.clone(), output)?;
    let url = url
        .to_str()
        .ok_or_else(|| CliError::new("a URL must be valid Unicode"))?;
    let bytes = crate::remote::upload_db(&dir, url)?;
    if !quiet {
        output.err_line(format!(
            "uploaded {bytes} bytes to {}",
            crate::remote::shown(url)
        ))?;
    }
    Ok(outcome)
}

/// Opens the database `dir` read-only, or with `salvage` reads what LevelDB's repair would
/// recover.
///
/// # Errors
/// A message naming the file that is missing or bad.
fn open(dir: &Path, salvage: bool) -> Result<Db> {
    if crate::remote::is_url(dir) {
        if salvage {
            return Err(CliError::new(
                "--salvage reads a local directory only; copy the database first",
            ));
        }
        return crate::remote::open_db(dir, crate::profile::db_options());
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
        Db::salvage(dir, crate::profile::db_options())
    } else {
        Db::open(dir, crate::profile::db_options())
    };
    opened.map_err(|e| db_error(dir, e))
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
/// loses the crate's `db: ` prefix and names the file.
fn db_error(dir: &Path, e: Error) -> CliError {
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
