//! The server's receive loops (issue 13: sessions over cores). The server binds one UDP
//! socket per core with `SO_REUSEPORT` ([`UdpLink::bind_group`]); the kernel spreads packets
//! over them by a hash of their addresses, so each path's packets reach one socket, in order.
//! Each socket has a loop of its own, on a shard of its own ([`crate::shards`]): it hands the
//! data packets of sessions the server runs straight to their drivers (the [`Routes`]
//! table), and everything else — handshakes, packets of unknown sessions — to the endpoint
//! loop, which alone owns the endpoint's state.

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

/// Hands each datagram of `batch` to its session's driver, in order, a session's datagrams
/// together until another session's come between (one hand-off per run, usually per batch);
/// returns the rest, in order.
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

/// One receive loop's counters, published in the server's status.
#[derive(Debug, Default)]
pub struct Counters {
    /// Datagrams received on the socket.
    pub received: AtomicU64,
    /// Datagrams dropped because the endpoint loop's queue was full (a flood of handshakes
    /// or junk arriving faster than the endpoint refuses it).
    pub queue_full: AtomicU64,
}

/// Receives on `link` until its socket fails; returns the socket's address when it does.
pub async fn run(
    link: UdpLink,
    routes: Routes,
    unrouted: mpsc::Sender<Vec<Incoming>>,
    counters: Arc<Counters>,
) -> SocketAddr {
    let mut receiver = Receiver::new(&link);
    while let Some(batch) = receiver.next(&link).await {
        counters.received.fetch_add(batch.len() as u64, Ordering::Relaxed);
        let rest = route(&routes, batch);
        if !rest.is_empty() {
            let n = rest.len() as u64;
            if unrouted.try_send(rest).is_err() {
                counters.queue_full.fetch_add(n, Ordering::Relaxed);
            }
        }
    }
    link.local
}

#[cfg(test)]
mod tests {
    use super::*;
    use braid_core::wire::header::DataHeader;
    use braid_core::wire::{DATA_HEADER_LEN, TAG_LEN};
    use bytes::BytesMut;

    fn data(session: u64, pn: u32) -> Incoming {
        let mut buf = vec![0u8; DATA_HEADER_LEN + 1 + TAG_LEN];
        DataHeader { session_id: SessionId(session), path_id: 0, truncated_pn: pn, key_phase: 0 }
            .write(&mut buf);
        Incoming { data: BytesMut::from(&buf[..]), from: "127.0.0.1:9".parse().unwrap(), local: None }
    }

    #[test]
    fn known_sessions_get_their_runs_and_the_rest_goes_to_the_endpoint() {
        let routes = Routes::default();
        let (tx, mut rx) = mpsc::channel(8);
        routes.write().unwrap().insert(SessionId(7), tx);
        let junk = Incoming {
            data: BytesMut::from(&[0xffu8; 30][..]),
            from: "127.0.0.1:9".parse().unwrap(),
            local: None,
        };
        let batch = vec![data(7, 1), data(7, 2), data(9, 1), junk, data(7, 3)];
        let rest = route(&routes, batch);
        // The unknown session and the junk, in their order, for the endpoint to judge.
        assert_eq!(rest.len(), 2);
        assert_eq!(session_of(&rest[0].data), Some(SessionId(9)));
        assert_eq!(session_of(&rest[1].data), None);
        // Session 7's datagrams in one hand-off, in order: what went to the endpoint between
        // them does not split the run.
        let pns = |v: Vec<Incoming>| v.iter().map(|d| d.data[13]).collect::<Vec<_>>();
        assert_eq!(pns(rx.try_recv().unwrap()), vec![1, 2, 3]);
        assert!(rx.try_recv().is_err());
        // Another routed session between them does.
        let (tx8, mut rx8) = mpsc::channel(8);
        routes.write().unwrap().insert(SessionId(8), tx8);
        assert!(route(&routes, vec![data(7, 4), data(8, 1), data(7, 5)]).is_empty());
        assert_eq!(pns(rx.try_recv().unwrap()), vec![4]);
        assert_eq!(pns(rx8.try_recv().unwrap()), vec![1]);
        assert_eq!(pns(rx.try_recv().unwrap()), vec![5]);
    }

    #[test]
    fn a_full_inbox_drops_rather_than_waits() {
        let routes = Routes::default();
        let (tx, mut rx) = mpsc::channel(1);
        routes.write().unwrap().insert(SessionId(7), tx);
        assert!(route(&routes, vec![data(7, 1)]).is_empty());
        assert!(route(&routes, vec![data(7, 2)]).is_empty(), "routed (and dropped), not handed on");
        assert_eq!(rx.try_recv().unwrap()[0].data[13], 1);
        assert!(rx.try_recv().is_err());
    }
}
