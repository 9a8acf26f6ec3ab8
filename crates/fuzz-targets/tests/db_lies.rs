//! The lying-directory target over a few thousand pseudo-random inputs: every read of every
//! directory ends within the entries its files hold, and one that verifies reads as written;
//! every eighth directory is repaired too (`leveltable_fuzz_targets::repair`).

use leveltable_fuzz_targets::db_lies::{db_lies_direct, db_lies_with};
use leveltable_fuzz_targets::repair::Repaired;

#[test]
fn random_lying_directories() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 24) as u8
    };
    let mut compared = 0;
    let mut repaired = std::collections::BTreeMap::new();
    for i in 0..3000 {
        let len = usize::from(next()) * 3;
        let data: Vec<u8> = (0..len).map(|_| next()).collect();
        let (read, repair) = db_lies_with(&data, i % 8 == 0);
        compared += usize::from(read);
        if let Some(r) = repair {
            *repaired.entry(format!("{r:?}")).or_insert(0usize) += 1;
        }
    }
    eprintln!("repairs: {repaired:?}");
    // Repairs of each kind: refused (a comparator lie), written, and read as the open reads.
    for kind in [Repaired::Refused, Repaired::Written, Repaired::AsOpened] {
        let n = repaired.get(&format!("{kind:?}")).copied().unwrap_or(0);
        assert!(n >= 10, "only {n} repairs {kind:?}: {repaired:?}");
    }
    // Most inputs tell some lie; enough tell none (or only harmless ones) to check reads
    // against the model.
    assert!(
        compared >= 300,
        "only {compared} directories compared with the model"
    );
}

#[test]
fn random_lying_directories_read_straight_from_their_blocks() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 24) as u8
    };
    let mut compared = 0;
    for _ in 0..300 {
        let len = usize::from(next()) * 2;
        let data: Vec<u8> = (0..len).map(|_| next()).collect();
        compared += usize::from(db_lies_direct(&data));
    }
    assert!(
        compared >= 30,
        "only {compared} directories compared with the model"
    );
}
