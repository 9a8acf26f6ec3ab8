//! What a power loss at one point of a run leaves in a directory.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};

use crate::trace::{Event, Trace};

/// The page size the torn variant cuts at.
pub const PAGE: usize = 4096;

/// How much of what was not made durable survives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// Only what was synced: each file's synced bytes, each name as of its directory's last
    /// sync.
    Durable,
    /// As [`Durable`](Self::Durable), plus a prefix (of a length drawn from `seed`) of each
    /// file's unsynced tail.
    Tail {
        /// Draws the lengths.
        seed: u64,
    },
    /// Each unsynced tail cut at a page boundary drawn from `seed`, the file keeping its
    /// full length with zeros after the cut (the size reached the disk, the data did not).
    Torn {
        /// Draws the cuts.
        seed: u64,
    },
    /// Each name operation since its directory's last sync durable or not, drawn from
    /// `seed` (applied in their order), and tails as in [`Tail`](Self::Tail).
    Reordered {
        /// Draws the operations kept and the tails.
        seed: u64,
    },
}

impl Variant {
    fn seed(self) -> Option<u64> {
        match self {
            Variant::Durable => None,
            Variant::Tail { seed } | Variant::Torn { seed } | Variant::Reordered { seed } => {
                Some(seed)
            }
        }
    }
}

/// A directory as a power loss left it: file name to contents.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Image {
    /// The files, by name.
    pub files: BTreeMap<String, Vec<u8>>,
}

impl Image {
    /// Writes the files into `dir` (created if missing).
    ///
    /// # Errors
    /// The system's.
    pub fn write_to(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)?;
        for (name, data) in &self.files {
            std::fs::write(dir.join(name), data)?;
        }
        Ok(())
    }
}

/// A small deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..=n`.
    fn upto(&mut self, n: usize) -> usize {
        (self.next() % (n as u64 + 1)) as usize
    }
}

/// A name operation not yet made durable by a directory sync.
#[derive(Debug, Clone)]
enum NameOp {
    Link { path: PathBuf, inode: usize },
    Rename { from: PathBuf, to: PathBuf },
    Unlink { path: PathBuf },
    MakeDir { path: PathBuf },
}

/// The names of files (to their inodes) and the directories made during the run.
#[derive(Debug, Clone, Default)]
struct Names {
    files: BTreeMap<PathBuf, usize>,
    dirs: BTreeSet<PathBuf>,
}

impl Names {
    fn apply(&mut self, op: &NameOp) {
        match op {
            NameOp::Link { path, inode } => {
                self.files.insert(path.clone(), *inode);
            }
            NameOp::Rename { from, to } => {
                if let Some(inode) = self.files.remove(from) {
                    self.files.insert(to.clone(), inode);
                }
            }
            NameOp::Unlink { path } => {
                self.files.remove(path);
            }
            NameOp::MakeDir { path } => {
                self.dirs.insert(path.clone());
            }
        }
    }
}

fn op_dir(op: &NameOp) -> Option<&Path> {
    match op {
        NameOp::Link { path, .. } | NameOp::Unlink { path } | NameOp::MakeDir { path } => {
            path.parent()
        }
        NameOp::Rename { to, .. } => to.parent(),
    }
}

/// The state a power loss leaves: names, and each file's length and synced length.
struct Survivors {
    names: Names,
    /// Directories the run made (a directory it did not make is taken to survive).
    made_dirs: BTreeSet<PathBuf>,
    len: Vec<usize>,
    synced: Vec<usize>,
}

impl Trace {
    fn survivors(&self, at: usize, rng: &mut Rng, reorder: bool) -> Survivors {
        let mut len = vec![0usize; self.data.len()];
        let mut synced = vec![0usize; self.data.len()];
        // What the names are while the run goes on, to find what a link links.
        let mut live = Names::default();
        let mut durable = Names::default();
        let mut made_dirs = BTreeSet::new();
        let mut pending: Vec<NameOp> = Vec::new();
        for event in &self.events[..at] {
            let op = match event {
                Event::Create { path, inode } => Some(NameOp::Link {
                    path: path.clone(),
                    inode: *inode,
                }),
                Event::Link { from, to } => live.files.get(from).map(|&inode| NameOp::Link {
                    path: to.clone(),
                    inode,
                }),
                Event::Rename { from, to } => Some(NameOp::Rename {
                    from: from.clone(),
                    to: to.clone(),
                }),
                Event::Remove { path } => Some(NameOp::Unlink { path: path.clone() }),
                Event::CreateDir { path } => {
                    made_dirs.insert(path.clone());
                    Some(NameOp::MakeDir { path: path.clone() })
                }
                Event::Write { inode, len: l } => {
                    len[*inode] = *l;
                    None
                }
                Event::Sync { inode, len: l } => {
                    synced[*inode] = synced[*inode].max(*l);
                    None
                }
                Event::SyncDir { dir } => {
                    // Every pending operation in `dir` becomes durable, in order; the others
                    // stay pending.
                    let mut rest = Vec::new();
                    for op in pending.drain(..) {
                        if op_dir(&op) == Some(dir.as_path()) {
                            durable.apply(&op);
                        } else {
                            rest.push(op);
                        }
                    }
                    pending = rest;
                    None
                }
                Event::Mark(_) => None,
            };
            if let Some(op) = op {
                live.apply(&op);
                pending.push(op);
            }
        }
        let mut names = durable;
        if reorder {
            for op in &pending {
                if rng.next() & 1 == 1 {
                    names.apply(op);
                }
            }
        }
        Survivors {
            names,
            made_dirs,
            len,
            synced,
        }
    }

    /// The directory as a power loss just before event `at` (`len()`: after the last)
    /// would leave it, under `variant`. Names are the files' names in their directory (a
    /// run that writes one directory; see [`image_in`](Self::image_in) for more).
    ///
    /// # Panics
    /// If `at > len()`.
    pub fn image(&self, at: usize, variant: Variant) -> Image {
        self.image_where(at, variant, |_| true)
    }

    /// The directory `dir` as a power loss just before event `at` would leave it, under
    /// `variant`, or `None` if the run made `dir` and the loss undoes that (the name of a
    /// directory the run made survives once its parent is synced; one it did not make is
    /// taken to be there). A file linked into `dir` keeps the bytes synced under any name.
    ///
    /// # Panics
    /// If `at > len()`.
    pub fn image_in(&self, dir: &Path, at: usize, variant: Variant) -> Option<Image> {
        let mut rng = Rng(variant.seed().unwrap_or(0));
        let reorder = matches!(variant, Variant::Reordered { .. });
        let survivors = self.survivors(at, &mut rng, reorder);
        let exists = dir
            .ancestors()
            .all(|d| !survivors.made_dirs.contains(d) || survivors.names.dirs.contains(d));
        exists.then(|| self.contents(&survivors, &mut rng, variant, |p| p.parent() == Some(dir)))
    }

    fn image_where(&self, at: usize, variant: Variant, keep: impl Fn(&Path) -> bool) -> Image {
        let mut rng = Rng(variant.seed().unwrap_or(0));
        let reorder = matches!(variant, Variant::Reordered { .. });
        let survivors = self.survivors(at, &mut rng, reorder);
        self.contents(&survivors, &mut rng, variant, keep)
    }

    /// The files of `survivors` whose path `keep`s, with what survives of their bytes.
    fn contents(
        &self,
        survivors: &Survivors,
        rng: &mut Rng,
        variant: Variant,
        keep: impl Fn(&Path) -> bool,
    ) -> Image {
        let mut image = Image::default();
        for (path, &inode) in &survivors.names.files {
            if !keep(path) {
                continue;
            }
            let (l, s) = (survivors.len[inode], survivors.synced[inode]);
            let bytes = &self.data[inode];
            let contents = match variant {
                Variant::Durable => bytes[..s].to_vec(),
                Variant::Tail { .. } | Variant::Reordered { .. } => {
                    bytes[..s + rng.upto(l - s)].to_vec()
                }
                Variant::Torn { .. } => {
                    // The cut: the synced length, a page boundary after it, or the end.
                    let pages: Vec<usize> = (s / PAGE + 1..=l / PAGE)
                        .map(|p| p * PAGE)
                        .filter(|&c| c > s && c < l)
                        .collect();
                    let pick = rng.upto(pages.len() + 1);
                    let cut = match pick {
                        0 => s,
                        p if p <= pages.len() => pages[p - 1],
                        _ => l,
                    };
                    let mut v = bytes[..cut].to_vec();
                    v.resize(l, 0);
                    v
                }
            };
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            image.files.insert(name, contents);
        }
        image
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace() -> Trace {
        let d = PathBuf::from("/d");
        Trace {
            events: vec![
                Event::Create {
                    path: d.join("a"),
                    inode: 0,
                },
                Event::Write {
                    inode: 0,
                    len: 10_000,
                },
                Event::Sync {
                    inode: 0,
                    len: 10_000,
                },
                Event::Write {
                    inode: 0,
                    len: 20_000,
                },
                Event::SyncDir { dir: d.clone() },
                Event::Create {
                    path: d.join("b"),
                    inode: 1,
                },
                Event::Write { inode: 1, len: 3 },
                Event::Sync { inode: 1, len: 3 },
                Event::Rename {
                    from: d.join("b"),
                    to: d.join("a"),
                },
            ],
            data: vec![vec![7; 20_000], vec![1, 2, 3]],
        }
    }

    #[test]
    fn a_name_counts_once_its_directory_is_synced() {
        let t = trace();
        assert!(t.image(4, Variant::Durable).files.is_empty());
        let img = t.image(5, Variant::Durable);
        assert_eq!(img.files["a"].len(), 10_000);
        // The rename of a synced file is not durable without a directory sync.
        let img = t.image(9, Variant::Durable);
        assert_eq!(img.files.keys().collect::<Vec<_>>(), ["a"]);
        assert_eq!(img.files["a"].len(), 10_000);
    }

    #[test]
    fn torn_tails_cut_at_pages_and_keep_their_length() {
        let t = trace();
        let mut cuts = std::collections::BTreeSet::new();
        for seed in 0..64 {
            let img = t.image(5, Variant::Torn { seed });
            let a = &img.files["a"];
            assert_eq!(a.len(), 20_000);
            let cut = a.iter().position(|&b| b == 0).unwrap_or(a.len());
            assert!([10_000, 12_288, 16_384, 20_000].contains(&cut), "{cut}");
            cuts.insert(cut);
        }
        assert_eq!(cuts.len(), 4, "{cuts:?}");
    }

    #[test]
    fn reordered_names_are_each_kept_or_lost() {
        let t = trace();
        let seen: std::collections::BTreeSet<usize> = (0..64)
            .map(|seed| t.image(9, Variant::Reordered { seed }).files["a"].len())
            .collect();
        // `a` is the old file, or the renamed new one.
        assert!(seen.contains(&3), "{seen:?}");
        assert!(seen.iter().any(|&l| l >= 10_000), "{seen:?}");
    }

    /// A directory the run made survives once its parent is synced; a file linked into it
    /// keeps what was synced under its first name.
    #[test]
    fn made_directories_and_links_need_their_parents_synced() {
        let (p, d) = (PathBuf::from("/p"), PathBuf::from("/p/db"));
        let t = Trace {
            events: vec![
                Event::Create {
                    path: p.join("staged"),
                    inode: 0,
                },
                Event::Write { inode: 0, len: 5 },
                Event::Sync { inode: 0, len: 5 },
                Event::CreateDir { path: d.clone() },
                Event::Link {
                    from: p.join("staged"),
                    to: d.join("000002.ldb"),
                },
                Event::SyncDir { dir: d.clone() },
                Event::SyncDir { dir: p.clone() },
            ],
            data: vec![vec![9; 5]],
        };
        assert_eq!(t.image_in(&d, 6, Variant::Durable), None);
        let img = t.image_in(&d, 7, Variant::Durable).unwrap();
        assert_eq!(img.files["000002.ldb"], [9; 5]);
        // Before the directory's own sync the link is not durable.
        let mut t5 = t.clone();
        t5.events.swap(5, 6);
        assert!(
            t5.image_in(&d, 6, Variant::Durable)
                .unwrap()
                .files
                .is_empty()
        );
        // A directory the run did not make is there from the start.
        assert!(
            t.image_in(&p, 0, Variant::Durable)
                .unwrap()
                .files
                .is_empty()
        );
    }
}
