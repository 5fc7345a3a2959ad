//! `braid`: bond several network links into one faster, sturdier, encrypted connection.

mod daemon;
mod demo;
mod keys;
mod manual;
mod share;
mod share_status;
mod sim;
mod status;

use clap::{Parser, Subcommand};
use std::io::IsTerminal;
use std::process::ExitCode;

/// braid bonds several network links into one encrypted multipath connection.
#[derive(Parser)]
#[command(name = "braid", version, about, propagate_version = true)]
struct Cli {
    /// Log level (error, warn, info, debug, trace) or a tracing filter; default: info.
    #[arg(long, global = true, value_name = "FILTER")]
    log: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Server, client and three emulated links on loopback: a download, a link cut, a table.
    Demo(demo::DemoArgs),
    /// Run the aggregation server.
    Server(daemon::ServerArgs),
    /// Run the client: one path per link, SOCKS5 and port forwards.
    Client(daemon::ClientArgs),
    /// Share this device's WAN link with the members of a community on its LAN (seed 000).
    Share(share::ShareArgs),
    /// Show the per-path table of a running daemon.
    Status(status::StatusArgs),
    /// Print a new private key.
    Genkey,
    /// Read a private key on stdin, print its public key.
    Pubkey,
    /// Run the deterministic simulator: one bulk stream over emulated links, in virtual time.
    Sim(Box<sim::SimArgs>),
    /// Namespaces and emulated links: braid side by side with kernel MPTCP and single links (root).
    Lab(braid_lab::LabArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(manual::CompletionArgs),
    /// Print the man page, braid(1), in roff.
    Manpage,
}

fn init_logging(filter: Option<&str>, default: &str) {
    let filter = filter
        .map(str::to_string)
        .or_else(|| std::env::var("RUST_LOG").ok())
        .unwrap_or_else(|| default.to_string());
    let filter = if filter.contains('=') || filter.contains(',') {
        filter
    } else {
        format!("braid={filter},braid_daemon={filter},braid_core={filter},braid_emu={filter}")
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(std::io::stderr)
        .with_ansi(colour(std::io::stderr().is_terminal()))
        .try_init();
}

/// Colours in log lines only for a terminal (a log file or the journal would keep the escape
/// codes), and never with `NO_COLOR` set (no-color.org).
fn colour(terminal: bool) -> bool {
    terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// The tokio runtime: `BRAID_THREADS` worker threads; 1 runs everything on the calling thread.
/// The default is one thread for the client (its one session is one serial driver; a single
/// thread saves the cross-thread wake-ups: bench/loopback.sh measured 5.4 vs 4.6 Gbit/s) and
/// for the server, whose sessions run on threads of their own (`braid_daemon::shards`: this
/// runtime keeps the endpoint and the status API); one per core, 2 to 8, for the demo.
fn runtime(single: bool) -> std::io::Result<tokio::runtime::Runtime> {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(2, 8);
    let default = if single { 1 } else { cores };
    let workers = std::env::var("BRAID_THREADS").ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    if workers <= 1 {
        tokio::runtime::Builder::new_current_thread().enable_all().build()
    } else {
        tokio::runtime::Builder::new_multi_thread().worker_threads(workers).enable_all().build()
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Sim(args) => match sim::run(*args) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("braid sim: {e:#}");
                ExitCode::from(2)
            }
        },
        Command::Lab(args) => match braid_lab::run(args) {
            Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
            Err(e) => {
                // 1 as crates/braid-lab/README.md says: 2 is a missed [checks] threshold.
                eprintln!("braid lab: {e:#}");
                ExitCode::from(1)
            }
        },
        Command::Genkey => keys::genkey(),
        Command::Pubkey => keys::pubkey(),
        Command::Status(args) => status::run(args),
        Command::Completions(args) => manual::completions::<Cli>(args),
        Command::Manpage => manual::manpage::<Cli>(),
        cmd => {
            let quiet = matches!(cmd, Command::Demo(_));
            init_logging(cli.log.as_deref(), if quiet { "warn" } else { "info" });
            let rt = match runtime(matches!(cmd, Command::Client(_) | Command::Server(_))) {
                Ok(rt) => rt,
                Err(e) => {
                    eprintln!("braid: cannot start the runtime: {e}");
                    return ExitCode::from(1);
                }
            };
            rt.block_on(async move {
                match cmd {
                    Command::Demo(a) => demo::run(a).await,
                    Command::Server(a) => daemon::server(a).await,
                    Command::Client(a) => daemon::client(a).await,
                    Command::Share(a) => share::run(a).await,
                    _ => unreachable!("handled above"),
                }
            })
        }
    }
}
