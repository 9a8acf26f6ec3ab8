//! Files, for messages and for durability.

use std::fs;
use std::io;
use std::path::Path;

/// What kind of thing a file type is, for messages: `a symbolic link`, `a FIFO`, ...
pub fn describe_file_type(file_type: fs::FileType) -> &'static str {
    if file_type.is_file() {
        return "a regular file";
    }
    if file_type.is_dir() {
        return "a directory";
    }
    if file_type.is_symlink() {
        return "a symbolic link";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO";
        }
        if file_type.is_char_device() {
            return "a character device";
        }
        if file_type.is_block_device() {
            return "a block device";
        }
        if file_type.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}

/// Makes a rename in `dir` durable: syncs the directory, so that the names in it survive a
/// crash.
///
/// # Errors
/// Whatever opening or syncing the directory reports.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        fs::File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        // Windows cannot open a directory as a file; NTFS journals the rename itself.
        let _ = dir;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_what_stands_at_a_path() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        fs::write(&file, b"x").unwrap();
        let kind = |p: &Path| describe_file_type(fs::symlink_metadata(p).unwrap().file_type());
        assert_eq!(kind(&file), "a regular file");
        assert_eq!(kind(dir.path()), "a directory");
        #[cfg(unix)]
        {
            let link = dir.path().join("l");
            std::os::unix::fs::symlink(&file, &link).unwrap();
            assert_eq!(kind(&link), "a symbolic link");
            assert_eq!(kind(Path::new("/dev/null")), "a character device");
        }
        sync_dir(dir.path()).unwrap();
        assert!(sync_dir(&dir.path().join("missing")).is_err() || cfg!(not(unix)));
    }
}
