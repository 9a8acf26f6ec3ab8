//! The tokio runtime the blocking API runs its requests on.

use std::future::Future;
use std::sync::OnceLock;

use crate::{Error, Result};

static RUNTIME: OnceLock<std::result::Result<tokio::runtime::Runtime, String>> = OnceLock::new();

/// Runs `f` to completion on the crate's runtime (two worker threads, started on first
/// use), from a thread that is not itself running async code.
///
/// # Errors
/// [`Error::Runtime`] if the runtime cannot start or the caller is inside a runtime.
pub(crate) fn block_on<F: Future>(f: F) -> Result<F::Output> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(Error::Runtime(
            "the blocking API was called from async code; use the async API there".into(),
        ));
    }
    let rt = RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("leveltable-object")
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
    });
    match rt {
        Ok(rt) => Ok(rt.block_on(f)),
        Err(e) => Err(Error::Runtime(e.clone())),
    }
}
