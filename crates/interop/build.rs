//! Compiles the C++ shim against LevelDB 1.23 when it is installed.
//!
//! LevelDB is found through `LEVELDB_INCLUDE_DIR` (default `/usr/include`, must hold
//! `leveldb/table.h` and `leveldb/c.h`) and `LEVELDB_LIB_DIR` (default the Debian multiarch
//! directory, must hold `libleveldb.a`). Snappy is linked statically when `libsnappy.a` sits
//! next to it, else dynamically. When anything is missing the crate builds without the shim
//! and without `cfg(leveldb_available)`; its tests then skip. Setting
//! `LEVELTABLE_REQUIRE_LEVELDB=1` turns a missing or unbuildable LevelDB into a build error.
//!
//! Without LevelDB the build prints one warning saying why and what the tests skip; cargo
//! repeats a build script's warnings on every command that uses the crate, so
//! `cargo test --workspace` says it once, and the tests themselves skip silently. With
//! LevelDB, dependents' build scripts (the bench crate's) receive, through
//! `links = "leveldb"`, `DEP_LEVELDB_INCLUDE` (LevelDB's headers) and
//! `DEP_LEVELDB_SHIM_INCLUDE` (this crate's `shim/`, whose `leveldb_internal.h` declares
//! LevelDB's private classes once for every C++ file that needs them).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

const DEFAULT_INCLUDE_DIR: &str = "/usr/include";
const DEFAULT_LIB_DIR: &str = "/usr/lib/x86_64-linux-gnu";

fn main() {
    println!("cargo::rustc-check-cfg=cfg(leveldb_available)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=shim/shim.cc");
    println!("cargo::rerun-if-changed=shim/shim.h");
    println!("cargo::rerun-if-changed=shim/leveldb_internal.h");
    for var in [
        "LEVELDB_LIB_DIR",
        "LEVELDB_INCLUDE_DIR",
        "LEVELTABLE_REQUIRE_LEVELDB",
    ] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    let required = env::var("LEVELTABLE_REQUIRE_LEVELDB").is_ok_and(|v| v == "1");

    let built = build();
    if built.is_err() {
        watch_for_install();
    }
    match built {
        Ok(()) => println!("cargo::rustc-cfg=leveldb_available"),
        Err(reason) if required => {
            panic!("LEVELTABLE_REQUIRE_LEVELDB=1 but LevelDB 1.23 is unusable: {reason}")
        }
        Err(reason) => println!(
            "cargo::warning=LevelDB 1.23 not found ({reason}): the differential tests against it \
             are skipped and the bench runner leaves it out; to run them: \
             apt-get install libleveldb-dev libsnappy-dev"
        ),
    }
}

/// Asks Cargo to run this script again when LevelDB is installed after a build that found it
/// missing: it watches the directory its headers go to (`leveldb/` under the include
/// directory once that exists, the include directory itself before), whose contents change
/// when the package is installed. Without this, the first build's verdict would stand until
/// the script itself changed. (A `libleveldb.a` missing beside present headers is not
/// watched: both come in one package.)
fn watch_for_install() {
    let include_dir = dir_from_env("LEVELDB_INCLUDE_DIR", DEFAULT_INCLUDE_DIR);
    let headers = include_dir.join("leveldb");
    let watched = if headers.is_dir() {
        headers
    } else {
        include_dir
    };
    // A path that does not exist would make Cargo run the script, and rebuild this crate and
    // its dependents, on every build.
    if watched.is_dir() {
        println!("cargo::rerun-if-changed={}", watched.display());
    }
}

fn dir_from_env(var: &str, default: &str) -> PathBuf {
    env::var_os(var).map_or_else(|| PathBuf::from(default), PathBuf::from)
}

fn build() -> Result<(), String> {
    let include_dir = dir_from_env("LEVELDB_INCLUDE_DIR", DEFAULT_INCLUDE_DIR);
    let lib_dir = dir_from_env("LEVELDB_LIB_DIR", DEFAULT_LIB_DIR);

    for header in ["leveldb/table.h", "leveldb/c.h", "leveldb/db.h"] {
        let path = include_dir.join(header);
        if !path.is_file() {
            return Err(format!("{} not found", path.display()));
        }
        println!("cargo::rerun-if-changed={}", path.display());
    }
    check_version(&include_dir.join("leveldb/db.h"))?;

    let leveldb_a = lib_dir.join("libleveldb.a");
    if !leveldb_a.is_file() {
        return Err(format!("{} not found", leveldb_a.display()));
    }
    println!("cargo::rerun-if-changed={}", leveldb_a.display());
    let snappy_static = lib_dir.join("libsnappy.a").is_file();
    if !snappy_static && !lib_dir.join("libsnappy.so").exists() {
        return Err(format!("libsnappy not found in {}", lib_dir.display()));
    }

    cc::Build::new()
        .cpp(true)
        .std("c++17")
        .file("shim/shim.cc")
        .include("shim")
        .include(&include_dir)
        .flag_if_supported("-Wno-unused-parameter")
        // The standard library is linked below, after LevelDB, which needs it too.
        .cpp_link_stdlib(None)
        .try_compile("leveltable_interop_shim")
        .map_err(|e| format!("compiling the shim failed: {e}"))?;

    // Order matters for static archives: the shim needs LevelDB, LevelDB needs snappy and the
    // C++ runtime.
    println!("cargo::rustc-link-search=native={}", lib_dir.display());
    println!("cargo::rustc-link-lib=static=leveldb");
    if snappy_static {
        println!("cargo::rustc-link-lib=static=snappy");
    } else {
        println!("cargo::rustc-link-lib=dylib=snappy");
    }
    println!("cargo::rustc-link-lib=dylib=stdc++");
    println!("cargo::rustc-link-lib=dylib=pthread");

    let shim_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").ok_or("no CARGO_MANIFEST_DIR")?)
        .join("shim");
    println!("cargo::metadata=include={}", include_dir.display());
    println!("cargo::metadata=shim_include={}", shim_dir.display());
    Ok(())
}

/// `shim/leveldb_internal.h` restates LevelDB 1.23's internal class layouts, so any other
/// version is refused.
fn check_version(db_h: &Path) -> Result<(), String> {
    let text = fs::read_to_string(db_h).map_err(|e| format!("{}: {e}", db_h.display()))?;
    let number = |name: &str| {
        text.lines()
            .find_map(|line| line.split_once(&format!("{name} = "))?.1.strip_suffix(';'))
            .and_then(|n| n.trim().parse::<u32>().ok())
    };
    match (number("kMajorVersion"), number("kMinorVersion")) {
        (Some(1), Some(23)) => Ok(()),
        (Some(major), Some(minor)) => Err(format!("found LevelDB {major}.{minor}, need 1.23")),
        _ => Err(format!("no LevelDB version in {}", db_h.display())),
    }
}
