//! `leveltable db repair SRC DEST` and `db repair DIR --in-place`: a damaged database
//! repaired without bringing deleted data back, with a report of what was lost.

use std::path::{Path, PathBuf};

use leveltable_db::{
    BulkOptions, DEFAULT_MAX_FILE_SIZE, Error, RepairOptions, RepairReport, repair_in_place,
    repair_with_progress,
};

use crate::cmd::Outcome;
use crate::cmd::build::clean_up_on_signals;
use crate::cmd::db::{OpenArgs, db_error};
use crate::error::{CliError, Result};
use crate::output::Output;
use crate::progress::Progress;

/// Repair a damaged database into a new one, without bringing deleted data back.
///
/// Reads SRC without writing to it and writes DEST, a new database LevelDB 1.23 opens,
/// holding for each key the newest version found. The tables the MANIFEST lists and the
/// logs it has not retired decide each key: a deletion found in them stays a deletion, and
/// tables the MANIFEST no longer lists (compaction inputs a crash left behind, files of an
/// older database) are ignored, except for keys in the range of a lost table or block that
/// nothing newer decides. If no MANIFEST can be read, every file counts and the newest
/// version wins, as LevelDB's RepairDB does, and the summary says so.
///
/// Checksums are checked: a table, data block or log record that fails is lost. A log
/// ending in a record cut short (a crash mid-write, or a damaged length) is read on past it
/// when the record's checksum tells its true length; what cannot be read is lost as the
/// log's tail (log-tail), which no reader can tell from a write a crash cut short. Keys whose
/// newest version found is older than a lost table or block covering them are uncertain (a
/// newer version may have been lost); they are kept unless --drop-uncertain. A summary goes
/// to standard error, and with --report FILE the whole report as JSON: every piece lost
/// (file, offset, length, key range), every file ignored and why, the uncertain keys per
/// range with a sample (keys in hex).
///
/// DEST is built beside its final name and renamed into place once whole; it must not
/// exist or be empty. With --in-place, SRC itself is repaired: the repaired database is
/// built beside it, swapped in with one rename, and the original directory is kept whole in
/// SRC/lost/ (LevelDB's RepairDB keeps what it sets aside there too). The database's LOCK is
/// held meanwhile. DEST is ordered by the comparator SRC's MANIFEST names (bytewise, or
/// Chromium's IndexedDB idb_cmp1), which its MANIFEST names too, and written with SRC's
/// compression, so that the program that wrote SRC reads it; a source whose MANIFEST names
/// another comparator is refused, naming the MANIFEST and the comparator, with nothing
/// written or changed.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The damaged database directory.
    pub src: PathBuf,
    /// The repaired database directory to create (not with --in-place).
    #[arg(required_unless_present = "in_place", conflicts_with = "in_place")]
    pub dest: Option<PathBuf>,
    /// Repair SRC itself, keeping the original files in SRC/lost/.
    #[arg(long)]
    pub in_place: bool,
    /// Write the loss report, as JSON, to this file (written whole, through a rename).
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Leave the uncertain keys out of the repaired database.
    #[arg(long)]
    pub drop_uncertain: bool,
    /// Uncertain keys listed per lost range in the report.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub sample: usize,
    /// A table file of the repaired database is closed once its entries reach this many
    /// bytes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_FILE_SIZE,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_file_size: u64,
    /// Print no summary and draw no progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub open: OpenArgs,
}

/// Runs `db repair`.
///
/// # Errors
/// A source that cannot be listed, a DEST that is not empty or lies inside SRC, a source
/// ordered by a comparator other than bytewise and idb_cmp1, a build or report that cannot
/// be written.
pub fn run(args: Args, output: &mut Output) -> Result<Outcome> {
    clean_up_on_signals(|| {})?;
    let options = RepairOptions::default()
        .db(crate::profile::db_options().table_memory_budget(args.open.table_memory))
        .bulk(BulkOptions::default().max_file_size(args.max_file_size))
        .drop_uncertain(args.drop_uncertain)
        .sample(args.sample);
    if let Some(report) = &args.report {
        check_report_path(report)?;
    }
    match std::fs::metadata(&args.src) {
        Ok(m) if !m.is_dir() => {
            return Err(CliError::new(format!(
                "{} is not a directory; a LevelDB database is a directory",
                args.src.display()
            )));
        }
        Err(e) => return Err(CliError::io("cannot open", &args.src, &e)),
        Ok(_) => {}
    }
    let report = if args.in_place {
        repair_in_place(&args.src, &options).map_err(|e| repair_error(&args.src, e))?
    } else {
        let dest = args.dest.as_deref().unwrap_or(Path::new(""));
        output.flush()?;
        let progress = Progress::counting(args.quiet);
        let report = repair_with_progress(&args.src, dest, &options, &mut |done, total| {
            progress.report(done, total);
        });
        progress.finish();
        report.map_err(|e| repair_error(&args.src, e))?
    };
    if !args.quiet {
        output.err(report.summary().as_bytes())?;
    }
    if let Some(path) = &args.report {
        // The repair is done by now: a report that fails says so, and where the database
        // is, so that nobody repairs it again or gives it up.
        let repaired = match &args.dest {
            Some(dest) if !args.in_place => dest,
            _ => &args.src,
        };
        write_report(path, &report).map_err(|e| {
            CliError::new(format!(
                "{e} (the repair finished: {} holds the repaired database; only the report \
                 is missing)",
                repaired.display()
            ))
        })?;
    }
    Ok(Outcome::Success)
}

/// The message for an error of a repair: a failed operation says what failed and the path;
/// the rest as for any database error.
fn repair_error(dir: &Path, e: Error) -> CliError {
    match e {
        Error::FileOp {
            doing,
            path,
            source,
        } => CliError::io(&doing, &path, &source),
        other => db_error(dir, other),
    }
}

/// Refuses a report path that is a directory, or whose directory does not exist, before
/// any work.
fn check_report_path(path: &Path) -> Result<()> {
    if path.is_dir() {
        return Err(CliError::new(format!(
            "{} is a directory; give the path of the report file to write",
            path.display()
        )));
    }
    let parent = report_dir(path);
    match std::fs::metadata(&parent) {
        Ok(m) if !m.is_dir() => Err(CliError::new(format!(
            "cannot write {}: {} is not a directory",
            path.display(),
            parent.display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(CliError::new(format!(
            "cannot write {}: the directory {} does not exist",
            path.display(),
            parent.display()
        ))),
        // Unreadable or unsearchable: creating the file will say what is wrong.
        _ => Ok(()),
    }
}

/// The directory the report at `path` is written in.
fn report_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// Writes the report to `path` whole: a temporary file beside it, synced, renamed, then the
/// directory synced ([`RepairReport::write_json`]).
fn write_report(path: &Path, report: &RepairReport) -> Result<()> {
    report.write_json(path).map_err(|e| repair_error(path, e))
}
