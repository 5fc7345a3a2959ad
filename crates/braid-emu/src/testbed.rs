//! A loopback testbed: a braid server, a braid client whose links run through shaped relays,
//! and a payload source — everything `braid demo` and the end-to-end tests need, with no root
//! and no network beyond loopback.

use crate::relay::{Relay, RelayHandle};
use braid_core::scheduler::Kind;
use braid_core::{SessionConfig, StaticSecret};
use braid_daemon::classes::Classifier;
use braid_daemon::config::{ClientPolicy, Forward, LinkConfig, LinkKind, UsageFile};
use braid_daemon::egress::EgressPolicy;
use braid_daemon::linkpolicy::LinkPolicy;
use braid_daemon::{
    start_client, start_server, ClientHandle, ClientSettings, Failure, ServerHandle, ServerSettings,
};
use braid_sim::LinkSpec;
use fast_socks5::client::{Config, Socks5Stream};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// What to build.
#[derive(Debug, Clone)]
pub struct TestbedConfig {
    /// One relay per link, shaped by its spec.
    pub links: Vec<LinkSpec>,
    /// Session settings of both sides.
    pub session: SessionConfig,
    /// Serve SOCKS5 on the client.
    pub socks: bool,
    /// Port forwards (`HOST:PORT` targets); each listens on 127.0.0.1:0.
    pub forwards: Vec<String>,
    /// Serve status APIs.
    pub status: bool,
    /// SOCKS5 username and password required by the client.
    pub socks_auth: Option<(String, String)>,
    /// Streams the server lets the client have open at once.
    pub max_streams: u64,
    /// UDP associations the server lets the client have open at once.
    pub max_udp: usize,
    /// Front-end connections the client serves at once.
    pub max_connections: usize,
    /// Time a SOCKS5 connection has for its greeting and request.
    pub socks_timeout: Duration,
    /// The loopback address the session runs on: server, relays and links (127.0.0.1 or ::1).
    /// Front ends and the payload source stay on 127.0.0.1.
    pub loopback: IpAddr,
    /// Link policies by link label (`127.0.0.1@127.0.0.1:PORT` for relay links).
    pub link_policies: BTreeMap<String, LinkPolicy>,
    /// Where the client keeps link usage (default: in memory only).
    pub usage_file: UsageFile,
    /// The client's traffic classes (default: the built-in ones).
    pub classes: Arc<Classifier>,
}

impl TestbedConfig {
    /// Links with SOCKS5 and default settings.
    pub fn new(links: Vec<LinkSpec>) -> Self {
        TestbedConfig {
            links,
            session: SessionConfig::default(),
            socks: true,
            forwards: Vec::new(),
            status: false,
            socks_auth: None,
            max_streams: 1024,
            max_udp: 64,
            max_connections: braid_daemon::config::DEFAULT_MAX_CONNECTIONS,
            socks_timeout: braid_daemon::config::DEFAULT_SOCKS_TIMEOUT,
            loopback: IpAddr::V4(Ipv4Addr::LOCALHOST),
            link_policies: BTreeMap::new(),
            usage_file: UsageFile::Off,
            classes: Arc::default(),
        }
    }

    /// With this scheduler.
    pub fn scheduler(mut self, k: Kind) -> Self {
        self.session.scheduler = k;
        self
    }
}

/// A running testbed.
pub struct Testbed {
    /// The server.
    pub server: ServerHandle,
    /// The client.
    pub client: ClientHandle,
    /// One relay per link, in link order (path i runs through relay i).
    pub relays: Vec<RelayHandle>,
}

/// Keys of a testbed (fresh each time).
pub struct Keys {
    /// Client key.
    pub client: StaticSecret,
    /// Server key.
    pub server: StaticSecret,
}

impl Keys {
    /// Fresh keys.
    pub fn generate() -> Keys {
        Keys { client: braid_daemon::keyfile::generate(), server: braid_daemon::keyfile::generate() }
    }
}

/// Server settings on loopback admitting `client`.
pub fn server_settings(keys: &Keys, session: SessionConfig, status: bool) -> ServerSettings {
    ServerSettings {
        listen: "127.0.0.1:0".parse().expect("literal"),
        secret: keys.server.clone(),
        clients: vec![ClientPolicy {
            name: "testbed".into(),
            key: keys.client.public_key(),
            max_streams: 1024,
            max_udp: 64,
        }],
        egress: EgressPolicy::open(),
        status: status.then(|| "127.0.0.1:0".parse().expect("literal")),
        status_token_file: None,
        session,
        // One socket per core, as `braid server` opens by default.
        receive_sockets: 0,
    }
}

/// Client settings whose links go through `relays`.
pub fn client_settings(
    keys: &Keys,
    server: SocketAddr,
    relays: &[SocketAddr],
    cfg: &TestbedConfig,
) -> ClientSettings {
    ClientSettings {
        server: server.to_string(),
        server_key: keys.server.public_key(),
        secret: keys.client.clone(),
        links: relays
            .iter()
            .map(|r| LinkConfig {
                kind: LinkKind::Address(cfg.loopback),
                server: Some(r.to_string()),
                backup: false,
            })
            .collect(),
        link_policies: cfg.link_policies.clone(),
        classes: cfg.classes.clone(),
        usage_file: cfg.usage_file.clone(),
        socks: cfg.socks.then(|| "127.0.0.1:0".parse().expect("literal")),
        socks_auth: cfg.socks_auth.clone(),
        forwards: cfg
            .forwards
            .iter()
            .map(|t| Forward { listen: "127.0.0.1:0".parse().expect("literal"), target: t.clone() })
            .collect(),
        max_connections: cfg.max_connections,
        socks_timeout: cfg.socks_timeout,
        status: cfg.status.then(|| "127.0.0.1:0".parse().expect("literal")),
        status_token_file: None,
        session: cfg.session.clone(),
        tun: None,
        neighbours: None,
    }
}

impl Testbed {
    /// Starts server, relays and client, and waits for the session (up to 10 s).
    pub async fn start(cfg: TestbedConfig) -> Result<Testbed, Failure> {
        let keys = Keys::generate();
        let mut ss = server_settings(&keys, cfg.session.clone(), cfg.status);
        ss.clients[0].max_streams = cfg.max_streams;
        ss.clients[0].max_udp = cfg.max_udp;
        ss.listen = SocketAddr::new(cfg.loopback, 0);
        let server = start_server(ss).await?;
        let mut relays = Vec::new();
        for (i, spec) in cfg.links.iter().enumerate() {
            relays.push(
                Relay::start(SocketAddr::new(cfg.loopback, 0), server.addr, spec.clone(), 7 + i as u64)
                    .await?,
            );
        }
        let addrs: Vec<SocketAddr> = relays.iter().map(|r| r.addr).collect();
        let client = match start_client(client_settings(&keys, server.addr, &addrs, &cfg)).await {
            Ok(c) => c,
            Err(f) => {
                relays.iter().for_each(RelayHandle::stop);
                return Err(f);
            }
        };
        // From here the testbed's Drop stops everything, also when the session does not come up.
        let bed = Testbed { server, client, relays };
        if !bed.client.wait_connected(Duration::from_secs(10)).await {
            return Err(Failure::NoAnswer("the testbed's session did not come up within 10 s".into()));
        }
        Ok(bed)
    }

    /// Stops everything.
    pub fn stop(&self) {
        self.client.stop();
        self.server.stop();
        for r in &self.relays {
            r.stop();
        }
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A TCP server that sends the same deterministic payload to every connection, then closes.
pub struct Source {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Payload length.
    pub len: u64,
    /// SHA-256 of the payload.
    pub sha256: [u8; 32],
    task: JoinHandle<()>,
}

impl Drop for Source {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts a payload source of `len` bytes.
pub async fn start_source(len: usize, seed: u64) -> std::io::Result<Source> {
    let mut data = vec![0u8; len];
    let mut x = seed | 1;
    for chunk in data.chunks_mut(8) {
        // xorshift64*: fast and position-dependent enough to catch misordering.
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        let v = x.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
    let sha256: [u8; 32] = Sha256::digest(&data).into();
    let data = Arc::new(data);
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut conn, _)) = listener.accept().await else { continue };
            let data = data.clone();
            tokio::spawn(async move {
                let _ = conn.write_all(&data).await;
                let _ = conn.shutdown().await;
            });
        }
    });
    Ok(Source { addr, len: len as u64, sha256, task })
}

/// A finished download.
#[derive(Debug, Clone)]
pub struct Download {
    /// Bytes received.
    pub bytes: u64,
    /// Their SHA-256.
    pub sha256: [u8; 32],
    /// How long it took.
    pub elapsed: Duration,
}

/// A UDP echo server on loopback (what a call or a game sees as its far end); its address.
pub async fn udp_echo() -> std::io::Result<SocketAddr> {
    let echo = tokio::net::UdpSocket::bind("127.0.0.1:0").await?;
    let addr = echo.local_addr()?;
    tokio::spawn(async move {
        let mut buf = [0u8; 2048];
        while let Ok((n, from)) = echo.recv_from(&mut buf).await {
            let _ = echo.send_to(&buf[..n], from).await;
        }
    });
    Ok(addr)
}

/// The server's client list for `keys`, named `c0`, `c1`, … in their order.
pub fn named_clients(keys: &[Keys]) -> Vec<ClientPolicy> {
    keys.iter()
        .enumerate()
        .map(|(i, k)| ClientPolicy {
            name: format!("c{i}"),
            key: k.client.public_key(),
            max_streams: 64,
            max_udp: 8,
        })
        .collect()
}

/// A TCP source that sends without end to every connection: a download that lasts as long as
/// its reader.
pub async fn endless_source() -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let block = Arc::new(vec![0x5au8; 64 * 1024]);
        while let Ok((mut conn, _)) = listener.accept().await {
            let block = block.clone();
            tokio::spawn(async move { while conn.write_all(&block).await.is_ok() {} });
        }
    });
    Ok(addr)
}

/// A TCP sink that reads and discards what every connection sends: an upload's far end.
pub async fn discard_sink() -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                while conn.read(&mut buf).await.is_ok_and(|n| n > 0) {}
            });
        }
    });
    Ok(addr)
}

/// Uploads to `target` through the SOCKS5 proxy at `socks` until the task is aborted or the
/// connection fails (the error is returned).
pub async fn upload_socks_endless(socks: SocketAddr, target: SocketAddr) -> String {
    let mut cfg = Config::default();
    cfg.set_skip_auth(false);
    let mut s = match Socks5Stream::connect(socks, target.ip().to_string(), target.port(), cfg).await {
        Ok(s) => s,
        Err(e) => return format!("SOCKS5 connect through {socks} to {target}: {e}"),
    };
    let block = vec![0xa5u8; 64 * 1024];
    loop {
        if let Err(e) = s.write_all(&block).await {
            return format!("upload: {e}");
        }
    }
}

/// Downloads everything `target` sends, through the SOCKS5 proxy at `socks`; `progress` is
/// called with the byte count as data arrives.
pub async fn download_socks(
    socks: SocketAddr,
    target: SocketAddr,
    mut progress: impl FnMut(u64),
) -> Result<Download, String> {
    let start = Instant::now();
    let mut cfg = Config::default();
    cfg.set_skip_auth(false);
    let mut s = Socks5Stream::connect(socks, target.ip().to_string(), target.port(), cfg)
        .await
        .map_err(|e| format!("SOCKS5 connect through {socks} to {target}: {e}"))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut bytes = 0u64;
    loop {
        let n = s.read(&mut buf).await.map_err(|e| format!("download: {e}"))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        bytes += n as u64;
        progress(bytes);
    }
    Ok(Download { bytes, sha256: hasher.finalize().into(), elapsed: start.elapsed() })
}
