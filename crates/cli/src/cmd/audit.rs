//! `leveltable audit TABLE`: how well each filter of a table works on keys like its own.

use std::fs::File;
use std::io::{self, BufReader, Write};
use std::path::PathBuf;

use crate::filter_audit::{AuditOptions, AuditReport, FilterAudit, ProbeCount, audit};
use serde::Serialize;

use crate::cmd::Outcome;
use crate::error::{CliError, Result};
use crate::lines::{DEFAULT_MAX_LINE, Encoding, LineReader, ReadError};
use crate::table_file::TableFile;

/// Measure each filter's false-positive rate on absent keys next to the table's own keys.
///
/// Probes are the table's keys with their last byte, and their numeric suffix, plus and minus
/// one (neighbours), the same keys with 8 random bytes appended (random), and any absent keys
/// in the --probes file. For each filter the verdict says whether neighbours get through far
/// more often than the filter's size promises, as LevelDB's filter does for sequential keys.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The table to audit.
    pub table: PathBuf,
    /// A file of extra probe keys, one per line (hex with --hex).
    #[arg(long, value_name = "FILE")]
    pub probes: Option<PathBuf>,
    /// Probe keys in the --probes file are hex.
    #[arg(long)]
    pub hex: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// The JSON form of the report.
#[derive(Debug, Serialize)]
struct Report {
    file: String,
    entries: u64,
    data_blocks: u64,
    sampled_keys: u64,
    filters: Vec<FilterReport>,
    needs_better_filter: bool,
}

#[derive(Debug, Serialize)]
struct FilterReport {
    policy: String,
    size: u64,
    bits_per_key: f64,
    expected_rate: f64,
    neighbours: Probes,
    random: Probes,
    supplied: Probes,
    blocks_read_per_absent_get: f64,
    verdict: &'static str,
}

#[derive(Debug, Serialize)]
struct Probes {
    probes: u64,
    passed: u64,
    rate: f64,
}

impl From<ProbeCount> for Probes {
    fn from(c: ProbeCount) -> Probes {
        Probes {
            probes: c.probes,
            passed: c.passed,
            rate: c.rate(),
        }
    }
}

impl From<&FilterAudit> for FilterReport {
    fn from(f: &FilterAudit) -> FilterReport {
        FilterReport {
            policy: f.policy.clone(),
            size: f.filter_size,
            bits_per_key: f.bits_per_key,
            expected_rate: f.expected_rate,
            neighbours: f.neighbours.into(),
            random: f.random.into(),
            supplied: f.supplied.into(),
            blocks_read_per_absent_get: f.blocks_read_per_absent_get(),
            verdict: f.verdict.as_str(),
        }
    }
}

/// Runs the command.
///
/// # Errors
/// An unreadable or corrupt table or probe file, or a failed write.
pub fn run(args: Args) -> Result<Outcome> {
    let file = TableFile::open(&args.table)?;
    let mut options = AuditOptions::default();
    if let Some(path) = &args.probes {
        options.supplied_probes = read_probes(path, Encoding::from_hex_flag(args.hex))?;
    }
    let report = audit(&file.table, &options).map_err(|e| file.error(e))?;
    let text = if args.json {
        let json = Report {
            file: file.path.display().to_string(),
            entries: report.entries,
            data_blocks: report.data_blocks,
            sampled_keys: report.sampled_keys,
            filters: report.filters.iter().map(FilterReport::from).collect(),
            needs_better_filter: report.needs_better_filter(),
        };
        // Serializing plain numbers and strings cannot fail.
        let mut text = serde_json::to_string_pretty(&json).unwrap_or_default();
        text.push('\n');
        text
    } else {
        render(&file.path.display().to_string(), &report)
    };
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| CliError::stdout(&e))?;
    Ok(Outcome::Success)
}

fn read_probes(path: &PathBuf, encoding: Encoding) -> Result<Vec<Vec<u8>>> {
    let input = File::open(path).map_err(|e| CliError::io("open", path, &e))?;
    let mut lines = LineReader::new(BufReader::new(input), DEFAULT_MAX_LINE);
    let mut probes = Vec::new();
    loop {
        match lines.next_line() {
            Ok(Some((number, line))) => {
                let key = encoding.decode(line).map_err(|e| {
                    CliError::new(format!("line {number} of {}: {e}", path.display()))
                })?;
                probes.push(key.into_owned());
            }
            Ok(None) => return Ok(probes),
            Err(ReadError::Io(e)) => return Err(CliError::io("read", path, &e)),
            Err(ReadError::TooLong { line, max }) => {
                return Err(CliError::new(format!(
                    "line {line} of {} is longer than {max} bytes",
                    path.display()
                )));
            }
        }
    }
}

fn percent(rate: f64) -> String {
    format!("{:.2}%", rate * 100.0)
}

fn probes_line(name: &str, c: ProbeCount) -> String {
    format!(
        "  {name} probes: {}, passed the filter: {} ({})\n",
        c.probes,
        c.passed,
        percent(c.rate())
    )
}

/// The text form: the table, then a paragraph per filter, then any warning.
fn render(path: &str, report: &AuditReport) -> String {
    let mut out = format!(
        "table: {path}\nentries: {}, data blocks: {}, keys sampled: {}\n",
        report.entries, report.data_blocks, report.sampled_keys
    );
    if report.filters.is_empty() {
        out.push_str("filters: none (every get reads a data block)\n");
    }
    for f in &report.filters {
        out.push_str(&format!(
            "filter {}: {} bytes, {:.1} bits per key, promises {} on random keys\n",
            f.policy,
            f.filter_size,
            f.bits_per_key,
            percent(f.expected_rate)
        ));
        if f.verdict == crate::filter_audit::Verdict::Unknown {
            out.push_str("  not probed: this tool does not know the policy\n");
            continue;
        }
        out.push_str(&probes_line("neighbour", f.neighbours));
        out.push_str(&probes_line("random", f.random));
        if f.supplied.probes > 0 {
            out.push_str(&probes_line("supplied", f.supplied));
        }
        out.push_str(&format!(
            "  data blocks read per absent neighbour get: {:.4}\n  verdict: {}\n",
            f.blocks_read_per_absent_get(),
            f.verdict.as_str()
        ));
    }
    if report.needs_better_filter() {
        out.push_str(
            "warning: LevelDB's Bloom filter is pathological for these keys: absent gets of \
             neighbouring keys read data blocks far more often than its size promises.\n\
             hint: add the cache-local filter beside it (LevelDB still reads the table):\n  \
             leveltable dump TABLE --hex | leveltable build --hex --extra-filter local-bloom NEW\n",
        );
    }
    out
}
