//! `checksum`: what verifying block checksums costs a get and a scan, each system measured
//! with checksums off and on in the same rounds.

use leveltable_table::Compression;

use super::config::{Config, Result};
use super::get::{self, GetCase};
use super::harness::best_of_paired;
use super::scan;
use super::tables::Fixture;
use crate::leveldb::Records;
use crate::report::{Row, System, Target, Unit};
use crate::workload::KEY_LEN;

/// Gets of present keys and snappy scans with checksums off and on, measured in the same
/// rounds. Returns the "checksums on" rows and each system's cost: checked time over
/// unchecked time.
pub(super) fn rows(config: &Config, fixture: &Fixture) -> Result<(Vec<Row>, Vec<ChecksumCost>)> {
    let mut costs = Vec::new();
    let mut record = |label: &str, unit: Unit, off: &[Option<f64>; 4], on: &[Option<f64>; 4]| {
        for system in [System::Leveltable, System::LevelDb] {
            if let (Some(a), Some(b)) = (off[system.index()], on[system.index()]) {
                costs.push(ChecksumCost {
                    workload: label.to_string(),
                    system,
                    unchecked: a,
                    checked: b,
                    ratio: unit.speedup(a, b),
                });
            }
        }
    };
    let case = GetCase {
        present: true,
        filter: true,
        cached: false,
        verify: false,
        compression: Compression::Snappy,
    };
    let queries = get::query_keys(config, true);
    let queries = Records::new(&queries, KEY_LEN);
    let mut off = get::jobs(fixture, case, queries);
    let mut on = get::jobs(
        fixture,
        GetCase {
            verify: true,
            ..case
        },
        queries,
    );
    let (get_off, get_on) = best_of_paired(config.rounds, Unit::NsPerOp, &mut off, &mut on)?;
    record(
        "get present, Bloom filter, no cache, snappy",
        Unit::NsPerOp,
        &get_off,
        &get_on,
    );
    drop((off, on));
    let mut off = scan::jobs(fixture, Compression::Snappy, false);
    let mut on = scan::jobs(fixture, Compression::Snappy, true);
    let (scan_off, scan_on) = best_of_paired(config.rounds, Unit::MbPerSec, &mut off, &mut on)?;
    record("scan, snappy", Unit::MbPerSec, &scan_off, &scan_on);
    let rows = vec![
        Row {
            workload: "get present, Bloom filter, no cache, checksums on".into(),
            unit: Unit::NsPerOp,
            figures: get_on,
            target: Target::TimeAtMost(0.7),
        },
        scan::row(Compression::Snappy, true, scan_on),
    ];
    Ok((rows, costs))
}

/// The cost of verifying checksums on one workload for one system, from figures measured
/// in the same rounds.
#[derive(Debug, Clone, PartialEq)]
pub struct ChecksumCost {
    /// Workload.
    pub workload: String,
    /// System.
    pub system: System,
    /// Figure with checksums off.
    pub unchecked: f64,
    /// Figure with checksums on.
    pub checked: f64,
    /// Checked time over unchecked time.
    pub ratio: f64,
}

/// At most this checked-over-unchecked time for leveltable.
pub const CHECKSUM_COST_TARGET: f64 = 1.2;
