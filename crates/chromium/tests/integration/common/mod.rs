//! Paths of the golden Chromium data.

#![allow(dead_code)]

use std::path::PathBuf;

pub fn golden() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/golden")
}

/// The origin's IndexedDB LevelDB directory.
pub fn indexeddb_dir() -> PathBuf {
    golden().join("IndexedDB/http_127.0.0.1_8765.indexeddb.leveldb")
}

pub fn report() -> serde_json::Value {
    let text = std::fs::read_to_string(golden().join("report.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// What `testdata/make/make_live.sh` wrote: `IndexedDB` (copied while the page paused) and
/// `copies/*` (copied while it wrote).
pub fn live() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/live")
}

pub fn live_report() -> serde_json::Value {
    let text = std::fs::read_to_string(live().join("report.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Numbers as f64, so that 3 and 3.0 compare equal.
pub fn norm(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Number(n) => serde_json::json!(n.as_f64().unwrap()),
        Value::Array(a) => Value::Array(a.iter().map(norm).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), norm(v))).collect()),
        v => v.clone(),
    }
}
