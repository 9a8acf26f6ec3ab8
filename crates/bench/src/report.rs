//! Figures, targets and the printed tables of the comparison runner.

use std::fmt::Write as _;
use std::time::Duration;

/// The systems the runner compares, in column order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum System {
    /// This workspace's crates.
    Leveltable,
    /// LevelDB 1.23 (C++), through the runner's native loops.
    LevelDb,
    /// The `sstable` crate, 0.11.
    Sstable,
    /// The `rusty-leveldb` crate, 4.x.
    RustyLeveldb,
}

impl System {
    /// Every system, in column order.
    pub const ALL: [System; 4] = [
        System::Leveltable,
        System::LevelDb,
        System::Sstable,
        System::RustyLeveldb,
    ];

    /// Column heading.
    pub fn name(self) -> &'static str {
        match self {
            System::Leveltable => "leveltable",
            System::LevelDb => "LevelDB 1.23",
            System::Sstable => "sstable 0.11",
            System::RustyLeveldb => "rusty-leveldb 4",
        }
    }

    /// Position in [`System::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// What a figure measures, and so which direction is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Nanoseconds per operation: lower is better.
    NsPerOp,
    /// Megabytes (10^6 bytes) per second: higher is better.
    MbPerSec,
    /// Milliseconds per operation: lower is better.
    Millis,
    /// Mebibytes of memory (the work figure is the amount itself): lower is better.
    MiB,
    /// How many times faster one configuration runs than another (the work figure is the
    /// factor itself): higher is better.
    Times,
    /// Operations per second: higher is better.
    OpsPerSec,
    /// Bytes written to disk per byte of input (the work figure is the ratio itself): lower
    /// is better.
    BytesPerByte,
}

impl Unit {
    /// Short label.
    pub fn label(self) -> &'static str {
        match self {
            Unit::NsPerOp => "ns/op",
            Unit::MbPerSec => "MB/s",
            Unit::Millis => "ms",
            Unit::MiB => "MiB",
            Unit::Times => "×",
            Unit::OpsPerSec => "ops/s",
            Unit::BytesPerByte => "B/B",
        }
    }

    /// The figure for `work` units (operations or bytes) done in `elapsed`.
    pub fn figure(self, elapsed: Duration, work: f64) -> f64 {
        let nanos = elapsed.as_secs_f64() * 1e9;
        match self {
            Unit::NsPerOp => nanos / work,
            Unit::MbPerSec => work * 1e3 / nanos,
            Unit::Millis => nanos / 1e6 / work,
            Unit::OpsPerSec => work * 1e9 / nanos,
            Unit::MiB | Unit::Times | Unit::BytesPerByte => work,
        }
    }

    /// Whether figure `a` beats figure `b`.
    pub fn better(self, a: f64, b: f64) -> bool {
        match self {
            Unit::NsPerOp | Unit::Millis | Unit::MiB | Unit::BytesPerByte => a < b,
            Unit::MbPerSec | Unit::Times | Unit::OpsPerSec => a > b,
        }
    }

    /// How many times faster `a` is than `b` (above 1 when `a` is better).
    pub fn speedup(self, a: f64, b: f64) -> f64 {
        match self {
            Unit::NsPerOp | Unit::Millis | Unit::MiB | Unit::BytesPerByte => b / a,
            Unit::MbPerSec | Unit::Times | Unit::OpsPerSec => a / b,
        }
    }
}

/// A goal for leveltable's figure relative to LevelDB's in the same run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// No goal against LevelDB (peers are still held to 2×).
    None,
    /// leveltable's figure (a time, or memory or bytes written) at most this fraction of
    /// LevelDB's.
    TimeAtMost(f64),
    /// leveltable's throughput at least this multiple of LevelDB's.
    ThroughputAtLeast(f64),
    /// leveltable at least `at_least` times faster than `baseline`, its own figure in
    /// another configuration measured in the same rounds (e.g. one thread against two).
    SpeedupOver {
        /// The figure compared with.
        baseline: f64,
        /// The speedup required.
        at_least: f64,
    },
    /// leveltable's figure itself at most this (e.g. a peak resident set in MiB).
    AtMost(f64),
}

impl Target {
    /// Text for the table, e.g. `≤ 0.50×`.
    pub fn describe(self) -> String {
        match self {
            Target::None => "—".into(),
            Target::TimeAtMost(r) => format!("≤ {r:.2}×"),
            Target::ThroughputAtLeast(r) => format!("≥ {r:.2}×"),
            Target::SpeedupOver { baseline, at_least } => {
                format!("≥ {at_least:.2}× of {}", figure(baseline))
            }
            Target::AtMost(v) => format!("≤ {}", figure(v)),
        }
    }

    /// Whether `ratio` (leveltable's figure over LevelDB's; for [`Target::SpeedupOver`],
    /// the speedup over the baseline; for [`Target::AtMost`], the figure itself) meets the
    /// goal; `None` without a goal.
    pub fn met(self, ratio: f64) -> Option<bool> {
        match self {
            Target::None => None,
            Target::TimeAtMost(r) | Target::AtMost(r) => Some(ratio <= r),
            Target::ThroughputAtLeast(r) => Some(ratio >= r),
            Target::SpeedupOver { at_least, .. } => Some(ratio >= at_least),
        }
    }
}

/// How much faster leveltable must be than each peer crate on the workloads it supports.
pub const PEER_SPEEDUP: f64 = 2.0;

/// One line of the comparison table: best-of-N figures per system.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Workload name.
    pub workload: String,
    /// Unit of every figure in the row.
    pub unit: Unit,
    /// Figure per system, indexed by [`System::index`]; `None` where a system does not
    /// support the workload or is missing from this build.
    pub figures: [Option<f64>; 4],
    /// The goal against LevelDB.
    pub target: Target,
}

impl Row {
    /// leveltable's figure over LevelDB's.
    pub fn ratio(&self, system: System) -> Option<f64> {
        Some(self.figures[system.index()]? / self.figures[System::LevelDb.index()]?)
    }

    /// The figure the goal is judged on: leveltable's ratio to LevelDB, its speedup over
    /// the baseline of a [`Target::SpeedupOver`], or its figure for a [`Target::AtMost`].
    pub fn target_ratio(&self) -> Option<f64> {
        let ours = self.figures[System::Leveltable.index()];
        match self.target {
            Target::SpeedupOver { baseline, .. } => Some(self.unit.speedup(ours?, baseline)),
            Target::AtMost(_) => ours,
            _ => self.ratio(System::Leveltable),
        }
    }

    /// Whether the goal is met (`None` without a goal or a figure).
    pub fn target_met(&self) -> Option<bool> {
        self.target.met(self.target_ratio()?)
    }

    /// leveltable's speedup over each peer that ran this workload.
    pub fn peer_speedups(&self) -> Vec<(System, f64)> {
        let Some(ours) = self.figures[System::Leveltable.index()] else {
            return Vec::new();
        };
        [System::Sstable, System::RustyLeveldb]
            .into_iter()
            .filter_map(|p| Some((p, self.unit.speedup(ours, self.figures[p.index()]?))))
            .collect()
    }
}

fn figure(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// The comparison table in Markdown: each system's figure (peers with their ratio to
/// LevelDB), leveltable's ratio to LevelDB, the goal and whether it is met, and leveltable's
/// speedup over the peers.
pub fn render_table(rows: &[Row]) -> String {
    let mut out = String::new();
    out.push_str(
        "| workload | unit | leveltable | LevelDB 1.23 | ratio | target | met | sstable 0.11 | rusty-leveldb 4 | vs peers (≥ 2×) |\n",
    );
    out.push_str("|---|---|--:|--:|--:|--:|:-:|--:|--:|---|\n");
    for row in rows {
        let cell = |s: System| match row.figures[s.index()] {
            None => "—".to_string(),
            Some(v) => match (s, row.ratio(s)) {
                (System::Sstable | System::RustyLeveldb, Some(r)) => {
                    format!("{} ({r:.2}×)", figure(v))
                }
                _ => figure(v),
            },
        };
        let ratio = match row.target {
            Target::SpeedupOver { .. } => row
                .target_ratio()
                .map_or("—".into(), |r| format!("{r:.2}× (speedup)")),
            _ => row
                .ratio(System::Leveltable)
                .map_or("—".into(), |r| format!("{r:.2}×")),
        };
        let met = match row.target_met() {
            None => "—",
            Some(true) => "yes",
            Some(false) => "**no**",
        };
        let peers = row
            .peer_speedups()
            .iter()
            .map(|(p, s)| {
                let short = if *p == System::Sstable {
                    "sstable"
                } else {
                    "rusty"
                };
                let mark = if *s >= PEER_SPEEDUP { "" } else { " **no**" };
                format!("{short} {s:.1}×{mark}")
            })
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            row.workload,
            row.unit.label(),
            cell(System::Leveltable),
            cell(System::LevelDb),
            ratio,
            row.target.describe(),
            met,
            cell(System::Sstable),
            cell(System::RustyLeveldb),
            if peers.is_empty() {
                "—".into()
            } else {
                peers
            },
        );
    }
    out
}

/// Renders any Markdown table from a header and rows of cells.
pub fn render_markdown(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let _ = writeln!(
        out,
        "|{}|",
        header.iter().map(|_| "---").collect::<Vec<_>>().join("|")
    );
    for row in rows {
        let _ = writeln!(out, "| {} |", row.join(" | "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(unit: Unit, ours: f64, leveldb: f64, target: Target) -> Row {
        Row {
            workload: "w".into(),
            unit,
            figures: [Some(ours), Some(leveldb), Some(4.0 * leveldb), None],
            target,
        }
    }

    #[test]
    fn figures_from_time_and_work() {
        let second = Duration::from_secs(1);
        assert_eq!(Unit::NsPerOp.figure(second, 1e6), 1000.0);
        assert_eq!(Unit::MbPerSec.figure(second, 5e8), 500.0);
        assert!(Unit::NsPerOp.better(1.0, 2.0));
        assert!(Unit::MbPerSec.better(2.0, 1.0));
        assert_eq!(Unit::NsPerOp.speedup(10.0, 30.0), 3.0);
        assert_eq!(Unit::MbPerSec.speedup(30.0, 10.0), 3.0);
        assert_eq!(Unit::OpsPerSec.figure(second, 5e5), 5e5);
        assert!(Unit::OpsPerSec.better(2.0, 1.0));
        assert!(Unit::BytesPerByte.better(1.0, 2.0));
        assert_eq!(Unit::BytesPerByte.figure(second, 1.5), 1.5);
    }

    #[test]
    fn targets_compare_ratios() {
        let r = row(Unit::NsPerOp, 40.0, 100.0, Target::TimeAtMost(0.5));
        assert_eq!(r.ratio(System::Leveltable), Some(0.4));
        assert_eq!(r.target_met(), Some(true));
        let r = row(Unit::NsPerOp, 60.0, 100.0, Target::TimeAtMost(0.5));
        assert_eq!(r.target_met(), Some(false));
        let r = row(Unit::MbPerSec, 140.0, 100.0, Target::ThroughputAtLeast(1.5));
        assert_eq!(r.target_met(), Some(false));
        assert_eq!(
            row(Unit::MbPerSec, 1.0, 1.0, Target::None).target_met(),
            None
        );
    }

    #[test]
    fn own_targets_judge_leveltable_alone() {
        let mut r = row(Unit::MbPerSec, 340.0, 100.0, Target::None);
        r.target = Target::SpeedupOver {
            baseline: 200.0,
            at_least: 1.7,
        };
        assert_eq!(r.target_ratio(), Some(1.7));
        assert_eq!(r.target_met(), Some(true));
        r.figures[System::Leveltable.index()] = Some(300.0);
        assert_eq!(r.target_met(), Some(false));
        let mut r = row(Unit::MiB, 273.0, 1.0, Target::AtMost(320.0));
        assert_eq!(r.target_ratio(), Some(273.0));
        assert_eq!(r.target_met(), Some(true));
        r.target = Target::AtMost(256.0);
        assert_eq!(r.target_met(), Some(false));
        assert_eq!(Target::AtMost(320.0).describe(), "≤ 320");
        assert_eq!(Unit::Millis.figure(Duration::from_millis(3), 1.0), 3.0);
        assert!(Unit::Millis.better(1.0, 2.0) && Unit::MiB.better(1.0, 2.0));
    }

    #[test]
    fn peers_speedup_follows_the_unit() {
        // sstable takes 4× LevelDB's time; leveltable takes 0.5× of it: 8× faster.
        let r = row(Unit::NsPerOp, 50.0, 100.0, Target::None);
        assert_eq!(r.peer_speedups(), vec![(System::Sstable, 8.0)]);
        // sstable moves 4× LevelDB's bytes per second; leveltable 1×: 0.25×.
        let r = row(Unit::MbPerSec, 100.0, 100.0, Target::None);
        assert_eq!(r.peer_speedups(), vec![(System::Sstable, 0.25)]);
    }

    #[test]
    fn table_marks_misses() {
        let text = render_table(&[row(Unit::NsPerOp, 60.0, 100.0, Target::TimeAtMost(0.5))]);
        assert!(text.contains("| w | ns/op | 60.0 | 100 | 0.60× | ≤ 0.50× | **no** | 400 (4.00×) | — | sstable 6.7× |"), "{text}");
    }
}
