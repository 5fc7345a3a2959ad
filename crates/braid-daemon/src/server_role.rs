//! The server's side of streams and datagrams: a stream's CONNECT request becomes a TCP
//! connection (if the egress policy allows it and the client is within its limits), a
//! UDP_OPEN request a UDP association ([`crate::server_udp`]) that lives as long as its stream.
//!
//! Limits per client ([`ClientPolicy`]): `max_streams` counts every stream the client holds
//! open at the server, TCP connections and UDP associations alike (each association is one
//! stream); `max_udp` counts the associations among them. So a client has at most
//! `max_streams` streams, of which at most `max_udp` are associations; a request over either
//! limit is answered `Limit`, and `max_udp = 0` answers every UDP_OPEN `Denied`. (The
//! session's own `max_streams` caps the streams the core lets the client open at all.)

use crate::appproto::{decode_request, decode_udp, encode_reply, Request, Status, Target};
use crate::bridge::{AppMsg, StreamEnds, StreamReader, StreamWriter};
use crate::config::ClientPolicy;
use crate::driver::Role;
use crate::egress::EgressPolicy;
use crate::server_udp::{AssocKind, Associations};
use crate::splice::splice;
use braid_core::datagram::Datagram;
use bytes::Bytes;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::mpsc;

/// How long a TCP connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

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
        let udp = Associations::new(&client.name, client.max_udp);
        ServerRole { policy, client, app, open_streams: Arc::new(AtomicUsize::new(0)), udp }
    }
}

impl Role for ServerRole {
    fn on_stream_opened(&mut self, ends: StreamEnds) {
        let n = self.open_streams.fetch_add(1, Ordering::SeqCst) + 1;
        let over = n as u64 > self.client.max_streams;
        let (policy, counter, client) =
            (self.policy.clone(), self.open_streams.clone(), self.client.name.clone());
        let (udp, app) = (self.udp.clone(), self.app.clone());
        tokio::spawn(async move {
            let (mut reader, writer) = ends.split();
            match read_request(&mut reader).await {
                Err(s) => refuse(&writer, s).await,
                Ok(_) if over => {
                    tracing::info!(client, "stream refused: max_streams reached");
                    refuse(&writer, Status::Limit).await;
                }
                Ok((Request::Connect(target), early)) => {
                    egress_stream(target, early, reader, writer, policy, &client).await
                }
                Ok((Request::UdpOpen(id), _)) => {
                    udp.serve(id, AssocKind::Plain, reader, writer, policy, app).await
                }
                Ok((Request::UdpOpenOrdered(id), _)) => {
                    udp.serve(id, AssocKind::Ordered, reader, writer, policy, app).await
                }
                Ok((Request::PingOpen(id), _)) => {
                    udp.serve(id, AssocKind::Ping, reader, writer, policy, app).await
                }
            }
            counter.fetch_sub(1, Ordering::SeqCst);
        });
    }

    fn on_datagram(&mut self, d: Datagram) {
        // Every datagram is a UDP payload of an association; its class is the client's choice
        // (the association answers in it).
        let Ok((assoc, target, payload)) = decode_udp(&d.data) else { return };
        self.udp.deliver(assoc, d.class, target, payload);
    }

    fn on_paths(&mut self, paths: &[braid_core::PathInfo]) {
        self.udp.hold.update(paths);
    }
}

/// Resolves `target` and returns the first address the policy allows.
pub async fn resolve(target: &Target, policy: &EgressPolicy) -> Result<SocketAddr, (Status, String)> {
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

/// Reads the request from the start of a stream.
async fn read_request(reader: &mut StreamReader) -> Result<(Request, Bytes), Status> {
    crate::splice::read_header(reader, 300, decode_request).await.map_err(|_| Status::BadRequest)
}

/// Answers a request with `status` and ends the stream.
async fn refuse(writer: &StreamWriter, status: Status) {
    let _ = writer.write(encode_reply(status)).await;
    let _ = writer.finish().await;
}

async fn egress_stream(
    target: Target,
    early: Bytes,
    reader: StreamReader,
    writer: StreamWriter,
    policy: Arc<EgressPolicy>,
    client: &str,
) {
    let addr = match resolve(&target, &policy).await {
        Ok(a) => a,
        Err((status, why)) => {
            tracing::info!(client, %target, reason = %why, "stream refused");
            return refuse(&writer, status).await;
        }
    };
    let tcp = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => {
            tracing::info!(client, %target, error = %e, "connection failed");
            return refuse(&writer, connect_status(&e)).await;
        }
        Err(_) => return refuse(&writer, Status::Timeout).await,
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
