//! Listings of a plain HTTP (WebDAV) server one directory at a time.
//!
//! `object_store`'s HTTP store lists a prefix with one `PROPFIND` of `Depth: infinity`, which
//! most WebDAV servers refuse (nginx's and Apache's by default; RFC 4918 lets them). This
//! store lists with `PROPFIND` of `Depth: 1` instead, once per directory under the prefix:
//! a prefix without subdirectories, such as a database's, is still one request.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

/// The most directories one listing walks: past it the listing fails (a server that
/// answers with ever deeper directories cannot keep a listing going).
pub(crate) const MAX_LISTED_DIRECTORIES: usize = 100_000;

/// An HTTP store whose recursive listing walks the directories with `Depth: 1` listings;
/// everything else goes to the store inside.
#[derive(Debug)]
pub(crate) struct DirectoryListing {
    inner: Arc<dyn ObjectStore>,
}

impl DirectoryListing {
    pub(crate) fn new(inner: Arc<dyn ObjectStore>) -> DirectoryListing {
        DirectoryListing { inner }
    }
}

impl fmt::Display for DirectoryListing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

/// Whether `child` lies strictly under the directory `parent` (`None`: the root).
fn strictly_under(child: &Path, parent: Option<&Path>) -> bool {
    match parent {
        None => child.parts().count() > 0,
        Some(p) => child.prefix_matches(p) && child.parts().count() > p.parts().count(),
    }
}

/// Every object under `prefix`, one `list_with_delimiter` per directory.
async fn walk(store: Arc<dyn ObjectStore>, prefix: Option<Path>) -> Result<Vec<ObjectMeta>> {
    let mut found = Vec::new();
    let mut pending = vec![prefix.clone()];
    let mut listed = 0;
    while let Some(dir) = pending.pop() {
        listed += 1;
        if listed > MAX_LISTED_DIRECTORIES {
            // Not a transient failure: the callers do not retry it.
            return Err(object_store::Error::NotSupported {
                source: format!(
                    "listing {}: more than {MAX_LISTED_DIRECTORIES} directories",
                    prefix.as_ref().map_or("/", |p| p.as_ref())
                )
                .into(),
            });
        }
        let result = store.list_with_delimiter(dir.as_ref()).await?;
        found.extend(result.objects);
        // Only directories deeper than the one listed: a server naming the directory
        // itself, or another one, cannot make the walk go round.
        pending.extend(
            result
                .common_prefixes
                .into_iter()
                .filter(|p| strictly_under(p, dir.as_ref()))
                .map(Some),
        );
    }
    Ok(found)
}

#[async_trait]
impl ObjectStore for DirectoryListing {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    async fn delete(&self, location: &Path) -> Result<()> {
        self.inner.delete(location).await
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        let store = Arc::clone(&self.inner);
        let prefix = prefix.cloned();
        futures::stream::once(async move { walk(store, prefix).await })
            .map(|listed| match listed {
                Ok(objects) => futures::stream::iter(objects.into_iter().map(Ok)).boxed(),
                Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
            })
            .flatten()
            .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy(&self, from: &Path, to: &Path) -> Result<()> {
        self.inner.copy(from, to).await
    }

    async fn copy_if_not_exists(&self, from: &Path, to: &Path) -> Result<()> {
        self.inner.copy_if_not_exists(from, to).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::TryStreamExt;
    use object_store::memory::InMemory;

    /// A store that refuses recursive listings, as WebDAV servers refuse `Depth: infinity`.
    #[derive(Debug)]
    struct NoRecursiveListing(InMemory);

    impl fmt::Display for NoRecursiveListing {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("NoRecursiveListing")
        }
    }

    #[async_trait]
    impl ObjectStore for NoRecursiveListing {
        async fn put_opts(&self, l: &Path, p: PutPayload, o: PutOptions) -> Result<PutResult> {
            self.0.put_opts(l, p, o).await
        }
        async fn put_multipart_opts(
            &self,
            l: &Path,
            o: PutMultipartOptions,
        ) -> Result<Box<dyn MultipartUpload>> {
            self.0.put_multipart_opts(l, o).await
        }
        async fn get_opts(&self, l: &Path, o: GetOptions) -> Result<GetResult> {
            self.0.get_opts(l, o).await
        }
        async fn delete(&self, l: &Path) -> Result<()> {
            self.0.delete(l).await
        }
        fn list(&self, _: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
            futures::stream::once(async {
                Err(object_store::Error::NotSupported {
                    source: "PROPFIND with Depth: infinity".into(),
                })
            })
            .boxed()
        }
        async fn list_with_delimiter(&self, p: Option<&Path>) -> Result<ListResult> {
            self.0.list_with_delimiter(p).await
        }
        async fn copy(&self, f: &Path, t: &Path) -> Result<()> {
            self.0.copy(f, t).await
        }
        async fn copy_if_not_exists(&self, f: &Path, t: &Path) -> Result<()> {
            self.0.copy_if_not_exists(f, t).await
        }
    }

    async fn names(store: &dyn ObjectStore, prefix: Option<&str>) -> Result<Vec<String>> {
        let prefix = prefix.map(Path::from);
        let mut names: Vec<String> = store
            .list(prefix.as_ref())
            .map_ok(|m| m.location.to_string())
            .try_collect()
            .await?;
        names.sort();
        Ok(names)
    }

    #[test]
    fn a_recursive_listing_walks_the_directories() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            let inner = NoRecursiveListing(InMemory::new());
            for name in [
                "a/db/CURRENT",
                "a/db/000005.ldb",
                "a/p1/x/db/CURRENT",
                "a/p1/x/db/000003.log",
                "a/p2/CURRENT",
                "b/CURRENT",
            ] {
                inner.put(&Path::from(name), "x".into()).await.unwrap();
            }
            let inner: Arc<dyn ObjectStore> = Arc::new(inner);
            assert!(names(inner.as_ref(), Some("a")).await.is_err());
            let store = DirectoryListing::new(Arc::clone(&inner));
            assert_eq!(
                names(&store, Some("a")).await.unwrap(),
                [
                    "a/db/000005.ldb",
                    "a/db/CURRENT",
                    "a/p1/x/db/000003.log",
                    "a/p1/x/db/CURRENT",
                    "a/p2/CURRENT",
                ]
            );
            assert_eq!(names(&store, None).await.unwrap().len(), 6);
            assert!(names(&store, Some("nothing")).await.unwrap().is_empty());
        });
    }

    #[test]
    fn only_deeper_directories_are_walked() {
        let root = Path::from("a/b");
        assert!(strictly_under(&Path::from("a/b/c"), Some(&root)));
        assert!(!strictly_under(&Path::from("a/b"), Some(&root)));
        assert!(!strictly_under(&Path::from("a"), Some(&root)));
        assert!(!strictly_under(&Path::from("a/bc"), Some(&root)));
        assert!(strictly_under(&Path::from("a"), None));
    }
}
