//! When a failed request is tried again, and for how long.

use std::time::{Duration, Instant};

/// Retries of transient failures (5xx answers, timeouts, connection resets, bodies shorter
/// than asked for): exponential backoff from `first_backoff`, doubling up to `max_backoff`,
/// with jitter, until `max_attempts` attempts were made or `budget` has passed since the
/// first. A missing object, a refused credential or a replaced object is never retried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (at least 1).
    pub max_attempts: u32,
    /// The wait before the first retry.
    pub first_backoff: Duration,
    /// The longest wait between attempts.
    pub max_backoff: Duration,
    /// No attempt starts later than this after the first.
    pub budget: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 8,
            first_backoff: Duration::from_millis(20),
            max_backoff: Duration::from_secs(2),
            budget: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// The wait before attempt `attempt + 1` (after `attempt` failures), or `None` when no
    /// further attempt may start.
    pub(crate) fn backoff(&self, attempt: u32, started: Instant) -> Option<Duration> {
        if attempt >= self.max_attempts.max(1) {
            return None;
        }
        let exp = self
            .first_backoff
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
        let full = exp.min(self.max_backoff);
        // Jitter: between half and all of the full wait, from the clock's low bits.
        let nanos = Instant::now().duration_since(started).subsec_nanos();
        let wait = full / 2 + full.mul_f64(f64::from(nanos % 1000) / 2000.0);
        (started.elapsed() + wait <= self.budget).then_some(wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_is_bounded() {
        let p = RetryPolicy::default();
        let t = Instant::now();
        assert!(p.backoff(1, t).unwrap() <= Duration::from_millis(20));
        assert!(p.backoff(7, t).unwrap() <= Duration::from_secs(2));
        assert!(p.backoff(8, t).is_none());
        let tight = RetryPolicy {
            budget: Duration::ZERO,
            ..RetryPolicy::default()
        };
        assert!(tight.backoff(1, t).is_none());
    }
}
