//! `write`: db_bench's write workloads on a database open for writing, leveltable's
//! `WritableDb` against LevelDB 1.23 (C++, `native/leveldb_write_loops.cc`) and
//! rusty-leveldb 4.
//!
//! 16-byte keys (`%016d`), 100-byte values compressible to about half (db_bench's
//! `RandomGenerator`, [`value_ring`](crate::workload::value_ring)), one write per put, LevelDB
//! 1.23's default options on every system (4 MiB write buffer, 2 MiB files, snappy, no
//! filter, an 8 MiB block cache). Each system runs each scenario in a child process of its
//! own ([`write_child`](super::write_child)) in a fresh directory, so that its peak resident
//! set and its disk writes (`/proc/self/io`) are its own:
//!
//! - `fillseq`: `n` puts in key order;
//! - `random`: `fillrandom` (`n` puts of random keys below `n`), then, once compactions have
//!   settled, `readrandom` (`n` gets), `readseq` (a scan), `overwrite` (`n` more random
//!   puts) and `deleterandom` (`n` random deletes);
//! - `fillsync`: [`sync_writes`] random puts, each synced;
//! - `fill2`: `fillrandom` from two threads, `n / 2` puts each (not rusty-leveldb, whose
//!   database is not `Sync`). Its speedup over one writer must be at least LevelDB's own;
//!   on more than two CPUs also at least [`TWO_WRITERS_OVER_ONE`]. On two, the second
//!   writer competes with the compaction thread for the second core, and neither system
//!   gains from it (LevelDB's own: 0.54–0.85×).
//!
//! Beside each single-put fill and `deleterandom`, a row gives the time each system takes
//! per operation beyond the kernel's floor: one `write(2)` of the operation's log record,
//! measured in the same rounds ([`write_floor`](super::write_floor)). Every system must
//! make that call before the put returns; the target is on the rest.
//!
//! The systems take turns going first: from one scenario to the next, and the turns flip
//! each round ([`in_turn`]), so that no system always runs right after another, whose
//! written files the kernel may still hold.
//!
//! Figures are operations per second, the best round; disk bytes and peak memory the
//! highest round. Every count (keys found, entries scanned after each fill and after the
//! deletes) must agree between the systems.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use super::config::{Config, Result, count};
use super::harness::{check, leveldb_on};
use super::write_child::{CHILD_COMMAND, sync_writes};
use super::write_floor::{FLOOR_SCENARIO, FLOOR_SYSTEM, delete_record, put_record};
use crate::report::{Row, System, Target, Unit, render_markdown};

/// The systems, by their child-process names.
const SYSTEMS: [(System, &str); 3] = [
    (System::Leveltable, "leveltable"),
    (System::LevelDb, "leveldb"),
    (System::RustyLeveldb, "rusty-leveldb"),
];

const SCENARIOS: [&str; 4] = ["fillseq", "random", "fillsync", "fill2"];

/// The systems in the order they run scenario `scenario` of round `round`: leveltable and
/// LevelDB change places from one scenario to the next and from one round to the next.
fn in_turn(round: usize, scenario: usize) -> [(System, &'static str); 3] {
    let mut systems = SYSTEMS;
    if (round + scenario) % 2 == 1 {
        systems.swap(0, 1);
    }
    systems
}

/// Two writers' speedup over one, on more than two CPUs.
const TWO_WRITERS_OVER_ONE: f64 = 1.3;

/// Whether the machine has more than two CPUs: a compaction thread and two writers each
/// have one.
fn many_cores() -> bool {
    std::thread::available_parallelism().is_ok_and(|n| n.get() > 2)
}

/// One line a child printed: its fields by name.
type Fields = HashMap<String, u64>;

/// Parses a child's output into its lines by phase.
fn parse(stdout: &str) -> HashMap<String, Fields> {
    let mut out = HashMap::new();
    for line in stdout.lines() {
        let mut phase = None;
        let mut fields = Fields::new();
        for field in line.split_whitespace() {
            let Some((name, value)) = field.split_once('=') else {
                continue;
            };
            if name == "phase" {
                phase = Some(value.to_string());
            } else if let Ok(v) = value.parse() {
                fields.insert(name.to_string(), v);
            }
        }
        if let Some(p) = phase {
            out.insert(p, fields);
        }
    }
    out
}

/// Runs one system's scenario in a child process in a fresh directory.
fn run_child(
    exe: &Path,
    config: &Config,
    system: &str,
    scenario: &str,
) -> Result<HashMap<String, Fields>> {
    let dir = config.dir.join(format!("write-{system}"));
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    let output = Command::new(exe)
        .arg(CHILD_COMMAND)
        .arg(system)
        .arg(scenario)
        .arg(&dir)
        .arg(config.entries.to_string())
        .output()?;
    let _ = std::fs::remove_dir_all(&dir);
    check(output.status.success(), || {
        format!(
            "the {system} {scenario} child failed: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    })?;
    Ok(parse(&String::from_utf8_lossy(&output.stdout)))
}

/// Best and worst figures per (phase, system), and the counts every system must share.
#[derive(Default)]
struct Tally {
    ops: HashMap<(String, usize), f64>,
    io: HashMap<(String, usize), Fields>,
    counts: HashMap<String, (u64, &'static str)>,
}

impl Tally {
    fn add(
        &mut self,
        system: System,
        name: &'static str,
        phases: &HashMap<String, Fields>,
    ) -> Result<()> {
        for (phase, fields) in phases {
            let get = |f: &str| {
                fields
                    .get(f)
                    .copied()
                    .ok_or_else(|| format!("{name} {phase}: no {f}"))
            };
            if phase.ends_with("-io") {
                let slot = self.io.entry((phase.clone(), system.index())).or_default();
                for (k, v) in fields {
                    let e = slot.entry(k.clone()).or_insert(0);
                    *e = (*e).max(*v);
                }
                continue;
            }
            let c = get("count")?;
            match self.counts.get(phase) {
                Some(&(expected, first)) => check(c == expected, || {
                    format!("{phase}: {name} counted {c}, {first} {expected}")
                })?,
                None => {
                    self.counts.insert(phase.clone(), (c, name));
                }
            }
            let (ops, nanos) = (get("ops")?, get("nanos")?);
            if nanos > 0 {
                let v = ops as f64 * 1e9 / nanos as f64;
                let slot = self.ops.entry((phase.clone(), system.index())).or_insert(v);
                *slot = slot.max(v);
            }
        }
        Ok(())
    }

    fn ops_figures(&self, phase: &str) -> [Option<f64>; 4] {
        let mut f = [None; 4];
        for (i, slot) in f.iter_mut().enumerate() {
            *slot = self.ops.get(&(phase.to_string(), i)).copied();
        }
        f
    }

    fn io(&self, phase: &str, system: System) -> Option<&Fields> {
        self.io.get(&(format!("{phase}-io"), system.index()))
    }
}

/// The time beyond the kernel's floor at most this fraction of LevelDB's: 1.5× faster.
const BEYOND_FLOOR: f64 = 1.0 / 1.5;

/// The kernel's floor under single writes ([`write_floor`](super::write_floor)), in
/// nanoseconds per operation, the lowest of the rounds.
#[derive(Default)]
struct Floors {
    put: Option<f64>,
    delete: Option<f64>,
}

impl Floors {
    fn add(&mut self, phases: &HashMap<String, Fields>) -> Result<()> {
        for (name, slot) in [
            ("floor-put", &mut self.put),
            ("floor-delete", &mut self.delete),
        ] {
            let fields = phases
                .get(name)
                .ok_or_else(|| format!("the floor's child printed no {name}"))?;
            let (Some(&ops), Some(&nanos)) = (fields.get("ops"), fields.get("nanos")) else {
                return Err(format!("{name}: no ops or nanos").into());
            };
            check(ops > 0, || format!("{name}: no operations"))?;
            let v = nanos as f64 / ops as f64;
            *slot = Some(slot.map_or(v, |s: f64| s.min(v)));
        }
        Ok(())
    }
}

/// Operations per second as nanoseconds per operation beyond `floor`, at least 1 ns so that
/// a system at the floor reads as far faster rather than as no figure; LevelDB's and
/// leveltable's only: the peers are held to their ratio in the rows of
/// operations per second.
fn beyond_floor(ops: [Option<f64>; 4], floor: f64) -> [Option<f64>; 4] {
    let mut out = [None; 4];
    for system in [System::Leveltable, System::LevelDb] {
        let i = system.index();
        out[i] = ops[i]
            .filter(|&o| o > 0.0)
            .map(|o| (1e9 / o - floor).max(1.0));
    }
    out
}

/// Which `/proc/self/io` counter measures disk writes here: `write_bytes` (bytes sent to the
/// storage layer), or `wchar` (bytes passed to write calls) where `write_bytes` stays 0.
fn disk_counter(tally: &Tally) -> &'static str {
    let any_write_bytes = tally
        .io
        .values()
        .any(|f| f.get("write_bytes").is_some_and(|&b| b > 0));
    if any_write_bytes {
        "write_bytes"
    } else {
        "wchar"
    }
}

/// The `write` rows and a section with each system's disk writes and peak memory. `exe` is
/// the runner binary, started as the child.
///
/// # Errors
///
/// From a child, or systems disagreeing on a count.
pub(super) fn rows(config: &Config, exe: &Path) -> Result<(Vec<Row>, String)> {
    let n = config.entries;
    let mut tally = Tally::default();
    let mut floors = Floors::default();
    for round in 0..config.rounds.max(1) {
        for (turn, scenario) in SCENARIOS.into_iter().enumerate() {
            for (system, name) in in_turn(round, turn) {
                if (system == System::LevelDb && !leveldb_on())
                    || (system == System::RustyLeveldb && scenario == "fill2")
                {
                    continue;
                }
                eprintln!("  write {scenario}: {name}");
                let phases = run_child(exe, config, name, scenario)?;
                tally.add(system, name, &phases)?;
            }
        }
        eprintln!("  write {FLOOR_SCENARIO}: {FLOOR_SYSTEM}");
        floors.add(&run_child(exe, config, FLOOR_SYSTEM, FLOOR_SCENARIO)?)?;
    }
    let seen = |phase: &str| tally.counts.get(phase).map_or(0, |c| c.0);
    check(seen("fillseq-count") == n, || {
        format!("fillseq left {} entries, not {n}", seen("fillseq-count"))
    })?;

    // rusty-leveldb's `sync` writes its log buffer to the OS without syncing it: its
    // figure is named in the row, not compared.
    let rusty_sync = tally
        .ops
        .remove(&("fillsync".to_string(), System::RustyLeveldb.index()));
    let entries = format!("{} ops, 16 B keys, 100 B values", count(n));
    let mut rows = Vec::new();
    let mut row = |phase: &str, what: String, target: Target| {
        rows.push(Row {
            workload: format!("write {phase}: {what}"),
            unit: Unit::OpsPerSec,
            figures: tally.ops_figures(phase),
            target,
        });
    };
    row("fillseq", entries.clone(), Target::ThroughputAtLeast(1.5));
    row(
        "fillrandom",
        entries.clone(),
        Target::ThroughputAtLeast(1.5),
    );
    row(
        "overwrite",
        format!("{entries}, over fillrandom's"),
        Target::ThroughputAtLeast(1.5),
    );
    row(
        "fillsync",
        format!(
            "{} puts each synced{}",
            count(sync_writes(n)),
            rusty_sync.map_or(String::new(), |v| format!(
                " (rusty-leveldb, whose sync does not reach the disk: {v:.0} ops/s, not compared)"
            ))
        ),
        Target::ThroughputAtLeast(1.0),
    );
    row(
        "readrandom",
        format!(
            "{} gets after fillrandom ({} found)",
            count(n),
            count(seen("readrandom"))
        ),
        Target::ThroughputAtLeast(1.5),
    );
    row(
        "readseq",
        format!("scan of fillrandom's {} entries", count(seen("readseq"))),
        Target::ThroughputAtLeast(1.5),
    );
    row(
        "deleterandom",
        format!("{} deletes after overwrite", count(n)),
        Target::ThroughputAtLeast(1.5),
    );
    let (put, delete) = (put_record(), delete_record());
    for (phase, floor, record) in [
        ("fillseq", floors.put, put),
        ("fillrandom", floors.put, put),
        ("overwrite", floors.put, put),
        ("deleterandom", floors.delete, delete),
    ] {
        if let Some(floor) = floor {
            rows.push(Row {
                workload: format!(
                    "write {phase}: time an operation takes beyond the kernel's floor (one \
                     {record}-byte write(2), {floor:.0} ns, same run)"
                ),
                unit: Unit::NsPerOp,
                figures: beyond_floor(tally.ops_figures(phase), floor),
                target: Target::TimeAtMost(BEYOND_FLOOR),
            });
        }
    }
    let one = tally.ops_figures("fillrandom");
    let mut two = tally.ops_figures("fill2");
    two[System::RustyLeveldb.index()] = None;
    if let Some(baseline) = one[System::Leveltable.index()] {
        rows.push(Row {
            workload: format!(
                "write fillrandom, 2 writer threads ({} ops in all) over 1 writer",
                count(2 * (n / 2))
            ),
            unit: Unit::OpsPerSec,
            figures: two,
            target: if many_cores() {
                Target::SpeedupOver {
                    baseline,
                    at_least: TWO_WRITERS_OVER_ONE,
                }
            } else {
                Target::None
            },
        });
    }
    let mut speedups = [None; 4];
    for system in [System::Leveltable, System::LevelDb] {
        let i = system.index();
        if let (Some(a), Some(b)) = (two[i], one[i]) {
            speedups[i] = Some(a / b);
        }
    }
    rows.push(Row {
        workload: "write fillrandom, speedup of 2 writer threads over 1 (each system its own)"
            .into(),
        unit: Unit::Times,
        figures: speedups,
        target: Target::ThroughputAtLeast(1.0),
    });

    let counter = disk_counter(&tally);
    let mut section_rows = Vec::new();
    for phase in ["fillseq", "fillrandom"] {
        let mut amp = [None; 4];
        let mut peak = [None; 4];
        for (system, name) in SYSTEMS {
            let Some(io) = tally.io(phase, system) else {
                continue;
            };
            let put = io.get("put_bytes").copied().unwrap_or(0).max(1) as f64;
            let disk = io.get(counter).copied().unwrap_or(0) as f64;
            let peak_mib = io.get("peak_kib").copied().unwrap_or(0) as f64 / 1024.0;
            section_rows.push(vec![
                phase.to_string(),
                name.to_string(),
                format!("{:.1}", put / 1e6),
                format!(
                    "{:.1}",
                    io.get("write_bytes").copied().unwrap_or(0) as f64 / 1e6
                ),
                format!("{:.1}", io.get("wchar").copied().unwrap_or(0) as f64 / 1e6),
                format!("{:.2}", disk / put),
                format!("{peak_mib:.1}"),
            ]);
            if system != System::RustyLeveldb {
                amp[system.index()] = Some(disk / put);
                peak[system.index()] = Some(peak_mib);
            }
        }
        rows.push(Row {
            workload: format!(
                "write {phase}: disk bytes per byte put ({counter}, through settled compactions, highest round)"
            ),
            unit: Unit::BytesPerByte,
            figures: amp,
            target: Target::TimeAtMost(1.0),
        });
        rows.push(Row {
            workload: format!("write {phase}: peak RSS of the process (VmHWM, highest round)"),
            unit: Unit::MiB,
            figures: peak,
            target: Target::TimeAtMost(1.2),
        });
    }
    let mut section = String::new();
    let _ = writeln!(
        section,
        "Write path, per child process: bytes put, disk writes from /proc/self/io (from the open \
         until compactions settled; the ratio uses {counter}), peak resident set:\n"
    );
    section.push_str(&render_markdown(
        &[
            "fill",
            "system",
            "put MB",
            "write_bytes MB",
            "wchar MB",
            "disk B per B put",
            "peak RSS MiB",
        ],
        &section_rows,
    ));
    Ok((rows, section))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_system_goes_first_in_turn() {
        let first = |round, scenario| in_turn(round, scenario)[0].0;
        for round in 0..2 {
            for scenario in 0..SCENARIOS.len() {
                let order = in_turn(round, scenario);
                let mut names: Vec<_> = order.iter().map(|(_, name)| *name).collect();
                names.sort_unstable();
                assert_eq!(names, ["leveldb", "leveltable", "rusty-leveldb"]);
                assert_ne!(first(round, scenario), first(round + 1, scenario));
            }
        }
        // One round still lets each go first in one of the two single-writer fill scenarios.
        assert_eq!(first(0, 0), System::Leveltable);
        assert_eq!(first(0, 1), System::LevelDb);
    }

    #[test]
    fn child_lines_parse_by_phase() {
        let p =
            parse("phase=fillseq ops=10 nanos=20 count=10\nnoise\nphase=fillseq-io put_bytes=5\n");
        assert_eq!(p["fillseq"]["ops"], 10);
        assert_eq!(p["fillseq-io"]["put_bytes"], 5);
        assert_eq!(p.len(), 2);
    }

    #[test]
    fn counts_must_agree() {
        let mut tally = Tally::default();
        let a = parse("phase=readseq ops=10 nanos=20 count=10");
        let b = parse("phase=readseq ops=10 nanos=20 count=9");
        tally.add(System::Leveltable, "leveltable", &a).unwrap();
        assert!(tally.add(System::LevelDb, "leveldb", &b).is_err());
        assert_eq!(tally.ops_figures("readseq")[0], Some(5e8));
    }

    #[test]
    fn floors_keep_the_lowest_round() {
        let mut floors = Floors::default();
        let round = |put: u64| {
            parse(&format!(
                "phase=floor-put ops=10 nanos={put} count=10\n\
                 phase=floor-delete ops=10 nanos=5000 count=10"
            ))
        };
        floors.add(&round(20_000)).unwrap();
        floors.add(&round(15_000)).unwrap();
        floors.add(&round(18_000)).unwrap();
        assert_eq!((floors.put, floors.delete), (Some(1500.0), Some(500.0)));
        assert!(
            floors
                .add(&parse("phase=floor-put ops=1 nanos=1 count=1"))
                .is_err()
        );
    }

    #[test]
    fn time_beyond_the_floor() {
        let ops = [Some(500_000.0), Some(400_000.0), Some(1e9), Some(100.0)];
        let beyond = beyond_floor(ops, 1_500.0);
        assert_eq!(beyond[System::Leveltable.index()], Some(500.0));
        assert_eq!(beyond[System::LevelDb.index()], Some(1_000.0));
        assert_eq!(beyond[2], None);
        assert_eq!(beyond[3], None);
        let at_floor = beyond_floor([Some(1e9 / 1_400.0), None, None, None], 1_500.0);
        assert_eq!(at_floor[0], Some(1.0));
    }
}
