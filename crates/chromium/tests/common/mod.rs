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
