//! `braid server` and `braid client`.

use braid_core::scheduler::Kind;
use braid_daemon::{ClientFlags, ClientSettings, Failure, ServerFlags, ServerSettings};
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `braid server`.
#[derive(Args, Debug)]
#[command(
    after_help = "Every setting can also come from --config FILE (see examples/server.toml); flags win.\n\
Exit codes: 0 stopped, 1 runtime error, 2 bad configuration."
)]
pub struct ServerArgs {
    /// TOML configuration file.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// UDP address to listen on, e.g. 0.0.0.0:7000.
    #[arg(long, value_name = "ADDR:PORT")]
    listen: Option<SocketAddr>,
    /// Private key file (from `braid genkey`).
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,
    /// Admit the client with this public key (repeatable).
    #[arg(long = "client", value_name = "PUBKEY")]
    clients: Vec<String>,
    /// Allow destinations in private and loopback ranges (denied by default).
    #[arg(long)]
    allow_private: bool,
    /// Serve status JSON and Prometheus metrics on this address.
    #[arg(long, value_name = "ADDR:PORT")]
    status: Option<SocketAddr>,
    /// Write the status port's control token here (default: derived from --status).
    #[arg(long, value_name = "FILE")]
    status_token_file: Option<PathBuf>,
    /// Packet scheduler for traffic towards clients.
    #[arg(long, value_name = "NAME", help = scheduler_help("Packet scheduler for traffic towards clients"))]
    scheduler: Option<Kind>,
    /// Set any configuration key, as in the file: --set session.congestion=cubic (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
}

/// Arguments of `braid client`.
#[derive(Args, Debug)]
#[command(
    after_help = "A LINK is an interface name (socket bound with SO_BINDTODEVICE), a local address, or auto \
(every interface with a usable address, followed as they come and go); append @HOST:PORT to reach the server at \
another address over that link.\n\
Every setting can also come from --config FILE (see examples/client.toml); flags win.\n\
Exit codes: 0 stopped, 1 runtime error, 2 bad configuration, 3 unknown interface or no usable link, \
4 server unreachable, 5 no answer from the server (down, or a different server key), 6 our key refused, \
7 the server speaks another braid protocol version."
)]
pub struct ClientArgs {
    /// TOML configuration file.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The server, HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    server: Option<String>,
    /// The server's public key.
    #[arg(long, value_name = "PUBKEY")]
    server_key: Option<String>,
    /// Private key file (from `braid genkey`).
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,
    /// A link to bond (repeatable): interface, local address or auto.
    #[arg(long = "link", value_name = "LINK")]
    links: Vec<String>,
    /// Use this link only when the others are down or saturated (repeatable).
    #[arg(long = "backup", value_name = "LINK")]
    backup: Vec<String>,
    /// SOCKS5 proxy address, e.g. 127.0.0.1:1080.
    #[arg(long, value_name = "ADDR:PORT")]
    socks: Option<SocketAddr>,
    /// Port forward LISTEN=HOST:PORT (repeatable), like ssh -L.
    #[arg(long = "forward", value_name = "LISTEN=HOST:PORT")]
    forwards: Vec<String>,
    /// Serve status JSON and Prometheus metrics on this address.
    #[arg(long, value_name = "ADDR:PORT")]
    status: Option<SocketAddr>,
    /// Write the status port's control token here (default: derived from --status).
    #[arg(long, value_name = "FILE")]
    status_token_file: Option<PathBuf>,
    /// Packet scheduler.
    #[arg(long, value_name = "NAME", help = scheduler_help("Packet scheduler"))]
    scheduler: Option<Kind>,
    /// Set any configuration key, as in the file: --set session.idle_timeout=60s (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// TUN mode (root): the system's traffic, or --tun-route prefixes, through braid.
    #[arg(long)]
    tun: bool,
    /// Gateway mode: TUN mode plus IP forwarding, for a LAN that routes through this host.
    #[arg(long)]
    gateway: bool,
    /// Route only this prefix into the TUN instead of the default route (repeatable).
    #[arg(long = "tun-route", value_name = "PREFIX")]
    tun_routes: Vec<String>,
    /// DNS server to use in TUN mode, reached through the TUN (repeatable).
    #[arg(long = "tun-dns", value_name = "ADDR")]
    tun_dns: Vec<String>,
}

/// `--scheduler`'s help: what it does and every name it takes (`redundant:N` too).
pub fn scheduler_help(what: &str) -> String {
    let names: Vec<&str> = Kind::ALL.iter().map(|(n, _, _)| *n).collect();
    format!("{what}: {} (redundant:N: copies on the best N paths); default edpf", names.join(", "))
}

fn fail(f: Failure) -> ExitCode {
    eprintln!("braid: {f}");
    ExitCode::from(f.exit_code())
}

/// Runs `braid server` until SIGINT or SIGTERM, then closes every session and exits 0.
pub async fn server(args: ServerArgs) -> ExitCode {
    let flags = ServerFlags {
        listen: args.listen,
        key: args.key,
        clients: args.clients,
        allow_private: args.allow_private,
        status: args.status,
        status_token_file: args.status_token_file,
        scheduler: args.scheduler,
        sets: args.sets,
    };
    let settings = match ServerSettings::load(args.config.as_deref(), flags) {
        Ok(s) => s,
        Err(f) => return fail(f),
    };
    let mut handle = match braid_daemon::start_server(settings).await {
        Ok(h) => h,
        Err(f) => return fail(f),
    };
    if let Some(a) = handle.status_addr {
        log_status_address(a);
    }
    let ended = tokio::select! {
        s = stop_signal() => { tracing::info!(signal = s, "stopping: closing every session"); None }
        r = handle.wait() => Some(r),
    };
    match ended {
        None => match handle.shutdown().await {
            Ok(()) => ExitCode::SUCCESS,
            Err(f) => fail(f),
        },
        Some(Ok(())) => ExitCode::SUCCESS,
        Some(Err(f)) => fail(f),
    }
}

/// The status port's addresses, as an operator opens them.
fn log_status_address(a: SocketAddr) {
    tracing::info!(%a, "status page http://{a}/ (JSON http://{a}/status, Prometheus http://{a}/metrics)");
}

/// Waits for SIGINT (Ctrl-C) or SIGTERM (systemd, `kill`); returns the signal's name.
pub async fn stop_signal() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => tokio::select! {
            _ = tokio::signal::ctrl_c() => "SIGINT",
            _ = term.recv() => "SIGTERM",
        },
        Err(e) => {
            tracing::warn!(error = %e, "cannot watch SIGTERM; only Ctrl-C stops cleanly");
            let _ = tokio::signal::ctrl_c().await;
            "SIGINT"
        }
    }
}

/// Runs `braid client` until SIGINT, SIGTERM (then it closes its session and exits 0) or a
/// configuration failure.
pub async fn client(args: ClientArgs) -> ExitCode {
    let flags = ClientFlags {
        server: args.server,
        server_key: args.server_key,
        key: args.key,
        links: args.links,
        backup: args.backup,
        socks: args.socks,
        forwards: args.forwards,
        status: args.status,
        status_token_file: args.status_token_file,
        scheduler: args.scheduler,
        sets: args.sets,
        tun: braid_daemon::tun::config::TunFlags {
            tun: args.tun,
            gateway: args.gateway,
            routes: args.tun_routes,
            dns: args.tun_dns,
        },
    };
    let settings = match ClientSettings::load(args.config.as_deref(), flags) {
        Ok(s) => s,
        Err(f) => return fail(f),
    };
    let mut handle = match braid_daemon::start_client(settings).await {
        Ok(h) => h,
        Err(f) => return fail(f),
    };
    if let Some(a) = handle.socks_addr {
        tracing::info!(%a, "SOCKS5 proxy ready");
    }
    if let Some(a) = handle.status_addr {
        log_status_address(a);
    }
    for a in &handle.forward_addrs {
        tracing::info!(%a, "forward listening");
    }
    let ended = tokio::select! {
        s = stop_signal() => { tracing::info!(signal = s, "stopping: closing the session"); None }
        r = handle.wait() => Some(r),
    };
    match ended {
        None => match handle.shutdown().await {
            Ok(()) => ExitCode::SUCCESS,
            Err(f) => fail(f),
        },
        Some(Ok(())) => ExitCode::SUCCESS,
        Some(Err(f)) => fail(f),
    }
}
