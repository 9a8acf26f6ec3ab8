//! A process whose work fails because a signal's clean-up removed its files under it ends by
//! the signal, not with the work's error: the worker calls `wait_if_ending_by_signal`
//! before reporting the error, as the `leveltable` command does.

#![cfg(all(unix, feature = "signals"))]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

use leveltable_process::{
    TemporaryDir, clean_up_on_signals, create_temporary, wait_if_ending_by_signal,
};

const CHILD: &str = "LEVELTABLE_SIGNAL_ENDING_CHILD";

/// The child: makes files in a registered temporary directory without pause until one
/// fails, then exits with code 2 unless a signal is ending the process.
fn child(parent: &str) -> ! {
    let dir = TemporaryDir::new_in(parent.as_ref(), ".work-").unwrap();
    // A clean-up that takes a while after the removal (as one removing a remote object
    // does): the work sees its files gone well before the signal thread ends the process.
    clean_up_on_signals(|| std::thread::sleep(std::time::Duration::from_millis(100))).unwrap();
    println!("ready");
    std::io::stdout().flush().unwrap();
    let mut i = 0u64;
    loop {
        // Made through the registry, as the commands make their files: once the clean-up
        // has begun, no new file appears in the directory it removes.
        let path = dir.path().join(format!("{}", i % 64));
        let written = create_temporary(&path, false, || std::fs::File::create(&path))
            .and_then(|(mut f, _guard)| f.write_all(&i.to_le_bytes()));
        if written.is_err() {
            wait_if_ending_by_signal();
            std::process::exit(2);
        }
        i += 1;
    }
}

#[test]
fn work_failing_under_a_signals_clean_up_ends_by_the_signal() {
    if let Ok(parent) = std::env::var(CHILD) {
        child(&parent);
    }
    for round in 0..5 {
        let parent = tempfile::tempdir().unwrap();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "work_failing_under_a_signals_clean_up_ends_by_the_signal",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, parent.path())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut ready = String::new();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        while !ready.contains("ready") {
            ready.clear();
            assert_ne!(stdout.read_line(&mut ready).unwrap(), 0, "round {round}");
        }
        let killed = Command::new("kill")
            .args(["-s", "TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(15), "round {round}: {status:?}");
        assert_eq!(
            std::fs::read_dir(parent.path()).unwrap().count(),
            0,
            "round {round}: the temporary directory is left"
        );
    }
}
