//! Comparators by the name a MANIFEST records.
//!
//! A LevelDB database records its user comparator's name in its MANIFEST
//! (`leveldb.BytewiseComparator` unless the writer chose another). A [`ComparatorRegistry`]
//! maps names to comparators; given to [`DbOptions::comparators`](crate::DbOptions::comparators),
//! it makes [`Db::open`](crate::Db::open), [`Db::open_storage`](crate::Db::open_storage) and
//! [`Db::salvage`](crate::Db::salvage) read each database with the comparator its MANIFEST
//! names. This crate registers only the bytewise comparator; crates that know other orders
//! (such as `leveltable-chromium`'s `idb_cmp1`) provide theirs for callers to add.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use leveltable_table::{BytewiseComparator, Comparator};

/// Comparators by name. [`Default`] holds [`BytewiseComparator`] only.
#[derive(Clone)]
pub struct ComparatorRegistry {
    by_name: BTreeMap<String, Arc<dyn Comparator>>,
}

impl Default for ComparatorRegistry {
    fn default() -> Self {
        ComparatorRegistry::empty().with(Arc::new(BytewiseComparator))
    }
}

impl ComparatorRegistry {
    /// A registry with [`BytewiseComparator`] only (as [`Default`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// A registry with no comparator at all: every named comparator is refused, and a
    /// MANIFEST that names none is read bytewise, as LevelDB reads it.
    pub fn empty() -> Self {
        ComparatorRegistry {
            by_name: BTreeMap::new(),
        }
    }

    /// Adds `comparator` under its [`name`](Comparator::name), replacing one of that name.
    pub fn with(mut self, comparator: Arc<dyn Comparator>) -> Self {
        self.register(comparator);
        self
    }

    /// Adds `comparator` under its [`name`](Comparator::name), replacing one of that name.
    pub fn register(&mut self, comparator: Arc<dyn Comparator>) {
        self.by_name
            .insert(comparator.name().to_string(), comparator);
    }

    /// Adds every comparator of `other`, replacing those of the same names.
    pub fn extend(mut self, other: &ComparatorRegistry) -> Self {
        for c in other.by_name.values() {
            self.register(Arc::clone(c));
        }
        self
    }

    /// The comparator named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Comparator>> {
        self.by_name.get(name)
    }

    /// The names registered, in byte order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }

    /// The comparator for a MANIFEST naming `name` (`None`: it names none, and LevelDB
    /// reads it bytewise). `Err` carries the registered names, for the message.
    pub(crate) fn choose(&self, name: Option<&str>) -> Result<Arc<dyn Comparator>, String> {
        match name {
            None => Ok(self
                .get(BytewiseComparator.name())
                .cloned()
                .unwrap_or_else(|| Arc::new(BytewiseComparator))),
            Some(name) => self.get(name).cloned().ok_or_else(|| self.listed()),
        }
    }

    /// The registered names for a message: `a or b or c`, or `no registered comparator`.
    pub(crate) fn listed(&self) -> String {
        if self.by_name.is_empty() {
            "no registered comparator".to_string()
        } else {
            self.names().collect::<Vec<_>>().join(" or ")
        }
    }
}

impl fmt::Debug for ComparatorRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.names()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_holds_bytewise_only_and_names_it_when_refusing() {
        let r = ComparatorRegistry::default();
        assert_eq!(
            r.names().collect::<Vec<_>>(),
            ["leveldb.BytewiseComparator"]
        );
        assert_eq!(
            r.choose(Some("leveldb.BytewiseComparator")).unwrap().name(),
            "leveldb.BytewiseComparator"
        );
        assert_eq!(r.choose(None).unwrap().name(), "leveldb.BytewiseComparator");
        assert_eq!(
            r.choose(Some("idb_cmp1")).err().unwrap(),
            "leveldb.BytewiseComparator"
        );
        assert_eq!(
            ComparatorRegistry::empty().choose(Some("x")).err().unwrap(),
            "no registered comparator"
        );
    }
}
