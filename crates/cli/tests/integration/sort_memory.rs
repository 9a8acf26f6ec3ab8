//! `db build --sort` keeps to `--memory`: input of long keys (8 KB each, sharing most of
//! their bytes, given out of order), sorted in 1 MiB, is built with a peak resident set far
//! below the input's size, measured by `/usr/bin/time`; the database holds every key.

use crate::common::{run_measuring_memory, stderr_of, time_available};

use std::path::Path;
use std::process::Command;

const MIB: u64 = 1 << 20;
/// Entries of the input, of about 8 KB each: 128 MB in all.
const ENTRIES: u64 = 16_000;
/// The peak allowed: the program, its buffers and the budget, well under the input.
const PEAK: u64 = 64 * MIB;

/// The key of entry `i`: 8000 bytes shared by every key, then `i`.
fn key(i: u64) -> String {
    format!("{}{i:08}", "x".repeat(8000))
}

#[test]
fn a_sort_of_long_keys_keeps_to_its_memory() {
    if !time_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("in.tsv");
    let mut text = String::new();
    // Every 7th of the entries in turn: out of order, each once.
    for i in (0..ENTRIES).map(|i| i * 7 % ENTRIES) {
        text.push_str(&format!("{}\tv{i}\n", key(i)));
    }
    std::fs::write(&input, text).unwrap();
    let db = tmp.path().join("db");
    let (out, peak) = run_measuring_memory([
        Path::new("db"),
        Path::new("build"),
        Path::new("--sort"),
        Path::new("--memory"),
        Path::new("1048576"),
        &db,
        &input,
    ]);
    let stderr = stderr_of(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains(&format!("{ENTRIES} entries")), "{stderr}");
    assert!(
        peak < PEAK,
        "peak {} MiB sorting {} MiB in 1 MiB",
        peak / MIB,
        ENTRIES * 8016 / MIB
    );
    // The last key, with its value.
    let dump = Command::new(env!("CARGO_BIN_EXE_leveltable"))
        .args(["db", "get"])
        .arg(&db)
        .arg(key(ENTRIES - 1))
        .output()
        .unwrap();
    assert!(
        dump.status.success(),
        "{}",
        String::from_utf8_lossy(&dump.stderr)
    );
    let line = String::from_utf8_lossy(&dump.stdout).into_owned();
    assert!(
        line.trim_end() == format!("{}\tv{}", key(ENTRIES - 1), ENTRIES - 1),
        "{}",
        &line[line.len().saturating_sub(40)..]
    );
}
