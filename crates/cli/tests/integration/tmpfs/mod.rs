//! A tmpfs for the tests that need a small or separate file system (root only).

#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs mounted for a test, unmounted when dropped (also when the test fails).
pub struct Tmpfs(pub PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `size` (`8m`) at `dir`, or `None` (saying so) when not root.
    pub fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        let uid = std::os::unix::fs::MetadataExt::uid(&fs::metadata("/proc/self").ok()?);
        if uid != 0 {
            println!("skipping: needs root to mount a tmpfs");
            return None;
        }
        fs::create_dir_all(dir).unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .unwrap();
        assert!(status.success(), "mount a tmpfs at {}", dir.display());
        Some(Tmpfs(dir.to_owned()))
    }

    pub fn resize(&self, size: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .unwrap();
        assert!(status.success());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}
