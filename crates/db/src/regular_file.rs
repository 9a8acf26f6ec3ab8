//! A database's own files are regular files. A FIFO, a device, a socket, a directory or a
//! symbolic link where one should be is refused with an error saying what is there, before
//! anything waits on it (an open of a FIFO waits for its other end), follows it (a link
//! leads out of the directory) or writes to it.

use std::fs::{self, File, Metadata, OpenOptions};
use std::io;
use std::path::Path;

use leveltable_process::describe_file_type;

/// Adds to `options` `O_NONBLOCK`, so that the open of a FIFO does not wait for its other
/// end (for reading it opens at once, for writing without a reader it fails at once), and
/// with `no_follow`, `O_NOFOLLOW`, so that a final symbolic link is an error, not followed.
pub(crate) fn without_waiting(options: &mut OpenOptions, no_follow: bool) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let follow = if no_follow { libc::O_NOFOLLOW } else { 0 };
        options.custom_flags(libc::O_NONBLOCK | follow);
    }
    #[cfg(not(unix))]
    let _ = no_follow;
    options
}

/// Refuses `metadata` unless it is of a regular file, saying what it is: of kind
/// [`io::ErrorKind::IsADirectory`] for a directory, [`io::ErrorKind::InvalidInput`] for the
/// rest (`a FIFO, not a regular file`).
pub(crate) fn check_regular(metadata: &Metadata) -> io::Result<()> {
    let t = metadata.file_type();
    if t.is_file() {
        return Ok(());
    }
    if t.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "a directory, not a regular file",
        ));
    }
    if t.is_symlink() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a symbolic link, not a regular file: refused, not followed",
        ));
    }
    let what = describe_file_type(t);
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{what}, not a regular file"),
    ))
}

/// `e`, from opening `path` [`without_waiting`], said in words when something other than a
/// regular file stands at `path`: a symbolic link (whose open with `O_NOFOLLOW` reports only
/// "too many levels of symbolic links"), a FIFO without a reader (whose open for writing
/// reports "no such device or address"), a directory, a device or a socket.
pub(crate) fn explain_open(path: &Path, e: io::Error) -> io::Error {
    match fs::symlink_metadata(path) {
        Ok(m) => check_regular(&m).err().unwrap_or(e),
        Err(_) => e,
    }
}

/// Creates `path` as a new, empty regular file open for writing (and for reading if
/// `read`), as LevelDB creates a database's files, never following a symbolic link and never
/// waiting on a FIFO. A regular file already at `path` (left by a process that died, which
/// LevelDB would empty) is replaced, not emptied: another name linked to it (a hard link,
/// perhaps outside the directory) keeps its contents. Anything else at `path` is refused
/// and left in place. The handle is checked to be of a regular file, and blocks again as
/// usual (`O_NONBLOCK` cleared).
///
/// # Errors
/// [`io::ErrorKind::IsADirectory`] for a directory at `path`,
/// [`io::ErrorKind::InvalidInput`] for a symbolic link, FIFO, device or socket, each saying
/// what is there; whatever creating the file reports.
pub(crate) fn create_regular(path: &Path, read: bool) -> io::Result<File> {
    let create = || {
        let mut options = OpenOptions::new();
        options.read(read).write(true).create_new(true);
        without_waiting(&mut options, true).open(path)
    };
    let file = match create() {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            match fs::symlink_metadata(path) {
                Ok(m) if m.is_file() => {}
                Ok(m) => return Err(check_regular(&m).err().unwrap_or(e)),
                Err(_) => return Err(e),
            }
            // An unlink removes the name, never what a link points to.
            fs::remove_file(path)?;
            create()
        }
        other => other,
    }
    .map_err(|e| explain_open(path, e))?;
    check_regular(&file.metadata()?)?;
    blocking(&file)?;
    Ok(file)
}

/// Clears `O_NONBLOCK` on `file`. (It does nothing to a regular file on Linux; cleared all
/// the same, so that writes behave as on any file opened without it.)
#[cfg(unix)]
fn blocking(file: &File) -> io::Result<()> {
    use rustix::fs::{OFlags, fcntl_getfl, fcntl_setfl};
    let flags = fcntl_getfl(file)?;
    if flags.contains(OFlags::NONBLOCK) {
        fcntl_setfl(file, flags - OFlags::NONBLOCK)?;
    }
    Ok(())
}

#[cfg(not(unix))]
fn blocking(_: &File) -> io::Result<()> {
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::io::Write;
    use std::process::Command;

    fn mkfifo(path: &Path) {
        let status = Command::new("mkfifo").arg(path).status().unwrap();
        assert!(status.success(), "mkfifo {}", path.display());
    }

    /// The error of creating `path`, which must say `what`, with whatever stood at `path`
    /// still there.
    fn refused(path: &Path, what: &str) {
        let before = fs::symlink_metadata(path).unwrap().file_type();
        let e = create_regular(path, false).unwrap_err();
        assert!(e.to_string().contains(what), "{e}");
        assert_eq!(fs::symlink_metadata(path).unwrap().file_type(), before);
    }

    #[test]
    fn a_new_file_is_created_empty_and_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000003.log");
        let mut f = create_regular(&path, true).unwrap();
        f.write_all(b"abc").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"abc");
        let flags = rustix::fs::fcntl_getfl(&f).unwrap();
        assert!(!flags.contains(rustix::fs::OFlags::NONBLOCK), "{flags:?}");
    }

    /// A regular file there is replaced: its other names keep their contents.
    #[test]
    fn a_regular_file_there_is_replaced_not_emptied() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        fs::write(&outside, b"kept").unwrap();
        let path = dir.path().join("000005.ldb");
        fs::hard_link(&outside, &path).unwrap();
        let mut f = create_regular(&path, false).unwrap();
        f.write_all(b"new").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new");
        assert_eq!(fs::read(&outside).unwrap(), b"kept");
    }

    #[test]
    fn a_fifo_is_refused_at_once_with_or_without_a_reader() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000003.log");
        mkfifo(&path);
        refused(&path, "a FIFO, not a regular file");
        // With a reader, an open for writing would succeed.
        let mut options = OpenOptions::new();
        let _reader = without_waiting(options.read(true), true)
            .open(&path)
            .unwrap();
        refused(&path, "a FIFO, not a regular file");
    }

    #[test]
    fn a_symbolic_link_is_refused_and_its_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        let path = dir.path().join("MANIFEST-000002");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        refused(&path, "a symbolic link, not a regular file");
        assert!(!target.exists(), "a dangling link's target was created");
        fs::write(&target, b"kept").unwrap();
        refused(&path, "a symbolic link, not a regular file");
        assert_eq!(fs::read(&target).unwrap(), b"kept");
    }

    #[test]
    fn a_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000002.dbtmp");
        fs::create_dir(&path).unwrap();
        let e = create_regular(&path, false).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::IsADirectory, "{e}");
        assert!(
            e.to_string().contains("a directory, not a regular file"),
            "{e}"
        );
    }
}
