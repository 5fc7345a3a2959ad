//! UDP associations on the client: the registry that routes the server's answers, and the
//! SOCKS5 UDP ASSOCIATE relay (RFC 1928 §7).
//!
//! An association is opened at the server through a stream (UDP_OPEN) before the application
//! is told success, so an association over the server's limit is a SOCKS5 failure reply, not
//! silence. The stream stays open as long as the association: when the application closes
//! its control connection the stream is finished and the server frees the association at
//! once; when the server ends the stream (or the session ends) the control connection is
//! closed, which tells the application the association is gone.

use super::socks::{socks_error, to_target};
use super::{open_association, Frontend};
use crate::appproto::{encode_udp, Target};
use crate::bridge::{AppMsg, Inbound};
use crate::ratelog::RateLimited;
use bytes::Bytes;
use fast_socks5::server::{states, Socks5ServerProtocol, SocksServerError};
use fast_socks5::util::target_addr::TargetAddr;
use fast_socks5::{new_udp_header, parse_udp_request, ReplyError};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::{TcpStream, UdpSocket};
use tokio::sync::mpsc;

/// An answer for a UDP association: its id, the source it came from, the payload.
pub type UdpAnswer = (u32, Target, Bytes);

/// Answers queued for one association before more are dropped.
const ANSWER_QUEUE: usize = 256;

static REFUSED: RateLimited = RateLimited::new(Duration::from_secs(10));

/// UDP associations of the client, by id: where answers from the server go.
#[derive(Clone, Default)]
pub struct UdpRegistry {
    inner: Arc<Mutex<HashMap<u32, mpsc::Sender<UdpAnswer>>>>,
}

/// One registered association; dropping it removes it from the registry.
pub struct Association {
    /// Its id (chosen by the client, random, unique among the open ones).
    pub id: u32,
    registry: UdpRegistry,
}

impl Drop for Association {
    fn drop(&mut self) {
        self.registry.inner.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.id);
    }
}

impl UdpRegistry {
    /// Registers a new association: its handle and where its answers arrive.
    pub fn register(&self) -> (Association, mpsc::Receiver<UdpAnswer>) {
        let (tx, rx) = mpsc::channel(ANSWER_QUEUE);
        let mut m = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let mut id = crate::keyfile::random_u64() as u32;
        while m.contains_key(&id) {
            id = crate::keyfile::random_u64() as u32;
        }
        m.insert(id, tx);
        (Association { id, registry: self.clone() }, rx)
    }

    /// Open associations.
    pub fn len(&self) -> usize {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether none is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Delivers an answer datagram to its association (dropped when it is gone or full).
    pub fn deliver(&self, id: u32, source: Target, payload: Bytes) {
        if let Some(tx) = self.inner.lock().unwrap_or_else(|e| e.into_inner()).get(&id) {
            let _ = tx.try_send((id, source, payload));
        }
    }
}

/// Notes a refusal of the server (counted, logged at a limited rate).
pub(super) fn refused(front: &Frontend, status: crate::appproto::Status, who: &dyn std::fmt::Display) {
    front.gate.counters().udp_refused.fetch_add(1, Ordering::Relaxed);
    if let Some(left_out) = REFUSED.hit() {
        tracing::warn!(%who, ?status, left_out, "the server refused a UDP association (its max_udp for this client?)");
    }
}

/// Serves a SOCKS5 UDP ASSOCIATE: opens the association at the server, answers the
/// application, and relays until either side ends it. `local_ip` is where the control
/// connection arrived (the relay socket binds there); datagrams are taken only from
/// `peer_ip`, the application's address.
pub(super) async fn associate(
    proto: Socks5ServerProtocol<TcpStream, states::CommandRead>,
    local_ip: IpAddr,
    peer_ip: IpAddr,
    front: &Frontend,
) -> Result<(), SocksServerError> {
    let sock = match UdpSocket::bind(SocketAddr::new(local_ip, 0)).await {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "cannot open a UDP socket for an association");
            return proto.reply_error(&ReplyError::GeneralFailure).await;
        }
    };
    let bound = sock.local_addr().map_err(|e| SocksServerError::Io { source: e, context: "udp socket" })?;
    let (assoc, answers) = front.udp.register();
    let (reader, writer) = match open_association(&front.app, assoc.id).await {
        Ok(ends) => ends,
        Err(status) => {
            refused(front, status, &peer_ip);
            return proto.reply_error(&socks_error(status)).await;
        }
    };
    let mut control = proto.reply_success(bound).await?;
    match relay(&sock, &mut control, peer_ip, assoc.id, answers, reader, front).await {
        Ended::ByApplication => {
            let _ = writer.finish().await;
        }
        Ended::ByServer => {
            let _ = writer.reset(0).await;
        }
        Ended::Cut => {
            // The session died or the server reset the association: the application learns
            // it from a reset of its control connection, not a clean close.
            crate::splice::abort(&control);
            let _ = writer.reset(0).await;
        }
    }
    Ok(())
}

/// How an association ended.
enum Ended {
    /// The application closed its control connection.
    ByApplication,
    /// The server finished the association's stream.
    ByServer,
    /// The stream was reset, or the session is gone.
    Cut,
}

/// Relays one association until the control connection closes or the server ends the
/// stream.
async fn relay(
    sock: &UdpSocket,
    control: &mut TcpStream,
    peer_ip: IpAddr,
    id: u32,
    mut answers: mpsc::Receiver<UdpAnswer>,
    mut reader: crate::bridge::StreamReader,
    front: &Frontend,
) -> Ended {
    let mut peer: Option<SocketAddr> = None;
    let mut buf = vec![0u8; 65536];
    let mut probe = [0u8; 64];
    loop {
        tokio::select! {
            // The control connection carries nothing after the reply: its end (or bytes on
            // it) ends the association (RFC 1928 §7).
            _ = control.read(&mut probe) => return Ended::ByApplication,
            m = reader.recv() => match m {
                Some(Inbound::Data(b)) => reader.consumed(b.len()),
                Some(Inbound::Fin) => return Ended::ByServer,
                Some(Inbound::Reset(_)) | None => return Ended::Cut,
            },
            r = sock.recv_from(&mut buf) => {
                let (n, from) = match r {
                    Ok(x) => x,
                    Err(e) if matches!(e.kind(), std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::ConnectionReset) => continue,
                    Err(e) => {
                        tracing::debug!(error = %e, "UDP association socket failed");
                        return Ended::ByApplication;
                    }
                };
                if from.ip() != peer_ip {
                    continue; // only the application that asked may use the association
                }
                peer = Some(from);
                let Ok((frag, target, data)) = parse_udp_request(&buf[..n]).await else { continue };
                if frag != 0 {
                    continue; // fragmentation is not supported (RFC 1928 allows dropping)
                }
                let target = to_target(&target);
                let class = front.datagram_class(&target, data.len(), None);
                let d = encode_udp(id, &target, data);
                let _ = front.app.try_send(AppMsg::Datagram(class, d));
            }
            Some((_, source, payload)) = answers.recv() => {
                let Some(p) = peer else { continue };
                let addr = match &source {
                    Target::Addr(a) => TargetAddr::Ip(*a),
                    Target::Name(n, port) => TargetAddr::Domain(n.clone(), *port),
                };
                if let Ok(mut pkt) = new_udp_header(addr) {
                    pkt.extend_from_slice(&payload);
                    let _ = sock.send_to(&pkt, p).await;
                }
            }
        }
    }
}
