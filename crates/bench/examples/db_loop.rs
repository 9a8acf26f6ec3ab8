//! One leveltable database workload of the comparison runner, repeated alone, for
//! profilers.
//!
//! ```text
//! cargo run --release -p leveltable-bench --example db_loop -- scan 5
//! perf record -e cpu-clock target/release/examples/db_loop get-present 20
//! ```
//!
//! Workloads: `get-present`, `get-absent` (200,000 gets in random order), `get-many` (the
//! present keys in batches of 1,000), `scan`, `open`,
//! `build-1` / `build-2`: a bulk build of 300 MB of the runner's entries (made before the
//! first pass) with one or two threads; `table-build`: the same entries into one table file,
//! the builds' baseline.
//! The database is the runner's `db` fixture (1M entries written by LevelDB, over several
//! levels, with a log), made on first use in `leveltable-db-loop` under the system temporary
//! directory (without LevelDB: bulk-built by leveltable). Prints each pass and the best.

use std::time::Instant;

use leveltable_bench::runner::Config;
use leveltable_bench::runner::db::write_fixture;
use leveltable_bench::workload::{GET_QUERIES, get_queries, table_entries};
use leveltable_db::dbformat::{ValueType, append_internal_key};
use leveltable_db::{BulkOptions, Db, DbBuilder, DbOptions};
use leveltable_table::TableBuilder;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let Some(workload) = args.get(1) else {
        return Err("usage: db_loop WORKLOAD [PASSES]".into());
    };
    let passes: usize = args.get(2).map_or(Ok(5), |p| p.parse())?;
    let root = std::env::temp_dir().join("leveltable-db-loop");
    let dir = root.join("db-leveldb");
    if !dir.join("CURRENT").exists() {
        std::fs::create_dir_all(&root)?;
        write_fixture(&Config::standard(root.clone()))?;
    }
    let n = 1_000_000;
    let queries = match workload.as_str() {
        "get-present" | "get-many" => get_queries(n, GET_QUERIES, true),
        "get-absent" => get_queries(n, GET_QUERIES, false),
        "scan" | "open" | "build-1" | "build-2" | "table-build" => Vec::new(),
        other => return Err(format!("unknown workload {other:?}").into()),
    };
    // The builds' input, made before any pass: 300 MB of the runner's entries.
    let input: Vec<_> = if workload.contains("build") {
        table_entries(300_000_000 / 116).collect()
    } else {
        Vec::new()
    };
    let input_mb = (input.len() * 116) as f64 / 1e6;
    let mut best = f64::MAX;
    for _ in 0..passes {
        let db = Db::open(&dir, DbOptions::default())?;
        let start = Instant::now();
        let (figure, unit) = match workload.as_str() {
            "scan" => {
                // Lent entries, as the runner's scan row reads them.
                let mut bytes = 0u64;
                let mut iter = db.iter();
                while let Some(entry) = iter.next_entry() {
                    let (k, v) = entry?;
                    bytes += (k.len() + v.len()) as u64;
                }
                (bytes as f64 / start.elapsed().as_secs_f64() / 1e6, "MB/s")
            }
            "build-1" | "build-2" => {
                let threads = if workload == "build-1" { 1 } else { 2 };
                let out = root.join("built");
                let _ = std::fs::remove_dir_all(&out);
                let start = Instant::now();
                let options = BulkOptions::default().threads(threads);
                let mut builder = DbBuilder::create(&out, options)?;
                for (k, v) in &input {
                    builder.add(k, v)?;
                }
                builder.finish()?;
                (input_mb / start.elapsed().as_secs_f64(), "MB/s")
            }
            "table-build" => {
                // The same entries into one table file as a database's tables hold them
                // (internal keys, the bulk build's table options): the builds' baseline.
                let out = root.join("built.ldb");
                let _ = std::fs::remove_file(&out);
                let start = Instant::now();
                let file = std::io::BufWriter::with_capacity(1 << 16, std::fs::File::create(&out)?);
                let mut builder =
                    TableBuilder::new(file, BulkOptions::default().table.build_options())?;
                let mut key = Vec::new();
                for (k, v) in &input {
                    key.clear();
                    append_internal_key(&mut key, k, 0, ValueType::Value)?;
                    builder.add(&key, v)?;
                }
                builder.finish()?;
                std::io::Write::flush(&mut builder.into_inner())?;
                (input_mb / start.elapsed().as_secs_f64(), "MB/s")
            }
            "open" => {
                drop(db);
                let start = Instant::now();
                let db = Db::open(&dir, DbOptions::default())?;
                let ms = start.elapsed().as_secs_f64() * 1e3;
                drop(db);
                (ms, "ms")
            }
            "get-many" => {
                let mut found = 0u64;
                for batch in
                    queries.chunks(std::env::var("BATCH").map_or(1000, |b| b.parse().unwrap()))
                {
                    found += db.get_many(batch)?.iter().filter(|v| v.is_some()).count() as u64;
                }
                std::hint::black_box(found);
                (
                    start.elapsed().as_secs_f64() * 1e9 / queries.len() as f64,
                    "ns/op",
                )
            }
            _ => {
                let mut found = 0u64;
                for q in &queries {
                    found += u64::from(db.get(q)?.is_some());
                }
                std::hint::black_box(found);
                (
                    start.elapsed().as_secs_f64() * 1e9 / queries.len() as f64,
                    "ns/op",
                )
            }
        };
        println!("{workload}: {figure:.1} {unit}");
        best = if unit == "MB/s" {
            if best == f64::MAX {
                figure
            } else {
                best.max(figure)
            }
        } else {
            best.min(figure)
        };
    }
    println!("best: {best:.1}");
    Ok(())
}
