//! Compiles the C++ loops over LevelDB 1.23 (`native/leveldb_loops.cc`,
//! `native/leveldb_write_loops.cc`) when the interop
//! crate found LevelDB, and sets `cfg(leveldb_loops)`.
//!
//! `leveltable-interop` finds LevelDB (see its build script), links it with snappy and the
//! C++ runtime, and hands this script two directories through `links = "leveldb"`:
//! `DEP_LEVELDB_INCLUDE`, LevelDB's headers, and `DEP_LEVELDB_SHIM_INCLUDE`, which holds
//! `leveldb_internal.h`, the one declaration of LevelDB's private classes. Without them the
//! runner still builds and reports LevelDB's columns as unavailable; the interop crate has
//! already said why, so this script stays quiet. `LEVELTABLE_REQUIRE_LEVELDB=1` turns a
//! failure to compile the loops into a build error.

use std::env;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(leveldb_loops)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=native/leveldb_loops.cc");
    println!("cargo::rerun-if-changed=native/leveldb_write_loops.cc");
    println!("cargo::rerun-if-changed=native/leveldb_shape.h");
    println!("cargo::rerun-if-changed=native/leveldb_report.h");
    println!("cargo::rerun-if-changed=native/leveldb_lines.h");
    println!("cargo::rerun-if-env-changed=LEVELTABLE_REQUIRE_LEVELDB");
    let (Some(include), Some(shim_include)) = (
        env::var_os("DEP_LEVELDB_INCLUDE"),
        env::var_os("DEP_LEVELDB_SHIM_INCLUDE"),
    ) else {
        return;
    };
    let header = std::path::Path::new(&shim_include).join("leveldb_internal.h");
    println!("cargo::rerun-if-changed={}", header.display());
    let built = cc::Build::new()
        .cpp(true)
        .std("c++17")
        .opt_level(2)
        .file("native/leveldb_loops.cc")
        .file("native/leveldb_write_loops.cc")
        .include("native")
        .include(&shim_include)
        .include(&include)
        // LevelDB and the C++ runtime are linked by the interop crate, after LevelDB.
        .cpp_link_stdlib(None)
        .try_compile("leveltable_bench_loops");
    match built {
        Ok(()) => println!("cargo::rustc-cfg=leveldb_loops"),
        Err(e) if env::var("LEVELTABLE_REQUIRE_LEVELDB").is_ok_and(|v| v == "1") => {
            panic!("LEVELTABLE_REQUIRE_LEVELDB=1 but compiling the LevelDB loops failed: {e}")
        }
        Err(e) => println!("cargo::warning=compiling the LevelDB loops failed: {e}"),
    }
}
