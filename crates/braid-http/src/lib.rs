//! braid's one HTTP client: a blocking HTTP/1.1 exchange through hyper, used by
//! `braid status`, the lab and the tests to talk to a daemon's status API.
//!
//! The TCP connection is opened with `std` on the calling thread, so a caller that has joined
//! a network namespace (the lab) gets a socket in that namespace; [`exchange`] takes such a
//! socket. Each call runs on its own single-threaded tokio runtime, on a helper thread when
//! the caller is already inside a runtime.

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HOST};
use hyper_util::rt::TokioIo;
use std::fmt;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// The largest body read (a status document of many sessions is well under this).
const MAX_BODY: usize = 16 << 20;

/// One request.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// `GET` or `POST`.
    pub method: &'a str,
    /// Path and query, e.g. `/status`.
    pub path: &'a str,
    /// Sent as `Authorization: Bearer TOKEN`.
    pub bearer: Option<&'a str>,
    /// A `text/plain` body.
    pub body: Option<&'a str>,
}

impl<'a> Request<'a> {
    /// `GET path`.
    pub fn get(path: &'a str) -> Self {
        Request { method: "GET", path, bearer: None, body: None }
    }

    /// `POST path` with a text body and a bearer token.
    pub fn post(path: &'a str, body: &'a str, token: &'a str) -> Self {
        Request { method: "POST", path, bearer: Some(token), body: Some(body) }
    }
}

/// An answer: status code and body (as text, invalid UTF-8 replaced).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The HTTP status code.
    pub status: u16,
    /// The body.
    pub body: String,
}

/// Why an exchange failed.
#[derive(Debug)]
pub enum Error {
    /// No TCP connection (nothing listens, unreachable, timed out).
    Connect { addr: SocketAddr, source: std::io::Error },
    /// No complete answer within the time limit.
    Timeout { addr: SocketAddr, limit: Duration },
    /// The exchange broke (connection reset, malformed answer, body too large).
    Exchange { addr: SocketAddr, reason: String },
    /// An answer other than 200 where only 200 will do ([`get_ok`]).
    Status { addr: SocketAddr, path: String, status: u16, body: String },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Connect { addr, source } => write!(f, "cannot reach {addr}: {source}"),
            Error::Timeout { addr, limit } => write!(f, "{addr} did not answer within {limit:?}"),
            Error::Exchange { addr, reason } => write!(f, "HTTP exchange with {addr} failed: {reason}"),
            Error::Status { addr, path, status, body } => {
                write!(f, "{addr} answered HTTP {status} to {path}: {}", body.trim())
            }
        }
    }
}

impl std::error::Error for Error {}

/// Connects to `addr` within `limit`.
pub fn connect(addr: SocketAddr, limit: Duration) -> Result<TcpStream, Error> {
    TcpStream::connect_timeout(&addr, limit).map_err(|source| Error::Connect { addr, source })
}

/// `GET path` on `addr`: connect and exchange, each within `limit`.
pub fn get(addr: SocketAddr, path: &str, limit: Duration) -> Result<Response, Error> {
    exchange(connect(addr, limit)?, addr, Request::get(path), limit)
}

/// The body of a 200 answer to `GET path`; any other status is an error.
pub fn get_ok(addr: SocketAddr, path: &str, limit: Duration) -> Result<String, Error> {
    match get(addr, path, limit)? {
        Response { status: 200, body } => Ok(body),
        Response { status, body } => Err(Error::Status { addr, path: path.into(), status, body }),
    }
}

/// Sends `req` over `stream`, a connection to `addr`, and reads the whole answer within
/// `limit`.
pub fn exchange(
    stream: TcpStream,
    addr: SocketAddr,
    req: Request<'_>,
    limit: Duration,
) -> Result<Response, Error> {
    let broken = |reason: String| Error::Exchange { addr, reason };
    stream.set_nonblocking(true).map_err(|e| broken(e.to_string()))?;
    let run = move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| broken(format!("no runtime: {e}")))?;
        rt.block_on(async {
            let stream = tokio::net::TcpStream::from_std(stream).map_err(|e| broken(e.to_string()))?;
            match tokio::time::timeout(limit, send(stream, addr, req)).await {
                Ok(r) => r.map_err(broken),
                Err(_) => Err(Error::Timeout { addr, limit }),
            }
        })
    };
    if tokio::runtime::Handle::try_current().is_ok() {
        // block_on inside a runtime would panic: run beside it.
        std::thread::scope(|s| s.spawn(run).join().unwrap_or_else(|_| Err(broken("panicked".into()))))
    } else {
        run()
    }
}

async fn send(stream: tokio::net::TcpStream, addr: SocketAddr, req: Request<'_>) -> Result<Response, String> {
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let mut builder =
        hyper::Request::builder().method(req.method).uri(req.path).header(HOST, addr.to_string());
    if let Some(token) = req.bearer {
        builder = builder.header(AUTHORIZATION, format!("Bearer {token}"));
    }
    if req.body.is_some() {
        builder = builder.header(CONTENT_TYPE, "text/plain");
    }
    let body = Full::new(Bytes::from(req.body.unwrap_or_default().to_owned()));
    let request = builder.body(body).map_err(|e| e.to_string())?;
    let answer = sender.send_request(request).await.map_err(|e| e.to_string())?;
    let status = answer.status().as_u16();
    let bytes =
        Limited::new(answer.into_body(), MAX_BODY).collect().await.map_err(|e| e.to_string())?.to_bytes();
    Ok(Response { status, body: String::from_utf8_lossy(&bytes).into_owned() })
}

#[cfg(test)]
mod tests;
