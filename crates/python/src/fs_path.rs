//! Paths in: `str`, `bytes` or any `os.PathLike`, as `os.fsdecode` takes them (bytes are the
//! file system's own bytes, as Python's `open` takes them).

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::errors::InvalidArgumentError;

/// A path argument, converted with `os.fsdecode`.
pub struct FsPath(pub PathBuf);

impl<'a, 'py> FromPyObject<'a, 'py> for FsPath {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let py = obj.py();
        // A `str` as it is; `bytes` and path-likes through `os.fsdecode`, which raises
        // TypeError naming what it takes for anything else. Undecodable bytes come back as
        // surrogate escapes, which the conversion to a path turns back into those bytes.
        let text = if obj.is_instance_of::<PyString>() {
            obj.to_owned()
        } else {
            py.import("os")?.getattr("fsdecode")?.call1((obj,))?
        };
        // (A path that is not valid Unicode is no URL.)
        if let Ok(text) = text.extract::<String>() {
            refuse_credentials(&text)?;
        }
        Ok(FsPath(text.extract::<PathBuf>()?))
    }
}

/// Refuses a URL carrying a user name or password (`s3://KEY:SECRET@bucket/...`,
/// `https://user:pw@host/...`), as the command line and `leveltable-object` do: credentials
/// go in the environment variables the object stores read, never in a path, where they
/// would be kept in shell histories, logs and messages. The error shows the URL without
/// them. Azure's `abfs://container@account...` form, whose user name is the container, is
/// let through.
fn refuse_credentials(text: &str) -> PyResult<()> {
    let Some((scheme, rest)) = text.split_once("://") else {
        return Ok(());
    };
    let is_scheme = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !is_scheme {
        return Ok(());
    }
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let Some((user_info, host)) = authority.rsplit_once('@') else {
        return Ok(());
    };
    let scheme = scheme.to_ascii_lowercase();
    let azure = matches!(scheme.as_str(), "az" | "adl" | "azure" | "abfs" | "abfss")
        || host.ends_with(".blob.core.windows.net")
        || host.ends_with(".dfs.core.windows.net");
    if user_info.is_empty() || (azure && !user_info.contains(':')) {
        return Ok(());
    }
    let aws = matches!(scheme.as_str(), "s3" | "s3a") || host.ends_with(".amazonaws.com");
    let google = scheme == "gs" || host.ends_with("storage.googleapis.com");
    let instead = if aws {
        "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary \
         credentials) in the environment"
    } else if google {
        "set GOOGLE_SERVICE_ACCOUNT (a key file) or GOOGLE_SERVICE_ACCOUNT_KEY in the \
         environment"
    } else if azure {
        "set AZURE_STORAGE_ACCOUNT_NAME and AZURE_STORAGE_ACCOUNT_KEY (or \
         AZURE_STORAGE_SAS_KEY) in the environment"
    } else {
        "use a presigned URL: its query is sent with every request"
    };
    let path = &path[..path.find(['?', '#']).unwrap_or(path.len())];
    Err(InvalidArgumentError::new_err(format!(
        "{scheme}://{host}{path}: credentials in a URL are not used; {instead}"
    )))
}
