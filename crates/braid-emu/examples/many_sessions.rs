//! Many sessions on one server (issue 13): the server's memory with N idle sessions, and how
//! evenly M active sessions share what the server can carry. Loopback, no root.
//!
//! The server runs in a child process (this binary, `serve` mode), so its resident memory
//! (`VmRSS` in /proc) is its own; the clients all run in this process, one `braid client`
//! session each, with fresh keys from the OS. Phase 1 brings up `--sessions` sessions, leaves
//! them idle (keepalives only) for `--idle`, and reads the server's RSS before and after, and
//! its CPU time while idle. Phase 2 makes `--active` of them download from a local TCP source
//! (or, with `--direction upload`, upload to a local TCP sink that counts each session's bytes
//! as they arrive) through their SOCKS5 front ends at once (or `--stagger` apart) for `--duration`, all
//! through one shaped link (`--bottleneck 200mbit/10ms`, the simulator's link spec), or, without it, with the
//! machine's CPU as the shared bottleneck (server, clients and sources compete). It prints each session's
//! goodput over the second half, their spread (largest deviation from the mean, as a share of
//! the mean), Jain's fairness index, and how well each session's goodput in the third quarter
//! predicts its fourth (Pearson's r: near 1, the differences last; near 0, they are noise).
//!
//!     cargo run --release -p braid-emu --example many_sessions -- --sessions 1000 --active 0
//!     cargo run --release -p braid-emu --example many_sessions -- --sessions 100 --active 100 --bottleneck 200mbit/10ms
//!     ... --congestion bbr          (the server's controller, which sends the downloads;
//!                                    default the server's, bbr-shared)
//!     ... --direction upload        (the clients send, each through its own controller)
//!     ... --client-congestion bbr   (the clients' controller; default the client's, bbr-shared)
//!     ... --stagger 10ms            (download i starts i × 10 ms after the first)
//!     ... --receive-sockets 1       (the server's UDP sockets; default one per core)
//!     ... --late 50                 (the last 50 active sessions connect when their download
//!                                    starts, into the others' queue; use with --stagger)
//!
//! Targets (issue 13): ≤ 100 MB server RSS with 1,000 idle sessions; 100 active sessions within
//! 10 % of each other. The last line is one JSON object with the figures, among them
//! `socket_drops`: IPv4 datagrams dropped at full socket buffers in this network namespace
//! while the sessions were active (`RcvbufErrors` in /proc/net/snmp; the bottleneck runs on
//! 127.0.0.1), which must be 0 for the spread to be the link's. Where it is not, raise
//! `net.core.rmem_max`.

use braid_core::units::parse_duration;
use braid_core::{SessionConfig, StaticSecret};
use braid_daemon::config::{ClientPolicy, UsageFile};
use braid_daemon::egress::EgressPolicy;
use braid_daemon::{start_client, start_server, ClientHandle, ClientSettings, ServerSettings};
use braid_emu::bottleneck::Bottleneck;
use braid_emu::testbed::{client_settings, endless_source, Keys, TestbedConfig};
use braid_sim::LinkSpec;
use fast_socks5::client::{Config, Socks5Stream};
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Command-line options (all optional).
struct Args {
    sessions: usize,
    active: usize,
    idle: Duration,
    duration: Duration,
    bottleneck: Option<LinkSpec>,
    congestion: braid_core::cc::Algorithm,
    /// Download `i` starts `i × stagger` after the first (latecomers into a standing queue).
    stagger: Duration,
    /// The server's UDP sockets (0: one per core).
    receive_sockets: usize,
    /// The last `late` active sessions connect only when their download starts, into the
    /// queue the others keep (a client joining a busy server); the rest connect before the
    /// idle phase.
    late: usize,
    /// The active sessions upload instead of downloading.
    upload: bool,
    /// The clients' congestion controller (what shares the bottleneck when they upload).
    client_congestion: braid_core::cc::Algorithm,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        sessions: 1000,
        active: 100,
        idle: Duration::from_secs(10),
        duration: Duration::from_secs(20),
        bottleneck: None,
        congestion: braid_daemon::config::SERVER_CONGESTION,
        stagger: Duration::ZERO,
        receive_sockets: 0,
        late: 0,
        upload: false,
        client_congestion: braid_daemon::config::CLIENT_CONGESTION,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--sessions" => a.sessions = value.parse().map_err(|e| format!("--sessions: {e}"))?,
            "--active" => a.active = value.parse().map_err(|e| format!("--active: {e}"))?,
            "--idle" => a.idle = parse_duration(&value).map_err(|e| format!("--idle: {e}"))?,
            "--duration" => a.duration = parse_duration(&value).map_err(|e| format!("--duration: {e}"))?,
            "--bottleneck" => {
                a.bottleneck = Some(LinkSpec::parse(&value).map_err(|e| format!("--bottleneck: {e}"))?)
            }
            "--congestion" => a.congestion = value.parse().map_err(|e| format!("--congestion: {e}"))?,
            "--stagger" => a.stagger = parse_duration(&value).map_err(|e| format!("--stagger: {e}"))?,
            "--late" => a.late = value.parse().map_err(|e| format!("--late: {e}"))?,
            "--direction" => {
                a.upload = match value.as_str() {
                    "upload" => true,
                    "download" => false,
                    _ => return Err(format!("--direction: upload or download, not {value}")),
                }
            }
            "--client-congestion" => {
                a.client_congestion = value.parse().map_err(|e| format!("--client-congestion: {e}"))?
            }
            "--receive-sockets" => {
                a.receive_sockets = value.parse().map_err(|e| format!("--receive-sockets: {e}"))?
            }
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if a.late > a.active {
        return Err("--late cannot exceed --active".into());
    }
    if a.active > a.sessions {
        return Err("--active cannot exceed --sessions".into());
    }
    let last_start = u32::try_from(a.active.saturating_sub(1)).ok().and_then(|n| a.stagger.checked_mul(n));
    if last_start.is_none_or(|t| t >= a.duration / 2) {
        return Err(
            "the last download must start before the measured half: (active - 1) × stagger < duration / 2"
                .into(),
        );
    }
    Ok(a)
}

/// `serve`: reads the server secret and the client public keys (base64, one per line) from
/// stdin, starts a server on 127.0.0.1, prints its address, and runs until killed.
async fn serve() {
    let mut lines = BufReader::new(std::io::stdin()).lines().map_while(Result::ok);
    let secret: StaticSecret = lines.next().expect("server secret").parse().expect("server secret");
    let clients = lines
        .enumerate()
        .map(|(i, l)| ClientPolicy {
            name: format!("c{i}"),
            key: l.parse().expect("client key"),
            max_streams: 64,
            max_udp: 8,
        })
        .collect();
    let settings = ServerSettings {
        listen: "127.0.0.1:0".parse().expect("literal"),
        secret,
        clients,
        egress: EgressPolicy::open(),
        status: None,
        status_token_file: None,
        // The server sends the downloads: its congestion controller is the one that shares
        // the bottleneck (`--congestion`, passed down in the environment).
        session: SessionConfig {
            congestion: std::env::var("MANY_SESSIONS_CONGESTION")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(braid_daemon::config::SERVER_CONGESTION),
            ..SessionConfig::default()
        },
        receive_sockets: std::env::var("MANY_SESSIONS_RECEIVE_SOCKETS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
    };
    let server = start_server(settings).await.expect("server starts");
    println!("{}", server.addr);
    std::io::stdout().flush().expect("stdout");
    // With MANY_SESSIONS_STATUS=FILE, the server's status (every session's paths: RTTs,
    // windows, rates) is written there each second, to see why sessions differ.
    if let Some(file) = std::env::var_os("MANY_SESSIONS_STATUS") {
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            if let Ok(text) = serde_json::to_string(&server.board.snapshot()) {
                let _ = std::fs::write(&file, text);
            }
        }
    }
    std::future::pending::<()>().await;
}

/// The server child process; killed on drop.
struct ServerProcess {
    child: Child,
    addr: SocketAddr,
}

impl ServerProcess {
    fn start(
        secret: &StaticSecret,
        clients: &[Keys],
        congestion: braid_core::cc::Algorithm,
        receive_sockets: usize,
    ) -> Result<ServerProcess, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut child = Command::new(exe)
            .arg("serve")
            .env("MANY_SESSIONS_CONGESTION", congestion.to_string())
            .env("MANY_SESSIONS_RECEIVE_SOCKETS", receive_sockets.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the server process: {e}"))?;
        let mut input = child.stdin.take().expect("piped");
        let mut text = format!("{}\n", secret.to_base64());
        for k in clients {
            text.push_str(&format!("{}\n", k.client.public_key()));
        }
        input.write_all(text.as_bytes()).map_err(|e| e.to_string())?;
        drop(input);
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped"))
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        let addr = line.trim().parse().map_err(|e| format!("server address '{}': {e}", line.trim()))?;
        Ok(ServerProcess { child, addr })
    }

    /// (resident KB, peak resident KB) from /proc.
    fn memory_kb(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        (field("VmRSS:"), field("VmHWM:"))
    }

    /// User + system CPU seconds so far.
    fn cpu_seconds(&self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        let f: Vec<f64> = rest.split_whitespace().map(|x| x.parse().unwrap_or(0.0)).collect();
        // 100 ticks a second is the Linux user-space clock on every supported architecture.
        f.get(11).zip(f.get(12)).map(|(u, s)| (u + s) / 100.0).unwrap_or(0.0)
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What a [`counting_sink`] saw: which sessions named themselves, and connections it could not
/// count (no name, a name out of range, or a name already taken).
struct SinkLog {
    named: Vec<std::sync::atomic::AtomicBool>,
    refused: AtomicU64,
}

impl SinkLog {
    fn new(sessions: usize) -> Self {
        SinkLog { named: (0..sessions).map(|_| Default::default()).collect(), refused: AtomicU64::new(0) }
    }

    /// Ok when every session named itself once and no connection was refused.
    fn check(&self) -> Result<(), String> {
        let missing = self.named.iter().filter(|n| !n.load(Ordering::Relaxed)).count();
        let refused = self.refused.load(Ordering::Relaxed);
        if missing > 0 || refused > 0 {
            return Err(format!(
                "the sink never heard from {missing} sessions and refused {refused} connections"
            ));
        }
        Ok(())
    }
}

/// Connects to `target` through the SOCKS5 proxy at `socks`, giving up at `end`.
async fn socks_connect(
    socks: SocketAddr,
    target: SocketAddr,
    end: Instant,
) -> Result<Socks5Stream<tokio::net::TcpStream>, String> {
    let connect = Socks5Stream::connect(socks, target.ip().to_string(), target.port(), Config::default());
    match tokio::time::timeout_at(end.into(), connect).await {
        Ok(r) => r.map_err(|e| format!("SOCKS5 through {socks}: {e}")),
        Err(_) => Err(format!("SOCKS5 through {socks}: no connection by the end of the run")),
    }
}

/// A TCP sink: each connection first names its session (8 bytes, big-endian), then every byte
/// it brings is added to that session's count as it arrives. Connections it cannot count are
/// recorded in `log`, which the run checks.
async fn counting_sink(counts: Vec<Arc<AtomicU64>>, log: Arc<SinkLog>) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let counts = counts.clone();
            let log = log.clone();
            tokio::spawn(async move {
                let mut id = [0u8; 8];
                let named = match conn.read_exact(&mut id).await {
                    Ok(_) => usize::try_from(u64::from_be_bytes(id)).ok(),
                    Err(_) => None,
                };
                let first =
                    named.and_then(|i| log.named.get(i)).is_some_and(|n| !n.swap(true, Ordering::Relaxed));
                let Some(count) = named.and_then(|i| counts.get(i)).filter(|_| first) else {
                    log.refused.fetch_add(1, Ordering::Relaxed);
                    return;
                };
                let mut buf = vec![0u8; 64 * 1024];
                while let Ok(n) = conn.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    count.fetch_add(n as u64, Ordering::Relaxed);
                }
            });
        }
    });
    Ok(addr)
}

/// Writes to `target` through the SOCKS5 proxy at `socks` until `end`: first `session` (so the
/// sink counts what arrives for it), then without pause.
async fn feed(socks: SocketAddr, target: SocketAddr, session: usize, end: Instant) -> Result<(), String> {
    let mut s = socks_connect(socks, target, end).await?;
    s.write_all(&(session as u64).to_be_bytes()).await.map_err(|e| e.to_string())?;
    let block = vec![0x5au8; 64 * 1024];
    while Instant::now() < end {
        match tokio::time::timeout_at(end.into(), s.write_all(&block)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e.to_string()),
            Err(_) => break,
        }
    }
    Ok(())
}

/// Reads from `target` through the SOCKS5 proxy at `socks`, adding to `count`, until `end`.
async fn drain(
    socks: SocketAddr,
    target: SocketAddr,
    count: Arc<AtomicU64>,
    end: Instant,
) -> Result<(), String> {
    let mut s = socks_connect(socks, target, end).await?;
    let mut buf = vec![0u8; 64 * 1024];
    while Instant::now() < end {
        match tokio::time::timeout_at(end.into(), s.read(&mut buf)).await {
            Ok(Ok(0)) => return Err("the source closed early".into()),
            Ok(Ok(n)) => {
                count.fetch_add(n as u64, Ordering::Relaxed);
            }
            Ok(Err(e)) => return Err(e.to_string()),
            Err(_) => break,
        }
    }
    Ok(())
}

/// IPv4 datagrams this network namespace's UDP sockets have dropped for a full receive
/// buffer (`RcvbufErrors` in /proc/net/snmp), or None where that cannot be read. A drop there
/// happens outside the bottleneck's link model, so a run that sees any measures the harness
/// as well as the link.
fn socket_drops() -> Option<u64> {
    let snmp = std::fs::read_to_string("/proc/net/snmp").ok()?;
    let mut udp = snmp.lines().filter(|l| l.starts_with("Udp:"));
    let (names, values) = (udp.next()?, udp.next()?);
    let at = names.split_whitespace().position(|n| n == "RcvbufErrors")?;
    values.split_whitespace().nth(at)?.parse().ok()
}

/// A client's first path as its status shows it: minimum and smoothed RTT, window, capacity.
fn client_path(c: &ClientHandle) -> String {
    let status = c.board.snapshot();
    match status.sessions.first().and_then(|s| s.paths.first()) {
        Some(p) => format!(
            "min RTT {:.1} ms, RTT {:.1} ms, window {} B, capacity {:.2} Mbit/s",
            p.min_rtt_ms,
            p.rtt_ms,
            p.cwnd,
            p.capacity_bps / 1e6
        ),
        None => "no path".into(),
    }
}

async fn run(args: Args) -> Result<(), String> {
    let server_secret = braid_daemon::keyfile::generate();
    let keys: Vec<Keys> = (0..args.sessions)
        .map(|_| Keys { client: braid_daemon::keyfile::generate(), server: server_secret.clone() })
        .collect();
    let server = ServerProcess::start(&server_secret, &keys, args.congestion, args.receive_sockets)?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (rss_empty, _) = server.memory_kb();
    println!("server {} up: {:.1} MB resident with no session", server.addr, rss_empty as f64 / 1024.0);

    // Every session through one shared link, or straight to the server.
    let bottleneck = match &args.bottleneck {
        Some(spec) => Some(
            Bottleneck::start(server.addr, spec.clone(), 11).await.map_err(|e| format!("bottleneck: {e}"))?,
        ),
        None => None,
    };
    let to = bottleneck.as_ref().map_or(server.addr, |b| b.addr);
    let started = Instant::now();
    let mut clients: Vec<ClientHandle> = Vec::with_capacity(args.sessions);
    // Settings of the sessions that connect when their download starts (`--late`).
    let mut late: Vec<ClientSettings> = Vec::new();
    let first_late = args.active - args.late;
    for (i, k) in keys.iter().enumerate() {
        let mut cfg = TestbedConfig::new(Vec::new());
        cfg.session.congestion = args.client_congestion;
        cfg.socks = i < args.active;
        cfg.usage_file = UsageFile::Off;
        let settings = client_settings(k, server.addr, &[to], &cfg);
        if (first_late..args.active).contains(&i) {
            late.push(settings);
            continue;
        }
        clients.push(start_client(settings).await.map_err(|e| format!("client {i}: {e}"))?);
    }
    let deadline =
        Instant::now() + Duration::from_secs(60).max(Duration::from_millis(60 * args.sessions as u64));
    for (i, c) in clients.iter().enumerate() {
        let left = deadline.saturating_duration_since(Instant::now());
        if !c.wait_connected(left).await {
            return Err(format!("session {i} did not come up within {:?} of the start", deadline - started));
        }
    }
    println!(
        "{} sessions up in {:.1} s ({} more connect with their downloads); idle for {:?}",
        clients.len(),
        started.elapsed().as_secs_f64(),
        late.len(),
        args.idle
    );
    let cpu0 = server.cpu_seconds();
    tokio::time::sleep(args.idle).await;
    let cpu_idle = server.cpu_seconds() - cpu0;
    let (rss_idle, hwm_idle) = server.memory_kb();
    let per_session = (rss_idle.saturating_sub(rss_empty)) as f64 / clients.len().max(1) as f64;
    println!(
        "idle: server {:.1} MB resident (peak {:.1} MB), {:.1} KB per session; {:.3} CPU-s over {:?} ({:.2} % of a core)",
        rss_idle as f64 / 1024.0,
        hwm_idle as f64 / 1024.0,
        per_session,
        cpu_idle,
        args.idle,
        100.0 * cpu_idle / args.idle.as_secs_f64()
    );

    let mut rates = Vec::new();
    // Datagrams dropped at full socket buffers on this host while the sessions were active.
    let mut dropped: Option<u64> = None;
    // Pearson correlation of each session's third- and fourth-quarter goodput.
    let mut persistence: Option<f64> = None;
    if args.active > 0 {
        let counts: Vec<Arc<AtomicU64>> = (0..args.active).map(|_| Arc::default()).collect();
        // Downloads read from a source; uploads write to a sink that counts what arrives.
        let sink_log = Arc::new(SinkLog::new(args.active));
        let target = if args.upload {
            counting_sink(counts.clone(), sink_log.clone()).await.map_err(|e| format!("sink: {e}"))?
        } else {
            endless_source().await.map_err(|e| format!("source: {e}"))?
        };
        let upload = args.upload;
        let transfer = move |socks: SocketAddr, i: usize, count: Arc<AtomicU64>, end: Instant| async move {
            if upload {
                feed(socks, target, i, end).await
            } else {
                drain(socks, target, count, end).await
            }
        };
        let cpu_active0 = server.cpu_seconds();
        let drops0 = socket_drops();
        let active_start = Instant::now();
        let end = Instant::now() + args.duration;
        let mut tasks = Vec::new();
        let mut late = late.into_iter();
        for (i, count) in counts.iter().enumerate() {
            let start = active_start + args.stagger * i as u32;
            let count = count.clone();
            if i < first_late {
                let socks = clients[i].socks_addr.ok_or("an active client serves SOCKS5")?;
                tasks.push(tokio::spawn(async move {
                    tokio::time::sleep_until(start.into()).await;
                    transfer(socks, i, count, end).await
                }));
            } else {
                let settings = late.next().ok_or("one late session's settings each")?;
                tasks.push(tokio::spawn(async move {
                    tokio::time::sleep_until(start.into()).await;
                    let c = start_client(settings).await.map_err(|e| format!("late client: {e}"))?;
                    if !c.wait_connected(Duration::from_secs(10)).await {
                        return Err("a late session did not come up within 10 s".to_string());
                    }
                    let socks = c.socks_addr.ok_or("an active client serves SOCKS5")?;
                    let r = transfer(socks, i, count, end).await;
                    c.stop();
                    r
                }));
            }
        }
        // Goodput over the second half, once every session's controller has ramped up.
        tokio::time::sleep(args.duration / 2).await;
        let half: Vec<u64> = counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
        let t_half = Instant::now();
        // The third quarter's counts: whether a session's quarter rates agree tells a lasting
        // difference between sessions from noise that a longer run would average out.
        tokio::time::sleep(args.duration / 4).await;
        let three: Vec<u64> = counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
        // The counts as they stand at the end (a sink still receives what was on its way).
        tokio::time::sleep_until(end.into()).await;
        let full: Vec<u64> = counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
        let secs = t_half.elapsed().as_secs_f64();
        // (Correlation ignores scale: bytes per quarter serve as rates.)
        let quarter = |a: &[u64], b: &[u64]| a.iter().zip(b).map(|(x, y)| (x - y) as f64).collect::<Vec<_>>();
        persistence = correlation(&quarter(&three, &half), &quarter(&full, &three));
        for (i, t) in tasks.into_iter().enumerate() {
            t.await.map_err(|e| e.to_string())?.map_err(|e| format!("session {i}: {e}"))?;
        }
        if args.upload {
            sink_log.check()?;
        }
        // More than 100 % means the server's sessions ran on several cores at once.
        println!(
            "active: server used {:.0} % of one core",
            100.0 * (server.cpu_seconds() - cpu_active0) / active_start.elapsed().as_secs_f64()
        );
        rates = full.iter().zip(&half).map(|(f, h)| (f - h) as f64 * 8.0 / secs / 1e6).collect();
        dropped = drops0.zip(socket_drops()).map(|(a, b)| b.saturating_sub(a));
        match dropped {
            Some(0) => println!("active: no datagram dropped at a full socket buffer on this host"),
            Some(n) => println!(
                "warning: this host dropped {n} datagrams at full socket buffers during the run, outside \
                 the link model: the figures measure the harness as well as the link"
            ),
            None => println!("active: socket buffer drops unknown (no /proc/net/snmp)"),
        }
    }
    let (rss_end, hwm_end) = server.memory_kb();
    if !rates.is_empty() {
        let mut order: Vec<usize> = (0..rates.len()).collect();
        order.sort_by(|&a, &b| rates[a].total_cmp(&rates[b]));
        let show =
            |ix: &[usize]| ix.iter().map(|&i| format!("#{i} {:.2}", rates[i])).collect::<Vec<_>>().join(", ");
        let k = order.len().min(3);
        // (With fewer than six sessions the two lists would overlap.)
        let top = order.len().saturating_sub(3).max(k);
        println!("slowest: {}; fastest: {}", show(&order[..k]), show(&order[top..]));
        // Uploads: each shown session's sending path as its client ends (why sessions differ:
        // a minimum RTT found behind the others' queue sizes a larger window).
        if args.upload {
            for &i in order[..k].iter().chain(&order[top..]) {
                // (A late session's client has stopped; the others keep their index.)
                let path = clients.get(i).filter(|_| i < first_late).map_or("stopped".into(), client_path);
                println!("  #{i}: {path}");
            }
        }
    }
    let n = rates.len().max(1) as f64;
    // (An empty float sum is -0.0.)
    let total = if rates.is_empty() { 0.0 } else { rates.iter().sum::<f64>() };
    let mean = total / n;
    let (min, max) = rates.iter().fold((f64::MAX, 0.0f64), |(lo, hi), &r| (lo.min(r), hi.max(r)));
    let spread = rates.iter().map(|r| (r - mean).abs()).fold(0.0, f64::max) / mean.max(1e-9);
    let jain = total.powi(2) / (n * rates.iter().map(|r| r * r).sum::<f64>()).max(1e-9);
    if !rates.is_empty() {
        println!(
            "active: {} sessions, {:.1} Mbit/s in all; each mean {:.2}, min {:.2}, max {:.2} Mbit/s; \
             largest deviation {:.1} % of the mean; Jain {:.4}; quarters agree r = {}; server {:.1} MB \
             resident (peak {:.1} MB)",
            rates.len(),
            total,
            mean,
            min,
            max,
            100.0 * spread,
            jain,
            persistence.map_or("n/a".into(), |r| format!("{r:.2}")),
            rss_end as f64 / 1024.0,
            hwm_end as f64 / 1024.0
        );
    }
    println!(
        "{{\"direction\":\"{}\",\"congestion\":\"{}\",\"client_congestion\":\"{}\",\"sessions\":{},\"server_rss_empty_mb\":{:.2},\"server_rss_idle_mb\":{:.2},\"idle_kb_per_session\":{:.1},\
         \"idle_cpu_percent\":{:.3},\"active\":{},\"active_total_mbps\":{:.2},\"active_min_mbps\":{:.3},\
         \"active_max_mbps\":{:.3},\"active_max_deviation\":{:.4},\"jain\":{:.5},\"quarters_r\":{},\"server_rss_peak_mb\":{:.2},\"socket_drops\":{}}}",
        if args.upload { "upload" } else { "download" },
        args.congestion,
        args.client_congestion,
        args.sessions,
        rss_empty as f64 / 1024.0,
        rss_idle as f64 / 1024.0,
        per_session,
        100.0 * cpu_idle / args.idle.as_secs_f64(),
        rates.len(),
        total,
        if rates.is_empty() { 0.0 } else { min },
        max,
        spread,
        jain,
        persistence.map_or("null".into(), |r| format!("{r:.3}")),
        hwm_end as f64 / 1024.0,
        dropped.map_or("null".into(), |n| n.to_string())
    );
    for c in &clients {
        c.stop();
    }
    Ok(())
}

/// Pearson's correlation coefficient of two equally long samples; `None` when either is constant
/// or there are fewer than three.
fn correlation(a: &[f64], b: &[f64]) -> Option<f64> {
    let n = a.len().min(b.len());
    if n < 3 {
        return None;
    }
    let mean = |x: &[f64]| x[..n].iter().sum::<f64>() / n as f64;
    let (ma, mb) = (mean(a), mean(b));
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (x, y) in a.iter().zip(b).take(n) {
        sab += (x - ma) * (y - mb);
        saa += (x - ma).powi(2);
        sbb += (y - mb).powi(2);
    }
    (saa > 0.0 && sbb > 0.0).then(|| sab / (saa * sbb).sqrt())
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    if std::env::args().nth(1).as_deref() == Some("serve") {
        serve().await;
        return std::process::ExitCode::SUCCESS;
    }
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("many_sessions: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    match run(args).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("many_sessions: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
