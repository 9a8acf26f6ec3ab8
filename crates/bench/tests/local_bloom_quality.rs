//! False-positive rates of `CacheLocalBloomPolicy` on random and on structured keys, asserted to
//! stay within 10% of the ideal rate of a cache-local Bloom filter of the same size.
//!
//! For each key shape and filter size `n`, the test builds enough filters over consecutive
//! stretches of keys to probe about 100,000 absent keys of two kinds: the immediate
//! neighbours of the keys in the filter (`2i + 1` for key `2i`), which defeat a weak hash, and
//! far keys drawn at random.

use leveltable_bench::workload::{KeyShape as Shape, SplitMix64};
use leveltable_filter_policy::{CacheLocalBloomPolicy, FilterPolicy};

const BITS_PER_KEY: usize = 10;
const PROBES_PER_CLASS: usize = 100_000;
const BLOCK_BITS: f64 = 512.0;

/// The expected false-positive rate of a cache-local filter holding `n` keys in `blocks`
/// blocks with `k` probes: a block's key count is binomial (Poisson for many blocks).
fn expected_rate(n: usize, blocks: usize, k: u8) -> f64 {
    let k = i32::from(k);
    let fill = |j: f64| (1.0 - (1.0 - 1.0 / BLOCK_BITS).powf(f64::from(k) * j)).powi(k);
    if blocks == 1 {
        return fill(n as f64);
    }
    let lambda = n as f64 / blocks as f64;
    let mut log_p = -lambda;
    let mut rate = 0.0;
    let max_j = (lambda + 20.0 * lambda.sqrt() + 50.0) as usize;
    for j in 0..=max_j {
        if j > 0 {
            log_p += (lambda / j as f64).ln();
        }
        rate += log_p.exp() * fill(j as f64);
    }
    rate
}

struct Measured {
    neighbour_rate: f64,
    far_rate: f64,
    expected: f64,
    probes: usize,
}

fn measure(shape: Shape, n: usize, policy: &CacheLocalBloomPolicy) -> Measured {
    let filters = PROBES_PER_CLASS.div_ceil(n);
    let mut rng = SplitMix64::new(0x5eed ^ n as u64);
    let mut key = Vec::new();
    let mut flat = Vec::new();
    let mut ends = Vec::with_capacity(n);
    let mut filter = Vec::new();
    let (mut neighbour_hits, mut far_hits, mut probes) = (0usize, 0usize, 0usize);
    let mut expected = 0.0;
    for f in 0..filters {
        let first = (f * n) as u64;
        flat.clear();
        ends.clear();
        for i in first..first + n as u64 {
            shape.key_into(2 * i, &mut key);
            flat.extend_from_slice(&key);
            ends.push(flat.len());
        }
        let keys: Vec<&[u8]> = ends
            .iter()
            .scan(0, |start, &end| {
                let k = &flat[*start..end];
                *start = end;
                Some(k)
            })
            .collect();
        filter.clear();
        policy.create_filter(&keys, &mut filter);
        let blocks = (filter.len() - 2) / 64;
        expected = expected_rate(n, blocks, policy.num_probes());

        // Never a false negative.
        assert!(
            keys.iter().all(|k| policy.key_may_match(k, &filter)),
            "{shape:?} n={n}"
        );

        // Sample at most PROBES_PER_CLASS neighbours evenly from the filter's keys.
        let step = n.div_ceil(PROBES_PER_CLASS);
        for i in (first..first + n as u64).step_by(step) {
            shape.key_into(2 * i + 1, &mut key);
            neighbour_hits += usize::from(policy.key_may_match(&key, &filter));
            // A far key: odd, so never in the filter.
            shape.key_into((rng.next() >> 2) | 1, &mut key);
            far_hits += usize::from(policy.key_may_match(&key, &filter));
            probes += 1;
        }
    }
    Measured {
        neighbour_rate: neighbour_hits as f64 / probes as f64,
        far_rate: far_hits as f64 / probes as f64,
        expected,
        probes,
    }
}

fn check(shape: Shape) {
    let policy = CacheLocalBloomPolicy::new(BITS_PER_KEY);
    for n in [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000] {
        let m = measure(shape, n, &policy);
        // Within 10% of the ideal. Where fewer than ten false positives are expected at all
        // (tiny filters), allow four standard deviations of sampling noise on top.
        let mut bound = 1.1 * m.expected;
        if m.expected * (m.probes as f64) < 10.0 {
            bound += 4.0 * (m.expected / m.probes as f64).sqrt();
        }
        println!(
            "{shape:?} n={n}: neighbours {:.4}%, far {:.4}%, ideal {:.4}%, bound {:.4}%",
            m.neighbour_rate * 100.0,
            m.far_rate * 100.0,
            m.expected * 100.0,
            bound * 100.0
        );
        assert!(
            m.neighbour_rate <= bound,
            "{shape:?} n={n}: neighbours {}",
            m.neighbour_rate
        );
        assert!(
            m.far_rate <= bound,
            "{shape:?} n={n}: far keys {}",
            m.far_rate
        );
    }
}

#[test]
fn expected_rate_at_ten_bits_per_key_is_the_cache_local_ideal() {
    let rate = expected_rate(10_000_000, 10_000_000 * 10 / 512, 7);
    assert!((rate - 0.00957).abs() < 0.00005, "{rate}");
}

#[test]
fn random_keys() {
    check(Shape::Random);
}

#[test]
fn big_endian_u64_keys() {
    check(Shape::BigEndianU64);
}

#[test]
fn zero_padded_decimal_keys() {
    check(Shape::Decimal);
}

#[test]
fn prefixed_keys() {
    check(Shape::Prefixed);
}
