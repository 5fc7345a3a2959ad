//! The SOCKS5 front end (RFC 1928, RFC 1929 for username/password): CONNECT becomes a braid
//! stream, UDP ASSOCIATE a UDP association ([`super::udp`]); BIND is not supported.

use super::gate::{accept, Ticket};
use super::{connect, Frontend};
use crate::appproto::{Status, Target};
use crate::splice::splice;
use fast_socks5::server::{states, Socks5ServerProtocol, SocksServerError};
use fast_socks5::util::target_addr::TargetAddr;
use fast_socks5::{ReplyError, Socks5Command};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

/// A connection past its greeting and request.
type Commanded = (Socks5ServerProtocol<TcpStream, states::CommandRead>, Socks5Command, TargetAddr);

/// Serves SOCKS5 on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, front: Frontend) {
    let lingering = Arc::new(Semaphore::new(REFUSALS_LINGERING));
    loop {
        let (conn, peer) = accept(&listener, "socks5", front.gate.counters()).await;
        let Some(ticket) = front.gate.admit_greeting() else {
            refuse(conn, &lingering);
            continue;
        };
        let front = front.clone();
        tokio::spawn(async move {
            if let Err(e) = connection(conn, peer, ticket, front).await {
                tracing::debug!(%peer, error = %e, "SOCKS5 connection ended");
            }
        });
    }
}

/// Refusals that may wait for their client's greeting at once; past this, a refusal closes
/// at once (a flood costs no more than this many sockets for [`REFUSAL_LINGER`]).
const REFUSALS_LINGERING: usize = 64;

/// What a refused connection reads at most before it closes: a greeting (258 bytes) and a
/// request a client sent behind it (at most 262).
const REFUSAL_DRAIN: usize = 520;

/// How long a refused connection waits for its client to read the answer and close.
const REFUSAL_LINGER: Duration = Duration::from_millis(500);

/// Refuses a connection over the cap without serving it. The answer is the method selection
/// "no acceptable methods" (X'FF', RFC 1928 §3), the one refusal a client understands before
/// its request, followed by a FIN. The socket then drains what the client sends, up to
/// [`REFUSAL_DRAIN`] bytes, until the client closes or [`REFUSAL_LINGER`] passes: closing a
/// socket with unread bytes, or one a greeting reaches after it closed, sends a RST, and a RST
/// can discard the answer before the client reads it. Past [`REFUSALS_LINGERING`] refusals at
/// once, only what is already there is read.
fn refuse(conn: TcpStream, lingering: &Arc<Semaphore>) {
    let Ok(permit) = lingering.clone().try_acquire_owned() else {
        let mut greeting = [0u8; 258];
        let _ = conn.try_read(&mut greeting);
        let _ = conn.try_write(&[5, 0xFF]);
        return;
    };
    tokio::spawn(async move {
        let mut conn = conn;
        let answered = async {
            conn.write_all(&[5, 0xFF]).await?;
            conn.shutdown().await?;
            let mut drained = [0u8; REFUSAL_DRAIN];
            let mut total = 0;
            while total < drained.len() {
                match conn.read(&mut drained[total..]).await? {
                    0 => break,
                    n => total += n,
                }
            }
            std::io::Result::Ok(())
        };
        let _ = tokio::time::timeout(REFUSAL_LINGER, answered).await;
        drop(permit);
    });
}

/// Greeting, authentication and request.
async fn greet(conn: TcpStream, auth: &Option<(String, String)>) -> Result<Commanded, SocksServerError> {
    let proto = match auth {
        None => Socks5ServerProtocol::accept_no_auth(conn).await?,
        Some((u, p)) => {
            Socks5ServerProtocol::accept_password_auth(conn, |user, pass| user == *u && pass == *p).await?.0
        }
    };
    proto.read_command().await
}

async fn connection(
    conn: TcpStream,
    peer: SocketAddr,
    mut ticket: Ticket,
    front: Frontend,
) -> Result<(), SocksServerError> {
    let local_ip = conn.local_addr().map(|a| a.ip()).ok();
    let greeting = tokio::time::timeout(front.socks_timeout, greet(conn, &front.auth));
    let (proto, cmd, target) = tokio::select! {
        r = greeting => match r {
            Ok(r) => r?,
            Err(_) => {
                front.gate.counters().greeting_timeouts.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(%peer, timeout = ?front.socks_timeout, "SOCKS5 greeting timed out");
                return Ok(());
            }
        },
        _ = ticket.evicted() => {
            tracing::debug!(%peer, "SOCKS5 connection still greeting dropped for a newer one (connection cap)");
            return Ok(());
        }
    };
    if !ticket.greeted() {
        return Ok(());
    }
    match cmd {
        Socks5Command::TCPConnect => {
            match connect(&front.app, &to_target(&target), front.stream_class(&to_target(&target), None))
                .await
            {
                Ok((ends, rest)) => {
                    let conn = proto.reply_success("0.0.0.0:0".parse().expect("literal")).await?;
                    let (reader, writer) = ends.split();
                    splice(conn, rest, reader, writer).await;
                }
                Err(status) => proto.reply_error(&socks_error(status)).await?,
            }
        }
        Socks5Command::UDPAssociate => {
            let ip = local_ip.unwrap_or_else(|| "127.0.0.1".parse().expect("literal"));
            super::udp::associate(proto, ip, peer.ip(), &front).await?;
        }
        Socks5Command::TCPBind => proto.reply_error(&ReplyError::CommandNotSupported).await?,
    }
    drop(ticket);
    Ok(())
}

/// The SOCKS5 reply for a server answer.
pub(super) fn socks_error(s: Status) -> ReplyError {
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

pub(super) fn to_target(t: &TargetAddr) -> Target {
    match t {
        TargetAddr::Ip(a) => Target::Addr(*a),
        TargetAddr::Domain(n, p) => Target::Name(n.clone(), *p),
    }
}
