//! Runs every workload of the comparison runner at tiny sizes. Each loop checks its answers
//! (entries found, filter hits, bytes scanned) against the workload's known results and the
//! other systems', so this catches a system doing less work than the others.

use std::path::Path;

use leveltable_bench::report::{System, Target};
use leveltable_bench::runner::{Config, WORKLOADS, run};

#[test]
fn every_workload_runs_and_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config::smoke(dir.path().to_path_buf());
    let exe = Path::new(env!("CARGO_BIN_EXE_leveltable-bench"));
    let results = run(&config, &WORKLOADS, Some(exe)).unwrap();

    assert!(results.rows.len() >= 18, "{}", results.rows.len());
    for row in &results.rows {
        let ours = row.figures[System::Leveltable.index()];
        // A follower can yield a batch before the writer's `put` has returned: 0 ms.
        let least = if row.workload.contains("feed latency") {
            0.0
        } else {
            f64::MIN_POSITIVE
        };
        assert!(
            ours.is_some_and(|f| f >= least),
            "{}: {ours:?}",
            row.workload
        );
        // Rows judged against leveltable's own figures (threads, a memory bound, the sort,
        // the builds' baselines)
        // the world's codec speeds (codecs LevelDB 1.23 lacks) and `follow` have no LevelDB
        // column.
        let own = matches!(row.target, Target::SpeedupOver { .. } | Target::AtMost(_))
            || row.workload.contains("shuffled")
            || row.workload.contains(" thread over ")
            || row.workload.starts_with("decompress ")
            // LevelDB neither refreshes a read-only handle nor follows a writer, and cannot
            // open a database its writer holds.
            || row.workload.starts_with("follow: ");
        if leveltable_bench::leveldb::available() && !own {
            assert!(
                row.figures[System::LevelDb.index()].is_some(),
                "{}",
                row.workload
            );
        }
    }
    let peers = |w: &str| {
        let row = results
            .rows
            .iter()
            .find(|r| r.workload.starts_with(w))
            .unwrap();
        (
            row.figures[System::Sstable.index()].is_some(),
            row.figures[System::RustyLeveldb.index()].is_some(),
        )
    };
    assert_eq!(peers("Bloom create"), (true, true));
    assert_eq!(peers("get present"), (true, false));
    assert_eq!(peers("filter block"), (false, false));
    assert_eq!(peers("write fillrandom:"), (false, true));
    assert_eq!(peers("write fillsync:"), (false, false));
    for w in [
        "db get present",
        "db scan",
        "db open",
        "db-build",
        "db-build from",
        "repair, undamaged",
        "get_many present, 20k-entry table",
        "get_many absent, 20k-entry table",
        "write fillseq:",
        "write overwrite:",
        "write readrandom:",
        "write readseq:",
        "write deleterandom:",
        "write fillseq: time an operation takes beyond the kernel's floor",
        "write deleterandom: time an operation takes beyond the kernel's floor",
        "write fillrandom, 2 writer threads",
        "write fillrandom: disk bytes per byte put",
        "write fillrandom: peak RSS",
        "follow: refresh(), nothing new",
        "follow: refresh() after ~1 KB appended",
        "follow: reopening instead",
        "follow: feed latency, writer's return to follower's yield, polling",
        "follow: feed latency, polling every 10 ms, p99",
        #[cfg(target_os = "linux")]
        "follow: feed latency, writer's return to follower's yield, inotify",
    ] {
        assert!(
            results.rows.iter().any(|r| r.workload.starts_with(w)),
            "no {w} row"
        );
    }

    // Sections: the filters and the memory workloads', then the object-store workload's
    // when its servers are installed.
    let section = |title: &str| {
        results
            .sections
            .iter()
            .find(|s| s.contains(title))
            .unwrap_or_else(|| panic!("no {title:?} section in {:?}", results.sections))
    };
    let filters = section("Absent-key gets on structured keys");
    let memory = section("Memory:");
    assert!(
        filters.contains("| u64-be | leveltable, LocalBloom64 |"),
        "{filters}"
    );
    assert!(memory.contains("| leveltable |"), "{memory}");
    let write = section("Write path, per child process");
    assert!(write.contains("| fillrandom | rusty-leveldb |"), "{write}");
}
