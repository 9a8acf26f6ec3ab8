//! `cli`: the `leveltable` command end to end, as a user runs it in a pipeline, against the
//! same tool written in C++ over LevelDB 1.23 (`ltb_cli_get` and `ltb_cli_build` in the
//! native loops, started as a child of this runner).
//!
//! - `get --hex` of the shared snappy table with 100,000 keys (half the get workload's
//!   query count) on standard input, all present or all absent; found entries print on
//!   standard output, `not found: KEY` lines on standard error, both into files.
//! - `build --hex OUT -` of a fifth of the table's entries (200,000, hex `KEY<TAB>VALUE`
//!   lines) from standard input: written under a temporary name, synced, renamed.
//!
//! The figure is the wall-clock time of the whole process, start to exit. Both tools read
//! the same input and must print the same lines (compared byte for byte), and build the same
//! entries (compared entry by entry: the snap crate's compressed blocks are not byte for byte
//! libsnappy's).

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use leveltable_table::Compression;

use super::cli_child::{CHILD_COMMAND, hex, run_timed};
use super::config::{Config, Result, count};
use super::harness::{Job, Sample, best_of, check, leveldb_on};
use super::tables::{Fixture, open_ours};
use crate::report::{Row, System, Target, Unit};
use crate::workload::{get_query_ids, key, table_entries};

/// The environment variable naming the `leveltable` binary to measure; by default the one
/// next to the runner, built first if it is not there.
pub const CLI_ENV: &str = "LEVELTABLE_CLI";

pub(super) fn rows(config: &Config, fixture: &Fixture, exe: &Path) -> Result<Vec<Row>> {
    let cli = cli_binary(exe)?;
    let dir = config.dir.join("cli");
    fs::create_dir_all(&dir)?;
    let (table, _) = fixture.paths(Compression::Snappy);
    let queries = config.queries / 2;
    let mut rows = Vec::new();
    for present in [true, false] {
        let input = dir.join(format!("keys-{present}.hex"));
        let mut w = BufWriter::new(File::create(&input)?);
        for id in get_query_ids(config.entries, queries, present) {
            writeln!(w, "{}", hex(&key(id)))?;
        }
        w.flush()?;
        let run = |system: System| -> Result<Sample> {
            let (out, err) = outputs(&dir, system);
            let mut command = match system {
                System::Leveltable => Command::new(&cli),
                _ => Command::new(exe),
            };
            match system {
                System::Leveltable => command.arg("get").arg("--hex").arg(table),
                _ => command.arg(CHILD_COMMAND).arg("get").arg(table),
            };
            let code = run_timed(&mut command, &input, &out, &err)?;
            let expected = if present { 0 } else { 1 };
            check(code.1 == Some(expected), || {
                format!("{} get exited with {:?}", system.name(), code.1)
            })?;
            Ok(Sample {
                elapsed: code.0,
                work: 1.0,
            })
        };
        let mut jobs: Vec<(System, Job<'_>)> =
            vec![(System::Leveltable, Box::new(|| run(System::Leveltable)))];
        if leveldb_on() {
            jobs.push((System::LevelDb, Box::new(|| run(System::LevelDb))));
        }
        let figures = best_of(config.rounds, Unit::Millis, &mut jobs)?;
        drop(jobs);
        if leveldb_on() {
            for stream in [0, 1] {
                let ours = fs::read(output_path(&dir, System::Leveltable, stream))?;
                let theirs = fs::read(output_path(&dir, System::LevelDb, stream))?;
                check(ours == theirs, || {
                    format!(
                        "get printed different {} from LevelDB's tool",
                        ["standard output", "standard error"][stream]
                    )
                })?;
            }
        }
        rows.push(Row {
            workload: format!(
                "cli: leveltable get --hex, {} {} keys on stdin (whole process)",
                count(queries as u64),
                if present { "present" } else { "absent" }
            ),
            unit: Unit::Millis,
            figures,
            target: Target::TimeAtMost(0.7),
        });
    }

    let entries = (config.entries / 5).max(1);
    let input = dir.join("entries.hex");
    let mut w = BufWriter::new(File::create(&input)?);
    for (k, v) in table_entries(entries) {
        writeln!(w, "{}\t{}", hex(&k), hex(&v))?;
    }
    w.flush()?;
    let table_of = |system: System| dir.join(format!("built-{}.ldb", system.index()));
    let run = |system: System| -> Result<Sample> {
        let out = table_of(system);
        let _ = fs::remove_file(&out);
        let (stdout, stderr) = outputs(&dir, system);
        let mut command = match system {
            System::Leveltable => Command::new(&cli),
            _ => Command::new(exe),
        };
        match system {
            System::Leveltable => command.args(["build", "--hex"]).arg(&out).arg("-"),
            _ => command.arg(CHILD_COMMAND).arg("build").arg(&out),
        };
        let (elapsed, code) = run_timed(&mut command, &input, &stdout, &stderr)?;
        check(code == Some(0), || {
            let message = fs::read_to_string(&stderr).unwrap_or_default();
            format!("{} build exited with {code:?}: {message}", system.name())
        })?;
        Ok(Sample { elapsed, work: 1.0 })
    };
    let mut jobs: Vec<(System, Job<'_>)> =
        vec![(System::Leveltable, Box::new(|| run(System::Leveltable)))];
    if leveldb_on() {
        jobs.push((System::LevelDb, Box::new(|| run(System::LevelDb))));
    }
    let figures = best_of(config.rounds, Unit::Millis, &mut jobs)?;
    drop(jobs);
    if leveldb_on() {
        // Same entries; the bytes differ where the snap crate compresses a block differently
        // from libsnappy.
        check(
            same_entries(&table_of(System::Leveltable), &table_of(System::LevelDb))?,
            || "build wrote other entries than LevelDB's tool".into(),
        )?;
    }
    rows.push(Row {
        workload: format!(
            "cli: leveltable build --hex, {} entries on stdin (whole process)",
            count(entries)
        ),
        unit: Unit::Millis,
        figures,
        target: Target::TimeAtMost(0.7),
    });
    rows.extend(super::cli_db_write::rows(config, &cli, exe)?);
    let _ = fs::remove_dir_all(&dir);
    Ok(rows)
}

/// Whether the tables at `a` and `b` hold the same entries in the same order.
fn same_entries(a: &Path, b: &Path) -> Result<bool> {
    let (a, b) = (
        open_ours(a, false, None, true)?,
        open_ours(b, false, None, true)?,
    );
    let (mut x, mut y) = (a.iter(), b.iter());
    x.seek_to_first();
    y.seek_to_first();
    while x.valid() && y.valid() {
        if x.key() != y.key() || x.value() != y.value() {
            return Ok(false);
        }
        x.next();
        y.next();
    }
    x.status()?;
    y.status()?;
    Ok(!x.valid() && !y.valid())
}

/// The files a system's standard output and standard error go to.
fn outputs(dir: &Path, system: System) -> (PathBuf, PathBuf) {
    (output_path(dir, system, 0), output_path(dir, system, 1))
}

fn output_path(dir: &Path, system: System, stream: usize) -> PathBuf {
    dir.join(format!("{}.{}", system.index(), ["out", "err"][stream]))
}

/// The `leveltable` binary: [`CLI_ENV`] if set, else the one next to the runner (the same
/// target directory and profile), built with cargo first if it is missing.
fn cli_binary(exe: &Path) -> Result<PathBuf> {
    if let Some(path) = std::env::var_os(CLI_ENV) {
        return Ok(path.into());
    }
    let next_to_runner = exe.with_file_name(format!("leveltable{}", std::env::consts::EXE_SUFFIX));
    if next_to_runner.is_file() {
        return Ok(next_to_runner);
    }
    let profile_dir = exe.parent().ok_or("the runner has no directory")?;
    let target_dir = profile_dir
        .parent()
        .ok_or("the runner is not in a target directory")?;
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!("building the leveltable command for the cli workload ...");
    let profile = profile_dir.file_name().and_then(|n| n.to_str());
    let mut build = Command::new(cargo);
    build
        .args(["build", "-p", "leveltable-cli", "--manifest-path"])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(target_dir);
    if profile == Some("release") {
        build.arg("--release");
    }
    let status = build.status()?;
    check(status.success() && next_to_runner.is_file(), || {
        format!(
            "could not build the leveltable command ({status}); build it with `cargo build \
             --release -p leveltable-cli` or name it in {CLI_ENV}"
        )
    })?;
    Ok(next_to_runner)
}
