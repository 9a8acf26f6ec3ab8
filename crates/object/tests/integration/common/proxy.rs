//! A fault-injecting HTTP/1.1 proxy on loopback, between a client and a server: it forwards
//! each request and its response (bodies framed by Content-Length or chunked), and for a
//! chosen share of requests injects a fault instead: a delay, a 503, a connection reset
//! before the answer, a reset in the middle of the body, or a body cut short.
//!
//! It also adds a fixed latency to every request when asked (to stand in for a distant
//! store), and counts the requests it saw and the faults it injected.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the proxy does to requests.
#[derive(Clone, Debug)]
pub struct FaultConfig {
    /// Share of requests that get a fault, in millionths.
    pub fault_ppm: u32,
    /// Latency added to every request.
    pub latency: Duration,
    /// The delay a "delay" fault adds.
    pub fault_delay: Duration,
    /// Seed of the fault choices.
    pub seed: u64,
}

impl Default for FaultConfig {
    fn default() -> FaultConfig {
        FaultConfig {
            fault_ppm: 0,
            latency: Duration::ZERO,
            fault_delay: Duration::from_millis(300),
            seed: 1,
        }
    }
}

/// The kinds of fault, in the order of [`FaultCounts`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    Delay,
    Status503,
    ResetBeforeAnswer,
    ResetMidBody,
    ShortBody,
}

const FAULTS: [Fault; 5] = [
    Fault::Delay,
    Fault::Status503,
    Fault::ResetBeforeAnswer,
    Fault::ResetMidBody,
    Fault::ShortBody,
];

/// Counters of a running proxy.
#[derive(Default, Debug)]
pub struct ProxyCounts {
    pub requests: AtomicU64,
    pub faults: [AtomicU64; 5],
}

impl ProxyCounts {
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
    pub fn faults(&self) -> [u64; 5] {
        std::array::from_fn(|i| self.faults[i].load(Ordering::Relaxed))
    }
}

/// A running proxy; stops when dropped.
pub struct Proxy {
    pub port: u16,
    pub counts: Arc<ProxyCounts>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Proxy {
    /// Starts a proxy on a free loopback port forwarding to `upstream`.
    pub fn start(upstream: SocketAddr, config: FaultConfig) -> Proxy {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let port = listener.local_addr().unwrap().port();
        let counts = Arc::new(ProxyCounts::default());
        let seq = Arc::new(AtomicU64::new(0));
        let c = Arc::clone(&counts);
        runtime.spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    continue;
                };
                let (config, counts, seq) = (config.clone(), Arc::clone(&c), Arc::clone(&seq));
                tokio::spawn(async move {
                    let _ = serve(client, upstream, &config, &counts, &seq).await;
                });
            }
        });
        Proxy {
            port,
            counts,
            runtime: Some(runtime),
        }
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// splitmix64: the fault choice for request number `n`.
fn mix(seed: u64, n: u64) -> u64 {
    let mut z = seed.wrapping_add(n.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

type Io = std::io::Result<()>;

/// Reads an HTTP head (through the blank line) from `s`, keeping extra bytes in `buf`.
async fn read_head(s: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<Option<Vec<u8>>> {
    loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = buf[..p + 4].to_vec();
            buf.drain(..p + 4);
            return Ok(Some(head));
        }
        let mut chunk = [0u8; 16 << 10];
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.len() > 1 << 20 {
            return Err(std::io::Error::other("head too long"));
        }
    }
}

fn header<'h>(head: &'h str, name: &str) -> Option<&'h str> {
    head.lines().skip(1).find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then_some(v.trim())
    })
}

/// How a message's body is framed.
enum Framing {
    None,
    Length(u64),
    Chunked,
    UntilClose,
}

fn framing(head: &str, is_response: bool, no_body: bool) -> Framing {
    if no_body {
        return Framing::None;
    }
    if header(head, "transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked"))
    {
        return Framing::Chunked;
    }
    match header(head, "content-length").and_then(|v| v.parse().ok()) {
        Some(n) => Framing::Length(n),
        None if is_response => Framing::UntilClose,
        None => Framing::None,
    }
}

/// Reads a whole body framed by `f` from `s` (after the bytes already in `buf`).
async fn read_body(s: &mut TcpStream, buf: &mut Vec<u8>, f: &Framing) -> std::io::Result<Vec<u8>> {
    let mut chunk = vec![0u8; 64 << 10];
    match f {
        Framing::None => Ok(Vec::new()),
        Framing::Length(n) => {
            let n = *n as usize;
            while buf.len() < n {
                let r = s.read(&mut chunk).await?;
                if r == 0 {
                    return Err(std::io::Error::other("upstream closed mid-body"));
                }
                buf.extend_from_slice(&chunk[..r]);
            }
            Ok(buf.drain(..n).collect())
        }
        Framing::UntilClose => {
            loop {
                let r = s.read(&mut chunk).await?;
                if r == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..r]);
            }
            Ok(std::mem::take(buf))
        }
        Framing::Chunked => {
            // Keep the raw chunked bytes: they are forwarded as they are.
            let mut out = Vec::new();
            loop {
                let line_end = loop {
                    if let Some(p) = buf.windows(2).position(|w| w == b"\r\n") {
                        break p;
                    }
                    let r = s.read(&mut chunk).await?;
                    if r == 0 {
                        return Err(std::io::Error::other("closed in a chunk header"));
                    }
                    buf.extend_from_slice(&chunk[..r]);
                };
                let size_text = String::from_utf8_lossy(&buf[..line_end]).to_string();
                let size =
                    usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
                        .map_err(|_| std::io::Error::other("bad chunk size"))?;
                // The size line, the data and its CRLF (or, for the last chunk, the trailer
                // section's blank line).
                let need = line_end + 2 + size + 2;
                while buf.len() < need {
                    let r = s.read(&mut chunk).await?;
                    if r == 0 {
                        return Err(std::io::Error::other("closed in a chunk"));
                    }
                    buf.extend_from_slice(&chunk[..r]);
                }
                out.extend(buf.drain(..need));
                if size == 0 {
                    return Ok(out);
                }
            }
        }
    }
}

/// Serves one client connection, request by request.
async fn serve(
    mut client: TcpStream,
    upstream: SocketAddr,
    config: &FaultConfig,
    counts: &ProxyCounts,
    seq: &AtomicU64,
) -> Io {
    client.set_nodelay(true)?;
    let mut up: Option<TcpStream> = None;
    let (mut cbuf, mut ubuf) = (Vec::new(), Vec::new());
    loop {
        let Some(head) = read_head(&mut client, &mut cbuf).await? else {
            return Ok(());
        };
        let head_text = String::from_utf8_lossy(&head).to_string();
        let is_head = head_text.starts_with("HEAD ");
        let body = read_body(&mut client, &mut cbuf, &framing(&head_text, false, false)).await?;
        let n = seq.fetch_add(1, Ordering::Relaxed);
        counts.requests.fetch_add(1, Ordering::Relaxed);
        if !config.latency.is_zero() {
            tokio::time::sleep(config.latency).await;
        }
        let r = mix(config.seed, n);
        let fault = ((r % 1_000_000) < u64::from(config.fault_ppm))
            .then(|| FAULTS[((r >> 32) % FAULTS.len() as u64) as usize]);
        if let Some(f) = fault {
            let i = FAULTS.iter().position(|x| *x == f).unwrap();
            counts.faults[i].fetch_add(1, Ordering::Relaxed);
        }
        match fault {
            Some(Fault::Delay) => tokio::time::sleep(config.fault_delay).await,
            Some(Fault::Status503) => {
                client
                    .write_all(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    .await?;
                return Ok(());
            }
            Some(Fault::ResetBeforeAnswer) => {
                #[allow(deprecated)] // a zero linger resets at once; it never blocks
                client.set_linger(Some(Duration::ZERO))?;
                return Ok(());
            }
            _ => {}
        }
        if up.is_none() {
            let s = TcpStream::connect(upstream).await?;
            s.set_nodelay(true)?;
            up = Some(s);
            ubuf.clear();
        }
        let u = up.as_mut().unwrap();
        u.write_all(&head).await?;
        u.write_all(&body).await?;
        let Some(rhead) = read_head(u, &mut ubuf).await? else {
            return Ok(());
        };
        let rtext = String::from_utf8_lossy(&rhead).to_string();
        let status: u16 = rtext
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let no_body = is_head || status == 204 || status == 304 || (100..200).contains(&status);
        let f = framing(&rtext, true, no_body);
        let close_after = matches!(f, Framing::UntilClose);
        let rbody = read_body(u, &mut ubuf, &f).await?;
        match fault {
            Some(Fault::ResetMidBody) if rbody.len() >= 2 => {
                client.write_all(&rhead).await?;
                client.write_all(&rbody[..rbody.len() / 2]).await?;
                client.flush().await?;
                #[allow(deprecated)] // a zero linger resets at once; it never blocks
                client.set_linger(Some(Duration::ZERO))?;
                return Ok(());
            }
            Some(Fault::ShortBody | Fault::ResetMidBody) if !rbody.is_empty() => {
                client.write_all(&rhead).await?;
                client.write_all(&rbody[..rbody.len() / 2]).await?;
                client.shutdown().await?;
                return Ok(());
            }
            _ => {
                client.write_all(&rhead).await?;
                client.write_all(&rbody).await?;
            }
        }
        if close_after {
            return Ok(());
        }
    }
}
