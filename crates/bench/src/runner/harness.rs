//! The timing harness: each system's job runs once per round, systems interleaved within a
//! round, and each system keeps its best figure. Jobs check their own answers ([`check`]), so
//! a figure never comes from a loop that did less work.

use std::time::{Duration, Instant};

use super::config::{BoxError, Result};
use crate::leveldb;
use crate::report::{System, Unit};

/// One timed run: how long, and how much work (operations or bytes).
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// Time of the loop.
    pub elapsed: Duration,
    /// Operations or bytes done.
    pub work: f64,
}

pub(super) type Job<'a> = Box<dyn FnMut() -> Result<Sample> + 'a>;

/// One figure per system, indexed by [`System::index`].
pub type Figures = [Option<f64>; 4];

/// Runs each job `rounds` times, interleaving systems within each round, and keeps each
/// system's best figure. Each round starts with the next system, so that none always runs
/// first, on a machine the others have not yet warmed or loaded.
pub(super) fn best_of(
    rounds: usize,
    unit: Unit,
    jobs: &mut [(System, Job<'_>)],
) -> Result<[Option<f64>; 4]> {
    let mut best: [Option<f64>; 4] = [None; 4];
    let n = jobs.len();
    for round in 0..rounds.max(1) {
        for i in 0..n {
            let (system, job) = &mut jobs[(round + i) % n];
            let sample = job()?;
            let value = unit.figure(sample.elapsed, sample.work);
            let slot = &mut best[system.index()];
            if slot.is_none_or(|b| unit.better(value, b)) {
                *slot = Some(value);
            }
        }
    }
    Ok(best)
}

/// Like [`best_of`] for two job sets measured in the same rounds: in each round, each
/// system runs its jobs in the order `a b b a`, so both figures share the machine's
/// conditions and neither side always profits from what the other left warm.
pub(super) fn best_of_paired<'j>(
    rounds: usize,
    unit: Unit,
    a: &mut [(System, Job<'j>)],
    b: &mut [(System, Job<'j>)],
) -> Result<(Figures, Figures)> {
    let mut best: [Figures; 2] = [[None; 4]; 2];
    for _ in 0..rounds.max(1) {
        for ((system, job_a), (system_b, job_b)) in a.iter_mut().zip(b.iter_mut()) {
            debug_assert_eq!(system, system_b);
            for side in [0, 1, 1, 0] {
                let job = if side == 0 { &mut *job_a } else { &mut *job_b };
                let sample = job()?;
                let value = unit.figure(sample.elapsed, sample.work);
                let slot = &mut best[side][system.index()];
                if slot.is_none_or(|b| unit.better(value, b)) {
                    *slot = Some(value);
                }
            }
        }
    }
    Ok((best[0], best[1]))
}

pub(super) fn timed<T>(f: impl FnOnce() -> Result<T>) -> Result<(Duration, T)> {
    let start = Instant::now();
    let out = f()?;
    Ok((start.elapsed(), out))
}

pub(super) fn check(ok: bool, what: impl FnOnce() -> String) -> Result<()> {
    if ok { Ok(()) } else { Err(what().into()) }
}

pub(super) fn peer_error(e: impl std::fmt::Debug) -> BoxError {
    format!("{e:?}").into()
}

/// LevelDB's loops are in this build.
pub(super) fn leveldb_on() -> bool {
    leveldb::available()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_of_keeps_the_best_figure_per_system() {
        let mut calls = 0;
        let mut jobs: Vec<(System, Job<'_>)> = vec![(
            System::Sstable,
            Box::new(|| {
                calls += 1;
                Ok(Sample {
                    elapsed: Duration::from_millis(10 * calls),
                    work: 1e6,
                })
            }),
        )];
        let best = best_of(3, Unit::NsPerOp, &mut jobs).unwrap();
        assert_eq!(best[System::Sstable.index()], Some(10.0));
        assert_eq!(best[System::Leveltable.index()], None);
    }

    #[test]
    fn each_round_starts_with_the_next_system() {
        let order = std::cell::RefCell::new(Vec::new());
        let job = |system: System| -> (System, Job<'_>) {
            let order = &order;
            (
                system,
                Box::new(move || {
                    order.borrow_mut().push(system);
                    Ok(Sample {
                        elapsed: Duration::from_millis(1),
                        work: 1.0,
                    })
                }),
            )
        };
        let mut jobs = vec![job(System::Leveltable), job(System::LevelDb)];
        best_of(3, Unit::NsPerOp, &mut jobs).unwrap();
        drop(jobs);
        use System::{LevelDb, Leveltable};
        assert_eq!(
            order.into_inner(),
            [
                Leveltable, LevelDb, LevelDb, Leveltable, Leveltable, LevelDb
            ]
        );
    }
}
