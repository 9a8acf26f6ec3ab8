//! `hash`: LevelDB's 32-bit hash over 16-byte and 1 KiB slices of a 1 MiB input.

use leveltable_hash::{BLOOM_SEED, hash};

use super::config::{Config, Result};
use super::harness::{Job, Sample, best_of, check, leveldb_on, timed};
use crate::leveldb;
use crate::report::{Row, System, Target, Unit};
use crate::workload::hash_input;

pub(super) fn rows(config: &Config) -> Result<Vec<Row>> {
    let input = hash_input(1 << 20);
    let mut rows = Vec::new();
    for len in [16usize, 1024] {
        let bytes = (input.len() / len * len * config.hash_repeat) as f64;
        // Hashing the input `hash_repeat` times XORs each pass's result in: an even number
        // of passes cancels out.
        let expected = if config.hash_repeat % 2 == 0 {
            0
        } else {
            input
                .chunks_exact(len)
                .fold(0, |a, s| a ^ hash(s, BLOOM_SEED))
        };
        let mut jobs: Vec<(System, Job<'_>)> = vec![(
            System::Leveltable,
            Box::new(|| {
                let (elapsed, acc) = timed(|| {
                    let mut acc = 0u32;
                    for _ in 0..config.hash_repeat {
                        for s in std::hint::black_box(&input[..]).chunks_exact(len) {
                            acc ^= hash(s, BLOOM_SEED);
                        }
                    }
                    Ok(acc)
                })?;
                check(acc == expected, || format!("hash {len}: {acc:#x}"))?;
                Ok(Sample {
                    elapsed,
                    work: bytes,
                })
            }),
        )];
        if leveldb_on() {
            jobs.push((
                System::LevelDb,
                Box::new(|| {
                    let (elapsed, acc) = timed(|| {
                        let mut acc = 0u32;
                        for _ in 0..config.hash_repeat {
                            acc ^= leveldb::hash_slices(
                                std::hint::black_box(&input),
                                len,
                                BLOOM_SEED,
                            )?;
                        }
                        Ok(acc)
                    })?;
                    check(acc == expected, || {
                        format!("hash {len}: LevelDB {acc:#x}, leveltable {expected:#x}")
                    })?;
                    Ok(Sample {
                        elapsed,
                        work: bytes,
                    })
                }),
            ));
        }
        let figures = best_of(config.rounds, Unit::MbPerSec, &mut jobs)?;
        rows.push(Row {
            workload: format!("hash, {len} B slices of 1 MiB"),
            unit: Unit::MbPerSec,
            figures,
            target: Target::ThroughputAtLeast(1.0),
        });
    }
    Ok(rows)
}
