//! The comparison runner: every workload on every system that supports it, interleaved
//! round by round, best of N.
//!
//! Each measurement times only the workload's loop; setup (generating inputs, opening a
//! table with a fresh cache) happens before the clock starts, on every system alike. Every
//! loop checks its answers (entries found, filter hits) against the others, so a figure
//! never comes from a loop that did less work.
//!
//! One module per workload, each producing its rows or section from a [`Config`];
//! `harness` times the jobs, `tables` builds and opens each system's tables. This module
//! only dispatches, and nothing below imports it.

mod bloom;
mod checksum;
pub mod cli;
pub mod cli_child;
mod cli_db_write;
mod config;
pub mod db;
pub mod db_build;
mod filter_block;
pub mod filters;
mod follow;
mod get;
mod get_large;
mod harness;
mod hash;
pub mod memory;
mod object_store;
mod repair;
mod scan;
mod table_build;
mod tables;
mod threads;
mod world;
mod write;
pub mod write_child;
pub mod write_floor;

use std::path::Path;

use leveltable_table::Compression;

pub use bloom::CREATE_BATCH;
pub use checksum::{CHECKSUM_COST_TARGET, ChecksumCost};
pub use config::{BITS_PER_KEY, BoxError, Config, Result, count};
pub use filter_block::{FILTER_BLOCK_KEYS, FILTER_BLOCK_STRIDE};
pub use get::CACHE_BYTES;
pub use harness::{Figures, Sample};
pub use tables::{Entries, shaped_queries};

use crate::report::Row;
use tables::Fixture;

/// All results of one run of the runner.
#[derive(Debug, Default)]
pub struct Results {
    /// The main comparison table.
    pub rows: Vec<Row>,
    /// Rendered extra sections (filters, memory), in order.
    pub sections: Vec<String>,
    /// What checksums cost each system.
    pub checksum_costs: Vec<ChecksumCost>,
}

/// The runner's workloads, by command-line name.
pub const WORKLOADS: [&str; 19] = [
    "hash",
    "bloom",
    "filter-block",
    "build",
    "get",
    "get-many-large",
    "scan",
    "checksum",
    "filters",
    "memory",
    "db",
    "db-build",
    "repair",
    "threads",
    "cli",
    "world",
    "object-store",
    "write",
    "follow",
];

/// Runs the named workloads (see [`WORKLOADS`]) and collects their results. `exe` is the
/// runner binary, which the memory, db-build, cli and write workloads start as a child
/// process.
///
/// # Errors
///
/// An error from any system, or a system giving a wrong answer.
pub fn run(config: &Config, names: &[&str], exe: Option<&Path>) -> Result<Results> {
    let mut results = Results::default();
    let mut fixture: Option<Fixture> = None;
    for &name in names {
        eprintln!("running {name} ...");
        let needs_fixture = matches!(name, "get" | "scan" | "checksum" | "threads" | "cli");
        if needs_fixture && fixture.is_none() {
            fixture = Some(Fixture::new(config)?);
        }
        match name {
            "hash" => results.rows.extend(hash::rows(config)?),
            "bloom" => results.rows.extend(bloom::rows(config)?),
            "filter-block" => results.rows.extend(filter_block::rows(config)?),
            "build" => results.rows.extend(table_build::rows(config)?),
            "get" => results
                .rows
                .extend(get::rows(config, fixture.as_ref().expect("built above"))?),
            "get-many-large" => results.rows.extend(get_large::rows(config)?),
            "scan" => {
                let f = fixture.as_ref().expect("built above");
                for compression in [Compression::Snappy, Compression::None] {
                    results
                        .rows
                        .extend(scan::rows(config, f, compression, false)?);
                }
            }
            "checksum" => {
                let f = fixture.as_ref().expect("built above");
                let (rows, costs) = checksum::rows(config, f)?;
                results.rows.extend(rows);
                results.checksum_costs.extend(costs);
            }
            "filters" => results.sections.push(filters::run(config)?),
            "memory" => results.sections.push(memory::run(
                config,
                exe.ok_or("memory needs the runner binary")?,
            )?),
            "db" => results.rows.extend(db::rows(config)?),
            "db-build" => results.rows.extend(db_build::rows(
                config,
                exe.ok_or("db-build needs the runner binary")?,
            )?),
            "repair" => results.rows.extend(repair::rows(config)?),
            "threads" => results.rows.extend(threads::rows(
                config,
                fixture.as_ref().expect("built above"),
            )?),
            "cli" => results.rows.extend(cli::rows(
                config,
                fixture.as_ref().expect("built above"),
                exe.ok_or("cli needs the runner binary")?,
            )?),
            "world" => results.rows.extend(world::rows(config)?),
            "object-store" => results.sections.push(object_store::run(config)?),
            "write" => {
                let (rows, section) =
                    write::rows(config, exe.ok_or("write needs the runner binary")?)?;
                results.rows.extend(rows);
                results.sections.push(section);
            }
            "follow" => results.rows.extend(follow::rows(config)?),
            other => return Err(format!("unknown workload {other:?}").into()),
        }
    }
    Ok(results)
}
