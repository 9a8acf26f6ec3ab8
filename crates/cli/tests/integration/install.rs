//! What installing the command gives a shell user: `leveltable completions SHELL` (a script
//! each shell loads, completing the subcommands) and `leveltable man` (a manual page that
//! `man` renders, holding every subcommand).

use crate::common;

use std::io::Write as _;
use std::process::{Command, Stdio};

use common::{leveltable, stderr_of, stdout_of};

/// The script `leveltable completions SHELL` prints.
fn completions(shell: &str) -> String {
    let output = leveltable().args(["completions", shell]).output().unwrap();
    assert!(output.status.success(), "{}", stderr_of(&output));
    assert!(output.stderr.is_empty(), "{}", stderr_of(&output));
    stdout_of(&output)
}

/// What bash's completion function offers for the words `line` (the last one being
/// completed), with the script loaded in a shell that read no start-up file.
fn bash_complete(script: &std::path::Path, line: &[&str]) -> Vec<String> {
    let words: Vec<String> = line.iter().map(|w| format!("'{w}'")).collect();
    let cword = line.len() - 1;
    let program = format!(
        "source '{}' || exit 3\n\
         COMP_WORDS=({})\nCOMP_CWORD={cword}\n\
         _leveltable leveltable '{}' '{}' || exit 4\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        words.join(" "),
        line[cword],
        line[cword - 1],
    );
    let output = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &program])
        .stdin(Stdio::null())
        .output()
        .expect("bash runs");
    assert!(output.status.success(), "{}", stderr_of(&output));
    assert!(output.stderr.is_empty(), "{}", stderr_of(&output));
    stdout_of(&output).lines().map(str::to_owned).collect()
}

#[test]
fn bash_completion_loads_in_a_clean_shell_and_completes_subcommands() {
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("leveltable.bash");
    std::fs::write(&script, completions("bash")).unwrap();

    let mut offered = bash_complete(&script, &["leveltable", "d"]);
    offered.sort();
    assert_eq!(offered, ["db", "dump"]);
    let offered = bash_complete(&script, &["leveltable", "db", "v"]);
    assert_eq!(offered, ["verify"]);
    let offered = bash_complete(&script, &["leveltable", "c"]);
    assert!(offered.contains(&"completions".to_owned()), "{offered:?}");
    assert!(offered.contains(&"chromium".to_owned()), "{offered:?}");
    // The options of a subcommand, the new --quiet among them.
    let offered = bash_complete(&script, &["leveltable", "db", "verify", "--q"]);
    assert_eq!(offered, ["--quiet"]);
}

#[test]
fn every_shell_gets_a_script_naming_the_subcommands() {
    for shell in ["zsh", "fish", "powershell", "elvish"] {
        let script = completions(shell);
        for word in [
            "build",
            "dump",
            "verify",
            "build-part",
            "commit",
            "put",
            "delete",
            "write",
            "compact",
            "completions",
            "man",
        ] {
            assert!(script.contains(word), "{shell}: no {word}");
        }
    }
    // The bash script registers its function for the command.
    assert!(completions("bash").contains("complete -F _leveltable"));
}

#[test]
fn an_unknown_shell_is_a_usage_error() {
    let output = leveltable().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    let err = stderr_of(&output);
    assert!(err.starts_with("error: invalid value 'tcsh'"), "{err}");
    assert!(err.contains("bash") && err.contains("powershell"), "{err}");
}

/// Whether `man` can run here: installed, or installed now with apt-get (as root); `false`
/// (with one printed line) when it cannot and the environment allows skipping.
fn man_available() -> bool {
    let runs = || {
        Command::new("man")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if runs() {
        return true;
    }
    let root = std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false);
    if root {
        let apt = |args: &[&str]| {
            Command::new("apt-get")
                .args(args)
                .env("DEBIAN_FRONTEND", "noninteractive")
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        let installed = apt(&["install", "-y", "man-db"])
            || (apt(&["update"]) && apt(&["install", "-y", "man-db"]));
        if installed && runs() {
            return true;
        }
    }
    let why = if root {
        "man is not installed and apt-get could not install man-db"
    } else {
        "man is not installed (and installing man-db needs root)"
    };
    if std::env::var("LEVELTABLE_REQUIRE_SERVERS").as_deref() == Ok("1") {
        panic!("{why}, and LEVELTABLE_REQUIRE_SERVERS=1");
    }
    println!("skipped: {why}");
    false
}

#[test]
fn the_manual_page_renders_with_man_and_holds_every_subcommand() {
    let output = leveltable().arg("man").output().unwrap();
    assert!(output.status.success(), "{}", stderr_of(&output));
    assert!(output.stderr.is_empty(), "{}", stderr_of(&output));
    let roff = stdout_of(&output);
    // The page of the command first, then those of the subcommands.
    assert!(roff.find(".TH leveltable 1 ") < roff.find(".TH leveltable-build 1 "));
    for page in [
        "leveltable",
        "leveltable-db",
        "leveltable-db-verify",
        "leveltable-db-commit",
        "leveltable-db-put",
        "leveltable-db-delete",
        "leveltable-db-write",
        "leveltable-db-compact",
        "leveltable-man",
    ] {
        assert!(roff.contains(&format!(".TH {page} 1 ")), "no page {page}");
    }
    if !man_available() {
        return;
    }
    let mut man = Command::new("man")
        .args(["-l", "-"])
        .env("MANWIDTH", "100")
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    man.stdin
        .take()
        .unwrap()
        .write_all(roff.as_bytes())
        .unwrap();
    let rendered = man.wait_with_output().unwrap();
    assert!(rendered.status.success(), "{}", stderr_of(&rendered));
    let text = stdout_of(&rendered);
    // Justified lines: words apart by one space or more.
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    // Rendered, not the roff source: the sections are headings, no macro is left.
    assert!(!text.contains(".TH") && !text.contains(".SH"), "{text}");
    for heading in ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "SUBCOMMANDS"] {
        assert!(
            text.lines().any(|l| l == heading),
            "no {heading} in\n{text}"
        );
    }
    for synopsis in [
        "leveltable build",
        "leveltable db verify",
        "leveltable db commit",
        "leveltable db dump",
        "leveltable db write",
        "leveltable db compact",
        "leveltable completions",
        "leveltable chromium indexeddb",
    ] {
        assert!(words.contains(synopsis), "no {synopsis:?} in\n{text}");
    }
    assert!(words.contains("Check every block of every table"), "{text}");
}
