//! Every numeric option at its extremes (0, 1, max − 1, max, and max + 1, which does not
//! parse): the command never panics (exit code 101), and never loses data silently — it
//! either writes a table holding every input entry or fails with `error:` and writes
//! nothing.

use crate::common;

use std::path::Path;

use common::*;
use proptest::prelude::*;

/// The numeric options of every command: (command, option, the type's maximum, options the
/// option needs). `build` is the only command with numeric options.
const NUMERIC: [(&str, &str, u128, &[&str]); 5] = [
    ("build", "--block-size", usize::MAX as u128, &[]),
    ("build", "--restart-interval", u32::MAX as u128, &[]),
    ("build", "--bloom-bits", u32::MAX as u128, &[]),
    (
        "build",
        "--extra-bits",
        u32::MAX as u128,
        &["--extra-filter", "local-bloom"],
    ),
    ("build", "--max-line", usize::MAX as u128, &[]),
];

/// The table above is complete: every option of every command whose value is a number
/// (`<N>` or `<BYTES>` in its help) is in it.
#[test]
fn every_numeric_option_is_covered() {
    let mut found = Vec::new();
    for command in ["build", "get", "dump", "verify", "stats", "audit"] {
        let help = leveltable().arg(command).arg("--help").output().unwrap();
        for line in stdout_of(&help).lines() {
            let line = line.trim_start();
            if !(line.ends_with(" <N>") || line.ends_with(" <BYTES>")) {
                continue;
            }
            let option = line.split_whitespace().find(|w| w.starts_with("--"));
            found.push((command, option.unwrap().to_owned()));
        }
    }
    let covered: Vec<(&str, String)> = NUMERIC
        .iter()
        .map(|&(command, option, _, _)| (command, option.to_owned()))
        .collect();
    assert_eq!(found, covered);
}

fn extremes(max: u128) -> [u128; 5] {
    [0, 1, max - 1, max, max + 1]
}

const ENTRIES: usize = 100;

/// Runs `build` with `flags` on [`ENTRIES`] lines in a fresh directory and checks the
/// outcome: no panic, and a table with every entry or an error and no file.
fn check_build(flags: &[String]) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.ldb");
    let input = sorted_tsv(ENTRIES);
    let result = leveltable()
        .arg("build")
        .arg(&out)
        .args(flags)
        .write_stdin(input.clone())
        .output()
        .unwrap();
    let stderr = stderr_of(&result);
    match result.status.code() {
        Some(0) => assert_complete(&out, &input, flags),
        Some(2) => {
            assert!(stderr.starts_with("error:"), "{flags:?}: {stderr}");
            assert_eq!(files_in(dir.path()), Vec::<String>::new(), "{flags:?}");
        }
        other => panic!("{flags:?}: exit code {other:?}: {stderr}"),
    }
}

fn assert_complete(out: &Path, input: &str, flags: &[String]) {
    let dumped = leveltable().arg("dump").arg(out).output().unwrap();
    assert_eq!(dumped.status.code(), Some(0), "{flags:?}");
    assert_eq!(stdout_of(&dumped), input, "{flags:?}: entries lost");
}

#[test]
fn each_numeric_option_at_each_extreme() {
    for (command, option, max, needs) in NUMERIC {
        assert_eq!(command, "build");
        for value in extremes(max) {
            let mut flags: Vec<String> = needs.iter().map(|s| s.to_string()).collect();
            flags.push(option.to_owned());
            flags.push(value.to_string());
            check_build(&flags);
        }
    }
}

/// The case that lost every entry: a line limit of usize::MAX wrapped to 0 in the limit
/// arithmetic, so nothing was read and an empty table was written with exit code 0.
#[test]
fn the_largest_line_limit_reads_every_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.ldb");
    let input = sorted_tsv(ENTRIES);
    leveltable()
        .arg("build")
        .arg("--max-line")
        .arg(usize::MAX.to_string())
        .arg(&out)
        .write_stdin(input.clone())
        .assert()
        .success();
    assert_complete(&out, &input, &[]);
}

/// Other commands take no numeric options; a number where a path or key goes is no panic.
#[test]
fn other_commands_take_extreme_numbers_as_words() {
    let dir = tempfile::tempdir().unwrap();
    let table = build(dir.path(), "t.ldb", &sorted_tsv(10), &["--quiet"]);
    for value in ["0", "18446744073709551615", "-1"] {
        for args in [
            vec![
                "get".to_owned(),
                table.display().to_string(),
                value.to_owned(),
            ],
            vec!["dump".to_owned(), value.to_owned()],
            vec!["verify".to_owned(), value.to_owned()],
            vec!["stats".to_owned(), value.to_owned()],
            vec!["audit".to_owned(), value.to_owned()],
        ] {
            let code = leveltable().args(&args).output().unwrap().status.code();
            assert!(matches!(code, Some(0..=2)), "{args:?}: {code:?}");
        }
    }
}

fn extreme_flag() -> impl Strategy<Value = Vec<String>> {
    (0..NUMERIC.len(), 0..5usize).prop_map(|(option, which)| {
        let (_, name, max, needs) = NUMERIC[option];
        let mut flags: Vec<String> = needs.iter().map(|s| s.to_string()).collect();
        flags.push(name.to_owned());
        flags.push(extremes(max)[which].to_string());
        flags
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Several options at their extremes together, with or without sorting and hex.
    #[test]
    fn extreme_options_together(
        picked in proptest::collection::vec(extreme_flag(), 1..4),
        sort in any::<bool>(),
    ) {
        let mut flags: Vec<String> = picked.into_iter().flatten().collect();
        if sort {
            flags.push("--sort".to_owned());
        }
        check_build(&flags);
    }
}

/// The numeric options of `db build` and `db build-part` (the same options): (option, the
/// type's maximum, options the option needs).
const DB_NUMERIC: [(&str, u128, &[&str]); 8] = [
    ("--block-size", usize::MAX as u128, &[]),
    ("--restart-interval", u32::MAX as u128, &[]),
    ("--bloom-bits", u32::MAX as u128, &[]),
    (
        "--extra-bits",
        u32::MAX as u128,
        &["--extra-filter", "local-bloom"],
    ),
    ("--max-file-size", u64::MAX as u128, &[]),
    ("--threads", u32::MAX as u128, &[]),
    ("--memory", u64::MAX as u128, &["--sort"]),
    ("--max-line", usize::MAX as u128, &[]),
];

/// The table above is complete for both `db` build commands.
#[test]
fn every_numeric_db_option_is_covered() {
    let covered: Vec<String> = DB_NUMERIC.iter().map(|(o, _, _)| o.to_string()).collect();
    for command in ["build", "build-part"] {
        let help = leveltable()
            .args(["db", command, "--help"])
            .output()
            .unwrap();
        let found: Vec<String> = stdout_of(&help)
            .lines()
            .map(str::trim_start)
            .filter(|l| l.ends_with(" <N>") || l.ends_with(" <BYTES>"))
            .filter_map(|l| l.split_whitespace().find(|w| w.starts_with("--")))
            .map(str::to_owned)
            .collect();
        assert_eq!(found, covered, "db {command}");
    }
}

/// `db build` with every numeric option at each extreme: no panic, and either a database
/// holding every input entry or `error:` with nothing left behind.
#[test]
fn each_numeric_db_option_at_each_extreme() {
    let input = sorted_tsv(ENTRIES);
    for (option, max, needs) in DB_NUMERIC {
        for value in extremes(max) {
            let dir = tempfile::tempdir().unwrap();
            let db = dir.path().join("db");
            let mut flags: Vec<String> = needs.iter().map(|s| s.to_string()).collect();
            flags.push(option.to_owned());
            flags.push(value.to_string());
            let result = leveltable()
                .args(["db", "build", "-q"])
                .arg(&db)
                .args(&flags)
                .write_stdin(input.clone())
                .output()
                .unwrap();
            let stderr = stderr_of(&result);
            match result.status.code() {
                Some(0) => {
                    let dumped = leveltable().args(["db", "dump"]).arg(&db).output().unwrap();
                    assert_eq!(stdout_of(&dumped), input, "{flags:?}: entries lost");
                }
                Some(2) => {
                    assert!(stderr.starts_with("error:"), "{flags:?}: {stderr}");
                    assert_eq!(files_in(dir.path()), Vec::<String>::new(), "{flags:?}");
                }
                other => panic!("{flags:?}: exit code {other:?}: {stderr}"),
            }
        }
    }
}
