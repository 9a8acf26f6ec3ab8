//! Writing an object in parts: a multipart upload that becomes visible only when completed,
//! and a table builder on top of it.

use std::io::{self, Write};
use std::time::Instant;

use bytes::Bytes;
use leveltable_table::{BuildOptions, BuildSummary, TableBuilder};
use object_store::MultipartId;
use object_store::multipart::PartId;
use object_store::{MultipartUpload, PutPayload};

use crate::runtime::block_on;
use crate::{Error, Location, Result};

/// The default part size: S3 requires at least 5 MiB for every part but the last.
pub const DEFAULT_PART_SIZE: usize = 8 << 20;

/// An [`io::Write`] onto an object. Bytes are sent in parts of
/// [`DEFAULT_PART_SIZE`]; nothing is visible under the object's name until
/// [`finish`](Self::finish), and a writer dropped before that aborts its upload. An object
/// smaller than one part is sent with one PUT at `finish`.
///
/// On stores with a part-by-part interface (S3, GCS, Azure) each part, the start and the
/// completion are retried on their own; elsewhere (local files) a failed part fails the
/// write.
pub struct ObjectWriter {
    location: Location,
    buf: Vec<u8>,
    part_size: usize,
    upload: Option<Upload>,
    written: u64,
    done: bool,
    /// A part or the completion failed: the upload was aborted and no object appears.
    failed: bool,
}

/// An upload under way.
enum Upload {
    /// Through [`MultipartStore`]: the parts sent so far, by number.
    Parts { id: MultipartId, parts: Vec<PartId> },
    /// Through [`ObjectStore::put_multipart`](object_store::ObjectStore::put_multipart).
    Plain(Box<dyn MultipartUpload>),
}

impl std::fmt::Debug for ObjectWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectWriter")
            .field("object", &self.location.name)
            .field("written", &self.written)
            .finish_non_exhaustive()
    }
}

/// Runs `op` until it succeeds, a failure is final, or the retry policy gives up; `count`
/// counts each attempt.
fn retried<T, F, Fut>(location: &Location, count: impl Fn(), op: F) -> Result<T>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = object_store::Result<T>>,
{
    let started = Instant::now();
    let mut attempt = 0;
    loop {
        attempt += 1;
        count();
        let e = match block_on(op())? {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        match location.retry.backoff(attempt, started) {
            Some(wait) if transient(&e) => {
                location.stats.retry();
                std::thread::sleep(wait);
            }
            _ => {
                return Err(Error::Request {
                    object: location.name.clone(),
                    range: None,
                    attempts: attempt,
                    message: location.message(&e),
                });
            }
        }
    }
}

/// Whether an object is at `location`: one HEAD request (counted with the GETs), retried as
/// the requests of a write are. A tool that must not replace an object asks this first.
///
/// # Errors
/// [`Error::Request`] if the store cannot say, after retries.
pub fn object_exists(location: &Location) -> Result<bool> {
    let head = || async {
        match location.store.head(&location.path).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    };
    retried(location, || location.stats.get(), head)
}

/// Whether a failed write may be tried again.
fn transient(e: &object_store::Error) -> bool {
    matches!(e, object_store::Error::Generic { .. })
        && crate::connector::refused_redirect(e).is_none()
}

impl ObjectWriter {
    /// A writer onto the object at `location`.
    pub fn new(location: &Location) -> ObjectWriter {
        ObjectWriter::with_part_size(location, DEFAULT_PART_SIZE)
    }

    /// A writer sending parts of `part_size` bytes (at least 5 MiB for S3).
    pub fn with_part_size(location: &Location, part_size: usize) -> ObjectWriter {
        ObjectWriter {
            location: location.clone(),
            buf: Vec::new(),
            part_size: part_size.max(1),
            upload: None,
            written: 0,
            done: false,
            failed: false,
        }
    }

    /// Bytes accepted so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Runs `op` (one request of `bytes` bytes) until it succeeds, a failure is final, or
    /// the retry policy gives up. Every attempt is counted.
    fn retried<T, F, Fut>(location: &Location, bytes: u64, op: F) -> Result<T>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = object_store::Result<T>>,
    {
        retried(location, || location.stats.put(bytes), op)
    }

    /// Sends `part` as the next part, starting the upload first if needed.
    fn send_part(&mut self, part: Bytes) -> Result<()> {
        let loc = &self.location;
        if self.upload.is_none() {
            self.upload = Some(match &loc.multipart {
                Some(m) => Upload::Parts {
                    id: Self::retried(loc, 0, || m.create_multipart(&loc.path))?,
                    parts: Vec::new(),
                },
                None => Upload::Plain(Self::retried(loc, 0, || {
                    loc.store.put_multipart(&loc.path)
                })?),
            });
        }
        let n = part.len() as u64;
        match (&mut self.upload, &loc.multipart) {
            (Some(Upload::Parts { id, parts }), Some(m)) => {
                let idx = parts.len();
                let id = &*id;
                let part_id = Self::retried(loc, n, || {
                    m.put_part(&loc.path, id, idx, PutPayload::from(part.clone()))
                })?;
                parts.push(part_id);
                Ok(())
            }
            (Some(Upload::Plain(upload)), _) => {
                loc.stats.put(n);
                block_on(upload.put_part(PutPayload::from(part)))?.map_err(|e| Error::Request {
                    object: loc.name.clone(),
                    range: None,
                    attempts: 1,
                    message: loc.message(&e),
                })
            }
            _ => Err(Error::Request {
                object: loc.name.clone(),
                range: None,
                attempts: 0,
                message: "no upload under way".into(),
            }),
        }
    }

    /// Sends what is buffered and completes the object: from now on it is visible, whole.
    ///
    /// # Errors
    /// [`Error::Request`] if a part or the completion fails after retries, now or in an
    /// earlier write; the upload is then aborted and no object appears.
    pub fn finish(&mut self) -> Result<()> {
        if self.failed {
            return Err(Error::Request {
                object: self.location.name.clone(),
                range: None,
                attempts: 0,
                message: "an earlier part failed; the upload was aborted".into(),
            });
        }
        if self.done {
            return Ok(());
        }
        let rest = Bytes::from(std::mem::take(&mut self.buf));
        let result = if self.upload.is_none() {
            let loc = &self.location;
            Self::retried(loc, rest.len() as u64, || {
                loc.store.put(&loc.path, PutPayload::from(rest.clone()))
            })
            .map(drop)
        } else {
            let sent = if rest.is_empty() {
                Ok(())
            } else {
                self.send_part(rest)
            };
            sent.and_then(|()| self.complete())
        };
        match result {
            Ok(()) => {
                self.done = true;
                Ok(())
            }
            Err(e) => {
                self.abort();
                self.failed = true;
                Err(e)
            }
        }
    }

    fn complete(&mut self) -> Result<()> {
        let loc = &self.location;
        let result = match (&mut self.upload, &loc.multipart) {
            (Some(Upload::Parts { id, parts }), Some(m)) => {
                let (id, parts) = (&*id, &*parts);
                Self::retried(loc, 0, || {
                    m.complete_multipart(&loc.path, id, parts.clone())
                })
            }
            (Some(Upload::Plain(upload)), _) => {
                loc.stats.put(0);
                block_on(upload.complete())?.map_err(|e| Error::Request {
                    object: loc.name.clone(),
                    range: None,
                    attempts: 1,
                    message: loc.message(&e),
                })
            }
            _ => return Ok(()),
        };
        match result {
            Ok(_) => {
                self.upload = None;
                Ok(())
            }
            Err(e) => {
                // A completion whose answer was lost, then retried, is refused as unknown;
                // the object is there, whole, if it has every byte written.
                loc.stats.get();
                let head = block_on(loc.store.head(&loc.path))?;
                match head {
                    Ok(meta) if meta.size == self.written => {
                        self.upload = None;
                        Ok(())
                    }
                    _ => Err(e),
                }
            }
        }
    }

    /// Abandons the object: aborts the upload (best effort); nothing appears.
    pub fn abort(&mut self) {
        self.done = true;
        self.buf = Vec::new();
        let loc = &self.location;
        match (self.upload.take(), &loc.multipart) {
            (Some(Upload::Parts { id, .. }), Some(m)) => {
                let _ = Self::retried(loc, 0, || m.abort_multipart(&loc.path, &id));
            }
            (Some(Upload::Plain(mut upload)), _) => {
                loc.stats.put(0);
                let _ = block_on(upload.abort());
            }
            _ => {}
        }
    }
}

impl Write for ObjectWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.done {
            return Err(io::Error::other("object writer already finished"));
        }
        self.buf.extend_from_slice(data);
        self.written += data.len() as u64;
        while self.buf.len() >= self.part_size {
            let rest = self.buf.split_off(self.part_size);
            let part = Bytes::from(std::mem::replace(&mut self.buf, rest));
            if let Err(e) = self.send_part(part) {
                // The part's bytes are gone: the object can no longer be whole.
                self.abort();
                self.failed = true;
                return Err(io::Error::other(e));
            }
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for ObjectWriter {
    fn drop(&mut self) {
        if !self.done {
            self.abort();
        }
    }
}

/// A [`TableBuilder`] writing to an object: the table appears, whole, at
/// [`finish`](Self::finish); a builder dropped or [`abandon`](Self::abandon)ed before that
/// leaves no object.
pub struct ObjectTableBuilder {
    builder: TableBuilder<ObjectWriter>,
    name: String,
}

impl std::fmt::Debug for ObjectTableBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectTableBuilder")
            .field("object", &self.name)
            .finish_non_exhaustive()
    }
}

impl ObjectTableBuilder {
    /// A builder of the table at `location`.
    ///
    /// # Errors
    /// [`Error::Table`] for invalid options.
    pub fn new(location: &Location, options: BuildOptions) -> Result<ObjectTableBuilder> {
        ObjectTableBuilder::with_writer(ObjectWriter::new(location), options)
    }

    /// A builder writing through `writer` (for another part size).
    ///
    /// # Errors
    /// [`Error::Table`] for invalid options.
    pub fn with_writer(writer: ObjectWriter, options: BuildOptions) -> Result<ObjectTableBuilder> {
        let name = writer.location.name.clone();
        let builder = TableBuilder::new(writer, options).map_err(|e| Error::table(&name, e))?;
        Ok(ObjectTableBuilder { builder, name })
    }

    /// Adds an entry (see [`TableBuilder::add`]).
    ///
    /// # Errors
    /// As [`TableBuilder::add`]; a failed part upload is an [`Error::Table`] holding the
    /// request error.
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.builder
            .add(key, value)
            .map_err(|e| Error::table(&self.name, e))
    }

    /// Writes the table's end and completes the object.
    ///
    /// # Errors
    /// As [`ObjectWriter::finish`], or the table builder's errors.
    pub fn finish(mut self) -> Result<BuildSummary> {
        let summary = self
            .builder
            .finish()
            .map_err(|e| Error::table(&self.name, e))?;
        self.builder.get_mut().finish()?;
        Ok(summary)
    }

    /// Gives up: the upload is aborted and no object appears.
    pub fn abandon(mut self) {
        self.builder.abandon();
        self.builder.get_mut().abort();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use async_trait::async_trait;
    use futures::stream::BoxStream;
    use object_store::memory::InMemory;
    use object_store::path::Path;
    use object_store::{
        GetOptions, GetResult, ListResult, ObjectMeta, ObjectStore, PutMultipartOptions,
        PutOptions, PutResult, UploadPart,
    };

    use super::*;

    /// An in-memory store whose uploads fail their second part.
    #[derive(Debug)]
    struct SecondPartFails(InMemory);

    impl std::fmt::Display for SecondPartFails {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("SecondPartFails")
        }
    }

    #[derive(Debug)]
    struct Failing(Box<dyn MultipartUpload>, usize);

    #[async_trait]
    impl MultipartUpload for Failing {
        fn put_part(&mut self, data: PutPayload) -> UploadPart {
            self.1 += 1;
            if self.1 == 2 {
                return Box::pin(async { Err(object_store::Error::NotImplemented) });
            }
            self.0.put_part(data)
        }
        async fn complete(&mut self) -> object_store::Result<PutResult> {
            self.0.complete().await
        }
        async fn abort(&mut self) -> object_store::Result<()> {
            self.0.abort().await
        }
    }

    #[async_trait]
    impl ObjectStore for SecondPartFails {
        async fn put_opts(
            &self,
            l: &Path,
            p: PutPayload,
            o: PutOptions,
        ) -> object_store::Result<PutResult> {
            self.0.put_opts(l, p, o).await
        }
        async fn put_multipart_opts(
            &self,
            l: &Path,
            o: PutMultipartOptions,
        ) -> object_store::Result<Box<dyn MultipartUpload>> {
            Ok(Box::new(Failing(self.0.put_multipart_opts(l, o).await?, 0)))
        }
        async fn get_opts(&self, l: &Path, o: GetOptions) -> object_store::Result<GetResult> {
            self.0.get_opts(l, o).await
        }
        async fn delete(&self, l: &Path) -> object_store::Result<()> {
            self.0.delete(l).await
        }
        fn list(&self, p: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
            self.0.list(p)
        }
        async fn list_with_delimiter(&self, p: Option<&Path>) -> object_store::Result<ListResult> {
            self.0.list_with_delimiter(p).await
        }
        async fn copy(&self, f: &Path, t: &Path) -> object_store::Result<()> {
            self.0.copy(f, t).await
        }
        async fn copy_if_not_exists(&self, f: &Path, t: &Path) -> object_store::Result<()> {
            self.0.copy_if_not_exists(f, t).await
        }
    }

    #[test]
    fn a_writer_whose_part_failed_does_not_finish_a_short_object() {
        let store = Arc::new(SecondPartFails(InMemory::new()));
        let path = Path::from("t.ldb");
        let loc = Location::from_store(
            Arc::clone(&store) as Arc<dyn ObjectStore>,
            path.clone(),
            "mem://t.ldb",
        );
        let mut w = ObjectWriter::with_part_size(&loc, 4);
        assert!(w.write_all(b"aaaabbbbcccc").is_err());
        assert!(w.finish().is_err());
        let head = block_on(store.head(&path)).unwrap();
        assert!(
            head.is_err(),
            "an object of {:?} bytes appeared",
            head.map(|m| m.size)
        );
    }
}
