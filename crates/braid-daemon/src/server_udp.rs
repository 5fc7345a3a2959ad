//! The server's UDP associations. An association is opened by a UDP_OPEN stream
//! ([`crate::appproto`]) and lives exactly as long as that stream: when the client finishes or
//! resets it (its application closed the SOCKS5 control connection, its port forward's source
//! went idle) or the session ends, the association and its socket are freed at once. Datagrams
//! for an association that no stream opened are dropped.
//!
//! Three kinds ([`AssocKind`]): plain (SOCKS5 UDP ASSOCIATE, UDP forwards); ordered (one UDP
//! flow of a client's TUN: its payloads carry a sequence number; what the client sends is put
//! back in order here before it leaves, [`crate::reorder`], and answers are numbered for the
//! client's window); ping (ICMP echo through the TUN: sent and answered on an ICMP datagram
//! socket, which needs the server's group in `net.ipv4.ping_group_range`).

use crate::appproto::{encode_reply, encode_udp, Status, Target, CLASS_UDP};
use crate::bridge::{AppMsg, Inbound, StreamReader, StreamWriter};
use crate::egress::EgressPolicy;
use crate::ratelog::RateLimited;
use crate::reorder::{Reorder, SharedHold, DEFAULT_CAP};
use bytes::{BufMut, Bytes, BytesMut};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::UdpSocket;
use tokio::sync::mpsc;

/// Datagrams queued for one association's socket before more are dropped.
const QUEUE: usize = 256;

/// Where each open association's datagrams go: its task.
type Map = Arc<Mutex<HashMap<u32, mpsc::Sender<FromClient>>>>;

/// A datagram from the client: its class, destination and payload.
type FromClient = (u8, Target, Bytes);

static UNKNOWN: RateLimited = RateLimited::new(Duration::from_secs(10));
static REFUSED: RateLimited = RateLimited::new(Duration::from_secs(10));
static NO_PING: RateLimited = RateLimited::new(Duration::from_secs(60));

/// What an association carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssocKind {
    /// Datagrams as they come (SOCKS5, forwards).
    Plain,
    /// One TUN flow: payloads start with a sequence number, re-ordered on arrival.
    Ordered,
    /// ICMP echo messages.
    Ping,
}

/// The open associations of one session, by id: where their datagrams go.
#[derive(Clone)]
pub struct Associations {
    map: Map,
    max: usize,
    client: Arc<str>,
    /// The reorder window's hold time, from this session's paths.
    pub hold: SharedHold,
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
        Associations { map: Arc::default(), max, client: client.into(), hold: SharedHold::new(DEFAULT_CAP) }
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
    pub fn deliver(&self, id: u32, class: u8, target: Target, payload: Bytes) {
        let map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        match map.get(&id) {
            Some(tx) => {
                let _ = tx.try_send((class, target, payload));
            }
            None => {
                if let Some(left_out) = UNKNOWN.hit() {
                    tracing::debug!(client = %self.client, association = id, left_out, "datagram for an association that is not open dropped");
                }
            }
        }
    }

    /// Registers association `id`, or says why not.
    fn register(&self, id: u32) -> Result<(Registered, mpsc::Receiver<FromClient>), Status> {
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
        kind: AssocKind,
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
        let opened = match kind {
            AssocKind::Ping => {
                ping_socket(IpAddr::from([0u8; 4])).or_else(|_| ping_socket(IpAddr::from([0u16; 8])))
            }
            _ => match UdpSocket::bind("[::]:0").await {
                Ok(s) => Ok(s),
                Err(_) => UdpSocket::bind("0.0.0.0:0").await,
            },
        };
        let sock = match opened {
            Ok(s) => s,
            Err(e) => {
                if kind == AssocKind::Ping {
                    if let Some(left_out) = NO_PING.hit() {
                        tracing::warn!(client = %self.client, error = %e, left_out, "cannot open an ICMP datagram socket: ping through braid needs the server's group in net.ipv4.ping_group_range");
                    }
                } else {
                    tracing::warn!(client = %self.client, error = %e, "cannot open a UDP socket for an association");
                }
                let _ = writer.write(encode_reply(Status::Unreachable)).await;
                let _ = writer.finish().await;
                return;
            }
        };
        if writer.write(encode_reply(Status::Ok)).await.is_err() {
            return;
        }
        tracing::debug!(client = %self.client, association = id, "UDP association open");
        let ends = Ends { id, kind, hold: &self.hold, policy: &policy, app: &app };
        let clean = relay(&ends, sock, rx, &mut reader).await;
        drop(registered);
        if clean {
            let _ = writer.finish().await;
        } else {
            let _ = writer.reset(0).await;
        }
        tracing::debug!(client = %self.client, association = id, "UDP association closed");
    }
}

/// What a relay needs besides its socket and queues.
struct Ends<'a> {
    id: u32,
    kind: AssocKind,
    hold: &'a SharedHold,
    policy: &'a EgressPolicy,
    app: &'a mpsc::Sender<AppMsg>,
}

/// An ICMP datagram socket ("ping socket") of `any`'s family: the kernel fills in the echo
/// identifier and checksum and hands back only the replies to it.
fn ping_socket(any: IpAddr) -> std::io::Result<UdpSocket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let (domain, proto) =
        if any.is_ipv4() { (Domain::IPV4, Protocol::ICMPV4) } else { (Domain::IPV6, Protocol::ICMPV6) };
    let s = Socket::new(domain, Type::DGRAM, Some(proto))?;
    s.set_nonblocking(true)?;
    s.bind(&SocketAddr::new(any, 0).into())?;
    UdpSocket::from_std(s.into())
}

/// Moves datagrams between the association's socket and the session until the stream ends;
/// true when the client finished it cleanly.
async fn relay(
    ends: &Ends<'_>,
    sock: UdpSocket,
    mut rx: mpsc::Receiver<FromClient>,
    reader: &mut StreamReader,
) -> bool {
    let id = ends.id;
    let mut buf = vec![0u8; 65536];
    // A ping association's socket is of the family of its first destination's.
    let mut sock = sock;
    let mut window: Reorder<(Target, Bytes)> = Reorder::from_zero(ends.hold.cap());
    let mut ready: Vec<(Target, Bytes)> = Vec::new();
    let mut answer_seq: u32 = 0;
    // Answers go in the class of the client's latest datagram (a call's answers are as
    // urgent as the call), unless they turn out to be a download (see `AnswerRate`).
    let mut class = CLASS_UDP;
    let mut answers = AnswerRate::default();
    loop {
        let due = window.next_deadline().map(tokio::time::Instant::from_std);
        let timer = async {
            match due {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            m = reader.recv() => match m {
                Some(Inbound::Fin) => return true,
                Some(Inbound::Data(b)) => {
                    // Nothing follows the request: bytes here are a protocol error.
                    reader.consumed(b.len());
                    tracing::debug!(association = id, "bytes on a UDP association's stream; closing it");
                    return false;
                }
                Some(Inbound::Reset(_)) | None => return false,
            },
            m = rx.recv() => {
                let Some((c, target, payload)) = m else { return false };
                class = c;
                if ends.kind == AssocKind::Ordered {
                    let Some((seq, data)) = split_seq(&payload) else { continue };
                    window.push(std::time::Instant::now(), seq, (target, data), ends.hold.get(), &mut ready);
                } else {
                    ready.push((target, payload));
                }
                for (target, payload) in ready.drain(..) {
                    send(ends, &mut sock, &target, &payload).await;
                }
            }
            _ = timer => {
                window.poll(std::time::Instant::now(), &mut ready);
                for (target, payload) in ready.drain(..) {
                    send(ends, &mut sock, &target, &payload).await;
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
                let source = Target::Addr(crate::udp::canonical(from));
                let d = match ends.kind {
                    AssocKind::Ordered => {
                        let mut p = BytesMut::with_capacity(n + 4);
                        p.put_u32(answer_seq);
                        p.put_slice(&buf[..n]);
                        answer_seq = answer_seq.wrapping_add(1);
                        encode_udp(id, &source, &p)
                    }
                    _ => encode_udp(id, &source, &buf[..n]),
                };
                let bulk = answers.add(std::time::Instant::now(), n);
                let answer_class = if bulk && class == crate::classes::INTERACTIVE { CLASS_UDP } else { class };
                let _ = ends.app.try_send(AppMsg::Datagram(answer_class, d));
            }
        }
    }
}

/// Answers faster than this (bytes per second over a window) are a download, not a call.
const BULK_ANSWERS: usize = 250_000;
/// The window that rate is measured over.
const ANSWER_WINDOW: std::time::Duration = std::time::Duration::from_secs(1);

/// Tells a UDP download from a call by its answers' rate. A client classifies a flow by its
/// own datagrams, so one small request (iperf3 -u, a QUIC or video download's ACKs) puts the
/// flow in the duplicated interactive class; the server would then send the whole download
/// twice. Calls, games and DNS answer at well under 2 Mbit/s; once an association's answers
/// exceed that over a second they leave the interactive class for good.
#[derive(Default)]
struct AnswerRate {
    window_start: Option<std::time::Instant>,
    bytes: usize,
    bulk: bool,
}

impl AnswerRate {
    /// Counts an answer of `len` bytes; true once the association is a download.
    fn add(&mut self, now: std::time::Instant, len: usize) -> bool {
        let start = *self.window_start.get_or_insert(now);
        if now.duration_since(start) >= ANSWER_WINDOW {
            self.window_start = Some(now);
            self.bytes = 0;
        }
        self.bytes += len;
        self.bulk |= self.bytes > BULK_ANSWERS;
        self.bulk
    }
}

/// Splits an ordered association's payload into its sequence number and the datagram.
pub fn split_seq(payload: &Bytes) -> Option<(u32, Bytes)> {
    let seq = u32::from_be_bytes(payload.get(..4)?.try_into().ok()?);
    Some((seq, payload.slice(4..)))
}

/// Sends one datagram of the association where the egress policy allows.
async fn send(ends: &Ends<'_>, sock: &mut UdpSocket, target: &Target, payload: &[u8]) {
    let addr = match crate::server_role::resolve(target, ends.policy).await {
        Ok(a) => a,
        Err((_, why)) => {
            tracing::debug!(%target, reason = %why, "UDP datagram refused");
            return;
        }
    };
    if ends.kind == AssocKind::Ping {
        let family_differs = sock.local_addr().is_ok_and(|l| l.is_ipv4() != addr.is_ipv4());
        if family_differs {
            let any = if addr.is_ipv4() { IpAddr::from([0u8; 4]) } else { IpAddr::from([0u16; 8]) };
            match ping_socket(any) {
                Ok(s) => *sock = s,
                Err(e) => {
                    tracing::debug!(error = %e, "cannot open an ICMP socket of this family");
                    return;
                }
            }
        }
        let _ = sock.send_to(payload, SocketAddr::new(addr.ip(), 0)).await;
        return;
    }
    let _ = sock.send_to(payload, crate::udp::v6_if_needed(addr, sock)).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn a_call_stays_interactive_and_a_download_does_not() {
        let t0 = Instant::now();
        // A call: 160-byte answers every 20 ms for 5 s (64 kbit/s).
        let mut call = AnswerRate::default();
        assert!((0..250).all(|i| !call.add(t0 + Duration::from_millis(20 * i), 160)));
        // A download after one small request: 1200-byte answers every 0.1 ms (96 Mbit/s)
        // leave the class within the first window, and for good.
        let mut download = AnswerRate::default();
        let first = (0..10_000).position(|i| download.add(t0 + Duration::from_micros(100 * i), 1200));
        assert_eq!(first, Some(BULK_ANSWERS / 1200));
        assert!(download.add(t0 + Duration::from_secs(60), 10), "sticky");
    }
}
