//! Client front ends: SOCKS5 (CONNECT and UDP ASSOCIATE, optional username/password) and port
//! forwards (`listen -> host:port`, TCP and UDP on the same port, the habit of `ssh -L`).
//! Each TCP connection opens a braid stream whose first bytes are the CONNECT request; each
//! UDP association a stream whose first bytes are UDP_OPEN ([`crate::appproto`]). The
//! server's reply decides what the application is told.
//!
//! Under pressure ([`gate`]): accept loops back off on errors, connections are capped, and a
//! SOCKS5 connection must finish its greeting and request within `socks_timeout`.

mod forward;
pub mod gate;
mod socks;
mod udp;

pub use gate::Gate;
pub use udp::UdpRegistry;

use crate::appproto::{encode_connect, encode_udp_open, Status, Target};
use crate::bridge::{AppMsg, OpenError, StreamEnds, StreamReader, StreamWriter};
use crate::classes::{Classifier, Flow, Protocol, DATAGRAMS};
use crate::splice::read_reply;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, UdpSocket};
use tokio::sync::{mpsc, oneshot};

/// What the front ends share: the session's request channel, the UDP associations, the
/// admission gate and the SOCKS5 settings.
#[derive(Clone)]
pub struct Frontend {
    pub(crate) app: mpsc::Sender<AppMsg>,
    udp: UdpRegistry,
    gate: Gate,
    auth: Option<(String, String)>,
    socks_timeout: Duration,
    classes: Arc<Classifier>,
}

/// The front ends' counters, as published in the status.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrontendStatus {
    /// Connections open now (SOCKS5 and forwards).
    pub connections: usize,
    /// The cap on them.
    pub max_connections: usize,
    /// Connections refused at the cap.
    pub refused: u64,
    /// SOCKS5 connections still greeting, dropped to admit a newer one at the cap.
    pub evicted: u64,
    /// SOCKS5 connections dropped for not finishing greeting and request in time.
    pub greeting_timeouts: u64,
    /// Failed accepts.
    pub accept_errors: u64,
    /// UDP associations open now.
    pub udp_associations: usize,
    /// UDP associations the server refused.
    pub udp_refused: u64,
    /// The TUN front end's counters, in TUN mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tun: Option<crate::tun::TunStatus>,
}

impl Frontend {
    /// Front ends that send their requests to `app`, at most `max_connections` connections at
    /// once (lowered to what the file descriptor limit allows), SOCKS5 greetings and requests
    /// within `socks_timeout`.
    pub fn new(
        app: mpsc::Sender<AppMsg>,
        udp: UdpRegistry,
        auth: Option<(String, String)>,
        max_connections: usize,
        socks_timeout: Duration,
        classes: Arc<Classifier>,
    ) -> Self {
        Frontend {
            app,
            udp,
            gate: Gate::new(gate::connection_cap(max_connections)),
            auth,
            socks_timeout,
            classes,
        }
    }

    /// The class of a connection to `target` (through `forward`, as (listen, target) text).
    pub fn stream_class(&self, target: &Target, forward: Option<(&str, &str)>) -> u8 {
        self.classes.classify(&self.flow(Protocol::Tcp, target, None, forward))
    }

    /// The class of a datagram of `len` bytes to `target`.
    pub fn datagram_class(&self, target: &Target, len: usize, forward: Option<(&str, &str)>) -> u8 {
        self.classes.classify(&self.flow(Protocol::Udp, target, Some(len), forward))
    }

    fn flow<'a>(
        &'a self,
        protocol: Protocol,
        target: &Target,
        len: Option<usize>,
        forward: Option<(&'a str, &'a str)>,
    ) -> Flow<'a> {
        let (ip, port) = match target {
            Target::Addr(a) => (Some(a.ip()), a.port()),
            Target::Name(_, p) => (None, *p),
        };
        let user = self.auth.as_ref().map(|(u, _)| u.as_str());
        Flow { protocol: Some(protocol), ip, port, dscp: None, user, forward, len }
    }

    /// The counters now.
    pub fn status(&self) -> FrontendStatus {
        let c = self.gate.counters();
        FrontendStatus {
            connections: self.gate.open(),
            max_connections: self.gate.max(),
            refused: c.refused.load(Ordering::Relaxed),
            evicted: c.evicted.load(Ordering::Relaxed),
            greeting_timeouts: c.greeting_timeouts.load(Ordering::Relaxed),
            accept_errors: c.accept_errors.load(Ordering::Relaxed),
            udp_associations: self.udp.len(),
            udp_refused: c.udp_refused.load(Ordering::Relaxed),
            tun: None,
        }
    }

    /// Serves SOCKS5 on `listener` until the task is dropped.
    pub async fn serve_socks(self, listener: TcpListener) {
        socks::serve(listener, self).await
    }

    /// Serves a TCP port forward to `target` until the task is dropped.
    pub async fn serve_forward(self, listener: TcpListener, target: Target) {
        forward::serve_tcp(listener, target, self).await
    }

    /// Serves the UDP side of a port forward to `target` until the task is dropped.
    pub async fn serve_udp_forward(self, sock: UdpSocket, target: Target) {
        forward::serve_udp(sock, target, self).await
    }
}

/// Opens a stream whose first bytes are `request` and waits for the server's answer.
async fn open(app: &mpsc::Sender<AppMsg>, request: Bytes, class: u8) -> Result<(StreamEnds, Bytes), Status> {
    let (reply, rx) = oneshot::channel();
    let open = AppMsg::Open { class, request, reply };
    app.send(open).await.map_err(|_| Status::Unreachable)?;
    let ends = rx.await.map_err(|_| Status::Unreachable)?.map_err(|e| {
        tracing::debug!(error = %e, "stream not opened");
        match e {
            OpenError::Limit => Status::Limit,
            OpenError::NoSession(_) => Status::Unreachable,
        }
    })?;
    let (mut reader, writer) = ends.split();
    match read_reply(&mut reader).await {
        Ok((Status::Ok, rest)) => Ok((StreamEnds::from_parts(reader, writer), rest)),
        Ok((status, _)) => Err(status),
        Err(e) => {
            tracing::debug!(error = %e, "no answer on stream");
            Err(Status::Unreachable)
        }
    }
}

/// At most one log line a second about refused connections (a page may open dozens at once).
static REFUSALS: crate::ratelog::RateLimited = crate::ratelog::RateLimited::new(Duration::from_secs(1));

/// Opens a stream of class `class` to `target` and waits for the server's answer. A refusal is logged with
/// what it means and, where the operator can change it, how.
pub async fn connect(
    app: &mpsc::Sender<AppMsg>,
    target: &Target,
    class: u8,
) -> Result<(StreamEnds, Bytes), Status> {
    open(app, encode_connect(target), class).await.inspect_err(|s| {
        if let Some(left_out) = REFUSALS.hit() {
            tracing::info!(%target, reason = refusal(*s), left_out, "connection refused by the server");
        }
    })
}

/// What a refusal means, for the operator of the client.
pub fn refusal(s: Status) -> &'static str {
    match s {
        Status::Ok => "accepted",
        Status::Denied => {
            "the server's egress policy denies this destination (private, loopback and the server's own addresses are denied unless the server allows them: --allow-private or [egress] allow_private = true; the server's log names the rule)"
        }
        Status::Refused => "the destination refused the connection",
        Status::Unreachable => "the destination is unreachable from the server (or the session is down)",
        Status::Timeout => "the server's connection attempt timed out",
        Status::NotFound => "the server could not resolve the name",
        Status::Limit => "the server's limit on this client's open streams is reached (max_streams)",
        Status::BadRequest => "the server could not read the request",
    }
}

/// Opens association `id` of the kind `request` names (the TUN's ordered flows and pings).
pub(crate) async fn open_association_as(
    app: &mpsc::Sender<AppMsg>,
    request: &crate::appproto::Request,
    id: u32,
) -> Result<(StreamReader, StreamWriter), Status> {
    open(app, crate::appproto::encode_association_open(request, id), DATAGRAMS)
        .await
        .map(|(ends, _)| ends.split())
}

/// Opens UDP association `id` at the server: the stream that carries its life.
async fn open_association(
    app: &mpsc::Sender<AppMsg>,
    id: u32,
) -> Result<(StreamReader, StreamWriter), Status> {
    open(app, encode_udp_open(id), DATAGRAMS).await.map(|(ends, _)| ends.split())
}
