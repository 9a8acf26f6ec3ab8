//! `leveltable stats TABLE`: sizes, counts and filters of a table.

use std::path::PathBuf;

use serde::Serialize;

use crate::cmd::Outcome;
use crate::error::Result;
use crate::filters;
use crate::output::Output;
use crate::table_file::TableFile;

/// Show a table's entries, blocks, sizes, compression and filters.
///
/// Reads every data block to count entries and key and value bytes. A table does not store
/// the bits per key of its filters; they are estimated from the filters' sizes.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The table to inspect.
    pub table: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Everything `stats` reports; also its JSON form.
#[derive(Debug, Serialize)]
pub struct Stats {
    /// The path given.
    pub file: String,
    /// Size of the file.
    pub file_size: u64,
    /// Entries in the table.
    pub entries: u64,
    /// Data blocks.
    pub data_blocks: u64,
    /// Stored bytes of all data blocks, trailers included.
    pub data_size: u64,
    /// Stored size of the index block.
    pub index_size: u64,
    /// Stored size of all filter blocks together.
    pub filter_size: u64,
    /// Stored size of the metaindex block.
    pub metaindex_size: u64,
    /// Total length of all keys.
    pub raw_key_bytes: u64,
    /// Total length of all values.
    pub raw_value_bytes: u64,
    /// Raw key and value bytes over stored data bytes; `null` for an empty table.
    pub compression_ratio: Option<f64>,
    /// Mean key length; `null` for an empty table.
    pub avg_key_size: Option<f64>,
    /// Mean value length; `null` for an empty table.
    pub avg_value_size: Option<f64>,
    /// The filter gets use; `null` if none this tool knows.
    pub filter_policy: Option<String>,
    /// Its estimated bits per key.
    pub bits_per_key: Option<f64>,
    /// Every filter block in the table, in metaindex order.
    pub filters: Vec<FilterStats>,
}

/// One filter block.
#[derive(Debug, Serialize)]
pub struct FilterStats {
    /// The policy name (the metaindex key without `filter.`).
    pub policy: String,
    /// File offset of the block.
    pub offset: u64,
    /// Stored size of the block.
    pub size: u64,
    /// Filters holding keys (one per 2 KiB range in which a data block starts).
    pub filters: u64,
    /// Estimated bits per key.
    pub bits_per_key: Option<f64>,
    /// Probes per key, as stored in the filters, for policies this tool knows.
    pub probes: Option<u8>,
    /// Whether gets use this filter.
    pub used_by_get: bool,
}

/// Runs the command.
///
/// # Errors
/// An unreadable or corrupt table, or a failed write.
pub fn run(args: Args, output: &mut Output) -> Result<Outcome> {
    let file = TableFile::open(&args.table)?;
    let stats = gather(&file)?;
    let text = if args.json {
        // Serializing plain numbers and strings cannot fail.
        let mut json = serde_json::to_string_pretty(&stats).unwrap_or_default();
        json.push('\n');
        json
    } else {
        render(&stats)
    };
    output.out(text.as_bytes())?;
    Ok(Outcome::Success)
}

fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

/// Scans the table and reads its filter blocks.
fn gather(file: &TableFile) -> Result<Stats> {
    let p = file.properties();
    let (mut entries, mut key_bytes, mut value_bytes) = (0u64, 0u64, 0u64);
    let mut it = file.table.iter();
    it.seek_to_first();
    while it.valid() {
        entries += 1;
        key_bytes += it.key().len() as u64;
        value_bytes += it.value().len() as u64;
        it.next();
    }
    it.status().map_err(|e| file.error(e))?;

    let mut filters = Vec::with_capacity(p.filters.len());
    for info in &p.filters {
        let block = file.read_raw(&info.handle)?;
        let shape = filters::shape(&info.policy_name, &block, entries);
        filters.push(FilterStats {
            policy: info.policy_name.clone(),
            offset: info.handle.offset,
            size: info.handle.size,
            filters: shape.filters,
            bits_per_key: shape.bits_per_key,
            probes: shape.probes,
            used_by_get: p.filter_policy.as_deref() == Some(info.policy_name.as_str()),
        });
    }
    let used = filters.iter().find(|f| f.used_by_get);
    Ok(Stats {
        file: file.path.display().to_string(),
        file_size: p.file_size,
        entries,
        data_blocks: p.data_blocks,
        data_size: p.data_size,
        index_size: p.index_size,
        filter_size: filters.iter().map(|f| f.size).sum(),
        metaindex_size: p.metaindex_size,
        raw_key_bytes: key_bytes,
        raw_value_bytes: value_bytes,
        compression_ratio: ratio(key_bytes + value_bytes, p.data_size).filter(|_| entries > 0),
        avg_key_size: ratio(key_bytes, entries),
        avg_value_size: ratio(value_bytes, entries),
        filter_policy: used.map(|f| f.policy.clone()),
        bits_per_key: used.and_then(|f| f.bits_per_key),
        filters,
    })
}

fn or_dash(v: Option<f64>, precision: usize) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.precision$}"))
}

/// The text form: one `name: value` line per figure, then one line per filter.
fn render(s: &Stats) -> String {
    let mut lines = vec![
        ("file", s.file.clone()),
        ("file size", format!("{} bytes", s.file_size)),
        ("entries", s.entries.to_string()),
        ("data blocks", s.data_blocks.to_string()),
        ("data size", format!("{} bytes", s.data_size)),
        ("index size", format!("{} bytes", s.index_size)),
        ("filter size", format!("{} bytes", s.filter_size)),
        ("metaindex size", format!("{} bytes", s.metaindex_size)),
        (
            "compression ratio",
            format!(
                "{} (raw keys and values / stored data blocks)",
                or_dash(s.compression_ratio, 2)
            ),
        ),
        (
            "avg key size",
            format!("{} bytes", or_dash(s.avg_key_size, 1)),
        ),
        (
            "avg value size",
            format!("{} bytes", or_dash(s.avg_value_size, 1)),
        ),
        (
            "filter policy",
            s.filter_policy.clone().unwrap_or_else(|| "none".to_owned()),
        ),
        (
            "bits per key",
            format!(
                "{} (estimated from the filter size)",
                or_dash(s.bits_per_key, 1)
            ),
        ),
    ];
    if s.filters.is_empty() {
        lines.push(("filters", "none".to_owned()));
    }
    for f in &s.filters {
        let probes = f
            .probes
            .map_or_else(String::new, |k| format!(", {k} probes"));
        let used = if f.used_by_get { ", used by get" } else { "" };
        lines.push((
            "filter",
            format!(
                "{}: {} bytes at offset {}, {} filters, {} bits/key{probes}{used}",
                f.policy,
                f.size,
                f.offset,
                f.filters,
                or_dash(f.bits_per_key, 1)
            ),
        ));
    }
    let width = lines.iter().map(|(name, _)| name.len()).max().unwrap_or(0) + 1;
    let mut text = String::new();
    for (name, value) in lines {
        text.push_str(&format!("{:<width$} {value}\n", format!("{name}:")));
    }
    text
}
