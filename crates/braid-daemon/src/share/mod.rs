//! Sharing a WAN link with neighbours (seed 000's piconet): `braid share` relays a member's
//! sealed braid path packets from the LAN to the member's aggregation server over its own WAN
//! link, and the client's `[neighbours]` adds one path through each sharer it knows or finds.
//!
//! - [`wire`] and [`noise`]: the allocation exchange (Noise IKpsk1) by which a member asks a
//!   sharer to relay its address to a server;
//! - [`members`], [`bucket`], [`spare`]: who is admitted, rate limits, caps, owner priority;
//!   [`usage`]: members' usage kept across restarts;
//! - [`relay`]: the data plane; [`status`]: the sharer's JSON and metrics; [`mdns`]: discovery;
//! - [`member`] and [`neighbours`]: the client's side; [`select`]: seed 000's channel selection.

pub mod bucket;
pub mod config;
pub mod mdns;
pub mod member;
pub mod members;
pub mod neighbours;
pub mod noise;
pub mod relay;
pub mod select;
pub mod spare;
pub mod status;
pub mod usage;
pub mod wire;

use crate::error::Failure;
use config::{OwnerPriority, ShareSettings};
use relay::Shared;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::task::JoinHandle;

/// Labels of paths through a sharer start with this: `via:NAME`.
pub const VIA: &str = "via:";

/// Whether a link label names a path through a sharer.
pub fn is_neighbour_label(label: &str) -> bool {
    label.starts_with(VIA)
}

/// A running sharer.
pub struct ShareHandle {
    /// The LAN address members send to.
    pub addr: SocketAddr,
    /// Status address, if serving.
    pub status_addr: Option<SocketAddr>,
    /// Its state (members, relays, counters).
    pub shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
    announced: Option<(mdns_sd::ServiceDaemon, String)>,
}

impl ShareHandle {
    /// Stops relaying (withdrawing the announcement first, so clients drop their paths).
    pub fn stop(&mut self) {
        if let Some((d, full)) = self.announced.take() {
            mdns::stop_announcing(&d, &full);
        }
        for t in &self.tasks {
            t.abort();
        }
        self.shared.stop_all();
    }

    /// Stops relaying, then writes the members' usage one last time.
    pub async fn shutdown(mut self) {
        self.stop();
        self.shared.usage.flush(&self.shared.members).await;
    }
}

impl Drop for ShareHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts `braid share`.
pub async fn start_share(settings: ShareSettings) -> Result<ShareHandle, Failure> {
    let lan =
        bind_lan(settings.listen).map_err(|e| Failure::bind("listen for members", settings.listen, &e))?;
    let addr = lan.local_addr()?;
    let shared =
        Arc::new(Shared::new(settings, lan).map_err(|e| Failure::Config(format!("sharer key: {e}")))?);
    let s = &shared.settings;
    let mut tasks = vec![tokio::spawn(relay::upstream(shared.clone()))];
    tasks.push(tokio::spawn(usage::UsageKeeper::run(shared.clone())));
    let sweeper = shared.clone();
    tasks.push(tokio::spawn(async move {
        let mut t = tokio::time::interval(std::time::Duration::from_secs(1));
        let mut last = tokio::time::Instant::now();
        loop {
            t.tick().await;
            sweeper.sweep();
            let now = tokio::time::Instant::now();
            sweeper.members.measure(now - last);
            last = now;
        }
    }));
    if s.owner_priority == OwnerPriority::Spare {
        if let (Some(cap), Some(wan)) = (s.capacity, s.wan_interface.clone()) {
            spare::read_counters(&wan).map_err(|e| {
                Failure::Interface(format!("wan_interface {wan}: cannot read its byte counters: {e}"))
            })?;
            tasks.push(tokio::spawn(owner_priority(shared.clone(), cap / 8, wan)));
        }
    }
    let status_addr = match s.status {
        Some(a) => {
            let (bound, t) =
                status::serve(a, shared.clone()).await.map_err(|e| Failure::bind("serve status", a, &e))?;
            tasks.push(t);
            Some(bound)
        }
        None => None,
    };
    let announced = if s.announce {
        match mdns::announce(&s.name, addr, &s.secret.public_key(), s.capacity) {
            Ok(a) => Some(a),
            Err(e) => {
                tracing::warn!(error = %e, "cannot announce on the LAN; members must list this sharer");
                None
            }
        }
    } else {
        None
    };
    tracing::info!(%addr, name = %s.name, key = %s.secret.public_key(), servers = ?s.servers, "sharing");
    Ok(ShareHandle { addr, status_addr, shared, tasks, announced })
}

/// The LAN socket, with buffers for bursts of several members.
fn bind_lan(addr: SocketAddr) -> std::io::Result<tokio::net::UdpSocket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(
        if addr.is_ipv4() { Domain::IPV4 } else { Domain::IPV6 },
        Type::DGRAM,
        Some(Protocol::UDP),
    )?;
    let _ = s.set_recv_buffer_size(8 << 20);
    let _ = s.set_send_buffer_size(8 << 20);
    s.bind(&addr.into())?;
    s.set_nonblocking(true)?;
    tokio::net::UdpSocket::from_std(s.into())
}

/// Keeps the members' gate at the spare capacity the owner leaves ([`spare`]).
async fn owner_priority(shared: Arc<Shared>, capacity: u64, wan: String) {
    let mut meter = spare::SpareMeter::new(capacity);
    let mut t = tokio::time::interval(spare::TICK);
    let mut last = tokio::time::Instant::now();
    loop {
        t.tick().await;
        let Ok((rx, tx)) = spare::read_counters(&wan) else { continue };
        let c = &shared.counters;
        let relayed = c.relayed_bytes.load(Ordering::Relaxed)
            + c.relayed_packets.load(Ordering::Relaxed) * spare::WIRE_OVERHEAD;
        let now = tokio::time::Instant::now();
        let members = meter.sample(rx, tx, relayed, now - last);
        last = now;
        shared.gate.lock().unwrap_or_else(|e| e.into_inner()).set_rate(Some(members));
        shared.owner_rate.store(meter.owner_rate(), Ordering::Relaxed);
    }
}
