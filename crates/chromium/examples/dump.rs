//! Prints every entry of a Chromium LevelDB directory as one JSON object a line: an IndexedDB
//! database (`*.indexeddb.leveldb`, comparator `idb_cmp1`), Local Storage
//! (`Local Storage/leveldb`) or Session Storage (`Session Storage`).
//!
//! ```text
//! cargo run -p leveltable-chromium --example dump -- ~/.config/chromium/Default/IndexedDB/https_example.com_0.indexeddb.leveldb
//! ```
//!
//! An entry that does not decode is printed with its error and its bytes in hex.

use leveltable_chromium::IdbCmp1;
use leveltable_chromium::local_storage::LocalStorageRecord;
use leveltable_chromium::metadata::entry_json;
use leveltable_chromium::session_storage::SessionStorageRecord;
use leveltable_db::DbOptions;
use leveltable_table::Comparator;
use serde_json::{Value, json};
use std::io::Write;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .ok_or("usage: dump <leveldb directory>")?;
    // The comparator the MANIFEST names: idb_cmp1 for IndexedDB, bytewise for the others.
    let db = leveltable_chromium::open(&dir, false, DbOptions::default())?;
    let idb = db.properties().comparator == IdbCmp1.name();
    let mut out = std::io::stdout().lock();
    for entry in db.iter() {
        let (k, v) = entry?;
        let decoded: Result<Value, leveltable_chromium::Error> = if idb {
            entry_json(&k, &v)
        } else if k.starts_with(b"_") || k.starts_with(b"META") || k == b"VERSION" {
            LocalStorageRecord::decode(&k, &v).map(|r| r.to_json())
        } else {
            SessionStorageRecord::decode(&k, &v).map(|r| r.to_json())
        };
        let line = decoded.unwrap_or_else(
            |e| json!({ "error": e.to_string(), "key_hex": hex(&k), "value_hex": hex(&v) }),
        );
        match writeln!(out, "{line}") {
            // A reader that stops early (`| head`) ends the dump.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
            other => other?,
        }
    }
    Ok(())
}
