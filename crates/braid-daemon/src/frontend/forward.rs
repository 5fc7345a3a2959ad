//! Port forwards: every TCP connection to the listen address becomes a stream to the target;
//! UDP on the same port travels as datagrams of one association per local source.
//!
//! A UDP source's association is opened at the server through a stream (UDP_OPEN), like a
//! SOCKS5 one, and finished after [`UDP_IDLE`] without a datagram either way (or when the
//! server ends it). A source the server refuses has its datagrams dropped, with a
//! rate-limited log, for [`REFUSED_HOLD`] before it is tried again.

use super::gate::accept;
use super::udp::refused;
use super::{connect, open_association, Frontend};
use crate::appproto::{encode_udp, Target};
use crate::bridge::{AppMsg, Inbound};
use crate::ratelog::RateLimited;
use crate::splice::splice;
use bytes::Bytes;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, UdpSocket};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// How long a UDP forward keeps an idle source's association.
pub const UDP_IDLE: Duration = Duration::from_secs(120);
/// How long datagrams of a refused source are dropped before its association is tried again.
pub const REFUSED_HOLD: Duration = Duration::from_secs(5);
/// Sources one UDP forward serves at once; datagrams of further sources are dropped.
const MAX_SOURCES: usize = 1024;
/// Datagrams queued per source while its association opens or its queue drains.
const SOURCE_QUEUE: usize = 64;

static TOO_MANY: RateLimited = RateLimited::new(Duration::from_secs(10));

/// Serves a TCP port forward: every connection to `listener` becomes a stream to `target`.
pub async fn serve_tcp(listener: TcpListener, target: Target, front: Frontend) {
    loop {
        let (conn, peer) = accept(&listener, "forward", front.gate.counters()).await;
        // Over the cap the connection is closed at once.
        let Some(ticket) = front.gate.admit() else { continue };
        let (app, target) = (front.app.clone(), target.clone());
        let listen = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
        let class = front.stream_class(&target, Some((&listen, &target.to_string())));
        tokio::spawn(async move {
            match connect(&app, &target, class).await {
                Ok((ends, rest)) => {
                    let (reader, writer) = ends.split();
                    splice(conn, rest, reader, writer).await;
                }
                Err(status) => {
                    // A reset, not a clean close: a client that waits for the server to speak
                    // first must not read a refused connection as an empty transfer.
                    crate::splice::abort(&conn);
                    tracing::info!(%peer, %target, ?status, "forward: the server could not connect")
                }
            }
            drop(ticket);
        });
    }
}

/// Serves the UDP side of a port forward to `target`.
pub async fn serve_udp(sock: UdpSocket, target: Target, front: Frontend) {
    let sock = Arc::new(sock);
    let mut sources: HashMap<SocketAddr, mpsc::Sender<Bytes>> = HashMap::new();
    let mut buf = vec![0u8; 65536];
    loop {
        let (n, from) = match sock.recv_from(&mut buf).await {
            Ok(x) => x,
            Err(e) => {
                tracing::debug!(error = %e, "UDP forward receive failed");
                tokio::time::sleep(super::gate::BACKOFF).await;
                continue;
            }
        };
        let payload = Bytes::copy_from_slice(&buf[..n]);
        if let Some(tx) = sources.get(&from).filter(|tx| !tx.is_closed()) {
            let _ = tx.try_send(payload); // full: dropped, as a congested link would
            continue;
        }
        sources.retain(|_, tx| !tx.is_closed());
        if sources.len() >= MAX_SOURCES {
            if let Some(left_out) = TOO_MANY.hit() {
                tracing::warn!(%from, %target, left_out, "UDP forward serves {MAX_SOURCES} sources already: datagram dropped");
            }
            continue;
        }
        let (tx, rx) = mpsc::channel(SOURCE_QUEUE);
        let _ = tx.try_send(payload);
        sources.insert(from, tx);
        tokio::spawn(source(from, target.clone(), rx, sock.clone(), front.clone()));
    }
}

/// One local source of a UDP forward: opens its association, relays until it idles out or
/// the server ends it, then finishes the stream.
async fn source(
    from: SocketAddr,
    target: Target,
    mut datagrams: mpsc::Receiver<Bytes>,
    sock: Arc<UdpSocket>,
    front: Frontend,
) {
    let (assoc, mut answers) = front.udp.register();
    let (mut reader, writer) = match open_association(&front.app, assoc.id).await {
        Ok(ends) => ends,
        Err(status) => {
            refused(&front, status, &from);
            // Datagrams of this source are dropped (queued ones with the channel) until the
            // hold ends and the next one tries again.
            drop(assoc);
            let hold = tokio::time::sleep(REFUSED_HOLD);
            tokio::pin!(hold);
            loop {
                tokio::select! {
                    _ = &mut hold => return,
                    m = datagrams.recv() => if m.is_none() { return },
                }
            }
        }
    };
    let mut last = Instant::now();
    let clean = loop {
        tokio::select! {
            m = datagrams.recv() => {
                let Some(payload) = m else { break true };
                last = Instant::now();
                let listen = sock.local_addr().map(|a| a.to_string()).unwrap_or_default();
                let class = front.datagram_class(&target, payload.len(), Some((&listen, &target.to_string())));
                let d = encode_udp(assoc.id, &target, &payload);
                let _ = front.app.try_send(AppMsg::Datagram(class, d));
            }
            Some((_, _, payload)) = answers.recv() => {
                last = Instant::now();
                let _ = sock.send_to(&payload, from).await;
            }
            m = reader.recv() => match m {
                Some(Inbound::Data(b)) => reader.consumed(b.len()),
                _ => break false,
            },
            _ = tokio::time::sleep_until(last + UDP_IDLE) => break true,
        }
    };
    if clean {
        let _ = writer.finish().await;
    } else {
        let _ = writer.reset(0).await;
    }
}
