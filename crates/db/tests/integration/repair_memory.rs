//! A repair's memory does not grow with the database: under a small table memory budget, the
//! peak resident memory of a repair of a database of many tables is about that of one a
//! quarter its size, and damaged databases (tables left behind by a compaction, deletions,
//! a lost block) repair under that budget exactly as without it.
//!
//! The repair whose peak is measured runs in a child process (this test's own binary, run
//! again with `LEVELTABLE_REPAIR_MEMORY_CHILD` set), which reads its own `VmHWM` from
//! `/proc/self/status` once the repair is done.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::dbs::{
    Model, Noise, budgeted, bulk_build, damaged_history, files, table_numbers, view,
};
use leveltable_db::{Db, DbOptions, RepairOptions, RepairReport, repair};

/// Set in the child: `SRC DEST` to repair, then print the peak resident memory.
const CHILD: &str = "LEVELTABLE_REPAIR_MEMORY_CHILD";

/// The table memory budget the repairs run under.
const BUDGET: u64 = 256 << 10;

/// Bytes of a table of the databases measured: small, so that they hold many tables.
const TABLE_BYTES: u64 = 16 << 10;

/// `VmHWM` of this process, in KiB.
fn peak_kib() -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("VmHWM in /proc/self/status");
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// A database of `entries` entries of about 100 bytes (values that do not compress), in
/// tables of [`TABLE_BYTES`].
fn build(dir: &Path, entries: u64) {
    let mut noise = Noise(0x2545_f491_4f6c_dd1d);
    let entries = (0..entries).map(|i| (format!("key{i:010}").into_bytes(), noise.bytes(80)));
    bulk_build(dir, TABLE_BYTES, entries);
}

/// Repairs `src` into `dest` in a child process under the budget; returns its peak
/// resident memory in KiB and the keys written.
fn repair_in_child(src: &Path, dest: &Path) -> (u64, u64) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "repair_memory::a_repair_s_peak_memory_does_not_grow_with_the_database",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, format!("{}\n{}", src.display(), dest.display()))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The harness may print the test's name on the same line.
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("repaired: ").map(|(_, figures)| figures))
        .unwrap_or_else(|| panic!("no figures from the child: {stdout}"));
    let mut figures = line.split_whitespace().map(|f| f.parse::<u64>().unwrap());
    (figures.next().unwrap(), figures.next().unwrap())
}

/// The child's part: repairs and prints `repaired: PEAK_KIB KEYS`.
fn child(paths: &str) {
    let (src, dest) = paths.split_once('\n').unwrap();
    let report = repair(src, dest, &budgeted(BUDGET)).unwrap();
    assert!(report.lost.is_empty(), "{:?}", report.lost);
    println!("repaired: {} {}", peak_kib(), report.keys);
}

#[test]
fn a_repair_s_peak_memory_does_not_grow_with_the_database() {
    if let Ok(paths) = std::env::var(CHILD) {
        child(&paths);
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // About 4 MB in 256 tables, and 16 MB in 1024.
    let small_entries = 40_000;
    let (small, large) = (tmp.path().join("small"), tmp.path().join("large"));
    build(&small, small_entries);
    build(&large, 4 * small_entries);
    let (small_peak, small_keys) = repair_in_child(&small, &tmp.path().join("small-repaired"));
    let (large_peak, large_keys) = repair_in_child(&large, &tmp.path().join("large-repaired"));
    assert_eq!((small_keys, large_keys), (small_entries, 4 * small_entries));
    eprintln!("peak resident memory: {small_peak} KiB for 4 MB, {large_peak} KiB for 16 MB");
    // The large database is 12 MB larger: memory that grew with it would show here, well
    // above the noise of the allocator (a few MiB allowed).
    assert!(
        large_peak <= small_peak + 4096,
        "the peak grew from {small_peak} KiB to {large_peak} KiB with a database 4 times larger"
    );
}

/// The report without the paths that differ between two repairs of one source.
fn comparable(report: &RepairReport) -> RepairReport {
    let mut report = report.clone();
    report.dest = PathBuf::new();
    report
}

/// Tables left behind, deletions in tables and in the log: under the budget, the repair is
/// the model (nothing deleted comes back) and its report is the unbounded repair's.
#[test]
fn a_damaged_database_repairs_under_the_budget_as_without_it() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let model: Model = damaged_history(&src, &tmp.path().join("saved"));
    let (bounded, free) = (tmp.path().join("bounded"), tmp.path().join("free"));
    let small = repair(&src, &bounded, &budgeted(BUDGET)).unwrap();
    let large = repair(&src, &free, &RepairOptions::default()).unwrap();
    assert!(
        small.ignored.iter().any(|i| i.file.ends_with(".ldb")),
        "{:?}",
        small.ignored
    );
    assert!(small.deleted > 0 && small.obsolete_ignored > 0, "{small:?}");
    assert_eq!(comparable(&small), comparable(&large));
    assert_eq!(view(&bounded), model);
    assert_eq!(view(&free), model);
}

/// A lost block of a live table, with older versions in tables left behind: the keys it
/// covered are uncertain, and the repair under the budget takes and reports the same ones.
#[test]
fn a_lost_block_repairs_under_the_budget_as_without_it() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    damaged_history(&src, &tmp.path().join("saved"));
    // The largest live table: garble its second data block.
    let db = Db::open(&src, DbOptions::default()).unwrap();
    let live = table_numbers(&db);
    drop(db);
    let target = files(&src, "ldb")
        .into_iter()
        .filter(|p| {
            let n: u64 = p.file_stem().unwrap().to_str().unwrap().parse().unwrap();
            live.contains(&n)
        })
        .max_by_key(|p| fs::metadata(p).unwrap().len())
        .unwrap();
    let mut bytes = fs::read(&target).unwrap();
    for b in &mut bytes[5000..6000] {
        *b = 0x55;
    }
    fs::write(&target, &bytes).unwrap();
    let (bounded, free) = (tmp.path().join("bounded"), tmp.path().join("free"));
    let options = budgeted(BUDGET).sample(usize::MAX);
    let small = repair(&src, &bounded, &options).unwrap();
    let large = repair(&src, &free, &RepairOptions::default().sample(usize::MAX)).unwrap();
    assert!(
        !small.lost.is_empty() && small.uncertain_keys > 0,
        "{small:?}"
    );
    assert_eq!(comparable(&small), comparable(&large));
    assert_eq!(view(&bounded), view(&free));
}
