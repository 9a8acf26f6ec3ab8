//! `world`: a full dump of a Minecraft Bedrock-style world written by Mojang's LevelDB
//! (amulet-leveldb, raw deflate blocks of 160 KiB), leveltable's database iterator against
//! amulet-leveldb's own iteration; and each codec's decompression speed on the world's data.
//!
//! The world (about 200 MiB of values, `LEVELTABLE_BENCH_WORLD_MB` to change it, written by `crates/python/tests/bedrock_world.py`
//! through amulet-leveldb) is made once under the bench directory and opened once by
//! amulet-leveldb to settle (its open recovers the log into a table). Each round then times,
//! interleaved, amulet-leveldb iterating every entry from Python (`bedrock_world.py scan`,
//! which times its `items()` loop alone, not the interpreter's start or the open) and
//! leveltable's `Db::iter` (lending each entry, `next_entry`) over the same directory (the open excluded too), both touching
//! every key and value. Figures are key + value bytes per second, best of the rounds.
//!
//! The codec rows compress the world's first 16 MiB of entries, cut into 160 KiB blocks as
//! Mojang's LevelDB cuts them, with each codec, and time `codec::decompress` over all blocks
//! on one core: output MB/s.
//!
//! Needs a Python with amulet-leveldb (`LEVELTABLE_MOJANG_PYTHON`, else `python3`);
//! without one the workload prints one `skipped:` line and gives no rows.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use leveltable_db::{Db, DbOptions};
use leveltable_table::{Compression, codec};

use super::config::{Config, Result};
use crate::report::{Row, System, Target, Unit};

/// Mojang's LevelDB block size, as amulet-leveldb sets it.
const BEDROCK_BLOCK: usize = 163_840;
/// Entry bytes the codec rows compress.
const CODEC_SAMPLE: usize = 16 << 20;
/// The speedup over amulet-leveldb the world dump aims for.
const TARGET_SPEEDUP: f64 = 1.5;
/// MiB of values in the world; `LEVELTABLE_BENCH_WORLD_MB` changes it.
const WORLD_MB: u64 = 200;

fn world_mb() -> u64 {
    std::env::var("LEVELTABLE_BENCH_WORLD_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(WORLD_MB)
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../python/tests/bedrock_world.py")
}

fn python() -> Option<String> {
    let python = std::env::var("LEVELTABLE_MOJANG_PYTHON").unwrap_or_else(|_| "python3".into());
    Command::new(&python)
        .args(["-c", "import leveldb; leveldb.LevelDB"])
        .output()
        .is_ok_and(|o| o.status.success())
        .then_some(python)
}

fn run_script(python: &str, args: &[&str]) -> Result<String> {
    let out = Command::new(python).arg(script()).args(args).output()?;
    if !out.status.success() {
        return Err(format!(
            "bedrock_world.py {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The world's directory, written and settled on first use.
fn world(config: &Config, python: &str) -> Result<PathBuf> {
    let dir = config.dir.join(format!("bedrock-world-{}mb", world_mb()));
    if !dir.join("CURRENT").exists() {
        let _ = std::fs::remove_dir_all(&dir);
        let mb = world_mb().to_string();
        let path = dir.to_str().ok_or("bench directory is not UTF-8")?;
        eprintln!("  writing a {mb} MiB world with amulet-leveldb ...");
        run_script(python, &["write", path, "--megabytes", &mb, "--seed", "1"])?;
        run_script(python, &["scan", path])?;
    }
    Ok(dir)
}

/// amulet-leveldb's `scan` line: entries, bytes and seconds.
fn amulet_scan(python: &str, dir: &Path) -> Result<(u64, u64, f64)> {
    let line = run_script(python, &["scan", dir.to_str().ok_or("not UTF-8")?])?;
    let words: Vec<&str> = line.split_whitespace().collect();
    match words[..] {
        [entries, "entries", bytes, "bytes", secs, "s"] => {
            Ok((entries.parse()?, bytes.parse()?, secs.parse()?))
        }
        _ => Err(format!("unexpected scan output {line:?}").into()),
    }
}

fn our_scan(dir: &Path) -> Result<(u64, u64, f64)> {
    let db = Db::open(dir, DbOptions::default())?;
    let start = Instant::now();
    let (mut entries, mut bytes) = (0u64, 0u64);
    // The lending iterator: each entry borrowed, as a dump writes it out.
    let mut iter = db.iter();
    while let Some(entry) = iter.next_entry() {
        let (k, v) = entry?;
        entries += 1;
        bytes += (k.len() + v.len()) as u64;
    }
    Ok((entries, bytes, start.elapsed().as_secs_f64()))
}

/// The rows: the world dump, then one per codec.
///
/// # Errors
/// A failed write or read, or the two readers disagreeing on the entries.
pub fn rows(config: &Config) -> Result<Vec<Row>> {
    let Some(python) = python() else {
        eprintln!("skipped: world needs a Python with amulet-leveldb (LEVELTABLE_MOJANG_PYTHON)");
        return Ok(Vec::new());
    };
    let dir = world(config, &python)?;
    let (mut ours_best, mut amulet_best) = (f64::INFINITY, f64::INFINITY);
    let mut total = 0;
    for _ in 0..config.rounds.max(1) {
        let (a_entries, a_bytes, a_secs) = amulet_scan(&python, &dir)?;
        let (o_entries, o_bytes, o_secs) = our_scan(&dir)?;
        if (a_entries, a_bytes) != (o_entries, o_bytes) {
            return Err(format!(
                "world dump: amulet-leveldb read {a_entries} entries ({a_bytes} bytes), \
                 leveltable {o_entries} ({o_bytes} bytes)"
            )
            .into());
        }
        total = o_bytes;
        amulet_best = amulet_best.min(a_secs);
        ours_best = ours_best.min(o_secs);
    }
    let mb_per_sec = |secs: f64| total as f64 / 1e6 / secs;
    let mut figures = [None; 4];
    figures[System::Leveltable.index()] = Some(mb_per_sec(ours_best));
    let mut rows = vec![Row {
        workload: format!(
            "world dump, {:.0} MB Bedrock world (raw deflate), speedup over amulet-leveldb \
             at {:.0} MB/s",
            total as f64 / 1e6,
            mb_per_sec(amulet_best)
        ),
        unit: Unit::MbPerSec,
        figures,
        target: Target::SpeedupOver {
            baseline: mb_per_sec(amulet_best),
            at_least: TARGET_SPEEDUP,
        },
    }];
    rows.extend(codec_rows(config, &dir)?);
    Ok(rows)
}

fn codec_rows(config: &Config, dir: &Path) -> Result<Vec<Row>> {
    let db = Db::open(dir, DbOptions::default())?;
    let mut sample = Vec::with_capacity(CODEC_SAMPLE);
    for entry in db.iter() {
        let (k, v) = entry?;
        sample.extend_from_slice(&k);
        sample.extend_from_slice(&v);
        if sample.len() >= CODEC_SAMPLE {
            break;
        }
    }
    let blocks: Vec<&[u8]> = sample.chunks(BEDROCK_BLOCK).collect();
    let mut rows = Vec::new();
    for compression in [
        Compression::Snappy,
        Compression::RawDeflate,
        Compression::Zlib,
        Compression::Zstd,
    ] {
        if !compression.is_available() {
            continue;
        }
        let stored = blocks
            .iter()
            .map(|b| codec::compress(compression, b))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let stored_bytes: usize = stored.iter().map(Vec::len).sum();
        let mut out = Vec::new();
        let mut best = f64::INFINITY;
        for _ in 0..config.rounds.max(1) {
            let start = Instant::now();
            let mut produced = 0;
            for s in &stored {
                codec::decompress(compression, s, &mut out)?;
                produced += out.len();
            }
            best = best.min(start.elapsed().as_secs_f64());
            if produced != sample.len() {
                return Err(format!("{compression:?} decompressed {produced} bytes").into());
            }
        }
        let mut figures = [None; 4];
        figures[System::Leveltable.index()] = Some(sample.len() as f64 / 1e6 / best);
        rows.push(Row {
            workload: format!(
                "decompress {}, 160 KiB world blocks, ratio {:.1}, one core",
                compression.codec_name(),
                sample.len() as f64 / stored_bytes as f64
            ),
            unit: Unit::MbPerSec,
            figures,
            target: Target::None,
        });
    }
    Ok(rows)
}
