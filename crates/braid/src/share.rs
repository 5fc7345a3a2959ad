//! `braid share`: offer this device's WAN link to the members of a community on its LAN.

use braid_daemon::share::config::ShareSettings;
use braid_daemon::Failure;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `braid share`.
#[derive(Args)]
pub struct ShareArgs {
    /// TOML configuration file (see examples/share.toml).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// Set any configuration key, as in the file: --set capacity=20mbit (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
}

fn fail(f: Failure) -> ExitCode {
    eprintln!("braid: {f}");
    ExitCode::from(f.exit_code())
}

/// Runs `braid share` until SIGINT or SIGTERM; then it withdraws its announcement, writes its
/// members' usage and exits 0.
pub async fn run(args: ShareArgs) -> ExitCode {
    let settings = match ShareSettings::load(Some(&args.config), &args.sets) {
        Ok(s) => s,
        Err(f) => return fail(f),
    };
    let handle = match braid_daemon::share::start_share(settings).await {
        Ok(h) => h,
        Err(f) => return fail(f),
    };
    if let Some(a) = handle.status_addr {
        tracing::info!(%a, "status JSON http://{a}/status, Prometheus http://{a}/metrics");
    }
    let s = crate::daemon::stop_signal().await;
    tracing::info!(signal = s, "stopping: withdrawing the announcement and the relays");
    handle.shutdown().await;
    ExitCode::SUCCESS
}
