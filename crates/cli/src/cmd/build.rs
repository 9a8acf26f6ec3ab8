//! `leveltable build OUT [INPUT|-]`: writes a table from `KEY<TAB>VALUE` lines.

use std::fs::{self, File};
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use leveltable_db::TableOptions;
use leveltable_filter_policy::CacheLocalBloomPolicy;
use leveltable_process::describe_file_type;
use leveltable_table::{
    AtomicTableFile, BloomFilterPolicy, BuildOptions, BuildSummary, Compression, Error,
};
use leveltable_table::{DEFAULT_BLOCK_RESTART_INTERVAL, DEFAULT_BLOCK_SIZE};

use crate::cmd::Outcome;
use crate::error::{CliError, Result, io_message};
use crate::lines::{
    DEFAULT_MAX_LINE, Encoding, LineReader, ReadError, parse_entry, parse_entry_into,
};
use crate::output::Output;
use crate::progress::Progress;

/// The most bits per key a filter may be given here: far past any useful rate (30 bits give
/// about one false positive in a million), and a bound on the memory filters take.
pub(crate) const MAX_BITS_PER_KEY: u32 = 64;

/// Build a table from lines of KEY<TAB>VALUE.
///
/// Keys must be strictly increasing (bytewise) unless --sort is given. The table appears at
/// OUT only once it is complete; on any error, and on SIGINT, SIGTERM or SIGHUP, nothing is
/// left there (nor a temporary file). If the directory cannot be synced after the rename
/// (it can be written but not read), the table is in place: a warning says so and the exit
/// code is 0.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The table to write, a path or a URL; an existing file or object is an error unless
    /// --force is given.
    pub out: PathBuf,
    /// The input lines; standard input when absent or `-`.
    pub input: Option<PathBuf>,
    /// Keys and values are hex digits.
    #[arg(long)]
    pub hex: bool,
    /// The table options.
    #[command(flatten)]
    pub table: TableArgs,
    /// Sort the input first (it is held in memory); duplicate keys are still an error.
    #[arg(long)]
    pub sort: bool,
    /// Replace OUT if it is a regular file or an object. Anything else there (a symbolic
    /// link, a FIFO, a device) is refused; a link is not followed.
    #[arg(long)]
    pub force: bool,
    /// Print no summary and draw no progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// Refuse input lines longer than this many bytes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_LINE)]
    pub max_line: usize,
}

/// The options of the tables written, as LevelDB's `Options` carries them.
#[derive(clap::Args, Debug)]
pub struct TableArgs {
    /// Target size of a data block before compression, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_BLOCK_SIZE)]
    pub block_size: usize,
    /// Entries between restart points in a block.
    #[arg(
        long,
        value_name = "N",
        default_value_t = DEFAULT_BLOCK_RESTART_INTERVAL as u32,
        value_parser = clap::value_parser!(u32).range(1..),
    )]
    pub restart_interval: u32,
    /// Compression of data, index and metaindex blocks.
    #[arg(long, value_name = "COMPRESSION", default_value = "snappy", value_parser = compression_parser())]
    pub compression: Compression,
    /// Bits per key of LevelDB's Bloom filter (`leveldb.BuiltinBloomFilter2`); 0 for none.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 10,
        value_parser = clap::value_parser!(u32).range(0..=i64::from(MAX_BITS_PER_KEY)),
    )]
    pub bloom_bits: u32,
    /// Add a second filter that LevelDB ignores and this tool's reader prefers.
    #[arg(long, value_enum, value_name = "POLICY")]
    pub extra_filter: Option<ExtraFilter>,
    /// Bits per key of the extra filter [default: 10].
    #[arg(
        long,
        value_name = "N",
        requires = "extra_filter",
        value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_BITS_PER_KEY)),
    )]
    pub extra_bits: Option<u32>,
}

/// `--compression`: the table crate's names and descriptions of its codecs.
pub(crate) fn compression_parser() -> impl clap::builder::TypedValueParser<Value = Compression> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(
        Compression::ALL.map(|c| PossibleValue::new(c.name()).help(c.description())),
    )
    .try_map(|name| name.parse::<Compression>())
}

/// `--extra-filter`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtraFilter {
    /// The cache-local Bloom filter `leveltable.LocalBloom64`, accurate on sequential and
    /// numbered keys.
    LocalBloom,
}

/// The extra filter's bits per key when `--extra-bits` is not given.
const DEFAULT_EXTRA_BITS: u32 = 10;

/// A count from a flag as a usize. The flags' u32 values all fit on the 32- and 64-bit
/// targets the tool runs on; saturating keeps a hypothetical 16-bit target from wrapping.
fn count(n: u32) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

impl TableArgs {
    /// The table options of a database's tables (`db build`, `db build-part`): the same
    /// layout and filters as [`options`](Self::options), over internal keys.
    pub fn table_options(&self) -> TableOptions {
        TableOptions::default()
            .block_size(self.block_size)
            .block_restart_interval(count(self.restart_interval))
            .compression(self.compression)
            .filter_policy(
                (self.bloom_bits > 0).then(|| BloomFilterPolicy::new(count(self.bloom_bits))),
            )
            .cache_local_bits_per_key(self.extra_filter.map(|ExtraFilter::LocalBloom| {
                count(self.extra_bits.unwrap_or(DEFAULT_EXTRA_BITS))
            }))
    }

    /// The table options for `TableBuilder`.
    pub fn options(&self) -> BuildOptions {
        let mut options = BuildOptions::default()
            .block_size(self.block_size)
            .block_restart_interval(count(self.restart_interval))
            .compression(self.compression);
        if self.bloom_bits > 0 {
            options = options.filter_policy(BloomFilterPolicy::new(count(self.bloom_bits)));
        }
        if let Some(ExtraFilter::LocalBloom) = self.extra_filter {
            let bits = self.extra_bits.unwrap_or(DEFAULT_EXTRA_BITS);
            options = options.extra_filter_policy(CacheLocalBloomPolicy::new(count(bits)));
        }
        options
    }
}

/// Runs the command.
///
/// # Errors
/// See the module documentation; every error but a failed write after the table is in place
/// leaves nothing at OUT, and that one says the table is complete.
pub fn run(args: Args, output: &mut Output) -> Result<Outcome> {
    let encoding = Encoding::from_hex_flag(args.hex);
    check_out(&args.out, args.force)?;
    let input = Input::open(args.input.as_deref())?;
    clean_up_on_signals(|| {})?;
    // Anything buffered goes out before the progress bar draws over standard error.
    output.flush()?;
    let progress = Progress::new(input.file_len, args.quiet);
    let started = Instant::now();

    let options = args.table.options();
    let out = &args.out;
    let created = if args.force {
        AtomicTableFile::create(out, options)
    } else {
        AtomicTableFile::create_new(out, options)
    };
    let mut table = created.map_err(|e| write_error(out, e, args.force))?;

    let mut lines = LineReader::new(input.reader, args.max_line);
    let mut builder = Builder {
        table: &mut table,
        encoding,
        out,
        previous_line: 0,
    };
    let bytes_read = if args.sort {
        let mut entries = Vec::new();
        while let Some((number, line)) = next_line(&mut lines, &input.name)? {
            let (key, value) = parse_entry(line, encoding)
                .map_err(|e| CliError::new(format!("line {number}: {e}")))?;
            entries.push((key.into_owned(), value.into_owned(), number));
            progress.update(lines.bytes_read());
        }
        // Stable: entries with equal keys stay in input order, so the error names the
        // first two lines holding the key.
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        if let Some(pair) = entries.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(CliError::new(format!(
                "duplicate key {} on lines {} and {}",
                encoding.show(&pair[0].0),
                pair[0].2,
                pair[1].2
            )));
        }
        for (key, value, number) in &entries {
            builder.add(key, value, *number)?;
        }
        lines.bytes_read()
    } else {
        // Hex fields are decoded into these, reused from line to line.
        let (mut key_buf, mut value_buf) = (Vec::new(), Vec::new());
        while let Some((number, line)) = next_line(&mut lines, &input.name)? {
            let (key, value) = parse_entry_into(line, encoding, &mut key_buf, &mut value_buf)
                .map_err(|e| CliError::new(format!("line {number}: {e}")))?;
            builder.add(key, value, number)?;
            progress.update(lines.bytes_read());
        }
        lines.bytes_read()
    };

    let finished = table
        .finish_with_status()
        .map_err(|e| write_error(out, e, args.force))?;
    progress.finish();
    // The table is complete at OUT from here on: a failed write must not suggest otherwise.
    let report = |output: &mut Output| -> Result<()> {
        if let Some(e) = &finished.dir_sync_error {
            output.err_line(dir_sync_warning(out, e))?;
        }
        if !args.quiet {
            output.err_line(summary_line(
                out,
                &finished.summary,
                bytes_read,
                started.elapsed(),
            ))?;
        }
        output.flush()
    };
    report(output).map_err(|e| e.after_table_written(out))?;
    Ok(Outcome::Success)
}

/// `build` to a URL: the table is built in a temporary file, then uploaded in parts; the
/// object appears only when the upload completes, and a failure leaves none. An object
/// already there is an error unless `--force` is given (asked before the build: one HEAD
/// request).
///
/// # Errors
/// As [`run`], and a failed upload.
pub fn run_to_url(mut args: Args, output: &mut Output) -> Result<Outcome> {
    let url = args
        .out
        .to_str()
        .ok_or_else(|| CliError::new("a URL must be valid Unicode"))?
        .to_owned();
    if !args.force {
        crate::remote::check_absent(&url)?;
    }
    let dir = tempfile::tempdir()
        .map_err(|e| CliError::new(format!("cannot make a temporary directory: {e}")))?;
    let local = dir.path().join("table.ldb");
    args.out = local.clone();
    args.force = false;
    let quiet = args.quiet;
    let outcome = run(args, output)?;
    let bytes = crate::remote::upload(&local, &url)?;
    if !quiet {
        output.err_line(format!(
            "uploaded {bytes} bytes to {}",
            crate::remote::shown(&url)
        ))?;
    }
    Ok(outcome)
}

/// `warning: ...`: the table is in place, but the rename may not survive a crash.
fn dir_sync_warning(out: &Path, e: &io::Error) -> String {
    format!(
        "warning: {}",
        leveltable_table::atomic_file::dir_sync_warning(out, &io_message(e))
    )
}

/// Makes SIGINT, SIGTERM and SIGHUP remove the table's temporary file (every temporary the
/// process registered) and run `extra` before the process ends as the signal would have
/// ended it; see `leveltable_process::clean_up_on_signals`.
pub fn clean_up_on_signals(extra: impl Fn() + Send + 'static) -> Result<()> {
    #[cfg(unix)]
    leveltable_process::clean_up_on_signals(extra)
        .map_err(|e| CliError::new(format!("cannot set up signal handling: {}", io_message(&e))))?;
    #[cfg(not(unix))]
    drop(extra);
    Ok(())
}

/// Refuses an OUT that is a directory, that exists without `--force`, or that is anything
/// but a regular file with it, and an OUT whose directory does not exist.
fn check_out(out: &Path, force: bool) -> Result<()> {
    match fs::metadata(out) {
        Ok(m) if m.is_dir() => {
            return Err(CliError::new(format!(
                "{} is a directory; give the path of the table file to write",
                out.display()
            )));
        }
        Ok(_) if !force => return Err(exists_error(out)),
        _ => {}
    }
    // Not followed: a link is refused even when it points at a regular file, so that
    // --force never replaces a link (or what it points at) by surprise.
    match fs::symlink_metadata(out) {
        Ok(m) if !m.is_file() && !force => return Err(exists_error(out)),
        Ok(m) if !m.is_file() => {
            return Err(CliError::new(format!(
                "{} is {}; --force replaces only a regular file",
                out.display(),
                describe_file_type(m.file_type())
            )));
        }
        _ => {}
    }
    let dir = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(CliError::new(format!(
            "cannot write {}: {} is not a directory",
            out.display(),
            dir.display()
        ))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(CliError::new(format!(
            "cannot write {}: the directory {} does not exist",
            out.display(),
            dir.display()
        ))),
        // Unreadable or unsearchable: creating the file will say what is wrong.
        Err(_) => Ok(()),
    }
}

fn exists_error(out: &Path) -> CliError {
    CliError::new(format!(
        "{} already exists (use --force to replace it)",
        out.display()
    ))
}

/// The message for an error creating or finishing the table at `out`.
fn write_error(out: &Path, e: Error, force: bool) -> CliError {
    match e {
        Error::Io(io) if io.kind() == io::ErrorKind::AlreadyExists && !force => exists_error(out),
        Error::Io(io) => CliError::io("cannot write", out, &io),
        other => {
            let text = other.to_string();
            CliError::new(text.strip_prefix("table: ").unwrap_or(&text).to_owned())
        }
    }
}

/// The next input line, with read errors turned into messages.
pub fn next_line<'r, R: BufRead>(
    lines: &'r mut LineReader<R>,
    input_name: &str,
) -> Result<Option<(u64, &'r [u8])>> {
    lines.next_line().map_err(|e| match e {
        ReadError::Io(io) => CliError::new(format!(
            "cannot read {input_name}: {}",
            crate::error::io_message(&io)
        )),
        ReadError::TooLong { line, max } => CliError::new(format!(
            "line {line} is longer than {max} bytes (raise the limit with --max-line)"
        )),
    })
}

/// Adds entries, turning the builder's order errors into messages with line numbers.
struct Builder<'a> {
    table: &'a mut AtomicTableFile,
    encoding: Encoding,
    out: &'a Path,
    /// The line of the entry added last.
    previous_line: u64,
}

impl Builder<'_> {
    fn add(&mut self, key: &[u8], value: &[u8], line: u64) -> Result<()> {
        match self.table.add(key, value) {
            Ok(()) => {
                self.previous_line = line;
                Ok(())
            }
            Err(Error::KeyOutOfOrder { previous, got }) if previous == got => {
                Err(CliError::new(format!(
                    "line {line}: duplicate key {} (also on line {})",
                    self.encoding.show(&got),
                    self.previous_line
                )))
            }
            Err(Error::KeyOutOfOrder { previous, got }) => Err(CliError::new(format!(
                "line {line}: key {} is out of order: it sorts before the key {} on line {} \
                 (keys must be strictly increasing; --sort sorts them)",
                self.encoding.show(&got),
                self.encoding.show(&previous),
                self.previous_line
            ))),
            Err(e) => Err(write_error(self.out, e, true)),
        }
    }
}

/// Where the lines come from.
pub struct Input {
    /// The lines.
    pub reader: Box<dyn BufRead>,
    /// For messages: the path, or `standard input`.
    pub name: String,
    /// The size of an input file (for the progress bar); `None` for a stream.
    pub file_len: Option<u64>,
}

/// Bytes read from an input at a time. The buffer stays in the core's L2 cache (256 KiB
/// on the smallest in use, 512 KiB to 2 MiB on others) with room for the page-cache pages
/// the kernel copies from and the memory the lines go to: the lines are parsed from L2,
/// and the copy takes a quarter of the time it took with buffers of 256 KiB.
const INPUT_BUFFER: usize = 64 * 1024;

impl Input {
    /// The file at `path`, or standard input for none or `-`.
    ///
    /// # Errors
    /// A message naming a path that cannot be opened or is a directory.
    pub fn open(path: Option<&Path>) -> Result<Input> {
        let path = match path {
            Some(p) if p != Path::new("-") => p,
            _ => {
                return Ok(Input {
                    // Standard input's own buffer holds 8 KiB: reads of 64 KiB pass it by.
                    reader: Box::new(BufReader::with_capacity(INPUT_BUFFER, io::stdin().lock())),
                    name: "standard input".to_owned(),
                    file_len: None,
                });
            }
        };
        let metadata = fs::metadata(path).map_err(|e| CliError::io("cannot open", path, &e))?;
        if metadata.is_dir() {
            return Err(CliError::new(format!(
                "{} is a directory, not an input file",
                path.display()
            )));
        }
        let file = File::open(path).map_err(|e| CliError::io("cannot open", path, &e))?;
        Ok(Input {
            reader: Box::new(BufReader::with_capacity(INPUT_BUFFER, file)),
            name: path.display().to_string(),
            file_len: metadata.is_file().then_some(metadata.len()),
        })
    }
}

/// `wrote t.ldb: 1000 entries, 3 data blocks, file 45231 bytes, filter 1289 bytes, 0.02 s,
/// 12.3 MB/s`, the rate counting input bytes.
fn summary_line(out: &Path, s: &BuildSummary, input_bytes: u64, elapsed: Duration) -> String {
    let seconds = elapsed.as_secs_f64();
    let rate = if seconds > 0.0 {
        format!("{:.1} MB/s", input_bytes as f64 / seconds / 1e6)
    } else {
        "- MB/s".to_owned()
    };
    format!(
        "wrote {}: {} entries, {} data blocks, file {} bytes, filter {} bytes, {:.2} s, {rate}",
        out.display(),
        s.entries,
        s.data_blocks,
        s.file_size,
        s.filter_size,
        seconds
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_names_every_figure() {
        let mut s = BuildSummary::default();
        s.entries = 1000;
        s.data_blocks = 3;
        s.file_size = 45231;
        s.filter_size = 1289;
        assert_eq!(
            summary_line(
                Path::new("t.ldb"),
                &s,
                2_000_000,
                Duration::from_millis(500)
            ),
            "wrote t.ldb: 1000 entries, 3 data blocks, file 45231 bytes, filter 1289 bytes, \
             0.50 s, 4.0 MB/s"
        );
    }
}
