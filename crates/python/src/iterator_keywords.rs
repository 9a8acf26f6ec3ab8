//! The keywords of plyvel's `iterator()` (bounds, prefix, what each entry yields), read
//! the same way for a database, a snapshot and a table.

use std::ops::Bound as Edge;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use crate::bytes::bytes_of;
use crate::entries::Mode;

/// An optional bytes-like bound.
pub fn bound(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<Vec<u8>>> {
    obj.map(|o| bytes_of(o, what).map(|b| b.into_owned()))
        .transpose()
}

/// The smallest key (bytewise) after every key starting with `prefix`: `None` if there is
/// none (the prefix is empty or all `0xff`).
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let last = prefix.iter().rposition(|&b| b != 0xff)?;
    let mut end = prefix[..=last].to_vec();
    end[last] += 1;
    Some(end)
}

/// One end of a range of keys.
pub type Key = Edge<Vec<u8>>;

/// The keywords of plyvel's `iterator()`.
pub struct IteratorKeywords<'a, 'py> {
    pub reverse: bool,
    pub start: Option<&'a Bound<'py, PyAny>>,
    pub stop: Option<&'a Bound<'py, PyAny>>,
    pub include_start: bool,
    pub include_stop: bool,
    pub prefix: Option<&'a Bound<'py, PyAny>>,
    pub include_key: bool,
    pub include_value: bool,
}

impl IteratorKeywords<'_, '_> {
    /// The bounds and what each entry yields; `TypeError` for `prefix` with `start` or
    /// `stop`, as plyvel says.
    pub fn read(&self) -> PyResult<(Key, Key, Mode)> {
        let mode = match (self.include_key, self.include_value) {
            (true, true) => Mode::Items,
            (true, false) => Mode::Keys,
            (false, true) => Mode::Values,
            (false, false) => Mode::Neither,
        };
        if let Some(prefix) = self.prefix {
            if self.start.is_some() || self.stop.is_some() {
                return Err(PyTypeError::new_err(
                    "'prefix' cannot be used together with 'start' or 'stop'",
                ));
            }
            let prefix = bytes_of(prefix, "prefix")?.into_owned();
            let end = prefix_end(&prefix).map_or(Edge::Unbounded, Edge::Excluded);
            return Ok((Edge::Included(prefix), end, mode));
        }
        let edge = |key: Option<Vec<u8>>, included: bool| match key {
            None => Edge::Unbounded,
            Some(k) if included => Edge::Included(k),
            Some(k) => Edge::Excluded(k),
        };
        let start = edge(bound(self.start, "start")?, self.include_start);
        let stop = edge(bound(self.stop, "stop")?, self.include_stop);
        Ok((start, stop, mode))
    }
}

/// The bounds of a scan (`scan_arrow()`): from `start` to `stop` (`stop` excluded), or the
/// keys starting with `prefix`.
pub fn scan_bounds(
    start: Option<&Bound<'_, PyAny>>,
    stop: Option<&Bound<'_, PyAny>>,
    prefix: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Key, Key)> {
    let (start, stop, _) = IteratorKeywords {
        reverse: false,
        start,
        stop,
        include_start: true,
        include_stop: false,
        prefix,
        include_key: true,
        include_value: true,
    }
    .read()?;
    Ok((start, stop))
}
