//! The server's side of streams and datagrams: each stream's CONNECT request becomes a TCP
//! connection (if the egress policy allows it and the client is within its limits), each UDP
//! association a UDP socket.

use crate::appproto::{decode_connect, decode_udp, encode_reply, encode_udp, Status, Target, CLASS_UDP};
use crate::bridge::{AppMsg, StreamEnds, StreamReader};
use crate::config::ClientPolicy;
use crate::driver::Role;
use crate::egress::EgressPolicy;
use crate::splice::splice;
use braid_core::datagram::Datagram;
use bytes::Bytes;
use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpStream, UdpSocket};
use tokio::sync::mpsc;

/// How long a TCP connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// A UDP association with no traffic for this long is closed.
const UDP_IDLE: Duration = Duration::from_secs(120);

/// Where a UDP association's datagrams go: its task at the server.
type Associations = Arc<Mutex<HashMap<u32, mpsc::Sender<(Target, Bytes)>>>>;

/// The server's role in one session.
pub struct ServerRole {
    policy: Arc<EgressPolicy>,
    client: ClientPolicy,
    app: mpsc::Sender<AppMsg>,
    open_streams: Arc<AtomicUsize>,
    udp: Associations,
}

impl ServerRole {
    /// The role for a session of `client`.
    pub fn new(policy: Arc<EgressPolicy>, client: ClientPolicy, app: mpsc::Sender<AppMsg>) -> Self {
        ServerRole { policy, client, app, open_streams: Arc::new(AtomicUsize::new(0)), udp: Arc::default() }
    }
}

impl Role for ServerRole {
    fn on_stream_opened(&mut self, ends: StreamEnds) {
        let n = self.open_streams.fetch_add(1, Ordering::SeqCst) + 1;
        let over = n as u64 > self.client.max_streams;
        let (policy, counter, client) =
            (self.policy.clone(), self.open_streams.clone(), self.client.name.clone());
        tokio::spawn(async move {
            egress_stream(ends, policy, over, &client).await;
            counter.fetch_sub(1, Ordering::SeqCst);
        });
    }

    fn on_datagram(&mut self, d: Datagram) {
        if d.class != CLASS_UDP {
            return;
        }
        let Ok((assoc, target, payload)) = decode_udp(&d.data) else { return };
        let mut map = self.udp.lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|_, tx| !tx.is_closed());
        if !map.contains_key(&assoc) {
            if map.len() >= self.client.max_udp {
                tracing::debug!(client = %self.client.name, "UDP association limit reached");
                return;
            }
            let (tx, rx) = mpsc::channel(256);
            map.insert(assoc, tx);
            tokio::spawn(udp_association(assoc, rx, self.policy.clone(), self.app.clone()));
        }
        if let Some(tx) = map.get(&assoc) {
            let _ = tx.try_send((target, payload));
        }
    }
}

/// Resolves `target` and returns the first address the policy allows.
async fn resolve(target: &Target, policy: &EgressPolicy) -> Result<SocketAddr, (Status, String)> {
    let candidates: Vec<SocketAddr> = match target {
        Target::Addr(a) => vec![*a],
        Target::Name(n, p) => tokio::net::lookup_host((n.as_str(), *p))
            .await
            .map_err(|e| (Status::NotFound, format!("{n}: {e}")))?
            .collect(),
    };
    policy.refresh().await;
    let mut why = format!("{target}: no address");
    for a in candidates {
        match policy.check(a.ip(), a.port()) {
            Ok(()) => return Ok(a),
            Err(e) => why = e,
        }
    }
    Err((Status::Denied, why))
}

fn connect_status(e: &io::Error) -> Status {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => Status::Refused,
        io::ErrorKind::TimedOut => Status::Timeout,
        _ => Status::Unreachable,
    }
}

/// Reads the CONNECT request from the start of a stream.
async fn read_request(reader: &mut StreamReader) -> Result<(Target, Bytes), Status> {
    crate::splice::read_header(reader, 300, decode_connect).await.map_err(|_| Status::BadRequest)
}

async fn egress_stream(ends: StreamEnds, policy: Arc<EgressPolicy>, over_limit: bool, client: &str) {
    let (mut reader, writer) = ends.split();
    let (target, early) = match read_request(&mut reader).await {
        Ok(t) => t,
        Err(s) => {
            let _ = writer.write(encode_reply(s)).await;
            let _ = writer.finish().await;
            return;
        }
    };
    if over_limit {
        tracing::info!(client, %target, "stream refused: limit reached");
        let _ = writer.write(encode_reply(Status::Limit)).await;
        let _ = writer.finish().await;
        return;
    }
    let addr = match resolve(&target, &policy).await {
        Ok(a) => a,
        Err((status, why)) => {
            tracing::info!(client, %target, reason = %why, "stream refused");
            let _ = writer.write(encode_reply(status)).await;
            let _ = writer.finish().await;
            return;
        }
    };
    let tcp = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => {
            tracing::info!(client, %target, error = %e, "connection failed");
            let _ = writer.write(encode_reply(connect_status(&e))).await;
            let _ = writer.finish().await;
            return;
        }
        Err(_) => {
            let _ = writer.write(encode_reply(Status::Timeout)).await;
            let _ = writer.finish().await;
            return;
        }
    };
    tracing::debug!(client, %target, %addr, "connected");
    if writer.write(encode_reply(Status::Ok)).await.is_err() {
        return;
    }
    // Bytes the client sent after its request go to the destination first.
    let (r, w) = (reader, writer.clone());
    if !early.is_empty() {
        let mut t = tcp;
        if tokio::io::AsyncWriteExt::write_all(&mut t, &early).await.is_err() {
            let _ = writer.reset(1).await;
            return;
        }
        splice(t, Bytes::new(), r, w).await;
    } else {
        splice(tcp, Bytes::new(), r, w).await;
    }
}

/// One UDP association at the server: datagrams to their destinations, answers back.
async fn udp_association(
    assoc: u32,
    mut rx: mpsc::Receiver<(Target, Bytes)>,
    policy: Arc<EgressPolicy>,
    app: mpsc::Sender<AppMsg>,
) {
    let Ok(sock) = UdpSocket::bind("[::]:0").await.or(UdpSocket::bind("0.0.0.0:0").await) else { return };
    let mut buf = vec![0u8; 65536];
    loop {
        tokio::select! {
            m = rx.recv() => {
                let Some((target, payload)) = m else { return };
                match resolve(&target, &policy).await {
                    Ok(addr) => { let _ = sock.send_to(&payload, crate::udp::v6_if_needed(addr, &sock)).await; }
                    Err((_, why)) => tracing::debug!(%target, reason = %why, "UDP datagram refused"),
                }
            }
            r = sock.recv_from(&mut buf) => {
                let Ok((n, from)) = r else { return };
                let d = encode_udp(assoc, &Target::Addr(crate::udp::canonical(from)), &buf[..n]);
                let _ = app.try_send(AppMsg::Datagram(CLASS_UDP, d));
            }
            _ = tokio::time::sleep(UDP_IDLE) => return,
        }
    }
}
