//! The server's receive loops beyond the first (issue 13: sessions over cores). The server
//! binds one UDP socket per core with `SO_REUSEPORT` ([`UdpLink::bind_group`]); the kernel
//! spreads packets over them by a hash of their addresses, so each path's packets reach one
//! socket, in order. Each extra socket has a loop of its own, on whichever core the runtime
//! gives it: it hands the data packets of sessions the server runs straight to their drivers
//! (the [`Routes`] table), and everything else — handshakes, packets of unknown sessions —
//! to the endpoint loop, which alone owns the endpoint's state.

use crate::udp::{Incoming, Receiver, UdpLink};
use braid_core::endpoint::session_of;
use braid_core::SessionId;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use tokio::sync::mpsc;

/// Where each running session's datagrams go: its driver's inbox. Written by the endpoint
/// loop as sessions start and end, read by every receive loop once per batch.
pub type Routes = Arc<RwLock<HashMap<SessionId, mpsc::Sender<Vec<Incoming>>>>>;

/// Batches of datagrams a receive loop could not route, queued for the endpoint loop before
/// more are dropped (as a congested link would).
pub const UNROUTED_QUEUE: usize = 64;

/// Hands each datagram of `batch` to its session's driver, consecutive datagrams of one
/// session together (one hand-off per run, usually per batch); returns the rest.
pub fn route(routes: &Routes, batch: Vec<Incoming>) -> Vec<Incoming> {
    let table = routes.read().unwrap_or_else(|e| e.into_inner());
    let mut rest = Vec::new();
    let mut run: Option<(SessionId, Vec<Incoming>)> = None;
    let hand_off = |(id, v): (SessionId, Vec<Incoming>)| {
        if let Some(inbox) = table.get(&id) {
            // A session that cannot keep up loses datagrams, as a link would.
            let _ = inbox.try_send(v);
        }
    };
    for d in batch {
        match session_of(&d.data).filter(|id| table.contains_key(id)) {
            Some(id) => match run.as_mut() {
                Some((current, v)) if *current == id => v.push(d),
                _ => {
                    if let Some(prev) = run.replace((id, vec![d])) {
                        hand_off(prev);
                    }
                }
            },
            None => rest.push(d),
        }
    }
    if let Some(last) = run {
        hand_off(last);
    }
    rest
}

/// Receives on `link` until its socket fails, counting datagrams in `received`; returns the
/// socket's address when it does.
pub async fn run(
    link: UdpLink,
    routes: Routes,
    unrouted: mpsc::Sender<Vec<Incoming>>,
    received: Arc<AtomicU64>,
) -> SocketAddr {
    let mut receiver = Receiver::new(&link);
    while let Some(batch) = receiver.next(&link).await {
        received.fetch_add(batch.len() as u64, Ordering::Relaxed);
        let rest = route(&routes, batch);
        if !rest.is_empty() {
            let _ = unrouted.try_send(rest);
        }
    }
    link.local
}
