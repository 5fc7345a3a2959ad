//! The guard of the status port. The port is a control port too — `POST /scheduler` changes
//! how every session sends, and `redundant` multiplies the bytes on metered links — so it is
//! closed to the ways a web page in the operator's browser could reach it:
//!
//! * a request whose `Host` is not an IP literal or `localhost` with this port is refused
//!   (403): that is what a DNS-rebinding page sends. (A request without `Host` passes:
//!   HTTP/1.0 allows it, and browsers always send one.)
//! * a request with an `Origin` other than `http://` + the status address, a loopback address
//!   or `localhost`, with this port, is refused (403), GET included: cross-site `fetch`es and
//!   form posts carry one. (The daemon's own page sends none for its GETs.)
//! * every change (any method but GET and HEAD) needs `Authorization: Bearer TOKEN` (401).
//!   The token is 32 bytes from the OS random source, new at each start, written in hex to a
//!   file created with mode 0600. Its default place is derived from the status address —
//!   [`runtime_dir`]`/status-IP-PORT.token` — so that `braid status` finds it without flags;
//!   `status_token_file` puts it elsewhere. It is removed when the daemon stops cleanly.

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use ring::hmac;
use ring::rand::SecureRandom;
use std::fmt::Write as _;
use std::io::{self, Write as _};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Random bytes in a token.
pub const TOKEN_BYTES: usize = 32;

/// This process's effective user id (the owner of `/proc/self`).
fn euid() -> Option<u32> {
    std::fs::metadata("/proc/self").ok().map(|m| m.uid())
}

fn env_dir(name: &str) -> Option<PathBuf> {
    std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// Where the daemon keeps its runtime files: `$RUNTIME_DIRECTORY` (the directory systemd
/// made for the service, `RuntimeDirectory=`), else `$XDG_RUNTIME_DIR/braid`, else
/// `/run/braid` for root, else `$TMPDIR/braid-UID` (`/tmp` without `TMPDIR`).
pub fn runtime_dir() -> PathBuf {
    if let Some(d) =
        std::env::var("RUNTIME_DIRECTORY").ok().and_then(|v| v.split(':').next().map(PathBuf::from))
    {
        if !d.as_os_str().is_empty() {
            return d;
        }
    }
    if let Some(d) = env_dir("XDG_RUNTIME_DIR") {
        return d.join("braid");
    }
    match euid() {
        Some(0) => PathBuf::from("/run/braid"),
        uid => env_dir("TMPDIR")
            .unwrap_or_else(|| PathBuf::from("/tmp"))
            .join(format!("braid-{}", uid.map_or("unknown".into(), |u| u.to_string()))),
    }
}

/// The token file's name for a status port bound to `addr`.
pub fn token_file_name(addr: SocketAddr) -> String {
    format!("status-{}-{}.token", addr.ip(), addr.port())
}

/// The token file of a daemon whose status port is bound to `addr`, unless configured.
pub fn default_token_path(addr: SocketAddr) -> PathBuf {
    runtime_dir().join(token_file_name(addr))
}

/// Where `braid status --addr ADDR` looks for the token, in order: this user's runtime
/// directory, then root's and the systemd units' (`/run/braid`, `/run/braid-server`,
/// `/run/braid-client`); in each, the file for `addr`, then for the same port on the
/// unspecified addresses (a daemon bound to 0.0.0.0 or `::`).
pub fn token_candidates(addr: SocketAddr) -> Vec<PathBuf> {
    let mut dirs = vec![runtime_dir()];
    for d in ["/run/braid", "/run/braid-server", "/run/braid-client"] {
        if !dirs.iter().any(|x| x == Path::new(d)) {
            dirs.push(PathBuf::from(d));
        }
    }
    let mut names = vec![token_file_name(addr)];
    for any in [IpAddr::V4(Ipv4Addr::UNSPECIFIED), IpAddr::V6(Ipv6Addr::UNSPECIFIED)] {
        if any != addr.ip() {
            names.push(token_file_name(SocketAddr::new(any, addr.port())));
        }
    }
    dirs.iter().flat_map(|d| names.iter().map(move |n| d.join(n))).collect()
}

/// A new token: [`TOKEN_BYTES`] from the OS random source, in hex.
pub fn new_token() -> String {
    let mut b = [0u8; TOKEN_BYTES];
    ring::rand::SystemRandom::new().fill(&mut b).expect("the operating system provides randomness");
    b.iter().fold(String::with_capacity(2 * TOKEN_BYTES), |mut s, x| {
        let _ = write!(s, "{x:02x}");
        s
    })
}

/// Makes `dir` (mode 0700) if missing; refuses one that others could write to or that
/// belongs to someone else (a directory another user made in /tmp beforehand).
fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let m = std::fs::symlink_metadata(dir)?;
    let me = euid();
    if !m.is_dir() || (Some(m.uid()) != me && m.uid() != 0) || m.mode() & 0o022 != 0 {
        return Err(io::Error::other(format!(
            "{} is not a private directory (it must be a directory of this user or root that others cannot write to; owner uid {}, mode {:o})",
            dir.display(),
            m.uid(),
            m.mode() & 0o7777
        )));
    }
    Ok(())
}

/// Writes `token` to `path`: a new file created with mode 0600 next to it, renamed over it
/// (an old file, or a link someone left there, is replaced, never written through).
pub fn write_token(path: &Path, token: &str) -> io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().ok_or_else(|| io::Error::other("the token path names no file"))?;
    let tmp = dir.join(format!(".{}.{:016x}", name.to_string_lossy(), crate::keyfile::random_u64()));
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
    let written = f.write_all(format!("{token}\n").as_bytes()).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Reads a token file.
pub fn read_token(path: &Path) -> io::Result<String> {
    let t = std::fs::read_to_string(path)?;
    let t = t.trim();
    if t.is_empty() {
        return Err(io::Error::other("the file is empty"));
    }
    Ok(t.to_string())
}

/// A token file this daemon wrote; dropping it removes the file (if it still holds this
/// daemon's token: a newer daemon on the same address may have replaced it).
pub struct TokenFile {
    path: PathBuf,
    token: String,
}

impl Drop for TokenFile {
    fn drop(&mut self) {
        if read_token(&self.path).is_ok_and(|t| t == self.token) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Who may use the status port bound to `port`.
pub struct Access {
    port: u16,
    /// The address the status port is bound to (unspecified: every address).
    ip: IpAddr,
    key: hmac::Key,
    /// The token's MAC under `key` (compared in constant time), or why there is no token.
    token: Result<hmac::Tag, String>,
    path: PathBuf,
}

impl Access {
    /// Makes the token for a status port bound to `bound` and writes it to `token_file` (or
    /// the default place). If it cannot be written, reads still work and changes answer 503
    /// saying why.
    pub fn start(bound: SocketAddr, token_file: Option<PathBuf>) -> (Arc<Access>, Option<TokenFile>) {
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &ring::rand::SystemRandom::new())
            .expect("the operating system provides randomness");
        let token = new_token();
        let (path, dir_ok) = match token_file {
            Some(p) => (p, Ok(())),
            None => {
                let dir = runtime_dir();
                let ok = ensure_private_dir(&dir);
                (dir.join(token_file_name(bound)), ok)
            }
        };
        let written = dir_ok.and_then(|()| write_token(&path, &token));
        let (tag, file) = match written {
            Ok(()) => {
                tracing::info!(path = %path.display(), "status control token written (changes on the status port need it)");
                (Ok(hmac::sign(&key, token.as_bytes())), Some(TokenFile { path: path.clone(), token }))
            }
            Err(e) => {
                let why = format!("the control token could not be written to {}: {e}", path.display());
                tracing::warn!("{why}; changes on the status port are disabled (set status_token_file to a writable place)");
                (Err(why), None)
            }
        };
        (Arc::new(Access { port: bound.port(), ip: bound.ip(), key, token: tag, path }), file)
    }

    /// Whether `authority` (`host[:port]`) names this port on an IP literal or localhost.
    fn allowed(&self, authority: &str) -> bool {
        self.split(authority)
            .is_some_and(|(host, _)| host.parse::<IpAddr>().is_ok() || host.eq_ignore_ascii_case("localhost"))
    }

    /// Whether an `Origin` authority is this status port: on its bound address, a loopback
    /// address or localhost.
    fn origin_allowed(&self, authority: &str) -> bool {
        self.split(authority).is_some_and(|(host, _)| match host.parse::<IpAddr>() {
            Ok(ip) => ip.is_loopback() || (!self.ip.is_unspecified() && ip == self.ip),
            Err(_) => host.eq_ignore_ascii_case("localhost"),
        })
    }

    /// The host of `authority` and its port, if the port is this status port's.
    fn split<'a>(&self, authority: &'a str) -> Option<(&'a str, u16)> {
        let (host, port) = match authority.strip_prefix('[') {
            Some(rest) => match rest.split_once(']') {
                Some((h, after)) if h.parse::<Ipv6Addr>().is_ok() => (h, after),
                _ => return None,
            },
            None => match authority.find(':') {
                Some(i) => (&authority[..i], &authority[i..]),
                None => (authority, ""),
            },
        };
        let port = match port {
            "" => Some(80),
            p => p.strip_prefix(':').and_then(|p| p.parse::<u16>().ok()),
        };
        (port == Some(self.port)).then_some((host, self.port))
    }

    /// Whether a request with `method` and `headers` may go on; the refusal otherwise.
    fn check(&self, method: &Method, headers: &HeaderMap) -> Result<(), (StatusCode, String)> {
        if let Some(host) = headers.get(header::HOST) {
            let host = host.to_str().unwrap_or("(not text)");
            if !self.allowed(host) {
                return Err((
                    StatusCode::FORBIDDEN,
                    format!(
                        "refused: Host '{host}' is not an IP address or localhost with port {} (the status port answers only requests addressed to it so, against DNS rebinding)\n",
                        self.port
                    ),
                ));
            }
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("(not text)");
            let same =
                origin.strip_prefix("http://").is_some_and(|a| !a.contains('/') && self.origin_allowed(a));
            if !same {
                return Err((
                    StatusCode::FORBIDDEN,
                    format!("refused: requests from the web page at '{origin}' (its Origin) may not use the status port\n"),
                ));
            }
        }
        if method == Method::GET || method == Method::HEAD {
            return Ok(());
        }
        let tag = self.token.as_ref().map_err(|why| {
            (StatusCode::SERVICE_UNAVAILABLE, format!("changes are disabled on this status port: {why}\n"))
        })?;
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, t)| t.trim());
        match presented {
            Some(t) if hmac::verify(&self.key, t.as_bytes(), tag.as_ref()).is_ok() => Ok(()),
            Some(_) => Err((
                StatusCode::UNAUTHORIZED,
                format!("refused: wrong token (this daemon's token is in {}; it changes at every start)\n", self.path.display()),
            )),
            None => Err((
                StatusCode::UNAUTHORIZED,
                format!(
                    "refused: changes need this daemon's token: send 'Authorization: Bearer TOKEN' with the token in {} (braid status --scheduler does)\n",
                    self.path.display()
                ),
            )),
        }
    }
}

/// The middleware in front of every route of the status port.
pub async fn guard(State(access): State<Arc<Access>>, req: Request, next: Next) -> Response {
    match access.check(req.method(), req.headers()) {
        Ok(()) => next.run(req).await,
        Err((code, body)) if code == StatusCode::UNAUTHORIZED => {
            (code, [(header::WWW_AUTHENTICATE, "Bearer realm=\"braid\"")], body).into_response()
        }
        Err((code, body)) => (code, body).into_response(),
    }
}
