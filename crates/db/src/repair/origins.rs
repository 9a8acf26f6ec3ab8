//! Where each entry of a repair's merge comes from, and whether the MANIFEST counts that
//! file live, found with a compare or none per entry.

use std::cmp::Ordering;

use leveltable_table::Comparator;

use super::LiveFiles;
use crate::version::{Origin, Source, Version};

/// Per source of the merge: its origin and liveness when they do not depend on the key
/// (as far as a repair weighs them), else (a run of tables that do not overlap) the table
/// its last entry came from.
pub(super) struct Origins {
    sources: Vec<Place>,
}

enum Place {
    Fixed(Origin, bool),
    /// Index in the source's tables of the one its last entry came from, with its
    /// origin and liveness.
    Run(usize, Origin, bool),
}

impl Origins {
    pub(super) fn new(version: &Version, live: &LiveFiles) -> Origins {
        let sources = (0..version.sources.len())
            .map(|i| match version.fixed_origin(i) {
                Some(origin) => Place::Fixed(origin, live.is_live(origin)),
                None => {
                    let origin = version.origin(i, &[]);
                    let is_live = live.is_live(origin);
                    match &version.sources[i] {
                        // Of a table above level 0 only its level and whether it is live
                        // decide (its number does not order it against other files): when
                        // all of the run's tables are alike, its first one stands for each.
                        Source::Files { level, files }
                            if *level != Some(0)
                                && files.iter().all(|f| {
                                    let each = Origin::Table {
                                        number: f.number,
                                        level: *level,
                                    };
                                    live.is_live(each) == is_live
                                }) =>
                        {
                            Place::Fixed(origin, is_live)
                        }
                        _ => Place::Run(0, origin, is_live),
                    }
                }
            })
            .collect();
        Origins { sources }
    }

    /// The origin of `internal`, an entry of source `i` (each source's entries come in
    /// order), and whether its file is live.
    #[inline]
    pub(super) fn of(
        &mut self,
        version: &Version,
        live: &LiveFiles,
        i: usize,
        internal: &[u8],
    ) -> (Origin, bool) {
        match &mut self.sources[i] {
            Place::Fixed(origin, is_live) => (*origin, *is_live),
            Place::Run(at, origin, is_live) => {
                let Source::Files { level, files } = &version.sources[i] else {
                    return (*origin, *is_live);
                };
                let start = *at;
                while *at + 1 < files.len()
                    && version.icmp.compare(&files[*at].largest, internal) == Ordering::Less
                {
                    *at += 1;
                }
                if *at != start {
                    *origin = Origin::Table {
                        number: files[*at].number,
                        level: *level,
                    };
                    *is_live = live.is_live(*origin);
                }
                (*origin, *is_live)
            }
        }
    }
}
