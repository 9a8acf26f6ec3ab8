//! A Minecraft Bedrock world written by Mojang's LevelDB (amulet-leveldb, raw deflate
//! blocks), damaged (a data block flipped in its newest table and in its oldest), repaired,
//! then opened by Mojang's LevelDB again: it reads what we read, holds the world's values
//! wherever the report lists nothing lost, every key it lacks lies in a range the report
//! lists as lost, and every key it holds with another value than the world's (or that the
//! world had deleted) is one the report lists as uncertain. With `drop_uncertain` it holds
//! only the world's own values. The repaired tables are raw deflate, as Mojang's.
//!
//! Needs a Python with amulet-leveldb: `LEVELTABLE_MOJANG_PYTHON` (or `python3`). Without
//! one the test prints one `skipped:` line, unless `LEVELTABLE_MOJANG_PYTHON` or
//! `LEVELTABLE_REQUIRE_SERVERS=1` is set.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use leveltable_db::{LostKind, RepairOptions, repair};
use leveltable_interop::mojang::{mojang_view, python};

use crate::common::dbs::{
    Model, assert_raw_deflate, files, in_lost_range, mojang_world, uncertain, view,
};

/// Flips one byte of `path` at `at` of its length (inside its data blocks: the index,
/// metaindex and footer are its last few kilobytes).
fn flip(path: &Path, at: f64) -> String {
    let mut bytes = fs::read(path).unwrap();
    let offset = (bytes.len() as f64 * at) as usize;
    bytes[offset] ^= 0x5a;
    fs::write(path, bytes).unwrap();
    path.file_name().unwrap().to_string_lossy().into_owned()
}

#[test]
fn a_damaged_world_repaired_opens_in_mojangs_leveldb_as_the_report_says() {
    let Some(python) = python() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let world = tmp.path().join("world");
    // The truth: Mojang's view of the undamaged world (read from a copy).
    let want: Model = mojang_world(&python, &world, 10, 11, &tmp.path().join("truth"));
    assert!(want.len() > 1000);

    // A data block of the newest table (its keys' older versions survive: stale) and of the
    // oldest (keys only it held: lost).
    let all = files(&world, "ldb");
    assert!(all.len() >= 2, "{all:?}");
    let newest = flip(all.last().unwrap(), 0.3);
    let oldest = flip(&all[0], 0.5);

    let options = RepairOptions::default().sample(usize::MAX);
    let dest = tmp.path().join("dest");
    let report = repair(&world, &dest, &options).unwrap();
    for file in [&newest, &oldest] {
        assert!(
            report
                .lost
                .iter()
                .any(|l| &l.file == file && l.kind == LostKind::Block && l.range.is_some()),
            "{file} not reported lost: {:?}",
            report.lost
        );
    }
    let got = view(&dest);
    let uncertain = uncertain(&report);
    assert_eq!(uncertain.len() as u64, report.uncertain_keys);
    let (mut lost, mut stale, mut resurrected) = (0, 0, 0);
    for key in want.keys().chain(got.keys()).collect::<BTreeSet<_>>() {
        match (want.get(key), got.get(key)) {
            (Some(w), Some(g)) if w == g => {}
            (Some(_), Some(_)) => {
                stale += 1;
                assert!(uncertain.contains(key), "stale, not uncertain: {key:02x?}");
            }
            (Some(_), None) => {
                lost += 1;
                assert!(in_lost_range(&report, key), "lost outside: {key:02x?}");
            }
            (None, Some(_)) => {
                resurrected += 1;
                assert!(uncertain.contains(key), "brought back: {key:02x?}");
            }
            (None, None) => unreachable!(),
        }
    }
    eprintln!(
        "world of {} keys: {} lost, {} stale, {} brought back; {} uncertain, {} lost pieces",
        want.len(),
        lost,
        stale,
        resurrected,
        report.uncertain_keys,
        report.lost.len()
    );
    // Where the world's obsolete log still holds a lost block's versions, they are taken,
    // and reported uncertain.
    assert!(
        lost + stale + report.uncertain_keys > 0,
        "the damage cost nothing: not a test"
    );
    assert_eq!(report.keys as usize, got.len());

    // The repaired tables are raw deflate, which LevelDB 1.23 does not know.
    for path in files(&dest, "ldb") {
        assert_raw_deflate(&path);
    }
    // Mojang's LevelDB opens the repair and reads what we read.
    let mojang: Model = mojang_view(&python, &dest);
    assert_eq!(mojang.len(), got.len());
    assert!(mojang == got, "Mojang's LevelDB reads another repair");

    // Without the uncertain keys: only the world's own values.
    let dropped = tmp.path().join("dropped");
    let report = repair(&world, &dropped, &options.drop_uncertain(true)).unwrap();
    let got_dropped = view(&dropped);
    assert_eq!(got_dropped.len() + uncertain.len(), got.len());
    for (k, v) in &got_dropped {
        assert_eq!(want.get(k), Some(v), "{k:02x?}");
    }
    assert_eq!(report.keys as usize, got_dropped.len());
    assert!(mojang_view::<Model>(&python, &dropped) == got_dropped);
}
