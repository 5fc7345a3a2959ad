//! Client front ends: SOCKS5 (CONNECT and UDP ASSOCIATE, optional username/password) and TCP
//! port forwards (`listen -> host:port`, the habit of `ssh -L`). Both open a braid stream per
//! connection whose first bytes are the CONNECT request; the server's reply decides whether the
//! application is told success.

use crate::appproto::{encode_connect, encode_udp, Status, Target, CLASS_STREAM, CLASS_UDP};
use crate::bridge::{AppMsg, StreamEnds};
use crate::splice::{read_reply, splice};
use bytes::Bytes;
use fast_socks5::server::{run_udp_proxy_custom, Socks5ServerProtocol, SocksServerError};
use fast_socks5::util::target_addr::TargetAddr;
use fast_socks5::{new_udp_header, parse_udp_request, ReplyError, Socks5Command};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::{mpsc, oneshot};

/// An answer for a UDP association: its id, the source it came from, the payload.
type UdpAnswer = (u32, Target, Bytes);

/// UDP associations of the client, by id: where answers from the server go.
#[derive(Clone, Default)]
pub struct UdpRegistry {
    inner: Arc<Mutex<HashMap<u32, mpsc::Sender<UdpAnswer>>>>,
}

impl UdpRegistry {
    fn add(&self, tx: mpsc::Sender<UdpAnswer>) -> u32 {
        let mut m = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let mut id = rand_u32();
        while m.contains_key(&id) {
            id = rand_u32();
        }
        m.insert(id, tx);
        id
    }

    fn remove(&self, id: u32) {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
    }

    /// Delivers an answer datagram to its association (dropped when it is gone or full).
    pub fn deliver(&self, id: u32, source: Target, payload: Bytes) {
        if let Some(tx) = self.inner.lock().unwrap_or_else(|e| e.into_inner()).get(&id) {
            let _ = tx.try_send((id, source, payload));
        }
    }
}

fn rand_u32() -> u32 {
    crate::keyfile::random_u64() as u32
}

/// Opens a stream to `target` and waits for the server's answer.
pub async fn connect(app: &mpsc::Sender<AppMsg>, target: &Target) -> Result<(StreamEnds, Bytes), Status> {
    let (reply, rx) = oneshot::channel();
    let open = AppMsg::Open { class: CLASS_STREAM, request: encode_connect(target), reply };
    app.send(open).await.map_err(|_| Status::Unreachable)?;
    let ends = rx.await.map_err(|_| Status::Unreachable)?.map_err(|e| {
        tracing::debug!(%target, error = %e, "stream not opened");
        Status::Limit
    })?;
    let (mut reader, writer) = ends.split();
    match read_reply(&mut reader).await {
        Ok((Status::Ok, rest)) => Ok((rejoin(reader, writer), rest)),
        Ok((status, _)) => Err(status),
        Err(e) => {
            tracing::debug!(%target, error = %e, "no answer on stream");
            Err(Status::Unreachable)
        }
    }
}

fn rejoin(reader: crate::bridge::StreamReader, writer: crate::bridge::StreamWriter) -> StreamEnds {
    StreamEnds::from_parts(reader, writer)
}

fn socks_error(s: Status) -> ReplyError {
    match s {
        Status::Ok => ReplyError::Succeeded,
        Status::Denied => ReplyError::ConnectionNotAllowed,
        Status::Refused => ReplyError::ConnectionRefused,
        Status::Unreachable => ReplyError::HostUnreachable,
        Status::Timeout => ReplyError::TtlExpired,
        Status::NotFound => ReplyError::HostUnreachable,
        Status::Limit | Status::BadRequest => ReplyError::GeneralFailure,
    }
}

fn to_target(t: &TargetAddr) -> Target {
    match t {
        TargetAddr::Ip(a) => Target::Addr(*a),
        TargetAddr::Domain(n, p) => Target::Name(n.clone(), *p),
    }
}

/// Serves SOCKS5 on `listener` until the task is dropped.
pub async fn serve_socks(
    listener: TcpListener,
    app: mpsc::Sender<AppMsg>,
    auth: Option<(String, String)>,
    udp: UdpRegistry,
) {
    loop {
        let Ok((conn, peer)) = listener.accept().await else { continue };
        let (app, auth, udp) = (app.clone(), auth.clone(), udp.clone());
        tokio::spawn(async move {
            if let Err(e) = socks_connection(conn, app, auth, udp).await {
                tracing::debug!(%peer, error = %e, "SOCKS5 connection ended");
            }
        });
    }
}

async fn socks_connection(
    conn: TcpStream,
    app: mpsc::Sender<AppMsg>,
    auth: Option<(String, String)>,
    udp: UdpRegistry,
) -> Result<(), SocksServerError> {
    let local_ip = conn.local_addr().map(|a| a.ip()).ok();
    let proto = match &auth {
        None => Socks5ServerProtocol::accept_no_auth(conn).await?,
        Some((u, p)) => {
            Socks5ServerProtocol::accept_password_auth(conn, |user, pass| user == *u && pass == *p).await?.0
        }
    };
    let (proto, cmd, target) = proto.read_command().await?;
    match cmd {
        Socks5Command::TCPConnect => match connect(&app, &to_target(&target)).await {
            Ok((ends, rest)) => {
                let conn = proto.reply_success("0.0.0.0:0".parse().expect("literal")).await?;
                let (reader, writer) = ends.split();
                splice(conn, rest, reader, writer).await;
            }
            Err(status) => proto.reply_error(&socks_error(status)).await?,
        },
        Socks5Command::UDPAssociate => {
            let ip = local_ip.unwrap_or_else(|| "127.0.0.1".parse().expect("literal"));
            run_udp_proxy_custom(proto, &target, Some(ip), ip, move |sock| {
                udp_association(sock.into(), app, udp)
            })
            .await?;
        }
        Socks5Command::TCPBind => proto.reply_error(&ReplyError::CommandNotSupported).await?,
    }
    Ok(())
}

/// Relays one SOCKS5 UDP association: the application's datagrams go to the server as braid
/// datagrams; the answers come back with a SOCKS5 UDP header naming their source.
async fn udp_association(
    sock: std::net::UdpSocket,
    app: mpsc::Sender<AppMsg>,
    registry: UdpRegistry,
) -> Result<(), SocksServerError> {
    let sock =
        UdpSocket::from_std(sock).map_err(|e| SocksServerError::Io { source: e, context: "udp socket" })?;
    let (tx, mut rx) = mpsc::channel::<UdpAnswer>(256);
    let id = registry.add(tx);
    let mut peer: Option<SocketAddr> = None;
    let mut buf = vec![0u8; 65536];
    let result = loop {
        tokio::select! {
            r = sock.recv_from(&mut buf) => {
                let Ok((n, from)) = r else { break Ok(()) };
                peer = Some(from);
                let Ok((frag, target, data)) = parse_udp_request(&buf[..n]).await else { continue };
                if frag != 0 {
                    continue; // fragmentation is not supported (RFC 1928 allows dropping)
                }
                let d = encode_udp(id, &to_target(&target), data);
                let _ = app.try_send(AppMsg::Datagram(CLASS_UDP, d));
            }
            Some((_, source, payload)) = rx.recv() => {
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
    };
    registry.remove(id);
    result
}

/// How long a UDP forward keeps an idle source's association.
const UDP_FORWARD_IDLE: std::time::Duration = std::time::Duration::from_secs(120);

/// Serves the UDP side of a port forward: datagrams from each local source travel as braid
/// datagrams of one association to `target`; answers go back to that source.
pub async fn serve_udp_forward(
    sock: UdpSocket,
    target: Target,
    app: mpsc::Sender<AppMsg>,
    registry: UdpRegistry,
) {
    let (tx, mut rx) = mpsc::channel::<UdpAnswer>(1024);
    let mut by_source: HashMap<SocketAddr, (u32, tokio::time::Instant)> = HashMap::new();
    let mut by_id: HashMap<u32, SocketAddr> = HashMap::new();
    let mut buf = vec![0u8; 65536];
    let mut sweep = tokio::time::interval(UDP_FORWARD_IDLE / 4);
    loop {
        tokio::select! {
            r = sock.recv_from(&mut buf) => {
                let Ok((n, from)) = r else { continue };
                let now = tokio::time::Instant::now();
                let id = match by_source.get_mut(&from) {
                    Some((id, seen)) => { *seen = now; *id }
                    None => {
                        let id = registry.add(tx.clone());
                        by_source.insert(from, (id, now));
                        by_id.insert(id, from);
                        id
                    }
                };
                let _ = app.try_send(AppMsg::Datagram(CLASS_UDP, encode_udp(id, &target, &buf[..n])));
            }
            Some((id, _, payload)) = rx.recv() => {
                if let Some(to) = by_id.get(&id) {
                    let _ = sock.send_to(&payload, to).await;
                }
            }
            _ = sweep.tick() => {
                let now = tokio::time::Instant::now();
                by_source.retain(|_, (id, seen)| {
                    let keep = now - *seen < UDP_FORWARD_IDLE;
                    if !keep {
                        registry.remove(*id);
                        by_id.remove(id);
                    }
                    keep
                });
            }
        }
    }
}

/// Serves a port forward: every connection to `listener` becomes a stream to `target`.
pub async fn serve_forward(listener: TcpListener, target: Target, app: mpsc::Sender<AppMsg>) {
    loop {
        let Ok((conn, peer)) = listener.accept().await else { continue };
        let (app, target) = (app.clone(), target.clone());
        tokio::spawn(async move {
            match connect(&app, &target).await {
                Ok((ends, rest)) => {
                    let (reader, writer) = ends.split();
                    splice(conn, rest, reader, writer).await;
                }
                Err(status) => {
                    tracing::info!(%peer, %target, ?status, "forward: the server could not connect")
                }
            }
        });
    }
}
