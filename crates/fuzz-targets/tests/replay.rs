//! Replays every kept fuzz input: the crashes found so far (`fuzz/regressions/<target>/`)
//! and the seed corpora (`fuzz/seeds/<target>/`). A fixed bug stays fixed.

use std::fs;
use std::path::PathBuf;

use leveltable_fuzz_targets::{TARGETS, run};

fn replay(kind: &str) -> usize {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz")
        .join(kind);
    let mut replayed = 0;
    for target in TARGETS {
        let Ok(entries) = fs::read_dir(root.join(target)) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("readable directory entry").path();
            let data = fs::read(&path).expect("readable input");
            eprintln!("replaying {}", path.display());
            run(target, &data);
            replayed += 1;
        }
    }
    replayed
}

#[test]
fn seeds() {
    assert!(replay("seeds") >= TARGETS.len(), "every target has seeds");
}

#[test]
fn regressions() {
    replay("regressions");
}

#[test]
fn empty_and_tiny_inputs() {
    for target in TARGETS {
        for data in [&[][..], &[0], &[0xff; 7], &[0x80; 64]] {
            run(target, data);
        }
    }
}
