//! Waiting for a writer to change a database directory: on a watch of the directory where
//! the system has one (inotify on Linux), for the poll interval otherwise.
//!
//! A [`Waiter`] wakes as soon as a file in the directory is written, created, renamed into
//! it or closed after writing, or when the timeout passes, whichever comes first; the
//! timeout keeps a follower going where no event comes (a file system that reports none,
//! such as a network one, or a watch the kernel dropped). Where no watch can be set up
//! (another system, the per-user limit on watches reached, a directory the kernel refuses
//! to watch) it sleeps for the timeout: plain polling.
//!
//! A watch is in no writer's way: it creates, writes and locks nothing, and holds no file in
//! the directory open (the kernel holds the directory's inode, which a writer's deletes and
//! renames of files in it do not need).

use std::path::Path;
use std::time::Duration;

/// How a [`Waiter`] waits.
enum State {
    /// No watch tried yet.
    Unset,
    /// Waits on a watch of the directory.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    Watching(inotify::Watch),
    /// Sleeps: watching was not asked for, or could not be set up.
    Sleeping,
}

/// What ended a [`Waiter::wait`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wake {
    /// An event of the watch: something in the directory changed.
    Event,
    /// The timeout passed (or the wait only set up the watch).
    Timeout,
    /// A signal arrived: its handler may have set a flag the caller should look at.
    Interrupted,
}

/// Waits until a writer changes a directory, or a timeout passes.
pub(crate) struct Waiter {
    state: State,
    /// Whether to try a watch at all.
    watch: bool,
}

impl Waiter {
    /// A waiter that watches the directory if `watch` and the system can, and otherwise
    /// sleeps. Nothing is set up before the first [`wait`](Self::wait).
    pub(crate) fn new(watch: bool) -> Waiter {
        Waiter {
            state: State::Unset,
            watch,
        }
    }

    /// Waits until something in `dir` changes, or for `timeout`. The first call sets up
    /// the watch and returns at once, so that the caller looks again: a change between
    /// its last look and the watch's start is then not missed until the timeout. A wake
    /// may be spurious (a change the caller already saw, or a file it does not read).
    pub(crate) fn wait(&mut self, dir: &Path, timeout: Duration) -> Wake {
        match &self.state {
            State::Unset => {
                self.state = self.start(dir);
                if matches!(self.state, State::Sleeping) {
                    std::thread::sleep(timeout);
                }
                Wake::Timeout
            }
            #[cfg(any(target_os = "linux", target_os = "android"))]
            State::Watching(watch) => match watch.wait(timeout) {
                Ok(wake) => wake,
                Err(_) => {
                    // The watch failed in a way a retry would not mend: poll from now on.
                    self.state = State::Sleeping;
                    std::thread::sleep(timeout);
                    Wake::Timeout
                }
            },
            State::Sleeping => {
                std::thread::sleep(timeout);
                Wake::Timeout
            }
        }
    }

    /// Sets up the watch of `dir` if no wait has yet, without waiting: a caller that then
    /// looks, and waits only if it found nothing, misses no change made after this.
    pub(crate) fn prepare(&mut self, dir: &Path) {
        if matches!(self.state, State::Unset) {
            self.state = self.start(dir);
        }
    }

    /// Whether waits are on a watch of the directory (after the first wait).
    pub(crate) fn watching(&self) -> bool {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if let State::Watching(_) = self.state {
            return true;
        }
        false
    }

    #[cfg_attr(
        not(any(target_os = "linux", target_os = "android")),
        expect(unused_variables, reason = "only inotify needs the directory")
    )]
    fn start(&self, dir: &Path) -> State {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if self.watch
            && let Ok(watch) = inotify::Watch::new(dir)
        {
            return State::Watching(watch);
        }
        State::Sleeping
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
mod inotify {
    use std::os::fd::OwnedFd;
    use std::path::Path;
    use std::time::Duration;

    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
    use rustix::io::{self, Errno};

    use super::Wake;

    /// Bytes read from the watch at a time: 4 KiB holds about a hundred events (16 bytes
    /// each, plus a log's name padded to 16), and larger events, up to a 255-byte name,
    /// fit too.
    const EVENT_BUFFER: usize = 4096;

    /// Reads of the event buffer at most per wake-up: a writer producing events without
    /// pause cannot keep a wait draining them. Events left are read at the next wait, which
    /// then returns at once.
    const MAX_READS: usize = 16;

    /// An inotify instance watching one directory.
    pub(super) struct Watch {
        fd: OwnedFd,
    }

    impl Watch {
        /// Watches `dir` for writes to its files, files created or renamed into it, and
        /// files closed after writing.
        pub(super) fn new(dir: &Path) -> io::Result<Watch> {
            let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK)?;
            inotify::add_watch(
                &fd,
                dir,
                WatchFlags::MODIFY
                    | WatchFlags::CREATE
                    | WatchFlags::MOVED_TO
                    | WatchFlags::CLOSE_WRITE
                    | WatchFlags::ONLYDIR
                    // Not the files a writer unlinked (a log the follower still reads).
                    | WatchFlags::EXCL_UNLINK,
            )?;
            Ok(Watch { fd })
        }

        /// Waits for events or `timeout`, then reads and drops the events queued: any
        /// number of them is one wake-up.
        pub(super) fn wait(&self, timeout: Duration) -> io::Result<Wake> {
            // A timeout beyond what a timespec holds waits as long as one can.
            let timeout = Timespec::try_from(timeout).unwrap_or(Timespec {
                tv_sec: i64::MAX,
                tv_nsec: 0,
            });
            let mut fds = [PollFd::new(&self.fd, PollFlags::IN)];
            match poll(&mut fds, Some(&timeout)) {
                Ok(0) => return Ok(Wake::Timeout),
                Err(Errno::INTR) => return Ok(Wake::Interrupted),
                Ok(_) => {}
                Err(e) => return Err(e),
            }
            let mut buffer = [0u8; EVENT_BUFFER];
            for _ in 0..MAX_READS {
                match io::read(&self.fd, &mut buffer) {
                    Ok(0) | Err(Errno::AGAIN) => return Ok(Wake::Event),
                    Ok(_) | Err(Errno::INTR) => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(Wake::Event)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_directory_is_polled() {
        let work = tempfile::tempdir().unwrap();
        let mut waiter = Waiter::new(true);
        waiter.wait(&work.path().join("absent"), Duration::ZERO);
        assert!(!waiter.watching());
    }

    #[test]
    fn polling_only_sets_up_no_watch() {
        let work = tempfile::tempdir().unwrap();
        let mut waiter = Waiter::new(false);
        waiter.wait(work.path(), Duration::ZERO);
        assert!(!waiter.watching());
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn a_write_in_the_directory_ends_the_wait() {
        // Long enough never to pass here: a wait that returns was ended by an event.
        let long = Duration::from_secs(60);
        let work = tempfile::tempdir().unwrap();
        let log = work.path().join("000003.log");
        std::fs::write(&log, b"").unwrap();
        let mut waiter = Waiter::new(true);
        assert_eq!(
            waiter.wait(work.path(), long),
            Wake::Timeout,
            "only sets up"
        );
        assert!(waiter.watching());
        // Queued before the wait: the wait returns at once, whenever it starts.
        let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        std::io::Write::write_all(&mut file, b"a record").unwrap();
        assert_eq!(waiter.wait(work.path(), long), Wake::Event);
        // Many events make one wake-up, read in bounded pieces; what is left wakes the
        // next wait.
        for i in 0..2000 {
            std::fs::write(work.path().join(format!("{i:06}.ldb")), b"t").unwrap();
        }
        assert_eq!(waiter.wait(work.path(), long), Wake::Event);
        assert_eq!(waiter.wait(work.path(), long), Wake::Event);
        // Reading is no event: with the queue drained, the wait times out.
        let mut drained = 0;
        while waiter.wait(work.path(), Duration::ZERO) == Wake::Event {
            drained += 1;
            assert!(drained < 1000, "the queue does not drain");
        }
        std::fs::read(&log).unwrap();
        assert_eq!(
            waiter.wait(work.path(), Duration::from_millis(1)),
            Wake::Timeout
        );
    }
}
