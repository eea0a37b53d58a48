//! Child-process test servers: moto's S3 and RangeHTTPServer, one of each per test binary.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::{Location, RemoteUrl, Storage, StorageOptions};

/// The variable that turns a missing S3 or HTTP test server into a failure.
pub const REQUIRE_S3_VAR: &str = "GM_REQUIRE_S3";

/// A server process, killed when dropped. It also exits when its stdin closes, so it never
/// outlives the test binary (statics are never dropped).
#[derive(Debug)]
struct ServerProcess {
    child: Child,
    port: u16,
}

impl ServerProcess {
    /// Starts `exe args` and waits (10 s at most) for its `PORT <n>` line.
    fn spawn(exe: &Path, args: &[&Path]) -> std::io::Result<ServerProcess> {
        let mut child = Command::new(exe)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("no stdout"))?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(Duration::from_secs(10)).unwrap_or_default();
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .and_then(|p| p.parse().ok());
        match port {
            Some(port) => Ok(ServerProcess { child, port }),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                let what = format!("{} gave no port (said {line:?})", exe.display());
                Err(std::io::Error::other(what))
            }
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// moto's S3 server on loopback.
#[derive(Debug)]
pub struct S3Server {
    process: ServerProcess,
}

/// A bucket of its own for one test, on the binary's [`S3Server`].
#[derive(Debug, Clone)]
pub struct TestBucket {
    /// Storage configured for the server (endpoint, credentials, plain HTTP).
    pub storage: Storage,
    name: String,
}

static BUCKETS: AtomicU64 = AtomicU64::new(0);

impl S3Server {
    /// Starts a server with the launcher that `GM_MOTO_SERVER` names.
    pub fn start() -> Option<std::io::Result<S3Server>> {
        let exe = PathBuf::from(std::env::var_os("GM_MOTO_SERVER").filter(|v| !v.is_empty())?);
        Some(ServerProcess::spawn(&exe, &[]).map(|process| S3Server { process }))
    }

    /// `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.process.port)
    }

    /// Options that reach this server: the endpoint, dummy credentials, plain HTTP, and
    /// path-style requests. Tests add their own limits on top.
    pub fn options(&self, base: StorageOptions) -> StorageOptions {
        base.with("endpoint", self.endpoint())
            .with("access_key_id", "test")
            .with("secret_access_key", "test")
            .with("region", "us-east-1")
            .with("allow_http", "true")
    }

    /// Creates a new bucket named after `test` (and a counter) with storage `options`.
    ///
    /// # Panics
    /// When the server refuses to create it: the test cannot run, and that is a failure.
    pub fn bucket(&self, test: &str, options: StorageOptions) -> TestBucket {
        let n = BUCKETS.fetch_add(1, Ordering::Relaxed);
        let clean: String = test
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .take(40)
            .collect();
        let name = format!("{clean}-{}-{n}", std::process::id());
        let status = create_bucket(self.process.port, &name);
        assert!(
            status.as_deref().is_ok_and(|s| s.contains(" 200 ")),
            "creating bucket {name}: {status:?}"
        );
        TestBucket {
            storage: Storage::new(self.options(options)),
            name,
        }
    }
}

/// moto checks no signatures, but routes a request to S3 by the service its `Authorization`
/// header names: a raw PUT with such a header creates a bucket without an S3 client.
fn create_bucket(port: u16, name: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let auth = "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/s3/aws4_request, \
                SignedHeaders=host, Signature=00";
    write!(
        stream,
        "PUT /{name} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: {auth}\r\n\
         Content-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    Ok(response.lines().next().unwrap_or_default().to_string() + " ")
}

impl TestBucket {
    /// The bucket's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The URL of `key` in the bucket.
    pub fn url(&self, key: &str) -> RemoteUrl {
        let text = format!("s3://{}/{key}", self.name);
        match Location::parse(&text) {
            Ok(Location::Remote(url)) => url,
            other => panic!("{text} is not a remote URL: {other:?}"),
        }
    }

    /// Uploads every file under `dir` as `prefix/<relative path>`; returns their count.
    pub fn upload_dir(&self, dir: &Path, prefix: &str) -> std::io::Result<usize> {
        let mut count = 0;
        for path in walk(dir)? {
            let relative = path.strip_prefix(dir).map_err(std::io::Error::other)?;
            let key = format!("{prefix}/{}", relative.display());
            let key = key.trim_start_matches('/').to_string();
            self.storage.put(&self.url(&key), std::fs::read(&path)?)?;
            count += 1;
        }
        Ok(count)
    }
}

fn walk(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            files.extend(walk(&path)?);
        } else {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// RangeHTTPServer serving one directory.
#[derive(Debug)]
pub struct RangeHttpServer {
    process: ServerProcess,
}

impl RangeHttpServer {
    /// Serves `dir` with the launcher that `GM_RANGE_HTTP` names.
    pub fn start(dir: &Path) -> Option<std::io::Result<RangeHttpServer>> {
        let exe = PathBuf::from(std::env::var_os("GM_RANGE_HTTP").filter(|v| !v.is_empty())?);
        Some(ServerProcess::spawn(&exe, &[dir]).map(|process| RangeHttpServer { process }))
    }

    /// The URL of `path` (relative to the served directory).
    pub fn url(&self, path: &str) -> RemoteUrl {
        let text = format!("http://127.0.0.1:{}/{path}", self.process.port);
        match Location::parse(&text) {
            Ok(Location::Remote(url)) => url,
            other => panic!("{text} is not a remote URL: {other:?}"),
        }
    }
}

fn required() -> bool {
    std::env::var(REQUIRE_S3_VAR).is_ok_and(|v| v == "1")
}

/// Whether a server started.
enum Started<T> {
    Absent,
    Failed(String),
    Up(T),
}

impl<T> Started<T> {
    fn from(started: Option<std::io::Result<T>>) -> Started<T> {
        match started {
            None => Started::Absent,
            Some(Err(e)) => Started::Failed(e.to_string()),
            Some(Ok(server)) => Started::Up(server),
        }
    }

    fn or_skip(&self, name: &str, what: &str) -> Option<&T> {
        match self {
            Started::Up(server) => Some(server),
            Started::Absent if !required() => {
                // Straight to stderr: the harness captures eprint!, and a skip must show.
                let _ = writeln!(std::io::stderr(), "SKIP (no {what} test server): {name}");
                None
            }
            Started::Absent => panic!(
                "{name}: no {what} test server and {REQUIRE_S3_VAR}=1 (run `cargo xtask test`)"
            ),
            Started::Failed(e) => panic!("{name}: the {what} test server did not start: {e}"),
        }
    }
}

/// The test binary's S3 server, started on first use, or `None` after the SKIP line.
///
/// # Panics
/// With `GM_REQUIRE_S3=1` and no server, or when the server fails to start.
pub fn s3_or_skip(name: &str) -> Option<&'static S3Server> {
    static SERVER: OnceLock<Started<S3Server>> = OnceLock::new();
    SERVER
        .get_or_init(|| Started::from(S3Server::start()))
        .or_skip(name, "S3")
}

/// A range HTTP server for `dir` (one per call), or `None` after the SKIP line.
///
/// # Panics
/// With `GM_REQUIRE_S3=1` and no server, or when the server fails to start.
pub fn range_http_or_skip(name: &str, dir: &Path) -> Option<RangeHttpServer> {
    match Started::from(RangeHttpServer::start(dir)) {
        Started::Up(server) => Some(server),
        other => {
            other.or_skip(name, "HTTP range");
            None
        }
    }
}
