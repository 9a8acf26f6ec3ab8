//! Helpers shared by the command-line tests.

#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// The `leveltable` binary.
pub fn leveltable() -> Command {
    assert_cmd::cargo::cargo_bin_cmd!("leveltable")
}

/// A file of the table crate's test data, written by LevelDB 1.23.
pub fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../table/testdata")
        .join(name)
}

/// The two lowercase hexadecimal digits of each byte.
const HEX: [[u8; 2]; 256] = {
    let digits = b"0123456789abcdef";
    let mut table = [[0u8; 2]; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = [digits[i >> 4], digits[i & 15]];
        i += 1;
    }
    table
};

/// Appends the lowercase hexadecimal digits of `bytes` to `out`.
pub fn push_hex(out: &mut Vec<u8>, bytes: &[u8]) {
    for &b in bytes {
        out.extend_from_slice(&HEX[usize::from(b)]);
    }
}

/// `bytes` in lowercase hexadecimal digits.
pub fn hex(bytes: impl AsRef<[u8]>) -> String {
    let mut out = Vec::with_capacity(bytes.as_ref().len() * 2);
    push_hex(&mut out, bytes.as_ref());
    String::from_utf8(out).expect("hexadecimal digits are ASCII")
}

/// SplitMix64: deterministic, well-mixed numbers for keys and garbage.
pub fn splitmix(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `n` bytes of deterministic noise.
pub fn noise(seed: u64, n: usize) -> Vec<u8> {
    (0..n as u64)
        .map(|i| splitmix(seed ^ (i << 8)) as u8)
        .collect()
}

/// The value of entry `i` of [`sorted_tsv`].
pub fn value(i: usize) -> String {
    format!("value-{i}-{}", "x".repeat(i % 17))
}

/// `n` entries `key000000<TAB>value-0-...` in increasing key order, as a TSV text.
pub fn sorted_tsv(n: usize) -> String {
    (0..n)
        .map(|i| format!("key{i:06}\t{}\n", value(i)))
        .collect()
}

/// Well-mixed keys (16 hex digits), sorted, each with a value: LevelDB's Bloom filter reaches
/// its design rate on these.
pub fn mixed_tsv(n: u64) -> (String, Vec<String>) {
    let mut keys: Vec<String> = (0..n).map(|i| format!("{:016x}", splitmix(i))).collect();
    keys.sort();
    let text = keys.iter().map(|k| format!("{k}\tv{k}\n")).collect();
    (text, keys)
}

/// Builds `name` in `dir` from `tsv` with extra `args`, asserting success.
pub fn build(dir: &Path, name: &str, tsv: &str, args: &[&str]) -> PathBuf {
    let out = dir.join(name);
    leveltable()
        .arg("build")
        .arg(&out)
        .args(args)
        .write_stdin(tsv)
        .assert()
        .success();
    out
}

/// The names of the files in `dir`, sorted.
pub fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The process's standard error as text.
pub fn stderr_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The process's standard output as text.
pub fn stdout_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `leveltable db dump DIR ARGS...`, asserting success: its standard output.
pub fn db_dump(dir: &Path, args: &[&str]) -> String {
    let out = leveltable()
        .args(["db", "dump"])
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    stdout_of(&out)
}
