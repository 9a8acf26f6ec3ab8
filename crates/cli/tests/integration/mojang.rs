//! The README's Minecraft example on a world written by Mojang's LevelDB (amulet-leveldb):
//! `leveltable db dump WORLD --hex` prints exactly what Mojang's own iteration reads, under
//! every profile that knows raw deflate, and `--profile leveldb` names the type it does not
//! know. Tables built with `--compression deflate` are read back.
//!
//! Needs a Python with amulet-leveldb: `LEVELTABLE_MOJANG_PYTHON` (or `python3`); without
//! one the test prints one `skipped:` line, unless `LEVELTABLE_MOJANG_PYTHON` or
//! `LEVELTABLE_REQUIRE_SERVERS=1` is set.

use crate::common;

use common::*;
use leveltable_interop::mojang::{python, run};

#[test]
fn dump_of_a_mojang_world_is_mojangs_view() {
    let Some(python) = python() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let world = tmp.path().join("db");
    let world_arg = world.to_str().unwrap();
    run(
        &python,
        &["write", world_arg, "--megabytes", "4", "--seed", "5"],
    );

    // Ours first: reading changes nothing, so Mojang's LevelDB then opens the same files.
    let mut dumps = Vec::new();
    for profile in [None, Some("auto"), Some("mojang")] {
        let mut cmd = leveltable();
        if let Some(p) = profile {
            cmd.args(["--profile", p]);
        }
        let out = cmd
            .args(["db", "dump", world_arg, "--hex"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr_of(&out));
        dumps.push(String::from_utf8(out.stdout).unwrap());
    }
    assert!(dumps.iter().all(|d| *d == dumps[0]));
    let out = leveltable()
        .args(["--profile", "leveldb", "db", "verify", world_arg])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr_of(&out);
    assert!(
        err.contains("unsupported block compression type 4")
            && err.contains("known to profiles: mojang, auto"),
        "{err}"
    );

    let expected = tmp.path().join("mojang.tsv");
    run(&python, &["dump", world_arg, expected.to_str().unwrap()]);
    let expected = std::fs::read_to_string(expected).unwrap();
    assert!(expected.lines().count() > 500);
    assert!(
        dumps[0] == expected,
        "the dump differs from Mojang's iteration"
    );

    // The dump rebuilds as a table with Mojang's codec, read back the same.
    let tsv = tmp.path().join("world.tsv");
    std::fs::write(&tsv, &dumps[0]).unwrap();
    let table = tmp.path().join("world.ldb");
    let out = leveltable()
        .args(["build", table.to_str().unwrap(), tsv.to_str().unwrap()])
        .args(["--hex", "--compression", "deflate"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let out = leveltable()
        .args(["dump", "--hex", table.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(String::from_utf8(out.stdout).unwrap() == expected);
}
