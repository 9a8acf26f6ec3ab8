#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod arrow;
mod arrow_columns;
mod arrow_stream;
mod builder;
mod bytes;
mod chromium;
mod chromium_arrow;
mod closable;
mod column_pool;
mod cursor;
mod db;
mod db_build;
mod db_follow;
mod db_options;
mod db_place;
mod db_source;
mod db_view;
mod db_write;
mod destroy;
mod entries;
mod errors;
mod fs_path;
mod gil_lock;
mod iterator_keywords;
mod open_table;
mod py_comparator;
mod repair;
mod snapshot;
mod table;
mod table_arrow;
mod version_scan;
mod versions_arrow;

use pyo3::prelude::*;

/// The native module behind the `leveltable` Python package.
#[pymodule]
fn _leveltable(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    chromium::register(m)?;
    m.add_class::<table::Table>()?;
    m.add_class::<entries::Entries>()?;
    m.add_class::<builder::TableBuilder>()?;
    m.add_class::<db::Db>()?;
    m.add_class::<snapshot::Snapshot>()?;
    db_follow::register(m)?;
    m.add_class::<cursor::Cursor>()?;
    m.add_class::<arrow_stream::ArrowStream>()?;
    m.add_class::<db_write::WriteBatch>()?;
    m.add_class::<db_build::Part>()?;
    m.add_function(wrap_pyfunction!(db_build::build_db, m)?)?;
    m.add_function(wrap_pyfunction!(db_build::build_part, m)?)?;
    m.add_function(wrap_pyfunction!(db_build::build_part_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(db_build::commit_db, m)?)?;
    m.add_function(wrap_pyfunction!(repair::repair_db, m)?)?;
    m.add_function(wrap_pyfunction!(destroy::destroy_db, m)?)?;
    m.add_class::<version_scan::VersionScan>()?;
    m.add_function(wrap_pyfunction!(version_scan::plan_version, m)?)?;
    m.add_function(wrap_pyfunction!(db_place::find_databases, m)?)?;
    Ok(())
}
