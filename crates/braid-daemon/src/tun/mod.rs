//! TUN mode (`braid client --tun`, and `--gateway` for a LAN behind the client): the whole
//! system's traffic — or the configured prefixes' — enters braid through a TUN device.
//!
//! * TCP is terminated on the client by a user-space TCP/IP stack (netstack-smoltcp, on
//!   smoltcp) and each connection is carried as a braid stream with a CONNECT request, as
//!   SOCKS5 would ([`tcp`]): the server opens the real connection under its egress policy.
//! * UDP travels as datagrams, one association per flow, put back in order at each end by a
//!   time-bounded reorder window ([`flows`], [`crate::reorder`]); ICMP echo as pings the server
//!   sends from an ICMP socket.
//! * Anything else (other protocols, fragments, IPv6 extension headers, malformed packets) is
//!   dropped and counted ([`TunStatus`]).
//!
//! Host changes — rules, a routing table, resolv.conf, forwarding — are planned in a state
//! file before they are made and undone at stop, at SIGTERM, and after a crash at the next
//! start ([`host`], [`system`]). braid's own path sockets carry a firewall mark that keeps them out.

pub mod config;
pub mod counters;
mod device;
mod dispatch;
pub mod flows;
pub mod host;
pub mod packet;
pub mod settings;
pub mod system;
pub mod tcp;

pub use counters::{TunCounters, TunStatus};
pub use host::undo_leftovers;
pub use settings::*;

use crate::error::Failure;
use crate::frontend::UdpRegistry;
use crate::reorder::SharedHold;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use system::Changes;
use tokio::task::JoinHandle;

/// A running TUN front end. Stopping it (or dropping it) undoes the host changes.
pub struct TunHandle {
    /// Its counters.
    pub counters: Arc<TunCounters>,
    device: String,
    hold: SharedHold,
    changes: Changes,
    state_file: PathBuf,
    undone: AtomicBool,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl TunHandle {
    /// The counters now.
    pub fn status(&self) -> TunStatus {
        self.counters.snapshot(&self.device, self.hold.get())
    }

    /// Stops the device's tasks and undoes the host changes (once).
    pub fn stop(&self) {
        for t in self.tasks.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
            t.abort();
        }
        if self.undone.swap(true, Ordering::SeqCst) {
            return;
        }
        let failed = self.changes.undo(&self.state_file);
        if failed.is_empty() {
            tracing::info!(device = %self.device, "TUN mode: routes, rules and DNS restored");
        } else {
            tracing::warn!(device = %self.device, failed = ?failed, "TUN mode: could not restore everything");
        }
    }
}

impl Drop for TunHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Creates the device, routes traffic into it and starts carrying it over the session behind
/// `app`. `udp` routes the server's answers to flows; `hold` is the session's reorder hold.
pub async fn start(
    settings: &TunSettings,
    front: crate::frontend::Frontend,
    udp: UdpRegistry,
    hold: SharedHold,
) -> Result<TunHandle, Failure> {
    if let Some(what) = host::undo_leftovers(&settings.state_file)? {
        tracing::warn!(state_file = %settings.state_file.display(), "{what}");
    }
    let (changes, default_route, ipv6) = host::plan(settings)?;
    changes.save(&settings.state_file).map_err(|e| {
        Failure::Config(format!(
            "TUN mode: cannot write its state file {}: {e}",
            settings.state_file.display()
        ))
    })?;
    // From here on every exit path undoes the plan (the handle's Drop).
    let counters = Arc::new(TunCounters::default());
    let mut handle = TunHandle {
        counters: counters.clone(),
        device: settings.name.clone(),
        hold: hold.clone(),
        changes: changes.clone(),
        state_file: settings.state_file.clone(),
        undone: AtomicBool::new(false),
        tasks: Mutex::new(Vec::new()),
    };
    let dev = device::open(settings, ipv6)?;
    host::apply(settings, &changes, default_route, ipv6)?;
    let tasks = dispatch::run(settings, dev, front, udp, hold, counters)?;
    *handle.tasks.get_mut().unwrap_or_else(|e| e.into_inner()) = tasks;
    tracing::info!(device = %settings.name, routes = if default_route { "default".to_string() } else { format!("{:?}", settings.routes) }, gateway = settings.gateway, "TUN mode on");
    Ok(handle)
}
