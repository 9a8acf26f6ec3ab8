//! Random histories of writes, reproducible from a seed: for differential tests and for the
//! writer child process that tests kill at random points.

use std::path::Path;

use super::{BatchOp, Db, DbOptions};
use crate::Result;
use crate::table::Compression;

/// A small deterministic generator (SplitMix64) for reproducible random histories.
#[derive(Debug, Clone)]
pub struct SplitMix(pub u64);

impl SplitMix {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// True with probability `1 / n`.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }
}

/// A key of a random history: mostly `kNNNN` over `keys` keys, sometimes the empty key or
/// bytes 0x00 and 0xff, so the order's edges are exercised.
pub fn history_key(rng: &mut SplitMix, keys: u64) -> Vec<u8> {
    match rng.below(40) {
        0 => Vec::new(),
        1 => vec![0xff, 0x00, rng.below(4) as u8],
        2 => vec![0x00; 1 + rng.below(3) as usize],
        _ => format!("k{:05}", rng.below(keys)).into_bytes(),
    }
}

/// A value of a random history: 0 to `max` bytes, made from the generator.
pub fn history_value(rng: &mut SplitMix, max: u64) -> Vec<u8> {
    let len = rng.below(max + 1) as usize;
    let seed = rng.next_u64();
    (0..len)
        .map(|i| (seed >> (i % 8 * 8)) as u8 ^ i as u8)
        .collect()
}

/// Writes a random history of puts, deletes and batches to the database at `path` (made
/// if missing), printing the number of operations written after each write to stdout, for
/// a parent process to kill it at a random point. Runs `writes` writes, then returns.
///
/// # Errors
///
/// LevelDB's status.
pub fn random_writer(path: &Path, seed: u64, writes: u64) -> Result<()> {
    use std::io::Write as _;
    let mut rng = SplitMix(seed);
    let options = DbOptions {
        write_buffer_size: 64 << 10,
        max_file_size: 1 << 20,
        block_size: 1024,
        bloom_bits_per_key: if rng.one_in(2) { 10 } else { 0 },
        compression: if rng.one_in(2) {
            Compression::None
        } else {
            Compression::Snappy
        },
        ..DbOptions::default()
    };
    let db = Db::open(path, &options)?;
    let keys = 50 + rng.below(2000);
    let mut ops = 0u64;
    let stdout = std::io::stdout();
    for _ in 0..writes {
        match rng.below(10) {
            0..=5 => {
                let (k, v) = (history_key(&mut rng, keys), history_value(&mut rng, 3000));
                db.put(&k, &v)?;
                ops += 1;
            }
            6 | 7 => {
                db.delete(&history_key(&mut rng, keys))?;
                ops += 1;
            }
            _ => {
                let n = 1 + rng.below(20);
                let mut owned = Vec::new();
                for _ in 0..n {
                    let k = history_key(&mut rng, keys);
                    let v = rng.one_in(3).then(|| history_value(&mut rng, 500));
                    owned.push((k, v));
                }
                let batch: Vec<BatchOp<'_>> = owned
                    .iter()
                    .map(|(k, v)| match v {
                        Some(v) => BatchOp::Put(k, v),
                        None => BatchOp::Delete(k),
                    })
                    .collect();
                db.write(&batch)?;
                ops += n;
            }
        }
        let mut out = stdout.lock();
        // The parent may have stopped reading; the write's failure is of no interest.
        let _ = writeln!(out, "{ops}");
        let _ = out.flush();
    }
    Ok(())
}
