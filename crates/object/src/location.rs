//! Where an object or prefix lives: a store built from a URL, the path inside it, and the
//! request counters every read and write through it adds to.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use object_store::multipart::MultipartStore;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreScheme, RetryConfig};
use url::Url;

use crate::connector::SameOriginConnector;
use crate::error::scrub;
use crate::http_listing::DirectoryListing;
use crate::retry::RetryPolicy;
use crate::stats::Stats;
use crate::{Error, Result};

/// Option keys whose values are secrets; their values are scrubbed from every message.
const SECRET_KEY_PARTS: &[&str] = &["secret", "token", "password", "access_key", "sas", "key"];

/// Environment variables holding secrets the stores read.
const SECRET_ENV: &[&str] = &[
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AZURE_STORAGE_ACCOUNT_KEY",
    "AZURE_STORAGE_ACCESS_KEY",
    "AZURE_STORAGE_SAS_KEY",
    "AZURE_CLIENT_SECRET",
    "GOOGLE_SERVICE_ACCOUNT_KEY",
];

/// An object (or a prefix of objects) in a store, with the retry policy and the request
/// counters of everything done through it. Cheap to clone; clones share the counters.
///
/// Built from a URL: `s3://bucket/key`, `gs://bucket/key`, `az://container/key` (and the
/// other forms `object_store` knows), `http://` or `https://` for a plain HTTP server with
/// range requests (read only), and `file:///abs/path`. Store settings come from the
/// environment variables `object_store` reads (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ALLOW_HTTP`, `GOOGLE_*`, `AZURE_*`) and from
/// explicit options (`aws_endpoint`, `aws_allow_http`, `timeout`, ...), options winning.
///
/// Credentials come from the environment or options only: a URL with a user name or
/// password is refused. An `http(s)://` URL's query (a presigned URL's signature) is sent
/// with every request. Redirects are followed within the origin a request was sent to, at
/// most [`MAX_REDIRECTS`](crate::MAX_REDIRECTS) times; one to another origin is refused.
///
/// The store's own retries are turned off: this crate retries every request itself (see
/// [`RetryPolicy`]) so that each attempt is counted.
#[derive(Clone)]
pub struct Location {
    pub(crate) store: Arc<dyn ObjectStore>,
    /// The same store's part-by-part upload interface, where it has one (S3, GCS, Azure):
    /// a failed part is then sent again under its own number.
    pub(crate) multipart: Option<Arc<dyn MultipartStore>>,
    pub(crate) path: Path,
    /// The URL with credentials and query removed, for messages.
    pub(crate) name: String,
    pub(crate) secrets: Arc<Vec<String>>,
    pub(crate) retry: RetryPolicy,
    pub(crate) stats: Arc<Stats>,
    /// For a `file://` location, the local path: checked to be a regular file before each
    /// read (the local store's open would block on a FIFO).
    pub(crate) local: Option<std::path::PathBuf>,
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Location")
            .field("url", &self.name)
            .finish_non_exhaustive()
    }
}

/// Whether `arg` is a URL this crate reads (rather than a local path).
pub fn is_url(arg: &str) -> bool {
    arg.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '+')
    })
}

impl Location {
    /// The location `url` names, configured from the environment.
    ///
    /// # Errors
    /// [`Error::Url`] for a URL that does not parse or names no supported store.
    pub fn parse(url: &str) -> Result<Location> {
        Location::parse_with(url, std::iter::empty::<(String, String)>())
    }

    /// The location `url` names, configured from the environment and then `options`
    /// (`object_store` configuration keys such as `aws_endpoint` or `timeout`).
    ///
    /// # Errors
    /// As [`parse`](Self::parse).
    pub fn parse_with<K: AsRef<str>, V: Into<String>>(
        url: &str,
        options: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Location> {
        let name = display_name(url);
        let bad = |message: String| Error::Url {
            url: name.clone(),
            message: scrub(&message),
        };
        let parsed = Url::parse(url).map_err(|e| bad(e.to_string()))?;
        let (scheme, _) = ObjectStoreScheme::parse(&parsed).map_err(|e| bad(e.to_string()))?;
        refuse_credentials(&parsed, &scheme).map_err(bad)?;
        let options: Vec<(String, String)> = options
            .into_iter()
            .map(|(k, v)| (k.as_ref().to_ascii_lowercase(), v.into()))
            .collect();
        let mut secrets: Vec<String> = SECRET_ENV
            .iter()
            .filter_map(|k| std::env::var(k).ok())
            .collect();
        secrets.extend(
            options
                .iter()
                .filter(|(k, _)| SECRET_KEY_PARTS.iter().any(|p| k.contains(p)))
                .map(|(_, v)| v.clone()),
        );
        // Our defaults first, so the environment and the caller's options override them.
        let mut all: Vec<(String, String)> = vec![
            ("timeout".into(), "30s".into()),
            ("connect_timeout".into(), "5s".into()),
        ];
        all.extend(options);
        let no_retries = RetryConfig {
            max_retries: 0,
            retry_timeout: Duration::from_secs(1),
            ..RetryConfig::default()
        };
        // Every store's builder takes the same steps: the options it knows by name (those
        // of another store are left to it), no retries of its own (ours retry, see
        // `RetryPolicy`), and the connector that follows redirects within the origin only.
        macro_rules! build {
            ($builder:expr) => {{
                let mut b = $builder;
                for (k, v) in &all {
                    if let Ok(key) = k.parse() {
                        b = b.with_config(key, v.clone());
                    }
                }
                Arc::new(
                    b.with_retry(no_retries)
                        .with_http_connector(SameOriginConnector)
                        .build()
                        .map_err(|e| bad(e.to_string()))?,
                )
            }};
        }
        let mut multipart: Option<Arc<dyn MultipartStore>> = None;
        let mut local = None;
        let (store, path): (Arc<dyn ObjectStore>, Path) = match scheme {
            ObjectStoreScheme::Local => {
                let fs_path = parsed
                    .to_file_path()
                    .map_err(|()| bad("not an absolute file path".into()))?;
                let path = Path::from_absolute_path(&fs_path).map_err(|e| bad(e.to_string()))?;
                local = Some(fs_path);
                (Arc::new(object_store::local::LocalFileSystem::new()), path)
            }
            ObjectStoreScheme::Memory => {
                return Err(bad("memory:// names no shared store".into()));
            }
            ObjectStoreScheme::AmazonS3 => {
                let store = build!(object_store::aws::AmazonS3Builder::from_env().with_url(url));
                multipart = Some(Arc::clone(&store) as Arc<dyn MultipartStore>);
                (store, object_path(&parsed, scheme, &bad)?)
            }
            ObjectStoreScheme::GoogleCloudStorage => {
                let store =
                    build!(object_store::gcp::GoogleCloudStorageBuilder::from_env().with_url(url));
                multipart = Some(Arc::clone(&store) as Arc<dyn MultipartStore>);
                (store, object_path(&parsed, scheme, &bad)?)
            }
            ObjectStoreScheme::MicrosoftAzure => {
                let store =
                    build!(object_store::azure::MicrosoftAzureBuilder::from_env().with_url(url));
                multipart = Some(Arc::clone(&store) as Arc<dyn MultipartStore>);
                (store, object_path(&parsed, scheme, &bad)?)
            }
            ObjectStoreScheme::Http => {
                // The query (a presigned URL's signature) goes with every request: the
                // store's requests extend this URL's path and keep its query.
                let mut base = format!("{}/", &parsed[..url::Position::BeforePath]);
                if let Some(query) = parsed.query() {
                    base = format!("{base}?{query}");
                }
                if parsed.scheme() == "http" {
                    all.push(("allow_http".into(), "true".into()));
                }
                let store: Arc<dyn ObjectStore> =
                    build!(object_store::http::HttpBuilder::new().with_url(base));
                // Listed one directory at a time: WebDAV servers refuse `Depth: infinity`.
                let store = Arc::new(DirectoryListing::new(store));
                (store, object_path(&parsed, scheme, &bad)?)
            }
            other => return Err(bad(format!("unsupported store {other:?}"))),
        };
        secrets.retain(|s| !s.is_empty());
        Ok(Location {
            store,
            multipart,
            path,
            name,
            secrets: Arc::new(secrets),
            retry: RetryPolicy::default(),
            stats: Arc::new(Stats::default()),
            local,
        })
    }

    /// A location over an existing store (for stores built by hand, wrapped, or in memory).
    pub fn from_store(
        store: Arc<dyn ObjectStore>,
        path: Path,
        name: impl Into<String>,
    ) -> Location {
        Location {
            store,
            multipart: None,
            path,
            name: display_name(&name.into()),
            secrets: Arc::new(Vec::new()),
            retry: RetryPolicy::default(),
            stats: Arc::new(Stats::default()),
            local: None,
        }
    }

    /// A location over a store that also uploads part by part (so a failed part is sent
    /// again under its own number).
    pub fn from_multipart_store<S: ObjectStore + MultipartStore>(
        store: Arc<S>,
        path: Path,
        name: impl Into<String>,
    ) -> Location {
        let mut l = Location::from_store(Arc::clone(&store) as Arc<dyn ObjectStore>, path, name);
        l.multipart = Some(store);
        l
    }

    /// The same location with another retry policy.
    #[must_use]
    pub fn with_retry(mut self, retry: RetryPolicy) -> Location {
        self.retry = retry;
        self
    }

    /// The object `name` under this location taken as a prefix (a directory); shares the
    /// counters and the retry policy.
    pub fn child(&self, name: &str) -> Location {
        let path = self.path.parts().chain(Path::from(name).parts()).collect();
        Location {
            store: Arc::clone(&self.store),
            multipart: self.multipart.clone(),
            path,
            name: format!("{}/{}", self.name.trim_end_matches('/'), name),
            secrets: Arc::clone(&self.secrets),
            retry: self.retry.clone(),
            stats: Arc::clone(&self.stats),
            local: self.local.as_ref().map(|p| p.join(name)),
        }
    }

    /// The URL, without credentials or query.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The path inside the store.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    /// The request counters of everything done through this location and its clones.
    pub fn stats(&self) -> &Arc<Stats> {
        &self.stats
    }

    /// A store error's text with credentials removed.
    pub(crate) fn message(&self, e: &object_store::Error) -> String {
        // A refused redirect's own text names both origins; the store's wrapping of it
        // does not show it.
        match crate::connector::refused_redirect(e) {
            Some(refused) => refused,
            None => crate::error::store_message(e, &self.secrets),
        }
    }
}

/// Refuses a URL carrying a user name or password: they would not be sent (the stores
/// take credentials from the environment), and a request without them would fail
/// somewhere harder to understand. Azure's `abfs://container@account…` form, whose user
/// name is the container, is let through.
fn refuse_credentials(url: &Url, scheme: &ObjectStoreScheme) -> std::result::Result<(), String> {
    let azure = matches!(scheme, ObjectStoreScheme::MicrosoftAzure);
    if url.password().is_none() && (url.username().is_empty() || azure) {
        return Ok(());
    }
    let instead = match scheme {
        ObjectStoreScheme::AmazonS3 => {
            "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for \
             temporary credentials) in the environment"
        }
        ObjectStoreScheme::GoogleCloudStorage => {
            "set GOOGLE_SERVICE_ACCOUNT (a key file) or GOOGLE_SERVICE_ACCOUNT_KEY in the \
             environment"
        }
        ObjectStoreScheme::MicrosoftAzure => {
            "set AZURE_STORAGE_ACCOUNT_NAME and AZURE_STORAGE_ACCOUNT_KEY (or \
             AZURE_STORAGE_SAS_KEY) in the environment"
        }
        _ => "use a presigned URL: its query is sent with every request",
    };
    Err(format!("credentials in a URL are not used; {instead}"))
}

/// The path inside the store a URL of `scheme` names.
fn object_path(
    url: &Url,
    scheme: ObjectStoreScheme,
    bad: &dyn Fn(String) -> Error,
) -> Result<Path> {
    let (_, path) = ObjectStoreScheme::parse(url).map_err(|e| bad(e.to_string()))?;
    let _ = scheme;
    Path::parse(path).map_err(|e| bad(e.to_string()))
}

/// `url` without user, password, query or fragment.
fn display_name(url: &str) -> String {
    match Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.set_fragment(None);
            u.to_string()
        }
        Err(_) => scrub(url.split(['?', '#']).next().unwrap_or("")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_from_paths() {
        assert!(is_url("s3://b/k"));
        assert!(is_url("file:///tmp/x"));
        assert!(!is_url("/tmp/x"));
        assert!(!is_url("a/b://c"));
    }

    #[test]
    fn names_carry_no_credentials() {
        assert_eq!(
            display_name("https://u:pw@host/b/k?sig=abc"),
            "https://host/b/k"
        );
    }

    #[test]
    fn file_urls_name_their_path() {
        let l = Location::parse("file:///tmp/some/dir/t.ldb").unwrap();
        assert_eq!(l.path().as_ref(), "tmp/some/dir/t.ldb");
        assert_eq!(l.child("x").path().as_ref(), "tmp/some/dir/t.ldb/x");
        assert!(Location::parse("nope").is_err());
    }
}
