//! `leveltable db build DIR`, `db build-part STAGING` and `db commit DIR STAGING...`:
//! LevelDB databases bulk-built from `KEY<TAB>VALUE` lines, in one go or in parts.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use leveltable_db::{
    BulkOptions, CommitSummary, DEFAULT_MAX_FILE_SIZE, DbBuilder, Duplicates, Error,
    ExternalSorter, FileSystem, LocalFileSystem, PART_RECORD, Part, PartBuilder, SortedFeed,
    WritableFile, commit_on,
};

use crate::cmd::Outcome;
use crate::cmd::build::{Input, TableArgs, clean_up_on_signals, next_line};
use crate::cmd::db::db_error;
use crate::error::{CliError, Result};

/// The message for an error of a build or a commit: a failed operation says what failed
/// (`cannot write`, `cannot create`, `cannot copy … to`, `cannot sync`) and the path; the
/// rest as for any database error.
fn build_error(dir: &Path, e: Error) -> CliError {
    match e {
        Error::FileOp {
            doing,
            path,
            source,
        } => CliError::io(&doing, &path, &source),
        other => db_error(dir, other),
    }
}
use crate::lines::{DEFAULT_MAX_LINE, Encoding, LineReader, parse_entry};
use crate::output::Output;
use crate::progress::Progress;

/// The memory `--sort` holds entries in, unless `--memory` says otherwise.
const DEFAULT_SORT_MEMORY: u64 = 256 << 20;

/// Build a LevelDB database from lines of KEY<TAB>VALUE.
///
/// DIR must not exist or be empty. The tables are written at the last level, every entry
/// at sequence 0, so LevelDB opens the database without compacting it and its new writes
/// shadow the loaded values. Keys must be strictly increasing (bytewise) unless --sort is
/// given. On any error nothing is left at DIR; until the build is complete DIR holds no
/// CURRENT, so no reader takes it for a database.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The database directory to create.
    pub dir: PathBuf,
    /// The input lines; standard input when absent or `-`.
    pub input: Option<PathBuf>,
    /// The build's options.
    #[command(flatten)]
    pub build: BuildArgs,
}

/// Build one part of a database from lines of KEY<TAB>VALUE, for `db commit`.
///
/// The part's tables and its record (PART) are written to STAGING, which must not exist or
/// be empty. Keys must be strictly increasing unless --sort is given; parts committed
/// together must hold key ranges that do not overlap.
#[derive(clap::Args, Debug)]
pub struct PartArgs {
    /// The staging directory to create.
    pub staging: PathBuf,
    /// The input lines; standard input when absent or `-`.
    pub input: Option<PathBuf>,
    /// The build's options.
    #[command(flatten)]
    pub build: BuildArgs,
}

/// Commit parts built by `db build-part` as the database DIR.
///
/// The parts are given in key order. Every staged table is first checked against its
/// record (a regular file, its size and CRC32C, its real first and last keys), and parts
/// whose real key ranges are out of order or overlap are refused: nothing is moved. The
/// files are then linked (same file system) or copied and synced (another) into DIR, which
/// must not exist or be empty; a MANIFEST and then CURRENT are written; only then are the
/// staging directories removed. A commit that fails leaves the staging directories as they
/// were and DIR without its files, so it can be run again.
#[derive(clap::Args, Debug)]
pub struct CommitArgs {
    /// The database directory to create.
    pub dir: PathBuf,
    /// The parts' staging directories, in key order.
    #[arg(required = true)]
    pub staging: Vec<PathBuf>,
    /// Print no summary and draw no progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Options shared by `db build` and `db build-part`.
#[derive(clap::Args, Debug)]
pub struct BuildArgs {
    /// Keys and values are hex digits.
    #[arg(long)]
    pub hex: bool,
    /// The table options.
    #[command(flatten)]
    pub table: TableArgs,
    /// A table file is closed once its entries reach this many bytes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_FILE_SIZE,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_file_size: u64,
    /// Threads building table files (the files are the same whatever the number).
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=256))]
    pub threads: u32,
    /// Sort the input first, holding at most --memory bytes of it in memory and spilling
    /// sorted runs to temporary files beside the output.
    #[arg(long)]
    pub sort: bool,
    /// The memory --sort may hold entries in.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_SORT_MEMORY, requires = "sort")]
    pub memory: u64,
    /// What a key given twice means (in a row, or anywhere with --sort): an error
    /// (default), or keep the value given last.
    #[arg(long, value_enum)]
    pub dedup: Option<Dedup>,
    /// Print no summary and draw no progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// Refuse input lines longer than this many bytes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_LINE)]
    pub max_line: usize,
}

/// `--dedup`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dedup {
    /// The value given last wins.
    Last,
}

impl BuildArgs {
    fn options(&self) -> BulkOptions {
        BulkOptions::default()
            .table(self.table.table_options())
            .max_file_size(self.max_file_size)
            .threads(usize::try_from(self.threads).unwrap_or(1))
    }
}

/// Where entries go: a database or a part.
trait Sink {
    fn add(&mut self, key: &[u8], value: &[u8]) -> leveltable_db::Result<()>;
    /// Entries added so far.
    fn entries(&self) -> u64;
}

impl Sink for DbBuilder {
    fn add(&mut self, key: &[u8], value: &[u8]) -> leveltable_db::Result<()> {
        DbBuilder::add(self, key, value)
    }
    fn entries(&self) -> u64 {
        DbBuilder::entries(self)
    }
}

impl Sink for PartBuilder {
    fn add(&mut self, key: &[u8], value: &[u8]) -> leveltable_db::Result<()> {
        PartBuilder::add(self, key, value)
    }
    fn entries(&self) -> u64 {
        PartBuilder::entries(self)
    }
}

/// Reads the input lines into `sink`, sorted first with `--sort`; returns the input bytes.
fn feed(
    args: &BuildArgs,
    input: Option<&Path>,
    out: &Path,
    sink: &mut dyn Sink,
    output: &mut Output,
) -> Result<u64> {
    let encoding = Encoding::from_hex_flag(args.hex);
    let input = Input::open(input)?;
    output.flush()?;
    let progress = Progress::new(input.file_len, args.quiet);
    let mut lines = LineReader::new(input.reader, args.max_line);
    let order_error = |e: Error, line: u64| match e {
        Error::Table(leveltable_table::Error::KeyOutOfOrder { previous, got }) => {
            CliError::new(format!(
                "line {line}: key {} does not sort after the previous key {} (keys must be \
                 strictly increasing; --sort sorts them)",
                encoding.show(&got),
                encoding.show(&previous)
            ))
        }
        Error::DuplicateKey { key } => CliError::new(format!(
            "line {line}: duplicate key {} (keep the last one with --dedup last)",
            encoding.show(&key)
        )),
        other => build_error(out, other),
    };
    // The sort meets a key given twice when it merges, past the lines that gave it.
    let sort_error = |e: Error| match e {
        Error::DuplicateKey { key } => CliError::new(format!(
            "duplicate key {} (keep the last one with --dedup last)",
            encoding.show(&key)
        )),
        other => build_error(out, other),
    };
    let duplicates = match args.dedup {
        Some(Dedup::Last) => Duplicates::KeepLast,
        None => Duplicates::Error,
    };
    if args.sort {
        let parent = parent_dir(out);
        let mut sorter = ExternalSorter::new(args.memory, duplicates, &parent)
            .map_err(|e| build_error(out, e))?;
        while let Some((number, line)) = next_line(&mut lines, &input.name)? {
            let (key, value) = parse_entry(line, encoding)
                .map_err(|e| CliError::new(format!("line {number}: {e}")))?;
            sorter.add(&key, &value).map_err(sort_error)?;
            progress.update_with(lines.bytes_read(), || {
                format!("{} entries read", sorter.entries())
            });
        }
        progress.finish();
        sorter
            .finish(|key, value| sink.add(key, value))
            .map_err(sort_error)?;
    } else {
        // Keys given twice in a row are resolved as Python's build_part resolves them.
        let mut sorted = SortedFeed::new(duplicates);
        let entries = std::cell::Cell::new(sink.entries());
        let mut add = |key: &[u8], value: &[u8]| {
            entries.set(entries.get() + 1);
            sink.add(key, value)
        };
        let mut number = 0;
        while let Some((n, line)) = next_line(&mut lines, &input.name)? {
            number = n;
            let (key, value) = parse_entry(line, encoding)
                .map_err(|e| CliError::new(format!("line {number}: {e}")))?;
            // The feed passes an entry on when the next one arrives: an error of the
            // builder is about the line before this one, a duplicate about this one.
            sorted.add(&key, &value, &mut add).map_err(|e| match e {
                Error::DuplicateKey { .. } => order_error(e, number),
                e => order_error(e, number.saturating_sub(1)),
            })?;
            progress.update_with(lines.bytes_read(), || format!("{} entries", entries.get()));
        }
        sorted
            .finish(&mut add)
            .map_err(|e| order_error(e, number))?;
        progress.finish();
    }
    Ok(lines.bytes_read())
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// Runs `db build`.
///
/// # Errors
/// An unreadable input, a malformed line, keys out of order (or duplicate with --sort), a
/// DIR that is not new or empty, or a failed write; nothing is left at DIR.
pub fn run(args: Args, output: &mut Output) -> Result<Outcome> {
    let started = Instant::now();
    // The staging directory and the sort's spill directory are registered temporaries:
    // the signal handler removes them.
    clean_up_on_signals(|| {})?;
    let mut builder = DbBuilder::create(&args.dir, args.build.options())
        .map_err(|e| build_error(&args.dir, e))?;
    let bytes = feed(
        &args.build,
        args.input.as_deref(),
        &args.dir,
        &mut builder,
        output,
    )?;
    let summary = builder.finish().map_err(|e| build_error(&args.dir, e))?;
    if !args.build.quiet {
        output.err_line(summary_line(
            "wrote",
            &args.dir,
            &summary,
            Some((bytes, started.elapsed())),
        ))?;
    }
    Ok(Outcome::Success)
}

/// Runs `db build-part`.
///
/// # Errors
/// As `db build`, for STAGING.
pub fn run_part(args: PartArgs, output: &mut Output) -> Result<Outcome> {
    let started = Instant::now();
    clean_up_on_signals(|| {})?;
    let mut builder = PartBuilder::create(&args.staging, args.build.options())
        .map_err(|e| build_error(&args.staging, e))?;
    // Until the part is complete, STAGING (new or empty, now ours) is a temporary that the
    // signal handler removes, with the sort's spill directory.
    let guard = leveltable_process::register_temporary_dir(&args.staging)
        .map_err(|e| CliError::io("cannot build", &args.staging, &e))?;
    let built = feed(
        &args.build,
        args.input.as_deref(),
        &args.staging,
        &mut builder,
        output,
    )
    .and_then(|bytes| {
        let part = builder
            .finish()
            .map_err(|e| build_error(&args.staging, e))?;
        // Complete: STAGING is the part's now, kept on a signal.
        drop(guard);
        Ok((bytes, part))
    });
    let (bytes, part) = match built {
        Ok(built) => built,
        Err(e) => {
            // A part that failed leaves no files to commit by mistake.
            let _ = std::fs::remove_dir_all(&args.staging);
            return Err(e);
        }
    };
    if !args.build.quiet {
        let summary = part_summary(&part);
        output.err_line(summary_line(
            "wrote part",
            &args.staging,
            &summary,
            Some((bytes, started.elapsed())),
        ))?;
    }
    Ok(Outcome::Success)
}

/// Runs `db commit`.
///
/// # Errors
/// A staging directory without a part record, a staged table that differs from its record,
/// parts out of order or overlapping, a DIR that is not new or empty, or a failed copy or
/// write; the parts stay staged, unchanged.
pub fn run_commit(args: CommitArgs, output: &mut Output) -> Result<Outcome> {
    commit_parts(args, &LocalFileSystem, output).map(|_| Outcome::Success)
}

/// Runs `db commit` into a directory that is then uploaded: the staging directories are
/// left as they were, so that a failed upload can be run again; [`remove_staging`] removes
/// them once the upload is complete. Returns the parts.
///
/// # Errors
/// As [`run_commit`].
pub fn run_commit_keeping_parts(args: CommitArgs, output: &mut Output) -> Result<Vec<Part>> {
    let keep = KeepStaging(args.staging.clone());
    commit_parts(args, &keep, output)
}

/// Commits the parts of `args` through `file_system`; returns them.
fn commit_parts(
    args: CommitArgs,
    file_system: &dyn FileSystem,
    output: &mut Output,
) -> Result<Vec<Part>> {
    // Until CURRENT is in place, what the commit made in DIR is registered: the signal
    // handler removes it, and the parts stay staged.
    clean_up_on_signals(|| {})?;
    let parts = args
        .staging
        .iter()
        .map(|s| Part::load(s).map_err(|e| build_error(s, e)))
        .collect::<Result<Vec<Part>>>()?;
    output.flush()?;
    let progress = Progress::counting(args.quiet);
    let summary = commit_on(file_system, &args.dir, &parts, &mut |done, total| {
        progress.report(done, total);
    })
    .map_err(|e| build_error(&args.dir, e))?;
    progress.finish();
    if !args.quiet {
        output.err_line(summary_line("committed", &args.dir, &summary, None))?;
    }
    Ok(parts)
}

/// The local file system, but for the removal of the files in the staging directories
/// given: a commit leaves them staged.
#[derive(Debug)]
struct KeepStaging(Vec<PathBuf>);

impl FileSystem for KeepStaging {
    fn create(&self, path: &Path) -> std::io::Result<Box<dyn WritableFile>> {
        LocalFileSystem.create(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        LocalFileSystem.rename(from, to)
    }

    fn remove(&self, path: &Path) -> std::io::Result<()> {
        if path
            .parent()
            .is_some_and(|dir| self.0.iter().any(|s| s == dir))
        {
            return Ok(());
        }
        LocalFileSystem.remove(path)
    }

    fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
        LocalFileSystem.sync_dir(dir)
    }
}

/// Empties and removes the staging directories of committed parts, as a commit does: each
/// record first, so that a directory left half-emptied is no finished part. Errors are
/// ignored: the database is complete.
pub fn remove_staging(parts: &[Part]) {
    for part in parts {
        let _ = std::fs::remove_file(part.staging.join(PART_RECORD));
        for file in &part.files {
            let _ = std::fs::remove_file(part.staging.join(&file.name));
        }
        let _ = std::fs::remove_dir(&part.staging);
    }
}

fn part_summary(part: &Part) -> CommitSummary {
    let mut s = CommitSummary::default();
    s.parts = 1;
    s.tables = part.files.len() as u64;
    s.entries = part.entries();
    s.bytes = part.bytes();
    s
}

/// `wrote db: 1000 entries, 2 tables, 45231 bytes, 0.02 s, 12.3 MB/s`.
fn summary_line(
    verb: &str,
    path: &Path,
    s: &CommitSummary,
    rate: Option<(u64, Duration)>,
) -> String {
    let mut line = format!(
        "{verb} {}: {} entries, {} tables, {} bytes",
        path.display(),
        s.entries,
        s.tables,
        s.bytes
    );
    if s.parts > 1 {
        line.push_str(&format!(", {} parts", s.parts));
    }
    if let Some((input, elapsed)) = rate {
        let seconds = elapsed.as_secs_f64();
        line.push_str(&format!(", {seconds:.2} s"));
        if seconds > 0.0 {
            line.push_str(&format!(", {:.1} MB/s", input as f64 / seconds / 1e6));
        }
    }
    line
}
