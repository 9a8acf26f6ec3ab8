//! The lying-directory target over a few thousand pseudo-random inputs: every read of every
//! directory ends within the entries its files hold, and one that verifies reads as written.

use leveltable_fuzz_targets::db_lies::db_lies;

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
    for _ in 0..3000 {
        let len = usize::from(next()) * 3;
        let data: Vec<u8> = (0..len).map(|_| next()).collect();
        compared += usize::from(db_lies(&data));
    }
    // Most inputs tell some lie; enough tell none (or only harmless ones) to check reads
    // against the model.
    assert!(
        compared >= 300,
        "only {compared} directories compared with the model"
    );
}
