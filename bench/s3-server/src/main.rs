//! `gm-bench-s3-server ROOT PORT [ACCESS_KEY SECRET_KEY]`: serves ROOT (one folder per bucket)
//! as an S3-compatible endpoint on 127.0.0.1:PORT, with TCP_NODELAY on every connection, and
//! GET bodies read in 1 MiB pieces (`fast_get`).
#![allow(clippy::print_stdout)]

mod fast_get;

use anyhow::{Context, Result};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;
use tokio::net::TcpListener;

#[tokio::main]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (root, port) = match &args[..] {
        [root, port, ..] => (root, port.parse::<u16>().context("PORT")?),
        _ => anyhow::bail!("usage: gm-bench-s3-server ROOT PORT [ACCESS_KEY SECRET_KEY]"),
    };
    let fs = s3s_fs::FileSystem::new(root).map_err(|e| anyhow::anyhow!("{root}: {e:?}"))?;
    let store = fast_get::FastGet::new(fs, root.into());
    let mut service = S3ServiceBuilder::new(store);
    if let [_, _, key, secret] = &args[..] {
        service.set_auth(SimpleAuth::from_single(key.as_str(), secret.as_str()));
    }
    let service = service.build();
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on {}", listener.local_addr()?);
    let http = Builder::new(TokioExecutor::new());
    loop {
        let (socket, _) = listener.accept().await?;
        // Without it each response's last segment waits for the client's delayed ACK.
        socket.set_nodelay(true)?;
        let conn = http
            .serve_connection(TokioIo::new(socket), service.clone())
            .into_owned();
        tokio::spawn(async move {
            let _ = conn.await;
        });
    }
}
