//! [`FaultServer`]: an HTTP/1.1 origin on loopback (keep-alive, GET/HEAD, ranges, ETags,
//! `If-Match`) whose answers a test scripts: error statuses, delays, cut bodies, a stop and a
//! restart on the same port, an object replaced under a reader.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::http::{Request, byte_range, head, read_request};
use crate::{Location, RemoteUrl};

/// One scripted misbehaviour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Answer this status with an empty body.
    Status(u16),
    /// Wait this long, then answer normally.
    Delay(Duration),
    /// Send the head and this many body bytes, then close the connection.
    CutBody(usize),
}

#[derive(Debug)]
struct Rule {
    key: Option<String>,
    fault: Fault,
    remaining: u32,
}

#[derive(Debug, Clone)]
struct Object {
    bytes: Arc<Vec<u8>>,
    version: u64,
    etag: bool,
}

#[derive(Debug, Default)]
struct Shared {
    objects: Mutex<HashMap<String, Object>>,
    rules: Mutex<Vec<Rule>>,
    log: Mutex<Vec<String>>,
    requests: AtomicU64,
    versions: AtomicU64,
    /// Bumped by `stop`: connections of an older generation close.
    generation: AtomicU64,
    /// Open connections, shut down by `stop` at once (a keep-alive connection must not answer
    /// one more request after the server stopped).
    connections: Mutex<Vec<TcpStream>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An in-process HTTP origin with scripted faults. Dropping it stops it.
#[derive(Debug)]
pub struct FaultServer {
    shared: Arc<Shared>,
    port: u16,
    accept: Option<JoinHandle<()>>,
}

impl FaultServer {
    /// Starts an empty server on a free loopback port.
    pub fn start() -> io::Result<FaultServer> {
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        let port = listener.local_addr()?.port();
        let shared = Arc::new(Shared::default());
        let accept = Some(spawn_accept(listener, Arc::clone(&shared)));
        Ok(FaultServer {
            shared,
            port,
            accept,
        })
    }

    /// Serves `bytes` as `key`, with an ETag (a new one each time: replacing an object
    /// changes it).
    pub fn insert(&self, key: &str, bytes: Vec<u8>) {
        self.put(key, bytes, true);
    }

    /// Serves `bytes` as `key` with only Last-Modified, as many plain HTTP servers do.
    pub fn insert_without_etag(&self, key: &str, bytes: Vec<u8>) {
        self.put(key, bytes, false);
    }

    fn put(&self, key: &str, bytes: Vec<u8>, etag: bool) {
        let version = self.shared.versions.fetch_add(1, Ordering::Relaxed) + 1;
        let object = Object {
            bytes: Arc::new(bytes),
            version,
            etag,
        };
        lock(&self.shared.objects).insert(key.to_string(), object);
    }

    /// Serves every file under `dir` as `prefix/<relative path>`.
    pub fn serve_dir(&self, dir: &Path, prefix: &str) -> io::Result<usize> {
        let mut n = 0;
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let key = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            if path.is_dir() {
                n += self.serve_dir(&path, &key)?;
            } else {
                self.insert(&key, std::fs::read(&path)?);
                n += 1;
            }
        }
        Ok(n)
    }

    /// Removes `key` (later requests get 404).
    pub fn remove(&self, key: &str) {
        lock(&self.shared.objects).remove(key);
    }

    /// Applies `fault` to the next `times` requests for `key` (any key for `None`).
    pub fn script(&self, key: Option<&str>, fault: Fault, times: u32) {
        let rule = Rule {
            key: key.map(str::to_string),
            fault,
            remaining: times,
        };
        lock(&self.shared.rules).push(rule);
    }

    /// Stops listening and closes open connections: requests are refused until `restart`.
    pub fn stop(&mut self) {
        self.shared.generation.fetch_add(1, Ordering::SeqCst);
        for connection in lock(&self.shared.connections).drain(..) {
            let _ = connection.shutdown(Shutdown::Both);
        }
        // Wakes the accept loop, which sees the new generation and drops the listener.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }

    /// Listens again on the same port.
    pub fn restart(&mut self) -> io::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(5);
        let listener = loop {
            match TcpListener::bind(("127.0.0.1", self.port)) {
                Ok(l) => break l,
                Err(e) if Instant::now() > deadline => return Err(e),
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        };
        self.accept = Some(spawn_accept(listener, Arc::clone(&self.shared)));
        Ok(())
    }

    /// The URL of `key`.
    pub fn url(&self, key: &str) -> RemoteUrl {
        let text = format!("http://127.0.0.1:{}/{key}", self.port);
        match Location::parse(&text) {
            Ok(Location::Remote(url)) => url,
            other => panic!("{text} is not a remote URL: {other:?}"),
        }
    }

    /// Requests answered so far (faults included).
    pub fn requests(&self) -> u64 {
        self.shared.requests.load(Ordering::Relaxed)
    }

    /// One line per request: `GET key range` (`-` without a range).
    pub fn log(&self) -> Vec<String> {
        lock(&self.shared.log).clone()
    }
}

impl Drop for FaultServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn spawn_accept(listener: TcpListener, shared: Arc<Shared>) -> JoinHandle<()> {
    let generation = shared.generation.load(Ordering::SeqCst);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            if shared.generation.load(Ordering::SeqCst) != generation {
                break;
            }
            let Ok(stream) = stream else { continue };
            if let Ok(clone) = stream.try_clone() {
                lock(&shared.connections).push(clone);
            }
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || {
                let _ = serve(stream, &shared, generation);
            });
        }
    })
}

/// Serves one keep-alive connection until the client closes it or the server stops.
fn serve(stream: TcpStream, shared: &Shared, generation: u64) -> io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    loop {
        // Short read timeouts while idle, so that a stop closes idle connections.
        out.set_read_timeout(Some(Duration::from_millis(50)))?;
        loop {
            if shared.generation.load(Ordering::SeqCst) != generation {
                return out.shutdown(Shutdown::Both);
            }
            match reader.fill_buf() {
                Ok([]) => return Ok(()),
                Ok(_) => break,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => return Err(e),
            }
        }
        out.set_read_timeout(Some(Duration::from_secs(5)))?;
        let Some(request) = read_request(&mut reader)? else {
            return Ok(());
        };
        shared.requests.fetch_add(1, Ordering::Relaxed);
        let range = request.range.clone().unwrap_or_else(|| "-".into());
        lock(&shared.log).push(format!("{} {} {range}", request.method, request.path));
        let keep = answer(&request, &mut out, shared, generation)?;
        if !keep || request.close {
            return out.shutdown(Shutdown::Both);
        }
    }
}

/// The scripted fault for `key`, if one is left.
fn next_fault(shared: &Shared, key: &str) -> Option<Fault> {
    let mut rules = lock(&shared.rules);
    let rule = rules
        .iter_mut()
        .find(|r| r.remaining > 0 && r.key.as_deref().is_none_or(|k| k == key))?;
    rule.remaining -= 1;
    Some(rule.fault.clone())
}

/// Writes the answer; `Ok(false)` when the connection must close.
fn answer(
    request: &Request,
    out: &mut TcpStream,
    shared: &Shared,
    generation: u64,
) -> io::Result<bool> {
    let mut cut = None;
    match next_fault(shared, &request.path) {
        Some(Fault::Status(status)) => {
            out.write_all(head(status, 0, &[]).as_bytes())?;
            return Ok(true);
        }
        Some(Fault::Delay(delay)) => {
            let until = Instant::now() + delay;
            while Instant::now() < until {
                if shared.generation.load(Ordering::SeqCst) != generation {
                    return Ok(false);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        Some(Fault::CutBody(n)) => cut = Some(n),
        None => {}
    }
    let object = lock(&shared.objects).get(&request.path).cloned();
    let Some(object) = object else {
        out.write_all(head(404, 0, &[]).as_bytes())?;
        return Ok(true);
    };
    let etag = format!("\"v{}\"", object.version);
    if object.etag
        && request
            .if_match
            .as_ref()
            .is_some_and(|m| m != &etag && m != "*")
    {
        out.write_all(head(412, 0, &[]).as_bytes())?;
        return Ok(true);
    }
    let len = object.bytes.len() as u64;
    let Ok(range) = byte_range(request.range.as_deref(), len) else {
        out.write_all(head(416, 0, &[("Content-Range", format!("bytes */{len}"))]).as_bytes())?;
        return Ok(true);
    };
    let mut headers = vec![
        ("Accept-Ranges", "bytes".to_string()),
        ("Last-Modified", http_date(object.version)),
    ];
    if object.etag {
        headers.push(("ETag", etag));
    }
    let (status, body) = match range {
        Some(r) => {
            headers.push((
                "Content-Range",
                format!("bytes {}-{}/{len}", r.start, r.end - 1),
            ));
            (206, &object.bytes[r.start as usize..r.end as usize])
        }
        None => (200, &object.bytes[..]),
    };
    out.write_all(head(status, body.len() as u64, &headers).as_bytes())?;
    if request.method == "HEAD" {
        return Ok(true);
    }
    match cut {
        Some(n) => {
            out.write_all(&body[..n.min(body.len())])?;
            out.flush()?;
            Ok(false)
        }
        None => out.write_all(body).map(|()| true),
    }
}

/// A distinct HTTP date per object version (seconds after a fixed day).
fn http_date(version: u64) -> String {
    let (h, m, s) = (version / 3600 % 24, version / 60 % 60, version % 60);
    format!("Mon, 23 Nov 2026 {h:02}:{m:02}:{s:02} GMT")
}
