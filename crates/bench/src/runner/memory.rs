//! Memory: the peak resident set of a process building a large table, and the resident
//! memory an open table holds.
//!
//! Each system runs in a child process of its own (the runner binary started with
//! [`CHILD_COMMAND`]), so that one system's allocations never count against another and
//! `VmHWM` (the peak resident set in `/proc/self/status`) measures exactly one build. The
//! child generates entries as it goes (LevelDB's builder receives them 4,096 at a time),
//! writes the table without compression, then opens it and reports how much its resident
//! set grew.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::Command;

use leveltable_filter_policy::BloomFilterPolicy;
use leveltable_table::{Compression, ReadOptions, Table, TableBuilder};

use super::config::{BITS_PER_KEY, Config, Result};
use crate::leveldb::{self, Records};
use crate::report::{System, render_markdown};
use crate::workload::{KEY_LEN, VALUE_LEN, table_entries};

/// The hidden subcommand that runs one system's build in a child process:
/// `__memory SYSTEM PATH INPUT_BYTES`.
pub const CHILD_COMMAND: &str = "__memory";

/// Entries LevelDB's builder receives per call in the child.
const LEVELDB_BATCH: usize = 4096;

/// A field of `/proc/self/status` in KiB (e.g. `VmHWM`, `VmRSS`).
pub fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_status(&status, field)
}

fn parse_status(status: &str, field: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        rest.trim().strip_suffix("kB")?.trim().parse().ok()
    })
}

fn system_arg(system: System) -> &'static str {
    match system {
        System::Leveltable => "leveltable",
        System::LevelDb => "leveldb",
        System::Sstable => "sstable",
        System::RustyLeveldb => "rusty-leveldb",
    }
}

/// What a child reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChildReport {
    /// `VmHWM` before building, KiB.
    pub base_kib: u64,
    /// `VmHWM` after building, KiB.
    pub peak_kib: u64,
    /// Growth of `VmRSS` from opening the table, KiB.
    pub open_kib: u64,
    /// Size of the table file.
    pub file_bytes: u64,
}

impl ChildReport {
    fn to_line(self) -> String {
        format!(
            "base_kib={} peak_kib={} open_kib={} file_bytes={}",
            self.base_kib, self.peak_kib, self.open_kib, self.file_bytes
        )
    }

    fn parse(line: &str) -> Option<ChildReport> {
        let mut r = ChildReport::default();
        for field in line.split_whitespace() {
            let (name, value) = field.split_once('=')?;
            let value = value.parse().ok()?;
            match name {
                "base_kib" => r.base_kib = value,
                "peak_kib" => r.peak_kib = value,
                "open_kib" => r.open_kib = value,
                "file_bytes" => r.file_bytes = value,
                _ => return None,
            }
        }
        Some(r)
    }
}

/// The child's work: build a table of `input_bytes` of entries at `path` with `system`,
/// open it, and print a [`ChildReport`] line.
///
/// # Errors
///
/// From building or opening the table, or an unknown system.
pub fn child(system: &str, path: &Path, input_bytes: u64) -> Result<()> {
    let n = input_bytes / (KEY_LEN + VALUE_LEN) as u64;
    let base_kib = status_kib("VmHWM").ok_or("no VmHWM in /proc/self/status")?;
    let (peak_kib, open_kib, file_bytes) = match system {
        "leveltable" => {
            let options = leveltable_table::BuildOptions::default()
                .compression(Compression::None)
                .filter_policy(BloomFilterPolicy::new(BITS_PER_KEY));
            let file = BufWriter::with_capacity(1 << 16, File::create(path)?);
            let mut builder = TableBuilder::new(file, options)?;
            for (k, v) in table_entries(n) {
                builder.add(&k, &v)?;
            }
            builder.finish()?;
            let file_bytes = builder.file_size();
            builder.into_inner().flush()?;
            let peak = status_kib("VmHWM").unwrap_or(0);
            let before = status_kib("VmRSS").unwrap_or(0);
            let options = ReadOptions::default()
                .verify_checksums(false)
                .filter_policy(BloomFilterPolicy::new(BITS_PER_KEY));
            let table = Table::open(File::open(path)?, options)?;
            let open_kib = status_kib("VmRSS").unwrap_or(0).saturating_sub(before);
            drop(table);
            (peak, open_kib, file_bytes)
        }
        "leveldb" => {
            let mut builder = leveldb::TableBuilder::create(path, false, BITS_PER_KEY)?;
            let mut entries = table_entries(n);
            let mut keys = Vec::with_capacity(LEVELDB_BATCH * KEY_LEN);
            let mut values = Vec::with_capacity(LEVELDB_BATCH * VALUE_LEN);
            loop {
                keys.clear();
                values.clear();
                for (k, v) in entries.by_ref().take(LEVELDB_BATCH) {
                    keys.extend_from_slice(&k);
                    values.extend_from_slice(&v);
                }
                if keys.is_empty() {
                    break;
                }
                builder.add(
                    Records::new(&keys, KEY_LEN),
                    Records::new(&values, VALUE_LEN),
                )?;
            }
            let file_bytes = builder.finish()?;
            let peak = status_kib("VmHWM").unwrap_or(0);
            let before = status_kib("VmRSS").unwrap_or(0);
            // Open while VmRSS is read, closed at the end of this arm. (Without LevelDB the
            // type has no destructor, so an explicit `drop` would be a no-op to clippy.)
            let _table = leveldb::Table::open(path, BITS_PER_KEY, 0)?;
            let open_kib = status_kib("VmRSS").unwrap_or(0).saturating_sub(before);
            (peak, open_kib, file_bytes)
        }
        "sstable" => {
            let mut options = sstable::Options::default().with_cache_capacity(1);
            options.compression_type = sstable::CompressionType::CompressionNone;
            let file = BufWriter::with_capacity(1 << 16, File::create(path)?);
            let mut builder = sstable::TableBuilder::new(options.clone(), file);
            for (k, v) in table_entries(n) {
                builder.add(&k, &v).map_err(|e| format!("{e:?}"))?;
            }
            let file_bytes = builder.finish().map_err(|e| format!("{e:?}"))? as u64;
            let peak = status_kib("VmHWM").unwrap_or(0);
            let before = status_kib("VmRSS").unwrap_or(0);
            let table =
                sstable::Table::new_from_file(options, path).map_err(|e| format!("{e:?}"))?;
            let open_kib = status_kib("VmRSS").unwrap_or(0).saturating_sub(before);
            drop(table);
            (peak, open_kib, file_bytes)
        }
        other => return Err(format!("no memory workload for {other:?}").into()),
    };
    let report = ChildReport {
        base_kib,
        peak_kib,
        open_kib,
        file_bytes,
    };
    println!("{}", report.to_line());
    Ok(())
}

/// Index plus filter block bytes of the table at `path`, as leveltable reads them.
fn meta_bytes(path: &Path) -> Result<(u64, u64)> {
    let options = ReadOptions::default()
        .verify_checksums(false)
        .filter_policy(BloomFilterPolicy::new(BITS_PER_KEY));
    let table = Table::open(File::open(path)?, options)?;
    let p = table.properties();
    Ok((p.index_size, p.filter_size))
}

fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

/// Runs one child per system and renders the section.
///
/// # Errors
///
/// A child failing or printing no report.
pub fn run(config: &Config, exe: &Path) -> Result<String> {
    let mut systems = vec![System::Leveltable];
    if leveldb::available() {
        systems.push(System::LevelDb);
    }
    systems.push(System::Sstable);
    let mut rows = Vec::new();
    for system in systems {
        let path = config
            .dir
            .join(format!("memory-{}.ldb", system_arg(system)));
        let output = Command::new(exe)
            .arg(CHILD_COMMAND)
            .arg(system_arg(system))
            .arg(&path)
            .arg(config.mem_bytes.to_string())
            .output()?;
        if !output.status.success() {
            return Err(format!(
                "memory child for {} failed: {}",
                system.name(),
                String::from_utf8_lossy(&output.stderr)
            )
            .into());
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        let report = stdout
            .lines()
            .find_map(ChildReport::parse)
            .ok_or_else(|| format!("no report from the {} child: {stdout}", system.name()))?;
        let (index, filter) = meta_bytes(&path)?;
        let _ = std::fs::remove_file(&path);
        rows.push(vec![
            system.name().to_string(),
            format!("{:.2}", report.file_bytes as f64 / 1e9),
            mib(report.base_kib),
            mib(report.peak_kib),
            mib(report.peak_kib.saturating_sub(report.base_kib)),
            format!("{:.1}", (index + filter) as f64 / (1 << 20) as f64),
            mib(report.open_kib),
        ]);
    }
    let mut out = format!(
        "Memory: one child process per system builds a table from {:.2} GB of entries (generated as it goes; no compression, {BITS_PER_KEY}-bit Bloom), then opens it (leveltable through pread, LevelDB through its default mmap Env):\n\n",
        config.mem_bytes as f64 / 1e9
    );
    out.push_str(&render_markdown(
        &[
            "system",
            "table GB",
            "RSS before build, MiB",
            "peak RSS (VmHWM), MiB",
            "peak − before, MiB",
            "index + filter blocks, MiB",
            "RSS growth opening it, MiB",
        ],
        &rows,
    ));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_status() {
        let status = "Name:\tx\nVmHWM:\t   12345 kB\nVmRSS:\t  678 kB\n";
        assert_eq!(parse_status(status, "VmHWM"), Some(12345));
        assert_eq!(parse_status(status, "VmRSS"), Some(678));
        assert_eq!(parse_status(status, "VmSwap"), None);
        assert!(status_kib("VmRSS").is_some_and(|k| k > 0));
    }

    #[test]
    fn child_reports_round_trip() {
        let r = ChildReport {
            base_kib: 1,
            peak_kib: 2,
            open_kib: 3,
            file_bytes: 4,
        };
        assert_eq!(ChildReport::parse(&r.to_line()), Some(r));
        assert_eq!(ChildReport::parse("hello"), None);
    }
}
