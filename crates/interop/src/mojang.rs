//! Mojang's LevelDB (the fork Minecraft Bedrock stores its worlds with), driven through
//! amulet-leveldb's Python binding and `crates/python/tests/bedrock_world.py`: writing
//! worlds and reading them back as Mojang's LevelDB reads them.
//!
//! The interpreter is `LEVELTABLE_MOJANG_PYTHON` (or `python3`). Without amulet-leveldb
//! there, [`python`] prints one `skipped:` line and returns `None`, unless
//! `LEVELTABLE_MOJANG_PYTHON` or `LEVELTABLE_REQUIRE_SERVERS=1` is set: then it panics.

use std::path::Path;
use std::process::Command;

/// The script that writes, edits and dumps worlds with Mojang's LevelDB.
pub const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../python/tests/bedrock_world.py"
);

/// The Python that imports amulet-leveldb's `leveldb`, or `None` (after one `skipped:`
/// line) where there is none and none is required.
///
/// # Panics
/// If one is required (see the module's documentation) and it cannot import `leveldb`.
pub fn python() -> Option<String> {
    let explicit = std::env::var("LEVELTABLE_MOJANG_PYTHON").ok();
    let python = explicit.clone().unwrap_or_else(|| "python3".into());
    let ok = Command::new(&python)
        .args(["-c", "import leveldb; leveldb.LevelDB"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(python);
    }
    if explicit.is_some() || std::env::var("LEVELTABLE_REQUIRE_SERVERS").as_deref() == Ok("1") {
        panic!("{python} cannot import amulet-leveldb's `leveldb`");
    }
    eprintln!("skipped: amulet-leveldb (Mojang's LevelDB) is not installed for {python}");
    None
}

/// Runs [`SCRIPT`] with `args` under `python`.
///
/// # Panics
/// If it fails, with its standard error.
pub fn run(python: &str, args: &[&str]) {
    let out = Command::new(python)
        .arg(SCRIPT)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// What Mojang's LevelDB reads in the world database `dir`, in its order (opening it may
/// recover its log into a table). The dump is written beside `dir`, as `dir.tsv`.
///
/// # Panics
/// If the dump fails.
pub fn mojang_view<C: FromIterator<(Vec<u8>, Vec<u8>)>>(python: &str, dir: &Path) -> C {
    let out = dir.with_extension("tsv");
    run(
        python,
        &["dump", dir.to_str().unwrap(), out.to_str().unwrap()],
    );
    std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| {
            let (k, v) = l.split_once('\t').unwrap();
            (unhex(k), unhex(v))
        })
        .collect()
}
