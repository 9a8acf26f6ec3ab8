//! The HTTP client of every store this crate builds: `reqwest`, configured from the store's
//! client options as `object_store` configures it, except that a redirect is followed only
//! to the same origin (scheme, host and port), at most [`MAX_REDIRECTS`] times. A redirect
//! to another origin would send the request, and read the object, somewhere the URL did not
//! name.

use std::fmt;
use std::time::Duration;

use object_store::client::{HttpClient, HttpConnector};
use object_store::{ClientConfigKey as Key, ClientOptions};
use reqwest::redirect::{Attempt, Policy};

/// Redirects followed in one request, all to the origin it was sent to.
pub const MAX_REDIRECTS: usize = 5;

/// The user agent when the options name none.
const USER_AGENT: &str = concat!("leveltable-object/", env!("CARGO_PKG_VERSION"));

/// A redirect refused; its text names the origins.
#[derive(Debug)]
pub(crate) struct RedirectRefused(String);

impl fmt::Display for RedirectRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RedirectRefused {}

/// The refused redirect somewhere in `e`'s chain of sources, if there is one.
pub(crate) fn refused_redirect(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut next = Some(e);
    while let Some(e) = next {
        if let Some(r) = e.downcast_ref::<RedirectRefused>() {
            return Some(r.0.clone());
        }
        next = e.source();
    }
    None
}

/// What to do with one redirect.
fn redirect(attempt: Attempt<'_>) -> reqwest::redirect::Action {
    let origin = |u: &url::Url| u.origin().ascii_serialization();
    let to = origin(attempt.url());
    let from = attempt.previous().first().map(origin).unwrap_or_default();
    if to != from {
        let message = format!("refused a redirect from {from} to another origin, {to}");
        return attempt.error(RedirectRefused(message));
    }
    if attempt.previous().len() > MAX_REDIRECTS {
        let message = format!("refused a redirect: more than {MAX_REDIRECTS} redirects at {from}");
        return attempt.error(RedirectRefused(message));
    }
    attempt.follow()
}

/// Builds each store's client, following redirects within one origin only.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SameOriginConnector;

impl HttpConnector for SameOriginConnector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        client(options)
            .map(HttpClient::new)
            .map_err(|message| object_store::Error::Generic {
                store: "HTTP client",
                source: message.into(),
            })
    }
}

/// A `reqwest` client set up from `o` as `object_store` sets up its own, with the
/// same-origin redirect policy.
fn client(o: &ClientOptions) -> Result<reqwest::Client, String> {
    let get = |k: Key| o.get_config_value(&k);
    let flag = |k: Key| get(k).is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let duration = |k: Key| -> Result<Option<Duration>, String> {
        get(k)
            .map(|v| humantime::parse_duration(&v).map_err(|e| format!("{}: {e}", k.as_ref())))
            .transpose()
    };
    let number = |k: Key| -> Result<Option<u64>, String> {
        get(k)
            .map(|v| v.parse::<u64>().map_err(|e| format!("{}: {e}", k.as_ref())))
            .transpose()
    };
    let mut b = reqwest::Client::builder()
        .redirect(Policy::custom(redirect))
        .user_agent(get(Key::UserAgent).unwrap_or_else(|| USER_AGENT.to_owned()))
        // As object_store: compression would change the Content-Length sizes are read from.
        .no_gzip()
        .no_brotli()
        .no_zstd()
        .no_deflate()
        .https_only(!flag(Key::AllowHttp));
    if let Some(url) = get(Key::ProxyUrl) {
        let mut proxy = reqwest::Proxy::all(&url).map_err(|e| e.to_string())?;
        if let Some(pem) = get(Key::ProxyCaCertificate) {
            let cert =
                reqwest::tls::Certificate::from_pem(pem.as_bytes()).map_err(|e| e.to_string())?;
            b = b.add_root_certificate(cert);
        }
        if let Some(excludes) = get(Key::ProxyExcludes) {
            proxy = proxy.no_proxy(reqwest::NoProxy::from_string(&excludes));
        }
        b = b.proxy(proxy);
    }
    if let Some(t) = duration(Key::Timeout)? {
        b = b.timeout(t);
    }
    if let Some(t) = duration(Key::ConnectTimeout)? {
        b = b.connect_timeout(t);
    }
    if let Some(t) = duration(Key::PoolIdleTimeout)? {
        b = b.pool_idle_timeout(t);
    }
    if let Some(n) = number(Key::PoolMaxIdlePerHost)? {
        b = b.pool_max_idle_per_host(usize::try_from(n).unwrap_or(usize::MAX));
    }
    if let Some(t) = duration(Key::Http2KeepAliveInterval)? {
        b = b.http2_keep_alive_interval(t);
    }
    if let Some(t) = duration(Key::Http2KeepAliveTimeout)? {
        b = b.http2_keep_alive_timeout(t);
    }
    if flag(Key::Http2KeepAliveWhileIdle) {
        b = b.http2_keep_alive_while_idle(true);
    }
    if let Some(n) = number(Key::Http2MaxFrameSize)? {
        b = b.http2_max_frame_size(u32::try_from(n).ok());
    }
    if flag(Key::Http1Only) {
        b = b.http1_only();
    }
    if flag(Key::Http2Only) {
        b = b.http2_prior_knowledge();
    }
    if flag(Key::AllowInvalidCertificates) {
        b = b.danger_accept_invalid_certs(true);
    }
    b.build().map_err(|e| e.to_string())
}
