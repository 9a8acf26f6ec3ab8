//! Measures how well each filter of a table works on keys like the table's own.
//!
//! A Bloom filter's false-positive rate is a promise about random keys. Real keys are rarely
//! random: sequential integers and zero-padded counters differ only in their last bytes, and
//! LevelDB's filter (`leveldb.BuiltinBloomFilter2`) lets far more of their absent neighbours
//! through than its bits per key promise. [`audit`] probes every filter listed in a table
//! with absent keys derived from the table's own keys and reports, per filter, the fraction
//! of absent gets that would still read a data block.
//!
//! Probes, each checked to be absent from the table and routed to the data block a get would
//! consult (probes past the last block are not counted: a get reads nothing for them):
//!
//! - **neighbours**: each sampled key with its last byte plus and minus one, and with its
//!   numeric suffix (trailing ASCII digits, or the trailing 8 bytes read as a big-endian
//!   integer) plus and minus one, keeping the width;
//! - **random**: each sampled key followed by 8 random bytes, which lands in the same block
//!   but shares no structure with its neighbours;
//! - **supplied**: absent keys the caller passes in.

use std::cmp::Ordering;

use leveltable_filter_block::FilterBlockReader;
use leveltable_filter_policy::{BloomFilterPolicy, FilterPolicy, KnownPolicy};
use leveltable_table::{ReadAt, Result, Table};

/// What [`audit`] probes with.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AuditOptions {
    /// At most this many of the table's keys are sampled (evenly) to derive probes.
    /// Default: 100,000.
    pub max_keys: usize,
    /// Absent keys of the caller's to probe as well. Default: none.
    pub supplied_probes: Vec<Vec<u8>>,
    /// Seed of the random probes. Default: 1.
    pub seed: u64,
}

impl Default for AuditOptions {
    fn default() -> Self {
        AuditOptions {
            max_keys: 100_000,
            supplied_probes: Vec::new(),
            seed: 1,
        }
    }
}

/// How many probes reached a data block, and how many of those the filter let through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProbeCount {
    /// Absent probes that a get would route to a data block.
    pub probes: u64,
    /// Those the filter did not rule out: each would cost a data block read.
    pub passed: u64,
}

impl ProbeCount {
    /// The fraction of probes that passed the filter (0 without probes).
    pub fn rate(&self) -> f64 {
        if self.probes == 0 {
            0.0
        } else {
            self.passed as f64 / self.probes as f64
        }
    }
}

/// The judgement on one filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Neighbours pass about as often as random keys: the filter works for these keys.
    Good,
    /// Neighbours pass noticeably more often than the filter's size promises.
    Weak,
    /// Neighbours pass several times more often than promised: absent gets of keys like
    /// these read data blocks most of the time the filter is meant to spare.
    Pathological,
    /// The filter's policy is not one the audit knows, so it was not probed.
    Unknown,
}

impl Verdict {
    /// A lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Good => "good",
            Verdict::Weak => "weak",
            Verdict::Pathological => "pathological",
            Verdict::Unknown => "unknown",
        }
    }
}

/// The audit of one filter block.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FilterAudit {
    /// The policy name from the metaindex.
    pub policy: String,
    /// Stored size of the filter block.
    pub filter_size: u64,
    /// Filter bits per table entry: the filters' own bits, as `stats` counts them, for the
    /// policies this tool knows; the block's whole size (so slightly high) for others.
    pub bits_per_key: f64,
    /// The false-positive rate a filter of that size and kind has on random keys: a standard
    /// Bloom filter's, or for `leveltable.LocalBloom64` a cache-local one's.
    pub expected_rate: f64,
    /// Neighbour probes.
    pub neighbours: ProbeCount,
    /// Random probes.
    pub random: ProbeCount,
    /// Probes the caller supplied.
    pub supplied: ProbeCount,
    /// The judgement.
    pub verdict: Verdict,
}

impl FilterAudit {
    /// The fraction of data blocks an absent get of a neighbour-shaped key reads.
    pub fn blocks_read_per_absent_get(&self) -> f64 {
        self.neighbours.rate()
    }
}

/// The audit of a table: one entry per filter its metaindex lists.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AuditReport {
    /// Entries in the table.
    pub entries: u64,
    /// Keys sampled to derive probes.
    pub sampled_keys: u64,
    /// Data blocks in the table.
    pub data_blocks: u64,
    /// Every filter, in metaindex order.
    pub filters: Vec<FilterAudit>,
}

impl AuditReport {
    /// Whether the table has a LevelDB Bloom filter judged pathological and no good filter
    /// beside it.
    pub fn needs_better_filter(&self) -> bool {
        let leveldb_bad = self.filters.iter().any(|f| {
            f.policy == BloomFilterPolicy::new(10).name() && f.verdict == Verdict::Pathological
        });
        let has_good = self.filters.iter().any(|f| f.verdict == Verdict::Good);
        leveldb_bad && !has_good
    }
}

/// Audits every filter of `table` (see the module documentation).
///
/// The table must be ordered bytewise for the neighbour probes to mean anything; other
/// orders are audited all the same.
///
/// # Errors
/// Any error reading the table's blocks.
pub fn audit<R: ReadAt>(table: &Table<R>, options: &AuditOptions) -> Result<AuditReport> {
    let properties = table.properties();
    let (entries, sample) = sample_keys(table, options.max_keys.max(1))?;

    // Every probe, routed to its block; absent ones only.
    let mut rng = options.seed;
    let mut neighbours = Vec::new();
    let mut random = Vec::new();
    for key in &sample {
        for probe in neighbour_probes(key) {
            neighbours.extend(route_if_absent(table, probe)?);
        }
        let mut probe = key.clone();
        probe.extend_from_slice(&splitmix64(&mut rng).to_le_bytes());
        random.extend(route_if_absent(table, probe)?);
    }
    let mut supplied = Vec::new();
    for probe in &options.supplied_probes {
        supplied.extend(route_if_absent(table, probe.clone())?);
    }

    let mut filters = Vec::new();
    for info in &properties.filters {
        let known = KnownPolicy::by_name(&info.policy_name);
        let block = match known {
            Some(_) => Some(table.read_filter_block(info)?),
            None => None,
        };
        let bits_per_key = if entries == 0 {
            0.0
        } else {
            block
                .as_deref()
                .and_then(|b| crate::filters::shape(&info.policy_name, b, entries).bits_per_key)
                .unwrap_or(info.handle.size as f64 * 8.0 / entries as f64)
        };
        // An unknown policy is held to a standard Bloom filter's rate.
        let expected_rate = known.map_or_else(
            || BloomFilterPolicy::expected_fp_rate(bits_per_key),
            |k| k.expected_fp_rate(bits_per_key),
        );
        let mut audit = FilterAudit {
            policy: info.policy_name.clone(),
            filter_size: info.handle.size,
            bits_per_key,
            expected_rate,
            neighbours: ProbeCount::default(),
            random: ProbeCount::default(),
            supplied: ProbeCount::default(),
            verdict: Verdict::Unknown,
        };
        if let (Some(known), Some(block)) = (known, &block) {
            let reader = FilterBlockReader::new(known.reader(), block);
            audit.neighbours = count(&reader, &neighbours);
            audit.random = count(&reader, &random);
            audit.supplied = count(&reader, &supplied);
            audit.verdict = judge(&audit);
        }
        filters.push(audit);
    }
    Ok(AuditReport {
        entries,
        sampled_keys: sample.len() as u64,
        data_blocks: properties.data_blocks,
        filters,
    })
}

/// Counts the entries and keeps every `stride`-th key in one pass, doubling the stride (and
/// halving the sample) whenever the sample would exceed `max_keys`: the sample stays evenly
/// spread over the whole table.
fn sample_keys<R: ReadAt>(table: &Table<R>, max_keys: usize) -> Result<(u64, Vec<Vec<u8>>)> {
    let mut sample: Vec<Vec<u8>> = Vec::new();
    let mut stride = 1u64;
    let mut it = table.iter();
    it.seek_to_first();
    let mut n = 0u64;
    while it.valid() {
        if n % stride == 0 {
            if sample.len() == max_keys {
                // Keep keys 0, 2·stride, 4·stride, ...: every other one.
                let mut i = 0;
                sample.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                stride *= 2;
            }
            if n % stride == 0 {
                sample.push(it.key().to_vec());
            }
        }
        n += 1;
        it.next();
    }
    it.status()?;
    Ok((n, sample))
}

/// `(block offset, probe)` if `probe` is absent and a get would consult a block for it.
fn route_if_absent<R: ReadAt>(table: &Table<R>, probe: Vec<u8>) -> Result<Option<(u64, Vec<u8>)>> {
    let Some(offset) = table.data_block_offset_for(&probe)? else {
        return Ok(None);
    };
    let mut it = table.iter();
    it.seek(&probe);
    it.status()?;
    let present = it.valid() && table.comparator().compare(it.key(), &probe) == Ordering::Equal;
    Ok((!present).then_some((offset, probe)))
}

fn count<P: FilterPolicy>(
    reader: &FilterBlockReader<'_, P>,
    probes: &[(u64, Vec<u8>)],
) -> ProbeCount {
    let passed = probes
        .iter()
        .filter(|(offset, key)| reader.key_may_match(*offset, key))
        .count();
    ProbeCount {
        probes: probes.len() as u64,
        passed: passed as u64,
    }
}

/// Neighbours pass at least this many times more often than promised: pathological.
const PATHOLOGICAL_FACTOR: f64 = 4.0;
/// ... or this many times: weak.
const WEAK_FACTOR: f64 = 2.0;
/// Below this rate nothing is worth a warning, whatever the ratio.
const NOTICEABLE_RATE: f64 = 0.02;
/// Fewer neighbour probes than this decide nothing.
const MIN_PROBES: u64 = 200;

fn judge(audit: &FilterAudit) -> Verdict {
    if audit.neighbours.probes < MIN_PROBES {
        return Verdict::Good;
    }
    let promised = audit.expected_rate.max(audit.random.rate());
    let rate = audit.neighbours.rate();
    if rate >= NOTICEABLE_RATE && rate > PATHOLOGICAL_FACTOR * promised {
        Verdict::Pathological
    } else if rate >= NOTICEABLE_RATE && rate > WEAK_FACTOR * promised {
        Verdict::Weak
    } else {
        Verdict::Good
    }
}

/// The keys next to `key`: last byte ± 1 and numeric suffix ± 1.
fn neighbour_probes(key: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::with_capacity(4);
    if let Some((&last, head)) = key.split_last() {
        for delta in [1i16, -1] {
            if let Ok(b) = u8::try_from(i16::from(last) + delta) {
                let mut k = head.to_vec();
                k.push(b);
                out.push(k);
            }
        }
    }
    let digits = key
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_digit())
        .count()
        .min(19);
    if digits > 1 {
        let (head, tail) = key.split_at(key.len() - digits);
        // Invariant: `tail` is 2 to 19 ASCII digits, which always parse into a u64.
        let n: u64 = std::str::from_utf8(tail)
            .ok()
            .and_then(|t| t.parse().ok())
            .unwrap_or(0);
        for m in [n.checked_add(1), n.checked_sub(1)].into_iter().flatten() {
            let text = format!("{m:0digits$}");
            if text.len() == digits {
                out.push([head, text.as_bytes()].concat());
            }
        }
    } else if key.len() >= 8 {
        let (head, tail) = key.split_at(key.len() - 8);
        // Invariant: `tail` has exactly 8 bytes.
        let n = u64::from_be_bytes(tail.try_into().unwrap_or([0; 8]));
        for m in [n.checked_add(1), n.checked_sub(1)].into_iter().flatten() {
            out.push([head, &m.to_be_bytes()].concat());
        }
    }
    out.sort();
    out.dedup();
    out
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use leveltable_filter_policy::CacheLocalBloomPolicy;
    use leveltable_table::{BuildOptions, ReadOptions, TableBuilder};

    fn table_of(keys: impl Iterator<Item = Vec<u8>>, extra: bool) -> Table<Vec<u8>> {
        let mut options = BuildOptions::default().filter_policy(BloomFilterPolicy::new(10));
        if extra {
            options = options.extra_filter_policy(CacheLocalBloomPolicy::new(10));
        }
        let mut builder = TableBuilder::new(Vec::new(), options).unwrap();
        for key in keys {
            // 100-byte values: about 35 entries per 4 KiB block, as in many real tables.
            builder.add(&key, &[b'v'; 100]).unwrap();
        }
        builder.finish().unwrap();
        Table::open(builder.into_inner(), ReadOptions::default()).unwrap()
    }

    #[test]
    fn samples_are_even_and_bounded() {
        let keys = (0..1_000u64).map(|i| format!("{i:04}").into_bytes());
        let table = table_of(keys, false);
        let (n, sample) = sample_keys(&table, 100).unwrap();
        assert_eq!(n, 1_000);
        assert!(
            sample.len() <= 100 && sample.len() >= 50,
            "{}",
            sample.len()
        );
        let expected: Vec<Vec<u8>> = (0..1_000u64)
            .step_by(16)
            .map(|i| format!("{i:04}").into_bytes())
            .collect();
        assert_eq!(sample, expected);
        let (_, all) = sample_keys(&table, 5_000).unwrap();
        assert_eq!(all.len(), 1_000);
    }

    #[test]
    fn promised_rates() {
        assert!((BloomFilterPolicy::expected_fp_rate(10.0) - 0.00843).abs() < 0.0001);
        assert!((CacheLocalBloomPolicy::expected_fp_rate(10.0) - 0.00957).abs() < 0.0001);
    }

    #[test]
    fn neighbours_of_keys() {
        assert_eq!(neighbour_probes(b"k07"), [b"k06".to_vec(), b"k08".to_vec()]);
        assert_eq!(neighbour_probes(b"a"), [b"`".to_vec(), b"b".to_vec()]);
        let be = 0x1234u64.to_be_bytes();
        let probes = neighbour_probes(&be);
        assert!(probes.contains(&0x1233u64.to_be_bytes().to_vec()));
        assert!(probes.contains(&0x1235u64.to_be_bytes().to_vec()));
        // Carries keep the width; no probe underflows.
        assert!(neighbour_probes(b"x00").contains(&b"x01".to_vec()));
        assert!(!neighbour_probes(b"x00").iter().any(|p| p.len() != 3));
        assert!(neighbour_probes(b"").is_empty());
    }

    #[test]
    fn leveldb_filter_on_integer_keys_is_pathological_and_ours_is_good() {
        let keys = (0..20_000u64).map(|i| (2 * i).to_be_bytes().to_vec());
        let report = audit(&table_of(keys, true), &AuditOptions::default()).unwrap();
        assert_eq!(report.entries, 20_000);
        assert_eq!(report.filters.len(), 2);
        let leveldb = &report.filters[0];
        let ours = &report.filters[1];
        assert_eq!(ours.policy, "leveltable.LocalBloom64");
        assert_eq!(leveldb.policy, "leveldb.BuiltinBloomFilter2");
        assert_eq!(leveldb.verdict, Verdict::Pathological, "{leveldb:?}");
        assert_eq!(ours.verdict, Verdict::Good, "{ours:?}");
        assert!(
            leveldb.neighbours.rate() > 5.0 * leveldb.expected_rate,
            "{leveldb:?}"
        );
        assert!(ours.neighbours.rate() < 0.02, "{ours:?}");
        assert!(!report.needs_better_filter());
    }

    #[test]
    fn leveldb_only_table_needs_a_better_filter() {
        let keys = (0..20_000u64).map(|i| (2 * i).to_be_bytes().to_vec());
        let report = audit(&table_of(keys, false), &AuditOptions::default()).unwrap();
        assert!(report.needs_better_filter());
    }

    #[test]
    fn random_keys_are_good_for_both() {
        let mut state = 7;
        let mut keys: Vec<Vec<u8>> = (0..20_000)
            .map(|_| splitmix64(&mut state).to_le_bytes().to_vec())
            .collect();
        keys.sort();
        keys.dedup();
        let report = audit(&table_of(keys.into_iter(), true), &AuditOptions::default()).unwrap();
        for f in &report.filters {
            assert_eq!(f.verdict, Verdict::Good, "{f:?}");
            assert!(f.random.rate() < 0.03, "{f:?}");
        }
    }

    #[test]
    fn bits_per_key_count_the_filters_alone() {
        let mut state = 11;
        let mut keys: Vec<Vec<u8>> = (0..20_000)
            .map(|_| splitmix64(&mut state).to_le_bytes().to_vec())
            .collect();
        keys.sort();
        keys.dedup();
        let table = table_of(keys.into_iter(), true);
        let report = audit(&table, &AuditOptions::default()).unwrap();
        let leveldb = &report.filters[0];
        // 10 bits per key, rounded up to whole bytes per filter; not the block's offsets.
        assert!((10.0..10.1).contains(&leveldb.bits_per_key), "{leveldb:?}");
        // As `stats` counts them.
        for (f, info) in report.filters.iter().zip(&table.properties().filters) {
            let block = table.read_filter_block(info).unwrap();
            let shape = crate::filters::shape(&f.policy, &block, report.entries);
            assert_eq!(Some(f.bits_per_key), shape.bits_per_key, "{f:?}");
        }
    }

    #[test]
    fn supplied_probes_are_counted_when_absent() {
        let keys = (0..1_000u64).map(|i| format!("key{:06}", 2 * i).into_bytes());
        let options = AuditOptions {
            supplied_probes: vec![
                b"key000001".to_vec(),
                b"key000002".to_vec(),
                b"zzz".to_vec(),
            ],
            ..AuditOptions::default()
        };
        let report = audit(&table_of(keys, false), &options).unwrap();
        // key000002 is present and zzz lies past the last block: only one probe counts.
        assert_eq!(report.filters[0].supplied.probes, 1);
    }

    #[test]
    fn tables_without_filters_have_nothing_to_audit() {
        let mut builder = TableBuilder::new(Vec::new(), BuildOptions::default()).unwrap();
        builder.add(b"a", b"1").unwrap();
        builder.finish().unwrap();
        let table = Table::open(builder.into_inner(), ReadOptions::default()).unwrap();
        let report = audit(&table, &AuditOptions::default()).unwrap();
        assert!(report.filters.is_empty());
        assert!(!report.needs_better_filter());
    }
}
