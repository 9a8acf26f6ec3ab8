//! The moto S3 server and nginx, each started on a free loopback port and killed on drop.
//! Without the program installed a test skips with one line, unless
//! `LEVELTABLE_REQUIRE_SERVERS=1`.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use leveltable_object::Location;

/// Whether missing servers fail the test instead of skipping it.
fn required() -> bool {
    std::env::var("LEVELTABLE_REQUIRE_SERVERS").is_ok_and(|v| v == "1")
}

/// The first of `candidates` that exists as a file or on `PATH`.
fn find_program(env: &str, candidates: &[&str]) -> Option<PathBuf> {
    if let Ok(p) = std::env::var(env) {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var("PATH").unwrap_or_default();
    for c in candidates {
        let c = Path::new(c);
        if c.is_absolute() {
            if c.is_file() {
                return Some(c.to_path_buf());
            }
            continue;
        }
        for dir in std::env::split_paths(&path) {
            let p = dir.join(c);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Skips (returns `None`, printing one line) or fails when `what` is not installed.
fn missing<T>(what: &str) -> Option<T> {
    if required() {
        panic!("{what} is not installed and LEVELTABLE_REQUIRE_SERVERS=1");
    }
    println!("skipping: {what} is not installed");
    None
}

/// A free loopback port.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits until something accepts connections on `port`.
fn wait_for_port(port: u16, child: &mut Child, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{what} exited at start: {status}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{what} did not listen on port {port} within 60 s");
}

/// Sends one raw HTTP/1.1 request and returns the status code.
pub fn raw_request(port: u16, method: &str, path: &str) -> u16 {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// A moto S3 server with one bucket.
pub struct Moto {
    child: Child,
    pub port: u16,
    pub bucket: String,
}

pub const ACCESS_KEY: &str = "AKIDLEVELTABLETEST";
pub const SECRET_KEY: &str = "levelTableSecretKeyDoNotPrint0123456789";

impl Moto {
    /// Starts moto, or `None` (one line printed) if it is not installed.
    pub fn start() -> Option<Moto> {
        let Some(program) = find_program("MOTO_SERVER", &["moto_server"]) else {
            return missing("moto_server (pip install \"moto[server]\")");
        };
        let port = free_port();
        let mut child = Command::new(program)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start moto_server");
        wait_for_port(port, &mut child, "moto_server");
        let bucket = "leveltable".to_string();
        let status = raw_request(port, "PUT", &format!("/{bucket}"));
        assert_eq!(status, 200, "creating the bucket");
        Some(Moto {
            child,
            port,
            bucket,
        })
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The options pointing a location at this server (through `endpoint`, which may be a
    /// proxy in front of it).
    pub fn options(endpoint: &str) -> Vec<(String, String)> {
        vec![
            ("aws_endpoint".into(), endpoint.into()),
            ("aws_allow_http".into(), "true".into()),
            ("aws_access_key_id".into(), ACCESS_KEY.into()),
            ("aws_secret_access_key".into(), SECRET_KEY.into()),
            ("aws_region".into(), "us-east-1".into()),
            ("timeout".into(), "5s".into()),
        ]
    }

    /// The object `key` in the bucket, through this server directly.
    pub fn location(&self, key: &str) -> Location {
        self.location_via(&self.endpoint(), key)
    }

    /// The object `key` in the bucket, through `endpoint`.
    pub fn location_via(&self, endpoint: &str, key: &str) -> Location {
        Location::parse_with(
            &format!("s3://{}/{key}", self.bucket),
            Moto::options(endpoint),
        )
        .unwrap()
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// nginx serving a temporary directory.
pub struct Nginx {
    child: Child,
    pub port: u16,
    pub root: PathBuf,
    _dir: tempfile::TempDir,
}

impl Nginx {
    /// Starts nginx, or `None` (one line printed) if it is not installed.
    pub fn start() -> Option<Nginx> {
        let Some(program) = find_program("NGINX", &["nginx", "/usr/sbin/nginx"]) else {
            return missing("nginx (apt-get install nginx)");
        };
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("www");
        std::fs::create_dir(&root).unwrap();
        std::fs::create_dir(dir.path().join("tmp")).unwrap();
        let port = free_port();
        let d = dir.path().display();
        let conf = format!(
            "daemon off;\nmaster_process off;\nworker_processes 1;\nerror_log {d}/error.log;\npid {d}/nginx.pid;\n\
             events {{ worker_connections 512; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {d}/tmp/body;\n  proxy_temp_path {d}/tmp/proxy;\n\
               fastcgi_temp_path {d}/tmp/fastcgi;\n  uwsgi_temp_path {d}/tmp/uwsgi;\n  scgi_temp_path {d}/tmp/scgi;\n\
               keepalive_requests 100000;\n\
               server {{\n    listen 127.0.0.1:{port};\n    root {r};\n    location / {{ }}\n  }}\n}}\n",
            r = root.display()
        );
        let conf_path = dir.path().join("nginx.conf");
        std::fs::write(&conf_path, conf).unwrap();
        let mut child = Command::new(program)
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(&conf_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nginx");
        wait_for_port(port, &mut child, "nginx");
        Some(Nginx {
            child,
            port,
            root,
            _dir: dir,
        })
    }

    /// Puts `bytes` at `name` under the served directory, atomically (a rename).
    pub fn put(&self, name: &str, bytes: &[u8]) {
        let tmp = self.root.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, bytes).unwrap();
        std::fs::rename(&tmp, self.root.join(name)).unwrap();
    }

    /// The object `name`, through `endpoint` (this server or a proxy before it).
    pub fn location_via(&self, endpoint: &str, name: &str) -> Location {
        Location::parse_with(&format!("{endpoint}/{name}"), [("timeout", "5s")]).unwrap()
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn location(&self, name: &str) -> Location {
        self.location_via(&self.endpoint(), name)
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
