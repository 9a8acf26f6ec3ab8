//! Build a table from a TSV or CSV file of your own: one `key<TAB>value` (or `key,value`)
//! pair per line, in any order.
//!
//! ```sh
//! cargo run --example build_table -- fruit.csv fruit.ldb
//! cargo run --example build_table            # writes a sample TSV to a temp dir first
//! ```
//!
//! Lines are split at the first tab (`.tsv`) or comma (`.csv`, no quoting); entries are
//! sorted before building, since a table holds keys in increasing order, and a repeated key
//! keeps its last value. The `leveltable build` command does the same with more checks.

use std::collections::BTreeMap;
use std::path::PathBuf;

use leveltable::table::{BloomFilterPolicy, BuildOptions, ReadOptions, Table, create_table};

const SAMPLE: &str = "cherry\tdark red\napple\tred\nbanana\tyellow\ndate\tbrown\n";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut args = std::env::args_os().skip(1).map(PathBuf::from);
    let input = match args.next() {
        Some(path) => path,
        None => {
            let path = dir.path().join("sample.tsv");
            std::fs::write(&path, SAMPLE)?;
            path
        }
    };
    let output = args.next().unwrap_or_else(|| dir.path().join("sample.ldb"));

    let separator = match input.extension().and_then(|e| e.to_str()) {
        Some("csv") => ',',
        _ => '\t',
    };
    let text = std::fs::read_to_string(&input)?;
    let mut entries = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let (key, value) = line
            .split_once(separator)
            .ok_or_else(|| format!("{}:{}: no {separator:?} in line", input.display(), n + 1))?;
        entries.insert(key.to_owned(), value.to_owned());
    }

    let options = BuildOptions::default().filter_policy(BloomFilterPolicy::new(10));
    let summary = create_table(&output, options, |table| {
        for (key, value) in &entries {
            table.add(key.as_bytes(), value.as_bytes())?;
        }
        Ok(())
    })?;
    println!(
        "{} -> {}: {} entries, {} data blocks, {} bytes",
        input.display(),
        output.display(),
        summary.entries,
        summary.data_blocks,
        summary.file_size
    );

    // Read it back: the first entries, in key order.
    let table = Table::open(std::fs::File::open(&output)?, ReadOptions::default())?;
    for entry in table.entries().take(5) {
        let (key, value) = entry?;
        println!(
            "  {}\t{}",
            String::from_utf8_lossy(&key),
            String::from_utf8_lossy(&value)
        );
    }
    Ok(())
}
