//! What flushes and compactions have cost since the open, per output level (LevelDB's
//! `DBImpl::CompactionStats`), and the `leveldb.stats` table that reports it.

use std::fmt::Write as _;
use std::time::Instant;

use crate::version_edit::NUM_LEVELS;

/// Bytes in a MiB, for the sizes of `leveldb.stats`.
const MIB: f64 = 1_048_576.0;

/// The work of the flushes and compactions whose outputs went to one level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CompactionStats {
    /// Time spent, less the memtable flushes a compaction stopped for (they count at the
    /// level of their own table).
    pub(crate) micros: u64,
    /// Bytes of the input tables (a flush reads none).
    pub(crate) bytes_read: u64,
    /// Bytes of the tables written.
    pub(crate) bytes_written: u64,
}

impl CompactionStats {
    /// The work of one flush or compaction that began at `start`, less `paused`
    /// microseconds spent on other work.
    pub(crate) fn since(start: Instant, paused: u64, bytes_read: u64, bytes_written: u64) -> Self {
        CompactionStats {
            micros: micros_since(start).saturating_sub(paused),
            bytes_read,
            bytes_written,
        }
    }

    pub(crate) fn add(&mut self, other: CompactionStats) {
        self.micros = self.micros.saturating_add(other.micros);
        self.bytes_read = self.bytes_read.saturating_add(other.bytes_read);
        self.bytes_written = self.bytes_written.saturating_add(other.bytes_written);
    }
}

/// Microseconds since `start`.
pub(crate) fn micros_since(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// `leveldb.stats` in LevelDB's format, byte for byte: per level that holds files or was written to
/// since the open, its file count, their size, and the time, bytes read and bytes written
/// of the work that wrote to it, in MiB and seconds rounded to whole numbers.
/// `levels[l]` is `(files, bytes)` of level `l`.
pub(crate) fn stats_table(
    levels: &[(usize, u64); NUM_LEVELS],
    stats: &[CompactionStats; NUM_LEVELS],
) -> String {
    let mut out = String::from(
        "                               Compactions\n\
         Level  Files Size(MB) Time(sec) Read(MB) Write(MB)\n\
         --------------------------------------------------\n",
    );
    for (level, (&(files, bytes), s)) in levels.iter().zip(stats).enumerate() {
        if s.micros == 0 && files == 0 {
            continue;
        }
        // Writing to a String cannot fail.
        let _ = writeln!(
            out,
            "{level:>3} {files:>8} {:>8.0} {:>9.0} {:>8.0} {:>9.0}",
            bytes as f64 / MIB,
            s.micros as f64 / 1e6,
            s.bytes_read as f64 / MIB,
            s.bytes_written as f64 / MIB,
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_leveldbs() {
        let mut levels = [(0usize, 0u64); NUM_LEVELS];
        let mut stats = [CompactionStats::default(); NUM_LEVELS];
        levels[0] = (1, 1_887_573);
        stats[0] = CompactionStats {
            micros: 1_400_000,
            bytes_read: 0,
            bytes_written: 15 * 1_048_576 + 600_000,
        };
        levels[1] = (5, 9 * 1_048_576);
        stats[1] = CompactionStats {
            micros: 3_600_000,
            bytes_read: 54 * 1_048_576,
            bytes_written: 48 * 1_048_576,
        };
        // Written to once, its files since moved on: still listed.
        stats[2].micros = 1;
        assert_eq!(
            stats_table(&levels, &stats),
            "                               Compactions\n\
             Level  Files Size(MB) Time(sec) Read(MB) Write(MB)\n\
             --------------------------------------------------\n  \
               0        1        2         1        0        16\n  \
               1        5        9         4       54        48\n  \
               2        0        0         0        0         0\n"
        );
    }

    #[test]
    fn a_compaction_paused_for_a_flush_counts_the_rest() {
        let start = Instant::now() - std::time::Duration::from_millis(50);
        let s = CompactionStats::since(start, 20_000, 7, 9);
        assert!((30_000..1_000_000).contains(&s.micros), "{s:?}");
        assert_eq!((s.bytes_read, s.bytes_written), (7, 9));
        assert_eq!(
            CompactionStats::since(Instant::now(), u64::MAX, 0, 0).micros,
            0
        );
    }
}
