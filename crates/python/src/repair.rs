//! `repair_db`: a damaged database repaired into a new one, or in place (plyvel's
//! `repair_db(name)`), with a report of what was lost.

use std::path::Path;

use leveltable_db::{DbOptions, Error, RepairOptions, RepairReport, repair, repair_in_place};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::db_error;
use crate::fs_path::FsPath;

/// Repairs the database `src` without bringing deleted data back, as `leveltable db repair`
/// does. With `dest`, writes the repaired database there (a new or empty directory) and
/// writes nothing in `src`; without it, repairs `src` in place, keeping the original files
/// in `src/lost/`. `report` names a file to write the JSON loss report to;
/// `drop_uncertain=True` leaves out the keys whose newest version may have been lost.
/// Returns a summary: keys, deleted, tables, bytes, lost, ignored, uncertain_keys,
/// manifest (`None` if no MANIFEST could be read and every file counted).
#[pyfunction]
#[pyo3(signature = (src, dest = None, report = None, drop_uncertain = false))]
pub fn repair_db<'py>(
    py: Python<'py>,
    src: FsPath,
    dest: Option<FsPath>,
    report: Option<FsPath>,
    drop_uncertain: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let src = src.0;
    let options = RepairOptions::default()
        .db(DbOptions::default().comparators(leveltable_chromium::comparators()))
        .drop_uncertain(drop_uncertain);
    let done: leveltable_db::Result<RepairReport> = py.detach(|| match &dest {
        Some(dest) => repair(&src, &dest.0, &options),
        None => repair_in_place(&src, &options),
    });
    let done = done.map_err(|e| db_error(&src, e))?;
    if let Some(path) = report {
        write_report(&path.0, &done)?;
    }
    let d = PyDict::new(py);
    d.set_item("keys", done.keys)?;
    d.set_item("deleted", done.deleted)?;
    d.set_item("tables", done.tables)?;
    d.set_item("bytes", done.bytes)?;
    d.set_item("lost", done.lost.len())?;
    d.set_item("ignored", done.ignored.len())?;
    d.set_item("uncertain_keys", done.uncertain_keys)?;
    d.set_item("manifest", done.manifest.clone())?;
    Ok(d)
}

/// Writes the report to `path` whole, through a new temporary file beside it, synced and
/// renamed into place, the directory synced after ([`RepairReport::write_json`]); a failure
/// raises the system's `OSError`.
fn write_report(path: &Path, report: &RepairReport) -> PyResult<()> {
    report.write_json(path).map_err(|e| match e {
        Error::FileOp { source, .. } => source.into(),
        e => db_error(path, e),
    })
}
