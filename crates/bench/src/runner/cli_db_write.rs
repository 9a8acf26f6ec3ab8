//! `cli` rows of `leveltable db write` end to end, against the same tool written in C++ over
//! LevelDB 1.23 (`ltb_cli_db_write`, started as a child of this runner): whole processes,
//! the same `put<TAB>KEY<TAB>VALUE` lines in hex on standard input, a write batch every
//! 1,000 lines, both with LevelDB's default options.
//!
//! - fillseq: half the table workload's entries (500,000 by default), keys in order, into a
//!   new database;
//! - fillrandom: as many puts of keys drawn at random, into a new database;
//! - overwrite: as many more random puts into the database fillrandom made (made again,
//!   untimed, before each measured run);
//! - fillsync: a thousandth of them (at least 100), one synced batch per put.
//!
//! The figure is the wall-clock time of the whole process, start to exit (the database
//! closed). Afterwards both databases must hold the same entries.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use leveltable_db::{Db, DbOptions};

use super::cli_child::{CHILD_COMMAND, hex, run_timed};
use super::config::{Config, Result, count};
use super::harness::{Job, Sample, best_of, check, leveldb_on};
use crate::report::{Row, System, Target, Unit};
use crate::workload::{SplitMix64, key, next_value};

/// One measured run: the lines written, and how.
struct Phase {
    name: &'static str,
    /// The lines, in hex.
    input: PathBuf,
    /// Lines written, untimed, into the database first.
    prepare: Option<PathBuf>,
    puts: u64,
    batch: u32,
    sync: bool,
    target: Target,
}

/// Writes `puts` put lines to `path`: keys in order, or drawn from `0..puts` with `rng`.
fn write_input(path: &Path, puts: u64, random: Option<&mut SplitMix64>) -> Result<()> {
    let mut w = BufWriter::new(File::create(path)?);
    let mut values = SplitMix64::new(0x0d8_3417e);
    let mut random = random;
    for i in 0..puts {
        let id = match random.as_deref_mut() {
            Some(rng) => rng.next() % puts,
            None => i,
        };
        writeln!(
            w,
            "put\t{}\t{}",
            hex(&key(id)),
            hex(&next_value(&mut values))
        )?;
    }
    w.flush()?;
    Ok(())
}

pub(super) fn rows(config: &Config, cli: &Path, exe: &Path) -> Result<Vec<Row>> {
    let dir = config.dir.join("cli-db-write");
    fs::create_dir_all(&dir)?;
    let puts = (config.entries / 2).max(1);
    let synced = (puts / 1000).max(100);
    let mut rng = SplitMix64::new(0x0f11_4a4d);
    let seq = dir.join("fillseq.hex");
    write_input(&seq, puts, None)?;
    let random = dir.join("fillrandom.hex");
    write_input(&random, puts, Some(&mut rng))?;
    let over = dir.join("overwrite.hex");
    write_input(&over, puts, Some(&mut rng))?;
    let sync = dir.join("fillsync.hex");
    write_input(&sync, synced, Some(&mut rng))?;
    let phases = [
        Phase {
            name: "fillseq",
            input: seq,
            prepare: None,
            puts,
            batch: 1000,
            sync: false,
            target: Target::TimeAtMost(0.67),
        },
        Phase {
            name: "fillrandom",
            input: random.clone(),
            prepare: None,
            puts,
            batch: 1000,
            sync: false,
            target: Target::TimeAtMost(0.67),
        },
        Phase {
            name: "overwrite",
            input: over,
            prepare: Some(random),
            puts,
            batch: 1000,
            sync: false,
            target: Target::TimeAtMost(0.67),
        },
        Phase {
            name: "fillsync",
            input: sync,
            prepare: None,
            puts: synced,
            batch: 1,
            sync: true,
            target: Target::TimeAtMost(1.0),
        },
    ];
    let mut rows = Vec::new();
    for phase in &phases {
        rows.push(row(&dir, cli, exe, config.rounds, phase)?);
    }
    let _ = fs::remove_dir_all(&dir);
    Ok(rows)
}

/// The database a system writes.
fn db_of(dir: &Path, system: System) -> PathBuf {
    dir.join(format!("db-{}", system.index()))
}

/// Runs `input` through `system`'s tool into its database; the time from start to exit.
fn write_with(
    dir: &Path,
    cli: &Path,
    exe: &Path,
    system: System,
    input: &Path,
    phase: &Phase,
) -> Result<std::time::Duration> {
    let db = db_of(dir, system);
    let batch = phase.batch.to_string();
    let mut command = match system {
        System::Leveltable => {
            let mut c = Command::new(cli);
            c.args(["db", "write", "--hex", "--quiet", "--create-if-missing"])
                .args(["--batch", &batch]);
            if phase.sync {
                c.arg("--sync");
            }
            c.arg(&db).arg("-");
            c
        }
        _ => {
            let mut c = Command::new(exe);
            c.arg(CHILD_COMMAND).arg("db-write").arg(&db).arg(&batch);
            c.arg(if phase.sync { "sync" } else { "nosync" });
            c
        }
    };
    let (out, err) = (dir.join("out"), dir.join("err"));
    let (elapsed, code) = run_timed(&mut command, input, &out, &err)?;
    check(code == Some(0), || {
        let message = fs::read_to_string(&err).unwrap_or_default();
        format!(
            "{} db write ({}) exited with {code:?}: {message}",
            system.name(),
            phase.name
        )
    })?;
    Ok(elapsed)
}

fn row(dir: &Path, cli: &Path, exe: &Path, rounds: usize, phase: &Phase) -> Result<Row> {
    let run = |system: System| -> Result<Sample> {
        let _ = fs::remove_dir_all(db_of(dir, system));
        if let Some(prepare) = &phase.prepare {
            write_with(dir, cli, exe, system, prepare, phase)?;
        }
        let elapsed = write_with(dir, cli, exe, system, &phase.input, phase)?;
        Ok(Sample { elapsed, work: 1.0 })
    };
    let mut jobs: Vec<(System, Job<'_>)> =
        vec![(System::Leveltable, Box::new(|| run(System::Leveltable)))];
    if leveldb_on() {
        jobs.push((System::LevelDb, Box::new(|| run(System::LevelDb))));
    }
    let figures = best_of(rounds, Unit::Millis, &mut jobs)?;
    drop(jobs);
    if leveldb_on() {
        check(
            same_view(
                &db_of(dir, System::Leveltable),
                &db_of(dir, System::LevelDb),
            )?,
            || {
                format!(
                    "db write ({}) left other entries than LevelDB's tool",
                    phase.name
                )
            },
        )?;
    }
    Ok(Row {
        workload: format!(
            "cli: leveltable db write --hex, {}: {} puts, {} (whole process)",
            phase.name,
            count(phase.puts),
            if phase.sync {
                "one synced batch each".to_string()
            } else {
                format!("batches of {}", phase.batch)
            }
        ),
        unit: Unit::Millis,
        figures,
        target: phase.target,
    })
}

/// Whether the databases `a` and `b` hold the same entries.
fn same_view(a: &Path, b: &Path) -> Result<bool> {
    let (a, b) = (
        Db::open(a, DbOptions::default())?,
        Db::open(b, DbOptions::default())?,
    );
    let (mut x, mut y) = (a.iter(), b.iter());
    loop {
        match (x.next().transpose()?, y.next().transpose()?) {
            (None, None) => return Ok(true),
            (Some(p), Some(q)) if p == q => {}
            _ => return Ok(false),
        }
    }
}
