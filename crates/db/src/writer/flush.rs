//! The memtable flush (LevelDB's `CompactMemTable`): the immutable memtable written to a
//! level-0 table (or deeper, where nothing overlaps it) with the state unlocked, the
//! MANIFEST changed to name it and the new log, then the files no view needs deleted.

use std::sync::MutexGuard;
use std::time::Instant;

use crate::Result;
use crate::levels::{OutputRange, user_key};
use crate::version_edit::VersionEdit;
use crate::writer::compaction_stats::CompactionStats;
use crate::writer::shared::{Shared, State, write_table};

impl Shared {
    /// Flushes the immutable memtable to a table (LevelDB's `CompactMemTable`), with the
    /// state unlocked while the table is written. `busy` is where the compaction in
    /// progress, if any, puts its outputs: the table is not placed there.
    pub(crate) fn flush_imm<'a>(
        &'a self,
        mut st: MutexGuard<'a, State>,
        busy: Option<&OutputRange>,
    ) -> (MutexGuard<'a, State>, Result<()>) {
        let Some(imm) = st.imm.clone() else {
            return (st, Ok(()));
        };
        let number = match st.versions.new_file_number() {
            Ok(number) => number,
            Err(e) => return (st, Err(e)),
        };
        st.pending_outputs.insert(number);
        drop(st);
        let start = Instant::now();
        let written = write_table(
            &self.options.file_system,
            &self.dir,
            &self.build,
            &self.tables,
            number,
            |add| imm.try_for_each(add),
        );
        let mut st = self.state();
        let meta = match written {
            Ok(meta) => meta,
            Err(e) => {
                st.pending_outputs.remove(&number);
                return (st, Err(e));
            }
        };
        let mut edit = VersionEdit::default();
        if let Some(meta) = meta {
            let written = CompactionStats::since(start, 0, 0, meta.file_size);
            let level = st.versions.current.levels.level_for_flush(
                user_key(&meta.smallest),
                user_key(&meta.largest),
                self.options.max_file_size.saturating_mul(10),
                busy,
                &*self.user,
            );
            st.stats[level].add(written);
            edit.new_files.push((level, meta));
        }
        edit.prev_log_number = Some(0);
        edit.log_number = Some(st.log_number);
        // The MANIFEST is written and synced with the state unlocked (as LevelDB's
        // `LogAndApply` does), so that writes go on meanwhile: only this thread changes it.
        let (mut st, applied) = self.log_and_apply_unlocked(st, &mut edit);
        // The table is listed in the state applied, or to be deleted as obsolete.
        st.pending_outputs.remove(&number);
        if let Err(e) = applied {
            return (st, Err(e));
        }
        st.imm = None;
        self.install_view(&mut st);
        // Writers waiting for room go on while the obsolete files are deleted.
        self.finished_cv.notify_all();
        let st = self.remove_obsolete_files(st);
        (st, Ok(()))
    }
}
