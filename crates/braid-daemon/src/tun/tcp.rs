//! TCP through the TUN: every connection the user-space stack accepts becomes a braid stream
//! to its destination — the CONNECT request of SOCKS5 and forwards ([`crate::appproto`]), so
//! the server opens the real connection under the same egress policy and limits. One TCP flow
//! so rides every path through the scheduler, with no TCP inside TCP.

use super::TunCounters;
use crate::appproto::Target;
use crate::bridge::{StreamReader, StreamWriter};
use crate::frontend::Frontend;
use bytes::Bytes;
use futures::StreamExt;
use netstack_smoltcp::{TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Accepts the stack's connections until it ends.
/// Each connection's class comes from the client's traffic classes, as for SOCKS5.
pub async fn serve(mut listener: TcpListener, front: Frontend, counters: Arc<TunCounters>) {
    while let Some((conn, src, dst)) = listener.next().await {
        counters.tcp_flows.fetch_add(1, Ordering::Relaxed);
        let (front, counters) = (front.clone(), counters.clone());
        tokio::spawn(async move {
            let target = Target::Addr(dst);
            let class = front.stream_class(&target, None);
            match crate::frontend::connect(&front.app, &target, class).await {
                Ok((ends, rest)) => {
                    let (reader, writer) = ends.split();
                    splice(conn, rest, reader, writer).await;
                }
                Err(status) => {
                    counters.tcp_refused.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(%src, %dst, ?status, "TUN: the server could not connect");
                }
            }
        });
    }
}

/// Copies both ways between the stack's connection and the stream until both directions are
/// done. A failure on either side — the stream reset, the session gone — resets both: the
/// stream, and the application's connection with an RST, so that the application sees an
/// error and not a clean end of a transfer that was cut short.
async fn splice(conn: TcpStream, first: Bytes, reader: StreamReader, writer: StreamWriter) {
    let aborter = conn.aborter();
    let (mut r, mut w) = tokio::io::split(conn);
    let failed = crate::splice::copy_both(&mut r, &mut w, first, reader, &writer).await;
    if failed {
        aborter.abort();
        let _ = writer.reset(1).await;
    }
}
