//! `leveltable-bench`: runs the comparison workloads and prints the side-by-side table.
//!
//! ```text
//! cargo run --release -p leveltable-bench -- all
//! cargo run --release -p leveltable-bench -- hash bloom get
//! cargo run --release -p leveltable-bench -- --smoke all     # tiny sizes, one round
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use leveltable_bench::report::{System, Target, render_table};
use leveltable_bench::runner::cli_child;
use leveltable_bench::runner::db_build::{self, SORT_COMMAND};
use leveltable_bench::runner::memory::{self, CHILD_COMMAND};
use leveltable_bench::runner::write_child;
use leveltable_bench::runner::{self, Config, WORKLOADS};

const USAGE: &str = "usage: leveltable-bench [--smoke] [--rounds N] [--entries N] [--queries N] [--large-entries N] [--db-entries N] [--db-build-bytes N] [--sort-budget N] [--follow-bytes N] [--dir DIR] WORKLOAD...
workloads: all, hash, bloom, filter-block, build, get, get-many-large, scan, checksum, filters, memory, db, db-build, repair, threads, cli, world, object-store, write, follow
--entries N also sets the write workload's puts, gets and deletes per phase (default 1,000,000)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(CHILD_COMMAND) {
        let [_, system, path, bytes] = &args[..] else {
            eprintln!("usage: leveltable-bench {CHILD_COMMAND} SYSTEM PATH INPUT_BYTES");
            return ExitCode::from(2);
        };
        let Ok(bytes) = bytes.parse() else {
            eprintln!("bad byte count {bytes:?}");
            return ExitCode::from(2);
        };
        return match memory::child(system, path.as_ref(), bytes) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{e}");
                ExitCode::FAILURE
            }
        };
    }
    if args.first().map(String::as_str) == Some(SORT_COMMAND) {
        let [_, dir, bytes, budget] = &args[..] else {
            eprintln!("usage: leveltable-bench {SORT_COMMAND} DIR INPUT_BYTES BUDGET_BYTES");
            return ExitCode::from(2);
        };
        let (Ok(bytes), Ok(budget)) = (bytes.parse(), budget.parse()) else {
            eprintln!("bad byte counts {bytes:?} {budget:?}");
            return ExitCode::from(2);
        };
        return match db_build::sort_child(dir.as_ref(), bytes, budget) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{e}");
                ExitCode::FAILURE
            }
        };
    }
    if args.first().map(String::as_str) == Some(write_child::CHILD_COMMAND) {
        let [_, system, scenario, dir, entries] = &args[..] else {
            eprintln!(
                "usage: leveltable-bench {} SYSTEM SCENARIO DIR ENTRIES",
                write_child::CHILD_COMMAND
            );
            return ExitCode::from(2);
        };
        let Ok(entries) = entries.parse() else {
            eprintln!("bad entry count {entries:?}");
            return ExitCode::from(2);
        };
        return match write_child::child(system, scenario, dir.as_ref(), entries) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{e}");
                ExitCode::FAILURE
            }
        };
    }
    if args.first().map(String::as_str) == Some(cli_child::CHILD_COMMAND) {
        return match cli_child::child(&args[1..]) {
            Ok(code) => ExitCode::from(code),
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        };
    }
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("leveltable-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> runner::Result<()> {
    let mut smoke = false;
    let mut rounds = None;
    let mut entries = None;
    let mut queries = None;
    let mut large_entries = None;
    let mut db_entries = None;
    let mut db_build_bytes = None;
    let mut sort_budget = None;
    let mut follow_bytes = None;
    let mut dir: Option<PathBuf> = None;
    let mut names: Vec<&str> = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--smoke" => smoke = true,
            "--rounds" => rounds = Some(it.next().ok_or(USAGE)?.parse()?),
            "--entries" => entries = Some(it.next().ok_or(USAGE)?.parse()?),
            "--queries" => queries = Some(it.next().ok_or(USAGE)?.parse()?),
            "--large-entries" => large_entries = Some(it.next().ok_or(USAGE)?.parse()?),
            "--db-entries" => db_entries = Some(it.next().ok_or(USAGE)?.parse()?),
            "--db-build-bytes" => db_build_bytes = Some(it.next().ok_or(USAGE)?.parse()?),
            "--sort-budget" => sort_budget = Some(it.next().ok_or(USAGE)?.parse()?),
            "--follow-bytes" => follow_bytes = Some(it.next().ok_or(USAGE)?.parse()?),
            "--dir" => dir = Some(it.next().ok_or(USAGE)?.into()),
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            "all" => names.extend(WORKLOADS),
            name if WORKLOADS.contains(&name) => names.push(name),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}").into()),
        }
    }
    if names.is_empty() {
        return Err(USAGE.into());
    }
    let temp = match &dir {
        Some(d) => tempfile::tempdir_in(d)?,
        None => tempfile::tempdir()?,
    };
    let mut config = if smoke {
        Config::smoke(temp.path().to_path_buf())
    } else {
        Config::standard(temp.path().to_path_buf())
    };
    if let Some(r) = rounds {
        config.rounds = r;
    }
    if let Some(n) = entries {
        config.entries = n;
    }
    if let Some(q) = queries {
        config.queries = q;
    }
    if let Some(n) = large_entries {
        config.large_entries = n;
    }
    if let Some(n) = db_entries {
        config.db_entries = n;
    }
    if let Some(b) = db_build_bytes {
        config.db_build_bytes = b;
    }
    if let Some(b) = sort_budget {
        config.sort_budget = b;
    }
    if let Some(b) = follow_bytes {
        config.follow_bytes = b;
    }
    let exe = std::env::current_exe()?;
    let results = runner::run(&config, &names, Some(&exe))?;

    println!("{}", header(&config));
    if !results.rows.is_empty() {
        println!("{}", render_table(&results.rows));
        if !results.checksum_costs.is_empty() {
            println!(
                "Checksums: checked over unchecked time, both measured in the same rounds (target for leveltable: ≤ {:.2}×):\n",
                runner::CHECKSUM_COST_TARGET
            );
            for c in &results.checksum_costs {
                println!(
                    "- {}: {} {:.2}× ({:.0} → {:.0} {})",
                    c.workload,
                    c.system.name(),
                    c.ratio,
                    c.unchecked,
                    c.checked,
                    if c.workload.starts_with("scan") {
                        "MB/s"
                    } else {
                        "ns/op"
                    },
                );
            }
            println!();
        }
        println!("{}", summary(&results));
    }
    for section in &results.sections {
        println!("{section}");
    }
    Ok(())
}

fn header(config: &Config) -> String {
    let date = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines().find_map(|l| {
                Some(
                    l.strip_prefix("model name")?
                        .split_once(':')?
                        .1
                        .trim()
                        .to_string(),
                )
            })
        })
        .unwrap_or_else(|| "unknown CPU".into());
    // Family and model tell the microarchitecture apart where the name does not (AMD EPYC
    // family 25 is Zen 3, 26 Zen 5; Intel family 6 model 85 Skylake-SP/Cascade Lake).
    let field = |name: &str| {
        std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|c| {
            c.lines().find_map(|l| {
                let (key, value) = l.split_once(':')?;
                (key.trim() == name).then(|| value.trim().to_string())
            })
        })
    };
    let model = match (field("cpu family"), field("model")) {
        (Some(family), Some(number)) => format!("{model} (family {family}, model {number})"),
        _ => model,
    };
    format!(
        "leveltable-bench, {date}; {cpus} CPUs, {model}; LevelDB loops {}; best of {} rounds, systems interleaved in each round.\n",
        if leveltable_bench::leveldb::available() {
            "linked"
        } else {
            "NOT linked"
        },
        config.rounds
    )
}

fn summary(results: &runner::Results) -> String {
    let mut met = 0;
    let mut missed = Vec::new();
    for c in &results.checksum_costs {
        if c.system != System::Leveltable {
            continue;
        }
        if c.ratio <= runner::CHECKSUM_COST_TARGET {
            met += 1;
        } else {
            missed.push(format!(
                "{} with checksums ({:.2}× the unchecked time, target ≤ {:.2}×)",
                c.workload,
                c.ratio,
                runner::CHECKSUM_COST_TARGET
            ));
        }
    }
    for row in &results.rows {
        match row.target_met() {
            Some(true) => met += 1,
            Some(false) => missed.push(format!(
                "{} ({}, target {})",
                row.workload,
                match row.target {
                    Target::AtMost(_) => format!(
                        "{:.1} {}",
                        row.target_ratio().unwrap_or(f64::NAN),
                        row.unit.label()
                    ),
                    _ => format!("{:.2}×", row.target_ratio().unwrap_or(f64::NAN)),
                },
                row.target.describe()
            )),
            None => {}
        }
        for (peer, speedup) in row.peer_speedups() {
            if speedup < leveltable_bench::report::PEER_SPEEDUP {
                missed.push(format!(
                    "{} vs {} ({speedup:.2}×, target ≥ 2×)",
                    row.workload,
                    peer.name()
                ));
            }
        }
    }
    let mut out = format!("Targets met: {met}; missed: {}\n", missed.len());
    for m in missed {
        out.push_str(&format!("- missed: {m}\n"));
    }
    out
}
