//! Writes golden files made by the real LevelDB 1.23, for crates that must match it byte for
//! byte:
//!
//! - `table_none.ldb`, `table_snappy.ldb`: 1000 entries (`key000000`… → `value-<i>` repeated
//!   1–13 times), block size 1024, restart interval 16, 10-bit Bloom filter, bytewise keys,
//!   without and with snappy compression.
//! - `entries.tsv`: those entries in order, one `KEY\tVALUE` line each, both in hex.
//! - `golden.txt`: hash, CRC-32C, Bloom filter and filter block vectors (format in its
//!   header).
//! - `db_internal.ldb`: a table file of a real LevelDB database (internal keys, compression
//!   off, 10-bit Bloom filter) holding puts, overwrites and deletions of `user:NNNN` keys,
//!   written when LevelDB recovers its log on reopening; `db_internal.tsv`: its entries as
//!   LevelDB's own iterator reads them, `USER_KEY\tSEQ\tput|del\tVALUE` (keys and values
//!   hex).
//!
//! The output is deterministic: running it again rewrites identical files.
//!
//! ```text
//! cargo run -p leveltable-interop --example make_golden -- crates/table/testdata
//! ```

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use leveltable_interop::bloom::BloomFilterPolicy;
use leveltable_interop::db::{Db, DbOptions};
use leveltable_interop::filter_block::FilterBlockBuilder;
use leveltable_interop::table::{Compression, KeyComparator, Table, TableBuilder, TableOptions};
use leveltable_interop::{SKIP_MESSAGE, available, crc32c, hash};

type Error = Box<dyn std::error::Error>;

/// A `start_block` offset and the keys added after it.
type Block = (u64, Vec<Vec<u8>>);

fn main() -> ExitCode {
    let Some(out) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: make_golden <output directory>");
        return ExitCode::from(2);
    };
    if !available() {
        eprintln!("{SKIP_MESSAGE}");
        return ExitCode::FAILURE;
    }
    match run(&out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("make_golden: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(out: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(out)?;
    let entries = table_entries();
    let mut tsv = String::new();
    for (k, v) in &entries {
        writeln!(tsv, "{}\t{}", hex(k), hex(v))?;
    }
    write(out, "entries.tsv", tsv.as_bytes())?;

    let mut tables = String::new();
    for (name, compression) in [
        ("table_none.ldb", Compression::None),
        ("table_snappy.ldb", Compression::Snappy),
    ] {
        let options = TableOptions {
            block_size: 1024,
            block_restart_interval: 16,
            compression,
            bloom_bits_per_key: 10,
            ..TableOptions::default()
        };
        let mut builder = TableBuilder::new(&options)?;
        for (k, v) in &entries {
            builder.add(k, v)?;
        }
        let file = builder.finish()?;
        // Read it back through LevelDB before publishing it.
        let table = Table::open(
            &file,
            &TableOptions {
                paranoid_checks: true,
                ..options
            },
        )?;
        if table.entries(true)? != entries {
            return Err(format!("{name}: LevelDB read back different entries").into());
        }
        writeln!(
            tables,
            "table\t{name}\t{}\t{:08x}",
            file.len(),
            crc32c::value(&file)
        )?;
        write(out, name, &file)?;
    }

    let golden = golden_text(&tables)?;
    write(out, "golden.txt", golden.as_bytes())?;
    database_table(out)?;
    Ok(())
}

/// Makes a database with several versions of keys and deletions, and publishes the one table
/// file LevelDB writes for it, with LevelDB's own reading of its entries.
fn database_table(out: &Path) -> Result<(), Error> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("db");
    let options = DbOptions {
        compression: Compression::None,
        bloom_bits_per_key: 10,
        ..DbOptions::default()
    };
    let db = Db::open(&path, &options)?;
    for i in 0..300 {
        db.put(
            format!("user:{i:04}").as_bytes(),
            format!("v1-{i}").as_bytes(),
        )?;
    }
    for i in (0..300).step_by(7) {
        db.put(
            format!("user:{i:04}").as_bytes(),
            format!("v2-{i}").as_bytes(),
        )?;
    }
    for i in (0..300).step_by(11) {
        db.delete(format!("user:{i:04}").as_bytes())?;
    }
    db.close();
    // Reopening replays the log into a level-0 table that keeps every version.
    Db::open(&path, &options)?.close();

    let mut tables: Vec<PathBuf> = std::fs::read_dir(&path)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    tables.retain(|p| p.extension().is_some_and(|x| x == "ldb"));
    let [file] = &tables[..] else {
        return Err(format!("expected one table file, found {tables:?}").into());
    };
    let bytes = std::fs::read(file)?;
    let table = Table::open(
        &bytes,
        &TableOptions {
            comparator: KeyComparator::InternalKey,
            bloom_bits_per_key: 10,
            paranoid_checks: true,
            ..TableOptions::default()
        },
    )?;
    let mut dump = String::new();
    for (key, value) in table.entries(true)? {
        let (user_key, tag) = key.split_at(key.len() - 8);
        let tag = u64::from_le_bytes(tag.try_into()?);
        let (kind, value) = match tag & 0xff {
            0 => ("del", &[][..]),
            1 => ("put", &value[..]),
            other => return Err(format!("unknown value type {other}").into()),
        };
        writeln!(
            dump,
            "{}\t{}\t{kind}\t{}",
            hex(user_key),
            tag >> 8,
            hex(value)
        )?;
    }
    write(out, "db_internal.ldb", &bytes)?;
    write(out, "db_internal.tsv", dump.as_bytes())?;
    Ok(())
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), Error> {
    let path = dir.join(name);
    std::fs::write(&path, bytes)?;
    println!("wrote {} ({} bytes)", path.display(), bytes.len());
    Ok(())
}

/// `key000000` → `value-0`, … with values repeated 1–13 times, so blocks hold different
/// numbers of entries.
fn table_entries() -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..1000)
        .map(|i| {
            let key = format!("key{i:06}").into_bytes();
            let value = format!("value-{i}").repeat(1 + (i * 7) % 13).into_bytes();
            (key, value)
        })
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Hex, with `-` for no bytes so that every column is non-empty.
fn hex_or_dash(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        String::from("-")
    } else {
        hex(bytes)
    }
}

fn keys_column(keys: &[Vec<u8>]) -> String {
    if keys.is_empty() {
        return String::from("-");
    }
    keys.iter()
        .map(|k| hex_or_dash(k))
        .collect::<Vec<_>>()
        .join(",")
}

/// A small deterministic generator (xorshift64*), so the vectors never change.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next().to_le_bytes()[0]).collect()
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const HEADER: &str = "\
# Golden values computed by LevelDB 1.23 (libleveldb.a), written by
# crates/interop/examples/make_golden.rs. Tab-separated; byte strings in lowercase hex,
# `-` for an empty string or an empty list.
#
# table        <file> <length> <crc32c of the whole file>
#                the tables in this directory: 1000 entries of entries.tsv, block_size 1024,
#                block_restart_interval 16, 10-bit Bloom filter, bytewise comparator;
#                table_none.ldb without compression, table_snappy.ldb with snappy.
# hash         <seed> <data> <leveldb::Hash(data, seed)>
# crc32c       <data> <crc32c::Value(data)>
# bloom        <bits_per_key> <keys, comma-separated> <CreateFilter output>
# filter_block <bits_per_key> <blocks> <FilterBlockBuilder::Finish output>
#                blocks: `offset:key,key;offset:key` in call order (StartBlock(offset) then
#                AddKey for each key), `-` for no block; a block without keys is `offset:-`.
";

fn golden_text(tables: &str) -> Result<String, Error> {
    let mut s = String::from(HEADER);
    s.push_str(tables);
    let mut rng = Rng(0x5eed_1e7e_1db1_0123);

    // Hash: LevelDB's own vectors, then every length 0–40 with random data and seeds.
    let mut hash_cases: Vec<(u32, Vec<u8>)> = vec![
        (0xbc9f_1d34, vec![]),
        (0xbc9f_1d34, vec![0x62]),
        (0xbc9f_1d34, vec![0xc3, 0x97]),
        (0xbc9f_1d34, vec![0xe2, 0x99, 0xa5]),
        (0xbc9f_1d34, vec![0xe1, 0x80, 0xb9, 0x32]),
    ];
    for len in 0..=40 {
        let seed = if len % 3 == 0 {
            0xbc9f_1d34
        } else {
            rng.next() as u32
        };
        hash_cases.push((seed, rng.bytes(len)));
    }
    hash_cases.push((0, vec![0xff; 9]));
    hash_cases.push((u32::MAX, vec![0x80; 7]));
    for (seed, data) in &hash_cases {
        writeln!(
            s,
            "hash\t{seed:08x}\t{}\t{:08x}",
            hex_or_dash(data),
            hash::hash(data, *seed)
        )?;
    }

    for len in [0usize, 1, 3, 4, 5, 31, 32, 33, 100] {
        let data = rng.bytes(len);
        writeln!(
            s,
            "crc32c\t{}\t{:08x}",
            hex_or_dash(&data),
            crc32c::value(&data)
        )?;
    }

    // Bloom filters for bits per key 0–30 over a few key sets.
    let key_sets: Vec<Vec<Vec<u8>>> = vec![
        vec![],
        vec![b"hello".to_vec(), b"world".to_vec()],
        vec![b"a".to_vec()],
        vec![vec![], vec![0x00], vec![0xff, 0xff]],
        (0..100).map(|i| format!("key{i}").into_bytes()).collect(),
        (0..25).map(|i| rng.bytes(1 + i % 9)).collect(),
    ];
    for bits in 0..=30 {
        for keys in &key_sets {
            let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            let mut filter = Vec::new();
            BloomFilterPolicy::new(bits).create_filter(&refs, &mut filter)?;
            writeln!(s, "bloom\t{bits}\t{}\t{}", keys_column(keys), hex(&filter))?;
        }
    }

    // Filter blocks: the hand-written cases of LevelDB's filter_block_test, blocks that skip
    // many 2 KiB ranges, and random sequences.
    let mut block_cases: Vec<(usize, Vec<Block>)> = vec![
        (10, vec![]),
        (
            10,
            vec![
                (100, keys(&["foo", "bar", "box"])),
                (200, keys(&["box"])),
                (300, keys(&["hello"])),
            ],
        ),
        (
            10,
            vec![
                (0, keys(&["foo"])),
                (2000, keys(&["bar"])),
                (3100, keys(&["box"])),
                (9000, keys(&["box", "hello"])),
            ],
        ),
        (
            10,
            vec![(0, vec![]), (4096, vec![]), (40_000, keys(&["late"]))],
        ),
        (
            0,
            vec![(0, keys(&["a", "b"])), (2048 * 50 + 7, keys(&["c"]))],
        ),
        (
            30,
            vec![
                (5000, keys(&["x"])),
                (5001, keys(&["y"])),
                (6143, vec![]),
                (6144, keys(&["z"])),
            ],
        ),
    ];
    for _ in 0..8 {
        let bits = rng.below(31) as usize;
        let mut offset = 0;
        let blocks = (0..rng.below(12))
            .map(|_| {
                offset += if rng.below(4) == 0 {
                    2048 * rng.below(40)
                } else {
                    rng.below(3000)
                };
                let n = rng.below(6) as usize;
                let ks = (0..n)
                    .map(|_| {
                        let len = rng.below(10) as usize;
                        rng.bytes(len)
                    })
                    .collect();
                (offset, ks)
            })
            .collect();
        block_cases.push((bits, blocks));
    }
    for (bits, blocks) in &block_cases {
        let policy = BloomFilterPolicy::new(*bits);
        let mut builder = FilterBlockBuilder::new(&policy);
        let mut column = Vec::new();
        for (offset, ks) in blocks {
            builder.start_block(*offset)?;
            for k in ks {
                builder.add_key(k);
            }
            column.push(format!("{offset}:{}", keys_column(ks)));
        }
        let column = if column.is_empty() {
            String::from("-")
        } else {
            column.join(";")
        };
        writeln!(
            s,
            "filter_block\t{bits}\t{column}\t{}",
            hex(&builder.finish()?)
        )?;
    }
    Ok(s)
}

fn keys(ks: &[&str]) -> Vec<Vec<u8>> {
    ks.iter().map(|k| k.as_bytes().to_vec()).collect()
}
