//! `leveltable db watch` on a live database makes no write-class system call on the
//! directory: under strace, while a writer commits batches and switches logs, the follower
//! opens nothing for writing, creates, deletes, renames, locks and writes nothing there
//! (it waits on an inotify watch of the directory, which is none of these).

#![cfg(target_os = "linux")]

use std::process::{Command, Stdio};
use std::time::Duration;

use leveltable_db::{WritableDb, WritableOptions, WriteOptions};

/// Whether strace can trace here; without it, the test is skipped with one line (or fails,
/// with `LEVELTABLE_REQUIRE_SERVERS=1`, as CI runs it).
fn strace_runs() -> bool {
    crate::common::tool_runs(
        "strace",
        &["-f", "-qq", "-o", "/dev/null", "true"],
        "strace is not installed (or cannot trace here)",
    )
}

/// The system calls that change a directory or a file in it, or lock one.
const CHANGING: &[&str] = &[
    "unlink",
    "unlinkat",
    "rename",
    "renameat",
    "renameat2",
    "mkdir",
    "mkdirat",
    "rmdir",
    "link",
    "linkat",
    "symlink",
    "symlinkat",
    "truncate",
    "ftruncate",
    "fallocate",
    "chmod",
    "fchmod",
    "fchmodat",
    "utimensat",
    "creat",
    "flock",
    "write",
    "pwrite64",
    "writev",
    "pwritev",
    "pwritev2",
    "fsync",
    "fdatasync",
    "sync_file_range",
];

/// The lines of an `strace -f -y` trace that are write-class calls on `dir`: an open for
/// writing or creating, a call that changes a name or a file, a lock.
fn violations(trace: &str, dir: &str) -> Vec<String> {
    trace
        .lines()
        // A path argument in the directory, or a descriptor of a file in it (`-y`).
        .filter(|line| {
            [
                format!("\"{dir}/"),
                format!("<{dir}/"),
                format!("\"{dir}\""),
                format!("<{dir}>"),
            ]
            .iter()
            .any(|p| line.contains(p.as_str()))
        })
        .filter(|line| {
            let call = line
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.split('(').next())
                .unwrap_or("");
            let opens = matches!(call, "open" | "openat" | "openat2")
                && ["O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"]
                    .iter()
                    .any(|flag| line.contains(flag));
            let locks = call == "fcntl"
                && ["F_SETLK", "F_SETLKW", "F_OFD_SETLK", "F_OFD_SETLKW"]
                    .iter()
                    .any(|op| line.contains(op));
            // A mapping is a write only if it is shared and writable.
            let maps = call == "mmap" && line.contains("PROT_WRITE") && line.contains("MAP_SHARED");
            opens || locks || maps || CHANGING.contains(&call)
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_detector_flags_writes_and_passes_reads() {
    let dir = "/d/db";
    let trace = "\
12 openat(AT_FDCWD</>, \"/d/db/CURRENT\", O_RDONLY|O_CLOEXEC) = 3</d/db/CURRENT>
12 read(3</d/db/CURRENT>, \"MANIFEST-000002\\n\", 8192) = 16
12 openat(AT_FDCWD</>, \"/d/db/LOCK\", O_RDWR|O_CREAT|O_CLOEXEC, 0644) = 4</d/db/LOCK>
12 fcntl(4</d/db/LOCK>, F_SETLK, {l_type=F_WRLCK, l_whence=SEEK_SET, l_start=0, l_len=0}) = 0
12 write(5</d/db/000005.log>, \"x\", 1) = 1
12 unlinkat(AT_FDCWD</>, \"/d/db/000003.log\", 0) = 0
12 write(1<pipe:[1]>, \"{}\", 2) = 2
12 write(2<pipe:[2]>, \"/d/db: sequences 1..2 are no longer in any log\", 44) = 44
";
    let found = violations(trace, dir);
    assert_eq!(found.len(), 4, "{found:#?}");
    assert!(found.iter().all(|l| !l.contains("O_RDONLY")));
}

#[test]
fn watch_makes_no_write_class_call_on_the_directory() {
    if !strace_runs() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().canonicalize().unwrap().join("db");
    let db = WritableDb::open(
        &dir,
        WritableOptions::default()
            .create_if_missing(true)
            .write_buffer_size(128 << 10),
    )
    .unwrap();
    db.put(b"before", b"the watch", WriteOptions::default())
        .unwrap();
    let trace_file = work.path().join("trace");
    let child = Command::new("strace")
        .args([
            "-f",
            "-qq",
            "-y",
            "-s",
            "64",
            "-e",
            "trace=%file,%desc,%memory",
            "-o",
        ])
        .arg(&trace_file)
        .args(["timeout", "--preserve-status", "-s", "INT", "2.5"])
        .arg(env!("CARGO_BIN_EXE_leveltable"))
        .args(["db", "watch", "--snapshot", "--poll-ms", "5"])
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The writer commits batches and switches logs while the watch runs.
    std::thread::sleep(Duration::from_millis(300));
    for i in 0..400u32 {
        let value = vec![b'v'; 200 + (i % 7) as usize * 100];
        db.put(
            format!("key{i:04}").as_bytes(),
            &value,
            WriteOptions::default(),
        )
        .unwrap();
        if i % 2 == 0 {
            std::thread::sleep(Duration::from_millis(4));
        }
    }
    let out = child.wait_with_output().unwrap();
    // Exit 0 at the interrupt; 2 if strace slowed the watch so much that a log it needed
    // was flushed and deleted first (a gap it names): either way it read the live logs.
    assert!(
        matches!(out.status.code(), Some(0 | 2)),
        "watch under strace: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        printed.contains("\"key0"),
        "the watch printed no write: {printed}"
    );
    let trace = std::fs::read_to_string(&trace_file).unwrap();
    let dir_text = dir.to_str().unwrap();
    assert!(
        trace
            .lines()
            .any(|l| l.contains(dir_text) && l.contains(".log") && l.contains("read(")),
        "the trace shows no read of a log: it proves nothing"
    );
    // The watch waited on an inotify watch of the directory, which is no write.
    assert!(
        trace
            .lines()
            .any(|l| l.contains("inotify_add_watch(") && l.contains(&format!("\"{dir_text}\""))),
        "the trace shows no inotify watch of the directory"
    );
    let found = violations(&trace, dir_text);
    assert!(
        found.is_empty(),
        "write-class calls on {dir_text}:\n{}",
        found.join("\n")
    );
    drop(db);
}
