//! Tables named by URL: built to and read from file:// URLs (always) and an S3 server (moto,
//! when installed), with `--stats` counting the requests.

#![cfg(feature = "object")]

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use predicates::prelude::*;

/// `stats: requests N (get G, ...` → G.
fn gets_in(stderr: &str) -> u64 {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("stats: "))
        .expect("a stats line");
    let after = line.split("(get ").nth(1).unwrap();
    after.split(',').next().unwrap().parse().unwrap()
}

/// Builds `local.ldb` in `dir` from the file `input`: its path and what `dump` prints of it.
fn local_table(dir: &Path, input: &Path) -> (PathBuf, Vec<u8>) {
    let local = dir.join("local.ldb");
    leveltable()
        .arg("build")
        .arg(&local)
        .arg(input)
        .assert()
        .success();
    let dump = leveltable().arg("dump").arg(&local).output().unwrap();
    (local, dump.stdout)
}

#[test]
fn file_urls_build_get_dump_and_count_requests() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.tsv");
    std::fs::write(&input, sorted_tsv(500)).unwrap();
    let url = format!("file://{}/t.ldb", dir.path().display());
    leveltable()
        .args(["--stats", "build", &url])
        .arg(&input)
        .assert()
        .success()
        .stderr(
            predicate::str::contains("uploaded")
                .and(predicate::str::contains("stats: requests 2 (get 1, put 1")),
        );
    // The same bytes as a local build.
    let (local, local_dump) = local_table(dir.path(), &input);
    assert_eq!(
        std::fs::read(dir.path().join("t.ldb")).unwrap(),
        std::fs::read(&local).unwrap()
    );
    let dumped = leveltable().args(["dump", &url]).output().unwrap();
    assert!(dumped.status.success());
    assert_eq!(dumped.stdout, local_dump);
    // A small table: open and get in one request (the tail holds it all).
    let out = leveltable()
        .args(["get", &url, "--stats"])
        .arg(first_key())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(gets_in(&stderr_of(&out)), 1);
    leveltable().args(["verify", &url]).assert().success();
    leveltable().args(["stats", &url]).assert().success();
    // A missing object is an error naming it.
    leveltable()
        .args([
            "get",
            &format!("file://{}/none.ldb", dir.path().display()),
            "k",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("none.ldb").and(predicate::str::contains("not found")));
}

fn first_key() -> String {
    sorted_tsv(1).split('\t').next().unwrap().to_owned()
}

struct Moto(Child, u16);

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn moto() -> Option<Moto> {
    let program = std::env::var("MOTO_SERVER").unwrap_or_else(|_| "moto_server".into());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(&program)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let child = match child {
        Ok(c) => c,
        Err(_) if std::env::var("LEVELTABLE_REQUIRE_SERVERS").is_ok_and(|v| v == "1") => {
            panic!("moto_server is not installed and LEVELTABLE_REQUIRE_SERVERS=1")
        }
        Err(_) => {
            println!("skipping: moto_server (pip install \"moto[server]\") is not installed");
            return None;
        }
    };
    let mut m = Moto(child, port);
    // The bucket is made once the server answers: a server that accepts connections
    // before it serves may close one unanswered, so the request is made again until then.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(Some(status)) = m.0.try_wait() {
            panic!("moto_server exited ({status}) before it served");
        }
        let answer = TcpStream::connect(("127.0.0.1", port)).map(|mut s| {
            let _ = write!(
                s,
                "PUT /bkt HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            let mut answer = String::new();
            let _ = s.read_to_string(&mut answer);
            answer
        });
        match answer {
            Ok(a) if a.starts_with("HTTP/1.1 200") => return Some(m),
            Ok(a) if !a.is_empty() => panic!("making the bucket: {a}"),
            _ => {}
        }
        assert!(Instant::now() < deadline, "moto_server did not serve");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn s3_urls_through_moto() {
    let Some(m) = moto() else { return };
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.tsv");
    std::fs::write(&input, sorted_tsv(20_000)).unwrap();
    let env = [
        ("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{}", m.1)),
        ("AWS_ALLOW_HTTP", "true".into()),
        ("AWS_ACCESS_KEY_ID", "AKIDCLITEST".into()),
        ("AWS_SECRET_ACCESS_KEY", "cliSecretNeverShown".into()),
        ("AWS_REGION", "us-east-1".into()),
    ];
    let cmd = || {
        let mut c = leveltable();
        c.envs(env.iter().map(|(k, v)| (k, v)));
        c
    };
    cmd()
        .args(["build", "s3://bkt/t.ldb"])
        .arg(&input)
        .assert()
        .success();
    let (_, local_dump) = local_table(dir.path(), &input);
    let out = cmd()
        .args(["--stats", "dump", "s3://bkt/t.ldb"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(out.stdout, local_dump);
    // A scan reads ahead: far fewer requests than the table's data blocks.
    let gets = gets_in(&stderr_of(&out));
    assert!(gets < 15, "dump took {gets} requests");
    let out = cmd()
        .args(["get", "s3://bkt/t.ldb", "--stats", "absent-key"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(gets_in(&stderr_of(&out)) <= 2);
    let out = cmd()
        .args(["get", "s3://bkt/missing.ldb", "k"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!stderr_of(&out).contains("cliSecretNeverShown"));
}

#[test]
fn database_commands_take_urls() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.tsv");
    std::fs::write(&input, sorted_tsv(3000)).unwrap();
    let db = dir.path().join("db");
    leveltable()
        .args(["db", "build"])
        .arg(&db)
        .arg(&input)
        .assert()
        .success();
    // A file:// prefix is the directory itself, read through the object store layer.
    let url = format!("file://{}", db.display());
    let local = leveltable().args(["db", "dump"]).arg(&db).output().unwrap();
    let remote = leveltable()
        .args(["--stats", "db", "dump", &url])
        .output()
        .unwrap();
    assert!(remote.status.success(), "{}", stderr_of(&remote));
    assert_eq!(remote.stdout, local.stdout);
    assert!(
        stderr_of(&remote).contains("list 1"),
        "{}",
        stderr_of(&remote)
    );
    leveltable()
        .args(["db", "get", &url])
        .arg(first_key())
        .assert()
        .success();
    leveltable().args(["db", "verify", &url]).assert().success();
    let local = leveltable()
        .args(["db", "stats"])
        .arg(&db)
        .output()
        .unwrap();
    let remote = leveltable().args(["db", "stats", &url]).output().unwrap();
    assert!(remote.status.success(), "{}", stderr_of(&remote));
    let text = String::from_utf8_lossy(&remote.stdout).replace(&url, &db.display().to_string());
    assert_eq!(text, String::from_utf8_lossy(&local.stdout));
    // Built straight to a prefix: the same entries.
    let out = tempfile::tempdir().unwrap();
    let prefix = format!("file://{}/copy", out.path().display());
    std::fs::create_dir(out.path().join("copy")).unwrap();
    leveltable()
        .args(["db", "build", &prefix])
        .arg(&input)
        .assert()
        .success()
        .stderr(predicate::str::contains("uploaded"));
    let copied = leveltable().args(["db", "dump", &prefix]).output().unwrap();
    let local = leveltable().args(["db", "dump"]).arg(&db).output().unwrap();
    assert_eq!(copied.stdout, local.stdout);
    leveltable()
        .args(["db", "dump", "--salvage", &url])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("local directory"));
}

#[test]
fn urls_with_credentials_are_refused_naming_the_variables_to_set() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.tsv");
    std::fs::write(&input, sorted_tsv(10)).unwrap();
    let input = input.display().to_string();
    for (url, variable) in [
        ("s3://AKIDLEAK:wJalrLEAK@bucket/db", "AWS_ACCESS_KEY_ID"),
        ("gs://someone:pwLEAK@bucket/db", "GOOGLE_SERVICE_ACCOUNT"),
        ("https://someone:pwLEAK@host.invalid/db", "presigned URL"),
    ] {
        let table = format!("{url}/t.ldb");
        for args in [
            vec!["get", table.as_str(), "k"],
            vec!["dump", table.as_str()],
            vec!["build", table.as_str(), input.as_str()],
            vec!["db", "get", url, "k"],
            vec!["db", "verify", url],
            vec!["db", "build", url, input.as_str()],
        ] {
            let out = leveltable().args(&args).output().unwrap();
            let err = stderr_of(&out);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(
                err.contains("credentials in a URL") && err.contains(variable),
                "{args:?}: {err}"
            );
            assert!(
                !err.contains("LEAK") && !err.contains("someone"),
                "{args:?}: {err}"
            );
        }
    }
}

/// nginx with its WebDAV extension (listing by PROPFIND) serving `root`, or `None` when
/// either is missing.
struct Nginx {
    child: Child,
    port: u16,
    /// Its configuration and temporary files.
    _dir: tempfile::TempDir,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn nginx_dav(root: &Path) -> Option<Nginx> {
    let program = std::env::var("NGINX").unwrap_or_else(|_| "/usr/sbin/nginx".into());
    let module = ["/usr/lib/nginx/modules", "/usr/lib64/nginx/modules"]
        .iter()
        .map(|d| Path::new(d).join("ngx_http_dav_ext_module.so"))
        .find(|m| m.is_file());
    let (true, Some(module)) = (Path::new(&program).is_file(), module) else {
        if std::env::var("LEVELTABLE_REQUIRE_SERVERS").is_ok_and(|v| v == "1") {
            panic!("nginx or its WebDAV extension is missing and LEVELTABLE_REQUIRE_SERVERS=1");
        }
        println!("skipping: nginx (apt-get install nginx libnginx-mod-http-dav-ext) is missing");
        return None;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let conf = format!(
        "load_module {m};\ndaemon off;\nmaster_process off;\nworker_processes 1;\n\
         error_log {d}/error.log;\npid {d}/nginx.pid;\nevents {{ worker_connections 64; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n\
         proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n\
         uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
         server {{\n    listen 127.0.0.1:{port};\n    root {r};\n\
         location / {{ dav_ext_methods PROPFIND OPTIONS; }}\n  }}\n}}\n",
        m = module.display(),
        r = root.display()
    );
    let conf_path = dir.path().join("nginx.conf");
    std::fs::write(&conf_path, conf).unwrap();
    let child = Command::new(&program)
        .arg("-p")
        .arg(dir.path())
        .arg("-c")
        .arg(&conf_path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start nginx");
    let server = Nginx {
        child,
        port,
        _dir: dir,
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nginx did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(server)
}

/// Builds `sorted_tsv(3000)` at `db` in tables of at most 20,000 bytes.
fn build_in_tables(db: &Path) {
    leveltable()
        .args(["db", "build", "--max-file-size", "20000"])
        .arg(db)
        .write_stdin(sorted_tsv(3000))
        .assert()
        .success();
}

/// A database prefix on an HTTP server named with a query (a presigned URL's signature):
/// `db stats` reads its tables with the query, as `db dump` reads them.
#[test]
fn db_stats_reads_the_tables_of_a_prefix_with_a_query() {
    let root = tempfile::tempdir().unwrap();
    let db = root.path().join("db");
    build_in_tables(&db);
    let Some(server) = nginx_dav(root.path()) else {
        return;
    };
    let url = format!("http://127.0.0.1:{}/db?sig=abc", server.port);
    let dump = leveltable().args(["db", "dump", &url]).output().unwrap();
    assert!(dump.status.success(), "{}", stderr_of(&dump));
    assert_eq!(dump.stdout, sorted_tsv(3000).into_bytes());
    let local = leveltable()
        .args(["db", "stats", "--json"])
        .arg(&db)
        .output()
        .unwrap();
    let remote = leveltable()
        .args(["db", "stats", "--json", &url])
        .output()
        .unwrap();
    assert!(remote.status.success(), "{}", stderr_of(&remote));
    let json = |out: &std::process::Output| {
        let mut v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["dir"] = serde_json::Value::Null;
        v
    };
    assert_eq!(json(&remote), json(&local));
}

/// A database whose tables are named `NNNNNN.sst` (LevelDB before 1.14) under a prefix:
/// `db stats` finds them as LevelDB does, trying `.sst` after `.ldb`.
#[test]
fn db_stats_reads_sst_tables_under_a_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    build_in_tables(&db);
    for e in std::fs::read_dir(&db).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "ldb") {
            std::fs::rename(&path, path.with_extension("sst")).unwrap();
        }
    }
    let url = format!("file://{}", db.display());
    let local = leveltable()
        .args(["db", "stats"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(local.status.success(), "{}", stderr_of(&local));
    let remote = leveltable().args(["db", "stats", &url]).output().unwrap();
    assert!(remote.status.success(), "{}", stderr_of(&remote));
    let text = String::from_utf8_lossy(&remote.stdout).replace(&url, &db.display().to_string());
    assert_eq!(text, String::from_utf8_lossy(&local.stdout));
}

/// A directory holding a database `db` of ten entries, and that database's `file://` URL.
fn small_db_url() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    leveltable()
        .args(["db", "build"])
        .arg(&db)
        .write_stdin(sorted_tsv(10))
        .assert()
        .success();
    let url = format!("file://{}", db.display());
    (dir, url)
}

/// Following reads a local directory only: `db watch` and `chromium local-storage --watch`
/// given a URL say so, rather than that an existing prefix does not exist.
#[test]
fn watching_a_url_is_refused_as_such() {
    let (_dir, url) = small_db_url();
    for args in [
        &["db", "watch", &url][..],
        &["chromium", "local-storage", "--watch", &url],
    ] {
        leveltable()
            .args(args)
            .timeout(Duration::from_secs(20))
            .assert()
            .code(2)
            .stdout("")
            .stderr(format!(
                "error: {url}: following a database reads a local directory only; copy the \
                 database first\n"
            ));
    }
}

/// A URL's query (a presigned URL's signature) is sent, never shown: `db stats` names the
/// database by its URL without it, as `stats` names a table.
#[test]
fn db_stats_shows_a_url_without_its_query() {
    let (_dir, url) = small_db_url();
    let signed = format!("{url}?sig=SECRET");
    let out = leveltable()
        .args(["db", "stats", &signed])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    assert!(text.starts_with(&format!("database: {url}\n")), "{text}");
    let out = leveltable()
        .args(["db", "stats", "--json", &signed])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["dir"], url);
}

/// `db build` and `db commit` to a prefix that holds objects are refused, as a directory that
/// is not empty is: an upload there would mix the new database's files with another's.
#[test]
fn building_to_a_prefix_that_is_not_empty_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("db");
    std::fs::create_dir(&prefix).unwrap();
    std::fs::write(prefix.join("notes.txt"), b"precious").unwrap();
    let url = format!("file://{}", prefix.display());
    let refusal = format!(
        "error: {url} is not empty: a database is built only under a new or empty prefix\n"
    );
    leveltable()
        .args(["db", "build", &url])
        .write_stdin(sorted_tsv(10))
        .assert()
        .code(2)
        .stderr(refusal.clone());
    let part = dir.path().join("part");
    leveltable()
        .args(["db", "build-part", "-q"])
        .arg(&part)
        .write_stdin(sorted_tsv(10))
        .assert()
        .success();
    leveltable()
        .args(["db", "commit", &url])
        .arg(&part)
        .assert()
        .code(2)
        .stderr(refusal);
    assert_eq!(files_in(&prefix), ["notes.txt"]);
    assert!(part.join("PART").is_file());
}

/// `build` to a URL where an object exists refuses, as to a file that exists, unless
/// `--force` is given; the object is left as it was.
#[test]
fn building_over_an_object_wants_force() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("t.ldb");
    std::fs::write(&target, b"precious").unwrap();
    let url = format!("file://{}", target.display());
    leveltable()
        .args(["build", &url])
        .write_stdin(sorted_tsv(10))
        .assert()
        .code(2)
        .stderr(format!(
            "error: {url} already exists (use --force to replace it)\n"
        ));
    assert_eq!(std::fs::read(&target).unwrap(), b"precious");
    leveltable()
        .args(["build", "-q", "--force", &url])
        .write_stdin(sorted_tsv(10))
        .assert()
        .success();
    let dump = leveltable().args(["dump", &url]).output().unwrap();
    assert_eq!(stdout_of(&dump), sorted_tsv(10));
}
