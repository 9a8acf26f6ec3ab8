//! Where a database the Spark reader plans on lives: a local directory, or a prefix of an
//! object store (`s3://`, `gs://`, `az://`, `http(s)://`) read through `leveltable-object`;
//! and `find_databases(url)`, the databases under a prefix.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::TryStreamExt;
use leveltable_db::storage::{LocalDir, Storage};
use leveltable_object::{Location, PrefixStorage, StatsSnapshot, is_url};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::errors::{Error, InvalidArgumentError};
use crate::fs_path::FsPath;

/// Store options given by name (`aws_endpoint`, `timeout`, ...), as `object_store` takes
/// them; they win over the environment's.
pub type StoreOptions = Option<HashMap<String, String>>;

/// Attempts at listing a prefix before its error is reported.
const LIST_ATTEMPTS: u32 = 4;

/// A database's place.
pub enum Place {
    /// A local (or mounted) directory.
    Dir(PathBuf),
    /// An object-store prefix.
    Prefix(Location),
}

impl Place {
    /// The place `path` names: a URL (a `str` with a scheme) is a prefix, configured from
    /// the environment and then `options`; anything else a path as `os.fsdecode` takes it.
    pub fn of(path: &Bound<'_, PyAny>, options: &StoreOptions) -> PyResult<Place> {
        if path.is_instance_of::<PyString>() {
            let text: String = path.extract()?;
            if is_url(&text) {
                return location(&text, options).map(Place::Prefix);
            }
        }
        Ok(Place::Dir(path.extract::<FsPath>()?.0))
    }

    /// The database's files.
    pub fn storage(&self) -> Arc<dyn Storage> {
        match self {
            Place::Dir(dir) => Arc::new(LocalDir::new(dir)),
            Place::Prefix(location) => Arc::new(PrefixStorage::new(location)),
        }
    }

    /// The name errors give: the directory, or the URL without credentials or query.
    pub fn name(&self) -> PathBuf {
        match self {
            Place::Dir(dir) => dir.clone(),
            Place::Prefix(location) => PathBuf::from(location.name()),
        }
    }

    /// The requests made so far to a prefix's store (`None` for a directory) as a dict:
    /// `gets`, `lists`, `bytes_read`, `retries`.
    pub fn requests<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Place::Prefix(location) = self else {
            return Ok(None);
        };
        let s: StatsSnapshot = location.stats().snapshot();
        let d = PyDict::new(py);
        d.set_item("gets", s.gets)?;
        d.set_item("lists", s.lists)?;
        d.set_item("bytes_read", s.bytes_read)?;
        d.set_item("retries", s.retries)?;
        Ok(Some(d))
    }
}

/// The location of `url` with `options`.
fn location(url: &str, options: &StoreOptions) -> PyResult<Location> {
    let options = options.iter().flatten();
    Location::parse_with(url, options.map(|(k, v)| (k.as_str(), v.clone())))
        .map_err(|e| InvalidArgumentError::new_err(e.to_string()))
}

/// `find_databases(url, options=None) -> list[str]`: the URLs of the databases (prefixes
/// holding a `CURRENT` object) at or under the prefix `url`, sorted; a database's own
/// sub-prefixes are not searched. One recursive listing of the prefix (a LIST request per
/// thousand objects on S3), retried a few times on failure.
#[pyfunction]
#[pyo3(signature = (url, options = None))]
pub fn find_databases(py: Python<'_>, url: &str, options: StoreOptions) -> PyResult<Vec<String>> {
    let location = location(url, &options)?;
    let listed = py.detach(|| list_currents(&location));
    let found = listed.map_err(|e| Error::new_err(format!("{}: {e}", location.name())))?;
    let base = location.name().trim_end_matches('/').to_owned();
    let mut databases: Vec<String> = Vec::new();
    // Sorted, a database comes before the prefixes under it.
    for relative in found {
        let within = databases.iter().any(|d| {
            let d = d.strip_prefix(&base).unwrap_or(d).trim_start_matches('/');
            d.is_empty() || relative.starts_with(&format!("{d}/"))
        });
        if !within {
            databases.push(if relative.is_empty() {
                base.clone()
            } else {
                format!("{base}/{relative}")
            });
        }
    }
    Ok(databases)
}

/// The prefixes (relative to `location`, `""` for itself) of the `CURRENT` objects under
/// `location`, sorted.
fn list_currents(location: &Location) -> Result<BTreeSet<String>, String> {
    // The object crate's runtime is its own; a listing runs on a short-lived one, with the
    // store's connections, which it drops with it.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime: {e}"))?;
    let depth = location.path().parts().count();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let listed = runtime.block_on(
            location
                .store()
                .list(Some(location.path()))
                .try_collect::<Vec<_>>(),
        );
        match listed {
            Ok(metas) => {
                return Ok(metas
                    .iter()
                    .filter(|m| m.location.filename() == Some("CURRENT"))
                    .map(|m| {
                        let parts: Vec<_> = m.location.parts().collect();
                        let dir = &parts[depth.min(parts.len())..parts.len().saturating_sub(1)];
                        dir.iter().map(|p| p.as_ref()).collect::<Vec<_>>().join("/")
                    })
                    .collect());
            }
            Err(leveltable_object::object_store::Error::Generic { .. })
                if attempt < LIST_ATTEMPTS =>
            {
                std::thread::sleep(Duration::from_millis(100 << attempt));
            }
            Err(e) => {
                return Err(format!(
                    "cannot list the prefix: {}",
                    without_queries(&e.to_string())
                ));
            }
        }
    }
}

/// `text` with the query of every URL in it removed (a presigned URL's signature).
fn without_queries(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_query = false;
    for c in text.chars() {
        if c == '?' && !in_query {
            in_query = true;
        } else if in_query && (c.is_whitespace() || matches!(c, '"' | '\'' | ')' | ',')) {
            in_query = false;
        }
        if !in_query {
            out.push(c);
        }
    }
    out
}
