//! Tables named by URL (`s3://`, `gs://`, `az://`, `http(s)://`, `file://`): opening them
//! through the object store crate, uploading built tables, and the request counts
//! `--stats` prints.

use std::path::Path;
#[cfg(feature = "object")]
use std::sync::{Arc, Mutex};

use leveltable_table::ReadAt;

use crate::error::{CliError, Result};

/// The tail read with a table's first request: footer, index and filter usually fit.
#[cfg(feature = "object")]
const TAIL: u64 = 256 << 10;

/// The counters of every location opened, for `--stats`.
#[cfg(feature = "object")]
static OPENED: Mutex<Vec<Arc<leveltable_object::Stats>>> = Mutex::new(Vec::new());

/// Whether `path` is a URL (rather than a local file).
pub fn is_url(path: &Path) -> bool {
    path.to_str().is_some_and(is_url_str)
}

#[cfg(feature = "object")]
fn is_url_str(s: &str) -> bool {
    leveltable_object::is_url(s)
}

#[cfg(not(feature = "object"))]
fn is_url_str(s: &str) -> bool {
    s.contains("://")
}

/// A location for `url`, its counters kept for `--stats`.
#[cfg(feature = "object")]
pub fn location(url: &str) -> Result<leveltable_object::Location> {
    let location =
        leveltable_object::Location::parse(url).map_err(|e| CliError::new(e.to_string()))?;
    OPENED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Arc::clone(location.stats()));
    Ok(location)
}

/// Opens the object at `url` as a byte source (the table's first request reads its tail;
/// sequential reads fetch ahead) and gives the name to show for it (no credentials).
///
/// # Errors
/// A message for a bad URL, a missing object or a failed request.
#[cfg(feature = "object")]
pub fn open(url: &Path) -> Result<(Box<dyn ReadAt>, String)> {
    let url = url
        .to_str()
        .ok_or_else(|| CliError::new("a URL must be valid Unicode"))?;
    let location = location(url)?;
    let source = leveltable_object::ObjectReadAt::open_with_tail(&location, TAIL)
        .map_err(|e| CliError::new(e.to_string()))?
        .sequential_readahead();
    Ok((Box::new(source), location.name().to_owned()))
}

/// Opens the object `name` under the prefix `url` (a table of a database), as [`open`]
/// does: the prefix's query, if any, goes with the request, as for the database's other
/// files.
///
/// # Errors
/// As [`open`].
#[cfg(feature = "object")]
pub fn open_in(url: &Path, name: &str) -> Result<(Box<dyn ReadAt>, String)> {
    let url = url
        .to_str()
        .ok_or_else(|| CliError::new("a URL must be valid Unicode"))?;
    let location = location(url)?.child(name);
    let source = leveltable_object::ObjectReadAt::open_with_tail(&location, TAIL)
        .map_err(|e| CliError::new(e.to_string()))?
        .sequential_readahead();
    Ok((Box::new(source), location.name().to_owned()))
}

/// Without the `object` feature, a URL is refused.
#[cfg(not(feature = "object"))]
pub fn open_in(url: &Path, _name: &str) -> Result<(Box<dyn ReadAt>, String)> {
    open(url)
}

/// Without the `object` feature, a URL is refused.
#[cfg(not(feature = "object"))]
pub fn open(url: &Path) -> Result<(Box<dyn ReadAt>, String)> {
    Err(CliError::new(format!(
        "{}: this build reads no URLs (built without the `object` feature)",
        without_credentials(&url.to_string_lossy())
    )))
}

/// Opens the database under the prefix `url` read-only.
///
/// # Errors
/// A message for a bad URL, a missing or bad database, or a failed request.
#[cfg(feature = "object")]
pub fn open_db(url: &Path, options: leveltable_db::DbOptions) -> Result<leveltable_db::Db> {
    let url = url
        .to_str()
        .ok_or_else(|| CliError::new("a URL must be valid Unicode"))?;
    let location = location(url)?;
    leveltable_object::open_db(&location, options).map_err(|e| CliError::new(e.to_string()))
}

/// Without the `object` feature, a URL is refused.
#[cfg(not(feature = "object"))]
pub fn open_db(url: &Path, _options: leveltable_db::DbOptions) -> Result<leveltable_db::Db> {
    Err(CliError::new(format!(
        "{}: this build reads no URLs (built without the `object` feature)",
        without_credentials(&url.to_string_lossy())
    )))
}

/// Uploads the database in the local directory `dir` to the prefix `url`, CURRENT last.
///
/// # Errors
/// A message for a bad URL or a failed upload (CURRENT is then not written).
#[cfg(feature = "object")]
pub fn upload_db(dir: &Path, url: &str) -> Result<u64> {
    let location = location(url)?;
    leveltable_object::upload_db(dir, &location).map_err(|e| CliError::new(e.to_string()))
}

/// Without the `object` feature, a URL is refused.
#[cfg(not(feature = "object"))]
pub fn upload_db(_dir: &Path, url: &str) -> Result<u64> {
    Err(CliError::new(format!(
        "{}: this build writes no URLs (built without the `object` feature)",
        without_credentials(url)
    )))
}

/// Refuses a prefix `url` that holds objects: a database is built only under a new or empty
/// prefix, as in a new or empty directory.
///
/// # Errors
/// A message for a prefix that is not empty, a bad URL or a failed listing.
#[cfg(feature = "object")]
pub fn check_empty_prefix(url: &str) -> Result<()> {
    use leveltable_db::storage::Storage as _;
    let location = location(url)?;
    let names = leveltable_object::PrefixStorage::new(&location)
        .list()
        .map_err(|e| CliError::new(format!("cannot list {}: {e}", location.name())))?;
    if !names.is_empty() {
        return Err(CliError::new(format!(
            "{} is not empty: a database is built only under a new or empty prefix",
            location.name()
        )));
    }
    Ok(())
}

/// Without the `object` feature, a URL is refused.
#[cfg(not(feature = "object"))]
pub fn check_empty_prefix(url: &str) -> Result<()> {
    Err(CliError::new(format!(
        "{}: this build writes no URLs (built without the `object` feature)",
        without_credentials(url)
    )))
}

/// Refuses a `url` where an object exists, as `build` refuses a file that exists without
/// `--force`: one HEAD request.
///
/// # Errors
/// A message for an object that exists, a bad URL or a failed request.
#[cfg(feature = "object")]
pub fn check_absent(url: &str) -> Result<()> {
    let location = location(url)?;
    match leveltable_object::object_exists(&location) {
        Ok(false) => Ok(()),
        Ok(true) => Err(CliError::new(format!(
            "{} already exists (use --force to replace it)",
            location.name()
        ))),
        Err(e) => Err(CliError::new(e.to_string())),
    }
}

/// Without the `object` feature, a URL is refused.
#[cfg(not(feature = "object"))]
pub fn check_absent(url: &str) -> Result<()> {
    Err(CliError::new(format!(
        "{}: this build writes no URLs (built without the `object` feature)",
        without_credentials(url)
    )))
}

/// Uploads the local file `from` to `url` in parts; the object appears only when complete.
///
/// # Errors
/// A message for a bad URL or a failed upload (which leaves no object).
#[cfg(feature = "object")]
pub fn upload(from: &Path, url: &str) -> Result<u64> {
    use std::io::{Read, Write};
    let location = location(url)?;
    let mut file = std::fs::File::open(from).map_err(|e| CliError::io("cannot open", from, &e))?;
    let mut writer = leveltable_object::ObjectWriter::new(&location);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| CliError::io("cannot read", from, &e))?;
        if n == 0 {
            break;
        }
        writer
            .write_all(&buf[..n])
            .map_err(|e| CliError::new(format!("cannot write {}: {e}", location.name())))?;
    }
    writer.finish().map_err(|e| CliError::new(e.to_string()))?;
    Ok(writer.written())
}

/// Without the `object` feature, a URL is refused.
#[cfg(not(feature = "object"))]
pub fn upload(_from: &Path, url: &str) -> Result<u64> {
    Err(CliError::new(format!(
        "{}: this build writes no URLs (built without the `object` feature)",
        without_credentials(url)
    )))
}

/// `url` without the user name and password before its host, nor its query, for the
/// messages of a build that reads no URLs (one that does shows a location's own name).
#[cfg(not(feature = "object"))]
fn without_credentials(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let rest = &rest[..rest.find(['?', '#']).unwrap_or(rest.len())];
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    format!("{scheme}://{host}{path}")
}

/// `url` as shown in messages: without user, password or query.
pub fn shown(url: &str) -> String {
    #[cfg(feature = "object")]
    {
        leveltable_object::Location::parse(url)
            .map(|l| l.name().to_owned())
            .unwrap_or_else(|_| "the URL".to_owned())
    }
    #[cfg(not(feature = "object"))]
    {
        let _ = url;
        "the URL".to_owned()
    }
}

/// The `--stats` line: requests and bytes of every URL used.
pub fn stats_line() -> String {
    #[cfg(feature = "object")]
    {
        let opened = OPENED.lock().unwrap_or_else(|e| e.into_inner());
        let total = opened
            .iter()
            .map(|s| s.snapshot())
            .fold(leveltable_object::StatsSnapshot::default(), |a, b| a + b);
        format!("stats: {total}")
    }
    #[cfg(not(feature = "object"))]
    {
        "stats: requests 0 (this build reads no URLs)".to_owned()
    }
}

#[cfg(all(test, not(feature = "object")))]
mod tests {
    use super::*;

    #[test]
    fn a_build_without_urls_shows_none_of_their_credentials() {
        let Err(err) = open(Path::new("s3://KEY:SECRET@bucket/t.ldb?sig=SIGNED")) else {
            panic!("a build without URL support opened a URL");
        };
        let text = err.to_string();
        assert!(
            text.starts_with("s3://bucket/t.ldb: this build reads no URLs"),
            "{text}"
        );
        for url in ["https://user:pw@host/db", "https://user@host/db"] {
            let text = upload_db(Path::new("."), url).unwrap_err().to_string();
            assert!(
                text.starts_with("https://host/db: this build writes"),
                "{text}"
            );
        }
    }
}
