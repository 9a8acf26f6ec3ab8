//! The tests' source of repeatable pseudo-random numbers.

/// Knuth's MMIX linear congruential generator: each call steps the state and returns it
/// whole (its high bits are the random ones).
pub(crate) struct Lcg(u64);

impl Lcg {
    pub(crate) fn new(seed: u64) -> Lcg {
        Lcg(seed)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0
    }
}
