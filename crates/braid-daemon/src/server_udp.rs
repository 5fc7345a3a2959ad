//! The server's UDP associations. An association is opened by a UDP_OPEN stream
//! ([`crate::appproto`]) and lives exactly as long as that stream: when the client finishes or
//! resets it (its application closed the SOCKS5 control connection, its port forward's source
//! went idle) or the session ends, the association and its socket are freed at once. Datagrams
//! for an association that no stream opened are dropped.

use crate::appproto::{encode_reply, encode_udp, Status, Target, CLASS_UDP};
use crate::bridge::{AppMsg, Inbound, StreamReader, StreamWriter};
use crate::egress::EgressPolicy;
use crate::ratelog::RateLimited;
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::UdpSocket;
use tokio::sync::mpsc;

/// Datagrams queued for one association's socket before more are dropped.
const QUEUE: usize = 256;

/// Where each open association's datagrams go: its task.
type Map = Arc<Mutex<HashMap<u32, mpsc::Sender<(Target, Bytes)>>>>;

static UNKNOWN: RateLimited = RateLimited::new(Duration::from_secs(10));
static REFUSED: RateLimited = RateLimited::new(Duration::from_secs(10));

/// The open associations of one session, by id: where their datagrams go.
#[derive(Clone)]
pub struct Associations {
    map: Map,
    max: usize,
    client: Arc<str>,
}

/// Removes an association from the map when its task ends, however it ends.
struct Registered {
    map: Map,
    id: u32,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.map.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.id);
    }
}

impl Associations {
    /// Associations of `client`, at most `max` at once (0: the client may not use UDP).
    pub fn new(client: &str, max: usize) -> Self {
        Associations { map: Arc::default(), max, client: client.into() }
    }

    /// Open associations.
    pub fn len(&self) -> usize {
        self.map.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether none is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Hands a datagram from the client to its association; drops it when the association is
    /// not open (never opened, or closed already) or its queue is full.
    pub fn deliver(&self, id: u32, target: Target, payload: Bytes) {
        let map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        match map.get(&id) {
            Some(tx) => {
                let _ = tx.try_send((target, payload));
            }
            None => {
                if let Some(left_out) = UNKNOWN.hit() {
                    tracing::debug!(client = %self.client, association = id, left_out, "datagram for an association that is not open dropped");
                }
            }
        }
    }

    /// Registers association `id`, or says why not.
    fn register(&self, id: u32) -> Result<(Registered, mpsc::Receiver<(Target, Bytes)>), Status> {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if self.max == 0 {
            return Err(Status::Denied);
        }
        if map.contains_key(&id) {
            return Err(Status::BadRequest);
        }
        if map.len() >= self.max {
            return Err(Status::Limit);
        }
        let (tx, rx) = mpsc::channel(QUEUE);
        map.insert(id, tx);
        Ok((Registered { map: self.map.clone(), id }, rx))
    }

    /// Serves the UDP_OPEN stream of association `id`: answers Ok (or why not), then relays
    /// its datagrams until the stream ends.
    pub async fn serve(
        &self,
        id: u32,
        mut reader: StreamReader,
        writer: StreamWriter,
        policy: Arc<EgressPolicy>,
        app: mpsc::Sender<AppMsg>,
    ) {
        let (registered, rx) = match self.register(id) {
            Ok(r) => r,
            Err(status) => {
                if let Some(left_out) = REFUSED.hit() {
                    tracing::info!(client = %self.client, association = id, ?status, max_udp = self.max, left_out, "UDP association refused");
                }
                let _ = writer.write(encode_reply(status)).await;
                let _ = writer.finish().await;
                return;
            }
        };
        let sock = match UdpSocket::bind("[::]:0").await {
            Ok(s) => s,
            Err(_) => match UdpSocket::bind("0.0.0.0:0").await {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(client = %self.client, error = %e, "cannot open a UDP socket for an association");
                    let _ = writer.write(encode_reply(Status::Unreachable)).await;
                    let _ = writer.finish().await;
                    return;
                }
            },
        };
        if writer.write(encode_reply(Status::Ok)).await.is_err() {
            return;
        }
        tracing::debug!(client = %self.client, association = id, "UDP association open");
        let clean = relay(id, &sock, rx, &mut reader, &policy, &app).await;
        drop(registered);
        if clean {
            let _ = writer.finish().await;
        } else {
            let _ = writer.reset(0).await;
        }
        tracing::debug!(client = %self.client, association = id, "UDP association closed");
    }
}

/// Moves datagrams between the association's socket and the session until the stream ends;
/// true when the client finished it cleanly.
async fn relay(
    id: u32,
    sock: &UdpSocket,
    mut rx: mpsc::Receiver<(Target, Bytes)>,
    reader: &mut StreamReader,
    policy: &EgressPolicy,
    app: &mpsc::Sender<AppMsg>,
) -> bool {
    let mut buf = vec![0u8; 65536];
    loop {
        tokio::select! {
            m = reader.recv() => match m {
                Some(Inbound::Fin) => return true,
                Some(Inbound::Data(b)) => {
                    // Nothing follows UDP_OPEN: bytes here are a protocol error.
                    reader.consumed(b.len());
                    tracing::debug!(association = id, "bytes on a UDP association's stream; closing it");
                    return false;
                }
                Some(Inbound::Reset(_)) | None => return false,
            },
            m = rx.recv() => {
                let Some((target, payload)) = m else { return false };
                match crate::server_role::resolve(&target, policy).await {
                    Ok(addr) => {
                        let _ = sock.send_to(&payload, crate::udp::v6_if_needed(addr, sock)).await;
                    }
                    Err((_, why)) => tracing::debug!(%target, reason = %why, "UDP datagram refused"),
                }
            }
            r = sock.recv_from(&mut buf) => {
                let (n, from) = match r {
                    Ok(x) => x,
                    // An ICMP report about an earlier datagram: not the socket's end.
                    Err(e) if matches!(e.kind(), std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::ConnectionReset) => continue,
                    Err(e) => {
                        tracing::debug!(association = id, error = %e, "UDP association socket failed");
                        return false;
                    }
                };
                let d = encode_udp(id, &Target::Addr(crate::udp::canonical(from)), &buf[..n]);
                let _ = app.try_send(AppMsg::Datagram(CLASS_UDP, d));
            }
        }
    }
}
