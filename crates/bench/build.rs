//! Compiles the C++ loops over LevelDB 1.23 (`native/leveldb_loops.cc`) when LevelDB is
//! installed, and sets `cfg(leveldb_loops)`. LevelDB, snappy and the C++ runtime are linked
//! by `leveltable-interop`, which finds them the same way (`LEVELDB_INCLUDE_DIR`, default
//! `/usr/include`; `LEVELDB_LIB_DIR`, default the Debian multiarch directory). Without
//! LevelDB the runner still builds and reports LevelDB's columns as unavailable.

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(leveldb_loops)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=native/leveldb_loops.cc");
    println!("cargo::rerun-if-env-changed=LEVELDB_INCLUDE_DIR");
    println!("cargo::rerun-if-env-changed=LEVELDB_LIB_DIR");
    let dir = |var: &str, default: &str| {
        env::var_os(var).map_or_else(|| PathBuf::from(default), PathBuf::from)
    };
    let include = dir("LEVELDB_INCLUDE_DIR", "/usr/include");
    let lib = dir("LEVELDB_LIB_DIR", "/usr/lib/x86_64-linux-gnu");
    if !include.join("leveldb/table.h").is_file() || !lib.join("libleveldb.a").is_file() {
        println!("cargo::warning=LevelDB 1.23 not found: the runner will skip LevelDB");
        return;
    }
    let built = cc::Build::new()
        .cpp(true)
        .std("c++17")
        .opt_level(2)
        .file("native/leveldb_loops.cc")
        .include(&include)
        .cpp_link_stdlib(None)
        .try_compile("leveltable_bench_loops");
    match built {
        Ok(()) => println!("cargo::rustc-cfg=leveldb_loops"),
        Err(e) => println!("cargo::warning=compiling the LevelDB loops failed: {e}"),
    }
}
